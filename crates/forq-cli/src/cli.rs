//! Command-line arguments and logging setup.

use forq_search::plan::{BrancherKind, StrategyKind};
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use forq_sandbox::{BackendChoice, Network};

/// forq burns down a repository's issue backlog with coding agents, inside
/// isolated, copy-on-write sandboxes.
#[derive(Debug, Parser)]
#[command(name = "forq", version, about)]
pub(crate) struct Cli {
    /// More logs on stderr (-v info, -vv debug); RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub(crate) verbose: u8,
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run commands in sandboxes, measure them, clean up after them.
    #[command(subcommand)]
    Sandbox(SandboxCommand),
    /// Index a repository into a code graph and query it.
    #[command(subcommand)]
    Graph(GraphCommand),
    /// Prove a repository's own tests run (the bootstrap gate); exits 0
    /// bootstrapped or skipped, 1 failed_deterministic, 2
    /// unsupported_ecosystem, 3 failed_agentic.
    Bootstrap(BootstrapArgs),
    /// Decide whether forq should act on an issue (one structured call to a
    /// model); exits 0 when a fix should be attempted, 1 when not.
    Triage(TriageArgs),
    /// Run the coding agent on an issue.
    #[command(subcommand)]
    Agent(AgentCommand),
    /// Fix an issue: the bootstrap gate (cached), the oracle (the tests
    /// that fail, and those that must keep passing), then one agent pass or
    /// a tree search over copy-on-write forks; writes the smallest green
    /// patch. Exits 0 solved, 1 not solved.
    Fix(FixArgs),
    /// Change one definition's behaviour with a model: its covering tests
    /// found first, tests for the new behaviour written (they must fail
    /// now), the definition changed until they pass with the whole suite
    /// green, then the change classified (A/B/C) with the callers it
    /// reaches. Takes `forq fix`'s options. Exits 0 when a green patch was
    /// found, 1 when not.
    Modify(ModifyArgs),
    /// Rename a definition everywhere the code graph says it is used
    /// (definition, calls, qualified uses, imports, tests), no model; the
    /// repository's tests run on the result in a sandbox. Writes the patch
    /// (your tree is left alone). Exits 0 when every passing test still
    /// passes, 1 when one breaks (no patch).
    Rename(RenameArgs),
    /// Write docs (docstrings, doc comments) for a definition or for every
    /// public one that has none, with a model; nothing but docs may change
    /// (the code outside them stays byte-identical, or the change is
    /// refused), and the tests run on the result in a sandbox. Writes the
    /// patch. Exits 0 when written and green, 1 when refused or a test
    /// broke (no patch).
    Document(DocumentArgs),
    /// Read-only findings from the code graph: definitions without docs,
    /// functions over a complexity bound, call sites that break their
    /// callee's pattern, definitions nothing uses. With --issues DIR, one
    /// Markdown issue per finding, which `forq queue --issues DIR` reads.
    Audit(AuditArgs),
    /// The fix search's own tools.
    #[command(subcommand)]
    Search(SearchCommand),
    /// forq.yml: print its JSON Schema, or check a file.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Burn down a backlog: select issues (a Markdown directory, a GitHub
    /// repository, or --text), make a run of each, run them in parallel.
    /// Exits 0 when every run reached its goal (patch_ready, triaged), 1
    /// when some need a human (completed_with_findings, needs_review
    /// included) or were aborted, 2 when some failed.
    Queue(QueueArgs),
    /// List runs, or show, follow, abort or resume one.
    Runs(RunsArgs),
    /// Run forq on benchmark instances in SWE-bench's format (JSONL) and
    /// judge its predictions: each instance checked out at its base
    /// commit, fixed by a run, then its FAIL_TO_PASS and PASS_TO_PASS
    /// tests run over the prediction and the test patch. Writes
    /// predictions.jsonl (SWE-bench's harness reads it), results.jsonl
    /// and report.json under --out; a rerun resumes. Exits 0 when every
    /// instance was judged, 1 when some could not be set up or failed.
    Eval(EvalArgs),
    /// List a run's workspace files (one bare path per line with --plain,
    /// or whenever stdout is not a terminal).
    Files(FilesArgs),
    /// Push a finished run's branch (run by a person: forq never pushes on
    /// its own), and open a pull request with --pr. Exits 1 when the
    /// remote's branch is not the run's (nothing is forced over it).
    Push(PushArgs),
    /// Say which protections isolate sandboxes on this machine, backend by
    /// backend, and which do not and why.
    Doctor(DoctorArgs),
    /// Golden environments: a repository's warm sandbox (installed, built,
    /// tests run once) kept so that runs fork it instead of installing.
    #[command(subcommand)]
    Golden(GoldenCommand),
    /// Serve the control plane over HTTP: a JSON API over the run store
    /// (documented at /openapi.json) and live Server-Sent Event streams of
    /// runs, including those other forq processes drive.
    Serve(ServeArgs),
    /// forq's egress proxy as a program of its own: what the docker backend
    /// runs in a sidecar container on an engine forq cannot enter. Listens
    /// on 0.0.0.0:3128 and lets through what FORQ_EGRESS_ALLOW names.
    #[command(hide = true)]
    EgressProxy,
}

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

