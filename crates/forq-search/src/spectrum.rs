//! Statement-level fault localisation: the lines the failing tests run and
//! the passing ones do not. One run of the target tests and the guard
//! tests nearest them, in a fork of the unmodified code, under a line
//! tracer that knows which test is running (a `sitecustomize` module put
//! first on the interpreter's path, a pytest plugin or a wrapper of
//! unittest's `TestCase.run` naming the test); each line scored by Ochiai,
//! `failed(l) / sqrt(failed_total * (failed(l) + passed(l)))`. Python
//! stacks (pytest, unittest) only: other runners have no tracer here.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use forq_bootstrap::StackKind;
use forq_sandbox::{ExecRequest, Network, Sandbox};
use serde::{Deserialize, Serialize};

use crate::oracle::Oracle;

/// Passing tests traced beside the failing ones at most.
pub const MAX_PASSING: usize = 30;

/// Failing tests traced at most: a bug that breaks hundreds of tests
/// (a name no longer defined in a parser) says where it is in a few of
/// them, and tracing them all would eat the budget.
pub const MAX_FAILING: usize = 20;

/// Where the tracer's files go in the fork (never in the root).
const DIR: &str = ".forq-trace";

/// The state and the line tracer, imported by `sitecustomize` and the
/// pytest plugin alike.
const TRACER: &str = r#"import json, os, sys, threading, time

_root = os.environ.get("FORQ_TRACE_ROOT")
_out = os.environ.get("FORQ_TRACE_OUT")
# Seconds a test may run the repository's code under the tracer.
_budget = float(os.environ.get("FORQ_TRACE_TEST_BUDGET") or 0)
_state = {"test": None, "pytest": False, "t0": 0.0, "lines": 0}
# What the running test did: its lines by file, and when it failed, its
# traceback, error and the exception it expected.
_cover = {}
_failure = {}
_expect = {}
_files = {}


def _rel(filename):
    rel = _files.get(filename, 0)
    if rel == 0:
        rel = None
        # `<frozen …>`, `<string>`: code without a file.
        if not filename.startswith("<"):
            path = os.path.realpath(filename)
            if path.startswith(_root) and ".forq" not in path and "site-packages" not in path:
                rel = path[len(_root):]
        _files[filename] = rel
    return rel


class TestHung(BaseException):
    # Raised into a test that loops past its budget: the test ends failed
    # where it looped, its lines are kept and the run goes on. A
    # BaseException, so that the code's own `except Exception` lets it by.
    pass


def _local(frame, event, arg):
    if event == "line" and _state["test"] is not None:
        rel = _rel(frame.f_code.co_filename)
        if rel is not None:
            _cover.setdefault(rel, set()).add(frame.f_lineno)
        _state["lines"] += 1
        if _budget and _state["lines"] % 4096 == 0 and time.monotonic() - _state["t0"] > _budget:
            # Raising here also unsets the tracer; `start` sets it again.
            _state["t0"] = float("inf")  # once a test
            raise TestHung("the test ran past %.1f s under the tracer" % _budget)
    return _local


def _global(frame, event, arg):
    if _state["test"] is None or _rel(frame.f_code.co_filename) is None:
        return None
    return _local


def start(test):
    _state["test"] = test
    _state["t0"] = time.monotonic()
    _state["lines"] = 0
    sys.settrace(_global)
    _cover.clear()
    _failure.clear()
    _expect.pop(test, None)


def failed(test, tb, error=None):
    # The failure's traceback through the repository's files, outermost
    # frame first: where the error was raised, and who called it.
    frames = []
    while tb is not None:
        rel = _rel(tb.tb_frame.f_code.co_filename)
        if rel is not None:
            frames.append([rel, tb.tb_lineno])
        tb = tb.tb_next
    _failure["raised"] = frames
    if error is not None:
        try:
            text = "%s: %s" % (type(error).__name__, error)
        except Exception:
            text = type(error).__name__
        _failure["error"] = text[:300]
    if test in _expect:
        _failure["expected"] = _expect[test]


