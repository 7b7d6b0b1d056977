//! The gate end to end on one small project per ecosystem, each with a
//! passing and a failing test, run by the real toolchain inside a sandbox.

use forq_bootstrap::{GateOptions, Outcome, Verdict};

use super::{gate, repo};

/// Asserts a green record with one passing and one failing test, the
/// given per-test results and a toolchain version.
fn assert_green(record: &forq_bootstrap::Record, tests: &[(&str, Outcome)], tool: &str) {
    assert_eq!(record.verdict, Verdict::Bootstrapped, "{record:#?}");
    assert_eq!((record.passed, record.failed), (1, 1), "{record:#?}");
    for (id, outcome) in tests {
        assert_eq!(
            record.tests.get(*id),
            Some(outcome),
            "{id} in {:?}",
            record.tests
        );
    }
    assert!(
        record.toolchains.get(tool).is_some_and(|v| !v.is_empty()),
        "{:?}",
        record.toolchains
    );
}

#[tokio::test]
async fn a_pytest_project_installs_pytest_into_a_virtualenv() {
    let dir = repo(&[
        ("pyproject.toml", "[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\n"),
        ("calc.py", "def add(a, b):\n    return a - b\n"),
        (
            "tests/test_calc.py",
            "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n\ndef test_zero():\n    assert add(0, 0) == 0\n",
        ),
    ]);
    let record = gate(dir.path(), GateOptions::default()).await;
    assert_green(
        &record,
        &[
            ("tests/test_calc.py::test_add", Outcome::Failed),
            ("tests/test_calc.py::test_zero", Outcome::Passed),
        ],
        "python",
    );
    let stack = &record.stacks[0];
    assert_eq!(stack.name, "pytest");
    assert!(
        stack
            .install
            .iter()
            .any(|s| s.ends_with("pip install pytest")),
        "{stack:#?}"
    );
    // The virtualenv lived in the sandbox, not in the repository.
    assert!(!dir.path().join(".forq/venv").exists());
}

/// A project whose tests' dependencies live only in tox.ini (pytest held
/// below 9, and a library the tests import): a person reads tox.ini; so
/// does the gate, and says so in the record.
#[tokio::test]
async fn test_dependencies_declared_only_in_tox_ini_are_installed() {
    let dir = repo(&[
        (
            "tox.ini",
            "[tox]\nenvlist = py3\n\n[testenv]\ndeps =\n    pytest<9\n    six\n    py27: mock\ncommands = pytest {posargs}\n",
        ),
        ("calc.py", "def add(a, b):\n    return a - b\n"),
        (
            "tests/test_calc.py",
            "import six\nimport pytest\nfrom calc import add\n\n\
             def test_add():\n    assert add(2, 3) == 5\n\n\
             def test_pinned():\n    assert int(pytest.__version__.split('.')[0]) < 9\n",
        ),
    ]);
    let record = gate(dir.path(), GateOptions::default()).await;
    assert_green(
        &record,
        &[
            ("tests/test_calc.py::test_add", Outcome::Failed),
            ("tests/test_calc.py::test_pinned", Outcome::Passed),
        ],
        "python",
    );
    let stack = &record.stacks[0];
    assert_eq!(
        stack.declared,
        ["tox.ini [testenv]: pytest<9, six"],
        "{stack:#?}"
    );
    assert!(
        stack
            .install
            .contains(&".forq/venv/bin/pip install 'pytest<9' six".to_owned()),
        "{stack:#?}"
    );
}

#[tokio::test]
async fn a_pytest_configuration_naming_coverage_and_workers_gets_their_plugins() {
    // Without pytest-cov and pytest-xdist, pytest stops at the first
    // option it does not know (exit 4) and no test runs.
    let dir = repo(&[
        (
            "setup.cfg",
            "[tool:pytest]\naddopts =\n\t--cov=calc\n\t--cov-fail-under=100\n\t-n auto\n",
        ),
        ("calc.py", "def add(a, b):\n    return a - b\n"),
        (
            "tests/test_calc.py",
            "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n\ndef test_zero():\n    assert add(0, 0) == 0\n",
        ),
    ]);
    let record = gate(dir.path(), GateOptions::default()).await;
    // Outcomes per test, read from one in-process run (`-n 0`); coverage
    // off (`--no-cov`), so its 100% floor does not fail the run.
    assert_green(
        &record,
        &[
            ("tests/test_calc.py::test_add", Outcome::Failed),
            ("tests/test_calc.py::test_zero", Outcome::Passed),
        ],
        "python",
    );
    let stack = &record.stacks[0];
    assert!(
        stack.command.ends_with("pytest -v --no-cov -n 0"),
        "{stack:#?}"
    );
}

