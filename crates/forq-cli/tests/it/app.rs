//! The application end to end: `forq queue` over a directory of the
//! bundled examples' issues ending in committed branches, `forq files`
//! piped into `xargs`, `forq push` to a local bare repository (and a pull
//! request on a loopback GitHub), resume after `kill -9`, abort while
//! live, keys never written, contributor funding, `forq config`.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::server::{Reply, Server};
use super::{check_exit, git, native_or_skip, repo_root};
use crate::agent::forq_env;

/// Copies examples `names` into `dir` (each with its ISSUE.md): an issue
/// directory whose issues are their own repositories.
fn issue_dir(dir: &Path, names: &[&str]) -> PathBuf {
    let issues = dir.join("issues");
    for name in names {
        forq_search::bench::copy_tree(&repo_root().join("examples").join(name), &issues.join(name))
            .unwrap();
    }
    issues
}

fn json_of(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

async fn sh(script: &str) -> Output {
    forq_sandbox::host_command("sh")
        .args(["-c", script])
        .current_dir(repo_root())
        .env("NO_COLOR", "1")
        .output()
        .await
        .unwrap()
}

/// `forq queue --text TEXT --repo REPO --backend BACKEND --state STATE
/// --json` and `extra`, with `env`.
async fn queue_text(
    text: &str,
    repo: &Path,
    backend: &str,
    state: &Path,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Output {
    let mut args = vec![
        "queue",
        "--text",
        text,
        "--repo",
        repo.to_str().unwrap(),
        "--backend",
        backend,
        "--state",
        state.to_str().unwrap(),
        "--json",
    ];
    args.extend_from_slice(extra);
    forq_env(&args, env).await
}

#[tokio::test]
async fn a_run_that_stops_short_records_the_class_of_why() {
    // Every test passes and there is no model to write a reproduction:
    // the repository's, not forq's, and not a decision.
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(repo.join("tests")).unwrap();
    std::fs::write(repo.join("calc.py"), "def add(a, b):\n    return a + b\n").unwrap();
    std::fs::write(repo.join("tests/__init__.py"), "").unwrap();
    std::fs::write(
        repo.join("tests/test_calc.py"),
        "import unittest\n\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n",
    )
    .unwrap();
    let state = tmp.path().join("state");
    let out = queue_text("# add() is slow", &repo, "host", &state, &[], &[]).await;
    check_exit(&out, 1);
    let run = &json_of(&out)[0];
    assert_eq!(run["state"], "needs_human", "{run}");
    assert_eq!(run["failure"], "repository", "{run}");
    assert!(
        run["reason"]
            .as_str()
            .unwrap()
            .contains("every test passes on the unmodified code"),
        "{run}"
    );
    // The state event carries it too, for a stream's reader.
    let id = run["id"].as_str().unwrap();
    let shown = forq_env(
        &[
            "runs",
            "show",
            id,
            "--state",
            state.to_str().unwrap(),
            "--json",
        ],
        &[],
    )
    .await;
    check_exit(&shown, 0);
    let shown = json_of(&shown);
    let last = shown["events"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|e| e["kind"] == "state")
        .unwrap();
    assert_eq!(last["data"]["failure"], "repository", "{last}");
}

#[tokio::test]
async fn verbose_logs_follow_a_run_through_its_phases_in_spans() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = calc_repo(tmp.path(), None);
    let state = tmp.path().join("state");
    let out = queue_text("# add() subtracts", &repo, "host", &state, &["-v"], &[]).await;
    check_exit(&out, 0);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let id = json_of(&out)[0]["id"].as_str().unwrap().to_owned();
    // Each phase is logged inside the run's span; the gate's verdict inside
    // the gate's span, within the run's; the search's end inside its own.
    for phase in ["provisioning", "implementing", "testing"] {
        let line = format!("run{{run={id}}}: phase phase=\"{phase}\"");
        assert!(stderr.contains(&line), "{line} missing:\n{stderr}");
    }
    assert!(
        stderr.contains(&format!("run{{run={id}}}:gate{{repo="))
            && stderr.contains("gate verdict verdict=\"bootstrapped\""),
        "{stderr}"
    );
    assert!(
        stderr.contains("search{brancher=mutate}: search done") && stderr.contains("solved=true"),
        "{stderr}"
    );
    assert!(
        stderr.contains("run ended state=\"patch_ready\""),
        "{stderr}"
    );
}

/// A replay recording of `times` triage answers of `verdict`.
fn triage_replay(dir: &Path, verdict: &Value, times: usize) -> PathBuf {
    let answer = json!({"message": {"role": "assistant", "parts": [{"type": "text", "text": verdict.to_string()}]},
        "usage": {"input_tokens": 300, "output_tokens": 30}, "stop": "end_turn", "model": "recorded"});
    let path = dir.join("triage.jsonl");
    std::fs::write(&path, format!("{answer}\n").repeat(times)).unwrap();
    path
}

/// examples/calc copied to `dir/calc`, with `forq_yml` as its forq.yml
/// when given.
fn calc_repo(dir: &Path, forq_yml: Option<&str>) -> PathBuf {
    let repo = dir.join("calc");
    forq_search::bench::copy_tree(&repo_root().join("examples/calc"), &repo).unwrap();
    if let Some(yml) = forq_yml {
        std::fs::write(repo.join("forq.yml"), yml).unwrap();
    }
    repo
}

fn forq_bin() -> &'static str {
    env!("CARGO_BIN_EXE_forq")
}

