//! The `WITH` properties of `CREATE TABLE` and `ALTER TABLE`: names checked first (an
//! unknown one is a syntax error), then each value parsed, then the combination validated,
//! with Scylla's messages and error codes.

use std::collections::BTreeMap;

use uuid::Uuid;

use crate::cql::{OptionValue, Property};
use crate::frame::CqlError;
use crate::schema::{CdcOptions, KeyspaceDef, TableOptions};

/// Properties every table accepts.
const KNOWN: &[&str] = &[
    "comment",
    "read_repair_chance",
    "dclocal_read_repair_chance",
    "gc_grace_seconds",
    "caching",
    "default_time_to_live",
    "min_index_interval",
    "max_index_interval",
    "speculative_retry",
    "bloom_filter_fp_chance",
    "memtable_flush_period_in_ms",
    "compaction",
    "compression",
    "crc_check_chance",
    "id",
    // Scylla schema extensions.
    "cdc",
    "tombstone_gc",
    "paxos_grace_seconds",
    "per_partition_rate_limit",
    "synchronous_updates",
];

/// Properties Scylla still accepts and ignores.
const OBSOLETE: &[&str] = &[
    "index_interval",
    "replicate_on_write",
    "populate_io_cache_on_flush",
];

/// Longest `default_time_to_live` (20 years, Scylla's maximum TTL).
const MAX_TTL: i64 = 630_720_000;

/// Prefix of compaction strategies' fully qualified class names.
const COMPACTION_PREFIX: &str = "org.apache.cassandra.db.compaction.";

/// Prefix of compressors' fully qualified class names.
const COMPRESSION_PREFIX: &str = "org.apache.cassandra.io.compress.";

/// What a `WITH` clause said beyond the stored options.
#[derive(Debug, Default, Clone)]
pub(super) struct Applied {
    /// `id = ...` (CREATE only).
    pub(super) id: Option<Uuid>,
    /// Whether `cdc` was given.
    pub(super) cdc_given: bool,
}

/// The property value as a string constant.
fn simple(p: &Property) -> Result<String, CqlError> {
    p.value.as_text().ok_or_else(|| {
        CqlError::syntax(format!(
            "Invalid value for property '{}'. It should be a string",
            p.name
        ))
    })
}

/// The property value as a map.
fn map(p: &Property) -> Result<Vec<(String, String)>, CqlError> {
    match &p.value {
        OptionValue::Map(_) => Ok(p.value.as_text_map().unwrap_or_default()),
        OptionValue::Constant(_) => Err(CqlError::syntax(format!(
            "Invalid value for property '{}'. It should be a map.",
            p.name
        ))),
    }
}

/// The property value as a 32-bit integer.
fn int(p: &Property) -> Result<i32, CqlError> {
    let text = simple(p)?;
    text.parse::<i32>()
        .map_err(|_| CqlError::syntax(format!("Invalid integer value {text} for '{}'", p.name)))
}

/// The property value as a double.
fn double(p: &Property) -> Result<f64, CqlError> {
    let text = simple(p)?;
    text.parse::<f64>()
        .ok()
        .filter(|v| !v.is_nan())
        .ok_or_else(|| CqlError::syntax(format!("Invalid double value {text} for '{}'", p.name)))
}

