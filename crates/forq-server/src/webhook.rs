//! `POST /webhooks/github`: GitHub's deliveries, verified and acted on.
//!
//! A delivery must carry `X-Hub-Signature-256`, the HMAC-SHA256 of its body
//! under the configured secret (checked in constant time); anything
//! unsigned or wrongly signed is refused before its body is read as JSON.
//! A delivery seen before does nothing twice: it is known by what the
//! signature covers (the event and a hash of the body, kept in the store),
//! not by `X-GitHub-Delivery`, which the signature does not cover and a
//! replayer could change. Then, by event:
//! - `issues` opened by one of the trusted authors ([`DEFAULT_AUTHORS`], or
//!   the operator's `Control::webhook_authors`), or labeled (only those
//!   with triage rights label): the issue is queued with the action the
//!   repository's forq.yml gives (`auto`);
//! - `issue_comment` created with `/forq fix` or `/forq triage` by a
//!   trusted author: the issue is queued with that action;
//! - anyone else's issue or command queues nothing, and the reply says so
//!   (every run spends the operator's model key);
//! - `issue_comment` with `/forq fix` on a pull request: the pull request
//!   is queued, to be fixed from its head;
//! - `pull_request` opened, synchronize or labeled, and `check_suite` or
//!   `check_run` completed in failure: the pull request is queued when the
//!   repository's forq.yml names that event (`pull_requests.on`) and its
//!   author is trusted (for a label: anyone who may label);
//! - `push` to the repository's default branch: its golden environment is
//!   synced (cloned shallow, proven, saved), in the background;
//! - `installation` and `installation_repositories`: the repositories the
//!   GitHub App may act on are recorded in the store (and forgotten when
//!   removed); when forq speaks as an App, a trigger on a repository no
//!   installation holds is refused, and the reply says why;
//! - `ping` and anything else: acknowledged, nothing done.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use forq_app::config::PullTrigger;
use forq_app::queue::{self, Selection, Source};
use forq_app::store::Action;
use hmac::{Hmac, KeyInit, Mac};
use serde::Deserialize;
use serde_json::{json, Value};
use sha2::Sha256;

use crate::{blocking, ApiError, App};

/// Whether `signature` (`sha256=<hex>`) is `body`'s HMAC-SHA256 under
/// `secret`. The comparison takes the same time wherever it differs.
pub(crate) fn verify(secret: &[u8], body: &[u8], signature: &str) -> bool {
    let Some(hex) = signature.strip_prefix("sha256=") else {
        return false;
    };
    let Some(expected) = decode_hex(hex) else {
        return false;
    };
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret) else {
        return false;
    };
    mac.update(body);
    mac.verify_slice(&expected).is_ok()
}

fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Who may trigger a run unless the operator says otherwise: GitHub's own
/// word (`author_association`) for the author's relation to the repository.
pub(crate) const DEFAULT_AUTHORS: [&str; 3] = ["OWNER", "MEMBER", "COLLABORATOR"];

/// What identifies a delivery for deduplication: the event and the SHA-256
/// of the signed body (which holds the action and the object's id).
fn delivery_key(event: &str, body: &[u8]) -> String {
    use sha2::Digest as _;
    let hash: String = Sha256::digest(body)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("{event}:{hash}")
}

/// Why an author's event queues nothing, or `None` when it may.
fn untrusted(app: &App, who: &str, what: &str) -> Option<String> {
    if app.webhook_authors.iter().any(|a| a == who) {
        return None;
    }
    Some(format!(
        "nothing: {what} are taken from {}, not {} (the operator's --webhook-authors)",
        app.webhook_authors
            .iter()
            .map(|a| a.to_lowercase())
            .collect::<Vec<_>>()
            .join(", "),
        who.to_lowercase()
    ))
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> &'a str {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
}

