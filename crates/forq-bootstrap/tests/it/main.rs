//! The evidence parsers on output captured from the real runners
//! (`tests/fixtures/capture.sh` made every fixture; the `.code` files hold
//! the exit codes the runners gave).

#![allow(clippy::unwrap_used)] // tests fail loudly

use forq_bootstrap::evidence::{self, Outcome};
use forq_bootstrap::Verdict;

macro_rules! capture {
    ($name:literal) => {
        include_str!(concat!("../fixtures/output/", $name, ".txt"))
    };
}

mod clone;
mod configure;
mod golden;
mod hangs;
mod journal;
mod reads;
mod runners;
mod snapshots;
mod stacks;

fn outcomes(ev: &forq_bootstrap::Evidence) -> Vec<(String, Outcome)> {
    ev.tests.iter().map(|(k, v)| (k.clone(), *v)).collect()
}

#[test]
fn pytest_counts_and_per_test_results() {
    let ev = evidence::pytest(capture!("pytest_mixed")).unwrap();
    assert_eq!((ev.passed, ev.failed, ev.skipped, ev.errors), (3, 1, 1, 0));
    assert_eq!(ev.executed(), 4);
    assert_eq!(
        outcomes(&ev),
        [
            ("tests/test_calc.py::test_add".to_owned(), Outcome::Failed),
            (
                "tests/test_calc.py::test_param[1]".to_owned(),
                Outcome::Passed
            ),
            (
                "tests/test_calc.py::test_param[2]".to_owned(),
                Outcome::Passed
            ),
            ("tests/test_calc.py::test_sub".to_owned(), Outcome::Passed),
        ]
    );
    assert_eq!(ev.lines[0], "collected 5 items");
    assert!(
        ev.lines[1].contains("1 failed, 3 passed, 1 skipped"),
        "{:?}",
        ev.lines
    );
}

#[test]
fn pytest_with_no_tests_or_a_collection_error_executed_nothing() {
    let empty = evidence::pytest(capture!("pytest_empty")).unwrap();
    assert_eq!(empty.executed(), 0);
    let broken = evidence::pytest(capture!("pytest_import_error")).unwrap();
    assert_eq!((broken.passed, broken.failed, broken.errors), (0, 0, 0));
    assert_eq!((broken.collection_errors, broken.executed()), (1, 0));
    // The error is the collection's, not a test's: no per-test result.
    assert!(broken.tests.is_empty(), "{:?}", broken.tests);
}

#[test]
fn unittest_names_tests_with_docstrings_by_their_ids() {
    // With a docstring, the result line shows its first line and the name
    // stands on the line above; a doctest is named by what it tests.
    let ev = evidence::unittest(capture!("unittest_docstrings")).unwrap();
    assert_eq!((ev.passed, ev.failed), (3, 1));
    assert_eq!(
        outcomes(&ev),
        [
            (
                "tests.test_chunks.ChunkTests.test_even".to_owned(),
                Outcome::Passed
            ),
            (
                "tests.test_chunks.ChunkTests.test_plain".to_owned(),
                Outcome::Passed
            ),
            (
                "tests.test_chunks.ChunkTests.test_strict".to_owned(),
                Outcome::Failed
            ),
            ("tests.test_chunks.halve".to_owned(), Outcome::Passed),
        ]
    );
    // Before Python 3.11 the parentheses hold only the class.
    let old = "test_add (tests.test_calc.CalcTest) ... FAIL\n\nRan 1 test in 0.001s\n\nFAILED (failures=1)\n";
    let ev = evidence::unittest(old).unwrap();
    assert_eq!(
        outcomes(&ev),
        [(
            "tests.test_calc.CalcTest.test_add".to_owned(),
            Outcome::Failed
        )]
    );
}

#[test]
fn unittest_counts_and_per_test_results() {
    let ev = evidence::unittest(capture!("unittest_mixed")).unwrap();
    assert_eq!((ev.passed, ev.failed, ev.skipped, ev.errors), (1, 1, 1, 1));
    assert_eq!(ev.executed(), 3);
    assert_eq!(
        outcomes(&ev),
        [
            (
                "tests.test_calc.CalcTest.test_add".to_owned(),
                Outcome::Failed
            ),
            (
                "tests.test_calc.CalcTest.test_error".to_owned(),
                Outcome::Error
            ),
            (
                "tests.test_calc.CalcTest.test_mul".to_owned(),
                Outcome::Passed
            ),
            (
                "tests.test_calc.CalcTest.test_skip".to_owned(),
                Outcome::Skipped
            ),
        ]
    );
    assert_eq!(
        ev.lines,
        [
            "Ran 4 tests in 0.001s",
            "FAILED (failures=1, errors=1, skipped=1)"
        ]
    );
    let empty = evidence::unittest(capture!("unittest_empty")).unwrap();
    assert_eq!(empty.executed(), 0, "Ran 0 tests ... OK is no evidence");
    // A module that fails to import is reported as one erroring test: it is
    // a collection error, and nothing ran.
    let broken = evidence::unittest(capture!("unittest_import_error")).unwrap();
    assert_eq!(
        (broken.collection_errors, broken.executed()),
        (1, 0),
        "{broken:?}"
    );
}

