//! Pull requests as work items, end to end on loopback: a pull request
//! from a fork whose check fails is fixed from its head; the fix goes onto
//! its branch when its author lets maintainers push there, else it is
//! proposed as a pull request against that branch; the pull request hears
//! of it.

use super::hub::{app_keys, deliver, Hub};
use super::*;
use forq_app::git::git;
use forq_app::github::{AppKey, Github};

/// A unittest job log as GitHub Actions keeps it: each line stamped.
const UNITTEST_LOG: &str = "2026-12-06T10:00:00.1000000Z ##[group]Run python -m unittest -v\n\
2026-12-06T10:00:01.2000000Z test_add (tests.test_calc.CalcTest.test_add) ... FAIL\n\
2026-12-06T10:00:01.2100000Z test_mul (tests.test_calc.CalcTest.test_mul) ... ok\n\
2026-12-06T10:00:01.3000000Z \n\
2026-12-06T10:00:01.3100000Z ======================================================================\n\
2026-12-06T10:00:01.3200000Z FAIL: test_add (tests.test_calc.CalcTest.test_add)\n\
2026-12-06T10:00:01.3300000Z ----------------------------------------------------------------------\n\
2026-12-06T10:00:01.3400000Z AssertionError: -1 != 5\n\
2026-12-06T10:00:01.3500000Z \n\
2026-12-06T10:00:01.3600000Z Ran 2 tests in 0.001s\n\
2026-12-06T10:00:01.3700000Z \n\
2026-12-06T10:00:01.3800000Z FAILED (failures=1)\n";

/// A pytest job log as GitHub Actions keeps it: each line stamped.
const LOG: &str = "2026-12-06T10:00:00.1000000Z ##[group]Run python -m pytest\n\
2026-12-06T10:00:01.2000000Z ============================= test session starts ==============================\n\
2026-12-06T10:00:01.3000000Z tests/test_calc.py F.                                                      [100%]\n\
2026-12-06T10:00:01.4000000Z =========================== short test summary info ============================\n\
2026-12-06T10:00:01.5000000Z FAILED tests/test_calc.py::test_add - assert -1 == 5\n\
2026-12-06T10:00:01.6000000Z ========================= 1 failed, 1 passed in 0.03s ==========================\n\
2026-12-06T10:00:01.7000000Z ##[error]Process completed with exit code 1.\n";

fn pull(number: u64, head_ref: &str, sha: &str, fork: &str, edits: bool) -> Value {
    json!({"number": number, "title": format!("feature {number}"), "body": "adds things",
        "html_url": format!("https://github.com/o/r/pull/{number}"), "state": "open",
        "user": {"login": "alice"}, "author_association": "CONTRIBUTOR",
        "head": {"ref": head_ref, "sha": sha, "repo": {"full_name": "f/r", "clone_url": fork}},
        "base": {"ref": "main", "sha": sha, "repo": {"full_name": "o/r", "clone_url": "unused"}},
        "maintainer_can_modify": edits, "labels": []})
}

/// The owner comments `/forq fix` on pull request `number`: the run
/// queued.
async fn asked_to_fix(hook: &str, repository: &Value, number: u64) -> String {
    let (status, reply) = deliver(
        hook,
        "issue_comment",
        json!({"action": "created", "repository": repository, "installation": {"id": 7},
            "issue": {"number": number, "author_association": "CONTRIBUTOR", "pull_request": {"url": "x"}},
            "comment": {"id": number, "body": "/forq fix", "author_association": "OWNER"}}),
    )
    .await;
    assert_eq!(status, 202, "{reply}");
    reply["runs"][0]["id"].as_str().unwrap().to_owned()
}

