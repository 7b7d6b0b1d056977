//! Runs over HTTP: queued, streamed to their patch, paused for review and approved or rejected.

use super::*;

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
    its_records_are_served(&url, &id).await;
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
    // Taken up by a process on this machine that is gone.
    let gone = store.as_holder(forq_app::store::Holder {
        worker: "gone".to_owned(),
        pid: 999_999_999,
        ..forq_app::store::Holder::this_process()
    });
    assert!(gone
        .acquire(&stuck.id, std::time::Duration::from_secs(60))
        .unwrap()
        .is_some());
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

/// A finished run's records, as `forq runs show` and `forq files` read
/// them: its patch, its tree, its workspace's files (git's own left out).
async fn its_records_are_served(url: &str, id: &str) {
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
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_only_enqueues_leaves_its_runs_to_a_worker() {
    let dir = tempfile::tempdir().unwrap();
    let Some((store, pipeline)) = pipeline_in(dir.path()).await else {
        return;
    };
    let mut actions = forq_server::Actions::new(pipeline.clone());
    actions.drive = false;
    let control = Control::new(store.clone()).actions(actions);
    let (addr, task) = spawn(control, loopback()).await;
    let url = format!("http://{addr}");
    let repo = calc(dir.path());
    let queued = reqwest::Client::new()
        .post(format!("{url}/api/queue"))
        .json(&json!({"text": "# add() subtracts", "repo": repo, "action": "fix"}))
        .send()
        .await
        .unwrap();
    assert_eq!(queued.status().as_u16(), 202);
    let queued: Value = queued.json().await.unwrap();
    let id = queued["runs"][0]["id"].as_str().unwrap().to_owned();
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(store.get(&id).unwrap().state, State::Queued);
    // A worker on the same store takes it up and drives it to its end.
    let mut options = forq_app::worker::WorkerOptions::new("w1", 1);
    options.exit_when_idle = true;
    options.poll = std::time::Duration::from_millis(100);
    let report = forq_app::worker::work(&pipeline, &options, std::future::pending())
        .await
        .unwrap();
    assert_eq!(report.finished, 1, "{report:?}");
    let run = store.get(&id).unwrap();
    assert_eq!(run.state, State::PatchReady, "{run:?}");
    assert_eq!(run.worker.as_deref(), Some("w1"));
    // Its patch is in the store, served from there.
    let patch = reqwest::get(format!("{url}/api/runs/{id}/patch"))
        .await
        .unwrap();
    assert_eq!(patch.status().as_u16(), 200);
    assert!(patch.text().await.unwrap().contains("calc.py"));
    assert!(store.artifact(&id, "fix.patch").unwrap().is_some());
    let (_, fleet) = get_json(&format!("{url}/api/workers")).await;
    assert_eq!(
        fleet["workers"],
        json!([]),
        "the worker left the list: {fleet}"
    );
    task.abort();
}
