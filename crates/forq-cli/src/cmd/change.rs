//! Changes that must keep behaviour — `forq rename`, `forq document` —
//! worked out on the host from the code graph (and for docs, a model's
//! text), then applied and tested in a sandbox, with the patch written
//! like a fix's.

use crate::exit::Exit;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use forq_agent::docs::{write_docs, DocRequest};
use forq_bootstrap::GateOptions;
use forq_graph::{same_code_outside_docs, write_doc, Index, Lang, Symbol};
use forq_search::candidate::{Candidate, Change};

use crate::cli::{ChangeArgs, DocumentArgs, RenameArgs};
use crate::parts::run_id;

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
            return crate::terminal::print_json(&plan).map(|()| ExitCode::SUCCESS);
        }
        let mut out = std::io::stdout().lock();
        writeln!(out, "{what}")?;
        for e in &plan.edits {
            writeln!(out, "  {}:{}:{}  {}", e.file, e.line, e.col, e.role)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    if !args.change.json {
        crate::terminal::note(&what);
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

pub(crate) async fn document(args: DocumentArgs) -> anyhow::Result<ExitCode> {
    let repo = repo_dir(&args.change)?;
    let r = repo.clone();
    let (symbol, missing, limit) = (args.symbol.clone(), args.missing, args.limit);
    let (targets, conventions) = tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
        let index = Index::open_current(&r)
            .with_context(|| format!("open the code graph of {}", r.display()))?;
        let targets = match (&symbol, missing) {
            (Some(s), _) => vec![index.find_symbol(s)?],
            (None, _) => index.undocumented(limit)?,
        };
        let conventions = index
            .conventions(0.8)
            .map(|c| c.prompt(800))
            .unwrap_or_default();
        Ok((targets, conventions))
    })
    .await??;
    if targets.is_empty() {
        if args.change.json {
            crate::terminal::print_json(&serde_json::json!({"solved": true, "documented": []}))?;
        } else {
            writeln!(
                std::io::stdout().lock(),
                "every public definition has docs: nothing to write"
            )?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let (provider, model) = crate::parts::open_provider(&args.model)
        .context("forq document writes the docs' text with a model")?;
    let (originals, asked) = doc_requests(&repo, &targets)?;
    if !args.change.json {
        crate::terminal::note(&format!("asking {model} for {} doc(s)", asked.len()));
    }
    let written = write_docs(&*provider, &model, &asked, &conventions).await?;
    // Each file's docs written, then checked: docs only, or nothing is
    // applied.
    let mut changes = Vec::new();
    for (file, original) in &originals {
        let lang = lang_of(file)?;
        let text = documented(lang, file, original, &targets, &written)?;
        if let Err(e) = same_code_outside_docs(lang, original, &text) {
            let why = format!("{file}: {e}");
            if args.change.json {
                crate::terminal::print_json(&serde_json::json!({"solved": false, "refused": why}))?;
            } else {
                writeln!(
                    std::io::stdout().lock(),
                    "refused: {why}; nothing was applied"
                )?;
            }
            return Ok(Exit::NotAchieved.into());
        }
        changes.push(Change::Write {
            path: file.clone(),
            content: text,
        });
    }
    let change = Candidate {
        hypothesis: format!(
            "document {}",
            targets
                .iter()
                .map(|s| s.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        changes,
        prior: 1.0,
    };
    run(&args.change, &repo, "document", change).await
}

/// Each target's file (read once) and its source, as a request for its doc.
fn doc_requests(
    repo: &std::path::Path,
    targets: &[Symbol],
) -> anyhow::Result<(std::collections::BTreeMap<String, String>, Vec<DocRequest>)> {
    let mut originals: std::collections::BTreeMap<String, String> = Default::default();
    let mut asked = Vec::new();
    for s in targets {
        let text = match originals.get(&s.file) {
            Some(t) => t.clone(),
            None => {
                let t = std::fs::read_to_string(repo.join(&s.file))
                    .with_context(|| format!("read {}", s.file))?;
                originals.insert(s.file.clone(), t.clone());
                t
            }
        };
        let source: Vec<&str> = text
            .lines()
            .skip(s.line as usize - 1)
            .take((s.end_line - s.line + 1) as usize)
            .collect();
        asked.push(DocRequest {
            id: s.id.clone(),
            language: lang_of(&s.file)?.name().to_owned(),
            source: source.join("\n"),
        });
    }
    Ok((originals, asked))
}

/// `file`'s text with the docs `written` for its targets, written last
/// first (the graph's lines are the original's).
fn documented(
    lang: Lang,
    file: &str,
    original: &str,
    targets: &[Symbol],
    written: &forq_agent::docs::Docs,
) -> anyhow::Result<String> {
    let mut mine: Vec<&Symbol> = targets.iter().filter(|s| s.file == file).collect();
    mine.sort_by_key(|s| std::cmp::Reverse(s.line));
    let mut text = original.to_owned();
    for s in mine {
        let doc = written
            .docs
            .iter()
            .find(|d| d.symbol == s.id)
            .map(|d| d.doc.as_str())
            .unwrap_or_default();
        text = write_doc(lang, &text, s, doc).with_context(|| {
            format!(
                "{}:{} no longer defines {}; run `forq graph index`",
                s.file, s.line, s.name
            )
        })?;
    }
    Ok(text)
}

fn lang_of(file: &str) -> anyhow::Result<Lang> {
    Lang::of_path(std::path::Path::new(file))
        .with_context(|| format!("{file} is in no language forq reads"))
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
    let backend = crate::parts::open_backend(args.backend.backend).await?;
    let mut gate = GateOptions::default().image(args.backend.image.clone());
    gate.golden =
        crate::parts::golden_options(args.golden.golden, &*backend, &repo.display().to_string())?;
    if !args.json {
        gate = gate.observer(Arc::new(crate::terminal::Lines::default()));
    }
    let done = forq_search::guarded::run_guarded(
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
        crate::terminal::print_json(report)?;
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
    Ok(Exit::achieved(report.solved).into())
}
