//! Bad input on the wire, sent with a raw socket (no driver): every malformed frame,
//! unknown opcode, oversized length, invalid UTF-8, wrong value type and syntax error gets the
//! right ERROR frame, and the connection stays usable where the protocol allows it.
//!
//! Compression (lz4, snappy) is negotiated here too, and its error cases (unknown codecs,
//! corrupt bodies, lying length prefixes) are sent by hand.
//!
//! The tests talk to the cluster's first contact point, so they also run against the real
//! cluster of `SCYLLA_URI`: the embedded server answers loose framing (unknown flags,
//! trailing bytes, unnegotiated compression, oversized bodies) as Scylla does. Exact error
//! messages are checked on the embedded cluster only.

use std::time::Duration;

use scylla_cdc_test_utils::{TestCluster, embedded_only, unique_keyspace_name};
use scylla_emulator::{EmbeddedCluster, FaultOpcode, FaultReaction, FaultRule};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const OPTIONS: u8 = 0x05;
const STARTUP: u8 = 0x01;
const REGISTER: u8 = 0x0B;
const QUERY: u8 = 0x07;
const PREPARE: u8 = 0x09;
const EXECUTE: u8 = 0x0A;
const BATCH: u8 = 0x0D;
const ERROR: u8 = 0x00;
const READY: u8 = 0x02;
const SUPPORTED: u8 = 0x06;
const RESULT: u8 = 0x08;
const EVENT: u8 = 0x0C;
/// Header flag of a compressed body.
const COMPRESSED: u8 = 0x01;

/// A frame body codec, written here from the spec (§5) for the tests' side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Codec {
    Lz4,
    Snappy,
}

impl Codec {
    fn name(self) -> &'static str {
        match self {
            Codec::Lz4 => "lz4",
            Codec::Snappy => "snappy",
        }
    }

    /// lz4: 4-byte big-endian uncompressed length, then a raw block; snappy: raw.
    fn compress(self, body: &[u8]) -> Vec<u8> {
        match self {
            Codec::Lz4 => {
                let mut out = (body.len() as u32).to_be_bytes().to_vec();
                out.extend_from_slice(&lz4_flex::block::compress(body));
                out
            }
            Codec::Snappy => snap::raw::Encoder::new()
                .compress_vec(body)
                .expect("snappy compresses"),
        }
    }

    fn decompress(self, body: &[u8]) -> Vec<u8> {
        match self {
            Codec::Lz4 => {
                let len = u32::from_be_bytes(body[..4].try_into().expect("lz4 prefix"));
                lz4_flex::block::decompress(&body[4..], len as usize).expect("lz4 body")
            }
            Codec::Snappy => snap::raw::Decoder::new()
                .decompress_vec(body)
                .expect("snappy body"),
        }
    }
}

/// A response frame (its body decompressed).
#[derive(Debug)]
struct Frame {
    version: u8,
    stream: i16,
    opcode: u8,
    /// Whether the body came compressed.
    compressed: bool,
    body: Vec<u8>,
}

impl Frame {
    /// The code and message of an ERROR frame.
    fn error(&self) -> (i32, String) {
        assert_eq!(self.opcode, ERROR, "expected an ERROR frame, got {self:?}");
        let code = i32::from_be_bytes(self.body[..4].try_into().expect("code"));
        let len = u16::from_be_bytes(self.body[4..6].try_into().expect("len")) as usize;
        let message = String::from_utf8_lossy(&self.body[6..6 + len]).into_owned();
        (code, message)
    }

    /// The RESULT kind.
    fn result_kind(&self) -> i32 {
        assert_eq!(self.opcode, RESULT, "expected a RESULT frame, got {self:?}");
        i32::from_be_bytes(self.body[..4].try_into().expect("kind"))
    }
}

struct Raw {
    socket: TcpStream,
    /// The codec negotiated in STARTUP.
    codec: Option<Codec>,
}

impl Raw {
    async fn connect(addr: &str) -> Raw {
        Raw {
            socket: TcpStream::connect(addr).await.expect("connect"),
            codec: None,
        }
    }

    fn frame(version: u8, flags: u8, stream: i16, opcode: u8, body: &[u8]) -> Vec<u8> {
        let mut f = vec![version, flags];
        f.extend_from_slice(&stream.to_be_bytes());
        f.push(opcode);
        f.extend_from_slice(&(body.len() as u32).to_be_bytes());
        f.extend_from_slice(body);
        f
    }

    async fn send_bytes(&mut self, bytes: &[u8]) {
        self.socket.write_all(bytes).await.expect("write");
    }

    async fn send(&mut self, stream: i16, opcode: u8, body: &[u8]) {
        let f = Raw::frame(0x04, 0, stream, opcode, body);
        self.send_bytes(&f).await;
    }

