//! `forq.yml`: a project's settings, versioned in its repository. Every key
//! has a default, so no file is needed; a file that names a key forq does
//! not know, or gives a value of the wrong shape, is refused with the key's
//! path and line.
//!
//! ```
//! use forq_app::config::{Config, Strategy};
//!
//! let config = Config::parse("actions:\n  fix:\n    strategy: single\n", "forq.yml").unwrap();
//! assert_eq!(config.actions.fix.strategy, Strategy::Single);
//! assert!(config.triage.enabled);
//!
//! let err = Config::parse("triage:\n  treshold: 0.5\n", "forq.yml").unwrap_err();
//! assert!(err.to_string().contains("forq.yml:2: triage.treshold"), "{err}");
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use forq_bootstrap::{GateOptions, Stack};
use forq_sandbox::{BackendChoice, Limits};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The names forq looks for, in order, at a repository's root.
pub const FILE_NAMES: [&str; 2] = ["forq.yml", ".forq.yml"];

/// A project's settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Commands that replace stack detection: how to install, build and
    /// test the project.
    pub golden: Golden,
    /// The oracle: which tests decide that an issue is fixed.
    pub test: TestConfig,
    /// Whether, and how, issues are triaged before any fixing.
    pub triage: TriageConfig,
    /// What forq does with an issue.
    pub actions: Actions,
    /// Who pays for the model.
    pub funding: Funding,
    /// Where the code runs.
    pub sandbox: SandboxConfig,
    /// Where a run pauses for a person: `commit` (the green patch, before
    /// it is committed and the whole suite runs on it).
    pub review: Vec<ReviewPoint>,
    /// What forq should know of models, by name (the provider's own word,
    /// when it has one, is overridden).
    pub models: std::collections::BTreeMap<String, ModelConfig>,
    /// Which pull request events start a fix of the pull request.
    pub pull_requests: PullRequests,
}

/// Pull requests as work items (`pull_requests:` in forq.yml): which
/// webhook events start a fix of a pull request, from its head. None by
/// default: a pull request is then worked on only when a trusted author
/// asks (`/forq fix` in a comment on it) or the operator queues it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct PullRequests {
    /// The events: `opened`, `synchronize` (new commits), `labeled`,
    /// `checks_failed` (a check suite or run on its head concluded in
    /// failure).
    pub on: Vec<PullTrigger>,
    /// With `labeled`: only this label starts a fix (default: any).
    pub label: Option<String>,
}

/// A pull request event that may start a fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PullTrigger {
    /// The pull request was opened.
    Opened,
    /// Commits were pushed to it.
    Synchronize,
    /// A label was added.
    Labeled,
    /// Its checks failed.
    ChecksFailed,
}

/// What forq should know of one model (`models.NAME` in forq.yml).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ModelConfig {
    /// Its context window, in tokens: every request is fitted to it.
    pub context_window: Option<u32>,
}

/// A point where a run pauses for a person (`review:` in forq.yml).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReviewPoint {
    /// Before the green patch is committed.
    Commit,
    /// Before callers of an incompatible change are adapted.
    Ripple,
    /// Before a push.
    Push,
}

impl ReviewPoint {
    /// Its name in forq.yml.
    pub fn name(self) -> &'static str {
        match self {
            ReviewPoint::Commit => "commit",
            ReviewPoint::Ripple => "ripple",
            ReviewPoint::Push => "push",
        }
    }
}

/// The golden commands: when `test` (or `test.command`) is set, they
/// replace stack detection.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Golden {
    /// Install steps, shell commands run in order (with the network).
    pub install: Vec<String>,
    /// Build steps, run after the install steps.
    pub build: Vec<String>,
    /// The test command, run by `sh -c` at the repository's root; its
    /// output must be one forq reads (pytest -v, cargo test, ctest, TAP, …).
    pub test: Option<String>,
    /// Environment of every sandbox.
    pub env: BTreeMap<String, String>,
    /// What starts the application for a preview (`sh -c` at the
    /// repository's root, in the foreground), e.g. `python -m http.server
    /// 8000`.
    pub start: Option<String>,
    /// The port the started application listens on, on loopback inside the
    /// sandbox.
    pub port: Option<u16>,
    /// A path answered with a 2xx or 3xx once the application is ready
    /// (default: ready once the port accepts a connection).
    pub health_path: Option<String>,
}

