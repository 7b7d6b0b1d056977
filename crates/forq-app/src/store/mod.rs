//! The run store: every run, its events (state changes, search nodes,
//! agent steps, notes), its checkpoints and its artifacts, in one SQLite
//! database (`.forq/forq.db`, WAL, so `forq runs tail` reads while a run
//! writes) or in PostgreSQL, shared by every machine (`postgres://…`).
//!
//! A process that drives a run holds it under a lease ([`Store::acquire`],
//! [`Store::renew`]): a holder that dies lets its lease run out and
//! another takes the run up from its last checkpoint. Each taking-up
//! raises the run's fence, and every write of a holder names the fence it
//! took the run with: a holder that lost its run (a paused process, a
//! cut-off machine) writes nothing more to it ([`StoreError::Fenced`]).
//!
//! ```
//! use forq_app::store::{NewRun, State, Store};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let store = Store::open(&dir.path().join("forq.db")).unwrap();
//! let run = store.create(&NewRun::fix("7", "add() subtracts", "/src/calc")).unwrap();
//! assert_eq!(run.state, State::Queued);
//! store.transition(&run.id, State::Triaging, "").unwrap();
//! assert_eq!(store.get(&run.id).unwrap().state, State::Triaging);
//! assert_eq!(store.events(&run.id, 0).unwrap().len(), 2); // created, then the state change
//! ```

mod db;
mod github;
mod lease;
#[cfg(feature = "postgres")]
mod postgres;
mod schema;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::failure::FailureKind;
use crate::ids::{BranchName, ObjectId, RunId};
use db::{vals, Db, DbError, Sql, Val};

pub use lease::{Holder, Worker};
pub use schema::SCHEMA_VERSION;

/// Where a run is in its life.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::EnumIter,
)]
#[strum(serialize_all = "snake_case")]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Created, not started.
    Queued,
    /// The model decides whether the issue is worth a fix.
    Triaging,
    /// Seeding the workspace, the bootstrap gate, the warm sandbox, the
    /// oracle.
    Provisioning,
    /// The search or the agent looks for a patch.
    Implementing,
    /// The patch is committed and the whole suite runs on the commit.
    Testing,
    /// Terminal: a person pushed the branch and opened a pull request.
    PrOpened,
    /// Terminal: a green patch is committed on the run's branch.
    PatchReady,
    /// Terminal: a green patch is committed, but it changes a contract
    /// its callers rely on, and those callers (or callers beyond the
    /// ripple's depth) are left for a person: the findings say which.
    CompletedWithFindings,
    /// Paused for a person at a review point (forq.yml `review:`): no
    /// process works on it until it is approved (it continues from its
    /// checkpoint) or rejected (it is aborted).
    NeedsReview,
    /// Terminal: a triage-only run decided (its decision is the outcome).
    Triaged,
    /// Terminal: forq stopped short and says why (triage declined, no
    /// green candidate, a budget spent).
    NeedsHuman,
    /// Terminal: someone aborted it.
    Aborted,
    /// Terminal: something broke; the reason says what.
    Failed,
}

impl State {
    /// The state's name, as stored and printed.
    pub fn name(self) -> &'static str {
        self.into()
    }
    /// Every state's name, in lifecycle order.
    pub fn names() -> impl Iterator<Item = &'static str> {
        <State as strum::IntoEnumIterator>::iter().map(State::name)
    }
    /// The state named `name`.
    pub fn from_name(name: &str) -> Option<State> {
        name.parse().ok()
    }
    /// Whether the run ended with a committed patch (to push, preview, or
    /// keep).
    pub fn has_patch(self) -> bool {
        matches!(
            self,
            State::PatchReady | State::CompletedWithFindings | State::PrOpened
        )
    }
    /// Whether the run is over (or paused for a review: no process works
    /// on it either way).
    pub fn is_terminal(self) -> bool {
        !matches!(
            self,
            State::Queued
                | State::Triaging
                | State::Provisioning
                | State::Implementing
                | State::Testing
        )
    }
}

impl std::fmt::Display for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What a run does with its issue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Triage only.
    Triage,
    /// Triage (when enabled), then fix.
    Fix,
    /// Triage, then fix when the repository's `actions.fix.mode` is `auto`
    /// (the default); with `manual`, stop at `triaged`.
    Auto,
}

impl Action {
    /// `triage` or `fix`.
    pub fn name(self) -> &'static str {
        match self {
            Action::Triage => "triage",
            Action::Fix => "fix",
            Action::Auto => "auto",
        }
    }
}

/// The issue a run works on, as the run keeps it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IssueRecord {
    /// Its id in its source (a number on GitHub, the front matter's or the
    /// file's name locally).
    pub id: String,
    /// The title.
    pub title: String,
    /// The body, Markdown.
    #[serde(default)]
    pub body: String,
    /// Where it was read.
    #[serde(default)]
    pub source: String,
    /// Labels.
    #[serde(default)]
    pub labels: Vec<String>,
    /// Tests that capture it, when its source names them.
    #[serde(default)]
    pub targets: Vec<String>,
    /// Who filed it, when known.
    #[serde(default)]
    pub author: Option<String>,
    /// The pull request or issue URL on its forge, when it has one.
    #[serde(default)]
    pub url: Option<String>,
    /// The pull request, when the work item is one: the run starts from
    /// its head, and its result goes back to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull: Option<PullRecord>,
}

