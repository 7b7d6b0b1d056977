#![doc = include_str!("../README.md")]
#![deny(missing_docs)]
#![recursion_limit = "256"] // the OpenAPI document is one json! literal

pub mod bench;
mod dashboard;
mod enqueue;
mod fleet;
mod guard;
mod openapi;
mod previews;
mod publish;
mod repos;
mod runs;
mod streams;
mod trusted;
mod webhook;

pub use openapi::openapi_document;
pub use previews::Previews;

use enqueue::*;
use guard::*;
use openapi::openapi;
use runs::*;
use streams::*;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Query, Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use forq_app::github::Github;
use forq_app::pipeline::Pipeline;
use forq_app::queue::{self, QueueError, Selection, Source};
use forq_app::store::{Action, Run, RunEvent, State as RunState, Store};
use forq_sandbox::Goldens;
use futures_util::Stream;
use serde::Deserialize;
use serde_json::{json, Value};

/// How the server runs.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerOptions {
    /// Where to listen (default `127.0.0.1:7878`).
    pub bind: SocketAddr,
    /// The token every request must carry; required when `bind` is not a
    /// loopback address.
    pub token: Option<String>,
    /// How often streams look for new events in the store (default 100 ms):
    /// other processes write there too.
    pub poll: Duration,
    /// A preview unused this long is stopped (default 15 minutes).
    pub preview_idle: Duration,
    /// Names besides the bound address that requests may carry in `Host`
    /// (`forq.example.com` behind a reverse proxy). A request naming any
    /// other host is refused: a web page that rebinds its own name to
    /// 127.0.0.1 reaches the port, but not with this server's name.
    /// Bound to an unspecified address (`0.0.0.0`), with none given, any
    /// host is taken (the token guards such a server).
    pub hosts: Vec<String>,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            bind: SocketAddr::from(([127, 0, 0, 1], 7878)),
            token: None,
            poll: Duration::from_millis(100),
            preview_idle: Duration::from_secs(15 * 60),
            hosts: Vec::new(),
        }
    }
}

/// Why the server could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// Bound beyond loopback without a token.
    #[error(
        "{bind} is not a loopback address, and a server reachable from elsewhere needs a token"
    )]
    TokenRequired {
        /// The address asked for.
        bind: SocketAddr,
    },
    /// The address could not be bound or served.
    #[error("cannot serve on {bind}")]
    Io {
        /// The address.
        bind: SocketAddr,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

/// What runs the server starts run on: a pipeline (its backend, model,
/// golden policy) and how many at once.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Actions {
    /// The pipeline runs execute on.
    pub pipeline: Pipeline,
    /// Runs at once.
    pub jobs: usize,
    /// Runs at once on one repository.
    pub per_repo: usize,
    /// Whether this server drives the runs it starts (`false`: they are
    /// only recorded, queued, and `forq worker` processes drive them).
    pub drive: bool,
}

impl Actions {
    /// Runs on `pipeline`, two at a time, one per repository, driven by
    /// this server.
    pub fn new(pipeline: Pipeline) -> Self {
        Actions {
            pipeline,
            jobs: 2,
            per_repo: 1,
            drive: true,
        }
    }
}

/// What the server serves: the store, and optionally the goldens and the
/// actions that start runs.
#[derive(Clone)]
pub struct Control {
    store: Arc<Store>,
    goldens: Option<Goldens>,
    actions: Option<Actions>,
    github: Github,
    webhook_secret: Option<Arc<str>>,
    webhook_authors: Arc<[String]>,
    golden_sync: Option<GoldenSync>,
    sources: Vec<Source>,
    previews: Arc<Previews>,
}

impl std::fmt::Debug for Control {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Control")
            .field("goldens", &self.goldens)
            .field("actions", &self.actions)
            .field("webhooks", &self.webhook_secret.is_some())
            .field("sources", &self.sources)
            .finish()
    }
}

/// Syncs the golden environment of the repository at a clone URL (what a
/// push to its default branch asks for); the caller's `forq golden sync`.
pub type GoldenSync = Arc<
    dyn Fn(
            String,
        )
            -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>> + Send>>
        + Send
        + Sync,
>;

impl Control {
    /// The API over `store`, read-only but for aborting runs.
    pub fn new(store: Arc<Store>) -> Self {
        Control {
            store,
            goldens: None,
            actions: None,
            github: Github::new("https://api.github.com", None),
            webhook_secret: None,
            webhook_authors: webhook::DEFAULT_AUTHORS
                .iter()
                .map(|a| (*a).to_owned())
                .collect(),
            golden_sync: None,
            sources: Vec::new(),
            previews: Arc::default(),
        }
    }

