//! The search: candidates from a brancher, each evaluated in a fork of its
//! parent's frozen state, in an order (best-first by default) within
//! budgets; red children that are no worse than their parent are branched
//! again, so the result is a tree. The first green node wins — or, when
//! asked, the smallest green within the budget.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use forq_graph::Lang;
use forq_sandbox::{Sandbox, Snapshot};
use serde::{Deserialize, Serialize};
use tokio::task::JoinSet;

use crate::brancher::{BranchContext, BranchError, Brancher};
use crate::candidate::{Candidate, Materialized};
use crate::evidence::{examine_green, weigh, Evidence, Examination, Green};
use crate::oracle::{Judgement, Oracle};
use crate::tree::{Node, Score, SearchEvent, Status, Tree};
use forq_events::{Observer, Observers};

/// In which order queued candidates are evaluated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// The best parent's candidates first, by the brancher's prior.
    BestFirst,
    /// Shallowest first, in the order proposed.
    BreadthFirst,
    /// Uniformly at random (seeded).
    Random(u64),
}

impl Order {
    /// Its name in `tree.json` and reports.
    pub fn name(self) -> &'static str {
        match self {
            Order::BestFirst => "best_first",
            Order::BreadthFirst => "breadth_first",
            Order::Random(_) => "random",
        }
    }
}

/// Limits of a search.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Budget {
    /// Most candidates evaluated (default 200).
    pub max_nodes: usize,
    /// Most edits stacked on the original code (default 2).
    pub max_depth: usize,
    /// Evaluations at once (default: the machine's cores).
    pub jobs: usize,
    /// Candidates asked of the brancher per node (default 200 for a
    /// deterministic brancher; a model's is its own, smaller, K).
    pub branching: usize,
    /// Wall clock for the whole search.
    pub wall_clock: Option<Duration>,
}

/// Candidates a search evaluates unless told otherwise (`--max-nodes`,
/// forq.yml's `actions.fix.budget.max_nodes`).
pub const DEFAULT_MAX_NODES: usize = 200;

/// Edits a candidate stacks unless told otherwise (`--max-depth`,
/// forq.yml's `actions.fix.budget.max_depth`).
pub const DEFAULT_MAX_DEPTH: usize = 2;

impl Default for Budget {
    fn default() -> Self {
        Budget {
            max_nodes: DEFAULT_MAX_NODES,
            max_depth: DEFAULT_MAX_DEPTH,
            jobs: std::thread::available_parallelism().map_or(2, |n| n.get()),
            branching: 200,
            wall_clock: None,
        }
    }
}

impl Budget {
    /// At most `n` candidates evaluated.
    pub fn max_nodes(mut self, n: usize) -> Self {
        self.max_nodes = n;
        self
    }
    /// At most `n` stacked edits.
    pub fn max_depth(mut self, n: usize) -> Self {
        self.max_depth = n.max(1);
        self
    }
    /// `n` evaluations at once.
    pub fn jobs(mut self, n: usize) -> Self {
        self.jobs = n.max(1);
        self
    }
    /// `k` candidates per node.
    pub fn branching(mut self, k: usize) -> Self {
        self.branching = k.max(1);
        self
    }
    /// The usual candidates per node for the brancher named `brancher` (its
    /// [`FixStrategy::brancher`](crate::FixStrategy::brancher) name): an
    /// LLM proposes 3, an agent makes 1 fix per pass, mutation enumerates
    /// up to 200.
    pub fn branching_for(self, brancher: &str) -> Self {
        self.branching(match brancher {
            "llm" => 3,
            "agent" => 1,
            _ => 200,
        })
    }
    /// Stops after `d`.
    pub fn wall_clock(mut self, d: Duration) -> Self {
        self.wall_clock = Some(d);
        self
    }
}

