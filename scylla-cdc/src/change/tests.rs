use super::assembler::*;
use super::*;
use crate::base::cdc_types::GenerationTimestamp;
use crate::base::time::tests::timeuuid;
use crate::checkpoints::tests::MemorySaver;
use crate::consumer::CDCRow;
use crate::consumer::tests::{TestRow, log_specs};
use crate::stream::StreamReader;
use crate::stream::sink::Sink;
use crate::stream::tests::{BASE, FakeLog, ms, settings, slot, stream};
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::watch;

/// Keeps every change it gets; counts flushes.
#[derive(Clone, Default)]
struct Keep {
    changes: Arc<Mutex<Vec<Change>>>,
    flushes: Arc<Mutex<usize>>,
}

#[async_trait]
impl ChangeConsumer for Keep {
    async fn consume_change(&mut self, change: Change) -> anyhow::Result<()> {
        self.changes.lock().unwrap().push(change);
        Ok(())
    }

    async fn flush(&mut self) -> anyhow::Result<()> {
        *self.flushes.lock().unwrap() += 1;
        Ok(())
    }
}

fn keeper() -> (Keep, ChangeAssembler) {
    let keep = Keep::default();
    let assembler = ChangeAssembler::new(Box::new(keep.clone()), Arc::from("t"));
    (keep, assembler)
}

/// How a test hands rows to an assembler.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Feed {
    /// Through `consume_cdc`, cells not in a page: copied cell by cell.
    Copied,
    /// Through `consume_cdc`, cells sliced from a page: copied in one piece.
    Spanned,
    /// As the stream reader hands them over: `push_row` when `can_push` takes the row
    /// (a change of one row written whole), else `consume_cdc`; in one piece.
    Pushed,
}

/// Feeds rows to an assembler in each way of [`Feed`], checks all give the same
/// changes, and returns them.
async fn assemble(rows: &[TestRow]) -> Vec<Change> {
    let copied = assemble_in(rows, Feed::Copied).await;
    let expected: Vec<Vec<Option<Vec<u8>>>> = rows.iter().map(TestRow::cells).collect();
    assert_eq!(
        cells_of(&copied).concat(),
        expected,
        "rows copied cell by cell"
    );
    let flagged = |c: &Change| {
        c.rows()
            .all(|r| matches!(r.row.cells, CellSource::Span { .. }))
    };
    assert!(!copied.iter().any(flagged));
    for feed in [Feed::Spanned, Feed::Pushed] {
        let spanned = assemble_in(rows, feed).await;
        // `with_cells_located` finds the same cells.
        for c in &spanned {
            for r in c.rows() {
                let owned = |row: &ChangeRow<'_>| -> Vec<Option<Option<Vec<u8>>>> {
                    (0..row.row.len())
                        .map(|p| row.row.cell(p).map(|c| c.map(<[u8]>::to_vec)))
                        .collect()
                };
                let located = r.with_cells_located(|l| owned(l));
                assert_eq!(located, owned(&r), "{feed:?}");
            }
        }
        assert_eq!(cells_of(&spanned).concat(), expected, "{feed:?}");
        assert_eq!(format!("{spanned:?}"), format!("{copied:?}"), "{feed:?}");
        assert!(
            spanned.iter().all(flagged),
            "{feed:?}: a row of a page is copied in one piece"
        );
    }
    copied
}

/// Feeds rows to an assembler one by one, then flushes. Unless `Feed::Copied`, the rows
/// are serialized back to back as a driver page holds them, and their cells are slices
/// of it.
async fn assemble_in(rows: &[TestRow], feed: Feed) -> Vec<Change> {
    let (keep, mut assembler) = keeper();
    let specs = log_specs();
    let index = Arc::new(ColumnIndex::new(&specs).unwrap());
    let (page, ranges) = page_of(rows);
    for (r, ranges) in rows.iter().zip(&ranges) {
        let cells = r.cells();
        let refs: Vec<Option<&[u8]>> = if feed == Feed::Copied {
            cells.iter().map(|c| c.as_deref()).collect()
        } else {
            ranges.iter().map(|r| r.map(|(a, b)| &page[a..b])).collect()
        };
        let header = index.header(&refs).unwrap();
        let row = CDCRow::new(header, &index, &specs, &refs);
        let row = if feed == Feed::Copied {
            row
        } else {
            row.with_page(&page)
        };
        if feed == Feed::Pushed && assembler.can_push(&header) {
            let delivery = assembler.push_row(&header, row.raw(), row.span());
            match delivery.unwrap() {
                Some(delivery) => delivery.await.unwrap(),
                None => continue,
            }
            assembler.delivered();
        } else {
            assembler.consume_row(row).await.unwrap();
        }
    }
    assembler.flush().await.unwrap();
    assert_eq!(*keep.flushes.lock().unwrap(), 1);
    keep.changes.lock().unwrap().clone()
}

/// A log schema of the test table, as the assembler keeps it.
fn test_schema() -> Arc<Schema> {
    let specs = log_specs();
    let index = Arc::new(ColumnIndex::new(&specs).unwrap());
    Arc::new(Schema {
        specs: index.owned_specs(&specs),
        index,
        table: Arc::from("t"),
    })
}

