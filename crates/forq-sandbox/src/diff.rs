//! The diff of a sandbox against its base: per-file changes and a unified
//! patch that `git apply` takes.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::beneath::{Node, Tree};
use crate::error::{Error, Result};
use crate::paths::display_rel;

/// How one file changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// It did not exist in the base.
    Added,
    /// Its content or mode changed.
    Modified,
    /// It no longer exists.
    Deleted,
}

/// One changed file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct FileChange {
    /// Path relative to the workspace root, `/`-separated.
    pub path: String,
    /// What happened to it.
    pub kind: ChangeKind,
    /// Either side is binary; the patch notes it without content.
    pub binary: bool,
    /// Lines added (0 for binary files).
    pub added_lines: usize,
    /// Lines removed (0 for binary files).
    pub removed_lines: usize,
}

/// Every change a sandbox made to its base.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Diff {
    /// Changed files, sorted by path.
    pub files: Vec<FileChange>,
    /// The unified diff in git's format.
    pub patch: String,
}

impl Diff {
    /// The diff of files given by their contents: each change is a path
    /// (relative, `/`-separated), its content in the base (`None`: it did
    /// not exist) and now (`None`: deleted), as regular files. Unchanged
    /// files and paths under `.git` or `.forq` are left out; the rest is
    /// sorted by path. For a backend that keeps files outside a directory
    /// tree (in memory, remotely).
    ///
    /// ```
    /// use forq_sandbox::{ChangeKind, Diff};
    ///
    /// let diff = Diff::from_contents([
    ///     ("calc.py", Some(&b"def add(a, b):\n    return a - b\n"[..]), Some(&b"def add(a, b):\n    return a + b\n"[..])),
    ///     ("same.txt", Some(&b"x\n"[..]), Some(&b"x\n"[..])),
    /// ]);
    /// assert_eq!(diff.files.len(), 1);
    /// assert_eq!(diff.files[0].kind, ChangeKind::Modified);
    /// assert_eq!(diff.changed_lines(), 2);
    /// assert!(diff.patch.contains("+    return a + b"));
    /// ```
    pub fn from_contents<'a, P: AsRef<str>>(
        changes: impl IntoIterator<Item = (P, Option<&'a [u8]>, Option<&'a [u8]>)>,
    ) -> Diff {
        type Change<'b> = (String, Option<&'b [u8]>, Option<&'b [u8]>);
        let mut changes: Vec<Change<'a>> = changes
            .into_iter()
            .map(|(p, old, new)| (p.as_ref().to_owned(), old, new))
            .filter(|(p, _, _)| !excluded(Path::new(p)))
            .collect();
        changes.sort_by(|a, b| a.0.cmp(&b.0));
        let side = |bytes: Option<&[u8]>| {
            bytes.map(|b| Side {
                content: b.to_vec(),
                mode: 0o100644,
            })
        };
        let mut diff = Diff::default();
        for (path, old, new) in changes {
            let kind = match (old, new) {
                (None, None) => continue,
                (Some(a), Some(b)) if a == b => continue,
                (None, Some(_)) => ChangeKind::Added,
                (Some(_), None) => ChangeKind::Deleted,
                (Some(_), Some(_)) => ChangeKind::Modified,
            };
            let change = render(&mut diff.patch, &path, kind, side(old), side(new));
            diff.files.push(change);
        }
        diff
    }

    /// No file changed.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Added plus removed lines over all files.
    pub fn changed_lines(&self) -> usize {
        self.files
            .iter()
            .map(|f| f.added_lines + f.removed_lines)
            .sum()
    }
}

/// Paths under these top-level names never appear in a diff: version-control
/// metadata is the repository's, and `.forq` (its code graph, its runs'
/// records) is forq's own state in it — neither is the patch's.
const EXCLUDED: &[&str] = &[".git", ".forq"];

pub(crate) fn excluded(rel: &Path) -> bool {
    rel.components()
        .next()
        .is_some_and(|c| EXCLUDED.iter().any(|e| c.as_os_str() == *e))
}

/// Patterns for files a patch leaves out when the base does not have them:
/// caches that test runs leave behind, whatever the repository says.
const BUILTIN_UNTRACKED: &[&str] = &[
    "__pycache__/",
    "*.pyc",
    ".pytest_cache/",
    ".mypy_cache/",
    ".ruff_cache/",
];

