//! The GitHub client against a loopback server that answers in the REST
//! API's documented shapes: pagination by `Link`, writes, rate limits.

use std::time::{Duration, Instant};

use forq_app::github::{Github, GithubError};
use serde_json::json;

use crate::server::{Reply, Server};

fn issue(number: u64, pull: bool) -> serde_json::Value {
    let mut v = json!({
        "number": number,
        "title": format!("issue {number}"),
        "body": null,
        "html_url": format!("https://github.com/o/r/issues/{number}"),
        "state": "open",
        "labels": [{"name": "bug"}],
        "user": {"login": "alice"},
    });
    if pull {
        v["pull_request"] = json!({"url": "x"});
    }
    v
}

fn with_headers(body: serde_json::Value, headers: Vec<(&'static str, String)>) -> Reply {
    Reply::Json {
        status: 200,
        headers,
        body: body.to_string(),
    }
}

#[tokio::test]
async fn listing_follows_every_page_and_leaves_out_pull_requests() {
    let server = Server::start(vec![
        with_headers(
            json!([issue(1, false), issue(2, true)]),
            vec![(
                "link",
                r#"<{base}/repositories/9/issues?page=2>; rel="next", <{base}/repositories/9/issues?page=2>; rel="last""#.to_owned(),
            )],
        ),
        Reply::ok(json!([issue(3, false)])),
    ])
    .await;
    let gh = Github::new(&server.url, Some("tok-123".to_owned()));
    let issues = gh
        .list_issues("o/r", Some("good first issue"), false, None)
        .await
        .expect("list");
    let numbers: Vec<u64> = issues.iter().map(|i| i.number).collect();
    assert_eq!(numbers, [1, 3]);
    let record = issues[0].record();
    assert_eq!((record.id.as_str(), record.body.as_str()), ("1", ""));
    assert_eq!(record.author.as_deref(), Some("alice"));
    let got = server.received();
    assert_eq!(got.len(), 2);
    assert!(
        got[0].path.starts_with("/repos/o/r/issues?state=open")
            && got[0].path.contains("labels=good%20first%20issue")
            && got[0].path.contains("per_page=100"),
        "{}",
        got[0].path
    );
    assert_eq!(got[1].path, "/repositories/9/issues?page=2");
    assert_eq!(got[0].header("authorization"), Some("Bearer tok-123"));
    assert_eq!(got[0].header("x-github-api-version"), Some("2022-11-28"));
}

#[tokio::test]
async fn writes_use_the_documented_methods_and_bodies() {
    let server = Server::start(vec![
        Reply::status(
            201,
            json!({"id": 1, "html_url": "https://github.com/o/r/issues/4#issuecomment-1"}),
        ),
        Reply::ok(json!([{"name": "forq"}])),
        Reply::ok(issue(4, false)),
        Reply::status(
            201,
            json!({"number": 12, "html_url": "https://github.com/o/r/pull/12"}),
        ),
        Reply::ok(json!({"default_branch": "trunk"})),
    ])
    .await;
    let gh = Github::new(&server.url, Some("t".to_owned()));
    let url = gh
        .comment("o/r", 4, "forq: patch ready")
        .await
        .expect("comment");
    assert!(url.ends_with("issuecomment-1"));
    gh.add_labels("o/r", 4, &["forq"]).await.expect("label");
    gh.close("o/r", 4).await.expect("close");
    let pr = gh
        .open_pull("o/r", "Fix #4", "forq/fix/r1", "main", "body")
        .await
        .expect("pr");
    assert_eq!(pr.number, 12);
    assert_eq!(gh.default_branch("o/r").await.expect("repo"), "trunk");
    let got = server.received();
    let calls: Vec<(&str, &str)> = got
        .iter()
        .map(|r| (r.method.as_str(), r.path.as_str()))
        .collect();
    assert_eq!(
        calls,
        [
            ("POST", "/repos/o/r/issues/4/comments"),
            ("POST", "/repos/o/r/issues/4/labels"),
            ("PATCH", "/repos/o/r/issues/4"),
            ("POST", "/repos/o/r/pulls"),
            ("GET", "/repos/o/r"),
        ]
    );
    assert_eq!(got[0].body, json!({"body": "forq: patch ready"}));
    assert_eq!(got[1].body, json!({"labels": ["forq"]}));
    assert_eq!(got[2].body, json!({"state": "closed"}));
    assert_eq!(got[3].body["head"], "forq/fix/r1");
    assert_eq!(got[3].body["base"], "main");
}

#[tokio::test]
async fn rate_limits_are_waited_out_then_retried() {
    let limited = |status: u16, headers: Vec<(&'static str, String)>, message: &str| Reply::Json {
        status,
        headers,
        body: json!({"message": message}).to_string(),
    };
    let server = Server::start(vec![
        // Too many requests, come back in a second.
        limited(429, vec![("retry-after", "1".to_owned())], "slow down"),
        // A secondary limit that names no time.
        limited(403, Vec::new(), "You have exceeded a secondary rate limit."),
        // The primary limit, spent, resetting now.
        limited(
            403,
            vec![
                ("x-ratelimit-remaining", "0".to_owned()),
                (
                    "x-ratelimit-reset",
                    (forq_app::store::now_ms() / 1000).to_string(),
                ),
            ],
            "API rate limit exceeded",
        ),
        Reply::ok(issue(5, false)),
    ])
    .await;
    let gh = Github::new(&server.url, None).secondary_wait(Duration::from_millis(200));
    let started = Instant::now();
    let got = gh.issue("o/r", 5).await.expect("retried until it answered");
    assert_eq!(got.number, 5);
    assert_eq!(
        server.received().len(),
        4,
        "three refusals, then the answer"
    );
    assert!(
        started.elapsed() >= Duration::from_millis(1000),
        "Retry-After: 1 was obeyed"
    );
    assert!(server.received()[0].header("authorization").is_none());
}

#[tokio::test]
async fn a_wait_longer_than_the_cap_is_an_error_that_says_when() {
    let server = Server::start(vec![Reply::Json {
        status: 429,
        headers: vec![("retry-after", "3600".to_owned())],
        body: json!({"message": "slow down"}).to_string(),
    }])
    .await;
    let gh = Github::new(&server.url, None).max_wait(Duration::from_secs(5));
    let err = gh.issue("o/r", 1).await.expect_err("too long");
    assert!(
        matches!(err, GithubError::RateLimited { wait_s: 3600, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("try again later"), "{err}");
}

#[tokio::test]
async fn refusals_say_what_to_do() {
    let server = Server::start(vec![Reply::status(404, json!({"message": "Not Found"}))]).await;
    let gh = Github::new(&server.url, None);
    let err = gh.comment("o/r", 1, "x").await.expect_err("404");
    let s = err.to_string();
    assert!(
        s.contains("404: Not Found") && s.contains("GITHUB_TOKEN"),
        "{s}"
    );
}

#[tokio::test]
async fn a_file_is_read_from_its_wrapped_base64_and_a_missing_one_is_none() {
    // "golden:\n  test: make check\n", wrapped as the API wraps it.
    let server = Server::start(vec![
        Reply::ok(json!({"type": "file", "encoding": "base64",
            "content": "Z29sZGVuOgog\nIHRlc3Q6IG1ha2UgY2hlY2sK\n"})),
        Reply::status(404, json!({"message": "Not Found"})),
        Reply::ok(json!({"type": "file", "encoding": "base64", "content": "not base64!"})),
    ])
    .await;
    let gh = Github::new(&server.url, None);
    let text = gh.file("o/r", "forq.yml").await.expect("read");
    assert_eq!(text.as_deref(), Some("golden:\n  test: make check\n"));
    assert_eq!(server.received()[0].path, "/repos/o/r/contents/forq.yml");
    assert_eq!(gh.file("o/r", ".forq.yml").await.expect("404"), None);
    let err = gh.file("o/r", "forq.yml").await.expect_err("bad content");
    assert!(matches!(err, GithubError::Shape { .. }), "{err}");
}

#[tokio::test]
async fn one_issue_is_read_from_its_url_with_the_token_and_api_headers() {
    let server = Server::start(vec![
        Reply::ok(json!({
            "number": 42, "state": "open", "title": "add() subtracts",
            "body": "`add(2, 3)` returns -1.\r\n", "html_url": "https://github.com/o/r/issues/42",
            "labels": [{"name": "bug"}], "user": {"login": "someone"}
        })),
        Reply::status(404, json!({"message": "Not Found"})),
    ])
    .await;
    let gh = Github::new(&server.url, Some("ghp_test_token_123".to_owned()));
    let found = gh
        .issue_at("https://github.com/o/r/issues/42#issuecomment-1")
        .await
        .unwrap();
    assert_eq!(found.title, "add() subtracts");
    assert_eq!(found.record().labels, ["bug"]);
    assert_eq!(found.record().author.as_deref(), Some("someone"));
    let got = &server.received()[0];
    assert_eq!(
        (got.method.as_str(), got.path.as_str()),
        ("GET", "/repos/o/r/issues/42")
    );
    assert_eq!(
        got.header("authorization"),
        Some("Bearer ghp_test_token_123")
    );
    assert_eq!(got.header("accept"), Some("application/vnd.github+json"));
    // A pull request's URL reads the same endpoint; a missing one says so.
    let err = gh
        .issue_at("https://github.com/o/private/pull/7")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("404: Not Found") && err.contains("check OWNER/REPO"),
        "{err}"
    );
    assert_eq!(server.received()[1].path, "/repos/o/private/issues/7");
    let err = gh.issue_at("https://example.com/x").await.unwrap_err();
    assert!(matches!(err, GithubError::NotAnIssue(_)), "{err}");
}
