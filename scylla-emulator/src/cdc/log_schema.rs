//! The CDC log table of a base table: its name, columns, types and properties (semantics
//! §1.2–§1.3), and how an existing log follows its base when the base changes (§1.4).
//!
//! The log of `ks.t` is `ks.t_scylla_cdc_log`: partition key `"cdc$stream_id" blob`,
//! clustering key `"cdc$time" timeuuid, "cdc$batch_seq_no" int` (both ascending), then as
//! regular columns the metadata columns (`cdc$operation tinyint`, `cdc$ttl bigint`,
//! `cdc$end_of_batch boolean`), every base key column with its own type, and for every
//! static or regular base column `X` its value column `X` ([`log_value_type`]), `cdc$deleted_X`
//! and, for non-frozen collections and UDTs, `cdc$deleted_elements_X`
//! ([`deleted_elements_type`]). [`TableDef::new`] sorts the regular columns by name bytes, which
//! gives the `SELECT *` order Scylla has.
//!
//! [`new_log_table`] builds a fresh log with Scylla's log properties; [`reconcile_log_table`]
//! brings an existing log (attached, or detached and being re-attached) in line with the
//! current base, keeping its id, its properties and the storage ids of unchanged columns,
//! dropping the others [`DROP_DELAY_MICROS`] in the future as Scylla does.

use std::collections::BTreeMap;

use crate::frame::CqlError;
use crate::schema::{
    CdcOptions, ClusteringOrder, ColumnDef, ColumnKind, TableDef, TableKind, TableOptions,
    cdc_log_name,
};
use crate::types::CqlType;

/// `"cdc$stream_id"`: the log's partition key.
pub(crate) const STREAM_ID: &str = "cdc$stream_id";
/// `"cdc$time"`: first clustering column.
pub(crate) const TIME: &str = "cdc$time";
/// `"cdc$batch_seq_no"`: second clustering column.
pub(crate) const BATCH_SEQ_NO: &str = "cdc$batch_seq_no";
/// `"cdc$operation"` (`tinyint`).
pub(crate) const OPERATION: &str = "cdc$operation";
/// `"cdc$ttl"` (`bigint`).
pub(crate) const TTL: &str = "cdc$ttl";
/// `"cdc$end_of_batch"` (`boolean`).
pub(crate) const END_OF_BATCH: &str = "cdc$end_of_batch";
/// Prefix of the `cdc$deleted_X` columns.
pub(crate) const DELETED_PREFIX: &str = "cdc$deleted_";
/// Prefix of the `cdc$deleted_elements_X` columns.
pub(crate) const DELETED_ELEMENTS_PREFIX: &str = "cdc$deleted_elements_";

/// How far in the future a log table's columns are dropped, so that writes racing with the
/// drop still land before it (Scylla's value).
pub(crate) const DROP_DELAY_MICROS: i64 = 5_000_000;

/// Name of the `cdc$deleted_X` column of base column `X`.
pub(crate) fn deleted_column(base_column: &str) -> String {
    format!("{DELETED_PREFIX}{base_column}")
}

/// Name of the `cdc$deleted_elements_X` column of base column `X`.
pub(crate) fn deleted_elements_column(base_column: &str) -> String {
    format!("{DELETED_ELEMENTS_PREFIX}{base_column}")
}

/// The type of the log column holding the values of a base static or regular column: atomic
/// types unchanged; a non-frozen list becomes `frozen<map<timeuuid, V>>` (keyed by the list
/// cells' timeuuids); non-frozen sets, maps and UDTs become their frozen selves (nested
/// element types are kept as they are).
pub(crate) fn log_value_type(base: &CqlType) -> CqlType {
    match base {
        CqlType::List {
            elem,
            frozen: false,
        } => CqlType::Map {
            key: Box::new(CqlType::Timeuuid),
            value: elem.clone(),
            frozen: true,
        },
        other if other.is_multi_cell() => other.frozen(),
        other => other.clone(),
    }
}

/// The type of `cdc$deleted_elements_X` for a non-frozen collection or UDT `X`, `None` for
/// atomic columns (which have no such column): list → `frozen<set<timeuuid>>`, set of `K` and
/// map keyed by `K` → `frozen<set<K>>`, UDT → `frozen<set<smallint>>` (field indexes).
pub(crate) fn deleted_elements_type(base: &CqlType) -> Option<CqlType> {
    let elem = match base {
        CqlType::List { frozen: false, .. } => CqlType::Timeuuid,
        CqlType::Set {
            elem,
            frozen: false,
        } => (**elem).clone(),
        CqlType::Map {
            key, frozen: false, ..
        } => (**key).clone(),
        CqlType::Udt { frozen: false, .. } => CqlType::Smallint,
        _ => return None,
    };
    Some(CqlType::Set {
        elem: Box::new(elem),
        frozen: true,
    })
}

