use super::columns::*;
use super::*;
use scylla::frame::response::result::NativeType;
use scylla::frame::response::result::{CollectionType, TableSpec};

/// A column spec of the test log table.
pub(crate) fn spec(name: &str, typ: ColumnType<'static>) -> ColumnSpec<'static> {
    ColumnSpec::owned(
        name.to_owned(),
        typ,
        TableSpec::owned("ks".into(), "t_scylla_cdc_log".into()),
    )
}

/// The log of `t (pk int, ck int, v int, s set<int>)`, in Scylla's column order.
pub(crate) fn log_specs() -> Vec<ColumnSpec<'static>> {
    let set_int = ColumnType::Collection {
        frozen: true,
        typ: CollectionType::Set(Box::new(ColumnType::Native(NativeType::Int))),
    };
    vec![
        spec(STREAM_ID, ColumnType::Native(NativeType::Blob)),
        spec(TIME, ColumnType::Native(NativeType::Timeuuid)),
        spec(BATCH_SEQ_NO, ColumnType::Native(NativeType::Int)),
        spec("cdc$deleted_elements_s", set_int.clone()),
        spec("cdc$deleted_s", ColumnType::Native(NativeType::Boolean)),
        spec("cdc$deleted_v", ColumnType::Native(NativeType::Boolean)),
        spec(END_OF_BATCH, ColumnType::Native(NativeType::Boolean)),
        spec(OPERATION, ColumnType::Native(NativeType::TinyInt)),
        spec(TTL, ColumnType::Native(NativeType::BigInt)),
        spec("ck", ColumnType::Native(NativeType::Int)),
        spec("pk", ColumnType::Native(NativeType::Int)),
        spec("s", set_int),
        spec("v", ColumnType::Native(NativeType::Int)),
    ]
}

/// Cells of one row of [`log_specs`], as raw bytes.
#[derive(Clone)]
pub(crate) struct TestRow {
    pub(crate) stream: [u8; 16],
    pub(crate) time: Uuid,
    pub(crate) seq: i32,
    pub(crate) op: i8,
    pub(crate) ttl: Option<i64>,
    pub(crate) eob: bool,
    pub(crate) pk: i32,
    pub(crate) ck: Option<i32>,
    pub(crate) v: Option<i32>,
    pub(crate) del_v: bool,
    pub(crate) s: Option<Vec<i32>>,
    pub(crate) dele_s: Option<Vec<i32>>,
}

fn set_bytes(items: &[i32]) -> Vec<u8> {
    let mut out = (items.len() as i32).to_be_bytes().to_vec();
    for i in items {
        out.extend_from_slice(&4i32.to_be_bytes());
        out.extend_from_slice(&i.to_be_bytes());
    }
    out
}

impl TestRow {
    /// A delta row of stream `stream` with the given time and sequence number.
    pub(crate) fn new(stream: [u8; 16], time: Uuid, seq: i32) -> Self {
        Self {
            stream,
            time,
            seq,
            op: 1,
            ttl: None,
            eob: true,
            pk: 0,
            ck: Some(0),
            v: None,
            del_v: false,
            s: None,
            dele_s: None,
        }
    }

    /// The row's cells in [`log_specs`] order.
    pub(crate) fn cells(&self) -> Vec<Option<Vec<u8>>> {
        vec![
            Some(self.stream.to_vec()),
            Some(self.time.as_bytes().to_vec()),
            Some(self.seq.to_be_bytes().to_vec()),
            self.dele_s.as_deref().map(set_bytes),
            None,
            self.del_v.then(|| vec![1]),
            self.eob.then(|| vec![1]),
            Some(vec![self.op as u8]),
            self.ttl.map(|t| t.to_be_bytes().to_vec()),
            self.ck.map(|c| c.to_be_bytes().to_vec()),
            Some(self.pk.to_be_bytes().to_vec()),
            self.s.as_deref().map(set_bytes),
            self.v.map(|v| v.to_be_bytes().to_vec()),
        ]
    }

    /// The row serialized as a CQL row (each cell as `[int length][bytes]`).
    pub(crate) fn serialize(&self) -> Vec<u8> {
        serialize_cells(&self.cells())
    }
}

/// Serializes cells as a CQL row.
pub(crate) fn serialize_cells(cells: &[Option<Vec<u8>>]) -> Vec<u8> {
    let mut out = Vec::new();
    for c in cells {
        match c {
            None => out.extend_from_slice(&(-1i32).to_be_bytes()),
            Some(b) => {
                out.extend_from_slice(&(b.len() as i32).to_be_bytes());
                out.extend_from_slice(b);
            }
        }
    }
    out
}

fn as_refs(cells: &[Option<Vec<u8>>]) -> Vec<Option<&[u8]>> {
    cells.iter().map(|c| c.as_deref()).collect()
}

/// Where each of a row's four cells is in its page (`None`: null).
type CellRanges = [Option<(usize, usize)>; 4];