/// The oracle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct TestConfig {
    /// The test command the oracle runs (default: `golden.test`, else the
    /// detected stack's).
    pub command: Option<String>,
    /// Tests that capture the issue (default: every test failing on the
    /// unmodified code, or an issue's own `targets`).
    pub targets: Vec<String>,
    /// Cap on one test run, in seconds.
    pub timeout_s: u64,
    /// Each test's budget on the unmodified code, in seconds: a test
    /// silent this long hangs, is killed and counts as failing (0: none;
    /// default: 60 for pytest and unittest, which print each test as it
    /// starts; none for the others). Candidates get budgets from the
    /// unmodified code's measured time.
    pub idle_s: Option<f64>,
}

impl Default for TestConfig {
    fn default() -> Self {
        TestConfig {
            command: None,
            targets: Vec::new(),
            timeout_s: forq_search::oracle::DEFAULT_TEST_TIMEOUT_S,
            idle_s: None,
        }
    }
}

/// Triage: one structured model call per issue, before any fixing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct TriageConfig {
    /// Triage before fixing, when a model is configured (without one,
    /// triage is skipped and says so).
    pub enabled: bool,
    /// The model (default: FORQ_MODEL, else the provider's).
    pub model: Option<String>,
    /// Confidence at or above which a fix is attempted.
    #[schemars(range(min = 0.0, max = 1.0))]
    pub threshold: f64,
    /// Answer on GitHub an issue triage declines: a comment with the
    /// verdict and its reason, once (default on; forq needs a token or an
    /// App that may write issues).
    pub answer: bool,
    /// A label added to an issue triage declines, with the answer.
    pub label: Option<String>,
}

impl Default for TriageConfig {
    fn default() -> Self {
        TriageConfig {
            enabled: true,
            model: None,
            threshold: forq_agent::triage::DEFAULT_THRESHOLD,
            answer: true,
            label: None,
        }
    }
}

/// What forq does with an issue.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Actions {
    /// Fixing.
    pub fix: FixConfig,
}

/// How forq fixes an issue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct FixConfig {
    /// `auto` (the default): `forq queue` fixes every issue triage lets
    /// through; `manual`: it stops at triage unless asked (`--action
    /// fix`). Either way a person pushes (`forq push`).
    pub mode: Mode,
    /// `speculative` (the tree search) or `single` (one agent pass).
    pub strategy: Strategy,
    /// Who proposes candidates (default: `templates` for speculative,
    /// `agent` for single).
    pub brancher: Option<BrancherName>,
    /// The coding agent's limits.
    pub agent: AgentConfig,
    /// The search's limits.
    pub budget: SearchBudget,
    /// Green candidates the search collects for the evidence beyond the
    /// tests to choose from (as `forq fix --plausible`; default 3).
    pub plausible: usize,
    /// The branch a finished run commits to; `{action}`, `{run_id}` and
    /// `{issue}` are filled in.
    pub branch: String,
    /// How many calls away from an incompatible change its callers are
    /// looked at (1 to 5; default 3).
    pub ripple_depth: u32,
}

impl Default for FixConfig {
    fn default() -> Self {
        FixConfig {
            mode: Mode::Auto,
            strategy: Strategy::Speculative,
            brancher: None,
            agent: AgentConfig::default(),
            budget: SearchBudget::default(),
            plausible: forq_search::DEFAULT_PLAUSIBLE,
            branch: "forq/{action}/{run_id}".to_owned(),
            ripple_depth: 3,
        }
    }
}

/// Whether the queue fixes on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Fix every issue triage lets through.
    Auto,
    /// Fix only when asked.
    Manual,
}

/// How a fix is looked for: forq-search's one definition.
pub use forq_search::plan::StrategyKind as Strategy;

