//! The option and exit-code tables of the programs' READMEs are the programs' own definitions:
//! for the printer, the replicator and its `verify`, `scylla-cdc-kafka` and `scylla-emulator`,
//! the table after `<!-- options: PROGRAM -->` has one row per flag of the program's clap
//! command (hidden flags, `--help` and `--version` excepted), its first cell written exactly
//! as the flag is used (`` `-k`, `--keyspace <KEYSPACE>` ``), and a "default `X`" in the
//! description exactly when clap has the default X; the table after
//! `<!-- exit-codes: PROGRAM -->` lists the codes the program's constants define, which are
//! also the codes its `--help` lists after "Exit codes:".

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use clap::{Arg, ArgAction, Command};
use scylla_cdc::cli::exit_code;

/// The workspace root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is inside the workspace")
        .to_path_buf()
}

/// A program (or a command of one) and where its README documents it.
struct Program {
    /// The README, relative to the root.
    readme: &'static str,
    /// The name after `options:` and `exit-codes:` in the README's markers.
    name: &'static str,
    /// Its clap command, built.
    command: Command,
    /// The exit codes its constants define.
    exit_codes: Vec<u8>,
}

/// The shared codes of the programs built on `scylla_cdc::cli`.
fn cli_codes() -> Vec<u8> {
    vec![
        exit_code::OK,
        exit_code::RUNTIME,
        exit_code::USAGE,
        exit_code::CONNECT,
        exit_code::SCHEMA,
    ]
}

fn built(mut command: Command) -> Command {
    command.build();
    command
}

fn programs() -> Vec<Program> {
    let replicator = built(scylla_cdc_replicator::args::command());
    let verify = replicator
        .find_subcommand("verify")
        .expect("the replicator has a verify command")
        .clone();
    let with = |code: u8| {
        let mut codes = cli_codes();
        codes.push(code);
        codes
    };
    vec![
        Program {
            readme: "scylla-cdc-printer/README.md",
            name: "scylla-cdc-printer",
            command: built(scylla_cdc_printer::args::command()),
            exit_codes: cli_codes(),
        },
        Program {
            readme: "scylla-cdc-replicator/README.md",
            name: "scylla-cdc-replicator",
            command: replicator,
            exit_codes: with(scylla_cdc_replicator::args::EXIT_DIFFERENT),
        },
        Program {
            readme: "scylla-cdc-replicator/README.md",
            name: "scylla-cdc-replicator verify",
            command: verify,
            exit_codes: with(scylla_cdc_replicator::verify::EXIT_DIFFERENT),
        },
        Program {
            readme: "scylla-cdc-kafka/README.md",
            name: "scylla-cdc-kafka",
            command: built(scylla_cdc_kafka::args::command()),
            exit_codes: with(scylla_cdc_kafka::EXIT_KAFKA_REFUSED),
        },
        Program {
            readme: "scylla-emulator/README.md",
            name: "scylla-emulator",
            command: built(scylla_emulator::cli::command()),
            exit_codes: {
                use scylla_emulator::cli::exit_code::{FAILURE, OK, USAGE};
                vec![OK, FAILURE, USAGE]
            },
        },
    ]
}

/// The cells of a Markdown table row, trimmed, `\|` read as `|`.
fn cells(row: &str) -> Vec<String> {
    let row = row.trim();
    let inner = row.strip_prefix('|').unwrap_or(row);
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    let mut cells = vec![String::new()];
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                chars.next();
                cells.last_mut().expect("one cell").push('|');
            }
            '|' => cells.push(String::new()),
            c => cells.last_mut().expect("one cell").push(c),
        }
    }
    cells.into_iter().map(|c| c.trim().to_string()).collect()
}

