//! Property tests: arbitrary and mutated input never makes the decoder panic, truncated
//! frames wait for more bytes, and any request a test encoder can build decodes back to
//! itself; on a connection that negotiated compression too, with compressed bodies
//! (valid, mutated, or arbitrary bytes behind the compression flag).

use bytes::{BufMut, Bytes, BytesMut};
use proptest::prelude::*;

use super::compression::{self, Compression};
use super::wire::{
    put_byte, put_consistency, put_int, put_long, put_long_string, put_short, put_short_bytes,
    put_string, put_string_list, put_string_map, put_value,
};
use super::*;

/// Feeds `input` to the decoder the way a server does; returns how many frames were read.
/// Panics (fails the property) only if a decoder invariant is broken.
fn drive(input: &[u8]) -> usize {
    drive_with(input, None)
}

/// [`drive`] on a connection that negotiated `codec`.
fn drive_with(input: &[u8], codec: Option<Compression>) -> usize {
    let mut buf = BytesMut::from(input);
    let mut frames = 0;
    loop {
        let before = buf.len();
        match try_decode_frame_of(&mut buf, false, codec) {
            Ok(None) => {
                assert_eq!(buf.len(), before, "Ok(None) must not consume bytes");
                return frames;
            }
            Ok(Some(f)) => {
                if f.flags & 0x01 == 0 {
                    assert!(buf.len() + HEADER_LEN + f.body.len() <= before);
                } else {
                    // A decompressed body may outgrow its frame, never the body limit.
                    assert!(codec.is_some());
                    assert!(buf.len() + HEADER_LEN <= before);
                    assert!(f.body.len() <= super::header::MAX_BODY_LEN);
                }
                frames += 1;
                if let Err(v) = decode_request(f.opcode, f.body) {
                    let mut out = BytesMut::new();
                    encode_response(
                        &mut out,
                        f.stream,
                        &Extensions::default(),
                        &[],
                        &Response::Error(v),
                    );
                    assert!(out.len() > HEADER_LEN);
                }
            }
            Err(e) => {
                let mut out = BytesMut::new();
                e.write_response(&mut out);
                assert!(!out.is_empty());
                if !e.can_continue() {
                    assert_eq!(buf.len(), before, "a fatal error consumes nothing");
                    return frames;
                }
                assert!(buf.len() < before, "a recoverable error consumes its frame");
            }
        }
    }
}

fn request_frame(stream: i16, flags: u8, opcode: u8, body: &[u8]) -> Vec<u8> {
    let mut b = BytesMut::new();
    b.put_u8(4);
    b.put_u8(flags);
    b.put_i16(stream);
    b.put_u8(opcode);
    b.put_u32(body.len() as u32);
    b.extend_from_slice(body);
    b.to_vec()
}

// --- A test-only request encoder, the inverse of `decode_request` ---------------------

fn put_params(out: &mut BytesMut, p: &QueryParams) {
    put_consistency(out, p.consistency);
    let mut flags = 0u8;
    if !p.values.is_empty() {
        flags |= 0x01;
        if p.names.is_some() {
            flags |= 0x40;
        }
    }
    if p.skip_metadata {
        flags |= 0x02;
    }
    if p.page_size.is_some() {
        flags |= 0x04;
    }
    if p.paging_state.is_some() {
        flags |= 0x08;
    }
    if p.serial_consistency.is_some() {
        flags |= 0x10;
    }
    if p.timestamp.is_some() {
        flags |= 0x20;
    }
    put_byte(out, flags);
    if !p.values.is_empty() {
        put_short(out, p.values.len() as u16);
        for (i, v) in p.values.iter().enumerate() {
            if let Some(names) = &p.names {
                put_string(out, &names[i]);
            }
            put_value(out, v);
        }
    }
    if let Some(n) = p.page_size {
        put_int(out, n);
    }
    if let Some(ps) = &p.paging_state {
        super::wire::put_bytes(out, Some(ps));
    }
    if let Some(c) = p.serial_consistency {
        put_consistency(out, c);
    }
    if let Some(t) = p.timestamp {
        put_long(out, t);
    }
}