#[test]
fn unittest_expected_failures_are_not_failures() {
    let out = "test_x (m.T.test_x) ... expected failure\n\n----\nRan 2 tests in 0.001s\n\nOK (expected failures=1)\n";
    let ev = evidence::unittest(out).unwrap();
    assert_eq!((ev.passed, ev.failed, ev.errors), (1, 0, 0));
}

#[test]
fn cargo_sums_every_binary_and_doc_tests() {
    let ev = evidence::cargo(capture!("cargo_mixed")).unwrap();
    // Unit: 1 passed, 1 failed, 1 ignored; integration: 1 passed; doc: 1 passed.
    assert_eq!((ev.passed, ev.failed, ev.skipped), (3, 1, 1));
    assert_eq!(ev.lines.len(), 3);
    let tests = outcomes(&ev);
    assert!(
        tests.contains(&("src/lib.rs::tests::fails".to_owned(), Outcome::Failed)),
        "{tests:?}"
    );
    assert!(
        tests.contains(&("tests/api.rs::public_api".to_owned(), Outcome::Passed)),
        "{tests:?}"
    );
    assert!(
        tests.contains(&(
            "doc mixed::src/lib.rs - add (line 3)".to_owned(),
            Outcome::Passed
        )),
        "{tests:?}"
    );
    assert!(
        tests.contains(&("src/lib.rs::tests::slow".to_owned(), Outcome::Skipped)),
        "{tests:?}"
    );
}

#[test]
fn node_test_runner_tap_and_spec() {
    let tap = evidence::node_test(capture!("node_tap")).unwrap();
    assert_eq!(
        (tap.passed, tap.failed, tap.skipped, tap.errors),
        (2, 1, 1, 0)
    );
    assert_eq!(
        outcomes(&tap),
        [
            ("adds".to_owned(), Outcome::Passed),
            ("later".to_owned(), Outcome::Skipped),
            ("subtracts".to_owned(), Outcome::Failed),
            ("suite > nested".to_owned(), Outcome::Passed),
        ]
    );
    assert!(
        tap.lines.contains(&"# pass 2".to_owned()),
        "{:?}",
        tap.lines
    );
    let spec = evidence::node_test(capture!("node_spec")).unwrap();
    assert_eq!((spec.passed, spec.failed, spec.skipped), (2, 1, 1));
    assert!(evidence::node_test(capture!("pytest_mixed")).is_none());
}

#[test]
fn a_file_node_gave_up_on_is_named_by_its_path_under_the_run() {
    let out = capture!("node_hang");
    let ev = evidence::node_test(out).unwrap();
    assert_eq!(
        outcomes(&ev),
        [
            ("double".to_owned(), Outcome::Passed),
            ("one digit".to_owned(), Outcome::Passed),
            ("test/b.test.js".to_owned(), Outcome::Failed),
        ]
    );
    assert_eq!((ev.passed, ev.errors), (2, 1), "node counts it cancelled");
    assert_eq!(evidence::node_timeouts(out), ["test/b.test.js"]);
    assert!(evidence::node_timeouts(capture!("node_tap")).is_empty());
}

#[test]
fn jest_and_mocha_counts_and_per_test_results() {
    let jest = evidence::jest(capture!("jest_mixed")).unwrap();
    assert_eq!((jest.passed, jest.failed, jest.skipped), (1, 1, 1));
    assert_eq!(
        outcomes(&jest),
        [
            (
                "test/calc.test.js › calc › adds".to_owned(),
                Outcome::Passed
            ),
            (
                "test/calc.test.js › calc › later".to_owned(),
                Outcome::Skipped
            ),
            (
                "test/calc.test.js › calc › subtracts".to_owned(),
                Outcome::Failed
            ),
        ]
    );
    let mocha = evidence::mocha(capture!("mocha_mixed")).unwrap();
    assert_eq!((mocha.passed, mocha.failed, mocha.skipped), (1, 1, 1));
    assert_eq!(
        outcomes(&mocha),
        [
            ("calc › adds".to_owned(), Outcome::Passed),
            ("calc › later".to_owned(), Outcome::Skipped),
            ("calc › subtracts".to_owned(), Outcome::Failed),
        ]
    );
    assert!(
        mocha.lines.contains(&"1 failing".to_owned()),
        "{:?}",
        mocha.lines
    );
    assert!(evidence::jest(capture!("mocha_mixed")).is_none());
    assert!(evidence::mocha(capture!("jest_mixed")).is_none());
}

