//! Pull requests as work items: a pull request's head (from a fork too),
//! and what its checks say failed: the check runs and commit statuses on
//! its head commit, and, where a job's log names them, the failing tests,
//! read with the same runner parsers the bootstrap gate uses.

use reqwest::Method;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{typed, GhLabel, GhUser, Github, GithubError, Via};

/// A pull request as GitHub gives it (`GET /repos/R/pulls/N`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GhPullRequest {
    /// Its number.
    pub number: u64,
    /// The title.
    pub title: String,
    /// The description.
    #[serde(default)]
    pub body: Option<String>,
    /// Its page.
    pub html_url: String,
    /// `open` or `closed`.
    pub state: String,
    /// Who opened it.
    #[serde(default)]
    pub user: Option<GhUser>,
    /// The author's relation to the repository (`OWNER`, `CONTRIBUTOR`, …).
    #[serde(default)]
    pub author_association: Option<String>,
    /// The branch and commit it proposes.
    pub head: GhBranch,
    /// The branch it goes into.
    pub base: GhBranch,
    /// Whether the base repository's maintainers may push to its head
    /// branch.
    #[serde(default)]
    pub maintainer_can_modify: bool,
    /// Labels.
    #[serde(default)]
    pub labels: Vec<GhLabel>,
}

/// One side of a pull request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GhBranch {
    /// The branch's name.
    #[serde(rename = "ref")]
    pub name: String,
    /// The commit.
    pub sha: String,
    /// The repository (GitHub sends null for a deleted fork).
    #[serde(default)]
    pub repo: Option<GhRepo>,
}

/// A repository as a pull request names it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GhRepo {
    /// `OWNER/REPO`.
    pub full_name: String,
    /// What to clone or push to.
    pub clone_url: String,
}

/// A check that failed on a commit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckFailure {
    /// The check run's name, or the status's context.
    pub name: String,
    /// `check_run` or `status`.
    pub kind: String,
    /// Its conclusion or state (`failure`, `timed_out`, `error`).
    pub conclusion: String,
    /// What it said of itself (its output's title and summary, or the
    /// status's description).
    pub summary: String,
    /// Its page.
    #[serde(default)]
    pub url: Option<String>,
    /// The failing tests its log (or output) names, as the runner names
    /// them.
    pub tests: Vec<String>,
}

/// A log's failing tests: the pytest, unittest, cargo (and nextest), go, jest,
/// vitest, node:test and mocha lines that name one, after GitHub Actions'
/// timestamps and colours are taken off. Sorted, each once.
///
/// ```
/// use forq_app::github::failing_tests;
///
/// let log = "2026-12-06T10:00:01.0000000Z ===== short test summary info =====\n\
///            2026-12-06T10:00:01.0000000Z FAILED tests/test_calc.py::test_add - assert 1 == 3\n\
///            2026-12-06T10:00:01.0000000Z ===== 1 failed, 4 passed in 0.05s =====\n";
/// assert_eq!(failing_tests(log), ["tests/test_calc.py::test_add"]);
/// assert!(failing_tests("Run make lint\nlint failed").is_empty());
/// ```
pub fn failing_tests(log: &str) -> Vec<String> {
    use forq_bootstrap::evidence;
    let lines: Vec<&str> = log.lines().map(unstamped).collect();
    let text = evidence::strip_ansi(&lines.join("\n"));
    let parsers: [fn(&str) -> Option<forq_bootstrap::Evidence>; 10] = [
        evidence::pytest,
        evidence::unittest,
        evidence::nextest,
        evidence::cargo,
        evidence::go_test_json,
        evidence::go_test,
        evidence::jest,
        evidence::vitest,
        evidence::node_test,
        evidence::mocha,
    ];
    let mut found: Vec<String> = parsers
        .iter()
        .filter_map(|parse| parse(&text))
        .flat_map(|ev| {
            ev.tests
                .into_iter()
                .filter(|(_, o)| {
                    matches!(
                        o,
                        forq_bootstrap::Outcome::Failed | forq_bootstrap::Outcome::Error
                    )
                })
                .map(|(id, _)| id)
        })
        .collect();
    found.sort();
    found.dedup();
    found
}

/// A log line without the timestamp GitHub Actions puts before it
/// (`2026-12-06T10:00:01.1234567Z `).
fn unstamped(line: &str) -> &str {
    let stamped = line.len() > 20
        && line.as_bytes()[..4].iter().all(u8::is_ascii_digit)
        && line.as_bytes()[4] == b'-'
        && line.as_bytes()[10] == b'T';
    match line.split_once("Z ") {
        Some((stamp, rest)) if stamped && stamp.len() <= 30 => rest,
        _ => line,
    }
}

/// How much of a job's log is read: its end, where runners summarise.
const LOG_TAIL: usize = 4 << 20;

impl Github {
    /// Pull request `number` of `repo`.
    pub async fn pull(&self, repo: &str, number: u64) -> Result<GhPullRequest, GithubError> {
        let url = format!("{}/repos/{repo}/pulls/{number}", self.api);
        let (_, json) = self.send(Some(repo), Method::GET, &url, None).await?;
        typed(&url, json)
    }

