//! Toolchain drift, handled as a person would: a stack whose tests failed
//! for a reason a newer toolchain brought (not the project's code) is
//! tried once more, changed as the reason says, and the record keeps both
//! runs and names the rule.
//!
//! - `cap_lints`: lints a crate denies (`#![deny(missing_docs)]`,
//!   `deny(warnings)`) that a newer compiler turned into errors: again with
//!   `RUSTFLAGS=--cap-lints=warn`, as `cargo` itself builds dependencies.
//! - `missing_targets`: a crate whose manifest names test, bench or
//!   example targets the package left out (cargo refuses the manifest
//!   before building anything): again with those entries dropped from the
//!   sandbox's copy of `Cargo.toml`, as a person would.
//! - `doctests_only`: a crate's tests that cannot build because the
//!   package leaves out files they read (`include_str!`, a module file):
//!   its doctests alone (`cargo test --doc`), a smaller proof, named so.
//! - `pytest_major`: pytest's newest major failing the project's
//!   collection with an incompatibility it introduced (a removed API, a
//!   deprecation become an error): the newest pytest below that major.
//! - `pytest_unpinned`: the old pytest (or plugin) a project pins for its
//!   tests crashing on this Python (a traceback inside pytest itself):
//!   the newest ones, unpinned.
//! - `dev_dependencies`: Python tests missing a module where the project
//!   declares development groups or files but nothing for its tests
//!   alone: again with those installed too.
//! - `lean_install`: an npm install that failed, again without what the
//!   tests do not need — optional dependencies, install scripts (where
//!   browser runners download browsers from hosts the egress proxy
//!   refuses), and browser-only devDependencies (karma, puppeteer, …).

use crate::detect::{Stack, StackKind};

/// A rule's second try of a stack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Retry {
    /// The rule (`cap_lints`, `doctests_only`, `pytest_major`).
    pub rule: &'static str,
    /// Why, from the output, in a sentence.
    pub reason: String,
    /// The stack changed as the rule says.
    pub stack: Stack,
    /// What a green run of it proves, where that is less than the whole
    /// suite (`doctests only …`): said before the run's own reason.
    pub narrower: Option<&'static str>,
}

/// The rule the failed test output of `stack` calls for, if any. Each
/// rule's changed stack no longer calls for the same rule; the gate also
/// tries a rule once per stack.
pub(crate) fn after(stack: &Stack, output: &str) -> Option<Retry> {
    let rules: [fn(&Stack, &str) -> Option<Retry>; 6] = [
        missing_targets,
        doctests_only,
        cap_lints,
        pytest_major,
        pytest_unpinned,
        dev_dependencies,
    ];
    rules.iter().find_map(|rule| rule(stack, output))
}

fn retried(
    stack: &Stack,
    rule: &'static str,
    reason: String,
    install: Vec<String>,
    command: String,
) -> Retry {
    Retry {
        rule,
        // The marker stays: it is what detected the stack (and node's
        // runner reads its script from it); the run's `retry` names the rule.
        stack: Stack {
            install,
            command,
            ..stack.clone()
        },
        reason,
        narrower: None,
    }
}

/// The index of the step that installs the test runner (`… pip install
/// pytest[ plugin …]`, the last such), where one does.
fn runner_step(install: &[String]) -> Option<usize> {
    install.iter().rposition(|step| {
        step.split_once(" install pytest")
            .is_some_and(|(_, rest)| rest.is_empty() || rest.starts_with(' '))
    })
}

/// The first line of `output` holding `sign`, trimmed.
fn line_with<'o>(output: &'o str, sign: &str) -> Option<&'o str> {
    output.lines().find(|l| l.contains(sign)).map(str::trim)
}

