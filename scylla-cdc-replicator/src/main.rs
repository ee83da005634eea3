//! Replicate a table into a second cluster through its CDC log.
fn main() {}
