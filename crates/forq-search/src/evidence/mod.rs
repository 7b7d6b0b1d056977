//! Evidence of correctness beyond green, for ranking plausible patches.
//!
//! Green means the tests pass, not that the patch is right: a test suite
//! admits wrong patches (the program-repair literature calls this
//! overfitting). What forq weighs without a model and without a new
//! oracle, per green candidate:
//!
//! - **The changed functions' docstring examples**: `>>>` lines, and lines
//!   such as `f(3, [1, 2]) == 5`, `f("a") => "b"`, `f(x) ➞ y`, run against
//!   the candidate. A candidate failing an example is wrong by the code's
//!   own word; examples that failed on the unmodified code and pass on the
//!   candidate witness its fix.
//! - **Inputs near the examples' and the tests'**: the literal arguments of
//!   the examples and of the tests' own calls of the function (found in the
//!   test files, through names bound to it such as `candidate = f`),
//!   nudged by type (numbers ±1, lists cut and grown, strings cut and
//!   case-swapped). A candidate that raises or hangs where the unmodified
//!   code returned broke something no test covers; plausible candidates
//!   that return different values there cannot all be right.
//! - **What the passing tests observe**: a candidate answering otherwise
//!   than the unmodified code on the arguments of a test that passed
//!   before changed behaviour the failing tests did not ask to change
//!   (the PATCH-SIM idea, on return values).
//! - **Where it edits**: a patch at a line the failing tests localise
//!   outranks one elsewhere, and one that only changes a constant on a line
//!   they did not point to (an accumulator's start, a loop bound's literal
//!   made to fit the tests) ranks last.
//!
//! A patch is *corroborated* when examples it passes failed on the
//! unmodified code, it breaks nothing near them, and no other plausible
//! patch that passes them disagrees with it there, and the passing tests
//! observe what they did; else it is *plausible*.
//! The examples are run for Python and JavaScript (other languages rank by
//! where they edit).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use forq_bootstrap::StackKind;
use forq_sandbox::{ExecRequest, Network, Sandbox};
use serde::{Deserialize, Serialize};

use crate::candidate::Materialized;
use crate::oracle::Oracle;
use crate::spectrum::LineSuspect;

/// Where the helper goes in a fork (never in the root).
const DIR: &str = ".forq-evidence";

/// Seconds an example or a nudged call may take.
const CALL_BUDGET_S: f64 = 2.0;

/// Nudged inputs tried per function at most.
const NEAR: usize = 40;

/// The tests' own calls of a function run at most.
const TEST_CALLS: usize = 60;

/// Runs the docstring examples of the functions holding the given lines,
/// and calls them on inputs near the examples'. Arguments: the repository
/// root, then `FILE:LINE` or `FILE::NAME` per function; a nonce on stdin.
/// Prints one line, the nonce and a JSON object:
/// `{"FILE::NAME": {"examples": n, "passed": k, "near": [...]}}`, and ends
/// the process at once (no exit handler of the examined code runs after).
const HELPER_PY: &str = include_str!("examples.py");

/// The same for JavaScript (CommonJS or plain scripts, run by `node` in a
/// `vm` context): the examples in the comment above each changed function.
const HELPER_JS: &str = include_str!("examples.cjs");

/// What the helper found of one function.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Examined {
    /// Docstring examples.
    pub examples: usize,
    /// Of them, those that passed.
    pub passed: usize,
    /// The outcome of each nudged call (`ok REPR`, `raised TYPE`, `slow`).
    pub near: Vec<String>,
    /// The tests' own literal calls of it: the test each is in (its name,
    /// or empty outside a test) and the outcome.
    #[serde(default)]
    pub calls: Vec<(String, String)>,
}

impl Examined {
    /// Its answers nearby, then on the tests' calls.
    fn answers(&self) -> impl Iterator<Item = &str> {
        self.near
            .iter()
            .chain(self.calls.iter().map(|(_, o)| o))
            .map(String::as_str)
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// What a green candidate's correctness rests on besides its tests.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Evidence {
    /// `corroborated` or `plausible`.
    pub verdict: Verdict,
    /// In a line, why.
    pub why: String,
    /// Docstring examples of the functions it changes.
    pub examples: usize,
    /// Of them, those it passes.
    pub examples_passed: usize,
    /// Of them, those the unmodified code passed.
    pub examples_before: usize,
    /// Inputs near the examples' and the tests' where it raises or hangs
    /// and the unmodified code returned.
    pub broke_near: usize,
    /// Inputs near the examples' and the tests' tried.
    pub near: usize,
    /// Calls in tests that passed before on which it answers otherwise
    /// than the unmodified code: behaviour the passing tests observe,
    /// changed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub changed_passing: usize,
    /// Behaviours of other plausible patches passing as many examples that
    /// return otherwise than it on a nearby input (patches that answer
    /// alike nearby count once).
    pub disagree: usize,
    /// The rank, among the statements the failing tests localised, of the
    /// most suspicious line it changes (0: the first); none when it
    /// changes no localised line or there was no localisation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault_rank: Option<usize>,
    /// It only changes a literal, on a line the failing tests did not point
    /// to.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unpointed_constant: bool,
    /// It only adjusts a number (a literal for another, or `± 1` added):
    /// the shape of a patch fitted to the tests, ranked below others the
    /// evidence cannot tell from it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub adjusts_a_number: bool,
}

/// Whether more than the tests speak for a patch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The tests pass; nothing else speaks for it, or something against.
    #[default]
    Plausible,
    /// The tests pass, docstring examples that failed before pass, nothing
    /// nearby breaks, and no other plausible patch disagrees.
    Corroborated,
}

