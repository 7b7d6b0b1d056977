//! Command-line arguments and logging setup: the top-level command here,
//! each family's arguments in a module of its own, all re-exported flat.

mod app;
mod fix;
mod golden;
mod graph;
mod sandbox;

pub(crate) use app::*;
pub(crate) use fix::*;
pub(crate) use golden::*;
pub(crate) use graph::*;
pub(crate) use sandbox::*;

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
    /// Drive queued runs from the store, on this machine, until stopped
    /// (SIGTERM or Ctrl-C: it finishes or hands back its runs): one per
    /// machine, all sharing one --store (PostgreSQL). A worker that dies
    /// loses nothing: its runs go on elsewhere from their last checkpoint.
    Worker(WorkerArgs),
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
    /// Say what a model's endpoint takes, by asking it: its context window,
    /// structured output (json_schema, json_object or the prompt alone),
    /// native tool calls or forq's text protocol. Two short calls.
    Models(ModelsArgs),
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

/// `forq models`.
#[derive(Debug, Args)]
pub(crate) struct ModelsArgs {
    #[command(flatten)]
    pub(crate) model: ModelArgs,
    /// Print what was found as JSON.
    #[arg(long)]
    pub(crate) json: bool,
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

/// Where forq keeps its runs.
#[derive(Debug, Args)]
pub(crate) struct StateArgs {
    /// forq's state directory: the run store (forq.db) and each run's
    /// workspace and records.
    #[arg(long, env = "FORQ_STATE", default_value = ".forq", global = true)]
    pub(crate) state: PathBuf,
    /// The run store, when not STATE/forq.db: a PostgreSQL URL
    /// (postgres://USER:PASSWORD@HOST/DB) that forq processes on every
    /// machine share — workers, queues, the server, `forq runs`.
    #[arg(long, env = "FORQ_STORE_URL", global = true, value_name = "URL")]
    pub(crate) store: Option<String>,
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
    /// openai, anthropic, replay (a recording, with --replay), or a server
    /// on this machine: openai-compatible (with --base-url), ollama or
    /// llamacpp (their usual local addresses unless --base-url).
    #[arg(long, value_enum, default_value = "auto")]
    pub(crate) provider: ProviderName,
    /// The base URL of a local server (`http://127.0.0.1:8080/v1`).
    #[arg(long, value_name = "URL")]
    pub(crate) base_url: Option<String>,
    /// The model's context window in tokens, when the provider cannot say
    /// (default: FORQ_CONTEXT_WINDOW, else what the endpoint or the known
    /// models say, else 8192). Every request is fitted to it.
    #[arg(long, value_name = "TOKENS")]
    pub(crate) context_window: Option<u32>,
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
    OpenaiCompatible,
    Ollama,
    Llamacpp,
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
    // With -vv every span says when it closes and how long it took, so
    // the run reads as a tree of phases, steps, tool calls and requests.
    let spans = match verbose {
        0 | 1 => tracing_subscriber::fmt::format::FmtSpan::NONE,
        _ => tracing_subscriber::fmt::format::FmtSpan::CLOSE,
    };
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_span_events(spans)
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
