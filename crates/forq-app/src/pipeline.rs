//! One run, phase by phase: `triaging → provisioning → implementing →
//! testing`, then a terminal state. Each phase records a checkpoint when
//! it finishes (the triage decision, the seeded workspace, the oracle, the
//! patch, the verdict on the commit), and [`Pipeline::execute`] skips
//! every phase whose checkpoint exists: a run whose process was killed
//! (even with SIGKILL) continues where it stopped, without asking the
//! model again or searching again.
//!
//! The one thing that cannot outlive a process is a warm sandbox: a run
//! resumed before its patch was found provisions one again from the
//! bootstrap gate's cached verdict (the gate does not run again).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use forq_agent::agent::{Agent, Task};
use forq_agent::cost::{Budget as AgentBudget, PriceTable};
use forq_agent::external::{ExternalAgent, Program};
use forq_agent::provider::Provider;
use forq_agent::tools::{GraphTools, RunTests, Toolbox};
use forq_bootstrap::Stack;
use forq_events::{Observer, Observers};
use forq_graph::Index;
use forq_sandbox::{Backend, BackendChoice, BackendKind};
use forq_search::brancher::AgentReproducer;
use forq_search::oracle::{Oracle, OracleError};
use forq_search::tree::{Event as TreeEvent, Status};
use forq_search::{Budget, Prepared, SearchOptions};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::config::{AgentProgram, BrancherName, Config, FundingMode, Mode, ReviewPoint, Strategy};
use crate::failure::{classify, FailureKind};
use crate::git;
use crate::preview::{Preview, PreviewError, PreviewSpec};
use crate::review;
use crate::safety::{self, ADAPTED, CONTRACT};
use crate::seed::{self, SeedOptions, Seeded};
use crate::store::{Action, Run, State, Store, StoreError};

/// A model to call: the provider, the model's name, its prices.
#[derive(Clone)]
pub struct Model {
    /// The provider.
    pub provider: Arc<dyn Provider>,
    /// The model.
    pub name: String,
    /// Prices, for costs and dollar budgets.
    pub prices: PriceTable,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("provider", &self.provider.name())
            .field("name", &self.name)
            .finish()
    }
}

/// A run's progress as it happens (the queue's progress lines), told to
/// the observers of [`Pipeline::observer`]: `run` moved to `state`, or
/// `note` happened in it. The full history is the store's events.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "event", rename = "progress")]
#[non_exhaustive]
pub struct Event {
    /// The run's id.
    pub run: String,
    /// Its state.
    pub state: State,
    /// What happened (empty when only the state moved).
    pub note: String,
}

/// Runs runs.
#[derive(Clone)]
pub struct Pipeline {
    store: Arc<Store>,
    state_dir: PathBuf,
    backend: Arc<dyn Backend>,
    /// Whether a repository's `sandbox.backend` may choose another
    /// backend (the command line left the choice to it), and the ones
    /// opened for that, by kind.
    backend_from_config: bool,
    opened: Arc<tokio::sync::Mutex<HashMap<BackendKind, Arc<dyn Backend>>>>,
    model: Option<Model>,
    contributor: Option<Model>,
    config: Option<Config>,
    /// Settings known before a repository is cloned (a GitHub
    /// repository's forq.yml read through the API), by repository.
    known: HashMap<String, Config>,
    observers: Observers<Event>,
    golden: GoldenPolicy,
}

/// How runs use their repository's golden environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum GoldenPolicy {
    /// Fork the golden that matches the run's tree; else install.
    #[default]
    Use,
    /// Build (or sync) it first when none matches: runs on the same
    /// repository then share one install.
    Build,
    /// Install from scratch in every run.
    Off,
}

/// Notes a run's golden events (forked, built, synced) in its events.
struct GoldenNotes {
    store: Arc<Store>,
    run: String,
}

impl Observer<forq_bootstrap::Event> for GoldenNotes {
    fn event(&self, event: &forq_bootstrap::Event) {
        use forq_bootstrap::Event;
        let (kind, data) = match event {
            Event::GoldenForked { golden } => ("golden", json!({"golden": golden})),
            Event::GoldenSaved {
                golden,
                bytes,
                duration_ms,
            } => (
                "golden",
                json!({"golden": golden, "bytes": bytes, "duration_ms": duration_ms}),
            ),
            Event::GoldenBuilding {
                name,
                from_generation,
            } => (
                "golden_building",
                json!({"name": name, "from_generation": from_generation}),
            ),
            Event::GoldenSkipped { reason } => ("golden_skipped", json!({"reason": reason})),
            _ => return,
        };
        let _ = self.store.event(&self.run, kind, data);
    }
}

impl std::fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pipeline")
            .field("state_dir", &self.state_dir)
            .field("model", &self.model)
            .finish()
    }
}

/// Why a run could not go on. The run itself records `failed` with this
/// as its reason.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The run's task panicked (a bug in forq: please report it).
    #[error("run {0}: forq panicked while running it; resuming the run continues it from its last checkpoint")]
    Panicked(String),
    /// Another live process works on the run.
    #[error("run {id} is being worked on by process {pid}")]
    Busy {
        /// The run.
        id: String,
        /// The process.
        pid: u32,
    },
}

/// What the `provisioned` checkpoint keeps: the oracle, so the commit can
/// be judged after a restart.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Provisioned {
    stack: Stack,
    target: Vec<String>,
    guard: Vec<String>,
    timeout_ms: u64,
    /// A candidate test's budget (none in a checkpoint from before it).
    #[serde(default)]
    idle_ms: Option<u64>,
    gate_cached: bool,
}

