//! Runs stopped mid-way: killed, crashed, aborted, and resumed from their checkpoints.

use super::*;

/// A Python repository whose every test run takes a while, so a run can
/// be caught in the middle of its search.
fn slow_repo(dir: &Path) -> PathBuf {
    let repo = dir.join("slow");
    forq_search::bench::copy_tree(&repo_root().join("examples/py-clamp"), &repo).unwrap();
    let test = repo.join("tests/test_clamp.py");
    let text = std::fs::read_to_string(&test).unwrap();
    std::fs::write(&test, format!("import time\ntime.sleep(1.5)\n{text}")).unwrap();
    repo
}

/// Polls the store (through `forq runs --outcome STATE --json`) until a
/// run is in `state`, and returns its id.
async fn wait_for_state(state_dir: &str, state: &str) -> String {
    let started = Instant::now();
    loop {
        let out = forq_env(
            &["runs", "--outcome", state, "--json", "--state", state_dir],
            &[],
        )
        .await;
        if let Some(run) = serde_json::from_slice::<Value>(&out.stdout)
            .ok()
            .and_then(|v| v.as_array().and_then(|a| a.first().cloned()))
        {
            return run["id"].as_str().unwrap().to_owned();
        }
        if started.elapsed() > Duration::from_secs(240) {
            // Say where the runs are instead, and what they last noted.
            let all = forq_env(&["runs", "--json", "--state", state_dir], &[]).await;
            let mut seen = Vec::new();
            for run in serde_json::from_slice::<Value>(&all.stdout)
                .ok()
                .and_then(|v| v.as_array().cloned())
                .unwrap_or_default()
            {
                let id = run["id"].as_str().unwrap_or_default().to_owned();
                let shown = show_run(&id, state_dir).await;
                let last: Vec<Value> = shown["events"]
                    .as_array()
                    .map(|e| e.iter().rev().take(3).cloned().collect())
                    .unwrap_or_default();
                seen.push(format!("{id} {}: {last:?}", run["state"]));
            }
            let queue_said =
                std::fs::read_to_string(format!("{state_dir}.queue-stderr")).unwrap_or_default();
            panic!("never reached {state}; runs: {seen:?}; the queue said:\n{queue_said}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Starts `forq queue ARGS --backend native --state STATE` without a
/// model, kills it with SIGKILL (no cleanup, no last words) once a run is
/// implementing, and returns that run's id.
async fn queue_killed_mid_search(args: &[&std::ffi::OsStr], state_s: &str) -> String {
    // Its progress lines go to a file, so a queue that stops early says why.
    let log_path = format!("{state_s}.queue-stderr");
    let log = std::fs::File::create(&log_path).unwrap();
    let mut child = forq_sandbox::host_command(forq_bin())
        .arg("queue")
        .args(args)
        .args(["--backend", "native", "--state", state_s])
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .stdout(std::process::Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let id = tokio::select! {
        id = wait_for_state(state_s, "implementing") => id,
        status = child.wait() => panic!(
            "forq queue exited ({status:?}) before a run was implementing; it said:\n{}",
            std::fs::read_to_string(&log_path).unwrap_or_default()
        ),
    };
    child.start_kill().unwrap();
    let status = child.wait().await.unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9)
    );
    id
}

/// `forq runs resume WHAT --backend native --json` (WHAT: an id, or
/// `--interrupted`).
async fn resume_native(what: &str, state_s: &str) -> Output {
    forq_env(
        &[
            "runs",
            "resume",
            what,
            "--backend",
            "native",
            "--json",
            "--state",
            state_s,
        ],
        &[],
    )
    .await
}

#[tokio::test]
async fn a_run_killed_with_sigkill_resumes_from_its_checkpoint() {
    if !native_or_skip("a_run_killed_with_sigkill_resumes_from_its_checkpoint") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let repo = slow_repo(tmp.path());
    let state = tmp.path().join("state");
    let state_s = state.to_str().unwrap();
    let id = queue_killed_mid_search(
        &[
            "--text".as_ref(),
            "# clamp() is wrong at the upper bound".as_ref(),
            "--repo".as_ref(),
            repo.as_os_str(),
        ],
        state_s,
    )
    .await;

    let shown = show_run(&id, state_s).await;
    assert_eq!(shown["run"]["state"], "implementing");
    let listed = forq_env(&["runs", "show", &id, "--state", state_s], &[]).await;
    assert!(String::from_utf8_lossy(&listed.stdout).contains("interrupted"));

    let out = resume_native(&id, state_s).await;
    check_exit(&out, 0);
    assert_eq!(json_of(&out)["state"], "patch_ready");

    let shown = show_run(&id, state_s).await;
    let resumed = events_of(&shown, "resumed");
    assert_eq!(resumed.len(), 1, "{shown}");
    assert_eq!(resumed[0]["from"], "implementing");
    // Finished phases were not done again: one triage, one seed, and the
    // run never went back to an earlier state.
    let checkpoints: Vec<String> = events_of(&shown, "checkpoint")
        .iter()
        .map(|c| c["phase"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        checkpoints.iter().filter(|c| *c == "triaged").count(),
        1,
        "{checkpoints:?}"
    );
    assert_eq!(
        checkpoints.iter().filter(|c| *c == "seeded").count(),
        1,
        "{checkpoints:?}"
    );
    let states: Vec<String> = events_of(&shown, "state")
        .iter()
        .map(|s| s["to"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        states,
        [
            "triaging",
            "provisioning",
            "implementing",
            "testing",
            "patch_ready"
        ]
    );
}

#[tokio::test]
async fn after_a_crash_every_interrupted_run_is_listed_and_resumed_at_once() {
    if !native_or_skip("after_a_crash_every_interrupted_run_is_listed_and_resumed_at_once") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    slow_repo(tmp.path());
    let issues = tmp.path().join("issues");
    std::fs::create_dir(&issues).unwrap();
    for n in [1, 2] {
        std::fs::write(
            issues.join(format!("{n}.md")),
            format!(
                "---\nid: {n}\nrepo: ../slow\n---\n# clamp() is wrong at the upper bound ({n})\n"
            ),
        )
        .unwrap();
    }
    let state = tmp.path().join("state");
    let state_s = state.to_str().unwrap();
    // One run at a time: when the first is killed mid-search, the second
    // was never taken up.
    queue_killed_mid_search(
        &[
            "--issues".as_ref(),
            issues.as_os_str(),
            "--jobs".as_ref(),
            "1".as_ref(),
        ],
        state_s,
    )
    .await;

    let listed = |outcome: &'static str| {
        let state_s = state_s.to_owned();
        async move {
            let out = forq_env(
                &["runs", "--outcome", outcome, "--json", "--state", &state_s],
                &[],
            )
            .await;
            check_exit(&out, 0);
            let mut states: Vec<String> = json_of(&out)
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["state"].as_str().unwrap().to_owned())
                .collect();
            states.sort();
            states
        }
    };
    assert_eq!(listed("interrupted").await, ["implementing", "queued"]);
    assert!(listed("patch_ready").await.is_empty());
    let bad = forq_env(&["runs", "--outcome", "done", "--state", state_s], &[]).await;
    check_exit(&bad, 65);
    assert!(String::from_utf8_lossy(&bad.stderr).contains("patch_ready"));

    let out = resume_native("--interrupted", state_s).await;
    check_exit(&out, 0);
    let states: Vec<Value> = json_of(&out)
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["state"].clone())
        .collect();
    assert_eq!(states, ["patch_ready", "patch_ready"]);
    assert!(listed("interrupted").await.is_empty());
    assert_eq!(listed("patch_ready").await.len(), 2);
    // Nothing left: says so, succeeds.
    let again = forq_env(
        &["runs", "resume", "--interrupted", "--state", state_s],
        &[],
    )
    .await;
    check_exit(&again, 0);
    assert!(String::from_utf8_lossy(&again.stderr).contains("no interrupted run"));
}

#[tokio::test]
async fn a_live_run_aborts_on_request_and_tail_follows_it_to_the_end() {
    if !native_or_skip("a_live_run_aborts_on_request_and_tail_follows_it_to_the_end") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let repo = slow_repo(tmp.path());
    let state = tmp.path().join("state");
    let state_s = state.to_str().unwrap();
    // Its progress lines go to a file, so a queue that stops early, or
    // never records its run, says why.
    let log_path = format!("{state_s}.queue-stderr");
    let mut queue = forq_sandbox::host_command(forq_bin())
        .args(["queue", "--text", "# clamp() is wrong", "--repo"])
        .arg(&repo)
        .args(["--backend", "native", "--state", state_s])
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log_path).unwrap())
        .spawn()
        .unwrap();
    let id = tokio::select! {
        id = wait_for_state(state_s, "implementing") => id,
        status = queue.wait() => panic!(
            "forq queue exited ({status:?}) before a run was implementing; it said:\n{}",
            std::fs::read_to_string(&log_path).unwrap_or_default()
        ),
    };
    let tail = forq_sandbox::host_command(forq_bin())
        .args(["runs", "tail", &id, "--state", state_s])
        .env("NO_COLOR", "1")
        .output();
    let tail = tokio::spawn(tail);
    let out = forq_env(&["runs", "abort", &id, "--state", state_s], &[]).await;
    check_exit(&out, 0);
    assert!(String::from_utf8_lossy(&out.stdout).contains("aborted"));
    let queued = queue.wait().await.unwrap();
    assert_eq!(
        queued.code(),
        Some(1),
        "{}",
        std::fs::read_to_string(&log_path).unwrap_or_default()
    );
    let tailed = tail.await.unwrap().unwrap();
    check_exit(&tailed, 0);
    let text = String::from_utf8_lossy(&tailed.stdout);
    assert!(text.contains("implementing → aborted"), "{text}");
    let shown = forq_env(&["runs", "show", &id, "--state", state_s, "--json"], &[]).await;
    check_exit(&shown, 0);
    assert_eq!(json_of(&shown)["run"]["failure"], "cancelled");
    assert!(
        text.contains("queued") || text.contains("created"),
        "from the start: {text}"
    );
}
