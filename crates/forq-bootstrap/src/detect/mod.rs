//! Stack detection: which of the registered stacks a repository uses,
//! from its marker files alone (nothing is run), cheapest to try first.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::evidence::{self, Evidence};
use crate::runner;

mod python;

/// A stack the gate knows how to run.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::EnumIter,
)]
#[strum(serialize_all = "snake_case")]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum StackKind {
    /// pytest (configured, or tests in its layout).
    Pytest,
    /// Python's unittest, when nothing says pytest.
    Unittest,
    /// A package.json with a real `test` script.
    Node,
    /// Cargo.
    Rust,
    /// Go modules that build offline.
    Go,
    /// Maven.
    Maven,
    /// Gradle.
    Gradle,
    /// CMake with CTest.
    Cmake,
    /// Meson with tests.
    Meson,
    /// Autotools (`make check`).
    Autotools,
    /// A Makefile with a `test` or `check` target.
    Make,
    /// A recipe given rather than detected (a configuration's golden
    /// commands, or one the agentic fallback proposed): its output is read
    /// by whichever parser finds evidence in it.
    Custom,
}

/// A detected stack: what it is, why, and how to run it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Stack {
    /// Which stack.
    pub kind: StackKind,
    /// The marker that matched (a file, or a file and what it says).
    pub marker: String,
    /// Install and build steps, shell commands run in order.
    pub install: Vec<String>,
    /// The test command.
    pub command: String,
    /// Where the project declares what its tests need, each with what it
    /// gave the install steps (`pyproject.toml [dependency-groups] test:
    /// pytest, pyyaml`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub declared: Vec<String>,
    /// Install steps from what the project declares for development at
    /// large (a `dev` group or requirements file, where nothing names the
    /// tests'), run only on a second try when the tests miss a module.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dev_install: Vec<String>,
}

impl StackKind {
    /// The package ecosystems whose registries this kind's installs reach
    /// (names of [`forq_sandbox::registries`]); a custom recipe may use any.
    pub fn ecosystems(self) -> &'static [&'static str] {
        match self {
            StackKind::Pytest | StackKind::Unittest => &["python"],
            StackKind::Node => &["node"],
            StackKind::Rust => &["rust"],
            StackKind::Go => &["go"],
            StackKind::Maven | StackKind::Gradle => &["java"],
            StackKind::Custom => &["python", "node", "rust", "go", "java"],
            _ => &[],
        }
    }

    /// The kind named `name` (`pytest`, `node`, ...), as [`Stack::name`]
    /// writes it.
    pub fn from_name(name: &str) -> Option<StackKind> {
        name.parse().ok()
    }
}

