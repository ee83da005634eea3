//! What the replicator's tests share: a source and a destination cluster with a keyspace on
//! each ([`Pair`]), the binary as a command, its clean stop, and the program run in-process.

use std::ffi::OsStr;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use scylla::client::session::Session;
use scylla_cdc::cli::SharedBuffer;
use scylla_cdc_replicator::{CliError, Output, Shutdown, run_to};
use scylla_cdc_test_utils::{setup_tracing, unique_keyspace_name};
use scylla_emulator::{ClusterBuilder, EmbeddedCluster};

/// A source and a destination cluster, each with keyspace `ks` (one replica).
pub(crate) struct Pair {
    pub(crate) source: EmbeddedCluster,
    pub(crate) destination: EmbeddedCluster,
    /// A session on the source.
    pub(crate) s: Arc<Session>,
    /// A session on the destination.
    pub(crate) d: Arc<Session>,
    pub(crate) ks: String,
}

impl Pair {
    /// A source of `source_nodes` nodes and a one-node destination.
    pub(crate) async fn start(source_nodes: usize) -> Pair {
        Self::of(
            EmbeddedCluster::builder().nodes(source_nodes),
            EmbeddedCluster::builder(),
        )
        .await
    }

    /// The clusters of these builders.
    pub(crate) async fn of(source: ClusterBuilder, destination: ClusterBuilder) -> Pair {
        setup_tracing();
        let source = source.start().await.expect("source");
        let destination = destination.start().await.expect("destination");
        let s = source.session().await.expect("source session");
        let d = destination.session().await.expect("destination session");
        let ks = unique_keyspace_name();
        let pair = Pair {
            source,
            destination,
            s,
            d,
            ks,
        };
        pair.both(
            "CREATE KEYSPACE {ks} WITH replication = {'class': 'SimpleStrategy', \
             'replication_factor': 1}",
        )
        .await;
        pair
    }

    /// Runs `statement` (with `{ks}` replaced by the keyspace) on one session.
    pub(crate) async fn on(&self, session: &Session, statement: &str) {
        let statement = statement.replace("{ks}", &self.ks);
        session
            .query_unpaged(statement.as_str(), ())
            .await
            .unwrap_or_else(|e| panic!("`{statement}`: {e}"));
    }

    /// Runs `statement` on both clusters.
    pub(crate) async fn both(&self, statement: &str) {
        self.on(&self.s, statement).await;
        self.on(&self.d, statement).await;
    }

    /// The replicator's arguments for these clusters and `table` (after the program name).
    pub(crate) fn args(&self, table: &str) -> Vec<String> {
        vec![
            "--source".into(),
            self.source.contact_point().to_string(),
            "--destination".into(),
            self.destination.contact_point().to_string(),
            "-k".into(),
            self.ks.clone(),
            "-t".into(),
            table.into(),
        ]
    }

    /// The number of rows of `ks.table` on the destination, -1 while it cannot be counted.
    pub(crate) async fn count_on_destination(&self, table: &str) -> i64 {
        count(&self.d, &format!("{}.{table}", self.ks)).await
    }
}

/// The number of rows of `table` (`ks.t`), -1 while it cannot be counted (no such table yet).
pub(crate) async fn count(session: &Session, table: &str) -> i64 {
    session
        .query_unpaged(format!("SELECT count(*) FROM {table}"), ())
        .await
        .ok()
        .and_then(|r| r.into_rows_result().ok())
        .and_then(|r| r.single_row::<(i64,)>().ok())
        .map_or(-1, |(n,)| n)
}

/// The replicator binary with `args`, its standard input closed, killed when the command's
/// child is dropped (a failing test leaves no replicator behind).
pub(crate) fn replicator<S: AsRef<OsStr>>(args: &[S]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_scylla-cdc-replicator"));
    command.args(args).stdin(Stdio::null()).kill_on_drop(true);
    command
}

/// Stops `child` cleanly, as an operator's SIGTERM does; its exit status (it must stop
/// within 30 s).
pub(crate) async fn terminate(child: &mut tokio::process::Child) -> ExitStatus {
    let pid = child.id().expect("pid").to_string();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    assert!(killed.success());
    tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("stops in 30 s")
        .expect("status")
}

/// Runs the program in-process with these arguments (the program name first), as the
/// binary runs it: its result and stdout.
pub(crate) async fn run_program(args: Vec<String>) -> (Result<(), CliError>, String) {
    let buffer = SharedBuffer::default();
    let (_trigger, shutdown) = Shutdown::new();
    let result = run_to(
        chrono::Utc::now(),
        args,
        Output::new(buffer.clone()),
        shutdown,
    )
    .await;
    (result, buffer.contents())
}