/// How to search.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct SearchOptions {
    /// Limits.
    pub budget: Budget,
    /// Expansion order (default best-first).
    pub order: Option<Order>,
    /// After the first green node, keep searching (within the budget) for a
    /// smaller green diff.
    pub keep_searching: bool,
    /// Green candidates to collect before stopping (default 1, the first):
    /// more let the evidence beyond the tests ([`crate::evidence`]) choose
    /// among them. After the first green the search goes on at most as
    /// long again as the first took (10 s at least, [`PLAUSIBLE_WINDOW`]
    /// at most), within the budget.
    pub plausible: usize,
    /// Told of every node.
    pub observers: Observers<SearchEvent>,
    /// Changes every candidate carries and the patch ships (a reproduction
    /// test written before the search): new contents by path.
    pub seed: BTreeMap<String, Option<String>>,
    /// Whether a candidate may change or delete the repository's test
    /// files: a rename or a doc change may; a fix never (the tests judge
    /// it), so by default a candidate that does is red without a run.
    pub edit_tests: bool,
}

impl std::fmt::Debug for SearchOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchOptions")
            .field("budget", &self.budget)
            .field("order", &self.order)
            .field("keep_searching", &self.keep_searching)
            .field("plausible", &self.plausible)
            .field("edit_tests", &self.edit_tests)
            .finish()
    }
}

impl SearchOptions {
    /// With this budget.
    pub fn budget(mut self, budget: Budget) -> Self {
        self.budget = budget;
        self
    }
    /// In this order.
    pub fn order(mut self, order: Order) -> Self {
        self.order = Some(order);
        self
    }
    /// Keeps looking for a smaller green diff after the first.
    pub fn keep_searching(mut self, yes: bool) -> Self {
        self.keep_searching = yes;
        self
    }
    /// Collects up to `n` green candidates before stopping, and hands back
    /// the one the evidence beyond the tests ranks first.
    pub fn plausible(mut self, n: usize) -> Self {
        self.plausible = n.max(1);
        self
    }
    /// Lets candidates change the repository's test files (a rename, a doc
    /// change; never a fix).
    pub fn edit_tests(mut self, yes: bool) -> Self {
        self.edit_tests = yes;
        self
    }
    /// Every candidate carries `seed`, and so does the patch.
    pub fn seed(mut self, seed: BTreeMap<String, Option<String>>) -> Self {
        self.seed = seed;
        self
    }
    /// Tells `observer` of every node too.
    pub fn observer(mut self, observer: Arc<dyn Observer<SearchEvent>>) -> Self {
        self.observers.push(observer);
        self
    }
}

/// Why a search stopped short of an answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SearchError {
    /// The sandbox failed (not a candidate's code in it).
    #[error("the sandbox failed during the search")]
    Sandbox(#[from] forq_sandbox::Error),
    /// The brancher failed.
    #[error(transparent)]
    Brancher(#[from] BranchError),
    /// An evaluation task panicked (a bug in forq, not in a candidate).
    #[error("search: an evaluation task stopped: {0}")]
    Task(String),
}

/// The winning node.
#[derive(Debug)]
pub struct Winner {
    /// Its id.
    pub node: usize,
    /// The patch against the original code (git format).
    pub patch: String,
    /// Lines added plus lines removed.
    pub diff_lines: usize,
    /// A fork of the root with the fix written (no test run in it); the
    /// caller destroys it.
    pub sandbox: Box<dyn Sandbox>,
    /// What speaks for it besides the tests.
    pub evidence: Evidence,
}

/// Green candidates `forq fix` collects unless told otherwise
/// (`--plausible`).
pub const DEFAULT_PLAUSIBLE: usize = 3;

/// How long the search goes on after its first green, at most, to collect
/// more plausible candidates ([`SearchOptions::plausible`]).
pub const PLAUSIBLE_WINDOW: Duration = Duration::from_secs(60);

/// What a search did.
#[derive(Debug)]
pub struct SearchOutcome {
    /// The whole tree.
    pub tree: Tree,
    /// The green node chosen, if any.
    pub winner: Option<Winner>,
    /// Candidates evaluated.
    pub evaluated: usize,
    /// Whether the budget (candidates or time) ended the search with
    /// candidates still waiting, or while the brancher was still proposing
    /// them: no winner, but the space was not spent.
    pub budget_spent: bool,
    /// Wall time.
    pub elapsed: Duration,
}

/// Best-first's discount per edit stacked beyond the first.
const DEPTH_DISCOUNT: f64 = 0.3;

/// A candidate waiting for a fork.
struct Queued {
    node: usize,
    snapshot: Snapshot,
    /// Only the files this candidate writes.
    delta: Materialized,
    parent_score: Score,
    prior: f64,
    depth: usize,
}

type Evaluated = (
    usize,
    Result<(Box<dyn Sandbox>, Judgement), forq_sandbox::Error>,
    u64,
);

struct Engine<'a> {
    root: &'a dyn Sandbox,
    oracle: Arc<Oracle>,
    brancher: &'a dyn Brancher,
    options: &'a SearchOptions,
    tree: Tree,
    started: Instant,
    /// The wall clock ran out while the brancher was still proposing.
    cut_short: bool,
    /// Fingerprints of every state queued or evaluated.
    seen: HashSet<String>,
    /// The original contents of every file a candidate touched.
    originals: HashMap<String, Option<String>>,
    /// Each node's changes against the root.
    states: HashMap<usize, BTreeMap<String, Option<String>>>,
    queue: Vec<Queued>,
    rng: fastrand::Rng,
    evaluated: usize,
    /// When the first green node was judged.
    first_green: Option<Duration>,
    /// What the evidence's helper found of each green node.
    examined: HashMap<usize, Examination>,
}

