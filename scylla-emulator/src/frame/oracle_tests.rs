//! Round trips against the driver's own codec (`scylla-cql` 2.0.0, the version `scylla`
//! 1.9 pins): requests serialized by the driver are decoded by ours, and our responses are
//! decoded by the driver's response deserializers, field by field.

use std::borrow::Cow;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use scylla_cql::Consistency as DConsistency;
use scylla_cql::frame::protocol_features::ProtocolFeatures;
use scylla_cql::frame::request::batch::{
    Batch as DBatch, BatchStatement as DBatchStatement, BatchType,
};
use scylla_cql::frame::request::execute::ExecuteV2;
use scylla_cql::frame::request::query::{PagingState, Query as DQuery, QueryParameters};
use scylla_cql::frame::request::register::Register as DRegister;
use scylla_cql::frame::request::{
    AuthResponse as DAuthResponse, Options as DOptions, Prepare as DPrepare, SerializableRequest,
    Startup as DStartup,
};
use scylla_cql::frame::response::error::{DbError, OperationType, WriteType as DWriteType};
use scylla_cql::frame::response::event::{
    EventV2, SchemaChangeEvent, SchemaChangeType as DChangeType, StatusChangeEvent,
    TopologyChangeEvent,
};
use scylla_cql::frame::response::result::cow_bytes::CowBytes;
use scylla_cql::frame::response::result::{
    CollectionType, ColumnType, NativeType, Result as DResult, UserDefinedType,
};
use scylla_cql::frame::response::{ResponseOpcode, ResponseV2};
use scylla_cql::frame::server_event_type::EventType;
use scylla_cql::frame::types::SerialConsistency;
use scylla_cql::frame::{SerializedRequest, parse_response_body_extensions};
use scylla_cql::serialize::row::SerializedValues;
use scylla_cql::value::{CqlValue, MaybeUnset, Row};

use crate::types::{CqlType, UserType};

use super::header::FLAG_TRACING;
use super::*;

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

fn driver_frame<R: SerializableRequest>(req: &R, stream: i16, tracing: bool) -> Vec<u8> {
    let mut s = SerializedRequest::make(req, None, tracing).expect("driver serializes");
    s.set_stream(stream);
    s.get_data().to_vec()
}

fn decode_ours(bytes: &[u8]) -> (RequestFrame, Request) {
    let mut buf = BytesMut::from(bytes);
    let f = try_decode_frame(&mut buf)
        .expect("valid frame")
        .expect("complete frame");
    assert!(buf.is_empty(), "the whole frame is consumed");
    let r = decode_request(f.opcode, f.body.clone()).expect("valid request");
    (f, r)
}

fn ours_consistency(c: DConsistency) -> Consistency {
    Consistency::from_code(c as u16).expect("known consistency")
}

fn driver_features() -> ProtocolFeatures {
    let mut f = ProtocolFeatures::default();
    f.rate_limit_error = Some(RATE_LIMIT_ERROR_CODE);
    f.lwt_optimization_meta_bit_mask = Some(LWT_MARK_MASK);
    f
}

fn full_ext() -> Extensions {
    Extensions {
        lwt_mark: Some(LWT_MARK_MASK),
        rate_limit_error: true,
        ..Extensions::default()
    }
}

/// Checks the header of one response frame and decodes it with the driver.
fn driver_decode(frame: &[u8], stream: i16) -> (ResponseV2, Vec<String>) {
    assert!(frame.len() >= 9);
    assert_eq!(frame[0], 0x84, "response version byte");
    assert_eq!(i16::from_be_bytes([frame[2], frame[3]]), stream);
    let len = u32::from_be_bytes([frame[5], frame[6], frame[7], frame[8]]) as usize;
    assert_eq!(frame.len(), 9 + len, "length field covers the body exactly");
    let opcode = ResponseOpcode::try_from(frame[4]).expect("response opcode");
    let ext = parse_response_body_extensions(frame[1], None, Bytes::copy_from_slice(&frame[9..]))
        .expect("body extensions");
    assert!(ext.trace_id.is_none());
    let resp = ResponseV2::deserialize(&driver_features(), opcode, ext.body, None)
        .expect("the driver decodes our response");
    (resp, ext.warnings)
}

fn encode(resp: &Response, stream: i16) -> BytesMut {
    let mut out = BytesMut::new();
    encode_response(&mut out, stream, &full_ext(), &[], resp);
    out
}

fn driver_type(t: &CqlType) -> ColumnType<'static> {
    use NativeType as N;
    let native = |n| ColumnType::Native(n);
    match t {
        CqlType::Ascii => native(N::Ascii),
        CqlType::Bigint => native(N::BigInt),
        CqlType::Blob => native(N::Blob),
        CqlType::Boolean => native(N::Boolean),
        CqlType::Counter => native(N::Counter),
        CqlType::Date => native(N::Date),
        CqlType::Decimal => native(N::Decimal),
        CqlType::Double => native(N::Double),
        CqlType::Duration => native(N::Duration),
        CqlType::Float => native(N::Float),
        CqlType::Inet => native(N::Inet),
        CqlType::Int => native(N::Int),
        CqlType::Smallint => native(N::SmallInt),
        CqlType::Text => native(N::Text),
        CqlType::Time => native(N::Time),
        CqlType::Timestamp => native(N::Timestamp),
        CqlType::Timeuuid => native(N::Timeuuid),
        CqlType::Tinyint => native(N::TinyInt),
        CqlType::Uuid => native(N::Uuid),
        CqlType::Varint => native(N::Varint),
        // The wire does not carry frozenness: the driver always decodes `frozen: false`.
        CqlType::List { elem, .. } => ColumnType::Collection {
            frozen: false,
            typ: CollectionType::List(Box::new(driver_type(elem))),
        },
        CqlType::Set { elem, .. } => ColumnType::Collection {
            frozen: false,
            typ: CollectionType::Set(Box::new(driver_type(elem))),
        },
        CqlType::Map { key, value, .. } => ColumnType::Collection {
            frozen: false,
            typ: CollectionType::Map(Box::new(driver_type(key)), Box::new(driver_type(value))),
        },
        CqlType::Tuple(elems) => ColumnType::Tuple(elems.iter().map(driver_type).collect()),
        CqlType::Udt { def, .. } => ColumnType::UserDefinedType {
            frozen: false,
            definition: Arc::new(UserDefinedType {
                name: Cow::Owned(def.name.clone()),
                keyspace: Cow::Owned(def.keyspace.clone()),
                field_types: def
                    .fields
                    .iter()
                    .map(|(n, t)| (Cow::Owned(n.clone()), driver_type(t)))
                    .collect(),
            }),
        },
    }
}

