//! Where issues come from: a directory of Markdown issues (front matter
//! for id, title, labels, target tests, the repository), or a GitHub
//! repository ([`crate::github`]).
//!
//! A local directory holds `*.md` files, one issue each, and
//! subdirectories with an `ISSUE.md` (the bundled `examples/` are such a
//! directory: each example is its own repository and issue).
//!
//! ```
//! use forq_app::source::parse_markdown;
//!
//! let text = "---\nid: 12\nlabels: [bug]\ntargets: [tests/test_calc.py::test_add]\n---\n# add() subtracts\n\nadd(2, 3) is -1.\n";
//! let local = parse_markdown(text, "issues/12.md").unwrap();
//! assert_eq!(local.issue.id, "12");
//! assert_eq!(local.issue.title, "add() subtracts");
//! assert_eq!(local.issue.labels, ["bug"]);
//! assert_eq!(local.issue.targets, ["tests/test_calc.py::test_add"]);
//! ```

use std::path::{Path, PathBuf};

use forq_agent::issue;

use crate::store::IssueRecord;

/// An issue read from a local file, with the repository it names.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalIssue {
    /// The issue.
    pub issue: IssueRecord,
    /// The repository: the front matter's `repo` (relative to the file's
    /// directory), or the directory holding an `ISSUE.md`.
    pub repo: Option<PathBuf>,
}

/// Why an issue directory could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    /// A file or directory could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A front matter is not YAML of the expected shape.
    #[error("{path}: the front matter is not valid: {message} (expected keys: id, title, labels, targets, repo, author)")]
    FrontMatter {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// Nothing to read.
    #[error("{0} holds no issue: put one Markdown file per issue there (*.md, or DIR/ISSUE.md)")]
    Empty(PathBuf),
}

/// Parses one Markdown issue (`source` names it in errors and records),
/// with forq-agent's front matter parser.
pub fn parse_markdown(text: &str, source: &str) -> Result<LocalIssue, SourceError> {
    let (front, parsed) = issue::parse_markdown(text, source).map_err(|e| match e {
        issue::IssueError::FrontMatter { path, message } => {
            SourceError::FrontMatter { path, message }
        }
        other => SourceError::FrontMatter {
            path: source.to_owned(),
            message: other.to_string(),
        },
    })?;
    let stem = Path::new(source)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let id = match front.id {
        Some(id) => id,
        None if stem == "ISSUE" => Path::new(source)
            .parent()
            .and_then(Path::file_name)
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or(stem),
        None => stem,
    };
    Ok(LocalIssue {
        issue: IssueRecord {
            id,
            title: parsed.title,
            body: parsed.body,
            source: source.to_owned(),
            labels: front.labels,
            targets: front.targets,
            author: front.author,
            url: None,
            pull: None,
        },
        repo: front.repo.map(PathBuf::from),
    })
}

/// Reads one Markdown issue file; its `repo` is resolved against the
/// file's directory, and an `ISSUE.md` without one names its directory.
pub fn read_file(path: &Path) -> Result<LocalIssue, SourceError> {
    let text = std::fs::read_to_string(path).map_err(|source| SourceError::Read {
        path: path.to_owned(),
        source,
    })?;
    let mut local = parse_markdown(&text, &path.display().to_string())?;
    let dir = path.parent().unwrap_or(Path::new("."));
    local.repo = match local.repo.take() {
        Some(r) => Some(dir.join(r)),
        None if path.file_name().is_some_and(|n| n == "ISSUE.md") => Some(dir.to_owned()),
        None => None,
    };
    Ok(local)
}

/// Every issue in `dir`, in name order: its `*.md` files and its
/// subdirectories' `ISSUE.md`.
pub fn read_dir(dir: &Path) -> Result<Vec<LocalIssue>, SourceError> {
    let err = |source| SourceError::Read {
        path: dir.to_owned(),
        source,
    };
    let mut paths = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(err)? {
        let path = entry.map_err(err)?.path();
        if path.is_dir() && path.join("ISSUE.md").is_file() {
            paths.push(path.join("ISSUE.md"));
        } else if path.is_file()
            && path.extension().is_some_and(|e| e == "md")
            && !path
                .file_name()
                .is_some_and(|n| n.eq_ignore_ascii_case("README.md"))
        {
            paths.push(path);
        }
    }
    paths.sort();
    if paths.is_empty() && dir.join("ISSUE.md").is_file() {
        paths.push(dir.join("ISSUE.md"));
    }
    if paths.is_empty() {
        return Err(SourceError::Empty(dir.to_owned()));
    }
    paths.iter().map(|p| read_file(p)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_yields_files_and_issue_directories_in_order() {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        std::fs::write(d.join("b.md"), "# second\n\nbody b\n").expect("write");
        std::fs::write(
            d.join("a.md"),
            "---\nid: 3\nrepo: ../code\nlabels: [bug, easy]\n---\n# first\n",
        )
        .expect("write");
        std::fs::write(d.join("README.md"), "# not an issue\n").expect("write");
        std::fs::create_dir(d.join("calc")).expect("mkdir");
        std::fs::write(d.join("calc/ISSUE.md"), "# third\n").expect("write");
        let issues = read_dir(d).expect("read");
        let ids: Vec<_> = issues.iter().map(|i| i.issue.id.as_str()).collect();
        assert_eq!(ids, ["3", "b", "calc"]);
        assert_eq!(issues[0].repo, Some(d.join("../code")));
        assert_eq!(issues[0].issue.labels, ["bug", "easy"]);
        assert_eq!(issues[1].repo, None);
        assert_eq!(issues[1].issue.body, "body b");
        assert_eq!(issues[2].repo, Some(d.join("calc")));
        assert_eq!(issues[2].issue.title, "third");
    }

    #[test]
    fn a_bad_front_matter_names_the_file() {
        let err = parse_markdown("---\nlabels: 3: 4\n---\n# x\n", "issues/x.md").expect_err("bad");
        assert!(
            err.to_string().starts_with("issues/x.md: the front matter"),
            "{err}"
        );
        let empty = tempfile::tempdir().expect("tempdir");
        let err = read_dir(empty.path()).expect_err("empty");
        assert!(err.to_string().contains("holds no issue"), "{err}");
    }

    #[test]
    fn a_title_in_front_matter_stands_in_for_a_missing_heading() {
        let l = parse_markdown(
            "---\ntitle: from front\nauthor: bob\n---\nno heading\n",
            "x.md",
        )
        .expect("parse");
        assert_eq!(l.issue.title, "from front");
        assert_eq!(l.issue.author.as_deref(), Some("bob"));
        assert_eq!(l.issue.id, "x");
    }
}
