//! `forq bootstrap`: the bootstrap gate on a repository.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use forq_bootstrap::GateOptions;

use crate::cli::BootstrapArgs;

pub(crate) async fn run(args: BootstrapArgs) -> anyhow::Result<ExitCode> {
    let repo = args
        .path
        .canonicalize()
        .with_context(|| format!("the repository {} does not exist", args.path.display()))?;
    let mut options = GateOptions::default()
        .skip(args.skip_bootstrap)
        .no_cache(args.no_cache);
    if let Some(secs) = args.timeout {
        options = options.timeout(Duration::from_secs(secs));
    }
    let backend = super::sandbox::open(args.backend.backend).await?;
    let record = forq_bootstrap::run(&*backend, &repo, &options).await?;
    if args.json {
        super::print_json(&record)?;
    } else {
        let mut out = std::io::stdout().lock();
        for s in &record.stacks {
            writeln!(
                out,
                "{:<10} {}  ({}, {} ms)",
                s.name, s.command, s.marker, s.duration_ms
            )?;
            for step in &s.install {
                writeln!(out, "           install: {step}")?;
            }
            writeln!(
                out,
                "           -> {}: {}",
                verdict_name(s.verdict)?,
                s.reason
            )?;
        }
        for line in &record.evidence {
            writeln!(out, "evidence: {line}")?;
        }
        writeln!(
            out,
            "{}: {} ({} ms)",
            verdict_name(record.verdict)?,
            record.reason,
            record.duration_ms
        )?;
    }
    Ok(ExitCode::from(record.verdict.exit_code()))
}

/// A verdict as it is written in JSON (`failed_deterministic`).
fn verdict_name(verdict: forq_bootstrap::Verdict) -> anyhow::Result<String> {
    Ok(serde_json::to_value(verdict)?
        .as_str()
        .unwrap_or_default()
        .to_owned())
}
