//! The run store: every run, its events (state changes, search nodes,
//! agent steps, notes) and its checkpoints, in one SQLite database
//! (`.forq/forq.db`, WAL, so `forq runs tail` reads while a run writes).
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

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{params, Connection, OptionalExtension};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::failure::FailureKind;

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
    pub body: String,
    /// Where it was read.
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
        }
    }
}

/// A run as stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Run {
    /// Its id.
    pub id: String,
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
    pub branch: Option<String>,
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
}

/// A file given to a run as context: read from `source` on the host,
/// written to `dest` inside the workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextFile {
    /// Where it is read.
    pub source: String,
    /// Where it goes, relative to the workspace.
    pub dest: String,
}

impl Run {
    /// Whether a process is working on it now: not over, and its recorded
    /// process is alive.
    pub fn is_live(&self) -> bool {
        !self.state.is_terminal() && self.pid.is_some_and(process_alive)
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
}

/// Why the store failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// SQLite failed.
    #[error("the run store {path}: {source}")]
    Sqlite {
        /// The database.
        path: PathBuf,
        /// SQLite's error (boxed: the binding's types are not part of
        /// this crate's API).
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
        "the run store {path} has schema version {found}, newer than the {supported} this forq \
         reads; upgrade forq (the store is left as it is)"
    )]
    TooNew {
        /// The database.
        path: PathBuf,
        /// Its schema version.
        found: i64,
        /// The newest this build reads.
        supported: i64,
    },
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
    path: PathBuf,
    conn: Mutex<Connection>,
}

/// The schema this build writes; `PRAGMA user_version` holds a store's.
pub const SCHEMA_VERSION: i64 = 3;

