//! Start-up survives transient faults (issue 13, item 5): one `Overloaded`, timeout or dropped
//! connection on each start-up query of the printer and the replicator (schema checks,
//! prepares, generation reads, the checkpoint table and its loads, the destination's schema)
//! is retried, and every change is delivered. A definite answer ends start-up at once with its
//! exit code; a cluster that keeps failing ends it after `--give-up-after` with exit code 3.
//!
//! Faults are injected into embedded clusters: with `SCYLLA_URI` set, the tests report
//! themselves skipped.

use std::time::{Duration, Instant};

use scylla_cdc::cli::exit_code;
use scylla_cdc_test_utils::{embedded_only, setup_tracing, unique_keyspace_name};
use scylla_emulator::{EmbeddedCluster, FaultError, FaultOpcode, FaultReaction, FaultRule};

use crate::support::*;

/// One fault, once, on the first request of `opcode` whose statement contains `fragment`.
fn once(opcode: FaultOpcode, fragment: &str, reaction: FaultReaction) -> FaultRule {
    FaultRule::new()
        .on_opcode(opcode)
        .on_statement_containing(fragment)
        .respond(reaction)
        .times(1)
}

fn overloaded() -> FaultReaction {
    FaultReaction::Error(FaultError::Overloaded)
}

fn read_timeout() -> FaultReaction {
    FaultReaction::Error(FaultError::ReadTimeout)
}

/// One fault on each query the log reader and the checkpoint saver make at start-up.
fn reader_start_up_faults(ks: &str) -> Vec<FaultRule> {
    use FaultOpcode::{Execute, Prepare, Query};
    vec![
        once(
            Query,
            "FROM system_schema.keyspaces",
            FaultReaction::DropConnection,
        ),
        once(
            Query,
            "SELECT table_name FROM system_schema.tables",
            read_timeout(),
        ),
        once(Query, "system_schema.scylla_keyspaces", overloaded()),
        once(
            Query,
            "CREATE TABLE IF NOT EXISTS",
            FaultReaction::Error(FaultError::WriteTimeout),
        ),
        once(Prepare, "INSERT INTO", overloaded()),
        once(Prepare, "SELECT time FROM \"", read_timeout()),
        // Vnodes or tablets: the generation queries of either kind.
        once(Prepare, "cdc_generation_timestamps", overloaded()),
        once(Prepare, "system.cdc_timestamps", overloaded()),
        once(
            Execute,
            "cdc_generation_timestamps",
            FaultReaction::Error(FaultError::Unavailable),
        ),
        once(
            Execute,
            "system.cdc_timestamps",
            FaultReaction::Error(FaultError::Unavailable),
        ),
        once(Execute, "SELECT generation FROM", read_timeout()),
        once(Execute, "SELECT time FROM \"", overloaded()),
        once(
            Prepare,
            &format!("\"{ks}\".\"t_scylla_cdc_log\""),
            FaultReaction::Error(FaultError::IsBootstrapping),
        ),
    ]
}

