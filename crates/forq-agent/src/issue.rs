//! The issue a run works on, read from where people keep issues: a GitHub
//! issue or pull-request URL (over the REST API), a Markdown file, or text.
//!
//! ```
//! use forq_agent::issue::Issue;
//!
//! let issue = Issue::from_markdown("---\nid: 7\n---\n# add() subtracts\n\n`add(2, 3)` is -1.\n", "issue.md");
//! assert_eq!(issue.title, "add() subtracts");
//! assert_eq!(issue.body, "`add(2, 3)` is -1.");
//! assert!(issue.prompt().starts_with("# add() subtracts\n"));
//! ```

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::provider::ApiKey;

/// An issue: a title and a body, and where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Issue {
    /// The title (may be empty for `--text`).
    pub title: String,
    /// The body, Markdown.
    pub body: String,
    /// Where it was read: a URL, a path, or `text`.
    pub source: String,
    /// Labels, when the source has them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
}

/// Why an issue could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The Markdown file could not be read.
    #[error("cannot read the issue file {path}: {message}")]
    File {
        /// The file.
        path: String,
        /// What failed.
        message: String,
    },
    /// Not a URL of a GitHub issue or pull request.
    #[error("{0} is not a GitHub issue URL (https://github.com/OWNER/REPO/issues/N or /pull/N)")]
    NotGithub(String),
    /// The GitHub API said no, or could not be reached.
    #[error("cannot read {url}: {message}")]
    Github {
        /// The issue's URL.
        url: String,
        /// What went wrong, and what to do.
        message: String,
    },
}

/// Where a GitHub issue lives: owner, repository, number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GithubRef {
    /// The owner (user or organisation).
    pub owner: String,
    /// The repository.
    pub repo: String,
    /// The issue or pull request number.
    pub number: u64,
}

impl GithubRef {
    /// Parses `https://github.com/OWNER/REPO/issues/N` (or `/pull/N`, with
    /// or without the scheme, a trailing slash or a `#fragment`).
    pub fn parse(url: &str) -> Option<GithubRef> {
        let rest = url
            .trim()
            .trim_start_matches("https://")
            .trim_start_matches("http://")
            .strip_prefix("github.com/")?;
        let rest = rest.split(['#', '?']).next()?.trim_end_matches('/');
        let parts: Vec<&str> = rest.split('/').collect();
        match parts.as_slice() {
            [owner, repo, "issues" | "pull" | "pulls", n]
                if !owner.is_empty() && !repo.is_empty() =>
            {
                Some(GithubRef {
                    owner: (*owner).to_owned(),
                    repo: (*repo).to_owned(),
                    number: n.parse().ok()?,
                })
            }
            _ => None,
        }
    }
}

#[derive(Deserialize)]
struct GithubIssue {
    title: String,
    body: Option<String>,
    html_url: Option<String>,
    #[serde(default)]
    labels: Vec<GithubLabel>,
}

#[derive(Deserialize)]
struct GithubLabel {
    name: String,
}

impl Issue {
    /// Text given directly: the first line, when it is a `# ` heading, is
    /// the title.
    pub fn from_text(text: &str) -> Issue {
        let mut issue = Issue::from_markdown(text, "text");
        issue.source = "text".to_owned();
        issue
    }

    /// A Markdown issue: YAML front matter (`---` … `---`, its `title:` used
    /// when there is no heading) is dropped, the first `# ` heading is the
    /// title and the rest the body.
    pub fn from_markdown(text: &str, source: &str) -> Issue {
        let mut title = String::new();
        let mut rest = text.trim_start_matches('\u{feff}');
        if let Some(after) = rest.strip_prefix("---\n") {
            if let Some(end) = after.find("\n---") {
                for line in after[..end].lines() {
                    if let Some(t) = line.strip_prefix("title:") {
                        title = t.trim().trim_matches(['"', '\'']).to_owned();
                    }
                }
                rest = after[end + 4..].trim_start_matches(['-']);
            }
        }
        let rest = rest.trim_start();
        let body = match rest.strip_prefix("# ") {
            Some(headed) => {
                let (first, body) = headed.split_once('\n').unwrap_or((headed, ""));
                title = first.trim().to_owned();
                body
            }
            None => rest,
        };
        Issue {
            title,
            body: body.trim().to_owned(),
            source: source.to_owned(),
            labels: Vec::new(),
        }
    }

    /// Reads a Markdown issue file.
    pub fn from_file(path: &Path) -> Result<Issue, Error> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::File {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        Ok(Issue::from_markdown(&text, &path.display().to_string()))
    }

