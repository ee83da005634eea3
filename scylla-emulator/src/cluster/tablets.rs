//! Tablets: how a table of a tablet keyspace splits the token ring, and where each tablet's
//! replicas live.
//!
//! A table with `count` tablets splits the token space into `count` equal ranges; tablet `i`
//! is `(last(i - 1), last(i)]` ([`tablet_last_token`]; the first starts after the minimum
//! token, the last ends at `i64::MAX`). These are the boundaries of the table's CDC stream
//! sets too (a stream's token is its tablet's last token).
//!
//! `TabletMap::build` gives every tablet a table is created with `rf` replicas, each a
//! (node, shard), the way Scylla's allocator places a new table's tablets
//! (`network_topology_strategy::allocate_tablets_for_new_table` with its load sketch): each
//! tablet goes to the `rf` least-loaded nodes, and on each node to its least-loaded shard, so
//! replicas spread evenly over nodes and shards. Ties are broken by a rotation derived from
//! the table id, so the map is a deterministic function of the table, its initial tablet
//! count and the topology: every node computes the same one, and a topology change moves
//! tablets as Scylla's load balancer eventually would. A split keeps replicas where they
//! are, as Scylla's does: both halves of a tablet have its replicas. Co-located tables (a
//! CDC log and its base table) use the base table's map.
//!
//! A [`TabletLayout`] (table, initial and current tablet count, replication factor) answers
//! for one token: its tablet's replicas, and Scylla's `check_locality` (whether a request
//! reached a replica's node *and* shard, and if not, the tablet's routing information).

use uuid::Uuid;

use super::Topology;

/// The last token of tablet `index` of `count` tablets (a power of two in Scylla): tablets
/// split the token space into equal ranges, the last one ending at `i64::MAX` (for other
/// counts, which Scylla rounds up, the last range takes the remainder).
pub(crate) fn tablet_last_token(index: u64, count: u64) -> i64 {
    let count = count.max(1);
    if index + 1 >= count {
        return i64::MAX;
    }
    let width = (1u128 << 64) / u128::from(count);
    let last = (width * u128::from(index + 1))
        .saturating_sub(1)
        .min(u128::from(u64::MAX));
    (last as u64).wrapping_sub(1 << 63) as i64
}

/// The index of the tablet of `count` tablets that holds `token`.
pub(crate) fn tablet_of(token: i64, count: u64) -> u64 {
    let count = count.max(1);
    // The first tablet whose last token is >= token (the last tablet ends at i64::MAX).
    let (mut lo, mut hi) = (0u64, count - 1);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if tablet_last_token(mid, count) < token {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// One replica of a tablet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TabletReplica {
    /// Position of the node in the topology's node list (node index - 1).
    pub(crate) node: usize,
    /// Shard on that node.
    pub(crate) shard: u32,
}

/// What a driver needs to route a tablet: Scylla's `tablet_routing_info`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TabletRouting {
    /// The token before the tablet's first (`i64::MIN` for the first tablet): the range is
    /// `(first_token, last_token]`.
    pub(crate) first_token: i64,
    /// The tablet's last token.
    pub(crate) last_token: i64,
    /// Replicas in the map's order, as (host id, shard).
    pub(crate) replicas: Vec<(Uuid, u32)>,
}

/// The replicas of every tablet of one table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TabletMap {
    /// Replicas of tablet `i` at position `i`.
    tablets: Vec<Vec<TabletReplica>>,
}

impl TabletMap {
    /// The map of table `table` (for a CDC log, its base table) created with `count` tablets
    /// of `rf` replicas each (at most one per node), over every node of `topology`, up or
    /// down (a stopped node keeps its replicas, as in Scylla). The server needs one tablet at
    /// a time ([`TabletLayout::replicas_of_token`]); the whole map is for the tests.
    #[cfg(test)]
    pub(crate) fn build(table: Uuid, count: u64, rf: usize, topology: &Topology) -> TabletMap {
        Self::build_first(table, count, count, rf, topology)
    }

