#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

mod backend;
mod beneath;
mod diff;
#[cfg(feature = "docker")]
mod docker;
mod egress;
mod error;
mod golden;
mod host;
#[cfg(target_os = "linux")]
mod native;
mod os;
mod output;
mod paths;
#[cfg(target_os = "linux")]
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
pub use golden::{
    BuildLock, GoldenInfo, GoldenStatus, Goldens, Hold, OpenedGolden, SavedState, GOLDEN_LOCK_WAIT,
};
pub use host::{HostBackend, HostOptions, HostSandbox};
#[cfg(target_os = "linux")]
pub use native::{
    NativeBackend, NativeOptions, NativeSandbox, Toolchain, DEFAULT_ID_BASE, MAX_LAYERS,
};
pub use paths::lexical as workspace_path;
#[cfg(target_os = "linux")]
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

/// The regular file `rel` beneath the directory `root` — a tree a
/// stranger controls (a repository, a workspace) — read on the host the
/// way forq reads diffs: resolved one component at a time from `root`'s
/// descriptor, never through a link (one anywhere on the way, or the file
/// itself, is "not there"), never a fifo or a device (`None`, without
/// blocking), and never past `max` bytes (an error naming the cap, read no
/// further, whatever size the file claims). `rel` must stay beneath
/// `root` (no `..`, not absolute).
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::write(dir.path().join("a.toml"), "x = 1\n").unwrap();
/// std::os::unix::fs::symlink("/etc/hostname", dir.path().join("b.toml")).unwrap();
/// let read = |rel: &str, max| forq_sandbox::read_beneath(dir.path(), rel.as_ref(), max);
/// assert_eq!(read("a.toml", 64).unwrap().as_deref(), Some(&b"x = 1\n"[..]));
/// assert_eq!(read("b.toml", 64).unwrap(), None);
/// assert!(read("a.toml", 2).is_err());
/// assert_eq!(read("../etc/hostname", 64).unwrap(), None);
/// ```
pub fn read_beneath(
    root: &std::path::Path,
    rel: &std::path::Path,
    max: u64,
) -> std::io::Result<Option<Vec<u8>>> {
    match beneath::Tree::open(root)? {
        Some(tree) => tree.read_capped(rel, max),
        None => Ok(None),
    }
}

/// git on the host, as forq runs it on a repository that is not its own
/// (a clone, a workspace, a restored branch): the machine's system and
/// global settings are not read (`GIT_CONFIG_NOSYSTEM`, and
/// `GIT_CONFIG_GLOBAL=/dev/null`: an operator's aliases, `url.insteadOf`,
/// credential helpers and filters — git-lfs installs one — do not act on
/// a stranger's repository), LFS never downloads (a repository's
/// `.lfsconfig` would choose the URL), nothing prompts, and a `GIT_DIR` or
/// index of forq's own environment cannot point git elsewhere. Callers
/// add their own `-c` settings and arguments.
pub fn host_git() -> tokio::process::Command {
    let mut cmd = host_command("git");
    cmd.env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_ATTR_NOSYSTEM", "1")
        .env("GIT_LFS_SKIP_SMUDGE", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_ASKPASS", "true")
        .env("SSH_ASKPASS", "true");
    for var in [
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_CONFIG",
        "GIT_CONFIG_PARAMETERS",
        "GIT_CONFIG_COUNT",
        "GIT_EXEC_PATH",
        "GIT_SSH",
        "GIT_PROXY_COMMAND",
    ] {
        cmd.env_remove(var);
    }
    cmd
}