#[tokio::test]
async fn a_queue_of_example_issues_ends_in_committed_branches_that_push() {
    if !native_or_skip("a_queue_of_example_issues_ends_in_committed_branches_that_push") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let issues = issue_dir(tmp.path(), &["py-clamp", "js-min-of", "c-abs"]);
    let state = tmp.path().join("state");
    let state_s = state.to_str().unwrap();
    let out = forq_env(
        &[
            "queue",
            "--issues",
            issues.to_str().unwrap(),
            "--jobs",
            "2",
            "--backend",
            "native",
            "--state",
            state_s,
            "--json",
        ],
        &[],
    )
    .await;
    check_exit(&out, 0);
    let runs = json_of(&out);
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 3, "{runs:?}");
    for run in runs {
        let id = run["id"].as_str().unwrap();
        let name = run["issue"]["id"].as_str().unwrap();
        assert_eq!(run["state"], "patch_ready", "{run}");
        let branch = run["branch"].as_str().unwrap();
        assert_eq!(branch, format!("forq/fix/{id}"));
        let lines = run["patch_lines"].as_u64().unwrap();
        assert!((1..=4).contains(&lines), "{run}");
        // The branch holds one commit over the seed, naming issue and run.
        let ws = state.join("runs").join(id).join("workspace");
        let message = git(&ws, &["log", "-1", "--format=%B", branch]).await;
        assert!(message.starts_with(&format!("Fix #{name}: ")), "{message}");
        assert!(message.contains(&format!("forq run {id}")), "{message}");
        let count = git(&ws, &["rev-list", "--count", &format!("main..{branch}")]).await;
        assert_eq!(count, "1");
        // Nothing of forq's own is committed.
        let files = git(&ws, &["show", "--name-only", "--format=", branch]).await;
        assert!(!files.contains(".forq"), "{files}");
        // The issue directory (the repository) was not written.
        assert!(!issues.join(name).join(".git").exists());
        // Every phase, in order.
        let shown = forq_env(&["runs", "show", id, "--json", "--state", state_s], &[]).await;
        check_exit(&shown, 0);
        let states: Vec<String> = json_of(&shown)["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["kind"] == "state")
            .map(|e| e["data"]["to"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            states,
            [
                "triaging",
                "provisioning",
                "implementing",
                "testing",
                "patch_ready"
            ],
            "{name}"
        );
    }
    let listed = forq_env(&["runs", "--state", state_s], &[]).await;
    check_exit(&listed, 0);
    let table = String::from_utf8_lossy(&listed.stdout);
    assert!(table.starts_with("RUN "), "{table}");
    assert_eq!(table.matches("patch_ready").count(), 3, "{table}");

    // `forq files` composes with xargs and $(...): bare paths, one a line,
    // because stdout is a pipe.
    let py = runs
        .iter()
        .find(|r| r["issue"]["id"] == "py-clamp")
        .unwrap();
    let py_id = py["id"].as_str().unwrap();
    let piped = sh(&format!(
        "{} files {py_id} --state {state_s} | grep -c .",
        forq_bin()
    ))
    .await;
    check_exit(&piped, 0);
    let composed = sh(&format!(
        "{bin} files {py_id} --abs --state {state_s} | grep 'clamp.py$' | grep -v test | xargs cat && cat $({bin} files {py_id} --abs --plain --state {state_s} | grep ISSUE.md)",
        bin = forq_bin()
    ))
    .await;
    check_exit(&composed, 0);
    let text = String::from_utf8_lossy(&composed.stdout);
    assert!(text.contains("def clamp"), "{text}");
    assert!(
        text.contains("# "),
        "the issue file came through $(...): {text}"
    );

    // `forq push` to a bare repository: the branch arrives; again, it is
    // the run's own; once someone else moved it, nothing is forced.
    let bare = tmp.path().join("remote.git");
    git(
        tmp.path(),
        &["init", "-q", "--bare", bare.to_str().unwrap()],
    )
    .await;
    let push = |extra: Vec<String>| {
        let mut args = vec![
            "push".to_owned(),
            py_id.to_owned(),
            "--remote".to_owned(),
            bare.display().to_string(),
            "--state".to_owned(),
            state_s.to_owned(),
        ];
        args.extend(extra);
        args
    };
    let args = push(Vec::new());
    let out = forq_env(&args.iter().map(String::as_str).collect::<Vec<_>>(), &[]).await;
    check_exit(&out, 0);
    let branch = py["branch"].as_str().unwrap();
    let ws = state.join("runs").join(py_id).join("workspace");
    let local = git(&ws, &["rev-parse", branch]).await;
    assert_eq!(git(&bare, &["rev-parse", branch]).await, local);
    let out = forq_env(&args.iter().map(String::as_str).collect::<Vec<_>>(), &[]).await;
    check_exit(&out, 0);
    // Someone else pushes to the branch.
    let other = tmp.path().join("other");
    git(
        tmp.path(),
        &[
            "clone",
            "-q",
            bare.to_str().unwrap(),
            other.to_str().unwrap(),
        ],
    )
    .await;
    git(&other, &["checkout", "-q", branch]).await;
    std::fs::write(other.join("theirs.txt"), "theirs\n").unwrap();
    git(&other, &["add", "theirs.txt"]).await;
    git(
        &other,
        &[
            "-c",
            "user.name=x",
            "-c",
            "user.email=x@x",
            "commit",
            "-qm",
            "theirs",
        ],
    )
    .await;
    git(&other, &["push", "-q", "origin", branch]).await;
    let theirs = git(&other, &["rev-parse", "HEAD"]).await;
    let out = forq_env(&args.iter().map(String::as_str).collect::<Vec<_>>(), &[]).await;
    check_exit(&out, 1);
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing was forced"));
    assert_eq!(
        git(&bare, &["rev-parse", branch]).await,
        theirs,
        "their work stands"
    );

    // A pull request, on a loopback GitHub, for another run.
    let js = runs
        .iter()
        .find(|r| r["issue"]["id"] == "js-min-of")
        .unwrap();
    let js_id = js["id"].as_str().unwrap();
    let server = Server::start(vec![Reply::status(
        201,
        json!({"number": 7, "html_url": "https://github.com/o/r/pull/7"}),
    )])
    .await;
    let mut args = push(vec![
        "--pr".into(),
        "--github".into(),
        "o/r".into(),
        "--json".into(),
    ]);
    args[1] = js_id.to_owned();
    let out = forq_env(
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
        &[
            ("GITHUB_API_URL", server.url.as_str()),
            ("GITHUB_TOKEN", "ghp_test"),
        ],
    )
    .await;
    check_exit(&out, 0);
    assert_eq!(json_of(&out)["pull_request"]["number"], 7);
    let got = server.received();
    assert_eq!(
        (got[0].method.as_str(), got[0].path.as_str()),
        ("POST", "/repos/o/r/pulls")
    );
    assert_eq!(got[0].body["head"], js["branch"]);
    assert_eq!(got[0].body["base"], "main");
    assert!(got[0].body["body"]
        .as_str()
        .unwrap()
        .contains("Fixes #js-min-of"));
    assert_eq!(show_run(js_id, state_s).await["run"]["state"], "pr_opened");
}

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

/// `forq runs show ID --json`, parsed.
async fn show_run(id: &str, state_s: &str) -> Value {
    json_of(&forq_env(&["runs", "show", id, "--json", "--state", state_s], &[]).await)
}

fn events_of(shown: &Value, kind: &str) -> Vec<Value> {
    shown["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == kind)
        .map(|e| e["data"].clone())
        .collect()
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

#[tokio::test]
async fn keys_reach_the_provider_and_are_written_nowhere() {
    const KEY: &str = "sk-forq-test-key-7f3a9c";
    let tmp = tempfile::tempdir().unwrap();
    let repo = calc_repo(tmp.path(), None);
    let verdict = json!({"act": false, "confidence": 0.9, "reason": "a question, not a bug",
        "suggested_action": "comment"});
    let server = Server::start(vec![Reply::ok(json!({
        "id": "c1", "object": "chat.completion", "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": verdict.to_string()}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
    }))])
    .await;
    let state = tmp.path().join("state");
    let out = queue_text(
        "# Is add() meant to take floats?",
        &repo,
        "host",
        &state,
        &["--action", "triage", "-v"],
        &[
            ("OPENAI_BASE_URL", &format!("{}/v1", server.url)),
            ("OPENAI_API_KEY", KEY),
            ("FORQ_MODEL", "m"),
        ],
    )
    .await;
    check_exit(&out, 0);
    let runs = json_of(&out);
    assert_eq!(runs[0]["state"], "triaged", "{runs}");
    assert_eq!(runs[0]["reason"], "a question, not a bug");
    assert_eq!(
        server.received()[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str()),
        "the key was used"
    );
    let mut scanned = 0;
    for root in [&state, &repo] {
        for entry in walkdir::WalkDir::new(root).into_iter().flatten() {
            if entry.file_type().is_file() {
                scanned += 1;
                let bytes = std::fs::read(entry.path()).unwrap();
                assert!(
                    !bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes()),
                    "{} holds the key",
                    entry.path().display()
                );
            }
        }
    }
    assert!(scanned >= 2, "the store was written: {scanned} files");
    for stream in [&out.stdout, &out.stderr] {
        assert!(!String::from_utf8_lossy(stream).contains(KEY));
    }
}

#[tokio::test]
async fn contributor_funded_runs_do_not_start_without_the_contributors_key() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = calc_repo(
        tmp.path(),
        Some("funding:\n  mode: contributor\n  trusted: [maintainer]\n"),
    );
    let state = tmp.path().join("state");
    // The owner has a model: it must not pay for the contributor's run,
    // not even its triage.
    let verdict = json!({"act": false, "confidence": 0.9, "reason": "needs a design first",
        "suggested_action": "comment"});
    let server = Server::start(vec![Reply::ok(json!({
        "id": "c1", "object": "chat.completion", "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": verdict.to_string()}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
    }))])
    .await;
    let base = format!("{}/v1", server.url);
    let owner = [
        ("OPENAI_BASE_URL", base.as_str()),
        ("OPENAI_API_KEY", "sk-owner"),
        ("FORQ_MODEL", "m"),
    ];
    let out = queue_text("# add() subtracts", &repo, "host", &state, &[], &owner).await;
    check_exit(&out, 1);
    let runs = json_of(&out);
    assert_eq!(runs[0]["state"], "needs_human");
    assert_eq!(
        runs[0]["failure"], "input",
        "the contributor's key is missing"
    );
    let reason = runs[0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("contributor-funded") && reason.contains("needs the contributor's key"),
        "{reason}"
    );
    assert!(
        server.received().is_empty(),
        "the owner's key paid for nothing"
    );
    // With the contributor's key, the contributor pays, from triage on.
    let mut env = owner.to_vec();
    env.push(("CONTRIBUTOR_KEY", "sk-contributor"));
    let extra = ["--contributor-key-env", "CONTRIBUTOR_KEY"];
    let paid = queue_text("# add() subtracts", &repo, "host", &state, &extra, &env).await;
    check_exit(&paid, 1);
    assert_eq!(json_of(&paid)[0]["reason"], "triage: needs a design first");
    assert_eq!(
        server.received()[0].header("authorization"),
        Some("Bearer sk-contributor")
    );
    // Nothing ran: no gate record in the workspace.
    let id = runs[0]["id"].as_str().unwrap();
    assert!(!state
        .join("runs")
        .join(id)
        .join("workspace/.forq/bootstrap")
        .exists());
}

