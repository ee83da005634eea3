//! What the cluster says about a table and its log: that they exist and how the keyspace
//! places data ([`schema`]: the table and its log table, vnodes or tablets), the table's CDC
//! options ([`cdc_options`], from its `cdc` schema extension), the generations of its
//! streams ([`generations`], from the system tables of vnode or tablet keyspaces) and the
//! replica that owns each stream ([`replicas`], from the driver's token ring or tablet map,
//! which groups the streams a query reads).

pub(crate) mod cdc_options;
pub(crate) mod generations;
pub(crate) mod replicas;
pub(crate) mod schema;