impl Stack {
    /// The stack's name (`pytest`, `node`, ...).
    pub fn name(&self) -> &'static str {
        self.kind.into()
    }

    /// A recipe of one's own: install steps and a test command, run and
    /// judged like a detected stack's.
    pub fn custom(marker: &str, install: Vec<String>, command: &str) -> Stack {
        Stack {
            kind: StackKind::Custom,
            marker: marker.to_owned(),
            install,
            command: command.to_owned(),
            declared: Vec::new(),
            dev_install: Vec::new(),
        }
    }

    /// Whether `path` (relative to the repository, `/`-separated) is a test
    /// file by this stack's runner's conventions. Tests inside source
    /// files (Rust's `#[cfg(test)]` modules) are not test files.
    pub fn is_test_file(&self, path: &str) -> bool {
        let file = path.rsplit('/').next().unwrap_or(path);
        let (stem, ext) = file.split_once('.').unwrap_or((file, ""));
        let ext = ext.rsplit('.').next().unwrap_or(ext);
        let under = |dirs: &[&str]| path.split('/').rev().skip(1).any(|d| dirs.contains(&d));
        let named = stem.starts_with("test") || stem.ends_with("_test") || stem.ends_with("_tests");
        match self.kind {
            // A test directory's other modules (`tests/__init__.py` holding
            // a mixin of tests, helpers, fixtures) are tests' too.
            StackKind::Pytest | StackKind::Unittest => {
                ext == "py"
                    && (stem.starts_with("test")
                        || stem.ends_with("_test")
                        || stem == "conftest"
                        || under(&["test", "tests"]))
            }
            StackKind::Node => {
                matches!(
                    ext,
                    "js" | "mjs" | "cjs" | "ts" | "mts" | "cts" | "jsx" | "tsx"
                ) && (file.contains(".test.")
                    || file.contains(".spec.")
                    || under(&["__tests__", "test", "tests"]))
            }
            StackKind::Rust => ext == "rs" && under(&["tests"]),
            StackKind::Go => file.ends_with("_test.go"),
            StackKind::Maven | StackKind::Gradle => {
                matches!(ext, "java" | "kt" | "groovy" | "scala") && path.contains("src/test/")
            }
            _ => named || under(&["test", "tests", "testing", "t"]),
        }
    }

    /// Where the runner leaves JUnit XML reports (a `find -path` pattern
    /// relative to the workspace), for the stacks whose console output
    /// names no passing test.
    pub fn reports(&self) -> Option<&'static str> {
        match self.kind {
            StackKind::Maven => Some("*/surefire-reports/TEST-*.xml"),
            StackKind::Gradle => Some("*/test-results/*/TEST-*.xml"),
            _ => None,
        }
    }

    /// Reads the evidence of this stack's runner out of its output.
    pub fn parse(&self, output: &str) -> Option<Evidence> {
        match self.kind {
            StackKind::Pytest => evidence::pytest(output),
            StackKind::Unittest => evidence::unittest(output),
            // nextest's report quotes a failing test's own `test result:`.
            StackKind::Rust => evidence::nextest(output).or_else(|| evidence::cargo(output)),
            StackKind::Go => evidence::go_test_json(output).or_else(|| evidence::go_test(output)),
            StackKind::Make | StackKind::Autotools => evidence::plain(output),
            StackKind::Cmake => evidence::ctest(output),
            StackKind::Meson => evidence::meson(output),
            StackKind::Maven => evidence::maven(output),
            StackKind::Gradle => evidence::gradle(output),
            // Whichever runner the test script calls.
            StackKind::Node => evidence::node_test(output)
                .or_else(|| evidence::jest(output))
                .or_else(|| evidence::vitest(output))
                .or_else(|| evidence::mocha(output))
                .or_else(|| evidence::ava(output))
                .or_else(|| evidence::uvu(output)),
            StackKind::Custom => evidence::any(output),
        }
    }
}

/// The largest file detection reads (a manifest, a test file's head).
const MAX_READ: u64 = 1 << 20;

/// The repository's file `file` (relative to `root`) as text, read
/// beneath `root` without following a link, never a fifo or a device, at
/// most [`MAX_READ`] bytes: a repository's `pyproject.toml -> /dev/zero`
/// or `-> /etc/shadow` is no manifest.
fn read(root: &Path, file: &str) -> Option<String> {
    forq_sandbox::read_beneath(root, Path::new(file), MAX_READ)
        .ok()
        .flatten()
        .and_then(|bytes| String::from_utf8(bytes).ok())
}

/// The file at `path` (found by a walk that enters no link) as text, as
/// [`read`] reads one: from its directory, never through a link.
fn read_path(path: &Path) -> Option<String> {
    let (dir, name) = (path.parent()?, path.file_name()?);
    read(dir, name.to_str()?)
}

fn exists(root: &Path, file: &str) -> bool {
    root.join(file).exists()
}

/// Whether a Python test file (`test*.py`, `*_test.py`) under `dir`, at
/// most `depth` directories down, satisfies `wanted`.
fn any_test_file(dir: &Path, depth: u32, wanted: &dyn Fn(&Path) -> bool) -> bool {
    any_file_below(dir, depth, &|_| true, &|path, name| {
        (name.starts_with("test") && name.ends_with(".py") || name.ends_with("_test.py"))
            && wanted(path)
    })
}

/// Whether a file under `dir`, at most `depth` directories down, through
/// directories `enter` accepts (hidden ones and `node_modules` never),
/// satisfies `wanted` (given its path and name).
fn any_file_below(
    dir: &Path,
    depth: u32,
    enter: &dyn Fn(&Path) -> bool,
    wanted: &dyn Fn(&Path, &str) -> bool,
) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| {
        let name = e.file_name().to_string_lossy().into_owned();
        let path = e.path();
        // A link is never entered: its target may be anywhere.
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            depth > 0
                && !name.starts_with('.')
                && name != "node_modules"
                && enter(&path)
                && any_file_below(&path, depth - 1, enter, wanted)
        } else {
            wanted(&path, &name)
        }
    })
}

