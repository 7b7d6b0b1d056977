//! What a person does with a finished run, wherever they do it (`forq
//! push`, the control plane): push its branch and open a pull request, and
//! comment on, label or close its GitHub issue. forq never does these on
//! its own.

use std::path::Path;

use serde::Serialize;
use serde_json::json;

use crate::git::{self, GitError};
use crate::github::{repo_slug, GhPull, Github, GithubError};
use crate::ids::BranchName;
use crate::markdown::code;
use crate::store::{Run, State, Store, StoreError};

/// How to push.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct PushOptions {
    /// The remote: a name in the workspace (default `origin`, the
    /// repository the run was seeded from) or a URL.
    pub remote: Option<String>,
    /// Open a pull request on GitHub too.
    pub pull_request: bool,
    /// The GitHub repository for the pull request, `OWNER/REPO` (default:
    /// from the issue's or the remote's URL).
    pub github_repo: Option<String>,
    /// The branch the pull request goes into (default: the branch the run
    /// was seeded from).
    pub base: Option<String>,
    /// `remote` may be an absolute path to a repository on this machine:
    /// only the operator's own command line sets it (the control plane
    /// never does). See [`git::check_remote`].
    pub local_paths: bool,
}

impl PushOptions {
    /// Pushes to `origin`, no pull request.
    pub fn new() -> Self {
        Self::default()
    }

    /// Opens a pull request too.
    pub fn pull_request(mut self, open: bool) -> Self {
        self.pull_request = open;
        self
    }

    /// Pushes to `remote` (a name or a URL).
    pub fn remote(mut self, remote: impl Into<String>) -> Self {
        self.remote = Some(remote.into());
        self
    }
}

/// What a push did.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct Pushed {
    /// The run.
    pub run: String,
    /// Where it went.
    pub remote: String,
    /// The branch.
    pub branch: String,
    /// The commit pushed.
    pub commit: String,
    /// The pull request opened.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pull_request: Option<GhPull>,
    /// Why the issue was not told of the pull request, when telling it
    /// failed (the pull request is open all the same).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comment_failed: Option<String>,
    /// The comment that told the run's pull request of the result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commented: Option<String>,
    /// Nothing was pushed: the fix went to a fork's pull request as a patch
    /// in a comment (its author does not let maintainers push, and a
    /// fork's commits never enter the base repository).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub suggested: bool,
}

