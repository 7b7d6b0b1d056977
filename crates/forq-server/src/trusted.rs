//! `GET /api/trusted?repo=OWNER/REPO` and `POST /api/trusted`: the
//! contributors a GitHub repository trusts (forq.yml `funding.trusted`),
//! read from its default branch and changed through a pull request to its
//! forq.yml that a person merges (forq-app's `trusted`).

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::Json;
use forq_app::github::{repo_slug, GithubError};
use forq_app::trusted::{self, TrustedError};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::{ApiError, App};

#[derive(Debug, Deserialize)]
pub(crate) struct RepoQuery {
    repo: String,
}

/// What a change asks for.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Change {
    repo: String,
    #[serde(default)]
    add: Vec<String>,
    #[serde(default)]
    remove: Vec<String>,
}

fn refused(e: TrustedError) -> ApiError {
    let status = match &e {
        TrustedError::Login(_) | TrustedError::Nothing => StatusCode::BAD_REQUEST,
        TrustedError::Invalid { .. } | TrustedError::Unsafe { .. } => {
            StatusCode::UNPROCESSABLE_ENTITY
        }
        TrustedError::Github(GithubError::NotInstalled { .. }) => StatusCode::FORBIDDEN,
        _ => StatusCode::BAD_GATEWAY,
    };
    ApiError(status, e.to_string())
}

fn slug(repo: &str) -> Result<String, ApiError> {
    repo_slug(repo).map_err(|e| ApiError(StatusCode::BAD_REQUEST, e.to_string()))
}

/// `GET /api/trusted?repo=…`.
pub(crate) async fn list(
    State(app): State<App>,
    Query(q): Query<RepoQuery>,
) -> Result<Json<Value>, ApiError> {
    let repo = slug(&q.repo)?;
    let trusted = trusted::trusted(&app.github, &repo)
        .await
        .map_err(refused)?;
    Ok(Json(json!({"repo": repo, "trusted": trusted})))
}

/// `POST /api/trusted` `{"repo", "add": […], "remove": […]}`: the pull
/// request that makes the change.
pub(crate) async fn change(
    State(app): State<App>,
    Json(req): Json<Change>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let repo = slug(&req.repo)?;
    let proposed = trusted::propose(&app.github, &repo, &req.add, &req.remove)
        .await
        .map_err(refused)?;
    Ok((StatusCode::CREATED, Json(json!(proposed))))
}
