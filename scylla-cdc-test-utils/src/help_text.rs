//! Checks of a program's `--help` as its user reads it: the help headings in their order,
//! plain text (no Markdown, no rustdoc links), and the environment variable of every flag.
//! The tests of every program (`scylla-cdc-printer`, `scylla-cdc-replicator` and its
//! `verify`, `scylla-cdc-kafka`, `scylla-emulator`) run their binary with `--help` and check
//! its output with [`help_problems`].

/// The flags a `--help` text (clap's long help) lists, in order: each flag's long name
/// (without `--`) and the lines that describe it (its own line included).
pub fn flags(help: &str) -> Vec<(String, String)> {
    let mut flags: Vec<(String, String)> = Vec::new();
    let mut in_flag = false;
    for line in help.lines() {
        let indent = line.len() - line.trim_start().len();
        let text = line.trim_start();
        if !line.is_empty() && indent == 0 {
            // A heading, the usage line or a paragraph: the end of a flag's block.
            in_flag = false;
            continue;
        }
        if (1..=6).contains(&indent) && text.starts_with('-') {
            let long = text
                .split(|c: char| c.is_whitespace() || c == ',')
                .find_map(|w| w.strip_prefix("--"))
                .filter(|l| !l.is_empty());
            in_flag = long.is_some();
            if let Some(long) = long {
                flags.push((long.to_string(), String::new()));
            }
        }
        if in_flag && let Some((_, block)) = flags.last_mut() {
            block.push_str(line);
            block.push('\n');
        }
    }
    flags
}

/// The headings of a `--help` text: its lines `Heading:` (not indented, nothing after the
/// colon), in order.
pub fn headings(help: &str) -> Vec<String> {
    help.lines()
        .filter(|l| !l.starts_with(' ') && l.len() > 1 && l.ends_with(':'))
        .map(|l| l.trim_end_matches(':').to_string())
        .collect()
}

/// What is wrong with a program's `--help` text (nothing: empty):
///
/// - each of `expected_headings` is a heading, and they come in this order;
/// - the text is plain: no Markdown backtick, no rustdoc link (`[text](url)`, `[crate::x]`,
///   a `::` path);
/// - every flag but `--help`, `--version` and those of `no_env` names its environment
///   variable, `prefix` and its long name in upper snake case (`[env: PREFIX_NAME]`).
pub fn help_problems(
    help: &str,
    expected_headings: &[&str],
    prefix: &str,
    no_env: &[&str],
) -> Vec<String> {
    let mut problems = Vec::new();
    let found = headings(help);
    let mut at = 0;
    for heading in expected_headings {
        match found[at..].iter().position(|h| h == heading) {
            Some(i) => at += i + 1,
            None if found.iter().any(|h| h == heading) => {
                problems.push(format!("heading {heading:?} is out of order in {found:?}"))
            }
            None => problems.push(format!("no heading {heading:?} (headings: {found:?})")),
        }
    }
    for (n, line) in help.lines().enumerate() {
        let link = line.contains("](") || line.contains("[crate") || line.contains("::");
        if line.contains('`') || link {
            problems.push(format!(
                "line {} is not plain text (Markdown or a rustdoc link): {line:?}",
                n + 1
            ));
        }
    }
    let listed = flags(help);
    if listed.is_empty() {
        problems.push("no flag found".to_string());
    }
    for (long, block) in &listed {
        if ["help", "version"].contains(&long.as_str()) || no_env.contains(&long.as_str()) {
            continue;
        }
        let variable = format!("{prefix}{}", long.to_ascii_uppercase().replace('-', "_"));
        if !block.contains(&format!("[env: {variable}]")) {
            problems.push(format!("--{long} does not name its variable {variable}"));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    const HELP: &str = "About.

Usage: p [OPTIONS] --hosts <H>

Options:
  -h, --help
          Print help

Connection:
      --hosts <H>
          Contact points
          
          [env: P_HOSTS]

  -k, --keyspace <K>
          A keyspace

          Possible values:
          - a: one

Examples:
  p --hosts x
";

    #[test]
    fn flags_headings_and_problems() {
        let f = flags(HELP);
        let names: Vec<&str> = f.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(names, ["help", "hosts", "keyspace"]);
        assert!(f[1].1.contains("[env: P_HOSTS]"));
        assert!(f[2].1.contains("- a: one"));
        assert_eq!(headings(HELP), ["Options", "Connection", "Examples"]);
        assert_eq!(
            help_problems(HELP, &["Connection", "Examples"], "P_", &["keyspace"]),
            Vec::<String>::new()
        );
        let problems = help_problems(HELP, &["Examples", "Connection", "Output"], "P_", &[]);
        assert_eq!(problems.len(), 3, "{problems:?}");
        let problems = help_problems(
            &HELP.replace("A keyspace", "A `keyspace`"),
            &[],
            "P_",
            &["keyspace"],
        );
        assert_eq!(problems.len(), 1, "{problems:?}");
    }
}