/// What the `implemented` checkpoint keeps.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Implemented {
    solved: bool,
    nodes: usize,
    diff_lines: usize,
    hypothesis: Option<String>,
    patch: Option<PathBuf>,
    cost_usd: f64,
    /// The budget ended the search with candidates untried.
    #[serde(default)]
    budget_spent: bool,
}

/// How a phase ended short of the next one: the run is over, in this
/// state, for this reason, of this class.
struct Stop {
    state: State,
    reason: String,
    failure: Option<FailureKind>,
}

impl Stop {
    /// Over in `state`: a failure is infrastructure's and an abort is a
    /// cancellation unless said otherwise ([`Stop::short`]).
    fn end(state: State, reason: impl Into<String>) -> Stop {
        let failure = match state {
            State::Failed => Some(FailureKind::Infrastructure),
            State::Aborted => Some(FailureKind::Cancelled),
            _ => None,
        };
        Stop {
            state,
            reason: reason.into(),
            failure,
        }
    }

    /// Over in `state`, short of the goal for a reason of class `kind`.
    fn short(state: State, reason: impl Into<String>, kind: FailureKind) -> Stop {
        Stop {
            state,
            reason: reason.into(),
            failure: Some(kind),
        }
    }
}

type Phase<T> = Result<T, Stop>;

/// The checkpoint holding what the run's requester chose.
const REQUESTED: &str = "requested";

/// The run failed with `e`, classed by what `e` is (infrastructure when
/// no library claims it).
fn fail(e: impl std::error::Error + 'static) -> Stop {
    let kind = classify(&e).unwrap_or(FailureKind::Infrastructure);
    Stop::short(State::Failed, e.to_string(), kind)
}

impl Pipeline {
    /// The same pipeline on another backend (another engine host: the
    /// run's workspace is on this machine, its sandboxes are there).
    pub fn on(&self, backend: Arc<dyn Backend>) -> Pipeline {
        Pipeline {
            backend,
            backend_from_config: false,
            ..self.clone()
        }
    }

    /// The settings of repository `repo` (as runs name it: a clone URL),
    /// known before it is cloned: what triage follows there. Once seeded,
    /// the workspace's own forq.yml is read as for any repository.
    pub fn repo_config(mut self, repo: &str, config: Config) -> Self {
        self.known.insert(repo.to_owned(), config);
        self
    }

    /// Lets each repository's `forq.yml` (`sandbox.backend`) choose its
    /// runs' backend, the pipeline's own serving `auto`: for a backend
    /// that was not chosen on the command line.
    pub fn backend_from_config(mut self, yes: bool) -> Self {
        self.backend_from_config = yes;
        self
    }

    /// The backend runs use unless their forq.yml chooses another.
    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    /// How runs use their repository's golden environment (default: use
    /// one that matches).
    pub fn golden(mut self, policy: GoldenPolicy) -> Self {
        self.golden = policy;
        self
    }