#[test]
fn a_plain_summary_and_automakes_block() {
    let ev = evidence::plain(capture!("make_check")).unwrap();
    assert_eq!((ev.passed, ev.failed, ev.executed()), (2, 1, 3));
    assert_eq!(ev.lines, ["2 passed, 1 failed"]);
    let automake = "PASS: t1\nFAIL: t2\n====\n# TOTAL: 3\n# PASS:  1\n# SKIP:  1\n# XFAIL: 0\n# FAIL:  1\n# XPASS: 0\n# ERROR: 0\n";
    let ev = evidence::plain(automake).unwrap();
    assert_eq!(
        (ev.runner.as_str(), ev.passed, ev.failed, ev.skipped),
        ("automake", 1, 1, 1)
    );
    assert!(evidence::plain("make: *** No rule to make target 'check'.  Stop.\n").is_none());
}

#[test]
fn ctest_counts_and_per_test_results() {
    let ev = evidence::ctest(capture!("ctest_mixed")).unwrap();
    assert_eq!((ev.passed, ev.failed, ev.executed()), (2, 1, 3));
    assert_eq!(
        outcomes(&ev),
        [
            ("adds".to_owned(), Outcome::Passed),
            ("adds_zero".to_owned(), Outcome::Passed),
            ("subtracts".to_owned(), Outcome::Failed),
        ]
    );
    assert_eq!(ev.lines, ["67% tests passed, 1 tests failed out of 3"]);
    let none = evidence::ctest(capture!("ctest_none")).unwrap();
    assert_eq!(none.executed(), 0);
}

#[test]
fn a_cargo_build_failure_is_no_evidence() {
    assert_eq!(
        include_str!("../fixtures/output/cargo_broken.code").trim(),
        "101"
    );
    assert!(evidence::cargo(capture!("cargo_broken")).is_none());
}

#[test]
fn each_parser_finds_nothing_in_another_runners_output() {
    assert!(evidence::cargo(capture!("pytest_mixed")).is_none());
    assert!(evidence::pytest(capture!("cargo_mixed")).is_none());
    assert!(evidence::unittest(capture!("cargo_mixed")).is_none());
}

#[test]
fn ansi_colours_are_stripped_before_parsing() {
    let coloured = "\u{1b}[31m\u{1b}[1m==== 2 failed, 5 passed in 0.10s ====\u{1b}[0m\n";
    assert_eq!(
        evidence::strip_ansi(coloured),
        "==== 2 failed, 5 passed in 0.10s ====\n"
    );
    let ev = evidence::pytest(coloured).unwrap();
    assert_eq!((ev.passed, ev.failed), (5, 2));
}

#[test]
fn verdicts_serialise_as_snake_case_and_say_whether_work_goes_on() {
    let all = [
        (Verdict::Bootstrapped, "\"bootstrapped\"", true),
        (
            Verdict::FailedDeterministic,
            "\"failed_deterministic\"",
            false,
        ),
        (
            Verdict::UnsupportedEcosystem,
            "\"unsupported_ecosystem\"",
            false,
        ),
        (Verdict::FailedAgentic, "\"failed_agentic\"", false),
        (Verdict::Skipped, "\"skipped\"", true),
    ];
    for (verdict, json, goes_on) in all {
        assert_eq!(serde_json::to_string(&verdict).unwrap(), json);
        assert_eq!(verdict.lets_work_go_on(), goes_on, "{verdict:?}");
    }
}

/// A repository of `files` (path, content) in a temporary directory.
fn repo(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, content) in files {
        let full = dir.path().join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, content).unwrap();
    }
    dir
}

/// `name: marker => command` for each detected stack.
fn detected(files: &[(&str, &str)]) -> Vec<String> {
    let dir = repo(files);
    forq_bootstrap::detect(dir.path())
        .iter()
        .map(|s| format!("{}: {} => {}", s.name(), s.marker, s.command))
        .collect()
}