    /// The next frame, or `None` when the server closed the connection.
    async fn recv(&mut self) -> Option<Frame> {
        let mut header = [0u8; 9];
        let read =
            tokio::time::timeout(Duration::from_secs(5), self.socket.read_exact(&mut header))
                .await
                .expect("a response within 5 s");
        if read.is_err() {
            return None;
        }
        let len = u32::from_be_bytes(header[5..9].try_into().expect("len")) as usize;
        let mut body = vec![0u8; len];
        self.socket.read_exact(&mut body).await.ok()?;
        let compressed = header[1] & COMPRESSED != 0;
        if compressed {
            let codec = self
                .codec
                .expect("a compressed frame only after negotiation");
            body = codec.decompress(&body);
        }
        Some(Frame {
            version: header[0],
            stream: i16::from_be_bytes([header[2], header[3]]),
            opcode: header[4],
            compressed,
            body,
        })
    }

    /// A frame whose body is compressed with the negotiated codec.
    fn compressed_frame(&self, stream: i16, opcode: u8, body: &[u8]) -> Vec<u8> {
        let codec = self.codec.expect("a negotiated codec");
        Raw::frame(0x04, COMPRESSED, stream, opcode, &codec.compress(body))
    }

    /// Sends a request compressed with the negotiated codec and waits for its answer.
    async fn compressed_request(&mut self, stream: i16, opcode: u8, body: &[u8]) -> Frame {
        let f = self.compressed_frame(stream, opcode, body);
        self.send_bytes(&f).await;
        let f = self.recv().await.expect("a response");
        assert_eq!(f.stream, stream, "response on the request's stream");
        f
    }

    /// A connection that negotiated `codec` (spelled `name` in STARTUP, uncompressed); the
    /// READY comes compressed already, as Scylla sends it.
    async fn compressed(addr: &str, codec: Codec, name: &str) -> Raw {
        let mut raw = Raw::connect(addr).await;
        raw.codec = Some(codec);
        let startup = string_map(&[("CQL_VERSION", "3.0.0"), ("COMPRESSION", name)]);
        let f = raw.request(1, STARTUP, &startup).await;
        assert_eq!((f.opcode, f.compressed), (READY, true), "{f:?}");
        assert!(f.body.is_empty());
        raw
    }

    async fn request(&mut self, stream: i16, opcode: u8, body: &[u8]) -> Frame {
        self.send(stream, opcode, body).await;
        let f = self.recv().await.expect("a response");
        assert_eq!(f.stream, stream, "response on the request's stream");
        assert_eq!(f.version, 0x84, "response version");
        f
    }

    async fn startup(&mut self) {
        let mut body = 1u16.to_be_bytes().to_vec();
        for s in ["CQL_VERSION", "3.0.0"] {
            body.extend_from_slice(&(s.len() as u16).to_be_bytes());
            body.extend_from_slice(s.as_bytes());
        }
        let f = self.request(1, STARTUP, &body).await;
        assert_eq!(f.opcode, READY);
    }

    /// A connection after STARTUP.
    async fn ready(addr: &str) -> Raw {
        let mut raw = Raw::connect(addr).await;
        raw.startup().await;
        raw
    }

    /// Whether the connection still answers OPTIONS.
    async fn still_usable(&mut self) {
        let f = self.request(99, OPTIONS, &[]).await;
        assert_eq!(f.opcode, SUPPORTED);
    }
}

/// A `[string map]`.
fn string_map(entries: &[(&str, &str)]) -> Vec<u8> {
    let mut body = (entries.len() as u16).to_be_bytes().to_vec();
    for (k, v) in entries {
        for s in [k, v] {
            body.extend_from_slice(&(s.len() as u16).to_be_bytes());
            body.extend_from_slice(s.as_bytes());
        }
    }
    body
}

/// A SUPPORTED body (`[string multimap]`) as key → values.
fn supported_options(f: &Frame) -> Vec<(String, Vec<String>)> {
    assert_eq!(f.opcode, SUPPORTED, "{f:?}");
    let b = &f.body;
    let short = |at: usize| u16::from_be_bytes([b[at], b[at + 1]]) as usize;
    let mut at = 0;
    let string = |at: &mut usize| {
        let len = short(*at);
        let s = String::from_utf8_lossy(&b[*at + 2..*at + 2 + len]).into_owned();
        *at += 2 + len;
        s
    };
    let keys = short(at);
    at += 2;
    let mut out = Vec::new();
    for _ in 0..keys {
        let key = string(&mut at);
        let n = short(at);
        at += 2;
        let values = (0..n).map(|_| string(&mut at)).collect();
        out.push((key, values));
    }
    out
}

/// `[long string] query`, consistency ONE, the given flags byte and extra parameter bytes.
fn query_body(text: &[u8], flags: u8, rest: &[u8]) -> Vec<u8> {
    let mut b = (text.len() as i32).to_be_bytes().to_vec();
    b.extend_from_slice(text);
    b.extend_from_slice(&1u16.to_be_bytes());
    b.push(flags);
    b.extend_from_slice(rest);
    b
}

fn simple_query(text: &str) -> Vec<u8> {
    query_body(text.as_bytes(), 0, &[])
}

