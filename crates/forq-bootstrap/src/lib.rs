//! forq-bootstrap: the bootstrap gate, which proves that a fresh repository's
//! own tests run before forq changes a line of it.
//!
//! [`detect`] reads a repository's marker files into [`Stack`]s (install
//! steps and a test command each, cheapest first); [`run`] runs each in a
//! fresh forq-sandbox sandbox — installs through the egress proxy (the
//! stack's registries only), the test command with no network, `CI=true`, `NO_COLOR=1`, stdin empty, separate
//! timeouts — and the stack's [`evidence`] parser decides from the output.
//! The [`Record`] says why, per stack; the run is marked as it goes in
//! `.forq/bootstrap/run.json` (and, optionally, a SQLite store); a green
//! record is cached per commit and changes in
//! `.forq/bootstrap/manifest.json`. [`Fallback`] is the agentic fallback's
//! hook: it proposes recipes ([`Stack::custom`]), the gate runs and judges
//! them. [`clone_shallow`] fetches a repository given by URL within caps.
//!
//! [`provision_warm`] makes the warm sandbox callers keep (the agent's
//! workspace, the search's root), forked from the repository's golden
//! environment when [`GateOptions::golden`] says so:
//!
//! ```no_run
//! # async fn demo(backend: &dyn forq_sandbox::Backend, stack: forq_bootstrap::Stack)
//! # -> Result<(), Box<dyn std::error::Error>> {
//! use forq_bootstrap::{GateOptions, GoldenOptions};
//!
//! let mut options = GateOptions::default();
//! // Build the golden when none matches this tree, then fork it.
//! options.golden = Some(GoldenOptions::new(backend.goldens()?, "https://github.com/o/r", true));
//! let warm = forq_bootstrap::provision_warm(backend, "repo".as_ref(), &stack, &options).await?;
//! println!("{:?}", warm.golden); // Some(GoldenUse { how: "built" | "forked" | "synced", .. })
//! # Ok(())
//! # }
//! ```
//!
//! What it never does: run a repository's command outside a sandbox, or
//! count a run in which no test executed as green.
//!
//! ```
//! use forq_bootstrap::evidence;
//!
//! let out = "collected 2 items\n\n========= 1 failed, 1 passed in 0.03s =========\n";
//! let ev = evidence::pytest(out).unwrap();
//! assert_eq!((ev.passed, ev.failed, ev.executed()), (1, 1, 2));
//! ```
//!
//! The gate on the current directory, with progress:
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//!
//! use forq_bootstrap::{GateOptions, Observer, Progress, Verdict};
//!
//! struct Steps;
//! impl Observer for Steps {
//!     fn progress(&self, event: &Progress<'_>) {
//!         if let Progress::Step { stack, command, .. } = event {
//!             println!("{stack}: {command}");
//!         }
//!     }
//! }
//!
//! let backend = forq_sandbox::open_backend(forq_sandbox::BackendChoice::Auto)
//!     .await?
//!     .backend;
//! let options = GateOptions::default().observer(Arc::new(Steps));
//! let record = forq_bootstrap::run(&*backend, std::path::Path::new("."), &options).await?;
//! if record.verdict == Verdict::Bootstrapped {
//!     println!("{} tests ran: {}", record.tests_executed, record.evidence.join(" / "));
//! }
//! # Ok(())
//! # }
//! ```
#![deny(missing_docs)]

mod cache;
mod clone;
mod configure;
mod detect;
pub mod evidence;
mod gate;
mod golden;
mod journal;
mod runner;
mod verdict;

pub use clone::{clone_shallow, is_git_url, CloneError, CloneOptions};
pub use configure::{
    transcript_path, ConfigStep, Configurator, ConfigureContext, ConfigureLimits, StepRecord,
};
pub use detect::{detect, Stack, StackKind};
pub use evidence::{Evidence, Outcome};
pub use gate::{run, Error, Fallback, GateOptions, Observer, Phase, Progress, Record, StackRun};
pub use golden::{golden_key, GoldenKey, GoldenOptions, GoldenUse};
pub use journal::{run_record_path, JournalError};
pub use runner::{
    provision, provision_warm, run_tests, same_test, selection_command, TestRun, Warm,
};
pub use verdict::Verdict;