/// What forq reads of a delivery: the fields its events share, each
/// optional (a `ping` has none of the issue's).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Delivery {
    action: Option<String>,
    repository: Option<Repository>,
    issue: Option<Issue>,
    comment: Option<Comment>,
    /// A push's ref (`refs/heads/main`).
    #[serde(rename = "ref")]
    pushed: Option<String>,
    /// The App installation the delivery is for.
    installation: Option<Installation>,
    /// `installation` created: the repositories it holds.
    repositories: Vec<Named>,
    /// `installation_repositories`: those added.
    repositories_added: Vec<Named>,
    /// `installation_repositories`: those removed.
    repositories_removed: Vec<Named>,
    /// `pull_request`: the pull request.
    pull_request: Option<PullPayload>,
    /// `pull_request` labeled: the label.
    label: Option<Label>,
    /// `check_suite`: the suite.
    check_suite: Option<Checks>,
    /// `check_run`: the run.
    check_run: Option<Checks>,
}

#[derive(Debug, Deserialize)]
struct PullPayload {
    number: u64,
    #[serde(default)]
    author_association: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Label {
    name: String,
}

/// A check suite or check run, as far as forq reads it.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Checks {
    conclusion: Option<String>,
    head_sha: Option<String>,
    /// The pull requests of the same repository with this head (GitHub
    /// leaves out those from forks).
    pull_requests: Vec<Numbered>,
}

#[derive(Debug, Deserialize)]
struct Numbered {
    number: u64,
}

#[derive(Debug, Deserialize)]
struct Installation {
    id: u64,
}

