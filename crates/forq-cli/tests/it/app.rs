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

mod agents;
mod engines;
mod fleet;
mod github;
mod resume;
mod ripple;

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
        stderr.contains("search{brancher=templates}: search done")
            && stderr.contains("solved=true"),
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
        check_committed_run(run, &state, &issues).await;
    }
    let listed = forq_env(&["runs", "--state", state_s], &[]).await;
    check_exit(&listed, 0);
    let table = String::from_utf8_lossy(&listed.stdout);
    assert!(table.starts_with("RUN "), "{table}");
    assert_eq!(table.matches("patch_ready").count(), 3, "{table}");

    let py = runs
        .iter()
        .find(|r| r["issue"]["id"] == "py-clamp")
        .unwrap();
    files_compose_with_the_shell(py["id"].as_str().unwrap(), state_s).await;
    let bare = tmp.path().join("remote.git");
    push_never_forces(tmp.path(), py, &bare, &state).await;
    let js = runs
        .iter()
        .find(|r| r["issue"]["id"] == "js-min-of")
        .unwrap();
    a_pull_request_on_a_loopback_github(js, &bare, state_s).await;
}

/// A run of the queue: patch ready on its branch, one commit over the seed
/// naming issue and run, nothing of forq's own committed, the issue
/// directory untouched, every phase in order.
async fn check_committed_run(run: &Value, state: &Path, issues: &Path) {
    let state_s = state.to_str().unwrap();
    let id = run["id"].as_str().unwrap();
    let name = run["issue"]["id"].as_str().unwrap();
    assert_eq!(run["state"], "patch_ready", "{run}");
    let branch = run["branch"].as_str().unwrap();
    assert_eq!(branch, format!("forq/fix/{id}"));
    let lines = run["patch_lines"].as_u64().unwrap();
    assert!((1..=4).contains(&lines), "{run}");
    // Green is plausible, not proven: the reason says what else vouches
    // (the examples' functions have no docstring examples).
    let reason = run["reason"].as_str().unwrap();
    assert!(
        reason.starts_with(&format!("committed on {branch}; plausible: ")),
        "{run}"
    );
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

/// `forq files` composes with xargs and $(...): bare paths, one a line,
/// because stdout is a pipe.
async fn files_compose_with_the_shell(py_id: &str, state_s: &str) {
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
}

/// `forq push ID --remote BARE --state STATE` and `extra`.
fn push_args(id: &str, bare: &Path, state_s: &str, extra: Vec<String>) -> Vec<String> {
    let mut args = vec![
        "push".to_owned(),
        id.to_owned(),
        "--remote".to_owned(),
        bare.display().to_string(),
        "--state".to_owned(),
        state_s.to_owned(),
    ];
    args.extend(extra);
    args
}

/// `forq push` to a bare repository: the branch arrives; again, it is the
/// run's own; once someone else moved it, nothing is forced.
async fn push_never_forces(tmp: &Path, py: &Value, bare: &Path, state: &Path) {
    let state_s = state.to_str().unwrap();
    let py_id = py["id"].as_str().unwrap();
    git(tmp, &["init", "-q", "--bare", bare.to_str().unwrap()]).await;
    let args = push_args(py_id, bare, state_s, Vec::new());
    let out = forq_env(&args.iter().map(String::as_str).collect::<Vec<_>>(), &[]).await;
    check_exit(&out, 0);
    let branch = py["branch"].as_str().unwrap();
    let ws = state.join("runs").join(py_id).join("workspace");
    let local = git(&ws, &["rev-parse", branch]).await;
    assert_eq!(git(bare, &["rev-parse", branch]).await, local);
    let out = forq_env(&args.iter().map(String::as_str).collect::<Vec<_>>(), &[]).await;
    check_exit(&out, 0);
    // Someone else pushes to the branch.
    let other = tmp.join("other");
    git(
        tmp,
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
        git(bare, &["rev-parse", branch]).await,
        theirs,
        "their work stands"
    );
}

/// A pull request, on a loopback GitHub, for another run.
async fn a_pull_request_on_a_loopback_github(js: &Value, bare: &Path, state_s: &str) {
    let js_id = js["id"].as_str().unwrap();
    let server = Server::start(vec![Reply::status(
        201,
        json!({"number": 7, "html_url": "https://github.com/o/r/pull/7"}),
    )])
    .await;
    let args = push_args(
        js_id,
        bare,
        state_s,
        vec![
            "--pr".into(),
            "--github".into(),
            "o/r".into(),
            "--json".into(),
        ],
    );
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

/// One recorded reply whose text is `value` as JSON.
fn text_reply(value: &Value) -> String {
    let answer = json!({"message": {"role": "assistant", "parts": [{"type": "text", "text": value.to_string()}]},
        "usage": {"input_tokens": 10, "output_tokens": 10}, "stop": "end_turn", "model": "recorded"});
    format!("{answer}\n")
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
