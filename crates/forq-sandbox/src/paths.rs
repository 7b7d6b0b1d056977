//! Confinement of caller-given paths to a workspace.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use crate::error::{Error, Result};

/// Checks that `rel` names something inside a workspace by its words alone:
/// relative, no `..`, no root. Returns it normalised (no `.` components).
/// A backend made outside this crate calls it on every path it is given
/// (it does not follow symbolic links: a backend with links on disk must
/// resolve them itself).
///
/// ```
/// use std::path::Path;
/// assert_eq!(forq_sandbox::workspace_path(Path::new("./src/a.py")).unwrap(), Path::new("src/a.py"));
/// assert!(forq_sandbox::workspace_path(Path::new("../etc/passwd")).is_err());
/// assert!(forq_sandbox::workspace_path(Path::new("/etc/passwd")).is_err());
/// ```
pub fn lexical(rel: &Path) -> Result<PathBuf> {
    let mut out = PathBuf::new();
    for comp in rel.components() {
        match comp {
            Component::Normal(part) => out.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                return Err(Error::PathEscape {
                    path: rel.to_path_buf(),
                    reason: "it contains `..`",
                })
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(Error::PathEscape {
                    path: rel.to_path_buf(),
                    reason: "it is absolute",
                })
            }
        }
    }
    Ok(out)
}

/// How many symbolic links one resolution may follow (as the kernel's 40).
const MAX_LINKS: usize = 40;

/// Resolves `rel` under the directory `root` (as the host sees it),
/// following symbolic links the way the sandbox would, and refuses any path
/// that leaves the workspace. `inside` is where the workspace appears to
/// the sandbox's processes: an absolute link target under it stays inside,
/// any other absolute target is outside. The result has no link left in it;
/// its last components need not exist.
///
/// The resolution is done by hand, component by component, rather than
/// with `canonicalize`: the root may be a view into another mount namespace
/// (`/proc/<pid>/root/...`), and absolute targets mean the sandbox's root,
/// not the host's.
pub(crate) fn confine(root: &Path, rel: &Path, inside: &Path) -> Result<PathBuf> {
    let rel = lexical(rel)?;
    let escape = |reason| Error::PathEscape {
        path: rel.clone(),
        reason,
    };
    let mut pending: VecDeque<OsString> = rel.iter().map(ToOwned::to_owned).collect();
    let mut resolved = PathBuf::new();
    let mut links = 0;
    while let Some(part) = pending.pop_front() {
        if part == ".." {
            if !resolved.pop() {
                return Err(escape("a symbolic link on it points outside the workspace"));
            }
            continue;
        }
        if part == "." {
            continue;
        }
        let candidate = resolved.join(&part);
        let full = root.join(&candidate);
        let is_link = full
            .symlink_metadata()
            .is_ok_and(|m| m.file_type().is_symlink());
        if !is_link {
            resolved = candidate;
            continue;
        }
        links += 1;
        if links > MAX_LINKS {
            return Err(escape("its symbolic links loop"));
        }
        let target = std::fs::read_link(&full).map_err(|e| Error::io("read the link", &full, e))?;
        let target = if target.is_absolute() {
            resolved = PathBuf::new();
            target
                .strip_prefix(inside)
                .map_err(|_| escape("a symbolic link on it points outside the workspace"))?
                .to_path_buf()
        } else {
            target
        };
        for (i, c) in target.iter().enumerate() {
            pending.insert(i, c.to_owned());
        }
    }
    Ok(root.join(resolved))
}

/// The regular file `rel` beneath `root` as confined for the sandbox
/// (links resolved the sandbox's way, [`confine`]), then opened through
/// the descriptor walk: a link swapped in after the resolution is refused,
/// not followed; a fifo or device is not read; nothing past `max` bytes.
pub(crate) fn read_confined(root: &Path, rel: &Path, inside: &Path, max: u64) -> Result<Vec<u8>> {
    let full = confine(root, rel, inside)?;
    let within = full.strip_prefix(root).unwrap_or(&full).to_path_buf();
    let read = crate::beneath::Tree::open(root)
        .and_then(|tree| match tree {
            Some(tree) => tree.read_capped(&within, max),
            None => Ok(None),
        })
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::InvalidData => Error::TooLarge {
                path: rel.to_owned(),
                max,
            },
            _ => Error::io("read", rel, e),
        })?;
    read.ok_or_else(|| {
        Error::io(
            "read",
            rel,
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "no regular file there (missing, a directory, a fifo or a device, or a link swapped in)",
            ),
        )
    })
}