/// The package manifest of a project that ships no tests at all — a
/// manifest (`pyproject.toml`, `setup.py`, `setup.cfg`, `package.json`,
/// `go.mod`), and no file or directory whose name says test or spec
/// within four levels — as registries' packages often are; None when
/// there is no manifest or something looks like a test. (Not for crates:
/// their unit tests live in their sources.)
pub(crate) fn shipped_without_tests(root: &Path) -> Option<&'static str> {
    let manifest = [
        "pyproject.toml",
        "setup.py",
        "setup.cfg",
        "package.json",
        "go.mod",
    ]
    .into_iter()
    .find(|m| exists(root, m))?;
    let testish = |name: &str| {
        let n = name.to_ascii_lowercase();
        let stem = n.split('.').next().unwrap_or(&n);
        matches!(
            stem,
            "test" | "tests" | "testing" | "spec" | "specs" | "__tests__" | "t" | "conftest"
        ) || ["test_", "test-", "tests_"]
            .iter()
            .any(|p| stem.starts_with(p))
            || ["_test", "_tests", "-test", "-tests", "_spec"]
                .iter()
                .any(|s| stem.ends_with(s))
            || n.contains(".test.")
            || n.contains(".spec.")
    };
    let looks_tested = any_file_below(root, 4, &|_| true, &|path, _| {
        path.strip_prefix(root)
            .is_ok_and(|rel| rel.iter().any(|part| testish(&part.to_string_lossy())))
    });
    (!looks_tested).then_some(manifest)
}

/// Python test files under `dir`, `depth` levels down.
fn has_test_files(dir: &Path, depth: u32) -> bool {
    any_test_file(dir, depth, &|_| true)
}

/// Whether a test file under `dir` (two levels) imports pytest.
fn imports_pytest(dir: &Path) -> bool {
    any_test_file(dir, 2, &|path| {
        read_path(path).is_some_and(|text| {
            text.lines()
                .any(|l| l.starts_with("import pytest") || l.starts_with("from pytest"))
        })
    })
}

/// The Python install steps: a virtualenv, the project itself (with the
/// extras its tests need), the requirement files and requirements the
/// project declares for its tests ([`python::declared`]); and where each
/// was declared. Empty when the project declares nothing to install.
fn python_install(installable: bool, declared: &python::Declared) -> Vec<String> {
    let mut steps = vec!["python3 -m venv .forq/venv".to_owned()];
    steps.extend(declared_steps(installable, declared, false));
    if steps.len() == 1 {
        steps.clear(); // nothing to install: no virtualenv either
    }
    steps
}

/// Whether pip can install the project itself. A setup.cfg alone is not
/// enough (pip wants a setup.py or a pyproject.toml beside it).
fn installable(root: &Path) -> bool {
    let pyproject = read(root, "pyproject.toml").unwrap_or_default();
    exists(root, "setup.py")
        || pyproject.contains("[project]")
        || pyproject.contains("[build-system]")
}

/// The pip steps for what `declared` gives: the project (when
/// `installable`) with its extras (with none, only unless `extras_only`),
/// requirement files, requirements.
fn declared_steps(
    installable: bool,
    declared: &python::Declared,
    extras_only: bool,
) -> Vec<String> {
    let mut steps = Vec::new();
    if installable && !(extras_only && declared.extras.is_empty()) {
        steps.push(if declared.extras.is_empty() {
            ".forq/venv/bin/pip install -e .".to_owned()
        } else {
            let spec = format!(".[{}]", declared.extras.join(","));
            format!(
                ".forq/venv/bin/pip install -e {}",
                runner::single_quoted(&spec)
            )
        });
    }
    for file in &declared.files {
        steps.push(format!(
            ".forq/venv/bin/pip install -r {}",
            runner::quote(file)
        ));
    }
    if !declared.requirements.is_empty() {
        let words: Vec<String> = declared
            .requirements
            .iter()
            .map(|r| runner::quote(r))
            .collect();
        steps.push(format!(".forq/venv/bin/pip install {}", words.join(" ")));
    }
    steps
}

/// The files pytest reads its configuration from, with the section it
/// reads, in the order it looks (the first found wins).
const PYTEST_CONFIGS: [(&str, &str); 5] = [
    ("pytest.ini", "[pytest]"),
    (".pytest.ini", "[pytest]"),
    ("pyproject.toml", "[tool.pytest.ini_options]"),
    ("tox.ini", "[pytest]"),
    ("setup.cfg", "[tool:pytest]"),
];

