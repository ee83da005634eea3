//! Request decoding: a frame body and its opcode become a typed [`Request`].

use bytes::Bytes;

use super::consistency::Consistency;
use super::error::CqlError;
use super::wire::{BoundValue, ProtocolViolation, Reader};

/// Request opcodes (spec §2.4).
pub(crate) mod opcode {
    /// STARTUP
    pub(crate) const STARTUP: u8 = 0x01;
    /// OPTIONS
    pub(crate) const OPTIONS: u8 = 0x05;
    /// QUERY
    pub(crate) const QUERY: u8 = 0x07;
    /// PREPARE
    pub(crate) const PREPARE: u8 = 0x09;
    /// EXECUTE
    pub(crate) const EXECUTE: u8 = 0x0A;
    /// REGISTER
    pub(crate) const REGISTER: u8 = 0x0B;
    /// BATCH
    pub(crate) const BATCH: u8 = 0x0D;
    /// AUTH_RESPONSE
    pub(crate) const AUTH_RESPONSE: u8 = 0x0F;
}

/// Query flag: values follow.
const FLAG_VALUES: u8 = 0x01;
/// Query flag: the client asks for ROWS without column specs.
const FLAG_SKIP_METADATA: u8 = 0x02;
/// Query flag: a page size follows.
const FLAG_PAGE_SIZE: u8 = 0x04;
/// Query flag: a paging state follows.
const FLAG_PAGING_STATE: u8 = 0x08;
/// Query and batch flag: a serial consistency follows.
const FLAG_SERIAL_CONSISTENCY: u8 = 0x10;
/// Query and batch flag: a default timestamp follows.
const FLAG_DEFAULT_TIMESTAMP: u8 = 0x20;
/// Query flag: each value is preceded by its bind-marker name.
const FLAG_NAMES_FOR_VALUES: u8 = 0x40;
/// Every flag of `<query_parameters>` (QUERY, EXECUTE, and the tail of BATCH).
const QUERY_FLAGS: u8 = FLAG_VALUES
    | FLAG_SKIP_METADATA
    | FLAG_PAGE_SIZE
    | FLAG_PAGING_STATE
    | FLAG_SERIAL_CONSISTENCY
    | FLAG_DEFAULT_TIMESTAMP
    | FLAG_NAMES_FOR_VALUES;
/// The Server error message Scylla answers a flags byte with unknown bits with.
pub(crate) const UNKNOWN_FLAGS_MESSAGE: &str = "Bit mask contains invalid enumeration indices.";

/// A decoded client request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Request {
    /// STARTUP: options in wire order, unknown keys kept (`CQL_VERSION`, `DRIVER_NAME`,
    /// echoed extensions such as `SCYLLA_LWT_ADD_METADATA_MARK`, ...).
    Startup(Vec<(String, String)>),
    /// OPTIONS: asks for SUPPORTED.
    Options,
    /// QUERY: an unprepared statement.
    Query {
        /// Statement text.
        query: String,
        /// Consistency, values, paging, ...
        params: QueryParams,
    },
    /// PREPARE
    Prepare {
        /// Statement text.
        query: String,
    },
    /// EXECUTE of a prepared statement (plain v4: no result-metadata id).
    Execute {
        /// Prepared statement id.
        id: Bytes,
        /// Consistency, values, paging, ...
        params: QueryParams,
    },
    /// BATCH
    Batch(BatchRequest),
    /// REGISTER for events (`TOPOLOGY_CHANGE`, `STATUS_CHANGE`, `SCHEMA_CHANGE`, ...; not
    /// validated here).
    Register {
        /// Event type names as sent.
        events: Vec<String>,
    },
    /// AUTH_RESPONSE: the SASL token (`\0user\0password` for PlainText).
    AuthResponse {
        /// The token; `None` when the client sent a null `[bytes]`.
        token: Option<Bytes>,
    },
}

impl Request {
    /// The opcode's name, for logs (`QUERY`, `EXECUTE`, ...).
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Request::Startup(_) => "STARTUP",
            Request::Options => "OPTIONS",
            Request::Query { .. } => "QUERY",
            Request::Prepare { .. } => "PREPARE",
            Request::Execute { .. } => "EXECUTE",
            Request::Batch(_) => "BATCH",
            Request::Register { .. } => "REGISTER",
            Request::AuthResponse { .. } => "AUTH_RESPONSE",
        }
    }
}

