//! `forq fix`: gate → oracle → strategy → the smallest green patch, with
//! live progress on stderr and `fix.patch`, `tree.json`, `summary.json`.

use crate::exit::Exit;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use forq_agent::external::Program;
use forq_agent::issue::Issue;
use forq_agent::provider::Provider;
use forq_bootstrap::GateOptions;
use forq_graph::Index;
use forq_search::brancher::Patches;
use forq_search::tree::{SearchEvent, Status};
use forq_search::Observer;
use forq_search::{Order, Prepared};

use crate::cli::{CodingAgentName, FixArgs, ModifyTarget, OrderName};
use crate::parts::{open_provider, prices, run_id};
use crate::terminal::note;
use forq_search::plan::{BrancherKind, Built, FixPlan, PlanError, PlanModel, SearchBudget};

/// Counts nodes as they are judged and prints one line each on stderr.
#[derive(Default)]
struct Progress {
    counts: Mutex<(usize, usize, usize, Option<usize>)>,
}

impl Observer<SearchEvent> for Progress {
    fn event(&self, event: &SearchEvent) {
        let SearchEvent::Node(node) = event else {
            return;
        };
        // A node weighed at the end (its evidence) was counted when judged.
        if node.id == 0
            || node.evidence.is_some()
            || !matches!(node.status, Status::Red | Status::Green)
        {
            return;
        }
        let mut c = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        c.0 += 1;
        if node.status == Status::Green {
            c.2 += 1;
            c.3 = Some(c.3.map_or(node.score.diff_lines, |b| b.min(node.score.diff_lines)));
        } else {
            c.1 += 1;
        }
        let best = c.3.map_or("-".to_owned(), |b| format!("{b} lines"));
        let status = if node.status == Status::Green {
            "green".to_owned()
        } else {
            format!("red ({})", node.reason)
        };
        note(&format!(
            "[{} explored · {} red · {} green · best {best}] node {} {status}: {} ({:.1} s)",
            c.0,
            c.1,
            c.2,
            node.id,
            node.hypothesis,
            node.eval_ms as f64 / 1000.0
        ));
    }
}

/// The repository and the issue the arguments name.
async fn target(args: &FixArgs) -> anyhow::Result<(PathBuf, Option<Issue>)> {
    let given = args.issue.as_deref().map(Path::new);
    if let Some(dir) = given.filter(|p| p.is_dir()) {
        let repo = args.repo.clone().unwrap_or_else(|| dir.to_owned());
        let issue_file = dir.join("ISSUE.md");
        let issue = match issue_file.is_file() {
            true => Some(Issue::from_file(&issue_file)?),
            false => None,
        };
        return Ok((repo, issue));
    }
    let issue = match (&args.text, &args.issue) {
        (Some(text), _) => Some(Issue::from_text(text)),
        (None, Some(spec)) => Some(crate::parts::load_issue(spec).await?),
        (None, None) => None,
    };
    Ok((
        args.repo.clone().unwrap_or_else(|| PathBuf::from(".")),
        issue,
    ))
}

fn open_index(repo: &Path) -> anyhow::Result<Index> {
    Index::open_current(repo).with_context(|| format!("open the code graph of {}", repo.display()))
}

/// The model the arguments configure, opened once for the reproducer and
/// the brancher (a replay plays on across both), or why there is none.
type Model = Result<(Arc<dyn Provider>, String), String>;

