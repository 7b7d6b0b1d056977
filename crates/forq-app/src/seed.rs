//! A run's workspace: its own copy of the repository, `.git` kept (the
//! patch is committed there), never the user's working tree.
//!
//! A git URL, or a directory that is a repository's root, is cloned
//! shallow (`--depth 1 --single-branch`, from its last commit); any other
//! directory (an example inside a bigger repository, an unversioned tree)
//! is copied, honouring its `.gitignore`, and committed as the seed. Both
//! are capped in size and wall clock. `.forq/` (forq's own records) is
//! excluded from git in every workspace.
//!
//! ```
//! use forq_app::seed::context_path;
//! use std::path::Path;
//!
//! let ws = Path::new("/runs/r1/workspace");
//! assert_eq!(context_path(ws, "docs/spec.md").unwrap(), ws.join("docs/spec.md"));
//! assert!(context_path(ws, "../secrets").is_err());
//! assert!(context_path(ws, "/etc/passwd").is_err());
//! ```

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, Instant};

use forq_bootstrap::{clone_shallow, is_git_url, CloneError, CloneOptions};
use serde::{Deserialize, Serialize};

use crate::git;
use crate::ids::ObjectId;
use crate::store::PullRecord;

/// Caps on seeding.
#[derive(Debug, Clone)]
pub struct SeedOptions {
    /// Size cap, `.git` included.
    pub max_bytes: u64,
    /// Wall-clock cap.
    pub timeout: Duration,
}

impl Default for SeedOptions {
    fn default() -> Self {
        SeedOptions {
            max_bytes: 512 << 20,
            timeout: Duration::from_secs(300),
        }
    }
}

/// What seeding made: the run's `seeded` checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Seeded {
    /// The workspace: where this machine keeps the run's (`runs/ID/
    /// workspace` under its state directory). Never read back from the
    /// store ([`Seeded::stored`] sets it): a path in a row is a
    /// stranger's, and could name any directory of this machine.
    #[serde(skip_deserializing)]
    pub workspace: PathBuf,
    /// `clone` or `copy`.
    pub how: String,
    /// The commit the run starts from.
    pub head: ObjectId,
    /// Its tree: what a seed made again elsewhere must match (a copy's
    /// commit differs every time, its tree does not).
    #[serde(default)]
    pub tree: Option<ObjectId>,
    /// The branch checked out, which pull requests go into.
    pub base: String,
    /// Files in the workspace (outside `.git`).
    pub files: usize,
    /// The repository tracked a `.forq` of its own, which seeding removed:
    /// `.forq` is forq's (its index, bootstrap record, journal), and a
    /// stranger's links there would let forq write or drop files outside
    /// the workspace.
    #[serde(default)]
    pub removed_forq: bool,
    /// For a pull request: the base branch's own `forq.yml` (or
    /// `.forq.yml`), as text, read before the head was checked out (`None`
    /// when it has none). A pull request's run follows it, not the head's:
    /// the head is the author's, and may be a stranger's fork.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_config: Option<String>,
}

impl Seeded {
    /// The `seeded` checkpoint `data` as read from the store, its
    /// workspace this machine's `workspace` for the run: refused when its
    /// commit or tree is not an object id, or its `how` is not forq's.
    pub fn stored(data: serde_json::Value, workspace: &Path) -> Result<Seeded, String> {
        let mut seeded: Seeded =
            serde_json::from_value(data).map_err(|e| format!("its seeded checkpoint: {e}"))?;
        if !matches!(seeded.how.as_str(), "clone" | "copy") {
            return Err(format!(
                "its seeded checkpoint: {:?} is no way forq seeds",
                seeded.how
            ));
        }
        seeded.workspace = workspace.to_owned();
        Ok(seeded)
    }
}

