//! `forq triage` and `forq agent run`: an issue, a model, and for a run a
//! sandbox over the repository, provisioned by the bootstrap gate.

use crate::exit::Exit;
use crate::parts::{open_provider, prices, repo_dir, run_id};
use crate::terminal::note;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use forq_agent::agent::{Agent, AgentEvent, CodingAgent, FailedIn, Outcome, RunReport, Task};
use forq_agent::cost::Budget;
use forq_agent::issue::Issue;
use forq_agent::tools::Toolbox;
use forq_agent::triage::Triage;
use forq_agent::Observer;
use forq_bootstrap::{GateOptions, Verdict};
use forq_graph::Index;
use forq_sandbox::{Sandbox, SandboxSpec};
use serde_json::json;

use crate::cli::{AgentRunArgs, IssueArg, TriageArgs};

/// Tokens of repository map in a prompt.
const MAP_TOKENS: usize = 1024;

async fn load_issue(arg: &IssueArg) -> anyhow::Result<Issue> {
    match (&arg.text, &arg.issue) {
        (Some(text), _) => Ok(Issue::from_text(text)),
        (None, Some(spec)) => crate::parts::load_issue(spec).await,
        (None, None) => bail_input!("name the issue: a GitHub URL, a Markdown file, or --text"),
    }
}

/// The code graph of `repo`, brought up to date, and its map; `None` (with
/// a warning) when it cannot be built: the agent works without it.
async fn graph(repo: &Path, quiet: bool) -> Option<(Index, String)> {
    let repo = repo.to_owned();
    let built = tokio::task::spawn_blocking(move || -> anyhow::Result<(Index, String)> {
        let index = Index::open_current(&repo)?;
        let map = index.map(MAP_TOKENS, &[])?.text;
        Ok((index, map))
    })
    .await;
    match built {
        Ok(Ok(built)) => Some(built),
        Ok(Err(e)) => {
            if !quiet {
                note(&format!("graph: not available ({e:#}); working without it"));
            }
            None
        }
        Err(e) => {
            note(&format!(
                "graph: the indexer stopped ({e}); working without it"
            ));
            None
        }
    }
}

pub(crate) async fn triage(args: TriageArgs) -> anyhow::Result<ExitCode> {
    if !(0.0..=1.0).contains(&args.threshold) {
        bail_input!("--threshold {} is outside 0..1", args.threshold);
    }
    let issue = load_issue(&args.issue).await?;
    let (provider, model) = open_provider(&args.model)?;
    let repo = repo_dir(&args.repo)?;
    let context = graph(&repo, args.json)
        .await
        .map(|(_, map)| map)
        .unwrap_or_default();
    let decision = Triage::new(provider, &model)
        .threshold(args.threshold)
        .run(&issue.prompt(), &context)
        .await?;
    if args.json {
        crate::terminal::print_json(&json!({
            "issue": issue.source,
            "model": model,
            "act": decision.verdict.act,
            "confidence": decision.verdict.confidence,
            "reason": decision.verdict.reason,
            "suggested_action": decision.verdict.suggested_action,
            "attempt_fix": decision.attempt_fix,
            "threshold": args.threshold,
            "calls": decision.calls,
            "usage": decision.usage,
        }))?;
    } else {
        let v = &decision.verdict;
        let action = serde_json::to_value(v.suggested_action)?;
        writeln!(
            std::io::stdout().lock(),
            "{}: {} (confidence {:.2}, threshold {:.2}): {}",
            if decision.attempt_fix { "fix" } else { "skip" },
            action.as_str().unwrap_or_default(),
            v.confidence,
            args.threshold,
            v.reason
        )?;
    }
    Ok(Exit::achieved(decision.attempt_fix).into())
}

/// Prints the run on stderr as it goes: tool calls, what they answered,
/// streamed text.
#[derive(Default)]
struct Progress {
    /// Whether streamed text has left the cursor mid-line.
    mid_line: Mutex<bool>,
}

impl Observer<AgentEvent> for Progress {
    fn event(&self, event: &AgentEvent) {
        let mut mid_line = self.mid_line.lock().unwrap_or_else(|p| p.into_inner());
        let mut err = std::io::stderr().lock();
        if let AgentEvent::Text { delta, .. } = event {
            let _ = write!(err, "{delta}");
            *mid_line = !delta.ends_with('\n');
            return;
        }
        if std::mem::take(&mut *mid_line) {
            let _ = writeln!(err);
        }
        let _ = match event {
            AgentEvent::ToolCall {
                step,
                name,
                arguments,
            } => {
                let args: String = arguments.to_string().chars().take(120).collect();
                writeln!(err, "step {step}: {name} {args}")
            }
            AgentEvent::Observation {
                is_error, summary, ..
            } => writeln!(
                err,
                "  {} {summary}",
                if *is_error { "error:" } else { "->" }
            ),
            _ => Ok(()),
        };
    }
}

/// The sandbox the agent works in, and the green stack the gate found
/// (its `run_tests` tool).
async fn workspace(
    args: &AgentRunArgs,
    repo: &Path,
    backend: &dyn forq_sandbox::Backend,
) -> anyhow::Result<(Box<dyn Sandbox>, Option<forq_bootstrap::Stack>)> {
    let mut options = GateOptions::default()
        .skip(args.skip_bootstrap)
        .image(args.backend.image.clone());
    options.golden =
        crate::parts::golden_options(args.golden.golden, backend, &repo.display().to_string())?;
    let options = if args.json {
        options
    } else {
        options.observer(Arc::new(crate::terminal::Lines::default()))
    };
    let record = forq_bootstrap::run(backend, repo, &options).await?;
    if let Some(stack) = record.green_stack() {
        if !args.json {
            note(&format!(
                "provision {}: {}",
                stack.name(),
                if stack.install.is_empty() {
                    "nothing to install".to_owned()
                } else {
                    stack.install.join(" && ")
                }
            ));
        }
        let sandbox = forq_bootstrap::provision(backend, repo, &stack, &options).await?;
        return Ok((sandbox, Some(stack)));
    }
    if record.verdict != Verdict::Skipped {
        note(&format!(
            "bootstrap: {} ({}); the agent gets no run_tests tool",
            record.verdict.name(),
            record.reason
        ));
    }
    let mut spec = SandboxSpec::new(repo).limits(forq_sandbox::Limits::standard());
    if let Some(image) = &args.backend.image {
        spec = spec.image(image.clone());
    }
    Ok((backend.create(&spec).await?, None))
}

