//! A table's CDC options as ScyllaDB stores them: the `cdc` entry of
//! `system_schema.tables.extensions`.

use std::collections::HashMap;
use std::time::Duration;

use scylla::client::session::Session;

use crate::base::error::CDCError;

/// A `cdc` schema extension that could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CdcExtensionError(String);

/// Decodes the `cdc` entry of `system_schema.tables.extensions` into its `(option, value)`
/// pairs, in stored order.
///
/// Scylla serializes the option map with its IDL (scylladb `cdc/cdc_extension.hh`,
/// `serialize_to_buffer` of a `std::map<sstring, sstring>`): a little-endian `u32` count,
/// then per entry the key and the value, each a little-endian `u32` length and that many bytes
/// of UTF-8. A truncated blob or a string that is not UTF-8 is an error, never a panic.
pub fn decode_cdc_extension(blob: &[u8]) -> Result<Vec<(String, String)>, CdcExtensionError> {
    let early = || CdcExtensionError("the cdc extension ends early".to_owned());
    let mut rest = blob;
    let u32_le = |rest: &mut &[u8]| -> Result<usize, CdcExtensionError> {
        let (head, tail) = rest.split_first_chunk::<4>().ok_or_else(early)?;
        *rest = tail;
        usize::try_from(u32::from_le_bytes(*head)).map_err(|e| CdcExtensionError(e.to_string()))
    };
    let count = u32_le(&mut rest)?;
    let mut out = Vec::new();
    for _ in 0..count {
        let mut pair = [String::new(), String::new()];
        for s in &mut pair {
            let len = u32_le(&mut rest)?;
            if rest.len() < len {
                return Err(early());
            }
            let (text, tail) = rest.split_at(len);
            *s = String::from_utf8(text.to_vec()).map_err(|_| {
                CdcExtensionError("the cdc extension has a string that is not UTF-8".to_owned())
            })?;
            rest = tail;
        }
        let [k, v] = pair;
        out.push((k, v));
    }
    Ok(out)
}

/// The decoded `cdc` extension of `keyspace.table`, or `None` when the table has none (it
/// never had a `cdc` option).
pub(crate) async fn read_cdc_extension(
    session: &Session,
    keyspace: &str,
    table: &str,
) -> Result<Option<Vec<(String, String)>>, CDCError> {
    /// `system_schema.tables.extensions`: name → serialized extension.
    type Extensions = Option<HashMap<String, Vec<u8>>>;
    let what = "system_schema.tables.extensions";
    let result = session
        .query_unpaged(
            "SELECT extensions FROM system_schema.tables WHERE keyspace_name = ? AND table_name = ?",
            (keyspace, table),
        )
        .await
        .map_err(|source| CDCError::Query {
            what: format!("reading {what}"),
            source: Box::new(source),
        })?;
    let bad = |detail: String| CDCError::BadMetadata {
        what: what.into(),
        detail,
    };
    let rows = result.into_rows_result().map_err(|e| bad(e.to_string()))?;
    let row = rows
        .maybe_first_row::<(Extensions,)>()
        .map_err(|e| bad(e.to_string()))?;
    let Some(blob) = row.and_then(|(e,)| e).and_then(|mut e| e.remove("cdc")) else {
        return Ok(None);
    };
    decode_cdc_extension(&blob)
        .map(Some)
        .map_err(|e| bad(format!("{keyspace}.{table}: {e}")))
}

/// Whether the table logs its changes now: its `cdc` extension says `enabled: true`. A table
/// that never had the option has no extension; disabling CDC keeps the extension with
/// `enabled: false` (semantics §1.1).
pub(crate) async fn cdc_enabled(
    session: &Session,
    keyspace: &str,
    table: &str,
) -> Result<bool, CDCError> {
    Ok(read_cdc_extension(session, keyspace, table)
        .await?
        .is_some_and(|options| {
            options
                .iter()
                .any(|(k, v)| k == "enabled" && v.eq_ignore_ascii_case("true"))
        }))
}

/// How long the log keeps a change: the `ttl` CDC option (seconds; `None` for 0, no expiry).
/// A missing `ttl` entry means it is unknown, so nothing is assumed to expire.
pub(crate) fn log_ttl(options: &[(String, String)]) -> Result<Option<Duration>, String> {
    let Some((_, value)) = options.iter().find(|(k, _)| k == "ttl") else {
        return Ok(None);
    };
    // Scylla parses it with `std::stoi` and refuses negative values (cdc/cdc_options.cc).
    let seconds: u32 = value
        .trim()
        .parse()
        .map_err(|_| format!("the cdc ttl option is not a number of seconds: {value:?}"))?;
    Ok((seconds > 0).then(|| Duration::from_secs(u64::from(seconds))))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The IDL map Scylla stores in `system_schema.tables.extensions['cdc']`.
    fn idl(entries: &[(&str, &str)]) -> Vec<u8> {
        let mut out = (entries.len() as u32).to_le_bytes().to_vec();
        for (k, v) in entries {
            for s in [k, v] {
                out.extend_from_slice(&(s.len() as u32).to_le_bytes());
                out.extend_from_slice(s.as_bytes());
            }
        }
        out
    }

    #[test]
    fn cdc_extension_is_decoded_and_bad_blobs_are_errors() {
        let blob = idl(&[("enabled", "true"), ("postimage", "true"), ("ttl", "86400")]);
        assert_eq!(
            decode_cdc_extension(&blob).unwrap(),
            vec![
                ("enabled".to_owned(), "true".to_owned()),
                ("postimage".to_owned(), "true".to_owned()),
                ("ttl".to_owned(), "86400".to_owned()),
            ]
        );
        assert_eq!(decode_cdc_extension(&idl(&[])).unwrap(), vec![]);
        for cut in 1..blob.len() {
            assert!(decode_cdc_extension(&blob[..cut]).is_err(), "cut at {cut}");
        }
        let mut bad = idl(&[("k", "v")]);
        *bad.last_mut().unwrap() = 0xff;
        assert!(decode_cdc_extension(&bad).is_err());
        // A count far beyond the data does not allocate or panic.
        assert!(decode_cdc_extension(&[0xff, 0xff, 0xff, 0xff]).is_err());
    }

    #[test]
    fn the_ttl_option_is_read() {
        let opts = |ttl: &str| vec![("ttl".to_owned(), ttl.to_owned())];
        assert_eq!(
            log_ttl(&opts("86400")),
            Ok(Some(Duration::from_secs(86400)))
        );
        assert_eq!(log_ttl(&opts("0")), Ok(None));
        assert_eq!(log_ttl(&[]), Ok(None));
        assert!(log_ttl(&opts("-1")).is_err());
        assert!(log_ttl(&opts("soon")).is_err());
    }
}
