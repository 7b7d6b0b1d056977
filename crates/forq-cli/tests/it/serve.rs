//! `forq serve` as a process: it says where it listens, makes a token of
//! its own (on loopback too) and answers the API over the store a queue
//! uses to requests that carry it and name its host, and refuses to be
//! reachable from elsewhere without a token.

use std::process::Stdio;

use tokio::io::{AsyncBufReadExt, BufReader};

use super::{check_exit, repo_root};

#[tokio::test]
async fn forq_serve_answers_over_the_state_directorys_store() {
    let state = tempfile::tempdir().unwrap();
    let mut child = forq_sandbox::host_command(env!("CARGO_BIN_EXE_forq"))
        .args(["serve", "--bind", "127.0.0.1:0", "--state"])
        .arg(state.path())
        .current_dir(repo_root())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let url = loop {
        let line = tokio::time::timeout(std::time::Duration::from_secs(30), lines.next_line())
            .await
            .expect("forq serve said nothing")
            .unwrap()
            .expect("forq serve ended");
        if let Some(rest) = line.split_once("listening on ").map(|(_, r)| r) {
            break rest.split_whitespace().next().unwrap().to_owned();
        }
    };
    // On loopback too a token is made (kept 0600 in the state directory)
    // and the dashboard's address with it printed.
    let token_file = state.path().join("serve-token");
    let token = std::fs::read_to_string(&token_file)
        .unwrap()
        .trim()
        .to_owned();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(&token_file).unwrap().permissions()
        ) & 0o777,
        0o600
    );
    let said = lines.next_line().await.unwrap().unwrap();
    assert!(said.contains(&format!("#token={token}")), "{said}");
    let client = reqwest::Client::new();
    // Attack (forq's adversarial corpus, SECURITY.md): another local user,
    // or a web page, calls the API on loopback without the token.
    let anon = reqwest::get(format!("{url}/api/runs")).await.unwrap();
    assert_eq!(anon.status().as_u16(), 401);
    // Attack: a page whose name was rebound to 127.0.0.1 (DNS rebinding)
    // calls with its own Host, even holding the token.
    let rebound = client
        .get(format!("{url}/api/runs"))
        .bearer_auth(&token)
        .header("Host", "attacker.example:80")
        .send()
        .await
        .unwrap();
    assert_eq!(rebound.status().as_u16(), 421);
    let runs: serde_json::Value = client
        .get(format!("{url}/api/runs"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(runs, serde_json::json!([]));
    let api: serde_json::Value = client
        .get(format!("{url}/openapi.json"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(api["info"]["title"], "forq");
    child.kill().await.unwrap();
}

#[tokio::test]
async fn forq_serve_beyond_loopback_needs_a_token() {
    let state = tempfile::tempdir().unwrap();
    let out = forq_sandbox::host_command(env!("CARGO_BIN_EXE_forq"))
        .args(["serve", "--bind", "0.0.0.0:0", "--no-token", "--state"])
        .arg(state.path())
        .env_remove("FORQ_SERVE_TOKEN")
        .output()
        .await
        .unwrap();
    check_exit(&out, 65);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("FORQ_SERVE_TOKEN"), "{said}");
}

#[tokio::test]
async fn serve_bench_reports_every_figure() {
    let out = forq_sandbox::host_command(env!("CARGO_BIN_EXE_forq"))
        .args(["serve", "bench", "--json"])
        .output()
        .await
        .unwrap();
    check_exit(&out, 0);
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["list_runs"], 1000);
    assert_eq!(r["events"], 500, "every event arrived: {r}");
    for key in [
        "list_p50_ms",
        "list_p95_ms",
        "latency_p50_ms",
        "latency_p95_ms",
    ] {
        assert!(r[key].as_f64().is_some_and(|v| v > 0.0), "{key}: {r}");
    }
    assert!(r["rss_streams_kib"].as_u64().unwrap() > 0, "{r}");
}

/// Attack: another local user plants `STATE/serve-token` before forq
/// serve first starts (a shared state directory, a world-writable parent):
/// forq adopted it, and the other user held the dashboard's token. A token
/// file forq's user does not own is refused.
#[tokio::test]
async fn a_token_file_another_user_planted_is_refused() {
    if !super::native_or_skip("a_token_file_another_user_planted_is_refused") {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let planted = state.path().join("serve-token");
    std::fs::write(&planted, "known-to-the-attacker\n").unwrap();
    std::os::unix::fs::chown(&planted, Some(65534), Some(65534)).unwrap();
    let out = forq_sandbox::host_command(env!("CARGO_BIN_EXE_forq"))
        .args(["serve", "--bind", "127.0.0.1:0", "--state"])
        .arg(state.path())
        .current_dir(repo_root())
        .output()
        .await
        .unwrap();
    check_exit(&out, 65);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("is not a file of this user's") && !said.contains("listening"),
        "{said}"
    );
}
