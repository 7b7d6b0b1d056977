//! Confinement of caller-given paths to a workspace.

use std::path::{Component, Path, PathBuf};

use crate::error::{Error, Result};

/// Checks that `rel` names something inside a workspace by its words alone:
/// relative, no `..`, no root. Returns it normalised (no `.` components).
pub(crate) fn lexical(rel: &Path) -> Result<PathBuf> {
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

/// Resolves `rel` under the host directory `root`, refusing any path that
/// leaves it, including through a symbolic link anywhere along the way.
/// The path itself need not exist; its deepest existing ancestor is checked.
pub(crate) fn confine(root: &Path, rel: &Path) -> Result<PathBuf> {
    let rel = lexical(rel)?;
    let full = root.join(&rel);
    let canon_root = root
        .canonicalize()
        .map_err(|e| Error::io("resolve", root, e))?;
    let mut probe = full.as_path();
    loop {
        match probe.canonicalize() {
            Ok(canon) => {
                if canon.starts_with(&canon_root) {
                    return Ok(full);
                }
                return Err(Error::PathEscape {
                    path: rel,
                    reason: "a symbolic link on it points outside the workspace",
                });
            }
            Err(_) if probe.symlink_metadata().is_ok() => {
                // A dangling link: where it would land is outside our control.
                return Err(Error::PathEscape {
                    path: rel,
                    reason: "a symbolic link on it does not resolve",
                });
            }
            Err(_) => match probe.parent() {
                Some(parent) if parent.starts_with(root) => probe = parent,
                _ => return Ok(full),
            },
        }
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
    fn confine_refuses_symlinks_out() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::os::unix::fs::symlink("/etc", root.join("out")).unwrap();
        std::os::unix::fs::symlink("sub", root.join("in")).unwrap();
        assert!(confine(&root, Path::new("sub/new.txt")).is_ok());
        assert!(confine(&root, Path::new("in/new.txt")).is_ok());
        assert!(confine(&root, Path::new("new/deeper/file")).is_ok());
        let err = confine(&root, Path::new("out/passwd")).unwrap_err();
        assert!(err.to_string().contains("points outside"), "{err}");
    }
}