/// Which new files a patch leaves out: those the repository's ignore rules
/// (`.gitignore` files at any depth, `.git/info/exclude`) or the built-in
/// cache patterns match. As in git, the rules apply only to files the base
/// does not have; a change to a file the base has is always in the diff.
///
/// A directory's `.gitignore` is read the first time a path below it is
/// asked about, so a diff of a few files never walks the whole base.
#[derive(Debug)]
pub(crate) struct Untracked {
    base: PathBuf,
    /// Built-in patterns, then `.git/info/exclude`.
    fixed: Vec<ignore::gitignore::Gitignore>,
    /// Each directory's own `.gitignore` (relative path → matcher, `None`
    /// when it has none).
    dirs: std::sync::Mutex<
        std::collections::HashMap<PathBuf, Option<Arc<ignore::gitignore::Gitignore>>>,
    >,
}

impl Untracked {
    /// The ignore rules of `base`.
    pub(crate) fn load(base: &Path) -> Self {
        let mut builtin = ignore::gitignore::GitignoreBuilder::new(base);
        for pattern in BUILTIN_UNTRACKED {
            builtin
                .add_line(None, pattern)
                .expect("built-in patterns are valid");
        }
        let mut exclude = ignore::gitignore::GitignoreBuilder::new(base);
        // A broken or missing file is skipped, as git does.
        let _ = exclude.add(base.join(".git/info/exclude"));
        let fixed = [builtin.build(), exclude.build()]
            .into_iter()
            .flatten()
            .collect();
        Untracked {
            base: base.to_path_buf(),
            fixed,
            dirs: Default::default(),
        }
    }

    fn dir_matcher(&self, dir: &Path) -> Option<Arc<ignore::gitignore::Gitignore>> {
        let mut dirs = self.dirs.lock().expect("no panic while holding the lock");
        dirs.entry(dir.to_path_buf())
            .or_insert_with(|| {
                let file = self.base.join(dir).join(".gitignore");
                if !file.is_file() {
                    return None;
                }
                let mut b = ignore::gitignore::GitignoreBuilder::new(self.base.join(dir));
                let _ = b.add(&file);
                b.build().ok().map(Arc::new)
            })
            .clone()
    }

    /// Whether a new file at `rel` stays out of the patch: the deepest rule
    /// with an opinion wins, as in git.
    pub(crate) fn ignored(&self, rel: &Path) -> bool {
        let mut verdict = false;
        let mut apply = |m: &ignore::gitignore::Gitignore, inner: &Path| match m
            .matched_path_or_any_parents(inner, false)
        {
            ignore::Match::Ignore(_) => verdict = true,
            ignore::Match::Whitelist(_) => verdict = false,
            ignore::Match::None => {}
        };
        for m in &self.fixed {
            apply(m, rel);
        }
        let mut dir = PathBuf::new();
        let mut components = rel.components().peekable();
        while let Some(c) = components.next() {
            if let Some(m) = self.dir_matcher(&dir) {
                apply(&m, rel.strip_prefix(&dir).expect("dir is an ancestor"));
            }
            if components.peek().is_none() {
                break;
            }
            dir.push(c);
        }
        verdict
    }
}

/// Every non-directory path under `root`, relative to it; links are
/// listed, never entered (the tree is one its occupants control).
pub(crate) fn walk_files(root: &Path) -> Result<BTreeSet<PathBuf>> {
    let Some(tree) = open_tree(root)? else {
        return Ok(BTreeSet::new());
    };
    tree.walk_files(Path::new(""), &|p| excluded(p))
        .map_err(|e| Error::io("walk", root, e))
}

/// `root` opened for reads beneath it; `None` when it does not exist.
pub(crate) fn open_tree(root: &Path) -> Result<Option<Tree>> {
    Tree::open(root).map_err(|e| Error::io("open", root, e))
}

/// A file as the diff sees it.
struct Side {
    content: Vec<u8>,
    mode: u32,
}

