//! The frame layout in both directions: the 9-byte v4 header, its flags and opcodes, the
//! body limit; request frames cut off the read buffer, response frames started and finished
//! (length patched) in the output buffer.
//!
//! [`try_decode_frame_of`] takes complete frames off the front of the connection's read buffer.
//! Errors found in the header are [`FrameError`]s that carry the error to answer, the stream
//! id to answer on, and whether the connection can go on (the body length was trusted and
//! skipped) or must be closed after the ERROR frame (as Scylla does, or because the byte
//! stream can no longer be followed).

use bytes::{Buf, BufMut, Bytes, BytesMut};

use super::compression::{self, Compression, DecompressError};
use super::error::{CqlError, ErrorKind};
use super::extensions::Extensions;
use super::wire::{Reader, put_bytes_map, put_string_list};

/// Size of a v3+ frame header.
pub(crate) const HEADER_LEN: usize = 9;
/// Largest request body accepted (256 MiB, Cassandra's default native transport limit).
/// Scylla's limit depends on its memory (see [`try_decode_frame_of`]); this one is fixed.
pub(crate) const MAX_BODY_LEN: usize = 256 * 1024 * 1024;

/// Longest body of a connection's first frame (an OPTIONS or STARTUP, a few bytes), as in
/// Scylla: `cql_server::connection::read_frame` (`transport/server.cc`) rejects a longer
/// first frame with a protocol exception before reading its body, so that a stray client
/// cannot make it allocate a huge buffer.
pub(crate) const MAX_FIRST_BODY_LEN: usize = 100_000;
/// The only protocol version served.
pub(crate) const PROTOCOL_VERSION: u8 = 4;

/// Header flag: the body is compressed.
pub(crate) const FLAG_COMPRESSION: u8 = 0x01;
/// Header flag: tracing requested (requests) / tracing id present (responses; tracing
/// requests are accepted and ignored: no trace id is returned, which drivers accept).
pub(crate) const FLAG_TRACING: u8 = 0x02;
/// Header flag: a custom payload (`[bytes map]`) precedes the body.
pub(crate) const FLAG_CUSTOM_PAYLOAD: u8 = 0x04;
/// Header flag: a warnings `[string list]` precedes the body (responses only).
pub(crate) const FLAG_WARNING: u8 = 0x08;

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

/// One request frame taken off the wire: header fields and the body (zero-copy).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RequestFrame {
    /// Stream id to answer on.
    pub stream: i16,
    /// Request opcode, not yet validated (see [`super::decode_request`]).
    pub opcode: u8,
    /// Header flags as sent (tracing is accepted and ignored: no trace id is returned, which
    /// drivers accept).
    pub flags: u8,
    /// The body after the custom payload, if any.
    pub body: Bytes,
}

/// A header-level error: send its ERROR frame ([`FrameError::write_response`]), then close
/// the connection unless [`FrameError::can_continue`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub(crate) struct FrameError {
    /// Stream id the ERROR goes on: the offending frame's, or 0 for an error Scylla raises
    /// outside any request.
    pub stream: i16,
    /// Protocol error, or Invalid for an oversized body.
    pub kind: ErrorKind,
    /// Message of the error.
    pub message: String,
    /// Whether the connection must be closed after the ERROR frame.
    pub fatal: bool,
    /// Protocol version to write the ERROR frame in (the client's own for v1–v3, so it can
    /// read the answer; 4 otherwise).
    reply_version: u8,
}

impl FrameError {
    /// A Protocol error after which the next frame can be read.
    fn recoverable(stream: i16, message: String) -> Self {
        FrameError {
            stream,
            kind: ErrorKind::ProtocolError,
            message,
            fatal: false,
            reply_version: PROTOCOL_VERSION,
        }
    }

    /// An error after which the connection must be closed.
    fn fatal(stream: i16, kind: ErrorKind, message: String, reply_version: u8) -> Self {
        FrameError {
            stream,
            kind,
            message,
            fatal: true,
            reply_version,
        }
    }

