//! Fault injection: a list of (condition, reaction) rules, changeable while the cluster runs.
//!
//! Every request a node receives is checked against the rules in order; the first rule that
//! matches (and still has matches left, and wins its probability draw) decides what happens:
//! answer with an error instead of executing, delay the request, or drop the connection.
//! Rules are data: tests build them with [`FaultRule`]'s builder methods, and the
//! `scylla-emulator` binary parses them from text (`fault node=2 opcode=execute
//! contains=_scylla_cdc_log error=overloaded times=3`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use rand::Rng;

/// The request kinds a rule can match (CQL opcodes that carry work).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FaultOpcode {
    /// `STARTUP` (connection handshake).
    Startup,
    /// `OPTIONS` (handshake and keepalives).
    Options,
    /// `QUERY`
    Query,
    /// `PREPARE`
    Prepare,
    /// `EXECUTE`
    Execute,
    /// `BATCH`
    Batch,
    /// `REGISTER`
    Register,
}

impl FaultOpcode {
    fn parse(s: &str) -> Option<FaultOpcode> {
        Some(match s.to_ascii_lowercase().as_str() {
            "startup" => FaultOpcode::Startup,
            "options" => FaultOpcode::Options,
            "query" => FaultOpcode::Query,
            "prepare" => FaultOpcode::Prepare,
            "execute" => FaultOpcode::Execute,
            "batch" => FaultOpcode::Batch,
            "register" => FaultOpcode::Register,
            _ => return None,
        })
    }
}

/// The error a faulty node answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultError {
    /// `Overloaded` (0x1001).
    Overloaded,
    /// `ReadTimeout` (0x1200), with no data present.
    ReadTimeout,
    /// `WriteTimeout` (0x1100), write type SIMPLE.
    WriteTimeout,
    /// `Unavailable` (0x1000).
    Unavailable,
    /// `ServerError` (0x0000).
    ServerError,
    /// `IsBootstrapping` (0x1002).
    IsBootstrapping,
    /// `ReadFailure` (0x1300).
    ReadFailure,
    /// `Invalid` (0x2200) — a non-transient error.
    Invalid,
}

impl FaultError {
    fn parse(s: &str) -> Option<FaultError> {
        Some(
            match s.to_ascii_lowercase().replace(['_', '-'], "").as_str() {
                "overloaded" => FaultError::Overloaded,
                "readtimeout" => FaultError::ReadTimeout,
                "writetimeout" => FaultError::WriteTimeout,
                "unavailable" => FaultError::Unavailable,
                "servererror" => FaultError::ServerError,
                "isbootstrapping" | "bootstrapping" => FaultError::IsBootstrapping,
                "readfailure" => FaultError::ReadFailure,
                "invalid" => FaultError::Invalid,
                _ => return None,
            },
        )
    }
}

/// What happens to a request a rule matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultReaction {
    /// Answer with this error instead of executing the request.
    Error(FaultError),
    /// Execute the request after this delay.
    Delay(Duration),
    /// Close the connection without answering.
    DropConnection,
    /// Execute the request, then answer with this error instead of its result: a write that
    /// was applied although the client hears a timeout, as when a coordinator's reply is lost
    /// or a lightweight transaction's Paxos round succeeds on a quorum the coordinator does not
    /// hear from in time (ScyllaDB answers such a CAS write with `WriteTimeout`, write type
    /// `CAS`: the client cannot know whether it was applied).
    ErrorAfterExecuting(FaultError),
}

/// A fault-injection rule: conditions (all must hold) and a reaction.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultRule {
    node: Option<usize>,
    shard: Option<u32>,
    opcode: Option<FaultOpcode>,
    keyspace: Option<String>,
    table: Option<String>,
    contains: Option<String>,
    reaction: FaultReaction,
    times: Option<u64>,
    probability: f64,
}

impl Default for FaultRule {
    fn default() -> Self {
        FaultRule::new()
    }
}