/// Writes a change of `head` then `tail` whole.
fn whole(
    writer: &mut chunk::ChunkWriter<Schema>,
    schema: &Arc<Schema>,
    head: &[u8],
    tail: &[u8],
) -> chunk::Written<Schema> {
    writer
        .whole(schema, head.len() + tail.len(), |out| {
            let (h, t) = out.split_at_mut(head.len());
            h.copy_from_slice(head);
            t.copy_from_slice(tail);
        })
        .unwrap()
}

/// A full chunk whose changes are all gone is written again; one with a change still
/// held is left to it, and that change's bytes never change.
#[test]
fn a_chunk_is_written_again_only_once_its_changes_are_gone() {
    let schema = test_schema();
    let chunks = || Arc::strong_count(&schema) - 1;
    let mut writer = chunk::ChunkWriter::default();
    // About 16 changes of 1004 bytes fill a chunk: this goes round it several times.
    for i in 0..64u8 {
        let w = whole(&mut writer, &schema, &[i; 4], &[i; 1000]);
        assert!(w.bytes().iter().all(|&b| b == i));
        assert_eq!(chunks(), 1, "change {i}");
    }
    assert_eq!(writer.made, 1, "one chunk, written again");
    let kept = whole(&mut writer, &schema, &[0xaa; 4], &[0xaa; 1000]);
    for i in 0..64u8 {
        drop(whole(&mut writer, &schema, &[i; 4], &[i; 1000]));
    }
    assert!(
        kept.bytes().iter().all(|&b| b == 0xaa),
        "a kept change is intact"
    );
    assert_eq!(chunks(), 2, "the kept change's chunk and the writer's");
    assert_eq!(writer.made, 2, "the kept change's chunk is left to it");
    drop(kept);
    assert_eq!(chunks(), 1);
}

/// A chunk is freed once its writer and every change in it are gone, however many
/// changes it served (its writer takes references in batches of [`chunk::PREPAID`]).
#[test]
fn chunks_are_freed_after_their_writer_and_every_change() {
    let schema = test_schema();
    // Every live chunk holds the schema once: its count is 1 + the chunks alive.
    let chunks = || Arc::strong_count(&schema) - 1;
    let mut writer = chunk::ChunkWriter::default();
    // A change larger than a chunk gets a chunk of its own; the small ones after it
    // share chunks, many more of them than a batch of references.
    let large = whole(&mut writer, &schema, &[9u8; 4], &[7u8; 40_000]);
    let n = 3 * chunk::PREPAID as u32;
    let mut small: Vec<chunk::Written<Schema>> = (0..n)
        .map(|i| whole(&mut writer, &schema, &i.to_le_bytes(), &[]))
        .collect();
    let clones: Vec<chunk::Written<Schema>> = small.iter().step_by(7).cloned().collect();
    assert_eq!(chunks(), 2, "the large change's chunk and the small ones'");
    drop(writer);
    assert_eq!(chunks(), 2, "the changes keep their chunks");
    assert_eq!(large.bytes().len(), 40_004);
    assert!(large.bytes()[4..].iter().all(|&b| b == 7));
    drop(large);
    assert_eq!(chunks(), 1);
    for (i, w) in small.iter().enumerate() {
        assert_eq!(w.bytes(), (i as u32).to_le_bytes());
    }
    small.clear();
    assert_eq!(chunks(), 1, "clones keep their chunk");
    for (i, w) in clones.iter().enumerate() {
        assert_eq!(w.bytes(), (7 * i as u32).to_le_bytes());
    }
    drop(clones);
    assert_eq!(chunks(), 0);
}

/// The range of each cell of a row in its page (`None`: null).
type CellRanges = Vec<Option<(usize, usize)>>;

/// Serializes rows as a driver page holds them: each cell after its big-endian length
/// (-1: null). Returns the page and, per row, each cell's range in it.
fn page_of(rows: &[TestRow]) -> (Vec<u8>, Vec<CellRanges>) {
    let mut page = Vec::new();
    let mut ranges = Vec::new();
    for r in rows {
        let mut row = Vec::new();
        for cell in r.cells() {
            match cell {
                None => {
                    page.extend_from_slice(&(-1i32).to_be_bytes());
                    row.push(None);
                }
                Some(c) => {
                    page.extend_from_slice(&(c.len() as i32).to_be_bytes());
                    row.push(Some((page.len(), page.len() + c.len())));
                    page.extend_from_slice(&c);
                }
            }
        }
        ranges.push(row);
    }
    (page, ranges)
}

/// The cells of every row of every change.
fn cells_of(changes: &[Change]) -> Vec<Vec<Vec<Option<Vec<u8>>>>> {
    changes
        .iter()
        .map(|c| {
            c.rows()
                .map(|r| {
                    (0..r.row.len())
                        .map(|p| r.row.cell(p).unwrap().map(<[u8]>::to_vec))
                        .collect()
                })
                .collect()
        })
        .collect()
}

/// A row of stream `[s; 16]` at `micros` with seq, operation and `eob` as given.
fn at(s: u8, micros: i64, seq: i32, op: i8, eob: bool) -> TestRow {
    let mut r = TestRow::new([s; 16], timeuuid(micros, 0x1111 * s as u64), seq);
    r.op = op;
    r.eob = eob;
    r
}