    /// The gate's options for `run` under `config` on `backend`: its
    /// golden environment per the policy (never built when `build` is
    /// false), its golden events noted in the run.
    fn gate_for(
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
            gate.configurator = Some(Arc::new(
                forq_agent::configure::ModelConfigurator::new(
                    model.provider.clone(),
                    model.name.clone(),
                )
                .prices(model.prices.clone()),
            ));
        }
        if self.golden != GoldenPolicy::Off {
            if let Ok(goldens) = backend.goldens() {
                gate.golden = Some(forq_bootstrap::GoldenOptions::new(
                    goldens,
                    run.repo.clone(),
                    build && self.golden == GoldenPolicy::Build,
                ));
                gate = gate.observer(Arc::new(GoldenNotes {
                    store: self.store.clone(),
                    run: run.id.clone(),
                }));
            }
        }
        gate
    }

    /// The backend for a run under `config`.
    async fn backend_for(&self, config: &Config) -> Phase<Arc<dyn Backend>> {
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

    /// Runs in `state_dir` (`.forq`: the store, `runs/ID/`), on `backend`.
    pub fn new(store: Arc<Store>, state_dir: &Path, backend: Arc<dyn Backend>) -> Pipeline {
        Pipeline {
            store,
            state_dir: state_dir.to_owned(),
            backend,
            backend_from_config: false,
            opened: Arc::default(),
            model: None,
            contributor: None,
            config: None,
            known: HashMap::new(),
            observers: Observers::new(),
            golden: GoldenPolicy::default(),
        }
    }

    /// The owner's model, for triage and the model branchers.
    pub fn model(mut self, model: Option<Model>) -> Self {
        self.model = model;
        self
    }

    /// The contributor's model, for contributor-funded runs.
    pub fn contributor(mut self, model: Option<Model>) -> Self {
        self.contributor = model;
        self
    }

    /// Settings for every run, instead of each repository's `forq.yml`.
    pub fn config(mut self, config: Option<Config>) -> Self {
        self.config = config;
        self
    }

    /// Tells `observer` of progress too.
    pub fn observer(mut self, observer: Arc<dyn Observer<Event>>) -> Self {
        self.observers.push(observer);
        self
    }

    /// The store.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// Run `id`'s directory: `fix.patch`, `tree.json`, `summary.json`, and
    /// `workspace/`.
    pub fn run_dir(&self, id: &str) -> PathBuf {
        self.state_dir.join("runs").join(id)
    }

    /// Run `id`'s workspace.
    pub fn workspace(&self, id: &str) -> PathBuf {
        crate::clean::workspace_path(&self.state_dir, id)
    }

    fn tell(&self, run: &str, state: State, note: &str) {
        if !self.observers.is_empty() {
            self.observers.emit(&Event {
                run: run.to_owned(),
                state,
                note: note.to_owned(),
            });
        }
    }

    fn note(&self, run: &str, state: State, text: &str) {
        let _ = self.store.event(run, "note", json!({"text": text}));
        self.tell(run, state, text);
    }

    /// Moves on to `to`, unless the run is there or past it already (a
    /// resumed run does not go back).
    fn enter(&self, run: &mut Run, to: State) -> Phase<()> {
        if run.abort_requested
            || self
                .store
                .get(&run.id)
                .map(|r| r.abort_requested)
                .unwrap_or(false)
        {
            return Err(Stop::end(State::Aborted, "aborted by request".to_owned()));
        }
        if order(run.state) < order(to) {
            tracing::info!(phase = to.name(), "phase");
            *run = self.store.transition(&run.id, to, "").map_err(fail)?;
            self.tell(&run.id, to, "");
        }
        Ok(())
    }

    /// Runs (or resumes) run `id` to a terminal state, and returns it.
    #[tracing::instrument(name = "run", skip_all, fields(run = %id))]
    pub async fn execute(&self, id: &str) -> Result<Run, RunError> {
        let mut run = self.store.get(id)?;
        if run.state.is_terminal() {
            return Ok(run);
        }
        let dead = run.pid.filter(|p| *p != std::process::id());
        if let Some(pid) = dead.filter(|_| run.is_live()) {
            return Err(RunError::Busy { id: run.id, pid });
        }
        if !self.store.claim(&run.id, run.pid, std::process::id())? {
            let pid = self.store.get(&run.id)?.pid.unwrap_or_default();
            return Err(RunError::Busy { id: run.id, pid });
        }
        if let Some(pid) = dead {
            let _ = self.store.event(
                &run.id,
                "resumed",
                json!({"from": run.state.name(), "dead_pid": pid}),
            );
        }
        let id = run.id.clone();
        let outcome = tokio::select! {
            r = self.phases(&mut run) => r,
            () = self.abort_requested(&id) => Err(Stop::end(State::Aborted, "aborted by request".to_owned())),
        };
        let Err(Stop {
            state,
            reason,
            failure,
        }) = outcome
        else {
            let done = self.store.get(&id)?;
            tracing::info!(state = done.state.name(), "run ended");
            return Ok(done);
        };
        let current = self.store.get(&id)?;
        if current.state.is_terminal() {
            return Ok(current);
        }
        tracing::info!(state = state.name(), failure = failure.map(FailureKind::name), %reason, "run ended");
        let done = self.store.end(&id, state, &reason, failure)?;
        self.tell(&id, state, &reason);
        Ok(done)
    }

    /// Resolves once someone asks run `id` to stop.
    async fn abort_requested(&self, id: &str) {
        loop {
            tokio::time::sleep(Duration::from_millis(300)).await;
            if self
                .store
                .get(id)
                .map(|r| r.abort_requested)
                .unwrap_or(false)
            {
                return;
            }
        }
    }

    async fn phases(&self, run: &mut Run) -> Phase<()> {
        let id = run.id.clone();
        // Triage.
        let triage = match self.store.checkpointed(&id, "triaged").map_err(fail)? {
            Some(t) => t,
            None => {
                self.enter(run, State::Triaging)?;
                let t = self.triage(run).await?;
                self.store.checkpoint(&id, "triaged", &t).map_err(fail)?;
                t
            }
        };
        let reason = triage["reason"].as_str().unwrap_or_default().to_owned();
        if let Some(cost) = triage["cost_usd"].as_f64() {
            let _ = self.store.record(&id, Some(cost), None, None);
        }
        if run.action == Action::Triage {
            return Err(Stop::end(State::Triaged, reason));
        }
        if triage["attempt_fix"] == json!(false) {
            return Err(Stop::end(State::NeedsHuman, format!("triage: {reason}")));
        }
        // Provisioning: the workspace, then the gate, the warm root and the oracle.
        self.enter(run, State::Provisioning)?;
        let seeded = self.seeded(run).await?;
        let config = self.config_of(run, &seeded.workspace)?;
        if run.action == Action::Auto && config.actions.fix.mode == Mode::Manual {
            return Err(Stop::end(
                State::Triaged,
                format!("{reason}; actions.fix.mode is manual in forq.yml: a run with the fix action fixes it"),
            ));
        }
        let model = self.model_for(run, &config)?;
        let implemented = match self.store.checkpointed(&id, "implemented").map_err(fail)? {
            Some(i) => serde_json::from_value::<Implemented>(i).map_err(fail)?,
            None => {
                if run.state == State::Implementing {
                    self.note(&id, State::Implementing, "resumed: provisioning the warm sandbox again (a sandbox does not outlive its process; the gate's verdict is cached)");
                }
                let prepared = self.prepare(run, &seeded, &config, model.as_ref()).await?;
                self.enter(run, State::Implementing)?;
                let result = self
                    .implement(run, &seeded, &config, &prepared, model.as_ref())
                    .await;
                let _ = prepared.root.destroy().await;
                let implemented = result?;
                self.store
                    .checkpoint(&id, "implemented", &json!(implemented))
                    .map_err(fail)?;
                implemented
            }
        };
        let triage_cost = triage["cost_usd"].as_f64().unwrap_or(0.0);
        let _ = self
            .store
            .record(&id, Some(triage_cost + implemented.cost_usd), None, None);
        if !implemented.solved {
            let reason = format!(
                "no green candidate in {} candidate{}",
                implemented.nodes,
                if implemented.nodes == 1 { "" } else { "s" }
            );
            return Err(if implemented.budget_spent {
                Stop::short(
                    State::NeedsHuman,
                    format!(
                        "{reason}: the budget (actions.fix.budget) ran out with candidates untried"
                    ),
                    FailureKind::Budget,
                )
            } else {
                Stop::end(State::NeedsHuman, reason)
            });
        }
        let branch = git::branch_name(&config.actions.fix.branch, "fix", &id, &run.issue.id);
        // A person looks at the green patch first, when forq.yml says so.
        if config.review.contains(&ReviewPoint::Commit)
            && self
                .store
                .checkpointed(&id, &review::approved(ReviewPoint::Commit))
                .map_err(fail)?
                .is_none()
        {
            let patch = implemented
                .patch
                .as_ref()
                .map_or_else(|| "the patch".to_owned(), |p| p.display().to_string());
            let what = format!(
                "{patch} ({} lines): approve to commit it on {branch} and run the whole suite on it",
                implemented.diff_lines
            );
            self.store
                .checkpoint(
                    &id,
                    review::PAUSED,
                    &json!({"point": "commit", "resume": run.state.name(), "what": what}),
                )
                .map_err(fail)?;
            return Err(Stop::end(
                State::NeedsReview,
                format!("waiting for review before committing: {what}"),
            ));
        }
        // Testing: commit on the run's branch, then the whole oracle on a
        // fresh sandbox over the commit.
        self.enter(run, State::Testing)?;
        let tested = match self.store.checkpointed(&id, "tested").map_err(fail)? {
            Some(t) => t,
            None => {
                let t = self
                    .test(run, &seeded, &config, &implemented, &branch)
                    .await?;
                self.store.checkpoint(&id, "tested", &t).map_err(fail)?;
                t
            }
        };
        if tested["green"] != json!(true) {
            // Green in the search, red on a fresh sandbox: a test that
            // depends on more than the code (order, time, leftovers).
            return Err(Stop::short(
                State::Failed,
                format!(
                    "the committed patch is not green on a fresh sandbox: {}",
                    tested["why"].as_str().unwrap_or("")
                ),
                FailureKind::Repository,
            ));
        }
        self.store
            .record(&id, None, Some(implemented.diff_lines), Some(&branch))
            .map_err(fail)?;
        // Contract and ripple: what the green patch changed, definition by
        // definition, and the callers an incompatible change reaches.
        let contract = match self.store.checkpointed(&id, CONTRACT).map_err(fail)? {
            Some(c) => serde_json::from_value::<safety::Report>(c).map_err(fail)?,
            None => {
                let c = self.contract(run, &seeded, &config).await?;
                self.store
                    .checkpoint(&id, CONTRACT, &json!(c))
                    .map_err(fail)?;
                c
            }
        };
        // With a model, the callers an incompatible change reaches are
        // adapted by the agent in a sandbox, and the tests decide.
        let contract = match (contract.findings.is_empty(), model.as_ref()) {
            (false, Some(m)) => match self.store.checkpointed(&id, ADAPTED).map_err(fail)? {
                Some(c) => serde_json::from_value::<safety::Report>(c).map_err(fail)?,
                None => {
                    self.pause_for(run, &config, ReviewPoint::Ripple, || {
                        format!(
                            "{}: approve to let the agent adapt them on {branch}",
                            contract.summary()
                        )
                    })?;
                    let c = self
                        .adapt(run, &seeded, &config, contract, &branch, m)
                        .await?;
                    self.store
                        .checkpoint(&id, ADAPTED, &json!(c))
                        .map_err(fail)?;
                    c
                }
            },
            _ => contract,
        };
        let (state, reason) = if contract.has_findings() {
            (
                State::CompletedWithFindings,
                format!("committed on {branch}; {}", contract.summary()),
            )
        } else if !contract.adapted.is_empty() {
            (
                State::PatchReady,
                format!("committed on {branch}; {}", contract.summary()),
            )
        } else {
            (State::PatchReady, format!("committed on {branch}"))
        };
        *run = self.store.transition(&id, state, &reason).map_err(fail)?;
        self.tell(&id, state, &branch);
        Ok(())
    }

    /// Pauses the run for review at `point` when forq.yml asks and it was
    /// not approved yet: `Err(needs_review)` with `what` to look at.
    fn pause_for(
        &self,
        run: &Run,
        config: &Config,
        point: ReviewPoint,
        what: impl FnOnce() -> String,
    ) -> Phase<()> {
        if !config.review.contains(&point)
            || self
                .store
                .checkpointed(&run.id, &review::approved(point))
                .map_err(fail)?
                .is_some()
        {
            return Ok(());
        }
        let what = what();
        self.store
            .checkpoint(
                &run.id,
                review::PAUSED,
                &json!({"point": point.name(), "resume": run.state.name(), "what": what}),
            )
            .map_err(fail)?;
        Err(Stop::end(
            State::NeedsReview,
            format!("waiting for review before the {}: {what}", point.name()),
        ))
    }

    /// The ripple with a model: the agent adapts the callers of the
    /// incompatible changes in a sandbox over the committed fix; when the
    /// whole oracle stays green and no test file changed, the adaptation
    /// is committed on the branch and the callers it touched move from
    /// `findings` to `adapted`. Otherwise the findings stay, and why is
    /// in the run's events.
    async fn adapt(
        &self,
        run: &Run,
        seeded: &Seeded,
        config: &Config,
        mut report: safety::Report,
        branch: &str,
        model: &Model,
    ) -> Phase<safety::Report> {
        let (sandbox, oracle) = self.fresh_sandbox(run, seeded, config).await?;
        let workspace = seeded.workspace.clone();
        let index = tokio::task::spawn_blocking(move || Index::open_current(&workspace))
            .await
            .map_err(fail)?
            .map_err(fail)?;
        let fix = &config.actions.fix;
        let mut budget = AgentBudget::default().max_steps(fix.agent.max_steps);
        if let Some(usd) = fix.agent.max_cost_usd {
            budget = budget.max_cost_usd(usd);
        }
        let agent = Agent::new(
            model.provider.clone(),
            fix.agent
                .model
                .clone()
                .unwrap_or_else(|| model.name.clone()),
        )
        .tools(
            GraphTools::new(index)
                .add_to(Toolbox::editing().with(RunTests::new(oracle.stack.clone()))),
        )
        .budget(budget)
        .prices(model.prices.clone())
        .observer(Arc::new(AgentLog {
            pipeline: self.clone(),
            run: run.id.clone(),
        }));
        let task = Task::new(safety::adapt_task(&report));
        self.note(
            &run.id,
            State::Testing,
            &format!(
                "ripple: asking the agent to adapt {} caller(s)",
                report.findings.len()
            ),
        );
        let outcome = forq_agent::agent::CodingAgent::run(&agent, &*sandbox, &task).await;
        let result = async {
            let diff = sandbox.diff().await.map_err(|e| e.to_string())?;
            if diff.files.is_empty() {
                return Err("the agent changed nothing".to_owned());
            }
            if let Some(t) = diff
                .files
                .iter()
                .find(|f| oracle.stack.is_test_file(&f.path))
            {
                return Err(format!(
                    "the agent changed the test file {}; a ripple adapts callers, never tests",
                    t.path
                ));
            }
            let judged = oracle.judge(&*sandbox).await.map_err(|e| e.to_string())?;
            if !judged.green() {
                return Err(format!(
                    "the adapted code is not green: {}/{} target tests pass; broken: {}",
                    judged.target_passed,
                    judged.target_total,
                    judged.broken.join(", ")
                ));
            }
            Ok(diff)
        }
        .await;
        let _ = sandbox.destroy().await;
        let cost = outcome.cost_usd;
        let _ = self
            .store
            .record(&run.id, Some(run.cost_usd + cost), None, None);
        let diff = match result {
            Ok(d) => d,
            Err(why) => {
                self.note(
                    &run.id,
                    State::Testing,
                    &format!("ripple: callers not adapted: {why}"),
                );
                let _ = self.store.event(
                    &run.id,
                    "ripple_adapt",
                    json!({"adapted": false, "why": why}),
                );
                return Ok(report);
            }
        };
        let patch = self.run_dir(&run.id).join("ripple.patch");
        std::fs::write(&patch, &diff.patch).map_err(fail)?;
        let base = git::head(&seeded.workspace).await.map_err(fail)?;
        let message = format!(
            "Adapt the callers of #{}'s incompatible change\n\n{}\n\nforq run {} (ripple).",
            run.issue.id,
            report.summary(),
            run.id
        );
        let commit = git::commit_patch(&seeded.workspace, &base, branch, &patch, &message)
            .await
            .map_err(fail)?;
        report.take_adapted(&diff.patch);
        let _ = self.store.event(
            &run.id,
            "ripple_adapt",
            json!({"adapted": true, "commit": commit, "callers": report.adapted, "left": report.findings}),
        );
        self.note(
            &run.id,
            State::Testing,
            &format!(
                "ripple: {} caller(s) adapted, committed {}",
                report.adapted.len(),
                &commit[..commit.len().min(12)]
            ),
        );
        Ok(report)
    }

    /// A sandbox provisioned afresh from the run's workspace (its commits
    /// on it; a golden used only if one matches, never built), and the
    /// oracle the run was given.
    async fn fresh_sandbox(
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

    /// The contract check of the run's committed patch (see
    /// [`safety::check`]), its classes and ripple written into the run's
    /// events; with a model, body changes are classified by it.
    async fn contract(&self, run: &Run, seeded: &Seeded, config: &Config) -> Phase<safety::Report> {
        let model = self.model_for(run, config)?;
        let check = model
            .as_ref()
            .map(|m| forq_agent::contract::ContractCheck::new(m.provider.clone(), m.name.clone()));
        let scratch = self.run_dir(&run.id).join("contract");
        let classifier = check.as_ref().map(|c| c as &dyn safety::Classifier);
        let report = safety::check(
            &seeded.workspace,
            &seeded.head,
            &scratch,
            config.actions.fix.ripple_depth,
            classifier,
        )
        .await;
        let _ = std::fs::remove_dir_all(&scratch);
        let report = match report {
            Ok(r) => r,
            // The patch is green; a graph that cannot read the code is said,
            // not a failure of the run.
            Err(e) => {
                self.note(
                    &run.id,
                    State::Testing,
                    &format!("contract check skipped: {e}"),
                );
                return Ok(safety::Report::default());
            }
        };
        for c in &report.changed {
            let _ = self.store.event(&run.id, "contract", json!(c));
        }
        if !report.changed.is_empty() {
            let _ = self.store.event(
                &run.id,
                "ripple",
                json!({"findings": report.findings, "unprocessed": report.unprocessed,
                    "depth": report.depth, "truncated": report.truncated}),
            );
        }
        self.note(
            &run.id,
            State::Testing,
            &format!("contract: {}", report.summary()),
        );
        Ok(report)
    }

    /// The triage phase's decision (as JSON): the model's, or a skip that
    /// says why there was none.
    async fn triage(&self, run: &Run) -> Phase<serde_json::Value> {
        let repo_config = self.config_before_seed(run);
        let wanted = run.action == Action::Triage || repo_config.triage.enabled;
        if !wanted {
            return Ok(
                json!({"skipped": true, "attempt_fix": true, "reason": "triage is disabled in forq.yml"}),
            );
        }
        // Whoever pays for the run pays for its triage: a contributor-funded
        // run without the contributor's key stops here, before any call.
        let model = self.model_for(run, &repo_config)?;
        let Some(model) = &model else {
            if run.action == Action::Triage {
                return Err(Stop::short(
                    State::Failed,
                    "triage needs a model: set ANTHROPIC_API_KEY or OPENAI_API_KEY (or --provider replay)",
                    FailureKind::Input,
                ));
            }
            self.note(
                &run.id,
                State::Triaging,
                "triage skipped: no model configured",
            );
            return Ok(
                json!({"skipped": true, "attempt_fix": true, "reason": "no model configured for triage"}),
            );
        };
        let name = repo_config
            .triage
            .model
            .clone()
            .unwrap_or(model.name.clone());
        let triage = forq_agent::triage::Triage::new(model.provider.clone(), name.clone())
            .threshold(repo_config.triage.threshold);
        let text = format!("# {}\n\n{}", run.issue.title, run.issue.body);
        let decision = triage.run(&text, "").await.map_err(fail)?;
        let cost = model.prices.cost(&name, decision.usage).unwrap_or(0.0);
        let _ = self
            .store
            .event(&run.id, "cost", json!({"phase": "triage", "usd": cost}));
        self.note(
            &run.id,
            State::Triaging,
            &format!(
                "triage: {} ({:.2}): {}",
                if decision.attempt_fix { "fix" } else { "skip" },
                decision.verdict.confidence,
                decision.verdict.reason
            ),
        );
        Ok(json!({
            "skipped": false,
            "attempt_fix": decision.attempt_fix,
            "reason": decision.verdict.reason,
            "confidence": decision.verdict.confidence,
            "verdict": decision.verdict,
            "cost_usd": cost,
        }))
    }

    /// The run's workspace: seeded once, reused on resume.
    async fn seeded(&self, run: &Run) -> Phase<Seeded> {
        if let Some(s) = self.store.checkpointed(&run.id, "seeded").map_err(fail)? {
            let seeded: Seeded = serde_json::from_value(s).map_err(fail)?;
            if seeded.workspace.join(".git").exists() {
                return Ok(seeded);
            }
            return Err(Stop::end(
                State::Failed,
                format!(
                    "the run's workspace {} is gone; start a new run",
                    seeded.workspace.display()
                ),
            ));
        }
        let trace = self
            .store
            .events(&run.id, 0)
            .map_err(fail)?
            .iter()
            .any(|e| e.kind == "node" || e.kind == "agent");
        if trace {
            return Err(fail(seed::SeedError::Started(run.id.clone())));
        }
        let workspace = self.workspace(&run.id);
        if workspace.exists() {
            // A seed interrupted before its checkpoint: nothing has run in it.
            let _ = std::fs::remove_dir_all(&workspace);
        }
        let config = self.config_before_seed(run);
        let options = SeedOptions {
            max_bytes: config.sandbox.max_seed_mb << 20,
            timeout: Duration::from_secs(config.sandbox.seed_timeout_s),
        };
        let seeded = seed::seed(&run.repo, &workspace, &options)
            .await
            .map_err(fail)?;
        if seeded.removed_forq {
            let text = "the repository tracks a .forq of its own: removed from the workspace (.forq is \
                        forq's index and records, and links there would reach outside the workspace)";
            tracing::warn!(run = %run.id, "{text}");
            let _ = self
                .store
                .event(&run.id, "warning", json!({"key": ".forq", "text": text}));
        }
        for file in &run.context {
            let bytes = std::fs::read(&file.source).map_err(|e| {
                Stop::short(
                    State::Failed,
                    format!("context file {}: {e}", file.source),
                    FailureKind::Input,
                )
            })?;
            seed::add_context(&workspace, &file.dest, &bytes).map_err(fail)?;
        }
        self.store
            .checkpoint(&run.id, "seeded", &json!(seeded))
            .map_err(fail)?;
        self.note(
            &run.id,
            State::Provisioning,
            &format!(
                "seeded by {} at {}",
                seeded.how,
                &seeded.head[..seeded.head.len().min(12)]
            ),
        );
        Ok(seeded)
    }

    /// The settings before the workspace exists: the pipeline's own, else
    /// those known for the repository, else its forq.yml when it is a
    /// directory, else the defaults. Only triage and seeding read them, and
    /// nothing that loosens isolation is kept (`config_of` warns of it, once
    /// per run, when the run's sandboxes are made).
    fn config_before_seed(&self, run: &Run) -> Config {
        match (&self.config, self.known.get(&run.repo)) {
            (Some(c), _) => c.clone(),
            (None, Some(c)) => c.clone().confined(),
            (None, None) => Config::load(Path::new(&run.repo))
                .map(|(c, _)| c)
                .unwrap_or_default()
                .confined(),
        }
    }

    /// The settings: the pipeline's own, else the workspace's `forq.yml`.
    fn config_of(&self, run: &Run, workspace: &Path) -> Phase<Config> {
        let mut config = match &self.config {
            Some(c) => c.clone(),
            None => Config::load(workspace)
                .map(|(c, _)| self.repository_config(&run.id, c))
                .map_err(|e| Stop::short(State::Failed, e.to_string(), FailureKind::Repository))?,
        };
        // What whoever queued the run asked for (`request_fix`) wins.
        if let Some(asked) = self.store.checkpointed(&run.id, REQUESTED).map_err(fail)? {
            let fix = &mut config.actions.fix;
            if let Ok(strategy) = serde_json::from_value(asked["strategy"].clone()) {
                fix.strategy = strategy;
            }
            if let Ok(brancher) = serde_json::from_value(asked["brancher"].clone()) {
                fix.brancher = Some(brancher);
            }
        }
        Ok(config)
    }

    /// Records, for run `id` before it starts, how its fix is looked for:
    /// the `strategy` and `brancher` override forq.yml's for this run only
    /// (and survive a resume).
    pub fn request_fix(
        &self,
        id: &str,
        strategy: Option<Strategy>,
        brancher: Option<BrancherName>,
    ) -> Result<(), StoreError> {
        self.store.checkpoint(
            id,
            REQUESTED,
            &json!({"strategy": strategy, "brancher": brancher}),
        )
    }

    /// A repository's own settings, without what would loosen isolation:
    /// that is the operator's to choose. Each setting left out is a warning
    /// in the run's events.
    fn repository_config(&self, run: &str, config: Config) -> Config {
        for (key, what) in config.loosening() {
            tracing::warn!(run, key, "ignored in the repository's forq.yml: {what}");
            let _ = self.store.event(
                run,
                "warning",
                json!({"key": key, "text": format!("{key} in the repository's forq.yml is ignored: {what}")}),
            );
        }
        config.confined()
    }

    /// Whose model pays for this run: a contributor-funded run of an
    /// untrusted author needs the contributor's key, and does not start
    /// without it.
    fn model_for(&self, run: &Run, config: &Config) -> Phase<Option<Model>> {
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

    async fn prepare(
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
        // test first: it must fail now, and ships in the patch.
        let fix = &config.actions.fix;
        let reproducer = model.filter(|_| targets.is_empty()).map(|m| {
            let agent = Agent::new(
                m.provider.clone(),
                fix.agent.model.clone().unwrap_or_else(|| m.name.clone()),
            )
            .tools(Toolbox::editing())
            .budget(AgentBudget::default().max_steps(fix.agent.max_steps))
            .prices(m.prices.clone());
            AgentReproducer::new(
                Arc::new(agent),
                format!("# {}\n\n{}", run.issue.title, run.issue.body),
            )
        });
        let prepared = forq_search::prepare_with(
            &*backend,
            &seeded.workspace,
            &gate,
            &targets,
            Duration::from_secs(config.test.timeout_s),
            reproducer
                .as_ref()
                .map(|r| r as &dyn forq_search::Reproducer),
        )
        .await
        .map_err(|e| match e {
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

    async fn implement(
        &self,
        run: &Run,
        seeded: &Seeded,
        config: &Config,
        prepared: &Prepared,
        model: Option<&Model>,
    ) -> Phase<Implemented> {
        let fix = &config.actions.fix;
        let workspace = seeded.workspace.clone();
        let index = tokio::task::spawn_blocking(move || Index::open_current(&workspace))
            .await
            .map_err(fail)?
            .map_err(fail)?;
        let agent_log = Arc::new(AgentLog {
            pipeline: self.clone(),
            run: run.id.clone(),
        });
        let strategy = plan(run, seeded, config, model, agent_log)?
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
        let mut budget = Budget::default()
            .max_nodes(fix.budget.max_nodes)
            .max_depth(fix.budget.max_depth)
            .branching_for(strategy.brancher());
        if let Some(jobs) = fix.budget.jobs {
            budget = budget.jobs(jobs);
        }
        if let Some(secs) = fix.budget.max_time_s {
            budget = budget.wall_clock(Duration::from_secs(secs));
        }
        let nodes = Arc::new(NodeLog {
            pipeline: self.clone(),
            run: run.id.clone(),
            counts: Mutex::new((0, 0, None)),
        });
        let options = SearchOptions::default()
            .budget(budget)
            .seed(prepared.seed.clone())
            .observer(nodes);
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
        })
    }

    /// Commits the patch on `branch`, then judges the commit on a fresh
    /// sandbox with the oracle the run was given.
    async fn test(
        &self,
        run: &Run,
        seeded: &Seeded,
        config: &Config,
        implemented: &Implemented,
        branch: &str,
    ) -> Phase<serde_json::Value> {
        let patch = implemented
            .patch
            .clone()
            .ok_or_else(|| Stop::end(State::Failed, "a solved run has no patch file"))?;
        let message = format!(
            "Fix #{}: {}\n\n{}\n\nforq run {} ({} line{} changed).",
            run.issue.id,
            run.issue.title,
            implemented.hypothesis.clone().unwrap_or_default(),
            run.id,
            implemented.diff_lines,
            if implemented.diff_lines == 1 { "" } else { "s" }
        );
        let commit = git::commit_patch(&seeded.workspace, &seeded.head, branch, &patch, &message)
            .await
            .map_err(fail)?;
        self.note(
            &run.id,
            State::Testing,
            &format!("committed {} on {branch}", &commit[..commit.len().min(12)]),
        );
        let (sandbox, oracle) = self.fresh_sandbox(run, seeded, config).await?;
        let judged = oracle.judge(&*sandbox).await;
        let _ = sandbox.destroy().await;
        let judgement = judged.map_err(fail)?;
        let why = if judgement.green() {
            String::new()
        } else {
            format!(
                "{}/{} target tests pass; broken: {}",
                judgement.target_passed,
                judgement.target_total,
                judgement.broken.join(", ")
            )
        };
        Ok(json!({"green": judgement.green(), "commit": commit, "branch": branch, "why": why}))
    }

    /// A preview of run `run`'s fix: its workspace (the patch committed)
    /// in a warm sandbox — the repository's golden forked when one matches
    /// — with forq.yml's `golden.start` serving `golden.port` in a network
    /// only the returned [`Preview`] reaches. The preview owns the sandbox.
    pub async fn preview(&self, run: &Run) -> Result<Arc<Preview>, PreviewError> {
        if !run.state.has_patch() {
            return Err(PreviewError::NoPatch {
                id: run.id.clone(),
                state: run.state.name().to_owned(),
            });
        }
        let stopped = |s: Stop| PreviewError::Sandbox(s.reason);
        let read = |phase: &str| {
            self.store
                .checkpointed(&run.id, phase)
                .map_err(|e| PreviewError::Sandbox(e.to_string()))?
                .ok_or_else(|| PreviewError::Sandbox(format!("the run has no {phase} checkpoint")))
        };
        let seeded: Seeded = serde_json::from_value(read("seeded")?)
            .map_err(|e| PreviewError::Sandbox(e.to_string()))?;
        let provisioned: Provisioned = serde_json::from_value(read("provisioned")?)
            .map_err(|e| PreviewError::Sandbox(e.to_string()))?;
        let config = self.config_of(run, &seeded.workspace).map_err(stopped)?;
        let spec = PreviewSpec::from_config(&config)?;
        let backend = self.backend_for(&config).await.map_err(stopped)?;
        let gate = self.gate_for(run, &config, &*backend, false);
        let sandbox =
            forq_bootstrap::provision(&*backend, &seeded.workspace, &provisioned.stack, &gate)
                .await
                .map_err(|e| PreviewError::Sandbox(e.to_string()))?;
        Preview::start(sandbox, spec).await
    }
}

/// The run's fix, by name (forq-search's `Plan` wires it): its settings,
/// the issue, what the agent is told about the workspace, and the coding
/// agent forq.yml's `program` names.
fn plan(
    run: &Run,
    seeded: &Seeded,
    config: &Config,
    model: Option<&Model>,
    agent_log: Arc<dyn Observer<forq_agent::agent::Event>>,
) -> Phase<forq_search::plan::Plan> {
    let fix = &config.actions.fix;
    let mut plan = forq_search::plan::Plan::new(fix.strategy);
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
    plan.model = model.map(|m| forq_search::plan::PlanModel {
        provider: m.provider.clone(),
        name: match plan.brancher_kind() {
            BrancherName::Agent => fix.agent.model.clone().unwrap_or_else(|| m.name.clone()),
            _ => m.name.clone(),
        },
        prices: m.prices.clone(),
    });
    plan.observer = Some(agent_log.clone());
    if let (BrancherName::Agent, Some(program)) =
        (plan.brancher_kind(), program_of(fix.agent.program))
    {
        let agent = ExternalAgent::from_env(program).map_err(|why| {
            Stop::short(
                State::NeedsHuman,
                format!("actions.fix.agent.program: {why}"),
                FailureKind::Input,
            )
        })?;
        let mut agent = agent.max_turns(fix.agent.max_steps).observer(agent_log);
        if let Some(m) = model {
            agent = agent.prices(m.prices.clone());
        }
        if let Some(name) = &fix.agent.model {
            agent = agent.model(name.clone());
        }
        plan.agent = Some(Arc::new(agent));
    }
    Ok(plan)
}

/// The coding-agent program forq.yml names, `None` for forq's own agent.
fn program_of(program: AgentProgram) -> Option<Program> {
    match program {
        AgentProgram::Forq => None,
        AgentProgram::ClaudeCode => Some(Program::ClaudeCode),
        AgentProgram::Codex => Some(Program::Codex),
    }
}

/// What to do when the unmodified code gives the search no failing test.
const NAME_TARGETS: &str =
    "name the tests that capture the issue (targets: in its front matter, or test.targets in forq.yml)";

/// Where a live state is in the phase order.
fn order(state: State) -> u8 {
    match state {
        State::Queued => 0,
        State::Triaging => 1,
        State::Provisioning => 2,
        State::Implementing => 3,
        State::Testing => 4,
        _ => 5,
    }
}

/// Writes the coding agent's steps (model calls, tool calls, what the
/// tools answered, tokens and dollars) into the run's events.
struct AgentLog {
    pipeline: Pipeline,
    run: String,
}

impl Observer<forq_agent::agent::Event> for AgentLog {
    fn event(&self, event: &forq_agent::agent::Event) {
        use forq_agent::agent::Event as E;
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
struct NodeLog {
    pipeline: Pipeline,
    run: String,
    counts: Mutex<(usize, usize, Option<usize>)>,
}

impl Observer<TreeEvent> for NodeLog {
    fn event(&self, event: &TreeEvent) {
        let TreeEvent::Node(node) = event else { return };
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
            }),
        );
        if node.id == 0 || !matches!(node.status, Status::Red | Status::Green) {
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
