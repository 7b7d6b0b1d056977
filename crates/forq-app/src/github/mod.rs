//! GitHub over its REST API: list a repository's open issues and pull
//! requests (every page), read one, comment, label, close, open a pull
//! request. forq speaks either as a GitHub App installation ([`AppKey`]:
//! `FORQ_GITHUB_APP_ID` and the private key's file in
//! `FORQ_GITHUB_APP_KEY_FILE`), scoped to the repositories the App is
//! installed on, or with one person's token (`GITHUB_TOKEN`); either is
//! sent only as the `Authorization` header. `GITHUB_API_URL` points at
//! GitHub Enterprise (or a test server).
//!
//! Rate limits are waited out rather than failed on: a `Retry-After`
//! header is obeyed; a spent primary limit (`x-ratelimit-remaining: 0`)
//! waits until `x-ratelimit-reset`; a secondary limit without either
//! header waits a minute, then longer, as GitHub's documentation asks.
//! A wait longer than [`Github::max_wait`] is an error that says when to
//! come back.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::store::IssueRecord;

mod app;
mod pulls;

pub use app::AppKey;
pub use pulls::{failing_tests, CheckFailure, GhBranch, GhPullRequest, GhRepo};

/// Who forq speaks as.
#[derive(Clone)]
enum Auth {
    /// Nobody: public data, the lowest rate limit.
    Anonymous,
    /// One person's token.
    Token(String),
    /// A GitHub App: each repository's installation token.
    App(Arc<app::Installations>),
}

/// A GitHub REST client for one API base.
#[derive(Clone)]
pub struct Github {
    http: reqwest::Client,
    api: String,
    auth: Auth,
    max_wait: Duration,
    attempts: u32,
    secondary_wait: Duration,
    /// The login this client's token is, once asked.
    me: Arc<tokio::sync::OnceCell<Option<String>>>,
}

impl std::fmt::Debug for Github {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Github")
            .field("api", &self.api)
            .field(
                "auth",
                &match &self.auth {
                    Auth::Anonymous => "none".to_owned(),
                    Auth::Token(_) => "token (set)".to_owned(),
                    Auth::App(app) => format!("app {}", app.key.id()),
                },
            )
            .field("max_wait", &self.max_wait)
            .finish()
    }
}

/// An issue or pull request as GitHub lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GhIssue {
    /// Its number.
    pub number: u64,
    /// The title.
    pub title: String,
    /// The body (GitHub sends null for an empty one).
    #[serde(default)]
    pub body: Option<String>,
    /// Its page.
    pub html_url: String,
    /// `open` or `closed`.
    pub state: String,
    /// Labels.
    #[serde(default)]
    pub labels: Vec<GhLabel>,
    /// Who opened it.
    pub user: Option<GhUser>,
    /// Present on pull requests.
    #[serde(default)]
    pub pull_request: Option<Value>,
}

/// A label.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GhLabel {
    /// Its name.
    pub name: String,
}

/// A user.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GhUser {
    /// The login.
    pub login: String,
}

impl GhIssue {
    /// Whether it is a pull request.
    pub fn is_pull(&self) -> bool {
        self.pull_request.is_some()
    }
    /// The run store's record of it.
    pub fn record(&self) -> IssueRecord {
        IssueRecord {
            id: self.number.to_string(),
            title: self.title.clone(),
            body: self.body.clone().unwrap_or_default(),
            source: self.html_url.clone(),
            labels: self.labels.iter().map(|l| l.name.clone()).collect(),
            targets: Vec::new(),
            author: self.user.as_ref().map(|u| u.login.clone()),
            url: Some(self.html_url.clone()),
            pull: None,
        }
    }
}

/// A comment on an issue or a pull request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GhComment {
    /// Its id.
    pub id: u64,
    /// Its text (GitHub sends null for an empty one).
    #[serde(default)]
    pub body: Option<String>,
    /// Its page.
    pub html_url: String,
    /// Who wrote it.
    #[serde(default)]
    pub user: Option<GhUser>,
    /// The App it was written through, when one's token wrote it.
    #[serde(default)]
    pub performed_via_github_app: Option<GhApp>,
}

/// A GitHub App, as GitHub names one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GhApp {
    /// Its id.
    pub id: u64,
}

/// A pull request as opened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GhPull {
    /// Its number.
    pub number: u64,
    /// Its page.
    pub html_url: String,
}