/// The `<query_parameters>` of QUERY and EXECUTE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct QueryParams {
    /// Consistency level.
    pub consistency: Consistency,
    /// Bound values, positional (or named when [`QueryParams::names`] is set).
    pub values: Vec<BoundValue>,
    /// Flag 0x40: the bind-marker name of each value, same length as `values`.
    pub names: Option<Vec<String>>,
    /// Flag 0x02: the client asks for ROWS without column specs (NO_METADATA).
    pub skip_metadata: bool,
    /// Flag 0x04: page size as sent (Cassandra treats `<= 0` as "no paging").
    pub page_size: Option<i32>,
    /// Flag 0x08: the opaque paging state of a previous page (a null one is `None`).
    pub paging_state: Option<Bytes>,
    /// Flag 0x10: serial consistency as sent (not checked to be SERIAL/LOCAL_SERIAL here).
    pub serial_consistency: Option<Consistency>,
    /// Flag 0x20: default write timestamp in microseconds.
    pub timestamp: Option<i64>,
}

/// The kind of a BATCH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum BatchKind {
    /// 0: logged.
    Logged,
    /// 1: unlogged.
    Unlogged,
    /// 2: counter.
    Counter,
}

/// What one statement of a BATCH executes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BatchQuery {
    /// Kind 0: statement text.
    Text(String),
    /// Kind 1: prepared statement id.
    Prepared(Bytes),
}

/// One statement of a BATCH with its positional values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BatchStatement {
    /// Text or prepared id.
    pub query: BatchQuery,
    /// Bound values.
    pub values: Vec<BoundValue>,
}

/// A BATCH request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BatchRequest {
    /// Logged, unlogged or counter.
    pub kind: BatchKind,
    /// Statements in order.
    pub statements: Vec<BatchStatement>,
    /// Consistency level.
    pub consistency: Consistency,
    /// Flag 0x10: serial consistency.
    pub serial_consistency: Option<Consistency>,
    /// Flag 0x20: default write timestamp in microseconds.
    pub timestamp: Option<i64>,
}

/// Decodes a request body (as [`super::try_decode_frame_of`] split it off) for its opcode.
///
/// The error goes on the frame's stream and the connection stays usable. As on Scylla:
/// - a malformed body (truncated, bad UTF-8, an unknown consistency code or batch kind), an
///   unknown opcode or a server-only one is a Protocol error ([`ProtocolViolation`]);
/// - a QUERY, EXECUTE or BATCH flags byte with bits outside the seven `<query_parameters>`
///   flags is a Server error ([`UNKNOWN_FLAGS_MESSAGE`], see [`read_query_params`]);
/// - bytes after a complete body are ignored. Scylla's handlers in `transport/server.cc`
///   (`process_startup`, `process_options`, `process_query_internal`,
///   `process_execute_internal`, `process_batch_internal`, `process_register`) read what
///   they need from their `request_reader` and never look at what is left over; drivers
///   rely on it (TABLETS_ROUTING_V2 appends a byte to every EXECUTE).
pub(crate) fn decode_request(op: u8, body: Bytes) -> Result<Request, CqlError> {
    let mut r = Reader::new(body);
    let request = match op {
        opcode::STARTUP => Request::Startup(r.read_string_map("the STARTUP options")?),
        opcode::OPTIONS => Request::Options,
        opcode::QUERY => {
            let query = r.read_long_string("the query string")?;
            let params = read_query_params(&mut r)?;
            Request::Query { query, params }
        }
        opcode::PREPARE => {
            let query = r.read_long_string("the query string")?;
            Request::Prepare { query }
        }
        opcode::EXECUTE => {
            let id = r.read_short_bytes("the prepared statement id")?;
            let params = read_query_params(&mut r)?;
            Request::Execute { id, params }
        }
        opcode::BATCH => Request::Batch(read_batch(&mut r)?),
        opcode::REGISTER => {
            let events = r.read_string_list("the REGISTER event types")?;
            Request::Register { events }
        }
        opcode::AUTH_RESPONSE => {
            let token = r.read_bytes("the AUTH_RESPONSE token")?;
            Request::AuthResponse { token }
        }
        other => {
            return Err(ProtocolViolation::new(match server_opcode_name(other) {
                Some(name) => format!(
                    "Unexpected opcode 0x{other:02X} ({name}): it is sent by servers, not clients"
                ),
                None => format!("Unknown opcode 0x{other:02X}"),
            })
            .into());
        }
    };
    Ok(request)
}

