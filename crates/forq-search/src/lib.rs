//! forq-search: speculative fork-tree search for a fix, with the
//! repository's tests as judge.
//!
//! - [`oracle`]: the target tests (failing before the fix) and the guard
//!   (passing before it), run through forq-bootstrap's runner and parsers,
//!   the target first and the whole suite only once it is green.
//! - [`candidate`]: a hypothesis and its changes (whole files,
//!   search/replace, unified diffs), made concrete against a node's files
//!   and fingerprinted so no state is evaluated twice.
//! - [`brancher`]: what proposes candidates — [`brancher::Mutate`]
//!   (fault localisation over forq-graph, then tree-sitter mutation
//!   operators; no model) and [`brancher::Patches`] (candidates from files).
//! - [`search()`]: best-first (or breadth-first, or random) evaluation of
//!   candidates, each in a copy-on-write fork of its parent's frozen
//!   state, within budgets of nodes, depth, concurrent jobs and wall clock;
//!   red children no worse than their parent are branched again; the
//!   first green node wins, or the smallest within the budget.
//! - [`tree`]: the tree as data, streamed to subscribers and saved as
//!   `tree.json`.
//! - [`fix`]: the main job in phases — [`prepare`] (gate, warm root,
//!   oracle), a [`FixStrategy`] ([`Speculative`] over a brancher, or
//!   [`Single`]: one candidate, such as a coding agent's pass), and
//!   [`write_report`] (`fix.patch`, `tree.json`, `summary.json`).
//! - [`change`]: changes that must keep behaviour (a rename) judged the
//!   same way, with every passing test as the guard and no target.
//! - [`bench`]: expansion orders compared, and fork-based against
//!   cold-copy evaluation, side by side in one run (`forq search bench`).
//! - With the `llm` feature, `brancher::Llm` (K hypotheses per node from a
//!   model, failures fed back) and `brancher::Agentic` (a coding agent's
//!   pass in a fork), through forq-agent.
//!
//! Candidates are plain data:
//!
//! ```
//! use forq_search::candidate::{parse_search_replace, Change};
//!
//! let blocks = "calc.py\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n>>>>>>> REPLACE\n";
//! let changes = parse_search_replace(blocks).unwrap();
//! assert!(matches!(&changes[0], Change::Replace { path, .. } if path == "calc.py"));
//! ```
//!
//! The whole job on a repository, with the `mutate` brancher:
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::path::Path;
//! use std::time::Duration;
//!
//! use forq_search::brancher::Mutate;
//! use forq_search::{prepare, search, SearchOptions};
//!
//! let repo = Path::new("examples/calc");
//! let backend = forq_sandbox::open_backend(forq_sandbox::BackendChoice::Auto).await?.backend;
//! let gate = forq_bootstrap::GateOptions::default();
//! let prepared = prepare(&*backend, repo, &gate, &[], Duration::from_secs(300)).await?;
//! let index = forq_graph::Index::open_current(repo)?;
//! let mutate = Mutate::new(index, prepared.stack.clone());
//! let out = search(&*prepared.root, &prepared.oracle, &prepared.genesis, &mutate, &SearchOptions::default()).await?;
//! if let Some(winner) = out.winner {
//!     print!("{}", winner.patch);
//!     winner.sandbox.destroy().await?;
//! }
//! prepared.root.destroy().await?;
//! # Ok(())
//! # }
//! ```
//!
//! What it never does: copy a workspace to try a candidate (every candidate
//! is a fork), run a test outside a sandbox, or take text as the patch
//! (the patch is the sandbox's diff of the winning state).
#![deny(missing_docs)]

pub mod bench;
pub mod brancher;
pub mod candidate;
pub mod change;
pub mod fix;
pub mod oracle;
mod search;
pub mod tree;

pub use fix::{
    prepare, prepare_guarded, prepare_with, write_report, FixError, FixReport, FixStrategy,
    Prepared, Reproducer, Single, Speculative,
};
pub use search::{search, Budget, Order, SearchError, SearchOptions, SearchOutcome, Winner};
