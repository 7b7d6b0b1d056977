//! Disk back from runs that are over: their workspaces (a clone each) go,
//! their records stay (the store's rows and events, `fix.patch`,
//! `tree.json`, `summary.json`), so `forq runs show` still tells the
//! whole story.
//!
//! A `patch_ready` run keeps its workspace unless asked: its branch lives
//! only there until a person pushes it. Runs not over are never touched.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::json;

use crate::store::{State, Store, StoreError};

/// Run `id`'s workspace under the state directory.
pub fn workspace_path(state_dir: &Path, id: &str) -> PathBuf {
    state_dir.join("runs").join(id).join("workspace")
}

/// What [`clean`] did.
#[derive(Debug, Default, Clone, Serialize)]
pub struct Cleaned {
    /// The runs whose workspaces were removed.
    pub runs: Vec<String>,
    /// Bytes the removed files held.
    pub bytes: u64,
    /// `patch_ready` runs whose workspaces were kept (their branches are
    /// not pushed yet).
    pub kept: Vec<String>,
}

/// Why cleaning stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CleanError {
    /// The store could not be read or written.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A workspace could not be removed.
    #[error("cannot remove {path}: {source}; remove it by hand, then clean again")]
    Remove {
        /// The directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// Removes the workspaces of the runs in `store` that are over, but those
/// of `patch_ready` runs only with `patched`. Each removal is an event of
/// its run (`cleaned`, with the bytes freed).
pub fn clean(store: &Store, state_dir: &Path, patched: bool) -> Result<Cleaned, CleanError> {
    let mut out = Cleaned::default();
    for run in store.all()? {
        let ws = workspace_path(state_dir, &run.id);
        if !run.state.is_terminal() || !ws.is_dir() {
            continue;
        }
        if matches!(run.state, State::PatchReady | State::CompletedWithFindings) && !patched {
            out.kept.push(run.id.to_string());
            continue;
        }
        let bytes: u64 = walkdir::WalkDir::new(&ws)
            .into_iter()
            .flatten()
            .filter_map(|e| e.metadata().ok())
            .filter(|m| m.is_file())
            .map(|m| m.len())
            .sum();
        std::fs::remove_dir_all(&ws).map_err(|source| CleanError::Remove {
            path: ws.clone(),
            source,
        })?;
        store.event(&run.id, "cleaned", json!({"bytes": bytes}))?;
        out.bytes += bytes;
        out.runs.push(run.id.to_string());
    }
    Ok(out)
}

/// Run `id`'s record file `name` (`fix.patch`, `tree.json`,
/// `summary.json`) in `state_dir`, if it was written.
pub fn record(state_dir: &Path, id: &str, name: &str) -> std::io::Result<Option<Vec<u8>>> {
    match std::fs::read(state_dir.join("runs").join(id).join(name)) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// The record files in run directory `dir` (`fix.patch`, `tree.json`,
/// `summary.json`, `ripple.patch`, `branch.bundle`), each up to 16 MiB:
/// regular files only, each opened without following a link (a link
/// planted there, or swapped in after the listing, is never read), so
/// nothing outside the run's own records reaches the store.
pub fn record_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    const MAX: u64 = 16 << 20;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut records = Vec::new();
    for entry in entries.flatten() {
        let opened = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(entry.path());
        let Ok(mut file) = opened else {
            continue;
        };
        let fits = file.metadata().is_ok_and(|m| m.is_file() && m.len() <= MAX);
        let mut bytes = Vec::new();
        if fits && file.read_to_end(&mut bytes).is_ok() {
            records.push((entry.file_name().to_string_lossy().into_owned(), bytes));
        }
    }
    records.sort();
    records
}

/// Run `id`'s record `name` as the store keeps it (written when the run
/// ended, on whichever machine ran it), else from `state_dir` on this
/// machine (a run still going, or one from before records were kept).
pub fn stored_record(
    store: &crate::store::Store,
    state_dir: Option<&Path>,
    id: &str,
    name: &str,
) -> std::io::Result<Option<Vec<u8>>> {
    if let Some(bytes) = store.artifact(id, name).map_err(std::io::Error::other)? {
        return Ok(Some(bytes));
    }
    match state_dir {
        Some(dir) => record(dir, id, name),
        None => Ok(None),
    }
}

/// The files of run `id`'s workspace (without `.git` and `.forq`),
/// relative and sorted; `None` when it has no workspace (removed by
/// `clean`, or never seeded).
pub fn workspace_files(state_dir: &Path, id: &str) -> Option<Vec<std::path::PathBuf>> {
    let ws = workspace_path(state_dir, id);
    if !ws.is_dir() {
        return None;
    }
    let mut paths: Vec<std::path::PathBuf> = walkdir::WalkDir::new(&ws)
        .min_depth(1)
        .into_iter()
        .filter_entry(|e| e.file_name() != ".git" && e.file_name() != ".forq")
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| e.path().strip_prefix(&ws).unwrap_or(e.path()).to_owned())
        .collect();
    paths.sort();
    Some(paths)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_link_among_a_runs_records_is_never_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let run = dir.path().join("run");
        std::fs::create_dir_all(run.join("workspace")).expect("run dir");
        std::fs::write(run.join("fix.patch"), "--- a/x\n").expect("patch");
        let secret = dir.path().join("host-secret");
        std::fs::write(&secret, "root's key").expect("secret");
        std::os::unix::fs::symlink(&secret, run.join("summary.json")).expect("link");
        std::os::unix::fs::symlink(&secret, run.join("workspace/leak")).expect("link");
        let names: Vec<String> = super::record_files(&run)
            .into_iter()
            .map(|(name, bytes)| {
                assert!(!String::from_utf8_lossy(&bytes).contains("root's key"));
                name
            })
            .collect();
        assert_eq!(names, ["fix.patch"]);
    }

    use super::*;
    use crate::store::NewRun;

    #[test]
    fn only_runs_that_are_over_lose_their_workspaces_and_patches_only_when_asked() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(&dir.path().join("forq.db")).expect("store");
        let make = |id: &str, state: State| {
            let run = store.create(&NewRun::fix(id, id, "/r")).expect("create");
            if state != State::Queued {
                store.transition(&run.id, state, "").expect("transition");
            }
            let ws = workspace_path(dir.path(), &run.id);
            std::fs::create_dir_all(&ws).expect("workspace");
            std::fs::write(ws.join("f"), "12345").expect("file");
            run.id
        };
        let failed = make("1", State::Failed);
        let patched = make("2", State::PatchReady);
        let working = make("3", State::Triaging);
        let first = clean(&store, dir.path(), false).expect("clean");
        assert_eq!(first.runs, std::slice::from_ref(&failed));
        assert_eq!(first.bytes, 5);
        assert_eq!(first.kept, std::slice::from_ref(&patched));
        assert!(!workspace_path(dir.path(), &failed).exists());
        assert!(workspace_path(dir.path(), &working).exists());
        let events = store.events(&failed, 0).expect("events");
        assert!(events.iter().any(|e| e.kind == "cleaned"), "{events:?}");
        let second = clean(&store, dir.path(), true).expect("clean");
        assert_eq!(second.runs, [patched]);
        assert!(
            workspace_path(dir.path(), &working).exists(),
            "a live run is never touched"
        );
    }
}
