//! A test that never ends: the per-test budget kills it, names it, and
//! fails it; the tests that finished count; the gate bootstraps.

use std::time::{Duration, Instant};

use forq_bootstrap::{GateOptions, Outcome, TestLimits, Verdict};

use super::{gate, repo};

/// unittest runs modules in name order: `test_a` passes, `test_b` loops
/// forever in `digits` (`n * 10` where `n // 10` is meant).
fn looping() -> tempfile::TempDir {
    repo(&[
        (
            "digits.py",
            "def digits(n):\n    count = 0\n    while n > 0:\n        n = n * 10\n        count += 1\n    return count\n\n\ndef double(n):\n    return n * 2\n",
        ),
        ("tests/__init__.py", ""),
        (
            "tests/test_a.py",
            "import unittest\nfrom digits import double\n\nclass DoubleTest(unittest.TestCase):\n    def test_double(self):\n        self.assertEqual(double(4), 8)\n",
        ),
        (
            "tests/test_b.py",
            "import unittest\nfrom digits import digits\n\nclass DigitsTest(unittest.TestCase):\n    def test_digits(self):\n        self.assertEqual(digits(1234), 4)\n",
        ),
    ])
}

#[tokio::test]
async fn the_gate_kills_a_hanging_test_names_it_and_bootstraps() {
    let dir = looping();
    let started = Instant::now();
    let record = gate(
        dir.path(),
        GateOptions::default().test_idle(Some(Duration::from_secs(2))),
    )
    .await;
    let took = started.elapsed();
    assert_eq!(record.verdict, Verdict::Bootstrapped, "{}", record.reason);
    assert!(
        record
            .reason
            .contains("1 hung: tests.test_b.DigitsTest.test_digits"),
        "{}",
        record.reason
    );
    let run = record.stacks.iter().find(|s| s.name == "unittest").unwrap();
    let ev = run.evidence.as_ref().unwrap();
    assert_eq!(
        ev.tests.get("tests.test_a.DoubleTest.test_double"),
        Some(&Outcome::Passed)
    );
    assert_eq!(
        ev.tests.get("tests.test_b.DigitsTest.test_digits"),
        Some(&Outcome::Failed)
    );
    assert!(
        ev.lines
            .iter()
            .any(|l| l.contains("hung (no output for 2.0 s)")),
        "{:?}",
        ev.lines
    );
    // Killed at the budget, not at the run's 900 s.
    assert!(took < Duration::from_secs(120), "{took:?}");
}

#[tokio::test]
async fn run_tests_within_reports_the_hang_and_the_time_the_tests_answered() {
    let dir = looping();
    let backend = forq_sandbox::open_backend(forq_sandbox::BackendChoice::Auto)
        .await
        .unwrap()
        .backend;
    let stack = forq_bootstrap::detect(dir.path()).remove(0);
    let sandbox = backend
        .create(&forq_sandbox::SandboxSpec::new(dir.path()))
        .await
        .unwrap();
    let limits =
        TestLimits::new(&stack, Duration::from_secs(300)).idle(Some(Duration::from_secs(1)));
    let run = forq_bootstrap::run_tests_within(&*sandbox, &stack, &[], &limits)
        .await
        .unwrap();
    assert_eq!(run.hung, ["tests.test_b.DigitsTest.test_digits"]);
    assert!(!run.timed_out, "a hang that was named is not a timeout");
    assert_eq!(run.exit_code, 124);
    assert!(!run.passed("test_digits") && run.passed("test_double"));
    // The silence that ended the run is not the tests' time.
    assert!(
        run.active_ms + 900 <= run.duration_ms,
        "{} vs {}",
        run.active_ms,
        run.duration_ms
    );
    sandbox.destroy().await.unwrap();
}
