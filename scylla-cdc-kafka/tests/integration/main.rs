//! Integration tests of `scylla-cdc-kafka` (one test binary): the program against an embedded
//! Scylla-compatible cluster and a real Apache Kafka broker, checked with Kafka's own Java
//! clients; and its command line, which needs neither.

mod command_line;
mod exactly_once;
mod faults;
mod groups;
mod matrix;
mod readback;
mod snapshot;
mod support;