/// The pytest configuration pytest itself would read: the first file of
/// [`PYTEST_CONFIGS`] holding its section (a `pytest.ini` wins even
/// without one), with the section's text.
fn pytest_config(root: &Path) -> Option<(&'static str, &'static str, String)> {
    PYTEST_CONFIGS.into_iter().find_map(|(file, header)| {
        let text = read(root, file)?;
        match section(&text, header) {
            Some(body) => Some((file, header, body)),
            None if file.contains("pytest.ini") => Some((file, header, String::new())),
            None => None,
        }
    })
}

/// The `key = value` entries of an INI or TOML section's text, a value
/// continued on the indented lines (and TOML array lines) after it.
fn entries(section: &str) -> impl Iterator<Item = (&str, String)> {
    let mut lines = section.lines().peekable();
    std::iter::from_fn(move || loop {
        let line = lines.next()?;
        let Some((key, first)) = line.split_once('=') else {
            continue;
        };
        if line.starts_with(char::is_whitespace) {
            continue;
        }
        let mut value = first.trim().to_owned();
        while let Some(next) = lines.peek() {
            let continued = next.starts_with(char::is_whitespace) && !next.trim().is_empty()
                || next.trim_start().starts_with(['"', '\'', ']']);
            if !continued {
                break;
            }
            value.push(' ');
            value.push_str(next.trim());
            lines.next();
        }
        return Some((key.trim(), value));
    })
}

/// The lines of an INI or TOML section, up to the next header.
fn section(text: &str, header: &str) -> Option<String> {
    let mut lines = text.lines();
    lines.by_ref().find(|l| l.trim() == header)?;
    let body: Vec<&str> = lines
        .take_while(|l| {
            let t = l.trim_end();
            !(l.starts_with('[') && t.ends_with(']') && t.len() > 2 && !t.starts_with("[\""))
        })
        .collect();
    Some(body.join("\n"))
}

/// What a pytest configuration needs beyond pytest: plugins its options
/// name (pytest alone stops at an option it does not know, exit 4), and
/// flags that keep the run one process reporting each test in order.
#[derive(Debug, Default, PartialEq, Eq)]
struct PytestNeeds {
    plugins: Vec<&'static str>,
    flags: Vec<&'static str>,
}

impl PytestNeeds {
    /// From the text of a pytest section: its `addopts` options, and the
    /// ini keys plugins add.
    fn of(config: &str) -> PytestNeeds {
        let mut needs = PytestNeeds::default();
        let mut add = |plugin: &'static str, flag: Option<&'static str>| {
            if !needs.plugins.contains(&plugin) {
                needs.plugins.push(plugin);
                needs.flags.extend(flag);
            }
        };
        for option in addopts(config) {
            let name = option.split('=').next().unwrap_or_default();
            if name.starts_with("--cov") || name.starts_with("--no-cov") {
                // Coverage is not the tests: measuring it slows every
                // run, fights forq's own line tracer, and its
                // `--cov-fail-under` would fail a green suite.
                add("pytest-cov", Some("--no-cov"));
            } else if matches!(name, "--numprocesses" | "--dist" | "--maxprocesses")
                || name.strip_prefix("-n").is_some_and(|n| {
                    n.is_empty() || n == "auto" || n.bytes().all(|b| b.is_ascii_digit())
                })
            {
                // Workers print outcomes out of order and hide which test
                // hangs: `-n 0` runs the tests in this process.
                add("pytest-xdist", Some("-n 0"));
            } else if name.starts_with("--timeout") {
                add("pytest-timeout", None);
            } else if name.starts_with("--reruns") {
                add("pytest-rerunfailures", None);
            } else if name.starts_with("--benchmark-") {
                add("pytest-benchmark", None);
            } else if name == "--asyncio-mode" {
                add("pytest-asyncio", None);
            }
        }
        for (key, _) in entries(config) {
            match key {
                "timeout" | "timeout_method" => add("pytest-timeout", None),
                "asyncio_mode" => add("pytest-asyncio", None),
                _ => {}
            }
        }
        needs
    }
}