    /// Reads a GitHub issue (or pull request) through the REST API at
    /// `api_base` (`https://api.github.com`, or `GITHUB_API_URL`'s value
    /// for GitHub Enterprise), with `token` when given (private
    /// repositories, and a higher rate limit).
    pub async fn from_github(
        url: &str,
        api_base: &str,
        token: Option<&ApiKey>,
    ) -> Result<Issue, Error> {
        let at = GithubRef::parse(url).ok_or_else(|| Error::NotGithub(url.to_owned()))?;
        let fail = |message: String| Error::Github {
            url: url.to_owned(),
            message,
        };
        let endpoint = format!(
            "{}/repos/{}/{}/issues/{}",
            api_base.trim_end_matches('/'),
            at.owner,
            at.repo,
            at.number
        );
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| fail(e.to_string()))?;
        let mut request = client
            .get(&endpoint)
            .header("accept", "application/vnd.github+json")
            .header("x-github-api-version", "2022-11-28")
            .header("user-agent", concat!("forq/", env!("CARGO_PKG_VERSION")));
        if let Some(token) = token {
            request = request.bearer_auth(token.expose());
        }
        let response = request
            .send()
            .await
            .map_err(|e| fail(format!("cannot reach {api_base}: {e}")))?;
        let status = response.status().as_u16();
        let limited = response
            .headers()
            .get("x-ratelimit-remaining")
            .is_some_and(|v| v == "0");
        let text = response.text().await.map_err(|e| fail(e.to_string()))?;
        let message = || {
            serde_json::from_str::<serde_json::Value>(&text)
                .ok()
                .and_then(|v| v.get("message")?.as_str().map(str::to_owned))
                .unwrap_or_else(|| text.chars().take(200).collect())
        };
        let hint = if token.is_some() {
            ""
        } else {
            "; set GITHUB_TOKEN"
        };
        match status {
            200 => {}
            403 | 429 if limited => {
                return Err(fail(format!(
                    "GitHub's rate limit is spent (HTTP {status}){hint}"
                )))
            }
            401 | 403 => {
                return Err(fail(format!(
                    "GitHub refused the token (HTTP {status}: {}); check GITHUB_TOKEN",
                    message()
                )))
            }
            404 => {
                return Err(fail(format!(
                    "no such issue, or a private repository (HTTP 404){hint}"
                )))
            }
            _ => return Err(fail(format!("HTTP {status}: {}", message()))),
        }
        let issue: GithubIssue = serde_json::from_str(&text)
            .map_err(|e| fail(format!("GitHub's reply is not an issue: {e}")))?;
        Ok(Issue {
            title: issue.title,
            body: issue.body.unwrap_or_default().trim().to_owned(),
            source: issue.html_url.unwrap_or_else(|| url.to_owned()),
            labels: issue.labels.into_iter().map(|l| l.name).collect(),
        })
    }

    /// Reads `spec`: a GitHub URL (through `GITHUB_API_URL`, default
    /// `https://api.github.com`, and `GITHUB_TOKEN` when set) or a Markdown
    /// file.
    pub async fn load(spec: &str) -> Result<Issue, Error> {
        if spec.starts_with("http://") || spec.starts_with("https://") {
            let api = std::env::var("GITHUB_API_URL")
                .ok()
                .filter(|u| !u.is_empty())
                .unwrap_or_else(|| "https://api.github.com".to_owned());
            let token = ApiKey::from_env("GITHUB_TOKEN");
            return Issue::from_github(spec, &api, token.as_ref()).await;
        }
        Issue::from_file(Path::new(spec))
    }

    /// The issue as the model reads it: `# title`, a blank line, the body.
    pub fn prompt(&self) -> String {
        match (self.title.is_empty(), self.body.is_empty()) {
            (true, _) => self.body.clone(),
            (false, true) => format!("# {}\n", self.title),
            (false, false) => format!("# {}\n\n{}", self.title, self.body),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn github_urls_parse_and_others_do_not() {
        let r = GithubRef::parse("https://github.com/o/r/issues/12#issuecomment-1").unwrap();
        assert_eq!(
            (r.owner.as_str(), r.repo.as_str(), r.number),
            ("o", "r", 12)
        );
        assert_eq!(
            GithubRef::parse("github.com/o/r/pull/3/").unwrap().number,
            3
        );
        assert!(GithubRef::parse("https://gitlab.com/o/r/issues/1").is_none());
        assert!(GithubRef::parse("https://github.com/o/r").is_none());
        assert!(GithubRef::parse("https://github.com/o/r/issues/x").is_none());
    }

    #[test]
    fn markdown_without_heading_uses_front_matter_title() {
        let i = Issue::from_markdown(
            "---\ntitle: \"Crash\"\nlabels: [bug]\n---\nIt crashes.\n",
            "f.md",
        );
        assert_eq!(i.title, "Crash");
        assert_eq!(i.body, "It crashes.");
        let plain = Issue::from_text("just words");
        assert_eq!(
            (plain.title.as_str(), plain.prompt()),
            ("", "just words".to_owned())
        );
    }
}
