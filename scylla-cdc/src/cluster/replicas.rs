//! Read groups: the streams of a generation grouped by the replica (node and shard) that owns
//! them, so that one query reads many streams where there used to be one query per vnode.
//!
//! A stream id is the partition key of the CDC log table, and the log's `CDCPartitioner` gives
//! it the token of its first 8 bytes (ScyllaDB `cdc/cdc_partitioner.cc`); the driver's token
//! ring (or tablet map) and the node's sharder give the replicas of that token. The streams
//! whose first replica is the same node and shard form a read group, cut into chunks of at
//! most `max_partition_key_restrictions_per_query` stream ids (ScyllaDB refuses a SELECT whose
//! partition-key `IN` names more keys than that, 100 by default: `partition_ranges_from_singles`
//! in `cql3/restrictions/statement_restrictions.cc`). Each chunk is read with one query per
//! window, sent to that shard of that node first ([`PreferReplica`]); if the node is not
//! connected, the session's own policy picks another replica.
//!
//! Grouping changes only how many streams a query names: the rows of every stream are still
//! read in order, window after window, and a group starts at the earliest start of its
//! streams while each stream's rows before its own start are skipped.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use scylla::client::session::Session;
use scylla::cluster::{ClusterState, NodeRef};
use scylla::errors::RequestAttemptError;
use scylla::policies::load_balancing::{FallbackPlan, LoadBalancingPolicy, RoutingInfo};
use scylla::routing::{Shard, Token};
use uuid::Uuid;

use crate::base::cdc_types::StreamID;

/// ScyllaDB's default `max_partition_key_restrictions_per_query` (db/config.cc): the most
/// partition keys one SELECT may name.
pub const DEFAULT_MAX_PARTITION_KEY_RESTRICTIONS_PER_QUERY: usize = 100;

/// The replica a stream group is read from first: a node (by host id) and its shard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Replica {
    pub(crate) host_id: Uuid,
    pub(crate) shard: Shard,
}

/// One group of streams read together, and the replica to send its queries to (`None`:
/// where the session's policy chooses).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReadGroup {
    pub(crate) streams: Vec<StreamID>,
    pub(crate) replica: Option<Replica>,
}

/// Regroups the stream groups of a generation by the replica `owner` gives each stream,
/// in chunks of at most `max` streams (at least 1). Streams without a known owner are kept
/// in the groups they came in (cut to `max` too), read where the session's policy chooses.
/// Every stream appears exactly once; within a group, streams are in token order.
pub(crate) fn group_by_replica(
    groups: Vec<Vec<StreamID>>,
    owner: impl Fn(&StreamID) -> Option<Replica>,
    max: usize,
) -> Vec<ReadGroup> {
    let max = max.max(1);
    let mut by_replica: BTreeMap<Replica, Vec<StreamID>> = BTreeMap::new();
    let mut out = Vec::new();
    for group in groups {
        let mut unowned = Vec::new();
        for stream in group {
            match owner(&stream) {
                Some(replica) => by_replica.entry(replica).or_default().push(stream),
                None => unowned.push(stream),
            }
        }
        for chunk in unowned.chunks(max) {
            out.push(ReadGroup {
                streams: chunk.to_vec(),
                replica: None,
            });
        }
    }
    for (replica, mut streams) in by_replica {
        streams.sort_by_key(StreamID::token);
        streams.dedup();
        for chunk in streams.chunks(max) {
            out.push(ReadGroup {
                streams: chunk.to_vec(),
                replica: Some(replica),
            });
        }
    }
    out
}

/// The first replica of `stream` in the CDC log table `keyspace.log_table` by the driver's
/// current view of the cluster (token ring or tablet map, and the node's sharder); `None`
/// when the driver does not know it (no replica, or no metadata yet).
pub(crate) fn first_replica(
    cluster: &ClusterState,
    keyspace: &str,
    log_table: &str,
    stream: &StreamID,
) -> Option<Replica> {
    let token = Token::new(stream.token());
    let (node, shard) = cluster
        .get_token_endpoints(keyspace, log_table, token)
        .into_iter()
        .next()?;
    Some(Replica {
        host_id: node.host_id,
        shard,
    })
}

/// Regroups by the replicas the session knows now.
pub(crate) fn group_with_session(
    session: &Session,
    keyspace: &str,
    log_table: &str,
    groups: Vec<Vec<StreamID>>,
    max: usize,
) -> Vec<ReadGroup> {
    let cluster = session.get_cluster_state();
    group_by_replica(
        groups,
        |s| first_replica(&cluster, keyspace, log_table, s),
        max,
    )
}

/// A load-balancing policy that sends every request to one shard of one node while that
/// node is connected, and otherwise (and for retries) follows the session's own policy.
///
/// The window query restricts the partition key with `IN ?`, so the driver cannot compute
/// a token for it (a prepared statement's partition-key indexes are only those bound by `=`)
/// and would send it to any node; this policy is how a read group's queries reach the shard
/// that owns its streams.
#[derive(Debug)]
pub(crate) struct PreferReplica {
    replica: Replica,
    fallback: Arc<dyn LoadBalancingPolicy>,
}