fn cap_lints(stack: &Stack, output: &str) -> Option<Retry> {
    if stack.kind != StackKind::Rust
        || stack.command.contains("cap-lints")
        || !output.contains("could not compile")
    {
        return None;
    }
    // rustc says where a denied lint's level comes from.
    let denied = [
        "lint level is defined here",
        "#[deny(",
        "#![deny(",
        "implied by `-D",
    ]
    .iter()
    .any(|sign| output.contains(sign));
    if !denied {
        return None;
    }
    let lint = output
        .lines()
        .find(|l| l.trim_start().starts_with("error:") && !l.contains("could not compile"))
        .map_or("a denied lint", str::trim);
    Some(retried(
        stack,
        "cap_lints",
        format!(
            "lints the crate denies are errors on this compiler ({lint}); tried again with \
             RUSTFLAGS=--cap-lints=warn"
        ),
        stack.install.clone(),
        format!("RUSTFLAGS=--cap-lints=warn {}", stack.command),
    ))
}

/// cargo's words for a target whose file is missing, and the manifest
/// table that declares such targets.
const TARGET_KINDS: [(&str, &str); 3] = [
    ("integration-test", "test"),
    ("bench", "bench"),
    ("example", "example"),
];

fn missing_targets(stack: &Stack, output: &str) -> Option<Retry> {
    if stack.kind != StackKind::Rust {
        return None;
    }
    // `error: can't find integration-test `filters` at path `…``
    let mut missing: Vec<(&str, String)> = Vec::new();
    for line in output.lines() {
        let Some(rest) = line.trim().strip_prefix("error: can't find ") else {
            continue;
        };
        for (kind, table) in TARGET_KINDS {
            let name = rest
                .strip_prefix(kind)
                .and_then(|r| r.trim_start().strip_prefix('`'))
                .and_then(|r| r.split_once('`'))
                .map(|(name, _)| name);
            // Only plain target names reach the shell.
            if let Some(name) = name.filter(|n| {
                !n.is_empty()
                    && n.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            }) {
                missing.push((table, name.to_owned()));
            }
        }
    }
    if missing.is_empty() || stack.install.iter().any(|s| s.contains("forq-Cargo.toml")) {
        return None;
    }
    let mut install = stack.install.clone();
    for (table, names) in TARGET_KINDS.iter().map(|(_, t)| {
        let names: Vec<&str> = missing
            .iter()
            .filter(|(k, _)| k == t)
            .map(|(_, n)| n.as_str())
            .collect();
        (*t, names)
    }) {
        if !names.is_empty() {
            install.push(drop_targets(table, &names));
        }
    }
    let listed: Vec<String> = missing
        .iter()
        .map(|(t, n)| format!("[[{t}]] {n}"))
        .collect();
    Some(retried(
        stack,
        "missing_targets",
        format!(
            "the manifest names targets the package left out ({}); tried again without them",
            listed.join(", ")
        ),
        install,
        stack.command.clone(),
    ))
}

/// A shell step dropping the `[[table]]` entries named `names` from
/// `Cargo.toml` (names are plain: letters, digits, `_`, `-`).
fn drop_targets(table: &str, names: &[&str]) -> String {
    format!(
        "awk -v drop=' {} ' '/^\\[/ {{ if (buf != \"\" && !skip) printf \"%s\", buf; buf = \"\"; skip = 0; inblk = ($0 ~ /^\\[\\[{table}\\]\\][ \\t]*$/) }} \
         inblk {{ buf = buf $0 \"\\n\"; if ($0 ~ /^[ \\t]*name[ \\t]*=/) {{ n = $0; sub(/^[^\"]*\"/, \"\", n); sub(/\".*$/, \"\", n); if (index(drop, \" \" n \" \")) skip = 1 }}; next }} \
         {{ print }} END {{ if (buf != \"\" && !skip) printf \"%s\", buf }}' Cargo.toml > .forq-Cargo.toml && mv .forq-Cargo.toml Cargo.toml",
        names.join(" ")
    )
}

