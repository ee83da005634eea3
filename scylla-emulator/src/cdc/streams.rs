//! CDC stream ids and the stream sets of generations (vnode keyspaces) and tablet tables.
//!
//! A stream id is 16 bytes (semantics §4.1): the token as a big-endian `i64`, then a
//! big-endian `u64` holding `version = 1` in bits 0..3, the vnode index in bits 4..25 and 38
//! random bits above. The log table's `CDCPartitioner` places a stream by its token, so a
//! stream whose token lies in a vnode and belongs to shard *j* lives on that vnode's owner,
//! on shard *j*: that is how Scylla co-locates a base partition with its log rows.
//!
//! - [`VnodeGeneration`]: one [`TokenRangeDescription`] per vnode, with one stream per shard
//!   of the owning node (the rows of `system_distributed.cdc_streams_descriptions_v2`).
//! - [`tablet_stream_set`]: one stream per tablet of a table (tablet keyspaces).

use rand::Rng;

use crate::cluster::partitioner::{first_token_of_shard, shard_of};
use crate::cluster::ring::Ring;
use crate::cluster::tablets::tablet_last_token;

/// A 16-byte CDC stream id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct StreamId(pub(crate) [u8; 16]);

/// Mask of the 22-bit vnode index in the low qword.
const INDEX_MASK: u64 = 0x3F_FFFF;

impl StreamId {
    /// A new stream id for `token` with vnode index `index` (0 for tablets) and fresh random bits.
    pub(crate) fn new(token: i64, index: u32, rng: &mut impl Rng) -> StreamId {
        let random: u64 = rng.r#gen::<u64>() >> 26; // 38 random bits
        let low = (random << 26) | ((u64::from(index) & INDEX_MASK) << 4) | 1;
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&token.to_be_bytes());
        bytes[8..].copy_from_slice(&low.to_be_bytes());
        StreamId(bytes)
    }

    /// The token the CDC partitioner gives this stream (its first 8 bytes).
    pub(crate) fn token(&self) -> i64 {
        let (head, _) = self.0.split_at(8);
        i64::from_be_bytes(head.try_into().expect("16-byte id has an 8-byte head"))
    }

    #[cfg(test)]
    fn low(&self) -> u64 {
        let (_, tail) = self.0.split_at(8);
        u64::from_be_bytes(tail.try_into().expect("16-byte id has an 8-byte tail"))
    }

    /// The vnode index encoded in the id.
    #[cfg(test)]
    pub(crate) fn vnode_index(&self) -> u32 {
        ((self.low() >> 4) & INDEX_MASK) as u32
    }

    /// The version nibble (always 1 for ids we create).
    #[cfg(test)]
    pub(crate) fn version(&self) -> u8 {
        (self.low() & 0xF) as u8
    }
}

/// The streams of one vnode in a generation (one row of `cdc_streams_descriptions_v2`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TokenRangeDescription {
    /// The vnode's end token (`range_end`).
    pub(crate) range_end: i64,
    /// One stream per shard of the owning node, sorted by their bytes as a `set<blob>` is.
    pub(crate) streams: Vec<StreamId>,
    /// `sharding_ignore_msb` of the owning node.
    pub(crate) ignore_msb: u32,
}

/// A generation's stream layout for vnode keyspaces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct VnodeGeneration {
    /// Generation timestamp, milliseconds since the Unix epoch.
    pub(crate) timestamp_ms: i64,
    /// One description per vnode, ordered by `range_end`.
    pub(crate) entries: Vec<TokenRangeDescription>,
}

