//! The replicator, in-process and as its binary, against embedded clusters: one test binary
//! (one link of the workspace) with a module per subject; what they share is in [`support`].

mod credentials;
mod expired_gap;
mod metrics_addr;
mod snapshot;
mod support;
mod verify;
mod write_footprint;
