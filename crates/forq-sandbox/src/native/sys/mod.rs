//! The native backend's system calls (Linux only; the portable ones are in
//! `crate::os`), chiefly
//! the steps a sandbox process takes
//! between `fork` and `exec` to enter its namespaces and build its root.
//!
//! Process shape of one exec:
//!
//! ```text
//! forq ── spawn ──▶ shim (joins cgroups, unshares namespaces, forks, waits)
//!                    └──▶ init, pid 1 of the new pid namespace (mounts the
//!                         root, pivots into it, forks, reaps, reports status)
//!                          └──▶ payload (drops every capability, execs argv)
//! ```
//!
//! When init exits the kernel kills every process left in the namespace, so
//! a command never leaves orphans. Killing the shim kills init (parent-death
//! signal), which is how a timeout tears the whole tree down.
//!
//! Everything that runs after `fork` uses only async-signal-safe system
//! calls on data prepared beforehand: no allocation, no locks.
#![allow(unsafe_code)]

mod holder;
mod mounts;
mod net;

pub(crate) use holder::*;
pub(crate) use mounts::*;
pub(crate) use net::*;

use std::ffi::CString;

pub(crate) use crate::os::{cstr, euid, kill, last_errno};
use std::io;
use std::os::fd::RawFd;

/// One step of building the sandbox's root, run by init in order.
#[derive(Debug)]
pub(crate) enum Step {
    Mkdir(CString),
    Symlink {
        target: CString,
        link: CString,
    },
    Touch(CString),
    Mount {
        source: Option<CString>,
        target: CString,
        fstype: Option<CString>,
        flags: libc::c_ulong,
        data: Option<CString>,
    },
    /// Sets mount attributes (`MOUNT_ATTR_*`) on a mount and, with
    /// `recursive`, on every mount below it: a read-only bind of `/usr` is
    /// then read-only in its submounts too, which `MS_REMOUNT` never was.
    Seal {
        target: CString,
        attrs: u64,
        recursive: bool,
    },
    /// The step, where its target still exists: a file listed to be masked
    /// that vanished before the mount has nothing left to hide.
    IfPresent(Box<Step>),
}

/// `MOUNT_ATTR_*` of mount_setattr(2), spelt out because libc keeps them in
/// a module of its own that not every version exports.
pub(crate) const MOUNT_ATTR_RDONLY: u64 = 0x1;
pub(crate) const MOUNT_ATTR_NOSUID: u64 = 0x2;
pub(crate) const MOUNT_ATTR_NODEV: u64 = 0x4;
pub(crate) const MOUNT_ATTR_NOEXEC: u64 = 0x8;
impl Step {
    pub(crate) fn bind(source: &str, target: &str, read_only: bool) -> Vec<Step> {
        let mut steps = vec![Step::Mount {
            source: Some(cstr(source)),
            target: cstr(target),
            fstype: None,
            flags: libc::MS_BIND | libc::MS_REC,
            data: None,
        }];
        let attrs = if read_only {
            MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV
        } else {
            MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV
        };
        steps.push(Step::Seal {
            target: cstr(target),
            attrs,
            recursive: true,
        });
        steps
    }

    /// Binds a device node (no `nodev` on this one).
    pub(crate) fn bind_device(source: &str, target: &str) -> Vec<Step> {
        vec![
            Step::Mount {
                source: Some(cstr(source)),
                target: cstr(target),
                fstype: None,
                flags: libc::MS_BIND,
                data: None,
            },
            Step::Seal {
                target: cstr(target),
                attrs: MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC,
                recursive: false,
            },
        ]
    }

    /// Says what the step does, for an error message.
    pub(crate) fn describe(&self) -> String {
        let s = |c: &CString| c.to_string_lossy().into_owned();
        match self {
            Step::IfPresent(step) => format!("{} (where present)", step.describe()),
            Step::Mkdir(p) => format!("mkdir {}", s(p)),
            Step::Symlink { target, link } => format!("symlink {} -> {}", s(link), s(target)),
            Step::Touch(p) => format!("create {}", s(p)),
            Step::Seal { target, .. } => format!("seal the mount on {}", s(target)),
            Step::Mount {
                source,
                target,
                fstype,
                ..
            } => format!(
                "mount {} ({}) on {}",
                source.as_ref().map_or_else(|| "-".to_owned(), s),
                fstype.as_ref().map_or_else(|| "bind".to_owned(), s),
                s(target)
            ),
        }
    }