/// The cluster (an embedded one, or the one of `SCYLLA_URI`) and its first contact point.
async fn cluster() -> (TestCluster, String) {
    let cluster = TestCluster::start(EmbeddedCluster::builder())
        .await
        .expect("cluster starts");
    let contact_point = cluster.contact_points().swap_remove(0);
    (cluster, contact_point)
}

#[tokio::test]
async fn options_are_answered_before_and_after_startup() {
    let (cluster, contact_point) = cluster().await;
    let mut raw = Raw::connect(&contact_point).await;
    let f = raw.request(3, OPTIONS, &[]).await;
    assert_eq!(f.opcode, SUPPORTED);
    let text = String::from_utf8_lossy(&f.body);
    for key in [
        "SCYLLA_NR_SHARDS",
        "SCYLLA_SHARD",
        "SCYLLA_SHARD_AWARE_PORT",
        "SCYLLA_SHARDING_IGNORE_MSB",
    ] {
        assert!(text.contains(key), "SUPPORTED lacks {key}");
    }
    raw.startup().await;
    raw.still_usable().await;
    cluster.shutdown().await;
}

#[tokio::test]
async fn requests_before_startup_are_protocol_errors() {
    let (cluster, contact_point) = cluster().await;
    let mut raw = Raw::connect(&contact_point).await;
    let (code, message) = raw
        .request(5, QUERY, &simple_query("SELECT * FROM system.local"))
        .await
        .error();
    assert_eq!(code, 0x000A);
    assert!(message.contains("STARTUP"), "{message}");
    raw.startup().await;
    let f = raw
        .request(6, QUERY, &simple_query("SELECT key FROM system.local"))
        .await;
    assert_eq!(f.result_kind(), 2);
    cluster.shutdown().await;
}

#[tokio::test]
async fn malformed_requests_get_errors_and_the_connection_survives() {
    let (cluster, contact_point) = cluster().await;
    let mut raw = Raw::ready(&contact_point).await;

    // Unknown opcode.
    let (code, _) = raw.request(10, 0x55, b"whatever").await.error();
    assert_eq!(code, 0x000A);
    raw.still_usable().await;

    // A response opcode sent as a request.
    let (code, _) = raw.request(11, RESULT, &[0, 0, 0, 1]).await.error();
    assert_eq!(code, 0x000A);

    // A QUERY body that claims a 100-byte string but holds 5 bytes.
    let mut truncated = 100i32.to_be_bytes().to_vec();
    truncated.extend_from_slice(b"SELEC");
    let (code, _) = raw.request(12, QUERY, &truncated).await.error();
    assert_eq!(code, 0x000A);
    raw.still_usable().await;

    // Invalid UTF-8 in the statement.
    let (code, _) = raw
        .request(13, QUERY, &query_body(b"SELECT \xff\xfe FROM t", 0, &[]))
        .await
        .error();
    assert_eq!(code, 0x000A);
    raw.still_usable().await;
    cluster.shutdown().await;
}

/// `[short bytes] id`, consistency ONE, the given flags byte (an EXECUTE body).
fn execute_body(id: &[u8], flags: u8) -> Vec<u8> {
    let mut b = (id.len() as u16).to_be_bytes().to_vec();
    b.extend_from_slice(id);
    b.extend_from_slice(&1u16.to_be_bytes());
    b.push(flags);
    b
}

/// The id in a RESULT Prepared frame.
fn prepared_id(f: &Frame) -> Vec<u8> {
    assert_eq!(f.result_kind(), 4, "RESULT Prepared");
    let len = u16::from_be_bytes([f.body[4], f.body[5]]) as usize;
    f.body[6..6 + len].to_vec()
}

/// Every frame until the server closes the connection.
async fn until_closed(raw: &mut Raw) -> Vec<Frame> {
    let mut frames = Vec::new();
    while let Some(f) = raw.recv().await {
        frames.push(f);
    }
    frames
}

