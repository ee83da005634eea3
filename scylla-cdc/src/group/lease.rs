//! The lease table of a consumer group ([`crate::CDCLogReaderBuilder::group`]): who is in the
//! group and who reads which unit of work, kept in Scylla and changed only with lightweight
//! transactions.
//!
//! ```text
//! CREATE TABLE <ks>.<table> (
//!     group_name text, keyspace_name text, table_name text,
//!     unit text,          -- 'unit:<generation ms, 20 digits>:<first stream id, hex>' or 'member:<id>'
//!     owner text,         -- the member reading the unit (null: free)
//!     version bigint,     -- changed by every renewal and every change of owner
//!     expires_at timestamp, -- the owner's clock at its last renewal + the lease duration
//!     wanted_by text,     -- a member that asked the owner to hand the unit over
//!     done boolean,       -- the unit was read to its generation's end
//!     start timestamp,    -- where a stream of the unit without a checkpoint starts
//!     PRIMARY KEY ((group_name, keyspace_name, table_name), unit))
//! ```
//!
//! One partition holds a group's view of one base table, so a member reads the whole state
//! of the group in one query and renews all its leases in one conditional batch (one Paxos
//! round per member per renewal, whatever the number of units).
//!
//! Expiry is not judged by comparing `expires_at` with another machine's clock: like the
//! Kinesis Client Library, a member takes a unit over only after it has seen the unit's
//! `version` stay the same for a whole lease duration by its own monotonic clock
//! ([`Observations`][super::plan::Observations]). The owner counts its lease from the moment
//! it *sent* its last successful renewal, so the owner's lease always ends before anyone may
//! take the unit over, whatever the clocks of the machines say (only their rates must agree).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures::TryStreamExt;
use scylla::client::session::Session;
use scylla::serialize::row::SerializeRow;
use scylla::statement::SerialConsistency;
use scylla::statement::batch::{Batch, BatchType};
use scylla::statement::prepared::PreparedStatement;
use scylla::value::{CqlValue, Row};

use crate::base::cdc_types::{GenerationTimestamp, StreamID, quote_identifier};
use crate::base::error::CDCError;

/// The serial consistency of every lightweight transaction on the lease table: SERIAL, not
/// the driver's default LOCAL_SERIAL. LOCAL_SERIAL runs Paxos among the replicas of the
/// coordinator's data centre only, so with a lease keyspace replicated over several data
/// centres, two members coordinated in different ones could both see their condition hold
/// and both take one unit; SERIAL runs it over a quorum of all replicas, so conditional
/// updates of one unit are linearizable wherever the members are (ScyllaDB's LWT
/// documentation: "SERIAL ... linearizable across all data centers"). Plain reads of the
/// table may lag a write from another data centre: that only delays a takeover (a take's
/// condition names the version it saw), it never lets two members hold one unit.
const SERIAL: SerialConsistency = SerialConsistency::Serial;

/// The most statements one renewal or creation batch carries (Scylla warns about batches
/// over `batch_size_warn_threshold_in_kb`, 128 KiB by default; a statement here is ~100 B).
const BATCH_STATEMENTS: usize = 200;

/// The key prefix of member rows.
const MEMBER_PREFIX: &str = "member:";
/// The key prefix of unit rows.
const UNIT_PREFIX: &str = "unit:";

/// The columns of a lease table: name, CQL type, kind (as `system_schema.columns` lists them).
const COLUMNS: &[(&str, &str, &str)] = &[
    ("group_name", "text", "partition_key"),
    ("keyspace_name", "text", "partition_key"),
    ("table_name", "text", "partition_key"),
    ("unit", "text", "clustering"),
    ("owner", "text", "regular"),
    ("version", "bigint", "regular"),
    ("expires_at", "timestamp", "regular"),
    ("wanted_by", "text", "regular"),
    ("done", "boolean", "regular"),
    ("start", "timestamp", "regular"),
];

