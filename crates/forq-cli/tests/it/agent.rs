//! `forq triage` and `forq agent run` end to end: a recorded model
//! (replay) and the OpenAI protocol on a loopback server, real sandboxes,
//! a copy of the calc example.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::json;

use super::server::{Reply, Server};
use super::{check_exit, repo_root};

/// A copy of examples/calc (forq writes its .forq there) and the issue.
fn calc() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let from = repo_root().join("examples/calc");
    std::fs::create_dir(dir.path().join("tests")).unwrap();
    for file in [
        "calc.py",
        "ISSUE.md",
        "tests/__init__.py",
        "tests/test_calc.py",
    ] {
        std::fs::copy(from.join(file), dir.path().join(file)).unwrap();
    }
    dir
}

pub(crate) async fn forq_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = forq_sandbox::host_command(env!("CARGO_BIN_EXE_forq"));
    cmd.args(args).current_dir(repo_root()).env("NO_COLOR", "1");
    for var in [
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "FORQ_MODEL",
    ] {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().await.expect("run forq")
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[tokio::test]
async fn agent_run_replays_a_fix_into_a_patch_without_touching_the_repository() {
    let repo = calc();
    let out_dir = tempfile::tempdir().unwrap();
    let out_path = out_dir.path().join("run");
    let replay = repo_root().join("examples/replays/calc.jsonl");
    let out = forq_env(
        &[
            "agent",
            "run",
            repo.path().join("ISSUE.md").to_str().unwrap(),
            "--repo",
            repo.path().to_str().unwrap(),
            "--provider",
            "replay",
            "--replay",
            replay.to_str().unwrap(),
            "--out",
            out_path.to_str().unwrap(),
            "--json",
        ],
        &[],
    )
    .await;
    check_exit(&out, 0);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["outcome"]["outcome"], "submitted", "{report}");
    assert_eq!(report["steps"], 4, "{report}");
    assert_eq!(report["diff_lines"], 2, "{report}");
    let patch = std::fs::read_to_string(out_path.join("fix.patch")).unwrap();
    assert!(
        patch.contains("-    return a - b\n+    return a + b\n"),
        "{patch}"
    );
    // The agent ran the suite through the gate's runner and saw it green.
    let transcript = std::fs::read_to_string(out_path.join("transcript.jsonl")).unwrap();
    assert!(
        transcript.contains("2 passed, 0 failed"),
        "run_tests did not report the green suite: {transcript}"
    );
    assert_eq!(
        std::fs::read_to_string(repo.path().join("calc.py")).unwrap(),
        std::fs::read_to_string(repo_root().join("examples/calc/calc.py")).unwrap()
    );
    // Its transcript plays back to the same patch.
    let again = out_dir.path().join("again");
    let out = forq_env(
        &[
            "agent",
            "run",
            "--text",
            "add() subtracts",
            "--repo",
            repo.path().to_str().unwrap(),
            "--provider",
            "replay",
            "--replay",
            out_path.join("transcript.jsonl").to_str().unwrap(),
            "--out",
            again.to_str().unwrap(),
        ],
        &[],
    )
    .await;
    check_exit(&out, 0);
    assert_eq!(
        std::fs::read_to_string(again.join("fix.patch")).unwrap(),
        patch
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with("submitted: add() subtracted"),
        "{stdout}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("step 2: edit "), "{stderr}");
}

#[tokio::test]
async fn without_a_key_the_commands_say_what_to_set() {
    let out = forq_env(
        &["agent", "run", "--text", "x", "--repo", "examples/calc"],
        &[],
    )
    .await;
    check_exit(&out, 65);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("set ANTHROPIC_API_KEY, or OPENAI_API_KEY")
            && stderr.contains("--provider replay --replay FILE"),
        "{stderr}"
    );
    let out = forq_env(&["triage", "--text", "x", "--provider", "anthropic"], &[]).await;
    check_exit(&out, 65);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no API key for anthropic: set ANTHROPIC_API_KEY"),
        "{stderr}"
    );
}

