//! After a green patch: the ripple through callers, adapted by a model or left as findings, and forq modify.

use super::*;

/// A repository whose fix changes `scale`'s signature, which `double`
/// (no test covers it) calls the old way.
fn scale_repo(dir: &Path, forq_yml: &str) -> PathBuf {
    let repo = dir.join("scale");
    std::fs::create_dir_all(repo.join("tests")).unwrap();
    std::fs::write(
        repo.join("calc.py"),
        "def scale(x):\n    return x * 2\n\n\ndef double(x):\n    return scale(x)\n\n\ndef neg(x):\n    return -x\n",
    )
    .unwrap();
    std::fs::write(repo.join("tests/__init__.py"), "").unwrap();
    std::fs::write(
        repo.join("tests/test_calc.py"),
        "import unittest\n\nfrom calc import neg, scale\n\n\nclass CalcTest(unittest.TestCase):\n    def test_scale_by(self):\n        self.assertEqual(scale(3, 4), 12)\n\n    def test_neg(self):\n        self.assertEqual(neg(2), -2)\n",
    )
    .unwrap();
    std::fs::write(repo.join("forq.yml"), forq_yml).unwrap();
    repo
}

/// The model's part up to the ripple: triage, the llm brancher's
/// candidate, the contract check's C.
fn scale_fix_replies() -> String {
    let mut s = text_reply(&json!({"act": true, "confidence": 0.9,
        "reason": "scale has no factor", "suggested_action": "fix"}));
    s.push_str(&text_reply(
        &json!({"candidates": [{"hypothesis": "scale takes its factor",
        "edits": [{"path": "calc.py", "old": "def scale(x):\n    return x * 2",
                   "new": "def scale(x, factor):\n    return x * factor"}]}]}),
    ));
    s.push_str(&text_reply(
        &json!({"class": "C", "reason": "scale now needs a factor"}),
    ));
    s
}

/// The agent's ripple: `double` passes the factor, then submits.
fn scale_adapt_replies() -> String {
    tool_reply(
        1,
        "edit",
        json!({"path": "calc.py", "old": "    return scale(x)", "new": "    return scale(x, 2)"}),
    ) + &tool_reply(2, "submit", json!({"summary": "double passes 2"}))
}

#[tokio::test]
async fn with_a_model_the_ripple_adapts_the_uncovered_caller_and_commits_it() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = scale_repo(
        tmp.path(),
        "actions:\n  fix:\n    strategy: speculative\n    brancher: llm\n",
    );
    let replay = tmp.path().join("model.jsonl");
    std::fs::write(&replay, scale_fix_replies() + &scale_adapt_replies()).unwrap();
    let (out, state) = queue_replayed(
        tmp.path(),
        &repo,
        "# scale() should take the factor",
        &replay,
    )
    .await;
    check_exit(&out, 0);
    let run = &json_of(&out)[0];
    assert_eq!(run["state"], "patch_ready", "{run}");
    assert!(
        run["reason"].as_str().unwrap().contains("1 caller adapted"),
        "{run}"
    );
    let id = run["id"].as_str().unwrap();
    let shown = show_run(id, state.to_str().unwrap()).await;
    let adapted = events_of(&shown, "ripple_adapt");
    assert_eq!(adapted.len(), 1, "{shown}");
    assert_eq!(adapted[0]["adapted"], true);
    assert_eq!(
        adapted[0]["callers"][0]["caller"],
        "calc.py#double:function"
    );
    assert_eq!(adapted[0]["left"], json!([]));
    // Two commits on the branch: the fix, then the callers.
    let ws = state.join("runs").join(id).join("workspace");
    let log = forq_sandbox::host_command("git")
        .args(["log", "--format=%s", "-2"])
        .current_dir(&ws)
        .output()
        .await
        .unwrap();
    let subjects = String::from_utf8_lossy(&log.stdout);
    assert!(
        subjects.starts_with("Adapt the callers of #text's incompatible change\nFix #text:"),
        "{subjects}"
    );
    assert!(std::fs::read_to_string(ws.join("calc.py"))
        .unwrap()
        .contains("def double(x):\n    return scale(x, 2)\n"));
}

#[tokio::test]
async fn review_ripple_pauses_before_the_agent_adapts_and_approve_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = scale_repo(
        tmp.path(),
        "actions:\n  fix:\n    strategy: speculative\n    brancher: llm\nreview: [ripple]\n",
    );
    let replay = tmp.path().join("model.jsonl");
    std::fs::write(&replay, scale_fix_replies()).unwrap();
    let state = tmp.path().join("state");
    let state_s = state.to_str().unwrap();
    let extra = ["--provider", "replay", "--replay", replay.to_str().unwrap()];
    let out = queue_text(
        "# scale() should take the factor",
        &repo,
        "host",
        &state,
        &extra,
        &[],
    )
    .await;
    check_exit(&out, 1);
    let run = &json_of(&out)[0];
    assert_eq!(run["state"], "needs_review", "{run}");
    let reason = run["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("waiting for review before the ripple: 1 definition changed (A 0, B 0, C 1, unclassified 0); 1 caller of incompatible changes to look at"),
        "{reason}"
    );
    let id = run["id"].as_str().unwrap();
    // Approved, the agent adapts the caller (its replies only: nothing
    // before the pause is asked again).
    let adapt = tmp.path().join("adapt.jsonl");
    std::fs::write(&adapt, scale_adapt_replies()).unwrap();
    let out = forq_env(
        &[
            "runs",
            "approve",
            id,
            "--state",
            state_s,
            "--backend",
            "host",
            "--provider",
            "replay",
            "--replay",
            adapt.to_str().unwrap(),
            "--json",
        ],
        &[],
    )
    .await;
    check_exit(&out, 0);
    let shown = show_run(id, state_s).await;
    assert_eq!(shown["run"]["state"], "patch_ready", "{shown}");
    assert_eq!(events_of(&shown, "ripple_adapt")[0]["adapted"], true);
}

