//! `mutate`: deterministic program repair, no model. Fault localisation
//! ranks the definitions on the failing tests' call paths (forq-graph),
//! weighted spectrum-style by how many passing tests reach them too; then
//! mutation operators rewrite the suspicious statements through
//! tree-sitter: comparison, arithmetic, boolean and bitwise operator swaps,
//! negated conditions, ±1 on integer constants and index expressions,
//! swapped call arguments, a variable replaced by another the function
//! binds before the read (in scope there, nearest first),
//! statement deletion, negated return values, flipped boolean literals.
//! Python, JavaScript/TypeScript, Rust, Go, Java and C/C++: the operators
//! read node kinds the grammars share.
//!
//! This file is the brancher (`Mutate`, its options and `branch`);
//! `localize.rs` ranks the suspects, `operators.rs` writes the mutants, and
//! the repair templates of `Mutate::templates` live in `brancher/templates/`.

mod localize;
mod operators;

use localize::{
    line_suspects, localize, repairable, test_words, with_line_suspects, Localised,
    MAX_LINES_REPORTED, UNRUN_LINE,
};
#[cfg(test)]
pub(crate) use operators::parse_python;
use operators::{class_share, mutations};
pub(crate) use operators::{is_single_comparison, Mutation, Parsed};

use crate::brancher::syntax::{function_within, line_span};
use crate::brancher::templates::errors::from_error;
use crate::brancher::templates::forward::{forward_arguments, keyword_params};
use crate::brancher::templates::missing_raises;
use crate::brancher::templates::values::expected_values;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::Mutex;

use async_trait::async_trait;
use forq_bootstrap::Stack;
use forq_graph::{Index, Lang, SymbolFilter};

use super::{BranchContext, BranchError, Brancher};
use crate::candidate::{Candidate, Change};
use crate::spectrum::LineSuspect;

/// A definition that may hold the fault.
#[derive(Debug, Clone, PartialEq)]
pub struct Suspect {
    /// Its file.
    pub file: String,
    /// Its name.
    pub name: String,
    /// First line (1-based).
    pub line: u32,
    /// Last line.
    pub end_line: u32,
    /// Suspiciousness, 0..1 (Ochiai over the tests that reach it).
    pub score: f64,
}

/// The mutation brancher over a code graph of the original repository.
pub struct Mutate {
    index: Mutex<Index>,
    stack: Stack,
    /// The repair templates beside the mutation operators (the
    /// `templates` brancher).
    templates: bool,
    /// Test files the graph does not hold (a reproduction test).
    seed: Vec<String>,
    suspects: Mutex<Option<Vec<Suspect>>>,
    /// Statement-level localisation (a traced run at the root; on with
    /// the templates).
    statements: bool,
    /// What the traced run said, once traced (empty when there is no
    /// spectrum).
    localised: Mutex<Option<Localised>>,
}

impl std::fmt::Debug for Mutate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mutate")
            .field("stack", &self.stack.name())
            .finish()
    }
}

impl Mutate {
    /// Over `index` (of the unmodified repository, up to date), for a
    /// repository tested by `stack` (which says what a test file is).
    pub fn new(index: Index, stack: Stack) -> Mutate {
        Mutate {
            index: Mutex::new(index),
            stack,
            templates: false,
            seed: Vec::new(),
            suspects: Mutex::new(None),
            statements: false,
            localised: Mutex::new(None),
        }
    }

    /// Adds the repair templates of the program-repair literature to the
    /// mutation operators (the `templates` brancher): an operand one more
    /// or less where it bounds something (an assignment's value, a
    /// comparison's side, a slice bound, `range`'s arguments), a compound
    /// condition reduced to one of its sides, two adjacent statements
    /// swapped; conditions widened by another of the function's, guards
    /// for an empty argument, another returned value, an argument
    /// removed; a call replaced by one of its arguments, one operand of
    /// `and`/`or` negated, a name replaced by a similar one of the file,
    /// a type added to an `isinstance` check, a `try` unwrapped.
    ///
    /// With them comes statement-level localisation
    /// ([`Mutate::statements`]).
    pub fn templates(mut self, on: bool) -> Self {
        self.templates = on;
        self.statements = on;
        self
    }

    /// Weighs each mutation by how suspicious its lines are: one traced run
    /// of the failing tests and the passing tests nearest them in a fork of
    /// the unmodified code ([`crate::spectrum`]; Python stacks), Ochiai per
    /// line. A line no failing test runs keeps a twentieth of its prior.
    /// Without a spectrum (another stack, a failed trace) priors stay as
    /// they are.
    pub fn statements(mut self, on: bool) -> Self {
        self.statements = on;
        self
    }