/// Applies `properties` on top of `options` (defaults for CREATE, the current options for
/// ALTER) and validates the result.
pub(super) fn apply(
    options: &mut TableOptions,
    properties: &[Property],
    default_cdc_ttl: u32,
) -> Result<Applied, CqlError> {
    for p in properties {
        if !KNOWN.contains(&p.name.as_str()) && !OBSOLETE.contains(&p.name.as_str()) {
            return Err(CqlError::syntax(format!("Unknown property '{}'", p.name)));
        }
    }
    let mut applied = Applied::default();
    for p in properties {
        match p.name.as_str() {
            "comment" => options.comment = simple(p)?,
            "read_repair_chance" => options.read_repair_chance = double(p)?,
            "dclocal_read_repair_chance" => options.dclocal_read_repair_chance = double(p)?,
            "gc_grace_seconds" => options.gc_grace_seconds = int(p)?,
            "default_time_to_live" => options.default_time_to_live = int(p)?,
            "min_index_interval" => options.min_index_interval = int(p)?,
            "max_index_interval" => options.max_index_interval = int(p)?,
            "memtable_flush_period_in_ms" => options.memtable_flush_period_in_ms = int(p)?,
            "bloom_filter_fp_chance" => options.bloom_filter_fp_chance = double(p)?,
            "crc_check_chance" => options.crc_check_chance = double(p)?,
            "speculative_retry" => options.speculative_retry = speculative_retry(&simple(p)?)?,
            "caching" => options.caching = caching(&map(p)?)?,
            "compaction" => options.compaction = compaction(&map(p)?)?,
            "compression" => options.compression = compression(&map(p)?)?,
            "tombstone_gc" => options.tombstone_gc = Some(tombstone_gc(&map(p)?)?),
            "paxos_grace_seconds" => {
                let v = int(p)?;
                if v < 0 {
                    return Err(CqlError::config(format!(
                        "paxos_grace_seconds must be non-negative, got {v}"
                    )));
                }
                options.paxos_grace_seconds = Some(v);
            }
            "per_partition_rate_limit" => {
                // Accepted (rate limits are not enforced by the embedded cluster).
                map(p)?;
            }
            "synchronous_updates" => {
                return Err(CqlError::invalid(
                    "The synchronous_updates option is only applicable to materialized views, \
                     not to base tables",
                ));
            }
            "id" => {
                let text = simple(p)?;
                applied.id =
                    Some(Uuid::parse_str(&text).map_err(|_| CqlError::config("Invalid table id"))?);
            }
            "cdc" => {
                let entries = map(p)?;
                options.cdc = Some(
                    CdcOptions::parse_with_default_ttl(&entries, default_cdc_ttl)
                        .map_err(CqlError::config)?,
                );
                applied.cdc_given = true;
            }
            // Obsolete properties: accepted and ignored, as Scylla does.
            _ => {}
        }
    }
    validate(options)?;
    Ok(applied)
}

/// Checks the combined options as Scylla does.
fn validate(o: &TableOptions) -> Result<(), CqlError> {
    if o.default_time_to_live < 0 {
        return Err(CqlError::config(
            "default_time_to_live cannot be smaller than 0, (default 0)",
        ));
    }
    if i64::from(o.default_time_to_live) > MAX_TTL {
        return Err(CqlError::config(format!(
            "default_time_to_live must be less than or equal to {MAX_TTL} (got {})",
            o.default_time_to_live
        )));
    }
    if o.gc_grace_seconds < 0 {
        return Err(CqlError::config(
            "gc_grace_seconds cannot be smaller than 0, (default 864000)",
        ));
    }
    if o.min_index_interval < 1 {
        return Err(CqlError::config(
            "min_index_interval must be greater than 0",
        ));
    }
    if o.max_index_interval < o.min_index_interval {
        return Err(CqlError::config(
            "max_index_interval must be greater than min_index_interval",
        ));
    }
    if o.memtable_flush_period_in_ms < 0 {
        return Err(CqlError::config(
            "memtable_flush_period_in_ms cannot be smaller than 0, (default 0)",
        ));
    }
    if !(o.bloom_filter_fp_chance > 0.0 && o.bloom_filter_fp_chance <= 1.0) {
        return Err(CqlError::config(format!(
            "bloom_filter_fp_chance must be larger than 0.0 and less than or equal to 1.0 \
             (got {})",
            o.bloom_filter_fp_chance
        )));
    }
    if !(0.0..=1.0).contains(&o.crc_check_chance) {
        return Err(CqlError::config(
            "crc_check_chance should be between 0.0 and 1.0",
        ));
    }
    for (name, v) in [
        ("read_repair_chance", o.read_repair_chance),
        ("dclocal_read_repair_chance", o.dclocal_read_repair_chance),
    ] {
        if !(0.0..=1.0).contains(&v) {
            return Err(CqlError::config(format!(
                "{name} must be between 0.0 and 1.0 (got {v})"
            )));
        }
    }
    Ok(())
}

/// Normalizes `speculative_retry` the way Scylla shows it: `NONE`, `ALWAYS`,
/// `<p>PERCENTILE` with one decimal, `<n>ms` with two.
fn speculative_retry(text: &str) -> Result<String, CqlError> {
    let upper = text.trim().to_ascii_uppercase();
    let invalid = || CqlError::config(format!("Invalid value {text} for speculative_retry"));
    if upper == "NONE" || upper == "ALWAYS" {
        return Ok(upper);
    }
    let number = |s: &str| s.parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0);
    if let Some(p) = upper.strip_suffix("PERCENTILE") {
        let v = number(p).filter(|v| *v <= 100.0).ok_or_else(invalid)?;
        return Ok(format!("{v:.1}PERCENTILE"));
    }
    if let Some(ms) = upper.strip_suffix("MS") {
        let v = number(ms).ok_or_else(invalid)?;
        return Ok(format!("{v:.2}ms"));
    }
    Err(invalid())
}

