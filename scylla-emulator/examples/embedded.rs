//! An embedded 3-node cluster, driven through the `scylla` driver and the control API.
use scylla_emulator::{EmbeddedCluster, FaultError, FaultOpcode, FaultRule};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cluster = EmbeddedCluster::builder().nodes(3).start().await?; // its own 127.x.y.0/24
    let session = cluster.session().await?; // a connected `scylla` driver session
    session
        .query_unpaged(
            "CREATE KEYSPACE ks WITH replication = \
             {'class': 'NetworkTopologyStrategy', 'replication_factor': 3}",
            (),
        )
        .await?;
    session
        .query_unpaged(
            "CREATE TABLE ks.t (pk int PRIMARY KEY, v text) WITH cdc = {'enabled': true}",
            (),
        )
        .await?;
    session
        .query_unpaged("INSERT INTO ks.t (pk, v) VALUES (1, 'one')", ())
        .await?;

    cluster.stop_node(2).await?; // the driver sees node 2 go down
    cluster.start_node(2).await?;
    let switch = cluster.add_node().await?; // a 4th node: a new CDC generation
    println!("new CDC generation from {switch}");
    // The next two QUERY requests to node 1 fail with a read timeout.
    let rule = FaultRule::new()
        .on_node(1)
        .on_opcode(FaultOpcode::Query)
        .error(FaultError::ReadTimeout)
        .times(2);
    cluster.add_fault(rule);
    cluster.shutdown().await;
    Ok(())
}
