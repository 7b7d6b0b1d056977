//! `forq graph index` and `forq graph symbols`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use forq_graph::{Index, SymbolFilter};

use crate::cli::{GraphIndexArgs, GraphPathArgs, GraphStatsArgs, GraphSymbolsArgs, GraphWalkArgs};

fn open(repo: &Path, db: Option<&PathBuf>) -> anyhow::Result<Index> {
    let db = db
        .cloned()
        .unwrap_or_else(|| repo.join(".forq").join("graph.db"));
    Index::open(&db, repo).with_context(|| format!("open the code graph of {}", repo.display()))
}

/// The index, brought up to date first: queries never answer from a stale
/// tree.
fn open_current(repo: &Path, db: Option<&PathBuf>) -> anyhow::Result<Index> {
    let mut index = open(repo, db)?;
    index.update()?;
    Ok(index)
}

pub(crate) fn index(args: GraphIndexArgs) -> anyhow::Result<ExitCode> {
    let started = std::time::Instant::now();
    let mut index = open(&args.path, args.db.db.as_ref())?;
    let report = index.update()?;
    let mut out = std::io::stdout().lock();
    if args.db.json {
        let mut value = serde_json::to_value(&report)?;
        value["elapsed_ms"] = serde_json::json!(started.elapsed().as_millis() as u64);
        writeln!(out, "{value}")?;
    } else {
        writeln!(
            out,
            "{} files: {} parsed, {} unchanged, {} removed, {} skipped, {} failed; {} symbols written in {} ms",
            report.files,
            report.parsed,
            report.unchanged,
            report.removed,
            report.skipped,
            report.failed,
            report.symbols_written,
            started.elapsed().as_millis()
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn symbols(args: GraphSymbolsArgs) -> anyhow::Result<ExitCode> {
    let index = open_current(&args.repo, args.db.db.as_ref())?;
    let mut filter = SymbolFilter::default();
    if let Some(f) = args.file {
        filter = filter.file(f);
    }
    if let Some(n) = args.name {
        filter = filter.name(n);
    }
    if let Some(k) = args.kind {
        filter = filter.kind(k);
    }
    let symbols = index.symbols(&filter)?;
    let mut out = std::io::stdout().lock();
    if args.db.json {
        writeln!(out, "{}", serde_json::to_string(&symbols)?)?;
    } else {
        for s in &symbols {
            writeln!(
                out,
                "{:<8} {:<40} {}:{}",
                s.kind, s.qualname, s.file, s.line
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Which way a walk goes.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Direction {
    Callers,
    Callees,
}

/// A symbol id, or the one function or method with this name.
fn resolve(index: &Index, symbol: &str) -> anyhow::Result<String> {
    if symbol.contains('#') {
        anyhow::ensure!(
            index.symbol(symbol)?.is_some(),
            "no symbol has the id {symbol:?}"
        );
        return Ok(symbol.to_owned());
    }
    let found: Vec<_> = index
        .symbols(&SymbolFilter::default().name(symbol))?
        .into_iter()
        .filter(|s| s.kind == "function" || s.kind == "method")
        .collect();
    match found.as_slice() {
        [one] => Ok(one.id.clone()),
        [] => anyhow::bail!("no function or method is named {symbol:?}; `forq graph symbols --name` lists what there is"),
        many => anyhow::bail!(
            "{} functions or methods are named {symbol:?}; pass one id:\n  {}",
            many.len(),
            many.iter().map(|s| s.id.as_str()).collect::<Vec<_>>().join("\n  ")
        ),
    }
}

pub(crate) fn walk(args: GraphWalkArgs, direction: Direction) -> anyhow::Result<ExitCode> {
    let index = open_current(&args.repo, args.db.db.as_ref())?;
    let id = resolve(&index, &args.symbol)?;
    let edges = match direction {
        Direction::Callers => index.callers(&id, args.depth)?,
        Direction::Callees => index.callees(&id, args.depth)?,
    };
    let mut out = std::io::stdout().lock();
    if args.db.json {
        writeln!(out, "{}", serde_json::to_string(&edges)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    for e in &edges {
        let confidence = match e.confidence {
            forq_graph::Confidence::Unique => "unique".to_owned(),
            forq_graph::Confidence::Ambiguous { candidates } => {
                format!("ambiguous: {candidates} candidates")
            }
            _ => "unknown".to_owned(),
        };
        let (near, far) = match direction {
            Direction::Callers => (&e.callee, &e.caller),
            Direction::Callees => (&e.caller, &e.callee),
        };
        let indent = "  ".repeat(e.depth.saturating_sub(1) as usize);
        writeln!(
            out,
            "{indent}{near} -> {far}  ({}:{}, {confidence})",
            e.file, e.line
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn path(args: GraphPathArgs) -> anyhow::Result<ExitCode> {
    let index = open_current(&args.repo, args.db.db.as_ref())?;
    let (from, to) = (resolve(&index, &args.from)?, resolve(&index, &args.to)?);
    let chain = index.path(&from, &to, args.max_depth)?;
    let mut out = std::io::stdout().lock();
    if args.db.json {
        writeln!(out, "{}", serde_json::to_string(&chain)?)?;
    } else if let Some(chain) = &chain {
        for e in chain {
            writeln!(out, "{} -> {}  ({}:{})", e.caller, e.callee, e.file, e.line)?;
        }
    } else {
        writeln!(
            out,
            "no chain of at most {} calls from {from} to {to}",
            args.max_depth
        )?;
    }
    Ok(if chain.is_some() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

pub(crate) fn stats(args: GraphStatsArgs) -> anyhow::Result<ExitCode> {
    let index = open_current(&args.path, args.db.db.as_ref())?;
    let stats = index.stats()?;
    let mut out = std::io::stdout().lock();
    if args.db.json {
        writeln!(out, "{}", serde_json::to_string(&stats)?)?;
    } else {
        writeln!(
            out,
            "{} files, {} symbols, {} call sites",
            stats.files, stats.symbols, stats.calls
        )?;
        for (lang, n) in &stats.files_by_language {
            writeln!(out, "  {lang:<12} {n} files")?;
        }
        for (kind, n) in &stats.symbols_by_kind {
            writeln!(out, "  {kind:<12} {n}")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
