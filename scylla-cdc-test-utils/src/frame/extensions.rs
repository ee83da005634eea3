//! The options a client negotiated in STARTUP that change how frames are encoded on its
//! connection ([`Extensions`]): the body compression it picked and the Scylla protocol
//! extensions it echoed, and the STARTUP keys that name them.

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
            }
        }
        Ok(ext)
    }
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
        ];
        let ext = Extensions::from_startup(&opts).unwrap();
        assert_eq!(ext.lwt_mark, Some(0x8000_0000));
        assert!(ext.rate_limit_error);
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
}
