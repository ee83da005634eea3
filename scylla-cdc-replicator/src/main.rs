//! `scylla-cdc-replicator`: replicate ScyllaDB tables into another cluster through their CDC
//! log (see the library docs and `--help`).

use std::process::ExitCode;

use scylla_cdc::cli;
use scylla_cdc_replicator::{Shutdown, exit_code, run_launched};

/// Runs the replicator with the process arguments and signals; exits with its code.
fn main() -> ExitCode {
    // The default start, as the system recorded the process's start: every change written
    // after the launch is replicated.
    let launched = cli::launch_time();
    // A target directive matches every target that starts with it: `scylla=off` (the driver)
    // would also silence `scylla_cdc*`, so the library and this program are named after it.
    cli::install_tracing(
        "info,scylla=off,scylla_cdc=warn,scylla_cdc_replicator=info,scylla_cdc_printer=info",
    );
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(exit_code::RUNTIME);
        }
    };
    let code = runtime.block_on(async {
        let shutdown = Shutdown::on_signals();
        match run_launched(launched, std::env::args_os(), shutdown).await {
            Ok(()) => exit_code::OK,
            Err(e) => {
                eprintln!("{e}");
                e.exit_code()
            }
        }
    });
    runtime.shutdown_background();
    ExitCode::from(code)
}
