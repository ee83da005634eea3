//! Response encoding: typed [`Response`]s and [`Event`]s become complete frames (header with
//! version `0x84`, the request's stream id, flags, length) appended to a [`BytesMut`], so
//! the server can batch several responses into one socket write.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};

use crate::types::CqlType;

use super::error::CqlError;
use super::header::{FLAG_WARNING, PROTOCOL_VERSION};
use super::rows::RowsWriter;
use super::wire::{
    put_bytes, put_inet, put_int, put_short, put_short_bytes, put_string, put_string_list,
    put_string_multimap,
};

/// Response opcodes (spec §2.4).
pub(crate) mod opcode {
    /// ERROR
    pub(crate) const ERROR: u8 = 0x00;
    /// READY
    pub(crate) const READY: u8 = 0x02;
    /// AUTHENTICATE
    pub(crate) const AUTHENTICATE: u8 = 0x03;
    /// SUPPORTED
    pub(crate) const SUPPORTED: u8 = 0x06;
    /// RESULT
    pub(crate) const RESULT: u8 = 0x08;
    /// EVENT
    pub(crate) const EVENT: u8 = 0x0C;
    /// AUTH_CHALLENGE
    pub(crate) const AUTH_CHALLENGE: u8 = 0x0E;
    /// AUTH_SUCCESS
    pub(crate) const AUTH_SUCCESS: u8 = 0x10;
}

/// RESULT kinds (spec §4.2.5).
pub(crate) mod result_kind {
    /// Void
    pub(crate) const VOID: i32 = 0x0001;
    /// Rows
    pub(crate) const ROWS: i32 = 0x0002;
    /// Set_keyspace
    pub(crate) const SET_KEYSPACE: i32 = 0x0003;
    /// Prepared
    pub(crate) const PREPARED: i32 = 0x0004;
    /// Schema_change
    pub(crate) const SCHEMA_CHANGE: i32 = 0x0005;
}

/// Metadata flag: one keyspace/table pair for all columns.
pub(crate) const META_GLOBAL_TABLE_SPEC: i32 = 0x0001;
/// Rows metadata flag: more pages follow, a paging state is present.
pub(crate) const META_HAS_MORE_PAGES: i32 = 0x0002;
/// Rows metadata flag: no column specs (asked for with skip-metadata, or PREPARED of a
/// non-SELECT).
pub(crate) const META_NO_METADATA: i32 = 0x0004;

/// The bit Scylla advertises for LWT statements in PREPARED flags
/// (`SCYLLA_LWT_ADD_METADATA_MARK=LWT_OPTIMIZATION_META_BIT_MASK=2147483648`).
pub(crate) const LWT_MARK_MASK: u32 = 0x8000_0000;
/// STARTUP/SUPPORTED key of the LWT metadata mark extension.
pub(crate) const KEY_LWT_ADD_METADATA_MARK: &str = "SCYLLA_LWT_ADD_METADATA_MARK";
/// Parameter name inside the LWT extension's value.
pub(crate) const KEY_LWT_MASK_PARAM: &str = "LWT_OPTIMIZATION_META_BIT_MASK";
/// STARTUP/SUPPORTED key of the rate-limit error extension.
pub(crate) const KEY_RATE_LIMIT_ERROR: &str = "SCYLLA_RATE_LIMIT_ERROR";

/// The Scylla protocol extensions a client negotiated (echoed in STARTUP); they change how
/// some responses are encoded. `Default` is "none", right before STARTUP.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Extensions {
    /// `SCYLLA_LWT_ADD_METADATA_MARK`: the mask to set in PREPARED flags of LWT statements.
    pub lwt_mark: Option<u32>,
    /// `SCYLLA_RATE_LIMIT_ERROR`: rate-limit errors may use their own code.
    pub rate_limit_error: bool,
}

impl Extensions {
    /// The extensions echoed in these STARTUP options. Only these two are understood; the
    /// server never advertises the others (metadata id, tablets), so they are ignored.
    pub(crate) fn from_startup(options: &[(String, String)]) -> Self {
        let mut ext = Extensions::default();
        for (k, v) in options {
            if k == KEY_LWT_ADD_METADATA_MARK {
                let mask = v
                    .split_once('=')
                    .filter(|(name, _)| *name == KEY_LWT_MASK_PARAM)
                    .and_then(|(_, mask)| mask.trim().parse::<u32>().ok())
                    .unwrap_or(LWT_MARK_MASK);
                ext.lwt_mark = Some(mask);
            } else if k == KEY_RATE_LIMIT_ERROR {
                ext.rate_limit_error = true;
            }
        }
        ext
    }
}

