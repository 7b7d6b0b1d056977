//! Evidence parsers: what a test runner's output proves about how many
//! tests ran, and per test, how each ended. Pure functions over the
//! runner's combined stdout and stderr; each returns `None` when the output
//! holds no evidence of that runner at all.
//!
//! A parser never invents a count: zero executed tests is reported as zero,
//! and the gate never calls such a run green.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

mod go;
mod jvm;

pub use go::{go_test, go_test_json};
pub use jvm::{gradle, junit_reports, maven};

/// How one test ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Outcome {
    /// It passed.
    Passed,
    /// An assertion failed.
    Failed,
    /// It was skipped or ignored.
    Skipped,
    /// It could not run to an assertion (an exception outside one, a
    /// collection error).
    Error,
}

/// What a run's output proves.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Evidence {
    /// The runner the output came from (`pytest`, `unittest`, `cargo`).
    pub runner: String,
    /// Tests that passed.
    pub passed: u32,
    /// Tests that failed an assertion.
    pub failed: u32,
    /// Tests skipped or ignored.
    pub skipped: u32,
    /// Tests that errored while running (an exception outside an
    /// assertion, a fixture that failed).
    pub errors: u32,
    /// Test files or modules that could not even be loaded (an import
    /// error during collection): no test of theirs ran.
    pub collection_errors: u32,
    /// The files that could not be loaded, as the runner names them
    /// (pytest's `ERROR tests/test_x.py` lines): a test named in one of
    /// them did not run, and fails until the file loads.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub uncollected: Vec<String>,
    /// Per-test outcomes, where the runner prints them, by test id.
    pub tests: BTreeMap<String, Outcome>,
    /// The lines the counts were read from.
    pub lines: Vec<String>,
    /// Whether it came from the runner's structured report, written where
    /// the code under test does not print (a report file forq names); else it was
    /// read from the printed output, which the code under test shares:
    /// weaker evidence.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub structured: bool,
    /// Why the run's own signs contradict its report (it exited non-zero
    /// though the report names no failure, or exited 0 and wrote none):
    /// such a run is never judged green.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disagreement: Option<String>,
}

impl Evidence {
    pub(crate) fn new(runner: &str) -> Evidence {
        Evidence {
            runner: runner.to_owned(),
            ..Evidence::default()
        }
    }

    /// Tests that ran to a result: passed, failed, or errored inside a test.
    /// Skipped tests and collection errors did not run.
    pub fn executed(&self) -> u32 {
        self.passed + self.failed + self.errors
    }

    /// Counts one test that ended with `outcome`.
    pub(crate) fn tally(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Passed => self.passed += 1,
            Outcome::Failed => self.failed += 1,
            Outcome::Skipped => self.skipped += 1,
            Outcome::Error => self.errors += 1,
        }
    }
}

/// `text` without ANSI escape sequences (colours, cursor moves).
pub fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        match chars.peek() {
            // CSI: ESC [ params final-byte(@..~)
            Some('[') => {
                chars.next();
                for n in chars.by_ref() {
                    if ('@'..='~').contains(&n) {
                        break;
                    }
                }
            }
            // OSC: ESC ] ... BEL or ESC \
            Some(']') => {
                chars.next();
                while let Some(n) = chars.next() {
                    if n == '\u{7}' || (n == '\u{1b}' && chars.next_if_eq(&'\\').is_some()) {
                        break;
                    }
                }
            }
            Some(_) => {
                chars.next();
            }
            None => {}
        }
    }
    out
}

/// The number before `word` in `text` (`"3 passed"` → 3 for `passed`).
fn count_before(text: &str, word: &str) -> Option<u32> {
    let words: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| !w.is_empty())
        .collect();
    words
        .windows(2)
        .find(|w| w[1].trim_end_matches([',', ';', '.']) == word)
        .and_then(|w| w[0].parse().ok())
}

