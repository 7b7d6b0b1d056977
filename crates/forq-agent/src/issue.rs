//! The issue a run works on, from a Markdown file (with the one front
//! matter parser forq has) or text. Issues on GitHub are read by
//! forq-app's GitHub client, the one forq has.
//!
//! ```
//! use forq_agent::issue::Issue;
//!
//! let issue = Issue::from_markdown("---\nid: 7\n---\n# add() subtracts\n\n`add(2, 3)` is -1.\n", "issue.md");
//! assert_eq!(issue.title, "add() subtracts");
//! assert_eq!(issue.body, "`add(2, 3)` is -1.");
//! assert!(issue.prompt().starts_with("# add() subtracts\n"));
//!
//! let (front, _) = forq_agent::issue::parse_markdown("---\nid: 7\ntargets: [t1]\n---\n# x\n", "f.md").unwrap();
//! assert_eq!((front.id.as_deref(), front.targets), (Some("7"), vec!["t1".to_owned()]));
//! ```

use std::path::Path;

use serde::{Deserialize, Deserializer, Serialize};

/// An issue: a title and a body, and where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Issue {
    /// The title (may be empty for `--text`).
    pub title: String,
    /// The body, Markdown.
    pub body: String,
    /// Where it was read: a URL, a path, or `text`.
    pub source: String,
    /// Labels, when the source has them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
}

/// The keys forq reads from a Markdown issue's YAML front matter (others
/// are left to other tools).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct FrontMatter {
    /// Its id in its source (a number or a string).
    #[serde(deserialize_with = "id_text")]
    pub id: Option<String>,
    /// The title, when the text has no `# ` heading.
    pub title: Option<String>,
    /// Labels.
    pub labels: Vec<String>,
    /// Tests that capture it.
    pub targets: Vec<String>,
    /// The repository it is on, relative to the file.
    pub repo: Option<String>,
    /// Who filed it.
    pub author: Option<String>,
}

/// An id written as a number or a string.
fn id_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Id {
        Number(u64),
        Text(String),
    }
    Ok(Option::<Id>::deserialize(d)?.map(|id| match id {
        Id::Number(n) => n.to_string(),
        Id::Text(t) => t,
    }))
}

/// Why an issue could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IssueError {
    /// The Markdown file could not be read.
    #[error("cannot read the issue file {path}: {message}")]
    File {
        /// The file.
        path: String,
        /// What failed.
        message: String,
    },
    /// A front matter is not YAML of the expected shape.
    #[error("{path}: the front matter is not valid: {message} (expected keys: id, title, labels, targets, repo, author)")]
    FrontMatter {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
}

/// Splits a Markdown issue into its front matter (`---` … `---`, parsed)
/// and the issue: the first `# ` heading is the title (else the front
/// matter's), the rest the body. `source` names it.
pub fn parse_markdown(text: &str, source: &str) -> Result<(FrontMatter, Issue), IssueError> {
    let mut rest = text.trim_start_matches('\u{feff}');
    let mut front = FrontMatter::default();
    if let Some(after) = rest.strip_prefix("---\n") {
        let split = match after.strip_prefix("---") {
            Some(tail) => Some(("", tail)),
            None => after
                .find("\n---")
                .map(|end| (&after[..end], &after[end + 4..])),
        };
        if let Some((yaml, tail)) = split {
            front = serde_yaml_ng::from_str::<Option<FrontMatter>>(yaml)
                .map_err(|e| IssueError::FrontMatter {
                    path: source.to_owned(),
                    message: e.to_string(),
                })?
                .unwrap_or_default();
            rest = tail.trim_start_matches(['-']);
        }
    }
    let rest = rest.trim_start();
    let (title, body) = match rest.strip_prefix("# ") {
        Some(headed) => {
            let (first, body) = headed.split_once('\n').unwrap_or((headed, ""));
            (first.trim().to_owned(), body)
        }
        None => (front.title.clone().unwrap_or_default(), rest),
    };
    let issue = Issue {
        title,
        body: body.trim().to_owned(),
        source: source.to_owned(),
        labels: front.labels.clone(),
    };
    Ok((front, issue))
}

