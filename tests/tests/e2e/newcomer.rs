//! The root README's first steps work as written, from this checkout. The README marks its
//! code blocks with `<!-- newcomer: first-commands -->`, `<!-- newcomer: install -->` and
//! `<!-- newcomer: dependency -->`; for each line of them this test:
//!
//! - runs `cargo run -p PACKAGE -- ARGS` as the program it names, built with these tests
//!   (the printer as `e2e-printer`, its own `main`), with those arguments: the demo must
//!   print changes of its table, then it is stopped with SIGTERM (the README says Ctrl-C)
//!   and must exit with code 0;
//! - does not run `cargo test --workspace` (this test is part of it), only checks that it
//!   names the whole workspace;
//! - does not run `cargo install` (no network in tests), only checks what it needs: the
//!   repository URL is the workspace's `repository`, each package exists with a binary,
//!   each `--path` is that package's directory, each feature exists and
//!   `--no-default-features` leaves out a default feature; and that every published program
//!   has an install line;
//! - for the dependency snippet (`name = { git = "URL" }`), checks the URL, that `name` is a
//!   library of the workspace with the features named, and that every other crate the
//!   snippet names, which the library also depends on (the `scylla` driver), is asked for at
//!   the library's major version.
//!
//! It also checks that the prerequisites name the workspace's `rust-version`. Packages,
//! targets, features and versions come from `cargo metadata --no-deps` (offline).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use serde_json::Value;

use crate::support::{Process, TempDir};

/// The workspace root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is inside the workspace")
        .to_path_buf()
}

fn readme() -> String {
    std::fs::read_to_string(root().join("README.md")).expect("README.md")
}

/// The lines of the code blocks after the lines `<!-- newcomer: {name} -->` (one or more),
/// without blank lines and `#` comments.
fn block(markdown: &str, name: &str) -> Vec<String> {
    let marker = format!("<!-- newcomer: {name} -->");
    let lines: Vec<&str> = markdown.lines().collect();
    let mut found = Vec::new();
    let mut markers = 0;
    for at in (0..lines.len()).filter(|&i| lines[i].trim() == marker) {
        markers += 1;
        let mut rest = lines[at + 1..].iter().skip_while(|l| l.trim().is_empty());
        let fence = rest.next().copied().unwrap_or_default();
        assert!(
            fence.trim_start().starts_with("```"),
            "README.md: `{marker}` is followed by {fence:?}, not a code block"
        );
        found.extend(
            rest.take_while(|l| !l.trim_start().starts_with("```"))
                .map(|l| l.split(" #").next().unwrap_or_default().trim().to_string())
                .filter(|l| !l.is_empty() && !l.starts_with('#')),
        );
    }
    assert!(
        markers > 0,
        "README.md: no `{marker}` line before a code block"
    );
    found
}

/// A package of the workspace, as `cargo metadata` describes it.
#[derive(Debug)]
struct Package {
    /// Its directory, relative to the root.
    dir: PathBuf,
    /// Its binaries' names.
    bins: Vec<String>,
    /// Whether it has a library.
    lib: bool,
    /// Its features and what each enables.
    features: BTreeMap<String, Vec<String>>,
    /// Whether it may be published (`publish` is not `false`).
    published: bool,
    /// `repository`.
    repository: Option<String>,
    /// `rust-version`.
    rust_version: Option<String>,
    /// Its dependencies' names and version requirements.
    dependencies: BTreeMap<String, String>,
}

