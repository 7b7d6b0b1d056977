//! The oracle: the tests that capture the issue (the target, red before the
//! fix) and the tests that pass before any change (the guard). A candidate
//! is green when every target test passes and no guard test stops passing.
//! Runs go through forq-bootstrap's runner and parsers: the target first,
//! the whole suite only once the target is green.

use std::time::Duration;

use forq_bootstrap::{same_test, Outcome, Stack, TestLimits, TestRun};
use forq_sandbox::Sandbox;
use serde::{Deserialize, Serialize};

/// Seconds one run of the tests may take unless told otherwise (a run past
/// it is killed and its candidate red): the one default of
/// `--test-timeout` and forq.yml's `test.timeout_s`.
pub const DEFAULT_TEST_TIMEOUT_S: u64 = 300;

/// Judges candidates by the repository's tests.
#[derive(Debug, Clone)]
pub struct Oracle {
    /// How the tests run (the bootstrap gate's green stack).
    pub stack: Stack,
    /// Test ids that must pass (fail-to-pass).
    pub target: Vec<String>,
    /// Test ids that passed before any change (pass-to-pass).
    pub guard: Vec<String>,
    /// Cap on each test run: a candidate that hangs is red when it is hit.
    pub timeout: Duration,
    /// Each test's budget in a candidate's run: silent this long, it hangs,
    /// the run is killed and the candidate is red. `None`: only `timeout`.
    pub idle: Option<Duration>,
}

/// Why an oracle could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OracleError {
    /// The sandbox failed.
    #[error("the sandbox failed while running the tests")]
    Sandbox(#[from] forq_sandbox::Error),
    /// The unmodified code's test run showed no test result.
    #[error(
        "the tests of the unmodified code show no result (`{command}` exited {exit_code}): {tail}"
    )]
    NoEvidence {
        /// The command.
        command: String,
        /// Its exit code.
        exit_code: i32,
        /// The end of its output.
        tail: String,
    },
    /// No target was given and every test passes.
    #[error("every test passes on the unmodified code: no test captures the issue yet")]
    NothingFails,
    /// The runner counted failures but named none forq could read.
    #[error(
        "the runner reports {failed} failing test(s), but its output names none that forq can read"
    )]
    UnnamedFailures {
        /// Failed plus errored, by the runner's own count.
        failed: u32,
    },
    /// A given target id matches no test the runner reported.
    #[error("the target test {0:?} is not among the tests the runner reported; pass an id as the runner prints it")]
    UnknownTarget(String),
    /// A given target already passes on the unmodified code.
    #[error("the target test {0:?} already passes on the unmodified code: it does not capture the issue")]
    TargetPasses(String),
}

/// What the oracle made of a candidate.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Judgement {
    /// Target tests that passed.
    pub target_passed: usize,
    /// Target tests in all.
    pub target_total: usize,
    /// Guard tests that no longer pass (after a full run).
    pub broken: Vec<String>,
    /// Whether the whole suite ran (only once the target was green).
    pub full_run: bool,
    /// Whether a run hit the timeout.
    pub timed_out: bool,
    /// Whether the output showed any test result at all (a build or import
    /// failure shows none).
    pub ran: bool,
    /// Target tests still failing, by id.
    pub failing: Vec<String>,
    /// Tests that hung (silent past the per-test budget) and were killed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hung: Vec<String>,
    /// The end of the last run's output.
    pub tail: String,
    /// Time spent running tests.
    pub test_ms: u64,
}

impl Judgement {
    /// Green: every target test passed, and the whole suite ran without
    /// breaking a guard test.
    pub fn green(&self) -> bool {
        self.ran
            && !self.timed_out
            && self.hung.is_empty()
            && self.full_run
            && self.target_passed == self.target_total
            && self.broken.is_empty()
    }
}

impl Oracle {
    /// Runs the whole suite on the unmodified code in `sandbox` (a fork of
    /// the warm root, so the root stays clean): the passing tests are the
    /// guard; the target is `target` when given (each must be reported
    /// and failing, be in a file the runner could not load — pytest's
    /// `ERROR path` — or be left unreached by a run that stopped at its
    /// hanging tests), else every failing test. Returns the oracle and its
    /// judgement of the unmodified code (the search's root).
    pub async fn from_genesis(
        sandbox: &dyn Sandbox,
        stack: Stack,
        target: &[String],
        timeout: Duration,
    ) -> Result<(Oracle, Judgement), OracleError> {
        let limits = TestLimits::new(&stack, timeout);
        Oracle::genesis(sandbox, stack, target, limits, true).await
    }

