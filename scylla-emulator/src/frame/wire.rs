//! The primitive notations of the CQL native protocol v4 (spec §3): a bounds-checked
//! [`Reader`] over a request body and `put_*` writers into a [`BytesMut`].
//!
//! Readers never panic: a truncated input, a negative length where none is allowed or bad
//! UTF-8 is a [`ProtocolViolation`]. `[bytes]`/`[short bytes]`/`[value]` payloads are handed
//! out as zero-copy slices of the body ([`Bytes::slice`]). Writers cannot fail: a string or a
//! list longer than its length prefix can express (only server-built data, never input) is
//! cut at the limit instead of producing a corrupt frame.
//!
//! Notations the server only meets in the other direction (readers of response-only ones such
//! as `[inet]`, writers of request-only ones such as `[value]`) exist for the tests, which
//! build requests and decode responses with them.

use std::net::{IpAddr, SocketAddr};

use bytes::{BufMut, Bytes, BytesMut};

use super::consistency::Consistency;

/// A request body that does not follow protocol v4. It is answered with a Protocol error
/// (0x000A) on the request's stream; the connection stays usable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub(crate) struct ProtocolViolation {
    /// The message sent to the client.
    message: String,
}

impl ProtocolViolation {
    /// A violation with this message (sent to the client as is).
    pub(crate) fn new(message: impl Into<String>) -> Self {
        ProtocolViolation {
            message: message.into(),
        }
    }

    /// The message sent to the client.
    pub(crate) fn message(&self) -> &str {
        &self.message
    }

    /// The message, by value.
    pub(crate) fn into_message(self) -> String {
        self.message
    }
}

/// A bound value as the protocol's `[value]` notation carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BoundValue {
    /// A value (possibly empty) of `len >= 0` bytes.
    Value(Bytes),
    /// `len == -1`: CQL `null`.
    Null,
    /// `len == -2`: "not set", the column is left untouched (v4).
    Unset,
}

/// A cursor over a frame body. Every `read_*` method either consumes exactly the bytes of
/// one notation or fails with a [`ProtocolViolation`] naming what could not be read.
#[derive(Debug, Clone)]
pub(crate) struct Reader {
    /// The whole body.
    buf: Bytes,
    /// Offset of the next unread byte.
    pos: usize,
}

impl Reader {
    /// A reader positioned at the start of `buf`.
    pub(crate) fn new(buf: Bytes) -> Self {
        Reader { buf, pos: 0 }
    }