/// A pull request a run works on, as it was when the run was queued.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullRecord {
    /// Its number.
    pub number: u64,
    /// The repository it is on, `OWNER/REPO` (its base).
    pub repo: String,
    /// The head commit the run starts from.
    pub head_sha: ObjectId,
    /// The head branch's name (in the head repository).
    pub head_ref: BranchName,
    /// The head repository, `OWNER/REPO`: a fork's, or the base's.
    pub head_repo: String,
    /// Where the head repository is cloned and pushed.
    pub head_clone_url: String,
    /// The branch it goes into.
    pub base_ref: BranchName,
    /// Whether the base's maintainers may push to its head branch.
    pub maintainer_can_modify: bool,
    /// The checks that failed on its head, in a line each.
    #[serde(default)]
    pub failed_checks: Vec<String>,
    /// Where the run's target tests come from: `checks` (the failing
    /// checks' logs named them) or `local` (the suite's failures at the
    /// head, found when the run starts).
    pub targets_from: String,
}

impl PullRecord {
    /// Whether forq may push its result to the head branch itself: the
    /// head is in the base repository, or its author lets maintainers
    /// edit it.
    pub fn pushes_to_head(&self) -> bool {
        self.maintainer_can_modify || self.head_repo.eq_ignore_ascii_case(&self.repo)
    }
}

/// A run to create.
#[derive(Debug, Clone)]
pub struct NewRun {
    /// The issue.
    pub issue: IssueRecord,
    /// The repository: a directory or a git URL.
    pub repo: String,
    /// What to do.
    pub action: Action,
    /// Context files for its workspace.
    pub context: Vec<ContextFile>,
    /// The labels a worker must offer to take it up (`native`, `x86_64`,
    /// an operator's own); none: any worker.
    pub requires: Vec<String>,
}

impl NewRun {
    /// A fix run on issue `id` titled `title` of the repository `repo`.
    pub fn fix(id: &str, title: &str, repo: &str) -> NewRun {
        NewRun {
            issue: IssueRecord {
                id: id.to_owned(),
                title: title.to_owned(),
                ..IssueRecord::default()
            },
            repo: repo.to_owned(),
            action: Action::Fix,
            context: Vec::new(),
            requires: Vec::new(),
        }
    }
}

/// A run as stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Run {
    /// Its id.
    pub id: RunId,
    /// The issue.
    pub issue: IssueRecord,
    /// The repository: a directory or a git URL.
    pub repo: String,
    /// What it does.
    pub action: Action,
    /// Where it is.
    pub state: State,
    /// Why it is there (a terminal state's reason).
    pub reason: String,
    /// Created, milliseconds since the epoch.
    pub created_ms: u64,
    /// Last changed, milliseconds since the epoch.
    pub updated_ms: u64,
    /// The process working on it, while one is.
    pub pid: Option<u32>,
    /// Dollars spent on models.
    pub cost_usd: f64,
    /// Lines added plus removed by its patch.
    pub patch_lines: Option<usize>,
    /// The branch its patch is committed on.
    pub branch: Option<BranchName>,
    /// Whether someone asked it to stop.
    pub abort_requested: bool,
    /// When a process first took it up, milliseconds since the epoch.
    pub started_ms: Option<u64>,
    /// Context files put into its workspace when it is seeded.
    pub context: Vec<ContextFile>,
    /// Why it stopped short, as a class: set when it ended `failed`,
    /// `aborted` (`cancelled`), or `needs_human` for a reason that is not
    /// a decision (a repository whose tests do not run, a budget spent, a
    /// missing model); `None` for a run that reached its goal, one triage
    /// declined, and one whose search found no green candidate.
    pub failure: Option<FailureKind>,
    /// The process holding it (a worker's name, else `HOST/PID`), while
    /// one does or last did.
    pub worker: Option<String>,
    /// The machine that process runs on.
    pub host: Option<String>,
    /// Until when its holder's lease runs, milliseconds since the epoch:
    /// past it, another process may take the run up.
    pub lease_until_ms: Option<u64>,
    /// How many times a process took it up: the number its holder writes
    /// under.
    pub fence: u64,
    /// The labels a worker must offer to take it up.
    pub requires: Vec<String>,
    /// The boot of the machine its holder runs on (`None`: taken up by a
    /// forq from before boots were kept): a host name alone does not tell
    /// two machines apart.
    pub boot: Option<String>,
}

/// A file given to a run as context: its text, read from `source` when
/// the run was queued ([`ContextFile::read`]), written to `dest` inside
/// the workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextFile {
    /// Where it was read, on the machine that queued the run (for
    /// messages: a worker never reads it from a shared store).
    pub source: String,
    /// Where it goes, relative to the workspace.
    pub dest: String,
    /// Its text, as it was when the run was queued (`None` only in runs
    /// queued by an older forq).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// The largest context file a run carries, in bytes.
pub const MAX_CONTEXT_BYTES: u64 = 1 << 20;