    /// Knows the test files written after the graph was built (a
    /// reproduction test: [`crate::Prepared::seed`]), so a failing test in
    /// them localises by the definitions it names.
    pub fn seeded(mut self, files: &BTreeMap<String, Option<String>>) -> Self {
        self.seed = files.values().flatten().cloned().collect();
        self
    }

    /// The keyword parameters of the repository's Python functions named
    /// `name` (every definition of that name, outside the tests).
    fn keyword_params(&self, name: &str) -> Vec<String> {
        let index = self.index.lock().unwrap_or_else(|p| p.into_inner());
        let mut out: Vec<String> = Vec::new();
        for s in index
            .symbols(&SymbolFilter::default().name(name))
            .unwrap_or_default()
            .into_iter()
            .filter(|s| matches!(s.kind.as_str(), "function" | "method"))
            .filter(|s| s.file.ends_with(".py") && repairable(&self.stack, &s.file))
        {
            let Ok(text) = std::fs::read_to_string(index.root().join(&s.file)) else {
                continue;
            };
            for p in keyword_params(&text, s.line) {
                if !out.contains(&p) {
                    out.push(p);
                }
            }
        }
        out
    }

    /// The ranked suspects for these failing and passing tests.
    pub fn localize(&self, failing: &[String], passing: &[String]) -> Vec<Suspect> {
        let index = self.index.lock().unwrap_or_else(|p| p.into_inner());
        localize(&index, &self.stack, &self.seed, failing, passing)
    }

    /// [`codebase_notes`] for these tests, over this brancher's graph.
    pub fn notes(&self, failing: &[String], passing: &[String], chars: usize) -> String {
        let index = self.index.lock().unwrap_or_else(|p| p.into_inner());
        codebase_notes(&index, &self.stack, failing, passing, chars)
    }

    /// The files of the ranked suspects, at most `n`, best first: what an
    /// [`Llm`](super::Llm) brancher is shown.
    pub fn suspect_files(&self, failing: &[String], passing: &[String], n: usize) -> Vec<String> {
        let mut files: Vec<String> = Vec::new();
        for s in self.localize(failing, passing) {
            if files.len() == n {
                break;
            }
            if !files.contains(&s.file) {
                files.push(s.file);
            }
        }
        files
    }
}

/// Room a model's prompt gives the codebase notes, in characters (about
/// 400 tokens).
pub const NOTES_CHARS: usize = 1600;

/// Coverage a convention needs before a model is told to follow it.
const CONVENTION_THRESHOLD: f64 = 0.8;
/// Suspected definitions whose call sites a model is shown.
const PATTERN_SUSPECTS: usize = 3;

/// What a model is told about how this codebase writes code, in at most
/// `chars` characters: the conventions held at 80% of their places or
/// more (half the room at most), then how the definitions most suspected
/// for these tests are called, with the call sites that break a pattern.
/// Empty when the graph knows nothing worth saying.
pub fn codebase_notes(
    index: &Index,
    stack: &Stack,
    failing: &[String],
    passing: &[String],
    chars: usize,
) -> String {
    let mut out = String::new();
    if let Ok(c) = index.conventions(CONVENTION_THRESHOLD) {
        let text = c.prompt(chars / 2);
        if !text.is_empty() {
            out.push_str("Conventions (places that follow each):\n");
            out.push_str(&text);
        }
    }
    let mut calls = String::new();
    for s in localize(index, stack, &[], failing, passing)
        .iter()
        .take(PATTERN_SUSPECTS)
    {
        let Ok(p) = index.call_patterns(&format!("{}:{}", s.file, s.line)) else {
            continue;
        };
        let text = p.prompt();
        if out.len() + calls.len() + text.len() + 40 <= chars {
            calls.push_str(&text);
        }
    }
    if !calls.is_empty() {
        out.push_str("How the suspected definitions are called:\n");
        out.push_str(&calls);
    }
    out
}

impl Mutate {
    /// The lines the spectrum suspects, traced once at the root (empty
    /// without statement-level localisation or a spectrum).
    async fn localised(&self, cx: &BranchContext<'_>) -> Localised {
        if !self.statements {
            return Localised::default();
        }
        if let Some(known) = self
            .localised
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
        {
            return known;
        }
        // Traced in the unmodified code: only the root's sandbox is that.
        if cx.node.parent.is_some() {
            return Localised::default();
        }
        let budget = crate::spectrum::trace_budget(cx.oracle.timeout, cx.time_left);
        let found = match crate::spectrum::trace(cx.sandbox, cx.oracle, budget).await {
            Ok(spectrum) => Localised {
                // Tests are never edited: their lines are no suspects.
                lines: spectrum
                    .suspects()
                    .into_iter()
                    .filter(|l| repairable(&self.stack, &l.file))
                    .collect(),
                unmet: spectrum.unmet(),
                compared: spectrum.compared(),
            },
            Err(why) => {
                tracing::info!(%why, "no statement-level localisation");
                Localised::default()
            }
        };
        *self.localised.lock().unwrap_or_else(|p| p.into_inner()) = Some(found.clone());
        found
    }
}

