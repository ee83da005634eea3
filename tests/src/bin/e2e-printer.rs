//! The printer as a process of its own, built with the end-to-end tests (which cannot run
//! another package's binary): `scylla-cdc-printer`'s `main` is this same call.

fn main() -> std::process::ExitCode {
    scylla_cdc_printer::process_main()
}
