//! Candidates: a hypothesis and the changes that try it, in the forms
//! branchers produce them (whole files, search/replace, unified diffs),
//! made concrete against a node's files before any fork is spent on them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use forq_sandbox::Sandbox;
use serde::{Deserialize, Serialize};
use sha1::{Digest, Sha1};

/// One change to the workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Change {
    /// The file's whole new contents.
    Write {
        /// Relative path.
        path: String,
        /// Contents.
        content: String,
    },
    /// Remove the file.
    Delete {
        /// Relative path.
        path: String,
    },
    /// Replace the one occurrence of `old` with `new`.
    Replace {
        /// Relative path.
        path: String,
        /// Text that occurs exactly once.
        old: String,
        /// Its replacement.
        new: String,
    },
    /// A unified diff (`--- a/x`, `+++ b/x`, `@@` hunks; several files).
    Patch {
        /// The diff.
        diff: String,
    },
}

/// How many items (lines, bytes) `a` and `b` share at their start, and
/// then at their end (what is between is what changed).
pub(crate) fn common_ends<T: PartialEq>(a: &[T], b: &[T]) -> (usize, usize) {
    let head = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let tail = a[head..]
        .iter()
        .rev()
        .zip(b[head..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    (head, tail)
}

/// A candidate edit: what it supposes, and the changes that try it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    /// The hypothesis, one line (`calc.py:5 '-' -> '+'`).
    pub hypothesis: String,
    /// The changes, applied in order.
    pub changes: Vec<Change>,
    /// The brancher's confidence, higher first (best-first order uses it).
    #[serde(default)]
    pub prior: f64,
}

/// Why a candidate does not apply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct ApplyError {
    /// The file.
    pub path: String,
    /// What went wrong.
    pub message: String,
}

/// A candidate made concrete: every touched file's new contents (`None`:
/// deleted), from which the fork is written and the candidate is hashed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Materialized {
    /// New contents by relative path.
    pub files: BTreeMap<String, Option<String>>,
}

