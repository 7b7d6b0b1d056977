//! GitHub's webhooks: signed, deduplicated, acted on only for trusted authors.

use super::*;

/// A loopback "GitHub API" that answers every request with issue `number`.
async fn fake_github(number: u64) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let issue =
        json!({"number": number, "title": "clamp() is wrong", "body": "clamp(5, 0, 3) gives 5",
        "html_url": format!("https://github.com/o/r/issues/{number}"), "state": "open",
        "labels": [], "user": {"login": "someone"}})
        .to_string();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let issue = issue.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 8192];
                let _ = conn.read(&mut buf).await;
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{issue}",
                    issue.len()
                );
                let _ = conn.write_all(reply.as_bytes()).await;
            });
        }
    });
    url
}

pub(crate) fn sign(secret: &str, body: &[u8]) -> String {
    use hmac::{KeyInit, Mac};
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(body);
    let hex: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256={hex}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn github_webhooks_are_verified_deduplicated_and_acted_on() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    std::fs::create_dir_all(&state).unwrap();
    let db = state.join("forq.db");
    let store = Arc::new(Store::open(&db).unwrap());
    let mut host = forq_sandbox::HostOptions::default();
    host.state_dir = Some(dir.path().join("sandboxes"));
    let backend = Arc::new(forq_sandbox::HostBackend::open(host).unwrap());
    let pipeline = forq_app::pipeline::Pipeline::new(store.clone(), &state, backend);
    let actions = forq_server::Actions::new(pipeline);
    let github = forq_app::github::Github::new(&fake_github(7).await, None);
    let (synced_tx, mut synced) = tokio::sync::mpsc::unbounded_channel::<String>();
    // A sync lasts until the test lets it end.
    let release = Arc::new(tokio::sync::Semaphore::new(0));
    let hold = release.clone();
    let sync: forq_server::GoldenSync = Arc::new(move |url: String| {
        let tx = synced_tx.clone();
        let hold = hold.clone();
        Box::pin(async move {
            let _ = tx.send(url);
            hold.acquire().await.unwrap().forget();
            Ok(())
        })
    });
    let control = Control::new(store)
        .actions(actions)
        .github(github)
        .webhook_secret("hook-secret")
        .golden_sync(sync);
    let mut options = loopback();
    // A token too: webhooks are signed instead, and need none.
    options.token = Some("api-token".to_owned());
    let (addr, task) = spawn(control, options).await;
    let hook = Hook {
        client: reqwest::Client::new(),
        url: format!("http://{addr}/webhooks/github"),
    };
    let repo = json!({"full_name": "o/r", "clone_url": "file:///nonexistent/o/r.git", "default_branch": "main"});
    deliveries_must_be_signed(&hook, &repo).await;
    comments_act_once_and_only_from_trusted_authors(&hook, &repo, &db).await;
    issues_act_only_from_trusted_authors(&hook, &repo, &db).await;
    a_push_to_the_default_branch_syncs_its_golden(&hook, &repo, addr, &mut synced, &release).await;
    task.abort();
}

/// Deliveries to the server's webhook.
struct Hook {
    client: reqwest::Client,
    url: String,
}

impl Hook {
    /// Delivers `body` as `event` with delivery id `id`, signed with the
    /// server's secret unless `signature` is given.
    async fn deliver(
        &self,
        event: &str,
        id: &str,
        body: Value,
        signature: Option<String>,
    ) -> reqwest::Result<reqwest::Response> {
        let body = body.to_string();
        let signature = signature.unwrap_or_else(|| sign("hook-secret", body.as_bytes()));
        self.client
            .post(&self.url)
            .header("X-GitHub-Event", event)
            .header("X-GitHub-Delivery", id)
            .header("X-Hub-Signature-256", signature)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
    }
}

