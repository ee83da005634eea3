use super::*;
use crate::base::time::TokioClock;
use crate::base::time::tests::timeuuid;
use crate::checkpoints::tests::MemorySaver;
use crate::consumer::Consumer;
use crate::consumer::tests::{TestRow, log_specs};
use crate::stream::page::{LogPage, LogSource};
use async_trait::async_trait;
use scylla::errors::ExecutionError;
use std::collections::VecDeque;
use std::sync::Mutex;

use crate::stream::early::EarlyReads;

/// What a fake source does for one request.
pub(crate) enum Scripted {
    /// Fail with this error.
    Fail(ExecutionError),
}

/// A request the fake log got: streams, window, and whether it continued a paging state.
pub(crate) type Request = (Vec<StreamID>, DateTime<Utc>, DateTime<Utc>, bool);

/// An in-memory log: rows by stream, split in pages of `page_size`; errors can be
/// scripted for the next requests. `std` mutexes, never held across `.await`.
pub(crate) struct FakeLog {
    pub(crate) rows: Mutex<Vec<TestRow>>,
    pub(crate) page_size: usize,
    pub(crate) script: Mutex<VecDeque<Scripted>>,
    pub(crate) requests: Mutex<Vec<Request>>,
    specs: Arc<Vec<ColumnSpec<'static>>>,
}

impl FakeLog {
    pub(crate) fn new(page_size: usize) -> Self {
        Self {
            rows: Mutex::new(Vec::new()),
            page_size,
            script: Mutex::new(VecDeque::new()),
            requests: Mutex::new(Vec::new()),
            specs: Arc::new(log_specs()),
        }
    }

    pub(crate) fn push(&self, row: TestRow) {
        self.rows.lock().unwrap().push(row);
    }
}

#[async_trait]
impl LogSource for FakeLog {
    async fn fetch_page(
        &self,
        streams: &[StreamID],
        start: DateTime<Utc>,
        end: DateTime<Utc>,
        paging: PagingState,
    ) -> Result<(LogPage, PagingStateResponse), ExecutionError> {
        let offset = paging
            .as_bytes_slice()
            .map(|b| u32::from_be_bytes(b[..4].try_into().unwrap()) as usize)
            .unwrap_or(0);
        self.requests
            .lock()
            .unwrap()
            .push((streams.to_vec(), start, end, offset > 0));
        if let Some(Scripted::Fail(e)) = self.script.lock().unwrap().pop_front() {
            return Err(e);
        }
        let smin = start.timestamp_millis() * 1000;
        let emin = end.timestamp_millis() * 1000;
        let mut matching: Vec<TestRow> = self
            .rows
            .lock()
            .unwrap()
            .iter()
            .filter(|r| streams.contains(&StreamID::new(r.stream)))
            .filter(|r| {
                let m = crate::base::time::timeuuid_micros(&r.time);
                m >= smin && m < emin
            })
            .cloned()
            .collect();
        matching.sort_by_key(|r| (r.stream, ChangeKey::new(&r.time, r.seq)));
        let page: Vec<Vec<u8>> = matching
            .iter()
            .skip(offset)
            .take(self.page_size)
            .map(|r| r.serialize())
            .collect();
        let next_offset = offset + page.len();
        let next = if next_offset < matching.len() {
            PagingStateResponse::HasMorePages {
                state: PagingState::new_from_raw_bytes((next_offset as u32).to_be_bytes().to_vec()),
            }
        } else {
            PagingStateResponse::NoMorePages
        };
        Ok((
            LogPage::Raw {
                specs: self.specs.clone(),
                rows: page,
            },
            next,
        ))
    }
}

/// A delivered row: stream byte, time micros, seq, value of `v`.
pub(crate) type Seen = (u8, i64, i32, Option<i32>);

/// Records rows; fails on the row whose `v` equals `fail_on`.
pub(crate) struct Recorder {
    pub(crate) seen: Arc<Mutex<Vec<Seen>>>,
    pub(crate) fail_on: Option<i32>,
}

#[async_trait]
impl Consumer for Recorder {
    async fn consume_cdc(&mut self, row: CDCRow<'_>) -> anyhow::Result<()> {
        let v = row.get_value_as::<i32>("v")?;
        if v.is_some() && v == self.fail_on {
            anyhow::bail!("consumer refused v={v:?}");
        }
        self.seen.lock().unwrap().push((
            row.stream_id.as_bytes()[0],
            crate::base::time::timeuuid_micros(&row.time),
            row.batch_seq_no,
            v,
        ));
        Ok(())
    }
}

pub(crate) fn ms(v: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(v).unwrap()
}

pub(crate) fn stream(b: u8) -> StreamID {
    StreamID::new([b; 16])
}

/// A row of stream `[s; 16]` at `micros`, seq `seq`, with `v`.
pub(crate) fn row(s: u8, micros: i64, seq: i32, v: i32) -> TestRow {
    let mut r = TestRow::new([s; 16], timeuuid(micros, 0x1111 * s as u64), seq);
    r.v = Some(v);
    r
}

pub(crate) const BASE: i64 = 1_700_000_000_000;

struct Setup {
    log: Arc<FakeLog>,
    saver: Arc<MemorySaver>,
    end_tx: watch::Sender<Option<DateTime<Utc>>>,
    gen_end_tx: watch::Sender<Option<DateTime<Utc>>>,
    seen: Arc<Mutex<Vec<Seen>>>,
    stats: Arc<Stats>,
}

pub(crate) fn settings(
    log: Arc<FakeLog>,
    saver: Arc<MemorySaver>,
    end: watch::Receiver<Option<DateTime<Utc>>>,
) -> ReaderSettings {
    let clock: Arc<TokioClock> = Arc::new(TokioClock::starting_at(ms(BASE)));
    ReaderSettings {
        table: Arc::from("t"),
        window_size: Duration::from_secs(60),
        safety_interval: Duration::from_secs(30),
        sleep_interval: Duration::from_secs(10),
        max_idle_pause: Duration::from_secs(10),
        pause_between_saves: Duration::from_secs(10),
        saver: Some(saver),
        clock: clock.clone(),
        source: log,
        end,
        give_up_after: None,
        stats: Arc::new(Stats::new("ks", "t", clock, Duration::from_secs(30))),
        limiter: None,
        on_error: ConsumerErrorPolicy::default(),
        keyspace: Arc::from("ks"),
        prefetch: Arc::new(tokio::sync::Semaphore::new(PREFETCH_PAGES)),
        early: None,
    }
}

