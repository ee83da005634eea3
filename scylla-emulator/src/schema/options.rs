//! A table's properties: the options `CREATE TABLE ... WITH` sets and `system_schema.tables`
//! shows ([`TableOptions`]), among them the `cdc` option ([`CdcOptions`]) that decides whether
//! and how writes are logged.

use std::collections::BTreeMap;

/// The `cdc` table option (semantics §1.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CdcOptions {
    /// Whether writes are logged.
    pub(crate) enabled: bool,
    /// Pre-image mode.
    pub(crate) preimage: PreimageMode,
    /// Whether post-images are logged.
    pub(crate) postimage: bool,
    /// Whether delta rows carry values (`full`) or only keys (`keys`).
    pub(crate) delta_full: bool,
    /// TTL (seconds) of every log cell; 0 = no TTL.
    pub(crate) ttl: u32,
}

/// The `preimage` CDC option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PreimageMode {
    /// No pre-images.
    Off,
    /// Pre-images of the columns the write touches.
    On,
    /// Pre-images of the whole row.
    Full,
}

impl Default for CdcOptions {
    fn default() -> Self {
        CdcOptions {
            enabled: false,
            preimage: PreimageMode::Off,
            postimage: false,
            delta_full: true,
            ttl: 86400,
        }
    }
}

impl CdcOptions {
    /// The option map as Scylla serializes it (all five keys, sorted).
    pub(crate) fn to_map(&self) -> BTreeMap<String, String> {
        let b = |v: bool| if v { "true" } else { "false" }.to_string();
        let mut m = BTreeMap::new();
        m.insert(
            "delta".into(),
            if self.delta_full { "full" } else { "keys" }.into(),
        );
        m.insert("enabled".into(), b(self.enabled));
        m.insert("postimage".into(), b(self.postimage));
        m.insert(
            "preimage".into(),
            match self.preimage {
                PreimageMode::Off => "false",
                PreimageMode::On => "true",
                PreimageMode::Full => "full",
            }
            .into(),
        );
        m.insert("ttl".into(), self.ttl.to_string());
        m
    }

    /// The `cdc` schema extension blob: Scylla's IDL serialization of `map<string, string>`,
    /// a little-endian u32 count, then each key and value as a little-endian u32 length and
    /// UTF-8 bytes, keys sorted (semantics §1.1).
    pub(crate) fn extension_blob(&self) -> Vec<u8> {
        let map = self.to_map();
        let mut out = Vec::new();
        out.extend_from_slice(&(map.len() as u32).to_le_bytes());
        for (k, v) in &map {
            for s in [k, v] {
                out.extend_from_slice(&(s.len() as u32).to_le_bytes());
                out.extend_from_slice(s.as_bytes());
            }
        }
        out
    }

    /// [`CdcOptions::parse`] with `default_ttl` as the `ttl` when the map does not give one
    /// (the cluster's configurable default, 86400 s as in Scylla unless changed).
    pub(crate) fn parse_with_default_ttl(
        entries: &[(String, String)],
        default_ttl: u32,
    ) -> Result<CdcOptions, String> {
        let mut o = CdcOptions::parse(entries)?;
        if !entries.iter().any(|(k, _)| k.eq_ignore_ascii_case("ttl")) {
            o.ttl = default_ttl;
        }
        Ok(o)
    }

    /// Parses the option map of `WITH cdc = {...}` (keys and values case-insensitive; values
    /// given as strings or bare literals, already rendered as text). Parsing starts from the
    /// defaults: ALTER replaces the whole option set. Errors are the messages Scylla returns
    /// as a configuration error.
    pub(crate) fn parse(entries: &[(String, String)]) -> Result<CdcOptions, String> {
        let mut o = CdcOptions::default();
        let parse_bool = |key: &str, v: &str| match v {
            "true" | "1" => Ok(true),
            "false" | "0" => Ok(false),
            _ => Err(format!("Invalid value for CDC option \"{key}\": {v}")),
        };
        for (key, value) in entries {
            let key = key.to_ascii_lowercase();
            let value = value.to_ascii_lowercase();
            match key.as_str() {
                "enabled" => o.enabled = parse_bool(&key, &value)?,
                "postimage" => o.postimage = parse_bool(&key, &value)?,
                "preimage" => {
                    o.preimage = if value == "full" {
                        PreimageMode::Full
                    } else if parse_bool(&key, &value)? {
                        PreimageMode::On
                    } else {
                        PreimageMode::Off
                    }
                }
                "delta" => {
                    o.delta_full = match value.as_str() {
                        "full" => true,
                        "keys" => false,
                        _ => {
                            return Err(format!("Invalid value for CDC option \"delta\": {value}"));
                        }
                    }
                }
                "ttl" => {
                    let ttl: i64 = value
                        .parse()
                        .map_err(|_| format!("Invalid value for CDC option \"ttl\": {value}"))?;
                    if ttl < 0 {
                        return Err("Invalid CDC option: ttl must be >= 0".into());
                    }
                    o.ttl = u32::try_from(ttl)
                        .ok()
                        .filter(|t| *t <= i32::MAX as u32)
                        .ok_or_else(|| "Invalid CDC option: ttl too large".to_string())?;
                }
                _ => return Err(format!("Invalid CDC option: {key}")),
            }
        }
        Ok(o)
    }
}