/// A person presses Push on run `id`: the server's status and answer.
async fn push_answer(url: &str, id: &str) -> (u16, String) {
    let reply = reqwest::Client::new()
        .post(format!("{url}/api/runs/{id}/push"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    (reply.status().as_u16(), reply.text().await.unwrap())
}

/// A person presses Push on run `id`: what the server did.
async fn press_push(url: &str, id: &str) -> Value {
    let (status, answer) = push_answer(url, id).await;
    assert_eq!(status, 200, "{answer}");
    serde_json::from_str(&answer).unwrap()
}

/// Waits for run `id` to end.
async fn ended(store: &Store, id: &str) -> forq_app::store::Run {
    for _ in 0..1200 {
        let run = store.get(id).unwrap();
        if run.state.is_terminal() {
            return run;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("run {id} never ended");
}

fn notes(store: &Store, id: &str) -> Vec<String> {
    store
        .events(id, 0)
        .unwrap()
        .iter()
        .filter_map(|e| e.data["text"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_request_from_a_fork_with_a_failing_check_is_fixed_from_its_head() {
    let dir = tempfile::tempdir().unwrap();
    // The fork's two branches (the same bug, two commits), and the base
    // repository with GitHub's refs/pull/N/head of each.
    let work = calc(dir.path());
    git(&work, &["init", "-q", "-b", "feature"]).await.unwrap();
    git(&work, &["add", "-A"]).await.unwrap();
    git(&work, &["commit", "-q", "-m", "feature"])
        .await
        .unwrap();
    let a = git(&work, &["rev-parse", "HEAD"]).await.unwrap();
    std::fs::write(work.join("NOTES.md"), "notes\n").unwrap();
    git(&work, &["add", "-A"]).await.unwrap();
    git(&work, &["commit", "-q", "-m", "notes"]).await.unwrap();
    let b = git(&work, &["rev-parse", "HEAD"]).await.unwrap();
    std::fs::write(work.join("NOTES.md"), "more notes\n").unwrap();
    // The head's own forq.yml, which a pull request's run does not follow
    // (the base branch's governs; the head may only name its tests).
    std::fs::write(
        work.join("forq.yml"),
        "actions:\n  fix:\n    branch: \"from-the-head/{run_id}\"\n",
    )
    .unwrap();
    git(&work, &["add", "-A"]).await.unwrap();
    git(&work, &["commit", "-qam", "more"]).await.unwrap();
    let c = git(&work, &["rev-parse", "HEAD"]).await.unwrap();
    let (base, fork) = (dir.path().join("o-r.git"), dir.path().join("f-r.git"));
    for bare in [&base, &fork] {
        git(
            dir.path(),
            &["init", "-q", "--bare", bare.to_str().unwrap()],
        )
        .await
        .unwrap();
    }
    let push = |to: &std::path::Path, spec: String| {
        let (work, to) = (work.clone(), to.to_owned());
        async move {
            git(&work, &["push", "-q", to.to_str().unwrap(), &spec])
                .await
                .unwrap();
        }
    };
    push(&base, format!("{a}:refs/heads/main")).await;
    push(&base, format!("{a}:refs/pull/9/head")).await;
    push(&base, format!("{b}:refs/pull/10/head")).await;
    push(&base, format!("{c}:refs/pull/11/head")).await;
    push(&fork, format!("{c}:refs/heads/third")).await;
    push(&fork, format!("{a}:refs/heads/feature")).await;
    push(&fork, format!("{b}:refs/heads/other")).await;
    let fork_url = format!("file://{}", fork.display());
    let base_url = format!("file://{}", base.display());

    let keys = app_keys().await;
    let hub = Hub::start(42, &keys.public_pem, &[(7, &["o/r", "f/r"])]).await;
    {
        let mut h = hub.lock();
        h.pulls.insert(
            ("o/r".to_owned(), 9),
            pull(9, "feature", &a, &fork_url, true),
        );
        h.pulls.insert(
            ("o/r".to_owned(), 10),
            pull(10, "other", &b, &fork_url, false),
        );
        h.pulls.insert(
            ("o/r".to_owned(), 11),
            pull(11, "third", &c, &fork_url, false),
        );
        for (n, sha) in [(9, &a), (10, &b), (11, &c)] {
            h.issues.insert(
                ("o/r".to_owned(), n),
                json!({"number": n, "title": format!("feature {n}"), "body": "",
                    "html_url": format!("https://github.com/o/r/pull/{n}"), "state": "open",
                    "labels": [], "user": {"login": "alice"}, "pull_request": {}}),
            );
            h.check_runs.insert(
                ("o/r".to_owned(), sha.clone()),
                vec![
                    json!({"id": 70 + n, "name": "tests (3.11)", "status": "completed",
                    "conclusion": "failure", "app": {"slug": "github-actions"},
                    "output": {"title": "1 failed", "summary": ""},
                    "html_url": format!("https://github.com/o/r/runs/{}", 70 + n)}),
                ],
            );
            h.statuses.insert(
                ("o/r".to_owned(), sha.clone()),
                vec![json!({"context": "ci/lint", "state": "success"}),
                    json!({"context": "ci/coverage", "state": "failure", "description": "coverage fell"})],
            );
            // #9's job ran pytest, whose ids are not this machine's
            // runner's; #10's ran unittest, as this machine does.
            let log = if n == 9 { LOG } else { UNITTEST_LOG };
            h.logs.insert(("o/r".to_owned(), 70 + n), log.to_owned());
        }
        h.files.insert(
            ("o/r".to_owned(), "forq.yml".to_owned()),
            "pull_requests:\n  on: [checks_failed]\n".to_owned(),
        );
    }
    let Some((store, pipeline)) = pipeline_in(dir.path()).await else {
        return;
    };
    let github = Github::app(&hub.url, AppKey::from_file(42, &keys.file).unwrap());
    let control = Control::new(store.clone())
        .actions(forq_server::Actions::new(pipeline.github(github.clone())))
        .github(github)
        .webhook_secret("hook-secret")
        .webhook_authors(["OWNER", "MEMBER", "COLLABORATOR", "CONTRIBUTOR"]);
    let (addr, task) = spawn(control, loopback()).await;
    let hook = format!("http://{addr}/webhooks/github");
    let url = format!("http://{addr}");
    let repository = json!({"full_name": "o/r", "clone_url": base_url, "default_branch": "main"});

    // 1. The check suite on #9's head failed. GitHub names no pull request
    //    in a suite from a fork: forq finds it by its head.
    let (status, reply) = deliver(
        &hook,
        "check_suite",
        json!({"action": "completed", "repository": repository, "installation": {"id": 7},
            "check_suite": {"conclusion": "failure", "head_sha": a, "pull_requests": []}}),
    )
    .await;
    assert_eq!(status, 202, "{reply}");
    let id = reply["runs"][0]["id"].as_str().unwrap().to_owned();
    let queued = store.get(&id).unwrap();
    let record = queued.issue.pull.clone().unwrap();
    assert_eq!(
        (
            record.head_sha.as_str(),
            record.head_ref.as_str(),
            record.targets_from.as_str()
        ),
        (a.as_str(), "feature", "checks")
    );
    assert_eq!(queued.issue.targets, ["tests/test_calc.py::test_add"]);
    assert_eq!(
        record.failed_checks,
        [
            "tests (3.11) (failure): 1 failed",
            "ci/coverage (failure): coverage fell"
        ]
    );
    let run = ended(&store, &id).await;
    assert_eq!(
        run.state,
        State::PatchReady,
        "{}: {:?}",
        run.reason,
        notes(&store, &id)
    );
    let said = notes(&store, &id);
    assert!(
        said.iter()
            .any(|n| n.starts_with("pull request #9: target ")),
        "the run says where its target came from: {said:?}"
    );
    let seeded = store.checkpointed(&id, "seeded").unwrap().unwrap();
    assert_eq!(
        (&seeded["head"], &seeded["base"]),
        (&json!(a), &json!("feature"))
    );
    // Attack: a worker rewrites the run's record of the pull request (on
    // a shared store, any worker can) to aim the push at the author's
    // other branch, leased at that branch's head. The push asks GitHub
    // where the head is and refuses: before, the fix went over `other`.
    let db = dir.path().join("state/forq.db");
    let rewrite = |head_ref: &str, sha: &str| {
        let conn = rusqlite::Connection::open(&db).unwrap();
        let issue: String = conn
            .query_row("SELECT issue FROM runs WHERE id = ?1", [&id], |r| r.get(0))
            .unwrap();
        let mut issue: Value = serde_json::from_str(&issue).unwrap();
        issue["pull"]["head_ref"] = head_ref.into();
        issue["pull"]["head_sha"] = sha.into();
        conn.execute(
            "UPDATE runs SET issue = ?1 WHERE id = ?2",
            [&issue.to_string(), &id],
        )
        .unwrap();
    };
    rewrite("other", &b);
    let (status, said) = push_answer(&url, &id).await;
    assert!(
        status >= 400 && said.contains("record says f/r:other"),
        "{status} {said}"
    );
    for (branch, at) in [("other", &b), ("feature", &a)] {
        let now = git(
            &work,
            &[
                "ls-remote",
                fork.to_str().unwrap(),
                &format!("refs/heads/{branch}"),
            ],
        )
        .await
        .unwrap();
        assert!(now.starts_with(at.as_str()), "{branch} moved: {now}");
    }
    rewrite("feature", &a);
    // A person pushes: onto the pull request's own branch, over its head.
    let pushed = press_push(&url, &id).await;
    assert_eq!(
        (&pushed["remote"], &pushed["branch"]),
        (&json!("pr-head"), &json!("feature")),
        "{pushed}"
    );
    let on_fork = git(
        &work,
        &["ls-remote", fork.to_str().unwrap(), "refs/heads/feature"],
    )
    .await
    .unwrap();
    assert!(
        on_fork.starts_with(pushed["commit"].as_str().unwrap()),
        "{on_fork}"
    );
    let parent = git(
        &base,
        &[
            "--git-dir",
            fork.to_str().unwrap(),
            "rev-parse",
            &format!("{}^", pushed["commit"].as_str().unwrap()),
        ],
    )
    .await
    .unwrap();
    assert_eq!(parent, a, "the fix sits on the pull request's head");
    let told = hub
        .lock()
        .comments
        .get(&("o/r".to_owned(), 9))
        .cloned()
        .unwrap();
    assert_eq!(told.len(), 1);
    let text = told[0]["body"].as_str().unwrap();
    assert!(
        text.contains("onto this pull request's branch `feature`"),
        "{text}"
    );
    assert_eq!(store.get(&id).unwrap().state, State::PrOpened);

    // 2. #10 does not let maintainers push: asked for by a comment, its
    //    fix goes to it as a patch in a comment. Attack: before, the run's
    //    branch — the fork's commits plus the fix — was pushed into the
    //    base repository with its installation token, where `on: push`
    //    workflows run a fork's code with the repository's secrets.
    let id = asked_to_fix(&hook, &repository, 10).await;
    let run = ended(&store, &id).await;
    assert_eq!(
        run.state,
        State::PatchReady,
        "{}: {:?}",
        run.reason,
        notes(&store, &id)
    );
    let pushed = press_push(&url, &id).await;
    let branch = run.branch.clone().unwrap();
    assert_eq!(pushed["suggested"], json!(true), "{pushed}");
    assert_eq!(hub.lock().opened.len(), 0, "no pull request anywhere");
    for (repo, name) in [(&base, "the base repository"), (&fork, "the fork")] {
        let refs = git(&work, &["ls-remote", repo.to_str().unwrap()])
            .await
            .unwrap();
        assert!(
            !refs.contains(branch.as_str()),
            "the run's branch reached {name}: {refs}"
        );
    }
    let other = git(
        &work,
        &["ls-remote", fork.to_str().unwrap(), "refs/heads/other"],
    )
    .await
    .unwrap();
    assert!(
        other.starts_with(&b),
        "the fork's branch is untouched: {other}"
    );
    let told = hub
        .lock()
        .comments
        .get(&("o/r".to_owned(), 10))
        .cloned()
        .unwrap();
    assert_eq!(told.len(), 1);
    let text = told[0]["body"].as_str().unwrap();
    let patch = String::from_utf8(store.artifact(&id, "fix.patch").unwrap().unwrap()).unwrap();
    assert!(
        text.contains("on `other`, save it as `fix.patch` and run `git apply fix.patch`")
            && text.contains(&format!("```diff\n{patch}")),
        "{text}"
    );
    assert_eq!(store.get(&id).unwrap().state, State::PrOpened);
    // 3. Nor does #11, on a fork the App is not installed on: the same.
    hub.lock().installations.insert(7, vec!["o/r".to_owned()]);
    let id = asked_to_fix(&hook, &repository, 11).await;
    let run = ended(&store, &id).await;
    assert_eq!(
        run.state,
        State::PatchReady,
        "{}: {:?}",
        run.reason,
        notes(&store, &id)
    );
    assert!(
        run.branch
            .as_deref()
            .is_some_and(|b| b.starts_with("forq/")),
        "the head's forq.yml named the branch: {:?}",
        run.branch
    );
    let pushed = press_push(&url, &id).await;
    assert_eq!(pushed["suggested"], json!(true), "{pushed}");
    assert_eq!(hub.lock().opened.len(), 0);
    let told = hub
        .lock()
        .comments
        .get(&("o/r".to_owned(), 11))
        .cloned()
        .unwrap();
    let text = told[0]["body"].as_str().unwrap();
    assert!(text.contains("on `third`, save it"), "{text}");
    // 4. What starts nothing, and says why: an event forq.yml does not
    //    name, another label, an untrusted author, checks that passed.
    let opened = |association: &str, action: &str, label: &str| {
        json!({"action": action, "repository": repository, "installation": {"id": 7},
            "pull_request": {"number": 9, "author_association": association},
            "label": {"name": label}})
    };
    let done = |reply: &Value| reply["done"].as_str().unwrap_or_default().to_owned();
    let (_, reply) = deliver(&hook, "pull_request", opened("CONTRIBUTOR", "opened", "")).await;
    assert_eq!(
        done(&reply),
        "nothing: o/r's forq.yml does not name opened in pull_requests.on"
    );
    hub.lock().files.insert(
        ("o/r".to_owned(), "forq.yml".to_owned()),
        "pull_requests:\n  on: [opened, labeled, checks_failed]\n  label: forq-fix\n".to_owned(),
    );
    let (_, reply) = deliver(&hook, "pull_request", opened("NONE", "labeled", "wip")).await;
    assert_eq!(done(&reply), "nothing: the label is not forq-fix");
    let (_, reply) = deliver(&hook, "pull_request", opened("NONE", "opened", "")).await;
    assert!(
        done(&reply).starts_with("nothing: pull requests are taken from owner"),
        "{reply}"
    );
    let (_, reply) = deliver(
        &hook,
        "check_run",
        json!({"action": "completed", "repository": repository, "installation": {"id": 7},
            "check_run": {"conclusion": "success", "head_sha": a, "pull_requests": [{"number": 9}]}}),
    )
    .await;
    assert_eq!(done(&reply), "nothing: the checks concluded success");
    assert_eq!(store.all().unwrap().len(), 3, "no run started");
    task.abort();
}