/// A column of a result, or a bind variable of a prepared statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ColumnSpec {
    /// Keyspace of the table the column (or variable) belongs to.
    pub keyspace: String,
    /// Table name.
    pub table: String,
    /// Column name, alias, or bind-marker name.
    pub name: String,
    /// CQL type (sent as an `[option]`; `text` is id 0x000D "varchar", as Scylla sends it).
    pub typ: CqlType,
}

impl ColumnSpec {
    /// A column spec.
    pub(crate) fn new(
        keyspace: impl Into<String>,
        table: impl Into<String>,
        name: impl Into<String>,
        typ: CqlType,
    ) -> Self {
        ColumnSpec {
            keyspace: keyspace.into(),
            table: table.into(),
            name: name.into(),
            typ,
        }
    }
}

/// Column specs of a ROWS result (and of the result part of PREPARED).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ResultMetadata {
    /// Columns in result order.
    pub columns: Vec<ColumnSpec>,
}

/// Bind-variable metadata of a PREPARED result.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PreparedMetadata {
    /// Whether the statement is conditional (LWT); flagged only if the client negotiated
    /// the LWT mark.
    pub lwt: bool,
    /// For each partition-key column in key order, the index of the bind variable holding
    /// it; empty unless every partition-key column is bound by `=`.
    pub pk_indexes: Vec<u16>,
    /// Bind variables in marker order.
    pub variables: Vec<ColumnSpec>,
}

/// A PREPARED result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Prepared {
    /// Statement id (MD5 of the statement, identical on every node).
    pub id: Bytes,
    /// Bind variables.
    pub metadata: PreparedMetadata,
    /// Columns a SELECT returns; `None` (NO_METADATA) for other statements, as Scylla does.
    pub result_metadata: Option<ResultMetadata>,
}

/// A fully built ROWS result (convenient for small results; large pages should be
/// streamed with [`RowsWriter`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RowsResult {
    /// Column specs.
    pub metadata: Arc<ResultMetadata>,
    /// Set when more pages follow.
    pub paging_state: Option<Bytes>,
    /// Omit the column specs (the request set skip-metadata).
    pub skip_metadata: bool,
    /// Cells row by row, each row with one cell per column (`None` is null).
    pub rows: Vec<Vec<Option<Bytes>>>,
}

/// CREATED / UPDATED / DROPPED.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum SchemaChangeType {
    /// `CREATED`
    Created,
    /// `UPDATED`
    Updated,
    /// `DROPPED`
    Dropped,
}

impl SchemaChangeType {
    /// Wire spelling.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SchemaChangeType::Created => "CREATED",
            SchemaChangeType::Updated => "UPDATED",
            SchemaChangeType::Dropped => "DROPPED",
        }
    }
}

/// What a schema change touched, with the names its target carries on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SchemaChangeTarget {
    /// `KEYSPACE`
    Keyspace {
        /// Keyspace name.
        keyspace: String,
    },
    /// `TABLE` (also materialized views)
    Table {
        /// Keyspace name.
        keyspace: String,
        /// Table name.
        table: String,
    },
    /// `TYPE`
    Type {
        /// Keyspace name.
        keyspace: String,
        /// Type name.
        name: String,
    },
    /// `FUNCTION`
    #[allow(
        dead_code,
        reason = "spec target; user-defined functions are not supported"
    )]
    Function {
        /// Keyspace name.
        keyspace: String,
        /// Function name.
        name: String,
        /// Argument types (CQL spelling).
        arg_types: Vec<String>,
    },
    /// `AGGREGATE`
    #[allow(
        dead_code,
        reason = "spec target; user-defined aggregates are not supported"
    )]
    Aggregate {
        /// Keyspace name.
        keyspace: String,
        /// Aggregate name.
        name: String,
        /// Argument types (CQL spelling).
        arg_types: Vec<String>,
    },
}

/// A schema change: the body of RESULT Schema_change and of a SCHEMA_CHANGE event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SchemaChange {
    /// Created, updated or dropped.
    pub change: SchemaChangeType,
    /// What changed.
    pub target: SchemaChangeTarget,
}

