//! `scylla-cdc-bench compare` end to end, at a small size: both readers read the same backlog
//! in child processes and the correctness verdict is what each delivered.

use std::process::Output;

use crate::support::{bench, successful_stdout};

fn compare_bench(args: &[&str]) -> Output {
    bench("compare")
        .args(["--partitions", "20", "--rows", "25", "--reps", "1"])
        .args(args)
        .output()
        .expect("scylla-cdc-bench compare runs")
}

/// The table's line of `system`'s run (`rep system rows correct ...`).
fn run_line<'a>(stdout: &'a str, system: &str) -> &'a str {
    stdout
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some(system))
        .unwrap_or_else(|| panic!("no run of {system} in:\n{stdout}"))
}

#[test]
fn both_readers_deliver_the_whole_backlog_and_the_ratios_are_printed() {
    let out = compare_bench(&[]);
    let stdout = successful_stdout(&out);
    for system in ["ours", "upstream"] {
        let fields: Vec<&str> = run_line(&stdout, system).split_whitespace().collect();
        assert_eq!(fields[2..4], ["500", "yes"], "{stdout}");
    }
    let last = stdout.lines().last().unwrap_or_default();
    let ratios: Vec<f64> = last
        .strip_prefix("ours/upstream: ")
        .unwrap_or_else(|| panic!("the last line is {last:?}"))
        .split(' ')
        .zip(["rows_per_s=", "cpu_per_row=", "peak_rss="])
        .map(|(field, name)| {
            field
                .strip_prefix(name)
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{field:?} in {last:?}"))
        })
        .collect();
    assert_eq!(ratios.len(), 3, "{last}");
    assert!(ratios.iter().all(|r| *r > 0.0 && r.is_finite()), "{last}");
}

#[test]
fn a_system_that_leaves_a_row_out_fails_the_run() {
    let out = compare_bench(&["--drop-one-row", "upstream"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let upstream: Vec<&str> = run_line(&stdout, "upstream").split_whitespace().collect();
    assert_eq!(upstream[2..4], ["499", "WRONG"], "{stdout}");
    let ours: Vec<&str> = run_line(&stdout, "ours").split_whitespace().collect();
    assert_eq!(ours[2..4], ["500", "yes"], "{stdout}");
    assert!(!stdout.contains("ours/upstream:"), "{stdout}");
}

#[test]
fn replicator_comparison_says_upstream_has_no_published_replicator() {
    let out = bench("compare")
        .arg("--replicator")
        .output()
        .expect("scylla-cdc-bench compare runs");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not published on crates.io"), "{stderr}");
}
