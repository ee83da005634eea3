//! The embedded cluster through real drivers, raw frames and its binary: one test binary
//! (one link of the workspace) with a module per subject; what they share is in
//! [`support`].

mod cdc_faults;
mod cdc_generations;
mod cdc_log;
mod cdc_preload;
mod describe;
mod driver_cluster;
mod driver_compression;
mod driver_dml;
mod driver_index;
mod driver_json;
mod driver_markers;
mod driver_paging;
mod driver_schema;
mod driver_system_tables;
mod driver_tablets;
mod driver_views;
mod emulator_command_line;
mod emulator_console;
mod protocol;
mod schema_events;
mod support;
mod tls;
