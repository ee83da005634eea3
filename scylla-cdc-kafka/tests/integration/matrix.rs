//! The change matrix through Kafka (exploration scaffold).

use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use scylla_cdc_test_utils::{TestCluster, setup_tracing, unique_keyspace_name};
use scylla_emulator::EmbeddedCluster;

use crate::support::*;

fn schema(ks: &str) -> Vec<String> {
    vec![
        format!(
            "CREATE KEYSPACE {ks} WITH replication = \
             {{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}}"
        ),
        format!("CREATE TYPE {ks}.addr (street text, zip int)"),
        format!(
            "CREATE TABLE {ks}.m (pk int, ck int, st text static, \
             c_ascii ascii, c_bigint bigint, c_blob blob, c_boolean boolean, c_date date, \
             c_decimal decimal, c_double double, c_duration duration, c_float float, \
             c_inet inet, c_int int, c_smallint smallint, c_text text, c_time time, \
             c_timestamp timestamp, c_timeuuid timeuuid, c_tinyint tinyint, c_uuid uuid, \
             c_varint varint, c_list list<int>, c_set set<text>, c_map map<int, text>, \
             c_flist frozen<list<int>>, c_tuple tuple<int, text>, c_udt addr, \
             c_fudt frozen<addr>, PRIMARY KEY (pk, ck)) \
             WITH cdc = {{'enabled': true, 'preimage': true, 'postimage': true}}"
        ),
        format!(
            "CREATE TABLE {ks}.nock (pk int PRIMARY KEY, v text) \
             WITH cdc = {{'enabled': true, 'preimage': true, 'postimage': true}}"
        ),
    ]
}

