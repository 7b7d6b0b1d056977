//! forq-sandbox runs commands against a repository in isolation, and forks
//! that state copy-on-write, cheaply, so that many candidate fixes can be
//! tried from one warm environment.
//!
//! A [`Backend`] makes a [`Sandbox`] from a [`SandboxSpec`]: the base
//! directory holding the repository, the root filesystem, [`Limits`], the
//! [`Network`] policy and the environment. A sandbox runs commands
//! ([`Sandbox::exec`]) with timeouts, idle timeouts and capped output; reads
//! and writes files confined to its workspace; freezes its state
//! ([`Sandbox::snapshot`]) and forks it ([`Sandbox::fork`]); and reports its
//! [`Diff`] against the base, which is what becomes a patch.
//!
//! Backends:
//! - [`NativeBackend`]: Linux namespaces (mount, pid, net, ipc, uts) and
//!   overlayfs layers; a fork is a new empty upper layer over shared frozen
//!   ones, so it costs a few mounts and no copying. Caps through cgroups.
//!   As root the sandbox's root is an unprivileged host uid (a user
//!   namespace over idmapped mounts); without root the overlays live in a
//!   user namespace of the backend's own. Every payload runs with no
//!   capability, under a seccomp filter, in a session with no terminal;
//!   [`protections`] says what holds on this machine, and SECURITY.md in the
//!   repository what each layer stops.
//! - `DockerBackend` (feature `docker`, on by default): a container per
//!   sandbox through the Docker Engine API; snapshot is a commit, fork a new
//!   container from it. `DOCKER_HOST` is honoured.
//! - [`HostBackend`]: plain processes in a directory copy, no isolation.
//!
//! What it never does: write to the base directory, leave a process running
//! after an exec returns, or let a file operation leave the workspace.
//!
//! ```no_run
//! # async fn demo() -> forq_sandbox::Result<()> {
//! use forq_sandbox::{open_backend, BackendChoice, ExecRequest, SandboxSpec};
//! use std::time::Duration;
//!
//! let backend = open_backend(BackendChoice::Auto).await?.backend;
//! let root = backend.create(&SandboxSpec::new("/path/to/repo")).await?;
//! root.exec(ExecRequest::shell("pip install -e .")).await?;
//! let warm = root.snapshot().await?;
//!
//! let child = warm.fork().await?;
//! child.write_file("src/lib.py".as_ref(), b"print('fixed')\n").await?;
//! let run = child
//!     .exec(ExecRequest::new(["pytest", "-q"]).timeout(Duration::from_secs(600)))
//!     .await?;
//! if run.success() {
//!     println!("{}", child.diff().await?.patch);
//! }
//! # Ok(()) }
//! ```
//!
//! The pieces that need no backend can be tried directly:
//!
//! ```
//! use forq_sandbox::{BackendChoice, BackendKind, ExecRequest, Limits};
//!
//! let choice: BackendChoice = "native".parse().unwrap();
//! assert_eq!(choice, BackendChoice::Kind(BackendKind::Native));
//! let req = ExecRequest::shell("echo hi").output_cap(4096);
//! assert_eq!(req.argv, ["/bin/sh", "-c", "echo hi"]);
//! assert_eq!(Limits::default().pids(64).pids, Some(64));
//! ```
#![deny(missing_docs)]

mod backend;
mod diff;
#[cfg(feature = "docker")]
mod docker;
mod egress;
mod error;
mod golden;
mod host;
mod native;
mod output;
mod paths;
mod protections;
mod pty;
mod service;
mod spec;
mod state;

pub use backend::{
    open_backend, Backend, BackendChoice, BackendKind, DirEntry, Sandbox, Selected, Snapshot,
    SnapshotSource,
};
pub use diff::{ChangeKind, Diff, FileChange};
#[cfg(feature = "docker")]
pub use docker::{import_rootfs, DockerBackend, DockerOptions, DockerSandbox, DEFAULT_IMAGE};
pub use egress::{
    default_egress_program, registries, serve_egress, set_default_egress_program, EgressAllow,
    EgressProgram, EGRESS_READY, PROXY_PORT,
};
pub use error::{Error, Result};
pub use golden::{BuildLock, GoldenInfo, GoldenStatus, Goldens, Hold, OpenedGolden, SavedState};
pub use host::{HostBackend, HostOptions, HostSandbox};
pub use native::{
    NativeBackend, NativeOptions, NativeSandbox, Toolchain, DEFAULT_ID_BASE, MAX_LAYERS,
};
pub use paths::lexical as workspace_path;
pub use protections::{protections, Protection};
pub use pty::{Pty, RawMode};
pub use service::ServiceNetwork;
pub use spec::{
    ExecOutcome, ExecRequest, Limits, Network, OutputChunk, RootFs, SandboxSpec, StreamKind,
    DEFAULT_OUTPUT_CAP, WORKSPACE_DIR,
};
pub use state::{default_state_dir, ensure_private_dir, gc, mounts_under, refuse_link, GcReport};

/// A process on the host, for the few tools that must run outside any
/// sandbox (git, the Docker CLI). It is the one way forq starts a host
/// process, so every such call is easy to find.
pub fn host_command(program: impl AsRef<std::ffi::OsStr>) -> tokio::process::Command {
    #[allow(clippy::disallowed_methods)]
    let mut cmd = tokio::process::Command::new(program);
    cmd.kill_on_drop(true);
    cmd
}
