//! The printer: the `json` output of a scripted workload line by line, `pretty` for every
//! change kind, `--demo`, and checkpoints.
//!
//! Runs against the embedded cluster, or the real Scylla of `SCYLLA_URI` when it is set;
//! `--demo` starts its own embedded cluster, so its test is skipped then.

use std::time::Duration;

use chrono::{SecondsFormat, Utc};
use scylla::client::session::Session;
use scylla_cdc_test_utils::{TestCluster, embedded_only, setup_tracing, unique_keyspace_name};
use serde_json::{Value, json};

use crate::support::*;

/// A table in one partition (one stream, so the log order is the write order) and the
/// statements of every change kind.
async fn scripted(s: &Session) -> anyhow::Result<(String, Vec<String>)> {
    let ks = unique_keyspace_name();
    create_keyspace(s, &ks, 1).await?;
    exec(
        s,
        format!(
            "CREATE TABLE {ks}.t (pk int, ck int, st text static, v text, n int, m map<int, text>, \
             PRIMARY KEY (pk, ck)) WITH cdc = {{'enabled': true}}"
        ),
    )
    .await?;
    let t = format!("{ks}.t");
    let statements = vec![
        format!("INSERT INTO {t} (pk, ck, v, n) VALUES (1, 1, 'a', 10)"),
        format!("UPDATE {t} SET v = 'b' WHERE pk = 1 AND ck = 1"),
        format!("UPDATE {t} SET st = 'static' WHERE pk = 1"),
        format!("DELETE n FROM {t} WHERE pk = 1 AND ck = 1"),
        format!("UPDATE {t} USING TTL 600 SET m = m + {{1: 'x'}} WHERE pk = 1 AND ck = 2"),
        format!("UPDATE {t} SET m = m - {{1}} WHERE pk = 1 AND ck = 2"),
        format!("DELETE FROM {t} WHERE pk = 1 AND ck = 1"),
        format!("DELETE FROM {t} WHERE pk = 1 AND ck >= 2 AND ck < 4"),
        format!("DELETE FROM {t} WHERE pk = 1"),
    ];
    exec_all(s, &statements).await?;
    Ok((ks, statements))
}