/// A page of two rows (cells after their big-endian lengths, -1: null) and the cells
/// of each as slices of it.
fn two_row_page() -> (Vec<u8>, [CellRanges; 2]) {
    let mut page = Vec::new();
    let mut put = |cell: Option<&[u8]>| match cell {
        None => {
            page.extend_from_slice(&(-1i32).to_be_bytes());
            None
        }
        Some(c) => {
            page.extend_from_slice(&(c.len() as i32).to_be_bytes());
            let at = page.len();
            page.extend_from_slice(c);
            Some((at, at + c.len()))
        }
    };
    let first = [put(Some(b"ab")), put(None), put(Some(b"")), put(None)];
    let second = [
        put(Some(b"xyz")),
        put(Some(b"q")),
        put(None),
        put(Some(b"k")),
    ];
    (page, [first, second])
}

#[test]
fn a_row_span_covers_its_cells_and_trailing_nulls_and_reads_back() {
    let (page, rows) = two_row_page();
    let slices = |r: &CellRanges| -> Vec<Option<&[u8]>> {
        r.iter().map(|c| c.map(|(a, b)| &page[a..b])).collect()
    };
    let first = slices(&rows[0]);
    let second = slices(&rows[1]);
    // Row one: 4+2, 4 (null), 4+0 (empty), 4 (trailing null) bytes.
    let span = row_span(&page, &first).expect("a span");
    assert_eq!(span, &page[..18]);
    let span2 = row_span(&page, &second).expect("a span");
    assert_eq!(span2, &page[18..]);
    for (span, cells) in [(span, &first), (span2, &second)] {
        let row = CellSource::Span {
            cells: span,
            count: 4,
        };
        let index = Arc::new(ColumnIndex::new(&log_specs()).unwrap());
        let specs = log_specs();
        let r = RowRef {
            index: &index,
            specs: &specs,
            cells: row,
        };
        let read: Vec<_> = (0..4).map(|p| r.cell(p).unwrap()).collect();
        assert_eq!(&read, cells);
        assert_eq!(r.cell(4), None);
    }
    // A row whose first cell is null, or whose cells are not in the page, has none.
    let mut null_first = first.clone();
    null_first[0] = None;
    assert_eq!(row_span(&page, &null_first), None);
    let elsewhere = b"ab".to_vec();
    assert_eq!(row_span(&page, &[Some(&elsewhere[..])]), None);
    assert_eq!(row_span(&[], &first), None);
    // A span cut short reads as missing cells, not a panic.
    let cut = CellSource::Span {
        cells: &page[..5],
        count: 4,
    };
    let index = Arc::new(ColumnIndex::new(&log_specs()).unwrap());
    let specs = log_specs();
    let r = RowRef {
        index: &index,
        specs: &specs,
        cells: cut,
    };
    assert_eq!(r.cell(0), None);
    assert_eq!(r.cell(3), None);
}

#[test]
fn operation_codes() {
    assert_eq!(
        OperationType::from_code(0),
        (OperationType::PreImage, false)
    );
    assert_eq!(
        OperationType::from_code(2),
        (OperationType::RowInsert, false)
    );
    assert_eq!(
        OperationType::from_code(8),
        (OperationType::RowRangeDelExclRight, false)
    );
    assert_eq!(
        OperationType::from_code(9),
        (OperationType::PostImage, false)
    );
    assert_eq!(
        OperationType::from_code(-3),
        (OperationType::RowDelete, true)
    );
    assert_eq!(
        OperationType::from_code(-4),
        (OperationType::PartitionDelete, true)
    );
    assert_eq!(
        OperationType::from_code(42),
        (OperationType::Unknown(42), false)
    );
    assert_eq!(OperationType::Unknown(-7).to_string(), "Unknown(-7)");
    for code in -128i8..=127 {
        let (op, expiration) = OperationType::from_code(code);
        assert_eq!(op.code(expiration), code, "{op}");
    }
}

#[test]
fn index_finds_columns_and_companions() {
    let specs = log_specs();
    let idx = ColumnIndex::new(&specs).unwrap();
    assert!(idx.matches(&specs));
    assert_eq!(idx.len(), 13);
    assert_eq!(idx.deleted[12], Some(5));
    assert_eq!(idx.deleted_elements[11], Some(3));
    assert_eq!(idx.deleted[10], None);
    let mut other = specs.clone();
    other.pop();
    assert!(!idx.matches(&other));
}

#[test]
fn index_rejects_missing_or_mistyped_metadata() {
    let mut specs = log_specs();
    specs.remove(1);
    assert!(ColumnIndex::new(&specs).unwrap_err().contains("cdc$time"));
    let mut specs = log_specs();
    specs[7] = spec(OPERATION, ColumnType::Native(NativeType::Text));
    assert!(
        ColumnIndex::new(&specs)
            .unwrap_err()
            .contains("cdc$operation")
    );
}

