//! GitHub as the dashboard and the API see it: repositories and issues from sources, pull requests and the issue told.

use super::*;

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
    let actions = forq_server::Actions::new(pipeline);
    let github = forq_app::github::Github::new(&api, Some("token".to_owned()));
    let control = Control::new(store.clone()).actions(actions).github(github);
    let (addr, task) = spawn(control, loopback()).await;
    let url = format!("http://{addr}");
    let client = reqwest::Client::new();
    let id = queued_with_the_choices_made_here(&client, &url, &repo, &store).await;
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
    assert_eq!(
        (
            &contract["changed"][0]["qualname"],
            &contract["changed"][0]["class"]
        ),
        (&json!("add"), &json!("unclassified")),
        "{contract}"
    );
    assert!(events.iter().any(|e| e.1 == "contract"), "{events:?}");
    a_push_never_runs_a_repositorys_hook(&client, &url, &id, dir.path()).await;
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

    a_github_issues_run_comments_labels_and_closes(&client, &url, &store, &calls).await;
    task.abort();
}

/// Attack (forq's adversarial corpus, SECURITY.md): a push to a bare
/// repository inside the workspace (a repository can commit one), whose
/// pre-receive hook would run on the host, by relative and absolute path,
/// as a file:// or ext:: URL, or as an option. Each is refused before git
/// runs, and no hook ran.
async fn a_push_never_runs_a_repositorys_hook(
    client: &reqwest::Client,
    url: &str,
    id: &str,
    dir: &std::path::Path,
) {
    let git = forq_app::git::git;
    let ws = forq_app::clean::workspace_path(&dir.join("state"), id);
    let evil = ws.join("evil.git");
    git(&ws, &["init", "-q", "--bare", "evil.git"])
        .await
        .unwrap();
    let marker = dir.join("hook-ran");
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
}

/// A GitHub issue's run: comment, label, close (an empty label list is
/// refused), each call on the issue.
async fn a_github_issues_run_comments_labels_and_closes(
    client: &reqwest::Client,
    url: &str,
    store: &Store,
    calls: &std::sync::Mutex<Vec<(String, String, Value)>>,
) {
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
    let actions = forq_server::Actions::new(pipeline);
    let clone_url = "https://github.com/o/calc.git";
    let control = Control::new(store)
        .actions(actions)
        .github(forq_app::github::Github::new(&api, None))
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

/// Queued with the strategy and brancher chosen here, over forq.yml's (an
/// unknown brancher refused): the run's id.
async fn queued_with_the_choices_made_here(
    client: &reqwest::Client,
    url: &str,
    repo: &std::path::Path,
    store: &Store,
) -> String {
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
    id
}