impl SchemaChange {
    /// Writes change type, target and the target's names (shared by RESULT and EVENT).
    fn put(&self, out: &mut BytesMut) {
        put_string(out, self.change.as_str());
        match &self.target {
            SchemaChangeTarget::Keyspace { keyspace } => {
                put_string(out, "KEYSPACE");
                put_string(out, keyspace);
            }
            SchemaChangeTarget::Table { keyspace, table } => {
                put_string(out, "TABLE");
                put_string(out, keyspace);
                put_string(out, table);
            }
            SchemaChangeTarget::Type { keyspace, name } => {
                put_string(out, "TYPE");
                put_string(out, keyspace);
                put_string(out, name);
            }
            SchemaChangeTarget::Function {
                keyspace,
                name,
                arg_types,
            } => {
                put_string(out, "FUNCTION");
                put_string(out, keyspace);
                put_string(out, name);
                put_string_list(out, arg_types);
            }
            SchemaChangeTarget::Aggregate {
                keyspace,
                name,
                arg_types,
            } => {
                put_string(out, "AGGREGATE");
                put_string(out, keyspace);
                put_string(out, name);
                put_string_list(out, arg_types);
            }
        }
    }
}

/// NEW_NODE / REMOVED_NODE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum TopologyChangeType {
    /// `NEW_NODE`
    NewNode,
    /// `REMOVED_NODE`
    #[allow(
        dead_code,
        reason = "spec event; the cluster can add nodes but not remove them"
    )]
    RemovedNode,
}

/// UP / DOWN.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum StatusChangeType {
    /// `UP`
    Up,
    /// `DOWN`
    Down,
}

/// A pushed event (EVENT frame on stream -1).
// The variants are named after the protocol's event types, which all end in "CHANGE".
#[allow(clippy::enum_variant_names)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Event {
    /// A node joined or left; `addr` is its rpc address and CQL port.
    TopologyChange {
        /// Joined or left.
        change: TopologyChangeType,
        /// The node's rpc address and CQL port.
        addr: SocketAddr,
    },
    /// A node went up or down.
    StatusChange {
        /// Up or down.
        change: StatusChangeType,
        /// The node's rpc address and CQL port.
        addr: SocketAddr,
    },
    /// A schema object changed.
    SchemaChange(SchemaChange),
}

impl Event {
    /// The event type name a client registers for (`TOPOLOGY_CHANGE`, `STATUS_CHANGE`,
    /// `SCHEMA_CHANGE`).
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            Event::TopologyChange { .. } => "TOPOLOGY_CHANGE",
            Event::StatusChange { .. } => "STATUS_CHANGE",
            Event::SchemaChange(_) => "SCHEMA_CHANGE",
        }
    }
}

/// A response to one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Response {
    /// READY (to STARTUP and REGISTER).
    Ready,
    /// SUPPORTED: options in the given order.
    Supported(Vec<(String, Vec<String>)>),
    /// AUTHENTICATE with the authenticator's class name.
    Authenticate(String),
    /// AUTH_SUCCESS with an optional final token.
    AuthSuccess(Option<Bytes>),
    /// AUTH_CHALLENGE with an optional token.
    #[allow(
        dead_code,
        reason = "spec message; PasswordAuthenticator succeeds or fails in one round"
    )]
    AuthChallenge(Option<Bytes>),
    /// ERROR
    Error(CqlError),
    /// RESULT Void
    Void,
    /// RESULT Rows, fully built.
    Rows(RowsResult),
    /// RESULT Set_keyspace
    SetKeyspace(String),
    /// RESULT Prepared
    Prepared(Arc<Prepared>),
    /// RESULT Schema_change
    SchemaChange(SchemaChange),
}