fn statements(ks: &str) -> Vec<String> {
    let m = format!("{ks}.m");
    let mut s = vec![
        // 1: an insert of every column but the static one.
        format!(
            "INSERT INTO {m} (pk, ck, c_ascii, c_bigint, c_blob, c_boolean, c_date, c_decimal, \
             c_double, c_duration, c_float, c_inet, c_int, c_smallint, c_text, c_time, \
             c_timestamp, c_timeuuid, c_tinyint, c_uuid, c_varint, c_list, c_set, c_map, \
             c_flist, c_tuple, c_udt, c_fudt) VALUES (1, 1, 'ascii', 9223372036854775807, \
             0xcafe, true, '2024-05-01', 12.345, 1.5, 1h30m, 2.25, '::1', -7, 300, \
             'h\u{e9}llo ''quoted'' \u{1F600}', '12:34:56.789', '2024-05-01T12:00:00.123Z', \
             50554d6e-29bb-11e5-b345-feff819cdc9f, 7, 123e4567-e89b-12d3-a456-426614174000, \
             123456789012345678901234567890, [1, 2, 3], {{'a', 'b'}}, {{1: 'one', 2: 'two'}}, \
             [4, 5], (1, 'tuple'), {{street: 'Main', zip: 12345}}, \
             {{street: 'Frozen', zip: 1}})"
        ),
        // 2: an insert with a TTL.
        format!("INSERT INTO {m} (pk, ck, c_int, c_text) VALUES (2, 1, 2, 'ttl') USING TTL 3600"),
        // 3: an update of a row that does not exist.
        format!("UPDATE {m} SET c_int = 5 WHERE pk = 3 AND ck = 1"),
    ];
    // 4: collections, one change each on its own row of a batch-inserted partition.
    let mut batch = String::from("BEGIN UNLOGGED BATCH ");
    for ck in 1..=9 {
        batch.push_str(&format!(
            "INSERT INTO {m} (pk, ck, c_list, c_set, c_map, c_udt) VALUES (4, {ck}, [1, 2], \
             {{'a', 'b'}}, {{1: 'one', 2: 'two'}}, {{street: 'S', zip: 1}}); "
        ));
    }
    batch.push_str("APPLY BATCH");
    s.push(batch);
    s.extend([
        format!("UPDATE {m} SET c_list = c_list + [3] WHERE pk = 4 AND ck = 1"),
        format!("UPDATE {m} SET c_list = [0] + c_list WHERE pk = 4 AND ck = 2"),
        format!("UPDATE {m} SET c_set = c_set - {{'a'}} WHERE pk = 4 AND ck = 3"),
        format!("UPDATE {m} SET c_map[3] = 'three' WHERE pk = 4 AND ck = 4"),
        format!("DELETE c_map[1] FROM {m} WHERE pk = 4 AND ck = 5"),
        format!("UPDATE {m} SET c_list = [9] WHERE pk = 4 AND ck = 6"),
        format!("UPDATE {m} SET c_udt.zip = 2 WHERE pk = 4 AND ck = 7"),
        format!("UPDATE {m} SET c_udt = {{street: 'New', zip: 3}} WHERE pk = 4 AND ck = 8"),
        format!("DELETE c_list[0] FROM {m} WHERE pk = 4 AND ck = 9"),
    ]);
    // 5: frozen values replaced, a column deleted, a column set to null.
    s.extend([
        format!(
            "BEGIN UNLOGGED BATCH \
             INSERT INTO {m} (pk, ck, c_flist, c_fudt, c_tuple, c_int, c_text) \
             VALUES (5, 1, [1], {{street: 'F', zip: 1}}, (1, 'a'), 1, 'x'); \
             INSERT INTO {m} (pk, ck, c_int, c_text) VALUES (5, 2, 1, 'x'); \
             INSERT INTO {m} (pk, ck, c_int, c_text) VALUES (5, 3, 1, 'x'); APPLY BATCH"
        ),
        format!(
            "UPDATE {m} SET c_flist = [7, 8], c_fudt = {{street: 'F2', zip: 2}}, \
             c_tuple = (2, 'b') WHERE pk = 5 AND ck = 1"
        ),
        format!("DELETE c_text FROM {m} WHERE pk = 5 AND ck = 2"),
        format!("UPDATE {m} SET c_int = null WHERE pk = 5 AND ck = 3"),
        // 6: a row deletion.
        format!("INSERT INTO {m} (pk, ck, c_int) VALUES (6, 1, 6)"),
        format!("DELETE FROM {m} WHERE pk = 6 AND ck = 1"),
        // 7: a partition deletion.
        format!("INSERT INTO {m} (pk, ck, c_int) VALUES (7, 1, 7)"),
        format!("DELETE FROM {m} WHERE pk = 7"),
        // 8, 9: range deletions, bounded and open.
        format!("DELETE FROM {m} WHERE pk = 8 AND ck > 1 AND ck <= 5"),
        format!("DELETE FROM {m} WHERE pk = 9 AND ck >= 3"),
        // 10: the static row, set then deleted.
        format!("UPDATE {m} SET st = 'static' WHERE pk = 10"),
        format!("DELETE st FROM {m} WHERE pk = 10"),
        // 11: the static row and a clustering row in one statement.
        format!("INSERT INTO {m} (pk, ck, st, c_int) VALUES (11, 1, 's11', 11)"),
        // 12: a batch of an insert and an update.
        format!(
            "BEGIN BATCH INSERT INTO {m} (pk, ck, c_int) VALUES (12, 1, 1); \
             UPDATE {m} SET c_text = 'b' WHERE pk = 12 AND ck = 2; APPLY BATCH"
        ),
        // 13: lightweight transactions: insert, update, delete.
        format!("INSERT INTO {m} (pk, ck, c_int) VALUES (13, 1, 13) IF NOT EXISTS"),
        format!("UPDATE {m} SET c_int = 14 WHERE pk = 13 AND ck = 1 IF c_int = 13"),
        format!("DELETE FROM {m} WHERE pk = 13 AND ck = 1 IF EXISTS"),
        // 14: an update with a TTL.
        format!("UPDATE {m} USING TTL 600 SET c_int = 1 WHERE pk = 14 AND ck = 1"),
        // 15: an insert over a live row.
        format!("INSERT INTO {m} (pk, ck, c_int) VALUES (15, 1, 1)"),
        format!("INSERT INTO {m} (pk, ck, c_text) VALUES (15, 1, 'again')"),
        // nock: a table without clustering key.
        format!("INSERT INTO {ks}.nock (pk, v) VALUES (1, 'a')"),
        format!("UPDATE {ks}.nock SET v = 'b' WHERE pk = 1"),
        format!("DELETE FROM {ks}.nock WHERE pk = 1"),
    ]);
    s
}

struct Run {
    prefix: &'static str,
    extra: &'static [&'static str],
}