/// The body rows (header and separator left out) of the table that follows the line
/// `<!-- {kind}: {name} -->` in `markdown`, each as its cells; `Err` when there is no such
/// marker, more than one, or no table right after it.
fn table_after(markdown: &str, kind: &str, name: &str) -> Result<Vec<Vec<String>>, String> {
    let marker = format!("<!-- {kind}: {name} -->");
    let lines: Vec<&str> = markdown.lines().collect();
    let at: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].trim() == marker)
        .collect();
    let [at] = at[..] else {
        return Err(format!(
            "{} lines `{marker}` (there must be one, before the table)",
            at.len()
        ));
    };
    let table: Vec<&str> = lines[at + 1..]
        .iter()
        .skip_while(|l| l.trim().is_empty())
        .take_while(|l| l.trim_start().starts_with('|'))
        .copied()
        .collect();
    if table.len() < 2 {
        return Err(format!("no table after `{marker}`"));
    }
    Ok(table[2..].iter().map(|row| cells(row)).collect())
}

/// The flag of a table row's first cell: its long name (`--keyspace`), or its short one
/// (`-X`) when it has none.
fn flag_of(cell: &str) -> Option<String> {
    let words = || cell.split(['`', ' ', ',']).filter(|w| !w.is_empty());
    words()
        .find(|w| w.starts_with("--") && w.len() > 2)
        .or_else(|| words().find(|w| w.starts_with('-') && w.len() == 2))
        .map(str::to_string)
}

/// How a flag is written in its row's first cell: `` `-k`, `--keyspace <KEYSPACE>` ``.
fn usage_of(arg: &Arg) -> String {
    let value = if takes_value(arg) {
        let names: Vec<String> = match arg.get_value_names() {
            Some(names) => names.iter().map(|n| n.to_string()).collect(),
            None => vec![arg.get_id().as_str().to_ascii_uppercase()],
        };
        format!(" <{}>", names.join("> <"))
    } else {
        String::new()
    };
    match (arg.get_short(), arg.get_long()) {
        (Some(short), Some(long)) => format!("`-{short}`, `--{long}{value}`"),
        (None, Some(long)) => format!("`--{long}{value}`"),
        (Some(short), None) => format!("`-{short}{value}`"),
        (None, None) => unreachable!("a positional argument: the programs take none"),
    }
}

fn takes_value(arg: &Arg) -> bool {
    matches!(arg.get_action(), ArgAction::Set | ArgAction::Append)
}

/// The key a flag is known by in the table: `--long`, or `-s` without a long name.
fn key_of(arg: &Arg) -> String {
    match (arg.get_long(), arg.get_short()) {
        (Some(long), _) => format!("--{long}"),
        (None, Some(short)) => format!("-{short}"),
        (None, None) => unreachable!("a positional argument: the programs take none"),
    }
}

/// clap's default of a flag that takes a value, as the README must write it.
fn default_of(arg: &Arg) -> Option<String> {
    if !takes_value(arg) {
        return None;
    }
    let values: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|v| v.to_string_lossy().into_owned())
        .collect();
    (!values.is_empty()).then(|| values.join(","))
}

/// The defaults a description states in the checked form: each "default `X`".
fn stated_defaults(description: &str) -> Vec<String> {
    description
        .match_indices("default `")
        .filter_map(|(at, m)| {
            let rest = &description[at + m.len()..];
            rest.find('`').map(|end| rest[..end].to_string())
        })
        .collect()
}

/// The codes a `--help` text lists in its "Exit codes:" paragraph (each a number at the
/// start of a comma-separated part: "Exit codes: 0 done, 1 failure, ...").
fn codes_in_help(help: &str) -> Result<BTreeSet<u8>, String> {
    let at = help
        .find("Exit codes:")
        .ok_or("no \"Exit codes:\" paragraph")?;
    let paragraph = help[at + "Exit codes:".len()..]
        .split("\n\n")
        .next()
        .unwrap_or_default()
        .replace('\n', " ");
    let codes: BTreeSet<u8> = paragraph
        .split(',')
        .filter_map(|part| {
            let part = part.trim_start();
            let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
            let after = part[digits.len()..].chars().next();
            (!digits.is_empty() && after == Some(' '))
                .then(|| digits.parse().ok())
                .flatten()
        })
        .collect();
    if codes.is_empty() {
        return Err(format!("no code in \"Exit codes:{paragraph}\""));
    }
    Ok(codes)
}

