//! Test runs that stop answering. Every run has a whole-run budget and, for
//! runners that print a line per test, a per-test one: no output for that
//! long means a test hangs, and the run is killed. The test in progress is
//! read from the output's last line; it becomes a failing test like any
//! other (its cause in the evidence), and where the runner can leave a test
//! out (pytest's `--deselect`) the suite runs again without it, so the
//! tests after it still count. Where it cannot (unittest), the tests that
//! finished before the hang count and the evidence says the rest did not
//! run.
//!
//! Node's own test runner keeps the per-test budget itself
//! (`--test-timeout`) and names the file it gave up on.
//!
//! A run whose process dies of a crash signal (a segmentation fault, an
//! abort) is read the same way: the test whose line was still open when
//! the crash's report came fails with the signal as its cause, and the
//! suite runs on without it where the runner allows.

use std::time::{Duration, Instant};

use forq_sandbox::{ExecOutcome, Network, Sandbox};

use crate::detect::{Stack, StackKind};
use crate::evidence::{Evidence, Outcome};

/// A hang is looked for this many times in one suite; a suite with more
/// hanging tests keeps the rest unrun.
const MAX_HANGS: usize = 5;

/// The per-test budget of runners that print each test as it starts,
/// unless told otherwise: a test silent for a minute is taken to hang.
/// Runners that build silently first (cargo, go, Maven, CMake) or print a
/// file's results only once the file is done (jest) get none: a silent
/// minute is no hang there. Node's own runner prints a file at its end
/// too, but keeps the budget itself (`--test-timeout`).
pub const DEFAULT_TEST_IDLE_S: u64 = 60;

/// Budgets of one test run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct TestLimits {
    /// The whole run: killed past it.
    pub timeout: Duration,
    /// One test: the run is killed when it prints nothing for this long
    /// and the test in progress counts as hanging. `None`: no such budget.
    pub idle: Option<Duration>,
    /// After a hang, run the suite again without the hanging tests (where
    /// the runner can leave tests out), so that the tests after them count.
    /// Off for a candidate's run: its first hang already makes it red.
    pub continue_after_hang: bool,
}

impl TestLimits {
    /// `timeout` for the whole run and `stack`'s default per-test budget;
    /// a hang is looked past.
    pub fn new(stack: &Stack, timeout: Duration) -> TestLimits {
        let idle = match node_runner(stack) {
            // Node's own runner enforces it (`--test-timeout`).
            Some(_) => Some(Duration::from_secs(DEFAULT_TEST_IDLE_S)),
            None => default_idle(stack.kind),
        };
        TestLimits {
            timeout,
            idle,
            continue_after_hang: true,
        }
    }

    /// With this per-test budget (`None`: none).
    pub fn idle(mut self, idle: Option<Duration>) -> TestLimits {
        self.idle = idle;
        self
    }

    /// Whether to run again past a hanging test.
    pub fn continue_after_hang(mut self, yes: bool) -> TestLimits {
        self.continue_after_hang = yes;
        self
    }
}

/// The per-test budget a stack gets by default: runners that print each
/// test as it starts, and start printing at once (pytest `-v`, unittest
/// `-v`).
pub fn default_idle(kind: StackKind) -> Option<Duration> {
    match kind {
        StackKind::Pytest | StackKind::Unittest => Some(Duration::from_secs(DEFAULT_TEST_IDLE_S)),
        _ => None,
    }
}

/// The `node --test` invocation a Node stack runs, when its tests are
/// node's own runner's: its command, or the package's test script (the
/// marker records it) when that is `node --test` and nothing else. Node
/// prints a file's results only once the file is done, so silence proves
/// nothing; its runner's `--test-timeout` is the per-test budget instead,
/// and a file it gives up on is failed by name (a synchronous loop holds
/// the whole file: the file is what is named).
pub(crate) fn node_runner(stack: &Stack) -> Option<String> {
    if stack.kind != StackKind::Node {
        return None;
    }
    let script = stack
        .marker
        .strip_prefix("package.json test script: ")
        .filter(|_| {
            matches!(
                stack.command.as_str(),
                "npm test" | "npx --yes pnpm test" | "npx --yes yarn test"
            )
        })
        .unwrap_or(&stack.command);
    let plain = script
        .split_whitespace()
        .all(|w| !matches!(w, "&&" | "||" | ";" | "|"));
    (script.starts_with("node --test") && plain).then(|| script.to_owned())
}

