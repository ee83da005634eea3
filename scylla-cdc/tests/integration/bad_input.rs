//! Misconfiguration and missing tables are typed errors of `build()`.
//!
//! Runs against the embedded cluster, or against the real Scylla of `SCYLLA_URI` when it is
//! set.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use scylla_cdc::{CDCError, CDCLogReaderBuilder};
use scylla_emulator::EmbeddedCluster;

use crate::support::{Collected, cluster_and_keyspace, drop_keyspace, exec};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn build_reports_typed_errors() -> anyhow::Result<()> {
    let (cluster, session, ks) = cluster_and_keyspace(EmbeddedCluster::builder()).await?;
    exec(
        &session,
        format!("CREATE TABLE {ks}.plain (pk int PRIMARY KEY, v int)"),
    )
    .await?;
    exec(
        &session,
        format!("CREATE TABLE {ks}.t (pk int PRIMARY KEY, v int) WITH cdc = {{'enabled': true}}"),
    )
    .await?;
    let base = || {
        CDCLogReaderBuilder::new()
            .session(session.clone())
            .consumer_factory(Arc::new(Collected::default()))
    };

    // A name no other test uses: a real cluster is shared.
    let missing = format!("{ks}_missing");
    let err = base()
        .keyspace(&missing)
        .table_name("t")
        .build()
        .await
        .err()
        .unwrap();
    assert!(
        matches!(err, CDCError::KeyspaceNotFound(ref k) if *k == missing),
        "{err}"
    );

    let err = base()
        .keyspace(&ks)
        .table_name("nope")
        .build()
        .await
        .err()
        .unwrap();
    assert!(matches!(err, CDCError::TableNotFound { .. }), "{err}");

    let err = base()
        .keyspace(&ks)
        .table_name("plain")
        .build()
        .await
        .err()
        .unwrap();
    assert!(matches!(err, CDCError::CdcNotEnabled { .. }), "{err}");

    let err = base()
        .keyspace(&ks)
        .table_name("t")
        .window_size(Duration::ZERO)
        .build()
        .await
        .err()
        .unwrap();
    assert!(matches!(err, CDCError::InvalidConfig(_)), "{err}");

    let now = Utc::now();
    let err = base()
        .keyspace(&ks)
        .table_name("t")
        .start_timestamp(now)
        .end_timestamp(now - chrono::TimeDelta::seconds(1))
        .build()
        .await
        .err()
        .unwrap();
    assert!(matches!(err, CDCError::InvalidConfig(_)), "{err}");

    let err = CDCLogReaderBuilder::new()
        .session(session.clone())
        .keyspace(&ks)
        .table_name("t")
        .build()
        .await
        .err()
        .unwrap();
    assert!(
        matches!(err, CDCError::MissingOption("consumer_factory")),
        "{err}"
    );

    // A reader of the right table starts and stops cleanly.
    let (mut reader, handle) = base().keyspace(&ks).table_name("t").build().await?;
    reader.stop();
    handle.await?;
    drop_keyspace(&session, &ks).await?;
    cluster.shutdown().await;
    Ok(())
}