def expecting(classes, pattern):
    # A test entered `assertRaises(E)` / `pytest.raises(E, match=…)`: the
    # class it expects (name, module) and the message pattern, until the
    # context is met.
    test = _state["test"]
    if test is None:
        return
    if not isinstance(classes, tuple):
        classes = (classes,)
    if not classes or not isinstance(classes[0], type):
        return
    pattern = getattr(pattern, "pattern", pattern)
    if not isinstance(pattern, str):
        pattern = None
    _expect[test] = [classes[0].__name__, classes[0].__module__, pattern]


def _literal(value):
    # A value a literal can write: text, or a number as Python spells it.
    if isinstance(value, str) and len(value) <= 2000:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            # A lone surrogate: JSON would carry it, the reader would not.
            return None
        return ["s", value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if value == value and abs(value) < 1e300:
            return ["n", repr(value)]
    return None


def compared(left, right):
    # A failing test compared two values for equality (`assertEqual`,
    # pytest's `assert a == b`): the pair, or the first pair of items that
    # differs in two sequences of one length.
    if _state["test"] is None:
        return
    if isinstance(left, (list, tuple)) and isinstance(right, (list, tuple)) and len(left) == len(right):
        pairs = [(a, b) for a, b in zip(left, right) if type(a) is type(b) and a != b]
        if not pairs:
            return
        left, right = pairs[0]
    pair = [_literal(left), _literal(right)]
    if None in pair or pair[0][0] != pair[1][0]:
        return
    seen = _failure.setdefault("compared", [])
    if pair not in seen and len(seen) < 4:
        seen.append(pair)


def watch_equal(cls):
    original = cls.assertEqual

    def assertEqual(self, first, second, msg=None):
        try:
            return original(self, first, second, msg)
        except AssertionError:
            try:
                compared(first, second)
            except Exception:
                pass
            raise

    cls.assertEqual = assertEqual


def watch_raises(cls, classes_of, pattern_of):
    enter, leave = cls.__enter__, cls.__exit__

    def __enter__(self):
        try:
            expecting(classes_of(self), pattern_of(self))
        except Exception:
            pass
        return enter(self)

    def __exit__(self, *exc):
        handled = leave(self, *exc)
        if handled and _state["test"] is not None:
            _expect.pop(_state["test"], None)
        return handled

    cls.__enter__, cls.__exit__ = __enter__, __exit__


def _watch(result):
    if getattr(result, "_forq_watched", False):
        return
    for name in ("addError", "addFailure"):
        original = getattr(result, name)

        def report(test, err, _original=original):
            if isinstance(err, tuple):
                failed(test.id(), err[2], err[1])
            else:
                failed(test.id(), None)
            return _original(test, err)

        setattr(result, name, report)
    result._forq_watched = True


def stop():
    # One line per test as it ends: a run killed at its budget keeps
    # every test it finished.
    test = _state["test"]
    _state["test"] = None
    if test is None:
        return
    record = {"test": test, "cover": {f: sorted(ls) for f, ls in _cover.items()}}
    record.update(_failure)
    with open(_out, "a") as out:
        out.write(json.dumps(record) + "\n")
    _cover.clear()
    _failure.clear()


if _root and _out:
    _root = os.path.realpath(_root) + os.sep
    sys.settrace(_global)
    threading.settrace(_global)
    import unittest.case

    _run = unittest.case.TestCase.run

    def _traced_run(self, result=None):
        if _state["pytest"]:
            return _run(self, result)
        start(self.id())
        if result is not None:
            _watch(result)
        try:
            return _run(self, result)
        finally:
            stop()

    unittest.case.TestCase.run = _traced_run
    watch_raises(
        unittest.case._AssertRaisesContext,
        lambda c: c.expected,
        lambda c: c.expected_regex,
    )
    watch_equal(unittest.case.TestCase)
"#;

const SITECUSTOMIZE: &str = "import forq_trace\n";

const PYTEST_PLUGIN: &str = r#"import forq_trace

try:
    import pytest

    # `RaisesExc` (pytest 8.4 on: `expected_exceptions`, `match`) or
    # `RaisesContext` (before: `expected_exception`, `match_expr`).
    forq_trace.watch_raises(
        type(pytest.raises(Exception)),
        lambda c: getattr(c, "expected_exceptions", None) or getattr(c, "expected_exception", None),
        lambda c: getattr(c, "match", None) if hasattr(c, "expected_exceptions") else getattr(c, "match_expr", None),
    )
except Exception:
    pass


def pytest_configure(config):
    forq_trace._state["pytest"] = True


def pytest_runtest_setup(item):
    forq_trace.start(item.nodeid)


def pytest_runtest_makereport(item, call):
    if call.when == "call" and call.excinfo is not None:
        forq_trace.failed(item.nodeid, call.excinfo.tb, call.excinfo.value)


def pytest_assertrepr_compare(config, op, left, right):
    if op == "==":
        try:
            forq_trace.compared(left, right)
        except Exception:
            pass
    return None


def pytest_runtest_logfinish(nodeid, location):
    forq_trace.stop()
"#;

/// A line and why it is suspected.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LineSuspect {
    /// The file, relative to the repository.
    pub file: String,
    /// 1-based line.
    pub line: u32,
    /// Ochiai: 1 when every failing test and no passing one runs it.
    pub score: f64,
    /// Failing tests that ran it.
    pub failing: usize,
    /// Passing tests that ran it.
    pub passing: usize,
    /// In a failing test's traceback: where its error was raised, or a
    /// caller on the way (its score is at least 1 for the innermost
    /// frame, 0.1 less per frame outwards).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub raised: bool,
    /// The error a failing test raised here, where this is its innermost
    /// frame in the repository (`NameError: name 'x' is not defined`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The exception the failing test expected instead of `error`
    /// (`assertRaises(IDNAError)` met an `IndexError` raised here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<Expected>,
}

