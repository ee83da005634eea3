//! The reader's metrics, served to Prometheus on `/metrics`.
//!
//! The library records its figures through the `metrics` facade (`scylla_cdc_rows_total`,
//! `scylla_cdc_changes_total`, `scylla_cdc_lag_seconds`, ... labelled with the keyspace and
//! table; the crate docs list them all) and installs no exporter: the program chooses one.
//! Here it is `metrics-exporter-prometheus`, which serves every metric of the process in
//! Prometheus' text format over HTTP, the program's own metrics included (this one counts
//! the orders it handles, `orders_handled_total`).
//!
//! The table it reads by default:
//!
//! ```text
//! CREATE TABLE shop.orders (id int PRIMARY KEY, customer text, total_cents bigint)
//!     WITH cdc = {'enabled': true};
//! ```
//!
//! Run it, write to the table, and look:
//!
//! ```text
//! cargo run -p scylla-cdc --example prometheus -- --metrics-addr 127.0.0.1:9180
//! curl -s http://127.0.0.1:9180/metrics | grep scylla_cdc_
//! ```
//!
//! A Prometheus server scrapes it with `static_configs: [{targets: ['HOST:9180']}]`. It runs
//! until Ctrl-C or SIGTERM.
//!
//! A project of its own needs `scylla-cdc`, `scylla`, `tokio` (`full`), `async-trait`,
//! `anyhow`, `clap` (`derive`, `env`), `metrics` and `metrics-exporter-prometheus` (with its
//! `http-listener` feature, on by default).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use clap::Parser;
use metrics_exporter_prometheus::PrometheusBuilder;
use scylla::client::session_builder::SessionBuilder;
use scylla_cdc::{CDCLogReaderBuilder, CDCRow, Consumer, ConsumerFactory};

/// Reads a table's changes and serves the reader's metrics to Prometheus.
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
    /// The table (with CDC on).
    #[arg(long, default_value = "orders")]
    table: String,
    /// Where to serve `/metrics` (`0.0.0.0:9180` to be reachable from other machines).
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:9180")]
    metrics_addr: SocketAddr,
    /// How far behind now reading stays, in seconds: room for the nodes' clocks to disagree
    /// and for late writes to land (the library's default is 30).
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    safety_interval: u64,
}

/// Handles the rows of one stream group (here: counts them).
struct OrderCounter;

#[async_trait]
impl Consumer for OrderCounter {
    async fn consume_cdc(&mut self, row: CDCRow<'_>) -> anyhow::Result<()> {
        // The program's own metric, served beside the library's.
        metrics::counter!("orders_handled_total", "operation" => row.operation.to_string())
            .increment(1);
        Ok(())
    }
}

/// Makes an [`OrderCounter`] per stream group.
struct OrderCounterFactory;

#[async_trait]
impl ConsumerFactory for OrderCounterFactory {
    async fn new_consumer(&self) -> Box<dyn Consumer> {
        Box::new(OrderCounter)
    }
}

/// Ctrl-C, or SIGTERM (what a service manager such as systemd or Kubernetes sends).
async fn stop_signal() -> std::io::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut sigterm = signal(SignalKind::terminate())?;
    tokio::select! {
        result = tokio::signal::ctrl_c() => result,
        _ = sigterm.recv() => Ok(()),
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    // Install the exporter first, so it sees every metric from the start: it becomes the
    // process's `metrics` recorder (one per process) and serves /metrics from a task of this
    // runtime.
    PrometheusBuilder::new()
        .with_http_listener(args.metrics_addr)
        .install()?;

    let session = SessionBuilder::new()
        .known_nodes(args.hosts.split(','))
        .build()
        .await?;
    let (mut reader, mut handle) = CDCLogReaderBuilder::new()
        .session(Arc::new(session))
        .keyspace(&args.keyspace)
        .table_name(&args.table)
        .consumer_factory(Arc::new(OrderCounterFactory))
        .safety_interval(Duration::from_secs(args.safety_interval))
        // Look for new changes every second once caught up (the default is 10 s).
        .sleep_interval(Duration::from_secs(1))
        .build()
        .await?;
    eprintln!(
        "reading {}.{}, metrics on http://{}/metrics; Ctrl-C to stop",
        args.keyspace, args.table, args.metrics_addr
    );

    tokio::select! {
        result = &mut handle => return Ok(result?), // the reader's first error, if any
        signal = stop_signal() => signal?,
    }
    reader.stop();
    handle.await?;
    Ok(())
}
