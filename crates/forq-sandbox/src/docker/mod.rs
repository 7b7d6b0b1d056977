//! The docker backend: a container per sandbox through the Docker Engine API
//! (bollard). Files move through the archive API, commands through the exec
//! API; a snapshot is a commit and a fork a new container from it.
//!
//! Containers run with every capability dropped, `no-new-privileges`, no
//! network unless the spec asks for the host's, and the spec's memory, pids
//! and CPU caps. An install exec reaches the egress proxy only: served by
//! forq inside the container's network namespace when the engine is this
//! machine's and forq is root, else by a sidecar container ([`sidecar`]). No image is pulled: the caller names a local image, or the
//! default one is built from the host's static busybox ([`import_rootfs`]).

use std::collections::{BTreeSet, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{
    CommitContainerOptions, CreateContainerOptions, CreateImageOptions,
    DownloadFromContainerOptions, ListContainersOptions, ListImagesOptions, RemoveContainerOptions,
    RemoveImageOptions, RestartContainerOptions, UploadToContainerOptions,
};
use bollard::Docker;
use futures_util::StreamExt;
use tokio::io::AsyncWriteExt;
use tokio::sync::RwLock;

use crate::backend::{Backend, BackendKind, DirEntry, Sandbox, Snapshot, SnapshotSource};
use crate::diff::{self, Diff};
use crate::error::{Error, Result};
use crate::output::{Capture, Deadlines, Expired};
use crate::paths::{self, display_rel};
use crate::spec::{
    ExecOutcome, ExecRequest, Network, OutputChunk, SandboxSpec, StreamKind, WORKSPACE_DIR,
};
use crate::state;

mod backend;
mod changes;
mod image;
mod sandbox;
mod sidecar;

use backend::remove_container_of;
use changes::*;
pub use image::import_rootfs;
use image::{busybox_rootfs, workspace_tar};
use sandbox::*;

/// The image used when a spec names none: busybox, built locally.
pub const DEFAULT_IMAGE: &str = "forq-sandbox-busybox:2";

/// The unprivileged user containers of [`DEFAULT_IMAGE`] run as (an image
/// of the caller's runs as its own `USER`).
const SANDBOX_USER: (u32, &str) = (1000, "/home/sandbox");

const LABEL_SANDBOX: &str = "forq.sandbox";
const LABEL_OWNER: &str = "forq.owner";
const SNAPSHOT_REPO: &str = "forq-snapshot";
/// Goldens' images: `forq-golden:<name>-g<N>`, kept by `gc`.
const GOLDEN_REPO: &str = "forq-golden";
const LABEL_GOLDEN: &str = "forq.golden";

/// How the docker backend is set up.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct DockerOptions {
    /// Engine address; default `DOCKER_HOST`, else the local socket.
    pub host: Option<String>,
    /// The program that serves the egress proxy in a sidecar container where
    /// forq cannot serve it inside a container's network namespace (an
    /// engine elsewhere, or forq not root). Default: the process's
    /// [`crate::default_egress_program`]. Without one, such an engine refuses
    /// sandboxes and execs that ask for [`Network::Proxy`].
    pub egress_program: Option<crate::EgressProgram>,
}

/// How install execs reach the egress proxy on an engine.
#[derive(Debug, Clone)]
enum Egress {
    /// forq serves it inside the container's network namespace: the engine
    /// is this machine's (its unix socket) and forq is root.
    InNamespace,
    /// A sidecar container serves it on an internal network the container
    /// joins for the exec.
    Sidecar(Arc<sidecar::SidecarImage>),
    /// Neither; why.
    Unavailable(&'static str),
}

/// Sandboxes as Docker containers.
#[derive(Debug, Clone)]
pub struct DockerBackend {
    docker: Docker,
    owner: String,
    egress: Egress,
    /// The engine's address as given (empty: the default).
    address: String,
}

fn docker_err(op: &'static str) -> impl FnOnce(bollard::errors::Error) -> Error {
    move |source| Error::Docker {
        op,
        source: Box::new(source),
    }
}

fn owner_label() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    format!("{}:{}", host.trim(), std::process::id())
}

/// A sandbox of the docker backend.
#[derive(Debug)]
pub struct DockerSandbox {
    id: String,
    backend: DockerBackend,
    spec: Arc<SandboxSpec>,
    container: String,
    /// What every fork of one create shares.
    lineage: Arc<Lineage>,
    /// The snapshot image the container runs from, held so that it is
    /// removed only after the container.
    #[allow(dead_code)] // held, never read
    image: Option<Arc<CommittedImage>>,
    destroyed: RwLock<bool>,
    /// Held exclusively by an exec that has the egress proxy, shared by the
    /// others: nothing else runs while the container can reach the proxy.
    net: RwLock<()>,
    /// OOM kills already reported (the cgroup's counter only grows).
    oom_seen: AtomicU64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(hex_byte: u8, executable: bool) -> FileState {
        FileState {
            md5: [hex_byte; 16],
            executable,
        }
    }

    #[test]
    fn hash_listing_is_read_and_compared() {
        let listing = format!(
            "L ./src/link.py\nX ./run.sh\n{}  ./run.sh\n{}  ./src/lib.py\n{}  ./src/new file.txt\n",
            "11".repeat(16),
            "22".repeat(16),
            "33".repeat(16)
        );
        let current = parse_hashes(&listing).expect("readable");
        assert_eq!(current.files[Path::new("run.sh")], state(0x11, true));
        assert_eq!(current.files[Path::new("src/lib.py")], state(0x22, false));
        assert!(current.files.contains_key(Path::new("src/new file.txt")));
        assert!(current.links.contains(Path::new("src/link.py")));

        let mut base = Listing::default();
        base.files.insert("run.sh".into(), state(0x11, false)); // mode changed
        base.files.insert("src/lib.py".into(), state(0x22, false)); // same
        base.files.insert("src/gone.py".into(), state(0x44, false)); // deleted
        base.links.insert("src/old-link".into()); // deleted link
        let (fetch, deleted) = changed_paths(&base, &current);
        let fetch: Vec<_> = fetch.iter().map(|p| p.display().to_string()).collect();
        assert_eq!(fetch, ["run.sh", "src/link.py", "src/new file.txt"]);
        let deleted: Vec<_> = deleted.iter().map(|p| p.display().to_string()).collect();
        assert_eq!(deleted, ["src/gone.py", "src/old-link"]);
    }

    #[test]
    fn unreadable_hash_listings_fall_back() {
        assert!(parse_hashes("\\0123  ./odd\\nname\n").is_none());
        assert!(parse_hashes("not a listing\n").is_none());
        assert!(parse_hashes("X ./only-mode\n").is_none());
    }
}