fn encode_request(r: &Request) -> (u8, Bytes) {
    let mut out = BytesMut::new();
    let op = match r {
        Request::Startup(opts) => {
            put_string_map(&mut out, opts);
            request_opcode::STARTUP
        }
        Request::Options => request_opcode::OPTIONS,
        Request::Query { query, params } => {
            put_long_string(&mut out, query);
            put_params(&mut out, params);
            request_opcode::QUERY
        }
        Request::Prepare { query } => {
            put_long_string(&mut out, query);
            request_opcode::PREPARE
        }
        Request::Execute { id, params } => {
            put_short_bytes(&mut out, id);
            put_params(&mut out, params);
            request_opcode::EXECUTE
        }
        Request::Batch(b) => {
            put_byte(
                &mut out,
                match b.kind {
                    BatchKind::Logged => 0,
                    BatchKind::Unlogged => 1,
                    BatchKind::Counter => 2,
                },
            );
            put_short(&mut out, b.statements.len() as u16);
            for s in &b.statements {
                match &s.query {
                    BatchQuery::Text(t) => {
                        put_byte(&mut out, 0);
                        put_long_string(&mut out, t);
                    }
                    BatchQuery::Prepared(id) => {
                        put_byte(&mut out, 1);
                        put_short_bytes(&mut out, id);
                    }
                }
                put_short(&mut out, s.values.len() as u16);
                for v in &s.values {
                    put_value(&mut out, v);
                }
            }
            put_consistency(&mut out, b.consistency);
            let mut flags = 0;
            if b.serial_consistency.is_some() {
                flags |= 0x10;
            }
            if b.timestamp.is_some() {
                flags |= 0x20;
            }
            put_byte(&mut out, flags);
            if let Some(c) = b.serial_consistency {
                put_consistency(&mut out, c);
            }
            if let Some(t) = b.timestamp {
                put_long(&mut out, t);
            }
            request_opcode::BATCH
        }
        Request::Register { events } => {
            put_string_list(&mut out, events);
            request_opcode::REGISTER
        }
        Request::AuthResponse { token } => {
            super::wire::put_bytes(&mut out, token.as_deref());
            request_opcode::AUTH_RESPONSE
        }
    };
    (op, out.freeze())
}

// --- Strategies --------------------------------------------------------------------------

fn consistency() -> impl Strategy<Value = Consistency> {
    proptest::sample::select(Consistency::ALL.to_vec())
}

fn bytes(max: usize) -> impl Strategy<Value = Bytes> {
    proptest::collection::vec(any::<u8>(), 0..max).prop_map(Bytes::from)
}

fn bound_value() -> impl Strategy<Value = BoundValue> {
    prop_oneof![
        bytes(16).prop_map(BoundValue::Value),
        Just(BoundValue::Null),
        Just(BoundValue::Unset),
    ]
}

fn params() -> impl Strategy<Value = QueryParams> {
    (
        consistency(),
        proptest::collection::vec(bound_value(), 0..6),
        any::<bool>(),
        any::<bool>(),
        proptest::option::of(any::<i32>()),
        proptest::option::of(bytes(8)),
        proptest::option::of(consistency()),
        proptest::option::of(any::<i64>()),
    )
        .prop_map(
            |(consistency, values, named, skip_metadata, page_size, paging_state, serial, ts)| {
                let names = (named && !values.is_empty())
                    .then(|| (0..values.len()).map(|i| format!("n{i}\u{e9}")).collect());
                QueryParams {
                    consistency,
                    values,
                    names,
                    skip_metadata,
                    page_size,
                    paging_state,
                    serial_consistency: serial,
                    timestamp: ts,
                }
            },
        )
}

