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

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::Mutex;

use async_trait::async_trait;
use forq_bootstrap::Stack;
use forq_graph::{Index, Lang, SymbolFilter};

use super::errors::from_error;
use super::forward::{forward_arguments, keyword_params};
use super::raises::{class_name, missing_raise};
use super::reach::{reach_templates, words, FileIngredients};
use super::shapes::shape_templates;
use super::values::expected_values;
use super::{BranchContext, BranchError, Brancher};
use crate::candidate::{Candidate, Change};
use crate::spectrum::{Compared, Expected, LineSuspect};

/// Definitions added to the call graph's suspects for holding the lines
/// the spectrum suspects most.
const MAX_LINE_SUSPECTS: usize = 6;

/// Lines reported as suspected at most.
const MAX_LINES_REPORTED: usize = 20;

/// A mutation's weight on a line no failing test runs.
const UNRUN_LINE: f64 = 0.05;

/// How far from a test the call paths are followed.
const CALL_DEPTH: u32 = 3;
/// Suspicious definitions mutated, most suspicious first.
const MAX_SUSPECTS: usize = 12;
/// Passing tests looked at for the spectrum.
const MAX_GUARD_TESTS: usize = 200;

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

/// What statement-level localisation found.
#[derive(Debug, Clone, Default)]
struct Localised {
    /// The suspected lines, best first.
    lines: Vec<LineSuspect>,
    /// Exceptions failing tests expected and never got
    /// ([`crate::spectrum::Spectrum::unmet`]).
    unmet: Vec<Expected>,
    /// Values failing tests found unequal
    /// ([`crate::spectrum::Spectrum::compared`]).
    compared: Vec<Compared>,
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

/// The words of a test id, last first: `tests/test_calc.py::CalcTest::test_add`
/// → `test_add`, `CalcTest`, `test_calc`, `tests`.
fn id_words(id: &str) -> Vec<&str> {
    id.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty() && w != &"py")
        .rev()
        .collect()
}

/// The graph's test definitions a runner's test id names.
fn test_symbols(index: &Index, id: &str) -> Vec<String> {
    let words = id_words(id);
    let Some(name) = words.first() else {
        return Vec::new();
    };
    let found = index
        .symbols(&SymbolFilter::default().name(*name))
        .unwrap_or_default();
    // Prefer definitions whose file or container the id also names.
    let scored: Vec<(usize, String)> = found
        .into_iter()
        .map(|s| {
            let hits = words[1..]
                .iter()
                .filter(|w| s.file.contains(*w) || s.qualname.contains(*w))
                .count();
            (hits + usize::from(s.test), s.id)
        })
        .collect();
    let best = scored.iter().map(|(h, _)| *h).max().unwrap_or(0);
    scored
        .into_iter()
        .filter(|(h, _)| *h == best)
        .map(|(_, id)| id)
        .collect()
}

/// Non-test definitions reachable from `tests`, with the nearest depth.
fn reached(index: &Index, stack: &Stack, tests: &[String]) -> HashMap<String, u32> {
    let mut out: HashMap<String, u32> = HashMap::new();
    for t in tests {
        let Ok(edges) = index.callees(t, CALL_DEPTH) else {
            continue;
        };
        for e in edges.items {
            let d = out.entry(e.callee).or_insert(e.depth);
            *d = (*d).min(e.depth);
        }
    }
    out.retain(|id, _| {
        let file = id.split('#').next().unwrap_or(id);
        repairable(stack, file)
    });
    out
}

/// Whether the code of `file` may be repaired: not a test (tests are never
/// edited), not a type stub or declaration file (`.pyi`, `.d.ts`: nothing
/// in them runs).
fn repairable(stack: &Stack, file: &str) -> bool {
    !stack.is_test_file(file) && !file.ends_with(".pyi") && !file.ends_with(".d.ts")
}

/// Non-test definitions named in the source of the test `id` (calls the
/// graph cannot see: inside macros such as Rust's `assert_eq!`).
fn named_in(index: &Index, stack: &Stack, id: &str) -> HashMap<String, u32> {
    let Ok(Some(test)) = index.symbol(id) else {
        return HashMap::new();
    };
    let Ok(text) = std::fs::read_to_string(index.root().join(&test.file)) else {
        return HashMap::new();
    };
    let body: String = text
        .lines()
        .skip(test.line.saturating_sub(1) as usize)
        .take((test.end_line + 1).saturating_sub(test.line) as usize)
        .collect::<Vec<_>>()
        .join("\n");
    names_in(index, stack, &body, &test.id)
}

/// The definitions outside the tests that `text` names, at depth 1
/// (`except` excluded).
fn names_in(index: &Index, stack: &Stack, text: &str, except: &str) -> HashMap<String, u32> {
    let mut out = HashMap::new();
    let words: HashSet<&str> = text
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    for word in words {
        for s in index
            .symbols(&SymbolFilter::default().name(word))
            .unwrap_or_default()
        {
            if !s.test && repairable(stack, &s.file) && s.id != except {
                out.insert(s.id, 1);
            }
        }
    }
    out
}

fn localize(
    index: &Index,
    stack: &Stack,
    seed: &[String],
    failing: &[String],
    passing: &[String],
) -> Vec<Suspect> {
    // Ochiai: fail(f) / sqrt(total_fail * (fail(f) + pass(f))).
    let mut fail: HashMap<String, (usize, u32)> = HashMap::new();
    let mut failing_mapped = 0;
    for id in failing {
        let tests = test_symbols(index, id);
        if tests.is_empty() {
            // A reproduction test is in no graph: what its files name.
            let defs: HashMap<String, u32> = seed
                .iter()
                .flat_map(|text| names_in(index, stack, text, ""))
                .collect();
            if !defs.is_empty() {
                failing_mapped += 1;
            }
            for (def, depth) in defs {
                let e = fail.entry(def).or_insert((0, depth));
                e.0 += 1;
            }
            continue;
        }
        failing_mapped += 1;
        let mut defs = reached(index, stack, &tests);
        if defs.is_empty() {
            for t in &tests {
                defs.extend(named_in(index, stack, t));
            }
        }
        for (def, depth) in defs {
            let e = fail.entry(def).or_insert((0, depth));
            e.0 += 1;
            e.1 = e.1.min(depth);
        }
    }
    if fail.is_empty() {
        // No failing test maps onto the graph: what any test calls, or
        // else every definition outside the tests.
        let symbols = index.symbols(&SymbolFilter::default()).unwrap_or_default();
        let tests: Vec<String> = symbols
            .iter()
            .filter(|s| s.test || stack.is_test_file(&s.file))
            .map(|s| s.id.clone())
            .collect();
        for (def, depth) in reached(index, stack, &tests) {
            fail.insert(def, (1, depth));
        }
        if fail.is_empty() {
            for s in symbols
                .iter()
                .filter(|s| !s.test && repairable(stack, &s.file))
            {
                if matches!(s.kind.as_str(), "function" | "method") {
                    fail.insert(s.id.clone(), (1, CALL_DEPTH));
                }
            }
        }
        failing_mapped = 1;
    }
    let mut pass: HashMap<String, usize> = HashMap::new();
    for id in passing.iter().take(MAX_GUARD_TESTS) {
        let tests = test_symbols(index, id);
        for def in reached(index, stack, &tests).into_keys() {
            *pass.entry(def).or_default() += 1;
        }
    }
    let mut suspects: Vec<Suspect> = fail
        .into_iter()
        .filter_map(|(id, (f, depth))| {
            let s = index.symbol(&id).ok()??;
            let p = pass.get(&id).copied().unwrap_or(0);
            let ochiai = f as f64 / ((failing_mapped.max(1) * (f + p)) as f64).sqrt();
            // Nearer the test breaks ties: a little, never past Ochiai.
            let score = ochiai * (1.0 - 0.05 * f64::from(depth.saturating_sub(1)));
            Some(Suspect {
                file: s.file,
                name: s.name,
                line: s.line,
                end_line: s.end_line,
                score,
            })
        })
        .collect();
    suspects.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(a.file.cmp(&b.file))
            .then(a.line.cmp(&b.line))
    });
    // A method inside a class inside another suspect: keep both; but the
    // same span twice (a re-export) once.
    let mut spans = HashSet::new();
    suspects.retain(|s| spans.insert((s.file.clone(), s.line, s.end_line)));
    suspects.truncate(MAX_SUSPECTS);
    suspects
}

/// One mutation: replace bytes `start..end` with `text`.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Mutation {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) text: String,
    /// The operator, for the hypothesis and its weight.
    pub(super) operator: &'static str,
    pub(super) weight: f64,
}

impl Mutation {
    /// `source` with the mutation made.
    pub(super) fn applied_to(&self, source: &str) -> String {
        let mut out = source.to_owned();
        out.replace_range(self.start..self.end, &self.text);
        out
    }
}

/// `source` parsed as Python (the templates' tests).
#[cfg(test)]
pub(super) fn parse_python(source: &str) -> tree_sitter::Tree {
    let mut parser = tree_sitter::Parser::new();
    parser
        .set_language(&Lang::Python.grammar())
        .expect("the bundled grammar loads");
    parser.parse(source, None).expect("a tree")
}

/// How much of a definition's qualified name the failing tests' ids name:
/// the share of its words (`MarkdownRenderer.link` → markdown, renderer,
/// link) among theirs (`TestMarkdownRendererRoundTrip::test_link_title`),
/// 0 to 1. Tests are named after what they test; lines that every failing
/// test runs and no passing one tie, and the name tells them apart.
fn affinity(qualname: &str, test_words: &HashSet<String>) -> f64 {
    let own: Vec<String> = qualname
        .split('.')
        .flat_map(words)
        .filter(|w| w.len() > 1)
        .collect();
    if own.is_empty() {
        return 0.0;
    }
    own.iter().filter(|w| test_words.contains(*w)).count() as f64 / own.len() as f64
}