/// Who proposes candidates: forq-search's one definition (`patches` needs
/// candidate files, which only `forq fix --patches` gives; a run refuses it).
pub use forq_search::plan::BrancherKind as BrancherName;

/// The coding agent's limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct AgentConfig {
    /// Most model calls.
    pub max_steps: u32,
    /// Most dollars per run (needs prices for the model).
    pub max_cost_usd: Option<f64>,
    /// The model (default: FORQ_MODEL, else the provider's).
    pub model: Option<String>,
    /// Which coding agent the `agent` brancher runs: forq's own (its model
    /// calls made by forq, outside the sandbox), or Claude Code or Codex
    /// inside the sandbox (spending the operator's key through forq's
    /// model relay: only the operator's settings choose it).
    pub program: AgentProgram,
}

/// The coding-agent program of the `agent` brancher.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AgentProgram {
    /// forq's own agent.
    #[default]
    Forq,
    /// Claude Code, run inside the sandbox (`claude` on its PATH).
    ClaudeCode,
    /// Codex CLI, run inside the sandbox (`codex` on its PATH).
    Codex,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            max_steps: forq_agent::agent::DEFAULT_MAX_STEPS,
            max_cost_usd: None,
            model: None,
            program: AgentProgram::Forq,
        }
    }
}

/// The search's limits: forq-search's one definition, which `forq fix`'s
/// flags fill too.
pub use forq_search::plan::SearchBudget;

/// Who pays for the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Funding {
    /// `owner`: the maintainer's key (from the environment);
    /// `contributor`: a run on an issue needs its contributor's own key,
    /// except for `trusted` authors.
    pub mode: FundingMode,
    /// Authors whose issues run on the owner's key in `contributor` mode.
    pub trusted: Vec<String>,
}

impl Default for Funding {
    fn default() -> Self {
        Funding {
            mode: FundingMode::Owner,
            trusted: Vec::new(),
        }
    }
}

/// Whose key pays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FundingMode {
    /// The maintainer's key.
    Owner,
    /// The contributor brings their own key.
    Contributor,
}

/// Where the code runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxConfig {
    /// `auto`, `native`, `docker` or `host` (`host` does not isolate).
    pub backend: String,
    /// The docker image (default: forq's own).
    pub image: Option<String>,
    /// Memory cap per sandbox, in MiB.
    pub memory_mb: Option<u64>,
    /// Cap on processes per sandbox.
    pub pids: Option<u64>,
    /// CPU cap per sandbox, in cores.
    pub cpus: Option<f64>,
    /// Whether install steps reach the network (tests never do).
    pub network_for_installs: bool,
    /// Cap on a seeded workspace, in MiB.
    pub max_seed_mb: u64,
    /// Cap on seeding (the clone), in seconds.
    pub seed_timeout_s: u64,
    /// Disk the golden environments may take, in GiB: `forq golden gc`,
    /// and a `forq queue --golden build` when it ends, remove the least
    /// recently used beyond it (default 20).
    pub golden_max_gb: Option<f64>,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
            backend: "auto".to_owned(),
            image: None,
            memory_mb: None,
            pids: None,
            cpus: None,
            network_for_installs: true,
            max_seed_mb: 512,
            seed_timeout_s: 300,
            golden_max_gb: None,
        }
    }
}

/// The most memory a sandbox may be given, in MiB (1 TiB): past it a
/// value is refused rather than wrapped into no cap at all.
pub const MAX_MEMORY_MB: u64 = 1 << 20;
/// The most processes a sandbox may be given.
pub const MAX_PIDS: u64 = 1 << 22;
/// The most cores a sandbox may be given.
pub const MAX_CPUS: f64 = 1024.0;
/// The largest seed, in MiB (1 TiB).
pub const MAX_SEED_MB: u64 = 1 << 20;