#[test]
fn python_projects_get_pytest_when_they_say_so_else_unittest() {
    assert_eq!(
        detected(&[("pyproject.toml", "[project]\nname = \"x\"\n\n[tool.pytest.ini_options]\naddopts = \"-q\"\n"), ("tests/test_x.py", "")]),
        ["pytest: pyproject.toml [tool.pytest.ini_options] => .forq/venv/bin/python -m pytest -v"]
    );
    assert_eq!(
        detected(&[("conftest.py", ""), ("test_a.py", "")])[0],
        "pytest: conftest.py => .forq/venv/bin/python -m pytest -v"
    );
    // The marker names the file pytest itself reads: tox.ini before
    // setup.cfg, and a hidden `.pytest.ini`.
    assert_eq!(
        detected(&[
            (
                "setup.cfg",
                "[tool:pytest]
addopts = -q
"
            ),
            (
                "tox.ini",
                "[pytest]
addopts = -q
"
            )
        ])[0],
        "pytest: tox.ini [pytest] => .forq/venv/bin/python -m pytest -v"
    );
    assert_eq!(
        detected(&[(
            ".pytest.ini",
            "[pytest]
"
        )])[0],
        "pytest: .pytest.ini => .forq/venv/bin/python -m pytest -v"
    );
    assert_eq!(
        detected(&[
            ("calc.py", ""),
            ("tests/__init__.py", ""),
            ("tests/test_calc.py", "import unittest\n")
        ]),
        ["unittest: test*.py files => python3 -m unittest -v"]
    );
    // The same TestCases in a tests/ that is not a package: unittest's
    // discovery would run none of them (uritemplate 3.0.1 is laid out so).
    assert_eq!(
        detected(&[
            ("calc.py", ""),
            ("tests/test_calc.py", "from unittest import TestCase
")
        ]),
        ["pytest: test files outside packages (unittest's discovery skips them) => .forq/venv/bin/python -m pytest -v"]
    );
    // The install steps: a venv, the project with its test extra, test requirements.
    let dir = repo(&[
        ("pyproject.toml", "[project]\nname = \"x\"\n[project.optional-dependencies]\ntest = [\"pytest\"]\n[tool.pytest.ini_options]\n"),
        ("requirements-test.txt", "hypothesis\n"),
        // Test data, not requirements (boltons keeps such a file in tests/).
        ("tests/jsonl_test_data.txt", "{\"a\": 1}\n"),
    ]);
    let stacks = forq_bootstrap::detect(dir.path());
    assert_eq!(
        stacks[0].install,
        [
            "python3 -m venv .forq/venv",
            ".forq/venv/bin/pip install -e '.[test]'",
            ".forq/venv/bin/pip install -r requirements-test.txt",
            ".forq/venv/bin/pip install pytest",
        ]
    );
}

/// What the tests need, from where the project declares it, each source
/// named: Poetry's dev group (PyYAML and pytest, as one Poetry project on
/// PyPI keeps them), and pytest in a Pipfile saying the runner.
#[test]
fn test_dependencies_are_read_where_the_project_declares_them() {
    let dir = repo(&[
        (
            "pyproject.toml",
            "[tool.poetry]\nname = \"x\"\n\n[tool.poetry.dependencies]\npython = \"^3.8\"\n\n\
             [tool.poetry.dev-dependencies]\npytest = \"^7.0\"\nPyYAML = \"^6.0\"\n\n\
             [build-system]\nrequires = [\"poetry-core\"]\nbuild-backend = \"poetry.core.masonry.api\"\n",
        ),
        ("tests/test_x.py", ""),
    ]);
    let stack = forq_bootstrap::detect(dir.path()).remove(0);
    assert_eq!(
        stack.install,
        [
            "python3 -m venv .forq/venv",
            ".forq/venv/bin/pip install -e .",
            ".forq/venv/bin/pip install 'PyYAML>=6.0,<7' 'pytest>=7.0,<8'",
            ".forq/venv/bin/pip install pytest",
        ]
    );
    assert_eq!(
        stack.declared,
        ["pyproject.toml [tool.poetry.dev-dependencies]: PyYAML>=6.0,<7, pytest>=7.0,<8"]
    );
    assert_eq!(
        detected(&[
            ("Pipfile", "[packages]\n\n[dev-packages]\npytest = \"*\"\n"),
            ("test_x.py", "import unittest\n"),
        ]),
        ["pytest: test*.py files and pytest in Pipfile [dev-packages] => .forq/venv/bin/python -m pytest -v"]
    );
}

/// `npm test` chaining a node run and a browser run (querystring-es3's
/// `npm run test-node && npm run test-browser && npm run test-tap`): the
/// gate runs the node parts, and says which it left out.
#[test]
fn a_test_chain_with_a_browser_run_keeps_its_node_parts() {
    let pkg = r#"{"name": "q", "scripts": {"test": "npm run test-node && npm run test-browser && npm run test-tap",
        "test-node": "node ./test/common-index.js", "test-browser": "node ./node_modules/phantomify/bin/cmd.js ./test/common-index.js",
        "test-tap": "node ./test/tap-index.js"}}"#;
    assert_eq!(
        detected(&[("package.json", pkg)]),
        ["node: package.json test script: npm run test-node && npm run test-browser && npm run test-tap (the browser part left out: test-browser) => npm run test-node && npm run test-tap"]
    );
    // Nothing in a browser: npm test as written.
    let plain = r#"{"name": "q", "scripts": {"test": "npm run lint && npm run unit", "unit": "tape test/*.js", "lint": "eslint ."}}"#;
    assert_eq!(
        detected(&[("package.json", plain)]),
        ["node: package.json test script: npm run lint && npm run unit => npm test"]
    );
}