/// An OpenAI Chat Completions reply calling one tool.
fn openai_call(n: usize, name: &str, arguments: serde_json::Value) -> Reply {
    Reply::ok(json!({
        "id": format!("chatcmpl-{n}"), "object": "chat.completion", "created": 1, "model": "gpt-test",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": format!("call_{n}"), "type": "function",
                "function": {"name": name, "arguments": arguments.to_string()}}]}}],
        "usage": {"prompt_tokens": 1000, "completion_tokens": 20, "total_tokens": 1020}
    }))
}

#[tokio::test]
async fn a_run_over_http_leaves_the_key_in_no_file_forq_wrote() {
    const SECRET: &str = "sk-forq-cli-scan-7d3e91b0";
    let server = Server::start(vec![
        // The key echoed back in an error (retried: a 500) must not reach
        // the transcript or the report.
        Reply::status(
            500,
            json!({"error": {"message": format!("upstream saw {SECRET}")}}),
        ),
        openai_call(1, "view_file", json!({"path": "calc.py"})),
        openai_call(
            2,
            "edit",
            json!({"path": "calc.py", "old": "return a - b", "new": "return a + b"}),
        ),
        openai_call(3, "submit", json!({"summary": "adds now"})),
    ])
    .await;
    let repo = calc();
    let out = forq_env(
        &[
            "agent",
            "run",
            "--text",
            "add() subtracts",
            "--repo",
            repo.path().to_str().unwrap(),
            "--model",
            "gpt-test",
            "--json",
        ],
        &[
            ("OPENAI_API_KEY", SECRET),
            ("OPENAI_BASE_URL", &format!("{}/v1", server.url)),
        ],
    )
    .await;
    check_exit(&out, 0);
    assert_eq!(
        server.received()[1].header("authorization"),
        Some(format!("Bearer {SECRET}").as_str())
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["outcome"]["outcome"], "submitted", "{report}");
    // Everything forq wrote: REPO/.forq (run record, graph, the run's
    // transcript, patch and report), and what it printed.
    let written = files(&repo.path().join(".forq"));
    assert!(
        written.iter().any(|p| p.ends_with("transcript.jsonl"))
            && written.iter().any(|p| p.ends_with("fix.patch"))
            && written.iter().any(|p| p.ends_with("graph.db")),
        "{written:?}"
    );
    for path in &written {
        let bytes = std::fs::read(path).unwrap();
        assert!(
            !bytes.windows(SECRET.len()).any(|w| w == SECRET.as_bytes()),
            "{} holds the key",
            path.display()
        );
    }
    for stream in [&out.stdout, &out.stderr] {
        assert!(!String::from_utf8_lossy(stream).contains(SECRET));
    }
}

/// A run the model refuses (a request it calls invalid, not retried) ends
/// `failed` in the model, and exits with the model's class (67), not 125.
#[tokio::test]
async fn a_run_the_model_refuses_exits_with_the_models_class() {
    let server = Server::start(vec![Reply::status(
        400,
        json!({"error": {"message": "the model gpt-test does not exist on this endpoint"}}),
    )])
    .await;
    let repo = calc();
    let out = forq_env(
        &[
            "agent",
            "run",
            "--text",
            "add() subtracts",
            "--repo",
            repo.path().to_str().unwrap(),
            "--model",
            "gpt-test",
            "--json",
        ],
        &[
            ("OPENAI_API_KEY", "sk-test"),
            ("OPENAI_BASE_URL", &format!("{}/v1", server.url)),
        ],
    )
    .await;
    check_exit(&out, 67);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["outcome"]["outcome"], "failed", "{report}");
    assert_eq!(report["outcome"]["cause"], "model", "{report}");
    assert!(
        report["outcome"]["error"]
            .as_str()
            .unwrap()
            .contains("does not exist on this endpoint"),
        "{report}"
    );
}

/// A recorded triage reply: act, with `confidence`.
fn answer(confidence: f64) -> serde_json::Value {
    let verdict = json!({"act": true, "confidence": confidence,
        "reason": "a clear bug with a failing test", "suggested_action": "fix"});
    json!({"message": {"role": "assistant", "parts": [{"type": "text", "text": verdict.to_string()}]},
           "usage": {"input_tokens": 300, "output_tokens": 30}, "stop": "end_turn", "model": "recorded"})
}

