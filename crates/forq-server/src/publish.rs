//! A person's actions on a finished run over HTTP, through forq-app's
//! `publish` (what `forq push` calls too): push its branch and open a pull
//! request; comment on, label or close its GitHub issue.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use forq_app::git::GitError;
use forq_app::publish::{self, IssueAction, PublishError, PushOptions};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::{blocking, state_dir, ApiError, App};

fn github(app: &App) -> forq_app::github::Github {
    app.github.clone()
}

fn refused(e: PublishError) -> ApiError {
    let status = match &e {
        PublishError::NotReady { .. }
        | PublishError::Git(GitError::Rejected { .. })
        | PublishError::NotOnGithub { .. } => StatusCode::CONFLICT,
        PublishError::NoOrigin
        | PublishError::NoGithubRepo
        | PublishError::Git(GitError::Remote { .. }) => StatusCode::BAD_REQUEST,
        PublishError::NoWorkspace { .. } => StatusCode::GONE,
        PublishError::Github(forq_app::github::GithubError::NotInstalled { .. }) => {
            StatusCode::FORBIDDEN
        }
        PublishError::Github(_) => StatusCode::BAD_GATEWAY,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    ApiError(status, e.to_string())
}

/// What `POST /api/runs/{id}/push` takes.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PushRequest {
    remote: Option<String>,
    #[serde(default)]
    pull_request: bool,
    github: Option<String>,
    base: Option<String>,
}

/// `POST /api/runs/{id}/push`: pushes the run's branch (never forcing over
/// what is not the run's), and opens a pull request when asked.
pub(crate) async fn push(
    State(app): State<App>,
    Path(id): Path<String>,
    body: Option<Json<PushRequest>>,
) -> Result<Json<Value>, ApiError> {
    let req = body.map(|Json(b)| b).unwrap_or_default();
    let store = app.store.clone();
    let run = blocking(move || store.get(&id)).await?;
    let mut options = PushOptions::new().pull_request(req.pull_request);
    options.remote = req.remote;
    options.github_repo = req.github;
    options.base = req.base;
    let pushed = publish::push(
        &app.store,
        &state_dir(&app),
        &github(&app),
        &run.id,
        &options,
    )
    .await
    .map_err(refused)?;
    Ok(Json(json!(pushed)))
}

/// What the issue actions take.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct IssueRequest {
    body: Option<String>,
    labels: Option<Vec<String>>,
}

async fn act(app: &App, id: String, action: IssueAction) -> Result<Json<Value>, ApiError> {
    let store = app.store.clone();
    let run = blocking(move || store.get(&id)).await?;
    let done = publish::act_on_issue(&github(app), &run, &action)
        .await
        .map_err(refused)?;
    Ok(Json(json!({"run": run.id, "done": done})))
}

/// `POST /api/runs/{id}/comment` `{"body": …}`.
pub(crate) async fn comment(
    State(app): State<App>,
    Path(id): Path<String>,
    Json(req): Json<IssueRequest>,
) -> Result<Json<Value>, ApiError> {
    let body = req
        .body
        .filter(|b| !b.trim().is_empty())
        .ok_or_else(|| ApiError(StatusCode::BAD_REQUEST, "a comment needs a body".to_owned()))?;
    act(&app, id, IssueAction::Comment(body)).await
}

/// `POST /api/runs/{id}/label` `{"labels": […]}`.
pub(crate) async fn label(
    State(app): State<App>,
    Path(id): Path<String>,
    Json(req): Json<IssueRequest>,
) -> Result<Json<Value>, ApiError> {
    let labels = req
        .labels
        .filter(|l| !l.is_empty())
        .ok_or_else(|| ApiError(StatusCode::BAD_REQUEST, "name the labels to add".to_owned()))?;
    act(&app, id, IssueAction::Label(labels)).await
}

/// `POST /api/runs/{id}/close` (`{"body": …}`: a comment first).
pub(crate) async fn close(
    State(app): State<App>,
    Path(id): Path<String>,
    body: Option<Json<IssueRequest>>,
) -> Result<Json<Value>, ApiError> {
    let comment = body
        .and_then(|Json(b)| b.body)
        .filter(|b| !b.trim().is_empty());
    act(&app, id, IssueAction::Close(comment)).await
}