/// Unknown flag bits in QUERY, EXECUTE and BATCH get a Server error on the request's stream
/// (Scylla's flags decoding throws a non-CQL exception), and bytes after a complete body are
/// ignored (Scylla never checks what is left); the connection stays usable.
#[tokio::test]
async fn unknown_flags_are_server_errors_and_trailing_bytes_are_ignored() {
    let (cluster, contact_point) = cluster().await;
    let embedded = cluster.embedded().is_some();
    let mut raw = Raw::ready(&contact_point).await;

    // QUERY with an unknown flag bit.
    let (code, message) = raw
        .request(
            14,
            QUERY,
            &query_body(b"SELECT key FROM system.local", 0x80, &[]),
        )
        .await
        .error();
    assert_eq!(code, 0x0000, "{message}");
    if embedded {
        assert_eq!(message, "Bit mask contains invalid enumeration indices.");
    }

    // EXECUTE of a prepared statement with an unknown flag bit.
    let mut prepare = Vec::new();
    let text = b"SELECT key FROM system.local";
    prepare.extend_from_slice(&(text.len() as i32).to_be_bytes());
    prepare.extend_from_slice(text);
    let id = prepared_id(&raw.request(15, PREPARE, &prepare).await);
    let (code, message) = raw
        .request(16, EXECUTE, &execute_body(&id, 0x80))
        .await
        .error();
    assert_eq!(code, 0x0000, "{message}");
    // With an id nothing was prepared under, the id is checked first: Unprepared.
    let (code, message) = raw
        .request(16, EXECUTE, &execute_body(&[0xab; 16], 0x80))
        .await
        .error();
    assert_eq!(code, 0x2500, "{message}");

    // An empty unlogged BATCH with an unknown flag bit.
    let mut batch = vec![1, 0, 0];
    batch.extend_from_slice(&1u16.to_be_bytes());
    batch.push(0x80);
    let (code, message) = raw.request(17, BATCH, &batch).await.error();
    assert_eq!(code, 0x0000, "{message}");
    raw.still_usable().await;

    // Trailing garbage after a complete QUERY, EXECUTE and OPTIONS body.
    let mut trailing = simple_query("SELECT key FROM system.local");
    trailing.extend_from_slice(b"junk");
    assert_eq!(raw.request(18, QUERY, &trailing).await.result_kind(), 2);
    let mut trailing = execute_body(&id, 0);
    trailing.push(0);
    assert_eq!(raw.request(19, EXECUTE, &trailing).await.result_kind(), 2);
    assert_eq!(raw.request(20, OPTIONS, b"junk").await.opcode, SUPPORTED);
    raw.still_usable().await;
    cluster.shutdown().await;
}

/// A compressed frame on a connection that negotiated no compression gets a Protocol error on
/// stream 0, and a body over the server's size limit gets Invalid on its stream; either way
/// the request sent just before is still answered, then the connection closes and the node
/// keeps serving other connections. A connection's first frame may not exceed 100,000 bytes
/// (Protocol error on stream 0, then close).
#[tokio::test]
async fn unnegotiated_compression_and_oversized_frames_answer_then_close() {
    let (cluster, contact_point) = cluster().await;
    let embedded = cluster.embedded().is_some();
    let query = simple_query("SELECT key FROM system.local");

    // A query, then a compressed frame, in one write.
    let mut raw = Raw::ready(&contact_point).await;
    let mut bytes = Raw::frame(0x04, 0, 30, QUERY, &query);
    bytes.extend_from_slice(&Raw::frame(0x04, 0x01, 31, QUERY, &query));
    raw.send_bytes(&bytes).await;
    let frames = until_closed(&mut raw).await;
    assert_eq!(frames.len(), 2, "{frames:?}");
    let answer = frames
        .iter()
        .find(|f| f.stream == 30)
        .expect("the query's answer");
    assert_eq!(answer.result_kind(), 2);
    let error = frames
        .iter()
        .find(|f| f.stream == 0)
        .expect("an ERROR on stream 0");
    let (code, message) = error.error();
    assert_eq!(code, 0x000A, "{message}");
    if embedded {
        assert_eq!(message, "Unknown compression algorithm");
    }

    // A query, then the header of a 1 GiB body (over our 256 MiB limit, and over Scylla's
    // unless a shard has 20 GiB of memory), in one write.
    let mut raw = Raw::ready(&contact_point).await;
    let mut bytes = Raw::frame(0x04, 0, 40, QUERY, &query);
    bytes.extend_from_slice(&[0x04, 0, 0, 41, QUERY]);
    bytes.extend_from_slice(&(1u32 << 30).to_be_bytes());
    raw.send_bytes(&bytes).await;
    let frames = until_closed(&mut raw).await;
    assert_eq!(frames.len(), 2, "{frames:?}");
    let answer = frames
        .iter()
        .find(|f| f.stream == 40)
        .expect("the query's answer");
    assert_eq!(answer.result_kind(), 2);
    let error = frames
        .iter()
        .find(|f| f.stream == 41)
        .expect("an ERROR on stream 41");
    let (code, message) = error.error();
    assert_eq!(code, 0x2200, "{message}");
    if embedded {
        assert_eq!(
            message,
            "request size too large (frame size 1073741824; estimate 2147491648; \
             allowed 536878912)"
        );
    }

    // A first frame (before STARTUP) announcing a 200 kB body: refused from its header, on
    // stream 0, and the connection closes. A STARTUP is a few bytes; Scylla allows 100,000.
    let mut raw = Raw::connect(&contact_point).await;
    let mut header = vec![0x04, 0, 0, 7, OPTIONS];
    header.extend_from_slice(&200_000u32.to_be_bytes());
    raw.send_bytes(&header).await;
    let frames = until_closed(&mut raw).await;
    assert_eq!(frames.len(), 1, "{frames:?}");
    assert_eq!(frames[0].stream, 0);
    let (code, message) = frames[0].error();
    assert_eq!(code, 0x000A, "{message}");
    if embedded {
        assert_eq!(
            message,
            "Initial message size too large (200000), rejecting as invalid"
        );
    }

    // The node keeps serving other connections.
    let mut raw = Raw::ready(&contact_point).await;
    raw.still_usable().await;
    cluster.shutdown().await;
}