#[tokio::test]
async fn rows_of_one_time_make_one_change_and_accessors_read_owned_cells() {
    let mut pre = at(1, 10, 0, 0, false);
    pre.v = Some(1);
    let mut delta = at(1, 10, 1, 1, false);
    delta.v = Some(2);
    delta.ttl = Some(30);
    let mut post = at(1, 10, 2, 9, true);
    post.v = Some(2);
    let mut other = at(1, 11, 0, 3, true);
    other.ck = Some(5);
    let changes = assemble(&[pre, delta, post, other]).await;
    assert_eq!(changes.len(), 2);
    let c = &changes[0];
    assert_eq!(c.table(), "t");
    assert_eq!(c.stream_id(), stream(1));
    assert_eq!(c.timestamp_micros(), 10);
    assert_eq!(c.rows().len(), 3);
    assert_eq!(c.operation(), Some(OperationType::RowUpdate));
    assert_eq!(c.ttl(), Some(30));
    assert_eq!(c.pre_images().count(), 1);
    assert_eq!(c.post_images().count(), 1);
    let d: Vec<_> = c.deltas().collect();
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].batch_seq_no(), 1);
    assert_eq!(d[0].get_value_as::<i32>("v").unwrap(), Some(2));
    assert_eq!(d[0].get_value("pk").unwrap(), Some(CqlValue::Int(0)));
    assert!(d[0].get_value("nope").is_err());
    assert!(d[0].column_deletable("v") && !d[0].column_deletable("pk"));
    assert!(d[0].collection_exists("s"));
    assert_eq!(
        d[0].get_non_cdc_column_names().collect::<Vec<_>>(),
        vec!["ck", "pk", "s", "v"]
    );
    // A change is a reference to its chunk and its range in it: moved in registers.
    assert_eq!(std::mem::size_of::<Change>(), 16);
    // A clone shares the rows.
    let copy = c.clone();
    drop(changes);
    assert_eq!(copy.rows().last().map(|r| r.end_of_batch()), Some(true));
    assert!(format!("{copy:?}").contains("PostImage"));
}

/// Rows larger than a chunk, and changes whose rows overflow the chunk they started in,
/// are kept whole; changes kept while later ones are written keep their bytes.
#[tokio::test]
async fn changes_larger_than_a_chunk_or_across_chunks_are_kept_whole() {
    let mut rows = Vec::new();
    for c in 0..40i64 {
        let n = 1 + c as usize % 3;
        for seq in 0..n {
            let mut r = at(1 + (c % 2) as u8, 10 + c, seq as i32, 1, seq + 1 == n);
            r.v = Some(c as i32);
            // Sets of 0.1 to 5 KiB (a change of three rows does not fit in the rest of
            // a chunk); every seventh change has a row of 20 KiB, more than a chunk.
            let items = if c % 7 == 3 && seq == 0 {
                2500
            } else {
                10 + 60 * ((c as usize * 5 + seq) % 11)
            };
            r.s = Some((0..items as i32).collect());
            rows.push(r);
        }
    }
    // `assemble` compares every kept change's cells with the rows once all are read.
    let changes = assemble(&rows).await;
    let shape: Vec<(i64, usize, bool)> = changes
        .iter()
        .map(|c| {
            let v = c.rows().all(|r| {
                r.get_value_as::<i32>("v").unwrap() == Some(c.timestamp_micros() as i32 - 10)
            });
            (c.timestamp_micros(), c.rows().len(), v)
        })
        .collect();
    let expected: Vec<(i64, usize, bool)> = (0..40i64)
        .map(|c| (10 + c, 1 + c as usize % 3, true))
        .collect();
    assert_eq!(shape, expected);
}

/// A change whose rows were read with two log schemas (the schema changed between its
/// pages) keeps each row's schema; the next change starts in a chunk of its own schema.
#[tokio::test]
async fn a_schema_change_within_a_change_keeps_each_rows_schema() {
    let (keep, mut assembler) = keeper();
    let specs = log_specs();
    // Two indexes of the same columns are two schemas to the assembler.
    let first = Arc::new(ColumnIndex::new(&specs).unwrap());
    let second = Arc::new(ColumnIndex::new(&specs).unwrap());
    let mut rows = Vec::new();
    for (seq, eob) in [(0, false), (1, false), (2, true)] {
        let mut r = at(1, 10, seq, 1, eob);
        r.v = Some(seq);
        rows.push(r);
    }
    let mut next = at(1, 11, 0, 1, true);
    next.v = Some(7);
    rows.push(next);
    let indexes = [&first, &second, &first, &second];
    for (r, index) in rows.iter().zip(indexes) {
        let cells = r.cells();
        let refs: Vec<Option<&[u8]>> = cells.iter().map(|c| c.as_deref()).collect();
        let header = index.header(&refs).unwrap();
        assembler
            .consume_row(CDCRow::new(header, index, &specs, &refs))
            .await
            .unwrap();
    }
    assembler.flush().await.unwrap();
    let changes = keep.changes.lock().unwrap().clone();
    let read: Vec<Vec<(Option<i32>, bool)>> = changes
        .iter()
        .map(|c| {
            c.rows()
                .map(|r| {
                    let v = r.get_value_as::<i32>("v").unwrap();
                    (v, Arc::ptr_eq(r.row.index, &second))
                })
                .collect()
        })
        .collect();
    assert_eq!(
        read,
        vec![
            vec![(Some(0), false), (Some(1), true), (Some(2), false)],
            vec![(Some(7), true)],
        ]
    );
    assert!(changes.iter().all(|c| c.table() == "t"));
}

