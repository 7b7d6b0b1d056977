//! Changes that must keep behaviour — a rename, documentation — judged
//! like a fix: in a fork of the warm root, by the repository's own tests,
//! with every test that passes on the unmodified code as the guard and no
//! target. The report and the patch are written as [`crate::write_report`]
//! writes a fix's, so a caller handles both alike.

use std::path::Path;
use std::time::{Duration, Instant};

use forq_bootstrap::GateOptions;
use forq_sandbox::Backend;

use crate::brancher::Patches;
use crate::candidate::Candidate;
use crate::tree::Status;
use crate::{prepare_guarded, write_report, FixError, FixReport, SearchOptions, Single};

/// What became of a behaviour-keeping change.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Guarded {
    /// The report (`summary.json`): `solved` when the tests stayed green,
    /// `patch` naming `fix.patch`.
    pub report: FixReport,
    /// The patch, when green.
    pub patch: Option<String>,
    /// Why it is red (the tests it broke, or how it failed to apply).
    pub reason: Option<String>,
}

/// Applies `change` in a sandbox over `repo` (gated and provisioned as a
/// fix is), runs the whole suite, and writes `fix.patch` (when no passing
/// test broke), `tree.json` and `summary.json` into `out`. The user's tree
/// is not touched.
pub async fn run_guarded(
    backend: &dyn Backend,
    repo: &Path,
    gate: &GateOptions,
    change: Candidate,
    test_timeout: Duration,
    out: &Path,
) -> Result<Guarded, FixError> {
    let started = Instant::now();
    let prepared = prepare_guarded(backend, repo, gate, test_timeout).await?;
    let strategy = Single::new(Box::new(Patches::new(vec![change])));
    let written = crate::FixStrategy::run(
        &strategy,
        &*prepared.root,
        &prepared.oracle,
        &prepared.genesis,
        // A rename reaches the tests' calls; a doc change, their docs.
        &SearchOptions::default().edit_tests(true),
    )
    .await
    .map_err(FixError::from)
    .and_then(|o| {
        write_report(out, &strategy, &prepared, &o, started.elapsed()).map(|report| (report, o))
    });
    let _ = prepared.root.destroy().await;
    let (report, outcome) = written?;
    let reason = outcome
        .tree
        .nodes
        .iter()
        .find(|n| n.id != 0 && n.status != Status::Green)
        .map(|n| n.reason.clone());
    let patch = match outcome.winner {
        Some(w) => {
            let _ = w.sandbox.destroy().await;
            Some(w.patch)
        }
        None => None,
    };
    Ok(Guarded {
        report,
        patch,
        reason,
    })
}