#[tokio::test]
async fn a_rust_crate_is_fetched_then_tested_offline() {
    let dir = repo(&[
        ("Cargo.toml", "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n"),
        (
            "src/lib.rs",
            "pub fn add(a: i32, b: i32) -> i32 { a - b }\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() { assert_eq!(super::add(2, 3), 5); }\n    #[test]\n    fn zero() { assert_eq!(super::add(0, 0), 0); }\n}\n",
        ),
    ]);
    let record = gate(dir.path(), GateOptions::default()).await;
    assert_green(
        &record,
        &[
            ("src/lib.rs::tests::adds", Outcome::Failed),
            ("src/lib.rs::tests::zero", Outcome::Passed),
        ],
        "cargo",
    );
    assert!(
        !dir.path().join("target").exists(),
        "the build stayed in the sandbox"
    );
}

/// A crate whose own `deny` a compiler turns into errors (as a newer one
/// does to an older crate's) is tried again with the lints capped, and
/// the record keeps both runs and the rule.
#[tokio::test]
async fn denied_lints_are_capped_on_a_second_try_and_the_record_says_so() {
    let dir = repo(&[
        ("Cargo.toml", "[package]\nname = \"strict\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n"),
        (
            "src/lib.rs",
            "//! Strict.\n#![deny(missing_docs)]\n\npub fn add(a: i32, b: i32) -> i32 { a - b }\n\n\
             #[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() { assert_eq!(super::add(2, 3), 5); }\n    \
             #[test]\n    fn zero() { assert_eq!(super::add(0, 0), 0); }\n}\n",
        ),
    ]);
    let record = gate(dir.path(), GateOptions::default()).await;
    assert_green(
        &record,
        &[
            ("src/lib.rs::tests::adds", Outcome::Failed),
            ("src/lib.rs::tests::zero", Outcome::Passed),
        ],
        "cargo",
    );
    assert_eq!(record.stacks.len(), 2, "{record:#?}");
    assert_eq!(record.stacks[0].verdict, Verdict::FailedDeterministic);
    let again = &record.stacks[1];
    assert!(
        again.retry.as_deref().is_some_and(|r| r.starts_with(
            "cap_lints: lints the crate denies are errors on this compiler (error: missing documentation"
        )),
        "{again:#?}"
    );
    assert!(again
        .command
        .starts_with("RUSTFLAGS=--cap-lints=warn cargo test"));
}

/// A manifest naming a test target whose file the package left out
/// (log 0.4.14's): cargo refuses it before building; the gate drops the
/// entry from its sandbox's copy, runs the rest, and leaves the
/// repository's manifest as it was.
#[tokio::test]
async fn test_targets_the_package_left_out_are_dropped_and_the_rest_runs() {
    let manifest = "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[[test]]\nname = \"gone\"\npath = \"tests/gone.rs\"\n\n[workspace]\n";
    let dir = repo(&[
        ("Cargo.toml", manifest),
        (
            "src/lib.rs",
            "pub fn add(a: i32, b: i32) -> i32 { a - b }\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() { assert_eq!(super::add(2, 3), 5); }\n    #[test]\n    fn zero() { assert_eq!(super::add(0, 0), 0); }\n}\n",
        ),
    ]);
    let record = gate(dir.path(), GateOptions::default()).await;
    assert_green(
        &record,
        &[
            ("src/lib.rs::tests::adds", Outcome::Failed),
            ("src/lib.rs::tests::zero", Outcome::Passed),
        ],
        "cargo",
    );
    let again = &record.stacks[1];
    assert!(
        again.retry.as_deref().is_some_and(|r| r.starts_with(
            "missing_targets: the manifest names targets the package left out ([[test]] gone)"
        )),
        "{again:#?}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("Cargo.toml")).unwrap(),
        manifest
    );
}

/// A crate whose tests read a file the package left out: its doctests
/// are what it can still prove, and the verdict says so.
#[tokio::test]
async fn tests_missing_their_data_leave_a_proof_by_doctests() {
    let dir = repo(&[
        ("Cargo.toml", "[package]\nname = \"doubler\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n"),
        (
            "src/lib.rs",
            "/// Doubles.\n///\n/// ```\n/// assert_eq!(doubler::double(2), 4);\n/// ```\npub fn double(x: i32) -> i32 { 2 * x }\n",
        ),
        (
            "tests/golden.rs",
            "const WANT: &str = include_str!(\"data/golden.txt\");\n\n#[test]\nfn golden() { assert_eq!(WANT.trim(), \"4\"); }\n",
        ),
    ]);
    let record = gate(dir.path(), GateOptions::default()).await;
    assert_eq!(record.verdict, Verdict::Bootstrapped, "{record:#?}");
    assert_eq!((record.passed, record.failed), (1, 0), "{record:#?}");
    assert!(
        record
            .reason
            .starts_with("doctests only (the other tests cannot build): `cargo test --doc"),
        "{}",
        record.reason
    );
    let again = &record.stacks[1];
    assert!(
        again
            .retry
            .as_deref()
            .is_some_and(|r| r.starts_with("doctests_only: the tests cannot build")
                && r.contains("data/golden.txt")),
        "{again:#?}"
    );
}