/// Sends every change to another thread.
struct SendAway(std::sync::mpsc::Sender<Change>);

#[async_trait]
impl ChangeConsumer for SendAway {
    async fn consume_change(&mut self, change: Change) -> anyhow::Result<()> {
        self.0.send(change)?;
        Ok(())
    }
}

/// Changes are read on another thread while the assembler writes the next rows into the
/// chunk they are in (and into new chunks once it is full).
#[tokio::test]
async fn changes_are_read_on_another_thread_while_later_rows_are_written() {
    // Changes of one row (written whole) and of two (assembled row by row) alternate;
    // chunks fill up, and are written again once the other thread dropped their changes.
    // (Fewer under Miri, which checks the accesses of both threads but runs slowly.)
    let changes: i64 = if cfg!(miri) { 200 } else { 3000 };
    let (tx, rx) = std::sync::mpsc::channel::<Change>();
    let reader = std::thread::spawn(move || {
        let mut seen = 0i64;
        for change in rx {
            let c = change.timestamp_micros() - 10;
            assert_eq!(c, seen);
            let items = (c % 50) as i32;
            for row in change.rows() {
                assert_eq!(row.get_value_as::<i32>("v").unwrap(), Some(c as i32));
                let s = row.get_value("s").unwrap();
                let expected =
                    (items > 0).then(|| CqlValue::Set((0..items).map(CqlValue::Int).collect()));
                assert_eq!(s, expected, "change {c}");
            }
            seen += 1;
        }
        seen
    });
    let mut assembler = ChangeAssembler::new(Box::new(SendAway(tx)), Arc::from("t"));
    let specs = log_specs();
    let index = Arc::new(ColumnIndex::new(&specs).unwrap());
    for c in 0..changes {
        let rows = 1 + c % 2;
        for seq in 0..rows as i32 {
            let mut r = at(1, 10 + c, seq, 1, seq + 1 == rows as i32);
            r.v = Some(c as i32);
            r.s = (c % 50 > 0).then(|| (0..(c % 50) as i32).collect());
            let (page, ranges) = page_of(std::slice::from_ref(&r));
            let refs: Vec<Option<&[u8]>> = ranges[0]
                .iter()
                .map(|r| r.map(|(a, b)| &page[a..b]))
                .collect();
            let header = index.header(&refs).unwrap();
            let row = CDCRow::new(header, &index, &specs, &refs).with_page(&page);
            // As the stream reader hands rows over.
            assert!(assembler.can_push(&header));
            match assembler.push_row(&header, row.raw(), row.span()).unwrap() {
                Some(delivery) => delivery.await.unwrap(),
                None => continue,
            }
            assembler.delivered();
        }
    }
    assembler.flush().await.unwrap();
    drop(assembler);
    assert_eq!(reader.join().unwrap(), changes);
}

#[tokio::test]
async fn a_new_time_or_stream_completes_a_change_without_end_of_batch() {
    // No `cdc$end_of_batch` anywhere: the next (stream, time) and the flush complete them.
    let rows = [
        at(1, 10, 0, 1, false),
        at(1, 10, 1, 1, false),
        at(2, 10, 0, 1, false),
        at(2, 12, 0, 2, false),
    ];
    let changes = assemble(&rows).await;
    let shape: Vec<(u8, i64, usize)> = changes
        .iter()
        .map(|c| {
            (
                c.stream_id().as_bytes()[0],
                c.timestamp_micros(),
                c.rows().len(),
            )
        })
        .collect();
    assert_eq!(shape, vec![(1, 10, 2), (2, 10, 1), (2, 12, 1)]);
}

#[tokio::test]
async fn before_and_after_merge_images_and_deltas() {
    // Pre-image v=1 s={1,2}; delta: s + {3} - {1}; no post-image.
    let mut pre = at(1, 10, 0, 0, false);
    pre.v = Some(1);
    pre.s = Some(vec![1, 2]);
    let mut delta = at(1, 10, 1, 1, true);
    delta.s = Some(vec![3]);
    delta.dele_s = Some(vec![1]);
    let c = &assemble(&[pre, delta]).await[0];
    let rows = c.row_changes();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].target(), Target::Row);
    assert!(!rows[0].is_static() && !rows[0].is_delete());
    let before = c.before().unwrap().unwrap();
    assert_eq!(before.get("v"), Some(&CqlValue::Int(1)));
    assert_eq!(before.get("ck"), Some(&CqlValue::Int(0)));
    let after = c.after().unwrap().unwrap();
    assert_eq!(after.get("v"), Some(&CqlValue::Int(1)));
    assert_eq!(
        after.get("s"),
        Some(&CqlValue::Set(vec![CqlValue::Int(2), CqlValue::Int(3)]))
    );
    // The merged image decodes into a user's struct.
    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct Row {
        pk: i32,
        ck: i32,
        v: Option<i64>,
        s: Option<std::collections::BTreeSet<u8>>,
    }
    assert_eq!(
        after.decode::<Row>().unwrap(),
        Row {
            pk: 0,
            ck: 0,
            v: Some(1),
            s: Some([2, 3].into()),
        }
    );
    let err = after.decode::<(i32,)>().unwrap_err();
    assert!(!err.to_string().is_empty());

    // No pre-image; a deleted column is known null; the overwritten set is exact.
    let mut delta = at(1, 20, 0, 1, true);
    delta.del_v = true;
    delta.s = Some(vec![7]);
    let c = &assemble(&[delta]).await[0];
    assert_eq!(c.before().unwrap(), None);
    let after = c.after().unwrap().unwrap();
    assert!(after.contains("v") && after.get("v").is_none());
    assert_eq!(after.get("s"), Some(&CqlValue::Set(vec![CqlValue::Int(7)])));

    // A post-image wins over the merge.
    let mut delta = at(1, 30, 0, 2, false);
    delta.v = Some(5);
    let mut post = at(1, 30, 1, 9, true);
    post.v = Some(5);
    post.s = Some(vec![9]);
    let after = assemble(&[delta, post]).await[0].after().unwrap().unwrap();
    assert_eq!(after.get("s"), Some(&CqlValue::Set(vec![CqlValue::Int(9)])));
    assert_eq!(after.len(), 4);
}

