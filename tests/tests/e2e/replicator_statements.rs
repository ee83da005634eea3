//! The replicator's statements on a real executor: for each change kind, the log rows Scylla
//! writes for a statement (per the CDC semantics document) are translated and applied to one
//! table, the statement itself is run on a twin table, and both tables must end up alike —
//! values, `writetime()` and `ttl()` of every cell. No CDC log is read here, so this checks the
//! translation and the destination side independently of the log reader.
//!
//! Runs against the embedded cluster, or the real Scylla of `SCYLLA_URI` when it is set.

use std::sync::Arc;

use scylla::client::session::Session;
use scylla::statement::Consistency;
use scylla::value::{CqlTimeuuid, CqlValue};
use scylla_cdc::OperationType;
use scylla_cdc_replicator::apply::{Destination, Stats};
use scylla_cdc_replicator::destination::WriteBudget;
use scylla_cdc_replicator::schema::{TableSchema, read_table_schema};
use scylla_cdc_replicator::translate::{LogRow, Translator};
use scylla_cdc_test_utils::{setup_tracing, unique_keyspace_name};

use crate::support::*;

/// Builds log rows of a table by column name.
struct Rows {
    schema: Arc<TableSchema>,
    rows: Vec<LogRow>,
}

impl Rows {
    fn row(&mut self, op: OperationType, time: i64) -> &mut Self {
        self.rows
            .push(LogRow::new(op, time, self.schema.columns.len()));
        self
    }

    fn index(&self, name: &str) -> usize {
        self.schema
            .columns
            .iter()
            .position(|c| c.name == name)
            .unwrap_or_else(|| panic!("no column {name}"))
    }

    fn last(&mut self) -> &mut LogRow {
        self.rows.last_mut().expect("a row")
    }

    fn set(&mut self, name: &str, v: CqlValue) -> &mut Self {
        let i = self.index(name);
        self.last().values[i] = Some(v);
        self
    }

    fn del(&mut self, name: &str) -> &mut Self {
        let i = self.index(name);
        self.last().deleted[i] = true;
        self
    }

    fn del_elements(&mut self, name: &str, v: CqlValue) -> &mut Self {
        let i = self.index(name);
        self.last().deleted_elements[i] = Some(v);
        self
    }

    fn ttl(&mut self, ttl: i64) -> &mut Self {
        self.last().ttl = Some(ttl);
        self
    }
}

fn int(i: i32) -> CqlValue {
    CqlValue::Int(i)
}

fn text(s: &str) -> CqlValue {
    CqlValue::Text(s.into())
}

/// A timeuuid list key with time `micros` (what Scylla's list append generates).
fn list_key(micros: i64, n: u8) -> CqlValue {
    let ticks = (micros as u64) * 10 + 0x01B2_1DD2_1381_4000 + u64::from(n);
    let mut b = [0u8; 16];
    b[0..4].copy_from_slice(&((ticks & 0xFFFF_FFFF) as u32).to_be_bytes());
    b[4..6].copy_from_slice(&(((ticks >> 32) & 0xFFFF) as u16).to_be_bytes());
    b[6..8].copy_from_slice(&((((ticks >> 48) & 0x0FFF) as u16) | 0x1000).to_be_bytes());
    b[8] = 0x80;
    b[9..].copy_from_slice(&[1, 2, 3, 4, 5, 6, 7]);
    CqlValue::Timeuuid(CqlTimeuuid::from_bytes(b))
}

struct Env {
    session: Arc<Session>,
    ks: String,
    /// Column definitions and primary key of the twin tables.
    ddl: &'static str,
    n: usize,
}

