//! Reading a partition back "to its end" while another producer holds a transaction open in
//! it: what was committed after the open transaction must not be left out.
//!
//! Under `read_committed` the consumer cannot read past the first open transaction (the last
//! stable offset). The program once took that offset for the partition's end: a consumer-group
//! member killed with a transaction open before it held any stream (so nobody fenced it) hid
//! every later checkpoint from the members that started after it, and they published every
//! change again. Reading now waits until the transactions open when the read began are
//! committed or aborted.

use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use rdkafka::config::ClientConfig;
use rdkafka::message::Message;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use scylla_cdc_kafka::checkpoint::{ReadBack, read_partitions};

use crate::support::Broker;

const TOPIC: &str = "readback";

fn producer(bootstrap: &str, transactional_id: &str) -> anyhow::Result<BaseProducer> {
    let producer: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("transactional.id", transactional_id)
        .set("transaction.timeout.ms", "60000")
        .create()?;
    producer.init_transactions(Duration::from_secs(60))?;
    Ok(producer)
}

/// One committed transaction of `values`.
fn commit(producer: &BaseProducer, values: &[&str]) -> anyhow::Result<()> {
    producer.begin_transaction()?;
    for v in values {
        producer
            .send(BaseRecord::<(), str>::to(TOPIC).payload(*v))
            .map_err(|(e, _)| e)?;
    }
    producer.commit_transaction(Duration::from_secs(60))?;
    Ok(())
}

/// Every value of the partition, as the program's read back sees it.
fn read_all(bootstrap: &str, timeout: Duration) -> anyhow::Result<Vec<String>> {
    let readback = ReadBack::create(
        ClientConfig::new()
            .set("bootstrap.servers", bootstrap)
            .set("group.id", "readback-test")
            .set("enable.auto.commit", "false"),
    )?;
    let mut values = Vec::new();
    read_partitions(&readback, [(TOPIC.to_owned(), 0, 0)], timeout, |m| {
        values.push(String::from_utf8_lossy(m.payload().unwrap_or_default()).into_owned());
        Ok(())
    })?;
    Ok(values)
}

#[test]
fn a_read_back_waits_for_an_open_transaction_and_reads_what_was_committed_after_it()
-> anyhow::Result<()> {
    let Some(broker) = Broker::start(
        "readback::a_read_back_waits_for_an_open_transaction_and_reads_what_was_committed_after_it",
        &[],
    )?
    else {
        return Ok(());
    };
    let bootstrap = broker.bootstrap.clone();
    let first = producer(&bootstrap, "first")?;
    commit(&first, &["a"])?;
    // A second producer opens a transaction and writes into it (then stands for a member
    // that was killed, or paused, with it open) ...
    let open = producer(&bootstrap, "open")?;
    open.begin_transaction()?;
    open.send(BaseRecord::<(), str>::to(TOPIC).payload("open"))
        .map_err(|(e, _)| e)?;
    open.flush(Duration::from_secs(60))?;
    // ... while the first goes on committing.
    commit(&first, &["b", "c"])?;

    // The open transaction holds the read back: it ends with a clear error, not with the
    // records before the open transaction taken for all of them.
    let started = Instant::now();
    let err = read_all(&bootstrap, Duration::from_secs(3))
        .expect_err("a read back finished while a transaction begun before it was open");
    ensure!(
        format!("{err:#}").contains("did not reach its end"),
        "unexpected error: {err:#}"
    );
    ensure!(started.elapsed() >= Duration::from_secs(3));

    // Aborted (a fence does that) while a read back waits: it then reads every committed
    // record, those committed after the open transaction began included.
    let reader = {
        let bootstrap = bootstrap.clone();
        std::thread::spawn(move || read_all(&bootstrap, Duration::from_secs(60)))
    };
    std::thread::sleep(Duration::from_millis(500));
    open.abort_transaction(Duration::from_secs(60))?;
    let values = reader
        .join()
        .map_err(|_| anyhow::anyhow!("the reading thread panicked"))?
        .context("reading back after the abort")?;
    ensure!(
        values == ["a", "b", "c"],
        "read back {values:?}, committed [a, b, c]"
    );
    Ok(())
}
