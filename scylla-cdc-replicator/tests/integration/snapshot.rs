//! `--snapshot`: a table holding rows written before CDC was enabled is copied (with writes,
//! overwrites and deletes made during the copy) and then replicated, and the replica
//! verifies equal; a copy killed with SIGKILL resumes without copying its finished ranges
//! again; tables that cannot be copied exactly are refused at start. Two embedded clusters
//! per test.

use std::collections::HashMap;
use std::process::Stdio;
use std::time::{Duration, Instant};

use futures::{StreamExt as _, TryStreamExt as _, stream};
use scylla::statement::batch::{Batch, BatchType};
use scylla_cdc::cli::SharedBuffer;
use scylla_cdc_replicator::snapshot::SNAPSHOT_RANGES;
use scylla_cdc_replicator::verify::{VerifyArgs, VerifyConfig, verify_table};
use scylla_cdc_replicator::{Output, Shutdown, exit_code, run, run_to};

use crate::support::{Pair, replicator, terminate};

/// Clustering rows per partition of the test tables.
const ROWS_PER_PARTITION: i32 = 10;

impl Pair {
    /// The replication arguments of the copy tests.
    fn snapshot_args(&self, parallelism: &str) -> Vec<String> {
        let mut args = self.args("t");
        args.extend(
            [
                "--snapshot",
                "--snapshot-parallelism",
                parallelism,
                "--create-destination-table",
                "--window-size",
                "0.5",
                "--safety-interval",
                "0.5",
                "--sleep-interval",
                "0.1",
                "--checkpoint-interval",
                "0",
                "--progress-interval",
                "1",
            ]
            .iter()
            .map(|s| s.to_string()),
        );
        args
    }

    /// Creates `t` on the source without CDC and fills it with `partitions` partitions of
    /// [`ROWS_PER_PARTITION`] rows, whose cells have different write times and TTLs, then
    /// enables CDC: none of these rows is in the log.
    async fn fill_before_cdc(&self, partitions: i32) {
        self.on(
            &self.s,
            "CREATE TABLE {ks}.t (pk int, ck int, s int static, v text, n bigint, \
             f frozen<list<int>>, PRIMARY KEY (pk, ck))",
        )
        .await;
        let insert = self
            .s
            .prepare(format!(
                "INSERT INTO {}.t (pk, ck, v, f) VALUES (?, ?, ?, ?) USING TIMESTAMP ?",
                self.ks
            ))
            .await
            .expect("prepare");
        let update = self
            .s
            .prepare(format!(
                "UPDATE {}.t USING TTL 3600 AND TIMESTAMP ? SET n = ? WHERE pk = ? AND ck = ?",
                self.ks
            ))
            .await
            .expect("prepare");
        let statics = self
            .s
            .prepare(format!(
                "UPDATE {}.t USING TIMESTAMP ? SET s = ? WHERE pk = ?",
                self.ks
            ))
            .await
            .expect("prepare");
        let started = Instant::now();
        stream::iter(0..partitions)
            .map(|pk| {
                let (insert, update, statics) = (&insert, &update, &statics);
                async move {
                    let mut batch = Batch::new(BatchType::Unlogged);
                    let mut values = Vec::new();
                    let base = 1_000_000 + i64::from(pk);
                    for ck in 0..ROWS_PER_PARTITION {
                        batch.append_statement(insert.clone());
                        values.push((
                            Some(pk),
                            Some(ck),
                            Some(format!("v{pk}.{ck}")),
                            Some(vec![pk, ck]),
                            Some(base),
                        ));
                    }
                    self.s.batch(&batch, values).await.expect("insert");
                    // Every third row gets a newer cell with a TTL: two groups of cells.
                    for ck in (0..ROWS_PER_PARTITION).step_by(3) {
                        self.s
                            .execute_unpaged(update, (base + 7, i64::from(ck), pk, ck))
                            .await
                            .expect("update");
                    }
                    self.s
                        .execute_unpaged(statics, (base + 3, pk, pk))
                        .await
                        .expect("static");
                }
            })
            .buffer_unordered(32)
            .collect::<Vec<()>>()
            .await;
        eprintln!(
            "wrote {} rows before CDC in {:.1}s",
            partitions * ROWS_PER_PARTITION,
            started.elapsed().as_secs_f64()
        );
        self.on(&self.s, "ALTER TABLE {ks}.t WITH cdc = {'enabled': true}")
            .await;
    }

