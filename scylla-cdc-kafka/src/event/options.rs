//! The options of the event format: the connector's `cdc.*` options
//! (`ScyllaConnectorConfig`), the converter's `schemas.enable`, the logical name, Debezium's
//! `tombstones.on.delete`, and the two switches of what we add.

use std::fmt;
use std::str::FromStr;

/// What `before` or `after` holds: the connector's `cdc.include.before` /
/// `cdc.include.after` (`ScyllaConnectorConfig.CdcIncludeMode`), advanced format only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ImageMode {
    /// `none` (the default): the field is `null`.
    #[default]
    None,
    /// `full`: the whole row, from the pre-image (`before`) or post-image (`after`); the
    /// table must log them (`'preimage': 'full'` for a whole `before`, `'postimage': true`).
    Full,
    /// `only-updated`: for an update, the primary key and the columns the update changed
    /// (the others `null`); inserts and deletes get the whole image as with `full`.
    OnlyUpdated,
}

impl ImageMode {
    /// The connector's name of the mode: `none`, `full`, `only-updated`.
    pub fn as_str(self) -> &'static str {
        match self {
            ImageMode::None => "none",
            ImageMode::Full => "full",
            ImageMode::OnlyUpdated => "only-updated",
        }
    }
}

impl fmt::Display for ImageMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ImageMode {
    type Err = anyhow::Error;

    /// Parses the connector's names (trimmed, case-insensitive as the connector parses them).
    fn from_str(s: &str) -> anyhow::Result<ImageMode> {
        match s.trim().to_ascii_lowercase().as_str() {
            "none" => Ok(ImageMode::None),
            "full" => Ok(ImageMode::Full),
            "only-updated" => Ok(ImageMode::OnlyUpdated),
            other => anyhow::bail!("unknown image mode `{other}` (none, full or only-updated)"),
        }
    }
}

/// The connector's `cdc.output.format` (`ScyllaConnectorConfig.CdcOutputFormat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputFormat {
    /// `legacy`, the connector's default: every non-key column wrapped in a `Cell` struct
    /// `{"value": …}` (`null` when the change did not touch it), only native types (no
    /// collections, UDTs or tuples), `before` from the pre-image when pre-images are on.
    #[default]
    Legacy,
    /// `advanced`: plain column values, every type, `before`/`after` from the pre- and
    /// post-images as [`ImageMode`] says, key placement as [`KeyPlacement`] says.
    Advanced,
}

impl OutputFormat {
    /// The connector's name: `legacy` or `advanced`.
    pub fn as_str(self) -> &'static str {
        match self {
            OutputFormat::Legacy => "legacy",
            OutputFormat::Advanced => "advanced",
        }
    }
}

impl fmt::Display for OutputFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for OutputFormat {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> anyhow::Result<OutputFormat> {
        match s.trim().to_ascii_lowercase().as_str() {
            "legacy" => Ok(OutputFormat::Legacy),
            "advanced" => Ok(OutputFormat::Advanced),
            other => anyhow::bail!("unknown output format `{other}` (legacy or advanced)"),
        }
    }
}

/// One place the primary key columns can go: a value of the connector's
/// `cdc.include.primary-key.placement` (`ScyllaConnectorConfig.CdcIncludePkLocation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyLocation {
    /// `kafka-key`: the Kafka record key (partitioning, ordering, compaction).
    KafkaKey,
    /// `payload-after`: inside `after`.
    PayloadAfter,
    /// `payload-before`: inside `before`.
    PayloadBefore,
    /// `payload-key`: a top-level object of the value, named
    /// [`EventOptions::payload_key_name`] (`key` by default).
    PayloadKey,
    /// `kafka-headers`: one header per non-null key column, `pk.<column>` or `ck.<column>`.
    KafkaHeaders,
}

impl KeyLocation {
    /// The connector's name of the location.
    pub fn as_str(self) -> &'static str {
        match self {
            KeyLocation::KafkaKey => "kafka-key",
            KeyLocation::PayloadAfter => "payload-after",
            KeyLocation::PayloadBefore => "payload-before",
            KeyLocation::PayloadKey => "payload-key",
            KeyLocation::KafkaHeaders => "kafka-headers",
        }
    }
}

