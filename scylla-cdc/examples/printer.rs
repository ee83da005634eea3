//! Prints every change of a table's CDC log until Ctrl-C.
//!
//! ```text
//! cargo run -p scylla-cdc --example printer -- 127.0.0.1:9042 my_keyspace my_table
//! ```

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use scylla::client::session_builder::SessionBuilder;
use scylla_cdc::{CDCLogReaderBuilder, CDCRow, Consumer, ConsumerFactory};

/// Prints the rows of one stream group.
struct Printer;

#[async_trait]
impl Consumer for Printer {
    async fn consume_cdc(&mut self, row: CDCRow<'_>) -> anyhow::Result<()> {
        let mut line = format!(
            "{} stream={} seq={} op={}",
            row.timestamp().to_rfc3339(),
            row.stream_id,
            row.batch_seq_no,
            row.operation
        );
        if let Some(ttl) = row.ttl {
            line.push_str(&format!(" ttl={ttl}"));
        }
        let names: Vec<String> = row.get_non_cdc_column_names().map(str::to_owned).collect();
        for name in names {
            if let Some(value) = row.get_value(&name)? {
                line.push_str(&format!(" {name}={value:?}"));
            }
            if row.is_value_deleted(&name) {
                line.push_str(&format!(" {name}=<deleted>"));
            }
            if row.collection_exists(&name)
                && let Some(removed) = row.get_deleted_elements(&name)?
            {
                line.push_str(&format!(" {name}-={removed:?}"));
            }
        }
        println!("{line}");
        Ok(())
    }
}

/// Makes a [`Printer`] per stream group.
struct PrinterFactory;

#[async_trait]
impl ConsumerFactory for PrinterFactory {
    async fn new_consumer(&self) -> Box<dyn Consumer> {
        Box::new(Printer)
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [node, keyspace, table] = args.as_slice() else {
        anyhow::bail!("usage: printer <host:port> <keyspace> <table>");
    };
    let session = Arc::new(SessionBuilder::new().known_node(node).build().await?);
    let (mut reader, handle) = CDCLogReaderBuilder::new()
        .session(session)
        .keyspace(keyspace)
        .table_name(table)
        .consumer_factory(Arc::new(PrinterFactory))
        .start_timestamp(chrono::Utc::now() - chrono::TimeDelta::minutes(10))
        .window_size(Duration::from_secs(10))
        .safety_interval(Duration::from_secs(5))
        .sleep_interval(Duration::from_secs(1))
        .build()
        .await?;
    tokio::select! {
        result = handle => result?,
        _ = tokio::signal::ctrl_c() => reader.stop(),
    }
    Ok(())
}