impl Materialized {
    /// A hash of the change, insensitive to trailing whitespace and line
    /// endings: two candidates with the same hash are the same edit.
    pub fn fingerprint(&self) -> String {
        let mut h = Sha1::new();
        for (path, content) in &self.files {
            h.update(path.as_bytes());
            h.update([0]);
            match content {
                None => h.update([1]),
                Some(text) => {
                    for line in text.lines() {
                        h.update(line.trim_end().as_bytes());
                        h.update([b'\n']);
                    }
                }
            }
            h.update([0]);
        }
        h.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Writes the change into `sandbox`.
    pub async fn write(&self, sandbox: &dyn Sandbox) -> Result<(), forq_sandbox::Error> {
        for (path, content) in &self.files {
            match content {
                Some(text) => sandbox.write_file(Path::new(path), text.as_bytes()).await?,
                None => sandbox.remove(Path::new(path)).await?,
            }
        }
        Ok(())
    }
}

/// Relative, no `..`: a candidate never reaches outside the workspace.
fn clean(path: &str) -> Result<String, ApplyError> {
    let trimmed = path.trim().trim_start_matches("./");
    let p = PathBuf::from(trimmed);
    if trimmed.is_empty() || p.is_absolute() || p.components().any(|c| c.as_os_str() == "..") {
        return Err(ApplyError {
            path: path.to_owned(),
            message: "not a relative path inside the workspace".to_owned(),
        });
    }
    Ok(trimmed.to_owned())
}

impl Candidate {
    /// The new contents of every file the candidate touches, reading the
    /// current ones from `sandbox`; the first change that cannot apply is
    /// the error.
    pub async fn materialize(&self, sandbox: &dyn Sandbox) -> Result<Materialized, ApplyError> {
        let mut files: BTreeMap<String, Option<String>> = BTreeMap::new();
        async fn current(
            files: &BTreeMap<String, Option<String>>,
            sandbox: &dyn Sandbox,
            path: &str,
        ) -> Option<String> {
            if let Some(known) = files.get(path) {
                return known.clone();
            }
            let bytes = sandbox.read_file(Path::new(path)).await.ok()?;
            String::from_utf8(bytes).ok()
        }
        for change in &self.changes {
            match change {
                Change::Write { path, content } => {
                    files.insert(clean(path)?, Some(content.clone()));
                }
                Change::Delete { path } => {
                    let path = clean(path)?;
                    if current(&files, sandbox, &path).await.is_none() {
                        return Err(ApplyError {
                            path,
                            message: "cannot delete: no such file".to_owned(),
                        });
                    }
                    files.insert(path, None);
                }
                Change::Replace { path, old, new } => {
                    let path = clean(path)?;
                    let text = current(&files, sandbox, &path)
                        .await
                        .ok_or_else(|| ApplyError {
                            path: path.clone(),
                            message: "no such text file".to_owned(),
                        })?;
                    let replaced = replace_once(&text, old, new).map_err(|message| ApplyError {
                        path: path.clone(),
                        message,
                    })?;
                    files.insert(path, Some(replaced));
                }
                Change::Patch { diff } => {
                    for file in parse_diff(diff).map_err(|message| ApplyError {
                        path: "(diff)".to_owned(),
                        message,
                    })? {
                        let target = clean(file.path())?;
                        let before = if file.old.is_some() {
                            current(&files, sandbox, &target).await
                        } else {
                            None
                        };
                        let after =
                            file.apply(before.as_deref())
                                .map_err(|message| ApplyError {
                                    path: target.clone(),
                                    message,
                                })?;
                        files.insert(target, after);
                    }
                }
            }
        }
        Ok(Materialized { files })
    }
}

/// `text` with the one occurrence of `old` replaced.
fn replace_once(text: &str, old: &str, new: &str) -> Result<String, String> {
    if old.is_empty() {
        return Err("the text to replace is empty".to_owned());
    }
    match text.matches(old).count() {
        1 => Ok(text.replacen(old, new, 1)),
        0 => Err(format!(
            "the text to replace is not in the file: {:?}",
            old.lines().next().unwrap_or("")
        )),
        n => Err(format!("the text to replace occurs {n} times")),
    }
}

/// One file of a unified diff.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileDiff {
    /// `None` for `/dev/null` (a new file).
    old: Option<String>,
    /// `None` for `/dev/null` (a deleted file).
    new: Option<String>,
    hunks: Vec<Hunk>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Hunk {
    /// 1-based start in the old file.
    old_start: usize,
    /// Lines: (' ' | '-' | '+', text without the newline).
    lines: Vec<(char, String)>,
}

impl FileDiff {
    fn path(&self) -> &str {
        self.new.as_deref().or(self.old.as_deref()).unwrap_or("")
    }