/// The workspace's packages by name (`cargo metadata --no-deps --offline`).
fn workspace() -> BTreeMap<String, Package> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into());
    let out = std::process::Command::new(cargo)
        .args([
            "metadata",
            "--no-deps",
            "--offline",
            "--format-version",
            "1",
        ])
        .current_dir(root())
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata's JSON");
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s.as_str().map(str::to_string))
            .collect()
    };
    let root = root().canonicalize().expect("the workspace root");
    let mut packages = BTreeMap::new();
    for p in metadata["packages"].as_array().expect("packages") {
        let manifest = PathBuf::from(p["manifest_path"].as_str().expect("manifest_path"));
        let manifest = manifest.canonicalize().unwrap_or(manifest);
        let dir = manifest
            .parent()
            .and_then(|d| d.strip_prefix(&root).ok())
            .expect("a package inside the workspace")
            .to_path_buf();
        let kinds = |t: &Value| strings(&t["kind"]);
        let targets = p["targets"].as_array().expect("targets");
        let bins = targets
            .iter()
            .filter(|t| kinds(t).contains(&"bin".to_string()))
            .map(|t| t["name"].as_str().expect("name").to_string())
            .collect();
        let lib = targets
            .iter()
            .any(|t| kinds(t).contains(&"lib".to_string()));
        let features = p["features"]
            .as_object()
            .expect("features")
            .iter()
            .map(|(name, enables)| (name.clone(), strings(enables)))
            .collect();
        // `publish = false` is an empty list of registries.
        let published = !p["publish"].as_array().is_some_and(Vec::is_empty);
        let dependencies = p["dependencies"]
            .as_array()
            .expect("dependencies")
            .iter()
            .filter(|d| d["kind"].is_null())
            .map(|d| {
                let name = d["rename"].as_str().or(d["name"].as_str()).expect("name");
                (
                    name.to_string(),
                    d["req"].as_str().unwrap_or("*").to_string(),
                )
            })
            .collect();
        let text = |key: &str| p[key].as_str().map(str::to_string);
        packages.insert(
            p["name"].as_str().expect("name").to_string(),
            Package {
                dir,
                bins,
                lib,
                features,
                published,
                repository: text("repository"),
                rust_version: text("rust_version"),
                dependencies,
            },
        );
    }
    packages
}

/// The workspace's repository URL: the one every published package names.
fn repository(packages: &BTreeMap<String, Package>) -> String {
    let urls: std::collections::BTreeSet<&str> = packages
        .values()
        .filter(|p| p.published)
        .filter_map(|p| p.repository.as_deref())
        .collect();
    assert_eq!(urls.len(), 1, "the published packages name {urls:?}");
    urls.into_iter().next().expect("one URL").to_string()
}

/// The binary built with these tests that runs `package`'s program (its own `main`).
fn binary_of(package: &str) -> Option<&'static str> {
    match package {
        "scylla-cdc-printer" => Some(env!("CARGO_BIN_EXE_e2e-printer")),
        "scylla-cdc-replicator" => Some(env!("CARGO_BIN_EXE_e2e-replicator")),
        _ => None,
    }
}

/// A `cargo run` line: the package and the program's arguments.
fn parse_cargo_run(words: &[&str]) -> anyhow::Result<(String, Vec<String>)> {
    let (ours, args) = match words.iter().position(|w| *w == "--") {
        Some(at) => (&words[..at], &words[at + 1..]),
        None => (words, &[][..]),
    };
    let mut package = None;
    let mut i = 0;
    while i < ours.len() {
        match ours[i] {
            "-p" | "--package" => {
                package = ours.get(i + 1).map(|p| p.to_string());
                i += 1;
            }
            "--release" | "-q" | "--quiet" | "--locked" => {}
            other => bail!("cargo run: the test does not know the option {other:?}"),
        }
        i += 1;
    }
    let package = package.context("cargo run without -p PACKAGE")?;
    Ok((package, args.iter().map(|a| a.to_string()).collect()))
}

/// The lines of the demo's output that are changes of its table (the pretty format: a
/// line `<RFC 3339 time> demo.orders <operation> ...` per log row).
fn demo_changes(out: &str) -> usize {
    out.lines()
        .filter(|line| {
            let mut words = line.split_whitespace();
            let time = words.next().unwrap_or_default();
            chrono::DateTime::parse_from_rfc3339(time).is_ok()
                && words.next() == Some("demo.orders")
        })
        .count()
}