#[async_trait]
impl Brancher for Mutate {
    fn suspected(&self) -> Vec<LineSuspect> {
        let known = self.localised.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = known.as_ref().map(|l| l.lines.clone()).unwrap_or_default();
        out.truncate(MAX_LINES_REPORTED);
        out
    }

    fn name(&self) -> &str {
        if self.templates {
            "templates"
        } else {
            "mutate"
        }
    }

    async fn branch(
        &self,
        cx: &BranchContext<'_>,
        k: usize,
    ) -> Result<Vec<Candidate>, BranchError> {
        let localised = self.localised(cx).await;
        let suspects = {
            let mut cached = self.suspects.lock().unwrap_or_else(|p| p.into_inner());
            cached
                .get_or_insert_with(|| {
                    let graph = self.localize(&cx.oracle.target, &cx.oracle.guard);
                    let index = self.index.lock().unwrap_or_else(|p| p.into_inner());
                    let lines = line_suspects(&index, &localised.lines, &cx.oracle.target);
                    with_line_suspects(graph, lines)
                })
                .clone()
        };
        let findings = Findings::new(&localised, &cx.oracle.target);
        // Each file read and parsed once, however many suspects it holds.
        let mut files: BTreeMap<String, Parsed> = BTreeMap::new();
        let mut all: Vec<Ranked> = Vec::new();
        let mut seen = HashSet::new();
        let mut callee_keywords: HashMap<String, Vec<String>> = HashMap::new();
        for s in &suspects {
            let Some(lang) = Lang::of_path(Path::new(&s.file)) else {
                continue;
            };
            if !files.contains_key(&s.file) {
                let Some(parsed) = self.parse(cx, &s.file, lang).await else {
                    continue;
                };
                files.insert(s.file.clone(), parsed);
            }
            let file = &files[&s.file];
            let found = self.proposals(file, s, &findings, &mut callee_keywords);
            all.extend(ranked(s, file, &found, &findings, &mut seen));
        }
        // The k likeliest, then in source order: the order a search that
        // ignores priors (breadth-first) sees.
        all.sort_by(|a, b| b.0.total_cmp(&a.0));
        all.truncate(k);
        all.sort_by(|a, b| a.1.cmp(&b.1).then(a.2.cmp(&b.2)));
        Ok(all.into_iter().map(|(_, _, _, c)| c).collect())
    }
}

impl Mutate {
    /// `path` as this node has it (changed by the path to it, or the
    /// sandbox's), parsed.
    async fn parse(&self, cx: &BranchContext<'_>, path: &str, lang: Lang) -> Option<Parsed> {
        let current = match cx.changed.get(path) {
            Some(Some(text)) => Some(text.clone()),
            Some(None) => None,
            None => cx
                .sandbox
                .read_file(Path::new(path))
                .await
                .ok()
                .and_then(|b| String::from_utf8(b).ok()),
        };
        Parsed::new(lang, current?, self.templates)
    }

    /// Every edit proposed for suspect `s` of `file`: what a failing
    /// test's error says of a line in it first (a name not defined, a
    /// function used where its result was meant), then the templates, then
    /// the mutation operators.
    fn proposals(
        &self,
        file: &Parsed,
        s: &Suspect,
        findings: &Findings<'_>,
        callee_keywords: &mut HashMap<String, Vec<String>>,
    ) -> Vec<Mutation> {
        let source = &file.source;
        let (start, end) = line_span(source, s.line, s.end_line);
        let python = self.templates && file.lang == Lang::Python;
        let mut found: Vec<Mutation> = Vec::new();
        for l in findings.localised.lines.iter().filter(|l| {
            self.templates && l.file == s.file && (s.line..=s.end_line).contains(&l.line)
        }) {
            let span = line_span(source, l.line, l.line);
            found.extend(from_error(
                file.tree.root_node(),
                source,
                &file.ingredients,
                l,
                span,
            ));
        }
        let func = file
            .tree
            .root_node()
            .descendant_for_byte_range(start, end.max(start + 1).min(source.len()))
            .and_then(|n| function_within(n, start, end))
            .filter(|_| python);
        if let Some(func) = func {
            let ran = |line: u32| findings.line_score.contains_key(&(s.file.as_str(), line));
            let named = |w: &str| findings.target_words.contains(w);
            found.extend(missing_raises(
                file,
                func,
                &findings.localised.unmet,
                &ran,
                &named,
            ));
            let mut keywords = |name: &str| {
                let original = file.ingredients.original(name).to_owned();
                callee_keywords
                    .entry(original.clone())
                    .or_insert_with(|| self.keyword_params(&original))
                    .clone()
            };
            found.extend(forward_arguments(func, source, &mut keywords));
        }
        if python {
            found.extend(expected_values(
                file.tree.root_node(),
                source,
                start,
                end,
                &findings.localised.compared,
            ));
        }
        found.extend(mutations(file, start, end, self.templates));
        found
    }
}