/// `invocation` (a `node --test …` command) with the per-test budget;
/// under npm (`npm test` is the stack's command), between the package's
/// `pretest` and `posttest` scripts, as `npm test` runs it (a `pretest`
/// that builds the tests must run first).
fn with_test_timeout(invocation: &str, idle: Duration, npm: bool) -> String {
    let rest = invocation.strip_prefix("node --test").unwrap_or_default();
    let run = format!(
        "printf '{}%s\\n' \"$PWD\"; node --test --test-timeout={}{rest}",
        crate::evidence::NODE_CWD,
        idle.as_millis().max(1)
    );
    match npm {
        true => {
            format!("npm run --if-present pretest && {{ {run}; }} && npm run --if-present posttest")
        }
        false => run,
    }
}

/// The test a runner was in when its output stopped: the last line names a
/// test and no outcome (pytest `-v`: `tests/test_x.py::test_y `; unittest
/// `-v`: `test_y (tests.test_x.T.test_y) ... `), or, for cargo's libtest,
/// the last test it said "has been running for over 60 seconds" that
/// never ended. `None` when the output does not say.
pub fn in_progress(kind: StackKind, output: &str) -> Option<String> {
    let text = crate::evidence::strip_ansi(output);
    if kind == StackKind::Rust {
        // Named as the cargo parser names tests: by the test binary's
        // source (`Running unittests src/lib.rs (…)`), then the name.
        let mut binary = "";
        let mut running: Vec<String> = Vec::new();
        for line in text.lines() {
            if let Some(rest) = line.trim_start().strip_prefix("Running ") {
                let source = rest.split(" (").next().unwrap_or(rest);
                binary = source.strip_prefix("unittests ").unwrap_or(source).trim();
            } else if let Some(name) = line
                .strip_prefix("test ")
                .and_then(|l| l.strip_suffix(" has been running for over 60 seconds"))
            {
                running.push(format!("{binary}::{}", name.trim()));
            } else if let Some((name, _)) = line
                .strip_prefix("test ")
                .and_then(|l| l.split_once(" ... "))
            {
                let id = format!("{binary}::{}", name.trim());
                running.retain(|r| *r != id);
            }
        }
        return running.pop();
    }
    if kind == StackKind::Go {
        // `=== RUN   Name` with no `--- PASS|FAIL|SKIP: Name` after it,
        // in the package whose `FAIL`/`ok` line follows.
        let mut running: Option<(&str, usize)> = None;
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let trimmed = line.trim_start();
            if let Some(name) = trimmed.strip_prefix("=== RUN") {
                running = Some((name.trim(), i));
            } else if let Some(rest) = trimmed.strip_prefix("--- ") {
                let name = rest
                    .split_once(": ")
                    .map(|(_, r)| r.split(" (").next().unwrap_or(r));
                if running.is_some_and(|(r, _)| Some(r) == name.map(str::trim)) {
                    running = None;
                }
            }
        }
        let (name, at) = running?;
        let package = lines[at..].iter().find_map(|l| {
            let mut words = l.split_whitespace();
            match (words.next(), words.next()) {
                (Some("FAIL" | "ok"), Some(p)) => Some(p),
                _ => None,
            }
        });
        return Some(match package {
            Some(p) => format!("{p}::{name}"),
            None => name.to_owned(),
        });
    }
    let last = text.lines().rev().find(|l| !l.trim().is_empty())?;
    match kind {
        StackKind::Pytest => {
            let id = last.trim();
            (id.contains("::") && !id.contains(char::is_whitespace)).then(|| id.to_owned())
        }
        StackKind::Unittest => {
            // The line as it will read once the test ends, parsed as such.
            let line = last.trim_end();
            if !line.ends_with(" ...") {
                return None;
            }
            // The name stands above when a docstring's line replaces it;
            // a finished test's line above is another test.
            let above = text
                .lines()
                .rev()
                .filter(|l| !l.trim().is_empty())
                .nth(1)
                .filter(|l| !l.contains(" ... "))
                .unwrap_or("");
            let done = format!("{above}\n{line} ok\n\nRan 1 test in 0.0s\n\nOK\n");
            let ev = crate::evidence::unittest(&done)?;
            ev.tests.into_keys().next()
        }
        _ => None,
    }
}

