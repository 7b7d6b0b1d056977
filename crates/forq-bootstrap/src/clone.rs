//! Repositories given by URL: a shallow, single-branch clone (`.git` kept,
//! for diffs and commits later) with a wall-clock cap and a size cap, so a
//! hung or huge clone cannot wedge a run. Nothing of the repository runs:
//! hooks are off and submodules are not fetched.

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
    let mut child = forq_sandbox::host_command("git")
        .args([
            "-c",
            "core.hooksPath=/dev/null",
            "clone",
            "--depth",
            "1",
            "--single-branch",
            "--no-tags",
            "--quiet",
            "--",
            url,
        ])
        .arg(dest)
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
            url: url.to_owned(),
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
    let started = Instant::now();
    let failure = loop {
        match tokio::time::timeout(Duration::from_millis(250), child.wait()).await {
            Ok(Ok(status)) if status.success() => break None,
            Ok(Ok(_)) | Ok(Err(_)) => {
                let text = reader.await.unwrap_or_default();
                break Some(CloneError::Git {
                    url: url.to_owned(),
                    message: one_line(&text, 600),
                });
            }
            Err(_) if started.elapsed() > options.timeout => {
                break Some(CloneError::Timeout {
                    url: url.to_owned(),
                    timeout: options.timeout,
                })
            }
            Err(_) if disk_usage(dest) > options.max_bytes => {
                break Some(CloneError::TooLarge {
                    url: url.to_owned(),
                    max_bytes: options.max_bytes,
                })
            }
            Err(_) => {}
        }
    };
    let Some(error) = failure else {
        if disk_usage(dest) > options.max_bytes {
            let _ = std::fs::remove_dir_all(dest);
            return Err(CloneError::TooLarge {
                url: url.to_owned(),
                max_bytes: options.max_bytes,
            });
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
    let _ = std::fs::remove_dir_all(dest);
    Err(error)
}
