//! Repositories given by URL: a shallow, single-branch clone (`.git` kept,
//! for diffs and commits later) with a wall-clock cap and a size cap, so a
//! hung or huge clone cannot wedge a run. Nothing of the repository runs:
//! hooks are off and submodules are not fetched.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Caps on a clone.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CloneOptions {
    /// Wall-clock cap (default 5 minutes).
    pub timeout: Duration,
    /// Size cap on the clone on disk, `.git` included (default 2 GiB).
    pub max_bytes: u64,
}

impl Default for CloneOptions {
    fn default() -> Self {
        CloneOptions {
            timeout: Duration::from_secs(300),
            max_bytes: 2 << 30,
        }
    }
}

impl CloneOptions {
    /// Caps the wall clock.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
    /// Caps the size on disk.
    pub fn max_bytes(mut self, max_bytes: u64) -> Self {
        self.max_bytes = max_bytes;
        self
    }
}

/// Why a clone failed. The destination is removed in every case.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CloneError {
    /// The destination exists and is not an empty directory.
    #[error("{0:?} already exists and is not empty: give a new directory to clone into")]
    Exists(PathBuf),
    /// No temporary directory could be made to clone into.
    #[error("cannot make a temporary directory to clone into")]
    Temporary(#[source] std::io::Error),
    /// git could not be started.
    #[error("cannot run git to clone {url}: is git installed?")]
    Spawn {
        /// The URL.
        url: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// git failed.
    #[error("git could not clone {url}: {message}")]
    Git {
        /// The URL.
        url: String,
        /// The last lines git printed.
        message: String,
    },
    /// The clone ran past its wall-clock cap.
    #[error("cloning {url} took longer than {} s; raise the clone timeout or check the host", .timeout.as_secs())]
    Timeout {
        /// The URL.
        url: String,
        /// The cap.
        timeout: Duration,
    },
    /// The clone grew past its size cap.
    #[error("cloning {url} passed the size cap of {} MiB; raise it if the repository really is that large", .max_bytes >> 20)]
    TooLarge {
        /// The URL.
        url: String,
        /// The cap.
        max_bytes: u64,
    },
}

/// Whether `source` names a remote repository rather than a directory:
/// a URL with a scheme git fetches over (`https://`, `http://`, `ssh://`,
/// `git://`, `file://`) or scp-like `user@host:path`.
pub fn is_git_url(source: &str) -> bool {
    let schemes = ["https://", "http://", "ssh://", "git://", "file://"];
    if schemes.iter().any(|s| source.starts_with(s)) {
        return true;
    }
    // `git@github.com:owner/repo.git`; a local path has no `@` before a `:`.
    match source.split_once(':') {
        Some((host, _)) => host.contains('@') && !host.contains('/'),
        None => false,
    }
}

/// Bytes under `dir` (files only, symbolic links not followed).
fn disk_usage(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            if meta.is_dir() {
                stack.push(entry.path());
            } else {
                total += meta.len();
            }
        }
    }
    total
}

/// `text`'s non-empty lines joined with ` / `, at most `chars` long.
fn one_line(text: &str, chars: usize) -> String {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" / ")
        .chars()
        .take(chars)
        .collect()
}

/// Clones `url` into `dest` (created; it must not exist or be empty):
/// `git clone --depth 1 --single-branch`, without prompts, hooks or
/// submodules, within `options`' caps. On any failure `dest` is removed
/// and git's whole process group is killed.
pub async fn clone_shallow(
    url: &str,
    dest: &Path,
    options: &CloneOptions,
) -> Result<(), CloneError> {
    if dest.exists() && std::fs::read_dir(dest).map_or(true, |mut entries| entries.next().is_some())
    {
        return Err(CloneError::Exists(dest.to_owned()));
    }
    let words = [
        "clone",
        "--depth",
        "1",
        "--single-branch",
        "--no-tags",
        "--quiet",
        "--",
        url,
    ];
    let mut args: Vec<&OsStr> = words.iter().map(OsStr::new).collect();
    args.push(dest.as_os_str());
    let cloned = git_within(None, &args, dest, url, options).await;
    if cloned.is_err() {
        let _ = std::fs::remove_dir_all(dest);
    }
    cloned
}