fn doctests_only(stack: &Stack, output: &str) -> Option<Retry> {
    if stack.kind != StackKind::Rust || stack.command.contains("--doc") {
        return None;
    }
    let missing = [
        "couldn't read `",
        "file not found for module",
        "couldn't read \"",
    ]
    .iter()
    .find_map(|sign| line_with(output, sign))?;
    if !output.contains("could not compile") {
        return None;
    }
    let command = stack
        .command
        .replace("cargo test", "cargo test --doc")
        .replace("cargo nextest run", "cargo test --doc");
    let mut retry = retried(
        stack,
        "doctests_only",
        format!(
            "the tests cannot build: the package leaves out a file they read ({missing}); its \
             doctests alone were run, a smaller proof"
        ),
        stack.install.clone(),
        command,
    );
    retry.narrower = Some("doctests only (the other tests cannot build)");
    Some(retry)
}

/// Signs of an incompatibility a pytest major brought, in a failed
/// collection.
const PYTEST_BREAKS: [&str; 6] = [
    "PytestRemovedIn",
    "has no attribute 'yield_fixture'",
    "pytest.warns(None)",
    "unexpected keyword argument 'path'",
    "has no attribute 'fspath'",
    "support for nose",
];

fn pytest_major(stack: &Stack, output: &str) -> Option<Retry> {
    if stack.kind != StackKind::Pytest {
        return None;
    }
    // The session header: `platform linux -- Python 3.11.2, pytest-9.2.0, pluggy-1.6.0`.
    let major: u32 = output
        .split("pytest-")
        .skip(1)
        .find_map(|rest| rest.split('.').next()?.parse().ok())?;
    let sign = PYTEST_BREAKS.iter().find_map(|s| line_with(output, s))?;
    // The runner's step, pinned (the plugins after it stay).
    let at = runner_step(&stack.install)?;
    let mut install = stack.install.clone();
    install[at] = install[at].replacen(" install pytest", &format!(" install 'pytest<{major}'"), 1);
    Some(retried(
        stack,
        "pytest_major",
        format!(
            "pytest {major} fails this project's collection ({sign}); tried again with the \
             newest pytest below {major}"
        ),
        install,
        stack.command.clone(),
    ))
}

fn pytest_unpinned(stack: &Stack, output: &str) -> Option<Retry> {
    if stack.kind != StackKind::Pytest {
        return None;
    }
    // A traceback through pytest's own code or a plugin's, not the tests'.
    let sign = output
        .lines()
        .find(|l| l.contains("site-packages/_pytest/") || l.contains("site-packages/pytest_"))?;
    let error = output
        .lines()
        .rev()
        .find(|l| !l.starts_with(' ') && l.contains("Error"))
        .map_or(sign.trim(), str::trim);
    let mut unpinned = Vec::new();
    let install: Vec<String> = stack
        .install
        .iter()
        .map(|step| {
            if !step.contains("pip install ") {
                return step.clone();
            }
            let words: Vec<String> = step
                .split(' ')
                .map(|w| {
                    let bare = w.trim_matches('\'');
                    let name_end = bare
                        .find(['<', '>', '=', '~', '!', '['])
                        .unwrap_or(bare.len());
                    let name = &bare[..name_end];
                    let pinned = name_end < bare.len() && !bare[name_end..].starts_with('[');
                    if (name == "pytest" || name.starts_with("pytest-")) && pinned {
                        unpinned.push(bare.to_owned());
                        name.to_owned()
                    } else {
                        w.to_owned()
                    }
                })
                .collect();
            words.join(" ")
        })
        .collect();
    (!unpinned.is_empty()).then(|| {
        retried(
            stack,
            "pytest_unpinned",
            format!(
                "the pytest the project pins ({}) fails on this Python ({error}); tried again \
                 with the newest",
                unpinned.join(", ")
            ),
            install,
            stack.command.clone(),
        )
    })
}

