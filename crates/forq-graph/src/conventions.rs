//! How a codebase writes code: naming case per kind of definition,
//! indentation, string quotes, import style, test naming and layout, and
//! the error-handling idiom — each with its coverage (how many of the
//! places it could hold it does), so only the ones a codebase really keeps
//! are stated to a model.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::{Index, Lang, Result, SymbolFilter};

/// One convention and how widely it holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Convention {
    /// What it is about: `naming`, `indentation`, `quotes`, `imports`,
    /// `tests`, `errors`.
    pub topic: String,
    /// The convention, in words (`python functions are snake_case`).
    pub rule: String,
    /// Places that follow it.
    pub count: usize,
    /// Places it could hold.
    pub of: usize,
}

impl Convention {
    /// The share of places that follow it.
    pub fn coverage(&self) -> f64 {
        if self.of == 0 {
            0.0
        } else {
            self.count as f64 / self.of as f64
        }
    }
}

/// The conventions that hold at or above a coverage threshold.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Conventions {
    /// The threshold.
    pub threshold: f64,
    /// Those that hold, most widely held first.
    pub conventions: Vec<Convention>,
}

impl Conventions {
    /// The conventions as prompt lines, at most `chars` characters.
    pub fn prompt(&self, chars: usize) -> String {
        let mut out = String::new();
        for c in &self.conventions {
            let line = format!(
                "- {} ({} of {}, {:.0}%)\n",
                c.rule,
                c.count,
                c.of,
                c.coverage() * 100.0
            );
            if out.len() + line.len() > chars {
                break;
            }
            out.push_str(&line);
        }
        out
    }
}

/// Fewer places than this say nothing of a convention.
const MIN_PLACES: usize = 3;

/// The case a name is written in.
fn case_of(name: &str) -> Option<&'static str> {
    let letters = name.trim_matches('_');
    if letters.len() < 2 || name.starts_with("__") {
        return None;
    }
    let has_lower = letters.chars().any(|c| c.is_ascii_lowercase());
    let has_upper = letters.chars().any(|c| c.is_ascii_uppercase());
    let first_upper = letters
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_uppercase());
    Some(match (has_lower, has_upper, first_upper) {
        (false, true, _) => "UPPER_CASE",
        (true, false, _) => "snake_case",
        (true, true, true) if !letters.contains('_') => "PascalCase",
        (true, true, false) if !letters.contains('_') => "camelCase",
        _ => "mixed",
    })
}

/// Tallies of a topic: rule text → (count, of).
#[derive(Default)]
struct Tally(BTreeMap<(String, String), BTreeMap<String, usize>>);

impl Tally {
    /// One place of `topic`/`group` written as `variant`.
    fn add(&mut self, topic: &str, group: &str, variant: &str, n: usize) {
        *self
            .0
            .entry((topic.to_owned(), group.to_owned()))
            .or_default()
            .entry(variant.to_owned())
            .or_insert(0) += n;
    }

    /// The dominant variant of each group, as a convention.
    fn conventions(self, rule: impl Fn(&str, &str, &str) -> String) -> Vec<Convention> {
        let mut out = Vec::new();
        for ((topic, group), variants) in self.0 {
            let of: usize = variants.values().sum();
            let Some((variant, count)) = variants.into_iter().max_by_key(|(_, n)| *n) else {
                continue;
            };
            if of >= MIN_PLACES {
                out.push(Convention {
                    rule: rule(&topic, &group, &variant),
                    topic,
                    count,
                    of,
                });
            }
        }
        out
    }
}

impl Index {
    /// The conventions of the indexed code that hold in at least
    /// `threshold` (0 to 1) of the places they could.
    pub fn conventions(&self, threshold: f64) -> Result<Conventions> {
        let mut tally = Tally::default();
        self.tally_naming(&mut tally)?;
        self.tally_tests(&mut tally)?;
        self.tally_text(&mut tally)?;
        let mut conventions = tally.conventions(|topic, group, variant| match topic {
            "naming" => format!("{group} are {variant}"),
            "indentation" => format!("{group} files indent with {variant}"),
            "quotes" => format!("{group} strings use {variant} quotes"),
            "imports" => format!("{group} imports are written `{variant}`"),
            "errors" => format!("{group} code {variant}"),
            "tests" if group == "live" => format!("tests live {variant}"),
            "tests" => format!("{group} of tests start with `{variant}`"),
            _ => format!("{group}: {variant}"),
        });
        conventions
            .retain(|c| c.coverage() >= threshold && !c.rule.ends_with("start with `other`"));
        conventions.sort_by(|a, b| {
            b.coverage()
                .total_cmp(&a.coverage())
                .then(b.of.cmp(&a.of))
                .then(a.rule.cmp(&b.rule))
        });
        Ok(Conventions {
            threshold,
            conventions,
        })
    }
    /// Naming, per language family and kind.
    fn tally_naming(&self, tally: &mut Tally) -> Result<()> {
        for s in self.symbols(&SymbolFilter::default())? {
            let Some(lang) = Lang::of_path(Path::new(&s.file)) else {
                continue;
            };
            if s.test
                || !matches!(
                    s.kind.as_str(),
                    "function"
                        | "method"
                        | "class"
                        | "struct"
                        | "enum"
                        | "trait"
                        | "interface"
                        | "constant"
                )
            {
                continue;
            }
            if let Some(case) = case_of(&s.name).filter(|c| *c != "mixed") {
                tally.add(
                    "naming",
                    &format!("{} {}", lang.family(), plural(&s.kind)),
                    case,
                    1,
                );
            }
        }
        Ok(())
    }

