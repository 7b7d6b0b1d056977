//! The contributors a repository trusts (forq.yml `funding.trusted`: whose
//! issues run on the owner's key), changed the way the repository changes
//! anything: a pull request to its forq.yml that a person merges.
//!
//! The file is edited where the list is, and nowhere else: comments,
//! order and every other key stay as they were. The edit is checked by
//! parsing the result: the settings must be the old ones with only the
//! list changed, or nothing is proposed.

use serde::Serialize;

use crate::config::{Config, ConfigError, FILE_NAMES};
use crate::github::{GhPull, Github, GithubError};

/// Why the list could not be changed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TrustedError {
    /// Not a GitHub login.
    #[error("{0:?} is not a GitHub login (letters, digits and single hyphens, at most 39)")]
    Login(String),
    /// Nothing to change.
    #[error("nothing to change: name logins to add or remove")]
    Nothing,
    /// The repository's forq.yml does not parse.
    #[error("{repo}'s {error}; fix it there first")]
    Invalid {
        /// `OWNER/REPO`.
        repo: String,
        /// What is wrong.
        error: ConfigError,
    },
    /// The edit would change more than the list (a layout forq does not
    /// edit safely).
    #[error("{repo}'s forq.yml could not be edited safely (its funding is written in a way forq does not rewrite): change funding.trusted by hand")]
    Unsafe {
        /// `OWNER/REPO`.
        repo: String,
    },
    /// GitHub failed.
    #[error(transparent)]
    Github(#[from] GithubError),
}

/// Whether `login` could be a GitHub login.
///
/// ```
/// use forq_app::trusted::is_login;
///
/// assert!(is_login("alice") && is_login("a-l1ce"));
/// assert!(!is_login("-alice") && !is_login("al--ice") && !is_login("a]: x") && !is_login(""));
/// ```
pub fn is_login(login: &str) -> bool {
    !login.is_empty()
        && login.len() <= 39
        && login.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        && !login.starts_with('-')
        && !login.ends_with('-')
        && !login.contains("--")
}

/// The list after removing `remove` and adding `add` (in order, once).
fn changed(old: &[String], add: &[String], remove: &[String]) -> Vec<String> {
    let mut out: Vec<String> = old
        .iter()
        .filter(|l| !remove.iter().any(|r| r.eq_ignore_ascii_case(l)))
        .cloned()
        .collect();
    for login in add {
        if !out.iter().any(|l| l.eq_ignore_ascii_case(login)) {
            out.push(login.clone());
        }
    }
    out
}

