//! A GitHub backlog: its issues listed page by page, its forq.yml read before triage.

use super::*;

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

#[tokio::test]
async fn a_runs_issue_is_commented_on_labelled_and_closed_from_the_command_line() {
    let server = Server::start(vec![Reply::ok(json!({"number": 7, "title": "bug 7",
        "body": "it breaks", "html_url": "https://github.com/o/r/issues/7", "state": "open",
        "labels": [], "user": {"login": "alice"}}))])
    .await;
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let env = [
        ("GITHUB_API_URL", server.url.as_str()),
        ("GITHUB_TOKEN", "ghp_x"),
    ];
    let out = forq_env(
        &[
            "queue",
            "--repo",
            "https://github.com/o/r/issues/7",
            "--enqueue",
            "--state",
            state.to_str().unwrap(),
            "--json",
        ],
        &env,
    )
    .await;
    check_exit(&out, 0);
    let id = json_of(&out)[0]["id"].as_str().unwrap().to_owned();
    let github = Server::start(vec![
        Reply::ok(json!({"html_url": "https://github.com/o/r/issues/7#issuecomment-1"})),
        Reply::ok(json!([{"name": "needs-repro"}])),
        Reply::ok(json!({"html_url": "https://github.com/o/r/issues/7#issuecomment-2"})),
        Reply::ok(json!({"number": 7, "state": "closed"})),
    ])
    .await;
    let env = [
        ("GITHUB_API_URL", github.url.as_str()),
        ("GITHUB_TOKEN", "ghp_x"),
    ];
    let state = state.to_str().unwrap();
    let out = forq_env(&["runs", "--state", state, "comment", &id, "Thanks!"], &env).await;
    check_exit(&out, 0);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "commented on o/r#7: https://github.com/o/r/issues/7#issuecomment-1"
    );
    let out = forq_env(
        &["runs", "--state", state, "label", &id, "needs-repro"],
        &env,
    )
    .await;
    check_exit(&out, 0);
    let out = forq_env(
        &[
            "runs",
            "--state",
            state,
            "close",
            &id,
            "--comment",
            "Works as documented.",
        ],
        &env,
    )
    .await;
    check_exit(&out, 0);
    let got = github.received();
    let calls: Vec<(&str, &str)> = got
        .iter()
        .map(|r| (r.method.as_str(), r.path.as_str()))
        .collect();
    assert_eq!(
        calls,
        [
            ("POST", "/repos/o/r/issues/7/comments"),
            ("POST", "/repos/o/r/issues/7/labels"),
            ("POST", "/repos/o/r/issues/7/comments"),
            ("PATCH", "/repos/o/r/issues/7"),
        ]
    );
    assert_eq!(got[0].body["body"], "Thanks!");
    assert_eq!(got[1].body["labels"], json!(["needs-repro"]));
    assert_eq!(got[3].body["state"], "closed");
    assert_eq!(got[0].header("authorization"), Some("Bearer ghp_x"));
    // A run whose issue is no GitHub issue has nothing to comment on.
    let out = forq_env(
        &[
            "queue",
            "--text",
            "# add() subtracts",
            "--repo",
            "examples/calc",
            "--enqueue",
            "--state",
            state,
            "--json",
        ],
        &env,
    )
    .await;
    check_exit(&out, 0);
    let text_run = json_of(&out)[0]["id"].as_str().unwrap().to_owned();
    let out = forq_env(&["runs", "--state", state, "comment", &text_run, "x"], &env).await;
    check_exit(&out, 65);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is not on GitHub"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
