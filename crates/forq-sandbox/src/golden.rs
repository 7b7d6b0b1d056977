//! Golden environments: a warm sandbox state (dependencies installed, the
//! build done, the test runner primed) kept beyond the process, so that
//! later runs fork from it instead of installing again.
//!
//! A golden lives under `<state>/golden/<name>/`: `manifest.json` (what it
//! is for, its status), and one directory per generation (`g1`, `g2`, …)
//! holding the backend's saved state: on native a squashed layer per
//! volume, on docker a committed image (`forq-golden:<name>-g<N>`). A save
//! makes a new generation and becomes current; older ones are removed once
//! no sandbox uses them: each open leaves a mark (`users/<pid>-<n>`) that
//! the snapshot and its forks hold, and a mark whose process is gone does
//! not count. Marks and the build lock are files named by process, not
//! `flock`s: a lock on a descriptor would be kept by any child forked
//! meanwhile (the native backend's helpers fork without exec).
//! `forq sandbox gc` never touches goldens; [`Goldens::evict`] does, by
//! least recent use.
//!
//! ```no_run
//! # async fn demo(backend: &dyn forq_sandbox::Backend) -> forq_sandbox::Result<()> {
//! use forq_sandbox::{ExecRequest, Goldens, SandboxSpec};
//!
//! let goldens = Goldens::new("/var/tmp/forq-sandbox-0/golden")?;
//! let spec = SandboxSpec::new("path/to/repo");
//! let warm = backend.create(&spec).await?;
//! warm.exec(ExecRequest::shell("pip install -e .")).await?;
//! goldens.save("my-repo", "install-key", serde_json::json!({}), &*warm).await?;
//! warm.destroy().await?;
//!
//! // Later, in another process: fork from it.
//! let opened = goldens.open(backend, "my-repo", &spec).await?;
//! let run = opened.snapshot.fork().await?;
//! # Ok(()) }
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::backend::{Backend, BackendKind, Sandbox, Snapshot};
use crate::error::{Error, Result};

/// What a backend saved for one generation of a golden.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SavedState {
    /// The backend that saved it (and alone can open it).
    pub backend: BackendKind,
    /// Native: where each volume appears inside the sandbox, in layer
    /// order; a backend whose volumes differ refuses the state.
    #[serde(default)]
    pub volumes: Vec<PathBuf>,
    /// Docker: the committed image.
    #[serde(default)]
    pub image: Option<String>,
    /// Docker: the uid forq's uploads get (forq's own image's user).
    #[serde(default)]
    pub owner: Option<u32>,
    /// Disk the state takes (layers on native; the image on docker).
    pub bytes: u64,
}

impl SavedState {
    /// A saved native state.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))] // the native backend's
    pub(crate) fn native(volumes: Vec<PathBuf>, bytes: u64) -> Self {
        SavedState {
            backend: BackendKind::Native,
            volumes,
            image: None,
            owner: None,
            bytes,
        }
    }

    /// A saved docker state.
    #[cfg(feature = "docker")]
    pub(crate) fn docker(image: String, owner: Option<u32>, bytes: u64) -> Self {
        SavedState {
            backend: BackendKind::Docker,
            volumes: Vec::new(),
            image: Some(image),
            owner,
            bytes,
        }
    }
}

/// Whether a golden can be forked from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
#[non_exhaustive]
pub enum GoldenStatus {
    /// Its tests ran when it was saved.
    Ready,
    /// A sync or a check found its tests no longer run; runs say so
    /// instead of installing again silently.
    Broken {
        /// Why, as the check said it.
        reason: String,
    },
}

/// A golden as [`Goldens::list`] reports it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[non_exhaustive]
pub struct GoldenInfo {
    /// Its name (one per repository and install key, as the caller names
    /// it).
    pub name: String,
    /// What decides whether it matches a run (the caller's key: for forq,
    /// the repository, commit, install files, config and backend).
    pub key: String,
    /// The current generation.
    pub generation: u32,
    /// What the backend saved for it.
    pub saved: SavedState,
    /// Ready or broken.
    pub status: GoldenStatus,
    /// When the current generation was saved (ms since the epoch).
    pub saved_at_ms: u64,
    /// When a sandbox last forked from it (ms since the epoch).
    pub last_used_ms: u64,
    /// The caller's own facts (commit, stack, install steps, timings).
    #[serde(default)]
    pub meta: serde_json::Value,
}

