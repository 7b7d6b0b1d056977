//! The POSIX system calls forq-sandbox makes on every Unix (the native
//! backend's Linux-only ones are in `native::sys`): process checks and
//! signals, the effective user, and terminals.
#![allow(unsafe_code)] // system calls through libc, each with its SAFETY note

use std::ffi::CString;
use std::io;
use std::os::fd::RawFd;

/// `s` as a C string (paths forq makes never hold NUL bytes).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))] // the native backend's
pub(crate) fn cstr(s: &str) -> CString {
    CString::new(s).expect("sandbox paths never contain NUL bytes")
}

/// Sends SIGKILL to `pid`.
pub(crate) fn kill(pid: i32) {
    // SAFETY: kill(2) has no memory-safety preconditions.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
}

/// The calling thread's last OS error number.
pub(crate) fn last_errno() -> i32 {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// The effective user id of this process.
pub(crate) fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

/// Whether process `pid` is alive.
/// When process `pid` started, in clock ticks since boot (`/proc/PID/stat`
/// field 22); `None` where there is no such process or no `/proc`. With
/// the pid it names one process for good: a pid the kernel hands out again
/// comes with another start time.
pub(crate) fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: count
    // from the last `)`.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19)?.parse().ok()
}

pub(crate) fn alive(pid: i32) -> bool {
    // SAFETY: kill with signal 0 only checks for existence.
    unsafe { libc::kill(pid, 0) == 0 || last_errno() == libc::EPERM }
}

/// A new pseudo-terminal pair: the master, and the slave (not this
/// process's controlling terminal).
pub(crate) fn openpty() -> io::Result<(std::fs::File, std::os::fd::OwnedFd)> {
    use std::os::fd::FromRawFd;
    let (mut master, mut slave) = (-1, -1);
    // SAFETY: openpty fills two ints; null name, termios and winsize are
    // allowed.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            // `*mut` here, as the BSDs declare them (Linux's `*const` takes it).
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just opened and are owned here alone.
    unsafe {
        libc::fcntl(master, libc::F_SETFD, libc::FD_CLOEXEC);
        libc::fcntl(slave, libc::F_SETFD, libc::FD_CLOEXEC);
        Ok((
            std::fs::File::from_raw_fd(master),
            std::os::fd::OwnedFd::from_raw_fd(slave),
        ))
    }
}

/// Copies the window size of terminal `from` to terminal `to` (nothing
/// when `from` is not a terminal).
pub(crate) fn copy_window_size(from: RawFd, to: RawFd) {
    // SAFETY: TIOCGWINSZ/TIOCSWINSZ on a stack winsize.
    unsafe {
        let mut size: libc::winsize = std::mem::zeroed();
        if libc::ioctl(from, libc::TIOCGWINSZ, &mut size) == 0 {
            libc::ioctl(to, libc::TIOCSWINSZ, &size);
        }
    }
}

/// Puts terminal `fd` into raw mode; returns the settings to restore.
pub(crate) fn make_raw(fd: RawFd) -> io::Result<libc::termios> {
    // SAFETY: tcgetattr/cfmakeraw/tcsetattr on stack termios structs.
    unsafe {
        let mut saved: libc::termios = std::mem::zeroed();
        if libc::tcgetattr(fd, &mut saved) != 0 {
            return Err(io::Error::last_os_error());
        }
        let mut raw = saved;
        libc::cfmakeraw(&mut raw);
        if libc::tcsetattr(fd, libc::TCSANOW, &raw) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(saved)
    }
}

/// Restores terminal `fd`'s settings.
pub(crate) fn restore_terminal(fd: RawFd, saved: &libc::termios) {
    // SAFETY: tcsetattr with settings tcgetattr returned.
    unsafe {
        libc::tcsetattr(fd, libc::TCSANOW, saved);
    }
}