    pub(crate) fn fs(fstype: &str, target: &str, flags: libc::c_ulong, data: &str) -> Step {
        Step::Mount {
            source: Some(cstr(fstype)),
            target: cstr(target),
            fstype: Some(cstr(fstype)),
            flags,
            data: Some(cstr(data)),
        }
    }
}

/// Everything the child side needs, prepared before `fork`.
#[derive(Debug)]
pub(crate) struct Plan {
    /// Host directory on which the new root's tmpfs is mounted; the shim
    /// builds it there and moves into it.
    pub(crate) new_root: CString,
    /// Steps the shim runs with the backend's privilege (host root, or root
    /// of the holder's namespace), on host paths.
    pub(crate) steps: std::sync::Arc<Vec<Step>>,
    /// Steps init runs inside the new pid namespace (`/proc` and its masks),
    /// on paths relative to the new root.
    pub(crate) inner_steps: std::sync::Arc<Vec<Step>>,
    pub(crate) new_net: bool,
    pub(crate) hostname: CString,
    /// `cgroup.procs` files the shim joins (by writing "0").
    pub(crate) cgroup_procs: Vec<CString>,
    /// rlimits applied when no cgroup controller can cap memory.
    pub(crate) rlimit_as: Option<u64>,
    /// The largest file the payload may write (the disk cap).
    pub(crate) rlimit_fsize: Option<u64>,
    /// Working directory inside the new root.
    pub(crate) cwd: CString,
    /// Write end of the status pipe.
    pub(crate) status_fd: RawFd,
    /// Read end of this process's lifeline ([`lifeline`]): the shim kills
    /// init, and with it the sandbox's every process, when it hangs up.
    pub(crate) lifeline: RawFd,
    /// User and mount namespaces to join first (rootless mode): open
    /// descriptors of the holder's `/proc/<pid>/ns/{user,mnt}`.
    pub(crate) join: Option<(RawFd, RawFd)>,
    /// As root: the user namespace (sandbox root = an unprivileged host uid)
    /// the shim enters once the root is built, before init is forked.
    pub(crate) enter_user: Option<RawFd>,
    /// A network namespace to join instead of making an empty one: the
    /// egress proxy's (as root).
    pub(crate) join_net: Option<RawFd>,
    /// Make standard input (a pty's slave) the controlling terminal.
    pub(crate) ctty: bool,
    /// Seccomp programs the payload installs last, in order.
    pub(crate) seccomp: &'static [Vec<seccompiler::sock_filter>],
}

/// What init reports through the status pipe: 12 bytes, native endian.
pub(crate) const REPORT_SETUP_FAILED: i32 = 1;
pub(crate) const REPORT_EXITED: i32 = 2;

/// A decoded report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Report {
    /// Step `step` of the root setup failed with `errno`.
    SetupFailed { step: i32, errno: i32 },
    /// The payload ended with this raw wait status.
    Exited { status: i32 },
}

pub(crate) fn decode(bytes: &[u8]) -> Option<Report> {
    if bytes.len() < 12 {
        return None;
    }
    let word = |i: usize| i32::from_ne_bytes(bytes[i * 4..i * 4 + 4].try_into().expect("4 bytes"));
    match word(0) {
        REPORT_SETUP_FAILED => Some(Report::SetupFailed {
            step: word(1),
            errno: word(2),
        }),
        REPORT_EXITED => Some(Report::Exited { status: word(1) }),
        _ => None,
    }
}

/// A pipe whose ends are close-on-exec.
pub(crate) fn pipe() -> io::Result<(RawFd, RawFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: `fds` is a valid array of two ints for pipe2 to fill.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((fds[0], fds[1]))
}

pub(crate) fn close(fd: RawFd) {
    // SAFETY: closing a descriptor this module created and owns.
    unsafe {
        libc::close(fd);
    }
}

