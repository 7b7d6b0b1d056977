//! Verdicts through a channel the code under test does not print to.
//!
//! A runner's printed output is shared with the code it tests: a function
//! that prints lands between `test_x ... ` and `FAIL`, and a patch can
//! print lines that look green. So where forq knows how, the test command
//! is changed to have the runner write a structured report of its own to
//! a file forq names (`/tmp/forq-report-…` inside the sandbox), read back
//! by a separate command after the run; the printed output stays evidence
//! for people only.
//!
//! - pytest and unittest run through a reporter forq passes on the command
//!   line (`python -c …` in place of `python -m pytest` or `-m unittest`):
//!   one JSON line per test as the runner's own hooks see it (pytest's
//!   node ids, unittest's dotted ids), and one per file or module that
//!   could not be loaded;
//! - CTest writes JUnit XML (`--output-junit`, CMake 3.21 and later).
//!
//! Every other runner's evidence is still read from its output, and says
//! so ([`Evidence::structured`] is false): weaker evidence. The report is
//! not a secret from the code under test (its path is in the environment):
//! it keeps accidents and printed lines out of the verdict, not a patch
//! written to forge it.

use forq_sandbox::{ExecOutcome, Sandbox};

use crate::detect::StackKind;
use crate::evidence::{Evidence, Outcome};

/// How the report is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    /// forq's Python reporter: a JSON object a line.
    Lines,
    /// JUnit XML.
    Junit,
}

/// Where one run's report is written, and how.
#[derive(Debug, Clone)]
pub(crate) struct Report {
    path: String,
    format: Format,
}

/// The most of a report forq reads (a suite of tens of thousands of tests
/// writes a few MiB).
const MAX_REPORT: usize = 64 << 20;

/// The Python of the pytest reporter: pytest itself, with a plugin that
/// writes each test's outcome as its hooks report it.
const PYTEST: &str = r#"import json, os, sys
import pytest
class ForqReport:
    def __init__(self):
        self.out = open(os.environ["FORQ_REPORT"], "a", encoding="utf-8")
    def put(self, test, outcome):
        self.out.write(json.dumps({"test": test, "outcome": outcome}) + "\n")
        self.out.flush()
    def pytest_runtest_logreport(self, report):
        if report.when == "call":
            self.put(report.nodeid, "skipped" if report.skipped else report.outcome)
        elif report.failed:
            self.put(report.nodeid, "error")
        elif report.skipped:
            self.put(report.nodeid, "skipped")
    def pytest_collectreport(self, report):
        if report.failed:
            self.put(report.nodeid, "uncollected")
sys.exit(pytest.main(sys.argv[1:], plugins=[ForqReport()]))
"#;

/// The Python of the unittest reporter: `python -m unittest` itself, its
/// result writing each test's outcome as it is added.
const UNITTEST: &str = r#"import json, os, sys, unittest
OUT = open(os.environ["FORQ_REPORT"], "a", encoding="utf-8")
FAILED_LOAD = "unittest.loader._FailedTest."
def put(test, outcome):
    name = test.id()
    if name.startswith(FAILED_LOAD):
        name, outcome = name[len(FAILED_LOAD):], "uncollected"
    OUT.write(json.dumps({"test": name, "outcome": outcome}) + "\n")
    OUT.flush()
class ForqResult(unittest.TextTestResult):
    def addSuccess(self, test):
        super().addSuccess(test)
        put(test, "passed")
    def addFailure(self, test, err):
        super().addFailure(test, err)
        put(test, "failed")
    def addError(self, test, err):
        super().addError(test, err)
        put(test, "error")
    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        put(test, "skipped")
    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        put(test, "passed")
    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        put(test, "failed")
    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            put(test, "failed" if issubclass(err[0], test.failureException) else "error")
class ForqRunner(unittest.TextTestRunner):
    resultclass = ForqResult
unittest.main(module=None, argv=["python -m unittest"] + sys.argv[1:], testRunner=ForqRunner)
"#;

