//! `scylla-cdc-printer`: print the CDC log of ScyllaDB tables (see the library docs and
//! `--help`).

use std::process::ExitCode;

/// Runs the printer with the process arguments, stdout and signals; exits with its code.
fn main() -> ExitCode {
    scylla_cdc_printer::process_main()
}