/// SUPPORTED lists both codecs, in Scylla's order; a STARTUP naming either (in any case)
/// turns compression on for that connection only: every response after it comes compressed
/// (the READY included), requests may come compressed or not, a malformed compressed request
/// gets a compressed error on its stream and the connection goes on, and events stay
/// uncompressed (Scylla writes them without the connection's codec).
#[tokio::test]
async fn either_codec_is_negotiated_per_connection() {
    let (cluster, contact_point) = cluster().await;
    let mut plain = Raw::connect(&contact_point).await;
    let supported = supported_options(&plain.request(3, OPTIONS, &[]).await);
    let compression = supported
        .iter()
        .find(|(k, _)| k == "COMPRESSION")
        .map(|(_, v)| v.clone());
    assert_eq!(
        compression,
        Some(vec!["lz4".to_string(), "snappy".to_string()])
    );
    plain.startup().await;

    let query = simple_query("SELECT key FROM system.local");
    for (codec, name) in [(Codec::Lz4, "lz4"), (Codec::Snappy, "SNAPPY")] {
        let mut raw = Raw::compressed(&contact_point, codec, name).await;
        let f = raw.compressed_request(4, QUERY, &query).await;
        assert!(f.compressed);
        assert_eq!(f.result_kind(), 2, "{}", codec.name());
        // An uncompressed request on the same connection: still a compressed answer.
        let f = raw.request(5, OPTIONS, &[]).await;
        assert_eq!((f.opcode, f.compressed), (SUPPORTED, true));
        // A malformed body inside a valid compressed frame.
        let mut truncated = 100i32.to_be_bytes().to_vec();
        truncated.extend_from_slice(b"SELEC");
        let f = raw.compressed_request(6, QUERY, &truncated).await;
        assert!(f.compressed);
        assert_eq!(f.error().0, 0x000A);
        assert_eq!(
            raw.compressed_request(7, QUERY, &query).await.result_kind(),
            2
        );

        // Events: REGISTER, then a schema change made on this connection.
        let mut register = 1u16.to_be_bytes().to_vec();
        register.extend_from_slice(&13u16.to_be_bytes());
        register.extend_from_slice(b"SCHEMA_CHANGE");
        let f = raw.compressed_request(8, REGISTER, &register).await;
        assert_eq!((f.opcode, f.compressed), (READY, true));
        let ks = unique_keyspace_name();
        let create = simple_query(&format!(
            "CREATE KEYSPACE {ks} WITH replication = \
             {{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}}"
        ));
        raw.send_bytes(&raw.compressed_frame(9, QUERY, &create))
            .await;
        let (mut result, mut event) = (None, None);
        while result.is_none() || event.is_none() {
            let f = raw.recv().await.expect("a frame");
            match f.stream {
                9 => result = Some(f),
                -1 => event = Some(f),
                other => panic!("unexpected frame on stream {other}: {f:?}"),
            }
        }
        let (result, event) = (result.expect("result"), event.expect("event"));
        assert_eq!((result.result_kind(), result.compressed), (5, true));
        assert_eq!((event.opcode, event.compressed), (EVENT, false));
        let f = raw
            .compressed_request(10, QUERY, &simple_query(&format!("DROP KEYSPACE {ks}")))
            .await;
        assert_eq!(f.result_kind(), 5);
    }

    // The connection without compression never sees a compressed frame.
    let f = plain.request(11, QUERY, &query).await;
    assert_eq!((f.result_kind(), f.compressed), (2, false));
    cluster.shutdown().await;
}

/// A STARTUP naming a codec the server lacks is a Protocol error naming it (lower-cased);
/// nothing is negotiated, and a STARTUP without it then succeeds.
#[tokio::test]
async fn startup_with_an_unknown_codec_is_a_protocol_error() {
    let (cluster, contact_point) = cluster().await;
    let embedded = cluster.embedded().is_some();
    let mut raw = Raw::connect(&contact_point).await;
    let startup = string_map(&[("CQL_VERSION", "3.0.0"), ("COMPRESSION", "ZStd")]);
    let f = raw.request(1, STARTUP, &startup).await;
    assert!(!f.compressed);
    let (code, message) = f.error();
    assert_eq!(code, 0x000A, "{message}");
    if embedded {
        assert_eq!(message, "Unknown compression algorithm: zstd");
    }
    raw.startup().await;
    let f = raw
        .request(2, QUERY, &simple_query("SELECT key FROM system.local"))
        .await;
    assert_eq!((f.result_kind(), f.compressed), (2, false));
    cluster.shutdown().await;
}

