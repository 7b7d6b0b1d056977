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
