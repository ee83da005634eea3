//! `scylla-cdc-printer`: print the CDC log of ScyllaDB tables (see the library docs and
//! `--help`).

use std::process::ExitCode;

use scylla_cdc::cli::{self, Shutdown, exit_code};
use scylla_cdc_printer::{Output, run_launched};

/// Runs the printer with the process arguments, stdout and signals; exits with its code.
fn main() -> ExitCode {
    // The default start, as the system recorded the process's start: every change written
    // after the launch is printed.
    let launched = cli::launch_time();
    cli::install_tracing("warn,scylla_cdc_printer=info,scylla=off,scylla_cdc=warn");
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
        match run_launched(launched, std::env::args_os(), Output::stdout(), shutdown).await {
            Ok(()) => exit_code::OK,
            Err(e) => {
                eprintln!("{e}");
                e.exit_code()
            }
        }
    });
    // Reader tasks that were stopped may still hold the runtime; do not wait for them.
    runtime.shutdown_background();
    ExitCode::from(code)
}
