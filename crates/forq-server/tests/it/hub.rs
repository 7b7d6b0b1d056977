//! A GitHub-shaped REST API on loopback, with state: a GitHub App whose
//! JWTs it verifies (RS256, against the App's public key), installations
//! that hold repositories, installation tokens that expire or are revoked,
//! issues listed in pages, comments and labels, pull requests, check runs
//! and statuses, and a rate limit that answers once. Every call is logged
//! as GitHub would see it (method, path, who).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{HeaderMap, Method, Uri};
use serde_json::{json, Value};

/// A GitHub App's key pair, made by openssl as GitHub hands them out
/// (PKCS#1 PEM).
pub(crate) struct AppKeys {
    pub(crate) public_pem: Vec<u8>,
    pub(crate) file: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

pub(crate) async fn app_keys() -> AppKeys {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("app.pem");
    let public = dir.path().join("app.pub");
    for args in [
        vec![
            "genrsa",
            "-traditional",
            "-out",
            key.to_str().unwrap(),
            "2048",
        ],
        vec![
            "rsa",
            "-in",
            key.to_str().unwrap(),
            "-pubout",
            "-out",
            public.to_str().unwrap(),
        ],
    ] {
        let out = forq_sandbox::host_command("openssl")
            .args(&args)
            .output()
            .await
            .expect("openssl is installed (.ci/run installs it)");
        assert!(out.status.success(), "{args:?}: {out:?}");
    }
    AppKeys {
        public_pem: std::fs::read(&public).unwrap(),
        file: key,
        _dir: dir,
    }
}

/// One call as the hub saw it.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    pub(crate) method: String,
    pub(crate) path: String,
    /// `jwt`, `token:ID` (an installation's), `pat`, `none`, or `bad`.
    pub(crate) who: String,
    pub(crate) status: u16,
    pub(crate) body: Value,
}

#[derive(Default)]
pub(crate) struct State {
    pub(crate) app_id: u64,
    public_pem: Vec<u8>,
    /// Installation id → the repositories it holds.
    pub(crate) installations: BTreeMap<u64, Vec<String>>,
    /// Token → (installation, expires at, revoked).
    /// Token → (installation, expires at, revoked, the repositories (by
    /// name) it is scoped to, empty: all the installation's).
    tokens: HashMap<String, (u64, jiff::Timestamp, bool, Vec<String>)>,
    /// How long a new token says it lives.
    pub(crate) token_ttl: Duration,
    /// Issues by repository and number.
    pub(crate) issues: BTreeMap<(String, u64), Value>,
    /// Comments by repository and number.
    pub(crate) comments: BTreeMap<(String, u64), Vec<Value>>,
    /// Labels by repository and number.
    pub(crate) labels: BTreeMap<(String, u64), Vec<String>>,
    /// Files on the default branch, by repository and path.
    pub(crate) files: BTreeMap<(String, String), String>,
    /// Pull requests by repository and number.
    pub(crate) pulls: BTreeMap<(String, u64), Value>,
    /// Check runs by repository and commit.
    pub(crate) check_runs: BTreeMap<(String, String), Vec<Value>>,
    /// Commit statuses by repository and commit.
    pub(crate) statuses: BTreeMap<(String, String), Vec<Value>>,
    /// Job logs by repository and job id.
    pub(crate) logs: BTreeMap<(String, u64), String>,
    /// Pull requests opened.
    pub(crate) opened: Vec<Value>,
    /// Branches made, by repository and name: their commit.
    pub(crate) refs: BTreeMap<(String, String), String>,
    /// Files written: repository, path, branch, text, the blob replaced.
    pub(crate) puts: Vec<Value>,
    /// Answer the next list request with a spent rate limit.
    pub(crate) limit_next_list: bool,
    /// Items per page of a list.
    pub(crate) per_page: usize,
    /// Where `Link` headers say the next page is (default: the hub).
    pub(crate) link_base: Option<String>,
    pub(crate) calls: Vec<Call>,
    next_id: u64,
}

/// The hub: its URL and its state.
#[derive(Clone)]
pub(crate) struct Hub {
    pub(crate) url: String,
    pub(crate) state: Arc<Mutex<State>>,
}