/// Table properties kept and shown in `system_schema.tables`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TableOptions {
    /// `comment`
    pub(crate) comment: String,
    /// `read_repair_chance` (obsolete in Scylla, kept and shown).
    pub(crate) read_repair_chance: f64,
    /// `dclocal_read_repair_chance` (obsolete in Scylla, kept and shown).
    pub(crate) dclocal_read_repair_chance: f64,
    /// `paxos_grace_seconds` (a Scylla extension), if set.
    pub(crate) paxos_grace_seconds: Option<i32>,
    /// `default_time_to_live` (seconds, 0 = none).
    pub(crate) default_time_to_live: i32,
    /// `gc_grace_seconds`
    pub(crate) gc_grace_seconds: i32,
    /// `bloom_filter_fp_chance`
    pub(crate) bloom_filter_fp_chance: f64,
    /// `crc_check_chance`
    pub(crate) crc_check_chance: f64,
    /// `speculative_retry`
    pub(crate) speculative_retry: String,
    /// `min_index_interval`
    pub(crate) min_index_interval: i32,
    /// `max_index_interval`
    pub(crate) max_index_interval: i32,
    /// `memtable_flush_period_in_ms`
    pub(crate) memtable_flush_period_in_ms: i32,
    /// `caching`
    pub(crate) caching: BTreeMap<String, String>,
    /// `compaction`
    pub(crate) compaction: BTreeMap<String, String>,
    /// `compression`
    pub(crate) compression: BTreeMap<String, String>,
    /// The `cdc` option, if the table ever had one.
    pub(crate) cdc: Option<CdcOptions>,
    /// The `tombstone_gc` extension, if set.
    pub(crate) tombstone_gc: Option<BTreeMap<String, String>>,
}

impl Default for TableOptions {
    fn default() -> Self {
        let map = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>()
        };
        TableOptions {
            comment: String::new(),
            read_repair_chance: 0.0,
            dclocal_read_repair_chance: 0.0,
            paxos_grace_seconds: None,
            default_time_to_live: 0,
            gc_grace_seconds: 864000,
            bloom_filter_fp_chance: 0.01,
            crc_check_chance: 1.0,
            speculative_retry: "99.0PERCENTILE".into(),
            min_index_interval: 128,
            max_index_interval: 2048,
            memtable_flush_period_in_ms: 0,
            caching: map(&[("keys", "ALL"), ("rows_per_partition", "ALL")]),
            // Scylla stores and shows compaction classes by their short names.
            compaction: map(&[("class", "SizeTieredCompactionStrategy")]),
            compression: map(&[(
                "sstable_compression",
                "org.apache.cassandra.io.compress.LZ4Compressor",
            )]),
            cdc: None,
            tombstone_gc: None,
        }
    }
}

impl TableOptions {
    /// Whether writes to the table are logged to a CDC log.
    pub(crate) fn cdc_enabled(&self) -> bool {
        self.cdc.as_ref().is_some_and(|c| c.enabled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cdc_options_parse_like_scylla() {
        let kv = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<Vec<_>>()
        };
        let o = CdcOptions::parse(&kv(&[
            ("Enabled", "TRUE"),
            ("preimage", "full"),
            ("ttl", "10"),
        ]))
        .expect("valid");
        assert!(o.enabled);
        assert_eq!(o.preimage, PreimageMode::Full);
        assert_eq!(o.ttl, 10);
        // Parsing starts from the defaults.
        let o = CdcOptions::parse(&kv(&[("enabled", "false")])).expect("valid");
        assert_eq!(o, CdcOptions::default());
        assert_eq!(
            CdcOptions::parse(&kv(&[("enabled", "yes")])).unwrap_err(),
            "Invalid value for CDC option \"enabled\": yes"
        );
        assert_eq!(
            CdcOptions::parse(&kv(&[("foo", "1")])).unwrap_err(),
            "Invalid CDC option: foo"
        );
        assert_eq!(
            CdcOptions::parse(&kv(&[("ttl", "-1")])).unwrap_err(),
            "Invalid CDC option: ttl must be >= 0"
        );
        assert_eq!(
            CdcOptions::parse(&kv(&[("ttl", "99999999999")])).unwrap_err(),
            "Invalid CDC option: ttl too large"
        );
    }

    #[test]
    fn cdc_extension_blob_is_little_endian_idl_map() {
        let blob = CdcOptions {
            enabled: true,
            ..CdcOptions::default()
        }
        .extension_blob();
        assert_eq!(&blob[..4], &5u32.to_le_bytes());
        assert_eq!(&blob[4..8], &5u32.to_le_bytes());
        assert_eq!(&blob[8..13], b"delta");
        assert_eq!(&blob[13..17], &4u32.to_le_bytes());
        assert_eq!(&blob[17..21], b"full");
        let text = String::from_utf8_lossy(&blob);
        assert!(text.contains("enabled") && text.contains("true") && text.contains("86400"));
    }
}