#[tokio::test]
async fn deletes_have_no_after_and_rows_are_grouped_by_key() {
    // A static-row update, two clustering rows, a range and a partition deletion.
    let mut st = at(1, 10, 0, 1, false);
    st.ck = None;
    st.v = Some(1);
    let mut r1 = at(1, 10, 1, 1, false);
    r1.ck = Some(1);
    let mut r2 = at(1, 10, 2, 3, false);
    r2.ck = Some(2);
    let mut lo = at(1, 10, 3, 5, false);
    lo.ck = Some(3);
    let mut hi = at(1, 10, 4, 8, false);
    hi.ck = Some(6);
    let mut post = at(1, 10, 5, 9, true);
    post.ck = Some(1);
    let c = &assemble(&[st, r1, r2, lo, hi, post]).await[0];
    let rows = c.row_changes();
    let shape: Vec<(Target, bool, bool, usize, bool)> = rows
        .iter()
        .map(|r| {
            (
                r.target(),
                r.is_static(),
                r.is_delete(),
                r.deltas().len(),
                r.post_image().is_some(),
            )
        })
        .collect();
    assert_eq!(
        shape,
        vec![
            (Target::Row, true, false, 1, false),
            (Target::Row, false, false, 1, true),
            (Target::Row, false, true, 1, false),
            (Target::Range, false, true, 2, false),
        ]
    );
    assert!(rows[0].after().unwrap().is_some());
    assert_eq!(rows[0].key().unwrap().get("ck"), None);
    assert!(rows[2].after().unwrap().is_none());
    assert!(rows[3].after().unwrap().is_none());
    assert_eq!(
        rows[3].deltas()[1].get_value("ck").unwrap(),
        Some(CqlValue::Int(6))
    );

    let mut pd = at(1, 20, 1, 4, true);
    pd.ck = None;
    let mut ins = at(1, 20, 0, 2, false);
    ins.v = Some(3);
    let c = &assemble(&[ins, pd]).await[0];
    let rows = c.row_changes();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1].target(), Target::Partition);
    // The partition deletion (same timestamp) wins over the insert.
    assert!(rows.iter().all(|r| r.after().unwrap().is_none()));
}

#[test]
fn collections_and_udts_merge() {
    let m = |kv: &[(i32, i32)]| {
        CqlValue::Map(
            kv.iter()
                .map(|(k, v)| (CqlValue::Int(*k), CqlValue::Int(*v)))
                .collect(),
        )
    };
    let set = |v: &[i32]| CqlValue::Set(v.iter().map(|i| CqlValue::Int(*i)).collect());
    assert_eq!(
        merge_collection(Some(m(&[(1, 1), (2, 2)])), Some(m(&[(2, 5), (3, 3)])), None),
        Some(m(&[(1, 1), (2, 5), (3, 3)]))
    );
    assert_eq!(
        merge_collection(Some(m(&[(1, 1), (2, 2)])), None, Some(set(&[1]))),
        Some(m(&[(2, 2)]))
    );
    assert_eq!(merge_collection(None, None, Some(set(&[1]))), None);
    let udt = |a: Option<i32>, b: Option<i32>| CqlValue::UserDefinedType {
        keyspace: "ks".into(),
        name: "u".into(),
        fields: vec![
            ("a".into(), a.map(CqlValue::Int)),
            ("b".into(), b.map(CqlValue::Int)),
        ],
    };
    assert_eq!(
        merge_collection(
            Some(udt(Some(1), Some(2))),
            Some(udt(Some(7), None)),
            Some(CqlValue::Set(vec![CqlValue::SmallInt(1)]))
        ),
        Some(udt(Some(7), None))
    );
}