/// An exception a test expected (`assertRaises`, `pytest.raises`) when
/// it failed.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Expected {
    /// The class's name (`ValueError`).
    pub class: String,
    /// The module that defines it (`builtins`, `idna.core`).
    pub module: String,
    /// The message pattern it had to match, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
}

impl Expected {
    /// `class`, defined in `module`, expected matching `pattern`.
    pub fn new(class: &str, module: &str, pattern: Option<&str>) -> Expected {
        Expected {
            class: class.to_owned(),
            module: module.to_owned(),
            pattern: pattern.map(str::to_owned),
        }
    }

    /// The message the pattern asks for, as text (`re.escape`'s
    /// backslashes dropped); `None` without a pattern or for one that is
    /// more than an escaped string (`\d+`, `.*`).
    pub fn message(&self) -> Option<String> {
        let pattern = self.pattern.as_deref()?;
        let mut out = String::new();
        let mut chars = pattern.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some(e) if !e.is_ascii_alphanumeric() => out.push(e),
                    _ => return None,
                },
                '*' | '+' | '?' | '[' | ']' | '(' | ')' | '{' | '}' | '|' | '^' | '$' => {
                    return None
                }
                c => out.push(c),
            }
        }
        Some(out)
    }
}

impl LineSuspect {
    /// The class of the error raised on this line (`IndexError`).
    pub fn error_class(&self) -> Option<&str> {
        let error = self.error.as_deref()?;
        Some(error.split_once(':').map_or(error, |(class, _)| class))
    }

    /// The name a `NameError` raised on this line says is not defined.
    pub fn undefined_name(&self) -> Option<&str> {
        let rest = self.error.as_deref()?.strip_prefix("NameError: name '")?;
        rest.split_once('\'').map(|(name, _)| name)
    }

