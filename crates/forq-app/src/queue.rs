//! Whole-queue burn-down: select issues from a source, make a run of each,
//! and run them in parallel, at most `jobs` at once and at most
//! `per_repo` on one repository (they share its gate cache and its
//! machine), each run starting only when both allow: nothing piles up.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use forq_sandbox::Backend;
use tokio::sync::Semaphore;

use crate::config::{Config, ConfigError};
use crate::github::{repo_slug, Github, GithubError};
use crate::ids::{BranchName, ObjectId};
use crate::pipeline::{Pipeline, RunError};
use crate::source::{self, SourceError};
use crate::store::{Action, ContextFile, IssueRecord, NewRun, PullRecord, Run, Store, StoreError};

/// Where the queue's issues come from.
#[derive(Debug, Clone)]
pub enum Source {
    /// A directory of Markdown issues; `repo` is the repository of those
    /// that name none.
    Local {
        /// The issue directory.
        dir: PathBuf,
        /// The default repository.
        repo: Option<String>,
    },
    /// A GitHub repository's open issues (`OWNER/REPO`), fixed in a
    /// shallow clone of `clone_url`.
    Github {
        /// `OWNER/REPO`.
        slug: String,
        /// What to clone.
        clone_url: String,
    },
    /// One GitHub issue, by number.
    GithubIssue {
        /// `OWNER/REPO`.
        slug: String,
        /// The issue's number.
        number: u64,
        /// What to clone.
        clone_url: String,
    },
    /// One GitHub pull request, by number: worked on from its head, its
    /// failing checks the target.
    GithubPull {
        /// `OWNER/REPO`.
        slug: String,
        /// The pull request's number.
        number: u64,
        /// What to clone (the base repository; its head is fetched as
        /// `refs/pull/N/head`).
        clone_url: String,
    },
    /// One issue given as text, on `repo`.
    Text {
        /// The issue.
        text: String,
        /// The repository.
        repo: String,
    },
}

impl Source {
    /// The source a request names: a directory of Markdown `issues` (on
    /// `repo` where they name none), one issue's `text` on `repo`, or a
    /// GitHub `repo` (its open issues, or one issue's URL). A local `repo`
    /// alone names no issues, and is refused with what to give.
    pub fn from_request(
        issues: Option<PathBuf>,
        text: Option<String>,
        repo: Option<String>,
    ) -> Result<Source, QueueError> {
        Ok(match (issues, text, repo) {
            (Some(dir), _, repo) => Source::Local { dir, repo },
            (None, Some(text), Some(repo)) => Source::Text { text, repo },
            (None, None, Some(repo)) if !Path::new(&repo).exists() => Source::github(&repo)?,
            (None, None, Some(repo)) => return Err(QueueError::NoIssues { repo: Some(repo) }),
            (None, _, None) => return Err(QueueError::NoIssues { repo: None }),
        })
    }

    /// A GitHub repository's issues, from its URL or `OWNER/REPO`, or one
    /// issue from its URL; the clone URL is on `GITHUB_SERVER_URL`
    /// (default `https://github.com`).
    pub fn github(spec: &str) -> Result<Source, GithubError> {
        // One issue's URL: https://github.com/OWNER/REPO/issues/N (or /pull/N).
        if let Some((repo, number)) = crate::github::issue_ref(spec) {
            let Source::Github { slug, clone_url } = Source::github(&repo)? else {
                return Err(GithubError::NotARepo(spec.to_owned()));
            };
            let path = spec.split(['#', '?']).next().unwrap_or(spec);
            if path.contains("/pull/") || path.contains("/pulls/") {
                return Ok(Source::GithubPull {
                    slug,
                    number,
                    clone_url,
                });
            }
            return Ok(Source::GithubIssue {
                slug,
                number,
                clone_url,
            });
        }
        let slug = repo_slug(spec)?;
        let server = std::env::var("GITHUB_SERVER_URL")
            .ok()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "https://github.com".to_owned());
        Ok(Source::Github {
            clone_url: format!("{}/{slug}.git", server.trim_end_matches('/')),
            slug,
        })
    }
}

