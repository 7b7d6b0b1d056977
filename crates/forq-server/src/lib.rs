#![doc = include_str!("../README.md")]
#![deny(missing_docs)]
#![recursion_limit = "256"] // the OpenAPI document is one json! literal

pub mod bench;
mod dashboard;
mod previews;
mod publish;
mod repos;
mod webhook;

pub use previews::Previews;

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
use forq_app::store::{Action, Event, Run, State as RunState, Store};
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
    /// GitHub, for a GitHub repository's issues.
    pub github: Github,
    /// Runs at once.
    pub jobs: usize,
    /// Runs at once on one repository.
    pub per_repo: usize,
}

impl Actions {
    /// Runs on `pipeline`, two at a time, one per repository.
    pub fn new(pipeline: Pipeline) -> Self {
        Actions {
            pipeline,
            github: Github::from_env(),
            jobs: 2,
            per_repo: 1,
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
    let app = router(App {
        store,
        goldens,
        actions,
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
    served
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
        .route("/api/repos", get(repos::list))
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

/// Equal in time whatever the first difference (the token check).
fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Whether a request comes from another site: its `Origin` names another
/// host than the one it was sent to, or the browser says so.
fn cross_site(headers: &HeaderMap) -> bool {
    if headers
        .get("sec-fetch-site")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == "cross-site")
    {
        return true;
    }
    let Some(origin) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let origin_host = origin.split_once("://").map_or(origin, |(_, rest)| rest);
    origin == "null" || origin_host != host
}

/// The `Host` values a server bound at `addr` answers to: its address
/// (for loopback also `localhost`), with and without the port, and the
/// operator's `extra` names; `None` (any) for an unspecified address with
/// no names given.
fn allowed_hosts(addr: SocketAddr, extra: &[String]) -> Option<Arc<[String]>> {
    let ip = addr.ip();
    if ip.is_unspecified() && extra.is_empty() {
        return None;
    }
    let port = addr.port();
    let mut names: Vec<String> = extra.iter().map(|h| h.to_ascii_lowercase()).collect();
    if !ip.is_unspecified() {
        names.push(match ip {
            std::net::IpAddr::V4(v4) => v4.to_string(),
            std::net::IpAddr::V6(v6) => format!("[{v6}]"),
        });
    }
    if ip.is_loopback() {
        names.extend(["localhost", "127.0.0.1", "[::1]"].map(str::to_owned));
    }
    let with_ports: Vec<String> = names.iter().map(|n| format!("{n}:{port}")).collect();
    names.extend(with_ports);
    Some(names.into())
}

/// Whether `request`'s `Host` is one this server answers to.
fn host_taken(app: &App, headers: &HeaderMap) -> bool {
    let Some(hosts) = &app.hosts else {
        return true;
    };
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_ascii_lowercase();
    hosts.contains(&host)
}

/// The `Host` this server answers to, the token, and no change from
/// another site.
async fn guard(State(app): State<App>, request: Request, next: Next) -> Response {
    if !host_taken(&app, request.headers()) {
        return ApiError(
            StatusCode::MISDIRECTED_REQUEST,
            "this server does not answer to that Host (a page that rebinds its name to this \
             address is refused); name the host with forq serve --host NAME"
                .to_owned(),
        )
        .into_response();
    }
    // GitHub signs its deliveries instead: it cannot send the token. The
    // dashboard's page and assets hold no data: the page asks for the
    // token and sends it with every call.
    let path = request.uri().path();
    // A preview's URL is its capability (128 random bits, handed out only
    // to a request that carried the token): a browser opens it as is.
    let open = path == "/webhooks/github"
        || path == "/"
        || path.starts_with("/assets/")
        || path.starts_with("/preview/");
    if let (Some(token), false) = (&app.token, open) {
        let given = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or_default();
        if !same(given.as_bytes(), token.as_bytes()) {
            return ApiError(
                StatusCode::UNAUTHORIZED,
                "this server needs its token: send `Authorization: Bearer <token>`".to_owned(),
            )
            .into_response();
        }
    }
    if request.method() != Method::GET
        && request.method() != Method::HEAD
        && cross_site(request.headers())
    {
        return ApiError(
            StatusCode::FORBIDDEN,
            "a change from another site is refused".to_owned(),
        )
        .into_response();
    }
    next.run(request).await
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

#[derive(Debug, Deserialize)]
struct RunsQuery {
    state: Option<String>,
    repo: Option<String>,
    limit: Option<usize>,
}

/// The newest event id when the list was read: a stream from there misses
/// nothing that changed after.
const LAST_EVENT: &str = "x-forq-last-event-id";

async fn list_runs(
    State(app): State<App>,
    Query(q): Query<RunsQuery>,
) -> Result<Response, ApiError> {
    let state = match &q.state {
        Some(name) => Some(RunState::from_name(name).ok_or_else(|| {
            ApiError(
                StatusCode::BAD_REQUEST,
                format!(
                    "unknown state {name:?}: one of {}",
                    RunState::names().collect::<Vec<_>>().join(", ")
                ),
            )
        })?),
        None => None,
    };
    let limit = q.limit.unwrap_or(200).min(10_000);
    let store = app.store.clone();
    let (last, runs) =
        blocking(move || Ok((store.last_event_id()?, store.list(usize::MAX)?))).await?;
    let runs: Vec<Run> = runs
        .into_iter()
        .filter(|r| state.is_none_or(|s| r.state == s))
        .filter(|r| q.repo.as_ref().is_none_or(|repo| &r.repo == repo))
        .take(limit)
        .collect();
    Ok(([(LAST_EVENT, last.to_string())], Json(runs)).into_response())
}

async fn show_run(State(app): State<App>, Path(id): Path<String>) -> Result<Json<Value>, ApiError> {
    let store = app.store.clone();
    let (run, events, triage, review) = blocking(move || {
        let run = store.get(&id)?;
        let triage = store.checkpointed(&run.id, "triaged")?;
        let review = match run.state {
            RunState::NeedsReview => store.checkpointed(&run.id, forq_app::review::PAUSED)?,
            _ => None,
        };
        let events = store.events(&run.id, 0)?;
        Ok((run, events, triage, review))
    })
    .await?;
    Ok(Json(
        json!({"run": run, "events": events, "triage": triage, "review": review}),
    ))
}

#[derive(Debug, Deserialize)]
struct AfterQuery {
    after: Option<u64>,
}

async fn run_events(
    State(app): State<App>,
    Path(id): Path<String>,
    Query(q): Query<AfterQuery>,
) -> Result<Json<Vec<Event>>, ApiError> {
    let store = app.store.clone();
    let after = q.after.unwrap_or(0);
    let events = blocking(move || {
        store.get(&id)?;
        Ok(store
            .events_after(Some(&id), after, 100_000)?
            .into_iter()
            .map(|(_, e)| e)
            .collect())
    })
    .await?;
    Ok(Json(events))
}

/// The state directory the store lives in (`STATE/forq.db`), where runs
/// keep their records and workspaces.
fn state_dir(app: &App) -> std::path::PathBuf {
    app.store
        .path()
        .parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_default()
}

/// Run `id`'s record `name`, or 404 saying it has none yet.
async fn record(app: &App, id: String, name: &'static str) -> Result<Vec<u8>, ApiError> {
    let store = app.store.clone();
    let check = id.clone();
    blocking(move || store.get(&check)).await?;
    let dir = state_dir(app);
    let found = tokio::task::spawn_blocking(move || forq_app::clean::record(&dir, &id, name))
        .await
        .map_err(internal)?
        .map_err(internal)?;
    found.ok_or_else(|| {
        ApiError(
            StatusCode::NOT_FOUND,
            format!("the run has no {name} (yet): it is written when the search ends"),
        )
    })
}

async fn run_patch(State(app): State<App>, Path(id): Path<String>) -> Result<Response, ApiError> {
    let patch = record(&app, id, "fix.patch").await?;
    Ok((
        [(header::CONTENT_TYPE, "text/x-diff; charset=utf-8")],
        patch,
    )
        .into_response())
}

async fn run_tree(State(app): State<App>, Path(id): Path<String>) -> Result<Response, ApiError> {
    let tree = record(&app, id, "tree.json").await?;
    Ok(([(header::CONTENT_TYPE, "application/json")], tree).into_response())
}

async fn run_files(
    State(app): State<App>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let store = app.store.clone();
    let check = id.clone();
    blocking(move || store.get(&check)).await?;
    let dir = state_dir(&app);
    let run = id.clone();
    let files = tokio::task::spawn_blocking(move || forq_app::clean::workspace_files(&dir, &run))
        .await
        .map_err(internal)?
        .ok_or_else(|| {
            ApiError(
                StatusCode::NOT_FOUND,
                "the run has no workspace: removed by `forq runs clean`, or never seeded"
                    .to_owned(),
            )
        })?;
    Ok(Json(json!({"run": id, "files": files})))
}

/// Continues an interrupted run from its last checkpoint, in the
/// background, as `forq runs resume ID` does.
async fn resume_run(
    State(app): State<App>,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<Run>), ApiError> {
    let actions = require_actions(&app)?;
    let store = app.store.clone();
    let run = blocking(move || store.get(&id)).await?;
    if run.state.is_terminal() {
        return Err(ApiError(
            StatusCode::CONFLICT,
            format!(
                "run {} is {} already: there is nothing to resume",
                run.id, run.state
            ),
        ));
    }
    if run.is_live() {
        return Err(ApiError(
            StatusCode::CONFLICT,
            format!(
                "run {} is being driven by process {}: it needs no resuming",
                run.id,
                run.pid.unwrap_or_default()
            ),
        ));
    }
    spawn_runs(actions, vec![run.clone()]);
    Ok((StatusCode::ACCEPTED, Json(run)))
}

/// `POST /api/runs/{id}/approve`: a run paused for review goes on from its
/// checkpoint, in the background.
async fn approve_run(
    State(app): State<App>,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<Run>), ApiError> {
    let actions = require_actions(&app)?;
    let store = app.store.clone();
    let run = tokio::task::spawn_blocking(move || forq_app::review::approve(&store, &id))
        .await
        .map_err(internal)?
        .map_err(reviewed)?;
    spawn_runs(actions, vec![run.clone()]);
    Ok((StatusCode::ACCEPTED, Json(run)))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RejectRequest {
    reason: Option<String>,
}

/// `POST /api/runs/{id}/reject` (`{"reason": …}`): a run paused for review
/// is aborted.
async fn reject_run(
    State(app): State<App>,
    Path(id): Path<String>,
    body: Option<Json<RejectRequest>>,
) -> Result<Json<Run>, ApiError> {
    let reason = body.and_then(|Json(b)| b.reason).unwrap_or_default();
    let store = app.store.clone();
    let run = tokio::task::spawn_blocking(move || forq_app::review::reject(&store, &id, &reason))
        .await
        .map_err(internal)?
        .map_err(reviewed)?;
    Ok(Json(run))
}

fn reviewed(e: forq_app::review::ReviewError) -> ApiError {
    match e {
        forq_app::review::ReviewError::NotPaused { .. } => {
            ApiError(StatusCode::CONFLICT, e.to_string())
        }
        forq_app::review::ReviewError::Store(forq_app::store::StoreError::NotFound(id)) => {
            ApiError(StatusCode::NOT_FOUND, format!("there is no run {id}"))
        }
        e => internal(e),
    }
}

async fn abort_run(State(app): State<App>, Path(id): Path<String>) -> Result<Json<Run>, ApiError> {
    let store = app.store.clone();
    Ok(Json(blocking(move || store.request_abort(&id)).await?))
}

/// What `POST /api/queue` takes.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct QueueRequest {
    /// A directory of Markdown issues.
    issues: Option<std::path::PathBuf>,
    /// One issue's text.
    text: Option<String>,
    /// The repository: a directory, or a GitHub URL.
    repo: Option<String>,
    /// `auto` (default), `fix` or `triage`.
    action: Option<String>,
    /// Only issues with this label.
    label: Option<String>,
    /// At most this many.
    limit: Option<usize>,
    /// Only the issues with these ids.
    ids: Option<Vec<String>>,
    /// `speculative` or `single`, over forq.yml's, for these runs.
    strategy: Option<forq_app::config::Strategy>,
    /// `mutate`, `llm` or `agent`, over forq.yml's, for these runs.
    brancher: Option<forq_app::config::BrancherName>,
    /// Run issues that have a run standing already, again.
    #[serde(default)]
    again: bool,
}

async fn queue_issues(
    State(app): State<App>,
    Json(req): Json<QueueRequest>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let actions = require_actions(&app)?;
    let action = match req.action.as_deref().unwrap_or("auto") {
        "auto" => Action::Auto,
        "fix" => Action::Fix,
        "triage" => Action::Triage,
        other => {
            return Err(ApiError(
                StatusCode::BAD_REQUEST,
                format!("unknown action {other:?}: auto, fix or triage"),
            ))
        }
    };
    let bad = |e: QueueError| match e {
        QueueError::Store(e) => internal(e),
        e => ApiError(StatusCode::BAD_REQUEST, e.to_string()),
    };
    let selection = Selection {
        label: req.label,
        limit: if req.ids.is_some() { None } else { req.limit },
        action,
        context: Vec::new(),
    };
    let mut new = match Source::from_request(req.issues, req.text, req.repo) {
        Ok(source) => queue::select(&source, &selection, &actions.github)
            .await
            .map_err(bad)?,
        // A local repository alone: its issues from the configured sources.
        Err(QueueError::NoIssues { repo: Some(repo) }) if !app.sources.is_empty() => {
            let (found, _) = repos::source_issues(&app).await;
            let label = selection.label.as_ref();
            let mut new: Vec<_> = found
                .into_iter()
                .filter(|n| n.repo == repo && label.is_none_or(|l| n.issue.labels.contains(l)))
                .collect();
            if new.is_empty() {
                return Err(ApiError(
                    StatusCode::BAD_REQUEST,
                    format!("no configured source holds issues of {repo}: name its issues (a directory of Markdown issues, or an issue's text)"),
                ));
            }
            for n in &mut new {
                n.action = action;
            }
            new
        }
        Err(e) => return Err(bad(e)),
    };
    if let Some(ids) = &req.ids {
        new.retain(|n| ids.contains(&n.issue.id));
        if new.is_empty() {
            return Err(ApiError(
                StatusCode::BAD_REQUEST,
                format!("none of the issues {ids:?} is in that source"),
            ));
        }
    }
    if req.brancher == Some(forq_app::config::BrancherName::Patches) {
        return Err(ApiError(
            StatusCode::BAD_REQUEST,
            "brancher patches takes candidate files, which a queued run is not given: use mutate, llm or agent".to_owned(),
        ));
    }
    let fix = FixChoice {
        strategy: req.strategy,
        brancher: req.brancher,
    };
    let (runs, standing) = start(&app, actions, new, req.again, fix).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({"runs": runs, "standing": standing})),
    ))
}

/// Records `new` as runs (but for issues with a run standing, unless
/// `again`) and runs them on `actions` in the background, as `forq queue`
/// does. Returns the runs started and those standing.
pub(crate) async fn start(
    app: &App,
    actions: Actions,
    new: Vec<forq_app::store::NewRun>,
    again: bool,
    fix: FixChoice,
) -> Result<(Vec<Run>, Vec<Run>), ApiError> {
    let store = app.store.clone();
    let pipeline = actions.pipeline.clone();
    let (runs, standing) = blocking(move || {
        let (fresh, standing) = if again {
            (new, Vec::new())
        } else {
            queue::split_standing(&store, new)?
        };
        let runs = queue::enqueue(&store, &fresh)?;
        if fix.strategy.is_some() || fix.brancher.is_some() {
            for run in &runs {
                pipeline.request_fix(&run.id, fix.strategy, fix.brancher)?;
            }
        }
        Ok((runs, standing))
    })
    .await?;
    spawn_runs(actions, runs.clone());
    Ok((runs, standing))
}

/// How the runs a request starts look for their fix, over forq.yml's.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct FixChoice {
    strategy: Option<forq_app::config::Strategy>,
    brancher: Option<forq_app::config::BrancherName>,
}

/// The server's actions, or 503 when it was started without a pipeline.
pub(crate) fn require_actions(app: &App) -> Result<Actions, ApiError> {
    app.actions.clone().ok_or_else(|| {
        ApiError(
            StatusCode::SERVICE_UNAVAILABLE,
            "this server was started without a pipeline: it shows runs but starts none".to_owned(),
        )
    })
}

/// Runs (or resumes) `runs` on `actions` in the background, as `forq
/// queue` does.
fn spawn_runs(actions: Actions, runs: Vec<Run>) {
    tokio::spawn(async move {
        let ended = queue::run_spread(
            &actions.pipeline,
            &[],
            &runs,
            actions.jobs,
            actions.per_repo,
        )
        .await;
        for e in ended.into_iter().filter_map(Result::err) {
            tracing::warn!(error = %e, "a run the server started could not be executed");
        }
    });
}

async fn goldens(State(app): State<App>) -> Result<Json<Value>, ApiError> {
    let Some(goldens) = app.goldens.clone() else {
        return Ok(Json(json!([])));
    };
    let list = tokio::task::spawn_blocking(move || goldens.list())
        .await
        .map_err(internal)?
        .map_err(internal)?;
    Ok(Json(json!(list)))
}

/// Where a stream starts: `Last-Event-ID` (a reconnect), else `?after=`.
fn resume_from(headers: &HeaderMap, q: &AfterQuery) -> u64 {
    headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse().ok())
        .or(q.after)
        .unwrap_or(0)
}