#[tokio::test]
async fn config_schema_and_check() {
    let out = forq_env(&["config", "schema"], &[]).await;
    check_exit(&out, 0);
    let schema = json_of(&out);
    assert!(schema["properties"]["actions"].is_object(), "{schema}");
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("forq.yml");
    std::fs::write(&file, "sandbox:\n  backend: docker\n  memory_mb: lots\n").unwrap();
    let out = forq_env(&["config", "check", file.to_str().unwrap()], &[]).await;
    check_exit(&out, 1);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("forq.yml:3: sandbox.memory_mb:"), "{err}");
    std::fs::write(&file, "actions:\n  fix:\n    strategy: single\n").unwrap();
    let out = forq_env(
        &[
            "config",
            "check",
            "--repo",
            tmp.path().to_str().unwrap(),
            "--json",
        ],
        &[],
    )
    .await;
    check_exit(&out, 0);
    assert_eq!(
        json_of(&out)["config"]["actions"]["fix"]["strategy"],
        "single"
    );
}

#[tokio::test]
async fn triage_gates_fixing_and_the_skipped_issue_keeps_its_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = calc_repo(tmp.path(), None);
    let verdict = json!({"act": false, "confidence": 0.8, "reason": "a duplicate of #3",
        "suggested_action": "close"});
    let replay = triage_replay(tmp.path(), &verdict, 1);
    let state = tmp.path().join("state");
    let replay = replay.to_str().unwrap();
    let extra = ["--provider", "replay", "--replay", replay];
    let out = queue_text("# add() subtracts", &repo, "host", &state, &extra, &[]).await;
    check_exit(&out, 1);
    let run = &json_of(&out)[0];
    assert_eq!(run["state"], "needs_human");
    assert_eq!(run["reason"], "triage: a duplicate of #3");
    assert!(run["failure"].is_null(), "a decision, not a failure: {run}");
    // Declined at triage: nothing was seeded.
    let id = run["id"].as_str().unwrap();
    assert!(!state.join("runs").join(id).join("workspace").exists());
}

