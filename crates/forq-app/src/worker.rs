//! `forq worker`: one long-running process per machine that takes queued
//! runs up from a shared store and drives them with this machine's
//! backends and goldens.
//!
//! Runs are taken up with [`Store::claim_next`] (under a lease, renewed
//! as each run goes; PostgreSQL's `FOR UPDATE SKIP LOCKED` keeps two
//! workers off one run), at most `jobs` at once, those on repositories
//! this worker already ran first (its gate cache and goldens are warm).
//! A worker that dies lets its leases run out, and the others take its
//! runs up from their last checkpoints. A worker told to stop takes
//! nothing new, lets its runs finish for a grace period, then hands the
//! rest back (their leases end at once).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tokio::task::JoinSet;

use crate::pipeline::{Pipeline, RunError};
use crate::store::{now_ms, Holder, Store, StoreError, Worker};

/// How a worker works.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    /// Its name in the store (unique in the fleet).
    pub name: String,
    /// Runs at once.
    pub jobs: usize,
    /// How long its hold on a run lasts without renewal.
    pub lease: Duration,
    /// How often it looks for work and says it is alive.
    pub poll: Duration,
    /// What it offers (backends, architecture, an operator's own): it
    /// takes up only runs whose required labels are all among them.
    pub labels: Vec<String>,
    /// Stop once the store holds no run that is not over (and this one
    /// drives none): for a batch, a test or a bench.
    pub exit_when_idle: bool,
    /// After a stop is asked, how long its runs may go on before they are
    /// handed back.
    pub grace: Duration,
    /// Repositories this machine is ready for (its goldens'): their runs
    /// are taken up first. Those it runs join them.
    pub warm: Vec<String>,
}

impl WorkerOptions {
    /// A worker named `name`, driving `jobs` runs at once, with a 30 s
    /// lease, polling every second.
    pub fn new(name: &str, jobs: usize) -> WorkerOptions {
        WorkerOptions {
            name: name.to_owned(),
            jobs: jobs.max(1),
            lease: crate::pipeline::DEFAULT_LEASE,
            poll: Duration::from_secs(1),
            labels: Vec::new(),
            exit_when_idle: false,
            grace: Duration::from_secs(60),
            warm: Vec::new(),
        }
    }
}

/// What a worker did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct WorkerReport {
    /// Runs it drove to their end.
    pub finished: usize,
    /// Runs it lost to another worker (its lease ran out) or could not go
    /// on with.
    pub lost: usize,
    /// Runs it handed back when told to stop.
    pub handed_back: usize,
    /// Milliseconds from asking the store for work to having it, one entry
    /// per claim that returned runs.
    pub claim_ms: Vec<f64>,
}

/// A name for this machine's worker: `HOST`, or `HOST-N` beside others.
pub fn default_name() -> String {
    Holder::this_process().host
}

/// Works until `stop` resolves (then stops gracefully) or, with
/// `exit_when_idle`, until there is nothing left to do. `pipeline`'s store
/// must be the shared one; the worker writes under its own name.
pub async fn work(
    pipeline: &Pipeline,
    options: &WorkerOptions,
    stop: impl std::future::Future<Output = ()>,
) -> Result<WorkerReport, StoreError> {
    let store = Arc::new(pipeline.store().as_holder(Holder::named(&options.name)));
    let pipeline = pipeline.with_store(store.clone()).lease(options.lease);
    let me = store.holder().clone();
    let started = now_ms();
    store.register_worker(&Worker {
        id: options.name.clone(),
        host: me.host.clone(),
        pid: me.pid,
        labels: options.labels.clone(),
        jobs: options.jobs,
        started_ms: started,
        heartbeat_ms: started,
        driving: Vec::new(),
        stopping: false,
    })?;
    tracing::info!(worker = options.name, jobs = options.jobs, "worker started");
    let mut report = WorkerReport::default();
    let mut running: JoinSet<(String, Result<crate::store::Run, RunError>)> = JoinSet::new();
    let mut warm: BTreeSet<String> = options.warm.iter().cloned().collect();
    tokio::pin!(stop);
    let mut stopping = false;
    loop {
        let free = options.jobs.saturating_sub(running.len());
        let mut claimed_now = 0;
        if !stopping && free > 0 {
            let asked = std::time::Instant::now();
            let prefer: Vec<String> = warm.iter().cloned().collect();
            match store.claim_next(free, options.lease, &prefer, &options.labels) {
                Ok(runs) => {
                    if !runs.is_empty() {
                        report.claim_ms.push(asked.elapsed().as_secs_f64() * 1000.0);
                    }
                    claimed_now = runs.len();
                    for before in runs {
                        let id = before.id.to_string();
                        warm.insert(before.repo.clone());
                        tracing::info!(run = id, state = before.state.name(), "taken up");
                        let p = pipeline.clone();
                        running.spawn(async move {
                            let out = p.drive_held(before).await;
                            (id, out)
                        });
                    }
                }
                Err(e) => tracing::warn!("could not ask the store for work: {e}"),
            }
        }
        let ids: Vec<String> = store.held();
        if let Err(e) = store.worker_beat(&options.name, &ids, stopping) {
            tracing::warn!("could not record the heartbeat: {e}");
        }
        if running.is_empty() && claimed_now == 0 {
            if stopping {
                break;
            }
            if options.exit_when_idle && store.live_counts()?.is_empty() {
                break;
            }
        }
        // Room and work just found: look again at once.
        if claimed_now > 0 && running.len() < options.jobs {
            continue;
        }
        tokio::select! {
            Some(joined) = running.join_next(), if !running.is_empty() => {
                match joined {
                    Ok((id, Ok(run))) => {
                        tracing::info!(run = id, state = run.state.name(), "run ended");
                        report.finished += 1;
                    }
                    Ok((id, Err(e))) => {
                        tracing::warn!(run = id, "run not driven on: {e}");
                        report.lost += 1;
                    }
                    Err(e) => {
                        tracing::error!("a run's task failed: {e}");
                        report.lost += 1;
                    }
                }
            }
            () = tokio::time::sleep(options.poll) => {}
            () = &mut stop, if !stopping => {
                tracing::info!(worker = options.name, running = running.len(), "stopping: taking nothing new up");
                stopping = true;
                report.handed_back += finish_or_hand_back(&store, &mut running, &mut report, options.grace).await;
            }
        }
    }
    store.worker_gone(&options.name)?;
    tracing::info!(
        worker = options.name,
        finished = report.finished,
        "worker stopped"
    );
    Ok(report)
}

/// Lets the running runs finish within `grace`, then hands back the rest
/// (their tasks end, their leases end now: another worker resumes them
/// from their last checkpoints). How many were handed back.
async fn finish_or_hand_back(
    store: &Store,
    running: &mut JoinSet<(String, Result<crate::store::Run, RunError>)>,
    report: &mut WorkerReport,
    grace: Duration,
) -> usize {
    let deadline = tokio::time::Instant::now() + grace;
    while !running.is_empty() {
        match tokio::time::timeout_at(deadline, running.join_next()).await {
            Ok(Some(Ok((_, Ok(_))))) => report.finished += 1,
            Ok(Some(_)) => report.lost += 1,
            Ok(None) => break,
            Err(_) => break,
        }
    }
    let left = store.held();
    running.abort_all();
    while running.join_next().await.is_some() {}
    for id in &left {
        let _ = store.event(
            id,
            "handed_back",
            serde_json::json!({"reason": "its worker stopped"}),
        );
        let _ = store.release(id);
    }
    left.len()
}
