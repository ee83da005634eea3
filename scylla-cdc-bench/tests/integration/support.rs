//! What the benchmark programs' tests share.

use std::process::Output;

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