/// `rel` in `tree` as the diff sees it, resolved beneath the tree without
/// following any link: a link is a change of its own (mode 120000, its
/// target as content), never a way to another file.
fn read_side(tree: Option<&Tree>, rel: &Path) -> Result<Option<Side>> {
    let Some(tree) = tree else {
        return Ok(None);
    };
    let fail = |e| Error::io("read", tree.path().join(rel), e);
    Ok(match tree.node(rel).map_err(fail)? {
        None | Some(Node::Dir | Node::Other) => None,
        Some(Node::Link { target }) => Some(Side {
            content: target,
            mode: 0o120000,
        }),
        Some(Node::File { mode }) => tree.read(rel).map_err(fail)?.map(|content| Side {
            content,
            mode: if mode & 0o111 != 0 {
                0o100755
            } else {
                0o100644
            },
        }),
    })
}

fn is_binary(bytes: &[u8]) -> bool {
    bytes.iter().take(8000).any(|&b| b == 0) || std::str::from_utf8(bytes).is_err()
}

/// Compares two whole trees: every file of either side is a candidate.
pub(crate) fn diff_trees(
    base: &Path,
    current: &Path,
    untracked: &std::sync::OnceLock<Untracked>,
) -> Result<Diff> {
    let untracked = untracked.get_or_init(|| Untracked::load(base));
    let mut all = walk_files(base)?;
    all.extend(walk_files(current)?);
    diff_paths(base, current, all, untracked)
}

/// Compares `candidates` (relative paths) between the `base` and `current`
/// directories and renders the changes.
pub(crate) fn diff_paths(
    base: &Path,
    current: &Path,
    candidates: impl IntoIterator<Item = PathBuf>,
    untracked: &Untracked,
) -> Result<Diff> {
    let mut diff = Diff::default();
    let candidates: BTreeSet<PathBuf> = candidates.into_iter().filter(|p| !excluded(p)).collect();
    let (base, current) = (open_tree(base)?, open_tree(current)?);
    for rel in candidates {
        let old = read_side(base.as_ref(), &rel)?;
        if old.is_none() && untracked.ignored(&rel) {
            continue;
        }
        let new = read_side(current.as_ref(), &rel)?;
        let name = display_rel(&rel);
        let kind = match (&old, &new) {
            (None, None) => continue,
            (Some(a), Some(b)) if a.content == b.content && a.mode == b.mode => continue,
            (None, Some(_)) => ChangeKind::Added,
            (Some(_), None) => ChangeKind::Deleted,
            (Some(_), Some(_)) => ChangeKind::Modified,
        };
        diff.files
            .push(render(&mut diff.patch, &name, kind, old, new));
    }
    Ok(diff)
}

