//! The dashboard driven in a real browser: Debian's Chromium, headless,
//! through ChromeDriver's WebDriver protocol, against a real server with a
//! real pipeline. Screenshots of the main views are kept under
//! `target/tmp/screenshots/`.

use std::process::Stdio;
use std::time::{Duration, Instant};

use base64::Engine as _;
use forq_app::queue::Source;
use forq_server::Control;
use serde_json::{json, Value};

const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// A headless Chromium session through a ChromeDriver of its own.
struct Browser {
    driver: std::process::Child,
    base: String,
    session: String,
    http: reqwest::Client,
}

impl Drop for Browser {
    fn drop(&mut self) {
        // ChromeDriver leads its own process group: the browsers go with it.
        #[allow(clippy::disallowed_methods)] // the test's browser, on the host
        let _ = std::process::Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.driver.id())])
            .status();
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

impl Browser {
    /// A browser, or `None` (said why) where Chromium is not installed and
    /// this is not CI, which installs it.
    async fn start() -> Option<Browser> {
        let (driver, chromium) = ("/usr/bin/chromedriver", "/usr/bin/chromium");
        if !std::path::Path::new(driver).exists() || !std::path::Path::new(chromium).exists() {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI installs chromium and chromium-driver: {driver} or {chromium} is missing"
            );
            super::skip(&"Chromium and ChromeDriver are not installed (apt install chromium chromium-driver)");
            return None;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        #[allow(clippy::disallowed_methods)] // the test's browser, on the host
        let mut command = std::process::Command::new(driver);
        command
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let child = command.spawn().unwrap();
        let base = format!("http://127.0.0.1:{port}");
        let http = reqwest::Client::new();
        let started = Instant::now();
        while http.get(format!("{base}/status")).send().await.is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "chromedriver did not answer"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let mut browser = Browser {
            driver: child,
            base,
            session: String::new(),
            http,
        };
        let made = browser
            .call(
                reqwest::Method::POST,
                "/session",
                json!({"capabilities": {"alwaysMatch": {
                    "browserName": "chrome",
                    "goog:chromeOptions": {"binary": chromium, "args": [
                        "--headless=new", "--no-sandbox", "--disable-gpu",
                        "--disable-dev-shm-usage", "--window-size=1280,1000",
                        "--force-prefers-reduced-motion"]}}}}),
            )
            .await;
        browser.session = made["sessionId"].as_str().unwrap().to_owned();
        Some(browser)
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Value) -> Value {
        self.try_call(method, path, body)
            .await
            .unwrap_or_else(|message| panic!("WebDriver {path}: {message}"))
    }

