//! Prints every change to table `ks.t` (columns `pk`, `v`), from now on, until Ctrl-C.
use std::sync::Arc;

use async_trait::async_trait;
use scylla::client::session_builder::SessionBuilder;
use scylla_cdc::{CDCLogReaderBuilder, CDCRow, Consumer, ConsumerFactory};

struct Printer;

#[async_trait]
impl Consumer for Printer {
    async fn consume_cdc(&mut self, row: CDCRow<'_>) -> anyhow::Result<()> {
        let pk: Option<i32> = row.get_value_as("pk")?;
        let v = row.get_value("v")?;
        println!("{} {} pk={pk:?} v={v:?}", row.timestamp(), row.operation);
        Ok(())
    }
}

struct PrinterFactory;

#[async_trait]
impl ConsumerFactory for PrinterFactory {
    async fn new_consumer(&self) -> Box<dyn Consumer> {
        Box::new(Printer) // one per stream group; groups are read in parallel
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let session = SessionBuilder::new()
        .known_node("127.0.0.1:9042")
        .build()
        .await?;
    let (mut reader, handle) = CDCLogReaderBuilder::new()
        .session(Arc::new(session))
        .keyspace("ks")
        .table_name("t")
        .consumer_factory(Arc::new(PrinterFactory))
        .build()
        .await?;
    tokio::select! {
        result = handle => result?, // the first error of any stream group
        _ = tokio::signal::ctrl_c() => reader.stop(),
    }
    Ok(())
}
