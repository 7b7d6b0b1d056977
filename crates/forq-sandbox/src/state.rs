//! The on-disk state directory shared by the native and host backends, ids
//! that say which process owns what, and `gc` for what dead processes left.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

use crate::error::{Error, Result};

/// Where sandboxes keep their layers unless told otherwise:
/// `$FORQ_SANDBOX_DIR`, else `/var/tmp/forq-sandbox` (`-<uid>` for non-root).
pub fn default_state_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("FORQ_SANDBOX_DIR") {
        return PathBuf::from(dir);
    }
    let uid = crate::os::euid();
    if uid == 0 {
        PathBuf::from("/var/tmp/forq-sandbox")
    } else {
        PathBuf::from(format!("/var/tmp/forq-sandbox-{uid}"))
    }
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A fresh id, `<pid>.<start>-<n>`: the owning process is readable from
/// the name, and its start time (clock ticks after boot) tells it from a
/// later process the kernel gives the same pid. Pids are reused within
/// minutes on a busy machine (32 768 by default), and an id that named the
/// pid alone made a dead process's layers, views and cgroups look alive, or
/// a new exec join a dead one's cgroup.
pub(crate) fn new_id() -> String {
    static ME: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let me = ME.get_or_init(|| {
        let pid = std::process::id();
        match crate::os::start_time(pid) {
            Some(start) => format!("{pid}.{start}"),
            None => pid.to_string(),
        }
    });
    format!("{me}-{}", COUNTER.fetch_add(1, Ordering::Relaxed))
}

/// The process a name made by [`new_id`] (or by an older forq, `<pid>-<n>`)
/// belongs to: its pid, and its start time when the name has one. `None`
/// for a name no process owns.
fn owner_of(name: &str) -> Option<(u32, Option<u64>)> {
    let owner = name.trim().split('-').next()?;
    let (pid, start) = match owner.split_once('.') {
        Some((pid, start)) => (pid, Some(start.parse::<u64>().ok()?)),
        None => (owner, None),
    };
    Some((pid.parse().ok()?, start))
}

/// Whether the process that owns `name` (see [`new_id`]; also a lock's
/// contents) still runs: that pid is alive, and started when the name
/// says. A name no process owns counts as dead.
pub(crate) fn owner_alive(name: &str) -> bool {
    let Some((pid, start)) = owner_of(name) else {
        return false;
    };
    let Ok(signed) = i32::try_from(pid) else {
        return false;
    };
    if !crate::os::alive(signed) {
        return false;
    }
    match (start, crate::os::start_time(pid)) {
        (Some(named), Some(now)) => named == now,
        _ => true,
    }
}

/// Whether `name` is owned by a process, and that process is gone: what
/// `gc` may clean. Names no process owns (a golden's) are never its.
pub(crate) fn owner_dead(name: &str) -> bool {
    owner_of(name).is_some() && !owner_alive(name)
}

/// Makes `dir` the caller's private state directory: created 0700 when
/// missing; refused when it is a symbolic link, not a directory, or owned by
/// another user (who could have planted layers or links in it); tightened to
/// 0700 when it is the caller's and looser.
pub fn ensure_private_dir(dir: &Path) -> Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    let refuse = |reason: String| Error::UnsafeStateDir {
        path: dir.to_path_buf(),
        reason,
    };
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io("create", parent, e))?;
    }
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(Error::io("create", dir, e)),
    }
    let meta = dir
        .symlink_metadata()
        .map_err(|e| Error::io("inspect", dir, e))?;
    if meta.file_type().is_symlink() {
        return Err(refuse(
            "it is a symbolic link; name the directory it points to, or remove the link".to_owned(),
        ));
    }
    if !meta.is_dir() {
        return Err(refuse("it is not a directory".to_owned()));
    }
    let me = crate::os::euid();
    if meta.uid() != me {
        return Err(refuse(format!(
            "it belongs to uid {}, not to uid {me} that runs forq; remove it or choose another \
             directory",
            meta.uid()
        )));
    }
    if meta.mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| Error::io("make private", dir, e))?;
    }
    Ok(())
}