/// Appends a complete response frame for `response` on `stream`.
///
/// `ext` are the extensions negotiated on the connection (LWT mark in PREPARED, rate-limit
/// error code); `warnings`, when not empty, are sent with the warning flag before the body.
pub(crate) fn encode_response(
    out: &mut BytesMut,
    stream: i16,
    ext: &Extensions,
    warnings: &[String],
    response: &Response,
) {
    if let Response::Rows(rows) = response {
        let mut w = RowsWriter::begin_with(
            out,
            stream,
            &rows.metadata,
            rows.paging_state.as_deref(),
            rows.skip_metadata,
            warnings,
        );
        for row in &rows.rows {
            for cell in row {
                w.cell(cell.as_deref());
            }
            w.end_row();
        }
        if w.finish().is_err() {
            // A row whose cell count differs from the metadata: the partial frame was
            // removed; answer with a server error rather than a corrupt frame.
            let err = CqlError::server("Internal error: malformed result rows");
            encode_response(out, stream, ext, warnings, &Response::Error(err));
        }
        return;
    }
    let op = match response {
        Response::Ready => opcode::READY,
        Response::Supported(_) => opcode::SUPPORTED,
        Response::Authenticate(_) => opcode::AUTHENTICATE,
        Response::AuthSuccess(_) => opcode::AUTH_SUCCESS,
        Response::AuthChallenge(_) => opcode::AUTH_CHALLENGE,
        Response::Error(_) => opcode::ERROR,
        Response::Void
        | Response::Rows(_)
        | Response::SetKeyspace(_)
        | Response::Prepared(_)
        | Response::SchemaChange(_) => opcode::RESULT,
    };
    let start = start_frame(out, stream, op, warnings);
    match response {
        Response::Ready => {}
        Response::Supported(options) => put_string_multimap(out, options),
        Response::Authenticate(class) => put_string(out, class),
        Response::AuthSuccess(token) | Response::AuthChallenge(token) => {
            put_bytes(out, token.as_deref())
        }
        Response::Error(err) => err.put_body(out, ext),
        Response::Void => put_int(out, result_kind::VOID),
        Response::Rows(_) => {}
        Response::SetKeyspace(ks) => {
            put_int(out, result_kind::SET_KEYSPACE);
            put_string(out, ks);
        }
        Response::Prepared(p) => {
            put_int(out, result_kind::PREPARED);
            put_prepared(out, p, ext);
        }
        Response::SchemaChange(sc) => {
            put_int(out, result_kind::SCHEMA_CHANGE);
            sc.put(out);
        }
    }
    finish_frame(out, start, PROTOCOL_VERSION);
}

/// Appends a complete EVENT frame (stream -1).
pub(crate) fn encode_event(out: &mut BytesMut, event: &Event) {
    let start = start_frame(out, -1, opcode::EVENT, &[]);
    put_string(out, event.type_name());
    match event {
        Event::TopologyChange { change, addr } => {
            put_string(
                out,
                match change {
                    TopologyChangeType::NewNode => "NEW_NODE",
                    TopologyChangeType::RemovedNode => "REMOVED_NODE",
                },
            );
            put_inet(out, addr);
        }
        Event::StatusChange { change, addr } => {
            put_string(
                out,
                match change {
                    StatusChangeType::Up => "UP",
                    StatusChangeType::Down => "DOWN",
                },
            );
            put_inet(out, addr);
        }
        Event::SchemaChange(sc) => sc.put(out),
    }
    finish_frame(out, start, PROTOCOL_VERSION);
}

/// Writes a v4 response header (length to be patched) and the warnings; returns the
/// frame's start offset for [`finish_frame`].
pub(crate) fn start_frame(out: &mut BytesMut, stream: i16, op: u8, warnings: &[String]) -> usize {
    start_frame_with_version(out, PROTOCOL_VERSION, stream, op, warnings)
}

/// [`start_frame`] for any version: v1/v2 headers are 8 bytes with a one-byte stream id
/// (used only to answer a v1/v2 client that its version is unsupported).
pub(crate) fn start_frame_with_version(
    out: &mut BytesMut,
    version: u8,
    stream: i16,
    op: u8,
    warnings: &[String],
) -> usize {
    let start = out.len();
    let flags = if warnings.is_empty() { 0 } else { FLAG_WARNING };
    out.put_u8(0x80 | version);
    out.put_u8(flags);
    if version <= 2 {
        out.put_i8(i8::try_from(stream).unwrap_or(0));
    } else {
        out.put_i16(stream);
    }
    out.put_u8(op);
    out.put_u32(0);
    if !warnings.is_empty() {
        put_string_list(out, warnings);
    }
    start
}

