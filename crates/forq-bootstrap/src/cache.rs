//! The recipe cache: a green gate writes `.forq/bootstrap/manifest.json`
//! in the repository, keyed by the HEAD commit, a hash of the uncommitted
//! changes and forq's version; the next run on the same key returns it
//! without running anything.

use std::path::{Path, PathBuf};

use forq_sandbox::{Backend, ExecRequest, SandboxSpec};
use serde::{Deserialize, Serialize};
use sha1::Digest;

use crate::gate::Record;

/// This build's version, part of every key.
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// What a manifest holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Manifest {
    pub(crate) key: String,
    pub(crate) head: String,
    pub(crate) forq_version: String,
    pub(crate) record: Record,
}

/// Where the manifest of `repo` lives.
pub(crate) fn manifest_path(repo: &Path) -> PathBuf {
    repo.join(".forq").join("bootstrap").join("manifest.json")
}

/// The cache key of `repo` and its HEAD, read by git inside a sandbox;
/// `None` when the repository is not a git checkout (nothing is cached).
pub(crate) async fn key(backend: &dyn Backend, repo: &Path) -> Option<(String, String)> {
    read_key(backend, repo, false).await
}

/// Like [`key`], but by the tree's content rather than the commit: two
/// commits of the same files (a directory copied and committed twice)
/// share it. What goldens are matched by.
pub(crate) async fn tree_key(backend: &dyn Backend, repo: &Path) -> Option<(String, String)> {
    read_key(backend, repo, true).await
}

async fn read_key(backend: &dyn Backend, repo: &Path, by_tree: bool) -> Option<(String, String)> {
    // The sandbox sees `repo` alone: without its own `.git` (a directory,
    // or a worktree's file) git cannot answer there, so no sandbox is made.
    if !repo.join(".git").exists() {
        return None;
    }
    let sandbox = backend.create(&SandboxSpec::new(repo)).await.ok()?;
    // HEAD, then what differs from it: tracked changes and untracked files
    // (forq's own directory left out).
    let script = "git rev-parse HEAD && git rev-parse 'HEAD^{tree}' && git status --porcelain=v1 --untracked-files=all -- . ':!.forq' && git diff HEAD -- . ':!.forq'";
    let out = sandbox
        .exec(ExecRequest::shell(script).stdin(Vec::new()))
        .await;
    let _ = sandbox.destroy().await;
    let out = out.ok().filter(|o| o.success())?;
    let text = out.stdout_text();
    let head = text.lines().next()?.trim().to_owned();
    let mut h = sha1::Sha1::new();
    h.update(VERSION.as_bytes());
    if by_tree {
        // Everything but the commit's own hash.
        h.update(text.split_once('\n')?.1.as_bytes());
    } else {
        h.update(text.as_bytes());
    }
    let key: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    Some((key, head))
}

/// The cached record for `key`, if the manifest has it.
pub(crate) fn load(repo: &Path, key: &str) -> Option<Record> {
    let text = std::fs::read_to_string(manifest_path(repo)).ok()?;
    let manifest: Manifest = serde_json::from_str(&text).ok()?;
    (manifest.key == key && manifest.forq_version == VERSION).then_some(manifest.record)
}

/// Writes the manifest (whole: a temporary file renamed over the old one).
pub(crate) fn store(repo: &Path, key: &str, head: &str, record: &Record) -> std::io::Result<()> {
    crate::journal::ignore_forq_dir(repo)?;
    let manifest = Manifest {
        key: key.to_owned(),
        head: head.to_owned(),
        forq_version: VERSION.to_owned(),
        record: record.clone(),
    };
    let bytes = serde_json::to_vec_pretty(&manifest).map_err(std::io::Error::other)?;
    crate::journal::write_whole(&manifest_path(repo), &bytes)
}