/// Refuses `dir` when it is a symbolic link: forq writes its own files
/// under a repository's `.forq`, and a repository (a stranger's) could point
/// that name anywhere. A missing `dir` is fine.
pub fn refuse_link(dir: &Path) -> std::io::Result<()> {
    match dir.symlink_metadata() {
        Ok(m) if m.file_type().is_symlink() => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "{} is a symbolic link: forq keeps its own files there and never writes through \
                 a link; remove the link",
                dir.display()
            ),
        )),
        _ => Ok(()),
    }
}

pub(crate) fn ensure_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io("create", dir, e))
}

/// What `gc` cleaned.
#[derive(Debug, Clone, Default, Serialize)]
#[non_exhaustive]
pub struct GcReport {
    /// Mount points detached.
    pub unmounted: Vec<PathBuf>,
    /// Directories removed (sandboxes, layers, copies, exec cgroups).
    pub removed: Vec<PathBuf>,
}

/// Cleans what processes that no longer exist left under `state_dir`:
/// mounts first, then their directories. Live processes' state is kept.
pub fn gc(state_dir: &Path) -> Result<GcReport> {
    let mut report = GcReport::default();
    let dead = owner_dead;
    let mut points = mounts_under(state_dir);
    // Deepest first, so nested mounts come off before their parents.
    points.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    for point in points {
        let Ok(rel) = point.strip_prefix(state_dir) else {
            continue;
        };
        let owner = rel
            .components()
            .nth(1)
            .map(|c| c.as_os_str().to_string_lossy().into_owned());
        #[cfg(target_os = "linux")]
        if owner.as_deref().is_some_and(dead) {
            let c = crate::os::cstr(&point.to_string_lossy());
            if crate::native::sys::unmount(&c, true).is_ok() {
                report.unmounted.push(point);
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = owner;
    }
    #[cfg(target_os = "linux")]
    report
        .removed
        .extend(crate::native::Cgroups::detect().gc(dead));
    // Idmapped views: the mount points alone, never a tree (a view still
    // mounted is the state directory itself, seen again).
    if let Ok(entries) = std::fs::read_dir(state_dir.join("i")) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if dead(&name) && std::fs::remove_dir(entry.path()).is_ok() {
                report.removed.push(entry.path());
            }
        }
    }
    // A tree is removed only when nothing is mounted in it any more: a
    // removal never crosses into a mount (what it shows is not the state
    // directory's). One that could not be taken off waits for the next gc.
    let still_mounted = mounts_under(state_dir);
    for sub in ["s", "l", "h"] {
        let Ok(entries) = std::fs::read_dir(state_dir.join(sub)) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            if dead(&name) && !still_mounted.iter().any(|m| m.starts_with(&path)) {
                remove_tree(&path).map_err(|e| Error::io("remove", &path, e))?;
                report.removed.push(path);
            }
        }
    }
    Ok(report)
}

/// mountinfo escapes space, tab, newline and backslash as octal.
fn unescape_mount_path(s: &str) -> PathBuf {
    let mut out = Vec::with_capacity(s.len());
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 4], 8) {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    PathBuf::from(String::from_utf8_lossy(&out).into_owned())
}

/// Mount points currently under `dir`, from `/proc/self/mountinfo`.
pub fn mounts_under(dir: &Path) -> Vec<PathBuf> {
    mounts_in(Path::new("/proc/self/mountinfo"), dir)
}

/// Removes a directory tree, making directories writable first where
/// needed: overlayfs leaves a mode-000 `work` directory that only root
/// could otherwise remove.
pub(crate) fn remove_tree(dir: &Path) -> std::io::Result<()> {
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            make_writable(dir);
            std::fs::remove_dir_all(dir)
        }
        other => other,
    }
}

/// Opens up every directory under `dir`, each before it is read.
fn make_writable(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            make_writable(&entry.path());
        }
    }
}

/// Mount points under `dir` in the mount table file `mountinfo`.
pub(crate) fn mounts_in(mountinfo: &Path, dir: &Path) -> Vec<PathBuf> {
    std::fs::read_to_string(mountinfo)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .map(unescape_mount_path)
        .filter(|p| p.starts_with(dir))
        .collect()
}