/// The name of a response opcode, which a client must never send.
fn server_opcode_name(op: u8) -> Option<&'static str> {
    Some(match op {
        0x00 => "ERROR",
        0x02 => "READY",
        0x03 => "AUTHENTICATE",
        0x06 => "SUPPORTED",
        0x08 => "RESULT",
        0x0C => "EVENT",
        0x0E => "AUTH_CHALLENGE",
        0x10 => "AUTH_SUCCESS",
        _ => return None,
    })
}

/// Reads `<query_parameters>` (spec §4.1.4): the parameters of QUERY and EXECUTE, and the
/// tail of BATCH.
///
/// Unknown flag bits are a Server error, checked right after the flags byte is read, before
/// anything that follows it. Scylla (`transport/request.hh`, `request_reader::read_options`)
/// turns the byte into an `enum_set` of the seven flags with `from_mask`, which throws
/// `bad_enum_set_mask`, a plain `std::invalid_argument` carrying [`UNKNOWN_FLAGS_MESSAGE`],
/// for any other bit; `cql_server::connection::process_request_one` (`transport/server.cc`)
/// answers exceptions that are not CQL exceptions with SERVER_ERROR on the request's stream.
fn read_query_params(r: &mut Reader) -> Result<QueryParams, CqlError> {
    let consistency = r.read_consistency("the consistency")?;
    let flags = r.read_byte("the query flags")?;
    if flags & !QUERY_FLAGS != 0 {
        return Err(CqlError::server(UNKNOWN_FLAGS_MESSAGE));
    }
    let (values, names) = if flags & FLAG_VALUES != 0 {
        let n = usize::from(r.read_short("the number of values")?);
        // Each value takes at least 4 bytes: never pre-allocate more than the input allows.
        let cap = n.min(r.remaining() / 4);
        let mut values = Vec::with_capacity(cap);
        if flags & FLAG_NAMES_FOR_VALUES != 0 {
            let mut names = Vec::with_capacity(cap);
            for _ in 0..n {
                names.push(r.read_string("a value name")?);
                values.push(r.read_value("a bound value")?);
            }
            (values, Some(names))
        } else {
            for _ in 0..n {
                values.push(r.read_value("a bound value")?);
            }
            (values, None)
        }
    } else {
        (Vec::new(), None)
    };
    let page_size = if flags & FLAG_PAGE_SIZE != 0 {
        Some(r.read_int("the page size")?)
    } else {
        None
    };
    let paging_state = if flags & FLAG_PAGING_STATE != 0 {
        r.read_bytes("the paging state")?
    } else {
        None
    };
    let serial_consistency = if flags & FLAG_SERIAL_CONSISTENCY != 0 {
        Some(r.read_consistency("the serial consistency")?)
    } else {
        None
    };
    let timestamp = if flags & FLAG_DEFAULT_TIMESTAMP != 0 {
        Some(r.read_long("the default timestamp")?)
    } else {
        None
    };
    Ok(QueryParams {
        consistency,
        values,
        names,
        skip_metadata: flags & FLAG_SKIP_METADATA != 0,
        page_size,
        paging_state,
        serial_consistency,
        timestamp,
    })
}

