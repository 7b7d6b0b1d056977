//! Reading an issue from GitHub's REST API (a loopback server answering in
//! the documented shape).

use forq_agent::issue::{Error, Issue};
use forq_agent::provider::ApiKey;
use serde_json::json;

use super::server::{Reply, Server};

#[tokio::test]
async fn a_github_issue_is_read_with_the_token_and_api_headers() {
    let server = Server::start(vec![Reply::ok(json!({
        "id": 1, "number": 42, "state": "open", "title": "add() subtracts",
        "body": "`add(2, 3)` returns -1.\r\n", "html_url": "https://github.com/o/r/issues/42",
        "labels": [{"id": 1, "name": "bug", "color": "d73a4a"}], "user": {"login": "someone"}
    }))])
    .await;
    let token = ApiKey::new("ghp_test_token_123");
    let issue = Issue::from_github(
        "https://github.com/o/r/issues/42",
        &server.url,
        Some(&token),
    )
    .await
    .unwrap();
    assert_eq!(issue.title, "add() subtracts");
    assert_eq!(issue.body, "`add(2, 3)` returns -1.");
    assert_eq!(issue.labels, ["bug"]);
    assert_eq!(issue.source, "https://github.com/o/r/issues/42");
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
}

#[tokio::test]
async fn a_missing_issue_and_a_spent_rate_limit_say_what_to_do() {
    let server = Server::start(vec![
        Reply::status(404, json!({"message": "Not Found"})),
        Reply::Json {
            status: 403,
            headers: vec![("x-ratelimit-remaining", "0".to_owned())],
            body: json!({"message": "API rate limit exceeded"}).to_string(),
        },
    ])
    .await;
    let url = "https://github.com/o/private/pull/7";
    let err = Issue::from_github(url, &server.url, None)
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot read https://github.com/o/private/pull/7: no such issue, or a private repository (HTTP 404); set GITHUB_TOKEN"
    );
    let err = Issue::from_github(url, &server.url, None)
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .ends_with("GitHub's rate limit is spent (HTTP 403); set GITHUB_TOKEN"),
        "{err}"
    );
    let err = Issue::from_github("https://example.com/x", &server.url, None)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotGithub(_)));
}
