//! The options a client negotiated in STARTUP that change how frames are encoded on its
//! connection: the Scylla protocol extensions it echoed ([`Extensions`]) and the STARTUP keys
//! that name them.

/// The bit Scylla advertises for LWT statements in PREPARED flags
/// (`SCYLLA_LWT_ADD_METADATA_MARK=LWT_OPTIMIZATION_META_BIT_MASK=2147483648`).
pub(crate) const LWT_MARK_MASK: u32 = 0x8000_0000;
/// STARTUP/SUPPORTED key of the LWT metadata mark extension.
pub(crate) const KEY_LWT_ADD_METADATA_MARK: &str = "SCYLLA_LWT_ADD_METADATA_MARK";
/// Parameter name inside the LWT extension's value.
pub(crate) const KEY_LWT_MASK_PARAM: &str = "LWT_OPTIMIZATION_META_BIT_MASK";
/// STARTUP/SUPPORTED key of the rate-limit error extension.
pub(crate) const KEY_RATE_LIMIT_ERROR: &str = "SCYLLA_RATE_LIMIT_ERROR";

/// The Scylla protocol extensions a client negotiated (echoed in STARTUP); they change how
/// some responses are encoded. `Default` is "none", right before STARTUP.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Extensions {
    /// `SCYLLA_LWT_ADD_METADATA_MARK`: the mask to set in PREPARED flags of LWT statements.
    pub lwt_mark: Option<u32>,
    /// `SCYLLA_RATE_LIMIT_ERROR`: rate-limit errors may use their own code.
    pub rate_limit_error: bool,
}

impl Extensions {
    /// The extensions echoed in these STARTUP options. Only these two are understood; the
    /// server never advertises the others (metadata id, tablets), so they are ignored.
    pub(crate) fn from_startup(options: &[(String, String)]) -> Self {
        let mut ext = Extensions::default();
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
        ext
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
        let ext = Extensions::from_startup(&opts);
        assert_eq!(ext.lwt_mark, Some(0x8000_0000));
        assert!(ext.rate_limit_error);
        assert_eq!(Extensions::from_startup(&opts[..1]), Extensions::default());
        let odd = vec![(KEY_LWT_ADD_METADATA_MARK.to_string(), "x".to_string())];
        assert_eq!(Extensions::from_startup(&odd).lwt_mark, Some(LWT_MARK_MASK));
    }
}