/// The slot of the only stream group of a test reader.
pub(crate) fn slot(settings: &ReaderSettings, start: DateTime<Utc>) -> Slot {
    settings
        .stats
        .begin_generation(1, &[start], false)
        .remove(0)
}

fn reader(
    page_size: usize,
    streams: Vec<StreamID>,
    start: DateTime<Utc>,
    fail_on: Option<i32>,
) -> (Setup, StreamReader) {
    let log = Arc::new(FakeLog::new(page_size));
    let saver = Arc::new(MemorySaver::default());
    let (end_tx, end_rx) = watch::channel(None);
    let (gen_end_tx, gen_end_rx) = watch::channel(None);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let settings = settings(log.clone(), saver.clone(), end_rx);
    let slot = slot(&settings, start);
    let stats = settings.stats.clone();
    let r = StreamReader::new(
        settings,
        streams,
        GenerationTimestamp::new(ms(0)),
        gen_end_rx,
        start,
        Sink::Rows(Box::new(Recorder {
            seen: seen.clone(),
            fail_on,
        })),
        slot,
    );
    (
        Setup {
            log,
            saver,
            end_tx,
            gen_end_tx,
            seen,
            stats,
        },
        r,
    )
}

/// A consumer that only "applies" rows when flushed, like a pipelining writer.
struct Buffering {
    pending: Vec<i64>,
    applied: Arc<Mutex<Vec<i64>>>,
    fail_flush: bool,
}

#[async_trait]
impl Consumer for Buffering {
    async fn consume_cdc(&mut self, row: CDCRow<'_>) -> anyhow::Result<()> {
        self.pending
            .push(crate::base::time::timeuuid_micros(&row.time));
        Ok(())
    }

    async fn flush(&mut self) -> anyhow::Result<()> {
        if self.fail_flush {
            anyhow::bail!("destination unreachable");
        }
        self.applied.lock().unwrap().append(&mut self.pending);
        Ok(())
    }
}

/// Checks, at every save, that the consumer applied every row before the checkpoint.
struct CheckingSaver {
    applied: Arc<Mutex<Vec<i64>>>,
    rows: Vec<i64>,
    saves: Mutex<Vec<DateTime<Utc>>>,
}

#[async_trait]
impl CDCCheckpointSaver for CheckingSaver {
    async fn save_checkpoint(&self, checkpoint: &Checkpoint) -> anyhow::Result<()> {
        let applied = self.applied.lock().unwrap();
        let until = checkpoint.timestamp.timestamp_millis() * 1000;
        for r in self.rows.iter().filter(|r| **r < until) {
            assert!(
                applied.contains(r),
                "checkpoint {until} saved before row {r} was applied"
            );
        }
        self.saves.lock().unwrap().push(checkpoint.timestamp);
        Ok(())
    }
    async fn save_new_generation(&self, _: &GenerationTimestamp) -> anyhow::Result<()> {
        Ok(())
    }
    async fn load_last_generation(&self) -> anyhow::Result<Option<GenerationTimestamp>> {
        Ok(None)
    }
    async fn load_last_checkpoint(&self, _: &[StreamID]) -> anyhow::Result<Option<DateTime<Utc>>> {
        Ok(None)
    }
}

/// What `flushing_reader` returns: applied rows, the saver, all row times, the reader
/// and the sender of its end.
type FlushingSetup = (
    Arc<Mutex<Vec<i64>>>,
    Arc<CheckingSaver>,
    Vec<i64>,
    StreamReader,
    watch::Sender<Option<DateTime<Utc>>>,
);

fn flushing_reader(fail_flush: bool) -> FlushingSetup {
    let log = Arc::new(FakeLog::new(3));
    let start_us = (BASE - 600_000) * 1000;
    let rows: Vec<i64> = (0..20).map(|i| start_us + i * 25_000_000).collect();
    for (i, t) in rows.iter().enumerate() {
        log.push(row(1, *t, 0, i as i32));
    }
    let applied = Arc::new(Mutex::new(Vec::new()));
    let saver = Arc::new(CheckingSaver {
        applied: applied.clone(),
        rows: rows.clone(),
        saves: Mutex::new(Vec::new()),
    });
    let (end_tx, end_rx) = watch::channel(None);
    let (_gen_tx, gen_rx) = watch::channel(None);
    let mut settings = settings(log, Arc::new(MemorySaver::default()), end_rx);
    settings.saver = Some(saver.clone());
    settings.pause_between_saves = Duration::ZERO;
    let slot = slot(&settings, ms(BASE - 600_000));
    let r = StreamReader::new(
        settings,
        vec![stream(1)],
        GenerationTimestamp::new(ms(0)),
        gen_rx,
        ms(BASE - 600_000),
        Sink::Rows(Box::new(Buffering {
            pending: Vec::new(),
            applied: applied.clone(),
            fail_flush,
        })),
        slot,
    );
    (applied, saver, rows, r, end_tx)
}

#[tokio::test(start_paused = true)]
async fn consumer_is_flushed_before_every_checkpoint_and_at_the_end() {
    let (applied, saver, rows, r, end_tx) = flushing_reader(false);
    end_tx.send(Some(ms(BASE - 60_000))).unwrap();
    r.run().await.unwrap();
    assert!(saver.saves.lock().unwrap().len() >= 5);
    assert_eq!(*applied.lock().unwrap(), rows);
}

#[tokio::test(start_paused = true)]
async fn a_failed_flush_stops_the_reader_without_a_checkpoint() {
    let (_applied, saver, _rows, r, end_tx) = flushing_reader(true);
    end_tx.send(Some(ms(BASE - 60_000))).unwrap();
    let err = r.run().await.unwrap_err();
    assert!(matches!(err, CDCError::ConsumerFlush { .. }), "{err}");
    assert!(err.to_string().contains("destination unreachable"));
    assert!(saver.saves.lock().unwrap().is_empty());
}

#[tokio::test(start_paused = true)]
async fn delivers_every_row_in_order_across_pages() {
    let (s, r) = reader(2, vec![stream(1), stream(2)], ms(BASE - 3_600_000), None);
    let start_us = (BASE - 3_600_000) * 1000;
    for i in 0..7 {
        s.log.push(row(2, start_us + i * 1_000_000, 0, i as i32));
        s.log
            .push(row(1, start_us + i * 1_000_000, 1, 100 + i as i32));
        s.log
            .push(row(1, start_us + i * 1_000_000, 0, 200 + i as i32));
    }
    s.end_tx.send(Some(ms(BASE - 3_000_000))).unwrap();
    r.run().await.unwrap();
    let seen = s.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 21);
    for st in [1u8, 2] {
        let keys: Vec<(i64, i32)> = seen
            .iter()
            .filter(|x| x.0 == st)
            .map(|x| (x.1, x.2))
            .collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted, "stream {st} out of order");
    }
    // Prefetching asked for later pages.
    assert!(s.log.requests.lock().unwrap().iter().any(|r| r.3));
    // Stream 1 has two rows per `cdc$time`: 14 changes in 21 rows.
    let p = s.stats.snapshot();
    assert_eq!((p.rows, p.changes), (21, 14));
    assert_eq!(p.windows, 10);
    assert_eq!(
        p.low_watermark,
        Some(ms(BASE - 3_000_000) - chrono::TimeDelta::microseconds(1))
    );
}