impl Engine<'_> {
    fn tell(&self, event: SearchEvent) {
        self.options.observers.emit(&event);
    }

    fn elapsed_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    fn out_of_time(&self) -> bool {
        self.options
            .budget
            .wall_clock
            .is_some_and(|d| self.started.elapsed() >= d)
    }

    fn add_node(&mut self, node: Node) -> usize {
        let id = node.id;
        self.tell(SearchEvent::Node(Box::new(node.clone())));
        self.tree.nodes.push(node);
        id
    }

    fn update(&mut self, id: usize, f: impl FnOnce(&mut Node)) {
        f(&mut self.tree.nodes[id]);
        let node = self.tree.nodes[id].clone();
        self.tell(SearchEvent::Node(Box::new(node)));
    }

    async fn original(&mut self, path: &str) -> Option<String> {
        if let Some(known) = self.originals.get(path) {
            return known.clone();
        }
        let text = self
            .root
            .read_file(Path::new(path))
            .await
            .ok()
            .and_then(|b| String::from_utf8(b).ok());
        self.originals.insert(path.to_owned(), text.clone());
        text
    }

    /// Lines changed against the original code (per file, what is left
    /// between the common head and tail, on both sides), and that region
    /// as a short unified diff.
    async fn change(&mut self, state: &BTreeMap<String, Option<String>>) -> (usize, String) {
        const CONTEXT: usize = 2;
        const MAX_CHANGE: usize = 8 * 1024;
        let mut total = 0;
        let mut change = String::new();
        for (path, new) in state {
            let old = self.original(path).await.unwrap_or_default();
            let new = new.clone().unwrap_or_default();
            let a: Vec<&str> = old.lines().collect();
            let b: Vec<&str> = new.lines().collect();
            let (head, tail) = crate::candidate::common_ends(&a, &b);
            total += (a.len() - head - tail) + (b.len() - head - tail);
            if change.len() < MAX_CHANGE {
                let from = head.saturating_sub(CONTEXT);
                let (a_to, b_to) = (
                    (a.len() - tail + CONTEXT).min(a.len()),
                    (b.len() - tail + CONTEXT).min(b.len()),
                );
                change.push_str(&format!(
                    "--- a/{path}\n+++ b/{path}\n@@ -{},{} +{},{} @@\n",
                    from + 1,
                    a_to - from,
                    from + 1,
                    b_to - from
                ));
                let context = |line: &str| format!(" {line}\n");
                a[from..head]
                    .iter()
                    .for_each(|l| change.push_str(&context(l)));
                a[head..a.len() - tail]
                    .iter()
                    .for_each(|l| change.push_str(&format!("-{l}\n")));
                b[head..b.len() - tail]
                    .iter()
                    .for_each(|l| change.push_str(&format!("+{l}\n")));
                a[a.len() - tail..a_to]
                    .iter()
                    .for_each(|l| change.push_str(&context(l)));
            }
        }
        if change.len() > MAX_CHANGE {
            let mut cut = MAX_CHANGE;
            while !change.is_char_boundary(cut) {
                cut -= 1;
            }
            change.truncate(cut);
            change.push_str("\n… (cut)\n");
        }
        (total, change)
    }

    /// Asks the brancher for `parent`'s candidates (its sandbox is live)
    /// and queues those that apply, parse and are new.
    async fn expand(
        &mut self,
        parent: usize,
        sandbox: &dyn Sandbox,
        judgement: &Judgement,
    ) -> Result<(), SearchError> {
        let node = self.tree.nodes[parent].clone();
        if node.depth >= self.options.budget.max_depth {
            return Ok(());
        }
        let state = self.states.get(&parent).cloned().unwrap_or_default();
        let candidates = {
            let left = self
                .options
                .budget
                .wall_clock
                .map(|d| d.saturating_sub(self.started.elapsed()));
            let cx = BranchContext {
                sandbox,
                node: &node,
                judgement,
                oracle: &self.oracle,
                changed: &state,
                time_left: left,
            };
            let branching = self.brancher.branch(&cx, self.options.budget.branching);
            // The wall clock holds for the brancher too (a model call, a
            // traced run of the tests): past it, its work is dropped and
            // the search ends as timed out.
            match left {
                Some(left) => match tokio::time::timeout(left, branching).await {
                    Ok(found) => found?,
                    Err(_) => {
                        tracing::info!(
                            node = parent,
                            "the brancher ran past the search's wall clock"
                        );
                        self.cut_short = true;
                        return Ok(());
                    }
                },
                None => branching.await?,
            }
        };
        if candidates.is_empty() {
            return Ok(());
        }
        let snapshot = sandbox.snapshot().await?;
        for candidate in candidates {
            self.queue_candidate(&node, &state, &snapshot, candidate, sandbox)
                .await;
        }
        Ok(())
    }

    async fn queue_candidate(
        &mut self,
        parent: &Node,
        parent_state: &BTreeMap<String, Option<String>>,
        snapshot: &Snapshot,
        candidate: Candidate,
        sandbox: &dyn Sandbox,
    ) {
        let id = self.tree.nodes.len();
        let mut node = Node {
            id,
            parent: Some(parent.id),
            depth: parent.depth + 1,
            hypothesis: candidate.hypothesis.clone(),
            status: Status::Exploring,
            score: Score::default(),
            prior: candidate.prior,
            reason: String::new(),
            files: Vec::new(),
            change: String::new(),
            fingerprint: String::new(),
            judgement: None,
            eval_ms: 0,
            at_ms: self.elapsed_ms(),
            evidence: None,
        };
        let delta = match candidate.materialize(sandbox).await {
            Ok(m) => m,
            Err(e) => {
                // Does not apply: red at once, no fork spent.
                node.status = Status::Red;
                node.reason = format!("does not apply: {e}");
                self.evaluated += 1;
                self.add_node(node);
                return;
            }
        };
        let state = self.state_after(parent_state, &delta).await;
        let fingerprint = Materialized {
            files: state.clone(),
        }
        .fingerprint();
        if state.is_empty() || !self.seen.insert(fingerprint.clone()) {
            return; // a state already tried (or the original): never twice
        }
        node.fingerprint = fingerprint;
        node.files = state.keys().cloned().collect();
        node.score.applies = true;
        (node.score.diff_lines, node.change) = self.change(&state).await;
        if let Some(why) = self.refused(&delta).await {
            node.status = Status::Red;
            node.reason = why;
            self.evaluated += 1;
            self.add_node(node);
            return;
        }
        node.score.parses = true;
        self.states.insert(id, state);
        let depth = node.depth;
        // The root's sandbox lacks the seed: its children write it too.
        let mut delta = delta;
        if parent.id == 0 {
            for (path, content) in &self.options.seed {
                delta
                    .files
                    .entry(path.clone())
                    .or_insert_with(|| content.clone());
            }
        }
        self.add_node(node);
        self.queue.push(Queued {
            node: id,
            snapshot: snapshot.clone(),
            delta,
            parent_score: parent.score,
            prior: candidate.prior,
            depth,
        });
    }

    /// The files changed against the root after `delta` on top of
    /// `parent_state`; a file back to its original contents is no change.
    async fn state_after(
        &mut self,
        parent_state: &BTreeMap<String, Option<String>>,
        delta: &Materialized,
    ) -> BTreeMap<String, Option<String>> {
        let mut state = parent_state.clone();
        for (path, content) in &delta.files {
            state.insert(path.clone(), content.clone());
        }
        let mut unchanged = Vec::new();
        for (path, content) in &state {
            if self.original(path).await == *content {
                unchanged.push(path.clone());
            }
        }
        for path in unchanged {
            state.remove(&path);
        }
        state
    }

    /// Why `delta` is red without a test run, if it is. The tests judge:
    /// a candidate that changes or deletes one of the repository's test
    /// files is refused (a new test file, or the reproduction test the
    /// search began with, is not); so is one that breaks a file's syntax.
    async fn refused(&mut self, delta: &Materialized) -> Option<String> {
        let guarded = !self.options.edit_tests;
        for path in delta.files.keys().filter(|_| guarded) {
            let existing = self.original(path).await.is_some();
            if existing
                && self.oracle.stack.is_test_file(path)
                && !self.options.seed.contains_key(path)
            {
                return Some(format!(
                    "{path}: edits a test file (tests are never edited)"
                ));
            }
        }
        for (path, content) in &delta.files {
            let (Some(lang), Some(text)) = (Lang::of_path(Path::new(path)), content) else {
                continue;
            };
            if let Some((line, col)) = lang.syntax_error(text) {
                let before = self.original(path).await.unwrap_or_default();
                if lang.syntax_error(&before).is_none() {
                    return Some(format!("{path}:{line}:{col}: does not parse"));
                }
            }
        }
        None
    }

    /// The next queued candidate, by the order.
    fn pick(&mut self) -> Option<Queued> {
        if self.queue.is_empty() {
            return None;
        }
        let order = self.options.order.unwrap_or(Order::BestFirst);
        let index = match order {
            Order::BestFirst => {
                let total = self.oracle.target.len().max(1) as f64;
                let priority = |q: &Queued| {
                    // How far the parent got (0..1), and a discount per
                    // stacked edit: a first-order candidate of the same
                    // prior goes first.
                    let progress = q.parent_score.target_passed as f64
                        / total
                        / (1 + q.parent_score.broken) as f64;
                    q.prior.max(1e-3)
                        * (0.5 + 0.5 * progress)
                        * DEPTH_DISCOUNT.powi(q.depth as i32 - 1)
                };
                let mut best = 0;
                for (i, q) in self.queue.iter().enumerate() {
                    let b = &self.queue[best];
                    let better = priority(q)
                        .total_cmp(&priority(b))
                        .then(b.depth.cmp(&q.depth))
                        .then(b.node.cmp(&q.node));
                    if better.is_gt() {
                        best = i;
                    }
                }
                best
            }
            Order::BreadthFirst => self
                .queue
                .iter()
                .enumerate()
                .min_by_key(|(_, q)| (q.depth, q.node))
                .map_or(0, |(i, _)| i),
            Order::Random(_) => self.rng.usize(..self.queue.len()),
        };
        Some(self.queue.swap_remove(index))
    }
}

