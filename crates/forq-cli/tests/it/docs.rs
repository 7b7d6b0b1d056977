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
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
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

/// ARCHITECTURE.md's crate graph is what the Cargo.toml files say (read
/// through `cargo metadata`), so it cannot drift: each crate with the
/// forq crates it depends on, lowest layer first; an optional dependency
/// names the feature behind it. `FORQ_BLESS=1` rewrites it.
#[tokio::test]
async fn the_architectures_crate_graph_is_the_cargo_manifests() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = forq_sandbox::host_command(&cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(repo_root())
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let graph = crate_graph(&metadata);
    let path = repo_root().join("ARCHITECTURE.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let begin = "<!-- crate-graph: generated from the Cargo.toml files; a test keeps it equal -->\n```text\n";
    let start = text
        .find(begin)
        .expect("ARCHITECTURE.md has the crate-graph marker")
        + begin.len();
    let end = start + text[start..].find("```").expect("the block ends");
    if std::env::var_os("FORQ_BLESS").is_some() {
        std::fs::write(&path, format!("{}{graph}{}", &text[..start], &text[end..])).unwrap();
        return;
    }
    assert_eq!(
        &text[start..end],
        graph,
        "ARCHITECTURE.md's crate graph is not the manifests': FORQ_BLESS=1 cargo test -p forq-cli --test it crate_graph rewrites it"
    );
}

/// `crate ──▶ deps` per workspace crate, by layer (a crate's layer is one
/// more than its highest dependency's), then by name.
fn crate_graph(metadata: &serde_json::Value) -> String {
    use std::collections::BTreeMap;
    let mut deps: BTreeMap<String, Vec<(String, Option<String>)>> = BTreeMap::new();
    for package in metadata["packages"].as_array().unwrap() {
        let name = package["name"].as_str().unwrap().to_owned();
        let features = package["features"].as_object().unwrap();
        let mut mine = Vec::new();
        for dep in package["dependencies"].as_array().unwrap() {
            let dep_name = dep["name"].as_str().unwrap();
            // Normal dependencies only: dev- and build-dependencies are
            // not the layering.
            if !dep_name.starts_with("forq-") || !dep["kind"].is_null() {
                continue;
            }
            let feature = dep["optional"].as_bool().unwrap_or(false).then(|| {
                let wanted = format!("dep:{dep_name}");
                features
                    .iter()
                    .find(|(_, enables)| {
                        enables
                            .as_array()
                            .unwrap()
                            .iter()
                            .any(|e| e == wanted.as_str())
                    })
                    .map_or_else(|| dep_name.to_owned(), |(f, _)| f.clone())
            });
            if !mine
                .iter()
                .any(|(n, _): &(String, Option<String>)| n == dep_name)
            {
                mine.push((dep_name.to_owned(), feature));
            }
        }
        mine.sort();
        deps.insert(name, mine);
    }
    fn layer(
        name: &str,
        deps: &std::collections::BTreeMap<String, Vec<(String, Option<String>)>>,
    ) -> usize {
        deps[name]
            .iter()
            .map(|(d, _)| 1 + layer(d, deps))
            .max()
            .unwrap_or(0)
    }
    let mut names: Vec<&String> = deps.keys().collect();
    names.sort_by_key(|n| (layer(n, &deps), n.as_str()));
    let width = names.iter().map(|n| n.len()).max().unwrap_or(0);
    let mut out = String::new();
    for name in names {
        let list = &deps[name.as_str()];
        let plain: Vec<&str> = list
            .iter()
            .filter(|(_, f)| f.is_none())
            .map(|(d, _)| d.as_str())
            .collect();
        let optional: Vec<String> = list
            .iter()
            .filter_map(|(d, f)| f.as_ref().map(|f| format!("{d} (feature `{f}`)")))
            .collect();
        let mut right = if plain.is_empty() && optional.is_empty() {
            "nothing of forq's".to_owned()
        } else {
            plain.join(", ")
        };
        if !optional.is_empty() {
            if !plain.is_empty() {
                right.push_str("; ");
            }
            right.push_str(&optional.join(", "));
        }
        out.push_str(&format!("{name:<width$} ──▶ {right}\n"));
    }
    out
}

/// ARCHITECTURE.md's forq-cli invariant: a command module uses
/// `crate::parts` and `crate::terminal`, never another command's module.
#[test]
fn the_commands_borrow_nothing_from_each_other() {
    let dir = repo_root().join("crates/forq-cli/src/cmd");
    let modules: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter_map(|n| n.strip_suffix(".rs").map(str::to_owned))
        .filter(|n| n != "mod")
        .collect();
    assert!(modules.len() >= 10, "{modules:?}");
    let mut borrowed = Vec::new();
    for module in &modules {
        let text = std::fs::read_to_string(dir.join(format!("{module}.rs"))).unwrap();
        for other in modules.iter().filter(|o| *o != module) {
            for path in [
                format!("super::{other}::"),
                format!("crate::cmd::{other}::"),
            ] {
                if text.contains(&path) {
                    borrowed.push(format!("cmd/{module}.rs uses {path}"));
                }
            }
        }
    }
    assert!(borrowed.is_empty(), "{borrowed:#?}");
}
