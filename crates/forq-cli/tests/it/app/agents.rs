//! Runs with a model or a coding-agent program: review pauses, reproduction tests, Claude Code as the queue's agent.

use super::*;

#[tokio::test]
async fn a_run_paused_for_review_is_approved_from_the_command_line() {
    if !native_or_skip("a_run_paused_for_review_is_approved_from_the_command_line") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let issues = issue_dir(tmp.path(), &["py-clamp", "js-min-of"]);
    for name in ["py-clamp", "js-min-of"] {
        std::fs::write(issues.join(name).join("forq.yml"), "review: [commit]\n").unwrap();
    }
    let state = tmp.path().join("state");
    let state_s = state.to_str().unwrap();
    let queued = forq_env(
        &[
            "queue",
            "--issues",
            issues.to_str().unwrap(),
            "--backend",
            "native",
        ]
        .iter()
        .chain(&["--state", state_s, "--json"])
        .copied()
        .collect::<Vec<_>>(),
        &[],
    )
    .await;
    // Paused runs need a person: exit 1.
    check_exit(&queued, 1);
    let runs = json_of(&queued);
    let ids: Vec<String> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            assert_eq!(r["state"], "needs_review", "{r}");
            assert!(r["branch"].is_null(), "nothing committed: {r}");
            r["id"].as_str().unwrap().to_owned()
        })
        .collect();
    let approved = forq_env(
        &[
            "runs",
            "approve",
            &ids[0],
            "--backend",
            "native",
            "--state",
            state_s,
            "--json",
        ],
        &[],
    )
    .await;
    check_exit(&approved, 0);
    assert_eq!(json_of(&approved)["state"], "patch_ready");
    let rejected = forq_env(
        &[
            "runs",
            "reject",
            &ids[1],
            "--reason",
            "wrong fix",
            "--state",
            state_s,
            "--json",
        ],
        &[],
    )
    .await;
    check_exit(&rejected, 0);
    let rejected = json_of(&rejected);
    assert_eq!(rejected["state"], "aborted");
    assert_eq!(rejected["reason"], "rejected at review (commit): wrong fix");
    // Neither is paused any more.
    let again = forq_env(&["runs", "reject", &ids[0], "--state", state_s], &[]).await;
    assert_ne!(again.status.code(), Some(0));
    let said = String::from_utf8_lossy(&again.stderr);
    assert!(said.contains("only a run paused for review"), "{said}");
}

#[tokio::test]
async fn the_queue_writes_a_reproduction_test_first_when_no_test_fails() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = calc_repo(
        tmp.path(),
        Some("actions:\n  fix:\n    strategy: speculative\n    brancher: mutate\n"),
    );
    // No test catches the bug: only mul is tested.
    std::fs::write(
        repo.join("tests/test_calc.py"),
        "import unittest\n\nfrom calc import mul\n\n\nclass CalcTest(unittest.TestCase):\n    def test_mul(self):\n        self.assertEqual(mul(2, 3), 6)\n",
    )
    .unwrap();
    let verdict = json!({"act": true, "confidence": 0.9, "reason": "add() subtracts",
        "suggested_action": "fix"});
    let replay = triage_replay(tmp.path(), &verdict, 1);
    let mut recording = std::fs::read_to_string(&replay).unwrap();
    let repro = "import unittest\n\nfrom calc import add\n\n\nclass ReproTest(unittest.TestCase):\n    def test_add_adds(self):\n        self.assertEqual(add(2, 3), 5)\n";
    recording.push_str(&tool_reply(
        1,
        "create_file",
        json!({"path": "tests/test_repro.py", "content": repro}),
    ));
    recording.push_str(&tool_reply(
        2,
        "submit",
        json!({"summary": "add(2, 3) must be 5"}),
    ));
    std::fs::write(&replay, recording).unwrap();
    let (out, state) = queue_replayed(
        tmp.path(),
        &repo,
        "# add() subtracts\n\nadd(2, 3) is -1.",
        &replay,
    )
    .await;
    check_exit(&out, 0);
    let run = &json_of(&out)[0];
    assert_eq!(run["state"], "patch_ready", "{run}");
    let id = run["id"].as_str().unwrap();
    let shown = show_run(id, state.to_str().unwrap()).await;
    let repro_events = events_of(&shown, "reproduction");
    assert_eq!(repro_events.len(), 1, "{shown}");
    assert_eq!(repro_events[0]["files"], json!(["tests/test_repro.py"]));
    assert_eq!(
        repro_events[0]["target"],
        json!(["tests.test_repro.ReproTest.test_add_adds"])
    );
    // The patch fixes add and ships the test that failed before it.
    let ws = state.join("runs").join(id).join("workspace");
    let log = forq_sandbox::host_command("git")
        .args(["show", "--stat", "--format=%s", "HEAD"])
        .current_dir(&ws)
        .output()
        .await
        .unwrap();
    let stat = String::from_utf8_lossy(&log.stdout);
    assert!(
        stat.contains("calc.py") && stat.contains("tests/test_repro.py"),
        "{stat}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("tests/test_repro.py")).unwrap(),
        repro
    );
}

