//! The documentation's code is the code CI builds and tests: every Rust block of
//! `docs/tutorial.md` is a verbatim part of the tutorial's example program
//! (`scylla-cdc/examples/tutorial/`, compiled and tested by `cargo test`), in order, and
//! together the blocks of each file are the whole file.

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

#[test]
fn the_tutorials_code_blocks_are_the_example_program() {
    let tutorial = std::fs::read_to_string(root().join("docs/tutorial.md")).expect("tutorial");
    let example = root().join("scylla-cdc/examples/tutorial");
    let mut files: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (file, body) in rust_blocks(&tutorial) {
        let file = file.unwrap_or_else(|| {
            panic!("a rust block without a `<!-- src/<file>.rs -->` line before it:\n{body}")
        });
        files.entry(file).or_default().push(body);
    }
    assert_eq!(
        files.keys().collect::<Vec<_>>(),
        ["src/history.rs", "src/main.rs"],
        "the tutorial shows these files"
    );
    for (file, blocks) in &files {
        let name = file.strip_prefix("src/").expect("src/ file");
        let path = example.join(name);
        let actual = std::fs::read_to_string(&path).expect("example file");
        let shown = blocks.join("\n");
        assert!(
            shown == actual,
            "the blocks of {file} in docs/tutorial.md differ from {}:\n--- shown\n{shown}\n--- file\n{actual}",
            path.display()
        );
    }
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
