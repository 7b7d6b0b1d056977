//! The runs over HTTP: list, show, events, patch, tree, files, and the
//! actions a person takes on one (resume, approve, reject, abort).

#[allow(clippy::wildcard_imports)] // the server's own types and imports
use crate::*;

#[derive(Debug, Deserialize)]
pub(crate) struct RunsQuery {
    pub(crate) state: Option<String>,
    pub(crate) repo: Option<String>,
    pub(crate) limit: Option<usize>,
}

/// The newest event id when the list was read: a stream from there misses
/// nothing that changed after.
pub(crate) const LAST_EVENT: &str = "x-forq-last-event-id";

pub(crate) async fn list_runs(
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

pub(crate) async fn show_run(
    State(app): State<App>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
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
pub(crate) struct AfterQuery {
    pub(crate) after: Option<u64>,
}

pub(crate) async fn run_events(
    State(app): State<App>,
    Path(id): Path<String>,
    Query(q): Query<AfterQuery>,
) -> Result<Json<Vec<RunEvent>>, ApiError> {
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
pub(crate) fn state_dir(app: &App) -> std::path::PathBuf {
    app.store
        .path()
        .and_then(std::path::Path::parent)
        .map(std::path::Path::to_path_buf)
        .or_else(|| {
            app.actions
                .as_ref()
                .map(|a| a.pipeline.state_dir().to_path_buf())
        })
        .unwrap_or_default()
}

/// Run `id`'s record `name`, or 404 saying it has none yet.
pub(crate) async fn record(app: &App, id: String, name: &'static str) -> Result<Vec<u8>, ApiError> {
    let store = app.store.clone();
    let check = id.clone();
    blocking(move || store.get(&check)).await?;
    let dir = state_dir(app);
    let store = app.store.clone();
    let found = tokio::task::spawn_blocking(move || {
        forq_app::clean::stored_record(&store, Some(&dir), &id, name)
    })
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

pub(crate) async fn run_patch(
    State(app): State<App>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let patch = record(&app, id, "fix.patch").await?;
    Ok((
        [(header::CONTENT_TYPE, "text/x-diff; charset=utf-8")],
        patch,
    )
        .into_response())
}

pub(crate) async fn run_tree(
    State(app): State<App>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let tree = record(&app, id, "tree.json").await?;
    Ok(([(header::CONTENT_TYPE, "application/json")], tree).into_response())
}

pub(crate) async fn run_files(
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
pub(crate) async fn resume_run(
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
pub(crate) async fn approve_run(
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
pub(crate) struct RejectRequest {
    pub(crate) reason: Option<String>,
}

/// `POST /api/runs/{id}/reject` (`{"reason": …}`): a run paused for review
/// is aborted.
pub(crate) async fn reject_run(
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

pub(crate) fn reviewed(e: forq_app::review::ReviewError) -> ApiError {
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

pub(crate) async fn abort_run(
    State(app): State<App>,
    Path(id): Path<String>,
) -> Result<Json<Run>, ApiError> {
    let store = app.store.clone();
    Ok(Json(blocking(move || store.request_abort(&id)).await?))
}
