//! What a crate of the workspace carries when it is published: both license texts of its
//! `MIT OR Apache-2.0` (the root's, byte for byte: `cargo package` packs the crates' links to
//! them as files) and the crates.io metadata (description, keywords, categories, repository
//! and homepage); the crates that are not published say `publish = false`.

use std::path::{Path, PathBuf};

/// The crates meant for crates.io, by directory.
const PUBLISHED: [&str; 5] = [
    "scylla-cdc",
    "scylla-emulator",
    "scylla-cdc-printer",
    "scylla-cdc-replicator",
    "scylla-cdc-kafka",
];

/// The workspace's other crates: test helpers, benchmarks, end-to-end tests.
const UNPUBLISHED: [&str; 3] = ["scylla-cdc-test-utils", "scylla-cdc-bench", "tests"];

/// The workspace root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is inside the workspace")
        .to_path_buf()
}

/// The text of `path` (relative to the root).
fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The `[package]` table of a crate's manifest, as lines.
fn package_table(dir: &str) -> Vec<String> {
    read(&format!("{dir}/Cargo.toml"))
        .lines()
        .skip_while(|l| l.trim() != "[package]")
        .skip(1)
        .take_while(|l| !l.starts_with('['))
        .map(str::to_owned)
        .collect()
}

/// The value of `key = ...` in a crate's `[package]` table.
fn value_of(dir: &str, key: &str) -> Option<String> {
    package_table(dir).iter().find_map(|line| {
        let (k, v) = line.split_once('=')?;
        (k.trim() == key).then(|| v.trim().to_owned())
    })
}

/// The strings of a one-line TOML array (`["a", "b"]`).
fn strings_of(array: &str) -> Vec<String> {
    array
        .trim_start_matches('[')
        .trim_end_matches(']')
        .split(',')
        .map(|s| s.trim().trim_matches('"').to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

#[test]
fn every_member_is_published_or_says_it_is_not() {
    let manifest = read("Cargo.toml");
    let members: Vec<String> = manifest
        .lines()
        .skip_while(|l| !l.starts_with("members"))
        .skip(1)
        .take_while(|l| !l.starts_with(']'))
        .map(|l| l.trim().trim_end_matches(',').trim_matches('"').to_owned())
        .collect();
    let mut known: Vec<&str> = PUBLISHED.iter().chain(&UNPUBLISHED).copied().collect();
    known.sort_unstable();
    let mut members: Vec<&str> = members.iter().map(String::as_str).collect();
    members.sort_unstable();
    assert_eq!(
        members, known,
        "a new crate goes into PUBLISHED (with the licenses and metadata) or UNPUBLISHED"
    );
    for dir in UNPUBLISHED {
        assert_eq!(value_of(dir, "publish").as_deref(), Some("false"), "{dir}");
    }
    for dir in PUBLISHED {
        assert_eq!(value_of(dir, "publish"), None, "{dir}");
    }
}

#[test]
fn published_crates_carry_both_license_texts() {
    assert!(
        read("Cargo.toml").contains("license = \"MIT OR Apache-2.0\""),
        "the workspace's license"
    );
    let mit = read("LICENSE-MIT");
    let apache = read("LICENSE-APACHE");
    assert!(mit.starts_with("MIT License") && mit.contains("The scylla-cdc authors"));
    assert!(apache.contains("Apache License") && apache.contains("Version 2.0, January 2004"));
    for dir in PUBLISHED {
        assert_eq!(value_of(dir, "license.workspace").as_deref(), Some("true"));
        assert_eq!(
            read(&format!("{dir}/LICENSE-MIT")),
            mit,
            "{dir}/LICENSE-MIT"
        );
        assert_eq!(
            read(&format!("{dir}/LICENSE-APACHE")),
            apache,
            "{dir}/LICENSE-APACHE"
        );
    }
}

#[test]
fn published_crates_have_crates_io_metadata() {
    for dir in PUBLISHED {
        let description = value_of(dir, "description").unwrap_or_default();
        assert!(description.len() > 20, "{dir}: description");
        for key in ["repository.workspace", "homepage.workspace"] {
            assert_eq!(value_of(dir, key).as_deref(), Some("true"), "{dir}: {key}");
        }
        // crates.io takes at most 5 keywords of at most 20 characters, ASCII letters first,
        // then letters, digits, `_` or `-`.
        let keywords = strings_of(&value_of(dir, "keywords").unwrap_or_default());
        assert!((1..=5).contains(&keywords.len()), "{dir}: {keywords:?}");
        for k in &keywords {
            assert!(
                k.len() <= 20
                    && k.starts_with(|c: char| c.is_ascii_alphabetic())
                    && k.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
                "{dir}: keyword {k:?}"
            );
        }
        // Slugs of crates.io's categories (its src/boot/categories.toml) that these use.
        let categories = strings_of(&value_of(dir, "categories").unwrap_or_default());
        assert!((1..=5).contains(&categories.len()), "{dir}: {categories:?}");
        for c in &categories {
            assert!(
                [
                    "asynchronous",
                    "command-line-utilities",
                    "database",
                    "database-implementations",
                    "development-tools::testing",
                ]
                .contains(&c.as_str()),
                "{dir}: category {c:?} (add it here once checked against crates.io's list)"
            );
        }
        // The crate's README, named or found by cargo.
        if let Some(readme) = value_of(dir, "readme") {
            let readme = readme.trim_matches('"');
            assert!(
                root().join(dir).join(readme).is_file(),
                "{dir}: readme {readme}"
            );
        }
    }
}