impl SandboxConfig {
    /// The caps this section sets that are none: 0 (which Docker and the
    /// kernel read as no limit), a value past the largest (which `<< 20`
    /// would wrap to 0), a core count that is not a number.
    fn problems(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        let mut whole = |key, value: Option<u64>, max: u64, unit: &str| {
            if value.is_some_and(|v| !(1..=max).contains(&v)) {
                out.push((
                    key,
                    format!("out of range; write 1 to {max} {unit} (leave it out for forq's cap)"),
                ));
            }
        };
        whole("sandbox.memory_mb", self.memory_mb, MAX_MEMORY_MB, "MiB");
        whole("sandbox.pids", self.pids, MAX_PIDS, "processes");
        whole(
            "sandbox.max_seed_mb",
            Some(self.max_seed_mb),
            MAX_SEED_MB,
            "MiB",
        );
        whole(
            "sandbox.seed_timeout_s",
            Some(self.seed_timeout_s),
            MAX_SECONDS,
            "seconds",
        );
        if self
            .cpus
            .is_some_and(|c| !c.is_finite() || c <= 0.0 || c > MAX_CPUS)
        {
            out.push((
                "sandbox.cpus",
                format!("not a number of cores; write more than 0, up to {MAX_CPUS}"),
            ));
        }
        if self
            .golden_max_gb
            .is_some_and(|g| !g.is_finite() || g < 0.0)
        {
            out.push((
                "sandbox.golden_max_gb",
                "not a size; write 0 or more GiB".to_owned(),
            ));
        }
        out
    }

    /// The seed's size cap in bytes (range-checked when parsed; saturating
    /// all the same, never wrapping).
    pub fn max_seed_bytes(&self) -> u64 {
        self.max_seed_mb.saturating_mul(1 << 20)
    }
}

/// The longest any setting in seconds may be (a week): past it a value is
/// refused as invalid rather than overflow a clock.
pub const MAX_SECONDS: u64 = 7 * 24 * 3600;

/// What a repository's own `forq.yml` may ask for at most: it may lower
/// every one of these, never raise it. The operator's own settings
/// (`--config`) are not held to them.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RepositoryCaps {
    /// One test run, in seconds.
    pub test_timeout_s: u64,
    /// One test's silence, in seconds.
    pub test_idle_s: u64,
    /// Model calls of one agent run (on the operator's key).
    pub agent_max_steps: u32,
    /// Candidates a search evaluates.
    pub max_nodes: usize,
    /// Edits a search stacks.
    pub max_depth: usize,
    /// A search's wall clock, in seconds.
    pub max_time_s: u64,
}

impl Default for RepositoryCaps {
    fn default() -> Self {
        RepositoryCaps {
            test_timeout_s: 1800,
            test_idle_s: 600,
            agent_max_steps: forq_agent::agent::DEFAULT_MAX_STEPS,
            max_nodes: forq_search::DEFAULT_MAX_NODES,
            max_depth: forq_search::DEFAULT_MAX_DEPTH,
            max_time_s: 3600,
        }
    }
}

/// Why `forq.yml` was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not valid YAML, names an unknown key, or a value has the
    /// wrong shape or range.
    #[error("{file}:{line}: {key}: {message}")]
    Invalid {
        /// The file.
        file: String,
        /// The line (1-based; 0 when unknown).
        line: usize,
        /// The key's dotted path (`actions.fix.strategy`), or `(file)`.
        key: String,
        /// What is wrong and what to write instead.
        message: String,
    },
}

impl Config {
    /// The settings of the repository at `root`: its `forq.yml` (or
    /// `.forq.yml`), else the defaults. Returns the file read, if any.
    pub fn load(root: &Path) -> Result<(Config, Option<PathBuf>), ConfigError> {
        for name in FILE_NAMES {
            let path = root.join(name);
            let Ok(meta) = path.symlink_metadata() else {
                continue;
            };
            // The repository's file, never what it links to: a linked
            // forq.yml would make forq read (and quote in its errors) a
            // file of the host's.
            if meta.file_type().is_symlink() {
                return Err(ConfigError::Read {
                    path,
                    source: std::io::Error::new(
                        std::io::ErrorKind::InvalidInput,
                        "it is a symbolic link; a repository's settings are read only from a \
                         file of its own (replace the link with the file)",
                    ),
                });
            }
            if meta.is_file() {
                return Config::from_repository_file(&path).map(|c| (c, Some(path)));
            }
        }
        Ok((Config::default(), None))
    }

