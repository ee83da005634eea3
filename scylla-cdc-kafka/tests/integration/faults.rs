//! Kafka failing under the program: a broker stopped for 20 s and started again, a broker that
//! is not there, SASL credentials without the right to create topics, a message over the
//! broker's size limit. Each ends in a documented way with nothing lost.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use rdkafka::admin::{AdminClient, AdminOptions, AlterConfig, ResourceSpecifier};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use scylla::client::session::Session;
use scylla_cdc_test_utils::{TestCluster, setup_tracing, unique_keyspace_name};
use scylla_emulator::EmbeddedCluster;

use crate::support::*;

/// A one-node embedded cluster with table `t (pk int, ck int, v int)` and `big (pk int,
/// b blob)`, both with CDC.
async fn cluster_with_tables() -> anyhow::Result<(TestCluster, Arc<Session>, String)> {
    let cluster = TestCluster::start(EmbeddedCluster::builder().nodes(1)).await?;
    let session = cluster.session().await?;
    let ks = unique_keyspace_name();
    for cql in [
        format!(
            "CREATE KEYSPACE {ks} WITH replication = \
             {{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}}"
        ),
        format!(
            "CREATE TABLE {ks}.t (pk int, ck int, v int, PRIMARY KEY (pk, ck)) \
             WITH cdc = {{'enabled': true}}"
        ),
        format!(
            "CREATE TABLE {ks}.big (pk int PRIMARY KEY, b blob) WITH cdc = {{'enabled': true}}"
        ),
    ] {
        session.query_unpaged(cql, ()).await?;
    }
    Ok((cluster, session, ks))
}

fn now_arg() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