    /// The attribute an `AttributeError` raised on this line says a
    /// function does not have (`'function' object has no attribute
    /// 'get'`, and so for a method, a builtin, a `functools.partial` or an
    /// `lru_cache`d function): the function was used where its result was
    /// meant.
    pub fn attribute_of_function(&self) -> Option<&str> {
        let rest = self.error.as_deref()?.strip_prefix("AttributeError: '")?;
        let (kind, rest) = rest.split_once("' object has no attribute '")?;
        let callable = kind.ends_with("function")
            || kind.ends_with("method")
            || kind.ends_with("_lru_cache_wrapper")
            || kind.ends_with("partial");
        rest.split_once('\'')
            .map(|(name, _)| name)
            .filter(|_| callable)
    }
}

/// The lines each traced test ran.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Spectrum {
    /// Test id → file → lines.
    pub coverage: BTreeMap<String, BTreeMap<String, BTreeSet<u32>>>,
    /// The failing tests among them.
    pub failing: BTreeSet<String>,
    /// Per failing test, its failure's traceback through the repository's
    /// files (file, line), outermost frame first.
    pub raised: BTreeMap<String, Vec<(String, u32)>>,
    /// Per failing test, the error it raised (`Type: message`).
    pub errors: BTreeMap<String, String>,
    /// Per failing test, the exception it expected when it failed.
    pub expected: BTreeMap<String, Expected>,
    /// Per failing test, the values it found unequal (`assertEqual`,
    /// pytest's `assert a == b`), as the test wrote them: which of the
    /// two is the one expected, the tracer cannot tell.
    pub compared: BTreeMap<String, Vec<Compared>>,
}

/// Two values a failing test found unequal, each one a literal can write.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Compared {
    /// Two strings.
    Text(String, String),
    /// Two numbers, as Python spells them (`3`, `0.5`).
    Number(String, String),
}

impl Spectrum {
    /// Every line a failing test ran, scored (Ochiai), best first; ties by
    /// file and line.
    pub fn ochiai(&self) -> Vec<LineSuspect> {
        let mut counts: BTreeMap<(&str, u32), (usize, usize)> = BTreeMap::new();
        for (test, files) in &self.coverage {
            let failing = self.failing.contains(test);
            for (file, lines) in files {
                for &line in lines {
                    let c = counts.entry((file.as_str(), line)).or_default();
                    if failing {
                        c.0 += 1;
                    } else {
                        c.1 += 1;
                    }
                }
            }
        }
        let total = self
            .failing
            .iter()
            .filter(|t| self.coverage.contains_key(*t))
            .count();
        let mut out: Vec<LineSuspect> = counts
            .into_iter()
            .filter(|(_, (f, _))| *f > 0)
            .map(|((file, line), (f, p))| LineSuspect {
                file: file.to_owned(),
                line,
                score: f as f64 / ((total * (f + p)) as f64).sqrt(),
                failing: f,
                passing: p,
                raised: false,
                error: None,
                expected: None,
            })
            .collect();
        best_first(&mut out);
        out
    }
}

impl Spectrum {
    /// [`Spectrum::ochiai`] with the failing tests' tracebacks: the line
    /// where a failing test's error was raised scores at least 1, each
    /// caller outwards 0.1 less (down to 0.5), whatever else ran it;
    /// best first.
    pub fn suspects(&self) -> Vec<LineSuspect> {
        let mut out = self.ochiai();
        for (test, frames) in &self.raised {
            if !self.failing.contains(test) {
                continue;
            }
            for (k, (file, line)) in frames.iter().rev().enumerate() {
                let floor = (1.0 - 0.1 * k as f64).max(0.5);
                if let Some(l) = out.iter_mut().find(|l| l.file == *file && l.line == *line) {
                    l.score = l.score.max(floor);
                    l.raised = true;
                    if k == 0 && l.error.is_none() {
                        l.error = self.errors.get(test).cloned();
                        // Another exception than the one expected escaped
                        // from here.
                        l.expected = self
                            .expected
                            .get(test)
                            .filter(|e| l.error_class() != Some(e.class.as_str()))
                            .cloned();
                    }
                }
            }
        }
        best_first(&mut out);
        out
    }
}