#[test]
fn pytest_plugins_the_configuration_names_are_installed() {
    let pytest = |files: &[(&str, &str)]| {
        let stack = forq_bootstrap::detect(repo(files).path()).remove(0);
        (
            stack.install.last().cloned().unwrap_or_default(),
            stack.command,
        )
    };
    // pydash 5.0.1's setup.cfg: coverage options on indented lines, and
    // a `dev` extra (with what its docs and tasks import) to install.
    let setup_cfg = "[metadata]\nname = x\n\n[options.extras_require]\ndev =\n\tinvoke\n\tpytest-cov\n\n[tool:pytest]\njunit_family = xunit2\naddopts =\n\t--verbose\n\t--no-cov-on-fail\n\t--cov-fail-under=100\n\n[coverage:run]\nbranch = True\n";
    assert_eq!(
        pytest(&[
            ("setup.py", "import setuptools\nsetuptools.setup()\n"),
            ("setup.cfg", setup_cfg),
            ("tests/test_x.py", "")
        ]),
        (
            ".forq/venv/bin/pip install pytest pytest-cov".to_owned(),
            ".forq/venv/bin/python -m pytest -v --no-cov".to_owned()
        )
    );
    let dir = repo(&[("setup.py", ""), ("setup.cfg", setup_cfg)]);
    assert_eq!(
        forq_bootstrap::detect(dir.path())[0].install[1],
        ".forq/venv/bin/pip install -e '.[dev]'"
    );
    // A TOML array over several lines, workers and a timeout key.
    let pyproject = "[tool.pytest.ini_options]\naddopts = [\n    \"-n\", \"auto\",\n    \"--cov=pkg\",\n]\ntimeout = 30\n\n[tool.coverage.run]\nbranch = true\n";
    assert_eq!(
        pytest(&[("pyproject.toml", pyproject)]),
        (
            ".forq/venv/bin/pip install pytest pytest-xdist pytest-cov pytest-timeout".to_owned(),
            ".forq/venv/bin/python -m pytest -v -n 0 --no-cov".to_owned()
        )
    );
    // pytest.ini wins over tox.ini, as pytest reads them.
    assert_eq!(
        pytest(&[
            ("pytest.ini", "[pytest]\naddopts = -ra --strict-markers\n"),
            ("tox.ini", "[pytest]\naddopts = --cov=x\n"),
        ]),
        (
            ".forq/venv/bin/pip install pytest".to_owned(),
            ".forq/venv/bin/python -m pytest -v".to_owned()
        )
    );
    // A section that ends before an option-like line of the next one.
    assert_eq!(
        pytest(&[(
            "tox.ini",
            "[pytest]\naddopts = -ra\n[testenv]\ncommands = pytest -n 4 --cov\n"
        )])
        .0,
        ".forq/venv/bin/pip install pytest"
    );
}

