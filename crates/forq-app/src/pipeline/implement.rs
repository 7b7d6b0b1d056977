//! The implementing phase: the plan (strategy and brancher) from the
//! run's settings, the search, and the events it leaves.

#[allow(clippy::wildcard_imports)] // the pipeline's own types
use super::*;

impl Pipeline {
    pub(super) async fn implement(
        &self,
        run: &Run,
        seeded: &Seeded,
        config: &Config,
        prepared: &Prepared,
        model: Option<&Model>,
    ) -> Phase<Implemented> {
        let workspace = seeded.workspace.clone();
        let index = tokio::task::spawn_blocking(move || Index::open_current(&workspace))
            .await
            .map_err(fail)?
            .map_err(fail)?;
        let agent_log = Arc::new(AgentLog {
            pipeline: self.clone(),
            run: run.id.to_string(),
        });
        let built = plan(run, seeded, config, model, Some(agent_log))?
            .build(Some(index), prepared)
            .map_err(|e| match e {
                forq_search::plan::PlanError::NeedsModel { brancher } => Stop::short(
                    State::NeedsHuman,
                    format!(
                        "the {brancher} brancher needs a model: set ANTHROPIC_API_KEY or OPENAI_API_KEY, or use brancher: mutate"
                    ),
                    FailureKind::Input,
                ),
                forq_search::plan::PlanError::NoPatches => Stop::short(
                    State::Failed,
                    "brancher: patches takes candidate files, which a run is not given: use mutate, llm or agent",
                    FailureKind::Input,
                ),
                e => Stop::short(State::Failed, e.to_string(), FailureKind::Input),
            })?;
        let nodes = Arc::new(NodeLog {
            pipeline: self.clone(),
            run: run.id.to_string(),
            counts: Mutex::new((0, 0, None)),
        });
        let (strategy, options) = (built.strategy, built.options.observer(nodes));
        let started = Instant::now();
        let outcome = strategy
            .run(
                &*prepared.root,
                &prepared.oracle,
                &prepared.genesis,
                &options,
            )
            .await
            .map_err(fail)?;
        let report = forq_search::write_report(
            &self.run_dir(&run.id),
            &*strategy,
            prepared,
            &outcome,
            started.elapsed(),
        )
        .map_err(fail)?;
        if let Some(w) = outcome.winner {
            let _ = w.sandbox.destroy().await;
        }
        Ok(Implemented {
            solved: report.solved,
            nodes: report.nodes,
            diff_lines: report.diff_lines,
            hypothesis: report.hypothesis,
            patch: report.patch,
            cost_usd: report.cost_usd,
            budget_spent: report.budget_spent,
            evidence: report.evidence,
        })
    }

    /// Whose model pays for this run: a contributor-funded run of an
    /// untrusted author needs the contributor's key, and does not start
    /// without it.
    pub(super) fn model_for(&self, run: &Run, config: &Config) -> Phase<Option<Model>> {
        let model = self.funded_model(run, config)?;
        // forq.yml's `models.NAME.context_window`, for the models it names.
        let windows: std::collections::BTreeMap<String, u32> = config
            .models
            .iter()
            .filter_map(|(name, m)| Some((name.clone(), m.context_window?)))
            .collect();
        Ok(model.map(|mut m| {
            if !windows.is_empty() {
                m.provider = forq_agent::provider::with_context_windows(m.provider, windows);
            }
            m
        }))
    }

    /// The model that pays for `run`: the owner's, or a contributor's.
    fn funded_model(&self, run: &Run, config: &Config) -> Phase<Option<Model>> {
        if config.funding.mode != FundingMode::Contributor {
            return Ok(self.model.clone());
        }
        let trusted = run
            .issue
            .author
            .as_ref()
            .is_some_and(|a| config.funding.trusted.contains(a));
        if trusted {
            return Ok(self.model.clone());
        }
        match &self.contributor {
            Some(m) => Ok(Some(m.clone())),
            None => Err(Stop::short(
                State::NeedsHuman,
                format!(
                    "forq.yml makes runs contributor-funded and {} is not trusted: the run needs the contributor's key",
                    run.issue.author.as_deref().unwrap_or("the issue's author")
                ),
                FailureKind::Input,
            )),
        }
    }
}

/// The run's fix, by name (forq-search's `FixPlan` wires it): its settings,
/// the issue, what the agent is told about the workspace, the model and
/// the coding agent forq.yml's `program` names.
pub(super) fn plan(
    run: &Run,
    seeded: &Seeded,
    config: &Config,
    model: Option<&Model>,
    agent_log: Option<Arc<dyn Observer<forq_agent::agent::AgentEvent>>>,
) -> Phase<forq_search::plan::FixPlan> {
    let fix = &config.actions.fix;
    let mut plan = forq_search::plan::FixPlan::new(fix.strategy);
    plan.brancher = fix.brancher;
    plan.issue = format!("# {}\n\n{}", run.issue.title, run.issue.body);
    let context_files: Vec<String> = run.context.iter().map(|c| c.dest.clone()).collect();
    plan.context = seed::summary(&seeded.workspace, 20);
    if !context_files.is_empty() {
        plan.context = format!(
            "Context files provided with the issue: {}\n\n{}",
            context_files.join(", "),
            plan.context
        );
    }
    plan.max_steps = fix.agent.max_steps;
    plan.max_cost_usd = fix.agent.max_cost_usd;
    plan.agent_model = fix.agent.model.clone();
    plan.model = model.map(|m| forq_search::plan::PlanModel {
        provider: m.provider.clone(),
        name: m.name.clone(),
        prices: m.prices.clone(),
    });
    plan.observer = agent_log;
    plan.budget = fix.budget.clone();
    plan.plausible = fix.plausible;
    if plan.brancher_kind() == BrancherName::Agent {
        plan.program = program_of(fix.agent.program);
        if let Err(forq_search::plan::PlanError::Program { why }) = plan.check() {
            return Err(Stop::short(
                State::NeedsHuman,
                format!("actions.fix.agent.program: {why}"),
                FailureKind::Input,
            ));
        }
    }
    Ok(plan)
}

