//! Who drives a run: leases, fences, and the workers that take runs up.
//!
//! A process takes a run up ([`Store::acquire`], or a worker's
//! [`Store::claim_next`]) in one transaction that reads the run's holder
//! and, when no live holder has it, records itself, a lease (until when)
//! and the next fence. While it drives the run it renews the lease; a
//! holder on another machine counts as gone once its lease runs out, one
//! on this machine as soon as its process is. Every write of the holder
//! names its fence, so a holder that lost the run writes nothing more.

use std::sync::OnceLock;
use std::time::Duration;

use serde::Serialize;

use super::db::{vals, Dialect, Sql, Val};
use super::{append_event, now_ms, run_of, runs_of, Run, State, Store, StoreError, RUN_COLUMNS};

/// A process that drives runs: its name (a worker's, else `HOST/PID`),
/// its machine and its process id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Holder {
    /// The name runs record.
    pub worker: String,
    /// The machine.
    pub host: String,
    /// The process.
    pub pid: u32,
    /// The machine's boot (`/proc/sys/kernel/random/boot_id`): what tells
    /// it from another machine of the same name.
    pub boot: String,
}

impl Holder {
    /// This process, named `HOST/PID`.
    pub fn this_process() -> Holder {
        let host = this_host().to_owned();
        let pid = std::process::id();
        Holder {
            worker: format!("{host}/{pid}"),
            host,
            pid,
            boot: this_boot().to_owned(),
        }
    }

    /// This process, named `name` (a worker's name).
    pub fn named(name: &str) -> Holder {
        Holder {
            worker: name.to_owned(),
            ..Holder::this_process()
        }
    }

    /// Whether `run` records this holder as its own.
    pub fn holds(&self, run: &Run) -> bool {
        run.worker.as_deref() == Some(self.worker.as_str())
            && run.host.as_deref() == Some(self.host.as_str())
            && run.pid == Some(self.pid)
            && run.boot.as_deref().is_none_or(|b| b == self.boot)
    }
}

/// This machine's name, as runs record it (a pod's name under
/// Kubernetes: each is its own machine here).
pub(crate) fn this_host() -> &'static str {
    static HOST: OnceLock<String> = OnceLock::new();
    HOST.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .or_else(|_| std::fs::read_to_string("/etc/hostname"))
            .map(|h| h.trim().to_owned())
            .ok()
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "localhost".to_owned())
    })
}

/// This machine's boot: a random id the kernel draws at each boot, the
/// same for every process until the next (empty where there is none).
pub(crate) fn this_boot() -> &'static str {
    static BOOT: OnceLock<String> = OnceLock::new();
    BOOT.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
            .map(|b| b.trim().to_owned())
            .unwrap_or_default()
    })
}

/// A `forq worker`, as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Worker {
    /// Its name.
    pub id: String,
    /// Its machine.
    pub host: String,
    /// Its process.
    pub pid: u32,
    /// What it offers (backends, architecture).
    pub labels: Vec<String>,
    /// How many runs it drives at once.
    pub jobs: usize,
    /// When it started, milliseconds since the epoch.
    pub started_ms: u64,
    /// Its last heartbeat, milliseconds since the epoch.
    pub heartbeat_ms: u64,
    /// The runs it drove at its last heartbeat.
    pub driving: Vec<String>,
    /// Whether it is stopping (takes nothing new up).
    pub stopping: bool,
}

/// This handle's hold on a run it took up: the fence it writes under, and
/// whether it lost the run since (its lease ran out and another process
/// took it up, or it let go). A lost hold keeps its fence, which the run
/// no longer has: every write under it is refused.
#[derive(Debug, Clone, Copy)]
pub(super) struct Hold {
    pub(super) fence: u64,
    pub(super) lost: bool,
}

const LIVE_STATES: &str = "('queued', 'triaging', 'provisioning', 'implementing', 'testing')";

