//! [`EventRenderer`]: the events of one table's changes, written straight into the
//! record buffers from the precomputed pieces of the table's schemas and envelopes.

use scylla::deserialize::value::DeserializeValue;
use scylla::deserialize::{DeserializationError, FrameSlice, TypeCheckError};
use scylla::frame::response::result::ColumnType;
use scylla::value::CqlValue;
use scylla_cdc::{Change, ChangeRow, OperationType, RowChange, Target};

use super::options::{EventOptions, ImageMode, OutputFormat};
use super::schema::{self, Connect};
use super::table::{Role, TableInfo};
use super::value::{self, Plan};
use super::{Event, SchemaMismatch, json};

/// One column of the table, in the log's order.
#[derive(Debug)]
struct Col {
    name: String,
    /// `"name":`.
    json_key: Vec<u8>,
    role: Role,
    plan: Plan,
    /// In the legacy format's structs (a native type).
    legacy: bool,
    /// A non-frozen collection or UDT (it has `cdc$deleted_elements_`).
    non_frozen: bool,
}

/// The values of one log row (or snapshot row), by column, decoded once.
#[derive(Debug, Default)]
struct Image {
    vals: Vec<Option<CqlValue>>,
}

impl Image {
    fn get(&self, i: usize) -> Option<&CqlValue> {
        self.vals.get(i).and_then(Option::as_ref)
    }
}

/// The connector's operation of an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Create,
    Update,
    Delete,
    Read,
}

impl Op {
    fn code(self) -> &'static [u8] {
        match self {
            Op::Create => b"c",
            Op::Update => b"u",
            Op::Delete => b"d",
            Op::Read => b"r",
        }
    }

    /// The event of a delta row (`ScyllaChangeRecordEmitter.getOperation`).
    fn of(op: OperationType) -> Option<Op> {
        match op {
            OperationType::RowInsert => Some(Op::Create),
            OperationType::RowUpdate => Some(Op::Update),
            OperationType::RowDelete | OperationType::PartitionDelete => Some(Op::Delete),
            _ => None,
        }
    }
}

/// The times of an event: the change's (source) and the processing time.
#[derive(Debug, Clone, Copy)]
struct Times {
    source_ms: i64,
    source_us: i64,
    source_ns: i64,
    snapshot: bool,
    processed_ms: i64,
}

impl Times {
    fn of_change(change: &Change, processed_ms: i64) -> Times {
        // scylla-cdc-java's `ChangeTime`: microseconds from the timeuuid, milliseconds by
        // truncating division, and Debezium's nanoseconds from that millisecond `Instant`.
        let source_us = change.timestamp_micros();
        let source_ms = source_us / 1000;
        Times {
            source_ms,
            source_us,
            source_ns: source_ms.wrapping_mul(1_000_000),
            snapshot: false,
            processed_ms,
        }
    }

    fn of_snapshot(ms: i64) -> Times {
        Times {
            source_ms: ms,
            source_us: ms.wrapping_mul(1000),
            source_ns: ms.wrapping_mul(1_000_000),
            snapshot: true,
            processed_ms: ms,
        }
    }
}