/// Which issues, and what to do with them.
#[derive(Debug, Clone)]
pub struct Selection {
    /// Only issues with this label.
    pub label: Option<String>,
    /// At most this many.
    pub limit: Option<usize>,
    /// Triage only, fix, or as each repository's forq.yml says.
    pub action: Action,
    /// Context files for every run's workspace.
    pub context: Vec<ContextFile>,
}

/// Why issues could not be selected.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QueueError {
    /// The issue directory could not be read.
    #[error(transparent)]
    Source(#[from] SourceError),
    /// GitHub failed.
    #[error(transparent)]
    Github(#[from] GithubError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The request names no issues: only a local repository (`repo`), or
    /// nothing.
    #[error("{}", match repo {
        Some(repo) => format!("{repo} is a directory: name its issues (a directory of Markdown issues, or an issue's text)"),
        None => "name the issues: a directory of Markdown issues, a GitHub repository (https://github.com/OWNER/REPO), or an issue's text and its repository".to_owned(),
    })]
    NoIssues {
        /// The local repository given alone.
        repo: Option<String>,
    },
    /// A pull request's head repository was deleted.
    #[error("pull request #{number} of {slug} comes from a repository that no longer exists: there is no head to work from")]
    HeadGone {
        /// `OWNER/REPO`.
        slug: String,
        /// The pull request.
        number: u64,
    },
    /// A pull request's head or base, as GitHub named it, is not a commit
    /// id or a branch name.
    #[error("pull request #{number} of {slug} is not one forq works on: {why}")]
    OddPull {
        /// `OWNER/REPO`.
        slug: String,
        /// The pull request.
        number: u64,
        /// What in it is not.
        why: String,
    },
    /// A local issue names no repository.
    #[error("issue {0} names no repository: add `repo:` to its front matter, or give the queue a default repository")]
    NoRepo(String),
    /// A GitHub repository's forq.yml is invalid.
    #[error("{slug}'s {error}; fix it there, or give the queue settings for every run")]
    RemoteConfig {
        /// `OWNER/REPO`.
        slug: String,
        /// What is wrong, and where.
        error: ConfigError,
    },
}

/// The settings of a GitHub source's repository, read through the API
/// before anything is cloned (its `forq.yml`, else `.forq.yml`, else the
/// defaults): what the runs' first phase, triage, follows (funding, triage
/// settings). `None` for a local source (read from disk).
pub async fn remote_config(
    source: &Source,
    github: &Github,
) -> Result<Option<(String, Config)>, QueueError> {
    let (Source::Github { slug, clone_url }
    | Source::GithubIssue {
        slug, clone_url, ..
    }
    | Source::GithubPull {
        slug, clone_url, ..
    }) = source
    else {
        return Ok(None);
    };
    let config = github_config(github, slug).await?;
    Ok(Some((clone_url.clone(), config.unwrap_or_default())))
}

/// `slug`'s `forq.yml` (else `.forq.yml`) on its default branch, read
/// through the API; `None` when it has neither.
pub async fn github_config(github: &Github, slug: &str) -> Result<Option<Config>, QueueError> {
    for name in crate::config::FILE_NAMES {
        if let Some(text) = github.file(slug, name).await? {
            let config = Config::parse(&text, name).map_err(|error| QueueError::RemoteConfig {
                slug: slug.to_owned(),
                error,
            })?;
            return Ok(Some(config));
        }
    }
    Ok(None)
}