/// The crash signal a run died of: the process's own, or the shell's
/// `128 + signal` exit code. Only the signals of a crash (illegal
/// instruction, abort, bus error, arithmetic fault, segmentation fault):
/// a kill is not a crash.
fn crash_signal(out: &ExecOutcome) -> Option<i32> {
    let signal = out.signal.or_else(|| {
        out.exit_code
            .filter(|c| (129..160).contains(c))
            .map(|c| c - 128)
    })?;
    matches!(signal, 4 | 6 | 7 | 8 | 11).then_some(signal)
}

fn signal_name(signal: i32) -> String {
    let name = match signal {
        4 => "SIGILL",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        11 => "SIGSEGV",
        _ => return format!("signal {signal}"),
    };
    format!("{name}, signal {signal}")
}

/// The test a runner was in when its process crashed: the last test line
/// without an outcome. The crash's report follows it, often on the same
/// line (the test's line never got its outcome or its newline:
/// `test_x (m.T.test_x) ... Segmentation fault`). `None` when the last
/// test line has an outcome (the crash came between tests) or the runner
/// does not print a line per test.
fn crashed_in(kind: StackKind, output: &str) -> Option<String> {
    let text = crate::evidence::strip_ansi(output);
    let lines: Vec<&str> = text.lines().collect();
    for end in (0..lines.len()).rev() {
        let line = lines[end];
        let (open, rest) = match kind {
            StackKind::Unittest => match line.find(" ... ") {
                Some(i) => (&line[..i + 4], line[i + 5..].trim()),
                None if line.trim_end().ends_with(" ...") => (line.trim_end(), ""),
                None => continue,
            },
            StackKind::Pytest => {
                let first = line.split_whitespace().next().unwrap_or("");
                if !first.contains("::") || first.starts_with("FAILED") {
                    continue;
                }
                (first, line.trim_start()[first.len()..].trim())
            }
            _ => return None,
        };
        let outcome = rest.split_whitespace().next().is_some_and(|w| {
            matches!(
                w,
                "ok" | "FAIL"
                    | "ERROR"
                    | "skipped"
                    | "expected"
                    | "unexpected"
                    | "PASSED"
                    | "FAILED"
                    | "SKIPPED"
                    | "XFAIL"
                    | "XPASS"
            )
        });
        if outcome {
            return None;
        }
        let before = lines[..end].join("\n");
        return in_progress(kind, &format!("{before}\n{open}"));
    }
    None
}

/// The line in which a runner says its own clock ran out (go test's
/// `-timeout`: `panic: test timed out after 10m0s`), if it did.
fn runner_timeout(kind: StackKind, output: &str) -> Option<String> {
    match kind {
        StackKind::Go => output
            .lines()
            .find(|l| l.starts_with("panic: test timed out after"))
            .map(|l| l.trim_start_matches("panic: ").to_owned()),
        _ => None,
    }
}

