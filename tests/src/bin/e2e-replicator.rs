//! The replicator as a process of its own, built with the end-to-end tests (which cannot run
//! another package's binary): `scylla-cdc-replicator`'s `main` is this same call.

fn main() -> std::process::ExitCode {
    scylla_cdc_replicator::process_main()
}
