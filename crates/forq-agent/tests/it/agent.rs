//! The coding-agent loop end to end: a scripted model (replay, and the
//! OpenAI protocol on loopback) fixes a failing test in a real sandbox.

use std::path::Path;
use std::sync::Arc;

use forq_agent::agent::{Agent, AgentEvent, CodingAgent, Outcome, Task};
use forq_agent::cost::Budget;
use forq_agent::message::{Message, Part, Response, Role, StopReason, Usage};
use forq_agent::provider::{ApiKey, OpenAi, Replay, RetryPolicy};
use forq_events::Recorder;
use forq_sandbox::{BackendChoice, Sandbox, SandboxSpec};
use serde_json::json;

use super::server::{Reply, Server};

const CALC: &str = "def add(a, b):\n    return a - b\n";
const TEST: &str = "import unittest\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n";

fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("calc.py"), CALC).unwrap();
    std::fs::create_dir(dir.path().join("tests")).unwrap();
    std::fs::write(dir.path().join("tests/__init__.py"), "").unwrap();
    std::fs::write(dir.path().join("tests/test_calc.py"), TEST).unwrap();
    dir
}

async fn sandbox(repo: &Path) -> (Arc<dyn forq_sandbox::Backend>, Box<dyn Sandbox>) {
    let backend = forq_sandbox::open_backend(BackendChoice::Auto)
        .await
        .expect("an isolating backend (CI runs as root, with docker)")
        .backend;
    let sb = backend.create(&SandboxSpec::new(repo)).await.unwrap();
    (backend, sb)
}

fn tool_call(n: usize, name: &str, args: serde_json::Value) -> Response {
    Response {
        message: Message {
            role: Role::Assistant,
            parts: vec![Part::ToolCall {
                id: format!("call_{n}"),
                name: name.to_owned(),
                arguments: args,
                invalid_arguments: None,
            }],
        },
        usage: Usage {
            input_tokens: 1000,
            output_tokens: 50,
        },
        stop: StopReason::ToolUse,
        model: "scripted".to_owned(),
    }
}

/// Read, edit, test, submit.
fn script() -> Vec<Response> {
    vec![
        tool_call(1, "view_file", json!({"path": "calc.py"})),
        tool_call(
            2,
            "edit",
            json!({"path": "calc.py", "old": "return a - b", "new": "return a + b"}),
        ),
        tool_call(3, "run", json!({"command": "python3 -m unittest -v"})),
        tool_call(
            4,
            "submit",
            json!({"summary": "add subtracted; it adds now"}),
        ),
    ]
}

#[tokio::test]
async fn a_scripted_run_reads_edits_tests_and_submits_the_sandboxs_diff() {
    let dir = repo();
    let (_backend, sb) = sandbox(dir.path()).await;
    let out = tempfile::tempdir().unwrap();
    let transcript = out.path().join("run.jsonl");
    let events = Arc::new(Recorder::<AgentEvent>::new());
    let agent = Agent::new(Arc::new(Replay::new(script())), "scripted")
        .transcript(&transcript)
        .observer(events.clone());
    let report = agent.run(&*sb, &Task::new("add(2, 3) returns -1")).await;
    let Outcome::Submitted { summary, diff } = &report.outcome else {
        panic!("{report:#?}");
    };
    assert_eq!(summary, "add subtracted; it adds now");
    assert!(
        diff.contains("-    return a - b\n+    return a + b\n"),
        "{diff}"
    );
    assert_eq!((report.steps, report.usage.input_tokens), (4, 4000));
    // The repository itself is untouched: the change lives in the sandbox.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("calc.py")).unwrap(),
        CALC
    );
    // The test run inside the loop saw the fix.
    let seen = events.events();
    let run = seen.iter().find_map(|e| match e {
        AgentEvent::Observation {
            name,
            summary,
            is_error,
            ..
        } if name == "run" => Some((summary.clone(), *is_error)),
        _ => None,
    });
    assert_eq!(
        run.map(|(s, e)| (s.starts_with("exit 0"), e)),
        Some((true, false))
    );
    assert!(matches!(
        seen.first(),
        Some(AgentEvent::StepStarted { step: 1 })
    ));
    assert!(matches!(
        seen.last(),
        Some(AgentEvent::Finished {
            outcome: Outcome::Submitted { .. }
        })
    ));
    // The transcript replays to the same patch in a fresh sandbox.
    let (_backend2, again) = sandbox(dir.path()).await;
    let replayed = Agent::new(
        Arc::new(Replay::from_jsonl(&transcript).unwrap()),
        "scripted",
    )
    .run(&*again, &Task::new("add(2, 3) returns -1"))
    .await;
    assert_eq!(replayed.outcome, report.outcome);
}

#[tokio::test]
async fn a_budget_ends_the_run_with_the_best_attempt() {
    let dir = repo();
    let (_backend, sb) = sandbox(dir.path()).await;
    let replay = Arc::new(Replay::new(script()));
    let agent = Agent::new(replay.clone(), "scripted").budget(Budget::default().max_steps(2));
    let mut task = Task::new("fix add");
    task.conventions = "- python functions are snake_case (3 of 3, 100%)\n".to_owned();
    let report = agent.run(&*sb, &task).await;
    // The codebase's conventions ride in the system prompt of every call.
    let asked = replay.requests();
    assert_eq!(asked.len(), 2);
    assert!(
        asked.iter().all(|r| r.system.ends_with(
            "Write code the way this codebase does.\n- python functions are snake_case (3 of 3, 100%)\n"
        )),
        "{}",
        asked[0].system
    );
    let Outcome::NeedsHuman {
        reason,
        question,
        diff,
    } = &report.outcome
    else {
        panic!("{report:#?}");
    };
    assert_eq!(reason, "the step budget of 2 model calls is spent");
    assert!(question.is_none());
    assert!(
        diff.contains("+    return a + b"),
        "the edit of step 2 is the best attempt: {diff}"
    );
    assert_eq!(report.steps, 2);
}