/// The runs table of schema 1, and the columns a store made before schema
/// versions existed may lack (added by the first migration).
const RUNS_V1: &str = "
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    issue TEXT NOT NULL,
    repo TEXT NOT NULL,
    action TEXT NOT NULL,
    state TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    created_ms INTEGER NOT NULL,
    updated_ms INTEGER NOT NULL,
    pid INTEGER,
    cost_usd REAL NOT NULL DEFAULT 0,
    patch_lines INTEGER,
    branch TEXT,
    abort_requested INTEGER NOT NULL DEFAULT 0,
    started_ms INTEGER,
    context TEXT NOT NULL DEFAULT '[]'
);
CREATE TABLE IF NOT EXISTS events (
    run_id TEXT NOT NULL REFERENCES runs(id),
    seq INTEGER NOT NULL,
    at_ms INTEGER NOT NULL,
    kind TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE IF NOT EXISTS deliveries (
    id TEXT PRIMARY KEY,
    at_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS checkpoints (
    run_id TEXT NOT NULL REFERENCES runs(id),
    phase TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (run_id, phase)
);
";

const RUNS_LATE_COLUMNS: &[(&str, &str)] = &[
    ("cost_usd", "REAL NOT NULL DEFAULT 0"),
    ("patch_lines", "INTEGER"),
    ("branch", "TEXT"),
    ("abort_requested", "INTEGER NOT NULL DEFAULT 0"),
    ("started_ms", "INTEGER"),
    ("context", "TEXT NOT NULL DEFAULT '[]'"),
];

/// Schema 2: every event gets an id in the whole store (a table rebuild,
/// since SQLite cannot change a primary key in place).
const EVENTS_V2: &str = "
CREATE TABLE events_v2 (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL REFERENCES runs(id),
    seq INTEGER NOT NULL,
    at_ms INTEGER NOT NULL,
    kind TEXT NOT NULL,
    data TEXT NOT NULL,
    UNIQUE (run_id, seq)
);
INSERT INTO events_v2 (run_id, seq, at_ms, kind, data)
    SELECT run_id, seq, at_ms, kind, data FROM events ORDER BY at_ms, run_id, seq;
DROP TABLE events;
ALTER TABLE events_v2 RENAME TO events;
";

/// Brings the store from schema `from` to `from + 1`.
fn migrate(c: &Connection, from: i64) -> Result<(), rusqlite::Error> {
    match from {
        0 => {
            c.execute_batch(RUNS_V1)?;
            let have: Vec<String> = c
                .prepare("SELECT name FROM pragma_table_info('runs')")?
                .query_map([], |r| r.get(0))?
                .collect::<Result<_, _>>()?;
            for (column, decl) in RUNS_LATE_COLUMNS {
                if !have.iter().any(|h| h == column) {
                    c.execute_batch(&format!("ALTER TABLE runs ADD COLUMN {column} {decl}"))?;
                }
            }
            Ok(())
        }
        1 => c.execute_batch(EVENTS_V2),
        // Schema 3: why a run stopped short, as a class.
        2 => c.execute_batch("ALTER TABLE runs ADD COLUMN failure TEXT"),
        _ => Ok(()),
    }
}

/// Appends one event inside the caller's transaction; returns its `seq`.
fn append_event(
    c: &Connection,
    id: &str,
    now: i64,
    kind: &str,
    data: &str,
) -> Result<u64, rusqlite::Error> {
    let seq: i64 = c.query_row(
        "SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE run_id = ?1",
        params![id],
        |r| r.get(0),
    )?;
    c.execute(
        "INSERT INTO events (run_id, seq, at_ms, kind, data) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![id, seq, now, kind, data],
    )?;
    Ok(seq as u64)
}

/// Milliseconds since the epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl Store {
    /// Opens (creating) the database at `path`.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let err = |source: rusqlite::Error| StoreError::Sqlite {
            path: path.to_owned(),
            source: Box::new(source),
        };
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        // Never through a link: a run store opened through a name someone
        // else could plant would be theirs to read and change.
        let flags = rusqlite::OpenFlags::default() | rusqlite::OpenFlags::SQLITE_OPEN_NOFOLLOW;
        let conn = Connection::open_with_flags(path, flags).map_err(err)?;
        conn.busy_timeout(Duration::from_secs(10)).map_err(err)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(err)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(err)?;
        let found: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(err)?;
        if found > SCHEMA_VERSION {
            return Err(StoreError::TooNew {
                path: path.to_owned(),
                found,
                supported: SCHEMA_VERSION,
            });
        }
        for from in found..SCHEMA_VERSION {
            // Each step and its version number in one transaction: a store
            // is at one version or the next, never between.
            let tx = rusqlite::Transaction::new_unchecked(
                &conn,
                rusqlite::TransactionBehavior::Immediate,
            )
            .map_err(err)?;
            let now: i64 = tx
                .pragma_query_value(None, "user_version", |r| r.get(0))
                .map_err(err)?;
            if now == from {
                migrate(&tx, from).map_err(err)?;
                tx.pragma_update(None, "user_version", from + 1)
                    .map_err(err)?;
            }
            tx.commit().map_err(err)?;
        }
        Ok(Store {
            path: path.to_owned(),
            conn: Mutex::new(conn),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn with<T>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, rusqlite::Error>,
    ) -> Result<T, StoreError> {
        let conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        f(&conn).map_err(|source| StoreError::Sqlite {
            path: self.path.clone(),
            source: Box::new(source),
        })
    }

    /// Records a new run, `queued`.
    pub fn create(&self, new: &NewRun) -> Result<Run, StoreError> {
        let now = now_ms();
        let issue = serde_json::to_string(&new.issue).unwrap_or_default();
        let context = serde_json::to_string(&new.context).unwrap_or_default();
        // An id is the second and 16 random bits: runs created in the same
        // second (a backlog queued at once) may draw the same one, and then
        // draw again.
        let id = self.with(|c| loop {
            // Drawn from the clock each time: a full second passes.
            let id = new_id(now_ms());
            let inserted = c.execute(
                "INSERT OR IGNORE INTO runs (id, issue, repo, action, state, created_ms, updated_ms, context)
                 VALUES (?1, ?2, ?3, ?4, 'queued', ?5, ?5, ?6)",
                params![id, issue, new.repo, new.action.name(), now as i64, context],
            )?;
            if inserted == 1 {
                return Ok(id);
            }
        })?;
        self.event(
            &id,
            "created",
            serde_json::json!({"issue": new.issue.id, "action": new.action.name(), "repo": new.repo}),
        )?;
        self.get(&id)
    }

    /// The run `id`, or the one run whose id starts with it.
    pub fn get(&self, id: &str) -> Result<Run, StoreError> {
        let rows = self.with(|c| {
            let mut q = c.prepare(
                "SELECT id, issue, repo, action, state, reason, created_ms, updated_ms, pid,
                        cost_usd, patch_lines, branch, abort_requested, started_ms, context,
                        failure
                 FROM runs WHERE id = ?1 OR id LIKE ?2 ORDER BY id = ?1 DESC LIMIT 2",
            )?;
            let rows = q
                .query_map(params![id, format!("{id}%")], row)?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(rows)
        })?;
        match rows.as_slice() {
            [] => Err(StoreError::NotFound(id.to_owned())),
            [one, ..] if one.id == id => Ok(one.clone()),
            [one] => Ok(one.clone()),
            _ => Err(StoreError::Ambiguous(id.to_owned())),
        }
    }

    /// The newest runs first, at most `limit`.
    pub fn list(&self, limit: usize) -> Result<Vec<Run>, StoreError> {
        self.with(|c| {
            let mut q = c.prepare(
                "SELECT id, issue, repo, action, state, reason, created_ms, updated_ms, pid,
                        cost_usd, patch_lines, branch, abort_requested, started_ms, context,
                        failure
                 FROM runs ORDER BY created_ms DESC, id DESC LIMIT ?1",
            )?;
            let rows = q
                .query_map(params![limit as i64], row)?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(rows)
        })
    }

    /// Every run, newest first.
    pub fn all(&self) -> Result<Vec<Run>, StoreError> {
        self.list(usize::MAX >> 1)
    }

    /// The runs no process works on that have not ended (their process
    /// died, or never took them up), oldest first: what `forq runs resume
    /// --interrupted` continues.
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
        let moved = self.write(|c| {
            // Read inside the transaction: another process may have moved
            // the run since `get`.
            let from: String = c.query_row(
                "SELECT state FROM runs WHERE id = ?1",
                params![run.id],
                |r| r.get(0),
            )?;
            let from = State::from_name(&from).unwrap_or(run.state);
            let allowed = !from.is_terminal()
                || (from.has_patch() && to == State::PrOpened)
                || (from == State::NeedsReview && (!to.is_terminal() || to == State::Aborted));
            if !allowed {
                return Ok(Err(from));
            }
            let kind = failure.map(FailureKind::name);
            c.execute(
                "UPDATE runs SET state = ?2, reason = ?3, updated_ms = ?4, failure = ?5 WHERE id = ?1",
                params![run.id, to.name(), reason, now, kind],
            )?;
            let mut event =
                serde_json::json!({"from": from.name(), "to": to.name(), "reason": reason});
            if let Some(kind) = kind {
                event["failure"] = kind.into();
            }
            append_event(c, &run.id, now, "state", &event.to_string())?;
            Ok(Ok(()))
        })?;
        if let Err(state) = moved {
            return Err(StoreError::Over { id: run.id, state });
        }
        self.get(&run.id)
    }

    /// Runs `f` in one `IMMEDIATE` transaction: the write lock is taken at
    /// its start, so what it reads stays true until it commits, across
    /// processes (they wait for each other, up to the busy timeout).
    fn write<T>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, rusqlite::Error>,
    ) -> Result<T, StoreError> {
        self.with(|c| {
            let tx =
                rusqlite::Transaction::new_unchecked(c, rusqlite::TransactionBehavior::Immediate)?;
            let out = f(&tx)?;
            tx.commit()?;
            Ok(out)
        })
    }

    /// Appends an event to run `id`'s log.
    pub fn event(&self, id: &str, kind: &str, data: Value) -> Result<u64, StoreError> {
        let now = now_ms() as i64;
        let data = data.to_string();
        self.write(|c| append_event(c, id, now, kind, &data))
    }

    /// Run `id`'s events after `after` (0 for all), in order.
    pub fn events(&self, id: &str, after: u64) -> Result<Vec<RunEvent>, StoreError> {
        self.with(|c| {
            let mut q = c.prepare(
                "SELECT id, seq, at_ms, kind, data FROM events WHERE run_id = ?1 AND seq > ?2 ORDER BY seq",
            )?;
            let rows = q
                .query_map(params![id, after as i64], |r| {
                    let data: String = r.get(4)?;
                    Ok(RunEvent {
                        id: r.get::<_, i64>(0)? as u64,
                        seq: r.get::<_, i64>(1)? as u64,
                        at_ms: r.get::<_, i64>(2)? as u64,
                        kind: r.get(3)?,
                        data: serde_json::from_str(&data).unwrap_or(Value::Null),
                    })
                })?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(rows)
        })
    }

    /// Events with a store-wide id above `after_id`, of run `run` or of
    /// every run, oldest first, at most `limit`, each with its run's id:
    /// what a live stream resumes from (events written by other processes
    /// included).
    pub fn events_after(
        &self,
        run: Option<&str>,
        after_id: u64,
        limit: usize,
    ) -> Result<Vec<(String, RunEvent)>, StoreError> {
        self.with(|c| {
            let mut q = c.prepare(
                "SELECT run_id, id, seq, at_ms, kind, data FROM events \
                 WHERE id > ?1 AND (?2 IS NULL OR run_id = ?2) ORDER BY id LIMIT ?3",
            )?;
            let rows = q
                .query_map(params![after_id as i64, run, limit as i64], |r| {
                    let data: String = r.get(5)?;
                    Ok((
                        r.get::<_, String>(0)?,
                        RunEvent {
                            id: r.get::<_, i64>(1)? as u64,
                            seq: r.get::<_, i64>(2)? as u64,
                            at_ms: r.get::<_, i64>(3)? as u64,
                            kind: r.get(4)?,
                            data: serde_json::from_str(&data).unwrap_or(Value::Null),
                        },
                    ))
                })?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(rows)
        })
    }

    /// The newest event's store-wide id (0 for none): a stream that starts
    /// after it misses nothing written since.
    pub fn last_event_id(&self) -> Result<u64, StoreError> {
        self.with(|c| {
            Ok(
                c.query_row("SELECT COALESCE(MAX(id), 0) FROM events", [], |r| {
                    r.get::<_, i64>(0)
                })? as u64,
            )
        })
    }

    /// Records webhook delivery `id`; `true` the first time, `false` for a
    /// redelivery (so it is acted on once, across restarts and processes).
    pub fn first_delivery(&self, id: &str) -> Result<bool, StoreError> {
        let now = now_ms() as i64;
        self.write(|c| {
            Ok(c.execute(
                "INSERT OR IGNORE INTO deliveries (id, at_ms) VALUES (?1, ?2)",
                params![id, now],
            )? == 1)
        })
    }

    /// Records that run `id` finished `phase`, with what later phases need
    /// (replacing an earlier record of the same phase).
    pub fn checkpoint(&self, id: &str, phase: &str, data: &Value) -> Result<(), StoreError> {
        let now = now_ms() as i64;
        self.with(|c| {
            c.execute(
                "INSERT OR REPLACE INTO checkpoints (run_id, phase, at_ms, data) VALUES (?1, ?2, ?3, ?4)",
                params![id, phase, now, data.to_string()],
            )
        })?;
        self.event(id, "checkpoint", serde_json::json!({"phase": phase}))?;
        Ok(())
    }

    /// What run `id` recorded when it finished `phase`, if it did.
    pub fn checkpointed(&self, id: &str, phase: &str) -> Result<Option<Value>, StoreError> {
        self.with(|c| {
            c.query_row(
                "SELECT data FROM checkpoints WHERE run_id = ?1 AND phase = ?2",
                params![id, phase],
                |r| r.get::<_, String>(0),
            )
            .optional()
        })
        .map(|d| d.map(|d| serde_json::from_str(&d).unwrap_or(Value::Null)))
    }

    /// Claims run `id` for process `pid`, if its owner is still `was` (the
    /// owner read before deciding to take it up): false when another
    /// process claimed it in between, so two resumes never both run it.
    pub fn claim(&self, id: &str, was: Option<u32>, pid: u32) -> Result<bool, StoreError> {
        self.with(|c| {
            c.execute(
                "UPDATE runs SET pid = ?2, updated_ms = ?3, started_ms = COALESCE(started_ms, ?3)
                    WHERE id = ?1 AND pid IS ?4",
                params![id, pid, now_ms() as i64, was],
            )
        })
        .map(|changed| changed == 1)
    }

    /// Asks run `id` to stop; a run that no process works on is aborted
    /// here and now.
    pub fn request_abort(&self, id: &str) -> Result<Run, StoreError> {
        let run = self.get(id)?;
        if run.state.is_terminal() {
            return Err(StoreError::Over {
                id: run.id,
                state: run.state,
            });
        }
        self.with(|c| {
            c.execute(
                "UPDATE runs SET abort_requested = 1 WHERE id = ?1",
                params![run.id],
            )
        })?;
        if run.is_live() && run.pid != Some(std::process::id()) {
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
        self.with(|c| {
            c.execute(
                "UPDATE runs SET cost_usd = COALESCE(?2, cost_usd),
                    patch_lines = COALESCE(?3, patch_lines), branch = COALESCE(?4, branch),
                    updated_ms = ?5 WHERE id = ?1",
                params![
                    id,
                    cost_usd,
                    patch_lines.map(|l| l as i64),
                    branch,
                    now_ms() as i64
                ],
            )
        })
        .map(drop)
    }
}