/// Why a run could not be published or its issue acted on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PublishError {
    /// The run has no committed patch.
    #[error("run {id} is {state}: only a run with a committed patch (patch_ready) is pushed")]
    NotReady {
        /// The run.
        id: String,
        /// Its state.
        state: String,
    },
    /// The run's workspace is gone or was never made, and the store keeps
    /// no bundle of its branch.
    #[error("run {id} has no workspace here and the store keeps no bundle of its branch: push from the machine that ran it")]
    NoWorkspace {
        /// The run.
        id: String,
    },
    /// No remote was named and the workspace has no origin.
    #[error("the run's workspace was copied, not cloned, so it has no origin: name the remote to push to")]
    NoOrigin,
    /// The GitHub repository could not be told.
    #[error(
        "name the GitHub repository (OWNER/REPO): neither the issue's nor the remote's URL is one"
    )]
    NoGithubRepo,
    /// The run's issue is not a GitHub issue.
    #[error("run {id}'s issue is not on GitHub ({from}): there is nothing to comment on, label or close")]
    NotOnGithub {
        /// The run.
        id: String,
        /// Where its issue came from.
        from: String,
    },
    /// The pull request a run was for is not the one GitHub shows now (its
    /// head moved to another branch or repository, or it was closed), or
    /// the run's record of it was rewritten.
    #[error("run {id} was for pull request #{number}, but {why}: nothing was pushed (queue the pull request again)")]
    PullChanged {
        /// The run.
        id: String,
        /// The pull request.
        number: u64,
        /// What differs.
        why: String,
    },
    /// The run's branch could not be made again here from the store.
    #[error("run {id}'s branch could not be restored from the store here: {reason}")]
    Restore {
        /// The run.
        id: String,
        /// Why.
        reason: String,
    },
    /// git failed (a rejected push is [`GitError::Rejected`]).
    #[error(transparent)]
    Git(#[from] GitError),
    /// GitHub failed.
    #[error(transparent)]
    Github(#[from] GithubError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Pushes run `id`'s branch (never forcing over a commit that is not the
/// run's) and, when asked, opens a pull request and tells the issue.
pub async fn push(
    store: &Store,
    state_dir: &Path,
    github: &Github,
    id: &str,
    options: &PushOptions,
) -> Result<Pushed, PublishError> {
    let run = store.get(id)?;
    if !run.state.has_patch() {
        return Err(PublishError::NotReady {
            id: run.id.to_string(),
            state: run.state.name().to_owned(),
        });
    }
    let not_ready = || PublishError::NotReady {
        id: run.id.to_string(),
        state: "without a branch".to_owned(),
    };
    let branch = run.branch.clone().ok_or_else(not_ready)?;
    let mut ws = crate::clean::workspace_path(state_dir, &run.id);
    if !ws.is_dir() {
        // Run on another machine (or cleaned here): the same commits, from
        // the store.
        ws = restore(store, &run, &branch, state_dir).await?;
    }
    if let (Some(pull), None) = (&run.issue.pull, &options.remote) {
        return push_to_pull(store, github, &run, pull, &ws, &branch, options).await;
    }
    let remote = options
        .remote
        .clone()
        .unwrap_or_else(|| "origin".to_owned());
    if options.remote.is_none()
        && git::git(&ws, &["remote", "get-url", "origin"])
            .await
            .is_err()
    {
        return Err(PublishError::NoOrigin);
    }
    git::check_remote(&ws, &remote, options.local_paths).await?;
    let credential = push_credential(github, &ws, &remote).await?;
    let target = Target {
        remote: &remote,
        dest: &branch,
        first: None,
        credential: credential.as_deref(),
    };
    let mut out = push_branch(store, &run, &ws, &branch, &target, options.local_paths).await?;
    if options.pull_request {
        open_pull_request(store, github, &run, &ws, &remote, options, &mut out).await?;
    }
    Ok(out)
}

/// Pull request `pull` as GitHub shows it now, for a push a person asked
/// for: where its head is (repository, branch, clone URL) and whether its
/// author lets maintainers push there come from GitHub, never from the
/// run's record, which a worker wrote (on a shared store, any worker). A
/// record that names another head than GitHub's, or a pull request that
/// is closed, pushes nothing. The head commit stays the record's: the push
/// is leased at it, so a forged one moves nothing.
async fn pull_now(
    github: &Github,
    run: &Run,
    pull: &crate::store::PullRecord,
) -> Result<crate::store::PullRecord, PublishError> {
    let now = github.pull(&pull.repo, pull.number).await?;
    let changed = |why: String| PublishError::PullChanged {
        id: run.id.to_string(),
        number: pull.number,
        why,
    };
    if now.state != "open" {
        return Err(changed(format!("it is {} now", now.state)));
    }
    let head = now
        .head
        .repo
        .as_ref()
        .ok_or_else(|| changed("its head repository no longer exists".to_owned()))?;
    if !head.full_name.eq_ignore_ascii_case(&pull.head_repo) || now.head.name != pull.head_ref {
        return Err(changed(format!(
            "its head is {}:{} on GitHub and the run's record says {}:{}",
            head.full_name, now.head.name, pull.head_repo, pull.head_ref
        )));
    }
    Ok(crate::store::PullRecord {
        head_repo: head.full_name.clone(),
        head_clone_url: head.clone_url.clone(),
        maintainer_can_modify: now.maintainer_can_modify,
        ..pull.clone()
    })
}

/// Gives a pull request's run its result back: its commits pushed onto
/// the pull request's own branch when forq may push there (the head is in
/// the base repository, or its author lets maintainers edit it). A fork's
/// pull request whose author does not gets the fix as a patch in a
/// comment ([`suggest_patch`]): a fork's commits never go into the base
/// repository, where its `on: push` workflows would run them with the
/// repository's secrets. Then a comment on the pull request, once.
async fn push_to_pull(
    store: &Store,
    github: &Github,
    run: &Run,
    pull: &crate::store::PullRecord,
    ws: &Path,
    branch: &str,
    options: &PushOptions,
) -> Result<Pushed, PublishError> {
    let pull = &pull_now(github, run, pull).await?;
    let head_remote = git::git(ws, &["remote", "get-url", "pr-head"]).await.ok();
    if head_remote
        .as_deref()
        .is_some_and(|url| url != pull.head_clone_url)
    {
        // The remote was made from the run's record: GitHub's word wins.
        git::git(
            ws,
            &["remote", "set-url", "--", "pr-head", &pull.head_clone_url],
        )
        .await?;
    }
    let onto_head = pull.pushes_to_head() && head_remote.is_some();
    let same_repo = pull.head_repo.eq_ignore_ascii_case(&pull.repo);
    if !onto_head && !same_repo {
        return suggest_patch(store, github, run, pull).await;
    }
    let (remote, dest) = match onto_head {
        true => ("pr-head", pull.head_ref.as_str()),
        // A pull request within the base repository whose head this
        // machine cannot reach: its commits are the base's already.
        false => ("origin", branch),
    };
    git::check_remote(ws, remote, options.local_paths).await?;
    // A maintainer pushes to a fork's branch with the base repository's
    // rights (the author allowed edits): the base's installation token.
    // Only to the host the base repository is on: a head elsewhere gets
    // no token of the base's.
    let url = git::git(ws, &["remote", "get-url", remote]).await?;
    let origin = git::git(ws, &["remote", "get-url", "origin"]).await?;
    let host = |u: &str| {
        u.strip_prefix("https://")
            .and_then(|rest| rest.split('/').next())
            .map(str::to_ascii_lowercase)
    };
    let credential = match host(&url) {
        Some(h) if Some(&h) == host(&origin).as_ref() => github.push_token(&pull.repo).await?,
        _ => None,
    };
    // Onto the head, the branch must still be where the run began (or
    // where this run pushed it): never over the author's newer commits.
    let target = Target {
        remote,
        dest,
        first: onto_head.then_some(pull.head_sha.as_str()),
        credential: credential.as_deref(),
    };
    let mut out = push_branch(store, run, ws, branch, &target, options.local_paths).await?;
    let commit = out.commit.clone();
    let short = &commit[..commit.len().min(12)];
    let lines = run.patch_lines.unwrap_or(0);
    let plural = if lines == 1 { "" } else { "s" };
    let text = if onto_head {
        store.transition(
            &run.id,
            State::PrOpened,
            &format!("pushed to {}", pull_url(pull)),
        )?;
        format!(
            "forq pushed {short} onto this pull request's branch {}: its failing tests pass now, and so does the rest of the suite ({lines} line{plural} changed, run `{}`). A person approved the push.",
            code(&pull.head_ref),
            run.id
        )
    } else {
        let body = format!(
            "Makes the failing tests of #{} pass ({lines} line{plural} changed), found by forq run `{}` and run against the whole suite on a fresh sandbox. A person pushed this branch.",
            pull.number, run.id
        );
        let pr = github
            .open_pull(
                &pull.repo,
                &format!("Fix the failing checks of #{}", pull.number),
                branch,
                &pull.head_ref,
                &body,
            )
            .await?;
        store.transition(&run.id, State::PrOpened, &pr.html_url)?;
        let text = format!(
            "forq proposes {} against this pull request's branch {}: its failing tests pass there ({lines} line{plural} changed, run `{}`).",
            pr.html_url,
            code(&pull.head_ref),
            run.id
        );
        out.pull_request = Some(pr);
        text
    };
    tell_pull(store, github, run, pull, text, &mut out).await?;
    Ok(out)
}

/// Comments `text` on `pull` (with the contract check's report), once per
/// run; a comment that fails is said in `out`.
async fn tell_pull(
    store: &Store,
    github: &Github,
    run: &Run,
    pull: &crate::store::PullRecord,
    text: String,
    out: &mut Pushed,
) -> Result<(), PublishError> {
    let text = match contract_report(store, run)? {
        Some(report) => format!("{text}\n\n{report}"),
        None => text,
    };
    match crate::answer::say_once(
        store,
        github,
        &pull.repo,
        pull.number,
        &format!("result-{}", run.id),
        &text,
        &[],
    )
    .await
    {
        Ok(crate::answer::Said::Now(url) | crate::answer::Said::Before(url)) => {
            out.commented = Some(url);
        }
        Err(e) => out.comment_failed = Some(e.to_string()),
    }
    Ok(())
}

/// The most of a patch a comment carries (GitHub takes 65,536 characters).
const MAX_SUGGESTED: usize = 60_000;

/// Gives a fork's pull request whose author does not let maintainers push
/// its fix as a patch in a comment, to apply on its branch: nothing is
/// pushed anywhere. The patch is the run's own (`fix.patch`, then
/// `ripple.patch`), fenced whole; one too long for a comment is named,
/// with the command that prints it.
async fn suggest_patch(
    store: &Store,
    github: &Github,
    run: &Run,
    pull: &crate::store::PullRecord,
) -> Result<Pushed, PublishError> {
    let mut patch = String::new();
    for name in ["fix.patch", "ripple.patch"] {
        if let Some(bytes) = store.artifact(&run.id, name)? {
            patch.push_str(&String::from_utf8_lossy(&bytes));
        }
    }
    let lines = run.patch_lines.unwrap_or(0);
    let plural = if lines == 1 { "" } else { "s" };
    let head = code(&pull.head_ref);
    let mut text = format!(
        "forq has a fix for this pull request's failing tests ({lines} line{plural} changed, run `{}`), and the rest of the suite passes with it. Its author does not let maintainers push to {head}, and forq never pushes a fork's commits into this repository, so here it is as a patch: on {head}, save it as `fix.patch` and run `git apply fix.patch`.",
        run.id
    );
    if patch.is_empty() {
        text.push_str(&format!(
            "\n\nThe patch is not in forq's store: `forq runs patch {}` on the machine that ran it prints it.",
            run.id
        ));
    } else if patch.len() > MAX_SUGGESTED {
        text.push_str(&format!(
            "\n\nThe patch is {} lines, too long for a comment: `forq runs patch {}` prints it.",
            patch.lines().count(),
            run.id
        ));
    } else {
        text.push_str(&format!(
            "\n\n<details><summary>fix.patch</summary>\n\n{}\n\n</details>",
            crate::markdown::fenced(&patch, "diff")
        ));
    }
    store.transition(
        &run.id,
        State::PrOpened,
        &format!("suggested as a patch on {}", pull_url(pull)),
    )?;
    let mut out = Pushed {
        run: run.id.to_string(),
        remote: String::new(),
        branch: pull.head_ref.to_string(),
        commit: String::new(),
        pull_request: None,
        comment_failed: None,
        commented: None,
        suggested: true,
    };
    tell_pull(store, github, run, pull, text, &mut out).await?;
    Ok(out)
}

/// What the contract check found, as Markdown, when it found a changed
/// definition: the reviewer's first question (after the ripple's
/// adaptation, when there was one).
fn contract_report(store: &Store, run: &Run) -> Result<Option<String>, PublishError> {
    let checked = match store.checkpointed(&run.id, crate::contract::ADAPTED)? {
        Some(c) => Some(c),
        None => store.checkpointed(&run.id, crate::contract::CONTRACT)?,
    };
    Ok(checked
        .and_then(|c| serde_json::from_value::<crate::contract::Report>(c).ok())
        .filter(|r| !r.changed.is_empty())
        .map(|r| r.markdown()))
}

/// Where a run's branch goes.
struct Target<'a> {
    /// The remote (checked already).
    remote: &'a str,
    /// The remote's branch.
    dest: &'a str,
    /// The commit the remote's branch must be at the first time this run
    /// pushes there (`None`: it must not exist).
    first: Option<&'a str>,
    /// A token for an HTTPS remote.
    credential: Option<&'a str>,
}

/// Pushes `branch` of `ws` to `target`, forcing only over what this run
/// pushed there before (or `target.first`), and records the push.
async fn push_branch(
    store: &Store,
    run: &Run,
    ws: &Path,
    branch: &str,
    target: &Target<'_>,
    local_paths: bool,
) -> Result<Pushed, PublishError> {
    let expected = store
        .checkpointed(&run.id, "pushed")?
        .filter(|p| p["remote"] == json!(target.remote))
        .and_then(|p| p["commit"].as_str().map(str::to_owned))
        .or_else(|| target.first.map(str::to_owned));
    let commit = git::git(ws, &["rev-parse", &format!("refs/heads/{branch}")]).await?;
    git::push(
        ws,
        &git::PushSpec {
            remote: target.remote,
            branch,
            dest: Some(target.dest),
            expected: expected.as_deref(),
            local_paths,
            credential: target.credential,
        },
    )
    .await?;
    store.checkpoint(
        &run.id,
        "pushed",
        &json!({"remote": target.remote, "branch": target.dest, "commit": commit}),
    )?;
    Ok(Pushed {
        run: run.id.to_string(),
        remote: target.remote.to_owned(),
        branch: target.dest.to_owned(),
        commit,
        pull_request: None,
        comment_failed: None,
        commented: None,
        suggested: false,
    })
}

/// A pull request's page, as its repository and number say.
fn pull_url(pull: &crate::store::PullRecord) -> String {
    format!("{}#{}", pull.repo, pull.number)
}

/// The token a push to `remote` carries: for a GitHub repository over
/// HTTPS, the token forq speaks with there (the App's installation token:
/// a repository the App is not installed on is refused); else none.
async fn push_credential(
    github: &Github,
    ws: &Path,
    remote: &str,
) -> Result<Option<String>, PublishError> {
    let url = git::git(ws, &["remote", "get-url", remote])
        .await
        .unwrap_or_else(|_| remote.to_owned());
    match repo_slug(&url) {
        Ok(slug) if url.starts_with("https://") => Ok(github.push_token(&slug).await?),
        _ => Ok(None),
    }
}

/// A repository holding run `run`'s `branch` as it was committed, made
/// from the branch bundle the store keeps (`runs/ID/restored/repo`): a
/// shallow clone of the run's repository at its seed with the bundle's
/// commits on top, or, for a copied repository, the bundle alone.
///
/// The bundle and the checkpoint are a stranger's (any worker sharing the
/// store wrote them): the seed's commit is an [`ObjectId`] given to git
/// after `--`, and the branch is taken only when each of its commits after
/// the seed is the run's own — its patch, then its ripple's — applied to
/// the seed, with nothing else in between ([`check_restored`]).
async fn restore(
    store: &Store,
    run: &Run,
    branch: &BranchName,
    state_dir: &Path,
) -> Result<std::path::PathBuf, PublishError> {
    let no_workspace = || PublishError::NoWorkspace {
        id: run.id.to_string(),
    };
    let refused = |reason: String| PublishError::Restore {
        id: run.id.to_string(),
        reason,
    };
    let bundle = store
        .artifact(&run.id, "branch.bundle")?
        .ok_or_else(no_workspace)?;
    let dir = state_dir
        .join("runs")
        .join(run.id.as_str())
        .join("restored");
    let seeded = store
        .checkpointed(&run.id, "seeded")?
        .ok_or_else(no_workspace)?;
    let seeded = crate::seed::Seeded::stored(seeded, &dir.join("repo")).map_err(refused)?;
    let io = |e: std::io::Error| refused(e.to_string());
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(io)?;
    }
    std::fs::create_dir_all(&dir).map_err(io)?;
    let file = dir.join("branch.bundle");
    std::fs::write(&file, &bundle).map_err(io)?;
    let repo = seeded.workspace.clone();
    if seeded.how == "clone" {
        forq_bootstrap::clone_shallow(&run.repo, &repo, &forq_bootstrap::CloneOptions::default())
            .await
            .map_err(|e| refused(e.to_string()))?;
        let have = format!("{}^{{commit}}", seeded.head);
        if git::git(&repo, &["cat-file", "-e", &have]).await.is_err() {
            git::git(
                &repo,
                &["fetch", "-q", "--depth", "1", "--", "origin", &seeded.head],
            )
            .await?;
        }
    } else {
        std::fs::create_dir_all(&repo).map_err(io)?;
        git::git(&repo, &["init", "-q"]).await?;
    }
    let refspec = format!("refs/heads/{branch}:refs/heads/{branch}");
    git::git(
        &repo,
        &["fetch", "-q", "--", &file.to_string_lossy(), &refspec],
    )
    .await?;
    check_restored(store, run, &seeded, &repo, branch)
        .await
        .map_err(refused)?;
    Ok(repo)
}

