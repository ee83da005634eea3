//! The library's examples (`scylla-cdc/examples/`), run as a user runs them: each as a
//! process (`example-*`, the example's own file built as a program of this package: see
//! `tests/Cargo.toml`) with its command line, against a cluster the test writes to, until it
//! ends by itself (`--changes N`, `--rows N`) or is stopped with SIGTERM. Each test checks
//! what the example's user would look at: its output, the dead-letter table, `/metrics`.
//!
//! Runs against the embedded cluster, or the real Scylla of `SCYLLA_URI` when set.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use scylla::client::session::Session;
use scylla_cdc_test_utils::metrics_scrape::{free_local_port, scrape_until, value_of};
use scylla_cdc_test_utils::{TestCluster, setup_tracing, unique_keyspace_name};

use crate::support::*;

/// How long an example may take to start reading, or to finish once its changes are written.
const PATIENCE: Duration = Duration::from_secs(90);

/// Starts the example `binary` (a `CARGO_BIN_EXE_example-*`) with `args` and the environment
/// `env`, its output in `dir`.
fn spawn(
    binary: &str,
    name: &str,
    args: &[String],
    env: &[(&str, &str)],
    dir: &TempDir,
) -> anyhow::Result<Process> {
    let stdout = std::path::PathBuf::from(dir.write(&format!("{name}.out"), ""));
    let stderr = std::path::PathBuf::from(dir.write(&format!("{name}.err"), ""));
    let child = tokio::process::Command::new(binary)
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout)?)
        .stderr(std::fs::File::create(&stderr)?)
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {binary}"))?;
    Ok(Process {
        name: name.to_owned(),
        child,
        stdout,
        stderr,
    })
}

/// Waits until the example says it is reading (its reader is built: what is written from
/// now on is delivered).
async fn wait_reading(example: &mut Process) -> anyhow::Result<()> {
    wait_for(
        &format!("{} to start reading", example.name),
        PATIENCE,
        || {
            let reading = example
                .check_running()
                .map(|()| example.err().contains("reading "));
            std::future::ready(reading)
        },
    )
    .await
}

/// Waits for the example to end by itself, and checks that it succeeded.
async fn wait_success(example: &mut Process) -> anyhow::Result<()> {
    let code = example.exit_code(PATIENCE).await?;
    anyhow::ensure!(
        code == Some(0),
        "{} ended with {code:?}: {}",
        example.name,
        example.err()
    );
    Ok(())
}

/// Stops the example as a service manager does (SIGTERM), and checks that it succeeded.
async fn terminate(example: &mut Process) -> anyhow::Result<()> {
    let code = example.terminate(PATIENCE).await?;
    anyhow::ensure!(
        code == Some(0),
        "{} ended with {code:?} after SIGTERM: {}",
        example.name,
        example.err()
    );
    Ok(())
}

/// A cluster with a fresh keyspace and the statements that create its tables.
async fn set_up(tables: &[&str]) -> anyhow::Result<(TestCluster, std::sync::Arc<Session>, String)> {
    let cluster = cluster(1).await?;
    let session = cluster.session().await?;
    let ks = unique_keyspace_name();
    create_keyspace(&session, &ks, 1).await?;
    for table in tables {
        exec(&session, format!("CREATE TABLE {ks}.{table}")).await?;
    }
    Ok((cluster, session, ks))
}

/// Arguments every example takes: the keyspace, and changes read a second after their write.
fn common_args(ks: &str) -> Vec<String> {
    strings(&["--keyspace", ks, "--safety-interval", "1"])
}

