//! The gate's runner for callers that keep the sandbox: [`provision`] makes
//! a warm sandbox (the stack's install steps done), [`run_tests`] runs the
//! stack's test command in it — whole or a selection — and reads the output
//! with the stack's parser into per-test results. The coding agent's
//! `run_tests` tool and the fix search's oracle both run tests this way.

use std::path::Path;
use std::time::Duration;

use forq_sandbox::{Backend, ExecOutcome, ExecRequest, Network, Sandbox, SandboxSpec};
use serde::Serialize;

use crate::detect::{Stack, StackKind};
use crate::evidence::Evidence;
use crate::gate::{GateError, GateOptions, Record};
use crate::hang::TestLimits;

/// Output kept of a test run: room for one line per test of a large suite
/// (the head and tail of anything longer are kept).
pub(crate) const TEST_OUTPUT_CAP: usize = 64 << 20;

/// A shell request as the gate runs commands: stderr joined to stdout in
/// the order written (runners put headings on one and results on the
/// other), stdin empty, no bytecode written into the tree.
pub(crate) fn shell(script: &str, timeout: Duration) -> ExecRequest {
    ExecRequest::shell(format!("exec 2>&1\n{script}"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        // Each test's line as it is written: a buffered runner would look
        // silent to the per-test budget (crate::hang).
        .env("PYTHONUNBUFFERED", "1")
        .timeout(timeout)
        .stdin(Vec::new())
}

/// The sandbox a stack runs in: `CI=true`, `NO_COLOR=1`. Where the backend
/// lets each exec choose its network, installs get the egress proxy and
/// tests none; elsewhere (a remote docker engine) a container with install
/// steps has the install network for its whole life.
pub(crate) fn spec(
    backend: &dyn Backend,
    repo: &Path,
    stack: &Stack,
    options: &GateOptions,
) -> SandboxSpec {
    let mut spec = SandboxSpec::new(repo)
        .env("CI", "true")
        .env("NO_COLOR", "1")
        .limits(options.limits);
    for (k, v) in &options.env {
        spec = spec.env(k, v);
    }
    if let Some(image) = &options.image {
        spec = spec.image(image.clone());
    }
    let mut egress = forq_sandbox::EgressAllow::new(
        stack
            .kind
            .ecosystems()
            .iter()
            .flat_map(|e| forq_sandbox::registries(e).iter().copied()),
    );
    egress.extend(options.egress_allow.iter().cloned());
    let spec = spec.egress(egress);
    if backend.per_exec_network() {
        spec
    } else if !stack.install.is_empty() {
        spec.network(options.install_network)
    } else {
        spec.network(options.test_network)
    }
}

/// A sandbox over `repo` with `stack`'s install steps done (through the
/// egress proxy by default, each capped at `options.install_timeout`, in `options.image` on
/// docker): the warm root that the agent works in and the search forks.
/// The caller destroys it.
pub async fn provision(
    backend: &dyn Backend,
    repo: &Path,
    stack: &Stack,
    options: &GateOptions,
) -> Result<Box<dyn Sandbox>, GateError> {
    Ok(provision_warm(backend, repo, stack, options).await?.sandbox)
}

/// A warm sandbox and where it came from.
#[derive(Debug)]
#[non_exhaustive]
pub struct Warm {
    /// The sandbox, install steps done.
    pub sandbox: Box<dyn Sandbox>,
    /// The golden it was forked from (or built as), when
    /// [`GateOptions::golden`] applied.
    pub golden: Option<crate::GoldenUse>,
}

/// [`provision`], saying which golden the sandbox came from: with
/// [`GateOptions::golden`], the repository's matching golden is forked
/// (built first when asked) instead of running the install steps.
pub async fn provision_warm(
    backend: &dyn Backend,
    repo: &Path,
    stack: &Stack,
    options: &GateOptions,
) -> Result<Warm, GateError> {
    if let Some(golden) = &options.golden {
        if let Some((sandbox, used)) =
            crate::golden::warm_from_golden(backend, repo, stack, options, golden).await?
        {
            return Ok(Warm {
                sandbox,
                golden: Some(used),
            });
        }
    }
    let install_timeout = options.install_timeout;
    let sandbox_error = |source| GateError::Sandbox {
        stack: stack.name().to_owned(),
        source,
    };
    let sandbox = backend
        .create(&spec(backend, repo, stack, options))
        .await
        .map_err(sandbox_error)?;
    for command in &stack.install {
        let mut req = shell(command, install_timeout);
        if backend.per_exec_network() {
            req = req.network(options.install_network);
        }
        let out = match sandbox.exec(req).await {
            Ok(out) => out,
            Err(e) => {
                let _ = sandbox.destroy().await;
                return Err(sandbox_error(e));
            }
        };
        if let Some(reason) = install_failure(&out, install_timeout) {
            let _ = sandbox.destroy().await;
            return Err(GateError::Install {
                stack: stack.name().to_owned(),
                command: command.clone(),
                reason,
            });
        }
    }
    Ok(Warm {
        sandbox,
        golden: None,
    })
}

/// Why an install step failed (`timed out after N s`, `exited N: the
/// output's telling line`), or `None` when it succeeded.
pub(crate) fn install_failure(out: &ExecOutcome, timeout: Duration) -> Option<String> {
    if out.timed_out {
        return Some(format!("timed out after {} s", timeout.as_secs()));
    }
    if out.success() {
        return None;
    }
    let text = format!("{}\n{}", out.stdout_text(), out.stderr_text());
    let reason = crate::gate::with_cause(format!("exited {}", out.shell_code()), &text);
    // A step that could not even start says so in its last line, or in
    // nothing at all: either is the cause.
    if matches!(out.shell_code(), 126 | 127) && !reason.contains(": ") {
        let last = text.lines().rev().find(|l| !l.trim().is_empty());
        return Some(match last {
            Some(line) => format!("{reason}: {}", line.trim()),
            None => format!("{reason} with no output"),
        });
    }
    Some(reason)
}

/// What a test run showed.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct TestRun {
    /// The command run.
    pub command: String,
    /// Its exit code (124 when it timed out).
    pub exit_code: i32,
    /// Whether it hit the timeout.
    pub timed_out: bool,
    /// What the stack's parser read, or `None` when the output shows no
    /// test run.
    pub evidence: Option<Evidence>,
    /// The last 40 lines of the output.
    pub tail: String,
    /// How long it took (every run, when a hang made the suite run again).
    pub duration_ms: u64,
    /// Tests that hung (silent past the per-test budget), failed in the
    /// evidence with the cause in its lines.
    pub hung: Vec<String>,
    /// Tests whose process died of a crash signal while they ran, failed
    /// in the evidence with the signal in its lines.
    pub crashed: Vec<String>,
    /// Time the tests ran while answering: `duration_ms` less the silence
    /// that ended each killed run. What a candidate's budget is made from.
    pub active_ms: u64,
}

impl TestRun {
    /// Whether the test `id` (see [`same_test`]) ran and passed.
    ///
    /// A test file node's runner gave up on (see [`crate::TestLimits`]) is
    /// named by its path until it runs to its end, when only its tests are
    /// named: it passed when the run ended on its own with every test
    /// passing and the file no longer named failing.
    pub fn passed(&self, id: &str) -> bool {
        let Some(ev) = &self.evidence else {
            return false;
        };
        if ev
            .tests
            .iter()
            .any(|(t, o)| same_test(t, id) && *o == crate::Outcome::Passed)
        {
            return true;
        }
        let js_file = [".js", ".mjs", ".cjs", ".ts", ".mts"]
            .iter()
            .any(|ext| id.ends_with(ext));
        ev.runner == "node"
            && js_file
            && !self.timed_out
            && self.hung.is_empty()
            && ev.failed + ev.errors == 0
            && ev.executed() > 0
            && !ev.tests.keys().any(|t| same_test(t, id))
    }
}

/// Whether a parser's test id names `wanted`: equal, or `wanted` is a
/// suffix on a `::`, `.`, `/` or space boundary (`test_calc.py::test_add`
/// names `tests/test_calc.py::test_add`; `test_add` names both). A pytest
/// node id and a unittest id name the same test when their dotted forms
/// do (`tests/test_m.py::C::test_x` and `tests.test_m.C.test_x`), so a
/// test can be named either way whichever runner the stack uses.
pub fn same_test(id: &str, wanted: &str) -> bool {
    fn suffix(id: &str, wanted: &str) -> bool {
        id == wanted
            || id.strip_suffix(wanted).is_some_and(|head| {
                head.ends_with("::")
                    || head.ends_with('.')
                    || head.ends_with('/')
                    || head.ends_with(' ')
            })
    }
    fn dotted(id: &str) -> Option<String> {
        let (file, rest) = id.split_once(".py::")?;
        Some(format!(
            "{}.{}",
            file.replace('/', "."),
            rest.replace("::", ".")
        ))
    }
    if suffix(id, wanted) {
        return true;
    }
    match (dotted(id), dotted(wanted)) {
        (None, None) => false,
        (a, b) => suffix(a.as_deref().unwrap_or(id), b.as_deref().unwrap_or(wanted)),
    }
}

/// The command that runs `selection` (test ids) with `stack`'s runner: the
/// ids appended for runners that take them (pytest, unittest, node's file
/// arguments), a filter for cargo and go; the whole suite otherwise.
pub fn selection_command(stack: &Stack, selection: &[String]) -> String {
    if selection.is_empty() {
        return stack.command.clone();
    }
    let quoted: Vec<String> = selection.iter().map(|s| quote(s)).collect();
    match stack.kind {
        StackKind::Pytest | StackKind::Unittest | StackKind::Custom => {
            format!("{} {}", stack.command, quoted.join(" "))
        }
        StackKind::Go => {
            let names: Vec<&str> = selection
                .iter()
                .map(|s| s.rsplit("::").next().unwrap_or(s))
                .collect();
            format!(
                "{} -run {}",
                stack.command,
                quote(&format!("^({})$", names.join("|")))
            )
        }
        StackKind::Rust if selection.len() == 1 => {
            let name = selection[0].rsplit("::").next().unwrap_or(&selection[0]);
            format!("{} {}", stack.command, quote(name))
        }
        _ => stack.command.clone(),
    }
}

/// `s` as one shell word: bare when it holds nothing the shell reads,
/// else in single quotes. Every command forq writes for a shell quotes
/// through here. (Not `shlex`: its quoting picks double quotes with
/// escapes, which read worse in the commands and recipes people see.)
pub(crate) fn quote(s: &str) -> String {
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c))
    {
        return s.to_owned();
    }
    single_quoted(s)
}

