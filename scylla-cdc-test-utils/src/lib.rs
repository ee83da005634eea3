//! An embedded ScyllaDB-compatible cluster.
