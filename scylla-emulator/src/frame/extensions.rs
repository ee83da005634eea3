//! The options a client negotiated in STARTUP that change how frames are encoded on its
//! connection ([`Extensions`]): the body compression it picked and the Scylla protocol
//! extensions it echoed, and the STARTUP keys that name them.

use bytes::{BufMut, Bytes, BytesMut};
use uuid::Uuid;

use super::compression::Compression;

/// The bit Scylla advertises for LWT statements in PREPARED flags
/// (`SCYLLA_LWT_ADD_METADATA_MARK=LWT_OPTIMIZATION_META_BIT_MASK=2147483648`).
pub(crate) const LWT_MARK_MASK: u32 = 0x8000_0000;
/// STARTUP/SUPPORTED key of the LWT metadata mark extension.
pub(crate) const KEY_LWT_ADD_METADATA_MARK: &str = "SCYLLA_LWT_ADD_METADATA_MARK";
/// Parameter name inside the LWT extension's value.
pub(crate) const KEY_LWT_MASK_PARAM: &str = "LWT_OPTIMIZATION_META_BIT_MASK";
/// STARTUP/SUPPORTED key of the rate-limit error extension.
pub(crate) const KEY_RATE_LIMIT_ERROR: &str = "SCYLLA_RATE_LIMIT_ERROR";
/// STARTUP/SUPPORTED key of frame body compression.
pub(crate) const KEY_COMPRESSION: &str = "COMPRESSION";
/// STARTUP/SUPPORTED key of the tablets routing extension (Scylla's
/// `docs/dev/protocol-extensions.md`, "Tablets routing v1").
pub(crate) const KEY_TABLETS_ROUTING_V1: &str = "TABLETS_ROUTING_V1";
/// Custom-payload key of a RESULT's tablet routing information.
pub(crate) const PAYLOAD_TABLETS_ROUTING_V1: &str = "tablets-routing-v1";

/// A STARTUP that names a codec the server does not have: Scylla answers it with a Protocol
/// error carrying this message (the name lower-cased, as `process_startup` compares it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Unknown compression algorithm: {0}")]
pub(crate) struct UnknownCompression(pub(crate) String);

/// What a client negotiated in STARTUP: the body compression, and the Scylla protocol
/// extensions it echoed, which change how some responses are encoded. `Default` is "none",
/// right before STARTUP.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Extensions {
    /// `COMPRESSION`: the codec of compressed request bodies, and of every response body
    /// after the STARTUP.
    pub compression: Option<Compression>,
    /// `SCYLLA_LWT_ADD_METADATA_MARK`: the mask to set in PREPARED flags of LWT statements.
    pub lwt_mark: Option<u32>,
    /// `SCYLLA_RATE_LIMIT_ERROR`: rate-limit errors may use their own code.
    pub rate_limit_error: bool,
    /// `TABLETS_ROUTING_V1`: results of requests that missed their tablet's replicas carry
    /// the tablet's routing information.
    pub tablets_routing: bool,
}

impl Extensions {
    /// What these STARTUP options negotiate: the compression they name (an unknown one is
    /// refused) and the extensions they echo. Only the extensions the server advertises are
    /// understood; the others (metadata id, tablets routing v2) are ignored.
    pub(crate) fn from_startup(options: &[(String, String)]) -> Result<Self, UnknownCompression> {
        let mut ext = Extensions::default();
        if let Some((_, name)) = options.iter().find(|(k, _)| k == KEY_COMPRESSION) {
            ext.compression = Some(
                Compression::from_name(name)
                    .ok_or_else(|| UnknownCompression(name.to_ascii_lowercase()))?,
            );
        }
        for (k, v) in options {
            if k == KEY_LWT_ADD_METADATA_MARK {
                let mask = v
                    .split_once('=')
                    .filter(|(name, _)| *name == KEY_LWT_MASK_PARAM)
                    .and_then(|(_, mask)| mask.trim().parse::<u32>().ok())
                    .unwrap_or(LWT_MARK_MASK);
                ext.lwt_mark = Some(mask);
            } else if k == KEY_RATE_LIMIT_ERROR {
                ext.rate_limit_error = true;
            } else if k == KEY_TABLETS_ROUTING_V1 {
                ext.tablets_routing = true;
            }
        }
        Ok(ext)
    }
}

