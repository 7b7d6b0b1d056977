//! The payload's seccomp filter, in the spirit of Docker's default profile:
//! the system calls that reach kernel state a sandboxed program has no use
//! for (other namespaces, mounts, keyrings, BPF, performance counters,
//! io_uring, module and kexec loading, clocks, swap) answer `EPERM`, so
//! ordinary programs fail politely rather than being killed. Compiled once
//! with seccompiler (no hand-assembled BPF), installed by every payload.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule,
};

/// System calls refused outright with `EPERM`.
const REFUSED: &[(&str, libc::c_long)] = &[
    ("unshare", libc::SYS_unshare),
    ("setns", libc::SYS_setns),
    ("mount", libc::SYS_mount),
    ("umount2", libc::SYS_umount2),
    ("pivot_root", libc::SYS_pivot_root),
    ("open_tree", libc::SYS_open_tree),
    ("move_mount", libc::SYS_move_mount),
    ("fsopen", libc::SYS_fsopen),
    ("fsconfig", libc::SYS_fsconfig),
    ("fsmount", libc::SYS_fsmount),
    ("fspick", libc::SYS_fspick),
    ("mount_setattr", libc::SYS_mount_setattr),
    ("keyctl", libc::SYS_keyctl),
    ("add_key", libc::SYS_add_key),
    ("request_key", libc::SYS_request_key),
    ("bpf", libc::SYS_bpf),
    ("perf_event_open", libc::SYS_perf_event_open),
    ("userfaultfd", libc::SYS_userfaultfd),
    ("io_uring_setup", libc::SYS_io_uring_setup),
    ("io_uring_enter", libc::SYS_io_uring_enter),
    ("io_uring_register", libc::SYS_io_uring_register),
    ("kexec_load", libc::SYS_kexec_load),
    ("kexec_file_load", libc::SYS_kexec_file_load),
    ("init_module", libc::SYS_init_module),
    ("finit_module", libc::SYS_finit_module),
    ("delete_module", libc::SYS_delete_module),
    ("clock_settime", libc::SYS_clock_settime),
    ("clock_adjtime", libc::SYS_clock_adjtime),
    ("settimeofday", libc::SYS_settimeofday),
    ("adjtimex", libc::SYS_adjtimex),
    ("swapon", libc::SYS_swapon),
    ("swapoff", libc::SYS_swapoff),
    ("reboot", libc::SYS_reboot),
    ("acct", libc::SYS_acct),
    ("quotactl", libc::SYS_quotactl),
    ("syslog", libc::SYS_syslog),
    ("vhangup", libc::SYS_vhangup),
    ("open_by_handle_at", libc::SYS_open_by_handle_at),
    ("name_to_handle_at", libc::SYS_name_to_handle_at),
    ("lookup_dcookie", libc::SYS_lookup_dcookie),
    #[cfg(target_arch = "x86_64")]
    ("iopl", libc::SYS_iopl),
    #[cfg(target_arch = "x86_64")]
    ("ioperm", libc::SYS_ioperm),
    #[cfg(target_arch = "x86_64")]
    ("uselib", libc::SYS_uselib),
    #[cfg(target_arch = "x86_64")]
    ("ustat", libc::SYS_ustat),
    #[cfg(target_arch = "x86_64")]
    ("sysfs", libc::SYS_sysfs),
    #[cfg(target_arch = "x86_64")]
    ("_sysctl", libc::SYS__sysctl),
];

/// The names of the system calls the filter refuses, for `forq doctor` and
/// the documentation.
pub(crate) fn refused_names() -> Vec<&'static str> {
    let mut names: Vec<&str> = REFUSED.iter().map(|(n, _)| *n).collect();
    names.push("clone (with CLONE_NEWUSER)");
    names.push("personality (but the default, 32-bit Linux and the query)");
    names.push("clone3 (ENOSYS, so C libraries fall back to clone)");
    #[cfg(target_arch = "x86_64")]
    names.push("every x32 system call (numbers with bit 30 set)");
    names
}