#[tokio::test]
async fn a_queue_run_again_skips_issues_that_have_a_patch_unless_asked() {
    let tmp = tempfile::tempdir().unwrap();
    let issues = issue_dir(tmp.path(), &["py-clamp"]);
    let state = tmp.path().join("state");
    let state_s = state.to_str().unwrap();
    let queue = |extra: &'static [&'static str]| {
        let issues = issues.clone();
        let state_s = state_s.to_owned();
        async move {
            let mut args = vec!["queue", "--issues", issues.to_str().unwrap()];
            args.extend_from_slice(&["--backend", "host", "--json", "--state", &state_s]);
            args.extend_from_slice(extra);
            forq_env(&args, &[]).await
        }
    };
    let first = queue(&[]).await;
    check_exit(&first, 0);
    assert_eq!(json_of(&first)[0]["state"], "patch_ready");

    let again = queue(&[]).await;
    check_exit(&again, 0);
    assert_eq!(json_of(&again), json!([]));
    let said = String::from_utf8_lossy(&again.stderr);
    assert!(
        said.contains("#py-clamp skipped") && said.contains("patch_ready"),
        "{said}"
    );
    let all = forq_env(&["runs", "--json", "--state", state_s], &[]).await;
    assert_eq!(json_of(&all).as_array().unwrap().len(), 1);

    let forced = queue(&["--again"]).await;
    check_exit(&forced, 0);
    assert_eq!(json_of(&forced)[0]["state"], "patch_ready");
    let all = forq_env(&["runs", "--json", "--state", state_s], &[]).await;
    assert_eq!(json_of(&all).as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn a_repositorys_forq_yml_cannot_choose_the_host_backend() {
    if !native_or_skip("a_repositorys_forq_yml_cannot_choose_the_host_backend") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let repo = calc_repo(tmp.path(), Some("sandbox:\n  backend: host\n"));
    let state = tmp.path().join("state");
    let state_s = state.to_str().unwrap();
    // The repository's wish for no isolation is ignored, with a warning in
    // the run's events: under auto runs are native; the operator's
    // --backend host holds, with a warning of its own.
    for (cli, used) in [("auto", "native"), ("host", "host")] {
        let out = queue_text("# add() subtracts", &repo, cli, &state, &[], &[]).await;
        check_exit(&out, 0);
        let id = json_of(&out)[0]["id"].as_str().unwrap().to_owned();
        let shown = show_run(&id, state_s).await;
        let notes: Vec<String> = events_of(&shown, "note")
            .iter()
            .filter_map(|n| n["text"].as_str().map(str::to_owned))
            .collect();
        assert!(
            notes
                .iter()
                .any(|n| n.starts_with("oracle:") && n.contains(&format!(" on {used}"))),
            "--backend {cli} with forq.yml's host: {notes:?}"
        );
        let warnings = events_of(&shown, "warning");
        assert!(
            warnings.iter().any(|w| w["key"] == "sandbox.backend"),
            "--backend {cli}: {warnings:?}"
        );
        if cli == "host" {
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(stderr.contains("isolates nothing"), "{stderr}");
        }
    }
}

#[tokio::test]
async fn clean_removes_workspaces_of_runs_that_are_over_and_keeps_unpushed_patches() {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let state_s = state.to_str().unwrap();
    // One run ends with a patch; one, on code whose tests all pass, with
    // nothing to fix (after seeding: it has a workspace).
    let patched = queue_text(
        "# clamp",
        &issue_dir(tmp.path(), &["py-clamp"]).join("py-clamp"),
        "host",
        &state,
        &[],
        &[],
    )
    .await;
    check_exit(&patched, 0);
    let patched = json_of(&patched)[0]["id"].as_str().unwrap().to_owned();
    let repo = calc_repo(tmp.path(), None);
    let code = std::fs::read_to_string(repo.join("calc.py")).unwrap();
    std::fs::write(repo.join("calc.py"), code.replace("a - b", "a + b")).unwrap();
    let nothing = queue_text("# add() is fine", &repo, "host", &state, &[], &[]).await;
    check_exit(&nothing, 1);
    let nothing = json_of(&nothing)[0]["id"].as_str().unwrap().to_owned();

    let out = forq_env(&["runs", "clean", "--json", "--state", state_s], &[]).await;
    check_exit(&out, 0);
    let cleaned = json_of(&out);
    assert_eq!(cleaned["runs"], json!([nothing]));
    assert_eq!(cleaned["kept"], json!([patched]));
    assert!(cleaned["bytes"].as_u64().unwrap() > 0);
    let files = forq_env(&["files", &nothing, "--state", state_s], &[]).await;
    check_exit(&files, 65);
    assert!(String::from_utf8_lossy(&files.stderr).contains("forq runs clean"));
    // The record stays.
    let shown = show_run(&nothing, state_s).await;
    assert_eq!(shown["run"]["state"], "needs_human");
    assert_eq!(events_of(&shown, "cleaned").len(), 1);

    let out = forq_env(
        &["runs", "clean", "--patched", "--json", "--state", state_s],
        &[],
    )
    .await;
    assert_eq!(json_of(&out)["runs"], json!([patched]));
}

#[tokio::test]
async fn a_runs_cost_counts_triage_and_the_llm_branchers_calls() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = calc_repo(
        tmp.path(),
        Some("actions:\n  fix:\n    strategy: speculative\n    brancher: llm\n"),
    );
    let verdict = json!({"act": true, "confidence": 0.9, "reason": "add() subtracts",
        "suggested_action": "fix"});
    let replay = triage_replay(tmp.path(), &verdict, 1);
    let candidates = json!({"candidates": [{"hypothesis": "add() adds",
        "edits": [{"path": "calc.py", "old": "return a - b", "new": "return a + b"}]}]});
    let answer = json!({"message": {"role": "assistant", "parts": [{"type": "text", "text": candidates.to_string()}]},
        "usage": {"input_tokens": 1000, "output_tokens": 100}, "stop": "end_turn", "model": "recorded"});
    let mut recording = std::fs::read_to_string(&replay).unwrap();
    recording.push_str(&format!("{answer}\n"));
    std::fs::write(&replay, recording).unwrap();
    // $10 per million tokens either way: triage 330 tokens, the brancher 1100.
    let prices = tmp.path().join("prices.json");
    std::fs::write(&prices, r#"{"recorded": {"input": 10.0, "output": 10.0}}"#).unwrap();
    let state = tmp.path().join("state");
    let extra = [
        "--provider",
        "replay",
        "--replay",
        replay.to_str().unwrap(),
        "--prices",
        prices.to_str().unwrap(),
    ];
    let out = queue_text("# add() subtracts", &repo, "host", &state, &extra, &[]).await;
    check_exit(&out, 0);
    let run = &json_of(&out)[0];
    assert_eq!(run["state"], "patch_ready", "{run}");
    let cost = run["cost_usd"].as_f64().unwrap();
    assert!((cost - 0.0143).abs() < 1e-9, "cost {cost} in {run}");
}

#[tokio::test]
async fn manual_mode_stops_at_triage_and_context_files_land_inside_the_workspace() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = calc_repo(tmp.path(), Some("actions:\n  fix:\n    mode: manual\n"));
    let spec = tmp.path().join("spec.md");
    std::fs::write(&spec, "add() must add\n").unwrap();
    let state = tmp.path().join("state");
    let base = |context: String| {
        vec![
            "queue".to_owned(),
            "--text".to_owned(),
            "# add() subtracts".to_owned(),
            "--repo".to_owned(),
            repo.display().to_string(),
            "--backend".to_owned(),
            "host".to_owned(),
            "--state".to_owned(),
            state.display().to_string(),
            "--context".to_owned(),
            context,
            "--json".to_owned(),
        ]
    };
    let args = base(format!("{}:../outside.md", spec.display()));
    let out = forq_env(&args.iter().map(String::as_str).collect::<Vec<_>>(), &[]).await;
    check_exit(&out, 65);
    assert!(String::from_utf8_lossy(&out.stderr).contains("inside the workspace"));

    let args = base(format!("{}:docs/spec.md", spec.display()));
    let out = forq_env(&args.iter().map(String::as_str).collect::<Vec<_>>(), &[]).await;
    check_exit(&out, 0);
    let run = &json_of(&out)[0];
    assert_eq!(run["state"], "triaged", "{run}");
    assert!(run["reason"].as_str().unwrap().contains("manual"), "{run}");
    let ws = state
        .join("runs")
        .join(run["id"].as_str().unwrap())
        .join("workspace");
    assert_eq!(
        std::fs::read_to_string(ws.join("docs/spec.md")).unwrap(),
        "add() must add\n"
    );
    // The context is given, not committed.
    assert_eq!(
        git(&ws, &["status", "--porcelain", "--", "docs"]).await,
        "?? docs/"
    );
}