    /// The call's value, or WebDriver's error message.
    async fn try_call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Value,
    ) -> Result<Value, String> {
        let mut req = self
            .http
            .request(method.clone(), format!("{}{path}", self.base));
        if method != reqwest::Method::GET {
            req = req.json(&body);
        }
        let answer: Value = req.send().await.unwrap().json().await.unwrap();
        let value = answer["value"].clone();
        match value.get("error") {
            None => Ok(value),
            Some(_) => Err(value["message"].to_string()),
        }
    }

    fn at(&self, path: &str) -> String {
        format!("/session/{}{path}", self.session)
    }

    async fn goto(&self, url: &str) {
        self.call(reqwest::Method::POST, &self.at("/url"), json!({"url": url}))
            .await;
    }

    /// Runs `script` (a function body) in the page; what it returns.
    async fn js(&self, script: &str) -> Value {
        self.call(
            reqwest::Method::POST,
            &self.at("/execute/sync"),
            json!({"script": script, "args": []}),
        )
        .await
    }

    /// Waits until `script` returns something truthy; that value.
    async fn until(&self, what: &str, script: &str, secs: u64) -> Value {
        let started = Instant::now();
        loop {
            let v = self.js(script).await;
            if !(v.is_null() || v == json!(false) || v == json!(0) || v == json!("")) {
                return v;
            }
            if started.elapsed() > Duration::from_secs(secs) {
                let page = self
                    .js("return document.getElementById('view').innerText")
                    .await;
                panic!("waited {secs} s for {what}; the page shows:\n{page}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// A real click on the element `css` matches. The page redraws as
    /// events arrive, so the element found may be replaced before the
    /// click lands (WebDriver's "stale element reference"): then it is
    /// found again and clicked, as a person clicks the button now shown.
    async fn click(&self, css: &str) {
        for attempt in 0.. {
            let found = self
                .call(
                    reqwest::Method::POST,
                    &self.at("/element"),
                    json!({"using": "css selector", "value": css}),
                )
                .await;
            let id = found[ELEMENT].as_str().unwrap().to_owned();
            let clicked = self
                .try_call(
                    reqwest::Method::POST,
                    &self.at(&format!("/element/{id}/click")),
                    json!({}),
                )
                .await;
            match clicked {
                Ok(_) => return,
                Err(message) if message.contains("stale element") && attempt < 50 => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(message) => panic!("WebDriver click on {css}: {message}"),
            }
        }
    }

    /// Saves the page as `target/tmp/screenshots/NAME.png`.
    async fn screenshot(&self, name: &str) {
        let png = self
            .call(reqwest::Method::GET, &self.at("/screenshot"), json!(null))
            .await;
        let png = base64::engine::general_purpose::STANDARD
            .decode(png.as_str().unwrap())
            .unwrap();
        assert!(png.starts_with(b"\x89PNG"), "a screenshot is a PNG");
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("screenshots");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("{name}.png")), png).unwrap();
    }
}

/// Strings of a JSON array.
fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_burns_down_a_queue_and_draws_the_search_live_in_chromium() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    // The calc example, with two issues: the bundled one and a second.
    let dir = tempfile::tempdir().unwrap();
    let repo = super::calc_app(dir.path()).canonicalize().unwrap();
    let issues = dir.path().join("issues");
    std::fs::create_dir_all(&issues).unwrap();
    let one = std::fs::read_to_string(repo.join("ISSUE.md")).unwrap();
    std::fs::write(issues.join("1.md"), &one).unwrap();
    let two = one
        .replace("id: 1", "id: 2")
        .replace("# add() subtracts", "# add() of negatives is wrong");
    std::fs::write(issues.join("2.md"), two).unwrap();
    let Some((store, pipeline)) = super::pipeline_in(dir.path()).await else {
        return;
    };
    let repo_name = repo.display().to_string();
    let control = Control::new(store.clone())
        .actions(forq_server::Actions::new(pipeline))
        .source(Source::Local {
            dir: issues,
            repo: Some(repo_name.clone()),
        });
    let mut options = super::loopback();
    options.poll = Duration::from_millis(50);
    let (addr, task) = super::spawn(control, options).await;
    let url = format!("http://{addr}");

    burn_down_issue_one(&browser, &url).await;
    let run_id = watch_a_run_from_before_it_starts(
        &browser,
        &url,
        &store,
        &dir.path().join("issues"),
        &repo_name,
    )
    .await;
    check_the_log_and_the_tree(&browser, &store, &run_id).await;
    check_the_patch_and_a_green_node(&browser).await;
    // The fix, running: Preview starts forq.yml's app in a sandbox of its
    // own, and its link opens it through the server.
    browser.click("#preview").await;
    let link = browser
        .until(
            "the preview's link",
            "const a = document.getElementById('preview-link'); return a && a.href",
            120,
        )
        .await;
    browser.goto(link.as_str().unwrap()).await;
    let shown = browser.js("return document.body.innerText").await;
    assert!(shown.as_str().unwrap().contains("2 + 3 = 5"), "{shown}");
    a_view_left_never_paints_over_the_next(&browser, &url, &repo_name, &run_id).await;
    workers_are_shown_with_their_load(&browser, &url, &store, &run_id).await;
    task.abort();
    trusted_contributors_change_by_a_pull_request(&browser).await;
}

/// A repository's queue whose load answers only after the page moved on
/// to a run does not paint over the run (as it once did, mid-test).
async fn a_view_left_never_paints_over_the_next(
    browser: &Browser,
    url: &str,
    repo: &str,
    run_id: &str,
) {
    browser.goto(&format!("{url}/#/")).await;
    browser
        .js(
            "const real = window.fetch; window.fetch = async (...args) => {
               const slow = String(args[0]).includes('/api/issues');
               const res = await real(...args);
               if (slow) await new Promise((r) => setTimeout(r, 1500));
               return res; }; return true",
        )
        .await;
    browser
        .js(&format!(
            "location.hash = '#/repo/{}'; setTimeout(() => {{ location.hash = '#/run/{run_id}'; }}, 100); return true",
            repo.replace('\'', "")
                .split('/')
                .map(|p| p.replace(':', "%3A"))
                .collect::<Vec<_>>()
                .join("%2F")
        ))
        .await;
    browser
        .until(
            "the run's page",
            "return !!document.getElementById('log')",
            30,
        )
        .await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let shown = browser
        .js("return [!!document.getElementById('log'), document.querySelectorAll('tr[data-issue]').length]")
        .await;
    assert_eq!(
        shown,
        json!([true, 0]),
        "the queue's late load painted over the run"
    );
    browser.js("location.reload(); return true").await;
}