/// The words of test ids (path, class and function, split at case and
/// underscores).
fn test_words(ids: &[String]) -> HashSet<String> {
    ids.iter()
        .flat_map(|id| {
            id.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .flat_map(words)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The functions holding the lines a failing test ran, each scored by its
/// most suspicious line, best first: a definition the call graph cannot
/// reach from the test (called through a table, `getattr`, a renderer's
/// method by name) is still mutated where the tests say the fault ran.
/// Where lines tie, the function the failing tests' ids name
/// ([`affinity`]) goes first: a score is halved for a name they do not
/// share at all.
fn line_suspects(index: &Index, lines: &[LineSuspect], failing: &[String]) -> Vec<Suspect> {
    let named = test_words(failing);
    let mut by_file: BTreeMap<&str, Vec<&LineSuspect>> = BTreeMap::new();
    for l in lines.iter().filter(|l| l.failing > 0 && l.score > 0.0) {
        by_file.entry(l.file.as_str()).or_default().push(l);
    }
    let mut out: Vec<Suspect> = Vec::new();
    for (file, lines) in by_file {
        let symbols = index
            .symbols(&SymbolFilter::default().file(file))
            .unwrap_or_default();
        for l in lines {
            let holder = symbols
                .iter()
                .filter(|s| matches!(s.kind.as_str(), "function" | "method"))
                .filter(|s| s.line <= l.line && l.line <= s.end_line)
                .min_by_key(|s| s.end_line - s.line);
            let Some(s) = holder else { continue };
            let score = l.score * (0.5 + 0.5 * affinity(&s.qualname, &named));
            match out
                .iter_mut()
                .find(|o| o.file == s.file && o.line == s.line && o.end_line == s.end_line)
            {
                Some(known) => known.score = known.score.max(score),
                None => out.push(Suspect {
                    file: s.file.clone(),
                    name: s.name.clone(),
                    line: s.line,
                    end_line: s.end_line,
                    score,
                }),
            }
        }
    }
    out.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.line.cmp(&b.line)));
    out.truncate(MAX_LINE_SUSPECTS);
    out
}

/// The call graph's suspects with the spectrum's: a definition both name
/// keeps the higher score; best first.
fn with_line_suspects(mut graph: Vec<Suspect>, lines: Vec<Suspect>) -> Vec<Suspect> {
    for l in lines {
        match graph
            .iter_mut()
            .find(|g| g.file == l.file && g.line == l.line && g.end_line == l.end_line)
        {
            Some(g) => g.score = g.score.max(l.score),
            None => graph.push(l),
        }
    }
    graph.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(a.file.cmp(&b.file))
            .then(a.line.cmp(&b.line))
    });
    graph
}

/// Swaps of a binary operator token.
fn operator_swaps(op: &str, lang: Lang) -> &'static [&'static str] {
    let py = lang == Lang::Python;
    match op {
        "<" => &["<=", ">", ">=", "==", "!="],
        "<=" => &["<", ">=", ">", "==", "!="],
        ">" => &[">=", "<", "<=", "==", "!="],
        ">=" => &[">", "<=", "<", "==", "!="],
        "==" => &["!=", "<=", ">="],
        "!=" => &["==", "<", ">"],
        "===" => &["!=="],
        "!==" => &["==="],
        "+" => &["-", "*"],
        "-" => &["+", "*"],
        "*" if py => &["/", "//", "+"],
        "*" => &["/", "+"],
        "/" if py => &["//", "*", "%"],
        "/" => &["*", "%"],
        "//" => &["/", "*"],
        "%" => &["/", "*"],
        "&&" => &["||"],
        "||" => &["&&"],
        "and" => &["or"],
        "or" => &["and"],
        "&" => &["|", "^"],
        "|" => &["&", "^"],
        "^" => &["&", "|"],
        "<<" => &[">>"],
        ">>" => &["<<"],
        _ => &[],
    }
}

/// How likely a fault is of each class, roughly after the frequencies of
/// one-statement fix patterns in studies of real bug fixes (a changed
/// operand or identifier, a changed binary operator and a changed literal
/// lead): a mutant's prior is its class's share split over the class's
/// mutants in the function (by their weights), so a function with many
/// sites of one kind does not crowd out the others.
const CLASS_SHARE: [(&str, f64); 41] = [
    // A name the failing test's `NameError` says is not defined, on the
    // line it was raised: the error says where the fix is.
    ("undefined name", 1.0),
    // A function used where its result was meant, on the line the failing
    // test's `AttributeError` says a function has no such attribute.
    ("call function", 1.0),
    // A `{}` string formatted with `%`, where a `TypeError` says the
    // arguments did not fit.
    ("format string", 1.0),
    // The loop stepping an index an `IndexError` says ran past the end,
    // bounded by the length.
    ("bound index", 1.0),
    // The exception a failing test expected, raised where another escaped
    // (a guard, a `try`, the `raise` itself), or where a check is missing.
    ("raise expected", 1.0),
    ("missing raise", 1.0),
    // A literal made to write what a failing test's equality wanted
    // where it wrote what the test got.
    ("expected value", 0.5),
    ("operator", 0.24),
    ("replace variable", 0.22),
    ("constant", 0.14),
    ("index", 0.08),
    ("negate condition", 0.08),
    ("drop negation", 0.05),
    ("boolean", 0.05),
    ("swap arguments", 0.05),
    ("delete statement", 0.05),
    ("negate return", 0.04),
    // The templates (only with `Mutate::templates`).
    ("boundary", 0.14),
    ("reduce condition", 0.04),
    ("move statement", 0.03),
    ("expand condition", 0.05),
    ("guard", 0.05),
    ("return value", 0.04),
    ("remove argument", 0.02),
    ("unwrap call", 0.05),
    ("negate operand", 0.04),
    ("similar name", 0.05),
    ("widen type check", 0.03),
    ("unwrap try", 0.02),
    ("chain raise", 0.02),
    ("named tuple", 0.03),
    ("forward argument", 0.05),
    ("wrap call", 0.04),
    ("guard yield", 0.03),
    ("precondition", 0.04),
    ("saturate", 0.03),
    // The shapes of a computation (`shapes`).
    ("swap operands", 0.05),
    ("accumulate", 0.04),
    ("return shape", 0.05),
    ("loop condition", 0.04),
    ("missing statement", 0.05),
];

fn class_share(class: &str) -> f64 {
    CLASS_SHARE
        .iter()
        .find(|(c, _)| *c == class)
        .map_or(0.02, |(_, s)| *s)
}

/// The checks that may be missing in the function `func` of the file for
/// each exception a failing test expected and never got
/// ([`missing_raise`]).
fn missing_raises(
    file: &Parsed,
    func: tree_sitter::Node<'_>,
    unmet: &[Expected],
    ran: &dyn Fn(u32) -> bool,
    named: &dyn Fn(&str) -> bool,
) -> Vec<Mutation> {
    let source = file.source.as_str();
    let binds = |name: &str| file.ingredients.binds(name);
    let params: Vec<String> = parameters(func, source)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    unmet
        .iter()
        .filter_map(|e| class_name(e, binds).map(|c| (e, c)))
        .flat_map(|(e, class)| missing_raise(func, source, &params, class, e, ran, named))
        .collect()
}

/// Whether `op` compares (each has its negation among its swaps).
fn is_comparison(op: &str) -> bool {
    matches!(op, "<" | "<=" | ">" | ">=" | "==" | "!=" | "===" | "!==")
}

fn operator_weight(op: &str) -> f64 {
    match op {
        op if is_comparison(op) => 1.0,
        "+" | "-" | "*" | "/" | "//" | "%" => 0.9,
        "&&" | "||" | "and" | "or" => 0.9,
        _ => 0.6,
    }
}

/// Whether `n` is one comparison (`a < b`, not `a < b < c`), whose
/// negation an operator swap already makes (`<` → `>=`, `==` → `!=`).
fn is_single_comparison(n: tree_sitter::Node<'_>, source: &str) -> bool {
    if !is_binary(n.kind()) || n.named_child_count() != 2 {
        return false;
    }
    let mut cursor = n.walk();
    let ops: Vec<&str> = n
        .children(&mut cursor)
        .filter(|c| !c.is_named())
        .filter_map(|c| c.utf8_text(source.as_bytes()).ok())
        .collect();
    matches!(ops.as_slice(), [op] if is_comparison(op))
}

/// The operand that `n` (a binary operation) would reduce to with `op` as
/// its operator, when the other operand makes it an identity: `x * 1`,
/// `x / 1`, `x // 1`, `1 * x`, `x + 0`, `0 + x`, `x - 0`, `x | 0`,
/// `x ^ 0`, `x << 0`, `x >> 0`.
fn identity_operand(n: tree_sitter::Node<'_>, op: &str, source: &str) -> Option<String> {
    if n.named_child_count() != 2 {
        return None;
    }
    let (left, right) = (n.named_child(0)?, n.named_child(1)?);
    let text = |c: tree_sitter::Node<'_>| c.utf8_text(source.as_bytes()).ok().map(str::trim);
    let (l, r) = (text(left)?, text(right)?);
    let neutral_right = match op {
        "*" | "/" | "//" => "1",
        "+" | "-" | "|" | "^" | "<<" | ">>" => "0",
        _ => return None,
    };
    if r == neutral_right {
        return Some(l.to_owned());
    }
    let neutral_left = match op {
        "*" => "1",
        "+" | "|" | "^" => "0",
        _ => return None,
    };
    (l == neutral_left).then(|| r.to_owned())
}

/// Node kinds whose operator token is swapped.
fn is_binary(kind: &str) -> bool {
    matches!(
        kind,
        "binary_expression" | "binary_operator" | "comparison_operator" | "boolean_operator"
    )
}

/// Whether `n` joins two conditions: Python's `and`/`or`, or `&&`/`||`.
pub(super) fn is_boolean_op(n: tree_sitter::Node<'_>, source: &str) -> bool {
    if n.kind() == "boolean_operator" {
        return true;
    }
    let mut c = n.walk();
    let op = n.children(&mut c).find(|c| !c.is_named());
    is_binary(n.kind())
        && op.is_some_and(|op| matches!(op.utf8_text(source.as_bytes()), Ok("&&" | "||")))
}

/// A compound assignment (`x += 1`) in the grammars forq reads.
fn is_compound_assignment(kind: &str) -> bool {
    matches!(
        kind,
        "augmented_assignment"
            | "augmented_assignment_expression"
            | "compound_assignment_expr"
            | "assignment_expression"
    )
}

fn is_integer(kind: &str) -> bool {
    matches!(
        kind,
        "integer"
            | "integer_literal"
            | "number"
            | "number_literal"
            | "int_literal"
            | "decimal_integer_literal"
    )
}

fn is_index(kind: &str) -> bool {
    matches!(
        kind,
        "subscript" | "subscript_expression" | "index_expression" | "array_access"
    )
}

fn negate(lang: Lang, text: &str) -> String {
    if lang == Lang::Python {
        format!("not ({text})")
    } else {
        format!("!({text})")
    }
}

/// The variables a function binds (its parameters, and names assigned,
/// declared or bound by a loop, `with` or `except`), each with where it is
/// bound: the candidates of a wrong-variable replacement, restricted, as
/// a def-use analysis would, to what is in scope where the name is read.
struct Bindings<'t> {
    /// `(byte where bound, name)`, parameters at 0.
    bound: Vec<(usize, &'t str)>,
}

/// Most replacements of one read name.
const MAX_REPLACEMENTS: usize = 4;

