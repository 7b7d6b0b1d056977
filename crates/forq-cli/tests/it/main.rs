//! End-to-end tests of the `forq` binary: real processes, real sandboxes.
//!
//! Exit-code mapping is checked on the host backend (it runs anywhere); the
//! README's first command and the bench run on the native backend when this
//! runs as root, and say why they skip otherwise (under CI they fail).

#![allow(clippy::unwrap_used, clippy::print_stderr)] // tests fail loudly

use std::path::PathBuf;
use std::process::Output;

mod agent;
mod app;
mod bootstrap;
#[path = "../../../forq-sandbox/tests/it/bridge.rs"]
mod bridge;
mod change;
mod docs;
mod eval;
mod fix;
mod golden;
mod graph;
mod llama;
mod sandbox;
mod serve;
#[allow(dead_code)] // shared with forq-provider's tests, which use all of it
#[path = "../../../forq-provider/tests/it/server.rs"]
mod server;

/// Runs git in `dir` with a committer identity of its own (and no
/// signing), failing the test on an error; its trimmed standard output.
/// A later `-c user.name=…` in `args` overrides the identity.
async fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let out = forq_sandbox::host_command("git")
        .args([
            "-c",
            "user.name=forq",
            "-c",
            "user.email=forq@localhost",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

async fn forq(args: &[&str]) -> Output {
    forq_sandbox::host_command(env!("CARGO_BIN_EXE_forq"))
        .args(args)
        .current_dir(repo_root())
        .env("NO_COLOR", "1")
        .output()
        .await
        .expect("run forq")
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
}

fn native_or_skip(test: &str) -> bool {
    if is_root() {
        return true;
    }
    if std::env::var_os("CI").is_some() {
        panic!("{test}: CI runs as root, and this test needs it");
    }
    eprintln!("SKIPPED {test}: it needs root (to read cgroups and switch users)");
    false
}

/// Whether `program` is on PATH; without it, a test that drives it skips
/// (a failure under CI, which installs it from npm).
fn installed_or_skip(program: &str) -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()));
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "{program} is not on PATH: CI installs it"
        );
        eprintln!("SKIPPED: {program} is not on PATH");
    }
    found
}

#[track_caller]
fn check_exit(out: &Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The `--diff` on stderr adds `file` (in examples/calc) holding the one
/// line `line`, and the repository itself was not written.
#[track_caller]
fn assert_patch_adds(out: &Output, file: &str, line: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let hunk = format!("--- /dev/null\n+++ b/{file}\n@@ -0,0 +1 @@\n+{line}\n");
    assert!(stderr.contains(&hunk), "{stderr}");
    assert!(
        !repo_root().join("examples/calc").join(file).exists(),
        "the repository was written"
    );
}

#[tokio::test]
async fn the_exit_code_says_the_class_of_the_failure() {
    // A command line that does not parse: usage, 64; --help is no failure.
    let out = forq(&["fix", "--no-such-flag"]).await;
    check_exit(&out, 64);
    assert!(String::from_utf8_lossy(&out.stderr).contains("--no-such-flag"));
    check_exit(&forq(&["--help"]).await, 0);
    check_exit(&forq(&["--version"]).await, 0);
    // A value the person gave that is wrong: input, 65, with the hint.
    let tmp = tempfile::tempdir().unwrap();
    let out = forq(&[
        "runs",
        "show",
        "nosuch",
        "--state",
        tmp.path().to_str().unwrap(),
    ])
    .await;
    check_exit(&out, 65);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("forq: error: no run nosuch in the store"),
        "{stderr}"
    );
    assert!(
        stderr.contains("forq: hint: `forq runs` lists the runs"),
        "{stderr}"
    );
    // (Infrastructure, 69: `forq queue --docker-host` on a port nobody
    // listens on, in the queue's tests; repository, 66: `forq fix` where
    // every test passes, below.)
}

#[tokio::test]
async fn a_reader_that_stops_reading_is_not_an_error() {
    // `forq … | head`: the pipe's reader is gone before forq writes.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = forq_sandbox::host_command(env!("CARGO_BIN_EXE_forq"))
        .args(["config", "schema"])
        .stdout(writer)
        .output()
        .await
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn a_repositorys_forq_dir_that_is_a_link_is_never_written_through() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::write(repo.join("calc.py"), "def add(a, b):\n    return a + b\n").unwrap();
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, repo.join(".forq")).unwrap();
    let repo_s = repo.to_str().unwrap();
    for args in [
        vec!["graph", "index", repo_s],
        vec!["bootstrap", repo_s, "--backend", "host"],
    ] {
        let out = forq(&args).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(stderr.contains("symbolic link"), "{args:?}: {stderr}");
    }
    assert_eq!(
        std::fs::read_dir(&elsewhere).unwrap().count(),
        0,
        "something was written through the link"
    );
}

#[tokio::test]
async fn errors_say_what_happened_and_the_hint_what_to_type_next() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("calc.py"),
        "def add(a, b):\n    return a + b\n",
    )
    .unwrap();
    let repo = tmp.path().to_str().unwrap();
    let out = forq(&["graph", "callers", "nosuch", "--repo", repo]).await;
    check_exit(&out, 65);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("forq: error: no symbol matches \"nosuch\"\n"),
        "{stderr}"
    );
    assert!(
        stderr.contains("forq: hint: `forq graph symbols --name NAME` lists candidates\n"),
        "{stderr}"
    );
    // Every test passes: the library says so, the hint names the flag.
    std::fs::create_dir(tmp.path().join("tests")).unwrap();
    std::fs::write(tmp.path().join("tests/__init__.py"), "").unwrap();
    std::fs::write(
        tmp.path().join("tests/test_calc.py"),
        "import unittest\n\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n",
    )
    .unwrap();
    let out = forq(&["fix", repo, "--backend", "host", "--provider", "openai"]).await;
    check_exit(&out, 66);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("every test passes on the unmodified code: no test captures the issue yet"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "forq: hint: name the failing test that captures the issue with --target TEST_ID"
        ),
        "{stderr}"
    );
}

/// Whether a sandbox directory's or cgroup's name is process `pid`'s:
/// `<pid>.<start>-<n>` (or `<pid>-<n>`).
pub(crate) fn owned_by(name: &str, pid: u32) -> bool {
    let owner = name.split('-').next().unwrap_or_default();
    owner.split('.').next() == Some(pid.to_string().as_str()) && name.contains('-')
}
