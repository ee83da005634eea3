//! What a member of a consumer group decides after each read of the lease table: which
//! units it takes, asks for and hands over so that every live member holds an equal share
//! ([`plan`], from the member's [`View`] of the table's rows), and which leases ran out by the
//! member's own clock ([`Observations`]). Pure decisions: the member (`reader::member`)
//! carries them out with the lease table's transactions ([`super::lease`]).

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use tokio::time::Instant;

use super::lease::LeaseRow;

/// What a member has seen of each row: a row's `(owner, version)` and since when (by this
/// member's monotonic clock) it has been the same.
#[derive(Default)]
pub(crate) struct Observations {
    seen: HashMap<String, (Option<String>, i64, Instant)>,
}

impl Observations {
    /// Records a read of the table at `now`; forgets rows that are gone.
    pub(crate) fn update(&mut self, rows: &[LeaseRow], now: Instant) {
        let mut next = HashMap::with_capacity(rows.len());
        for row in rows {
            let since = match self.seen.remove(&row.unit) {
                Some((owner, version, since)) if owner == row.owner && version == row.version => {
                    since
                }
                _ => now,
            };
            next.insert(row.unit.clone(), (row.owner.clone(), row.version, since));
        }
        self.seen = next;
    }

    /// Whether the row has stayed unchanged for at least `lease_duration` as of `now`.
    pub(crate) fn expired(&self, unit: &str, lease_duration: Duration, now: Instant) -> bool {
        self.seen
            .get(unit)
            .is_some_and(|(_, _, since)| now.duration_since(*since) >= lease_duration)
    }
}

/// The state of the group as one member sees it after a read.
pub(crate) struct View<'a> {
    pub(crate) me: &'a str,
    /// Members whose row has changed within a lease duration (including `me`).
    pub(crate) live: Vec<String>,
    /// Not-done units of the current generation.
    pub(crate) units: Vec<&'a LeaseRow>,
}

/// What a member decides to do after a read.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Units to take: `(unit, current owner, version)`.
    pub(crate) take: Vec<(String, Option<String>, i64)>,
    /// Other free units, in the order to try them when a take finds its unit taken by
    /// another member first (members starting together race for the same units).
    pub(crate) spare: Vec<(String, Option<String>, i64)>,
    /// Units to ask their owner for: `(unit, owner)`.
    pub(crate) request: Vec<(String, String)>,
    /// Units of mine that a live member asked for: `(unit, requester)`.
    pub(crate) give: Vec<(String, String)>,
    /// Requests to withdraw (the requester left): `(unit, requester)`.
    pub(crate) withdraw: Vec<(String, String)>,
}

