//! What the printer's tests share: the binary as a command, time arguments.

use std::process::Stdio;

use chrono::{DateTime, SecondsFormat, Utc};

/// The printer binary with `args`, its standard input closed, killed when the command's
/// child is dropped (a failing test leaves no printer behind).
pub(crate) fn printer<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_scylla-cdc-printer"));
    command.args(args).stdin(Stdio::null()).kill_on_drop(true);
    command
}

/// A point in time as `--start` and `--end` take it (RFC 3339, microseconds).
pub(crate) fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}
