//! Statement execution: the database behind every node.
//!
//! [`Database`] holds the schema snapshot, the tables' data, the prepared-statement cache
//! (shared by all nodes, so ids are identical everywhere) and the CDC state. A node's
//! connection hands it each decoded statement request with the connection's [`ConnState`]
//! (current keyspace, negotiated extensions); the database appends the response frame to
//! the connection's output buffer and reports side effects in an [`Outcome`].

use bytes::BytesMut;

use crate::cluster::{ClusterConfig, ClusterCore, Topology};
use crate::frame::{self, CqlError, Extensions, Request, Response, SchemaChange};

// Declared here by the DDL worktree only, to compile its modules; the real `exec/mod.rs`
// (executor worktree) declares them when both are merged.
mod ddl;
mod system_tables;

/// Per-connection state the executor reads and updates.
#[derive(Debug, Clone)]
pub(crate) struct ConnState {
    /// Node (1-based) the connection is to: the coordinator of its requests.
    pub(crate) node: usize,
    /// Shard of the connection.
    pub(crate) shard: u32,
    /// Keyspace set by `USE`.
    pub(crate) keyspace: Option<String>,
    /// Extensions negotiated in STARTUP.
    pub(crate) ext: Extensions,
}

impl ConnState {
    /// State of a fresh connection.
    pub(crate) fn new(node: usize, shard: u32) -> ConnState {
        ConnState {
            node,
            shard,
            keyspace: None,
            ext: Extensions::default(),
        }
    }
}

/// Side effects of a request the connection must act on.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    /// A schema change to announce to registered connections.
    pub(crate) schema_change: Option<SchemaChange>,
}

/// The database shared by all nodes.
pub(crate) struct Database {}

impl Database {
    /// An empty database with the system keyspaces.
    pub(crate) fn new(_config: &ClusterConfig) -> Database {
        Database {}
    }

    /// The statement text and target table of a request, for fault matching.
    pub(crate) fn describe_request(
        &self,
        _conn: &ConnState,
        request: &Request,
    ) -> (Option<String>, Option<(String, String)>) {
        match request {
            Request::Query { query, .. } | Request::Prepare { query } => {
                (Some(query.clone()), None)
            }
            _ => (None, None),
        }
    }

    /// Executes a statement request and appends its response on `stream` to `out`.
    pub(crate) fn handle(
        &self,
        _cluster: &ClusterCore,
        _topology: &Topology,
        conn: &mut ConnState,
        stream: i16,
        _request: Request,
        out: &mut BytesMut,
    ) -> Outcome {
        let error = CqlError::invalid("statement execution is not available yet");
        frame::encode_response(out, stream, &conn.ext, &[], &Response::Error(error));
        Outcome::default()
    }
}
