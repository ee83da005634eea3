//! The CQL native protocol v4 codec: a pure byte layer between the server's sockets and
//! statement execution, with no I/O and no state beyond the negotiated [`Extensions`]
//! (compression codec, Scylla extensions).
//!
//! Inbound, [`try_decode_frame_of`] cuts a [`RequestFrame`] (stream id, opcode, zero-copy body)
//! off the connection's read buffer, or says more bytes are needed, or returns a
//! [`FrameError`](header::FrameError) that knows its stream, its ERROR frame and whether the
//! connection can go on. [`decode_request`] then turns the body into a [`Request`] (QUERY
//! and EXECUTE carry [`QueryParams`] with [`BoundValue`]s, BATCH a [`BatchRequest`]), or the
//! [`CqlError`] Scylla answers the malformed body with (mostly a Protocol error from a
//! [`ProtocolViolation`](wire::ProtocolViolation)).
//!
//! Outbound, [`encode_response`] appends one complete frame for a [`Response`] (READY,
//! SUPPORTED, auth messages, ERROR from a [`CqlError`] with its [`ErrorKind`] fields, and
//! the RESULT kinds: Void, Set_keyspace, [`SchemaChange`], [`Prepared`] with its
//! [`PreparedMetadata`] and [`ResultMetadata`], and small [`RowsResult`]s).
//! [`RowsWriter`] streams large Rows pages straight into the output buffer, and
//! [`encode_event`] writes [`Event`]s on stream -1. Column types are written from
//! [`crate::types::CqlType`]. [`wire`] holds the primitive notations both directions use,
//! and [`Consistency`] the consistency levels. On a connection that negotiated compression,
//! [`compress_frames`] compresses the responses written since a mark, and
//! [`insert_custom_payload`] gives a finished RESULT its `tablets-routing-v1` entry
//! ([`tablets_routing_v1_value`]).
//!
//! The files form layers, lowest first; a file imports only from files on lower layers:
//!
//! 1. `consistency` (consistency levels) and `compression` (the lz4 and snappy body codecs):
//!    no imports from the rest of the module.
//! 2. `extensions`: what STARTUP negotiated ([`Extensions`]: the codec, the Scylla
//!    extensions) and the tablets routing payload.
//! 3. [`wire`]: the primitive notations, read and written, and the
//!    [`ProtocolViolation`](wire::ProtocolViolation) a malformed body is.
//! 4. `error`: [`CqlError`] and its ERROR body.
//! 5. `header`: the frame layout (header, flags, opcodes, body limit) in both directions,
//!    header-level [`FrameError`](header::FrameError)s, decompression of request bodies,
//!    compression and custom payloads of finished response frames.
//! 6. `request` (request bodies) and `result` (column specs, metadata and type writers of
//!    RESULT bodies).
//! 7. `rows`: the streaming [`RowsWriter`].
//! 8. `response`: [`Response`]s and [`Event`]s as complete frames.
//!
//! The tests (`fuzz_tests`, `oracle_tests`) sit on top and may use everything.
//!
//! A server loop looks like:
//!
//! ```text
//! loop {
//!     let mark = out.len();
//!     match frame::try_decode_frame_of(&mut read_buf, first_frame, ext.compression) {
//!         Ok(None) => { /* read more */ }
//!         Ok(Some(f)) => match frame::decode_request(f.opcode, f.body) {
//!             Ok(req) => { /* execute, then encode_response(&mut out, f.stream, &ext, &[], &resp) */ }
//!             Err(e) => frame::encode_response(&mut out, f.stream, &ext, &[],
//!                           &Response::Error(e)),
//!         },
//!         Err(e) => { e.write_response(&mut out); if !e.can_continue() { /* flush, close */ } }
//!     }
//!     if let Some(codec) = ext.compression { frame::compress_frames(&mut out, mark, codec) }
//! }
//! ```

mod compression;
mod consistency;
mod error;
mod extensions;
mod header;
mod request;
mod response;
mod result;
mod rows;
pub(crate) mod wire;

#[cfg(test)]
mod fuzz_tests;
#[cfg(test)]
mod oracle_tests;

// The module's API for the server and executor.
pub(crate) use compression::SUPPORTED_COMPRESSION;
pub(crate) use consistency::Consistency;
pub(crate) use error::{CqlError, ErrorKind, RATE_LIMIT_ERROR_CODE, WriteType};
pub(crate) use extensions::{
    Extensions, KEY_COMPRESSION, KEY_LWT_ADD_METADATA_MARK, KEY_LWT_MASK_PARAM,
    KEY_RATE_LIMIT_ERROR, KEY_TABLETS_ROUTING_V1, LWT_MARK_MASK, PAYLOAD_TABLETS_ROUTING_V1,
    tablets_routing_v1_value,
};
#[cfg(test)]
pub(crate) use header::try_decode_frame;
pub(crate) use header::{
    RequestFrame, compress_frames, insert_custom_payload, opcode as response_opcode,
    try_decode_frame_of,
};
pub(crate) use request::{
    BatchKind, BatchQuery, BatchRequest, QueryParams, Request, decode_request,
};
pub(crate) use response::{
    Event, Prepared, Response, RowsResult, SchemaChange, SchemaChangeTarget, SchemaChangeType,
    StatusChangeType, TopologyChangeType, encode_event, encode_response,
};
pub(crate) use result::{ColumnSpec, PreparedMetadata, ResultMetadata};
pub(crate) use rows::RowsWriter;
pub(crate) use wire::BoundValue;

// Named by tests only (the request side as a client writes it, the frame layout).
#[cfg(test)]
pub(crate) use header::HEADER_LEN;
#[cfg(test)]
pub(crate) use request::BatchStatement;
pub(crate) use request::opcode as request_opcode;
