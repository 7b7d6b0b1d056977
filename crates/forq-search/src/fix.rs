//! The main job, in phases a caller composes: [`prepare`] (the bootstrap
//! gate, cached; the warm root; the oracle from the unmodified code's
//! tests), a [`FixStrategy`] (one agent pass, or the speculative search),
//! and [`write_report`] (`fix.patch`, `tree.json`, `summary.json`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;
use forq_bootstrap::{GateOptions, Record, Stack, Verdict};
use forq_sandbox::{Backend, Sandbox};
use serde::Serialize;

use crate::brancher::Brancher;
use crate::oracle::{Judgement, Oracle, OracleError};
use crate::search::{search, SearchError, SearchOptions, SearchOutcome};
use crate::tree::Status;

/// How a fix is looked for.
#[async_trait]
pub trait FixStrategy: Send + Sync {
    /// `single` or `speculative`.
    fn name(&self) -> &str;
    /// The brancher's name (`mutate`, `patches`, `llm`, `agent`).
    fn brancher(&self) -> &str;
    /// Dollars the brancher's model calls have cost so far.
    fn cost_usd(&self) -> f64;
    /// Looks for a fix from `root`, judged by `oracle`.
    async fn run(
        &self,
        root: &dyn Sandbox,
        oracle: &Oracle,
        genesis: &Judgement,
        options: &SearchOptions,
    ) -> Result<SearchOutcome, SearchError>;
}

/// The tree search over a brancher's candidates.
pub struct Speculative {
    brancher: Box<dyn Brancher>,
}

impl std::fmt::Debug for Speculative {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Speculative")
            .field("brancher", &self.brancher.name())
            .finish()
    }
}

impl Speculative {
    /// Searches over `brancher`'s candidates.
    pub fn new(brancher: Box<dyn Brancher>) -> Speculative {
        Speculative { brancher }
    }
}

#[async_trait]
impl FixStrategy for Speculative {
    fn name(&self) -> &str {
        "speculative"
    }
    fn brancher(&self) -> &str {
        self.brancher.name()
    }
    fn cost_usd(&self) -> f64 {
        self.brancher.cost_usd()
    }
    async fn run(
        &self,
        root: &dyn Sandbox,
        oracle: &Oracle,
        genesis: &Judgement,
        options: &SearchOptions,
    ) -> Result<SearchOutcome, SearchError> {
        search(root, oracle, genesis, &*self.brancher, options).await
    }
}

/// One pass of a brancher that proposes a single candidate (a coding
/// agent's edits), then the oracle: the search with one node.
pub struct Single {
    brancher: Box<dyn Brancher>,
}

impl std::fmt::Debug for Single {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Single")
            .field("brancher", &self.brancher.name())
            .finish()
    }
}

impl Single {
    /// One candidate from `brancher` (for a coding agent,
    /// `brancher::Agentic`), judged once.
    pub fn new(brancher: Box<dyn Brancher>) -> Single {
        Single { brancher }
    }
}

#[async_trait]
impl FixStrategy for Single {
    fn name(&self) -> &str {
        "single"
    }
    fn brancher(&self) -> &str {
        self.brancher.name()
    }
    fn cost_usd(&self) -> f64 {
        self.brancher.cost_usd()
    }
    async fn run(
        &self,
        root: &dyn Sandbox,
        oracle: &Oracle,
        genesis: &Judgement,
        options: &SearchOptions,
    ) -> Result<SearchOutcome, SearchError> {
        let mut one = options.clone();
        one.budget.max_nodes = 1;
        one.budget.max_depth = 1;
        one.budget.branching = 1;
        one.keep_searching = false;
        one.plausible = 1;
        search(root, oracle, genesis, &*self.brancher, &one).await
    }
}

