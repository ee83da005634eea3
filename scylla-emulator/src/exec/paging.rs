//! The opaque paging state: where a paged SELECT stopped, self-contained so that any node
//! can resume it (partition token and key, last clustering key, rows already returned);
//! and the limits that cut a page before it holds the rows the client asked for.
//!
//! # Short pages
//!
//! As ScyllaDB (2025.x) does, a paged read stops early — a *short read*: the client gets a
//! page with fewer rows than its page size, or none, and more to come — when either limit
//! of [`PageLimits`] is reached:
//!
//! - `query_page_size_in_bytes` (1 MiB by default, `db/config.cc`): the replica's memory
//!   accounter adds the size of each row it writes into the result and stops once the total
//!   is *above* the limit (`result_memory_accounter::update_and_check`,
//!   `mutation_querier::consume` in `mutation/mutation_partition.cc`), so the page ends
//!   after the row that crosses it and holds at least one row. Here the size is the row's
//!   bytes in the response frame.
//! - `query_tombstone_page_limit` (10,000 by default): every tombstone the read meets is
//!   counted — a partition tombstone, a row without live data that still carries a
//!   tombstone (deleted, or expired but written less than `gc_grace_seconds` ago), a range
//!   tombstone change — and the read stops when the count reaches the limit
//!   (`result::builder::bump_and_check_tombstone_limit`, `query/query-result-writer.hh`;
//!   `query_result_builder::consume`), even when the page holds no row. Dead data older
//!   than `gc_grace_seconds` is purged by the read's compaction before it is counted
//!   (`compact_mutation_state::consume`, `mutation/mutation_compactor.hh`): rows that
//!   expired in a CDC log (`gc_grace_seconds = 0`) cost nothing.
//!
//! Unpaged reads ignore both (`bump_and_check_tombstone_limit` lets them run on). A short
//! page, like a page holding as many rows as the client asked for, always says that more
//! pages follow, even when nothing does (the pager only concludes that it is exhausted from
//! a page that is neither short nor full, or once LIMIT is reached,
//! `service/pager/query_pagers.cc`); the next page then comes back empty and final.
//!
//! Here range tombstones are not counted (the paging state resumes after a row or a
//! partition, not at a range tombstone's bound), and a page cut on a partition tombstone of
//! a partition that still has rows ends after the next row or at the partition's end.

use bytes::{BufMut, Bytes, BytesMut};

use crate::frame::CqlError;
use crate::types::CqlType;
use crate::types::value::{self, Value};

/// The limits of one page besides its row count (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PageLimits {
    /// `query_page_size_in_bytes`.
    pub(crate) bytes: u64,
    /// `query_tombstone_page_limit`.
    pub(crate) tombstones: u64,
}

/// What one page has used of its [`PageLimits`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct PageBudget {
    limits: PageLimits,
    /// Unpaged reads are never cut.
    paged: bool,
    bytes: u64,
    tombstones: u64,
}

impl PageBudget {
    /// A fresh budget; `paged` is false for a read answered in one page.
    pub(crate) fn new(limits: PageLimits, paged: bool) -> PageBudget {
        PageBudget {
            limits,
            paged,
            bytes: 0,
            tombstones: 0,
        }
    }

    /// Adds the bytes of a row written into the page; true when the page must end after it.
    pub(crate) fn add_row(&mut self, bytes: usize) -> bool {
        self.bytes = self.bytes.saturating_add(bytes as u64);
        self.paged && self.bytes > self.limits.bytes
    }

    /// Counts a tombstone; true when the page must end here.
    pub(crate) fn add_tombstone(&mut self) -> bool {
        self.tombstones = self.tombstones.saturating_add(1);
        self.tombstones_reached()
    }

    /// Whether the tombstone limit has been reached.
    pub(crate) fn tombstones_reached(&self) -> bool {
        self.paged && self.tombstones >= self.limits.tombstones
    }
}

/// Format version of the encoding.
const VERSION: u8 = 1;

/// Where the previous page ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PagingState {
    /// Token of the last partition returned from.
    pub(crate) token: i64,
    /// Serialized key of that partition.
    pub(crate) key: Bytes,
    /// Clustering key of the last row returned; `None` when the whole partition is done
    /// (a static-only or DISTINCT row).
    pub(crate) clustering: Option<Vec<Value>>,
    /// Rows returned so far by all pages (for LIMIT).
    pub(crate) total: u64,
    /// Rows returned so far from the last partition (for PER PARTITION LIMIT).
    pub(crate) in_partition: u64,
}