/// The arguments that leave `tests` out of a run, where the runner has
/// them.
fn deselect(kind: StackKind, command: &str, tests: &[String]) -> Option<String> {
    match kind {
        // libtest's own flags, after cargo's `--`; `--exact` so a name
        // skips itself and not every test it is a prefix of.
        StackKind::Rust => {
            // libtest knows the name without the binary's source.
            let skips: String = tests
                .iter()
                .map(|t| t.split_once(".rs::").map_or(t.as_str(), |(_, name)| name))
                .map(|name| format!(" --skip {}", crate::runner::quote(name)))
                .collect();
            let dashes = if command.contains(" -- ") { "" } else { " --" };
            Some(format!("{dashes}{skips} --exact"))
        }
        StackKind::Pytest => Some(
            tests
                .iter()
                .map(|t| format!(" --deselect {}", crate::runner::quote(t)))
                .collect(),
        ),
        _ => None,
    }
}

/// What the tests of a killed run showed: the per-test lines written before
/// the kill (a runner's summary never came), counted.
fn partial(stack: &Stack, output: &str) -> Option<Evidence> {
    // pytest, unittest and cargo read per-test lines only once they see
    // their summary: one that adds nothing stands in for it.
    let text = match stack.kind {
        StackKind::Pytest => format!("{output}\n{NO_PYTEST_RESULT}\n"),
        StackKind::Unittest => format!("{output}\n\nRan 0 tests in 0.000s\n\nOK\n"),
        StackKind::Rust => format!("{output}\n{NO_RESULT}\n"),
        _ => output.to_owned(),
    };
    let mut ev = stack.parse(&text)?;
    if !ev.tests.is_empty() {
        recount(&mut ev);
    }
    ev.lines.retain(|l| {
        !l.starts_with("Ran 0 tests")
            && l != "OK"
            && !NO_RESULT.starts_with(l.as_str())
            && l != NO_PYTEST_RESULT
    });
    Some(ev)
}

/// A pytest summary that counts nothing.
const NO_PYTEST_RESULT: &str = "=== no tests ran in 0.00s ===";

/// A libtest summary that counts nothing.
const NO_RESULT: &str =
    "test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s";

/// Counts from the per-test outcomes.
pub(crate) fn recount(ev: &mut Evidence) {
    let outcomes: Vec<Outcome> = ev.tests.values().copied().collect();
    ev.passed = 0;
    ev.failed = 0;
    ev.skipped = 0;
    ev.errors = 0;
    for o in outcomes {
        ev.tally(o);
    }
}

/// One suite's run, past its hangs.
#[derive(Debug)]
pub(crate) struct Suite {
    /// The last run's outcome.
    pub(crate) out: ExecOutcome,
    /// The last run's command.
    pub(crate) command: String,
    /// Its output (stdout and stderr joined).
    pub(crate) text: String,
    /// The tests' results over every run, hanging tests failed.
    pub(crate) evidence: Option<Evidence>,
    /// Tests that hung, in the order found.
    pub(crate) hung: Vec<String>,
    /// Tests whose process crashed (a signal), in the order found.
    pub(crate) crashed: Vec<String>,
    /// A run was killed and no test could be named for it.
    pub(crate) timed_out: bool,
    /// Every run, end to end.
    pub(crate) duration_ms: u64,
    /// Time the tests ran while answering: the runs, less the silence that
    /// ended each killed one.
    pub(crate) active_ms: u64,
}