    /// The file after the diff; `None` when it deletes the file.
    fn apply(&self, before: Option<&str>) -> Result<Option<String>, String> {
        if self.new.is_none() {
            return Ok(None);
        }
        let before = match (&self.old, before) {
            (None, _) => "",
            (Some(_), Some(text)) => text,
            (Some(_), None) => return Err("no such text file to patch".to_owned()),
        };
        let trailing_newline = before.is_empty() || before.ends_with('\n');
        let mut lines: Vec<String> = before.lines().map(str::to_owned).collect();
        // Hunks apply bottom-up so earlier line numbers stay valid.
        let mut hunks: Vec<&Hunk> = self.hunks.iter().collect();
        hunks.sort_by_key(|h| std::cmp::Reverse(h.old_start));
        for hunk in hunks {
            let old: Vec<&str> = hunk
                .lines
                .iter()
                .filter(|(k, _)| *k != '+')
                .map(|(_, t)| t.as_str())
                .collect();
            let new: Vec<String> = hunk
                .lines
                .iter()
                .filter(|(k, _)| *k != '-')
                .map(|(_, t)| t.clone())
                .collect();
            let at = locate(&lines, &old, hunk.old_start.saturating_sub(1)).ok_or_else(|| {
                format!(
                    "hunk at line {} does not match the file ({:?})",
                    hunk.old_start,
                    old.first().copied().unwrap_or("")
                )
            })?;
            lines.splice(at..at + old.len(), new);
        }
        let mut out = lines.join("\n");
        if trailing_newline && !out.is_empty() {
            out.push('\n');
        }
        Ok(Some(out))
    }
}

/// Where `old` occurs in `lines`, nearest to `hint` (exactly first, then
/// ignoring trailing whitespace).
fn locate(lines: &[String], old: &[&str], hint: usize) -> Option<usize> {
    if old.is_empty() {
        return Some(hint.min(lines.len()));
    }
    if old.len() > lines.len() {
        return None;
    }
    let last = lines.len() - old.len();
    let matches = |at: usize, loose: bool| {
        old.iter().enumerate().all(|(i, o)| {
            let l = &lines[at + i];
            if loose {
                l.trim_end() == o.trim_end()
            } else {
                l == o
            }
        })
    };
    for loose in [false, true] {
        let mut best: Option<usize> = None;
        for at in 0..=last {
            if matches(at, loose) && best.is_none_or(|b| at.abs_diff(hint) < b.abs_diff(hint)) {
                best = Some(at);
            }
        }
        if best.is_some() {
            return best;
        }
    }
    None
}

/// The path in a `---`/`+++` header: `a/x` → `x`, `/dev/null` → `None`.
fn header_path(rest: &str) -> Option<String> {
    let raw = rest.split('\t').next().unwrap_or(rest).trim();
    if raw == "/dev/null" {
        return None;
    }
    let raw = raw
        .strip_prefix("a/")
        .or_else(|| raw.strip_prefix("b/"))
        .unwrap_or(raw);
    Some(raw.to_owned())
}

/// Parses a unified diff (git's or diff -u's) into its files.
fn parse_diff(diff: &str) -> Result<Vec<FileDiff>, String> {
    let mut files: Vec<FileDiff> = Vec::new();
    let mut lines = diff.lines();
    while let Some(line) = lines.next() {
        if let Some(rest) = line.strip_prefix("--- ") {
            let next = lines
                .next()
                .and_then(|l| l.strip_prefix("+++ "))
                .ok_or("a `---` header without its `+++` line")?;
            files.push(FileDiff {
                old: header_path(rest),
                new: header_path(next),
                hunks: Vec::new(),
            });
        } else if let Some(rest) = line.strip_prefix("@@ ") {
            let file = files.last_mut().ok_or("a hunk before any file header")?;
            let bad = || format!("a hunk header forq cannot read: {line}");
            // `-l[,s] +l[,s] @@`: the counts say how many lines follow.
            let mut ranges = rest.split_whitespace();
            let range = |r: Option<&str>, sign: char| -> Option<(usize, usize)> {
                let r = r?.strip_prefix(sign)?;
                let (start, len) = r.split_once(',').unwrap_or((r, "1"));
                Some((start.parse().ok()?, len.parse().ok()?))
            };
            let (old_start, mut old_left) = range(ranges.next(), '-').ok_or_else(bad)?;
            let (_, mut new_left) = range(ranges.next(), '+').ok_or_else(bad)?;
            let mut hunk = Hunk {
                old_start: old_start.max(1),
                lines: Vec::new(),
            };
            while old_left + new_left > 0 {
                let Some(next) = lines.next() else {
                    return Err(format!("the hunk `{line}` ends early"));
                };
                let kind = next.chars().next().unwrap_or(' ');
                let text = next.get(1..).unwrap_or("").to_owned();
                match kind {
                    ' ' if old_left > 0 && new_left > 0 => {
                        old_left -= 1;
                        new_left -= 1;
                    }
                    '-' if old_left > 0 => old_left -= 1,
                    '+' if new_left > 0 => new_left -= 1,
                    '\\' => continue,
                    _ => {
                        return Err(format!(
                            "the hunk `{line}` has a line forq cannot read: {next:?}"
                        ))
                    }
                }
                hunk.lines.push((kind, text));
            }
            file.hunks.push(hunk);
        }
    }
    if files.is_empty() {
        return Err("no file in the diff (expected `--- a/PATH` and `+++ b/PATH`)".to_owned());
    }
    Ok(files)
}

/// Parses search/replace blocks:
///
/// ```text
/// path/to/file.py
/// <<<<<<< SEARCH
/// old lines
/// =======
/// new lines
/// >>>>>>> REPLACE
/// ```
///
/// The path is the last non-empty line before each block.
pub fn parse_search_replace(text: &str) -> Result<Vec<Change>, String> {
    let mut changes = Vec::new();
    let mut path: Option<String> = None;
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.trim_start().starts_with("<<<<<<< SEARCH") {
            let file = path
                .clone()
                .ok_or("a SEARCH block without a file path on the line before it")?;
            let mut old = Vec::new();
            let mut new = Vec::new();
            let mut in_new = false;
            let mut closed = false;
            for l in lines.by_ref() {
                if l.trim_start().starts_with(">>>>>>> REPLACE") {
                    closed = true;
                    break;
                }
                if l.trim() == "=======" && !in_new {
                    in_new = true;
                    continue;
                }
                if in_new {
                    new.push(l);
                } else {
                    old.push(l);
                }
            }
            if !closed || !in_new {
                return Err(format!(
                    "the block for {file} is not closed by ======= and >>>>>>> REPLACE"
                ));
            }
            let join = |v: Vec<&str>| {
                if v.is_empty() {
                    String::new()
                } else {
                    format!("{}\n", v.join("\n"))
                }
            };
            changes.push(Change::Replace {
                path: file,
                old: join(old),
                new: join(new),
            });
        } else if !line.trim().is_empty() {
            path = Some(line.trim().trim_matches('`').to_owned());
        }
    }
    if changes.is_empty() {
        return Err("no SEARCH/REPLACE block".to_owned());
    }
    Ok(changes)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "a\nb\nc\nd\ne\n";