#[tokio::test]
async fn a_github_backlog_is_listed_page_by_page_and_triaged() {
    let issue = |n: u64, pull: bool| {
        let mut v = json!({"number": n, "title": format!("bug {n}"), "body": "it breaks",
            "html_url": format!("https://github.com/o/r/issues/{n}"), "state": "open",
            "labels": [{"name": "bug"}], "user": {"login": "alice"}});
        if pull {
            v["pull_request"] = json!({});
        }
        v
    };
    let server = Server::start(vec![
        Reply::Json {
            status: 200,
            headers: vec![(
                "link",
                r#"<{base}/repositories/1/issues?page=2>; rel="next""#.to_owned(),
            )],
            body: json!([issue(1, false), issue(2, true)]).to_string(),
        },
        Reply::ok(json!([issue(3, false)])),
        // No forq.yml, no .forq.yml: the defaults.
        Reply::status(404, json!({"message": "Not Found"})),
        Reply::status(404, json!({"message": "Not Found"})),
    ])
    .await;
    let tmp = tempfile::tempdir().unwrap();
    let verdict = json!({"act": true, "confidence": 0.9, "reason": "a clear bug",
        "suggested_action": "fix"});
    let replay = triage_replay(tmp.path(), &verdict, 2);
    let state = tmp.path().join("state");
    let out = forq_env(
        &[
            "queue",
            "--repo",
            "https://github.com/o/r",
            "--label",
            "bug",
            "--action",
            "triage",
            "--provider",
            "replay",
            "--replay",
            replay.to_str().unwrap(),
            "--backend",
            "host",
            "--state",
            state.to_str().unwrap(),
            "--json",
        ],
        &[
            ("GITHUB_API_URL", server.url.as_str()),
            ("GITHUB_TOKEN", "ghp_x"),
        ],
    )
    .await;
    check_exit(&out, 0);
    let runs = json_of(&out);
    let ids: Vec<&str> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["issue"]["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["1", "3"], "the pull request is not an issue");
    for run in runs.as_array().unwrap() {
        assert_eq!(run["state"], "triaged");
        assert_eq!(run["reason"], "a clear bug");
        assert_eq!(run["repo"], "https://github.com/o/r.git");
        assert_eq!(run["issue"]["author"], "alice");
    }
    let got = server.received();
    assert!(got[0].path.contains("labels=bug"), "{}", got[0].path);
    assert_eq!(got[1].path, "/repositories/1/issues?page=2");
    assert_eq!(got[2].path, "/repos/o/r/contents/forq.yml");
    assert_eq!(got[3].path, "/repos/o/r/contents/.forq.yml");
}

#[tokio::test]
async fn a_github_repositorys_forq_yml_is_read_before_triage() {
    // The repository makes runs contributor-funded: read through the API
    // before anything is cloned, it stops the owner's model from paying
    // for triage.
    let server = Server::start(vec![
        Reply::ok(json!([{"number": 5, "title": "bug 5", "body": "it breaks",
            "html_url": "https://github.com/o/r/issues/5", "state": "open",
            "labels": [], "user": {"login": "mallory"}}])),
        Reply::ok(json!({"type": "file", "encoding": "base64",
            "content": "ZnVuZGluZzoKICBtb2Rl\nOiBjb250cmlidXRvcgogIHRydXN0ZWQ6IFttYWludGFpbmVyXQo="})),
    ])
    .await;
    let tmp = tempfile::tempdir().unwrap();
    let verdict = json!({"act": true, "confidence": 0.9, "reason": "a clear bug",
        "suggested_action": "fix"});
    let replay = triage_replay(tmp.path(), &verdict, 1);
    let out = forq_env(
        &[
            "queue",
            "--repo",
            "https://github.com/o/r",
            "--provider",
            "replay",
            "--replay",
            replay.to_str().unwrap(),
            "--backend",
            "host",
            "--state",
            tmp.path().join("state").to_str().unwrap(),
            "--json",
        ],
        &[("GITHUB_API_URL", server.url.as_str())],
    )
    .await;
    check_exit(&out, 1);
    let run = &json_of(&out)[0];
    assert_eq!(run["state"], "needs_human", "{run}");
    let reason = run["reason"].as_str().unwrap();
    assert!(
        reason.contains("contributor-funded") && reason.contains("mallory"),
        "{reason}"
    );
    assert_eq!(server.received()[1].path, "/repos/o/r/contents/forq.yml");
}

/// A repository for the docker backend's bare busybox image: its tests are
/// a shell script printing TAP; the code is Python the search mutates
/// (`add` subtracts).
fn shcalc_repo(dir: &Path) -> PathBuf {
    let repo = dir.join("shcalc");
    std::fs::create_dir(&repo).unwrap();
    std::fs::write(
        repo.join("calc.py"),
        "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n",
    )
    .unwrap();
    // TAP as node's runner and tape write it: subtests, then the counts.
    let script = r##"pass=0; fail=0
check() {
  echo "# Subtest: $1"
  if grep -qF "$2" calc.py; then echo "ok $3 - $1"; pass=$((pass+1)); else echo "not ok $3 - $1"; fail=$((fail+1)); fi
}
check add 'return a + b' 1
check mul 'return a * b' 2
echo "1..2"; echo "# tests 2"; echo "# pass $pass"; echo "# fail $fail"
[ "$fail" -eq 0 ]
"##;
    std::fs::write(repo.join("test.sh"), script).unwrap();
    std::fs::write(
        repo.join("forq.yml"),
        "golden:\n  test: sh test.sh\ntriage:\n  enabled: false\n",
    )
    .unwrap();
    repo
}

#[tokio::test]
async fn the_same_pipeline_runs_on_a_remote_engine_through_docker_host() {
    // .ci/run starts dockerd on loopback TCP too: a remote engine.
    let address = "127.0.0.1:2375";
    if tokio::net::TcpStream::connect(address).await.is_err() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI starts dockerd on {address}"
        );
        eprintln!("SKIPPED the_same_pipeline_runs_on_a_remote_engine_through_docker_host: no engine on tcp://{address}");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let repo = shcalc_repo(tmp.path());
    let state = tmp.path().join("state");
    let host = format!("tcp://{address}");
    let out = queue_text(
        "# add() subtracts",
        &repo,
        "docker",
        &state,
        &[],
        &[("DOCKER_HOST", &host)],
    )
    .await;
    check_exit(&out, 0);
    let run = &json_of(&out)[0];
    assert_eq!(run["state"], "patch_ready", "{run}");
    let ws = state
        .join("runs")
        .join(run["id"].as_str().unwrap())
        .join("workspace");
    let diff = git(&ws, &["show", "--format=", run["branch"].as_str().unwrap()]).await;
    assert!(diff.contains("+    return a + b"), "{diff}");
}

#[tokio::test]
async fn a_queue_spreads_its_runs_over_several_engines() {
    // Two addresses of CI's engine (its socket, and loopback TCP) stand for
    // two hosts: what is tested is the spreading, one run on each.
    let address = "127.0.0.1:2375";
    let socket = "/var/run/docker.sock";
    if tokio::net::TcpStream::connect(address).await.is_err() || !Path::new(socket).exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI starts dockerd on {socket} and {address}"
        );
        eprintln!("SKIPPED a_queue_spreads_its_runs_over_several_engines: no engine on both");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    shcalc_repo(tmp.path());
    let issues = tmp.path().join("issues");
    std::fs::create_dir(&issues).unwrap();
    for n in [1, 2] {
        std::fs::write(
            issues.join(format!("{n}.md")),
            format!("---\nid: {n}\nrepo: ../shcalc\n---\n# add() subtracts ({n})\n"),
        )
        .unwrap();
    }
    let state = tmp.path().join("state");
    let state_s = state.to_str().unwrap();
    let unix = format!("unix://{socket}");
    let tcp = format!("tcp://{address}");
    let out = forq_env(
        &[
            "queue",
            "--issues",
            issues.to_str().unwrap(),
            "--docker-host",
            &unix,
            "--docker-host",
            &tcp,
            "--jobs",
            "1",
            "--json",
            "--state",
            state_s,
        ],
        &[],
    )
    .await;
    check_exit(&out, 0);
    let mut used = Vec::new();
    for run in json_of(&out).as_array().unwrap() {
        assert_eq!(run["state"], "patch_ready", "{run}");
        let id = run["id"].as_str().unwrap();
        let shown = show_run(id, state_s).await;
        let engines = events_of(&shown, "engine");
        assert_eq!(engines.len(), 1, "{shown}");
        used.push(engines[0]["engine"].as_str().unwrap().to_owned());
    }
    used.sort();
    let mut want = vec![tcp, unix];
    want.sort();
    assert_eq!(used, want, "one run on each engine");
    // An engine that does not answer is named.
    let bad = forq_env(
        &[
            "queue",
            "--issues",
            issues.to_str().unwrap(),
            "--docker-host",
            "tcp://127.0.0.1:9",
            "--again",
            "--state",
            state_s,
        ],
        &[],
    )
    .await;
    check_exit(&bad, 69);
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--docker-host tcp://127.0.0.1:9"));
}

