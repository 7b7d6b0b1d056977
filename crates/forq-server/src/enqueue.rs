//! `POST /api/queue`: issues from a source become runs, the same calls as
//! `forq queue`; and the goldens the dashboard lists.

use crate::*;
#[allow(clippy::wildcard_imports)] // the server's own types and imports
use forq_app::github::GithubError;

/// What `POST /api/queue` takes.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct QueueRequest {
    /// A directory of Markdown issues.
    pub(crate) issues: Option<std::path::PathBuf>,
    /// One issue's text.
    pub(crate) text: Option<String>,
    /// The repository: a directory, or a GitHub URL.
    pub(crate) repo: Option<String>,
    /// `auto` (default), `fix` or `triage`.
    pub(crate) action: Option<String>,
    /// Only issues with this label.
    pub(crate) label: Option<String>,
    /// At most this many.
    pub(crate) limit: Option<usize>,
    /// Only the issues with these ids.
    pub(crate) ids: Option<Vec<String>>,
    /// `speculative` or `single`, over forq.yml's, for these runs.
    pub(crate) strategy: Option<forq_app::config::Strategy>,
    /// `mutate`, `llm` or `agent`, over forq.yml's, for these runs.
    pub(crate) brancher: Option<forq_app::config::BrancherName>,
    /// Run issues that have a run standing already, again.
    #[serde(default)]
    pub(crate) again: bool,
}

pub(crate) async fn queue_issues(
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
        e @ QueueError::Github(GithubError::NotInstalled { .. }) => {
            ApiError(StatusCode::FORBIDDEN, e.to_string())
        }
        e => ApiError(StatusCode::BAD_REQUEST, e.to_string()),
    };
    let selection = Selection {
        label: req.label,
        limit: if req.ids.is_some() { None } else { req.limit },
        action,
        context: Vec::new(),
    };
    let mut new = match Source::from_request(req.issues, req.text, req.repo) {
        Ok(source) => queue::select(&source, &selection, &app.github)
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
/// queue` does; leaves them to the workers when the server does not
/// drive runs.
pub(crate) fn spawn_runs(actions: Actions, runs: Vec<Run>) {
    if !actions.drive {
        // Queued in the store: the workers take them up.
        return;
    }
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

pub(crate) async fn goldens(State(app): State<App>) -> Result<Json<Value>, ApiError> {
    let Some(goldens) = app.goldens.clone() else {
        return Ok(Json(json!([])));
    };
    let list = tokio::task::spawn_blocking(move || goldens.list())
        .await
        .map_err(internal)?
        .map_err(internal)?;
    Ok(Json(json!(list)))
}