impl Report {
    /// `command` (a stack's test command, or a selection of it) changed
    /// so that its runner also writes a report, and where; `None` when
    /// forq has no structured report for this runner or this command.
    pub(crate) fn wrap(kind: StackKind, command: &str) -> Option<(Report, String)> {
        let path = format!("/tmp/forq-report-{:016x}", fastrand::u64(..));
        let (format, changed) = match kind {
            StackKind::Pytest => (Format::Lines, python(command, "pytest", PYTEST)?),
            StackKind::Unittest => (Format::Lines, python(command, "unittest", UNITTEST)?),
            StackKind::Cmake => {
                let at = word(command, "ctest")?;
                let end = at + "ctest".len();
                let junit = format!(" --output-junit {path}");
                (
                    Format::Junit,
                    format!("{}{junit}{}", &command[..end], &command[end..]),
                )
            }
            _ => return None,
        };
        let changed = match format {
            Format::Lines => format!("FORQ_REPORT={path}; export FORQ_REPORT; {changed}"),
            Format::Junit => changed,
        };
        Some((Report { path, format }, changed))
    }

    /// The report the run wrote, read by a command of its own (and then
    /// removed), as evidence; `None` when it wrote none that reads.
    pub(crate) async fn collect(
        &self,
        sandbox: &dyn Sandbox,
    ) -> Result<Option<Evidence>, forq_sandbox::Error> {
        let script = format!("cat {0} 2>/dev/null; rm -f {0}", self.path);
        let out = sandbox
            .exec(
                crate::runner::shell(&script, std::time::Duration::from_secs(60))
                    .output_cap(MAX_REPORT)
                    .network(forq_sandbox::Network::None),
            )
            .await?;
        let text = out.stdout_text();
        Ok(match self.format {
            Format::Lines => lines(&text),
            Format::Junit => {
                crate::evidence::junit_reports(&[("ctest --output-junit".to_owned(), text)]).map(
                    |mut ev| {
                        ev.runner = "ctest".to_owned();
                        ev
                    },
                )
            }
        }
        .map(|mut ev| {
            ev.structured = true;
            ev
        }))
    }
}

/// Marks `ev` (a report's evidence) as contradicted when the run `out`
/// exited non-zero though the report names no failure: such a runner is
/// not believed green. A killed run is judged by its kill instead.
pub(crate) fn check_exit(ev: &mut Evidence, out: &ExecOutcome, killed: bool) {
    if killed {
        return;
    }
    let code = out.shell_code();
    let failures = ev.failed + ev.errors + ev.collection_errors;
    if failures == 0 && code != 0 {
        ev.disagreement = Some(format!(
            "the runner exited {code}, though its report names no failure"
        ));
    }
}

/// The evidence of a run whose report was expected and did not come: read
/// from the printed output, weaker, and never green on the runner's word
/// alone when it exited 0 (a run that claims success proves it through
/// its report).
pub(crate) fn unreported(mut ev: Evidence, out: &ExecOutcome, killed: bool) -> Evidence {
    if !killed && out.shell_code() == 0 {
        ev.disagreement = Some("the runner exited 0 but wrote no report".to_owned());
    }
    ev
}

/// `command` with its `python -m {module}` run through `code` instead
/// (the same arguments follow); `None` when it runs no such module.
fn python(command: &str, module: &str, code: &str) -> Option<String> {
    let needle = format!("-m {module}");
    let at = word(command, &needle)?;
    let end = at + needle.len();
    Some(format!(
        "{}-c {}{}",
        &command[..at],
        crate::runner::single_quoted(code),
        &command[end..]
    ))
}

/// Where `needle` stands in `command` as words of their own (spaces or
/// the ends around it).
fn word(command: &str, needle: &str) -> Option<usize> {
    command.match_indices(needle).map(|(i, _)| i).find(|&i| {
        let before = command[..i].chars().next_back();
        let after = command[i + needle.len()..].chars().next();
        before.is_none_or(char::is_whitespace) && after.is_none_or(char::is_whitespace)
    })
}