/// Why a GitHub call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GithubError {
    /// The API could not be reached.
    #[error("cannot reach {url}: {message}")]
    Unreachable {
        /// The request's URL.
        url: String,
        /// What failed.
        message: String,
    },
    /// The API refused.
    #[error("{method} {url}: {status}: {message}{hint}")]
    Status {
        /// The method.
        method: String,
        /// The request's URL.
        url: String,
        /// The HTTP status.
        status: u16,
        /// GitHub's message.
        message: String,
        /// What to do.
        hint: &'static str,
    },
    /// Rate limited for longer than forq waits.
    #[error("{url}: rate limited for {wait_s} s more (more than the {max_s} s forq waits); try again later, or with a GITHUB_TOKEN for a higher limit")]
    RateLimited {
        /// The request's URL.
        url: String,
        /// Seconds to wait.
        wait_s: u64,
        /// Seconds forq would have waited.
        max_s: u64,
    },
    /// A reply that is not the documented shape.
    #[error("{url}: unexpected reply: {message}")]
    Shape {
        /// The request's URL.
        url: String,
        /// What did not parse.
        message: String,
    },
    /// Not `OWNER/REPO`.
    #[error("{0} is not a GitHub repository; write OWNER/REPO or https://github.com/OWNER/REPO")]
    NotARepo(String),
    /// Not the URL of an issue or a pull request.
    #[error("{0} is not a GitHub issue URL (https://github.com/OWNER/REPO/issues/N or /pull/N)")]
    NotAnIssue(String),
    /// The App's private key could not be read or is not an RSA key.
    #[error("the GitHub App's private key{}: {message}; name the .pem file GitHub gave for the App (FORQ_GITHUB_APP_KEY_FILE)", path.as_ref().map(|p| format!(" {}", p.display())).unwrap_or_default())]
    AppKey {
        /// The key's file, when it came from one.
        path: Option<PathBuf>,
        /// What is wrong (never the key).
        message: String,
    },
    /// The App's settings in the environment are incomplete or malformed.
    #[error("{0}")]
    AppSettings(String),
    /// The App is not installed on the repository.
    #[error("the GitHub App {app} is not installed on {repo}: forq acts only where it is installed; install it there, or add {repo} to its installation's repositories")]
    NotInstalled {
        /// The App's id.
        app: u64,
        /// `OWNER/REPO`.
        repo: String,
    },
}

/// `OWNER/REPO` and the number of an issue's or pull request's URL
/// (`https://github.com/OWNER/REPO/issues/N` or `/pull/N`, with or without
/// the scheme, a trailing slash, a query or a `#fragment`; any host, for
/// GitHub Enterprise).
///
/// ```
/// use forq_app::github::issue_ref;
///
/// assert_eq!(issue_ref("https://github.com/o/r/issues/12#issuecomment-1"), Some(("o/r".to_owned(), 12)));
/// assert_eq!(issue_ref("github.com/o/r/pull/3/"), Some(("o/r".to_owned(), 3)));
/// assert_eq!(issue_ref("https://github.com/o/r"), None);
/// assert_eq!(issue_ref("https://github.com/o/r/issues/x"), None);
/// ```
pub fn issue_ref(url: &str) -> Option<(String, u64)> {
    let rest = url
        .trim()
        .trim_start_matches("https://")
        .trim_start_matches("http://");
    let rest = rest.split(['#', '?']).next()?.trim_end_matches('/');
    let parts: Vec<&str> = rest.split('/').collect();
    match parts.as_slice() {
        [_host, owner, repo, "issues" | "pull" | "pulls", n]
            if !owner.is_empty() && !repo.is_empty() =>
        {
            Some((format!("{owner}/{repo}"), n.parse().ok()?))
        }
        _ => None,
    }
}

/// `OWNER/REPO` from `OWNER/REPO`, `https://github.com/OWNER/REPO[.git]`,
/// or `git@github.com:OWNER/REPO.git`.
pub fn repo_slug(spec: &str) -> Result<String, GithubError> {
    let s = spec.trim().trim_end_matches('/').trim_end_matches(".git");
    let s = s
        .strip_prefix("https://github.com/")
        .or_else(|| s.strip_prefix("http://github.com/"))
        .or_else(|| s.strip_prefix("git@github.com:"))
        .or_else(|| s.strip_prefix("ssh://git@github.com/"))
        .unwrap_or(s);
    let parts: Vec<&str> = s.split('/').collect();
    match parts.as_slice() {
        [owner, repo]
            if !owner.is_empty()
                && !repo.is_empty()
                && !owner.contains(':')
                && !repo.contains(':') =>
        {
            Ok(format!("{owner}/{repo}"))
        }
        _ => Err(GithubError::NotARepo(spec.to_owned())),
    }
}

