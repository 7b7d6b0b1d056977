//! Preview environments over HTTP: `POST /api/runs/{id}/preview` starts a
//! run's fix (forq-app's `Pipeline::preview`) and answers its URL,
//! `/preview/{key}/…` relays to it, `GET /api/previews` lists them and
//! `DELETE /api/previews/{key}` stops one. A preview also stops when idle
//! longer than the server's limit, and with the server.
//!
//! The key is 128 random bits: the URL is the capability (a browser opening
//! it cannot send the server's token), made only by a request that had it.
//! A preview is the repository's code: its pages run in an origin of their
//! own (`Content-Security-Policy: sandbox`, no `allow-same-origin`), and
//! what its answers would set on the dashboard's origin (cookies, service
//! workers, cleared site data) is dropped.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Json;
use forq_app::preview::{Preview, PreviewError};
use serde_json::{json, Value};

use crate::{blocking, internal, require_actions, ApiError, App};

/// The previews a server runs.
#[derive(Debug, Default)]
pub struct Previews {
    running: Mutex<HashMap<String, Entry>>,
}

#[derive(Debug, Clone)]
struct Entry {
    preview: Arc<Preview>,
    run: String,
    started_ms: u64,
}

impl Previews {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.running
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn get(&self, key: &str) -> Option<Arc<Preview>> {
        self.lock().get(key).map(|e| e.preview.clone())
    }

    /// Stops every preview and waits until their sandboxes are gone.
    pub async fn stop_all(&self) {
        let all: Vec<Entry> = self.lock().drain().map(|(_, e)| e).collect();
        for e in all {
            e.preview.stopped().await;
        }
    }

    /// Stops the previews idle for longer than `idle`, or whose command
    /// ended; returns how many.
    pub(crate) async fn reap(&self, idle: Duration) -> usize {
        let gone: Vec<Entry> = {
            let mut map = self.lock();
            let keys: Vec<String> = map
                .iter()
                .filter(|(_, e)| e.preview.idle() > idle || e.preview.ended().is_some())
                .map(|(k, _)| k.clone())
                .collect();
            keys.iter().filter_map(|k| map.remove(k)).collect()
        };
        let n = gone.len();
        for e in gone {
            tracing::info!(run = %e.run, "a preview stopped: idle or ended");
            e.preview.stopped().await;
        }
        n
    }
}

/// 128 random bits, hex.
fn key() -> std::io::Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn describe(key: &str, e: &Entry) -> Value {
    let spec = e.preview.spec();
    json!({
        "key": key,
        "url": format!("/preview/{key}/"),
        "run": e.run,
        "start": spec.start,
        "port": spec.port,
        "started_ms": e.started_ms,
        "idle_s": e.preview.idle().as_secs(),
    })
}

/// `POST /api/runs/{id}/preview`: starts the run's fix and waits until it
/// serves; 201 with its URL.
pub(crate) async fn start(
    State(app): State<App>,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let actions = require_actions(&app)?;
    let store = app.store.clone();
    let run = blocking(move || store.get(&id)).await?;
    let preview = actions.pipeline.preview(&run).await.map_err(|e| {
        let status = match e {
            PreviewError::NotConfigured | PreviewError::NoPatch { .. } => StatusCode::CONFLICT,
            PreviewError::Exited { .. } | PreviewError::NotReady { .. } => StatusCode::BAD_GATEWAY,
            _ => StatusCode::SERVICE_UNAVAILABLE,
        };
        ApiError(status, e.to_string())
    })?;
    let key = key().map_err(internal)?;
    let entry = Entry {
        preview,
        run: run.id.to_string(),
        started_ms: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64),
    };
    let body = describe(&key, &entry);
    app.previews.lock().insert(key, entry);
    Ok((StatusCode::CREATED, Json(body)))
}

/// `GET /api/previews`.
pub(crate) async fn list(State(app): State<App>) -> Json<Value> {
    let map = app.previews.lock();
    let mut all: Vec<Value> = map.iter().map(|(k, e)| describe(k, e)).collect();
    all.sort_by_key(|v| v["started_ms"].as_u64());
    Json(json!(all))
}

