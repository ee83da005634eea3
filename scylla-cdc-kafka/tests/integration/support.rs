//! What the Kafka tests share: a real broker (Apache Kafka 4.4 started from Maven Central jars
//! by `conformance/kafka/start-kafka`), Kafka's own Java clients (`conformance/kafka/kafka-check`)
//! to read what was published, the program as a child process, and a Scylla-compatible cluster
//! (embedded) with a CDC table.
//!
//! Without `java` or `mvn` a test prints `skipped: ...` and passes, unless
//! `SCYLLA_CDC_REQUIRE_KAFKA=1` (set on CI) makes it fail.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use anyhow::{Context, bail, ensure};
use serde_json::Value;

/// The repository's root.
pub(crate) fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the crate is in the workspace")
        .to_path_buf()
}

fn script(name: &str) -> PathBuf {
    repo_root().join("conformance/kafka").join(name)
}

fn runs(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether the test must be skipped because Java or Maven is missing (after printing why);
/// an error under `SCYLLA_CDC_REQUIRE_KAFKA=1`.
fn kafka_missing(test: &str) -> anyhow::Result<bool> {
    let java = std::env::var("JAVA").unwrap_or_else(|_| "java".to_owned());
    let missing: Vec<&str> = [
        (!runs(&java, &["-version"])).then_some("java"),
        (!runs("mvn", &["-v"])).then_some("mvn"),
    ]
    .into_iter()
    .flatten()
    .collect();
    if missing.is_empty() {
        return Ok(false);
    }
    let why = format!(
        "{} not found: the test starts an Apache Kafka broker (Java 17, jars via Maven)",
        missing.join(" and ")
    );
    if std::env::var("SCYLLA_CDC_REQUIRE_KAFKA").as_deref() == Ok("1") {
        bail!("{why}, and SCYLLA_CDC_REQUIRE_KAFKA=1 requires this test to run");
    }
    scylla_cdc_test_utils::skip(test, &why);
    Ok(true)
}

/// A one-node Kafka broker of one test, stopped (its directory removed) on drop.
pub(crate) struct Broker {
    /// The node's directory (data, logs), inside `_home`.
    pub(crate) dir: String,
    _home: TempDir,
    pub(crate) address: String,
    pub(crate) bootstrap: String,
    configs: Vec<String>,
    running: bool,
}

/// Loopback addresses of the tests' brokers: 127.0.93.x (no other test uses 127.0.93.0/24),
/// from an offset of the process id, skipping those whose port 9092 is taken (another test
/// process on the machine).
static NEXT_ADDRESS: AtomicU32 = AtomicU32::new(0);

impl Broker {
    /// Starts a broker with these extra settings (`key=value`), or returns `Ok(None)` when the
    /// test must be skipped (no Java or Maven, outside CI).
    pub(crate) fn start(test: &str, configs: &[&str]) -> anyhow::Result<Option<Broker>> {
        Self::start_configured(test, |_| configs.iter().map(|c| c.to_string()).collect())
    }

    /// Starts a broker with a second client listener, `SASL` on `port` (its security protocol
    /// and mechanisms in `configs`).
    pub(crate) fn start_with_listener(
        test: &str,
        port: u16,
        configs: &[&str],
    ) -> anyhow::Result<Option<Broker>> {
        Self::start_configured(test, |a| {
            let mut all = vec![
                format!("listeners=PLAINTEXT://{a}:9092,CONTROLLER://{a}:9093,SASL://{a}:{port}"),
                format!("advertised.listeners=PLAINTEXT://{a}:9092,SASL://{a}:{port}"),
            ];
            all.extend(configs.iter().map(|c| c.to_string()));
            all
        })
    }

    fn start_configured(
        test: &str,
        configs: impl FnOnce(&str) -> Vec<String>,
    ) -> anyhow::Result<Option<Broker>> {
        if kafka_missing(test)? {
            return Ok(None);
        }
        let address = (0..254)
            .map(|_| {
                let n = NEXT_ADDRESS.fetch_add(1, Ordering::Relaxed) + std::process::id() * 7;
                format!("127.0.93.{}", 1 + n % 254)
            })
            .find(|a| std::net::TcpListener::bind((a.as_str(), 9092)).is_ok())
            .context("every address of 127.0.93.0/24 has its port 9092 taken")?;
        let configs = configs(&address);
        let home = TempDir::new();
        let dir = home.path().join("kafka");
        let mut command = Command::new(script("start-kafka"));
        command.arg("--dir").arg(&dir);
        for c in &configs {
            command.args(["--config", c]);
        }
        let out = command
            .arg(&address)
            .output()
            .context("running start-kafka")?;
        if !out.status.success() {
            bail!(
                "start-kafka failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let vars = parse_assignments(&String::from_utf8_lossy(&out.stdout));
        let get = |k: &str| {
            vars.iter()
                .find(|(name, _)| name == k)
                .map(|(_, v)| v.clone())
                .with_context(|| format!("start-kafka printed no {k}"))
        };
        Ok(Some(Broker {
            dir: get("KAFKA_DIR")?,
            _home: home,
            address,
            bootstrap: get("KAFKA_BOOTSTRAP")?,
            configs,
            running: true,
        }))
    }

    /// Stops the broker gracefully, keeping its data (`kill`: kill -9).
    pub(crate) fn stop(&mut self, kill: bool) -> anyhow::Result<()> {
        let mut command = Command::new(script("stop-kafka"));
        command.arg("--keep");
        if kill {
            command.arg("--kill");
        }
        let status = command.arg(&self.dir).status()?;
        anyhow::ensure!(status.success(), "stop-kafka failed");
        self.running = false;
        Ok(())
    }

    /// Starts the stopped broker again, on the same data and ports.
    pub(crate) fn restart(&mut self) -> anyhow::Result<()> {
        let mut command = Command::new(script("start-kafka"));
        command.args(["--restart", "--dir", &self.dir]);
        for c in &self.configs {
            command.args(["--config", c]);
        }
        let out = command.arg(&self.address).output()?;
        if !out.status.success() {
            bail!(
                "start-kafka --restart failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        self.running = true;
        Ok(())
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        let _ = Command::new(script("stop-kafka"))
            .arg("--kill")
            .arg(&self.dir)
            .status();
    }
}

fn parse_assignments(text: &str) -> Vec<(String, String)> {
    text.split_whitespace()
        .filter_map(|a| a.split_once('='))
        .map(|(k, v)| {
            (
                k.to_owned(),
                v.trim_matches('\'').trim_matches('"').to_owned(),
            )
        })
        .collect()
}

/// How `kafka-check` stops reading.
pub(crate) enum Until {
    /// After exactly this many records, then this long without another (more is a failure).
    Exactly(usize, Duration),
    /// After this long without a record.
    Idle(Duration),
}

/// Runs `kafka-check SUBCOMMAND` on `topics` from the beginning, read_committed, and returns
/// its JSON lines.
pub(crate) fn kafka_check(
    subcommand: &str,
    bootstrap: &str,
    topics: &[&str],
    until: Until,
    extra: &[&str],
) -> anyhow::Result<Vec<Value>> {
    let mut command = Command::new(script("kafka-check"));
    command
        .arg(subcommand)
        .args(["--bootstrap", bootstrap])
        .args(["--topic", &topics.join(",")])
        .args(["--isolation", "read_committed", "--from-beginning"])
        .args(["--timeout", "300"]);
    match until {
        Until::Exactly(n, idle) => {
            command
                .args(["--expect", &n.to_string()])
                .args(["--idle-ms", &idle.as_millis().to_string()]);
        }
        Until::Idle(idle) => {
            command.args(["--idle-ms", &idle.as_millis().to_string()]);
        }
    }
    command.args(extra);
    let out = command.output().context("running kafka-check")?;
    let stdout = String::from_utf8(out.stdout).context("kafka-check wrote non-UTF-8")?;
    if !out.status.success() {
        bail!(
            "kafka-check {subcommand} failed ({}): {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr),
            stdout.lines().take(20).collect::<Vec<_>>().join("\n")
        );
    }
    stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).with_context(|| format!("kafka-check line {l}")))
        .collect()
}

/// The program as a child process, its output in files; killed on drop.
pub(crate) struct Program {
    pub(crate) child: tokio::process::Child,
    pub(crate) stderr: PathBuf,
}

impl Program {
    /// Starts `scylla-cdc-kafka` with `args`, its stderr appended to `log`.
    pub(crate) fn spawn(args: &[String], log: &Path) -> anyhow::Result<Program> {
        let stderr = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)?;
        let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_scylla-cdc-kafka"))
            .args(args)
            .env(
                "RUST_LOG",
                std::env::var("KAFKA_TEST_PROGRAM_LOG")
                    .unwrap_or_else(|_| "warn,scylla_cdc_kafka=info".to_owned()),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .kill_on_drop(true)
            .spawn()
            .context("starting scylla-cdc-kafka")?;
        Ok(Program {
            child,
            stderr: log.to_path_buf(),
        })
    }

    /// kill -9.
    pub(crate) async fn kill9(&mut self) -> anyhow::Result<()> {
        self.child.start_kill()?;
        self.child.wait().await?;
        Ok(())
    }

    /// SIGTERM, then its exit code (at most `timeout`).
    pub(crate) async fn stop(&mut self, timeout: Duration) -> anyhow::Result<Option<i32>> {
        if let Some(pid) = self.child.id() {
            let _ = Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status();
        }
        self.exit_code(timeout).await
    }

    /// Waits for the program to end (at most `timeout`); its exit code.
    pub(crate) async fn exit_code(&mut self, timeout: Duration) -> anyhow::Result<Option<i32>> {
        let status = tokio::time::timeout(timeout, self.child.wait())
            .await
            .with_context(|| format!("the program did not end in {timeout:?}: {}", self.log()))??;
        Ok(status.code())
    }

    /// Sends it `signal` (`STOP`, `CONT`, `TERM`, ...).
    pub(crate) fn signal(&self, signal: &str) -> anyhow::Result<()> {
        let pid = self.child.id().context("the program has ended")?;
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &pid.to_string()])
            .status()?;
        ensure!(status.success(), "kill -{signal} {pid} failed");
        Ok(())
    }

    /// Fails if the program has ended.
    pub(crate) fn check_running(&mut self) -> anyhow::Result<()> {
        if let Some(status) = self.child.try_wait()? {
            bail!("the program ended early ({status}): {}", self.log());
        }
        Ok(())
    }

    /// Its log so far (the last 4000 characters).
    pub(crate) fn log(&self) -> String {
        let text = std::fs::read_to_string(&self.stderr).unwrap_or_default();
        let start = text.len().saturating_sub(4000);
        let start = (start..text.len())
            .find(|i| text.is_char_boundary(*i))
            .unwrap_or(text.len());
        text[start..].to_owned()
    }
}

/// A temporary directory removed on drop.
pub(crate) struct TempDir(PathBuf);

impl TempDir {
    pub(crate) fn new() -> Self {
        let dir = std::env::temp_dir().join(format!(
            "scylla-cdc-kafka-test-{}-{}",
            std::process::id(),
            scylla_cdc_test_utils::unique_keyspace_name()
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        Self(dir)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The arguments every run of the program takes: the cluster, the table, the broker, and
/// short intervals (a 2 s safety interval with early reads, checkpoints every second).
pub(crate) fn program_args(
    hosts: &str,
    keyspace: &str,
    table: &str,
    broker: &Broker,
    prefix: &str,
    extra: &[&str],
) -> Vec<String> {
    let mut args: Vec<String> = [
        "--hosts",
        hosts,
        "-k",
        keyspace,
        "-t",
        table,
        "--bootstrap-servers",
        &broker.bootstrap,
        "--topic-prefix",
        prefix,
        "--safety-interval",
        "2",
        "--sleep-interval",
        "0.2",
        "--window-size",
        "5",
        "--checkpoint-interval",
        "1",
        "--kafka-timeout",
        "60",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

/// Creates a keyspace of unique name (replication factor 1) with the CDC-enabled table
/// `t` of these columns and primary key (e.g. `pk int, ck int, v int, PRIMARY KEY (pk, ck)`);
/// its name.
pub(crate) async fn keyspace_with_table(
    session: &scylla::client::session::Session,
    definition: &str,
) -> anyhow::Result<String> {
    let ks = scylla_cdc_test_utils::unique_keyspace_name();
    session
        .query_unpaged(
            format!(
                "CREATE KEYSPACE {ks} WITH replication = \
                 {{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}}"
            ),
            (),
        )
        .await?;
    session
        .query_unpaged(
            format!("CREATE TABLE {ks}.t ({definition}) WITH cdc = {{'enabled': true}}"),
            (),
        )
        .await?;
    Ok(ks)
}

/// A header of a record `kafka-check consume` printed.
pub(crate) fn header<'a>(record: &'a Value, name: &str) -> Option<&'a str> {
    record["headers"][name].as_str()
}