/// One node with one shard: one connection per session, so one fault fails a prepare.
async fn one_node() -> anyhow::Result<EmbeddedCluster> {
    Ok(EmbeddedCluster::builder()
        .nodes(1)
        .shards_per_node(1)
        .start()
        .await?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn printer_starts_through_a_fault_on_each_start_up_query() -> anyhow::Result<()> {
    if !embedded_only(
        "printer_starts_through_a_fault_on_each_start_up_query",
        "injects faults",
    ) {
        return Ok(());
    }
    setup_tracing();
    let cluster = one_node().await?;
    let s = cluster.session().await?;
    let ks = unique_keyspace_name();
    create_keyspace(&s, &ks, 1).await?;
    exec(
        &s,
        format!("CREATE TABLE {ks}.t (pk int PRIMARY KEY, v int) WITH cdc = {{'enabled': true}}"),
    )
    .await?;
    for rule in reader_start_up_faults(&ks) {
        cluster.add_fault(rule);
    }
    let host = cluster.contact_point().to_string();
    let checkpoints = format!("{ks}.cp");
    let mut args = printer_args(&host, &ks, "t");
    args.extend(strings(&[
        "--start=-1m",
        "--checkpoint-table",
        &checkpoints,
        "--format",
        "json",
    ]));
    let (mut printer, out) = spawn_printer(args);
    for i in 0..20 {
        exec(&s, format!("INSERT INTO {ks}.t (pk, v) VALUES ({i}, {i})")).await?;
    }
    wait_for("every write to be printed", Duration::from_secs(60), || {
        let lines = out.contents().lines().count();
        async move {
            if lines >= 20 {
                return Ok(true);
            }
            anyhow::bail!("{lines} of 20 rows printed")
        }
    })
    .await?;
    printer.check_running().await?;
    assert_eq!(out.contents().lines().count(), 20);
    assert_eq!(printer.stop(Duration::from_secs(20)).await?, Ok(()));
    cluster.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicator_starts_through_a_fault_on_each_start_up_query() -> anyhow::Result<()> {
    if !embedded_only(
        "replicator_starts_through_a_fault_on_each_start_up_query",
        "injects faults",
    ) {
        return Ok(());
    }
    setup_tracing();
    let source = one_node().await?;
    let destination = one_node().await?;
    let (s, d) = (source.session().await?, destination.session().await?);
    let ks = unique_keyspace_name();
    create_keyspace(&s, &ks, 1).await?;
    create_keyspace(&d, &ks, 1).await?;
    exec(
        &s,
        format!(
            "CREATE TABLE {ks}.t (pk int, ck int, v int, l list<int>, PRIMARY KEY (pk, ck)) \
             WITH cdc = {{'enabled': true}}"
        ),
    )
    .await?;
    for rule in reader_start_up_faults(&ks) {
        source.add_fault(rule);
    }
    // The replicator's own schema reads, on both sides, and the destination table's creation.
    use FaultOpcode::Query;
    source.add_fault(once(
        Query,
        "clustering_order, type FROM system_schema.columns",
        overloaded(),
    ));
    source.add_fault(once(Query, "FROM system_schema.types", read_timeout()));
    // The first table lookup on the destination is whether it is ScyllaDB.
    destination.add_fault(once(
        Query,
        "SELECT table_name FROM system_schema.tables",
        overloaded(),
    ));
    destination.add_fault(once(
        Query,
        "FROM system_schema.keyspaces",
        FaultReaction::DropConnection,
    ));
    destination.add_fault(once(
        Query,
        "CREATE TABLE IF NOT EXISTS",
        FaultReaction::Error(FaultError::WriteTimeout),
    ));
    destination.add_fault(once(
        Query,
        "clustering_order, type FROM system_schema.columns",
        read_timeout(),
    ));
    let mut args = replicator_args(
        &source.contact_point().to_string(),
        &destination.contact_point().to_string(),
        &ks,
        "t",
    );
    args.extend(["--create-destination-table".into(), "--start=-1m".into()]);
    let replicator = spawn_replicator(args);
    let writes: Vec<String> = (0..30)
        .map(|i| {
            format!(
                "UPDATE {ks}.t SET v = {i}, l = l + [{i}] WHERE pk = {} AND ck = {i}",
                i % 7
            )
        })
        .collect();
    exec_all(&s, &writes).await?;
    converge_then_stop(replicator, &s, &d, &ks, "t", Duration::from_secs(60)).await?;
    source.shutdown().await;
    destination.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_definite_error_ends_start_up_at_once() -> anyhow::Result<()> {
    let _alone = timing_sensitive().await;
    if !embedded_only("a_definite_error_ends_start_up_at_once", "injects faults") {
        return Ok(());
    }
    setup_tracing();
    let cluster = one_node().await?;
    let s = cluster.session().await?;
    let ks = unique_keyspace_name();
    create_keyspace(&s, &ks, 1).await?;
    let host = cluster.contact_point().to_string();
    // No such table: exit 4 at once, although nothing bounds the retries.
    let started = Instant::now();
    let (printer, _) = spawn_printer(strings(&["--hosts", &host, "-k", &ks, "-t", "nope"]));
    let err = printer
        .join(Duration::from_secs(10))
        .await?
        .expect_err("a missing table fails start-up");
    assert_eq!(err.exit_code(), exit_code::SCHEMA, "{err}");
    assert!(started.elapsed() < Duration::from_secs(5));
    cluster.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_that_keeps_failing_is_given_up_on_after_give_up_after() -> anyhow::Result<()> {
    if !embedded_only(
        "a_cluster_that_keeps_failing_is_given_up_on_after_give_up_after",
        "injects faults",
    ) {
        return Ok(());
    }
    setup_tracing();
    let cluster = one_node().await?;
    let s = cluster.session().await?;
    let ks = unique_keyspace_name();
    create_keyspace(&s, &ks, 1).await?;
    exec(
        &s,
        format!("CREATE TABLE {ks}.t (pk int PRIMARY KEY, v int) WITH cdc = {{'enabled': true}}"),
    )
    .await?;
    // Every read of the table's schema is answered Overloaded.
    cluster.add_fault(
        FaultRule::new()
            .on_statement_containing("SELECT table_name FROM system_schema.tables")
            .error(FaultError::Overloaded),
    );
    let host = cluster.contact_point().to_string();
    let started = Instant::now();
    let (printer, _) = spawn_printer(strings(&[
        "--hosts",
        &host,
        "-k",
        &ks,
        "-t",
        "t",
        "--give-up-after",
        "2",
    ]));
    let err = printer
        .join(Duration::from_secs(30))
        .await?
        .expect_err("an overloaded cluster is given up on");
    let elapsed = started.elapsed();
    assert_eq!(err.exit_code(), exit_code::CONNECT, "{err}");
    assert!(err.message().contains("overloaded"), "{err}");
    assert!(
        elapsed >= Duration::from_secs(2),
        "gave up after {elapsed:?}"
    );

    // A source that is gone: nothing listens at this address.
    let started = Instant::now();
    let (printer, _) = spawn_printer(strings(&[
        "--hosts",
        "127.0.70.1:9",
        "-k",
        &ks,
        "-t",
        "t",
        "--give-up-after",
        "2",
    ]));
    let err = printer
        .join(Duration::from_secs(30))
        .await?
        .expect_err("an unreachable cluster is given up on");
    let elapsed = started.elapsed();
    assert_eq!(err.exit_code(), exit_code::CONNECT, "{err}");
    assert!(err.is_transient(), "{err}");
    assert!(
        elapsed >= Duration::from_secs(2),
        "gave up after {elapsed:?}"
    );
    cluster.shutdown().await;
    Ok(())
}