/// The options of a pytest section's `addopts`: an INI value (continued
/// on indented lines) or a TOML string or array.
fn addopts(config: &str) -> Vec<String> {
    let Some((_, value)) = entries(config).find(|(key, _)| *key == "addopts") else {
        return Vec::new();
    };
    value
        .split(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | ',' | '[' | ']'))
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The pytest marker of a repository, if any.
fn pytest_marker(root: &Path) -> Option<String> {
    if let Some((file, header, _)) = pytest_config(root) {
        return Some(if file.contains("pytest.ini") {
            file.to_owned()
        } else {
            format!("{file} {header}")
        });
    }
    if exists(root, "conftest.py") || exists(root, "tests/conftest.py") {
        return Some("conftest.py".to_owned());
    }
    let tests = root.join("tests");
    if tests.is_dir() && has_test_files(&tests, 1) {
        // A tests/ package of test_*.py files is pytest's layout; a bare
        // unittest project gets unittest (below) when nothing else says pytest.
        let mentions = [
            "pyproject.toml",
            "setup.py",
            "setup.cfg",
            "tox.ini",
            "requirements-dev.txt",
            "requirements-test.txt",
        ]
        .iter()
        .any(|f| read(root, f).is_some_and(|t| t.contains("pytest")));
        if mentions {
            return Some("tests/test_*.py and pytest in the project's requirements".to_owned());
        }
    }
    if ["tests", "test", "testing"]
        .iter()
        .any(|d| imports_pytest(&root.join(d)))
    {
        return Some("test files that import pytest".to_owned());
    }
    // Bare `def test_*` functions are pytest's; unittest would find none.
    let unittest = |path: &Path| {
        read_path(path).is_some_and(|text| {
            text.contains("import unittest")
                || text.contains("from unittest")
                || text.contains("TestCase")
        })
    };
    if has_test_files(root, 2) && !any_test_file(root, 2, &unittest) {
        return Some("test files without unittest (pytest style)".to_owned());
    }
    // unittest's discovery enters only packages: `tests/test_x.py` without
    // a `tests/__init__.py` runs no test under `python -m unittest` (and
    // looks like a suite of none), but pytest finds it, TestCases included.
    if has_test_files(root, 2) && !unittest_discovers(root, 2) {
        return Some("test files outside packages (unittest's discovery skips them)".to_owned());
    }
    None
}

/// Whether `python -m unittest` run at `dir` finds a test file: a
/// `test*.py` there, or in a package below it (`depth` levels down).
fn unittest_discovers(dir: &Path, depth: u32) -> bool {
    any_file_below(
        dir,
        depth,
        &|sub| sub.join("__init__.py").is_file(),
        &|_, name| name.starts_with("test") && name.ends_with(".py"),
    )
}

/// The stacks of the repository at `root`, cheapest to try first. Empty:
/// no registered stack matched (`unsupported_ecosystem`).
pub fn detect(root: &Path) -> Vec<Stack> {
    // Java last: its dependencies usually need the network.
    [python, node, rust, go, cmake, meson, make, java]
        .iter()
        .filter_map(|stack_of| stack_of(root))
        .collect()
}

/// A detected stack.
fn stack(kind: StackKind, marker: &str, install: Vec<String>, command: &str) -> Stack {
    Stack {
        kind,
        marker: marker.to_owned(),
        install,
        command: command.to_owned(),
        declared: Vec::new(),
        dev_install: Vec::new(),
    }
}

/// pytest where it is configured or imported, else unittest where it finds
/// test files.
fn python(root: &Path) -> Option<Stack> {
    let declared = python::declared(root);
    let marker = pytest_marker(root).or_else(|| {
        // pytest among what the tests need, wherever it is declared.
        let source = declared.pytest.as_deref()?;
        has_test_files(root, 2).then(|| format!("test*.py files and pytest in {source}"))
    });
    let installable = installable(root);
    let mut stack = python_of(root, marker, python_install(installable, &declared))?;
    if let Some(dev) = &declared.dev {
        stack.dev_install = declared_steps(installable, dev, true);
        stack.declared.extend(
            dev.sources
                .iter()
                .map(|s| format!("if the tests miss a module: {s}")),
        );
    }
    stack.declared.splice(0..0, declared.sources);
    Some(stack)
}

