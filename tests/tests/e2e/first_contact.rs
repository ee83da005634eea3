//! A first contact that never succeeds (nothing listens at `--hosts`), through the programs'
//! binaries: the printer, an interactive tool, gives up after `--connect-timeout` with one
//! line and exit code 3; the replicator, a daemon, keeps retrying (a WARN line per retry).
//!
//! Nothing listens on the loopback range 127.0.161.* (no cluster of this suite uses it).

use std::time::{Duration, Instant};

use scylla_cdc::cli::exit_code;

use crate::support::{Process, TempDir, replicator_args, strings};

/// An address where nothing listens.
const NOBODY: &str = "127.0.161.1:9042";
/// Another one (a replicator's destination).
const NOBODY_ELSE: &str = "127.0.161.2:9042";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_printer_gives_up_on_a_first_contact_that_never_succeeds() -> anyhow::Result<()> {
    let dir = TempDir::new();
    // The daemon first, without --give-up-after: it must still be retrying once the printer
    // has given up.
    let mut replicator = Process::spawn(
        env!("CARGO_BIN_EXE_e2e-replicator"),
        "replicator",
        &replicator_args(NOBODY, NOBODY_ELSE, "ks", "t"),
        &dir,
    )?;
    let started = Instant::now();
    let mut printer = Process::spawn(
        env!("CARGO_BIN_EXE_e2e-printer"),
        "printer",
        &strings(&[
            "--hosts",
            NOBODY,
            "-k",
            "ks",
            "-t",
            "t",
            "--connect-timeout",
            "2",
        ]),
        &dir,
    )?;
    let code = printer.exit_code(Duration::from_secs(30)).await?;
    let elapsed = started.elapsed();
    let err = printer.err();
    assert_eq!(code, Some(i32::from(exit_code::CONNECT)), "{err}");
    // Retried for the bound, not longer (a refused connection fails at once).
    assert!(
        elapsed >= Duration::from_secs(2) && elapsed < Duration::from_secs(10),
        "gave up after {elapsed:?}: {err}"
    );
    // The last line says what failed, where, and which option bounds it.
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("error: cannot connect to the cluster at 127.0.161.1:9042")
            && last.contains("refused")
            && last.contains("--connect-timeout"),
        "{err}"
    );
    assert_eq!(printer.out(), "", "nothing printed on stdout");
    // Meanwhile the replicator keeps trying.
    replicator.check_running()?;
    assert!(
        replicator.err().matches("retrying").count() >= 2,
        "{}",
        replicator.err()
    );
    Ok(())
}