impl Verdict {
    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Plausible => "plausible",
            Verdict::Corroborated => "corroborated",
        }
    }
}

/// A green candidate to weigh: its node, the brancher's prior, its size,
/// and what [`examine_green`] found of it.
#[derive(Debug, Clone)]
pub struct Green {
    /// Its node.
    pub node: usize,
    /// The brancher's prior.
    pub prior: f64,
    /// Lines added plus removed.
    pub diff_lines: usize,
    /// Its changed functions' examples and nearby answers.
    pub examined: Examination,
}

/// What the helper found of a green candidate: per changed function
/// (`FILE::NAME`), its examples and its answers near them, and where it
/// changes each file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Examination {
    /// Per changed function.
    pub functions: BTreeMap<String, Examined>,
    /// Per changed file, the changed lines (in the new file), and whether
    /// the change is one literal for another.
    pub changes: BTreeMap<String, (Vec<u32>, bool, bool)>,
}

impl Examination {
    /// What it answers near its examples and on the tests' calls, to tell
    /// two candidates' behaviours apart (`None`: nothing to tell them by).
    pub fn behaviour(&self) -> Option<Vec<&str>> {
        let answers: Vec<&str> = self
            .functions
            .values()
            .flat_map(Examined::answers)
            .collect();
        (!answers.is_empty()).then_some(answers)
    }
}

/// Runs a green candidate's changed functions' docstring examples, and
/// calls them near the examples' inputs, in a fresh fork of `root` with
/// `state` written.
pub async fn examine_green(
    root: &dyn Sandbox,
    oracle: &Oracle,
    state: &BTreeMap<String, Option<String>>,
) -> Examination {
    let helper = Helper::of(oracle);
    let mut out = Examination::default();
    let mut targets = Vec::new();
    for (path, new) in state {
        let old = read(root, path).await;
        let new = new.clone().unwrap_or_default();
        let lines = changed_lines(&old, &new);
        if helper.as_ref().is_some_and(|h| h.reads(path)) {
            targets.extend(lines.first().map(|l| format!("{path}:{l}")));
        }
        let literal = only_a_literal(&old, &new);
        let adjusts = adjusts_a_number(&old, &new);
        out.changes.insert(path.clone(), (lines, literal, adjusts));
    }
    if let (Some(helper), false) = (helper, targets.is_empty()) {
        out.functions = examine(root, &helper, state, &targets).await;
    }
    out
}

/// The changed lines of `new` against `old` (1-based, in `new`; the line
/// before for a pure deletion).
fn changed_lines(old: &str, new: &str) -> Vec<u32> {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let (head, tail) = crate::candidate::common_ends(&a, &b);
    let (first, last) = (head + 1, b.len() - tail);
    if last < first {
        return vec![first.saturating_sub(1).max(1) as u32];
    }
    (first..=last).map(|l| l as u32).collect()
}

/// Whether the only difference between `old` and `new` is one literal
/// (a number or a string) swapped for another.
fn only_a_literal(old: &str, new: &str) -> bool {
    let tokens = |s: &str| -> Vec<String> {
        let mut out = Vec::new();
        let mut cur = String::new();
        for c in s.chars() {
            if c.is_alphanumeric() || c == '_' || c == '.' || c == '\'' || c == '"' {
                cur.push(c);
            } else {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                if !c.is_whitespace() {
                    out.push(c.to_string());
                }
            }
        }
        if !cur.is_empty() {
            out.push(cur);
        }
        out
    };
    let (a, b) = (tokens(old), tokens(new));
    if a.len() != b.len() {
        return false;
    }
    let diffs: Vec<(&String, &String)> = a.iter().zip(&b).filter(|(x, y)| x != y).collect();
    let literal = |t: &str| {
        t.chars().next().is_some_and(|c| c.is_ascii_digit())
            || t.starts_with('\'')
            || t.starts_with('"')
            || matches!(t, "True" | "False" | "None" | "true" | "false")
    };
    diffs.len() == 1 && literal(diffs[0].0) && literal(diffs[0].1)
}

/// The interpreter of a Python stack's test command (`.forq/venv/bin/python
/// -m pytest` → `.forq/venv/bin/python`).
fn interpreter(command: &str) -> String {
    command
        .split_whitespace()
        .next()
        .filter(|w| {
            w.rsplit('/')
                .next()
                .is_some_and(|b| b.starts_with("python"))
        })
        .unwrap_or("python3")
        .to_owned()
}