    /// Tests: where they live, how they are named.
    fn tally_tests(&self, tally: &mut Tally) -> Result<()> {
        let tests = self.symbols(&SymbolFilter {
            tests: true,
            ..SymbolFilter::default()
        })?;
        for t in tests
            .iter()
            .filter(|t| matches!(t.kind.as_str(), "function" | "method" | "test"))
        {
            let place = if t
                .file
                .split('/')
                .any(|d| d == "tests" || d == "test" || d == "__tests__")
            {
                "in a tests/ directory"
            } else {
                "beside the code"
            };
            tally.add("tests", "live", place, 1);
            if let Some(lang) = Lang::of_path(Path::new(&t.file)) {
                let named = if t.name.starts_with("test_") {
                    "test_"
                } else if t.name.starts_with("test") {
                    "test"
                } else {
                    "other"
                };
                tally.add("tests", &format!("{} names", lang.family()), named, 1);
            }
        }
        Ok(())
    }

    /// Text: indentation, quotes, imports, error handling, per file.
    fn tally_text(&self, tally: &mut Tally) -> Result<()> {
        let files: Vec<String> = {
            let mut stmt = self
                .store
                .conn
                .prepare("SELECT path FROM files ORDER BY path")
                .map_err(self.store.db())?;
            let rows = stmt
                .query_map([], |r| r.get::<_, String>(0))
                .map_err(self.store.db())?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
                .map_err(self.store.db())?
        };
        for file in files {
            let Some(lang) = Lang::of_path(Path::new(&file)) else {
                continue;
            };
            let Ok(text) = std::fs::read_to_string(self.root().join(&file)) else {
                continue;
            };
            let family = lang.family();
            if let Some(indent) = indentation(&text) {
                tally.add("indentation", family, &indent, 1);
            }
            read_text(tally, family, &text);
        }
        Ok(())
    }
}

fn plural(kind: &str) -> String {
    match kind {
        "class" => "classes".to_owned(),
        k => format!("{k}s"),
    }
}

/// A file's indentation: `tabs`, or `N spaces` (the most common first
/// indent of a line after one that is not indented).
fn indentation(text: &str) -> Option<String> {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut previous_flat = false;
    for line in text.lines() {
        if line.trim().is_empty() {
            continue;
        }
        let lead: String = line
            .chars()
            .take_while(|c| *c == ' ' || *c == '\t')
            .collect();
        if previous_flat && !lead.is_empty() {
            let kind = if lead.starts_with('\t') {
                "tabs".to_owned()
            } else {
                format!("{} spaces", lead.len())
            };
            *counts.entry(kind).or_insert(0) += 1;
        }
        previous_flat = lead.is_empty();
    }
    counts.into_iter().max_by_key(|(_, n)| *n).map(|(k, _)| k)
}

/// Quotes, imports and error handling, by the lines of a file.
fn read_text(tally: &mut Tally, family: &str, text: &str) {
    for line in text.lines().map(str::trim) {
        if line.starts_with('#') || line.starts_with("//") {
            continue;
        }
        match family {
            "python" => {
                if line.starts_with("from ") && line.contains(" import ") {
                    tally.add("imports", family, "from X import Y", 1);
                } else if line.starts_with("import ") {
                    tally.add("imports", family, "import X", 1);
                }
                if line.starts_with("except:") {
                    tally.add("errors", family, "catches named exceptions", 0);
                    tally.add("errors", family, "catches everything (bare except)", 1);
                } else if line.starts_with("except ") {
                    tally.add("errors", family, "catches named exceptions", 1);
                }
            }
            "js" => {
                if line.starts_with("import ") {
                    tally.add("imports", family, "import X from", 1);
                } else if line.contains("require(") {
                    tally.add("imports", family, "require()", 1);
                }
            }
            "rust" => {
                let asks = line.matches('?').count();
                let unwraps = line.matches(".unwrap()").count() + line.matches(".expect(").count();
                if asks > 0 {
                    tally.add("errors", family, "propagates errors with ?", asks);
                }
                if unwraps > 0 {
                    tally.add("errors", family, "unwraps", unwraps);
                }
            }
            _ => {}
        }
        if matches!(family, "python" | "js") && !line.contains("\"\"\"") && !line.contains("'''") {
            let (single, double) = (
                line.matches('\'').count() / 2,
                line.matches('"').count() / 2,
            );
            if single > 0 {
                tally.add("quotes", family, "single", single);
            }
            if double > 0 {
                tally.add("quotes", family, "double", double);
            }
        }
    }
}