/// The evidence of forq's Python reporter: each test's worst outcome (a
/// test reported more than once, by its subtests, fails when any did).
fn lines(text: &str) -> Option<Evidence> {
    let mut ev = Evidence::new("report");
    let mut any = false;
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let (Some(test), Some(outcome)) = (v["test"].as_str(), v["outcome"].as_str()) else {
            continue;
        };
        any = true;
        let outcome = match outcome {
            "passed" => Outcome::Passed,
            "failed" => Outcome::Failed,
            "skipped" => Outcome::Skipped,
            "uncollected" => {
                if !ev.uncollected.iter().any(|u| u == test) {
                    ev.uncollected.push(test.to_owned());
                    ev.collection_errors += 1;
                }
                continue;
            }
            _ => Outcome::Error,
        };
        let worst = match ev.tests.get(test) {
            Some(before) if rank(*before) >= rank(outcome) => *before,
            _ => outcome,
        };
        ev.tests.insert(test.to_owned(), worst);
    }
    if !any {
        return None;
    }
    crate::hang::recount(&mut ev);
    ev.lines.push(format!(
        "forq's report: {} passed, {} failed, {} errors, {} skipped, {} not loaded",
        ev.passed, ev.failed, ev.errors, ev.skipped, ev.collection_errors
    ));
    Some(ev)
}

fn rank(o: Outcome) -> u8 {
    match o {
        Outcome::Passed => 0,
        Outcome::Skipped => 1,
        Outcome::Failed => 2,
        _ => 3,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_changed_only_where_the_runner_is_a_word() {
        let (report, cmd) = Report::wrap(
            StackKind::Unittest,
            ".forq/venv/bin/python -m unittest -v t.A.b",
        )
        .unwrap();
        assert!(cmd.starts_with(&format!(
            "FORQ_REPORT={}; export FORQ_REPORT; ",
            report.path
        )));
        assert!(cmd.contains(".forq/venv/bin/python -c 'import json"));
        assert!(cmd.ends_with("' -v t.A.b"), "{cmd}");
        let (_, cmd) = Report::wrap(StackKind::Pytest, "python -m pytest -v --deselect x").unwrap();
        assert!(cmd.ends_with("' -v --deselect x"), "{cmd}");
        assert!(Report::wrap(StackKind::Pytest, "tox -e py").is_none());
        assert!(Report::wrap(StackKind::Pytest, "python -m pytest_x").is_none());
        let (report, cmd) = Report::wrap(
            StackKind::Cmake,
            "cmake --build b && ctest --test-dir b --output-on-failure",
        )
        .unwrap();
        assert_eq!(
            cmd,
            format!(
                "cmake --build b && ctest --output-junit {} --test-dir b --output-on-failure",
                report.path
            )
        );
        assert!(Report::wrap(StackKind::Rust, "cargo test").is_none());
    }

    #[test]
    fn a_test_reported_twice_keeps_its_worst_outcome() {
        let text = r#"{"test": "t.A.a", "outcome": "passed"}
{"test": "t.A.b", "outcome": "failed"}
{"test": "t.A.b", "outcome": "passed"}
not json: printed by someone
{"test": "t/x.py", "outcome": "uncollected"}
{"test": "t.A.c", "outcome": "error"}
"#;
        let ev = lines(text).unwrap();
        assert_eq!(ev.tests["t.A.a"], Outcome::Passed);
        assert_eq!(ev.tests["t.A.b"], Outcome::Failed);
        assert_eq!(ev.tests["t.A.c"], Outcome::Error);
        assert_eq!((ev.passed, ev.failed, ev.errors), (1, 1, 1));
        assert_eq!(ev.uncollected, ["t/x.py"]);
        assert_eq!(ev.collection_errors, 1);
        assert!(lines("FAIL: nothing here\n").is_none());
    }
}
