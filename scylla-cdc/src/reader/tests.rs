use super::builder::*;
use super::*;
use crate::base::cdc_types::StreamID;
use crate::base::time::TokioClock;
use crate::checkpoints::CDCCheckpointSaver;
use crate::checkpoints::tests::MemorySaver;
use crate::cluster::generations::tests::FakeFetcher;
use crate::consumer::Consumer;
use crate::consumer::ConsumerFactory;
use crate::report::events::ReaderEvent;
use crate::stream::error_policy::ConsumerErrorPolicy;
use crate::stream::sink::ConsumerKind;
use crate::stream::tests::{FakeLog, Recorder, Seen, ms, row, stream};
use async_trait::async_trait;
use scylla::errors::{DbError, ExecutionError, RequestAttemptError};
use std::sync::Mutex;

const BASE: i64 = 1_700_000_000_000;

struct Factory {
    seen: Arc<Mutex<Vec<Seen>>>,
    fail_on: Option<i32>,
}

#[async_trait]
impl ConsumerFactory for Factory {
    async fn new_consumer(&self) -> Box<dyn Consumer> {
        Box::new(Recorder {
            seen: self.seen.clone(),
            fail_on: self.fail_on,
        })
    }
}

fn g(ms_: i64) -> GenerationTimestamp {
    GenerationTimestamp::new(ms(ms_))
}

struct Env {
    fetcher: Arc<FakeFetcher>,
    log: Arc<FakeLog>,
    saver: Arc<MemorySaver>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Env {
    fn new() -> Self {
        Self {
            fetcher: Arc::new(FakeFetcher::default()),
            log: Arc::new(FakeLog::new(7)),
            saver: Arc::new(MemorySaver::default()),
            seen: Arc::new(Mutex::new(Vec::new())),
        }
    }

    fn builder(&self) -> CDCLogReaderBuilder {
        CDCLogReaderBuilder::new()
            .window_size(Duration::from_secs(60))
            .safety_interval(Duration::from_secs(30))
            .sleep_interval(Duration::from_secs(10))
            .clock(Arc::new(TokioClock::starting_at(ms(BASE))))
    }

    async fn start(
        &self,
        b: CDCLogReaderBuilder,
        fail_on: Option<i32>,
    ) -> Result<(CDCLogReader, CDCReaderHandle), CDCError> {
        let (save, load) = b.validate()?;
        let factory = Arc::new(Factory {
            seen: self.seen.clone(),
            fail_on,
        });
        let setup = TableSetup {
            table: "t".into(),
            log_table: "t_scylla_cdc_log".into(),
            fetcher: self.fetcher.clone(),
            source: self.log.clone(),
            log_ttl: b.log_ttl,
        };
        b.start(
            vec![setup],
            ConsumerKind::Rows(factory),
            "ks".into(),
            save,
            load,
        )
        .await
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

#[tokio::test]
async fn build_rejects_bad_configuration() {
    let err = CDCLogReaderBuilder::new().build().await.err().unwrap();
    assert!(matches!(err, CDCError::MissingOption("session")), "{err}");
    let e = Env::new();
    let zero = e
        .builder()
        .window_size(Duration::ZERO)
        .validate()
        .unwrap_err();
    assert!(matches!(zero, CDCError::InvalidConfig(_)), "{zero}");
    e.builder()
        .sleep_interval(Duration::ZERO)
        .validate()
        .expect("a zero sleep interval is allowed");
    let sleep = e
        .builder()
        .sleep_interval(Duration::from_secs(2 * 24 * 3600))
        .validate()
        .unwrap_err();
    assert!(sleep.to_string().contains("sleep_interval"), "{sleep}");
    let backwards = e
        .builder()
        .start_timestamp(ms(10))
        .end_timestamp(ms(10))
        .validate()
        .unwrap_err();
    assert!(
        backwards.to_string().contains("end_timestamp"),
        "{backwards}"
    );
    let no_saver = e
        .builder()
        .should_load_progress(true)
        .validate()
        .unwrap_err();
    assert!(matches!(
        no_saver,
        CDCError::MissingOption("checkpoint_saver")
    ));
    assert_eq!(e.builder().validate().unwrap(), (false, false));
    let with_saver = e.builder().checkpoint_saver(e.saver.clone());
    assert_eq!(with_saver.validate().unwrap(), (true, true));
}

#[tokio::test]
async fn build_rejects_bad_group_configuration() {
    let e = Env::new();
    let err = |b: CDCLogReaderBuilder| b.validate().unwrap_err().to_string();
    // Group settings without a group.
    let e1 = err(e.builder().member_id("m"));
    assert!(e1.contains("`member_id`") && e1.contains("`group`"), "{e1}");
    // A group without checkpoints.
    let e2 = err(e.builder().group("g"));
    assert!(e2.contains("checkpoint saver"), "{e2}");
    let e3 = err(e
        .builder()
        .checkpoint_saver(e.saver.clone())
        .should_save_progress(false)
        .group("g"));
    assert!(e3.contains("saved and loaded"), "{e3}");
    // A saver that is not a table, and no lease table given.
    let e4 = err(e.builder().checkpoint_saver(e.saver.clone()).group("g"));
    assert!(e4.contains("lease table"), "{e4}");
    let ok = e
        .builder()
        .checkpoint_saver(e.saver.clone())
        .group("g")
        .lease_table("ks", "leases");
    assert_eq!(ok.validate().unwrap(), (true, true));
    // Lease duration not longer than the renew interval, either order of the calls.
    let e5 = err(e
        .builder()
        .checkpoint_saver(e.saver.clone())
        .lease_duration(Duration::from_secs(3))
        .renew_interval(Duration::from_secs(3))
        .group("g")
        .lease_table("ks", "leases"));
    assert!(e5.contains("lease duration"), "{e5}");
    let e6 = err(e
        .builder()
        .checkpoint_saver(e.saver.clone())
        .group("g")
        .lease_table("ks", "leases")
        .lease_duration(Duration::from_secs(1))
        .renew_interval(Duration::from_secs(2)));
    assert!(e6.contains("renew interval"), "{e6}");
    let e7 = err(e
        .builder()
        .checkpoint_saver(e.saver.clone())
        .group("")
        .lease_table("ks", "leases"));
    assert!(e7.contains("name"), "{e7}");
}

#[tokio::test(start_paused = true)]
async fn no_generation_is_an_error() {
    let e = Env::new();
    let err = e.start(e.builder(), None).await.err().unwrap();
    assert!(matches!(err, CDCError::NoGeneration { .. }), "{err}");
}

#[tokio::test(start_paused = true)]
async fn follows_a_new_generation_after_finishing_the_old_one() {
    let e = Env::new();
    e.fetcher
        .add(g(BASE - 3_600_000), vec![vec![stream(1)], vec![stream(2)]]);
    e.log.push(row(1, (BASE - 1_800_000) * 1000, 0, 1));
    e.log.push(row(2, (BASE + 30_000) * 1000, 0, 2));
    e.log.push(row(1, (BASE + 50_000) * 1000, 0, 3));
    e.log.push(row(3, (BASE + 70_000) * 1000, 0, 4));
    e.log.push(row(3, (BASE + 100_000) * 1000, 0, 5));
    let fetcher = e.fetcher.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(5)).await;
        fetcher.add(g(BASE + 60_000), vec![vec![stream(3)]]);
    });
    let b = e
        .builder()
        .start_timestamp(ms(BASE - 3_600_000))
        .end_timestamp(ms(BASE + 120_000))
        .checkpoint_saver(e.saver.clone());
    let (_reader, handle) = e.start(b, None).await.unwrap();
    handle.await.unwrap();
    let vs: Vec<i32> = e.seen().iter().filter_map(|s| s.3).collect();
    assert_eq!(vs.len(), 5, "{vs:?}");
    // Every row of the first generation came before any of the second.
    let first_g2 = vs.iter().position(|v| *v >= 4).unwrap();
    assert!(vs[..first_g2].iter().all(|v| *v <= 3));
    assert_eq!(vs[first_g2..], [4, 5]);
    assert_eq!(
        *e.saver.generations_saved.lock().unwrap(),
        vec![g(BASE - 3_600_000), g(BASE + 60_000)]
    );
    // The first generation's groups were never asked past the second's start.
    for (streams, _, end, _) in e.log.requests.lock().unwrap().iter() {
        if streams[0] != stream(3) {
            assert!(*end <= ms(BASE + 60_000));
        }
    }
}