/// Reads a BATCH body (spec §4.1.7).
///
/// After the statements, Scylla (`process_batch_internal` in `transport/server.cc`) reads the
/// consistency and flags with the same `read_options` as QUERY, and keeps only the
/// consistency, serial consistency and timestamp (`query_options::make_batch_options`
/// replaces the values with the statements'). So the batch takes every QUERY flag: the
/// values, page size and paging state they announce are read and dropped, and unknown bits
/// are the same Server error.
fn read_batch(r: &mut Reader) -> Result<BatchRequest, CqlError> {
    let kind = match r.read_byte("the batch type")? {
        0 => BatchKind::Logged,
        1 => BatchKind::Unlogged,
        2 => BatchKind::Counter,
        other => {
            return Err(ProtocolViolation::new(format!(
                "Invalid batch type {other} (expected 0 logged, 1 unlogged or 2 counter)"
            ))
            .into());
        }
    };
    let n = usize::from(r.read_short("the number of batch statements")?);
    // Each statement takes at least 5 bytes.
    let mut statements = Vec::with_capacity(n.min(r.remaining() / 5));
    for _ in 0..n {
        let query = match r.read_byte("a batch statement kind")? {
            0 => BatchQuery::Text(r.read_long_string("a batch statement string")?),
            1 => BatchQuery::Prepared(r.read_short_bytes("a batch prepared statement id")?),
            other => {
                return Err(ProtocolViolation::new(format!(
                    "Invalid batch statement kind {other} (expected 0 or 1)"
                ))
                .into());
            }
        };
        let nv = usize::from(r.read_short("the number of values of a batch statement")?);
        let mut values = Vec::with_capacity(nv.min(r.remaining() / 4));
        for _ in 0..nv {
            values.push(r.read_value("a bound value of a batch statement")?);
        }
        statements.push(BatchStatement { query, values });
    }
    let QueryParams {
        consistency,
        serial_consistency,
        timestamp,
        ..
    } = read_query_params(r)?;
    Ok(BatchRequest {
        kind,
        statements,
        consistency,
        serial_consistency,
        timestamp,
    })
}

#[cfg(test)]
mod tests {
    //! Hand-written byte vectors for what the driver's codec does not produce; the
    //! driver-built cases are in `super::super::oracle_tests`.
    use super::*;
    use crate::frame::ErrorKind;

    fn query_body(flags: u8, rest: &[u8]) -> Bytes {
        let mut b = vec![0, 0, 0, 8];
        b.extend_from_slice(b"SELECT 1");
        b.extend_from_slice(&[0, 1, flags]); // ONE
        b.extend_from_slice(rest);
        Bytes::from(b)
    }

    #[test]
    fn named_and_unset_values() {
        let body = query_body(
            FLAG_VALUES | FLAG_NAMES_FOR_VALUES,
            &[
                0, 3, // three values
                0, 1, b'a', 0, 0, 0, 1, 7, // a = 0x07
                0, 1, b'b', 0xff, 0xff, 0xff, 0xfe, // b unset
                0, 1, b'c', 0xff, 0xff, 0xff, 0xff, // c null
            ],
        );
        let Request::Query { query, params } = decode_request(opcode::QUERY, body).unwrap() else {
            panic!("not a query");
        };
        assert_eq!(query, "SELECT 1");
        assert_eq!(params.consistency, Consistency::One);
        assert_eq!(
            params.names,
            Some(vec!["a".to_string(), "b".to_string(), "c".to_string()])
        );
        assert_eq!(
            params.values,
            vec![
                BoundValue::Value(Bytes::from_static(&[7])),
                BoundValue::Unset,
                BoundValue::Null
            ]
        );
    }

    #[test]
    fn names_flag_without_values_is_ignored() {
        let body = query_body(FLAG_NAMES_FOR_VALUES, &[]);
        let Request::Query { params, .. } = decode_request(opcode::QUERY, body).unwrap() else {
            panic!("not a query");
        };
        assert!(params.values.is_empty());
        assert_eq!(params.names, None);
    }

    #[test]
    fn all_optional_parameters_in_order() {
        let body = query_body(
            FLAG_SKIP_METADATA
                | FLAG_PAGE_SIZE
                | FLAG_PAGING_STATE
                | FLAG_SERIAL_CONSISTENCY
                | FLAG_DEFAULT_TIMESTAMP,
            &[
                0, 0, 0x13, 0x88, // page size 5000
                0, 0, 0, 2, 0xaa, 0xbb, // paging state
                0, 9, // LOCAL_SERIAL
                0, 0, 0, 0, 0, 0, 1, 0, // timestamp 256
            ],
        );
        let Request::Query { params, .. } = decode_request(opcode::QUERY, body).unwrap() else {
            panic!("not a query");
        };
        assert!(params.skip_metadata);
        assert_eq!(params.page_size, Some(5000));
        assert_eq!(params.paging_state, Some(Bytes::from_static(&[0xaa, 0xbb])));
        assert_eq!(params.serial_consistency, Some(Consistency::LocalSerial));
        assert_eq!(params.timestamp, Some(256));
    }

