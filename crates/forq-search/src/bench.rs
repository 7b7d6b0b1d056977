//! Measurements side by side in one run (never timed assertions):
//! expansion orders over the same brancher and budget
//! ([`compare_orders`]), repair spaces (the `mutate` brancher against
//! `templates`) over the same bugs and budget ([`compare_spaces`]), and
//! fork-based evaluation against a cold copy of the repository per
//! candidate ([`throughput`]).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use forq_bootstrap::GateOptions;
use forq_graph::Index;
use forq_sandbox::Backend;
use serde::Serialize;

use crate::brancher::{BranchContext, Brancher, Mutate};
use crate::candidate::Candidate;
use crate::fix::{prepare, FixError, Prepared};
use crate::search::{search, Budget, Order, SearchOptions, SearchOutcome};
use crate::tree::Status;

/// One search of one example in one order.
#[derive(Debug, Clone, Serialize)]
pub struct OrderRun {
    /// The example's directory name.
    pub example: String,
    /// `best_first`, `breadth_first` or `random`.
    pub order: String,
    /// Whether a green node was found.
    pub solved: bool,
    /// Candidates evaluated.
    pub nodes: usize,
    /// Wall time of the search, in seconds.
    pub wall_s: f64,
    /// The patch's size, when solved.
    pub diff_lines: usize,
}

/// Per order, over all examples.
#[derive(Debug, Clone, Serialize)]
pub struct OrderSummary {
    /// The order.
    pub order: String,
    /// Examples solved.
    pub solved: usize,
    /// Examples run.
    pub examples: usize,
    /// Mean candidates evaluated over the examples every order solved.
    pub mean_nodes_common: f64,
    /// Median wall time of a search, in seconds.
    pub median_wall_s: f64,
}

/// The orders compared.
pub const ORDERS: [Order; 3] = [Order::BestFirst, Order::BreadthFirst, Order::Random(0x5eed)];

fn mutate_for(repo: &Path, prepared: &Prepared) -> Result<Mutate, forq_graph::Error> {
    Ok(Mutate::new(
        Index::open_current(repo)?,
        prepared.stack.clone(),
    ))
}

/// Why a measurement could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BenchError {
    /// Preparing an example failed.
    #[error("{example}: {source}")]
    Prepare {
        /// The example.
        example: String,
        /// Why.
        #[source]
        source: FixError,
    },
    /// Anything else about one example.
    #[error("{example}: {message}")]
    Example {
        /// The example.
        example: String,
        /// What failed.
        message: String,
    },
}

/// The tests a bug directory names as its targets: `TARGETS`, one test
/// id per line (blank lines and `#` comments aside); empty when there is
/// no such file (then every failing test is a target).
pub fn targets_of(dir: &Path) -> std::io::Result<Vec<String>> {
    match std::fs::read_to_string(dir.join("TARGETS")) {
        Ok(text) => Ok(text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(str::to_owned)
            .collect()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

/// Where a bug directory says its fault is: `FAULT`, one line
/// `PATH FIRST LAST` (the faulty function's file and 1-based lines in the
/// bug's tree). Read by the bench only, to report how well localisation
/// and the candidates found it; the search never sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Fault {
    /// The file, relative to the repository.
    pub file: String,
    /// First line.
    pub first: u32,
    /// Last line.
    pub last: u32,
}

impl Fault {
    /// Whether line `line` of `file` lies in the fault.
    pub fn holds(&self, file: &str, line: u32) -> bool {
        self.file == file && (self.first..=self.last).contains(&line)
    }

    /// Whether a node's `change` (a unified diff with two lines of
    /// context) edits a line of the fault: a hunk of the fault's file
    /// whose changed old lines meet its span.
    pub fn touched_by(&self, diff: &str) -> bool {
        let mut in_file = false;
        for line in diff.lines() {
            if let Some(path) = line.strip_prefix("--- ") {
                in_file = path.strip_prefix("a/").unwrap_or(path) == self.file;
            } else if let (true, Some(hunk)) = (in_file, line.strip_prefix("@@ -")) {
                let old = hunk.split_whitespace().next().unwrap_or("");
                let (start, len) = old.split_once(',').unwrap_or((old, "1"));
                let (Ok(start), Ok(len)) = (start.parse::<u32>(), len.parse::<u32>()) else {
                    continue;
                };
                // The hunk carries two lines of context each side (a
                // pure insertion: those four lines alone).
                let (lo, hi) = (start + 2, (start + len).saturating_sub(3));
                let (lo, hi) = (lo.min(hi), lo.max(hi));
                if lo <= self.last && hi >= self.first {
                    return true;
                }
            }
        }
        false
    }
}

/// The fault `dir`'s `FAULT` names; `None` when there is no such file.
pub fn fault_of(dir: &Path) -> std::io::Result<Option<Fault>> {
    let text = match std::fs::read_to_string(dir.join("FAULT")) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut words = text.split_whitespace();
    let bad = || {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "{}: expected `PATH FIRST LAST`, found {text:?}",
                dir.join("FAULT").display()
            ),
        )
    };
    let file = words.next().ok_or_else(bad)?.to_owned();
    let first = words.next().and_then(|w| w.parse().ok()).ok_or_else(bad)?;
    let last = words.next().and_then(|w| w.parse().ok()).ok_or_else(bad)?;
    Ok(Some(Fault { file, first, last }))
}