    /// Whether the connection stays usable after the ERROR frame.
    pub(crate) fn can_continue(&self) -> bool {
        !self.fatal
    }

    /// The error to answer with.
    pub(crate) fn to_cql_error(&self) -> CqlError {
        CqlError::new(self.kind.clone(), self.message.clone())
    }

    /// Appends the complete ERROR frame (on [`FrameError::stream`]).
    pub(crate) fn write_response(&self, out: &mut BytesMut) {
        let start = start_frame_with_version(out, self.reply_version, self.stream, 0x00, &[]);
        self.to_cql_error().put_body(out, &Extensions::default());
        finish_frame(out, start, self.reply_version);
    }
}

/// [`try_decode_frame_of`] for a frame that is not a connection's first.
#[cfg(test)]
pub(crate) fn try_decode_frame(buf: &mut BytesMut) -> Result<Option<RequestFrame>, FrameError> {
    try_decode_frame_of(buf, false, None)
}

/// Takes one complete request frame off the front of `buf`.
///
/// `Ok(None)`: more bytes are needed (nothing is consumed). `Ok(Some(frame))`: the frame's
/// bytes were removed from `buf`. `Err(e)`: answer with `e`'s ERROR frame; when
/// `e.can_continue()` the frame's bytes were removed and the next frame can be read,
/// otherwise the connection must be closed (and `buf` is left as it was).
///
/// Two header errors are answered as Scylla answers them, both before the body arrives, and
/// both close the connection once earlier requests are answered:
/// - A body over [`MAX_BODY_LEN`] gets Invalid on the frame's stream. Scylla
///   (`cql_server::connection::process_request`, `transport/server.cc`) estimates a
///   request's memory as twice its length plus 8000 bytes right after reading the header;
///   above its limit (a tenth of the shard's memory) it answers Invalid "request size too
///   large (...)" on the frame's stream, waits for the responses already under way, and
///   stops reading the connection, which then closes. The message states our limit in the
///   same terms.
/// - A compressed frame on a connection that negotiated no compression gets a Protocol error
///   "Unknown compression algorithm" on stream 0. In Scylla, `read_and_decompress_frame`
///   throws that protocol exception when the flag is set and the connection has no codec,
///   without reading the body; it ends the connection's request loop, and `handle_error`
///   (called from `connection::process`, `transport/generic_server.cc`) answers it on stream
///   0 before the connection closes once in-flight requests are done.
///
/// `compression` is the codec the connection negotiated in STARTUP. A frame with the
/// compression flag is decompressed (before its custom payload is read: the payload is part
/// of the body). A body that is not what the codec produces (see [`compression::decompress`])
/// is answered as Scylla answers the `std::runtime_error` it throws: a Server error with
/// Scylla's message on stream 0, through the same `handle_error` path, and the connection
/// closes; an lz4 body under 4 bytes gets it before the body arrives, as in Scylla. A body
/// that decompresses to more than [`MAX_BODY_LEN`] gets the oversized-body answer (Scylla
/// checks only the compressed length against its memory limit, then allocates whatever the
/// prefix says; this server's fixed limit applies to the uncompressed size too, so that a
/// few bytes cannot make it allocate gigabytes).
///
/// `first` says whether this is the connection's first frame: a first frame with a body
/// over [`MAX_FIRST_BODY_LEN`] gets a Protocol error on stream 0 (raised outside any
/// request, like the compression error) and closes the connection.
pub(crate) fn try_decode_frame_of(
    buf: &mut BytesMut,
    first: bool,
    compression: Option<Compression>,
) -> Result<Option<RequestFrame>, FrameError> {
    let Some(&version_byte) = buf.first() else {
        return Ok(None);
    };
    let version = version_byte & 0x7F;
    if version == 1 || version == 2 {
        return refuse_old_version(buf, version);
    }
    let Some(header) = buf.get(..HEADER_LEN) else {
        return Ok(None);
    };
    let flags = header[1];
    let stream = i16::from_be_bytes([header[2], header[3]]);
    let opcode = header[4];
    let length = u32::from_be_bytes([header[5], header[6], header[7], header[8]]);
    let length = check_header(version_byte, stream, length, first)?;
    let codec = if flags & FLAG_COMPRESSION != 0 {
        Some(negotiated_codec(compression, length)?)
    } else {
        None
    };
    if buf.len() - HEADER_LEN < length {
        return Ok(None);
    }
    let mut body = take_body(buf, codec, length, stream)?;
    if flags & FLAG_CUSTOM_PAYLOAD != 0 {
        let mut r = Reader::new(body.clone());
        if let Err(e) = r.read_bytes_map("the custom payload") {
            return Err(FrameError::recoverable(stream, e.message().to_string()));
        }
        body.advance(body.len() - r.remaining());
    }
    Ok(Some(RequestFrame {
        stream,
        opcode,
        flags,
        body,
    }))
}

