//! The worked examples of the semantics document ([`super::log::cases`]) replayed end to end:
//! each case's table is created on an [`EmbeddedCluster`], its statements run through the
//! `scylla` driver (as CQL text, with the step's timestamp as the client timestamp), and the
//! log table is read back with the driver and compared with the expected rows, row by row and
//! column by column.
//!
//! The driver decodes every value; [`render_row`] prints the decoded row in the cases'
//! format (module doc of `cases`), independently of the server's own value rendering. The
//! cases' fixed base timestamp `T0` is replaced by the current time (CDC refuses writes
//! from the past), and list element keys are labelled relative to it.

use std::collections::HashSet;

use futures::StreamExt;
use scylla::client::session::Session;
use scylla::statement::Statement;
use scylla::statement::batch::{Batch, BatchType};
use scylla::value::{CqlValue, Row};

use super::log::cases::{CASES, Case, STEP, Schema, UT_CQL};
use crate::EmbeddedCluster;
use crate::types::timeuuid::{self, GREGORIAN_OFFSET};

/// Names of the log's metadata columns, which the format prints in its own way.
const META: [&str; 6] = [
    "cdc$stream_id",
    "cdc$time",
    "cdc$batch_seq_no",
    "cdc$operation",
    "cdc$ttl",
    "cdc$end_of_batch",
];

/// The rows of one `cdc$time` group: `(µs from the step's timestamp, row text)`.
type Group = Vec<(i64, String)>;

/// Cases replayed at once (each in its own keyspace).
const PARALLEL_CASES: usize = 6;

/// The log table of a case's base table.
fn log_table_name(schema: Schema) -> String {
    let cql = schema.cql();
    let name = cql
        .split_whitespace()
        .nth(2)
        .and_then(|n| n.split('(').next())
        .and_then(|n| n.strip_prefix("ks."))
        .expect("CREATE TABLE ks.<name> (...)");
    format!("{name}_scylla_cdc_log")
}

/// Replaces the placeholders of a statement: `ks.` by the case's keyspace, `{T}`, `{T+n}`,
/// `{T-n}` by the step's timestamp plus or minus `n`, and `<k<µs>.<n>>` by the list key the
/// statement with timestamp `t0 + µs` gave its `n`-th appended element.
fn substitute(cql: &str, keyspace: &str, t0: i64, t: i64) -> String {
    let text = cql.replace("ks.", &format!("{keyspace}."));
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    loop {
        let brace = rest.find("{T");
        let angle = rest.find("<k");
        let Some(at) = [brace, angle].into_iter().flatten().min() else {
            out.push_str(rest);
            return out;
        };
        out.push_str(&rest[..at]);
        let (open, close) = if Some(at) == brace {
            ("{T", '}')
        } else {
            ("<k", '>')
        };
        let end = rest[at..].find(close).expect("closed placeholder") + at;
        let inner = &rest[at + open.len()..end];
        if open == "{T" {
            let offset: i64 = if inner.is_empty() {
                0
            } else {
                inner.parse().expect("{T+n} or {T-n}")
            };
            out.push_str(&(t + offset).to_string());
        } else {
            let (micros, n) = inner.split_once('.').expect("<k<µs>.<n>>");
            let micros: i64 = micros.parse().expect("µs of a list key");
            let n: u8 = n.parse().expect("element number of a list key");
            let key = timeuuid::from_micros_with_counter(t0 + micros, n, timeuuid::random_lsb());
            out.push_str(&key.hyphenated().to_string());
        }
        rest = &rest[end + 1..];
    }
}

