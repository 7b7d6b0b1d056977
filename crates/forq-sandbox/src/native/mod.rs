//! The native backend: Linux namespaces for isolation, overlayfs layers for
//! copy-on-write snapshots and forks, cgroups for caps.
//!
//! On disk, under the state directory:
//!
//! ```text
//! s/<id>/u/v<k>   upper layer of volume k (what this sandbox changed since its last snapshot)
//! s/<id>/w/v<k>   overlayfs work directory
//! s/<id>/m/v<k>   the merged view (mounted on the host, bound into the sandbox)
//! s/<id>/r        where each exec builds its root (inside its own mount namespace)
//! l/<id>/v<k>     a frozen layer: a former upper, shared read-only by every fork
//! ```
//!
//! Volume 0 is the workspace (`/workspace`, lower layer: the caller's base
//! directory); the others are `/tmp`, the home directory and the writable
//! toolchain caches. A snapshot freezes every volume at once.

mod backend;
mod cgroup;
mod holder;
mod ids;
mod sandbox;
pub(crate) mod seccomp;
pub(crate) mod sys;
mod template;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::RwLock;

use crate::backend::{Backend, BackendKind, DirEntry, Sandbox, Snapshot, SnapshotSource};
use crate::beneath::Node;
use crate::diff::{self, Diff};
use crate::error::{Error, Result};
use crate::output;
use crate::paths;
use crate::spec::{ExecOutcome, ExecRequest, Network, RootFs, SandboxSpec, WORKSPACE_DIR};
use crate::state;

pub(crate) use self::cgroup::Cgroups;
pub use self::ids::DEFAULT_ID_BASE;
use self::sys::{cstr, Step};

pub use sandbox::NativeSandbox;
use sandbox::*;
use template::*;

/// Frozen layers a sandbox may stack before a snapshot squashes them into one.
pub const MAX_LAYERS: usize = 16;

/// A host directory exposed inside native sandboxes at the same path.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Toolchain {
    /// The directory (e.g. `/root/.cargo`).
    pub path: PathBuf,
    /// Writable through a copy-on-write layer of the sandbox's own (package
    /// caches); otherwise bound read-only.
    pub writable: bool,
}

impl Toolchain {
    /// A toolchain directory.
    pub fn new(path: impl Into<PathBuf>, writable: bool) -> Self {
        Toolchain {
            path: path.into(),
            writable,
        }
    }
}

/// How the native backend is set up.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct NativeOptions {
    /// Where layers live; default [`crate::default_state_dir`].
    pub state_dir: Option<PathBuf>,
    /// Host toolchain directories to expose; default: `~/.cargo` and
    /// `~/.pyenv` writable, `~/.rustup` read-only, those that exist.
    pub toolchains: Option<Vec<Toolchain>>,
    /// Mount the overlays inside a user namespace of the backend's own
    /// instead of on the host. Default: when not root. Root may ask for it
    /// too (nothing then is ever mounted in the host's namespace), but then
    /// the sandbox's root is the caller's uid, root: only a test of the
    /// rootless path, never isolation.
    pub user_namespace: Option<bool>,
    /// As root: the first of the 65 536 host ids the sandbox's ids map onto
    /// (its root is this id on the host); default [`DEFAULT_ID_BASE`].
    pub id_base: Option<u32>,
}

/// Linux namespaces + overlayfs: as root with the overlays mounted on the
/// host, or without root with them mounted in a user namespace.
#[derive(Debug, Clone)]
pub struct NativeBackend {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    state: PathBuf,
    cgroups: Cgroups,
    overlay_extra: &'static str,
    /// The user-namespace holder, in that mode.
    holder: Option<holder::Holder>,
    /// As root (not in holder mode): the unprivileged ids the sandbox runs
    /// as, and the idmapped views that go with them.
    ids: Option<ids::Ids>,
    /// Writable toolchains as overlays name them (through the id map as
    /// root), in the order of `toolchains`' writable ones.
    toolchain_lowers: Vec<PathBuf>,
    home: PathBuf,
    home_skel: PathBuf,
    empty: PathBuf,
    toolchains: Vec<Toolchain>,
    /// This process's lifeline (`sys::lifeline`), which every shim watches.
    lifeline: std::os::fd::RawFd,
}