/// The helper that runs a stack's examples, and how.
enum Helper {
    /// Python, with the stack's interpreter.
    Python(String),
    /// JavaScript, with `node`.
    Node,
}

impl Helper {
    fn of(oracle: &Oracle) -> Option<Helper> {
        match oracle.stack.kind {
            StackKind::Pytest | StackKind::Unittest => {
                Some(Helper::Python(interpreter(&oracle.stack.command)))
            }
            StackKind::Node => Some(Helper::Node),
            _ => None,
        }
    }

    /// Whether the helper reads functions of this file.
    fn reads(&self, path: &str) -> bool {
        match self {
            Helper::Python(_) => path.ends_with(".py"),
            Helper::Node => path.ends_with(".js") || path.ends_with(".cjs"),
        }
    }

    /// The helper's file name in the fork and its source.
    fn file(&self) -> (&'static str, &'static str) {
        match self {
            Helper::Python(_) => ("examples.py", HELPER_PY),
            // `.cjs`: CommonJS even where package.json says "type": "module".
            Helper::Node => ("examples.cjs", HELPER_JS),
        }
    }

    /// The shell command that runs it on `args`.
    fn command(&self, args: &str) -> String {
        let (file, _) = self.file();
        match self {
            Helper::Python(python) => format!(
                "PYTHONDONTWRITEBYTECODE=1 exec {python} {DIR}/{file} \"$PWD\" {CALL_BUDGET_S} {NEAR} {args}"
            ),
            Helper::Node => {
                format!("exec node {DIR}/{file} \"$PWD\" {CALL_BUDGET_S} {NEAR} {args}")
            }
        }
    }
}

/// Runs the helper in a fresh fork of `root` with `state` written, on
/// `targets`.
async fn examine(
    root: &dyn Sandbox,
    helper: &Helper,
    state: &BTreeMap<String, Option<String>>,
    targets: &[String],
) -> BTreeMap<String, Examined> {
    let run = async {
        let fork = root.fork().await.map_err(|e| e.to_string())?;
        let result = async {
            Materialized {
                files: state.clone(),
            }
            .write(&*fork)
            .await
            .map_err(|e| e.to_string())?;
            let (file, source) = helper.file();
            fork.write_file(&Path::new(DIR).join(file), source.as_bytes())
                .await
                .map_err(|e| e.to_string())?;
            let nonce = nonce();
            let quoted: Vec<String> = targets.iter().map(|t| shell_word(t)).collect();
            let script = helper.command(&quoted.join(" "));
            let calls = (NEAR + TEST_CALLS + 10) as f64;
            let budget =
                Duration::from_secs_f64(10.0 + CALL_BUDGET_S * calls * targets.len() as f64);
            let out = fork
                .exec(
                    ExecRequest::shell(script)
                        .timeout(budget)
                        .stdin(format!("{nonce}\n"))
                        .network(Network::None),
                )
                .await
                .map_err(|e| e.to_string())?;
            report(&String::from_utf8_lossy(&out.stdout), &nonce)
                .map_err(|e| format!("{e}: {}", String::from_utf8_lossy(&out.stderr).trim()))
        }
        .await;
        let _ = fork.destroy().await;
        result
    };
    run.await.unwrap_or_else(|e| {
        tracing::debug!(error = %e, "the docstring examples could not be run");
        BTreeMap::new()
    })
}

/// A value the examined code cannot guess (it never sees the host's
/// memory), so it cannot print a report of its own.
fn nonce() -> String {
    use std::hash::{BuildHasher, Hasher};
    let word = || {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        h.finish()
    };
    format!("forq-evidence-{:016x}{:016x}", word(), word())
}

/// The helper's report in its output: the line behind `nonce`. Anything
/// else on stdout (the examined code's prints, a forged report) is not
/// read; no such line (the code ended the process first) is an error, and
/// the patch goes without evidence.
fn report(stdout: &str, nonce: &str) -> Result<BTreeMap<String, Examined>, String> {
    let line = stdout
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix(nonce)?.strip_prefix(' '))
        .ok_or("the helper did not report")?;
    serde_json::from_str(line).map_err(|e| e.to_string())
}