/// The distinct changes (stream, time) among records, and whether any repeats.
fn distinct_changes(records: &[serde_json::Value]) -> (usize, usize) {
    let mut seen = HashSet::new();
    let mut repeated = 0;
    for r in records {
        if !seen.insert((header(r, "scylla.stream"), header(r, "scylla.time"))) {
            repeated += 1;
        }
    }
    (seen.len(), repeated)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_broker_stopped_for_20_s_and_started_again_loses_nothing() -> anyhow::Result<()> {
    setup_tracing();
    const TEST: &str = "faults::a_broker_stopped_for_20_s_and_started_again_loses_nothing";
    let Some(mut broker) = Broker::start(TEST, &[])? else {
        return Ok(());
    };
    let (cluster, session, ks) = cluster_with_tables().await?;
    let hosts = cluster.contact_points().join(",");
    let dir = TempDir::new();
    let log = dir.path().join("program.log");
    let start = now_arg();
    let args = program_args(&hosts, &ks, "t", &broker, "down", &["--start", &start]);
    let mut program = Program::spawn(&args, &log)?;
    let insert = session
        .prepare(format!("INSERT INTO {ks}.t (pk, ck, v) VALUES (?, 0, ?)"))
        .await?;
    // Writes go on at about 200 a second before, during and after the broker's absence.
    let writer = {
        let session = session.clone();
        tokio::spawn(async move {
            let mut n = 0i32;
            let started = Instant::now();
            while started.elapsed() < Duration::from_secs(34) {
                session.execute_unpaged(&insert, (n % 50, n)).await?;
                n += 1;
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            anyhow::Ok(n)
        })
    };
    tokio::time::sleep(Duration::from_secs(5)).await;
    broker.stop(false)?;
    let stopped = Instant::now();
    // 20 s without a broker: the program waits (its Kafka timeout is 60 s), it does not exit.
    while stopped.elapsed() < Duration::from_secs(20) {
        program.check_running()?;
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    broker.restart()?;
    let written = usize::try_from(writer.await??)?;
    program.check_running()?;
    let bootstrap = broker.bootstrap.clone();
    let topic = format!("down.{ks}.t");
    let records = tokio::task::spawn_blocking(move || {
        kafka_check(
            "consume",
            &bootstrap,
            &[&topic],
            Until::Exactly(written, Duration::from_secs(3)),
            &[],
        )
    })
    .await?
    .with_context(|| program.log())?;
    let (distinct, repeated) = distinct_changes(&records);
    ensure!(
        distinct == written && repeated == 0,
        "{distinct} distinct, {repeated} repeated, {written} written"
    );
    let code = program.stop(Duration::from_secs(60)).await?;
    ensure!(code == Some(0), "exit {code:?}: {}", program.log());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_broker_at_the_address_is_exit_3_with_a_clear_error() -> anyhow::Result<()> {
    setup_tracing();
    let (cluster, _session, ks) = cluster_with_tables().await?;
    let hosts = cluster.contact_points().join(",");
    let dir = TempDir::new();
    let log = dir.path().join("program.log");
    // Nothing listens on 127.0.93.250:9 (the tests' brokers use 127.0.93.1 and up).
    let args: Vec<String> = [
        "--hosts",
        &hosts,
        "-k",
        &ks,
        "-t",
        "t",
        "--bootstrap-servers",
        "127.0.93.250:9",
        "--topic-prefix",
        "none",
        "--kafka-timeout",
        "3",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut program = Program::spawn(&args, &log)?;
    let code = program.exit_code(Duration::from_secs(60)).await?;
    let text = program.log();
    ensure!(code == Some(3), "exit {code:?}: {text}");
    ensure!(
        text.contains("127.0.93.250:9") || text.to_lowercase().contains("kafka"),
        "unclear error: {text}"
    );
    Ok(())
}

/// A broker with a SASL/PLAIN listener and an authorizer: `admin` may do anything, `alice`
/// nothing (no ACL names her).
const SASL_PORT: u16 = 9094;

fn sasl_broker(test: &str) -> anyhow::Result<Option<Broker>> {
    let jaas = "listener.name.sasl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \
                user_admin=\"admin-secret\" user_alice=\"alice-secret\";";
    Broker::start_with_listener(
        test,
        SASL_PORT,
        &[
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL:SASL_PLAINTEXT",
            "sasl.enabled.mechanisms=PLAIN",
            jaas,
            "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            // The plaintext listeners (the controller's, the broker's own, the readiness check)
            // are ANONYMOUS.
            "super.users=User:ANONYMOUS;User:admin",
            "allow.everyone.if.no.acl.found=false",
        ],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sasl_users_publish_or_are_refused_with_exit_5() -> anyhow::Result<()> {
    setup_tracing();
    const TEST: &str = "faults::sasl_users_publish_or_are_refused_with_exit_5";
    let Some(broker) = sasl_broker(TEST)? else {
        return Ok(());
    };
    let (cluster, session, ks) = cluster_with_tables().await?;
    let hosts = cluster.contact_points().join(",");
    let dir = TempDir::new();
    let sasl_bootstrap = format!("{}:{SASL_PORT}", broker.address);
    let secret = dir.path().join("alice-password");
    std::fs::write(&secret, "alice-secret\n")?;
    let secret_arg = format!("sasl.password=file:{}", secret.display());
    let start = now_arg();
    let run = |user: &str, password_arg: &str, prefix: &str| -> Vec<String> {
        let mut args = program_args(&hosts, &ks, "t", &broker, prefix, &["--start", &start]);
        let at = args
            .iter()
            .position(|a| a == &broker.bootstrap)
            .expect("bootstrap");
        args[at] = sasl_bootstrap.clone();
        for x in [
            "security.protocol=SASL_PLAINTEXT".to_string(),
            "sasl.mechanism=PLAIN".to_string(),
            format!("sasl.username={user}"),
            password_arg.to_string(),
        ] {
            args.push("-X".into());
            args.push(x);
        }
        args
    };
    // A wrong password: exit 5 at once, saying so (not retried until --kafka-timeout, 60 s).
    let wrong = dir.path().join("wrong-password");
    std::fs::write(&wrong, "not-alice-secret\n")?;
    let wrong_arg = format!("sasl.password=file:{}", wrong.display());
    let started = std::time::Instant::now();
    let mut mallory = Program::spawn(
        &run("alice", &wrong_arg, "mallory"),
        &dir.path().join("mallory.log"),
    )?;
    let code = mallory.exit_code(Duration::from_secs(60)).await?;
    let text = mallory.log();
    ensure!(code == Some(5), "wrong password: exit {code:?}: {text}");
    ensure!(
        started.elapsed() < Duration::from_secs(30),
        "a wrong password took {:?} to be reported: {text}",
        started.elapsed()
    );
    ensure!(
        text.to_lowercase().contains("authentication"),
        "wrong password: unclear error: {text}"
    );
    // alice may not create topics: exit 5, saying so.
    let mut alice = Program::spawn(
        &run("alice", &secret_arg, "alice"),
        &dir.path().join("alice.log"),
    )?;
    let code = alice.exit_code(Duration::from_secs(60)).await?;
    let text = alice.log();
    ensure!(code == Some(5), "alice: exit {code:?}: {text}");
    ensure!(
        text.to_lowercase().contains("authoriz"),
        "alice: unclear error: {text}"
    );
    // admin, its password from the environment: publishes over SASL.
    let log = dir.path().join("admin.log");
    let admin_args = run("admin", "sasl.password=env:TEST_KAFKA_PASSWORD", "admin");
    let mut admin = {
        let stderr = std::fs::File::create(&log)?;
        let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_scylla-cdc-kafka"))
            .args(&admin_args)
            .env("TEST_KAFKA_PASSWORD", "admin-secret")
            .env("RUST_LOG", "warn,scylla_cdc_kafka=info")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(stderr)
            .kill_on_drop(true)
            .spawn()?;
        Program { child, stderr: log }
    };
    for n in 0..20 {
        session
            .query_unpaged(
                format!("INSERT INTO {ks}.t (pk, ck, v) VALUES ({n}, 0, {n})"),
                (),
            )
            .await?;
    }
    let bootstrap = broker.bootstrap.clone();
    let topic = format!("admin.{ks}.t");
    let records = tokio::task::spawn_blocking(move || {
        kafka_check(
            "consume",
            &bootstrap,
            &[&topic],
            Until::Exactly(20, Duration::from_secs(2)),
            &[],
        )
    })
    .await?
    .with_context(|| admin.log())?;
    ensure!(records.len() == 20);
    let code = admin.stop(Duration::from_secs(60)).await?;
    ensure!(code == Some(0), "admin: exit {code:?}: {}", admin.log());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_message_over_the_size_limit_is_exit_5_and_published_once_the_limit_allows_it()
-> anyhow::Result<()> {
    setup_tracing();
    const TEST: &str =
        "faults::a_message_over_the_size_limit_is_exit_5_and_published_once_the_limit_allows_it";
    let Some(broker) = Broker::start(TEST, &[])? else {
        return Ok(());
    };
    let (cluster, session, ks) = cluster_with_tables().await?;
    let hosts = cluster.contact_points().join(",");
    let dir = TempDir::new();
    let log = dir.path().join("program.log");
    let topic = format!("size.{ks}.big");
    // The topic takes messages of at most 20 000 bytes.
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", &broker.bootstrap)
        .create()?;
    let options = AdminOptions::new().operation_timeout(Some(Duration::from_secs(30)));
    admin
        .create_topics(
            [
                &rdkafka::admin::NewTopic::new(
                    &topic,
                    1,
                    rdkafka::admin::TopicReplication::Fixed(1),
                )
                .set("max.message.bytes", "20000"),
            ],
            &options,
        )
        .await?
        .into_iter()
        .collect::<Result<Vec<_>, _>>()
        .map_err(|(t, e)| anyhow::anyhow!("creating {t}: {e}"))?;
    let start = now_arg();
    let args = program_args(&hosts, &ks, "big", &broker, "size", &["--start", &start]);
    let insert = session
        .prepare(format!("INSERT INTO {ks}.big (pk, b) VALUES (?, ?)"))
        .await?;
    // Small, then one of 50 000 bytes, then small again.
    for pk in 0..5 {
        session
            .execute_unpaged(&insert, (pk, vec![1u8; 10]))
            .await?;
    }
    session
        .execute_unpaged(&insert, (5, vec![2u8; 50_000]))
        .await?;
    for pk in 6..10 {
        session
            .execute_unpaged(&insert, (pk, vec![3u8; 10]))
            .await?;
    }
    let mut program = Program::spawn(&args, &log)?;
    let code = program.exit_code(Duration::from_secs(90)).await?;
    let text = program.log();
    ensure!(code == Some(5), "exit {code:?}: {text}");
    ensure!(
        text.contains("MessageSizeTooLarge") || text.to_lowercase().contains("too large"),
        "unclear error: {text}"
    );
    // Nothing published past the refused change is committed as done: with a larger limit, a
    // new run publishes all ten, once.
    admin
        .alter_configs(
            [&AlterConfig::new(ResourceSpecifier::Topic(&topic))
                .set("max.message.bytes", "1000000")],
            &options,
        )
        .await?
        .into_iter()
        .collect::<Result<Vec<_>, _>>()
        .map_err(|(r, e)| anyhow::anyhow!("altering {r:?}: {e}"))?;
    let mut program = Program::spawn(&args, &log)?;
    let bootstrap = broker.bootstrap.clone();
    let records = tokio::task::spawn_blocking(move || {
        kafka_check(
            "consume",
            &bootstrap,
            &[&topic],
            Until::Exactly(10, Duration::from_secs(3)),
            &[],
        )
    })
    .await?
    .with_context(|| program.log())?;
    let (distinct, repeated) = distinct_changes(&records);
    ensure!(
        distinct == 10 && repeated == 0,
        "{distinct} distinct, {repeated} repeated"
    );
    let code = program.stop(Duration::from_secs(60)).await?;
    ensure!(code == Some(0), "exit {code:?}: {}", program.log());
    Ok(())
}
