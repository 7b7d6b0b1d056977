//! `go test`: the verbose text (`-v`) and the event stream (`-json`).
//!
//! Test ids are `package::TestName` (subtests `package::TestName/case`, as
//! `go test -run` spells them). A test with subtests is a container: it
//! keeps its own per-test result, but only the leaves are counted, so a
//! table of two cases counts two tests, not three.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::{strip_ansi, Evidence, Outcome};

/// What a package's closing line says (`ok pkg 0.01s`, `FAIL pkg [build
/// failed]`, `? pkg [no test files]`).
enum PackageLine<'a> {
    Ok(&'a str),
    Failed(&'a str),
    BuildFailed,
    NoTests,
}

fn package_line(line: &str) -> Option<PackageLine<'_>> {
    let mut fields = line.split('\t');
    let status = fields.next()?.trim_end();
    let package = fields.next()?.trim();
    let rest = fields.next().unwrap_or("");
    if package.is_empty() || package.contains(' ') && !package.contains(" [") {
        return None;
    }
    // `FAIL\tpkg [build failed]` puts the bracket in the package field.
    let (package, bracket) = match package.split_once(" [") {
        Some((p, b)) => (p, b),
        None => (package, rest),
    };
    match status {
        "ok" => Some(PackageLine::Ok(package)),
        "?" => Some(PackageLine::NoTests),
        "FAIL" if bracket.contains("build failed") || bracket.contains("setup failed") => {
            Some(PackageLine::BuildFailed)
        }
        "FAIL" => Some(PackageLine::Failed(package)),
        _ => None,
    }
}

/// Tallies per-test outcomes into counts, leaves only.
fn count_leaves(ev: &mut Evidence) {
    let leaves: Vec<Outcome> = ev
        .tests
        .iter()
        .filter(|(id, _)| {
            // A child's id extends its parent's with `/`, and sorts right after it.
            let prefix = format!("{id}/");
            !ev.tests
                .range::<String, _>(&prefix..)
                .next()
                .is_some_and(|(other, _)| other.starts_with(&prefix))
        })
        .map(|(_, outcome)| *outcome)
        .collect();
    for outcome in leaves {
        ev.tally(outcome);
    }
}

/// `go test -v`: the `--- PASS|FAIL|SKIP: Name (Xs)` lines (subtests
/// indented), attributed to the package whose `ok`/`FAIL` line follows
/// them. A package that failed to build is a collection error; a package
/// that failed without any failing test (a panic, a failing `TestMain`) is
/// an error.
pub fn go_test(output: &str) -> Option<Evidence> {
    let text = strip_ansi(output);
    let mut ev = Evidence::new("go");
    let mut pending: Vec<(String, Outcome)> = Vec::new();
    let mut found = false;
    let mut package_errors = 0;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if let Some(rest) = trimmed.strip_prefix("--- ") {
            let Some((status, rest)) = rest.split_once(": ") else {
                continue;
            };
            let outcome = match status {
                "PASS" => Outcome::Passed,
                "FAIL" => Outcome::Failed,
                "SKIP" => Outcome::Skipped,
                _ => continue,
            };
            let name = rest.split(" (").next().unwrap_or(rest).trim();
            pending.push((name.to_owned(), outcome));
            continue;
        }
        let Some(package) = package_line(line) else {
            continue;
        };
        found = true;
        ev.lines.push(line.trim().to_owned());
        match package {
            PackageLine::Ok(p) | PackageLine::Failed(p) => {
                let failing = pending.iter().any(|(_, o)| *o == Outcome::Failed);
                if matches!(package, PackageLine::Failed(_)) && !failing {
                    package_errors += 1;
                }
                for (name, outcome) in pending.drain(..) {
                    ev.tests.insert(format!("{p}::{name}"), outcome);
                }
            }
            PackageLine::BuildFailed => {
                ev.collection_errors += 1;
                pending.clear();
            }
            PackageLine::NoTests => {}
        }
    }
    if !found {
        return None;
    }
    count_leaves(&mut ev);
    ev.errors += package_errors;
    Some(ev)
}

/// One event of `go test -json` (`go doc test2json`).
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Event {
    action: String,
    #[serde(default)]
    package: String,
    #[serde(default)]
    test: Option<String>,
    #[serde(default)]
    output: Option<String>,
}

/// `go test -json`: the `pass`/`fail`/`skip` events of each test, and the
/// packages' closing lines from their `output` events. Lines that are not
/// events (a build failure goes to stderr as text) are read as `go test`
/// text, so a package that failed to build is still a collection error.
pub fn go_test_json(output: &str) -> Option<Evidence> {
    let mut ev = Evidence::new("go");
    let mut found = false;
    let mut failed_packages: BTreeMap<String, bool> = BTreeMap::new();
    for line in output.lines() {
        let Ok(event) = serde_json::from_str::<Event>(line) else {
            if let Some(PackageLine::BuildFailed) = package_line(line) {
                ev.collection_errors += 1;
                ev.lines.push(line.trim().to_owned());
            }
            continue;
        };
        found = true;
        let outcome = match event.action.as_str() {
            "pass" => Outcome::Passed,
            "fail" => Outcome::Failed,
            "skip" => Outcome::Skipped,
            "output" => {
                let text = event.output.unwrap_or_default();
                let text = text.trim_end();
                if event.test.is_none() && package_line(text).is_some() {
                    if let Some(PackageLine::BuildFailed) = package_line(text) {
                        ev.collection_errors += 1;
                    }
                    ev.lines.push(text.to_owned());
                }
                continue;
            }
            _ => continue,
        };
        match event.test {
            Some(test) => {
                ev.tests
                    .insert(format!("{}::{test}", event.package), outcome);
            }
            None if outcome == Outcome::Failed => {
                failed_packages.insert(event.package, true);
            }
            None => {}
        }
    }
    if !found {
        return None;
    }
    count_leaves(&mut ev);
    // A failed package none of whose tests failed panicked or failed in
    // TestMain (a build failure has no test events and is counted above).
    for package in failed_packages.keys() {
        let prefix = format!("{package}::");
        let tests: Vec<&Outcome> = ev
            .tests
            .iter()
            .filter(|(id, _)| id.starts_with(&prefix))
            .map(|(_, o)| o)
            .collect();
        if !tests.is_empty() && !tests.iter().any(|o| **o == Outcome::Failed) {
            ev.errors += 1;
        }
    }
    Some(ev)
}
