//! The holder of user-namespace mode and the helpers forq runs inside its
//! namespaces, and what they hand back (descriptors).
#![allow(unsafe_code)]

#[allow(clippy::wildcard_imports)] // the module's shared calls and imports
use super::*;

/// What a holder process needs, prepared before `fork`.
#[derive(Debug)]
pub(crate) struct HolderPlan {
    /// `0 <uid> 1` and `0 <gid> 1`.
    pub(crate) uid_map: CString,
    pub(crate) gid_map: CString,
    /// Read end of the request pipe, write end of the reply pipe.
    pub(crate) requests: RawFd,
    pub(crate) replies: RawFd,
}

/// Installs the holder's steps on `cmd`: a process that enters a user and a
/// mount namespace of its own (root inside, the caller's uid outside), then
/// mounts and unmounts overlays there on request, until its request pipe
/// closes. It never execs.
pub(crate) fn install_holder(cmd: &mut std::process::Command, plan: std::sync::Arc<HolderPlan>) {
    use std::os::unix::process::CommandExt;
    // SAFETY: as for `install`: the closure only makes system calls on data
    // prepared before fork, and a fixed stack buffer.
    unsafe {
        cmd.pre_exec(move || holder(&plan));
    }
}

pub(super) fn write_file(path: &std::ffi::CStr, bytes: &[u8]) -> bool {
    // SAFETY: open/write/close on a valid path and buffer.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return false;
        }
        let ok = libc::write(fd, bytes.as_ptr().cast(), bytes.len()) == bytes.len() as isize;
        libc::close(fd);
        ok
    }
}

pub(super) fn read_exact(fd: RawFd, buf: &mut [u8]) -> bool {
    let mut got = 0;
    while got < buf.len() {
        // SAFETY: reading into the unfilled part of `buf`.
        let n = unsafe { libc::read(fd, buf[got..].as_mut_ptr().cast(), buf.len() - got) };
        if n > 0 {
            got += n as usize;
        } else if n < 0 && last_errno() == libc::EINTR {
            continue;
        } else {
            return false;
        }
    }
    true
}

pub(super) fn holder(plan: &HolderPlan) -> io::Result<()> {
    // SAFETY (whole function): system calls on prepared strings and a stack
    // buffer whose fields are NUL-terminated by the sender.
    unsafe {
        if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) != 0 {
            return Err(io::Error::last_os_error());
        }
        if !write_file(c"/proc/self/setgroups", b"deny")
            || !write_file(c"/proc/self/uid_map", plan.uid_map.as_bytes())
            || !write_file(c"/proc/self/gid_map", plan.gid_map.as_bytes())
        {
            return Err(io::Error::last_os_error());
        }
        if !make_mounts_private() {
            return Err(io::Error::last_os_error());
        }
        // Keep only the two pipes: the caller's spawn returns once the
        // close-on-exec pipe it waits on is closed here.
        let (lo, hi) = (
            plan.requests.min(plan.replies),
            plan.requests.max(plan.replies),
        );
        libc::syscall(libc::SYS_close_range, 0u32, (lo - 1) as u32, 0u32);
        if hi - lo > 1 {
            libc::syscall(
                libc::SYS_close_range,
                (lo + 1) as u32,
                (hi - 1) as u32,
                0u32,
            );
        }
        libc::syscall(libc::SYS_close_range, (hi + 1) as u32, u32::MAX, 0u32);
        let mut buf = [0u8; 16 * 1024];
        loop {
            let mut len = [0u8; 4];
            if !read_exact(plan.requests, &mut len) {
                libc::_exit(0);
            }
            let len = u32::from_ne_bytes(len) as usize;
            if len == 0 || len > buf.len() || !read_exact(plan.requests, &mut buf[..len]) {
                libc::_exit(1);
            }
            let msg = &buf[..len];
            // Fields start after the op byte; each ends with NUL.
            let first = msg.as_ptr().add(1).cast::<libc::c_char>();
            let second_at = msg[1..].iter().position(|&b| b == 0).map(|i| i + 2);
            let rc = match msg[0] {
                HOLD_MOUNT => match second_at {
                    Some(at) if at < len => libc::mount(
                        c"overlay".as_ptr(),
                        first,
                        c"overlay".as_ptr(),
                        0,
                        msg.as_ptr().add(at).cast(),
                    ),
                    _ => -1,
                },
                HOLD_UNMOUNT => libc::umount2(first, 0),
                HOLD_DETACH => libc::umount2(first, libc::MNT_DETACH),
                _ => -1,
            };
            let errno: i32 = if rc == 0 { 0 } else { last_errno().max(1) };
            let reply = errno.to_ne_bytes();
            if libc::write(plan.replies, reply.as_ptr().cast(), reply.len()) != reply.len() as isize
            {
                libc::_exit(1);
            }
        }
    }
}

