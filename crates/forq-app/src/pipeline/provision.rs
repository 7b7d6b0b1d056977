//! The provisioning phase: the backend and gate a run's settings choose,
//! the bootstrap gate, the warm root and the oracle.

#[allow(clippy::wildcard_imports)] // the pipeline's own types
use super::*;

impl Pipeline {
    /// The gate's options for `run` under `config` on `backend`: its
    /// golden environment per the policy (never built when `build` is
    /// false), its golden events noted in the run.
    pub(super) fn gate_for(
        &self,
        run: &Run,
        config: &Config,
        backend: &dyn Backend,
        build: bool,
    ) -> forq_bootstrap::GateOptions {
        // An external coding agent reaches its model through forq's relay
        // in its own namespace (forq_agent::external): no host of the
        // model's joins the install allowlist.
        let mut gate = config.gate_options();
        // The agentic fallback, when the run has a model: it sets up what
        // detection cannot (the spend shows in the run's cost only through
        // the store's events; its transcript is the workspace's).
        if let Some(model) = &self.model {
            let mut plan = forq_search::plan::FixPlan::default();
            plan.model = Some(forq_search::plan::PlanModel {
                provider: model.provider.clone(),
                name: model.name.clone(),
                prices: model.prices.clone(),
            });
            gate.configurator = plan.configurator();
        }
        if self.golden != GoldenPolicy::Off {
            if let Ok(goldens) = backend.goldens() {
                // A pull request's run forks a golden, never builds or
                // saves one: its environment is the head's (a stranger's
                // fork, maybe), and the repository's next runs fork from
                // what a golden holds.
                let build = build && self.golden == GoldenPolicy::Build && run.issue.pull.is_none();
                gate.golden = Some(forq_bootstrap::GoldenOptions::new(
                    goldens,
                    run.repo.clone(),
                    build,
                ));
                gate = gate.observer(Arc::new(GoldenNotes {
                    store: self.store.clone(),
                    run: run.id.to_string(),
                }));
            }
        }
        gate
    }

    /// The backend for a run under `config`.
    pub(super) async fn backend_for(&self, config: &Config) -> Phase<Arc<dyn Backend>> {
        let kind = match config.backend() {
            BackendChoice::Kind(kind) if self.backend_from_config => kind,
            _ => return Ok(self.backend.clone()),
        };
        if self.backend.kind() == kind {
            return Ok(self.backend.clone());
        }
        let mut opened = self.opened.lock().await;
        if let Some(b) = opened.get(&kind) {
            return Ok(b.clone());
        }
        let selected = forq_sandbox::open_backend(BackendChoice::Kind(kind))
            .await
            .map_err(|e| {
                Stop::end(
                    State::Failed,
                    format!("forq.yml asks for sandbox.backend {kind}: {e}"),
                )
            })?;
        opened.insert(kind, selected.backend.clone());
        Ok(selected.backend)
    }

