//! Partitioners and the Scylla sharder: from a partition key to a token, from a token to a
//! shard.
//!
//! - [`murmur3_token`]: Cassandra's `Murmur3Partitioner` (the first half of MurmurHash3
//!   x64/128 with seed 0, including Cassandra's sign-extension of the tail bytes).
//! - [`cdc_token`]: Scylla's `CDCPartitioner` for `*_scylla_cdc_log` tables (the first 8 bytes
//!   of a 16-byte stream id).
//! - [`shard_of`]: Scylla's `biased-token-round-robin` sharder.
//! - [`serialize_partition_key`]: how a (possibly composite) partition key becomes the bytes
//!   that are hashed.

/// Computes the Murmur3 token of a serialized partition key, exactly as Cassandra's
/// `Murmur3Partitioner` does (and as every driver reproduces it).
pub(crate) fn murmur3_token(key: &[u8]) -> i64 {
    let h1 = murmur3_x64_128_h1(key);
    // The minimum token is reserved (it sorts before every key); Cassandra maps it to the maximum.
    if h1 == i64::MIN { i64::MAX } else { h1 }
}

const C1: u64 = 0x87c3_7b91_1142_53d5;
const C2: u64 = 0x4cf5_ad43_2745_937f;

fn fmix(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^= k >> 33;
    k
}

fn mix_k1(k1: u64) -> u64 {
    k1.wrapping_mul(C1).rotate_left(31).wrapping_mul(C2)
}

fn mix_k2(k2: u64) -> u64 {
    k2.wrapping_mul(C2).rotate_left(33).wrapping_mul(C1)
}

/// MurmurHash3 x64/128, seed 0, returning `h1` — with Cassandra's quirk: the bytes of the
/// tail (the last `len % 16` bytes) are sign-extended before being shifted into place, because
/// Java's `(long) byte` is signed. Full 16-byte blocks are read as unsigned little-endian words.
fn murmur3_x64_128_h1(data: &[u8]) -> i64 {
    let mut h1: u64 = 0;
    let mut h2: u64 = 0;
    let mut blocks = data.chunks_exact(16);
    for block in &mut blocks {
        let (lo, hi) = block.split_at(8);
        let k1 = u64::from_le_bytes(lo.try_into().expect("8-byte half of a 16-byte block"));
        let k2 = u64::from_le_bytes(hi.try_into().expect("8-byte half of a 16-byte block"));
        h1 ^= mix_k1(k1);
        h1 = h1
            .rotate_left(27)
            .wrapping_add(h2)
            .wrapping_mul(5)
            .wrapping_add(0x52dc_e729);
        h2 ^= mix_k2(k2);
        h2 = h2
            .rotate_left(31)
            .wrapping_add(h1)
            .wrapping_mul(5)
            .wrapping_add(0x3849_5ab5);
    }
    let tail = blocks.remainder();
    // Sign-extended byte, as Java's `(long) buffer.get(i)`.
    let sx = |b: u8| b as i8 as i64 as u64;
    let mut k1: u64 = 0;
    let mut k2: u64 = 0;
    for (i, &b) in tail.iter().enumerate().skip(8).rev() {
        k2 ^= sx(b) << ((i - 8) * 8);
    }
    if tail.len() > 8 {
        h2 ^= mix_k2(k2);
    }
    for (i, &b) in tail.iter().enumerate().take(8).rev() {
        k1 ^= sx(b) << (i * 8);
    }
    if !tail.is_empty() {
        h1 ^= mix_k1(k1);
    }
    let len = data.len() as u64;
    h1 ^= len;
    h2 ^= len;
    h1 = h1.wrapping_add(h2);
    h2 = h2.wrapping_add(h1);
    h1 = fmix(h1);
    h2 = fmix(h2);
    h1 = h1.wrapping_add(h2);
    h1 as i64
}

/// The token Scylla's `CDCPartitioner` gives a `cdc$stream_id`: its first 8 bytes as a
/// big-endian signed integer. Keys of any other length than 16 bytes get the minimum token
/// (they match no stream; a query for them returns nothing).
pub(crate) fn cdc_token(stream_id: &[u8]) -> i64 {
    match stream_id.first_chunk::<8>() {
        Some(first) if stream_id.len() == 16 => i64::from_be_bytes(*first),
        _ => i64::MIN,
    }
}

/// Scylla's default `ignore_msb` (`murmur3_partitioner_ignore_msb_bits`).
pub(crate) const DEFAULT_IGNORE_MSB: u32 = 12;