async fn run_stream(
    State(app): State<App>,
    Path(id): Path<String>,
    Query(q): Query<AfterQuery>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let store = app.store.clone();
    let check = id.clone();
    blocking(move || store.get(&check)).await?;
    Ok(stream(app, Some(id), resume_from(&headers, &q)))
}

async fn all_stream(
    State(app): State<App>,
    Query(q): Query<AfterQuery>,
    headers: HeaderMap,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    stream(app, None, resume_from(&headers, &q))
}

/// What a stream still has to send.
struct Cursor {
    app: App,
    run: Option<String>,
    after: u64,
    pending: std::collections::VecDeque<(String, Event)>,
    done: bool,
}

/// Events of `run` (or all runs) after store id `after`, as they are
/// written; a run's stream ends once the run has ended and every event of
/// it was sent.
fn stream(
    app: App,
    run: Option<String>,
    after: u64,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    let cursor = Cursor {
        app,
        run,
        after,
        pending: Default::default(),
        done: false,
    };
    let events = futures_util::stream::unfold(cursor, |mut c| async move {
        loop {
            if let Some((run, e)) = c.pending.pop_front() {
                c.after = e.id;
                let data = json!({"run": run, "seq": e.seq, "at_ms": e.at_ms, "kind": e.kind, "data": e.data});
                let sse = SseEvent::default()
                    .id(e.id.to_string())
                    .event(e.kind.clone())
                    .data(data.to_string());
                return Some((Ok(sse), c));
            }
            if c.done {
                return None;
            }
            let (store, run, after) = (c.app.store.clone(), c.run.clone(), c.after);
            let read = tokio::task::spawn_blocking(move || {
                let events = store.events_after(run.as_deref(), after, 500)?;
                // Ended, for a run's stream: nothing more will come.
                let ended = match &run {
                    Some(id) if events.is_empty() => store.get(id)?.state.is_terminal(),
                    _ => false,
                };
                Ok::<_, forq_app::store::StoreError>((events, ended))
            })
            .await;
            match read {
                Ok(Ok((events, ended))) => {
                    if ended {
                        // One last look: events written with the last state.
                        c.done = true;
                    } else if events.is_empty() {
                        tokio::time::sleep(c.app.poll).await;
                    }
                    c.pending.extend(events);
                }
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "a stream cannot read the store");
                    tokio::time::sleep(c.app.poll * 10).await;
                }
                Err(_) => return None,
            }
        }
    });
    Sse::new(events).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}