/// Locks the rows a query reads until the transaction ends, skipping rows
/// another transaction holds (PostgreSQL); SQLite's write lock already
/// holds the whole store.
fn lock_rows(c: &dyn Sql, skip_locked: bool) -> &'static str {
    match (c.dialect(), skip_locked) {
        (Dialect::Sqlite, _) => "",
        (Dialect::Postgres, false) => " FOR UPDATE",
        (Dialect::Postgres, true) => " FOR UPDATE SKIP LOCKED",
    }
}

impl Store {
    /// Whether this handle holds `run` (took it up, and has not let go).
    pub(crate) fn holds(&self, run: &Run) -> bool {
        let hold = self.hold_of(&run.id);
        hold.is_some_and(|h| !h.lost) || (hold.is_none() && self.holder.holds(run))
    }

    fn hold_of(&self, id: &str) -> Option<Hold> {
        self.held
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .copied()
    }

    fn lose(&self, id: &str) {
        if let Some(h) = self
            .held
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_mut(id)
        {
            h.lost = true;
        }
    }

    /// Takes run `id` up for this handle's holder, for `lease` (renewed
    /// with [`Store::renew`]): `Some` with the run as it was before, or
    /// `None` when a live holder has it. A run that is over is refused.
    pub fn acquire(&self, id: &str, lease: Duration) -> Result<Option<Run>, StoreError> {
        let id = self.get(id)?.id;
        let taken = self.write(|c| {
            let sql = format!(
                "SELECT {RUN_COLUMNS} FROM runs WHERE id = ?1{}",
                lock_rows(c, false)
            );
            let Some(row) = c.row(&sql, vals![&id])? else {
                // A worker's role does not see, to lock, a run another
                // role's live lease holds (schema 8): held, not missing.
                let exists = c.row("SELECT 1 FROM runs WHERE id = ?1", vals![&id])?;
                return Ok(match exists {
                    Some(_) => Ok(None),
                    None => Err(StoreError::NotFound(id.to_string())),
                });
            };
            let before = match run_of(row) {
                Ok(run) => run,
                Err(e) => return Ok(Err(e)),
            };
            if before.state.is_terminal() {
                return Ok(Err(StoreError::Over {
                    id: id.to_string(),
                    state: before.state,
                }));
            }
            if before.is_live() && !self.holder.holds(&before) {
                return Ok(Ok(None));
            }
            Ok(Ok(self
                .take(c, &before, lease)?
                .map(|fence| (fence, before))))
        })?;
        Ok(taken.map(|(fence, before)| {
            self.hold(&id, fence);
            before
        }))
    }

    /// Up to `n` runs no live process holds (queued, or left by a holder
    /// that died), oldest first — those on `prefer`'s repositories before
    /// the others — taken up for this handle's holder for `lease`, each as
    /// it was before (its last holder, its state); only runs whose
    /// required labels are all among `labels`. Two workers asking at once
    /// never get the same run.
    pub fn claim_next(
        &self,
        n: usize,
        lease: Duration,
        prefer: &[String],
        labels: &[String],
    ) -> Result<Vec<Run>, StoreError> {
        if n == 0 {
            return Ok(Vec::new());
        }
        let now = now_ms();
        let host = self.holder.host.clone();
        let window = i64::try_from(n * 2 + 64).unwrap_or(i64::MAX);
        let claimed = self.write(|c| {
            // Runs another holder on this machine drives come back too
            // (their lease runs): whether that holder lives is known here.
            let sql = format!(
                "SELECT {RUN_COLUMNS} FROM runs WHERE state IN {LIVE_STATES} AND abort_requested = 0 \
                 AND (lease_until IS NULL OR lease_until < ?1 OR host = ?2) \
                 ORDER BY created_ms, id LIMIT ?3{}",
                lock_rows(c, true)
            );
            let mut free: Vec<Run> = runs_of(c.rows(&sql, vals![now, &host, window])?)
                .into_iter()
                .filter(|r| !r.is_live() && r.requires.iter().all(|l| labels.contains(l)))
                .collect();
            // Stable: oldest first within each side.
            free.sort_by_key(|r| !prefer.contains(&r.repo));
            free.truncate(n);
            let mut taken = Vec::new();
            for run in free {
                if let Some(fence) = self.take(c, &run, lease)? {
                    taken.push((fence, run));
                }
            }
            Ok(Ok(taken))
        })?;
        Ok(claimed
            .into_iter()
            .map(|(fence, run)| {
                self.hold(&run.id, fence);
                run
            })
            .collect())
    }