#[test]
fn node_needs_a_real_test_script() {
    assert!(detected(&[(
        "package.json",
        r#"{"scripts": {"test": "echo \"Error: no test specified\" && exit 1"}}"#
    )])
    .is_empty());
    assert_eq!(
        detected(&[
            ("package.json", r#"{"scripts": {"test": "node --test"}}"#),
            ("package-lock.json", "{}")
        ]),
        ["node: package.json test script: node --test => npm test"]
    );
    let dir = repo(&[(
        "package.json",
        r#"{"packageManager": "pnpm@9.0.0", "scripts": {"test": "vitest run"}}"#,
    )]);
    let stacks = forq_bootstrap::detect(dir.path());
    assert_eq!(
        (stacks[0].install[0].as_str(), stacks[0].command.as_str()),
        ("npx --yes pnpm install", "npx --yes pnpm test")
    );
}

#[test]
fn native_runners_and_makefiles() {
    assert_eq!(
        detected(&[("Cargo.toml", "[package]\n")]),
        ["rust: Cargo.toml => cargo test --workspace --no-fail-fast --offline"]
    );
    assert_eq!(
        detected(&[("go.mod", "module x\n\ngo 1.22\n")]),
        ["go: go.mod without requirements => GOPROXY=off GOTOOLCHAIN=local go test -v ./..."]
    );
    // Vendored requirements build offline.
    assert_eq!(
        detected(&[
            ("go.mod", "module x\n\nrequire github.com/a/b v1.0.0\n"),
            ("vendor/modules.txt", "# github.com/a/b v1.0.0\n"),
        ]),
        ["go: go.mod with vendor/ => GOPROXY=off GOTOOLCHAIN=local GOFLAGS=-mod=vendor go test -v ./..."]
    );
    // External requirements and no vendor directory: it cannot build offline.
    assert!(detected(&[("go.mod", "module x\n\nrequire github.com/a/b v1.0.0\n")]).is_empty());
    assert_eq!(
        detected(&[("CMakeLists.txt", "project(x C)\nenable_testing()\nadd_test(NAME t COMMAND t)\n")]),
        ["cmake: CMakeLists.txt with tests => cmake --build .forq/build -j2 && ctest --test-dir .forq/build --output-on-failure --no-tests=error"]
    );
    // CMake without tests is not a test stack.
    assert!(detected(&[("CMakeLists.txt", "project(x C)\nadd_executable(x x.c)\n")]).is_empty());
    assert_eq!(
        detected(&[(
            "Makefile",
            "all:\n\tcc x.c\n\ncheck: all\n\t./x --selftest\n"
        )]),
        ["make: Makefile target check => make check"]
    );
    assert_eq!(
        detected(&[(
            "meson.build",
            "project('x', 'c')\ntest('t', executable('t', 't.c'))\n"
        )]),
        ["meson: meson.build with test() => meson test -C .forq/build"]
    );
    assert!(detected(&[("README.md", "# nothing to run\n")]).is_empty());
}

#[test]
fn a_monorepo_lists_every_stack_cheapest_first() {
    let stacks = detected(&[
        ("pom.xml", "<project/>"),
        ("Cargo.toml", "[workspace]\n"),
        ("pytest.ini", "[pytest]\n"),
        ("web/package.json", "{}"),
    ]);
    let names: Vec<&str> = stacks
        .iter()
        .map(|s| s.split(':').next().unwrap())
        .collect();
    assert_eq!(names, ["pytest", "rust", "maven"]);
}

/// The gate on `repo` with the machine's isolating backend (native, else
/// docker) and `options`.
async fn gate(
    repo: &std::path::Path,
    options: forq_bootstrap::GateOptions,
) -> forq_bootstrap::Record {
    let backend = forq_sandbox::open_backend(forq_sandbox::BackendChoice::Auto)
        .await
        .expect("an isolating backend (CI runs as root, with docker)")
        .backend;
    forq_bootstrap::run(&*backend, repo, &options)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_project_with_a_failing_test_is_bootstrapped() {
    // examples/calc: unittest, one test passes, one fails (add subtracts).
    let calc = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/calc");
    let record = gate(&calc, forq_bootstrap::GateOptions::default()).await;
    assert_eq!(record.verdict, Verdict::Bootstrapped, "{record:#?}");
    assert_eq!(
        (record.tests_executed, record.passed, record.failed),
        (2, 1, 1)
    );
    assert_eq!(
        record.tests.get("tests.test_calc.CalcTest.test_add"),
        Some(&Outcome::Failed)
    );
    assert_eq!(record.stacks[0].command, "python3 -m unittest -v");
    assert!(
        record.evidence.iter().any(|l| l.starts_with("Ran 2 tests")),
        "{:?}",
        record.evidence
    );
}

#[tokio::test]
async fn nothing_to_run_is_unsupported_and_skip_runs_nothing() {
    let dir = repo(&[("README.md", "# notes\n")]);
    let record = gate(dir.path(), forq_bootstrap::GateOptions::default()).await;
    assert_eq!(record.verdict, Verdict::UnsupportedEcosystem);
    assert!(record.stacks.is_empty());
    let skipped = gate(
        dir.path(),
        forq_bootstrap::GateOptions::default().skip(true),
    )
    .await;
    assert_eq!(skipped.verdict, Verdict::Skipped);
}

#[tokio::test]
async fn an_import_error_is_no_green() {
    let dir = repo(&[
        ("tests/__init__.py", ""),
        (
            "tests/test_x.py",
            "import missing_module_xyz\n\ndef test_x():\n    pass\n",
        ),
    ]);
    let record = gate(dir.path(), forq_bootstrap::GateOptions::default()).await;
    assert_eq!(record.verdict, Verdict::FailedDeterministic, "{record:#?}");
    assert!(
        record.reason.contains("failed to load"),
        "{}",
        record.reason
    );
    assert_eq!(record.tests_executed, 0);
}

#[tokio::test]
async fn a_runner_that_finds_no_tests_is_no_green() {
    let dir = repo(&[
        ("tests/__init__.py", ""),
        ("tests/test_helpers.py", "def helper():\n    return 1\n"),
    ]);
    let record = gate(dir.path(), forq_bootstrap::GateOptions::default()).await;
    assert_eq!(record.verdict, Verdict::FailedDeterministic, "{record:#?}");
    assert!(record.reason.contains("no tests ran"), "{}", record.reason);
}

#[tokio::test]
async fn a_hang_past_the_runs_timeout_is_named_when_it_can_be_and_a_missing_runner_says_so() {
    // A test that sleeps past the whole run's budget: named, failed, and
    // the runner works, so the repository bootstraps.
    let dir = repo(&[
        ("tests/__init__.py", ""),
        ("tests/test_hang.py", "import time, unittest\n\nclass T(unittest.TestCase):\n    def test_hang(self):\n        time.sleep(3600)\n"),
    ]);
    let options = forq_bootstrap::GateOptions::default().timeout(std::time::Duration::from_secs(3));
    let started = std::time::Instant::now();
    let record = gate(dir.path(), options.clone()).await;
    assert_eq!(record.verdict, Verdict::Bootstrapped, "{record:#?}");
    assert!(
        record
            .reason
            .contains("1 hung: tests.test_hang.T.test_hang"),
        "{}",
        record.reason
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
    // A hang before any test starts (at import) names none: a timeout.
    let dir = repo(&[
        ("tests/__init__.py", ""),
        ("tests/test_hang.py", "import time, unittest\ntime.sleep(3600)\n\nclass T(unittest.TestCase):\n    def test_x(self):\n        pass\n"),
    ]);
    let record = gate(dir.path(), options).await;
    assert_eq!(record.verdict, Verdict::FailedDeterministic, "{record:#?}");
    assert!(
        record.reason.contains("timed out after 3 s"),
        "{}",
        record.reason
    );

    let dir = repo(&[("Makefile", "check:\n\tforq-no-such-runner --all\n")]);
    let record = gate(dir.path(), forq_bootstrap::GateOptions::default()).await;
    assert_eq!(record.verdict, Verdict::FailedDeterministic, "{record:#?}");
    assert!(
        record.reason.contains("no evidence of a test run"),
        "{}",
        record.reason
    );
    assert!(
        record.stacks[0].output_tail.contains("forq-no-such-runner"),
        "{:?}",
        record.stacks[0].output_tail
    );
}

/// A test command the sandbox cannot run (exit 127) says what the sandbox
/// made of its program: not on `PATH` at all, or found, and what that file
/// is. Without it the one such failure seen in CI (`python3` exiting 127
/// in a native sandbox, once) could not say which layer lacked it.
#[tokio::test]
async fn a_program_the_sandbox_cannot_run_is_looked_for_there() {
    // A program not on PATH at all; and a script that is there, whose
    // `#!` interpreter is not: found, and named with its file.
    let cases = [
        (
            None,
            "forq-no-such-runner --all",
            "in the sandbox, forq-no-such-runner is not on PATH=/",
        ),
        (
            Some("#!/forq/no/such/interpreter\n"),
            "./run-tests",
            "in the sandbox, ./run-tests is ./run-tests: -rwxr-xr-x",
        ),
    ];
    for (script, command, seen) in cases {
        let dir = repo(&[("tests/__init__.py", "")]);
        if let Some(script) = script {
            let path = dir.path().join("run-tests");
            std::fs::write(&path, script).unwrap();
            std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
                .unwrap();
        }
        let stack = forq_bootstrap::Stack::custom("test", Vec::new(), command);
        let options = forq_bootstrap::GateOptions::default().recipes(vec![stack]);
        let record = gate(dir.path(), options).await;
        assert_eq!(record.verdict, Verdict::FailedDeterministic, "{record:#?}");
        assert!(
            record.reason.contains("could not run (exit 127") && record.reason.contains(seen),
            "{}",
            record.reason
        );
    }
}

#[tokio::test]
async fn a_green_verdict_is_cached_by_commit_and_changes() {
    let calc = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/calc");
    let dir = repo(&[
        (
            "calc.py",
            &std::fs::read_to_string(calc.join("calc.py")).unwrap(),
        ),
        ("tests/__init__.py", ""),
        (
            "tests/test_calc.py",
            &std::fs::read_to_string(calc.join("tests/test_calc.py")).unwrap(),
        ),
    ]);
    for args in [
        &["init", "-q"][..],
        &["add", "."],
        &["commit", "-q", "-m", "calc"],
    ] {
        let out = forq_sandbox::host_command("git")
            .args(["-c", "user.name=forq", "-c", "user.email=forq@localhost"])
            .args(args)
            .current_dir(dir.path())
            .output()
            .await
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    }
    let options = forq_bootstrap::GateOptions::default();
    let first = gate(dir.path(), options.clone()).await;
    assert_eq!(
        (first.verdict, first.cached),
        (Verdict::Bootstrapped, false),
        "{first:#?}"
    );
    assert!(dir.path().join(".forq/bootstrap/manifest.json").is_file());
    // Same commit, same changes: the manifest answers, nothing runs.
    let second = gate(dir.path(), options.clone()).await;
    assert_eq!(
        (second.verdict, second.cached),
        (Verdict::Bootstrapped, true)
    );
    assert_eq!(second.tests, first.tests);
    // --no-cache runs anyway.
    let forced = gate(dir.path(), options.clone().no_cache(true)).await;
    assert!(!forced.cached);
    // An uncommitted change is another key.
    std::fs::write(
        dir.path().join("calc.py"),
        "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n",
    )
    .unwrap();
    let changed = gate(dir.path(), options).await;
    assert!(!changed.cached, "{changed:#?}");
    assert_eq!((changed.passed, changed.failed), (2, 0));
}

#[tokio::test]
async fn a_makefile_check_target_with_a_plain_summary_is_bootstrapped() {
    let dir = repo(&[
        ("Makefile", "check:\n\t@sh ./run-tests.sh\n"),
        (
            "run-tests.sh",
            "echo 'PASS: one'\necho 'FAIL: two'\necho '1 passed, 1 failed'\nexit 1\n",
        ),
    ]);
    let record = gate(dir.path(), forq_bootstrap::GateOptions::default()).await;
    assert_eq!(record.verdict, Verdict::Bootstrapped, "{record:#?}");
    assert_eq!((record.passed, record.failed), (1, 1));
    assert_eq!(record.stacks[0].command, "make check");
}

#[tokio::test]
async fn a_cmake_project_with_ctest_is_bootstrapped() {
    let dir = repo(&[
        ("CMakeLists.txt", "cmake_minimum_required(VERSION 3.13)\nproject(mixed C)\nenable_testing()\nadd_executable(check_add check_add.c)\nadd_test(NAME adds COMMAND check_add 2 3 5)\nadd_test(NAME subtracts COMMAND check_add 3 1 2)\n"),
        ("check_add.c", "#include <stdlib.h>\nint main(int argc, char **argv) {\n    return argc == 4 && atoi(argv[1]) + atoi(argv[2]) == atoi(argv[3]) ? 0 : 1;\n}\n"),
    ]);
    let record = gate(dir.path(), forq_bootstrap::GateOptions::default()).await;
    assert_eq!(record.verdict, Verdict::Bootstrapped, "{record:#?}");
    assert_eq!((record.passed, record.failed), (1, 1));
    assert_eq!(record.tests.get("subtracts"), Some(&Outcome::Failed));
}

#[test]
fn test_files_that_import_pytest_get_pytest_and_their_requirement_files() {
    let dir = repo(&[
        (
            "pyproject.toml",
            "[project]\nname = \"p\"\nversion = \"1\"\n",
        ),
        ("tests/requirements.txt", "pytest\npretend\n"),
        (
            "tests/test_x.py",
            "import pytest\n\ndef test_x():\n    pass\n",
        ),
    ]);
    let stacks = forq_bootstrap::detect(dir.path());
    assert_eq!(stacks[0].name(), "pytest");
    assert_eq!(stacks[0].marker, "test files that import pytest");
    assert!(
        stacks[0]
            .install
            .contains(&".forq/venv/bin/pip install -r tests/requirements.txt".to_owned()),
        "{:?}",
        stacks[0].install
    );
    // Without the import, the same layout is pytest's still (unittest's
    // discovery does not enter a tests/ that is not a package), and
    // unittest's once tests/ is a package.
    std::fs::write(
        dir.path().join("tests/test_x.py"),
        "import unittest\n\nclass T(unittest.TestCase):\n    def test_x(self):\n        pass\n",
    )
    .unwrap();
    std::fs::remove_file(dir.path().join("tests/requirements.txt")).unwrap();
    assert_eq!(forq_bootstrap::detect(dir.path())[0].name(), "pytest");
    std::fs::write(dir.path().join("tests/__init__.py"), "").unwrap();
    assert_eq!(forq_bootstrap::detect(dir.path())[0].name(), "unittest");
}

#[test]
fn each_stack_knows_its_test_files() {
    let stack = |files: &[(&str, &str)]| forq_bootstrap::detect(repo(files).path()).remove(0);
    let py = stack(&[("pytest.ini", "[pytest]\n")]);
    assert!(py.is_test_file("tests/test_calc.py") && py.is_test_file("pkg/calc_test.py"));
    assert!(py.is_test_file("conftest.py") && !py.is_test_file("pkg/calc.py"));
    // A test directory's support modules are never edited either.
    assert!(py.is_test_file("tests/__init__.py") && py.is_test_file("pkg/tests/helpers.py"));
    assert!(
        !py.is_test_file("pkg/testing_utils/calc.py") && !py.is_test_file("src/pkg/contest.py")
    );
    let node = stack(&[("package.json", r#"{"scripts": {"test": "jest"}}"#)]);
    assert!(node.is_test_file("src/calc.test.ts") && node.is_test_file("src/__tests__/calc.js"));
    assert!(!node.is_test_file("src/calc.js") && !node.is_test_file("test/fixture.json"));
    let rust = stack(&[("Cargo.toml", "[package]\n")]);
    assert!(rust.is_test_file("tests/api.rs") && rust.is_test_file("crates/a/tests/api.rs"));
    assert!(!rust.is_test_file("src/lib.rs"));
    let go = stack(&[("go.mod", "module x\n")]);
    assert!(go.is_test_file("calc/calc_test.go") && !go.is_test_file("calc/calc.go"));
    let maven = stack(&[("pom.xml", "<project/>")]);
    assert!(maven.is_test_file("src/test/java/calc/CalcTest.java"));
    assert!(!maven.is_test_file("src/main/java/calc/Calc.java"));
    let make = stack(&[("Makefile", "check:\n\t./t\n")]);
    assert!(make.is_test_file("tests/run.sh") && make.is_test_file("src/test_calc.c"));
    assert!(!make.is_test_file("src/calc.c"));
}

#[test]
fn bare_test_functions_are_pytest_style() {
    // Like toolz: `pkg/tests/test_*.py` with plain functions, no unittest.
    let bare = detected(&[
        ("pkg/__init__.py", ""),
        (
            "pkg/tests/test_calc.py",
            "def test_add():\n    assert 1 + 1 == 2\n",
        ),
    ]);
    assert_eq!(
        bare,
        ["pytest: test files without unittest (pytest style) => .forq/venv/bin/python -m pytest -v"]
    );
}