    /// The open pull requests of `repo` whose head is commit `sha` (a
    /// check suite's delivery names only pull requests from the same
    /// repository: one from a fork is found by its head).
    pub async fn pulls_at(&self, repo: &str, sha: &str) -> Result<Vec<u64>, GithubError> {
        let url = format!("{}/repos/{repo}/pulls?state=open&per_page=100", self.api);
        let at: Vec<GhPullRequest> = self
            .pages(
                Via::Repo(Some(repo)),
                url,
                None,
                None,
                |p: &GhPullRequest| p.head.sha == sha,
            )
            .await?;
        Ok(at.into_iter().map(|p| p.number).collect())
    }

    /// The checks that failed on commit `sha` of `repo`: check runs
    /// concluded `failure` or `timed_out` (with the tests their job's log
    /// names, for GitHub Actions, else their output), and commit statuses
    /// in `failure` or `error`.
    pub async fn check_failures(
        &self,
        repo: &str,
        sha: &str,
    ) -> Result<Vec<CheckFailure>, GithubError> {
        let url = format!(
            "{}/repos/{repo}/commits/{sha}/check-runs?per_page=100",
            self.api
        );
        let failed: Vec<Value> = self
            .pages(
                Via::Repo(Some(repo)),
                url,
                Some("check_runs"),
                None,
                |run: &Value| matches!(run["conclusion"].as_str(), Some("failure" | "timed_out")),
            )
            .await?;
        let mut out = Vec::new();
        for run in &failed {
            let conclusion = run["conclusion"].as_str().unwrap_or_default();
            out.push(self.check_run_failure(repo, run, conclusion).await?);
        }
        let url = format!("{}/repos/{repo}/commits/{sha}/status", self.api);
        let (_, json) = self.send(Some(repo), Method::GET, &url, None).await?;
        for status in json["statuses"].as_array().into_iter().flatten() {
            let state = status["state"].as_str().unwrap_or_default();
            if matches!(state, "failure" | "error") {
                out.push(CheckFailure {
                    name: text(&status["context"]),
                    kind: "status".to_owned(),
                    conclusion: state.to_owned(),
                    summary: text(&status["description"]),
                    url: status["target_url"].as_str().map(str::to_owned),
                    tests: Vec::new(),
                });
            }
        }
        Ok(out)
    }

    /// A failed check run, with the tests its log names.
    async fn check_run_failure(
        &self,
        repo: &str,
        run: &Value,
        conclusion: &str,
    ) -> Result<CheckFailure, GithubError> {
        let output = &run["output"];
        let said = format!("{}\n{}", text(&output["summary"]), text(&output["text"]));
        let mut tests = failing_tests(&said);
        let actions = run["app"]["slug"] == "github-actions";
        if let (true, Some(job)) = (actions, run["id"].as_u64()) {
            // A check run of GitHub Actions is its job: the log is its.
            let url = format!("{}/repos/{repo}/actions/jobs/{job}/logs", self.api);
            match self.send(Some(repo), Method::GET, &url, None).await {
                Ok((_, Value::String(log))) => {
                    let start = log.len().saturating_sub(LOG_TAIL);
                    let start = (start..log.len())
                        .find(|i| log.is_char_boundary(*i))
                        .unwrap_or(log.len());
                    tests.extend(failing_tests(&log[start..]));
                }
                Ok(_) => {}
                // Logs expire, or the token may not read them: the run
                // falls back on the local suite.
                Err(GithubError::Status {
                    status: 403 | 404 | 410,
                    ..
                }) => {}
                Err(e) => return Err(e),
            }
            tests.sort();
            tests.dedup();
        }
        let title = text(&output["title"]);
        Ok(CheckFailure {
            name: text(&run["name"]),
            kind: "check_run".to_owned(),
            conclusion: conclusion.to_owned(),
            summary: match (title.is_empty(), text(&output["summary"])) {
                (true, s) => s,
                (false, s) if s.is_empty() => title,
                (false, s) => format!("{title}: {s}"),
            },
            url: run["html_url"].as_str().map(str::to_owned),
            tests,
        })
    }
}

/// A JSON string's text ("" for null).
fn text(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failing_tests_are_read_from_each_runners_lines() {
        let cargo = "     Running unittests src/lib.rs (target/debug/deps/calc-0f1e)\nrunning 2 tests\ntest math::adds ... FAILED\ntest math::subs ... ok\n\nfailures:\n\ntest result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n";
        assert_eq!(failing_tests(cargo), ["src/lib.rs::math::adds"]);
        let go = "=== RUN   TestAdd\n--- FAIL: TestAdd (0.00s)\n    calc_test.go:9: got 1\nFAIL\nFAIL\texample.com/calc\t0.002s\n";
        assert_eq!(failing_tests(go), ["example.com/calc::TestAdd"]);
        assert_eq!(
            unstamped("2026-12-06T10:00:01.1234567Z FAILED x::y"),
            "FAILED x::y"
        );
        assert_eq!(unstamped("plain Z line"), "plain Z line");
    }
}