    /// The repository's file at `path`, opened without following a link (a
    /// link swapped in after [`Config::load`] looked is refused too).
    fn from_repository_file(path: &Path) -> Result<Config, ConfigError> {
        use std::io::Read as _;
        use std::os::unix::fs::OpenOptionsExt as _;
        let read = |source| ConfigError::Read {
            path: path.to_owned(),
            source,
        };
        let mut text = String::new();
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(path)
            .and_then(|mut f| f.read_to_string(&mut text))
            .map_err(read)?;
        Config::parse(&text, &path.display().to_string())
    }

    /// The settings in the file at `path`.
    pub fn from_file(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        Config::parse(&text, &path.display().to_string())
    }

    /// Parses and validates `text` (named `file` in errors).
    pub fn parse(text: &str, file: &str) -> Result<Config, ConfigError> {
        let invalid = |key: String, line: usize, message: String| ConfigError::Invalid {
            file: file.to_owned(),
            line,
            key,
            message,
        };
        if text.trim().is_empty() {
            return Ok(Config::default());
        }
        let de = serde_yaml_ng::Deserializer::from_str(text);
        let config: Config = serde_path_to_error::deserialize(de).map_err(|e| {
            let key = e.path().to_string();
            let inner = e.into_inner();
            let line = inner
                .location()
                .map_or_else(|| line_of(text, &key), |l| l.line());
            let key = if key == "." { "(file)".to_owned() } else { key };
            let message = tidy(&inner.to_string(), &key);
            invalid(key, line, message)
        })?;
        match config.problems().into_iter().next() {
            Some((key, message)) => Err(invalid(key.to_owned(), line_of(text, key), message)),
            None => Ok(config),
        }
    }

    /// What the types cannot say: ranges and names.
    fn problems(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if !(0.0..=1.0).contains(&self.triage.threshold) {
            out.push((
                "triage.threshold",
                format!(
                    "{} is not a confidence; write a number from 0 to 1",
                    self.triage.threshold
                ),
            ));
        }
        out.extend(self.sandbox.problems());
        if self.sandbox.backend.parse::<BackendChoice>().is_err() {
            out.push((
                "sandbox.backend",
                "unknown backend; write auto, native, docker or host".to_owned(),
            ));
        }
        if let Some(idle) = self
            .test
            .idle_s
            .filter(|s| !s.is_finite() || *s < 0.0 || *s > MAX_SECONDS as f64)
        {
            out.push((
                "test.idle_s",
                format!(
                    "{idle} is not a number of seconds forq takes; write 0 to {MAX_SECONDS} (0: no per-test budget)"
                ),
            ));
        }
        if !(1..=MAX_SECONDS).contains(&self.test.timeout_s) {
            out.push((
                "test.timeout_s",
                format!("out of range; write 1 to {MAX_SECONDS} seconds"),
            ));
        }
        if self
            .actions
            .fix
            .budget
            .max_time_s
            .is_some_and(|t| !(1..=MAX_SECONDS).contains(&t))
        {
            out.push((
                "actions.fix.budget.max_time_s",
                format!("out of range; write 1 to {MAX_SECONDS} seconds"),
            ));
        }
        if self
            .actions
            .fix
            .agent
            .max_cost_usd
            .is_some_and(|c| !c.is_finite() || c < 0.0)
        {
            out.push((
                "actions.fix.agent.max_cost_usd",
                "not an amount of dollars; write 0 or more".to_owned(),
            ));
        }
        if self.actions.fix.plausible == 0 {
            out.push((
                "actions.fix.plausible",
                "0 hands back nothing; write at least 1 (1: the first green patch)".to_owned(),
            ));
        }
        if self.actions.fix.budget.max_nodes == 0 {
            out.push((
                "actions.fix.budget.max_nodes",
                "0 evaluates nothing; write at least 1".to_owned(),
            ));
        }
        if !(1..=crate::contract::MAX_DEPTH).contains(&self.actions.fix.ripple_depth) {
            out.push((
                "actions.fix.ripple_depth",
                format!(
                    "{} is out of range; write 1 to {}",
                    self.actions.fix.ripple_depth,
                    crate::contract::MAX_DEPTH
                ),
            ));
        }
        for point in &self.review {
            let why = match point {
                ReviewPoint::Commit => continue,
                ReviewPoint::Ripple => continue,
                ReviewPoint::Push => "forq never pushes on its own: every push (forq push, the dashboard's button) is a person's already",
            };
            out.push((
                "review",
                format!("`{}`: {why}; write review: [commit]", point.name()),
            ));
        }
        if self.actions.fix.branch.trim().is_empty() || self.actions.fix.branch.contains(' ') {
            out.push((
                "actions.fix.branch",
                "a branch name template without spaces, such as forq/{action}/{run_id}".to_owned(),
            ));
        }
        out
    }