/// The lines of `out` that contain `needle`, in order.
fn lines_with<'a>(out: &'a str, needle: &str) -> Vec<&'a str> {
    out.lines().filter(|l| l.contains(needle)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_changes_decodes_each_whole_change_into_a_struct() -> anyhow::Result<()> {
    setup_tracing();
    let (c, s, ks) = set_up(&[
        "orders (id int PRIMARY KEY, customer text, status text, total_cents bigint, \
         items list<text>) WITH cdc = {'enabled': true, 'postimage': true}",
    ])
    .await?;
    let dir = TempDir::new();
    let mut args = common_args(&ks);
    args.extend(strings(&["--changes", "4"]));
    // The contact point from the environment, as the example documents.
    let hosts = hosts(&c);
    let mut example = spawn(
        env!("CARGO_BIN_EXE_example-typed-changes"),
        "typed_changes",
        &args,
        &[("SCYLLA_URI", &hosts)],
        &dir,
    )?;
    wait_reading(&mut example).await?;
    for statement in [
        "INSERT INTO orders (id, customer, status, total_cents, items) \
         VALUES (1, 'ada', 'new', 1250, ['tea', 'cake'])",
        "INSERT INTO orders (id, customer, status) VALUES (2, 'bob', 'new')",
        "UPDATE orders SET status = 'paid' WHERE id = 1",
        "DELETE FROM orders WHERE id = 2",
    ] {
        exec(&s, statement.replace("orders", &format!("{ks}.orders"))).await?;
    }
    // It stops by itself after the 4 changes.
    wait_success(&mut example).await?;
    let out = example.out();
    assert_eq!(out.lines().count(), 4, "one line per change:\n{out}");
    // Each order's changes in write order, decoded whole (post-images: every column).
    assert_eq!(
        lines_with(&out, "id: 1,"),
        [
            r#"insert Order { id: 1, customer: "ada", status: Some("new"), total_cents: Some(1250), items: Some(ListValues(["tea", "cake"])) }"#,
            r#"update Order { id: 1, customer: "ada", status: Some("paid"), total_cents: Some(1250), items: Some(ListValues(["tea", "cake"])) }"#,
        ],
        "{out}"
    );
    let order_2: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("id: 2,") || l.contains("order 2"))
        .collect();
    assert_eq!(
        order_2,
        [
            // Null columns decode as `None`.
            r#"insert Order { id: 2, customer: "bob", status: Some("new"), total_cents: None, items: None }"#,
            "delete order 2",
        ],
        "{out}"
    );
    drop_keyspace(&s, &ks).await?;
    c.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_tables_reads_the_tables_named_with_one_reader() -> anyhow::Result<()> {
    setup_tracing();
    let (c, s, ks) = set_up(&[
        "orders (id int PRIMARY KEY, customer_id int, total_cents bigint) \
         WITH cdc = {'enabled': true}",
        "customers (id int PRIMARY KEY, name text) WITH cdc = {'enabled': true}",
        "audit (id int PRIMARY KEY, what text) WITH cdc = {'enabled': true}",
    ])
    .await?;
    let dir = TempDir::new();
    let mut args = common_args(&ks);
    args.extend(strings(&[
        "--hosts",
        &hosts(&c),
        "--tables",
        "orders,customers",
        "--rows",
        "4",
    ]));
    let mut example = spawn(
        env!("CARGO_BIN_EXE_example-several-tables"),
        "several_tables",
        &args,
        &[],
        &dir,
    )?;
    wait_reading(&mut example).await?;
    for statement in [
        // A table with CDC that the example was not asked to read.
        "INSERT INTO {ks}.audit (id, what) VALUES (1, 'not read')",
        "INSERT INTO {ks}.customers (id, name) VALUES (1, 'ada')",
        "INSERT INTO {ks}.orders (id, customer_id, total_cents) VALUES (10, 1, 500)",
        "UPDATE {ks}.customers SET name = 'Ada' WHERE id = 1",
        "INSERT INTO {ks}.orders (id, customer_id, total_cents) VALUES (11, 1, 700)",
    ] {
        exec(&s, statement.replace("{ks}", &ks)).await?;
    }
    wait_success(&mut example).await?;
    let out = example.out();
    // Each row with the table it comes from (its columns in the log's order: by name); a
    // table's changes of one key in write order.
    assert_eq!(
        lines_with(&out, "customers: "),
        [
            "customers: RowInsert id=1 name='ada'",
            "customers: RowUpdate id=1 name='Ada'"
        ],
        "{out}"
    );
    let orders: BTreeSet<&str> = lines_with(&out, "orders: ").into_iter().collect();
    assert_eq!(
        orders,
        BTreeSet::from([
            "orders: RowInsert customer_id=1 id=10 total_cents=500",
            "orders: RowInsert customer_id=1 id=11 total_cents=700",
        ]),
        "{out}"
    );
    assert_eq!(out.lines().count(), 4, "nothing of the audit table:\n{out}");
    drop_keyspace(&s, &ks).await?;
    c.shutdown().await;
    Ok(())
}

/// The `(pk, seq)` of each line a consumer group member printed (`RowInsert pk=1 seq=2`).
fn group_printed(member: &Process) -> anyhow::Result<Vec<(i32, i32)>> {
    member
        .out()
        .lines()
        .map(|line| {
            let value = |column: &str| -> anyhow::Result<i32> {
                let text = line
                    .split_whitespace()
                    .find_map(|word| word.strip_prefix(&format!("{column}=")))
                    .with_context(|| format!("{}: no {column} in `{line}`", member.name))?;
                Ok(text.parse()?)
            };
            Ok((value("pk")?, value("seq")?))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_consumer_group_members_deliver_each_change_once() -> anyhow::Result<()> {
    setup_tracing();
    let (c, s, ks) =
        set_up(&["t (pk int, seq int, PRIMARY KEY (pk, seq)) WITH cdc = {'enabled': true}"])
            .await?;
    let dir = TempDir::new();
    let mut members = Vec::new();
    for id in ["a", "b"] {
        let mut args = common_args(&ks);
        args.extend(strings(&[
            "--hosts",
            &hosts(&c),
            "--table",
            "t",
            "--member-id",
            id,
        ]));
        members.push(spawn(
            env!("CARGO_BIN_EXE_example-consumer-group"),
            id,
            &args,
            &[],
            &dir,
        )?);
    }
    // The members divide the units evenly (as their share lines on stderr say).
    if let Err(e) = wait_balanced("the units divided evenly", &mut members, None).await {
        let said: Vec<String> = members
            .iter()
            .map(|m| format!("{}:\n{}", m.name, m.err()))
            .collect();
        anyhow::bail!("{e:#}\n{}", said.join("\n"));
    }

    let expected: BTreeSet<(i32, i32)> = (0..20)
        .flat_map(|pk| (0..5).map(move |seq| (pk, seq)))
        .collect();
    for (pk, seq) in &expected {
        exec(
            &s,
            format!("INSERT INTO {ks}.t (pk, seq) VALUES ({pk}, {seq})"),
        )
        .await?;
    }
    let printed = |members: &[Process]| -> anyhow::Result<BTreeMap<(i32, i32), Vec<String>>> {
        let mut by: BTreeMap<(i32, i32), Vec<String>> = BTreeMap::new();
        for m in members {
            for change in group_printed(m)? {
                by.entry(change).or_default().push(m.name.clone());
            }
        }
        Ok(by)
    };
    wait_for("every change printed", PATIENCE, || {
        std::future::ready(printed(&members).map(|by| by.len() == expected.len()))
    })
    .await?;
    // Both leave the group (the first hands its units to the second on its way out).
    for m in &mut members {
        terminate(m).await?;
        assert!(m.err().contains("left group"), "{}", m.err());
    }
    let by = printed(&members)?;
    assert_eq!(
        by.keys().copied().collect::<BTreeSet<_>>(),
        expected,
        "only the changes written"
    );
    let twice: Vec<_> = by.iter().filter(|(_, who)| who.len() > 1).collect();
    assert!(twice.is_empty(), "printed more than once: {twice:?}");
    for m in &members {
        let n = group_printed(m)?.len();
        assert!(
            n > 0,
            "{} printed nothing: the members share the work",
            m.name
        );
    }
    drop_keyspace(&s, &ks).await?;
    c.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_letters_keeps_refused_rows_in_a_table_and_goes_on() -> anyhow::Result<()> {
    setup_tracing();
    let (c, s, ks) = set_up(&[
        "orders (id int PRIMARY KEY, customer text, total_cents bigint) \
         WITH cdc = {'enabled': true}",
    ])
    .await?;
    let dir = TempDir::new();
    let mut args = common_args(&ks);
    args.extend(strings(&["--hosts", &hosts(&c), "--rows", "4"]));
    let mut example = spawn(
        env!("CARGO_BIN_EXE_example-dead-letters"),
        "dead_letters",
        &args,
        &[],
        &dir,
    )?;
    wait_reading(&mut example).await?;
    for (id, customer, total) in [
        (1, "ada", 1250),
        (2, "bob", -5),
        (3, "cy", 700),
        (4, "dee", -1),
    ] {
        exec(
            &s,
            format!(
                "INSERT INTO {ks}.orders (id, customer, total_cents) \
                 VALUES ({id}, '{customer}', {total})"
            ),
        )
        .await?;
    }
    // It stops by itself once the 4 rows are taken or given up on.
    wait_success(&mut example).await?;
    let out = example.out();
    let took: BTreeSet<&str> = lines_with(&out, "took ").into_iter().collect();
    assert_eq!(
        took,
        BTreeSet::from([
            "took order 1 (RowInsert Some(1250))",
            "took order 3 (RowInsert Some(700))"
        ]),
        "{out}"
    );
    assert_eq!(lines_with(&out, "dead letter: ").len(), 2, "{out}");
    assert!(
        out.contains("after 3 attempts: order 2: negative total -5"),
        "{out}"
    );

    // The refused rows are in the dead-letter table, with their columns and the error.
    let rows = s
        .query_unpaged(
            format!(
                "SELECT columns, error, attempts FROM {ks}.orders_dead_letters \
                 WHERE keyspace_name = ? AND table_name = 'orders'"
            ),
            (&ks,),
        )
        .await?
        .into_rows_result()?;
    let mut letters: Vec<(BTreeMap<String, String>, String, i32)> =
        rows.rows()?.collect::<Result<_, _>>()?;
    letters.sort_by_key(|(columns, _, _)| columns.get("id").cloned());
    let expected = |id: &str, customer: &str, total: &str| {
        BTreeMap::from([
            ("id".to_owned(), id.to_owned()),
            ("customer".to_owned(), format!("'{customer}'")),
            ("total_cents".to_owned(), total.to_owned()),
        ])
    };
    assert_eq!(
        letters,
        [
            (
                expected("2", "bob", "-5"),
                "order 2: negative total -5".to_owned(),
                3
            ),
            (
                expected("4", "dee", "-1"),
                "order 4: negative total -1".to_owned(),
                3
            ),
        ]
    );
    drop_keyspace(&s, &ks).await?;
    c.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_serves_the_readers_metrics() -> anyhow::Result<()> {
    setup_tracing();
    let (c, s, ks) = set_up(&[
        "orders (id int PRIMARY KEY, customer text, total_cents bigint) \
         WITH cdc = {'enabled': true}",
    ])
    .await?;
    let dir = TempDir::new();
    let addr = free_local_port()?;
    let mut args = common_args(&ks);
    args.extend(strings(&[
        "--hosts",
        &hosts(&c),
        "--metrics-addr",
        &addr.to_string(),
    ]));
    let mut example = spawn(
        env!("CARGO_BIN_EXE_example-prometheus"),
        "prometheus",
        &args,
        &[],
        &dir,
    )?;
    wait_reading(&mut example).await?;
    for statement in [
        "INSERT INTO {ks}.orders (id, customer, total_cents) VALUES (1, 'ada', 1250)",
        "INSERT INTO {ks}.orders (id, customer, total_cents) VALUES (2, 'bob', 300)",
        "INSERT INTO {ks}.orders (id, customer, total_cents) VALUES (3, 'cy', 700)",
        "UPDATE {ks}.orders SET total_cents = 1300 WHERE id = 1",
    ] {
        exec(&s, statement.replace("{ks}", &ks)).await?;
    }
    // What a Prometheus server scrapes over HTTP: the reader's series, labelled with the
    // table, counting the 4 changes once they are read.
    let labels = format!("keyspace=\"{ks}\",table=\"orders\"");
    let text = scrape_until(addr, PATIENCE, |text| {
        value_of(text, "scylla_cdc_changes_total", &labels) == Some(4.0)
    })
    .await?;
    assert_eq!(
        value_of(&text, "scylla_cdc_rows_total", &labels),
        Some(4.0),
        "{text}"
    );
    for gauge in ["scylla_cdc_lag_seconds", "scylla_cdc_low_watermark_seconds"] {
        assert!(
            value_of(&text, gauge, &labels).is_some(),
            "no {gauge}:\n{text}"
        );
    }
    // The program's own counter, served beside them.
    assert_eq!(
        value_of(&text, "orders_handled_total", "operation=\"RowInsert\""),
        Some(3.0),
        "{text}"
    );
    assert_eq!(
        value_of(&text, "orders_handled_total", "operation=\"RowUpdate\""),
        Some(1.0),
        "{text}"
    );
    terminate(&mut example).await?;
    drop_keyspace(&s, &ks).await?;
    c.shutdown().await;
    Ok(())
}