impl ContextFile {
    /// The context file at `source` (the operator's own path), to be
    /// written to `dest`: read now, whole, so the run carries its text to
    /// whichever machine drives it. Refused when it is not a regular file
    /// of UTF-8 text of at most [`MAX_CONTEXT_BYTES`].
    pub fn read(source: &Path, dest: &str) -> Result<ContextFile, String> {
        use std::io::Read;
        let named = || source.display().to_string();
        let file = std::fs::File::open(source).map_err(|e| format!("{}: {e}", named()))?;
        let meta = file.metadata().map_err(|e| format!("{}: {e}", named()))?;
        if !meta.is_file() {
            return Err(format!("{} is not a regular file", named()));
        }
        let mut bytes = Vec::new();
        file.take(MAX_CONTEXT_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("{}: {e}", named()))?;
        if bytes.len() as u64 > MAX_CONTEXT_BYTES {
            return Err(format!(
                "{} is larger than {} KiB: give a smaller file",
                named(),
                MAX_CONTEXT_BYTES >> 10
            ));
        }
        let text = String::from_utf8(bytes)
            .map_err(|_| format!("{} is not UTF-8 text: context files are text", named()))?;
        Ok(ContextFile {
            source: named(),
            dest: dest.to_owned(),
            text: Some(text),
        })
    }
}

impl Run {
    /// Whether a process is working on it now: not over, and its holder's
    /// lease runs (a holder on this machine must also be alive: one that
    /// died is known dead at once, without waiting for its lease).
    pub fn is_live(&self) -> bool {
        if self.state.is_terminal() {
            return false;
        }
        // This machine's: its name and, when the holder recorded it, its
        // boot. Another machine with the same name (cloned from one image,
        // a pod's default) is judged by its lease alone, never by whether
        // a pid of that number runs here.
        let here = self.host.as_deref().is_none_or(|h| h == lease::this_host())
            && self.boot.as_deref().is_none_or(|b| b == lease::this_boot());
        let alive_here = !here || self.pid.is_some_and(process_alive);
        match self.lease_until_ms {
            Some(until) => until > now_ms() && alive_here,
            // Taken up by a forq from before leases: its process, here.
            None => here && self.pid.is_some_and(process_alive),
        }
    }
    /// Seconds from when a process took it up (else its creation) to the
    /// last change: the run's own time, not its time in the queue.
    pub fn elapsed_s(&self) -> f64 {
        let from = self.started_ms.unwrap_or(self.created_ms);
        self.updated_ms.saturating_sub(from) as f64 / 1000.0
    }
}

/// Whether process `pid` exists.
pub fn process_alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// One thing that happened to a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunEvent {
    /// Its id in the whole store, increasing in the order events were
    /// written, across runs and processes (what a stream of every run's
    /// events resumes from).
    pub id: u64,
    /// Its place in the run's sequence, from 1.
    pub seq: u64,
    /// When, milliseconds since the epoch.
    pub at_ms: u64,
    /// `created`, `state`, `checkpoint`, `node`, `agent`, `note`, `cost`,
    /// `resumed`, `engine`, `cleaned`.
    pub kind: String,
    /// Details, JSON.
    pub data: Value,
    /// The fence its writer held the run under (`None`: written by a
    /// process that did not hold it, such as `forq runs abort`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fence: Option<u64>,
}

/// Why the store failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The database failed.
    #[error("the run store {store}: {source}")]
    Database {
        /// The store: its file, or its URL without the password.
        store: String,
        /// The database's error (boxed: the drivers' types are not part
        /// of this crate's API).
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// No run has this id.
    #[error("no run {0} in the store")]
    NotFound(String),
    /// More than one run starts with this prefix.
    #[error("{0} names more than one run; give more of the id")]
    Ambiguous(String),
    /// The database was written by a newer forq.
    #[error(
        "the run store {store} has schema version {found}, newer than the {supported} this forq \
         reads; upgrade forq (the store is left as it is)"
    )]
    TooNew {
        /// The store.
        store: String,
        /// Its schema version.
        found: i64,
        /// The newest this build reads.
        supported: i64,
    },
    /// This process's hold on the run ended: another took it up (this
    /// one's lease ran out), so nothing this one writes is kept.
    #[error("run {id} was taken up by another process (this one's lease on it ran out): nothing more is written for it from here")]
    Fenced {
        /// The run.
        id: String,
    },
    /// A row of the store is not one forq writes (a stranger's, on a
    /// shared store): it is refused whole.
    #[error("run {id:?} in the store is malformed and is not read: {what}")]
    Malformed {
        /// Its id, as stored (cut at 80 characters).
        id: String,
        /// What in it is not forq's.
        what: String,
    },
    /// `--store` names no store this build opens.
    #[error("{0}")]
    Unsupported(String),
    /// The run is over and cannot change state.
    #[error("run {id} is {state} already: it is over")]
    Over {
        /// The run.
        id: String,
        /// Its state.
        state: State,
    },
}

/// The run store. Methods are synchronous and quick; share it in an `Arc`.
#[derive(Debug)]
pub struct Store {
    db: Arc<Db>,
    /// The file, or the URL without its password: what messages name.
    location: String,
    path: Option<PathBuf>,
    /// Who this handle writes as.
    holder: Holder,
    /// The runs this handle took up, with the fence each was taken up
    /// with, and whether it lost them since.
    held: Arc<Mutex<HashMap<String, lease::Hold>>>,
}

