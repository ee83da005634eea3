//! `scylla-cdc-kafka`: publish the changes of ScyllaDB tables to Kafka (see the library docs
//! and `--help`).

use std::process::ExitCode;

/// mimalloc rather than glibc's malloc: a change's events are allocated on the reader's
/// threads and freed on the publisher's (see the workspace's Cargo.toml).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Runs the publisher with the process arguments and signals; exits with its code.
fn main() -> ExitCode {
    scylla_cdc_kafka::process_main()
}