    #[test]
    fn null_paging_state_is_no_paging_state() {
        let body = query_body(FLAG_PAGING_STATE, &[0xff, 0xff, 0xff, 0xff]);
        let Request::Query { params, .. } = decode_request(opcode::QUERY, body).unwrap() else {
            panic!("not a query");
        };
        assert_eq!(params.paging_state, None);
    }

    #[test]
    fn unknown_flags_are_server_errors_checked_before_what_follows() {
        // Alone, with known bits, and with a truncated rest: the flags decide first.
        for flags in [0x80, 0x81, 0xff] {
            let e = decode_request(opcode::QUERY, query_body(flags, &[])).unwrap_err();
            assert_eq!(
                e,
                CqlError::server(UNKNOWN_FLAGS_MESSAGE),
                "flags 0x{flags:02X}"
            );
        }
        let execute = Bytes::from_static(&[0, 1, 0xab, 0, 1, 0x80]);
        let e = decode_request(opcode::EXECUTE, execute).unwrap_err();
        assert_eq!(e.kind, ErrorKind::ServerError);
        // A batch of one text statement without values, consistency ONE, flags 0x80.
        let batch = Bytes::from_static(&[1, 0, 1, 0, 0, 0, 0, 1, b'q', 0, 0, 0, 1, 0x80]);
        let e = decode_request(opcode::BATCH, batch).unwrap_err();
        assert_eq!(e, CqlError::server(UNKNOWN_FLAGS_MESSAGE));
    }

    #[test]
    fn trailing_bytes_are_ignored() {
        let Request::Query { query, params } =
            decode_request(opcode::QUERY, query_body(0, b"junk")).unwrap()
        else {
            panic!("not a query");
        };
        assert_eq!(
            (query.as_str(), params.consistency),
            ("SELECT 1", Consistency::One)
        );
        assert_eq!(
            decode_request(opcode::OPTIONS, Bytes::from_static(b"x")).unwrap(),
            Request::Options
        );
        let prep = Bytes::from_static(b"\0\0\0\x03abc\x01");
        assert_eq!(
            decode_request(opcode::PREPARE, prep).unwrap(),
            Request::Prepare {
                query: "abc".to_string()
            }
        );
    }

    #[test]
    fn bad_consistencies_and_truncated_bodies_are_protocol_errors() {
        let mut bad_cl = vec![0, 0, 0, 1, b'x', 0, 42, 0];
        let e = decode_request(opcode::QUERY, Bytes::from(bad_cl.clone())).unwrap_err();
        assert_eq!(e.kind, ErrorKind::ProtocolError);
        assert!(e.message.contains("consistency"), "{e}");
        bad_cl.truncate(7);
        let e = decode_request(opcode::QUERY, Bytes::from(bad_cl)).unwrap_err();
        assert_eq!(e.kind, ErrorKind::ProtocolError);
    }

    #[test]
    fn server_and_unknown_opcodes_are_violations() {
        let e = decode_request(0x08, Bytes::new()).unwrap_err();
        assert_eq!(e.kind, ErrorKind::ProtocolError);
        assert!(e.message.contains("RESULT"), "{e}");
        let e = decode_request(0x02, Bytes::new()).unwrap_err();
        assert!(e.message.contains("READY"), "{e}");
        let e = decode_request(0x42, Bytes::new()).unwrap_err();
        assert_eq!(e.message, "Unknown opcode 0x42");
        assert!(decode_request(0x04, Bytes::new()).is_err());
    }