/// The columns a [`Run`] is read from, in [`run_of`]'s order.
const RUN_COLUMNS: &str = "id, issue, repo, action, state, reason, created_ms, updated_ms, pid, \
     cost_usd, patch_lines, branch, abort_requested, started_ms, context, failure, worker, host, \
     lease_until, fence, requires, boot";

/// Appends one event inside the caller's transaction, under `fence` when
/// the writer holds the run; returns its `seq`. The run's row is the
/// event counter, so writers of one run take turns on it, and the event
/// id comes from one counter row taken last: ids are handed out in the
/// order their transactions commit, which is what lets a stream resume
/// from an id and miss nothing.
fn append_event(
    c: &mut dyn Sql,
    id: &str,
    fence: Option<u64>,
    now: i64,
    kind: &str,
    data: &str,
) -> Result<Result<u64, StoreError>, DbError> {
    let seq = c
        .value(
            "UPDATE runs SET last_seq = last_seq + 1
             WHERE id = ?1 AND (fence = ?2 OR ?2 IS NULL) RETURNING last_seq",
            vals![id, fence],
        )?
        .int();
    let Some(seq) = seq else {
        return Ok(Err(missing(c, id)?));
    };
    let event_id = c
        .value(
            "UPDATE meta SET value = value + 1 WHERE name = 'event_id' RETURNING value",
            &[],
        )?
        .int()
        .ok_or("the store's event counter is missing")?;
    c.exec(
        "INSERT INTO events (id, run_id, seq, at_ms, kind, data, fence) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        vals![event_id, id, seq, now, kind, data, fence],
    )?;
    Ok(Ok(seq as u64))
}

/// Why a write to run `id` changed nothing: it does not exist, or the
/// writer's fence is not the run's.
fn missing(c: &mut dyn Sql, id: &str) -> Result<StoreError, DbError> {
    let exists = c
        .row("SELECT 1 FROM runs WHERE id = ?1", vals![id])?
        .is_some();
    Ok(if exists {
        StoreError::Fenced { id: id.to_owned() }
    } else {
        StoreError::NotFound(id.to_owned())
    })
}