#[tokio::test]
async fn a_ripple_that_edits_a_test_is_not_committed_and_the_findings_stay() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = scale_repo(
        tmp.path(),
        "actions:\n  fix:\n    strategy: speculative\n    brancher: llm\n",
    );
    let cheat = tool_reply(
        1,
        "edit",
        json!({"path": "tests/test_calc.py", "old": "neg(2), -2", "new": "neg(2), -2.0"}),
    ) + &tool_reply(2, "submit", json!({"summary": "done"}));
    let replay = tmp.path().join("model.jsonl");
    std::fs::write(&replay, scale_fix_replies() + &cheat).unwrap();
    let (out, state) = queue_replayed(
        tmp.path(),
        &repo,
        "# scale() should take the factor",
        &replay,
    )
    .await;
    check_exit(&out, 1);
    let run = &json_of(&out)[0];
    assert_eq!(run["state"], "completed_with_findings", "{run}");
    let shown = show_run(run["id"].as_str().unwrap(), state.to_str().unwrap()).await;
    let adapt = events_of(&shown, "ripple_adapt");
    assert_eq!(adapt[0]["adapted"], false);
    assert_eq!(
        adapt[0]["why"],
        "the agent changed the test file tests/test_calc.py; a ripple adapts callers, never tests"
    );
}

#[tokio::test]
async fn modify_writes_tests_for_the_new_behaviour_then_changes_the_definition_and_classifies_it() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("scale");
    std::fs::create_dir_all(repo.join("tests")).unwrap();
    std::fs::write(
        repo.join("calc.py"),
        "def scale(x):\n    return x * 2\n\n\ndef double(x):\n    return scale(x)\n",
    )
    .unwrap();
    std::fs::write(repo.join("tests/__init__.py"), "").unwrap();
    std::fs::write(
        repo.join("tests/test_calc.py"),
        "import unittest\n\nfrom calc import double\n\n\nclass CalcTest(unittest.TestCase):\n    def test_double(self):\n        self.assertEqual(double(3), 6)\n",
    )
    .unwrap();
    let test = "import unittest\n\nfrom calc import scale\n\n\nclass FactorTest(unittest.TestCase):\n    def test_factor(self):\n        self.assertEqual(scale(3, 4), 12)\n";
    let mut replies = tool_reply(
        1,
        "create_file",
        json!({"path": "tests/test_factor.py", "content": test}),
    );
    replies.push_str(&tool_reply(
        2,
        "submit",
        json!({"summary": "scale(3, 4) is 12"}),
    ));
    replies.push_str(&tool_reply(
        1,
        "edit",
        json!({"path": "calc.py", "old": "def scale(x):\n    return x * 2",
               "new": "def scale(x, factor=2):\n    return x * factor"}),
    ));
    replies.push_str(&tool_reply(
        2,
        "submit",
        json!({"summary": "a factor, 2 by default"}),
    ));
    replies.push_str(&text_reply(
        &json!({"class": "B", "reason": "an optional parameter"}),
    ));
    let replay = tmp.path().join("model.jsonl");
    std::fs::write(&replay, replies).unwrap();
    let out_dir = tmp.path().join("out");
    let out = forq_env(
        &[
            "modify",
            "scale",
            "--change",
            "scale multiplies by the factor it is given, 2 when none is",
            "--repo",
            repo.to_str().unwrap(),
            "--backend",
            "host",
            "--provider",
            "replay",
            "--replay",
            replay.to_str().unwrap(),
            "--out",
            out_dir.to_str().unwrap(),
            "--json",
        ],
        &[],
    )
    .await;
    let tree = std::fs::read_to_string(out_dir.join("tree.json")).unwrap_or_default();
    assert_eq!(out.status.code(), Some(0), "{tree}");
    let report = json_of(&out);
    assert_eq!(report["solved"], true, "{report}");
    assert_eq!(report["strategy"], "single");
    assert_eq!(report["brancher"], "agent");
    assert_eq!(report["reproduction"], json!(["tests/test_factor.py"]));
    assert_eq!(
        report["contract"]["classification"]["class"], "B",
        "{report}"
    );
    assert_eq!(report["contract"]["callers"], json!([]));
    let patch = std::fs::read_to_string(out_dir.join("fix.patch")).unwrap();
    assert!(
        patch.contains("+def scale(x, factor=2):\n")
            && patch.contains("+        self.assertEqual(scale(3, 4), 12)\n"),
        "{patch}"
    );
    assert!(out_dir.join("contract.json").is_file());
    // The user's tree is left alone.
    assert!(!repo.join("tests/test_factor.py").exists());
}