/// A column definition without a storage id (ids are given by the table).
fn column(name: impl Into<String>, typ: CqlType, kind: ColumnKind, position: i32) -> ColumnDef {
    ColumnDef {
        name: name.into(),
        typ,
        kind,
        position,
        order: ClusteringOrder::Asc,
        id: 0,
    }
}

/// Every column the log of `base` has, in this order: the log's key, its metadata columns,
/// the base's key columns, then per base static/regular column its value, `cdc$deleted_`
/// and (for non-frozen collections/UDTs) `cdc$deleted_elements_` columns. Storage ids are 0.
pub(crate) fn log_columns(base: &TableDef) -> Vec<ColumnDef> {
    let regular = |name: &str, typ: CqlType| column(name, typ, ColumnKind::Regular, -1);
    let mut columns = vec![
        column(STREAM_ID, CqlType::Blob, ColumnKind::PartitionKey, 0),
        column(TIME, CqlType::Timeuuid, ColumnKind::Clustering, 0),
        column(BATCH_SEQ_NO, CqlType::Int, ColumnKind::Clustering, 1),
        regular(OPERATION, CqlType::Tinyint),
        regular(TTL, CqlType::Bigint),
        regular(END_OF_BATCH, CqlType::Boolean),
    ];
    for c in base.partition_key().chain(base.clustering_key()) {
        columns.push(regular(&c.name, c.typ.clone()));
    }
    for c in base.value_columns() {
        columns.push(regular(&c.name, log_value_type(&c.typ)));
        columns.push(regular(&deleted_column(&c.name), CqlType::Boolean));
        if let Some(t) = deleted_elements_type(&c.typ) {
            columns.push(regular(&deleted_elements_column(&c.name), t));
        }
    }
    columns
}

/// The properties Scylla gives a new log table (semantics §1.3): the comment, caching off,
/// `TimeWindowCompactionStrategy` with a window of about 1/24 of the CDC `ttl`,
/// `gc_grace_seconds` 0 when the `ttl` is positive, the `tombstone_gc` extension, and no
/// `default_time_to_live` (the TTL is applied to each log cell at write time).
pub(crate) fn log_table_options(base: &TableDef, ttl: u32) -> TableOptions {
    let map = |pairs: &[(&str, String)]| {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect::<BTreeMap<_, _>>()
    };
    let defaults = TableOptions::default();
    let mut compaction = map(&[("class", "TimeWindowCompactionStrategy".to_string())]);
    if ttl > 0 {
        // One window per 1/24 of the TTL, rounded up to whole minutes.
        let window_seconds = u64::from(ttl).div_ceil(24);
        compaction.insert(
            "compaction_window_size".into(),
            window_seconds.div_ceil(60).to_string(),
        );
        compaction.insert("compaction_window_unit".into(), "MINUTES".into());
        compaction.insert(
            "expired_sstable_check_frequency_seconds".into(),
            (window_seconds / 2).max(1).to_string(),
        );
    }
    TableOptions {
        comment: format!("CDC log for {}.{}", base.keyspace, base.name),
        gc_grace_seconds: if ttl > 0 {
            0
        } else {
            defaults.gc_grace_seconds
        },
        caching: map(&[
            ("enabled", "false".into()),
            ("keys", "NONE".into()),
            ("rows_per_partition", "NONE".into()),
        ]),
        compaction,
        cdc: None,
        // The keyspace's default mode; Scylla's exact value for log tables is unconfirmed
        // (semantics §7.2).
        tombstone_gc: Some(map(&[
            ("mode", "timeout".into()),
            ("propagation_delay_in_seconds", "3600".into()),
        ])),
        ..defaults
    }
}

/// A new log table for `base` whose CDC options are `cdc` (a fresh random id).
pub(crate) fn new_log_table(base: &TableDef, cdc: &CdcOptions) -> TableDef {
    TableDef::new(
        base.keyspace.clone(),
        cdc_log_name(&base.name),
        log_columns(base),
        log_table_options(base, cdc.ttl),
        TableKind::CdcLog {
            base: base.name.clone(),
        },
    )
}