fn every_type() -> Vec<CqlType> {
    let natives = [
        "ascii",
        "bigint",
        "blob",
        "boolean",
        "counter",
        "date",
        "decimal",
        "double",
        "duration",
        "float",
        "inet",
        "int",
        "smallint",
        "text",
        "time",
        "timestamp",
        "timeuuid",
        "tinyint",
        "uuid",
        "varint",
    ];
    let mut types: Vec<CqlType> = natives
        .iter()
        .map(|n| CqlType::from_native_name(n).expect("native type"))
        .collect();
    let udt = Arc::new(UserType {
        keyspace: "ks".into(),
        name: "Addr Type".into(),
        fields: vec![
            ("street".into(), CqlType::Text),
            (
                "tags".into(),
                CqlType::Set {
                    elem: Box::new(CqlType::Ascii),
                    frozen: true,
                },
            ),
        ],
    });
    types.push(CqlType::List {
        elem: Box::new(CqlType::Int),
        frozen: false,
    });
    types.push(CqlType::Set {
        elem: Box::new(CqlType::Timeuuid),
        frozen: true,
    });
    types.push(CqlType::Map {
        key: Box::new(CqlType::Text),
        value: Box::new(CqlType::List {
            elem: Box::new(CqlType::Map {
                key: Box::new(CqlType::Int),
                value: Box::new(CqlType::Blob),
                frozen: true,
            }),
            frozen: true,
        }),
        frozen: false,
    });
    types.push(CqlType::Tuple(vec![
        CqlType::Int,
        CqlType::Tuple(vec![CqlType::Text, CqlType::Duration]),
        CqlType::Udt {
            def: udt.clone(),
            frozen: true,
        },
    ]));
    types.push(CqlType::Udt {
        def: udt.clone(),
        frozen: false,
    });
    types.push(CqlType::Map {
        key: Box::new(CqlType::Udt {
            def: udt,
            frozen: true,
        }),
        value: Box::new(CqlType::Set {
            elem: Box::new(CqlType::Inet),
            frozen: true,
        }),
        frozen: true,
    });
    types
}

// ---------------------------------------------------------------------------------------
// Requests: driver-serialized, decoded by us
// ---------------------------------------------------------------------------------------

#[test]
fn options_startup_register_prepare_auth() {
    let (f, r) = decode_ours(&driver_frame(&DOptions, 3, false));
    assert_eq!((f.stream, r), (3, Request::Options));

    let mut options = HashMap::new();
    options.insert(Cow::Borrowed("CQL_VERSION"), Cow::Borrowed("4.0.0"));
    options.insert(
        Cow::Borrowed("DRIVER_NAME"),
        Cow::Borrowed("ScyllaDB Rust Driver"),
    );
    options.insert(
        Cow::Borrowed(KEY_LWT_ADD_METADATA_MARK),
        Cow::Borrowed("LWT_OPTIMIZATION_META_BIT_MASK=2147483648"),
    );
    options.insert(Cow::Borrowed(KEY_RATE_LIMIT_ERROR), Cow::Borrowed(""));
    let (_, r) = decode_ours(&driver_frame(
        &DStartup {
            options: options.clone(),
        },
        1,
        false,
    ));
    let Request::Startup(got) = r else {
        panic!("not a startup: {r:?}")
    };
    let got_map: HashMap<_, _> = got.iter().cloned().collect();
    let want: HashMap<String, String> = options
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    assert_eq!(got_map, want);
    assert_eq!(Extensions::from_startup(&got), Ok(full_ext()));

    let reg = DRegister {
        event_types_to_register_for: vec![
            EventType::TopologyChange,
            EventType::StatusChange,
            EventType::SchemaChange,
        ],
    };
    let (_, r) = decode_ours(&driver_frame(&reg, 2, false));
    assert_eq!(
        r,
        Request::Register {
            events: vec![
                "TOPOLOGY_CHANGE".into(),
                "STATUS_CHANGE".into(),
                "SCHEMA_CHANGE".into()
            ]
        }
    );

    let q = "SELECT * FROM ks.t WHERE pk = ? USING TIMEOUT 30000ms -- \u{e9}";
    let (_, r) = decode_ours(&driver_frame(&DPrepare { query: q }, 4, false));
    assert_eq!(r, Request::Prepare { query: q.into() });

    let (_, r) = decode_ours(&driver_frame(
        &DAuthResponse {
            response: Some(b"\0cassandra\0cassandra".to_vec()),
        },
        5,
        false,
    ));
    assert_eq!(
        r,
        Request::AuthResponse {
            token: Some(Bytes::from_static(b"\0cassandra\0cassandra"))
        }
    );
    let (_, r) = decode_ours(&driver_frame(&DAuthResponse { response: None }, 5, false));
    assert_eq!(r, Request::AuthResponse { token: None });
}

fn driver_values() -> SerializedValues {
    let mut v = SerializedValues::new();
    v.add_value(&42i32, &ColumnType::Native(NativeType::Int))
        .unwrap();
    v.add_value(&None::<i64>, &ColumnType::Native(NativeType::BigInt))
        .unwrap();
    v.add_value(
        &MaybeUnset::<&str>::Unset,
        &ColumnType::Native(NativeType::Text),
    )
    .unwrap();
    v.add_value(&"", &ColumnType::Native(NativeType::Text))
        .unwrap();
    v.add_value(&"h\u{e9}", &ColumnType::Native(NativeType::Text))
        .unwrap();
    v
}

fn expected_values() -> Vec<BoundValue> {
    vec![
        BoundValue::Value(Bytes::from_static(&[0, 0, 0, 42])),
        BoundValue::Null,
        BoundValue::Unset,
        BoundValue::Value(Bytes::new()),
        BoundValue::Value(Bytes::from("h\u{e9}")),
    ]
}

