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

mod answers;
mod browser;
mod github;
mod github_app;
mod hub;
mod preview;
mod pulls;
mod runs;
mod trusted;
mod webhooks;

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
        one.id.to_string(),
        two.id.to_string(),
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

#[allow(clippy::print_stderr)] // a skip is said where a developer sees it
fn skip(why: &dyn std::fmt::Display) {
    eprintln!("SKIPPED: no isolating backend: {why}");
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
