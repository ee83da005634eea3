//! The documentation's code is the code CI builds and tests: every Rust block of
//! `docs/tutorial.md` and of the READMEs (the root's and every crate's) is a verbatim part of
//! an example program (compiled by `cargo build --examples`; the tutorial's is also tested by
//! `cargo test`), in order, and together the blocks shown for a file are the whole file.

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

/// The READMEs that show Rust code, and the files their blocks show (sorted); every other
/// README of the workspace shows none.
const READMES_WITH_CODE: [(&str, &[&str]); 2] = [
    (
        "scylla-cdc/README.md",
        &["scylla-cdc/examples/first_consumer.rs"],
    ),
    (
        "scylla-emulator/README.md",
        &["scylla-emulator/examples/embedded.rs"],
    ),
];

/// The READMEs of the workspace: the root's and those of its top-level directories.
fn readmes() -> Vec<String> {
    let mut found = vec!["README.md".to_string()];
    let mut dirs: Vec<_> = std::fs::read_dir(root())
        .expect("the workspace root")
        .filter_map(Result::ok)
        .filter(|e| e.path().join("README.md").is_file())
        .map(|e| format!("{}/README.md", e.file_name().to_string_lossy()))
        .collect();
    dirs.sort();
    found.extend(dirs);
    found
}

#[test]
fn the_readmes_code_blocks_are_example_programs() {
    let readmes = readmes();
    for (readme, _) in READMES_WITH_CODE {
        assert!(readmes.iter().any(|r| r == readme), "{readme} is missing");
    }
    for readme in &readmes {
        // The `<!-- file -->` names are relative to the workspace root.
        let shown = check_blocks(readme, |file| root().join(file));
        let expected = READMES_WITH_CODE
            .iter()
            .find(|(r, _)| r == readme)
            .map(|(_, files)| files.to_vec())
            .unwrap_or_default();
        assert_eq!(shown, expected, "the example files {readme} shows");
    }
}

/// GitHub's anchor of a Markdown heading: lower case, spaces as `-`, punctuation other than
/// `-` and `_` dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of the headings of `markdown` (outside code blocks).
fn anchors(markdown: &str) -> Vec<String> {
    let mut in_code = false;
    let mut found = Vec::new();
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        } else if !in_code && line.starts_with('#') {
            found.push(slug(line.trim_start_matches('#')));
        }
    }
    found
}

/// The targets of the inline links `[text](target)` of `markdown`.
fn link_targets(markdown: &str) -> Vec<String> {
    markdown
        .match_indices("](")
        .filter_map(|(at, m)| {
            let rest = &markdown[at + m.len()..];
            rest.find(')').map(|end| rest[..end].to_string())
        })
        .collect()
}

#[test]
fn the_documents_links_lead_to_files_and_headings_that_exist() {
    let mut documents = readmes();
    documents.push("ARCHITECTURE.md".to_string());
    let mut docs: Vec<String> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .filter_map(Result::ok)
        .map(|e| format!("docs/{}", e.file_name().to_string_lossy()))
        .filter(|name| name.ends_with(".md"))
        .collect();
    docs.sort();
    documents.extend(docs);
    let mut problems = Vec::new();
    for document in &documents {
        let path = root().join(document);
        let text = std::fs::read_to_string(&path).expect("a document");
        let dir = path.parent().expect("a directory");
        for target in link_targets(&text) {
            if target.contains("://") || target.starts_with("mailto:") || target.contains(' ') {
                continue;
            }
            let (file, anchor) = match target.split_once('#') {
                Some((file, anchor)) => (file, Some(anchor)),
                None => (target.as_str(), None),
            };
            let linked = if file.is_empty() {
                path.clone()
            } else {
                dir.join(file)
            };
            if !linked.exists() {
                problems.push(format!(
                    "{document}: ({target}): no file {}",
                    linked.display()
                ));
                continue;
            }
            if let Some(anchor) = anchor
                && linked.extension().is_some_and(|e| e == "md")
            {
                let headings = anchors(&std::fs::read_to_string(&linked).expect("a document"));
                if !headings.iter().any(|h| h == anchor) {
                    problems.push(format!(
                        "{document}: ({target}): no heading #{anchor} in {}",
                        linked.display()
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

#[test]
fn anchors_are_githubs() {
    assert_eq!(
        slug(" This reader vs scylla-cdc-rust 0.7"),
        "this-reader-vs-scylla-cdc-rust-07"
    );
    assert_eq!(
        slug("Snapshot reads (`--snapshot`)"),
        "snapshot-reads---snapshot"
    );
    assert_eq!(
        link_targets("see [a](b.md#c) and [d](https://e/f)."),
        ["b.md#c", "https://e/f"]
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