impl Hub {
    /// A hub for App `app_id` (its public key `public_pem`) whose
    /// installations hold `installations`.
    pub(crate) async fn start(
        app_id: u64,
        public_pem: &[u8],
        installations: &[(u64, &[&str])],
    ) -> Hub {
        let state = Arc::new(Mutex::new(State {
            app_id,
            public_pem: public_pem.to_owned(),
            installations: installations
                .iter()
                .map(|(id, repos)| (*id, repos.iter().map(|r| (*r).to_owned()).collect()))
                .collect(),
            token_ttl: Duration::from_secs(3600),
            per_page: 2,
            next_id: 1000,
            ..State::default()
        }));
        let shared = state.clone();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let base = url.clone();
        let app = axum::Router::new().fallback(
            move |method: Method, uri: Uri, headers: HeaderMap, body: axum::body::Bytes| {
                let state = shared.clone();
                let base = base.clone();
                async move {
                    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    let mut s = state.lock().unwrap();
                    let who = s.who(&headers);
                    let (status, headers, reply) = s.answer(&base, &method, &uri, &who, &body);
                    s.calls.push(Call {
                        method: method.to_string(),
                        path: uri.path().to_owned(),
                        who,
                        status,
                        body,
                    });
                    // A job's log is plain text, as GitHub serves it.
                    let (kind, text) = match reply {
                        Value::String(log) if status == 200 => ("text/plain; charset=utf-8", log),
                        reply => ("application/json", reply.to_string()),
                    };
                    let mut response = axum::response::Response::builder()
                        .status(status)
                        .header("content-type", kind);
                    for (k, v) in headers {
                        response = response.header(k, v);
                    }
                    response.body(axum::body::Body::from(text)).unwrap()
                }
            },
        );
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Hub { url, state }
    }

    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap()
    }

    /// Every token given so far stops working (as an expired one does).
    pub(crate) fn revoke_tokens(&self) {
        for t in self.lock().tokens.values_mut() {
            t.2 = true;
        }
    }

    /// Calls matching `method` and a path ending in `suffix`.
    pub(crate) fn calls(&self, method: &str, suffix: &str) -> Vec<Call> {
        self.lock()
            .calls
            .iter()
            .filter(|c| c.method == method && c.path.ends_with(suffix))
            .cloned()
            .collect()
    }
}

