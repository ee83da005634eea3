//! The printer binary, run as a user runs it: one test binary (one link of the workspace)
//! with a module per subject; what they share is in [`support`].

mod change_restart;
mod credentials;
mod expired_gap;
mod health;
mod metrics_addr;
mod support;