#[test]
fn query_with_every_parameter() {
    for (i, cl) in [
        DConsistency::Any,
        DConsistency::One,
        DConsistency::Two,
        DConsistency::Three,
        DConsistency::Quorum,
        DConsistency::All,
        DConsistency::LocalQuorum,
        DConsistency::EachQuorum,
        DConsistency::Serial,
        DConsistency::LocalSerial,
        DConsistency::LocalOne,
    ]
    .into_iter()
    .enumerate()
    {
        let values = driver_values();
        let q = DQuery {
            contents: Cow::Borrowed("INSERT INTO ks.t (a, b, c, d, e) VALUES (?, ?, ?, ?, ?)"),
            parameters: QueryParameters {
                consistency: cl,
                serial_consistency: Some(SerialConsistency::LocalSerial),
                timestamp: Some(-1_234_567_890_123),
                page_size: Some(5000),
                paging_state: PagingState::new_from_raw_bytes(&[1u8, 2, 3][..]),
                skip_metadata: false,
                values: Cow::Borrowed(&values),
            },
        };
        let stream = i as i16 * 1000;
        let (f, r) = decode_ours(&driver_frame(&q, stream, false));
        assert_eq!(f.stream, stream);
        assert_eq!(f.opcode, request_opcode::QUERY);
        let Request::Query { query, params } = r else {
            panic!("not a query: {r:?}")
        };
        assert_eq!(
            query,
            "INSERT INTO ks.t (a, b, c, d, e) VALUES (?, ?, ?, ?, ?)"
        );
        assert_eq!(
            params,
            QueryParams {
                consistency: ours_consistency(cl),
                values: expected_values(),
                names: None,
                skip_metadata: false,
                page_size: Some(5000),
                paging_state: Some(Bytes::from_static(&[1, 2, 3])),
                serial_consistency: Some(Consistency::LocalSerial),
                timestamp: Some(-1_234_567_890_123),
            }
        );
    }
}

#[test]
fn query_unpaged_without_values() {
    let q = DQuery {
        contents: Cow::Borrowed("SELECT schema_version FROM system.local WHERE key='local'"),
        parameters: QueryParameters {
            consistency: DConsistency::One,
            ..Default::default()
        },
    };
    let (_, r) = decode_ours(&driver_frame(&q, 9, false));
    assert_eq!(
        r,
        Request::Query {
            query: "SELECT schema_version FROM system.local WHERE key='local'".into(),
            params: QueryParams {
                consistency: Consistency::One,
                values: vec![],
                names: None,
                skip_metadata: false,
                page_size: None,
                paging_state: None,
                serial_consistency: None,
                timestamp: None,
            }
        }
    );
}

#[test]
fn execute_with_values_and_skip_metadata() {
    let values = driver_values();
    let id = [
        0xdeu8, 0xad, 0xbe, 0xef, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
    ];
    let e = ExecuteV2 {
        id: CowBytes::from(&id[..]),
        result_metadata_id: None,
        parameters: QueryParameters {
            consistency: DConsistency::LocalQuorum,
            serial_consistency: Some(SerialConsistency::Serial),
            timestamp: None,
            page_size: Some(1024),
            paging_state: PagingState::start(),
            skip_metadata: true,
            values: Cow::Borrowed(&values),
        },
        tablet_version_block: None,
    };
    let (f, r) = decode_ours(&driver_frame(&e, 77, true));
    assert_ne!(f.flags & FLAG_TRACING, 0, "tracing flag is accepted");
    let Request::Execute { id: got_id, params } = r else {
        panic!("not an execute: {r:?}")
    };
    assert_eq!(&got_id[..], &id[..]);
    assert_eq!(params.consistency, Consistency::LocalQuorum);
    assert_eq!(params.serial_consistency, Some(Consistency::Serial));
    assert_eq!(params.values, expected_values());
    assert!(params.skip_metadata);
    assert_eq!(params.page_size, Some(1024));
    assert_eq!(params.paging_state, None);
    assert_eq!(params.timestamp, None);
}

#[test]
fn batch_of_text_and_prepared_statements() {
    for (bt, kind) in [
        (BatchType::Logged, BatchKind::Logged),
        (BatchType::Unlogged, BatchKind::Unlogged),
        (BatchType::Counter, BatchKind::Counter),
    ] {
        let statements = vec![
            DBatchStatement::Query {
                text: Cow::Borrowed("INSERT INTO ks.t (pk) VALUES (1)"),
            },
            DBatchStatement::Prepared {
                id: Cow::Borrowed(&[9u8, 8, 7][..]),
            },
        ];
        let b = DBatch {
            statements: Cow::Owned(statements),
            batch_type: bt,
            consistency: DConsistency::Quorum,
            serial_consistency: Some(SerialConsistency::LocalSerial),
            timestamp: Some(1_700_000_000_000_000),
            values: vec![SerializedValues::new(), driver_values()],
        };
        let (_, r) = decode_ours(&driver_frame(&b, 12, false));
        assert_eq!(
            r,
            Request::Batch(BatchRequest {
                kind,
                statements: vec![
                    BatchStatement {
                        query: BatchQuery::Text("INSERT INTO ks.t (pk) VALUES (1)".into()),
                        values: vec![],
                    },
                    BatchStatement {
                        query: BatchQuery::Prepared(Bytes::from_static(&[9, 8, 7])),
                        values: expected_values(),
                    },
                ],
                consistency: Consistency::Quorum,
                serial_consistency: Some(Consistency::LocalSerial),
                timestamp: Some(1_700_000_000_000_000),
            })
        );
    }
    let plain = DBatch {
        statements: Cow::Owned(vec![DBatchStatement::Query {
            text: Cow::Borrowed("x"),
        }]),
        batch_type: BatchType::Unlogged,
        consistency: DConsistency::One,
        serial_consistency: None,
        timestamp: None,
        values: vec![SerializedValues::new()],
    };
    let (_, r) = decode_ours(&driver_frame(&plain, 1, false));
    let Request::Batch(b) = r else {
        panic!("not a batch")
    };
    assert_eq!((b.serial_consistency, b.timestamp), (None, None));
}

