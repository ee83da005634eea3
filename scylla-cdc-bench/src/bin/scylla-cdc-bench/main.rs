//! `scylla-cdc-bench`: the workspace's benchmark programs, one subcommand each.
//!
//! ```text
//! cargo build --release -p scylla-emulator -p scylla-cdc-bench
//! target/release/scylla-cdc-bench compare --nodes 3
//! cargo run --release -p scylla-cdc-bench -- latency --quick
//! target/release/scylla-cdc-bench PROGRAM --help
//! ```
//!
//! They were ten binaries (`compare-bench`, `emulator-bench`, ...), each a link of the whole
//! workspace (45 to 85 MB and seconds of linking each, in every build of the tests); now one.
//! Each program is a module with the `main` it had, its options (`Args`, parsed from the
//! arguments after the subcommand's name) and its output unchanged. The programs that start
//! themselves as child processes (`compare`, `group`, `latency`) give their child the
//! subcommand's name first, and those that start the workspace's other programs
//! (`scylla-emulator`, the printer, the replicator) find them next to this binary, as before.

mod compare;
mod emulator;
mod group;
mod idle;
mod kafka;
mod large_rows;
mod latency;
mod log_read;
mod reader;
mod replicator;
mod soak;

use std::ffi::OsString;
use std::process::{ExitCode, Termination};

/// A program's `main`, its result reported as the program's `main` would have reported it
/// (an `Err` printed as `Error: ...`, exit status 1).
type Main = fn() -> ExitCode;

/// The programs: subcommand, its `main`, what it measures.
const PROGRAMS: [(&str, Main, &str); 11] = [
    (
        "compare",
        || compare::main().report(),
        "this reader vs scylla-cdc-rust 0.7.0 on the same backlog",
    ),
    (
        "emulator",
        || emulator::main().report(),
        "driver → embedded cluster: writes, reads, scans",
    ),
    (
        "group",
        || group::main().report(),
        "1, 2, 3 members of a consumer group sharing a catch-up, and their lease traffic",
    ),
    (
        "idle",
        || idle::main().report(),
        "requests while idle, catch-up and delivery delay, beside scylla-cdc-rust 0.7",
    ),
    (
        "kafka",
        || kafka::main().report(),
        "scylla-cdc-kafka and a real Kafka broker: catch-up changes/s, write-to-consumer delay",
    ),
    (
        "large-rows",
        || large_rows::main().report(),
        "the printer's (or replicator's) peak memory reading a log of large rows",
    ),
    (
        "latency",
        || latency::main().report(),
        "write-to-delivery delays, late rows, idle requests, with and without early reads",
    ),
    (
        "log-read",
        || log_read::main().report(),
        "reading a preloaded CDC log through the driver",
    ),
    (
        "reader",
        || reader::main().report(),
        "the scylla-cdc reader catching up a backlog",
    ),
    (
        "replicator",
        || replicator::main().report(),
        "replicating a backlog between two emulator processes",
    ),
    (
        "soak",
        || soak::main().report(),
        "the printer and replicator binaries under a steady write load",
    ),
];

/// The arguments of the running program as its parser takes them: its name
/// (`scylla-cdc-bench SUBCOMMAND`, what its usage line shows), then every argument after the
/// subcommand's.
fn program_args() -> Vec<OsString> {
    let mut args = std::env::args_os().skip(1);
    let name = args.next().unwrap_or_default();
    let mut program = OsString::from("scylla-cdc-bench ");
    program.push(name);
    std::iter::once(program).chain(args).collect()
}

fn usage() -> String {
    let mut text = String::from(
        "The workspace's benchmark programs.\n\n\
         Usage: scylla-cdc-bench PROGRAM [OPTIONS]   (scylla-cdc-bench PROGRAM --help: its options)\n\n\
         Programs:\n",
    );
    for (name, _, about) in PROGRAMS {
        text.push_str(&format!("  {name:<12}{about}\n"));
    }
    text
}

fn main() -> ExitCode {
    let name = std::env::args_os().nth(1);
    let Some(name) = name else {
        eprint!("{}", usage());
        return ExitCode::from(2);
    };
    let name = name.to_string_lossy();
    if let Some((_, main, _)) = PROGRAMS.iter().find(|(program, _, _)| *program == name) {
        return main();
    }
    if ["-h", "--help", "help"].contains(&&*name) {
        print!("{}", usage());
        return ExitCode::SUCCESS;
    }
    eprint!("scylla-cdc-bench: no program {name:?}\n\n{}", usage());
    ExitCode::from(2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_program_is_listed_once() {
        let mut names: Vec<&str> = PROGRAMS.iter().map(|(name, _, _)| *name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), PROGRAMS.len());
        for name in names {
            assert!(usage().contains(&format!("  {name} ")), "{name}");
        }
    }
}
