//! The contract check: what a green patch changed, definition by definition,
//! whether each change keeps its contract with its callers (A preserved,
//! B upward-compatible, C incompatible), and which callers a breaking
//! change reaches through the code graph. Tests passing say nothing of
//! callers they do not cover; this does.
//!
//! Without a model, a removed definition or a changed signature is C and a
//! body-only change is *unclassified* — never silently A. With a model,
//! forq-agent's `ContractCheck` classifies (equal sources are A without a
//! call). A C change's callers are walked breadth first to a depth
//! (default 3, at most 5); each becomes a finding for a person (or an
//! agent) to look at, and callers beyond the depth are listed as not
//! processed.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::git::{self, GitError};

/// The run checkpoint holding the contract check of its patch.
pub const CONTRACT: &str = "contract";
/// The run checkpoint holding the check after the ripple's callers were
/// adapted.
pub const ADAPTED: &str = "adapted";

/// The deepest ripple asked for.
pub const MAX_DEPTH: u32 = 5;

/// A definition's contract class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// The contract is preserved.
    A,
    /// Upward-compatible: every old caller still works.
    B,
    /// Incompatible: some caller may break.
    C,
    /// The body changed and there was no model to judge it.
    Unclassified,
}

/// How a definition changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// Its body changed, its first line did not.
    Body,
    /// Its signature (first line) changed.
    Signature,
    /// It is gone.
    Removed,
}

/// A definition the patch changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Changed {
    /// Its id in the code graph (of the patched tree; of the base when
    /// removed).
    pub id: String,
    /// Its qualified name.
    pub qualname: String,
    /// `function`, `method`, `class`, …
    pub kind: String,
    /// Its file.
    pub file: String,
    /// Its first line in the patched tree (the base's when removed).
    pub line: u32,
    /// How it changed.
    pub change: Change,
    /// Its class.
    pub class: Class,
    /// Why.
    pub reason: String,
    /// The signature before and after.
    pub signature: (String, String),
}

/// A caller a C change reaches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// The changed definition's id.
    pub changed: String,
    /// The caller's id.
    pub caller: String,
    /// Where it calls.
    pub file: String,
    /// The line of the call.
    pub line: u32,
    /// 1 for a direct caller, 2 for its callers, …
    pub depth: u32,
}

/// What the check found.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The changed definitions, by file and line.
    pub changed: Vec<Changed>,
    /// The callers of C changes, nearest first.
    pub findings: Vec<Finding>,
    /// The depth the ripple went to.
    pub depth: u32,
    /// Callers left beyond the depth (or cut by the graph's caps): not
    /// processed.
    pub unprocessed: Vec<String>,
    /// Whether the graph cut some caller list short.
    pub truncated: bool,
    /// Callers the agent adapted with the tests green (moved here from
    /// `findings`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub adapted: Vec<Finding>,
}

impl Report {
    /// Whether anything needs a person: a caller of an incompatible
    /// change, or one left unprocessed.
    pub fn has_findings(&self) -> bool {
        !self.findings.is_empty() || !self.unprocessed.is_empty() || self.truncated
    }

    /// A line for a run's reason and a pull request's body.
    pub fn summary(&self) -> String {
        let count = |c: Class| self.changed.iter().filter(|d| d.class == c).count();
        let mut s = format!(
            "{} definition{} changed (A {}, B {}, C {}, unclassified {})",
            self.changed.len(),
            if self.changed.len() == 1 { "" } else { "s" },
            count(Class::A),
            count(Class::B),
            count(Class::C),
            count(Class::Unclassified)
        );
        if !self.adapted.is_empty() {
            s.push_str(&format!(
                "; {} caller{} adapted",
                self.adapted.len(),
                if self.adapted.len() == 1 { "" } else { "s" }
            ));
        }
        if !self.findings.is_empty() {
            s.push_str(&format!(
                "; {} caller{} of incompatible changes to look at",
                self.findings.len(),
                if self.findings.len() == 1 { "" } else { "s" }
            ));
        }
        if !self.unprocessed.is_empty() || self.truncated {
            s.push_str(&format!(
                "; {} beyond depth {} not processed",
                self.unprocessed.len(),
                self.depth
            ));
        }
        s
    }

