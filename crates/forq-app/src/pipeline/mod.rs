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
//!
//! This file is the run's state machine (`execute`, `phases`) and the
//! pipeline's builder; each phase is a module: `triage`, `seeding` and
//! `provision` (the workspace, the gate, the oracle), `implement` (the
//! plan and the search), `testing` (the commit), `ripple` (the contract
//! check, the ripple and the adaptation of callers).

mod implement;
mod provision;
mod ripple;
mod seeding;
mod testing;
mod triage;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use forq_agent::agent::Task;
use forq_agent::cost::PriceTable;
use forq_agent::external::Program;
use forq_agent::provider::Provider;
use forq_bootstrap::Stack;
use forq_events::{Observer, Observers};
use forq_graph::Index;
use forq_sandbox::{Backend, BackendChoice, BackendKind};
use forq_search::oracle::{Oracle, OracleError};
use forq_search::tree::{SearchEvent as TreeEvent, Status};
use forq_search::Prepared;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::config::{AgentProgram, BrancherName, Config, FundingMode, Mode, ReviewPoint, Strategy};
use crate::contract::{self, ADAPTED, CONTRACT};
use crate::failure::{classify, FailureKind};
use crate::git;
use crate::preview::{Preview, PreviewError, PreviewSpec};
use crate::review;
use crate::seed::{self, SeedOptions, Seeded};
use crate::store::{Action, Run, State, Store, StoreError};