impl Github {
    /// A client for `api` (such as `https://api.github.com`), with `token`.
    pub fn new(api: &str, token: Option<String>) -> Github {
        let auth = match token.filter(|t| !t.is_empty()) {
            Some(t) => Auth::Token(t),
            None => Auth::Anonymous,
        };
        Github::with_auth(api, auth)
    }

    /// A client for `api` that acts as the GitHub App `key` is for: each
    /// request on a repository carries that repository's installation
    /// token, and a repository the App is not installed on is refused
    /// ([`GithubError::NotInstalled`]).
    pub fn app(api: &str, key: AppKey) -> Github {
        Github::with_auth(api, Auth::App(Arc::new(app::Installations::new(key))))
    }

    fn with_auth(api: &str, auth: Auth) -> Github {
        Github {
            http: reqwest::Client::builder()
                .user_agent(concat!("forq/", env!("CARGO_PKG_VERSION")))
                .timeout(Duration::from_secs(60))
                .build()
                .unwrap_or_default(),
            api: api.trim_end_matches('/').to_owned(),
            auth,
            max_wait: Duration::from_secs(900),
            attempts: 6,
            secondary_wait: Duration::from_secs(60),
            me: Arc::default(),
        }
    }

    /// A client from the environment: `GITHUB_API_URL` (default
    /// `https://api.github.com`); then a GitHub App when
    /// `FORQ_GITHUB_APP_ID` is set (its key read from the file
    /// `FORQ_GITHUB_APP_KEY_FILE` names), else `GITHUB_TOKEN`.
    pub fn from_env() -> Result<Github, GithubError> {
        let var = |name: &str| std::env::var(name).ok().filter(|s| !s.trim().is_empty());
        let api = var("GITHUB_API_URL").unwrap_or_else(|| "https://api.github.com".to_owned());
        match (var("FORQ_GITHUB_APP_ID"), var("FORQ_GITHUB_APP_KEY_FILE")) {
            (Some(id), Some(file)) => {
                let id = id.trim().parse().map_err(|_| {
                    GithubError::AppSettings(format!(
                        "FORQ_GITHUB_APP_ID={id} is not a GitHub App id (a number, on the App's settings page)"
                    ))
                })?;
                Ok(Github::app(&api, AppKey::from_file(id, std::path::Path::new(&file))?))
            }
            (Some(_), None) => Err(GithubError::AppSettings(
                "FORQ_GITHUB_APP_ID is set without FORQ_GITHUB_APP_KEY_FILE: name the App's private key (.pem)".to_owned(),
            )),
            (None, Some(_)) => Err(GithubError::AppSettings(
                "FORQ_GITHUB_APP_KEY_FILE is set without FORQ_GITHUB_APP_ID: give the App's id too".to_owned(),
            )),
            (None, None) => Ok(Github::new(&api, var("GITHUB_TOKEN"))),
        }
    }

    /// The longest single wait for a rate limit (default 15 minutes).
    pub fn max_wait(mut self, wait: Duration) -> Self {
        self.max_wait = wait;
        self
    }

    /// The first wait on a secondary limit that names no time (default a
    /// minute; doubled each time).
    pub fn secondary_wait(mut self, wait: Duration) -> Self {
        self.secondary_wait = wait;
        self
    }

    /// Whether forq speaks as someone (a token, or an App).
    pub fn has_token(&self) -> bool {
        !matches!(self.auth, Auth::Anonymous)
    }

    /// The App's id, when forq speaks as a GitHub App.
    pub fn app_id(&self) -> Option<u64> {
        match &self.auth {
            Auth::App(app) => Some(app.key.id()),
            _ => None,
        }
    }

    /// Forgets which installation holds `repo` (after GitHub said it was
    /// removed from one): the next request on it asks again, and is
    /// refused if no installation holds it.
    pub fn forget(&self, repo: &str) {
        if let Auth::App(app) = &self.auth {
            app.forget(repo);
        }
    }

    /// Records that `installation` holds `repo` (GitHub said so in a
    /// webhook).
    pub fn remember(&self, repo: &str, installation: u64) {
        if let Auth::App(app) = &self.auth {
            app.remember(repo, installation);
        }
    }

    /// The installation of the App that holds `repo`, as GitHub says
    /// ([`GithubError::NotInstalled`] when none does); `None` when forq
    /// speaks with a token.
    pub async fn installation(&self, repo: &str) -> Result<Option<u64>, GithubError> {
        let Auth::App(app) = &self.auth else {
            return Ok(None);
        };
        self.installation_token(app, repo).await?;
        Ok(app.installation(repo))
    }

