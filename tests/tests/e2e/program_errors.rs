//! Every bad argument or unusable table gives one line and its exit code, before any reading
//! or writing starts.
//!
//! Runs against the embedded clusters, or the real Scylla of `SCYLLA_URI` (and `SCYLLA_URI2`
//! for the replicator's destination) when set. The expected lines are the programs' own
//! texts, not the server's.

use std::time::Duration;

use scylla_cdc::cli::exit_code;
use scylla_cdc_test_utils::{setup_tracing, unique_keyspace_name};

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn printer_errors() -> anyhow::Result<()> {
    setup_tracing();
    let c = cluster(1).await?;
    let s = c.session().await?;
    let ks = unique_keyspace_name();
    create_keyspace(&s, &ks, 1).await?;
    // Names no test creates (a real cluster is shared).
    let missing = format!("{ks}_missing");
    let missing_cp = format!("{missing}.cp");
    let missing_line = format!("keyspace `{missing}` does not exist");
    let missing_cp_line = format!("checkpoint table {missing_cp}");
    exec(
        &s,
        format!("CREATE TABLE {ks}.plain (pk int PRIMARY KEY, v int)"),
    )
    .await?;
    exec(
        &s,
        format!("CREATE TABLE {ks}.t (pk int PRIMARY KEY, v int) WITH cdc = {{'enabled': true}}"),
    )
    .await?;
    let host = hosts(&c);
    let cases: Vec<(Vec<&str>, u8, &str)> = vec![
        (
            vec!["--hosts", &host, "-k", &missing, "-t", "t"],
            exit_code::SCHEMA,
            &missing_line,
        ),
        (
            vec!["--hosts", &host, "-k", &ks, "-t", "nope"],
            exit_code::SCHEMA,
            "does not exist",
        ),
        (
            vec!["--hosts", &host, "-k", &ks, "-t", "plain"],
            exit_code::SCHEMA,
            "CDC is not enabled",
        ),
        (
            vec!["--hosts", &host, "-k", &ks, "-t", "t,plain"],
            exit_code::SCHEMA,
            "CDC is not enabled",
        ),
        (
            vec![
                "--hosts",
                &host,
                "-k",
                &ks,
                "-t",
                "t",
                "--checkpoint-table",
                &missing_cp,
            ],
            exit_code::SCHEMA,
            &missing_cp_line,
        ),
        (
            vec![
                "--hosts",
                &host,
                "-k",
                &ks,
                "-t",
                "t",
                "--start",
                "yesterday",
            ],
            exit_code::USAGE,
            "not a time",
        ),
        (
            vec!["--hosts", &host, "-k", &ks, "-t", "t", "--end", "-1h"],
            exit_code::USAGE,
            "--end",
        ),
        (
            // Nothing listens there: retried (a cluster may be starting) until --give-up-after.
            vec![
                "--hostname",
                "127.0.0.1:1",
                "-k",
                &ks,
                "-t",
                "t",
                "--give-up-after",
                "1",
            ],
            exit_code::CONNECT,
            "cannot connect",
        ),
    ];
    for (args, code, needle) in cases {
        let (printer, out) = spawn_printer(strings(&args));
        let err = printer
            .join(Duration::from_secs(30))
            .await?
            .expect_err("the printer must fail");
        let line = err.to_string();
        assert_eq!(err.exit_code(), code, "{args:?}: {line}");
        assert!(
            line.starts_with("error: ") && !line.contains('\n'),
            "{line}"
        );
        assert!(line.contains(needle), "{args:?}: {line:?} lacks {needle:?}");
        assert_eq!(out.contents(), "", "nothing printed on stdout");
    }
    drop_keyspace(&s, &ks).await?;
    c.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicator_errors() -> anyhow::Result<()> {
    setup_tracing();
    let pair = Pair::start(1).await?;
    let (s, d, ks) = (&pair.s, &pair.d, &pair.ks);
    exec(
        s,
        format!("CREATE TABLE {ks}.plain (pk int PRIMARY KEY, v int)"),
    )
    .await?;
    for t in ["t", "other", "wider", "flipped", "with_static"] {
        exec(
            s,
            format!(
                "CREATE TABLE {ks}.{t} (pk int, ck int, v int, PRIMARY KEY (pk, ck)) \
                 WITH cdc = {{'enabled': true}}"
            ),
        )
        .await?;
    }
    // A destination table with another type for `v`.
    exec(
        d,
        format!(
            "CREATE TABLE {}.other (pk int, ck int, v text, PRIMARY KEY (pk, ck))",
            pair.dest_ks
        ),
    )
    .await?;
    // Destination tables of another shape: an extra regular column, another clustering
    // order, an extra static column.
    let dks = &pair.dest_ks;
    for statement in [
        format!("CREATE TABLE {dks}.wider (pk int, ck int, v int, w int, PRIMARY KEY (pk, ck))"),
        format!(
            "CREATE TABLE {dks}.flipped (pk int, ck int, v int, PRIMARY KEY (pk, ck)) \
             WITH CLUSTERING ORDER BY (ck DESC)"
        ),
        format!(
            "CREATE TABLE {dks}.with_static (pk int, ck int, v int, s int STATIC, \
             PRIMARY KEY (pk, ck))"
        ),
    ] {
        exec(d, statement).await?;
    }
    let src = hosts(&pair.source);
    let dst = hosts(&pair.destination);
    let base = |table: &str| pair.replicator_args(table);
    let with = |mut v: Vec<String>, extra: &[&str]| {
        v.extend(strings(extra));
        v
    };
    // Names no test creates (a real cluster is shared).
    let missing = format!("{ks}_missing");
    let missing_line = format!("keyspace `{missing}` does not exist");
    let missing_cp = format!("{missing}.cp");
    let cases: Vec<(Vec<String>, u8, &str)> = vec![
        (base("nope"), exit_code::SCHEMA, "source: table"),
        (base("plain"), exit_code::SCHEMA, "CDC is not enabled"),
        (base("t"), exit_code::SCHEMA, "--create-destination-table"),
        (base("other"), exit_code::SCHEMA, "column v"),
        (base("wider"), exit_code::SCHEMA, "has a column w that"),
        (
            base("flipped"),
            exit_code::SCHEMA,
            "clustering column ck is DESC on the destination but ASC on the source",
        ),
        (
            with(base("with_static"), &["--allow-extra-columns"]),
            exit_code::SCHEMA,
            "static column s",
        ),
        (
            strings(&[
                "--source",
                &src,
                "--destination",
                &dst,
                "-k",
                ks,
                "-t",
                "t",
                "--destination-keyspace",
                &missing,
                "--create-destination-table",
            ]),
            exit_code::SCHEMA,
            &missing_line,
        ),
        (
            strings(&[
                "--source",
                &src,
                "--destination",
                "127.0.0.1:1",
                "-k",
                ks,
                "-t",
                "t",
                "--give-up-after",
                "1",
            ]),
            exit_code::CONNECT,
            "destination cluster",
        ),
        (
            with(base("t"), &["--start", "tomorrow"]),
            exit_code::USAGE,
            "not a time",
        ),
        (
            with(
                base("t"),
                &[
                    "--checkpoint-table",
                    &missing_cp,
                    "--create-destination-table",
                ],
            ),
            exit_code::SCHEMA,
            "checkpoint table",
        ),
    ];
    for (args, code, needle) in cases {
        let err = spawn_replicator(args.clone())
            .join(Duration::from_secs(30))
            .await?
            .expect_err("the replicator must fail");
        let line = err.to_string();
        assert_eq!(err.exit_code(), code, "{args:?}: {line}");
        assert!(
            line.starts_with("error: ") && !line.contains('\n'),
            "{line}"
        );
        assert!(line.contains(needle), "{args:?}: {line:?} lacks {needle:?}");
    }
    // With --allow-extra-columns the wider destination is accepted: the replicator starts.
    let (running, _) = start_replicator(with(base("wider"), &["--allow-extra-columns"])).await?;
    running.stop(Duration::from_secs(30)).await??;
    pair.finish().await
}