/// The key of the row of unit `first_stream` of `generation`: sorting keys sorts units by
/// generation.
pub(crate) fn unit_key(generation: &GenerationTimestamp, first_stream: &StreamID) -> String {
    format!(
        "{UNIT_PREFIX}{:020}:{first_stream}",
        generation.timestamp.timestamp_millis().max(0)
    )
}

/// The generation (its start in milliseconds) of a unit key.
pub(crate) fn unit_generation_millis(key: &str) -> Option<i64> {
    key.strip_prefix(UNIT_PREFIX)?
        .split(':')
        .next()?
        .parse()
        .ok()
}

/// The key of a member's row.
pub(crate) fn member_key(member: &str) -> String {
    format!("{MEMBER_PREFIX}{member}")
}

/// One row of the lease table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LeaseRow {
    pub(crate) unit: String,
    pub(crate) owner: Option<String>,
    pub(crate) version: i64,
    pub(crate) expires_at: Option<DateTime<Utc>>,
    pub(crate) wanted_by: Option<String>,
    pub(crate) done: bool,
    pub(crate) start: Option<DateTime<Utc>>,
}

impl LeaseRow {
    /// The member id of a member row.
    pub(crate) fn member(&self) -> Option<&str> {
        self.unit.strip_prefix(MEMBER_PREFIX)
    }

    /// Whether this is a unit row.
    pub(crate) fn is_unit(&self) -> bool {
        self.unit.starts_with(UNIT_PREFIX)
    }
}

/// A unit to create: its key and where its streams start without a checkpoint.
pub(crate) struct NewUnit {
    pub(crate) key: String,
    pub(crate) start: DateTime<Utc>,
}

/// What a conditional write found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Cas {
    /// It was applied.
    Applied,
    /// Its condition did not hold.
    NotApplied,
}

/// The lease table of one group and base table, with its statements prepared.
pub(crate) struct LeaseTable {
    session: Arc<Session>,
    /// `(group_name, keyspace_name, table_name)`: the partition.
    key: (String, String, String),
    name: String,
    select: PreparedStatement,
    renew: PreparedStatement,
    heartbeat: PreparedStatement,
    take: PreparedStatement,
    request: PreparedStatement,
    clear_request: PreparedStatement,
    hand_over: PreparedStatement,
    finish: PreparedStatement,
    create: PreparedStatement,
    delete: PreparedStatement,
    delete_if: PreparedStatement,
}

fn query_error(what: String) -> impl FnOnce(scylla::errors::ExecutionError) -> CDCError {
    move |source| CDCError::Query {
        what,
        source: Box::new(source),
    }
}

fn lease_error(what: &str, e: impl std::fmt::Display) -> CDCError {
    CDCError::Lease(format!("{what}: {e}"))
}

impl LeaseTable {
    /// The `CREATE TABLE IF NOT EXISTS` statement of a lease table named `keyspace.table`.
    pub(crate) fn create_table_cql(keyspace: &str, table: &str) -> String {
        format!(
            "CREATE TABLE IF NOT EXISTS {}.{} (group_name text, keyspace_name text, \
             table_name text, unit text, owner text, version bigint, expires_at timestamp, \
             wanted_by text, done boolean, start timestamp, \
             PRIMARY KEY ((group_name, keyspace_name, table_name), unit))",
            quote_identifier(keyspace),
            quote_identifier(table)
        )
    }

