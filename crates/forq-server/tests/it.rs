//! forq-server against a real HTTP client on loopback, over a real SQLite
//! store that a second connection (as another forq process would) writes
//! while streams are open.

#![allow(clippy::unwrap_used)] // tests fail loudly

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use forq_app::store::{NewRun, State, Store};
use forq_server::{serve, Control, ServerError, ServerOptions};
use futures_util::StreamExt;
use serde_json::{json, Value};

#[path = "it/browser.rs"]
mod browser;

struct Served {
    url: String,
    db: std::path::PathBuf,
    _dir: tempfile::TempDir,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Served {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// `control` served in the background: where, and the task.
async fn spawn(
    control: Control,
    options: ServerOptions,
) -> (SocketAddr, tokio::task::JoinHandle<()>) {
    let (tx, rx) = tokio::sync::oneshot::channel::<SocketAddr>();
    let task = tokio::spawn(async move {
        serve(control, options, move |addr| {
            let _ = tx.send(addr);
        })
        .await
        .unwrap();
    });
    (rx.await.unwrap(), task)
}

/// A store with two runs (one with events), served on loopback.
async fn served(bind: &str, token: Option<&str>) -> (Served, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("forq.db");
    let store = Arc::new(Store::open(&db).unwrap());
    let one = store
        .create(&NewRun::fix("1", "add subtracts", "calc"))
        .unwrap();
    let two = store
        .create(&NewRun::fix("2", "clamp is wrong", "clamp"))
        .unwrap();
    store
        .transition(&two.id, State::Triaging, "triaging")
        .unwrap();
    store
        .event(&one.id, "note", json!({"text": "first"}))
        .unwrap();
    let mut options = ServerOptions::default();
    options.bind = bind.parse().unwrap();
    options.token = token.map(str::to_owned);
    options.poll = Duration::from_millis(20);
    let (addr, task) = spawn(Control::new(store), options).await;
    let url = format!("http://127.0.0.1:{}", addr.port());
    (
        Served {
            url,
            db,
            _dir: dir,
            task,
        },
        one.id,
        two.id,
    )
}

async fn get_json(url: &str) -> (u16, Value) {
    let r = reqwest::get(url).await.unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap())
}

/// Reads Server-Sent Events from `url` (with `Last-Event-ID` when given)
/// until `n` have come or the stream ends: (id, event, data) each.
async fn sse(url: &str, last: Option<u64>, n: usize) -> Vec<(u64, String, Value)> {
    let client = reqwest::Client::new();
    let mut req = client.get(url);
    if let Some(id) = last {
        req = req.header("Last-Event-ID", id.to_string());
    }
    let resp = req.send().await.unwrap();
    assert_eq!(
        resp.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    let mut body = resp.bytes_stream();
    let mut text = String::new();
    let mut out = Vec::new();
    let read = async {
        while out.len() < n {
            let Some(chunk) = body.next().await else {
                break;
            };
            text.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
            while let Some(end) = text.find("\n\n") {
                let block: String = text.drain(..end + 2).collect();
                let field = |name: &str| {
                    block
                        .lines()
                        .find_map(|l| l.strip_prefix(&format!("{name}:")))
                        .map(|v| v.trim().to_owned())
                };
                if let (Some(id), Some(data)) = (field("id"), field("data")) {
                    out.push((
                        id.parse().unwrap(),
                        field("event").unwrap_or_default(),
                        serde_json::from_str(&data).unwrap(),
                    ));
                }
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(20), read)
        .await
        .unwrap_or_else(|_| panic!("fewer than {n} events from {url}: {out:?}"));
    out
}

#[tokio::test]
async fn runs_and_their_events_are_listed_filtered_and_shown() {
    let (s, one, two) = served("127.0.0.1:0", None).await;
    let (status, runs) = get_json(&format!("{}/api/runs", s.url)).await;
    assert_eq!(status, 200);
    assert_eq!(runs.as_array().unwrap().len(), 2);
    let (_, triaging) = get_json(&format!("{}/api/runs?state=triaging", s.url)).await;
    let ids: Vec<&str> = triaging
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [two.as_str()]);
    let (_, calc) = get_json(&format!("{}/api/runs?repo=calc", s.url)).await;
    assert_eq!(calc[0]["id"], one.as_str());
    let (status, bad) = get_json(&format!("{}/api/runs?state=dancing", s.url)).await;
    assert_eq!(status, 400);
    assert!(bad["error"].as_str().unwrap().contains("triaging"), "{bad}");
    let (status, shown) = get_json(&format!("{}/api/runs/{one}", s.url)).await;
    assert_eq!(status, 200);
    assert_eq!(shown["run"]["issue"]["title"], "add subtracts");
    let kinds: Vec<&str> = shown["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"note"), "{kinds:?}");
    let (status, missing) = get_json(&format!("{}/api/runs/nope", s.url)).await;
    assert_eq!(status, 404, "{missing}");
    // A run whose search has not ended has no patch yet, and says so.
    let (status, none) = get_json(&format!("{}/api/runs/{one}/patch", s.url)).await;
    assert_eq!(status, 404);
    assert!(
        none["error"].as_str().unwrap().contains("fix.patch"),
        "{none}"
    );
    let (_, api) = get_json(&format!("{}/openapi.json", s.url)).await;
    assert_eq!(api["openapi"], "3.1.0");
    for path in [
        "/",
        "/api/runs",
        "/api/runs/{id}",
        "/api/runs/{id}/events",
        "/api/runs/{id}/stream",
        "/api/runs/{id}/patch",
        "/api/runs/{id}/tree",
        "/api/runs/{id}/files",
        "/api/runs/{id}/abort",
        "/api/runs/{id}/resume",
        "/api/runs/{id}/approve",
        "/api/runs/{id}/reject",
        "/api/stream",
        "/api/goldens",
        "/api/repos",
        "/api/issues",
        "/api/queue",
        "/api/runs/{id}/preview",
        "/api/previews",
        "/api/previews/{key}",
        "/preview/{key}/{path}",
        "/webhooks/github",
    ] {
        assert!(api["paths"].get(path).is_some(), "{path} undocumented");
    }
}

#[tokio::test]
async fn a_reconnecting_stream_misses_nothing_written_by_another_process() {
    let (s, one, _) = served("127.0.0.1:0", None).await;
    let stream = format!("{}/api/runs/{one}/stream", s.url);
    let first = sse(&stream, None, 2).await;
    let kinds: Vec<&str> = first.iter().map(|e| e.1.as_str()).collect();
    assert_eq!(kinds, ["created", "note"], "{first:?}");
    let last = first.last().unwrap().0;
    // Disconnected. Another connection to the store (another process, as
    // far as SQLite knows) writes meanwhile.
    let other = Store::open(&s.db).unwrap();
    other
        .event(&one, "note", json!({"text": "while away"}))
        .unwrap();
    other.event(&one, "node", json!({"id": 1})).unwrap();
    let again = sse(&stream, Some(last), 2).await;
    let texts: Vec<(&str, &Value)> = again.iter().map(|e| (e.1.as_str(), &e.2["data"])).collect();
    assert_eq!(
        texts,
        [
            ("note", &json!({"text": "while away"})),
            ("node", &json!({"id": 1}))
        ]
    );
    assert!(again
        .iter()
        .all(|e| e.0 > last && e.2["run"] == one.as_str()));
    // Live: an event written while connected arrives; the run's end ends
    // the stream.
    let url = stream.clone();
    let from = again.last().unwrap().0;
    let reader = tokio::spawn(async move { sse(&url, Some(from), 10).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    other.event(&one, "note", json!({"text": "live"})).unwrap();
    other
        .transition(&one, State::Failed, "stopped by the test")
        .unwrap();
    let live = reader.await.unwrap();
    let kinds: Vec<&str> = live.iter().map(|e| e.1.as_str()).collect();
    assert_eq!(kinds.first(), Some(&"note"), "{live:?}");
    assert_eq!(kinds.last(), Some(&"state"), "{live:?}");
    assert_eq!(live.last().unwrap().2["data"]["to"], "failed");
}

#[tokio::test]
async fn the_whole_queue_streams_every_runs_events_in_store_order() {
    let (s, one, two) = served("127.0.0.1:0", None).await;
    let all = sse(&format!("{}/api/stream", s.url), None, 4).await;
    let runs: Vec<&str> = all.iter().map(|e| e.2["run"].as_str().unwrap()).collect();
    assert!(
        runs.contains(&one.as_str()) && runs.contains(&two.as_str()),
        "{runs:?}"
    );
    assert!(all.windows(2).all(|w| w[0].0 < w[1].0), "{all:?}");
}

#[tokio::test]
async fn beyond_loopback_a_token_is_required_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(&dir.path().join("forq.db")).unwrap());
    let mut options = ServerOptions::default();
    options.bind = "0.0.0.0:0".parse().unwrap();
    let refused = serve(Control::new(store), options, |_| {})
        .await
        .unwrap_err();
    assert!(
        matches!(refused, ServerError::TokenRequired { .. }),
        "{refused}"
    );
    let (s, _, _) = served("0.0.0.0:0", Some("s3cret-token")).await;
    let client = reqwest::Client::new();
    let url = format!("{}/api/runs", s.url);
    let no = client.get(&url).send().await.unwrap();
    assert_eq!(no.status().as_u16(), 401);
    let body = no.text().await.unwrap();
    assert!(!body.contains("s3cret-token"), "{body}");
    let wrong = client
        .get(&url)
        .bearer_auth("s3cret-tokex")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status().as_u16(), 401);
    let yes = client
        .get(&url)
        .bearer_auth("s3cret-token")
        .send()
        .await
        .unwrap();
    assert_eq!(yes.status().as_u16(), 200);
}

#[tokio::test]
async fn an_abort_from_another_site_is_refused_and_from_this_one_recorded() {
    let (s, one, _) = served("127.0.0.1:0", None).await;
    let client = reqwest::Client::new();
    let url = format!("{}/api/runs/{one}/abort", s.url);
    let evil = client
        .post(&url)
        .header("Origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(evil.status().as_u16(), 403);
    let store = Store::open(&s.db).unwrap();
    assert!(!store.get(&one).unwrap().abort_requested);
    let host = s.url.trim_start_matches("http://").to_owned();
    let ok = client
        .post(&url)
        .header("Origin", format!("http://{host}"))
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status().as_u16(), 200);
    assert!(store.get(&one).unwrap().abort_requested);
}

/// A store and a pipeline under `dir/state` on this machine's isolating
/// backend, or `None` (said why) where there is none and this is not CI.
async fn pipeline_in(dir: &std::path::Path) -> Option<(Arc<Store>, forq_app::pipeline::Pipeline)> {
    let backend = match forq_sandbox::open_backend(forq_sandbox::BackendChoice::Auto).await {
        Ok(b) => b.backend,
        Err(e) if std::env::var_os("CI").is_none() => {
            skip(&e);
            return None;
        }
        Err(e) => panic!("an isolating backend must work under CI: {e}"),
    };
    let state = dir.join("state");
    std::fs::create_dir_all(&state).unwrap();
    let store = Arc::new(Store::open(&state.join("forq.db")).unwrap());
    let pipeline = forq_app::pipeline::Pipeline::new(store.clone(), &state, backend);
    Some((store, pipeline))
}

/// Listening on a free loopback port.
fn loopback() -> ServerOptions {
    let mut options = ServerOptions::default();
    options.bind = "127.0.0.1:0".parse().unwrap();
    options
}

/// examples/calc copied into `dir/calc`.
fn calc(dir: &std::path::Path) -> std::path::PathBuf {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/calc");
    let repo = dir.join("calc");
    std::fs::create_dir_all(repo.join("tests")).unwrap();
    for file in [
        "calc.py",
        "tests/__init__.py",
        "tests/test_calc.py",
        "ISSUE.md",
    ] {
        std::fs::copy(src.join(file), repo.join(file)).unwrap();
    }
    repo
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_issue_queued_over_http_runs_and_streams_to_its_patch() {
    let dir = tempfile::tempdir().unwrap();
    let Some((store, pipeline)) = pipeline_in(dir.path()).await else {
        return;
    };
    let control = Control::new(store).actions(forq_server::Actions::new(pipeline));
    let (addr, task) = spawn(control, loopback()).await;
    let url = format!("http://{addr}");
    let client = reqwest::Client::new();
    // Nothing named: refused with what to give.
    let none = client
        .post(format!("{url}/api/queue"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(none.status().as_u16(), 400);
    let said: Value = none.json().await.unwrap();
    assert!(
        said["error"].as_str().unwrap().contains("name the issues"),
        "{said}"
    );
    // "Burn down": one issue, fixed offline, watched live to its end.
    let repo = calc(dir.path());
    let queued = client
        .post(format!("{url}/api/queue"))
        .json(&json!({"text": "# add() subtracts\n\nadd(2, 3) returns -1.", "repo": repo, "action": "fix"}))
        .send()
        .await
        .unwrap();
    assert_eq!(queued.status().as_u16(), 202);
    let queued: Value = queued.json().await.unwrap();
    let id = queued["runs"][0]["id"].as_str().unwrap().to_owned();
    let events = sse(&format!("{url}/api/runs/{id}/stream"), None, 100_000).await;
    let states: Vec<&str> = events
        .iter()
        .filter(|e| e.1 == "state")
        .map(|e| e.2["data"]["to"].as_str().unwrap())
        .collect();
    assert_eq!(states.last(), Some(&"patch_ready"), "{states:?}");
    assert!(states.contains(&"implementing"), "{states:?}");
    let (_, run) = get_json(&format!("{url}/api/runs/{id}")).await;
    assert!(run["run"]["patch_lines"].as_u64().unwrap() >= 1, "{run}");
    // Its records, as `forq runs show` and `forq files` read them.
    let patch = reqwest::get(format!("{url}/api/runs/{id}/patch"))
        .await
        .unwrap();
    assert_eq!(patch.status().as_u16(), 200);
    let patch = patch.text().await.unwrap();
    assert!(patch.contains("+++ b/calc.py"), "{patch}");
    let (status, tree) = get_json(&format!("{url}/api/runs/{id}/tree")).await;
    assert_eq!(status, 200, "{tree}");
    assert!(tree.is_object() || tree.is_array(), "{tree}");
    let (status, files) = get_json(&format!("{url}/api/runs/{id}/files")).await;
    assert_eq!(status, 200);
    let files: Vec<&str> = files["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    assert!(
        files.contains(&"calc.py") && files.contains(&"tests/test_calc.py"),
        "{files:?}"
    );
    assert!(!files.iter().any(|f| f.starts_with(".git/")), "{files:?}");
    // A finished run has nothing to resume.
    let over = reqwest::Client::new()
        .post(format!("{url}/api/runs/{id}/resume"))
        .send()
        .await
        .unwrap();
    assert_eq!(over.status().as_u16(), 409);
    // An interrupted one (its process gone) is driven on to its end.
    let store = Store::open(&dir.path().join("state/forq.db")).unwrap();
    let stuck = store
        .create(&NewRun::fix(
            "text",
            "# add() subtracts",
            repo.to_str().unwrap(),
        ))
        .unwrap();
    store
        .transition(&stuck.id, State::Triaging, "triaging")
        .unwrap();
    assert!(store.claim(&stuck.id, None, 999_999_999).unwrap());
    let resumed = reqwest::Client::new()
        .post(format!("{url}/api/runs/{}/resume", stuck.id))
        .send()
        .await
        .unwrap();
    assert_eq!(resumed.status().as_u16(), 202);
    let events = sse(
        &format!("{url}/api/runs/{}/stream", stuck.id),
        None,
        100_000,
    )
    .await;
    let last = events
        .iter()
        .rev()
        .find(|e| e.1 == "state")
        .map(|e| e.2["data"]["to"].as_str().unwrap().to_owned());
    let ended = store.get(&stuck.id).unwrap();
    assert!(ended.state.is_terminal(), "{ended:?}");
    assert_eq!(last.as_deref(), Some(ended.state.name()), "{events:?}");
    task.abort();
}

#[tokio::test]
async fn a_server_without_a_pipeline_starts_no_run() {
    let (s, _, _) = served("127.0.0.1:0", None).await;
    let resp = reqwest::Client::new()
        .post(format!("{}/api/queue", s.url))
        .json(&json!({"text": "x", "repo": "/tmp"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 503);
}

#[allow(clippy::print_stderr)] // a skip is said where a developer sees it
fn skip(why: &dyn std::fmt::Display) {
    eprintln!("SKIPPED: no isolating backend: {why}");
}

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

fn sign(secret: &str, body: &[u8]) -> String {
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
    let mut actions = forq_server::Actions::new(pipeline);
    actions.github = forq_app::github::Github::new(&fake_github(7).await, None);
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
        .webhook_secret("hook-secret")
        .golden_sync(sync);
    let mut options = loopback();
    // A token too: webhooks are signed instead, and need none.
    options.token = Some("api-token".to_owned());
    let (addr, task) = spawn(control, options).await;
    let url = format!("http://{addr}/webhooks/github");
    let client = reqwest::Client::new();
    let deliver =
        |event: &'static str, id: &'static str, body: Value, signature: Option<String>| {
            let body = body.to_string();
            let signature = signature.unwrap_or_else(|| sign("hook-secret", body.as_bytes()));
            client
                .post(&url)
                .header("X-GitHub-Event", event)
                .header("X-GitHub-Delivery", id)
                .header("X-Hub-Signature-256", signature)
                .header("content-type", "application/json")
                .body(body)
                .send()
        };
    let repo = json!({"full_name": "o/r", "clone_url": "file:///nonexistent/o/r.git", "default_branch": "main"});
    // Unsigned, wrongly signed: refused.
    let ping = json!({"zen": "hi", "repository": repo});
    let unsigned = client
        .post(&url)
        .header("X-GitHub-Event", "ping")
        .header("X-GitHub-Delivery", "d0")
        .body(ping.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(unsigned.status().as_u16(), 401);
    let forged = deliver("ping", "d1", ping.clone(), Some(sign("guess", b"{}")))
        .await
        .unwrap();
    assert_eq!(forged.status().as_u16(), 401);
    assert_eq!(
        deliver("ping", "d2", ping, None)
            .await
            .unwrap()
            .status()
            .as_u16(),
        200
    );
    // A comment command from someone without a say: nothing.
    let comment = |who: &str, text: &str| {
        json!({"action": "created", "issue": {"number": 7}, "repository": repo,
            "comment": {"body": text, "author_association": who}})
    };
    let stranger = deliver(
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
    let ok = deliver(
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
    let again = deliver(
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
    let replayed = deliver(
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
    let runs = Store::open(&db).unwrap().all().unwrap();
    assert_eq!(runs.len(), 1, "a redelivery queued again: {runs:?}");
    // Attack: any GitHub user opens an issue, which would queue a run on
    // the operator's key. Only a trusted author's issue is queued; one
    // closed is not acted on.
    let issue = |action: &str, who: &str| json!({"action": action, "issue": {"number": 7, "author_association": who}, "repository": repo});
    let stranger = deliver("issues", "d9", issue("opened", "NONE"), None)
        .await
        .unwrap();
    assert_eq!(stranger.status().as_u16(), 200);
    let said: Value = stranger.json().await.unwrap();
    assert!(
        said["done"].as_str().unwrap().contains("not none"),
        "{said}"
    );
    assert_eq!(Store::open(&db).unwrap().all().unwrap().len(), 1);
    let opened = deliver("issues", "d7", issue("opened", "MEMBER"), None)
        .await
        .unwrap();
    assert_eq!(opened.status().as_u16(), 202);
    let closed = deliver("issues", "d8", issue("closed", "MEMBER"), None)
        .await
        .unwrap();
    assert_eq!(closed.status().as_u16(), 200);
    // A push: to another branch nothing; to the default one, a sync.
    let push = |branch: &str| json!({"ref": format!("refs/heads/{branch}"), "repository": repo});
    let other = deliver("push", "d5", push("feature"), None).await.unwrap();
    assert_eq!(other.status().as_u16(), 200);
    let main = deliver("push", "d6", push("main"), None).await.unwrap();
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
    let during = repos(client.clone()).await.unwrap();
    assert_eq!(during["syncing"], true, "{during}");
    release.add_permits(1);
    let mut after = during;
    for _ in 0..100 {
        after = repos(client.clone()).await.unwrap_or(Value::Null);
        if after.is_null() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(after.is_null(), "still syncing: {after}");
    task.abort();
}

#[tokio::test]
async fn repositories_and_their_issues_come_from_sources_and_runs() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("calc");
    std::fs::create_dir_all(&repo).unwrap();
    let issues = dir.path().join("issues");
    std::fs::create_dir_all(&issues).unwrap();
    for (id, title, label) in [("1", "add subtracts", "bug"), ("2", "mul adds", "ui")] {
        std::fs::write(
            issues.join(format!("{id}.md")),
            format!("---\nid: {id}\nlabels: [{label}]\n---\n# {title}\n"),
        )
        .unwrap();
    }
    let repo_name = repo.display().to_string();
    let store = Arc::new(Store::open(&dir.path().join("forq.db")).unwrap());
    let run = store
        .create(&NewRun::fix("1", "add subtracts", &repo_name))
        .unwrap();
    store.transition(&run.id, State::Failed, "broke").unwrap();
    store
        .create(&NewRun::fix("9", "from a run only", "elsewhere"))
        .unwrap();
    let control = Control::new(store).source(forq_app::queue::Source::Local {
        dir: issues,
        repo: Some(repo_name.clone()),
    });
    let (addr, task) = spawn(control, loopback()).await;
    let url = format!("http://{addr}");
    let (status, repos) = get_json(&format!("{url}/api/repos")).await;
    assert_eq!(status, 200, "{repos}");
    let list = repos["repos"].as_array().unwrap();
    assert_eq!(list.len(), 2, "{repos}");
    let calc = list.iter().find(|r| r["repo"] == json!(repo_name)).unwrap();
    assert_eq!(calc["name"], "calc");
    assert_eq!(calc["issues"], 2);
    assert_eq!(calc["runs"], 1);
    assert_eq!(calc["states"]["failed"], 1);
    let other = list.iter().find(|r| r["repo"] == "elsewhere").unwrap();
    assert_eq!(
        (other["issues"].as_u64(), other["runs"].as_u64()),
        (Some(0), Some(1))
    );
    // The repository's issues, each with its latest run.
    let query = format!("{url}/api/issues?repo={}", urlencode(&repo_name));
    let (status, issues) = get_json(&query).await;
    assert_eq!(status, 200, "{issues}");
    let rows = issues["issues"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{issues}");
    assert_eq!(rows[0]["issue"]["id"], "1");
    assert_eq!(rows[0]["run"]["state"], "failed");
    assert_eq!(rows[0]["queueable"], true);
    assert!(rows[1]["run"].is_null());
    assert_eq!(rows[1]["issue"]["labels"], json!(["ui"]));
    // Issues only a run knows are listed, but not queueable from a source.
    let (_, other) = get_json(&format!("{url}/api/issues?repo=elsewhere")).await;
    assert_eq!(other["issues"][0]["issue"]["id"], "9");
    assert_eq!(other["issues"][0]["queueable"], false);
    // The list tells the newest event id, where a stream picks up.
    let listed = reqwest::get(format!("{url}/api/runs")).await.unwrap();
    let last: u64 = listed.headers()["x-forq-last-event-id"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(last >= 3, "created twice and moved once: {last}");
    task.abort();
}

/// `s` for a query string.
fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[tokio::test]
async fn the_dashboard_is_served_offline_and_its_page_needs_no_token() {
    let (s, _, _) = served("0.0.0.0:0", Some("sesame")).await;
    let url = s.url.clone();
    let page = reqwest::get(format!("{url}/")).await.unwrap();
    assert_eq!(page.status().as_u16(), 200);
    let csp = page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(csp.contains("default-src 'self'"), "{csp}");
    let html = page.text().await.unwrap();
    assert!(html.contains("/assets/app.js") && html.contains("/assets/app.css"));
    assert!(!html.contains("sesame"), "the token never reaches the page");
    for (asset, kind) in [("app.js", "text/javascript"), ("app.css", "text/css")] {
        let r = reqwest::get(format!("{url}/assets/{asset}")).await.unwrap();
        assert_eq!(r.status().as_u16(), 200, "{asset}");
        let ct = r.headers()["content-type"].to_str().unwrap().to_owned();
        assert!(ct.starts_with(kind), "{asset}: {ct}");
        // Offline: nothing is fetched from anywhere but this server.
        let text = r.text().await.unwrap();
        assert!(!text.contains("https://"), "{asset} loads something remote");
    }
    let missing = reqwest::get(format!("{url}/assets/nope.js")).await.unwrap();
    assert_eq!(missing.status().as_u16(), 404);
    // The data still needs the token.
    let runs = reqwest::get(format!("{url}/api/runs")).await.unwrap();
    assert_eq!(runs.status().as_u16(), 401);
}

/// A small web app beside examples/calc: its page shows `calc.add(2, 3)`,
/// and forq.yml says how to start it for a preview.
fn calc_app(dir: &std::path::Path) -> std::path::PathBuf {
    let repo = calc(dir);
    std::fs::write(
        repo.join("app.py"),
        r#"import http.server
import calc


class Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/health":
            body = b"ok"
        else:
            body = f"<h1>calc</h1><p>2 + 3 = {calc.add(2, 3)}</p><p>{self.path}</p>".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Set-Cookie", "session=planted; Path=/")
        self.send_header("Service-Worker-Allowed", "/")
        self.send_header("Clear-Site-Data", '"storage"')
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


http.server.HTTPServer(("127.0.0.1", 8000), Page).serve_forever()
"#,
    )
    .unwrap();
    std::fs::write(
        repo.join("forq.yml"),
        "golden:\n  start: python3 app.py\n  port: 8000\n  health_path: /health\n",
    )
    .unwrap();
    repo
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_preview_serves_the_fix_through_its_own_url_and_stops() {
    let dir = tempfile::tempdir().unwrap();
    let Some((store, pipeline)) = pipeline_in(dir.path()).await else {
        return;
    };
    let control = Control::new(store.clone()).actions(forq_server::Actions::new(pipeline));
    let previews = control.previews();
    let mut options = loopback();
    options.preview_idle = Duration::from_secs(2);
    let (addr, task) = spawn(control, options).await;
    let url = format!("http://{addr}");
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let repo = calc_app(dir.path());
    let queued: Value = client
        .post(format!("{url}/api/queue"))
        .json(&json!({"text": "# add() subtracts\n\nadd(2, 3) returns -1.", "repo": repo, "action": "fix"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = queued["runs"][0]["id"].as_str().unwrap().to_owned();
    // Before its patch, there is nothing to preview.
    let early = client
        .post(format!("{url}/api/runs/{id}/preview"))
        .send()
        .await
        .unwrap();
    assert_eq!(early.status().as_u16(), 409, "{:?}", early.text().await);
    let events = sse(&format!("{url}/api/runs/{id}/stream"), None, 100_000).await;
    let last = events.iter().rev().find(|e| e.1 == "state").unwrap();
    assert_eq!(last.2["data"]["to"], "patch_ready", "{events:?}");

    // The fix, running: the page shows 5, not -1.
    let start = || async {
        let made = client
            .post(format!("{url}/api/runs/{id}/preview"))
            .send()
            .await
            .unwrap();
        assert_eq!(made.status().as_u16(), 201);
        let made: Value = made.json().await.unwrap();
        made["url"].as_str().unwrap().to_owned()
    };
    let page_url = start().await;
    assert!(page_url.starts_with("/preview/") && page_url.ends_with('/'));
    let key = page_url
        .trim_start_matches("/preview/")
        .trim_end_matches('/');
    assert_eq!(key.len(), 32, "128 random bits: {key}");
    let page = client
        .get(format!("{url}{page_url}about?x=1"))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status().as_u16(), 200);
    // Attack (forq's adversarial corpus, SECURITY.md): the repository's
    // page, relayed on the dashboard's host, calls the API with the
    // dashboard's origin, plants cookies, claims a service worker's scope,
    // or clears the dashboard's storage. It runs in an opaque origin of its
    // own, and those headers do not pass.
    let headers = page.headers();
    for dropped in ["set-cookie", "service-worker-allowed", "clear-site-data"] {
        assert!(
            headers.get(dropped).is_none(),
            "{dropped} passed: {headers:?}"
        );
    }
    let csp = headers
        .get("content-security-policy")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    assert!(
        csp.starts_with("sandbox ") && !csp.contains("allow-same-origin"),
        "{csp}"
    );
    // What its scripts send carries the opaque origin (`null`): a change
    // is refused.
    let from_page = client
        .post(format!("{url}/api/runs/{id}/abort"))
        .header("Origin", "null")
        .send()
        .await
        .unwrap();
    assert_eq!(from_page.status().as_u16(), 403);
    let page = page.text().await.unwrap();
    assert!(page.contains("2 + 3 = 5"), "{page}");
    assert!(
        page.contains("<p>/about?x=1</p>"),
        "path and query relayed: {page}"
    );
    let bare = client
        .get(format!("{url}/preview/{key}"))
        .send()
        .await
        .unwrap();
    assert_eq!(bare.status().as_u16(), 308);
    // Nothing of it is on the host's network.
    assert!(tokio::net::TcpStream::connect("127.0.0.1:8000")
        .await
        .is_err());
    let (_, listed) = get_json(&format!("{url}/api/previews")).await;
    assert_eq!(listed[0]["run"], json!(id));
    assert_eq!(listed[0]["port"], 8000);
    // Stopped on request: its URL is gone.
    let stopped = client
        .delete(format!("{url}/api/previews/{key}"))
        .send()
        .await
        .unwrap();
    assert_eq!(stopped.status().as_u16(), 200);
    let after = client.get(format!("{url}{page_url}")).send().await.unwrap();
    assert_eq!(after.status().as_u16(), 404);

    // Stopped when idle: unused for longer than the server's limit.
    let idle_url = start().await;
    assert_eq!(
        client
            .get(format!("{url}{idle_url}"))
            .send()
            .await
            .unwrap()
            .status()
            .as_u16(),
        200
    );
    let mut gone = false;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let (_, listed) = get_json(&format!("{url}/api/previews")).await;
        if listed.as_array().unwrap().is_empty() {
            gone = true;
            break;
        }
    }
    assert!(gone, "an idle preview was not stopped");
    let after = client.get(format!("{url}{idle_url}")).send().await.unwrap();
    assert_eq!(after.status().as_u16(), 404);

    // Stopped with the server (what `forq serve` does on its way out).
    let last_url = start().await;
    previews.stop_all().await;
    let after = client.get(format!("{url}{last_url}")).send().await.unwrap();
    assert_eq!(after.status().as_u16(), 404);
    task.abort();
}

/// A GitHub API on loopback that records each call (method, path, body)
/// and answers as GitHub does for pulls and comments.
async fn recording_github() -> (String, Arc<std::sync::Mutex<Vec<(String, String, Value)>>>) {
    let calls: Arc<std::sync::Mutex<Vec<(String, String, Value)>>> = Arc::default();
    let seen = calls.clone();
    let app = axum::Router::new().fallback(
        move |method: axum::http::Method, uri: axum::http::Uri, body: axum::body::Bytes| {
            let seen = seen.clone();
            async move {
                let json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let path = uri.path().to_owned();
                seen.lock()
                    .unwrap()
                    .push((method.to_string(), path.clone(), json));
                let answer = if method == axum::http::Method::GET && path.ends_with("/issues") {
                    json!([{"number": 12, "title": "mul() adds", "body": "mul(2, 3) is 5",
                        "html_url": "https://github.com/o/calc/issues/12", "state": "open",
                        "labels": [{"name": "bug"}], "user": {"login": "someone"}}])
                } else if path.ends_with("/pulls") {
                    json!({"number": 3, "html_url": "https://github.com/o/calc/pull/3"})
                } else if path.ends_with("/comments") {
                    json!({"html_url": "https://github.com/o/calc/issues/7#issuecomment-1"})
                } else {
                    json!({})
                };
                (axum::http::StatusCode::CREATED, axum::Json(answer))
            }
        },
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, calls)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_run_is_pushed_with_a_pull_request_and_its_issue_acted_on() {
    let dir = tempfile::tempdir().unwrap();
    let repo = calc(dir.path());
    let git = forq_app::git::git;
    git(&repo, &["init", "-q", "-b", "main"]).await.unwrap();
    git(&repo, &["add", "-A"]).await.unwrap();
    git(&repo, &["commit", "-q", "-m", "calc"]).await.unwrap();
    let (api, calls) = recording_github().await;
    let Some((store, pipeline)) = pipeline_in(dir.path()).await else {
        return;
    };
    let mut actions = forq_server::Actions::new(pipeline);
    actions.github = forq_app::github::Github::new(&api, Some("token".to_owned()));
    let (addr, task) = spawn(Control::new(store.clone()).actions(actions), loopback()).await;
    let url = format!("http://{addr}");
    let client = reqwest::Client::new();
    // Queued with the strategy and brancher chosen here, over forq.yml's.
    let queued: Value = client
        .post(format!("{url}/api/queue"))
        .json(
            &json!({"text": "# add() subtracts", "repo": repo, "action": "fix",
            "strategy": "speculative", "brancher": "mutate"}),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = queued["runs"][0]["id"].as_str().unwrap().to_owned();
    assert_eq!(
        store.checkpointed(&id, "requested").unwrap(),
        Some(json!({"strategy": "speculative", "brancher": "mutate"}))
    );
    let bad = client
        .post(format!("{url}/api/queue"))
        .json(&json!({"text": "# x", "repo": repo, "brancher": "oracle"}))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status().as_u16(), 422, "an unknown brancher is refused");
    let events = sse(&format!("{url}/api/runs/{id}/stream"), None, 100_000).await;
    assert!(
        events.iter().any(|e| e.1 == "node"),
        "the mutate search ran"
    );
    let run = store.get(&id).unwrap();
    assert_eq!(run.state, State::PatchReady, "{}", run.reason);
    let branch = run.branch.clone().unwrap();
    // The contract check ran on the green patch: add()'s body changed, and
    // without a model that is unclassified (never silently A), no ripple.
    let contract = store.checkpointed(&id, "contract").unwrap().unwrap();
    assert_eq!(contract["changed"][0]["qualname"], "add", "{contract}");
    assert_eq!(contract["changed"][0]["class"], "unclassified");
    assert!(events.iter().any(|e| e.1 == "contract"), "{events:?}");
    // Attack (forq's adversarial corpus, SECURITY.md): a push to a bare
    // repository inside the workspace (a repository can commit one), whose
    // pre-receive hook would run on the host, by relative and absolute
    // path, as a file:// or ext:: URL, or as an option. Each is refused
    // before git runs, and no hook ran.
    let ws = forq_app::clean::workspace_path(&dir.path().join("state"), &id);
    let evil = ws.join("evil.git");
    git(&ws, &["init", "-q", "--bare", "evil.git"])
        .await
        .unwrap();
    let marker = dir.path().join("hook-ran");
    let hook = evil.join("hooks/pre-receive");
    std::fs::write(&hook, format!("#!/bin/sh\ntouch {}\n", marker.display())).unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    for remote in [
        "evil.git".to_owned(),
        "./evil.git".to_owned(),
        evil.display().to_string(),
        format!("file://{}", evil.display()),
        format!("ext::sh -c touch% {}", marker.display()),
        "--receive-pack=touch /tmp/x".to_owned(),
        "no-such-remote".to_owned(),
    ] {
        let refused = client
            .post(format!("{url}/api/runs/{id}/push"))
            .json(&json!({"remote": remote}))
            .send()
            .await
            .unwrap();
        assert_eq!(
            refused.status().as_u16(),
            400,
            "{remote}: {:?}",
            refused.text().await
        );
        assert!(
            !marker.exists(),
            "{remote}: a repository's hook ran on the host"
        );
    }
    // Pushed to the configured remote (the clone's origin, the repository
    // itself), and a pull request opened that the issue is not told of (a
    // text issue has no GitHub issue).
    let pushed = client
        .post(format!("{url}/api/runs/{id}/push"))
        .json(&json!({"remote": "origin", "pull_request": true, "github": "o/calc"}))
        .send()
        .await
        .unwrap();
    assert_eq!(pushed.status().as_u16(), 200, "{:?}", pushed.text().await);
    let pushed: Value = pushed.json().await.unwrap();
    assert_eq!(pushed["branch"], json!(branch));
    assert_eq!(
        pushed["pull_request"]["html_url"],
        "https://github.com/o/calc/pull/3"
    );
    let on_remote = git(&repo, &["rev-parse", &format!("refs/heads/{branch}")])
        .await
        .unwrap();
    assert_eq!(json!(on_remote), pushed["commit"]);
    assert_eq!(store.get(&id).unwrap().state, State::PrOpened);
    {
        let calls = calls.lock().unwrap();
        let pull = calls.iter().find(|c| c.1 == "/repos/o/calc/pulls").unwrap();
        assert_eq!(pull.0, "POST");
        assert_eq!(pull.2["head"], json!(branch));
        let body = pull.2["body"].as_str().unwrap();
        assert!(
            body.contains("**Contract check.** 1 definition changed"),
            "{body}"
        );
        assert_eq!(pull.2["base"], "main");
    }
    // A text issue is not on GitHub: nothing to comment on.
    let comment = client
        .post(format!("{url}/api/runs/{id}/comment"))
        .json(&json!({"body": "hello"}))
        .send()
        .await
        .unwrap();
    assert_eq!(comment.status().as_u16(), 409);

    // A GitHub issue's run: comment, label, close.
    let mut new = NewRun::fix("7", "clamp is wrong", "https://github.com/o/calc.git");
    new.issue.url = Some("https://github.com/o/calc/issues/7".to_owned());
    let gh = store.create(&new).unwrap();
    for (what, body) in [
        ("comment", json!({"body": "a fix is on its way"})),
        ("label", json!({"labels": ["forq", "bug"]})),
        ("close", json!({"body": "fixed in #3"})),
    ] {
        let done = client
            .post(format!("{url}/api/runs/{}/{what}", gh.id))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(done.status().as_u16(), 200, "{what}");
    }
    let empty = client
        .post(format!("{url}/api/runs/{}/label", gh.id))
        .json(&json!({"labels": []}))
        .send()
        .await
        .unwrap();
    assert_eq!(empty.status().as_u16(), 400);
    let calls = calls.lock().unwrap();
    let on_issue: Vec<(&str, &str)> = calls
        .iter()
        .filter(|c| c.1.starts_with("/repos/o/calc/issues/7"))
        .map(|c| (c.0.as_str(), c.1.as_str()))
        .collect();
    assert_eq!(
        on_issue,
        [
            ("POST", "/repos/o/calc/issues/7/comments"),
            ("POST", "/repos/o/calc/issues/7/labels"),
            ("POST", "/repos/o/calc/issues/7/comments"),
            ("PATCH", "/repos/o/calc/issues/7"),
        ]
    );
    let labelled = calls.iter().find(|c| c.1.ends_with("/labels")).unwrap();
    assert_eq!(labelled.2["labels"], json!(["forq", "bug"]));
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_github_repositorys_open_issues_are_listed_for_the_dashboard() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(&dir.path().join("forq.db")).unwrap());
    let mut host = forq_sandbox::HostOptions::default();
    host.state_dir = Some(dir.path().join("sandboxes"));
    let backend = Arc::new(forq_sandbox::HostBackend::open(host).unwrap());
    let pipeline = forq_app::pipeline::Pipeline::new(store.clone(), dir.path(), backend);
    let (api, calls) = recording_github().await;
    let mut actions = forq_server::Actions::new(pipeline);
    actions.github = forq_app::github::Github::new(&api, None);
    let clone_url = "https://github.com/o/calc.git";
    let control = Control::new(store)
        .actions(actions)
        .source(forq_app::queue::Source::Github {
            slug: "o/calc".to_owned(),
            clone_url: clone_url.to_owned(),
        });
    let (addr, task) = spawn(control, loopback()).await;
    let (status, repos) = get_json(&format!("http://{addr}/api/repos")).await;
    assert_eq!(status, 200, "{repos}");
    assert_eq!(repos["repos"][0]["repo"], clone_url);
    assert_eq!(repos["repos"][0]["name"], "calc");
    assert_eq!(repos["repos"][0]["issues"], 1);
    let query = format!("http://{addr}/api/issues?repo={}", urlencode(clone_url));
    let (_, issues) = get_json(&query).await;
    let issue = &issues["issues"][0]["issue"];
    assert_eq!(issue["id"], "12");
    assert_eq!(issue["title"], "mul() adds");
    assert_eq!(issue["labels"], json!(["bug"]));
    assert_eq!(issues["issues"][0]["queueable"], true);
    assert!(calls
        .lock()
        .unwrap()
        .iter()
        .any(|c| c.0 == "GET" && c.1 == "/repos/o/calc/issues"));
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_paused_for_review_is_approved_or_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let Some((store, pipeline)) = pipeline_in(dir.path()).await else {
        return;
    };
    let repo = calc(dir.path());
    std::fs::write(repo.join("forq.yml"), "review: [commit]\n").unwrap();
    let control = Control::new(store.clone()).actions(forq_server::Actions::new(pipeline));
    let (addr, task) = spawn(control, loopback()).await;
    let url = format!("http://{addr}");
    let client = reqwest::Client::new();
    let queue = |text: &'static str| {
        let (client, url, repo) = (client.clone(), url.clone(), repo.clone());
        async move {
            let queued: Value = client
                .post(format!("{url}/api/queue"))
                .json(&json!({"text": text, "repo": repo, "action": "fix"}))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            queued["runs"][0]["id"].as_str().unwrap().to_owned()
        }
    };
    // Paused with its green patch, before anything is committed.
    let id = queue("# add() subtracts").await;
    sse(&format!("{url}/api/runs/{id}/stream"), None, 100_000).await;
    let paused = store.get(&id).unwrap();
    assert_eq!(paused.state, State::NeedsReview, "{}", paused.reason);
    assert!(paused.branch.is_none(), "nothing committed before review");
    let (_, shown) = get_json(&format!("{url}/api/runs/{id}")).await;
    let what = shown["review"]["what"].as_str().unwrap();
    assert!(
        what.contains("fix.patch") && what.contains("approve to commit"),
        "{what}"
    );
    let searched = store
        .events(&id, 0)
        .unwrap()
        .iter()
        .filter(|e| e.kind == "node")
        .count();
    // Approved: it goes on from its checkpoint (no second search) to the end.
    let approved = client
        .post(format!("{url}/api/runs/{id}/approve"))
        .send()
        .await
        .unwrap();
    assert_eq!(approved.status().as_u16(), 202);
    sse(&format!("{url}/api/runs/{id}/stream"), None, 100_000).await;
    let done = store.get(&id).unwrap();
    assert_eq!(done.state, State::PatchReady, "{}", done.reason);
    let nodes = store
        .events(&id, 0)
        .unwrap()
        .iter()
        .filter(|e| e.kind == "node")
        .count();
    assert_eq!(nodes, searched, "the search ran again after approval");
    // Approving what is not paused is refused.
    let again = client
        .post(format!("{url}/api/runs/{id}/approve"))
        .send()
        .await
        .unwrap();
    assert_eq!(again.status().as_u16(), 409);
    // Rejected: aborted, with the reason.
    let other = queue("# add() is wrong").await;
    sse(&format!("{url}/api/runs/{other}/stream"), None, 100_000).await;
    assert_eq!(store.get(&other).unwrap().state, State::NeedsReview);
    let rejected: Value = client
        .post(format!("{url}/api/runs/{other}/reject"))
        .json(&json!({"reason": "not this way"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(rejected["state"], "aborted");
    assert_eq!(
        rejected["reason"],
        "rejected at review (commit): not this way"
    );
    task.abort();
}