/// Prepares each example once under `gate` (its targets from
/// [`targets_of`]) and searches it once per variant, `setup` making the
/// brancher and options of each (from `mutate` over the example's graph);
/// `visit` reads each outcome. An example that cannot be prepared or
/// searched goes to `failed` and the others go on.
async fn search_each<V: Copy>(
    backend: &dyn Backend,
    examples: &[PathBuf],
    gate: &GateOptions,
    variants: &[V],
    setup: impl Fn(Mutate, V) -> (Mutate, SearchOptions),
    mut visit: impl FnMut(&str, V, &Mutate, &SearchOutcome),
    mut failed: impl FnMut(BenchError),
) {
    for dir in examples {
        let example = dir
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let fail = |message: String| BenchError::Example {
            example: example.clone(),
            message,
        };
        let targets = match targets_of(dir) {
            Ok(t) => t,
            Err(e) => {
                failed(fail(format!("cannot read its TARGETS: {e}")));
                continue;
            }
        };
        let prepared = match prepare(backend, dir, gate, &targets, Duration::from_secs(300)).await {
            Ok(p) => p,
            Err(source) => {
                failed(BenchError::Prepare {
                    example: example.clone(),
                    source,
                });
                continue;
            }
        };
        for &variant in variants {
            let mutate = match mutate_for(dir, &prepared) {
                Ok(m) => m,
                Err(e) => {
                    failed(fail(e.to_string()));
                    break;
                }
            };
            let (brancher, options) = setup(mutate, variant);
            match search(
                &*prepared.root,
                &prepared.oracle,
                &prepared.genesis,
                &brancher,
                &options,
            )
            .await
            {
                Ok(out) => {
                    visit(&example, variant, &brancher, &out);
                    if let Some(w) = out.winner {
                        let _ = w.sandbox.destroy().await;
                    }
                }
                Err(e) => {
                    failed(fail(e.to_string()));
                    break;
                }
            }
        }
        let _ = prepared.root.destroy().await;
    }
}

/// Searches each example with `mutate` in every order of [`ORDERS`], the
/// same budget each time; `progress` hears of each run.
pub async fn compare_orders(
    backend: &dyn Backend,
    examples: &[PathBuf],
    budget: &Budget,
    progress: &(dyn Fn(&OrderRun) + Sync),
) -> Result<(Vec<OrderRun>, Vec<OrderSummary>), BenchError> {
    let mut runs = Vec::new();
    let mut failure = None;
    search_each(
        backend,
        examples,
        &GateOptions::default(),
        &ORDERS,
        |mutate, order| {
            let options = SearchOptions::default().budget(budget.clone()).order(order);
            (mutate, options)
        },
        |example, order, _, out| {
            let run = OrderRun {
                example: example.to_owned(),
                order: order.name().to_owned(),
                solved: out.winner.is_some(),
                nodes: out.evaluated,
                wall_s: out.elapsed.as_secs_f64(),
                diff_lines: out.winner.as_ref().map_or(0, |w| w.diff_lines),
            };
            progress(&run);
            runs.push(run);
        },
        |e| {
            failure.get_or_insert(e);
        },
    )
    .await;
    if let Some(e) = failure {
        return Err(e);
    }
    let summaries = summarize(&runs);
    Ok((runs, summaries))
}