#[derive(Debug, Deserialize)]
struct Named {
    full_name: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Repository {
    full_name: Option<String>,
    clone_url: Option<String>,
    default_branch: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Issue {
    number: u64,
    /// Present when the issue is a pull request.
    #[serde(default)]
    pull_request: Option<Value>,
    /// The author's relation to the repository (`OWNER`, `NONE`, …).
    #[serde(default)]
    author_association: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Comment {
    body: Option<String>,
    author_association: Option<String>,
}

/// A reply to a delivery.
type Reply = Result<(StatusCode, Json<Value>), ApiError>;

pub(crate) async fn github(State(app): State<App>, headers: HeaderMap, body: Bytes) -> Reply {
    let (delivery, event, mut payload) = verified(&app, &headers, &body)?;
    let store = app.store.clone();
    let key = delivery_key(&event, &body);
    let first = blocking(move || store.first_delivery(&key)).await?;
    if !first {
        return Ok((
            StatusCode::OK,
            Json(json!({"delivery": delivery, "done": "nothing: delivered before"})),
        ));
    }
    let repo = payload.repository.take().unwrap_or_default();
    let slug = repo.full_name.clone().unwrap_or_default();
    let clone_url = repo.clone_url.clone().unwrap_or_default();
    let act = payload.action.take().unwrap_or_default();
    let act = act.as_str();
    let ignored = |why: String| {
        Ok((
            StatusCode::OK,
            Json(json!({"delivery": delivery, "done": why})),
        ))
    };
    let trusted = |association: Option<&str>, what: &str| {
        untrusted(&app, association.unwrap_or("NONE"), what)
    };
    if matches!(event.as_str(), "installation" | "installation_repositories") {
        return installation(&app, &delivery, &event, act, payload).await;
    }
    if let Some(why) = not_installed(&app, &slug).await? {
        return ignored(why);
    }
    match (event.as_str(), &payload.issue) {
        ("issues", Some(issue)) if matches!(act, "opened" | "labeled") => {
            // Labeling takes triage rights on GitHub; opening an issue
            // takes none, so its author must be trusted.
            if act == "opened" {
                if let Some(why) = trusted(issue.author_association.as_deref(), "issues") {
                    return ignored(why);
                }
            }
            let source = Source::GithubIssue {
                slug,
                number: issue.number,
                clone_url,
            };
            queue_sources(&app, &delivery, vec![source], Action::Auto).await
        }
        ("issue_comment", Some(issue)) if act == "created" => {
            let comment = payload.comment.unwrap_or_default();
            let text = comment.body.as_deref().unwrap_or_default().trim();
            let action = if text.starts_with("/forq fix") {
                Action::Fix
            } else if text.starts_with("/forq triage") {
                Action::Triage
            } else {
                return ignored("nothing: the comment is no /forq command".to_owned());
            };
            if let Some(why) = trusted(comment.author_association.as_deref(), "/forq commands") {
                return ignored(why);
            }
            let source = match (&issue.pull_request, action) {
                (Some(_), Action::Fix) => Source::GithubPull {
                    slug,
                    number: issue.number,
                    clone_url,
                },
                _ => Source::GithubIssue {
                    slug,
                    number: issue.number,
                    clone_url,
                },
            };
            queue_sources(&app, &delivery, vec![source], action).await
        }
        ("pull_request", _) if matches!(act, "opened" | "synchronize" | "labeled") => {
            let Some(pull) = payload.pull_request.take() else {
                return ignored("nothing: the delivery holds no pull request".to_owned());
            };
            let trigger = match act {
                "opened" => PullTrigger::Opened,
                "synchronize" => PullTrigger::Synchronize,
                _ => PullTrigger::Labeled,
            };
            let config = repo_config(&app, &slug).await?;
            if !config.pull_requests.on.contains(&trigger) {
                return ignored(format!(
                    "nothing: {slug}'s forq.yml does not name {act} in pull_requests.on"
                ));
            }
            if trigger == PullTrigger::Labeled {
                // Labeling takes triage rights on GitHub.
                let name = payload.label.as_ref().map(|l| l.name.as_str());
                if let Some(wanted) = &config.pull_requests.label {
                    if name != Some(wanted.as_str()) {
                        return ignored(format!("nothing: the label is not {wanted}"));
                    }
                }
            } else if let Some(why) = trusted(pull.author_association.as_deref(), "pull requests") {
                return ignored(why);
            }
            let source = Source::GithubPull {
                slug,
                number: pull.number,
                clone_url,
            };
            queue_sources(&app, &delivery, vec![source], Action::Fix).await
        }
        ("check_suite" | "check_run", _) if act == "completed" => {
            let checks = payload
                .check_suite
                .take()
                .or(payload.check_run.take())
                .unwrap_or_default();
            let conclusion = checks.conclusion.as_deref().unwrap_or_default();
            if !matches!(conclusion, "failure" | "timed_out") {
                return ignored(format!("nothing: the checks concluded {conclusion}"));
            }
            let config = repo_config(&app, &slug).await?;
            if !config.pull_requests.on.contains(&PullTrigger::ChecksFailed) {
                return ignored(format!(
                    "nothing: {slug}'s forq.yml does not name checks_failed in pull_requests.on"
                ));
            }
            let mut numbers: Vec<u64> = checks.pull_requests.iter().map(|p| p.number).collect();
            if numbers.is_empty() {
                if let Some(sha) = &checks.head_sha {
                    numbers = app.github.pulls_at(&slug, sha).await.map_err(gateway)?;
                }
            }
            if numbers.is_empty() {
                return ignored("nothing: the checks ran on no open pull request".to_owned());
            }
            let mut sources = Vec::new();
            let mut refused = Vec::new();
            for number in numbers {
                let pull = app.github.pull(&slug, number).await.map_err(gateway)?;
                match trusted(pull.author_association.as_deref(), "pull requests") {
                    Some(why) => refused.push(format!("#{number}: {why}")),
                    None => sources.push(Source::GithubPull {
                        slug: slug.clone(),
                        number,
                        clone_url: clone_url.clone(),
                    }),
                }
            }
            if sources.is_empty() {
                return ignored(refused.join("; "));
            }
            queue_sources(&app, &delivery, sources, Action::Fix).await
        }
        ("push", _) => {
            let branch = repo.default_branch.as_deref().unwrap_or_default();
            let pushed = payload.pushed.as_deref().unwrap_or_default();
            if branch.is_empty() || pushed != format!("refs/heads/{branch}") {
                return ignored(format!("nothing: {pushed} is not the tracked branch"));
            }
            sync_golden(&app, &delivery, &slug, clone_url)
        }
        _ => ignored(format!("nothing: {event} {act} is not acted on")),
    }
}

/// Keeps the store's list of the repositories the App's installations
/// hold, and the client's cache of them, as GitHub tells.
async fn installation(
    app: &App,
    delivery: &str,
    event: &str,
    act: &str,
    payload: Delivery,
) -> Reply {
    let Some(id) = payload.installation.as_ref().map(|i| i.id) else {
        return Err(ApiError(
            StatusCode::BAD_REQUEST,
            format!("the {event} delivery names no installation"),
        ));
    };
    let names = |list: Vec<Named>| list.into_iter().map(|n| n.full_name).collect::<Vec<_>>();
    let (added, removed): (Vec<String>, Option<Vec<String>>) = match (event, act) {
        ("installation", "created" | "new_permissions_accepted" | "unsuspend") => {
            (names(payload.repositories), Some(Vec::new()))
        }
        ("installation", "deleted" | "suspend") => (Vec::new(), None),
        ("installation_repositories", "added" | "removed") => (
            names(payload.repositories_added),
            Some(names(payload.repositories_removed)),
        ),
        _ => {
            return Ok((
                StatusCode::OK,
                Json(
                    json!({"delivery": delivery, "done": format!("nothing: {event} {act} is not acted on")}),
                ),
            ))
        }
    };
    let store = app.store.clone();
    let keep = added.clone();
    let gone = blocking(move || {
        store.install_repos(id, &keep)?;
        store.uninstall_repos(id, removed.as_deref())
    })
    .await?;
    for repo in &added {
        app.github.remember(repo, id);
    }
    for repo in &gone {
        app.github.forget(repo);
    }
    Ok((
        StatusCode::OK,
        Json(json!({"delivery": delivery, "installation": id, "added": added, "removed": gone})),
    ))
}

/// Why a trigger on `slug` is refused when forq speaks as a GitHub App
/// and no installation holds it; `None` when it may go on (or forq speaks
/// with a person's token). The store's list answers first; a repository it
/// does not hold is asked of GitHub (a delivery may come before the list
/// is read at start, or after a missed webhook), and recorded.
async fn not_installed(app: &App, slug: &str) -> Result<Option<String>, ApiError> {
    if app.github.app_id().is_none() || slug.is_empty() {
        return Ok(None);
    }
    let store = app.store.clone();
    let repo = slug.to_owned();
    if blocking(move || store.installation_of(&repo))
        .await?
        .is_some()
    {
        return Ok(None);
    }
    match app.github.installation(slug).await {
        Ok(Some(id)) => {
            let store = app.store.clone();
            let repos = vec![slug.to_owned()];
            blocking(move || store.install_repos(id, &repos)).await?;
            Ok(None)
        }
        Ok(None) => Ok(None),
        Err(e @ forq_app::github::GithubError::NotInstalled { .. }) => {
            Ok(Some(format!("refused: {e}")))
        }
        Err(e) => Err(gateway(e)),
    }
}

/// The delivery's id, event and payload, once its signature holds.
fn verified(
    app: &App,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<(String, String, Delivery), ApiError> {
    let Some(secret) = app.webhook_secret.clone() else {
        return Err(ApiError(
            StatusCode::NOT_FOUND,
            "this server takes no webhooks: it was started without a webhook secret".to_owned(),
        ));
    };
    let signature = header(headers, "x-hub-signature-256");
    if !verify(secret.as_bytes(), body, signature) {
        return Err(ApiError(
            StatusCode::UNAUTHORIZED,
            "the delivery is unsigned or its X-Hub-Signature-256 does not match".to_owned(),
        ));
    }
    let delivery = header(headers, "x-github-delivery").to_owned();
    if delivery.is_empty() {
        return Err(ApiError(
            StatusCode::BAD_REQUEST,
            "the delivery has no X-GitHub-Delivery id".to_owned(),
        ));
    }
    let event = header(headers, "x-github-event").to_owned();
    let payload: Delivery = serde_json::from_slice(body).map_err(|e| {
        ApiError(
            StatusCode::BAD_REQUEST,
            format!("the body is not a GitHub delivery: {e}"),
        )
    })?;
    Ok((delivery, event, payload))
}

/// Syncs the golden of the repository at `clone_url` in the background
/// (listed as syncing until it ends).
fn sync_golden(app: &App, delivery: &str, slug: &str, clone_url: String) -> Reply {
    let Some(sync) = app.golden_sync.clone() else {
        return Ok((
            StatusCode::OK,
            Json(json!({"delivery": delivery, "done": "nothing: this server keeps no goldens"})),
        ));
    };
    let url = clone_url;
    let syncing = app.syncing.clone();
    syncing
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .insert(url.clone());
    tokio::spawn(async move {
        let synced = sync(url.clone()).await;
        syncing
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&url);
        if let Err(e) = synced {
            tracing::warn!(repo = %url, error = %e, "the golden sync a push asked for failed");
        }
    });
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({"delivery": delivery, "done": format!("syncing the golden of {slug}")})),
    ))
}