    #[test]
    fn a_git_diff_applies_even_when_lines_moved() {
        let diff =
            "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -3,2 +3,2 @@\n c\n-d\n+D\n";
        let files = parse_diff(diff).unwrap();
        assert_eq!(
            files[0].apply(Some(FILE)).unwrap().unwrap(),
            "a\nb\nc\nD\ne\n"
        );
        // Two lines added at the top: the hunk is found nearby.
        let moved = format!("0\n0\n{FILE}");
        assert_eq!(
            files[0].apply(Some(&moved)).unwrap().unwrap(),
            "0\n0\na\nb\nc\nD\ne\n"
        );
        assert!(files[0].apply(Some("x\ny\n")).is_err());
    }

    #[test]
    fn new_and_deleted_files_and_several_files() {
        let diff = "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-gone\n";
        let files = parse_diff(diff).unwrap();
        assert_eq!(files.len(), 2);
        assert_eq!(files[0].apply(None).unwrap().unwrap(), "one\ntwo\n");
        assert_eq!(files[1].apply(Some("gone\n")).unwrap(), None);
    }

    #[test]
    fn search_replace_blocks() {
        let text = "calc.py\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n>>>>>>> REPLACE\n";
        assert_eq!(
            parse_search_replace(text).unwrap(),
            [Change::Replace {
                path: "calc.py".into(),
                old: "    return a - b\n".into(),
                new: "    return a + b\n".into()
            }]
        );
        assert!(parse_search_replace("calc.py\n<<<<<<< SEARCH\nx\n").is_err());
    }

    #[test]
    fn fingerprints_ignore_trailing_whitespace_only() {
        let m = |s: &str| Materialized {
            files: [("f".to_owned(), Some(s.to_owned()))].into(),
        };
        assert_eq!(m("x = 1  \r\n").fingerprint(), m("x = 1\n").fingerprint());
        assert_ne!(m("x = 1\n").fingerprint(), m("x = 2\n").fingerprint());
    }

    #[test]
    fn paths_stay_inside() {
        assert!(clean("../etc/passwd").is_err());
        assert!(clean("/etc/passwd").is_err());
        assert_eq!(clean("./src/a.py").unwrap(), "src/a.py");
    }
}
