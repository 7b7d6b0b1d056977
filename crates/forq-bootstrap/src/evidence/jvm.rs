//! Maven Surefire and Gradle: their console summaries, and the JUnit XML
//! reports both write (`target/surefire-reports/TEST-*.xml`,
//! `build/test-results/test/TEST-*.xml`), which pytest, CTest and Meson
//! write too. The reports are where per-test results live: neither build
//! tool prints the passing tests.

use quick_xml::events::{BytesStart, Event};
use quick_xml::Reader;

use super::{count_before, strip_ansi, Evidence, Outcome};

/// A line without Maven's `[INFO] ` / `[ERROR] ` / `[WARNING] ` prefix.
fn unlevelled(line: &str) -> &str {
    let t = line.trim();
    match t.strip_prefix('[').and_then(|r| r.split_once("] ")) {
        Some((level, rest)) if level.chars().all(|c| c.is_ascii_uppercase()) => rest,
        _ => t,
    }
}

/// The number after `key` in a Surefire count line (`Tests run: 4, Failures: 1`).
fn count_after(line: &str, key: &str) -> u32 {
    line.split(',')
        .find_map(|part| part.trim().strip_prefix(key))
        .and_then(|n| n.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Maven Surefire's console output: the module totals that follow each
/// `Results:` heading (`Tests run: 4, Failures: 1, Errors: 1, Skipped: 1`),
/// summed over modules (or the per-class lines when a build printed no
/// totals), and the failing tests' `<<< FAILURE!` / `<<< ERROR!` lines.
pub fn maven(output: &str) -> Option<Evidence> {
    let text = strip_ansi(output);
    let counts: Vec<&str> = text
        .lines()
        .map(unlevelled)
        .filter(|l| l.starts_with("Tests run:"))
        .collect();
    if counts.is_empty() {
        return None;
    }
    let totals: Vec<&str> = counts
        .iter()
        .copied()
        .filter(|l| !l.contains("Time elapsed"))
        .collect();
    let lines = if totals.is_empty() { counts } else { totals };
    let mut ev = Evidence::new("maven");
    let mut run = 0;
    for line in &lines {
        run += count_after(line, "Tests run:");
        ev.failed += count_after(line, "Failures:");
        ev.errors += count_after(line, "Errors:");
        ev.skipped += count_after(line, "Skipped:");
        ev.lines.push((*line).to_owned());
    }
    ev.passed = run.saturating_sub(ev.failed + ev.errors + ev.skipped);
    for line in text.lines().map(unlevelled) {
        let outcome = if line.ends_with("<<< FAILURE!") {
            Outcome::Failed
        } else if line.ends_with("<<< ERROR!") {
            Outcome::Error
        } else {
            continue;
        };
        if line.starts_with("Tests run:") {
            continue; // a class's line
        }
        // Surefire 3: `calc.CalcTest.subtracts -- Time elapsed: …`;
        // Surefire 2: `subtracts(calc.CalcTest)  Time elapsed: …`.
        let head = line
            .split(" -- ")
            .next()
            .unwrap_or(line)
            .split("  Time elapsed")
            .next()
            .unwrap_or(line)
            .trim();
        let id = match head.strip_suffix(')').and_then(|h| h.split_once('(')) {
            Some((method, class)) => format!("{class}.{method}"),
            None => head.to_owned(),
        };
        ev.tests.insert(id, outcome);
    }
    Some(ev)
}

/// Gradle's console output: `N tests completed, F failed, S skipped` (which
/// Gradle prints only when a test failed), and `Class > test() FAILED`
/// lines. A green Gradle build prints no counts: its evidence is the XML
/// reports ([`junit_reports`]).
pub fn gradle(output: &str) -> Option<Evidence> {
    let text = strip_ansi(output);
    let summary = text
        .lines()
        .map(str::trim)
        .find(|l| l.contains(" tests completed") || l.contains(" test completed"))?;
    let mut ev = Evidence::new("gradle");
    let run = count_before(summary, "tests")
        .or_else(|| count_before(summary, "test"))
        .unwrap_or(0);
    ev.failed = count_before(summary, "failed").unwrap_or(0);
    ev.skipped = count_before(summary, "skipped").unwrap_or(0);
    ev.passed = run.saturating_sub(ev.failed + ev.skipped);
    ev.lines.push(summary.to_owned());
    for line in text.lines().map(str::trim) {
        let Some((test, status)) = line.rsplit_once(' ') else {
            continue;
        };
        let outcome = match status {
            "PASSED" => Outcome::Passed,
            "FAILED" => Outcome::Failed,
            "SKIPPED" => Outcome::Skipped,
            _ => continue,
        };
        if let Some((class, method)) = test.split_once(" > ") {
            ev.tests.insert(
                format!("{class}.{}", method.trim_end_matches("()")),
                outcome,
            );
        }
    }
    Some(ev)
}

fn attribute(tag: &BytesStart<'_>, name: &[u8]) -> Option<String> {
    tag.attributes()
        .flatten()
        .find(|a| a.key.as_ref() == name)
        .and_then(|a| a.unescape_value().ok())
        .map(|v| v.into_owned())
}

/// The test cases of one JUnit XML report, as (id, outcome); `None` when
/// the text is not such a report. Ids are `classname.name` (`name` alone
/// when the class is empty or the same).
fn junit_cases(xml: &str) -> Option<Vec<(String, Outcome)>> {
    let mut reader = Reader::from_str(xml);
    let mut cases = Vec::new();
    let mut seen_suite = false;
    let mut open: Option<(String, Outcome)> = None;
    loop {
        let event = reader.read_event().ok()?;
        let (tag, empty) = match &event {
            Event::Start(t) => (t, false),
            Event::Empty(t) => (t, true),
            Event::End(t) if t.name().as_ref() == b"testcase" => {
                cases.extend(open.take());
                continue;
            }
            Event::Eof => break,
            _ => continue,
        };
        match tag.name().as_ref() {
            b"testsuite" | b"testsuites" => seen_suite = true,
            b"testcase" => {
                let name = attribute(tag, b"name").unwrap_or_default();
                let class = attribute(tag, b"classname").unwrap_or_default();
                let id = if class.is_empty() || class == name {
                    name
                } else {
                    format!("{class}.{name}")
                };
                // CTest marks the outcome in an attribute too.
                let outcome = match attribute(tag, b"status").as_deref() {
                    Some("fail") => Outcome::Failed,
                    Some("notrun" | "disabled") => Outcome::Skipped,
                    _ => Outcome::Passed,
                };
                if empty {
                    cases.push((id, outcome));
                } else {
                    open = Some((id, outcome));
                }
            }
            child => {
                if let Some((_, outcome)) = &mut open {
                    match child {
                        b"failure" => *outcome = Outcome::Failed,
                        b"error" => *outcome = Outcome::Error,
                        b"skipped" => *outcome = Outcome::Skipped,
                        _ => {}
                    }
                }
            }
        }
    }
    seen_suite.then_some(cases)
}

/// JUnit XML reports, as `(file name, contents)`: every test case with its
/// outcome, counted from the cases themselves (not the suites'
/// attributes), one evidence line per report. `None` when no file is a
/// report.
pub fn junit_reports(reports: &[(String, String)]) -> Option<Evidence> {
    let mut ev = Evidence::new("junit");
    let mut found = false;
    for (name, xml) in reports {
        let Some(cases) = junit_cases(xml) else {
            continue;
        };
        found = true;
        let mut report = Evidence::default();
        for (id, outcome) in cases {
            report.tally(outcome);
            ev.tally(outcome);
            ev.tests.insert(id, outcome);
        }
        ev.lines.push(format!(
            "{name}: {} passed, {} failed, {} skipped, {} errors",
            report.passed, report.failed, report.skipped, report.errors
        ));
    }
    found.then_some(ev)
}
