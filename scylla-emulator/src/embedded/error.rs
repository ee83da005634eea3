//! [`ClusterError`]: what the control API of the embedded cluster reports.

/// Errors of the embedded cluster's control API.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClusterError {
    /// A listener could not be bound.
    #[error("cannot bind {what}: {source}")]
    Bind {
        /// What was being bound.
        what: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The builder was given settings that cannot work.
    #[error("invalid cluster configuration: {0}")]
    Config(String),
    /// There is no node with this index.
    #[error("there is no node {0} (nodes are numbered from 1)")]
    NoSuchNode(usize),
    /// The node is already stopped.
    #[error("node {0} is already stopped")]
    NodeStopped(usize),
    /// The node is already running.
    #[error("node {0} is already running")]
    NodeRunning(usize),
    /// A CDC metadata operation failed (e.g. splitting the tablets of a table without them).
    #[error("{0}")]
    Cdc(String),
    /// A preloaded table could not be created or filled.
    #[error("preload failed: {0}")]
    Preload(String),
}
