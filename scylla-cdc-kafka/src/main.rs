//! `scylla-cdc-kafka`: publish the changes of ScyllaDB tables to Kafka (see the library docs
//! and `--help`).

use std::process::ExitCode;

/// Runs the publisher with the process arguments and signals; exits with its code.
fn main() -> ExitCode {
    tune_malloc();
    scylla_cdc_kafka::process_main()
}

/// glibc's malloc gives the top of its heap back to the system whenever more than 128 KiB
/// are free there, and the next allocations fault the pages in again: publishing frees and
/// allocates megabytes a second (events, the producer's batches), and that churn was a
/// fifth to a third of the program's CPU time (`scylla-cdc-bench kafka`, transactions, side
/// by side: 5.7-5.9 µs of CPU per change with glibc's defaults, 3.9-4.6 µs with trimming
/// held back; peak RSS +1 to +2 MiB; see scylla-cdc-bench's README). The heap is trimmed
/// only past 64 MiB free, grows 16 MiB at a time, and serves allocations up to 8 MiB (larger
/// ones are mapped on their own, and unmapped when freed).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn tune_malloc() {
    // SAFETY: mallopt only sets parameters of the allocator; it runs first thing, before the
    // program starts a thread or allocates much.
    unsafe {
        libc::mallopt(libc::M_TRIM_THRESHOLD, 64 << 20);
        libc::mallopt(libc::M_TOP_PAD, 16 << 20);
        libc::mallopt(libc::M_MMAP_THRESHOLD, 8 << 20);
    }
}

/// Other allocators keep their own settings.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn tune_malloc() {}
