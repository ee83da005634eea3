//! `scylla-cdc-kafka`: publish the changes of ScyllaDB tables to Kafka, one topic per table,
//! in the event format of the scylla-cdc-source-connector (Debezium's envelope), exactly once
//! with Kafka transactions.
//!
//! Work in progress: the event format ([`event`]) lands first; the program follows.

pub mod event;

use std::process::ExitCode;

/// Runs the program with the process arguments; the binary's `main`.
pub fn process_main() -> ExitCode {
    eprintln!("scylla-cdc-kafka: not built yet");
    ExitCode::from(1)
}