/// pytest: the final `== N failed, M passed, K skipped in Xs ==` line (or
/// `no tests ran`), and per-test results from `-v` lines (`id PASSED
/// [ 40%]`) or the short summary's `PASSED`/`FAILED`/`ERROR id` lines
/// (`-rA`; the gate uses `-v`, as `-rA` slows down quadratically past
/// tens of thousands of tests).
pub fn pytest(output: &str) -> Option<Evidence> {
    let text = strip_ansi(output);
    let mut ev = Evidence::new("pytest");
    let summary = text.lines().rev().find(|l| {
        let t = l.trim_matches(|c| c == '=' || c == ' ');
        l.starts_with('=')
            && (t.contains(" in ")
                && (t.contains("passed")
                    || t.contains("failed")
                    || t.contains("error")
                    || t.contains("skipped")
                    || t.contains("xfailed")
                    || t.contains("deselected")
                    || t.contains("warning")
                    || t.starts_with("no tests ran")))
    })?;
    let body = summary.trim_matches(|c| c == '=' || c == ' ');
    // An unexpected pass ran and passed; an expected failure is pytest's
    // kind of skip.
    ev.passed =
        count_before(body, "passed").unwrap_or(0) + count_before(body, "xpassed").unwrap_or(0);
    ev.failed = count_before(body, "failed").unwrap_or(0);
    ev.skipped =
        count_before(body, "skipped").unwrap_or(0) + count_before(body, "xfailed").unwrap_or(0);
    ev.errors = count_before(body, "error")
        .or_else(|| count_before(body, "errors"))
        .unwrap_or(0);
    ev.lines.push(summary.trim().to_owned());
    // `collected 5 items`, or with -v `collecting ... collected 5 items`.
    if let Some(collected) = text
        .lines()
        .find_map(|l| l.find("collected ").map(|at| &l[at..]))
    {
        ev.lines.insert(0, collected.trim().to_owned());
    }
    // An `ERROR path` line without a test id is a file that failed to
    // collect, not a test that ran.
    ev.uncollected = text
        .lines()
        .filter_map(|l| l.strip_prefix("ERROR "))
        .map(|rest| rest.split(" - ").next().unwrap_or(rest).trim())
        .filter(|path| !path.contains("::") && !path.is_empty())
        .map(str::to_owned)
        .collect();
    ev.uncollected.sort();
    ev.uncollected.dedup();
    ev.collection_errors = ev.uncollected.len() as u32;
    ev.errors = ev.errors.saturating_sub(ev.collection_errors);
    for line in text.lines() {
        let (outcome, rest) = if let Some(r) = line.strip_prefix("PASSED ") {
            (Outcome::Passed, r)
        } else if let Some(r) = line.strip_prefix("FAILED ") {
            (Outcome::Failed, r)
        } else if let Some(r) = line.strip_prefix("ERROR ") {
            (Outcome::Error, r)
        } else {
            continue;
        };
        let id = rest.split(" - ").next().unwrap_or(rest).trim();
        if id.contains("::") {
            ev.tests.insert(id.to_owned(), outcome);
        }
    }
    for line in text.lines() {
        if let Some((id, outcome)) = pytest_verbose_line(line) {
            ev.tests.entry(id.to_owned()).or_insert(outcome);
        }
    }
    Some(ev)
}

/// A `-v` result line, `path::test[param] STATUS (reason)   [ 40%]`, as
/// the node id and its outcome.
fn pytest_verbose_line(line: &str) -> Option<(&str, Outcome)> {
    const STATUSES: [(&str, Outcome); 6] = [
        (" PASSED", Outcome::Passed),
        (" FAILED", Outcome::Failed),
        (" ERROR", Outcome::Error),
        (" SKIPPED", Outcome::Skipped),
        (" XFAIL", Outcome::Skipped),
        (" XPASS", Outcome::Passed),
    ];
    if !line.contains("::") || line.starts_with(' ') {
        return None;
    }
    STATUSES
        .iter()
        .filter_map(|(word, outcome)| {
            let at = line.find(word)?;
            let after = &line[at + word.len()..];
            let ends = after.is_empty() || after.starts_with(' ');
            let id = &line[..at];
            // A space in an id only inside its parameters.
            let plain_id = !id.contains(' ') || id.contains('[');
            (ends && id.contains("::") && plain_id).then_some((at, id, *outcome))
        })
        .min_by_key(|(at, _, _)| *at)
        .map(|(_, id, outcome)| (id, outcome))
}