/// Evaluates one candidate: a fork of its parent's frozen state, its files
/// written, the oracle's judgement.
#[tracing::instrument(name = "node", skip_all, fields(node = queued.node, depth = queued.depth))]
async fn evaluate(queued: Queued, oracle: Arc<Oracle>) -> Evaluated {
    let started = Instant::now();
    let result = async {
        let fork = queued.snapshot.fork().await?;
        if let Err(e) = queued.delta.write(&*fork).await {
            let _ = fork.destroy().await;
            return Err(e);
        }
        match oracle.judge(&*fork).await {
            Ok(j) => Ok((fork, j)),
            Err(e) => {
                let _ = fork.destroy().await;
                Err(e)
            }
        }
    }
    .await;
    let ms = started.elapsed().as_millis() as u64;
    match &result {
        Ok((_, j)) => tracing::debug!(green = j.green(), ms, "judged"),
        Err(e) => tracing::warn!(error = %e, ms, "the candidate could not be judged"),
    }
    (queued.node, result, ms)
}

/// Searches from `root` (the warm, unmodified sandbox; read, never
/// changed) for a candidate the oracle calls green. `genesis` is the
/// oracle's judgement of the unmodified code.
#[tracing::instrument(name = "search", skip_all, fields(brancher = %brancher.name()))]
pub async fn search(
    root: &dyn Sandbox,
    oracle: &Oracle,
    genesis: &Judgement,
    brancher: &dyn Brancher,
    options: &SearchOptions,
) -> Result<SearchOutcome, SearchError> {
    let mut engine = Engine::new(root, oracle, brancher, options);
    engine.plant(genesis);
    engine.expand(0, root, genesis).await?;
    let found = engine.run().await?;
    engine.finish(found).await
}