pub(crate) async fn run(args: AgentRunArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let issue = load_issue(&args.issue).await?;
    let (provider, model) = open_provider(&args.model)?;
    let prices = prices(&args.model)?;
    let repo = repo_dir(&args.repo)?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| repo.join(".forq").join("agent").join(run_id()));
    forq_sandbox::refuse_link(&repo.join(".forq"))?;
    std::fs::create_dir_all(&out)
        .with_context(|| format!("cannot make the run directory {}", out.display()))?;
    let transcript = out.join("transcript.jsonl");
    if transcript.exists() {
        bail_input!(
            "{} already holds a run's transcript; pass another --out",
            out.display()
        );
    }

    let backend = crate::parts::open_backend(args.backend.backend).await?;
    let (sandbox, stack) = workspace(&args, &repo, &*backend).await?;
    let mut task = Task::new(issue.prompt());
    let index = match graph(&repo, args.json).await {
        Some((index, map)) => {
            task.context = map;
            Some(index)
        }
        None => None,
    };
    let tools = Toolbox::coding(stack, index);
    let mut budget = Budget::default().max_steps(args.max_steps);
    if let Some(usd) = args.max_cost {
        budget = budget.max_cost_usd(usd);
    }
    if let Some(tokens) = args.max_tokens {
        budget = budget.max_tokens(tokens);
    }
    if let Some(secs) = args.max_time {
        budget = budget.wall_clock(Duration::from_secs(secs));
    }
    let mut agent = Agent::new(provider, &model)
        .tools(tools)
        .budget(budget)
        .prices(prices)
        .transcript(&transcript);
    if !args.json {
        agent = agent.stream(true).observer(Arc::new(Progress::default()));
    }
    let report = agent.run(&*sandbox, &task).await;
    if let Err(e) = sandbox.destroy().await {
        note(&format!(
            "the sandbox could not be removed: {e}; `forq sandbox gc` cleans up"
        ));
    }
    finish(&args, &issue, &model, &out, &transcript, &report, started)
}

/// Writes the patch and the report, prints the outcome, picks the exit code.
fn finish(
    args: &AgentRunArgs,
    issue: &Issue,
    model: &str,
    out: &Path,
    transcript: &Path,
    report: &RunReport,
    started: Instant,
) -> anyhow::Result<ExitCode> {
    let diff = match &report.outcome {
        Outcome::Submitted { diff, .. } | Outcome::NeedsHuman { diff, .. } => diff.as_str(),
        Outcome::Failed { .. } => "",
    };
    let patch = (!diff.is_empty()).then(|| out.join("fix.patch"));
    if let Some(path) = &patch {
        std::fs::write(path, diff)
            .with_context(|| format!("cannot write the patch {}", path.display()))?;
    }
    let changed = diff
        .lines()
        .filter(|l| {
            (l.starts_with('+') && !l.starts_with("+++"))
                || (l.starts_with('-') && !l.starts_with("---"))
        })
        .count();
    let elapsed = started.elapsed().as_secs_f64();
    let summary = json!({
        "issue": issue.source,
        "model": model,
        "outcome": report.outcome,
        "steps": report.steps,
        "usage": report.usage,
        "cost_usd": report.cost_usd,
        "patch": patch,
        "diff_lines": changed,
        "transcript": transcript,
        "elapsed_s": (elapsed * 10.0).round() / 10.0,
    });
    let report_path = out.join("report.json");
    std::fs::write(&report_path, serde_json::to_vec_pretty(&summary)?)
        .with_context(|| format!("cannot write {}", report_path.display()))?;
    if args.json {
        crate::terminal::print_json(&summary)?;
    } else {
        let mut so = std::io::stdout().lock();
        match &report.outcome {
            Outcome::Submitted { summary, .. } => writeln!(so, "submitted: {summary}")?,
            Outcome::NeedsHuman {
                reason, question, ..
            } => {
                writeln!(so, "needs a human: {reason}")?;
                if let Some(q) = question {
                    writeln!(so, "question: {q}")?;
                }
            }
            Outcome::Failed { error, .. } => writeln!(so, "failed: {error}")?,
        }
        if let Some(path) = &patch {
            writeln!(so, "patch: {} ({changed} lines changed)", path.display())?;
        }
        writeln!(so, "transcript: {}", transcript.display())?;
        writeln!(
            so,
            "{} steps · {} tokens · ${:.4} · {elapsed:.1} s",
            report.steps,
            report.usage.input_tokens + report.usage.output_tokens,
            report.cost_usd
        )?;
    }
    Ok(match &report.outcome {
        Outcome::Submitted { .. } => ExitCode::SUCCESS,
        Outcome::NeedsHuman { .. } => Exit::NotAchieved.into(),
        // Where it failed says the class, as for every command.
        Outcome::Failed { cause, .. } => match cause {
            FailedIn::Model => Exit::Model,
            FailedIn::Sandbox | FailedIn::Transcript => Exit::Infrastructure,
            _ => Exit::Unclassified,
        }
        .into(),
    })
}
