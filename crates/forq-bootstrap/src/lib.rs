//! forq-bootstrap: the bootstrap gate, which proves that a fresh repository's
//! own tests run before forq changes a line of it.
//!
//! **Status: first slice.** What works: the [`Verdict`] enum with its exit
//! codes; the evidence parsers for pytest, unittest, cargo test, node's test
//! runner, jest, mocha, ctest, Automake and plain summaries ([`evidence`]), tested on output captured from the real
//! runners (`tests/fixtures/capture.sh` regenerates it); stack detection
//! from marker files ([`detect`]); and the gate itself ([`run`]): each
//! detected stack's install steps (with the host network) and test command
//! (without it, `CI=true`, `NO_COLOR=1`, stdin empty, separate timeouts)
//! run in a fresh forq-sandbox sandbox, the output's evidence decides, and
//! a [`Record`] says why; a green record is cached per commit and changes
//! in `.forq/bootstrap/manifest.json`. Still to come, in the bootstrap
//! issue: the other runners' parsers, the run record marked before and
//! after work, the agentic fallback's hook, and GIT_URL sources.
//!
//! What it never does: run a command outside a sandbox, or count a run in
//! which no test executed as green.
//!
//! ```
//! use forq_bootstrap::evidence;
//!
//! let out = "collected 2 items\n\n========= 1 failed, 1 passed in 0.03s =========\n";
//! let ev = evidence::pytest(out).unwrap();
//! assert_eq!((ev.passed, ev.failed, ev.executed()), (1, 1, 2));
//! ```
#![deny(missing_docs)]

mod cache;
mod clone;
mod detect;
pub mod evidence;
mod gate;
mod journal;
mod verdict;

pub use clone::{clone_shallow, is_git_url, CloneError, CloneOptions};
pub use detect::{detect, Stack, StackKind};
pub use evidence::{Evidence, Outcome};
pub use gate::{run, Error, Fallback, GateOptions, Observer, Phase, Progress, Record, StackRun};
pub use journal::{run_record_path, JournalError};
pub use verdict::Verdict;