/// Patches the length of the frame that starts at `start` to cover everything after its
/// header.
pub(crate) fn finish_frame(out: &mut BytesMut, start: usize, version: u8) {
    let header = if version <= 2 { 8 } else { 9 };
    let len_at = start + header - 4;
    let len = out.len().saturating_sub(start + header);
    let len = u32::try_from(len).unwrap_or(u32::MAX);
    if let Some(slot) = out.get_mut(len_at..len_at + 4) {
        slot.copy_from_slice(&len.to_be_bytes());
    }
}

/// Writes a CQL type as an `[option]` (spec §4.2.5.2).
pub(crate) fn put_type(out: &mut BytesMut, typ: &CqlType) {
    let native = |out: &mut BytesMut, id: u16| put_short(out, id);
    match typ {
        CqlType::Ascii => native(out, 0x0001),
        CqlType::Bigint => native(out, 0x0002),
        CqlType::Blob => native(out, 0x0003),
        CqlType::Boolean => native(out, 0x0004),
        CqlType::Counter => native(out, 0x0005),
        CqlType::Decimal => native(out, 0x0006),
        CqlType::Double => native(out, 0x0007),
        CqlType::Float => native(out, 0x0008),
        CqlType::Int => native(out, 0x0009),
        CqlType::Timestamp => native(out, 0x000B),
        CqlType::Uuid => native(out, 0x000C),
        CqlType::Text => native(out, 0x000D),
        CqlType::Varint => native(out, 0x000E),
        CqlType::Timeuuid => native(out, 0x000F),
        CqlType::Inet => native(out, 0x0010),
        CqlType::Date => native(out, 0x0011),
        CqlType::Time => native(out, 0x0012),
        CqlType::Smallint => native(out, 0x0013),
        CqlType::Tinyint => native(out, 0x0014),
        CqlType::Duration => native(out, 0x0015),
        CqlType::List { elem, .. } => {
            put_short(out, 0x0020);
            put_type(out, elem);
        }
        CqlType::Map { key, value, .. } => {
            put_short(out, 0x0021);
            put_type(out, key);
            put_type(out, value);
        }
        CqlType::Set { elem, .. } => {
            put_short(out, 0x0022);
            put_type(out, elem);
        }
        CqlType::Udt { def, .. } => {
            put_short(out, 0x0030);
            put_string(out, &def.keyspace);
            put_string(out, &def.name);
            let n = u16::try_from(def.fields.len()).unwrap_or(u16::MAX);
            put_short(out, n);
            for (name, t) in def.fields.iter().take(usize::from(n)) {
                put_string(out, name);
                put_type(out, t);
            }
        }
        CqlType::Tuple(elems) => {
            put_short(out, 0x0031);
            let n = u16::try_from(elems.len()).unwrap_or(u16::MAX);
            put_short(out, n);
            for t in elems.iter().take(usize::from(n)) {
                put_type(out, t);
            }
        }
    }
}

/// The keyspace/table shared by every column, if there is at least one column and they
/// all share it (then the global-table-spec flag is used, as Cassandra and Scylla do).
fn global_table_spec(columns: &[ColumnSpec]) -> Option<(&str, &str)> {
    let first = columns.first()?;
    columns
        .iter()
        .all(|c| c.keyspace == first.keyspace && c.table == first.table)
        .then_some((first.keyspace.as_str(), first.table.as_str()))
}