/// Why seeding failed. The workspace is removed in every case but
/// [`SeedError::Started`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SeedError {
    /// The run has started work: its workspace is not replaced.
    #[error("run {0} has started work in its workspace; seeding is refused (start a new run for a fresh copy)")]
    Started(String),
    /// The source does not exist.
    #[error("the repository {0} does not exist; give a directory or a git URL")]
    Missing(String),
    /// The clone failed.
    #[error(transparent)]
    Clone(#[from] CloneError),
    /// The copy grew past the cap.
    #[error("{source_dir} is larger than the seed cap of {} MiB; raise sandbox.max_seed_mb in forq.yml", .max_bytes >> 20)]
    TooLarge {
        /// The source.
        source_dir: String,
        /// The cap.
        max_bytes: u64,
    },
    /// The copy ran past the wall-clock cap.
    #[error(
        "copying {0} took longer than the seed timeout; raise sandbox.seed_timeout_s in forq.yml"
    )]
    Timeout(String),
    /// A file operation failed.
    #[error("cannot seed {path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// git failed.
    #[error(transparent)]
    Git(#[from] git::GitError),
    /// The pull request's head is no longer the commit it was queued at.
    #[error("pull request #{number} moved: its head is {now} now, the run was queued at {queued}; queue it again")]
    PullMoved {
        /// The pull request.
        number: u64,
        /// The head when the run was queued.
        queued: String,
        /// The head now.
        now: String,
    },
    /// A pull request's repository is a directory, not a clone.
    #[error(
        "{0}: a pull request's run starts from a clone of its repository, not a copied directory"
    )]
    PullNotCloned(String),
    /// A context file would land outside the workspace.
    #[error(
        "context file {0}: it must be a relative path inside the workspace (no `..`, not absolute)"
    )]
    Outside(String),
}

/// Seeds `workspace` (which must not exist, or be empty) from `source`.
pub async fn seed(
    source: &str,
    workspace: &Path,
    options: &SeedOptions,
) -> Result<Seeded, SeedError> {
    let result = seed_inner(source, workspace, options, None).await;
    if result.is_err() {
        let _ = std::fs::remove_dir_all(workspace);
    }
    result
}

/// Seeds `workspace` at pull request `pull`'s head: `source` (its base
/// repository) is cloned, `refs/pull/N/head` fetched from it and checked
/// out as branch `forq-pr-N`. The head must be the commit the run was
/// queued at. The head repository becomes remote `pr-head` when it is
/// reached the way `source` is (where forq pushes a result the author
/// lets maintainers push).
pub async fn seed_pull(
    source: &str,
    workspace: &Path,
    options: &SeedOptions,
    pull: &PullRecord,
) -> Result<Seeded, SeedError> {
    let result = seed_inner(source, workspace, options, Some(pull)).await;
    if result.is_err() {
        let _ = std::fs::remove_dir_all(workspace);
    }
    result
}

/// Checks out `pull`'s head in the fresh clone `workspace`: the fetch and
/// the checkout within the seed's caps, as the clone was (a stranger's
/// head may hold a tree of any size).
async fn check_out_pull(
    workspace: &Path,
    pull: &PullRecord,
    caps: &CloneOptions,
) -> Result<(), SeedError> {
    let head = format!("refs/pull/{}/head", pull.number);
    forq_bootstrap::fetch_within(workspace, &head, caps).await?;
    let at = git::git(workspace, &["rev-parse", "FETCH_HEAD"]).await?;
    if at != pull.head_sha {
        return Err(SeedError::PullMoved {
            number: pull.number,
            queued: pull.head_sha.to_string(),
            now: at,
        });
    }
    let branch = format!("forq-pr-{}", pull.number);
    forq_bootstrap::check_out_within(workspace, &branch, &at, caps).await?;
    add_head_remote(workspace, pull).await?;
    Ok(())
}

/// Adds `pull`'s head repository as remote `pr-head` of `workspace` when it
/// is reached the way origin is (the same transport: a head on another
/// host's scheme, or one that reads as an option, is no remote of forq's).
/// What a push onto the pull request's branch goes through.
async fn add_head_remote(workspace: &Path, pull: &PullRecord) -> Result<(), git::GitError> {
    let origin = git::git(workspace, &["remote", "get-url", "origin"]).await?;
    let url = pull.head_clone_url.as_str();
    let transport = |u: &str| u.split_once("://").map(|(scheme, _)| scheme.to_owned());
    let plain = !url.starts_with('-') && !url.chars().any(|c| c.is_whitespace() || c.is_control());
    if plain && transport(url).is_some() && transport(url) == transport(&origin) {
        git::git(workspace, &["remote", "add", "pr-head", url]).await?;
    }
    Ok(())
}

