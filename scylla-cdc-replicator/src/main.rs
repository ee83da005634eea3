//! `scylla-cdc-replicator`: replicate ScyllaDB tables into another cluster through their CDC
//! log (see the library docs and `--help`).

use std::process::ExitCode;

/// Runs the replicator with the process arguments and signals; exits with its code.
fn main() -> ExitCode {
    scylla_cdc_replicator::process_main()
}
