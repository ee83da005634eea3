//! Availability: the replicas of a token under the keyspace's replication (SimpleStrategy
//! and the single-DC NetworkTopologyStrategy walk the ring; LocalStrategy and Everywhere are
//! never checked) and the Unavailable error when fewer are up than the consistency level
//! needs. This reproduces, for instance, the QUORUM trap of `system_distributed` (RF 3) on a
//! one-node cluster.

use crate::cluster::{DATACENTER, Topology};
use crate::frame::{Consistency, CqlError, ErrorKind};
use crate::schema::Schema;

/// Which tokens a request touches.
#[derive(Debug, Clone)]
pub(crate) enum Tokens {
    /// These partitions.
    Some(Vec<i64>),
    /// Every vnode of the ring (scans).
    All,
}

/// Replicas a consistency level needs with replication factor `rf`.
pub(crate) fn required(cl: Consistency, rf: usize, write: bool) -> usize {
    match cl {
        Consistency::Any => usize::from(!write),
        Consistency::One | Consistency::LocalOne => 1,
        Consistency::Two => 2,
        Consistency::Three => 3,
        Consistency::Quorum
        | Consistency::LocalQuorum
        | Consistency::EachQuorum
        | Consistency::Serial
        | Consistency::LocalSerial => rf / 2 + 1,
        Consistency::All => rf,
    }
}

/// Answers Unavailable when a token's live replicas are fewer than `cl` needs.
pub(crate) fn check(
    schema: &Schema,
    keyspace: &str,
    topology: &Topology,
    cl: Consistency,
    tokens: &Tokens,
    write: bool,
) -> Result<(), CqlError> {
    let Some(ks) = schema.keyspace(keyspace) else {
        return Ok(());
    };
    let class = ks.replication.class();
    if class.ends_with("LocalStrategy") || class.ends_with("EverywhereStrategy") {
        return Ok(());
    }
    let rf = ks.replication.factor(DATACENTER);
    let need = required(cl, rf, write);
    if need == 0 {
        return Ok(());
    }
    let alive_for = |token: i64| -> usize {
        topology
            .ring
            .replicas(token, rf)
            .iter()
            .filter(|&&n| topology.nodes.get(n).is_some_and(|n| n.up))
            .count()
    };
    let worst = match tokens {
        Tokens::Some(ts) => ts.iter().map(|&t| alive_for(t)).min(),
        Tokens::All => topology.ring.vnodes().map(|v| alive_for(v.end)).min(),
    };
    let alive = worst.unwrap_or(need);
    if alive < need {
        return Err(CqlError::new(
            ErrorKind::Unavailable {
                consistency: cl,
                required: need as i32,
                alive: alive as i32,
            },
            format!(
                "Cannot achieve consistency level for cl {}. Requires {need}, alive {alive}",
                cl.name()
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_need_their_replica_counts() {
        assert_eq!(required(Consistency::Quorum, 3, false), 2);
        assert_eq!(required(Consistency::All, 3, false), 3);
        assert_eq!(required(Consistency::LocalQuorum, 1, true), 1);
        assert_eq!(required(Consistency::Any, 3, true), 0);
        assert_eq!(required(Consistency::Two, 1, true), 2);
    }
}