impl Spectrum {
    /// The pairs of values failing tests found unequal, each once, the
    /// failing tests' order kept.
    pub fn compared(&self) -> Vec<Compared> {
        let mut out: Vec<Compared> = Vec::new();
        for (_, pairs) in self
            .compared
            .iter()
            .filter(|(t, _)| self.failing.contains(*t))
        {
            for pair in pairs {
                if !out.contains(pair) {
                    out.push(pair.clone());
                }
            }
        }
        out
    }
}

impl Spectrum {
    /// The exceptions failing tests expected and the code never raised
    /// (`ValueError not raised`, pytest's `DID NOT RAISE`), or raised with
    /// another message than the pattern asked: a raise is missing. Each
    /// once.
    pub fn unmet(&self) -> Vec<Expected> {
        let mut out: Vec<Expected> = self
            .expected
            .iter()
            .filter(|(test, _)| self.failing.contains(*test))
            .filter(|(test, _)| {
                self.errors.get(*test).is_some_and(|e| {
                    e.starts_with("AssertionError:") || e.starts_with("Failed: DID NOT RAISE")
                })
            })
            .map(|(_, e)| e.clone())
            .collect();
        out.sort();
        out.dedup();
        out
    }
}

/// Highest score first; ties by file and line.
fn best_first(lines: &mut [LineSuspect]) {
    lines.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.file.cmp(&b.file))
            .then(a.line.cmp(&b.line))
    });
}

/// At most `n` of `tests`, evenly spread over them (the first kept), so
/// that a cut list still reaches tests of every file.
fn spread(tests: &[String], n: usize) -> Vec<String> {
    if tests.len() <= n {
        return tests.to_vec();
    }
    (0..n).map(|i| tests[i * tests.len() / n].clone()).collect()
}

/// How close a passing test is to the failing ones: the length of the
/// longest id prefix it shares with one (same module, same class first).
fn closeness(test: &str, failing: &[String]) -> usize {
    failing
        .iter()
        .map(|f| {
            f.chars()
                .zip(test.chars())
                .take_while(|(a, b)| a == b)
                .count()
        })
        .max()
        .unwrap_or(0)
}

/// The share of a search's remaining wall clock a traced run may take:
/// tracing slows a suite several times, and a search that spends its
/// whole clock on localisation tries nothing.
pub const TRACE_SHARE: u32 = 3;

/// The traced run's budget: three times the oracle's (tracing slows the
/// tests down several times), and at most [`TRACE_SHARE`]'s part of
/// `time_left`, the search's remaining wall clock.
pub fn trace_budget(oracle_timeout: Duration, time_left: Option<Duration>) -> Duration {
    let own = oracle_timeout * 3;
    match time_left {
        Some(left) => own.min(left / TRACE_SHARE),
        None => own,
    }
}

/// What one test may spend in the repository's code under the tracer
/// before it is ended as hanging (`TestHung`, raised where it loops, so a
/// looping bug localises like any other failure and the run goes on):
/// a quarter of the traced run's `budget`, and at most three times the
/// oracle's per-test budget `idle` (tracing slows code down); at least a
/// second.
pub fn test_budget(budget: Duration, idle: Option<Duration>) -> Duration {
    let quarter = budget / 4;
    idle.map_or(quarter, |i| quarter.min(i * 3))
        .max(Duration::from_secs(1))
}

/// Traces the oracle's target tests and the [`MAX_PASSING`] guard tests
/// nearest them in a fork of `sandbox` (the unmodified code), within
/// `budget` ([`trace_budget`]). `Err` says why there is no spectrum (not a
/// Python stack, the run failed or ran past its budget, nothing traced);
/// the caller goes on without one.
pub async fn trace(
    sandbox: &dyn Sandbox,
    oracle: &Oracle,
    budget: Duration,
) -> Result<Spectrum, String> {
    if !matches!(oracle.stack.kind, StackKind::Pytest | StackKind::Unittest) {
        return Err(format!("no line tracer for {}", oracle.stack.name()));
    }
    if oracle.target.is_empty() {
        return Err("no failing test to localise from".to_owned());
    }
    let mut passing: Vec<&String> = oracle.guard.iter().collect();
    passing.sort_by_key(|t| std::cmp::Reverse(closeness(t, &oracle.target)));
    passing.truncate(MAX_PASSING);
    let mut selection = spread(&oracle.target, MAX_FAILING);
    selection.extend(passing.into_iter().cloned());
    let fork = sandbox.fork().await.map_err(|e| e.to_string())?;
    let traced = run_traced(&*fork, oracle, &selection, budget).await;
    if let Err(e) = fork.destroy().await {
        tracing::debug!(%e, "the tracer's fork was not destroyed cleanly");
    }
    let mut spectrum = traced?;
    if !oracle
        .target
        .iter()
        .any(|t| spectrum.coverage.contains_key(t))
    {
        return Err("the tracer saw no failing test run".to_owned());
    }
    spectrum.failing = oracle.target.iter().cloned().collect();
    Ok(spectrum)
}

