//! The arguments of the application commands: `forq queue`, `forq runs`,
//! `forq files`, `forq push`, `forq serve`, `forq config`.

use std::path::PathBuf;

use clap::{Args, Subcommand};

#[allow(clippy::wildcard_imports)] // the shared argument groups of the parent
use super::*;

#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Where to listen. Beyond loopback a token is required.
    #[arg(long, default_value = "127.0.0.1:7878", value_name = "ADDR")]
    pub(crate) bind: std::net::SocketAddr,
    /// The token every request must carry (`Authorization: Bearer …`); read
    /// from the environment so it stays out of process listings.
    #[arg(
        long = "token-env",
        default_value = "FORQ_SERVE_TOKEN",
        value_name = "VAR"
    )]
    pub(crate) token_env: String,
    /// Serve without a token when none is in the environment. By default
    /// forq makes one (kept in STATE/serve-token, 0600) and prints the
    /// dashboard's URL with it: on loopback too, another local user or a
    /// web page in your browser reaches the port.
    #[arg(long)]
    pub(crate) no_token: bool,
    /// Only record the runs the API, the dashboard and webhooks start
    /// (queued, in the store): `forq worker` processes sharing --store
    /// drive them.
    #[arg(long)]
    pub(crate) enqueue_only: bool,
    /// A name requests may carry in `Host` besides the bound address
    /// (repeat it): the public name behind a reverse proxy. Other names are
    /// refused (DNS rebinding).
    #[arg(long = "host", value_name = "NAME")]
    pub(crate) hosts: Vec<String>,
    #[command(flatten)]
    pub(crate) state: StateArgs,
    /// The backend runs queued over HTTP use.
    #[command(flatten)]
    pub(crate) backend: BackendArgs,
    #[command(flatten)]
    pub(crate) golden: GoldenArg,
    /// The model runs queued over HTTP use (none: offline fixes only).
    #[command(flatten)]
    pub(crate) model: ModelArgs,
    /// Runs at once.
    #[arg(long, default_value_t = 2)]
    pub(crate) jobs: usize,
    /// Runs at once on one repository.
    #[arg(long, default_value_t = 1)]
    pub(crate) per_repo: usize,
    /// The variable holding the GitHub webhook secret; without one,
    /// `/webhooks/github` takes nothing.
    #[arg(long, default_value = "FORQ_WEBHOOK_SECRET", value_name = "VAR")]
    pub(crate) webhook_secret_env: String,
    /// Whose issues and `/forq` comments a webhook may queue runs for, by
    /// GitHub's author_association (comma-separated; CONTRIBUTOR,
    /// FIRST_TIME_CONTRIBUTOR, NONE widen it). Every run spends your model
    /// key.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "OWNER,MEMBER,COLLABORATOR",
        value_name = "ASSOCIATIONS"
    )]
    pub(crate) webhook_authors: Vec<String>,
    /// Where the dashboard lists issues from, to pick and queue (repeat it):
    /// a directory of Markdown issues (each naming its repository in its
    /// front matter), `DIR=REPO` (issues of DIR on the repository REPO), or
    /// a GitHub repository (its URL, or OWNER/REPO).
    #[arg(long = "source", value_name = "SPEC")]
    pub(crate) sources: Vec<String>,
    /// Stop a preview unused for this many seconds.
    #[arg(long, default_value_t = 900, value_name = "SECS")]
    pub(crate) preview_idle: u64,
    #[command(subcommand)]
    pub(crate) command: Option<ServeCommand>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum ServeCommand {
    /// Measure a `forq serve` process from outside: the 1,000-run list,
    /// event latency from the store to a stream with 20 runs writing, and
    /// its memory with 50 streams open.
    Bench(ServeBenchArgs),
}

#[derive(Debug, Args)]
pub(crate) struct ServeBenchArgs {
    /// One JSON object on stdout.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum ConfigCommand {
    /// Print forq.yml's JSON Schema (for editors: yaml-language-server).
    Schema,
    /// Check forq.yml (of --repo, or FILE) and print the settings in effect,
    /// with the sandbox caps runs get. Exits 1 when it is invalid.
    #[command(visible_alias = "show")]
    Check(ConfigCheckArgs),
}

