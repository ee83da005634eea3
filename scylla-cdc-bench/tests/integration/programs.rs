//! The `scylla-cdc-bench` binary's subcommands: each program answers `--help` under its
//! name, and a name that is no program is an error.

use crate::support::{bench, successful_stdout};

const PROGRAMS: [&str; 10] = [
    "compare",
    "emulator",
    "group",
    "idle",
    "large-rows",
    "latency",
    "log-read",
    "reader",
    "replicator",
    "soak",
];

#[test]
fn every_program_answers_help_under_its_name() {
    for program in PROGRAMS {
        let out = bench(program)
            .arg("--help")
            .output()
            .expect("scylla-cdc-bench runs");
        let stdout = successful_stdout(&out);
        assert!(
            stdout.contains(&format!("Usage: scylla-cdc-bench {program} [OPTIONS]")),
            "{program}:\n{stdout}"
        );
    }
    let out = bench("--help").output().expect("scylla-cdc-bench runs");
    let stdout = successful_stdout(&out);
    for program in PROGRAMS {
        assert!(
            stdout.contains(&format!("  {program} ")),
            "{program}:\n{stdout}"
        );
    }
}

#[test]
fn an_unknown_program_is_an_error() {
    let out = bench("compare-bench")
        .output()
        .expect("scylla-cdc-bench runs");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no program \"compare-bench\""), "{stderr}");
}