    /// Number of bytes not yet consumed.
    pub(crate) fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    /// Consumes `n` bytes and returns them as a slice of the underlying buffer.
    fn take(&mut self, n: usize, what: &str) -> Result<&[u8], ProtocolViolation> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&end| end <= self.buf.len())
            .ok_or_else(|| truncated(what, n, self.remaining()))?;
        let out = self.buf.get(self.pos..end).unwrap_or_default();
        self.pos = end;
        Ok(out)
    }

    /// Consumes `n` bytes as a zero-copy [`Bytes`].
    fn take_bytes(&mut self, n: usize, what: &str) -> Result<Bytes, ProtocolViolation> {
        let start = self.pos;
        self.take(n, what)?;
        Ok(self.buf.slice(start..self.pos))
    }

    /// Consumes exactly `N` bytes into an array.
    fn take_array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], ProtocolViolation> {
        let s = self.take(N, what)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    /// `[byte]`
    pub(crate) fn read_byte(&mut self, what: &str) -> Result<u8, ProtocolViolation> {
        Ok(self.take_array::<1>(what)?[0])
    }

    /// `[short]`: an unsigned 16-bit integer.
    pub(crate) fn read_short(&mut self, what: &str) -> Result<u16, ProtocolViolation> {
        Ok(u16::from_be_bytes(self.take_array(what)?))
    }

    /// `[int]`
    pub(crate) fn read_int(&mut self, what: &str) -> Result<i32, ProtocolViolation> {
        Ok(i32::from_be_bytes(self.take_array(what)?))
    }

    /// `[long]`
    pub(crate) fn read_long(&mut self, what: &str) -> Result<i64, ProtocolViolation> {
        Ok(i64::from_be_bytes(self.take_array(what)?))
    }

    /// `[string]`: a `[short]` length then that many UTF-8 bytes.
    pub(crate) fn read_string(&mut self, what: &str) -> Result<String, ProtocolViolation> {
        let len = self.read_short(what)?;
        let raw = self.take(usize::from(len), what)?;
        utf8(raw, what)
    }

    /// `[long string]`: an `[int]` length (non-negative) then that many UTF-8 bytes.
    pub(crate) fn read_long_string(&mut self, what: &str) -> Result<String, ProtocolViolation> {
        let len = self.read_int(what)?;
        let len = usize::try_from(len).map_err(|_| {
            ProtocolViolation::new(format!(
                "Negative length {len} for the [long string] {what}"
            ))
        })?;
        let raw = self.take(len, what)?;
        utf8(raw, what)
    }

    /// `[bytes]`: an `[int]` length then that many bytes; a negative length is `null`.
    pub(crate) fn read_bytes(&mut self, what: &str) -> Result<Option<Bytes>, ProtocolViolation> {
        let len = self.read_int(what)?;
        match usize::try_from(len) {
            Ok(n) => self.take_bytes(n, what).map(Some),
            Err(_) => Ok(None),
        }
    }

    /// `[short bytes]`: a `[short]` length then that many bytes.
    pub(crate) fn read_short_bytes(&mut self, what: &str) -> Result<Bytes, ProtocolViolation> {
        let len = self.read_short(what)?;
        self.take_bytes(usize::from(len), what)
    }

    /// `[value]`: like `[bytes]`, with `-1` null and `-2` unset; other negatives are errors.
    pub(crate) fn read_value(&mut self, what: &str) -> Result<BoundValue, ProtocolViolation> {
        let len = self.read_int(what)?;
        match len {
            -1 => Ok(BoundValue::Null),
            -2 => Ok(BoundValue::Unset),
            n if n >= 0 => {
                let n = usize::try_from(n).unwrap_or(usize::MAX);
                self.take_bytes(n, what).map(BoundValue::Value)
            }
            n => Err(ProtocolViolation::new(format!(
                "Invalid length {n} for the [value] {what} (only -1 null and -2 unset may be negative)"
            ))),
        }
    }

    /// `[string list]`: a `[short]` count then that many `[string]`.
    pub(crate) fn read_string_list(
        &mut self,
        what: &str,
    ) -> Result<Vec<String>, ProtocolViolation> {
        let n = self.read_short(what)?;
        // Each element takes at least 2 bytes: never pre-allocate more than the input allows.
        let mut out = Vec::with_capacity(usize::from(n).min(self.remaining() / 2));
        for _ in 0..n {
            out.push(self.read_string(what)?);
        }
        Ok(out)
    }

    /// `[string map]`: a `[short]` count then that many (`[string]` key, `[string]` value),
    /// in wire order, duplicates kept.
    pub(crate) fn read_string_map(
        &mut self,
        what: &str,
    ) -> Result<Vec<(String, String)>, ProtocolViolation> {
        let n = self.read_short(what)?;
        let mut out = Vec::with_capacity(usize::from(n).min(self.remaining() / 4));
        for _ in 0..n {
            let k = self.read_string(what)?;
            let v = self.read_string(what)?;
            out.push((k, v));
        }
        Ok(out)
    }

    /// `[string multimap]`: a `[short]` count then (`[string]` key, `[string list]`).
    #[cfg(test)]
    pub(crate) fn read_string_multimap(
        &mut self,
        what: &str,
    ) -> Result<Vec<(String, Vec<String>)>, ProtocolViolation> {
        let n = self.read_short(what)?;
        let mut out = Vec::with_capacity(usize::from(n).min(self.remaining() / 4));
        for _ in 0..n {
            let k = self.read_string(what)?;
            let v = self.read_string_list(what)?;
            out.push((k, v));
        }
        Ok(out)
    }

    /// `[bytes map]`: a `[short]` count then (`[string]` key, `[bytes]` value).
    pub(crate) fn read_bytes_map(
        &mut self,
        what: &str,
    ) -> Result<Vec<(String, Option<Bytes>)>, ProtocolViolation> {
        let n = self.read_short(what)?;
        let mut out = Vec::with_capacity(usize::from(n).min(self.remaining() / 6));
        for _ in 0..n {
            let k = self.read_string(what)?;
            let v = self.read_bytes(what)?;
            out.push((k, v));
        }
        Ok(out)
    }

    /// `[uuid]`: 16 bytes.
    #[cfg(test)]
    pub(crate) fn read_uuid(&mut self, what: &str) -> Result<uuid::Uuid, ProtocolViolation> {
        Ok(uuid::Uuid::from_bytes(self.take_array(what)?))
    }

    /// `[inet]`: a one-byte address length (4 or 16), the address, then an `[int]` port.
    #[cfg(test)]
    pub(crate) fn read_inet(&mut self, what: &str) -> Result<SocketAddr, ProtocolViolation> {
        let len = self.read_byte(what)?;
        let ip = match len {
            4 => IpAddr::from(self.take_array::<4>(what)?),
            16 => IpAddr::from(self.take_array::<16>(what)?),
            n => {
                return Err(ProtocolViolation::new(format!(
                    "Invalid address length {n} in the [inet] {what} (expected 4 or 16)"
                )));
            }
        };
        let port = self.read_int(what)?;
        let port = u16::try_from(port).map_err(|_| {
            ProtocolViolation::new(format!("Invalid port {port} in the [inet] {what}"))
        })?;
        Ok(SocketAddr::new(ip, port))
    }

    /// `[consistency]`: a `[short]` code; an unknown code is an error.
    pub(crate) fn read_consistency(
        &mut self,
        what: &str,
    ) -> Result<Consistency, ProtocolViolation> {
        let code = self.read_short(what)?;
        Consistency::from_code(code).ok_or_else(|| {
            ProtocolViolation::new(format!(
                "Unknown code {code} for a consistency level ({what})"
            ))
        })
    }
}