    /// What a repository's own `forq.yml` asks for that would loosen
    /// isolation, which only the operator may choose (on the command line,
    /// or in a config file of their own): the key, and what runs do instead.
    pub fn loosening(&self) -> Vec<(&'static str, String)> {
        let mut out = self.isolation_loosening();
        out.extend(self.budget_loosening());
        out.extend(self.limit_loosening());
        out
    }

    /// The backend, the image, a coding-agent program: the isolation.
    fn isolation_loosening(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if self.backend() == BackendChoice::Kind(forq_sandbox::BackendKind::Host) {
            out.push((
                "sandbox.backend",
                "host runs the repository's code without isolation; only the operator chooses \
                 it (--backend host), so runs keep the operator's backend"
                    .to_owned(),
            ));
        }
        if self.actions.fix.agent.program != AgentProgram::Forq {
            out.push((
                "actions.fix.agent.program",
                "a coding-agent program runs inside the sandbox and spends the operator's model \
                 key (through forq's relay, which keeps the key out of the sandbox); only the \
                 operator's settings (--config) choose it"
                    .to_owned(),
            ));
        }
        if self.sandbox.backend != SandboxConfig::default().backend
            && !out.iter().any(|(k, _)| *k == "sandbox.backend")
        {
            out.push((
                "sandbox.backend",
                "the backend (and so the isolation) is the operator's to choose (--backend, or \
                 their --config); runs keep the operator's"
                    .to_owned(),
            ));
        }
        if self.sandbox.image.is_some() {
            out.push((
                "sandbox.image",
                "the image runs start from is the operator's (their --config): a repository's \
                 could name another repository's golden or an image that runs as root; runs \
                 keep the operator's"
                    .to_owned(),
            ));
        }
        out
    }

    /// Test timeouts, agent steps, the search's budget: above the
    /// operator's caps.
    fn budget_loosening(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        let caps = RepositoryCaps::default();
        if self.test.timeout_s > caps.test_timeout_s {
            out.push((
                "test.timeout_s",
                format!(
                    "above the operator's cap of {} s, which runs keep",
                    caps.test_timeout_s
                ),
            ));
        }
        if self
            .test
            .idle_s
            .is_some_and(|s| s > caps.test_idle_s as f64)
        {
            out.push((
                "test.idle_s",
                format!(
                    "above the operator's cap of {} s, which runs keep",
                    caps.test_idle_s
                ),
            ));
        }
        let fix = &self.actions.fix;
        if fix.agent.max_steps > caps.agent_max_steps {
            out.push((
                "actions.fix.agent.max_steps",
                format!(
                    "above the operator's cap of {} model calls (spent on the operator's key), which runs keep",
                    caps.agent_max_steps
                ),
            ));
        }
        if fix.budget.max_nodes > caps.max_nodes {
            out.push((
                "actions.fix.budget.max_nodes",
                format!(
                    "above the operator's cap of {} candidates, which runs keep",
                    caps.max_nodes
                ),
            ));
        }
        if fix.budget.max_depth > caps.max_depth {
            out.push((
                "actions.fix.budget.max_depth",
                format!(
                    "above the operator's cap of {} stacked edits, which runs keep",
                    caps.max_depth
                ),
            ));
        }
        if fix.budget.max_time_s.is_some_and(|t| t > caps.max_time_s) {
            out.push((
                "actions.fix.budget.max_time_s",
                format!(
                    "above the operator's cap of {} s, which runs keep",
                    caps.max_time_s
                ),
            ));
        }
        out
    }

