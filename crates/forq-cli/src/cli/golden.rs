//! The arguments of `forq golden`.

use std::path::PathBuf;

use clap::{Args, Subcommand};

#[allow(clippy::wildcard_imports)] // the shared argument groups of the parent
use super::*;

#[derive(Debug, Subcommand)]
pub(crate) enum GoldenCommand {
    /// Build the repository's golden (or sync it from its previous
    /// generation when the tree moved on); a no-op when it is current.
    /// Exits 0 built or current, 1 when its tests do not run.
    Build(GoldenBuildArgs),
    /// Bring an existing golden to the repository's current commit
    /// (incremental: install steps run again only when what decides them
    /// changed). Exits 1 when there is none yet, or its tests stop running.
    Sync(GoldenBuildArgs),
    /// Whether the repository's golden matches its current tree.
    Status(GoldenBuildArgs),
    /// Every golden of the backend, with its size and last use.
    List(GoldenListArgs),
    /// Remove a golden (exits 1 when a run still uses it).
    Rm(GoldenRmArgs),
    /// Remove the least recently used goldens until the rest fit the cap.
    Gc(GoldenGcArgs),
    /// Time from a run's start to its first test result, with a warm
    /// golden and without, side by side, on each project given.
    Bench(GoldenBenchArgs),
}

#[derive(Debug, Args)]
pub(crate) struct GoldenBenchArgs {
    /// Project directories (each copied into a git repository of its own;
    /// default: benches/golden/*).
    #[arg(value_name = "DIR")]
    pub(crate) projects: Vec<PathBuf>,
    #[command(flatten)]
    pub(crate) backend: BackendArgs,
    /// Cold and warm runs per project (alternating).
    #[arg(long, default_value_t = 3)]
    pub(crate) iterations: usize,
    /// One JSON array on stdout.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct GoldenBuildArgs {
    /// The repository: a directory (default: the current one), or a git URL
    /// to clone shallow first (its URL is then its identity).
    #[arg(default_value = ".", value_name = "PATH | GIT_URL")]
    pub(crate) source: String,
    #[command(flatten)]
    pub(crate) backend: BackendArgs,
    /// Build from scratch, whatever is kept (mends a broken golden).
    #[arg(long)]
    pub(crate) rebuild: bool,
    /// Cap on each install step and on the test run, in seconds.
    #[arg(long)]
    pub(crate) timeout: Option<u64>,
    /// One JSON object on stdout.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct GoldenListArgs {
    #[command(flatten)]
    pub(crate) backend: BackendArgs,
    /// One JSON array on stdout.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct GoldenRmArgs {
    /// The golden's name (as `forq golden list` shows it).
    pub(crate) name: String,
    #[command(flatten)]
    pub(crate) backend: BackendArgs,
    /// One JSON object on stdout.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct GoldenGcArgs {
    /// Keep at most this many GiB of goldens (default: --config's
    /// `sandbox.golden_max_gb`, else FORQ_GOLDEN_MAX_GB, else 20).
    #[arg(long, value_name = "GIB")]
    pub(crate) max_gb: Option<f64>,
    /// The operator's forq.yml, for `sandbox.golden_max_gb`.
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) backend: BackendArgs,
    /// One JSON object on stdout.
    #[arg(long)]
    pub(crate) json: bool,
}
