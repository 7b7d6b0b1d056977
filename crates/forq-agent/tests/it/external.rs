//! Claude Code and Codex CLI driven in a real native sandbox: the programs
//! installed from npm (CI installs them), pointed at a loopback model
//! server (Anthropic Messages, OpenAI Responses) that scripts the model,
//! reached only through forq's model relay, which holds the key.

use std::sync::Arc;

use forq_agent::agent::{AgentEvent, CodingAgent, Outcome, Task};
use forq_agent::external::ExternalAgent;
use forq_agent::provider::ApiKey;
use forq_events::Recorder;
use forq_sandbox::{BackendChoice, SandboxSpec};
use serde_json::json;

use crate::server::{Reply, Server};

/// Where `program` is, or `None` (a failure under CI, which installs it).
fn installed(program: &str) -> Option<String> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(program))
            .find(|p| p.is_file())
    });
    match found {
        Some(p) => Some(p.display().to_string()),
        None if std::env::var_os("CI").is_some() => {
            panic!("{program} is not on PATH: CI installs it from npm")
        }
        // Not installed here (CI installs it): nothing to drive.
        None => None,
    }
}

#[tokio::test]
async fn claude_code_fixes_the_bug_in_a_sandbox_and_its_edit_is_the_sandboxs_diff() {
    let Some(program) = installed("claude") else {
        return;
    };
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(
        repo.path().join("calc.py"),
        "def add(a, b):\n    return a - b\n",
    )
    .unwrap();
    // Claude Code edits only what it has read.
    let server = Server::start(vec![
        Reply::anthropic_stream(
            0,
            &[json!({"type": "tool_use", "id": "toolu_0", "name": "Read",
                "input": {"file_path": "/workspace/calc.py"}})],
            "tool_use",
        ),
        Reply::anthropic_stream(
            1,
            &[json!({"type": "tool_use", "id": "toolu_1", "name": "Edit",
                "input": {"file_path": "/workspace/calc.py", "old_string": "return a - b", "new_string": "return a + b"}})],
            "tool_use",
        ),
        Reply::anthropic_stream(
            2,
            &[json!({"type": "text", "text": "add() adds now."})],
            "end_turn",
        ),
    ])
    .await;
    let agent = ExternalAgent::claude_code(
        ApiKey::new("sk-ant-test-key-0123"),
        Some(server.url.clone()),
    )
    .program(program);
    let seen = Arc::new(Recorder::<AgentEvent>::new());
    let agent = agent.observer(seen.clone());
    let backend =
        forq_sandbox::open_backend(BackendChoice::Kind(forq_sandbox::BackendKind::Native))
            .await
            .expect("the native backend (CI runs as root)")
            .backend;
    let spec = SandboxSpec::new(repo.path());
    let sandbox = backend.create(&spec).await.unwrap();
    let report = agent
        .run(&*sandbox, &Task::new("add(2, 3) returns -1"))
        .await;
    let Outcome::Submitted { summary, diff } = &report.outcome else {
        panic!("{report:#?}\nreceived: {:#?}", server.received());
    };
    assert_eq!(summary, "add() adds now.");
    assert!(
        diff.contains("-    return a - b\n+    return a + b\n"),
        "{diff}\n{:#?}",
        seen.events()
    );
    assert_eq!(report.steps, 3);
    assert_eq!(report.usage.input_tokens, 300);
    // The model saw the issue and got the key; the user's tree is untouched.
    let asked = server.received();
    assert_eq!(asked.len(), 3, "{asked:#?}");
    assert!(asked[0].body.to_string().contains("add(2, 3) returns -1"));
    assert_eq!(asked[0].header("x-api-key"), Some("sk-ant-test-key-0123"));
    assert_eq!(
        std::fs::read_to_string(repo.path().join("calc.py")).unwrap(),
        "def add(a, b):\n    return a - b\n"
    );
    let events = seen.events();
    assert!(events
        .iter()
        .any(|e| matches!(e, AgentEvent::ToolCall { name, .. } if name == "Edit")));
    assert!(events.iter().any(
        |e| matches!(e, AgentEvent::Observation { name, is_error: false, .. } if name == "Edit")
    ));
    // The key was handed to that command only: nothing in the sandbox's
    // workspace holds it.
    assert!(!diff.contains("sk-ant-test-key-0123"));
    sandbox.destroy().await.unwrap();
}