/// A frame of protocol v1 or v2: refused once its 8-byte header (one-byte stream id) is in.
#[cold]
fn refuse_old_version(buf: &BytesMut, version: u8) -> Result<Option<RequestFrame>, FrameError> {
    let Some(&stream) = buf.get(2) else {
        return Ok(None);
    };
    if buf.len() < 8 {
        return Ok(None);
    }
    Err(FrameError::fatal(
        i16::from(stream as i8),
        ErrorKind::ProtocolError,
        unsupported_version_message(version),
        version,
    ))
}

/// Checks a v3+ header: protocol v4, a request, a body length within the limits (of a
/// first frame, and of any frame). Returns the body length.
#[inline]
fn check_header(
    version_byte: u8,
    stream: i16,
    length: u32,
    first: bool,
) -> Result<usize, FrameError> {
    let version = version_byte & 0x7F;
    if version != PROTOCOL_VERSION {
        let reply = if version == 3 { 3 } else { PROTOCOL_VERSION };
        return Err(FrameError::fatal(
            stream,
            ErrorKind::ProtocolError,
            unsupported_version_message(version),
            reply,
        ));
    }
    if version_byte & 0x80 != 0 {
        return Err(FrameError::fatal(
            stream,
            ErrorKind::ProtocolError,
            "Wrong protocol direction (expected REQUEST, got RESPONSE)".to_string(),
            PROTOCOL_VERSION,
        ));
    }
    let length = usize::try_from(length).unwrap_or(usize::MAX);
    if first && length > MAX_FIRST_BODY_LEN {
        return Err(FrameError::fatal(
            0,
            ErrorKind::ProtocolError,
            format!("Initial message size too large ({length}), rejecting as invalid"),
            PROTOCOL_VERSION,
        ));
    }
    if length > MAX_BODY_LEN {
        return Err(too_large(stream, "frame size", length));
    }
    Ok(length)
}

/// The codec of a compressed frame with a body of `length` bytes: the one the connection
/// negotiated (none is an error), and an lz4 body has at least its 4-byte length prefix.
#[inline]
fn negotiated_codec(
    compression: Option<Compression>,
    length: usize,
) -> Result<Compression, FrameError> {
    let Some(codec) = compression else {
        return Err(FrameError::fatal(
            0,
            ErrorKind::ProtocolError,
            "Unknown compression algorithm".to_string(),
            PROTOCOL_VERSION,
        ));
    };
    if codec == Compression::Lz4 && length < 4 {
        return Err(FrameError::fatal(
            0,
            ErrorKind::ServerError,
            compression::lz4_truncated_message(length),
            PROTOCOL_VERSION,
        ));
    }
    Ok(codec)
}

/// Takes the frame (header and body of `length` bytes, all in `buf`) off `buf` and returns
/// its body, decompressed with `codec` if the frame is compressed.
#[inline]
fn take_body(
    buf: &mut BytesMut,
    codec: Option<Compression>,
    length: usize,
    stream: i16,
) -> Result<Bytes, FrameError> {
    let Some(codec) = codec else {
        buf.advance(HEADER_LEN);
        return Ok(buf.split_to(length).freeze());
    };
    let compressed = &buf[HEADER_LEN..HEADER_LEN + length];
    let body = compression::decompress(codec, compressed, MAX_BODY_LEN).map_err(|e| match e {
        DecompressError::Corrupt(message) => {
            FrameError::fatal(0, ErrorKind::ServerError, message, PROTOCOL_VERSION)
        }
        DecompressError::TooLarge(size) => too_large(stream, "uncompressed frame size", size),
    })?;
    buf.advance(HEADER_LEN + length);
    Ok(Bytes::from(body))
}