/// Whether `branch` of the restored `repo` is the run's own work: its
/// commits after the seed are one per patch the run keeps (`fix.patch`,
/// then `ripple.patch` when it has one), each the one before with that
/// patch applied; for a copied repository, the first commit is the seed's
/// tree itself. Anything else — another commit, another tree, a history
/// that does not start at the seed — is refused with what differs.
async fn check_restored(
    store: &Store,
    run: &Run,
    seeded: &crate::seed::Seeded,
    repo: &Path,
    branch: &BranchName,
) -> Result<(), String> {
    let tip = format!("refs/heads/{branch}");
    // Each line a commit and its parents, oldest first: one parent at
    // most, or the branch is none of forq's.
    let listed = git::git(repo, &["rev-list", "--reverse", "--parents", &tip, "--"])
        .await
        .map_err(|e| e.to_string())?;
    if listed.lines().any(|l| l.split(' ').count() > 2) {
        return Err("the bundle's branch holds a merge: forq's branches never do".to_owned());
    }
    let mut commits: Vec<&str> = listed.lines().filter_map(|l| l.split(' ').next()).collect();
    // The seed: a clone's head is the first commit before the run's own;
    // a copy's seed commit is the bundle's first, with the seed's tree.
    let seed_at = if seeded.how == "clone" {
        let Some(at) = commits.iter().position(|c| *c == seeded.head.as_str()) else {
            return Err(format!(
                "the bundle's branch does not start at the run's seed {}",
                seeded.head.short()
            ));
        };
        at
    } else {
        0
    };
    let seed = commits
        .get(seed_at)
        .copied()
        .ok_or("the bundle's branch is empty")?;
    let tree_of = |c: String| async move {
        git::git(
            repo,
            &["rev-parse", "--verify", "-q", &format!("{c}^{{tree}}")],
        )
        .await
        .map_err(|e| e.to_string())
    };
    if let Some(want) = &seeded.tree {
        if tree_of(seed.to_owned()).await? != want.as_str() {
            return Err("the bundle's seed commit does not hold the run's seed tree".to_owned());
        }
    }
    let mut patches = Vec::new();
    for name in ["fix.patch", "ripple.patch"] {
        if let Some(p) = store.artifact(&run.id, name).map_err(|e| e.to_string())? {
            patches.push((name, p));
        }
    }
    let after: Vec<&str> = commits.split_off(seed_at + 1);
    if after.len() != patches.len() {
        return Err(format!(
            "the bundle's branch has {} commit(s) after the seed; the run kept {} patch(es)",
            after.len(),
            patches.len()
        ));
    }
    let mut before = seed.to_owned();
    for (commit, (name, patch)) in after.iter().zip(&patches) {
        let expected = tree_with(repo, &before, patch)
            .await
            .map_err(|e| format!("{name} does not apply where the run's branch has it: {e}"))?;
        if tree_of((*commit).to_owned()).await? != expected {
            return Err(format!(
                "the bundle's commit {} is not the run's {name} applied to the commit before it",
                &commit[..commit.len().min(12)]
            ));
        }
        before = (*commit).to_owned();
    }
    Ok(())
}

