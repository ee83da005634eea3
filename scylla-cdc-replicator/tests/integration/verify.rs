//! `scylla-cdc-replicator verify` and `--verify-after`, in-process (`run_to`, as the binary
//! runs it) against two embedded clusters per test.

use futures::StreamExt as _;
use scylla_cdc_replicator::verify::EXIT_DIFFERENT;
use scylla_cdc_replicator::{CliError, exit_code};

use crate::support::{Pair, replicator, run_program};

impl Pair {
    /// Runs `scylla-cdc-replicator verify` with `extra` arguments: its result and stdout.
    async fn verify(&self, extra: &[&str]) -> (Result<(), CliError>, String) {
        let mut args: Vec<String> = vec!["scylla-cdc-replicator".into(), "verify".into()];
        args.extend(self.args("t"));
        args.extend(extra.iter().map(|s| s.to_string()));
        run_program(args).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn equal_tables_exit_0_with_the_counts() {
    let p = Pair::start(2).await;
    p.both("CREATE TYPE {ks}.addr (street text, n int)").await;
    p.both(
        "CREATE TABLE {ks}.t (pk int, ck text, s int static, v int, tags set<text>, \
         m map<int, text>, l list<int>, fa frozen<addr>, u addr, PRIMARY KEY (pk, ck))",
    )
    .await;
    for pk in 0..20 {
        for ck in ["a", "b", "c"] {
            // Every fifth partition expires (TTL written on each side a moment apart).
            let using = if pk % 5 == 0 {
                format!("USING TTL 3600 AND TIMESTAMP {}", 1000 + pk)
            } else {
                format!("USING TIMESTAMP {}", 1000 + pk)
            };
            p.both(&format!(
                "INSERT INTO {{ks}}.t (pk, ck, v, tags, m, l, fa, u) VALUES ({pk}, '{ck}', \
                 {v}, {{'x', 'y'}}, {{1: 'one', 2: 'two'}}, [3, 1, 2], {{street: 's', n: {pk}}}, \
                 {{street: 'u', n: 2}}) {using}",
                v = pk * 10
            ))
            .await;
        }
        p.both(&format!(
            "UPDATE {{ks}}.t USING TIMESTAMP 5 SET s = {pk} WHERE pk = {pk}"
        ))
        .await;
    }
    // A partition with only its static row.
    p.both("UPDATE {ks}.t USING TIMESTAMP 7 SET s = 1 WHERE pk = 100")
        .await;

    let (result, out) = p.verify(&[]).await;
    result.unwrap_or_else(|e| panic!("verify failed: {e}\n{out}"));
    assert_eq!(
        out,
        format!(
            "{}.t: rows compared 61, missing 0, extra 0, different 0\n",
            p.ks
        )
    );

    // A set element, a static cell (on each of its partition's 3 rows), a non-frozen UDT
    // field and a map entry changed on the destination: values without one write time.
    p.on(
        &p.d,
        "UPDATE {ks}.t SET tags = tags + {'z'} WHERE pk = 3 AND ck = 'a'",
    )
    .await;
    p.on(
        &p.d,
        "UPDATE {ks}.t USING TIMESTAMP 6 SET s = 70 WHERE pk = 7",
    )
    .await;
    p.on(&p.d, "UPDATE {ks}.t SET u.n = 9 WHERE pk = 8 AND ck = 'b'")
        .await;
    p.on(
        &p.d,
        "UPDATE {ks}.t SET m[1] = 'uno' WHERE pk = 9 AND ck = 'c'",
    )
    .await;
    let (result, out) = p.verify(&[]).await;
    assert_eq!(result.unwrap_err().exit_code(), EXIT_DIFFERENT);
    assert!(
        out.starts_with(&format!(
            "{}.t: rows compared 61, missing 0, extra 0, different 6\n",
            p.ks
        )),
        "{out}"
    );
    for needle in [
        "different: pk=3, ck='a' (tags: ",
        "different: pk=7, ck='b' (s: source 7, destination 70)",
        "different: pk=8, ck='b' (u: ",
        "different: pk=9, ck='c' (m: ",
    ] {
        assert!(out.contains(needle), "no {needle:?} in\n{out}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_leaves_out_what_was_written_after_it() {
    let p = Pair::start(1).await;
    p.both("CREATE TABLE {ks}.t (pk int, ck int, v int, w int, PRIMARY KEY (pk, ck))")
        .await;
    for pk in 0..10 {
        p.both(&format!(
            "INSERT INTO {{ks}}.t (pk, ck, v, w) VALUES ({pk}, 0, {pk}, 1) USING TIMESTAMP 1000"
        ))
        .await;
    }
    // Written on the source after --at (1970-01-01T00:00:00.002Z = 2000 µs) and not yet on
    // the destination: a cell update, a new row; and one on the destination only.
    p.on(
        &p.s,
        "UPDATE {ks}.t USING TIMESTAMP 3000 SET v = 99 WHERE pk = 1 AND ck = 0",
    )
    .await;
    p.on(
        &p.s,
        "INSERT INTO {ks}.t (pk, ck, v) VALUES (2, 1, 5) USING TIMESTAMP 3000",
    )
    .await;
    p.on(
        &p.d,
        "INSERT INTO {ks}.t (pk, ck, v) VALUES (3, 1, 5) USING TIMESTAMP 3000",
    )
    .await;
    let (result, out) = p.verify(&[]).await;
    assert_eq!(result.unwrap_err().exit_code(), EXIT_DIFFERENT, "{out}");
    assert!(
        out.starts_with(&format!(
            "{}.t: rows compared 12, missing 1, extra 1, different 1\n",
            p.ks
        )),
        "{out}"
    );

    let at = ["--at", "1970-01-01T00:00:00.002Z"];
    let (result, out) = p.verify(&at).await;
    result.unwrap_or_else(|e| panic!("verify --at failed: {e}\n{out}"));
    assert_eq!(
        out,
        format!(
            "{}.t: rows compared 10, missing 0, extra 0, different 0, on one side only but \
             written after --at 2\n",
            p.ks
        )
    );

    // A cell written before --at that differs still counts.
    p.on(
        &p.d,
        "UPDATE {ks}.t USING TIMESTAMP 1500 SET w = 7 WHERE pk = 4 AND ck = 0",
    )
    .await;
    let (result, out) = p.verify(&at).await;
    assert_eq!(result.unwrap_err().exit_code(), EXIT_DIFFERENT, "{out}");
    assert!(
        out.contains("different: pk=4, ck=0 (w: source 1, destination 7)"),
        "{out}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_kind_of_difference_is_counted_and_named() {
    let p = Pair::start(1).await;
    p.both("CREATE TABLE {ks}.t (pk int, ck int, v text, PRIMARY KEY (pk, ck))")
        .await;
    for k in 0..10 {
        if k == 4 {
            continue;
        }
        p.both(&format!(
            "INSERT INTO {{ks}}.t (pk, ck, v) VALUES ({k}, {k}, 'v{k}') USING TIMESTAMP 1000"
        ))
        .await;
    }
    // Row 4 expires on the source only.
    p.on(
        &p.s,
        "INSERT INTO {ks}.t (pk, ck, v) VALUES (4, 4, 'v4') USING TTL 100000 AND TIMESTAMP 1000",
    )
    .await;
    p.on(
        &p.d,
        "INSERT INTO {ks}.t (pk, ck, v) VALUES (4, 4, 'v4') USING TIMESTAMP 1000",
    )
    .await;
    // The tables are equal but for row 4's TTL: exactly one difference.
    let (result, out) = p.verify(&[]).await;
    let err = result.expect_err("the TTLs differ");
    assert_eq!(err.exit_code(), EXIT_DIFFERENT, "{err}");
    assert!(
        out.starts_with(&format!(
            "{}.t: rows compared 10, missing 0, extra 0, different 1\n",
            p.ks
        )),
        "{out}"
    );
    assert!(
        out.contains("different: pk=4, ck=4 (ttl(v): source "),
        "{out}"
    );
    assert!(out.contains(", destination null)"), "{out}");

    // A changed value, a missing row, an extra row, a different write time.
    p.on(
        &p.d,
        "UPDATE {ks}.t USING TIMESTAMP 2000 SET v = 'changed' WHERE pk = 1 AND ck = 1",
    )
    .await;
    p.on(
        &p.d,
        "DELETE FROM {ks}.t USING TIMESTAMP 3000 WHERE pk = 2 AND ck = 2",
    )
    .await;
    p.on(
        &p.d,
        "INSERT INTO {ks}.t (pk, ck, v) VALUES (50, 0, 'new') USING TIMESTAMP 1000",
    )
    .await;
    p.on(
        &p.d,
        "UPDATE {ks}.t USING TIMESTAMP 1500 SET v = 'v3' WHERE pk = 3 AND ck = 3",
    )
    .await;
    let (result, out) = p.verify(&["--ranges", "16"]).await;
    let err = result.expect_err("the tables differ");
    assert_eq!(err.exit_code(), EXIT_DIFFERENT, "{err}");
    assert!(err.message().contains(&format!("{}.t", p.ks)), "{err}");
    assert!(
        out.starts_with(&format!(
            "{}.t: rows compared 11, missing 1, extra 1, different 3\n",
            p.ks
        )),
        "{out}"
    );
    for line in [
        "  different: pk=1, ck=1 (v: source 'v1', destination 'changed')",
        "  missing on the destination: pk=2, ck=2",
        "  extra on the destination: pk=50, ck=0",
        "  different: pk=3, ck=3 (writetime(v): source 1000, destination 1500)",
    ] {
        assert!(out.lines().any(|l| l == line), "no {line:?} in\n{out}");
    }
    assert_eq!(out.lines().count(), 6, "{out}");

    // A missing destination table is exit code 4.
    p.on(&p.s, "CREATE TABLE {ks}.only_here (pk int PRIMARY KEY)")
        .await;
    let mut args: Vec<String> = vec!["scylla-cdc-replicator".into(), "verify".into()];
    args.extend(p.args("t"));
    *args.last_mut().expect("-t t") = "only_here".into();
    let (result, _) = run_program(args).await;
    let err = result.expect_err("no destination table");
    assert_eq!(err.exit_code(), exit_code::SCHEMA, "{err}");
    assert!(err.message().contains("destination"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_rows_over_many_ranges_and_pages_are_counted_exactly() {
    let p = Pair::start(3).await;
    p.both("CREATE TABLE {ks}.t (pk int, ck int, v int, PRIMARY KEY (pk, ck))")
        .await;
    let (partitions, per_partition) = (400, 10);
    for session in [&p.s, &p.d] {
        let insert = session
            .prepare(format!(
                "INSERT INTO {}.t (pk, ck, v) VALUES (?, ?, ?) USING TIMESTAMP 1000",
                p.ks
            ))
            .await
            .expect("prepare");
        let writes = (0..partitions).flat_map(|pk| {
            let insert = insert.clone();
            (0..per_partition).map(move |ck| {
                let insert = insert.clone();
                async move {
                    session
                        .execute_unpaged(&insert, (pk, ck, pk * ck))
                        .await
                        .expect("insert");
                }
            })
        });
        futures::stream::iter(writes)
            .buffer_unordered(64)
            .collect::<Vec<()>>()
            .await;
    }
    let total = partitions * per_partition;
    // Many ranges, pages smaller than a partition.
    let args = ["--ranges", "1000", "--parallelism", "8", "--page-size", "7"];
    let (result, out) = p.verify(&args).await;
    result.unwrap_or_else(|e| panic!("verify failed: {e}\n{out}"));
    assert_eq!(
        out,
        format!(
            "{}.t: rows compared {total}, missing 0, extra 0, different 0\n",
            p.ks
        )
    );
    for (pk, ck) in [
        (0, 0),
        (17, 3),
        (17, 4),
        (200, 9),
        (399, 0),
        (250, 5),
        (3, 3),
    ] {
        p.on(
            &p.d,
            &format!("DELETE FROM {{ks}}.t WHERE pk = {pk} AND ck = {ck}"),
        )
        .await;
    }
    p.on(&p.d, "DELETE FROM {ks}.t WHERE pk = 123").await;
    let (result, out) = p.verify(&args).await;
    assert_eq!(result.unwrap_err().exit_code(), EXIT_DIFFERENT);
    assert!(
        out.starts_with(&format!(
            "{}.t: rows compared {total}, missing {}, extra 0, different 0\n",
            p.ks,
            7 + per_partition
        )),
        "{out}"
    );
    assert_eq!(out.lines().count(), 11, "ten rows named:\n{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_after_a_replication_with_an_end_exits_0() {
    let p = Pair::start(1).await;
    p.on(
        &p.s,
        "CREATE TABLE {ks}.t (pk int, ck int, v text, tags set<int>, PRIMARY KEY (pk, ck)) \
         WITH cdc = {'enabled': true}",
    )
    .await;
    for k in 0..30 {
        p.on(
            &p.s,
            &format!(
                "INSERT INTO {{ks}}.t (pk, ck, v, tags) VALUES ({}, {k}, 'v{k}', {{{k}}})",
                k % 7
            ),
        )
        .await;
    }
    p.on(&p.s, "DELETE FROM {ks}.t WHERE pk = 0 AND ck = 7")
        .await;
    p.on(
        &p.s,
        "UPDATE {ks}.t USING TTL 5000 SET v = 'x' WHERE pk = 1 AND ck = 1",
    )
    .await;
    let mut args: Vec<String> = vec!["scylla-cdc-replicator".into()];
    args.extend(p.args("t"));
    args.extend(
        [
            "--create-destination-table",
            "--no-checkpoints",
            "--start",
            "-10m",
            "--end",
            "now",
            "--window-size",
            "1",
            "--safety-interval",
            "0.5",
            "--sleep-interval",
            "0.1",
            "--verify-after",
        ]
        .map(String::from),
    );
    let (result, out) = run_program(args).await;
    result.unwrap_or_else(|e| panic!("replicate and verify: {e}\n{out}"));
    assert_eq!(
        out,
        format!(
            "{}.t: rows compared 29, missing 0, extra 0, different 0\n",
            p.ks
        )
    );
    // `--verify-after` needs `--end`.
    let mut args: Vec<String> = vec!["scylla-cdc-replicator".into()];
    args.extend(p.args("t"));
    args.push("--verify-after".into());
    let (result, _) = run_program(args).await;
    assert_eq!(result.unwrap_err().exit_code(), exit_code::USAGE);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_exits_5_with_the_report_on_stdout_and_its_log_on_stderr() {
    let p = Pair::start(1).await;
    p.both("CREATE TABLE {ks}.t (pk text PRIMARY KEY, v int)")
        .await;
    for k in 0..50 {
        p.both(&format!(
            "INSERT INTO {{ks}}.t (pk, v) VALUES ('k''{k}', {k}) USING TIMESTAMP 10"
        ))
        .await;
    }
    p.on(&p.d, "DELETE FROM {ks}.t WHERE pk = 'k''7'").await;
    let output = replicator(&["verify"])
        .args(p.args("t"))
        .args(["--ranges", "64", "--progress-interval", "0.1"])
        .env_remove("RUST_LOG")
        .output()
        .await
        .expect("run the binary");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(i32::from(EXIT_DIFFERENT)),
        "{stdout}\n{stderr}"
    );
    assert_eq!(
        stdout,
        format!(
            "{}.t: rows compared 50, missing 1, extra 0, different 0\n  \
             missing on the destination: pk='k''7'\n",
            p.ks
        )
    );
    assert!(
        stderr.contains(&format!("verified {}.t in ", p.ks)),
        "{stderr}"
    );
    assert!(
        stderr
            .lines()
            .last()
            .is_some_and(|l| l.contains("the destination differs from the source")),
        "{stderr}"
    );
}