async fn openapi() -> Json<Value> {
    Json(openapi_document())
}

/// The OpenAPI description of this API.
pub fn openapi_document() -> Value {
    let run_id =
        json!({"name": "id", "in": "path", "required": true, "schema": {"type": "string"}});
    let after = json!({"name": "after", "in": "query", "required": false,
        "description": "a store-wide event id: only events after it", "schema": {"type": "integer"}});
    let json_ok =
        |what: &str| json!({"200": {"description": what, "content": {"application/json": {}}}});
    let sse_ok =
        |what: &str| json!({"200": {"description": what, "content": {"text/event-stream": {}}}});
    json!({
        "openapi": "3.1.0",
        "info": {"title": "forq", "version": env!("CARGO_PKG_VERSION"),
            "description": "forq's control plane: runs, their events live, goldens. Bound beyond loopback, every request needs `Authorization: Bearer <token>`."},
        "components": {"securitySchemes": {"token": {"type": "http", "scheme": "bearer"}}},
        "paths": {
            "/api/runs": {"get": {"summary": "Runs, newest first", "parameters": [
                {"name": "state", "in": "query", "schema": {"type": "string"}},
                {"name": "repo", "in": "query", "schema": {"type": "string"}},
                {"name": "limit", "in": "query", "schema": {"type": "integer", "default": 200}}],
                "responses": {"200": {"description": "the runs; the header x-forq-last-event-id is the newest event id when they were read (stream from there to miss nothing)",
                    "content": {"application/json": {}}}}}},
            "/api/runs/{id}": {"get": {"summary": "A run and its events", "parameters": [run_id],
                "responses": json_ok("the run")}},
            "/api/runs/{id}/events": {"get": {"summary": "A run's events after a store id",
                "parameters": [run_id, after], "responses": json_ok("the events")}},
            "/api/runs/{id}/stream": {"get": {"summary": "A run's events as Server-Sent Events; resumes after Last-Event-ID; ends after the run",
                "parameters": [run_id, after], "responses": sse_ok("the events, live")}},
            "/api/runs/{id}/patch": {"get": {"summary": "The run's patch (fix.patch), once the search has ended", "parameters": [run_id],
                "responses": {"200": {"description": "a unified diff", "content": {"text/x-diff": {}}}, "404": {"description": "no patch yet"}}}},
            "/api/runs/{id}/tree": {"get": {"summary": "The run's search tree (tree.json), once the search has ended", "parameters": [run_id],
                "responses": json_ok("the tree")}},
            "/api/runs/{id}/files": {"get": {"summary": "The files of the run's workspace", "parameters": [run_id],
                "responses": json_ok("relative paths, sorted")}},
            "/api/runs/{id}/resume": {"post": {"summary": "Continue an interrupted run from its last checkpoint, in the background", "parameters": [run_id],
                "responses": {"202": {"description": "the run, as it was", "content": {"application/json": {}}},
                    "409": {"description": "over already, or being driven by a live process"}, "503": {"description": "the server was started without a pipeline"}}}},
            "/api/runs/{id}/approve": {"post": {"summary": "Approve a run paused for review (needs_review): it goes on from its checkpoint, in the background", "parameters": [run_id],
                "responses": {"202": {"description": "the run, moving on"}, "409": {"description": "the run is not paused for review"}}}},
            "/api/runs/{id}/reject": {"post": {"summary": "Reject a run paused for review: it is aborted with {\"reason\": …}", "parameters": [run_id],
                "responses": {"200": {"description": "the run, aborted"}, "409": {"description": "the run is not paused for review"}}}},
            "/api/runs/{id}/abort": {"post": {"summary": "Ask a run to stop", "parameters": [run_id],
                "responses": json_ok("the run")}},
            "/api/stream": {"get": {"summary": "Every run's events as Server-Sent Events; resumes after Last-Event-ID",
                "parameters": [after], "responses": sse_ok("the events, live")}},
            "/api/goldens": {"get": {"summary": "The golden environments", "responses": json_ok("the goldens")}},
            "/api/repos": {"get": {"summary": "Every repository a run was made on or a configured source names: its runs counted by state, its open issues, its cost, its golden (ready, broken with reason, syncing)",
                "responses": json_ok("{repos, problems}")}},
            "/api/issues": {"get": {"summary": "A repository's issues from the configured sources, then those only its runs know, each with its latest run",
                "parameters": [{"name": "repo", "in": "query", "required": true, "schema": {"type": "string"}}],
                "responses": json_ok("{repo, name, issues: [{issue, run, queueable}], problems}")}},
            "/api/runs/{id}/preview": {"post": {"summary": "Start a preview of the run's fix: its workspace in a warm sandbox, forq.yml's golden.start serving golden.port in a network of the sandbox's own; answers once ready (golden.health_path when given)",
                "parameters": [run_id],
                "responses": {"201": {"description": "{key, url, run, start, port}: the preview's URL (/preview/KEY/) is its capability", "content": {"application/json": {}}},
                    "409": {"description": "no patch yet, or forq.yml names no preview"}, "502": {"description": "the application ended or was not ready in time"},
                    "503": {"description": "no pipeline, or the backend gives no service network"}}}},
            "/api/runs/{id}/push": {"post": {"summary": "Push the run's branch (never forcing over a commit that is not the run's) and, with pull_request, open a pull request (GITHUB_TOKEN) and tell the issue; as forq push does",
                "parameters": [run_id],
                "requestBody": {"required": false, "content": {"application/json": {"schema": {"type": "object", "additionalProperties": false, "properties": {
                    "remote": {"type": "string", "description": "a remote configured in the run's workspace (default origin) or an https:// or ssh:// URL; never a path on the host"},
                    "pull_request": {"type": "boolean", "default": false},
                    "github": {"type": "string", "description": "OWNER/REPO for the pull request"},
                    "base": {"type": "string", "description": "the branch it goes into (default: the one the run was seeded from)"}}}}}},
                "responses": {"200": {"description": "{run, remote, branch, commit, pull_request?}", "content": {"application/json": {}}},
                    "409": {"description": "no committed patch, or the remote's branch is not the run's"}, "400": {"description": "no remote or GitHub repository to use"}, "502": {"description": "GitHub refused"}}}},
            "/api/runs/{id}/comment": {"post": {"summary": "Comment on the run's GitHub issue: {\"body\": …}", "parameters": [run_id],
                "responses": {"200": {"description": "{run, done}"}, "409": {"description": "the issue is not on GitHub"}}}},
            "/api/runs/{id}/label": {"post": {"summary": "Add labels to the run's GitHub issue: {\"labels\": […]}", "parameters": [run_id],
                "responses": {"200": {"description": "{run, done}"}, "409": {"description": "the issue is not on GitHub"}}}},
            "/api/runs/{id}/close": {"post": {"summary": "Close the run's GitHub issue, after a comment when {\"body\": …} is given", "parameters": [run_id],
                "responses": {"200": {"description": "{run, done}"}, "409": {"description": "the issue is not on GitHub"}}}},
            "/api/previews": {"get": {"summary": "Running previews", "responses": json_ok("[{key, url, run, start, port, started_ms, idle_s}]")}},
            "/api/previews/{key}": {"delete": {"summary": "Stop a preview (its sandbox is gone when this answers)",
                "parameters": [{"name": "key", "in": "path", "required": true, "schema": {"type": "string"}}],
                "responses": {"200": {"description": "stopped"}, "404": {"description": "no such preview"}}}},
            "/preview/{key}/{path}": {"get": {"summary": "The preview's application, relayed (any method); a preview idle longer than the server's limit is stopped", "security": [],
                "parameters": [{"name": "key", "in": "path", "required": true, "schema": {"type": "string"}},
                    {"name": "path", "in": "path", "required": true, "schema": {"type": "string"}}],
                "responses": {"200": {"description": "what the application answers"}, "404": {"description": "no such preview"}, "502": {"description": "the application does not answer"}}}},
            "/": {"get": {"summary": "The dashboard (needs no token itself: it asks for one and sends it with each call)", "security": [],
                "responses": {"200": {"description": "the page", "content": {"text/html": {}}}}}},
            "/api/queue": {"post": {"summary": "Queue issues and run them (as forq queue does): a directory of Markdown issues, a GitHub repository's issues, or one issue's text on a repository",
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "additionalProperties": false, "properties": {
                    "issues": {"type": "string", "description": "a directory of Markdown issues"},
                    "text": {"type": "string", "description": "one issue's text (with repo)"},
                    "repo": {"type": "string", "description": "a directory, or a GitHub repository's URL"},
                    "action": {"type": "string", "enum": ["auto", "fix", "triage"], "default": "auto"},
                    "label": {"type": "string"}, "limit": {"type": "integer"},
                    "strategy": {"type": "string", "enum": ["speculative", "single"], "description": "over forq.yml's, for these runs"},
                    "brancher": {"type": "string", "enum": ["mutate", "llm", "agent"], "description": "over forq.yml's, for these runs"},
                    "ids": {"type": "array", "items": {"type": "string"}, "description": "only these issues; with a local repo alone, picked from the configured sources"},
                    "again": {"type": "boolean", "default": false}}}}}},
                "responses": {"202": {"description": "the runs queued (started in the background) and those standing already", "content": {"application/json": {}}},
                    "400": {"description": "the request names no issues, or a source cannot be read"},
                    "503": {"description": "the server was started without a pipeline"}}}},
            "/openapi.json": {"get": {"summary": "This description", "responses": json_ok("OpenAPI 3.1")}},
            "/webhooks/github": {"post": {"summary": "GitHub deliveries, signed (X-Hub-Signature-256) with the server's webhook secret; a delivery id is acted on once. issues opened/labeled and /forq fix|triage comments by the owner, members or collaborators queue runs; a push to the default branch syncs the golden",
                "security": [],
                "responses": {"200": {"description": "acknowledged: what was done (or why nothing)"}, "202": {"description": "runs queued, or a golden sync started"},
                    "401": {"description": "unsigned or wrongly signed"}, "404": {"description": "the server takes no webhooks"}}}}
        }
    })
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