/// The coding-agent program forq.yml names, `None` for forq's own agent.
pub(super) fn program_of(program: AgentProgram) -> Option<Program> {
    match program {
        AgentProgram::Forq => None,
        AgentProgram::ClaudeCode => Some(Program::ClaudeCode),
        AgentProgram::Codex => Some(Program::Codex),
    }
}

/// What to do when the unmodified code gives the search no failing test.
pub(super) const NAME_TARGETS: &str =
    "name the tests that capture the issue (targets: in its front matter, or test.targets in forq.yml)";

/// Writes the coding agent's steps (model calls, tool calls, what the
/// tools answered, tokens and dollars) into the run's events.
pub(super) struct AgentLog {
    pub(super) pipeline: Pipeline,
    pub(super) run: String,
}

impl Observer<forq_agent::agent::AgentEvent> for AgentLog {
    fn event(&self, event: &forq_agent::agent::AgentEvent) {
        use forq_agent::agent::AgentEvent as E;
        let data = match event {
            E::Text { .. } => return,
            E::ToolCall { step, name, .. } => {
                self.pipeline.tell(
                    &self.run,
                    State::Implementing,
                    &format!("agent step {step}: {name}"),
                );
                json!({"step": step, "tool": name})
            }
            _ => json!(event),
        };
        let _ = self.pipeline.store.event(&self.run, "agent", data);
    }
}

/// Writes the search tree into the run's events as it grows: a `node`
/// event each time a node is made or changes (exploring, red, green,
/// pruned), with its parent, hypothesis, change and test results, so a
/// viewer can draw the tree live and replay it.
pub(super) struct NodeLog {
    pub(super) pipeline: Pipeline,
    pub(super) run: String,
    pub(super) counts: Mutex<(usize, usize, Option<usize>)>,
}

impl Observer<TreeEvent> for NodeLog {
    fn event(&self, event: &TreeEvent) {
        let node = match event {
            TreeEvent::Node(node) => node,
            TreeEvent::Finished {
                best: Some(best), ..
            } => {
                // The green node handed back: the evidence's pick, not
                // always the smallest.
                let _ = self
                    .pipeline
                    .store
                    .event(&self.run, "best", json!({"id": best}));
                return;
            }
            _ => return,
        };
        let status = match node.status {
            Status::Exploring => "exploring",
            Status::Red => "red",
            Status::Green => "green",
            Status::Pruned => "pruned",
        };
        let tests = node.judgement.as_ref().map(|j| {
            json!({
                "target_passed": j.target_passed,
                "target_total": j.target_total,
                "failing": j.failing,
                "broken": j.broken,
                "timed_out": j.timed_out,
                "test_ms": j.test_ms,
            })
        });
        let _ = self.pipeline.store.event(
            &self.run,
            "node",
            json!({
                "id": node.id,
                "parent": node.parent,
                "depth": node.depth,
                "status": status,
                "hypothesis": node.hypothesis,
                "reason": node.reason,
                "diff_lines": node.score.diff_lines,
                "change": node.change,
                "tests": tests,
                "eval_ms": node.eval_ms,
                "at_ms": node.at_ms,
                "evidence": node.evidence,
            }),
        );
        // A node weighed at the end (its evidence) was counted when judged.
        if node.id == 0
            || node.evidence.is_some()
            || !matches!(node.status, Status::Red | Status::Green)
        {
            return;
        }
        let green = node.status == Status::Green;
        let mut c = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        c.0 += 1;
        if green {
            c.1 += 1;
            c.2 = Some(c.2.map_or(node.score.diff_lines, |b| b.min(node.score.diff_lines)));
        }
        let best = c.2.map_or("-".to_owned(), |b| format!("{b} lines"));
        self.pipeline.tell(
            &self.run,
            State::Implementing,
            &format!("{} candidates · {} green · best {best}", c.0, c.1),
        );
    }
}

/// What the `implemented` checkpoint keeps.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Implemented {
    pub(super) solved: bool,
    pub(super) nodes: usize,
    pub(super) diff_lines: usize,
    pub(super) hypothesis: Option<String>,
    pub(super) patch: Option<PathBuf>,
    pub(super) cost_usd: f64,
    /// The budget ended the search with candidates untried.
    #[serde(default)]
    pub(super) budget_spent: bool,
    /// What speaks for the patch besides the tests.
    #[serde(default)]
    pub(super) evidence: Option<forq_search::evidence::Evidence>,
}
