//! End-to-end tests of the workspace live in `tests/`: the replicator's replication matrix,
//! restarts and faults, the printer's outputs and `--demo`, and the programs' error lines,
//! all against embedded clusters. They call the programs' library entry points
//! (`scylla_cdc_printer::run`, `scylla_cdc_replicator::run`), which the binaries wrap
//! one-to-one (same arguments, exit codes and one-line errors).
//!
//! The crate's binaries `e2e-printer` and `e2e-replicator` are the programs as processes
//! (their `process_main`, all of the programs' `main`): Cargo builds a package's binaries for
//! its tests (`CARGO_BIN_EXE_*`) but not another package's, and `groups` kills members with
//! SIGKILL. For the same reason the library's examples are built here too, as `example-*`
//! programs (their files in `scylla-cdc/examples/`), which the `examples` tests run.