/// Milliseconds since the epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl Store {
    /// Opens (creating) the SQLite database at `path`.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let location = path.display().to_string();
        let conn = db::Sqlite::open(path).map_err(|e| StoreError::Database {
            store: location.clone(),
            source: Box::new(e),
        })?;
        Store::over(Db::new(Box::new(conn)), location, Some(path.to_owned()))
    }

    /// Opens the store `spec` names: a PostgreSQL URL
    /// (`postgres://user:password@host/db`, shared by every machine), else
    /// a SQLite file.
    pub fn connect(spec: &str) -> Result<Store, StoreError> {
        if !(spec.starts_with("postgres://") || spec.starts_with("postgresql://")) {
            return Store::open(Path::new(spec.strip_prefix("sqlite://").unwrap_or(spec)));
        }
        #[cfg(feature = "postgres")]
        {
            let location = postgres::redacted(spec);
            let conn =
                postgres::Postgres::connect(spec).map_err(|source| StoreError::Database {
                    store: location.clone(),
                    source,
                })?;
            Store::over(Db::new(Box::new(conn)), location, None)
        }
        #[cfg(not(feature = "postgres"))]
        Err(StoreError::Unsupported(
            "this forq was built without PostgreSQL (forq-app's `postgres` feature): use a SQLite \
             store, or a build with the feature"
                .to_owned(),
        ))
    }

    fn over(mut db: Db, location: String, path: Option<PathBuf>) -> Result<Store, StoreError> {
        schema::upgrade(&db).map_err(|e| match e {
            schema::SchemaError::TooNew(found) => StoreError::TooNew {
                store: location.clone(),
                found,
                supported: SCHEMA_VERSION,
            },
            schema::SchemaError::Db(source) => StoreError::Database {
                store: location.clone(),
                source,
            },
        })?;
        if db.dialect == db::Dialect::Postgres {
            db.role = db
                .with(|c| c.value("SELECT session_user", &[]))
                .map_err(|source| StoreError::Database {
                    store: location.clone(),
                    source,
                })?
                .into_text();
        }
        Ok(Store {
            db: Arc::new(db),
            location,
            path,
            holder: Holder::this_process(),
            held: Arc::default(),
        })
    }

    /// The same store, writing as `holder` (a worker's name): runs it
    /// takes up are recorded as that holder's.
    pub fn as_holder(&self, holder: Holder) -> Store {
        Store {
            db: self.db.clone(),
            location: self.location.clone(),
            path: self.path.clone(),
            holder,
            held: Arc::default(),
        }
    }

    /// The database role this handle's connection is, on PostgreSQL.
    pub(crate) fn role(&self) -> Option<&str> {
        self.db.role.as_deref()
    }

    /// Who this handle writes as.
    pub fn holder(&self) -> &Holder {
        &self.holder
    }

    /// The SQLite file, for a store that is one.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// What messages call the store: its file, or its URL without the
    /// password.
    pub fn location(&self) -> &str {
        &self.location
    }

    fn err(&self, source: DbError) -> StoreError {
        StoreError::Database {
            store: self.location.clone(),
            source,
        }
    }

    fn with<T>(&self, f: impl FnOnce(&mut dyn Sql) -> Result<T, DbError>) -> Result<T, StoreError> {
        self.db.with(f).map_err(|e| self.err(e))
    }

    /// Runs `f` in one transaction that holds the write lock from its
    /// start (SQLite), or the rows it touches (PostgreSQL): what it reads
    /// stays true until it commits, across processes and machines. An
    /// `Err` inside `f`'s `Ok` rolls back too.
    fn write<T>(
        &self,
        f: impl FnOnce(&mut dyn Sql) -> Result<Result<T, StoreError>, DbError>,
    ) -> Result<T, StoreError> {
        let out = self.db.write(|c| match f(c)? {
            Ok(t) => Ok(t),
            // Undo whatever the step wrote before it found it may not.
            Err(e) => Err(Box::new(Refused(e)) as DbError),
        });
        match out {
            Ok(t) => Ok(t),
            Err(e) => match e.downcast::<Refused>() {
                Ok(refused) => Err(refused.0),
                Err(e) => Err(self.err(e)),
            },
        }
    }

    /// The fence this handle writes run `id` under, if it took it up: the
    /// one it took it up with, even once it lost the run — a lost fence is
    /// poisoned, never dropped, so no later write of this handle can pass
    /// as a write of nobody's (`fence IS NULL`).
    fn fence(&self, id: &str) -> Option<u64> {
        self.held
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .map(|h| h.fence)
    }

    /// Records a new run, `queued`.
    pub fn create(&self, new: &NewRun) -> Result<Run, StoreError> {
        let now = now_ms();
        let issue = serde_json::to_string(&new.issue).unwrap_or_default();
        let context = serde_json::to_string(&new.context).unwrap_or_default();
        let requires = serde_json::to_string(&new.requires).unwrap_or_default();
        let created = serde_json::json!({"issue": new.issue.id, "action": new.action.name(), "repo": new.repo}).to_string();
        // An id is the second and 16 random bits: runs created in the same
        // second (a backlog queued at once) may draw the same one, and then
        // draw again.
        let id = self.write(|c| loop {
            // Drawn from the clock each time: a full second passes.
            let id = RunId::new_at(now_ms());
            let inserted = c.exec(
                "INSERT INTO runs (id, issue, repo, action, state, created_ms, updated_ms, context, requires)
                 VALUES (?1, ?2, ?3, ?4, 'queued', ?5, ?5, ?6, ?7) ON CONFLICT (id) DO NOTHING",
                vals![&id, &issue, &new.repo, new.action.name(), now, &context, &requires],
            )?;
            if inserted == 1 {
                return Ok(append_event(c, &id, None, now as i64, "created", &created)?.map(|_| id));
            }
        })?;
        self.get(&id)
    }

    /// The run `id`, or the one run whose id starts with it.
    pub fn get(&self, id: &str) -> Result<Run, StoreError> {
        let rows = self.with(|c| {
            c.rows(
                &format!(
                    "SELECT {RUN_COLUMNS} FROM runs WHERE id = ?1 OR id LIKE ?2 \
                     ORDER BY id = ?1 DESC LIMIT 2"
                ),
                vals![id, format!("{}%", like_escaped(id))],
            )
        })?;
        let mut rows = rows.into_iter();
        match (rows.next(), rows.next()) {
            (None, _) => Err(StoreError::NotFound(id.to_owned())),
            (Some(only), None) => run_of(only),
            (Some(first), Some(_)) => {
                let first = run_of(first)?;
                if first.id == id {
                    Ok(first)
                } else {
                    Err(StoreError::Ambiguous(id.to_owned()))
                }
            }
        }
    }

    /// The newest runs first, at most `limit`.
    pub fn list(&self, limit: usize) -> Result<Vec<Run>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = self.with(|c| {
            c.rows(
                &format!(
                    "SELECT {RUN_COLUMNS} FROM runs ORDER BY created_ms DESC, id DESC LIMIT ?1"
                ),
                vals![limit],
            )
        })?;
        Ok(runs_of(rows))
    }

    /// Every run, newest first.
    pub fn all(&self) -> Result<Vec<Run>, StoreError> {
        self.list(usize::MAX >> 1)
    }

    /// The runs no process works on that have not ended (their process
    /// died or its lease ran out, or none took them up), oldest first:
    /// what `forq runs resume --interrupted` continues.
    pub fn interrupted(&self) -> Result<Vec<Run>, StoreError> {
        let mut runs = self.all()?;
        runs.retain(|r| !r.state.is_terminal() && !r.is_live());
        runs.reverse();
        Ok(runs)
    }

    /// Moves run `id` to `to` (with `reason` for terminal states), and
    /// records the change as an event. A run that is over stays over,
    /// except that a run with a patch becomes `pr_opened`, and a run paused
    /// for review goes on (approved) or is aborted (rejected).
    pub fn transition(&self, id: &str, to: State, reason: &str) -> Result<Run, StoreError> {
        self.end(id, to, reason, None)
    }

    /// Like [`Store::transition`], recording `failure` as the class of why
    /// the run stopped short (kept with the run and in the state event).
    pub fn end(
        &self,
        id: &str,
        to: State,
        reason: &str,
        failure: Option<FailureKind>,
    ) -> Result<Run, StoreError> {
        let run = self.get(id)?;
        let now = now_ms() as i64;
        let fence = self.fence(&run.id);
        let kind = failure.map(FailureKind::name);
        self.write(|c| {
            // Read inside the transaction (the row locked): another
            // process may have moved the run since `get`.
            let Some(from) = c
                .value(
                    "UPDATE runs SET updated_ms = updated_ms WHERE id = ?1 RETURNING state",
                    vals![&run.id],
                )?
                .into_text()
            else {
                return Ok(Err(StoreError::NotFound(run.id.to_string())));
            };
            let from = State::from_name(&from).unwrap_or(run.state);
            let allowed = !from.is_terminal()
                || (from.has_patch() && to == State::PrOpened)
                || (from == State::NeedsReview && (!to.is_terminal() || to == State::Aborted));
            if !allowed {
                return Ok(Err(StoreError::Over {
                    id: run.id.to_string(),
                    state: from,
                }));
            }
            let mut event =
                serde_json::json!({"from": from.name(), "to": to.name(), "reason": reason});
            if let Some(kind) = kind {
                event["failure"] = kind.into();
            }
            if let Err(e) = append_event(c, &run.id, fence, now, "state", &event.to_string())? {
                return Ok(Err(e));
            }
            c.exec(
                "UPDATE runs SET state = ?2, reason = ?3, updated_ms = ?4, failure = ?5 WHERE id = ?1",
                vals![&run.id, to.name(), reason, now, kind],
            )?;
            Ok(Ok(()))
        })?;
        self.get(&run.id)
    }

    /// Appends an event to run `id`'s log.
    pub fn event(&self, id: &str, kind: &str, data: Value) -> Result<u64, StoreError> {
        let now = now_ms() as i64;
        let data = data.to_string();
        let fence = self.fence(id);
        if self.db.dialect == db::Dialect::Postgres {
            // The most frequent write, in one statement (one round trip,
            // its own transaction): the same three steps as
            // `append_event`, in the same order.
            let seq = self.with(|c| {
                c.value(
                    "WITH r AS (UPDATE runs SET last_seq = last_seq + 1
                                WHERE id = ?1 AND (fence = ?2 OR ?2 IS NULL) RETURNING last_seq),
                          m AS (UPDATE meta SET value = value + 1
                                WHERE name = 'event_id' AND EXISTS (SELECT 1 FROM r) RETURNING value)
                     INSERT INTO events (id, run_id, seq, at_ms, kind, data, fence)
                     SELECT m.value, CAST(?1 AS TEXT), r.last_seq, CAST(?3 AS BIGINT),
                            CAST(?4 AS TEXT), CAST(?5 AS TEXT), CAST(?2 AS BIGINT)
                     FROM r, m RETURNING seq",
                    vals![id, fence, now, kind, &data],
                )
            })?;
            return match seq.int() {
                Some(seq) => Ok(seq as u64),
                None => Err(self.with(|c| missing(c, id))?),
            };
        }
        self.write(|c| append_event(c, id, fence, now, kind, &data))
    }

    /// Run `id`'s events after `after` (0 for all), in order.
    pub fn events(&self, id: &str, after: u64) -> Result<Vec<RunEvent>, StoreError> {
        let rows = self.with(|c| {
            c.rows(
                "SELECT id, seq, at_ms, kind, data, fence FROM events WHERE run_id = ?1 AND seq > ?2 ORDER BY seq",
                vals![id, after],
            )
        })?;
        Ok(rows.into_iter().map(event_of).collect())
    }

    /// Events with a store-wide id above `after_id`, of run `run` or of
    /// every run, oldest first, at most `limit`, each with its run's id:
    /// what a live stream resumes from (events written by other processes
    /// and machines included).
    pub fn events_after(
        &self,
        run: Option<&str>,
        after_id: u64,
        limit: usize,
    ) -> Result<Vec<(String, RunEvent)>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = self.with(|c| match run {
            Some(run) => c.rows(
                "SELECT id, seq, at_ms, kind, data, fence, run_id FROM events \
                 WHERE id > ?1 AND run_id = ?2 ORDER BY id LIMIT ?3",
                vals![after_id, run, limit],
            ),
            None => c.rows(
                "SELECT id, seq, at_ms, kind, data, fence, run_id FROM events \
                 WHERE id > ?1 ORDER BY id LIMIT ?2",
                vals![after_id, limit],
            ),
        })?;
        Ok(rows
            .into_iter()
            .map(|mut r| {
                let run = r.pop().and_then(Val::into_text).unwrap_or_default();
                (run, event_of(r))
            })
            .collect())
    }

    /// The newest event's store-wide id (0 for none): a stream that starts
    /// after it misses nothing written since.
    pub fn last_event_id(&self) -> Result<u64, StoreError> {
        self.with(|c| {
            Ok(c.value("SELECT COALESCE(MAX(id), 0) FROM events", &[])?
                .int()
                .unwrap_or(0) as u64)
        })
    }

    /// Records webhook delivery `id`; `true` the first time, `false` for a
    /// redelivery (so it is acted on once, across restarts, processes and
    /// machines).
    pub fn first_delivery(&self, id: &str) -> Result<bool, StoreError> {
        let now = now_ms() as i64;
        self.with(|c| {
            Ok(c.exec(
                "INSERT INTO deliveries (id, at_ms) VALUES (?1, ?2) ON CONFLICT (id) DO NOTHING",
                vals![id, now],
            )? == 1)
        })
    }

    /// Records that run `id` finished `phase`, with what later phases need
    /// (replacing an earlier record of the same phase).
    pub fn checkpoint(&self, id: &str, phase: &str, data: &Value) -> Result<(), StoreError> {
        let now = now_ms() as i64;
        let fence = self.fence(id);
        let event = serde_json::json!({"phase": phase}).to_string();
        let data = data.to_string();
        self.write(|c| {
            // The event first: it checks the writer's fence.
            if let Err(e) = append_event(c, id, fence, now, "checkpoint", &event)? {
                return Ok(Err(e));
            }
            c.exec(
                "INSERT INTO checkpoints (run_id, phase, at_ms, data) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (run_id, phase) DO UPDATE SET at_ms = excluded.at_ms, data = excluded.data",
                vals![id, phase, now, &data],
            )?;
            Ok(Ok(()))
        })
    }

    /// What run `id` recorded when it finished `phase`, if it did.
    pub fn checkpointed(&self, id: &str, phase: &str) -> Result<Option<Value>, StoreError> {
        let data = self.with(|c| {
            c.value(
                "SELECT data FROM checkpoints WHERE run_id = ?1 AND phase = ?2",
                vals![id, phase],
            )
        })?;
        Ok(data
            .into_text()
            .map(|d| serde_json::from_str(&d).unwrap_or(Value::Null)))
    }

    /// Asks run `id` to stop; a run that no process works on is aborted
    /// here and now.
    pub fn request_abort(&self, id: &str) -> Result<Run, StoreError> {
        let run = self.get(id)?;
        if run.state.is_terminal() {
            return Err(StoreError::Over {
                id: run.id.to_string(),
                state: run.state,
            });
        }
        self.with(|c| {
            c.exec(
                "UPDATE runs SET abort_requested = 1 WHERE id = ?1",
                vals![&run.id],
            )
        })?;
        if run.is_live() && !self.holds(&run) {
            return self.get(&run.id);
        }
        self.transition(&run.id, State::Aborted, "aborted by request")
    }

    /// Records an outcome's figures on run `id`.
    pub fn record(
        &self,
        id: &str,
        cost_usd: Option<f64>,
        patch_lines: Option<usize>,
        branch: Option<&str>,
    ) -> Result<(), StoreError> {
        let fence = self.fence(id);
        let changed = self.with(|c| {
            c.exec(
                "UPDATE runs SET cost_usd = COALESCE(?2, cost_usd),
                    patch_lines = COALESCE(?3, patch_lines), branch = COALESCE(?4, branch),
                    updated_ms = ?5 WHERE id = ?1 AND (fence = ?6 OR ?6 IS NULL)",
                vals![
                    id,
                    cost_usd,
                    patch_lines.map(|l| l as u64),
                    branch,
                    now_ms(),
                    fence
                ],
            )
        })?;
        if changed == 0 {
            return Err(self.with(|c| missing(c, id))?);
        }
        Ok(())
    }

    /// Keeps `data` as run `id`'s artifact `name` (its patch, tree,
    /// transcript, log), replacing an earlier one: reachable from every
    /// machine the store is, whichever machine ran the run.
    pub fn put_artifact(&self, id: &str, name: &str, data: &[u8]) -> Result<(), StoreError> {
        let now = now_ms() as i64;
        let fence = self.fence(id);
        self.write(|c| {
            if c
                .row(
                    "SELECT 1 FROM runs WHERE id = ?1 AND (fence = ?2 OR ?2 IS NULL)",
                    vals![id, fence],
                )?
                .is_none()
            {
                return Ok(Err(missing(c, id)?));
            }
            c.exec(
                "INSERT INTO artifacts (run_id, name, at_ms, data) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (run_id, name) DO UPDATE SET at_ms = excluded.at_ms, data = excluded.data",
                vals![id, name, now, data.to_vec()],
            )?;
            Ok(Ok(()))
        })
    }

    /// Run `id`'s artifact `name`, if it has one.
    pub fn artifact(&self, id: &str, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let data = self.with(|c| {
            c.value(
                "SELECT data FROM artifacts WHERE run_id = ?1 AND name = ?2",
                vals![id, name],
            )
        })?;
        Ok(data.into_blob())
    }

    /// The names of run `id`'s artifacts.
    pub fn artifacts(&self, id: &str) -> Result<Vec<String>, StoreError> {
        let rows = self.with(|c| {
            c.rows(
                "SELECT name FROM artifacts WHERE run_id = ?1 ORDER BY name",
                vals![id],
            )
        })?;
        Ok(rows
            .into_iter()
            .filter_map(|r| r.into_iter().next().and_then(Val::into_text))
            .collect())
    }
}