fn row(r: &rusqlite::Row<'_>) -> Result<Run, rusqlite::Error> {
    let issue: String = r.get(1)?;
    let action: String = r.get(3)?;
    let state: String = r.get(4)?;
    Ok(Run {
        id: r.get(0)?,
        issue: serde_json::from_str(&issue).unwrap_or_default(),
        repo: r.get(2)?,
        action: match action.as_str() {
            "triage" => Action::Triage,
            "auto" => Action::Auto,
            _ => Action::Fix,
        },
        state: State::from_name(&state).unwrap_or(State::Failed),
        reason: r.get(5)?,
        created_ms: r.get::<_, i64>(6)? as u64,
        updated_ms: r.get::<_, i64>(7)? as u64,
        pid: r.get::<_, Option<i64>>(8)?.map(|p| p as u32),
        cost_usd: r.get(9)?,
        patch_lines: r.get::<_, Option<i64>>(10)?.map(|l| l as usize),
        branch: r.get(11)?,
        abort_requested: r.get::<_, i64>(12)? != 0,
        started_ms: r.get::<_, Option<i64>>(13)?.map(|t| t as u64),
        context: serde_json::from_str(&r.get::<_, String>(14)?).unwrap_or_default(),
        failure: r
            .get::<_, Option<String>>(15)?
            .as_deref()
            .and_then(FailureKind::from_name),
    })
}

/// A run id: the creation time (sortable, readable) and four random hex
/// digits, such as `20261201-174512-3fa9`.
fn new_id(now_ms: u64) -> String {
    let at = i64::try_from(now_ms)
        .ok()
        .and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok())
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    format!("{}-{:04x}", at.strftime("%Y%m%d-%H%M%S"), fastrand::u16(..))
}

#[cfg(test)]
mod tests;
