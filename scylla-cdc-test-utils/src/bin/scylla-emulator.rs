//! `scylla-emulator`: runs an embedded ScyllaDB-compatible cluster as its own process.
fn main() {}
