//! The programs as consumer groups (`--group`), run as separate processes (the `e2e-printer`
//! and `e2e-replicator` binaries of this crate, which are the programs' own `main`) so that a
//! member can be killed with SIGKILL: no hand-over, no final checkpoint, its leases left to
//! run out.
//!
//! - Three printers share a 3-node cluster's table (4 units each) while a workload writes; one
//!   is killed mid-stream and the survivors take its units over (6 each); a fourth joins (4
//!   each again); one stops with SIGTERM (6 each). The union of every output has every
//!   change, each printer printed each partition's changes in write order, and only changes
//!   the killed printer printed are printed twice (graceful hand-overs repeat nothing).
//! - Two replicator replicas of two tables: the destination ends equal to the source, also
//!   after one of them is killed mid-run.
//! - Two replicas with `--end` and `--verify-after`: both end, and each finds the table equal.
//! - Bad input: `--group` without a checkpoint table, a lease table of another shape, a lease
//!   duration not longer than the renew interval.
//!
//! The clusters run in this test process (embedded; they pick their own loopback addresses),
//! or are the real ones of `SCYLLA_URI` / `SCYLLA_URI2`; the programs connect to them. Shares
//! are checked as even (± 1) whatever the number of units; the number itself (12 per table:
//! 3 nodes × 4 vnodes) only on the embedded cluster.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use scylla::client::session::Session;
use scylla_cdc_test_utils::{TestCluster, setup_tracing, unique_keyspace_name};
use scylla_emulator::EmbeddedCluster;
use serde_json::Value;
use tokio::process::Command;

use crate::support::*;

/// Short leases, so that a takeover after a kill takes seconds.
const LEASE: &str = "2";
const RENEW: &str = "0.4";
/// Partitions the workloads write to.
const PARTITIONS: i32 = 24;

/// A 3-node cluster of 4 vnodes per node (12 units of work), unless `SCYLLA_URI` names one.
async fn three_nodes() -> anyhow::Result<TestCluster> {
    Ok(TestCluster::start(
        EmbeddedCluster::builder()
            .nodes(3)
            .shards_per_node(2)
            .vnodes_per_node(4),
    )
    .await?)
}

/// A writer of rounds over [`PARTITIONS`] partitions until stopped: round `r` runs each of the
/// statements (bound to `(pk, seq)`) with `seq = r` in every partition, in order.
struct Workload {
    rounds: Arc<AtomicI32>,
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<anyhow::Result<()>>,
}