/// One search of one bug with one repair space.
#[derive(Debug, Clone, Serialize)]
pub struct SpaceRun {
    /// The bug's directory name.
    pub example: String,
    /// `mutate` or `templates`.
    pub brancher: String,
    /// Whether a green node was found.
    pub solved: bool,
    /// Candidates evaluated.
    pub nodes: usize,
    /// Candidates killed for hanging.
    pub hung: usize,
    /// Whether the search's wall clock ran out before it was solved.
    pub timed_out: bool,
    /// Wall time of the search, in seconds.
    pub wall_s: f64,
    /// The patch's size, when solved.
    pub diff_lines: usize,
    /// Where the bug's `FAULT` came among the suspected statements
    /// (1-based; the first suspected line inside it), when it has one
    /// and it was suspected at all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fault_rank: Option<usize>,
    /// Candidates evaluated that edit a line of the bug's `FAULT`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fault_candidates: Option<usize>,
    /// Statements the search reported as suspected.
    pub suspected: usize,
}

/// A bug that could not be measured, and why (it could not be set up:
/// its tests do not run, or its targets are not among them).
#[derive(Debug, Clone, Serialize)]
pub struct Unmeasured {
    /// The bug's directory name.
    pub example: String,
    /// Why.
    pub reason: String,
}

/// [`compare_spaces`]'s answer.
#[derive(Debug, Clone, Serialize)]
pub struct SpacesReport {
    /// Every search.
    pub runs: Vec<SpaceRun>,
    /// Per repair space, over the bugs that could be set up.
    pub spaces: Vec<SpaceSummary>,
    /// The bugs that could not be, each with its reason.
    pub unmeasured: Vec<Unmeasured>,
}

/// Per repair space, over all bugs.
#[derive(Debug, Clone, Serialize)]
pub struct SpaceSummary {
    /// The brancher.
    pub brancher: String,
    /// Bugs solved.
    pub solved: usize,
    /// Bugs run.
    pub examples: usize,
    /// Mean candidates over the bugs both spaces solved.
    pub mean_nodes_common: f64,
    /// Median wall time of a solved bug's search, in seconds.
    pub median_solved_s: f64,
    /// Candidates killed for hanging, over all bugs.
    pub hung: usize,
    /// Bugs whose search ran out of wall clock unsolved.
    pub timed_out: usize,
    /// Bugs with a `FAULT`.
    pub with_fault: usize,
    /// Of those, the bugs whose search reported suspected statements
    /// (none without statement-level localisation: `mutate`).
    pub localised: usize,
    /// Of those, the bugs whose fault was among the suspected statements.
    pub fault_suspected: usize,
    /// Of those, the bugs with a candidate that edits the fault.
    pub fault_edited: usize,
}

/// The repair spaces compared: the mutation operators, and the same with
/// the repair templates.
pub const SPACES: [bool; 2] = [false, true];

