//! The library against a cluster (embedded, or the real Scylla of `SCYLLA_URI`): one test
//! binary (one link of the workspace) with a module per subject; what they share is in
//! [`support`].

mod bad_input;
mod changes;
mod checkpoints;
mod early_reads;
mod error_policy;
mod expiry;
mod faults;
mod grouped_reads;
mod groups;
mod metrics;
mod operations;
mod rate_limit;
mod schema_changes;
mod short_pages;
mod support;
mod tables;
mod topology;
mod typed_decoding;
mod watermark;