    /// The credential a git push to `repo` (`OWNER/REPO`) over HTTPS
    /// carries: its installation's token, or the person's token; `None`
    /// when forq speaks as nobody. For the moment of the push only: never
    /// write it down.
    pub async fn push_token(&self, repo: &str) -> Result<Option<String>, GithubError> {
        match &self.auth {
            Auth::Anonymous => Ok(None),
            Auth::Token(t) => Ok(Some(t.clone())),
            Auth::App(app) => self.installation_token(app, repo).await.map(Some),
        }
    }

    /// Installation `id`'s token, scoped to the one repository `repo`
    /// (`OWNER/REPO`) when given — a token that leaks (into a push, a log)
    /// reaches that repository only, not the installation's others: the
    /// one in hand while fresh, else a new one bought with the App's JWT.
    async fn token_of(
        &self,
        app: &app::Installations,
        id: u64,
        repo: Option<&str>,
    ) -> Result<String, GithubError> {
        if let Some(token) = app.token(id, repo) {
            return Ok(token);
        }
        let url = format!("{}/app/installations/{id}/access_tokens", self.api);
        let jwt = app.key.jwt()?;
        let scope = repo.map(|r| {
            let name = r.rsplit('/').next().unwrap_or(r);
            serde_json::json!({"repositories": [name]})
        });
        let (_, json) = self
            .exchange(Some(&jwt), Method::POST, &url, scope.as_ref())
            .await?;
        let granted: app::Granted = typed(&url, json)?;
        let token = granted.token(&url)?;
        let secret = token.secret.clone();
        app.keep(id, repo, token);
        tracing::debug!(installation = id, "bought an installation token");
        Ok(secret)
    }

    /// The token of the installation holding `repo`; an installation not
    /// known yet is asked of GitHub (`GET /repos/R/installation`).
    async fn installation_token(
        &self,
        app: &app::Installations,
        repo: &str,
    ) -> Result<String, GithubError> {
        let id = match app.installation(repo) {
            Some(id) => id,
            None => {
                let url = format!("{}/repos/{repo}/installation", self.api);
                let jwt = app.key.jwt()?;
                let json = match self.exchange(Some(&jwt), Method::GET, &url, None).await {
                    Ok((_, json)) => json,
                    Err(GithubError::Status { status: 404, .. }) => {
                        return Err(GithubError::NotInstalled {
                            app: app.key.id(),
                            repo: repo.to_owned(),
                        })
                    }
                    Err(e) => return Err(e),
                };
                let id = json["id"].as_u64().ok_or_else(|| GithubError::Shape {
                    url,
                    message: "no installation id".to_owned(),
                })?;
                app.remember(repo, id);
                id
            }
        };
        self.token_of(app, id, Some(repo)).await
    }

    /// Every repository the App's installations hold, as
    /// `(installation, OWNER/REPO)`: what forq may act on. Only for an App.
    pub async fn installed_repositories(&self) -> Result<Vec<(u64, String)>, GithubError> {
        let Auth::App(app) = &self.auth else {
            return Ok(Vec::new());
        };
        let listed: Vec<Value> = self
            .pages(
                Via::Repo(None),
                format!("{}/app/installations?per_page=100", self.api),
                None,
                None,
                |_| true,
            )
            .await?;
        let mut out = Vec::new();
        for i in listed {
            let id = i["id"].as_u64().ok_or_else(|| GithubError::Shape {
                url: format!("{}/app/installations", self.api),
                message: "an installation without an id".to_owned(),
            })?;
            let token = self.token_of(app, id, None).await?;
            let repos: Vec<Value> = self
                .pages(
                    Via::Token(&token),
                    format!("{}/installation/repositories?per_page=100", self.api),
                    Some("repositories"),
                    None,
                    |_| true,
                )
                .await?;
            for r in repos {
                if let Some(name) = r["full_name"].as_str() {
                    app.remember(name, id);
                    out.push((id, name.to_owned()));
                }
            }
        }
        Ok(out)
    }

