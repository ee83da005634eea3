//! Print a table's CDC log.
fn main() {}