/// Everything the arguments name, as one plan: the strategy and
/// brancher, the model (for the brancher, the reproduction test and the
/// gate's fallback), the coding-agent program, the caps and the search's
/// limits. forq-search's `FixPlan` wires the parts, as it does the pipeline's.
fn plan_of(args: &FixArgs, issue: Option<&Issue>, model: &Model) -> anyhow::Result<FixPlan> {
    let mut plan = FixPlan::new(args.strategy);
    plan.brancher = args.brancher;
    let kind = plan.brancher_kind();
    plan.issue = issue.map(Issue::prompt).unwrap_or_default();
    plan.max_steps = args.max_steps;
    plan.max_cost_usd = args.max_cost;
    plan.agent_model = args.model.model.clone();
    plan.program = match args.coding_agent {
        CodingAgentName::Forq => None,
        CodingAgentName::ClaudeCode => Some(Program::ClaudeCode),
        CodingAgentName::Codex => Some(Program::Codex),
    };
    if kind == BrancherKind::Patches {
        if args.patches.is_empty() {
            bail_input!("--brancher patches reads its candidates from --patches PATH (files or directories)");
        }
        plan.patches = Some(Patches::from_paths(&args.patches)?);
    }
    match model {
        Ok((provider, name)) => {
            plan.model = Some(PlanModel {
                provider: provider.clone(),
                name: name.clone(),
                prices: prices(&args.model)?,
            });
        }
        // The brancher calls a model and none opens: say why it did not.
        // (An external program is the agent brancher's model; it does
        // nothing for `llm`.)
        Err(why)
            if kind.needs_model() && !(kind == BrancherKind::Agent && plan.program.is_some()) =>
        {
            return Err(anyhow::Error::msg(why.clone()));
        }
        Err(_) => {}
    }
    plan.budget = SearchBudget {
        max_nodes: args.max_nodes,
        max_depth: args.max_depth,
        max_time_s: args.max_time,
        jobs: args.jobs,
    };
    plan.branching = args.branching;
    plan.order = Some(match args.order {
        OrderName::BestFirst => Order::BestFirst,
        OrderName::BreadthFirst => Order::BreadthFirst,
        OrderName::Random => Order::Random(0x5eed),
    });
    plan.keep_searching = args.keep_searching;
    plan.plausible = args.plausible;
    // A program that cannot run (its key unset) is said before anything
    // is provisioned.
    match plan.check() {
        Err(PlanError::Program { why }) => {
            Err(anyhow::anyhow!("--coding-agent needs its key: {why}"))
        }
        Err(e) => Err(e.into()),
        Ok(()) => Ok(plan),
    }
}

/// The strategy over the prepared root and the search's options, the
/// code graph opened for the brancher that reads it.
async fn build(plan: FixPlan, repo: &Path, prepared: &Prepared) -> anyhow::Result<Built> {
    let kind = plan.brancher_kind();
    // The code graph: mutate and llm need it; the agent uses it if it opens.
    let r = repo.to_owned();
    let index = tokio::task::spawn_blocking(move || open_index(&r)).await?;
    let index = match (kind, index) {
        (BrancherKind::Mutate | BrancherKind::Templates | BrancherKind::Llm, index) => Some(index?),
        (BrancherKind::Agent, index) => index.ok(),
        (_, _) => None,
    };
    Ok(plan.build(index, prepared)?)
}

/// The class of the change the winner made to `target`'s definition, and
/// for C its callers.
async fn contract_of(
    repo: &Path,
    winner: &dyn forq_sandbox::Sandbox,
    target: &ModifyTarget,
    provider: Arc<dyn Provider>,
    model: &str,
) -> anyhow::Result<forq_agent::contract::Ripple> {
    let symbol = target
        .symbol
        .clone()
        .context("forq modify names no definition")?;
    let text = winner
        .read_file(Path::new(&symbol.file))
        .await
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    let new = forq_graph::Lang::of_path(Path::new(&symbol.file))
        .and_then(|lang| forq_graph::definition_source(lang, &text, &symbol.name, symbol.line))
        .unwrap_or_default();
    let r = repo.to_owned();
    let index = tokio::task::spawn_blocking(move || open_index(&r)).await??;
    let check = forq_agent::contract::ContractCheck::new(provider, model);
    Ok(check
        .ripple(&index, &symbol.id, &target.old, &new, target.depth)
        .await?)
}