    /// Every item of a listing GitHub pages by `Link`, from `first`: each
    /// page's array (or its `key`'s) as `T`, those `keep` takes, until
    /// `limit` of them.
    async fn pages<T: serde::de::DeserializeOwned>(
        &self,
        via: Via<'_>,
        first: String,
        key: Option<&str>,
        limit: Option<usize>,
        keep: impl Fn(&T) -> bool,
    ) -> Result<Vec<T>, GithubError> {
        let mut out = Vec::new();
        let mut next = Some(first);
        while let Some(url) = next.take() {
            let (link, mut json) = match via {
                Via::Repo(repo) => self.send(repo, Method::GET, &url, None).await?,
                Via::Token(t) => self.exchange(Some(t), Method::GET, &url, None).await?,
            };
            if let Some(key) = key {
                json = json
                    .get_mut(key)
                    .map(Value::take)
                    .ok_or_else(|| GithubError::Shape {
                        url: url.clone(),
                        message: format!("no {key}"),
                    })?;
            }
            let page: Vec<T> = typed(&url, json)?;
            out.extend(page.into_iter().filter(|item| keep(item)));
            if limit.is_some_and(|l| out.len() >= l) {
                break;
            }
            next = link.as_deref().and_then(next_link);
            // A page is fetched with forq's credential: only from the API
            // forq speaks to, whatever a `Link` header names.
            if let Some(n) = &next {
                if !same_origin(n, &self.api) {
                    return Err(GithubError::Shape {
                        url,
                        message: format!(
                            "its next page {n:?} is not on {}: forq follows pages only on the API it speaks to",
                            self.api
                        ),
                    });
                }
            }
        }
        if let Some(l) = limit {
            out.truncate(l);
        }
        Ok(out)
    }

    /// Sends one request on `repo` (or on no repository) as forq speaks,
    /// waiting out rate limits; an installation token GitHub refuses is
    /// bought again once. Returns the reply's `Link` header and its JSON.
    async fn send(
        &self,
        repo: Option<&str>,
        method: Method,
        url: &str,
        body: Option<&Value>,
    ) -> Result<(Option<String>, Value), GithubError> {
        match (&self.auth, repo) {
            (Auth::Anonymous, _) => self.exchange(None, method, url, body).await,
            (Auth::Token(t), _) => self.exchange(Some(t), method, url, body).await,
            (Auth::App(app), None) => {
                let jwt = app.key.jwt()?;
                self.exchange(Some(&jwt), method, url, body).await
            }
            (Auth::App(app), Some(repo)) => {
                let token = self.installation_token(app, repo).await?;
                match self.exchange(Some(&token), method.clone(), url, body).await {
                    Err(GithubError::Status { status: 401, .. }) => {
                        // Expired or revoked before its time: buy another.
                        if let Some(id) = app.installation(repo) {
                            app.drop_token(id);
                        }
                        tracing::info!(
                            repo,
                            "GitHub refused the installation token: buying another"
                        );
                        let token = self.installation_token(app, repo).await?;
                        self.exchange(Some(&token), method, url, body).await
                    }
                    other => other,
                }
            }
        }
    }

