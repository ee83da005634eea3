//! The `scylla-emulator` binary's stdin console, as a user (or a script) drives it: one
//! command per line, one `ok`/`error:` reply line each, with `cql` result rows printed before
//! their reply.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// A running emulator with its stdin and stdout.
struct Emulator {
    /// `address:port` of node 1, from the `ready` line.
    endpoint: String,
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
            endpoint: String::new(),
            child,
            stdin,
            stdout,
        };
        let ready = emulator.line();
        assert!(
            ready.starts_with(&format!("ready {address}:")),
            "first line: {ready}"
        );
        emulator.endpoint = ready["ready ".len()..].to_string();
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

/// A test that fails before `shutdown` leaves no emulator running.
impl Drop for Emulator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
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

#[test]
fn cql_runs_at_consistency_one_until_the_consistency_command_changes_it() {
    // system_distributed is replicated three times, so a one-node cluster answers reads of
    // it at ONE (the console's default, as cqlsh's) but not at QUORUM or LOCAL_QUORUM.
    let mut emulator = Emulator::start("127.77.11.1", &["--nodes", "1"]);
    let read = "cql SELECT time FROM system_distributed.cdc_generation_timestamps \
                WHERE key = 'timestamps'";
    let (rows, reply) = emulator.send(read);
    assert_eq!(reply, "ok 1 row", "{rows:?}");
    assert_eq!(
        emulator.send("consistency"),
        (
            vec!["Current consistency level is ONE.".to_string()],
            "ok".to_string()
        )
    );
    assert_eq!(
        emulator.send("consistency QUORUM"),
        (
            vec!["Consistency level set to QUORUM.".to_string()],
            "ok".to_string()
        )
    );
    let (rows, reply) = emulator.send(read);
    assert!(rows.is_empty(), "{rows:?}");
    assert!(
        reply.starts_with("error: ") && reply.contains("Cannot achieve consistency level"),
        "{reply}"
    );
    assert_eq!(
        emulator.send("consistency"),
        (
            vec!["Current consistency level is QUORUM.".to_string()],
            "ok".to_string()
        )
    );
    // Levels are case-insensitive and echoed in uppercase, as cqlsh does.
    assert_eq!(
        emulator.send("consistency local_one"),
        (
            vec!["Consistency level set to LOCAL_ONE.".to_string()],
            "ok".to_string()
        )
    );
    let (rows, reply) = emulator.send(read);
    assert_eq!(reply, "ok 1 row", "{rows:?}");
    let (output, reply) = emulator.send("consistency sometimes");
    assert!(output.is_empty(), "{output:?}");
    assert!(
        reply.starts_with("error: Improper consistency command") && reply.contains("sometimes"),
        "{reply}"
    );
    // A refused level leaves the current one.
    assert_eq!(
        emulator.send("consistency"),
        (
            vec!["Current consistency level is LOCAL_ONE.".to_string()],
            "ok".to_string()
        )
    );
    emulator.shutdown();
}

/// What the emulator's stdin is in a signal test.
enum Stdin {
    /// A pipe the test keeps open (nothing is ever written to it).
    HeldOpenPipe,
    /// `/dev/null` (end of input at once).
    DevNull,
    /// A pipe the test closes right after the emulator is ready.
    ClosedPipe,
    /// The slave side of a pseudo-terminal the test keeps open, as an interactive shell
    /// gives it.
    Terminal,
}

/// A pseudo-terminal pair: (master, slave).
#[allow(unsafe_code)]
fn pseudo_terminal() -> (std::os::fd::OwnedFd, std::os::fd::OwnedFd) {
    use std::os::fd::FromRawFd;
    let (mut master, mut slave) = (-1, -1);
    // SAFETY: openpty writes the two descriptors it opens into the given integers; the
    // name, termios and winsize pointers may be null.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just opened by openpty and are owned by nobody else.
    unsafe {
        (
            std::os::fd::OwnedFd::from_raw_fd(master),
            std::os::fd::OwnedFd::from_raw_fd(slave),
        )
    }
}

/// Sends `signal` to the process `pid`.
#[allow(unsafe_code)]
fn send_signal(pid: u32, signal: libc::c_int) {
    let pid = libc::pid_t::try_from(pid).expect("pid");
    // SAFETY: kill(2) takes plain integers; the process is our own child, not yet reaped.
    let rc = unsafe { libc::kill(pid, signal) };
    assert_eq!(rc, 0, "kill: {}", std::io::Error::last_os_error());
}

/// Starts the emulator with `stdin`, waits for `ready`, sends `signal` and checks that it
/// stops by itself with exit status 0 within 20 s.
fn stops_cleanly_on(signal: libc::c_int, stdin: Stdin, address: &str) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_scylla-emulator"));
    command
        .args(["--port", "0", "--address", address])
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    // Kept open (or closed) by the test until the emulator has exited.
    let mut terminal_master = None;
    match stdin {
        Stdin::HeldOpenPipe | Stdin::ClosedPipe => {
            command.stdin(Stdio::piped());
        }
        Stdin::DevNull => {
            command.stdin(Stdio::null());
        }
        Stdin::Terminal => {
            let (master, slave) = pseudo_terminal();
            command.stdin(Stdio::from(slave));
            terminal_master = Some(master);
        }
    }
    let mut child = command.spawn().expect("scylla-emulator starts");
    let mut held_stdin = child.stdin.take();
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut ready = String::new();
    stdout.read_line(&mut ready).expect("read stdout");
    assert!(
        ready.starts_with(&format!("ready {address}:")),
        "first line: {ready}"
    );
    if matches!(stdin, Stdin::ClosedPipe) {
        drop(held_stdin.take());
    }
    send_signal(child.id(), signal);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the emulator did not stop within 20 s of the signal");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0), "{status}");
    drop(held_stdin);
    drop(terminal_master);
}