/// The tree `patch` makes of commit `base` in `repo`, made in an index
/// of its own (the repository's index and work tree are not touched).
async fn tree_with(repo: &Path, base: &str, patch: &[u8]) -> Result<String, GitError> {
    let index = repo.join(".git/forq-check-index");
    let file = repo.join(".git/forq-check.patch");
    let _ = std::fs::remove_file(&index);
    std::fs::write(&file, patch).map_err(GitError::Spawn)?;
    let index = index.to_string_lossy().into_owned();
    let env = [("GIT_INDEX_FILE", index.as_str())];
    git::git_env(repo, &["read-tree", base], &env).await?;
    git::git_env(
        repo,
        &[
            "apply",
            "--cached",
            "--whitespace=nowarn",
            &file.to_string_lossy(),
        ],
        &env,
    )
    .await?;
    git::git_env(repo, &["write-tree"], &env).await
}

/// Opens the pull request of run `run`'s pushed branch (its body with the
/// contract check's findings) and tells the issue when it is on the same
/// GitHub; a comment that fails is said in `out`, not an error.
async fn open_pull_request(
    store: &Store,
    github: &Github,
    run: &Run,
    ws: &Path,
    remote: &str,
    options: &PushOptions,
    out: &mut Pushed,
) -> Result<(), PublishError> {
    let branch = &out.branch;
    let slug = match &options.github_repo {
        Some(s) => repo_slug(s)?,
        None => match issue_on_github(run) {
            Some((slug, _)) => slug,
            None => repo_slug(&git::git(ws, &["remote", "get-url", remote]).await?)
                .map_err(|_| PublishError::NoGithubRepo)?,
        },
    };
    let seeded = store.checkpointed(&run.id, "seeded")?;
    let base = options
        .base
        .clone()
        .or_else(|| {
            seeded
                .as_ref()
                .and_then(|s| s["base"].as_str().map(str::to_owned))
        })
        .unwrap_or_else(|| "main".to_owned());
    let title = format!("Fix #{}: {}", run.issue.id, run.issue.title);
    let mut body = format!(
        "Fixes #{}.\n\nThe patch was found by forq run `{}` and passed the repository's own tests on a fresh sandbox ({} line{} changed). A person pushed this branch.",
        run.issue.id,
        run.id,
        run.patch_lines.unwrap_or(0),
        if run.patch_lines == Some(1) { "" } else { "s" }
    );
    if let Some(report) = contract_report(store, run)? {
        body.push_str("\n\n");
        body.push_str(&report);
    }
    let pr = github
        .open_pull(&slug, &title, branch, &base, &body)
        .await?;
    store.transition(&run.id, State::PrOpened, &pr.html_url)?;
    // The issue, when it is on the same GitHub, hears of it, once.
    if let Some((issue_slug, number)) = issue_on_github(run) {
        if issue_slug == slug {
            let text = format!("forq proposes a fix in {} (run `{}`).", pr.html_url, run.id);
            let kind = format!("proposed-{}", pr.number);
            match crate::answer::say_once(store, github, &slug, number, &kind, &text, &[]).await {
                Ok(crate::answer::Said::Now(url) | crate::answer::Said::Before(url)) => {
                    out.commented = Some(url);
                }
                Err(e) => out.comment_failed = Some(e.to_string()),
            }
        }
    }
    out.pull_request = Some(pr);
    Ok(())
}