/// The read end of this process's lifeline: a pipe whose write end only
/// this process holds (close-on-exec, and closed by every shim and helper
/// it forks), so its reader sees end of file when this process is gone,
/// even killed with SIGKILL. The shims watch it: a sandbox never outlives
/// the forq that started it. (A parent-death signal cannot do this: it
/// follows the thread that forked, and tokio's threads come and go.)
pub(crate) fn lifeline() -> io::Result<RawFd> {
    static LIFELINE: std::sync::OnceLock<(RawFd, RawFd)> = std::sync::OnceLock::new();
    if let Some((read, _)) = LIFELINE.get() {
        return Ok(*read);
    }
    let made = pipe()?;
    if let Err(made) = LIFELINE.set(made) {
        // Another thread made one first: this one is not needed.
        close(made.0);
        close(made.1);
    }
    Ok(LIFELINE.get().expect("set above").0)
}

/// Reads everything from `fd` until end of file, then closes it.
pub(crate) fn read_all(fd: RawFd) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 64];
    loop {
        // SAFETY: reading into a stack buffer of the given length.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n > 0 {
            out.extend_from_slice(&buf[..n as usize]);
        } else if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
            continue;
        } else {
            break;
        }
    }
    close(fd);
    out
}

/// Installs the child-side steps on `cmd`.
pub(crate) fn install(cmd: &mut tokio::process::Command, plan: std::sync::Arc<Plan>) {
    // SAFETY: the closure runs in the forked child before exec. It touches
    // only `plan`, prepared before fork and never mutated, and calls only
    // async-signal-safe system calls (no allocation, no locks).
    unsafe {
        cmd.pre_exec(move || shim(&plan));
    }
}

/// Runs in the shim; returns only in the payload (to exec) or with an error
/// before any namespace was entered.
fn shim(plan: &Plan) -> io::Result<()> {
    limit(plan)?;
    build_root(plan)?;
    enter_namespaces(plan);
    fork_init(plan)
}

/// Joins the exec's cgroups and sets its rlimits.
fn limit(plan: &Plan) -> io::Result<()> {
    for procs in &plan.cgroup_procs {
        // "0" is the writer itself.
        if !write_file(procs, b"0") {
            return Err(io::Error::last_os_error());
        }
    }
    for (resource, limit) in [
        (libc::RLIMIT_AS, plan.rlimit_as),
        (libc::RLIMIT_FSIZE, plan.rlimit_fsize),
    ] {
        if let Some(bytes) = limit {
            let lim = libc::rlimit {
                rlim_cur: bytes,
                rlim_max: bytes,
            };
            // SAFETY: a plain system call on a stack value.
            unsafe { libc::setrlimit(resource, &lim) };
        }
    }
    Ok(())
}

/// Builds the sandbox's root in a mount namespace of the shim's own, with
/// the backend's privilege (it reaches the state directory, 0700, and the
/// host paths it binds), and moves into it.
fn build_root(plan: &Plan) -> io::Result<()> {
    // SAFETY: raw system calls on descriptors and on pointers into
    // `plan`'s CStrings, valid for the duration of each call.
    unsafe {
        if let Some((user, mnt)) = plan.join {
            if libc::setns(user, libc::CLONE_NEWUSER) != 0
                || libc::setns(mnt, libc::CLONE_NEWNS) != 0
            {
                return Err(io::Error::last_os_error());
            }
        }
        if libc::unshare(libc::CLONE_NEWNS) != 0 {
            return Err(io::Error::last_os_error());
        }
        if !make_mounts_private() {
            fail_setup(plan, -1);
        }
        run_steps(plan, &plan.steps, 0);
        // Init finds its root as its working directory: as the sandbox's
        // uid it could not walk the state directory to it.
        let step = plan.steps.len() as i32;
        if libc::chdir(plan.new_root.as_ptr()) != 0 {
            fail_setup(plan, step);
        }
        // Entering a less privileged user namespace locks every mount but
        // the root, and pivot_root refuses a locked one: the shim pivots
        // first, with the backend's privilege.
        if plan.enter_user.is_some() && !pivot_here() {
            fail_setup(plan, step);
        }
    }
    Ok(())
}