/// Records, at each row, how many page requests the log has had; yields first, so that
/// a prefetch started beside the consumer gets to send its request.
struct Watching {
    log: Arc<FakeLog>,
    requests_at_row: Arc<Mutex<Vec<usize>>>,
}

#[async_trait]
impl Consumer for Watching {
    async fn consume_cdc(&mut self, _row: CDCRow<'_>) -> anyhow::Result<()> {
        tokio::task::yield_now().await;
        let n = self.log.requests.lock().unwrap().len();
        self.requests_at_row.lock().unwrap().push(n);
        Ok(())
    }
}

/// Reads 4 rows in pages of 2 with `permits` prefetch permits; the requests at each row.
async fn requests_at_each_row(permits: usize) -> Vec<usize> {
    let log = Arc::new(FakeLog::new(2));
    let start = ms(BASE - 600_000);
    let start_us = (BASE - 600_000) * 1000;
    for i in 0..4 {
        log.push(row(1, start_us + i * 1_000_000, 0, i as i32));
    }
    let (end_tx, end_rx) = watch::channel(None);
    let (_gen_tx, gen_rx) = watch::channel(None);
    let mut settings = settings(log.clone(), Arc::new(MemorySaver::default()), end_rx);
    settings.prefetch = Arc::new(tokio::sync::Semaphore::new(permits));
    let slot = slot(&settings, start);
    let requests_at_row = Arc::new(Mutex::new(Vec::new()));
    let r = StreamReader::new(
        settings,
        vec![stream(1)],
        GenerationTimestamp::new(ms(0)),
        gen_rx,
        start,
        Sink::Rows(Box::new(Watching {
            log,
            requests_at_row: requests_at_row.clone(),
        })),
        slot,
    );
    end_tx.send(Some(ms(BASE - 60_000))).unwrap();
    r.run().await.unwrap();
    requests_at_row.lock().unwrap().clone()
}

#[tokio::test(start_paused = true)]
async fn a_group_prefetches_its_next_page_only_with_a_permit() {
    // With a permit, the second page is asked for while the first page is handled.
    assert_eq!(requests_at_each_row(1).await, [2, 2, 2, 2]);
    // Without one (every permit taken by other groups), only once it is handled.
    assert_eq!(requests_at_each_row(0).await, [1, 1, 2, 2]);
}

#[tokio::test(start_paused = true)]
async fn the_rate_limit_caps_delivery_and_page_requests() {
    let log = Arc::new(FakeLog::new(50));
    let start_us = (BASE - 3_600_000) * 1000;
    for i in 0..2000 {
        log.push(row(1, start_us + i * 1000, 0, i as i32));
    }
    let (_end_tx, end_rx) = watch::channel(Some(ms(BASE - 3_000_000)));
    let (_gen_tx, gen_rx) = watch::channel(None);
    let mut settings = settings(log.clone(), Arc::new(MemorySaver::default()), end_rx);
    settings.limiter = Some(Arc::new(RateLimiter::new(100)));
    let start = ms(BASE - 3_600_000);
    let slot = slot(&settings, start);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let r = StreamReader::new(
        settings,
        vec![stream(1)],
        GenerationTimestamp::new(ms(0)),
        gen_rx,
        start,
        Sink::Rows(Box::new(Recorder {
            seen: seen.clone(),
            fail_on: None,
        })),
        slot,
    );
    let task = tokio::spawn(r.run());
    let t0 = Instant::now();
    for second in 1..=10u64 {
        tokio::time::sleep_until(t0 + Duration::from_secs(second)).await;
        let delivered = seen.lock().unwrap().len() as u64;
        // 100 rows per second after a burst of 10.
        assert!(
            (100 * second - 2..=100 * second + 10).contains(&delivered),
            "{delivered} rows after {second} s"
        );
        // A page is requested only once the previous one is paid for.
        let requested = log.requests.lock().unwrap().len() as u64 * 50;
        assert!(
            requested <= delivered + 10 + 50,
            "{requested} rows requested"
        );
    }
    task.abort();
}

#[tokio::test(start_paused = true)]
async fn catches_up_without_sleeping_between_windows() {
    // 2 hours of backlog, 60 s windows: 120 windows, none of them followed by a sleep.
    let start = ms(BASE - 7_200_000);
    let (s, r) = reader(100, vec![stream(1)], start, None);
    s.log.push(row(1, (BASE - 7_200_000) * 1000, 0, 1));
    s.log.push(row(1, (BASE - 40_000) * 1000, 0, 2));
    s.end_tx.send(Some(ms(BASE - 30_000))).unwrap();
    let before = Instant::now();
    r.run().await.unwrap();
    assert_eq!(s.seen.lock().unwrap().len(), 2);
    // Paused clock: time only advances when the reader sleeps.
    assert!(
        before.elapsed() < Duration::from_secs(1),
        "{:?}",
        before.elapsed()
    );
    let windows = s.log.requests.lock().unwrap().len();
    assert_eq!(windows, 120);
}

#[test]
fn the_idle_pause_doubles_up_to_its_bound() {
    let s = Duration::from_secs;
    let pauses: Vec<_> = (0..6)
        .map(|empty| backoff_pause(s(10), s(60), empty))
        .collect();
    assert_eq!(pauses, [s(10), s(20), s(40), s(60), s(60), s(60)]);
    // A bound below the sleep interval: no back-off.
    assert_eq!(backoff_pause(s(10), s(5), 3), s(10));
    assert_eq!(backoff_pause(Duration::ZERO, s(60), 3), Duration::ZERO);
    assert_eq!(
        backoff_pause(s(10), Duration::MAX, u32::MAX),
        s(10) * (1 << 31)
    );
}