impl Issue {
    /// Text given directly: the first line, when it is a `# ` heading, is
    /// the title.
    pub fn from_text(text: &str) -> Issue {
        let mut issue = Issue::from_markdown(text, "text");
        issue.source = "text".to_owned();
        issue
    }

    /// A Markdown issue ([`parse_markdown`]); a front matter that does not
    /// parse is dropped as if it were absent.
    pub fn from_markdown(text: &str, source: &str) -> Issue {
        match parse_markdown(text, source) {
            Ok((_, issue)) => issue,
            Err(_) => {
                // Without its front matter, then as plain text.
                let stripped = text
                    .strip_prefix("---\n")
                    .and_then(|after| after.find("\n---").map(|end| &after[end + 4..]))
                    .map(|r| r.trim_start_matches(['-']))
                    .unwrap_or(text);
                parse_markdown(stripped, source)
                    .map(|(_, issue)| issue)
                    .unwrap_or(Issue {
                        title: String::new(),
                        body: stripped.trim().to_owned(),
                        source: source.to_owned(),
                        labels: Vec::new(),
                    })
            }
        }
    }

    /// Reads a Markdown issue file; a front matter that does not parse is
    /// an error that names the file.
    pub fn from_file(path: &Path) -> Result<Issue, IssueError> {
        let text = std::fs::read_to_string(path).map_err(|e| IssueError::File {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        parse_markdown(&text, &path.display().to_string()).map(|(_, issue)| issue)
    }

    /// The issue as the model reads it: `# title`, a blank line, the body.
    pub fn prompt(&self) -> String {
        match (self.title.is_empty(), self.body.is_empty()) {
            (true, _) => self.body.clone(),
            (false, true) => format!("# {}\n", self.title),
            (false, false) => format!("# {}\n\n{}", self.title, self.body),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_without_heading_uses_front_matter_title() {
        let i = Issue::from_markdown(
            "---\ntitle: \"Crash\"\nlabels: [bug]\n---\nIt crashes.\n",
            "f.md",
        );
        assert_eq!(i.title, "Crash");
        assert_eq!(i.body, "It crashes.");
        assert_eq!(i.labels, ["bug"]);
        let plain = Issue::from_text("just words");
        assert_eq!(
            (plain.title.as_str(), plain.prompt()),
            ("", "just words".to_owned())
        );
    }

    #[test]
    fn a_bad_front_matter_is_an_error_that_names_the_file_or_dropped_by_from_markdown() {
        let text = "---\nlabels: bug: [\n---\n# Title\n\nBody.\n";
        let err = parse_markdown(text, "issues/3.md").unwrap_err().to_string();
        assert!(
            err.starts_with("issues/3.md: the front matter is not valid"),
            "{err}"
        );
        let issue = Issue::from_markdown(text, "issues/3.md");
        assert_eq!(
            (issue.title.as_str(), issue.body.as_str()),
            ("Title", "Body.")
        );
    }

    #[test]
    fn ids_may_be_numbers_or_strings_and_an_empty_front_matter_is_none() {
        let (f, _) = parse_markdown("---\nid: 12\n---\nx", "a.md").unwrap();
        assert_eq!(f.id.as_deref(), Some("12"));
        let (f, _) = parse_markdown("---\nid: bug-7\nauthor: sam\n---\nx", "a.md").unwrap();
        assert_eq!(
            (f.id.as_deref(), f.author.as_deref()),
            (Some("bug-7"), Some("sam"))
        );
        let (f, issue) = parse_markdown("---\n---\n# t\n", "a.md").unwrap();
        assert_eq!(f, FrontMatter::default());
        assert_eq!(issue.title, "t");
    }
}