/// The `caching` map: `keys` (`ALL`/`NONE`), `rows_per_partition` (`ALL`/`NONE`/a count)
/// and `enabled`, over the defaults.
fn caching(entries: &[(String, String)]) -> Result<BTreeMap<String, String>, CqlError> {
    let mut out = TableOptions::default().caching;
    for (k, v) in entries {
        let upper = v.to_ascii_uppercase();
        let ok = match k.as_str() {
            "keys" => upper == "ALL" || upper == "NONE",
            "rows_per_partition" => upper == "ALL" || upper == "NONE" || v.parse::<u32>().is_ok(),
            "enabled" => upper == "TRUE" || upper == "FALSE",
            _ => {
                return Err(CqlError::config(format!(
                    "Invalid caching sub-option '{k}': only 'keys', 'rows_per_partition' and \
                     'enabled' are allowed"
                )));
            }
        };
        if !ok {
            return Err(CqlError::config(format!(
                "Invalid value '{v}' for caching sub-option '{k}'"
            )));
        }
        if k == "enabled" {
            // Scylla reads `enabled` as `value == "true"` and keeps it only when caching is
            // off (`caching_options::from_map` / `to_map`).
            if v == "true" {
                out.remove(k);
            } else {
                out.insert(k.clone(), "false".to_string());
            }
            continue;
        }
        let value = if upper == "ALL" || upper == "NONE" {
            upper
        } else {
            v.clone()
        };
        out.insert(k.clone(), value);
    }
    Ok(out)
}

/// The `compaction` map: `class` required (stored by its short name), options kept.
fn compaction(entries: &[(String, String)]) -> Result<BTreeMap<String, String>, CqlError> {
    let Some(class) = entries.iter().find(|(k, _)| k == "class").map(|(_, v)| v) else {
        return Err(CqlError::config(
            "Missing sub-option 'class' for the 'compaction' option.",
        ));
    };
    let short = class.strip_prefix(COMPACTION_PREFIX).unwrap_or(class);
    match short {
        "SizeTieredCompactionStrategy"
        | "LeveledCompactionStrategy"
        | "TimeWindowCompactionStrategy"
        | "IncrementalCompactionStrategy"
        | "NullCompactionStrategy" => {}
        "InMemoryCompactionStrategy" => {
            return Err(CqlError::config(
                "InMemoryCompactionStrategy has been deprecated.",
            ));
        }
        _ => {
            return Err(CqlError::config(format!(
                "Unable to find compaction strategy class '{class}'"
            )));
        }
    }
    let mut out = BTreeMap::new();
    for (k, v) in entries {
        if k == "compaction_window_unit" && !matches!(v.as_str(), "MINUTES" | "HOURS" | "DAYS") {
            return Err(CqlError::syntax(format!(
                "Invalid window unit {v} for compaction_window_unit"
            )));
        }
        out.insert(k.clone(), v.clone());
    }
    out.insert("class".into(), short.to_string());
    Ok(out)
}

/// `std::stoi` / `std::stol` of an option value: leading whitespace, a sign, then digits up
/// to the first other character; `None` when there are no digits or the value overflows.
fn stoi(text: &str) -> Option<i64> {
    let t = text.trim_start_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r']);
    let (neg, body) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let n = body.bytes().take_while(u8::is_ascii_digit).count();
    if n == 0 {
        return None;
    }
    let v: i64 = body[..n].parse().ok()?;
    let v = if neg { -v } else { v };
    i32::try_from(v).ok().map(i64::from)
}

/// `std::stod` of an option value: the longest leading decimal number.
fn stod(text: &str) -> Option<f64> {
    let t = text.trim_start_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r']);
    (1..=t.len())
        .rev()
        .filter(|&i| t.is_char_boundary(i))
        .find_map(|i| t[..i].parse::<f64>().ok())
}