#[tokio::test(start_paused = true)]
async fn an_idle_group_backs_off_and_is_eager_again_at_its_first_row() {
    let log = Arc::new(FakeLog::new(100));
    let saver = Arc::new(MemorySaver::default());
    let (end_tx, end_rx) = watch::channel(None);
    let (_gen_end_tx, gen_end_rx) = watch::channel(None);
    let mut settings = settings(log.clone(), saver, end_rx);
    settings.max_idle_pause = Duration::from_secs(80);
    let start = ms(BASE - 30_000);
    let slot = slot(&settings, start);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let reader = StreamReader::new(
        settings,
        vec![stream(1)],
        GenerationTimestamp::new(ms(0)),
        gen_end_rx,
        start,
        Sink::Rows(Box::new(Recorder {
            seen: seen.clone(),
            fail_on: None,
        })),
        slot,
    );
    // Idle for 10 minutes, then one row, then idle again.
    let row_at = BASE + 600_000;
    log.push(row(1, row_at * 1000, 0, 1));
    end_tx.send(Some(ms(BASE + 900_000))).unwrap();
    reader.run().await.unwrap();
    assert_eq!(seen.lock().unwrap().len(), 1);
    let ends: Vec<i64> = log
        .requests
        .lock()
        .unwrap()
        .iter()
        .map(|(_, _, end, _)| end.timestamp_millis())
        .collect();
    // Without back-off a request every 10 s: about 90. With it: 10, 20, 40, 80, 80, ...
    assert!(ends.len() < 40, "{} requests: {ends:?}", ends.len());
    // The row was read at most the longest pause after it became readable.
    let read = ends.iter().position(|e| *e > row_at).expect("read");
    assert!(
        ends[read] - row_at <= 80_000,
        "read {} ms after readable",
        ends[read] - row_at
    );
    // Eager again right after it: once caught up (the read of the row may be a whole
    // window, then the rest up to now), the next read one sleep interval later.
    let next = (ends[read + 1] - ends[read]).min(ends[read + 2] - ends[read + 1]);
    assert!(next <= 10_000 + 100, "{ends:?}");
    // Windows never passed 80 s apart (an 80 s pause is read as a 60 s window and the
    // rest).
    assert!(
        ends.windows(2).all(|w| w[1] - w[0] <= 80_000 + 100),
        "{ends:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn waits_for_safety_interval_then_reads() {
    let (s, r) = reader(100, vec![stream(1)], ms(BASE - 1_000), None);
    // A row written 5 s in the future is only read once now - 30 s passes it.
    s.log.push(row(1, (BASE + 5_000) * 1000, 0, 7));
    s.end_tx.send(Some(ms(BASE + 6_000))).unwrap();
    let before = Instant::now();
    r.run().await.unwrap();
    assert_eq!(s.seen.lock().unwrap().len(), 1);
    let waited = before.elapsed();
    assert!(
        waited >= Duration::from_secs(36) && waited <= Duration::from_secs(50),
        "{waited:?}"
    );
    // Every window respected the safety interval.
    for (_, _, end, _) in s.log.requests.lock().unwrap().iter() {
        assert!(*end <= ms(BASE + 6_000));
    }
}

#[tokio::test(start_paused = true)]
async fn stops_at_generation_end_and_saves_final_checkpoint() {
    let (s, r) = reader(100, vec![stream(1)], ms(BASE - 600_000), None);
    s.log.push(row(1, (BASE - 500_000) * 1000, 0, 1));
    s.log.push(row(1, (BASE - 100_000) * 1000, 0, 2)); // next generation's time: not read
    s.gen_end_tx.send(Some(ms(BASE - 200_000))).unwrap();
    r.run().await.unwrap();
    assert_eq!(s.seen.lock().unwrap().len(), 1);
    let saves = s.saver.saves.lock().unwrap().clone();
    assert_eq!(saves.last().unwrap().timestamp, ms(BASE - 200_000));
    // Throttled: 400 s of windows with no sleep saves far fewer than one per window.
    assert!(saves.len() <= 2, "{}", saves.len());
}

#[tokio::test(start_paused = true)]
async fn transient_errors_are_retried_without_loss_or_duplicates() {
    let (s, r) = reader(2, vec![stream(1)], ms(BASE - 100_000), None);
    for i in 0..6 {
        s.log.push(row(1, (BASE - 90_000 + i) * 1000, 0, i as i32));
    }
    {
        let mut script = s.log.script.lock().unwrap();
        script.push_back(Scripted::Fail(ExecutionError::RequestTimeout(
            Duration::from_secs(1),
        )));
        script.push_back(Scripted::Fail(ExecutionError::LastAttemptError(
            scylla::errors::RequestAttemptError::DbError(
                scylla::errors::DbError::Overloaded,
                "busy".into(),
            ),
        )));
    }
    s.end_tx.send(Some(ms(BASE - 40_000))).unwrap();
    r.run().await.unwrap();
    let vs: Vec<Option<i32>> = s.seen.lock().unwrap().iter().map(|x| x.3).collect();
    assert_eq!(vs, (0..6).map(Some).collect::<Vec<_>>());
    let p = s.stats.snapshot();
    assert_eq!((p.retries, p.rows, p.changes), (2, 6, 6));
}

#[tokio::test(start_paused = true)]
async fn permanent_error_names_streams_and_window() {
    let (s, r) = reader(2, vec![stream(1)], ms(BASE - 100_000), None);
    s.log
        .script
        .lock()
        .unwrap()
        .push_back(Scripted::Fail(ExecutionError::LastAttemptError(
            scylla::errors::RequestAttemptError::DbError(
                scylla::errors::DbError::Invalid,
                "bad".into(),
            ),
        )));
    let err = r.run().await.unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, CDCError::LogRead { .. }), "{msg}");
    assert!(msg.contains("0x0101"), "{msg}");
    let _keep = s;
}

#[tokio::test(start_paused = true)]
async fn consumer_error_stops_the_reader() {
    let (s, r) = reader(10, vec![stream(3)], ms(BASE - 100_000), Some(2));
    for i in 0..5 {
        s.log.push(row(3, (BASE - 90_000 + i) * 1000, 0, i as i32));
    }
    let err = r.run().await.unwrap_err();
    assert!(matches!(err, CDCError::Consumer { stream, .. } if stream == super::tests::stream(3)));
    assert!(err.to_string().contains("consumer refused"));
    assert_eq!(s.seen.lock().unwrap().len(), 2);
    let p = s.stats.snapshot();
    assert_eq!((p.consumer_errors, p.rows), (1, 2));
}