/// The shard that owns `token` on a node with `shards` shards, under Scylla's
/// `biased-token-round-robin` sharding with `ignore_msb` most significant bits ignored.
pub(crate) fn shard_of(token: i64, shards: u32, ignore_msb: u32) -> u32 {
    if shards <= 1 {
        return 0;
    }
    let biased = (token as u64).wrapping_add(1 << 63);
    let adjusted = biased.checked_shl(ignore_msb).unwrap_or(0);
    ((u128::from(adjusted) * u128::from(shards)) >> 64) as u32
}

/// The first token in `(after, until]` (inclusive `until`, walking upwards without wrapping)
/// that `shard` owns, or `None` when the shard owns no token there.
///
/// The sharder cuts the biased token space into `2^ignore_msb` equal periods and each period
/// into `shards` equal slices, slice *j* belonging to shard *j*; so the answer is either
/// `after + 1` or the start of shard *j*'s slice in the current or the next period.
pub(crate) fn first_token_of_shard(
    after: i64,
    until: i64,
    shard: u32,
    shards: u32,
    ignore_msb: u32,
) -> Option<i64> {
    if after >= until {
        return None;
    }
    let start = after + 1;
    if shard_of(start, shards, ignore_msb) == shard {
        return Some(start);
    }
    // Work in the biased (unsigned) space: u = token + 2^63.
    let u = (start as u64).wrapping_add(1 << 63);
    let period_bits = 64 - ignore_msb.min(63);
    let period_len: u128 = 1u128 << period_bits;
    let period_base = u128::from(u) & !(period_len - 1);
    // Position (as a 64-bit fraction of the period) where shard `shard`'s slice begins:
    // the smallest x with (x * shards) >> 64 == shard, i.e. ceil(shard * 2^64 / shards).
    let slice_start = (u128::from(shard) << 64).div_ceil(u128::from(shards));
    // Smallest offset within the period whose fraction (offset << ignore_msb) reaches it.
    let scale = 1u128 << ignore_msb.min(63);
    let offset = slice_start.div_ceil(scale);
    let mut candidate = period_base + offset;
    if candidate <= u128::from(u) {
        candidate += period_len;
    }
    if candidate > u128::from(u64::MAX) {
        return None;
    }
    let token = (candidate as u64).wrapping_sub(1 << 63) as i64;
    (token <= until && token > after && shard_of(token, shards, ignore_msb) == shard)
        .then_some(token)
}

