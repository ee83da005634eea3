//! Identifiers of the CDC log: stream ids and generation timestamps.

use std::fmt;

use chrono::{DateTime, Utc};

/// A CDC stream id: the 16-byte partition key of the CDC log table.
///
/// Layout (Scylla's `cdc::stream_id`): bytes 0..8 are the stream's token (big-endian `i64`),
/// bytes 8..16 a big-endian `u64` whose bits 0..4 are the version (1), bits 4..26 the vnode
/// index (0 for tablet keyspaces) and bits 26..64 random.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamID {
    id: [u8; 16],
}

/// A byte string that is not a valid stream id (stream ids are exactly 16 bytes).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a CDC stream id has 16 bytes, not {0}")]
pub struct InvalidStreamID(pub usize);

impl StreamID {
    /// Wraps 16 bytes.
    pub const fn new(id: [u8; 16]) -> Self {
        Self { id }
    }

    /// Parses a stream id from a byte slice, failing unless it has exactly 16 bytes.
    pub fn from_slice(bytes: &[u8]) -> Result<Self, InvalidStreamID> {
        <[u8; 16]>::try_from(bytes)
            .map(Self::new)
            .map_err(|_| InvalidStreamID(bytes.len()))
    }

    /// The raw 16 bytes.
    pub fn as_bytes(&self) -> &[u8; 16] {
        &self.id
    }

    /// The token the stream lives at (the CDC partitioner's token).
    pub fn token(&self) -> i64 {
        let mut hi = [0u8; 8];
        hi.copy_from_slice(&self.id[..8]);
        i64::from_be_bytes(hi)
    }

    fn low_qword(&self) -> u64 {
        let mut lo = [0u8; 8];
        lo.copy_from_slice(&self.id[8..]);
        u64::from_be_bytes(lo)
    }

    /// The stream id format version (1 for every Scylla release so far).
    pub fn version(&self) -> u8 {
        (self.low_qword() & 0xF) as u8
    }

    /// The index of the vnode the stream belongs to (vnode keyspaces; 0 with tablets).
    pub fn vnode_index(&self) -> u32 {
        ((self.low_qword() >> 4) & 0x3F_FFFF) as u32
    }
}

impl fmt::Display for StreamID {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("0x")?;
        for b in &self.id {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for StreamID {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StreamID({self})")
    }
}

impl TryFrom<&[u8]> for StreamID {
    type Error = InvalidStreamID;

    fn try_from(bytes: &[u8]) -> Result<Self, Self::Error> {
        Self::from_slice(bytes)
    }
}

impl From<[u8; 16]> for StreamID {
    fn from(id: [u8; 16]) -> Self {
        Self::new(id)
    }
}

/// The timestamp of a CDC generation (vnode keyspaces) or of a table's stream set (tablet
/// keyspaces): the set of streams that operates from this time until the next one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GenerationTimestamp {
    /// When the generation starts operating (millisecond precision, as Scylla stores it).
    pub timestamp: DateTime<Utc>,
}

impl GenerationTimestamp {
    /// Wraps a point in time.
    pub fn new(timestamp: DateTime<Utc>) -> Self {
        Self { timestamp }
    }
}

impl fmt::Display for GenerationTimestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.timestamp.to_rfc3339())
    }
}

impl From<DateTime<Utc>> for GenerationTimestamp {
    fn from(timestamp: DateTime<Utc>) -> Self {
        Self::new(timestamp)
    }
}

/// Quotes a CQL identifier (`"name"`, with inner quotes doubled): the keyspaces and tables
/// the reader's statements name (its log table, its checkpoint table).
pub(crate) fn quote_identifier(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn parses_documented_examples() {
        let s = StreamID::from_slice(&hex("7ffe0c687fcce86e0783343730000001")).unwrap();
        assert_eq!(s.token(), 0x7ffe0c687fcce86e);
        assert_eq!(s.vnode_index(), 0);
        assert_eq!(s.version(), 1);

        let s = StreamID::from_slice(&hex("ced00000000000009663c8dc500005a1")).unwrap();
        assert_eq!(s.vnode_index(), 90);
        assert!(s.token() < 0);
        assert_eq!(s.to_string(), "0xced00000000000009663c8dc500005a1");
    }

    #[test]
    fn rejects_wrong_length() {
        assert_eq!(StreamID::from_slice(&[0u8; 15]), Err(InvalidStreamID(15)));
        assert_eq!(StreamID::from_slice(&[]), Err(InvalidStreamID(0)));
        assert!(StreamID::try_from(&[0u8; 17][..]).is_err());
    }

    #[test]
    fn generation_order_follows_time() {
        let a = GenerationTimestamp::new(DateTime::from_timestamp_millis(1_000).unwrap());
        let b = GenerationTimestamp::new(DateTime::from_timestamp_millis(2_000).unwrap());
        assert!(a < b);
        assert_eq!(a.to_string(), "1970-01-01T00:00:01+00:00");
    }

    #[test]
    fn identifiers_are_quoted() {
        assert_eq!(quote_identifier("ks"), "\"ks\"");
        assert_eq!(quote_identifier("we\"ird"), "\"we\"\"ird\"");
    }

    #[test]
    fn stream_ids_display_in_errors() {
        let s = StreamID::new([0xab; 16]);
        assert!(s.to_string().starts_with("0xabab"));
    }
}
