//! What forq says on GitHub by itself, once: a triage's answer on the
//! issue it declined, the link from an issue to the pull request that
//! fixes it.
//!
//! "Once" holds across webhook redeliveries, restarts, workers and stores:
//! the store records each thing said under a key, and every comment carries
//! a hidden marker naming that key, so a store that lost the record (or
//! never had it) finds the comment on the issue instead of saying it again.

use serde::Serialize;

use crate::github::{Github, GithubError};
use crate::store::{Store, StoreError};

/// Why something could not be said.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AnswerError {
    /// GitHub failed.
    #[error(transparent)]
    Github(#[from] GithubError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What [`say_once`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "said", content = "url", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Said {
    /// Commented now, at this URL.
    Now(String),
    /// Said before, at this URL: nothing done.
    Before(String),
}

/// The hidden line that marks a comment as forq's `key`.
fn marker(key: &str) -> String {
    format!("<!-- forq:{key} -->")
}

/// Comments `body` on `repo`'s issue `number` under `kind` (such as
/// `triage`), unless forq said that `kind` there before, by the store's
/// record or by a marked comment on the issue. Labels `labels` too, the
/// first time.
pub async fn say_once(
    store: &Store,
    github: &Github,
    repo: &str,
    number: u64,
    kind: &str,
    body: &str,
    labels: &[String],
) -> Result<Said, AnswerError> {
    let key = format!("{kind}:{}#{number}", repo.to_lowercase());
    if let Some(url) = store.said(&key)? {
        return Ok(Said::Before(url));
    }
    let mark = marker(&key);
    // A marker counts only in a comment forq wrote: anyone may post one
    // first to keep forq quiet.
    for c in github.comments(repo, number).await? {
        if c.body.as_deref().is_some_and(|b| b.contains(&mark)) && github.wrote(&c).await {
            store.record_said(&key, &c.html_url)?;
            return Ok(Said::Before(c.html_url));
        }
    }
    if !labels.is_empty() {
        let names: Vec<&str> = labels.iter().map(String::as_str).collect();
        github.add_labels(repo, number, &names).await?;
    }
    let url = github
        .comment(repo, number, &format!("{body}\n\n{mark}"))
        .await?;
    store.record_said(&key, &url)?;
    Ok(Said::Now(url))
}

/// The comment on an issue triage declined: the verdict, its reason, and
/// what a maintainer can still do. The reason is the model's, tamed.
pub fn triage_comment(reason: &str, confidence: Option<f64>, suggested: Option<&str>) -> String {
    let mut text = String::from("forq triaged this issue and is not attempting a fix");
    if let Some(c) = confidence {
        text.push_str(&format!(" (confidence {c:.2})"));
    }
    text.push_str(":\n\n");
    text.push_str(&crate::markdown::quoted(reason, 1000));
    if let Some(s) = suggested.filter(|s| !s.is_empty()) {
        text.push_str(&format!(
            "\n\nSuggested: {}.",
            crate::markdown::plain(s, 200)
        ));
    }
    text.push_str("\n\nA maintainer can still ask for a fix with `/forq fix`.");
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_triage_comment_quotes_the_reason_line_by_line() {
        let text = triage_comment("not a bug:\nworks as documented", Some(0.3), Some("close"));
        assert!(text.contains("(confidence 0.30)"), "{text}");
        assert!(
            text.contains("> not a bug:\n> works as documented"),
            "{text}"
        );
        assert!(text.contains("Suggested: close."), "{text}");
        assert_eq!(marker("triage:o/r#5"), "<!-- forq:triage:o/r#5 -->");
        // A model's text mentions nobody and hides no marker.
        let text = triage_comment("ask @owner <!-- forq:x -->", None, None);
        assert!(!text.contains("@owner") && !text.contains("<!--"), "{text}");
        assert!(triage_comment(&"a".repeat(5000), None, None).len() < 1200);
    }
}