    pub(super) async fn prepare(
        &self,
        run: &Run,
        seeded: &Seeded,
        config: &Config,
        model: Option<&Model>,
    ) -> Phase<Prepared> {
        let mut targets = config.test.targets.clone();
        targets.extend(run.issue.targets.iter().cloned());
        let backend = self.backend_for(config).await?;
        let gate = self.gate_for(run, config, &*backend, true);
        // With a model, an issue no test catches yet gets a reproduction
        // test first: it must fail now, and ships in the patch. A pull
        // request's failing tests are what they are: none is written.
        let reproducer = match targets.is_empty() && run.issue.pull.is_none() {
            true => plan(run, seeded, config, model, None)?
                .reproducer(format!("# {}\n\n{}", run.issue.title, run.issue.body)),
            false => None,
        };
        let timeout = Duration::from_secs(config.test.timeout_s);
        let reproducer = reproducer
            .as_ref()
            .map(|r| r as &dyn forq_search::Reproducer);
        let mut prepared = forq_search::prepare_with(
            &*backend,
            &seeded.workspace,
            &gate,
            &targets,
            timeout,
            reproducer,
        )
        .await;
        // The tests a pull request's checks named may not fail here (the
        // checks ran elsewhere, on another machine or platform): the
        // suite's failures at its head are the target then.
        let mut from_checks = run
            .issue
            .pull
            .as_ref()
            .is_some_and(|p| p.targets_from == "checks");
        if let Err(forq_search::FixError::Oracle(
            e @ (OracleError::UnknownTarget(_) | OracleError::TargetPasses(_)),
        )) = &prepared
        {
            if from_checks {
                from_checks = false;
                self.note(
                    &run.id,
                    State::Provisioning,
                    &format!("the checks' failing tests do not fail here ({e}): the target is the suite's failures at the pull request's head"),
                );
                prepared = forq_search::prepare_with(
                    &*backend,
                    &seeded.workspace,
                    &gate,
                    &config.test.targets,
                    timeout,
                    None,
                )
                .await;
            }
        }
        if let Some(pull) = &run.issue.pull {
            if let Ok(p) = &prepared {
                self.note(
                    &run.id,
                    State::Provisioning,
                    &format!(
                        "pull request #{}: target {} ({})",
                        pull.number,
                        p.oracle.target.join(", "),
                        if from_checks {
                            "named by its failing checks"
                        } else {
                            "the suite's failures at its head"
                        }
                    ),
                );
            }
        }
        let prepared = prepared.map_err(|e| match e {
            forq_search::FixError::NotBootstrapped { .. } => {
                Stop::short(State::NeedsHuman, e.to_string(), FailureKind::Repository)
            }
            forq_search::FixError::Oracle(OracleError::NothingFails) => Stop::short(
                State::NeedsHuman,
                format!("every test passes on the unmodified code: {NAME_TARGETS}, or configure a model so a reproduction test is written first"),
                FailureKind::Repository,
            ),
            forq_search::FixError::Reproduction(why) => Stop::short(
                State::NeedsHuman,
                format!("every test passes on the unmodified code, and the reproduction test was not usable: {why}; {NAME_TARGETS}"),
                FailureKind::Model,
            ),
            forq_search::FixError::Oracle(OracleError::UnnamedFailures { failed }) => Stop::short(
                State::NeedsHuman,
                format!("the runner reports {failed} failing test(s) but names none forq can read: {NAME_TARGETS}"),
                FailureKind::Repository,
            ),
            e => fail(e),
        })?;
        if let Some(summary) = &prepared.reproduction {
            let files: Vec<&String> = prepared.seed.keys().collect();
            let _ = self.store.event(
                &run.id,
                "reproduction",
                json!({"files": files, "summary": summary, "target": prepared.oracle.target}),
            );
        }
        let provisioned = Provisioned {
            stack: prepared.stack.clone(),
            target: prepared.oracle.target.clone(),
            guard: prepared.oracle.guard.clone(),
            timeout_ms: prepared.oracle.timeout.as_millis() as u64,
            idle_ms: prepared.oracle.idle.map(|d| d.as_millis() as u64),
            gate_cached: prepared.record.cached,
        };
        self.store
            .checkpoint(&run.id, "provisioned", &json!(provisioned))
            .map_err(fail)?;
        self.note(
            &run.id,
            State::Provisioning,
            &format!(
                "oracle: {} target, {} guard ({} on {}{})",
                provisioned.target.len(),
                provisioned.guard.len(),
                prepared.stack.name(),
                backend.kind(),
                if prepared.record.cached {
                    ", gate cached"
                } else {
                    ""
                }
            ),
        );
        Ok(prepared)
    }

    /// A sandbox provisioned afresh from the run's workspace (its commits
    /// on it; a golden used only if one matches, never built), and the
    /// oracle the run was given.
    pub(super) async fn fresh_sandbox(
        &self,
        run: &Run,
        seeded: &Seeded,
        config: &Config,
    ) -> Phase<(Box<dyn forq_sandbox::Sandbox>, Oracle)> {
        let provisioned: Provisioned = self
            .store
            .checkpointed(&run.id, "provisioned")
            .map_err(fail)?
            .ok_or_else(|| Stop::end(State::Failed, "no provisioned checkpoint"))
            .and_then(|v| serde_json::from_value(v).map_err(fail))?;
        let backend = self.backend_for(config).await?;
        let gate = self.gate_for(run, config, &*backend, false);
        let sandbox =
            forq_bootstrap::provision(&*backend, &seeded.workspace, &provisioned.stack, &gate)
                .await
                .map_err(fail)?;
        let oracle = Oracle {
            stack: provisioned.stack,
            target: provisioned.target,
            guard: provisioned.guard,
            timeout: Duration::from_millis(provisioned.timeout_ms),
            idle: provisioned.idle_ms.map(Duration::from_millis),
        };
        Ok((sandbox, oracle))
    }
}