/// Why the job could not run (as opposed to running and finding no fix).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FixError {
    /// The bootstrap gate failed to run.
    #[error(transparent)]
    Gate(#[from] forq_bootstrap::GateError),
    /// The gate ran, and the repository's tests do not run.
    #[error("the bootstrap gate is not green ({verdict}): {reason}; a fix needs the repository's own tests to run")]
    NotBootstrapped {
        /// The verdict.
        verdict: String,
        /// Why.
        reason: String,
    },
    /// The oracle could not be set up.
    #[error(transparent)]
    Oracle(#[from] OracleError),
    /// The sandbox failed.
    #[error("the sandbox failed")]
    Sandbox(#[from] forq_sandbox::Error),
    /// The search failed.
    #[error(transparent)]
    Search(#[from] SearchError),
    /// No test failed and the reproduction test could not be written.
    #[error("no test fails on the unmodified code, and the reproduction test was not usable: {0}")]
    Reproduction(String),
    /// The report could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// Writes a test that captures an issue no test catches yet (a coding
/// agent, say: `brancher::llm::AgentReproducer`).
#[async_trait]
pub trait Reproducer: Send + Sync {
    /// Adds test files to `sandbox` that fail on its code, and says what
    /// they show; the files must be test files, and something must fail.
    async fn write_test(&self, sandbox: &dyn Sandbox) -> Result<String, String>;
}

/// Everything a strategy starts from.
#[derive(Debug)]
pub struct Prepared {
    /// The gate's record.
    pub record: Record,
    /// The green stack.
    pub stack: Stack,
    /// The warm root: installs done, unmodified. The caller destroys it.
    pub root: Box<dyn Sandbox>,
    /// The oracle.
    pub oracle: Oracle,
    /// Its judgement of the unmodified code.
    pub genesis: Judgement,
    /// A reproduction test written first, when no test failed: the files
    /// every candidate carries and the patch ships.
    pub seed: BTreeMap<String, Option<String>>,
    /// What the reproduction shows, when one was written.
    pub reproduction: Option<String>,
}

/// The gate (cached), the warm root, and the oracle from the unmodified
/// code's tests (`targets`, or every failing test when empty; a test that
/// hangs is one of them). Each candidate's test run is capped at ten
/// times the original's (20 s at least), each of its tests, where the
/// runner has a per-test budget, at twice the original's whole run (see
/// [`Oracle::budget_from`]); never above `test_timeout`.
pub async fn prepare(
    backend: &dyn Backend,
    repo: &Path,
    gate: &GateOptions,
    targets: &[String],
    test_timeout: Duration,
) -> Result<Prepared, FixError> {
    prepare_with(backend, repo, gate, targets, test_timeout, None).await
}

/// [`prepare`], and when no target is given and no test fails, a
/// reproduction test first: `reproducer` writes it in a fork of the root;
/// it must touch test files only and fail, and its failing tests become
/// the target.
pub async fn prepare_with(
    backend: &dyn Backend,
    repo: &Path,
    gate: &GateOptions,
    targets: &[String],
    test_timeout: Duration,
    reproducer: Option<&dyn Reproducer>,
) -> Result<Prepared, FixError> {
    let want = Want::Fix {
        targets,
        reproducer,
    };
    prepare_for(backend, repo, gate, want, test_timeout).await
}

/// [`prepare`] for a change that must keep behaviour (a rename,
/// documentation): the oracle has no target, and every test passing on
/// the unmodified code guards the change ([`Oracle::guard_only`]).
pub async fn prepare_guarded(
    backend: &dyn Backend,
    repo: &Path,
    gate: &GateOptions,
    test_timeout: Duration,
) -> Result<Prepared, FixError> {
    prepare_for(backend, repo, gate, Want::Guard, test_timeout).await
}

/// What the oracle is for.
enum Want<'a> {
    /// A fix: these targets (or every failing test), with a reproduction
    /// written first when nothing fails.
    Fix {
        targets: &'a [String],
        reproducer: Option<&'a dyn Reproducer>,
    },
    /// A change that keeps behaviour: the passing tests guard it.
    Guard,
}

async fn prepare_for(
    backend: &dyn Backend,
    repo: &Path,
    gate: &GateOptions,
    want: Want<'_>,
    test_timeout: Duration,
) -> Result<Prepared, FixError> {
    let record = forq_bootstrap::run(backend, repo, gate).await?;
    let Some(stack) = record.green_stack() else {
        return Err(FixError::NotBootstrapped {
            verdict: record.verdict.name().to_owned(),
            reason: if record.verdict == Verdict::Skipped {
                "the gate was skipped, so no test command is known".to_owned()
            } else {
                record.reason.clone()
            },
        });
    };
    let root = forq_bootstrap::provision(backend, repo, &stack, gate).await?;
    // The oracle's own run happens in a fork: the root stays as installed.
    let probe = root.fork().await?;
    let mut seed = BTreeMap::new();
    let mut reproduction = None;
    let (targets, reproducer) = match want {
        Want::Fix {
            targets,
            reproducer,
        } => (targets, reproducer),
        Want::Guard => (&[][..], None),
    };
    let mut made = match want {
        Want::Guard => Oracle::guard_only(&*probe, stack.clone(), test_timeout).await,
        Want::Fix { .. } => {
            // The gate's per-test budget, when one was set, for the
            // unmodified code's run too.
            let mut limits = gate.test_limits(&stack);
            limits.timeout = test_timeout;
            Oracle::from_genesis_within(&*probe, stack.clone(), targets, limits).await
        }
    }
    .map_err(FixError::from);
    if let (Err(FixError::Oracle(OracleError::NothingFails)), Some(r)) = (&made, reproducer) {
        made = reproduce(&*probe, &stack, r, test_timeout)
            .await
            .map(|(files, summary, m)| {
                seed = files;
                reproduction = Some(summary);
                m
            });
    }
    let _ = probe.destroy().await;
    let (mut oracle, genesis) = match made {
        Ok(m) => m,
        Err(e) => {
            let _ = root.destroy().await;
            return Err(e);
        }
    };
    // A candidate's run should take about what the original's did: one
    // past ten times that, or with a test silent past twice that, is
    // hanging (see Oracle::budget_from).
    oracle = oracle.budget_from(genesis.test_ms);
    Ok(Prepared {
        record,
        stack,
        root,
        oracle,
        genesis,
        seed,
        reproduction,
    })
}

/// The reproduction in `probe` (a clean fork of the root): written,
/// checked to touch test files only, and judged: the tests failing now
/// are the target.
async fn reproduce(
    probe: &dyn Sandbox,
    stack: &Stack,
    reproducer: &dyn Reproducer,
    test_timeout: Duration,
) -> Result<
    (
        BTreeMap<String, Option<String>>,
        String,
        (Oracle, Judgement),
    ),
    FixError,
> {
    let summary = reproducer
        .write_test(probe)
        .await
        .map_err(FixError::Reproduction)?;
    let diff = probe.diff().await?;
    let mut files = BTreeMap::new();
    for change in &diff.files {
        if !stack.is_test_file(&change.path) {
            return Err(FixError::Reproduction(format!(
                "it changed {}, which is not a test file; a reproduction adds tests only",
                change.path
            )));
        }
        let content = probe
            .read_file(Path::new(&change.path))
            .await
            .ok()
            .map(|b| String::from_utf8_lossy(&b).into_owned());
        files.insert(change.path.clone(), content);
    }
    if files.is_empty() {
        return Err(FixError::Reproduction("it wrote no test file".to_owned()));
    }
    match Oracle::from_genesis(probe, stack.clone(), &[], test_timeout).await {
        Ok(made) => Ok((files, summary, made)),
        Err(OracleError::NothingFails) => Err(FixError::Reproduction(
            "its tests pass on the unmodified code, so they do not capture the issue".to_owned(),
        )),
        Err(e) => Err(e.into()),
    }
}

/// What a fix run produced (`summary.json`, and `forq fix --json`).
#[derive(Debug, Clone, Serialize)]
pub struct FixReport {
    /// Whether a green patch was found.
    pub solved: bool,
    /// `single` or `speculative`.
    pub strategy: String,
    /// The brancher.
    pub brancher: String,
    /// Candidates evaluated.
    pub nodes: usize,
    /// Green nodes.
    pub green: usize,
    /// Red nodes.
    pub red: usize,
    /// Pruned nodes.
    pub pruned: usize,
    /// Whether the budget ended the search with candidates untried.
    pub budget_spent: bool,
    /// `fix.patch`, when solved.
    pub patch: Option<PathBuf>,
    /// Lines added plus removed in the patch.
    pub diff_lines: usize,
    /// Wall time of the whole job.
    pub elapsed_s: f64,
    /// `tree.json`.
    pub tree: PathBuf,
    /// The target tests.
    pub target: Vec<String>,
    /// How many guard tests kept passing was checked against.
    pub guard: usize,
    /// The winning hypothesis.
    pub hypothesis: Option<String>,
    /// Dollars the brancher's model calls cost (0 without a model or a
    /// price for it).
    pub cost_usd: f64,
    /// The reproduction test files written first (they ship in the patch).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reproduction: Vec<String>,
    /// Every green candidate, the patch first, then smallest first: each
    /// is plausible (the tests pass); the evidence beyond the tests ranked
    /// them.
    pub plausible: Vec<Plausible>,
    /// What speaks for the patch besides the tests: `corroborated` or
    /// `plausible`, and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<crate::evidence::Evidence>,
}

/// A green candidate of a fix run.
#[derive(Debug, Clone, Serialize)]
pub struct Plausible {
    /// Its node in `tree.json`.
    pub node: usize,
    /// Lines added plus removed.
    pub diff_lines: usize,
    /// What it changed, as the brancher put it.
    pub hypothesis: String,
    /// What speaks for it besides the tests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<crate::evidence::Evidence>,
}

/// The green nodes of `tree`, the winner first, then by size.
fn plausible(tree: &crate::tree::Tree, winner: Option<usize>) -> Vec<Plausible> {
    let mut green: Vec<Plausible> = tree
        .nodes
        .iter()
        .filter(|n| n.status == Status::Green)
        .map(|n| Plausible {
            node: n.id,
            diff_lines: n.score.diff_lines,
            hypothesis: n.hypothesis.clone(),
            evidence: n.evidence.clone(),
        })
        .collect();
    green.sort_by_key(|p| (Some(p.node) != winner, p.diff_lines, p.node));
    green
}

/// Writes `fix.patch` (when solved), `tree.json` and `summary.json` into
/// `out`, and returns the summary.
pub fn write_report(
    out: &Path,
    strategy: &dyn FixStrategy,
    prepared: &Prepared,
    outcome: &SearchOutcome,
    elapsed: Duration,
) -> Result<FixReport, FixError> {
    let oracle = &prepared.oracle;
    let write_err = |path: &Path| {
        let path = path.to_owned();
        move |source| FixError::Write { path, source }
    };
    std::fs::create_dir_all(out).map_err(write_err(out))?;
    let tree_path = out.join("tree.json");
    outcome
        .tree
        .save(&tree_path)
        .map_err(write_err(&tree_path))?;
    let patch = match &outcome.winner {
        Some(w) => {
            let path = out.join("fix.patch");
            std::fs::write(&path, &w.patch).map_err(write_err(&path))?;
            Some(path)
        }
        None => None,
    };
    let tree = &outcome.tree;
    let report = FixReport {
        solved: outcome.winner.is_some(),
        strategy: strategy.name().to_owned(),
        brancher: strategy.brancher().to_owned(),
        nodes: outcome.evaluated,
        green: tree.count(Status::Green),
        red: tree
            .nodes
            .iter()
            .filter(|n| n.id != 0 && n.status == Status::Red)
            .count(),
        pruned: tree.count(Status::Pruned),
        budget_spent: outcome.budget_spent,
        patch,
        diff_lines: outcome.winner.as_ref().map_or(0, |w| w.diff_lines),
        elapsed_s: (elapsed.as_secs_f64() * 10.0).round() / 10.0,
        tree: tree_path,
        target: oracle.target.clone(),
        guard: oracle.guard.len(),
        hypothesis: outcome
            .winner
            .as_ref()
            .map(|w| tree.nodes[w.node].hypothesis.clone()),
        cost_usd: strategy.cost_usd(),
        reproduction: prepared.seed.keys().cloned().collect(),
        plausible: plausible(tree, outcome.winner.as_ref().map(|w| w.node)),
        evidence: outcome.winner.as_ref().map(|w| w.evidence.clone()),
    };
    let summary = out.join("summary.json");
    let json = serde_json::to_vec_pretty(&report).unwrap_or_default();
    std::fs::write(&summary, json).map_err(write_err(&summary))?;
    Ok(report)
}
