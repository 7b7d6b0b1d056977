//! `forq bootstrap`: the bootstrap gate on a repository (a directory, or a
//! git URL cloned shallow first).

use crate::exit::Exit;
use crate::parts::{source_workspace, Workspace};
use crate::terminal::Lines;
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use forq_bootstrap::GateOptions;

use crate::cli::BootstrapArgs;

/// A progress line on stderr (a closed stderr is no reason to stop).
fn note(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// The repository the gate runs on: the directory given, or a fresh clone.
async fn workspace(args: &BootstrapArgs) -> anyhow::Result<Workspace> {
    source_workspace(
        &args.source,
        args.into.as_deref(),
        args.clone_timeout,
        args.clone_max_mb,
        args.json,
    )
    .await
}

pub(crate) async fn run(args: BootstrapArgs) -> anyhow::Result<ExitCode> {
    let repo = workspace(&args).await?;
    let mut options = GateOptions::default()
        .skip(args.skip_bootstrap)
        .no_cache(args.no_cache)
        .image(args.backend.image.clone());
    if let Some(secs) = args.timeout {
        options = options.timeout(Duration::from_secs(secs));
    }
    if let Some(db) = &args.store {
        options = options.store(db);
    }
    if !args.json {
        options = options.observer(Arc::new(Lines::default()));
    }
    if !args.offline {
        match crate::parts::open_provider(&args.model) {
            Ok((provider, model)) => {
                let provider: Arc<dyn forq_agent::provider::Provider> = match &args.agentic_record {
                    Some(path) => Arc::new(forq_agent::provider::Recorder::new(provider, path)?),
                    None => provider,
                };
                let mut configurator =
                    forq_agent::configure::ModelConfigurator::new(provider, model);
                if let Some(path) = &args.model.prices {
                    let text = std::fs::read_to_string(path)
                        .with_context(|| format!("cannot read --prices {}", path.display()))?;
                    configurator = configurator.prices(
                        forq_agent::cost::PriceTable::from_json(&text).with_context(|| {
                            format!("--prices {} is not a price table", path.display())
                        })?,
                    );
                }
                if let Some(usd) = args.agentic_max_cost {
                    configurator = configurator.max_cost_usd(usd);
                }
                if let Some(tokens) = args.agentic_max_tokens {
                    configurator = configurator.max_tokens(tokens);
                }
                options.configurator = Some(Arc::new(configurator));
                options.configure_limits.max_steps = args.agentic_steps;
                options.configure_limits.wall_clock = Duration::from_secs(args.agentic_timeout);
            }
            Err(e) if !args.json => note(&format!("agentic fallback: off ({e:#})")),
            Err(_) => {}
        }
    }
    let backend = crate::parts::open_backend(args.backend.backend).await?;
    options.golden = crate::parts::golden_options(
        args.golden.golden,
        &*backend,
        &crate::parts::identity(&args.source, &repo.path),
    )?;
    let record = forq_bootstrap::run(&*backend, &repo.path, &options).await?;
    if args.json {
        crate::terminal::print_json(&record)?;
    } else {
        let mut out = std::io::stdout().lock();
        for s in &record.stacks {
            writeln!(
                out,
                "{:<10} {}  ({}, {} ms)",
                s.name, s.command, s.marker, s.duration_ms
            )?;
            if let Some(retry) = &s.retry {
                writeln!(out, "           retried: {retry}")?;
            }
            for step in &s.install {
                writeln!(out, "           install: {step}")?;
            }
            writeln!(out, "           -> {}: {}", s.verdict.name(), s.reason)?;
        }
        for line in &record.evidence {
            writeln!(out, "evidence: {line}")?;
        }
        let cached = if record.cached {
            " [cached: .forq/bootstrap/manifest.json; --no-cache runs again]"
        } else {
            ""
        };
        writeln!(
            out,
            "{}: {} ({} ms){cached}",
            record.verdict.name(),
            record.reason,
            record.duration_ms
        )?;
    }
    Ok(Exit::achieved(record.verdict.lets_work_go_on()).into())
}
