//! End-to-end tests across the workspace's crates: the printer and the replicator, in-process
//! and as processes (`e2e-printer`, `e2e-replicator`), and the library's examples as
//! processes (`example-*`), against embedded clusters (or the real ones of `SCYLLA_URI` /
//! `SCYLLA_URI2`) and Apache Cassandra, and the documentation against the code (`docs`,
//! `readme_options`, `newcomer`). One test binary (one link of the workspace) with a
//! module per subject; what they share is in [`support`]. A new file of tests here is a
//! module: add its `mod` line below.

mod chaos;
mod command_line;
mod docs;
mod early_reads;
mod examples;
mod first_contact;
mod groups;
mod newcomer;
mod option_bounds;
mod packaging;
mod printer;
mod program_errors;
mod readme_options;
mod replicator_cassandra;
mod replicator_faults;
mod replicator_matrix;
mod replicator_on_error;
mod replicator_restart;
mod replicator_schema_changes;
mod replicator_statements;
mod replicator_topology;
mod short_pages;
mod startup;
mod startup_faults;
mod support;
mod tls;