/// A new, empty database on the PostgreSQL server `admin` connects to
/// (as a user who may create databases), and its URL: for tests and
/// benches that each want a store of their own.
#[cfg(feature = "postgres")]
pub fn fresh_postgres(admin: &str) -> Result<String, StoreError> {
    let err = |source: DbError| StoreError::Database {
        store: postgres::redacted(admin),
        source,
    };
    let name = format!("forq_{:016x}", fastrand::u64(..));
    let mut conn = postgres::Postgres::connect(admin).map_err(err)?;
    conn.batch(&format!("CREATE DATABASE {name}"))
        .map_err(err)?;
    let (head, query) = match admin.split_once('?') {
        Some((h, q)) => (h, format!("?{q}")),
        None => (admin, String::new()),
    };
    let scheme_end = head.find("://").map_or(0, |i| i + 3);
    let base = match head[scheme_end..].find('/') {
        Some(i) => &head[..scheme_end + i],
        None => head,
    };
    Ok(format!("{base}/{name}{query}"))
}

/// Wraps a refusal found inside a transaction, so the transaction rolls
/// back and the refusal comes out as itself.
#[derive(Debug)]
struct Refused(StoreError);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Refused {}

/// `s` with LIKE's wildcards taken literally (ids never hold them, but a
/// prefix typed by a person might).
fn like_escaped(s: &str) -> String {
    s.replace(['%', '_'], "")
}