/// A value in the cases' format: CQL literals, list keys as `'k<µs>.<n>'` (µs from `t0`).
fn literal(v: &CqlValue, t0: i64, out: &mut String) {
    use std::fmt::Write as _;
    let seq = |open: char, items: &[CqlValue], close: char, out: &mut String| {
        out.push(open);
        for (i, x) in items.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            literal(x, t0, out);
        }
        out.push(close);
    };
    match v {
        CqlValue::Boolean(b) => out.push_str(if *b { "true" } else { "false" }),
        CqlValue::TinyInt(n) => write!(out, "{n}").expect("string"),
        CqlValue::SmallInt(n) => write!(out, "{n}").expect("string"),
        CqlValue::Int(n) => write!(out, "{n}").expect("string"),
        CqlValue::BigInt(n) => write!(out, "{n}").expect("string"),
        CqlValue::Text(s) | CqlValue::Ascii(s) => {
            write!(out, "'{}'", s.replace('\'', "''")).expect("string")
        }
        CqlValue::Blob(b) => {
            out.push_str("0x");
            for byte in b {
                write!(out, "{byte:02x}").expect("string");
            }
        }
        CqlValue::Timeuuid(u) => {
            let raw = timeuuid::raw_timestamp(u.as_ref()) - GREGORIAN_OFFSET;
            let micros = i64::try_from(raw / 10).expect("time") - t0;
            write!(out, "'k{micros}.{}'", raw % 10).expect("string");
        }
        CqlValue::List(items) => seq('[', items, ']', out),
        CqlValue::Set(items) => seq('{', items, '}', out),
        CqlValue::Map(entries) => {
            out.push('{');
            for (i, (k, x)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                literal(k, t0, out);
                out.push_str(": ");
                literal(x, t0, out);
            }
            out.push('}');
        }
        CqlValue::UserDefinedType { fields, .. } => {
            out.push('{');
            for (i, (name, x)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(name);
                out.push_str(": ");
                match x {
                    Some(x) => literal(x, t0, out),
                    None => out.push_str("null"),
                }
            }
            out.push('}');
        }
        other => panic!("the cases use no value like {other:?}"),
    }
}

/// One log row read through the driver.
struct LogRow {
    /// `cdc$stream_id`.
    stream: Vec<u8>,
    /// `cdc$time`.
    time: uuid::Uuid,
    /// `cdc$batch_seq_no`.
    seq: i32,
    /// The row in the cases' format, `@<dt>` relative to the step's timestamp.
    text: String,
    /// µs of `cdc$time` minus the step's timestamp.
    dt: i64,
}

/// Decodes and renders one row (`names` are the result's column names).
fn render_row(names: &[String], row: &Row, base: i64, t0: i64) -> Result<LogRow, String> {
    let get = |name: &str| {
        names
            .iter()
            .position(|n| n == name)
            .and_then(|i| row.columns.get(i))
            .and_then(Option::as_ref)
    };
    let Some(CqlValue::Blob(stream)) = get("cdc$stream_id") else {
        return Err(format!("no cdc$stream_id blob in {row:?}"));
    };
    let Some(CqlValue::Timeuuid(time)) = get("cdc$time") else {
        return Err(format!("no cdc$time timeuuid in {row:?}"));
    };
    let Some(CqlValue::Int(seq)) = get("cdc$batch_seq_no") else {
        return Err(format!("no cdc$batch_seq_no int in {row:?}"));
    };
    let Some(CqlValue::TinyInt(op)) = get("cdc$operation") else {
        return Err(format!("no cdc$operation tinyint in {row:?}"));
    };
    let time = *time.as_ref();
    let dt = timeuuid::to_micros(&time) - base;
    let mut text = format!("@{dt} #{seq} op={op}");
    match get("cdc$ttl") {
        None => {}
        Some(CqlValue::BigInt(ttl)) => text.push_str(&format!(" ttl={ttl}")),
        Some(other) => return Err(format!("cdc$ttl is not a bigint: {other:?}")),
    }
    match get("cdc$end_of_batch") {
        None => {}
        Some(CqlValue::Boolean(true)) => text.push_str(" eob"),
        Some(other) => text.push_str(&format!(" eob={other:?}")),
    }
    for (name, value) in names.iter().zip(&row.columns) {
        let Some(value) = value else { continue };
        if META.contains(&name.as_str()) {
            continue;
        }
        let label = if let Some(n) = name.strip_prefix("cdc$deleted_elements_") {
            format!("dele_{n}")
        } else if let Some(n) = name.strip_prefix("cdc$deleted_") {
            format!("del_{n}")
        } else {
            name.clone()
        };
        text.push(' ');
        text.push_str(&label);
        text.push('=');
        literal(value, t0, &mut text);
    }
    Ok(LogRow {
        stream: stream.clone(),
        time,
        seq: *seq,
        text,
        dt,
    })
}

/// Every row of a log table, in the order the driver returns them.
async fn read_log(session: &Session, table: &str) -> Result<(Vec<String>, Vec<Row>), String> {
    let result = session
        .query_unpaged(format!("SELECT * FROM {table}"), ())
        .await
        .map_err(|e| format!("reading {table}: {e}"))?
        .into_rows_result()
        .map_err(|e| format!("reading {table}: {e}"))?;
    let names = result
        .column_specs()
        .iter()
        .map(|c| c.name().to_string())
        .collect();
    let rows = result
        .rows::<Row>()
        .map_err(|e| format!("reading {table}: {e}"))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("reading {table}: {e}"))?;
    Ok((names, rows))
}