    /// Creates the lease table `lease_keyspace.lease_table` if missing, checks its shape and
    /// prepares the statements of group `group` reading `keyspace.table`.
    pub(crate) async fn open(
        session: Arc<Session>,
        (lease_keyspace, lease_table): (&str, &str),
        group: &str,
        keyspace: &str,
        table: &str,
    ) -> Result<Self, CDCError> {
        let name = format!(
            "{}.{}",
            quote_identifier(lease_keyspace),
            quote_identifier(lease_table)
        );
        session
            .query_unpaged(Self::create_table_cql(lease_keyspace, lease_table), ())
            .await
            .map_err(query_error(format!("creating the lease table {name}")))?;
        check_shape(&session, lease_keyspace, lease_table).await?;
        // Every conditional statement runs its Paxos round at SERIAL (see `SERIAL`).
        let prepare = |text: String| {
            let session = session.clone();
            async move {
                let mut statement = crate::base::error::prepare(&session, &text).await?;
                statement.set_serial_consistency(Some(SERIAL));
                Ok::<_, CDCError>(statement)
            }
        };
        let key = "group_name = ? AND keyspace_name = ? AND table_name = ?";
        Ok(Self {
            select: prepare(format!(
                "SELECT unit, owner, version, expires_at, wanted_by, done, start FROM {name} \
                 WHERE {key}"
            ))
            .await?,
            renew: prepare(format!(
                "UPDATE {name} SET version = ?, expires_at = ? WHERE {key} AND unit = ? \
                 IF owner = ?"
            ))
            .await?,
            heartbeat: prepare(format!(
                "UPDATE {name} USING TTL ? SET version = ?, expires_at = ? WHERE {key} \
                 AND unit = ?"
            ))
            .await?,
            take: prepare(format!(
                "UPDATE {name} SET owner = ?, version = ?, expires_at = ?, wanted_by = null \
                 WHERE {key} AND unit = ? IF owner = ? AND version = ? AND done = false"
            ))
            .await?,
            request: prepare(format!(
                "UPDATE {name} SET wanted_by = ? WHERE {key} AND unit = ? \
                 IF owner = ? AND wanted_by = null"
            ))
            .await?,
            clear_request: prepare(format!(
                "UPDATE {name} SET wanted_by = null WHERE {key} AND unit = ? IF wanted_by = ?"
            ))
            .await?,
            hand_over: prepare(format!(
                "UPDATE {name} SET owner = ?, version = ?, expires_at = ?, wanted_by = null \
                 WHERE {key} AND unit = ? IF owner = ?"
            ))
            .await?,
            finish: prepare(format!(
                "UPDATE {name} SET done = true, owner = null, wanted_by = null, version = ? \
                 WHERE {key} AND unit = ? IF owner = ?"
            ))
            .await?,
            create: prepare(format!(
                "INSERT INTO {name} (group_name, keyspace_name, table_name, unit, version, \
                 done, start) VALUES (?, ?, ?, ?, 0, false, ?) IF NOT EXISTS"
            ))
            .await?,
            delete: prepare(format!("DELETE FROM {name} WHERE {key} AND unit = ?")).await?,
            delete_if: prepare(format!(
                "DELETE FROM {name} WHERE {key} AND unit = ? IF version = ?"
            ))
            .await?,
            session,
            key: (group.to_owned(), keyspace.to_owned(), table.to_owned()),
            name,
        })
    }

    /// The table's name, quoted.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Every row of the group's partition, sorted by key.
    pub(crate) async fn read(&self) -> Result<Vec<LeaseRow>, CDCError> {
        type Raw = (
            String,
            Option<String>,
            Option<i64>,
            Option<DateTime<Utc>>,
            Option<String>,
            Option<bool>,
            Option<DateTime<Utc>>,
        );
        let what = || format!("reading the lease table {}", self.name);
        let pager = self
            .session
            .execute_iter(self.select.clone(), &self.key)
            .await
            .map_err(|e| lease_error(&what(), e))?;
        let mut rows = pager
            .rows_stream::<Raw>()
            .map_err(|e| lease_error(&what(), e))?;
        let mut out = Vec::new();
        while let Some((unit, owner, version, expires_at, wanted_by, done, start)) =
            rows.try_next().await.map_err(|e| lease_error(&what(), e))?
        {
            out.push(LeaseRow {
                unit,
                owner,
                version: version.unwrap_or(0),
                expires_at,
                wanted_by,
                done: done.unwrap_or(false),
                start,
            });
        }
        Ok(out)
    }