/// `DELETE /api/previews/{key}`: stops it; its sandbox is gone when this
/// answers.
pub(crate) async fn stop(
    State(app): State<App>,
    Path(key): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let entry = app.previews.lock().remove(&key).ok_or_else(|| gone(&key))?;
    entry.preview.stopped().await;
    Ok(Json(json!({"stopped": key, "run": entry.run})))
}

fn gone(key: &str) -> ApiError {
    ApiError(
        StatusCode::NOT_FOUND,
        format!("there is no preview {key}: stopped, idle too long, or never started"),
    )
}

/// `/preview/{key}`: the same with a slash, so relative links resolve.
pub(crate) async fn slash(Path(key): Path<String>) -> Redirect {
    Redirect::permanent(&format!("/preview/{key}/"))
}

/// `/preview/{key}/`: the application's root.
pub(crate) async fn relay_root(
    State(app): State<App>,
    Path(key): Path<String>,
    request: Request,
) -> Result<Response, ApiError> {
    relay(&app, &key, "", request).await
}

/// `/preview/{key}/{*rest}`: the application's `/rest`.
pub(crate) async fn relay_path(
    State(app): State<App>,
    Path((key, rest)): Path<(String, String)>,
    request: Request,
) -> Result<Response, ApiError> {
    relay(&app, &key, &rest, request).await
}

/// Relays `request` to the preview's application as `/rest` (query kept),
/// over one connection made in its network.
async fn relay(app: &App, key: &str, rest: &str, request: Request) -> Result<Response, ApiError> {
    let preview = app.previews.get(key).ok_or_else(|| gone(key))?;
    let bad = |what: &str, e: &dyn std::fmt::Display| {
        ApiError(
            StatusCode::BAD_GATEWAY,
            format!("the preview's application {what}: {e}"),
        )
    };
    let stream = preview
        .connect()
        .await
        .map_err(|e| bad("does not answer", &e))?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .map_err(|e| bad("does not speak HTTP", &e))?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    let (mut parts, body) = request.into_parts();
    let path = match parts.uri.query() {
        Some(q) => format!("/{rest}?{q}"),
        None => format!("/{rest}"),
    };
    parts.uri = path.parse::<Uri>().map_err(internal)?;
    let port = preview.spec().port;
    let host = HeaderValue::from_str(&format!("127.0.0.1:{port}")).map_err(internal)?;
    parts.headers.insert(header::HOST, host);
    // The server's token is the server's: never the application's.
    parts.headers.remove(header::AUTHORIZATION);
    if let Ok(prefix) = HeaderValue::from_str(&format!("/preview/{key}")) {
        parts.headers.insert("x-forwarded-prefix", prefix);
    }
    let mut answer = sender
        .send_request(Request::from_parts(parts, body))
        .await
        .map_err(|e| bad("failed the request", &e))?;
    confine_answer(answer.headers_mut());
    Ok(answer.map(Body::new).into_response())
}

/// What a preview's application may not say to the browser: it is the
/// repository's code, served on the dashboard's own host.
const DROPPED_HEADERS: [&str; 5] = [
    "set-cookie",
    "set-cookie2",
    "service-worker-allowed",
    "clear-site-data",
    "strict-transport-security",
];

/// The policy every preview page runs under: `sandbox` without
/// `allow-same-origin` gives the page an opaque origin of its own, so its
/// scripts cannot read the dashboard's storage (the token), and whatever
/// they send to the API is cross-site (refused for changes, and without the
/// token for reads). Scripts, forms and popups still work: it is an
/// application.
const PREVIEW_CSP: &str = "sandbox allow-scripts allow-forms allow-popups allow-modals";

/// Strips from a preview's answer what would act on the dashboard's origin
/// (cookies, service workers, cleared storage), and gives the page an
/// origin of its own ([`PREVIEW_CSP`]). The application's own policy, if
/// any, still applies beside it (browsers enforce every policy given).
fn confine_answer(headers: &mut axum::http::HeaderMap) {
    for name in DROPPED_HEADERS {
        headers.remove(name);
    }
    headers.append(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(PREVIEW_CSP),
    );
}