/// The compression options ScyllaDB 2025.4 gives a user table (incl. a CDC log) created
/// without any: `sstable_compression_user_table_options`, `LZ4WithDictsCompressor`
/// (db/config.cc, schema/compression_initializer.hh), stored by its short name.
pub(super) fn user_table_compression() -> BTreeMap<String, String> {
    BTreeMap::from([(
        "sstable_compression".to_string(),
        "LZ4WithDictsCompressor".to_string(),
    )])
}

/// The `compression` map, as ScyllaDB reads it (`compression_parameters`,
/// sstables/compressor.cc) and stores it (`get_options`): the compressor fully qualified
/// (`org.apache.cassandra.io.compress.LZ4Compressor`) except the dictionary ones
/// (`LZ4WithDictsCompressor`, `ZstdWithDictsCompressor`), `chunk_length_kb` as
/// `chunk_length_in_kb`, `crc_check_chance` as C's `%f`; an empty map or compressor
/// disables compression.
fn compression(entries: &[(String, String)]) -> Result<BTreeMap<String, String>, CqlError> {
    if entries.is_empty() {
        return Ok(BTreeMap::new());
    }
    let c = Compression::read(entries)?;
    c.validate()?;
    Ok(c.stored())
}

/// The sub-options of a `compression` map (`compression_parameters`).
struct Compression<'a> {
    /// The compressor's short name (`LZ4Compressor`); `None` disables compression.
    algorithm: Option<&'a str>,
    /// `chunk_length_in_kb` (or `chunk_length_kb`).
    chunk_length: Option<i64>,
    /// `crc_check_chance`.
    crc: Option<f64>,
    /// `compression_level` (ZSTD compressors only).
    level: Option<i64>,
}

impl<'a> Compression<'a> {
    /// Reads the sub-options (`cf_prop_defs::validate`); the last of a repeated key wins,
    /// and a key the compressor does not take is refused.
    fn read(entries: &'a [(String, String)]) -> Result<Compression<'a>, CqlError> {
        let get = |k: &str| {
            entries
                .iter()
                .rev()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v)
        };
        let Some(class) = get("sstable_compression") else {
            return Err(CqlError::config(
                "Missing sub-option 'sstable_compression' for the 'compression' option.",
            ));
        };
        let short = class.strip_prefix(COMPRESSION_PREFIX).unwrap_or(class);
        let algorithm = match short {
            "" => None,
            "LZ4Compressor"
            | "LZ4WithDictsCompressor"
            | "SnappyCompressor"
            | "DeflateCompressor"
            | "ZstdCompressor"
            | "ZstdWithDictsCompressor" => Some(short),
            // `name_to_algorithm` throws a std::runtime_error: a server error.
            _ => {
                return Err(CqlError::server(format!(
                    "Unknown sstable_compression: {class}"
                )));
            }
        };
        let zstd = matches!(
            algorithm,
            Some("ZstdCompressor" | "ZstdWithDictsCompressor")
        );
        let chunk = get("chunk_length_in_kb").or(get("chunk_length_kb"));
        let chunk_length = match chunk {
            Some(v) => Some(stoi(v).ok_or_else(|| {
                CqlError::syntax(format!("Invalid integer value {v} for chunk_length_in_kb"))
            })?),
            None => None,
        };
        let crc = match get("crc_check_chance") {
            Some(v) => Some(stod(v).ok_or_else(|| {
                CqlError::syntax(format!("Invalid double value {v} for crc_check_chance"))
            })?),
            None => None,
        };
        let level = match get("compression_level").filter(|_| zstd) {
            Some(v) => Some(stoi(v).ok_or_else(|| {
                CqlError::config(format!("Invalid integer value {v} for compression_level"))
            })?),
            None => None,
        };
        for (k, _) in entries {
            let used = matches!(
                k.as_str(),
                "sstable_compression"
                    | "chunk_length_in_kb"
                    | "chunk_length_kb"
                    | "crc_check_chance"
            ) || (zstd && k == "compression_level");
            if !used {
                return Err(CqlError::config(format!(
                    "Unknown compression option '{k}'."
                )));
            }
        }
        Ok(Compression {
            algorithm,
            chunk_length,
            crc,
            level,
        })
    }