impl Env {
    /// Runs `statements` (with `{t}` standing for the table) on a fresh reference table,
    /// applies the translation of `rows` to a fresh twin, and compares them.
    async fn check(
        &mut self,
        what: &str,
        statements: &[&str],
        build: impl FnOnce(&mut Rows),
    ) -> anyhow::Result<()> {
        self.n += 1;
        let (a, b) = (format!("a{}", self.n), format!("b{}", self.n));
        for t in [&a, &b] {
            exec(
                &self.session,
                format!("CREATE TABLE {}.{t} ({})", self.ks, self.ddl),
            )
            .await?;
        }
        for s in statements {
            exec(&self.session, s.replace("{t}", &format!("{}.{a}", self.ks))).await?;
        }
        let schema = Arc::new(
            read_table_schema(&self.session, &self.ks, &b)
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?,
        );
        let mut rows = Rows {
            schema: schema.clone(),
            rows: Vec::new(),
        };
        build(&mut rows);
        let dest = Destination::new(
            self.session.clone(),
            &self.ks,
            &b,
            schema.clone(),
            Consistency::One,
            Arc::new(Stats::default()),
        );
        let mut translator = Translator::new(schema);
        let now = chrono::Utc::now().timestamp_micros();
        for mut row in rows.rows {
            let mut writes = Vec::new();
            translator.translate(&mut row, now, &mut writes)?;
            dest.apply(writes).await?;
        }
        let expected = snapshot(&self.session, &self.ks, &a).await?;
        let got = snapshot(&self.session, &self.ks, &b).await?;
        let diff = differences(&expected, &got);
        anyhow::ensure!(diff.is_empty(), "{what}: {diff:#?}");
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn translated_changes_match_the_original_statements() -> anyhow::Result<()> {
    use OperationType::*;
    setup_tracing();
    let c = cluster(1).await?;
    let session = c.session().await?;
    let ks = unique_keyspace_name();
    create_keyspace(&session, &ks, 1).await?;
    exec(
        &session,
        format!("CREATE TYPE {ks}.addr (street text, zip int, city text)"),
    )
    .await?;
    let mut env = Env {
        session,
        ks,
        ddl: "pk int, ck int, s text static, v text, n int, l list<int>, st set<int>, \
              m map<int, text>, u addr, fl frozen<list<int>>, PRIMARY KEY (pk, ck)",
        n: 0,
    };
    let t = chrono::Utc::now().timestamp_micros() - 5_000_000;
    let key = |r: &mut Rows, op, time| {
        r.row(op, time).set("pk", int(1)).set("ck", int(1));
    };

    env.check(
        "insert with a null",
        &[&format!(
            "INSERT INTO {{t}} (pk, ck, v, n) VALUES (1, 1, 'a', null) USING TIMESTAMP {t}"
        )],
        |r| {
            key(r, RowInsert, t);
            r.set("v", text("a")).del("n");
        },
    )
    .await?;

    env.check(
        "update, static update, column delete",
        &[
            &format!("UPDATE {{t}} USING TIMESTAMP {t} SET v = 'x', n = 5 WHERE pk = 1 AND ck = 1"),
            &format!("UPDATE {{t}} USING TIMESTAMP {t} SET s = 'st' WHERE pk = 1"),
            &format!(
                "DELETE n FROM {{t}} USING TIMESTAMP {} WHERE pk = 1 AND ck = 1",
                t + 5
            ),
        ],
        |r| {
            key(r, RowUpdate, t);
            r.set("v", text("x")).set("n", int(5));
            r.row(RowUpdate, t).set("pk", int(1)).set("s", text("st"));
            key(r, RowUpdate, t + 5);
            r.del("n");
        },
    )
    .await?;

    env.check(
        "collection overwrite, additions, removals and a collection delete (+1 rule)",
        &[
            &format!("UPDATE {{t}} USING TIMESTAMP {t} SET m = {{1: 'a', 2: 'b'}}, st = {{1, 2}} WHERE pk = 1 AND ck = 1"),
            &format!("UPDATE {{t}} USING TIMESTAMP {} SET m = m + {{3: 'c'}}, st = st - {{1}} WHERE pk = 1 AND ck = 1", t + 10),
            &format!("DELETE m[1] FROM {{t}} USING TIMESTAMP {} WHERE pk = 1 AND ck = 1", t + 20),
            &format!("DELETE st FROM {{t}} USING TIMESTAMP {} WHERE pk = 1 AND ck = 1", t + 30),
        ],
        |r| {
            key(r, RowUpdate, t);
            r.set("m", CqlValue::Map(vec![(int(1), text("a")), (int(2), text("b"))]))
                .del("m")
                .set("st", CqlValue::Set(vec![int(1), int(2)]))
                .del("st");
            key(r, RowUpdate, t + 10);
            r.set("m", CqlValue::Map(vec![(int(3), text("c"))]))
                .del_elements("st", CqlValue::Set(vec![int(1)]));
            key(r, RowUpdate, t + 20);
            r.del_elements("m", CqlValue::Set(vec![int(1)]));
            // `DELETE st ... USING TIMESTAMP T` is logged at T + 1.
            key(r, RowUpdate, t + 31);
            r.del("st");
        },
    )
    .await?;

    env.check(
        "list appends, element delete and overwrite",
        &[
            &format!(
                "UPDATE {{t}} USING TIMESTAMP {t} SET l = l + [1, 2, 3] WHERE pk = 1 AND ck = 1"
            ),
            &format!(
                "DELETE l[1] FROM {{t}} USING TIMESTAMP {} WHERE pk = 1 AND ck = 1",
                t + 10
            ),
            &format!(
                "UPDATE {{t}} USING TIMESTAMP {} SET l[0] = 10 WHERE pk = 1 AND ck = 1",
                t + 20
            ),
        ],
        |r| {
            key(r, RowUpdate, t);
            r.set(
                "l",
                CqlValue::Map(vec![
                    (list_key(t, 0), int(1)),
                    (list_key(t, 1), int(2)),
                    (list_key(t, 2), int(3)),
                ]),
            );
            key(r, RowUpdate, t + 10);
            r.del_elements("l", CqlValue::Set(vec![list_key(t, 1)]));
            key(r, RowUpdate, t + 20);
            r.set("l", CqlValue::Map(vec![(list_key(t, 0), int(10))]));
        },
    )
    .await?;

    env.check(
        "insert of a list (tombstone at T-1, then the elements)",
        &[
            &format!(
                "UPDATE {{t}} USING TIMESTAMP {} SET l = l + [7] WHERE pk = 1 AND ck = 1",
                t - 100
            ),
            &format!("INSERT INTO {{t}} (pk, ck, l) VALUES (1, 1, [1, 2]) USING TIMESTAMP {t}"),
        ],
        |r| {
            key(r, RowUpdate, t - 100);
            r.set("l", CqlValue::Map(vec![(list_key(t - 100, 0), int(7))]));
            key(r, RowInsert, t);
            r.set(
                "l",
                CqlValue::Map(vec![(list_key(t, 0), int(1)), (list_key(t, 1), int(2))]),
            )
            .del("l");
        },
    )
    .await?;

    let udt = |street: Option<&str>, zip: Option<i32>| CqlValue::UserDefinedType {
        keyspace: "ignored".into(),
        name: "addr".into(),
        fields: vec![
            ("street".into(), street.map(text)),
            ("zip".into(), zip.map(int)),
            ("city".into(), None),
        ],
    };
    env.check(
        "UDT fields, field delete, overwrite",
        &[
            &format!("UPDATE {{t}} USING TIMESTAMP {t} SET u.street = 'Main', u.zip = 5 WHERE pk = 1 AND ck = 1"),
            &format!("UPDATE {{t}} USING TIMESTAMP {} SET u.zip = null WHERE pk = 1 AND ck = 1", t + 10),
            &format!("UPDATE {{t}} USING TIMESTAMP {} SET u = {{street: 'New'}} WHERE pk = 1 AND ck = 2", t + 20),
        ],
        |r| {
            key(r, RowUpdate, t);
            r.set("u", udt(Some("Main"), Some(5)));
            key(r, RowUpdate, t + 10);
            r.set("u", udt(None, None))
                .del_elements("u", CqlValue::Set(vec![CqlValue::SmallInt(1)]));
            r.row(RowUpdate, t + 20).set("pk", int(1)).set("ck", int(2));
            r.set("u", udt(Some("New"), None)).del("u");
        },
    )
    .await?;

    // The reference write's expiry counts from the server's clock: write it "now".
    let now = chrono::Utc::now().timestamp_micros();
    env.check(
        "TTLs: remaining TTL and a row marker with TTL",
        &[&format!(
            "INSERT INTO {{t}} (pk, ck, v) VALUES (1, 1, 'ttl') USING TTL 1000 AND TIMESTAMP {now}"
        )],
        |r| {
            key(r, RowInsert, now);
            r.set("v", text("ttl")).ttl(1000);
        },
    )
    .await?;

    // Row, partition and range deletes over a filled partition.
    let fill: Vec<String> = (0..6)
        .map(|ck| {
            format!(
                "INSERT INTO {{t}} (pk, ck, v) VALUES (1, {ck}, 'v') USING TIMESTAMP {}",
                t - 1000
            )
        })
        .chain(std::iter::once(format!(
            "INSERT INTO {{t}} (pk, ck, v, s) VALUES (2, 0, 'v', 'st') USING TIMESTAMP {}",
            t - 1000
        )))
        .collect();
    let fill_rows = |r: &mut Rows| {
        for ck in 0..6 {
            r.row(RowInsert, t - 1000)
                .set("pk", int(1))
                .set("ck", int(ck))
                .set("v", text("v"));
        }
        r.row(RowUpdate, t - 1000)
            .set("pk", int(2))
            .set("s", text("st"));
        r.row(RowInsert, t - 1000)
            .set("pk", int(2))
            .set("ck", int(0))
            .set("v", text("v"));
    };
    let mut statements: Vec<String> = fill.clone();
    statements.extend([
        format!("DELETE FROM {{t}} USING TIMESTAMP {t} WHERE pk = 1 AND ck = 0"),
        format!("DELETE FROM {{t}} USING TIMESTAMP {t} WHERE pk = 1 AND ck > 1 AND ck <= 3"),
        format!("DELETE FROM {{t}} USING TIMESTAMP {t} WHERE pk = 1 AND ck >= 5"),
        format!("DELETE FROM {{t}} USING TIMESTAMP {t} WHERE pk = 2"),
    ]);
    let refs: Vec<&str> = statements.iter().map(String::as_str).collect();
    env.check("row, range and partition deletes", &refs, |r| {
        fill_rows(r);
        r.row(RowDelete, t).set("pk", int(1)).set("ck", int(0));
        r.row(RowRangeDelExclLeft, t)
            .set("pk", int(1))
            .set("ck", int(1));
        r.row(RowRangeDelInclRight, t)
            .set("pk", int(1))
            .set("ck", int(3));
        r.row(RowRangeDelInclLeft, t)
            .set("pk", int(1))
            .set("ck", int(5));
        r.row(RowRangeDelInclRight, t).set("pk", int(1));
        r.row(PartitionDelete, t).set("pk", int(2));
    })
    .await?;
    drop_keyspace(&env.session, &env.ks).await?;
    c.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn range_deletes_on_a_multi_column_clustering_key() -> anyhow::Result<()> {
    use OperationType::*;
    setup_tracing();
    let c = cluster(1).await?;
    let session = c.session().await?;
    let ks = unique_keyspace_name();
    create_keyspace(&session, &ks, 1).await?;
    let mut env = Env {
        session,
        ks,
        ddl: "pk int, c1 int, c2 int, v int, PRIMARY KEY (pk, c1, c2)) \
              WITH CLUSTERING ORDER BY (c1 ASC, c2 DESC",
        n: 0,
    };
    let t = chrono::Utc::now().timestamp_micros() - 5_000_000;
    let mut fill = Vec::new();
    for c1 in 0..5 {
        for c2 in 0..5 {
            fill.push(format!(
                "INSERT INTO {{t}} (pk, c1, c2, v) VALUES (1, {c1}, {c2}, 1) USING TIMESTAMP {}",
                t - 1000
            ));
        }
    }
    let fill_rows = |r: &mut Rows| {
        for c1 in 0..5 {
            for c2 in 0..5 {
                r.row(RowInsert, t - 1000)
                    .set("pk", int(1))
                    .set("c1", int(c1))
                    .set("c2", int(c2))
                    .set("v", int(1));
            }
        }
    };
    // Each case: the reference DELETEs' WHERE clauses and the logged bounds (clustering
    // order).
    type Bound = (OperationType, Option<i32>, Option<i32>);
    let cases: Vec<(Vec<&str>, Bound, Bound)> = vec![
        (
            vec!["c1 = 1"],
            (RowRangeDelInclLeft, Some(1), None),
            (RowRangeDelInclRight, Some(1), None),
        ),
        // c2 is DESC: `c2 > 1 AND c2 <= 3` runs from 3 (incl) down to 1 (excl).
        (
            vec!["c1 = 2 AND c2 > 1 AND c2 <= 3"],
            (RowRangeDelInclLeft, Some(2), Some(3)),
            (RowRangeDelExclRight, Some(2), Some(1)),
        ),
        // From (1, 2) inclusive to c1 = 3 exclusive: the rest of block 1 (c2 <= 2, as c2
        // is DESC), then block 2.
        (
            vec!["c1 = 1 AND c2 <= 2", "c1 = 2"],
            (RowRangeDelInclLeft, Some(1), Some(2)),
            (RowRangeDelExclRight, Some(3), None),
        ),
        // Unbounded start up to (3, 4) exclusive: blocks 0..2, and block 3 above c2 = 4.
        (
            vec!["c1 < 3"],
            (RowRangeDelInclLeft, None, None),
            (RowRangeDelExclRight, Some(3), Some(4)),
        ),
    ];
    for (i, (wheres, start, end)) in cases.into_iter().enumerate() {
        let mut statements = fill.clone();
        for w in &wheres {
            statements.push(format!(
                "DELETE FROM {{t}} USING TIMESTAMP {t} WHERE pk = 1 AND {w}"
            ));
        }
        let refs: Vec<&str> = statements.iter().map(String::as_str).collect();
        env.check(&format!("case {i}: {wheres:?}"), &refs, |r| {
            fill_rows(r);
            for (op, c1, c2) in [start, end] {
                r.row(op, t).set("pk", int(1));
                if let Some(c1) = c1 {
                    r.set("c1", int(c1));
                }
                if let Some(c2) = c2 {
                    r.set("c2", int(c2));
                }
            }
        })
        .await?;
    }
    drop_keyspace(&env.session, &env.ks).await?;
    c.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_writer_pipelines_batches_and_flushes() -> anyhow::Result<()> {
    use scylla_cdc_replicator::apply::StreamWriter;
    setup_tracing();
    let c = cluster(1).await?;
    let session = c.session().await?;
    let ks = unique_keyspace_name();
    create_keyspace(&session, &ks, 1).await?;
    exec(
        &session,
        format!("CREATE TABLE {ks}.t (pk bigint, ck bigint, v blob, PRIMARY KEY (pk, ck))"),
    )
    .await?;
    let schema = Arc::new(
        read_table_schema(&session, &ks, "t")
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?,
    );
    let stats = Arc::new(Stats::default());
    let dest = Arc::new(Destination::new(
        session.clone(),
        &ks,
        "t",
        schema.clone(),
        Consistency::One,
        stats.clone(),
    ));
    let writer = StreamWriter::new(dest, 8, Arc::new(WriteBudget::new(1 << 20)));
    let mut translator = Translator::new(schema.clone());
    let t = chrono::Utc::now().timestamp_micros();
    let n = 2000i64;
    let started = std::time::Instant::now();
    for i in 0..n {
        let mut row = LogRow::new(OperationType::RowInsert, t + i, schema.columns.len());
        row.values[0] = Some(CqlValue::BigInt(i % 50));
        row.values[1] = Some(CqlValue::BigInt(i));
        row.values[2] = Some(CqlValue::Blob(vec![7; 16]));
        let mut writes = Vec::new();
        translator.translate(&mut row, t, &mut writes)?;
        writer.submit(writes, t + i).await?;
    }
    writer.flush().await?;
    let elapsed = started.elapsed();
    // Everything submitted before the flush is written when it returns.
    assert_eq!(stats.applied(), n as u64);
    assert_eq!(stats.newest_applied_micros(), Some(t + n - 1));
    let count: (i64,) = session
        .query_unpaged(format!("SELECT COUNT(*) FROM {ks}.t"), ())
        .await?
        .into_rows_result()?
        .single_row()?;
    assert_eq!(count.0, n);
    let target = if c.embedded().is_some() {
        "in-process cluster"
    } else {
        "SCYLLA_URI's cluster"
    };
    println!(
        "{n} changes through a stream writer in {:.2} s ({:.0}/s, debug build, {target})",
        elapsed.as_secs_f64(),
        n as f64 / elapsed.as_secs_f64()
    );

    // A write that cannot succeed fails the flush and every later submission.
    let missing = Arc::new(Destination::new(
        session.clone(),
        &ks,
        "missing",
        schema.clone(),
        Consistency::One,
        Arc::new(Stats::default()),
    ));
    let writer = StreamWriter::new(missing, 8, Arc::new(WriteBudget::new(1 << 20)));
    let mut row = LogRow::new(OperationType::RowInsert, t, schema.columns.len());
    row.values[0] = Some(CqlValue::BigInt(1));
    row.values[1] = Some(CqlValue::BigInt(1));
    let mut writes = Vec::new();
    translator.translate(&mut row, t, &mut writes)?;
    writer.submit(writes.clone(), t).await?;
    let err = writer.flush().await.expect_err("the table does not exist");
    assert!(format!("{err:#}").contains("missing"), "{err:#}");
    assert!(writer.submit(writes, t).await.is_err());
    drop_keyspace(&session, &ks).await?;
    c.shutdown().await;
    Ok(())
}