#[tokio::test]
async fn queue_runs_on_one_repository_share_its_golden() {
    // The first run builds the repository's golden, the next forks it, and
    // each says which in its events.
    if !native_or_skip("queue_runs_on_one_repository_share_its_golden") {
        return;
    }
    let tmp = tempfile::Builder::new()
        .prefix("forq-queue-golden-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let repo = calc_repo(tmp.path(), None);
    let state = tmp.path().join("state");
    let state_s = state.to_str().unwrap();
    let sandboxes = tmp.path().join("sandboxes");
    let sandboxes_s = sandboxes.to_str().unwrap();
    let mut hows = Vec::new();
    for text in ["# add() subtracts", "# add() is still wrong"] {
        let out = queue_text(
            text,
            &repo,
            "native",
            &state,
            &["--golden", "build"],
            &[("FORQ_SANDBOX_DIR", sandboxes_s)],
        )
        .await;
        check_exit(&out, 0);
        let runs = json_of(&out);
        let id = runs[0]["id"].as_str().unwrap().to_owned();
        assert_eq!(runs[0]["state"], "patch_ready", "{runs}");
        let golden = events_of(&show_run(&id, state_s).await, "golden");
        let first = golden
            .first()
            .unwrap_or_else(|| panic!("no golden event in {id}"));
        hows.push(first["golden"]["how"].as_str().unwrap().to_owned());
    }
    assert_eq!(hows, ["built", "forked"]);
}

#[tokio::test]
async fn a_run_paused_for_review_is_approved_from_the_command_line() {
    if !native_or_skip("a_run_paused_for_review_is_approved_from_the_command_line") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let issues = issue_dir(tmp.path(), &["py-clamp", "js-min-of"]);
    for name in ["py-clamp", "js-min-of"] {
        std::fs::write(issues.join(name).join("forq.yml"), "review: [commit]\n").unwrap();
    }
    let state = tmp.path().join("state");
    let state_s = state.to_str().unwrap();
    let queued = forq_env(
        &[
            "queue",
            "--issues",
            issues.to_str().unwrap(),
            "--backend",
            "native",
        ]
        .iter()
        .chain(&["--state", state_s, "--json"])
        .copied()
        .collect::<Vec<_>>(),
        &[],
    )
    .await;
    // Paused runs need a person: exit 1.
    check_exit(&queued, 1);
    let runs = json_of(&queued);
    let ids: Vec<String> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            assert_eq!(r["state"], "needs_review", "{r}");
            assert!(r["branch"].is_null(), "nothing committed: {r}");
            r["id"].as_str().unwrap().to_owned()
        })
        .collect();
    let approved = forq_env(
        &[
            "runs",
            "approve",
            &ids[0],
            "--backend",
            "native",
            "--state",
            state_s,
            "--json",
        ],
        &[],
    )
    .await;
    check_exit(&approved, 0);
    assert_eq!(json_of(&approved)["state"], "patch_ready");
    let rejected = forq_env(
        &[
            "runs",
            "reject",
            &ids[1],
            "--reason",
            "wrong fix",
            "--state",
            state_s,
            "--json",
        ],
        &[],
    )
    .await;
    check_exit(&rejected, 0);
    let rejected = json_of(&rejected);
    assert_eq!(rejected["state"], "aborted");
    assert_eq!(rejected["reason"], "rejected at review (commit): wrong fix");
    // Neither is paused any more.
    let again = forq_env(&["runs", "reject", &ids[0], "--state", state_s], &[]).await;
    assert_ne!(again.status.code(), Some(0));
    let said = String::from_utf8_lossy(&again.stderr);
    assert!(said.contains("only a run paused for review"), "{said}");
}

/// `forq queue --text TEXT` on `repo` (host backend) with the model
/// replayed from `replay`: its output, and the state directory under `dir`.
async fn queue_replayed(dir: &Path, repo: &Path, text: &str, replay: &Path) -> (Output, PathBuf) {
    let state = dir.join("state");
    let extra = ["--provider", "replay", "--replay", replay.to_str().unwrap()];
    (
        queue_text(text, repo, "host", &state, &extra, &[]).await,
        state,
    )
}

/// One recorded reply calling `tool` with `args`.
fn tool_reply(n: usize, tool: &str, args: Value) -> String {
    use forq_agent::message::{Message, Part, Response, Role, StopReason, Usage};
    let reply = Response {
        message: Message {
            role: Role::Assistant,
            parts: vec![Part::ToolCall {
                id: format!("call_{n}"),
                name: tool.to_owned(),
                arguments: args,
                invalid_arguments: None,
            }],
        },
        usage: Usage::default(),
        stop: StopReason::ToolUse,
        model: "recorded".to_owned(),
    };
    serde_json::to_string(&reply).unwrap() + "\n"
}

#[tokio::test]
async fn the_queue_writes_a_reproduction_test_first_when_no_test_fails() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = calc_repo(
        tmp.path(),
        Some("actions:\n  fix:\n    strategy: speculative\n    brancher: mutate\n"),
    );
    // No test catches the bug: only mul is tested.
    std::fs::write(
        repo.join("tests/test_calc.py"),
        "import unittest\n\nfrom calc import mul\n\n\nclass CalcTest(unittest.TestCase):\n    def test_mul(self):\n        self.assertEqual(mul(2, 3), 6)\n",
    )
    .unwrap();
    let verdict = json!({"act": true, "confidence": 0.9, "reason": "add() subtracts",
        "suggested_action": "fix"});
    let replay = triage_replay(tmp.path(), &verdict, 1);
    let mut recording = std::fs::read_to_string(&replay).unwrap();
    let repro = "import unittest\n\nfrom calc import add\n\n\nclass ReproTest(unittest.TestCase):\n    def test_add_adds(self):\n        self.assertEqual(add(2, 3), 5)\n";
    recording.push_str(&tool_reply(
        1,
        "create_file",
        json!({"path": "tests/test_repro.py", "content": repro}),
    ));
    recording.push_str(&tool_reply(
        2,
        "submit",
        json!({"summary": "add(2, 3) must be 5"}),
    ));
    std::fs::write(&replay, recording).unwrap();
    let (out, state) = queue_replayed(
        tmp.path(),
        &repo,
        "# add() subtracts\n\nadd(2, 3) is -1.",
        &replay,
    )
    .await;
    check_exit(&out, 0);
    let run = &json_of(&out)[0];
    assert_eq!(run["state"], "patch_ready", "{run}");
    let id = run["id"].as_str().unwrap();
    let shown = show_run(id, state.to_str().unwrap()).await;
    let repro_events = events_of(&shown, "reproduction");
    assert_eq!(repro_events.len(), 1, "{shown}");
    assert_eq!(repro_events[0]["files"], json!(["tests/test_repro.py"]));
    assert_eq!(
        repro_events[0]["target"],
        json!(["tests.test_repro.ReproTest.test_add_adds"])
    );
    // The patch fixes add and ships the test that failed before it.
    let ws = state.join("runs").join(id).join("workspace");
    let log = forq_sandbox::host_command("git")
        .args(["show", "--stat", "--format=%s", "HEAD"])
        .current_dir(&ws)
        .output()
        .await
        .unwrap();
    let stat = String::from_utf8_lossy(&log.stdout);
    assert!(
        stat.contains("calc.py") && stat.contains("tests/test_repro.py"),
        "{stat}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("tests/test_repro.py")).unwrap(),
        repro
    );
}