/// The Invalid error of a body over [`MAX_BODY_LEN`] (`what` names the size measured).
fn too_large(stream: i16, what: &str, length: usize) -> FrameError {
    FrameError::fatal(
        stream,
        ErrorKind::Invalid,
        format!(
            "request size too large ({what} {length}; estimate {}; allowed {})",
            memory_estimate(length),
            memory_estimate(MAX_BODY_LEN)
        ),
        PROTOCOL_VERSION,
    )
}

/// Adds a custom payload (`[bytes map]` of `entries`) to the complete response frame that
/// starts at `start` in `out`: the body gets the map after its tracing id and warnings (the
/// order the spec reads body extensions in, and Scylla's `make_result` writes them), the
/// header the custom-payload flag and the new length. `false` (nothing changed) if there is
/// no complete v4 frame there, or it has a custom payload already.
pub(crate) fn insert_custom_payload(
    out: &mut BytesMut,
    start: usize,
    entries: &[(&str, Option<Bytes>)],
) -> bool {
    let Some(header) = out.get(start..start + HEADER_LEN) else {
        return false;
    };
    let flags = header[1];
    let len = u32::from_be_bytes([header[5], header[6], header[7], header[8]]) as usize;
    let body_start = start + HEADER_LEN;
    if header[0] != 0x80 | PROTOCOL_VERSION
        || flags & FLAG_CUSTOM_PAYLOAD != 0
        || out.len() < body_start + len
    {
        return false;
    }
    let mut at = body_start;
    if flags & FLAG_TRACING != 0 {
        at += 16;
    }
    if flags & FLAG_WARNING != 0 {
        let mut r = Reader::new(Bytes::copy_from_slice(&out[at..body_start + len]));
        if r.read_string_list("the warnings").is_err() {
            return false;
        }
        at = body_start + len - r.remaining();
    }
    if at > body_start + len {
        return false;
    }
    let mut payload = BytesMut::new();
    put_bytes_map(&mut payload, entries);
    let tail = out.split_off(at);
    out.extend_from_slice(&payload);
    out.extend_from_slice(&tail);
    out[start + 1] |= FLAG_CUSTOM_PAYLOAD;
    finish_frame(out, start, PROTOCOL_VERSION);
    true
}

/// Rewrites every complete frame from offset `from` of `out` with its body compressed by
/// `codec` and the compression flag set, as Scylla's `response::write_message` does for
/// every response on a connection that negotiated compression (whatever the body's size,
/// the empty body of READY included). A body the codec refuses stays uncompressed, without
/// the flag; bytes after the last complete frame are kept as they are.
pub(crate) fn compress_frames(out: &mut BytesMut, from: usize, codec: Compression) {
    if from >= out.len() {
        return;
    }
    let tail = out.split_off(from);
    let mut pos = 0;
    while let Some(header) = tail.get(pos..pos + HEADER_LEN) {
        let version = header[0] & 0x7F;
        let len = u32::from_be_bytes([header[5], header[6], header[7], header[8]]) as usize;
        let end = pos + HEADER_LEN + len;
        let (Some(body), true) = (tail.get(pos + HEADER_LEN..end), version >= 3) else {
            break;
        };
        let start = out.len();
        out.extend_from_slice(header);
        if compression::compress_into(codec, body, out) {
            out[start + 1] |= FLAG_COMPRESSION;
            finish_frame(out, start, PROTOCOL_VERSION);
        } else {
            out.extend_from_slice(body);
        }
        pos = end;
    }
    out.extend_from_slice(tail.get(pos..).unwrap_or_default());
}