#[tokio::test]
async fn triage_decides_from_a_recorded_answer_and_exits_by_it() {
    let dir = tempfile::tempdir().unwrap();
    for (confidence, code) in [(0.9, 0), (0.4, 1)] {
        let replay = dir.path().join(format!("{confidence}.jsonl"));
        std::fs::write(&replay, format!("{}\n", answer(confidence))).unwrap();
        let out = forq_env(
            &[
                "triage",
                "examples/calc/ISSUE.md",
                "--repo",
                "examples/calc",
                "--provider",
                "replay",
                "--replay",
                replay.to_str().unwrap(),
                "--json",
            ],
            &[],
        )
        .await;
        check_exit(&out, code);
        let decision: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(decision["attempt_fix"], code == 0, "{decision}");
        assert_eq!(decision["suggested_action"], "fix", "{decision}");
        assert_eq!(decision["confidence"], confidence, "{decision}");
    }
}

#[tokio::test]
async fn an_issue_url_is_read_through_forq_apps_github_client() {
    let server = Server::start(vec![Reply::ok(json!({
        "number": 42, "state": "open", "title": "add() subtracts",
        "body": "`add(2, 3)` returns -1.", "html_url": "https://github.com/o/r/issues/42",
        "labels": [], "user": {"login": "someone"}
    }))])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let replay = dir.path().join("r.jsonl");
    std::fs::write(&replay, format!("{}\n", answer(0.9))).unwrap();
    let out = forq_env(
        &[
            "triage",
            "https://github.com/o/r/issues/42",
            "--repo",
            "examples/calc",
            "--provider",
            "replay",
            "--replay",
            replay.to_str().unwrap(),
            "--json",
        ],
        &[
            ("GITHUB_API_URL", server.url.as_str()),
            ("GITHUB_TOKEN", "ghp_x_1234"),
        ],
    )
    .await;
    check_exit(&out, 0);
    let got = &server.received()[0];
    assert_eq!(got.path, "/repos/o/r/issues/42");
    assert_eq!(got.header("authorization"), Some("Bearer ghp_x_1234"));
    // A URL that is no issue's: input, 65.
    let out = forq_env(&["triage", "https://github.com/o/r"], &[]).await;
    check_exit(&out, 65);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is not a GitHub issue URL"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `forq -vv` reads as a tree: every span says when it closes, nested
/// under its parents — the gate and its stack, the agent, each step's
/// model call and each tool call, the sandbox exec a tool made.
#[tokio::test]
async fn verbose_logs_are_a_tree_of_phases_steps_and_tool_calls() {
    if !super::native_or_skip("verbose_logs_are_a_tree_of_phases_steps_and_tool_calls") {
        return;
    }
    let repo = calc();
    let out_dir = tempfile::tempdir().unwrap();
    let replay = repo_root().join("examples/replays/calc.jsonl");
    let out = forq_env(
        &[
            "-vv",
            "agent",
            "run",
            repo.path().join("ISSUE.md").to_str().unwrap(),
            "--repo",
            repo.path().to_str().unwrap(),
            "--backend",
            "native",
            "--provider",
            "replay",
            "--replay",
            replay.to_str().unwrap(),
            "--out",
            out_dir.path().join("run").to_str().unwrap(),
        ],
        &[("NO_COLOR", "1")],
    )
    .await;
    check_exit(&out, 0);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let closed: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains(": close time.busy="))
        .map(|l| l.split_once(" INFO ").map_or(l, |(_, rest)| rest))
        .map(|l| l.split(": close").next().unwrap_or(l))
        .collect();
    for want in [
        "gate{repo=",
        "}:stack{stack=unittest}",
        "agent{model=recorded}:step{step=1}",
        "agent{model=recorded}:tool{step=2 tool=edit}",
        "agent{model=recorded}:tool{step=3 tool=run_tests}:exec{",
        "agent{model=recorded}:tool{step=4 tool=submit}",
    ] {
        assert!(
            closed.iter().any(|l| l.contains(want)),
            "no span closed as {want}: {closed:#?}"
        );
    }
}
