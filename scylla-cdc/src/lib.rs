//! Read the Change Data Capture log of ScyllaDB tables.
//!
//! ScyllaDB writes every change of a CDC-enabled table to a log table,
//! `<table>_scylla_cdc_log`, partitioned by *streams* that change with the cluster's
//! topology (*generations* in vnode keyspaces, *stream sets* in tablet keyspaces). A
//! [`CDCLogReader`] follows those generations, reads the log of every stream in time windows
//! and hands each row to your [`Consumer`] as a [`CDCRow`].
//!
//! ```no_run
//! use std::sync::Arc;
//! use std::time::Duration;
//! use async_trait::async_trait;
//! use scylla::client::session_builder::SessionBuilder;
//! use scylla_cdc::{CDCLogReaderBuilder, CDCRow, Consumer, ConsumerFactory};
//!
//! struct Printer;
//!
//! #[async_trait]
//! impl Consumer for Printer {
//!     async fn consume_cdc(&mut self, row: CDCRow<'_>) -> anyhow::Result<()> {
//!         println!("{} {} v={:?}", row.stream_id, row.operation, row.get_value("v")?);
//!         Ok(())
//!     }
//! }
//!
//! struct PrinterFactory;
//!
//! #[async_trait]
//! impl ConsumerFactory for PrinterFactory {
//!     async fn new_consumer(&self) -> Box<dyn Consumer> {
//!         Box::new(Printer)
//!     }
//! }
//!
//! # async fn run() -> anyhow::Result<()> {
//! let session = Arc::new(SessionBuilder::new().known_node("127.0.0.1:9042").build().await?);
//! let (mut reader, handle) = CDCLogReaderBuilder::new()
//!     .session(session)
//!     .keyspace("ks")
//!     .table_name("t")
//!     .consumer_factory(Arc::new(PrinterFactory))
//!     .window_size(Duration::from_secs(10))
//!     .build()
//!     .await?;
//! // ... later:
//! reader.stop_at(chrono::Utc::now());
//! handle.await?;
//! # Ok(())
//! # }
//! ```
//!
//! # Typed rows
//!
//! [`CDCRow::decode`] fills your own `#[derive(serde::Deserialize)]` struct from a row's
//! base-table columns (a field per column, `Option` for columns a change may leave null);
//! [`decode::from_columns`] does the same for any named CQL values. The [`decode`] module
//! lists the Rust types each CQL type decodes into and explains why serde rather than the
//! driver's `DeserializeRow`. Deletion flags and removed collection elements stay on the row
//! ([`CDCRow::is_value_deleted`], [`CDCRow::get_deleted_elements`], [`Deletions`]).
//!
//! The repository's `docs/tutorial.md` walks from an empty project to a consumer with
//! checkpoints and a test against the embedded cluster of `scylla-emulator`; its
//! program is the `tutorial` example.
//!
//! # Examples
//!
//! The crate's `examples/` are small programs to copy (`cargo run -p scylla-cdc --example
//! <name>`): `first_consumer` (the rows of one table), `typed_changes` (whole
//! changes decoded into a struct), `several_tables` ([`CDCLogReaderBuilder::tables`]),
//! `consumer_group` ([`CDCLogReaderBuilder::group`]), `dead_letters`
//! ([`CDCLogReaderBuilder::on_consumer_error`] into a [`DeadLetterTable`]) and `prometheus` (the
//! metrics below served on `/metrics`), each of these five with `--help`; `tls` and `printer`
//! take their cluster and table as arguments (their first lines say which). The end-to-end tests run
//! `typed_changes`, `several_tables`, `consumer_group`, `dead_letters` and `prometheus` as
//! processes against the embedded cluster; `tls` and `tutorial` have tests of their own.
//!
//! # How reading works
//!
//! The streams of a generation are grouped by the replica (node and shard) that owns them,
//! by the driver's token ring or tablet map, in groups of at most
//! [`CDCLogReaderBuilder::max_partition_key_restrictions_per_query`] streams (100, ScyllaDB's
//! limit on the partition keys of one query); each group is read with one query per window,
//! sent to that shard: 18 queries per window on 3 nodes with 256 vnodes and 2 shards, where
//! one reader per vnode would send 768. Streams the driver cannot place stay in the groups
//! the cluster lists (one per vnode, or one stream of a tablet keyspace).
//!
//! Each stream group has its own task and its own consumer (from the [`ConsumerFactory`]). A
//! group reads windows `[T, U)` with `U = min(T + window_size, now - safety_interval)`: while
//! it lags behind it goes from one window to the next without pausing, so a backlog is caught
//! up as fast as the cluster and the consumer allow; once caught up it sleeps
//! `sleep_interval` between windows, longer while it finds nothing (adaptive polling, up to
//! [`CDCLogReaderBuilder::max_idle_latency`]).
//! Rows are paged, so memory does not grow with the backlog. When a new generation is
//! published, every group finishes the old one up to the new generation's timestamp before
//! the new generation's groups start.
//!
//! # Several tables
//!
//! [`CDCLogReaderBuilder::tables`] reads several tables of one keyspace with one reader
//! ([`CDCLogReaderBuilder::table_name`] is the one-table case). They share the session, the
//! reader's task, the consumer factory, the end, the rate limit and the checkpoint saver; a
//! vnode keyspace's generations and streams are the same for every table, so one poll per
//! sleep interval looks for new generations for all of them (a tablet keyspace has streams
//! per table, polled in the same round). Each table otherwise reads as a reader of it alone
//! would: its own stream groups and consumers (the factory is told the table,
//! [`ConsumerFactory::new_consumer_for_table`]), its own checkpoints (the saver's per-table
//! view, [`CDCCheckpointSaver::for_table`]; a table without saved progress starts at
//! `start_timestamp`), its metrics labelled with it, and its rows saying so
//! ([`CDCRow::table`]). [`CDCLogReader::progress`] gives totals and each table's figures;
//! the low watermark is the least over the tables. The guarantees below hold per table;
//! nothing is promised across tables, and the first error of any table stops the reader.
//!
//! # Consumer groups: several processes share one table
//!
//! Readers built with the same [`CDCLogReaderBuilder::group`] name on the same table divide
//! its units of work (a vnode keyspace: the streams of one vnode; a tablet keyspace: a
//! tablet's stream) among themselves, so that N processes read each change once between them
//! instead of N times. Membership and ownership live in a lease table next to the checkpoint
//! table, and every decision (renew, take over, ask for, hand over, finish a unit) is a
//! lightweight transaction on it: there is no other coordination.
//!
//! - Each member renews all its leases with one conditional batch per
//!   [`CDCLogReaderBuilder::renew_interval`] (default: a third of the
//!   [`CDCLogReaderBuilder::lease_duration`], 10 s) and reads the group's state with one
//!   query: two requests per member per interval, whatever the number of units.
//! - A unit whose lease stays unrenewed for a lease duration (by the observer's own clock;
//!   clocks of the machines need not agree) is taken over and resumed from its checkpoint.
//!   The owner stops reading a unit before that can happen when its renewals fail, so two
//!   members never read one unit at the same time. Each reader checks its leases' deadline
//!   itself before every delivery (one clock read), so neither a hung request of its member
//!   nor a paused process (SIGSTOP, a stall) lets it deliver past its lease.
//! - Lease transactions run at serial consistency SERIAL: a lease keyspace may span data
//!   centres (LOCAL_SERIAL would let members in two of them both take one unit).
//! - Members hold equal shares (± 1). A joining member asks the others, which finish their
//!   window, save the checkpoint and hand the unit over; a member that stops finishes its
//!   windows (renewing its leases meanwhile) and hands its units back. Neither repeats a
//!   change. After a member dies, the changes its units
//!   delivered after their last checkpoint are delivered again by the new owner: delivery is
//!   at least once, never skipped, in order per partition.
//! - The next generation's units are read once every unit of the current one is done, as
//!   a reader outside a group does.
//!
//! [`Progress::group`] shows the units a member holds; [`ReaderEvent::UnitStarted`] and
//! [`ReaderEvent::UnitStopped`] report each change of ownership. The low watermark of a
//! member covers the units it reads.
//!
//! # Guarantees
//!
//! * **Order**: the rows of one stream are delivered in `(cdc$time, cdc$batch_seq_no)`
//!   order, so all changes of one base partition arrive in write order, each change's rows
//!   (pre-image, deltas, post-image) together. Nothing is promised across streams. (With
//!   early reads, a late change comes after later ones, flagged: see "Early reads".)
//! * **Within one run, exactly once**: transient errors (timeouts, overload, unavailable
//!   replicas, broken connections, a node down) are retried with capped exponential backoff
//!   from the page that failed, and a row at or before the last delivered row of its stream
//!   is never delivered again.
//! * **Across restarts, at least once**: with a [`CDCCheckpointSaver`], each group saves a
//!   [`Checkpoint`] after a window (at most once per `pause_between_saves`, and when it
//!   finishes a generation). A checkpoint at `T` means every row before `T` was consumed.
//!   With progress loading on (the default once a saver is set) each group resumes from its
//!   own checkpoint — even if that is before `start_timestamp` — so rows written while the
//!   reader was down are delivered; rows after the checkpoint may be delivered again. A
//!   group of the resumed generation without a checkpoint starts at that generation's
//!   start, and a saved generation that has ended is followed into the next ones.
//! * **Expired changes are reported**: the log keeps a change for the table's CDC `ttl`
//!   (read from its `cdc` schema extension when the reader is built). A start or a saved
//!   checkpoint older than `now - ttl - safety_interval` (the oldest time the log can still
//!   hold, allowing for the nodes' clocks) starts there instead — never later, so every row
//!   still in the log is delivered — and the gap is reported once per generation as a
//!   [`ReaderEvent::ExpiredGap`] to [`CDCLogReaderBuilder::on_event`], as the gauge
//!   `scylla_cdc_expired_gap_seconds{keyspace, table}` of the `metrics` facade, and as a
//!   `warn!`. With `ttl: 0` nothing expires. Rows that expire while a reader lags more than
//!   the `ttl` behind are not detected.
//! * **Start-up**: [`CDCLogReaderBuilder::build`] retries transient errors of each of its
//!   steps (schema checks, prepares, generation reads, loading saved progress) with the same
//!   backoff, logging a WARN line per retry; only a definite answer (keyspace or table
//!   missing, CDC off, a refused permission) fails it at once.
//!   [`CDCLogReaderBuilder::give_up_after`] bounds how long a request is retried.
//! * **Low watermark**: [`CDCLogReader::low_watermark`] publishes a time `T` such that every
//!   change with `cdc$time <= T`, in every stream of the table and across generations, has
//!   been delivered (each consumer's `consume_cdc` returned `Ok` for it): the least
//!   position of the current generation's stream groups (where each one's next window
//!   starts, or its start before its first window), less a microsecond, never ahead of
//!   `now - safety_interval`. A generation read to its end no longer holds it back. After a
//!   restart it is recomputed from the loaded checkpoints, so it starts at or before the
//!   first row not delivered before.
//! * **Schema changes while reading**: Scylla alters the log table with its base table, so a
//!   column added or dropped while a reader runs, or a changed `preimage`/`postimage`/`ttl`
//!   option, needs nothing from the user: each [`CDCRow`] has the columns of its own page
//!   (rows read after `ALTER TABLE ... DROP c` no longer have `c`, older ones included, as in
//!   Scylla). When CDC is disabled on the table (checked each time the reader looks for a new
//!   generation), the reader delivers every change logged before (allowing the safety
//!   interval for the nodes' clocks) and ends with [`CDCError::CdcDisabled`].
//! * **Errors**: a non-transient query error stops every group; the handle resolves to a
//!   [`CDCError`] naming the stream and window.
//! * **Rows a consumer cannot take**: an error returned by `consume_cdc`, or a panic in it
//!   (caught, never a crash of the process), is handled by the
//!   [`CDCLogReaderBuilder::on_consumer_error`] policy: the row is handed over again a few
//!   times, then the reader stops ([`CDCError::Consumer`] names the table, stream,
//!   `cdc$time` and `cdc$batch_seq_no`; the checkpoint never passes the row), skips it, or
//!   writes it to a dead-letter table ([`DeadLetterTable`]). Default: three retries, then
//!   stop. See [`ConsumerErrorPolicy`].
//! * **Bad data never panics**: a log row without `cdc$stream_id`/`cdc$time`/
//!   `cdc$batch_seq_no`/`cdc$operation`, or with a stream id that is not 16 bytes, is
//!   skipped with a `warn!`; an unknown `cdc$operation` code is delivered as
//!   [`OperationType::Unknown`]; undecodable values are errors of the column accessors.
//!
//! # Early reads: a change within a second of its write
//!
//! Reading stays a safety interval (30 s by default) behind the clock because a log row can
//! become visible after a reader's clock has passed its `cdc$time`: a client or coordinator
//! timestamp behind the reader's clock, clock skew, a slow replica. A reader that reads
//! closer to now loses those *late* rows for good, so every reader delivers a change 30 to
//! 40 s after its write. [`CDCLogReaderBuilder::early_reads`] ([`EarlyReads`]) reads close to
//! now and still delivers every late row, once:
//!
//! * **Early read**: every [`EarlyReads::poll_interval`] (600 ms by default) each stream group
//!   reads the log up to [`EarlyReads::lag`] (100 ms) behind now and delivers what it finds:
//!   a change written on time reaches its consumer about `lag + poll_interval` after its
//!   write (`scylla-cdc-bench latency` measures it).
//! * **Confirmation**: once a window is older than the safety interval, the group reads it
//!   again, keys only (`cdc$stream_id`, `cdc$time`, `cdc$batch_seq_no`), and compares them
//!   with what its early reads delivered, row by row in log order; each change they did not
//!   deliver is read whole and delivered with [`CDCRow::is_late`] and [`Change::is_late`]
//!   set. It runs a sleep interval's worth of windows at a time, so it costs one key query
//!   per group per sleep interval while idle, and whole rows only for late changes.
//! * **Exactly once within a run**: a row is delivered by the early read or by the
//!   confirmation, never both. What the early reads delivered and the confirmation has not
//!   reached is remembered at [`UNCONFIRMED_ROW_BYTES`] (24) bytes a row, up to
//!   [`EarlyReads::max_unconfirmed_rows`] (1 000 000) for the whole reader, checked before
//!   each early window (which spans at most the longer of twice the poll interval and
//!   [`MAX_EARLY_WINDOW`], 1 s): the reader holds at most the cap plus one such window's rows
//!   per stream group. A burst that reaches the cap pauses early reads until confirmations
//!   free room; changes written meanwhile arrive up to a safety interval after their write,
//!   as without early reads, and none is lost or delivered twice.
//! * **Checkpoints and the low watermark follow the confirmed point**: a restart loses
//!   nothing, and the changes between the last checkpoint and the early point may be
//!   delivered again after it, as any change after the last checkpoint. A reader that is
//!   far behind (catching up a backlog) reads windows older than the safety interval once,
//!   as without early reads, and starts reading early once it has caught up.
//! * **Order**: the rows of one stream that arrive on time are delivered in `(cdc$time,
//!   cdc$batch_seq_no)` order, as without early reads, so a partition's on-time changes
//!   arrive in write order. A late change arrives after changes of its partition written
//!   after it, up to a safety interval and a sleep interval after its write, flagged; the
//!   rows of one change are never split between the two reads. A consumer that applies
//!   changes with their write timestamps (the replicator writes every cell `USING
//!   TIMESTAMP` of its source write) ends in the same state whatever the order; one that
//!   needs write order per partition can hold back on `is_late` or keep early reads off.
//! * **Stops**: a group stopped to hand its unit to another member of a consumer group (or
//!   by [`CDCLogReader::stop_at`] before its early point) stops reading early at once and
//!   confirms up to its early point before it saves its checkpoint, so the hand-over repeats
//!   nothing; this takes up to a safety interval. A graceful stop (an end before what the
//!   group has confirmed, as the programs' first SIGTERM sets) waits for that confirmation
//!   only when it comes within [`MAX_STOP_CONFIRMATION`] (30 s): with a longer safety
//!   interval the group saves its confirmed point at once, and the next run delivers the
//!   rows read early after it again. [`CDCLogReader::stop`] stops at once: the next run
//!   resumes from the last checkpoint. After a generation switch, the next
//!   generation is read once the previous one is confirmed to its end (up to a safety
//!   interval later).
//!
//! Early reads are off by default in the library: a reader built as before keeps the
//! guarantee users rely on, every change of a partition in write order, at the cost of the
//! safety interval. The printer and the replicator turn them on by default
//! (`--no-early-reads` turns them off): the printer flags late rows in its output, and the
//! replicator's writes carry their source timestamps, so a late change lands where it
//! belongs.
//!
//! # Whole changes
//!
//! A *change* is every log row of one stream with one `cdc$time`: the pre-images (operation
//! 0), the deltas in `cdc$batch_seq_no` order (a batch or a multi-row statement gives
//! several) and the post-images (operation 9). Instead of a [`ConsumerFactory`], give
//! [`CDCLogReaderBuilder::change_consumer_factory`] a [`ChangeConsumerFactory`]: its
//! [`ChangeConsumer`]s get each [`Change`] once it is complete, never split and never twice
//! in one run, even when its rows straddle a page boundary.
//!
//! * **Assembly**: each stream group copies the rows of the current `(stream, cdc$time)` out
//!   of their page, each row in one piece as the page holds it, into a reference-counted
//!   buffer shared by consecutive changes (16 KiB chunks, or twice a larger change), with the
//!   column names and types shared (one copy per log schema), and delivers the change at the
//!   row with `cdc$end_of_batch = true`, when a row of another `(stream, cdc$time)` arrives,
//!   or at the end of the window. A change a consumer keeps holds its chunk; a chunk whose
//!   changes were all dropped is written again rather than freed, so a consumer that handles
//!   each change and lets it go costs no allocation per change.
//! * **Windows and checkpoints**: windows are `cdc$time` ranges, and every row of a change
//!   has the same `cdc$time`, so a change lies in one window. A checkpoint is saved only at
//!   the end of a window, after its last change was delivered and the consumer flushed: a
//!   restart resumes between two changes, so a change is never split across runs either
//!   (it may be delivered again whole, as rows may).
//! * **What a change holds**: [`Change::pre_images`], [`Change::deltas`],
//!   [`Change::post_images`] (each a [`ChangeRow`] with the accessors of [`CDCRow`]) and
//!   [`Change::row_changes`], one [`RowChange`] per base row touched (the static row apart
//!   from the clustering rows), per range deletion and per partition deletion, with
//!   [`RowChange::before`] and [`RowChange::after`] as [`RowImage`]s. What they hold depends
//!   on the table's `cdc` options:
//!
//!   | options | `before()` | `after()` (not a deletion) |
//!   |---|---|---|
//!   | no images | `None` | key columns and the columns the deltas set (a non-frozen collection the delta only added to: just the added elements) |
//!   | `'preimage': true` | the columns the write touched, as they were (`None` for a new row) | `before()` merged with the deltas |
//!   | `'preimage': 'full'` | every column, as it was (`None` for a new row) | `before()` merged with the deltas: the full row |
//!   | `'postimage': true` | as above | the post-image: the full row |
//!
//!   Deletions (of a row, a range or the partition, or a row in a change that also deletes
//!   its partition) have `after() == None`. Nothing is decoded until `before()`/`after()` or
//!   a value accessor is called, so a consumer that only counts changes pays for the copy
//!   and nothing else. A [`Change`] is cheap to clone (its rows are shared).
//! * **A change a consumer cannot take**: the [`ConsumerErrorPolicy`] applies to whole
//!   changes. A failed change is handed over again whole, then the reader stops
//!   ([`CDCError::Consumer`] names the change's stream, `cdc$time` and its last row's
//!   `cdc$batch_seq_no`), skips the change, or writes it as one [`DeadLetter`] per row, in
//!   order. Its failure is its own wherever it ends — at its `cdc$end_of_batch` row, at the
//!   first row of the next change (Scylla may omit `cdc$end_of_batch`) or at the end of its
//!   window: the next change is delivered whole whatever happened to it.
//!
//! ```no_run
//! use async_trait::async_trait;
//! use scylla_cdc::{Change, ChangeConsumer, ChangeConsumerFactory};
//!
//! struct Print;
//!
//! #[async_trait]
//! impl ChangeConsumer for Print {
//!     async fn consume_change(&mut self, change: Change) -> anyhow::Result<()> {
//!         for row in change.row_changes() {
//!             println!("{:?}: {:?} -> {:?}", row.operation(), row.before()?, row.after()?);
//!         }
//!         Ok(())
//!     }
//! }
//!
//! struct PrintFactory;
//!
//! #[async_trait]
//! impl ChangeConsumerFactory for PrintFactory {
//!     async fn new_consumer(&self) -> Box<dyn ChangeConsumer> {
//!         Box::new(Print)
//!     }
//! }
//! ```
//!
//! # Resources
//!
//! Memory is bounded by the number of stream groups, not by the backlog: a group reads its
//! window in pages of 2,500 log rows and holds the page its consumer is handling, and at most
//! two groups of a reader fetch their next page while their consumer handles the current one
//! (more prefetching added memory and no speed). Column values are decoded only when a
//! consumer asks for them. `scylla-cdc-bench compare` (the repository's benchmark of this
//! reader beside scylla-cdc-rust 0.7 on a backlog of 2 M log rows, one node, a consumer that
//! decodes one column) measured a peak RSS of 12.9 MiB and 0.16 µs of client CPU per row on a
//! 2-core machine, and `--rows 10000 --reps 1` (10 M rows) the same 12.9 MiB. Through the
//! change API, `scylla-cdc-bench reader --api both` measured 1.07× the row API's CPU per row
//! for changes of one row, 1.10× for changes of two (a copy of each row into a shared chunk,
//! one boxed `consume_change` future per change). The benchmarks' README in the repository
//! (`scylla-cdc-bench/README.md`) has the commands, the tables and the conditions.
//!
//! [`CDCLogReaderBuilder::max_rows_per_second`] caps the rows read and delivered per second
//! by the whole reader (default: unlimited): the stream groups share a token bucket, pay for
//! a page's rows in small chunks as they deliver them, and request the next page only once
//! the current one is paid for, so reading from the cluster runs ahead of the cap by at most
//! one page per group.
//!
//! # Metrics and progress
//!
//! The reader records, through the `metrics` facade (the library installs no exporter), per
//! table (labels `keyspace` and `table`): the counters `scylla_cdc_rows_total`,
//! `scylla_cdc_changes_total` (a change is the rows of one stream with one `cdc$time`),
//! `scylla_cdc_windows_total`, `scylla_cdc_retries_total` (label `kind`: `timeout`,
//! `overloaded`, `unavailable`, `connection`, `replica_failure`, `prepare`, `checkpoint` or
//! `other`), `scylla_cdc_consumer_errors_total` (label `outcome`: `retry`, `skip`,
//! `dead_letter` or `stop`, see [`ConsumerErrorPolicy`]) and `scylla_cdc_generation_switches_total`; the gauges
//! `scylla_cdc_streams` (of the generation being read), `scylla_cdc_low_watermark_seconds`
//! (unix time), `scylla_cdc_lag_seconds` (now minus the low watermark) and
//! `scylla_cdc_expired_gap_seconds`. The counters (and the expired gap) are registered when
//! the reader is built, with every value of their labels, so that an exporter shows them at
//! 0 before their first increment (`rate()` needs it). [`CDCLogReader::progress`] returns the
//! same figures as a [`Progress`], and when the reader last moved forward
//! ([`Progress::last_progress`]). The row path stays flat: a stream reader counts rows and changes in
//! local variables, adds them to shared relaxed atomics once per page, and records to the
//! facade once per window, which is also when its watermark position moves (a few map
//! operations under a lock held for no `.await`).
//!
//! # Features
//!
//! * `cli` (off by default): `scylla_cdc::cli`, the command-line toolkit of the printer and the
//!   replicator (argument parsers, exit codes and one-line errors, shutdown on signals, reader
//!   supervision, credentials and TLS, a Prometheus endpoint with a `/health` beside it), for
//!   programs built the same way.
//!
//! The library logs through `tracing` (a span per stream reader with `stream` and
//! `window_start`) and never installs a subscriber.
//!
//! # Layout
//!
//! The source is in folders by layer, lowest first; a file imports only from the layers
//! below its own (and, within a folder, from the files below it), and each folder's `mod.rs`
//! names its files and how they relate:
//!
//! 1. `base/`: stream ids and generation timestamps, time arithmetic, the errors and the
//!    retry of transient ones; `cql_text.rs` (the public [`cql_text`]).
//! 2. `decode/` (the public [`decode`]); `cluster/`: what the cluster says about a table (the
//!    schema checks, its CDC options, its generations and streams, the replicas owning them);
//!    `checkpoints/`: the saver trait and the table-backed saver; `group/`: a consumer
//!    group's lease table and share planner; `report/`: progress, metrics and events.
//! 3. `consumer/`: row consumers, [`CDCRow`] and the reading of a log row.
//! 4. `change/`: whole changes, their assembler and the chunk buffer they live in (the
//!    crate's only `unsafe` code).
//! 5. `stream/`: the stream reader of one stream group, its pages, where its rows go (a row
//!    consumer or the change assembler) and the consumer error policy.
//! 6. `reader/`: the per-table worker, the consumer group member, the reader's task and
//!    handles, and the builder.
//! 7. `cli/` (feature `cli`): the programs' toolkit, built on the public API alone.