    /// The previews the server will run: stop them all on the way out
    /// ([`Previews::stop_all`]).
    pub fn previews(&self) -> Arc<Previews> {
        self.previews.clone()
    }

    /// Lists this source's issues on the dashboard (`GET /api/repos`,
    /// `GET /api/issues`), where they can be picked and queued by id.
    pub fn source(mut self, source: Source) -> Self {
        self.sources.push(source);
        self
    }

    /// Takes GitHub webhooks signed with `secret` (`POST /webhooks/github`).
    pub fn webhook_secret(mut self, secret: impl Into<String>) -> Self {
        let secret: String = secret.into();
        self.webhook_secret = (!secret.is_empty()).then(|| Arc::from(secret));
        self
    }

    /// Whose issues and `/forq` comments a webhook acts on, by GitHub's
    /// `author_association` (`OWNER`, `MEMBER`, `COLLABORATOR`,
    /// `CONTRIBUTOR`, …); default the owner, members and collaborators.
    /// Anyone else's issue or command queues nothing: each run spends the
    /// operator's model key.
    pub fn webhook_authors<S: Into<String>>(
        mut self,
        authors: impl IntoIterator<Item = S>,
    ) -> Self {
        self.webhook_authors = authors
            .into_iter()
            .map(|a| a.into().to_ascii_uppercase())
            .collect();
        self
    }

    /// Syncs goldens when a push to a repository's default branch arrives.
    pub fn golden_sync(mut self, sync: GoldenSync) -> Self {
        self.golden_sync = Some(sync);
        self
    }

    /// Lists these goldens too.
    pub fn goldens(mut self, goldens: Goldens) -> Self {
        self.goldens = Some(goldens);
        self
    }

    /// Speaks to GitHub as `github` does (a GitHub App's installations, or
    /// a person's token) for issues, pull requests and comments; default:
    /// anonymously, to api.github.com.
    pub fn github(mut self, github: Github) -> Self {
        self.github = github;
        self
    }

    /// Starts runs on request (`POST /api/queue`).
    pub fn actions(mut self, actions: Actions) -> Self {
        self.actions = Some(actions);
        self
    }
}

#[derive(Clone)]
struct App {
    store: Arc<Store>,
    goldens: Option<Goldens>,
    actions: Option<Actions>,
    github: Github,
    webhook_secret: Option<Arc<str>>,
    webhook_authors: Arc<[String]>,
    golden_sync: Option<GoldenSync>,
    sources: Arc<[Source]>,
    previews: Arc<Previews>,
    /// Repositories whose golden is being synced now.
    syncing: Arc<std::sync::Mutex<std::collections::HashSet<String>>>,
    token: Option<Arc<str>>,
    /// The `Host` values taken (`None`: any).
    hosts: Option<Arc<[String]>>,
    poll: Duration,
}

/// Serves the API over `control` until the task is dropped; `ready` is
/// told the address once it listens.
pub async fn serve(
    control: Control,
    options: ServerOptions,
    ready: impl FnOnce(SocketAddr),
) -> Result<(), ServerError> {
    let Control {
        store,
        goldens,
        actions,
        github,
        webhook_secret,
        webhook_authors,
        golden_sync,
        sources,
        previews,
    } = control;
    let bind = options.bind;
    if !bind.ip().is_loopback() && options.token.as_deref().is_none_or(str::is_empty) {
        return Err(ServerError::TokenRequired { bind });
    }
    let listener = tokio::net::TcpListener::bind(bind)
        .await
        .map_err(|source| ServerError::Io { bind, source })?;
    let addr = listener
        .local_addr()
        .map_err(|source| ServerError::Io { bind, source })?;
    ready(addr);
    let (app_github, app_store) = (github.clone(), store.clone());
    let app = router(App {
        store,
        goldens,
        actions,
        github,
        webhook_secret,
        webhook_authors,
        golden_sync,
        sources: sources.into(),
        previews: previews.clone(),
        syncing: Arc::default(),
        token: options.token.map(Arc::from),
        hosts: allowed_hosts(addr, &options.hosts),
        poll: options.poll,
    });
    // As a GitHub App: the repositories its installations hold now (the
    // installation webhooks keep the list from here on).
    let installed = AbortOnDrop(tokio::spawn(sync_installations(
        app_github.clone(),
        app_store.clone(),
    )));
    // Idle previews stop; the reaper goes with the server.
    let idle = options.preview_idle;
    let reaper = AbortOnDrop(tokio::spawn(async move {
        let every = (idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(5));
        loop {
            tokio::time::sleep(every).await;
            previews.reap(idle).await;
        }
    }));
    let served = axum::serve(listener, app)
        .await
        .map_err(|source| ServerError::Io { bind: addr, source });
    drop(reaper);
    drop(installed);
    served
}