/// The error for a notation cut short by the end of the body.
fn truncated(what: &str, needed: usize, have: usize) -> ProtocolViolation {
    ProtocolViolation::new(format!(
        "Not enough bytes to read {what}: needed {needed}, {have} left in the frame body"
    ))
}

/// Validates and copies a UTF-8 string.
fn utf8(raw: &[u8], what: &str) -> Result<String, ProtocolViolation> {
    match std::str::from_utf8(raw) {
        Ok(s) => Ok(s.to_owned()),
        Err(_) => Err(ProtocolViolation::new(format!(
            "Cannot decode {what}: the string is not valid UTF-8"
        ))),
    }
}

/// Cuts `s` to at most `max` bytes at a character boundary.
fn clip(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.get(..end).unwrap_or_default()
}

/// `[byte]`
#[cfg(test)]
pub(crate) fn put_byte(out: &mut BytesMut, v: u8) {
    out.put_u8(v);
}

/// `[short]`
pub(crate) fn put_short(out: &mut BytesMut, v: u16) {
    out.put_u16(v);
}

/// `[int]`
pub(crate) fn put_int(out: &mut BytesMut, v: i32) {
    out.put_i32(v);
}

/// `[long]`
#[cfg(test)]
pub(crate) fn put_long(out: &mut BytesMut, v: i64) {
    out.put_i64(v);
}