impl PreferReplica {
    pub(crate) fn new(replica: Replica, fallback: Arc<dyn LoadBalancingPolicy>) -> Self {
        Self { replica, fallback }
    }

    fn preferred<'a>(&self, cluster: &'a ClusterState) -> Option<NodeRef<'a>> {
        cluster
            .get_node_by_host_id(self.replica.host_id)
            .filter(|node| node.is_connected())
    }
}

impl LoadBalancingPolicy for PreferReplica {
    fn pick<'a>(
        &'a self,
        request: &'a RoutingInfo,
        cluster: &'a ClusterState,
    ) -> Option<(NodeRef<'a>, Option<Shard>)> {
        match self.preferred(cluster) {
            Some(node) => Some((node, Some(self.replica.shard))),
            None => self.fallback.pick(request, cluster),
        }
    }

    fn fallback<'a>(
        &'a self,
        request: &'a RoutingInfo,
        cluster: &'a ClusterState,
    ) -> FallbackPlan<'a> {
        let preferred = self.preferred(cluster);
        let host_id = self.replica.host_id;
        let first = preferred.map(|node| (node, Some(self.replica.shard)));
        let rest = self
            .fallback
            .fallback(request, cluster)
            .filter(move |(node, _)| preferred.is_none() || node.host_id != host_id);
        Box::new(first.into_iter().chain(rest))
    }

    fn on_request_success(&self, request: &RoutingInfo, latency: Duration, node: NodeRef<'_>) {
        self.fallback.on_request_success(request, latency, node);
    }

    fn on_request_failure(
        &self,
        request: &RoutingInfo,
        latency: Duration,
        node: NodeRef<'_>,
        error: &RequestAttemptError,
    ) {
        self.fallback
            .on_request_failure(request, latency, node, error);
    }

    fn name(&self) -> String {
        format!(
            "PreferReplica({}/{}, then {})",
            self.replica.host_id,
            self.replica.shard,
            self.fallback.name()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(token: i64, n: u8) -> StreamID {
        let mut id = [0u8; 16];
        id[..8].copy_from_slice(&token.to_be_bytes());
        id[15] = n;
        StreamID::new(id)
    }

    fn replica(node: u128, shard: Shard) -> Replica {
        Replica {
            host_id: Uuid::from_u128(node),
            shard,
        }
    }

    #[test]
    fn streams_of_one_replica_share_groups_of_at_most_max() {
        // 3 "vnodes" of 4 streams; owner by token parity and sign: 2 nodes × 2 shards.
        let groups: Vec<Vec<StreamID>> = (0..3)
            .map(|v| {
                (0..4)
                    .map(|i| stream(i64::from(v * 10 + i), i as u8))
                    .collect()
            })
            .collect();
        let owner = |s: &StreamID| Some(replica(1 + (s.token() % 2) as u128, 0));
        let read = group_by_replica(groups.clone(), owner, 4);
        // 6 streams per node, 4 per query at most: 2 + 2 groups.
        assert_eq!(read.len(), 4);
        let mut seen: Vec<StreamID> = read.iter().flat_map(|g| g.streams.clone()).collect();
        seen.sort();
        let mut all: Vec<StreamID> = groups.into_iter().flatten().collect();
        all.sort();
        assert_eq!(seen, all, "every stream exactly once");
        for g in &read {
            assert!(g.streams.len() <= 4);
            let r = g.replica.expect("owned");
            assert!(g.streams.iter().all(|s| owner(s) == Some(r)));
            assert!(g.streams.is_sorted_by_key(StreamID::token));
        }
    }

    #[test]
    fn unknown_owners_keep_their_groups() {
        let groups = vec![
            vec![stream(1, 1), stream(2, 2)],
            vec![stream(3, 3), stream(4, 4), stream(5, 5)],
        ];
        let read = group_by_replica(groups.clone(), |_| None, 100);
        assert_eq!(
            read,
            groups
                .into_iter()
                .map(|streams| ReadGroup {
                    streams,
                    replica: None
                })
                .collect::<Vec<_>>()
        );
        // Cut to the limit all the same.
        let read = group_by_replica(vec![(0..5).map(|i| stream(i, 0)).collect()], |_| None, 2);
        assert_eq!(
            read.iter().map(|g| g.streams.len()).collect::<Vec<_>>(),
            [2, 2, 1]
        );
    }

    #[test]
    fn the_default_limit_is_scyllas() {
        // 3 nodes × 256 vnodes × 2 shards: 1,536 streams, 256 per shard: 3 queries each.
        let groups: Vec<Vec<StreamID>> = (0..768)
            .map(|v| vec![stream(v * 2, 0), stream(v * 2 + 1, 1)])
            .collect();
        let owner =
            |s: &StreamID| Some(replica((s.token() % 3) as u128, (s.token() / 3 % 2) as u32));
        let read = group_by_replica(
            groups,
            owner,
            DEFAULT_MAX_PARTITION_KEY_RESTRICTIONS_PER_QUERY,
        );
        assert_eq!(read.len(), 6 * 3);
        assert!(read.iter().all(|g| g.streams.len() <= 100));
        assert_eq!(read.iter().map(|g| g.streams.len()).sum::<usize>(), 1536);
    }
}