#[tokio::test(start_paused = true)]
async fn resume_from_checkpoints_loses_nothing() {
    let e = Env::new();
    let g1 = BASE - 3_600_000;
    let g2 = BASE - 600_000;
    e.fetcher.add(g(g1), vec![vec![stream(1)]]);
    e.fetcher.add(g(g2), vec![vec![stream(2)]]);
    let mut v = 0;
    for i in 0..300 {
        v += 1;
        e.log.push(row(1, (g1 + i * 10_000) * 1000, 0, v));
    }
    for i in 0..50 {
        v += 1;
        e.log.push(row(2, (g2 + i * 10_000) * 1000, 0, v));
    }
    let total = v;

    // Run 1 "crashes" on row 200 (the consumer fails).
    let b = e
        .builder()
        .start_timestamp(ms(g1))
        .checkpoint_saver(e.saver.clone())
        .pause_between_saves(Duration::ZERO);
    let (_r1, h1) = e.start(b, Some(200)).await.unwrap();
    assert!(matches!(h1.await, Err(CDCError::Consumer { .. })));
    let run1 = e.seen();
    assert_eq!(run1.len(), 199);
    let checkpoint = e.saver.streams.lock().unwrap()[&stream(1)];
    e.seen.lock().unwrap().clear();

    // Run 2 starts "now" by default, but resumes from the checkpoint, follows into the
    // next generation and stops once caught up.
    let b = e.builder().checkpoint_saver(e.saver.clone());
    let (mut r2, h2) = e.start(b, None).await.unwrap();
    r2.stop_at(ms(BASE - 35_000));
    h2.await.unwrap();
    let run2 = e.seen();
    let mut all: Vec<i32> = run1.iter().chain(&run2).filter_map(|s| s.3).collect();
    all.sort();
    all.dedup();
    assert_eq!(all, (1..=total).collect::<Vec<_>>(), "something was lost");
    // Duplicates only after the last checkpoint.
    let cp_us = checkpoint.timestamp_micros();
    for dup in run2.iter().filter(|s| run1.contains(s)) {
        assert!(
            dup.1 >= cp_us,
            "{dup:?} redelivered from before {checkpoint}"
        );
    }
    assert!(run2.len() < 200, "run 2 restarted from scratch");
}

#[tokio::test(start_paused = true)]
async fn the_default_start_is_when_the_builder_was_made() {
    let e = Env::new();
    e.fetcher.add(g(BASE - 3_600_000), vec![vec![stream(1)]]);
    e.log.push(row(1, (BASE - 1_000) * 1000, 0, 1));
    // Written while the program was starting up: after the builder was made, long
    // before `build` returned.
    e.log.push(row(1, (BASE + 2_000) * 1000, 0, 2));
    e.log.push(row(1, (BASE + 25_000) * 1000, 0, 3));
    let b = e.builder();
    tokio::time::sleep(Duration::from_secs(20)).await;
    let (mut r, h) = e.start(b, None).await.unwrap();
    r.stop_at(ms(BASE + 30_000));
    h.await.unwrap();
    let vs: Vec<i32> = e.seen().iter().filter_map(|s| s.3).collect();
    assert_eq!(vs, vec![2, 3]);
}