/// A golden opened for forking: its snapshot holds the generation in use
/// until the snapshot and every fork of it are gone.
#[derive(Debug)]
#[non_exhaustive]
pub struct OpenedGolden {
    /// The golden as it was opened.
    pub info: GoldenInfo,
    /// Forks start from its state.
    pub snapshot: Snapshot,
}

/// The goldens under one directory.
#[derive(Debug, Clone)]
pub struct Goldens {
    dir: PathBuf,
}

/// What a backend keeps alive for as long as a golden's state is in use
/// (the snapshot and every fork of it): the open's mark.
pub type Hold = Arc<dyn std::any::Any + Send + Sync>;

/// An exclusive hold on one golden's name, for a build or a sync: a second
/// builder (this process or another) waits for the first and then finds
/// its golden. Released when dropped, or when its process ends.
#[derive(Debug)]
pub struct BuildLock {
    path: PathBuf,
}

impl Drop for BuildLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A file that says "process P uses this", removed when dropped.
#[derive(Debug)]
struct Mark {
    path: PathBuf,
}

impl Drop for Mark {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// How long [`Goldens::lock`] waits for a live builder.
pub const GOLDEN_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(2 * 3600);

/// Whether any live process has a mark in `users`. Marks of dead
/// processes are removed on the way.
fn in_use(users: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(users) else {
        return false;
    };
    let mut used = false;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if crate::state::owner_alive(&name) {
            used = true;
        } else {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    used
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// A name that is one path component of letters, digits, `-`, `_`, `.`.
fn check_name(name: &str) -> Result<()> {
    let fine = !name.is_empty()
        && name.len() <= 128
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if fine {
        Ok(())
    } else {
        Err(Error::InvalidSpec(format!(
            "{name:?} is not a golden name: use letters, digits, '-', '_' and '.' (at most 128, not starting with '.')"
        )))
    }
}

/// Writes `bytes` to `path` through a temporary file and a rename, so a
/// reader sees the old or the new contents, never half.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension(format!("tmp-{}", crate::state::new_id()));
    std::fs::write(&tmp, bytes).map_err(|e| Error::io("write", &tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::io("write", path, e)
    })
}

impl Goldens {
    /// The goldens kept in `dir` (created 0700, owned by the caller, as the
    /// state directory is).
    pub fn new(dir: impl Into<PathBuf>) -> Result<Self> {
        let dir = dir.into();
        crate::state::ensure_private_dir(&dir)?;
        Ok(Goldens { dir })
    }

    /// The goldens of a state directory (`<state>/golden`).
    pub fn in_state_dir(state_dir: &Path) -> Result<Self> {
        crate::state::ensure_private_dir(state_dir)?;
        Self::new(state_dir.join("golden"))
    }

    /// Where they are kept.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn home(&self, name: &str) -> Result<PathBuf> {
        check_name(name)?;
        Ok(self.dir.join(name))
    }

    /// Holds `name` exclusively until the lock is dropped, waiting for
    /// another holder (another process building the same golden) first,
    /// at most [`GOLDEN_LOCK_WAIT`].
    pub async fn lock(&self, name: &str) -> Result<BuildLock> {
        self.lock_within(name, GOLDEN_LOCK_WAIT).await
    }

    /// [`Goldens::lock`], waiting at most `wait` for a live holder: past it
    /// the error names the lock file and its holder.
    pub async fn lock_within(&self, name: &str, wait: std::time::Duration) -> Result<BuildLock> {
        let home = self.home(name)?;
        crate::state::ensure_dir(&home)?;
        let path = home.join("build.lock");
        let me = crate::state::new_id();
        let deadline = std::time::Instant::now() + wait;
        loop {
            let made = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path);
            match made {
                Ok(mut file) => {
                    use std::io::Write;
                    let lock = BuildLock { path: path.clone() };
                    file.write_all(me.as_bytes())
                        .map_err(|e| Error::io("write the lock", &path, e))?;
                    return Ok(lock);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    // Held: by a live builder (wait), or left by a dead one
                    // (take it over). A lock still being written reads
                    // empty: wait for it too.
                    let holder = std::fs::read_to_string(&path).unwrap_or_default();
                    if !holder.trim().is_empty() && !crate::state::owner_alive(&holder) {
                        let _ = std::fs::remove_file(&path);
                        continue;
                    }
                    if std::time::Instant::now() >= deadline {
                        return Err(Error::io(
                            "take the lock",
                            &path,
                            std::io::Error::new(
                                std::io::ErrorKind::TimedOut,
                                format!(
                                    "held by the live process {} for longer than {} s; if no \
                                     build is running, remove the file",
                                    holder.trim(),
                                    wait.as_secs()
                                ),
                            ),
                        ));
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
                Err(e) => return Err(Error::io("take the lock", &path, e)),
            }
        }
    }

    /// The golden called `name`, if there is one.
    pub fn get(&self, name: &str) -> Result<Option<GoldenInfo>> {
        let path = self.home(name)?.join("manifest.json");
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io("read", &path, e)),
        };
        let mut info: GoldenInfo = serde_json::from_str(&text).map_err(|e| {
            Error::InvalidSpec(format!(
                "the golden manifest {} is unreadable ({e}); remove the golden and build it again",
                path.display()
            ))
        })?;
        if let Ok(used) = std::fs::metadata(path.with_file_name("used")).and_then(|m| m.modified())
        {
            let used = used
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64);
            info.last_used_ms = info.last_used_ms.max(used);
        }
        Ok(Some(info))
    }

    /// Every golden, by name.
    pub fn list(&self) -> Result<Vec<GoldenInfo>> {
        let mut out = Vec::new();
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
            Err(e) => return Err(Error::io("list", &self.dir, e)),
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if check_name(&name).is_ok() {
                if let Some(info) = self.get(&name)? {
                    out.push(info);
                }
            }
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// Saves `sandbox`'s current state as the new generation of `name`,
    /// ready, with `key` and the caller's `meta`; older generations go once
    /// nothing uses them. The sandbox stays usable.
    pub async fn save(
        &self,
        name: &str,
        key: &str,
        meta: serde_json::Value,
        sandbox: &dyn Sandbox,
    ) -> Result<GoldenInfo> {
        let home = self.home(name)?;
        crate::state::ensure_dir(&home)?;
        let previous = self.get(name)?;
        let generation = previous.as_ref().map_or(0, |p| p.generation) + 1;
        let staging = home.join(format!("g{generation}.part-{}", crate::state::new_id()));
        crate::state::ensure_dir(&staging)?;
        let label = format!("{name}-g{generation}");
        let saved = match sandbox.save_state(&staging, &label).await {
            Ok(saved) => saved,
            Err(e) => {
                let _ = crate::state::remove_tree(&staging);
                return Err(e);
            }
        };
        let manifest_of_state = serde_json::to_vec_pretty(&saved).expect("serializable");
        write_atomic(&staging.join("saved.json"), &manifest_of_state)?;
        let done = home.join(format!("g{generation}"));
        std::fs::rename(&staging, &done).map_err(|e| Error::io("keep the golden", &done, e))?;
        let info = GoldenInfo {
            name: name.to_owned(),
            key: key.to_owned(),
            generation,
            saved,
            status: GoldenStatus::Ready,
            saved_at_ms: now_ms(),
            last_used_ms: now_ms(),
            meta,
        };
        self.write_manifest(&info)?;
        Ok(info)
    }

    fn write_manifest(&self, info: &GoldenInfo) -> Result<()> {
        let path = self.home(&info.name)?.join("manifest.json");
        write_atomic(
            &path,
            &serde_json::to_vec_pretty(info).expect("serializable"),
        )
    }

    /// Marks `name` broken with `reason` (or ready again with `None`).
    pub fn set_status(&self, name: &str, status: GoldenStatus) -> Result<()> {
        let Some(mut info) = self.get(name)? else {
            return Err(Error::InvalidSpec(format!("there is no golden {name:?}")));
        };
        info.status = status;
        self.write_manifest(&info)
    }

    /// Opens the current generation of `name` on `backend` (the one that
    /// saved it) over `spec.base`, which must hold the same tree the golden
    /// was saved over. A broken golden opens too: the caller reads
    /// `info.status` and decides.
    pub async fn open(
        &self,
        backend: &dyn Backend,
        name: &str,
        spec: &crate::SandboxSpec,
    ) -> Result<OpenedGolden> {
        let Some(info) = self.get(name)? else {
            return Err(Error::InvalidSpec(format!(
                "there is no golden {name:?} in {}",
                self.dir.display()
            )));
        };
        if info.saved.backend != backend.kind() {
            return Err(Error::InvalidSpec(format!(
                "the golden {name:?} was saved by the {} backend; open it with that one, or build it again on {}",
                info.saved.backend,
                backend.kind()
            )));
        }
        let generation = self.home(name)?.join(format!("g{}", info.generation));
        let users = generation.join("users");
        crate::state::ensure_dir(&users)?;
        let mark = users.join(crate::state::new_id());
        std::fs::write(&mark, b"").map_err(|e| Error::io("mark the golden in use", &mark, e))?;
        let hold: Hold = Arc::new(Mark { path: mark });
        let snapshot = backend
            .open_state(&generation, &info.saved, spec, hold)
            .await?;
        let used = self.home(name)?.join("used");
        let _ = std::fs::write(&used, b"");
        Ok(OpenedGolden { info, snapshot })
    }

    /// Removes the generations of `name` older than its current one that
    /// no sandbox uses. Returns how many went.
    pub async fn prune(&self, backend: &dyn Backend, name: &str) -> Result<usize> {
        let Some(info) = self.get(name)? else {
            return Ok(0);
        };
        let home = self.home(name)?;
        let mut removed = 0;
        for (generation, dir) in generations(&home) {
            if generation < info.generation && self.remove_generation(backend, &dir).await? {
                removed += 1;
            }
        }
        Ok(removed)
    }

    /// Removes one generation unless a sandbox uses it; `true` when it went.
    /// (An open that races this check is refused by the backend, its
    /// state gone; opens take the current generation, which is never
    /// pruned.)
    async fn remove_generation(&self, backend: &dyn Backend, dir: &Path) -> Result<bool> {
        if in_use(&dir.join("users")) {
            return Ok(false);
        }
        if let Ok(text) = std::fs::read_to_string(dir.join("saved.json")) {
            if let Ok(saved) = serde_json::from_str::<SavedState>(&text) {
                if saved.backend == backend.kind() {
                    if !backend.remove_state(dir, &saved).await? {
                        return Ok(false);
                    }
                } else if saved.backend == BackendKind::Docker {
                    // Its image is another backend's to remove; keep the record.
                    return Ok(false);
                }
            }
        }
        crate::state::remove_tree(dir).map_err(|e| Error::io("remove the golden", dir, e))?;
        Ok(true)
    }

    /// Removes `name` entirely. Returns `false` when a sandbox still uses
    /// one of its generations (nothing is removed then) or there is none.
    pub async fn remove(&self, backend: &dyn Backend, name: &str) -> Result<bool> {
        let home = self.home(name)?;
        if !home.exists() {
            return Ok(false);
        }
        let _build = self.lock(name).await?;
        for (_, dir) in generations(&home) {
            if !self.remove_generation(backend, &dir).await? {
                return Ok(false);
            }
        }
        crate::state::remove_tree(&home).map_err(|e| Error::io("remove the golden", &home, e))?;
        Ok(true)
    }

    /// Removes the least recently used goldens until the rest take at
    /// most `max_bytes` (0: all of them), skipping those in use. Returns
    /// the names removed.
    pub async fn evict(&self, backend: &dyn Backend, max_bytes: u64) -> Result<Vec<String>> {
        let mut all = self.list()?;
        all.sort_by_key(|g| g.last_used_ms);
        let mut total: u64 = all.iter().map(|g| g.saved.bytes).sum();
        let mut removed = Vec::new();
        for golden in all {
            // A cap of 0 keeps none, empty ones included.
            if total <= max_bytes && max_bytes > 0 {
                break;
            }
            if golden.saved.backend == backend.kind() && self.remove(backend, &golden.name).await? {
                total = total.saturating_sub(golden.saved.bytes);
                removed.push(golden.name);
            }
        }
        Ok(removed)
    }
}