impl VnodeGeneration {
    /// Builds the stream layout of a new generation for `ring`, where node `n` has
    /// `shards[n]` shards and every node uses `ignore_msb`.
    pub(crate) fn build(
        timestamp_ms: i64,
        ring: &Ring,
        shards: &[u32],
        ignore_msb: u32,
        rng: &mut impl Rng,
    ) -> VnodeGeneration {
        let mut entries = Vec::with_capacity(ring.len());
        for vnode in ring.vnodes() {
            let shard_count = shards.get(vnode.owner).copied().unwrap_or(1).max(1);
            let mut streams: Vec<StreamId> = (0..shard_count)
                .map(|shard| {
                    let token = first_token_in_vnode(
                        vnode.start_exclusive,
                        vnode.end,
                        shard,
                        shard_count,
                        ignore_msb,
                    )
                    .unwrap_or(vnode.end);
                    StreamId::new(token, vnode.index as u32, rng)
                })
                .collect();
            // Nodes read a generation back from a `set<blob>` column, i.e. sorted by bytes,
            // and index that sorted vector by shard number (semantics §4.3).
            streams.sort_unstable();
            entries.push(TokenRangeDescription {
                range_end: vnode.end,
                streams,
                ignore_msb,
            });
        }
        VnodeGeneration {
            timestamp_ms,
            entries,
        }
    }

    /// The stream a write to a base partition with `token` goes to: the first description
    /// whose `range_end >= token` (wrapping to the first), then its stream number
    /// `shard_of(token)` under that vnode's shard count.
    pub(crate) fn stream_for_token(&self, token: i64) -> Option<StreamId> {
        let i = self.entries.partition_point(|e| e.range_end < token);
        let entry = self.entries.get(i).or_else(|| self.entries.first())?;
        let shard = shard_of(token, entry.streams.len() as u32, entry.ignore_msb) as usize;
        entry.streams.get(shard).copied()
    }

    /// Every stream of the generation.
    #[cfg(test)]
    pub(crate) fn all_streams(&self) -> impl Iterator<Item = StreamId> + '_ {
        self.entries.iter().flat_map(|e| e.streams.iter().copied())
    }
}

/// The first token in the vnode `(start_exclusive, end]` (which wraps around the ring when
/// `start_exclusive >= end`) owned by `shard`.
fn first_token_in_vnode(
    start_exclusive: i64,
    end: i64,
    shard: u32,
    shards: u32,
    ignore_msb: u32,
) -> Option<i64> {
    if start_exclusive < end {
        first_token_of_shard(start_exclusive, end, shard, shards, ignore_msb)
    } else {
        first_token_of_shard(start_exclusive, i64::MAX, shard, shards, ignore_msb)
            .or_else(|| first_token_of_shard(i64::MIN, end, shard, shards, ignore_msb))
    }
}

/// A new stream set for a tablet table with `tablets` tablets: one stream per tablet, whose
/// token is the tablet's last token, vnode index 0, sorted by token.
pub(crate) fn tablet_stream_set(tablets: u64, rng: &mut impl Rng) -> Vec<StreamId> {
    (0..tablets.max(1))
        .map(|i| StreamId::new(tablet_last_token(i, tablets), 0, rng))
        .collect()
}

