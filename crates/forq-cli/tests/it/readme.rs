//! The console examples of the README and of every page under
//! `docs/commands/`, run against the real binary: every ```console block
//! shows commands (`$ ` lines) and what forq prints, and either matches
//! what forq prints (times, run ids, hashes and the temporary directory
//! normalised) or is exempt with a reason, so an example cannot drift
//! silently. An illustration that is not a command's output is a ```text
//! block.

use std::path::Path;

use super::{native_or_skip, repo_root};

/// Blocks not run, by their first command's start, and why.
const EXEMPT: &[(&str, &str)] = &[
    (
        "forq sandbox run",
        "its `echo $?` line is the shell's; run_maps_outcomes_to_exit_codes checks the codes",
    ),
    ("forq triage", "it needs a live model"),
    (
        "forq eval",
        "it runs twenty instances for minutes; its figures are a measurement",
    ),
    (
        "printf 'sandbox:",
        "forq config check of a file it writes; it prints this machine's caps",
    ),
    (
        "scripts/example_repos.sh",
        "the forq eval example: a measurement",
    ),
];

/// One console block: its commands (continuation lines joined) and what
/// it shows after them.
#[derive(Debug)]
struct Block {
    line: usize,
    commands: Vec<String>,
    expected: Vec<String>,
}

fn blocks(readme: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut lines = readme.lines().enumerate();
    while let Some((i, line)) = lines.next() {
        if line != "```console" {
            continue;
        }
        let mut block = Block {
            line: i + 1,
            commands: Vec::new(),
            expected: Vec::new(),
        };
        let mut continued = false;
        for (_, l) in lines.by_ref() {
            if l == "```" {
                break;
            }
            if let Some(cmd) = l.strip_prefix("$ ") {
                block
                    .commands
                    .push(cmd.trim_end_matches('\\').trim().to_owned());
                continued = l.ends_with('\\');
            } else if continued {
                let last = block.commands.last_mut().expect("a command before");
                last.push(' ');
                last.push_str(l.trim_end_matches('\\').trim());
                continued = l.ends_with('\\');
            } else {
                block.expected.push(l.to_owned());
            }
        }
        out.push(block);
    }
    out
}

/// The README and the command reference: (name, text).
fn pages() -> Vec<(String, String)> {
    let root = repo_root();
    let mut names = vec!["README.md".to_owned()];
    let mut docs: Vec<String> = std::fs::read_dir(root.join("docs/commands"))
        .expect("docs/commands")
        .map(|e| e.expect("an entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/commands/{n}"))
        .collect();
    docs.sort();
    assert!(docs.len() >= 10, "{docs:?}");
    names.extend(docs);
    names
        .into_iter()
        .map(|n| {
            let text = std::fs::read_to_string(root.join(&n)).unwrap();
            (n, text)
        })
        .collect()
}

/// Times, sizes in ms, run ids and `dir` taken out of `text`'s lines.
fn normalise(text: &str, dir: &Path) -> Vec<String> {
    let floats = regex::Regex::new(r"\d+\.\d+").unwrap();
    let millis = regex::Regex::new(r"\d+ ms\b").unwrap();
    let run_ids = regex::Regex::new(r"\b(\d{10}-\d+|\d{8}-\d{6}-[0-9a-f]{4})\b").unwrap();
    let hashes = regex::Regex::new(r"\b[0-9a-f]{12}\b").unwrap();
    let prefix = format!("{}/", dir.display());
    text.lines()
        .map(|l| {
            let l = l.replace(&prefix, "");
            let l = run_ids.replace_all(&l, "RUN");
            let l = hashes.replace_all(&l, "HASH");
            let l = millis.replace_all(&l, "N ms");
            floats.replace_all(&l, "N.N").into_owned()
        })
        .collect()
}

#[tokio::test]
async fn the_docs_console_examples_are_what_forq_prints() {
    if !native_or_skip("the_docs_console_examples_are_what_forq_prints") {
        return;
    }
    let mut checked = 0;
    let mut seen = 0;
    for (page, text) in pages() {
        for block in blocks(&text) {
            seen += 1;
            checked += check(&page, &block).await;
        }
    }
    assert!(seen >= 8, "{seen} console blocks");
    assert!(checked >= 5, "{checked} blocks checked");
}

/// Runs `block`'s commands and compares: 1 when checked, 0 when exempt.
async fn check(page: &str, block: &Block) -> usize {
    let Some(first) = block.commands.first() else {
        panic!(
            "{page}:{}: a console block shows commands (`$ ` lines) and their output; an illustration is a text block",
            block.line
        );
    };
    if EXEMPT.iter().any(|(start, _)| first.starts_with(start)) {
        return 0;
    }
    assert!(
        block.commands.iter().all(|c| c.starts_with("forq ")),
        "{page}:{}: {first:?} is neither a forq command nor exempt (add it to EXEMPT with why)",
        block.line
    );
    // Each block runs on a fresh copy of the examples it names, as a
    // reader's checkout would be.
    let tmp = tempfile::tempdir().unwrap();
    for dir in ["examples/calc", "examples/replays"] {
        forq_search::bench::copy_tree(&repo_root().join(dir), &tmp.path().join(dir)).unwrap();
    }
    let _ = std::fs::remove_dir_all(tmp.path().join("examples/calc/.forq"));
    let mut printed = String::new();
    for command in &block.commands {
        let out = forq_sandbox::host_command("sh")
            .arg("-c")
            .arg(format!("{} 2>&1", command.replacen("forq", "\"$FORQ\"", 1)))
            .env("FORQ", env!("CARGO_BIN_EXE_forq"))
            .env("NO_COLOR", "1")
            .env_remove("OPENAI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY")
            .current_dir(tmp.path())
            .output()
            .await
            .unwrap();
        printed.push_str(&String::from_utf8_lossy(&out.stdout));
    }
    let got = normalise(&printed, tmp.path());
    let want = normalise(&block.expected.join("\n"), tmp.path());
    assert_eq!(
        got, want,
        "{page}:{}: `{first}` printed (left) what the page does not show (right)",
        block.line
    );
    1
}

/// benches/RESULTS.md is what benches/results.csv gives: every figure has
/// its date, commit, machine and command, and the table cannot drift.
#[tokio::test]
async fn the_results_table_is_what_the_rows_give() {
    let out = forq_sandbox::host_command("python3")
        .arg(repo_root().join("scripts/results.py"))
        .arg("--check")
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