/// Scylla's estimate of the memory a request with a body of `length` bytes takes.
fn memory_estimate(length: usize) -> u64 {
    (length as u64).saturating_mul(2).saturating_add(8000)
}

/// The message Cassandra uses for an unsupported version, naming the one served.
fn unsupported_version_message(version: u8) -> String {
    format!(
        "Invalid or unsupported protocol version ({version}); supported versions are \
         ({PROTOCOL_VERSION}/v{PROTOCOL_VERSION})"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_first_frame_is_limited_to_100_000_bytes() {
        let header = |len: u32| {
            let mut b = BytesMut::from(&[PROTOCOL_VERSION, 0, 0, 3, 0x05][..]);
            b.extend_from_slice(&len.to_be_bytes());
            b
        };
        let e = try_decode_frame_of(&mut header(100_001), true, None).unwrap_err();
        assert_eq!(
            (e.stream, e.kind.clone(), e.can_continue()),
            (0, ErrorKind::ProtocolError, false)
        );
        assert_eq!(
            e.message,
            "Initial message size too large (100001), rejecting as invalid"
        );
        // At the limit, or on a later frame, the body is simply awaited.
        assert_eq!(
            try_decode_frame_of(&mut header(100_000), true, None).unwrap(),
            None
        );
        assert_eq!(
            try_decode_frame_of(&mut header(100_001), false, None).unwrap(),
            None
        );
    }
    use bytes::BufMut;

    fn frame(version: u8, flags: u8, stream: i16, opcode: u8, body: &[u8]) -> BytesMut {
        let mut b = BytesMut::new();
        b.put_u8(version);
        b.put_u8(flags);
        b.put_i16(stream);
        b.put_u8(opcode);
        b.put_u32(body.len() as u32);
        b.extend_from_slice(body);
        b
    }

    #[test]
    fn splits_consecutive_frames_and_waits_for_more() {
        let mut buf = frame(4, 0, 7, 0x05, &[]);
        buf.extend_from_slice(&frame(4, 0, 8, 0x09, b"\0\0\0\x01x"));
        buf.extend_from_slice(&frame(4, 0, 9, 0x05, &[])[..5]);
        let a = try_decode_frame(&mut buf).unwrap().unwrap();
        assert_eq!((a.stream, a.opcode, a.body.len()), (7, 0x05, 0));
        let b = try_decode_frame(&mut buf).unwrap().unwrap();
        assert_eq!((b.stream, b.opcode), (8, 0x09));
        assert_eq!(&b.body[..], b"\0\0\0\x01x");
        assert_eq!(try_decode_frame(&mut buf).unwrap(), None);
        assert_eq!(buf.len(), 5, "an incomplete frame is left in the buffer");
    }

    #[test]
    fn truncated_frames_need_more_bytes() {
        let full = frame(4, 0, 1, 0x07, b"\0\0\0\x02ab\0\x01\0");
        for cut in 0..full.len() {
            let mut buf = BytesMut::from(&full[..cut]);
            assert_eq!(try_decode_frame(&mut buf).unwrap(), None, "cut at {cut}");
            assert_eq!(buf.len(), cut);
        }
    }

    #[test]
    fn unsupported_versions_are_fatal_with_the_supported_version_named() {
        for v in [3u8, 5, 6, 0x42] {
            let mut buf = frame(v, 0, 3, 0x05, &[]);
            let e = try_decode_frame(&mut buf).unwrap_err();
            assert!(!e.can_continue());
            assert_eq!(e.stream, 3);
            assert_eq!(
                e.message,
                format!(
                    "Invalid or unsupported protocol version ({v}); supported versions are (4/v4)"
                )
            );
            let mut out = BytesMut::new();
            e.write_response(&mut out);
            let expected_version = if v == 3 { 0x83 } else { 0x84 };
            assert_eq!(&out[..5], &[expected_version, 0, 0, 3, 0x00]);
            assert_eq!(&out[9..13], &[0, 0, 0, 0x0A]);
        }
    }

    #[test]
    fn v2_headers_are_eight_bytes() {
        let mut buf = BytesMut::from(&[0x02u8, 0, 5, 0x05, 0, 0, 0, 0][..7]);
        assert_eq!(try_decode_frame(&mut buf).unwrap(), None);
        buf.put_u8(0);
        let e = try_decode_frame(&mut buf).unwrap_err();
        assert_eq!((e.stream, e.fatal), (5, true));
        let mut out = BytesMut::new();
        e.write_response(&mut out);
        assert_eq!(&out[..4], &[0x82, 0, 5, 0x00]);
        let len = u32::from_be_bytes([out[4], out[5], out[6], out[7]]) as usize;
        assert_eq!(out.len(), 8 + len);
    }

    #[test]
    fn response_direction_is_fatal() {
        let mut buf = frame(0x84, 0, 1, 0x02, &[]);
        let e = try_decode_frame(&mut buf).unwrap_err();
        assert!(e.fatal);
        assert!(e.message.contains("direction"));
    }

    #[test]
    fn oversized_body_is_invalid_and_fatal_without_waiting() {
        let mut buf = BytesMut::new();
        buf.extend_from_slice(&[4, 0, 0, 9, 0x07]);
        buf.put_u32((MAX_BODY_LEN + 1) as u32);
        let e = try_decode_frame(&mut buf).unwrap_err();
        assert!(!e.can_continue());
        assert_eq!((e.stream, &e.kind), (9, &ErrorKind::Invalid));
        assert_eq!(
            e.message,
            format!(
                "request size too large (frame size {}; estimate {}; allowed {})",
                MAX_BODY_LEN + 1,
                2 * (MAX_BODY_LEN + 1) + 8000,
                2 * MAX_BODY_LEN + 8000
            )
        );
        let mut out = BytesMut::new();
        e.write_response(&mut out);
        assert_eq!(&out[..5], &[0x84, 0, 0, 9, 0x00]);
        assert_eq!(&out[9..13], &[0, 0, 0x22, 0x00]);
        let mut ok = BytesMut::new();
        ok.extend_from_slice(&[4, 0, 0, 9, 0x07]);
        ok.put_u32(MAX_BODY_LEN as u32);
        assert_eq!(try_decode_frame(&mut ok).unwrap(), None);
    }

    #[test]
    fn compressed_frames_without_a_codec_are_fatal_on_stream_0_without_waiting() {
        let full = frame(4, FLAG_COMPRESSION, 4, 0x07, b"garbage");
        for cut in [HEADER_LEN, full.len()] {
            let mut buf = BytesMut::from(&full[..cut]);
            let e = try_decode_frame(&mut buf).unwrap_err();
            assert!(!e.can_continue());
            assert_eq!((e.stream, &e.kind), (0, &ErrorKind::ProtocolError));
            assert_eq!(e.message, "Unknown compression algorithm");
            assert_eq!(buf.len(), cut, "nothing consumed");
        }
        // An oversized compressed frame is first of all oversized.
        let mut buf = BytesMut::new();
        buf.extend_from_slice(&[4, FLAG_COMPRESSION, 0, 9, 0x07]);
        buf.put_u32((MAX_BODY_LEN + 1) as u32);
        assert_eq!(
            try_decode_frame(&mut buf).unwrap_err().kind,
            ErrorKind::Invalid
        );
    }

    fn compressed(codec: Compression, body: &[u8]) -> Vec<u8> {
        let mut out = BytesMut::new();
        assert!(compression::compress_into(codec, body, &mut out));
        out.to_vec()
    }

    #[test]
    fn compressed_frames_are_decompressed_with_their_custom_payload() {
        // [bytes map] {"k": "\x01\x02"} then a PREPARE body, compressed together.
        let mut plain = vec![0, 1, 0, 1, b'k', 0, 0, 0, 2, 1, 2];
        plain.extend_from_slice(b"\0\0\0\x08SELECT 1");
        for codec in [Compression::Lz4, Compression::Snappy] {
            let flags = FLAG_COMPRESSION | FLAG_CUSTOM_PAYLOAD;
            let mut buf = frame(4, flags, 2, 0x09, &compressed(codec, &plain));
            // Uncompressed frames stay readable on a compressed connection.
            buf.extend_from_slice(&frame(4, 0, 3, 0x05, &[]));
            let f = try_decode_frame_of(&mut buf, false, Some(codec))
                .unwrap()
                .unwrap();
            assert_eq!((f.stream, f.opcode), (2, 0x09));
            assert_eq!(&f.body[..], b"\0\0\0\x08SELECT 1");
            let g = try_decode_frame_of(&mut buf, false, Some(codec))
                .unwrap()
                .unwrap();
            assert_eq!((g.stream, g.opcode, g.body.len()), (3, 0x05, 0));
            assert!(buf.is_empty());
        }
    }

    #[test]
    fn corrupt_compressed_bodies_are_server_errors_on_stream_0() {
        let cases: [(Compression, &[u8], &str); 4] = [
            (
                Compression::Lz4,
                &[0, 0, 0, 50, 0xF0, 1, 2],
                "CQL frame LZ4 uncompression failure",
            ),
            (
                Compression::Lz4,
                &[0xFF, 0, 0, 0, 0],
                "CQL frame uncompressed length is negative: -16777216",
            ),
            (
                Compression::Snappy,
                &[],
                "CQL frame Snappy uncompressed size is unknown",
            ),
            (
                Compression::Snappy,
                &[9, 0x08, b'a'],
                "CQL frame Snappy uncompression failure",
            ),
        ];
        for (codec, body, message) in cases {
            let full = frame(4, FLAG_COMPRESSION, 7, 0x07, body);
            // Incomplete: wait for the body (Scylla reads it before decompressing).
            let mut part = BytesMut::from(&full[..full.len() - 1]);
            if !body.is_empty() {
                assert_eq!(try_decode_frame_of(&mut part, false, Some(codec)), Ok(None));
            }
            let mut buf = BytesMut::from(&full[..]);
            let e = try_decode_frame_of(&mut buf, false, Some(codec)).unwrap_err();
            assert_eq!(
                (e.stream, &e.kind, e.message.as_str(), e.can_continue()),
                (0, &ErrorKind::ServerError, message, false)
            );
            assert_eq!(buf.len(), full.len(), "nothing consumed");
            let mut out = BytesMut::new();
            e.write_response(&mut out);
            assert_eq!(&out[..5], &[0x84, 0, 0, 0, 0x00], "uncompressed, stream 0");
            assert_eq!(&out[9..13], &[0, 0, 0, 0]);
        }
    }

    #[test]
    fn a_short_lz4_body_is_refused_before_it_arrives() {
        let mut buf = BytesMut::from(&frame(4, FLAG_COMPRESSION, 7, 0x07, &[0, 0, 1])[..9]);
        let e = try_decode_frame_of(&mut buf, false, Some(Compression::Lz4)).unwrap_err();
        assert_eq!((e.stream, e.kind.clone()), (0, ErrorKind::ServerError));
        assert_eq!(
            e.message,
            "CQL frame truncated: expected to have at least 4 bytes, got 3"
        );
        // Snappy has no such check: the 3 bytes are awaited.
        let mut buf = BytesMut::from(&frame(4, FLAG_COMPRESSION, 7, 0x07, &[0, 0, 1])[..9]);
        assert_eq!(
            try_decode_frame_of(&mut buf, false, Some(Compression::Snappy)),
            Ok(None)
        );
    }

    #[test]
    fn a_body_decompressing_past_the_limit_is_oversized() {
        // A genuine lz4 block of MAX_BODY_LEN + 1 zero bytes (about 1 MiB compressed).
        let big = vec![0u8; MAX_BODY_LEN + 1];
        let mut buf = frame(
            4,
            FLAG_COMPRESSION,
            5,
            0x07,
            &compressed(Compression::Lz4, &big),
        );
        drop(big);
        let e = try_decode_frame_of(&mut buf, false, Some(Compression::Lz4)).unwrap_err();
        assert_eq!(
            (e.stream, e.kind.clone(), e.fatal),
            (5, ErrorKind::Invalid, true)
        );
        assert!(
            e.message.starts_with(&format!(
                "request size too large (uncompressed frame size {}; ",
                MAX_BODY_LEN + 1
            )),
            "{}",
            e.message
        );
        // A 2 GiB lie in 6 bytes allocates nothing and is a size mismatch.
        let mut lie = frame(
            4,
            FLAG_COMPRESSION,
            5,
            0x07,
            &[0x7F, 0xFF, 0xFF, 0xFF, 0x10, b'a'],
        );
        let e = try_decode_frame_of(&mut lie, false, Some(Compression::Lz4)).unwrap_err();
        assert_eq!(
            e.message,
            "Malformed CQL frame - provided uncompressed size different than real uncompressed size"
        );
    }

    #[test]
    fn compress_frames_rewrites_every_frame_after_the_mark() {
        let mut out = BytesMut::from(&b"kept"[..]);
        let mark = out.len();
        // READY (empty body), then a RESULT Void, then an incomplete tail kept as is.
        out.extend_from_slice(&[0x84, 0, 0, 1, opcode::READY, 0, 0, 0, 0]);
        out.extend_from_slice(&[
            0x84,
            FLAG_WARNING,
            0,
            2,
            opcode::RESULT,
            0,
            0,
            0,
            4,
            0,
            0,
            0,
            1,
        ]);
        out.extend_from_slice(&[0x84, 0]);
        compress_frames(&mut out, mark, Compression::Lz4);
        assert_eq!(&out[..4], b"kept");
        let ready = &out[4..4 + 9 + 5];
        assert_eq!(
            &ready[..9],
            &[0x84, FLAG_COMPRESSION, 0, 1, opcode::READY, 0, 0, 0, 5]
        );
        assert_eq!(&ready[9..], &[0, 0, 0, 0, 0]);
        let mut rest = BytesMut::from(&out[4 + 14..]);
        assert_eq!(rest[1], FLAG_WARNING | FLAG_COMPRESSION);
        let len = u32::from_be_bytes([rest[5], rest[6], rest[7], rest[8]]) as usize;
        let body = compression::decompress(Compression::Lz4, &rest[9..9 + len], 100).unwrap();
        assert_eq!(body, [0, 0, 0, 1]);
        rest.advance(9 + len);
        assert_eq!(&rest[..], &[0x84, 0]);
        // Nothing after the mark: nothing to do.
        let before = out.clone();
        compress_frames(&mut out, before.len(), Compression::Snappy);
        assert_eq!(out, before);
    }

    #[test]
    fn tracing_flag_is_accepted() {
        let mut buf = frame(4, FLAG_TRACING, 1, 0x05, &[]);
        let f = try_decode_frame(&mut buf).unwrap().unwrap();
        assert_ne!(f.flags & FLAG_TRACING, 0);
        assert!(f.body.is_empty());
    }

    #[test]
    fn custom_payload_is_skipped() {
        // [bytes map] {"k": "\x01\x02"} then a PREPARE body.
        let mut body = vec![0, 1, 0, 1, b'k', 0, 0, 0, 2, 1, 2];
        body.extend_from_slice(b"\0\0\0\x01q");
        let mut buf = frame(4, FLAG_CUSTOM_PAYLOAD, 2, 0x09, &body);
        let f = try_decode_frame(&mut buf).unwrap().unwrap();
        assert_eq!(&f.body[..], b"\0\0\0\x01q");

        let mut bad = frame(4, FLAG_CUSTOM_PAYLOAD, 2, 0x09, &[0, 3, 0]);
        bad.extend_from_slice(&frame(4, 0, 6, 0x05, &[]));
        let e = try_decode_frame(&mut bad).unwrap_err();
        assert!(e.can_continue());
        assert_eq!(try_decode_frame(&mut bad).unwrap().unwrap().stream, 6);
    }

    #[test]
    fn negative_streams_are_passed_through() {
        let mut buf = frame(4, 0, -1, 0x05, &[]);
        assert_eq!(try_decode_frame(&mut buf).unwrap().unwrap().stream, -1);
    }
}