/// The value of the `tablets-routing-v1` custom-payload entry: a serialized CQL
/// `tuple<bigint, bigint, list<tuple<uuid, int>>>` of the tablet's range
/// `(first_token, last_token]` and its replicas as (host id, shard), as Scylla's
/// `result_message::add_tablet_info` builds it.
pub(crate) fn tablets_routing_v1_value(
    first_token: i64,
    last_token: i64,
    replicas: &[(Uuid, u32)],
) -> Bytes {
    fn element(out: &mut BytesMut, value: &[u8]) {
        out.put_i32(value.len() as i32);
        out.extend_from_slice(value);
    }
    let mut list = BytesMut::new();
    list.put_i32(replicas.len() as i32);
    for (host, shard) in replicas {
        let mut replica = BytesMut::new();
        element(&mut replica, host.as_bytes());
        element(&mut replica, &(*shard as i32).to_be_bytes());
        element(&mut list, &replica);
    }
    let mut out = BytesMut::new();
    element(&mut out, &first_token.to_be_bytes());
    element(&mut out, &last_token.to_be_bytes());
    element(&mut out, &list);
    out.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extensions_come_from_startup_echoes() {
        let opts = vec![
            ("CQL_VERSION".to_string(), "4.0.0".to_string()),
            (
                KEY_LWT_ADD_METADATA_MARK.to_string(),
                "LWT_OPTIMIZATION_META_BIT_MASK=2147483648".to_string(),
            ),
            (KEY_RATE_LIMIT_ERROR.to_string(), String::new()),
            (KEY_TABLETS_ROUTING_V1.to_string(), String::new()),
        ];
        let ext = Extensions::from_startup(&opts).unwrap();
        assert_eq!(ext.lwt_mark, Some(0x8000_0000));
        assert!(ext.rate_limit_error);
        assert!(ext.tablets_routing);
        assert_eq!(ext.compression, None);
        assert_eq!(
            Extensions::from_startup(&opts[..1]),
            Ok(Extensions::default())
        );
        let odd = vec![(KEY_LWT_ADD_METADATA_MARK.to_string(), "x".to_string())];
        assert_eq!(
            Extensions::from_startup(&odd).unwrap().lwt_mark,
            Some(LWT_MARK_MASK)
        );
    }

    #[test]
    fn compression_is_negotiated_case_insensitively() {
        let with = |name: &str| {
            Extensions::from_startup(&[(KEY_COMPRESSION.to_string(), name.to_string())])
                .map(|e| e.compression)
        };
        assert_eq!(with("lz4"), Ok(Some(Compression::Lz4)));
        assert_eq!(with("SNAPPY"), Ok(Some(Compression::Snappy)));
        let err = with("LZ5").unwrap_err();
        assert_eq!(err.to_string(), "Unknown compression algorithm: lz5");
        assert_eq!(with(""), Err(UnknownCompression(String::new())));
    }

    #[test]
    fn the_tablets_payload_is_a_tuple_of_range_and_replicas() {
        let host = Uuid::from_u128(0x0102);
        let v = tablets_routing_v1_value(-5, 7, &[(host, 3)]);
        let mut expected = vec![0, 0, 0, 8];
        expected.extend_from_slice(&(-5i64).to_be_bytes());
        expected.extend_from_slice(&[0, 0, 0, 8]);
        expected.extend_from_slice(&7i64.to_be_bytes());
        // list: [int] length of the list value, count 1, one tuple element of 28 bytes.
        expected.extend_from_slice(&[0, 0, 0, 36, 0, 0, 0, 1, 0, 0, 0, 28, 0, 0, 0, 16]);
        expected.extend_from_slice(host.as_bytes());
        expected.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 3]);
        assert_eq!(&v[..], &expected[..]);
    }
}
