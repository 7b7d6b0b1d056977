//! The host backend: plain processes in a copy of the base directory. No
//! isolation at all; chosen explicitly, for machines with neither root nor
//! Docker. It enforces timeouts, idle timeouts and output caps, and kills the
//! command's process group when it ends; memory, pids, CPU and network
//! policies are not enforced.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use tokio::sync::RwLock;

use crate::backend::{Backend, BackendKind, DirEntry, Sandbox, Snapshot, SnapshotSource};
use crate::diff::{self, Diff};
use crate::error::{Error, Result};
use crate::spec::{ExecOutcome, ExecRequest, SandboxSpec};
use crate::{output, paths, state};

/// How the host backend is set up.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct HostOptions {
    /// Where copies live; default [`crate::default_state_dir`].
    pub state_dir: Option<PathBuf>,
}

/// Plain processes in a directory copy.
#[derive(Debug, Clone)]
pub struct HostBackend {
    root: PathBuf,
}

impl HostBackend {
    /// Prepares the state directory.
    pub fn open(options: HostOptions) -> Result<Self> {
        let root = options
            .state_dir
            .unwrap_or_else(state::default_state_dir)
            .join("h");
        state::ensure_dir(&root)?;
        Ok(HostBackend { root })
    }

    fn fresh_dir(&self) -> Result<PathBuf> {
        loop {
            let dir = self.root.join(state::new_id());
            match std::fs::create_dir(&dir) {
                Ok(()) => return Ok(dir),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(Error::io("create", &dir, e)),
            }
        }
    }

    async fn sandbox_from(
        &self,
        spec: Arc<SandboxSpec>,
        untracked: Arc<OnceLock<diff::Untracked>>,
        from: &Path,
    ) -> Result<HostSandbox> {
        let dir = self.fresh_dir()?;
        let ws = dir.join("ws");
        let src = from.to_path_buf();
        let dst = ws.clone();
        tokio::task::spawn_blocking(move || copy_tree(&src, &dst))
            .await
            .map_err(|e| Error::io("copy", from, std::io::Error::other(e)))??;
        Ok(HostSandbox {
            id: dir
                .file_name()
                .expect("named")
                .to_string_lossy()
                .into_owned(),
            backend: self.clone(),
            dir,
            ws,
            spec,
            untracked,
            destroyed: RwLock::new(false),
        })
    }
}

/// Copies a directory tree: files, symbolic links and permissions.
pub(crate) fn copy_tree(src: &Path, dst: &Path) -> Result<()> {
    for entry in walkdir::WalkDir::new(src) {
        let entry = entry.map_err(|e| Error::io("walk", src, e.into()))?;
        let rel = entry.path().strip_prefix(src).expect("under its root");
        let target = dst.join(rel);
        let ft = entry.file_type();
        if ft.is_dir() {
            std::fs::create_dir_all(&target).map_err(|e| Error::io("create", &target, e))?;
        } else if ft.is_symlink() {
            let link = std::fs::read_link(entry.path())
                .map_err(|e| Error::io("readlink", entry.path(), e))?;
            std::os::unix::fs::symlink(&link, &target)
                .map_err(|e| Error::io("symlink", &target, e))?;
        } else if ft.is_file() {
            std::fs::copy(entry.path(), &target).map_err(|e| Error::io("copy", &target, e))?;
        }
    }
    Ok(())
}

#[async_trait]
impl Backend for HostBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Host
    }

    async fn create(&self, spec: &SandboxSpec) -> Result<Box<dyn Sandbox>> {
        if !spec.base.is_dir() {
            return Err(Error::InvalidSpec(format!(
                "base {} is not a directory",
                spec.base.display()
            )));
        }
        spec.limits.validate().map_err(Error::InvalidSpec)?;
        let spec = Arc::new(spec.clone());
        let base = spec.base.clone();
        let untracked = Arc::new(OnceLock::new());
        Ok(Box::new(self.sandbox_from(spec, untracked, &base).await?))
    }
}

/// A sandbox of the host backend.
#[derive(Debug)]
pub struct HostSandbox {
    id: String,
    backend: HostBackend,
    dir: PathBuf,
    ws: PathBuf,
    spec: Arc<SandboxSpec>,
    untracked: Arc<OnceLock<diff::Untracked>>,
    destroyed: RwLock<bool>,
}

impl HostSandbox {
    /// Absolute links count as inside when they point into the copy.
    fn files(&self) -> paths::WorkspaceDir {
        paths::WorkspaceDir {
            owner: None,
            root: self.ws.clone(),
            inside: self.ws.clone(),
        }
    }

    async fn live(&self) -> Result<tokio::sync::RwLockReadGuard<'_, bool>> {
        let guard = self.destroyed.read().await;
        if *guard {
            return Err(Error::Gone {
                id: self.id.clone(),
                state: "destroyed",
            });
        }
        Ok(guard)
    }
}

/// A frozen copy, removed when the last holder lets go.
#[derive(Debug)]
struct FrozenCopy {
    dir: PathBuf,
}