const RUNS: [Run; 3] = [
    Run {
        prefix: "lg",
        extra: &[],
    },
    Run {
        prefix: "adv",
        extra: &["--format", "advanced", "--before", "full", "--after", "full"],
    },
    Run {
        prefix: "ns",
        extra: &[
            "--format",
            "advanced",
            "--before",
            "full",
            "--after",
            "full",
            "--no-schemas",
        ],
    },
];

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_change_kind_arrives_as_documented() -> anyhow::Result<()> {
    setup_tracing();
    let t0 = Instant::now();
    let Some(broker) = Broker::start("matrix::every_change_kind_arrives_as_documented", &[])? else {
        return Ok(());
    };
    eprintln!("broker: {:?}", t0.elapsed());
    let cluster = TestCluster::start(EmbeddedCluster::builder().nodes(1)).await?;
    let session = cluster.session().await?;
    let ks = unique_keyspace_name();
    for q in schema(&ks) {
        session.query_unpaged(q.as_str(), ()).await.with_context(|| q.clone())?;
    }
    let start = chrono::Utc::now();
    for q in statements(&ks) {
        session.query_unpaged(q.as_str(), ()).await.with_context(|| q.clone())?;
    }
    let end = chrono::Utc::now() + chrono::TimeDelta::milliseconds(500);
    eprintln!("written: {:?}", t0.elapsed());
    let hosts = cluster.contact_points().join(",");
    let dir = TempDir::new();
    let fmt = |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    let (start_s, end_s) = (fmt(start - chrono::TimeDelta::seconds(1)), fmt(end));
    let mut programs = Vec::new();
    for run in &RUNS {
        let mut extra = vec!["--start", &start_s, "--end", &end_s];
        extra.extend(run.extra);
        let args = program_args(&hosts, &ks, "m,nock", &broker, run.prefix, &extra);
        let log = dir.path().join(format!("{}.log", run.prefix));
        programs.push(Program::spawn(&args, &log)?);
    }
    for p in &mut programs {
        let code = p.exit_code(Duration::from_secs(120)).await?;
        ensure!(code == Some(0), "exit {code:?}: {}", p.log());
    }
    eprintln!("published: {:?}", t0.elapsed());
    let out = std::path::PathBuf::from("/tmp/matrix-dump");
    std::fs::create_dir_all(&out)?;
    let topics: Vec<String> = RUNS
        .iter()
        .flat_map(|r| [format!("{}.{ks}.m", r.prefix), format!("{}.{ks}.nock", r.prefix)])
        .collect();
    let topics: Vec<&str> = topics.iter().map(String::as_str).collect();
    let consumed = kafka_check("consume", &broker.bootstrap, &topics, Until::Idle(Duration::from_secs(2)), &[])?;
    std::fs::write(out.join("consume.json"), consumed.iter().map(|v| v.to_string() + "\n").collect::<String>())?;
    eprintln!("consumed {}: {:?}", consumed.len(), t0.elapsed());
    let schemas_topics: Vec<&str> = topics.iter().copied().filter(|t| !t.starts_with("ns.")).collect();
    let connect = kafka_check("connect", &broker.bootstrap, &schemas_topics, Until::Idle(Duration::from_secs(2)), &["--schemas", "true"])?;
    std::fs::write(out.join("connect.json"), connect.iter().map(|v| v.to_string() + "\n").collect::<String>())?;
    let ns_topics: Vec<&str> = topics.iter().copied().filter(|t| t.starts_with("ns.")).collect();
    let connect_ns = kafka_check("connect", &broker.bootstrap, &ns_topics, Until::Idle(Duration::from_secs(2)), &["--schemas", "false"])?;
    std::fs::write(out.join("connect_ns.json"), connect_ns.iter().map(|v| v.to_string() + "\n").collect::<String>())?;
    let flatten = kafka_check("flatten", &broker.bootstrap, &schemas_topics, Until::Idle(Duration::from_secs(2)), &["--transform-config", "delete.tombstone.handling.mode=rewrite", "--transform-config", "add.fields=op"]);
    match flatten {
        Ok(f) => std::fs::write(out.join("flatten.json"), f.iter().map(|v| v.to_string() + "\n").collect::<String>())?,
        Err(e) => std::fs::write(out.join("flatten.err"), format!("{e:#}"))?,
    }
    eprintln!("checked: {:?}", t0.elapsed());
    Ok(())
}