#[tokio::test]
async fn malformed_arguments_get_an_error_answer_and_give_up_needs_a_human() {
    let dir = repo();
    let (_backend, sb) = sandbox(dir.path()).await;
    let mut broken = tool_call(1, "view_file", serde_json::Value::Null);
    if let Part::ToolCall {
        invalid_arguments, ..
    } = &mut broken.message.parts[0]
    {
        *invalid_arguments = Some("{\"path\": ".to_owned());
    }
    let replies = vec![
        broken,
        tool_call(
            2,
            "give_up",
            json!({"reason": "two readings", "question": "should add saturate?"}),
        ),
    ];
    let events = Arc::new(Recorder::<AgentEvent>::new());
    let report = Agent::new(Arc::new(Replay::new(replies)), "scripted")
        .observer(events.clone())
        .run(&*sb, &Task::new("fix add"))
        .await;
    assert_eq!(
        report.outcome,
        Outcome::NeedsHuman {
            reason: "two readings".into(),
            question: Some("should add saturate?".into()),
            diff: String::new()
        }
    );
    let first = events.events().iter().find_map(|e| match e {
        AgentEvent::Observation {
            is_error, summary, ..
        } => Some((*is_error, summary.clone())),
        _ => None,
    });
    assert!(first.is_some_and(|(e, s)| e && s.contains("not valid JSON")));
}

#[tokio::test]
async fn a_run_over_http_writes_no_file_that_holds_the_key() {
    // The OpenAI protocol on loopback plays the same script, and the
    // server echoes the key in an error body once (retried: a 500).
    const SECRET: &str = "sk-forq-scan-me-4f1c2a9e";
    let reply = |r: &Response| {
        let Part::ToolCall {
            id,
            name,
            arguments,
            ..
        } = &r.message.parts[0]
        else {
            unreachable!()
        };
        Reply::ok(
            json!({"model": "gpt-test", "choices": [{"index": 0, "finish_reason": "tool_calls",
            "message": {"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function",
                "function": {"name": name, "arguments": arguments.to_string()}}]}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10}}),
        )
    };
    let mut replies = vec![Reply::status(
        500,
        json!({"error": {"message": format!("upstream rejected key {SECRET}")}}),
    )];
    replies.extend(script().iter().map(reply));
    let server = Server::start(replies).await;
    let provider = OpenAi::new(&format!("{}/v1", server.url), Some(ApiKey::new(SECRET)))
        .unwrap()
        .retry(RetryPolicy::default().base_delay(std::time::Duration::from_millis(5)));
    let dir = repo();
    let (_backend, sb) = sandbox(dir.path()).await;
    let out = tempfile::tempdir().unwrap();
    let agent = Agent::new(Arc::new(provider), "gpt-test").transcript(out.path().join("run.jsonl"));
    let report = agent.run(&*sb, &Task::new("fix add")).await;
    assert!(
        matches!(report.outcome, Outcome::Submitted { .. }),
        "{report:#?}"
    );
    assert_eq!(
        server.received()[1].header("authorization"),
        Some(format!("Bearer {SECRET}").as_str())
    );
    // Everything forq wrote: the transcript, the repository, the patch.
    let mut scanned = 0;
    for root in [out.path(), dir.path()] {
        for entry in walk(root) {
            let bytes = std::fs::read(&entry).unwrap();
            assert!(
                !String::from_utf8_lossy(&bytes).contains(SECRET),
                "{} holds the key",
                entry.display()
            );
            scanned += 1;
        }
    }
    assert!(scanned >= 4, "{scanned} files scanned");
    assert!(!format!("{report:?}").contains(SECRET));
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[tokio::test]
async fn a_streamed_run_tells_observers_the_text_as_it_arrives() {
    use super::server::{chunk, sse};
    let streamed = sse(&[
        chunk(json!({"role": "assistant", "content": "Nothing "}), None),
        chunk(json!({"content": "to change."}), None),
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                "function": {"name": "submit", "arguments": "{\"summary\": \"already right\"}"}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
    ]);
    let server = Server::start(vec![Reply::Events(streamed)]).await;
    let provider = OpenAi::new(&format!("{}/v1", server.url), None).unwrap();
    let dir = repo();
    let (_backend, sb) = sandbox(dir.path()).await;
    let events = Arc::new(Recorder::<AgentEvent>::new());
    let report = Agent::new(Arc::new(provider), "gpt-test")
        .stream(true)
        .observer(events.clone())
        .run(&*sb, &Task::new("is add right?"))
        .await;
    assert_eq!(
        report.outcome,
        Outcome::Submitted {
            summary: "already right".into(),
            diff: String::new()
        }
    );
    assert_eq!(server.received()[0].body["stream"], json!(true));
    let text: Vec<String> = events
        .events()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Text { step: 1, delta } => Some(delta.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(text, ["Nothing ", "to change."]);
}