/// A compressed body that is not what its codec produces (a corrupt block, a length prefix
/// that disagrees with the block, a negative or absurd one, an lz4 body too short for its
/// prefix, a bad Snappy preamble) is a Server error on stream 0, uncompressed, with Scylla's
/// message; the request sent before it is still answered, then the connection closes.
#[tokio::test]
async fn corrupt_compressed_bodies_are_server_errors_then_close() {
    let (cluster, contact_point) = cluster().await;
    let embedded = cluster.embedded().is_some();
    let query = simple_query("SELECT key FROM system.local");
    let mut lz4_longer = Codec::Lz4.compress(&query);
    lz4_longer[..4].copy_from_slice(&(query.len() as u32 + 1).to_be_bytes());
    let mut lz4_shorter = Codec::Lz4.compress(&query);
    lz4_shorter[..4].copy_from_slice(&(query.len() as u32 - 1).to_be_bytes());
    const MISMATCH: &str =
        "Malformed CQL frame - provided uncompressed size different than real uncompressed size";
    let cases: Vec<(Codec, Vec<u8>, &str)> = vec![
        (
            Codec::Lz4,
            vec![0, 0, 0, 40, 0xF0, 1, 2, 3],
            "CQL frame LZ4 uncompression failure",
        ),
        (Codec::Lz4, lz4_longer, MISMATCH),
        (
            Codec::Lz4,
            lz4_shorter,
            "CQL frame LZ4 uncompression failure",
        ),
        (
            Codec::Lz4,
            vec![0x80, 0, 0, 0, 0],
            "CQL frame uncompressed length is negative: -2147483648",
        ),
        // 2 GiB announced by a 6-byte body.
        (
            Codec::Lz4,
            vec![0x7F, 0xFF, 0xFF, 0xFF, 0x10, b'a'],
            MISMATCH,
        ),
        (
            Codec::Lz4,
            vec![0, 0, 1],
            "CQL frame truncated: expected to have at least 4 bytes, got 3",
        ),
        (
            Codec::Snappy,
            vec![],
            "CQL frame Snappy uncompressed size is unknown",
        ),
        (
            Codec::Snappy,
            vec![0xFF, 0xFF, 0xFF, 0xFF, 0x7F],
            "CQL frame Snappy uncompressed size is unknown",
        ),
        (
            Codec::Snappy,
            vec![20, 0x08, b'a', b'b'],
            "CQL frame Snappy uncompression failure",
        ),
    ];
    for (codec, body, expected) in cases {
        let mut raw = Raw::compressed(&contact_point, codec, codec.name()).await;
        let mut bytes = raw.compressed_frame(60, QUERY, &query);
        bytes.extend_from_slice(&Raw::frame(0x04, COMPRESSED, 61, QUERY, &body));
        raw.send_bytes(&bytes).await;
        let frames = until_closed(&mut raw).await;
        let streams: Vec<i16> = frames.iter().map(|f| f.stream).collect();
        assert_eq!(streams, [60, 0], "{expected}: {frames:?}");
        assert_eq!((frames[0].result_kind(), frames[0].compressed), (2, true));
        assert!(!frames[1].compressed, "{expected}");
        let (code, message) = frames[1].error();
        assert_eq!(code, 0x0000, "{message}");
        if embedded {
            assert_eq!(message, expected);
        }
    }
    let mut raw = Raw::ready(&contact_point).await;
    raw.still_usable().await;
    cluster.shutdown().await;
}

/// A genuine compressed body that expands past the server's 256 MiB request limit (an lz4
/// block of about 1 MiB) gets the oversized-request answer on its stream, then the
/// connection closes; nothing near that size is allocated for a length the block cannot
/// produce (see `corrupt_compressed_bodies_are_server_errors_then_close`).
#[tokio::test]
async fn a_body_expanding_past_the_limit_is_too_large() {
    if !embedded_only(
        "a_body_expanding_past_the_limit_is_too_large",
        "Scylla's request limit depends on its memory",
    ) {
        return;
    }
    let (cluster, contact_point) = cluster().await;
    let mut raw = Raw::compressed(&contact_point, Codec::Lz4, "lz4").await;
    let huge = vec![0u8; 256 * 1024 * 1024 + 1];
    let body = Codec::Lz4.compress(&huge);
    drop(huge);
    let frame = Raw::frame(0x04, COMPRESSED, 70, QUERY, &body);
    raw.send_bytes(&frame).await;
    let frames = until_closed(&mut raw).await;
    assert_eq!(frames.len(), 1, "{frames:?}");
    assert_eq!((frames[0].stream, frames[0].compressed), (70, false));
    let (code, message) = frames[0].error();
    assert_eq!(code, 0x2200);
    assert_eq!(
        message,
        "request size too large (uncompressed frame size 268435457; estimate 536878914; \
         allowed 536878912)"
    );
    cluster.shutdown().await;
}