/// The issues `source` holds that `selection` picks, as runs to create.
pub async fn select(
    source: &Source,
    selection: &Selection,
    github: &Github,
) -> Result<Vec<NewRun>, QueueError> {
    let mut runs = Vec::new();
    match source {
        Source::Local { dir, repo } => {
            for local in source::read_dir(dir)? {
                if let Some(label) = &selection.label {
                    if !local.issue.labels.contains(label) {
                        continue;
                    }
                }
                let repo = match (&local.repo, repo) {
                    (Some(r), _) => absolute(r),
                    (None, Some(r)) => r.clone(),
                    (None, None) => return Err(QueueError::NoRepo(local.issue.source)),
                };
                runs.push(NewRun {
                    issue: local.issue,
                    repo,
                    action: selection.action,
                    context: selection.context.clone(),
                    requires: Vec::new(),
                });
            }
        }
        Source::Github { slug, clone_url } => {
            let issues = github
                .list_issues(slug, selection.label.as_deref(), false, selection.limit)
                .await?;
            for issue in issues {
                runs.push(NewRun {
                    issue: issue.record(),
                    repo: clone_url.clone(),
                    action: selection.action,
                    context: selection.context.clone(),
                    requires: Vec::new(),
                });
            }
        }
        Source::GithubIssue {
            slug,
            number,
            clone_url,
        } => {
            let issue = github.issue(slug, *number).await?;
            runs.push(NewRun {
                issue: issue.record(),
                repo: clone_url.clone(),
                action: selection.action,
                context: selection.context.clone(),
                requires: Vec::new(),
            });
        }
        Source::GithubPull {
            slug,
            number,
            clone_url,
        } => {
            let pull = github.pull(slug, *number).await?;
            let failures = github.check_failures(slug, &pull.head.sha).await?;
            runs.push(NewRun {
                issue: pull_record(slug, &pull, &failures)?,
                repo: clone_url.clone(),
                action: selection.action,
                context: selection.context.clone(),
                requires: Vec::new(),
            });
        }
        Source::Text { text, repo } => {
            let parsed = forq_agent::issue::Issue::from_text(text);
            runs.push(NewRun {
                issue: IssueRecord {
                    id: "text".to_owned(),
                    title: parsed.title,
                    body: parsed.body,
                    source: "text".to_owned(),
                    ..IssueRecord::default()
                },
                repo: repo.clone(),
                action: selection.action,
                context: selection.context.clone(),
                requires: Vec::new(),
            });
        }
    }
    if let Some(limit) = selection.limit {
        runs.truncate(limit);
    }
    Ok(runs)
}

/// The run's record of pull request `pull` on `slug`, whose head's checks
/// failed as `failures` say: the tests their logs name are its targets.
fn pull_record(
    slug: &str,
    pull: &crate::github::GhPullRequest,
    failures: &[crate::github::CheckFailure],
) -> Result<IssueRecord, QueueError> {
    let head = pull
        .head
        .repo
        .as_ref()
        .ok_or_else(|| QueueError::HeadGone {
            slug: slug.to_owned(),
            number: pull.number,
        })?;
    // GitHub's answer is a stranger's too: a head that is no commit id or
    // branch name is no pull request forq works on.
    let odd = |e: crate::ids::IdError| QueueError::OddPull {
        slug: slug.to_owned(),
        number: pull.number,
        why: e.to_string(),
    };
    let mut targets: Vec<String> = failures.iter().flat_map(|f| f.tests.clone()).collect();
    targets.sort();
    targets.dedup();
    let failed_checks: Vec<String> = failures
        .iter()
        .map(|f| match f.summary.is_empty() {
            true => format!("{} ({})", f.name, f.conclusion),
            false => format!("{} ({}): {}", f.name, f.conclusion, f.summary),
        })
        .collect();
    let mut body = pull.body.clone().unwrap_or_default();
    if !failed_checks.is_empty() {
        body.push_str("\n\nThe pull request's checks fail on its head:\n");
        for line in &failed_checks {
            body.push_str(&format!("- {line}\n"));
        }
    }
    Ok(IssueRecord {
        id: pull.number.to_string(),
        title: pull.title.clone(),
        body,
        source: pull.html_url.clone(),
        labels: pull.labels.iter().map(|l| l.name.clone()).collect(),
        author: pull.user.as_ref().map(|u| u.login.clone()),
        url: Some(pull.html_url.clone()),
        pull: Some(PullRecord {
            number: pull.number,
            repo: slug.to_owned(),
            head_sha: ObjectId::parse(&pull.head.sha).map_err(odd)?,
            head_ref: BranchName::parse(&pull.head.name).map_err(odd)?,
            head_repo: head.full_name.clone(),
            head_clone_url: head.clone_url.clone(),
            base_ref: BranchName::parse(&pull.base.name).map_err(odd)?,
            maintainer_can_modify: pull.maintainer_can_modify,
            failed_checks,
            targets_from: if targets.is_empty() {
                "local"
            } else {
                "checks"
            }
            .to_owned(),
        }),
        targets,
    })
}