impl Workload {
    fn start(session: Arc<Session>, statements: Vec<String>) -> Self {
        let rounds = Arc::new(AtomicI32::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (r, s) = (rounds.clone(), stop.clone());
        let task = tokio::spawn(async move {
            let mut prepared = Vec::new();
            for statement in statements {
                prepared.push(session.prepare(statement).await?);
            }
            while !s.load(Ordering::Relaxed) {
                let seq = r.load(Ordering::Relaxed);
                for pk in 0..PARTITIONS {
                    for p in &prepared {
                        session.execute_unpaged(p, (pk, seq)).await?;
                    }
                }
                r.store(seq + 1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Ok(())
        });
        Self { rounds, stop, task }
    }

    fn rounds(&self) -> i32 {
        self.rounds.load(Ordering::Relaxed)
    }

    async fn wait_rounds(&self, n: i32) -> anyhow::Result<()> {
        wait_for("rounds of writes", Duration::from_secs(60), || async {
            Ok(self.rounds() >= n)
        })
        .await
    }

    /// Stops writing; the number of rounds written (every partition has seqs `0..rounds`).
    async fn finish(self) -> anyhow::Result<i32> {
        self.stop.store(true, Ordering::Relaxed);
        let rounds = self.rounds.clone();
        self.task.await??;
        Ok(rounds.load(Ordering::Relaxed))
    }
}

/// The `(pk, seq)` of every change a `--format json` printer printed, in its order.
fn printed(out: &str) -> anyhow::Result<Vec<(i32, i32)>> {
    let mut rows = Vec::new();
    for line in out.lines() {
        let v: Value =
            serde_json::from_str(line).with_context(|| format!("not a JSON line: {line}"))?;
        let int = |k: &str| v["columns"][k].as_i64().map(|n| n as i32);
        let (Some(pk), Some(seq)) = (int("pk"), int("seq")) else {
            anyhow::bail!("a line without pk and seq: {line}");
        };
        rows.push((pk, seq));
    }
    Ok(rows)
}

/// Checks one member's output: each partition's changes in write order, none printed twice
/// by this member (a member resumes a unit from a checkpoint no earlier than where it left
/// it). Returns the set of `(pk, seq)` it printed.
fn check_in_order(name: &str, rows: &[(i32, i32)]) -> BTreeSet<(i32, i32)> {
    let mut last: BTreeMap<i32, i32> = BTreeMap::new();
    for &(pk, seq) in rows {
        if let Some(&prev) = last.get(&pk) {
            assert!(
                seq > prev,
                "{name}: partition {pk}: change {seq} printed after change {prev}"
            );
        }
        last.insert(pk, seq);
    }
    rows.iter().copied().collect()
}

fn printer_args(hosts: &str, ks: &str, start: &str, member: &str) -> Vec<String> {
    let mut args = crate::support::printer_args(hosts, ks, "t");
    args.extend(strings(&[
        "--format",
        "json",
        "--start",
        start,
        // Checkpoints 3 s apart: a kill leaves changes printed after the last one, which the
        // member that takes the unit over prints again.
        "--checkpoint-interval",
        "3",
        "--progress-interval",
        "0.3",
        "--checkpoint-table",
        &format!("{ks}.cp"),
        "--group",
        "g",
        "--lease-duration",
        LEASE,
        "--renew-interval",
        RENEW,
    ]));
    args.extend(["--member-id".to_owned(), member.to_owned()]);
    args
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_printers_share_a_table_and_survive_a_kill_9() -> anyhow::Result<()> {
    setup_tracing();
    let c = three_nodes().await?;
    let s = c.session().await?;
    let ks = unique_keyspace_name();
    create_keyspace(&s, &ks, 3).await?;
    exec(
        &s,
        format!(
            "CREATE TABLE {ks}.t (pk int, seq int, PRIMARY KEY (pk, seq)) \
             WITH cdc = {{'enabled': true}}"
        ),
    )
    .await?;
    let start = rfc3339(chrono::Utc::now() - chrono::TimeDelta::seconds(1));
    let dir = TempDir::new();
    let bin = env!("CARGO_BIN_EXE_e2e-printer");
    // 3 nodes × 4 vnodes on the embedded cluster; a real one has its own count.
    let units = c.embedded().map(|_| 12);
    let workload = Workload::start(
        s.clone(),
        vec![format!("INSERT INTO {ks}.t (pk, seq) VALUES (?, ?)")],
    );
    let mut members = Vec::new();
    for name in ["p1", "p2", "p3"] {
        members.push(Process::spawn(
            bin,
            name,
            &printer_args(&hosts(&c), &ks, &start, name),
            &dir,
        )?);
    }
    // The units are divided evenly (12 units: 4 each), as the progress lines say.
    wait_balanced("4 units per printer", &mut members, units).await?;
    workload.wait_rounds(workload.rounds() + 10).await?;
    let victim_printed = |m: &Process| printed(&m.out()).map(|r| r.len()).unwrap_or(0);
    wait_for("the victim to print", Duration::from_secs(30), || {
        std::future::ready(Ok(victim_printed(&members[2]) > 0))
    })
    .await?;

    // kill -9 mid-stream: the writes go on.
    let mut victim = members.pop().expect("three members");
    victim.kill9().await?;
    let killed_at = Instant::now();
    // The survivors take the victim's units over once its leases run out (6 each).
    wait_balanced("6 units per survivor", &mut members, units).await?;
    let takeover = killed_at.elapsed();
    workload.wait_rounds(workload.rounds() + 10).await?;

    // A member joins: the load is divided again (4 each).
    members.push(Process::spawn(
        bin,
        "p4",
        &printer_args(&hosts(&c), &ks, &start, "p4"),
        &dir,
    )?);
    wait_balanced("4 units per printer again", &mut members, units).await?;
    workload.wait_rounds(workload.rounds() + 10).await?;

    // A member stops gracefully (SIGTERM): it hands its units back, the others take them.
    let mut stopped = members.remove(0);
    assert_eq!(
        stopped.terminate(Duration::from_secs(30)).await?,
        Some(0),
        "{}",
        stopped.err()
    );
    wait_balanced("6 units per remaining printer", &mut members, units).await?;
    workload.wait_rounds(workload.rounds() + 10).await?;
    let rounds = workload.finish().await?;

    // Every change written is printed by a running member, by the stopped one, or by the
    // victim before it died.
    let expected: BTreeSet<(i32, i32)> = (0..PARTITIONS)
        .flat_map(|pk| (0..rounds).map(move |seq| (pk, seq)))
        .collect();
    let union = |members: &[Process]| -> anyhow::Result<BTreeMap<(i32, i32), Vec<String>>> {
        let mut all: BTreeMap<(i32, i32), Vec<String>> = BTreeMap::new();
        for m in members.iter().chain([&victim, &stopped]) {
            for change in check_in_order(&m.name, &printed(&m.out())?) {
                all.entry(change).or_default().push(m.name.clone());
            }
        }
        Ok(all)
    };
    wait_for("every change printed", Duration::from_secs(60), || {
        std::future::ready(union(&members).map(|all| expected.iter().all(|c| all.contains_key(c))))
    })
    .await?;
    for m in &mut members {
        assert_eq!(
            m.terminate(Duration::from_secs(30)).await?,
            Some(0),
            "{}",
            m.err()
        );
    }
    let all = union(&members)?;
    assert_eq!(
        all.keys().copied().collect::<BTreeSet<_>>(),
        expected,
        "only the changes written were printed"
    );
    for m in members.iter().chain([&victim, &stopped]) {
        assert!(!m.out().is_empty(), "{} printed nothing", m.name);
    }
    // At least once: what the victim printed after its last checkpoint may be printed again
    // by the member that took its unit over (how much depends on when, between two
    // checkpoints 3 s apart, the kill came: possibly nothing). Graceful hand-overs (while
    // balancing, when p4 joined, when p1 stopped) repeat nothing: every change printed twice
    // was printed by the victim.
    let again: Vec<(&(i32, i32), &Vec<String>)> =
        all.iter().filter(|(_, by)| by.len() > 1).collect();
    for (change, by) in &again {
        assert!(
            by.len() == 2 && by.contains(&victim.name),
            "{change:?} printed by {by:?}: only a takeover from the killed member may repeat"
        );
    }
    eprintln!(
        "{rounds} rounds, {} changes, {} printed again after the takeover; units taken over \
         {:.1} s after the kill",
        expected.len(),
        again.len(),
        takeover.as_secs_f64()
    );
    drop_keyspace(&s, &ks).await?;
    c.shutdown().await;
    Ok(())
}

fn rfc3339(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicator_replicas_converge_also_after_a_kill_9() -> anyhow::Result<()> {
    setup_tracing();
    let pair = Pair::of(three_nodes().await?, second_cluster(1).await?, 3).await?;
    let (s, d) = (pair.s.clone(), pair.d.clone());
    let (ks, dest_ks) = (pair.ks.clone(), pair.dest_ks.clone());
    // Two tables, one reader per replica (`--table t,u`): each table's 12 units are shared.
    let schema = "(pk int, seq int, v text, PRIMARY KEY (pk, seq))";
    for table in ["t", "u"] {
        exec(
            &s,
            format!("CREATE TABLE {ks}.{table} {schema} WITH cdc = {{'enabled': true}}"),
        )
        .await?;
        exec(&d, format!("CREATE TABLE {dest_ks}.{table} {schema}")).await?;
    }
    let start = rfc3339(chrono::Utc::now() - chrono::TimeDelta::seconds(1));
    let dir = TempDir::new();
    let bin = env!("CARGO_BIN_EXE_e2e-replicator");
    // 12 units per table on the embedded cluster; a real one has its own count.
    let units = pair.source.embedded().map(|_| 24);
    let args = |member: &str| {
        let mut a = pair.replicator_args("t,u");
        a.extend(strings(&[
            "--start",
            &start,
            "--group",
            "replicas",
            "--member-id",
            member,
            "--lease-duration",
            LEASE,
            "--renew-interval",
            RENEW,
        ]));
        a
    };
    let workload = Workload::start(
        s.clone(),
        vec![
            format!("INSERT INTO {ks}.t (pk, seq, v) VALUES (?, ?, 'x')"),
            format!("INSERT INTO {ks}.u (pk, seq, v) VALUES (?, ?, 'y')"),
        ],
    );
    let mut replicas = vec![
        Process::spawn(bin, "r1", &args("r1"), &dir)?,
        Process::spawn(bin, "r2", &args("r2"), &dir)?,
    ];
    wait_balanced("12 of the 24 units per replica", &mut replicas, units).await?;
    workload.wait_rounds(workload.rounds() + 10).await?;
    // A partition deleted and a row changed while both run.
    exec(&s, format!("DELETE FROM {ks}.t WHERE pk = 1")).await?;
    exec(
        &s,
        format!("UPDATE {ks}.t SET v = 'changed' WHERE pk = 2 AND seq = 0"),
    )
    .await?;
    workload.wait_rounds(workload.rounds() + 5).await?;

    // kill -9 of one replica mid-run; the other takes its units over and writes on.
    let mut victim = replicas.pop().expect("two replicas");
    victim.kill9().await?;
    let mut survivor = replicas.pop().expect("two replicas");
    wait_balanced(
        "every unit on the survivor",
        std::slice::from_mut(&mut survivor),
        units,
    )
    .await?;
    exec(
        &s,
        format!("DELETE FROM {ks}.t WHERE pk = 3 AND seq >= 2 AND seq < 5"),
    )
    .await?;
    workload.wait_rounds(workload.rounds() + 10).await?;
    let rounds = workload.finish().await?;

    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        survivor.check_running()?;
        let mut diff = Vec::new();
        let mut rows = 0;
        for table in ["t", "u"] {
            let a = snapshot(&s, &ks, table).await?;
            diff.extend(differences(&a, &snapshot(&d, &dest_ks, table).await?));
            // Not two empty tables: the rounds written before the kill and after it.
            assert!(
                a.len() > (PARTITIONS * 20) as usize,
                "{table}: {} rows",
                a.len()
            );
            rows += a.len();
        }
        if diff.is_empty() {
            eprintln!("{rounds} rounds; {rows} rows equal on both sides");
            break;
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "the destination did not converge: {diff:#?}; survivor's log: {}",
            survivor.err()
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert_eq!(
        survivor.terminate(Duration::from_secs(30)).await?,
        Some(0),
        "{}",
        survivor.err()
    );
    pair.finish().await
}

/// Runs a program to its end; its exit code and stderr.
async fn run_to_end(binary: &str, args: &[String]) -> anyhow::Result<(Option<i32>, String)> {
    let output = tokio::time::timeout(
        Duration::from_secs(60),
        Command::new(binary)
            .args(args)
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .context("the program did not end in 60 s")??;
    Ok((
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    ))
}

/// The error a program wrote on stderr: one line, the last (log lines may precede it).
fn error_line(stderr: &str) -> &str {
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error")).collect();
    assert_eq!(errors.len(), 1, "one error line: {stderr}");
    assert_eq!(stderr.lines().last(), Some(errors[0]), "{stderr}");
    errors[0]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_group_settings_are_refused_with_a_clear_error() -> anyhow::Result<()> {
    setup_tracing();
    let printer = env!("CARGO_BIN_EXE_e2e-printer");
    let replicator = env!("CARGO_BIN_EXE_e2e-replicator");
    let base = strings(&["--hosts", "127.0.0.1:1", "-k", "ks", "-t", "t"]);
    let with = |extra: &[&str]| [base.clone(), strings(extra)].concat();
    // Usage errors (exit code 2), before anything is contacted.
    let cases: Vec<(&str, Vec<String>, &[&str])> = vec![
        (
            printer,
            with(&["--group", "g"]),
            &["--group needs a checkpoint table", "--checkpoint-table"],
        ),
        (printer, with(&["--member-id", "m"]), &["--group"]),
        (
            printer,
            with(&[
                "--checkpoint-table",
                "ks.cp",
                "--group",
                "g",
                "--lease-duration",
                "1",
                "--renew-interval",
                "1",
            ]),
            &["--lease-duration (1 s) must be longer than --renew-interval (1 s)"],
        ),
        (
            replicator,
            strings(&[
                "--source",
                "127.0.0.1:1",
                "--destination",
                "127.0.0.1:2",
                "-k",
                "ks",
                "-t",
                "t",
                "--no-checkpoints",
                "--group",
                "g",
            ]),
            &["--group needs a checkpoint table", "--no-checkpoints"],
        ),
        (
            replicator,
            strings(&[
                "--source",
                "127.0.0.1:1",
                "--destination",
                "127.0.0.1:2",
                "-k",
                "ks",
                "-t",
                "t",
                "--group",
                "g",
                "--renew-interval",
                "10",
            ]),
            &["--lease-duration (10 s, the default) must be longer than --renew-interval (10 s)"],
        ),
    ];
    for (binary, args, needles) in cases {
        let (code, stderr) = run_to_end(binary, &args).await?;
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        let line = error_line(&stderr);
        assert!(line.starts_with("error: "), "{line}");
        for needle in needles {
            assert!(line.contains(needle), "{args:?}: {line:?} lacks {needle:?}");
        }
    }

    // A lease table that exists with another shape: a schema error (exit code 4) that says so.
    let c = cluster(1).await?;
    let s = c.session().await?;
    let ks = unique_keyspace_name();
    create_keyspace(&s, &ks, 1).await?;
    exec(
        &s,
        format!(
            "CREATE TABLE {ks}.t (pk int, seq int, PRIMARY KEY (pk, seq)) \
             WITH cdc = {{'enabled': true}}"
        ),
    )
    .await?;
    exec(
        &s,
        format!("CREATE TABLE {ks}.cp_leases (group_name text, unit int, PRIMARY KEY (group_name, unit))"),
    )
    .await?;
    let args = strings(&[
        "--hosts",
        &hosts(&c),
        "-k",
        &ks,
        "-t",
        "t",
        "--checkpoint-table",
        &format!("{ks}.cp"),
        "--group",
        "g",
    ]);
    let (code, stderr) = run_to_end(printer, &args).await?;
    assert_eq!(code, Some(4), "{stderr}");
    let line = error_line(&stderr);
    for needle in [
        &format!("the lease table {ks}.cp_leases exists with another shape"),
        "column `unit` is a clustering column of type int, not a clustering column of type text",
        "column `owner` is missing",
        "--lease-table",
    ] {
        assert!(line.contains(needle), "{line:?} lacks {needle:?}");
    }
    // Another lease table, named with --lease-table, works: the printer runs until stopped.
    let dir = TempDir::new();
    let mut ok = Process::spawn(
        printer,
        "printer",
        &[
            args,
            strings(&[
                "--lease-table",
                &format!("{ks}.leases"),
                "--progress-interval",
                "0.3",
            ]),
        ]
        .concat(),
        &dir,
    )?;
    wait_for(
        "the printer to hold every unit",
        Duration::from_secs(30),
        || {
            std::future::ready(ok.check_running().map(|()| {
                ok.last_share()
                    .is_some_and(|(owned, units, _)| owned == units)
            }))
        },
    )
    .await
    .with_context(|| ok.err())?;
    assert_eq!(
        ok.terminate(Duration::from_secs(30)).await?,
        Some(0),
        "{}",
        ok.err()
    );
    drop_keyspace(&s, &ks).await?;
    c.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_with_an_end_stop_together_and_verify() -> anyhow::Result<()> {
    setup_tracing();
    let pair = Pair::of(three_nodes().await?, second_cluster(1).await?, 3).await?;
    let (s, d) = (pair.s.clone(), pair.d.clone());
    let (ks, dest_ks) = (pair.ks.clone(), pair.dest_ks.clone());
    let schema = "(pk int, seq int, v text, PRIMARY KEY (pk, seq))";
    exec(
        &s,
        format!("CREATE TABLE {ks}.t {schema} WITH cdc = {{'enabled': true}}"),
    )
    .await?;
    exec(&d, format!("CREATE TABLE {dest_ks}.t {schema}")).await?;
    let start = rfc3339(chrono::Utc::now() - chrono::TimeDelta::seconds(1));
    let statements: Vec<String> = (0..PARTITIONS * 10)
        .map(|i| {
            format!(
                "INSERT INTO {ks}.t (pk, seq, v) VALUES ({}, {i}, 'v{i}')",
                i % PARTITIONS
            )
        })
        .collect();
    exec_all(&s, &statements).await?;
    let end = rfc3339(chrono::Utc::now() + chrono::TimeDelta::seconds(1));
    let dir = TempDir::new();
    let bin = env!("CARGO_BIN_EXE_e2e-replicator");
    let mut replicas = Vec::new();
    for member in ["r1", "r2"] {
        let mut args = pair.replicator_args("t");
        args.extend(strings(&[
            "--start",
            &start,
            "--end",
            &end,
            "--verify-after",
            "--group",
            "replicas",
            "--member-id",
            member,
            "--lease-duration",
            LEASE,
            "--renew-interval",
            RENEW,
        ]));
        replicas.push(Process::spawn(bin, member, &args, &dir)?);
    }
    // Each replica ends once the whole group has read to the end (not only its own units),
    // then compares the whole table: equal, exit code 0.
    for r in &mut replicas {
        assert_eq!(
            r.exit_code(Duration::from_secs(60)).await?,
            Some(0),
            "{}: {}",
            r.name,
            r.err()
        );
        let report = r.out();
        assert!(
            report.contains(&format!(
                "rows compared {}, missing 0, extra 0, different 0",
                statements.len()
            )),
            "{}: {report}",
            r.name
        );
    }
    pair.finish().await
}
