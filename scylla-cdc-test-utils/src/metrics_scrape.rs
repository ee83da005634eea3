//! Reading a program's Prometheus endpoint in a test, as `curl` and a Prometheus server do:
//! [`scrape`] fetches the text once, [`scrape_until`] waits for a condition on it, and
//! [`value_of`] reads one sample of the text exposition format; [`health_until`] waits for
//! an answer of its `/health` ([`get`] fetches any path). [`LogLines`] collects what a
//! program under test logs, to wait for its progress lines.

use std::io::{BufRead, BufReader, Read};
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A loopback address with a port that was free a moment ago, for a program under test to
/// listen on (`--metrics-addr`).
pub fn free_local_port() -> std::io::Result<SocketAddr> {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?.local_addr()
}

/// `GET path` from `addr` (HTTP/1.0, so the body ends when the server closes): the status
/// code and the body, or the I/O failure.
pub async fn get(addr: SocketAddr, path: &str) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect(addr).await?;
    stream
        .write_all(format!("GET {path} HTTP/1.0\r\nAccept: */*\r\n\r\n").as_bytes())
        .await?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await?;
    let answer = String::from_utf8_lossy(&answer);
    let (head, body) = answer
        .split_once("\r\n\r\n")
        .ok_or_else(|| std::io::Error::other(format!("not an HTTP answer: {answer:?}")))?;
    let status = head.lines().next().unwrap_or_default();
    let code = status
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("{addr}{path}: {status:?}")))?;
    Ok((code, body.to_string()))
}

/// `GET /metrics` from `addr`; the body of a `200` answer, or an error with the status or
/// the I/O failure.
pub async fn scrape(addr: SocketAddr) -> std::io::Result<String> {
    match get(addr, "/metrics").await? {
        (200, body) => Ok(body),
        (code, _) => Err(std::io::Error::other(format!("{addr}/metrics: {code}"))),
    }
}

/// `GET /health` from `addr` until `done` holds for its status code and body (a refused
/// connection counts as not yet: the program may still be starting), for at most `timeout`;
/// returns the answer that satisfied it, or an error with the last answer seen.
pub async fn health_until(
    addr: SocketAddr,
    timeout: Duration,
    done: impl Fn(u16, &str) -> bool,
) -> anyhow::Result<(u16, String)> {
    let deadline = Instant::now() + timeout;
    loop {
        let last = match get(addr, "/health").await {
            Ok((code, body)) if done(code, &body) => return Ok((code, body)),
            Ok((code, body)) => format!("{code} {body}"),
            Err(e) => format!("(no answer: {e})"),
        };
        if Instant::now() >= deadline {
            anyhow::bail!(
                "{addr}/health did not reach the expected state in {timeout:?}; last seen: {last}"
            );
        }
        // Health is read, not announced: poll as a load balancer would, only faster.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Scrapes `addr` until `done` holds for the text (a refused connection counts as not yet:
/// the program may still be starting), for at most `timeout`; returns the text that
/// satisfied it, or an error with the last text seen.
pub async fn scrape_until(
    addr: SocketAddr,
    timeout: Duration,
    done: impl Fn(&str) -> bool,
) -> anyhow::Result<String> {
    let deadline = Instant::now() + timeout;
    loop {
        let last = match scrape(addr).await {
            Ok(text) if done(&text) => return Ok(text),
            Ok(text) => text,
            Err(e) => format!("(no answer: {e})"),
        };
        if Instant::now() >= deadline {
            anyhow::bail!(
                "{addr}/metrics did not reach the expected state in {timeout:?}; last seen:\n{last}"
            );
        }
        // Nothing announces a metric's change: poll at a rate a Prometheus server would not
        // notice.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The value of the sample of `name` whose labels include every `key="value"` pair of
/// `labels` (given as `key="value",...`, in any order), if the text has one.
pub fn value_of(text: &str, name: &str, labels: &str) -> Option<f64> {
    let wanted: Vec<&str> = labels.split(',').filter(|l| !l.is_empty()).collect();
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .find_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            let (metric, have) = match series.split_once('{') {
                Some((metric, rest)) => (metric, rest.strip_suffix('}')?),
                None => (series, ""),
            };
            let have: Vec<&str> = have.split(',').collect();
            (metric == name && wanted.iter().all(|w| have.contains(w)))
                .then(|| value.parse().ok())
                .flatten()
        })
}

/// The lines a child process writes to a pipe (its stderr, say), collected by a thread of
/// their own so the pipe never fills up.
pub struct LogLines {
    lines: Arc<Mutex<Vec<String>>>,
}

impl LogLines {
    /// Starts collecting the lines of `pipe` until it closes.
    pub fn collect(pipe: impl Read + Send + 'static) -> Self {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&lines);
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                if let Ok(mut l) = sink.lock() {
                    l.push(line);
                }
            }
        });
        Self { lines }
    }

    /// Every line so far.
    pub fn all(&self) -> Vec<String> {
        self.lines.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// Waits (at most `timeout`) for a line for which `wanted` holds and returns the latest
    /// such line, or an error with every line seen.
    pub async fn wait_for(
        &self,
        timeout: Duration,
        wanted: impl Fn(&str) -> bool,
    ) -> anyhow::Result<String> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(line) = self.all().into_iter().rev().find(|l| wanted(l)) {
                return Ok(line);
            }
            if Instant::now() >= deadline {
                anyhow::bail!(
                    "no such line within {timeout:?}; the lines were:\n{}",
                    self.all().join("\n")
                );
            }
            // Lines arrive from another thread with no notification to wait on.
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "# TYPE scylla_cdc_rows_total counter\n\
        scylla_cdc_rows_total{keyspace=\"ks\",table=\"t\"} 20\n\
        scylla_cdc_rows_total{keyspace=\"ks\",table=\"u\"} 3\n\
        scylla_cdc_lag_seconds{table=\"t\",keyspace=\"ks\"} 1.5\n\
        up 1\n";

    #[test]
    fn reads_samples_by_name_and_labels() {
        let t = r#"keyspace="ks",table="t""#;
        assert_eq!(value_of(TEXT, "scylla_cdc_rows_total", t), Some(20.0));
        assert_eq!(
            value_of(TEXT, "scylla_cdc_rows_total", r#"table="u""#),
            Some(3.0)
        );
        assert_eq!(value_of(TEXT, "scylla_cdc_lag_seconds", t), Some(1.5));
        assert_eq!(value_of(TEXT, "up", ""), Some(1.0));
        assert_eq!(value_of(TEXT, "scylla_cdc_rows", t), None);
        assert_eq!(
            value_of(TEXT, "scylla_cdc_rows_total", r#"table="v""#),
            None
        );
    }

    #[tokio::test]
    async fn log_lines_finds_a_line_or_lists_them_all() {
        let lines = LogLines::collect(&b"first\nprogress: 3 rows\nlast\n"[..]);
        let found = lines
            .wait_for(Duration::from_secs(5), |l| l.starts_with("progress"))
            .await
            .unwrap();
        assert_eq!(found, "progress: 3 rows");
        let err = lines
            .wait_for(Duration::from_millis(100), |l| l == "absent")
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("first\nprogress: 3 rows\nlast"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn scrape_until_reports_what_it_last_saw() {
        let addr = free_local_port().unwrap();
        let err = scrape_until(addr, Duration::from_millis(300), |_| true)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("no answer"), "{err}");
    }
}
