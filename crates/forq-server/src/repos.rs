//! Repositories and their issues, as the dashboard lists them: every
//! repository a run was made on or a configured source names, with its
//! runs counted by state and its golden's status; and a repository's
//! issues, each beside its latest run.

use std::collections::BTreeMap;

use axum::extract::{Query, State};
use axum::Json;
use forq_app::queue::{self, Selection, Source};
use forq_app::store::{Action, NewRun, Run};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::{blocking, internal, ApiError, App};

/// The issues the configured sources hold (every one, unlabelled), as runs
/// to make; a source that cannot be read is reported, not fatal.
pub(crate) async fn source_issues(app: &App) -> (Vec<NewRun>, Vec<String>) {
    let selection = Selection {
        label: None,
        limit: None,
        action: Action::Auto,
        context: Vec::new(),
    };
    let github = app.github.clone();
    let mut issues = Vec::new();
    let mut problems = Vec::new();
    for source in app.sources.iter() {
        match queue::select(source, &selection, &github).await {
            Ok(found) => issues.extend(found),
            Err(e) => problems.push(format!("{}: {e}", describe(source))),
        }
    }
    (issues, problems)
}

/// A source, in a few words.
fn describe(source: &Source) -> String {
    match source {
        Source::Local { dir, .. } => dir.display().to_string(),
        Source::Github { slug, .. }
        | Source::GithubIssue { slug, .. }
        | Source::GithubPull { slug, .. } => slug.clone(),
        Source::Text { repo, .. } => repo.clone(),
    }
}

/// A repository's short name: its last path segment, without `.git`.
fn short_name(repo: &str) -> String {
    repo.trim_end_matches('/')
        .trim_end_matches(".git")
        .rsplit(['/', ':'])
        .next()
        .unwrap_or(repo)
        .to_owned()
}

/// `GET /api/repos`: each repository with its runs counted by state, its
/// open issues (from the configured sources), its cost, and its golden.
pub(crate) async fn list(State(app): State<App>) -> Result<Json<Value>, ApiError> {
    let store = app.store.clone();
    let runs = blocking(move || store.all()).await?;
    let (issues, problems) = source_issues(&app).await;
    let goldens = goldens(&app).await?;
    let mut repos: BTreeMap<String, Value> = BTreeMap::new();
    let entry = |repos: &mut BTreeMap<String, Value>, repo: &str| {
        repos.entry(repo.to_owned()).or_insert_with(|| {
            json!({"repo": repo, "name": short_name(repo), "issues": 0, "runs": 0,
                "states": {}, "cost_usd": 0.0, "updated_ms": 0, "golden": null})
        });
    };
    for issue in &issues {
        entry(&mut repos, &issue.repo);
        let r = repos.get_mut(&issue.repo).expect("just made");
        r["issues"] = json!(r["issues"].as_u64().unwrap_or(0) + 1);
    }
    for run in &runs {
        entry(&mut repos, &run.repo);
        let r = repos.get_mut(&run.repo).expect("just made");
        r["runs"] = json!(r["runs"].as_u64().unwrap_or(0) + 1);
        let state = run.state.name();
        r["states"][state] = json!(r["states"][state].as_u64().unwrap_or(0) + 1);
        r["cost_usd"] = json!(r["cost_usd"].as_f64().unwrap_or(0.0) + run.cost_usd);
        if run.updated_ms > r["updated_ms"].as_u64().unwrap_or(0) {
            r["updated_ms"] = json!(run.updated_ms);
        }
    }
    // A repository with a golden (or one syncing) is one forq knows.
    let syncing: Vec<String> = app
        .syncing
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
        .cloned()
        .collect();
    let kept = goldens.iter().filter_map(|g| g.meta["identity"].as_str());
    for repo in kept.chain(syncing.iter().map(String::as_str)) {
        entry(&mut repos, repo);
    }
    for (repo, r) in repos.iter_mut() {
        r["golden"] = golden_of(&app, &goldens, repo);
    }
    Ok(Json(json!({
        "repos": repos.into_values().collect::<Vec<_>>(),
        "problems": problems,
    })))
}

/// The goldens kept (none when the server keeps none).
async fn goldens(app: &App) -> Result<Vec<forq_sandbox::GoldenInfo>, ApiError> {
    match app.goldens.clone() {
        Some(g) => Ok(tokio::task::spawn_blocking(move || g.list())
            .await
            .map_err(internal)?
            .unwrap_or_default()),
        None => Ok(Vec::new()),
    }
}

/// `repo`'s newest golden (by its manifest's identity) with whether a sync
/// is running, or null when it has neither.
fn golden_of(app: &App, goldens: &[forq_sandbox::GoldenInfo], repo: &str) -> Value {
    let golden = goldens
        .iter()
        .filter(|g| g.meta["identity"].as_str() == Some(repo))
        .max_by_key(|g| g.saved_at_ms);
    let syncing = app
        .syncing
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .contains(repo);
    if golden.is_none() && !syncing {
        return Value::Null;
    }
    let mut g = golden.map_or_else(|| json!({}), |g| json!(g));
    g["syncing"] = json!(syncing);
    g
}

#[derive(Debug, Deserialize)]
pub(crate) struct IssuesQuery {
    repo: String,
}

/// `GET /api/issues?repo=R`: the repository's issues from the configured
/// sources, then those only its runs know (an issue given as text), each
/// with its latest run.
pub(crate) async fn issues(
    State(app): State<App>,
    Query(q): Query<IssuesQuery>,
) -> Result<Json<Value>, ApiError> {
    let store = app.store.clone();
    let repo = q.repo.clone();
    let runs: Vec<Run> = blocking(move || {
        let mut runs = store.all()?;
        runs.retain(|r| r.repo == repo);
        Ok(runs)
    })
    .await?;
    let (found, problems) = source_issues(&app).await;
    // Newest first: the first run of an issue is its latest.
    let latest = |id: &str| {
        runs.iter()
            .find(|r| r.issue.id == id && r.issue.source != "text")
    };
    let mut out = Vec::new();
    let mut listed = std::collections::HashSet::new();
    for n in found.into_iter().filter(|n| n.repo == q.repo) {
        listed.insert(n.issue.id.clone());
        let run = latest(&n.issue.id);
        out.push(json!({"issue": n.issue, "run": run, "queueable": true}));
    }
    for run in &runs {
        if run.issue.source == "text" || listed.insert(run.issue.id.clone()) {
            out.push(json!({"issue": run.issue, "run": run, "queueable": false}));
        }
    }
    let golden = golden_of(&app, &goldens(&app).await?, &q.repo);
    Ok(Json(json!({
        "repo": q.repo,
        "name": short_name(&q.repo),
        "golden": golden,
        "issues": out,
        "problems": problems,
    })))
}