#[tokio::test(start_paused = true)]
async fn without_loading_the_start_timestamp_applies() {
    let e = Env::new();
    e.fetcher.add(g(BASE - 3_600_000), vec![vec![stream(1)]]);
    e.log.push(row(1, (BASE - 3_000_000) * 1000, 0, 1));
    e.log.push(row(1, (BASE - 1_000_000) * 1000, 0, 2));
    e.saver
        .streams
        .lock()
        .unwrap()
        .insert(stream(1), ms(BASE - 3_500_000));
    let b = e
        .builder()
        .start_timestamp(ms(BASE - 2_000_000))
        .end_timestamp(ms(BASE - 500_000))
        .checkpoint_saver(e.saver.clone())
        .should_load_progress(false);
    let (_r, h) = e.start(b, None).await.unwrap();
    h.await.unwrap();
    let vs: Vec<i32> = e.seen().iter().filter_map(|s| s.3).collect();
    assert_eq!(vs, vec![2]);
}

#[tokio::test(start_paused = true)]
async fn transient_metadata_errors_are_retried() {
    let e = Env::new();
    e.fetcher.add(g(BASE - 3_600_000), vec![vec![stream(1)]]);
    e.log.push(row(1, (BASE - 3_000_000) * 1000, 0, 1));
    let transient = || CDCError::Query {
        what: "streams".into(),
        source: Box::new(ExecutionError::RequestTimeout(Duration::from_secs(1))),
    };
    e.fetcher
        .group_errors
        .lock()
        .unwrap()
        .extend([transient(), transient()]);
    let b = e
        .builder()
        .start_timestamp(ms(BASE - 3_600_000))
        .end_timestamp(ms(BASE - 1_000_000));
    let (_r, h) = e.start(b, None).await.unwrap();
    h.await.unwrap();
    assert_eq!(e.seen().len(), 1);

    // A permanent one ends the reader with that error.
    e.fetcher
        .group_errors
        .lock()
        .unwrap()
        .push(CDCError::Query {
            what: "streams".into(),
            source: Box::new(ExecutionError::LastAttemptError(
                RequestAttemptError::DbError(DbError::Invalid, "no".into()),
            )),
        });
    let b = e.builder().start_timestamp(ms(BASE - 3_600_000));
    let (_r, h) = e.start(b, None).await.unwrap();
    assert!(matches!(h.await, Err(CDCError::Query { .. })));
}

#[tokio::test(start_paused = true)]
async fn stop_resolves_promptly() {
    let e = Env::new();
    e.fetcher
        .add(g(BASE - 3_600_000), vec![vec![stream(1)], vec![stream(2)]]);
    let (mut r, h) = e.start(e.builder(), None).await.unwrap();
    tokio::time::sleep(Duration::from_secs(100)).await;
    let before = tokio::time::Instant::now();
    r.stop();
    h.await.unwrap();
    assert!(before.elapsed() < Duration::from_millis(1));
}

