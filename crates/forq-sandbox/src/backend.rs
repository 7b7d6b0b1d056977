//! The backend and sandbox traits every implementation provides, and the
//! choice of a backend (`auto` included).

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::diff::Diff;
use crate::error::{Error, Result};
use crate::spec::{ExecOutcome, ExecRequest, SandboxSpec};

/// The kinds of backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum BackendKind {
    /// Linux namespaces and overlayfs.
    Native,
    /// A Docker engine through its API.
    Docker,
    /// Plain processes in a directory copy, no isolation.
    Host,
    /// A backend implemented outside this crate (a remote service, a
    /// test fake): [`open_backend`] cannot open it; its own crate does.
    Custom,
}

impl BackendKind {
    /// The backend's name as the CLI spells it.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Native => "native",
            BackendKind::Docker => "docker",
            BackendKind::Host => "host",
            BackendKind::Custom => "custom",
        }
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A backend as a caller chooses it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum BackendChoice {
    /// Native where it works, else docker, else an error that says why
    /// (the host backend is never picked silently: it does not isolate).
    #[default]
    Auto,
    /// This backend and no other.
    Kind(BackendKind),
}

impl std::str::FromStr for BackendChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "auto" => BackendChoice::Auto,
            "native" => BackendChoice::Kind(BackendKind::Native),
            "docker" => BackendChoice::Kind(BackendKind::Docker),
            "host" => BackendChoice::Kind(BackendKind::Host),
            other => {
                return Err(format!(
                    "unknown backend {other:?}: expected native, docker, host or auto"
                ))
            }
        })
    }
}

/// An entry of a workspace directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct DirEntry {
    /// File name.
    pub name: String,
    /// Whether it is a directory.
    pub is_dir: bool,
    /// Size in bytes (0 for directories).
    pub size: u64,
}

impl DirEntry {
    /// A file of `size` bytes named `name`.
    pub fn file(name: impl Into<String>, size: u64) -> Self {
        DirEntry {
            name: name.into(),
            is_dir: false,
            size,
        }
    }
    /// A directory named `name`.
    pub fn dir(name: impl Into<String>) -> Self {
        DirEntry {
            name: name.into(),
            is_dir: true,
            size: 0,
        }
    }
}

/// Makes sandboxes.
#[async_trait]
pub trait Backend: Send + Sync + fmt::Debug {
    /// Which backend this is.
    fn kind(&self) -> BackendKind;

    /// A fresh sandbox over `spec.base`.
    async fn create(&self, spec: &SandboxSpec) -> Result<Box<dyn Sandbox>>;

    /// Whether each exec may choose its network ([`crate::ExecRequest::network`]:
    /// the proxy for an install, none for the test run after it). Where not,
    /// a sandbox's network is fixed when it is made, and a caller that needs
    /// installs makes it with [`crate::Network::Proxy`].
    fn per_exec_network(&self) -> bool {
        true
    }

    /// Where this backend keeps its goldens: under its state directory on
    /// native, in one directory per engine on docker. Backends that keep
    /// no state refuse.
    fn goldens(&self) -> Result<crate::Goldens> {
        Err(Error::Unsupported {
            backend: self.kind().name(),
            what: "golden environments",
        })
    }

    /// Opens a state [`Sandbox::save_state`] saved under `dir`, as a
    /// snapshot over `spec.base` (see [`crate::Goldens`]). `hold` is kept
    /// until the snapshot and all its forks are gone. Backends that cannot
    /// keep a state refuse.
    async fn open_state(
        &self,
        dir: &Path,
        saved: &crate::SavedState,
        spec: &SandboxSpec,
        hold: crate::Hold,
    ) -> Result<Snapshot> {
        let _ = (dir, saved, spec, hold);
        Err(Error::Unsupported {
            backend: self.kind().name(),
            what: "golden environments",
        })
    }

    /// Releases what a saved state keeps outside `dir` (the image on
    /// docker); `false` when it is still in use and was kept.
    async fn remove_state(&self, dir: &Path, saved: &crate::SavedState) -> Result<bool> {
        let _ = (dir, saved);
        Ok(true)
    }
}

/// An isolated, forkable view of a repository in which commands run.
///
/// Every path argument is relative to the workspace root; a path that would
/// leave it (absolute, `..`, or through a symbolic link pointing out) is
/// refused with [`Error::PathEscape`].
#[async_trait]
pub trait Sandbox: Send + Sync + fmt::Debug {
    /// A unique id (unique on this machine for the backend).
    fn id(&self) -> &str;

    /// Which backend made it.
    fn backend(&self) -> BackendKind;

    /// Runs one command to its end.
    async fn exec(&self, req: ExecRequest) -> Result<ExecOutcome>;

    /// Reads a file.
    async fn read_file(&self, path: &Path) -> Result<Vec<u8>>;

    /// Reads a regular file of at most `max` bytes: a larger one is an
    /// error that names the cap (the built-in backends read no further
    /// than the cap, whatever size the file claims — a sparse file of
    /// many GiB costs nothing to make), and a fifo or a device is not a
    /// file to read (they never block forq). This default reads the whole
    /// file, then checks.
    async fn read_file_within(&self, path: &Path, max: u64) -> Result<Vec<u8>> {
        let bytes = self.read_file(path).await?;
        if bytes.len() as u64 > max {
            return Err(crate::Error::TooLarge {
                path: path.to_owned(),
                max,
            });
        }
        Ok(bytes)
    }