/// What the option table of `program` in `markdown` gets wrong (nothing: empty).
fn option_problems(program: &Program, markdown: &str) -> Vec<String> {
    let here = format!("{} (options: {})", program.readme, program.name);
    let rows = match table_after(markdown, "options", program.name) {
        Ok(rows) => rows,
        Err(e) => return vec![format!("{here}: {e}")],
    };
    let args: Vec<&Arg> = program
        .command
        .get_arguments()
        .filter(|a| !a.is_hide_set() && !["help", "version"].contains(&a.get_id().as_str()))
        .collect();
    let mut problems = Vec::new();
    let mut listed = BTreeSet::new();
    for row in &rows {
        let Some(flag) = flag_of(&row[0]) else {
            problems.push(format!("{here}: a row without a flag: {row:?}"));
            continue;
        };
        if !listed.insert(flag.clone()) {
            problems.push(format!("{here}: {flag} has two rows"));
        }
        let description = row.get(1).map(String::as_str).unwrap_or_default();
        let Some(arg) = args.iter().find(|a| key_of(a) == flag) else {
            problems.push(format!(
                "{here}: {flag} is in the table but is not a flag of {} (or is hidden)",
                program.name
            ));
            continue;
        };
        let usage = usage_of(arg);
        if row[0] != usage {
            problems.push(format!(
                "{here}: the row of {flag} begins {:?}; as clap defines it: {usage:?}",
                row[0]
            ));
        }
        let stated = stated_defaults(description);
        match default_of(arg) {
            Some(default) if !stated.contains(&default) => problems.push(format!(
                "{here}: {flag} has the default {default} (write \"default `{default}`\"); \
                 the row states {stated:?}"
            )),
            Some(default) if stated.iter().any(|s| *s != default) => problems.push(format!(
                "{here}: {flag}'s row states the defaults {stated:?}; clap's is {default}"
            )),
            None if !stated.is_empty() => problems.push(format!(
                "{here}: {flag}'s row states the default {stated:?}, but clap has none (write \
                 a default clap does not know as \"default: ...\")"
            )),
            _ => {}
        }
    }
    for arg in &args {
        let key = key_of(arg);
        if !listed.contains(&key) {
            problems.push(format!(
                "{here}: {key} is missing (a row beginning {})",
                usage_of(arg)
            ));
        }
    }
    problems
}

/// What the exit-code table of `program` in `markdown` gets wrong (nothing: empty).
fn exit_code_problems(program: &Program, markdown: &str) -> Vec<String> {
    let here = format!("{} (exit-codes: {})", program.readme, program.name);
    let rows = match table_after(markdown, "exit-codes", program.name) {
        Ok(rows) => rows,
        Err(e) => return vec![format!("{here}: {e}")],
    };
    let mut problems = Vec::new();
    let mut table = BTreeSet::new();
    for row in &rows {
        match row[0].parse::<u8>() {
            Ok(code) if table.insert(code) => {}
            Ok(code) => problems.push(format!("{here}: code {code} has two rows")),
            Err(_) => problems.push(format!("{here}: {:?} is not an exit code", row[0])),
        }
    }
    let constants: BTreeSet<u8> = program.exit_codes.iter().copied().collect();
    let mut command = program.command.clone();
    let help = command.render_long_help().to_string();
    let in_help = match codes_in_help(&help) {
        Ok(codes) => codes,
        Err(e) => {
            problems.push(format!("{}'s --help: {e}", program.name));
            BTreeSet::new()
        }
    };
    for code in constants.difference(&table) {
        problems.push(format!(
            "{here}: code {code} is missing (a constant of the program)"
        ));
    }
    for code in table.difference(&constants) {
        problems.push(format!(
            "{here}: code {code} is in the table but not among the program's constants {constants:?}"
        ));
    }
    if !in_help.is_empty() && in_help != constants {
        problems.push(format!(
            "{}'s --help lists the exit codes {in_help:?}, its constants are {constants:?}",
            program.name
        ));
    }
    problems
}