/// A consumer that fails on some values: `failures[v]` times (u32::MAX: always), or
/// panics on `panic_on`.
struct Flaky {
    failures: std::collections::HashMap<i32, u32>,
    panic_on: Option<i32>,
    attempts: Arc<Mutex<Vec<i32>>>,
    seen: Arc<Mutex<Vec<i32>>>,
}

#[async_trait]
impl Consumer for Flaky {
    async fn consume_cdc(&mut self, row: CDCRow<'_>) -> anyhow::Result<()> {
        let v = row.get_value_as::<i32>("v")?.unwrap_or_default();
        self.attempts.lock().unwrap().push(v);
        if self.panic_on == Some(v) {
            panic!("consumer bug on v={v}");
        }
        if let Some(left) = self.failures.get_mut(&v)
            && *left > 0
        {
            *left = left.saturating_sub(1);
            anyhow::bail!("cannot take v={v}");
        }
        self.seen.lock().unwrap().push(v);
        Ok(())
    }
}

/// Dead letters kept in memory; fails `fail_first` writes (transiently or not).
#[derive(Default)]
pub(crate) struct MemorySink {
    pub(crate) letters: Mutex<Vec<DeadLetter>>,
    pub(crate) fail_first: Mutex<u32>,
    pub(crate) permanent: bool,
}

#[async_trait]
impl crate::DeadLetterSink for MemorySink {
    async fn write(&self, letter: &DeadLetter) -> anyhow::Result<()> {
        {
            let mut left = self.fail_first.lock().unwrap();
            if *left > 0 {
                *left -= 1;
                anyhow::bail!("sink down");
            }
        }
        self.letters.lock().unwrap().push(letter.clone());
        Ok(())
    }

    fn is_transient(&self, _: &anyhow::Error) -> bool {
        !self.permanent
    }
}

struct PolicyRun {
    result: Result<(), CDCError>,
    attempts: Vec<i32>,
    seen: Vec<i32>,
    stats: Progress2,
    saves: Vec<DateTime<Utc>>,
}

type Progress2 = crate::report::progress::Progress;

/// Runs a reader over rows v = 0..5 (one per second from BASE - 90 s) of one stream with
/// `consumer` settings and `policy`, until BASE - 60 s.
async fn run_policy(
    failures: &[(i32, u32)],
    panic_on: Option<i32>,
    policy: ConsumerErrorPolicy,
) -> PolicyRun {
    let log = Arc::new(FakeLog::new(2));
    for i in 0..5 {
        log.push(row(4, (BASE - 90_000 + i * 1000) * 1000, 0, i as i32));
    }
    let saver = Arc::new(MemorySaver::default());
    let (end_tx, end_rx) = watch::channel(Some(ms(BASE - 60_000)));
    let (_gen_tx, gen_rx) = watch::channel(None);
    let mut settings = settings(log, saver.clone(), end_rx);
    settings.on_error = policy;
    settings.pause_between_saves = Duration::ZERO;
    settings.window_size = Duration::from_secs(2);
    let start = ms(BASE - 100_000);
    let slot = slot(&settings, start);
    let stats = settings.stats.clone();
    let attempts = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let r = StreamReader::new(
        settings,
        vec![stream(4)],
        GenerationTimestamp::new(ms(0)),
        gen_rx,
        start,
        Sink::Rows(Box::new(Flaky {
            failures: failures.iter().copied().collect(),
            panic_on,
            attempts: attempts.clone(),
            seen: seen.clone(),
        })),
        slot,
    );
    let result = r.run().await;
    drop(end_tx);
    let saves = saver
        .saves
        .lock()
        .unwrap()
        .iter()
        .map(|c| c.timestamp)
        .collect();
    let attempts = attempts.lock().unwrap().clone();
    let seen = seen.lock().unwrap().clone();
    PolicyRun {
        result,
        attempts,
        seen,
        stats: stats.snapshot(),
        saves,
    }
}

/// The micros of row v of [`run_policy`].
fn policy_row_time(v: i64) -> DateTime<Utc> {
    ms(BASE - 90_000 + v * 1000)
}

#[tokio::test(start_paused = true)]
async fn a_row_that_fails_twice_is_retried_and_delivered_once() {
    let run = run_policy(&[(2, 2)], None, ConsumerErrorPolicy::default()).await;
    run.result.unwrap();
    assert_eq!(run.seen, vec![0, 1, 2, 3, 4]);
    assert_eq!(run.attempts, vec![0, 1, 2, 2, 2, 3, 4]);
    assert_eq!(
        (run.stats.consumer_retries, run.stats.consumer_errors),
        (2, 0)
    );
}

#[tokio::test(start_paused = true)]
async fn stop_names_the_row_and_never_checkpoints_past_it() {
    let policy = ConsumerErrorPolicy::stop().with_retry(2, Duration::from_secs(1));
    let started = Instant::now();
    let run = run_policy(&[(3, u32::MAX)], None, policy).await;
    let err = run.result.unwrap_err();
    // Retried after 1 s, then 2 s.
    assert!(started.elapsed() >= Duration::from_secs(3));
    match &err {
        CDCError::Consumer {
            table,
            stream: s,
            time,
            batch_seq_no,
            attempts,
            ..
        } => {
            assert_eq!(table, "t");
            assert_eq!(*s, stream(4));
            assert_eq!(
                crate::base::time::timeuuid_micros(time),
                policy_row_time(3).timestamp_micros()
            );
            assert_eq!((*batch_seq_no, *attempts), (0, 3));
        }
        other => panic!("unexpected error {other:?}"),
    }
    let text = err.to_string();
    assert!(
        text.contains("ks.t") && text.contains("cannot take v=3"),
        "{text}"
    );
    assert_eq!(run.seen, vec![0, 1, 2]);
    assert_eq!(run.attempts.iter().filter(|v| **v == 3).count(), 3);
    assert!(
        !run.saves.is_empty(),
        "checkpoints before the row are saved"
    );
    assert!(
        run.saves.iter().all(|t| *t <= policy_row_time(3)),
        "a checkpoint passed the failed row: {:?}",
        run.saves
    );
    assert_eq!(
        (run.stats.consumer_errors, run.stats.consumer_retries),
        (1, 2)
    );
}

#[tokio::test(start_paused = true)]
async fn skip_goes_on_and_counts() {
    let run = run_policy(&[(1, u32::MAX)], None, ConsumerErrorPolicy::skip()).await;
    run.result.unwrap();
    assert_eq!(run.seen, vec![0, 2, 3, 4]);
    assert_eq!(run.stats.rows_skipped, 1);
    assert_eq!(run.stats.consumer_errors, 0);
    assert_eq!(run.saves.last(), Some(&ms(BASE - 60_000)));
}