/// Joins the network namespace the plan names, enters the sandbox's user
/// namespace, and makes the namespaces of its own that init starts in.
fn enter_namespaces(plan: &Plan) {
    let step = plan.steps.len() as i32;
    // SAFETY: raw system calls on descriptors the plan holds open.
    unsafe {
        if let Some(net) = plan.join_net {
            if libc::setns(net, libc::CLONE_NEWNET) != 0 {
                fail_setup(plan, step);
            }
        }
        let mut flags =
            libc::CLONE_NEWPID | libc::CLONE_NEWIPC | libc::CLONE_NEWUTS | libc::CLONE_NEWCGROUP;
        if let Some(user) = plan.enter_user {
            // Root of the sandbox is an unprivileged host uid from here on.
            // A new mount namespace owned by that user namespace locks every
            // mount made above: none can be taken off to look beneath.
            if libc::setns(user, libc::CLONE_NEWUSER) != 0
                || libc::setgroups(0, std::ptr::null()) != 0
                || libc::setresgid(0, 0, 0) != 0
                || libc::setresuid(0, 0, 0) != 0
            {
                fail_setup(plan, step);
            }
            flags |= libc::CLONE_NEWNS;
        }
        if plan.new_net {
            flags |= libc::CLONE_NEWNET;
        }
        if libc::unshare(flags) != 0 {
            fail_setup(plan, step);
        }
    }
}

/// Forks init (pid 1 of the new pid namespace) and, in the shim, waits
/// for it and vanishes; returns in init.
fn fork_init(plan: &Plan) -> io::Result<()> {
    // SAFETY: raw system calls on stack buffers and descriptors this
    // process owns.
    unsafe {
        // A pipe only the shim keeps open: init sees it hang up if the shim
        // died before init's parent-death signal was armed.
        let mut alive = [0 as RawFd; 2];
        if libc::pipe2(alive.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            return Err(io::Error::last_os_error());
        }
        let pid = libc::fork();
        if pid < 0 {
            return Err(io::Error::last_os_error());
        }
        if pid > 0 {
            // The shim: hold nothing open but its end of `alive` and the
            // lifeline, wait for init, vanish. Killing it kills init, and
            // with init the whole pid namespace; so does forq's end.
            let (low, high) = if alive[1] < plan.lifeline {
                (alive[1], plan.lifeline)
            } else {
                (plan.lifeline, alive[1])
            };
            libc::syscall(libc::SYS_close_range, 3u32, (low - 1) as u32, 0u32);
            libc::syscall(
                libc::SYS_close_range,
                (low + 1) as u32,
                (high - 1) as u32,
                0u32,
            );
            libc::syscall(libc::SYS_close_range, (high + 1) as u32, u32::MAX, 0u32);
            watch_init(pid, plan.lifeline);
            libc::_exit(0);
        }
        libc::close(alive[1]);
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        let mut poll = libc::pollfd {
            fd: alive[0],
            events: libc::POLLIN,
            revents: 0,
        };
        if libc::poll(&mut poll, 1, 0) != 0 {
            // Hung up: the shim is already gone.
            libc::_exit(1);
        }
        libc::close(alive[0]);
        init(plan)
    }
}

/// The shim's wait for init: until init ends, or until the lifeline hangs
/// up (the forq that started the sandbox died), which kills init first.
fn watch_init(init: libc::pid_t, lifeline: RawFd) {
    // SAFETY: pidfd_open, poll, kill and waitpid on this process's own
    // child and descriptors.
    unsafe {
        let pidfd = libc::syscall(libc::SYS_pidfd_open, init, 0u32) as libc::c_int;
        if pidfd >= 0 {
            loop {
                let mut fds = [
                    libc::pollfd {
                        fd: pidfd,
                        events: libc::POLLIN,
                        revents: 0,
                    },
                    libc::pollfd {
                        fd: lifeline,
                        events: libc::POLLIN,
                        revents: 0,
                    },
                ];
                if libc::poll(fds.as_mut_ptr(), 2, -1) < 0 {
                    if last_errno() == libc::EINTR {
                        continue;
                    }
                    break;
                }
                if fds[0].revents != 0 {
                    break;
                }
                if fds[1].revents != 0 {
                    libc::kill(init, libc::SIGKILL);
                    break;
                }
            }
        }
        let mut status = 0;
        while libc::waitpid(init, &mut status, 0) < 0 && last_errno() == libc::EINTR {}
    }
}