/// `s` in single quotes, always (a recipe's paths read the same whatever
/// they hold).
pub(crate) fn single_quoted(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Runs `stack`'s tests (or `selection` of them, see [`selection_command`])
/// in `sandbox` without the network where the backend allows, and parses
/// the output: `timeout` for the whole run, the stack's default per-test
/// budget ([`TestLimits::new`]) for each test.
pub async fn run_tests(
    sandbox: &dyn Sandbox,
    stack: &Stack,
    selection: &[String],
    timeout: Duration,
) -> Result<TestRun, forq_sandbox::Error> {
    run_tests_within(sandbox, stack, selection, &TestLimits::new(stack, timeout)).await
}

/// [`run_tests`] under `limits`: a test silent past the per-test budget is
/// killed and reported as hanging ([`TestRun::hung`]), and the suite runs
/// again without it where the runner allows (see [`crate::in_progress`]).
pub async fn run_tests_within(
    sandbox: &dyn Sandbox,
    stack: &Stack,
    selection: &[String],
    limits: &TestLimits,
) -> Result<TestRun, forq_sandbox::Error> {
    let command = selection_command(stack, selection);
    let suite =
        crate::hang::run_suite(sandbox, stack, &command, limits, Some(Network::None)).await?;
    let lines: Vec<&str> = suite.text.lines().collect();
    let tail = lines[lines.len().saturating_sub(40)..].join("\n");
    let killed = suite.out.timed_out || suite.out.idle_timed_out;
    Ok(TestRun {
        exit_code: if killed { 124 } else { suite.out.shell_code() },
        timed_out: suite.timed_out,
        evidence: suite.evidence,
        tail,
        command: suite.command,
        duration_ms: suite.duration_ms,
        hung: suite.hung,
        crashed: suite.crashed,
        active_ms: suite.active_ms,
    })
}

impl Record {
    /// The stack that made this record green, rebuilt from its run (also
    /// from a cached record), for [`provision`] and [`run_tests`].
    pub fn green_stack(&self) -> Option<Stack> {
        let run = self
            .stacks
            .iter()
            .find(|s| s.verdict == crate::Verdict::Bootstrapped)?;
        Some(Stack {
            kind: StackKind::from_name(&run.name).unwrap_or(StackKind::Custom),
            marker: run.marker.clone(),
            install: run.install.clone(),
            command: run.command.clone(),
            declared: run.declared.clone(),
            dev_install: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_ids_match_on_boundaries_only() {
        assert!(same_test("tests/test_calc.py::test_add", "test_add"));
        assert!(same_test(
            "tests/test_calc.py::test_add",
            "test_calc.py::test_add"
        ));
        assert!(!same_test("tests/test_calc.py::test_add", "add"));
        assert!(same_test("calc::tests::adds", "tests::adds"));
        // pytest's node ids and unittest's dotted ids name the same test.
        assert!(same_test(
            "tests.test_more.SlicedTests.test_numpy_like_array",
            "tests/test_more.py::SlicedTests::test_numpy_like_array"
        ));
        assert!(same_test(
            "tests/test_more.py::SlicedTests::test_numpy_like_array",
            "tests.test_more.SlicedTests.test_numpy_like_array"
        ));
        assert!(same_test(
            "tests.test_more.SlicedTests.test_numpy_like_array",
            "test_more.py::SlicedTests::test_numpy_like_array"
        ));
        assert!(!same_test(
            "tests.test_more.SlicedTests.test_numpy_like_array",
            "tests/test_more.py::SlicedTests::test_numpy"
        ));
    }

    #[test]
    fn selections_become_runner_arguments() {
        let py = Stack::custom("x", Vec::new(), "python -m pytest -v");
        let py = Stack {
            kind: StackKind::Pytest,
            ..py
        };
        assert_eq!(
            selection_command(&py, &["tests/t.py::test_a b".to_owned()]),
            "python -m pytest -v 'tests/t.py::test_a b'"
        );
        let go = Stack {
            kind: StackKind::Go,
            ..py.clone()
        };
        assert_eq!(
            selection_command(&go, &["pkg::TestA".to_owned(), "TestB".to_owned()]),
            "python -m pytest -v -run '^(TestA|TestB)$'"
        );
        let make = Stack {
            kind: StackKind::Make,
            ..py
        };
        assert_eq!(
            selection_command(&make, &["t".to_owned()]),
            "python -m pytest -v"
        );
    }
}