async fn run_traced(
    fork: &dyn Sandbox,
    oracle: &Oracle,
    selection: &[String],
    budget: Duration,
) -> Result<Spectrum, String> {
    let write = |name: &str, text: &'static str| {
        let path = Path::new(DIR).join(name);
        async move { fork.write_file(&path, text.as_bytes()).await }
    };
    for (name, text) in [
        ("forq_trace.py", TRACER),
        ("sitecustomize.py", SITECUSTOMIZE),
        ("forq_trace_plugin.py", PYTEST_PLUGIN),
    ] {
        write(name, text).await.map_err(|e| e.to_string())?;
    }
    let command = forq_bootstrap::selection_command(&oracle.stack, selection);
    let plugin = if oracle.stack.kind == StackKind::Pytest {
        "export PYTEST_PLUGINS=forq_trace_plugin\n"
    } else {
        ""
    };
    let per_test = test_budget(budget, oracle.idle);
    let script = format!(
        "exec 2>&1\nexport PYTHONPATH=\"$PWD/{DIR}${{PYTHONPATH:+:$PYTHONPATH}}\" FORQ_TRACE_ROOT=\"$PWD\" FORQ_TRACE_OUT=\"$PWD/{DIR}/out.jsonl\" FORQ_TRACE_TEST_BUDGET={:.3} PYTHONDONTWRITEBYTECODE=1\n{plugin}{command}",
        per_test.as_secs_f64()
    );
    let mut req = ExecRequest::shell(script)
        .timeout(budget)
        .stdin(Vec::new())
        .network(Network::None);
    if let Some(idle) = oracle.idle {
        req = req.idle_timeout(idle * 5);
    }
    let out = fork.exec(req).await.map_err(|e| e.to_string())?;
    let killed = out.timed_out || out.idle_timed_out;
    let data = fork
        .read_file(&Path::new(DIR).join("out.jsonl"))
        .await
        .unwrap_or_default();
    let spectrum = Spectrum::from_records(&String::from_utf8_lossy(&data));
    if spectrum.coverage.is_empty() {
        return Err(if killed {
            format!(
                "the traced run was killed at its budget ({:.1} s) before a test ended",
                budget.as_secs_f64()
            )
        } else {
            "the tracer wrote nothing".to_owned()
        });
    }
    if killed {
        tracing::info!(
            traced = spectrum.coverage.len(),
            "the traced run was killed at its budget; localising from the tests it finished"
        );
    }
    Ok(spectrum)
}

/// One test as the tracer wrote it when the test ended.
#[derive(Deserialize)]
struct Record {
    test: String,
    cover: BTreeMap<String, BTreeSet<u32>>,
    #[serde(default)]
    raised: Option<Vec<(String, u32)>>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    expected: Option<(String, String, Option<String>)>,
    /// `[["s", a], ["s", b]]` or `[["n", a], ["n", b]]` per pair.
    #[serde(default)]
    compared: Vec<[(String, String); 2]>,
}

