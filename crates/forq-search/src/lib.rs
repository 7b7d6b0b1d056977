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
//! - [`bench`]: expansion orders compared, and fork-based against
//!   cold-copy evaluation, side by side in one run (`forq search bench`).
//! - With the `llm` feature, `brancher::Llm` (K hypotheses per node from a
//!   model, failures fed back) and `brancher::Agentic` (a coding agent's
//!   pass in a fork), through forq-agent.
//!
//! What it never does: copy a workspace to try a candidate (every candidate
//! is a fork), run a test outside a sandbox, or take text as the patch
//! (the patch is the sandbox's diff of the winning state).
#![deny(missing_docs)]

pub mod bench;
pub mod brancher;
pub mod candidate;
pub mod fix;
pub mod oracle;
mod search;
pub mod tree;

pub use fix::{
    prepare, write_report, FixError, FixReport, FixStrategy, Prepared, Single, Speculative,
};
pub use search::{search, Budget, Order, SearchError, SearchOptions, SearchOutcome, Winner};
