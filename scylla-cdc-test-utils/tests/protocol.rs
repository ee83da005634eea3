//! Bad input on the wire, sent with a raw socket (no driver): every malformed frame,
//! unknown opcode, oversized length, invalid UTF-8, wrong value type and syntax error gets the
//! right ERROR frame, and the connection stays usable where the protocol allows it.
//!
//! The tests talk to the cluster's first contact point, so they also run against the real
//! cluster of `SCYLLA_URI`: the embedded server answers loose framing (unknown flags,
//! trailing bytes, unnegotiated compression, oversized bodies) as Scylla does. Exact error
//! messages are checked on the embedded cluster only.

use std::time::Duration;

use scylla_cdc_test_utils::{
    EmbeddedCluster, FaultReaction, FaultRule, TestCluster, embedded_only, unique_keyspace_name,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const OPTIONS: u8 = 0x05;
const STARTUP: u8 = 0x01;
const QUERY: u8 = 0x07;
const PREPARE: u8 = 0x09;
const EXECUTE: u8 = 0x0A;
const BATCH: u8 = 0x0D;
const ERROR: u8 = 0x00;
const READY: u8 = 0x02;
const SUPPORTED: u8 = 0x06;
const RESULT: u8 = 0x08;

/// A response frame.
#[derive(Debug)]
struct Frame {
    version: u8,
    stream: i16,
    opcode: u8,
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
}

impl Raw {
    async fn connect(addr: &str) -> Raw {
        Raw {
            socket: TcpStream::connect(addr).await.expect("connect"),
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
        Some(Frame {
            version: header[0],
            stream: i16::from_be_bytes([header[2], header[3]]),
            opcode: header[4],
            body,
        })
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