/// Where a change that must keep behaviour (rename, document) is tested,
/// and where its patch goes.
#[derive(Debug, Args)]
pub(crate) struct ChangeArgs {
    /// The repository.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub(crate) repo: PathBuf,
    #[command(flatten)]
    pub(crate) golden: GoldenArg,
    #[command(flatten)]
    pub(crate) backend: BackendArgs,
    /// Cap on the test run, in seconds.
    #[arg(long, default_value_t = forq_search::oracle::DEFAULT_TEST_TIMEOUT_S, value_name = "S")]
    pub(crate) test_timeout: u64,
    /// Where fix.patch, tree.json and summary.json go (default:
    /// REPO/.forq/COMMAND/ID).
    #[arg(long, value_name = "DIR")]
    pub(crate) out: Option<PathBuf>,
    /// Print the summary as JSON (the patch file under `patch`).
    #[arg(long)]
    pub(crate) json: bool,
}

/// What `forq modify` hands `forq fix`: the definition, as it is now.
#[derive(Debug, Clone, Default)]
pub(crate) struct ModifyTarget {
    /// The definition.
    pub(crate) symbol: Option<forq_graph::Symbol>,
    /// Its source now.
    pub(crate) old: String,
    /// How far callers are listed.
    pub(crate) depth: u32,
}

/// `forq modify`.
#[derive(Debug, Args)]
pub(crate) struct ModifyArgs {
    /// The definition: an id, a qualified or bare name, or FILE:LINE.
    #[arg(value_name = "SYMBOL")]
    pub(crate) symbol: String,
    /// The behaviour it should have, in words.
    #[arg(long, value_name = "TEXT")]
    pub(crate) change: String,
    /// How far the callers of an incompatible change are listed.
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub(crate) ripple_depth: u32,
    #[command(flatten)]
    pub(crate) fix: FixArgs,
}

/// `forq rename`.
#[derive(Debug, Args)]
pub(crate) struct RenameArgs {
    /// The definition: an id (`pkg/store.py#load:function`), a qualified
    /// or bare name, or FILE:LINE. A name several definitions have is
    /// refused with their ids.
    #[arg(value_name = "OLD")]
    pub(crate) old: String,
    /// Its new name.
    #[arg(value_name = "NEW")]
    pub(crate) new: String,
    /// Print where it would change and stop (no sandbox, no tests).
    #[arg(long)]
    pub(crate) dry_run: bool,
    #[command(flatten)]
    pub(crate) change: ChangeArgs,
}

/// `forq audit`.
#[derive(Debug, Args)]
pub(crate) struct AuditArgs {
    /// What to look for (repeatable): undocumented, complexity>N
    /// (complexity alone: over 10), suspected, unused. Default: all four.
    #[arg(long = "query", value_name = "Q", value_parser = parse_audit_query)]
    pub(crate) queries: Vec<forq_graph::AuditQuery>,
    /// At most this many findings of each query.
    #[arg(long, default_value_t = 50, value_name = "N")]
    pub(crate) limit: usize,
    /// Also write each finding as a Markdown issue into DIR (created),
    /// for `forq queue --issues DIR`.
    #[arg(long, value_name = "DIR")]
    pub(crate) issues: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) repo: GraphRepo,
}

fn parse_audit_query(s: &str) -> Result<forq_graph::AuditQuery, String> {
    s.parse()
}

/// `forq document`.
#[derive(Debug, Args)]
pub(crate) struct DocumentArgs {
    /// The definition: an id, a qualified or bare name, or FILE:LINE.
    #[arg(value_name = "SYMBOL", required_unless_present = "missing")]
    pub(crate) symbol: Option<String>,
    /// Every public function, method and type without docs instead (not
    /// tests, not `_private`, not nested), at most --limit.
    #[arg(long, conflicts_with = "symbol")]
    pub(crate) missing: bool,
    /// At most this many definitions with --missing.
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub(crate) limit: usize,
    #[command(flatten)]
    pub(crate) model: ModelArgs,
    #[command(flatten)]
    pub(crate) change: ChangeArgs,
}

