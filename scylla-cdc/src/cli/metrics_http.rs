//! `--metrics-addr HOST:PORT`: the metrics the library records (the `metrics` facade) served
//! as Prometheus text on `http://HOST:PORT/metrics`, and the program's health on
//! `http://HOST:PORT/health` ([`super::health`]), for the printer, the replicator and the
//! Kafka program.
//!
//! The recorder is `metrics-exporter-prometheus`'s (from the facade's authors); the HTTP/1.1
//! server is hyper's, a task of the program's runtime. The address is bound when the program
//! starts, so an address in use or not of this machine is a usage error (exit code 2) before
//! anything is read. `GET` (or `HEAD`) `/metrics` and `/health` are answered; another path is
//! `404`, another method `405`. A client has 10 s to send its request's head.

use std::convert::Infallible;
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::header::{ALLOW, CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use tracing::debug;

use crate::cli::{CliError, health};

/// How long a client has to send the head of its request.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// How often the recorder's upkeep runs (histogram buckets; none is recorded today).
const UPKEEP_INTERVAL: Duration = Duration::from_secs(5);

/// clap parser of `--metrics-addr`: `HOST:PORT` (an IP address, `[v6]:PORT`, or a name that
/// resolves, such as `localhost:9180`); the port is required.
pub fn metrics_addr_arg(text: &str) -> Result<SocketAddr, String> {
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    let Some((host, port)) = text.rsplit_once(':') else {
        return Err(format!("`{text}` is not HOST:PORT"));
    };
    if host.is_empty() || port.parse::<u16>().is_err() {
        return Err(format!("`{text}` is not HOST:PORT"));
    }
    text.to_socket_addrs()
        .map_err(|e| format!("`{text}`: {e}"))?
        .next()
        .ok_or_else(|| format!("`{text}` resolves to no address"))
}

/// Starts serving the process's metrics and health on `addr` (must run inside the Tokio
/// runtime; the server is a task of it). Installs the process-wide `metrics` recorder and
/// starts recording the health ([`health`]), so it can be called once per process.
pub fn serve_metrics(addr: SocketAddr) -> Result<(), CliError> {
    let usage = |e: &dyn std::fmt::Display| CliError::usage(format!("--metrics-addr {addr}: {e}"));
    let listener = std::net::TcpListener::bind(addr).map_err(|e| usage(&e))?;
    listener.set_nonblocking(true).map_err(|e| usage(&e))?;
    let listener = tokio::net::TcpListener::from_std(listener).map_err(|e| usage(&e))?;
    let handle = PrometheusBuilder::new()
        .install_recorder()
        .map_err(|e| usage(&e))?;
    health::enable();
    let upkeep = handle.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(UPKEEP_INTERVAL);
        loop {
            tick.tick().await;
            upkeep.run_upkeep();
        }
    });
    tokio::spawn(accept(listener, handle));
    Ok(())
}

/// Serves every connection of `listener`, each in a task of its own.
async fn accept(listener: tokio::net::TcpListener, metrics: PrometheusHandle) {
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of file descriptors, say: the listener stays, a little later.
                debug!(error = %e, "--metrics-addr: accepting a connection failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let metrics = metrics.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let metrics = metrics.clone();
                async move { Ok::<_, Infallible>(answer(&request, &metrics)) }
            });
            let served = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service)
                .await;
            if let Err(e) = served {
                debug!(%peer, error = %e, "--metrics-addr: a connection failed");
            }
        });
    }
}

/// The answer to one request.
fn answer<B>(request: &Request<B>, metrics: &PrometheusHandle) -> Response<Full<Bytes>> {
    let path = request.uri().path();
    if !matches!(path, "/metrics" | "/health") {
        return text(
            StatusCode::NOT_FOUND,
            "not found: the paths are /metrics and /health\n".into(),
        );
    }
    if request.method() != Method::GET && request.method() != Method::HEAD {
        let mut response = text(
            StatusCode::METHOD_NOT_ALLOWED,
            "only GET and HEAD are served\n".into(),
        );
        response
            .headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    if path == "/metrics" {
        let mut response = text(StatusCode::OK, metrics.render());
        // The text exposition format's content type.
        response.headers_mut().insert(
            CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        );
        return response;
    }
    let report = health::report();
    let status = StatusCode::from_u16(report.status).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
    let mut response = Response::new(Full::new(Bytes::from(format!("{}\n", report.body))));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// A plain-text answer.
fn text(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_addresses_with_a_port() {
        assert_eq!(
            metrics_addr_arg("127.0.0.1:9180").unwrap(),
            "127.0.0.1:9180".parse().unwrap()
        );
        assert_eq!(
            metrics_addr_arg("[::1]:9180").unwrap(),
            "[::1]:9180".parse().unwrap()
        );
        assert_eq!(metrics_addr_arg("localhost:9180").unwrap().port(), 9180);
        for bad in [
            "127.0.0.1",
            "9180",
            ":9180",
            "127.0.0.1:x",
            "127.0.0.1:70000",
            "",
        ] {
            assert!(metrics_addr_arg(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn answers_metrics_and_health_and_refuses_the_rest() {
        let handle = PrometheusBuilder::new().build_recorder().handle();
        let request = |method: Method, path: &str| {
            Request::builder()
                .method(method)
                .uri(path)
                .body(())
                .unwrap()
        };
        let metrics = answer(&request(Method::GET, "/metrics"), &handle);
        assert_eq!(metrics.status(), StatusCode::OK);
        assert!(
            metrics.headers()[CONTENT_TYPE]
                .to_str()
                .unwrap()
                .starts_with("text/plain; version=0.0.4")
        );
        let health = answer(&request(Method::GET, "/health?verbose=1"), &handle);
        assert_eq!(health.headers()[CONTENT_TYPE], "application/json");
        // Nothing runs in this test process: not yet connected.
        assert_eq!(health.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            answer(&request(Method::GET, "/"), &handle).status(),
            StatusCode::NOT_FOUND
        );
        let post = answer(&request(Method::POST, "/health"), &handle);
        assert_eq!(post.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(post.headers()[ALLOW], "GET, HEAD");
    }

    #[tokio::test]
    async fn an_address_in_use_is_a_usage_error() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = taken.local_addr().unwrap();
        let err = serve_metrics(addr).unwrap_err();
        assert_eq!(err.exit_code(), crate::cli::exit_code::USAGE);
        assert!(err.to_string().contains(&addr.to_string()), "{err}");
    }
}
