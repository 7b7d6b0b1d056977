//! The agentic bootstrap fallback's model side against a loopback server:
//! the model's steps run in a real sandbox, each observation goes back to
//! it, and the gate's evidence (not the model) decides.

use std::sync::Arc;

use forq_agent::configure::ModelConfigurator;
use forq_bootstrap::{GateOptions, Verdict};
use serde_json::json;

use super::openai;
use super::server::{Reply, Server};

fn step(step: serde_json::Value) -> Reply {
    Reply::ok(json!({
        "model": "gpt-test",
        "choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": step.to_string()}}],
        "usage": {"prompt_tokens": 400, "completion_tokens": 40}
    }))
}

#[tokio::test]
async fn a_models_steps_bootstrap_a_repository_detection_missed() {
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(
        repo.path().join("mathlib.py"),
        "def double(x):\n    return 2 * x\n",
    )
    .unwrap();
    std::fs::create_dir_all(repo.path().join("qa")).unwrap();
    std::fs::write(
        repo.path().join("qa/check_math.py"),
        "import sys, unittest\nsys.path.insert(0, '.')\nfrom mathlib import double\n\n\
         class Double(unittest.TestCase):\n    def test_two(self):\n        self.assertEqual(double(2), 4)\n",
    )
    .unwrap();
    let checks = "python3 -m unittest discover -s qa -p 'check_*.py' -v";
    let server = Server::start(vec![
        step(json!({"action": "run", "command": "echo configured-marker", "why": "see that commands run"})),
        // A claim of success is not success: this runs no test.
        step(json!({"action": "test", "command": "echo all good", "why": "done?"})),
        step(json!({"action": "test", "command": checks, "why": "the checks under qa/"})),
    ])
    .await;
    let backend = forq_sandbox::open_backend(forq_sandbox::BackendChoice::Auto)
        .await
        .expect("an isolating backend (CI runs as root, with docker)")
        .backend;
    let mut options = GateOptions::default();
    options.configurator = Some(Arc::new(
        ModelConfigurator::new(Arc::new(openai(&server)), "gpt-test").max_tokens(100_000),
    ));
    let record = forq_bootstrap::run(&*backend, repo.path(), &options)
        .await
        .unwrap();
    assert_eq!(record.verdict, Verdict::Bootstrapped, "{record:#?}");
    assert_eq!(record.green_stack().unwrap().command, checks);
    let asked = server.received();
    assert_eq!(asked.len(), 3);
    // Each request shows the steps before it with what they printed.
    let prompt = |i: usize| asked[i].body["messages"].to_string();
    assert!(prompt(0).contains("qa/check_math.py"), "{}", prompt(0));
    assert!(prompt(1).contains("configured-marker"), "{}", prompt(1));
    assert!(prompt(2).contains("not bootstrapped"), "{}", prompt(2));
}

#[tokio::test]
async fn a_spent_token_budget_ends_in_failed_agentic() {
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(repo.path().join("notes.txt"), "nothing to test\n").unwrap();
    let server = Server::start(vec![step(
        json!({"action": "run", "command": "true", "why": "look around"}),
    )])
    .await;
    let backend = forq_sandbox::open_backend(forq_sandbox::BackendChoice::Auto)
        .await
        .unwrap()
        .backend;
    let mut options = GateOptions::default();
    options.configurator = Some(Arc::new(
        ModelConfigurator::new(Arc::new(openai(&server)), "gpt-test").max_tokens(100),
    ));
    let record = forq_bootstrap::run(&*backend, repo.path(), &options)
        .await
        .unwrap();
    assert_eq!(record.verdict, Verdict::FailedAgentic, "{record:#?}");
    assert!(record.reason.contains("token budget"), "{}", record.reason);
    assert_eq!(server.received().len(), 1);
}
