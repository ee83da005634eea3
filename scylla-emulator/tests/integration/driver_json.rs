//! JSON in CQL through the `scylla` driver: `INSERT JSON` logs in CDC exactly what the
//! equivalent INSERT logs (with `DEFAULT UNSET`, omitted columns are not written), prepared
//! `INSERT JSON ?` and `SELECT JSON`, `toJson`/`fromJson`, and the errors the driver sees.
//!
//! Every test runs against the embedded cluster, or against the real cluster of `SCYLLA_URI`
//! when it is set (each in a keyspace of its own, dropped at the end).

use std::collections::BTreeMap;

use scylla::client::session::Session;
use scylla::errors::DbError;
use scylla::value::{CqlValue, Row};
use scylla_emulator::EmbeddedCluster;

use crate::support::{cluster_and_keyspace, db_error, rows, run};

/// The single text column of every row.
async fn texts(session: &Session, cql: &str) -> Vec<String> {
    rows(session, cql)
        .await
        .into_iter()
        .map(|r| match &r.columns[..] {
            [Some(CqlValue::Text(s))] => s.clone(),
            other => panic!("{cql}: not one text: {other:?}"),
        })
        .collect()
}

/// A log row as the test compares it: operation, TTL, the base columns and the deletion
/// markers, with a logged list reduced to its values (its keys are timeuuids of the write).
fn log_row(r: &Row) -> Vec<Option<CqlValue>> {
    r.columns
        .iter()
        .map(|c| match c {
            Some(CqlValue::Map(entries)) => Some(CqlValue::List(
                entries.iter().map(|(_, v)| v.clone()).collect(),
            )),
            other => other.clone(),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insert_json_logs_what_the_equivalent_insert_logs() {
    let (cluster, session, ks) = cluster_and_keyspace(EmbeddedCluster::builder().nodes(1)).await;
    run(
        &session,
        &format!(
            "CREATE TABLE {ks}.t (pk int, ck int, v int, w text, l list<int>, \
             PRIMARY KEY (pk, ck)) WITH cdc = {{'enabled': true}}"
        ),
    )
    .await;
    // (INSERT JSON, the INSERT that writes the same) into partitions 2i and 2i + 1.
    let pairs = [
        (
            "INSERT INTO {t} JSON '{\"pk\": {p}, \"ck\": 1, \"v\": 5}' DEFAULT UNSET",
            "INSERT INTO {t} (pk, ck, v) VALUES ({p}, 1, 5)",
        ),
        (
            "INSERT INTO {t} JSON '{\"pk\": {p}, \"ck\": 1, \"v\": 5}'",
            "INSERT INTO {t} (pk, ck, v, w, l) VALUES ({p}, 1, 5, null, null)",
        ),
        (
            "INSERT INTO {t} JSON '{\"pk\": {p}, \"ck\": 1, \"l\": [1, 2], \"w\": \"x\"}' \
             DEFAULT NULL USING TTL 100",
            "INSERT INTO {t} (pk, ck, v, w, l) VALUES ({p}, 1, null, 'x', [1, 2]) USING TTL 100",
        ),
        (
            "INSERT INTO {t} JSON '{\"pk\": {p}, \"ck\": 1, \"w\": null}' DEFAULT UNSET",
            "INSERT INTO {t} (pk, ck, w) VALUES ({p}, 1, null)",
        ),
    ];
    let t = format!("{ks}.t");
    for (i, (json, insert)) in pairs.iter().enumerate() {
        let fill = |s: &str, p: usize| s.replace("{t}", &t).replace("{p}", &p.to_string());
        run(&session, &fill(json, 2 * i)).await;
        run(&session, &fill(insert, 2 * i + 1)).await;
    }
    let log = rows(
        &session,
        &format!(
            "SELECT pk, \"cdc$operation\", \"cdc$ttl\", ck, v, w, l, \"cdc$deleted_v\", \
             \"cdc$deleted_w\", \"cdc$deleted_l\", \"cdc$deleted_elements_l\" \
             FROM {ks}.t_scylla_cdc_log"
        ),
    )
    .await;
    let mut by_pk: BTreeMap<i32, Vec<Vec<Option<CqlValue>>>> = BTreeMap::new();
    for r in &log {
        let Some(CqlValue::Int(pk)) = r.columns[0] else {
            panic!("log row without pk: {r:?}")
        };
        by_pk.entry(pk).or_default().push(log_row(r)[1..].to_vec());
    }
    assert_eq!(
        by_pk.len(),
        2 * pairs.len(),
        "one log partition per write: {by_pk:?}"
    );
    for i in 0..pairs.len() as i32 {
        assert_eq!(
            by_pk[&(2 * i)],
            by_pk[&(2 * i + 1)],
            "INSERT JSON {} logs what its INSERT logs",
            pairs[i as usize].0
        );
    }
    // Columns: operation, ttl, ck, v, w, l, deleted_v, deleted_w, deleted_l, elements_l.
    let insert = Some(CqlValue::TinyInt(2));
    let yes = Some(CqlValue::Boolean(true));
    assert_eq!(
        by_pk[&0],
        vec![vec![
            insert.clone(),
            None,
            Some(CqlValue::Int(1)),
            Some(CqlValue::Int(5)),
            None,
            None,
            None,
            None,
            None,
            None
        ]],
        "DEFAULT UNSET: w and l are not written"
    );
    assert_eq!(
        by_pk[&2],
        vec![vec![
            insert.clone(),
            None,
            Some(CqlValue::Int(1)),
            Some(CqlValue::Int(5)),
            None,
            None,
            None,
            yes.clone(),
            yes.clone(),
            None
        ]],
        "DEFAULT NULL: w and l are deleted"
    );
    assert_eq!(
        by_pk[&6],
        vec![vec![
            insert,
            None,
            Some(CqlValue::Int(1)),
            None,
            None,
            None,
            None,
            yes,
            None,
            None
        ]],
        "DEFAULT UNSET with an explicit null: only w is deleted"
    );
    run(&session, &format!("DROP KEYSPACE {ks}")).await;
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_statements_through_the_driver() {
    let (cluster, session, ks) = cluster_and_keyspace(EmbeddedCluster::builder().nodes(1)).await;
    run(
        &session,
        &format!(
            "CREATE TABLE {ks}.j (pk int, ck text, d decimal, f double, ts timestamp, \
             m map<int, text>, \"Caps\" int, PRIMARY KEY (pk, ck))"
        ),
    )
    .await;
    // A prepared INSERT JSON: its one marker is text, received by an anonymous placeholder.
    let insert = session
        .prepare(format!("INSERT INTO {ks}.j JSON ?"))
        .await
        .expect("prepare INSERT JSON ?");
    let specs = insert.get_variable_col_specs();
    let spec = specs.get_by_index(0).expect("one marker");
    assert_eq!(spec.name(), "");
    assert_eq!(spec.table_spec().ks_name(), "");
    session
        .execute_unpaged(
            &insert,
            ("{\"pk\": 1, \"ck\": \"a\", \"d\": \"1.50\", \"f\": 17, \
              \"ts\": \"2024-01-02 03:04:05.006Z\", \"m\": {\"2\": \"b\", \"1\": \"a\"}, \
              \"\\\"Caps\\\"\": 3}",),
        )
        .await
        .expect("INSERT JSON executes");
    assert_eq!(
        texts(&session, &format!("SELECT JSON * FROM {ks}.j")).await,
        [
            "{\"pk\": 1, \"ck\": \"a\", \"\\\"Caps\\\"\": 3, \"d\": 1.5, \"f\": 17, \
          \"m\": {\"1\": \"a\", \"2\": \"b\"}, \"ts\": \"2024-01-02 03:04:05.006Z\"}"
        ]
    );
    let select = session
        .prepare(format!(
            "SELECT JSON ck AS \"Key\", toJson(m) FROM {ks}.j WHERE pk = ?"
        ))
        .await
        .expect("prepare SELECT JSON");
    let r = session
        .execute_unpaged(&select, (1,))
        .await
        .expect("SELECT JSON executes")
        .into_rows_result()
        .expect("rows");
    let specs: Vec<&str> = r.column_specs().iter().map(|c| c.name()).collect();
    assert_eq!(specs, ["[json]"]);
    let (json,): (String,) = r.single_row().expect("one row");
    assert_eq!(
        json,
        "{\"\\\"Key\\\"\": \"a\", \"system.tojson(m)\": \"{\\\"1\\\": \\\"a\\\", \\\"2\\\": \\\"b\\\"}\"}"
    );
    // fromJson with a bound document.
    let from = session
        .prepare(format!(
            "UPDATE {ks}.j SET d = fromJson(?) WHERE pk = 1 AND ck = 'a'"
        ))
        .await
        .expect("prepare fromJson(?)");
    assert_eq!(
        from.get_variable_col_specs()
            .get_by_index(0)
            .map(|c| c.name()),
        Some("arg0(system.fromjson)")
    );
    session
        .execute_unpaged(&from, ("\"2.25\"",))
        .await
        .expect("fromJson executes");
    assert_eq!(
        texts(&session, &format!("SELECT toJson(d) FROM {ks}.j")).await,
        ["2.25"]
    );
    // The errors the driver sees, of the kinds ScyllaDB answers.
    let (e, _) = db_error(&session, &format!("INSERT INTO {ks}.j JSON 'not json'")).await;
    assert_eq!(e, DbError::ServerError);
    let (e, _) = db_error(
        &session,
        &format!("INSERT INTO {ks}.j JSON '{{\"pk\": 1, \"ck\": \"a\", \"nosuch\": 1}}'"),
    )
    .await;
    assert_eq!(e, DbError::Invalid);
    let (e, _) = db_error(
        &session,
        &format!("UPDATE {ks}.j SET f = fromJson('\"x\"') WHERE pk = 1 AND ck = 'a'"),
    )
    .await;
    assert!(
        matches!(e, DbError::FunctionFailure { ref function, .. } if function == "fromjson"),
        "{e:?}"
    );
    run(&session, &format!("DROP KEYSPACE {ks}")).await;
    cluster.shutdown().await;
}