#[tokio::test(start_paused = true)]
async fn dropping_the_reader_keeps_reading_and_dropping_the_handle_stops() {
    let e = Env::new();
    e.fetcher
        .add(g(BASE - 3_600_000), vec![vec![stream(1)], vec![stream(2)]]);
    let (r, h) = e.start(e.builder(), None).await.unwrap();
    drop(r);
    // Logged after the start; readable once 30 s (the safety interval) have passed.
    e.log.push(row(1, (BASE + 5_000) * 1000, 0, 1));
    tokio::time::sleep(Duration::from_secs(100)).await;
    assert_eq!(
        e.seen().len(),
        1,
        "the reader kept reading without its CDCLogReader"
    );

    drop(h);

    // Dropping the handle stops the reader, even while its CDCLogReader is alive.
    let e = Env::new();
    e.fetcher
        .add(g(BASE - 3_600_000), vec![vec![stream(1)], vec![stream(2)]]);
    let (_reader, h) = e.start(e.builder(), None).await.unwrap();
    tokio::time::sleep(Duration::from_secs(10)).await;
    drop(h);
    // The reader is gone once it has released its factory and every consumer, which
    // hold the only other references to `seen`.
    tokio::time::timeout(Duration::from_secs(1), async {
        while Arc::strong_count(&e.seen) > 1 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await
    .expect("dropping the handle did not stop the reader");
    e.log.push(row(2, (BASE + 20_000) * 1000, 0, 2));
    tokio::time::sleep(Duration::from_secs(100)).await;
    assert!(
        e.seen().is_empty(),
        "a row delivered after the handle was dropped"
    );
}

#[tokio::test(start_paused = true)]
async fn consumer_error_stops_every_group() {
    let e = Env::new();
    e.fetcher
        .add(g(BASE - 3_600_000), vec![vec![stream(1)], vec![stream(2)]]);
    e.log.push(row(1, (BASE - 3_000_000) * 1000, 0, 13));
    let b = e.builder().start_timestamp(ms(BASE - 3_600_000));
    let (_r, h) = e.start(b, Some(13)).await.unwrap();
    // Without the error the reader would run forever (no end).
    let err = tokio::time::timeout(Duration::from_secs(3600), h)
        .await
        .unwrap()
        .unwrap_err();
    assert!(matches!(err, CDCError::Consumer { stream: s, .. } if s == stream(1)));
}

#[tokio::test(start_paused = true)]
async fn generation_is_saved_again_while_staying_in_it() {
    let e = Env::new();
    e.fetcher.add(g(BASE - 3_600_000), vec![vec![stream(1)]]);
    let b = e.builder().checkpoint_saver(e.saver.clone());
    let (mut r, h) = e.start(b, None).await.unwrap();
    tokio::time::sleep(Duration::from_secs(2 * 3600 + 60)).await;
    r.stop();
    h.await.unwrap();
    assert_eq!(e.saver.generations_saved.lock().unwrap().len(), 3);
}

#[tokio::test(start_paused = true)]
async fn stop_at_delivers_everything_before_it() {
    let e = Env::new();
    e.fetcher.add(g(BASE - 3_600_000), vec![vec![stream(1)]]);
    // Rows written after the reader started, up to just before the stop time.
    for i in 0..20 {
        e.log.push(row(1, (BASE + i * 5_000) * 1000, 0, i as i32));
    }
    e.log.push(row(1, (BASE + 100_000) * 1000 + 1, 0, 99));
    let (mut r, h) = e.start(e.builder(), None).await.unwrap();
    tokio::time::sleep(Duration::from_secs(50)).await;
    // Rounded up to the next millisecond: the row 1 µs after it is still excluded.
    r.stop_at(DateTime::from_timestamp_micros((BASE + 100_000) * 1000 - 500).unwrap());
    h.await.unwrap();
    let vs: Vec<i32> = e.seen().iter().filter_map(|s| s.3).collect();
    assert_eq!(vs, (0..20).collect::<Vec<_>>());
}

/// The events a reader reported.
fn event_log(b: CDCLogReaderBuilder) -> (CDCLogReaderBuilder, Arc<Mutex<Vec<ReaderEvent>>>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let b = b.on_event(move |e| sink.lock().unwrap().push(e.clone()));
    (b, events)
}

const HOUR: i64 = 3_600_000;
/// The oldest readable time with a 1 h TTL and the 30 s safety interval, at `BASE`.
const OLDEST: i64 = BASE - HOUR - 30_000;

#[tokio::test(start_paused = true)]
async fn a_start_older_than_the_ttl_reports_the_gap_and_reads_from_the_oldest_time() {
    let e = Env::new();
    e.fetcher
        .add(g(BASE - 10 * HOUR), vec![vec![stream(1)], vec![stream(2)]]);
    // Expired rows (a real log would no longer hold them).
    e.log.push(row(1, (BASE - 5 * HOUR) * 1000, 0, 1));
    e.log.push(row(2, (OLDEST - 1) * 1000, 0, 2));
    // Still in the log, the first one exactly at the oldest readable time.
    e.log.push(row(1, OLDEST * 1000, 0, 3));
    e.log.push(row(2, (BASE - 60_000) * 1000, 0, 4));
    let (b, events) = event_log(
        e.builder()
            .log_ttl(Some(Duration::from_secs(3600)))
            .start_timestamp(ms(BASE - 9 * HOUR))
            .end_timestamp(ms(BASE - 40_000)),
    );
    let (_r, h) = e.start(b, None).await.unwrap();
    h.await.unwrap();
    let mut vs: Vec<i32> = e.seen().iter().filter_map(|s| s.3).collect();
    vs.sort();
    assert_eq!(vs, vec![3, 4]);
    let events = events.lock().unwrap().clone();
    let [ReaderEvent::ExpiredGap(gap)] = events.as_slice() else {
        panic!("{events:?}");
    };
    assert_eq!(gap.requested, ms(BASE - 9 * HOUR));
    assert_eq!(gap.first_readable, ms(OLDEST));
    assert_eq!(gap.generation, g(BASE - 10 * HOUR));
    assert_eq!(gap.streams, vec![stream(1), stream(2)]);
    assert_eq!(gap.ttl, Duration::from_secs(3600));
    assert_eq!(
        gap.width(),
        Duration::from_millis((OLDEST - (BASE - 9 * HOUR)) as u64)
    );
    assert_eq!((gap.keyspace.as_str(), gap.table.as_str()), ("ks", "t"));
}

#[tokio::test(start_paused = true)]
async fn a_checkpoint_older_than_the_ttl_reports_the_gap_for_its_streams() {
    let e = Env::new();
    let g1 = BASE - 10 * HOUR;
    e.fetcher.add(g(g1), vec![vec![stream(1)], vec![stream(2)]]);
    *e.saver.generation.lock().unwrap() = Some(g(g1));
    e.saver.streams.lock().unwrap().extend([
        (stream(1), ms(BASE - 2 * HOUR)),
        (stream(2), ms(BASE - 600_000)),
    ]);
    e.log.push(row(1, (BASE - 90 * 60_000) * 1000, 0, 1));
    e.log.push(row(1, (OLDEST + 1) * 1000, 0, 2));
    e.log.push(row(2, (BASE - 500_000) * 1000, 0, 3));
    let (b, events) = event_log(
        e.builder()
            .log_ttl(Some(Duration::from_secs(3600)))
            .checkpoint_saver(e.saver.clone()),
    );
    let (mut r, h) = e.start(b, None).await.unwrap();
    r.stop_at(ms(BASE - 40_000));
    h.await.unwrap();
    let mut vs: Vec<i32> = e.seen().iter().filter_map(|s| s.3).collect();
    vs.sort();
    assert_eq!(vs, vec![2, 3]);
    let events = events.lock().unwrap().clone();
    let [ReaderEvent::ExpiredGap(gap)] = events.as_slice() else {
        panic!("{events:?}");
    };
    assert_eq!(gap.requested, ms(BASE - 2 * HOUR));
    assert_eq!(gap.first_readable, ms(OLDEST));
    // The stream whose checkpoint is recent lost nothing.
    assert_eq!(gap.streams, vec![stream(1)]);
}

#[tokio::test(start_paused = true)]
async fn expired_generations_report_contiguous_gaps() {
    let e = Env::new();
    e.fetcher.add(g(BASE - 10 * HOUR), vec![vec![stream(1)]]);
    e.fetcher.add(g(BASE - 5 * HOUR), vec![vec![stream(2)]]);
    e.log.push(row(2, (BASE - 50 * 60_000) * 1000, 0, 1));
    let (b, events) = event_log(
        e.builder()
            .log_ttl(Some(Duration::from_secs(3600)))
            .start_timestamp(ms(BASE - 9 * HOUR))
            .end_timestamp(ms(BASE - 40_000)),
    );
    let (_r, h) = e.start(b, None).await.unwrap();
    h.await.unwrap();
    assert_eq!(e.seen().len(), 1);
    let bounds: Vec<_> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            ReaderEvent::ExpiredGap(gap) => {
                Some((gap.generation, gap.requested, gap.first_readable))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        bounds,
        vec![
            (
                g(BASE - 10 * HOUR),
                ms(BASE - 9 * HOUR),
                ms(BASE - 5 * HOUR)
            ),
            (g(BASE - 5 * HOUR), ms(BASE - 5 * HOUR), ms(OLDEST)),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_range_that_has_expired_entirely_ends_at_its_end() {
    let e = Env::new();
    e.fetcher.add(g(BASE - 10 * HOUR), vec![vec![stream(1)]]);
    e.log.push(row(1, (BASE - 6 * HOUR) * 1000, 0, 1));
    let (b, events) = event_log(
        e.builder()
            .log_ttl(Some(Duration::from_secs(3600)))
            .checkpoint_saver(e.saver.clone())
            .start_timestamp(ms(BASE - 9 * HOUR))
            .end_timestamp(ms(BASE - 5 * HOUR)),
    );
    let (_r, h) = e.start(b, None).await.unwrap();
    h.await.unwrap();
    assert!(e.seen().is_empty());
    let events = events.lock().unwrap().clone();
    let [ReaderEvent::ExpiredGap(gap)] = events.as_slice() else {
        panic!("{events:?}");
    };
    assert_eq!(
        (gap.requested, gap.first_readable),
        (ms(BASE - 9 * HOUR), ms(BASE - 5 * HOUR))
    );
    // The checkpoint does not claim more than the reader's end.
    assert_eq!(
        e.saver.streams.lock().unwrap()[&stream(1)],
        ms(BASE - 5 * HOUR)
    );
}

#[tokio::test(start_paused = true)]
async fn without_a_ttl_nothing_expires() {
    let e = Env::new();
    e.fetcher.add(g(BASE - 10 * HOUR), vec![vec![stream(1)]]);
    e.log.push(row(1, (BASE - 9 * HOUR) * 1000, 0, 1));
    let (b, events) = event_log(
        e.builder()
            .log_ttl(None)
            .start_timestamp(ms(BASE - 10 * HOUR))
            .end_timestamp(ms(BASE - 40_000)),
    );
    let (_r, h) = e.start(b, None).await.unwrap();
    h.await.unwrap();
    assert_eq!(e.seen().len(), 1);
    assert!(events.lock().unwrap().is_empty());
}

/// Rows seen by a reader of several tables: (the table the consumer was made for, the
/// row's `table()`, `v`).
type TableSeen = Arc<Mutex<Vec<(String, String, i32)>>>;

struct TableRecorder {
    table: String,
    seen: TableSeen,
}

#[async_trait]
impl Consumer for TableRecorder {
    async fn consume_cdc(&mut self, row: crate::CDCRow<'_>) -> anyhow::Result<()> {
        let v = row.get_value_as::<i32>("v")?.unwrap_or_default();
        self.seen
            .lock()
            .unwrap()
            .push((self.table.clone(), row.table().to_owned(), v));
        Ok(())
    }
}

struct TableFactory {
    seen: TableSeen,
}

#[async_trait]
impl ConsumerFactory for TableFactory {
    async fn new_consumer(&self) -> Box<dyn Consumer> {
        unreachable!("the reader asks for consumers per table")
    }

    async fn new_consumer_for_table(&self, table: &str) -> Box<dyn Consumer> {
        Box::new(TableRecorder {
            table: table.to_owned(),
            seen: self.seen.clone(),
        })
    }
}

/// In-memory savers, one per table.
#[derive(Default)]
struct PerTableSaver {
    tables: Mutex<std::collections::HashMap<String, Arc<MemorySaver>>>,
}

impl PerTableSaver {
    fn table(&self, table: &str) -> Arc<MemorySaver> {
        self.tables
            .lock()
            .unwrap()
            .entry(table.to_owned())
            .or_default()
            .clone()
    }
}

#[async_trait]
impl CDCCheckpointSaver for PerTableSaver {
    fn for_table(&self, table: &str) -> anyhow::Result<Arc<dyn CDCCheckpointSaver>> {
        Ok(self.table(table))
    }
    async fn save_checkpoint(&self, _: &crate::Checkpoint) -> anyhow::Result<()> {
        anyhow::bail!("used without a table")
    }
    async fn save_new_generation(&self, _: &GenerationTimestamp) -> anyhow::Result<()> {
        anyhow::bail!("used without a table")
    }
    async fn load_last_generation(&self) -> anyhow::Result<Option<GenerationTimestamp>> {
        anyhow::bail!("used without a table")
    }
    async fn load_last_checkpoint(&self, _: &[StreamID]) -> anyhow::Result<Option<DateTime<Utc>>> {
        anyhow::bail!("used without a table")
    }
}

/// Starts a reader of tables `t1` and `t2` sharing `fetcher` (a vnode keyspace), or
/// each with its own (tablets), reading `logs`.
async fn start_two(
    b: CDCLogReaderBuilder,
    fetchers: [Arc<FakeFetcher>; 2],
    logs: [Arc<FakeLog>; 2],
    seen: &TableSeen,
) -> Result<(CDCLogReader, CDCReaderHandle), CDCError> {
    let b = b.tables(["t1", "t2"]);
    let tables = b.table_set()?;
    let (save, load) = b.validate()?;
    let setups = tables
        .into_iter()
        .zip(fetchers)
        .zip(logs)
        .map(|((table, fetcher), log)| TableSetup {
            log_table: format!("{table}_scylla_cdc_log"),
            table,
            fetcher: fetcher as Arc<dyn GenerationFetcher>,
            source: log,
            log_ttl: None,
        })
        .collect();
    let factory = Arc::new(TableFactory { seen: seen.clone() });
    b.start(setups, ConsumerKind::Rows(factory), "ks".into(), save, load)
        .await
}

#[tokio::test(start_paused = true)]
async fn two_tables_keep_their_own_checkpoints_and_rows() {
    let fetcher = Arc::new(FakeFetcher::default());
    fetcher.add(g(BASE - 3_600_000), vec![vec![stream(1)], vec![stream(2)]]);
    let logs = [Arc::new(FakeLog::new(7)), Arc::new(FakeLog::new(7))];
    // The same streams (a vnode keyspace), different rows per table.
    logs[0].push(row(1, (BASE - 3_000_000) * 1000, 0, 11));
    logs[0].push(row(2, (BASE - 1_000_000) * 1000, 0, 12));
    logs[1].push(row(1, (BASE - 3_000_000) * 1000, 0, 21));
    logs[1].push(row(2, (BASE - 1_000_000) * 1000, 0, 22));
    let saver = Arc::new(PerTableSaver::default());
    // t1 was read alone before, up to BASE - 2_000_000; t2 never.
    *saver.table("t1").generation.lock().unwrap() = Some(g(BASE - 3_600_000));
    saver.table("t1").streams.lock().unwrap().extend([
        (stream(1), ms(BASE - 2_000_000)),
        (stream(2), ms(BASE - 2_000_000)),
    ]);
    let seen = TableSeen::default();
    let b = Env::new()
        .builder()
        .start_timestamp(ms(BASE - 1_500_000))
        .end_timestamp(ms(BASE - 40_000))
        .checkpoint_saver(saver.clone());
    let (r, h) = start_two(b, [fetcher.clone(), fetcher.clone()], logs, &seen)
        .await
        .unwrap();
    let progress = r.progress_handle();
    h.await.unwrap();
    let mut got = seen.lock().unwrap().clone();
    got.sort();
    // t1 resumed from its checkpoint (row 11 is before it), t2 from the start time.
    assert_eq!(
        got,
        vec![
            ("t1".into(), "t1".into(), 12),
            ("t2".into(), "t2".into(), 22),
        ]
    );
    // Each table saved its own progress.
    for t in ["t1", "t2"] {
        assert_eq!(
            saver.table(t).streams.lock().unwrap()[&stream(2)],
            ms(BASE - 40_000),
            "{t}"
        );
    }
    let p = progress.progress();
    assert_eq!(p.rows, 2);
    assert_eq!(p.streams, 4);
    let per_table: Vec<_> = p
        .tables
        .iter()
        .map(|t| (t.table.as_str(), t.progress.rows))
        .collect();
    assert_eq!(per_table, vec![("t1", 1), ("t2", 1)]);
    assert_eq!(
        p.low_watermark,
        p.tables
            .iter()
            .filter_map(|t| t.progress.low_watermark)
            .min()
    );
}

#[tokio::test(start_paused = true)]
async fn a_saver_for_one_table_cannot_serve_two() {
    let fetcher = Arc::new(FakeFetcher::default());
    fetcher.add(g(BASE - 3_600_000), vec![vec![stream(1)]]);
    let logs = [Arc::new(FakeLog::new(7)), Arc::new(FakeLog::new(7))];
    let b = Env::new()
        .builder()
        .checkpoint_saver(Arc::new(MemorySaver::default()));
    let err = start_two(b, [fetcher.clone(), fetcher], logs, &TableSeen::default())
        .await
        .err()
        .unwrap();
    assert!(err.to_string().contains("`t1`"), "{err}");
}

#[test]
fn the_table_set_is_checked() {
    let b = CDCLogReaderBuilder::new();
    assert!(matches!(
        b.table_set(),
        Err(CDCError::MissingOption("table_name"))
    ));
    let dup = CDCLogReaderBuilder::new()
        .tables(["a", "b", "a"])
        .table_set();
    assert!(dup.unwrap_err().to_string().contains("`a`"));
    // `table_name` is one table and replaces the set; the last call wins.
    let b = CDCLogReaderBuilder::new()
        .tables(["a", "b"])
        .table_name("c");
    assert_eq!(b.table_set().unwrap(), vec!["c"]);
    let b = CDCLogReaderBuilder::new()
        .table_name("c")
        .tables(["a", "b"]);
    assert_eq!(b.table_set().unwrap(), vec!["a", "b"]);
}

/// Generations are polled once per sleep interval for the whole reader in a vnode
/// keyspace, and followed by every table; in a tablet keyspace each table's own.
#[tokio::test(start_paused = true)]
async fn one_generation_poll_serves_every_table_of_a_vnode_keyspace() {
    for tablets in [false, true] {
        let shared = Arc::new(FakeFetcher::default());
        let fetchers = if tablets {
            [
                Arc::new(FakeFetcher::default()),
                Arc::new(FakeFetcher::default()),
            ]
        } else {
            [shared.clone(), shared.clone()]
        };
        for f in &fetchers {
            f.add(g(BASE - 3_600_000), vec![vec![stream(1)]]);
        }
        let logs = [Arc::new(FakeLog::new(7)), Arc::new(FakeLog::new(7))];
        logs[0].push(row(3, (BASE + 70_000) * 1000, 0, 1));
        logs[1].push(row(3, (BASE + 80_000) * 1000, 0, 2));
        let seen = TableSeen::default();
        let (mut r, h) = start_two(Env::new().builder(), fetchers.clone(), logs, &seen)
            .await
            .unwrap();
        let polls = |fs: &[Arc<FakeFetcher>; 2]| -> usize {
            if tablets {
                fs.iter()
                    .map(|f| f.polls.load(std::sync::atomic::Ordering::Relaxed))
                    .sum()
            } else {
                fs[0].polls.load(std::sync::atomic::Ordering::Relaxed)
            }
        };
        let at_start = polls(&fetchers);
        // 10 sleep intervals.
        tokio::time::sleep(Duration::from_secs(100) + Duration::from_millis(1)).await;
        let per_interval = if tablets { 2 } else { 1 };
        assert_eq!(
            polls(&fetchers) - at_start,
            10 * per_interval,
            "tablets: {tablets}"
        );
        for f in &fetchers {
            f.add(g(BASE + 60_000), vec![vec![stream(3)]]);
        }
        r.stop_at(ms(BASE + 90_000));
        h.await.unwrap();
        let mut got = seen.lock().unwrap().clone();
        got.sort();
        assert_eq!(
            got,
            vec![("t1".into(), "t1".into(), 1), ("t2".into(), "t2".into(), 2)],
            "tablets: {tablets}"
        );
    }
}

/// A start 40 s before the clock's "now" (the builder's safety interval is 30 s): the rows
/// just after it are readable at once, and even 1 ms windows reach them quickly.
const NEAR: i64 = BASE - 40_000;

/// One builder setting at a bound: its name, how it is set, and the rows the reader must
/// deliver (0 where the setting makes every row unreadable for now).
type BoundCase = (
    &'static str,
    fn(&Env, CDCLogReaderBuilder) -> CDCLogReaderBuilder,
    usize,
);

/// Runs a reader of three rows with one setting at a bound, in a task of its own (a panic
/// is reported, not propagated): waits (paused clock) up to 60 s for `rows` rows, then
/// asks it to stop as the programs do on SIGTERM (`stop_at` in the past) and gives it 2 s
/// to end. `Err` says what went wrong: a panic, an error, rows missing, or no prompt stop.
async fn run_at_bound(case: BoundCase) -> Result<(), String> {
    let (_, configure, rows) = case;
    let task = tokio::spawn(async move {
        let e = Env::new();
        e.fetcher
            .add(g(BASE - 3_600_000), vec![vec![stream(1)], vec![stream(2)]]);
        e.log.push(row(1, (NEAR + 10) * 1000, 0, 1));
        e.log.push(row(2, (NEAR + 500) * 1000, 0, 2));
        e.log.push(row(1, (NEAR + 5_000) * 1000, 0, 3));
        let b = e
            .builder()
            .start_timestamp(ms(NEAR))
            .checkpoint_saver(e.saver.clone());
        let b = configure(&e, b);
        let (mut r, h) = e.start(b, None).await.map_err(|e| format!("start: {e}"))?;
        let began = tokio::time::Instant::now();
        while e.seen().len() < rows.max(1) && began.elapsed() < Duration::from_secs(60) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        r.stop_at(DateTime::<Utc>::UNIX_EPOCH);
        let asked = tokio::time::Instant::now();
        match tokio::time::timeout(Duration::from_secs(2), h).await {
            Err(_) => return Err("still running 2 s after stop_at".to_owned()),
            Ok(Err(e)) => return Err(format!("ended with {e}")),
            Ok(Ok(())) => {}
        }
        let seen = e.seen().len();
        if seen != rows {
            return Err(format!("{seen} rows delivered, not {rows}"));
        }
        Ok(asked.elapsed())
    });
    match task.await {
        Ok(r) => r.map(|_| ()),
        Err(e) => match e.try_into_panic() {
            Ok(payload) => Err(format!(
                "panicked: {}",
                crate::stream::error_policy::panic_message(payload.as_ref())
            )),
            Err(e) => Err(format!("task failed: {e}")),
        },
    }
}

/// Every builder setting that takes a duration or a count, at zero (where `validate`
/// accepts it), at its least and greatest accepted value: `validate` accepts it, the
/// reader runs, delivers what is readable, and stops promptly when asked.
#[tokio::test(start_paused = true)]
async fn every_setting_at_its_bounds_runs() {
    let cases: Vec<BoundCase> = vec![
        (
            "sleep_interval 0",
            |_, b| b.sleep_interval(Duration::ZERO),
            3,
        ),
        (
            "sleep_interval 1 µs",
            |_, b| b.sleep_interval(Duration::from_micros(1)),
            3,
        ),
        (
            "sleep_interval 1 day (max)",
            |_, b| b.sleep_interval(MAX_SLEEP_INTERVAL),
            3,
        ),
        (
            "window_size 1 ms (min)",
            |_, b| b.window_size(Duration::from_millis(1)),
            3,
        ),
        (
            "window_size Duration::MAX",
            |_, b| b.window_size(Duration::MAX),
            3,
        ),
        (
            "safety_interval 0",
            |_, b| b.safety_interval(Duration::ZERO),
            3,
        ),
        (
            "safety_interval Duration::MAX",
            |_, b| b.safety_interval(Duration::MAX),
            0,
        ),
        (
            "max_idle_latency 0",
            |_, b| b.max_idle_latency(Duration::ZERO),
            3,
        ),
        (
            "max_idle_latency Duration::MAX",
            |_, b| b.max_idle_latency(Duration::MAX),
            3,
        ),
        (
            "pause_between_saves 0",
            |_, b| b.pause_between_saves(Duration::ZERO),
            3,
        ),
        (
            "pause_between_saves Duration::MAX",
            |_, b| b.pause_between_saves(Duration::MAX),
            3,
        ),
        ("give_up_after 0", |_, b| b.give_up_after(Duration::ZERO), 3),
        (
            "give_up_after Duration::MAX, after a transient error",
            |e, b| {
                e.fetcher
                    .group_errors
                    .lock()
                    .unwrap()
                    .push(CDCError::Query {
                        what: "streams".into(),
                        source: Box::new(ExecutionError::RequestTimeout(Duration::from_secs(1))),
                    });
                b.give_up_after(Duration::MAX)
            },
            3,
        ),
        (
            "max_rows_per_second 1 (min)",
            |_, b| b.max_rows_per_second(1),
            3,
        ),
        (
            "max_rows_per_second u64::MAX",
            |_, b| b.max_rows_per_second(u64::MAX),
            3,
        ),
        (
            "max_partition_key_restrictions_per_query 1 (min)",
            |_, b| b.max_partition_key_restrictions_per_query(1),
            3,
        ),
        (
            "max_partition_key_restrictions_per_query usize::MAX",
            |_, b| b.max_partition_key_restrictions_per_query(usize::MAX),
            3,
        ),
        (
            "end_timestamp DateTime::MAX_UTC",
            |_, b| b.end_timestamp(DateTime::<Utc>::MAX_UTC),
            3,
        ),
        (
            "on_consumer_error u32::MAX retries, Duration::MAX apart",
            |_, b| {
                b.on_consumer_error(ConsumerErrorPolicy::stop().with_retry(u32::MAX, Duration::MAX))
            },
            3,
        ),
    ];
    let mut failures = Vec::new();
    for case in cases {
        if let Err(e) = run_at_bound(case).await {
            failures.push(format!("{}: {e}", case.0));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A window shorter than a millisecond never ends a window (bounds are whole
/// milliseconds): `validate` refuses it, and accepts 1 ms.
#[test]
fn a_window_shorter_than_a_millisecond_is_refused() {
    let e = Env::new();
    for w in [Duration::from_nanos(1), Duration::from_micros(999)] {
        let err = e.builder().window_size(w).validate().unwrap_err();
        assert!(
            err.to_string().contains("window_size must be at least 1ms"),
            "{err}"
        );
    }
    e.builder()
        .window_size(Duration::from_millis(1))
        .validate()
        .unwrap();
}

/// The lease duration is at most a day (its member rows live three lease durations, and
/// CQL TTLs are at most 20 years); zero and too long are refused, a day is accepted. The
/// renew interval is at least a millisecond.
#[test]
fn the_lease_duration_is_bounded() {
    let e = Env::new();
    let group = |lease: Duration| {
        e.builder()
            .checkpoint_saver(e.saver.clone())
            .group("g")
            .lease_table("ks", "leases")
            .lease_duration(lease)
            .validate()
    };
    let day = Duration::from_secs(24 * 3600);
    group(day).unwrap();
    for lease in [
        day + Duration::from_millis(1),
        Duration::from_secs(20 * 365 * 24 * 3600),
        Duration::MAX,
    ] {
        let err = group(lease).unwrap_err().to_string();
        assert!(
            err.contains("lease_duration must be at most 1 day"),
            "{lease:?}: {err}"
        );
    }
    let zero = group(Duration::ZERO).unwrap_err().to_string();
    assert!(zero.contains("at least 1ms"), "{zero}");
    // The renew interval: at least a millisecond (the timers' resolution).
    let renew = |renew: Duration| {
        e.builder()
            .checkpoint_saver(e.saver.clone())
            .group("g")
            .lease_table("ks", "leases")
            .renew_interval(renew)
            .validate()
    };
    renew(Duration::from_millis(1)).unwrap();
    for short in [
        Duration::ZERO,
        Duration::from_nanos(1),
        Duration::from_micros(999),
    ] {
        let err = renew(short).unwrap_err().to_string();
        assert!(err.contains("at least 1ms"), "{short:?}: {err}");
    }
}

/// Generations (and the table's CDC option) are looked for at most every
/// [`MIN_GENERATION_POLL`], however short the sleep interval, and a reader with a zero
/// sleep interval follows a new generation.
#[tokio::test(start_paused = true)]
async fn generation_polls_are_floored_and_followed_at_any_sleep_interval() {
    for sleep in [
        Duration::ZERO,
        Duration::from_micros(1),
        Duration::from_millis(50),
    ] {
        let e = Env::new();
        e.fetcher.add(g(BASE - 3_600_000), vec![vec![stream(1)]]);
        e.log.push(row(3, (BASE + 16_000) * 1000, 0, 1));
        let b = e
            .builder()
            .sleep_interval(sleep)
            .start_timestamp(ms(BASE - 60_000));
        let (mut r, h) = e.start(b, None).await.unwrap();
        let at_start = e.fetcher.polls.load(Ordering::Relaxed);
        tokio::time::sleep(Duration::from_secs(10)).await;
        let polls = e.fetcher.polls.load(Ordering::Relaxed) - at_start;
        assert!(
            (95..=101).contains(&polls),
            "sleep {sleep:?}: {polls} generation polls in 10 s"
        );
        // Published ahead of its start, as Scylla does.
        e.fetcher.add(g(BASE + 15_000), vec![vec![stream(3)]]);
        r.stop_at(ms(BASE + 17_000));
        tokio::time::timeout(Duration::from_secs(60), h)
            .await
            .expect("the reader did not reach its end")
            .unwrap();
        let vs: Vec<i32> = e.seen().iter().filter_map(|s| s.3).collect();
        assert_eq!(vs, [1], "sleep {sleep:?}");
    }
}

#[test]
fn the_longest_idle_pause_follows_max_idle_latency() {
    let s = Duration::from_secs;
    assert_eq!(
        CDCLogReaderBuilder::new().max_idle_pause(),
        DEFAULT_SLEEP_INTERVAL
    );
    let b = CDCLogReaderBuilder::new().max_idle_latency(s(120));
    assert_eq!(b.max_idle_pause(), s(90));
    let b = CDCLogReaderBuilder::new().max_idle_latency(s(5));
    assert_eq!(b.max_idle_pause(), DEFAULT_SLEEP_INTERVAL);
}