    /// The snapshot progress rows of `t`: `(range_start, range_end)` -> `(rows_copied,
    /// run_micros)` (empty until the replicator creates the table).
    async fn progress(&self) -> HashMap<(i64, i64), (i64, i64)> {
        let query = format!(
            "SELECT range_start, range_end, rows_copied, run_micros FROM \
             {}.cdc_replicator_checkpoints_snapshot WHERE source_keyspace = '{}' AND \
             source_table = 't' AND destination_keyspace = '{}'",
            self.ks, self.ks, self.ks
        );
        let Ok(pager) = self.s.query_iter(query, ()).await else {
            return HashMap::new();
        };
        let rows: Vec<(i64, i64, Option<i64>, Option<i64>)> = pager
            .rows_stream::<(i64, i64, Option<i64>, Option<i64>)>()
            .expect("progress rows")
            .try_collect()
            .await
            .expect("progress");
        rows.into_iter()
            .filter_map(|(a, b, rows, run)| Some(((a, b), (rows?, run?))))
            .collect()
    }

    /// Waits until at least `n` ranges are saved done (panics after `limit`).
    async fn wait_for_ranges(&self, n: usize, limit: Duration) -> HashMap<(i64, i64), (i64, i64)> {
        let deadline = Instant::now() + limit;
        loop {
            let p = self.progress().await;
            if p.len() >= n {
                return p;
            }
            assert!(
                Instant::now() < deadline,
                "only {} ranges done after {limit:?}",
                p.len()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Verifies `t` until the replica is equal (panics with the last report after `limit`).
    async fn wait_until_equal(&self, limit: Duration) {
        let mut args = vec!["scylla-cdc-replicator verify".to_string()];
        args.extend(self.args("t"));
        let config = verify_config(args);
        let deadline = Instant::now() + limit;
        loop {
            let report = verify_table(self.s.clone(), self.d.clone(), &config, "t")
                .await
                .expect("verify");
            if report.is_equal() {
                assert!(report.compared > 0);
                return;
            }
            assert!(
                Instant::now() < deadline,
                "not equal after {limit:?}: {report}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Writes, overwrites and deletes on the source, across the ring: new rows, new values
    /// of copied cells, deleted rows and partitions, a changed static cell.
    async fn write_during_copy(&self, partitions: i32) {
        for pk in (0..partitions).step_by(7) {
            let statement = match pk % 4 {
                0 => format!("UPDATE {{ks}}.t SET v = 'new{pk}', n = 1 WHERE pk = {pk} AND ck = 1"),
                1 => format!("DELETE FROM {{ks}}.t WHERE pk = {pk} AND ck = 2"),
                2 => format!("DELETE FROM {{ks}}.t WHERE pk = {pk}"),
                _ => format!(
                    "INSERT INTO {{ks}}.t (pk, ck, v, s) VALUES ({pk}, 100, 'added', {pk}) USING TTL 7200"
                ),
            };
            self.on(&self.s, &statement).await;
        }
        // Partitions that did not exist before the copy.
        for pk in partitions..partitions + 20 {
            self.on(
                &self.s,
                &format!("INSERT INTO {{ks}}.t (pk, ck, v) VALUES ({pk}, 0, 'late')"),
            )
            .await;
        }
    }
}

/// The configuration of `scylla-cdc-replicator verify` with these arguments.
fn verify_config(args: Vec<String>) -> VerifyConfig {
    use clap::Parser as _;
    VerifyArgs::try_parse_from(args)
        .expect("verify arguments")
        .into_config()
        .expect("verify config")
}

/// Partitions of the copy test (x [`ROWS_PER_PARTITION`] rows): `SNAPSHOT_TEST_PARTITIONS`,
/// or 10 000 (100 000 rows).
fn partitions() -> i32 {
    std::env::var("SNAPSHOT_TEST_PARTITIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_from_before_cdc_are_copied_and_writes_during_the_copy_converge() {
    let p = Pair::start(1).await;
    let partitions = partitions();
    p.fill_before_cdc(partitions).await;

    let mut args = vec!["scylla-cdc-replicator".to_string()];
    args.extend(p.snapshot_args("2"));
    let (trigger, shutdown) = Shutdown::new();
    let started = Instant::now();
    let running = tokio::spawn(run_to(
        chrono::Utc::now(),
        args,
        Output::new(SharedBuffer::default()),
        shutdown,
    ));
    // Once the copy has begun: write, overwrite and delete, then check the copy was still
    // running when the writes were done (so they overlapped it).
    p.wait_for_ranges(1, Duration::from_secs(60)).await;
    p.write_during_copy(partitions).await;
    let done = p.progress().await.len();
    assert!(
        done < SNAPSHOT_RANGES as usize,
        "the copy ended before the writes: make the table bigger"
    );
    p.wait_for_ranges(SNAPSHOT_RANGES as usize, Duration::from_secs(120))
        .await;
    eprintln!(
        "copied {} rows in {:.1}s",
        partitions * ROWS_PER_PARTITION,
        started.elapsed().as_secs_f64()
    );
    let copied: i64 = p.progress().await.values().map(|(rows, _)| rows).sum();
    assert!(
        copied >= i64::from(partitions * ROWS_PER_PARTITION) / 2,
        "only {copied} rows copied"
    );
    p.wait_until_equal(Duration::from_secs(60)).await;
    assert!(!running.is_finished(), "{:?}", running.await);
    trigger.trigger();
    running.await.expect("join").expect("replicator");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_killed_mid_way_resumes_without_copying_finished_ranges_again() {
    let p = Pair::start(1).await;
    let partitions = partitions() / 2;
    p.fill_before_cdc(partitions).await;
    let spawn = || {
        replicator(&p.snapshot_args("1"))
            .env_remove("RUST_LOG")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the replicator")
    };
    let mut first = spawn();
    p.wait_for_ranges(3, Duration::from_secs(60)).await;
    first.kill().await.expect("SIGKILL"); // tokio's kill is SIGKILL
    let before = p.progress().await;
    assert!(
        before.len() < SNAPSHOT_RANGES as usize,
        "the copy ended before the kill: make the table bigger"
    );
    let first_run: Vec<i64> = before.values().map(|(_, run)| *run).collect();
    assert!(first_run.windows(2).all(|w| w[0] == w[1]), "{first_run:?}");

    let mut second = spawn();
    let after = p
        .wait_for_ranges(SNAPSHOT_RANGES as usize, Duration::from_secs(120))
        .await;
    for (range, saved) in &before {
        assert_eq!(
            after.get(range),
            Some(saved),
            "range {range:?} was copied again"
        );
    }
    let second_rows: i64 = after
        .iter()
        .filter(|(r, _)| !before.contains_key(r))
        .map(|(_, (rows, _))| rows)
        .sum();
    let first_rows: i64 = before.values().map(|(rows, _)| rows).sum();
    assert_eq!(
        first_rows + second_rows,
        i64::from(partitions * ROWS_PER_PARTITION),
        "every row copied exactly once over the two runs"
    );
    p.wait_until_equal(Duration::from_secs(60)).await;
    assert_eq!(terminate(&mut second).await.code(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_that_cannot_be_copied_exactly_are_refused_at_start() {
    let p = Pair::start(1).await;
    p.on(&p.s, "CREATE TYPE {ks}.addr (street text, n int)")
        .await;
    let cases = [
        ("l", "list<int>", "non-frozen collection"),
        ("st", "set<text>", "non-frozen collection"),
        ("m", "map<int, text>", "non-frozen collection"),
        ("u", "addr", "non-frozen UDT"),
    ];
    for (column, typ, why) in cases {
        let table = format!("t_{column}");
        p.on(
            &p.s,
            &format!(
                "CREATE TABLE {{ks}}.{table} (pk int PRIMARY KEY, {column} {typ}) WITH cdc = \
                 {{'enabled': true}}"
            ),
        )
        .await;
        check_refused(&p, &table, column, why).await;
    }
    // Scylla has no CDC on counter tables: the snapshot check comes first.
    p.on(
        &p.s,
        "CREATE TABLE {ks}.t_c (pk int PRIMARY KEY, c counter)",
    )
    .await;
    check_refused(&p, "t_c", "c", "a counter").await;
}

/// `--snapshot` on `table` fails at start with one line naming `column` and `why`, exit 4,
/// and creates nothing on the destination.
async fn check_refused(p: &Pair, table: &str, column: &str, why: &str) {
    let mut args = vec!["scylla-cdc-replicator".to_string()];
    args.extend(p.args(table));
    args.extend(["--snapshot".into(), "--create-destination-table".into()]);
    let (_trigger, shutdown) = Shutdown::new();
    let err = run(args, shutdown).await.unwrap_err();
    assert_eq!(err.exit_code(), exit_code::SCHEMA, "{err}");
    let text = err.to_string();
    assert!(!text.contains('\n'), "{text}");
    assert!(
        text.contains("--snapshot cannot copy")
            && text.contains(&format!("column `{column}`"))
            && text.contains(why),
        "{text}"
    );
    let exists =
        p.d.query_unpaged(
            "SELECT table_name FROM system_schema.tables WHERE keyspace_name = ? AND \
             table_name = ?",
            (&p.ks, table),
        )
        .await
        .expect("schema")
        .into_rows_result()
        .expect("rows")
        .rows_num();
    assert_eq!(exists, 0, "{table} created on the destination");
}