/// A GitHub failure, as the reply to a delivery says it.
fn gateway(e: forq_app::github::GithubError) -> ApiError {
    match e {
        e @ forq_app::github::GithubError::NotInstalled { .. } => {
            ApiError(StatusCode::FORBIDDEN, e.to_string())
        }
        e => ApiError(StatusCode::BAD_GATEWAY, e.to_string()),
    }
}

/// `slug`'s forq.yml, read through the API (the defaults without one).
async fn repo_config(app: &App, slug: &str) -> Result<forq_app::config::Config, ApiError> {
    match queue::github_config(&app.github, slug).await {
        Ok(config) => Ok(config.unwrap_or_default()),
        Err(queue::QueueError::Github(e)) => Err(gateway(e)),
        Err(e) => Err(ApiError(StatusCode::UNPROCESSABLE_ENTITY, e.to_string())),
    }
}

/// Queues the issues and pull requests of `sources` with `action`, and
/// runs them.
async fn queue_sources(app: &App, delivery: &str, sources: Vec<Source>, action: Action) -> Reply {
    let actions = crate::require_actions(app)?;
    let selection = Selection {
        label: None,
        limit: None,
        action,
        context: Vec::new(),
    };
    let mut new = Vec::new();
    for source in &sources {
        new.extend(
            queue::select(source, &selection, &app.github)
                .await
                .map_err(|e| match e {
                    queue::QueueError::Github(e) => gateway(e),
                    e => ApiError(StatusCode::BAD_GATEWAY, e.to_string()),
                })?,
        );
    }
    let (runs, standing) =
        crate::start(app, actions, new, false, crate::FixChoice::default()).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({"delivery": delivery, "runs": runs, "standing": standing})),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_are_checked_against_the_secret() {
        // HMAC-SHA256("secret", "body"), as GitHub would send it.
        let mut mac = Hmac::<Sha256>::new_from_slice(b"secret").unwrap();
        mac.update(b"body");
        let hex: String = mac
            .finalize()
            .into_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert!(verify(b"secret", b"body", &format!("sha256={hex}")));
        assert!(!verify(b"other", b"body", &format!("sha256={hex}")));
        assert!(!verify(b"secret", b"bodx", &format!("sha256={hex}")));
        assert!(!verify(b"secret", b"body", &hex));
        assert!(!verify(b"secret", b"body", "sha256=zz"));
        assert!(!verify(b"secret", b"body", ""));
    }
}