/// A flow list of `logins`, each quoted (a login such as `true` or `123`
/// stays a string).
fn flow(logins: &[String]) -> String {
    let items: Vec<String> = logins.iter().map(|l| format!("\"{l}\"")).collect();
    format!("[{}]", items.join(", "))
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// Whether `line` holds no YAML (blank, or a comment).
fn idle(line: &str) -> bool {
    let t = line.trim();
    t.is_empty() || t.starts_with('#')
}

/// `text` (a forq.yml) with `funding.trusted` set to `logins`, edited in
/// place; `None` when its funding is written in a way this does not edit
/// (a flow mapping, anchors).
///
/// ```
/// use forq_app::trusted::with_trusted;
///
/// let text = "# ours\nfunding:\n  mode: contributor  # keys\n  trusted:\n    - alice\ntest:\n  timeout_s: 60\n";
/// let edited = with_trusted(text, &["alice".into(), "bob".into()]).unwrap();
/// assert_eq!(edited, "# ours\nfunding:\n  mode: contributor  # keys\n  trusted: [\"alice\", \"bob\"]\ntest:\n  timeout_s: 60\n");
/// ```
pub fn with_trusted(text: &str, logins: &[String]) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let list = flow(logins);
    let Some(start) = lines.iter().position(|l| {
        indent(l) == 0 && l.split('#').next().unwrap_or_default().trim() == "funding:"
    }) else {
        // No funding block: one is added at the end.
        if lines
            .iter()
            .any(|l| indent(l) == 0 && l.starts_with("funding:"))
        {
            return None;
        }
        let mut out = text.to_owned();
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&format!("funding:\n  trusted: {list}\n"));
        return Some(out);
    };
    // The block: the lines after `funding:` until the next key at the top.
    let end = (start + 1..lines.len())
        .find(|&i| !idle(lines[i]) && indent(lines[i]) == 0)
        .unwrap_or(lines.len());
    let child = (start + 1..end)
        .find(|&i| !idle(lines[i]))
        .map_or(2, |i| indent(lines[i]));
    let key = (start + 1..end)
        .find(|&i| indent(lines[i]) == child && lines[i].trim_start().starts_with("trusted:"));
    let mut out: Vec<String> = lines.iter().map(|l| (*l).to_owned()).collect();
    match key {
        None => out.insert(start + 1, format!("{}trusted: {list}", " ".repeat(child))),
        Some(k) => {
            let value = lines[k].trim_start()["trusted:".len()..]
                .split(" #")
                .next()
                .unwrap_or_default()
                .trim();
            // A block list's items follow the key, deeper or at its depth.
            let item =
                |i: usize| indent(lines[i]) >= child && lines[i].trim_start().starts_with("- ");
            let items_end = (k + 1..end)
                .find(|&i| !idle(lines[i]) && !item(i))
                .unwrap_or(end);
            let items: Vec<usize> = (k + 1..items_end)
                .filter(|&i| lines[i].trim_start().starts_with("- "))
                .collect();
            if value.starts_with('&') || value.starts_with('*') || value.starts_with('!') {
                return None;
            }
            if !value.is_empty() && !items.is_empty() {
                return None;
            }
            out[k] = format!("{}trusted: {list}", " ".repeat(child));
            for i in items.into_iter().rev() {
                out.remove(i);
            }
        }
    }
    let mut joined = out.join("\n");
    if text.ends_with('\n') {
        joined.push('\n');
    }
    Some(joined)
}

/// What a proposal did.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct Proposed {
    /// The list before.
    pub before: Vec<String>,
    /// The list the pull request makes.
    pub after: Vec<String>,
    /// The branch the change is on.
    pub branch: String,
    /// The pull request.
    pub pull_request: GhPull,
}

/// The contributors `repo`'s forq.yml trusts now, on its default branch
/// (none without a forq.yml).
pub async fn trusted(github: &Github, repo: &str) -> Result<Vec<String>, TrustedError> {
    match crate::queue::github_config(github, repo).await {
        Ok(config) => Ok(config.map(|c| c.funding.trusted).unwrap_or_default()),
        Err(crate::queue::QueueError::RemoteConfig { slug, error }) => {
            Err(TrustedError::Invalid { repo: slug, error })
        }
        Err(crate::queue::QueueError::Github(e)) => Err(e.into()),
        Err(e) => Err(TrustedError::Github(GithubError::Shape {
            url: repo.to_owned(),
            message: e.to_string(),
        })),
    }
}