fn rfc3339(t: chrono::DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// Printer arguments reading `ks.t` from `start` to `end` with short windows.
fn printer_args(
    cluster: &TestCluster,
    ks: &str,
    start: chrono::DateTime<Utc>,
    end: chrono::DateTime<Utc>,
    format: &str,
) -> Vec<String> {
    let mut args = crate::support::printer_args(&hosts(cluster), ks, "t");
    args.extend(strings(&[
        "--start",
        &rfc3339(start),
        "--end",
        &rfc3339(end),
        "--format",
        format,
    ]));
    args
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_output_of_a_scripted_workload() -> anyhow::Result<()> {
    setup_tracing();
    let c = cluster(1).await?;
    let s = c.session().await?;
    let start = Utc::now() - chrono::TimeDelta::seconds(1);
    let (ks, _) = scripted(&s).await?;
    let end = Utc::now() + chrono::TimeDelta::milliseconds(100);
    let (printer, out) = spawn_printer(printer_args(&c, &ks, start, end, "json"));
    // The printer ends by itself once everything before --end is printed.
    assert_eq!(printer.join(Duration::from_secs(30)).await?, Ok(()));

    let lines: Vec<Value> = out
        .contents()
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    let table = format!("{ks}.t");
    // (operation, batch_seq_no, end_of_batch, columns, extra keys)
    let expected = vec![
        (
            "RowInsert",
            0,
            true,
            json!({"pk": 1, "ck": 1, "v": "a", "n": 10}),
            json!({}),
        ),
        (
            "RowUpdate",
            0,
            true,
            json!({"pk": 1, "ck": 1, "v": "b"}),
            json!({}),
        ),
        (
            "RowUpdate",
            0,
            true,
            json!({"pk": 1, "st": "static"}),
            json!({}),
        ),
        (
            "RowUpdate",
            0,
            true,
            json!({"pk": 1, "ck": 1}),
            json!({"deleted": ["n"]}),
        ),
        (
            "RowUpdate",
            0,
            true,
            json!({"pk": 1, "ck": 2, "m": {"1": "x"}}),
            json!({"ttl": 600}),
        ),
        (
            "RowUpdate",
            0,
            true,
            json!({"pk": 1, "ck": 2}),
            json!({"deleted_elements": {"m": [1]}}),
        ),
        ("RowDelete", 0, true, json!({"pk": 1, "ck": 1}), json!({})),
        (
            "RowRangeDelInclLeft",
            0,
            false,
            json!({"pk": 1, "ck": 2}),
            json!({}),
        ),
        (
            "RowRangeDelExclRight",
            1,
            true,
            json!({"pk": 1, "ck": 4}),
            json!({}),
        ),
        ("PartitionDelete", 0, true, json!({"pk": 1}), json!({})),
    ];
    assert_eq!(lines.len(), expected.len(), "{lines:#?}");
    let mut last_time = String::new();
    for (line, (op, seq, eob, columns, extra)) in lines.iter().zip(expected) {
        let obj = line.as_object().expect("a JSON object per line");
        assert_eq!(obj["table"], json!(table));
        assert_eq!(obj["operation"], json!(op), "{line}");
        assert_eq!(obj["batch_seq_no"], json!(seq), "{line}");
        assert_eq!(obj["end_of_batch"], json!(eob), "{line}");
        assert_eq!(obj["columns"], columns, "{line}");
        for (k, v) in extra.as_object().into_iter().flatten() {
            assert_eq!(&obj[k], v, "{line}");
        }
        for optional in ["deleted", "deleted_elements", "ttl"] {
            if extra.get(optional).is_none() {
                assert!(!obj.contains_key(optional), "{optional} in {line}");
            }
        }
        let time = obj["time"].as_str().expect("time").to_owned();
        assert!(time.ends_with('Z') && time.len() == 27, "{time}");
        assert!(time >= last_time, "times in write order");
        last_time = time;
        assert!(
            obj["stream_id"]
                .as_str()
                .is_some_and(|s| s.starts_with("0x") && s.len() == 34)
        );
    }
    drop_keyspace(&s, &ks).await?;
    c.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pretty_output_shows_every_change_kind() -> anyhow::Result<()> {
    setup_tracing();
    let c = cluster(1).await?;
    let s = c.session().await?;
    let start = Utc::now() - chrono::TimeDelta::seconds(1);
    let (ks, _) = scripted(&s).await?;
    let end = Utc::now() + chrono::TimeDelta::milliseconds(100);
    let (printer, out) = spawn_printer(printer_args(&c, &ks, start, end, "pretty"));
    assert_eq!(printer.join(Duration::from_secs(30)).await?, Ok(()));
    let text = out.contents();
    let blocks: Vec<&str> = text
        .split("\n\n")
        .filter(|b| !b.trim().is_empty())
        .collect();
    assert_eq!(blocks.len(), 10, "{text}");
    let expect = [
        (
            "RowInsert ttl=none",
            &["pk = 1", "ck = 1", "v = 'a'", "n = 10"][..],
        ),
        ("RowUpdate ttl=none", &["v = 'b'"][..]),
        ("RowUpdate ttl=none", &["st = 'static'"][..]),
        ("RowUpdate ttl=none", &["n deleted"][..]),
        ("RowUpdate ttl=600", &["m = {1: 'x'}"][..]),
        ("RowUpdate ttl=none", &["m removed {1}"][..]),
        ("RowDelete", &["ck = 1"][..]),
        ("RowRangeDelInclLeft", &["ck = 2"][..]),
        ("RowRangeDelExclRight", &["ck = 4", "end of batch"][..]),
        ("PartitionDelete", &["pk = 1"][..]),
    ];
    for (block, (header, lines)) in blocks.iter().zip(expect) {
        let first = block.lines().next().unwrap_or_default();
        assert!(first.contains(&format!("{ks}.t {header}")), "{block}");
        assert!(block.contains("  stream 0x"), "{block}");
        for l in lines {
            assert!(block.contains(l), "{l:?} not in {block}");
        }
    }
    drop_keyspace(&s, &ks).await?;
    c.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpoints_resume_where_the_last_run_stopped() -> anyhow::Result<()> {
    setup_tracing();
    let c = cluster(1).await?;
    let s = c.session().await?;
    let start = Utc::now() - chrono::TimeDelta::seconds(1);
    let (ks, _) = scripted(&s).await?;
    let end = Utc::now() + chrono::TimeDelta::milliseconds(100);
    let mut args = printer_args(&c, &ks, start, end, "json");
    args.extend(["--checkpoint-table".into(), format!("{ks}.progress")]);
    let (printer, out) = spawn_printer(args.clone());
    assert_eq!(printer.join(Duration::from_secs(30)).await?, Ok(()));
    assert_eq!(out.contents().lines().count(), 10);

    // More changes, then a run with a later end: it resumes from the checkpoint (the end of
    // the first run), so only the new changes are printed.
    exec(
        &s,
        format!("INSERT INTO {ks}.t (pk, ck, v) VALUES (1, 9, 'new')"),
    )
    .await?;
    let end2 = Utc::now() + chrono::TimeDelta::milliseconds(100);
    let pos = args.iter().position(|a| a == "--end").unwrap_or(0) + 1;
    args[pos] = rfc3339(end2);
    let (printer, out) = spawn_printer(args);
    assert_eq!(printer.join(Duration::from_secs(30)).await?, Ok(()));
    let lines: Vec<Value> = out
        .contents()
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    assert_eq!(lines.len(), 1, "{lines:#?}");
    assert_eq!(lines[0]["columns"]["v"], json!("new"));
    drop_keyspace(&s, &ks).await?;
    c.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stops_cleanly_on_request() -> anyhow::Result<()> {
    setup_tracing();
    let c = cluster(1).await?;
    let s = c.session().await?;
    let (ks, _) = scripted(&s).await?;
    // One contact point (`--hostname`): the driver finds the other nodes.
    let first = c.contact_points().swap_remove(0);
    let args: Vec<String> = [
        "--hostname",
        &first,
        "-k",
        &ks,
        "-t",
        "t",
        "--start=-1m",
        "--window-size=1",
        "--safety-interval=1",
        "--sleep-interval=0.1",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let (printer, out) = spawn_printer(args);
    wait_for("the changes to be printed", Duration::from_secs(20), || {
        let out = out.clone();
        async move { Ok(out.contents().contains("PartitionDelete")) }
    })
    .await?;
    assert_eq!(printer.stop(Duration::from_secs(10)).await?, Ok(()));
    drop_keyspace(&s, &ks).await?;
    c.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_prints_changes() -> anyhow::Result<()> {
    if !embedded_only("demo_prints_changes", "runs the printer's --demo") {
        return Ok(());
    }
    setup_tracing();
    let (printer, out) = spawn_printer(vec![
        "--demo".into(),
        "--demo-seconds".into(),
        "6".into(),
        "--format".into(),
        "json".into(),
    ]);
    assert_eq!(printer.join(Duration::from_secs(60)).await?, Ok(()));
    let lines: Vec<Value> = out
        .contents()
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    assert!(lines.len() >= 10, "{lines:#?}");
    let ops: std::collections::BTreeSet<&str> = lines
        .iter()
        .filter_map(|l| l["operation"].as_str())
        .collect();
    for op in ["RowInsert", "RowUpdate", "PreImage", "PostImage"] {
        assert!(ops.contains(op), "{op} not printed: {ops:?}");
    }
    assert!(lines.iter().all(|l| l["table"] == json!("demo.orders")));
    Ok(())
}
