//! Read a ScyllaDB table's Change Data Capture log.