async fn seed_inner(
    source: &str,
    workspace: &Path,
    options: &SeedOptions,
    pull: Option<&PullRecord>,
) -> Result<Seeded, SeedError> {
    let clone = CloneOptions::default()
        .timeout(options.timeout)
        .max_bytes(options.max_bytes);
    let how = if is_git_url(source) {
        clone_shallow(source, workspace, &clone).await?;
        "clone"
    } else {
        let dir = Path::new(source);
        let dir = dir
            .canonicalize()
            .map_err(|_| SeedError::Missing(source.to_owned()))?;
        if dir.join(".git").exists() {
            let url = format!("file://{}", dir.display());
            clone_shallow(&url, workspace, &clone).await?;
            "clone"
        } else {
            copy_tree(&dir, workspace, options)?;
            git::init_commit(workspace, &format!("forq: seed from {}", dir.display())).await?;
            "copy"
        }
    };
    let mut base_config = None;
    if let Some(pull) = pull {
        if how != "clone" {
            return Err(SeedError::PullNotCloned(source.to_owned()));
        }
        base_config = base_settings(workspace).await;
        check_out_pull(workspace, pull, &clone).await?;
    }
    let removed_forq = remove_forq_dir(workspace).map_err(|source| SeedError::Io {
        path: workspace.join(".forq"),
        source,
    })?;
    git::exclude(workspace, ".forq/").map_err(|source| SeedError::Io {
        path: workspace.join(".git/info/exclude"),
        source,
    })?;
    let head = git::head(workspace).await?;
    let head = ObjectId::parse(&head).map_err(|e| {
        SeedError::Git(git::GitError::Failed {
            args: "rev-parse HEAD".to_owned(),
            dir: workspace.display().to_string(),
            message: e.to_string(),
        })
    })?;
    let tree = git::tree(workspace)
        .await
        .ok()
        .and_then(|t| ObjectId::parse(&t).ok());
    let base = match pull {
        // What a pull request against the pull request goes into.
        Some(p) => p.head_ref.to_string(),
        None => git::current_branch(workspace).await?,
    };
    let files = walkdir::WalkDir::new(workspace)
        .into_iter()
        .filter_entry(|e| e.file_name() != ".git")
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .count();
    Ok(Seeded {
        workspace: workspace.to_owned(),
        how: how.to_owned(),
        head,
        tree,
        base,
        files,
        removed_forq,
        base_config,
    })
}

/// The settings file of the commit checked out in the clone `workspace`,
/// as text, read from git's objects (never the work tree, never through a
/// link): at most 256 KiB of a regular file.
async fn base_settings(workspace: &Path) -> Option<String> {
    for name in crate::config::FILE_NAMES {
        let spec = format!("HEAD:{name}");
        let Ok(kind) = git::git(workspace, &["cat-file", "-t", &spec]).await else {
            continue;
        };
        let mode = git::git(workspace, &["ls-tree", "HEAD", "--", name])
            .await
            .unwrap_or_default();
        let size: u64 = git::git(workspace, &["cat-file", "-s", &spec])
            .await
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(u64::MAX);
        if kind != "blob" || !mode.starts_with("100") || size > 256 << 10 {
            return None;
        }
        return git::show(workspace, "HEAD", name).await.ok();
    }
    None
}

/// Removes a `.forq` the repository brought (a directory, a link, a file)
/// without following it; whether there was one.
fn remove_forq_dir(workspace: &Path) -> std::io::Result<bool> {
    let dir = workspace.join(".forq");
    match dir.symlink_metadata() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
        // `remove_dir_all` does not follow links inside the tree either.
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(&dir).map(|()| true),
        Ok(_) => std::fs::remove_file(&dir).map(|()| true),
    }
}

/// Copies `from` into `to`, honouring `.gitignore`, without `.git` and
/// `.forq`, within the caps.
fn copy_tree(from: &Path, to: &Path, options: &SeedOptions) -> Result<(), SeedError> {
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| SeedError::Io { path, source }
    };
    let started = Instant::now();
    let mut bytes = 0u64;
    std::fs::create_dir_all(to).map_err(io(to))?;
    let walker = ignore::WalkBuilder::new(from)
        .hidden(false)
        .git_ignore(true)
        .require_git(false)
        .filter_entry(|e| e.file_name() != ".git" && e.file_name() != ".forq")
        .build();
    for entry in walker {
        let entry = entry.map_err(|e| SeedError::Io {
            path: from.to_owned(),
            source: std::io::Error::other(e.to_string()),
        })?;
        let rel = entry.path().strip_prefix(from).unwrap_or(entry.path());
        if rel.as_os_str().is_empty() {
            continue;
        }
        let dest = to.join(rel);
        let kind = entry.file_type();
        if kind.is_some_and(|k| k.is_dir()) {
            std::fs::create_dir_all(&dest).map_err(io(&dest))?;
        } else if kind.is_some_and(|k| k.is_symlink()) {
            let target = std::fs::read_link(entry.path()).map_err(io(entry.path()))?;
            std::os::unix::fs::symlink(target, &dest).map_err(io(&dest))?;
        } else {
            bytes += std::fs::copy(entry.path(), &dest).map_err(io(&dest))?;
        }
        if bytes > options.max_bytes {
            return Err(SeedError::TooLarge {
                source_dir: from.display().to_string(),
                max_bytes: options.max_bytes,
            });
        }
        if started.elapsed() > options.timeout {
            return Err(SeedError::Timeout(from.display().to_string()));
        }
    }
    Ok(())
}

