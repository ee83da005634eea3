//! Several tables of one keyspace, read by one reader.
//!
//! `CDCLogReaderBuilder::tables` reads the CDC logs of several tables with one session and
//! one task: in a vnode keyspace the tables share their generations and streams, so one poll
//! looks for new ones for all of them. Each table keeps its own stream groups, consumers and
//! checkpoints; the factory is told which table a consumer is for
//! (`ConsumerFactory::new_consumer_for_table`), and every row says so too (`CDCRow::table`).
//!
//! The tables it reads by default:
//!
//! ```text
//! CREATE TABLE shop.orders (id int PRIMARY KEY, customer_id int, total_cents bigint)
//!     WITH cdc = {'enabled': true};
//! CREATE TABLE shop.customers (id int PRIMARY KEY, name text)
//!     WITH cdc = {'enabled': true};
//! ```
//!
//! Run it, then write to the tables: it prints each log row, with its table, from the moment
//! it started, until Ctrl-C or `--rows N`:
//!
//! ```text
//! cargo run -p scylla-cdc --example several_tables -- --tables orders,customers
//! ```
//!
//! A project of its own needs `scylla-cdc`, `scylla`, `tokio` (`full`), `async-trait`,
//! `anyhow` and `clap` (`derive`, `env`).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use clap::Parser;
use scylla::client::session_builder::SessionBuilder;
use scylla_cdc::cql_text::cql_literal;
use scylla_cdc::{CDCLogReaderBuilder, CDCRow, Consumer, ConsumerFactory};
use tokio::sync::watch;

/// Prints the changes of several tables of one keyspace.
#[derive(Parser)]
struct Args {
    /// Contact points of the cluster.
    #[arg(
        long,
        env = "SCYLLA_URI",
        value_name = "HOST:PORT[,...]",
        default_value = "127.0.0.1:9042"
    )]
    hosts: String,
    /// The keyspace of the tables.
    #[arg(long, default_value = "shop")]
    keyspace: String,
    /// The tables (with CDC on), separated by commas.
    #[arg(long, value_delimiter = ',', default_value = "orders,customers")]
    tables: Vec<String>,
    /// Stop after this many log rows (default: run until Ctrl-C).
    #[arg(long, value_name = "N")]
    rows: Option<u64>,
    /// How far behind now reading stays, in seconds: room for the nodes' clocks to disagree
    /// and for late writes to land (the library's default is 30).
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    safety_interval: u64,
}

/// Prints the rows of one stream group of one table.
struct TablePrinter {
    /// The table it was made for: it only ever gets rows of this table.
    table: String,
    /// Counts the rows handled, for `--rows`.
    handled: Arc<watch::Sender<u64>>,
}

#[async_trait]
impl Consumer for TablePrinter {
    async fn consume_cdc(&mut self, row: CDCRow<'_>) -> anyhow::Result<()> {
        // The table's own columns (not the log's `cdc$` ones), each as a CQL literal; the
        // columns a write did not set are null in its log row.
        let mut line = format!("{}: {}", self.table, row.operation);
        let names: Vec<String> = row.get_non_cdc_column_names().map(str::to_owned).collect();
        for name in names {
            if let Some(value) = row.get_value(&name)? {
                line.push_str(&format!(" {name}={}", cql_literal(&value)));
            }
        }
        println!("{line}");
        self.handled.send_modify(|n| *n += 1);
        Ok(())
    }
}

/// Makes a [`TablePrinter`] per table and stream group.
struct TablePrinterFactory {
    handled: Arc<watch::Sender<u64>>,
}

#[async_trait]
impl ConsumerFactory for TablePrinterFactory {
    // The reader calls `new_consumer_for_table` (below); a factory whose consumers do not
    // care about the table implements this one alone, and the default of the other calls it.
    async fn new_consumer(&self) -> Box<dyn Consumer> {
        self.new_consumer_for_table("").await
    }

    async fn new_consumer_for_table(&self, table: &str) -> Box<dyn Consumer> {
        Box::new(TablePrinter {
            table: table.to_owned(),
            handled: self.handled.clone(),
        })
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let session = SessionBuilder::new()
        .known_nodes(args.hosts.split(','))
        .build()
        .await?;
    let (handled, mut handled_rx) = watch::channel(0);
    let (mut reader, mut handle) = CDCLogReaderBuilder::new()
        .session(Arc::new(session))
        .keyspace(&args.keyspace)
        // Instead of `table_name`: `build` fails, naming it, on a table that does not exist
        // or has no CDC.
        .tables(&args.tables)
        .consumer_factory(Arc::new(TablePrinterFactory {
            handled: Arc::new(handled),
        }))
        .safety_interval(Duration::from_secs(args.safety_interval))
        // Look for new changes every second once caught up (the default is 10 s).
        .sleep_interval(Duration::from_secs(1))
        .build()
        .await?;
    eprintln!(
        "reading {} of {}; Ctrl-C to stop",
        args.tables.join(", "),
        args.keyspace
    );

    let enough = async {
        match args.rows {
            Some(n) => {
                let _ = handled_rx.wait_for(|handled| *handled >= n).await;
            }
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        result = &mut handle => return Ok(result?), // the first error of any table
        _ = enough => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    reader.stop();
    handle.await?;
    Ok(())
}
