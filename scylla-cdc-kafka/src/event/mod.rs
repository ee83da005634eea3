//! The events published for each change: Kafka record keys and values in the format of
//! ScyllaDB's **scylla-cdc-source-connector** (a Debezium connector for Kafka Connect) as
//! Kafka Connect's `JsonConverter` writes them, so that a consumer of the connector's topics
//! reads ours unchanged. `docs/kafka-events.md` is the user's reference; this is its summary
//! with the sources of each rule.
//!
//! # Topics, keys, values
//!
//! One topic per table, `<prefix>.<keyspace>.<table>` ([`EventRenderer::topic_suffix`] is
//! `<keyspace>.<table>`). With [`EventOptions::schemas`] (the converter's
//! `schemas.enable`, its default) each key and value is `{"schema": …, "payload": …}`,
//! else the payload alone. Records are compact JSON, keys in the schema's field order,
//! every struct field written (a null one as `null`), strings and numbers as Jackson writes
//! them: `JsonConverter` reads our records and writes them back byte for byte
//! (`scylla-cdc-kafka/conformance/RoundTrip.java` on the output of the `dump_events` test).
//!
//! The **key** is a struct of the primary key columns: partition key columns then
//! clustering columns (advanced format, `ScyllaSchema.computeKeySchema`), or all key columns
//! in the log's column order (legacy, `ScyllaSchemaLegacy`), named
//! `<prefix>.<keyspace>.<table>.Key`. The log's column order, which every struct follows,
//! is the order of the column names' bytes.
//!
//! The **value** is Debezium's envelope (`ScyllaSchema`, Debezium 2.7.4 `Envelope`):
//!
//! ```text
//! {"source":{"version":"0.1.0","connector":"scylla","name":"<prefix>","ts_ms":<write ms>,
//!            "snapshot":"false","db":"<ks>","sequence":null,"ts_us":<write µs>,
//!            "ts_ns":<write ms × 10^6>,"keyspace_name":"<ks>","table_name":"<table>"},
//!  "before":{…}|null,"after":{…}|null,["key":{…},]"op":"c|u|d|r","ts_ms":<processing ms>,
//!  "transaction":null,"ts_us":<µs>|null,"ts_ns":<ns>|null}
//! ```
//!
//! `source` is `AbstractSourceInfoStructMaker` (Debezium 2.7.4) plus
//! `ScyllaSourceInfoStructMaker`'s `keyspace_name`/`table_name`; its `ts_us` is the
//! write's microseconds (the `cdc$time` timeuuid), `ts_ms` those truncated to milliseconds,
//! `ts_ns` that millisecond times 10^6 (Debezium's from the millisecond `Instant`);
//! `version` is this crate's version (the connector writes its own). The top-level
//! `ts_us`/`ts_ns` are the processing time in the legacy format without a pre-image
//! (Debezium's `Envelope.create/update/delete`) and in snapshot reads, `null` otherwise
//! (the connector's own envelope sets `ts_ms` only).
//!
//! # Operations (`ScyllaChangesConsumer`, `ScyllaChangeRecordEmitter`)
//!
//! * An insert is `c`, an update `u` (Scylla logs every static-row write and every column
//!   deletion as an update), a row deletion `d`, followed by a tombstone (same key, null
//!   value) with [`EventOptions::tombstones`] (Debezium's `tombstones.on.delete`).
//! * A partition deletion in a table **without** clustering key deletes its only row: `d`,
//!   as the connector does (`isSinglePartitionDelete`), with its pre-image when Scylla wrote
//!   one.
//! * A change of several rows (a batch, `IN`, a static and a clustering row in one
//!   statement) gives one event per row, in the order of its delta rows (the static row
//!   first). Each row's images are its own (the connector's `RowKey`).
//! * A snapshot read ([`EventRenderer::render_snapshot_row`], Debezium's `Envelope.read`)
//!   is `r`, `after` the row, `source.snapshot` `"true"`, no tombstone.
//!
//! # `before` and `after`
//!
//! **Advanced** format ([`OutputFormat::Advanced`]): plain column values (see "Values"
//! below); both structs list every column (the key columns only with `payload-before` /
//! `payload-after` in [`KeyPlacement`]); a column without a value is `null`. As the
//! connector's `TaskInfo` and `emit*Record`:
//!
//! | op | `before` | `after` |
//! |---|---|---|
//! | `c` | the pre-image (inserting over a live row), else `null` | the post-image |
//! | `u`, [`ImageMode::Full`] | the post-image's columns with the modified ones from the pre-image (the pre-image alone without post-images) | the post-image |
//! | `u`, [`ImageMode::OnlyUpdated`] | the key and the modified columns from the pre-image, others `null` | same from the post-image |
//! | `d` | the pre-image | `null` |
//!
//! A field whose mode is [`ImageMode::None`], or whose image Scylla did not write (the
//! table logs none, or the row did not exist), is `null`. "Modified" columns are those the
//! change's delta rows set, deleted or removed elements from (`getModifiedColumns`).
//!
//! **Legacy** format ([`OutputFormat::Legacy`], the connector's default): `after` is the
//! delta row itself: key columns plain, every other column `{"value": v}` when the change
//! set it (`{"value": null}` when it deleted it) and `null` when it did not touch it (the
//! `Cell` struct, `<prefix>.<ks>.<table>.<column>.Cell`). Collections, UDTs, tuples and
//! vectors are not in the legacy structs (`isSupportedColumnSchema`), nor in its key. With
//! pre-images on (`before` not [`ImageMode::None`]: the connector's
//! `experimental.preimages.enabled`), `before` is the pre-image in the same form. A
//! deletion's `before` is its pre-image, else the delta row (the key, the rest `null`).
//!
//! # Values (`translateFieldToKafka`, `computeColumnSchema`, then `JsonConverter`)
//!
//! Numbers as numbers (floats as Java prints them),
//! `decimal`/`varint`/`uuid`/`timeuuid`/`inet`/`duration` as strings, `blob` base64,
//! `date` days since the epoch, `time` nanoseconds, `timestamp` milliseconds, lists and
//! sets arrays, maps arrays of `{"key", "value"}`, tuples `{"field_0", …}` and UDTs
//! objects (`null` when all their fields are). Schemas: every column optional; `date` and
//! `timestamp` Connect's `Date`/`Timestamp` logical types; maps' entries, tuples and UDTs
//! named structs `<prefix>.<ks>.<table>.MapEntry_<K>_<V>`, `…Tuple_<T1>_<T2>`,
//! `…UDT_<name>` (without the `<prefix>.<ks>.<table>.` part in key columns).
//!
//! # Beyond the connector
//!
//! Events the connector also publishes have exactly its keys and values; what we add is
//! in Kafka headers, or in events the connector does not publish.
//!
//! * **Partition deletions** in a table with a clustering key and **range deletions**
//!   (the connector drops both), with [`EventOptions::extended_deletes`]: a `d` event
//!   whose key has the partition key and `null` clustering columns, `before` and `after`
//!   `null` (legacy: `before` the key, as its other deletions), header `scylla.target`
//!   `partition` or `range`. A range's bounds are in header `scylla.range`:
//!   `{"start":{"ck":2},"start_inclusive":false,"end":{"ck":5},"end_inclusive":true}`
//!   (each bound's non-null clustering columns; an unbounded side is `{}`). A partition
//!   deletion is followed by a tombstone (with that key, which is also the static row's);
//!   a range deletion is not (its key is not a row's).
//! * **Headers** ([`EventOptions::scylla_headers`]), on the events of a row (and on its
//!   tombstone): `scylla.target` = `static-row` for the static row's events (their key
//!   has `null` clustering columns, as in the connector's); `scylla.ttl` = the TTL in
//!   seconds the write set (`USING TTL`); `scylla.expiration` = `true` for a deletion
//!   Scylla made when a row expired; `scylla.late` = `true` for a change delivered late
//!   (after changes of its stream written later: [`scylla_cdc::Change::is_late`]).
//! * `kafka-headers` ([`KeyLocation::KafkaHeaders`]): `pk.<column>`/`ck.<column>` with
//!   Java's `String.valueOf` of the value as the connector's; a blob (a buffer's address
//!   in Java) is base64 here.
//!
//! # Differences from the connector
//!
//! * A non-frozen list keeps its order (Scylla's element order); the connector re-sorts
//!   the element timeuuids with Java's `UUID.compareTo`, which compares their timestamps'
//!   low 32 bits first, as signed numbers: it misorders elements added on both sides of
//!   one of the moments where those bits change sign (every 3.6 minutes).
//! * An update or deletion whose image is missing (the row did not exist, or the table
//!   does not log that image) is published with that side `null`; the connector waits for
//!   the image and drops the event after its incomplete-task timeout (and refuses to start
//!   when the table does not log the images its modes need: `CdcTableOptionsValidator`,
//!   which also refuses `'preimage': 'full'`; we take both).
//! * A row written twice in one change (statements of one batch with different TTLs) gives
//!   one event in the advanced format (the first delta's operation, every delta's modified
//!   columns, the first delta's `scylla.ttl`); the legacy format gives one per delta row,
//!   as the connector, each with its own delta's `scylla.ttl`.
//! * Without `kafka-key` and without schemas, the connector fails (a null key against its
//!   required key schema); the record key is then null here, and no tombstone follows.
//! * A `vector` column, which the connector cannot handle, is an array.