/// What a `before` or `after` field holds.
#[derive(Clone, Copy)]
enum Part<'a> {
    Null,
    /// Every field from one image (the connector's `fillStructWithFullImage`).
    Full(&'a Image),
    /// The key and the modified columns from one image (`fillStructWithOnlyUpdatedColumns`).
    OnlyUpdated(&'a Image),
    /// The modified columns from the pre-image, the others from the post-image
    /// (`fillBeforeStructForUpdate`).
    Merged {
        pre: &'a Image,
        post: &'a Image,
    },
    /// Legacy: key columns plain, the others as `Cell`s (`fillStructWithChange`).
    Cells(&'a Image),
    /// Legacy snapshot row: every column given is known (a `Cell`, possibly of null).
    KnownCells(&'a Image),
}

/// Renders the events of one table's changes, in the connector's format.
///
/// Built once per table (and per set of options): the schemas' JSON and the constant parts
/// of the envelope are computed by [`EventRenderer::new`]; rendering a change writes each
/// record straight into its buffer.
#[derive(Debug)]
pub struct EventRenderer {
    opts: EventOptions,
    keyspace: String,
    table: String,
    has_ck: bool,
    cols: Vec<Col>,
    /// The key struct's fields (indexes into `cols`).
    key_fields: Vec<usize>,
    before_fields: Vec<usize>,
    after_fields: Vec<usize>,
    /// The clustering columns in key order (a range deletion's bounds).
    clustering: Vec<usize>,
    /// `{"schema":<key schema>,"payload":` (empty without schemas).
    key_prefix: Vec<u8>,
    /// `{"schema":<value schema>,"payload":` (empty without schemas).
    value_prefix: Vec<u8>,
    /// `{"source":{"version":…,"connector":"scylla","name":…,"ts_ms":`
    source_head: Vec<u8>,
    /// `,"db":…,"sequence":null,"ts_us":`
    source_db: Vec<u8>,
    /// `,"keyspace_name":…,"table_name":…}`
    source_tail: Vec<u8>,
    /// `,"<payload key name>":`
    payload_key: Vec<u8>,
    /// Scratch images: pre-image, post-image, delta.
    pre: Image,
    post: Image,
    delta: Image,
    /// `cdc$deleted_` of the delta's columns (legacy), and the modified columns (advanced).
    flags: Vec<bool>,
    /// The sizes of the last key and value, to size the next buffers.
    key_len: usize,
    value_len: usize,
}

impl EventRenderer {
    /// A renderer of `table`'s changes. The options are taken as they are (see
    /// [`EventOptions::validate`] for the checks the connector makes): with the legacy
    /// format, `after` and the key placement are ignored.
    pub fn new(table: TableInfo, options: EventOptions) -> Self {
        let mut opts = options;
        if opts.format == OutputFormat::Legacy {
            opts.after = ImageMode::None;
            opts.key_placement = super::KeyPlacement::default();
        }
        let legacy = opts.format == OutputFormat::Legacy;
        let cols: Vec<Col> = table
            .log_order()
            .into_iter()
            .map(|(c, role)| Col {
                name: c.name.clone(),
                json_key: value::json_key(&c.name),
                role,
                plan: Plan::of(&c.typ),
                legacy: schema::legacy_supported(&c.typ),
                non_frozen: matches!(
                    c.typ,
                    ColumnType::Collection { frozen: false, .. }
                        | ColumnType::UserDefinedType { frozen: false, .. }
                ),
            })
            .collect();
        let types: Vec<&ColumnType<'static>> =
            table.log_order().into_iter().map(|(c, _)| &c.typ).collect();
        let logical = format!("{}.{}.{}", opts.connector_name, table.keyspace, table.table);
        let prefix = format!("{}.", schema::adjust_name(&logical));
        let cols_ref = &cols;
        let is = |role: Role| move |i: &usize| cols_ref[*i].role == role;
        let all: Vec<usize> = (0..cols.len()).collect();
        let (key_fields, before_fields, after_fields) = if legacy {
            // `ScyllaSchemaLegacy`: key columns in log order; every supported column.
            let key: Vec<usize> = all
                .iter()
                .copied()
                .filter(|&i| cols[i].role.is_key() && cols[i].legacy)
                .collect();
            let row: Vec<usize> = all.iter().copied().filter(|&i| cols[i].legacy).collect();
            (key, row.clone(), row)
        } else {
            // `ScyllaSchema.computeKeySchema`: partition key columns, then clustering ones.
            let key: Vec<usize> = all
                .iter()
                .copied()
                .filter(is(Role::Partition))
                .chain(all.iter().copied().filter(is(Role::Clustering)))
                .collect();
            let row = |with_pk: bool| -> Vec<usize> {
                all.iter()
                    .copied()
                    .filter(|&i| with_pk || !cols[i].role.is_key())
                    .collect()
            };
            (
                key,
                row(opts.key_placement.payload_before),
                row(opts.key_placement.payload_after),
            )
        };
        let clustering: Vec<usize> = table
            .clustering_key
            .iter()
            .filter_map(|c| cols.iter().position(|x| x.name == c.name))
            .collect();

        // Schemas.
        let key_name = format!("{prefix}Key");
        let key_schema = Connect::Struct {
            name: Some(key_name),
            version: None,
            fields: key_fields
                .iter()
                .map(|&i| (cols[i].name.clone(), schema::column_schema(types[i], "")))
                .collect(),
            optional: false,
        };
        let row_schema = |fields: &[usize], suffix: &str| -> Connect {
            Connect::Struct {
                name: Some(format!("{prefix}{suffix}")),
                version: None,
                fields: fields
                    .iter()
                    .map(|&i| {
                        let c = &cols[i];
                        let s = if legacy {
                            match (c.role.is_key(), types[i]) {
                                (true, t) => schema::column_schema(t, ""),
                                (false, ColumnType::Native(n)) => Connect::Struct {
                                    name: Some(format!(
                                        "{}.Cell",
                                        schema::adjust_name(&format!("{logical}.{}", c.name))
                                    )),
                                    version: None,
                                    fields: vec![("value".to_owned(), schema::native_schema(n))],
                                    optional: true,
                                },
                                (false, t) => schema::column_schema(t, &prefix),
                            }
                        } else if c.role.is_key() {
                            schema::column_schema(types[i], "")
                        } else {
                            schema::column_schema(types[i], &prefix)
                        };
                        (c.name.clone(), s)
                    })
                    .collect(),
                optional: true,
            }
        };
        let payload_key = (!legacy && opts.key_placement.payload_key)
            .then(|| (opts.payload_key_name.as_str(), key_schema.clone()));
        let envelope = schema::envelope_schema(
            schema::adjust_name(&format!("{logical}.Envelope")),
            row_schema(&before_fields, "Before"),
            row_schema(&after_fields, "After"),
            payload_key,
        );
        let prefix_of = |s: &Connect| -> Vec<u8> {
            if !opts.schemas {
                return Vec::new();
            }
            let mut out = b"{\"schema\":".to_vec();
            s.write(&mut out, None);
            out.extend_from_slice(b",\"payload\":");
            out
        };
        let key_prefix = prefix_of(&key_schema);
        let value_prefix = prefix_of(&envelope);

        let mut source_head = b"{\"source\":{\"version\":".to_vec();
        json::string(&mut source_head, &opts.source_version);
        source_head.extend_from_slice(b",\"connector\":\"scylla\",\"name\":");
        json::string(&mut source_head, &opts.connector_name);
        source_head.extend_from_slice(b",\"ts_ms\":");
        let mut source_db = b",\"db\":".to_vec();
        json::string(&mut source_db, &table.keyspace);
        source_db.extend_from_slice(b",\"sequence\":null,\"ts_us\":");
        let mut source_tail = b",\"keyspace_name\":".to_vec();
        json::string(&mut source_tail, &table.keyspace);
        source_tail.extend_from_slice(b",\"table_name\":");
        json::string(&mut source_tail, &table.table);
        source_tail.push(b'}');
        let mut payload_key = b",".to_vec();
        payload_key.extend_from_slice(&value::json_key(&opts.payload_key_name));

        let n = cols.len();
        EventRenderer {
            has_ck: table.has_clustering_key(),
            keyspace: table.keyspace,
            table: table.table,
            opts,
            cols,
            key_fields,
            before_fields,
            after_fields,
            clustering,
            key_prefix,
            value_prefix,
            source_head,
            source_db,
            source_tail,
            payload_key,
            pre: Image::default(),
            post: Image::default(),
            delta: Image::default(),
            flags: vec![false; n],
            key_len: 64,
            value_len: 256,
        }
    }

    /// `<keyspace>.<table>`: the topic is `<prefix>.<keyspace>.<table>`, as the connector
    /// names it (`topic.prefix` and the table).
    pub fn topic_suffix(&self) -> String {
        format!("{}.{}", self.keyspace, self.table)
    }

    /// The options the renderer uses.
    pub fn options(&self) -> &EventOptions {
        &self.opts
    }

    /// The JSON schema of the records' keys (`JsonConverter`'s `schema` part).
    pub fn key_schema_json(&self) -> Option<&[u8]> {
        schema_part(&self.key_prefix)
    }

    /// The JSON schema of the records' values (`JsonConverter`'s `schema` part).
    pub fn value_schema_json(&self) -> Option<&[u8]> {
        schema_part(&self.value_prefix)
    }

    /// The events of one change, appended to `out` in publishing order: per row the change
    /// touches (in the order of its delta rows), its event, then a tombstone after a
    /// deletion when [`EventOptions::tombstones`] is on. `processed_at_ms` is the value's
    /// top-level `ts_ms` (when the change was processed, milliseconds since the epoch).
    ///
    /// A change whose columns differ from the renderer's table (the table was altered)
    /// fails with a [`SchemaMismatch`] (in the `anyhow::Error`): make a renderer from the
    /// table's new schema and render the change again.
    pub fn render_change(
        &mut self,
        change: &Change,
        processed_at_ms: i64,
        out: &mut Vec<Event>,
    ) -> anyhow::Result<()> {
        self.check_columns(change)?;
        let times = Times::of_change(change, processed_at_ms);
        let rows = change.row_changes();
        for rc in &rows {
            let Some(first) = rc.deltas().first().copied() else {
                // A lone image (its row's delta is a partition deletion: see below).
                continue;
            };
            match rc.target() {
                Target::Row => self.row_events(change, rc, rc.pre_image(), &times, out)?,
                Target::Partition if !self.has_ck => {
                    // Without a clustering key a partition deletion deletes the only row,
                    // and the connector takes it for a row deletion. Its pre-image (Scylla
                    // 2026.1 writes one) is a group of its own: images join row groups.
                    let pre = match rc.pre_image() {
                        Some(p) => Some(p),
                        None => self.lone_pre_image(&rows, &first)?,
                    };
                    self.row_events(change, rc, pre, &times, out)?;
                }
                Target::Partition if self.opts.extended_deletes => {
                    self.extended_delete(change, rc, false, &times, out)?
                }
                Target::Range if self.opts.extended_deletes => {
                    self.extended_delete(change, rc, true, &times, out)?
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// A snapshot read (`op: "r"`, `source.snapshot: "true"`) of one existing row, given
    /// as column name and value (`None`: null). Columns not given are unknown: `null` (in
    /// the legacy format, a column given as null is `{"value": null}`, one not given
    /// `null`). The partition key must be given; a column the table does not have is a
    /// [`SchemaMismatch`]. `snapshot_ms` is the read's time: `source.ts_ms` and `ts_ms`.
    pub fn render_snapshot_row(
        &mut self,
        row: &[(&str, Option<&CqlValue>)],
        snapshot_ms: i64,
        out: &mut Vec<Event>,
    ) -> anyhow::Result<()> {
        let mut image = std::mem::take(&mut self.post);
        image.vals.clear();
        image.vals.resize(self.cols.len(), None);
        let known = &mut self.flags;
        known.iter_mut().for_each(|k| *k = false);
        for (i, (name, v)) in row.iter().enumerate() {
            let at = match self.cols.get(i) {
                Some(c) if c.name == *name => Some(i),
                _ => self.cols.iter().position(|c| c.name == *name),
            };
            let Some(at) = at else {
                self.post = image;
                return Err(SchemaMismatch::new(
                    &self.keyspace,
                    &self.table,
                    format!("the row has a column {name} the table does not"),
                )
                .into());
            };
            image.vals[at] = v.cloned();
            known[at] = true;
        }
        if let Some(missing) = self
            .cols
            .iter()
            .enumerate()
            .find(|(i, c)| c.role == Role::Partition && image.vals[*i].is_none())
        {
            let name = missing.1.name.clone();
            self.post = image;
            anyhow::bail!(
                "snapshot row of {}.{} without its partition key column {name}",
                self.keyspace,
                self.table
            );
        }
        let times = Times::of_snapshot(snapshot_ms);
        let legacy = self.opts.format == OutputFormat::Legacy;
        let key = self.key_record(&image);
        let mut headers = self.key_headers(&image);
        if self.opts.scylla_headers && self.is_static_image(&image) {
            headers.push(("scylla.target".to_owned(), b"static-row".to_vec()));
        }
        let after = if legacy {
            Part::KnownCells(&image)
        } else {
            Part::Full(&image)
        };
        let value = self.value_record(Op::Read, Part::Null, after, Some(&image), &times, true);
        out.push(Event {
            key,
            value: Some(value),
            headers,
        });
        self.post = image;
        Ok(())
    }

    /// Fails with a [`SchemaMismatch`] when the change's columns are not the table's.
    fn check_columns(&self, change: &Change) -> anyhow::Result<()> {
        let Some(row) = change.rows().next() else {
            return Ok(());
        };
        let mut n = 0;
        for (i, name) in row.get_non_cdc_column_names().enumerate() {
            n += 1;
            let known = match self.cols.get(i) {
                Some(c) if c.name == name => true,
                _ => self.cols.iter().any(|c| c.name == name),
            };
            if !known {
                return Err(SchemaMismatch::new(
                    &self.keyspace,
                    &self.table,
                    format!("the change has a column {name} the table does not"),
                )
                .into());
            }
        }
        if n != self.cols.len() {
            return Err(SchemaMismatch::new(
                &self.keyspace,
                &self.table,
                format!("the change has {n} columns, the table {}", self.cols.len()),
            )
            .into());
        }
        Ok(())
    }

    /// The pre-image of the partition deletion `delta` (a table without clustering key),
    /// grouped alone by [`Change::row_changes`].
    fn lone_pre_image<'c>(
        &self,
        rows: &[RowChange<'c>],
        delta: &ChangeRow<'c>,
    ) -> anyhow::Result<Option<ChangeRow<'c>>> {
        for rc in rows {
            if !rc.deltas().is_empty() {
                continue;
            }
            let Some(pre) = rc.pre_image() else { continue };
            let mut same = true;
            for c in self.cols.iter().filter(|c| c.role == Role::Partition) {
                if pre.get_value(&c.name)? != delta.get_value(&c.name)? {
                    same = false;
                    break;
                }
            }
            if same {
                return Ok(Some(pre));
            }
        }
        Ok(None)
    }

    /// Decodes every column of `row` into `image` (in the legacy format, only the columns
    /// it has).
    fn load(&self, row: &ChangeRow<'_>, image: &mut Image) -> anyhow::Result<()> {
        let legacy = self.opts.format == OutputFormat::Legacy;
        row.with_cells_located(|row| {
            image.vals.clear();
            for c in &self.cols {
                image.vals.push(if c.legacy || !legacy {
                    self.get(row, &c.name)?
                } else {
                    None
                });
            }
            Ok(())
        })
    }

    /// The legacy format's [`Self::load`] of a delta row, and `deleted` set to the non-key
    /// columns whose `cdc$deleted_` is true.
    fn load_with_deleted(
        &self,
        row: &ChangeRow<'_>,
        image: &mut Image,
        deleted: &mut [bool],
    ) -> anyhow::Result<()> {
        row.with_cells_located(|row| {
            image.vals.clear();
            for (c, flag) in self.cols.iter().zip(deleted.iter_mut()) {
                if !c.legacy {
                    image.vals.push(None);
                    *flag = false;
                    continue;
                }
                image.vals.push(self.get(row, &c.name)?);
                *flag = !c.role.is_key() && row.is_value_deleted(&c.name);
            }
            Ok(())
        })
    }

    /// Decodes the key columns of `row` into `image` (the others null).
    fn load_key(&self, row: &ChangeRow<'_>, image: &mut Image) -> anyhow::Result<()> {
        image.vals.clear();
        for c in &self.cols {
            image.vals.push(if c.role.is_key() {
                self.get(row, &c.name)?
            } else {
                None
            });
        }
        Ok(())
    }

    fn get(&self, row: &ChangeRow<'_>, name: &str) -> anyhow::Result<Option<CqlValue>> {
        row.get_value(name).map_err(|e| match e {
            scylla_cdc::ColumnError::NoSuchColumn(_) => SchemaMismatch::new(
                &self.keyspace,
                &self.table,
                format!("the change has no column {name}"),
            )
            .into(),
            other => anyhow::Error::from(other).context(format!(
                "decoding column {name} of {}.{}",
                self.keyspace, self.table
            )),
        })
    }

    /// The events of a row (a clustering row, the static row, or the only row of a table
    /// without clustering key).
    fn row_events(
        &mut self,
        change: &Change,
        rc: &RowChange<'_>,
        pre: Option<ChangeRow<'_>>,
        times: &Times,
        out: &mut Vec<Event>,
    ) -> anyhow::Result<()> {
        match self.opts.format {
            OutputFormat::Advanced => self.advanced_row(change, rc, pre, times, out),
            OutputFormat::Legacy => self.legacy_row(change, rc, pre, times, out),
        }
    }

    /// `ScyllaChangeRecordEmitter`: one event per row, `before` and `after` from the images
    /// as the modes say.
    fn advanced_row(
        &mut self,
        change: &Change,
        rc: &RowChange<'_>,
        pre_row: Option<ChangeRow<'_>>,
        times: &Times,
        out: &mut Vec<Event>,
    ) -> anyhow::Result<()> {
        let deltas = rc.deltas();
        let Some(first) = deltas.first() else {
            return Ok(());
        };
        let Some(op) = Op::of(first.operation()) else {
            return Ok(());
        };
        let before_mode = self.opts.before;
        let after_mode = self.opts.after;
        // The images the connector waits for (`TaskInfo`): none in mode `none`, no
        // post-image for a deletion.
        let pre_row = pre_row.filter(|_| before_mode != ImageMode::None);
        let post_row = rc
            .post_image()
            .filter(|_| after_mode != ImageMode::None && op != Op::Delete);
        let mut pre = std::mem::take(&mut self.pre);
        let mut post = std::mem::take(&mut self.post);
        let mut delta = std::mem::take(&mut self.delta);
        let result = (|| -> anyhow::Result<()> {
            if let Some(r) = &pre_row {
                self.load(r, &mut pre)?;
            }
            if let Some(r) = &post_row {
                self.load(r, &mut post)?;
            }
            // The key from any image, else the delta (`TaskInfo.getAnyImage`).
            let key_image: &Image = if post_row.is_some() {
                &post
            } else if pre_row.is_some() {
                &pre
            } else {
                self.load_key(first, &mut delta)?;
                &delta
            };
            if op == Op::Update && (pre_row.is_some() || post_row.is_some()) {
                self.modified_columns(deltas)?;
            }
            let pre_img = pre_row.is_some().then_some(&pre);
            let post_img = post_row.is_some().then_some(&post);
            fn full(img: Option<&Image>) -> Part<'_> {
                img.map_or(Part::Null, Part::Full)
            }
            fn only(img: Option<&Image>) -> Part<'_> {
                img.map_or(Part::Null, Part::OnlyUpdated)
            }
            let (before, after) = match op {
                Op::Create | Op::Read => (full(pre_img), full(post_img)),
                Op::Delete => (full(pre_img), Part::Null),
                Op::Update => {
                    let merged = match (pre_img, post_img) {
                        (None, _) => Part::Null,
                        (Some(p), None) => Part::Full(p),
                        (Some(p), Some(q)) => Part::Merged { pre: p, post: q },
                    };
                    let after = if after_mode == ImageMode::OnlyUpdated {
                        only(post_img)
                    } else {
                        full(post_img)
                    };
                    let before = if before_mode == ImageMode::OnlyUpdated {
                        only(pre_img)
                    } else {
                        merged
                    };
                    (before, after)
                }
            };
            let key = self.key_record(key_image);
            let value = self.value_record(op, before, after, Some(key_image), times, false);
            let mut headers = self.key_headers(key_image);
            self.scylla_headers(change, rc, None, &mut headers);
            self.push(out, op, key, value, headers);
            Ok(())
        })();
        self.pre = pre;
        self.post = post;
        self.delta = delta;
        result
    }

    /// `ScyllaChangeRecordEmitterLegacy`: one event per delta row, its values as `Cell`s;
    /// the pre-image (when on) is the first delta's `before`.
    fn legacy_row(
        &mut self,
        change: &Change,
        rc: &RowChange<'_>,
        pre_row: Option<ChangeRow<'_>>,
        times: &Times,
        out: &mut Vec<Event>,
    ) -> anyhow::Result<()> {
        let pre_row = pre_row.filter(|_| self.opts.before != ImageMode::None);
        let mut pre = std::mem::take(&mut self.pre);
        let mut delta = std::mem::take(&mut self.delta);
        let result = (|| -> anyhow::Result<()> {
            for (i, d) in rc.deltas().iter().enumerate() {
                let Some(op) = Op::of(d.operation()) else {
                    continue;
                };
                let pre_row = pre_row.filter(|_| i == 0);
                let mut flags = std::mem::take(&mut self.flags);
                let loaded = self.load_with_deleted(d, &mut delta, &mut flags);
                self.flags = flags;
                loaded?;
                if let Some(r) = &pre_row {
                    self.load(r, &mut pre)?;
                }
                let pre_img = pre_row.is_some().then_some(&pre);
                let (key_image, before, after, full_ts) = match op {
                    Op::Delete => {
                        let src = pre_img.unwrap_or(&delta);
                        (src, Part::Cells(src), Part::Null, true)
                    }
                    _ => (
                        &delta,
                        pre_img.map_or(Part::Null, Part::Cells),
                        Part::Cells(&delta),
                        pre_img.is_none(),
                    ),
                };
                let key = self.key_record(key_image);
                let value = self.value_record(op, before, after, None, times, full_ts);
                let mut headers = Vec::new();
                self.scylla_headers(change, rc, Some(d), &mut headers);
                self.push(out, op, key, value, headers);
            }
            Ok(())
        })();
        self.pre = pre;
        self.delta = delta;
        result
    }

    /// A deletion the connector drops: a partition deletion in a table with a clustering
    /// key, or a range deletion. A `d` event keyed by the partition key (clustering
    /// columns null), `before` and `after` null (legacy: `before` holds the key, as its
    /// deletions do), described by `scylla.*` headers; a tombstone follows a partition
    /// deletion only.
    fn extended_delete(
        &mut self,
        change: &Change,
        rc: &RowChange<'_>,
        range: bool,
        times: &Times,
        out: &mut Vec<Event>,
    ) -> anyhow::Result<()> {
        let Some(first) = rc.deltas().first().copied() else {
            return Ok(());
        };
        let mut image = std::mem::take(&mut self.delta);
        let result = (|| -> anyhow::Result<()> {
            self.load_key(&first, &mut image)?;
            for (c, v) in self.cols.iter().zip(image.vals.iter_mut()) {
                if c.role == Role::Clustering {
                    *v = None;
                }
            }
            self.flags.iter_mut().for_each(|f| *f = false);
            let legacy = self.opts.format == OutputFormat::Legacy;
            let before = if legacy {
                Part::Cells(&image)
            } else {
                Part::Null
            };
            let key = self.key_record(&image);
            let value =
                self.value_record(Op::Delete, before, Part::Null, Some(&image), times, legacy);
            let mut headers = self.key_headers(&image);
            self.scylla_headers(change, rc, None, &mut headers);
            if range && self.opts.scylla_headers {
                headers.push(("scylla.range".to_owned(), self.range_json(rc)?));
            }
            if range {
                out.push(Event {
                    key,
                    value: Some(value),
                    headers,
                });
            } else {
                self.push(out, Op::Delete, key, value, headers);
            }
            Ok(())
        })();
        self.delta = image;
        result
    }

    /// `{"start":{…},"start_inclusive":…,"end":{…},"end_inclusive":…}`: the bounds' non-null
    /// clustering columns (an unbounded side has none).
    fn range_json(&self, rc: &RowChange<'_>) -> anyhow::Result<Vec<u8>> {
        let mut out = Vec::with_capacity(96);
        let deltas = rc.deltas();
        let mut start: Option<&ChangeRow<'_>> = None;
        let mut end: Option<&ChangeRow<'_>> = None;
        let (mut start_inclusive, mut end_inclusive) = (false, false);
        for d in deltas {
            match d.operation() {
                OperationType::RowRangeDelInclLeft => (start, start_inclusive) = (Some(d), true),
                OperationType::RowRangeDelExclLeft => (start, start_inclusive) = (Some(d), false),
                OperationType::RowRangeDelInclRight => (end, end_inclusive) = (Some(d), true),
                OperationType::RowRangeDelExclRight => (end, end_inclusive) = (Some(d), false),
                _ => {}
            }
        }
        for (i, (name, bound, inclusive)) in [
            ("start", start, start_inclusive),
            ("end", end, end_inclusive),
        ]
        .into_iter()
        .enumerate()
        {
            out.extend_from_slice(if i == 0 { b"{\"" } else { b",\"" });
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b"\":{");
            let mut first = true;
            if let Some(row) = bound {
                for &c in &self.clustering {
                    let col = &self.cols[c];
                    if let Some(v) = self.get(row, &col.name)? {
                        if !first {
                            out.push(b',');
                        }
                        first = false;
                        out.extend_from_slice(&col.json_key);
                        value::write_column(&mut out, Some(&v), &col.plan);
                    }
                }
            }
            out.extend_from_slice(b"},\"");
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(if inclusive {
                b"_inclusive\":true"
            } else {
                b"_inclusive\":false"
            });
        }
        out.push(b'}');
        Ok(out)
    }

    /// Sets `flags` to the columns the deltas modify (`getModifiedColumns`): a non-null
    /// value, `cdc$deleted_` true, or removed elements.
    fn modified_columns(&mut self, deltas: &[ChangeRow<'_>]) -> anyhow::Result<()> {
        let mut flags = std::mem::take(&mut self.flags);
        flags.iter_mut().for_each(|f| *f = false);
        let result = (|| -> anyhow::Result<()> {
            for d in deltas {
                d.with_cells_located(|d| -> anyhow::Result<()> {
                    for (c, flag) in self.cols.iter().zip(flags.iter_mut()) {
                        if c.role.is_key() || *flag {
                            continue;
                        }
                        *flag = d
                            .get_value_as::<Present>(&c.name)
                            .map_err(|e| {
                                anyhow::Error::from(e).context(format!("column {}", c.name))
                            })?
                            .is_some()
                            || d.is_value_deleted(&c.name)
                            || (c.non_frozen
                                && d.collection_exists(&c.name)
                                && d.get_deleted_elements(&c.name)?.is_some());
                    }
                    Ok(())
                })?;
            }
            Ok(())
        })();
        self.flags = flags;
        result
    }

    fn is_static_image(&self, image: &Image) -> bool {
        self.has_ck
            && self
                .cols
                .iter()
                .enumerate()
                .any(|(i, c)| c.role == Role::Clustering && image.get(i).is_none())
    }

    /// The record key: the key struct (`kafka-key`), else with schemas
    /// `{"schema": …, "payload": null}` (the connector's `null` key with its key schema),
    /// else none.
    fn key_record(&mut self, image: &Image) -> Option<Vec<u8>> {
        if !self.opts.key_placement.kafka_key {
            if !self.opts.schemas {
                return None;
            }
            let mut out = Vec::with_capacity(self.key_prefix.len() + 5);
            out.extend_from_slice(&self.key_prefix);
            out.extend_from_slice(b"null}");
            return Some(out);
        }
        let mut out = Vec::with_capacity(self.key_len + 16);
        out.extend_from_slice(&self.key_prefix);
        self.write_key_struct(&mut out, image);
        if self.opts.schemas {
            out.push(b'}');
        }
        self.key_len = out.len();
        Some(out)
    }

    fn write_key_struct(&self, out: &mut Vec<u8>, image: &Image) {
        self.write_struct(out, &self.key_fields, |i| image.get(i));
    }

    /// `{"a":…,"b":…}` of `fields`, each value from `value_of`.
    fn write_struct<'v>(
        &self,
        out: &mut Vec<u8>,
        fields: &[usize],
        value_of: impl Fn(usize) -> Option<&'v CqlValue>,
    ) {
        out.push(b'{');
        for (n, &i) in fields.iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            let c = &self.cols[i];
            out.extend_from_slice(&c.json_key);
            value::write_column(out, value_of(i), &c.plan);
        }
        out.push(b'}');
    }

    /// A legacy struct: key columns plain, the others `{"value": v}` when the value is
    /// non-null or deleted (`known`), else `null`.
    fn write_cells(&self, out: &mut Vec<u8>, fields: &[usize], image: &Image, known: &[bool]) {
        out.push(b'{');
        for (n, &i) in fields.iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            let c = &self.cols[i];
            out.extend_from_slice(&c.json_key);
            let v = image.get(i);
            if c.role.is_key() {
                value::write_column(out, v, &c.plan);
            } else if !value::renders_null(v, &c.plan) || known.get(i).copied().unwrap_or(false) {
                out.extend_from_slice(b"{\"value\":");
                value::write_column(out, v, &c.plan);
                out.push(b'}');
            } else {
                out.extend_from_slice(b"null");
            }
        }
        out.push(b'}');
    }

    fn write_part(&self, out: &mut Vec<u8>, part: Part<'_>, fields: &[usize]) {
        match part {
            Part::Null => out.extend_from_slice(b"null"),
            Part::Full(img) => self.write_struct(out, fields, |i| img.get(i)),
            Part::OnlyUpdated(img) => self.write_struct(out, fields, |i| {
                if self.cols[i].role.is_key() || self.flags[i] {
                    img.get(i)
                } else {
                    None
                }
            }),
            Part::Merged { pre, post } => self.write_struct(out, fields, |i| {
                if !self.cols[i].role.is_key() && self.flags[i] {
                    pre.get(i)
                } else {
                    post.get(i)
                }
            }),
            Part::Cells(img) | Part::KnownCells(img) => {
                self.write_cells(out, fields, img, &self.flags)
            }
        }
    }

    /// The record value: the envelope (with its schema when schemas are on).
    /// `full_ts`: Debezium's `Envelope.create/update/delete/read` also set the top-level
    /// `ts_us` and `ts_ns`; the connector's own envelope (advanced format, and legacy with
    /// a pre-image) sets `ts_ms` only.
    fn value_record(
        &mut self,
        op: Op,
        before: Part<'_>,
        after: Part<'_>,
        key_image: Option<&Image>,
        times: &Times,
        full_ts: bool,
    ) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.value_len + 64);
        out.extend_from_slice(&self.value_prefix);
        out.extend_from_slice(&self.source_head);
        json::int(&mut out, times.source_ms);
        out.extend_from_slice(if times.snapshot {
            b",\"snapshot\":\"true\""
        } else {
            b",\"snapshot\":\"false\""
        });
        out.extend_from_slice(&self.source_db);
        json::int(&mut out, times.source_us);
        out.extend_from_slice(b",\"ts_ns\":");
        json::int(&mut out, times.source_ns);
        out.extend_from_slice(&self.source_tail);
        out.extend_from_slice(b",\"before\":");
        self.write_part(&mut out, before, &self.before_fields);
        out.extend_from_slice(b",\"after\":");
        self.write_part(&mut out, after, &self.after_fields);
        if self.opts.format == OutputFormat::Advanced && self.opts.key_placement.payload_key {
            out.extend_from_slice(&self.payload_key);
            match key_image {
                Some(img) => self.write_key_struct(&mut out, img),
                None => out.extend_from_slice(b"null"),
            }
        }
        out.extend_from_slice(b",\"op\":\"");
        out.extend_from_slice(op.code());
        out.extend_from_slice(b"\",\"ts_ms\":");
        json::int(&mut out, times.processed_ms);
        out.extend_from_slice(b",\"transaction\":null,\"ts_us\":");
        if full_ts {
            json::int(&mut out, times.processed_ms.wrapping_mul(1000));
            out.extend_from_slice(b",\"ts_ns\":");
            json::int(&mut out, times.processed_ms.wrapping_mul(1_000_000));
        } else {
            out.extend_from_slice(b"null,\"ts_ns\":null");
        }
        out.push(b'}');
        if self.opts.schemas {
            out.push(b'}');
        }
        self.value_len = out.len();
        out
    }

    /// `kafka-headers`: `pk.<column>` / `ck.<column>` for each non-null key column, in
    /// the log's column order (`buildPkHeaders`).
    fn key_headers(&self, image: &Image) -> Vec<(String, Vec<u8>)> {
        if !self.opts.key_placement.kafka_headers || self.opts.format == OutputFormat::Legacy {
            return Vec::new();
        }
        let mut headers = Vec::new();
        for (i, c) in self.cols.iter().enumerate() {
            let prefix = match c.role {
                Role::Partition => "pk.",
                Role::Clustering => "ck.",
                _ => continue,
            };
            if let Some(v) = image.get(i).filter(|v| !value::is_null_like(v, &c.plan)) {
                headers.push((
                    format!("{prefix}{}", c.name),
                    value::header_text(v, &c.plan),
                ));
            }
        }
        headers
    }

    /// The `scylla.*` headers of a row's or deletion's event. `delta`: the event is of that
    /// one delta row (the legacy format's event per write), whose own TTL and expiration
    /// the headers give; else of all the row's deltas.
    fn scylla_headers(
        &self,
        change: &Change,
        rc: &RowChange<'_>,
        delta: Option<&ChangeRow<'_>>,
        headers: &mut Vec<(String, Vec<u8>)>,
    ) {
        if !self.opts.scylla_headers {
            return;
        }
        let target: Option<&[u8]> = match rc.target() {
            Target::Partition if self.has_ck => Some(b"partition"),
            Target::Range => Some(b"range"),
            Target::Row if self.has_ck && rc.is_static() => Some(b"static-row"),
            _ => None,
        };
        if let Some(t) = target {
            headers.push(("scylla.target".to_owned(), t.to_vec()));
        }
        let deltas = match delta {
            Some(d) => std::slice::from_ref(d),
            None => rc.deltas(),
        };
        if let Some(ttl) = deltas.iter().find_map(|d| d.ttl()) {
            let mut v = Vec::new();
            json::int(&mut v, ttl);
            headers.push(("scylla.ttl".to_owned(), v));
        }
        if deltas.iter().any(|d| d.is_expiration()) {
            headers.push(("scylla.expiration".to_owned(), b"true".to_vec()));
        }
        if change.is_late() {
            headers.push(("scylla.late".to_owned(), b"true".to_vec()));
        }
    }

    /// Appends an event, then its tombstone after a deletion (Debezium's
    /// `tombstones.on.delete`: the same key and headers, a null value). No tombstone for a
    /// record without key.
    fn push(
        &self,
        out: &mut Vec<Event>,
        op: Op,
        key: Option<Vec<u8>>,
        value: Vec<u8>,
        headers: Vec<(String, Vec<u8>)>,
    ) {
        let tombstone =
            (op == Op::Delete && self.opts.tombstones && key.is_some()).then(|| Event {
                key: key.clone(),
                value: None,
                headers: headers.clone(),
            });
        out.push(Event {
            key,
            value: Some(value),
            headers,
        });
        out.extend(tombstone);
    }
}

/// The schema in a `{"schema":<schema>,"payload":` prefix (none without schemas).
fn schema_part(prefix: &[u8]) -> Option<&[u8]> {
    let end = prefix.len().checked_sub(b",\"payload\":".len())?;
    prefix.get(b"{\"schema\":".len()..end)
}

/// A value's presence, without decoding it.
struct Present;

impl<'f, 'm> DeserializeValue<'f, 'm> for Present {
    fn type_check(_: &ColumnType<'_>) -> Result<(), TypeCheckError> {
        Ok(())
    }

    fn deserialize(
        _: &'m ColumnType<'m>,
        _: Option<FrameSlice<'f>>,
    ) -> Result<Self, DeserializationError> {
        Ok(Present)
    }
}