    #[test]
    fn execute_has_no_result_metadata_id() {
        let body = Bytes::from_static(&[0, 2, 0xde, 0xad, 0, 6, 0x01, 0, 1, 0, 0, 0, 1, 5]);
        let Request::Execute { id, params } = decode_request(opcode::EXECUTE, body).unwrap() else {
            panic!("not an execute");
        };
        assert_eq!(&id[..], &[0xde, 0xad]);
        assert_eq!(params.consistency, Consistency::LocalQuorum);
        assert_eq!(
            params.values,
            vec![BoundValue::Value(Bytes::from_static(&[5]))]
        );
    }

    #[test]
    fn batch_reads_query_flags_and_rejects_bad_kinds() {
        // Unlogged batch with one text statement, zero values, consistency ONE.
        let mut ok = vec![1, 0, 1, 0, 0, 0, 0, 1, b'q', 0, 0, 0, 1];
        ok.push(0);
        let Request::Batch(plain) = decode_request(opcode::BATCH, Bytes::from(ok.clone())).unwrap()
        else {
            panic!("not a batch");
        };
        // Query-only flags are read like a QUERY's, and what they carry is dropped.
        let mut names = ok.clone();
        *names.last_mut().unwrap() = FLAG_NAMES_FOR_VALUES;
        assert_eq!(
            decode_request(opcode::BATCH, Bytes::from(names)).unwrap(),
            Request::Batch(plain.clone())
        );
        let mut page = ok.clone();
        *page.last_mut().unwrap() = FLAG_VALUES | FLAG_PAGE_SIZE | FLAG_DEFAULT_TIMESTAMP;
        page.extend_from_slice(&[0, 1, 0, 0, 0, 1, 7]); // one value
        page.extend_from_slice(&[0, 0, 0, 10]); // page size
        page.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 9]); // timestamp
        let Request::Batch(paged) = decode_request(opcode::BATCH, Bytes::from(page)).unwrap()
        else {
            panic!("not a batch");
        };
        assert_eq!(paged.statements, plain.statements);
        assert_eq!(paged.timestamp, Some(9));
        let mut truncated = ok.clone();
        *truncated.last_mut().unwrap() = FLAG_PAGE_SIZE;
        let e = decode_request(opcode::BATCH, Bytes::from(truncated)).unwrap_err();
        assert_eq!(e.kind, ErrorKind::ProtocolError);
        let mut bad_type = ok.clone();
        bad_type[0] = 3;
        assert!(decode_request(opcode::BATCH, Bytes::from(bad_type)).is_err());
        let mut bad_kind = ok;
        bad_kind[3] = 2;
        assert!(decode_request(opcode::BATCH, Bytes::from(bad_kind)).is_err());
    }

    #[test]
    fn auth_response_register_and_prepare() {
        let body = Bytes::from_static(b"\0\0\0\x05\0u\0pw");
        assert_eq!(
            decode_request(opcode::AUTH_RESPONSE, body).unwrap(),
            Request::AuthResponse {
                token: Some(Bytes::from_static(b"\0u\0pw"))
            }
        );
        assert_eq!(
            decode_request(opcode::AUTH_RESPONSE, Bytes::from_static(&[0xff; 4])).unwrap(),
            Request::AuthResponse { token: None }
        );
        let reg = Bytes::from_static(b"\0\x01\0\x0dSCHEMA_CHANGE");
        assert_eq!(
            decode_request(opcode::REGISTER, reg).unwrap(),
            Request::Register {
                events: vec!["SCHEMA_CHANGE".to_string()]
            }
        );
        let prep = Bytes::from_static(b"\0\0\0\x03abc");
        assert_eq!(
            decode_request(opcode::PREPARE, prep).unwrap(),
            Request::Prepare {
                query: "abc".to_string()
            }
        );
    }

    #[test]
    fn values_are_zero_copy_slices_of_the_body() {
        let body = query_body(FLAG_VALUES, &[0, 1, 0, 0, 0, 3, 1, 2, 3]);
        let range = body.as_ptr_range();
        let Request::Query { params, .. } = decode_request(opcode::QUERY, body.clone()).unwrap()
        else {
            panic!("not a query");
        };
        let BoundValue::Value(v) = &params.values[0] else {
            panic!("not a value");
        };
        assert!(range.contains(&v.as_ptr()));
    }
}