/// One recorded reply whose text is `value` as JSON.
fn text_reply(value: &Value) -> String {
    let answer = json!({"message": {"role": "assistant", "parts": [{"type": "text", "text": value.to_string()}]},
        "usage": {"input_tokens": 10, "output_tokens": 10}, "stop": "end_turn", "model": "recorded"});
    format!("{answer}\n")
}

/// A repository whose fix changes `scale`'s signature, which `double`
/// (no test covers it) calls the old way.
fn scale_repo(dir: &Path, forq_yml: &str) -> PathBuf {
    let repo = dir.join("scale");
    std::fs::create_dir_all(repo.join("tests")).unwrap();
    std::fs::write(
        repo.join("calc.py"),
        "def scale(x):\n    return x * 2\n\n\ndef double(x):\n    return scale(x)\n\n\ndef neg(x):\n    return -x\n",
    )
    .unwrap();
    std::fs::write(repo.join("tests/__init__.py"), "").unwrap();
    std::fs::write(
        repo.join("tests/test_calc.py"),
        "import unittest\n\nfrom calc import neg, scale\n\n\nclass CalcTest(unittest.TestCase):\n    def test_scale_by(self):\n        self.assertEqual(scale(3, 4), 12)\n\n    def test_neg(self):\n        self.assertEqual(neg(2), -2)\n",
    )
    .unwrap();
    std::fs::write(repo.join("forq.yml"), forq_yml).unwrap();
    repo
}

/// The model's part up to the ripple: triage, the llm brancher's
/// candidate, the contract check's C.
fn scale_fix_replies() -> String {
    let mut s = text_reply(&json!({"act": true, "confidence": 0.9,
        "reason": "scale has no factor", "suggested_action": "fix"}));
    s.push_str(&text_reply(
        &json!({"candidates": [{"hypothesis": "scale takes its factor",
        "edits": [{"path": "calc.py", "old": "def scale(x):\n    return x * 2",
                   "new": "def scale(x, factor):\n    return x * factor"}]}]}),
    ));
    s.push_str(&text_reply(
        &json!({"class": "C", "reason": "scale now needs a factor"}),
    ));
    s
}

/// The agent's ripple: `double` passes the factor, then submits.
fn scale_adapt_replies() -> String {
    tool_reply(
        1,
        "edit",
        json!({"path": "calc.py", "old": "    return scale(x)", "new": "    return scale(x, 2)"}),
    ) + &tool_reply(2, "submit", json!({"summary": "double passes 2"}))
}

#[tokio::test]
async fn with_a_model_the_ripple_adapts_the_uncovered_caller_and_commits_it() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = scale_repo(
        tmp.path(),
        "actions:\n  fix:\n    strategy: speculative\n    brancher: llm\n",
    );
    let replay = tmp.path().join("model.jsonl");
    std::fs::write(&replay, scale_fix_replies() + &scale_adapt_replies()).unwrap();
    let (out, state) = queue_replayed(
        tmp.path(),
        &repo,
        "# scale() should take the factor",
        &replay,
    )
    .await;
    check_exit(&out, 0);
    let run = &json_of(&out)[0];
    assert_eq!(run["state"], "patch_ready", "{run}");
    assert!(
        run["reason"].as_str().unwrap().contains("1 caller adapted"),
        "{run}"
    );
    let id = run["id"].as_str().unwrap();
    let shown = show_run(id, state.to_str().unwrap()).await;
    let adapted = events_of(&shown, "ripple_adapt");
    assert_eq!(adapted.len(), 1, "{shown}");
    assert_eq!(adapted[0]["adapted"], true);
    assert_eq!(
        adapted[0]["callers"][0]["caller"],
        "calc.py#double:function"
    );
    assert_eq!(adapted[0]["left"], json!([]));
    // Two commits on the branch: the fix, then the callers.
    let ws = state.join("runs").join(id).join("workspace");
    let log = forq_sandbox::host_command("git")
        .args(["log", "--format=%s", "-2"])
        .current_dir(&ws)
        .output()
        .await
        .unwrap();
    let subjects = String::from_utf8_lossy(&log.stdout);
    assert!(
        subjects.starts_with("Adapt the callers of #text's incompatible change\nFix #text:"),
        "{subjects}"
    );
    assert!(std::fs::read_to_string(ws.join("calc.py"))
        .unwrap()
        .contains("def double(x):\n    return scale(x, 2)\n"));
}

#[tokio::test]
async fn review_ripple_pauses_before_the_agent_adapts_and_approve_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = scale_repo(
        tmp.path(),
        "actions:\n  fix:\n    strategy: speculative\n    brancher: llm\nreview: [ripple]\n",
    );
    let replay = tmp.path().join("model.jsonl");
    std::fs::write(&replay, scale_fix_replies()).unwrap();
    let state = tmp.path().join("state");
    let state_s = state.to_str().unwrap();
    let extra = ["--provider", "replay", "--replay", replay.to_str().unwrap()];
    let out = queue_text(
        "# scale() should take the factor",
        &repo,
        "host",
        &state,
        &extra,
        &[],
    )
    .await;
    check_exit(&out, 1);
    let run = &json_of(&out)[0];
    assert_eq!(run["state"], "needs_review", "{run}");
    let reason = run["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("waiting for review before the ripple: 1 definition changed (A 0, B 0, C 1, unclassified 0); 1 caller of incompatible changes to look at"),
        "{reason}"
    );
    let id = run["id"].as_str().unwrap();
    // Approved, the agent adapts the caller (its replies only: nothing
    // before the pause is asked again).
    let adapt = tmp.path().join("adapt.jsonl");
    std::fs::write(&adapt, scale_adapt_replies()).unwrap();
    let out = forq_env(
        &[
            "runs",
            "approve",
            id,
            "--state",
            state_s,
            "--backend",
            "host",
            "--provider",
            "replay",
            "--replay",
            adapt.to_str().unwrap(),
            "--json",
        ],
        &[],
    )
    .await;
    check_exit(&out, 0);
    let shown = show_run(id, state_s).await;
    assert_eq!(shown["run"]["state"], "patch_ready", "{shown}");
    assert_eq!(events_of(&shown, "ripple_adapt")[0]["adapted"], true);
}