/// Serializes partition-key component values (each already in its CQL wire encoding) into the
/// bytes that are hashed and stored: the value itself for a single column, otherwise the
/// "composite" form `([u16 length][bytes][0x00])*`. Returns `None` when a component of a
/// composite key is longer than 65535 bytes (Cassandra's limit for key components).
pub(crate) fn serialize_partition_key<'a>(
    mut components: impl ExactSizeIterator<Item = &'a [u8]>,
) -> Option<Vec<u8>> {
    if components.len() == 1 {
        return components.next().map(<[u8]>::to_vec);
    }
    let mut out = Vec::new();
    for c in components {
        let len = u16::try_from(c.len()).ok()?;
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(c);
        out.push(0);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Splits a composite partition key back into its components (the inverse of
    /// `serialize_partition_key`, to check it); `None` if malformed.
    fn split_composite_key(mut key: &[u8], count: usize) -> Option<Vec<&[u8]>> {
        if count == 1 {
            return Some(vec![key]);
        }
        let mut parts = Vec::with_capacity(count);
        for _ in 0..count {
            let (len, rest) = key.split_first_chunk::<2>()?;
            let len = usize::from(u16::from_be_bytes(*len));
            if rest.len() < len + 1 {
                return None;
            }
            parts.push(&rest[..len]);
            key = &rest[len + 1..];
        }
        key.is_empty().then_some(parts)
    }

    #[test]
    fn murmur3_matches_the_contract_vectors() {
        assert_eq!(murmur3_token(&1i32.to_be_bytes()), -4069959284402364209);
        assert_eq!(murmur3_token(&42i32.to_be_bytes()), -7160136740246525330);
        assert_eq!(murmur3_token(&1i64.to_be_bytes()), 6292367497774912474);
        assert_eq!(murmur3_token(b"hello"), -3758069500696749310);
        let composite = serialize_partition_key([&1i32.to_be_bytes()[..], &b"a"[..]].into_iter())
            .expect("short");
        assert_eq!(murmur3_token(&composite), 6516349416904725244);
    }

    #[test]
    fn cdc_partitioner_reads_the_first_eight_bytes() {
        let id: Vec<u8> = (0u8..16).collect();
        assert_eq!(cdc_token(&id), 283686952306183);
        assert_eq!(cdc_token(&[0u8]), i64::MIN);
        assert_eq!(cdc_token(&[0u8; 17]), i64::MIN);
    }

    #[test]
    fn sharder_matches_the_contract_vectors() {
        assert_eq!(shard_of(-9219783007514621794, 4, 12), 3);
        assert_eq!(shard_of(9222582454147032830, 4, 12), 3);
        assert_eq!(shard_of(-7160136740246525330, 3, 12), 0);
        assert_eq!(shard_of(-3758069500696749310, 3, 12), 1);
    }

    #[test]
    fn first_token_of_shard_is_the_first_owned_token() {
        for shards in [2u32, 3, 7, 14] {
            for &(after, until) in &[
                (-100i64, 100i64),
                (i64::MIN, i64::MIN + (1 << 50)),
                (1 << 40, (1 << 40) + (1 << 53)),
                (i64::MAX - (1 << 52), i64::MAX),
            ] {
                for shard in 0..shards {
                    let found = first_token_of_shard(after, until, shard, shards, 12);
                    if let Some(t) = found {
                        assert!(t > after && t <= until);
                        assert_eq!(shard_of(t, shards, 12), shard);
                        if t > after + 1 {
                            assert_ne!(shard_of(t - 1, shards, 12), shard);
                        }
                    }
                    // A range spanning a whole period always contains every shard.
                    if until - after > (1 << 53) {
                        assert!(
                            found.is_some(),
                            "shard {shard}/{shards} in ({after}, {until}]"
                        );
                    }
                }
            }
        }
        // A tiny range owned by one shard has no token of the others.
        let t = 12345i64;
        let s = shard_of(t, 7, 12);
        assert_eq!(first_token_of_shard(t - 1, t, s, 7, 12), Some(t));
        assert_eq!(first_token_of_shard(t - 1, t, (s + 1) % 7, 7, 12), None);
    }

    #[test]
    fn composite_keys_round_trip() {
        let key = serialize_partition_key([&b"ab"[..], &b""[..], &[1u8, 2, 3][..]].into_iter())
            .expect("short components");
        let parts = split_composite_key(&key, 3).expect("well-formed");
        assert_eq!(parts, vec![&b"ab"[..], &b""[..], &[1u8, 2, 3][..]]);
        assert_eq!(split_composite_key(&key[..key.len() - 1], 3), None);
        assert_eq!(split_composite_key(b"xyz", 1), Some(vec![&b"xyz"[..]]));
        let long = vec![0u8; 70_000];
        assert_eq!(
            serialize_partition_key([&long[..], &b""[..]].into_iter()),
            None
        );
    }

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
            .collect()
    }

    /// Vectors computed by an independent driver (Python scylla-driver), kept in `tests/data`.
    #[test]
    fn murmur3_matches_the_independent_driver_vectors() {
        let data: serde_json::Value =
            serde_json::from_str(include_str!("../../tests/data/murmur3_tokens.json"))
                .expect("valid JSON");
        let cases = data["cases"].as_array().expect("cases");
        assert!(cases.len() >= 100);
        for case in cases {
            let key = hex(case["key_hex"].as_str().expect("key_hex"));
            let expected = case["token"].as_i64().expect("token");
            assert_eq!(murmur3_token(&key), expected, "case {case}");
            if case["kind"] == "composite(int,text)" {
                let v = &case["value"];
                let int = (v[0].as_i64().expect("int") as i32).to_be_bytes();
                let text = v[1].as_str().expect("text").as_bytes();
                let built = serialize_partition_key([&int[..], text].into_iter()).expect("short");
                assert_eq!(built, key);
            }
        }
    }

    #[test]
    fn sharder_matches_the_independent_driver_vectors() {
        let data: serde_json::Value =
            serde_json::from_str(include_str!("../../tests/data/token_shards.json"))
                .expect("valid JSON");
        let cases = data["cases"].as_array().expect("cases");
        assert!(cases.len() >= 700);
        for case in cases {
            let token = case["token"].as_i64().expect("token");
            let shards = case["shards"].as_u64().expect("shards") as u32;
            let msb = case["ignore_msb"].as_u64().expect("ignore_msb") as u32;
            let shard = case["shard"].as_u64().expect("shard") as u32;
            assert_eq!(shard_of(token, shards, msb), shard, "case {case}");
        }
    }
}