/// Searches each bug best-first with `mutate` and with `templates`, the
/// same budget each time, the oracle under `gate`'s test budgets (a
/// per-test budget makes looping bugs cheap); `progress` hears of each.
/// A bug that cannot be set up is reported in
/// [`SpacesReport::unmeasured`], not counted as unsolved.
pub async fn compare_spaces(
    backend: &dyn Backend,
    examples: &[PathBuf],
    budget: &Budget,
    gate: &GateOptions,
    progress: &(dyn Fn(&SpaceRun) + Sync),
) -> SpacesReport {
    let mut runs = Vec::new();
    let mut unmeasured = Vec::new();
    let faults: Vec<(String, Fault)> = examples
        .iter()
        .filter_map(|dir| {
            let name = dir.file_name()?.to_string_lossy().into_owned();
            match fault_of(dir) {
                Ok(f) => Some((name, f?)),
                Err(e) => {
                    unmeasured.push(Unmeasured {
                        example: name,
                        reason: e.to_string(),
                    });
                    None
                }
            }
        })
        .collect();
    search_each(
        backend,
        examples,
        gate,
        &SPACES,
        |mutate, templates| {
            let options = SearchOptions::default().budget(budget.clone());
            (mutate.templates(templates), options)
        },
        |example, _, brancher, out| {
            let fault = faults.iter().find(|(n, _)| n == example).map(|(_, f)| f);
            let run = space_run(example, brancher.name(), out, fault, budget);
            progress(&run);
            runs.push(run);
        },
        |e| unmeasured.push(e.into()),
    )
    .await;
    // A bug whose search failed part-way is not measured at all.
    runs.retain(|r| !unmeasured.iter().any(|u| u.example == r.example));
    SpacesReport {
        spaces: summaries(&runs),
        runs,
        unmeasured,
    }
}

impl From<BenchError> for Unmeasured {
    fn from(e: BenchError) -> Unmeasured {
        match e {
            BenchError::Prepare { example, source } => Unmeasured {
                example,
                reason: source.to_string(),
            },
            BenchError::Example { example, message } => Unmeasured {
                example,
                reason: message,
            },
        }
    }
}

/// What one search of `example` with `brancher` measured.
fn space_run(
    example: &str,
    brancher: &str,
    out: &SearchOutcome,
    fault: Option<&Fault>,
    budget: &Budget,
) -> SpaceRun {
    let hung = out
        .tree
        .nodes
        .iter()
        .skip(1)
        .filter(|n| n.judgement.as_ref().is_some_and(|j| !j.hung.is_empty()))
        .count();
    SpaceRun {
        fault_rank: fault.and_then(|f| {
            let at = out
                .tree
                .suspected
                .iter()
                .position(|s| f.holds(&s.file, s.line));
            at.map(|i| i + 1)
        }),
        fault_candidates: fault.map(|f| {
            out.tree
                .nodes
                .iter()
                .skip(1)
                .filter(|n| n.judgement.is_some() && f.touched_by(&n.change))
                .count()
        }),
        suspected: out.tree.suspected.len(),
        example: example.to_owned(),
        brancher: brancher.to_owned(),
        solved: out.winner.is_some(),
        nodes: out.evaluated,
        hung,
        timed_out: out.winner.is_none() && budget.wall_clock.is_some_and(|w| out.elapsed >= w),
        wall_s: out.elapsed.as_secs_f64(),
        diff_lines: out.winner.as_ref().map_or(0, |w| w.diff_lines),
    }
}

/// Per repair space, over its runs; candidates compared over the bugs
/// every space solved.
fn summaries(runs: &[SpaceRun]) -> Vec<SpaceSummary> {
    let names: Vec<String> = {
        let mut n: Vec<String> = runs.iter().map(|r| r.brancher.clone()).collect();
        n.dedup();
        n.sort();
        n.dedup();
        n
    };
    let solved_by_all = |ex: &str| {
        names.iter().all(|b| {
            runs.iter()
                .any(|r| r.example == ex && &r.brancher == b && r.solved)
        })
    };
    names
        .iter()
        .map(|b| {
            let mine: Vec<&SpaceRun> = runs.iter().filter(|r| &r.brancher == b).collect();
            let common: Vec<f64> = mine
                .iter()
                .filter(|r| solved_by_all(&r.example))
                .map(|r| r.nodes as f64)
                .collect();
            SpaceSummary {
                brancher: b.clone(),
                solved: mine.iter().filter(|r| r.solved).count(),
                examples: mine.len(),
                mean_nodes_common: if common.is_empty() {
                    0.0
                } else {
                    common.iter().sum::<f64>() / common.len() as f64
                },
                median_solved_s: median(
                    mine.iter().filter(|r| r.solved).map(|r| r.wall_s).collect(),
                ),
                hung: mine.iter().map(|r| r.hung).sum(),
                timed_out: mine.iter().filter(|r| r.timed_out).count(),
                with_fault: mine.iter().filter(|r| r.fault_candidates.is_some()).count(),
                localised: mine
                    .iter()
                    .filter(|r| r.fault_candidates.is_some() && r.suspected > 0)
                    .count(),
                fault_suspected: mine.iter().filter(|r| r.fault_rank.is_some()).count(),
                fault_edited: mine
                    .iter()
                    .filter(|r| r.fault_candidates.is_some_and(|n| n > 0))
                    .count(),
            }
        })
        .collect()
}