#[tokio::test(start_paused = true)]
async fn dead_letters_hold_the_row_and_the_error() {
    let sink = Arc::new(MemorySink {
        fail_first: Mutex::new(2),
        ..MemorySink::default()
    });
    let policy =
        ConsumerErrorPolicy::dead_letter(sink.clone()).with_retry(1, Duration::from_millis(10));
    let run = run_policy(&[(2, u32::MAX), (4, u32::MAX)], None, policy).await;
    run.result.unwrap();
    assert_eq!(run.seen, vec![0, 1, 3]);
    let letters = sink.letters.lock().unwrap().clone();
    assert_eq!(letters.len(), 2);
    let l = &letters[0];
    assert_eq!((l.keyspace.as_str(), l.table.as_str()), ("ks", "t"));
    assert_eq!(l.stream_id, stream(4));
    assert_eq!(
        crate::base::time::timeuuid_micros(&l.time),
        policy_row_time(2).timestamp_micros()
    );
    assert_eq!((l.batch_seq_no, l.attempts), (0, 2));
    assert_eq!(l.operation, crate::OperationType::RowUpdate);
    assert!(l.error.contains("cannot take v=2"), "{}", l.error);
    assert!(l.columns.contains(&("v".to_owned(), "2".to_owned())));
    assert_eq!(run.stats.rows_dead_lettered, 2);
}

#[tokio::test(start_paused = true)]
async fn a_dead_letter_that_cannot_be_written_stops_the_reader() {
    let sink = Arc::new(MemorySink {
        fail_first: Mutex::new(1),
        permanent: true,
        ..MemorySink::default()
    });
    let run = run_policy(
        &[(2, u32::MAX)],
        None,
        ConsumerErrorPolicy::dead_letter(sink),
    )
    .await;
    let err = run.result.unwrap_err();
    assert!(matches!(err, CDCError::DeadLetter { .. }), "{err}");
    assert!(err.to_string().contains("sink down"), "{err}");
    assert!(run.saves.iter().all(|t| *t <= policy_row_time(2)));
}

#[tokio::test(start_paused = true)]
async fn a_panicking_consumer_is_an_error_of_its_row() {
    let run = run_policy(&[], Some(1), ConsumerErrorPolicy::stop()).await;
    let err = run.result.unwrap_err();
    assert!(matches!(err, CDCError::Consumer { .. }), "{err}");
    assert!(
        err.to_string().contains("panicked: consumer bug on v=1"),
        "{err}"
    );
    let run = run_policy(&[], Some(1), ConsumerErrorPolicy::skip()).await;
    run.result.unwrap();
    assert_eq!(run.seen, vec![0, 2, 3, 4]);
    assert_eq!(run.stats.rows_skipped, 1);
}

#[test]
fn a_zero_sleep_waits_until_the_next_window_is_readable() {
    let (t, safety) = (ms(BASE), Duration::from_secs(30));
    let ten = Duration::from_secs(10);
    assert_eq!(idle_pause(ten, t, ms(BASE), safety), ten);
    let zero = Duration::ZERO;
    assert_eq!(
        idle_pause(zero, t, ms(BASE + 29_700), safety),
        Duration::from_millis(300)
    );
    assert_eq!(
        idle_pause(zero, t, ms(BASE + 30_000), safety),
        Duration::from_millis(1)
    );
    assert_eq!(
        idle_pause(zero, t, ms(BASE), safety),
        Duration::from_secs(1)
    );
}

#[tokio::test(start_paused = true)]
async fn unusable_rows_are_skipped_not_fatal() {
    let (s, r) = reader(10, vec![stream(1)], ms(BASE - 100_000), None);
    s.log.push(row(1, (BASE - 90_000) * 1000, 0, 1));
    let mut unknown = row(1, (BASE - 89_000) * 1000, 0, 2);
    unknown.op = 77;
    s.log.push(unknown);
    // A row of a stream that was not asked for cannot come from a correct server, but if
    // it does it is skipped.
    s.log
        .rows
        .lock()
        .unwrap()
        .push(row(9, (BASE - 88_000) * 1000, 0, 3));
    s.end_tx.send(Some(ms(BASE - 40_000))).unwrap();
    r.run().await.unwrap();
    let vs: Vec<Option<i32>> = s.seen.lock().unwrap().iter().map(|x| x.3).collect();
    // The unknown operation is delivered (as OperationType::Unknown).
    assert_eq!(vs, vec![Some(1), Some(2)]);
}

#[test]
fn cells_are_read_as_a_rows_message_holds_them() {
    let mut bytes = Vec::new();
    bytes.extend_from_slice(&3i32.to_be_bytes());
    bytes.extend_from_slice(b"abc");
    bytes.extend_from_slice(&(-1i32).to_be_bytes());
    bytes.extend_from_slice(&0i32.to_be_bytes());
    bytes.extend_from_slice(&5i32.to_be_bytes());
    bytes.extend_from_slice(b"xy");
    let (a, rest) = next_cell(&bytes).unwrap();
    assert_eq!(a, Some(&b"abc"[..]));
    let (null, rest) = next_cell(rest).unwrap();
    assert_eq!(null, None);
    let (empty, rest) = next_cell(rest).unwrap();
    assert_eq!(empty, Some(&b""[..]));
    // A length past the end, or a length cut short, is no cell.
    assert!(next_cell(rest).is_none());
    assert!(next_cell(&[0, 0]).is_none());
}

#[tokio::test(start_paused = true)]
async fn a_row_cut_short_stops_the_reader_after_the_rows_before_it() {
    struct CutShort;
    #[async_trait]
    impl LogSource for CutShort {
        async fn fetch_page(
            &self,
            _: &[StreamID],
            _: DateTime<Utc>,
            _: DateTime<Utc>,
            _: PagingState,
        ) -> Result<(LogPage, PagingStateResponse), ExecutionError> {
            let good = row(1, (BASE - 50_000) * 1000, 0, 1).serialize();
            let mut cut = row(1, (BASE - 40_000) * 1000, 0, 2).serialize();
            cut.truncate(cut.len() - 1);
            Ok((
                LogPage::Raw {
                    specs: Arc::new(log_specs()),
                    rows: vec![good, cut],
                },
                PagingStateResponse::NoMorePages,
            ))
        }
    }
    let (s, mut r) = reader(10, vec![stream(1)], ms(BASE - 100_000), None);
    r.plan.settings.source = Arc::new(CutShort);
    let err = r.run().await.unwrap_err();
    assert!(
        matches!(&err, CDCError::BadLogData { detail, .. } if detail.contains("row 1 ")),
        "{err}"
    );
    let vs: Vec<Option<i32>> = s.seen.lock().unwrap().iter().map(|x| x.3).collect();
    assert_eq!(vs, vec![Some(1)]);
}

