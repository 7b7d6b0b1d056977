//! The search tree as data: nodes with their hypothesis, status, score,
//! diff size and timings, streamed to observers as they change and saved
//! whole as `tree.json`, which reads back into the same tree.

use std::cmp::Ordering;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::oracle::Judgement;

/// A node's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Queued or being evaluated.
    Exploring,
    /// Evaluated: the target is not green, or a guard test broke, or it
    /// did not apply, parse or finish.
    Red,
    /// Evaluated: the target is green and no guard test broke.
    Green,
    /// Dropped unevaluated, or its subtree cut, because the budget ended
    /// or better nodes were ahead.
    Pruned,
}

/// How good a node is, compared lexicographically: applies → parses →
/// target tests passing → guard tests broken (fewer) → diff size (smaller).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Score {
    /// The candidate applied to its parent's files.
    pub applies: bool,
    /// Every changed file still parses.
    pub parses: bool,
    /// Target tests passing.
    pub target_passed: usize,
    /// Guard tests broken.
    pub broken: usize,
    /// Lines changed against the original code.
    pub diff_lines: usize,
}

impl Ord for Score {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.applies, self.parses, self.target_passed)
            .cmp(&(other.applies, other.parses, other.target_passed))
            .then(other.broken.cmp(&self.broken))
            .then(other.diff_lines.cmp(&self.diff_lines))
    }
}

impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// One node of the tree: the root (the unmodified code) or a candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Node {
    /// 0 for the root, then in creation order.
    pub id: usize,
    /// The parent (`None` for the root).
    pub parent: Option<usize>,
    /// Edits from the root.
    pub depth: usize,
    /// What the candidate supposes.
    pub hypothesis: String,
    /// Where it stands.
    pub status: Status,
    /// Its score (for an evaluated node).
    pub score: Score,
    /// The brancher's own confidence in the candidate (higher first).
    pub prior: f64,
    /// Why it is red, in a line.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Files changed against the root.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// The change against the root, as a short unified diff (the changed
    /// region of each file with two lines of context, cut at 8 KiB): what
    /// a viewer of the tree shows for the node.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub change: String,
    /// The fingerprint of its code (changes against the root, normalised):
    /// no two evaluated nodes share one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub fingerprint: String,
    /// The oracle's judgement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judgement: Option<Judgement>,
    /// Fork, write and test time, in milliseconds.
    pub eval_ms: u64,
    /// Milliseconds since the search began, when it was evaluated.
    pub at_ms: u64,
    /// What speaks for a green node besides its tests (weighed when the
    /// search ends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<crate::evidence::Evidence>,
}

/// What observers are told, as it happens.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum SearchEvent {
    /// A node was created or changed: queued, judged, pruned, and for a
    /// green node once more at the end with its `evidence` (a counter of
    /// judged nodes skips that one).
    Node(Box<Node>),
    /// The search ended.
    Finished {
        /// Whether a green node was found.
        solved: bool,
        /// The winner.
        best: Option<usize>,
        /// Nodes evaluated.
        evaluated: usize,
    },
}

/// The whole tree.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Tree {
    /// Every node, by id.
    pub nodes: Vec<Node>,
    /// The winning node, if any.
    pub best: Option<usize>,
    /// The brancher.
    pub brancher: String,
    /// The expansion order.
    pub order: String,
    /// The statements the brancher suspected, most suspicious first, with
    /// the failing and passing tests that ran each (statement-level
    /// localisation; empty without it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub suspected: Vec<crate::spectrum::LineSuspect>,
}

impl Tree {
    /// Nodes with `status`.
    pub fn count(&self, status: Status) -> usize {
        self.nodes.iter().filter(|n| n.status == status).count()
    }

    /// The children of `id`.
    pub fn children(&self, id: usize) -> impl Iterator<Item = &Node> {
        self.nodes.iter().filter(move |n| n.parent == Some(id))
    }

    /// Writes the tree as JSON, whole (a temporary file, then a rename).
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, serde_json::to_vec_pretty(self)?)?;
        std::fs::rename(&tmp, path)
    }

    /// Reads a tree written by [`Tree::save`].
    pub fn load(path: &Path) -> std::io::Result<Tree> {
        Ok(serde_json::from_slice(&std::fs::read(path)?)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_rank_applies_then_target_then_guard_then_size() {
        let base = Score {
            applies: true,
            parses: true,
            target_passed: 1,
            broken: 0,
            diff_lines: 2,
        };
        let more_target = Score {
            target_passed: 2,
            broken: 3,
            ..base
        };
        let broke = Score { broken: 1, ..base };
        let bigger = Score {
            diff_lines: 9,
            ..base
        };
        assert!(more_target > base && base > broke && base > bigger && bigger > broke);
        assert!(Score::default() < base);
    }
}