    /// Runs one conditional statement: whether it applied.
    async fn cas(
        &self,
        what: &str,
        statement: &PreparedStatement,
        values: impl scylla::serialize::row::SerializeRow,
    ) -> Result<Cas, CDCError> {
        let result = self
            .session
            .execute_unpaged(statement, values)
            .await
            .map_err(query_error(format!("{what} in {}", self.name)))?;
        applied(result).map(|(applied, _)| applied)
    }

    /// Renews the leases of `units` held by `member` and its member row, in conditional
    /// batches: returns the units whose owner is no longer `member` (lost), each with the
    /// owner the table shows now, or an error when the outcome is unknown.
    pub(crate) async fn renew(
        &self,
        member: &str,
        units: &[String],
        version: i64,
        expires_at: DateTime<Utc>,
        member_ttl: Duration,
    ) -> Result<Vec<(String, Option<String>)>, CDCError> {
        let (g, k, t) = &self.key;
        let ttl = i32::try_from(member_ttl.as_secs().max(1)).unwrap_or(i32::MAX);
        let member_row = member_key(member);
        let heartbeat = (
            ttl,
            version,
            expires_at,
            g.as_str(),
            k.as_str(),
            t.as_str(),
            member_row.as_str(),
        );
        // The member row rides with the first batch; sent alone when that batch never
        // applied (no unit, or every unit of the first batch found lost).
        let mut heartbeat_sent = false;
        let mut lost = Vec::new();
        for (i, chunk) in units.chunks(BATCH_STATEMENTS).enumerate() {
            let mut remaining: Vec<&String> = chunk.iter().collect();
            // A batch whose condition fails on one unit applies nothing: it is sent again
            // without the units found lost (at most once per lost unit).
            while !remaining.is_empty() {
                let mut batch = Batch::new(BatchType::Unlogged);
                batch.set_serial_consistency(Some(SERIAL));
                let mut values: Vec<Box<dyn SerializeRow + Send + Sync + '_>> =
                    Vec::with_capacity(remaining.len() + 1);
                for unit in &remaining {
                    batch.append_statement(self.renew.clone());
                    values.push(Box::new((
                        version,
                        expires_at,
                        g.as_str(),
                        k.as_str(),
                        t.as_str(),
                        unit.as_str(),
                        member,
                    )));
                }
                if i == 0 {
                    batch.append_statement(self.heartbeat.clone());
                    values.push(Box::new(heartbeat));
                }
                let result = self
                    .session
                    .batch(&batch, values)
                    .await
                    .map_err(query_error(format!("renewing leases in {}", self.name)))?;
                let (applied, rows) = applied(result)?;
                if applied == Cas::Applied {
                    heartbeat_sent |= i == 0;
                    break;
                }
                // One row per statement: `[applied]`, the key columns, then `owner`.
                let before = remaining.len();
                let owners = batch_owners(&rows);
                remaining.retain(|unit| match owners.get(unit.as_str()) {
                    Some(owner) if owner.as_deref() != Some(member) => {
                        lost.push(((*unit).clone(), owner.clone()));
                        false
                    }
                    _ => true,
                });
                if remaining.len() == before {
                    return Err(CDCError::Lease(format!(
                        "a renewal in {} was not applied, but every unit is still owned by {member}",
                        self.name
                    )));
                }
            }
        }
        if !heartbeat_sent {
            self.session
                .execute_unpaged(&self.heartbeat, heartbeat)
                .await
                .map_err(query_error(format!("renewing membership in {}", self.name)))?;
        }
        Ok(lost)
    }

    /// Takes `unit` for `member` if its owner is still `owner` and its version `version`.
    pub(crate) async fn take(
        &self,
        unit: &str,
        member: &str,
        owner: Option<&str>,
        version: i64,
        new_version: i64,
        expires_at: DateTime<Utc>,
    ) -> Result<Cas, CDCError> {
        let (g, k, t) = &self.key;
        self.cas(
            "taking a lease",
            &self.take,
            (
                member,
                new_version,
                expires_at,
                g,
                k,
                t,
                unit,
                owner,
                version,
            ),
        )
        .await
    }

