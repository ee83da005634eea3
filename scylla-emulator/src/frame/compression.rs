//! Frame body compression (spec §5): the two codecs a client may pick in STARTUP, as Scylla
//! implements them (`transport/server.cc`: `read_and_decompress_frame`,
//! `response::compress_lz4`, `response::compress_snappy`).
//!
//! - **lz4**: a 4-byte big-endian uncompressed length, then one raw LZ4 block.
//! - **snappy**: raw Snappy (its own varint length preamble, no framing format).
//!
//! [`decompress`] checks a request body the way Scylla does and fails with the message of the
//! exception Scylla throws ([`DecompressError::Corrupt`]). It never allocates more than the
//! body can expand to or than the caller's limit: a length prefix that the compressed bytes
//! cannot produce is found out without allocating it, and a genuine body over the limit is a
//! [`DecompressError::TooLarge`]. [`compress_into`] appends a compressed body.

use bytes::BytesMut;

/// A frame compression codec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Compression {
    /// `lz4`: 4-byte big-endian uncompressed length, then a raw LZ4 block.
    Lz4,
    /// `snappy`: raw Snappy.
    Snappy,
}

/// The codec names SUPPORTED lists under `COMPRESSION`, in Scylla's order.
pub(crate) const SUPPORTED_COMPRESSION: [&str; 2] = ["lz4", "snappy"];

/// The most bytes one byte of an LZ4 block can expand to (a match-length byte of 255).
const LZ4_MAX_RATIO: usize = 255;
/// The most bytes one byte of a Snappy stream can expand to (a 3-byte copy of 64 bytes; 22
/// rounds 64/3 up).
const SNAPPY_MAX_RATIO: usize = 22;

/// Scylla's message for an LZ4 block that does not decode.
const LZ4_FAILURE: &str = "CQL frame LZ4 uncompression failure";
/// Scylla's message for a Snappy stream that does not decode.
const SNAPPY_FAILURE: &str = "CQL frame Snappy uncompression failure";
/// Scylla's message for a Snappy stream whose length preamble is not a varint32.
const SNAPPY_UNKNOWN_SIZE: &str = "CQL frame Snappy uncompressed size is unknown";
/// Scylla's message for a body that decodes to fewer bytes than its length prefix says.
const SIZE_MISMATCH: &str =
    "Malformed CQL frame - provided uncompressed size different than real uncompressed size";

impl Compression {
    /// The codec a STARTUP `COMPRESSION` value names, compared case-insensitively as Scylla
    /// does (`process_startup` lower-cases it); `None` for an unknown name.
    pub(crate) fn from_name(name: &str) -> Option<Compression> {
        match name.to_ascii_lowercase().as_str() {
            "lz4" => Some(Compression::Lz4),
            "snappy" => Some(Compression::Snappy),
            _ => None,
        }
    }

    /// The codec's STARTUP / SUPPORTED name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Compression::Lz4 => "lz4",
            Compression::Snappy => "snappy",
        }
    }
}

/// Why a compressed request body was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum DecompressError {
    /// The body is not what its codec produces: Scylla throws a `std::runtime_error` with this
    /// message, which ends the connection with a Server error on stream 0.
    #[error("{0}")]
    Corrupt(String),
    /// The body decompresses to `0` bytes, more than the limit this server accepts.
    #[error("uncompressed body of {0} bytes is over the limit")]
    TooLarge(usize),
}

/// The error Scylla raises, before reading the body, for an lz4 body shorter than its length
/// prefix.
pub(crate) fn lz4_truncated_message(length: usize) -> String {
    format!("CQL frame truncated: expected to have at least 4 bytes, got {length}")
}

/// Decompresses a request body compressed with `codec`; the result is at most `limit` bytes.
pub(crate) fn decompress(
    codec: Compression,
    body: &[u8],
    limit: usize,
) -> Result<Vec<u8>, DecompressError> {
    match codec {
        Compression::Lz4 => decompress_lz4(body, limit),
        Compression::Snappy => decompress_snappy(body, limit),
    }
}

fn corrupt(message: &str) -> DecompressError {
    DecompressError::Corrupt(message.to_string())
}

fn decompress_lz4(body: &[u8], limit: usize) -> Result<Vec<u8>, DecompressError> {
    let (Some(prefix), Some(input)) = (body.get(..4), body.get(4..)) else {
        return Err(DecompressError::Corrupt(lz4_truncated_message(body.len())));
    };
    let declared = i32::from_be_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]);
    let Ok(declared) = usize::try_from(declared) else {
        return Err(DecompressError::Corrupt(format!(
            "CQL frame uncompressed length is negative: {declared}"
        )));
    };
    // liblz4's LZ4_decompress_safe: an empty output is valid only for the one-byte empty
    // block, and an empty input never decodes.
    if declared == 0 {
        return if input == [0] {
            Ok(Vec::new())
        } else {
            Err(corrupt(LZ4_FAILURE))
        };
    }
    if input.is_empty() {
        return Err(corrupt(LZ4_FAILURE));
    }
    let possible = input.len().saturating_mul(LZ4_MAX_RATIO);
    if declared > limit && declared <= possible {
        return Err(DecompressError::TooLarge(declared));
    }
    // Scylla decodes into a buffer of the declared size. When the input cannot fill it, a
    // buffer of what it can produce gives the same answer (it decodes to fewer bytes, or it
    // does not decode) without allocating the declared size.
    let capacity = declared.min(possible).min(limit);
    let mut out = vec![0u8; capacity];
    match lz4_flex::block::decompress_into(input, &mut out) {
        Ok(n) if n == declared => Ok(out),
        Ok(_) => Err(corrupt(SIZE_MISMATCH)),
        Err(_) => Err(corrupt(LZ4_FAILURE)),
    }
}