/// A count as an `[int]`, saturated (counts never come near `i32::MAX` in practice).
fn count_i32(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// Writes the column specs (after the flags, counts and paging state): the global table
/// spec or a keyspace/table per column, then each name and type.
fn put_col_specs(out: &mut BytesMut, columns: &[ColumnSpec], global: Option<(&str, &str)>) {
    if let Some((ks, table)) = global {
        put_string(out, ks);
        put_string(out, table);
    }
    for c in columns {
        if global.is_none() {
            put_string(out, &c.keyspace);
            put_string(out, &c.table);
        }
        put_string(out, &c.name);
        put_type(out, &c.typ);
    }
}

/// Writes ROWS-style `<metadata>` (flags, column count, paging state, specs).
pub(crate) fn put_result_metadata(
    out: &mut BytesMut,
    meta: &ResultMetadata,
    paging_state: Option<&[u8]>,
    skip_metadata: bool,
) {
    let global = global_table_spec(&meta.columns);
    let mut flags = 0;
    if skip_metadata {
        flags |= META_NO_METADATA;
    } else if global.is_some() {
        flags |= META_GLOBAL_TABLE_SPEC;
    }
    if paging_state.is_some() {
        flags |= META_HAS_MORE_PAGES;
    }
    put_int(out, flags);
    put_int(out, count_i32(meta.columns.len()));
    if let Some(ps) = paging_state {
        put_bytes(out, Some(ps));
    }
    if !skip_metadata {
        put_col_specs(out, &meta.columns, global);
    }
}

/// Writes the body of a Prepared result after its kind: id, variables metadata (with the
/// LWT mark when negotiated), then result metadata or NO_METADATA.
fn put_prepared(out: &mut BytesMut, p: &Prepared, ext: &Extensions) {
    put_short_bytes(out, &p.id);
    let vars = &p.metadata.variables;
    let global = global_table_spec(vars);
    let mut flags: u32 = 0;
    if global.is_some() {
        flags |= META_GLOBAL_TABLE_SPEC as u32;
    }
    if p.metadata.lwt
        && let Some(mask) = ext.lwt_mark
    {
        flags |= mask;
    }
    out.put_u32(flags);
    put_int(out, count_i32(vars.len()));
    put_int(out, count_i32(p.metadata.pk_indexes.len()));
    for &i in &p.metadata.pk_indexes {
        put_short(out, i);
    }
    put_col_specs(out, vars, global);
    match &p.result_metadata {
        Some(meta) => put_result_metadata(out, meta, None, false),
        None => {
            put_int(out, META_NO_METADATA);
            put_int(out, 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_has_response_version_stream_opcode_and_length() {
        let mut out = BytesMut::new();
        encode_response(
            &mut out,
            0x1234,
            &Extensions::default(),
            &[],
            &Response::Ready,
        );
        assert_eq!(&out[..], &[0x84, 0, 0x12, 0x34, 0x02, 0, 0, 0, 0]);
        encode_response(&mut out, 1, &Extensions::default(), &[], &Response::Void);
        assert_eq!(&out[9..], &[0x84, 0, 0, 1, 0x08, 0, 0, 0, 4, 0, 0, 0, 1]);
    }

    #[test]
    fn warnings_set_the_flag_and_precede_the_body() {
        let mut out = BytesMut::new();
        encode_response(
            &mut out,
            3,
            &Extensions::default(),
            &["w".to_string()],
            &Response::Void,
        );
        assert_eq!(out[1], FLAG_WARNING);
        assert_eq!(&out[9..], &[0, 1, 0, 1, b'w', 0, 0, 0, 1]);
        assert_eq!(u32::from_be_bytes([out[5], out[6], out[7], out[8]]), 9);
    }

    #[test]
    fn extensions_come_from_startup_echoes() {
        let opts = vec![
            ("CQL_VERSION".to_string(), "4.0.0".to_string()),
            (
                KEY_LWT_ADD_METADATA_MARK.to_string(),
                "LWT_OPTIMIZATION_META_BIT_MASK=2147483648".to_string(),
            ),
            (KEY_RATE_LIMIT_ERROR.to_string(), String::new()),
        ];
        let ext = Extensions::from_startup(&opts);
        assert_eq!(ext.lwt_mark, Some(0x8000_0000));
        assert!(ext.rate_limit_error);
        assert_eq!(Extensions::from_startup(&opts[..1]), Extensions::default());
        let odd = vec![(KEY_LWT_ADD_METADATA_MARK.to_string(), "x".to_string())];
        assert_eq!(Extensions::from_startup(&odd).lwt_mark, Some(LWT_MARK_MASK));
    }

    #[test]
    fn global_spec_only_when_all_columns_share_a_table() {
        let a = ColumnSpec::new("ks", "t", "a", CqlType::Int);
        let b = ColumnSpec::new("ks", "u", "b", CqlType::Int);
        assert_eq!(
            global_table_spec(&[a.clone(), a.clone()]),
            Some(("ks", "t"))
        );
        assert_eq!(global_table_spec(&[a, b]), None);
        assert_eq!(global_table_spec(&[]), None);
    }

    #[test]
    fn text_is_sent_as_varchar() {
        let mut out = BytesMut::new();
        put_type(&mut out, &CqlType::Text);
        put_type(&mut out, &CqlType::Ascii);
        assert_eq!(&out[..], &[0, 0x0D, 0, 0x01]);
    }
}