/// A GitHub repository's page lists the contributors its forq.yml trusts;
/// removing one and adding another proposes a pull request to forq.yml.
async fn trusted_contributors_change_by_a_pull_request(browser: &Browser) {
    use super::hub::{app_keys, Hub};
    let keys = app_keys().await;
    let hub = Hub::start(42, &keys.public_pem, &[(7, &["o/r"])]).await;
    hub.lock().files.insert(
        ("o/r".to_owned(), "forq.yml".to_owned()),
        "funding:\n  mode: contributor\n  trusted: [alice, carol]\n".to_owned(),
    );
    let dir = tempfile::tempdir().unwrap();
    let store =
        std::sync::Arc::new(forq_app::store::Store::open(&dir.path().join("forq.db")).unwrap());
    let github = forq_app::github::Github::app(
        &hub.url,
        forq_app::github::AppKey::from_file(42, &keys.file).unwrap(),
    );
    let (addr, task) = super::spawn(Control::new(store).github(github), super::loopback()).await;
    let repo = "https://github.com/o/r.git";
    browser
        .goto(&format!(
            "http://{addr}/#/repo/{}",
            repo.replace(':', "%3A").replace('/', "%2F")
        ))
        .await;
    let shown = browser
        .until(
            "the trusted contributors",
            "return [...document.querySelectorAll('#trusted li[data-login]')].map((li) => li.dataset.login).join(',') || null",
            30,
        )
        .await;
    assert_eq!(shown, json!("alice,carol"));
    browser
        .click("#trusted li[data-login=\"alice\"] button")
        .await;
    let struck = browser
        .js("return document.querySelector('#trusted li[data-login=\"alice\"]').className")
        .await;
    assert_eq!(struck, json!("removing"));
    browser
        .js("document.getElementById('trust-add').value = 'bob, dave'; return true")
        .await;
    browser.click("#trust-propose").await;
    let link = browser
        .until(
            "the pull request's link",
            "const a = document.getElementById('trust-pr'); return a && a.href",
            30,
        )
        .await;
    let opened = hub.lock().opened.clone();
    assert_eq!(opened.len(), 1, "{opened:?}");
    assert_eq!(link, opened[0]["pull"]["html_url"]);
    let written = hub.lock().puts[0]["text"].clone();
    assert_eq!(
        written,
        json!("funding:\n  mode: contributor\n  trusted: [\"carol\", \"bob\", \"dave\"]\n")
    );
    let said = browser
        .js("return document.getElementById('trust-message').innerText")
        .await;
    assert!(
        said.as_str()
            .unwrap()
            .contains("carol, bob, dave will be trusted"),
        "{said}"
    );
    browser.screenshot("trusted").await;
    task.abort();
}

/// A worker sharing the store shows on the repositories page with what it
/// drives, and turns silent when its heartbeat stops.
async fn workers_are_shown_with_their_load(
    browser: &Browser,
    url: &str,
    store: &forq_app::store::Store,
    run_id: &str,
) {
    let now = forq_app::store::now_ms();
    let worker = forq_app::store::Worker {
        id: "w-east".to_owned(),
        host: "east-1".to_owned(),
        pid: 42,
        labels: vec!["native".to_owned(), "x86_64".to_owned()],
        jobs: 2,
        started_ms: now,
        heartbeat_ms: now,
        driving: vec![run_id.to_owned()],
        stopping: false,
    };
    store.register_worker(&worker).unwrap();
    store
        .register_worker(&forq_app::store::Worker {
            id: "w-west".to_owned(),
            host: "west-1".to_owned(),
            heartbeat_ms: now - 120_000,
            driving: Vec::new(),
            ..worker.clone()
        })
        .unwrap();
    browser.goto(&format!("{url}/#/")).await;
    let load = browser
        .until(
            "the worker's row",
            "const r = document.querySelector('[data-worker=\"w-east\"]'); return r && r.querySelector('.load').textContent",
            30,
        )
        .await;
    assert_eq!(load, json!("1 of 2"));
    let silent = browser
        .js("return document.querySelector('[data-worker=\"w-west\"]').className")
        .await;
    assert_eq!(silent, json!("silent"));
    let link = browser
        .js("return document.querySelector('[data-worker=\"w-east\"] a').getAttribute('href')")
        .await;
    assert_eq!(link, json!(format!("#/run/{run_id}")));
    browser.screenshot("workers").await;
}