#[derive(Debug, Args)]
pub(crate) struct ConfigCheckArgs {
    /// The file (default: REPO/forq.yml, else REPO/.forq.yml).
    #[arg(value_name = "FILE")]
    pub(crate) file: Option<PathBuf>,
    /// The repository.
    #[arg(long, default_value = ".")]
    pub(crate) repo: PathBuf,
    /// Print the settings as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ActionName {
    /// Triage, then fix unless the repository's forq.yml says
    /// `actions.fix.mode: manual`.
    Auto,
    /// Triage only.
    Triage,
    /// Triage (when enabled), then fix.
    Fix,
}

#[derive(Debug, Args)]
pub(crate) struct QueueArgs {
    #[command(flatten)]
    pub(crate) golden: GoldenArg,
    /// A directory of Markdown issues (*.md, or DIR/ISSUE.md; front matter
    /// id, title, labels, targets, repo).
    #[arg(long, value_name = "DIR")]
    pub(crate) issues: Option<PathBuf>,
    /// The repository: a directory, or a GitHub URL (whose open issues are
    /// the queue when --issues is not given).
    #[arg(long, value_name = "DIR|URL")]
    pub(crate) repo: Option<String>,
    /// One issue's text instead (on --repo).
    #[arg(long, conflicts_with = "issues")]
    pub(crate) text: Option<String>,
    /// Only issues with this label.
    #[arg(long)]
    pub(crate) label: Option<String>,
    /// At most this many issues.
    #[arg(long)]
    pub(crate) limit: Option<usize>,
    /// Runs at once.
    #[arg(long, default_value_t = 2)]
    pub(crate) jobs: usize,
    /// Runs at once on one repository.
    #[arg(long, default_value_t = 2)]
    pub(crate) per_repo: usize,
    /// auto (fix unless forq.yml's actions.fix.mode is manual), triage
    /// (decide only) or fix (triage when enabled, then fix).
    #[arg(long, value_enum, default_value = "auto")]
    pub(crate) action: ActionName,
    /// A file given to every run as context, copied into its workspace:
    /// SRC, or SRC:DEST with DEST relative to the workspace (repeatable).
    #[arg(long, value_name = "SRC[:DEST]")]
    pub(crate) context: Vec<String>,
    /// Settings for every run instead of each repository's forq.yml.
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// Run issues again that already have a run standing for them (one
    /// not over, or one that ended with a patch); without it they are
    /// skipped, so a queue can be run again and again over a backlog.
    #[arg(long)]
    pub(crate) again: bool,
    /// The environment variable holding the contributor's key, for
    /// contributor-funded runs (never a value on the command line, where
    /// other users see it).
    #[arg(long, value_name = "VAR")]
    pub(crate) contributor_key_env: Option<String>,
    #[command(flatten)]
    pub(crate) model: ModelArgs,
    #[command(flatten)]
    pub(crate) backend: BackendArgs,
    #[command(flatten)]
    pub(crate) engines: EngineArgs,
    #[command(flatten)]
    pub(crate) state: StateArgs,
    /// Only record the runs, queued, and print them: `forq worker`
    /// processes (on this machine or others sharing --store) drive them.
    #[arg(long)]
    pub(crate) enqueue: bool,
    /// A label the worker that takes a run up must offer (`native`,
    /// `x86_64`, one of its --label; repeatable): with --enqueue.
    #[arg(long, value_name = "LABEL", requires = "enqueue")]
    pub(crate) require: Vec<String>,
    /// Print the runs as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `forq worker`.
#[derive(Debug, Args)]
pub(crate) struct WorkerArgs {
    #[command(flatten)]
    pub(crate) golden: GoldenArg,
    /// The worker's name in the store, unique in the fleet (default: this
    /// machine's host name).
    #[arg(long, env = "FORQ_WORKER_NAME")]
    pub(crate) name: Option<String>,
    /// Runs at once.
    #[arg(long, default_value_t = 2)]
    pub(crate) jobs: usize,
    /// Seconds a run stays this worker's without a word from it: past
    /// them (the worker died, or its machine went away), another worker
    /// takes the run up from its last checkpoint. Renewed three times a
    /// lease.
    #[arg(long, default_value_t = 30.0, value_name = "SECONDS")]
    pub(crate) lease: f64,
    /// Seconds between looks for work (and heartbeats).
    #[arg(long, default_value_t = 1.0, value_name = "SECONDS")]
    pub(crate) poll: f64,
    /// What this worker offers, shown on the dashboard (repeatable; the
    /// backend and architecture are added).
    #[arg(long)]
    pub(crate) label: Vec<String>,
    /// Stop once no run in the store is left to do (a batch, a CI job).
    #[arg(long)]
    pub(crate) exit_when_idle: bool,
    #[command(flatten)]
    pub(crate) local_repos: LocalReposArg,
    /// Seconds the worker's runs may go on after SIGTERM or Ctrl-C before
    /// they are handed back (another worker resumes them).
    #[arg(long, default_value_t = 60.0, value_name = "SECONDS")]
    pub(crate) grace: f64,
    /// Settings for every run instead of each repository's forq.yml.
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// The environment variable holding the contributor's key, for
    /// contributor-funded runs.
    #[arg(long, value_name = "VAR")]
    pub(crate) contributor_key_env: Option<String>,
    #[command(flatten)]
    pub(crate) model: ModelArgs,
    #[command(flatten)]
    pub(crate) backend: BackendArgs,
    #[command(flatten)]
    pub(crate) state: StateArgs,
    /// Print what the worker did as JSON when it stops.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct RunsArgs {
    #[command(subcommand)]
    pub(crate) command: Option<RunsCommand>,
    /// At most this many runs, newest first.
    #[arg(long, default_value_t = 50)]
    pub(crate) limit: usize,
    /// Only runs in this state (queued, triaging, provisioning,
    /// implementing, testing, triaged, patch_ready, pr_opened, needs_human,
    /// aborted, failed), or `interrupted`: unfinished, with no process on
    /// them.
    #[arg(long, value_name = "STATE")]
    pub(crate) outcome: Option<String>,
    #[command(flatten)]
    pub(crate) state: StateArgs,
    /// Print JSON.
    #[arg(long, global = true)]
    pub(crate) json: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum RunsCommand {
    /// One run: its issue, state, outcome and events.
    Show(RunIdArgs),
    /// Print a run's patch (`fix.patch`), from the store: on any machine
    /// that shares it, whichever machine ran the run.
    Patch(RunIdArgs),
    /// Follow a run's events as they happen, until it ends.
    Tail(RunIdArgs),
    /// Stop a run (the process working on it stops at once).
    Abort(RunIdArgs),
    /// Continue an interrupted run from its last checkpoint (or, with
    /// --interrupted, every one: after a crash or a reboot).
    Resume(ResumeArgs),
    /// Approve a run paused for review (forq.yml `review:`), and drive it on
    /// from its checkpoint to its end.
    Approve(ApproveArgs),
    /// Reject a run paused for review: it is aborted with the reason.
    Reject(RejectArgs),
    /// Remove the workspaces of runs that are over (their records stay);
    /// those with an unpushed patch only with --patched.
    Clean(CleanArgs),
    /// Comment on a run's GitHub issue or pull request.
    Comment(CommentArgs),
    /// Add labels to a run's GitHub issue or pull request.
    Label(LabelArgs),
    /// Close a run's GitHub issue, with a comment first when given.
    Close(CloseArgs),
}

#[derive(Debug, Args)]
pub(crate) struct CommentArgs {
    /// The run's id (or a prefix of it).
    pub(crate) id: String,
    /// The comment (Markdown).
    pub(crate) body: String,
}

#[derive(Debug, Args)]
pub(crate) struct LabelArgs {
    /// The run's id (or a prefix of it).
    pub(crate) id: String,
    /// The labels to add.
    #[arg(required = true)]
    pub(crate) labels: Vec<String>,
}

#[derive(Debug, Args)]
pub(crate) struct CloseArgs {
    /// The run's id (or a prefix of it).
    pub(crate) id: String,
    /// Comment this first.
    #[arg(long)]
    pub(crate) comment: Option<String>,
}

/// Which of this machine's directories runs from a shared store may read
/// their repository from.
#[derive(Debug, Args, Default)]
pub(crate) struct LocalReposArg {
    /// A directory of this machine whose repositories runs from a shared
    /// (PostgreSQL) store may be seeded from (repeatable). A row of a
    /// shared store is any worker's word, so without it such runs must name
    /// a git URL; a store on this machine's disk needs none.
    #[arg(long = "local-repos", value_name = "DIR")]
    pub(crate) dirs: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct ApproveArgs {
    /// The run's id (or a prefix of it).
    pub(crate) id: String,
    #[command(flatten)]
    pub(crate) local_repos: LocalReposArg,
    /// Settings instead of the repository's forq.yml.
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) model: ModelArgs,
    #[command(flatten)]
    pub(crate) backend: BackendArgs,
    #[command(flatten)]
    pub(crate) engines: EngineArgs,
}

#[derive(Debug, Args)]
pub(crate) struct RejectArgs {
    /// The run's id (or a prefix of it).
    pub(crate) id: String,
    /// Why, for the record.
    #[arg(long, default_value = "")]
    pub(crate) reason: String,
}

#[derive(Debug, Args)]
pub(crate) struct RunIdArgs {
    /// The run's id (or a prefix of it).
    pub(crate) id: String,
}

#[derive(Debug, Args)]
pub(crate) struct CleanArgs {
    /// Also the workspaces of patch_ready runs, whose branches live only
    /// there until pushed.
    #[arg(long)]
    pub(crate) patched: bool,
}

#[derive(Debug, Args)]
pub(crate) struct ResumeArgs {
    /// The run's id (or a prefix of it).
    #[arg(
        required_unless_present = "interrupted",
        conflicts_with = "interrupted"
    )]
    pub(crate) id: Option<String>,
    /// Every unfinished run no process works on, oldest first.
    #[arg(long)]
    pub(crate) interrupted: bool,
    /// With --interrupted: runs at once.
    #[arg(long, default_value_t = 2)]
    pub(crate) jobs: usize,
    /// With --interrupted: runs at once on one repository.
    #[arg(long, default_value_t = 2)]
    pub(crate) per_repo: usize,
    #[command(flatten)]
    pub(crate) local_repos: LocalReposArg,
    /// Settings instead of the repository's forq.yml.
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) model: ModelArgs,
    #[command(flatten)]
    pub(crate) backend: BackendArgs,
    #[command(flatten)]
    pub(crate) engines: EngineArgs,
}