impl<'t> Bindings<'t> {
    fn of(func: tree_sitter::Node<'t>, source: &'t str) -> Bindings<'t> {
        let mut bound = Vec::new();
        let mut stack = vec![func];
        while let Some(n) = stack.pop() {
            if n.kind() == "identifier" {
                if let Some(at) = binding_site(n) {
                    if let Ok(t) = n.utf8_text(source.as_bytes()) {
                        if !matches!(t, "self" | "cls" | "this" | "_") {
                            bound.push((at, t));
                        }
                    }
                }
            }
            let mut c = n.walk();
            stack.extend(n.children(&mut c));
        }
        Bindings { bound }
    }

    /// Other variables bound before byte `at` (parameters always), the
    /// most recently bound first.
    fn visible_at(&self, at: usize, own: &str) -> Vec<&'t str> {
        let mut before: Vec<(usize, &str)> = self
            .bound
            .iter()
            .copied()
            .filter(|&(pos, name)| pos < at && name != own)
            .collect();
        before.sort_by_key(|&(pos, _)| std::cmp::Reverse(pos));
        let mut out: Vec<&str> = Vec::new();
        for (_, name) in before {
            if !out.contains(&name) {
                out.push(name);
            }
            if out.len() == MAX_REPLACEMENTS {
                break;
            }
        }
        out
    }
}

/// Where identifier `n` binds a variable, if it does: 0 for a parameter,
/// else the start of the statement or clause that binds it.
fn binding_site(n: tree_sitter::Node<'_>) -> Option<usize> {
    let mut child = n;
    let mut parent = n.parent()?;
    // Through tuple and list patterns: `a, b = …`, `for i, x in …`.
    while matches!(
        parent.kind(),
        "pattern_list" | "tuple_pattern" | "list_pattern" | "array_pattern" | "object_pattern"
    ) {
        child = parent;
        parent = parent.parent()?;
    }
    let is = |field: &str| {
        parent
            .child_by_field_name(field)
            .is_some_and(|c| c.id() == child.id())
    };
    let pk = parent.kind();
    if pk.contains("parameter")
        || matches!(pk, "parameters" | "formal_parameters" | "lambda_parameters")
    {
        return Some(0);
    }
    let binds = (pk.contains("assignment") && is("left"))
        || (matches!(pk, "for_statement" | "for_in_statement" | "for_in_clause") && is("left"))
        || (matches!(pk, "variable_declarator" | "init_declarator")
            && (is("name") || is("declarator")))
        || (pk == "let_declaration" && is("pattern"))
        || (pk == "named_expression" && is("name"))
        || pk == "as_pattern_target";
    binds.then(|| parent.start_byte())
}

/// An identifier read as a value: not a called function's name, an
/// attribute/field name, or a definition's name.
pub(super) fn is_read(n: tree_sitter::Node<'_>) -> bool {
    let Some(parent) = n.parent() else {
        return false;
    };
    let field_of = |name: &str| {
        parent
            .child_by_field_name(name)
            .is_some_and(|c| c.id() == n.id())
    };
    let pk = parent.kind();
    if field_of("function")
        || field_of("name")
        || field_of("attribute")
        || field_of("field")
        || field_of("property")
    {
        return false;
    }
    // C's declared names: `int *xs`, `int f(…)`, `int n = 0`'s `n`.
    if pk.contains("declarator") && field_of("declarator") {
        return false;
    }
    !(pk.contains("definition")
        || pk.contains("declaration")
        || pk == "parameters"
        || pk == "formal_parameters"
        || pk == "parameter_list"
        || pk.contains("import"))
}

/// One file read and parsed, with the facts every suspect in it shares
/// (each a walk of the whole file, so made once per file, not per suspect).
struct Parsed {
    lang: Lang,
    source: String,
    tree: tree_sitter::Tree,
    /// Names the file binds to a string literal.
    strings: HashSet<String>,
    /// The file's names, functions and exceptions, for the templates
    /// (empty without them).
    ingredients: FileIngredients,
}

impl Parsed {
    /// `source` parsed as `lang`; `None` when the grammar gives up.
    fn new(lang: Lang, source: String, templates: bool) -> Option<Parsed> {
        let mut parser = tree_sitter::Parser::new();
        parser.set_language(&lang.grammar()).ok()?;
        let tree = parser.parse(&source, None)?;
        let root = tree.root_node();
        let strings = string_names(root, &source);
        let ingredients = if templates {
            FileIngredients::of(root, &source)
        } else {
            FileIngredients::default()
        };
        Some(Parsed {
            lang,
            source,
            tree,
            strings,
            ingredients,
        })
    }
}

/// Every mutation of the nodes inside `start..end` (bytes) of the file;
/// with `templates`, the repair templates too.
fn mutations(file: &Parsed, start: usize, end: usize, templates: bool) -> Vec<Mutation> {
    let (lang, source, strings, in_file) = (
        file.lang,
        file.source.as_str(),
        &file.strings,
        &file.ingredients,
    );
    let bytes = source.as_bytes();
    let text = |n: tree_sitter::Node<'_>| n.utf8_text(bytes).unwrap_or("").to_owned();
    let mut out = Vec::new();
    let root = file.tree.root_node();
    let Some(func) = root.descendant_for_byte_range(start, end.max(start + 1).min(source.len()))
    else {
        return out;
    };
    // The smallest node covering the span is the definition (or its body).
    let vars = Bindings::of(func, source);
    let repaired = function_within(func, start, end);
    let within = repaired
        .and_then(function_name)
        .and_then(|n| n.utf8_text(bytes).ok());
    let ingredients = match repaired.filter(|_| templates) {
        Some(f) => Ingredients::of(lang, f, source),
        None => Ingredients::default(),
    };
    let mut stack = vec![func];
    while let Some(n) = stack.pop() {
        let mut c = n.walk();
        let children: Vec<tree_sitter::Node<'_>> = n.children(&mut c).collect();
        stack.extend(children.iter().rev().copied());
        if n.start_byte() < start || n.end_byte() > end {
            continue;
        }
        let kind = n.kind();
        // `"<img " + src` joins strings: no other arithmetic applies.
        let joins_strings = is_string(n, strings, source);
        if is_binary(kind) {
            for op in children.iter().filter(|c| !c.is_named()) {
                let o = text(*op);
                if joins_strings && matches!(o.as_str(), "+" | "-" | "*" | "/" | "//" | "%") {
                    continue;
                }
                for swap in operator_swaps(&o, lang) {
                    // A swap that makes the operation do nothing (`mid - 1`
                    // → `mid * 1`) is written as a person would: the
                    // operand alone (`mid`).
                    let (start, end, new) = match identity_operand(n, swap, source) {
                        Some(kept) => (n.start_byte(), n.end_byte(), kept),
                        None => (op.start_byte(), op.end_byte(), (*swap).to_owned()),
                    };
                    out.push(Mutation {
                        start,
                        end,
                        text: new,
                        operator: "operator",
                        weight: operator_weight(&o),
                    });
                }
                // Rust: an unsigned subtraction that can go below zero
                // panics in tests; the fix is the saturating one.
                if templates && lang == Lang::Rust && o == "-" {
                    if let Some(overflow) = saturating(n, source) {
                        out.push(Mutation {
                            start: n.start_byte(),
                            end: n.end_byte(),
                            text: overflow,
                            operator: "saturate",
                            weight: 0.5,
                        });
                    }
                }
            }
        } else if is_compound_assignment(kind) {
            // `n ^= n - 1` where `n &= n - 1` is meant: the operator of a
            // compound assignment swaps as its binary one does.
            for op in children.iter().filter(|c| !c.is_named()) {
                let o = text(*op);
                let Some(base) = o.strip_suffix('=').filter(|b| !b.is_empty()) else {
                    continue;
                };
                if matches!(base, "=" | "!" | "<" | ">") {
                    continue;
                }
                for swap in operator_swaps(base, lang) {
                    out.push(Mutation {
                        start: op.start_byte(),
                        end: op.end_byte(),
                        text: format!("{swap}="),
                        operator: "operator",
                        weight: operator_weight(base),
                    });
                }
            }
        } else if is_integer(kind) && n.child_count() == 0 {
            if let Ok(v) = text(n).parse::<i64>() {
                for d in [1, -1] {
                    out.push(Mutation {
                        start: n.start_byte(),
                        end: n.end_byte(),
                        text: (v + d).to_string(),
                        operator: "constant",
                        weight: 0.85,
                    });
                }
            }
        } else if matches!(text(n).as_str(), "true" | "false" | "True" | "False")
            && n.child_count() == 0
        {
            let flipped = match text(n).as_str() {
                "true" => "false",
                "false" => "true",
                "True" => "False",
                _ => "True",
            };
            out.push(Mutation {
                start: n.start_byte(),
                end: n.end_byte(),
                text: flipped.to_owned(),
                operator: "boolean",
                weight: 0.7,
            });
        } else if is_index(kind) {
            let idx = n
                .child_by_field_name("index")
                .or_else(|| n.child_by_field_name("subscript"))
                .or_else(|| n.named_child(n.named_child_count().saturating_sub(1) as u32));
            if let Some(idx) = idx.filter(|i| !i.kind().contains("slice") && i.id() != n.id()) {
                for d in ["+ 1", "- 1"] {
                    out.push(Mutation {
                        start: idx.start_byte(),
                        end: idx.end_byte(),
                        text: format!("{} {d}", text(idx)),
                        operator: "index",
                        weight: 0.8,
                    });
                }
            }
        } else if matches!(kind, "not_operator")
            || (kind == "unary_expression" && children.first().is_some_and(|c| text(*c) == "!"))
        {
            if let Some(arg) = n
                .child_by_field_name("argument")
                .or_else(|| n.named_child(0))
            {
                out.push(Mutation {
                    start: n.start_byte(),
                    end: n.end_byte(),
                    text: text(arg),
                    operator: "drop negation",
                    weight: 0.6,
                });
            }
        }
        if let Some(cond) = n.child_by_field_name("condition") {
            // `(a && b)` in C-like syntax keeps its own parentheses.
            let parenthesized = cond.kind() == "parenthesized_expression";
            let inner = cond
                .named_child(0)
                .filter(|_| parenthesized)
                .unwrap_or(cond);
            // `not (a > b)` is the operator swap `a <= b`, which reads as a
            // person would write it: a single comparison is left to those.
            let swaps_cover_it = is_single_comparison(inner, source);
            if (kind.contains("if") || kind.contains("while") || kind == "elif_clause")
                && !swaps_cover_it
            {
                let bare = text(inner);
                let negated = negate(lang, &bare);
                let wrapped = if parenthesized && lang != Lang::Python {
                    format!("({negated})")
                } else {
                    negated
                };
                out.push(Mutation {
                    start: cond.start_byte(),
                    end: cond.end_byte(),
                    text: wrapped,
                    operator: "negate condition",
                    weight: 0.7,
                });
            }
        }
        if matches!(kind, "argument_list" | "arguments") && n.named_child_count() == 2 {
            if let (Some(a), Some(b)) = (n.named_child(0), n.named_child(1)) {
                out.push(Mutation {
                    start: a.start_byte(),
                    end: b.end_byte(),
                    text: format!(
                        "{}{}{}",
                        text(b),
                        &source[a.end_byte()..b.start_byte()],
                        text(a)
                    ),
                    operator: "swap arguments",
                    weight: 0.5,
                });
            }
        }
        if kind == "return_statement" {
            if let Some(value) = n.named_child(0).filter(|v| !is_string(*v, strings, source)) {
                out.push(Mutation {
                    start: value.start_byte(),
                    end: value.end_byte(),
                    text: negate(lang, &text(value)),
                    operator: "negate return",
                    weight: 0.4,
                });
            }
        }
        let docstring = n.named_child(0).is_some_and(|c| c.kind() == "string");
        if kind == "expression_statement" && !docstring {
            // Delete the statement, keeping the line (Python needs a body).
            let filler = if lang == Lang::Python { "pass" } else { ";" };
            out.push(Mutation {
                start: n.start_byte(),
                end: n.end_byte(),
                text: filler.to_owned(),
                operator: "delete statement",
                weight: 0.3,
            });
        }
        if kind == "identifier" && is_read(n) {
            let name = text(n);
            for other in vars.visible_at(n.start_byte(), &name) {
                out.push(Mutation {
                    start: n.start_byte(),
                    end: n.end_byte(),
                    text: (*other).to_owned(),
                    operator: "replace variable",
                    weight: 0.3,
                });
            }
        }
        if templates {
            repair_templates(n, &children, source, &mut out);
            ingredient_templates(lang, n, source, &ingredients, &in_file.exceptions, &mut out);
            reach_templates(lang, n, source, in_file, within, &mut out);
            shape_templates(lang, n, source, strings, repaired, &mut out);
        }
    }
    out
}

