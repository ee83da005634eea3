//! What the cluster says about a table and its log: its CDC options ([`cdc_options`], from the
//! table's `cdc` schema extension), the generations of its streams ([`generations`], from the
//! system tables of vnode or tablet keyspaces) and the replica that owns each stream
//! ([`replicas`], from the driver's token ring or tablet map, which groups the streams a
//! query reads).

pub(crate) mod cdc_options;
pub(crate) mod generations;
pub(crate) mod replicas;