/// unittest: `Ran N tests`, then `OK (...)` or `FAILED (failures=F,
/// errors=E, skipped=S)`, and with `-v` one `name (module.Class.name) ...
/// ok|FAIL|ERROR|skipped` line per test.
pub fn unittest(output: &str) -> Option<Evidence> {
    let text = strip_ansi(output);
    let lines: Vec<&str> = text.lines().collect();
    let ran_at = lines
        .iter()
        .rposition(|l| l.starts_with("Ran ") && l.contains(" test"))?;
    let ran: u32 = lines[ran_at].split_whitespace().nth(1)?.parse().ok()?;
    let mut ev = Evidence::new("unittest");
    ev.lines.push(lines[ran_at].trim().to_owned());
    let status = lines[ran_at + 1..]
        .iter()
        .find(|l| !l.trim().is_empty())
        .map(|l| l.trim())
        .unwrap_or("");
    let detail = |key: &str| -> u32 {
        status
            .split(['(', ')', ','])
            .find_map(|part| part.trim().strip_prefix(&format!("{key}=")))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    ev.failed = detail("failures");
    ev.errors = detail("errors");
    ev.skipped = detail("skipped");
    let expected = detail("expected failures");
    ev.passed = ran.saturating_sub(ev.failed + ev.errors + ev.skipped + expected);
    if !status.is_empty() {
        ev.lines.push(status.to_owned());
    }
    for (i, line) in lines.iter().enumerate() {
        let Some((head, result)) = line.rsplit_once(" ... ") else {
            continue;
        };
        let outcome = match result.trim() {
            "ok" => Outcome::Passed,
            "FAIL" => Outcome::Failed,
            "ERROR" => Outcome::Error,
            r if r.starts_with("skipped") => Outcome::Skipped,
            _ => continue,
        };
        // A test with a docstring shows the docstring's first line here and
        // its name on the line above: `test_x (pkg.mod.Class.test_x)` then
        // `Test when … ... FAIL`.
        let above = i
            .checked_sub(1)
            .map(|j| lines[j])
            .filter(|l| !l.contains(" ... "));
        let id = match head.strip_prefix("Doctest: ") {
            Some(doctest) => doctest.trim().to_owned(),
            None => match unittest_id(head).or_else(|| above.and_then(unittest_id)) {
                Some(id) => id,
                None => head.trim().to_owned(),
            },
        };
        if id.starts_with("unittest.loader._FailedTest") {
            // A module that failed to import, reported as an erroring test.
            ev.collection_errors += 1;
            continue;
        }
        ev.tests.insert(id, outcome);
    }
    ev.errors = ev.errors.saturating_sub(ev.collection_errors);
    Some(ev)
}

/// The dotted id in unittest's `name (where)`: `where` itself on Python
/// 3.11+ (`test_add (tests.test_calc.CalcTest.test_add)`), `where.name`
/// before it, where `where` is only the class (`test_add
/// (tests.test_calc.CalcTest)`). `None` for a line of another shape.
fn unittest_id(text: &str) -> Option<String> {
    let (name, inner) = text.trim().strip_suffix(')')?.rsplit_once(" (")?;
    let name = name.trim();
    // Names are identifiers, dotted for modules (`tests.test_x` of a
    // module that failed to import).
    let dotted = |s: &str| {
        !s.is_empty()
            && s.split('.').all(|part| {
                !part.is_empty() && part.chars().all(|c| c.is_alphanumeric() || c == '_')
            })
    };
    if !dotted(name) || !dotted(inner) {
        return None;
    }
    Some(if inner == name || inner.ends_with(&format!(".{name}")) {
        inner.to_owned()
    } else {
        format!("{inner}.{name}")
    })
}

/// cargo test: every `test result:` line, summed over the unit, integration
/// and doc-test binaries, and the per-test `test NAME ... ok|FAILED|ignored`
/// lines. No `test result:` line at all (a build failure) is `None`.
pub fn cargo(output: &str) -> Option<Evidence> {
    let text = strip_ansi(output);
    let mut ev = Evidence::new("cargo");
    let mut binary = String::new();
    let mut found = false;
    for line in text.lines() {
        let trimmed = line.trim();
        if let Some(rest) = trimmed.strip_prefix("Running ") {
            // `Running unittests src/lib.rs (target/debug/deps/x-hash)`
            binary = rest
                .split(" (")
                .next()
                .unwrap_or(rest)
                .trim_start_matches("unittests ")
                .to_owned();
        } else if let Some(rest) = trimmed.strip_prefix("Doc-tests ") {
            binary = format!("doc {rest}");
        } else if let Some(rest) = trimmed.strip_prefix("test result: ") {
            found = true;
            ev.passed += count_before(rest, "passed").unwrap_or(0);
            ev.failed += count_before(rest, "failed").unwrap_or(0);
            ev.skipped += count_before(rest, "ignored").unwrap_or(0);
            ev.lines.push(trimmed.to_owned());
        } else if let Some(rest) = trimmed.strip_prefix("test ") {
            let Some((name, result)) = rest.rsplit_once(" ... ") else {
                continue;
            };
            let outcome = match result.trim() {
                "ok" => Outcome::Passed,
                "FAILED" => Outcome::Failed,
                r if r.starts_with("ignored") => Outcome::Skipped,
                _ => continue,
            };
            ev.tests.insert(format!("{binary}::{name}"), outcome);
        }
    }
    found.then_some(ev)
}

/// node's built-in test runner (`node --test`), with the TAP reporter (the
/// default without a terminal) or the spec reporter, and TAP producers
/// such as tape (`# tests N`, `# pass N`, `# fail N` only when one failed): the closing counts
/// (`# pass N` / `ℹ pass N`, with `fail`, `cancelled`, `skipped`, `todo`),
/// and with TAP the per-test `ok`/`not ok` lines, named by their subtest
/// path (`suite > nested`); suites are not tests.
pub fn node_test(output: &str) -> Option<Evidence> {
    let text = strip_ansi(output);
    let mut ev = Evidence::new("node");
    let mut counts: BTreeMap<&str, u32> = BTreeMap::new();
    for line in text.lines() {
        let body = line.strip_prefix("# ").or_else(|| line.strip_prefix("ℹ "));
        let Some((key, value)) = body.and_then(|b| b.split_once(' ')) else {
            continue;
        };
        if matches!(
            key,
            "tests" | "pass" | "fail" | "cancelled" | "skipped" | "skip" | "todo"
        ) {
            if let Ok(n) = value.trim().parse() {
                counts.insert(key, n);
                ev.lines.push(line.trim().to_owned());
            }
        }
    }
    // node's runner always prints `fail`; tape prints it only when a test
    // failed, after `tests` and `pass`.
    if !counts.contains_key("pass")
        || !(counts.contains_key("fail") || counts.contains_key("tests"))
    {
        return None;
    }
    let get = |k: &str| counts.get(k).copied().unwrap_or(0);
    ev.passed = get("pass");
    ev.failed = get("fail");
    ev.errors = get("cancelled");
    ev.skipped = get("skipped") + get("skip") + get("todo");
    // A file node's runner gave up on is named by its absolute path: the
    // directory the run started in (see [`NODE_CWD`]) is cut off it, so
    // the name is the same in every fork.
    let cwd = text.lines().find_map(|l| l.strip_prefix(NODE_CWD));
    // Flat TAP (tape, `ava --tap`): no subtests, each `ok N - name` at
    // the margin is a test.
    let flat = !text
        .lines()
        .any(|l| l.trim_start().starts_with("# Subtest: "));
    // TAP: a stack of open subtests (indent, name, has children).
    let mut open: Vec<(usize, String, bool)> = Vec::new();
    for line in text.lines() {
        let indent = line.len() - line.trim_start().len();
        let trimmed = line.trim_start();
        if let Some(name) = trimmed.strip_prefix("# Subtest: ") {
            while open.last().is_some_and(|(i, _, _)| *i >= indent) {
                open.pop();
            }
            if let Some(parent) = open.last_mut() {
                parent.2 = true;
            }
            open.push((indent, name.to_owned(), false));
            continue;
        }
        let (ok, rest) = if let Some(r) = trimmed.strip_prefix("not ok ") {
            (false, r)
        } else if let Some(r) = trimmed.strip_prefix("ok ") {
            (true, r)
        } else {
            continue;
        };
        let Some((_, name_and_directive)) = rest.split_once(" - ") else {
            continue;
        };
        let (name, directive) = name_and_directive
            .split_once(" # ")
            .map_or((name_and_directive, ""), |(n, d)| (n, d));
        let id = if flat {
            if indent > 0 {
                continue;
            }
            name.to_owned()
        } else {
            let Some(at) = open.iter().rposition(|(i, n, _)| *i == indent && n == name) else {
                continue;
            };
            if open[at].2 {
                continue; // a suite
            }
            open[..=at]
                .iter()
                .map(|(_, n, _)| relative_to(cwd, n))
                .collect::<Vec<_>>()
                .join(" > ")
        };
        let upper = directive.to_ascii_uppercase();
        let outcome = if upper.starts_with("SKIP") || upper.starts_with("TODO") {
            Outcome::Skipped
        } else if ok {
            Outcome::Passed
        } else {
            Outcome::Failed
        };
        ev.tests.insert(id, outcome);
    }
    Some(ev)
}

/// The line forq prints before a node run, naming the directory it runs
/// in (`forq-cwd: /path`).
pub(crate) const NODE_CWD: &str = "forq-cwd: ";

/// `name` relative to `cwd` when it is a path under it.
fn relative_to<'n>(cwd: Option<&str>, name: &'n str) -> &'n str {
    cwd.and_then(|c| name.strip_prefix(c))
        .and_then(|rest| rest.strip_prefix('/'))
        .unwrap_or(name)
}