fn request() -> impl Strategy<Value = Request> {
    let text = "\\PC{0,24}";
    let batch_statement = (
        prop_oneof![
            text.prop_map(BatchQuery::Text),
            bytes(16).prop_map(BatchQuery::Prepared)
        ],
        proptest::collection::vec(bound_value(), 0..4),
    )
        .prop_map(|(query, values)| BatchStatement { query, values });
    prop_oneof![
        proptest::collection::vec((text, text), 0..4).prop_map(Request::Startup),
        Just(Request::Options),
        (text, params()).prop_map(|(query, params)| Request::Query { query, params }),
        text.prop_map(|query| Request::Prepare { query }),
        (bytes(16), params()).prop_map(|(id, params)| Request::Execute { id, params }),
        (
            proptest::sample::select(vec![
                BatchKind::Logged,
                BatchKind::Unlogged,
                BatchKind::Counter
            ]),
            proptest::collection::vec(batch_statement, 0..4),
            consistency(),
            proptest::option::of(consistency()),
            proptest::option::of(any::<i64>()),
        )
            .prop_map(
                |(kind, statements, consistency, serial_consistency, timestamp)| {
                    Request::Batch(BatchRequest {
                        kind,
                        statements,
                        consistency,
                        serial_consistency,
                        timestamp,
                    })
                }
            ),
        proptest::collection::vec(text, 0..4).prop_map(|events| Request::Register { events }),
        proptest::option::of(bytes(16)).prop_map(|token| Request::AuthResponse { token }),
    ]
}

/// A valid frame for an arbitrary request, with arbitrary tracing / custom payload flags.
fn valid_frame() -> impl Strategy<Value = (Request, Vec<u8>)> {
    (request(), any::<i16>(), any::<bool>(), any::<bool>()).prop_map(
        |(req, stream, tracing, payload)| {
            let (op, body) = encode_request(&req);
            let mut full = BytesMut::new();
            let mut flags = 0;
            if tracing {
                flags |= 0x02;
            }
            if payload {
                flags |= 0x04;
                super::wire::put_bytes_map(
                    &mut full,
                    &[("tablets-routing-v1", Some(Bytes::from_static(b"\x01\x02")))],
                );
            }
            full.extend_from_slice(&body);
            let frame = request_frame(stream, flags, op, &full);
            (req, frame)
        },
    )
}

fn codec() -> impl Strategy<Value = Compression> {
    prop_oneof![Just(Compression::Lz4), Just(Compression::Snappy)]
}

/// A valid frame whose body (custom payload included) is compressed with `codec`.
fn compressed_frame(codec: Compression) -> impl Strategy<Value = (Request, Vec<u8>)> {
    valid_frame().prop_map(move |(req, frame)| {
        let mut body = BytesMut::new();
        assert!(compression::compress_into(
            codec,
            &frame[HEADER_LEN..],
            &mut body
        ));
        let flags = frame[1] | 0x01;
        let stream = i16::from_be_bytes([frame[2], frame[3]]);
        (req, request_frame(stream, flags, frame[4], &body))
    })
}

#[derive(Debug, Clone)]
enum Mutation {
    Flip(usize, u8),
    Insert(usize, u8),
    Remove(usize),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Flip(i, b)),
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Insert(i, b)),
        any::<usize>().prop_map(Mutation::Remove),
        any::<usize>().prop_map(Mutation::Truncate),
    ]
}

