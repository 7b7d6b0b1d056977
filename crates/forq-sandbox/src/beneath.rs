//! Reading a tree whose contents a sandbox's occupants control, on the
//! host, without following their links.
//!
//! Every path resolves beneath the tree's root one component at a time,
//! each directory opened relative to its parent's descriptor with
//! `O_NOFOLLOW | O_DIRECTORY`, so a symbolic link anywhere on the way is
//! never a door: the path is simply not in the tree. The last component is
//! looked at with `AT_SYMLINK_NOFOLLOW`; a link there is data (its target
//! bytes), never followed. Because each step holds a descriptor, a link
//! swapped in between two steps cannot redirect the walk either.
//!
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` would do the same in one
//! call on Linux 5.6 and later; the descriptor walk is used everywhere
//! because it also works on older kernels and on the other Unixes the
//! docker backend builds for.

use std::collections::BTreeSet;
use std::ffi::{OsStr, OsString};
use std::io::Read as _;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

/// What a name beneath the root is, read without following it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Node {
    /// A directory.
    Dir,
    /// A regular file, with its permission bits.
    File { mode: u32 },
    /// A symbolic link, with its target as bytes.
    Link { target: Vec<u8> },
    /// A socket, fifo or device: nothing a patch can carry.
    Other,
}

/// A directory tree opened once; every read resolves beneath it.
#[derive(Debug)]
pub(crate) struct Tree {
    root: OwnedFd,
    path: PathBuf,
}

/// Whether an error means "not beneath the root as asked": missing, or a
/// link or a non-directory where a directory was needed (`O_NOFOLLOW` on a
/// link is `ELOOP` on Linux, `EMLINK` on FreeBSD).
fn absent(e: Errno) -> bool {
    matches!(e, Errno::NOENT | Errno::NOTDIR | Errno::LOOP | Errno::MLINK)
}

fn dir_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

impl Tree {
    /// Opens the directory `root` (a path forq chose; it is followed as
    /// given). A missing root is `None`.
    pub(crate) fn open(root: &Path) -> std::io::Result<Option<Tree>> {
        match rustix::fs::open(
            root,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(root_fd) => Ok(Some(Tree {
                root: root_fd,
                path: root.to_path_buf(),
            })),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Where the tree is on the host, for error messages.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The words of `rel` when it names something beneath the root (no
    /// `..`, not absolute); `None` otherwise.
    fn parts(rel: &Path) -> Option<Vec<&OsStr>> {
        let mut out = Vec::new();
        for c in rel.components() {
            match c {
                Component::Normal(p) => out.push(p),
                Component::CurDir => {}
                Component::ParentDir | Component::RootDir | Component::Prefix(_) => return None,
            }
        }
        Some(out)
    }

    /// The directory at `parts`, opened without following any link on the
    /// way; `None` when one of them is missing, a link or not a directory.
    fn open_dir(&self, parts: &[&OsStr]) -> std::io::Result<Option<OwnedFd>> {
        let mut fd = rustix::io::dup(&self.root)?;
        for part in parts {
            match rustix::fs::openat(&fd, *part, dir_flags(), Mode::empty()) {
                Ok(next) => fd = next,
                Err(e) if absent(e) => return Ok(None),
                Err(e) => return Err(e.into()),
            }
        }
        Ok(Some(fd))
    }

    /// The parent directory of `rel` and its last word; `None` when `rel` is
    /// empty or not beneath the root.
    fn parent<'a>(&self, rel: &'a Path) -> std::io::Result<Option<(OwnedFd, &'a OsStr)>> {
        let Some(parts) = Self::parts(rel) else {
            return Ok(None);
        };
        let Some((last, dirs)) = parts.split_last() else {
            return Ok(None);
        };
        Ok(self.open_dir(dirs)?.map(|fd| (fd, *last)))
    }

    /// What `rel` is, without following it; `None` when it is not beneath
    /// the root (missing, or reached only through a link). The empty path
    /// is the root itself.
    pub(crate) fn node(&self, rel: &Path) -> std::io::Result<Option<Node>> {
        if Self::parts(rel).is_some_and(|p| p.is_empty()) {
            return Ok(Some(Node::Dir));
        }
        let Some((dir, name)) = self.parent(rel)? else {
            return Ok(None);
        };
        let stat = match rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(s) => s,
            Err(e) if absent(e) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        #[allow(clippy::useless_conversion)] // `st_mode` is a u16 on FreeBSD
        let mode = u32::from(stat.st_mode);
        Ok(Some(match FileType::from_raw_mode(stat.st_mode) {
            FileType::Directory => Node::Dir,
            FileType::RegularFile => Node::File {
                mode: mode & 0o7777,
            },
            FileType::Symlink => {
                let target = rustix::fs::readlinkat(&dir, name, Vec::new())?;
                Node::Link {
                    target: target.into_bytes(),
                }
            }
            _ => Node::Other,
        }))
    }

    /// The content of the regular file `rel`; `None` when `rel` is not a
    /// regular file beneath the root.
    pub(crate) fn read(&self, rel: &Path) -> std::io::Result<Option<Vec<u8>>> {
        self.read_capped(rel, u64::MAX)
    }

    /// The content of the regular file `rel`, of at most `max` bytes:
    /// `None` when it is not a regular file beneath the root, an error
    /// naming the cap when it is larger (read no further than the cap,
    /// whatever size the file claims).
    pub(crate) fn read_capped(&self, rel: &Path, max: u64) -> std::io::Result<Option<Vec<u8>>> {
        let Some((dir, name)) = self.parent(rel)? else {
            return Ok(None);
        };
        let fd = match rustix::fs::openat(
            &dir,
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(e) if absent(e) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let stat = rustix::fs::fstat(&fd)?;
        if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
            return Ok(None);
        }
        let too_large = || {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "{} is larger than {max} bytes",
                    self.path.join(rel).display()
                ),
            )
        };
        if u64::try_from(stat.st_size).unwrap_or(u64::MAX) > max {
            return Err(too_large());
        }
        let mut content = Vec::new();
        std::fs::File::from(fd)
            .take(max.saturating_add(1))
            .read_to_end(&mut content)?;
        if content.len() as u64 > max {
            return Err(too_large());
        }
        Ok(Some(content))
    }

    /// Writes `contents` to the file `rel` beneath the root, making the
    /// directories on the way, all through descriptors: a link anywhere on
    /// the way, or as the file itself, is refused (never followed), so a
    /// link a sandbox's process swaps in while forq writes cannot send the
    /// write out of the tree; a fifo or device is not opened for writing
    /// (it would block or reach a device). What it creates is given to
    /// `owner` (uid and gid) when one is named, through its descriptor.
    pub(crate) fn write(
        &self,
        rel: &Path,
        contents: &[u8],
        owner: Option<u32>,
    ) -> std::io::Result<()> {
        let refused = |why: &str| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("{} {why}", self.path.join(rel).display()),
            )
        };
        let parts = Self::parts(rel).ok_or_else(|| refused("is not beneath the tree"))?;
        let (last, dirs) = parts.split_last().ok_or_else(|| refused("names no file"))?;
        let give = |fd: &OwnedFd| match owner {
            Some(id) => rustix::fs::fchown(
                fd,
                Some(rustix::fs::Uid::from_raw(id)),
                Some(rustix::fs::Gid::from_raw(id)),
            ),
            None => Ok(()),
        };
        let mut dir = rustix::io::dup(&self.root)?;
        for part in dirs {
            let made = match rustix::fs::mkdirat(&dir, *part, Mode::from_raw_mode(0o755)) {
                Ok(()) => true,
                Err(Errno::EXIST) => false,
                Err(e) => return Err(e.into()),
            };
            dir = match rustix::fs::openat(&dir, *part, dir_flags(), Mode::empty()) {
                Ok(next) => next,
                Err(e) if absent(e) => return Err(refused("has a link or a file on its way")),
                Err(e) => return Err(e.into()),
            };
            if made {
                give(&dir)?;
            }
        }
        let existed = rustix::fs::statat(&dir, *last, AtFlags::SYMLINK_NOFOLLOW).is_ok();
        let fd = match rustix::fs::openat(
            &dir,
            *last,
            OFlags::WRONLY | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK,
            Mode::from_raw_mode(0o644),
        ) {
            Ok(fd) => fd,
            Err(Errno::LOOP | Errno::MLINK) => return Err(refused("is a link")),
            Err(Errno::NXIO) => return Err(refused("is a fifo or a device")),
            Err(e) => return Err(e.into()),
        };
        let stat = rustix::fs::fstat(&fd)?;
        if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
            return Err(refused("is not a regular file"));
        }
        rustix::fs::ftruncate(&fd, 0)?;
        if !existed {
            give(&fd)?;
        }
        let mut file = std::fs::File::from(fd);
        std::io::Write::write_all(&mut file, contents)
    }

    /// The entries of the directory `rel` (names and what each is, not
    /// followed), sorted; empty when `rel` is not a directory beneath the
    /// root.
    pub(crate) fn list(&self, rel: &Path) -> std::io::Result<Vec<(OsString, bool)>> {
        let Some(parts) = Self::parts(rel) else {
            return Ok(Vec::new());
        };
        let Some(fd) = self.open_dir(&parts)? else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for entry in rustix::fs::Dir::read_from(&fd)? {
            let entry = entry?;
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            let name = OsStr::from_bytes(name).to_owned();
            let is_dir = match entry.file_type() {
                FileType::Directory => true,
                FileType::Unknown => {
                    rustix::fs::statat(&fd, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW)
                        .map(|s| FileType::from_raw_mode(s.st_mode) == FileType::Directory)
                        .unwrap_or(false)
                }
                _ => false,
            };
            out.push((name, is_dir));
        }
        out.sort();
        Ok(out)
    }

    /// Every non-directory path under the directory `rel` (relative to the
    /// root), skipping what `skip` says (given each path relative to the
    /// root); links are listed, never entered.
    pub(crate) fn walk_files(
        &self,
        rel: &Path,
        skip: &dyn Fn(&Path) -> bool,
    ) -> std::io::Result<BTreeSet<PathBuf>> {
        let mut out = BTreeSet::new();
        let mut pending = vec![rel.to_path_buf()];
        while let Some(dir) = pending.pop() {
            for (name, is_dir) in self.list(&dir)? {
                let path = dir.join(name);
                if skip(&path) {
                    continue;
                }
                if is_dir {
                    pending.push(path);
                } else {
                    out.insert(path);
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn writes_make_their_directories_and_never_pass_a_link_or_a_fifo() {
        let tmp = tempfile::tempdir().unwrap();
        let (root, outside) = (tmp.path().join("ws"), tmp.path().join("host"));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret"), "host\n").unwrap();
        let tree = Tree::open(&root).unwrap().unwrap();
        tree.write(Path::new("a/b/c.txt"), b"one\n", None).unwrap();
        tree.write(Path::new("a/b/c.txt"), b"2\n", None).unwrap();
        assert_eq!(std::fs::read(root.join("a/b/c.txt")).unwrap(), b"2\n");
        // A link swapped in where a directory was, or as the file: what a
        // sandbox's process can do between forq's look and its write.
        std::os::unix::fs::symlink(&outside, root.join("d")).unwrap();
        std::os::unix::fs::symlink(outside.join("secret"), root.join("f")).unwrap();
        assert!(tree.write(Path::new("d/secret"), b"pwned\n", None).is_err());
        assert!(tree.write(Path::new("d/new"), b"pwned\n", None).is_err());
        assert!(tree.write(Path::new("f"), b"pwned\n", None).is_err());
        assert!(tree
            .write(Path::new("../host/secret"), b"pwned\n", None)
            .is_err());
        assert_eq!(std::fs::read(outside.join("secret")).unwrap(), b"host\n");
        assert!(!outside.join("new").exists());
        // A fifo nobody reads: refused at once, not a write that blocks.
        rustix::fs::mknodat(
            rustix::fs::CWD,
            root.join("pipe"),
            FileType::Fifo,
            Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        assert!(tree.write(Path::new("pipe"), b"x", None).is_err());
    }

    #[test]
    fn links_are_data_and_never_doors() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "key\n").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join("src")).unwrap();
        std::fs::write(root.join("src/a.py"), "x = 1\n").unwrap();
        symlink(outside.path(), root.join("x")).unwrap();
        symlink(outside.path().join("secret"), root.join("src/s")).unwrap();
        let tree = Tree::open(root).unwrap().unwrap();

        assert_eq!(
            tree.read(Path::new("src/a.py")).unwrap().unwrap(),
            b"x = 1\n"
        );
        assert_eq!(
            tree.read(Path::new("x/secret")).unwrap(),
            None,
            "through a linked directory"
        );
        assert_eq!(
            tree.read(Path::new("src/s")).unwrap(),
            None,
            "a linked file"
        );
        assert_eq!(tree.node(Path::new("x/secret")).unwrap(), None);
        assert_eq!(
            tree.node(Path::new("x")).unwrap(),
            Some(Node::Link {
                target: outside.path().as_os_str().as_bytes().to_vec()
            })
        );
        assert_eq!(tree.read(Path::new("../etc/passwd")).unwrap(), None);
        assert!(tree.list(Path::new("x")).unwrap().is_empty());
        let files = tree.walk_files(Path::new(""), &|_| false).unwrap();
        let want: BTreeSet<PathBuf> = ["src/a.py", "src/s", "x"]
            .iter()
            .map(PathBuf::from)
            .collect();
        assert_eq!(files, want);
    }
}