impl PagingState {
    /// Encodes the state.
    pub(crate) fn encode(&self) -> Bytes {
        let mut out = BytesMut::with_capacity(32 + self.key.len());
        out.put_u8(VERSION);
        out.put_i64(self.token);
        out.put_u32(self.key.len() as u32);
        out.extend_from_slice(&self.key);
        match &self.clustering {
            None => out.put_u8(0),
            Some(values) => {
                out.put_u8(1);
                out.put_u16(values.len() as u16);
                for v in values {
                    v.encode_with_len(&mut out);
                }
            }
        }
        out.put_u64(self.total);
        out.put_u64(self.in_partition);
        out.freeze()
    }

    /// Decodes a state produced by [`PagingState::encode`] for a table whose clustering
    /// columns have types `ck_types`.
    pub(crate) fn decode(bytes: &[u8], ck_types: &[CqlType]) -> Result<PagingState, CqlError> {
        let bad = || CqlError::protocol("Invalid value for the paging state");
        let mut r = bytes;
        let mut take = |n: usize| -> Result<&[u8], CqlError> {
            if r.len() < n {
                return Err(bad());
            }
            let (a, b) = r.split_at(n);
            r = b;
            Ok(a)
        };
        if take(1)? != [VERSION] {
            return Err(bad());
        }
        let token = i64::from_be_bytes(take(8)?.try_into().map_err(|_| bad())?);
        let klen = u32::from_be_bytes(take(4)?.try_into().map_err(|_| bad())?) as usize;
        let key = Bytes::copy_from_slice(take(klen)?);
        let clustering = match take(1)? {
            [0] => None,
            [1] => {
                let n = u16::from_be_bytes(take(2)?.try_into().map_err(|_| bad())?) as usize;
                if n > ck_types.len() {
                    return Err(bad());
                }
                let mut values = Vec::with_capacity(n);
                for t in &ck_types[..n] {
                    let len = i32::from_be_bytes(take(4)?.try_into().map_err(|_| bad())?);
                    let len = usize::try_from(len).map_err(|_| bad())?;
                    let v = value::decode(t, take(len)?).map_err(|_| bad())?;
                    values.push(v);
                }
                Some(values)
            }
            _ => return Err(bad()),
        };
        let total = u64::from_be_bytes(take(8)?.try_into().map_err(|_| bad())?);
        let in_partition = u64::from_be_bytes(take(8)?.try_into().map_err(|_| bad())?);
        if !r.is_empty() {
            return Err(bad());
        }
        Ok(PagingState {
            token,
            key,
            clustering,
            total,
            in_partition,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_cuts_after_the_crossing_row_and_at_the_tombstone_limit() {
        let limits = PageLimits {
            bytes: 100,
            tombstones: 3,
        };
        let mut b = PageBudget::new(limits, true);
        assert!(!b.add_row(60));
        assert!(!b.add_row(40), "exactly at the limit is not above it");
        assert!(b.add_row(1));
        assert!(!b.add_tombstone());
        assert!(!b.add_tombstone());
        assert!(b.add_tombstone());
        assert!(b.tombstones_reached());
        let mut unpaged = PageBudget::new(limits, false);
        assert!(!unpaged.add_row(1000));
        for _ in 0..10 {
            assert!(!unpaged.add_tombstone());
        }
    }

    #[test]
    fn round_trips_and_rejects_garbage() {
        let s = PagingState {
            token: -5,
            key: Bytes::from_static(b"\0\0\0\x01"),
            clustering: Some(vec![Value::Int(3), Value::text("x")]),
            total: 100,
            in_partition: 7,
        };
        let types = [CqlType::Int, CqlType::Text];
        assert_eq!(PagingState::decode(&s.encode(), &types).unwrap(), s);
        let e = s.encode();
        for cut in 0..e.len() {
            assert!(PagingState::decode(&e[..cut], &types).is_err());
        }
        assert!(PagingState::decode(b"garbage", &types).is_err());
        let none = PagingState {
            clustering: None,
            ..s
        };
        assert_eq!(PagingState::decode(&none.encode(), &[]).unwrap(), none);
    }
}
