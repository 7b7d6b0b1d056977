//! Mounts: overlays, unmounts, opaque directories, idmapped views, and
//! ownership of what forq writes through them.
#![allow(unsafe_code)]

#[allow(clippy::wildcard_imports)] // the module's shared calls and imports
use super::*;

pub(super) const MOUNT_ATTR_IDMAP: u64 = 0x0010_0000;

pub(super) const AT_RECURSIVE: libc::c_int = 0x8000;

pub(super) const OPEN_TREE_CLONE: libc::c_uint = 1;

pub(super) const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 4;

/// `struct mount_attr` (version 0, 32 bytes).
#[repr(C)]
pub(super) struct MountAttr {
    pub(super) attr_set: u64,
    pub(super) attr_clr: u64,
    pub(super) propagation: u64,
    pub(super) userns_fd: u64,
}

pub(super) fn mount_setattr(
    dirfd: libc::c_int,
    path: &std::ffi::CStr,
    flags: libc::c_int,
    attr: &MountAttr,
) -> libc::c_long {
    // SAFETY: mount_setattr(2) with a valid path and a struct of the size
    // passed.
    unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            dirfd,
            path.as_ptr(),
            flags,
            attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    }
}

/// Mounts an overlay on the host side (outside any sandbox namespace).
pub(crate) fn mount_overlay(target: &CString, options: &CString) -> io::Result<()> {
    // SAFETY: mount(2) with valid NUL-terminated strings.
    let rc = unsafe {
        libc::mount(
            c"overlay".as_ptr(),
            target.as_ptr(),
            c"overlay".as_ptr(),
            0,
            options.as_ptr().cast(),
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Unmounts on the host side; `detach` does it lazily (never fails as busy).
pub(crate) fn unmount(target: &CString, detach: bool) -> io::Result<()> {
    let flags = if detach { libc::MNT_DETACH } else { 0 };
    // SAFETY: umount2(2) with a valid NUL-terminated string.
    let rc = unsafe { libc::umount2(target.as_ptr(), flags) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Whether `path` carries overlayfs's opaque-directory mark, under the
/// xattr name `name` (`trusted.overlay.opaque`, or `user.overlay.opaque`
/// for overlays mounted with `userxattr`).
pub(crate) fn is_opaque(path: &CString, name: &std::ffi::CStr) -> bool {
    let mut buf = [0u8; 4];
    // SAFETY: lgetxattr into a stack buffer of the given length.
    let n = unsafe {
        libc::lgetxattr(
            path.as_ptr(),
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    n == 1 && buf[0] == b'y'
}

/// Marks `path` as an opaque directory for overlayfs.
pub(crate) fn set_opaque(path: &CString, name: &std::ffi::CStr) -> io::Result<()> {
    // SAFETY: lsetxattr with a valid name and a one-byte value.
    let rc = unsafe { libc::lsetxattr(path.as_ptr(), name.as_ptr(), b"y".as_ptr().cast(), 1, 0) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Attaches at `target` a copy of the mount at `source` whose ids are mapped
/// through the user namespace `userns` (an idmapped mount), private, so that
/// nothing mounted below either side propagates to the other; read-only
/// unless `writable` (a lower layer is never written, and a read-only view
/// cannot be deleted through: a recursive removal of the state directory
/// that reaches one stops there instead of emptying what it shows).
pub(crate) fn mount_idmapped(
    source: &CString,
    target: &CString,
    userns: RawFd,
    writable: bool,
) -> io::Result<()> {
    // SAFETY: open_tree, mount_setattr and move_mount on valid strings, a
    // struct of the size passed, and a descriptor closed before returning.
    unsafe {
        let fd = libc::syscall(
            libc::SYS_open_tree,
            libc::AT_FDCWD,
            source.as_ptr(),
            OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint,
        ) as libc::c_int;
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let attr = MountAttr {
            attr_set: MOUNT_ATTR_IDMAP
                | MOUNT_ATTR_NOSUID
                | MOUNT_ATTR_NODEV
                | if writable { 0 } else { MOUNT_ATTR_RDONLY },
            attr_clr: 0,
            propagation: libc::MS_PRIVATE,
            userns_fd: userns as u64,
        };
        let result = if mount_setattr(fd, c"", libc::AT_EMPTY_PATH, &attr) != 0
            || libc::syscall(
                libc::SYS_move_mount,
                fd,
                c"".as_ptr(),
                libc::AT_FDCWD,
                target.as_ptr(),
                MOVE_MOUNT_F_EMPTY_PATH,
            ) != 0
        {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        };
        libc::close(fd);
        result
    }
}