fn dev_dependencies(stack: &Stack, output: &str) -> Option<Retry> {
    if !matches!(stack.kind, StackKind::Pytest | StackKind::Unittest)
        || stack.dev_install.is_empty()
    {
        return None;
    }
    let missing = ["ModuleNotFoundError", "No module named", "ImportError"]
        .iter()
        .find_map(|sign| line_with(output, sign))?;
    // Before the runner's own install, so pins hold.
    let mut install = stack.install.clone();
    let at = runner_step(&install).unwrap_or(install.len());
    install.splice(at..at, stack.dev_install.iter().cloned());
    let mut retry = retried(
        stack,
        "dev_dependencies",
        format!(
            "the tests miss a module ({missing}); tried again with what the project declares for \
             development"
        ),
        install,
        stack.command.clone(),
    );
    retry.stack.dev_install.clear();
    Some(retry)
}

/// devDependencies that run tests in a browser (or fetch one): a node
/// test run does not need them, and their installs reach for hosts no
/// registry serves.
const BROWSER_ONLY: [&str; 22] = [
    "karma",
    "puppeteer",
    "playwright",
    "@playwright/",
    "electron",
    "chromedriver",
    "geckodriver",
    "selenium",
    "webdriverio",
    "@wdio/",
    "cypress",
    "nightwatch",
    "testem",
    "airtap",
    "zuul",
    "tape-run",
    "browser-run",
    "@web/test-runner",
    "phantomjs",
    "mochify",
    "testling",
    "saucelabs",
];