#[tokio::test(start_paused = true)]
async fn corrupt_page_is_a_typed_error() {
    struct Corrupt;
    #[async_trait]
    impl LogSource for Corrupt {
        async fn fetch_page(
            &self,
            _: &[StreamID],
            _: DateTime<Utc>,
            _: DateTime<Utc>,
            _: PagingState,
        ) -> Result<(LogPage, PagingStateResponse), ExecutionError> {
            Ok((
                LogPage::Raw {
                    specs: Arc::new(log_specs()),
                    rows: vec![vec![0, 0, 0, 99, 1]],
                },
                PagingStateResponse::NoMorePages,
            ))
        }
    }
    let (s, mut r) = reader(10, vec![stream(1)], ms(BASE - 100_000), None);
    r.plan.settings.source = Arc::new(Corrupt);
    let err = r.run().await.unwrap_err();
    assert!(matches!(err, CDCError::BadLogData { .. }), "{err}");
    let _keep = s;
}

/// A delivered row: its `v`, whether it was late, and when (by the reader's clock).
type FlaggedRow = (i32, bool, DateTime<Utc>);

/// Records every delivered row ([`FlaggedRow`]).
#[derive(Clone, Default)]
struct Flagged(Arc<Mutex<Vec<FlaggedRow>>>, Option<Arc<TokioClock>>);

#[async_trait]
impl Consumer for Flagged {
    async fn consume_cdc(&mut self, row: CDCRow<'_>) -> anyhow::Result<()> {
        let v = row.get_value_as::<i32>("v")?.unwrap_or(-1);
        let at = self
            .1
            .as_ref()
            .map_or(DateTime::<Utc>::MIN_UTC, |c| c.now());
        self.0.lock().unwrap().push((v, row.is_late, at));
        Ok(())
    }
}

impl Flagged {
    fn seen(&self) -> Vec<(i32, bool)> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .map(|(v, l, _)| (*v, *l))
            .collect()
    }
}

/// Saves checkpoints and when (by the reader's clock) each was saved.
struct TimedSaver {
    clock: Arc<TokioClock>,
    saves: Mutex<Vec<(DateTime<Utc>, DateTime<Utc>)>>,
}

#[async_trait]
impl CDCCheckpointSaver for TimedSaver {
    async fn save_checkpoint(&self, checkpoint: &Checkpoint) -> anyhow::Result<()> {
        self.saves
            .lock()
            .unwrap()
            .push((checkpoint.timestamp, self.clock.now()));
        Ok(())
    }
    async fn save_new_generation(&self, _: &GenerationTimestamp) -> anyhow::Result<()> {
        Ok(())
    }
    async fn load_last_generation(&self) -> anyhow::Result<Option<GenerationTimestamp>> {
        Ok(None)
    }
    async fn load_last_checkpoint(&self, _: &[StreamID]) -> anyhow::Result<Option<DateTime<Utc>>> {
        Ok(None)
    }
}

struct EarlySetup {
    log: Arc<FakeLog>,
    saver: Arc<TimedSaver>,
    end_tx: watch::Sender<Option<DateTime<Utc>>>,
    gen_end_tx: watch::Sender<Option<DateTime<Utc>>>,
    flagged: Flagged,
    stats: Arc<Stats>,
    /// The tokio instant at which the reader's clock reads `BASE`.
    base: tokio::time::Instant,
}

/// A reader of stream 1 from `start` with early reads (`early`), a 30 s safety interval and
/// a 10 s sleep interval (the confirmation's batch), at a clock starting at `BASE`.
fn early_reader(early: &EarlyReads, start: DateTime<Utc>) -> (EarlySetup, StreamReader) {
    early_reader_with_safety(early, start, Duration::from_secs(30))
}

fn early_reader_with_safety(
    early: &EarlyReads,
    start: DateTime<Utc>,
    safety: Duration,
) -> (EarlySetup, StreamReader) {
    let log = Arc::new(FakeLog::new(100));
    let (end_tx, end_rx) = watch::channel(None);
    let (gen_end_tx, gen_end_rx) = watch::channel(None);
    let base = tokio::time::Instant::now();
    let clock = Arc::new(TokioClock::starting_at(ms(BASE)));
    let saver = Arc::new(TimedSaver {
        clock: clock.clone(),
        saves: Mutex::new(Vec::new()),
    });
    let mut settings = settings(log.clone(), Arc::new(MemorySaver::default()), end_rx);
    settings.clock = clock.clone();
    settings.saver = Some(saver.clone());
    settings.pause_between_saves = Duration::ZERO;
    settings.safety_interval = safety;
    settings.early = Some(EarlySettings::new(early));
    let slot = slot(&settings, start);
    let stats = settings.stats.clone();
    let flagged = Flagged(Arc::default(), Some(clock));
    let r = StreamReader::new(
        settings,
        vec![stream(1)],
        GenerationTimestamp::new(ms(0)),
        gen_end_rx,
        start,
        Sink::Rows(Box::new(flagged.clone())),
        slot,
    );
    (
        EarlySetup {
            log,
            saver,
            end_tx,
            gen_end_tx,
            flagged,
            stats,
            base,
        },
        r,
    )
}

impl EarlySetup {
    /// Sleeps (in paused time) until the reader's clock reads `BASE + millis`.
    async fn until(&self, millis: u64) {
        tokio::time::sleep_until(self.base + Duration::from_millis(millis)).await;
    }
}