/// A fault that delays STARTUP or REGISTER delays the answer only: the connection is
/// negotiated (compression included) and registered at once, and the READY, compressed,
/// comes after the delay.
#[tokio::test]
async fn a_delayed_handshake_still_negotiates_and_registers() {
    if !embedded_only(
        "a_delayed_handshake_still_negotiates_and_registers",
        "injects a delay",
    ) {
        return;
    }
    let (cluster, contact_point) = cluster().await;
    let embedded = cluster.embedded().expect("embedded");
    let delay = Duration::from_millis(200);
    for opcode in [FaultOpcode::Startup, FaultOpcode::Register] {
        embedded.add_fault(
            FaultRule::new()
                .on_opcode(opcode)
                .respond(FaultReaction::Delay(delay))
                .times(1),
        );
    }
    let start = std::time::Instant::now();
    let mut raw = Raw::compressed(&contact_point, Codec::Snappy, "snappy").await;
    assert!(start.elapsed() >= delay, "the READY waited for the delay");
    let query = simple_query("SELECT key FROM system.local");
    let f = raw.compressed_request(2, QUERY, &query).await;
    assert_eq!((f.result_kind(), f.compressed), (2, true));

    let mut register = 1u16.to_be_bytes().to_vec();
    register.extend_from_slice(&13u16.to_be_bytes());
    register.extend_from_slice(b"SCHEMA_CHANGE");
    let start = std::time::Instant::now();
    let f = raw.compressed_request(3, REGISTER, &register).await;
    assert_eq!((f.opcode, f.compressed), (READY, true));
    assert!(start.elapsed() >= delay, "the READY waited for the delay");
    let ks = unique_keyspace_name();
    let create = simple_query(&format!(
        "CREATE KEYSPACE {ks} WITH replication = \
         {{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}}"
    ));
    raw.send_bytes(&raw.compressed_frame(4, QUERY, &create))
        .await;
    let mut streams = vec![raw.recv().await.expect("a frame").stream];
    streams.push(raw.recv().await.expect("a frame").stream);
    streams.sort_unstable();
    assert_eq!(streams, [-1, 4], "the schema change's result and its event");
    cluster.shutdown().await;
}

/// A request a fault rule delays is still answered when a later frame closes the
/// connection: the connection closes only once it is.
#[tokio::test]
async fn a_delayed_answer_is_sent_before_a_fatal_frame_closes_the_connection() {
    if !embedded_only(
        "a_delayed_answer_is_sent_before_a_fatal_frame_closes_the_connection",
        "injects a delay",
    ) {
        return;
    }
    let (cluster, contact_point) = cluster().await;
    let embedded = cluster.embedded().expect("embedded");
    embedded.add_fault(
        FaultRule::new()
            .on_statement_containing("system.peers")
            .respond(FaultReaction::Delay(Duration::from_millis(300))),
    );
    for compressed in [false, true] {
        let mut raw = Raw::ready(&contact_point).await;
        let mut bytes = Raw::frame(
            0x04,
            0,
            50,
            QUERY,
            &simple_query("SELECT peer FROM system.peers"),
        );
        if compressed {
            bytes.extend_from_slice(&Raw::frame(0x04, 0x01, 51, OPTIONS, &[]));
        } else {
            bytes.extend_from_slice(&[0x04, 0, 0, 51, QUERY]);
            bytes.extend_from_slice(&(1u32 << 30).to_be_bytes());
        }
        raw.send_bytes(&bytes).await;
        let frames = until_closed(&mut raw).await;
        let streams: Vec<i16> = frames.iter().map(|f| f.stream).collect();
        let error_stream = if compressed { 0 } else { 51 };
        assert_eq!(
            streams,
            [error_stream, 50],
            "the error, then the delayed answer"
        );
        assert_eq!(frames[1].result_kind(), 2);
    }
    cluster.shutdown().await;
}

