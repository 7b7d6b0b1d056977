//! The git loop, host side: a finished run's patch is committed in its
//! workspace on its own branch; a person pushes it (`forq push`), never
//! forcing over work that is not the run's own. forq never pulls into a
//! workspace: an upstream that moved gets a fresh run.

use std::path::Path;

/// Why a git step failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GitError {
    /// git could not be started.
    #[error("cannot run git: {0}; is git installed?")]
    Spawn(std::io::Error),
    /// git refused.
    #[error("git {args} failed in {dir}: {message}")]
    Failed {
        /// The arguments.
        args: String,
        /// The directory.
        dir: String,
        /// What git said.
        message: String,
    },
    /// The remote has a branch of that name that is not the run's.
    #[error("the remote's {branch} is not this run's (it moved, or someone else pushed it); nothing was forced over it: push under another name, or start a fresh run")]
    Rejected {
        /// The branch.
        branch: String,
    },
}

/// Runs `git ARGS` in `dir` with forq's identity and no hooks; returns
/// stdout, trimmed.
pub async fn git(dir: &Path, args: &[&str]) -> Result<String, GitError> {
    git_raw(dir, args).await.map(|out| out.trim().to_owned())
}

/// File `path` as it is in commit `rev` of the repository at `dir`,
/// exactly (`git show REV:PATH`).
pub async fn show(dir: &Path, rev: &str, path: &str) -> Result<String, GitError> {
    git_raw(dir, &["show", &format!("{rev}:{path}")]).await
}

/// [`git`], its stdout as written.
async fn git_raw(dir: &Path, args: &[&str]) -> Result<String, GitError> {
    let out = forq_sandbox::host_command("git")
        .args([
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "user.name=forq",
            "-c",
            "user.email=forq@localhost",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .map_err(GitError::Spawn)?;
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    // `push --porcelain` says why a ref was refused on stdout.
    let said = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    Err(GitError::Failed {
        args: args.join(" "),
        dir: dir.display().to_string(),
        message: said
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(" / "),
    })
}

/// `git init` in `dir` and one commit of everything in it.
pub async fn init_commit(dir: &Path, message: &str) -> Result<(), GitError> {
    git(dir, &["init", "-q", "-b", "main"]).await?;
    git(dir, &["add", "-A"]).await?;
    git(dir, &["commit", "-q", "--allow-empty", "-m", message]).await?;
    Ok(())
}

/// Adds `pattern` to the repository's own excludes (`.git/info/exclude`).
pub fn exclude(dir: &Path, pattern: &str) -> std::io::Result<()> {
    let path = dir.join(".git/info/exclude");
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let mut text = std::fs::read_to_string(&path).unwrap_or_default();
    if !text.lines().any(|l| l == pattern) {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(pattern);
        text.push('\n');
        std::fs::write(path, text)?;
    }
    Ok(())
}

/// The commit checked out.
pub async fn head(dir: &Path) -> Result<String, GitError> {
    git(dir, &["rev-parse", "HEAD"]).await
}

/// The branch checked out.
pub async fn current_branch(dir: &Path) -> Result<String, GitError> {
    git(dir, &["rev-parse", "--abbrev-ref", "HEAD"]).await
}

/// The branch name `template` gives (`{action}`, `{run_id}`, `{issue}`
/// filled in; anything git refuses in a name becomes `-`).
pub fn branch_name(template: &str, action: &str, run_id: &str, issue: &str) -> String {
    let name = template
        .replace("{action}", action)
        .replace("{run_id}", run_id)
        .replace("{issue}", issue);
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '/' | '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .collect::<String>()
        .replace("..", "-")
        .trim_matches(['/', '.', '-'])
        .to_owned()
}

/// Commits `patch` (a unified diff against `base`) on `branch` in the
/// workspace `dir`, with `message`; returns the commit. Done already (the
/// branch holds a commit with this message on `base`), it returns that
/// commit, so a resumed run does not commit twice.
pub async fn commit_patch(
    dir: &Path,
    base: &str,
    branch: &str,
    patch: &Path,
    message: &str,
) -> Result<String, GitError> {
    let existing = format!("refs/heads/{branch}");
    if git(dir, &["rev-parse", "--verify", "-q", &existing])
        .await
        .is_ok()
    {
        let subject = git(dir, &["log", "-1", "--format=%B", &existing]).await?;
        let parent = git(dir, &["rev-parse", &format!("{existing}^")]).await;
        if subject.trim() == message.trim() && parent.as_deref().ok() == Some(base) {
            git(dir, &["checkout", "-q", branch]).await?;
            return git(dir, &["rev-parse", &existing]).await;
        }
    }
    git(dir, &["checkout", "-q", "-B", branch, base]).await?;
    let patch = patch.canonicalize().unwrap_or_else(|_| patch.to_owned());
    let patch = patch.to_string_lossy();
    git(dir, &["apply", "--index", "--whitespace=nowarn", &patch]).await?;
    git(dir, &["commit", "-q", "-m", message]).await?;
    head(dir).await
}

/// Pushes `branch` of the workspace `dir` to `remote`, forcing only over
/// what this run pushed before (`expected`, the commit it last pushed;
/// `None`: the remote must not have the branch yet).
pub async fn push(
    dir: &Path,
    remote: &str,
    branch: &str,
    expected: Option<&str>,
) -> Result<(), GitError> {
    let lease = format!(
        "--force-with-lease=refs/heads/{branch}:{}",
        expected.unwrap_or("")
    );
    let refspec = format!("refs/heads/{branch}:refs/heads/{branch}");
    match git(dir, &["push", "--porcelain", &lease, remote, &refspec]).await {
        Ok(_) => Ok(()),
        // A shallow workspace cannot give a remote without its history
        // what it lacks: that is not someone else's branch.
        Err(e @ GitError::Failed { .. })
            if e.to_string().contains("shallow update not allowed") =>
        {
            Err(e)
        }
        Err(GitError::Failed { message, .. })
            if message.contains("stale info") || message.contains("rejected") =>
        {
            Err(GitError::Rejected {
                branch: branch.to_owned(),
            })
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn branch_names_fill_the_template_and_stay_valid() {
        assert_eq!(
            branch_name("forq/{action}/{run_id}", "fix", "20261201-1", "7"),
            "forq/fix/20261201-1"
        );
        assert_eq!(
            branch_name("bot/{issue}", "fix", "r", "add() subtracts.."),
            "bot/add---subtracts"
        );
    }
}