/// File operations on a workspace directory the host can reach, each path
/// confined first.
#[derive(Debug)]
pub(crate) struct WorkspaceDir {
    /// The directory as this process reaches it.
    pub(crate) root: PathBuf,
    /// Where it appears to the sandbox's processes (see [`confine`]).
    pub(crate) inside: PathBuf,
    /// The host id that what forq creates here must belong to, when the
    /// sandbox's root is not forq's own uid (native, as root).
    pub(crate) owner: Option<u32>,
}

impl WorkspaceDir {
    fn confine(&self, path: &Path) -> Result<PathBuf> {
        confine(&self.root, path, &self.inside)
    }

    /// Writes a file, creating parent directories: the path confined the
    /// sandbox's way, then written through the descriptor walk
    /// ([`crate::beneath::Tree::write`]), so a link swapped in after the
    /// confinement is refused rather than followed; what it creates goes
    /// to the sandbox's user.
    pub(crate) async fn write(&self, path: &Path, contents: &[u8]) -> Result<()> {
        let full = self.confine(path)?;
        let within = full.strip_prefix(&self.root).unwrap_or(&full).to_path_buf();
        let (root, contents, owner) = (self.root.clone(), contents.to_vec(), self.owner);
        tokio::task::spawn_blocking(move || {
            crate::beneath::Tree::open(&root)?
                .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))?
                .write(&within, &contents, owner)
        })
        .await
        .map_err(std::io::Error::other)
        .and_then(|r| r)
        .map_err(|e| Error::io("write", path, e))
    }

    /// Lists a directory, sorted by name.
    pub(crate) async fn list(&self, path: &Path) -> Result<Vec<crate::backend::DirEntry>> {
        let full = self.confine(path)?;
        let mut rd = tokio::fs::read_dir(&full)
            .await
            .map_err(|e| Error::io("list", path, e))?;
        let mut out = Vec::new();
        while let Some(entry) = rd
            .next_entry()
            .await
            .map_err(|e| Error::io("list", path, e))?
        {
            let meta = entry
                .metadata()
                .await
                .map_err(|e| Error::io("stat", entry.path(), e))?;
            out.push(crate::backend::DirEntry {
                name: entry.file_name().to_string_lossy().into_owned(),
                is_dir: meta.is_dir(),
                size: if meta.is_dir() { 0 } else { meta.len() },
            });
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// Deletes a file or a directory tree (never the root itself).
    pub(crate) async fn remove(&self, path: &Path) -> Result<()> {
        let full = self.confine(path)?;
        if full == self.root {
            return Err(Error::PathEscape {
                path: path.to_path_buf(),
                reason: "it is the workspace root itself",
            });
        }
        let meta = tokio::fs::symlink_metadata(&full)
            .await
            .map_err(|e| Error::io("remove", path, e))?;
        if meta.is_dir() {
            tokio::fs::remove_dir_all(&full).await
        } else {
            tokio::fs::remove_file(&full).await
        }
        .map_err(|e| Error::io("remove", path, e))
    }
}

/// The path as a `/`-separated string relative to a root, for patches.
pub(crate) fn display_rel(rel: &Path) -> String {
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexical_refuses_escapes() {
        assert!(lexical(Path::new("a/b.txt")).is_ok());
        assert_eq!(lexical(Path::new("./a/./b")).unwrap(), PathBuf::from("a/b"));
        assert!(matches!(
            lexical(Path::new("../x")),
            Err(Error::PathEscape { .. })
        ));
        assert!(matches!(
            lexical(Path::new("a/../../x")),
            Err(Error::PathEscape { .. })
        ));
        assert!(matches!(
            lexical(Path::new("/etc/passwd")),
            Err(Error::PathEscape { .. })
        ));
    }

    #[test]
    fn confine_follows_links_and_refuses_ones_out() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        std::fs::create_dir_all(root.join("sub/deep")).unwrap();
        let link =
            |target: &str, name: &str| std::os::unix::fs::symlink(target, root.join(name)).unwrap();
        link("/etc", "out");
        link("sub", "in");
        link("/workspace/sub/deep", "abs-in");
        link("../..", "sub/up");
        link("loop2", "loop1");
        link("loop1", "loop2");
        let ws = Path::new("/workspace");
        let ok = |rel: &str, want: &str| {
            assert_eq!(
                confine(&root, Path::new(rel), ws).unwrap(),
                root.join(want),
                "{rel}"
            )
        };
        ok("sub/new.txt", "sub/new.txt");
        ok("in/new.txt", "sub/new.txt");
        ok("abs-in/x", "sub/deep/x");
        ok("new/deeper/file", "new/deeper/file");
        for bad in ["out/passwd", "sub/up/x", "loop1"] {
            let err = confine(&root, Path::new(bad), ws).unwrap_err();
            assert!(matches!(err, Error::PathEscape { .. }), "{bad}: {err}");
        }
    }
}