/// Decides which units `view.me` takes, asks for and gives away so that every live member
/// ends up with `floor(units / members)` or one more:
///
/// - a member below the ceiling takes free units (no owner, or an owner that stopped renewing
///   a lease duration ago);
/// - a member below the floor with nothing free asks the most loaded members for units
///   (they hand them over at their next renewal, after stopping to read them);
/// - a member gives a unit to a live member that asked for it while it holds more than the
///   floor.
///
/// `expired(unit)` says whether a unit's lease ran out.
pub(crate) fn plan(view: &View<'_>, expired: impl Fn(&str) -> bool) -> Plan {
    let me = view.me;
    let members = view.live.len().max(1);
    let total = view.units.len();
    let floor = total / members;
    let ceil = total.div_ceil(members);
    let is_live = |m: &str| view.live.iter().any(|l| l == m);
    let mut plan = Plan::default();
    let mut load: BTreeMap<&str, usize> = view.live.iter().map(|m| (m.as_str(), 0)).collect();
    for unit in &view.units {
        if let Some(owner) = unit.owner.as_deref()
            && let Some(n) = load.get_mut(owner)
        {
            *n += 1;
        }
    }
    let mine = load.get(me).copied().unwrap_or(0);
    // Hand over what live members asked for, while above the floor.
    let mut keep = mine;
    for unit in &view.units {
        if unit.owner.as_deref() != Some(me) {
            continue;
        }
        if let Some(requester) = unit.wanted_by.as_deref()
            && requester != me
        {
            if is_live(requester) && keep > floor {
                plan.give.push((unit.unit.clone(), requester.to_owned()));
                keep -= 1;
            } else if !is_live(requester) {
                plan.withdraw
                    .push((unit.unit.clone(), requester.to_owned()));
            }
        }
    }
    // Take free units up to the ceiling; spread members over the free units by starting at a
    // place derived from the member's name, so that members do not all race for the same
    // ones.
    let free: Vec<&&LeaseRow> = view
        .units
        .iter()
        .filter(|u| match u.owner.as_deref() {
            None => true,
            Some(owner) => owner != me && expired(&u.unit),
        })
        .collect();
    let mut have = mine;
    if have < ceil && !free.is_empty() {
        let offset = name_hash(me) % free.len();
        for unit in free.iter().cycle().skip(offset).take(free.len()) {
            let entry = (unit.unit.clone(), unit.owner.clone(), unit.version);
            if have >= ceil {
                plan.spare.push(entry);
            } else {
                plan.take.push(entry);
                have += 1;
            }
        }
    }
    // Below the floor with nothing left to take: ask the most loaded members. A request to a
    // member that is down to the floor will not be honoured: withdraw it, so that it is
    // neither counted nor left behind.
    let mut asked = 0;
    for u in &view.units {
        if u.wanted_by.as_deref() != Some(me) || u.owner.as_deref() == Some(me) {
            continue;
        }
        let owner_load = u.owner.as_deref().and_then(|o| load.get(o)).copied();
        if owner_load.is_some_and(|n| n > floor) {
            asked += 1;
        } else {
            plan.withdraw.push((u.unit.clone(), me.to_owned()));
        }
    }
    // Below the floor: ask for the difference from members above it. At the floor but below
    // the ceiling while a member holds more than the ceiling (it took its share when the
    // group was smaller): ask it for one.
    let mut want = floor.saturating_sub(have + asked);
    let mut threshold = floor;
    if want == 0 && have + asked < ceil && load.values().any(|n| *n > ceil) {
        want = 1;
        threshold = ceil;
    }
    if want > 0 {
        let mut others: Vec<(&str, usize)> = load
            .iter()
            .filter(|(m, _)| **m != me)
            .map(|(m, n)| (*m, *n))
            .collect();
        while want > 0 {
            others.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
            let Some(top) = others.first_mut() else { break };
            if top.1 <= threshold {
                break;
            }
            let victim = top.0;
            let candidate = view.units.iter().find(|u| {
                u.owner.as_deref() == Some(victim)
                    && u.wanted_by.is_none()
                    && !plan.request.iter().any(|(r, _)| *r == u.unit)
            });
            let Some(unit) = candidate else {
                top.1 = 0;
                continue;
            };
            plan.request.push((unit.unit.clone(), victim.to_owned()));
            top.1 -= 1;
            want -= 1;
        }
    }
    plan
}

