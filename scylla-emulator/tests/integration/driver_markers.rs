//! What the `scylla` driver sees of bind markers and literals that Scylla types in its own way:
//! the `SCYLLA_TIMEUUID_LIST_INDEX(?)` marker is a `uuid` named `uuid_idx(l)` (so a
//! `CqlTimeuuid` cannot be bound there, a `Uuid` can), collection elements are `idx(l)`,
//! `key(m)`, `value(x)`, and a tuple literal fills a user type positionally.
//!
//! Every test runs against the embedded cluster, or against the real cluster of `SCYLLA_URI`
//! when it is set (each in a keyspace of its own, dropped at the end).

use scylla::client::session::Session;
use scylla::cluster::metadata::{ColumnType, NativeType};
use scylla::statement::prepared::PreparedStatement;
use scylla::value::{CqlTimeuuid, CqlValue};
use scylla_emulator::EmbeddedCluster;
use uuid::Uuid;

use crate::support::{cluster_and_keyspace, rows_result, run};

/// The (name, type) of each bind marker of a prepared statement.
fn markers(prepared: &PreparedStatement) -> Vec<(String, ColumnType<'static>)> {
    prepared
        .get_variable_col_specs()
        .iter()
        .map(|c| (c.name().to_string(), c.typ().clone().into_owned()))
        .collect()
}

/// A native type.
fn native(t: NativeType) -> ColumnType<'static> {
    ColumnType::Native(t)
}

/// The single row of a query, as `CqlValue`s.
async fn row(session: &Session, cql: &str) -> Vec<Option<CqlValue>> {
    rows_result(session, cql)
        .await
        .single_row::<scylla::value::Row>()
        .expect("one row")
        .columns
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeuuid_list_index_is_bound_as_a_uuid() {
    let (cluster, session, ks) = cluster_and_keyspace(EmbeddedCluster::builder()).await;
    run(
        &session,
        &format!(
            "CREATE TABLE {ks}.t (pk int PRIMARY KEY, l list<text>, m map<int, text>, s set<int>)"
        ),
    )
    .await;

    let set_by_key = session
        .prepare(format!(
            "UPDATE {ks}.t SET l[SCYLLA_TIMEUUID_LIST_INDEX(?)] = ? WHERE pk = ?"
        ))
        .await
        .expect("prepare");
    assert_eq!(
        markers(&set_by_key),
        [
            ("uuid_idx(l)".to_string(), native(NativeType::Uuid)),
            ("value(l)".to_string(), native(NativeType::Text)),
            ("pk".to_string(), native(NativeType::Int)),
        ]
    );
    // Two keys: version-1 uuids whose times order the list.
    let early = Uuid::parse_str("00000001-0000-1000-8000-000000000001").unwrap();
    let late = Uuid::parse_str("00000002-0000-1000-8000-000000000001").unwrap();
    // The driver refuses a timeuuid value for the uuid marker, as it does against Scylla.
    let refused = session
        .execute_unpaged(&set_by_key, (CqlTimeuuid::from(early), "x", 1))
        .await;
    assert!(refused.is_err(), "a CqlTimeuuid was bound to a uuid marker");
    for (key, value) in [(late, "second"), (early, "first")] {
        session
            .execute_unpaged(&set_by_key, (key, value, 1))
            .await
            .expect("a Uuid binds");
    }
    assert_eq!(
        row(&session, &format!("SELECT l FROM {ks}.t WHERE pk = 1")).await,
        [Some(CqlValue::List(vec![
            CqlValue::Text("first".into()),
            CqlValue::Text("second".into()),
        ]))]
    );

    let by_position = session
        .prepare(format!("UPDATE {ks}.t SET l[?] = ?, m[?] = ? WHERE pk = ?"))
        .await
        .expect("prepare");
    assert_eq!(
        markers(&by_position),
        [
            ("idx(l)".to_string(), native(NativeType::Int)),
            ("value(l)".to_string(), native(NativeType::Text)),
            ("key(m)".to_string(), native(NativeType::Int)),
            ("value(m)".to_string(), native(NativeType::Text)),
            ("pk".to_string(), native(NativeType::Int)),
        ]
    );
    let deletion = session
        .prepare(format!("DELETE l[?], m[?], s[?] FROM {ks}.t WHERE pk = ?"))
        .await
        .expect("prepare");
    assert_eq!(
        markers(&deletion)
            .into_iter()
            .map(|(n, _)| n)
            .collect::<Vec<_>>(),
        ["idx(l)", "key(m)", "value(s)", "pk"]
    );
    run(&session, &format!("DROP KEYSPACE {ks}")).await;
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tuple_literals_fill_user_types() {
    let (cluster, session, ks) = cluster_and_keyspace(EmbeddedCluster::builder()).await;
    run(&session, &format!("CREATE TYPE {ks}.ut (a int, b text)")).await;
    run(
        &session,
        &format!(
            "CREATE TABLE {ks}.t (pk int PRIMARY KEY, fu frozen<ut>, nu ut, \
             lu list<frozen<ut>>, mu map<int, frozen<ut>>)"
        ),
    )
    .await;
    run(
        &session,
        &format!(
            "INSERT INTO {ks}.t (pk, fu, nu, lu, mu) \
             VALUES (1, (1, 'x'), (2, 'y'), [(3, 'z')], {{4: (4, 'w')}})"
        ),
    )
    .await;
    let udt = |a: i32, b: &str| CqlValue::UserDefinedType {
        keyspace: ks.clone(),
        name: "ut".into(),
        fields: vec![
            ("a".into(), Some(CqlValue::Int(a))),
            ("b".into(), Some(CqlValue::Text(b.into()))),
        ],
    };
    assert_eq!(
        row(
            &session,
            &format!("SELECT fu, nu, lu, mu FROM {ks}.t WHERE pk = 1")
        )
        .await,
        [
            Some(udt(1, "x")),
            Some(udt(2, "y")),
            Some(CqlValue::List(vec![udt(3, "z")])),
            Some(CqlValue::Map(vec![(CqlValue::Int(4), udt(4, "w"))])),
        ]
    );
    // Markers inside such a literal are the components of the UDT, named `fu[i]`.
    let prepared = session
        .prepare(format!("UPDATE {ks}.t SET fu = (?, ?) WHERE pk = ?"))
        .await
        .expect("prepare");
    assert_eq!(
        markers(&prepared),
        [
            ("fu[0]".to_string(), native(NativeType::Int)),
            ("fu[1]".to_string(), native(NativeType::Text)),
            ("pk".to_string(), native(NativeType::Int)),
        ]
    );
    session
        .execute_unpaged(&prepared, (5, "v", 1))
        .await
        .expect("execute");
    assert_eq!(
        row(&session, &format!("SELECT fu FROM {ks}.t WHERE pk = 1")).await,
        [Some(udt(5, "v"))]
    );
    run(&session, &format!("DROP KEYSPACE {ks}")).await;
    cluster.shutdown().await;
}
