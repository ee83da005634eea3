//! `scylla-cdc-bench latency --quick` end to end: the four readers read one table at once, and
//! the table says what each delivered. Only what holds on any machine is checked (every reader
//! is in the table; ours delivers every write, late ones included, exactly once), not timings.

use scylla_cdc_bench::latency::{LATE_HEADER, LateCount, table_line};

use crate::support::{bench, successful_stdout};

const READERS: [&str; 4] = [
    "ours, early reads",
    "ours, no early reads",
    "scylla-cdc 0.7",
    "scylla-cdc 0.7, 100 ms safety",
];

#[test]
fn a_quick_run_compares_four_readers_and_ours_delivers_every_late_row_once() {
    let out = bench("latency")
        .arg("--quick")
        .output()
        .expect("scylla-cdc-bench latency runs");
    let stdout = successful_stdout(&out);
    // The main table comes first: its header and one line per reader, every cell filled.
    let header = table_line(&stdout, "reader").unwrap_or_else(|| panic!("no table:\n{stdout}"));
    let late = header
        .iter()
        .position(|c| *c == LATE_HEADER)
        .unwrap_or_else(|| panic!("no late rows' column:\n{stdout}"));
    for reader in READERS {
        let line =
            table_line(&stdout, reader).unwrap_or_else(|| panic!("no line of {reader}:\n{stdout}"));
        assert_eq!(line.len(), header.len(), "{reader}:\n{stdout}");
        assert!(
            !line.contains(&"-") || reader.ends_with("safety"),
            "{stdout}"
        );
    }
    // Ours, with and without early reads: every late row delivered, none twice; every
    // on-time write delivered once (no cell says some were lost, none delivered, or twice).
    for reader in &READERS[..2] {
        let line = table_line(&stdout, reader).expect("seen above");
        let (delivered, written, twice) = LateCount::parse_cell(line[late])
            .unwrap_or_else(|| panic!("{reader}'s late rows: {:?}", line[late]));
        assert!(written > 0, "{stdout}");
        assert_eq!((delivered, twice), (written, 0), "{reader}:\n{stdout}");
        for delays in &line[2..late] {
            assert!(
                !["lost", "none", "twice"].iter().any(|w| delays.contains(w)),
                "{reader}: {delays}\n{stdout}"
            );
        }
    }
}