/// The finished generations under a golden's directory, oldest first.
fn generations(home: &Path) -> Vec<(u32, PathBuf)> {
    let mut out: Vec<(u32, PathBuf)> = std::fs::read_dir(home)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let n = name.strip_prefix('g')?.parse::<u32>().ok()?;
            Some((n, e.path()))
        })
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_dead_builders_lock_and_marks_do_not_count() {
        let dir = tempfile::tempdir().unwrap();
        let goldens = Goldens::new(dir.path().join("golden")).unwrap();
        let home = goldens.dir().join("g");
        std::fs::create_dir_all(home.join("g1/users")).unwrap();
        // A builder that died with its lock: taken over.
        std::fs::write(home.join("build.lock"), "999999999-1").unwrap();
        let lock = goldens.lock("g").await.unwrap();
        let held = std::fs::read_to_string(home.join("build.lock")).unwrap();
        assert!(
            held.starts_with(&format!("{}.", std::process::id())),
            "{held}"
        );
        drop(lock);
        assert!(!home.join("build.lock").exists());
        // A dead process's mark is not a use (and is cleaned); a live one is.
        std::fs::write(home.join("g1/users/999999999-3"), "").unwrap();
        assert!(!in_use(&home.join("g1/users")));
        assert!(!home.join("g1/users/999999999-3").exists());
        std::fs::write(home.join(format!("g1/users/{}-7", std::process::id())), "").unwrap();
        assert!(in_use(&home.join("g1/users")));
    }

    /// Attack (forq's adversarial corpus, SECURITY.md): a builder died and
    /// the kernel gave its pid to another process, which made the dead
    /// builder's lock look alive for ever; and a live holder made a waiter
    /// wait without end.
    #[tokio::test]
    async fn a_reused_pid_does_not_hold_a_lock_and_the_wait_is_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let goldens = Goldens::new(dir.path().join("golden")).unwrap();
        let home = goldens.dir().join("g");
        std::fs::create_dir_all(&home).unwrap();
        let me = std::process::id();
        let start = crate::os::start_time(me).expect("this process's start time");
        // This process's pid, another start time: a dead builder's.
        std::fs::write(home.join("build.lock"), format!("{me}.{}-1", start + 1)).unwrap();
        let lock = goldens
            .lock_within("g", std::time::Duration::from_secs(5))
            .await
            .expect("taken over");
        let held = std::fs::read_to_string(home.join("build.lock")).unwrap();
        assert!(held.starts_with(&format!("{me}.{start}-")), "{held}");
        assert!(crate::state::owner_alive(&held));
        // Held by a live process (this one): the second waits, and gives up.
        let err = goldens
            .lock_within("g", std::time::Duration::from_millis(300))
            .await
            .expect_err("bounded");
        assert!(err.to_string().contains("build.lock"), "{err}");
        drop(lock);
        let users = home.join("g1/users");
        std::fs::create_dir_all(&users).unwrap();
        std::fs::write(users.join(format!("{me}.{}-3", start + 1)), "").unwrap();
        assert!(!in_use(&users), "a reused pid's mark is not a use");
    }

    #[test]
    fn names_are_one_plain_component() {
        for good in ["calc", "my-repo.main_1", "a"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in ["", ".hidden", "a/b", "..", "x y", &"n".repeat(129)] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }
}