mod patch;

impl<'a> Engine<'a> {
    fn new(
        root: &'a dyn Sandbox,
        oracle: &Oracle,
        brancher: &'a dyn Brancher,
        options: &'a SearchOptions,
    ) -> Engine<'a> {
        let order = options.order.unwrap_or(Order::BestFirst);
        Engine {
            root,
            oracle: Arc::new(oracle.clone()),
            brancher,
            options,
            tree: Tree {
                brancher: brancher.name().to_owned(),
                order: order.name().to_owned(),
                ..Tree::default()
            },
            started: Instant::now(),
            cut_short: false,
            seen: HashSet::new(),
            originals: HashMap::new(),
            states: HashMap::new(),
            queue: Vec::new(),
            rng: fastrand::Rng::with_seed(match order {
                Order::Random(seed) => seed,
                _ => 0,
            }),
            evaluated: 0,
            first_green: None,
            examined: HashMap::new(),
        }
    }
}

impl Engine<'_> {
    /// Node 0: the original code (with the seed), judged `genesis`.
    fn plant(&mut self, genesis: &Judgement) {
        let seed = Materialized {
            files: self.options.seed.clone(),
        };
        self.seen.insert(seed.fingerprint());
        self.states.insert(0, self.options.seed.clone());
        self.add_node(Node {
            id: 0,
            parent: None,
            depth: 0,
            hypothesis: "the original code".to_owned(),
            status: Status::Red,
            score: Score {
                applies: true,
                parses: true,
                target_passed: genesis.target_passed,
                broken: 0,
                diff_lines: 0,
            },
            prior: 0.0,
            reason: format!(
                "{} of {} target tests failing",
                genesis.target_total - genesis.target_passed,
                genesis.target_total
            ),
            files: self.options.seed.keys().cloned().collect(),
            change: String::new(),
            fingerprint: seed.fingerprint(),
            judgement: Some(genesis.clone()),
            eval_ms: 0,
            at_ms: 0,
            evidence: None,
        });
    }

    /// Evaluates queued candidates, `jobs` at a time, until the budget is
    /// spent, the queue is empty, or (unless told to keep searching) a
    /// green one is found.
    async fn run(&mut self) -> Result<Vec<usize>, SearchError> {
        let options = self.options;
        let budget = &options.budget;
        let mut running: JoinSet<Evaluated> = JoinSet::new();
        let mut in_flight: HashSet<usize> = HashSet::new();
        let mut found: Vec<usize> = Vec::new();
        let mut stop = false;
        loop {
            stop |= self.collected_enough(&found);
            while !stop
                && running.len() < budget.jobs
                && self.evaluated + running.len() < budget.max_nodes
                && !self.out_of_time()
            {
                let Some(queued) = self.pick() else { break };
                in_flight.insert(queued.node);
                running.spawn(evaluate(queued, self.oracle.clone()));
            }
            if stop && !running.is_empty() {
                // A green node ends the search: what still runs is
                // cancelled (dropping a fork ends its processes).
                running.shutdown().await;
                for id in in_flight.drain() {
                    self.update(id, |n| {
                        n.status = Status::Pruned;
                        n.reason = "cancelled: a green node was found".to_owned();
                    });
                }
                break;
            }
            let Some(done) = running.join_next().await else {
                break;
            };
            let (id, result, eval_ms) = done.map_err(|e| SearchError::Task(e.to_string()))?;
            self.evaluated += 1;
            in_flight.remove(&id);
            let (sandbox, judgement) = match result {
                Ok(r) => r,
                Err(e) => {
                    // Drain what is running, then report.
                    while let Some(Ok((_, Ok((sb, _)), _))) = running.join_next().await {
                        let _ = sb.destroy().await;
                    }
                    return Err(e.into());
                }
            };
            self.record(id, &judgement, eval_ms);
            if judgement.green() {
                // Its state is kept; its code is written afresh if it wins.
                let _ = sandbox.destroy().await;
                if self.options.plausible > 1 || self.options.keep_searching {
                    let state = self.states.get(&id).cloned().unwrap_or_default();
                    let examined = examine_green(self.root, &self.oracle, &state).await;
                    self.examined.insert(id, examined);
                }
                found.push(id);
                self.first_green.get_or_insert(self.started.elapsed());
                stop |= self.collected_enough(&found);
                continue;
            }
            if !stop && self.promising(id, &judgement) {
                self.expand(id, &*sandbox, &judgement).await?;
            }
            let _ = sandbox.destroy().await;
        }
        Ok(found)
    }

    /// Whether the green nodes `found` end the search: as many as asked
    /// for ([`SearchOptions::plausible`]; never, when keeping on for a
    /// smaller one), or the time allowed after the first is up.
    fn collected_enough(&self, found: &[usize]) -> bool {
        let Some(first) = self.first_green else {
            return false;
        };
        if self.options.keep_searching {
            return false;
        }
        let window = first.clamp(Duration::from_secs(10), PLAUSIBLE_WINDOW);
        self.behaviours(found) >= self.options.plausible.max(1)
            || self.started.elapsed() >= first + window
    }

    /// How many behaviours the green nodes `found` have: those answering
    /// alike near their examples count once (a patch and its equivalent
    /// rewriting tell nothing apart), those without examples each once.
    fn behaviours(&self, found: &[usize]) -> usize {
        let mut seen: Vec<Vec<&str>> = Vec::new();
        let mut alone = 0;
        for id in found {
            match self.examined.get(id).and_then(Examination::behaviour) {
                Some(b) if !seen.contains(&b) => seen.push(b),
                Some(_) => {}
                None => alone += 1,
            }
        }
        seen.len() + alone
    }

    /// Writes `judgement` into node `id`; its score.
    fn record(&mut self, id: usize, judgement: &Judgement, eval_ms: u64) -> Score {
        let green = judgement.green();
        let at_ms = self.elapsed_ms();
        self.update(id, |n| {
            n.status = if green { Status::Green } else { Status::Red };
            n.score.target_passed = judgement.target_passed;
            n.score.broken = judgement.broken.len();
            n.reason = reason(judgement);
            n.judgement = Some(judgement.clone());
            n.eval_ms = eval_ms;
            n.at_ms = at_ms;
        });
        self.tree.nodes[id].score
    }

    /// Whether red node `id` is branched again: when it got closer than
    /// its parent (more target tests pass, no more guard tests broken) —
    /// or, for a brancher that learns from a failure, when it is no worse
    /// by that measure.
    fn promising(&self, id: usize, judgement: &Judgement) -> bool {
        let score = self.tree.nodes[id].score;
        let parent = self.tree.nodes[id]
            .parent
            .map(|p| self.tree.nodes[p].score)
            .unwrap_or_default();
        let closer = (score.target_passed, std::cmp::Reverse(score.broken));
        let before = (parent.target_passed, std::cmp::Reverse(parent.broken));
        !judgement.timed_out
            && judgement.ran
            && if self.brancher.refines() {
                closer >= before
            } else {
                score.target_passed > parent.target_passed && score.broken <= parent.broken
            }
    }

    /// Prunes what was never evaluated, weighs the green nodes `found` by
    /// the evidence beyond the tests, makes the chosen one's clean patch,
    /// and tells the end.
    async fn finish(mut self, found: Vec<usize>) -> Result<SearchOutcome, SearchError> {
        let left: Vec<usize> = self.queue.drain(..).map(|q| q.node).collect();
        let budget_spent = found.is_empty() && (!left.is_empty() || self.cut_short);
        for id in left {
            self.update(id, |n| {
                n.status = Status::Pruned;
                n.reason = "not evaluated: the search ended".to_owned();
            });
        }
        self.tree.suspected = self.brancher.suspected();
        let winner = match self.choose(&found).await {
            Some((node, evidence)) => {
                let state = self.states.get(&node).cloned().unwrap_or_default();
                let (patch, diff_lines, sandbox) = patch::clean_patch(self.root, &state).await?;
                self.tree.best = Some(node);
                Some(Winner {
                    node,
                    patch,
                    diff_lines,
                    sandbox,
                    evidence,
                })
            }
            None => None,
        };
        tracing::info!(
            evaluated = self.evaluated,
            solved = winner.is_some(),
            budget_spent,
            "search done"
        );
        self.tell(SearchEvent::Finished {
            solved: winner.is_some(),
            best: self.tree.best,
            evaluated: self.evaluated,
        });
        Ok(SearchOutcome {
            tree: self.tree,
            winner,
            evaluated: self.evaluated,
            budget_spent,
            elapsed: self.started.elapsed(),
        })
    }

    /// The green node to hand back and its evidence: each of `found` is
    /// weighed ([`weigh`]) and its evidence written into its node. Keeping
    /// on for a smaller patch, the smallest of those the evidence ranks
    /// equal wins.
    async fn choose(&mut self, found: &[usize]) -> Option<(usize, Evidence)> {
        if found.is_empty() {
            return None;
        }
        let mut greens = Vec::with_capacity(found.len());
        for &id in found {
            let examined = match self.examined.remove(&id) {
                Some(e) => e,
                None => {
                    let state = self.states.get(&id).cloned().unwrap_or_default();
                    examine_green(self.root, &self.oracle, &state).await
                }
            };
            greens.push(Green {
                node: id,
                prior: self.tree.nodes[id].prior,
                diff_lines: self.tree.nodes[id].score.diff_lines,
                examined,
            });
        }
        if self.options.keep_searching {
            // The brancher's prior does not outrank size here.
            for g in &mut greens {
                g.prior = -(g.diff_lines as f64);
            }
        }
        let (evidence, best) = weigh(self.root, &self.oracle, &self.tree.suspected, &greens).await;
        for (g, ev) in greens.iter().zip(&evidence) {
            let ev = ev.clone();
            self.update(g.node, |n| n.evidence = Some(ev));
        }
        Some((greens[best].node, evidence[best].clone()))
    }
}

/// Why a judged node is red, in a line.
fn reason(j: &Judgement) -> String {
    if j.green() {
        return String::new();
    }
    if j.timed_out {
        return "the tests timed out".to_owned();
    }
    if let Some(first) = j.hung.first() {
        // Its budget came from the unmodified code's measured time.
        return format!("{first} hung: killed, a loop or a wait that never ends");
    }
    if !j.ran {
        return "no test ran (a build or import failure)".to_owned();
    }
    if j.target_passed < j.target_total {
        return format!(
            "{} of {} target tests passing",
            j.target_passed, j.target_total
        );
    }
    format!(
        "target green, but {} guard test(s) broke: {}",
        j.broken.len(),
        j.broken
            .iter()
            .take(3)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ")
    )
}