/// Runs `steps` in order; a failing one is reported as step `offset + i`
/// and ends this process.
fn run_steps(plan: &Plan, steps: &[Step], offset: usize) {
    for (i, step) in steps.iter().enumerate() {
        if run_step(step) != 0 {
            fail_setup(plan, (offset + i) as i32);
        }
    }
}

/// Runs one step; nonzero (with `errno` set) when it failed.
fn run_step(step: &Step) -> libc::c_int {
    let null = std::ptr::null::<libc::c_char>();
    // SAFETY: system calls on the steps' prepared strings.
    unsafe {
        match step {
            Step::IfPresent(inner) => {
                let rc = run_step(inner);
                if rc != 0 && last_errno() == libc::ENOENT {
                    0
                } else {
                    rc
                }
            }
            Step::Mkdir(path) => {
                let rc = libc::mkdir(path.as_ptr(), 0o755);
                if rc != 0 && last_errno() == libc::EEXIST {
                    0
                } else {
                    rc
                }
            }
            Step::Symlink { target, link } => libc::symlink(target.as_ptr(), link.as_ptr()),
            Step::Touch(path) => {
                let fd = libc::open(
                    path.as_ptr(),
                    libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC,
                    0o644,
                );
                if fd >= 0 {
                    libc::close(fd);
                    0
                } else {
                    -1
                }
            }
            Step::Mount {
                source,
                target,
                fstype,
                flags,
                data,
            } => libc::mount(
                source.as_ref().map_or(null, |s| s.as_ptr()),
                target.as_ptr(),
                fstype.as_ref().map_or(null, |s| s.as_ptr()),
                *flags,
                data.as_ref()
                    .map_or(std::ptr::null(), |s| s.as_ptr().cast()),
            ),
            Step::Seal {
                target,
                attrs,
                recursive,
            } => {
                let attr = MountAttr {
                    attr_set: *attrs,
                    attr_clr: 0,
                    propagation: 0,
                    userns_fd: 0,
                };
                let flags = if *recursive { AT_RECURSIVE } else { 0 };
                mount_setattr(libc::AT_FDCWD, target, flags, &attr) as libc::c_int
            }
        }
    }
}

fn report(fd: RawFd, words: [i32; 3]) {
    let mut buf = [0u8; 12];
    for (i, w) in words.iter().enumerate() {
        buf[i * 4..i * 4 + 4].copy_from_slice(&w.to_ne_bytes());
    }
    // SAFETY: writing a stack buffer to a descriptor we own.
    unsafe {
        libc::write(fd, buf.as_ptr().cast(), buf.len());
    }
}

fn fail_setup(plan: &Plan, step: i32) -> ! {
    report(plan.status_fd, [REPORT_SETUP_FAILED, step, last_errno()]);
    // SAFETY: _exit is async-signal-safe and ends this process only.
    unsafe { libc::_exit(127) }
}

/// Makes the working directory (a mount point) this namespace's root, and
/// drops the old root from it.
fn pivot_here() -> bool {
    // SAFETY: pivot_root, umount2 and chdir on static strings.
    unsafe {
        libc::syscall(libc::SYS_pivot_root, c".".as_ptr(), c".".as_ptr()) == 0
            && libc::umount2(c".".as_ptr(), libc::MNT_DETACH) == 0
            && libc::chdir(c"/".as_ptr()) == 0
    }
}

/// Stops mount events propagating between this mount namespace and the one
/// it was copied from.
fn make_mounts_private() -> bool {
    let null = std::ptr::null::<libc::c_char>();
    // SAFETY: mount(2) with valid strings and null pointers where allowed.
    unsafe {
        libc::mount(
            null,
            c"/".as_ptr(),
            null,
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ) == 0
    }
}

