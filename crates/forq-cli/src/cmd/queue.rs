//! `forq queue`: issues from a source become runs, `jobs` at a time, with
//! a progress line each and the final table.

use crate::parts::{load_config, open_store, owner_model};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use forq_app::github::Github;
use forq_app::queue::{self, Selection, Source};
use forq_app::store::{Action, ContextFile, NewRun, Run, Store};

use crate::cli::{ActionName, QueueArgs};
use crate::parts::{contributor_model, golden_policy, pipeline_on};
use crate::terminal::note;
use crate::terminal::{as_ended, report, RunProgress};

pub(crate) async fn queue(args: QueueArgs) -> anyhow::Result<ExitCode> {
    let action = match args.action {
        ActionName::Auto => Action::Auto,
        ActionName::Triage => Action::Triage,
        ActionName::Fix => Action::Fix,
    };
    if args.enqueue && args.config.is_some() {
        return Err(crate::failures::input(
            "--config is for the runs this process drives; with --enqueue, give it to the workers \
             (forq worker --config FILE)"
                .to_owned(),
        ));
    }
    let context = context_files(&args.context)?;
    let source = source_of(&args)?;
    let selection = Selection {
        label: args.label.clone(),
        limit: args.limit,
        action,
        context,
    };
    let github = Github::from_env()?;
    let new = queue::select(&source, &selection, &github).await?;
    if new.is_empty() {
        note("forq: no issue matched");
        return Ok(ExitCode::SUCCESS);
    }
    std::fs::create_dir_all(&args.state.state)
        .with_context(|| format!("cannot create {}", args.state.state.display()))?;
    let state_dir = args.state.state.canonicalize()?;
    let store = open_store(&state_dir, args.state.store.as_deref())?;
    let new = if args.again {
        new
    } else {
        without_standing(&store, new)?
    };
    if new.is_empty() {
        note("forq: every issue selected has a run standing for it");
        if args.json {
            crate::terminal::print_json(&Vec::<Run>::new())?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    if args.enqueue {
        // Only recorded: workers drive them, with their own settings.
        let new: Vec<NewRun> = new
            .into_iter()
            .map(|n| NewRun {
                requires: args.require.clone(),
                ..n
            })
            .collect();
        let runs = queue::enqueue(&store, &new)?;
        report(&runs, args.json)?;
        return Ok(ExitCode::SUCCESS);
    }
    let model = owner_model(&args.model)?;
    let contributor = contributor_model(
        args.contributor_key_env.as_deref(),
        model.as_ref(),
        &args.model,
    )?;
    let (pipeline, engines) =
        pipeline_on(store.clone(), &state_dir, &args.backend, &args.engines).await?;
    // The repository named here is the operator's word: its runs may read
    // it, from a shared store too.
    let named: Vec<std::path::PathBuf> = args
        .repo
        .iter()
        .filter(|r| !forq_bootstrap::is_git_url(r))
        .map(std::path::PathBuf::from)
        .collect();
    let pipeline = pipeline
        .golden(golden_policy(args.golden.golden))
        .local_repos(&named);
    let config = load_config(args.config.as_ref())?;
    let golden_cap = config.as_ref().and_then(|c| c.sandbox.golden_max_gb);
    // A GitHub repository's forq.yml, read before it is cloned: triage,
    // the first phase, follows it (who pays, whether to triage).
    let known = match &config {
        Some(_) => None,
        None => queue::remote_config(&source, &github).await?,
    };
    let evict_on =
        (args.golden.golden == crate::cli::GoldenMode::Build).then(|| pipeline.backend().clone());
    let runs = queue::enqueue(&store, &new)?;
    let lines = Arc::new(RunProgress::new(&runs, args.json));
    let pipeline = pipeline
        .model(model)
        .contributor(contributor)
        .config(config)
        .observer(lines.clone());
    let pipeline = match known {
        Some((repo, c)) => pipeline.repo_config(&repo, c),
        None => pipeline,
    };
    let ended = queue::run_spread(&pipeline, &engines, &runs, args.jobs, args.per_repo).await;
    lines.finish();
    // Goldens this queue built count against the cap: the least recently
    // used beyond it go.
    if let Some(backend) = evict_on {
        evict_beyond_cap(&*backend, golden_cap, args.json).await?;
    }
    report(&as_ended(&store, ended, &runs)?, args.json).map(Into::into)
}

/// `--context SRC[:DEST]` as files to put in each workspace: the source
/// must exist, the destination must stay inside the workspace.
fn context_files(specs: &[String]) -> anyhow::Result<Vec<ContextFile>> {
    let mut context = Vec::new();
    for spec in specs {
        let (src, dest) = match spec.split_once(':') {
            Some((s, d)) => (s.to_owned(), d.to_owned()),
            None => {
                let name = Path::new(spec)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                (spec.clone(), name)
            }
        };
        forq_app::seed::context_path(Path::new("/"), &dest)?;
        let source = Path::new(&src)
            .canonicalize()
            .with_context(|| format!("--context {spec}: {src} does not exist"))?;
        context.push(
            ContextFile::read(&source, &dest)
                .map_err(|e| crate::failures::input(format!("--context {spec}: {e}")))?,
        );
    }
    Ok(context)
}

/// Where the issues come from, with what to write when nothing names them.
fn source_of(args: &QueueArgs) -> anyhow::Result<Source> {
    Source::from_request(args.issues.clone(), args.text.clone(), args.repo.clone())
    .map_err(|e| match e {
        queue::QueueError::NoIssues { repo: Some(repo) } => crate::failures::input(format!(
            "{repo} is a directory: name its issues with --issues DIR (Markdown files) or --text TEXT"
        )),
        queue::QueueError::NoIssues { repo: None } => crate::failures::input(
            "name the issues: --issues DIR (Markdown), --repo https://github.com/OWNER/REPO, or --text TEXT --repo DIR".to_owned()
        ),
        e => e.into(),
    })
}

/// The new runs without those whose issue has a run standing (said, with
/// how to go on).
fn without_standing(store: &Store, new: Vec<NewRun>) -> anyhow::Result<Vec<NewRun>> {
    let (fresh, standing) = queue::split_standing(store, new)?;
    for r in &standing {
        let why = if r.state.is_terminal() {
            format!(
                "{} on {}",
                r.state,
                r.branch.as_deref().unwrap_or("its branch")
            )
        } else {
            format!(
                "{}, unfinished: `forq runs resume {}` continues it",
                r.state, r.id
            )
        };
        note(&format!(
            "forq: #{} skipped: run {} is {why} (--again runs it anew)",
            r.issue.id, r.id
        ));
    }
    Ok(fresh)
}

/// Evicts the least recently used goldens beyond the cap (said unless
/// `json`).
async fn evict_beyond_cap(
    backend: &dyn forq_sandbox::Backend,
    golden_cap: Option<f64>,
    json: bool,
) -> anyhow::Result<()> {
    let Ok(goldens) = backend.goldens() else {
        return Ok(());
    };
    let cap = crate::parts::cap_bytes(golden_cap)?;
    let removed = goldens.evict(backend, cap).await?;
    if !removed.is_empty() && !json {
        crate::terminal::note(&format!(
            "golden: removed {} least recently used beyond the cap: {}",
            removed.len(),
            removed.join(", ")
        ));
    }
    Ok(())
}