#[tokio::test]
async fn a_ripple_that_edits_a_test_is_not_committed_and_the_findings_stay() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = scale_repo(
        tmp.path(),
        "actions:\n  fix:\n    strategy: speculative\n    brancher: llm\n",
    );
    let cheat = tool_reply(
        1,
        "edit",
        json!({"path": "tests/test_calc.py", "old": "neg(2), -2", "new": "neg(2), -2.0"}),
    ) + &tool_reply(2, "submit", json!({"summary": "done"}));
    let replay = tmp.path().join("model.jsonl");
    std::fs::write(&replay, scale_fix_replies() + &cheat).unwrap();
    let (out, state) = queue_replayed(
        tmp.path(),
        &repo,
        "# scale() should take the factor",
        &replay,
    )
    .await;
    check_exit(&out, 1);
    let run = &json_of(&out)[0];
    assert_eq!(run["state"], "completed_with_findings", "{run}");
    let shown = show_run(run["id"].as_str().unwrap(), state.to_str().unwrap()).await;
    let adapt = events_of(&shown, "ripple_adapt");
    assert_eq!(adapt[0]["adapted"], false);
    assert_eq!(
        adapt[0]["why"],
        "the agent changed the test file tests/test_calc.py; a ripple adapts callers, never tests"
    );
}

#[tokio::test]
async fn modify_writes_tests_for_the_new_behaviour_then_changes_the_definition_and_classifies_it() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("scale");
    std::fs::create_dir_all(repo.join("tests")).unwrap();
    std::fs::write(
        repo.join("calc.py"),
        "def scale(x):\n    return x * 2\n\n\ndef double(x):\n    return scale(x)\n",
    )
    .unwrap();
    std::fs::write(repo.join("tests/__init__.py"), "").unwrap();
    std::fs::write(
        repo.join("tests/test_calc.py"),
        "import unittest\n\nfrom calc import double\n\n\nclass CalcTest(unittest.TestCase):\n    def test_double(self):\n        self.assertEqual(double(3), 6)\n",
    )
    .unwrap();
    let test = "import unittest\n\nfrom calc import scale\n\n\nclass FactorTest(unittest.TestCase):\n    def test_factor(self):\n        self.assertEqual(scale(3, 4), 12)\n";
    let mut replies = tool_reply(
        1,
        "create_file",
        json!({"path": "tests/test_factor.py", "content": test}),
    );
    replies.push_str(&tool_reply(
        2,
        "submit",
        json!({"summary": "scale(3, 4) is 12"}),
    ));
    replies.push_str(&tool_reply(
        1,
        "edit",
        json!({"path": "calc.py", "old": "def scale(x):\n    return x * 2",
               "new": "def scale(x, factor=2):\n    return x * factor"}),
    ));
    replies.push_str(&tool_reply(
        2,
        "submit",
        json!({"summary": "a factor, 2 by default"}),
    ));
    replies.push_str(&text_reply(
        &json!({"class": "B", "reason": "an optional parameter"}),
    ));
    let replay = tmp.path().join("model.jsonl");
    std::fs::write(&replay, replies).unwrap();
    let out_dir = tmp.path().join("out");
    let out = forq_env(
        &[
            "modify",
            "scale",
            "--change",
            "scale multiplies by the factor it is given, 2 when none is",
            "--repo",
            repo.to_str().unwrap(),
            "--backend",
            "host",
            "--provider",
            "replay",
            "--replay",
            replay.to_str().unwrap(),
            "--out",
            out_dir.to_str().unwrap(),
            "--json",
        ],
        &[],
    )
    .await;
    let tree = std::fs::read_to_string(out_dir.join("tree.json")).unwrap_or_default();
    assert_eq!(out.status.code(), Some(0), "{tree}");
    let report = json_of(&out);
    assert_eq!(report["solved"], true, "{report}");
    assert_eq!(report["strategy"], "single");
    assert_eq!(report["brancher"], "agent");
    assert_eq!(report["reproduction"], json!(["tests/test_factor.py"]));
    assert_eq!(
        report["contract"]["classification"]["class"], "B",
        "{report}"
    );
    assert_eq!(report["contract"]["callers"], json!([]));
    let patch = std::fs::read_to_string(out_dir.join("fix.patch")).unwrap();
    assert!(
        patch.contains("+def scale(x, factor=2):\n")
            && patch.contains("+        self.assertEqual(scale(3, 4), 12)\n"),
        "{patch}"
    );
    assert!(out_dir.join("contract.json").is_file());
    // The user's tree is left alone.
    assert!(!repo.join("tests/test_factor.py").exists());
}

#[tokio::test]
async fn the_operators_settings_run_claude_code_as_the_queues_agent() {
    if !native_or_skip("the_operators_settings_run_claude_code_as_the_queues_agent") {
        return;
    }
    if !crate::installed_or_skip("claude") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let repo = calc_repo(tmp.path(), None);
    let server = Server::start(vec![
        Reply::anthropic_stream(
            1,
            &[json!({"type": "tool_use", "id": "t1", "name": "Read",
                "input": {"file_path": "/workspace/calc.py"}})],
            "tool_use",
        ),
        Reply::anthropic_stream(
            2,
            &[json!({"type": "tool_use", "id": "t2", "name": "Edit",
                "input": {"file_path": "/workspace/calc.py", "old_string": "return a - b", "new_string": "return a + b"}})],
            "tool_use",
        ),
        Reply::anthropic_stream(3, &[json!({"type": "text", "text": "add adds"})], "end_turn"),
        // The contract check, by forq's own provider.
        Reply::ok(json!({"id": "m4", "type": "message", "role": "assistant", "model": "m",
            "content": [{"type": "tool_use", "id": "c", "name": "contract",
                "input": {"class": "A", "reason": "the same contract, fixed"}}],
            "stop_reason": "tool_use", "usage": {"input_tokens": 5, "output_tokens": 5}})),
    ])
    .await;
    let settings = tmp.path().join("operator.yml");
    std::fs::write(
        &settings,
        "triage:\n  enabled: false\nactions:\n  fix:\n    strategy: single\n    brancher: agent\n    agent:\n      program: claude_code\n",
    )
    .unwrap();
    // The same setting in the repository's own forq.yml is ignored.
    std::fs::write(
        repo.join("forq.yml"),
        "actions:\n  fix:\n    agent:\n      program: claude_code\n",
    )
    .unwrap();
    let state = tmp.path().join("state");
    let env = [
        ("ANTHROPIC_API_KEY", "sk-ant-queue-test"),
        ("ANTHROPIC_BASE_URL", server.url.as_str()),
    ];
    let extra = ["--config", settings.to_str().unwrap()];
    let out = queue_text("# add() subtracts", &repo, "native", &state, &extra, &env).await;
    check_exit(&out, 0);
    let run = &json_of(&out)[0];
    assert_eq!(run["state"], "patch_ready", "{run}");
    let shown = show_run(run["id"].as_str().unwrap(), state.to_str().unwrap()).await;
    let tools: Vec<Value> = events_of(&shown, "agent")
        .into_iter()
        .filter_map(|e| e.get("tool").cloned())
        .collect();
    assert_eq!(tools, [json!("Read"), json!("Edit")], "{shown}");
    assert_eq!(server.received().len(), 4);

    // From the repository's forq.yml alone, the setting is dropped with a
    // warning: forq's own agent runs (and needs the model's replies).
    let state2 = tmp.path().join("state2");
    let out = queue_text("# add() subtracts", &repo, "native", &state2, &[], &[]).await;
    let run = &json_of(&out)[0];
    let shown = show_run(run["id"].as_str().unwrap(), state2.to_str().unwrap()).await;
    let warnings = events_of(&shown, "warning");
    assert!(
        warnings
            .iter()
            .any(|w| w["key"] == "actions.fix.agent.program"),
        "{shown}"
    );
}