/// The tests (or whole files) node's runner failed for running past its
/// `--test-timeout`, as [`node_test`] names them.
pub fn node_timeouts(output: &str) -> Vec<String> {
    let text = strip_ansi(output);
    let cwd = text.lines().find_map(|l| l.strip_prefix(NODE_CWD));
    let mut out = Vec::new();
    let mut last: Option<&str> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if let Some(rest) = trimmed.strip_prefix("not ok ") {
            last = rest.split_once(" - ").map(|(_, name)| name);
        } else if trimmed.starts_with("ok ") {
            last = None;
        } else if trimmed == "failureType: 'testTimeoutFailure'" {
            if let Some(name) = last.take() {
                let name = relative_to(cwd, name).to_owned();
                if !out.contains(&name) {
                    out.push(name);
                }
            }
        }
    }
    out
}

/// The tests of an indented tree report (jest `--verbose`, mocha's spec
/// reporter): plain lines are suites, lines starting with one of
/// `markers` are tests; ids join the open suites and the name with ` › `.
fn tree_report(lines: &[&str], prefix: &str, markers: &[(&str, Outcome)], ev: &mut Evidence) {
    let mut suites: Vec<(usize, String)> = Vec::new();
    for line in lines {
        if line.trim().is_empty() {
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        let body = line.trim();
        while suites.last().is_some_and(|(i, _)| *i >= indent) {
            suites.pop();
        }
        let test = markers.iter().find_map(|(marker, outcome)| {
            body.strip_prefix(marker)
                .map(|rest| (rest.trim(), *outcome))
        });
        // Mocha numbers its failures: `1) name`.
        let numbered = body
            .split_once(") ")
            .filter(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
            .map(|(_, rest)| (rest.trim(), Outcome::Failed));
        match test.or(numbered) {
            Some((name, outcome)) => {
                // `adds (2 ms)` → `adds`
                let name = match name.rsplit_once(" (") {
                    Some((n, t)) if t.ends_with("ms)") || t.ends_with(" s)") => n,
                    _ => name,
                };
                let name = name.strip_prefix("skipped ").unwrap_or(name);
                let mut path: Vec<&str> = Vec::new();
                if !prefix.is_empty() {
                    path.push(prefix);
                }
                path.extend(suites.iter().map(|(_, s)| s.as_str()));
                path.push(name);
                ev.tests.insert(path.join(" › "), outcome);
            }
            None => suites.push((indent, body.to_owned())),
        }
    }
}

/// jest: the `Tests: F failed, S skipped, P passed, T total` summary, and
/// with `--verbose` the per-test `✓`/`✕`/`○` lines under each file.
pub fn jest(output: &str) -> Option<Evidence> {
    let text = strip_ansi(output);
    let summary = text.lines().find(|l| l.starts_with("Tests:"))?;
    let mut ev = Evidence::new("jest");
    ev.passed = count_before(summary, "passed").unwrap_or(0);
    ev.failed = count_before(summary, "failed").unwrap_or(0);
    ev.skipped =
        count_before(summary, "skipped").unwrap_or(0) + count_before(summary, "todo").unwrap_or(0);
    if let Some(suites) = text.lines().find(|l| l.starts_with("Test Suites:")) {
        ev.lines.push(suites.trim().to_owned());
    }
    ev.lines.push(summary.trim().to_owned());
    let lines: Vec<&str> = text.lines().collect();
    let mut at = 0;
    while at < lines.len() {
        let Some(file) = lines[at]
            .strip_prefix("PASS ")
            .or_else(|| lines[at].strip_prefix("FAIL "))
        else {
            at += 1;
            continue;
        };
        let end = (at + 1..lines.len())
            .find(|&i| {
                lines[i].trim_start().starts_with('●')
                    || lines[i].starts_with("PASS ")
                    || lines[i].starts_with("FAIL ")
                    || lines[i].starts_with("Test Suites:")
            })
            .unwrap_or(lines.len());
        let markers = [
            ("✓", Outcome::Passed),
            ("✕", Outcome::Failed),
            ("○", Outcome::Skipped),
        ];
        tree_report(&lines[at + 1..end], file.trim(), &markers, &mut ev);
        at = end;
    }
    Some(ev)
}

/// mocha's spec reporter: `N passing (T)`, `N pending`, `N failing`, and the
/// per-test `✔`, `N)` and `-` lines above them.
pub fn mocha(output: &str) -> Option<Evidence> {
    let text = strip_ansi(output);
    let lines: Vec<&str> = text.lines().collect();
    let passing_at = lines.iter().position(|l| {
        let t = l.trim();
        t.split_whitespace().nth(1) == Some("passing")
            && t.split_whitespace()
                .next()
                .is_some_and(|n| n.parse::<u32>().is_ok())
    })?;
    let mut ev = Evidence::new("mocha");
    for line in &lines[passing_at..] {
        let t = line.trim();
        let mut words = t.split_whitespace();
        let (Some(n), Some(word)) = (
            words.next().and_then(|n| n.parse::<u32>().ok()),
            words.next(),
        ) else {
            continue;
        };
        match word {
            "passing" => ev.passed = n,
            "failing" => ev.failed = n,
            "pending" => ev.skipped = n,
            _ => continue,
        }
        ev.lines.push(t.to_owned());
    }
    let markers = [
        ("✔", Outcome::Passed),
        ("✓", Outcome::Passed),
        ("- ", Outcome::Skipped),
    ];
    tree_report(&lines[..passing_at], "", &markers, &mut ev);
    Some(ev)
}

/// ava's default reporter (verbose under CI): `✔ name`, `✘ [fail]: name`,
/// `- [skip] name`, `- [todo] name` per test, and the closing `N tests
/// failed` / `N tests passed` / `N tests skipped` / `N known failures`
/// lines (passes are counted from their lines where the summary leaves
/// them out, as it does when a test failed).
pub fn ava(output: &str) -> Option<Evidence> {
    let text = strip_ansi(output);
    let mut ev = Evidence::new("ava");
    let mut summary: BTreeMap<&str, u32> = BTreeMap::new();
    for line in text.lines() {
        let t = line.trim();
        let mut words = t.split_whitespace();
        if let (Some(n), Some(unit), Some(what), None) =
            (words.next(), words.next(), words.next(), words.next())
        {
            if let (Ok(n), true) = (n.parse::<u32>(), matches!(unit, "test" | "tests" | "known")) {
                let key = match what {
                    "passed" | "failed" | "skipped" | "todo" => what,
                    "failure" | "failures" if unit == "known" => "known",
                    _ => continue,
                };
                summary.insert(key, n);
                ev.lines.push(t.to_owned());
                continue;
            }
        }
        let (outcome, name) = if let Some(name) = t.strip_prefix("✔ ") {
            (Outcome::Passed, name)
        } else if let Some(name) = t.strip_prefix("✘ [fail]: ") {
            (Outcome::Failed, name)
        } else if let Some(name) = t
            .strip_prefix("- [skip] ")
            .or_else(|| t.strip_prefix("- [todo] "))
        {
            (Outcome::Skipped, name)
        } else {
            continue;
        };
        // `✔ name (12ms)`: the duration is not the name.
        let name = match name.rsplit_once(" (") {
            Some((head, tail)) if tail.ends_with("ms)") || tail.ends_with("s)") => head,
            _ => name,
        };
        ev.tests.insert(name.trim().to_owned(), outcome);
    }
    if summary.is_empty() {
        return None;
    }
    let count = |o: Outcome| ev.tests.values().filter(|&&x| x == o).count() as u32;
    ev.passed = summary
        .get("passed")
        .copied()
        .unwrap_or_else(|| count(Outcome::Passed));
    ev.failed = summary
        .get("failed")
        .copied()
        .unwrap_or_else(|| count(Outcome::Failed));
    ev.skipped =
        summary.get("skipped").copied().unwrap_or(0) + summary.get("todo").copied().unwrap_or(0);
    Some(ev)
}

/// uvu: the closing `Total: N`, `Passed: N`, `Skipped: N` block (failed
/// is what of the total did not pass) and a failed test's `FAIL  "name"`
/// (with its suite, `FAIL  suite  "name"`).
pub fn uvu(output: &str) -> Option<Evidence> {
    let text = strip_ansi(output);
    let mut ev = Evidence::new("uvu");
    let mut total = None;
    let mut passed = None;
    for line in text.lines() {
        let t = line.trim();
        let number = |key: &str| t.strip_prefix(key)?.trim().parse::<u32>().ok();
        if let Some(n) = number("Total:") {
            total = Some(n);
        } else if let Some(n) = number("Passed:") {
            passed = Some(n);
        } else if let Some(n) = number("Skipped:") {
            ev.skipped = n;
        } else if let Some(rest) = t.strip_prefix("FAIL ") {
            let rest = rest.trim();
            if let Some((suite, name)) = rest
                .rsplit_once('"')
                .and_then(|(head, _)| head.rsplit_once('"'))
            {
                let suite = suite.trim();
                let id = if suite.is_empty() {
                    name.to_owned()
                } else {
                    format!("{suite} > {name}")
                };
                ev.tests.insert(id, Outcome::Failed);
            }
            continue;
        } else {
            continue;
        }
        ev.lines.push(t.to_owned());
    }
    let (total, passed) = (total?, passed?);
    ev.passed = passed;
    ev.failed = total.saturating_sub(passed);
    Some(ev)
}

/// The plain summary many hand-rolled harnesses print, `N passed, M failed`
/// (either part alone too), and Automake's `# PASS: N` / `# FAIL: N` /
/// `# ERROR: N` block: the last such summary in the output counts.
pub fn plain(output: &str) -> Option<Evidence> {
    let text = strip_ansi(output);
    let mut ev = Evidence::new("plain");
    let automake: Vec<&str> = text
        .lines()
        .filter(|l| {
            [
                "# PASS:", "# FAIL:", "# ERROR:", "# SKIP:", "# XFAIL:", "# TOTAL:",
            ]
            .iter()
            .any(|p| l.starts_with(p))
        })
        .collect();
    if automake.iter().any(|l| l.starts_with("# TOTAL:")) {
        let get = |key: &str| -> u32 {
            automake
                .iter()
                .rev()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|n| n.trim().parse().ok())
                .unwrap_or(0)
        };
        ev.runner = "automake".to_owned();
        ev.passed = get("# PASS:") + get("# XFAIL:");
        ev.failed = get("# FAIL:");
        ev.errors = get("# ERROR:");
        ev.skipped = get("# SKIP:");
        ev.lines = automake.iter().map(|l| l.trim().to_owned()).collect();
        return Some(ev);
    }
    let line = text.lines().rev().find(|l| {
        let l = l.to_ascii_lowercase();
        count_before(&l, "passed").is_some() || count_before(&l, "failed").is_some()
    })?;
    let lower = line.to_ascii_lowercase();
    ev.passed = count_before(&lower, "passed").unwrap_or(0);
    ev.failed = count_before(&lower, "failed").unwrap_or(0);
    ev.skipped = count_before(&lower, "skipped").unwrap_or(0);
    ev.lines.push(line.trim().to_owned());
    Some(ev)
}

/// ctest: the `N% tests passed, F tests failed out of T` summary, and the
/// per-test `i/n Test #k: name ... Passed|***Failed|***Not Run|***Skipped`
/// lines. `No tests were found` is evidence of nothing run.
pub fn ctest(output: &str) -> Option<Evidence> {
    let text = strip_ansi(output);
    let mut ev = Evidence::new("ctest");
    if let Some(line) = text.lines().find(|l| l.contains("No tests were found")) {
        ev.lines.push(line.trim().to_owned());
        return Some(ev);
    }
    let summary = text
        .lines()
        .find(|l| l.contains("tests passed") && l.contains("out of"))?;
    let total: u32 = summary.split_whitespace().last()?.parse().ok()?;
    // `67% tests passed, 1 tests failed out of 3`
    ev.failed = summary
        .split(',')
        .nth(1)
        .and_then(|part| part.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    ev.lines.push(summary.trim().to_owned());
    for line in text.lines() {
        let Some((_, rest)) = line.split_once(" Test #") else {
            continue;
        };
        let Some((_, rest)) = rest.split_once(": ") else {
            continue;
        };
        let name = rest.split(" .").next().unwrap_or(rest).trim();
        let outcome = if rest.contains("Passed") {
            Outcome::Passed
        } else if rest.contains("Skipped") || rest.contains("Not Run") && rest.contains("Disabled")
        {
            Outcome::Skipped
        } else if rest.contains("Failed") || rest.contains("Timeout") || rest.contains("Exception")
        {
            Outcome::Failed
        } else if rest.contains("Not Run") {
            Outcome::Error
        } else {
            continue;
        };
        ev.tests.insert(name.to_owned(), outcome);
    }
    ev.skipped = ev
        .tests
        .values()
        .filter(|o| **o == Outcome::Skipped)
        .count() as u32;
    ev.errors = ev.tests.values().filter(|o| **o == Outcome::Error).count() as u32;
    ev.passed = total.saturating_sub(ev.failed + ev.skipped + ev.errors);
    Some(ev)
}

/// cargo-nextest: the closing `Summary [Xs] N tests run: P passed, F
/// failed, S skipped` line (with `T timed out` as errors), and the per-test
/// `PASS [Xs] (i/n) binary test::path` lines, ids `binary::test::path`.
/// nextest runs no doc-tests.
pub fn nextest(output: &str) -> Option<Evidence> {
    let text = strip_ansi(output);
    let summary = text
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with("Summary [") && l.contains(" run: "))?;
    let mut ev = Evidence::new("nextest");
    let counts = summary.split_once(" run: ").map_or("", |(_, c)| c);
    ev.passed = count_before(counts, "passed").unwrap_or(0);
    ev.failed = count_before(counts, "failed").unwrap_or(0);
    ev.skipped = count_before(counts, "skipped").unwrap_or(0);
    ev.errors = count_before(counts, "timed").unwrap_or(0);
    if let Some(start) = text
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("Starting "))
    {
        ev.lines.push(start.to_owned());
    }
    ev.lines.push(summary.to_owned());
    for line in text.lines() {
        let Some((status, rest)) = line.trim().split_once(" [") else {
            continue;
        };
        let outcome = match status {
            "PASS" | "LEAK" => Outcome::Passed,
            "FAIL" | "ABORT" => Outcome::Failed,
            "SKIP" => Outcome::Skipped,
            "TIMEOUT" => Outcome::Error,
            s if s.starts_with("SIG") => Outcome::Failed,
            _ => continue,
        };
        // `   0.015s] (1/3) mixed tests::adds`
        let Some((_, after)) = rest.split_once("] ") else {
            continue;
        };
        let after = match after.strip_prefix('(') {
            Some(a) => a.split_once(") ").map_or(a, |(_, name)| name),
            None => after,
        };
        if let Some((binary, test)) = after.trim().split_once(' ') {
            ev.tests
                .insert(format!("{binary}::{}", test.trim()), outcome);
        }
    }
    Some(ev)
}

