//! The token ring: which node owns which vnode.
//!
//! Every node holds `vnodes_per_node` random tokens (as Scylla's default random token
//! allocation does). The ring is every `(token, node)` pair sorted by token; the node holding
//! the first ring token `>= t` (wrapping around) is the primary owner of `t`, as in Cassandra.
//! Vnode *i* (`i >= 1`) is the range `(t_{i-1}, t_i]`; vnode 0 is the wrap-around range
//! `(t_{n-1}, t_0]`, matching the vnode indexes Scylla encodes in CDC stream ids.

use rand::Rng;

/// One vnode of the ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Vnode {
    /// Index of the vnode in ring order (0 = the wrap-around range).
    pub(crate) index: usize,
    /// Exclusive start token (the previous ring token; for vnode 0 the last ring token).
    pub(crate) start_exclusive: i64,
    /// Inclusive end token (the owner's ring token).
    pub(crate) end: i64,
    /// Position of the owning node in the topology's node list.
    pub(crate) owner: usize,
}

/// A token ring: sorted `(token, owner)` pairs.
#[derive(Debug, Clone, Default)]
pub(crate) struct Ring {
    entries: Vec<(i64, usize)>,
}

impl Ring {
    /// Builds the ring from each node's tokens (`tokens[n]` = tokens of node `n`).
    pub(crate) fn new(tokens: &[Vec<i64>]) -> Ring {
        let mut entries: Vec<(i64, usize)> = tokens
            .iter()
            .enumerate()
            .flat_map(|(node, ts)| ts.iter().map(move |&t| (t, node)))
            .collect();
        entries.sort_unstable();
        entries.dedup_by_key(|e| e.0);
        Ring { entries }
    }

    /// Number of vnodes.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Position of the vnode that contains `token` (first ring token `>= token`, wrapping).
    pub(crate) fn vnode_index_of(&self, token: i64) -> usize {
        let i = self.entries.partition_point(|&(t, _)| t < token);
        if i == self.entries.len() { 0 } else { i }
    }

    /// The node that primarily owns `token`, or `None` for an empty ring.
    pub(crate) fn owner_of(&self, token: i64) -> Option<usize> {
        self.entries.get(self.vnode_index_of(token)).map(|e| e.1)
    }

    /// The vnodes in ring order.
    pub(crate) fn vnodes(&self) -> impl Iterator<Item = Vnode> + '_ {
        let n = self.entries.len();
        self.entries
            .iter()
            .enumerate()
            .map(move |(i, &(end, owner))| {
                let prev = if i == 0 { n - 1 } else { i - 1 };
                Vnode {
                    index: i,
                    start_exclusive: self.entries[prev].0,
                    end,
                    owner,
                }
            })
    }

    /// The replicas of `token` for a SimpleStrategy-like walk: the owner, then the next
    /// distinct nodes clockwise, up to `rf` nodes.
    pub(crate) fn replicas(&self, token: i64, rf: usize) -> Vec<usize> {
        let mut out = Vec::with_capacity(rf);
        if self.entries.is_empty() {
            return out;
        }
        let start = self.vnode_index_of(token);
        for k in 0..self.entries.len() {
            let node = self.entries[(start + k) % self.entries.len()].1;
            if !out.contains(&node) {
                out.push(node);
                if out.len() == rf {
                    break;
                }
            }
        }
        out
    }
}

/// Draws `count` random tokens that collide with none of `taken` (nor with each other).
/// `i64::MIN` is never drawn: it is the partitioner's minimum token, which owns no key.
pub(crate) fn random_tokens(rng: &mut impl Rng, count: usize, taken: &[Vec<i64>]) -> Vec<i64> {
    let mut used: std::collections::HashSet<i64> = taken.iter().flatten().copied().collect();
    let mut out = Vec::with_capacity(count);
    while out.len() < count {
        let t: i64 = rng.r#gen();
        if t != i64::MIN && used.insert(t) {
            out.push(t);
        }
    }
    out.sort_unstable();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn ownership_is_first_token_at_or_after() {
        let ring = Ring::new(&[vec![-100, 50], vec![0, 200]]);
        assert_eq!(ring.len(), 4);
        assert_eq!(ring.owner_of(-100), Some(0));
        assert_eq!(ring.owner_of(-99), Some(1)); // (−100, 0] belongs to node 1
        assert_eq!(ring.owner_of(0), Some(1));
        assert_eq!(ring.owner_of(1), Some(0));
        assert_eq!(ring.owner_of(201), Some(0)); // wraps to the first token
        assert_eq!(ring.owner_of(i64::MIN + 1), Some(0));
        assert_eq!(ring.vnode_index_of(201), 0);
        assert_eq!(ring.vnode_index_of(-100), 0);
        assert_eq!(ring.vnode_index_of(150), 3);
    }

    #[test]
    fn vnodes_cover_the_ring_once() {
        let ring = Ring::new(&[vec![-100, 50], vec![0, 200]]);
        let v: Vec<Vnode> = ring.vnodes().collect();
        assert_eq!(v[0].start_exclusive, 200);
        assert_eq!(v[0].end, -100);
        assert_eq!(v[1].start_exclusive, -100);
        assert_eq!(v[1].end, 0);
        assert_eq!(v[3].owner, 1);
        for w in v.windows(2) {
            assert_eq!(w[0].end, w[1].start_exclusive);
        }
    }

    #[test]
    fn replicas_walk_distinct_nodes() {
        let ring = Ring::new(&[vec![-100, 50], vec![0, 200], vec![100]]);
        assert_eq!(ring.replicas(1, 3), vec![0, 2, 1]);
        assert_eq!(ring.replicas(1, 1), vec![0]);
        assert_eq!(ring.replicas(1, 5).len(), 3);
    }

    #[test]
    fn random_tokens_are_unique() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let a = random_tokens(&mut rng, 256, &[]);
        let b = random_tokens(&mut rng, 256, std::slice::from_ref(&a));
        assert_eq!(a.len(), 256);
        assert!(a.windows(2).all(|w| w[0] < w[1]));
        assert!(b.iter().all(|t| !a.contains(t)));
    }
}