#[tokio::test]
async fn codex_runs_a_command_that_fixes_the_bug_and_its_diff_is_the_result() {
    let Some(program) = installed("codex") else {
        return;
    };
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(
        repo.path().join("calc.py"),
        "def add(a, b):\n    return a - b\n",
    )
    .unwrap();
    let server = Server::start(vec![
        Reply::responses_stream(
            1,
            json!({"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "exec_command",
                "arguments": json!({"cmd": "sed -i 's/a - b/a + b/' calc.py"}).to_string(), "status": "completed"}),
        ),
        Reply::responses_stream(
            2,
            json!({"type": "message", "id": "msg_2", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": "add() adds now.", "annotations": []}]}),
        ),
    ])
    .await;
    let seen = Arc::new(Recorder::<AgentEvent>::new());
    let agent = ExternalAgent::codex(
        ApiKey::new("sk-codex-test-key-0123"),
        Some(format!("{}/v1", server.url)),
    )
    .program(program)
    .model("gpt-test")
    .observer(seen.clone());
    let backend =
        forq_sandbox::open_backend(BackendChoice::Kind(forq_sandbox::BackendKind::Native))
            .await
            .expect("the native backend (CI runs as root)")
            .backend;
    let spec = SandboxSpec::new(repo.path());
    let sandbox = backend.create(&spec).await.unwrap();
    let report = agent
        .run(&*sandbox, &Task::new("add(2, 3) returns -1"))
        .await;
    let Outcome::Submitted { summary, diff } = &report.outcome else {
        panic!("{report:#?}\nreceived: {:#?}", server.received());
    };
    assert_eq!(summary, "add() adds now.");
    assert!(
        diff.contains("-    return a - b\n+    return a + b\n"),
        "{diff}"
    );
    assert_eq!(report.usage.input_tokens, 200, "{report:#?}");
    let asked = server.received();
    assert_eq!(asked.len(), 2, "{asked:#?}");
    assert!(
        asked[0].path.ends_with("/v1/responses"),
        "{}",
        asked[0].path
    );
    assert!(asked[0].body.to_string().contains("add(2, 3) returns -1"));
    assert_eq!(
        asked[0].header("authorization"),
        Some("Bearer sk-codex-test-key-0123")
    );
    let events = seen.events();
    assert!(
        events.iter().any(
            |e| matches!(e, AgentEvent::Observation { name, is_error: false, .. } if name == "command")
        ),
        "{events:#?}"
    );
    sandbox.destroy().await.unwrap();
}

/// Attack (forq's adversarial corpus, SECURITY.md): an external agent's
/// shell tool runs the repository's tests, which read the environment and
/// call the model's host themselves. The program holds a dummy key worth
/// nothing outside its run, its model is reached only through forq's
/// relay (which puts the real key on), and the sandbox reaches nothing
/// else: not the model's host, not the key.
#[tokio::test]
async fn an_external_agent_never_holds_the_key_and_reaches_only_the_relay() {
    let server = answering_once("hello through the relay").await;
    // A stand-in for Claude Code: what any program in the sandbox could do.
    let script = format!(
        r#"#!/bin/sh
env > /workspace/env.txt
exec python3 -c '
import json, os, urllib.request
def call(url, key):
    req = urllib.request.Request(url + "/v1/messages", data=b"{{}}",
        headers={{"x-api-key": key, "content-type": "application/json"}})
    try:
        return urllib.request.urlopen(req, timeout=5).read().decode()
    except Exception as e:
        return "refused: " + type(e).__name__
relayed = call(os.environ["ANTHROPIC_BASE_URL"], os.environ["ANTHROPIC_API_KEY"])
direct = call("{direct}", os.environ["ANTHROPIC_API_KEY"])
print(json.dumps({{"type": "result", "subtype": "success", "is_error": False,
    "result": json.dumps({{"relayed": "relay" in relayed, "direct": direct[:40]}})}}))
'
"#,
        direct = server.url
    );
    let (said, _, sandbox, _repo) = stand_in(&server, &script, |a| a).await;
    assert_eq!(
        said["relayed"], true,
        "the model answered through the relay: {said}"
    );
    assert!(
        said["direct"].as_str().unwrap().starts_with("refused"),
        "the model's host is not reachable from the sandbox: {said}"
    );
    let env = sandbox
        .read_file(std::path::Path::new("env.txt"))
        .await
        .unwrap();
    let env = String::from_utf8(env).unwrap();
    assert!(!env.contains("sk-ant-real-key-4567"), "{env}");
    assert!(env.contains("ANTHROPIC_API_KEY=forq-relay-"), "{env}");
    let asked = server.received();
    assert_eq!(asked.len(), 1, "{asked:#?}");
    assert_eq!(asked[0].header("x-api-key"), Some("sk-ant-real-key-4567"));
    sandbox.destroy().await.unwrap();
}

/// Attack (SECURITY.md's corpus): the relay was an open proxy to the model
/// provider with forq's key — any method, any path (files, batches,
/// fine-tuning), server-side tools that fetch any URL for a sandbox with
/// no network, bodies of any size, spending the run's budget never saw.
/// Now only the protocol's calls pass, server-side tools and MCP servers
/// are taken out, bodies are capped, and past the budget nothing passes.
#[tokio::test]
async fn the_relay_lets_through_only_the_protocol_within_the_budget() {
    let server = answering_once("hello").await;
    let script = stand_in_python(
        r#"ask = {"model": "claude-x", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}],
    "tools": [{"type": "web_fetch_20250910", "name": "web_fetch"},
              {"type": "web_search_20250305", "name": "web_search"},
              {"name": "mine", "input_schema": {"type": "object"}}],
    "mcp_servers": [{"type": "url", "url": "https://evil.example/mcp", "name": "x"}]}
said = {
    "files": call("POST", "/v1/files", {}),
    "batches": call("GET", "/v1/messages/batches"),
    "dots": call("POST", "/v1/messages/../files", {}),
    "huge": call("POST", "/v1/messages", b"{\"a\": \"" + b"x" * (33 << 20) + b"\"}"),
    "first": call("POST", "/v1/messages", ask),
    "past_budget": call("POST", "/v1/messages", ask),
}
"#,
    );
    let (said, report, sandbox, _repo) = stand_in(&server, &script, |a| a.max_tokens(1)).await;
    assert_eq!(
        said,
        json!({"files": 403, "batches": 403, "dots": 403, "huge": 413, "first": 200, "past_budget": 400}),
        "{said}"
    );
    let asked = server.received();
    assert_eq!(
        asked.len(),
        1,
        "only the one call of the protocol reached the model: {asked:#?}"
    );
    assert_eq!(asked[0].path, "/v1/messages");
    let tools: Vec<&str> = asked[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["mine"], "server-side tools are taken out");
    assert!(
        asked[0].body.get("mcp_servers").is_none(),
        "{:?}",
        asked[0].body
    );
    assert!(
        report.usage.input_tokens >= 100,
        "the relay counted the answer: {report:#?}"
    );
    sandbox.destroy().await.unwrap();
}

/// Attack: a program under a token budget asks for a long answer, reads
/// its first event and hangs up before the model's usage arrives (the
/// model goes on, and bills, up to the request's maximum), then asks
/// again, and fires more requests at once. The relay holds each request's
/// bound against the budget while its answer streams and charges a cut
/// answer the whole bound: past the budget nothing more passes. Before,
/// the cut answer counted only its first event's 101 tokens and the next
/// request went through.
#[tokio::test]
async fn an_answer_cut_short_is_charged_its_whole_bound() {
    let mut pieces = vec![format!(
        "event: message_start\ndata: {}\n\n",
        json!({"type": "message_start", "message": {"id": "msg_0", "type": "message",
            "role": "assistant", "model": "scripted", "content": [], "stop_reason": null,
            "stop_sequence": null, "usage": {"input_tokens": 100, "output_tokens": 1}}})
    )];
    // A long answer: a ping every 5 ms for ten seconds.
    pieces.extend(std::iter::repeat_n(": ping\n\n".to_owned(), 2000));
    let server = Server::start(vec![Reply::Events(pieces)]).await;
    let script = stand_in_python(
        r#"ask = {"model": "claude-x", "max_tokens": 4000, "stream": True,
    "messages": [{"role": "user", "content": "write a long essay"}]}
first = urllib.request.urlopen(request("POST", "/v1/messages", ask), timeout=20)
first.readline()
first.close()
said = {"again": call("POST", "/v1/messages", ask),
    "more": [call("POST", "/v1/messages", ask) for _ in range(3)]}
"#,
    );
    let (said, report, sandbox, _repo) = stand_in(&server, &script, |a| a.max_tokens(1000)).await;
    assert_eq!(
        said,
        json!({"again": 400, "more": [400, 400, 400]}),
        "{said}"
    );
    assert_eq!(
        server.received().len(),
        1,
        "only the first request reached the model"
    );
    assert!(
        report.usage.output_tokens >= 4000,
        "the cut answer was charged its bound: {report:#?}"
    );
    sandbox.destroy().await.unwrap();
}