    /// The replicas of the first `upto` tablets of the map `TabletMap::build` gives (each
    /// tablet's placement depends only on the ones before it).
    fn build_first(table: Uuid, count: u64, upto: u64, rf: usize, topology: &Topology) -> Self {
        let nodes = topology.nodes.len();
        let rf = rf.min(nodes);
        let rotation = (table.as_u128() % nodes.max(1) as u128) as usize;
        let mut node_load = vec![0u64; nodes];
        let mut shard_load: Vec<Vec<u64>> = topology
            .nodes
            .iter()
            .map(|n| vec![0; n.shards.max(1) as usize])
            .collect();
        let mut tablets = Vec::with_capacity(upto.min(count) as usize);
        for _ in 0..upto.min(count) {
            let mut order: Vec<usize> = (0..nodes).collect();
            order.sort_by_key(|&n| (node_load[n], (n + nodes - rotation) % nodes));
            let replicas = order
                .into_iter()
                .take(rf)
                .map(|node| {
                    let loads = &mut shard_load[node];
                    let shards = loads.len();
                    let shard = (0..shards)
                        .min_by_key(|&s| (loads[s], (s + shards - rotation % shards) % shards))
                        .unwrap_or(0);
                    loads[shard] += 1;
                    node_load[node] += 1;
                    TabletReplica {
                        node,
                        shard: shard as u32,
                    }
                })
                .collect();
            tablets.push(replicas);
        }
        TabletMap { tablets }
    }

    /// Replicas of tablet `index`.
    pub(crate) fn replicas(&self, index: u64) -> &[TabletReplica] {
        usize::try_from(index)
            .ok()
            .and_then(|i| self.tablets.get(i))
            .map_or(&[], Vec::as_slice)
    }
}

/// The tablets of one table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TabletLayout {
    /// The table whose tablet map applies: the table itself, or the base table of a CDC log.
    pub(crate) table: Uuid,
    /// Tablets the table was created with (the keyspace's initial count): where replicas
    /// were placed.
    pub(crate) initial: u64,
    /// Tablets now: the initial count, doubled by each split.
    pub(crate) count: u64,
    /// Replicas per tablet (the keyspace's replication factor).
    pub(crate) rf: usize,
}

impl TabletLayout {
    /// The index (among the current tablets) and the replicas of the tablet holding
    /// `token`: those of the initial tablet it was split from.
    pub(crate) fn replicas_of_token(
        &self,
        topology: &Topology,
        token: i64,
    ) -> (u64, Vec<TabletReplica>) {
        let initial = self.initial.max(1);
        let parent = tablet_of(token, initial);
        let map = TabletMap::build_first(self.table, initial, parent + 1, self.rf, topology);
        (
            tablet_of(token, self.count.max(1)),
            map.replicas(parent).to_vec(),
        )
    }

