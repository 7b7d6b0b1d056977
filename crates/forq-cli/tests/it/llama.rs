//! forq against a model server nobody here wrote: llama.cpp's
//! OpenAI-compatible server (llama-cpp-python's, built by `.ci/run`) with
//! Gemma 3 270M, on loopback with a 4,096-token window. The model is too
//! small to fix anything: each command must end in a decision or an
//! outcome, never in a protocol or context error.

use std::path::PathBuf;
use std::process::Output;
use std::time::{Duration, Instant};

use super::agent::forq_env;
use super::repo_root;

/// The server, killed when dropped (its process is `kill_on_drop`).
struct Llama {
    _child: tokio::process::Child,
    url: String,
}

/// Starts the server from `FORQ_TEST_LLAMA_PYTHON` and
/// `FORQ_TEST_LLAMA_MODEL`; `None` (a skip, a failure under CI) when they
/// are not set.
async fn llama() -> Option<Llama> {
    let (Some(python), Some(model)) = (
        std::env::var_os("FORQ_TEST_LLAMA_PYTHON"),
        std::env::var_os("FORQ_TEST_LLAMA_MODEL"),
    ) else {
        assert!(
            std::env::var_os("CI").is_none(),
            "FORQ_TEST_LLAMA_PYTHON and FORQ_TEST_LLAMA_MODEL are unset: .ci/run builds llama.cpp's server and sets them"
        );
        eprintln!(
            "SKIPPED: no llama.cpp server (set FORQ_TEST_LLAMA_PYTHON and FORQ_TEST_LLAMA_MODEL)"
        );
        return None;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = forq_sandbox::host_command(python)
        .args(["-m", "llama_cpp.server", "--model"])
        .arg(model)
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["--n_ctx", "4096", "--n_threads", "2", "--verbose", "false"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start llama.cpp's server");
    let server = Llama {
        _child: child,
        url: format!("http://127.0.0.1:{port}/v1"),
    };
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(120) {
        if let Ok(resp) = reqwest::get(format!("{}/models", server.url)).await {
            if resp.status().is_success() {
                return Some(server);
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    panic!("llama.cpp's server did not answer within two minutes");
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Neither a protocol nor a context error ended the command: the model's
/// answers were read, and a request refused as too long was fitted again
/// (said as a warning) rather than failing the command.
fn assert_no_protocol_or_context_error(what: &str, out: &Output) {
    let said = stderr(out);
    let errors: Vec<&str> = said
        .lines()
        .filter(|l| l.starts_with("forq: error"))
        .collect();
    for error in [
        "a reply forq cannot read",
        "longer than the model's context",
        "rejected the request",
        "kept failing",
    ] {
        assert!(
            !errors.iter().any(|l| l.contains(error)),
            "{what}: {error}: {said}"
        );
    }
}

fn calc_copy(dir: &std::path::Path) -> PathBuf {
    let repo = dir.join("calc");
    forq_search::bench::copy_tree(&repo_root().join("examples/calc"), &repo).unwrap();
    repo
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_local_server_answers_triage_the_agent_and_the_llm_brancher() {
    let Some(server) = llama().await else {
        return;
    };
    let local = ["--provider", "llamacpp", "--base-url", server.url.as_str()];
    // What the endpoint takes, found by asking it.
    let models = forq_env(&[&["models", "--json"][..], &local].concat(), &[]).await;
    let said: serde_json::Value = serde_json::from_slice(&models.stdout).unwrap();
    assert_eq!(models.status.code(), Some(0), "{said} {}", stderr(&models));
    assert_eq!(said["structured_output"], "json_object", "{said}");
    assert_eq!(said["native_tools"], true, "{said}");
    // Triage: the server takes no json_schema; a decision all the same.
    let triage = forq_env(
        &[
            &[
                "triage",
                "--text",
                "add() subtracts instead of adding",
                "--repo",
                "examples/calc",
                "--json",
            ][..],
            &local,
        ]
        .concat(),
        &[],
    )
    .await;
    assert_no_protocol_or_context_error("triage", &triage);
    let code = triage.status.code();
    assert!(
        matches!(code, Some(0 | 1)),
        "triage exit {code:?}: {}",
        stderr(&triage)
    );
    let decision: serde_json::Value = serde_json::from_slice(&triage.stdout).unwrap();
    assert!(decision["act"].is_boolean(), "{decision}");
    // The agent: a few steps in a 4,096-token window, an outcome.
    let dir = tempfile::tempdir().unwrap();
    let repo = calc_copy(dir.path());
    let agent = forq_env(
        &[
            &[
                "agent",
                "run",
                "--text",
                "add() subtracts instead of adding",
                "--repo",
                repo.to_str().unwrap(),
            ][..],
            &["--max-steps", "3", "--json"],
            &local,
        ]
        .concat(),
        &[],
    )
    .await;
    assert_no_protocol_or_context_error("agent run", &agent);
    let code = agent.status.code();
    assert!(
        matches!(code, Some(0 | 1)),
        "agent run exit {code:?}: {}",
        stderr(&agent)
    );
    let report: serde_json::Value = serde_json::from_slice(&agent.stdout).unwrap();
    assert_ne!(report["outcome"]["outcome"], "failed", "{report}");
    // A fix with the model brancher: a search that ends solved or not.
    let fixed = forq_env(
        &[
            &[
                "fix",
                repo.to_str().unwrap(),
                "--brancher",
                "llm",
                "--max-nodes",
                "2",
                "--json",
            ][..],
            &local,
        ]
        .concat(),
        &[],
    )
    .await;
    assert_no_protocol_or_context_error("fix", &fixed);
    let code = fixed.status.code();
    assert!(
        matches!(code, Some(0 | 1)),
        "fix exit {code:?}: {}",
        stderr(&fixed)
    );
}