fn render(
    patch: &mut String,
    name: &str,
    kind: ChangeKind,
    old: Option<Side>,
    new: Option<Side>,
) -> FileChange {
    use std::fmt::Write as _;
    let empty: &[u8] = &[];
    let old_bytes = old.as_ref().map_or(empty, |s| &s.content[..]);
    let new_bytes = new.as_ref().map_or(empty, |s| &s.content[..]);
    let binary = is_binary(old_bytes) || is_binary(new_bytes);
    let _ = writeln!(patch, "diff --git a/{name} b/{name}");
    match (&old, &new) {
        (None, Some(n)) => {
            let _ = writeln!(patch, "new file mode {:o}", n.mode);
        }
        (Some(o), None) => {
            let _ = writeln!(patch, "deleted file mode {:o}", o.mode);
        }
        (Some(o), Some(n)) if o.mode != n.mode => {
            let _ = writeln!(patch, "old mode {:o}\nnew mode {:o}", o.mode, n.mode);
        }
        _ => {}
    }
    let a = if old.is_some() {
        format!("a/{name}")
    } else {
        "/dev/null".to_owned()
    };
    let b = if new.is_some() {
        format!("b/{name}")
    } else {
        "/dev/null".to_owned()
    };
    let mut change = FileChange {
        path: name.to_owned(),
        kind,
        binary,
        added_lines: 0,
        removed_lines: 0,
    };
    if binary {
        if old_bytes != new_bytes {
            let _ = writeln!(patch, "Binary files {a} and {b} differ");
        }
        return change;
    }
    let old_text = std::str::from_utf8(old_bytes).expect("checked not binary");
    let new_text = std::str::from_utf8(new_bytes).expect("checked not binary");
    let text_diff = similar::TextDiff::from_lines(old_text, new_text);
    for op in text_diff.ops() {
        for c in text_diff.iter_changes(op) {
            match c.tag() {
                similar::ChangeTag::Insert => change.added_lines += 1,
                similar::ChangeTag::Delete => change.removed_lines += 1,
                similar::ChangeTag::Equal => {}
            }
        }
    }
    let _ = write!(
        patch,
        "{}",
        text_diff.unified_diff().context_radius(3).header(&a, &b)
    );
    change
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_files_matching_ignore_rules_stay_out() {
        let dir = tempfile::tempdir().unwrap();
        let (base, cur) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::create_dir_all(base.join("sub")).unwrap();
        std::fs::write(base.join(".gitignore"), "*.log\nbuild/\n").unwrap();
        std::fs::write(base.join("sub/.gitignore"), "*.tmp\n!keep.log\n").unwrap();
        std::fs::write(base.join("tracked.log"), "old\n").unwrap();
        let u = Untracked::load(&base);
        let check = |p: &str, ignored: bool| assert_eq!(u.ignored(Path::new(p)), ignored, "{p}");
        check("x.log", true);
        check("build/out/x.o", true);
        check("sub/a.tmp", true);
        check("a.tmp", false);
        check("sub/keep.log", false);
        check("pkg/__pycache__/m.cpython-311.pyc", true);
        check("src/main.py", false);
        // A file the base has is diffed even when a rule matches it.
        copy_dir(&base, &cur);
        std::fs::write(cur.join("tracked.log"), "new\n").unwrap();
        std::fs::write(cur.join("fresh.log"), "x\n").unwrap();
        let mut all = walk_files(&base).unwrap();
        all.extend(walk_files(&cur).unwrap());
        let d = diff_paths(&base, &cur, all, &u).unwrap();
        let paths: Vec<_> = d.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["tracked.log"]);
    }

    fn copy_dir(from: &Path, to: &Path) {
        for entry in walkdir::WalkDir::new(from) {
            let entry = entry.unwrap();
            let target = to.join(entry.path().strip_prefix(from).unwrap());
            if entry.file_type().is_dir() {
                std::fs::create_dir_all(&target).unwrap();
            } else {
                std::fs::copy(entry.path(), &target).unwrap();
            }
        }
    }

    #[test]
    fn diff_reports_added_modified_deleted_and_binary() {
        let dir = tempfile::tempdir().unwrap();
        let (base, cur) = (dir.path().join("a"), dir.path().join("b"));
        for d in [&base, &cur] {
            std::fs::create_dir_all(d.join(".git")).unwrap();
            std::fs::write(d.join("same.txt"), "x\n").unwrap();
        }
        std::fs::write(base.join("mod.txt"), "one\ntwo\nthree\n").unwrap();
        std::fs::write(cur.join("mod.txt"), "one\nTWO\nthree\n").unwrap();
        std::fs::write(base.join("gone.txt"), "bye\n").unwrap();
        std::fs::write(cur.join("new.txt"), "hi\n").unwrap();
        std::fs::write(cur.join("blob.bin"), [0u8, 1, 2]).unwrap();
        std::fs::write(cur.join(".git/HEAD"), "ref\n").unwrap();
        let mut all = walk_files(&base).unwrap();
        all.extend(walk_files(&cur).unwrap());
        let d = diff_paths(&base, &cur, all, &Untracked::load(&base)).unwrap();
        let summary: Vec<_> = d
            .files
            .iter()
            .map(|f| {
                (
                    f.path.as_str(),
                    f.kind,
                    f.binary,
                    f.added_lines,
                    f.removed_lines,
                )
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                ("blob.bin", ChangeKind::Added, true, 0, 0),
                ("gone.txt", ChangeKind::Deleted, false, 0, 1),
                ("mod.txt", ChangeKind::Modified, false, 1, 1),
                ("new.txt", ChangeKind::Added, false, 1, 0),
            ]
        );
        assert!(
            d.patch.contains(
                "--- a/mod.txt\n+++ b/mod.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n"
            ),
            "{}",
            d.patch
        );
        assert!(
            d.patch.contains("--- /dev/null\n+++ b/new.txt\n"),
            "{}",
            d.patch
        );
        assert!(
            d.patch
                .contains("Binary files /dev/null and b/blob.bin differ"),
            "{}",
            d.patch
        );
        assert!(!d.patch.contains(".git"), "{}", d.patch);
    }
}