/// Where the primary key columns go: the connector's `cdc.include.primary-key.placement`, a
/// set of [`KeyLocation`]s. The default is the connector's: `kafka-key,payload-after,
/// payload-before`. The legacy format always uses the default (the connector refuses any
/// other placement with it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyPlacement {
    /// `kafka-key`.
    pub kafka_key: bool,
    /// `payload-after`.
    pub payload_after: bool,
    /// `payload-before`.
    pub payload_before: bool,
    /// `payload-key`.
    pub payload_key: bool,
    /// `kafka-headers`.
    pub kafka_headers: bool,
}

impl Default for KeyPlacement {
    fn default() -> Self {
        KeyPlacement {
            kafka_key: true,
            payload_after: true,
            payload_before: true,
            payload_key: false,
            kafka_headers: false,
        }
    }
}

impl KeyPlacement {
    /// No location at all.
    pub fn none() -> KeyPlacement {
        KeyPlacement {
            kafka_key: false,
            payload_after: false,
            payload_before: false,
            payload_key: false,
            kafka_headers: false,
        }
    }

    /// The placement with exactly these locations.
    pub fn of(locations: impl IntoIterator<Item = KeyLocation>) -> KeyPlacement {
        let mut p = KeyPlacement::none();
        for l in locations {
            p.set(l, true);
        }
        p
    }

    /// Whether the placement has a location.
    pub fn contains(&self, location: KeyLocation) -> bool {
        match location {
            KeyLocation::KafkaKey => self.kafka_key,
            KeyLocation::PayloadAfter => self.payload_after,
            KeyLocation::PayloadBefore => self.payload_before,
            KeyLocation::PayloadKey => self.payload_key,
            KeyLocation::KafkaHeaders => self.kafka_headers,
        }
    }

    /// Adds or removes a location.
    pub fn set(&mut self, location: KeyLocation, on: bool) {
        match location {
            KeyLocation::KafkaKey => self.kafka_key = on,
            KeyLocation::PayloadAfter => self.payload_after = on,
            KeyLocation::PayloadBefore => self.payload_before = on,
            KeyLocation::PayloadKey => self.payload_key = on,
            KeyLocation::KafkaHeaders => self.kafka_headers = on,
        }
    }
}

impl fmt::Display for KeyPlacement {
    /// The connector's comma-separated form.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = [
            KeyLocation::KafkaKey,
            KeyLocation::PayloadAfter,
            KeyLocation::PayloadBefore,
            KeyLocation::PayloadKey,
            KeyLocation::KafkaHeaders,
        ]
        .into_iter()
        .filter(|l| self.contains(*l))
        .map(KeyLocation::as_str)
        .collect();
        f.write_str(&names.join(","))
    }
}

impl FromStr for KeyPlacement {
    type Err = anyhow::Error;

    /// Parses the connector's comma-separated list (`kafka-key,payload-after`); the
    /// connector's reserved `payload-diff` is accepted and has no effect, as in the
    /// connector. An unknown location is an error.
    fn from_str(s: &str) -> anyhow::Result<KeyPlacement> {
        let mut p = KeyPlacement::none();
        for name in s.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let location = match name.to_ascii_lowercase().as_str() {
                "kafka-key" => KeyLocation::KafkaKey,
                "payload-after" => KeyLocation::PayloadAfter,
                "payload-before" => KeyLocation::PayloadBefore,
                "payload-key" => KeyLocation::PayloadKey,
                "kafka-headers" => KeyLocation::KafkaHeaders,
                "payload-diff" => continue,
                other => anyhow::bail!(
                    "unknown primary key location `{other}` (kafka-key, payload-after, \
                     payload-before, payload-key, kafka-headers)"
                ),
            };
            p.set(location, true);
        }
        Ok(p)
    }
}