    /// Sends one request with `bearer`, waiting out rate limits.
    async fn exchange(
        &self,
        bearer: Option<&str>,
        method: Method,
        url: &str,
        body: Option<&Value>,
    ) -> Result<(Option<String>, Value), GithubError> {
        let mut secondary = self.secondary_wait;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut req = self
                .http
                .request(method.clone(), url)
                .header("Accept", "application/vnd.github+json")
                .header("X-GitHub-Api-Version", "2022-11-28");
            if let Some(token) = bearer {
                req = req.bearer_auth(token);
            }
            if let Some(body) = body {
                req = req.json(body);
            }
            let reply = req.send().await.map_err(|e| GithubError::Unreachable {
                url: url.to_owned(),
                message: e.to_string(),
            })?;
            let status = reply.status();
            let headers = reply.headers().clone();
            let header = |name: &str| {
                headers
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned)
            };
            let link = header("link");
            let plain = header("content-type").is_some_and(|t| t.starts_with("text/plain"));
            let text = reply.text().await.unwrap_or_default();
            if status.is_success() {
                // A plain-text reply (a job's log) comes back as a string.
                if plain {
                    return Ok((link, Value::String(text)));
                }
                let json = if text.trim().is_empty() {
                    Value::Null
                } else {
                    serde_json::from_str(&text).map_err(|e| GithubError::Shape {
                        url: url.to_owned(),
                        message: e.to_string(),
                    })?
                };
                return Ok((link, json));
            }
            let message = serde_json::from_str::<Value>(&text)
                .ok()
                .and_then(|v| v["message"].as_str().map(str::to_owned))
                .unwrap_or_else(|| text.chars().take(200).collect());
            let limited = rate_limit_wait(status, &header, &message, &mut secondary);
            if let Some(wait) = limited.filter(|_| attempt < self.attempts) {
                if wait > self.max_wait {
                    return Err(GithubError::RateLimited {
                        url: url.to_owned(),
                        wait_s: wait.as_secs(),
                        max_s: self.max_wait.as_secs(),
                    });
                }
                tracing::info!(
                    url,
                    wait_s = wait.as_secs_f64(),
                    "GitHub rate limit: waiting"
                );
                tokio::time::sleep(wait).await;
                continue;
            }
            return Err(GithubError::Status {
                method: method.to_string(),
                url: url.to_owned(),
                status: status.as_u16(),
                message,
                hint: hint(status, bearer.is_some()),
            });
        }
    }

    /// Open issues of `repo` (`OWNER/REPO`), oldest first, every page;
    /// with `label`, only those so labelled; pull requests only with
    /// `pulls`; at most `limit`.
    pub async fn list_issues(
        &self,
        repo: &str,
        label: Option<&str>,
        pulls: bool,
        limit: Option<usize>,
    ) -> Result<Vec<GhIssue>, GithubError> {
        let mut url = format!(
            "{}/repos/{repo}/issues?state=open&sort=created&direction=asc&per_page=100",
            self.api
        );
        if let Some(label) = label {
            url.push_str(&format!("&labels={}", encode(label)));
        }
        self.pages(Via::Repo(Some(repo)), url, None, limit, |i: &GhIssue| {
            pulls || !i.is_pull()
        })
        .await
    }

    /// The text of `path` on `repo`'s default branch; `None` when there is
    /// no such file.
    pub async fn file(&self, repo: &str, path: &str) -> Result<Option<String>, GithubError> {
        Ok(self.file_blob(repo, path).await?.map(|(text, _)| text))
    }

    /// The text of `path` on `repo`'s default branch and its blob's sha
    /// (what an update of it names); `None` when there is no such file.
    pub async fn file_blob(
        &self,
        repo: &str,
        path: &str,
    ) -> Result<Option<(String, String)>, GithubError> {
        use base64::Engine as _;
        let url = format!("{}/repos/{repo}/contents/{path}", self.api);
        let json = match self.send(Some(repo), Method::GET, &url, None).await {
            Ok((_, json)) => json,
            Err(GithubError::Status { status: 404, .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        let shape = |message: &str| GithubError::Shape {
            url: url.clone(),
            message: message.to_owned(),
        };
        if json["encoding"] != "base64" {
            return Err(shape("not a file with base64 content"));
        }
        // The API wraps the base64 text in lines.
        let packed: String = json["content"]
            .as_str()
            .unwrap_or_default()
            .split_whitespace()
            .collect();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(packed)
            .map_err(|e| shape(&format!("its content is not base64: {e}")))?;
        let text = String::from_utf8(bytes).map_err(|_| shape("its content is not UTF-8 text"))?;
        let sha = json["sha"].as_str().unwrap_or_default().to_owned();
        Ok(Some((text, sha)))
    }

    /// Makes branch `name` of `repo` at commit `sha`.
    pub async fn create_branch(
        &self,
        repo: &str,
        name: &str,
        sha: &str,
    ) -> Result<(), GithubError> {
        let url = format!("{}/repos/{repo}/git/refs", self.api);
        let body = serde_json::json!({"ref": format!("refs/heads/{name}"), "sha": sha});
        self.send(Some(repo), Method::POST, &url, Some(&body))
            .await
            .map(drop)
    }

    /// The commit branch `name` of `repo` is at.
    pub async fn branch_head(&self, repo: &str, name: &str) -> Result<String, GithubError> {
        let url = format!("{}/repos/{repo}/git/ref/heads/{name}", self.api);
        let (_, json) = self.send(Some(repo), Method::GET, &url, None).await?;
        json["object"]["sha"]
            .as_str()
            .map(str::to_owned)
            .ok_or(GithubError::Shape {
                url,
                message: "no object.sha".to_owned(),
            })
    }

    /// Writes `text` to `path` on branch `branch` of `repo` as one commit
    /// (`blob`: the sha of the file it replaces, `None` for a new file).
    pub async fn put_file(
        &self,
        repo: &str,
        path: &str,
        branch: &str,
        text: &str,
        blob: Option<&str>,
        message: &str,
    ) -> Result<(), GithubError> {
        use base64::Engine as _;
        let url = format!("{}/repos/{repo}/contents/{path}", self.api);
        let mut body = serde_json::json!({
            "message": message,
            "content": base64::engine::general_purpose::STANDARD.encode(text),
            "branch": branch,
        });
        if let Some(sha) = blob {
            body["sha"] = serde_json::json!(sha);
        }
        self.send(Some(repo), Method::PUT, &url, Some(&body))
            .await
            .map(drop)
    }

    /// The issue (or pull request) at `url` ([`issue_ref`]).
    pub async fn issue_at(&self, url: &str) -> Result<GhIssue, GithubError> {
        let (repo, number) =
            issue_ref(url).ok_or_else(|| GithubError::NotAnIssue(url.to_owned()))?;
        self.issue(&repo, number).await
    }

    /// Issue (or pull request) `number` of `repo`.
    pub async fn issue(&self, repo: &str, number: u64) -> Result<GhIssue, GithubError> {
        let url = format!("{}/repos/{repo}/issues/{number}", self.api);
        let (_, json) = self.send(Some(repo), Method::GET, &url, None).await?;
        typed(&url, json)
    }

    /// Whether forq wrote comment `c`: through this App (an installation's
    /// token), or as the account this client's token is. Anyone can write
    /// a comment that looks like forq's; only its author says whose it is.
    pub async fn wrote(&self, c: &GhComment) -> bool {
        match &self.auth {
            Auth::Anonymous => false,
            Auth::App(app) => c
                .performed_via_github_app
                .as_ref()
                .is_some_and(|a| a.id == app.key.id()),
            Auth::Token(_) => {
                let me = self
                    .me
                    .get_or_init(|| async {
                        let url = format!("{}/user", self.api);
                        match self.send(None, Method::GET, &url, None).await {
                            Ok((_, json)) => json["login"].as_str().map(str::to_owned),
                            Err(e) => {
                                tracing::warn!("who forq is on GitHub is unknown: {e}");
                                None
                            }
                        }
                    })
                    .await;
                me.is_some() && c.user.as_ref().map(|u| &u.login) == me.as_ref()
            }
        }
    }

    /// Every comment on issue (or pull request) `number`, oldest first.
    pub async fn comments(&self, repo: &str, number: u64) -> Result<Vec<GhComment>, GithubError> {
        let url = format!(
            "{}/repos/{repo}/issues/{number}/comments?per_page=100",
            self.api
        );
        self.pages(Via::Repo(Some(repo)), url, None, None, |_| true)
            .await
    }

    /// Comments `body` on issue `number`; returns the comment's URL.
    pub async fn comment(
        &self,
        repo: &str,
        number: u64,
        body: &str,
    ) -> Result<String, GithubError> {
        let url = format!("{}/repos/{repo}/issues/{number}/comments", self.api);
        let (_, json) = self
            .send(
                Some(repo),
                Method::POST,
                &url,
                Some(&serde_json::json!({"body": body})),
            )
            .await?;
        Ok(json["html_url"].as_str().unwrap_or_default().to_owned())
    }

    /// Adds `labels` to issue `number`.
    pub async fn add_labels(
        &self,
        repo: &str,
        number: u64,
        labels: &[&str],
    ) -> Result<(), GithubError> {
        let url = format!("{}/repos/{repo}/issues/{number}/labels", self.api);
        self.send(
            Some(repo),
            Method::POST,
            &url,
            Some(&serde_json::json!({"labels": labels})),
        )
        .await
        .map(drop)
    }

    /// Closes issue `number`.
    pub async fn close(&self, repo: &str, number: u64) -> Result<(), GithubError> {
        let url = format!("{}/repos/{repo}/issues/{number}", self.api);
        self.send(
            Some(repo),
            Method::PATCH,
            &url,
            Some(&serde_json::json!({"state": "closed"})),
        )
        .await
        .map(drop)
    }

    /// Opens a pull request from branch `head` into `base`.
    pub async fn open_pull(
        &self,
        repo: &str,
        title: &str,
        head: &str,
        base: &str,
        body: &str,
    ) -> Result<GhPull, GithubError> {
        let url = format!("{}/repos/{repo}/pulls", self.api);
        let (_, json) = self
            .send(
                Some(repo),
                Method::POST,
                &url,
                Some(
                    &serde_json::json!({"title": title, "head": head, "base": base, "body": body}),
                ),
            )
            .await?;
        typed(&url, json)
    }

    /// The repository's default branch.
    pub async fn default_branch(&self, repo: &str) -> Result<String, GithubError> {
        let url = format!("{}/repos/{repo}", self.api);
        let (_, json) = self.send(Some(repo), Method::GET, &url, None).await?;
        json["default_branch"]
            .as_str()
            .map(str::to_owned)
            .ok_or(GithubError::Shape {
                url,
                message: "no default_branch".to_owned(),
            })
    }
}

/// `json` as `T`, or the reply's shape is said to be wrong.
fn typed<T: serde::de::DeserializeOwned>(url: &str, json: Value) -> Result<T, GithubError> {
    serde_json::from_value(json).map_err(|e| GithubError::Shape {
        url: url.to_owned(),
        message: e.to_string(),
    })
}

/// Whom a paged listing is asked as.
#[derive(Clone, Copy)]
enum Via<'a> {
    /// As forq speaks on this repository (or on none: the App itself).
    Repo(Option<&'a str>),
    /// With this installation's token.
    Token(&'a str),
}

/// The `rel="next"` URL of a `Link` header.
/// Whether `url` is on the origin (scheme, host and port) of `api`.
fn same_origin(url: &str, api: &str) -> bool {
    let origin = |u: &str| -> Option<String> {
        let (scheme, rest) = u.split_once("://")?;
        let authority = rest.split(['/', '?', '#']).next()?;
        if authority.contains('@') {
            return None;
        }
        Some(format!(
            "{}://{}",
            scheme.to_ascii_lowercase(),
            authority.to_ascii_lowercase()
        ))
    };
    origin(url).is_some() && origin(url) == origin(api)
}

fn next_link(link: &str) -> Option<String> {
    link.split(',').find_map(|part| {
        let (url, rest) = part.split_once(';')?;
        rest.contains("rel=\"next\"").then(|| {
            url.trim()
                .trim_start_matches('<')
                .trim_end_matches('>')
                .to_owned()
        })
    })
}

/// Percent-encodes a query value.
fn encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// How long to wait when a reply says the rate limit was hit (429, or a
/// 403 that names it): its `Retry-After`, else until the primary limit's
/// reset, else the secondary limit's wait, doubled for the next time.
/// `None`: not a rate limit.
fn rate_limit_wait(
    status: StatusCode,
    header: &dyn Fn(&str) -> Option<String>,
    message: &str,
    secondary: &mut Duration,
) -> Option<Duration> {
    let exhausted = header("x-ratelimit-remaining").as_deref() == Some("0");
    let limited = status == StatusCode::TOO_MANY_REQUESTS
        || (status == StatusCode::FORBIDDEN
            && (header("retry-after").is_some()
                || exhausted
                || message.to_ascii_lowercase().contains("rate limit")));
    if !limited {
        return None;
    }
    if let Some(secs) = header("retry-after").and_then(|v| v.parse().ok()) {
        return Some(Duration::from_secs(secs));
    }
    if exhausted {
        let reset: u64 = header("x-ratelimit-reset")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let now = crate::store::now_ms() / 1000;
        return Some(Duration::from_secs(reset.saturating_sub(now) + 1));
    }
    let wait = *secondary;
    *secondary *= 2;
    Some(wait)
}

/// What to do about a refused call, by its status.
fn hint(status: StatusCode, has_token: bool) -> &'static str {
    match status.as_u16() {
        401 => " (set GITHUB_TOKEN to a valid token)",
        403 | 404 if !has_token => {
            " (set GITHUB_TOKEN: the repository may be private, or the call needs write access)"
        }
        403 => " (the token lacks the permission this call needs)",
        404 => " (check OWNER/REPO and the number)",
        422 => " (GitHub refused the values: see its message)",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_from_every_way_people_write_a_repository() {
        for spec in [
            "forq-dev/forq",
            "https://github.com/forq-dev/forq",
            "https://github.com/forq-dev/forq.git",
            "git@github.com:forq-dev/forq.git",
        ] {
            assert_eq!(repo_slug(spec).expect(spec), "forq-dev/forq");
        }
        assert!(repo_slug("forq").is_err());
        assert!(repo_slug("https://gitlab.com/a/b").is_err());
    }

    #[test]
    fn the_next_link_is_found_among_others() {
        let link = r#"<https://api.github.com/repositories/1/issues?page=3>; rel="next", <https://api.github.com/repositories/1/issues?page=9>; rel="last""#;
        assert_eq!(
            next_link(link).as_deref(),
            Some("https://api.github.com/repositories/1/issues?page=3")
        );
        assert_eq!(next_link(r#"<x>; rel="prev""#), None);
        assert_eq!(encode("good first issue"), "good%20first%20issue");
    }
}
