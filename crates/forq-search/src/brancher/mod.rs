//! Branchers propose candidate edits for a node of the tree: `mutate`
//! (program-repair mutations at the suspicious statements, no model),
//! `patches` (candidates read from files), and `llm` (hypotheses from a
//! model, behind the `llm` feature).

use std::collections::BTreeMap;

use async_trait::async_trait;
use forq_sandbox::Sandbox;

use crate::candidate::Candidate;
use crate::oracle::{Judgement, Oracle};
use crate::tree::Node;

#[cfg(feature = "llm")]
pub mod llm;
pub mod mutate;
pub mod patches;
mod syntax;
mod templates;

#[cfg(feature = "llm")]
pub use llm::{AgentReproducer, Agentic, Llm};
pub use mutate::{codebase_notes, Mutate, NOTES_CHARS};
pub use patches::Patches;

/// What a brancher sees of the node it branches from.
#[derive(Debug)]
pub struct BranchContext<'a> {
    /// The node's code (the root's, or a candidate's after its test run).
    pub sandbox: &'a dyn Sandbox,
    /// The node.
    pub node: &'a Node,
    /// What its tests showed (for the root, the unmodified code's run).
    pub judgement: &'a Judgement,
    /// The oracle: target and guard tests.
    pub oracle: &'a Oracle,
    /// The node's changes against the root: new contents by path (`None`
    /// deleted).
    pub changed: &'a BTreeMap<String, Option<String>>,
    /// What is left of the search's wall clock (`None`: no wall clock). A
    /// brancher's own slow work (a traced run) should take a share of it,
    /// not all: past it the search drops the brancher's work.
    pub time_left: Option<std::time::Duration>,
}

/// Why a brancher could not propose.
#[derive(Debug, thiserror::Error)]
#[error("{brancher}: {message}")]
pub struct BranchError {
    /// The brancher.
    pub brancher: String,
    /// What went wrong.
    pub message: String,
}

/// Proposes candidate edits for a node.
#[async_trait]
pub trait Brancher: Send + Sync {
    /// Its name (`mutate`, `patches`, `llm`).
    fn name(&self) -> &str;

    /// Whether branching a red node that got no closer can help: true for
    /// a brancher that reads the failure (a model); false for one that
    /// would only stack blind edits (mutations).
    fn refines(&self) -> bool {
        false
    }

    /// Up to `k` distinct candidates for the node, each with a `prior`
    /// (higher: more likely). Called once per node; an empty list means
    /// the node has nothing to try.
    async fn branch(&self, cx: &BranchContext<'_>, k: usize)
        -> Result<Vec<Candidate>, BranchError>;

    /// Dollars its model calls have cost so far (0 for a brancher that
    /// calls no model, or whose model has no price).
    fn cost_usd(&self) -> f64 {
        0.0
    }

    /// The statements it suspected, most suspicious first, and why (for
    /// `tree.json`); empty for a brancher that does not localise by line.
    fn suspected(&self) -> Vec<crate::spectrum::LineSuspect> {
        Vec::new()
    }
}
