//! The opaque paging state: where a paged SELECT stopped, self-contained so that any node
//! can resume it (partition token and key, last clustering key, rows already returned).

use bytes::{BufMut, Bytes, BytesMut};

use crate::frame::CqlError;
use crate::types::CqlType;
use crate::types::value::{self, Value};

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