/// Unsigned, wrongly signed: refused; signed: acknowledged.
async fn deliveries_must_be_signed(hook: &Hook, repo: &Value) {
    let ping = json!({"zen": "hi", "repository": repo});
    let unsigned = hook
        .client
        .post(&hook.url)
        .header("X-GitHub-Event", "ping")
        .header("X-GitHub-Delivery", "d0")
        .body(ping.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(unsigned.status().as_u16(), 401);
    let forged = hook
        .deliver("ping", "d1", ping.clone(), Some(sign("guess", b"{}")))
        .await
        .unwrap();
    assert_eq!(forged.status().as_u16(), 401);
    assert_eq!(
        hook.deliver("ping", "d2", ping, None)
            .await
            .unwrap()
            .status()
            .as_u16(),
        200
    );
}

/// A comment command from someone without a say does nothing; from a
/// collaborator it queues the comment's action, once, however it is
/// redelivered.
async fn comments_act_once_and_only_from_trusted_authors(
    hook: &Hook,
    repo: &Value,
    db: &std::path::Path,
) {
    let comment = |who: &str, text: &str| {
        json!({"action": "created", "issue": {"number": 7}, "repository": repo,
            "comment": {"body": text, "author_association": who}})
    };
    let stranger = hook
        .deliver(
            "issue_comment",
            "d3",
            comment("NONE", "/forq fix please"),
            None,
        )
        .await
        .unwrap();
    assert_eq!(stranger.status().as_u16(), 200);
    let said: Value = stranger.json().await.unwrap();
    assert!(
        said["done"].as_str().unwrap().contains("not none"),
        "{said}"
    );
    // From a collaborator: queued, with the comment's action.
    let ok = hook
        .deliver(
            "issue_comment",
            "d4",
            comment("COLLABORATOR", "/forq triage"),
            None,
        )
        .await
        .unwrap();
    assert_eq!(ok.status().as_u16(), 202);
    let queued: Value = ok.json().await.unwrap();
    assert_eq!(
        queued["runs"][0]["issue"]["title"], "clamp() is wrong",
        "{queued}"
    );
    assert_eq!(queued["runs"][0]["action"], "triage");
    // Redelivered: nothing twice.
    let again = hook
        .deliver(
            "issue_comment",
            "d4",
            comment("COLLABORATOR", "/forq triage"),
            None,
        )
        .await
        .unwrap();
    assert_eq!(again.status().as_u16(), 200);
    let said: Value = again.json().await.unwrap();
    assert!(
        said["done"].as_str().unwrap().contains("delivered before"),
        "{said}"
    );
    // Attack (forq's adversarial corpus, SECURITY.md): the same signed
    // body replayed under a new X-GitHub-Delivery, which the signature does
    // not cover. Known by what it signs: nothing twice.
    let replayed = hook
        .deliver(
            "issue_comment",
            "d4-replayed",
            comment("COLLABORATOR", "/forq triage"),
            None,
        )
        .await
        .unwrap();
    let said: Value = replayed.json().await.unwrap();
    assert!(
        said["done"]
            .as_str()
            .unwrap_or("")
            .contains("delivered before"),
        "{said}"
    );
    let runs = Store::open(db).unwrap().all().unwrap();
    assert_eq!(runs.len(), 1, "a redelivery queued again: {runs:?}");
}

/// Attack: any GitHub user opens an issue, which would queue a run on the
/// operator's key. Only a trusted author's issue is queued; one closed is
/// not acted on.
async fn issues_act_only_from_trusted_authors(hook: &Hook, repo: &Value, db: &std::path::Path) {
    let issue = |action: &str, who: &str| json!({"action": action, "issue": {"number": 7, "author_association": who}, "repository": repo});
    let stranger = hook
        .deliver("issues", "d9", issue("opened", "NONE"), None)
        .await
        .unwrap();
    assert_eq!(stranger.status().as_u16(), 200);
    let said: Value = stranger.json().await.unwrap();
    assert!(
        said["done"].as_str().unwrap().contains("not none"),
        "{said}"
    );
    assert_eq!(Store::open(db).unwrap().all().unwrap().len(), 1);
    let opened = hook
        .deliver("issues", "d7", issue("opened", "MEMBER"), None)
        .await
        .unwrap();
    assert_eq!(opened.status().as_u16(), 202);
    let closed = hook
        .deliver("issues", "d8", issue("closed", "MEMBER"), None)
        .await
        .unwrap();
    assert_eq!(closed.status().as_u16(), 200);
}

/// A push to another branch does nothing; to the default one, the golden
/// is synced, and the dashboard's repositories say so until it ends.
async fn a_push_to_the_default_branch_syncs_its_golden(
    hook: &Hook,
    repo: &Value,
    addr: std::net::SocketAddr,
    synced: &mut tokio::sync::mpsc::UnboundedReceiver<String>,
    release: &tokio::sync::Semaphore,
) {
    let push = |branch: &str| json!({"ref": format!("refs/heads/{branch}"), "repository": repo});
    let other = hook
        .deliver("push", "d5", push("feature"), None)
        .await
        .unwrap();
    assert_eq!(other.status().as_u16(), 200);
    let main = hook
        .deliver("push", "d6", push("main"), None)
        .await
        .unwrap();
    assert_eq!(main.status().as_u16(), 202);
    let got = tokio::time::timeout(Duration::from_secs(10), synced.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got, "file:///nonexistent/o/r.git");
    assert!(synced.try_recv().is_err(), "the other branch synced too");
    // The dashboard's repositories say the golden is syncing, then not.
    let repos = |client: reqwest::Client| async move {
        let r: Value = client
            .get(format!("http://{addr}/api/repos"))
            .bearer_auth("api-token")
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        r["repos"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["repo"] == "file:///nonexistent/o/r.git")
            .map(|r| r["golden"].clone())
    };
    let during = repos(hook.client.clone()).await.unwrap();
    assert_eq!(during["syncing"], true, "{during}");
    release.add_permits(1);
    let mut after = during;
    for _ in 0..100 {
        after = repos(hook.client.clone()).await.unwrap_or(Value::Null);
        if after.is_null() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(after.is_null(), "still syncing: {after}");
}