pub(crate) async fn run(args: FixArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let (repo, issue) = target(&args).await?;
    let repo = repo.canonicalize().with_context(|| {
        format!(
            "the repository {} does not exist; pass --repo DIR",
            repo.display()
        )
    })?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| repo.join(".forq").join("fix").join(run_id()));
    forq_sandbox::refuse_link(&repo.join(".forq"))?;
    let backend = crate::parts::open_backend(args.backend.backend).await?;
    let mut gate = GateOptions::default()
        .image(args.backend.image.clone())
        .test_idle(args.test_idle.map(Duration::from_secs_f64));
    gate.golden =
        crate::parts::golden_options(args.golden.golden, &*backend, &repo.display().to_string())?;
    if !args.json {
        gate = gate.observer(Arc::new(crate::terminal::Lines::default()));
    }
    let model: Model = open_provider(&args.model).map_err(|e| format!("{e:#}"));
    let plan = plan_of(&args, issue.as_ref(), &model)?;
    // With a model, a repository detection cannot set up gets the agentic
    // fallback, and an issue no test catches yet a reproduction test
    // first (written by the agent, checked to fail).
    gate.configurator = plan.configurator();
    let reproducer = match &issue {
        Some(issue) if args.targets.is_empty() => plan.reproducer(issue.prompt()),
        _ => None,
    };
    let prepared = forq_search::prepare_with(
        &*backend,
        &repo,
        &gate,
        &args.targets,
        Duration::from_secs(args.test_timeout),
        reproducer
            .as_ref()
            .map(|r| r as &dyn forq_search::Reproducer),
    )
    .await?;
    if let (Some(summary), false) = (&prepared.reproduction, args.json) {
        note(&format!(
            "reproduction: {} ({summary})",
            prepared.seed.keys().cloned().collect::<Vec<_>>().join(", ")
        ));
    }
    if !args.json {
        note(&format!(
            "oracle: {} target test(s) failing ({}), {} guard test(s) passing",
            prepared.oracle.target.len(),
            prepared.oracle.target.join(", "),
            prepared.oracle.guard.len()
        ));
    }
    let result = search(&args, &repo, plan, &prepared, &model, started, &out).await;
    let _ = prepared.root.destroy().await;
    result
}

async fn search(
    args: &FixArgs,
    repo: &Path,
    plan: FixPlan,
    prepared: &Prepared,
    model: &Model,
    started: Instant,
    out: &Path,
) -> anyhow::Result<ExitCode> {
    let Built {
        strategy,
        mut options,
        ..
    } = build(plan, repo, prepared).await?;
    if !args.json {
        options = options.observer(Arc::new(Progress::default()));
    }
    let outcome = strategy
        .run(
            &*prepared.root,
            &prepared.oracle,
            &prepared.genesis,
            &options,
        )
        .await?;
    let report = forq_search::write_report(out, &*strategy, prepared, &outcome, started.elapsed())?;
    // `forq modify`: the changed definition's class and the callers it
    // reaches, from the winner's code.
    let contract = match (&outcome.winner, &args.modify, model) {
        (Some(w), Some(target), Ok((provider, name))) => {
            Some(contract_of(repo, &*w.sandbox, target, provider.clone(), name).await?)
        }
        _ => None,
    };
    if let Some(c) = &contract {
        let path = out.join("contract.json");
        std::fs::write(&path, serde_json::to_vec_pretty(c)?)
            .with_context(|| format!("write {}", path.display()))?;
    }
    if let Some(w) = outcome.winner {
        let _ = w.sandbox.destroy().await;
        if !args.json {
            let mut so = std::io::stdout().lock();
            writeln!(
                so,
                "solved: {}",
                report.hypothesis.clone().unwrap_or_default()
            )?;
            write!(so, "{}", w.patch)?;
        }
    }
    if args.json {
        let mut value = serde_json::to_value(&report)?;
        if let (Some(c), Some(map)) = (&contract, value.as_object_mut()) {
            map.insert("contract".to_owned(), serde_json::to_value(c)?);
        }
        crate::terminal::print_json(&value)?;
    } else {
        print_report(&report, contract.as_ref())?;
    }
    Ok(Exit::achieved(report.solved).into())
}