/// The `--golden` flag of the commands that make warm sandboxes.
#[derive(Debug, Clone, Copy, Args)]
pub(crate) struct GoldenArg {
    /// The repository's golden environment: use (fork it when one matches
    /// the tree, else install), build (build or sync it first when none
    /// matches, then fork it), off (install every time).
    #[arg(long, value_enum, default_value_t = GoldenMode::Use, value_name = "MODE")]
    pub(crate) golden: GoldenMode,
}

/// How a run uses the repository's golden environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub(crate) enum GoldenMode {
    /// Fork it when one matches the tree; else install as usual.
    #[default]
    Use,
    /// Build it (or sync it) first when none matches, then fork it.
    Build,
    /// Install from scratch every time.
    Off,
}

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

#[derive(Debug, Args)]
pub(crate) struct DoctorArgs {
    /// One JSON object per line: backend, name, in_force, detail.
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

/// Where forq keeps its runs.
#[derive(Debug, Args)]
pub(crate) struct StateArgs {
    /// forq's state directory: the run store (forq.db) and each run's
    /// workspace and records.
    #[arg(long, env = "FORQ_STATE", default_value = ".forq", global = true)]
    pub(crate) state: PathBuf,
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
    /// Print the runs as JSON.
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
}

#[derive(Debug, Args)]
pub(crate) struct ApproveArgs {
    /// The run's id (or a prefix of it).
    pub(crate) id: String,
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

#[derive(Debug, Subcommand)]
pub(crate) enum SearchCommand {
    /// Compare expansion orders and fork-based against cold-copy evaluation
    /// side by side, over the examples.
    Bench(SearchBenchArgs),
}

#[derive(Debug, Args)]
pub(crate) struct SearchBenchArgs {
    /// Example directories (default: every directory under examples/ with
    /// an ISSUE.md). A directory's TARGETS file, if any, names the tests
    /// to fix, one per line (else every failing test is a target).
    #[arg(value_name = "DIR")]
    pub(crate) examples: Vec<PathBuf>,
    /// Most candidates evaluated per search.
    #[arg(long, default_value_t = 60)]
    pub(crate) max_nodes: usize,
    /// Most wall-clock seconds per search (a search that runs out unsolved
    /// counts as timed out).
    #[arg(long, value_name = "S")]
    pub(crate) max_time: Option<u64>,
    /// Candidates evaluated each way for the throughput comparison.
    #[arg(long, default_value_t = 6)]
    pub(crate) throughput_candidates: usize,
    /// The example with a non-trivial install for the throughput
    /// comparison (default: examples/py-venv-median).
    #[arg(long, value_name = "DIR")]
    pub(crate) heavy: Option<PathBuf>,
    /// Skip the throughput comparison.
    #[arg(long)]
    pub(crate) no_throughput: bool,
    /// Compare the repair spaces (the `mutate` brancher against
    /// `templates`, best-first) instead of the expansion orders.
    #[arg(long)]
    pub(crate) spaces: bool,
    /// Each test's budget on the unmodified code, in seconds (as `forq
    /// fix --test-idle`).
    #[arg(long, value_name = "S", value_parser = seconds)]
    pub(crate) test_idle: Option<f64>,
    /// Evaluations at once.
    #[arg(long)]
    pub(crate) jobs: Option<usize>,
    #[command(flatten)]
    pub(crate) backend: BackendArgs,
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct EvalArgs {
    /// The instances: one JSON object per line (`instance_id`, `repo`,
    /// `base_commit`, `problem_statement`, `test_patch`, `FAIL_TO_PASS`,
    /// `PASS_TO_PASS`, …).
    #[arg(value_name = "INSTANCES.jsonl")]
    pub(crate) instances: PathBuf,
    /// Where predictions.jsonl, results.jsonl, report.json and the runs
    /// go; a rerun into it resumes.
    #[arg(long, value_name = "DIR")]
    pub(crate) out: PathBuf,
    /// Local repositories, one git repository per instance repository,
    /// named NAME (`toolz` for toolz/toolz) or OWNER__NAME (default: clone
    /// each from GitHub).
    #[arg(long, value_name = "DIR")]
    pub(crate) repos: Option<PathBuf>,
    /// Let forq see the tests: apply the test patch first and target the
    /// FAIL_TO_PASS tests (a repair benchmark's setting; results are not
    /// comparable with SWE-bench's hidden-test setting).
    #[arg(long)]
    pub(crate) with_tests: bool,
    /// Instances at once.
    #[arg(long, default_value_t = 1)]
    pub(crate) jobs: usize,
    /// `model_name_or_path` in the predictions (default: forq and its
    /// brancher, e.g. forq-mutate).
    #[arg(long, value_name = "NAME")]
    pub(crate) model_name: Option<String>,
    /// Settings for every instance's run (forq.yml's format); the flags
    /// below override them.
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// single or speculative (default: the settings', else speculative).
    #[arg(long, value_parser = strategy_kind())]
    pub(crate) strategy: Option<StrategyKind>,
    /// mutate, llm or agent (default: the settings', else mutate for
    /// speculative and agent for single).
    #[arg(long, value_parser = brancher_kind())]
    pub(crate) brancher: Option<BrancherKind>,
    /// Most candidates evaluated per instance.
    #[arg(long)]
    pub(crate) max_nodes: Option<usize>,
    /// Most wall-clock seconds of search per instance.
    #[arg(long, value_name = "S")]
    pub(crate) max_time: Option<u64>,
    /// Most model calls of the agent per instance.
    #[arg(long)]
    pub(crate) max_steps: Option<u32>,
    /// Most dollars per instance (needs --prices for the model).
    #[arg(long, value_name = "USD")]
    pub(crate) max_cost: Option<f64>,
    /// Cap on each run of the tests, in seconds (searching and judging).
    #[arg(long, default_value_t = forq_search::oracle::DEFAULT_TEST_TIMEOUT_S, value_name = "S")]
    pub(crate) test_timeout: u64,
    #[command(flatten)]
    pub(crate) model: ModelArgs,
    #[command(flatten)]
    pub(crate) backend: BackendArgs,
    /// Print the report as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// forq-search's strategy names, as a flag's possible values.
fn strategy_kind() -> impl clap::builder::TypedValueParser<Value = StrategyKind> {
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(StrategyKind::names())
        .map(|s| s.parse().expect("one of the names listed"))
}

/// forq-search's brancher names, as a flag's possible values.
fn brancher_kind() -> impl clap::builder::TypedValueParser<Value = BrancherKind> {
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(BrancherKind::names())
        .map(|s| s.parse().expect("one of the names listed"))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum CodingAgentName {
    Forq,
    ClaudeCode,
    Codex,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum OrderName {
    BestFirst,
    BreadthFirst,
    Random,
}

#[derive(Debug, Args)]
pub(crate) struct FixArgs {
    /// Set by `forq modify`: the definition whose change is classified
    /// once a green patch is found.
    #[arg(skip)]
    pub(crate) modify: Option<ModifyTarget>,
    #[command(flatten)]
    pub(crate) golden: GoldenArg,
    /// A repository or example directory (its ISSUE.md, if any, is the
    /// issue), a GitHub issue URL, or a Markdown issue file (with --repo).
    #[arg(value_name = "ISSUE_OR_DIR", conflicts_with = "text")]
    pub(crate) issue: Option<String>,
    /// The issue's text.
    #[arg(long, value_name = "TEXT")]
    pub(crate) text: Option<String>,
    /// The repository (default: ISSUE_OR_DIR when it is a directory, else
    /// the current directory).
    #[arg(long, value_name = "DIR")]
    pub(crate) repo: Option<PathBuf>,
    /// single (one agent pass, then the oracle) or speculative (the tree
    /// search).
    #[arg(long, value_parser = strategy_kind(), default_value = "speculative")]
    pub(crate) strategy: StrategyKind,
    /// Who proposes candidates: mutate (no model), patches (--patches
    /// files), llm (a model's hypotheses), agent (a coding agent's pass;
    /// the default of --strategy single).
    #[arg(long, value_parser = brancher_kind())]
    pub(crate) brancher: Option<BrancherKind>,
    /// Candidate files or directories for --brancher patches: unified
    /// diffs (*.patch, *.diff) or search/replace blocks.
    #[arg(long = "patches", value_name = "PATH")]
    pub(crate) patches: Vec<PathBuf>,
    /// A test that captures the issue (repeatable; default: every test
    /// failing on the unmodified code).
    #[arg(long = "target", value_name = "TEST_ID")]
    pub(crate) targets: Vec<String>,
    /// Most candidates evaluated.
    #[arg(long, default_value_t = forq_search::DEFAULT_MAX_NODES)]
    pub(crate) max_nodes: usize,
    /// Most edits stacked.
    #[arg(long, default_value_t = forq_search::DEFAULT_MAX_DEPTH)]
    pub(crate) max_depth: usize,
    /// Evaluations at once (default: the cores).
    #[arg(long)]
    pub(crate) jobs: Option<usize>,
    /// Candidates asked per node (default: 200 for mutate, 3 for llm).
    #[arg(long, value_name = "K")]
    pub(crate) branching: Option<usize>,
    /// Expansion order.
    #[arg(long, value_enum, default_value = "best-first")]
    pub(crate) order: OrderName,
    /// After the first green patch, keep searching for a smaller one.
    #[arg(long)]
    pub(crate) keep_searching: bool,
    /// Most wall-clock seconds for the search.
    #[arg(long, value_name = "S")]
    pub(crate) max_time: Option<u64>,
    /// Cap on each test run, in seconds (a candidate that hangs is red).
    #[arg(long, default_value_t = forq_search::oracle::DEFAULT_TEST_TIMEOUT_S, value_name = "S")]
    pub(crate) test_timeout: u64,
    /// Each test's budget on the unmodified code, in seconds: a test
    /// silent this long hangs, is killed and failed (0: none; default 60
    /// for pytest and unittest, which print each test as it starts; none
    /// for the others).
    /// Candidates get budgets from the unmodified code's measured time.
    #[arg(long, value_name = "S", value_parser = seconds)]
    pub(crate) test_idle: Option<f64>,
    /// Most model calls of the agent (--brancher agent).
    #[arg(long, default_value_t = forq_agent::agent::DEFAULT_MAX_STEPS)]
    pub(crate) max_steps: u32,
    /// The coding agent of --brancher agent: forq's own, or a program run
    /// inside the sandbox — Claude Code (`claude` on its PATH;
    /// ANTHROPIC_API_KEY, and ANTHROPIC_BASE_URL when set) or Codex CLI
    /// (`codex`; OPENAI_API_KEY, and OPENAI_BASE_URL when set); it reaches
    /// only its model's host.
    #[arg(long, value_enum, default_value = "forq")]
    pub(crate) coding_agent: CodingAgentName,
    /// Most dollars spent on the model (llm and agent branchers; needs
    /// --prices for the model).
    #[arg(long, value_name = "USD")]
    pub(crate) max_cost: Option<f64>,
    #[command(flatten)]
    pub(crate) model: ModelArgs,
    #[command(flatten)]
    pub(crate) backend: BackendArgs,
    /// Where fix.patch, tree.json and summary.json go (default:
    /// REPO/.forq/fix/RUN_ID).
    #[arg(long, value_name = "DIR")]
    pub(crate) out: Option<PathBuf>,
    /// Print the summary as JSON (progress stays on stderr).
    #[arg(long)]
    pub(crate) json: bool,
}

/// The issue to work on.
#[derive(Debug, Args)]
pub(crate) struct IssueArg {
    /// A GitHub issue or pull-request URL (read through the REST API;
    /// GITHUB_TOKEN when set, GITHUB_API_URL for GitHub Enterprise), or a
    /// Markdown file.
    #[arg(
        value_name = "ISSUE",
        required_unless_present = "text",
        conflicts_with = "text"
    )]
    pub(crate) issue: Option<String>,
    /// The issue's text, instead of ISSUE.
    #[arg(long, value_name = "TEXT")]
    pub(crate) text: Option<String>,
}

/// Which model answers.
#[derive(Debug, Args)]
pub(crate) struct ModelArgs {
    /// auto (ANTHROPIC_API_KEY, else OPENAI_API_KEY / OPENAI_BASE_URL),
    /// openai, anthropic, or replay (a recording, with --replay).
    #[arg(long, value_enum, default_value = "auto")]
    pub(crate) provider: ProviderName,
    /// The model (default: FORQ_MODEL, else the provider's current general
    /// model).
    #[arg(long)]
    pub(crate) model: Option<String>,
    /// The JSONL recording the replay provider plays (replies, or a
    /// transcript forq wrote).
    #[arg(long, value_name = "JSONL", required_if_eq("provider", "replay"))]
    pub(crate) replay: Option<PathBuf>,
    /// A price table, JSON: {"MODEL-PREFIX": {"input": USD per million
    /// tokens, "output": …}}; needed for --max-cost.
    #[arg(long, value_name = "JSON")]
    pub(crate) prices: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ProviderName {
    Auto,
    Openai,
    Anthropic,
    Replay,
}

#[derive(Debug, Args)]
pub(crate) struct TriageArgs {
    #[command(flatten)]
    pub(crate) issue: IssueArg,
    /// The repository, for context (a map of its code).
    #[arg(long, default_value = ".")]
    pub(crate) repo: PathBuf,
    #[command(flatten)]
    pub(crate) model: ModelArgs,
    /// Confidence at or above which a fix is attempted.
    #[arg(long, default_value_t = forq_agent::triage::DEFAULT_THRESHOLD)]
    pub(crate) threshold: f64,
    /// Print the decision as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum AgentCommand {
    /// One coding-agent pass on an issue in a sandbox over the repository:
    /// the bootstrap gate (cached) provisions it, the code graph gives the
    /// map and graph tools, the model edits and tests until it submits,
    /// gives up or spends a budget. Exits 0 submitted, 1 needs a human.
    Run(AgentRunArgs),
}

#[derive(Debug, Args)]
pub(crate) struct AgentRunArgs {
    #[command(flatten)]
    pub(crate) golden: GoldenArg,
    #[command(flatten)]
    pub(crate) issue: IssueArg,
    /// The repository (never written: the agent works in a sandbox; forq's
    /// own files go under REPO/.forq).
    #[arg(long, default_value = ".")]
    pub(crate) repo: PathBuf,
    #[command(flatten)]
    pub(crate) model: ModelArgs,
    /// Most model calls.
    #[arg(long, default_value_t = forq_agent::agent::DEFAULT_MAX_STEPS)]
    pub(crate) max_steps: u32,
    /// Most dollars (needs --prices for the model).
    #[arg(long, value_name = "USD")]
    pub(crate) max_cost: Option<f64>,
    /// Most tokens, prompt and reply together.
    #[arg(long)]
    pub(crate) max_tokens: Option<u64>,
    /// Most wall-clock seconds for the agent.
    #[arg(long, value_name = "S")]
    pub(crate) max_time: Option<u64>,
    #[command(flatten)]
    pub(crate) backend: BackendArgs,
    /// Do not run the bootstrap gate: the agent gets no run_tests tool and
    /// nothing is installed.
    #[arg(long)]
    pub(crate) skip_bootstrap: bool,
    /// Where the transcript, patch and report go (default:
    /// REPO/.forq/agent/RUN_ID).
    #[arg(long, value_name = "DIR")]
    pub(crate) out: Option<PathBuf>,
    /// Print the report as JSON (progress stays on stderr).
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct BootstrapArgs {
    /// The repository: a directory (default: the current one), or a git URL
    /// (`https://…`, `ssh://…`, `git@host:path`, `file://…`) to clone
    /// shallow first.
    #[arg(default_value = ".", value_name = "PATH | GIT_URL")]
    pub(crate) source: String,
    /// Clone a GIT_URL into this directory and keep it (default: a
    /// temporary directory, removed afterwards).
    #[arg(long, value_name = "DIR")]
    pub(crate) into: Option<PathBuf>,
    /// Cap on the clone's wall clock, in seconds.
    #[arg(long, default_value_t = 300, value_name = "S")]
    pub(crate) clone_timeout: u64,
    /// Cap on the clone's size on disk, in MiB.
    #[arg(long, default_value_t = 2048, value_name = "MIB")]
    pub(crate) clone_max_mb: u64,
    /// Also record the run in this SQLite database (table `bootstrap_runs`).
    #[arg(long, value_name = "DB")]
    pub(crate) store: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) backend: BackendArgs,
    /// Cap on each install step and on the test run, in seconds (defaults:
    /// 600 and 900).
    #[arg(long)]
    pub(crate) timeout: Option<u64>,
    /// Skip the gate (verdict `skipped`).
    #[arg(long)]
    pub(crate) skip_bootstrap: bool,
    /// Run even when `.forq/bootstrap/manifest.json` has this commit's
    /// green verdict.
    #[arg(long)]
    pub(crate) no_cache: bool,
    /// Print the whole record as JSON.
    #[arg(long)]
    pub(crate) json: bool,
    /// No agentic fallback, even with a model configured.
    #[arg(long)]
    pub(crate) offline: bool,
    #[command(flatten)]
    pub(crate) golden: GoldenArg,
    #[command(flatten)]
    pub(crate) model: ModelArgs,
    /// The agentic fallback's most steps.
    #[arg(long, default_value_t = 12, value_name = "N")]
    pub(crate) agentic_steps: u32,
    /// The agentic fallback's wall clock, in seconds.
    #[arg(long, default_value_t = 1200, value_name = "S")]
    pub(crate) agentic_timeout: u64,
    /// The agentic fallback's budget in dollars (needs --prices).
    #[arg(long, value_name = "USD")]
    pub(crate) agentic_max_cost: Option<f64>,
    /// The agentic fallback's budget in tokens.
    #[arg(long, value_name = "N")]
    pub(crate) agentic_max_tokens: Option<u64>,
    /// Record the model's replies to FILE (JSONL), for `--provider replay
    /// --replay FILE` later.
    #[arg(long, value_name = "FILE")]
    pub(crate) agentic_record: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum GraphCommand {
    /// Index (or re-index, incrementally) a repository.
    Index(GraphIndexArgs),
    /// List symbols, filtered by file, name, kind or test-ness.
    Symbols(GraphSymbolsArgs),
    /// What calls SYMBOL, breadth first, with each edge's confidence.
    Callers(GraphWalkArgs),
    /// What SYMBOL calls, breadth first, with each edge's confidence.
    Callees(GraphWalkArgs),
    /// How SYMBOL is called: each call site's arguments (positional or
    /// keyword, value kinds, None passed) and what it does with the result,
    /// counted, and the call sites that break a dominant pattern.
    Patterns(GraphPatternsArgs),
    /// How the codebase writes code (naming per kind, indentation, quotes,
    /// imports, tests, error handling), each with its coverage; only those
    /// at or above --threshold.
    Conventions(GraphConventionsArgs),
    /// The shortest chain of calls from one symbol to another (exit 1: none).
    Path(GraphPathArgs),
    /// What transitively depends on SYMBOL (callers, subclasses, importers).
    AffectedBy(GraphWalkArgs),
    /// Tests that reach SYMBOL through calls, nearest first.
    TestsFor(GraphWalkArgs),
    /// Statements around FILE:LINE with their def-use links.
    Statements(GraphStatementsArgs),
    /// Statements that read NAME, those of the function at --file/--line first.
    Uses(GraphUsesArgs),
    /// A ranked map of the repository for a prompt, to a token budget.
    Map(GraphMapArgs),
    /// Counts of files, symbols, edges and statements.
    Stats(GraphStatsArgs),
    /// Measure parsing, indexing and queries side by side on one tree.
    Bench(GraphBenchArgs),
}

#[derive(Debug, Args)]
pub(crate) struct GraphRepo {
    /// The repository (default: the current directory); re-indexed first
    /// when anything changed, so answers are never stale.
    #[arg(long, default_value = ".")]
    pub(crate) repo: PathBuf,
    #[command(flatten)]
    pub(crate) db: GraphDb,
}

#[derive(Debug, Args)]
pub(crate) struct GraphPathArgs {
    /// Where the chain starts (a SYMBOL: id, qualified name, name or FILE:LINE).
    pub(crate) from: String,
    /// Where it ends.
    pub(crate) to: String,
    #[command(flatten)]
    pub(crate) repo: GraphRepo,
    /// Longest chain looked for.
    #[arg(long, default_value_t = 8)]
    pub(crate) max_depth: u32,
}

#[derive(Debug, Args)]
pub(crate) struct GraphStatsArgs {
    /// The repository (default: the current directory).
    #[arg(default_value = ".")]
    pub(crate) path: PathBuf,
    #[command(flatten)]
    pub(crate) db: GraphDb,
}

#[derive(Debug, Args)]
pub(crate) struct GraphWalkArgs {
    /// A symbol: its id (`path#Qual.name:kind`), qualified name (`Calc.add`),
    /// name, or FILE:LINE; a name several definitions share is refused with
    /// the candidates.
    pub(crate) symbol: String,
    #[command(flatten)]
    pub(crate) repo: GraphRepo,
    /// Steps to follow.
    #[arg(long)]
    pub(crate) depth: Option<u32>,
}

#[derive(Debug, Args)]
pub(crate) struct GraphConventionsArgs {
    #[command(flatten)]
    pub(crate) repo: GraphRepo,
    /// The share of places a convention must hold in to be stated.
    #[arg(long, default_value_t = 0.8)]
    pub(crate) threshold: f64,
}

#[derive(Debug, Args)]
pub(crate) struct GraphPatternsArgs {
    /// A symbol: its id, qualified name, name, or FILE:LINE.
    pub(crate) symbol: String,
    #[command(flatten)]
    pub(crate) repo: GraphRepo,
}

#[derive(Debug, Args)]
pub(crate) struct GraphStatementsArgs {
    /// FILE:LINE (FILE relative to the repository).
    pub(crate) location: String,
    #[command(flatten)]
    pub(crate) repo: GraphRepo,
    /// Lines either side.
    #[arg(long, default_value_t = 3)]
    pub(crate) radius: u32,
}

#[derive(Debug, Args)]
pub(crate) struct GraphUsesArgs {
    /// The variable or name.
    pub(crate) name: String,
    #[command(flatten)]
    pub(crate) repo: GraphRepo,
    /// Rank this file's uses first.
    #[arg(long)]
    pub(crate) file: Option<String>,
    /// With --file: rank uses in the function holding this line first.
    #[arg(long, requires = "file")]
    pub(crate) line: Option<u32>,
}

#[derive(Debug, Args)]
pub(crate) struct GraphMapArgs {
    #[command(flatten)]
    pub(crate) repo: GraphRepo,
    /// Token budget (characters / 4).
    #[arg(long, default_value_t = 1024)]
    pub(crate) tokens: usize,
    /// Files or SYMBOLs to centre the map on (repeatable).
    #[arg(long)]
    pub(crate) focus: Vec<String>,
}

#[derive(Debug, Args)]
pub(crate) struct GraphBenchArgs {
    /// The tree to measure (copied to a temporary directory first).
    pub(crate) path: PathBuf,
    /// Parser threads (default: one per core).
    #[arg(long, default_value_t = 0)]
    pub(crate) threads: usize,
    /// Random symbols per query kind.
    #[arg(long, default_value_t = 100)]
    pub(crate) samples: usize,
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct GraphDb {
    /// The database (default: REPO/.forq/graph.db).
    #[arg(long)]
    pub(crate) db: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct GraphIndexArgs {
    /// The repository (default: the current directory).
    #[arg(default_value = ".")]
    pub(crate) path: PathBuf,
    #[command(flatten)]
    pub(crate) db: GraphDb,
    /// Leave out statements and def-use (questions about them answer
    /// empty).
    #[arg(long, conflicts_with = "eager_flow")]
    pub(crate) no_flow: bool,
    /// Compute every file's statements and def-use now, not on the first
    /// question about each file.
    #[arg(long)]
    pub(crate) eager_flow: bool,
    /// Parser threads (default: one per core).
    #[arg(long, default_value_t = 0)]
    pub(crate) threads: usize,
}

#[derive(Debug, Args)]
pub(crate) struct GraphSymbolsArgs {
    #[command(flatten)]
    pub(crate) repo: GraphRepo,
    /// Only this file (path relative to the repository).
    #[arg(long)]
    pub(crate) file: Option<String>,
    /// Only this exact name.
    #[arg(long)]
    pub(crate) name: Option<String>,
    /// Only this kind (class, function, method, struct, trait, impl, test...).
    #[arg(long)]
    pub(crate) kind: Option<String>,
    /// Only tests.
    #[arg(long)]
    pub(crate) tests: bool,
}

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
pub(crate) struct BackendArgs {
    /// native, docker, host, or auto (native where it works, else docker).
    #[arg(long, default_value = "auto")]
    pub(crate) backend: BackendChoice,
    /// Docker image for the docker backend (built locally when it is the
    /// default and missing).
    #[arg(long)]
    pub(crate) image: Option<String>,
}

/// Docker engines a queue is spread over.
#[derive(Debug, Args)]
pub(crate) struct EngineArgs {
    /// A Docker engine to run sandboxes on (repeatable: runs are spread
    /// over the engines, at most --jobs on each; tcp://HOST:2375,
    /// ssh://USER@HOST, unix:///PATH). Runs, workspaces and the store stay
    /// on this machine.
    #[arg(long, value_name = "URL")]
    pub(crate) docker_host: Vec<String>,
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

/// Parses `123`, `64K`, `512M`, `2G` (powers of 1024).
pub(crate) fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let (digits, mult) = match s.chars().last().map(|c| c.to_ascii_uppercase()) {
        Some('K') => (&s[..s.len() - 1], 1u64 << 10),
        Some('M') => (&s[..s.len() - 1], 1 << 20),
        Some('G') => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    digits
        .trim()
        .parse::<u64>()
        .map(|n| n * mult)
        .map_err(|_| format!("{s:?} is not a size: use bytes or a number with K, M or G"))
}

pub(crate) fn init_logging(verbose: u8) {
    use tracing_subscriber::EnvFilter;
    let default = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    use std::io::IsTerminal;
    let color = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(color)
        .with_writer(std::io::stderr)
        .with_target(false)
        .init();
}

/// A number of seconds, zero or more (fractions allowed).
fn seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(s) if s.is_finite() && s >= 0.0 => Ok(s),
        _ => Err(format!(
            "`{text}` is not a number of seconds (0 or more, such as 2.5)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("123"), Ok(123));
        assert_eq!(parse_size("64k"), Ok(64 << 10));
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        assert!(parse_size("lots").is_err());
    }
}