/// Opens a pull request on `repo` that adds `add` to, and removes `remove`
/// from, its forq.yml's `funding.trusted`, on a branch of its own
/// (`forq/trusted-SECONDS`); a person merges it.
pub async fn propose(
    github: &Github,
    repo: &str,
    add: &[String],
    remove: &[String],
) -> Result<Proposed, TrustedError> {
    if let Some(bad) = add.iter().chain(remove).find(|l| !is_login(l)) {
        return Err(TrustedError::Login(bad.clone()));
    }
    let mut found = None;
    for name in FILE_NAMES {
        if let Some((text, blob)) = github.file_blob(repo, name).await? {
            found = Some((name, text, Some(blob)));
            break;
        }
    }
    let (name, text, blob) = found.unwrap_or((FILE_NAMES[0], String::new(), None));
    let invalid = |error| TrustedError::Invalid {
        repo: repo.to_owned(),
        error,
    };
    let old = Config::parse(&text, name).map_err(invalid)?;
    let after = changed(&old.funding.trusted, add, remove);
    if after == old.funding.trusted {
        return Err(TrustedError::Nothing);
    }
    let unsafe_edit = || TrustedError::Unsafe {
        repo: repo.to_owned(),
    };
    let edited = with_trusted(&text, &after).ok_or_else(unsafe_edit)?;
    // The edit changed the list and nothing else, or it is not proposed.
    let new = Config::parse(&edited, name).map_err(|_| unsafe_edit())?;
    let mut expected = old.clone();
    expected.funding.trusted = after.clone();
    if new != expected {
        return Err(unsafe_edit());
    }
    let base = github.default_branch(repo).await?;
    let head = github.branch_head(repo, &base).await?;
    let branch = format!("forq/trusted-{}", jiff::Timestamp::now().as_second());
    github.create_branch(repo, &branch, &head).await?;
    let says = |verb: &str, list: &[String]| match list.is_empty() {
        true => String::new(),
        false => format!("{verb} {}", list.join(", ")),
    };
    let what = [says("trust", add), says("stop trusting", remove)]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    github
        .put_file(
            repo,
            name,
            &branch,
            &edited,
            blob.as_deref(),
            &format!("forq.yml: {what}"),
        )
        .await?;
    let body = format!(
        "Changes `funding.trusted` in `{name}`, asked for on forq's dashboard: {what}.\n\nTrusted contributors' issues run on the owner's model key when `funding.mode` is `contributor`. Nothing changes until this is merged.\n\nBefore: {}\nAfter: {}",
        flow(&old.funding.trusted),
        flow(&after)
    );
    let pull_request = github
        .open_pull(repo, &format!("forq.yml: {what}"), &branch, &base, &body)
        .await?;
    Ok(Proposed {
        before: old.funding.trusted,
        after,
        branch,
        pull_request,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, logins: &[&str], expect: Option<&str>) {
        let logins: Vec<String> = logins.iter().map(|s| (*s).to_owned()).collect();
        assert_eq!(with_trusted(text, &logins).as_deref(), expect, "{text}");
        if let Some(edited) = expect {
            let config = Config::parse(edited, "forq.yml").expect("parses");
            assert_eq!(config.funding.trusted, logins);
        }
    }

    #[test]
    fn the_list_is_edited_where_it_is_and_nowhere_else() {
        // No file, no funding block: added.
        check("", &["a"], Some("funding:\n  trusted: [\"a\"]\n"));
        check(
            "test:\n  timeout_s: 60",
            &["a"],
            Some("test:\n  timeout_s: 60\nfunding:\n  trusted: [\"a\"]\n"),
        );
        // A block without the key: inserted at its children's depth.
        check(
            "funding:\n    mode: contributor\n",
            &["a"],
            Some("funding:\n    trusted: [\"a\"]\n    mode: contributor\n"),
        );
        // A flow list, with a comment after the key's block.
        check(
            "funding:\n  trusted: [x]   # reviewed monthly\n  mode: contributor\n# end\n",
            &["x", "true"],
            Some("funding:\n  trusted: [\"x\", \"true\"]\n  mode: contributor\n# end\n"),
        );
        // A block list at the key's depth, items removed.
        check(
            "funding:\n  trusted:\n  - a\n  - b\n  mode: owner\n",
            &[],
            Some("funding:\n  trusted: []\n  mode: owner\n"),
        );
        // A flow mapping, an anchor: not edited.
        check("funding: {mode: owner, trusted: []}\n", &["a"], None);
        check("funding:\n  trusted: &t [a]\n", &["a"], None);
    }

    #[test]
    fn the_new_list_keeps_order_and_takes_each_login_once() {
        let s = |v: &[&str]| v.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            changed(&s(&["a", "b"]), &s(&["c", "A"]), &s(&["b"])),
            s(&["a", "c"])
        );
    }
}
