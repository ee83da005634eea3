//! Rows the consumer refuses go to a dead-letter table, and reading goes on.
//!
//! When a consumer returns an error (or panics), the reader follows its
//! `on_consumer_error` policy: it hands the row over again a few times (a failure may be
//! transient: a service down for a moment), then stops (the default), skips the row, or
//! writes it to a dead-letter sink. Here the sink is a CQL table next to the data
//! (`DeadLetterTable`), wrapped to print each letter as it is written; any type that
//! implements `DeadLetterSink` can take its place (a file, a queue).
//!
//! The consumer takes orders and refuses those with a negative total. The table it reads:
//!
//! ```text
//! CREATE TABLE shop.orders (id int PRIMARY KEY, customer text, total_cents bigint)
//!     WITH cdc = {'enabled': true};
//! ```
//!
//! and the dead letters it writes (created if missing), one partition per base table:
//!
//! ```text
//! SELECT time, columns, error, attempts FROM shop.orders_dead_letters
//!     WHERE keyspace_name = 'shop' AND table_name = 'orders';
//! ```
//!
//! Run it, then write to the table: it prints what it takes and what it gives up on, until
//! Ctrl-C or `--rows N` (rows taken or given up on):
//!
//! ```text
//! cargo run -p scylla-cdc --example dead_letters -- --hosts 127.0.0.1:9042
//! ```
//!
//! A project of its own needs `scylla-cdc`, `scylla`, `tokio` (`full`), `async-trait`,
//! `anyhow`, `clap` (`derive`, `env`) and `serde` (`derive`).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use clap::Parser;
use scylla::client::session_builder::SessionBuilder;
use scylla_cdc::{
    CDCLogReaderBuilder, CDCRow, Consumer, ConsumerErrorPolicy, ConsumerFactory, DeadLetter,
    DeadLetterSink, DeadLetterTable,
};
use serde::Deserialize;
use tokio::sync::watch;

/// Takes the orders of a table; orders it refuses go to a dead-letter table.
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
    /// The keyspace of the table (and of the dead-letter table).
    #[arg(long, default_value = "shop")]
    keyspace: String,
    /// The table (with CDC on).
    #[arg(long, default_value = "orders")]
    table: String,
    /// The dead-letter table (default: the table's name followed by `_dead_letters`).
    #[arg(long)]
    dead_letter_table: Option<String>,
    /// Stop after this many rows, taken or given up on (default: run until Ctrl-C).
    #[arg(long, value_name = "N")]
    rows: Option<u64>,
    /// How far behind now reading stays, in seconds: room for the nodes' clocks to disagree
    /// and for late writes to land (the library's default is 30).
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    safety_interval: u64,
}

/// The columns of an order that the consumer looks at.
#[derive(Deserialize)]
struct Order {
    id: i32,
    total_cents: Option<i64>,
}

/// Takes the orders of one stream group.
struct OrderTaker {
    /// Counts the rows taken and given up on, for `--rows`.
    handled: Arc<watch::Sender<u64>>,
}

#[async_trait]
impl Consumer for OrderTaker {
    async fn consume_cdc(&mut self, row: CDCRow<'_>) -> anyhow::Result<()> {
        let order: Order = row.decode()?;
        if let Some(total) = order.total_cents.filter(|t| *t < 0) {
            // Refused: the policy decides what happens to the row.
            anyhow::bail!("order {}: negative total {total}", order.id);
        }
        println!(
            "took order {} ({} {:?})",
            order.id, row.operation, order.total_cents
        );
        self.handled.send_modify(|n| *n += 1);
        Ok(())
    }
}

/// Makes an [`OrderTaker`] per stream group.
struct OrderTakerFactory {
    handled: Arc<watch::Sender<u64>>,
}

#[async_trait]
impl ConsumerFactory for OrderTakerFactory {
    async fn new_consumer(&self) -> Box<dyn Consumer> {
        Box::new(OrderTaker {
            handled: self.handled.clone(),
        })
    }
}

/// A dead-letter sink that writes to the table and then prints the letter.
struct PrintingSink {
    table: DeadLetterTable,
    handled: Arc<watch::Sender<u64>>,
}

#[async_trait]
impl DeadLetterSink for PrintingSink {
    async fn write(&self, letter: &DeadLetter) -> anyhow::Result<()> {
        // An error here is retried while `is_transient` says so (the driver's transient
        // errors, by default); any other stops the reader: a row is never dropped unseen.
        self.table.write(letter).await?;
        let columns: Vec<String> = letter
            .columns
            .iter()
            .map(|(name, value)| format!("{name}={value}"))
            .collect();
        println!(
            "dead letter: {} after {} attempts: {}",
            columns.join(" "),
            letter.attempts,
            letter.error
        );
        self.handled.send_modify(|n| *n += 1);
        Ok(())
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let session = Arc::new(
        SessionBuilder::new()
            .known_nodes(args.hosts.split(','))
            .build()
            .await?,
    );
    let (handled, mut handled_rx) = watch::channel(0);
    let handled = Arc::new(handled);
    let dead_letter_table = args
        .dead_letter_table
        .clone()
        .unwrap_or_else(|| format!("{}_dead_letters", args.table));
    let sink = PrintingSink {
        table: DeadLetterTable::new(session.clone(), &args.keyspace, &dead_letter_table).await?,
        handled: handled.clone(),
    };
    // Two more attempts, 100 ms and 200 ms after the failure, then the dead letters.
    let policy =
        ConsumerErrorPolicy::dead_letter(Arc::new(sink)).with_retry(2, Duration::from_millis(100));
    let (mut reader, mut handle) = CDCLogReaderBuilder::new()
        .session(session)
        .keyspace(&args.keyspace)
        .table_name(&args.table)
        .consumer_factory(Arc::new(OrderTakerFactory { handled }))
        .on_consumer_error(policy)
        .safety_interval(Duration::from_secs(args.safety_interval))
        // Look for new changes every second once caught up (the default is 10 s).
        .sleep_interval(Duration::from_secs(1))
        .build()
        .await?;
    eprintln!(
        "reading {}.{}, dead letters to {}.{dead_letter_table}; Ctrl-C to stop",
        args.keyspace, args.table, args.keyspace
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
        result = &mut handle => return Ok(result?), // e.g. a dead letter that could not be written
        _ = enough => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    reader.stop();
    handle.await?;
    Ok(())
}