fn absolute(p: &Path) -> String {
    p.canonicalize()
        .unwrap_or_else(|_| p.to_owned())
        .display()
        .to_string()
}

/// Splits `new` into the issues to run and the runs that already stand
/// for the others on the same repository: one not over yet (resume it
/// instead: `forq runs resume --interrupted`) or one that ended with a
/// patch (`patch_ready`, `pr_opened`). A run that was triaged, declined,
/// aborted or failed does not stand: its issue runs again. Issues given as
/// text are never the same issue; a pull request whose head moved is not
/// the same work.
pub fn split_standing(
    store: &Store,
    new: Vec<NewRun>,
) -> Result<(Vec<NewRun>, Vec<Run>), StoreError> {
    let existing = store.all()?;
    let mut fresh = Vec::new();
    let mut standing = Vec::new();
    for n in new {
        // A pull request with new commits is new work: its run stands for
        // the head it started from only.
        let same_head = |r: &Run| match (&r.issue.pull, &n.issue.pull) {
            (Some(a), Some(b)) => a.head_sha == b.head_sha,
            _ => true,
        };
        let found = existing.iter().find(|r| {
            n.issue.source != "text"
                && r.issue.id == n.issue.id
                && r.repo == n.repo
                && same_head(r)
                && (!r.state.is_terminal() || r.state.has_patch())
        });
        match found {
            Some(r) => standing.push(r.clone()),
            None => fresh.push(n),
        }
    }
    Ok((fresh, standing))
}

/// Records each of `new` as a queued run.
pub fn enqueue(store: &Store, new: &[NewRun]) -> Result<Vec<Run>, StoreError> {
    new.iter().map(|n| store.create(n)).collect()
}

/// Runs (or resumes) `runs` to their ends: at most `jobs` at once, at most
/// `per_repo` on one repository. Returns each run as it ended, in the
/// order given; a run that could not be executed is reported with why.
pub async fn run_all(
    pipeline: &Pipeline,
    runs: &[Run],
    jobs: usize,
    per_repo: usize,
) -> Vec<Result<Run, RunError>> {
    run_spread(pipeline, &[], runs, jobs, per_repo).await
}

/// A sandbox backend a queue is spread over, named for the run's events
/// (`tcp://10.0.0.7:2375`).
#[derive(Clone)]
pub struct Engine {
    /// How it is named.
    pub name: String,
    /// The backend on it.
    pub backend: Arc<dyn Backend>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").field("name", &self.name).finish()
    }
}