    /// [`Oracle::from_genesis`] under `limits` (a per-test budget other
    /// than the stack's default, say).
    pub async fn from_genesis_within(
        sandbox: &dyn Sandbox,
        stack: Stack,
        target: &[String],
        limits: TestLimits,
    ) -> Result<(Oracle, Judgement), OracleError> {
        Oracle::genesis(sandbox, stack, target, limits, true).await
    }

    /// An oracle for a change that must keep behaviour (a rename, say):
    /// no target, and every test passing on the unmodified code in
    /// `sandbox` is the guard (tests failing already are left out).
    pub async fn guard_only(
        sandbox: &dyn Sandbox,
        stack: Stack,
        timeout: Duration,
    ) -> Result<(Oracle, Judgement), OracleError> {
        let limits = TestLimits::new(&stack, timeout);
        Oracle::genesis(sandbox, stack, &[], limits, false).await
    }

    async fn genesis(
        sandbox: &dyn Sandbox,
        stack: Stack,
        target: &[String],
        limits: TestLimits,
        require_target: bool,
    ) -> Result<(Oracle, Judgement), OracleError> {
        // A hanging test is named and failed (it may be the bug itself),
        // and the suite runs on without it where the runner can.
        let limits = limits.continue_after_hang(true);
        let timeout = limits.timeout;
        let run = forq_bootstrap::run_tests_within(sandbox, &stack, &[], &limits).await?;
        let Some(ev) = &run.evidence else {
            return Err(OracleError::NoEvidence {
                command: run.command.clone(),
                exit_code: run.exit_code,
                tail: run.tail.clone(),
            });
        };
        let failing: Vec<String> = ev
            .tests
            .iter()
            .filter(|(_, o)| matches!(o, Outcome::Failed | Outcome::Error))
            .map(|(id, _)| id.clone())
            .collect();
        let target: Vec<String> = if target.is_empty() && !require_target {
            Vec::new()
        } else if target.is_empty() {
            if failing.is_empty() {
                let failed = ev.failed + ev.errors;
                return Err(match failed {
                    0 => OracleError::NothingFails,
                    _ => OracleError::UnnamedFailures { failed },
                });
            }
            failing
        } else {
            // Each target as the runner names it, so the selection commands
            // that run it again (and the reports) use the runner's own ids.
            let mut named = Vec::new();
            for id in target {
                let matched: Vec<&String> = ev.tests.keys().filter(|t| same_test(t, id)).collect();
                if matched.is_empty() {
                    // A test of a file that could not even be loaded (the
                    // bug breaks its import) fails as it is named.
                    let file = id.split("::").next().unwrap_or(id);
                    if id.contains("::") && ev.uncollected.iter().any(|u| u == file) {
                        named.push(id.clone());
                        continue;
                    }
                    // A run that stopped at its hangs (the hang limit, or
                    // the whole run's budget) never reached the rest: a
                    // target among them is taken as failing, as named
                    // (where every test loops, none is ever reported).
                    if !run.hung.is_empty() || run.timed_out {
                        named.push(id.clone());
                        continue;
                    }
                    return Err(OracleError::UnknownTarget(id.clone()));
                }
                if run.passed(id) {
                    return Err(OracleError::TargetPasses(id.clone()));
                }
                for t in matched {
                    if !named.contains(t) {
                        named.push(t.clone());
                    }
                }
            }
            named
        };
        let guard = ev
            .tests
            .iter()
            .filter(|(id, o)| **o == Outcome::Passed && !target.iter().any(|t| same_test(id, t)))
            .map(|(id, _)| id.clone())
            .collect();
        let idle = limits.idle;
        let oracle = Oracle {
            stack,
            target,
            guard,
            timeout,
            idle,
        };
        let mut judgement = oracle.read(&run, true);
        // What a candidate's budget is made from: the time the tests ran
        // while answering, not the silence that ended a hang.
        judgement.test_ms = run.active_ms;
        Ok((oracle, judgement))
    }

