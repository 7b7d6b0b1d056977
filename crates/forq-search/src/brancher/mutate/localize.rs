//! Fault localisation for `mutate`: failing tests to the definitions on
//! their call paths in the code graph, scored by Ochiai over the tests that
//! reach them, and the statement-level suspects of a traced run folded in.

use std::collections::{BTreeMap, HashMap, HashSet};

use forq_bootstrap::Stack;
use forq_graph::{Index, SymbolFilter};

use super::Suspect;
use crate::brancher::templates::reach::words;
use crate::spectrum::{Compared, Expected, LineSuspect};

/// The words of a test id, last first: `tests/test_calc.py::CalcTest::test_add`
/// → `test_add`, `CalcTest`, `test_calc`, `tests`.
pub(crate) fn id_words(id: &str) -> Vec<&str> {
    id.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty() && w != &"py")
        .rev()
        .collect()
}

/// The graph's test definitions a runner's test id names.
pub(crate) fn test_symbols(index: &Index, id: &str) -> Vec<String> {
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
pub(crate) fn reached(index: &Index, stack: &Stack, tests: &[String]) -> HashMap<String, u32> {
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
pub(crate) fn repairable(stack: &Stack, file: &str) -> bool {
    !stack.is_test_file(file) && !file.ends_with(".pyi") && !file.ends_with(".d.ts")
}

/// Non-test definitions named in the source of the test `id` (calls the
/// graph cannot see: inside macros such as Rust's `assert_eq!`).
pub(crate) fn named_in(index: &Index, stack: &Stack, id: &str) -> HashMap<String, u32> {
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
pub(crate) fn names_in(
    index: &Index,
    stack: &Stack,
    text: &str,
    except: &str,
) -> HashMap<String, u32> {
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

pub(crate) fn localize(
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
        fail = anything_tested(index, stack);
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

/// When no failing test maps onto the graph: what any test calls, or else
/// every function outside the tests (each as if one failing test reached
/// it).
fn anything_tested(index: &Index, stack: &Stack) -> HashMap<String, (usize, u32)> {
    let symbols = index.symbols(&SymbolFilter::default()).unwrap_or_default();
    let tests: Vec<String> = symbols
        .iter()
        .filter(|s| s.test || stack.is_test_file(&s.file))
        .map(|s| s.id.clone())
        .collect();
    let mut fail: HashMap<String, (usize, u32)> = reached(index, stack, &tests)
        .into_iter()
        .map(|(def, depth)| (def, (1, depth)))
        .collect();
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
    fail
}

/// How much of a definition's qualified name the failing tests' ids name:
/// the share of its words (`MarkdownRenderer.link` → markdown, renderer,
/// link) among theirs (`TestMarkdownRendererRoundTrip::test_link_title`),
/// 0 to 1. Tests are named after what they test; lines that every failing
/// test runs and no passing one tie, and the name tells them apart.
pub(crate) fn affinity(qualname: &str, test_words: &HashSet<String>) -> f64 {
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
pub(crate) fn test_words(ids: &[String]) -> HashSet<String> {
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
pub(crate) fn line_suspects(
    index: &Index,
    lines: &[LineSuspect],
    failing: &[String],
) -> Vec<Suspect> {
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
pub(crate) fn with_line_suspects(mut graph: Vec<Suspect>, lines: Vec<Suspect>) -> Vec<Suspect> {
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

/// What statement-level localisation found.
#[derive(Debug, Clone, Default)]
pub(crate) struct Localised {
    /// The suspected lines, best first.
    pub(crate) lines: Vec<LineSuspect>,
    /// Exceptions failing tests expected and never got
    /// ([`crate::spectrum::Spectrum::unmet`]).
    pub(crate) unmet: Vec<Expected>,
    /// Values failing tests found unequal
    /// ([`crate::spectrum::Spectrum::compared`]).
    pub(crate) compared: Vec<Compared>,
}

/// Definitions added to the call graph's suspects for holding the lines
/// the spectrum suspects most.
pub(crate) const MAX_LINE_SUSPECTS: usize = 6;

/// Lines reported as suspected at most.
pub(crate) const MAX_LINES_REPORTED: usize = 20;

/// A mutation's weight on a line no failing test runs.
pub(crate) const UNRUN_LINE: f64 = 0.05;

/// How far from a test the call paths are followed.
pub(crate) const CALL_DEPTH: u32 = 3;

/// Suspicious definitions mutated, most suspicious first.
pub(crate) const MAX_SUSPECTS: usize = 12;

/// Passing tests looked at for the spectrum.
pub(crate) const MAX_GUARD_TESTS: usize = 200;