    /// The report as Markdown, for a pull request's body.
    pub fn markdown(&self) -> String {
        // Names and paths are the repository's and the reasons a model's:
        // each goes out as a code span or plain words, never as Markdown.
        use crate::markdown::{code, plain};
        let mut out = format!("**Contract check.** {}.\n", self.summary());
        for c in &self.changed {
            out.push_str(&format!(
                "\n- {} ({}, {}:{}): {} — {}",
                code(&c.qualname),
                plain(&c.kind, 40),
                code(&c.file),
                c.line,
                match c.class {
                    Class::A => "A",
                    Class::B => "B",
                    Class::C => "C",
                    Class::Unclassified => "unclassified",
                },
                plain(&c.reason, 500)
            ));
        }
        if !self.adapted.is_empty() {
            out.push_str("\n\nCallers adapted (tests green):\n");
            for f in &self.adapted {
                out.push_str(&format!(
                    "\n- {} at {}:{}",
                    code(&f.caller),
                    code(&f.file),
                    f.line
                ));
            }
        }
        if !self.findings.is_empty() {
            out.push_str("\n\nCallers to check:\n");
            for f in &self.findings {
                out.push_str(&format!(
                    "\n- {} at {}:{} (depth {})",
                    code(&f.caller),
                    code(&f.file),
                    f.line,
                    f.depth
                ));
            }
        }
        if !self.unprocessed.is_empty() {
            out.push_str(&format!(
                "\n\nNot processed (beyond depth {}): {}",
                self.depth,
                self.unprocessed
                    .iter()
                    .map(|u| code(u))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        out
    }
}

impl Report {
    /// Moves the findings whose call line a hunk of `patch` (a unified
    /// diff against the tree the findings were read from) covers, context
    /// included, from `findings` to `adapted`.
    pub fn take_adapted(&mut self, patch: &str) {
        let hunks = old_ranges(patch);
        let (touched, left): (Vec<Finding>, Vec<Finding>) =
            self.findings.drain(..).partition(|f| {
                hunks
                    .iter()
                    .any(|(file, from, to)| *file == f.file && (*from..=*to).contains(&f.line))
            });
        self.findings = left;
        self.adapted.extend(touched);
    }
}

/// Each hunk's file and line range on the old side of `patch`.
fn old_ranges(patch: &str) -> Vec<(String, u32, u32)> {
    let mut out = Vec::new();
    let mut file = String::new();
    for line in patch.lines() {
        if let Some(path) = line.strip_prefix("--- a/") {
            file = path.to_owned();
        } else if let Some(rest) = line.strip_prefix("@@ -") {
            let old = rest.split_whitespace().next().unwrap_or("");
            let (start, count) = match old.split_once(',') {
                Some((s, c)) => (s.parse().unwrap_or(0), c.parse().unwrap_or(0)),
                None => (old.parse().unwrap_or(0), 1),
            };
            let start: u32 = start;
            let count: u32 = count;
            out.push((file.clone(), start, start + count.saturating_sub(1)));
        }
    }
    out
}

/// What the agent is asked when it adapts a ripple's callers.
pub fn adapt_task(report: &Report) -> String {
    let mut s = String::from(
        "A fix on this branch changed definitions incompatibly (their callers may rely on the old \
         contract). Adapt the callers listed below so they work with the new contract. Do not change \
         the changed definitions themselves, and do not change any test; run the tests, then submit.\n",
    );
    for c in report.changed.iter().filter(|c| c.class == Class::C) {
        s.push_str(&format!(
            "\nChanged: `{}` ({}:{}): {} — before `{}`, now `{}`",
            c.qualname, c.file, c.line, c.reason, c.signature.0, c.signature.1
        ));
    }
    s.push_str("\n\nCallers:");
    for f in &report.findings {
        s.push_str(&format!(
            "\n- `{}` calls `{}` at {}:{}",
            f.caller, f.changed, f.file, f.line
        ));
    }
    s
}

/// Why the check could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SafetyError {
    /// git failed.
    #[error(transparent)]
    Git(#[from] GitError),
    /// The code graph failed.
    #[error("the code graph: {0}")]
    Graph(#[from] forq_graph::Error),
    /// A file could not be written or read.
    #[error("{what} {path}: {source}")]
    Io {
        /// What was done.
        what: &'static str,
        /// Where.
        path: String,
        /// Why it failed.
        #[source]
        source: std::io::Error,
    },
}

/// Classifies a changed definition: the model's judgement, when there is
/// one.
#[async_trait::async_trait]
pub trait Classifier: Send + Sync {
    /// The class of the change from `old` to `new`, and why.
    async fn classify(&self, old: &str, new: &str, context: &str) -> Option<(Class, String)>;
}

#[async_trait::async_trait]
impl Classifier for forq_agent::contract::ContractCheck {
    async fn classify(&self, old: &str, new: &str, context: &str) -> Option<(Class, String)> {
        let c = forq_agent::contract::ContractCheck::classify(self, old, new, context)
            .await
            .ok()?;
        let class = match c.class {
            forq_agent::contract::Class::A => Class::A,
            forq_agent::contract::Class::B => Class::B,
            forq_agent::contract::Class::C => Class::C,
        };
        Some((class, c.reason))
    }
}

/// Checks the workspace `workspace` (a git work tree, the patch committed)
/// against the commit `base`: the definitions in the files that differ,
/// their classes, and the ripple of the C ones to `depth` (at most
/// [`MAX_DEPTH`]). The code graphs live under `scratch`.
pub async fn check(
    workspace: &Path,
    base: &str,
    scratch: &Path,
    depth: u32,
    classifier: Option<&dyn Classifier>,
) -> Result<Report, SafetyError> {
    let depth = depth.clamp(1, MAX_DEPTH);
    let listed = git::git(workspace, &["diff", "--name-only", base, "HEAD"]).await?;
    let files: Vec<String> = listed
        .lines()
        .filter(|f| forq_graph::Lang::of_path(Path::new(f)).is_some())
        .map(str::to_owned)
        .collect();
    let mut report = Report {
        depth,
        ..Report::default()
    };
    if files.is_empty() {
        return Ok(report);
    }
    // The base's versions of the changed files, in a tree of their own.
    let old_root = scratch.join("base");
    let old_text = base_tree(workspace, base, &files, &old_root).await?;
    let mut old_index = forq_graph::Index::open(&scratch.join("base.db"), &old_root)?;
    old_index.update()?;
    let mut new_index = forq_graph::Index::open(&scratch.join("patched.db"), workspace)?;
    new_index.update()?;
    let mut changed = Vec::new();
    for f in &files {
        let old_file = old_text.get(f).cloned().unwrap_or_default();
        changed.extend(changed_in(f, &old_file, &old_index, workspace, &new_index)?);
    }
    // A container whose change is a changed member's is not listed twice.
    let parents: BTreeSet<String> = changed
        .iter()
        .filter_map(|d| d.new.parent.clone())
        .collect();
    changed.retain(|d| !parents.contains(&d.new.id));
    for diffed in changed {
        let context = match classifier {
            Some(_) => diffed.callers(&new_index),
            None => String::new(),
        };
        let changed = diffed.classified(&context, classifier).await;
        let (class, change, id) = (changed.class, changed.change, changed.id.clone());
        report.changed.push(changed);
        if class == Class::C && change != Change::Removed {
            ripple(&new_index, &id, depth, &mut report)?;
        }
    }
    Ok(report)
}

/// Writes the base's versions of `files` under `old_root` (afresh);
/// their texts, by path (a file the patch added has none).
async fn base_tree(
    workspace: &Path,
    base: &str,
    files: &[String],
    old_root: &Path,
) -> Result<BTreeMap<String, String>, SafetyError> {
    let io = |what: &'static str, path: &Path| {
        let path = path.display().to_string();
        move |source| SafetyError::Io { what, path, source }
    };
    let _ = std::fs::remove_dir_all(old_root);
    let mut old_text = BTreeMap::new();
    for f in files {
        let Ok(text) = git::show(workspace, base, f).await else {
            continue; // added by the patch
        };
        let path = old_root.join(f);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io("create", dir))?;
        }
        std::fs::write(&path, &text).map_err(io("write", &path))?;
        old_text.insert(f.clone(), text);
    }
    std::fs::create_dir_all(old_root).map_err(io("create", old_root))?;
    Ok(old_text)
}

/// One definition the patch changed or removed, with both sources.
struct Diffed {
    old: forq_graph::Symbol,
    new: forq_graph::Symbol,
    change: Change,
    old_src: String,
    new_src: String,
}

/// The definitions of file `f` whose source differs between the base
/// (`old_file`, indexed in `old_index`) and the workspace.
fn changed_in(
    f: &str,
    old_file: &str,
    old_index: &forq_graph::Index,
    workspace: &Path,
    new_index: &forq_graph::Index,
) -> Result<Vec<Diffed>, SafetyError> {
    let filter = |file: &str| {
        let mut s = forq_graph::SymbolFilter::default();
        s.file = Some(file.to_owned());
        s
    };
    let old_syms = old_index.symbols(&filter(f))?;
    let new_syms = new_index.symbols(&filter(f))?;
    let new_text = std::fs::read_to_string(workspace.join(f)).unwrap_or_default();
    let key = |s: &forq_graph::Symbol| (s.qualname.clone(), s.kind.clone());
    let news: BTreeMap<_, _> = new_syms.iter().map(|s| (key(s), s)).collect();
    let mut changed = Vec::new();
    for old in &old_syms {
        let old_src = lines(old_file, old.line, old.end_line);
        let Some(new) = news.get(&key(old)) else {
            changed.push(Diffed {
                old: old.clone(),
                new: old.clone(),
                change: Change::Removed,
                old_src,
                new_src: String::new(),
            });
            continue;
        };
        let new_src = lines(&new_text, new.line, new.end_line);
        if old_src.trim() == new_src.trim() {
            continue;
        }
        let change = if old.signature == new.signature {
            Change::Body
        } else {
            Change::Signature
        };
        changed.push(Diffed {
            old: old.clone(),
            new: (*new).clone(),
            change,
            old_src,
            new_src,
        });
    }
    Ok(changed)
}

impl Diffed {
    /// Its class: the model's (shown the callers) when there is one, else
    /// what the change itself says (removed or a new signature: C; a body:
    /// unclassified).
    /// The first callers of the changed definition, a line each: what a
    /// model is shown beside the two versions.
    fn callers(&self, index: &forq_graph::Index) -> String {
        if self.change == Change::Removed {
            return String::new();
        }
        index
            .callers(&self.new.id, 1)
            .map(|c| {
                c.items
                    .iter()
                    .take(20)
                    .map(|e| format!("{} calls it at {}:{}", e.caller, e.file, e.line))
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default()
    }

    async fn classified(self, context: &str, classifier: Option<&dyn Classifier>) -> Changed {
        let Diffed {
            old,
            new,
            change,
            old_src,
            new_src,
        } = self;
        let judged = match (change, classifier) {
            (Change::Removed, _) | (_, None) => None,
            (_, Some(model)) => model.classify(&old_src, &new_src, context).await,
        };
        let (class, reason) = judged.unwrap_or_else(|| match change {
            Change::Removed => (Class::C, "removed".to_owned()),
            Change::Signature => (
                Class::C,
                format!(
                    "the signature changed: `{}` → `{}`",
                    old.signature, new.signature
                ),
            ),
            Change::Body => (
                Class::Unclassified,
                "the body changed; without a model forq cannot tell whether callers notice"
                    .to_owned(),
            ),
        });
        Changed {
            id: new.id.clone(),
            qualname: new.qualname.clone(),
            kind: new.kind.clone(),
            file: new.file.clone(),
            line: new.line,
            change,
            class,
            reason,
            signature: (old.signature, new.signature),
        }
    }
}

/// The callers of `id`, breadth first to `depth`, as findings; callers of
/// the deepest ones are listed as unprocessed.
fn ripple(
    index: &forq_graph::Index,
    id: &str,
    depth: u32,
    report: &mut Report,
) -> Result<(), SafetyError> {
    let mut seen = BTreeSet::from([id.to_owned()]);
    let mut queue = VecDeque::from([(id.to_owned(), 0u32)]);
    while let Some((at, d)) = queue.pop_front() {
        let callers = index.callers(&at, 1)?;
        report.truncated |= callers.truncated;
        for edge in callers.items {
            if !seen.insert(edge.caller.clone()) {
                continue;
            }
            // A test that calls it ran green against the change: the
            // suite already holds it to the new contract.
            if index.symbol(&edge.caller)?.is_some_and(|s| s.test) {
                continue;
            }
            if d + 1 > depth {
                report.unprocessed.push(edge.caller);
                continue;
            }
            report.findings.push(Finding {
                changed: id.to_owned(),
                caller: edge.caller.clone(),
                file: edge.file,
                line: edge.line,
                depth: d + 1,
            });
            // Top-level code (a file, not a definition) has no callers.
            if edge.caller.contains('#') {
                queue.push_back((edge.caller, d + 1));
            }
        }
    }
    Ok(())
}

/// Lines `from..=to` (1-based) of `text`.
fn lines(text: &str, from: u32, to: u32) -> String {
    text.lines()
        .skip(from.saturating_sub(1) as usize)
        .take((to + 1).saturating_sub(from) as usize)
        .collect::<Vec<_>>()
        .join("\n")
}
