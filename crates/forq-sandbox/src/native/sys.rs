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
}

/// `MOUNT_ATTR_*` of mount_setattr(2), spelt out because libc keeps them in
/// a module of its own that not every version exports.
pub(crate) const MOUNT_ATTR_RDONLY: u64 = 0x1;
pub(crate) const MOUNT_ATTR_NOSUID: u64 = 0x2;
pub(crate) const MOUNT_ATTR_NODEV: u64 = 0x4;
pub(crate) const MOUNT_ATTR_NOEXEC: u64 = 0x8;
const MOUNT_ATTR_IDMAP: u64 = 0x0010_0000;
const AT_RECURSIVE: libc::c_int = 0x8000;
const OPEN_TREE_CLONE: libc::c_uint = 1;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 4;

/// `struct mount_attr` (version 0, 32 bytes).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

fn mount_setattr(
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
    // SAFETY (whole function): raw system calls on pointers into `plan`'s
    // CStrings and on stack buffers, all valid for the duration of each call.
    unsafe {
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
                libc::setrlimit(resource, &lim);
            }
        }
        if let Some((user, mnt)) = plan.join {
            if libc::setns(user, libc::CLONE_NEWUSER) != 0
                || libc::setns(mnt, libc::CLONE_NEWNS) != 0
            {
                return Err(io::Error::last_os_error());
            }
        }
        // The root is built in a mount namespace of the shim's own, with
        // the backend's privilege: it reaches the state directory (0700) and
        // the host paths it binds.
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
                fail_setup(plan, plan.steps.len() as i32);
            }
            flags |= libc::CLONE_NEWNS;
        }
        if plan.new_net {
            flags |= libc::CLONE_NEWNET;
        }
        if libc::unshare(flags) != 0 {
            fail_setup(plan, plan.steps.len() as i32);
        }
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
            // The shim: hold nothing open but its end of `alive`, wait for
            // init, vanish. Killing it kills init, and with init the whole
            // pid namespace.
            let keep = alive[1];
            libc::syscall(libc::SYS_close_range, 3u32, (keep - 1) as u32, 0u32);
            libc::syscall(libc::SYS_close_range, (keep + 1) as u32, u32::MAX, 0u32);
            let mut status = 0;
            while libc::waitpid(pid, &mut status, 0) < 0 && last_errno() == libc::EINTR {}
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

