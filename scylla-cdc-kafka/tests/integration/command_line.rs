//! The program's command line as an operator meets it, through its binary and without Kafka
//! (Scylla is contacted first; where nothing listens, the run ends with exit code 3):
//! `--help` grouped under the programs' headings in plain text, every flag settable by a
//! `SCYLLA_CDC_KAFKA_*` variable with the command line taking precedence, and
//! `--log-format json` (one JSON object per line on stderr, the final error included).

use std::process::{Command, Output};

use scylla_cdc_test_utils::help_text::help_problems;

/// Runs the binary with `args` and the variables `env` (and none of the test's
/// `SCYLLA_CDC_KAFKA_*`).
fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_scylla-cdc-kafka"));
    for (key, _) in std::env::vars_os() {
        if key
            .to_str()
            .is_some_and(|k| k.starts_with("SCYLLA_CDC_KAFKA_"))
        {
            command.env_remove(key);
        }
    }
    command
        .env_remove("RUST_LOG")
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("scylla-cdc-kafka runs")
}

/// A run's stderr.
fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn help_is_grouped_under_headings_in_plain_text() {
    let mut problems = Vec::new();
    for flag in ["--help", "-h"] {
        let out = run(&[flag], &[]);
        assert!(out.status.success(), "{flag}: {}", stderr(&out));
        let help = String::from_utf8_lossy(&out.stdout);
        problems.extend(
            help_problems(
                &help,
                &[
                    "Connection",
                    "TLS and credentials",
                    "What to read",
                    "Where to start",
                    "Destination",
                    "Operation",
                    "Examples",
                ],
                "SCYLLA_CDC_KAFKA_",
                // The password has its own variable, SCYLLA_PASSWORD.
                &["password"],
            )
            .into_iter()
            .map(|p| format!("{flag}: {p}")),
        );
        for needle in [
            "Usage: scylla-cdc-kafka [OPTIONS] --keyspace <KEYSPACE> --table <TABLE,...> \
             --bootstrap-servers <HOST:PORT,...> --topic-prefix <PREFIX> \
             <--hosts <HOST:PORT,...>|--hostname <HOST[:PORT]>>",
            "5 Kafka refused",
            "Environment: every flag can also be set by the variable SCYLLA_CDC_KAFKA_",
        ] {
            if !help.contains(needle) {
                problems.push(format!("{flag}: no {needle:?}"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The required flags as variables: a Scylla where nothing listens, given up on at once.
const REQUIRED: [(&str, &str); 6] = [
    ("SCYLLA_CDC_KAFKA_HOSTS", "127.0.0.1:1"),
    ("SCYLLA_CDC_KAFKA_KEYSPACE", "ks"),
    ("SCYLLA_CDC_KAFKA_TABLE", "t"),
    ("SCYLLA_CDC_KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:1"),
    ("SCYLLA_CDC_KAFKA_TOPIC_PREFIX", "shop"),
    ("SCYLLA_CDC_KAFKA_GIVE_UP_AFTER", "0.2"),
];

#[test]
fn flags_come_from_the_environment_unless_given() {
    // Without them: a usage error naming what is missing.
    let out = run(&[], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--keyspace"), "{}", stderr(&out));

    // From the variables only: the run gets as far as Scylla.
    let out = run(&[], &REQUIRED);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("cannot connect to the cluster at 127.0.0.1:1"),
        "{}",
        stderr(&out)
    );

    // The command line wins: an unusable value in a variable is not used when the flag is
    // given (and a flag without a value takes true or false).
    let mut env = REQUIRED.to_vec();
    env.push(("SCYLLA_CDC_KAFKA_COMMIT_INTERVAL", "1000"));
    env.push(("SCYLLA_CDC_KAFKA_NO_SCHEMAS", "true"));
    let out = run(&["--commit-interval", "1"], &env);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let out = run(&[], &env);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("SCYLLA_CDC_KAFKA_COMMIT_INTERVAL"),
        "the error names the variable: {}",
        stderr(&out)
    );
}

#[test]
fn json_logs_are_one_object_per_line() {
    let out = run(&["--log-format", "json"], &REQUIRED);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let text = stderr(&out);
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l:?}")))
        .collect();
    assert!(lines.len() >= 2, "{text}");
    for line in &lines {
        for key in ["timestamp", "level", "message", "target"] {
            assert!(line[key].is_string(), "no {key}: {line}");
        }
    }
    let last = lines.last().expect("a line");
    assert_eq!(last["level"], "ERROR");
    assert_eq!(last["exit_code"], 3);
}