fn shell_word(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// Weighs each of `greens` (candidates green against `oracle`, branched
/// from `root`, each examined) and returns their evidence, in the order
/// given, and the index of the one to hand back: the best by evidence,
/// then by the brancher's prior, then the smaller patch, then the first
/// found.
pub async fn weigh(
    root: &dyn Sandbox,
    oracle: &Oracle,
    suspected: &[LineSuspect],
    greens: &[Green],
) -> (Vec<Evidence>, usize) {
    let mut names: Vec<String> = Vec::new();
    for g in greens {
        for name in g.examined.functions.keys() {
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
    }
    // The unmodified code, on the same functions.
    let before = if names.is_empty() {
        BTreeMap::new()
    } else {
        match Helper::of(oracle) {
            Some(helper) => examine(root, &helper, &BTreeMap::new(), &names).await,
            None => BTreeMap::new(),
        }
    };
    let mut evidence: Vec<Evidence> = greens
        .iter()
        .map(|g| {
            let mut ev = Evidence::default();
            for (path, (lines, literal, adjusts)) in &g.examined.changes {
                ev.fault_rank = ev
                    .fault_rank
                    .into_iter()
                    .chain(rank_of(suspected, path, lines))
                    .min();
                let pointed = suspected.iter().take(5).any(|s| s.file == *path);
                ev.unpointed_constant |=
                    *literal && (!pointed || ev.fault_rank.is_none_or(|r| r >= 5));
                ev.adjusts_a_number |= *adjusts;
            }
            summarize(ev, &g.examined.functions, &before, |test| {
                passed_before(oracle, test)
            })
        })
        .collect();
    disagreements(&mut evidence, greens);
    for ev in &mut evidence {
        judge(ev);
    }
    let best = (0..greens.len())
        .max_by(|&a, &b| {
            let (ea, eb) = (&evidence[a], &evidence[b]);
            rank_key(ea)
                .partial_cmp(&rank_key(eb))
                .unwrap_or(std::cmp::Ordering::Equal)
                .then(greens[a].prior.total_cmp(&greens[b].prior))
                .then(greens[b].diff_lines.cmp(&greens[a].diff_lines))
                .then(greens[b].node.cmp(&greens[a].node))
        })
        .unwrap_or(0);
    (evidence, best)
}

async fn read(root: &dyn Sandbox, path: &str) -> String {
    root.read_file(Path::new(path))
        .await
        .ok()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

/// The rank among `suspected` of the most suspicious of `lines` of `path`.
fn rank_of(suspected: &[LineSuspect], path: &str, lines: &[u32]) -> Option<usize> {
    suspected
        .iter()
        .position(|s| s.file == path && lines.contains(&s.line))
}

/// Whether the test named `test` (a function's name, or a `test(...)`'s)
/// passed before the change and is not among those that failed: a guard
/// whose id is that name or ends in it (`file.py::test_x`, `suite >
/// case`, `mod.Class.test_x`, `file.py::test_x[param]`).
fn passed_before(oracle: &Oracle, test: &str) -> bool {
    names_a_guard(&oracle.target, &oracle.guard, test)
}

fn names_a_guard(target: &[String], guard: &[String], test: &str) -> bool {
    let names = |id: &str| {
        !test.is_empty()
            && (id == test
                || ["::", " > ", "."].iter().any(|sep| {
                    id.strip_suffix(test)
                        .is_some_and(|head| head.ends_with(sep))
                })
                || id.contains(&format!("::{test}[")))
    };
    guard.iter().any(|id| names(id)) && !target.iter().any(|id| names(id))
}

/// Sums the helper's findings over the changed functions.
fn summarize(
    mut ev: Evidence,
    examined: &BTreeMap<String, Examined>,
    before: &BTreeMap<String, Examined>,
    passed_before: impl Fn(&str) -> bool,
) -> Evidence {
    for (name, e) in examined {
        ev.examples += e.examples;
        ev.examples_passed += e.passed;
        let prior = before.get(name);
        ev.examples_before += prior.map_or(0, |b| b.passed.min(e.examples));
        if let Some(b) = prior {
            for (now, then) in e.near.iter().zip(&b.near) {
                ev.near += 1;
                if !now.starts_with("ok") && then.starts_with("ok") {
                    ev.broke_near += 1;
                }
            }
            // The same calls in the same order: both ran the same tests.
            for ((test, now), (_, then)) in e.calls.iter().zip(&b.calls) {
                if now != then && then.starts_with("ok") && passed_before(test) {
                    ev.changed_passing += 1;
                }
            }
        }
    }
    ev
}

/// Counts, per candidate, the other behaviours — patches passing as many
/// examples that return otherwise on a nearby input, those that answer
/// alike counted once: four spellings of one wrong fix are one voice, not
/// four.
fn disagreements(evidence: &mut [Evidence], greens: &[Green]) {
    for i in 0..greens.len() {
        let mut others = std::collections::BTreeSet::new();
        for j in 0..greens.len() {
            if i == j || evidence[j].examples_passed < evidence[i].examples_passed {
                continue;
            }
            let (mine, theirs) = (&greens[i].examined.functions, &greens[j].examined.functions);
            let differs = mine.iter().any(|(name, e)| {
                theirs.get(name).is_some_and(|o| {
                    e.answers()
                        .zip(o.answers())
                        .any(|(a, b)| a != b && a.starts_with("ok") && b.starts_with("ok"))
                })
            });
            if differs {
                others.insert(greens[j].examined.behaviour());
            }
        }
        evidence[i].disagree = others.len();
    }
}

/// Sets the verdict and its reason.
fn judge(ev: &mut Evidence) {
    let failed = ev.examples - ev.examples_passed.min(ev.examples);
    let witnessed = ev.examples_passed.saturating_sub(ev.examples_before);
    let (verdict, why) = if failed > 0 {
        (
            Verdict::Plausible,
            format!("fails {failed} of {} docstring examples", ev.examples),
        )
    } else if ev.broke_near > 0 {
        (
            Verdict::Plausible,
            format!(
                "raises or hangs on {} of {} inputs near the examples' and the tests' where the code did not",
                ev.broke_near, ev.near
            ),
        )
    } else if ev.changed_passing > 0 {
        (
            Verdict::Plausible,
            format!(
                "answers otherwise than before on {} call(s) in tests that passed before",
                ev.changed_passing
            ),
        )
    } else if ev.examples == 0 {
        let nearby = if ev.disagree > 0 {
            format!(
                "; {} other plausible behaviour(s) answer otherwise near the tests' inputs",
                ev.disagree
            )
        } else if ev.near > 0 {
            format!("; nothing breaks on {} inputs near the tests'", ev.near)
        } else {
            String::new()
        };
        (
            Verdict::Plausible,
            format!("no docstring example of the changed code{nearby}"),
        )
    } else if witnessed == 0 {
        (
            Verdict::Plausible,
            format!(
                "its {} docstring examples passed before the change too",
                ev.examples
            ),
        )
    } else if ev.disagree > 0 {
        (
            Verdict::Plausible,
            format!(
                "{} other plausible behaviour(s) pass the examples and answer otherwise nearby",
                ev.disagree
            ),
        )
    } else if ev.unpointed_constant {
        (
            Verdict::Plausible,
            "it only changes a constant the failing tests did not point to".to_owned(),
        )
    } else {
        (
            Verdict::Corroborated,
            format!(
                "passes {} docstring examples, {witnessed} of which failed before; nothing breaks on {} inputs near them and the tests'",
                ev.examples, ev.near
            ),
        )
    };
    ev.verdict = verdict;
    ev.why = why;
}

/// Higher is better: examples failed, breakage nearby, what passing tests
/// observe changed, a constant edit where the tests did not point, a
/// number adjusted, then how localised the change is.
fn rank_key(ev: &Evidence) -> (i64, i64, i64, i64, i64, i64, f64) {
    let failed = ev.examples as i64 - ev.examples_passed.min(ev.examples) as i64;
    (
        -failed,
        -(ev.broke_near as i64),
        -(ev.changed_passing as i64),
        -i64::from(ev.unpointed_constant),
        -i64::from(ev.adjusts_a_number),
        i64::from(ev.verdict == Verdict::Corroborated),
        ev.fault_rank.map_or(0.0, |r| 1.0 / (1.0 + r as f64)),
    )
}

/// Whether `new` differs from `old` by one number alone (`0` for `-1`,
/// `24` for `26`) or by a `+ 1` or `- 1` added.
fn adjusts_a_number(old: &str, new: &str) -> bool {
    let (a, b) = (squeezed(old), squeezed(new));
    if a == b {
        return false;
    }
    let numeric = |c: u8| c.is_ascii_digit() || c == b'.' || c == b'-';
    let (x, y) = (a.as_bytes(), b.as_bytes());
    let (mut head, mut tail) = crate::candidate::common_ends(x, y);
    // Widen to whole numbers on both sides.
    while head > 0 && numeric(x[head - 1]) {
        head -= 1;
    }
    while tail > 0 && numeric(x[x.len() - tail]) {
        tail -= 1;
    }
    let number = |s: &[u8]| {
        let s = s.strip_prefix(b"-").unwrap_or(s);
        !s.is_empty() && s.iter().all(|&c| c.is_ascii_digit() || c == b'.') && s[0].is_ascii_digit()
    };
    // A digit ending a name (`a1`) is no number.
    let in_name = head > 0 && (x[head - 1].is_ascii_alphabetic() || x[head - 1] == b'_');
    let (da, db) = (&x[head..x.len() - tail], &y[head..y.len() - tail]);
    (!in_name && number(da) && number(db)) || adds_one(old, new)
}

/// Whether `new` differs from `old` by a `+ 1` or `- 1` added and nothing
/// else.
fn adds_one(old: &str, new: &str) -> bool {
    let (a, b) = (squeezed(old), squeezed(new));
    if b.len() != a.len() + 2 {
        return false;
    }
    let head = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    matches!(b.get(head..head + 2), Some("+1" | "-1")) && b.get(head + 2..) == a.get(head..)
}

/// `s` without its whitespace.
fn squeezed(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_changed_lines_are_those_between_the_common_head_and_tail() {
        assert_eq!(changed_lines("a\nb\nc\n", "a\nB\nc\n"), vec![2]);
        assert_eq!(changed_lines("a\nb\nc\n", "a\nb\nx\ny\nc\n"), vec![3, 4]);
        assert_eq!(changed_lines("a\nb\nc\n", "a\nc\n"), vec![1]);
    }

    #[test]
    fn a_swapped_literal_is_told_from_any_other_change() {
        assert!(only_a_literal("    balance = 0\n", "    balance = 1\n"));
        assert!(only_a_literal("x = f('a')", "x = f('b')"));
        assert!(!only_a_literal("if a < b:", "if a <= b:"));
        assert!(!only_a_literal("x = y", "x = z"));
        assert!(!only_a_literal("x = 0", "x = abs(0)"));
    }

    #[test]
    fn adding_one_is_told_from_other_edits() {
        assert!(adds_one("for i in range(n):", "for i in range(n + 1):"));
        assert!(adds_one("x = a[i]", "x = a[i-1]"));
        assert!(!adds_one("x = a[i]", "x = a[j]"));
        assert!(!adds_one("if a == b:", "if a < b:"));
        assert!(adjusts_a_number("    depth = 0", "    depth = -1"));
        assert!(adjusts_a_number("d[(i + 4) % 26]", "d[(i + 4) % 24]"));
        assert!(adjusts_a_number("range(n)", "range(n - 1)"));
        assert!(!adjusts_a_number("if d < 0:", "if d == 0:"));
        assert!(!adjusts_a_number("x = a1", "x = a2"));
    }

    #[test]
    fn the_interpreter_is_the_test_commands_python_or_python3() {
        assert_eq!(
            interpreter(".forq/venv/bin/python -m pytest -v"),
            ".forq/venv/bin/python"
        );
        assert_eq!(interpreter("python3 -m unittest"), "python3");
        assert_eq!(interpreter("cargo test"), "python3");
    }

    fn ev(examples: usize, passed: usize, before: usize) -> Evidence {
        Evidence {
            examples,
            examples_passed: passed,
            examples_before: before,
            near: 10,
            ..Evidence::default()
        }
    }

    #[test]
    fn corroborated_needs_examples_that_failed_before_and_nothing_against() {
        let mut good = ev(3, 3, 1);
        judge(&mut good);
        assert_eq!(good.verdict, Verdict::Corroborated, "{}", good.why);
        let mut stale = ev(3, 3, 3);
        judge(&mut stale);
        assert_eq!(stale.verdict, Verdict::Plausible);
        assert!(stale.why.contains("passed before"), "{}", stale.why);
        let mut failing = ev(3, 2, 1);
        judge(&mut failing);
        assert!(failing.why.contains("fails 1 of 3"), "{}", failing.why);
        let mut broke = Evidence {
            broke_near: 2,
            ..ev(3, 3, 1)
        };
        judge(&mut broke);
        assert_eq!(broke.verdict, Verdict::Plausible);
        let mut torn = Evidence {
            disagree: 1,
            ..ev(3, 3, 1)
        };
        judge(&mut torn);
        assert_eq!(torn.verdict, Verdict::Plausible);
        let mut none = ev(0, 0, 0);
        judge(&mut none);
        assert_eq!(none.verdict, Verdict::Plausible);
    }

    fn green(node: usize, near: &[&str]) -> Green {
        let mut functions = BTreeMap::new();
        functions.insert(
            "m.py::f".to_owned(),
            Examined {
                examples: 2,
                passed: 2,
                near: near.iter().map(|s| (*s).to_owned()).collect(),
                ..Examined::default()
            },
        );
        Green {
            node,
            prior: 0.5,
            diff_lines: 2,
            examined: Examination {
                functions,
                changes: BTreeMap::new(),
            },
        }
    }

    #[test]
    fn patches_that_answer_alike_nearby_are_one_behaviour_and_others_disagree() {
        let a = green(1, &["ok 1", "ok 2"]);
        let b = green(2, &["ok 1", "ok 2"]);
        let c = green(3, &["ok 1", "ok 3"]);
        assert_eq!(a.examined.behaviour(), b.examined.behaviour());
        assert_ne!(a.examined.behaviour(), c.examined.behaviour());
        assert_eq!(Examination::default().behaviour(), None);
        let greens = [a, b, c];
        let mut evidence = vec![ev(2, 2, 0); 3];
        disagreements(&mut evidence, &greens);
        assert_eq!(
            evidence.iter().map(|e| e.disagree).collect::<Vec<_>>(),
            [1, 1, 1],
            "a and b answer alike: c disagrees with one behaviour"
        );
        // One raising where the other returns is breakage, not a
        // disagreement between answers.
        let d = green(4, &["raised ValueError", "ok 2"]);
        let mut two = vec![ev(2, 2, 0); 2];
        disagreements(&mut two, &[green(1, &["ok 1", "ok 2"]), d]);
        assert_eq!(two[0].disagree, 0);
    }

    /// Runs a helper on `files` (path, text; the first is examined by
    /// `spec`) with the host's `program`, as a fork would; None where there
    /// is no such program (outside CI).
    async fn run_with(
        program: &str,
        helper: (&str, &str),
        files: &[(&str, &str)],
        spec: &str,
        near: usize,
    ) -> Option<(String, String)> {
        use tokio::io::AsyncWriteExt;
        let dir = tempfile::tempdir().unwrap();
        for (file, text) in files {
            let path = dir.path().join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        std::fs::write(dir.path().join(helper.0), helper.1).unwrap();
        let nonce = nonce();
        let child = forq_sandbox::host_command(program)
            .arg(dir.path().join(helper.0))
            .arg(dir.path())
            .arg(CALL_BUDGET_S.to_string())
            .arg(near.to_string())
            .arg(spec)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn();
        let Ok(mut child) = child else {
            assert!(
                std::env::var_os("CI").is_none(),
                "{program} is needed under CI"
            );
            return None;
        };
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(format!("{nonce}\n").as_bytes())
            .await
            .unwrap();
        drop(stdin);
        let out = child.wait_with_output().await.unwrap();
        Some((String::from_utf8_lossy(&out.stdout).into_owned(), nonce))
    }

    async fn run_helper(source: &str, name: &str) -> Option<(String, String)> {
        let spec = format!("m.py::{name}");
        run_with(
            "python3",
            ("examples.py", HELPER_PY),
            &[("m.py", source)],
            &spec,
            NEAR,
        )
        .await
    }

    async fn run_node(source: &str, spec: &str) -> Option<(String, String)> {
        run_with(
            "node",
            ("examples.cjs", HELPER_JS),
            &[("m.js", source)],
            spec,
            4,
        )
        .await
    }

    const JS_SUBJECT: &str = "console.log('{\"m.js::add\": {\"examples\": 9, \"passed\": 9}}');
process.on('exit', () => console.log('{\"m.js::add\": {\"examples\": 9, \"passed\": 9}}'));

/* Adds.
  >>> add(2, 3)
  5
  add(1, 1) == 2
  >>> pair(1)
  (1, 2)
  */
const add = (a, b) => {
  console.log('noise');
  return a - b;
};

// pair(2) => [2, 3]
function pair(x) {
  return [x, x + 1];
}

module.exports = { add, pair };
";

    #[tokio::test]
    async fn the_javascript_helper_runs_comment_examples_and_nearby_calls() {
        let Some((stdout, nonce)) = run_node(JS_SUBJECT, "m.js:12").await else {
            return;
        };
        // `add` is wrong by both of its examples, whatever it printed.
        let got = report(&stdout, &nonce).unwrap();
        let add = &got["m.js::add"];
        assert_eq!((add.examples, add.passed), (2, 0), "{stdout}");
        assert!(add.near.iter().all(|o| o.starts_with("ok ")), "{add:?}");
        assert!(!add.near.is_empty());
        // By name too; a Python-style tuple answer reads as a list.
        let (stdout, nonce) = run_node(JS_SUBJECT, "m.js::pair").await.unwrap();
        let got = report(&stdout, &nonce).unwrap();
        assert_eq!(
            (got["m.js::pair"].examples, got["m.js::pair"].passed),
            (1, 1),
            "{stdout}"
        );
        // A loop is cut at the call budget, not waited out.
        let slow = "/* spin(1) == 1 */\nfunction spin(x) { while (x) {} return x; }\n";
        let (stdout, nonce) = run_node(slow, "m.js::spin").await.unwrap();
        let got = report(&stdout, &nonce).unwrap();
        assert_eq!(got["m.js::spin"].passed, 0, "{stdout}");
        assert!(
            got["m.js::spin"].near.iter().any(|o| o == "slow"),
            "{stdout}"
        );
    }

    #[tokio::test]
    async fn code_under_examination_cannot_forge_the_report() {
        let forged = r#"{"m.py::f": {"examples": 1, "passed": 1, "near": []}}"#;
        let source = format!(
            "import atexit, sys\n\
             print('{forged}')\n\
             atexit.register(lambda: print('{forged}'))\n\
             def f(x):\n    \"\"\"\n    >>> f(2)\n    4\n    \"\"\"\n    \
             print('{forged}')\n    return x + 1\n"
        );
        let Some((stdout, nonce)) = run_helper(&source, "f").await else {
            return; // no python3 on this machine
        };
        assert!(
            stdout.contains(forged),
            "the forgeries were printed: {stdout}"
        );
        let got = report(&stdout, &nonce).unwrap();
        let f = &got["m.py::f"];
        assert_eq!((f.examples, f.passed), (1, 0), "{stdout}");
        assert!(!f.near.is_empty());
        // A forged line behind a guessed nonce is not the report either.
        assert!(report(&format!("forq-evidence-0 {forged}\n"), &nonce).is_err());
    }

    #[tokio::test]
    async fn code_that_ends_the_process_leaves_no_evidence() {
        let forged = r#"{"m.py::f": {"examples": 1, "passed": 1, "near": []}}"#;
        let source = format!(
            "import os\nprint('{forged}', flush=True)\nos._exit(0)\n\
             def f(x):\n    \"\"\"\n    >>> f(2)\n    4\n    \"\"\"\n    return x + 1\n"
        );
        let Some((stdout, nonce)) = run_helper(&source, "f").await else {
            return;
        };
        assert!(report(&stdout, &nonce).is_err(), "{stdout}");
    }

    /// The calls' tests and outcomes, in the helper's order.
    fn calls_of(stdout: &str, nonce: &str, name: &str) -> Vec<(String, String)> {
        let got = report(stdout, nonce).unwrap();
        got.get(name)
            .unwrap_or_else(|| panic!("{stdout}"))
            .calls
            .clone()
    }

    fn pair(test: &str, outcome: &str) -> (String, String) {
        (test.to_owned(), outcome.to_owned())
    }

    #[tokio::test]
    async fn the_python_helper_finds_the_tests_literal_calls_through_the_names_bound_to_it() {
        let subject = "def f(x):\n    return x + 1\n\ndef g(x):\n    return x\n";
        let tests = "import m\nfrom m import f\nLIMIT = 3\n\n\
                     def check(candidate):\n    assert candidate(10) == 11\n\n\
                     def test_direct():\n    assert f(1) == 2\n    assert f(LIMIT) == 4\n\n\
                     def test_alias():\n    h = f\n    assert h(2) == 3\n    assert m.f([5]) is None\n\n\
                     def test_other():\n    assert g(7) == 7\n\n\
                     def test_check():\n    check(f)\n";
        let Some((stdout, nonce)) = run_with(
            "python3",
            ("examples.py", HELPER_PY),
            &[("m.py", subject), ("tests/test_m.py", tests)],
            "m.py::f",
            5,
        )
        .await
        else {
            return;
        };
        // A named constant is no literal; g's call is not f's; f([5]) raises.
        assert_eq!(
            calls_of(&stdout, &nonce, "m.py::f"),
            vec![
                pair("test_direct", "ok 2"),
                pair("test_alias", "ok 3"),
                pair("test_alias", "raised TypeError"),
                pair("check", "ok 11"),
            ],
            "{stdout}"
        );
        // The tests' arguments are nudged too, where f has no examples.
        let got = report(&stdout, &nonce).unwrap();
        assert_eq!(got["m.py::f"].examples, 0);
        assert_eq!(got["m.py::f"].near.len(), 5, "{stdout}");
    }

    #[tokio::test]
    async fn the_javascript_helper_finds_the_tests_calls_and_the_test_each_is_in() {
        let subject = "function f(x) { return x + 1; }\nmodule.exports = { f };\n";
        let tests = "const test = require('node:test');\nconst { f } = require('../m.js');\n\
                     const g = f;\nconst limit = 3;\n\
                     test('direct', () => {\n  f(1);\n  f(limit);\n});\n\
                     test(\"alias\", () => {\n  g([2, 3]);\n});\n";
        let Some((stdout, nonce)) = run_with(
            "node",
            ("examples.cjs", HELPER_JS),
            &[("m.js", subject), ("test/m.test.js", tests)],
            "m.js::f",
            3,
        )
        .await
        else {
            return;
        };
        assert_eq!(
            calls_of(&stdout, &nonce, "m.js::f"),
            vec![pair("direct", "ok 2"), pair("alias", "ok \"2,31\"")],
            "{stdout}"
        );
    }

    fn ids(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_call_counts_as_a_passing_tests_when_a_guard_and_no_target_names_its_test() {
        let target = ids(&["tests/test_m.py::test_fails"]);
        let guard = ids(&[
            "tests/test_m.py::test_ok",
            "tests/test_m.py::test_param[1]",
            "suite > case one",
            "tests.test_m.T.test_unit",
            "tests/test_m.py::T::test_fails",
        ]);
        for yes in ["test_ok", "test_param", "case one", "test_unit"] {
            assert!(names_a_guard(&target, &guard, yes), "{yes}");
        }
        // A name a failing test bears too is not known to have passed.
        for no in ["test_fails", "ok", "", "check", "one"] {
            assert!(!names_a_guard(&target, &guard, no), "{no}");
        }
    }

    #[test]
    fn answering_otherwise_on_a_passing_tests_call_ranks_below_keeping_it() {
        let examined = |outcomes: [&str; 2]| {
            BTreeMap::from([(
                "m.py::f".to_owned(),
                Examined {
                    calls: vec![
                        pair("test_fails", outcomes[0]),
                        pair("test_ok", outcomes[1]),
                    ],
                    ..Examined::default()
                },
            )])
        };
        let (target, guard) = (ids(&["m::test_fails"]), ids(&["m::test_ok"]));
        let before = examined(["ok 20", "ok 5"]);
        let weigh = |now: [&str; 2]| {
            let mut ev = summarize(Evidence::default(), &examined(now), &before, |t| {
                names_a_guard(&target, &guard, t)
            });
            judge(&mut ev);
            ev
        };
        // Changing what the failing test sees is the fix; what the passing
        // one sees, a change nobody asked for.
        let keeps = weigh(["ok 2", "ok 5"]);
        let changes = weigh(["ok 2", "ok 3"]);
        assert_eq!((keeps.changed_passing, changes.changed_passing), (0, 1));
        assert_eq!(
            changes.why,
            "answers otherwise than before on 1 call(s) in tests that passed before"
        );
        assert!(rank_key(&keeps) > rank_key(&changes));
    }

    #[test]
    fn failing_an_example_ranks_below_an_unlocalised_patch_that_passes_them() {
        let mut a = Evidence {
            fault_rank: Some(0),
            ..ev(2, 1, 0)
        };
        let mut b = ev(2, 2, 0);
        judge(&mut a);
        judge(&mut b);
        assert!(rank_key(&b) > rank_key(&a));
        let mut c = Evidence {
            unpointed_constant: true,
            ..ev(2, 2, 0)
        };
        judge(&mut c);
        assert!(rank_key(&b) > rank_key(&c));
    }
}
