//! The `scylla-emulator` binary's stdin console, as a user (or a script) drives it: one
//! command per line, one `ok`/`error:` reply line each, with `cql` result rows printed before
//! their reply.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// A running emulator with its stdin and stdout.
struct Emulator {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Emulator {
    /// Starts `scylla-emulator` with `args` on a free port and waits for its `ready` line.
    fn start(address: &str, args: &[&str]) -> Emulator {
        let mut child = Command::new(env!("CARGO_BIN_EXE_scylla-emulator"))
            .args(["--port", "0", "--address", address])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("scylla-emulator starts");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut emulator = Emulator {
            child,
            stdin,
            stdout,
        };
        let ready = emulator.line();
        assert!(
            ready.starts_with(&format!("ready {address}:")),
            "first line: {ready}"
        );
        emulator
    }

    /// The next stdout line, without its newline.
    fn line(&mut self) -> String {
        let mut line = String::new();
        let n = self.stdout.read_line(&mut line).expect("read stdout");
        assert!(n > 0, "the emulator closed its stdout");
        line.trim_end().to_string()
    }

    /// Sends `command`; returns the lines printed before the reply, and the reply line.
    fn send(&mut self, command: &str) -> (Vec<String>, String) {
        writeln!(self.stdin, "{command}").expect("write stdin");
        let mut output = Vec::new();
        loop {
            let line = self.line();
            if line == "ok" || line.starts_with("ok ") || line.starts_with("error: ") {
                return (output, line);
            }
            output.push(line);
        }
    }

    /// Sends `command` and expects exactly the reply `reply` with no output before it.
    #[track_caller]
    fn expect(&mut self, command: &str, reply: &str) {
        let (output, line) = self.send(command);
        assert!(output.is_empty(), "{command}: unexpected output {output:?}");
        assert_eq!(line, reply, "{command}");
    }

    /// Shuts the emulator down through the console and checks that it exits cleanly.
    fn shutdown(mut self) {
        self.expect("shutdown", "ok");
        let status = self.child.wait().expect("exits");
        assert!(status.success(), "{status}");
    }
}

#[test]
fn cql_commands_create_write_and_read_through_the_driver() {
    let mut emulator = Emulator::start("127.77.9.1", &["--nodes", "2"]);
    emulator.expect(
        "cql CREATE KEYSPACE shop WITH replication = \
         {'class': 'NetworkTopologyStrategy', 'replication_factor': 2}",
        "ok",
    );
    emulator.expect(
        "cql CREATE TABLE shop.orders (customer text, id int, total decimal, \
         items map<text, int>, PRIMARY KEY (customer, id)) WITH cdc = {'enabled': true}",
        "ok",
    );
    emulator.expect(
        "cql INSERT INTO shop.orders (customer, id, total, items) \
         VALUES ('ann', 1, 12.50, {'tea': 2, 'cake': 1})",
        "ok",
    );
    emulator.expect(
        "cql UPDATE shop.orders SET total = -0.5 WHERE customer = 'bob' AND id = 7",
        "ok",
    );

    let (rows, reply) = emulator.send("cql SELECT * FROM shop.orders WHERE customer = 'ann'");
    assert_eq!(reply, "ok 1 row");
    assert_eq!(
        rows,
        ["customer = 'ann', id = 1, items = {'cake': 1, 'tea': 2}, total = 12.50"]
    );

    // The writes went through the CDC write path: two log rows, an insert and an update.
    let (rows, reply) =
        emulator.send("cql SELECT customer, id, \"cdc$operation\" FROM shop.orders_scylla_cdc_log");
    assert_eq!(reply, "ok 2 rows");
    let mut rows = rows;
    rows.sort();
    assert_eq!(
        rows,
        [
            "customer = 'ann', id = 1, cdc$operation = 2",
            "customer = 'bob', id = 7, cdc$operation = 1",
        ]
    );
    emulator.shutdown();
}

#[test]
fn console_errors_are_one_line_and_the_console_keeps_going() {
    let mut emulator = Emulator::start("127.77.9.33", &["--nodes", "2"]);
    let (output, reply) = emulator.send("cql SELEC * FROM nowhere");
    assert!(output.is_empty());
    assert!(
        reply.starts_with("error: ") && reply.contains("syntax error"),
        "{reply}"
    );
    let (_, reply) = emulator.send("cql SELECT * FROM missing_ks.t");
    assert!(
        reply.starts_with("error: ") && reply.contains("missing_ks"),
        "{reply}"
    );
    emulator.expect("cql", "error: `cql` needs a statement");
    emulator.expect("frobnicate 3", "error: unknown command `frobnicate`");
    emulator.expect(
        "stop-node x",
        "error: `stop-node` needs a node number, not `x`",
    );
    emulator.expect(
        "stop-node 3",
        "error: there is no node 3 (nodes are numbered from 1)",
    );
    emulator.expect("stop-node 2", "ok");
    // Still serving after the errors, with a node down.
    let (rows, reply) = emulator.send("cql SELECT cluster_name FROM system.local");
    assert_eq!(reply, "ok 1 row", "{rows:?}");
    emulator.expect("start-node 2", "ok");
    emulator.shutdown();
}