    /// Asks `owner` to hand `unit` over to `member`.
    pub(crate) async fn request(
        &self,
        unit: &str,
        member: &str,
        owner: &str,
    ) -> Result<Cas, CDCError> {
        let (g, k, t) = &self.key;
        self.cas(
            "asking for a lease",
            &self.request,
            (member, g, k, t, unit, owner),
        )
        .await
    }

    /// Withdraws `requester`'s request for `unit`.
    pub(crate) async fn clear_request(&self, unit: &str, requester: &str) -> Result<Cas, CDCError> {
        let (g, k, t) = &self.key;
        self.cas(
            "withdrawing a request for a lease",
            &self.clear_request,
            (g, k, t, unit, requester),
        )
        .await
    }

    /// Gives `unit`, owned by `member`, to `to` (`None`: frees it).
    pub(crate) async fn hand_over(
        &self,
        unit: &str,
        member: &str,
        to: Option<&str>,
        new_version: i64,
        expires_at: Option<DateTime<Utc>>,
    ) -> Result<Cas, CDCError> {
        let (g, k, t) = &self.key;
        self.cas(
            "handing a lease over",
            &self.hand_over,
            (to, new_version, expires_at, g, k, t, unit, member),
        )
        .await
    }

    /// Marks `unit`, owned by `member`, as read to its generation's end.
    pub(crate) async fn finish(
        &self,
        unit: &str,
        member: &str,
        new_version: i64,
    ) -> Result<Cas, CDCError> {
        let (g, k, t) = &self.key;
        self.cas(
            "marking a unit done",
            &self.finish,
            (new_version, g, k, t, unit, member),
        )
        .await
    }

    /// Creates the units that do not exist yet (conditional batches; a unit another member
    /// created first is kept as it is).
    pub(crate) async fn create_units(&self, units: &[NewUnit]) -> Result<(), CDCError> {
        let (g, k, t) = &self.key;
        for chunk in units.chunks(BATCH_STATEMENTS) {
            let mut batch = Batch::new(BatchType::Unlogged);
            batch.set_serial_consistency(Some(SERIAL));
            let mut values = Vec::with_capacity(chunk.len());
            for unit in chunk {
                batch.append_statement(self.create.clone());
                values.push((g, k, t, unit.key.as_str(), unit.start));
            }
            let result = self
                .session
                .batch(&batch, values)
                .await
                .map_err(query_error(format!("creating units in {}", self.name)))?;
            // Not applied: another member created some of them; the caller reads again and
            // creates what is still missing.
            applied(result)?;
        }
        Ok(())
    }

    /// Deletes rows, unconditionally (units of a generation every member is done with).
    pub(crate) async fn delete(&self, units: &[String]) -> Result<(), CDCError> {
        let (g, k, t) = &self.key;
        for chunk in units.chunks(BATCH_STATEMENTS) {
            let mut batch = Batch::new(BatchType::Unlogged);
            let mut values = Vec::with_capacity(chunk.len());
            for unit in chunk {
                batch.append_statement(self.delete.clone());
                values.push((g, k, t, unit.as_str()));
            }
            self.session
                .batch(&batch, values)
                .await
                .map_err(query_error(format!("deleting rows of {}", self.name)))?;
        }
        Ok(())
    }

    /// Deletes a row if its version is still `version` (a member that stopped renewing).
    pub(crate) async fn delete_if(&self, unit: &str, version: i64) -> Result<Cas, CDCError> {
        let (g, k, t) = &self.key;
        self.cas(
            "removing a departed member",
            &self.delete_if,
            (g, k, t, unit, version),
        )
        .await
    }
}

