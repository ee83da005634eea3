//! The benchmark programs (the `scylla-cdc-bench` binary's subcommands) end to end, at a
//! small size: one test binary (one link of the workspace) with a module per program.

mod compare_bench;
mod group_bench;
mod latency_bench;
mod programs;
mod support;