/// Reads Snappy's length preamble as the reference implementation does
/// (`Varint::Parse32WithLimit`): at most 5 bytes, and a value that fits in 32 bits.
fn snappy_declared_len(input: &[u8]) -> Option<usize> {
    let mut value: u64 = 0;
    for (i, &b) in input.iter().take(5).enumerate() {
        if i == 4 && b >= 16 {
            return None;
        }
        value |= u64::from(b & 0x7F) << (7 * i);
        if b < 0x80 {
            return usize::try_from(value).ok();
        }
    }
    None
}

fn decompress_snappy(input: &[u8], limit: usize) -> Result<Vec<u8>, DecompressError> {
    let Some(declared) = snappy_declared_len(input) else {
        return Err(corrupt(SNAPPY_UNKNOWN_SIZE));
    };
    // The reference decoder fails unless it produces exactly the declared length, so a
    // length the input cannot produce fails without being allocated.
    if declared > input.len().saturating_mul(SNAPPY_MAX_RATIO) {
        return Err(corrupt(SNAPPY_FAILURE));
    }
    if declared > limit {
        return Err(DecompressError::TooLarge(declared));
    }
    let mut out = vec![0u8; declared];
    match snap::raw::Decoder::new().decompress(input, &mut out) {
        Ok(n) if n == declared => Ok(out),
        Ok(_) => Err(corrupt(SIZE_MISMATCH)),
        Err(_) => Err(corrupt(SNAPPY_FAILURE)),
    }
}