impl Drop for FrozenCopy {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

struct HostSnapshot {
    backend: HostBackend,
    spec: Arc<SandboxSpec>,
    untracked: Arc<OnceLock<diff::Untracked>>,
    copy: Arc<FrozenCopy>,
}

#[async_trait]
impl SnapshotSource for HostSnapshot {
    fn id(&self) -> String {
        self.copy
            .dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    async fn fork(&self) -> Result<Box<dyn Sandbox>> {
        Ok(Box::new(
            self.backend
                .sandbox_from(
                    self.spec.clone(),
                    self.untracked.clone(),
                    &self.copy.dir.join("ws"),
                )
                .await?,
        ))
    }
}

#[async_trait]
impl Sandbox for HostSandbox {
    fn id(&self) -> &str {
        &self.id
    }

    fn backend(&self) -> BackendKind {
        BackendKind::Host
    }

    async fn exec(&self, req: ExecRequest) -> Result<ExecOutcome> {
        let _live = self.live().await?;
        let Some(program) = req.argv.first().cloned() else {
            return Err(Error::InvalidSpec(
                "an exec needs at least a program name".to_owned(),
            ));
        };
        if req.service_network.is_some() {
            return Err(Error::Unsupported {
                backend: "host",
                what: "a service network (it has no network of its own to give)",
            });
        }
        let cwd = self.ws.join(paths::lexical(&req.cwd)?);
        let mut env = self.spec.env.clone();
        env.extend(req.env.clone());
        // The host backend's command builder.
        #[allow(clippy::disallowed_methods)]
        let mut cmd = tokio::process::Command::new(&program);
        cmd.args(&req.argv[1..])
            .current_dir(&cwd)
            .env_clear()
            .envs(&env)
            .process_group(0)
            .kill_on_drop(true);
        output::set_stdio(&mut cmd, &req)?;
        let child = cmd
            .spawn()
            .map_err(|source| Error::Spawn { program, source })?;
        let group = child.id().map(|p| p as i32);
        let driven = output::drive(child, &req, &mut move || {
            if let Some(pgid) = group {
                crate::os::kill(-pgid);
            }
        })
        .await;
        Ok(output_to_outcome(driven))
    }

    async fn read_file(&self, path: &Path) -> Result<Vec<u8>> {
        self.read_file_within(path, u64::MAX).await
    }

    async fn read_file_within(&self, path: &Path, max: u64) -> Result<Vec<u8>> {
        let _live = self.live().await?;
        let (root, path) = (self.ws.clone(), path.to_owned());
        tokio::task::spawn_blocking(move || paths::read_confined(&root, &path, &root, max))
            .await
            .map_err(|e| Error::io("read", Path::new(""), std::io::Error::other(e)))?
    }

    async fn write_file(&self, path: &Path, contents: &[u8]) -> Result<()> {
        let _live = self.live().await?;
        self.files().write(path, contents).await
    }

    async fn list_dir(&self, path: &Path) -> Result<Vec<DirEntry>> {
        let _live = self.live().await?;
        self.files().list(path).await
    }

    async fn remove(&self, path: &Path) -> Result<()> {
        let _live = self.live().await?;
        self.files().remove(path).await
    }

    async fn snapshot(&self) -> Result<Snapshot> {
        let _live = self.live().await?;
        let dir = self.backend.fresh_dir()?;
        let (src, dst) = (self.ws.clone(), dir.join("ws"));
        tokio::task::spawn_blocking(move || copy_tree(&src, &dst))
            .await
            .map_err(|e| Error::io("copy", &self.ws, std::io::Error::other(e)))??;
        Ok(Snapshot {
            inner: Arc::new(HostSnapshot {
                backend: self.backend.clone(),
                spec: self.spec.clone(),
                untracked: self.untracked.clone(),
                copy: Arc::new(FrozenCopy { dir }),
            }),
        })
    }

    async fn diff(&self) -> Result<Diff> {
        let _live = self.live().await?;
        let (base, ws) = (self.spec.base.clone(), self.ws.clone());
        let untracked = self.untracked.clone();
        tokio::task::spawn_blocking(move || diff::diff_trees(&base, &ws, &untracked))
            .await
            .map_err(|e| Error::io("diff", &self.ws, std::io::Error::other(e)))?
    }

    async fn destroy(self: Box<Self>) -> Result<()> {
        let mut destroyed = self.destroyed.write().await;
        *destroyed = true;
        std::fs::remove_dir_all(&self.dir).map_err(|e| Error::io("remove", &self.dir, e))
    }
}

impl Drop for HostSandbox {
    fn drop(&mut self) {
        if !*self.destroyed.get_mut() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Maps what driving a plain child produced onto an outcome.
pub(crate) fn output_to_outcome(driven: output::Driven) -> ExecOutcome {
    use std::os::unix::process::ExitStatusExt;
    ExecOutcome {
        exit_code: driven.status.and_then(|s| s.code()),
        signal: driven.status.and_then(|s| s.signal()),
        timed_out: driven.timed_out,
        idle_timed_out: driven.idle_timed_out,
        killed_for_memory: false,
        killed_for_disk: false,
        duration_ms: driven.duration.as_millis() as u64,
        stdout: driven.stdout.0,
        stdout_dropped: driven.stdout.1,
        stderr: driven.stderr.0,
        stderr_dropped: driven.stderr.1,
    }
}