#[test]
fn many_driver_frames_split_at_every_byte() {
    let values = driver_values();
    let mut stream_bytes = Vec::new();
    stream_bytes.extend(driver_frame(&DOptions, 1, false));
    stream_bytes.extend(driver_frame(&DPrepare { query: "SELECT 1" }, 2, false));
    stream_bytes.extend(driver_frame(
        &DQuery {
            contents: Cow::Borrowed("q"),
            parameters: QueryParameters {
                values: Cow::Borrowed(&values),
                ..Default::default()
            },
        },
        3,
        true,
    ));
    for split in 0..=stream_bytes.len() {
        let mut buf = BytesMut::new();
        let mut got = Vec::new();
        for chunk in [&stream_bytes[..split], &stream_bytes[split..]] {
            buf.extend_from_slice(chunk);
            while let Some(f) = try_decode_frame(&mut buf).unwrap() {
                got.push((f.stream, decode_request(f.opcode, f.body).unwrap().name()));
            }
        }
        assert_eq!(
            got,
            vec![(1, "OPTIONS"), (2, "PREPARE"), (3, "QUERY")],
            "split {split}"
        );
        assert!(buf.is_empty());
    }
}

// ---------------------------------------------------------------------------------------
// Responses: encoded by us, decoded by the driver
// ---------------------------------------------------------------------------------------

#[test]
fn ready_supported_and_auth_messages() {
    let (r, _) = driver_decode(&encode(&Response::Ready, 1), 1);
    assert!(matches!(r, ResponseV2::Ready));

    let options = vec![
        ("SCYLLA_SHARD".to_string(), vec!["2".to_string()]),
        ("SCYLLA_NR_SHARDS".to_string(), vec!["3".to_string()]),
        (
            "SCYLLA_SHARDING_IGNORE_MSB".to_string(),
            vec!["12".to_string()],
        ),
        (
            "SCYLLA_SHARD_AWARE_PORT".to_string(),
            vec!["19042".to_string()],
        ),
        (
            KEY_LWT_ADD_METADATA_MARK.to_string(),
            vec!["LWT_OPTIMIZATION_META_BIT_MASK=2147483648".to_string()],
        ),
        (
            KEY_RATE_LIMIT_ERROR.to_string(),
            vec!["ERROR_CODE=61440".to_string()],
        ),
        ("CQL_VERSION".to_string(), vec!["3.3.1".to_string()]),
        ("COMPRESSION".to_string(), vec![]),
    ];
    let frame = encode(&Response::Supported(options.clone()), 0);
    let (r, _) = driver_decode(&frame, 0);
    let ResponseV2::Supported(s) = r else {
        panic!("not supported")
    };
    assert_eq!(
        s.options,
        options.iter().cloned().collect::<HashMap<_, _>>()
    );
    let features = ProtocolFeatures::parse_from_supported(&s.options);
    assert_eq!(features.rate_limit_error, Some(61440));
    assert_eq!(features.lwt_optimization_meta_bit_mask, Some(LWT_MARK_MASK));
    // The wire keeps our order.
    let mut rd = wire::Reader::new(Bytes::copy_from_slice(&frame[9..]));
    assert_eq!(rd.read_string_multimap("supported").unwrap(), options);

    let (r, _) = driver_decode(
        &encode(
            &Response::Authenticate("org.apache.cassandra.auth.PasswordAuthenticator".into()),
            2,
        ),
        2,
    );
    let ResponseV2::Authenticate(a) = r else {
        panic!("not authenticate")
    };
    assert_eq!(
        a.authenticator_name,
        "org.apache.cassandra.auth.PasswordAuthenticator"
    );

    let (r, _) = driver_decode(&encode(&Response::AuthSuccess(None), 3), 3);
    let ResponseV2::AuthSuccess(s) = r else {
        panic!("not auth success")
    };
    assert_eq!(s.success_message, None);
    let (r, _) = driver_decode(
        &encode(&Response::AuthSuccess(Some(Bytes::from_static(b"ok"))), 3),
        3,
    );
    let ResponseV2::AuthSuccess(s) = r else {
        panic!("not auth success")
    };
    assert_eq!(s.success_message, Some(b"ok".to_vec()));
    let (r, _) = driver_decode(
        &encode(&Response::AuthChallenge(Some(Bytes::from_static(b"c"))), 4),
        4,
    );
    let ResponseV2::AuthChallenge(c) = r else {
        panic!("not auth challenge")
    };
    assert_eq!(c.authenticate_message, Some(b"c".to_vec()));
}