/// Appends `body` compressed with `codec` to `out`; `false` (and `out` unchanged) if the
/// codec refused it (a body over 4 GiB), in which case the frame goes out uncompressed.
pub(crate) fn compress_into(codec: Compression, body: &[u8], out: &mut BytesMut) -> bool {
    let start = out.len();
    match codec {
        Compression::Lz4 => {
            let Ok(len) = u32::try_from(body.len()) else {
                return false;
            };
            let max = lz4_flex::block::get_maximum_output_size(body.len());
            out.extend_from_slice(&len.to_be_bytes());
            out.resize(start + 4 + max, 0);
            match lz4_flex::block::compress_into(body, &mut out[start + 4..]) {
                Ok(n) => {
                    out.truncate(start + 4 + n);
                    true
                }
                Err(_) => {
                    out.truncate(start);
                    false
                }
            }
        }
        Compression::Snappy => {
            let max = snap::raw::max_compress_len(body.len());
            if max == 0 {
                // Over Snappy's input limit (an empty body still compresses, to 1 byte).
                return false;
            }
            out.resize(start + max, 0);
            match snap::raw::Encoder::new().compress(body, &mut out[start..]) {
                Ok(n) => {
                    out.truncate(start + n);
                    true
                }
                Err(_) => {
                    out.truncate(start);
                    false
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: usize = 1 << 20;

    fn compressed(codec: Compression, body: &[u8]) -> Vec<u8> {
        let mut out = BytesMut::new();
        assert!(compress_into(codec, body, &mut out));
        out.to_vec()
    }

    fn sample() -> Vec<u8> {
        (0..5000u32).flat_map(|i| (i % 97).to_be_bytes()).collect()
    }

    #[test]
    fn names_are_case_insensitive() {
        assert_eq!(Compression::from_name("LZ4"), Some(Compression::Lz4));
        assert_eq!(Compression::from_name("Snappy"), Some(Compression::Snappy));
        assert_eq!(Compression::from_name("zstd"), None);
        assert_eq!(SUPPORTED_COMPRESSION, ["lz4", "snappy"]);
        assert_eq!(Compression::Snappy.name(), "snappy");
    }

    #[test]
    fn round_trips_and_the_drivers_codec_agrees() {
        use scylla_cql::frame::Compression as D;
        for (codec, theirs) in [(Compression::Lz4, D::Lz4), (Compression::Snappy, D::Snappy)] {
            for body in [Vec::new(), b"x".to_vec(), sample()] {
                let ours = compressed(codec, &body);
                assert_eq!(decompress(codec, &ours, LIMIT).unwrap(), body);
                // What the Rust driver sends, we read; what we send, it reads.
                let mut driver = Vec::new();
                scylla_cql::frame::compress_append(&body, theirs, &mut driver).unwrap();
                assert_eq!(decompress(codec, &driver, LIMIT).unwrap(), body);
                assert_eq!(scylla_cql::frame::decompress(&ours, theirs).unwrap(), body);
            }
        }
        // The lz4 prefix is the big-endian uncompressed length.
        let lz4 = compressed(Compression::Lz4, &sample());
        assert_eq!(&lz4[..4], &20_000u32.to_be_bytes());
        assert!(lz4.len() < 20_000 / 4);
        // An empty body is the one-byte empty block after a zero length.
        assert_eq!(compressed(Compression::Lz4, b""), [0, 0, 0, 0, 0]);
        assert_eq!(compressed(Compression::Snappy, b""), [0]);
    }

    #[test]
    fn lz4_errors_carry_scyllas_messages() {
        let err = |body: &[u8]| decompress(Compression::Lz4, body, LIMIT).unwrap_err();
        assert_eq!(
            err(&[0, 0, 1]),
            DecompressError::Corrupt(
                "CQL frame truncated: expected to have at least 4 bytes, got 3".into()
            )
        );
        assert_eq!(
            err(&[0xFF, 0xFF, 0xFF, 0xFB, 0]),
            DecompressError::Corrupt("CQL frame uncompressed length is negative: -5".into())
        );
        // Zero length: only the empty block decodes.
        assert_eq!(
            decompress(Compression::Lz4, &[0, 0, 0, 0, 0], LIMIT),
            Ok(vec![])
        );
        assert_eq!(err(&[0, 0, 0, 0]), corrupt(LZ4_FAILURE));
        assert_eq!(err(&[0, 0, 0, 0, 0x10, b'a']), corrupt(LZ4_FAILURE));
        // A length but no block.
        assert_eq!(err(&[0, 0, 0, 9]), corrupt(LZ4_FAILURE));
        // A valid block that decodes to fewer (or more) bytes than the prefix says.
        let mut good = compressed(Compression::Lz4, &sample());
        good[..4].copy_from_slice(&20_001u32.to_be_bytes());
        assert_eq!(err(&good), corrupt(SIZE_MISMATCH));
        good[..4].copy_from_slice(&19_999u32.to_be_bytes());
        assert_eq!(err(&good), corrupt(LZ4_FAILURE));
        // Garbage.
        assert_eq!(err(&[0, 0, 0, 50, 0xF0, 1, 2, 3]), corrupt(LZ4_FAILURE));
    }

    #[test]
    fn lz4_lengths_are_never_allocated_blindly() {
        // 2 GiB claimed by a 5-byte block: the block can produce 255 bytes at most, so the
        // answer is the size mismatch Scylla finds after decoding, with nothing allocated.
        let lie = [0x7F, 0xFF, 0xFF, 0xFF, 0x10, b'a'];
        assert_eq!(
            decompress(Compression::Lz4, &lie, usize::MAX),
            Err(corrupt(SIZE_MISMATCH))
        );
        // A body that really is over the limit.
        let big = vec![7u8; 4096];
        let c = compressed(Compression::Lz4, &big);
        assert_eq!(
            decompress(Compression::Lz4, &c, 4095),
            Err(DecompressError::TooLarge(4096))
        );
        assert_eq!(decompress(Compression::Lz4, &c, 4096).unwrap(), big);
    }

    #[test]
    fn snappy_errors_carry_scyllas_messages() {
        let err = |body: &[u8]| decompress(Compression::Snappy, body, LIMIT).unwrap_err();
        assert_eq!(err(&[]), corrupt(SNAPPY_UNKNOWN_SIZE));
        assert_eq!(err(&[0x80, 0x80]), corrupt(SNAPPY_UNKNOWN_SIZE));
        assert_eq!(
            err(&[0xFF, 0xFF, 0xFF, 0xFF, 0x10]),
            corrupt(SNAPPY_UNKNOWN_SIZE)
        );
        assert_eq!(
            err(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x01]),
            corrupt(SNAPPY_UNKNOWN_SIZE)
        );
        // A 32-bit length the input cannot produce: a failure, nothing allocated.
        assert_eq!(
            err(&[0xFF, 0xFF, 0xFF, 0xFF, 0x0F]),
            corrupt(SNAPPY_FAILURE)
        );
        let mut good = compressed(Compression::Snappy, &sample());
        assert_eq!(good[..3], [0xA0, 0x9C, 0x01]);
        good[0] = 0xA1;
        assert_eq!(err(&good), corrupt(SNAPPY_FAILURE));
        assert_eq!(err(&[3, 0x08, b'a', b'b']), corrupt(SNAPPY_FAILURE));
        assert_eq!(decompress(Compression::Snappy, &[0], LIMIT), Ok(vec![]));
        let big = vec![7u8; 4096];
        let c = compressed(Compression::Snappy, &big);
        assert_eq!(
            decompress(Compression::Snappy, &c, 4095),
            Err(DecompressError::TooLarge(4096))
        );
    }
}
