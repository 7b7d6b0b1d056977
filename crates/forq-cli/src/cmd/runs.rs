//! `forq runs` (list, show, tail, abort, resume, approve, reject, clean,
//! comment, label, close),
//! `forq files` and `forq push`: a run's record, its workspace and its
//! branch. The work is forq-app's; this maps arguments in and results out.

use crate::exit::Exit;
use crate::parts::{load_config, open_store, owner_model};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use forq_app::git;
use forq_app::github::Github;
use forq_app::publish::IssueAction;
use forq_app::queue::{self};
use forq_app::store::{Run, State, Store};
use serde_json::json;

use crate::cli::{FilesArgs, PushArgs, ResumeArgs, RunsArgs, RunsCommand};
use crate::parts::pipeline_on;
use crate::terminal::{as_ended, note, paint, report, table, RunProgress};

pub(crate) async fn runs(args: RunsArgs) -> anyhow::Result<ExitCode> {
    let state_dir = &args.state.state;
    let store = open_store(state_dir, args.state.store.as_deref())?;
    let json = args.json;
    match args.command {
        None => list(&store, state_dir, args.outcome.as_deref(), args.limit, json),
        Some(RunsCommand::Show(a)) => show(&store, &a.id, json),
        Some(RunsCommand::Patch(a)) => patch(&store, state_dir, &a.id),
        Some(RunsCommand::Tail(a)) => tail(&store, &a.id, json).await,
        Some(RunsCommand::Abort(a)) => abort(&store, &a.id, json).await,
        Some(RunsCommand::Resume(a)) => resume(a, state_dir, store, json).await,
        Some(RunsCommand::Approve(a)) => approve(a, state_dir, store, json).await,
        Some(RunsCommand::Reject(a)) => reject(&store, &a, json),
        Some(RunsCommand::Clean(a)) => clean(&store, state_dir, a.patched, json),
        Some(RunsCommand::Comment(a)) => {
            act(&store, &a.id, IssueAction::Comment(a.body), json).await
        }
        Some(RunsCommand::Label(a)) => act(&store, &a.id, IssueAction::Label(a.labels), json).await,
        Some(RunsCommand::Close(a)) => {
            act(&store, &a.id, IssueAction::Close(a.comment), json).await
        }
    }
}

