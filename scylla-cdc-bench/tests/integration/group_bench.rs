//! `scylla-cdc-bench group` end to end, at a small size: groups of 1 and 2 member processes
//! share the catch-up of one backlog, the union is checked exactly, and the lease traffic is
//! counted.

use std::process::Output;

use crate::support::{bench, successful_stdout};

fn group_bench(args: &[&str]) -> Output {
    bench("group")
        .args([
            "--partitions",
            "20",
            "--rows",
            "25",
            "--window-size",
            "0.5",
            "--lease-ms",
            "1500",
            "--renew-ms",
            "300",
            "--idle-secs",
            "1",
            "--reps",
            "2",
        ])
        .args(args)
        .output()
        .expect("scylla-cdc-bench group runs")
}

/// The fields of the summary line of `members`, by name.
fn summary(stdout: &str, members: usize) -> std::collections::BTreeMap<String, String> {
    let prefix = format!("members={members} ");
    let line = stdout
        .lines()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no summary of {members} member(s) in:\n{stdout}"));
    line.split(' ')
        .map(|f| {
            let (k, v) = f
                .split_once('=')
                .unwrap_or_else(|| panic!("{f:?} in {line:?}"));
            (k.to_owned(), v.to_owned())
        })
        .collect()
}

fn number(fields: &std::collections::BTreeMap<String, String>, name: &str) -> f64 {
    fields
        .get(name)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no number {name} in {fields:?}"))
}

#[test]
fn groups_of_one_and_two_deliver_the_backlog_once_and_renew_their_leases() {
    let out = group_bench(&["--members", "1,2"]);
    let stdout = successful_stdout(&out);
    for members in [1, 2] {
        let s = summary(&stdout, members);
        assert_eq!(s["correct"], "yes", "{stdout}");
        for name in ["rows_per_s", "speedup", "cpu_us_per_row"] {
            let v = number(&s, name);
            assert!(v > 0.0 && v.is_finite(), "{name}={v}\n{stdout}");
        }
        // Members renew with LWTs and read the group's partition, also while idle.
        for name in [
            "lease_lwts_per_s",
            "lease_reads_per_s",
            "idle_lease_lwts_per_s",
            "idle_lease_reads_per_s",
        ] {
            assert!(number(&s, name) > 0.0, "{name}\n{stdout}");
        }
    }
    assert_eq!(summary(&stdout, 1)["speedup"], "1.00", "{stdout}");
    assert!(
        stdout.contains("union 500 rows of 500 (count and checksum right)"),
        "{stdout}"
    );
}

#[test]
fn a_group_that_leaves_rows_out_fails_the_run() {
    let out = group_bench(&["--members", "1", "--drop-one-row"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert_eq!(summary(&stdout, 1)["correct"], "WRONG", "{stdout}");
    assert!(stdout.contains("union 499 rows of 500 (WRONG)"), "{stdout}");
}