/// `[applied]` of a conditional request's answer, and its rows.
fn applied(
    result: scylla::response::query_result::QueryResult,
) -> Result<(Cas, Vec<Row>), CDCError> {
    let rows = result
        .into_rows_result()
        .map_err(|e| lease_error("reading the answer of a lightweight transaction", e))?;
    let rows: Vec<Row> = rows
        .rows::<Row>()
        .map_err(|e| lease_error("reading the answer of a lightweight transaction", e))?
        .collect::<Result<_, _>>()
        .map_err(|e| lease_error("reading the answer of a lightweight transaction", e))?;
    let applied = match rows.first().and_then(|r| r.columns.first()) {
        Some(Some(CqlValue::Boolean(true))) => Cas::Applied,
        Some(Some(CqlValue::Boolean(false))) => Cas::NotApplied,
        other => {
            return Err(CDCError::Lease(format!(
                "a lightweight transaction's answer has no [applied] column (found {other:?})"
            )));
        }
    };
    Ok((applied, rows))
}

/// The owner each row of a failed renewal batch's answer shows, by unit (rows: `[applied]`,
/// `group_name`, `keyspace_name`, `table_name`, `unit`, `owner`; the member row's
/// statement has no condition and shows no owner).
fn batch_owners(rows: &[Row]) -> HashMap<String, Option<String>> {
    let text = |v: Option<&Option<CqlValue>>| match v {
        Some(Some(CqlValue::Text(s))) | Some(Some(CqlValue::Ascii(s))) => Some(s.clone()),
        _ => None,
    };
    rows.iter()
        .filter_map(|r| {
            let unit = text(r.columns.get(4))?;
            Some((unit, text(r.columns.get(5))))
        })
        .collect()
}

/// Checks that an existing lease table has the columns this reader writes.
async fn check_shape(session: &Session, keyspace: &str, table: &str) -> Result<(), CDCError> {
    let what = || format!("reading the schema of the lease table {keyspace}.{table}");
    let result = session
        .query_unpaged(
            "SELECT column_name, type, kind FROM system_schema.columns \
             WHERE keyspace_name = ? AND table_name = ?",
            (keyspace, table),
        )
        .await
        .map_err(query_error(what()))?;
    let rows = result
        .into_rows_result()
        .map_err(|e| lease_error(&what(), e))?;
    let found: BTreeMap<String, (String, String)> = rows
        .rows::<(String, String, String)>()
        .map_err(|e| lease_error(&what(), e))?
        .map(|r| r.map(|(name, ty, kind)| (name, (ty, kind))))
        .collect::<Result<_, _>>()
        .map_err(|e| lease_error(&what(), e))?;
    let problems = shape_problems(&found);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(CDCError::LeaseTableShape {
            table: format!("{keyspace}.{table}"),
            problems,
            expected: LeaseTable::create_table_cql(keyspace, table),
        })
    }
}

/// What differs between a table's columns (name → type, kind) and a lease table's.
fn shape_problems(found: &BTreeMap<String, (String, String)>) -> Vec<String> {
    let mut problems = Vec::new();
    for (name, ty, kind) in COLUMNS {
        match found.get(*name) {
            None => problems.push(format!("column `{name}` is missing")),
            Some((t, k)) if t != ty || k != kind => problems.push(format!(
                "column `{name}` is a {k} column of type {t}, not a {kind} column of type {ty}"
            )),
            Some(_) => {}
        }
    }
    for (name, (_, kind)) in found {
        let known = COLUMNS.iter().any(|(n, _, _)| n == name);
        if !known && (kind == "partition_key" || kind == "clustering") {
            problems.push(format!("key column `{name}` is not part of a lease table"));
        }
    }
    problems
}

