//! `scylla-cdc-kafka`: publish the changes of ScyllaDB tables to Kafka (see the library docs
//! and `--help`).

use std::process::ExitCode;

/// Runs the publisher with the process arguments and signals; exits with its code.
fn main() -> ExitCode {
    scylla_cdc_kafka::process_main()
}