/// A stand-in program (see [`stand_in`]): Python that has `request` and
/// `call(method, path, body)` (the answer's status, read whole) against
/// the relay, runs `body`, which sets `said`, and says `said` as its
/// result.
fn stand_in_python(body: &str) -> String {
    format!(
        r#"#!/bin/sh
exec python3 -c '
import json, os, urllib.request, urllib.error
base, key = os.environ["ANTHROPIC_BASE_URL"], os.environ["ANTHROPIC_API_KEY"]
def request(method, path, body=None):
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    return urllib.request.Request(base + path, data=data, method=method,
        headers={{"x-api-key": key, "content-type": "application/json"}})
def call(method, path, body=None):
    try:
        with urllib.request.urlopen(request(method, path, body), timeout=20) as r:
            r.read()
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except Exception as e:
        return type(e).__name__
{body}print(json.dumps({{"type": "result", "subtype": "success", "is_error": False, "result": json.dumps(said)}}))
'
"#
    )
}

/// A model server that answers one request with `text`.
async fn answering_once(text: &str) -> Server {
    Server::start(vec![Reply::anthropic_stream(
        0,
        &[json!({"type": "text", "text": text})],
        "end_turn",
    )])
    .await
}

/// Runs `script` as a stand-in for Claude Code (`fake-claude`, in a native
/// sandbox over a fresh repository) with the key `sk-ant-real-key-4567`,
/// its model at `server`, the agent shaped by `shape`: what its result
/// said (JSON), its report, the sandbox and the repository.
async fn stand_in(
    server: &Server,
    script: &str,
    shape: impl FnOnce(ExternalAgent) -> ExternalAgent,
) -> (
    serde_json::Value,
    forq_agent::agent::RunReport,
    Box<dyn forq_sandbox::Sandbox>,
    tempfile::TempDir,
) {
    let backend =
        forq_sandbox::open_backend(BackendChoice::Kind(forq_sandbox::BackendKind::Native))
            .await
            .expect("the native backend (CI runs as root)")
            .backend;
    let repo = tempfile::tempdir().unwrap();
    let path = repo.path().join("fake-claude");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let agent = shape(
        ExternalAgent::claude_code(
            ApiKey::new("sk-ant-real-key-4567"),
            Some(server.url.clone()),
        )
        .program("/workspace/fake-claude"),
    );
    let sandbox = backend
        .create(&SandboxSpec::new(repo.path()))
        .await
        .unwrap();
    let report = agent.run(&*sandbox, &Task::new("say hello")).await;
    let Outcome::Submitted { summary, .. } = &report.outcome else {
        panic!("{report:#?}");
    };
    let said = serde_json::from_str(summary).unwrap();
    (said, report, sandbox, repo)
}