/// Refuses adding column `name` to `table` while a drop of that name is still in the future
/// (log columns are dropped [`DROP_DELAY_MICROS`] ahead), with Scylla's message.
pub(crate) fn check_not_dropped_recently(
    table: &TableDef,
    name: &str,
    now_micros: i64,
) -> Result<(), CqlError> {
    if let Some(d) = table.dropped_columns.get(name)
        && d.dropped_at > now_micros
    {
        // Whole seconds left, rounded up.
        let wait = d
            .dropped_at
            .saturating_sub(now_micros)
            .saturating_add(999_999)
            / 1_000_000;
        return Err(CqlError::invalid(format!(
            "Cannot add column {name} because a column with the same name was dropped too \
             recently. Please retry after {wait} seconds"
        )));
    }
    Ok(())
}

/// An existing log table brought in line with its base.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reconciled {
    /// The updated log table (same id and properties).
    pub(crate) table: TableDef,
    /// Storage ids of the columns it dropped (their data must be removed).
    pub(crate) dropped: Vec<u32>,
    /// Whether anything changed.
    pub(crate) changed: bool,
}

/// Brings `log`'s columns in line with `base` (after an `ALTER TABLE` of an attached base,
/// or when a detached log is re-attached): columns the base no longer has (or whose type
/// changed) are dropped at `now + 5 s`, missing ones are added with fresh storage ids; the
/// id, the properties and every unchanged column stay. Fails as Scylla does when a column
/// would be added under a name dropped less than 5 s ago.
pub(crate) fn reconcile_log_table(
    log: &TableDef,
    base: &TableDef,
    now_micros: i64,
) -> Result<Reconciled, CqlError> {
    let desired = log_columns(base);
    let mut table = log.clone();
    let mut dropped = Vec::new();
    for c in &log.columns {
        let keep = desired
            .iter()
            .any(|d| d.name == c.name && d.typ == c.typ && d.kind == c.kind);
        if !keep {
            table.drop_column(&c.name, now_micros.saturating_add(DROP_DELAY_MICROS));
            dropped.push(c.id);
        }
    }
    for d in desired {
        if table.column(&d.name).is_some() {
            continue;
        }
        check_not_dropped_recently(log, &d.name, now_micros)?;
        table.add_column(d);
    }
    let changed = table != *log;
    Ok(Reconciled {
        table,
        dropped,
        changed,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::frame::ErrorKind;
    use crate::types::UserType;

    fn col(name: &str, typ: CqlType, kind: ColumnKind, position: i32) -> ColumnDef {
        column(name, typ, kind, position)
    }

    fn list(e: CqlType) -> CqlType {
        CqlType::List {
            elem: Box::new(e),
            frozen: false,
        }
    }

    fn set(e: CqlType, frozen: bool) -> CqlType {
        CqlType::Set {
            elem: Box::new(e),
            frozen,
        }
    }

    fn map(k: CqlType, v: CqlType, frozen: bool) -> CqlType {
        CqlType::Map {
            key: Box::new(k),
            value: Box::new(v),
            frozen,
        }
    }

    /// The base table of the semantics document's worked example (§1.2).
    fn worked_example() -> TableDef {
        let ut = Arc::new(UserType {
            keyspace: "ks".into(),
            name: "ut".into(),
            fields: vec![
                ("a".into(), CqlType::Int),
                ("b".into(), CqlType::Int),
                ("c".into(), CqlType::Int),
            ],
        });
        let r = ColumnKind::Regular;
        TableDef::new(
            "ks",
            "t",
            vec![
                col("pk", CqlType::Int, ColumnKind::PartitionKey, 0),
                col("ck", CqlType::Int, ColumnKind::Clustering, 0),
                col("s", CqlType::Int, ColumnKind::Static, -1),
                col("v", CqlType::Int, r, -1),
                col("m", map(CqlType::Int, CqlType::Text, false), r, -1),
                col("l", list(CqlType::Text), r, -1),
                col("st", set(CqlType::Int, false), r, -1),
                col(
                    "u",
                    CqlType::Udt {
                        def: ut.clone(),
                        frozen: true,
                    },
                    r,
                    -1,
                ),
                col(
                    "nu",
                    CqlType::Udt {
                        def: ut,
                        frozen: false,
                    },
                    r,
                    -1,
                ),
            ],
            TableOptions {
                cdc: Some(CdcOptions {
                    enabled: true,
                    ..CdcOptions::default()
                }),
                ..TableOptions::default()
            },
            TableKind::User,
        )
    }

    #[test]
    fn worked_example_log_schema_column_by_column() {
        let log = new_log_table(&worked_example(), &CdcOptions::default());
        assert_eq!(log.name, "t_scylla_cdc_log");
        assert_eq!(log.keyspace, "ks");
        let got: Vec<(String, String, ColumnKind, i32)> = log
            .columns
            .iter()
            .map(|c| (c.name.clone(), c.typ.to_string(), c.kind, c.position))
            .collect();
        let pk = ColumnKind::PartitionKey;
        let ck = ColumnKind::Clustering;
        let r = ColumnKind::Regular;
        let expected: Vec<(&str, &str, ColumnKind, i32)> = vec![
            ("cdc$stream_id", "blob", pk, 0),
            ("cdc$time", "timeuuid", ck, 0),
            ("cdc$batch_seq_no", "int", ck, 1),
            ("cdc$deleted_elements_l", "frozen<set<timeuuid>>", r, -1),
            ("cdc$deleted_elements_m", "frozen<set<int>>", r, -1),
            ("cdc$deleted_elements_nu", "frozen<set<smallint>>", r, -1),
            ("cdc$deleted_elements_st", "frozen<set<int>>", r, -1),
            ("cdc$deleted_l", "boolean", r, -1),
            ("cdc$deleted_m", "boolean", r, -1),
            ("cdc$deleted_nu", "boolean", r, -1),
            ("cdc$deleted_s", "boolean", r, -1),
            ("cdc$deleted_st", "boolean", r, -1),
            ("cdc$deleted_u", "boolean", r, -1),
            ("cdc$deleted_v", "boolean", r, -1),
            ("cdc$end_of_batch", "boolean", r, -1),
            ("cdc$operation", "tinyint", r, -1),
            ("cdc$ttl", "bigint", r, -1),
            ("ck", "int", r, -1),
            ("l", "frozen<map<timeuuid, text>>", r, -1),
            ("m", "frozen<map<int, text>>", r, -1),
            ("nu", "frozen<ut>", r, -1),
            ("pk", "int", r, -1),
            ("s", "int", r, -1),
            ("st", "frozen<set<int>>", r, -1),
            ("u", "frozen<ut>", r, -1),
            ("v", "int", r, -1),
        ];
        let expected: Vec<(String, String, ColumnKind, i32)> = expected
            .into_iter()
            .map(|(n, t, k, p)| (n.to_string(), t.to_string(), k, p))
            .collect();
        assert_eq!(got, expected);
        let ids: Vec<u32> = log.columns.iter().map(|c| c.id).collect();
        assert_eq!(ids, (0..26).collect::<Vec<u32>>());
        assert!(log.is_cdc_log());
        assert_eq!(
            log.partitioner(),
            Some(crate::schema::table::CDC_PARTITIONER)
        );
    }

    #[test]
    fn quoted_names_are_copied_verbatim_and_sort_before_cdc_columns() {
        let base = TableDef::new(
            "ks",
            "t",
            vec![
                col("pk", CqlType::Int, ColumnKind::PartitionKey, 0),
                col("MyCol", list(CqlType::Int), ColumnKind::Regular, -1),
            ],
            TableOptions::default(),
            TableKind::User,
        );
        let log = new_log_table(&base, &CdcOptions::default());
        let names: Vec<&str> = log.columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "cdc$stream_id",
                "cdc$time",
                "cdc$batch_seq_no",
                "MyCol",
                "cdc$deleted_MyCol",
                "cdc$deleted_elements_MyCol",
                "cdc$end_of_batch",
                "cdc$operation",
                "cdc$ttl",
                "pk",
            ]
        );
    }

    #[test]
    fn nested_element_types_are_kept() {
        let ut = Arc::new(UserType {
            keyspace: "ks".into(),
            name: "ut".into(),
            fields: vec![("a".into(), CqlType::Int)],
        });
        let t = map(
            CqlType::Int,
            CqlType::Udt {
                def: ut,
                frozen: true,
            },
            false,
        );
        assert_eq!(
            log_value_type(&t).to_string(),
            "frozen<map<int, frozen<ut>>>"
        );
        assert_eq!(
            deleted_elements_type(&t).map(|t| t.to_string()).as_deref(),
            Some("frozen<set<int>>")
        );
        let frozen_list = CqlType::List {
            elem: Box::new(CqlType::Int),
            frozen: true,
        };
        assert_eq!(log_value_type(&frozen_list), frozen_list);
        assert_eq!(deleted_elements_type(&frozen_list), None);
        assert_eq!(deleted_elements_type(&CqlType::Int), None);
    }

    #[test]
    fn log_properties_follow_the_ttl() {
        let base = worked_example();
        let o = log_table_options(&base, 86400);
        assert_eq!(o.comment, "CDC log for ks.t");
        assert_eq!(o.gc_grace_seconds, 0);
        assert_eq!(o.default_time_to_live, 0);
        assert_eq!(
            o.compaction.get("class").map(String::as_str),
            Some("TimeWindowCompactionStrategy")
        );
        assert_eq!(
            o.compaction
                .get("compaction_window_size")
                .map(String::as_str),
            Some("60")
        );
        assert_eq!(
            o.compaction
                .get("compaction_window_unit")
                .map(String::as_str),
            Some("MINUTES")
        );
        assert_eq!(
            o.compaction
                .get("expired_sstable_check_frequency_seconds")
                .map(String::as_str),
            Some("1800")
        );
        assert_eq!(
            o.caching,
            [
                ("enabled", "false"),
                ("keys", "NONE"),
                ("rows_per_partition", "NONE")
            ]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>()
        );
        // A small TTL still gives a one-minute window and a check every second.
        let o = log_table_options(&base, 10);
        assert_eq!(
            o.compaction
                .get("compaction_window_size")
                .map(String::as_str),
            Some("1")
        );
        assert_eq!(
            o.compaction
                .get("expired_sstable_check_frequency_seconds")
                .map(String::as_str),
            Some("1")
        );
        // ttl = 0: TWCS with default options and the default gc_grace_seconds.
        let o = log_table_options(&base, 0);
        assert_eq!(o.compaction.len(), 1);
        assert_eq!(o.gc_grace_seconds, 864000);
    }

    #[test]
    fn reconcile_adds_and_drops_with_a_delay() {
        let mut base = worked_example();
        let log = new_log_table(&base, &CdcOptions::default());
        let now = 1_000_000_000;
        // Nothing changed: nothing to do.
        let r = reconcile_log_table(&log, &base, now).expect("ok");
        assert!(!r.changed);
        assert!(r.dropped.is_empty());

        base.drop_column("m", now);
        base.add_column(col("x", CqlType::Text, ColumnKind::Regular, -1));
        let r = reconcile_log_table(&log, &base, now).expect("ok");
        assert!(r.changed);
        let t = &r.table;
        assert_eq!(t.id, log.id);
        assert!(t.column("m").is_none());
        assert!(t.column("cdc$deleted_m").is_none());
        assert!(t.column("cdc$deleted_elements_m").is_none());
        assert_eq!(r.dropped.len(), 3);
        assert_eq!(
            t.dropped_columns.get("m").map(|d| d.dropped_at),
            Some(now + DROP_DELAY_MICROS)
        );
        assert_eq!(t.column("x").map(|c| c.id), Some(26));
        assert_eq!(t.column("cdc$deleted_x").map(|c| c.id), Some(27));
        // Unchanged columns keep their ids.
        assert_eq!(t.column("v").map(|c| c.id), log.column("v").map(|c| c.id));

        // Adding `m` back within 5 s fails, after 5 s it works.
        let mut again = base.clone();
        again.add_column(col("m", CqlType::Int, ColumnKind::Regular, -1));
        let e = reconcile_log_table(t, &again, now + 1).expect_err("too soon");
        assert_eq!(e.kind, ErrorKind::Invalid);
        assert_eq!(
            e.message,
            "Cannot add column m because a column with the same name was dropped too \
             recently. Please retry after 5 seconds"
        );
        let r = reconcile_log_table(t, &again, now + DROP_DELAY_MICROS).expect("later");
        assert_eq!(
            r.table.column("m").map(|c| c.typ.clone()),
            Some(CqlType::Int)
        );
    }

    #[test]
    fn renamed_key_column_is_added_and_the_old_one_dropped() {
        let mut base = worked_example();
        let log = new_log_table(&base, &CdcOptions::default());
        assert!(base.rename_column("ck", "ck2"));
        let r = reconcile_log_table(&log, &base, 0).expect("ok");
        assert!(r.table.column("ck").is_none());
        assert_eq!(
            r.table.column("ck2").map(|c| c.kind),
            Some(ColumnKind::Regular)
        );
        assert_eq!(
            r.dropped,
            vec![log.column("ck").map(|c| c.id).unwrap_or(u32::MAX)]
        );
    }
}