type Answer = (u16, Vec<(&'static str, String)>, Value);

fn not_found() -> Answer {
    (404, vec![], json!({"message": "Not Found"}))
}

impl State {
    /// Who a request speaks as.
    fn who(&self, headers: &HeaderMap) -> String {
        let Some(bearer) = headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
        else {
            return "none".to_owned();
        };
        if bearer.matches('.').count() == 2 {
            let key = jsonwebtoken::DecodingKey::from_rsa_pem(&self.public_pem).unwrap();
            let mut check = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::RS256);
            check.set_required_spec_claims(&["exp", "iat", "iss"]);
            check.set_issuer(&[self.app_id.to_string()]);
            return match jsonwebtoken::decode::<Value>(bearer, &key, &check) {
                Ok(data)
                    if data.claims["exp"].as_i64().unwrap()
                        - data.claims["iat"].as_i64().unwrap()
                        <= 600 =>
                {
                    "jwt".to_owned()
                }
                _ => "bad".to_owned(),
            };
        }
        match self.tokens.get(bearer) {
            Some((id, expires, revoked, scope))
                if !revoked && *expires > jiff::Timestamp::now() =>
            {
                match scope.is_empty() {
                    true => format!("token:{id}"),
                    false => format!("token:{id}:{}", scope.join(",")),
                }
            }
            Some(_) => "expired".to_owned(),
            None if bearer == "pat" => "pat".to_owned(),
            None => "bad".to_owned(),
        }
    }

    /// Whether `who` may read and write `repo`.
    fn may(&self, who: &str, repo: &str) -> bool {
        match who.strip_prefix("token:") {
            Some(token) => {
                let (id, scope) = token.split_once(':').unwrap_or((token, ""));
                let name = repo.rsplit('/').next().unwrap_or(repo);
                self.installations
                    .get(&id.parse().unwrap())
                    .is_some_and(|repos| repos.iter().any(|r| r.eq_ignore_ascii_case(repo)))
                    && (scope.is_empty() || scope.split(',').any(|s| s.eq_ignore_ascii_case(name)))
            }
            None => who == "pat",
        }
    }

    fn page(&self, base: &str, uri: &Uri, items: Vec<Value>) -> Answer {
        let page: usize = uri
            .query()
            .unwrap_or_default()
            .split('&')
            .find_map(|kv| kv.strip_prefix("page="))
            .and_then(|p| p.parse().ok())
            .unwrap_or(1);
        let per = self.per_page;
        let base = self.link_base.as_deref().unwrap_or(base);
        let chunk: Vec<Value> = items
            .iter()
            .skip((page - 1) * per)
            .take(per)
            .cloned()
            .collect();
        let mut headers = vec![];
        if items.len() > page * per {
            headers.push((
                "link",
                format!("<{base}{}?page={}>; rel=\"next\"", uri.path(), page + 1),
            ));
        }
        (200, headers, Value::Array(chunk))
    }

    fn answer(
        &mut self,
        base: &str,
        method: &Method,
        uri: &Uri,
        who: &str,
        body: &Value,
    ) -> Answer {
        let path: Vec<&str> = uri.path().trim_matches('/').split('/').collect();
        if who == "expired" || who == "bad" {
            return (401, vec![], json!({"message": "Bad credentials"}));
        }
        match (method.as_str(), path.as_slice()) {
            ("GET", ["user"]) if who == "pat" => (200, vec![], json!({"login": "forq-pat-user"})),
            ("GET", ["app", "installations"]) if who == "jwt" => {
                let list: Vec<Value> = self
                    .installations
                    .keys()
                    .map(|id| json!({"id": id}))
                    .collect();
                self.page(base, uri, list)
            }
            ("POST", ["app", "installations", id, "access_tokens"]) if who == "jwt" => {
                let id: u64 = id.parse().unwrap();
                if !self.installations.contains_key(&id) {
                    return not_found();
                }
                self.next_id += 1;
                let token = format!("ghs_{}_{}", id, self.next_id);
                let ttl = jiff::SignedDuration::try_from(self.token_ttl).unwrap();
                let expires = jiff::Timestamp::now().checked_add(ttl).unwrap();
                let scope: Vec<String> = body["repositories"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|r| r.as_str().map(str::to_owned))
                    .collect();
                self.tokens
                    .insert(token.clone(), (id, expires, false, scope));
                (
                    201,
                    vec![],
                    json!({"token": token, "expires_at": expires.to_string()}),
                )
            }
            ("GET", ["installation", "repositories"]) if who.starts_with("token:") => {
                let id: u64 = who["token:".len()..]
                    .split(':')
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap();
                let repos: Vec<Value> = self.installations[&id]
                    .iter()
                    .map(|r| json!({"full_name": r}))
                    .collect();
                (
                    200,
                    vec![],
                    json!({"total_count": repos.len(), "repositories": repos}),
                )
            }
            ("GET", ["repos", o, r, "installation"]) if who == "jwt" => {
                let repo = format!("{o}/{r}");
                match self
                    .installations
                    .iter()
                    .find(|(_, repos)| repos.iter().any(|x| x.eq_ignore_ascii_case(&repo)))
                {
                    Some((id, _)) => (200, vec![], json!({"id": id})),
                    None => not_found(),
                }
            }
            (_, ["repos", o, r, rest @ ..]) => {
                let repo = format!("{o}/{r}");
                if !self.may(who, &repo) {
                    // GitHub hides what a caller may not see.
                    return not_found();
                }
                self.on_repo(base, method.as_str(), uri, &repo, rest, body, who)
            }
            _ => not_found(),
        }
    }

    #[allow(clippy::too_many_arguments)] // a request, taken apart
    fn on_repo(
        &mut self,
        base: &str,
        method: &str,
        uri: &Uri,
        repo: &str,
        rest: &[&str],
        body: &Value,
        who: &str,
    ) -> Answer {
        let key = |n: &str| (repo.to_owned(), n.parse::<u64>().unwrap());
        match (method, rest) {
            ("GET", []) => (
                200,
                vec![],
                json!({"full_name": repo, "default_branch": "main"}),
            ),
            ("GET", ["issues"]) => {
                if std::mem::take(&mut self.limit_next_list) {
                    let reset = jiff::Timestamp::now().as_second() + 1;
                    return (
                        403,
                        vec![
                            ("x-ratelimit-remaining", "0".to_owned()),
                            ("x-ratelimit-reset", reset.to_string()),
                        ],
                        json!({"message": "API rate limit exceeded"}),
                    );
                }
                let items: Vec<Value> = self
                    .issues
                    .iter()
                    .filter(|((r, _), _)| r == repo)
                    .map(|(_, v)| v.clone())
                    .collect();
                self.page(base, uri, items)
            }
            ("GET", ["issues", n]) => match self.issues.get(&key(n)) {
                Some(v) => (200, vec![], v.clone()),
                None => not_found(),
            },
            ("GET", ["issues", n, "comments"]) => {
                let items = self.comments.get(&key(n)).cloned().unwrap_or_default();
                self.page(base, uri, items)
            }
            ("POST", ["issues", n, "comments"]) => {
                self.next_id += 1;
                // As GitHub names a comment's author: an installation's
                // token writes as the App's bot, through the App.
                let (user, app) = match who.strip_prefix("token:") {
                    Some(_) => (json!({"login": "forq[bot]"}), json!({"id": self.app_id})),
                    None if who == "pat" => (json!({"login": "forq-pat-user"}), Value::Null),
                    None => (json!({"login": who}), Value::Null),
                };
                let comment = json!({
                    "id": self.next_id,
                    "body": body["body"],
                    "html_url": format!("https://github.com/{repo}/issues/{n}#issuecomment-{}", self.next_id),
                    "user": user,
                    "performed_via_github_app": app,
                });
                self.comments
                    .entry(key(n))
                    .or_default()
                    .push(comment.clone());
                (201, vec![], comment)
            }
            ("POST", ["issues", n, "labels"]) => {
                let labels = self.labels.entry(key(n)).or_default();
                for l in body["labels"].as_array().into_iter().flatten() {
                    let l = l.as_str().unwrap().to_owned();
                    if !labels.contains(&l) {
                        labels.push(l);
                    }
                }
                let out: Vec<Value> = labels.iter().map(|l| json!({"name": l})).collect();
                (200, vec![], Value::Array(out))
            }
            ("PATCH", ["issues", n]) => match self.issues.get_mut(&key(n)) {
                Some(issue) => {
                    if let Some(state) = body.get("state") {
                        issue["state"] = state.clone();
                    }
                    (200, vec![], issue.clone())
                }
                None => not_found(),
            },
            ("GET", ["contents", file @ ..]) => {
                use base64::Engine as _;
                match self.files.get(&(repo.to_owned(), file.join("/"))) {
                    Some(text) => (
                        200,
                        vec![],
                        json!({"encoding": "base64", "sha": format!("blob-{}", text.len()),
                            "content": base64::engine::general_purpose::STANDARD.encode(text)}),
                    ),
                    None => not_found(),
                }
            }
            ("GET", ["git", "ref", "heads", name @ ..]) => (
                200,
                vec![],
                json!({"object": {"sha": format!("head-of-{}", name.join("/"))}}),
            ),
            ("POST", ["git", "refs"]) => {
                let name = body["ref"]
                    .as_str()
                    .unwrap()
                    .trim_start_matches("refs/heads/")
                    .to_owned();
                self.refs.insert(
                    (repo.to_owned(), name),
                    body["sha"].as_str().unwrap().to_owned(),
                );
                (201, vec![], body.clone())
            }
            ("PUT", ["contents", file @ ..]) => {
                use base64::Engine as _;
                let text = base64::engine::general_purpose::STANDARD
                    .decode(body["content"].as_str().unwrap())
                    .unwrap();
                self.puts.push(json!({"repo": repo, "path": file.join("/"), "branch": body["branch"],
                    "text": String::from_utf8(text).unwrap(), "replaces": body["sha"], "message": body["message"]}));
                (200, vec![], json!({"content": {}}))
            }
            ("GET", ["pulls"]) => {
                let items: Vec<Value> = self
                    .pulls
                    .iter()
                    .filter(|((r, _), _)| r == repo)
                    .map(|(_, v)| v.clone())
                    .collect();
                self.page(base, uri, items)
            }
            ("GET", ["pulls", n]) => match self.pulls.get(&key(n)) {
                Some(v) => (200, vec![], v.clone()),
                None => not_found(),
            },
            ("POST", ["pulls"]) => {
                self.next_id += 1;
                let pull = json!({
                    "number": self.next_id,
                    "html_url": format!("https://github.com/{repo}/pull/{}", self.next_id),
                    "head": body["head"], "base": body["base"], "title": body["title"], "body": body["body"],
                });
                self.opened.push(json!({"repo": repo, "pull": pull}));
                (201, vec![], pull)
            }
            ("GET", ["commits", sha, "check-runs"]) => {
                let runs = self
                    .check_runs
                    .get(&(repo.to_owned(), (*sha).to_owned()))
                    .cloned()
                    .unwrap_or_default();
                (
                    200,
                    vec![],
                    json!({"total_count": runs.len(), "check_runs": runs}),
                )
            }
            ("GET", ["commits", sha, "status"]) => {
                let statuses = self
                    .statuses
                    .get(&(repo.to_owned(), (*sha).to_owned()))
                    .cloned()
                    .unwrap_or_default();
                (200, vec![], json!({"sha": sha, "statuses": statuses}))
            }
            ("GET", ["actions", "jobs", id, "logs"]) => match self.logs.get(&key(id)) {
                Some(text) => (200, vec![], Value::String(text.clone())),
                None => not_found(),
            },
            _ => not_found(),
        }
    }
}

/// Delivers webhook `event` with `body` to `hook`, signed with the tests'
/// secret (`hook-secret`); the reply's status and JSON.
pub(crate) async fn deliver(hook: &str, event: &str, body: Value) -> (u16, Value) {
    let body = body.to_string();
    let reply = reqwest::Client::new()
        .post(hook)
        .header("x-github-event", event)
        .header("x-github-delivery", format!("d-{}", body.len()))
        .header(
            "x-hub-signature-256",
            super::webhooks::sign("hook-secret", body.as_bytes()),
        )
        .body(body)
        .send()
        .await
        .unwrap();
    let status = reply.status().as_u16();
    (status, reply.json().await.unwrap())
}