#[test]
fn every_error_code_with_its_fields() {
    let cl = Consistency::LocalQuorum;
    let dcl = DConsistency::LocalQuorum;
    let write_types = [
        (WriteType::Simple, DWriteType::Simple),
        (WriteType::Batch, DWriteType::Batch),
        (WriteType::UnloggedBatch, DWriteType::UnloggedBatch),
        (WriteType::Counter, DWriteType::Counter),
        (WriteType::BatchLog, DWriteType::BatchLog),
        (WriteType::Cas, DWriteType::Cas),
        (WriteType::View, DWriteType::View),
        (WriteType::Cdc, DWriteType::Cdc),
    ];
    let mut cases: Vec<(ErrorKind, DbError)> = vec![
        (ErrorKind::ServerError, DbError::ServerError),
        (ErrorKind::ProtocolError, DbError::ProtocolError),
        (ErrorKind::AuthenticationError, DbError::AuthenticationError),
        (
            ErrorKind::Unavailable {
                consistency: cl,
                required: 2,
                alive: 1,
            },
            DbError::Unavailable {
                consistency: dcl,
                required: 2,
                alive: 1,
            },
        ),
        (ErrorKind::Overloaded, DbError::Overloaded),
        (ErrorKind::IsBootstrapping, DbError::IsBootstrapping),
        (ErrorKind::TruncateError, DbError::TruncateError),
        (
            ErrorKind::ReadTimeout {
                consistency: cl,
                received: 1,
                block_for: 2,
                data_present: true,
            },
            DbError::ReadTimeout {
                consistency: dcl,
                received: 1,
                required: 2,
                data_present: true,
            },
        ),
        (
            ErrorKind::ReadFailure {
                consistency: Consistency::All,
                received: 0,
                block_for: 3,
                num_failures: 2,
                data_present: false,
            },
            DbError::ReadFailure {
                consistency: DConsistency::All,
                received: 0,
                required: 3,
                numfailures: 2,
                data_present: false,
            },
        ),
        (
            ErrorKind::FunctionFailure {
                keyspace: "ks".into(),
                function: "f".into(),
                arg_types: vec!["int".into(), "frozen<list<text>>".into()],
            },
            DbError::FunctionFailure {
                keyspace: "ks".into(),
                function: "f".into(),
                arg_types: vec!["int".into(), "frozen<list<text>>".into()],
            },
        ),
        (ErrorKind::SyntaxError, DbError::SyntaxError),
        (ErrorKind::Unauthorized, DbError::Unauthorized),
        (ErrorKind::Invalid, DbError::Invalid),
        (ErrorKind::ConfigError, DbError::ConfigError),
        (
            ErrorKind::AlreadyExists {
                keyspace: "ks".into(),
                table: "t".into(),
            },
            DbError::AlreadyExists {
                keyspace: "ks".into(),
                table: "t".into(),
            },
        ),
        (
            ErrorKind::AlreadyExists {
                keyspace: "ks".into(),
                table: String::new(),
            },
            DbError::AlreadyExists {
                keyspace: "ks".into(),
                table: String::new(),
            },
        ),
        (
            ErrorKind::Unprepared {
                id: Bytes::from_static(&[0xca, 0xfe, 0xba, 0xbe]),
            },
            DbError::Unprepared {
                statement_id: Bytes::from_static(&[0xca, 0xfe, 0xba, 0xbe]),
            },
        ),
        (
            ErrorKind::RateLimitReached {
                op_type: 1,
                rejected_by_coordinator: true,
            },
            DbError::RateLimitReached {
                op_type: OperationType::Write,
                rejected_by_coordinator: true,
            },
        ),
    ];
    for (ours, theirs) in write_types {
        cases.push((
            ErrorKind::WriteTimeout {
                consistency: cl,
                received: 0,
                block_for: 1,
                write_type: ours,
            },
            DbError::WriteTimeout {
                consistency: dcl,
                received: 0,
                required: 1,
                write_type: theirs.clone(),
            },
        ));
        cases.push((
            ErrorKind::WriteFailure {
                consistency: cl,
                received: 1,
                block_for: 2,
                num_failures: 1,
                write_type: ours,
            },
            DbError::WriteFailure {
                consistency: dcl,
                received: 1,
                required: 2,
                numfailures: 1,
                write_type: theirs,
            },
        ));
    }
    for (kind, expected) in cases {
        let msg = format!("message for {kind:?}");
        let frame = encode(
            &Response::Error(CqlError::new(kind.clone(), msg.clone())),
            42,
        );
        let (r, _) = driver_decode(&frame, 42);
        let ResponseV2::Error(e) = r else {
            panic!("not an error")
        };
        assert_eq!(e.error, expected, "{kind:?}");
        assert_eq!(e.reason, msg);
        assert_eq!(e.error.code(&driver_features()), kind.code());
    }
}

#[test]
fn rate_limit_error_without_the_extension_is_a_config_error() {
    let err = CqlError::new(
        ErrorKind::RateLimitReached {
            op_type: 0,
            rejected_by_coordinator: false,
        },
        "rate limited",
    );
    let mut out = BytesMut::new();
    encode_response(
        &mut out,
        1,
        &Extensions::default(),
        &[],
        &Response::Error(err),
    );
    let opcode = ResponseOpcode::try_from(out[4]).unwrap();
    let r = ResponseV2::deserialize(
        &ProtocolFeatures::default(),
        opcode,
        Bytes::copy_from_slice(&out[9..]),
        None,
    )
    .unwrap();
    let ResponseV2::Error(e) = r else {
        panic!("not an error")
    };
    assert_eq!(e.error, DbError::ConfigError);
}

#[test]
fn oversized_bodies_and_unknown_flags_decode_as_invalid_and_server_errors() {
    let mut buf = BytesMut::from(&[4u8, 0, 0, 7, 7, 0x20, 0, 0, 0][..]);
    let fe = try_decode_frame(&mut buf).unwrap_err();
    let mut out = BytesMut::new();
    fe.write_response(&mut out);
    let (r, _) = driver_decode(&out, 7);
    let ResponseV2::Error(e) = r else {
        panic!("not an error")
    };
    assert_eq!(e.error, DbError::Invalid);
    assert!(
        e.reason.starts_with("request size too large"),
        "{}",
        e.reason
    );

    let mut body = b"\0\0\0\x01x\0\x01".to_vec();
    body.push(0x80);
    let v = decode_request(request_opcode::QUERY, Bytes::from(body)).unwrap_err();
    let (r, _) = driver_decode(&encode(&Response::Error(v), 8), 8);
    let ResponseV2::Error(e) = r else {
        panic!("not an error")
    };
    assert_eq!(e.error, DbError::ServerError);
}

#[test]
fn frame_and_violation_errors_are_protocol_errors() {
    let mut buf = BytesMut::from(&[5u8, 0, 0, 7, 5, 0, 0, 0, 0][..]);
    let fe = try_decode_frame(&mut buf).unwrap_err();
    let mut out = BytesMut::new();
    fe.write_response(&mut out);
    let (r, _) = driver_decode(&out, 7);
    let ResponseV2::Error(e) = r else {
        panic!("not an error")
    };
    assert_eq!(e.error, DbError::ProtocolError);
    assert!(e.reason.contains("(4/v4)"), "{}", e.reason);

    let v = decode_request(0x08, Bytes::new()).unwrap_err();
    let (r, _) = driver_decode(&encode(&Response::Error(v), 8), 8);
    let ResponseV2::Error(e) = r else {
        panic!("not an error")
    };
    assert_eq!(e.error, DbError::ProtocolError);
}

#[test]
fn void_set_keyspace_and_warnings() {
    let mut out = BytesMut::new();
    let warnings = vec!["first".to_string(), "second \u{e9}".to_string()];
    encode_response(&mut out, 5, &full_ext(), &warnings, &Response::Void);
    let (r, got_warnings) = driver_decode(&out, 5);
    assert!(matches!(r, ResponseV2::Result(DResult::Void)));
    assert_eq!(got_warnings, warnings);

    let (r, _) = driver_decode(&encode(&Response::SetKeyspace("My_Ks".into()), 6), 6);
    let ResponseV2::Result(DResult::SetKeyspace(ks)) = r else {
        panic!("not set keyspace")
    };
    assert_eq!(ks.keyspace_name, "My_Ks");
}