/// The second try a failed npm install of `stack` calls for, given the
/// repository's `package.json` (None: unreadable).
pub(crate) fn after_install(stack: &Stack, package_json: Option<&str>) -> Option<Retry> {
    let npm = matches!(stack.install.as_slice(), [one] if one == "npm ci" || one == "npm install");
    if stack.kind != StackKind::Node || !npm {
        return None;
    }
    let pkg: serde_json::Value = serde_json::from_str(package_json?).ok()?;
    let browser: Vec<&str> = pkg
        .get("devDependencies")
        .and_then(serde_json::Value::as_object)
        .into_iter()
        .flat_map(|deps| deps.keys())
        .map(String::as_str)
        .filter(|name| BROWSER_ONLY.iter().any(|b| name.starts_with(b)))
        .collect();
    let mut install = Vec::new();
    let mut what = "optional dependencies and install scripts".to_owned();
    if !browser.is_empty() {
        let keys: Vec<String> = browser
            .iter()
            .map(|b| crate::runner::quote(&format!("devDependencies.{b}")))
            .collect();
        install.push(format!("npm pkg delete {}", keys.join(" ")));
        what = format!(
            "{what}, and browser-only devDependencies ({})",
            browser.join(", ")
        );
    }
    install.push("npm install --no-audit --no-fund --omit=optional --ignore-scripts".to_owned());
    Some(retried(
        stack,
        "lean_install",
        format!("the full install failed; tried again without what the tests do not need: {what}"),
        install,
        stack.command.clone(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rust() -> Stack {
        crate::detect::Stack {
            kind: StackKind::Rust,
            marker: "Cargo.toml".to_owned(),
            ..Stack::custom(
                "rust",
                vec!["cargo fetch".to_owned()],
                "cargo test --workspace --no-fail-fast --offline",
            )
        }
    }

    #[test]
    fn a_denied_lint_on_a_newer_compiler_is_capped_once() {
        let output = "   Compiling memchr v2.7.4\nerror: missing documentation for a method\n  --> src/arch/mod.rs:3:5\n   |\nnote: the lint level is defined here\n  --> src/lib.rs:1:9\n   |\n1  | #![deny(missing_docs)]\n\nerror: could not compile `memchr` (lib test) due to 4 previous errors\n";
        let retry = after(&rust(), output).unwrap();
        assert_eq!(retry.rule, "cap_lints");
        assert_eq!(
            retry.stack.command,
            "RUSTFLAGS=--cap-lints=warn cargo test --workspace --no-fail-fast --offline"
        );
        assert!(
            retry
                .reason
                .contains("(error: missing documentation for a method)"),
            "{}",
            retry.reason
        );
        // Once: the capped stack asks for nothing more on the same output.
        assert_eq!(after(&retry.stack, output), None);
        // A plain compile error is the code's, not drift.
        let broken = "error[E0308]: mismatched types\nerror: could not compile `x` (lib) due to 1 previous error\n";
        assert_eq!(after(&rust(), broken), None);
    }

    #[test]
    fn targets_the_package_left_out_are_dropped_from_the_manifest() {
        let output = "error: can't find integration-test `filters` at path `/workspace/tests/filters.rs`\n --> /workspace/Cargo.toml\nerror: can't find integration-test `macros` at path `/workspace/tests/macros.rs`\nerror: can't find bench `x; rm -rf /` at path `b`\nerror: could not compile due to 2 previous target resolution errors\n";
        let retry = after(&rust(), output).unwrap();
        assert_eq!(retry.rule, "missing_targets");
        assert_eq!(retry.stack.install.len(), 2);
        assert!(
            retry.stack.install[1].starts_with("awk -v drop=' filters macros ' "),
            "{}",
            retry.stack.install[1]
        );
        assert!(
            !retry.stack.install[1].contains("rm -rf"),
            "only plain names reach the shell"
        );
        assert!(
            retry.reason.contains("([[test]] filters, [[test]] macros)"),
            "{}",
            retry.reason
        );
        assert_eq!(missing_targets(&retry.stack, output), None);
    }

    #[test]
    fn tests_missing_their_data_leave_the_doctests() {
        let output = "error: couldn't read `tests/data/sample.bin`: No such file or directory (os error 2)\n --> tests/decode.rs:4:20\nerror: could not compile `bytes-ish` (test \"decode\") due to 1 previous error\n";
        let retry = after(&rust(), output).unwrap();
        assert_eq!(retry.rule, "doctests_only");
        assert_eq!(
            retry.stack.command,
            "cargo test --doc --workspace --no-fail-fast --offline"
        );
        assert!(retry
            .reason
            .contains("couldn't read `tests/data/sample.bin`"));
        assert_eq!(after(&retry.stack, output), None);
    }

    #[test]
    fn an_old_pinned_pytest_that_crashes_on_this_python_is_unpinned() {
        let stack = Stack {
            kind: StackKind::Pytest,
            ..Stack::custom(
                "pytest",
                vec![
                    ".forq/venv/bin/pip install -e .".to_owned(),
                    ".forq/venv/bin/pip install 'pytest>=4.6.4,<5' 'pytest-mock>=1.10.4,<2' 'tox>=3.13.2,<4'".to_owned(),
                    ".forq/venv/bin/pip install pytest".to_owned(),
                ],
                ".forq/venv/bin/python -m pytest -v",
            )
        };
        let output = "Traceback (most recent call last):\n  File \"/workspace/.forq/venv/lib/python3.11/site-packages/_pytest/assertion/rewrite.py\", line 406, in _rewrite_test\n    co = compile(tree, fn.strpath, \"exec\", dont_inherit=True)\nTypeError: required field \"lineno\" missing from alias\n";
        let retry = after(&stack, output).unwrap();
        assert_eq!(retry.rule, "pytest_unpinned");
        assert_eq!(
            retry.stack.install[1],
            ".forq/venv/bin/pip install pytest pytest-mock 'tox>=3.13.2,<4'"
        );
        assert!(retry.reason.contains("(pytest>=4.6.4,<5, pytest-mock>=1.10.4,<2) fails on this Python (TypeError: required field"), "{}", retry.reason);
        // Nothing pinned: nothing to unpin; a traceback in the tests: not pytest's.
        assert_eq!(after(&retry.stack, output), None);
        assert_eq!(pytest_unpinned(&retry.stack, output), None);
        let tests =
            "  File \"/workspace/tests/test_x.py\", line 3\nNameError: name 'x' is not defined\n";
        assert_eq!(pytest_unpinned(&stack, tests), None);
    }

    #[test]
    fn tests_missing_a_module_get_the_dev_dependencies_on_a_second_try() {
        let stack = Stack {
            kind: StackKind::Pytest,
            dev_install: vec![".forq/venv/bin/pip install PyYAML~=6.0 mypy".to_owned()],
            ..Stack::custom(
                "pytest",
                vec![
                    "python3 -m venv .forq/venv".to_owned(),
                    ".forq/venv/bin/pip install -e .".to_owned(),
                    ".forq/venv/bin/pip install pytest".to_owned(),
                ],
                ".forq/venv/bin/python -m pytest -v",
            )
        };
        let output = "E   ModuleNotFoundError: No module named 'yaml'\n";
        let retry = after(&stack, output).unwrap();
        assert_eq!(retry.rule, "dev_dependencies");
        assert_eq!(
            retry.stack.install,
            [
                "python3 -m venv .forq/venv",
                ".forq/venv/bin/pip install -e .",
                ".forq/venv/bin/pip install PyYAML~=6.0 mypy",
                ".forq/venv/bin/pip install pytest",
            ]
        );
        assert!(retry
            .reason
            .contains("(E   ModuleNotFoundError: No module named 'yaml')"));
        // Once; and not for a failure that is no missing module.
        assert_eq!(after(&retry.stack, output), None);
        assert_eq!(after(&stack, "E   assert 1 == 2\n"), None);
    }

    #[test]
    fn a_failed_npm_install_goes_lean_without_browser_runners() {
        let stack = Stack {
            kind: StackKind::Node,
            ..Stack::custom("node", vec!["npm ci".to_owned()], "npm test")
        };
        let pkg = r#"{"devDependencies": {"tape": "^5", "karma": "^6", "karma-chrome-launcher": "^3", "@wdio/cli": "^8", "jsdom": "^24"}}"#;
        let retry = after_install(&stack, Some(pkg)).unwrap();
        assert_eq!(retry.rule, "lean_install");
        assert_eq!(
            retry.stack.install,
            [
                "npm pkg delete devDependencies.@wdio/cli devDependencies.karma devDependencies.karma-chrome-launcher",
                "npm install --no-audit --no-fund --omit=optional --ignore-scripts",
            ]
        );
        assert!(
            retry.reason.ends_with(
                "browser-only devDependencies (@wdio/cli, karma, karma-chrome-launcher)"
            ),
            "{}",
            retry.reason
        );
        // Once: the lean stack is not made leaner; other stacks are not npm's.
        assert_eq!(after_install(&retry.stack, Some(pkg)), None);
        assert_eq!(after_install(&rust(), Some(pkg)), None);
        // Nothing browser-only: scripts and optional dependencies alone.
        let retry = after_install(&stack, Some("{}")).unwrap();
        assert_eq!(retry.stack.install.len(), 1);
    }

    #[test]
    fn a_pytest_major_that_breaks_collection_is_pinned_below() {
        let stack = Stack {
            kind: StackKind::Pytest,
            ..Stack::custom(
                "pytest",
                vec![
                    "python3 -m venv .forq/venv".to_owned(),
                    ".forq/venv/bin/pip install pytest pytest-cov".to_owned(),
                ],
                ".forq/venv/bin/python -m pytest -v --no-cov",
            )
        };
        let output = "platform linux -- Python 3.11.2, pytest-9.2.0, pluggy-1.6.0\ncollected 0 items / 1 error\nE   pytest.PytestRemovedIn9Warning: support for nose tests is removed\n";
        let retry = after(&stack, output).unwrap();
        assert_eq!(retry.rule, "pytest_major");
        assert_eq!(
            retry.stack.install[1],
            ".forq/venv/bin/pip install 'pytest<9' pytest-cov"
        );
        assert!(
            retry.reason.starts_with(
                "pytest 9 fails this project's collection (E   pytest.PytestRemovedIn9Warning"
            ),
            "{}",
            retry.reason
        );
        // No sign of drift: a missing module is the project's setup.
        let plain = "platform linux -- Python 3.11.2, pytest-9.2.0\nE   ModuleNotFoundError: No module named 'yaml'\n";
        assert_eq!(after(&stack, plain), None);
    }
}