/// vitest: the `Tests  F failed | P passed | S skipped (T)` summary (`Tests
/// no tests` when none ran), the `Test Files` line, per-test `✓`/`×`/`↓`
/// lines of the verbose reporter and the `FAIL  file > suite > test` lines
/// of any reporter, ids `file > suite > test`. A `FAIL  file [ file ]`
/// line is a test file that failed to load.
pub fn vitest(output: &str) -> Option<Evidence> {
    let text = strip_ansi(output);
    let summary = text.lines().map(str::trim).find(|l| {
        l.strip_prefix("Tests ").is_some_and(|rest| {
            rest.starts_with(' ') && (rest.contains('(') || rest.contains("no tests"))
        })
    })?;
    let mut ev = Evidence::new("vitest");
    let body = summary.trim_start_matches("Tests").replace('|', ",");
    ev.passed = count_before(&body, "passed").unwrap_or(0);
    ev.failed = count_before(&body, "failed").unwrap_or(0);
    ev.skipped =
        count_before(&body, "skipped").unwrap_or(0) + count_before(&body, "todo").unwrap_or(0);
    if let Some(files) = text
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("Test Files "))
    {
        ev.lines.push(files.to_owned());
    }
    ev.lines.push(summary.to_owned());
    let without_duration = |name: &str| -> String {
        match name.rsplit_once(' ') {
            Some((n, t)) if t.ends_with("ms") && t[..t.len() - 2].parse::<f64>().is_ok() => {
                n.to_owned()
            }
            _ => name.to_owned(),
        }
    };
    for line in text.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("FAIL ") {
            let rest = rest.trim();
            if rest.contains(" > ") {
                ev.tests.insert(without_duration(rest), Outcome::Failed);
            } else if rest.ends_with(" ]") {
                ev.collection_errors += 1;
            }
            continue;
        }
        let (outcome, rest) = if let Some(r) = t.strip_prefix("✓ ") {
            (Outcome::Passed, r)
        } else if let Some(r) = t.strip_prefix("× ") {
            (Outcome::Failed, r)
        } else if let Some(r) = t.strip_prefix("↓ ") {
            (Outcome::Skipped, r)
        } else {
            continue;
        };
        // Only the verbose reporter's lines carry the file path.
        if rest.contains(" > ") {
            ev.tests.insert(without_duration(rest.trim()), outcome);
        }
    }
    Some(ev)
}