/// Groups rows into `cdc$time` groups and sorts the groups by their time then their text: the
/// log orders rows within a stream only, and the cases list the groups of a step that writes
/// several partitions one partition after the other.
fn canonical(groups: Vec<Group>) -> Vec<String> {
    let mut groups = groups;
    groups.sort_by(|a, b| {
        let key = |g: &[(i64, String)]| {
            (
                g.first().map(|r| r.0),
                g.iter().map(|r| r.1.clone()).collect::<Vec<_>>(),
            )
        };
        key(a).cmp(&key(b))
    });
    groups.into_iter().flatten().map(|(_, text)| text).collect()
}

/// The expected rows of a step cut into groups (a group ends with its `eob` row).
fn expected_groups(expect: &[&str], lwt: bool) -> Vec<Group> {
    let mut groups = Vec::new();
    let mut current = Vec::new();
    for row in expect {
        let dt: i64 = row
            .strip_prefix('@')
            .and_then(|r| r.split_whitespace().next())
            .and_then(|d| d.parse().ok())
            .expect("an expected row starts with @<dt>");
        let text = if lwt { hide_dt(row) } else { row.to_string() };
        current.push((if lwt { 0 } else { dt }, text));
        if row.split_whitespace().any(|w| w == "eob") {
            groups.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        groups.push(current);
    }
    groups
}

/// A row with its `@<dt>` replaced by `@?` (an LWT's timestamp is the server's).
fn hide_dt(row: &str) -> String {
    match row.split_once(' ') {
        Some((_, rest)) => format!("@? {rest}"),
        None => "@?".to_string(),
    }
}

/// Runs one statement or batch of a step.
async fn run_step(session: &Session, cql: &[String], ts: Option<i64>) -> Result<(), String> {
    if let [one] = cql {
        let mut s = Statement::new(one.clone());
        s.set_timestamp(ts);
        session
            .query_unpaged(s, ())
            .await
            .map(|_| ())
            .map_err(|e| format!("{one}: {e}"))
    } else {
        let mut batch = Batch::new(BatchType::Logged);
        for s in cql {
            batch.append_statement(Statement::new(s.clone()));
        }
        batch.set_timestamp(ts);
        session
            .batch(&batch, vec![(); cql.len()])
            .await
            .map(|_| ())
            .map_err(|e| format!("batch {}: {e}", cql.join("; ")))
    }
}

/// Replays a case; returns its failures, each naming the case, the step and the row.
async fn replay(session: &Session, case: &Case) -> Vec<String> {
    match replay_inner(session, case).await {
        Ok(failures) => failures,
        Err(e) => vec![format!("case {}: {e}", case.id)],
    }
}

async fn replay_inner(session: &Session, case: &Case) -> Result<Vec<String>, String> {
    // The cluster is this test's own: a keyspace per case needs only a number.
    static CASES: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = CASES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let ks = format!("replay_{n}");
    let ddl = |cql: String| async move {
        session
            .query_unpaged(cql.clone(), ())
            .await
            .map(|_| ())
            .map_err(|e| format!("{cql}: {e}"))
    };
    ddl(format!(
        "CREATE KEYSPACE {ks} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}"
    ))
    .await?;
    if matches!(case.schema, Schema::Tc | Schema::Tx) {
        ddl(substitute(UT_CQL, &ks, 0, 0)).await?;
    }
    ddl(substitute(
        &case.schema.cql().replace("{cdc}", case.cdc),
        &ks,
        0,
        0,
    ))
    .await?;
    let log = format!("{ks}.{}", log_table_name(case.schema));
    // Now, rounded to a whole millisecond: CDC admits writes from now on.
    let t0 = timeuuid::now_micros() / 1000 * 1000;
    let mut seen: HashSet<(Vec<u8>, uuid::Uuid, i32)> = HashSet::new();
    let mut failures = Vec::new();
    for (n, step) in case.steps.iter().enumerate() {
        let base = t0 + STEP * n as i64;
        let cql: Vec<String> = step
            .cql
            .iter()
            .map(|s| substitute(s, &ks, t0, base))
            .collect();
        let lwt = cql.iter().any(|s| s.contains(" IF "));
        run_step(session, &cql, (!lwt).then_some(base)).await?;
        let (names, rows) = read_log(session, &log).await?;
        // The log orders each stream's rows by (cdc$time, cdc$batch_seq_no).
        for pair in rows.windows(2) {
            let (a, b) = (
                render_row(&names, &pair[0], base, t0)?,
                render_row(&names, &pair[1], base, t0)?,
            );
            if a.stream == b.stream
                && timeuuid::compare(&a.time, &b.time).then(a.seq.cmp(&b.seq))
                    != std::cmp::Ordering::Less
            {
                failures.push(format!(
                    "case {} step {n}: rows out of order in a stream: {} then {}",
                    case.id, a.text, b.text
                ));
            }
        }
        let mut groups: Vec<(Vec<u8>, uuid::Uuid, Group)> = Vec::new();
        for row in &rows {
            let r = render_row(&names, row, base, t0)?;
            if !seen.insert((r.stream.clone(), r.time, r.seq)) {
                continue;
            }
            let (dt, text) = if lwt {
                (0, hide_dt(&r.text))
            } else {
                (r.dt, r.text)
            };
            match groups.last_mut() {
                Some((s, t, g)) if *s == r.stream && *t == r.time => g.push((dt, text)),
                _ => groups.push((r.stream, r.time, vec![(dt, text)])),
            }
        }
        let Some(expect) = step.expect else { continue };
        let got = canonical(groups.into_iter().map(|(_, _, g)| g).collect());
        let want = canonical(expected_groups(expect, lwt));
        if got != want {
            let row = got
                .iter()
                .zip(&want)
                .position(|(g, w)| g != w)
                .unwrap_or(got.len().min(want.len()));
            let show =
                |rows: &[String]| -> String { rows.iter().map(|r| format!("    {r}\n")).collect() };
            failures.push(format!(
                "case {} step {n} ({}): row {row} differs: expected {:?}, got {:?}\n  expected:\n{}  got:\n{}",
                case.id,
                cql.join("; "),
                want.get(row),
                got.get(row),
                show(&want),
                show(&got),
            ));
        }
    }
    let _ = ddl(format!("DROP KEYSPACE {ks}")).await;
    Ok(failures)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worked_examples_read_back_through_the_driver() {
    let cluster = EmbeddedCluster::builder()
        .start()
        .await
        .expect("cluster starts");
    let session = cluster.session().await.expect("session");
    let failures: Vec<String> = futures::stream::iter(CASES)
        .map(|case| {
            let session = session.clone();
            async move { replay(&session, case).await }
        })
        .buffer_unordered(PARALLEL_CASES)
        .flat_map(futures::stream::iter)
        .collect()
        .await;
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn placeholders_are_substituted() {
    let t0 = 1_800_000_000_000_000;
    assert_eq!(
        substitute(
            "UPDATE ks.t USING TIMESTAMP {T+2} SET v = 1",
            "k1",
            t0,
            t0 + 1000
        ),
        format!("UPDATE k1.t USING TIMESTAMP {} SET v = 1", t0 + 1002)
    );
    assert_eq!(
        substitute("DELETE m FROM ks.t USING TIMESTAMP {T-1}", "k", t0, t0),
        format!("DELETE m FROM k.t USING TIMESTAMP {}", t0 - 1)
    );
    let text = substitute(
        "SET l[SCYLLA_TIMEUUID_LIST_INDEX(<k7.3>)] = 'w'",
        "k",
        t0,
        t0,
    );
    let uuid: uuid::Uuid = text
        .trim_start_matches("SET l[SCYLLA_TIMEUUID_LIST_INDEX(")
        .trim_end_matches(")] = 'w'")
        .parse()
        .expect("a uuid literal");
    let mut label = String::new();
    literal(
        &CqlValue::Timeuuid(scylla::value::CqlTimeuuid::from(uuid)),
        t0,
        &mut label,
    );
    assert_eq!(label, "'k7.3'");
    // Map and UDT literals are left alone.
    assert_eq!(
        substitute("SET m = {1: 'a'}, nu = {a: 1}", "k", t0, t0),
        "SET m = {1: 'a'}, nu = {a: 1}"
    );
}

#[test]
fn expected_rows_are_grouped_and_sorted_like_read_rows() {
    let want = canonical(expected_groups(
        &[
            "@1 #0 op=1 eob pk=1",
            "@0 #0 op=1 pk=2",
            "@0 #1 op=1 eob pk=2",
            "@0 #0 op=1 eob pk=0",
        ],
        false,
    ));
    assert_eq!(
        want,
        [
            "@0 #0 op=1 eob pk=0",
            "@0 #0 op=1 pk=2",
            "@0 #1 op=1 eob pk=2",
            "@1 #0 op=1 eob pk=1"
        ]
    );
    assert_eq!(hide_dt("@17 #0 op=2 eob"), "@? #0 op=2 eob");
}

#[test]
fn every_case_names_its_log_table() {
    for case in CASES {
        let name = log_table_name(case.schema);
        assert!(
            name.ends_with("_scylla_cdc_log") && !name.contains('.'),
            "{name}"
        );
    }
}