/// Writes a `[short]` count of at most `u16::MAX` and returns how many elements to write.
fn put_short_count(out: &mut BytesMut, len: usize) -> usize {
    let n = u16::try_from(len).unwrap_or(u16::MAX);
    out.put_u16(n);
    usize::from(n)
}

/// `[string]` (cut at 65535 bytes, on a character boundary).
pub(crate) fn put_string(out: &mut BytesMut, s: &str) {
    let s = clip(s, usize::from(u16::MAX));
    put_short_count(out, s.len());
    out.extend_from_slice(s.as_bytes());
}

/// `[long string]` (cut at `i32::MAX` bytes).
#[cfg(test)]
pub(crate) fn put_long_string(out: &mut BytesMut, s: &str) {
    let s = clip(s, i32::MAX as usize);
    out.put_i32(i32::try_from(s.len()).unwrap_or(i32::MAX));
    out.extend_from_slice(s.as_bytes());
}

/// `[bytes]`; `None` is written as length `-1` (null).
pub(crate) fn put_bytes(out: &mut BytesMut, b: Option<&[u8]>) {
    match b {
        None => out.put_i32(-1),
        Some(b) => {
            let b = b.get(..b.len().min(i32::MAX as usize)).unwrap_or_default();
            out.put_i32(i32::try_from(b.len()).unwrap_or(i32::MAX));
            out.extend_from_slice(b);
        }
    }
}

/// `[short bytes]` (cut at 65535 bytes).
pub(crate) fn put_short_bytes(out: &mut BytesMut, b: &[u8]) {
    let n = put_short_count(out, b.len());
    out.extend_from_slice(b.get(..n).unwrap_or_default());
}

/// `[value]`: `[bytes]` with `-1` for null and `-2` for unset.
#[cfg(test)]
pub(crate) fn put_value(out: &mut BytesMut, v: &BoundValue) {
    match v {
        BoundValue::Value(b) => put_bytes(out, Some(b)),
        BoundValue::Null => out.put_i32(-1),
        BoundValue::Unset => out.put_i32(-2),
    }
}

/// `[string list]`
pub(crate) fn put_string_list<S: AsRef<str>>(out: &mut BytesMut, list: &[S]) {
    let n = put_short_count(out, list.len());
    for s in list.iter().take(n) {
        put_string(out, s.as_ref());
    }
}

/// `[string map]`, in the given order.
#[cfg(test)]
pub(crate) fn put_string_map<K: AsRef<str>, V: AsRef<str>>(out: &mut BytesMut, map: &[(K, V)]) {
    let n = put_short_count(out, map.len());
    for (k, v) in map.iter().take(n) {
        put_string(out, k.as_ref());
        put_string(out, v.as_ref());
    }
}

/// `[string multimap]`, in the given order.
pub(crate) fn put_string_multimap<K: AsRef<str>, V: AsRef<str>>(
    out: &mut BytesMut,
    map: &[(K, Vec<V>)],
) {
    let n = put_short_count(out, map.len());
    for (k, v) in map.iter().take(n) {
        put_string(out, k.as_ref());
        put_string_list(out, v);
    }
}

/// `[bytes map]`, in the given order.
pub(crate) fn put_bytes_map<K: AsRef<str>>(out: &mut BytesMut, map: &[(K, Option<Bytes>)]) {
    let n = put_short_count(out, map.len());
    for (k, v) in map.iter().take(n) {
        put_string(out, k.as_ref());
        put_bytes(out, v.as_deref());
    }
}

/// `[uuid]`
#[cfg(test)]
pub(crate) fn put_uuid(out: &mut BytesMut, u: &uuid::Uuid) {
    out.extend_from_slice(u.as_bytes());
}