fn median(mut xs: Vec<f64>) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

fn summarize(runs: &[OrderRun]) -> Vec<OrderSummary> {
    let examples: Vec<&str> = {
        let mut e: Vec<&str> = runs.iter().map(|r| r.example.as_str()).collect();
        e.dedup();
        e
    };
    let solved_by_all = |ex: &str| {
        ORDERS.iter().all(|o| {
            runs.iter()
                .any(|r| r.example == ex && r.order == o.name() && r.solved)
        })
    };
    let common: Vec<&str> = examples
        .iter()
        .copied()
        .filter(|e| solved_by_all(e))
        .collect();
    ORDERS
        .iter()
        .map(|o| {
            let mine: Vec<&OrderRun> = runs.iter().filter(|r| r.order == o.name()).collect();
            let common_nodes: Vec<f64> = mine
                .iter()
                .filter(|r| common.contains(&r.example.as_str()))
                .map(|r| r.nodes as f64)
                .collect();
            OrderSummary {
                order: o.name().to_owned(),
                solved: mine.iter().filter(|r| r.solved).count(),
                examples: mine.len(),
                mean_nodes_common: if common_nodes.is_empty() {
                    0.0
                } else {
                    common_nodes.iter().sum::<f64>() / common_nodes.len() as f64
                },
                median_wall_s: median(mine.iter().map(|r| r.wall_s).collect()),
            }
        })
        .collect()
}

/// One way of evaluating candidates.
#[derive(Debug, Clone, Serialize)]
pub struct Evaluations {
    /// Candidates evaluated.
    pub candidates: usize,
    /// Seconds for all of them.
    pub total_s: f64,
    /// Median seconds per candidate.
    pub median_s: f64,
    /// Candidates per minute.
    pub per_minute: f64,
}

impl Evaluations {
    fn from(times: &[Duration]) -> Evaluations {
        let total: f64 = times.iter().map(Duration::as_secs_f64).sum();
        Evaluations {
            candidates: times.len(),
            total_s: total,
            median_s: median(times.iter().map(Duration::as_secs_f64).collect()),
            per_minute: if total > 0.0 {
                times.len() as f64 * 60.0 / total
            } else {
                0.0
            },
        }
    }
}

/// Fork-based against cold-copy evaluation of the same candidates.
#[derive(Debug, Clone, Serialize)]
pub struct Throughput {
    /// The example.
    pub example: String,
    /// Seconds to provision the warm root once (installs, build).
    pub provision_s: f64,
    /// Each candidate in a fork of the warm root.
    pub fork: Evaluations,
    /// Each candidate in a fresh copy of the repository, installed anew.
    pub cold: Evaluations,
    /// `fork.per_minute / cold.per_minute`.
    pub ratio: f64,
}