fn python_of(root: &Path, pytest: Option<String>, mut install: Vec<String>) -> Option<Stack> {
    if let Some(marker) = pytest {
        if install.is_empty() {
            install.push("python3 -m venv .forq/venv".to_owned());
        }
        let needs = pytest_config(root)
            .map(|(_, _, body)| PytestNeeds::of(&body))
            .unwrap_or_default();
        let mut pip = String::from(".forq/venv/bin/pip install pytest");
        for plugin in &needs.plugins {
            pip.push(' ');
            pip.push_str(plugin);
        }
        install.push(pip);
        let mut command = String::from(".forq/venv/bin/python -m pytest -v");
        for flag in &needs.flags {
            command.push(' ');
            command.push_str(flag);
        }
        return Some(stack(StackKind::Pytest, &marker, install, &command));
    } else if has_test_files(root, 2) {
        let python = if install.is_empty() {
            "python3"
        } else {
            ".forq/venv/bin/python"
        };
        return Some(stack(
            StackKind::Unittest,
            "test*.py files",
            install,
            &format!("{python} -m unittest -v"),
        ));
    }
    None
}

/// Node: a real test script, not npm's placeholder.
fn node(root: &Path) -> Option<Stack> {
    if let Some(pkg) = read(root, "package.json") {
        let script = package_test_script(&pkg);
        if let Some(script) =
            script.filter(|s| !s.contains("no test specified") && !s.trim().is_empty())
        {
            let manager = if pkg.contains("\"packageManager\": \"pnpm")
                || pkg.contains("\"packageManager\":\"pnpm")
            {
                "pnpm"
            } else if pkg.contains("\"packageManager\": \"yarn")
                || pkg.contains("\"packageManager\":\"yarn")
            {
                "yarn"
            } else {
                "npm"
            };
            let install = match manager {
                "npm"
                    if exists(root, "package-lock.json") || exists(root, "npm-shrinkwrap.json") =>
                {
                    "npm ci"
                }
                "npm" => "npm install",
                "pnpm" => "npx --yes pnpm install",
                _ => "npx --yes yarn install",
            };
            let test = match manager {
                "npm" => "npm test",
                "pnpm" => "npx --yes pnpm test",
                _ => "npx --yes yarn test",
            };
            // A chain with a browser run in it: its node parts alone.
            if let (Some((command, dropped)), "npm") = (without_browser_parts(&pkg), manager) {
                return Some(stack(
                    StackKind::Node,
                    &format!(
                        "package.json test script: {script} (the browser part left out: {})",
                        dropped.join(", ")
                    ),
                    vec![install.to_owned()],
                    &command,
                ));
            }
            return Some(stack(
                StackKind::Node,
                &format!("package.json test script: {script}"),
                vec![install.to_owned()],
                test,
            ));
        }
    }
    None
}

/// Cargo.
fn rust(root: &Path) -> Option<Stack> {
    if exists(root, "Cargo.toml") {
        return Some(stack(
            StackKind::Rust,
            "Cargo.toml",
            vec!["cargo fetch".to_owned()],
            "cargo test --workspace --no-fail-fast --offline",
        ));
    }
    None
}

/// Go, offline only: no external requirements, or vendored ones.
fn go(root: &Path) -> Option<Stack> {
    if let Some(gomod) = read(root, "go.mod") {
        // Offline only: no external requirements, or vendored ones.
        let external = gomod.lines().any(|l| l.trim_start().starts_with("require"));
        let vendored = root.join("vendor").is_dir();
        if !external || vendored {
            // No module proxy, no toolchain download: what is here builds.
            let flags = if vendored { " GOFLAGS=-mod=vendor" } else { "" };
            return Some(stack(
                StackKind::Go,
                if vendored {
                    "go.mod with vendor/"
                } else {
                    "go.mod without requirements"
                },
                Vec::new(),
                &format!("GOPROXY=off GOTOOLCHAIN=local{flags} go test -v ./..."),
            ));
        }
    }
    None
}

/// C and C++ with CTest.
fn cmake(root: &Path) -> Option<Stack> {
    if let Some(cmake) = read(root, "CMakeLists.txt") {
        let testing = [
            "enable_testing",
            "add_test",
            "include(CTest)",
            "gtest_discover_tests",
            "catch_discover_tests",
        ]
        .iter()
        .any(|m| cmake.contains(m));
        if testing {
            return Some(stack(
                StackKind::Cmake,
                "CMakeLists.txt with tests",
                vec![
                    "cmake -S . -B .forq/build".to_owned(),
                    "cmake --build .forq/build -j2".to_owned(),
                ],
                // Rebuilt first: a changed source must be compiled before
                // its tests run (a no-op right after the install steps).
                "cmake --build .forq/build -j2 && ctest --test-dir .forq/build --output-on-failure --no-tests=error",
            ));
        }
    }
    None
}