/// The repositories page shows the source's repository with its two
/// issues; its queue burns issue 1 down, its row followed to the end
/// without the page reloading.
async fn burn_down_issue_one(browser: &Browser, url: &str) {
    // Repositories: the source's repository, with its two issues.
    browser.goto(&format!("{url}/#/")).await;
    let issues_shown = browser
        .until(
            "the repository's card",
            "const c = document.querySelector('[data-repo]'); return c && c.querySelector('.stat b').textContent",
            30,
        )
        .await;
    assert_eq!(issues_shown, json!("2"));
    browser.screenshot("repositories").await;

    // Its queue: pick issue 1, burn it down, and watch its row to the end
    // without the page reloading.
    browser.click("[data-repo]").await;
    browser
        .until(
            "issue rows",
            "return document.querySelectorAll('tr[data-issue]').length === 2",
            30,
        )
        .await;
    browser
        .js("window.__samePage = true; window.__states = [];
             const note = () => { const tr = document.querySelector('tr[data-issue=\"1\"]');
               const s = tr && tr.dataset.state; const seen = window.__states;
               if (s && seen[seen.length - 1] !== s) seen.push(s); };
             note(); new MutationObserver(note).observe(document.getElementById('view'),
               {subtree: true, childList: true, attributes: true});")
        .await;
    browser
        .click("tr[data-issue=\"1\"] input[type=checkbox]")
        .await;
    let label = browser
        .js("return document.getElementById('burn').textContent")
        .await;
    assert_eq!(label, json!("Burn down 1"));
    browser.click("#burn").await;
    browser
        .until(
            "issue 1's row to reach patch_ready",
            "const tr = document.querySelector('tr[data-issue=\"1\"]'); return tr && tr.dataset.state === 'patch_ready'",
            300,
        )
        .await;
    assert_eq!(
        browser.js("return window.__samePage === true").await,
        json!(true),
        "the page reloaded"
    );
    let seen = strings(&browser.js("return window.__states").await);
    assert_eq!(seen.first().map(String::as_str), Some("open"), "{seen:?}");
    assert_eq!(
        seen.last().map(String::as_str),
        Some("patch_ready"),
        "{seen:?}"
    );
    let patched = browser
        .js("return document.querySelector('tr[data-issue=\"1\"] td.num').textContent")
        .await;
    assert!(
        patched.as_str().unwrap().ends_with("lines"),
        "the row shows the patch's size: {patched}"
    );
    browser.screenshot("queue").await;
}

/// A run watched from before it starts: issue 2 queued (as the server
/// would), its page opened, then resumed from that page; its stream is
/// cut at its first search node, and reconnects. The run's id.
async fn watch_a_run_from_before_it_starts(
    browser: &Browser,
    url: &str,
    store: &forq_app::store::Store,
    issues: &std::path::Path,
    repo_name: &str,
) -> String {
    // A run watched from before it starts: issue 2 queued (as the server
    // would), its page opened, then resumed from that page. Its stream is
    // cut at its first search node, and reconnects.
    let new = forq_app::queue::select(
        &Source::Local {
            dir: issues.to_path_buf(),
            repo: Some(repo_name.to_owned()),
        },
        &forq_app::queue::Selection {
            label: None,
            limit: None,
            action: forq_app::store::Action::Fix,
            context: Vec::new(),
        },
        &forq_app::github::Github::from_env().unwrap(),
    )
    .await
    .unwrap();
    let new: Vec<_> = new.into_iter().filter(|n| n.issue.id == "2").collect();
    let run = forq_app::queue::enqueue(store, &new).unwrap().remove(0);
    browser.goto(&format!("{url}/#/run/{}", run.id)).await;
    browser
        .until(
            "the run page, queued",
            "const p = document.querySelector('#state .pill'); return p && p.textContent === 'queued'",
            30,
        )
        .await;
    browser
        .until(
            "the run stream",
            &format!("return window.forq.connects['run:{}'] === 1", run.id),
            30,
        )
        .await;
    browser
        .js(
            "const handled = window.forq.handled; const push = handled.push.bind(handled);
             handled.push = (x) => { const n = push(x);
               if (x.kind === 'node' && !window.__dropped) { window.__dropped = x.id; window.forq.dropStreams(); }
               return n; };",
        )
        .await;
    browser.click("button[title^='continue']").await;
    browser
        .until(
            "the run to end on the page",
            &format!("return document.body.dataset.runEnded === '{}'", run.id),
            300,
        )
        .await;
    let ended = store.get(&run.id).unwrap();
    assert_eq!(ended.state.name(), "patch_ready", "{}", ended.reason);
    run.id.to_string()
}

/// The page's log against the store, and the tree drawn live.
async fn check_the_log_and_the_tree(
    browser: &Browser,
    store: &forq_app::store::Store,
    run_id: &str,
) {
    // Reconnected mid-run, and missed nothing: the log holds every event
    // of the run exactly once, in order.
    let connects = browser
        .js(&format!("return window.forq.connects['run:{run_id}']"))
        .await;
    assert!(connects.as_u64().unwrap() >= 2, "connects: {connects}");
    assert!(browser.js("return window.__dropped").await.is_number());
    let stored: Vec<u64> = store
        .events(run_id, 0)
        .unwrap()
        .iter()
        .map(|e| e.id)
        .collect();
    // The page may still be drawing what its last reconnect fetched (CI
    // once read an empty log here on a loaded machine): wait until it
    // holds as many events as the store, then compare them one by one.
    browser
        .until(
            "the page's log to hold every stored event",
            &format!(
                "return document.querySelectorAll('#log div').length >= {}",
                stored.len()
            ),
            60,
        )
        .await;
    let logged: Vec<u64> = browser
        .js("return [...document.querySelectorAll('#log div')].map(d => Number(d.dataset.id))")
        .await
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(logged, stored, "the page's log against the store");
    // The tree grew while the search ran: node events drawn live while
    // the run was implementing, each adding to what was drawn.
    let handled = browser.js("return window.forq.handled").await;
    let live_nodes: Vec<&Value> = handled
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| h["kind"] == "node" && h["state"] == "implementing")
        .collect();
    assert!(
        live_nodes.len() >= 2,
        "nodes drawn during the search: {handled}"
    );
    let node_ids: std::collections::BTreeSet<u64> = store
        .events(run_id, 0)
        .unwrap()
        .iter()
        .filter(|e| e.kind == "node")
        .map(|e| e.data["id"].as_u64().unwrap())
        .collect();
    let drawn = browser
        .js("return document.querySelectorAll('svg.tree g[data-node]').length")
        .await;
    assert_eq!(drawn.as_u64().unwrap() as usize, node_ids.len());
    let greens = browser
        .js("return document.querySelectorAll('svg.tree g[data-status=\"green\"]').length")
        .await;
    assert!(greens.as_u64().unwrap() >= 1);
    let counter = browser
        .js("return document.getElementById('counter').textContent")
        .await;
    let counter = counter.as_str().unwrap();
    assert!(
        counter.starts_with("1 bug · ")
            && counter.contains(&format!("{} candidates", node_ids.len() - 1))
            && counter.contains("green · best "),
        "{counter}"
    );
}