/// `forq runs comment|label|close`: does `action` to the run's GitHub
/// issue, as forq speaks to GitHub (the App's installation, or the token).
async fn act(store: &Store, id: &str, action: IssueAction, json: bool) -> anyhow::Result<ExitCode> {
    let run = store.get(id)?;
    let done = match forq_app::publish::act_on_issue(&Github::from_env()?, &run, &action).await {
        Ok(done) => done,
        Err(e @ forq_app::publish::PublishError::NotOnGithub { .. }) => bail_input!("{e}"),
        Err(e) => return Err(e.into()),
    };
    if json {
        crate::terminal::print_json(&json!({"run": run.id, "done": done}))?;
    } else {
        writeln!(std::io::stdout().lock(), "{done}")?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `forq runs`: the newest runs, or those in one state.
fn list(
    store: &Store,
    state_dir: &Path,
    outcome: Option<&str>,
    limit: usize,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let runs = match outcome {
        None => store.list(limit)?,
        Some("interrupted") => {
            let mut runs = store.interrupted()?;
            runs.reverse();
            runs.truncate(limit);
            runs
        }
        Some(name) => {
            let Some(state) = State::from_name(name) else {
                bail_input!(
                    "--outcome {name}: not a state; write one of {}, or interrupted",
                    State::names().collect::<Vec<_>>().join(", ")
                );
            };
            let mut runs = store.all()?;
            runs.retain(|r| r.state == state);
            runs.truncate(limit);
            runs
        }
    };
    if json {
        crate::terminal::print_json(&runs)?;
    } else if runs.is_empty() {
        note(&format!("no runs in {}", state_dir.display()));
    } else {
        table(&runs)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `forq runs show`: a run's record and events.
/// `forq runs patch ID`: the run's patch on stdout, from the store (else
/// this machine's state directory).
fn patch(store: &Store, state_dir: &std::path::Path, id: &str) -> anyhow::Result<ExitCode> {
    let run = store.get(id)?;
    let Some(bytes) = forq_app::clean::stored_record(store, Some(state_dir), &run.id, "fix.patch")?
    else {
        return Err(crate::failures::input(format!(
            "run {} has no patch (yet): it is kept when its search ends green ({})",
            run.id, run.state
        )));
    };
    std::io::stdout().lock().write_all(&bytes)?;
    Ok(ExitCode::SUCCESS)
}

fn show(store: &Store, id: &str, json: bool) -> anyhow::Result<ExitCode> {
    let run = store.get(id)?;
    let events = store.events(&run.id, 0)?;
    if json {
        crate::terminal::print_json(&json!({"run": run, "events": events}))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "run      {}", run.id)?;
    writeln!(out, "issue    #{} {}", run.issue.id, run.issue.title)?;
    writeln!(out, "source   {}", run.issue.source)?;
    writeln!(out, "repo     {}", run.repo)?;
    writeln!(out, "action   {}", run.action.name())?;
    let live = if run.is_live() { " (running)" } else { "" };
    let stale = if !run.state.is_terminal() && !run.is_live() {
        " (interrupted: `forq runs resume` continues it)"
    } else {
        ""
    };
    writeln!(
        out,
        "state    {}{live}{stale}",
        paint(run.state, run.state.name())
    )?;
    if !run.reason.is_empty() {
        writeln!(out, "reason   {}", run.reason)?;
    }
    if let Some(kind) = run.failure {
        writeln!(out, "failure  {kind}")?;
    }
    if let (Some(worker), Some(host)) = (&run.worker, &run.host) {
        writeln!(out, "worker   {worker} on {host}")?;
    }
    if !run.requires.is_empty() {
        writeln!(out, "requires {}", run.requires.join(", "))?;
    }
    if let Some(b) = &run.branch {
        writeln!(out, "branch   {b}")?;
    }
    let records = store.artifacts(&run.id)?;
    if !records.is_empty() {
        writeln!(out, "records  {} (in the store)", records.join(", "))?;
    }
    if let Some(l) = run.patch_lines {
        writeln!(out, "patch    {l} lines")?;
    }
    writeln!(out, "cost     ${:.4}", run.cost_usd)?;
    writeln!(out, "events")?;
    for e in &events {
        writeln!(out, "  {}", event_line(e))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `forq runs tail`: a run's events as they come, until it ends.
async fn tail(store: &Store, id: &str, json: bool) -> anyhow::Result<ExitCode> {
    let id = store.get(id)?.id;
    let mut after = 0;
    loop {
        let events = store.events(&id, after)?;
        {
            let mut out = std::io::stdout().lock();
            for e in &events {
                after = e.seq;
                if json {
                    writeln!(out, "{}", serde_json::to_string(e)?)?;
                } else {
                    writeln!(out, "{}", event_line(e))?;
                }
            }
            out.flush()?;
        }
        let run = store.get(&id)?;
        if run.state.is_terminal() && store.events(&id, after)?.is_empty() {
            return Ok(ExitCode::SUCCESS);
        }
        if !run.is_live() && !run.state.is_terminal() {
            note(&format!(
                "run {id} is {} and no process works on it: `forq runs resume {id}` continues it",
                run.state
            ));
            return Ok(Exit::NotAchieved.into());
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// `forq runs abort`: stops a run, and waits a moment for it to say so.
async fn abort(store: &Store, id: &str, json: bool) -> anyhow::Result<ExitCode> {
    let run = store.request_abort(id)?;
    // A live run stops within a moment; wait for it to say so.
    let mut current = run;
    for _ in 0..40 {
        if current.state.is_terminal() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
        current = store.get(&current.id)?;
    }
    if json {
        crate::terminal::print_json(&current)?;
    } else {
        writeln!(std::io::stdout().lock(), "{} {}", current.id, current.state)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `forq runs approve`: approves a run paused for review and drives it on.
async fn approve(
    a: crate::cli::ApproveArgs,
    state_dir: &Path,
    store: Arc<Store>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let run = forq_app::review::approve(&store, &a.id)?;
    note(&format!(
        "forq: run {} approved; it goes on from its checkpoint",
        run.id
    ));
    let again = crate::cli::ResumeArgs {
        id: Some(run.id.to_string()),
        interrupted: false,
        jobs: 1,
        per_repo: 1,
        local_repos: a.local_repos,
        config: a.config,
        model: a.model,
        backend: a.backend,
        engines: a.engines,
    };
    resume(again, state_dir, store, json).await
}

/// `forq runs reject`: ends a run paused for review.
fn reject(store: &Store, a: &crate::cli::RejectArgs, json: bool) -> anyhow::Result<ExitCode> {
    let run = forq_app::review::reject(store, &a.id, &a.reason)?;
    if json {
        crate::terminal::print_json(&run)?;
    } else {
        note(&format!(
            "forq: run {} {}: {}",
            run.id, run.state, run.reason
        ));
    }
    Ok(ExitCode::SUCCESS)
}

/// `forq runs clean`: removes the workspaces of runs that are over.
fn clean(store: &Store, state_dir: &Path, patched: bool, json: bool) -> anyhow::Result<ExitCode> {
    let cleaned = forq_app::clean::clean(store, state_dir, patched)?;
    if json {
        crate::terminal::print_json(&cleaned)?;
    } else {
        let mut out = std::io::stdout().lock();
        writeln!(
            out,
            "removed {} workspace{}, {:.1} MiB",
            cleaned.runs.len(),
            if cleaned.runs.len() == 1 { "" } else { "s" },
            cleaned.bytes as f64 / (1024.0 * 1024.0)
        )?;
        if !cleaned.kept.is_empty() {
            writeln!(
                out,
                "kept {} with a patch not pushed yet (`forq push ID`, or --patched removes them)",
                cleaned.kept.len()
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn resume(
    args: ResumeArgs,
    state_dir: &Path,
    store: Arc<Store>,
    json_out: bool,
) -> anyhow::Result<ExitCode> {
    let runs = match &args.id {
        Some(id) => {
            let run = store.get(id)?;
            if run.state.is_terminal() {
                bail_input!(
                    "run {} is {} already: there is nothing to resume",
                    run.id,
                    run.state
                );
            }
            vec![run]
        }
        None => store.interrupted()?,
    };
    if runs.is_empty() {
        note("forq: no interrupted run");
        if json_out {
            crate::terminal::print_json(&runs)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let state_dir = state_dir.canonicalize()?;
    let model = owner_model(&args.model)?;
    let (pipeline, engines) =
        pipeline_on(store.clone(), &state_dir, &args.backend, &args.engines).await?;
    let lines = Arc::new(RunProgress::new(&runs, json_out));
    let pipeline = pipeline
        .model(model)
        .config(load_config(args.config.as_ref())?)
        .local_repos(&args.local_repos.dirs)
        .observer(lines.clone());
    if args.id.is_some() {
        // One run asked for by name: its error is the command's, and its
        // JSON the run itself.
        let done = pipeline.execute(&runs[0].id).await;
        lines.finish();
        let done = done?;
        if json_out {
            crate::terminal::print_json(&done)?;
            return Ok(Exit::of_runs(std::slice::from_ref(&done)).into());
        }
        return report(std::slice::from_ref(&done), false).map(Into::into);
    }
    let ended = queue::run_spread(&pipeline, &engines, &runs, args.jobs, args.per_repo).await;
    lines.finish();
    report(&as_ended(&store, ended, &runs)?, json_out).map(Into::into)
}

fn event_line(e: &forq_app::store::RunEvent) -> String {
    let at = i64::try_from(e.at_ms)
        .ok()
        .and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok())
        .map_or_else(
            || "--:--:--".to_owned(),
            |t| t.strftime("%H:%M:%S").to_string(),
        );
    let d = &e.data;
    let what = match e.kind.as_str() {
        "state" => format!(
            "{} → {}{}",
            d["from"].as_str().unwrap_or(""),
            d["to"].as_str().unwrap_or(""),
            d["reason"]
                .as_str()
                .filter(|r| !r.is_empty())
                .map(|r| format!(" ({r})"))
                .unwrap_or_default()
        ),
        "node" => format!(
            "node {} {}: {} ({} lines, {} ms)",
            d["id"],
            d["status"].as_str().unwrap_or(""),
            d["hypothesis"].as_str().unwrap_or(""),
            d["diff_lines"],
            d["eval_ms"]
        ),
        "checkpoint" => format!("checkpoint {}", d["phase"].as_str().unwrap_or("")),
        "note" => d["text"].as_str().unwrap_or("").to_owned(),
        _ => d.to_string(),
    };
    format!("{at} {:>4} {:<10} {what}", e.seq, e.kind)
}

/// The run's workspace, checked to exist.
fn workspace_of(state_dir: &Path, run: &Run) -> anyhow::Result<PathBuf> {
    let ws = forq_app::clean::workspace_path(state_dir, &run.id);
    if ws.is_dir() {
        return Ok(ws);
    }
    if run.state.is_terminal() {
        bail_input!(
            "run {} ({}) has no workspace: `forq runs clean` removed it, or the run ended before it was seeded",
            run.id,
            run.state
        );
    }
    bail_input!(
        "run {} has no workspace yet (it is {}): it is made when the run is provisioned",
        run.id,
        run.state
    )
}

pub(crate) fn files(args: FilesArgs) -> anyhow::Result<ExitCode> {
    let store = open_store(&args.state.state, args.state.store.as_deref())?;
    let run = store.get(&args.id)?;
    let ws = workspace_of(&args.state.state, &run)?.canonicalize()?;
    let paths: Vec<PathBuf> = forq_app::clean::workspace_files(&args.state.state, &run.id)
        .unwrap_or_default()
        .into_iter()
        .map(|p| if args.abs { ws.join(p) } else { p })
        .collect();
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(
            out,
            "{}",
            json!({"run": run.id, "workspace": ws, "files": paths})
        )?;
    } else if args.plain || !std::io::stdout().is_terminal() {
        for p in &paths {
            writeln!(out, "{}", p.display())?;
        }
    } else {
        writeln!(
            out,
            "{} files in {} (run {}):",
            paths.len(),
            ws.display(),
            run.id
        )?;
        for p in &paths {
            writeln!(out, "  {}", p.display())?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) async fn push(args: PushArgs) -> anyhow::Result<ExitCode> {
    use forq_app::publish::{self, PublishError, PushOptions};
    let store = open_store(&args.state.state, args.state.store.as_deref())?;
    let id = store.get(&args.id)?.id;
    let mut options = PushOptions::new().pull_request(args.pr);
    options.remote = args.remote.clone();
    // The operator's own command line may name a repository on this machine.
    options.local_paths = true;
    options.github_repo = args.github.clone();
    options.base = args.base.clone();
    let pushed = match publish::push(
        &store,
        &args.state.state,
        &Github::from_env()?,
        &id,
        &options,
    )
    .await
    {
        Ok(p) => p,
        Err(PublishError::Git(e @ git::GitError::Rejected { .. })) => {
            note(&format!("forq: {e}"));
            return Ok(Exit::NotAchieved.into());
        }
        Err(PublishError::NoOrigin) => bail_input!(
            "the run's workspace was copied, not cloned, so it has no origin: name where to push with --remote URL"
        ),
        Err(PublishError::NoGithubRepo) => {
            bail_input!("--pr: name the GitHub repository with --github OWNER/REPO")
        }
        Err(e) => return Err(e.into()),
    };
    if let Some(why) = &pushed.comment_failed {
        note(&format!(
            "forq: the pull request is open, but commenting on the issue failed: {why}"
        ));
    }
    let (branch, remote, commit) = (&pushed.branch, &pushed.remote, &pushed.commit);
    let result = json!(pushed);
    if args.json {
        crate::terminal::print_json(&result)?;
    } else {
        let mut out = std::io::stdout().lock();
        writeln!(
            out,
            "pushed {branch} ({}) to {remote}",
            &commit[..12.min(commit.len())]
        )?;
        if let Some(url) = result["pull_request"]["html_url"].as_str() {
            writeln!(out, "pull request: {url}")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