/// Changes of several rows, in two streams, read with pages of 1 to 3 rows and
/// windows of one second, are delivered whole and once, with or without
/// `cdc$end_of_batch` (then the next change or the window's end completes them).
#[tokio::test(start_paused = true)]
async fn changes_straddling_pages_are_delivered_whole_and_once() {
    for (page_size, eob) in [(1, true), (2, true), (3, true), (1, false), (2, false)] {
        let log = Arc::new(FakeLog::new(page_size));
        let start_us = (BASE - 3_600_000) * 1000;
        let mut expected = Vec::new();
        for i in 0..12i64 {
            for s in [1u8, 2] {
                let n = 1 + ((i as usize + s as usize) % 4);
                let t = start_us + i * 700_000 + s as i64;
                for seq in 0..n {
                    let mut r = at(s, t, seq as i32, 1, eob && seq + 1 == n);
                    r.v = Some(seq as i32);
                    log.push(r);
                }
                expected.push((s, t, n));
            }
        }
        let (_end_tx, end_rx) = watch::channel(Some(ms(BASE - 3_000_000)));
        let (_gen_tx, gen_rx) = watch::channel(None);
        let mut settings = settings(log, Arc::new(MemorySaver::default()), end_rx);
        settings.window_size = Duration::from_secs(1);
        let start = ms(BASE - 3_600_000);
        let slot = slot(&settings, start);
        let keep = Keep::default();
        let reader = StreamReader::new(
            settings,
            vec![stream(1), stream(2)],
            GenerationTimestamp::new(ms(0)),
            gen_rx,
            start,
            Sink::Changes(Box::new(ChangeAssembler::new(
                Box::new(keep.clone()),
                Arc::from("t"),
            ))),
            slot,
        );
        reader.run().await.unwrap();
        let changes = keep.changes.lock().unwrap().clone();
        let mut got: Vec<(u8, i64, usize)> = Vec::new();
        for c in &changes {
            let seqs: Vec<i32> = c.rows().map(|r| r.batch_seq_no()).collect();
            let values: Vec<Option<i32>> = c
                .rows()
                .map(|r| r.get_value_as::<i32>("v").unwrap())
                .collect();
            assert_eq!(seqs, (0..seqs.len() as i32).collect::<Vec<_>>());
            assert_eq!(values, seqs.iter().map(|s| Some(*s)).collect::<Vec<_>>());
            assert_eq!(c.rows().last().map(|r| r.end_of_batch()), Some(eob));
            got.push((
                c.stream_id().as_bytes()[0],
                c.timestamp_micros(),
                c.rows().len(),
            ));
        }
        got.sort();
        expected.sort();
        assert_eq!(got, expected, "page size {page_size}");
    }
}

/// A change consumer that fails (or panics) on the changes whose first `v` is in
/// `fail`, `times` times each (u32::MAX: always), and keeps the others.
#[derive(Clone, Default)]
struct Fussy {
    fail: Vec<i32>,
    times: u32,
    panics: bool,
    failures: Arc<Mutex<std::collections::HashMap<i32, u32>>>,
    changes: Arc<Mutex<Vec<Change>>>,
}

#[async_trait]
impl ChangeConsumer for Fussy {
    async fn consume_change(&mut self, change: Change) -> anyhow::Result<()> {
        let first = change
            .rows()
            .next()
            .and_then(|r| r.get_value_as::<i32>("v").ok().flatten())
            .unwrap_or_default();
        if self.fail.contains(&first) {
            let mut failures = self.failures.lock().unwrap();
            let n = failures.entry(first).or_default();
            if *n < self.times {
                *n += 1;
                drop(failures);
                if self.panics {
                    panic!("change consumer bug at v={first}");
                }
                anyhow::bail!("cannot take the change of v={first}");
            }
        }
        self.changes.lock().unwrap().push(change);
        Ok(())
    }
}

/// Runs a reader of three changes of `rows` rows each (v = 10c + seq), in pages of two
/// rows, with `consumer` and `policy`; returns the result and each delivered change's
/// values.
async fn run_changes(
    consumer: Fussy,
    policy: crate::ConsumerErrorPolicy,
    rows: i32,
) -> (Result<(), crate::CDCError>, Vec<Vec<i32>>) {
    let log = Arc::new(FakeLog::new(2));
    let start_us = (BASE - 3_600_000) * 1000;
    for c in 0..3i64 {
        for seq in 0..rows {
            let mut r = at(1, start_us + c * 1000, seq, 1, seq == rows - 1);
            r.v = Some(10 * c as i32 + seq);
            log.push(r);
        }
    }
    let (_end_tx, end_rx) = watch::channel(Some(ms(BASE - 3_000_000)));
    let (_gen_tx, gen_rx) = watch::channel(None);
    let mut settings = settings(log, Arc::new(MemorySaver::default()), end_rx);
    settings.on_error = policy;
    let start = ms(BASE - 3_600_000);
    let slot = slot(&settings, start);
    let reader = StreamReader::new(
        settings,
        vec![stream(1)],
        GenerationTimestamp::new(ms(0)),
        gen_rx,
        start,
        Sink::Changes(Box::new(ChangeAssembler::new(
            Box::new(consumer.clone()),
            Arc::from("t"),
        ))),
        slot,
    );
    let result = reader.run().await;
    let values = consumer
        .changes
        .lock()
        .unwrap()
        .iter()
        .map(|c| {
            c.rows()
                .map(|r| r.get_value_as::<i32>("v").unwrap().unwrap_or_default())
                .collect()
        })
        .collect();
    (result, values)
}

