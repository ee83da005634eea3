//! The `scylla-emulator` binary's command line as its user meets it: `--help` grouped under
//! headings in plain text, describing the `ready` line and the console; every flag settable
//! by a `SCYLLA_EMULATOR_*` variable, the command line taking precedence; `--username` still
//! accepted beside `--user`; `--log-format json` (one JSON object per line on stderr).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use scylla_cdc_test_utils::help_text::help_problems;

/// The binary, without any `SCYLLA_EMULATOR_*` variable of the test's environment.
fn command() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_scylla-emulator"));
    for (key, _) in std::env::vars_os() {
        if key
            .to_str()
            .is_some_and(|k| k.starts_with("SCYLLA_EMULATOR_"))
        {
            command.env_remove(key);
        }
    }
    command
}

/// A running emulator, its `ready` address, stdin and stdout.
struct Running {
    child: Child,
    ready: String,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Running {
    /// Starts `command` (stderr as the caller set it) and reads its `ready` line.
    fn start(mut command: Command) -> Running {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("scylla-emulator starts");
        let stdin = child.stdin.take().expect("stdin");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut ready = String::new();
        stdout.read_line(&mut ready).expect("read stdout");
        let ready = ready
            .trim_end()
            .strip_prefix("ready ")
            .unwrap_or_else(|| panic!("first line: {ready:?}"))
            .to_string();
        Running {
            child,
            ready,
            stdin,
            stdout,
        }
    }

    /// Sends a console command; the lines before the reply, and the reply.
    fn send(&mut self, line: &str) -> (Vec<String>, String) {
        writeln!(self.stdin, "{line}").expect("write stdin");
        let mut before = Vec::new();
        loop {
            let mut text = String::new();
            assert!(
                self.stdout.read_line(&mut text).expect("read") > 0,
                "stdout closed"
            );
            let text = text.trim_end().to_string();
            if text == "ok" || text.starts_with("ok ") || text.starts_with("error: ") {
                return (before, text);
            }
            before.push(text);
        }
    }

    /// The number of other nodes node 1 knows (`system.peers`).
    fn peers(&mut self) -> String {
        self.send("cql SELECT peer FROM system.peers").1
    }

    /// `shutdown`, and a clean exit.
    fn shutdown(mut self) {
        assert_eq!(self.send("shutdown").1, "ok");
        let status = self.child.wait().expect("exits");
        assert!(status.success(), "{status}");
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn help_describes_the_flags_the_ready_line_and_the_console() {
    let mut problems = Vec::new();
    for flag in ["--help", "-h"] {
        let out = command().arg(flag).output().expect("runs");
        assert!(out.status.success(), "{flag}: {}", out.status);
        let help = String::from_utf8_lossy(&out.stdout);
        problems.extend(
            help_problems(
                &help,
                &[
                    "Cluster",
                    "Connection",
                    "TLS and credentials",
                    "Preload",
                    "Operation",
                    "Examples",
                ],
                "SCYLLA_EMULATOR_",
                &[],
            )
            .into_iter()
            .map(|p| format!("{flag}: {p}")),
        );
        for needle in [
            "ready HOST:PORT",
            "stop-node I",
            "cql STATEMENT",
            "consistency [LEVEL]",
            "shutdown",
            "--user <USER>",
            "--log-format <FORMAT>",
            "Environment: every flag can also be set by the variable SCYLLA_EMULATOR_",
        ] {
            if !help.contains(needle) {
                problems.push(format!("{flag}: no {needle:?}"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn flags_come_from_the_environment_unless_given() {
    // Every flag from variables.
    let mut from_env = command();
    from_env
        .env("SCYLLA_EMULATOR_PORT", "0")
        .env("SCYLLA_EMULATOR_ADDRESS", "127.77.13.1")
        .env("SCYLLA_EMULATOR_NODES", "2")
        .stderr(Stdio::null());
    let mut emulator = Running::start(from_env);
    assert!(
        emulator.ready.starts_with("127.77.13.1:"),
        "{}",
        emulator.ready
    );
    assert_eq!(emulator.peers(), "ok 1 row");
    emulator.shutdown();

    // The command line wins.
    let mut both = command();
    both.env("SCYLLA_EMULATOR_PORT", "0")
        .env("SCYLLA_EMULATOR_ADDRESS", "127.77.13.1")
        .env("SCYLLA_EMULATOR_NODES", "2")
        .args(["--address", "127.77.13.17", "--nodes", "1"])
        .stderr(Stdio::null());
    let mut emulator = Running::start(both);
    assert!(
        emulator.ready.starts_with("127.77.13.17:"),
        "{}",
        emulator.ready
    );
    assert_eq!(emulator.peers(), "ok 0 rows");
    emulator.shutdown();

    // A bad value from a variable: a usage error (exit status 2) naming the flag.
    let out = command()
        .env("SCYLLA_EMULATOR_NODES", "0")
        .args(["--port", "0", "--address", "127.77.13.33"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--nodes"), "{err}");
}

#[test]
fn username_is_still_accepted_beside_user() {
    for flag in ["--user", "--username"] {
        let mut c = command();
        c.args(["--port", "0", "--address", "127.77.13.49"])
            .args([flag, "app", "--password", "secret"])
            .stderr(Stdio::null());
        Running::start(c).shutdown();
    }
}

#[test]
fn json_logs_are_one_object_per_line() {
    let dir = std::env::temp_dir().join(format!("emulator-json-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let stderr_path = dir.join("stderr");
    let mut c = command();
    c.args([
        "--port",
        "0",
        "--address",
        "127.77.13.65",
        "--log-format",
        "json",
    ])
    .args(["--preload", "ks.t:partitions=2,rows=3"])
    .stderr(std::fs::File::create(&stderr_path).expect("stderr file"));
    Running::start(c).shutdown();
    let stderr = std::fs::read_to_string(&stderr_path).expect("stderr");
    std::fs::remove_dir_all(&dir).expect("remove temp dir");
    assert!(!stderr.trim().is_empty(), "nothing on stderr");
    let mut preload = false;
    for line in stderr.lines() {
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"));
        for key in ["timestamp", "level", "message", "target"] {
            assert!(v[key].is_string(), "no {key}: {line}");
        }
        preload |= v["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("preload ks.t: 6/6 rows (100%)"));
    }
    assert!(preload, "no preload progress: {stderr}");
}