/// The default member id: the host's name, the process id and 32 random bits
/// (`<host>-<pid>-<8 hex digits>`). The host name and pid tell an operator where a member
/// runs; they are not unique on their own: containers often share a host name and all run
/// their program as pid 1, and two members with one id would read each other's units.
pub(crate) fn default_member_id() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|h| !h.is_empty()))
        .or_else(|| std::env::var("COMPUTERNAME").ok().filter(|h| !h.is_empty()))
        .unwrap_or_else(|| "unknown-host".to_owned());
    let random = uuid::Uuid::new_v4().as_u128() as u32;
    format!("{host}-{}-{random:08x}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_keys_sort_by_generation() {
        let s = StreamID::new([1; 16]);
        let g = |ms| GenerationTimestamp {
            timestamp: DateTime::from_timestamp_millis(ms).unwrap(),
        };
        let a = unit_key(&g(999), &s);
        let b = unit_key(&g(1_700_000_000_000), &s);
        assert!(a < b);
        assert_eq!(unit_generation_millis(&b), Some(1_700_000_000_000));
        assert_eq!(unit_generation_millis("member:x"), None);
    }

    #[test]
    fn shape_problems_name_what_differs() {
        let mut found: BTreeMap<String, (String, String)> = COLUMNS
            .iter()
            .map(|(n, t, k)| ((*n).to_owned(), ((*t).to_owned(), (*k).to_owned())))
            .collect();
        assert!(shape_problems(&found).is_empty());
        found.insert("extra".into(), ("int".into(), "regular".into()));
        assert!(
            shape_problems(&found).is_empty(),
            "extra regular columns are harmless"
        );
        found.insert("version".into(), ("int".into(), "regular".into()));
        found.remove("owner");
        let p = shape_problems(&found);
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(p.iter().any(|p| p.contains("`owner` is missing")));
        assert!(
            p.iter()
                .any(|p| p.contains("`version`") && p.contains("bigint"))
        );
    }

    /// Containers sharing a host name all run their program as pid 1: the host name and
    /// the pid alone would give their members one id. Two ids made by one process (same
    /// host, same pid) differ.
    #[test]
    fn default_member_ids_differ_on_one_host_and_pid() {
        let id = default_member_id();
        let pid = format!("-{}-", std::process::id());
        assert!(id.contains(&pid), "{id} names the process");
        let random = id.rsplit('-').next().unwrap_or_default();
        assert!(
            random.len() == 8 && random.chars().all(|c| c.is_ascii_hexdigit()),
            "{id} ends with 8 random hex digits"
        );
        let ids: std::collections::HashSet<String> =
            (0..100).map(|_| default_member_id()).collect();
        assert_eq!(
            ids.len(),
            100,
            "ids made on one host by one process collide"
        );
    }

    /// A renewal whose first batch finds every unit lost still renews the member row (it
    /// rides with that batch otherwise): a member that lost its units stays a live member.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn losing_every_unit_of_the_first_batch_still_renews_the_member() -> anyhow::Result<()> {
        let cluster = scylla_emulator::EmbeddedCluster::builder().start().await?;
        let session = cluster.session().await?;
        session
            .query_unpaged(
                "CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', \
                 'replication_factor': 1}",
                (),
            )
            .await?;
        let table = LeaseTable::open(session, ("ks", "leases"), "g", "ks", "t").await?;
        let now = Utc::now();
        let units: Vec<String> = (0..3).map(|i| format!("{UNIT_PREFIX}{i}")).collect();
        let new: Vec<NewUnit> = units
            .iter()
            .map(|key| NewUnit {
                key: key.clone(),
                start: now,
            })
            .collect();
        table.create_units(&new).await?;
        let later = now + chrono::Duration::seconds(10);
        for unit in &units {
            assert_eq!(
                table.take(unit, "a", None, 0, 1, later).await?,
                Cas::Applied
            );
            assert_eq!(
                table.take(unit, "b", Some("a"), 1, 2, later).await?,
                Cas::Applied
            );
        }
        let lost = table
            .renew("a", &units, 7, later, Duration::from_secs(10))
            .await?;
        let expected: Vec<(String, Option<String>)> = units
            .iter()
            .map(|u| (u.clone(), Some("b".to_owned())))
            .collect();
        assert_eq!(lost, expected, "each lost unit with its owner now");
        let rows = table.read().await?;
        let a = rows
            .iter()
            .find(|r| r.member() == Some("a"))
            .expect("member a's row is written");
        assert_eq!((a.version, a.expires_at.is_some()), (7, true));
        for r in rows.iter().filter(|r| r.is_unit()) {
            assert_eq!(
                (r.owner.as_deref(), r.version),
                (Some("b"), 2),
                "{}",
                r.unit
            );
        }
        Ok(())
    }
}