    /// `compression_parameters::validate`: the chunk length a power of 2 up to 128 KiB, the
    /// CRC check chance a probability, the ZSTD level in ZSTD's range.
    fn validate(&self) -> Result<(), CqlError> {
        if let Some(kb) = self.chunk_length {
            let bytes = (kb as i32).wrapping_mul(1024);
            if bytes <= 0 {
                return Err(CqlError::config(
                    "Invalid negative or null for chunk_length_in_kb/chunk_length_kb",
                ));
            }
            if bytes & (bytes - 1) != 0 {
                return Err(CqlError::config(
                    "chunk_length_in_kb/chunk_length_kb must be a power of 2.",
                ));
            }
            if bytes > 128 * 1024 {
                return Err(CqlError::config(
                    "chunk_length_in_kb/chunk_length_kb must be 128 or less.",
                ));
            }
        }
        if self.crc.is_some_and(|c| !(0.0..=1.0).contains(&c)) {
            return Err(CqlError::config(
                "crc_check_chance must be between 0.0 and 1.0.",
            ));
        }
        // ZSTD_minCLevel() and ZSTD_maxCLevel() (the arguments of ScyllaDB's message are in
        // this order).
        const ZSTD_MIN: i64 = -(1 << 17);
        const ZSTD_MAX: i64 = 22;
        if let Some(l) = self.level
            && !(ZSTD_MIN..=ZSTD_MAX).contains(&l)
        {
            return Err(CqlError::config(format!(
                "{ZSTD_MIN} must be between {ZSTD_MAX} and compression_level, got {l}"
            )));
        }
        Ok(())
    }

    /// The map as ScyllaDB stores it (`get_options`).
    fn stored(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        if let Some(a) = self.algorithm {
            let stored = if a.ends_with("WithDictsCompressor") {
                a.to_string()
            } else {
                format!("{COMPRESSION_PREFIX}{a}")
            };
            out.insert("sstable_compression".to_string(), stored);
        }
        if let Some(l) = self.level {
            out.insert("compression_level".to_string(), l.to_string());
        }
        if let Some(kb) = self.chunk_length {
            out.insert("chunk_length_in_kb".to_string(), kb.to_string());
        }
        if let Some(c) = self.crc {
            out.insert("crc_check_chance".to_string(), format!("{c:.6}"));
        }
        out
    }
}

/// The default delay of a `tombstone_gc` (`tombstone_gc_options::_propagation_delay_in_seconds`).
const PROPAGATION_DELAY: &str = "3600";

/// The `tombstone_gc` map as ScyllaDB reads it (`tombstone_gc_options`,
/// tombstone_gc_options.cc) and stores it (`to_map`: always `mode` and
/// `propagation_delay_in_seconds`).
fn tombstone_gc(entries: &[(String, String)]) -> Result<BTreeMap<String, String>, CqlError> {
    let mut out = BTreeMap::from([
        ("mode".to_string(), "timeout".to_string()),
        (
            "propagation_delay_in_seconds".to_string(),
            PROPAGATION_DELAY.to_string(),
        ),
    ]);
    for (k, v) in entries {
        match k.as_str() {
            "mode" => {
                if !matches!(v.as_str(), "timeout" | "repair" | "disabled" | "immediate") {
                    return Err(CqlError::config(format!(
                        "Invalid value for tombstone_gc option mode: {v}"
                    )));
                }
                out.insert(k.clone(), v.clone());
            }
            "propagation_delay_in_seconds" => {
                // `boost::lexical_cast<int64_t>`: the whole text, an optional sign.
                let n = v.parse::<i64>().ok().filter(|n| *n >= 0).ok_or_else(|| {
                    CqlError::config(format!(
                        "Invalid value for tombstone_gc option propagation_delay_in_seconds: {v}"
                    ))
                })?;
                out.insert(k.clone(), n.to_string());
            }
            _ => {
                return Err(CqlError::config(format!(
                    "Invalid tombstone_gc option: {k}"
                )));
            }
        }
    }
    Ok(out)
}

/// Whether tombstones of the keyspace's tables need a repair before they are purged
/// (`needs_repair_before_gc`, tombstone_gc.cc): not with LocalStrategy nor with RF 1.
fn needs_repair_before_gc(ks: &KeyspaceDef) -> bool {
    !ks.replication.class().ends_with("LocalStrategy")
        && ks.replication.factor(crate::cluster::DATACENTER) != 1
}