#[tokio::test]
async fn the_operators_settings_run_claude_code_as_the_queues_agent() {
    if !native_or_skip("the_operators_settings_run_claude_code_as_the_queues_agent") {
        return;
    }
    if !crate::installed_or_skip("claude") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let repo = calc_repo(tmp.path(), None);
    let server = Server::start(vec![
        Reply::anthropic_stream(
            1,
            &[json!({"type": "tool_use", "id": "t1", "name": "Read",
                "input": {"file_path": "/workspace/calc.py"}})],
            "tool_use",
        ),
        Reply::anthropic_stream(
            2,
            &[json!({"type": "tool_use", "id": "t2", "name": "Edit",
                "input": {"file_path": "/workspace/calc.py", "old_string": "return a - b", "new_string": "return a + b"}})],
            "tool_use",
        ),
        Reply::anthropic_stream(3, &[json!({"type": "text", "text": "add adds"})], "end_turn"),
        // The contract check, by forq's own provider.
        Reply::ok(json!({"id": "m4", "type": "message", "role": "assistant", "model": "m",
            "content": [{"type": "tool_use", "id": "c", "name": "contract",
                "input": {"class": "A", "reason": "the same contract, fixed"}}],
            "stop_reason": "tool_use", "usage": {"input_tokens": 5, "output_tokens": 5}})),
    ])
    .await;
    let settings = tmp.path().join("operator.yml");
    std::fs::write(
        &settings,
        "triage:\n  enabled: false\nactions:\n  fix:\n    strategy: single\n    brancher: agent\n    agent:\n      program: claude_code\n",
    )
    .unwrap();
    // The same setting in the repository's own forq.yml is ignored.
    std::fs::write(
        repo.join("forq.yml"),
        "actions:\n  fix:\n    agent:\n      program: claude_code\n",
    )
    .unwrap();
    let state = tmp.path().join("state");
    let env = [
        ("ANTHROPIC_API_KEY", "sk-ant-queue-test"),
        ("ANTHROPIC_BASE_URL", server.url.as_str()),
    ];
    let extra = ["--config", settings.to_str().unwrap()];
    let out = queue_text("# add() subtracts", &repo, "native", &state, &extra, &env).await;
    check_exit(&out, 0);
    let run = &json_of(&out)[0];
    assert_eq!(run["state"], "patch_ready", "{run}");
    let shown = show_run(run["id"].as_str().unwrap(), state.to_str().unwrap()).await;
    let tools: Vec<Value> = events_of(&shown, "agent")
        .into_iter()
        .filter_map(|e| e.get("tool").cloned())
        .collect();
    assert_eq!(tools, [json!("Read"), json!("Edit")], "{shown}");
    assert_eq!(server.received().len(), 4);

    // From the repository's forq.yml alone, the setting is dropped with a
    // warning: forq's own agent runs (and needs the model's replies).
    let state2 = tmp.path().join("state2");
    let out = queue_text("# add() subtracts", &repo, "native", &state2, &[], &[]).await;
    let run = &json_of(&out)[0];
    let shown = show_run(run["id"].as_str().unwrap(), state2.to_str().unwrap()).await;
    let warnings = events_of(&shown, "warning");
    assert!(
        warnings
            .iter()
            .any(|w| w["key"] == "actions.fix.agent.program"),
        "{shown}"
    );
}