#[test]
fn every_programs_readme_tables_match_its_flags_and_exit_codes() {
    let mut problems = Vec::new();
    for program in programs() {
        let markdown = std::fs::read_to_string(root().join(program.readme))
            .unwrap_or_else(|e| panic!("{}: {e}", program.readme));
        problems.extend(option_problems(&program, &markdown));
        problems.extend(exit_code_problems(&program, &markdown));
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

/// The checks themselves, on a made-up program and README: they name the flag or code, and
/// the file.
#[test]
fn the_checks_name_what_is_missing_extra_or_different() {
    #[derive(clap::Parser)]
    #[allow(dead_code)] // only its command is used
    #[command(
        name = "p",
        after_help = "Exit codes: 0 done, 1 failure (a, b), 2 bad argument."
    )]
    struct P {
        /// Keyspace.
        #[arg(long, short = 'k', value_name = "KEYSPACE")]
        keyspace: String,
        /// Window.
        #[arg(long, value_name = "SECONDS", default_value = "60")]
        window_size: u32,
        /// On error.
        #[arg(long, value_name = "stop|skip", default_value = "stop")]
        on_error: String,
        /// A switch.
        #[arg(long)]
        tls: bool,
        /// Not for users.
        #[arg(long, hide = true)]
        secret: bool,
        /// A client option.
        #[arg(short = 'X', value_name = "KEY=VALUE")]
        option: Vec<String>,
    }
    let program = Program {
        readme: "p/README.md",
        name: "p",
        command: built(<P as clap::CommandFactory>::command()),
        exit_codes: vec![0, 1, 2],
    };
    let good = "\
<!-- options: p -->
| flag | meaning |
|---|---|
| `-k`, `--keyspace <KEYSPACE>` | the keyspace |
| `--window-size <SECONDS>` | window (default `60`; default: see below) |
| `--on-error <stop\\|skip>` | what to do (default `stop`) |
| `--tls` | TLS |
| `-X <KEY=VALUE>` | a client option |

<!-- exit-codes: p -->
| code | meaning |
|---|---|
| 0 | done |
| 1 | failure |
| 2 | bad argument |
";
    assert_eq!(option_problems(&program, good), Vec::<String>::new());
    assert_eq!(exit_code_problems(&program, good), Vec::<String>::new());
    let bad = good
        .replace("| `--tls` | TLS |\n", "| `--secret` | hidden |\n")
        .replace("(default `60`; default: see below)", "(default `30`)")
        .replace("`-k`, `--keyspace <KEYSPACE>`", "`--keyspace <KS>`")
        .replace(
            "| `-X <KEY=VALUE>` | a client option |",
            "| `-X <KEY=VALUE>` | default `x` |",
        )
        .replace("| 2 | bad argument |", "| 3 | cannot connect |");
    let problems = [
        option_problems(&program, &bad),
        exit_code_problems(&program, &bad),
    ]
    .concat();
    let expected = [
        "p/README.md (options: p): the row of --keyspace begins \"`--keyspace <KS>`\"; as clap \
         defines it: \"`-k`, `--keyspace <KEYSPACE>`\"",
        "p/README.md (options: p): --window-size has the default 60 (write \"default `60`\"); \
         the row states [\"30\"]",
        "p/README.md (options: p): --secret is in the table but is not a flag of p (or is \
         hidden)",
        "p/README.md (options: p): -X's row states the default [\"x\"], but clap has none \
         (write a default clap does not know as \"default: ...\")",
        "p/README.md (options: p): --tls is missing (a row beginning `--tls`)",
        "p/README.md (exit-codes: p): code 2 is missing (a constant of the program)",
        "p/README.md (exit-codes: p): code 3 is in the table but not among the program's \
         constants {0, 1, 2}",
    ];
    assert_eq!(problems, expected);
    assert_eq!(
        option_problems(&program, "no marker"),
        [
            "p/README.md (options: p): 0 lines `<!-- options: p -->` (there must be one, before \
          the table)"
        ]
    );
}
