//! The documentation's code is the code CI builds and tests: every Rust block of
//! `docs/tutorial.md` and of `README.md` is a verbatim part of an example program (compiled
//! by `cargo build --examples`; the tutorial's is also tested by `cargo test`), in order, and
//! together the blocks shown for a file are the whole file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The workspace root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is inside the workspace")
        .to_path_buf()
}

/// The ```rust blocks of `markdown`, each with the file named by the `<!-- file -->` comment on
/// the line before it (`None` when there is no such comment).
fn rust_blocks(markdown: &str) -> Vec<(Option<String>, String)> {
    let mut blocks = Vec::new();
    let mut lines = markdown.lines().peekable();
    let mut previous: Option<&str> = None;
    while let Some(line) = lines.next() {
        if line.trim_start().starts_with("```") {
            let fence_info = line.trim_start().trim_start_matches('`').trim();
            let mut body = String::new();
            for inner in lines.by_ref() {
                if inner.trim_start().starts_with("```") {
                    break;
                }
                body.push_str(inner);
                body.push('\n');
            }
            if fence_info == "rust" || fence_info.starts_with("rust,") {
                let file = previous
                    .and_then(|p| p.trim().strip_prefix("<!--"))
                    .and_then(|p| p.strip_suffix("-->"))
                    .map(|p| p.trim().to_string());
                blocks.push((file, body));
            }
            previous = None;
            continue;
        }
        previous = Some(line);
    }
    blocks
}

/// Checks that the Rust blocks of `markdown` (a file of the workspace) are, file by file, the
/// files they name; `path_of` maps the name in the `<!-- ... -->` line to the file's path.
/// Returns the names of the files shown.
fn check_blocks(markdown: &str, path_of: impl Fn(&str) -> PathBuf) -> Vec<String> {
    let text = std::fs::read_to_string(root().join(markdown)).expect("markdown file");
    let mut files: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (file, body) in rust_blocks(&text) {
        let file = file.unwrap_or_else(|| {
            panic!("{markdown}: a rust block without a `<!-- <file> -->` line before it:\n{body}")
        });
        files.entry(file).or_default().push(body);
    }
    for (file, blocks) in &files {
        let path = path_of(file);
        let actual = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{markdown} shows {file}: {}: {e}", path.display()));
        let shown = blocks.join("\n");
        assert!(
            shown == actual,
            "the blocks of {file} in {markdown} differ from {}:\n--- shown\n{shown}\n--- file\n{actual}",
            path.display()
        );
    }
    files.into_keys().collect()
}

#[test]
fn the_tutorials_code_blocks_are_the_example_program() {
    let shown = check_blocks("docs/tutorial.md", |file| {
        let name = file
            .strip_prefix("src/")
            .expect("a src/ file of the tutorial's project");
        root().join("scylla-cdc/examples/tutorial").join(name)
    });
    assert_eq!(shown, ["src/history.rs", "src/main.rs"]);
}

#[test]
fn the_readmes_code_blocks_are_example_programs() {
    let shown = check_blocks("README.md", |file| root().join(file));
    // The names of the files shown, sorted (the README shows the emulator's first).
    assert_eq!(
        shown,
        [
            "scylla-cdc/examples/first_consumer.rs",
            "scylla-emulator/examples/embedded.rs"
        ]
    );
}

#[test]
fn rust_blocks_are_found_with_their_files() {
    let md = "text\n<!-- src/a.rs -->\n```rust\nfn a() {}\n```\n\n```toml\n[x]\n```\n\
              ```rust\nfn b() {}\n```\n";
    assert_eq!(
        rust_blocks(md),
        [
            (Some("src/a.rs".to_string()), "fn a() {}\n".to_string()),
            (None, "fn b() {}\n".to_string()),
        ]
    );
}