/// Runs `command` (a stack's test command, or a selection of it) under
/// `limits`, past hangs as described in the module's docs.
pub(crate) async fn run_suite(
    sandbox: &dyn Sandbox,
    stack: &Stack,
    command: &str,
    limits: &TestLimits,
    network: Option<Network>,
) -> Result<Suite, forq_sandbox::Error> {
    let started = Instant::now();
    let mut hung: Vec<String> = Vec::new();
    let mut causes: Vec<String> = Vec::new();
    let mut merged: Option<Evidence> = None;
    let mut active_ms = 0;
    // Node's runner keeps the per-test budget itself, and goes on past a
    // file it gave up on.
    let node = node_runner(stack)
        .filter(|_| command == stack.command)
        .zip(limits.idle);
    loop {
        let run_command = match (&node, hung.is_empty(), deselect(stack.kind, command, &hung)) {
            (Some((invocation, idle)), _, _) => {
                with_test_timeout(invocation, *idle, stack.command == "npm test")
            }
            (None, true, _) | (None, false, None) => command.to_owned(),
            (None, false, Some(args)) => format!("{command}{args}"),
        };
        // Where the runner has one, its verdicts come through its report.
        let report = crate::report::Report::wrap(stack.kind, &run_command);
        let exec_command = report.as_ref().map_or(run_command.as_str(), |(_, c)| c);
        let out = sandbox
            .exec(test_request(exec_command, limits, network, node.is_none()))
            .await?;
        let text = format!("{}{}", out.stdout_text(), out.stderr_text());
        // Killed here, or by the runner's own clock (go test's -timeout),
        // or dead of a crash.
        let own = runner_timeout(stack.kind, &text);
        let crash = crash_signal(&out).filter(|_| !out.timed_out && !out.idle_timed_out);
        let killed = out.timed_out || out.idle_timed_out || own.is_some() || crash.is_some();
        let cause = kill_cause(own.as_deref(), crash, out.idle_timed_out, limits);
        let silence = match (out.idle_timed_out, limits.idle) {
            (true, Some(idle)) => idle.as_millis() as u64,
            _ => 0,
        };
        active_ms += out.duration_ms.saturating_sub(silence);
        let printed = || match killed {
            true => partial(stack, &text),
            false => stack.parse(&text),
        };
        let ev = match &report {
            Some((report, _)) => match report.collect(sandbox).await? {
                Some(mut ev) => {
                    crate::report::check_exit(&mut ev, &out, killed);
                    // The runner's own summary stays, for people.
                    if let Some(said) = printed() {
                        ev.lines.splice(0..0, said.lines);
                    }
                    ev.runner = stack.name().to_owned();
                    Some(ev)
                }
                None => printed().map(|ev| crate::report::unreported(ev, &out, killed)),
            },
            None => printed(),
        };
        merged = merge(merged, ev);
        if let Some((_, idle)) = &node {
            for test in crate::evidence::node_timeouts(&text) {
                if !hung.contains(&test) {
                    // The runner waited out the budget on it: not the
                    // tests' time.
                    active_ms = active_ms.saturating_sub(idle.as_millis() as u64);
                    hung.push(test);
                    causes.push(format!(
                        "hung (past node's per-test budget of {:.1} s); killed by node",
                        idle.as_secs_f64()
                    ));
                }
            }
        }
        let current = match crash {
            Some(_) => crashed_in(stack.kind, &text),
            None => killed.then(|| in_progress(stack.kind, &text)).flatten(),
        };
        let again = match &current {
            Some(test) if !hung.contains(test) => {
                hung.push(test.clone());
                causes.push(cause);
                limits.continue_after_hang
                    && hung.len() < MAX_HANGS
                    && deselect(stack.kind, command, &hung).is_some()
            }
            _ => false,
        };
        if !again {
            // A run killed before the runner summed anything still shows
            // the test that hung.
            let merged = merged.or_else(|| (!hung.is_empty()).then(|| Evidence::new(stack.name())));
            let evidence = merged.map(|mut ev| {
                mark_hung(&mut ev, &hung, &causes, killed && current.is_some());
                ev
            });
            let (crashed, hung): (Vec<_>, Vec<_>) = hung
                .into_iter()
                .zip(causes)
                .partition(|(_, cause): &(String, String)| cause.starts_with("crashed"));
            return Ok(Suite {
                timed_out: killed && current.is_none() && crash.is_none(),
                out,
                command: run_command,
                text,
                evidence,
                hung: hung.into_iter().map(|(t, _)| t).collect(),
                crashed: crashed.into_iter().map(|(t, _)| t).collect(),
                duration_ms: started.elapsed().as_millis() as u64,
                active_ms,
            });
        }
    }
}