fn apply(frame: &mut Vec<u8>, m: &Mutation) {
    if frame.is_empty() {
        return;
    }
    let len = frame.len();
    match *m {
        Mutation::Flip(i, b) => frame[i % len] ^= b | 1,
        Mutation::Insert(i, b) => frame.insert(i % (len + 1), b),
        Mutation::Remove(i) => {
            frame.remove(i % len);
        }
        Mutation::Truncate(i) => frame.truncate(i % len),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_bytes_never_panic(input in proptest::collection::vec(any::<u8>(), 0..512)) {
        drive(&input);
    }

    #[test]
    fn arbitrary_bodies_never_panic(op in any::<u8>(), body in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = decode_request(op, Bytes::from(body));
    }

    #[test]
    fn plausible_headers_with_arbitrary_bodies_never_panic(
        stream in any::<i16>(),
        flags in any::<u8>(),
        op in proptest::sample::select(vec![0x01u8, 0x05, 0x07, 0x09, 0x0A, 0x0B, 0x0D, 0x0F]),
        body in proptest::collection::vec(any::<u8>(), 0..256),
    ) {
        drive(&request_frame(stream, flags, op, &body));
    }

    #[test]
    fn mutated_valid_frames_never_panic(
        (_, frame) in valid_frame(),
        mutations in proptest::collection::vec(mutation(), 1..4),
    ) {
        let mut frame = frame;
        for m in &mutations {
            apply(&mut frame, m);
        }
        drive(&frame);
    }

    #[test]
    fn requests_round_trip((req, frame) in valid_frame()) {
        let mut buf = BytesMut::from(&frame[..]);
        let f = try_decode_frame(&mut buf).unwrap().unwrap();
        prop_assert!(buf.is_empty());
        prop_assert_eq!(decode_request(f.opcode, f.body).unwrap(), req);
    }

    #[test]
    fn truncated_frames_wait_until_complete(
        (req, frame) in valid_frame(),
        split in any::<usize>(),
    ) {
        for cut in 0..frame.len() {
            let mut buf = BytesMut::from(&frame[..cut]);
            prop_assert_eq!(try_decode_frame(&mut buf).unwrap(), None);
            prop_assert_eq!(buf.len(), cut);
        }
        // Delivered in two chunks, the frame decodes once it is complete.
        let split = split % (frame.len() + 1);
        let mut buf = BytesMut::from(&frame[..split]);
        let first = try_decode_frame(&mut buf).unwrap();
        prop_assert!(first.is_none() || split == frame.len());
        buf.extend_from_slice(&frame[split..]);
        let f = match first {
            Some(f) => f,
            None => try_decode_frame(&mut buf).unwrap().unwrap(),
        };
        prop_assert_eq!(decode_request(f.opcode, f.body).unwrap(), req);
    }

    #[test]
    fn compressed_requests_round_trip(
        (codec, (req, frame)) in codec().prop_flat_map(|c| (Just(c), compressed_frame(c))),
    ) {
        let mut buf = BytesMut::from(&frame[..]);
        let f = try_decode_frame_of(&mut buf, false, Some(codec)).unwrap().unwrap();
        prop_assert!(buf.is_empty());
        prop_assert_eq!(decode_request(f.opcode, f.body).unwrap(), req);
        // Cut anywhere, the frame waits for the rest.
        for cut in 0..frame.len() {
            let mut buf = BytesMut::from(&frame[..cut]);
            prop_assert_eq!(try_decode_frame_of(&mut buf, false, Some(codec)).unwrap(), None);
        }
    }

    #[test]
    fn mutated_compressed_frames_never_panic(
        (codec, (_, frame)) in codec().prop_flat_map(|c| (Just(c), compressed_frame(c))),
        mutations in proptest::collection::vec(mutation(), 1..4),
    ) {
        let mut frame = frame;
        for m in &mutations {
            apply(&mut frame, m);
        }
        drive_with(&frame, Some(codec));
    }

    #[test]
    fn arbitrary_compressed_bodies_never_panic(
        codec in codec(),
        stream in any::<i16>(),
        flags in any::<u8>(),
        op in proptest::sample::select(vec![0x01u8, 0x05, 0x07, 0x09, 0x0A, 0x0B, 0x0D, 0x0F]),
        body in proptest::collection::vec(any::<u8>(), 0..256),
    ) {
        drive_with(&request_frame(stream, flags | 0x01, op, &body), Some(codec));
    }

    #[test]
    fn bodies_with_a_lying_length_prefix_never_panic(
        codec in codec(),
        declared in any::<u32>(),
        rest in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        let mut body = Vec::new();
        match codec {
            Compression::Lz4 => body.extend_from_slice(&declared.to_be_bytes()),
            Compression::Snappy => {
                // Snappy's varint preamble.
                let mut v = declared;
                while v >= 0x80 {
                    body.push((v as u8) | 0x80);
                    v >>= 7;
                }
                body.push(v as u8);
            }
        }
        body.extend_from_slice(&rest);
        drive_with(&request_frame(1, 0x01, 0x07, &body), Some(codec));
    }
}