/// A custom payload inserted into a finished frame goes after its warnings, where the driver
/// reads it, and compressed frames decompress with the driver's codecs to the same thing.
#[test]
fn custom_payloads_and_compression_as_the_driver_reads_them() {
    use super::compression::Compression;
    use scylla_cql::frame::Compression as D;
    let host = uuid::Uuid::from_u128(0xabc);
    let value = tablets_routing_v1_value(-10, 20, &[(host, 2)]);
    let warnings = vec!["careful".to_string()];
    for codec in [
        None,
        Some((Compression::Lz4, D::Lz4)),
        Some((Compression::Snappy, D::Snappy)),
    ] {
        let mut out = BytesMut::from(&b"earlier frames"[..]);
        let start = out.len();
        encode_response(&mut out, 9, &full_ext(), &warnings, &Response::Void);
        let entry = (PAYLOAD_TABLETS_ROUTING_V1, Some(value.clone()));
        assert!(insert_custom_payload(
            &mut out,
            start,
            std::slice::from_ref(&entry)
        ));
        // Once is all: a frame with a payload gets no second one.
        assert!(!insert_custom_payload(&mut out, start, &[entry]));
        if let Some((ours, _)) = codec {
            compress_frames(&mut out, start, ours);
        }
        let frame = &out[start..];
        let ext = parse_response_body_extensions(
            frame[1],
            codec.map(|(_, theirs)| theirs),
            Bytes::copy_from_slice(&frame[9..]),
        )
        .expect("body extensions");
        assert_eq!(ext.warnings, warnings);
        let payload = ext.custom_payload.expect("a custom payload");
        assert_eq!(payload.get(PAYLOAD_TABLETS_ROUTING_V1), Some(&value));
        let resp =
            ResponseV2::deserialize(&driver_features(), ResponseOpcode::Result, ext.body, None)
                .expect("the driver decodes the rest");
        assert!(matches!(resp, ResponseV2::Result(DResult::Void)));
    }
}

fn schema_changes() -> Vec<SchemaChange> {
    vec![
        SchemaChange {
            change: SchemaChangeType::Created,
            target: SchemaChangeTarget::Keyspace {
                keyspace: "ks".into(),
            },
        },
        SchemaChange {
            change: SchemaChangeType::Updated,
            target: SchemaChangeTarget::Table {
                keyspace: "ks".into(),
                table: "t".into(),
            },
        },
        SchemaChange {
            change: SchemaChangeType::Dropped,
            target: SchemaChangeTarget::Type {
                keyspace: "ks".into(),
                name: "ut".into(),
            },
        },
        SchemaChange {
            change: SchemaChangeType::Created,
            target: SchemaChangeTarget::Function {
                keyspace: "ks".into(),
                name: "f".into(),
                arg_types: vec!["int".into(), "text".into()],
            },
        },
        SchemaChange {
            change: SchemaChangeType::Dropped,
            target: SchemaChangeTarget::Aggregate {
                keyspace: "ks".into(),
                name: "a".into(),
                arg_types: vec![],
            },
        },
    ]
}

fn check_schema_change(ours: &SchemaChange, theirs: &SchemaChangeEvent) {
    let change_ok = |d: &DChangeType| {
        matches!(
            (ours.change, d),
            (SchemaChangeType::Created, DChangeType::Created)
                | (SchemaChangeType::Updated, DChangeType::Updated)
                | (SchemaChangeType::Dropped, DChangeType::Dropped)
        )
    };
    match (&ours.target, theirs) {
        (
            SchemaChangeTarget::Keyspace { keyspace },
            SchemaChangeEvent::KeyspaceChange {
                change_type,
                keyspace_name,
            },
        ) => {
            assert!(change_ok(change_type));
            assert_eq!(keyspace, keyspace_name);
        }
        (
            SchemaChangeTarget::Table { keyspace, table },
            SchemaChangeEvent::TableChange {
                change_type,
                keyspace_name,
                object_name,
            },
        ) => {
            assert!(change_ok(change_type));
            assert_eq!((keyspace, table), (keyspace_name, object_name));
        }
        (
            SchemaChangeTarget::Type { keyspace, name },
            SchemaChangeEvent::TypeChange {
                change_type,
                keyspace_name,
                type_name,
            },
        ) => {
            assert!(change_ok(change_type));
            assert_eq!((keyspace, name), (keyspace_name, type_name));
        }
        (
            SchemaChangeTarget::Function {
                keyspace,
                name,
                arg_types,
            },
            SchemaChangeEvent::FunctionChange {
                change_type,
                keyspace_name,
                function_name,
                arguments,
            },
        ) => {
            assert!(change_ok(change_type));
            assert_eq!(
                (keyspace, name, arg_types),
                (keyspace_name, function_name, arguments)
            );
        }
        (
            SchemaChangeTarget::Aggregate {
                keyspace,
                name,
                arg_types,
            },
            SchemaChangeEvent::AggregateChange {
                change_type,
                keyspace_name,
                aggregate_name,
                arguments,
            },
        ) => {
            assert!(change_ok(change_type));
            assert_eq!(
                (keyspace, name, arg_types),
                (keyspace_name, aggregate_name, arguments)
            );
        }
        (o, t) => panic!("mismatch: {o:?} vs {t:?}"),
    }
}

#[test]
fn schema_change_results_and_events() {
    for sc in schema_changes() {
        let (r, _) = driver_decode(&encode(&Response::SchemaChange(sc.clone()), 11), 11);
        let ResponseV2::Result(DResult::SchemaChange(got)) = r else {
            panic!("not a schema change")
        };
        check_schema_change(&sc, &got.event);

        let mut out = BytesMut::new();
        encode_event(&mut out, &Event::SchemaChange(sc.clone()));
        let (r, _) = driver_decode(&out, -1);
        let ResponseV2::Event(EventV2::SchemaChange(got)) = r else {
            panic!("not a schema change event")
        };
        check_schema_change(&sc, &got);
    }
}