    /// Records this holder on `run` with the next fence, and says so in
    /// its events; inside the caller's transaction. `None` when the store
    /// refused it: on PostgreSQL a worker's role takes up no run another
    /// role's live lease holds, by the server's clock (schema 8).
    fn take(
        &self,
        c: &mut dyn Sql,
        run: &Run,
        lease: Duration,
    ) -> Result<Option<u64>, super::db::DbError> {
        let now = now_ms();
        let until = now + lease.as_millis() as u64;
        let h = &self.holder;
        let Some(fence) = c
            .rows(
                "UPDATE runs SET worker = ?2, host = ?3, pid = ?4, lease_until = ?5, \
                 fence = fence + 1, updated_ms = ?6, started_ms = COALESCE(started_ms, ?6), \
                 boot = ?7, holder_role = ?8 WHERE id = ?1 RETURNING fence",
                vals![
                    &run.id,
                    &h.worker,
                    &h.host,
                    h.pid,
                    until,
                    now,
                    &h.boot,
                    self.role()
                ],
            )?
            .into_iter()
            .next()
            .and_then(|r| r.into_iter().next())
            .and_then(|v| v.int())
        else {
            return Ok(None);
        };
        let fence = fence as u64;
        let data = serde_json::json!({
            "worker": h.worker, "host": h.host, "pid": h.pid, "fence": fence,
            "state": run.state.name(), "after": run.worker,
        });
        append_event(
            c,
            &run.id,
            Some(fence),
            now as i64,
            "claimed",
            &data.to_string(),
        )?
        .map_err(|e| e.to_string())?;
        Ok(Some(fence))
    }