mod json;
mod options;
mod render;
mod schema;
mod table;
mod value;

#[cfg(test)]
mod tests;

use std::fmt;

pub use options::{EventOptions, ImageMode, KeyLocation, KeyPlacement, OutputFormat};
pub use render::EventRenderer;
pub use table::{ColumnInfo, TableInfo};

/// One Kafka record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The record key (JSON), or `None` for a null key.
    pub key: Option<Vec<u8>>,
    /// The record value (JSON), or `None` for a tombstone.
    pub value: Option<Vec<u8>>,
    /// The record headers, in order: `pk.*`/`ck.*` with [`KeyLocation::KafkaHeaders`], and
    /// the `scylla.*` headers (see the module docs). Empty for most events.
    pub headers: Vec<(String, Vec<u8>)>,
}

impl Event {
    /// Whether the event is a tombstone (a null value).
    pub fn is_tombstone(&self) -> bool {
        self.value.is_none()
    }

    /// The value of a header, if the event has it.
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_slice())
    }
}

/// A change's columns differ from the table the renderer was made for (the table was
/// altered): make a new [`EventRenderer`] from the table's current schema
/// ([`TableInfo::from_session`] after refreshing the metadata) and render the change again.
/// Returned inside an `anyhow::Error` (find it with `downcast_ref`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaMismatch {
    /// `<keyspace>.<table>`.
    pub table: String,
    /// What differs.
    pub detail: String,
}

impl SchemaMismatch {
    fn new(keyspace: &str, table: &str, detail: String) -> SchemaMismatch {
        SchemaMismatch {
            table: format!("{keyspace}.{table}"),
            detail,
        }
    }
}

impl fmt::Display for SchemaMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the columns of {} changed ({}): its events need a renderer of the new schema",
            self.table, self.detail
        )
    }
}

impl std::error::Error for SchemaMismatch {}
