//! The diff of a container's workspace against its base: the container
//! hashes its files in one exec, forq compares with the base's hashes and
//! fetches only what differs.

#[allow(clippy::wildcard_imports)] // the backend's own types and imports
use super::*;

/// Above this many changed files a diff downloads the whole workspace once
/// instead of each file.
pub(super) const MAX_FETCHED_FILES: usize = 64;

/// Lists the workspace (without `.git`): `L ./path` for each symbolic
/// link, `X ./path` for each executable file, then `md5sum` lines.
pub(super) const HASH_SCRIPT: &str = "cd /workspace || exit 3
find . -path ./.git -prune -o -type l -print | sed 's/^/L /'
find . -path ./.git -prune -o -type f -perm -100 -print | sed 's/^/X /'
find . -path ./.git -prune -o -type f -print0 | xargs -0 -r md5sum";

/// The workspace as the hash script saw it.
#[derive(Debug, Default, Clone)]
pub(super) struct Listing {
    pub(super) files: HashMap<PathBuf, FileState>,
    pub(super) links: BTreeSet<PathBuf>,
}

/// Reads the hash script's output; `None` when a line cannot be read
/// unambiguously (md5sum escapes names with newlines or backslashes).
pub(super) fn parse_hashes(listing: &str) -> Option<Listing> {
    let mut out = Listing::default();
    let mut executable = BTreeSet::new();
    let rel = |p: &str| p.strip_prefix("./").map(PathBuf::from);
    for line in listing.lines() {
        if let Some(p) = line.strip_prefix("L ") {
            out.links.insert(rel(p)?);
        } else if let Some(p) = line.strip_prefix("X ") {
            executable.insert(rel(p)?);
        } else {
            let (hex, path) = line.split_once("  ")?;
            if hex.starts_with('\\') || hex.len() != 32 {
                return None;
            }
            let mut md5 = [0u8; 16];
            for (i, byte) in md5.iter_mut().enumerate() {
                *byte = u8::from_str_radix(hex.get(i * 2..i * 2 + 2)?, 16).ok()?;
            }
            out.files.insert(
                rel(path)?,
                FileState {
                    md5,
                    executable: false,
                },
            );
        }
    }
    for path in executable {
        out.files.get_mut(&path)?.executable = true;
    }
    Some(out)
}

/// Hash and executable bit of every regular file of the base, and its
/// links: what the hash script prints, computed on the host.
pub(super) fn hash_base(base: &Path) -> Listing {
    use md5::Digest;
    use std::os::unix::fs::PermissionsExt;
    let mut out = Listing::default();
    let walker = walkdir::WalkDir::new(base)
        .into_iter()
        .filter_entry(|e| !diff::excluded(e.path().strip_prefix(base).unwrap_or(e.path())));
    for entry in walker.flatten() {
        let rel = entry
            .path()
            .strip_prefix(base)
            .expect("under its root")
            .to_path_buf();
        if entry.file_type().is_symlink() {
            out.links.insert(rel);
            continue;
        }
        if !entry.file_type().is_file() {
            continue;
        }
        let (Ok(bytes), Ok(meta)) = (std::fs::read(entry.path()), entry.metadata()) else {
            continue;
        };
        let md5: [u8; 16] = md5::Md5::digest(&bytes).into();
        out.files.insert(
            rel,
            FileState {
                md5,
                executable: meta.permissions().mode() & 0o100 != 0,
            },
        );
    }
    out
}

/// The paths to fetch (new or changed files, and every link) and the
/// paths of the base that are gone.
pub(super) fn changed_paths(
    base: &Listing,
    current: &Listing,
) -> (BTreeSet<PathBuf>, BTreeSet<PathBuf>) {
    let mut fetch: BTreeSet<PathBuf> = current.links.clone();
    for (path, state) in &current.files {
        if base.files.get(path) != Some(state) {
            fetch.insert(path.clone());
        }
    }
    let gone = |p: &&PathBuf| !current.files.contains_key(*p) && !current.links.contains(*p);
    let deleted = base
        .files
        .keys()
        .chain(&base.links)
        .filter(gone)
        .cloned()
        .collect();
    (fetch, deleted)
}

/// Writes the single entry of a downloaded archive to `dest`: a file with
/// its mode, or a symbolic link.
pub(super) fn unpack_single(tar: &[u8], dest: &Path) -> Result<()> {
    let mut archive = tar::Archive::new(tar);
    let mut entries = archive
        .entries()
        .map_err(|e| Error::io("read an archive", dest, e))?;
    let Some(entry) = entries.next() else {
        return Ok(());
    };
    let mut entry = entry.map_err(|e| Error::io("read an archive", dest, e))?;
    if let Some(parent) = dest.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io("create", parent, e))?;
    }
    let header = entry.header();
    if header.entry_type().is_symlink() {
        let target = entry
            .link_name()
            .map_err(|e| Error::io("read an archive", dest, e))?
            .unwrap_or_default()
            .into_owned();
        return std::os::unix::fs::symlink(target, dest).map_err(|e| Error::io("symlink", dest, e));
    }
    let mode = header.mode().unwrap_or(0o644);
    let mut bytes = Vec::new();
    entry
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io("read an archive", dest, e))?;
    std::fs::write(dest, &bytes).map_err(|e| Error::io("write", dest, e))?;
    std::fs::set_permissions(dest, std::os::unix::fs::PermissionsExt::from_mode(mode))
        .map_err(|e| Error::io("chmod", dest, e))
}

pub(super) fn tempdir_for_diff() -> Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("forq-docker-diff-{}", state::new_id()));
    std::fs::create_dir_all(&dir).map_err(|e| Error::io("create", &dir, e))?;
    Ok(dir)
}
