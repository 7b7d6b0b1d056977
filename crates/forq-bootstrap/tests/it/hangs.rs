//! A test that never ends: the per-test budget kills it, names it, and
//! fails it; the tests that finished count; the gate bootstraps.

use std::time::{Duration, Instant};

use forq_bootstrap::{GateOptions, Outcome, TestLimits, Verdict};

use super::{gate, repo};

/// `tests/fixtures/looping` in a directory of its own: unittest runs
/// modules in name order, `test_a` passes, `test_b` loops forever in
/// `digits` (`n * 10` where `n // 10` is meant).
fn looping() -> tempfile::TempDir {
    let from = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/looping");
    let read = |p: &str| std::fs::read_to_string(from.join(p)).unwrap();
    repo(&[
        ("digits.py", &read("digits.py")),
        ("tests/__init__.py", ""),
        ("tests/test_a.py", &read("tests/test_a.py")),
        ("tests/test_b.py", &read("tests/test_b.py")),
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

#[tokio::test]
async fn go_tests_own_timeout_names_the_test_it_stopped() {
    // go test's -timeout panics and names nothing by itself; the gate
    // reads the test that was running and fails it, not the package.
    let dir = repo(&[
        ("go.mod", "module example.com/digits\n\ngo 1.19\n"),
        (
            "digits.go",
            "package digits\n\nfunc Digits(n uint64) int {\n\tcount := 0\n\tfor n > 0 {\n\t\tn = n*10 + 1\n\t\tcount++\n\t}\n\treturn count\n}\n\nfunc Double(n int) int { return n * 2 }\n",
        ),
        (
            "digits_test.go",
            "package digits\n\nimport \"testing\"\n\nfunc TestDouble(t *testing.T) {\n\tif Double(4) != 8 {\n\t\tt.Fatal(\"double\")\n\t}\n}\n\nfunc TestDigits(t *testing.T) {\n\tif Digits(1234) != 4 {\n\t\tt.Fatal(\"digits\")\n\t}\n}\n",
        ),
    ]);
    let mut stack = forq_bootstrap::detect(dir.path()).remove(0);
    assert_eq!(stack.kind, forq_bootstrap::StackKind::Go);
    stack.command = format!("{} -timeout 3s", stack.command);
    let record = gate(dir.path(), GateOptions::default().recipes(vec![stack])).await;
    assert_eq!(record.verdict, Verdict::Bootstrapped, "{}", record.reason);
    assert!(
        record
            .reason
            .contains("1 hung: example.com/digits::TestDigits"),
        "{}",
        record.reason
    );
    let ev = record.stacks[0].evidence.as_ref().unwrap();
    assert_eq!(
        ev.tests.get("example.com/digits::TestDouble"),
        Some(&Outcome::Passed)
    );
    assert!(
        ev.lines
            .iter()
            .any(|l| l.contains("the runner's own timeout: test timed out after 3s")),
        "{:?}",
        ev.lines
    );
}

#[tokio::test]
async fn a_test_that_crashes_its_interpreter_is_named_failed_with_its_signal() {
    // unittest runs modules in name order: test_a passes, then test_b's
    // first test reads address 0 and the interpreter dies of SIGSEGV.
    let dir = repo(&[
        ("tests/__init__.py", ""),
        (
            "tests/test_a.py",
            "import unittest\n\n\nclass A(unittest.TestCase):\n    def test_a(self):\n        self.assertEqual(1, 1)\n",
        ),
        (
            "tests/test_b.py",
            "import ctypes\nimport unittest\n\n\nclass B(unittest.TestCase):\n    def test_crash(self):\n        ctypes.string_at(0)\n\n    def test_z(self):\n        pass\n",
        ),
    ]);
    let record = gate(dir.path(), GateOptions::default()).await;
    assert_eq!(record.verdict, Verdict::Bootstrapped, "{}", record.reason);
    assert!(
        record
            .reason
            .contains("(1 crashed: tests.test_b.B.test_crash)"),
        "{}",
        record.reason
    );
    let run = record.stacks.iter().find(|s| s.name == "unittest").unwrap();
    let ev = run.evidence.as_ref().unwrap();
    assert_eq!(
        ev.tests.get("tests.test_a.A.test_a"),
        Some(&Outcome::Passed)
    );
    assert_eq!(
        ev.tests.get("tests.test_b.B.test_crash"),
        Some(&Outcome::Failed)
    );
    assert!(
        ev.lines
            .iter()
            .any(|l| l == "tests.test_b.B.test_crash: crashed (SIGSEGV, signal 11)"),
        "{:?}",
        ev.lines
    );
    // unittest cannot leave the crashed test out: the evidence says so.
    assert!(
        ev.lines.iter().any(|l| l.contains("did not run")),
        "{:?}",
        ev.lines
    );
}

/// `tests/fixtures/looping-node` in a directory of its own: node's own
/// runner, `test/a.test.js` passes, `test/b.test.js` loops forever in
/// `digits` (`p / 10` where `p * 10` is meant).
fn looping_node() -> tempfile::TempDir {
    let from = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/looping-node");
    let read = |p: &str| std::fs::read_to_string(from.join(p)).unwrap();
    repo(&[
        ("package.json", &read("package.json")),
        ("digits.js", &read("digits.js")),
        ("test/a.test.js", &read("test/a.test.js")),
        ("test/b.test.js", &read("test/b.test.js")),
    ])
}

#[tokio::test]
async fn node_runs_get_a_per_test_budget_and_name_the_file_that_hangs() {
    let dir = looping_node();
    let record = gate(
        dir.path(),
        GateOptions::default().test_idle(Some(Duration::from_secs(2))),
    )
    .await;
    assert_eq!(record.verdict, Verdict::Bootstrapped, "{}", record.reason);
    assert!(
        record.reason.contains("1 hung: test/b.test.js"),
        "{}",
        record.reason
    );
    let run = record.stacks.iter().find(|s| s.name == "node").unwrap();
    let ev = run.evidence.as_ref().unwrap();
    // The other file's tests count; the file that hung fails by its path
    // (relative: the same in every fork), its cause in the evidence.
    assert_eq!(ev.tests.get("double"), Some(&Outcome::Passed));
    assert_eq!(ev.tests.get("one digit"), Some(&Outcome::Passed));
    assert_eq!(ev.tests.get("test/b.test.js"), Some(&Outcome::Failed));
    assert!(
        ev.lines
            .iter()
            .any(|l| l.contains("test/b.test.js: hung (past node's per-test budget of 2.0 s)")),
        "{:?}",
        ev.lines
    );
}

#[tokio::test]
async fn a_node_file_that_hung_passes_once_its_run_ends_green() {
    let dir = looping_node();
    let backend = forq_sandbox::open_backend(forq_sandbox::BackendChoice::Auto)
        .await
        .unwrap()
        .backend;
    let stack = forq_bootstrap::detect(dir.path()).remove(0);
    // Node's runner keeps the per-test budget: forq does not kill a silent
    // node run, the runner gives up on the file.
    let limits = TestLimits::new(&stack, Duration::from_secs(300));
    assert_eq!(limits.idle, Some(Duration::from_secs(60)));
    let limits = limits.idle(Some(Duration::from_secs(1)));
    let sandbox = backend
        .create(&forq_sandbox::SandboxSpec::new(dir.path()))
        .await
        .unwrap();
    let run = forq_bootstrap::run_tests_within(&*sandbox, &stack, &[], &limits)
        .await
        .unwrap();
    assert_eq!(run.hung, ["test/b.test.js"]);
    assert!(!run.timed_out);
    assert!(!run.passed("test/b.test.js") && run.passed("double"));
    // The fix: the file runs to its end and is its tests again.
    let fixed = std::fs::read_to_string(dir.path().join("digits.js"))
        .unwrap()
        .replace("p = p / 10", "p = p * 10");
    sandbox
        .write_file(std::path::Path::new("digits.js"), fixed.as_bytes())
        .await
        .unwrap();
    let run = forq_bootstrap::run_tests_within(&*sandbox, &stack, &[], &limits)
        .await
        .unwrap();
    assert!(run.hung.is_empty(), "{:?}", run.hung);
    assert!(run.passed("test/b.test.js"), "{:?}", run.evidence);
    assert!(run.passed("five digits"));
    sandbox.destroy().await.unwrap();
}

/// `npm test` runs the package's `pretest` first and `posttest` after; so
/// does forq, which runs node's own runner itself for its per-test
/// budget. Here `pretest` writes the test file: without it the runner
/// finds no test and the gate fails.
#[tokio::test]
async fn a_node_test_script_runs_between_its_pre_and_post_scripts() {
    let dir = repo(&[
        (
            "package.json",
            r#"{"name": "built", "version": "1.0.0", "private": true,
  "scripts": {"pretest": "node build.js", "test": "node --test", "posttest": "node -e \"require('fs').writeFileSync('posttest-ran', '')\""}}
"#,
        ),
        (
            "build.js",
            "const fs = require('fs');\nfs.mkdirSync('test', { recursive: true });\n\
             fs.writeFileSync('test/built.test.js', \"const test = require('node:test');\\n\
             const assert = require('node:assert');\\ntest('built', () => assert.strictEqual(1 + 1, 2));\\n\");\n",
        ),
    ]);
    let record = gate(dir.path(), GateOptions::default()).await;
    assert_eq!(record.verdict, Verdict::Bootstrapped, "{}", record.reason);
    assert_eq!(
        record.tests.get("built"),
        Some(&Outcome::Passed),
        "{record:#?}"
    );
}

/// A suite that prints nothing while it loads (here a module that takes
/// three seconds to import; a large suite collecting on a loaded machine)
/// is not a hang: silent past the 2 s per-test budget with no test to
/// name, its run goes again with four times the budget before the gate
/// judges it, and it bootstraps. Before, the gate said it printed nothing
/// and failed it.
#[tokio::test]
async fn a_suite_slow_to_start_is_given_longer_before_it_is_judged() {
    let dir = repo(&[
        ("tests/__init__.py", ""),
        (
            "tests/test_slow.py",
            "import time\nimport unittest\n\ntime.sleep(3)\n\n\nclass Slow(unittest.TestCase):\n    def test_one(self):\n        self.assertTrue(True)\n",
        ),
    ]);
    let record = gate(
        dir.path(),
        GateOptions::default().test_idle(Some(Duration::from_secs(2))),
    )
    .await;
    assert_eq!(record.verdict, Verdict::Bootstrapped, "{}", record.reason);
    assert_eq!(
        record.tests.get("tests.test_slow.Slow.test_one"),
        Some(&Outcome::Passed),
        "{record:#?}"
    );
}