    /// Budgets for candidates from the unmodified code's run (`active_ms`,
    /// the time its tests ran while answering): the whole run at ten times
    /// that (20 s at least: a candidate may rebuild what the original did
    /// not), and — where the runner prints each test as it runs, so a
    /// per-test budget applies — each test silent at most twice that (a
    /// second at least: a runner's start is silent too, and a machine
    /// under load starts slowly). Neither goes past what the oracle had. A
    /// looping candidate of a small pytest or unittest suite is killed in
    /// about a second, and again after four more (a silence is confirmed
    /// once with a patient budget: see `run_confirmed`). Too tight a
    /// budget only turns a candidate red, never green.
    pub fn budget_from(mut self, active_ms: u64) -> Oracle {
        let whole = Duration::from_millis(active_ms.saturating_mul(10).max(20_000));
        let idle = Duration::from_millis(active_ms.saturating_mul(2).max(1_000));
        self.timeout = self.timeout.min(whole);
        self.idle = self.idle.map(|configured| configured.min(idle));
        self
    }

    /// Judges the code in `sandbox`: the target tests first (alone, when
    /// the runner can select them), then, if they all pass, the whole
    /// suite against the guard.
    pub async fn judge(&self, sandbox: &dyn Sandbox) -> Result<Judgement, forq_sandbox::Error> {
        let stack = &self.stack;
        let selected = forq_bootstrap::selection_command(stack, &self.target) != stack.command;
        let (first, first_ms) = self
            .run_confirmed(sandbox, if selected { &self.target } else { &[] })
            .await?;
        let mut j = self.read(&first, !selected);
        j.test_ms = first_ms;
        if selected
            && j.ran
            && !j.timed_out
            && j.hung.is_empty()
            && j.target_passed == j.target_total
        {
            let (full, full_ms) = self.run_confirmed(sandbox, &[]).await?;
            j = self.read(&full, true);
            j.test_ms = first_ms + full_ms;
        }
        Ok(j)
    }

    /// One run of the tests (`selection`, or all) under the candidates'
    /// budgets, the first hang ending it, and the time it took. A run
    /// ended by a test's silence runs once more with four times that
    /// budget (4 s at least) before its verdict stands: on a loaded
    /// machine a right candidate's tests can be slow to speak, and a
    /// budget made from the unmodified code's quiet run would call them
    /// hung (seen: a worker among seven other runs on two cores judged
    /// `a + b` hung after 1.1 s). A candidate that loops pays that once.
    async fn run_confirmed(
        &self,
        sandbox: &dyn Sandbox,
        selection: &[String],
    ) -> Result<(TestRun, u64), forq_sandbox::Error> {
        let stack = &self.stack;
        let limits = TestLimits::new(stack, self.timeout)
            .idle(self.idle)
            .continue_after_hang(false);
        let first = forq_bootstrap::run_tests_within(sandbox, stack, selection, &limits).await?;
        let silent = (first.timed_out || !first.hung.is_empty())
            && u128::from(first.duration_ms) < self.timeout.as_millis();
        let (Some(idle), true) = (self.idle, silent) else {
            let ms = first.duration_ms;
            return Ok((first, ms));
        };
        let patient = TestLimits::new(stack, self.timeout)
            .idle(Some((idle * 4).max(Duration::from_secs(4))))
            .continue_after_hang(false);
        let again = forq_bootstrap::run_tests_within(sandbox, stack, selection, &patient).await?;
        let ms = first.duration_ms + again.duration_ms;
        Ok((again, ms))
    }

    fn read(&self, run: &TestRun, full: bool) -> Judgement {
        let failing: Vec<String> = self
            .target
            .iter()
            .filter(|id| !run.passed(id))
            .cloned()
            .collect();
        Judgement {
            target_passed: self.target.len() - failing.len(),
            target_total: self.target.len(),
            broken: if full {
                self.guard
                    .iter()
                    .filter(|id| !run.passed(id))
                    .cloned()
                    .collect()
            } else {
                Vec::new()
            },
            full_run: full,
            timed_out: run.timed_out,
            // A run whose exit contradicts its report showed no result
            // that can be believed.
            ran: run
                .evidence
                .as_ref()
                .is_some_and(|e| e.executed() > 0 && e.disagreement.is_none()),
            failing,
            hung: run.hung.clone(),
            tail: run.tail.clone(),
            test_ms: run.duration_ms,
        }
    }
}