/// Records in the store every repository the GitHub App's installations
/// hold (nothing when forq speaks with a token).
async fn sync_installations(github: Github, store: Arc<Store>) {
    if github.app_id().is_none() {
        return;
    }
    match github.installed_repositories().await {
        Ok(found) => {
            let mut by: std::collections::BTreeMap<u64, Vec<String>> = Default::default();
            for (id, repo) in found {
                by.entry(id).or_default().push(repo);
            }
            let recorded = tokio::task::spawn_blocking(move || {
                by.iter()
                    .try_for_each(|(id, repos)| store.install_repos(*id, repos))
            })
            .await;
            if let Ok(Err(e)) = recorded {
                tracing::warn!(error = %e, "could not record the App's repositories");
            }
        }
        Err(e) => tracing::warn!(error = %e, "could not list the GitHub App's installations"),
    }
}

/// A task that ends when this is dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn router(app: App) -> Router {
    Router::new()
        .route("/openapi.json", get(openapi))
        .route("/api/runs", get(list_runs))
        .route("/api/runs/{id}", get(show_run))
        .route("/api/runs/{id}/events", get(run_events))
        .route("/api/runs/{id}/stream", get(run_stream))
        .route("/api/runs/{id}/abort", post(abort_run))
        .route("/api/runs/{id}/resume", post(resume_run))
        .route("/api/runs/{id}/approve", post(approve_run))
        .route("/api/runs/{id}/reject", post(reject_run))
        .route("/api/runs/{id}/patch", get(run_patch))
        .route("/api/runs/{id}/tree", get(run_tree))
        .route("/api/runs/{id}/files", get(run_files))
        .route("/api/stream", get(all_stream))
        .route("/api/queue", post(queue_issues))
        .route("/webhooks/github", post(webhook::github))
        .route("/api/goldens", get(goldens))
        .route("/api/workers", get(fleet::workers))
        .route("/api/repos", get(repos::list))
        .route("/api/trusted", get(trusted::list).post(trusted::change))
        .route("/api/runs/{id}/preview", post(previews::start))
        .route("/api/runs/{id}/push", post(publish::push))
        .route("/api/runs/{id}/comment", post(publish::comment))
        .route("/api/runs/{id}/label", post(publish::label))
        .route("/api/runs/{id}/close", post(publish::close))
        .route("/api/previews", get(previews::list))
        .route("/api/previews/{key}", axum::routing::delete(previews::stop))
        .route("/preview/{key}", axum::routing::any(previews::slash))
        .route("/preview/{key}/", axum::routing::any(previews::relay_root))
        .route(
            "/preview/{key}/{*rest}",
            axum::routing::any(previews::relay_path),
        )
        .route("/api/issues", get(repos::issues))
        .route("/", get(dashboard::index))
        .route("/assets/{file}", get(dashboard::asset))
        .layer(axum::middleware::from_fn_with_state(app.clone(), guard))
        .with_state(app)
}

/// An error as JSON: `{"error": "..."}` with its status.
struct ApiError(StatusCode, String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, Json(json!({"error": self.1}))).into_response()
    }
}

fn internal(e: impl std::fmt::Display) -> ApiError {
    ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
}

/// Runs a store call off the async threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, forq_app::store::StoreError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(internal)?
        .map_err(|e| match e {
            forq_app::store::StoreError::NotFound(id) => {
                ApiError(StatusCode::NOT_FOUND, format!("there is no run {id}"))
            }
            e @ forq_app::store::StoreError::Ambiguous(_) => {
                ApiError(StatusCode::BAD_REQUEST, e.to_string())
            }
            e @ forq_app::store::StoreError::Over { .. } => {
                ApiError(StatusCode::CONFLICT, e.to_string())
            }
            e => internal(e),
        })
}

/// How the runs a request starts look for their fix, over forq.yml's.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct FixChoice {
    strategy: Option<forq_app::config::Strategy>,
    brancher: Option<forq_app::config::BrancherName>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cross_site_changes_are_told_apart() {
        let mut h = HeaderMap::new();
        h.insert(header::HOST, "127.0.0.1:7878".parse().unwrap());
        assert!(!cross_site(&h), "no Origin: a tool, not a page");
        h.insert(header::ORIGIN, "http://127.0.0.1:7878".parse().unwrap());
        assert!(!cross_site(&h));
        h.insert(header::ORIGIN, "https://evil.example".parse().unwrap());
        assert!(cross_site(&h));
        h.insert(header::ORIGIN, "null".parse().unwrap());
        assert!(cross_site(&h));
        let mut h = HeaderMap::new();
        h.insert("sec-fetch-site", "cross-site".parse().unwrap());
        assert!(cross_site(&h));
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd"));
        assert!(!same(b"abc", b"ab"));
    }
}
