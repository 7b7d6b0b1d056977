//! Who the sandbox's root is on the host when forq runs as root: an
//! unprivileged range of ids (by default 1 000 000 000 and the 65 535 above
//! it), never uid 0.
//!
//! Two user namespaces make that work. Payloads enter the first, which maps
//! the sandbox's ids 0..65536 onto the range: inside they are root, on the
//! host nobody in particular, so a host file that is not world-readable
//! stays unreadable. The second describes idmapped mounts of the state
//! directory and of the writable lower layers (the workspace's base, the
//! writable toolchains): through them a file the host's root owns shows as
//! owned by the range's first id, so the sandbox can change its workspace
//! as before, and what it writes lands on disk owned by root, as before.
//! That second map also sends host root to on-disk id 65536, because
//! overlayfs copies files up with its mounter's (root's) credentials, and
//! forq's own writes into a workspace are chowned to the range after.

use std::fs::File;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use super::sys::{self, cstr};

use crate::state;

/// The first host id of the default range.
pub const DEFAULT_ID_BASE: u32 = 1_000_000_000;

/// How many ids the range holds.
pub(crate) const ID_COUNT: u32 = 65_536;

/// The two namespaces and the idmapped views mounted through them.
#[derive(Debug)]
pub(crate) struct Ids {
    /// The range's first host id: the sandbox's root.
    pub(crate) base: u32,
    /// The namespace payloads enter.
    pub(crate) payload_ns: File,
    /// The namespace of the idmapped mounts.
    idmap_ns: File,
    /// The state directory seen through the id map.
    pub(crate) state_view: PathBuf,
    /// Views this backend mounted (the state's and the toolchains'), taken
    /// off when it is dropped.
    views: Vec<PathBuf>,
    /// Where views are mounted: `<state>/i`.
    views_dir: PathBuf,
}

impl Ids {
    /// Makes the namespaces and mounts the state directory's view.
    pub(crate) fn new(state_dir: &Path, base: u32) -> std::io::Result<Ids> {
        if base == 0 || base.checked_add(ID_COUNT).is_none() {
            return Err(std::io::Error::other(format!(
                "the host id range must start above 0 and fit below 2^32, not at {base}"
            )));
        }
        let payload_ns = user_namespace(&format!("0 {base} {ID_COUNT}\n"))?;
        let idmap_ns = user_namespace(&format!("0 {base} {ID_COUNT}\n{ID_COUNT} 0 1\n"))?;
        let views_dir = state_dir.join("i");
        std::fs::create_dir_all(&views_dir)?;
        let mut ids = Ids {
            base,
            payload_ns,
            idmap_ns,
            state_view: PathBuf::new(),
            views: Vec::new(),
            views_dir,
        };
        // The overlays' upper and work directories are written through
        // this one; it shows nothing but the state directory itself.
        ids.state_view = ids.keep(state_dir, true)?;
        Ok(ids)
    }

    /// Mounts a read-only idmapped view of `source` (a lower layer: a
    /// writable toolchain) under `<state>/i` and returns where; the view
    /// lives as long as this backend.
    pub(crate) fn view(&mut self, source: &Path) -> std::io::Result<PathBuf> {
        self.keep(source, false)
    }

    /// Mounts a view that lives as long as this backend.
    fn keep(&mut self, source: &Path, writable: bool) -> std::io::Result<PathBuf> {
        let target = self.mount(source, writable)?;
        self.views.push(target.clone());
        Ok(target)
    }

    /// Mounts a read-only idmapped view (a lower layer: a sandbox's base)
    /// the caller takes off with [`unmount_view`]. Read-only, because it
    /// shows a host directory as root may write it: a recursive removal of
    /// the state directory (an operator's `rm -rf`, a test's temporary
    /// directory) that reached a writable one emptied the host's toolchain
    /// or repository through it.
    pub(crate) fn mount_view(&self, source: &Path) -> std::io::Result<PathBuf> {
        self.mount(source, false)
    }

    fn mount(&self, source: &Path, writable: bool) -> std::io::Result<PathBuf> {
        let target = self.views_dir.join(state::new_id());
        std::fs::create_dir(&target)?;
        let mounted = sys::mount_idmapped(
            &cstr(&source.display().to_string()),
            &cstr(&target.display().to_string()),
            self.idmap_ns.as_raw_fd(),
            writable,
        );
        if let Err(e) = mounted {
            let _ = std::fs::remove_dir(&target);
            return Err(e);
        }
        Ok(target)
    }

    /// The views this backend keeps for its whole life.
    pub(crate) fn own_views(&self) -> &[PathBuf] {
        &self.views
    }

    /// `path` under the state directory as the overlays must name it.
    pub(crate) fn in_state_view(&self, state_dir: &Path, path: &Path) -> PathBuf {
        match path.strip_prefix(state_dir) {
            Ok(rel) => self.state_view.join(rel),
            Err(_) => path.to_path_buf(),
        }
    }
}

/// Takes an idmapped view off and removes its (then empty) mount point. Never
/// removes a tree: a view still mounted is left for `gc`.
pub(crate) fn unmount_view(target: &Path) {
    let c = cstr(&target.display().to_string());
    if let Err(e) = sys::unmount(&c, true) {
        tracing::warn!(view = %target.display(), error = %e, "cannot take off an idmapped view");
        return;
    }
    let _ = std::fs::remove_dir(target);
}

impl Drop for Ids {
    fn drop(&mut self) {
        for v in self.views.drain(..).rev() {
            unmount_view(&v);
        }
    }
}

/// A user namespace with `map` as its uid and gid map, held by the returned
/// descriptor (the process that made it is gone by then).
fn user_namespace(map: &str) -> std::io::Result<File> {
    sys::run_helper(sys::install_userns_helper, |ready, pid| {
        let mut byte = [0u8; 1];
        ready.read_exact(&mut byte)?;
        std::fs::write(format!("/proc/{pid}/uid_map"), map)?;
        std::fs::write(format!("/proc/{pid}/gid_map"), map)?;
        File::open(format!("/proc/{pid}/ns/user"))
    })
}