#[derive(Debug, Args)]
pub(crate) struct FilesArgs {
    /// The run's id (or a prefix of it).
    pub(crate) id: String,
    /// Absolute paths.
    #[arg(long)]
    pub(crate) abs: bool,
    /// One bare path per line, even on a terminal.
    #[arg(long)]
    pub(crate) plain: bool,
    #[command(flatten)]
    pub(crate) state: StateArgs,
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct PushArgs {
    /// The run's id (or a prefix of it).
    pub(crate) id: String,
    /// The remote: a name configured in the workspace (default origin, the
    /// repository the run was seeded from), an https:// or ssh:// URL, or an
    /// absolute path to a repository on this machine (its hooks do not
    /// run). Never a relative path: it would resolve inside the workspace.
    #[arg(long)]
    pub(crate) remote: Option<String>,
    /// Open a pull request on GitHub (GITHUB_TOKEN; GITHUB_API_URL for
    /// GitHub Enterprise).
    #[arg(long)]
    pub(crate) pr: bool,
    /// The GitHub repository for --pr, OWNER/REPO (default: from the
    /// issue's or the remote's URL).
    #[arg(long)]
    pub(crate) github: Option<String>,
    /// The branch the pull request goes into (default: the branch the run
    /// was seeded from).
    #[arg(long)]
    pub(crate) base: Option<String>,
    #[command(flatten)]
    pub(crate) state: StateArgs,
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
}