#[test]
fn topology_and_status_events() {
    let v4: SocketAddr = "127.0.0.2:9042".parse().unwrap();
    let v6: SocketAddr = "[fe80::1]:9043".parse().unwrap();
    for addr in [v4, v6] {
        for change in [TopologyChangeType::NewNode, TopologyChangeType::RemovedNode] {
            let mut out = BytesMut::new();
            encode_event(&mut out, &Event::TopologyChange { change, addr });
            let (r, _) = driver_decode(&out, -1);
            match (change, r) {
                (
                    TopologyChangeType::NewNode,
                    ResponseV2::Event(EventV2::TopologyChange(TopologyChangeEvent::NewNode(a))),
                )
                | (
                    TopologyChangeType::RemovedNode,
                    ResponseV2::Event(EventV2::TopologyChange(TopologyChangeEvent::RemovedNode(a))),
                ) => assert_eq!(a, addr),
                (c, r) => panic!("{c:?} decoded as {r:?}"),
            }
        }
        for change in [StatusChangeType::Up, StatusChangeType::Down] {
            let mut out = BytesMut::new();
            encode_event(&mut out, &Event::StatusChange { change, addr });
            let (r, _) = driver_decode(&out, -1);
            match (change, r) {
                (
                    StatusChangeType::Up,
                    ResponseV2::Event(EventV2::StatusChange(StatusChangeEvent::Up(a))),
                )
                | (
                    StatusChangeType::Down,
                    ResponseV2::Event(EventV2::StatusChange(StatusChangeEvent::Down(a))),
                ) => assert_eq!(a, addr),
                (c, r) => panic!("{c:?} decoded as {r:?}"),
            }
        }
    }
}

#[test]
fn prepared_with_pk_indexes_lwt_flag_and_metadata() {
    let vars = vec![
        ColumnSpec::new("ks", "t", "ck", CqlType::Int),
        ColumnSpec::new("ks", "t", "pk2", CqlType::Text),
        ColumnSpec::new("ks", "t", "pk1", CqlType::Bigint),
    ];
    let result = ResultMetadata {
        columns: vec![
            ColumnSpec::new("ks", "t", "[applied]", CqlType::Boolean),
            ColumnSpec::new("ks", "t", "v", CqlType::Blob),
        ],
    };
    for (lwt, ext) in [
        (true, full_ext()),
        (false, full_ext()),
        (true, Extensions::default()),
    ] {
        let p = Prepared {
            id: Bytes::from_static(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]),
            metadata: PreparedMetadata {
                lwt,
                pk_indexes: vec![2, 1],
                variables: vars.clone(),
            },
            result_metadata: Some(result.clone()),
        };
        let mut out = BytesMut::new();
        encode_response(
            &mut out,
            7,
            &ext,
            &[],
            &Response::Prepared(Arc::new(p.clone())),
        );
        let (r, _) = driver_decode(&out, 7);
        let ResponseV2::Result(DResult::Prepared(got)) = r else {
            panic!("not prepared")
        };
        assert_eq!(&got.id[..], &p.id[..]);
        let pm = &got.prepared_metadata;
        assert_eq!(
            driver_features().prepared_flags_contain_lwt_mark(pm.flags as u32),
            lwt && ext.lwt_mark.is_some()
        );
        assert_eq!(pm.flags & 0x0001, 0x0001, "global table spec");
        assert_eq!(pm.col_count, 3);
        // The driver sorts by bind index and keeps the key position in `sequence`.
        let pk: Vec<(u16, u16)> = pm
            .pk_indexes
            .iter()
            .map(|p| (p.index, p.sequence))
            .collect();
        assert_eq!(pk, vec![(1, 1), (2, 0)]);
        for (spec, ours) in pm.col_specs.iter().zip(&vars) {
            assert_eq!(spec.table_spec().ks_name(), "ks");
            assert_eq!(spec.table_spec().table_name(), "t");
            assert_eq!(spec.name(), ours.name);
            assert_eq!(spec.typ(), &driver_type(&ours.typ));
        }
        let rm = &got.result_metadata;
        assert_eq!(rm.col_count(), 2);
        assert_eq!(rm.col_specs()[0].name(), "[applied]");
        assert_eq!(
            rm.col_specs()[1].typ(),
            &ColumnType::Native(NativeType::Blob)
        );
    }
}

#[test]
fn prepared_without_variables_or_result_metadata() {
    let p = Prepared {
        id: Bytes::from_static(b"id"),
        metadata: PreparedMetadata::default(),
        result_metadata: None,
    };
    let (r, _) = driver_decode(&encode(&Response::Prepared(Arc::new(p)), 1), 1);
    let ResponseV2::Result(DResult::Prepared(got)) = r else {
        panic!("not prepared")
    };
    assert_eq!(got.prepared_metadata.col_count, 0);
    assert_eq!(got.prepared_metadata.flags, 0);
    assert!(got.prepared_metadata.pk_indexes.is_empty());
    assert_eq!(got.result_metadata.col_count(), 0);
}

#[test]
fn prepared_variables_from_several_tables_have_per_column_specs() {
    let p = Prepared {
        id: Bytes::from_static(b"id"),
        metadata: PreparedMetadata {
            lwt: false,
            pk_indexes: vec![],
            variables: vec![
                ColumnSpec::new("ks", "a", "x", CqlType::Int),
                ColumnSpec::new("ks2", "b", "y", CqlType::Uuid),
            ],
        },
        result_metadata: None,
    };
    let (r, _) = driver_decode(&encode(&Response::Prepared(Arc::new(p)), 1), 1);
    let ResponseV2::Result(DResult::Prepared(got)) = r else {
        panic!("not prepared")
    };
    let pm = got.prepared_metadata;
    assert_eq!(pm.flags & 1, 0);
    assert_eq!(pm.col_specs[1].table_spec().ks_name(), "ks2");
    assert_eq!(pm.col_specs[1].table_spec().table_name(), "b");
    assert_eq!(pm.col_specs[1].typ(), &ColumnType::Native(NativeType::Uuid));
}