/// The consumer error policy applies to whole changes: a retried change is delivered
/// again whole (not re-assembled from its last row), a skipped one is dropped whole, and
/// the changes around it arrive intact.
#[tokio::test(start_paused = true)]
async fn the_error_policy_retries_or_skips_whole_changes() {
    // Changes of one row are delivered again without a copy kept (see `hand_over`).
    for rows in [3, 1] {
        let whole = |c: i32| (10 * c..10 * c + rows).collect::<Vec<_>>();
        let flaky = Fussy {
            fail: vec![10],
            times: 2,
            ..Fussy::default()
        };
        let (result, got) = run_changes(flaky, crate::ConsumerErrorPolicy::default(), rows).await;
        result.unwrap();
        assert_eq!(got, vec![whole(0), whole(1), whole(2)], "rows: {rows}");

        for panics in [false, true] {
            let broken = || Fussy {
                fail: vec![10],
                times: u32::MAX,
                panics,
                ..Fussy::default()
            };
            let (result, got) = run_changes(
                broken(),
                crate::ConsumerErrorPolicy::skip().with_retry(1, Duration::from_millis(5)),
                rows,
            )
            .await;
            result.unwrap();
            assert_eq!(
                got,
                vec![whole(0), whole(2)],
                "panics: {panics}, rows: {rows}"
            );
            let (result, got) =
                run_changes(broken(), crate::ConsumerErrorPolicy::stop(), rows).await;
            let err = result.unwrap_err();
            assert!(
                matches!(
                    &err,
                    crate::CDCError::Consumer { batch_seq_no, .. } if *batch_seq_no == rows - 1
                ),
                "{err}"
            );
            assert_eq!(got, vec![whole(0)]);
        }
    }
}

/// Where the changes of [`run_layout`] end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ends {
    /// At their `cdc$end_of_batch` row.
    EndOfBatch,
    /// Without `cdc$end_of_batch`: at the first row of the next change (same stream, next
    /// `cdc$time`).
    NextTime,
    /// Without `cdc$end_of_batch`: changes 0 and 1 are stream 1's, 2 and 3 stream 2's;
    /// change 1 ends at the first row of stream 2.
    NextStream,
    /// Without `cdc$end_of_batch`, one change per window: at the window's end.
    WindowEnd,
}

const ENDS: [Ends; 4] = [
    Ends::EndOfBatch,
    Ends::NextTime,
    Ends::NextStream,
    Ends::WindowEnd,
];

/// The stream and the `cdc$time` (micros) of change `c` of [`run_layout`].
fn layout_change(ends: Ends, c: i64) -> (u8, i64) {
    let start_us = (BASE - 3_600_000) * 1000;
    match ends {
        Ends::NextStream => (if c < 2 { 1 } else { 2 }, start_us + c * 1000),
        Ends::WindowEnd => (1, start_us + c * 1_000_000 + 500),
        Ends::EndOfBatch | Ends::NextTime => (1, start_us + c * 1000),
    }
}

/// What [`run_layout`] returns.
struct LayoutRun {
    result: Result<(), crate::CDCError>,
    /// Each delivered change's values.
    got: Vec<Vec<i32>>,
    stats: crate::Progress,
}

/// Runs a reader of streams 1 and 2 over four changes c = 0..4 of `rows` rows each
/// (v = 10c + seq) that end as `ends` says, in pages of two rows, with `consumer` and
/// `policy`.
async fn run_layout(
    ends: Ends,
    consumer: Fussy,
    policy: crate::ConsumerErrorPolicy,
    rows: i32,
) -> LayoutRun {
    let log = Arc::new(FakeLog::new(2));
    for c in 0..4i64 {
        let (s, t) = layout_change(ends, c);
        for seq in 0..rows {
            let mut r = at(s, t, seq, 1, ends == Ends::EndOfBatch && seq == rows - 1);
            r.v = Some(10 * c as i32 + seq);
            log.push(r);
        }
    }
    let (_end_tx, end_rx) = watch::channel(Some(ms(BASE - 3_000_000)));
    let (_gen_tx, gen_rx) = watch::channel(None);
    let mut settings = settings(log, Arc::new(MemorySaver::default()), end_rx);
    settings.on_error = policy;
    if ends == Ends::WindowEnd {
        settings.window_size = Duration::from_secs(1);
    }
    let stats = settings.stats.clone();
    let start = ms(BASE - 3_600_000);
    let slot = slot(&settings, start);
    let reader = StreamReader::new(
        settings,
        vec![stream(1), stream(2)],
        GenerationTimestamp::new(ms(0)),
        gen_rx,
        start,
        Sink::Changes(Box::new(ChangeAssembler::new(
            Box::new(consumer.clone()),
            Arc::from("t"),
        ))),
        slot,
    );
    let result = reader.run().await;
    let got = consumer
        .changes
        .lock()
        .unwrap()
        .iter()
        .map(|c| {
            c.rows()
                .map(|r| r.get_value_as::<i32>("v").unwrap().unwrap_or_default())
                .collect()
        })
        .collect();
    LayoutRun {
        result,
        got,
        stats: stats.snapshot(),
    }
}

/// A change consumer that always fails (or panics) on change 1 of [`run_layout`].
fn failing_on_change_1(panics: bool) -> Fussy {
    Fussy {
        fail: vec![10],
        times: u32::MAX,
        panics,
        ..Fussy::default()
    }
}

/// The values of change `c` of `rows` rows of [`run_layout`].
fn whole_change(c: i32, rows: i32) -> Vec<i32> {
    (10 * c..10 * c + rows).collect()
}

