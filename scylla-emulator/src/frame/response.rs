//! Response encoding: typed [`Response`]s and [`Event`]s become complete frames (header with
//! version `0x84`, the request's stream id, flags, length) appended to a [`BytesMut`], so
//! the server can batch several responses into one socket write.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};

use super::error::CqlError;
use super::extensions::Extensions;
use super::header::{PROTOCOL_VERSION, finish_frame, opcode, start_frame};
use super::result::{
    META_GLOBAL_TABLE_SPEC, META_NO_METADATA, PreparedMetadata, ResultMetadata, count_i32,
    global_table_spec, put_col_specs, put_result_metadata, result_kind,
};
use super::rows::RowsWriter;
use super::wire::{
    put_bytes, put_inet, put_int, put_short, put_short_bytes, put_string, put_string_list,
    put_string_multimap,
};

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
    use crate::frame::header::FLAG_WARNING;

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
}