impl Spectrum {
    /// The tracer's records (one JSON object a line, a test each); a line
    /// cut short by a killed run is left out. `failing` is left empty.
    fn from_records(text: &str) -> Spectrum {
        let mut out = Spectrum::default();
        for r in text
            .lines()
            .filter_map(|l| serde_json::from_str::<Record>(l).ok())
        {
            if let Some(frames) = r.raised {
                out.raised.insert(r.test.clone(), frames);
            }
            if let Some(error) = r.error {
                out.errors.insert(r.test.clone(), error);
            }
            let pairs: Vec<Compared> = r
                .compared
                .into_iter()
                .filter_map(|[(k, a), (l, b)]| match (k.as_str(), l.as_str()) {
                    ("s", "s") => Some(Compared::Text(a, b)),
                    ("n", "n") => Some(Compared::Number(a, b)),
                    _ => None,
                })
                .collect();
            if !pairs.is_empty() {
                out.compared.insert(r.test.clone(), pairs);
            }
            if let Some((class, module, pattern)) = r.expected {
                let e = Expected::new(&class, &module, pattern.as_deref());
                out.expected.insert(r.test.clone(), e);
            }
            out.coverage.insert(r.test, r.cover);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(pairs: &[(&str, &[u32])]) -> BTreeMap<String, BTreeSet<u32>> {
        pairs
            .iter()
            .map(|(f, ls)| ((*f).to_owned(), ls.iter().copied().collect()))
            .collect()
    }

    #[test]
    fn a_traced_test_gets_a_quarter_of_the_run_and_three_times_its_own_budget() {
        let s = Duration::from_secs;
        assert_eq!(test_budget(s(20), None), s(5));
        assert_eq!(test_budget(s(20), Some(s(1))), s(3));
        assert_eq!(test_budget(s(20), Some(s(30))), s(5));
        assert_eq!(test_budget(Duration::from_millis(100), None), s(1));
    }

    #[test]
    fn the_traced_run_takes_a_third_of_what_is_left_at_most() {
        let oracle = Duration::from_secs(10);
        assert_eq!(trace_budget(oracle, None), Duration::from_secs(30));
        assert_eq!(
            trace_budget(oracle, Some(Duration::from_secs(60))),
            Duration::from_secs(20)
        );
        assert_eq!(
            trace_budget(oracle, Some(Duration::from_secs(600))),
            Duration::from_secs(30)
        );
    }

    #[test]
    fn ochiai_ranks_the_line_only_failing_tests_run_first() {
        let mut s = Spectrum::default();
        // Line 3 runs only in the failing test; lines 1-2 run in all.
        s.coverage
            .insert("t_fail".into(), lines(&[("m.py", &[1, 2, 3])]));
        s.coverage
            .insert("t_pass1".into(), lines(&[("m.py", &[1, 2, 4])]));
        s.coverage
            .insert("t_pass2".into(), lines(&[("m.py", &[1, 4])]));
        s.failing.insert("t_fail".into());
        let ranked = s.ochiai();
        assert_eq!((ranked[0].line, ranked[0].score), (3, 1.0));
        assert_eq!((ranked[0].failing, ranked[0].passing), (1, 0));
        // 1 / sqrt(1 * 2) for line 2, 1 / sqrt(1 * 3) for line 1; line 4
        // (no failing test runs it) is not listed.
        assert_eq!(
            ranked.iter().map(|l| l.line).collect::<Vec<_>>(),
            vec![3, 2, 1]
        );
        assert!((ranked[1].score - 1.0 / 2f64.sqrt()).abs() < 1e-12);
    }

    #[test]
    fn a_failing_tests_traceback_lifts_where_its_error_was_raised() {
        let mut s = Spectrum::default();
        // Lines 2 (raised there) and 5 (its caller) also run in a passing
        // test, so Ochiai alone puts line 9 first.
        s.coverage
            .insert("t_fail".into(), lines(&[("m.py", &[2, 5, 9])]));
        s.coverage
            .insert("t_pass".into(), lines(&[("m.py", &[2, 5])]));
        s.failing.insert("t_fail".into());
        assert_eq!(s.ochiai()[0].line, 9);
        s.raised.insert(
            "t_fail".into(),
            vec![("t.py".into(), 7), ("m.py".into(), 5), ("m.py".into(), 2)],
        );
        s.errors.insert(
            "t_fail".into(),
            "NameError: name '_width' is not defined".into(),
        );
        // A passing test's traceback (there is none that counts) is ignored.
        s.raised.insert("t_pass".into(), vec![("m.py".into(), 9)]);
        let ranked = s.suspects();
        let at = |line| ranked.iter().find(|l| l.line == line).unwrap();
        assert_eq!(
            (ranked[0].line, ranked[0].score, ranked[0].raised),
            (2, 1.0, true)
        );
        assert!((at(5).score - 0.9).abs() < 1e-12 && at(5).raised);
        assert_eq!(at(2).undefined_name(), Some("_width"));
        let mut attr = at(2).clone();
        attr.error = Some("AttributeError: 'function' object has no attribute 'get'".into());
        assert_eq!(attr.attribute_of_function(), Some("get"));
        attr.error = Some(
            "AttributeError: 'functools._lru_cache_wrapper' object has no attribute 'get'".into(),
        );
        assert_eq!(attr.attribute_of_function(), Some("get"));
        attr.error = Some("AttributeError: 'dict' object has no attribute 'get'".into());
        assert_eq!(attr.attribute_of_function(), None);
        assert_eq!(attr.undefined_name(), None);
        assert_eq!(
            at(5).error,
            None,
            "only the innermost frame holds the error"
        );
        assert!(!at(9).raised);
        // The test file's frame ran in no traced coverage: not listed.
        assert!(ranked.iter().all(|l| l.file == "m.py"));
    }

    #[test]
    fn the_tracers_records_are_read_a_test_a_line_and_a_cut_line_left_out() {
        let text = concat!(
            r#"{"test": "t1", "cover": {"m.py": [1, 2]}}"#,
            "\n",
            r#"{"test": "t2", "cover": {"m.py": [3]}, "raised": [["m.py", 3]], "error": "IndexError: x", "expected": ["E", "m", null], "compared": [[["s", "a!"], ["s", "a."]], [["n", "3"], ["n", "2.5"]], [["s", "1"], ["n", "1"]]]}"#,
            "\n",
            r#"{"test": "t3", "cover": {"m.py": [4"#,
        );
        let s = Spectrum::from_records(text);
        assert_eq!(s.coverage.len(), 2);
        assert_eq!(s.coverage["t1"]["m.py"], BTreeSet::from([1, 2]));
        assert_eq!(s.raised["t2"], [("m.py".to_owned(), 3)]);
        assert_eq!(s.errors["t2"], "IndexError: x");
        assert_eq!(s.expected["t2"], Expected::new("E", "m", None));
        assert!(s.failing.is_empty() && !s.raised.contains_key("t1"));
        // Pairs of one kind are kept; a text beside a number is not.
        assert_eq!(
            s.compared["t2"],
            [
                Compared::Text("a!".into(), "a.".into()),
                Compared::Number("3".into(), "2.5".into())
            ]
        );
        // Only failing tests' pairs count.
        let mut failing = s.clone();
        assert!(failing.compared().is_empty());
        failing.failing.insert("t2".into());
        assert_eq!(failing.compared().len(), 2);
    }

    #[test]
    fn many_failing_tests_are_traced_a_spread_of_them() {
        let tests: Vec<String> = (0..407).map(|i| format!("t{i}")).collect();
        let picked = spread(&tests, MAX_FAILING);
        assert_eq!(picked.len(), MAX_FAILING);
        assert_eq!(picked[0], "t0");
        assert_eq!(picked[1], "t20");
        assert_eq!(picked[19], "t386");
        assert_eq!(spread(&tests[..3], MAX_FAILING), tests[..3]);
    }

    #[test]
    fn passing_tests_nearest_the_failing_ones_are_traced_first() {
        let failing = vec!["tests.test_calc.CalcTest.test_add".to_owned()];
        assert!(
            closeness("tests.test_calc.CalcTest.test_mul", &failing)
                > closeness("tests.test_io.IoTest.test_read", &failing)
        );
    }
}