/// The patch as a readable diff, the run's header, a green node's detail,
/// the dark theme.
async fn check_the_patch_and_a_green_node(browser: &Browser) {
    // The patch, as a readable diff.
    let added = browser
        .until(
            "the patch",
            "const a = document.querySelector('#patch .diff .add'); return a && a.textContent",
            30,
        )
        .await;
    assert!(added.as_str().unwrap().starts_with('+'), "{added}");
    assert_eq!(
        browser
            .js("return [...document.querySelectorAll('#lifecycle li')].pop().textContent")
            .await,
        json!("patch ready")
    );
    let head = browser
        .js("return document.querySelector('#state').closest('section').innerText")
        .await;
    assert!(
        !head.as_str().unwrap().contains("null"),
        "the run's header shows a missing value as null: {head}"
    );
    browser.screenshot("run").await;
    // A green node, clicked: its change and its test results.
    browser
        .click("svg.tree g[data-status=\"green\"] circle")
        .await;
    let detail = browser
        .until(
            "the node's detail",
            "const d = document.getElementById('node-detail'); return d && d.innerText",
            10,
        )
        .await;
    let detail = detail.as_str().unwrap();
    assert!(detail.contains("passing"), "{detail}");
    // A green node says what vouches for it besides the tests.
    let evidence = browser
        .js("const e = document.getElementById('evidence'); return e && e.textContent")
        .await;
    let evidence = evidence.as_str().unwrap_or_default();
    assert!(
        evidence.starts_with("plausible: ") || evidence.starts_with("corroborated: "),
        "{detail}"
    );
    assert!(
        browser
            .js("return document.querySelectorAll('#node-detail .diff .add').length > 0")
            .await
            == json!(true)
    );
    browser.click("#theme").await;
    assert_eq!(
        browser
            .js("return document.documentElement.dataset.theme")
            .await,
        json!("dark")
    );
    browser.screenshot("run-dark").await;
}
