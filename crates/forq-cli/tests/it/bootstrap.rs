//! forq bootstrap: the example proven, other directories said why not, a git URL cloned shallow.

use super::*;

#[tokio::test]
async fn bootstrap_proves_the_example_runs_and_says_why_not_elsewhere() {
    let out = forq(&["bootstrap", "examples/calc", "--json"]).await;
    check_exit(&out, 0);
    let record: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(record["verdict"], "bootstrapped", "{record}");
    assert_eq!(
        (record["passed"].as_u64(), record["failed"].as_u64()),
        (Some(1), Some(1)),
        "{record}"
    );
    for key in [
        "stacks",
        "tests_executed",
        "skipped",
        "duration_ms",
        "evidence",
        "reason",
        "cached",
    ] {
        assert!(!record[key].is_null(), "{key} missing: {record}");
    }
    assert_eq!(
        record["stacks"][0]["command"], "python3 -m unittest -v",
        "{record}"
    );

    let empty = tempfile::tempdir().unwrap();
    std::fs::write(empty.path().join("README.md"), "# notes\n").unwrap();
    let out = forq(&["bootstrap", empty.path().to_str().unwrap()]).await;
    // Not bootstrapped, whatever the verdict: "not achieved" (the
    // verdict itself is in the output and in --json).
    check_exit(&out, 1);
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .starts_with("unsupported_ecosystem: no registered stack matched"),
        "{out:?}"
    );
    let out = forq(&[
        "bootstrap",
        empty.path().to_str().unwrap(),
        "--skip-bootstrap",
        "--json",
    ])
    .await;
    check_exit(&out, 0);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("\"verdict\":\"skipped\""),
        "{out:?}"
    );
}

#[tokio::test]
async fn bootstrap_clones_a_git_url_shallow_and_keeps_it_when_asked() {
    // A repository of the calc example with two commits, served by file://.
    let origin = tempfile::tempdir().unwrap();
    let calc = repo_root().join("examples/calc");
    std::fs::create_dir_all(origin.path().join("tests")).unwrap();
    for file in ["calc.py", "tests/__init__.py", "tests/test_calc.py"] {
        std::fs::copy(calc.join(file), origin.path().join(file)).unwrap();
    }
    for args in [
        &["init", "-q"][..],
        &["add", "."],
        &["commit", "-q", "-m", "one"],
        &["commit", "-q", "--allow-empty", "-m", "two"],
    ] {
        git(origin.path(), args).await;
    }
    let url = format!("file://{}", origin.path().display());
    let keep = tempfile::tempdir().unwrap();
    let into = keep.path().join("work");
    let out = forq(&[
        "bootstrap",
        &url,
        "--into",
        into.to_str().unwrap(),
        "--json",
    ])
    .await;
    check_exit(&out, 0);
    let record: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(record["verdict"], "bootstrapped", "{record}");
    assert_eq!(record["head"].as_str().map(str::len), Some(40), "{record}");
    // Kept, with .git and one commit of history.
    let count = forq_sandbox::host_command("git")
        .args(["rev-list", "--count", "HEAD"])
        .current_dir(&into)
        .output()
        .await
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&count.stdout).trim(), "1");
    // Human output: progress per phase on stderr, and a second run on the
    // same commit answers from the cache and says so.
    let out = forq(&["bootstrap", into.to_str().unwrap()]).await;
    check_exit(&out, 0);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cache: this commit's green verdict"),
        "{stderr}"
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("[cached: .forq/bootstrap/manifest.json"),
        "{out:?}"
    );
    let out = forq(&["bootstrap", into.to_str().unwrap(), "--no-cache"]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("detect: unittest (test*.py files)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("test unittest: python3 -m unittest -v"),
        "{stderr}"
    );
    // A URL that is no repository: a clear error, exit 69 (git failed).
    let out = forq(&["bootstrap", "file:///nonexistent/forq-repo"]).await;
    check_exit(&out, 69);
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("git could not clone file:///nonexistent/forq-repo"),
        "{out:?}"
    );
}

/// Where the tests' needs were read is said as the gate starts, and kept
/// in the record.
#[tokio::test]
async fn bootstrap_says_where_the_tests_needs_are_declared() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("tests")).unwrap();
    std::fs::write(
        dir.path().join("tox.ini"),
        "[testenv]\ndeps =\n    pytest\n    six\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("tests/test_six.py"),
        "import six\n\n\ndef test_six():\n    assert six.PY3\n",
    )
    .unwrap();
    let out = forq(&["bootstrap", dir.path().to_str().unwrap(), "--no-cache"]).await;
    check_exit(&out, 0);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("\ndeclared (pytest): tox.ini [testenv]: pytest, six\n"),
        "{stderr}"
    );
}
