//! Changes that must keep behaviour — `forq rename` — worked out on the
//! host from the code graph, then applied and tested in a sandbox, with
//! the patch written like a fix's.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use forq_bootstrap::GateOptions;
use forq_graph::Index;
use forq_search::candidate::{Candidate, Change};

use super::agent::run_id;
use crate::cli::{ChangeArgs, RenameArgs};

pub(crate) async fn rename(args: RenameArgs) -> anyhow::Result<ExitCode> {
    let repo = repo_dir(&args.change)?;
    let (old, new) = (args.old.clone(), args.new.clone());
    let r = repo.clone();
    let plan = tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
        let index = Index::open_current(&r)
            .with_context(|| format!("open the code graph of {}", r.display()))?;
        Ok(index.rename(&old, &new)?)
    })
    .await??;
    let files: Vec<&String> = plan.files.keys().collect();
    let what = format!(
        "rename {} to {}: {} place(s) in {} file(s)",
        plan.symbol,
        plan.new,
        plan.edits.len(),
        files.len()
    );
    if args.dry_run {
        if args.change.json {
            return super::print_json(&plan).map(|()| ExitCode::SUCCESS);
        }
        let mut out = std::io::stdout().lock();
        writeln!(out, "{what}")?;
        for e in &plan.edits {
            writeln!(out, "  {}:{}:{}  {}", e.file, e.line, e.col, e.role)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    if !args.change.json {
        super::agent::note(&what);
    }
    let change = Candidate {
        hypothesis: format!("rename {} to {}", plan.symbol, plan.new),
        changes: plan
            .files
            .iter()
            .map(|(path, content)| Change::Write {
                path: path.clone(),
                content: content.clone(),
            })
            .collect(),
        prior: 1.0,
    };
    run(&args.change, &repo, "rename", change).await
}

/// The repository, canonical.
fn repo_dir(args: &ChangeArgs) -> anyhow::Result<PathBuf> {
    args.repo.canonicalize().with_context(|| {
        format!(
            "the repository {} does not exist; pass --repo DIR",
            args.repo.display()
        )
    })
}

/// `change` applied and tested in a sandbox over `repo`; the patch and
/// summary under `--out` (default `.forq/COMMAND/ID`).
async fn run(
    args: &ChangeArgs,
    repo: &std::path::Path,
    command: &str,
    change: Candidate,
) -> anyhow::Result<ExitCode> {
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| repo.join(".forq").join(command).join(run_id()));
    forq_sandbox::refuse_link(&repo.join(".forq"))?;
    let backend = super::sandbox::open(args.backend.backend).await?;
    let mut gate = GateOptions::default().image(args.backend.image.clone());
    gate.golden =
        super::golden::options(args.golden.golden, &*backend, &repo.display().to_string())?;
    if !args.json {
        gate = gate.observer(Arc::new(super::bootstrap::Lines));
    }
    let done = forq_search::change::run_guarded(
        &*backend,
        repo,
        &gate,
        change,
        Duration::from_secs(args.test_timeout),
        &out,
    )
    .await?;
    let report = &done.report;
    if args.json {
        super::print_json(report)?;
    } else {
        let mut so = std::io::stdout().lock();
        match (&done.patch, &report.patch) {
            (Some(patch), Some(path)) => {
                write!(so, "{patch}")?;
                writeln!(so, "patch: {}", path.display())?;
                writeln!(
                    so,
                    "tests: the {} passing test(s) still pass ({:.1} s)",
                    report.guard, report.elapsed_s
                )?;
            }
            _ => writeln!(
                so,
                "not applied: {}; no patch written (tree: {})",
                done.reason
                    .as_deref()
                    .unwrap_or("the tests did not stay green"),
                report.tree.display()
            )?,
        }
    }
    Ok(ExitCode::from(if report.solved { 0 } else { 1 }))
}
