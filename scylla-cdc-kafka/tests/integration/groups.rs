//! Several instances as a consumer group: three members share a table's streams through the
//! library's leases, while a stream of changes is written (some late). Members are killed
//! (kill -9), stopped gracefully (their units handed over), and paused (SIGSTOP) for longer
//! than their lease, so that the others take their units over while they still hold open
//! transactions; a paused member must find itself fenced when it wakes (exit code 5). Kafka's
//! Java consumer, `read_committed`, must then see every change exactly once, each key's
//! changes in write order.
//!
//! Sizes: `KAFKA_GROUP_CHANGES` (default 20000) changes and `KAFKA_GROUP_ROUNDS` (default 9)
//! rounds of faults, each round a kill, a graceful stop and a pause in turn.

use std::time::Duration;

use anyhow::{Context, ensure};
use rand::{Rng, SeedableRng};
use scylla_cdc_test_utils::{TestCluster, setup_tracing};
use scylla_emulator::EmbeddedCluster;

use crate::exactly_once::{check_published, consume_all, env_usize, write_changes};
use crate::support::*;

/// The members' lease: short, so that takeovers happen within the test.
const LEASE_SECONDS: &str = "2";
const RENEW_SECONDS: &str = "0.3";

/// One member: its current process, member id, and when it was started (in spawn order).
struct Member {
    id: String,
    program: Program,
    spawned: usize,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_group_keeps_exactly_once_across_kills_hand_overs_and_paused_members()
-> anyhow::Result<()> {
    let test = "groups::a_group_keeps_exactly_once_across_kills_hand_overs_and_paused_members";
    setup_tracing();
    // A member killed with a transaction open before anyone fences it holds back every read
    // of the partitions it wrote to (reads wait for the transactions open when they begin)
    // until its transaction times out (the program's: twice the lease, at least 10 s) and the
    // broker's next check for timed-out transactions aborts it: every 2 s here, not every 10.
    let Some(broker) = Broker::start(
        test,
        &["transaction.abort.timed.out.transaction.cleanup.interval.ms=2000"],
    )?
    else {
        return Ok(());
    };
    let changes = env_usize("KAFKA_GROUP_CHANGES", 20_000);
    let rounds = env_usize("KAFKA_GROUP_ROUNDS", 9);
    let cluster = TestCluster::start(EmbeddedCluster::builder().nodes(1)).await?;
    let session = cluster.session().await?;
    let ks = keyspace_with_table(&session, "pk int, ck int, v int, PRIMARY KEY (pk, ck)").await?;
    let hosts = cluster.contact_points().join(",");
    let dir = TempDir::new();
    let log = dir.path().join("members.log");
    let started_at = chrono::Utc::now();
    let start = started_at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    let lease_table = format!("{ks}.leases");
    let args = program_args(
        &hosts,
        &ks,
        "t",
        &broker,
        "grp",
        &[
            "--topic-partitions",
            "4",
            "--start",
            &start,
            "--group",
            "g",
            "--lease-table",
            &lease_table,
            "--lease-duration",
            LEASE_SECONDS,
            "--renew-interval",
            RENEW_SECONDS,
        ],
    );
    let mut spawned = 0usize;
    let mut spawn = |slot: usize| -> anyhow::Result<Member> {
        spawned += 1;
        let id = format!("m{slot}-{spawned}");
        let mut member_args = args.clone();
        member_args.extend(["--member-id".to_owned(), id.clone()]);
        Ok(Member {
            id,
            program: Program::spawn(&member_args, &log)?,
            spawned,
        })
    };
    let mut members: Vec<Member> = (0..3).map(&mut spawn).collect::<anyhow::Result<_>>()?;

    let span = Duration::from_secs_f64((rounds as f64 * 4.0).max(8.0));
    let writer = tokio::spawn(write_changes(
        session.clone(),
        ks.clone(),
        changes,
        span,
        started_at.timestamp_micros(),
    ));
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x6209);
    let mut paused_ids = Vec::new();
    for round in 0..rounds {
        tokio::time::sleep(Duration::from_millis(rng.gen_range(800..2500))).await;
        // Kills and stops hit any member; a pause the one running longest, which holds
        // units by then (a member paused before it took any would not be fenced).
        let slot = if round % 3 == 2 {
            (0..members.len())
                .min_by_key(|i| members[*i].spawned)
                .unwrap_or(0)
        } else {
            rng.gen_range(0..members.len())
        };
        for m in &mut members {
            m.program.check_running()?;
        }
        let m = &mut members[slot];
        match round % 3 {
            0 => {
                m.program.kill9().await?;
            }
            1 => {
                let code = m.program.stop(Duration::from_secs(60)).await?;
                ensure!(
                    code == Some(0),
                    "member {} stopped with {code:?}: {}",
                    m.id,
                    m.program.log()
                );
            }
            _ => {
                // Paused for three leases: the others take its units over (fencing it)
                // while its transaction is open; it must not publish anything after that.
                m.program.signal("STOP")?;
                tokio::time::sleep(Duration::from_secs(6)).await;
                m.program.signal("CONT")?;
                let code = m.program.exit_code(Duration::from_secs(60)).await?;
                ensure!(
                    code == Some(scylla_cdc_kafka::EXIT_KAFKA_REFUSED.into()),
                    "member {} woke from a pause longer than its lease and exited with \
                     {code:?}, not as fenced: {}",
                    m.id,
                    m.program.log()
                );
                paused_ids.push(m.id.clone());
            }
        }
        members[slot] = spawn(slot)?;
    }
    let written = writer.await??;
    let topic = format!("grp.{ks}.t");
    let check = match consume_all(&broker.bootstrap, &topic, written.changes.len()).await {
        Ok(c) => c,
        Err(e) => anyhow::bail!("{e:#}\nthe members' log:\n{}", members[0].program.log()),
    };
    for m in &mut members {
        let code = m.program.stop(Duration::from_secs(60)).await?;
        ensure!(code == Some(0), "member {} exited with {code:?}", m.id);
    }
    let text = std::fs::read_to_string(&log).context("reading the members' log")?;
    check_published(test, &written, rounds, &check, true, &tail(&text))?;
    // Every paused member was fenced by one that took its units over.
    for id in &paused_ids {
        let fenced = text
            .lines()
            .any(|l| l.contains("fenced a member") && l.contains(&format!("member={id}")));
        ensure!(fenced, "nobody fenced {id}:\n{}", tail(&text));
    }
    Ok(())
}

/// The last 6000 characters of a log.
fn tail(text: &str) -> String {
    let start = text.len().saturating_sub(6000);
    let start = (start..text.len())
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(text.len());
    text[start..].to_owned()
}