/// A stable hash of a member id (FNV-1a), to spread members over free units.
fn name_hash(name: &str) -> usize {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(key: &str, owner: Option<&str>, wanted_by: Option<&str>) -> LeaseRow {
        LeaseRow {
            unit: key.to_owned(),
            owner: owner.map(str::to_owned),
            version: 1,
            expires_at: None,
            wanted_by: wanted_by.map(str::to_owned),
            done: false,
            start: None,
        }
    }

    fn view<'a>(me: &'a str, live: &[&str], units: &'a [LeaseRow]) -> View<'a> {
        View {
            me,
            live: live.iter().map(|s| (*s).to_owned()).collect(),
            units: units.iter().collect(),
        }
    }

    /// Runs members' plans against a shared table until nothing changes, applying takes,
    /// requests and hand-overs as the lease table would (first writer wins).
    fn settle(members: &[&str], units: &mut [LeaseRow]) -> usize {
        settle_with(members, units, false)
    }

    /// Like [`settle`]; with `concurrent`, every member of a round plans from the same
    /// snapshot (they read the table at the same time).
    fn settle_with(members: &[&str], units: &mut [LeaseRow], concurrent: bool) -> usize {
        for round in 0..100 {
            let mut changed = false;
            let round_snapshot = units.to_vec();
            for me in members {
                let snapshot = if concurrent {
                    round_snapshot.clone()
                } else {
                    units.to_vec()
                };
                let p = plan(&view(me, members, &snapshot), |_| false);
                for (key, owner, _) in p.take {
                    let u = units.iter_mut().find(|u| u.unit == key).unwrap();
                    if u.owner == owner {
                        u.owner = Some((*me).to_owned());
                        u.wanted_by = None;
                        changed = true;
                    }
                }
                for (key, owner) in p.request {
                    let u = units.iter_mut().find(|u| u.unit == key).unwrap();
                    if u.owner.as_deref() == Some(owner.as_str()) && u.wanted_by.is_none() {
                        u.wanted_by = Some((*me).to_owned());
                        changed = true;
                    }
                }
                for (key, requester) in p.withdraw {
                    let u = units.iter_mut().find(|u| u.unit == key).unwrap();
                    if u.wanted_by.as_deref() == Some(requester.as_str()) {
                        u.wanted_by = None;
                        changed = true;
                    }
                }
                for (key, to) in p.give {
                    let u = units.iter_mut().find(|u| u.unit == key).unwrap();
                    u.owner = Some(to);
                    u.wanted_by = None;
                    changed = true;
                }
            }
            if !changed {
                return round;
            }
        }
        panic!("the plans did not settle");
    }

    fn counts(members: &[&str], units: &[LeaseRow]) -> Vec<usize> {
        members
            .iter()
            .map(|m| {
                units
                    .iter()
                    .filter(|u| u.owner.as_deref() == Some(m))
                    .count()
            })
            .collect()
    }

    #[test]
    fn members_share_free_units_evenly() {
        for (n_units, n_members) in [(10, 3), (256, 3), (7, 7), (3, 5), (768, 2)] {
            let mut units: Vec<LeaseRow> = (0..n_units)
                .map(|i| unit(&format!("unit:{i:05}"), None, None))
                .collect();
            let names: Vec<String> = (0..n_members).map(|i| format!("m{i}")).collect();
            let members: Vec<&str> = names.iter().map(String::as_str).collect();
            settle(&members, &mut units);
            let c = counts(&members, &units);
            assert_eq!(c.iter().sum::<usize>(), n_units, "{c:?}");
            let (min, max) = (c.iter().min().unwrap(), c.iter().max().unwrap());
            assert!(max - min <= 1, "{n_units} units over {n_members}: {c:?}");
        }
    }

    #[test]
    fn a_new_member_gets_its_share_from_the_others() {
        let mut units: Vec<LeaseRow> = (0..10)
            .map(|i| {
                unit(
                    &format!("unit:{i:02}"),
                    Some(if i < 5 { "a" } else { "b" }),
                    None,
                )
            })
            .collect();
        settle(&["a", "b", "c"], &mut units);
        let c = counts(&["a", "b", "c"], &units);
        assert_eq!(c.iter().sum::<usize>(), 10);
        assert!(c.iter().all(|n| (3..=4).contains(n)), "{c:?}");
    }

    #[test]
    fn members_joining_at_once_get_their_shares() {
        // One member holds every unit; two join and ask at the same time, from the same
        // view: requests the holder will not honour (it is down to the floor) are withdrawn
        // and made again to the member that holds too many.
        for concurrent in [true, false] {
            let mut units: Vec<LeaseRow> = (0..12)
                .map(|i| unit(&format!("unit:{i:02}"), Some("a"), None))
                .collect();
            settle_with(&["b", "c", "a"], &mut units, concurrent);
            let c = counts(&["a", "b", "c"], &units);
            assert_eq!(c, vec![4, 4, 4], "concurrent: {concurrent}");
        }
    }

    #[test]
    fn requests_to_a_member_at_the_floor_are_withdrawn_and_made_elsewhere() {
        // b asked for 6 units while it saw two members, c for 4 while it saw three; a gave
        // 6 to b and 2 to c and is down to the floor (4) with two of c's requests left on its
        // units: c withdraws them and asks b, which holds 6.
        let mut units = Vec::new();
        for i in 0..4 {
            let wanted = (i < 2).then_some("c");
            units.push(unit(&format!("unit:a{i}"), Some("a"), wanted));
        }
        for i in 0..6 {
            units.push(unit(&format!("unit:b{i}"), Some("b"), None));
        }
        for i in 0..2 {
            units.push(unit(&format!("unit:c{i}"), Some("c"), None));
        }
        let p = plan(&view("c", &["a", "b", "c"], &units), |_| false);
        let withdrawn: Vec<&str> = p.withdraw.iter().map(|(u, _)| u.as_str()).collect();
        assert_eq!(withdrawn, vec!["unit:a0", "unit:a1"]);
        assert_eq!(p.request.len(), 2, "{p:?}");
        assert!(p.request.iter().all(|(_, owner)| owner == "b"), "{p:?}");
        // a, at the floor, gives nothing.
        let p = plan(&view("a", &["a", "b", "c"], &units), |_| false);
        assert!(p.give.is_empty(), "{p:?}");
        // And the group settles at 4 each.
        settle(&["a", "b", "c"], &mut units);
        assert_eq!(counts(&["a", "b", "c"], &units), vec![4, 4, 4]);
    }

    #[test]
    fn a_member_above_the_ceiling_gives_to_one_below_it() {
        // b took 4 of 8 units while the group had two members; a and c hold the floor of
        // three members (2) each.
        let owners = ["a", "a", "b", "b", "b", "b", "c", "c"];
        for concurrent in [true, false] {
            let mut units: Vec<LeaseRow> = owners
                .iter()
                .enumerate()
                .map(|(i, o)| unit(&format!("unit:{i:02}"), Some(o), None))
                .collect();
            settle_with(&["a", "b", "c"], &mut units, concurrent);
            let c = counts(&["a", "b", "c"], &units);
            assert!(c.iter().all(|n| (2..=3).contains(n)), "{c:?}");
        }
    }

    #[test]
    fn free_units_beyond_the_ceiling_are_spares_in_take_order() {
        let units: Vec<LeaseRow> = (0..9)
            .map(|i| unit(&format!("unit:{i}"), None, None))
            .collect();
        let p = plan(&view("a", &["a", "b", "c"], &units), |_| false);
        assert_eq!(p.take.len(), 3);
        assert_eq!(p.spare.len(), 6);
        let mut all: Vec<&str> = p
            .take
            .iter()
            .chain(&p.spare)
            .map(|t| t.0.as_str())
            .collect();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 9, "every free unit is a take or a spare, once");
    }

    #[test]
    fn expired_units_are_taken_and_live_ones_are_not() {
        let units = vec![
            unit("unit:1", Some("dead"), None),
            unit("unit:2", Some("b"), None),
            unit("unit:3", Some("dead"), None),
            unit("unit:4", Some("b"), None),
        ];
        let p = plan(&view("a", &["a", "b"], &units), |u| {
            u == "unit:1" || u == "unit:3"
        });
        let taken: Vec<&str> = p.take.iter().map(|(u, _, _)| u.as_str()).collect();
        assert_eq!(taken.len(), 2);
        assert!(
            taken.iter().all(|u| *u == "unit:1" || *u == "unit:3"),
            "{taken:?}"
        );
        assert!(p.request.is_empty());
        // Nothing expired: a below-floor member asks instead of taking.
        let p = plan(&view("a", &["a", "b"], &units), |_| false);
        assert!(p.take.is_empty());
        assert_eq!(p.request.len(), 0, "b holds 2 = floor(4 / 2): {p:?}");
    }

    #[test]
    fn requests_of_departed_members_are_withdrawn_and_live_ones_honoured_above_the_floor() {
        let units = vec![
            unit("unit:1", Some("a"), Some("gone")),
            unit("unit:2", Some("a"), Some("b")),
            unit("unit:3", Some("a"), None),
            unit("unit:4", Some("a"), None),
        ];
        let p = plan(&view("a", &["a", "b"], &units), |_| false);
        assert_eq!(p.withdraw, vec![("unit:1".to_owned(), "gone".to_owned())]);
        assert_eq!(p.give, vec![("unit:2".to_owned(), "b".to_owned())]);
        // At the floor, a request is not honoured.
        let units = vec![
            unit("unit:1", Some("a"), Some("b")),
            unit("unit:2", Some("b"), None),
        ];
        let p = plan(&view("a", &["a", "b"], &units), |_| false);
        assert!(p.give.is_empty());
    }

    #[test]
    fn observations_expire_only_unchanged_rows() {
        let t0 = Instant::now();
        let d = Duration::from_secs(10);
        let mut obs = Observations::default();
        let mut rows = vec![
            unit("unit:1", Some("a"), None),
            unit("unit:2", Some("b"), None),
        ];
        obs.update(&rows, t0);
        assert!(!obs.expired("unit:1", d, t0 + Duration::from_secs(9)));
        rows[1].version = 2;
        obs.update(&rows, t0 + Duration::from_secs(5));
        assert!(obs.expired("unit:1", d, t0 + d));
        assert!(!obs.expired("unit:2", d, t0 + d));
        assert!(obs.expired("unit:2", d, t0 + Duration::from_secs(15)));
        assert!(
            !obs.expired("unit:9", d, t0 + d),
            "a row never seen is not expired"
        );
    }
}
