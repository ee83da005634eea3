//! Records every change to `shop.orders` in `shop.order_history`, resuming where it stopped
//! after a restart. Usage: `order-history [host:port]` (default `127.0.0.1:9042`).

mod history;

use std::sync::Arc;

use scylla::client::session_builder::SessionBuilder;
use scylla_cdc::{CDCLogReaderBuilder, TableBackedCheckpointSaver};

use history::{HistoryWriterFactory, create_history_table};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let node = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:9042".to_string());
    let session = Arc::new(SessionBuilder::new().known_node(node).build().await?);
    create_history_table(&session).await?;

    let saver = TableBackedCheckpointSaver::new(
        session.clone(),
        "shop",
        "order_history_checkpoints",
        "shop",
        "orders",
    )
    .await?;
    let (mut reader, handle) = CDCLogReaderBuilder::new()
        .session(session.clone())
        .keyspace("shop")
        .table_name("orders")
        .consumer_factory(Arc::new(HistoryWriterFactory::new(session.clone()).await?))
        .checkpoint_saver(Arc::new(saver))
        .build()
        .await?;
    println!("recording the changes of shop.orders; Ctrl-C to stop");

    tokio::select! {
        result = handle => result?,
        _ = tokio::signal::ctrl_c() => {
            reader.stop();
            println!("stopped");
        }
    }
    Ok(())
}