/// The fix's result for a person: the contract (with `forq modify`), the
/// patch and tree's paths, the other plausible patches, and one summary
/// line.
fn print_report(
    report: &forq_search::FixReport,
    contract: Option<&forq_agent::contract::Ripple>,
) -> anyhow::Result<()> {
    if let Some(c) = contract {
        note(&format!(
            "contract: {:?} ({}){}",
            c.classification.class,
            c.classification.reason,
            if c.callers.is_empty() {
                String::new()
            } else {
                format!(
                    "; callers to check: {}",
                    c.callers
                        .iter()
                        .map(|e| format!("{} ({}:{})", e.caller, e.file, e.line))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
        ));
    }
    let mut so = std::io::stdout().lock();
    if !report.solved {
        writeln!(so, "not solved: no green candidate within the budget")?;
    }
    if let Some(p) = &report.patch {
        writeln!(so, "patch: {}", p.display())?;
    }
    writeln!(so, "tree: {}", report.tree.display())?;
    let best = if report.solved {
        format!(
            "best {} line{}",
            report.diff_lines,
            if report.diff_lines == 1 { "" } else { "s" }
        )
    } else {
        "no fix".to_owned()
    };
    if let Some(ev) = &report.evidence {
        // Green is plausible, not proven: say what else speaks for it.
        writeln!(so, "{}: {}", ev.verdict.name(), ev.why)?;
    }
    if report.plausible.len() > 1 {
        writeln!(
            so,
            "plausible: {} green patches; handed back the one the evidence ranks first ({} lines); the others:",
            report.plausible.len(),
            report.diff_lines
        )?;
        for p in report.plausible.iter().skip(1) {
            let why = p
                .evidence
                .as_ref()
                .map(|e| format!(" [{}: {}]", e.verdict.name(), e.why))
                .unwrap_or_default();
            writeln!(
                so,
                "  node {} ({} lines): {}{why}",
                p.node, p.diff_lines, p.hypothesis
            )?;
        }
    }
    writeln!(
        so,
        "1 issue · {} candidate{} · {} green · {best} · {:.1} s",
        report.nodes,
        if report.nodes == 1 { "" } else { "s" },
        report.green,
        report.elapsed_s
    )?;
    Ok(())
}

pub(crate) async fn modify(mut args: crate::cli::ModifyArgs) -> anyhow::Result<ExitCode> {
    if args.fix.issue.is_some() || args.fix.text.is_some() {
        bail_input!("forq modify takes the new behaviour with --change TEXT, not an issue");
    }
    let repo = args.fix.repo.clone().unwrap_or_else(|| PathBuf::from("."));
    let repo = repo.canonicalize().with_context(|| {
        format!(
            "the repository {} does not exist; pass --repo DIR",
            repo.display()
        )
    })?;
    crate::parts::open_provider(&args.fix.model)
        .context("forq modify changes behaviour with a model")?;
    let (r, query) = (repo.clone(), args.symbol.clone());
    let (symbol, tests, old) = tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
        let index = Index::open_current(&r)
            .with_context(|| format!("open the code graph of {}", r.display()))?;
        let symbol = index.find_symbol(&query)?;
        let tests: Vec<String> = index
            .tests_for(&symbol.id, 3)?
            .items
            .into_iter()
            .map(|t| t.test)
            .collect();
        let text = std::fs::read_to_string(r.join(&symbol.file))
            .with_context(|| format!("read {}", symbol.file))?;
        let old = forq_graph::Lang::of_path(std::path::Path::new(&symbol.file))
            .and_then(|lang| forq_graph::definition_source(lang, &text, &symbol.name, symbol.line))
            .unwrap_or_default();
        Ok((symbol, tests, old))
    })
    .await??;
    let covering = match tests.is_empty() {
        true => "No test covers it yet.".to_owned(),
        false => format!("Tests that cover it now: {}.", tests.join(", ")),
    };
    let text = format!(
        "# Change `{}`\n\n{}\n\nThe definition is `{}` at {}:{}:\n\n```\n{}\n```\n\n{covering} \
         Tests that expect the old behaviour are to be updated; new behaviour gets tests. \
         Change only `{}` and what it needs.",
        symbol.qualname,
        args.change.trim(),
        symbol.id,
        symbol.file,
        symbol.line,
        old,
        symbol.qualname
    );
    if !args.fix.json {
        crate::terminal::note(&format!("modify {}: {covering}", symbol.id));
    }
    args.fix.text = Some(text);
    args.fix.repo = Some(repo);
    if args.fix.brancher.is_none() {
        args.fix.brancher = Some(forq_search::plan::BrancherKind::Agent);
        args.fix.strategy = forq_search::plan::StrategyKind::Single;
    }
    args.fix.modify = Some(ModifyTarget {
        symbol: Some(symbol),
        old,
        depth: args.ripple_depth,
    });
    run(args.fix).await
}