/// Where context file `relative` goes in `workspace`: a relative path
/// with no `..`, or an error.
pub fn context_path(workspace: &Path, relative: &str) -> Result<PathBuf, SeedError> {
    let p = Path::new(relative);
    let inside = !relative.is_empty()
        && p.components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if !inside {
        return Err(SeedError::Outside(relative.to_owned()));
    }
    Ok(workspace.join(p))
}

/// Writes context file `relative` into `workspace` (refusing paths that
/// leave it, through `..`, absolute paths or a symbolic link on the way).
pub fn add_context(workspace: &Path, relative: &str, content: &[u8]) -> Result<PathBuf, SeedError> {
    let dest = context_path(workspace, relative)?;
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| SeedError::Io { path, source }
    };
    let parent = dest.parent().unwrap_or(workspace);
    std::fs::create_dir_all(parent).map_err(io(parent))?;
    let real_ws = workspace.canonicalize().map_err(io(workspace))?;
    let real_parent = parent.canonicalize().map_err(io(parent))?;
    if !real_parent.starts_with(&real_ws) || dest.is_symlink() {
        return Err(SeedError::Outside(relative.to_owned()));
    }
    std::fs::write(&dest, content).map_err(io(&dest))?;
    Ok(dest)
}

/// A short account of a workspace for an agent's first prompt: the file
/// count and the top-level entries (directories with their file counts),
/// at most `max` entries, never a thousand-line listing.
pub fn summary(workspace: &Path, max: usize) -> String {
    let mut top: BTreeMap<String, usize> = BTreeMap::new();
    let mut total = 0usize;
    for entry in walkdir::WalkDir::new(workspace)
        .min_depth(1)
        .into_iter()
        .filter_entry(|e| e.file_name() != ".git" && e.file_name() != ".forq")
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
    {
        total += 1;
        let rel = entry.path().strip_prefix(workspace).unwrap_or(entry.path());
        let mut parts = rel.components();
        let first = parts
            .next()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .unwrap_or_default();
        let key = if parts.next().is_some() {
            format!("{first}/")
        } else {
            first
        };
        *top.entry(key).or_default() += 1;
    }
    let mut lines = vec![format!(
        "The repository is provided as context in the working directory: {total} file{}.",
        if total == 1 { "" } else { "s" }
    )];
    for (name, count) in top.iter().take(max) {
        if name.ends_with('/') {
            lines.push(format!(
                "- {name} ({count} file{})",
                if *count == 1 { "" } else { "s" }
            ));
        } else {
            lines.push(format!("- {name}"));
        }
    }
    if top.len() > max {
        lines.push(format!("- … and {} more entries", top.len() - max));
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_files_stay_inside_the_workspace() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = dir.path().join("ws");
        std::fs::create_dir(&ws).expect("mkdir");
        let written = add_context(&ws, "notes/spec.md", b"spec").expect("inside");
        assert_eq!(std::fs::read(written).expect("read"), b"spec");
        for bad in ["../x", "a/../../x", "/tmp/x", ""] {
            assert!(
                matches!(add_context(&ws, bad, b"x"), Err(SeedError::Outside(_))),
                "{bad}"
            );
        }
        // A link inside the workspace that points out of it is not a way out.
        std::os::unix::fs::symlink(dir.path(), ws.join("out")).expect("symlink");
        assert!(matches!(
            add_context(&ws, "out/x", b"x"),
            Err(SeedError::Outside(_))
        ));
        assert!(!dir.path().join("x").exists());
    }

    #[test]
    fn the_summary_counts_directories_instead_of_listing_them() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = dir.path();
        std::fs::create_dir_all(ws.join("src/deep")).expect("mkdir");
        for i in 0..1000 {
            std::fs::write(ws.join(format!("src/deep/f{i}.py")), "").expect("write");
        }
        std::fs::write(ws.join("README.md"), "").expect("write");
        let s = summary(ws, 20);
        assert!(s.contains("1001 files"), "{s}");
        assert!(s.contains("- src/ (1000 files)"), "{s}");
        assert!(s.contains("- README.md"), "{s}");
        assert!(s.lines().count() < 5, "{s}");
    }
}