#[test]
fn sigterm_stops_the_emulator_while_a_pipe_holds_stdin_open() {
    stops_cleanly_on(libc::SIGTERM, Stdin::HeldOpenPipe, "127.77.10.1");
}

#[test]
fn sigint_stops_the_emulator_while_a_pipe_holds_stdin_open() {
    stops_cleanly_on(libc::SIGINT, Stdin::HeldOpenPipe, "127.77.10.17");
}

#[test]
fn sigterm_stops_the_emulator_with_stdin_on_a_terminal() {
    stops_cleanly_on(libc::SIGTERM, Stdin::Terminal, "127.77.10.33");
}

#[test]
fn sigint_stops_the_emulator_with_stdin_on_a_terminal() {
    stops_cleanly_on(libc::SIGINT, Stdin::Terminal, "127.77.10.49");
}

#[test]
fn sigterm_stops_the_emulator_with_stdin_from_dev_null() {
    stops_cleanly_on(libc::SIGTERM, Stdin::DevNull, "127.77.10.65");
}

#[test]
fn sigint_stops_the_emulator_after_stdin_is_closed() {
    stops_cleanly_on(libc::SIGINT, Stdin::ClosedPipe, "127.77.10.81");
}

/// Parses a `connections` reply (`ok 1/0=2 1/1=1 ...`) into `(node, shard) -> count`.
fn connection_counts(reply: &str) -> std::collections::BTreeMap<(usize, u32), usize> {
    let counts = reply.strip_prefix("ok").expect("an ok reply").trim();
    counts
        .split_whitespace()
        .map(|entry| {
            let (place, n) = entry.split_once('=').expect("node/shard=n");
            let (node, shard) = place.split_once('/').expect("node/shard");
            (
                (node.parse().expect("node"), shard.parse().expect("shard")),
                n.parse().expect("count"),
            )
        })
        .collect()
}

#[test]
fn connections_shows_which_client_connections_negotiated_compression() {
    let mut emulator = Emulator::start("127.77.12.1", &["--nodes", "2", "--shards", "2"]);
    // No client yet: no connection, compressed or not.
    emulator.expect("connections", "ok");
    emulator.expect("connections lz4", "ok");
    let (output, reply) = emulator.send("connections zstd");
    assert!(output.is_empty());
    assert_eq!(
        reply,
        "error: `connections` takes lz4, snappy or nothing, not `zstd`"
    );

    // A driver session asking for lz4: a connection per shard of both nodes, all compressed.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let session = runtime.block_on(
        scylla::client::session_builder::SessionBuilder::new()
            .known_node(&emulator.endpoint)
            .compression(Some(scylla::client::Compression::Lz4))
            .build(),
    );
    let session = session.expect("session");
    // The pools fill in the background: wait until every shard of both nodes has one.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let lz4 = loop {
        let (_, reply) = emulator.send("connections lz4");
        let lz4 = connection_counts(&reply);
        if lz4.keys().copied().collect::<Vec<_>>() == [(1, 0), (1, 1), (2, 0), (2, 1)] {
            break lz4;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "lz4 connections: {reply}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let (_, reply) = emulator.send("connections");
    let all = connection_counts(&reply);
    assert_eq!(all, lz4, "every connection of the session is compressed");
    emulator.expect("connections snappy", "ok");
    drop(session);
    drop(runtime);
    emulator.shutdown();
}

/// `--tls-only`: the `ready` endpoint speaks TLS (the CA of `--tls-test-ca` verifies it,
/// plaintext is refused), and the console's `cql` works over it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_only_serves_tls_on_the_ready_endpoint() {
    let dir = std::env::temp_dir().join(format!("scylla-emulator-tls-only-{}", std::process::id()));
    let dir_text = dir.display().to_string();
    let mut emulator = Emulator::start("127.77.13.1", &["--tls-only", "--tls-test-ca", &dir_text]);
    let (rows, reply) = emulator.send("cql SELECT key FROM system.local");
    assert_eq!(
        (rows, reply.as_str()),
        (vec!["key = 'local'".to_string()], "ok 1 row")
    );
    let endpoint: std::net::SocketAddr = emulator.endpoint.parse().expect("endpoint");
    let plaintext = scylla::client::session_builder::SessionBuilder::new()
        .known_node_addr(endpoint)
        .build()
        .await;
    assert!(plaintext.is_err(), "plaintext to a TLS-only endpoint");
    use rustls::pki_types::pem::PemObject;
    let ca = std::fs::read(dir.join("ca.pem")).expect("ca.pem written");
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::CertificateDer::pem_slice_iter(&ca) {
        roots.add(cert.expect("PEM")).expect("CA");
    }
    let config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    let session = scylla::client::session_builder::SessionBuilder::new()
        .known_node_addr(endpoint)
        .tls_context(Some(std::sync::Arc::new(config)))
        .build()
        .await
        .expect("TLS session to the ready endpoint");
    session
        .query_unpaged("SELECT key FROM system.local", ())
        .await
        .expect("query over TLS");
    emulator.shutdown();
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--tls-only` without a certificate, or with TLS ports, is a usage error (exit status 2).
#[test]
fn tls_only_without_a_certificate_is_refused() {
    for args in [
        vec!["--tls-only"],
        vec![
            "--tls-only",
            "--tls-test-ca",
            "/nonexistent",
            "--tls-port",
            "9142",
        ],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_scylla-emulator"))
            .args(["--port", "0", "--address", "127.77.13.17"])
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--tls-only"), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}