impl FaultRule {
    /// A rule that matches every request and answers `Overloaded`; narrow it with the
    /// `on_*` methods and choose the reaction with [`FaultRule::respond`].
    pub fn new() -> FaultRule {
        FaultRule {
            node: None,
            shard: None,
            opcode: None,
            keyspace: None,
            table: None,
            contains: None,
            reaction: FaultReaction::Error(FaultError::Overloaded),
            times: None,
            probability: 1.0,
        }
    }

    /// Only requests to node `index` (1-based).
    pub fn on_node(mut self, index: usize) -> Self {
        self.node = Some(index);
        self
    }

    /// Only requests on connections to shard `shard`.
    pub fn on_shard(mut self, shard: u32) -> Self {
        self.shard = Some(shard);
        self
    }

    /// Only requests with this opcode.
    pub fn on_opcode(mut self, opcode: FaultOpcode) -> Self {
        self.opcode = Some(opcode);
        self
    }

    /// Only statements on tables of this keyspace.
    pub fn on_keyspace(mut self, keyspace: impl Into<String>) -> Self {
        self.keyspace = Some(keyspace.into());
        self
    }

    /// Only statements on this table (name without keyspace).
    pub fn on_table(mut self, table: impl Into<String>) -> Self {
        self.table = Some(table.into());
        self
    }

    /// Only statements whose text contains `fragment` (for EXECUTE: the prepared text).
    pub fn on_statement_containing(mut self, fragment: impl Into<String>) -> Self {
        self.contains = Some(fragment.into());
        self
    }

    /// What to do with matching requests.
    pub fn respond(mut self, reaction: FaultReaction) -> Self {
        self.reaction = reaction;
        self
    }

    /// Shorthand for `respond(FaultReaction::Error(error))`.
    pub fn error(self, error: FaultError) -> Self {
        self.respond(FaultReaction::Error(error))
    }

    /// Apply to the next `n` matching requests only.
    pub fn times(mut self, n: u64) -> Self {
        self.times = Some(n);
        self
    }

    /// Apply to each matching request with probability `p` (0..=1).
    pub fn with_probability(mut self, p: f64) -> Self {
        self.probability = p.clamp(0.0, 1.0);
        self
    }

    /// Parses the text form used by `scylla-emulator`'s `fault` command: space-separated
    /// `key=value` pairs: `node=<i> shard=<s> opcode=<query|prepare|execute|batch|...>
    /// keyspace=<ks> table=<t> contains=<text> times=<n> probability=<p>` and exactly one of
    /// `error=<overloaded|read_timeout|write_timeout|unavailable|server_error|...>`,
    /// `error_after=<kind>` (executes the request, then answers the error), `delay=<ms>` or
    /// `drop`.
    pub fn parse(text: &str) -> Result<FaultRule, String> {
        let mut rule = FaultRule::new();
        let mut reactions = 0;
        for word in text.split_whitespace() {
            let (key, value) = word.split_once('=').unwrap_or((word, ""));
            let need = |v: &str| {
                if v.is_empty() {
                    Err(format!("`{key}` needs a value"))
                } else {
                    Ok(v.to_string())
                }
            };
            let number = |v: &str| {
                v.parse::<u64>()
                    .map_err(|_| format!("`{key}` needs a number, not `{v}`"))
            };
            match key {
                "node" => rule.node = Some(number(value)? as usize),
                "shard" => rule.shard = Some(number(value)? as u32),
                "opcode" => {
                    rule.opcode = Some(
                        FaultOpcode::parse(value)
                            .ok_or_else(|| format!("unknown opcode `{value}`"))?,
                    )
                }
                "keyspace" => rule.keyspace = Some(need(value)?),
                "table" => rule.table = Some(need(value)?),
                "contains" => rule.contains = Some(need(value)?),
                "times" => rule.times = Some(number(value)?),
                "probability" => {
                    let p: f64 = value
                        .parse()
                        .map_err(|_| format!("`probability` needs a number, not `{value}`"))?;
                    if !(0.0..=1.0).contains(&p) {
                        return Err("`probability` must be between 0 and 1".into());
                    }
                    rule.probability = p;
                }
                "error" => {
                    reactions += 1;
                    rule.reaction = FaultReaction::Error(
                        FaultError::parse(value)
                            .ok_or_else(|| format!("unknown error `{value}`"))?,
                    );
                }
                "error_after" => {
                    reactions += 1;
                    rule.reaction = FaultReaction::ErrorAfterExecuting(
                        FaultError::parse(value)
                            .ok_or_else(|| format!("unknown error `{value}`"))?,
                    );
                }
                "delay" => {
                    reactions += 1;
                    rule.reaction = FaultReaction::Delay(Duration::from_millis(number(value)?));
                }
                "drop" if value.is_empty() => {
                    reactions += 1;
                    rule.reaction = FaultReaction::DropConnection;
                }
                _ => return Err(format!("unknown fault setting `{word}`")),
            }
        }
        match reactions {
            1 => Ok(rule),
            0 => Err(
                "a fault needs one of error=<kind>, error_after=<kind>, delay=<ms> or drop".into(),
            ),
            _ => Err("a fault takes only one of error=, error_after=, delay= and drop".into()),
        }
    }
}