/// Fetches `reference` (a pull request's `refs/pull/N/head`) from `origin`
/// into the clone at `repo`, one commit deep, to `FETCH_HEAD`: within
/// `options`' caps, counted over the whole clone with what it had. A
/// stranger's ref can be as large as any repository. The caller removes
/// the clone on failure.
pub async fn fetch_within(
    repo: &Path,
    reference: &str,
    options: &CloneOptions,
) -> Result<(), CloneError> {
    let args = [
        "fetch",
        "--depth",
        "1",
        "--no-tags",
        "--quiet",
        "origin",
        "--",
        reference,
    ]
    .map(OsStr::new);
    let what = format!("{reference} into {}", repo.display());
    git_within(Some(repo), &args, repo, &what, options).await
}

/// Checks out `rev` as branch `branch` in the clone at `repo`, within
/// `options`' caps: a small pack can hold a tree that fills a disk when
/// written out (a clone's own checkout is counted the same way). The
/// caller removes the clone on failure.
pub async fn check_out_within(
    repo: &Path,
    branch: &str,
    rev: &str,
    options: &CloneOptions,
) -> Result<(), CloneError> {
    let args = ["checkout", "--quiet", "-B", branch, rev, "--"].map(OsStr::new);
    let what = format!("{rev} in {}", repo.display());
    git_within(Some(repo), &args, repo, &what, options).await
}

/// Runs git with forq's own `args` (in `cwd` when given) without prompts,
/// hooks or credentials helpers that ask, within `options`' caps on the
/// wall clock and on the bytes under `watched`. On any failure git's whole
/// process group is killed; `what` names the work in the error.
async fn git_within(
    cwd: Option<&Path>,
    args: &[&OsStr],
    watched: &Path,
    what: &str,
    options: &CloneOptions,
) -> Result<(), CloneError> {
    let mut command = forq_sandbox::host_git();
    if let Some(cwd) = cwd {
        command.current_dir(cwd);
    }
    let mut child = command
        .args(["-c", "core.hooksPath=/dev/null"])
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_ASKPASS", "true")
        .env("SSH_ASKPASS", "true")
        .env("GIT_SSH_COMMAND", "ssh -o BatchMode=yes")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|source| CloneError::Spawn {
            url: what.to_owned(),
            source,
        })?;
    let group = child.id();
    let mut stderr = child.stderr.take();
    let reader = tokio::spawn(async move {
        let mut text = String::new();
        if let Some(s) = stderr.as_mut() {
            let _ = tokio::io::AsyncReadExt::read_to_string(s, &mut text).await;
        }
        text
    });
    let too_large = || CloneError::TooLarge {
        url: what.to_owned(),
        max_bytes: options.max_bytes,
    };
    let started = Instant::now();
    let failure = loop {
        match tokio::time::timeout(Duration::from_millis(250), child.wait()).await {
            Ok(Ok(status)) if status.success() => break None,
            Ok(Ok(_)) | Ok(Err(_)) => {
                let text = reader.await.unwrap_or_default();
                break Some(CloneError::Git {
                    url: what.to_owned(),
                    message: one_line(&text, 600),
                });
            }
            Err(_) if started.elapsed() > options.timeout => {
                break Some(CloneError::Timeout {
                    url: what.to_owned(),
                    timeout: options.timeout,
                })
            }
            Err(_) if disk_usage(watched) > options.max_bytes => break Some(too_large()),
            Err(_) => {}
        }
    };
    let Some(error) = failure else {
        if disk_usage(watched) > options.max_bytes {
            return Err(too_large());
        }
        return Ok(());
    };
    // git's helpers (remote-https, index-pack) share its process group.
    if let Some(pgid) = group {
        let _ = forq_sandbox::host_command("kill")
            .args(["-KILL", "--", &format!("-{pgid}")])
            .status()
            .await;
    }
    let _ = child.wait().await;
    Err(error)
}
