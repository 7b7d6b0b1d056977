//! `forq search bench`: expansion orders (or, with `--spaces`, repair
//! spaces) side by side over the examples, and fork-based against
//! cold-copy evaluation on one with a non-trivial install. Copies of the
//! examples are measured, so nothing is written into them.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use forq_search::bench::{self, OrderRun, SpaceRun};
use forq_search::Budget;
use serde_json::json;

use crate::cli::SearchBenchArgs;
use crate::terminal::note;

/// The examples directory next to the binary's workspace, or under the
/// current directory.
fn examples_dir() -> PathBuf {
    PathBuf::from("examples")
}

fn default_examples() -> anyhow::Result<Vec<PathBuf>> {
    let dir = examples_dir();
    let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
        .with_context(|| {
            format!(
                "no {} here: run from forq's checkout, or name example directories",
                dir.display()
            )
        })?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("ISSUE.md").is_file())
        .collect();
    found.sort();
    Ok(found)
}

pub(crate) async fn run(args: SearchBenchArgs) -> anyhow::Result<ExitCode> {
    let examples = if args.examples.is_empty() {
        default_examples()?
    } else {
        args.examples.clone()
    };
    let scratch = tempfile::Builder::new()
        .prefix("forq-search-bench-")
        .tempdir()?;
    let copies = copies_in(scratch.path(), &examples)?;
    let backend = crate::parts::open_backend(args.backend.backend).await?;
    // One evaluation at a time unless asked: node counts then depend on
    // the order alone.
    let mut budget = Budget::default()
        .max_nodes(args.max_nodes)
        .jobs(args.jobs.unwrap_or(1));
    if let Some(s) = args.max_time {
        budget = budget.wall_clock(std::time::Duration::from_secs(s));
    }
    let quiet = args.json;
    if args.spaces {
        return spaces(&args, &*backend, &copies, &budget).await;
    }
    let progress = move |r: &OrderRun| {
        if !quiet {
            note(&format!(
                "{:<18} {:<14} {} in {} candidates, {:.1} s",
                r.example,
                r.order,
                if r.solved { "solved" } else { "not solved" },
                r.nodes,
                r.wall_s
            ));
        }
    };
    let (runs, summary) = bench::compare_orders(&*backend, &copies, &budget, &progress).await?;
    let throughput = if args.no_throughput {
        None
    } else {
        let heavy = args
            .heavy
            .clone()
            .unwrap_or_else(|| examples_dir().join("py-venv-median"));
        let to = scratch.path().join("heavy");
        forq_search::bench::copy_tree(&heavy, &to)
            .with_context(|| format!("cannot copy {}", heavy.display()))?;
        if !quiet {
            note(&format!(
                "throughput: {} candidates of {} each way",
                args.throughput_candidates,
                heavy.display()
            ));
        }
        Some(bench::throughput(&*backend, &to, args.throughput_candidates).await?)
    };
    if args.json {
        crate::terminal::print_json(&json!({
            "backend": backend.kind().to_string(),
            "budget": {"max_nodes": args.max_nodes, "jobs": budget.jobs},
            "runs": runs,
            "orders": summary,
            "throughput": throughput,
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    print_orders(&summary, throughput.as_ref())
}

/// Copies of the examples in `scratch` (a search writes into its tree).
fn copies_in(scratch: &std::path::Path, examples: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut copies = Vec::new();
    for e in examples {
        let name = e
            .file_name()
            .with_context(|| format!("{} is not a directory name", e.display()))?;
        let to = scratch.join(name);
        forq_search::bench::copy_tree(e, &to)
            .with_context(|| format!("cannot copy {}", e.display()))?;
        copies.push(to);
    }
    Ok(copies)
}

/// The orders' table and the throughput, for a person.
fn print_orders(
    summary: &[bench::OrderSummary],
    throughput: Option<&bench::Throughput>,
) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{:<14} {:>8} {:>22} {:>14}",
        "order", "solved", "mean nodes (common)", "median wall"
    )?;
    for s in summary {
        writeln!(
            out,
            "{:<14} {:>5}/{:<2} {:>22.1} {:>12.2} s",
            s.order, s.solved, s.examples, s.mean_nodes_common, s.median_wall_s
        )?;
    }
    if let Some(t) = throughput {
        writeln!(
            out,
            "throughput on {} ({} candidates; root provisioned once in {:.1} s):",
            t.example, t.fork.candidates, t.provision_s
        )?;
        for (name, e) in [("fork", &t.fork), ("cold copy", &t.cold)] {
            writeln!(
                out,
                "  {name:<10} {:>8.1} candidates/min  (median {:.2} s each, {:.1} s in all)",
                e.per_minute, e.median_s, e.total_s
            )?;
        }
        writeln!(out, "  fork / cold: {:.1}x", t.ratio)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `--spaces`: `mutate` against `templates` on the same bugs and budget.
async fn spaces(
    args: &SearchBenchArgs,
    backend: &dyn forq_sandbox::Backend,
    copies: &[PathBuf],
    budget: &Budget,
) -> anyhow::Result<ExitCode> {
    let quiet = args.json;
    let progress = move |r: &SpaceRun| {
        if !quiet {
            let fault = match (r.fault_rank, r.fault_candidates) {
                (_, None) => String::new(),
                (Some(rank), Some(n)) => format!("; fault suspected #{rank}, edited by {n}"),
                (None, Some(n)) if r.suspected > 0 => {
                    format!("; fault not suspected, edited by {n}")
                }
                (None, Some(n)) => format!("; fault edited by {n}"),
            };
            note(&format!(
                "{:<18} {:<10} {} in {} candidates ({} hung), {:.1} s{fault}",
                r.example,
                r.brancher,
                if r.solved { "solved" } else { "not solved" },
                r.nodes,
                r.hung,
                r.wall_s
            ));
        }
    };
    let gate = forq_bootstrap::GateOptions::default()
        .test_idle(args.test_idle.map(std::time::Duration::from_secs_f64));
    let report = bench::compare_spaces(backend, copies, budget, &gate, &progress).await;
    if args.json {
        crate::terminal::print_json(&json!({
            "backend": backend.kind().to_string(),
            "budget": {
                "max_nodes": args.max_nodes,
                "max_time_s": args.max_time,
                "jobs": budget.jobs,
            },
            "runs": report.runs,
            "spaces": report.spaces,
            "unmeasured": report.unmeasured,
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{:<10} {:>8} {:>22} {:>16} {:>6} {:>10}",
        "brancher", "solved", "mean nodes (common)", "median solved", "hung", "timed out"
    )?;
    for s in &report.spaces {
        writeln!(
            out,
            "{:<10} {:>5}/{:<2} {:>22.1} {:>14.2} s {:>6} {:>10}",
            s.brancher,
            s.solved,
            s.examples,
            s.mean_nodes_common,
            s.median_solved_s,
            s.hung,
            s.timed_out
        )?;
    }
    for s in report.spaces.iter().filter(|s| s.with_fault > 0) {
        writeln!(
            out,
            "{}: the FAULT among suspected lines in {}/{} localised, edited by a candidate in {}/{}",
            s.brancher, s.fault_suspected, s.localised, s.fault_edited, s.with_fault
        )?;
    }
    for u in &report.unmeasured {
        writeln!(out, "not measured: {}: {}", u.example, u.reason)?;
    }
    Ok(ExitCode::SUCCESS)
}