/// The effective group id of this process.
pub(crate) fn egid() -> u32 {
    // SAFETY: getegid has no preconditions.
    unsafe { libc::getegid() }
}

/// Takes ownership of a descriptor this module created.
pub(crate) fn file_from_fd(fd: RawFd) -> std::fs::File {
    use std::os::fd::FromRawFd;
    // SAFETY: `fd` was just created by `pipe` and nothing else owns it.
    unsafe { std::fs::File::from_raw_fd(fd) }
}

/// The process builder of the backend's helpers (the holder, the maker of a
/// user namespace): they never exec, so the program is only a placeholder,
/// and they see no standard streams.
pub(crate) fn helper_command() -> std::process::Command {
    #[allow(clippy::disallowed_methods)] // the sandbox's own process builder
    let mut cmd = std::process::Command::new("/proc/self/exe");
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    cmd
}

/// Starts a helper (`install` puts its steps on the command, given the
/// write end of a pipe to report on), runs `then` with the read end and the
/// helper's pid, and ends the helper.
pub(crate) fn run_helper<T>(
    install: impl FnOnce(&mut std::process::Command, RawFd),
    then: impl FnOnce(&mut std::fs::File, u32) -> io::Result<T>,
) -> io::Result<T> {
    let (ready_r, ready_w) = pipe()?;
    let mut cmd = helper_command();
    install(&mut cmd, ready_w);
    let spawned = cmd.spawn();
    close(ready_w);
    let mut ready = file_from_fd(ready_r);
    let mut child = spawned?;
    let result = then(&mut ready, child.id());
    let _ = child.kill();
    let _ = child.wait();
    result
}

/// Installs on `cmd` a process that enters a new user namespace, says so on
/// `ready` and sleeps until killed: its parent writes the maps, opens the
/// namespace and ends it. It never execs.
pub(crate) fn install_userns_helper(cmd: &mut std::process::Command, ready: RawFd) {
    use std::os::unix::process::CommandExt;
    // SAFETY: as for `install`: only system calls on one descriptor and a
    // static byte.
    unsafe {
        cmd.pre_exec(move || {
            if libc::unshare(libc::CLONE_NEWUSER) != 0 {
                return Err(io::Error::last_os_error());
            }
            libc::write(ready, b"u".as_ptr().cast(), 1);
            // Hold nothing else open: the caller's spawn returns once the
            // close-on-exec pipe it waits on is closed here.
            libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32);
            loop {
                libc::pause();
            }
        });
    }
}

/// A duplicate, in this process, of descriptor `fd` of process `pid`.
pub(crate) fn take_fd(pid: u32, fd: RawFd) -> io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: pidfd_open and pidfd_getfd return new descriptors this
    // function owns (the pidfd is closed before returning).
    unsafe {
        let pidfd = libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) as libc::c_int;
        if pidfd < 0 {
            return Err(io::Error::last_os_error());
        }
        let got = libc::syscall(libc::SYS_pidfd_getfd, pidfd, fd, 0) as libc::c_int;
        let result = if got < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(std::os::fd::OwnedFd::from_raw_fd(got))
        };
        libc::close(pidfd);
        result
    }
}
