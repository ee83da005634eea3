//! A member of a consumer group: start it several times, on one machine or on many, and the
//! members share the table's work, each change read by one of them.
//!
//! Readers built with the same `group` name on the same table divide its units of work (the
//! streams of a vnode, or a tablet's stream) among themselves through leases in a table next
//! to the checkpoint table (`<checkpoint table>_leases`), every decision a lightweight
//! transaction. A member that joins gets its share from the others; one that stops
//! (Ctrl-C, SIGTERM) finishes its windows, saves its checkpoints and hands its units back;
//! one that dies has its units taken over once their leases run out (10 s by default), from
//! their last checkpoint. So each change is delivered once, except that a dead member's
//! changes after its last checkpoint are delivered again by the member that takes over.
//!
//! The table it reads by default:
//!
//! ```text
//! CREATE TABLE shop.orders (id int PRIMARY KEY, customer text, total_cents bigint)
//!     WITH cdc = {'enabled': true};
//! ```
//!
//! Run it in two terminals, then write to the table: each member prints the changes of its
//! units, and on stderr how many units it holds whenever that changes:
//!
//! ```text
//! cargo run -p scylla-cdc --example consumer_group -- --member-id a
//! cargo run -p scylla-cdc --example consumer_group -- --member-id b
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
use scylla_cdc::{
    CDCLogReaderBuilder, CDCRow, Consumer, ConsumerFactory, ProgressHandle,
    TableBackedCheckpointSaver,
};

/// A member of a consumer group that prints the changes of its share of a table.
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
    /// The keyspace of the table (and of the checkpoint and lease tables).
    #[arg(long, default_value = "shop")]
    keyspace: String,
    /// The table (with CDC on).
    #[arg(long, default_value = "orders")]
    table: String,
    /// The group: members with the same group name share the table.
    #[arg(long, default_value = "order-printers")]
    group: String,
    /// This member's id, different for each running member (default: the host's name, the
    /// process id and random digits).
    #[arg(long)]
    member_id: Option<String>,
    /// The checkpoint table, shared by the members (created if missing).
    #[arg(long, default_value = "cdc_checkpoints")]
    checkpoint_table: String,
    /// How far behind now reading stays, in seconds: room for the nodes' clocks to disagree
    /// and for late writes to land (the library's default is 30).
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    safety_interval: u64,
}

/// Prints the rows of one stream group of this member's units.
struct Printer;

#[async_trait]
impl Consumer for Printer {
    async fn consume_cdc(&mut self, row: CDCRow<'_>) -> anyhow::Result<()> {
        let mut line = row.operation.to_string();
        let names: Vec<String> = row.get_non_cdc_column_names().map(str::to_owned).collect();
        for name in names {
            if let Some(value) = row.get_value(&name)? {
                line.push_str(&format!(" {name}={}", cql_literal(&value)));
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

/// Prints this member's share of the group whenever it changes, checking every second.
async fn report_share(progress: ProgressHandle) {
    let mut last = None;
    let mut every_second = tokio::time::interval(Duration::from_secs(1));
    loop {
        every_second.tick().await;
        let Some(group) = progress.progress().group else {
            continue;
        };
        let share = (group.owned.len(), group.units, group.members);
        if last != Some(share) {
            eprintln!(
                "member {} owns {} of {} units ({} members)",
                group.member, share.0, share.1, share.2
            );
            last = Some(share);
        }
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
    let session = Arc::new(
        SessionBuilder::new()
            .known_nodes(args.hosts.split(','))
            .build()
            .await?,
    );
    // A group needs checkpoints in a table: a unit handed over or taken over resumes from
    // its checkpoint, and the lease table is created beside it.
    let checkpoints = TableBackedCheckpointSaver::new(
        session.clone(),
        &args.keyspace,
        &args.checkpoint_table,
        &args.keyspace,
        &args.table,
    )
    .await?;
    let mut builder = CDCLogReaderBuilder::new()
        .session(session)
        .keyspace(&args.keyspace)
        .table_name(&args.table)
        .consumer_factory(Arc::new(PrinterFactory))
        .checkpoint_saver(Arc::new(checkpoints))
        .group(&args.group)
        .safety_interval(Duration::from_secs(args.safety_interval))
        // Look for new changes every second once caught up (the default is 10 s).
        .sleep_interval(Duration::from_secs(1));
    if let Some(id) = &args.member_id {
        builder = builder.member_id(id);
    }
    let (mut reader, mut handle) = builder.build().await?;
    eprintln!(
        "reading {}.{} in group {}; Ctrl-C to stop",
        args.keyspace, args.table, args.group
    );
    tokio::spawn(report_share(reader.progress_handle()));

    tokio::select! {
        result = &mut handle => return Ok(result?), // the reader's first error, if any
        signal = stop_signal() => signal?,
    }
    // Leave the group: the other members take this one's units over from its checkpoints.
    reader.stop();
    handle.await?;
    eprintln!("left group {}", args.group);
    Ok(())
}