/// Runs `package`'s program with `args` as the README's `cargo run` line does; the demo
/// until it printed `changes` changes, then SIGTERM, which must end it with code 0.
async fn run_like_cargo_run(package: &str, args: &[String]) -> anyhow::Result<()> {
    let binary = binary_of(package).with_context(|| {
        format!("no binary of {package} is built with the tests: teach newcomer.rs to run it")
    })?;
    ensure!(
        args.iter().any(|a| a == "--demo"),
        "`cargo run -p {package} -- {}`: the test runs the demo only (a first command needs no \
         cluster of the user's)",
        args.join(" ")
    );
    let dir = TempDir::new();
    let mut program = Process::spawn(binary, package, args, &dir)?;
    let changes = 5;
    let deadline = Instant::now() + Duration::from_secs(120);
    while demo_changes(&program.out()) < changes {
        program.check_running()?;
        ensure!(
            Instant::now() < deadline,
            "{package} {}: fewer than {changes} changes printed in 120 s; stdout:\n{}\nstderr:\n{}",
            args.join(" "),
            program.out(),
            program.err()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let code = program.terminate(Duration::from_secs(60)).await?;
    ensure!(
        code == Some(0),
        "{package} {} stopped by SIGTERM exited with {code:?}: {}",
        args.join(" "),
        program.err()
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_commands_work_as_written() -> anyhow::Result<()> {
    let packages = workspace();
    let commands = block(&readme(), "first-commands");
    ensure!(!commands.is_empty(), "README.md: no first command");
    for command in &commands {
        let words: Vec<&str> = command.split_whitespace().collect();
        match words[..] {
            ["cargo", "run", ref rest @ ..] => {
                let (package, args) = parse_cargo_run(rest)?;
                let p = packages
                    .get(&package)
                    .with_context(|| format!("`{command}`: no package {package}"))?;
                ensure!(
                    p.bins == [package.clone()],
                    "`{command}`: cargo runs {package}'s only binary; it has {:?}",
                    p.bins
                );
                run_like_cargo_run(&package, &args)
                    .await
                    .with_context(|| format!("`{command}`"))?;
            }
            ["cargo", "test", ref rest @ ..] => ensure!(
                rest == ["--workspace"],
                "`{command}`: the first test command runs every test (`cargo test --workspace`)"
            ),
            _ => bail!("`{command}`: the test does not know how to check this command"),
        }
    }
    Ok(())
}

/// What a `cargo install` line asks for.
#[derive(Debug, Default)]
struct Install {
    git: Option<String>,
    path: Option<String>,
    package: Option<String>,
    no_default_features: bool,
    features: Vec<String>,
    locked: bool,
}

fn parse_install(words: &[&str]) -> anyhow::Result<Install> {
    let mut install = Install::default();
    let mut words = words.iter();
    while let Some(word) = words.next() {
        let mut value = || {
            words
                .next()
                .map(|v| v.to_string())
                .with_context(|| format!("{word} without its value"))
        };
        match *word {
            "--locked" => install.locked = true,
            "--git" => install.git = Some(value()?),
            "--path" => install.path = Some(value()?),
            "--no-default-features" => install.no_default_features = true,
            "--features" | "-F" => install
                .features
                .extend(value()?.split(',').map(str::to_string)),
            w if w.starts_with('-') => bail!("the test does not know the option {w:?}"),
            w => {
                ensure!(install.package.is_none(), "two packages in one line");
                install.package = Some(w.to_string());
            }
        }
    }
    Ok(install)
}

#[test]
fn the_install_commands_name_what_the_workspace_has() {
    let packages = workspace();
    let url = repository(&packages);
    let mut problems = Vec::new();
    let mut installed = std::collections::BTreeSet::new();
    for line in block(&readme(), "install") {
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some(["cargo", "install"]) = words.get(..2) else {
            problems.push(format!("`{line}`: not a cargo install command"));
            continue;
        };
        let install = match parse_install(&words[2..]) {
            Ok(i) => i,
            Err(e) => {
                problems.push(format!("`{line}`: {e}"));
                continue;
            }
        };
        let from_path = install.path.as_ref().and_then(|path| {
            packages
                .iter()
                .find(|(_, p)| p.dir == Path::new(path))
                .map(|(name, _)| name.clone())
        });
        let name = match (&install.git, &install.path, &install.package) {
            (Some(git), None, Some(name)) => {
                if *git != url {
                    problems.push(format!(
                        "`{line}`: --git {git} is not the repository {url} (Cargo.toml)"
                    ));
                }
                name.clone()
            }
            (None, Some(path), None) => match from_path {
                Some(name) => name,
                None => {
                    problems.push(format!("`{line}`: --path {path} is no package's directory"));
                    continue;
                }
            },
            _ => {
                problems.push(format!(
                    "`{line}`: install with --git URL PACKAGE or with --path DIR"
                ));
                continue;
            }
        };
        if !install.locked {
            problems.push(format!(
                "`{line}`: without --locked, cargo resolves newer dependencies than Cargo.lock's"
            ));
        }
        let Some(package) = packages.get(&name) else {
            problems.push(format!("`{line}`: no package {name} in the workspace"));
            continue;
        };
        if package.bins.is_empty() {
            problems.push(format!("`{line}`: {name} has no binary to install"));
        }
        for feature in &install.features {
            if !package.features.contains_key(feature) {
                problems.push(format!("`{line}`: {name} has no feature {feature}"));
            }
        }
        if install.no_default_features && package.features.get("default").is_none_or(Vec::is_empty)
        {
            problems.push(format!(
                "`{line}`: {name} has no default feature for --no-default-features to leave out"
            ));
        }
        installed.insert(name);
    }
    for (name, package) in &packages {
        if package.published && !package.bins.is_empty() && !installed.contains(name) {
            problems.push(format!(
                "README.md: the program {name} is published but has no install line"
            ));
        }
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

/// `name = "req"` or `name = { key = value, ... }` (one line): the name and its keys
/// (`version` for the first form), values without quotes.
fn parse_dependency(line: &str) -> Option<(String, BTreeMap<String, String>)> {
    let (name, spec) = line.split_once('=')?;
    let name = name.trim().to_string();
    let spec = spec.trim();
    let mut keys = BTreeMap::new();
    if let Some(inner) = spec.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
        // Split at the commas outside brackets (a features list holds commas).
        let mut depth = 0;
        let mut part = String::new();
        let mut parts = Vec::new();
        for c in inner.chars() {
            match c {
                '[' => depth += 1,
                ']' => depth -= 1,
                ',' if depth == 0 => {
                    parts.push(std::mem::take(&mut part));
                    continue;
                }
                _ => {}
            }
            part.push(c);
        }
        parts.push(part);
        for part in parts.iter().filter(|p| !p.trim().is_empty()) {
            let (key, value) = part.split_once('=')?;
            keys.insert(key.trim().to_string(), value.trim().replace('"', ""));
        }
    } else {
        keys.insert("version".to_string(), spec.replace('"', ""));
    }
    Some((name, keys))
}

/// The major version of a requirement (`1.9`, `^1.9`, `=1.9.0`): `1`.
fn major(req: &str) -> Option<String> {
    let req = req.trim_start_matches(['^', '=', '~', ' ']);
    req.split('.').next().map(str::to_string)
}

#[test]
fn the_dependency_snippet_names_the_library_of_this_repository() {
    let packages = workspace();
    let url = repository(&packages);
    let mut problems = Vec::new();
    let mut libraries = Vec::new();
    let lines = block(&readme(), "dependency");
    let dependencies: Vec<(String, BTreeMap<String, String>)> = lines
        .iter()
        .filter(|l| !l.starts_with('['))
        .map(|l| {
            parse_dependency(l).unwrap_or_else(|| panic!("README.md: {l:?} is not a dependency"))
        })
        .collect();
    for (name, keys) in &dependencies {
        let Some(git) = keys.get("git") else {
            continue;
        };
        if *git != url {
            problems.push(format!(
                "{name}: git = {git} is not the repository {url} (Cargo.toml)"
            ));
        }
        let crate_name = keys.get("package").unwrap_or(name);
        let Some(package) = packages.get(crate_name) else {
            problems.push(format!("{name}: the workspace has no package {crate_name}"));
            continue;
        };
        if !package.lib {
            problems.push(format!("{name}: {crate_name} is not a library"));
        }
        let features = keys.get("features").map(|f| {
            f.trim_matches(['[', ']'])
                .split(',')
                .map(|f| f.trim().to_string())
                .filter(|f| !f.is_empty())
                .collect::<Vec<_>>()
        });
        for feature in features.into_iter().flatten() {
            if !package.features.contains_key(&feature) {
                problems.push(format!("{name}: {crate_name} has no feature {feature}"));
            }
        }
        libraries.push(crate_name.clone());
    }
    if libraries.is_empty() {
        problems.push(format!("no git dependency on {url}"));
    }
    // The crates the snippet names beside the library, which the library depends on too
    // (the driver: a `Session` of another major version would not fit the builder).
    for library in &libraries {
        let ours = &packages[library].dependencies;
        for (name, keys) in &dependencies {
            let (Some(req), Some(our_req)) = (keys.get("version"), ours.get(name)) else {
                continue;
            };
            if major(req) != major(our_req) {
                problems.push(format!(
                    "{name} = {req:?}: {library} depends on {name} {our_req}, another major \
                     version"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

#[test]
fn the_prerequisites_name_the_rust_version() {
    let packages = workspace();
    let version = packages["scylla-cdc"]
        .rust_version
        .clone()
        .expect("rust-version in Cargo.toml");
    let text = format!("Rust {version}");
    assert!(
        readme().contains(&text),
        "README.md does not say {text:?} (the workspace's rust-version)"
    );
}

#[test]
fn blocks_and_commands_are_read_as_written() {
    let md = "x\n<!-- newcomer: first-commands -->\n\n```text\ncargo run -p a -- --demo   # c\n\
              # a comment\n\ncargo test --workspace\n```\n";
    assert_eq!(
        block(md, "first-commands"),
        ["cargo run -p a -- --demo", "cargo test --workspace"]
    );
    let two = format!("{md}\n<!-- newcomer: first-commands -->\n```text\ncargo b\n```\n");
    assert_eq!(block(&two, "first-commands").len(), 3);
    let (package, args) =
        parse_cargo_run(&["--release", "-p", "x", "--", "--demo", "--format", "json"]).unwrap();
    assert_eq!(
        (package.as_str(), args),
        (
            "x",
            vec!["--demo".to_string(), "--format".into(), "json".into()]
        )
    );
    let (name, keys) =
        parse_dependency(r#"scylla-cdc = { git = "https://h/r", features = ["a", "b"] }"#).unwrap();
    assert_eq!(name, "scylla-cdc");
    assert_eq!(keys["git"], "https://h/r");
    assert_eq!(keys["features"], "[a, b]");
    assert_eq!(
        parse_dependency(r#"scylla = "1.9""#).unwrap().1["version"],
        "1.9"
    );
    assert_eq!(major("^1.9"), Some("1".into()));
    let i = parse_install(&["--locked", "--git", "u", "p", "--no-default-features"]).unwrap();
    assert!(i.locked && i.no_default_features);
    assert_eq!(
        (i.git.as_deref(), i.package.as_deref()),
        (Some("u"), Some("p"))
    );
    assert_eq!(
        demo_changes("2024-05-01T12:00:00.000001Z demo.orders RowInsert ttl=none\n  stream x\n"),
        1
    );
}
