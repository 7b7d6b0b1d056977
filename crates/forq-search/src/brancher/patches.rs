//! `patches`: candidates read from files, for scripted runs and benchmarks.
//! Each file is one candidate: a unified diff (`*.patch`, `*.diff`) or
//! search/replace blocks (anything else); its name is the hypothesis.
//! They are all offered at the root, in file-name order.

use std::path::{Path, PathBuf};

use async_trait::async_trait;

use super::{BranchContext, BranchError, Brancher};
use crate::candidate::{parse_search_replace, Candidate, Change};

/// Candidates from files.
#[derive(Debug, Clone)]
pub struct Patches {
    candidates: Vec<Candidate>,
}

/// Why the candidate files could not be read.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {message}")]
pub struct PatchesError {
    /// The file or directory.
    pub path: PathBuf,
    /// What is wrong with it.
    pub message: String,
}

impl Patches {
    /// These candidates.
    pub fn new(candidates: Vec<Candidate>) -> Patches {
        Patches { candidates }
    }

    /// The candidates in `paths`: files, or directories whose files (not
    /// recursively, sorted by name, hidden ones skipped) are each one.
    pub fn from_paths(paths: &[PathBuf]) -> Result<Patches, PatchesError> {
        let mut files = Vec::new();
        for path in paths {
            let err = |message: String| PatchesError {
                path: path.clone(),
                message,
            };
            if path.is_dir() {
                let mut found: Vec<PathBuf> = std::fs::read_dir(path)
                    .map_err(|e| err(e.to_string()))?
                    .flatten()
                    .map(|e| e.path())
                    .filter(|p| {
                        p.is_file()
                            && !p
                                .file_name()
                                .and_then(|n| n.to_str())
                                .is_some_and(|n| n.starts_with('.'))
                    })
                    .collect();
                found.sort();
                if found.is_empty() {
                    return Err(err("holds no candidate file".to_owned()));
                }
                files.extend(found);
            } else {
                files.push(path.clone());
            }
        }
        let candidates = files
            .iter()
            .map(|f| read(f))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Patches { candidates })
    }
}

fn read(path: &Path) -> Result<Candidate, PatchesError> {
    let err = |message: String| PatchesError {
        path: path.to_owned(),
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
    let is_diff = matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("patch" | "diff")
    );
    let changes = if is_diff {
        if !text.lines().any(|l| l.starts_with("--- ")) {
            return Err(err(
                "not a unified diff: no `--- a/PATH` / `+++ b/PATH` header".to_owned(),
            ));
        }
        vec![Change::Patch { diff: text }]
    } else {
        parse_search_replace(&text).map_err(err)?
    };
    Ok(Candidate {
        hypothesis: path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
        changes,
        prior: 0.0,
    })
}

#[async_trait]
impl Brancher for Patches {
    fn name(&self) -> &str {
        "patches"
    }

    async fn branch(
        &self,
        cx: &BranchContext<'_>,
        k: usize,
    ) -> Result<Vec<Candidate>, BranchError> {
        if cx.node.depth > 0 {
            return Ok(Vec::new());
        }
        Ok(self.candidates.iter().take(k).cloned().collect())
    }
}