/// The GitHub repository and number of the run's issue, when it is one
/// (`https://HOST/OWNER/REPO/issues/N`).
pub fn issue_on_github(run: &Run) -> Option<(String, u64)> {
    let url = run.issue.url.as_deref()?;
    let parts: Vec<&str> = url.trim_end_matches('/').split('/').collect();
    match parts.as_slice() {
        [.., owner, repo, "issues" | "pull", n] => {
            Some((format!("{owner}/{repo}"), n.parse().ok()?))
        }
        _ => None,
    }
}

/// What to do to a run's GitHub issue.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum IssueAction {
    /// Comment this text.
    Comment(String),
    /// Add these labels.
    Label(Vec<String>),
    /// Close it, with a comment first when given.
    Close(Option<String>),
}

/// Does `action` to run `run`'s GitHub issue; what was done, in a line.
pub async fn act_on_issue(
    github: &Github,
    run: &Run,
    action: &IssueAction,
) -> Result<String, PublishError> {
    let (slug, number) = issue_on_github(run).ok_or_else(|| PublishError::NotOnGithub {
        id: run.id.to_string(),
        from: run.issue.source.clone(),
    })?;
    Ok(match action {
        IssueAction::Comment(text) => {
            let url = github.comment(&slug, number, text).await?;
            format!("commented on {slug}#{number}: {url}")
        }
        IssueAction::Label(labels) => {
            let names: Vec<&str> = labels.iter().map(String::as_str).collect();
            github.add_labels(&slug, number, &names).await?;
            format!("labelled {slug}#{number}: {}", labels.join(", "))
        }
        IssueAction::Close(comment) => {
            if let Some(text) = comment {
                github.comment(&slug, number, text).await?;
            }
            github.close(&slug, number).await?;
            format!("closed {slug}#{number}")
        }
    })
}
