//! `forq graph index` and `forq graph symbols`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use forq_graph::{Index, SymbolFilter};

use crate::cli::{GraphIndexArgs, GraphSymbolsArgs};

fn open(repo: &Path, db: Option<&PathBuf>) -> anyhow::Result<Index> {
    let db = db
        .cloned()
        .unwrap_or_else(|| repo.join(".forq").join("graph.db"));
    Index::open(&db, repo).with_context(|| format!("open the code graph of {}", repo.display()))
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
    let mut index = open(&args.repo, args.db.db.as_ref())?;
    index.update()?;
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