/// Pid 1 of the new namespace: mounts `/proc`, pivots into the root the
/// shim built, forks the payload, reaps.
fn init(plan: &Plan) -> io::Result<()> {
    // SAFETY (whole function): see `shim`.
    unsafe {
        let first = plan.steps.len() + 1;
        run_steps(plan, &plan.inner_steps, first);
        let step = (first + plan.inner_steps.len()) as i32;
        if plan.enter_user.is_none() && !pivot_here() {
            fail_setup(plan, step);
        }
        let host = plan.hostname.as_bytes();
        libc::sethostname(host.as_ptr().cast(), host.len());
        if plan.new_net && !loopback_up() {
            fail_setup(plan, step + 2);
        }
        let payload = libc::fork();
        if payload < 0 {
            fail_setup(plan, step + 3);
        }
        if payload == 0 {
            return enter_payload(plan);
        }
        // Init holds nothing but the status pipe, so readers see end of file
        // as soon as the payload's own tree lets go of the output.
        let fd = plan.status_fd;
        libc::syscall(libc::SYS_close_range, 0u32, (fd - 1) as u32, 0u32);
        libc::syscall(libc::SYS_close_range, (fd + 1) as u32, u32::MAX, 0u32);
        loop {
            let mut status = 0;
            let pid = libc::waitpid(-1, &mut status, 0);
            if pid == payload {
                report(fd, [REPORT_EXITED, status, 0]);
                // Exiting pid 1 kills whatever the payload left behind.
                libc::_exit(0);
            }
            if pid < 0 && last_errno() != libc::EINTR {
                libc::_exit(1);
            }
        }
    }
}

/// The payload: no capabilities, no way to gain any, then exec.
fn enter_payload(plan: &Plan) -> io::Result<()> {
    const PR_CAP_AMBIENT: libc::c_int = 47;
    const PR_CAP_AMBIENT_CLEAR_ALL: libc::c_ulong = 4;
    const CAP_VERSION_3: u32 = 0x2008_0522;
    #[repr(C)]
    struct CapHeader {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    struct CapData {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    // SAFETY: prctl/capset/chdir on valid pointers to local structs and
    // prepared strings.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        // A session of its own: no controlling terminal, none to acquire
        // (the sandbox's /dev has no tty either).
        if libc::setsid() < 0 {
            return Err(io::Error::last_os_error());
        }
        // Only a pseudo-terminal of its own, when the caller gave one.
        if plan.ctty && libc::ioctl(0, libc::TIOCSCTTY, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
        libc::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
        for cap in 0..64 {
            libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0);
        }
        let mut header = CapHeader {
            version: CAP_VERSION_3,
            pid: 0,
        };
        let data = [
            CapData {
                effective: 0,
                permitted: 0,
                inheritable: 0,
            },
            CapData {
                effective: 0,
                permitted: 0,
                inheritable: 0,
            },
        ];
        if libc::syscall(
            libc::SYS_capset,
            &mut header as *mut CapHeader,
            data.as_ptr(),
        ) != 0
        {
            return Err(io::Error::last_os_error());
        }
        if libc::chdir(plan.cwd.as_ptr()) != 0 {
            return Err(io::Error::last_os_error());
        }
        // Last, since it refuses some of the calls above.
        for program in plan.seccomp {
            let prog = libc::sock_fprog {
                len: program.len() as libc::c_ushort,
                filter: program.as_ptr().cast_mut().cast(),
            };
            if libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                0,
                &prog as *const libc::sock_fprog,
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
        }
    }
    Ok(())
}

/// Brings the new network namespace's loopback interface up.
fn loopback_up() -> bool {
    const SIOCGIFFLAGS: libc::c_ulong = 0x8913;
    const SIOCSIFFLAGS: libc::c_ulong = 0x8914;
    #[repr(C)]
    struct IfReq {
        name: [u8; 16],
        flags: libc::c_short,
        _pad: [u8; 22],
    }
    // SAFETY: ioctl on a socket we own with a correctly sized ifreq.
    unsafe {
        let sock = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if sock < 0 {
            return false;
        }
        let mut req = IfReq {
            name: [0; 16],
            flags: 0,
            _pad: [0; 22],
        };
        req.name[..2].copy_from_slice(b"lo");
        let ok = libc::ioctl(sock, SIOCGIFFLAGS, &mut req) == 0 && {
            req.flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
            libc::ioctl(sock, SIOCSIFFLAGS, &mut req) == 0
        };
        libc::close(sock);
        ok
    }
}

/// Messages to a holder: an op byte and NUL-terminated fields.
pub(crate) const HOLD_MOUNT: u8 = b'M';
pub(crate) const HOLD_UNMOUNT: u8 = b'U';
pub(crate) const HOLD_DETACH: u8 = b'D';