/// Evaluates the first `n` of `mutate`'s candidates for `repo` both ways,
/// one at a time: in a fork of one warm root, and in a copy of the
/// repository provisioned from scratch for each.
pub async fn throughput(
    backend: &dyn Backend,
    repo: &Path,
    n: usize,
) -> Result<Throughput, BenchError> {
    let example = repo
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let gate = GateOptions::default();
    let started = Instant::now();
    let prepared = prepare(backend, repo, &gate, &[], Duration::from_secs(300))
        .await
        .map_err(|source| BenchError::Prepare {
            example: example.clone(),
            source,
        })?;
    let provision_s = started.elapsed().as_secs_f64();
    let result = async {
        let candidates = first_candidates(repo, &prepared, n).await?;
        let fork = Evaluations::from(&time_in_forks(&prepared, &candidates).await?);
        let cold =
            Evaluations::from(&time_in_copies(backend, repo, &prepared, &gate, &candidates).await?);
        let ratio = if cold.per_minute > 0.0 {
            fork.per_minute / cold.per_minute
        } else {
            0.0
        };
        Ok(Throughput {
            example: example.clone(),
            provision_s,
            fork,
            cold,
            ratio,
        })
    }
    .await;
    let _ = prepared.root.destroy().await;
    result.map_err(|message| BenchError::Example { example, message })
}

/// `mutate`'s first `n` candidates at the warm root.
async fn first_candidates(
    repo: &Path,
    prepared: &Prepared,
    n: usize,
) -> Result<Vec<Candidate>, String> {
    let mutate = mutate_for(repo, prepared).map_err(|e| e.to_string())?;
    let root_node = crate::tree::Node {
        id: 0,
        parent: None,
        depth: 0,
        hypothesis: String::new(),
        status: Status::Red,
        score: Default::default(),
        prior: 0.0,
        reason: String::new(),
        files: Vec::new(),
        change: String::new(),
        fingerprint: String::new(),
        judgement: None,
        eval_ms: 0,
        at_ms: 0,
        evidence: None,
    };
    let changed = Default::default();
    let cx = BranchContext {
        sandbox: &*prepared.root,
        node: &root_node,
        judgement: &prepared.genesis,
        oracle: &prepared.oracle,
        changed: &changed,
        time_left: None,
    };
    mutate.branch(&cx, n).await.map_err(|e| e.to_string())
}

/// Each candidate judged in a fork of the warm root, one at a time.
async fn time_in_forks(
    prepared: &Prepared,
    candidates: &[Candidate],
) -> Result<Vec<Duration>, String> {
    let mut times = Vec::new();
    for c in candidates {
        let at = Instant::now();
        let m = c
            .materialize(&*prepared.root)
            .await
            .map_err(|e| e.to_string())?;
        let fork = prepared.root.fork().await.map_err(|e| e.to_string())?;
        m.write(&*fork).await.map_err(|e| e.to_string())?;
        let judged = prepared.oracle.judge(&*fork).await;
        let _ = fork.destroy().await;
        judged.map_err(|e| e.to_string())?;
        times.push(at.elapsed());
    }
    Ok(times)
}

/// Each candidate judged in a copy of the repository provisioned from
/// scratch, one at a time.
async fn time_in_copies(
    backend: &dyn Backend,
    repo: &Path,
    prepared: &Prepared,
    gate: &GateOptions,
    candidates: &[Candidate],
) -> Result<Vec<Duration>, String> {
    let mut times = Vec::new();
    for c in candidates {
        let at = Instant::now();
        let copy = tempfile::Builder::new()
            .prefix("forq-cold-")
            .tempdir()
            .map_err(|e| e.to_string())?;
        copy_tree(repo, copy.path()).map_err(|e| e.to_string())?;
        let sandbox = forq_bootstrap::provision(backend, copy.path(), &prepared.stack, gate)
            .await
            .map_err(|e| e.to_string())?;
        let m = c.materialize(&*sandbox).await.map_err(|e| e.to_string())?;
        m.write(&*sandbox).await.map_err(|e| e.to_string())?;
        let judged = prepared.oracle.judge(&*sandbox).await;
        let _ = sandbox.destroy().await;
        judged.map_err(|e| e.to_string())?;
        times.push(at.elapsed());
    }
    Ok(times)
}

