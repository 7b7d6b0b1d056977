//! `forq eval`: benchmark instances in SWE-bench's format through
//! forq-app's harness, with a table (or the report as JSON) at the end.

use crate::exit::Exit;
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use forq_app::config::Config;
use forq_app::eval::{read_instances, EvalOptions, Harness, InstanceResult, Report, Status};
use forq_app::pipeline::Pipeline;
use forq_search::plan::BrancherKind;

use crate::cli::EvalArgs;
use crate::terminal::note;

pub(crate) async fn run(args: EvalArgs) -> anyhow::Result<ExitCode> {
    let instances = read_instances(&args.instances)?;
    if let Some(repos) = &args.repos {
        if !repos.is_dir() {
            bail_input!("--repos {}: not a directory", repos.display());
        }
    }
    let config = settings(&args)?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let out = args.out.canonicalize()?;
    let state = out.join("state");
    std::fs::create_dir_all(&state)?;
    let store = crate::parts::open_store(&state, None)?;
    let backend = crate::parts::open_backend(args.backend.backend).await?;
    let model = crate::parts::owner_model(&args.model)?;
    let pipeline = Pipeline::new(store, &state, backend).model(model);
    let fix = &config.actions.fix;
    let brancher = fix
        .brancher
        .unwrap_or_else(|| fix.strategy.default_brancher())
        .name();
    let options = EvalOptions {
        out: out.clone(),
        repos: args.repos.as_ref().map(|r| r.canonicalize()).transpose()?,
        with_tests: args.with_tests,
        model_name: args
            .model_name
            .clone()
            .unwrap_or_else(|| format!("forq-{brancher}")),
        jobs: args.jobs,
        test_timeout: Duration::from_secs(args.test_timeout),
    };
    let harness = Arc::new(Harness::new(pipeline, config, options));
    let before = harness.previous().len();
    if before > 0 {
        note(&format!(
            "eval: resuming in {}: {before} instance(s) already judged",
            out.display()
        ));
    }
    let total = instances.len();
    let quiet = args.json;
    let done = Arc::new(move |r: &InstanceResult| {
        if !quiet {
            note(&format!(
                "eval: {} {} ({:.1} s): {}",
                r.instance_id,
                status_name(r.status),
                r.predict_s + r.evaluate_s,
                r.reason
            ));
        }
    });
    let report = harness.run(&instances, done).await?;
    if args.json {
        crate::terminal::print_json(&report)?;
    } else {
        table(&report, total)?;
        note(&format!(
            "eval: predictions in {}",
            out.join("predictions.jsonl").display()
        ));
    }
    let judged = report.setup_failed == 0 && report.errors == 0;
    Ok(Exit::achieved(judged).into())
}

/// The run settings: --config's (or the defaults), with the flags given
/// on top.
fn settings(args: &EvalArgs) -> anyhow::Result<Config> {
    let mut config = crate::parts::load_config(args.config.as_ref())?.unwrap_or_default();
    let fix = &mut config.actions.fix;
    if let Some(s) = args.strategy {
        fix.strategy = s;
    }
    if let Some(b) = args.brancher {
        if b == BrancherKind::Patches {
            bail_input!("--brancher patches has no candidates to offer an instance");
        }
        fix.brancher = Some(b);
    }
    if let Some(n) = args.max_nodes {
        fix.budget.max_nodes = n;
    }
    if let Some(s) = args.max_time {
        fix.budget.max_time_s = Some(s);
    }
    if let Some(n) = args.max_steps {
        fix.agent.max_steps = n;
    }
    if let Some(usd) = args.max_cost {
        fix.agent.max_cost_usd = Some(usd);
    }
    config.test.timeout_s = args.test_timeout;
    Ok(config)
}

fn status_name(s: Status) -> &'static str {
    match s {
        Status::Resolved => "resolved",
        Status::Unresolved => "unresolved",
        Status::SetupFailed => "setup_failed",
        Status::Error => "error",
    }
}

fn table(report: &Report, total: usize) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{:<28} {:<13} {:>6} {:>7} {:>8}  REASON",
        "INSTANCE", "STATUS", "PATCH", "COST", "TIME"
    )?;
    for r in &report.results {
        let reason: String = r.reason.chars().take(70).collect();
        writeln!(
            out,
            "{:<28} {:<13} {:>6} {:>7} {:>7.1}s  {}",
            r.instance_id,
            status_name(r.status),
            if r.patch_lines > 0 {
                format!("{}L", r.patch_lines)
            } else {
                "-".to_owned()
            },
            format!("${:.2}", r.cost_usd),
            r.predict_s + r.evaluate_s,
            reason
        )?;
    }
    writeln!(
        out,
        "resolved {}/{total} ({:.1}%), unresolved {}, setup failed {}, errors {}; ${:.2}, {:.1} s over all instances",
        report.resolved,
        report.resolved_rate * 100.0,
        report.unresolved,
        report.setup_failed,
        report.errors,
        report.cost_usd,
        report.instance_s
    )?;
    Ok(())
}