fn run_of(r: Vec<Val>) -> Result<Run, StoreError> {
    let mut r = r.into_iter();
    let mut next = || r.next().unwrap_or(Val::Null);
    let raw_id = next().into_text().unwrap_or_default();
    // Every column is a stranger's until parsed: a worker on another
    // machine may have written it. A row that does not parse is refused
    // whole, never read with defaults.
    let malformed = |what: String| StoreError::Malformed {
        id: raw_id.chars().take(80).collect(),
        what,
    };
    let id = RunId::parse(&raw_id).map_err(|e| malformed(e.to_string()))?;
    let issue = next();
    let issue: IssueRecord = match issue.text() {
        Some(i) => serde_json::from_str(i).map_err(|e| malformed(format!("its issue: {e}")))?,
        None => return Err(malformed("it has no issue".to_owned())),
    };
    let repo = next().into_text().unwrap_or_default();
    let action = match next().text() {
        Some("triage") => Action::Triage,
        Some("auto") => Action::Auto,
        Some("fix") => Action::Fix,
        other => return Err(malformed(format!("its action {other:?} is none of forq's"))),
    };
    let state = next();
    let state = state
        .text()
        .and_then(State::from_name)
        .ok_or_else(|| malformed(format!("its state {:?} is none of forq's", state.text())))?;
    let reason = next().into_text().unwrap_or_default();
    let created_ms = next().int().unwrap_or(0) as u64;
    let updated_ms = next().int().unwrap_or(0) as u64;
    let pid = next().int().and_then(|p| u32::try_from(p).ok());
    let cost_usd = next().real().unwrap_or(0.0);
    let patch_lines = next().int().and_then(|l| usize::try_from(l).ok());
    let branch = match next().into_text() {
        Some(b) => Some(BranchName::parse(&b).map_err(|e| malformed(e.to_string()))?),
        None => None,
    };
    let abort_requested = next().int().unwrap_or(0) != 0;
    let started_ms = next().int().map(|t| t as u64);
    let context: Vec<ContextFile> = match next().text() {
        Some(c) => serde_json::from_str(c).map_err(|e| malformed(format!("its context: {e}")))?,
        None => Vec::new(),
    };
    Ok(Run {
        id,
        issue,
        repo,
        action,
        state,
        reason,
        created_ms,
        updated_ms,
        pid,
        cost_usd,
        patch_lines,
        branch,
        abort_requested,
        started_ms,
        context,
        failure: next().text().and_then(FailureKind::from_name),
        worker: next().into_text(),
        host: next().into_text(),
        lease_until_ms: next().int().map(|t| t as u64),
        fence: next().int().unwrap_or(0) as u64,
        requires: next()
            .text()
            .and_then(|r| serde_json::from_str(r).ok())
            .unwrap_or_default(),
        boot: next().into_text(),
    })
}

/// The runs of `rows` that parse; a row that does not is left out, and
/// said in the log (one stranger's row does not hide every other run).
fn runs_of(rows: Vec<Vec<Val>>) -> Vec<Run> {
    rows.into_iter()
        .filter_map(|r| match run_of(r) {
            Ok(run) => Some(run),
            Err(e) => {
                tracing::warn!("{e}");
                None
            }
        })
        .collect()
}

fn event_of(r: Vec<Val>) -> RunEvent {
    let mut r = r.into_iter();
    let mut next = || r.next().unwrap_or(Val::Null);
    RunEvent {
        id: next().int().unwrap_or(0) as u64,
        seq: next().int().unwrap_or(0) as u64,
        at_ms: next().int().unwrap_or(0) as u64,
        kind: next().into_text().unwrap_or_default(),
        data: next()
            .text()
            .and_then(|d| serde_json::from_str(d).ok())
            .unwrap_or(Value::Null),
        fence: next().int().map(|f| f as u64),
    }
}

#[cfg(test)]
mod tests;