/// The repair templates at node `n` (TBar's and PraPR's commonest fix
/// patterns that the mutation operators above do not make).
fn repair_templates(
    n: tree_sitter::Node<'_>,
    children: &[tree_sitter::Node<'_>],
    source: &str,
    out: &mut Vec<Mutation>,
) {
    let bytes = source.as_bytes();
    let text = |n: tree_sitter::Node<'_>| n.utf8_text(bytes).unwrap_or("").to_owned();
    let kind = n.kind();
    // Off by one where a value bounds something: `lo = mid` for
    // `lo = mid + 1`, `i < n` for `i < n - 1`, `xs[a:b]`, `range(a, b)`.
    if is_operand(n, source) && bounds_something(n, source) {
        // A loop's step (`lo = mid` inside `while lo < hi`) is where an
        // off-by-one most often hides, and where a loop that never ends
        // is most often mended.
        let weight = if steps_a_loop(n, source) { 2.0 } else { 0.6 };
        for d in ["+ 1", "- 1"] {
            out.push(Mutation {
                start: n.start_byte(),
                end: n.end_byte(),
                text: format!("{} {d}", text(n)),
                operator: "boundary",
                weight,
            });
        }
    }
    // A compound condition with a side too many: `a and b` for `a`.
    if is_boolean_op(n, source) && n.named_child_count() == 2 {
        for side in [n.named_child(0), n.named_child(1)].into_iter().flatten() {
            out.push(Mutation {
                start: n.start_byte(),
                end: n.end_byte(),
                text: text(side),
                operator: "reduce condition",
                weight: 0.6,
            });
        }
    }
    // Two statements in the wrong order: each adjacent pair swapped.
    if matches!(kind, "block" | "statement_block" | "compound_statement") {
        let statements: Vec<tree_sitter::Node<'_>> = children
            .iter()
            .copied()
            .filter(|c| {
                let k = c.kind();
                c.is_named()
                    && (k.ends_with("statement") || k.ends_with("declaration"))
                    && !k.contains("function")
                    && !k.contains("class")
            })
            .collect();
        for pair in statements.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            // A docstring stays first.
            if [a, b]
                .iter()
                .any(|s| s.named_child(0).is_some_and(|c| c.kind() == "string"))
            {
                continue;
            }
            // Only neighbours: nothing but blanks between them.
            let between = &source[a.end_byte()..b.start_byte()];
            if !between.trim().is_empty() || text(a).contains('\n') || text(b).contains('\n') {
                continue;
            }
            out.push(Mutation {
                start: a.start_byte(),
                end: b.end_byte(),
                text: format!("{}{between}{}", text(b), text(a)),
                operator: "move statement",
                weight: 0.3,
            });
        }
    }
}

/// What the templates reuse from the function under repair (its
/// "ingredients", in the program-repair literature's word): the
/// conditions it tests, the values it returns, its parameters, and its
/// body's first statement (where a guard goes).
#[derive(Default)]
struct Ingredients {
    /// `(start byte, text)` of each `if`/`while` condition and comparison.
    conditions: Vec<(usize, String)>,
    /// Each distinct returned expression.
    returns: Vec<String>,
    /// Parameter names (`self`, `cls` and `this` left out).
    params: Vec<String>,
    /// Each parameter's declared type as written ("" when none).
    param_types: Vec<String>,
    /// The function returns no value (`void` in C, no `->` in Rust).
    returns_nothing: bool,
    /// The body's first statement (a docstring skipped), by node id.
    first_statement: Option<usize>,
}

impl Ingredients {
    fn of(lang: Lang, func: tree_sitter::Node<'_>, source: &str) -> Ingredients {
        let bytes = source.as_bytes();
        let text = |n: tree_sitter::Node<'_>| n.utf8_text(bytes).unwrap_or("").to_owned();
        let mut out = Ingredients::default();
        for (name, ty) in parameters(func, source) {
            out.params.push(name);
            out.param_types.push(ty);
        }
        out.returns_nothing = match lang {
            Lang::C | Lang::Cpp => func
                .child_by_field_name("type")
                .is_some_and(|t| text(t) == "void"),
            Lang::Rust => func.child_by_field_name("return_type").is_none(),
            _ => false,
        };
        if let Some(body) = func.child_by_field_name("body") {
            let mut c = body.walk();
            out.first_statement = body
                .named_children(&mut c)
                .find(|s| {
                    let docstring = s.kind() == "expression_statement"
                        && s.named_child(0).is_some_and(|c| c.kind() == "string");
                    !s.kind().contains("comment") && !docstring
                })
                .filter(|_| {
                    matches!(
                        lang,
                        Lang::Python
                            | Lang::JavaScript
                            | Lang::TypeScript
                            | Lang::C
                            | Lang::Cpp
                            | Lang::Rust
                    )
                })
                .map(|s| s.id());
        }
        let mut stack = vec![func];
        while let Some(n) = stack.pop() {
            let mut c = n.walk();
            stack.extend(n.children(&mut c));
            if let Some(cond) = n.child_by_field_name("condition") {
                let inner = unparenthesized(cond);
                out.conditions.push((inner.start_byte(), text(inner)));
            } else if is_single_comparison(n, source) {
                out.conditions.push((n.start_byte(), text(n)));
            }
            if matches!(n.kind(), "return_statement" | "return_expression") {
                if let Some(value) = n.named_child(0) {
                    let value = text(value);
                    if !out.returns.contains(&value) {
                        out.returns.push(value);
                    }
                }
            }
        }
        out.conditions.sort();
        out.conditions.dedup_by(|a, b| a.1 == b.1);
        out
    }
}

/// `a - b` as `a.saturating_sub(b)` (the left side parenthesised unless
/// it is a name, a field, a call or an index); `None` for a float
/// literal on either side.
fn saturating(n: tree_sitter::Node<'_>, source: &str) -> Option<String> {
    let text = |n: tree_sitter::Node<'_>| n.utf8_text(source.as_bytes()).unwrap_or("");
    let left = n.child_by_field_name("left")?;
    let right = n.child_by_field_name("right")?;
    if [left, right].iter().any(|s| s.kind() == "float_literal") {
        return None;
    }
    let simple = matches!(
        left.kind(),
        "identifier"
            | "field_expression"
            | "call_expression"
            | "index_expression"
            | "integer_literal"
    );
    let receiver = if simple {
        text(left).to_owned()
    } else {
        format!("({})", text(left))
    };
    Some(format!("{receiver}.saturating_sub({})", text(right)))
}