/// One run of the tests: capped output, the run's network, and the idle
/// budget unless the runner keeps its own per test.
fn test_request(
    command: &str,
    limits: &TestLimits,
    network: Option<Network>,
    idle_here: bool,
) -> forq_sandbox::ExecRequest {
    let mut req =
        crate::runner::shell(command, limits.timeout).output_cap(crate::runner::TEST_OUTPUT_CAP);
    if let Some(network) = network {
        req = req.network(network);
    }
    if let Some(idle) = limits.idle.filter(|_| idle_here) {
        req = req.idle_timeout(idle);
    }
    req
}

/// Why a killed run's current test is failed: a crash's signal, the
/// runner's own timeout line, the silence, or the whole run's clock.
fn kill_cause(
    own: Option<&str>,
    crash: Option<i32>,
    idle_timed_out: bool,
    limits: &TestLimits,
) -> String {
    match (own, crash, limits.idle) {
        (_, Some(signal), _) => format!("crashed ({})", signal_name(signal)),
        (Some(line), _, _) => format!("hung (the runner's own timeout: {line}); killed"),
        (None, None, Some(idle)) if idle_timed_out => {
            format!("hung (no output for {:.1} s); killed", idle.as_secs_f64())
        }
        (None, None, _) => format!(
            "hung (past the run's {} s); killed",
            limits.timeout.as_secs()
        ),
    }
}

/// `next`'s results over `sofar`'s: a later run's outcome of a test wins.
fn merge(sofar: Option<Evidence>, next: Option<Evidence>) -> Option<Evidence> {
    match (sofar, next) {
        (None, next) => next,
        (sofar, None) => sofar,
        (Some(mut a), Some(b)) => {
            a.tests.extend(b.tests);
            a.structured &= b.structured;
            a.disagreement = b.disagreement;
            a.collection_errors = a.collection_errors.max(b.collection_errors);
            a.lines = b.lines;
            if a.tests.is_empty() {
                a.passed = b.passed;
                a.failed = b.failed;
                a.skipped = b.skipped;
                a.errors = b.errors;
            } else {
                recount(&mut a);
            }
            Some(a)
        }
    }
}

