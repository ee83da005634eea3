//! Reading a program's Prometheus endpoint in a test, as `curl` and a Prometheus server do:
//! [`scrape`] fetches the text once, [`scrape_until`] waits for a condition on it, and
//! [`value_of`] reads one sample of the text exposition format.

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A loopback address with a port that was free a moment ago, for a program under test to
/// listen on (`--metrics-addr`).
pub fn free_local_port() -> std::io::Result<SocketAddr> {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?.local_addr()
}

/// `GET /metrics` from `addr` (HTTP/1.0, so the body ends when the server closes); the body
/// of a `200` answer, or an error with the status line or the I/O failure.
pub async fn scrape(addr: SocketAddr) -> std::io::Result<String> {
    let mut stream = TcpStream::connect(addr).await?;
    stream
        .write_all(b"GET /metrics HTTP/1.0\r\nAccept: text/plain\r\n\r\n")
        .await?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await?;
    let answer = String::from_utf8_lossy(&answer);
    let (head, body) = answer
        .split_once("\r\n\r\n")
        .ok_or_else(|| std::io::Error::other(format!("not an HTTP answer: {answer:?}")))?;
    let status = head.lines().next().unwrap_or_default();
    if status.split_whitespace().nth(1) != Some("200") {
        return Err(std::io::Error::other(format!("{addr}/metrics: {status}")));
    }
    Ok(body.to_string())
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
    async fn scrape_until_reports_what_it_last_saw() {
        let addr = free_local_port().unwrap();
        let err = scrape_until(addr, Duration::from_millis(300), |_| true)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("no answer"), "{err}");
    }
}