/// meson test: the closing `Ok:` / `Expected Fail:` / `Fail:` / `Unexpected
/// Pass:` / `Skipped:` / `Timeout:` block, and the per-test `i/n name
/// STATUS time` lines. `No tests defined.` is evidence of nothing run.
pub fn meson(output: &str) -> Option<Evidence> {
    let text = strip_ansi(output);
    let mut ev = Evidence::new("meson");
    if let Some(line) = text.lines().find(|l| l.trim() == "No tests defined.") {
        ev.lines.push(line.trim().to_owned());
        return Some(ev);
    }
    let mut block: BTreeMap<&str, u32> = BTreeMap::new();
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let key = key.trim();
        if matches!(
            key,
            "Ok" | "Expected Fail" | "Fail" | "Unexpected Pass" | "Skipped" | "Timeout"
        ) {
            if let Ok(n) = value.trim().parse() {
                block.insert(key, n);
                ev.lines.push(format!("{key}: {n}"));
            }
        }
    }
    if !block.contains_key("Ok") || !block.contains_key("Fail") {
        return None;
    }
    let get = |k: &str| block.get(k).copied().unwrap_or(0);
    ev.passed = get("Ok") + get("Expected Fail");
    ev.failed = get("Fail") + get("Unexpected Pass");
    ev.skipped = get("Skipped");
    ev.errors = get("Timeout");
    for line in text.lines() {
        // `3/4 subtracts FAIL            0.01s   exit status 1`; a name may
        // hold spaces, the status is the first status word after it.
        let words: Vec<&str> = line.split_whitespace().collect();
        let numbered = words
            .first()
            .and_then(|w| w.split_once('/'))
            .is_some_and(|(a, b)| a.parse::<u32>().is_ok() && b.parse::<u32>().is_ok());
        if !numbered {
            continue;
        }
        let Some((at, outcome)) = words.iter().enumerate().skip(2).find_map(|(i, w)| {
            let outcome = match *w {
                "OK" | "EXPECTEDFAIL" => Outcome::Passed,
                "FAIL" | "UNEXPECTEDPASS" => Outcome::Failed,
                "SKIP" => Outcome::Skipped,
                "TIMEOUT" | "ERROR" => Outcome::Error,
                _ => return None,
            };
            Some((i, outcome))
        }) else {
            continue;
        };
        let name = words[1..at].join(" ");
        ev.tests.insert(name, outcome);
    }
    Some(ev)
}

/// Whichever parser finds evidence in `output`, for a command whose runner
/// is not known in advance: the first that saw tests execute, else the
/// first that recognised its runner at all.
pub fn any(output: &str) -> Option<Evidence> {
    let parsers: [fn(&str) -> Option<Evidence>; 17] = [
        pytest,
        unittest,
        nextest,
        cargo,
        go_test_json,
        go_test,
        jest,
        vitest,
        mocha,
        ava,
        uvu,
        node_test,
        ctest,
        meson,
        maven,
        gradle,
        plain,
    ];
    let mut first = None;
    for parse in parsers {
        if let Some(ev) = parse(output) {
            if ev.executed() > 0 {
                return Some(ev);
            }
            first = first.or(Some(ev));
        }
    }
    first
}