/// Meson with tests.
fn meson(root: &Path) -> Option<Stack> {
    if read(root, "meson.build").is_some_and(|m| m.contains("test(")) {
        return Some(stack(
            StackKind::Meson,
            "meson.build with test()",
            vec!["meson setup .forq/build".to_owned()],
            "meson test -C .forq/build",
        ));
    }
    None
}

/// Autotools' `make check`, or a Makefile's `test`/`check` target.
fn make(root: &Path) -> Option<Stack> {
    if exists(root, "configure.ac") || exists(root, "configure") {
        let install = if exists(root, "configure") {
            vec!["./configure".to_owned(), "make -j2".to_owned()]
        } else {
            vec![
                "autoreconf -i".to_owned(),
                "./configure".to_owned(),
                "make -j2".to_owned(),
            ]
        };
        return Some(stack(
            StackKind::Autotools,
            "configure",
            install,
            "make check",
        ));
    } else if let Some(makefile) = read(root, "Makefile").or_else(|| read(root, "makefile")) {
        let target = ["test", "check"]
            .into_iter()
            .find(|t| makefile.lines().any(|l| l.starts_with(&format!("{t}:"))));
        if let Some(t) = target {
            return Some(stack(
                StackKind::Make,
                &format!("Makefile target {t}"),
                Vec::new(),
                &format!("make {t}"),
            ));
        }
    }
    None
}

/// Maven or Gradle.
fn java(root: &Path) -> Option<Stack> {
    if exists(root, "pom.xml") {
        // Dependencies and plugins with the network, then the tests offline.
        return Some(stack(
            StackKind::Maven,
            "pom.xml",
            vec!["mvn -B -DskipTests test-compile".to_owned()],
            "mvn -B -o test",
        ));
    } else if exists(root, "build.gradle") || exists(root, "build.gradle.kts") {
        let gradle = if exists(root, "gradlew") {
            "./gradlew"
        } else {
            "gradle"
        };
        return Some(stack(
            StackKind::Gradle,
            "build.gradle",
            vec![format!("{gradle} testClasses --no-daemon")],
            &format!("{gradle} test --offline --no-daemon"),
        ));
    }
    None
}

/// The `scripts.test` of a package.json.
/// Signs of a script that runs the tests in a browser.
const BROWSER_RUNS: [&str; 12] = [
    "browser",
    "karma",
    "airtap",
    "zuul",
    "phantom",
    "testling",
    "puppeteer",
    "playwright",
    "cypress",
    "electron",
    "wdio",
    "selenium",
];

/// A test script chaining `npm run X && npm run Y` where some part runs in
/// a browser (by its name or its script): the other parts, as one
/// command, and the names left out. None where nothing is left out or
/// nothing would be left.
fn without_browser_parts(package_json: &str) -> Option<(String, Vec<String>)> {
    let value: serde_json::Value = serde_json::from_str(package_json).ok()?;
    let scripts = value.get("scripts")?;
    let test = scripts.get("test")?.as_str()?;
    let browser = |text: &str| {
        let t = text.to_ascii_lowercase();
        BROWSER_RUNS.iter().any(|b| t.contains(b))
    };
    let (mut kept, mut dropped) = (Vec::new(), Vec::new());
    for part in test.split("&&").map(str::trim) {
        let name = part
            .strip_prefix("npm run ")
            .or_else(|| part.strip_prefix("npm run-script "))
            .map(str::trim)
            .filter(|n| {
                !n.is_empty() && n.chars().all(|c| c.is_alphanumeric() || "-_:.".contains(c))
            });
        let body = name.and_then(|n| scripts.get(n)?.as_str()).unwrap_or(part);
        if browser(name.unwrap_or_default()) || browser(body) {
            dropped.push(name.unwrap_or(part).to_owned());
        } else {
            kept.push(part);
        }
    }
    (!dropped.is_empty() && !kept.is_empty()).then(|| (kept.join(" && "), dropped))
}

fn package_test_script(package_json: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(package_json).ok()?;
    value
        .get("scripts")?
        .get("test")?
        .as_str()
        .map(str::to_owned)
}