/// The name a C declarator declares, through pointers and arrays
/// (`int *xs` → `xs`).
pub(super) fn declared_name(p: tree_sitter::Node<'_>) -> Option<tree_sitter::Node<'_>> {
    let mut d = p.child_by_field_name("declarator")?;
    while d.kind() != "identifier" {
        d = d.child_by_field_name("declarator")?;
    }
    Some(d)
}

/// A guard that returns `value` early when parameter `p` (of declared
/// type `ty`) is empty or missing, in `lang`'s syntax; `value` empty
/// means a bare `return`. `None` where the language cannot say "empty"
/// of that type.
fn guard_text(lang: Lang, p: &str, ty: &str, value: &str, indent: &str) -> Option<String> {
    let ret = if value.is_empty() {
        "return".to_owned()
    } else {
        format!("return {value}")
    };
    Some(match lang {
        Lang::Python => format!("if not {p}:\n{indent}    {ret}\n{indent}"),
        Lang::Rust => {
            let empty = if ty.contains('[')
                || ty.contains("Vec<")
                || ty.contains("str")
                || ty.contains("String")
            {
                format!("{p}.is_empty()")
            } else if ty.starts_with("Option<") {
                format!("{p}.is_none()")
            } else if matches!(
                ty,
                "u8" | "u16" | "u32" | "u64" | "usize" | "i8" | "i16" | "i32" | "i64" | "isize"
            ) {
                format!("{p} == 0")
            } else {
                return None;
            };
            format!("if {empty} {{\n{indent}    {ret};\n{indent}}}\n{indent}")
        }
        _ => format!("if (!{p}) {ret};\n{indent}"),
    })
}

/// A function's parameters, each its name and declared type as written
/// ("" when none); `self`, `cls` and `this` left out.
pub(super) fn parameters(func: tree_sitter::Node<'_>, source: &str) -> Vec<(String, String)> {
    let text = |n: tree_sitter::Node<'_>| n.utf8_text(source.as_bytes()).unwrap_or("").to_owned();
    let Some(params) = parameters_of(func) else {
        return Vec::new();
    };
    let mut c = params.walk();
    let mut out = Vec::new();
    for p in params.named_children(&mut c) {
        let name = match p.kind() {
            "identifier" => Some(p),
            // Python's `x: int`.
            "typed_parameter" => p.named_child(0),
            _ => p
                .child_by_field_name("name")
                .or_else(|| p.child_by_field_name("pattern"))
                .or_else(|| p.child_by_field_name("left"))
                .or_else(|| declared_name(p)),
        };
        let Some(name) = name.filter(|n| n.kind() == "identifier").map(text) else {
            continue;
        };
        if !matches!(name.as_str(), "self" | "cls" | "this") {
            out.push((
                name,
                p.child_by_field_name("type").map(text).unwrap_or_default(),
            ));
        }
    }
    out
}

/// A function's parameter list: its own field, or in C and C++ its
/// declarator's (`int *f(int n)`: through the pointer to the function
/// declarator).
pub(super) fn parameters_of(func: tree_sitter::Node<'_>) -> Option<tree_sitter::Node<'_>> {
    if let Some(p) = func.child_by_field_name("parameters") {
        return Some(p);
    }
    let mut d = func.child_by_field_name("declarator")?;
    loop {
        if d.kind() == "function_declarator" {
            return d.child_by_field_name("parameters");
        }
        d = d.child_by_field_name("declarator")?;
    }
}

/// The node naming a function definition: its `name` field, or in C and
/// C++ the identifier its function declarator declares (`int *f(int n)`).
pub(super) fn function_name(def: tree_sitter::Node<'_>) -> Option<tree_sitter::Node<'_>> {
    def.child_by_field_name("name").or_else(|| {
        parameters_of(def)
            .and_then(|p| p.parent())
            .and_then(|d| d.child_by_field_name("declarator"))
    })
}

/// The outermost function definition inside `start..end` (bytes) at or
/// below `node`: what a suspect's span holds.
fn function_within(
    node: tree_sitter::Node<'_>,
    start: usize,
    end: usize,
) -> Option<tree_sitter::Node<'_>> {
    let mut queue = std::collections::VecDeque::from([node]);
    while let Some(n) = queue.pop_front() {
        if n.start_byte() >= start
            && n.end_byte() <= end
            && parameters_of(n).is_some()
            && n.child_by_field_name("body").is_some()
        {
            return Some(n);
        }
        let mut c = n.walk();
        queue.extend(
            n.named_children(&mut c)
                .filter(|k| k.end_byte() > start && k.start_byte() < end),
        );
    }
    None
}

/// `cond` without the parentheses C-like syntax requires around it.
fn unparenthesized(cond: tree_sitter::Node<'_>) -> tree_sitter::Node<'_> {
    if cond.kind() == "parenthesized_expression" {
        cond.named_child(0).unwrap_or(cond)
    } else {
        cond
    }
}

/// `text` in parentheses when it holds a boolean operator of its own.
fn grouped(text: &str) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    if words
        .iter()
        .any(|w| matches!(*w, "and" | "or" | "&&" | "||"))
    {
        format!("({text})")
    } else {
        text.to_owned()
    }
}

/// Whether a returned expression is a literal (`0`, `None`, `[]`, `""`,
/// `-1`, `false`): a guard's plausible answer for an empty input.
fn is_literal(text: &str) -> bool {
    let t = text.trim_start_matches('-');
    matches!(
        t,
        "None"
            | "True"
            | "False"
            | "null"
            | "undefined"
            | "true"
            | "false"
            | "[]"
            | "{}"
            | "()"
            | "\"\""
            | "''"
    ) || t.parse::<f64>().is_ok()
}

/// The templates that reuse what the function already holds: a condition
/// widened or narrowed by another of its conditions, a guard for an empty
/// or missing argument, a return value replaced by another it returns,
/// and an argument too many removed.
fn ingredient_templates(
    lang: Lang,
    n: tree_sitter::Node<'_>,
    source: &str,
    ingredients: &Ingredients,
    exceptions: &[String],
    out: &mut Vec<Mutation>,
) {
    let bytes = source.as_bytes();
    let text = |n: tree_sitter::Node<'_>| n.utf8_text(bytes).unwrap_or("").to_owned();
    let kind = n.kind();
    let py = lang == Lang::Python;
    // `if a:` → `if a and b:` / `if a or b:`, `b` another condition of
    // the function, the nearest first.
    if let Some(cond) = n.child_by_field_name("condition") {
        if kind.contains("if") || kind.contains("while") || kind == "elif_clause" {
            let inner = unparenthesized(cond);
            let own = text(inner);
            let mut others: Vec<&(usize, String)> = ingredients
                .conditions
                .iter()
                .filter(|(_, c)| !own.contains(c.as_str()) && !c.contains(own.as_str()))
                .collect();
            others.sort_by_key(|(at, _)| at.abs_diff(inner.start_byte()));
            let (and, or) = if py { ("and", "or") } else { ("&&", "||") };
            for (_, other) in others.into_iter().take(3) {
                for op in [and, or] {
                    out.push(Mutation {
                        start: inner.start_byte(),
                        end: inner.end_byte(),
                        text: format!("{} {op} {}", grouped(&own), grouped(other)),
                        operator: "expand condition",
                        weight: 0.5,
                    });
                }
            }
        }
    }
    // A guard before the body: `if not xs: return xs` (or a literal the
    // function returns elsewhere).
    if ingredients.first_statement == Some(n.id()) {
        let line_start = source[..n.start_byte()].rfind('\n').map_or(0, |i| i + 1);
        let indent = &source[line_start..n.start_byte()];
        if indent.trim().is_empty() {
            // The literals the function returns elsewhere, else "nothing".
            let mut literals: Vec<&str> = ingredients
                .returns
                .iter()
                .map(String::as_str)
                .filter(|r| is_literal(r))
                .take(2)
                .collect();
            let native = matches!(lang, Lang::C | Lang::Cpp | Lang::Rust);
            if literals.is_empty() && !native {
                literals.push(if py { "None" } else { "null" });
            }
            for (i, p) in ingredients.params.iter().enumerate().take(4) {
                let ty = ingredients.param_types.get(i).map_or("", String::as_str);
                // C and Rust return what the function returns elsewhere
                // (the parameter itself only when it is what is returned).
                let mut values: Vec<&str> = if native {
                    let own = ingredients.returns.iter().any(|r| r == p);
                    own.then_some(p.as_str()).into_iter().collect()
                } else {
                    vec![p.as_str()]
                };
                values.extend(literals.iter().copied());
                if native && ingredients.returns_nothing {
                    values = vec![""];
                }
                for value in values {
                    let Some(guard) = guard_text(lang, p, ty, value, indent) else {
                        continue;
                    };
                    out.push(Mutation {
                        start: n.start_byte(),
                        end: n.start_byte(),
                        text: guard,
                        operator: "guard",
                        weight: 0.5,
                    });
                }
            }
            // A missing precondition: `if maxsize < 0: raise ValueError(…)`,
            // raising the language's usual error for a bad argument, and
            // what the file raises most when that is another (cachetools
            // raises KeyError ten times, but a bad size is a ValueError).
            let usual = if py { "ValueError" } else { "Error" };
            let mut errors = vec![usual];
            errors.extend(
                exceptions
                    .first()
                    .map(String::as_str)
                    .filter(|e| *e != usual),
            );
            for (p, error) in ingredients
                .params
                .iter()
                .take(4)
                .filter(|_| !native)
                .flat_map(|p| errors.iter().map(move |e| (p, e)))
            {
                let checks = if py {
                    [
                        format!("{p} is None"),
                        format!("{p} < 0"),
                        format!("not {p}"),
                    ]
                } else {
                    [format!("{p} == null"), format!("{p} < 0"), format!("!{p}")]
                };
                for check in checks {
                    let raise = if py {
                        format!("if {check}:\n{indent}    raise {error}(\"invalid {p}\")\n{indent}")
                    } else {
                        format!("if ({check}) throw new {error}(\"invalid {p}\");\n{indent}")
                    };
                    out.push(Mutation {
                        start: n.start_byte(),
                        end: n.start_byte(),
                        text: raise,
                        operator: "precondition",
                        weight: 0.4,
                    });
                }
            }
        }
    }
    // `return a` → `return b`, `b` another value the function returns.
    if matches!(kind, "return_statement" | "return_expression") {
        if let Some(value) = n.named_child(0) {
            let own = text(value);
            for other in ingredients.returns.iter().filter(|r| **r != own).take(4) {
                out.push(Mutation {
                    start: value.start_byte(),
                    end: value.end_byte(),
                    text: other.clone(),
                    operator: "return value",
                    weight: 0.5,
                });
            }
        }
    }
    // An argument too many: each one removed, with its separator.
    if matches!(kind, "argument_list" | "arguments") && n.named_child_count() >= 2 {
        let mut c = n.walk();
        let args: Vec<tree_sitter::Node<'_>> = n
            .named_children(&mut c)
            .filter(|a| !a.kind().contains("comment"))
            .collect();
        for (i, a) in args.iter().enumerate() {
            let (start, end) = match args.get(i + 1) {
                Some(next) => (a.start_byte(), next.start_byte()),
                None => (args[i - 1].end_byte(), a.end_byte()),
            };
            out.push(Mutation {
                start,
                end,
                text: String::new(),
                operator: "remove argument",
                weight: 0.3,
            });
        }
    }
}

/// Whether `n` is the value assigned to a variable that an enclosing
/// `while` loop's condition reads: the loop's step.
fn steps_a_loop(n: tree_sitter::Node<'_>, source: &str) -> bool {
    let bytes = source.as_bytes();
    let Some(assignment) = n.parent().filter(|p| p.kind().contains("assignment")) else {
        return false;
    };
    let Some(target) = assignment
        .child_by_field_name("left")
        .and_then(|l| l.utf8_text(bytes).ok())
    else {
        return false;
    };
    let mut up = assignment.parent();
    while let Some(a) = up {
        if a.kind().starts_with("while") {
            let reads = a
                .child_by_field_name("condition")
                .and_then(|c| c.utf8_text(bytes).ok())
                .is_some_and(|c| {
                    c.split(|ch: char| !(ch.is_alphanumeric() || ch == '_'))
                        .any(|w| w == target)
                });
            if reads {
                return true;
            }
        }
        up = a.parent();
    }
    false
}

/// An expression a boundary template may add one to: a variable read, a
/// call, an attribute (a literal is the constant operator's).
fn is_operand(n: tree_sitter::Node<'_>, source: &str) -> bool {
    match n.kind() {
        "identifier" => is_read(n),
        // A call only where it counts something: `escape(text) + 1` is
        // no bound.
        "call" | "call_expression" => n
            .child_by_field_name("function")
            .and_then(|f| f.utf8_text(source.as_bytes()).ok())
            .map(|f| f.rsplit(['.', ':']).next().unwrap_or(f))
            .is_some_and(|name| NUMERIC_CALLS.contains(&name)),
        "attribute" | "member_expression" | "field_expression" | "selector_expression" => true,
        _ => false,
    }
}

/// Calls whose value is a count, an index or a number.
const NUMERIC_CALLS: [&str; 16] = [
    "len", "int", "abs", "min", "max", "sum", "round", "count", "index", "find", "rfind", "ord",
    "size", "length", "floor", "ceil",
];

/// Names the file binds to a string literal (`PREFIX = "xn--"`, `const
/// sep = ", "`): operands arithmetic makes no sense of, like the literals.
fn string_names(root: tree_sitter::Node<'_>, source: &str) -> HashSet<String> {
    let mut names = HashSet::new();
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        let (name, value) = match n.kind() {
            "assignment" => (
                n.child_by_field_name("left"),
                n.child_by_field_name("right"),
            ),
            "variable_declarator" => (
                n.child_by_field_name("name"),
                n.child_by_field_name("value"),
            ),
            _ => (None, None),
        };
        if let (Some(name), Some(value)) = (name, value) {
            if name.kind() == "identifier" && is_string_literal(value) {
                if let Ok(text) = name.utf8_text(source.as_bytes()) {
                    names.insert(text.to_owned());
                }
            }
        }
        let mut c = n.walk();
        stack.extend(n.children(&mut c));
    }
    names
}

fn is_string_literal(n: tree_sitter::Node<'_>) -> bool {
    matches!(
        n.kind(),
        "string"
            | "concatenated_string"
            | "string_literal"
            | "template_string"
            | "raw_string_literal"
    )
}

/// Whether `n` is a string: a literal, a name the file binds to one, or
/// an operation on either (`'<' + s + '>'`): a value arithmetic and
/// negation make no sense of.
pub(super) fn is_string(n: tree_sitter::Node<'_>, strings: &HashSet<String>, source: &str) -> bool {
    if is_string_literal(n) {
        return true;
    }
    if n.kind() == "identifier" {
        return n
            .utf8_text(source.as_bytes())
            .is_ok_and(|t| strings.contains(t));
    }
    let mut c = n.walk();
    is_binary(n.kind())
        && n.named_children(&mut c)
            .any(|child| is_string(child, strings, source))
}

/// Whether `n` bounds something: an assignment's whole value, a side of
/// a comparison, a slice bound, or an argument of `range`.
fn bounds_something(n: tree_sitter::Node<'_>, source: &str) -> bool {
    let Some(parent) = n.parent() else {
        return false;
    };
    let is_field = |name: &str| {
        parent
            .child_by_field_name(name)
            .is_some_and(|c| c.id() == n.id())
    };
    let pk = parent.kind();
    if pk.contains("assignment") || pk == "variable_declarator" || pk == "init_declarator" {
        return is_field("right") || is_field("value");
    }
    if pk == "let_declaration" {
        return is_field("value");
    }
    if pk == "slice" {
        return true;
    }
    if is_binary(pk) && parent.named_child_count() == 2 {
        return is_single_comparison(parent, source);
    }
    if matches!(pk, "argument_list" | "arguments") {
        return parent
            .parent()
            .and_then(|call| call.child_by_field_name("function"))
            .and_then(|f| f.utf8_text(source.as_bytes()).ok())
            .is_some_and(|f| f == "range");
    }
    false
}

/// Byte offsets of 1-based lines `first..=last` of `source`.
fn line_span(source: &str, first: u32, last: u32) -> (usize, usize) {
    let mut start = source.len();
    let mut end = source.len();
    let mut at = 0usize;
    for (line, l) in (1u32..).zip(source.split_inclusive('\n')) {
        if line == first {
            start = at;
        }
        at += l.len();
        if line == last {
            end = at;
            break;
        }
    }
    (start.min(end), end)
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
        let Localised {
            lines,
            unmet,
            compared,
        } = self.localised(cx).await;
        let suspects = {
            let mut cached = self.suspects.lock().unwrap_or_else(|p| p.into_inner());
            cached
                .get_or_insert_with(|| {
                    let graph = self.localize(&cx.oracle.target, &cx.oracle.guard);
                    let index = self.index.lock().unwrap_or_else(|p| p.into_inner());
                    let lines = line_suspects(&index, &lines, &cx.oracle.target);
                    with_line_suspects(graph, lines)
                })
                .clone()
        };
        let line_score: HashMap<(&str, u32), f64> = lines
            .iter()
            .map(|l| ((l.file.as_str(), l.line), l.score))
            .collect();
        // A missing check belongs where the failing tests pass: a share of
        // them, not Ochiai, which punishes a place every passing test also
        // runs (a constructor's validation is on every test's path).
        let failing_share: HashMap<(&str, u32), f64> = {
            let all = lines.iter().map(|l| l.failing).max().unwrap_or(0).max(1);
            lines
                .iter()
                .map(|l| ((l.file.as_str(), l.line), l.failing as f64 / all as f64))
                .collect()
        };
        let target_words = test_words(&cx.oracle.target);
        // Each file read and parsed once, however many suspects it holds.
        let mut files: BTreeMap<String, Parsed> = BTreeMap::new();
        let mut all: Vec<(f64, String, usize, Candidate)> = Vec::new();
        let mut seen = HashSet::new();
        let mut callee_keywords: HashMap<String, Vec<String>> = HashMap::new();
        for s in &suspects {
            let Some(lang) = Lang::of_path(Path::new(&s.file)) else {
                continue;
            };
            if !files.contains_key(&s.file) {
                let current = match cx.changed.get(&s.file) {
                    Some(Some(text)) => Some(text.clone()),
                    Some(None) => None,
                    None => cx
                        .sandbox
                        .read_file(Path::new(&s.file))
                        .await
                        .ok()
                        .and_then(|b| String::from_utf8(b).ok()),
                };
                let Some(current) = current else { continue };
                let Some(parsed) = Parsed::new(lang, current, self.templates) else {
                    continue;
                };
                files.insert(s.file.clone(), parsed);
            }
            let file = &files[&s.file];
            let source = &file.source;
            let (start, end) = line_span(source, s.line, s.end_line);
            // What a failing test's error says of a line in this
            // definition comes first: a name not defined, a function used
            // where its result was meant.
            let mut found: Vec<Mutation> = Vec::new();
            for l in lines.iter().filter(|l| {
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
                .filter(|_| self.templates && file.lang == Lang::Python);
            if let Some(func) = func {
                let ran = |line: u32| line_score.contains_key(&(s.file.as_str(), line));
                let named = |w: &str| target_words.contains(w);
                found.extend(missing_raises(file, func, &unmet, &ran, &named));
                let mut keywords = |name: &str| {
                    let original = file.ingredients.original(name).to_owned();
                    callee_keywords
                        .entry(original.clone())
                        .or_insert_with(|| self.keyword_params(&original))
                        .clone()
                };
                found.extend(forward_arguments(func, source, &mut keywords));
            }
            if self.templates && file.lang == Lang::Python {
                found.extend(expected_values(
                    file.tree.root_node(),
                    source,
                    start,
                    end,
                    &compared,
                ));
            }
            found.extend(mutations(file, start, end, self.templates));
            let mut class_weight: HashMap<&str, f64> = HashMap::new();
            for m in &found {
                *class_weight.entry(m.operator).or_default() += m.weight;
            }
            for m in found.iter().cloned() {
                let new = m.applied_to(source);
                if !seen.insert((s.file.clone(), new.clone())) {
                    continue;
                }
                let line = source[..m.start].matches('\n').count() + 1;
                let was = &source[m.start..m.end];
                let hypothesis = format!(
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
                let mut hypothesis = hypothesis;
                if !line_score.is_empty() {
                    // The most suspicious line the mutation touches.
                    let last = line + was.matches('\n').count();
                    let missing_raise = m.operator == "missing raise";
                    let scores = if missing_raise {
                        &failing_share
                    } else {
                        &line_score
                    };
                    // An edit outside the definition it was proposed for
                    // (a module constant it reads) weighs as the
                    // definition's most suspicious line.
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
                all.push((
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
        }
        // The k likeliest, then in source order: the order a search that
        // ignores priors (breadth-first) sees.
        all.sort_by(|a, b| b.0.total_cmp(&a.0));
        all.truncate(k);
        all.sort_by(|a, b| a.1.cmp(&b.1).then(a.2.cmp(&b.2)));
        Ok(all.into_iter().map(|(_, _, _, c)| c).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mutants(lang: Lang, src: &str) -> Vec<String> {
        mutants_of(lang, src, false)
    }

    fn mutants_of(lang: Lang, src: &str, templates: bool) -> Vec<String> {
        let file = Parsed::new(lang, src.to_owned(), templates).unwrap();
        mutations(&file, 0, src.len(), templates)
            .into_iter()
            .map(|m| m.applied_to(src))
            .collect()
    }

    #[test]
    fn templates_add_bounds_reduced_conditions_and_moved_statements() {
        let src = "def f(xs, lo, hi, ok):\n    while lo < hi:\n        mid = (lo + hi) // 2\n        if xs[mid] < 5 and ok:\n            lo = mid\n        else:\n            hi = mid\n    total = 0\n    total = lo\n    return xs[lo:hi], range(lo, hi)\n";
        let with = mutants_of(Lang::Python, src, true);
        for expected in [
            "            lo = mid + 1\n",
            "            hi = mid - 1\n",
            "    while lo < hi - 1:\n",
            "        if xs[mid] < 5:\n",
            "        if ok:\n",
            "    total = lo\n    total = 0\n",
            "xs[lo:hi + 1]",
            "range(lo, hi - 1)",
        ] {
            assert!(
                with.iter().any(|s| s.contains(expected)),
                "no template with {expected:?}"
            );
        }
        assert!(with.iter().all(|s| Lang::Python.syntax_error(s).is_none()));
        // The mutate brancher alone makes none of them.
        let without = mutants_of(Lang::Python, src, false);
        assert!(!without.iter().any(|s| s.contains("lo = mid + 1")));
        assert!(!without.iter().any(|s| s.contains("if ok:")));
        assert!(with.len() > without.len());
    }

    #[test]
    fn a_swap_that_makes_an_operation_do_nothing_leaves_the_operand_alone() {
        let src = "def f(ys, mid, k):\n    return ys[mid - 1] + (1 + k)\n";
        let m = mutants(Lang::Python, src);
        // `mid - 1` → `mid * 1` reads `mid`; `1 + k` → `1 * k` reads `k`.
        assert!(m.iter().any(|s| s.contains("ys[mid] + (1 + k)")), "{m:#?}");
        assert!(m.iter().any(|s| s.contains("ys[mid - 1] + (k)")), "{m:#?}");
        assert!(
            !m.iter().any(|s| s.contains("* 1") || s.contains("1 *")),
            "{m:#?}"
        );
        // Swaps that change the value stay as they were.
        assert!(m.iter().any(|s| s.contains("ys[mid + 1]")));
        let c = mutants(Lang::C, "int f(int a) { return a << 1; }\n");
        assert!(c.iter().any(|s| s.contains("return a >> 1;")), "{c:#?}");
    }

    #[test]
    fn ingredient_templates_guard_widen_return_and_drop_arguments() {
        let src = "def find(xs, target):\n    \"\"\"Where target is.\"\"\"\n    i = 0\n    while i < len(xs):\n        if xs[i] == target:\n            return max(i, 0)\n        i += 1\n    return -1\n";
        let with = mutants_of(Lang::Python, src, true);
        for expected in [
            // A guard after the docstring, answering with the argument or
            // a literal the function returns.
            "\"\"\"Where target is.\"\"\"\n    if not xs:\n        return xs\n    i = 0\n",
            "    if not xs:\n        return -1\n    i = 0\n",
            // A condition widened or narrowed by another of the function's.
            "while i < len(xs) and xs[i] == target:",
            "if xs[i] == target or i < len(xs):",
            // Another value the function returns.
            "            return -1\n        i += 1",
            "    return max(i, 0)\n",
            // An argument too many.
            "return max(0)",
            "return max(i)",
        ] {
            assert!(
                with.iter().any(|s| s.contains(expected)),
                "no template with {expected:?}"
            );
        }
        assert!(with.iter().all(|s| Lang::Python.syntax_error(s).is_none()));
        let without = mutants_of(Lang::Python, src, false);
        assert!(!without.iter().any(|s| s.contains("if not xs:")));
        // JavaScript: the same guard in its own syntax, and `&&`/`||`
        // with parentheses kept around a compound ingredient.
        let js = "function f(xs, n) {\n  if (xs.length > n || n < 0) { return null; }\n  while (n > 0) { n = n - 1; }\n  return xs[n];\n}\n";
        let with = mutants_of(Lang::JavaScript, js, true);
        for expected in [
            "{\n  if (!xs) return xs;\n  if (xs.length",
            "{\n  if (!xs) return null;\n",
            "while (n > 0 && (xs.length > n || n < 0))",
        ] {
            assert!(
                with.iter().any(|s| s.contains(expected)),
                "no template with {expected:?} in {with:#?}"
            );
        }
    }

    #[test]
    fn a_variable_is_replaced_only_by_one_in_scope_where_it_is_read() {
        let src = "def f(xs, key):\n    total = 0\n    for i, x in enumerate(xs):\n        total += x\n    result = len(xs)\n    return total\n";
        let all = mutants(Lang::Python, src);
        for expected in [
            "total += i\n",
            "total += xs\n",
            "total += key\n",
            "return result\n",
        ] {
            assert!(all.iter().any(|s| s.contains(expected)), "no {expected:?}");
        }
        // `result` is bound after the loop: not a candidate inside it.
        assert!(!all.iter().any(|s| s.contains("total += result")));
        // Nor a name the function never binds (a builtin, a global).
        assert!(!all.iter().any(|s| s.contains("total += enumerate")));
    }

    #[test]
    fn templates_add_preconditions_wrap_values_and_guard_yields() {
        let cache = "class Cache:\n    def __init__(self, maxsize, getsizeof=None):\n        self.maxsize = maxsize\n\n    def clear(self):\n        raise KeyError(self)\n";
        let with = mutants_of(Lang::Python, cache, true);
        for expected in [
            // A precondition on a parameter, raising the usual error for
            // a bad argument, and what the file raises.
            "        if maxsize < 0:\n            raise ValueError(\"invalid maxsize\")\n        self.maxsize = maxsize\n",
            "        if maxsize < 0:\n            raise KeyError(\"invalid maxsize\")\n        self.maxsize = maxsize\n",
            "        if getsizeof is None:\n            raise KeyError(\"invalid getsizeof\")\n",
        ] {
            assert!(
                with.iter().any(|s| s.contains(expected)),
                "no template with {expected:?}"
            );
        }
        let without = mutants_of(Lang::Python, cache, false);
        assert!(!without.iter().any(|s| s.contains("invalid maxsize")));
        let src = "def link(url, title):\n    return '<' + url + ' \"' + title + '\">'\n\n\ndef _escape_title(title):\n    return title.replace('\"', '')\n\n\ndef split(it):\n    yield list(it)\n    yield it\n\n\ndef check(x):\n    if x:\n        raise KeyError(x)\n    raise KeyError(x)\n";
        let with = mutants_of(Lang::Python, src, true);
        for expected in [
            // A value passed through the file's function named after it.
            "' \"' + _escape_title(title) + '\">'",
            // A yield of an empty value guarded, through a new name.
            "    value = list(it)\n    if value:\n        yield value\n",
            "    if it:\n        yield it\n",
        ] {
            assert!(
                with.iter().any(|s| s.contains(expected)),
                "no template with {expected:?}"
            );
        }
        assert!(with.iter().all(|s| Lang::Python.syntax_error(s).is_none()));
        // The fresh name need only be free in the function: the file using
        // `value`, `item` and `chunk` elsewhere is no clash (more-itertools
        // 9.1.0's `split_after`, whose fix is this guard).
        let busy = "def f(value, item, chunk):\n    return value, item, chunk\n\n\ndef split(it):\n    for x in it:\n        yield list(it)\n";
        assert!(
            mutants_of(Lang::Python, busy, true)
                .iter()
                .any(|s| s.contains(
                    "        value = list(it)\n        if value:\n            yield value\n"
                )),
            "no guarded yield"
        );
        // A method or a dunder is no function a value goes through: a call
        // of it needs its receiver.
        let methods = "class Box:\n    def __init__(self):\n        pass\n\n    def title_of(self):\n        return 1\n\n\ndef show(title):\n    return '<' + title + '>'\n";
        let wrapped = mutants_of(Lang::Python, methods, true);
        assert!(!wrapped.iter().any(|s| s.contains("__init__(title)")));
        assert!(!wrapped.iter().any(|s| s.contains("title_of(title)")));
        // Not the called name, not an attribute's, not `url` (no function
        // of the file is named for it).
        assert!(!with.iter().any(|s| s.contains("_escape_title(url)")));
        assert!(!with.iter().any(|s| s.contains("self._escape_title(")));
        let js = mutants_of(
            Lang::JavaScript,
            "function f(n) {\n  return n * 2;\n}\n",
            true,
        );
        assert!(
            js.iter()
                .any(|s| s
                    .contains("  if (n == null) throw new Error(\"invalid n\");\n  return n * 2;")),
            "{js:#?}"
        );
        assert!(js
            .iter()
            .all(|s| Lang::JavaScript.syntax_error(s).is_none()));
    }

    #[test]
    fn type_stubs_and_tests_are_never_repaired() {
        let stack = forq_bootstrap::Stack::custom("forq.yml", Vec::new(), "python -m pytest");
        assert!(repairable(&stack, "pkg/more.py"));
        assert!(!repairable(&stack, "pkg/more.pyi"));
        assert!(!repairable(&stack, "types/index.d.ts"));
        assert!(!repairable(&stack, "tests/test_more.py"));
    }

    #[test]
    fn a_c_function_is_never_wrapped_around_its_own_values_nor_renamed() {
        // `count` could go through `count_of` (one argument, named for
        // it), never through `count_up`, the function being repaired: C
        // names a function through its declarator, not a `name` field.
        let src = "int count_of(int count) {\n  return count;\n}\n\nint count_up(int count) {\n  return count + 1;\n}\n";
        let file = Parsed::new(Lang::C, src.to_owned(), true).unwrap();
        let start = src.find("int count_up").unwrap();
        let mutants: Vec<String> = mutations(&file, start, src.len(), true)
            .into_iter()
            .map(|m| m.applied_to(src))
            .collect();
        assert!(
            mutants
                .iter()
                .any(|s| s.contains("return count_of(count) + 1;")),
            "{mutants:#?}"
        );
        assert!(!mutants.iter().any(|s| s.contains("count_up(count)")));
        // Nor is the name it declares mended into another's.
        assert!(
            !mutants
                .iter()
                .any(|s| s.matches("int count_of(").count() > 1),
            "{mutants:#?}"
        );
    }

    #[test]
    fn reach_templates_unwrap_calls_negate_operands_and_mend_names() {
        let src = "from .util import finalize_tokens\n\ndef render(self, text, item, ok):\n    alt = escape(strip(text))\n    if isinstance(item, int) and ok:\n        return wraps(alt, item)\n    try:\n        check(alt)\n    except ValueError:\n        raise KeyError(alt)\n    return _finalize_tokens(alt.lower())\n";
        let with = mutants_of(Lang::Python, src, true);
        for expected in [
            // A call replaced by its argument, or a method call by its
            // receiver.
            "    alt = strip(text)\n",
            "    alt = escape(text)\n",
            "        return alt\n",
            "        return item\n",
            "_finalize_tokens(alt)",
            // One side of `and` negated.
            "if isinstance(item, int) and not ok:",
            "if not isinstance(item, int) and ok:",
            // A type the check missed.
            "isinstance(item, (int, slice))",
            // A name mistaken for a similar one of the file.
            "return finalize_tokens(alt.lower())",
            // The `try` that hid the error, unwrapped.
            "        return wraps(alt, item)\n    check(alt)\n    return _finalize",
        ] {
            assert!(
                with.iter().any(|s| s.contains(expected)),
                "no template with {expected:?}"
            );
        }
        assert!(with.iter().all(|s| Lang::Python.syntax_error(s).is_none()));
        // A string-valued call is no bound, and strings joined by `+`
        // take no other arithmetic; a count is a bound, and a comparison
        // with a string still swaps.
        assert!(!with.iter().any(|s| s.contains("escape(strip(text)) + 1")));
        let joined = mutants_of(
            Lang::Python,
            "def f(xs, s):\n    n = len(xs)\n    return '<' + s if s == 'a' else n\n",
            true,
        );
        assert!(!joined
            .iter()
            .any(|s| s.contains("'<' - s") || s.contains("'<' * s")));
        assert!(joined.iter().any(|s| s.contains("n = len(xs) + 1")));
        assert!(joined.iter().any(|s| s.contains("s != 'a'")));
        let chained = mutants_of(
            Lang::Python,
            "PREFIX = 'xn--'\n\ndef g(a, b):\n    c = PREFIX + b\n    return '<' + a + b\n",
            true,
        );
        assert!(
            !chained
                .iter()
                .any(|s| s.contains(" - ") || s.contains(" * ") || s.contains("not (")),
            "{chained:#?}"
        );
        // Definitions, parameters and imports keep their names.
        assert!(!with
            .iter()
            .any(|s| s.contains("from .util import _finalize")));
        let without = mutants_of(Lang::Python, src, false);
        assert!(!without.iter().any(|s| s.contains("alt = strip(text)")));
        assert!(!without.iter().any(|s| s.contains("(int, slice)")));
        // JavaScript: the same calls and operands in its syntax.
        let js = "function f(a, ok) {\n  const b = trim(pad(a));\n  if (a.length && ok) { return b.toLowerCase(); }\n  return paddd(b);\n}\nfunction padd(x) { return x; }\n";
        let with = mutants_of(Lang::JavaScript, js, true);
        for expected in [
            "const b = pad(a);",
            "if (a.length && !ok)",
            "if (!a.length && ok)",
            "return b; }",
            "return padd(b);",
        ] {
            assert!(
                with.iter().any(|s| s.contains(expected)),
                "no template with {expected:?} in {with:#?}"
            );
        }
    }

    #[test]
    fn templates_apply_to_c_like_languages() {
        for (lang, src, expected) in [
            (
                Lang::JavaScript,
                "function f(a, n) { let i = n; if (a && i > 0) { i = n; } return i; }\n",
                "let i = n - 1;",
            ),
            (
                Lang::JavaScript,
                "function f(a, b) { if (a && b) { return 1; } return 0; }\n",
                "if (b)",
            ),
            (
                Lang::Rust,
                "fn f(n: i32, m: i32) -> bool { n < m }\n",
                "n < m + 1",
            ),
            (
                Lang::C,
                "int f(int n) { int x = 0; int y = 1; return x + y + n; }\n",
                "int y = 1; int x = 0;",
            ),
        ] {
            let m = mutants_of(lang, src, true);
            assert!(
                m.iter().any(|s| s.contains(expected)),
                "{lang:?}: no {expected:?} in {m:#?}"
            );
        }
    }

    #[test]
    fn c_and_rust_get_guards_and_rust_saturating_subtraction() {
        for (lang, src, expected) in [
            (
                Lang::C,
                "int sum(int *xs, int n) {\n    int s = 0;\n    if (n > 99) return -1;\n    for (int i = 0; i < n; i++) s += xs[i];\n    return s;\n}\n",
                "    if (!xs) return -1;\n    int s = 0;",
            ),
            (
                Lang::C,
                "void fill(char *buf, int n) {\n    buf[n - 1] = 0;\n}\n",
                "    if (!buf) return;\n    buf[n - 1] = 0;",
            ),
            (
                Lang::Rust,
                "fn last(xs: &[i32]) -> Option<i32> {\n    if xs.len() > 5 {\n        return None;\n    }\n    Some(xs[xs.len() - 1])\n}\n",
                "    if xs.is_empty() {\n        return None;\n    }\n    if xs.len() > 5",
            ),
            (
                Lang::Rust,
                "fn gap(a: usize, b: usize) -> usize {\n    a - b\n}\n",
                "    a.saturating_sub(b)\n",
            ),
        ] {
            let m = mutants_of(lang, src, true);
            assert!(
                m.iter().any(|s| s.contains(expected)),
                "{lang:?}: no {expected:?} in {m:#?}"
            );
            assert!(m.iter().all(|s| lang.syntax_error(s).is_none()), "{lang:?}");
        }
        // A guard needs a value to return: none for a C function that
        // returns only computed values, and no saturation of floats.
        let c = mutants_of(Lang::C, "int twice(int n) {\n    return n * 2;\n}\n", true);
        assert!(!c.iter().any(|s| s.contains("if (!n)")), "{c:#?}");
        let f = mutants_of(Lang::Rust, "fn h(x: f64) -> f64 {\n    x - 1.0\n}\n", true);
        assert!(!f.iter().any(|s| s.contains("saturating_sub")));
        // Without templates, neither.
        let plain = mutants_of(
            Lang::Rust,
            "fn gap(a: usize, b: usize) -> usize {\n    a - b\n}\n",
            false,
        );
        assert!(!plain.iter().any(|s| s.contains("saturating_sub")));
    }

    #[test]
    fn python_operators_constants_conditions_and_indexes() {
        let src = "def f(xs, n):\n    if n < 1:\n        return xs[n]\n    if n == 1 and isinstance(xs, list):\n        return 0\n    return n - 1\n";
        let m = mutants(Lang::Python, src);
        for expected in [
            "    if n <= 1:\n",
            "    if n >= 1:\n",
            "    if not (n == 1 and isinstance(xs, list)):\n",
            "        return xs[n + 1]\n",
            "    return n + 1\n",
            "    return n - 2\n",
        ] {
            assert!(
                m.iter().any(|s| s.contains(expected)),
                "no mutant with {expected:?}"
            );
        }
        assert!(m.iter().all(|s| Lang::Python.syntax_error(s).is_none()));
        // A single comparison is negated by swapping its operator only.
        assert!(!m.iter().any(|s| s.contains("not (n < 1)")), "{m:#?}");
    }

    #[test]
    fn shape_templates_swap_operands_move_indexes_and_keep_running_maxima() {
        for (src, expected) in [
            (
                "def digits(n, b):\n    out = ''\n    while n:\n        out = out + str(n % b)\n        n //= b\n    return out\n",
                "        out = str(n % b) + out\n",
            ),
            (
                "def cost(g, i, j):\n    return g[i, j] + 1\n",
                "    return g[i, j - 1] + 1\n",
            ),
            (
                "def cost(g, i, j):\n    return g[i, j] + 1\n",
                "    return g[j, i] + 1\n",
            ),
            (
                "def peak(xs):\n    best = 0\n    for x in xs:\n        best = best + x\n    return best\n",
                "        best = max(0, best + x)\n",
            ),
            (
                "def longest(xs):\n    run = 0\n    for i, x in enumerate(xs):\n        run = i + 1\n    return run\n",
                "        run = max(run, i + 1)\n",
            ),
        ] {
            let m = mutants_of(Lang::Python, src, true);
            assert!(
                m.iter().any(|s| s.contains(expected)),
                "no mutant with {expected:?}: {m:#?}"
            );
            assert!(m.iter().all(|s| Lang::Python.syntax_error(s).is_none()));
            // Only with the templates.
            let plain = mutants_of(Lang::Python, src, false);
            assert!(!plain.iter().any(|s| s.contains(expected)), "{expected:?}");
        }
        // `+` on numbers is left in its order.
        let m = mutants_of(Lang::Python, "def f(a, b):\n    return a + b\n", true);
        assert!(!m.iter().any(|s| s.contains("return b + a")), "{m:#?}");
    }

    #[test]
    fn shape_templates_mend_base_cases_loops_and_forgotten_statements() {
        for (src, expected) in [
            (
                "def parts(n):\n    if n == 0:\n        return []\n    return [n] + parts(n - 1)\n",
                "        return [[]]\n",
            ),
            (
                "def parts(n):\n    if n == 0:\n        return []\n    return [n] + parts(n - 1)\n",
                "        return [n]\n",
            ),
            (
                "def balanced(s):\n    depth = 0\n    for c in s:\n        depth += 1 if c == '(' else -1\n    return True\n",
                "    return depth == 0\n",
            ),
            (
                "def drain(q):\n    seen = []\n    while True:\n        seen.append(q.pop())\n    return seen\n",
                "    while q:\n",
            ),
            (
                "def unique(xs):\n    seen = set()\n    out = []\n    for x in xs:\n        if x not in seen:\n            out.append(x)\n    return out\n",
                "            out.append(x)\n            seen.add(x)\n",
            ),
            (
                "def chunks(s, n):\n    out = []\n    while len(s) > n:\n        out.append(s[:n])\n        s = s[n:]\n    return out\n",
                "        s = s[n:]\n    out.append(s)\n    return out\n",
            ),
            (
                "def flip(node):\n    prev = None\n    while node:\n        nxt = node.next\n        node.back = prev\n        node = nxt\n    return prev\n",
                "        prev = node\n        node = nxt\n",
            ),
            (
                "def second(n):\n    if n.next is None:\n        return None\n    return n.next.value\n",
                "    if n is None or n.next is None:\n",
            ),
        ] {
            let m = mutants_of(Lang::Python, src, true);
            assert!(
                m.iter().any(|s| s.contains(expected)),
                "no mutant with {expected:?}: {m:#?}"
            );
            assert!(
                m.iter().all(|s| Lang::Python.syntax_error(s).is_none()),
                "{m:#?}"
            );
        }
        // A collection that is filled gets no insertion; a variable the
        // loop moves gets none either.
        let m = mutants_of(
            Lang::Python,
            "def copy(xs):\n    out = []\n    for x in xs:\n        out.append(x)\n    return out\n",
            true,
        );
        assert!(
            !m.iter().any(|s| s.matches("out.append(x)").count() > 1),
            "{m:#?}"
        );
    }

    #[test]
    fn compound_assignments_swap_their_operator() {
        for (lang, src, expected, plain) in [
            (
                Lang::Python,
                "def f(n):\n    while n:\n        n ^= n - 1\n    return n\n",
                "        n &= n - 1\n",
                "        n = n - 1\n",
            ),
            (
                Lang::JavaScript,
                "function f(n) {\n  let s = 0;\n  s += n;\n  return s;\n}\n",
                "  s -= n;\n",
                "  s = n;\n",
            ),
            (
                Lang::C,
                "int f(int n) {\n  int s = 0;\n  s += n;\n  return s;\n}\n",
                "  s -= n;\n",
                "  s = n;\n",
            ),
        ] {
            let m = mutants(lang, src);
            assert!(
                m.iter().any(|s| s.contains(expected)),
                "{lang:?}: no mutant with {expected:?}: {m:#?}"
            );
            // The assignment itself is never turned into a plain one.
            assert!(!m.iter().any(|s| s.contains(plain)), "{lang:?}: {m:#?}");
        }
    }

    #[test]
    fn c_like_languages_share_the_operators() {
        for (lang, src, expected) in [
            (
                Lang::C,
                "int f(int a, int b) { return a > b ? a : b; }\n",
                "a >= b",
            ),
            (
                Lang::JavaScript,
                "function f(a, b) { if (a && b) { return 1; } return 0; }\n",
                "a || b",
            ),
            (
                Lang::Rust,
                "fn f(a: i32) -> i32 { if a == 0 { 1 } else { a * 2 } }\n",
                "a != 0",
            ),
            (
                Lang::Go,
                "package m\nfunc F(a int) int { return a + 3 }\n",
                "a - 3",
            ),
            (
                Lang::Java,
                "class A { int f(int[] a, int i) { return a[i]; } }\n",
                "a[i + 1]",
            ),
        ] {
            let m = mutants(lang, src);
            assert!(
                m.iter().any(|s| s.contains(expected)),
                "{lang:?}: no {expected:?} in {m:#?}"
            );
        }
    }

    #[test]
    fn a_function_the_failing_tests_name_comes_first_among_ties() {
        let named = test_words(&[
            "tests/test_renderers.py::TestMarkdownRendererRoundTrip::test_link_title".to_owned(),
        ]);
        assert!(named.contains("markdown") && named.contains("link"));
        assert_eq!(affinity("MarkdownRenderer.link", &named), 1.0);
        assert!((affinity("HTMLRenderer.link", &named) - 2.0 / 3.0).abs() < 1e-9);
        assert_eq!(affinity("InlineParser.parse_emphasis", &named), 0.0);
        assert_eq!(affinity("_", &named), 0.0);
    }

    #[test]
    fn test_ids_split_into_words_last_first() {
        assert_eq!(
            id_words("tests/test_calc.py::CalcTest::test_add"),
            ["test_add", "CalcTest", "test_calc", "tests"]
        );
        assert_eq!(id_words("tests.test_calc.CalcTest.test_add")[0], "test_add");
    }
}