#[test]
fn rows_metadata_carries_every_type() {
    let types = every_type();
    let meta = ResultMetadata {
        columns: types
            .iter()
            .enumerate()
            .map(|(i, t)| ColumnSpec::new("ks", "all_types", format!("c{i}"), t.clone()))
            .collect(),
    };
    let mut out = BytesMut::new();
    let mut w = RowsWriter::begin(&mut out, 3, &meta, None);
    for _ in 0..2 {
        for _ in &types {
            w.null_cell();
        }
        w.end_row();
    }
    assert_eq!(w.finish(), Ok(2));
    let (r, _) = driver_decode(&out, 3);
    let ResponseV2::Result(DResult::Rows((raw, paging))) = r else {
        panic!("not rows")
    };
    assert!(paging.finished());
    let rows = raw.deserialize_metadata().unwrap();
    assert_eq!(rows.rows_count(), 2);
    let specs = rows.metadata().col_specs();
    assert_eq!(specs.len(), types.len());
    for (spec, (i, t)) in specs.iter().zip(types.iter().enumerate()) {
        assert_eq!(spec.name(), format!("c{i}"));
        assert_eq!(spec.table_spec().ks_name(), "ks");
        assert_eq!(spec.table_spec().table_name(), "all_types");
        assert_eq!(spec.typ(), &driver_type(t), "column {i}: {t}");
    }
    let decoded: Vec<Row> = rows
        .rows_iter::<Row>()
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert!(
        decoded
            .iter()
            .all(|r| r.columns.iter().all(Option::is_none))
    );
}

#[test]
fn rows_with_values_paging_state_and_per_column_specs() {
    let meta = ResultMetadata {
        columns: vec![
            ColumnSpec::new("ks", "t", "pk", CqlType::Int),
            ColumnSpec::new("ks", "t", "name", CqlType::Text),
            ColumnSpec::new("other", "u", "data", CqlType::Blob),
        ],
    };
    let paging_state = [0x10u8, 0x20, 0x30];
    let mut out = BytesMut::new();
    let mut w = RowsWriter::begin(&mut out, 99, &meta, Some(&paging_state));
    for i in 0..10i32 {
        w.cell(Some(&i.to_be_bytes()));
        if i % 3 == 0 {
            w.null_cell();
        } else {
            w.cell_with(|b| b.extend_from_slice(format!("row {i}").as_bytes()));
        }
        w.cell(Some(&[]));
        w.end_row();
    }
    assert_eq!(w.finish(), Ok(10));
    let (r, _) = driver_decode(&out, 99);
    let ResponseV2::Result(DResult::Rows((raw, paging))) = r else {
        panic!("not rows")
    };
    assert!(!paging.finished());
    let scylla_cql::frame::request::query::PagingStateResponse::HasMorePages { state } = paging
    else {
        panic!("no paging state")
    };
    assert_eq!(&state.as_bytes_slice().unwrap()[..], &paging_state[..]);
    let rows = raw.deserialize_metadata().unwrap();
    let specs = rows.metadata().col_specs();
    assert_eq!(specs[2].table_spec().ks_name(), "other");
    assert_eq!(specs[2].table_spec().table_name(), "u");
    let decoded: Vec<Row> = rows
        .rows_iter::<Row>()
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(decoded.len(), 10);
    for (i, row) in decoded.iter().enumerate() {
        let i = i as i32;
        assert_eq!(row.columns[0], Some(CqlValue::Int(i)));
        let name = if i % 3 == 0 {
            None
        } else {
            Some(CqlValue::Text(format!("row {i}")))
        };
        assert_eq!(row.columns[1], name);
        assert_eq!(row.columns[2], Some(CqlValue::Blob(vec![])));
    }
}

#[test]
fn rows_with_no_metadata_and_the_owned_rows_response() {
    let meta = Arc::new(ResultMetadata {
        columns: vec![ColumnSpec::new("ks", "t", "v", CqlType::Int)],
    });
    let resp = Response::Rows(RowsResult {
        metadata: meta.clone(),
        paging_state: None,
        skip_metadata: true,
        rows: vec![vec![Some(Bytes::from_static(&[0, 0, 0, 5]))], vec![None]],
    });
    let (r, _) = driver_decode(&encode(&resp, 4), 4);
    let ResponseV2::Result(DResult::Rows((raw, _))) = r else {
        panic!("not rows")
    };
    assert!(raw.no_metadata());
    let rows = raw.deserialize_metadata().unwrap();
    assert_eq!(rows.rows_count(), 2);
    assert!(rows.metadata().col_specs().is_empty());

    let full = Response::Rows(RowsResult {
        metadata: meta,
        paging_state: Some(Bytes::from_static(b"p")),
        skip_metadata: false,
        rows: vec![vec![Some(Bytes::from_static(&[0, 0, 0, 5]))]],
    });
    let (r, _) = driver_decode(&encode(&full, 4), 4);
    let ResponseV2::Result(DResult::Rows((raw, paging))) = r else {
        panic!("not rows")
    };
    assert!(!paging.finished());
    let rows = raw.deserialize_metadata().unwrap();
    let decoded: Vec<Row> = rows
        .rows_iter::<Row>()
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(decoded[0].columns[0], Some(CqlValue::Int(5)));
}

#[test]
fn malformed_owned_rows_become_a_server_error() {
    let resp = Response::Rows(RowsResult {
        metadata: Arc::new(ResultMetadata {
            columns: vec![ColumnSpec::new("ks", "t", "v", CqlType::Int)],
        }),
        paging_state: None,
        skip_metadata: false,
        rows: vec![vec![None, None]],
    });
    let (r, _) = driver_decode(&encode(&resp, 4), 4);
    let ResponseV2::Error(e) = r else {
        panic!("not an error")
    };
    assert_eq!(e.error, DbError::ServerError);
}

#[test]
fn several_responses_share_one_buffer() {
    let mut out = BytesMut::new();
    encode_response(&mut out, 1, &full_ext(), &[], &Response::Ready);
    encode_event(
        &mut out,
        &Event::StatusChange {
            change: StatusChangeType::Up,
            addr: "127.0.0.1:9042".parse().unwrap(),
        },
    );
    encode_response(&mut out, 2, &full_ext(), &[], &Response::Void);
    let mut rest = &out[..];
    let mut streams = vec![];
    while !rest.is_empty() {
        let len = u32::from_be_bytes([rest[5], rest[6], rest[7], rest[8]]) as usize;
        let (frame, tail) = rest.split_at(9 + len);
        let stream = i16::from_be_bytes([frame[2], frame[3]]);
        driver_decode(frame, stream);
        streams.push(stream);
        rest = tail;
    }
    assert_eq!(streams, vec![1, -1, 2]);
}