    /// The sandbox's memory, processes and cores: above the standard
    /// limits.
    fn limit_loosening(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        let standard = Limits::standard();
        let above = |asked: Option<u64>, cap: Option<u64>| match (asked, cap) {
            (Some(a), Some(c)) => a > c,
            _ => false,
        };
        if above(
            self.sandbox.memory_mb.map(|m| m.saturating_mul(1 << 20)),
            standard.memory_bytes,
        ) {
            out.push((
                "sandbox.memory_mb",
                format!(
                    "above the operator's cap of {} MiB, which runs keep",
                    standard.memory_bytes.unwrap_or_default() >> 20
                ),
            ));
        }
        if above(self.sandbox.pids, standard.pids) {
            out.push((
                "sandbox.pids",
                format!(
                    "above the operator's cap of {} processes, which runs keep",
                    standard.pids.unwrap_or_default()
                ),
            ));
        }
        if let (Some(asked), Some(cap)) = (self.sandbox.cpus, standard.cpus) {
            if asked > cap {
                out.push((
                    "sandbox.cpus",
                    format!("above the operator's cap of {cap} cores, which runs keep"),
                ));
            }
        }
        out
    }

    /// These settings as a repository may have them: what [`Config::loosening`]
    /// lists is put back to the operator's.
    pub fn confined(mut self) -> Config {
        let caps = RepositoryCaps::default();
        for (key, _) in self.loosening() {
            match key {
                "sandbox.backend" => self.sandbox.backend = SandboxConfig::default().backend,
                "sandbox.memory_mb" => self.sandbox.memory_mb = None,
                "sandbox.pids" => self.sandbox.pids = None,
                "sandbox.cpus" => self.sandbox.cpus = None,
                "actions.fix.agent.program" => self.actions.fix.agent.program = AgentProgram::Forq,
                "sandbox.image" => self.sandbox.image = None,
                "test.timeout_s" => self.test.timeout_s = caps.test_timeout_s,
                "test.idle_s" => self.test.idle_s = Some(caps.test_idle_s as f64),
                "actions.fix.agent.max_steps" => {
                    self.actions.fix.agent.max_steps = caps.agent_max_steps;
                }
                "actions.fix.budget.max_nodes" => {
                    self.actions.fix.budget.max_nodes = caps.max_nodes
                }
                "actions.fix.budget.max_depth" => {
                    self.actions.fix.budget.max_depth = caps.max_depth
                }
                "actions.fix.budget.max_time_s" => {
                    self.actions.fix.budget.max_time_s = Some(caps.max_time_s);
                }
                _ => {}
            }
        }
        self
    }

    /// The JSON Schema of `forq.yml`, for editors.
    pub fn schema() -> serde_json::Value {
        let schema = schemars::schema_for!(Config);
        serde_json::to_value(schema).unwrap_or_default()
    }

    /// The gate's options this file asks for: the golden recipe (when a
    /// test command is given), limits, environment and image.
    pub fn gate_options(&self) -> GateOptions {
        let mut gate = GateOptions::default()
            .image(self.sandbox.image.clone())
            // Checked at parse (see `problems`); anything else is none.
            .test_idle(
                self.test
                    .idle_s
                    .filter(|s| s.is_finite() && *s >= 0.0)
                    .map(std::time::Duration::from_secs_f64),
            );
        if let Some(test) = self.test.command.as_ref().or(self.golden.test.as_ref()) {
            let steps = self
                .golden
                .install
                .iter()
                .chain(&self.golden.build)
                .cloned()
                .collect();
            gate = gate.recipes(vec![Stack::custom("forq.yml golden", steps, test)]);
        }
        // The operator's default caps, lowered (never raised, see
        // `confined`) where forq.yml asks.
        let mut limits = Limits::standard();
        if let Some(m) = self.sandbox.memory_mb {
            limits.memory_bytes = Some(m.saturating_mul(1 << 20));
        }
        if let Some(p) = self.sandbox.pids {
            limits.pids = Some(p);
        }
        if let Some(c) = self.sandbox.cpus {
            limits.cpus = Some(c);
        }
        gate = gate.limits(limits);
        if !self.sandbox.network_for_installs {
            gate.install_network = forq_sandbox::Network::None;
        }
        for (k, v) in &self.golden.env {
            gate = gate.env(k, v);
        }
        gate
    }