    fn hold(&self, id: &str, fence: u64) {
        self.held
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.to_owned(), Hold { fence, lost: false });
    }

    /// Extends this handle's lease on run `id` to `lease` from now: `false`
    /// when it holds the run no longer (another process took it up), and
    /// from then on it writes nothing more to it.
    pub fn renew(&self, id: &str, lease: Duration) -> Result<bool, StoreError> {
        let Some(Hold { fence, lost: false }) = self.hold_of(id) else {
            return Ok(false);
        };
        let until = now_ms() + lease.as_millis() as u64;
        let changed = self.with(|c| {
            c.exec(
                "UPDATE runs SET lease_until = ?3 WHERE id = ?1 AND fence = ?2",
                vals![id, fence, until],
            )
        })?;
        if changed == 0 {
            self.lose(id);
        }
        Ok(changed == 1)
    }

    /// Lets go of run `id`: its lease ends now, so a run not over is free
    /// for any process at once (a worker that stops hands its runs back
    /// this way).
    pub fn release(&self, id: &str) -> Result<(), StoreError> {
        let hold = {
            let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
            match held.get(id) {
                // A lost hold stays, poisoned: nothing this handle writes
                // for the run passes from here on.
                Some(h) if h.lost => None,
                _ => held.remove(id),
            }
        };
        if let Some(Hold { fence, .. }) = hold {
            self.with(|c| {
                c.exec(
                    "UPDATE runs SET lease_until = 0 WHERE id = ?1 AND fence = ?2",
                    vals![id, fence],
                )
            })?;
        }
        Ok(())
    }

    /// The runs this handle holds.
    pub fn held(&self) -> Vec<String> {
        let mut ids: Vec<String> = self
            .held
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter(|(_, h)| !h.lost)
            .map(|(id, _)| id.clone())
            .collect();
        ids.sort();
        ids
    }

    /// Records (or refreshes) worker `w`.
    pub fn register_worker(&self, w: &Worker) -> Result<(), StoreError> {
        let labels = serde_json::to_string(&w.labels).unwrap_or_default();
        let driving = serde_json::to_string(&w.driving).unwrap_or_default();
        self.with(|c| {
            c.exec(
                "INSERT INTO workers (id, host, pid, labels, jobs, started_ms, heartbeat_ms, driving, stopping)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
                 ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid,
                    labels = excluded.labels, jobs = excluded.jobs, started_ms = excluded.started_ms,
                    heartbeat_ms = excluded.heartbeat_ms, driving = excluded.driving,
                    stopping = excluded.stopping",
                vals![
                    &w.id,
                    &w.host,
                    w.pid,
                    labels,
                    w.jobs as u64,
                    w.started_ms,
                    w.heartbeat_ms,
                    driving,
                    w.stopping
                ],
            )
        })
        .map(drop)
    }

    /// Worker `id`'s heartbeat: alive now, driving `driving`, stopping or
    /// not.
    pub fn worker_beat(
        &self,
        id: &str,
        driving: &[String],
        stopping: bool,
    ) -> Result<(), StoreError> {
        let driving = serde_json::to_string(driving).unwrap_or_default();
        self.with(|c| {
            c.exec(
                "UPDATE workers SET heartbeat_ms = ?2, driving = ?3, stopping = ?4 WHERE id = ?1",
                vals![id, now_ms(), driving, stopping],
            )
        })
        .map(drop)
    }

    /// Every worker the store knows, the most recently heard from first.
    pub fn workers(&self) -> Result<Vec<Worker>, StoreError> {
        let rows = self.with(|c| {
            c.rows(
                "SELECT id, host, pid, labels, jobs, started_ms, heartbeat_ms, driving, stopping \
                 FROM workers ORDER BY heartbeat_ms DESC, id",
                &[],
            )
        })?;
        Ok(rows
            .into_iter()
            .map(|r| {
                let mut r = r.into_iter();
                let mut next = || r.next().unwrap_or(Val::Null);
                let list = |v: Val| {
                    v.text()
                        .and_then(|t| serde_json::from_str(t).ok())
                        .unwrap_or_default()
                };
                Worker {
                    id: next().into_text().unwrap_or_default(),
                    host: next().into_text().unwrap_or_default(),
                    pid: next().int().unwrap_or(0) as u32,
                    labels: list(next()),
                    jobs: next().int().unwrap_or(0) as usize,
                    started_ms: next().int().unwrap_or(0) as u64,
                    heartbeat_ms: next().int().unwrap_or(0) as u64,
                    driving: list(next()),
                    stopping: next().int().unwrap_or(0) != 0,
                }
            })
            .collect())
    }

    /// Forgets worker `id` (it stopped).
    pub fn worker_gone(&self, id: &str) -> Result<(), StoreError> {
        self.with(|c| c.exec("DELETE FROM workers WHERE id = ?1", vals![id]))
            .map(drop)
    }

    /// How many runs are in each live state (queued, and taken up), for
    /// a fleet's view.
    pub fn live_counts(&self) -> Result<Vec<(State, u64)>, StoreError> {
        let rows = self.with(|c| {
            c.rows(
                &format!(
                    "SELECT state, COUNT(*) FROM runs WHERE state IN {LIVE_STATES} GROUP BY state"
                ),
                &[],
            )
        })?;
        Ok(rows
            .into_iter()
            .filter_map(|r| {
                let mut r = r.into_iter();
                let state = r.next()?.text().and_then(State::from_name)?;
                Some((state, r.next()?.int().unwrap_or(0) as u64))
            })
            .collect())
    }
}