/// Copies a repository's files (not `.forq`, `target`, `node_modules`:
/// what forq or a build made); a symbolic link stays a link to the same
/// target (wcwidth's `README.rst` is one, and its build needs it).
pub fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let name = e.file_name();
        if matches!(name.to_str(), Some(".forq" | "target" | "node_modules")) {
            continue;
        }
        let kind = e.file_type()?;
        if kind.is_dir() {
            copy_tree(&e.path(), &to.join(&name))?;
        } else if kind.is_file() {
            std::fs::copy(e.path(), to.join(&name))?;
        } else if kind.is_symlink() {
            copy_link(&e.path(), &to.join(&name))?;
        }
    }
    Ok(())
}

#[cfg(unix)]
fn copy_link(link: &Path, to: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(std::fs::read_link(link)?, to)
}

/// Elsewhere a link's contents are copied (a dangling one is left out).
#[cfg(not(unix))]
fn copy_link(link: &Path, to: &Path) -> std::io::Result<()> {
    match std::fs::metadata(link) {
        Ok(m) if m.is_dir() => copy_tree(link, to),
        Ok(_) => std::fs::copy(link, to).map(drop),
        Err(_) => Ok(()),
    }
}

#[cfg(test)]
mod copy_tests {
    #[cfg(unix)]
    #[test]
    fn copy_tree_keeps_links_and_leaves_out_what_builds_made() {
        let from = tempfile::tempdir().unwrap();
        let to = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(from.path().join("docs")).unwrap();
        std::fs::create_dir_all(from.path().join(".forq/venv")).unwrap();
        std::fs::write(from.path().join("docs/intro.rst"), "intro\n").unwrap();
        std::os::unix::fs::symlink("docs/intro.rst", from.path().join("README.rst")).unwrap();
        super::copy_tree(from.path(), &to.path().join("copy")).unwrap();
        let copy = to.path().join("copy");
        assert_eq!(
            std::fs::read_link(copy.join("README.rst")).unwrap(),
            std::path::Path::new("docs/intro.rst")
        );
        assert_eq!(
            std::fs::read_to_string(copy.join("README.rst")).unwrap(),
            "intro\n"
        );
        assert!(!copy.join(".forq").exists());
    }
}

#[cfg(test)]
mod fault_tests {
    use super::*;

    fn fault() -> Fault {
        Fault {
            file: "pkg/mod.py".into(),
            first: 10,
            last: 14,
        }
    }

    #[test]
    fn a_change_inside_the_function_touches_the_fault() {
        // Line 12 replaced: two lines of context each side.
        let diff = "--- a/pkg/mod.py\n+++ b/pkg/mod.py\n@@ -10,5 +10,5 @@\n";
        assert!(fault().touched_by(diff));
        // An insertion after line 14: its four lines of context are 13..16.
        let diff = "--- a/pkg/mod.py\n+++ b/pkg/mod.py\n@@ -13,4 +13,5 @@\n";
        assert!(fault().touched_by(diff));
    }

    #[test]
    fn context_lines_and_other_files_do_not_touch_it() {
        // Line 17 replaced: context 15..16 and 18..19 stay outside.
        let diff = "--- a/pkg/mod.py\n+++ b/pkg/mod.py\n@@ -15,5 +15,5 @@\n";
        assert!(!fault().touched_by(diff));
        // Line 8 replaced: context reaches 10, the change does not.
        let diff = "--- a/pkg/mod.py\n+++ b/pkg/mod.py\n@@ -6,5 +6,5 @@\n";
        assert!(!fault().touched_by(diff));
        let diff = "--- a/pkg/other.py\n+++ b/pkg/other.py\n@@ -10,5 +10,5 @@\n";
        assert!(!fault().touched_by(diff));
    }

    #[test]
    fn fault_files_are_read_and_bad_ones_named() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(fault_of(dir.path()).unwrap(), None);
        std::fs::write(dir.path().join("FAULT"), "pkg/mod.py 10 14\n").unwrap();
        assert_eq!(fault_of(dir.path()).unwrap(), Some(fault()));
        std::fs::write(dir.path().join("FAULT"), "pkg/mod.py ten\n").unwrap();
        let err = fault_of(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("FAULT") && err.contains("PATH FIRST LAST"),
            "{err}"
        );
    }
}