/// Runs `steps` in order; a failing one is reported as step `offset + i`
/// and ends this process.
fn run_steps(plan: &Plan, steps: &[Step], offset: usize) {
    let null = std::ptr::null::<libc::c_char>();
    for (i, step) in steps.iter().enumerate() {
        // SAFETY: system calls on the steps' prepared strings.
        let rc = unsafe {
            match step {
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
        };
        if rc != 0 {
            fail_setup(plan, (offset + i) as i32);
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

/// Messages to a holder: an op byte and NUL-terminated fields.
pub(crate) const HOLD_MOUNT: u8 = b'M';
pub(crate) const HOLD_UNMOUNT: u8 = b'U';
pub(crate) const HOLD_DETACH: u8 = b'D';

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

fn write_file(path: &std::ffi::CStr, bytes: &[u8]) -> bool {
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

fn read_exact(fd: RawFd, buf: &mut [u8]) -> bool {
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

fn holder(plan: &HolderPlan) -> io::Result<()> {
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

/// Attaches at `target` a copy of the mount at `source` whose ids are mapped
/// through the user namespace `userns` (an idmapped mount), private, so that
/// nothing mounted below either side propagates to the other.
pub(crate) fn mount_idmapped(source: &CString, target: &CString, userns: RawFd) -> io::Result<()> {
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
            attr_set: MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
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

/// Changes the owner of `path` (not following a link).
pub(crate) fn lchown(path: &CString, uid: u32, gid: u32) -> io::Result<()> {
    // SAFETY: lchown(2) with a valid string.
    if unsafe { libc::lchown(path.as_ptr(), uid, gid) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A TCP listener on `127.0.0.1:port` inside the network namespace `ns`
/// (a container's), made on a thread of its own that joins it and ends.
#[cfg_attr(not(feature = "docker"), allow(dead_code))] // the docker backend's
pub(crate) fn listener_in(ns: &std::fs::File, port: u16) -> io::Result<std::net::TcpListener> {
    use std::os::fd::AsRawFd;
    let fd = ns.as_raw_fd();
    std::thread::scope(|scope| {
        scope
            .spawn(move || {
                // SAFETY: setns on this thread alone, which ends right after.
                if unsafe { libc::setns(fd, libc::CLONE_NEWNET) } != 0 {
                    return Err(io::Error::last_os_error());
                }
                std::net::TcpListener::bind(("127.0.0.1", port))
            })
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the namespace thread panicked")))
    })
}

/// A new network namespace with its loopback up and a TCP listener on
/// `127.0.0.1:port` inside it, made on a thread of its own (a namespace is
/// per thread) that ends at once: the namespace lives on in the returned
/// descriptor and the socket.
pub(crate) fn net_namespace_with_listener(
    port: u16,
) -> io::Result<(std::fs::File, std::net::TcpListener)> {
    std::thread::spawn(move || {
        // SAFETY: unshare on this thread alone, which ends right after.
        if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
            return Err(io::Error::last_os_error());
        }
        if !loopback_up() {
            return Err(io::Error::other("cannot bring up the loopback interface"));
        }
        let listener = std::net::TcpListener::bind(("127.0.0.1", port))?;
        let ns = std::fs::File::open("/proc/thread-self/ns/net")?;
        Ok((ns, listener))
    })
    .join()
    .unwrap_or_else(|_| Err(io::Error::other("the namespace thread panicked")))
}

/// A thread in a new network namespace (its loopback up) that stays there,
/// connecting to its `127.0.0.1` ports on request: what reaches a service
/// running in a sandbox that has no network of its own. Needs root.
pub(crate) fn service_namespace() -> io::Result<crate::service::ServiceNetwork> {
    crate::service::ServiceNetwork::spawn(|| {
        // SAFETY: unshare on this thread alone, which serves only this.
        if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
            return Err(io::Error::last_os_error());
        }
        if !loopback_up() {
            return Err(io::Error::other("cannot bring up the loopback interface"));
        }
        Ok(())
    })
}

/// A thread inside the network namespace `netns` (a container's), staying
/// there to connect to its ports (see [`service_namespace`]).
#[cfg_attr(not(feature = "docker"), allow(dead_code))]
pub(crate) fn service_in(netns: std::fs::File) -> io::Result<crate::service::ServiceNetwork> {
    crate::service::ServiceNetwork::spawn(move || {
        use std::os::fd::AsRawFd;
        // SAFETY: setns on this thread alone, with a namespace file we hold.
        if unsafe { libc::setns(netns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    })
}

/// Installs on `cmd` a process that enters the user namespace `user` (the
/// holder's), makes a network namespace there with its loopback up and a
/// TCP listener on `127.0.0.1:port`, writes the listener's descriptor
/// number on `ready` and sleeps until killed: its parent takes the
/// listener with `pidfd_getfd` and the namespace from `/proc`. It never
/// execs. (Without root, only a process inside the holder's user namespace
/// may make a network namespace the sandbox can join.)
pub(crate) fn install_net_helper(
    cmd: &mut std::process::Command,
    user: RawFd,
    ready: RawFd,
    port: u16,
) {
    use std::os::unix::process::CommandExt;
    // SAFETY: as for `install`: system calls on descriptors, a stack
    // sockaddr and a stack buffer.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setns(user, libc::CLONE_NEWUSER) != 0
                || libc::unshare(libc::CLONE_NEWNET) != 0
                || !loopback_up()
            {
                return Err(io::Error::last_os_error());
            }
            let sock = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
            if sock < 0 {
                return Err(io::Error::last_os_error());
            }
            let addr = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: port.to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes([127, 0, 0, 1]),
                },
                sin_zero: [0; 8],
            };
            if libc::bind(
                sock,
                (&addr as *const libc::sockaddr_in).cast(),
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            ) != 0
                || libc::listen(sock, 128) != 0
            {
                return Err(io::Error::last_os_error());
            }
            let number = sock.to_ne_bytes();
            libc::write(ready, number.as_ptr().cast(), number.len());
            // Keep the socket; let go of everything else (the caller's
            // spawn returns once its close-on-exec pipe is closed here).
            let keep = sock;
            libc::syscall(libc::SYS_close_range, 0u32, (keep - 1) as u32, 0u32);
            libc::syscall(libc::SYS_close_range, (keep + 1) as u32, u32::MAX, 0u32);
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