/// uvu through `npm test`, installed from the registry: its summary is
/// the evidence.
#[tokio::test]
async fn a_node_project_testing_with_uvu() {
    let dir = repo(&[
        (
            "package.json",
            r#"{"name": "calc", "version": "1.0.0", "private": true, "scripts": {"test": "uvu tests"}, "devDependencies": {"uvu": "^0.5.6"}}"#,
        ),
        ("calc.js", "exports.add = (a, b) => a - b;\n"),
        (
            "tests/calc.js",
            "const { test } = require('uvu');\nconst assert = require('uvu/assert');\nconst { add } = require('../calc.js');\n\
             test('adds', () => { assert.is(add(2, 3), 5); });\ntest('zero', () => { assert.is(add(0, 0), 0); });\ntest.run();\n",
        ),
    ]);
    let record = gate(dir.path(), GateOptions::default()).await;
    assert_eq!(record.verdict, Verdict::Bootstrapped, "{record:#?}");
    assert_eq!((record.passed, record.failed), (1, 1), "{record:#?}");
    assert_eq!(record.tests.get("adds"), Some(&Outcome::Failed));
}

/// An npm install that fails on what the tests do not need (here the
/// project's own install script; a browser runner's download, elsewhere)
/// is tried again lean, and the tests run.
#[tokio::test]
async fn a_failed_npm_install_is_tried_again_without_scripts_and_browser_runners() {
    let dir = repo(&[
        (
            "package.json",
            r#"{"name": "calc", "version": "1.0.0", "private": true, "scripts": {"preinstall": "exit 3", "test": "node --test"}, "devDependencies": {"karma": "^6.4.4"}}"#,
        ),
        ("calc.js", "exports.add = (a, b) => a - b;\n"),
        (
            "test/calc.test.js",
            "const test = require('node:test');\nconst assert = require('node:assert');\nconst { add } = require('../calc.js');\n\
             test('adds', () => assert.strictEqual(add(2, 3), 5));\ntest('zero', () => assert.strictEqual(add(0, 0), 0));\n",
        ),
    ]);
    let record = gate(dir.path(), GateOptions::default()).await;
    assert_eq!(record.verdict, Verdict::Bootstrapped, "{record:#?}");
    assert_eq!((record.passed, record.failed), (1, 1), "{record:#?}");
    assert_eq!(record.stacks.len(), 2, "{record:#?}");
    assert!(
        record.stacks[0]
            .reason
            .starts_with("install step `npm install` exited"),
        "{record:#?}"
    );
    let lean = &record.stacks[1];
    assert_eq!(
        lean.install,
        [
            "npm pkg delete devDependencies.karma",
            "npm install --no-audit --no-fund --omit=optional --ignore-scripts",
        ]
    );
    assert!(
        lean.retry
            .as_deref()
            .is_some_and(|r| r.starts_with("lean_install: the full install failed")),
        "{lean:#?}"
    );
}

#[tokio::test]
async fn a_node_project_with_the_builtin_test_runner() {
    let dir = repo(&[
        (
            "package.json",
            "{\"name\": \"calc\", \"version\": \"1.0.0\", \"scripts\": {\"test\": \"node --test\"}}\n",
        ),
        (
            "test/calc.test.js",
            "const test = require('node:test');\nconst assert = require('node:assert');\nconst add = (a, b) => a - b;\ntest('adds', () => assert.strictEqual(add(2, 3), 5));\ntest('zero', () => assert.strictEqual(add(0, 0), 0));\n",
        ),
    ]);
    let record = gate(dir.path(), GateOptions::default()).await;
    assert_green(
        &record,
        &[("adds", Outcome::Failed), ("zero", Outcome::Passed)],
        "node",
    );
    assert_eq!(record.stacks[0].install, ["npm install"]);
}