/// The options of the events of a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventOptions {
    /// `cdc.output.format` (default legacy, as the connector's).
    pub format: OutputFormat,
    /// `cdc.include.before`. With the legacy format, anything but `None` stands for the
    /// connector's `experimental.preimages.enabled=true`: `before` is the pre-image.
    pub before: ImageMode,
    /// `cdc.include.after` (advanced format only: legacy has no post-images).
    pub after: ImageMode,
    /// `cdc.include.primary-key.placement` (advanced format only).
    pub key_placement: KeyPlacement,
    /// `cdc.include.primary-key.payload-key-name`: the value's key object with
    /// [`KeyLocation::PayloadKey`] (default `key`).
    pub payload_key_name: String,
    /// The `JsonConverter`'s `schemas.enable` (its default: true): each key and value is
    /// `{"schema": …, "payload": …}`; else the payload alone.
    pub schemas: bool,
    /// The logical name (`topic.prefix`): `source.name`, and the start of the topic and of
    /// the schema names.
    pub connector_name: String,
    /// Debezium's `tombstones.on.delete` (default true): a record with the same key and a
    /// null value after each deletion of a row (or partition).
    pub tombstones: bool,
    /// `source.version`. The connector writes its own version; the default is this
    /// crate's (`source.connector` stays `scylla`).
    pub source_version: String,
    /// Beyond the connector (default true): partition deletions of tables with a clustering
    /// key and range deletions give `d` events (see the module docs); the connector drops
    /// them. Off, they give nothing, as with the connector.
    pub extended_deletes: bool,
    /// Beyond the connector (default true): `scylla.*` headers on the events (TTL, late
    /// changes, expirations, static rows, what a deletion covers; see the module docs).
    pub scylla_headers: bool,
}

impl Default for EventOptions {
    fn default() -> Self {
        EventOptions {
            format: OutputFormat::default(),
            before: ImageMode::None,
            after: ImageMode::None,
            key_placement: KeyPlacement::default(),
            payload_key_name: "key".to_owned(),
            schemas: true,
            connector_name: String::new(),
            tombstones: true,
            source_version: env!("CARGO_PKG_VERSION").to_owned(),
            extended_deletes: true,
            scylla_headers: true,
        }
    }
}

impl EventOptions {
    /// The defaults with this logical name.
    pub fn new(connector_name: impl Into<String>) -> EventOptions {
        EventOptions {
            connector_name: connector_name.into(),
            ..EventOptions::default()
        }
    }

    /// Checks the options as the connector checks its configuration
    /// (`ConfigSerializerUtil`): a logical name, a payload key name, and with the legacy
    /// format no post-images and the default key placement.
    pub fn validate(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            !self.connector_name.is_empty(),
            "the logical name (topic prefix) is empty"
        );
        anyhow::ensure!(
            !self.payload_key_name.is_empty(),
            "the payload key name is empty"
        );
        if self.format == OutputFormat::Legacy {
            anyhow::ensure!(
                self.after == ImageMode::None,
                "the legacy format has no post-images (after must be none)"
            );
            anyhow::ensure!(
                self.key_placement == KeyPlacement::default(),
                "the legacy format places the primary key at kafka-key,payload-after,payload-before only"
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_connector_names() {
        assert_eq!(
            "only-updated".parse::<ImageMode>().unwrap(),
            ImageMode::OnlyUpdated
        );
        assert_eq!(" FULL ".parse::<ImageMode>().unwrap(), ImageMode::Full);
        assert!("some".parse::<ImageMode>().is_err());
        assert_eq!(
            "advanced".parse::<OutputFormat>().unwrap(),
            OutputFormat::Advanced
        );
        let p: KeyPlacement = "kafka-key, payload-key,payload-diff".parse().unwrap();
        assert_eq!(
            p,
            KeyPlacement::of([KeyLocation::KafkaKey, KeyLocation::PayloadKey])
        );
        assert_eq!(p.to_string(), "kafka-key,payload-key");
        assert_eq!(
            KeyPlacement::default().to_string(),
            "kafka-key,payload-after,payload-before"
        );
        assert!("kafka-key,nowhere".parse::<KeyPlacement>().is_err());
    }

    #[test]
    fn validation() {
        assert!(EventOptions::default().validate().is_err());
        let ok = EventOptions::new("cluster");
        ok.validate().unwrap();
        let legacy_post = EventOptions {
            after: ImageMode::Full,
            ..ok.clone()
        };
        assert!(legacy_post.validate().is_err());
        let advanced = EventOptions {
            format: OutputFormat::Advanced,
            ..legacy_post
        };
        advanced.validate().unwrap();
    }
}