    /// The backend `sandbox.backend` names (checked when parsed).
    pub fn backend(&self) -> BackendChoice {
        self.sandbox.backend.parse().unwrap_or_default()
    }
}

/// serde_yaml's message without its own position suffix (the error names
/// the line itself).
/// The parser's message without what the error line says already: the
/// position, and the key's path the parser may put first.
fn tidy(message: &str, key: &str) -> String {
    let m = match message.find(" at line ") {
        Some(i) => &message[..i],
        None => message,
    };
    let m = m
        .strip_prefix(key)
        .and_then(|m| m.strip_prefix(": "))
        .unwrap_or(m);
    let unquoted = unquote(m);
    let m = unquoted.as_str();
    // Say what to write in YAML's words, not Rust's.
    match m.rfind(", expected ") {
        Some(i) => {
            let wanted = &m[i + ", expected ".len()..];
            let plain = match wanted {
                "usize" | "u64" | "u32" | "u16" | "u8" => "a whole number",
                "f64" | "f32" => "a number",
                "a boolean" | "bool" => "true or false",
                w if w.starts_with("struct ") || w.starts_with("a map") => "a mapping of keys",
                w if w.starts_with("a sequence") => "a list",
                w => w,
            };
            format!("{}, expected {plain}", &m[..i])
        }
        None => m.to_owned(),
    }
}

/// A parser's message without the value it quotes: `invalid type: string
/// "…", expected …` says only `a string`, `unknown variant `…`` only
/// `unknown value`. An error names the key and the line, never echoes what
/// the file holds (were it a host's key file read by mistake, its bytes
/// would land in logs and run events).
fn unquote(message: &str) -> String {
    for lead in ["invalid type: ", "invalid value: "] {
        if let Some(rest) = message.strip_prefix(lead) {
            let (found, expected) = match rest.rfind(", expected ") {
                Some(i) => (&rest[..i], &rest[i..]),
                None => (rest, ""),
            };
            let kind = match found.split([' ', '`', '"', '\'']).next().unwrap_or("") {
                "string" | "character" => "a string",
                "integer" => "a whole number",
                "floating" => "a number",
                "boolean" => "true or false",
                "map" => "a mapping",
                "sequence" => "a list",
                "unit" | "null" => "an empty value",
                _ => "a value",
            };
            return format!("{lead}{kind}{expected}");
        }
    }
    if let Some(rest) = message.strip_prefix("unknown variant ") {
        let expected = rest.find(", expected ").map_or("", |i| &rest[i..]);
        return format!("unknown value{expected}");
    }
    message.to_owned()
}

/// The line of the key at dotted `path` in block-style YAML `text` (0 when
/// it is not written there): each segment is looked for below the line of
/// its parent, indented deeper.
fn line_of(text: &str, path: &str) -> usize {
    let mut from = 0usize;
    let mut indent: Option<usize> = None;
    let mut found = 0usize;
    for segment in path.split('.').filter(|s| !s.is_empty()) {
        let segment = segment.split('[').next().unwrap_or(segment);
        let mut hit = None;
        for (i, line) in text.lines().enumerate().skip(from) {
            let trimmed = line.trim_start();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let depth = line.len() - trimmed.len();
            if let Some(parent) = indent {
                if depth <= parent && i > from {
                    break;
                }
            }
            let key = trimmed.trim_start_matches("- ");
            if key
                .strip_prefix(segment)
                .is_some_and(|r| r.starts_with(':'))
            {
                hit = Some((i, depth));
                break;
            }
        }
        let Some((i, depth)) = hit else { return found };
        found = i + 1;
        from = i + 1;
        indent = Some(depth);
    }
    found
}

#[cfg(test)]
mod tests;