/// [`run_all`] spread over `engines` (none: the pipeline's own backend):
/// each engine runs at most `jobs` at once, and a run starts on the engine
/// with the fewest runs on it. Runs stay on this machine (the store, the
/// workspaces, the git loop); only their sandboxes go to the engines.
pub async fn run_spread(
    pipeline: &Pipeline,
    engines: &[Engine],
    runs: &[Run],
    jobs: usize,
    per_repo: usize,
) -> Vec<Result<Run, RunError>> {
    let jobs = jobs.max(1);
    let global = Arc::new(Semaphore::new(jobs * engines.len().max(1)));
    let engines: Arc<[Engine]> = engines.into();
    let loads = Arc::new(Mutex::new(vec![0usize; engines.len()]));
    let mut repos: HashMap<String, Arc<Semaphore>> = HashMap::new();
    let mut tasks = Vec::new();
    for run in runs {
        let repo_cap = repos
            .entry(run.repo.clone())
            .or_insert_with(|| Arc::new(Semaphore::new(per_repo.max(1))))
            .clone();
        let (global, pipeline, id) = (global.clone(), pipeline.clone(), run.id.clone());
        let (engines, loads) = (engines.clone(), loads.clone());
        tasks.push(tokio::spawn(async move {
            // The repository's slot first: a run waiting on its repository
            // does not hold one of the global slots.
            let _repo = repo_cap.acquire_owned().await;
            let _slot = global.acquire_owned().await;
            if engines.is_empty() {
                return pipeline.execute(&id).await;
            }
            // With jobs × engines slots, the least loaded engine has room.
            let taken = Taken::least_loaded(loads);
            let engine = &engines[taken.index];
            let _ =
                pipeline
                    .store()
                    .event(&id, "engine", serde_json::json!({"engine": engine.name}));
            pipeline.on(engine.backend.clone()).execute(&id).await
        }));
    }
    let mut out = Vec::new();
    for (task, run) in tasks.into_iter().zip(runs) {
        out.push(match task.await {
            Ok(r) => r,
            Err(e) => {
                tracing::error!(run = %run.id, "run task failed: {e}");
                Err(RunError::Panicked(run.id.to_string()))
            }
        });
    }
    out
}

/// A run's place on an engine, given back when the run ends (or panics).
struct Taken {
    loads: Arc<Mutex<Vec<usize>>>,
    index: usize,
}

impl Taken {
    fn least_loaded(loads: Arc<Mutex<Vec<usize>>>) -> Taken {
        let index = {
            let mut l = loads.lock().unwrap_or_else(|p| p.into_inner());
            let index = (0..l.len()).min_by_key(|&i| l[i]).unwrap_or(0);
            l[index] += 1;
            index
        };
        Taken { loads, index }
    }
}

impl Drop for Taken {
    fn drop(&mut self) {
        let mut l = self.loads.lock().unwrap_or_else(|p| p.into_inner());
        l[self.index] = l[self.index].saturating_sub(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repository_or_one_issue_from_github_urls() {
        match Source::github("https://github.com/o/r/issues/12").expect("issue") {
            Source::GithubIssue {
                slug,
                number,
                clone_url,
            } => {
                assert_eq!((slug.as_str(), number), ("o/r", 12));
                assert!(clone_url.ends_with("/o/r.git"), "{clone_url}");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            Source::github("o/r").expect("repo"),
            Source::Github { .. }
        ));
        assert!(Source::github("not a repo").is_err());
        assert!(matches!(
            Source::github("https://github.com/o/r/pull/7#discussion_r1").expect("pull"),
            Source::GithubPull { number: 7, .. }
        ));
    }

    #[test]
    fn a_pull_request_whose_head_moved_is_new_work() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(&dir.path().join("forq.db")).expect("store");
        let at = |sha: &str| {
            let mut n = NewRun::fix("9", "feature 9", "https://github.com/o/r.git");
            n.issue.pull = Some(PullRecord {
                number: 9,
                repo: "o/r".to_owned(),
                head_sha: ObjectId::parse(&sha.repeat(40)).expect("a commit id"),
                head_ref: BranchName::parse("feature").expect("a branch"),
                head_repo: "o/r".to_owned(),
                head_clone_url: String::new(),
                base_ref: BranchName::parse("main").expect("a branch"),
                maintainer_can_modify: false,
                failed_checks: Vec::new(),
                targets_from: "local".to_owned(),
            });
            n
        };
        let run = store.create(&at("a")).expect("create");
        store
            .transition(&run.id, crate::store::State::PatchReady, "fixed")
            .expect("patched");
        let (fresh, standing) = split_standing(&store, vec![at("a"), at("b")]).expect("split");
        assert_eq!(standing.len(), 1, "the same head: the patch stands");
        assert_eq!(
            fresh
                .iter()
                .map(|n| n.issue.pull.as_ref().map(|p| p.head_sha.as_str()))
                .collect::<Vec<_>>(),
            [Some("b".repeat(40).as_str())]
        );
    }
}
