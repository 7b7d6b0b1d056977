//! The fleet: the `forq worker` processes that share the store, each with
//! its last heartbeat, what it offers and what it drives.

use axum::extract::State;
use axum::Json;
use forq_app::store::now_ms;
use serde_json::{json, Value};

use crate::{blocking, ApiError, App};

/// A worker not heard from for this long is shown as silent: it died, or
/// its machine is cut off (its runs go to others once their leases end).
const SILENT_MS: u64 = 30_000;

pub(crate) async fn workers(State(app): State<App>) -> Result<Json<Value>, ApiError> {
    let store = app.store.clone();
    let (workers, counts) = blocking(move || Ok((store.workers()?, store.live_counts()?))).await?;
    let now = now_ms();
    let workers: Vec<Value> = workers
        .into_iter()
        .map(|w| {
            let silent = now.saturating_sub(w.heartbeat_ms) > SILENT_MS;
            let mut v = json!(w);
            v["silent"] = json!(silent);
            v["load"] = json!(w.driving.len());
            v
        })
        .collect();
    let live: serde_json::Map<String, Value> = counts
        .into_iter()
        .map(|(state, n)| (state.name().to_owned(), json!(n)))
        .collect();
    Ok(Json(
        json!({"now_ms": now, "workers": workers, "live": live}),
    ))
}