/// What a request looks like to the rules.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RequestInfo<'a> {
    /// Node index (1-based).
    pub(crate) node: usize,
    /// Shard of the connection.
    pub(crate) shard: u32,
    /// Kind of request.
    pub(crate) opcode: FaultOpcode,
    /// Statement text, when the request carries one (QUERY, PREPARE, EXECUTE's prepared text).
    pub(crate) statement: Option<&'a str>,
    /// Keyspace and table the statement targets, when known.
    pub(crate) table: Option<(&'a str, &'a str)>,
}

impl FaultRule {
    fn matches(&self, r: &RequestInfo<'_>) -> bool {
        self.node.is_none_or(|n| n == r.node)
            && self.shard.is_none_or(|s| s == r.shard)
            && self.opcode.is_none_or(|o| o == r.opcode)
            && self
                .keyspace
                .as_deref()
                .is_none_or(|k| r.table.is_some_and(|(ks, _)| ks == k))
            && self
                .table
                .as_deref()
                .is_none_or(|t| r.table.is_some_and(|(_, tb)| tb == t))
            && self
                .contains
                .as_deref()
                .is_none_or(|c| r.statement.is_some_and(|s| s.contains(c)))
    }
}

/// How many requests a rule added to a cluster has reacted to so far
/// (`EmbeddedCluster::add_fault`): a test waits on it to act while a request is held by a
/// `delay`, or to check that a rule was met.
#[derive(Debug, Clone, Default)]
pub struct FaultHits(Arc<AtomicU64>);

impl FaultHits {
    /// The requests the rule reacted to (drew its probability and had uses left).
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }
}

/// The cluster's rule list; cheap to check when empty.
#[derive(Debug, Default, Clone)]
pub(crate) struct FaultRules {
    rules: Arc<Mutex<Vec<(FaultRule, FaultHits)>>>,
}

impl FaultRules {
    /// Appends a rule; its hits are counted in what it returns.
    pub(crate) fn add(&self, rule: FaultRule) -> FaultHits {
        let hits = FaultHits::default();
        self.rules.lock().push((rule, hits.clone()));
        hits
    }

    /// Removes every rule.
    pub(crate) fn clear(&self) {
        self.rules.lock().clear();
    }

    /// Number of rules still active.
    pub(crate) fn len(&self) -> usize {
        self.rules.lock().len()
    }