    /// Scylla's `check_locality` for a request about `token` that reached node `node`
    /// (1-based) on shard `shard`: `None` when that node holds a replica on that shard,
    /// otherwise the tablet's routing information (also when the node is a replica on
    /// another shard).
    pub(crate) fn check_locality(
        &self,
        topology: &Topology,
        token: i64,
        node: usize,
        shard: u32,
    ) -> Option<TabletRouting> {
        let count = self.count.max(1);
        let (index, replicas) = self.replicas_of_token(topology, token);
        if replicas
            .iter()
            .any(|r| r.node + 1 == node && r.shard == shard)
        {
            return None;
        }
        let first_token = match index.checked_sub(1) {
            Some(prev) => tablet_last_token(prev, count),
            None => i64::MIN,
        };
        Some(TabletRouting {
            first_token,
            last_token: tablet_last_token(index, count),
            replicas: replicas
                .iter()
                .filter_map(|r| topology.nodes.get(r.node).map(|n| (n.host_id, r.shard)))
                .collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::NodeInfo;
    use std::net::{IpAddr, Ipv4Addr};

    fn topology(shards: &[u32]) -> Topology {
        Topology::new(
            shards
                .iter()
                .enumerate()
                .map(|(i, &s)| NodeInfo {
                    index: i + 1,
                    ip: IpAddr::V4(Ipv4Addr::new(127, 9, 9, i as u8 + 1)),
                    host_id: Uuid::from_u128(0x1000 + i as u128),
                    tokens: vec![i as i64 * 1000],
                    shards: s,
                    up: true,
                })
                .collect(),
        )
    }

    #[test]
    fn last_tokens_split_the_ring_evenly() {
        assert_eq!(tablet_last_token(0, 2), -1);
        assert_eq!(tablet_last_token(1, 2), i64::MAX);
        assert_eq!(tablet_last_token(0, 1), i64::MAX);
        for count in [1u64, 2, 4, 8, 3] {
            for i in 0..count {
                let last = tablet_last_token(i, count);
                assert_eq!(tablet_of(last, count), i);
                if last != i64::MAX {
                    assert_eq!(tablet_of(last + 1, count), i + 1);
                }
            }
            assert_eq!(tablet_of(i64::MIN + 1, count), 0);
            assert_eq!(tablet_of(i64::MAX, count), count - 1);
        }
    }

    #[test]
    fn replicas_spread_evenly_over_nodes_and_shards() {
        let topo = topology(&[2, 2, 2]);
        let table = Uuid::from_u128(7);
        let map = TabletMap::build(table, 8, 2, &topo);
        let mut per_node = [0; 3];
        let mut per_shard = std::collections::BTreeMap::new();
        for i in 0..8 {
            let r = map.replicas(i);
            assert_eq!(r.len(), 2);
            assert_ne!(r[0].node, r[1].node, "one replica per node");
            for x in r {
                per_node[x.node] += 1;
                *per_shard.entry((x.node, x.shard)).or_insert(0) += 1;
                assert!(x.shard < 2);
            }
        }
        // 16 replicas over 3 nodes and 6 shards.
        assert!(per_node.iter().all(|&n| n == 5 || n == 6), "{per_node:?}");
        assert!(
            per_shard.values().all(|&n| n == 2 || n == 3),
            "{per_shard:?}"
        );
        // Deterministic, and the prefix computation agrees with the whole map.
        assert_eq!(map, TabletMap::build(table, 8, 2, &topo));
        for i in 0..8 {
            let prefix = TabletMap::build_first(table, 8, i + 1, 2, &topo);
            assert_eq!(prefix.replicas(i), map.replicas(i));
        }
        // RF is capped by the node count; a one-node cluster holds everything.
        let one = topology(&[3]);
        let map = TabletMap::build(table, 4, 3, &one);
        assert!((0..4).all(|i| map.replicas(i).len() == 1));
        let shards: Vec<u32> = (0..3).map(|i| map.replicas(i)[0].shard).collect();
        let mut sorted = shards.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, [0, 1, 2], "the first tablets take distinct shards");
    }

    #[test]
    fn tables_start_their_rotation_at_different_nodes() {
        let topo = topology(&[1, 1, 1]);
        let firsts: std::collections::BTreeSet<usize> = (0..3u128)
            .map(|t| TabletMap::build(Uuid::from_u128(t), 4, 1, &topo).replicas(0)[0].node)
            .collect();
        assert_eq!(firsts.len(), 3);
    }

    #[test]
    fn locality_is_checked_against_node_and_shard() {
        let topo = topology(&[2, 2, 2]);
        let table = Uuid::from_u128(99);
        let layout = TabletLayout {
            table,
            initial: 4,
            count: 4,
            rf: 1,
        };
        let map = TabletMap::build(table, 4, 1, &topo);
        let token = tablet_last_token(2, 4) - 5;
        let replica = map.replicas(2)[0];
        let check = |node: usize, shard: u32| layout.check_locality(&topo, token, node, shard);
        assert_eq!(check(replica.node + 1, replica.shard), None);
        let routing = check(replica.node + 1, 1 - replica.shard).expect("wrong shard");
        assert_eq!(routing.first_token, tablet_last_token(1, 4));
        assert_eq!(routing.last_token, tablet_last_token(2, 4));
        assert_eq!(
            routing.replicas,
            [(topo.nodes[replica.node].host_id, replica.shard)]
        );
        let other = (replica.node + 1) % 3;
        assert_eq!(check(other + 1, replica.shard), Some(routing));
        // The first tablet starts after the minimum token.
        let first = layout.check_locality(&topo, i64::MIN + 1, 9, 0);
        assert_eq!(first.map(|r| r.first_token), Some(i64::MIN));
    }

    #[test]
    fn split_tablets_keep_their_replicas() {
        let topo = topology(&[3, 3, 3]);
        let table = Uuid::from_u128(5);
        let before = TabletLayout {
            table,
            initial: 4,
            count: 4,
            rf: 2,
        };
        let after = TabletLayout { count: 8, ..before };
        for i in 0..8 {
            let token = tablet_last_token(i, 8);
            let (index, replicas) = after.replicas_of_token(&topo, token);
            assert_eq!(index, i);
            assert_eq!(replicas, before.replicas_of_token(&topo, token).1);
            let r = replicas[0];
            // A replica stays a replica; elsewhere, the half's own range is sent.
            assert_eq!(
                after.check_locality(&topo, token, r.node + 1, r.shard),
                None
            );
            let routing = after
                .check_locality(&topo, token, r.node + 1, (r.shard + 1) % 3)
                .expect("wrong shard");
            assert_eq!(routing.last_token, tablet_last_token(i, 8));
        }
    }
}