/// With `skip`, a failed change is given up whole and alone, wherever it ends: the change
/// after it is delivered with all its rows (a change without `cdc$end_of_batch` is
/// completed by the next change's first row, which is not charged with its failure), and
/// one at a window's end does not stop the reader.
#[tokio::test(start_paused = true)]
async fn skip_gives_up_the_failed_change_and_delivers_the_next_whole() {
    for ends in ENDS {
        for rows in [1, 3] {
            for panics in [false, true] {
                let run = run_layout(
                    ends,
                    failing_on_change_1(panics),
                    crate::ConsumerErrorPolicy::skip().with_retry(1, Duration::from_millis(5)),
                    rows,
                )
                .await;
                let case = format!("{ends:?}, rows: {rows}, panics: {panics}");
                run.result.unwrap_or_else(|e| panic!("{case}: {e}"));
                assert_eq!(
                    run.got,
                    vec![
                        whole_change(0, rows),
                        whole_change(2, rows),
                        whole_change(3, rows)
                    ],
                    "{case}"
                );
                assert_eq!(
                    (run.stats.rows_skipped, run.stats.consumer_retries),
                    (1, 1),
                    "{case}"
                );
            }
        }
    }
}

/// With a dead-letter sink, the letters of a failed change hold its rows, in order (one
/// letter per row), wherever it ends; nothing else is lost.
#[tokio::test(start_paused = true)]
async fn dead_letters_of_a_failed_change_hold_its_rows() {
    for ends in ENDS {
        for rows in [1, 3] {
            for retries in [0, 1] {
                let sink = Arc::new(crate::stream::tests::MemorySink::default());
                let run = run_layout(
                    ends,
                    failing_on_change_1(false),
                    crate::ConsumerErrorPolicy::dead_letter(sink.clone())
                        .with_retry(retries, Duration::from_millis(5)),
                    rows,
                )
                .await;
                let case = format!("{ends:?}, rows: {rows}, retries: {retries}");
                run.result.unwrap_or_else(|e| panic!("{case}: {e}"));
                assert_eq!(
                    run.got,
                    vec![
                        whole_change(0, rows),
                        whole_change(2, rows),
                        whole_change(3, rows)
                    ],
                    "{case}"
                );
                let (s, t) = layout_change(ends, 1);
                let letters: Vec<(StreamID, i64, i32, Option<String>)> = sink
                    .letters
                    .lock()
                    .unwrap()
                    .iter()
                    .map(|l| {
                        assert!(l.error.contains("change of v=10"), "{case}: {}", l.error);
                        assert_eq!(l.attempts, retries + 1, "{case}");
                        let v = l.columns.iter().find(|(n, _)| n == "v");
                        (
                            l.stream_id,
                            crate::base::time::timeuuid_micros(&l.time),
                            l.batch_seq_no,
                            v.map(|(_, v)| v.clone()),
                        )
                    })
                    .collect();
                let expected: Vec<_> = (0..rows)
                    .map(|seq| (stream(s), t, seq, Some((10 + seq).to_string())))
                    .collect();
                assert_eq!(letters, expected, "{case}");
                assert_eq!(run.stats.rows_dead_lettered, 1, "{case}");
            }
        }
    }
}

/// A change that fails, then is taken, is delivered once, whole, and the next change
/// whole, wherever it ends.
#[tokio::test(start_paused = true)]
async fn a_retried_change_is_delivered_once_and_the_next_whole() {
    for ends in ENDS {
        for rows in [1, 3] {
            let flaky = Fussy {
                fail: vec![10],
                times: 2,
                ..Fussy::default()
            };
            let run = run_layout(
                ends,
                flaky.clone(),
                crate::ConsumerErrorPolicy::skip().with_retry(3, Duration::from_millis(5)),
                rows,
            )
            .await;
            let case = format!("{ends:?}, rows: {rows}");
            run.result.unwrap_or_else(|e| panic!("{case}: {e}"));
            assert_eq!(
                run.got,
                (0..4).map(|c| whole_change(c, rows)).collect::<Vec<_>>(),
                "{case}"
            );
            assert_eq!(flaky.failures.lock().unwrap().get(&10), Some(&2), "{case}");
            assert_eq!(
                (run.stats.consumer_retries, run.stats.rows_skipped),
                (2, 0),
                "{case}"
            );
        }
    }
}

/// With `stop`, the reader ends with a [`crate::CDCError::Consumer`] naming the failed
/// change (its stream, `cdc$time` and last row), wherever it ends.
#[tokio::test(start_paused = true)]
async fn stop_names_the_failed_change() {
    for ends in ENDS {
        for rows in [1, 3] {
            let run = run_layout(
                ends,
                failing_on_change_1(false),
                crate::ConsumerErrorPolicy::stop(),
                rows,
            )
            .await;
            let case = format!("{ends:?}, rows: {rows}");
            let err = run.result.unwrap_err();
            let (s, t) = layout_change(ends, 1);
            match &err {
                crate::CDCError::Consumer {
                    stream: named,
                    time,
                    batch_seq_no,
                    attempts,
                    ..
                } => assert_eq!(
                    (
                        *named,
                        crate::base::time::timeuuid_micros(time),
                        *batch_seq_no,
                        *attempts
                    ),
                    (stream(s), t, rows - 1, 1),
                    "{case}"
                ),
                other => panic!("{case}: unexpected error {other}"),
            }
            assert!(err.to_string().contains("change of v=10"), "{case}: {err}");
            assert_eq!(run.got, vec![whole_change(0, rows)], "{case}");
        }
    }
}