/// Tests that hung or crashed, failed, each with its cause in the
/// evidence's lines.
fn mark_hung(ev: &mut Evidence, hung: &[String], causes: &[String], rest_unrun: bool) {
    if hung.is_empty() {
        return;
    }
    for test in hung {
        ev.tests.insert(test.clone(), Outcome::Failed);
    }
    recount(ev);
    for (test, cause) in hung.iter().zip(causes) {
        ev.lines.push(format!("{test}: {cause}"));
    }
    if rest_unrun {
        ev.lines
            .push("the tests after it did not run (the runner cannot leave a test out)".to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gates_default_budget_reaches_nodes_own_runner() {
        // `npm test` running `node --test`: the gate's limits, left at
        // their default, carry node's per-test budget (else a synchronous
        // loop holds the run for the gate's whole timeout).
        let stack = Stack {
            kind: StackKind::Node,
            marker: "package.json test script: node --test".to_owned(),
            ..Stack::custom("node", Vec::new(), "npm test")
        };
        let gate = crate::GateOptions::default();
        let want = Some(Duration::from_secs(DEFAULT_TEST_IDLE_S));
        assert_eq!(gate.test_limits(&stack).idle, want);
        // Told otherwise, it is what it was told; zero is none.
        let two = Some(Duration::from_secs(2));
        assert_eq!(gate.clone().test_idle(two).test_limits(&stack).idle, two);
        let none = gate.test_idle(Some(Duration::ZERO)).test_limits(&stack);
        assert_eq!(none.idle, None);
        // A runner that prints a file at its end (jest) gets none.
        let jest = Stack {
            marker: "package.json test script: jest".to_owned(),
            ..stack
        };
        assert_eq!(crate::GateOptions::default().test_limits(&jest).idle, None);
    }

    #[test]
    fn a_crashed_test_is_the_one_whose_line_the_crash_report_cut() {
        // unittest: the shell's report lands on the test's open line.
        let unittest = "test_a (tests.test_a.A.test_a) ... ok\ntest_crash (tests.test_b.B.test_crash) ... Segmentation fault\n";
        assert_eq!(
            crashed_in(StackKind::Unittest, unittest).as_deref(),
            Some("tests.test_b.B.test_crash")
        );
        // pytest: faulthandler's dump follows the id on its line.
        let pytest = "tests/test_a.py::test_a PASSED [ 50%]\ntests/test_b.py::test_crash Fatal Python error: Segmentation fault\n\nCurrent thread 0x00007f (most recent call first):\n  File \"/w/tests/test_b.py\", line 4 in test_crash\n  File \"/usr/lib/python3/site-packages/_pytest/python.py\", line 159 in pytest_pyfunc_call\nSegmentation fault\n";
        assert_eq!(
            crashed_in(StackKind::Pytest, pytest).as_deref(),
            Some("tests/test_b.py::test_crash")
        );
        // A crash after the last test ended names nobody.
        let between = "test_a (tests.test_a.A.test_a) ... ok\nSegmentation fault\n";
        assert_eq!(crashed_in(StackKind::Unittest, between), None);
        let between = "tests/test_a.py::test_a PASSED [100%]\nAborted\n";
        assert_eq!(crashed_in(StackKind::Pytest, between), None);
    }

    #[test]
    fn only_crash_signals_are_crashes() {
        let out = |exit_code: Option<i32>, signal: Option<i32>| {
            let mut out = ExecOutcome::default();
            (out.exit_code, out.signal) = (exit_code, signal);
            out
        };
        assert_eq!(crash_signal(&out(Some(139), None)), Some(11));
        assert_eq!(crash_signal(&out(None, Some(6))), Some(6));
        assert_eq!(crash_signal(&out(Some(137), None)), None, "a kill");
        assert_eq!(crash_signal(&out(Some(1), None)), None);
        assert_eq!(signal_name(11), "SIGSEGV, signal 11");
    }

    #[test]
    fn the_test_in_progress_is_read_from_the_last_line() {
        let pytest = "collected 3 items\n\ntests/test_a.py::test_one PASSED [ 33%]\ntests/test_a.py::test_loop ";
        assert_eq!(
            in_progress(StackKind::Pytest, pytest).as_deref(),
            Some("tests/test_a.py::test_loop")
        );
        // The finished test above sorts first: it must not be taken.
        let unittest =
            "test_a (tests.test_a.A.test_a) ... ok\ntest_loop (tests.test_a.A.test_loop) ... ";
        assert_eq!(
            in_progress(StackKind::Unittest, unittest).as_deref(),
            Some("tests.test_a.A.test_loop")
        );
        // A docstring's first line stands in for the name; the name is above.
        let doc = "test_loop (tests.test_a.A.test_loop)\nLoops forever ... ";
        assert_eq!(
            in_progress(StackKind::Unittest, doc).as_deref(),
            Some("tests.test_a.A.test_loop")
        );
        // A finished line, or a runner without per-test lines, names none.
        assert_eq!(
            in_progress(StackKind::Unittest, "test_one (a.A.test_one) ... ok"),
            None
        );
        assert_eq!(in_progress(StackKind::Node, "TAP version 13"), None);
        // cargo, captured: libtest names a test running past a minute.
        let cargo = include_str!("../tests/fixtures/output/cargo_hang.txt");
        assert_eq!(
            in_progress(StackKind::Rust, cargo).as_deref(),
            Some("src/lib.rs::tests::counts_digits")
        );
        let ended = format!("{cargo}\ntest tests::counts_digits ... ok\n");
        assert_eq!(in_progress(StackKind::Rust, &ended), None);
    }

    #[test]
    fn go_tests_own_timeout_names_the_test_that_was_running() {
        let go = include_str!("../tests/fixtures/output/go_hang.txt");
        assert_eq!(
            runner_timeout(StackKind::Go, go).as_deref(),
            Some("test timed out after 3s")
        );
        assert_eq!(
            in_progress(StackKind::Go, go).as_deref(),
            Some("example.com/digits::TestDigits")
        );
        assert_eq!(runner_timeout(StackKind::Go, "ok  \tm\t0.1s"), None);
        // A test that ended is not running.
        let done = "=== RUN   TestA\n--- PASS: TestA (0.00s)\nok  \tm\t0.1s\n";
        assert_eq!(in_progress(StackKind::Go, done), None);
    }

    #[test]
    fn a_hanging_cargo_test_is_skipped_by_name_and_what_finished_counts() {
        let stack = Stack {
            kind: StackKind::Rust,
            ..Stack::custom("cargo", Vec::new(), "cargo test")
        };
        let hung = ["src/lib.rs::tests::counts_digits".to_owned()];
        assert_eq!(
            deselect(stack.kind, "cargo test", &hung).as_deref(),
            Some(" -- --skip tests::counts_digits --exact")
        );
        assert_eq!(
            deselect(stack.kind, "cargo test -- --test-threads 1", &hung).as_deref(),
            Some(" --skip tests::counts_digits --exact")
        );
        let ev = partial(
            &stack,
            include_str!("../tests/fixtures/output/cargo_hang.txt"),
        )
        .unwrap();
        assert_eq!((ev.passed, ev.failed), (1, 0));
        assert_eq!(ev.tests["src/lib.rs::tests::adds"], Outcome::Passed);
        assert!(
            ev.lines.iter().all(|l| !l.contains("0 measured")),
            "{:?}",
            ev.lines
        );
    }

    #[test]
    fn what_a_killed_pytest_run_reported_before_it_hung_counts() {
        // pytest sums up only at the end: a run killed mid-way has no
        // summary, and the tests it had reported must not be lost.
        let stack = Stack {
            kind: StackKind::Pytest,
            ..Stack::custom("pytest", Vec::new(), "python -m pytest -v")
        };
        let text = "collecting ... collected 3 items\n\ntests/test_cli.py::T::test_one FAILED [ 33%]\ntests/test_a.py::test_ok PASSED [ 66%]\ntests/test_a.py::test_slow ";
        let ev = partial(&stack, text).unwrap();
        assert_eq!((ev.passed, ev.failed), (1, 1));
        assert_eq!(ev.tests["tests/test_cli.py::T::test_one"], Outcome::Failed);
        assert_eq!(
            in_progress(stack.kind, text).as_deref(),
            Some("tests/test_a.py::test_slow")
        );
        assert!(
            ev.lines.iter().all(|l| !l.contains("no tests ran")),
            "{:?}",
            ev.lines
        );
    }

    #[test]
    fn a_hanging_test_is_failed_with_its_cause_and_the_counts_follow() {
        let stack = Stack::custom("unittest", Vec::new(), "python3 -m unittest -v");
        let stack = Stack {
            kind: StackKind::Unittest,
            ..stack
        };
        let text =
            "test_one (tests.test_a.A.test_one) ... ok\ntest_loop (tests.test_a.A.test_loop) ... ";
        let mut ev = partial(&stack, text).unwrap();
        assert_eq!((ev.passed, ev.failed), (1, 0));
        mark_hung(
            &mut ev,
            &["tests.test_a.A.test_loop".to_owned()],
            &["hung (no output for 60.0 s); killed".to_owned()],
            true,
        );
        assert_eq!((ev.passed, ev.failed, ev.executed()), (1, 1, 2));
        assert_eq!(ev.tests["tests.test_a.A.test_loop"], Outcome::Failed);
        assert!(
            ev.lines
                .iter()
                .any(|l| l.contains("hung (no output for 60.0 s)")),
            "{:?}",
            ev.lines
        );
        assert!(
            ev.lines.iter().any(|l| l.contains("did not run")),
            "{:?}",
            ev.lines
        );
    }
}
