//! The context budget against a server with a small window: a long run
//! whose history outgrows the window is fitted step by step and ends with
//! an outcome; the server never receives a request over its window.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use forq_agent::agent::{Agent, AgentEvent, CodingAgent, Outcome, Task};
use forq_agent::tools::Toolbox;
use forq_events::Recorder;
use forq_sandbox::{BackendChoice, SandboxSpec};
use serde_json::{json, Value};

use super::server::{Received, Reply, Server};

/// The server's window, in tokens.
const WINDOW: usize = 4_096;

/// Tokens as the server counts them: four characters a token over what
/// the request carries (its messages and tools), and what it asks for.
fn tokens_asked(req: &Received) -> usize {
    let sent = req.body["messages"].to_string().len() + req.body["tools"].to_string().len();
    sent / 4 + req.body["max_tokens"].as_u64().unwrap_or(0) as usize
}

fn call(n: usize, name: &str, arguments: Value) -> Reply {
    Reply::ok(
        json!({"model": "small", "choices": [{"index": 0, "finish_reason": "tool_calls",
        "message": {"role": "assistant", "content": "Looking further.", "tool_calls": [{"id": format!("call_{n}"),
            "type": "function", "function": {"name": name, "arguments": arguments.to_string()}}]}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 10}}),
    )
}

#[tokio::test]
async fn a_long_run_on_a_small_window_is_fitted_and_never_sent_over_it() {
    // A repository with a file whose every page is long.
    let dir = tempfile::tempdir().unwrap();
    let line = "x = 1  # a long line of a generated table, ".repeat(4);
    let big: String = (0..400).map(|n| format!("{line}{n}\n")).collect();
    std::fs::write(dir.path().join("table.py"), &big).unwrap();
    let backend = forq_sandbox::open_backend(BackendChoice::Auto)
        .await
        .expect("an isolating backend")
        .backend;
    let sb = backend.create(&SandboxSpec::new(dir.path())).await.unwrap();
    // The model pages through the file for twelve steps, then submits;
    // a request over the window is refused as a llama.cpp server would.
    let asked = Arc::new(Mutex::new(Vec::new()));
    let steps = Arc::new(AtomicUsize::new(0));
    let (seen, count) = (asked.clone(), steps.clone());
    let server = Server::answering(move |req| {
        let tokens = tokens_asked(req);
        seen.lock().unwrap().push(tokens);
        if tokens > WINDOW {
            return Reply::status(
                400,
                json!({"error": {"message": format!("Requested tokens ({tokens}) exceed context window of {WINDOW}")}}),
            );
        }
        let n = count.fetch_add(1, Ordering::SeqCst);
        if n < 12 {
            call(n, "view_file", json!({"path": "table.py", "start_line": 1 + n * 30}))
        } else {
            call(n, "submit", json!({"summary": "read it all"}))
        }
    })
    .await;
    let events = Arc::new(Recorder::<AgentEvent>::new());
    let report = Agent::new(Arc::new(super::openai(&server)), "small")
        .tools(Toolbox::editing())
        .context_window(WINDOW as u32)
        .observer(events.clone())
        .run(
            &*sb,
            &Task::new("Read table.py through and say what it holds."),
        )
        .await;
    assert!(
        matches!(report.outcome, Outcome::Submitted { .. }),
        "{:?}",
        report.outcome
    );
    let asked = asked.lock().unwrap().clone();
    assert!(
        asked.iter().all(|t| *t <= WINDOW),
        "a request over the window: {asked:?}"
    );
    assert_eq!(
        asked.len(),
        13,
        "one request a step, none refused: {asked:?}"
    );
    let condensed: Vec<u32> = events
        .events()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Condensed { step, .. } => Some(*step),
            _ => None,
        })
        .collect();
    assert!(
        !condensed.is_empty(),
        "the history outgrew the window: {asked:?}"
    );
    eprintln!(
        "tokens asked per step (window {WINDOW}): {asked:?}; first condensed at step {}",
        condensed[0]
    );
    let _ = sb.destroy().await;
}

#[tokio::test]
async fn a_reply_that_repeats_itself_costs_a_step_not_the_history() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("calc.py"),
        "def add(a, b):\n    return a - b\n",
    )
    .unwrap();
    let backend = forq_sandbox::open_backend(BackendChoice::Auto)
        .await
        .expect("an isolating backend")
        .backend;
    let sb = backend.create(&SandboxSpec::new(dir.path())).await.unwrap();
    let looping = "I should look at the file.\n".repeat(40);
    let steps = Arc::new(AtomicUsize::new(0));
    let count = steps.clone();
    let server = Server::answering(move |_| {
        if count.fetch_add(1, Ordering::SeqCst) == 0 {
            return Reply::ok(
                json!({"model": "small", "choices": [{"index": 0, "finish_reason": "length",
                "message": {"role": "assistant", "content": looping}}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 400}}),
            );
        }
        call(1, "submit", json!({"summary": "nothing to do"}))
    })
    .await;
    let report = Agent::new(Arc::new(super::openai(&server)), "small")
        .context_window(WINDOW as u32)
        .run(&*sb, &Task::new("Look at calc.py."))
        .await;
    assert!(
        matches!(report.outcome, Outcome::Submitted { .. }),
        "{:?}",
        report.outcome
    );
    let sent = server.received().last().unwrap().body["messages"].to_string();
    assert!(
        !sent.contains("I should look at the file.\\nI should look"),
        "{sent}"
    );
    assert!(sent.contains("repeated themselves were dropped"), "{sent}");
    assert!(sent.contains("Reply with one tool call"), "{sent}");
    let _ = sb.destroy().await;
}