/// `[inet]`: address length (4 or 16), address bytes, `[int]` port.
pub(crate) fn put_inet(out: &mut BytesMut, addr: &SocketAddr) {
    match addr.ip() {
        IpAddr::V4(ip) => {
            out.put_u8(4);
            out.extend_from_slice(&ip.octets());
        }
        IpAddr::V6(ip) => {
            out.put_u8(16);
            out.extend_from_slice(&ip.octets());
        }
    }
    out.put_i32(i32::from(addr.port()));
}

/// `[consistency]`
pub(crate) fn put_consistency(out: &mut BytesMut, c: Consistency) {
    out.put_u16(c.code());
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    fn reader(bytes: &[u8]) -> Reader {
        Reader::new(Bytes::copy_from_slice(bytes))
    }

    #[test]
    fn integers_are_big_endian() {
        let mut out = BytesMut::new();
        put_byte(&mut out, 7);
        put_short(&mut out, 0x0102);
        put_int(&mut out, -2);
        put_long(&mut out, 0x0102_0304_0506_0708);
        assert_eq!(
            &out[..],
            &[7, 1, 2, 0xff, 0xff, 0xff, 0xfe, 1, 2, 3, 4, 5, 6, 7, 8]
        );
        let mut r = Reader::new(out.freeze());
        assert_eq!(r.read_byte("b").unwrap(), 7);
        assert_eq!(r.read_short("s").unwrap(), 0x0102);
        assert_eq!(r.read_int("i").unwrap(), -2);
        assert_eq!(r.read_long("l").unwrap(), 0x0102_0304_0506_0708);
        assert_eq!(r.remaining(), 0);
    }

    #[test]
    fn truncated_input_is_an_error_not_a_panic() {
        assert!(reader(&[0]).read_short("s").is_err());
        assert!(reader(&[0, 0, 0]).read_int("i").is_err());
        assert!(reader(&[0, 5, b'a', b'b']).read_string("s").is_err());
        assert!(reader(&[0, 0, 0, 9, 1]).read_bytes("b").is_err());
        assert!(reader(&[0, 0, 0, 9, 1]).read_long_string("b").is_err());
        assert!(reader(&[0, 3, 1]).read_short_bytes("b").is_err());
        assert!(reader(&[0, 2, 0, 1, b'a']).read_string_list("l").is_err());
        assert!(reader(&[4, 127, 0]).read_inet("i").is_err());
        let err = reader(&[0, 5, b'a']).read_string("the query").unwrap_err();
        assert!(err.message().contains("the query"), "{err}");
    }

    #[test]
    fn strings_must_be_utf8() {
        let err = reader(&[0, 2, 0xc3, 0x28]).read_string("s").unwrap_err();
        assert!(err.message().contains("UTF-8"));
        assert!(reader(&[0, 0, 0, 1, 0xff]).read_long_string("s").is_err());
        assert_eq!(
            reader(&[0, 2, 0xc3, 0xa9]).read_string("s").unwrap(),
            "\u{e9}"
        );
    }

    #[test]
    fn long_string_rejects_negative_length() {
        assert!(
            reader(&[0xff, 0xff, 0xff, 0xff])
                .read_long_string("q")
                .is_err()
        );
    }

    #[test]
    fn values_distinguish_null_unset_and_empty() {
        let mut out = BytesMut::new();
        put_value(&mut out, &BoundValue::Null);
        put_value(&mut out, &BoundValue::Unset);
        put_value(&mut out, &BoundValue::Value(Bytes::new()));
        put_value(&mut out, &BoundValue::Value(Bytes::from_static(b"xy")));
        let mut r = Reader::new(out.freeze());
        assert_eq!(r.read_value("v").unwrap(), BoundValue::Null);
        assert_eq!(r.read_value("v").unwrap(), BoundValue::Unset);
        assert_eq!(r.read_value("v").unwrap(), BoundValue::Value(Bytes::new()));
        assert_eq!(
            r.read_value("v").unwrap(),
            BoundValue::Value(Bytes::from_static(b"xy"))
        );
        assert!(reader(&[0xff, 0xff, 0xff, 0xfd]).read_value("v").is_err());
    }

    #[test]
    fn bytes_negative_length_is_null() {
        assert_eq!(
            reader(&[0xff, 0xff, 0xff, 0xff]).read_bytes("b").unwrap(),
            None
        );
        assert_eq!(reader(&[0x80, 0, 0, 0]).read_bytes("b").unwrap(), None);
    }

    #[test]
    fn collections_round_trip_in_order() {
        let mut out = BytesMut::new();
        put_string_list(&mut out, &["b", "a"]);
        put_string_map(&mut out, &[("z", "1"), ("a", "2"), ("z", "3")]);
        put_string_multimap(&mut out, &[("K", vec!["x", "y"]), ("E", vec![])]);
        put_bytes_map(
            &mut out,
            &[("p", Some(Bytes::from_static(b"\x01"))), ("n", None)],
        );
        let mut r = Reader::new(out.freeze());
        assert_eq!(r.read_string_list("l").unwrap(), vec!["b", "a"]);
        assert_eq!(
            r.read_string_map("m").unwrap(),
            vec![
                ("z".to_string(), "1".to_string()),
                ("a".to_string(), "2".to_string()),
                ("z".to_string(), "3".to_string())
            ]
        );
        assert_eq!(
            r.read_string_multimap("mm").unwrap(),
            vec![
                ("K".to_string(), vec!["x".to_string(), "y".to_string()]),
                ("E".to_string(), vec![])
            ]
        );
        assert_eq!(
            r.read_bytes_map("bm").unwrap(),
            vec![
                ("p".to_string(), Some(Bytes::from_static(b"\x01"))),
                ("n".to_string(), None)
            ]
        );
        assert_eq!(r.remaining(), 0);
    }

    #[test]
    fn uuid_inet_and_consistency() {
        let u = Uuid::from_u128(0x0011_2233_4455_6677_8899_aabb_ccdd_eeff);
        let v4: SocketAddr = "127.0.0.3:9042".parse().unwrap();
        let v6: SocketAddr = "[::1]:19042".parse().unwrap();
        let mut out = BytesMut::new();
        put_uuid(&mut out, &u);
        put_inet(&mut out, &v4);
        put_inet(&mut out, &v6);
        put_consistency(&mut out, Consistency::LocalQuorum);
        assert_eq!(&out[16..21], &[4, 127, 0, 0, 3]);
        let mut r = Reader::new(out.freeze());
        assert_eq!(r.read_uuid("u").unwrap(), u);
        assert_eq!(r.read_inet("i").unwrap(), v4);
        assert_eq!(r.read_inet("i").unwrap(), v6);
        assert_eq!(r.read_consistency("c").unwrap(), Consistency::LocalQuorum);
        assert!(reader(&[0, 11]).read_consistency("c").is_err());
        assert!(
            reader(&[5, 1, 2, 3, 4, 5, 0, 0, 0, 1])
                .read_inet("i")
                .is_err()
        );
    }

    #[test]
    fn overlong_strings_are_cut_on_a_char_boundary() {
        let s = "\u{e9}".repeat(40_000); // 80 000 bytes
        let mut out = BytesMut::new();
        put_string(&mut out, &s);
        let mut r = Reader::new(out.freeze());
        let back = r.read_string("s").unwrap();
        assert_eq!(back.len(), 65_534);
        assert!(s.starts_with(&back));
    }

    #[test]
    fn short_bytes_and_bytes_write_lengths() {
        let mut out = BytesMut::new();
        put_short_bytes(&mut out, b"abc");
        put_bytes(&mut out, None);
        put_bytes(&mut out, Some(b"de"));
        put_long_string(&mut out, "q");
        assert_eq!(
            &out[..],
            &[
                0, 3, b'a', b'b', b'c', 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 2, b'd', b'e', 0, 0, 0, 1,
                b'q'
            ]
        );
    }
}
