//! The arguments of `forq sandbox` and `forq doctor`.

use std::path::PathBuf;

use clap::{Args, Subcommand};

#[allow(clippy::wildcard_imports)] // the shared argument groups of the parent
use super::*;

#[derive(Debug, Subcommand)]
pub(crate) enum SandboxCommand {
    /// Run one command in a fresh sandbox over a repository; exits with its
    /// exit code (128 + signal when killed).
    Run(RunArgs),
    /// Measure create, fork, exec, diff and destroy side by side.
    Bench(BenchArgs),
    /// Remove mounts, directories and containers left by dead forq processes.
    Gc(GcArgs),
}

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    #[command(flatten)]
    pub(crate) backend: BackendArgs,
    /// The repository (default: the current directory).
    #[arg(long, default_value = ".")]
    pub(crate) repo: PathBuf,
    /// Wall-clock cap in seconds.
    #[arg(long)]
    pub(crate) timeout: Option<f64>,
    /// Kill the command after this many seconds without output.
    #[arg(long)]
    pub(crate) idle_timeout: Option<f64>,
    /// Memory cap: bytes, or with a K, M or G suffix.
    #[arg(long, value_parser = parse_size)]
    pub(crate) memory: Option<u64>,
    /// Cap on processes and threads.
    #[arg(long)]
    pub(crate) pids: Option<u64>,
    /// CPU cap in cores.
    #[arg(long)]
    pub(crate) cpus: Option<f64>,
    /// none (loopback only), proxy (forq's egress proxy, reaching only
    /// FORQ_EGRESS_ALLOW's hosts) or host.
    #[arg(long, default_value = "none")]
    pub(crate) network: Network,
    /// Give the command a pseudo-terminal of its own (an interactive shell,
    /// an editor), relayed to this one; standard input must be a terminal.
    /// Your own terminal never reaches the sandbox.
    #[arg(short = 't', long)]
    pub(crate) tty: bool,
    /// A root filesystem directory for the native backend, instead of a
    /// read-only view of the host's.
    #[arg(long)]
    pub(crate) rootfs: Option<PathBuf>,
    /// Print the diff of what the command changed when it ends (stderr).
    #[arg(long)]
    pub(crate) diff: bool,
    /// The command and its arguments.
    #[arg(last = true, required = true)]
    pub(crate) command: Vec<String>,
}

#[derive(Debug, Args)]
pub(crate) struct BenchArgs {
    /// Backends to measure, in one run (repeat or comma-separate).
    #[arg(long, value_delimiter = ',', default_value = "auto")]
    pub(crate) backend: Vec<BackendChoice>,
    /// Docker image for the docker backend.
    #[arg(long)]
    pub(crate) image: Option<String>,
    /// Iterations per backend (at least 50 for the published figures).
    #[arg(long, default_value_t = 50)]
    pub(crate) iterations: usize,
    /// Files in the generated workspace.
    #[arg(long, default_value_t = 10_000)]
    pub(crate) files: usize,
    /// Print JSON (one object per backend, in an array when several).
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct GcArgs {
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct DoctorArgs {
    /// One JSON object per line: backend, name, in_force, detail.
    #[arg(long)]
    pub(crate) json: bool,
}