/// A candidate with its prior, file and offset (for the order).
type Ranked = (f64, String, usize, Candidate);

/// What the failing tests say of lines, for one branching.
struct Findings<'a> {
    localised: &'a Localised,
    /// Each traced line's suspicion.
    line_score: HashMap<(&'a str, u32), f64>,
    /// Each traced line's share of the failing tests. A missing check
    /// belongs where the failing tests pass: a share of them, not Ochiai,
    /// which punishes a place every passing test also runs (a
    /// constructor's validation is on every test's path).
    failing_share: HashMap<(&'a str, u32), f64>,
    /// The words of the failing tests' names.
    target_words: HashSet<String>,
}

impl<'a> Findings<'a> {
    fn new(localised: &'a Localised, target: &[String]) -> Findings<'a> {
        let lines = &localised.lines;
        let all = lines.iter().map(|l| l.failing).max().unwrap_or(0).max(1);
        Findings {
            localised,
            line_score: lines
                .iter()
                .map(|l| ((l.file.as_str(), l.line), l.score))
                .collect(),
            failing_share: lines
                .iter()
                .map(|l| ((l.file.as_str(), l.line), l.failing as f64 / all as f64))
                .collect(),
            target_words: test_words(target),
        }
    }
}

/// The mutations `found` for suspect `s` as candidates, each new one with
/// its prior: the suspect's score, shared among its operator class, times
/// the suspicion of the lines it touches.
fn ranked(
    s: &Suspect,
    file: &Parsed,
    found: &[Mutation],
    findings: &Findings<'_>,
    seen: &mut HashSet<(String, String)>,
) -> Vec<Ranked> {
    let source = &file.source;
    let mut class_weight: HashMap<&str, f64> = HashMap::new();
    for m in found {
        *class_weight.entry(m.operator).or_default() += m.weight;
    }
    let mut out = Vec::new();
    for m in found {
        let new = m.applied_to(source);
        if !seen.insert((s.file.clone(), new.clone())) {
            continue;
        }
        let line = source[..m.start].matches('\n').count() + 1;
        let was = &source[m.start..m.end];
        let mut hypothesis = format!(
            "{}:{line} in {}: {} `{}` -> `{}`",
            s.file,
            s.name,
            m.operator,
            was.lines().next().unwrap_or(""),
            m.text.lines().next().unwrap_or("")
        );
        let mut prior = s.score * class_share(m.operator) * m.weight
            / class_weight
                .get(m.operator)
                .copied()
                .unwrap_or(1.0)
                .max(1e-9);
        if !findings.line_score.is_empty() {
            // The most suspicious line the mutation touches.
            let last = line + was.matches('\n').count();
            let missing_raise = m.operator == "missing raise";
            let scores = if missing_raise {
                &findings.failing_share
            } else {
                &findings.line_score
            };
            // An edit outside the definition it was proposed for (a module
            // constant it reads) weighs as the definition's most
            // suspicious line.
            let lines = if (s.line..=s.end_line).contains(&(line as u32)) {
                line as u32..=last as u32
            } else {
                s.line..=s.end_line
            };
            let score = lines
                .filter_map(|l| scores.get(&(s.file.as_str(), l)))
                .fold(0.0f64, |a, &b| a.max(b));
            prior *= UNRUN_LINE + score;
            hypothesis.push_str(&if missing_raise {
                format!(" (failing tests here {score:.2})")
            } else {
                format!(" (line suspicion {score:.2})")
            });
        }
        out.push((
            prior,
            s.file.clone(),
            m.start,
            Candidate {
                hypothesis,
                changes: vec![Change::Write {
                    path: s.file.clone(),
                    content: new,
                }],
                prior,
            },
        ));
    }
    out
}
