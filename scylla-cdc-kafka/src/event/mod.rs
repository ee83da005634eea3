//! The events published for each change: keys and values in the scylla-cdc-source-connector's
//! format, rendered in Kafka Connect's JSON converter layout.
