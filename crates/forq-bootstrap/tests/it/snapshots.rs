//! Every captured runner output against the snapshot of what its parser
//! reads from it (`tests/fixtures/evidence/NAME.json`): counts, per-test
//! outcomes, the lines quoted as evidence, and which runner
//! `evidence::any` picks when the command's runner is not known. A change
//! to a parser shows up here as a changed file in review, whole.
//!
//! `FORQ_BLESS=1 cargo test -p forq-bootstrap --test it snapshots` writes
//! the snapshots anew; a capture without one, or one without its capture,
//! fails.

use std::path::{Path, PathBuf};

use forq_bootstrap::evidence::{self, Evidence};
use serde_json::json;

type Parser = fn(&str) -> Option<Evidence>;

/// The parser of a capture, by the prefix of its name (as `capture.sh`
/// names them).
const PARSERS: &[(&str, &str, Parser)] = &[
    ("ava_tap", "node_test", evidence::node_test),
    ("ava_", "ava", evidence::ava),
    ("cargo_", "cargo", evidence::cargo),
    ("ctest_", "ctest", evidence::ctest),
    ("go_json", "go_test_json", evidence::go_test_json),
    ("go_", "go_test", evidence::go_test),
    ("jest_", "jest", evidence::jest),
    ("make_", "plain", evidence::plain),
    ("maven_", "maven", evidence::maven),
    ("meson_", "meson", evidence::meson),
    ("mocha_", "mocha", evidence::mocha),
    ("nextest_", "nextest", evidence::nextest),
    ("node_", "node_test", evidence::node_test),
    ("pytest_", "pytest", evidence::pytest),
    ("tape_", "node_test", evidence::node_test),
    ("unittest_", "unittest", evidence::unittest),
    ("uvu_", "uvu", evidence::uvu),
    ("vitest_", "vitest", evidence::vitest),
];

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// What a capture's snapshot holds.
fn reading(name: &str, text: &str) -> serde_json::Value {
    if name.ends_with(".xml") {
        let ev = evidence::junit_reports(&[(name.to_owned(), text.to_owned())]);
        return json!({"parser": "junit_reports", "evidence": ev});
    }
    let (_, parser, parse) = PARSERS
        .iter()
        .find(|(prefix, _, _)| name.starts_with(prefix))
        .unwrap_or_else(|| {
            panic!("{name}: no parser for this capture's name; add its prefix to PARSERS")
        });
    json!({
        "parser": parser,
        "evidence": parse(text),
        "any_picks": evidence::any(text).map(|ev| ev.runner),
    })
}

#[test]
fn every_parser_reads_its_captures_as_their_snapshots_say() {
    let output = fixtures().join("output");
    let snapshots = fixtures().join("evidence");
    let bless = std::env::var_os("FORQ_BLESS").is_some();
    if bless {
        std::fs::create_dir_all(&snapshots).unwrap();
    }
    let mut captures: Vec<String> = std::fs::read_dir(&output)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".txt") || n.ends_with(".xml"))
        .collect();
    captures.sort();
    assert!(captures.len() >= 30, "captures went missing: {captures:?}");
    let mut failures = Vec::new();
    let mut expected_files = Vec::new();
    for name in &captures {
        let text = std::fs::read_to_string(output.join(name)).unwrap();
        let actual = serde_json::to_string_pretty(&reading(name, &text)).unwrap() + "\n";
        let file = format!("{}.json", name.rsplit_once('.').unwrap().0);
        let path = snapshots.join(&file);
        expected_files.push(file);
        if bless {
            std::fs::write(&path, &actual).unwrap();
            continue;
        }
        match std::fs::read_to_string(&path) {
            Ok(expected) if expected == actual => {}
            Ok(expected) => failures.push(format!(
                "{name}: the parser's reading changed.\n--- {}\n{expected}\n+++ now\n{actual}",
                path.display()
            )),
            Err(_) => failures.push(format!(
                "{name}: no snapshot at {}; run with FORQ_BLESS=1 and review it",
                path.display()
            )),
        }
    }
    for entry in std::fs::read_dir(&snapshots).into_iter().flatten() {
        let file = entry.unwrap().file_name().to_string_lossy().into_owned();
        if !expected_files.contains(&file) {
            failures.push(format!("{file}: a snapshot without a capture; delete it"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} snapshot(s) differ (FORQ_BLESS=1 rewrites them):\n\n{}",
        failures.len(),
        captures.len(),
        failures.join("\n")
    );
}

#[test]
fn a_changed_reading_is_caught() {
    // The comparison is over the whole reading: one test's outcome
    // flipping changes the text the snapshot is compared with.
    let text = std::fs::read_to_string(fixtures().join("output/pytest_mixed.txt")).unwrap();
    let real = reading("pytest_mixed.txt", &text);
    let flipped = reading(
        "pytest_mixed.txt",
        &text.replace(
            "PASSED tests/test_calc.py::test_sub",
            "FAILED tests/test_calc.py::test_sub",
        ),
    );
    assert_ne!(real, flipped);
}