#[tokio::test(start_paused = true)]
async fn early_reads_deliver_at_once_and_late_rows_once_flagged() {
    let early = EarlyReads::default();
    let (s, r) = early_reader(&early, ms(BASE - 1_000));
    let task = tokio::spawn(r.run());
    // On time: written at BASE + 2 s, delivered within the lag and a poll interval.
    s.until(2_000).await;
    s.log.push(row(1, (BASE + 2_000) * 1000, 0, 1));
    s.until(2_000 + 100 + 600 + 50).await;
    assert_eq!(s.flagged.seen(), [(1, false)], "on time: delivered early");
    // Late: visible only now, with a time the early reads have passed (BASE + 1 s).
    s.log.push(row(1, (BASE + 1_000) * 1000, 0, 2));
    s.log.push(row(1, (BASE + 3_500) * 1000, 0, 3));
    s.until(4_500).await;
    assert_eq!(s.flagged.seen(), [(1, false), (3, false)]);
    // Once `BASE + 1 s` is older than the safety interval and a sleep interval's worth is
    // settled, the confirmation delivers it, flagged, once; nothing else again.
    s.until(45_000).await;
    assert_eq!(s.flagged.seen(), [(1, false), (3, false), (2, true)]);
    assert_eq!(s.stats.snapshot().late_rows, 1);
    assert!(
        s.stats
            .snapshot()
            .early_lag
            .is_some_and(|l| l <= Duration::from_secs(1))
    );
    s.end_tx.send(Some(ms(BASE + 50_000))).unwrap();
    task.await.unwrap().unwrap();
    assert_eq!(s.flagged.seen().len(), 3);
    // Checkpoints cover confirmed windows only: each was at least the safety interval old
    // when saved, and the last is the end.
    let saves = s.saver.saves.lock().unwrap().clone();
    assert!(!saves.is_empty());
    for (checkpoint, saved_at) in &saves {
        assert!(
            *checkpoint <= *saved_at - chrono::TimeDelta::seconds(30),
            "checkpoint {checkpoint} saved at {saved_at}"
        );
    }
    assert_eq!(saves.last().map(|s| s.0), Some(ms(BASE + 50_000)));
}

#[tokio::test(start_paused = true)]
async fn a_full_ledger_pauses_early_reads_until_the_confirmation_catches_up() {
    let early = EarlyReads::default().max_unconfirmed_rows(3);
    let (s, r) = early_reader(&early, ms(BASE - 1_000));
    let task = tokio::spawn(r.run());
    // A burst of 5 rows: one early read delivers them all (the cap is checked before a
    // read), and the ledger is over its cap.
    s.until(1_000).await;
    for i in 0..5 {
        s.log.push(row(1, (BASE + 500 + i) * 1000, 0, i as i32));
    }
    s.until(2_000).await;
    assert_eq!(s.flagged.seen().len(), 5);
    // The next row waits for the confirmation of the burst: a safety interval later.
    s.log.push(row(1, (BASE + 3_000) * 1000, 0, 10));
    s.until(20_000).await;
    assert_eq!(
        s.flagged.seen().len(),
        5,
        "early reads paused: the ledger is full"
    );
    s.until(45_000).await;
    let seen = s.flagged.seen();
    assert_eq!(seen.len(), 6, "{seen:?}");
    assert!(
        seen.iter().all(|(_, late)| !late),
        "nothing late, nothing twice: {seen:?}"
    );
    // Once confirmed, early reads go on: a row at BASE + 46 s arrives within a second.
    s.log.push(row(1, (BASE + 46_000) * 1000, 0, 11));
    s.until(47_000).await;
    assert_eq!(s.flagged.seen().len(), 7);
    s.end_tx.send(Some(ms(BASE + 47_000))).unwrap();
    task.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_stop_below_the_early_point_confirms_up_to_it_and_saves_there() {
    let (s, r) = early_reader(&EarlyReads::default(), ms(BASE - 1_000));
    let task = tokio::spawn(r.run());
    s.until(2_000).await;
    s.log.push(row(1, (BASE + 2_000) * 1000, 0, 1));
    s.until(5_000).await;
    assert_eq!(s.flagged.seen(), [(1, false)]);
    // A member stops this group to hand its unit over (the generation's end at the
    // beginning of time): no more early reads, and the confirmation goes on to the early
    // point, finding a late row on the way.
    s.gen_end_tx.send(Some(DateTime::<Utc>::MIN_UTC)).unwrap();
    s.log.push(row(1, (BASE + 1_500) * 1000, 0, 2));
    s.log.push(row(1, (BASE + 4_000) * 1000, 0, 3));
    task.await.unwrap().unwrap();
    let seen = s.flagged.seen();
    assert_eq!(&seen[..2], [(1, false), (2, true)], "{seen:?}");
    // The row at BASE + 4 s was before the early point (about BASE + 4.9 s): delivered by the
    // confirmation too, late, since the early read had passed it.
    assert_eq!(seen[2], (3, true), "{seen:?}");
    let saves = s.saver.saves.lock().unwrap().clone();
    let (last, _) = *saves.last().expect("a final checkpoint");
    assert!(
        last > ms(BASE + 4_000) && last <= ms(BASE + 5_000),
        "the checkpoint covers what was delivered early: {last}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_graceful_stop_waits_for_the_confirmation_with_short_pauses() {
    // A poll interval of an hour: the wait for the confirmation must not take one.
    let early = EarlyReads::default().poll_interval(Duration::from_secs(3600));
    let (s, r) = early_reader(&early, ms(BASE - 1_000));
    // Read by the first early read, which is followed by a pause of an hour.
    s.log.push(row(1, (BASE - 500) * 1000, 0, 1));
    let task = tokio::spawn(r.run());
    s.until(2_000).await;
    assert_eq!(s.flagged.seen(), [(1, false)]);
    // The programs' graceful stop: an end at the beginning of time.
    s.end_tx.send(Some(DateTime::<Utc>::MIN_UTC)).unwrap();
    task.await.unwrap().unwrap();
    let stopped = s.base.elapsed();
    assert!(
        stopped < Duration::from_secs(35),
        "stopped {stopped:?} after the start, not about a safety interval after the early read"
    );
    let (last, _) = *s
        .saver
        .saves
        .lock()
        .unwrap()
        .last()
        .expect("a final checkpoint");
    assert!(
        last > ms(BASE - 500),
        "the checkpoint covers the row read early: {last}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_graceful_stop_does_not_wait_more_than_max_stop_confirmation() {
    // A safety interval of an hour: the confirmation would take one.
    let safety = Duration::from_secs(3600);
    let (s, r) = early_reader_with_safety(&EarlyReads::default(), ms(BASE - 1_000), safety);
    let task = tokio::spawn(r.run());
    s.log.push(row(1, (BASE + 500) * 1000, 0, 1));
    s.until(2_000).await;
    assert_eq!(s.flagged.seen(), [(1, false)]);
    s.end_tx.send(Some(DateTime::<Utc>::MIN_UTC)).unwrap();
    task.await.unwrap().unwrap();
    assert!(
        s.base.elapsed() < Duration::from_secs(3),
        "{:?}",
        s.base.elapsed()
    );
    // Saved at the confirmed point, before the row read early: a restart delivers it again.
    let (last, _) = *s
        .saver
        .saves
        .lock()
        .unwrap()
        .last()
        .expect("a final checkpoint");
    assert!(last <= ms(BASE + 500), "{last}");
}