/// Notes a run's golden events (forked, built, synced) in its events.
pub(super) struct GoldenNotes {
    pub(super) store: Arc<Store>,
    pub(super) run: String,
}

impl Observer<forq_bootstrap::GateEvent> for GoldenNotes {
    fn event(&self, event: &forq_bootstrap::GateEvent) {
        use forq_bootstrap::GateEvent;
        let (kind, data) = match event {
            GateEvent::GoldenForked { golden } => ("golden", json!({"golden": golden})),
            GateEvent::GoldenSaved {
                golden,
                bytes,
                duration_ms,
            } => (
                "golden",
                json!({"golden": golden, "bytes": bytes, "duration_ms": duration_ms}),
            ),
            GateEvent::GoldenBuilding {
                name,
                from_generation,
            } => (
                "golden_building",
                json!({"name": name, "from_generation": from_generation}),
            ),
            GateEvent::GoldenSkipped { reason } => ("golden_skipped", json!({"reason": reason})),
            _ => return,
        };
        let _ = self.store.event(&self.run, kind, data);
    }
}

/// What the `provisioned` checkpoint keeps: the oracle, so the commit can
/// be judged after a restart.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Provisioned {
    pub(super) stack: Stack,
    pub(super) target: Vec<String>,
    pub(super) guard: Vec<String>,
    pub(super) timeout_ms: u64,
    /// A candidate test's budget (none in a checkpoint from before it).
    #[serde(default)]
    pub(super) idle_ms: Option<u64>,
    pub(super) gate_cached: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{BranchName, ObjectId};
    use crate::store::{NewRun, PullRecord, Store};

    /// Attack: a fork's pull request brings its own environment (its head's
    /// install steps, its lock files). Were its run to build the
    /// repository's golden, every later run on the repository would fork
    /// what the stranger's head set up. Under `--golden build` a plain
    /// run builds one; a pull request's run only forks one that matches.
    #[tokio::test]
    async fn a_pull_requests_run_forks_a_golden_but_never_builds_one() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut options = forq_sandbox::NativeOptions::default();
        options.state_dir = Some(tmp.path().join("sandboxes"));
        let backend: Arc<dyn Backend> = match forq_sandbox::NativeBackend::open(options) {
            Ok(b) => Arc::new(b),
            Err(e) if std::env::var_os("CI").is_none() => {
                tracing::warn!("SKIPPED: no native backend here: {e}");
                return;
            }
            Err(e) => panic!("CI runs the native backend: {e}"),
        };
        let store = Arc::new(Store::open(&tmp.path().join("forq.db")).expect("store"));
        let pipeline = Pipeline::new(store.clone(), &tmp.path().join("state"), backend.clone())
            .golden(GoldenPolicy::Build);
        let config = Config::parse("", "forq.yml").expect("config");
        let plain = store.create(&NewRun::fix("1", "a", "/r")).expect("create");
        let mut pull = NewRun::fix("2", "b", "/r");
        pull.issue.pull = Some(PullRecord {
            number: 2,
            repo: "o/r".to_owned(),
            head_sha: ObjectId::parse(&"a".repeat(40)).expect("a commit id"),
            head_ref: BranchName::parse("feature").expect("a branch"),
            head_repo: "stranger/r".to_owned(),
            head_clone_url: "https://github.com/stranger/r.git".to_owned(),
            base_ref: BranchName::parse("main").expect("a branch"),
            maintainer_can_modify: false,
            failed_checks: Vec::new(),
            targets_from: "local".to_owned(),
        });
        let pull = store.create(&pull).expect("create");
        for (run, builds) in [(&plain, true), (&pull, false)] {
            let gate = pipeline.gate_for(run, &config, &*backend, true);
            let golden = gate.golden.expect("the run uses goldens");
            assert_eq!(golden.build, builds, "issue {}", run.issue.id);
            assert_eq!(golden.identity, "/r");
        }
    }
}