#[tokio::test]
async fn cql_errors_have_their_codes() {
    let (cluster, contact_point) = cluster().await;
    let mut raw = Raw::ready(&contact_point).await;
    let (code, message) = raw
        .request(20, QUERY, &simple_query("SELEC * FROM t"))
        .await
        .error();
    assert_eq!(code, 0x2000, "{message}");
    let (code, message) = raw
        .request(21, QUERY, &simple_query("SELECT * FROM no_such_keyspace.t"))
        .await
        .error();
    assert_eq!(code, 0x2200, "{message}");
    let ks = unique_keyspace_name();
    for ddl in [
        format!(
            "CREATE KEYSPACE {ks} WITH replication = {{'class': 'NetworkTopologyStrategy', \
             'replication_factor': 1}}"
        ),
        format!("CREATE TABLE {ks}.t (pk int PRIMARY KEY, v text)"),
    ] {
        let f = raw.request(22, QUERY, &simple_query(&ddl)).await;
        assert_eq!(f.result_kind(), 5, "{ddl}: SchemaChange");
    }
    let (code, message) = raw
        .request(
            23,
            QUERY,
            &simple_query(&format!("CREATE TABLE {ks}.t (pk int PRIMARY KEY)")),
        )
        .await
        .error();
    assert_eq!(code, 0x2400, "AlreadyExists: {message}");

    // Prepare, then bind a 3-byte value to an int and invalid UTF-8 to a text column.
    let mut prepare = Vec::new();
    let text = format!("INSERT INTO {ks}.t (pk, v) VALUES (?, ?)");
    let text = text.as_bytes();
    prepare.extend_from_slice(&(text.len() as i32).to_be_bytes());
    prepare.extend_from_slice(text);
    let f = raw.request(24, PREPARE, &prepare).await;
    assert_eq!(f.result_kind(), 4);
    let id_len = u16::from_be_bytes([f.body[4], f.body[5]]) as usize;
    let id = f.body[6..6 + id_len].to_vec();
    let execute = |values: &[&[u8]]| {
        let mut b = (id.len() as u16).to_be_bytes().to_vec();
        b.extend_from_slice(&id);
        b.extend_from_slice(&1u16.to_be_bytes());
        b.push(0x01);
        b.extend_from_slice(&(values.len() as u16).to_be_bytes());
        for v in values {
            b.extend_from_slice(&(v.len() as i32).to_be_bytes());
            b.extend_from_slice(v);
        }
        b
    };
    let (code, message) = raw
        .request(25, EXECUTE, &execute(&[&[0, 0, 1], b"x"]))
        .await
        .error();
    assert_eq!(code, 0x2200, "wrong int size: {message}");
    let (code, message) = raw
        .request(26, EXECUTE, &execute(&[&[0, 0, 0, 1], b"\xff\xff"]))
        .await
        .error();
    assert_eq!(code, 0x2200, "invalid UTF-8 in text: {message}");
    let (code, message) = raw
        .request(27, EXECUTE, &execute(&[&[0, 0, 0, 1]]))
        .await
        .error();
    assert_eq!(code, 0x2200, "too few values: {message}");
    let f = raw
        .request(28, EXECUTE, &execute(&[&[0, 0, 0, 1], b"ok"]))
        .await;
    assert_eq!(f.result_kind(), 1, "a valid EXECUTE is Void");

    // An unknown prepared id: Unprepared with the id.
    let mut unknown = 4u16.to_be_bytes().to_vec();
    unknown.extend_from_slice(&[9, 9, 9, 9]);
    unknown.extend_from_slice(&1u16.to_be_bytes());
    unknown.push(0);
    let f = raw.request(29, EXECUTE, &unknown).await;
    let (code, _) = f.error();
    assert_eq!(code, 0x2500);
    let len = u16::from_be_bytes(f.body[4..6].try_into().expect("len")) as usize;
    let at = 6 + len;
    assert_eq!(&f.body[at..at + 2], &4u16.to_be_bytes());
    assert_eq!(&f.body[at + 2..at + 6], &[9, 9, 9, 9]);
    raw.still_usable().await;
    let f = raw
        .request(30, QUERY, &simple_query(&format!("DROP KEYSPACE {ks}")))
        .await;
    assert_eq!(f.result_kind(), 5, "DROP KEYSPACE: SchemaChange");
    cluster.shutdown().await;
}

#[tokio::test]
async fn many_requests_in_flight_are_answered_on_their_streams() {
    let (cluster, contact_point) = cluster().await;
    let mut raw = Raw::ready(&contact_point).await;
    let mut burst = Vec::new();
    for stream in 100..300i16 {
        let q = if stream % 3 == 0 {
            simple_query("SELEC nonsense")
        } else {
            simple_query("SELECT key FROM system.local")
        };
        burst.extend_from_slice(&Raw::frame(0x04, 0, stream, QUERY, &q));
    }
    raw.send_bytes(&burst).await;
    let mut seen = std::collections::BTreeSet::new();
    for _ in 100..300 {
        let f = raw.recv().await.expect("a response");
        let expected = if f.stream % 3 == 0 { ERROR } else { RESULT };
        assert_eq!(f.opcode, expected, "stream {}", f.stream);
        assert!(seen.insert(f.stream), "stream {} answered twice", f.stream);
    }
    assert_eq!(seen.len(), 200);
    cluster.shutdown().await;
}

#[tokio::test]
async fn fatal_framing_errors_answer_then_close() {
    let (cluster, contact_point) = cluster().await;
    // A protocol version the server does not speak.
    let mut raw = Raw::connect(&contact_point).await;
    raw.send_bytes(&Raw::frame(0x05, 0, 7, OPTIONS, &[])).await;
    let f = raw.recv().await.expect("an error first");
    let (code, message) = f.error();
    assert_eq!(code, 0x000A);
    assert!(message.contains("protocol version"), "{message}");
    assert!(raw.recv().await.is_none(), "then the connection closes");

    // Garbage instead of a header.
    let mut raw = Raw::connect(&contact_point).await;
    raw.send_bytes(&[0xff; 64]).await;
    let f = raw.recv().await.expect("an error first");
    assert_eq!(f.error().0, 0x000A);
    assert!(raw.recv().await.is_none(), "then the connection closes");

    // The node keeps serving other connections.
    let mut raw = Raw::ready(&contact_point).await;
    raw.still_usable().await;
    cluster.shutdown().await;
}
