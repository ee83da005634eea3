//! `--metrics-addr HOST:PORT`: the metrics the library records (the `metrics` facade) served
//! as Prometheus text on `http://HOST:PORT/metrics`, for the printer and the replicator.
//!
//! The exporter is `metrics-exporter-prometheus` (from the facade's authors). It binds the
//! address when the program starts, so an address in use or not of this machine is a usage
//! error (exit code 2) before anything is read; it then serves every path with the same text.

use std::net::{SocketAddr, ToSocketAddrs};

use metrics_exporter_prometheus::PrometheusBuilder;

use crate::cli::CliError;

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

/// Starts serving the process's metrics on `addr` (must run inside the Tokio runtime; the
/// listener is a task of it). Installs the process-wide `metrics` recorder, so it can be
/// called once per process.
pub fn serve_metrics(addr: SocketAddr) -> Result<(), CliError> {
    PrometheusBuilder::new()
        .with_http_listener(addr)
        .install()
        .map_err(|e| CliError::usage(format!("--metrics-addr {addr}: {e}")))
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

    #[tokio::test]
    async fn an_address_in_use_is_a_usage_error() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = taken.local_addr().unwrap();
        let err = serve_metrics(addr).unwrap_err();
        assert_eq!(err.exit_code(), crate::cli::exit_code::USAGE);
        assert!(err.to_string().contains(&addr.to_string()), "{err}");
    }
}