use implement::{plan, AgentLog, Implemented, NAME_TARGETS};
use provision::Provisioned;

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
pub struct PipelineEvent {
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
    observers: Observers<PipelineEvent>,
    golden: GoldenPolicy,
    lease: Duration,
    /// GitHub, where forq answers the issues triage declines.
    github: Option<crate::github::Github>,
    /// The directories of this machine a run's repository may be read
    /// from when it is a path (or a `file://` URL) and the store is shared,
    /// as the operator named them (a store on this machine's disk is the
    /// operator's own: any).
    local_repos: Option<Vec<PathBuf>>,
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
    #[error("run {id} is being worked on by {holder}")]
    Busy {
        /// The run.
        id: String,
        /// Who holds it (a worker's name, or `HOST/PID`).
        holder: String,
    },
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

/// A run whose search found no green candidate stops here: for a person,
/// and short of budget when candidates were left untried.
fn solved(implemented: &Implemented) -> Phase<()> {
    if implemented.solved {
        return Ok(());
    }
    let reason = format!(
        "no green candidate in {} candidate{}",
        implemented.nodes,
        if implemented.nodes == 1 { "" } else { "s" }
    );
    Err(if implemented.budget_spent {
        Stop::short(
            State::NeedsHuman,
            format!("{reason}: the budget (actions.fix.budget) ran out with candidates untried"),
            FailureKind::Budget,
        )
    } else {
        Stop::end(State::NeedsHuman, reason)
    })
}

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
            lease: DEFAULT_LEASE,
            github: None,
            local_repos: None,
        }
    }

    /// Lets runs read their repository from under `dirs` on this machine
    /// when it is a path there. On a store other machines share, a run's
    /// repository is a stranger's word (any worker may have written the
    /// row): without this, such a run is refused unless its repository is
    /// a remote URL, so that no row makes this machine copy a directory of
    /// its own into a workspace (and a model's prompt, and the store).
    pub fn local_repos(mut self, dirs: &[PathBuf]) -> Self {
        let allowed = self.local_repos.get_or_insert_with(Vec::new);
        allowed.extend(
            dirs.iter()
                .map(|d| d.canonicalize().unwrap_or_else(|_| d.clone())),
        );
        self
    }

    /// Whether run `run`'s repository may be read on this machine: a
    /// remote URL always; a local path (or `file://`) when the store is
    /// this machine's own, or beneath a directory the operator named.
    fn repo_allowed(&self, run: &Run) -> Phase<()> {
        let repo = run.repo.as_str();
        let local = repo
            .strip_prefix("file://")
            .or_else(|| (!forq_bootstrap::is_git_url(repo)).then_some(repo));
        let Some(local) = local else {
            return Ok(());
        };
        if self.store.path().is_some() {
            return Ok(());
        }
        let allowed = self.local_repos.as_deref().unwrap_or_default();
        let real = Path::new(local).canonicalize().ok();
        if real.is_some_and(|r| allowed.iter().any(|d| r.starts_with(d))) {
            return Ok(());
        }
        Err(Stop::short(
            State::Failed,
            format!(
                "the run's repository {repo:?} is a path on this machine, and the shared store it \
                 came from is not the operator's word for which of this machine's directories a run \
                 may read: queue a git URL, or start this worker with --local-repos naming the \
                 directory it is under"
            ),
            FailureKind::Input,
        ))
    }

    /// Speaks to GitHub as `github` does: an issue on GitHub that triage
    /// declines is answered there, once (forq.yml `triage.answer`,
    /// `triage.label`; see [`crate::answer`]). Without it, nothing is said.
    pub fn github(mut self, github: crate::github::Github) -> Self {
        self.github = Some(github);
        self
    }

    /// How long a run's holder is trusted without renewing its lease
    /// (default [`DEFAULT_LEASE`]); it renews three times a lease.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
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
    pub fn observer(mut self, observer: Arc<dyn Observer<PipelineEvent>>) -> Self {
        self.observers.push(observer);
        self
    }

    /// The store.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// The state directory: `runs/ID/` for each run this machine drives.
    pub fn state_dir(&self) -> &Path {
        &self.state_dir
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
            self.observers.emit(&PipelineEvent {
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
    /// The run is held under a lease while it runs (renewed as it goes):
    /// another process takes it up only once this one is gone, and if this
    /// one loses it (paused past its lease), it stops driving it and
    /// writes nothing more to it.
    #[tracing::instrument(name = "run", skip_all, fields(run = %id))]
    pub async fn execute(&self, id: &str) -> Result<Run, RunError> {
        let run = self.store.get(id)?;
        if run.state.is_terminal() {
            return Ok(run);
        }
        let Some(before) = self.store.acquire(&run.id, self.lease)? else {
            let holder = self.store.get(&run.id)?.worker.unwrap_or_default();
            return Err(RunError::Busy {
                id: run.id.to_string(),
                holder,
            });
        };
        self.drive_held(before).await
    }

    /// Drives a run this pipeline's store holds already (taken up by
    /// [`Store::claim_next`]; `before` is the run as it was then) to its
    /// end, and lets go of it.
    pub async fn drive_held(&self, before: Run) -> Result<Run, RunError> {
        let id = before.id.clone();
        let out = self.drive(before).await;
        let _ = self.store.release(&id);
        out
    }

    /// The same pipeline over `store` (the same store written as another
    /// holder: a worker's name).
    pub fn with_store(&self, store: Arc<Store>) -> Pipeline {
        Pipeline {
            store,
            ..self.clone()
        }
    }

    /// Drives run `before` (as it was when this process took it up) to its
    /// end.
    async fn drive(&self, before: Run) -> Result<Run, RunError> {
        let id = before.id.clone();
        if before.worker.is_some() && !self.store.holder().holds(&before) {
            let _ = self.store.event(
                &id,
                "resumed",
                json!({"from": before.state.name(), "after": before.worker, "dead_pid": before.pid}),
            );
        }
        let mut run = self.store.get(&id)?;
        let outcome = self.drive_phases(&id, &mut run).await;
        // Its records go to the store, so every machine that reads the
        // store reads them, whichever machine ran it.
        self.bundle_branch(&id).await;
        self.keep_records(&id);
        outcome
    }

    /// Writes run `id`'s branch, when it has one, as `branch.bundle` in
    /// its directory: the commits after its seed (the whole branch for a
    /// copied repository, whose seed commit exists nowhere else), so that
    /// `forq push` on another machine pushes the very same commits. Only
    /// for a store other machines share.
    async fn bundle_branch(&self, id: &str) {
        // A store on this machine's disk: the workspace is here as well.
        if self.store.path().is_some() {
            return;
        }
        let Ok(run) = self.store.get(id) else {
            return;
        };
        let (Some(branch), true) = (&run.branch, run.state.has_patch()) else {
            return;
        };
        let Ok(Some(seeded)) = self.store.checkpointed(id, "seeded") else {
            return;
        };
        let Ok(seeded) = Seeded::stored(seeded, &self.workspace(id)) else {
            return;
        };
        let base = (seeded.how == "clone").then_some(seeded.head.as_str());
        let out = self.run_dir(id).join("branch.bundle");
        if let Err(e) = git::bundle(&seeded.workspace, branch, base, &out).await {
            tracing::warn!("the branch was not bundled for other machines: {e}");
        }
    }

    async fn drive_phases(&self, id: &str, run: &mut Run) -> Result<Run, RunError> {
        let id = id.to_owned();
        let outcome = tokio::select! {
            r = self.phases(run) => r,
            held = self.keep(&id) => match held {
                Kept::Abort => Err(Stop::end(State::Aborted, "aborted by request".to_owned())),
                Kept::Lost => {
                    tracing::warn!("another process took the run up (this one's lease ran out): stopped driving it");
                    return Err(RunError::Store(StoreError::Fenced { id }));
                }
            },
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

    /// Copies the files run `id` wrote in its directory (`fix.patch`,
    /// `tree.json`, `summary.json`, `ripple.patch`, `branch.bundle`) into
    /// the store, each
    /// up to 16 MiB; links and directories are not followed.
    fn keep_records(&self, id: &str) {
        for (name, bytes) in crate::clean::record_files(&self.run_dir(id)) {
            if let Err(e) = self.store.put_artifact(id, &name, &bytes) {
                tracing::warn!("{name} was not kept in the store: {e}");
            }
        }
    }

    /// Keeps run `id` held while it runs: renews the lease a few times
    /// within each lease, and resolves when someone asks the run to stop,
    /// or when the run was lost (another process holds it now, or the
    /// store could not be told of this one for a whole lease).
    async fn keep(&self, id: &str) -> Kept {
        let every = (self.lease / 3).max(Duration::from_millis(100));
        let mut renewed = Instant::now();
        loop {
            tokio::time::sleep(Duration::from_millis(300).min(every)).await;
            if self
                .store
                .get(id)
                .map(|r| r.abort_requested)
                .unwrap_or(false)
            {
                return Kept::Abort;
            }
            if renewed.elapsed() >= every {
                match self.store.renew(id, self.lease) {
                    Ok(true) => renewed = Instant::now(),
                    Ok(false) => return Kept::Lost,
                    Err(e) if renewed.elapsed() >= self.lease => {
                        tracing::warn!("the lease could not be renewed for a whole lease: {e}");
                        return Kept::Lost;
                    }
                    Err(e) => tracing::warn!("the lease could not be renewed (trying again): {e}"),
                }
            }
        }
    }

    async fn phases(&self, run: &mut Run) -> Phase<()> {
        let id = run.id.clone();
        let triage = self.triaged(run).await?;
        let reason = triage["reason"].as_str().unwrap_or_default().to_owned();
        // Provisioning: the workspace, then the gate, the warm root and the oracle.
        self.enter(run, State::Provisioning)?;
        let seeded = self.seeded(run).await?;
        let config = self.config_of(run, &seeded)?;
        if run.action == Action::Auto && config.actions.fix.mode == Mode::Manual {
            return Err(Stop::end(
                State::Triaged,
                format!("{reason}; actions.fix.mode is manual in forq.yml: a run with the fix action fixes it"),
            ));
        }
        let model = self.model_for(run, &config)?;
        let implemented = self
            .implemented(run, &seeded, &config, model.as_ref())
            .await?;
        let triage_cost = triage["cost_usd"].as_f64().unwrap_or(0.0);
        let _ = self
            .store
            .record(&id, Some(triage_cost + implemented.cost_usd), None, None);
        solved(&implemented)?;
        let branch = git::branch_name(&config.actions.fix.branch, "fix", &id, &run.issue.id);
        self.review_before_commit(run, &config, &implemented, &branch)?;
        // Testing: commit on the run's branch, then the whole oracle on a
        // fresh sandbox over the commit.
        self.enter(run, State::Testing)?;
        self.tested(run, &seeded, &config, &implemented, &branch)
            .await?;
        self.store
            .record(&id, None, Some(implemented.diff_lines), Some(&branch))
            .map_err(fail)?;
        let contract = self
            .contract_kept(run, &seeded, &config, &branch, model.as_ref())
            .await?;
        // Green is plausible, not proven: the reason says what else vouches.
        let vouched = implemented
            .evidence
            .as_ref()
            .map(|e| format!("; {}: {}", e.verdict.name(), e.why))
            .unwrap_or_default();
        let (state, reason) = if contract.has_findings() {
            (
                State::CompletedWithFindings,
                format!("committed on {branch}; {}{vouched}", contract.summary()),
            )
        } else if !contract.adapted.is_empty() {
            (
                State::PatchReady,
                format!("committed on {branch}; {}{vouched}", contract.summary()),
            )
        } else {
            (State::PatchReady, format!("committed on {branch}{vouched}"))
        };
        *run = self.store.transition(&id, state, &reason).map_err(fail)?;
        self.tell(&id, state, &branch);
        Ok(())
    }

    /// Triage, once (checkpointed); its cost recorded. A triage-only run
    /// ends here, and so does one triage would not attempt.
    async fn triaged(&self, run: &mut Run) -> Phase<serde_json::Value> {
        let id = run.id.clone();
        let mut config = None;
        let triage = match self.store.checkpointed(&id, "triaged").map_err(fail)? {
            Some(t) => t,
            None => {
                self.enter(run, State::Triaging)?;
                let read = self.config_before_triage(run).await?;
                let t = self.triage(run, &read).await?;
                self.store.checkpoint(&id, "triaged", &t).map_err(fail)?;
                config = Some(read);
                t
            }
        };
        let reason = triage["reason"].as_str().unwrap_or_default().to_owned();
        if let Some(cost) = triage["cost_usd"].as_f64() {
            let _ = self.store.record(&id, Some(cost), None, None);
        }
        if triage["attempt_fix"] == json!(false) && triage["skipped"] != json!(true) {
            let config = match config {
                Some(c) => c,
                None => self.config_before_triage(run).await?,
            };
            self.answer_declined(run, &triage, &config).await;
        }
        if run.action == Action::Triage {
            return Err(Stop::end(State::Triaged, reason));
        }
        if triage["attempt_fix"] == json!(false) {
            return Err(Stop::end(State::NeedsHuman, format!("triage: {reason}")));
        }
        Ok(triage)
    }

    /// The implementation, once (checkpointed): the warm root prepared
    /// (again, on a resume: a sandbox does not outlive its process), the
    /// fix looked for, the root destroyed.
    async fn implemented(
        &self,
        run: &mut Run,
        seeded: &Seeded,
        config: &Config,
        model: Option<&Model>,
    ) -> Phase<Implemented> {
        let id = run.id.clone();
        if let Some(i) = self.store.checkpointed(&id, "implemented").map_err(fail)? {
            return serde_json::from_value::<Implemented>(i).map_err(fail);
        }
        if run.state == State::Implementing {
            self.note(&id, State::Implementing, "resumed: provisioning the warm sandbox again (a sandbox does not outlive its process; the gate's verdict is cached)");
        }
        let prepared = self.prepare(run, seeded, config, model).await?;
        self.enter(run, State::Implementing)?;
        let result = self.implement(run, seeded, config, &prepared, model).await;
        let _ = prepared.root.destroy().await;
        let implemented = result?;
        self.store
            .checkpoint(&id, "implemented", &json!(implemented))
            .map_err(fail)?;
        // The patch into the store at once: a worker that dies from here
        // on leaves it for the one that resumes the run elsewhere.
        self.keep_records(&id);
        Ok(implemented)
    }

    /// A person looks at the green patch first, when forq.yml says so:
    /// the run pauses unless it was approved.
    fn review_before_commit(
        &self,
        run: &Run,
        config: &Config,
        implemented: &Implemented,
        branch: &str,
    ) -> Phase<()> {
        let approved = review::approved(ReviewPoint::Commit);
        if !config.review.contains(&ReviewPoint::Commit)
            || self
                .store
                .checkpointed(&run.id, &approved)
                .map_err(fail)?
                .is_some()
        {
            return Ok(());
        }
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
                &run.id,
                review::PAUSED,
                &json!({"point": "commit", "resume": run.state.name(), "what": what}),
            )
            .map_err(fail)?;
        Err(Stop::end(
            State::NeedsReview,
            format!("waiting for review before committing: {what}"),
        ))
    }

    /// The commit tested on a fresh sandbox, once (checkpointed). Green
    /// in the search and red there: a test that depends on more than the
    /// code (order, time, leftovers).
    async fn tested(
        &self,
        run: &Run,
        seeded: &Seeded,
        config: &Config,
        implemented: &Implemented,
        branch: &str,
    ) -> Phase<()> {
        let tested = match self.store.checkpointed(&run.id, "tested").map_err(fail)? {
            Some(t) => t,
            None => {
                let t = self.test(run, seeded, config, implemented, branch).await?;
                self.store.checkpoint(&run.id, "tested", &t).map_err(fail)?;
                t
            }
        };
        if tested["green"] == json!(true) {
            return Ok(());
        }
        Err(Stop::short(
            State::Failed,
            format!(
                "the committed patch is not green on a fresh sandbox: {}",
                tested["why"].as_str().unwrap_or("")
            ),
            FailureKind::Repository,
        ))
    }

    /// Contract and ripple, once each (checkpointed): what the green patch
    /// changed, definition by definition, and the callers an incompatible
    /// change reaches — adapted by the agent in a sandbox, the tests
    /// deciding, when there is a model.
    async fn contract_kept(
        &self,
        run: &Run,
        seeded: &Seeded,
        config: &Config,
        branch: &str,
        model: Option<&Model>,
    ) -> Phase<contract::Report> {
        let id = &run.id;
        let contract = match self.store.checkpointed(id, CONTRACT).map_err(fail)? {
            Some(c) => serde_json::from_value::<contract::Report>(c).map_err(fail)?,
            None => {
                let c = self.contract(run, seeded, config).await?;
                self.store
                    .checkpoint(id, CONTRACT, &json!(c))
                    .map_err(fail)?;
                c
            }
        };
        let (false, Some(m)) = (contract.findings.is_empty(), model) else {
            return Ok(contract);
        };
        if let Some(c) = self.store.checkpointed(id, ADAPTED).map_err(fail)? {
            return serde_json::from_value::<contract::Report>(c).map_err(fail);
        }
        self.pause_for(run, config, ReviewPoint::Ripple, || {
            format!(
                "{}: approve to let the agent adapt them on {branch}",
                contract.summary()
            )
        })?;
        let c = self.adapt(run, seeded, config, contract, branch, m).await?;
        self.store
            .checkpoint(id, ADAPTED, &json!(c))
            .map_err(fail)?;
        Ok(c)
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

    /// A preview of run `run`'s fix: its workspace (the patch committed)
    /// in a warm sandbox — the repository's golden forked when one matches
    /// — with forq.yml's `golden.start` serving `golden.port` in a network
    /// only the returned [`Preview`] reaches. The preview owns the sandbox.
    pub async fn preview(&self, run: &Run) -> Result<Arc<Preview>, PreviewError> {
        if !run.state.has_patch() {
            return Err(PreviewError::NoPatch {
                id: run.id.to_string(),
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
        let seeded = Seeded::stored(read("seeded")?, &self.workspace(&run.id))
            .map_err(PreviewError::Sandbox)?;
        let provisioned: Provisioned = serde_json::from_value(read("provisioned")?)
            .map_err(|e| PreviewError::Sandbox(e.to_string()))?;
        let config = self.config_of(run, &seeded).map_err(stopped)?;
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

/// Why [`Pipeline::keep`] stopped keeping a run.
enum Kept {
    Abort,
    Lost,
}

/// How long a run's holder is trusted without a word: past it, another
/// process may take the run up.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(30);

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
