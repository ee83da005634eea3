//! The embedded cluster as its users see it: a [`ClusterBuilder`] holds the settings and
//! starts an [`EmbeddedCluster`], whose control API drives the running nodes and reports
//! failures as [`ClusterError`]s. The builder's TLS settings (`tls`) become the acceptor of
//! the TLS ports when the cluster starts; a [`TestCa`] makes the certificates a test needs.
//!
//! - `builder`: [`ClusterBuilder`] and the steps of its start;
//! - `cluster`: [`EmbeddedCluster`], the control API of a running cluster;
//! - `error`: [`ClusterError`];
//! - `tls`: the TLS settings and the acceptor made from them;
//! - `test_certs`: [`TestCa`], certificates made at run time.

mod builder;
mod cluster;
mod error;
mod test_certs;
mod tls;

pub use builder::ClusterBuilder;
pub use cluster::EmbeddedCluster;
pub use error::ClusterError;
pub use test_certs::{TestCa, TestCertError, TestCertificate};