#[test]
fn header_decodes_metadata() {
    let specs = log_specs();
    let idx = ColumnIndex::new(&specs).unwrap();
    let t = crate::base::time::tests::timeuuid(5, 7);
    let mut r = TestRow::new([3; 16], t, 2);
    r.op = -4;
    r.ttl = Some(100);
    let cells = r.cells();
    let h = idx.header(&as_refs(&cells)).unwrap();
    assert_eq!(h.stream_id, StreamID::new([3; 16]));
    assert_eq!(h.time, t);
    assert_eq!(h.batch_seq_no, 2);
    assert_eq!(h.operation, OperationType::PartitionDelete);
    assert!(h.is_expiration);
    assert_eq!(h.ttl, Some(100));
    assert!(h.end_of_batch);
}

#[test]
fn header_rejects_bad_rows_without_panicking() {
    let specs = log_specs();
    let idx = ColumnIndex::new(&specs).unwrap();
    let good = TestRow::new([1; 16], crate::base::time::tests::timeuuid(1, 1), 0).cells();
    for (pos, bad) in [
        (0, None),
        (0, Some(vec![1; 15])),
        (1, None),
        (1, Some(vec![0; 3])),
        (2, Some(vec![0; 2])),
        (7, None),
        (7, Some(vec![0; 3])),
        (8, Some(vec![0; 3])),
    ] {
        let mut cells = good.clone();
        cells[pos] = bad;
        assert!(idx.header(&as_refs(&cells)).is_err(), "column {pos}");
    }
    // Too few cells: every lookup is checked.
    assert!(idx.header(&[]).is_err());
}

#[test]
fn row_accessors() {
    let specs = log_specs();
    let idx = Arc::new(ColumnIndex::new(&specs).unwrap());
    let mut r = TestRow::new([1; 16], crate::base::time::tests::timeuuid(1, 1), 0);
    r.v = Some(42);
    r.del_v = true;
    r.dele_s = Some(vec![3, 1]);
    r.pk = 9;
    let cells = r.cells();
    let refs = as_refs(&cells);
    let h = idx.header(&refs).unwrap();
    let mut row = CDCRow::new(h, &idx, &specs, &refs);

    assert_eq!(row.get_value("v").unwrap(), Some(CqlValue::Int(42)));
    assert_eq!(row.get_value_as::<i32>("pk").unwrap(), Some(9));
    assert_eq!(row.get_value("s").unwrap(), None);
    assert!(matches!(
        row.get_value("nope"),
        Err(ColumnError::NoSuchColumn(n)) if n == "nope"
    ));
    assert!(matches!(
        row.get_value_as::<String>("v"),
        Err(ColumnError::Type { .. })
    ));
    assert!(row.is_value_deleted("v"));
    assert!(!row.is_value_deleted("s"));
    assert!(!row.is_value_deleted("pk"));
    assert!(!row.is_value_deleted("nope"));
    assert_eq!(
        row.get_deleted_elements("s").unwrap(),
        Some(CqlValue::Set(vec![CqlValue::Int(3), CqlValue::Int(1)]))
    );
    assert!(row.get_deleted_elements("v").is_err());
    assert!(row.column_exists("pk") && row.column_exists("v"));
    assert!(!row.column_exists("cdc$ttl") && !row.column_exists("x"));
    assert!(row.column_deletable("v") && !row.column_deletable("ck"));
    assert!(row.collection_exists("s") && !row.collection_exists("v"));
    assert_eq!(
        row.get_non_cdc_column_names().collect::<Vec<_>>(),
        vec!["ck", "pk", "s", "v"]
    );
    assert!(matches!(
        row.column_type("v"),
        Some(ColumnType::Native(NativeType::Int))
    ));

    assert_eq!(row.take_value("v").unwrap(), Some(CqlValue::Int(42)));
    assert_eq!(row.take_value("v").unwrap(), None);
    assert_eq!(row.get_value("v").unwrap(), None);
    assert!(row.take_deleted_elements("s").unwrap().is_some());
    assert_eq!(row.take_deleted_elements("s").unwrap(), None);
    assert!(format!("{row:?}").contains("RowUpdate"));
    assert_eq!(row.timestamp_micros(), 1);
    assert_eq!(row.timestamp().timestamp_micros(), 1);
}

#[test]
fn malformed_value_is_an_error() {
    let specs = log_specs();
    let idx = Arc::new(ColumnIndex::new(&specs).unwrap());
    let r = TestRow::new([1; 16], crate::base::time::tests::timeuuid(1, 1), 0);
    let mut cells = r.cells();
    cells[12] = Some(vec![1, 2, 3]); // an int of 3 bytes
    cells[11] = Some(vec![0, 0, 0, 5]); // a set claiming 5 elements, with none
    let refs = as_refs(&cells);
    let h = idx.header(&refs).unwrap();
    let row = CDCRow::new(h, &idx, &specs, &refs);
    assert!(matches!(
        row.get_value("v"),
        Err(ColumnError::Decode { .. })
    ));
    assert!(matches!(
        row.get_value("s"),
        Err(ColumnError::Decode { .. })
    ));
}