mod base;
mod change;
mod checkpoints;
#[cfg(feature = "cli")]
pub mod cli;
mod cluster;
mod consumer;
pub mod cql_text;
pub mod decode;
mod group;
mod reader;
mod report;
mod stream;

pub use base::cdc_types::{GenerationTimestamp, InvalidStreamID, StreamID};
pub use base::error::{
    Backoff, CDCError, ColumnError, StreamList, is_transient, is_transient_prepare,
};
pub use change::{
    Change, ChangeConsumer, ChangeConsumerFactory, ChangeRow, RowChange, RowImage, Target,
};
pub use checkpoints::table::{DEFAULT_CHECKPOINT_TTL, MAX_CQL_TTL, TableBackedCheckpointSaver};
pub use checkpoints::{CDCCheckpointSaver, Checkpoint};
pub use cluster::cdc_options::{CdcExtensionError, decode_cdc_extension};
pub use cluster::replicas::DEFAULT_MAX_PARTITION_KEY_RESTRICTIONS_PER_QUERY;
pub use consumer::operation::OperationType;
pub use consumer::{CDCRow, Consumer, ConsumerFactory};
pub use decode::{DecodeError, Deletions, ListValues};
pub use reader::builder::{
    CDCLogReaderBuilder, DEFAULT_LEASE_DURATION, DEFAULT_PAUSE_BETWEEN_SAVES,
    DEFAULT_SAFETY_INTERVAL, DEFAULT_SLEEP_INTERVAL, DEFAULT_WINDOW_SIZE, MAX_LEASE_DURATION,
    MAX_SLEEP_INTERVAL, MIN_EARLY_POLL_INTERVAL, MIN_RENEW_INTERVAL, MIN_WINDOW_SIZE,
};
pub use reader::worker::MIN_GENERATION_POLL;
pub use reader::{CDCLogReader, CDCReaderHandle, ProgressHandle};
pub use report::events::{ExpiredGap, ReaderEvent, UnitEvent, UnitStopReason};
pub use report::progress::{GroupProgress, Progress, TableProgress};
pub use stream::early::{
    EarlyReads, MAX_EARLY_WINDOW, MAX_STOP_CONFIRMATION, UNCONFIRMED_ROW_BYTES,
};
pub use stream::error_policy::{
    AfterRetries, ConsumerErrorPolicy, DeadLetter, DeadLetterSink, DeadLetterTable, Retry,
    dead_letter_table_name,
};
