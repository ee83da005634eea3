//! What the benchmark programs' tests share.

use std::process::{Command, Output};

/// A command running `program`, a subcommand of the `scylla-cdc-bench` binary.
pub(crate) fn bench(program: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_scylla-cdc-bench"));
    command.arg(program);
    command
}

/// The standard output of a run that must have succeeded; fails with its status, standard
/// output and standard error otherwise.
pub(crate) fn successful_stdout(out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}