    /// Writes a file, creating parent directories.
    async fn write_file(&self, path: &Path, contents: &[u8]) -> Result<()>;

    /// Lists a directory, sorted by name (`""` is the root).
    async fn list_dir(&self, path: &Path) -> Result<Vec<DirEntry>>;

    /// Deletes a file or a directory tree.
    async fn remove(&self, path: &Path) -> Result<()>;

    /// Freezes the current state. Forks of the snapshot start from it,
    /// whatever this sandbox does afterwards.
    async fn snapshot(&self) -> Result<Snapshot>;

    /// A new, independent sandbox starting from the current state.
    async fn fork(&self) -> Result<Box<dyn Sandbox>> {
        self.snapshot().await?.fork().await
    }

    /// Every change against the base: what becomes a patch.
    async fn diff(&self) -> Result<Diff>;

    /// Saves the current state beyond this process under `dir` (an empty
    /// directory), for a golden environment; `label` names what the backend
    /// keeps elsewhere (the image tag on docker). The sandbox stays usable.
    /// Use [`crate::Goldens::save`] rather than this.
    async fn save_state(&self, dir: &Path, label: &str) -> Result<crate::SavedState> {
        let _ = (dir, label);
        Err(Error::Unsupported {
            backend: self.backend().name(),
            what: "golden environments",
        })
    }

    /// A network namespace of its own for a service (a web app) started by
    /// an exec given it ([`ExecRequest::service_network`]); forq reaches
    /// the service's ports through it, nothing else does.
    async fn service_network(&self) -> Result<crate::ServiceNetwork> {
        Err(Error::Unsupported {
            backend: self.backend().name(),
            what: "a service network (previews)",
        })
    }

    /// Releases processes, mounts and disk. Dropping a sandbox does the same
    /// on a best-effort basis; this reports failures.
    async fn destroy(self: Box<Self>) -> Result<()>;
}

/// A frozen sandbox state that forks start from.
///
/// A backend made outside this crate makes its snapshots with
/// [`Snapshot::new`] over its own [`SnapshotSource`].
#[derive(Clone)]
pub struct Snapshot {
    pub(crate) inner: Arc<dyn SnapshotSource>,
}

impl fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Snapshot").field("id", &self.id()).finish()
    }
}

impl Snapshot {
    /// A snapshot whose forks `source` makes.
    pub fn new(source: Arc<dyn SnapshotSource>) -> Self {
        Snapshot { inner: source }
    }

    /// An id for the frozen state.
    pub fn id(&self) -> String {
        self.inner.id()
    }

    /// A new sandbox starting from this state.
    pub async fn fork(&self) -> Result<Box<dyn Sandbox>> {
        self.inner.fork().await
    }
}

/// What a backend implements behind [`Snapshot`]: the frozen state, and
/// how a new sandbox starts from it. It lives as long as any clone of the
/// snapshot does.
#[async_trait]
pub trait SnapshotSource: Send + Sync {
    /// An id for the frozen state.
    fn id(&self) -> String;
    /// A new, independent sandbox starting from the frozen state.
    async fn fork(&self) -> Result<Box<dyn Sandbox>>;
}

/// A backend picked for a caller, with the reasons others were passed over.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Selected {
    /// The backend.
    pub backend: Arc<dyn Backend>,
    /// Why each backend tried before it was not used.
    pub passed_over: Vec<String>,
}

/// Opens the backend a caller chose; `auto` tries native, then docker.
pub async fn open_backend(choice: BackendChoice) -> Result<Selected> {
    match choice {
        BackendChoice::Kind(kind) => Ok(Selected {
            backend: open_kind(kind).await?,
            passed_over: Vec::new(),
        }),
        BackendChoice::Auto => {
            let mut passed_over = Vec::new();
            for kind in [BackendKind::Native, BackendKind::Docker] {
                match open_kind(kind).await {
                    Ok(backend) => {
                        tracing::info!(backend = %kind, "auto picked a backend");
                        return Ok(Selected {
                            backend,
                            passed_over,
                        });
                    }
                    Err(e) => passed_over.push(e.to_string()),
                }
            }
            Err(Error::Unavailable {
                backend: "auto",
                reason: format!(
                    "no isolating backend works here ({}); only the host backend, which isolates nothing, is left",
                    passed_over.join("; ")
                ),
            })
        }
    }
}

async fn open_kind(kind: BackendKind) -> Result<Arc<dyn Backend>> {
    Ok(match kind {
        #[cfg(target_os = "linux")]
        BackendKind::Native => Arc::new(crate::native::NativeBackend::open(Default::default())?),
        #[cfg(not(target_os = "linux"))]
        BackendKind::Native => {
            return Err(Error::Unavailable {
                backend: "native",
                reason: "the native backend needs Linux (namespaces, overlayfs)".to_owned(),
            })
        }
        BackendKind::Host => Arc::new(crate::host::HostBackend::open(Default::default())?),
        #[cfg(feature = "docker")]
        BackendKind::Docker => {
            Arc::new(crate::docker::DockerBackend::connect(Default::default()).await?)
        }
        #[cfg(not(feature = "docker"))]
        BackendKind::Docker => {
            return Err(Error::Unavailable {
                backend: "docker",
                reason: "forq-sandbox was built without its `docker` feature".to_owned(),
            })
        }
        BackendKind::Custom => {
            return Err(Error::Unavailable {
                backend: "custom",
                reason: "a custom backend is opened by the crate that implements it".to_owned(),
            })
        }
    })
}