    /// The reaction for a request, consuming one use of a `times`-limited rule (a rule with no
    /// uses left is removed).
    pub(crate) fn check(&self, request: &RequestInfo<'_>) -> Option<FaultReaction> {
        let mut rules = self.rules.lock();
        if rules.is_empty() {
            return None;
        }
        let i = rules.iter().position(|(rule, _)| {
            rule.matches(request)
                && (rule.probability >= 1.0 || rand::thread_rng().r#gen::<f64>() < rule.probability)
        })?;
        let (rule, hits) = &mut rules[i];
        hits.0.fetch_add(1, Ordering::Release);
        let reaction = rule.reaction;
        if let Some(times) = rule.times.as_mut() {
            *times = times.saturating_sub(1);
            if *times == 0 {
                rules.remove(i);
            }
        }
        Some(reaction)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(node: usize, opcode: FaultOpcode, statement: &str) -> RequestInfo<'_> {
        RequestInfo {
            node,
            shard: 0,
            opcode,
            statement: Some(statement),
            table: Some(("ks", "t_scylla_cdc_log")),
        }
    }

    #[test]
    fn times_limited_rules_expire() {
        let rules = FaultRules::default();
        rules.add(
            FaultRule::new()
                .on_statement_containing("_scylla_cdc_log")
                .error(FaultError::ReadTimeout)
                .times(2),
        );
        let r = req(1, FaultOpcode::Execute, "SELECT * FROM ks.t_scylla_cdc_log");
        assert_eq!(
            rules.check(&r),
            Some(FaultReaction::Error(FaultError::ReadTimeout))
        );
        assert_eq!(
            rules.check(&req(2, FaultOpcode::Execute, "SELECT * FROM ks.other")),
            None
        );
        assert!(rules.check(&r).is_some());
        assert_eq!(rules.check(&r), None);
        assert_eq!(rules.len(), 0);
    }

    #[test]
    fn conditions_must_all_hold() {
        let rules = FaultRules::default();
        rules.add(FaultRule::new().on_node(2).on_opcode(FaultOpcode::Batch));
        assert_eq!(rules.check(&req(1, FaultOpcode::Batch, "x")), None);
        assert_eq!(rules.check(&req(2, FaultOpcode::Execute, "x")), None);
        assert!(rules.check(&req(2, FaultOpcode::Batch, "x")).is_some());
        rules.clear();
        rules.add(
            FaultRule::new()
                .on_keyspace("ks")
                .on_table("t_scylla_cdc_log"),
        );
        assert!(rules.check(&req(3, FaultOpcode::Query, "x")).is_some());
    }

    #[test]
    fn probability_zero_never_matches() {
        let rules = FaultRules::default();
        rules.add(FaultRule::new().with_probability(0.0));
        for _ in 0..100 {
            assert_eq!(rules.check(&req(1, FaultOpcode::Query, "x")), None);
        }
    }

    #[test]
    fn parses_the_text_form() {
        let rule = FaultRule::parse(
            "node=2 opcode=execute contains=_scylla_cdc_log error=overloaded times=3",
        )
        .expect("valid");
        assert_eq!(
            rule,
            FaultRule::new()
                .on_node(2)
                .on_opcode(FaultOpcode::Execute)
                .on_statement_containing("_scylla_cdc_log")
                .error(FaultError::Overloaded)
                .times(3)
        );
        assert_eq!(
            FaultRule::parse("delay=250 probability=0.5").map(|r| r.reaction),
            Ok(FaultReaction::Delay(Duration::from_millis(250)))
        );
        assert_eq!(
            FaultRule::parse("drop").map(|r| r.reaction),
            Ok(FaultReaction::DropConnection)
        );
        assert_eq!(
            FaultRule::parse("error_after=write_timeout contains=leases").map(|r| r.reaction),
            Ok(FaultReaction::ErrorAfterExecuting(FaultError::WriteTimeout))
        );
        assert!(FaultRule::parse("error_after=write_timeout drop").is_err());
        assert!(FaultRule::parse("node=2").is_err());
        assert!(FaultRule::parse("error=nope").is_err());
        assert!(FaultRule::parse("error=overloaded drop").is_err());
        assert!(FaultRule::parse("probability=2 drop").is_err());
        assert!(FaultRule::parse("bogus=1 drop").is_err());
    }
}
