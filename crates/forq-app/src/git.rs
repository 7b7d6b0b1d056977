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
    /// A push was asked to go somewhere forq does not push to.
    #[error("forq does not push to {remote:?}: {reason}")]
    Remote {
        /// What was named.
        remote: String,
        /// Why it is refused, and what to name instead.
        reason: &'static str,
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

/// [`git`] with `env` set for this one process (`GIT_INDEX_FILE`).
pub(crate) async fn git_env(
    dir: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> Result<String, GitError> {
    git_with(dir, args, &[], env)
        .await
        .map(|out| out.trim().to_owned())
}

/// File `path` as it is in commit `rev` of the repository at `dir`,
/// exactly (`git show REV:PATH`).
pub async fn show(dir: &Path, rev: &str, path: &str) -> Result<String, GitError> {
    git_raw(dir, &["show", &format!("{rev}:{path}")]).await
}

/// [`git`], its stdout as written.
async fn git_raw(dir: &Path, args: &[&str]) -> Result<String, GitError> {
    git_with(dir, args, &[], &[]).await
}

/// [`git_raw`] with settings given through the environment
/// (`GIT_CONFIG_KEY_n`): they reach this one process and are never written
/// to a config file or shown in its arguments.
async fn git_with(
    dir: &Path,
    args: &[&str],
    config: &[(String, String)],
    env: &[(&str, &str)],
) -> Result<String, GitError> {
    let mut cmd = forq_sandbox::host_git();
    cmd.envs(env.iter().copied());
    cmd.env("GIT_CONFIG_COUNT", config.len().to_string());
    for (i, (key, value)) in config.iter().enumerate() {
        cmd.env(format!("GIT_CONFIG_KEY_{i}"), key)
            .env(format!("GIT_CONFIG_VALUE_{i}"), value);
    }
    let out = cmd
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

/// Writes `branch`'s commits after `base` (its whole history when `None`)
/// to the bundle file `out`: what another machine fetches the same commits
/// from.
pub async fn bundle(
    dir: &Path,
    branch: &str,
    base: Option<&str>,
    out: &Path,
) -> Result<(), GitError> {
    let tip = format!("refs/heads/{branch}");
    let range = match base {
        Some(base) => format!("{base}..{tip}"),
        None => tip,
    };
    let out = out.to_string_lossy();
    git(dir, &["bundle", "create", "-q", &out, &range])
        .await
        .map(drop)
}

/// The tree of the commit checked out.
pub async fn tree(dir: &Path) -> Result<String, GitError> {
    git(dir, &["rev-parse", "HEAD^{tree}"]).await
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

/// Where a push may go: a remote configured in the workspace (forq's own
/// clone made `origin`), an `https://` or `ssh://` URL, or — only when the
/// operator names one on their own command line (`local_paths`) — an
/// absolute path to a repository on this machine. Never a relative path (it
/// would resolve inside the workspace, where a repository can commit a
/// bare repository whose hooks would run on the host), never a transport
/// like `ext::` or `file://` given by a caller, never an argument beginning
/// with `-`. Returns whether the destination is on this machine.
pub async fn check_remote(dir: &Path, remote: &str, local_paths: bool) -> Result<bool, GitError> {
    let refuse = |reason| GitError::Remote {
        remote: remote.to_owned(),
        reason,
    };
    if remote.is_empty() || remote.starts_with('-') {
        return Err(refuse(
            "a remote never begins with `-` (git would read it as an option)",
        ));
    }
    if remote.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(refuse("it holds spaces or control characters"));
    }
    if let Some(rest) = remote
        .strip_prefix("https://")
        .or_else(|| remote.strip_prefix("ssh://"))
    {
        if rest.is_empty() || rest.starts_with('/') {
            return Err(refuse("the URL names no host"));
        }
        return Ok(false);
    }
    if remote.starts_with('/') {
        if local_paths {
            return Ok(true);
        }
        return Err(refuse(
            "a path on this machine is pushed to only from the operator's own command line \
             (`forq push --remote /abs/path`); name a configured remote or an https:// or ssh:// URL",
        ));
    }
    let is_name = remote
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        && !remote.starts_with('.');
    if !is_name {
        return Err(refuse(
            "name a remote configured in the run's workspace (origin), or an https:// or ssh:// URL",
        ));
    }
    // A name git does not know is taken by git as a path: it must be one.
    let url = git(dir, &["remote", "get-url", "--", remote])
        .await
        .map_err(|_| refuse("no remote of that name is configured in the run's workspace"))?;
    Ok(is_local_url(&url))
}

/// Whether git reaches `url` on this machine (a path or `file://`) rather
/// than over a network transport.
fn is_local_url(url: &str) -> bool {
    if url.starts_with("file://") || url.starts_with('/') || url.starts_with('.') {
        return true;
    }
    if url.contains("://") {
        return false;
    }
    // scp-like `host:path` is remote when the colon comes before any slash.
    match (url.find(':'), url.find('/')) {
        (Some(colon), Some(slash)) => slash < colon,
        (Some(_), None) => false,
        (None, _) => true,
    }
}

/// What [`push`] pushes, and where.
#[derive(Debug, Clone, Copy)]
pub struct PushSpec<'a> {
    /// The remote: a name configured in the workspace, or a URL.
    pub remote: &'a str,
    /// The workspace's branch.
    pub branch: &'a str,
    /// The remote's branch it goes to (default: the same name).
    pub dest: Option<&'a str>,
    /// The commit the remote's branch must be at (`None`: it must not
    /// exist).
    pub expected: Option<&'a str>,
    /// `remote` may be a path on this machine.
    pub local_paths: bool,
    /// A GitHub token for an HTTPS remote.
    pub credential: Option<&'a str>,
}

/// Pushes `branch` of the workspace `dir` to `remote` (checked by
/// [`check_remote`] first; `local_paths` as there), forcing only over what
/// this run pushed before (`expected`, the commit it last pushed; `None`:
/// the remote must not have the branch yet). A destination on this machine
/// runs its `receive-pack` with hooks off: no host-side git command ever
/// runs a repository's hooks. `credential`, a GitHub token, is offered to
/// an HTTPS remote only.
pub async fn push(dir: &Path, spec: &PushSpec<'_>) -> Result<(), GitError> {
    let PushSpec {
        remote,
        branch,
        dest,
        expected,
        local_paths,
        credential,
    } = *spec;
    let dest = dest.unwrap_or(branch);
    if git(dir, &["check-ref-format", "--branch", dest])
        .await
        .is_err()
        || dest.starts_with('-')
    {
        return Err(GitError::Remote {
            remote: remote.to_owned(),
            reason: "the branch to push to is not a valid branch name",
        });
    }
    let local = check_remote(dir, remote, local_paths).await?;
    // A token goes only to the HTTPS URL it is for, in this process's
    // environment: never into the workspace's config.
    let mut config = Vec::new();
    if let Some(token) = credential {
        let url = git(dir, &["remote", "get-url", remote])
            .await
            .unwrap_or_else(|_| remote.to_owned());
        if url.starts_with("https://") {
            use base64::Engine as _;
            let basic =
                base64::engine::general_purpose::STANDARD.encode(format!("x-access-token:{token}"));
            config.push((
                format!("http.{url}.extraHeader"),
                format!("Authorization: Basic {basic}"),
            ));
        }
    }
    let lease = format!(
        "--force-with-lease=refs/heads/{dest}:{}",
        expected.unwrap_or("")
    );
    let refspec = format!("refs/heads/{branch}:refs/heads/{dest}");
    let mut args = vec![
        "-c",
        "protocol.ext.allow=never",
        "-c",
        "protocol.fd.allow=never",
        "push",
        "--porcelain",
    ];
    if local {
        args.push("--receive-pack=git -c core.hooksPath=/dev/null receive-pack");
    }
    args.extend([lease.as_str(), "--", remote, refspec.as_str()]);
    match git_with(dir, &args, &config, &[]).await {
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
                branch: dest.to_owned(),
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
