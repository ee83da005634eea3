//! Whole changes, decoded into your own struct.
//!
//! A [`ChangeConsumer`] gets each write to the table as one [`Change`]: every log row of it
//! (pre-image, deltas, post-image) together, never split. `RowChange::after()` is the row as
//! the write left it, and `decode::<Order>()` fills a `#[derive(Deserialize)]` struct from
//! it, a field per column (see `scylla_cdc::decode` for the Rust type of each CQL type).
//!
//! The table it reads (its post-images make `after()` the whole row, not only the columns the
//! write set):
//!
//! ```text
//! CREATE TABLE shop.orders (id int PRIMARY KEY, customer text, status text,
//!     total_cents bigint, items list<text>)
//!     WITH cdc = {'enabled': true, 'postimage': true};
//! ```
//!
//! Run it, then write to the table (`cqlsh`): it prints each change from the moment it
//! started, until Ctrl-C or `--changes N`:
//!
//! ```text
//! cargo run -p scylla-cdc --example typed_changes -- --hosts 127.0.0.1:9042 --changes 10
//! ```
//!
//! A project of its own needs `scylla-cdc`, `scylla`, `tokio` (`full`), `async-trait`,
//! `anyhow`, `clap` (`derive`, `env`) and `serde` (`derive`).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use clap::Parser;
use scylla::client::session_builder::SessionBuilder;
use scylla_cdc::decode::ListValues;
use scylla_cdc::{
    CDCLogReaderBuilder, Change, ChangeConsumer, ChangeConsumerFactory, OperationType,
};
use serde::Deserialize;
use tokio::sync::watch;

/// Prints the changes of a table, each decoded into an `Order`.
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
    /// The keyspace of the table.
    #[arg(long, default_value = "shop")]
    keyspace: String,
    /// The table (with CDC and post-images on).
    #[arg(long, default_value = "orders")]
    table: String,
    /// Stop after this many changes (default: run until Ctrl-C).
    #[arg(long, value_name = "N")]
    changes: Option<u64>,
    /// How far behind now reading stays, in seconds: room for the nodes' clocks to disagree
    /// and for late writes to land (the library's default is 30).
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    safety_interval: u64,
}

/// A row of `shop.orders`. Fields are matched to columns by name; a column that may be null
/// is an `Option` (an empty collection is null in CQL).
///
/// The log keeps a non-frozen `list<text>` as `map<timeuuid, text>` (the list's cell keys and
/// values, in list order): [`ListValues`] decodes it into the values alone. A `set`, a `map`
/// or a frozen list decodes into a `Vec`, a set or a map directly.
#[derive(Debug, Deserialize)]
#[allow(dead_code)] // the fields are only printed, with `{:?}`
struct Order {
    id: i32,
    customer: String,
    status: Option<String>,
    total_cents: Option<i64>,
    items: Option<ListValues<String>>,
}

/// The key of a deleted order: a deletion has no row after it, only the key.
#[derive(Debug, Deserialize)]
struct OrderKey {
    id: i32,
}

/// Handles the changes of one stream group (the reader runs one per group, in parallel).
struct OrderPrinter {
    /// Counts the changes handled, for `--changes`.
    handled: Arc<watch::Sender<u64>>,
}

#[async_trait]
impl ChangeConsumer for OrderPrinter {
    async fn consume_change(&mut self, change: Change) -> anyhow::Result<()> {
        // A change is one write: a statement, or the writes of one batch to one partition.
        // `row_changes()` has one entry per row it touched (one here: `id` is the whole key).
        for row in change.row_changes() {
            match row.after()? {
                Some(after) => {
                    let order: Order = after.decode()?; // a `DecodeError` names the column
                    // The write's operation (no pre-image here to compare with).
                    let what = match row.operation() {
                        Some(OperationType::RowInsert) => "insert",
                        _ => "update",
                    };
                    println!("{what} {order:?}");
                }
                None => {
                    let key: OrderKey = row.key()?.decode()?;
                    println!("delete order {}", key.id);
                }
            }
        }
        self.handled.send_modify(|n| *n += 1);
        Ok(())
    }
}

/// Makes an [`OrderPrinter`] for each stream group.
struct OrderPrinterFactory {
    handled: Arc<watch::Sender<u64>>,
}

#[async_trait]
impl ChangeConsumerFactory for OrderPrinterFactory {
    async fn new_consumer(&self) -> Box<dyn ChangeConsumer> {
        Box::new(OrderPrinter {
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
        .table_name(&args.table)
        // Whole changes instead of log rows (`consumer_factory`).
        .change_consumer_factory(Arc::new(OrderPrinterFactory {
            handled: Arc::new(handled),
        }))
        .safety_interval(Duration::from_secs(args.safety_interval))
        // Look for new changes every second once caught up (the default is 10 s).
        .sleep_interval(Duration::from_secs(1))
        .build()
        .await?;
    eprintln!("reading {}.{}; Ctrl-C to stop", args.keyspace, args.table);

    let enough = async {
        match args.changes {
            Some(n) => {
                let _ = handled_rx.wait_for(|handled| *handled >= n).await;
            }
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        result = &mut handle => return Ok(result?), // the reader's first error, if any
        _ = enough => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    reader.stop();
    handle.await?;
    Ok(())
}