/// The `tombstone_gc` ScyllaDB gives a table created (or altered) without one
/// (`cf_prop_defs::apply_to_builder`, `get_default_tombstone_gc_mode`): `repair` in a
/// tablets keyspace that needs repairs, else `timeout`. CDC logs (`supports_repair` false)
/// always get `timeout`.
pub(super) fn default_tombstone_gc(
    ks: &KeyspaceDef,
    supports_repair: bool,
) -> BTreeMap<String, String> {
    let repair = supports_repair && ks.uses_tablets() && needs_repair_before_gc(ks);
    BTreeMap::from([
        (
            "mode".to_string(),
            if repair { "repair" } else { "timeout" }.to_string(),
        ),
        (
            "propagation_delay_in_seconds".to_string(),
            PROPAGATION_DELAY.to_string(),
        ),
    ])
}

/// Refuses `tombstone_gc = {'mode': 'repair'}` where repairs are never needed
/// (`validate_tombstone_gc_options`, tombstone_gc.cc).
pub(super) fn check_tombstone_gc(options: &TableOptions, ks: &KeyspaceDef) -> Result<(), CqlError> {
    let repair = options
        .tombstone_gc
        .as_ref()
        .and_then(|m| m.get("mode"))
        .is_some_and(|m| m == "repair");
    if repair && !needs_repair_before_gc(ks) {
        return Err(CqlError::config(
            "tombstone_gc option with mode = repair not supported for table with RF one or local replication strategy",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cql::Literal;
    use crate::frame::ErrorKind;

    fn constant(name: &str, l: Literal) -> Property {
        Property {
            name: name.into(),
            value: OptionValue::Constant(l),
        }
    }

    fn map_prop(name: &str, pairs: &[(&str, &str)]) -> Property {
        Property {
            name: name.into(),
            value: OptionValue::Map(
                pairs
                    .iter()
                    .map(|(k, v)| {
                        (
                            Literal::String(k.to_string()),
                            Literal::String(v.to_string()),
                        )
                    })
                    .collect(),
            ),
        }
    }

    fn apply_one(p: Property) -> Result<TableOptions, CqlError> {
        let mut o = TableOptions::default();
        apply(&mut o, &[p], 86400)?;
        Ok(o)
    }

    #[test]
    fn every_kept_property_is_stored() {
        let mut o = TableOptions::default();
        apply(
            &mut o,
            &[
                constant("comment", Literal::String("hello".into())),
                constant("default_time_to_live", Literal::Integer("100".into())),
                constant("gc_grace_seconds", Literal::Integer("10".into())),
                constant("bloom_filter_fp_chance", Literal::Float("0.1".into())),
                constant("crc_check_chance", Literal::Float("0.5".into())),
                constant("speculative_retry", Literal::String("99percentile".into())),
                constant("min_index_interval", Literal::Integer("64".into())),
                constant("max_index_interval", Literal::Integer("1024".into())),
                constant(
                    "memtable_flush_period_in_ms",
                    Literal::Integer("60000".into()),
                ),
                constant("paxos_grace_seconds", Literal::Integer("7".into())),
                map_prop("caching", &[("keys", "none"), ("rows_per_partition", "10")]),
                map_prop(
                    "compaction",
                    &[
                        (
                            "class",
                            "org.apache.cassandra.db.compaction.LeveledCompactionStrategy",
                        ),
                        ("sstable_size_in_mb", "160"),
                    ],
                ),
                map_prop("compression", &[("sstable_compression", "ZstdCompressor")]),
                map_prop("tombstone_gc", &[("mode", "repair")]),
                map_prop("cdc", &[("enabled", "true")]),
            ],
            3600,
        )
        .expect("valid");
        assert_eq!(o.comment, "hello");
        assert_eq!(o.default_time_to_live, 100);
        assert_eq!(o.gc_grace_seconds, 10);
        assert_eq!(o.bloom_filter_fp_chance, 0.1);
        assert_eq!(o.crc_check_chance, 0.5);
        assert_eq!(o.speculative_retry, "99.0PERCENTILE");
        assert_eq!((o.min_index_interval, o.max_index_interval), (64, 1024));
        assert_eq!(o.memtable_flush_period_in_ms, 60000);
        assert_eq!(o.paxos_grace_seconds, Some(7));
        assert_eq!(o.caching.get("keys").map(String::as_str), Some("NONE"));
        assert_eq!(
            o.caching.get("rows_per_partition").map(String::as_str),
            Some("10")
        );
        assert_eq!(
            o.compaction.get("class").map(String::as_str),
            Some("LeveledCompactionStrategy")
        );
        assert_eq!(
            o.compaction.get("sstable_size_in_mb").map(String::as_str),
            Some("160")
        );
        assert_eq!(
            o.compression.get("sstable_compression").map(String::as_str),
            Some("org.apache.cassandra.io.compress.ZstdCompressor")
        );
        assert_eq!(
            o.tombstone_gc
                .as_ref()
                .and_then(|m| m.get("mode"))
                .map(String::as_str),
            Some("repair")
        );
        let cdc = o.cdc.expect("cdc");
        assert!(cdc.enabled);
        // The cluster's default CDC TTL applies when the map gives none.
        assert_eq!(cdc.ttl, 3600);
    }

    #[test]
    fn unknown_property_is_a_syntax_error() {
        let e = apply_one(constant("foo", Literal::Integer("1".into()))).expect_err("unknown");
        assert_eq!(e.kind, ErrorKind::SyntaxError);
        assert_eq!(e.message, "Unknown property 'foo'");
        // Obsolete ones are accepted.
        apply_one(constant("index_interval", Literal::Integer("1".into()))).expect("obsolete");
    }

    #[test]
    fn bad_values_fail_like_scylla() {
        let e = apply_one(constant("gc_grace_seconds", Literal::String("x".into())))
            .expect_err("not an int");
        assert_eq!(e.kind, ErrorKind::SyntaxError);
        assert_eq!(e.message, "Invalid integer value x for 'gc_grace_seconds'");
        let e = apply_one(map_prop("comment", &[("a", "b")])).expect_err("map");
        assert_eq!(
            e.message,
            "Invalid value for property 'comment'. It should be a string"
        );
        let e = apply_one(constant("caching", Literal::String("x".into()))).expect_err("const");
        assert_eq!(
            e.message,
            "Invalid value for property 'caching'. It should be a map."
        );
        let e = apply_one(constant(
            "default_time_to_live",
            Literal::Integer("-1".into()),
        ))
        .expect_err("negative");
        assert_eq!(e.kind, ErrorKind::ConfigError);
        let e = apply_one(map_prop("compaction", &[("min_threshold", "4")])).expect_err("class");
        assert_eq!(
            e.message,
            "Missing sub-option 'class' for the 'compaction' option."
        );
        let e = apply_one(map_prop("compaction", &[("class", "Foo")])).expect_err("unknown");
        assert_eq!(e.message, "Unable to find compaction strategy class 'Foo'");
        let e = apply_one(map_prop("cdc", &[("enabled", "maybe")])).expect_err("cdc");
        assert_eq!(e.kind, ErrorKind::ConfigError);
        assert_eq!(e.message, "Invalid value for CDC option \"enabled\": maybe");
        let e = apply_one(map_prop("cdc", &[("ttl", "-5")])).expect_err("ttl");
        assert_eq!(e.message, "Invalid CDC option: ttl must be >= 0");
        let e = apply_one(constant("max_index_interval", Literal::Integer("2".into())))
            .expect_err("max < min");
        assert_eq!(
            e.message,
            "max_index_interval must be greater than min_index_interval"
        );
        let e = apply_one(constant("id", Literal::String("nope".into()))).expect_err("id");
        assert_eq!(e.message, "Invalid table id");
        let e = apply_one(constant(
            "speculative_retry",
            Literal::String("soon".into()),
        ))
        .expect_err("retry");
        assert_eq!(e.kind, ErrorKind::ConfigError);
    }

    #[test]
    fn caching_keeps_enabled_only_when_off_as_scylla_does() {
        let o = apply_one(map_prop("caching", &[("enabled", "true")])).expect("on");
        assert_eq!(o.caching, TableOptions::default().caching);
        let o = apply_one(map_prop("caching", &[("enabled", "false")])).expect("off");
        assert_eq!(o.caching.get("enabled").map(String::as_str), Some("false"));
    }

    #[test]
    fn compression_can_be_disabled_and_retry_normalized() {
        let o = apply_one(map_prop("compression", &[])).expect("empty");
        assert!(o.compression.is_empty());
        let o = apply_one(map_prop("compression", &[("sstable_compression", "")])).expect("off");
        assert!(o.compression.is_empty());
        assert_eq!(speculative_retry("50ms").ok().as_deref(), Some("50.00ms"));
        assert_eq!(speculative_retry("always").ok().as_deref(), Some("ALWAYS"));
    }
}