/// The stream of a tablet table that a base partition with `token` writes to: the first
/// stream (in token order) whose token is `>= token`.
pub(crate) fn tablet_stream_for_token(streams: &[StreamId], token: i64) -> Option<StreamId> {
    let i = streams.partition_point(|s| s.token() < token);
    streams.get(i).copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::ring::random_tokens;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    #[test]
    fn stream_id_layout_matches_scylla() {
        let mut rng = StdRng::seed_from_u64(1);
        let id = StreamId::new(0x7ffe0c687fcce86e, 90, &mut rng);
        assert_eq!(id.token(), 0x7ffe0c687fcce86e);
        assert_eq!(id.vnode_index(), 90);
        assert_eq!(id.version(), 1);
        // Parsing ids from the semantics document.
        let doc = StreamId(0xced00000000000009663c8dc500005a1u128.to_be_bytes());
        assert_eq!(doc.vnode_index(), 0x5a);
        assert_eq!(doc.version(), 1);
        let tablet = StreamId(0x7fffffffffffffff55ebbda510000001u128.to_be_bytes());
        assert_eq!(tablet.token(), i64::MAX);
        assert_eq!(tablet.vnode_index(), 0);
    }

    #[test]
    fn generation_has_one_stream_per_shard_of_each_vnode() {
        let mut rng = StdRng::seed_from_u64(2);
        let t1 = random_tokens(&mut rng, 16, &[]);
        let t2 = random_tokens(&mut rng, 16, std::slice::from_ref(&t1));
        let t3 = random_tokens(&mut rng, 16, &[t1.clone(), t2.clone()]);
        let ring = Ring::new(&[t1, t2, t3]);
        let shards = [2u32, 3, 1];
        let generation = VnodeGeneration::build(1000, &ring, &shards, 12, &mut rng);
        assert_eq!(generation.entries.len(), 48);
        let vnodes: Vec<_> = ring.vnodes().collect();
        for (entry, vnode) in generation.entries.iter().zip(&vnodes) {
            assert_eq!(entry.range_end, vnode.end);
            let s = shards[vnode.owner];
            assert_eq!(entry.streams.len(), s as usize);
            let mut owned_shards: Vec<u32> = entry
                .streams
                .iter()
                .map(|id| {
                    assert_eq!(id.vnode_index() as usize, vnode.index);
                    // The stream's token lies in the vnode, so the vnode's owner stores it.
                    assert_eq!(ring.vnode_index_of(id.token()), vnode.index);
                    shard_of(id.token(), s, 12)
                })
                .collect();
            owned_shards.sort_unstable();
            owned_shards.dedup();
            // Vnodes wide enough give every shard its own stream token.
            if (vnode.end as i128 - vnode.start_exclusive as i128).rem_euclid(1 << 64) > 1 << 53 {
                assert_eq!(owned_shards.len(), s as usize);
            }
        }
        // Total = sum over vnodes of the owner's shard count.
        assert_eq!(generation.all_streams().count(), 16 * 2 + 16 * 3 + 16);
    }

    #[test]
    fn writes_map_to_the_stream_of_their_vnode() {
        let mut rng = StdRng::seed_from_u64(3);
        let tokens = random_tokens(&mut rng, 8, &[]);
        let ring = Ring::new(&[tokens]);
        let generation = VnodeGeneration::build(0, &ring, &[3], 12, &mut rng);
        for _ in 0..1000 {
            let t: i64 = rng.r#gen();
            let stream = generation
                .stream_for_token(t)
                .expect("non-empty generation");
            let vnode = ring.vnode_index_of(t);
            assert_eq!(stream.vnode_index() as usize, vnode);
            let entry = &generation.entries[vnode];
            assert_eq!(stream, entry.streams[shard_of(t, 3, 12) as usize]);
        }
    }

    #[test]
    fn tablet_streams_end_at_tablet_last_tokens() {
        assert_eq!(tablet_last_token(0, 2), -1);
        assert_eq!(tablet_last_token(1, 2), i64::MAX);
        let four: Vec<u64> = (0..4).map(|i| tablet_last_token(i, 4) as u64).collect();
        assert_eq!(
            four,
            vec![
                0xbfff_ffff_ffff_ffff,
                0xffff_ffff_ffff_ffff,
                0x3fff_ffff_ffff_ffff,
                0x7fff_ffff_ffff_ffff
            ]
        );
        assert_eq!(tablet_last_token(0, 1), i64::MAX);
        let mut rng = StdRng::seed_from_u64(4);
        let set = tablet_stream_set(4, &mut rng);
        assert!(set.windows(2).all(|w| w[0].token() < w[1].token()));
        assert_eq!(tablet_stream_for_token(&set, i64::MIN + 1), Some(set[0]));
        assert_eq!(tablet_stream_for_token(&set, -1), Some(set[1]));
        assert_eq!(tablet_stream_for_token(&set, 0), Some(set[2]));
        assert_eq!(tablet_stream_for_token(&set, i64::MAX), Some(set[3]));
    }
}
