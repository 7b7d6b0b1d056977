//! The arguments of the commands that change code or judge changes:
//! `forq fix`, `forq modify`, `forq rename`, `forq document`, `forq triage`,
//! `forq agent run`, `forq bootstrap`, `forq search bench`, `forq eval`.

use std::path::PathBuf;

use clap::{Args, Subcommand};

#[allow(clippy::wildcard_imports)] // the shared argument groups of the parent
use super::*;

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
    /// Green patches to collect before stopping (bounded in time: at most
    /// as long again as the first took); the evidence beyond the tests
    /// (docstring examples, inputs near theirs and the tests', what the
    /// passing tests observe, where the failing tests point) picks the one
    /// handed back.
    #[arg(long, value_name = "N", default_value_t = forq_search::DEFAULT_PLAUSIBLE)]
    pub(crate) plausible: usize,
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
    /// brancher, e.g. forq-templates).
    #[arg(long, value_name = "NAME")]
    pub(crate) model_name: Option<String>,
    /// Settings for every instance's run (forq.yml's format); the flags
    /// below override them.
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// single or speculative (default: the settings', else speculative).
    #[arg(long, value_parser = strategy_kind())]
    pub(crate) strategy: Option<StrategyKind>,
    /// mutate, templates, llm or agent (default: the settings', else
    /// templates for speculative and agent for single).
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