/// The programs, in the order the payload installs them. Built once; an
/// architecture seccompiler does not know gets no filter (and `doctor` says
/// so).
pub(crate) fn programs() -> &'static [BpfProgram] {
    static PROGRAMS: OnceLock<Vec<BpfProgram>> = OnceLock::new();
    PROGRAMS.get_or_init(|| match build() {
        Ok(p) => p,
        Err(e) => {
            tracing::warn!(error = %e, "no seccomp filter on this architecture");
            Vec::new()
        }
    })
}

/// Whether the payload gets a filter on this machine.
pub(crate) fn available() -> bool {
    !programs().is_empty()
}

fn build() -> Result<Vec<BpfProgram>, seccompiler::BackendError> {
    let arch = std::env::consts::ARCH.try_into()?;
    let mut refused: BTreeMap<i64, Vec<SeccompRule>> =
        REFUSED.iter().map(|&(_, nr)| (nr, Vec::new())).collect();
    // A new user namespace is the one namespace an unprivileged process may
    // make, and the door to every other; threads and forks stay allowed.
    let new_user = libc::CLONE_NEWUSER as u64;
    refused.insert(
        libc::SYS_clone,
        vec![SeccompRule::new(vec![SeccompCondition::new(
            0,
            SeccompCmpArgLen::Qword,
            SeccompCmpOp::MaskedEq(new_user),
            new_user,
        )?])?],
    );
    // personality: only the values Docker's profile allows (the default,
    // a 32-bit Linux, and the query), not ADDR_NO_RANDOMIZE and the like.
    let allowed_personalities = [0u64, 0x0008, 0x20000, 0x20008, 0xffff_ffff];
    refused.insert(
        libc::SYS_personality,
        vec![SeccompRule::new(
            allowed_personalities
                .into_iter()
                .map(|v| SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, v))
                .collect::<Result<_, _>>()?,
        )?],
    );
    let eperm = SeccompFilter::new(
        refused,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )?;
    // clone3 takes its flags in a struct a filter cannot read: refuse it
    // with ENOSYS, which glibc and musl answer by using clone.
    let enosys = SeccompFilter::new(
        BTreeMap::from([(libc::SYS_clone3, Vec::new())]),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )?;
    let mut programs = vec![eperm.try_into()?, enosys.try_into()?];
    programs.extend(x32());
    Ok(programs)
}

/// On x86_64, the x32 ABI's system calls: the same numbers with bit 30
/// set, which the filters above (keyed by number) never match, so on a
/// kernel with x32 enabled `unshare | 0x40000000` would pass. Refused with
/// `EPERM` as a whole, as Docker's profile does. seccompiler has no range
/// comparison on the call number, so this six-instruction program is
/// written out.
#[cfg(target_arch = "x86_64")]
fn x32() -> Option<BpfProgram> {
    use seccompiler::sock_filter;
    const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
    const X32_SYSCALL_BIT: u32 = 0x4000_0000;
    const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
    const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
    let op = |code: u32, jt: u8, jf: u8, k: u32| sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    };
    let load = libc::BPF_LD | libc::BPF_W | libc::BPF_ABS;
    let jeq = libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K;
    let jge = libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K;
    let ret = libc::BPF_RET | libc::BPF_K;
    // struct seccomp_data: nr at offset 0, arch at 4.
    Some(vec![
        op(load, 0, 0, 4),
        op(jeq, 0, 3, AUDIT_ARCH_X86_64),
        op(load, 0, 0, 0),
        op(jge, 0, 1, X32_SYSCALL_BIT),
        op(ret, 0, 0, SECCOMP_RET_ERRNO | libc::EPERM as u32),
        op(ret, 0, 0, SECCOMP_RET_ALLOW),
    ])
}

#[cfg(not(target_arch = "x86_64"))]
fn x32() -> Option<BpfProgram> {
    None
}