#[tokio::test]
async fn a_go_module_builds_offline_and_reports_subtests() {
    let dir = repo(&[
        ("go.mod", "module example.com/calc\n\ngo 1.19\n"),
        ("calc.go", "package calc\n\nfunc Add(a, b int) int { return a - b }\n"),
        (
            "calc_test.go",
            "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(\"2+3\")\n\t}\n}\n\nfunc TestZero(t *testing.T) {\n\tt.Run(\"both\", func(t *testing.T) {\n\t\tif Add(0, 0) != 0 {\n\t\t\tt.Fatal(\"0+0\")\n\t\t}\n\t})\n}\n",
        ),
    ]);
    let record = gate(dir.path(), GateOptions::default()).await;
    assert_green(
        &record,
        &[
            ("example.com/calc::TestAdd", Outcome::Failed),
            ("example.com/calc::TestZero/both", Outcome::Passed),
        ],
        "go",
    );
}

#[tokio::test]
async fn a_meson_project_with_tests() {
    let dir = repo(&[
        (
            "meson.build",
            "project('calc', 'c')\ncheck = executable('check_add', 'check_add.c')\ntest('adds', check, args : ['2', '3', '5'])\ntest('subtracts', check, args : ['3', '1', '1'])\n",
        ),
        (
            "check_add.c",
            "#include <stdlib.h>\nint main(int argc, char **argv) {\n    return argc == 4 && atoi(argv[1]) + atoi(argv[2]) == atoi(argv[3]) ? 0 : 1;\n}\n",
        ),
    ]);
    let record = gate(dir.path(), GateOptions::default()).await;
    assert_green(
        &record,
        &[("adds", Outcome::Passed), ("subtracts", Outcome::Failed)],
        "meson",
    );
}

/// A dev group waits until the tests miss a module (it carries linters as
/// often as the tests' needs); then the gate tries again with it.
#[tokio::test]
async fn a_dev_group_is_installed_when_the_tests_miss_a_module() {
    let dir = repo(&[
        (
            "pyproject.toml",
            "[dependency-groups]\ndev = [\"six\"]\n\n[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\n",
        ),
        (
            "tests/test_six.py",
            "import six\n\n\ndef test_py3():\n    assert six.PY3\n\n\ndef test_py2():\n    assert six.PY2\n",
        ),
    ]);
    let record = gate(dir.path(), GateOptions::default()).await;
    assert_eq!(record.verdict, Verdict::Bootstrapped, "{record:#?}");
    assert_eq!((record.passed, record.failed), (1, 1), "{record:#?}");
    assert_eq!(record.stacks.len(), 2, "{record:#?}");
    assert_eq!(
        record.stacks[0].declared,
        ["if the tests miss a module: pyproject.toml [dependency-groups] dev: six"]
    );
    let again = &record.stacks[1];
    assert!(
        again
            .retry
            .as_deref()
            .is_some_and(|r| r.starts_with("dev_dependencies: the tests miss a module")),
        "{again:#?}"
    );
    assert!(
        again
            .install
            .contains(&".forq/venv/bin/pip install six".to_owned()),
        "{again:#?}"
    );
}

/// A package that ships no tests (a registry's sdist, often) is a
/// deterministic failure that says what to do, not an unknown ecosystem;
/// a directory with no manifest stays unknown.
#[tokio::test]
async fn a_package_that_ships_no_tests_says_so() {
    let dir = repo(&[
        (
            "pyproject.toml",
            "[project]\nname = \"lonely\"\nversion = \"1.0\"\n",
        ),
        ("src/lonely/__init__.py", "def f():\n    return 1\n"),
        ("README.md", "# lonely\n"),
    ]);
    let record = gate(dir.path(), GateOptions::default()).await;
    assert_eq!(record.verdict, Verdict::FailedDeterministic, "{record:#?}");
    assert!(
        record.reason.starts_with(
            "no tests in the package: pyproject.toml declares a project, but no test file"
        ),
        "{}",
        record.reason
    );
    assert!(record
        .reason
        .contains("point forq at the project's source repository"));
    // A test script whose file the package left out (util 0.12.5's
    // `node test/node/index.js`) is the same.
    let dir = repo(&[(
        "package.json",
        r#"{"name": "lonely", "version": "1.0.0", "scripts": {"test": "node test/node/index.js"}}"#,
    )]);
    let record = gate(dir.path(), GateOptions::default()).await;
    assert!(
        record
            .reason
            .starts_with("no tests in the package: package.json declares"),
        "{record:#?}"
    );
    // Something named for tests, in a layout nothing detects: unknown.
    let dir = repo(&[
        ("pyproject.toml", "[project]\nname = \"odd\"\n"),
        ("qa/test_notes.txt", "run by hand\n"),
    ]);
    let record = gate(dir.path(), GateOptions::default()).await;
    assert_eq!(record.verdict, Verdict::UnsupportedEcosystem, "{record:#?}");
    let dir = repo(&[("notes.txt", "no project here\n")]);
    let record = gate(dir.path(), GateOptions::default()).await;
    assert_eq!(record.verdict, Verdict::UnsupportedEcosystem, "{record:#?}");
}
