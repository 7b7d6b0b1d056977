//! The native backend as a trust boundary, run as root the way CI and most
//! servers run forq: each test names one property from SECURITY.md and fails
//! if it regresses. (User-namespace mode as root maps the sandbox onto the
//! caller's uid, so these hold for it only when the caller is not root.)

use std::path::{Path, PathBuf};

use forq_sandbox::{NativeBackend, NativeOptions};

use crate::common::{eventually, host_processes_with, mount_tmpfs, sh, Harness};
use crate::suite::status_field;

/// A host-side path that removes itself.
struct Planted(PathBuf);

impl Drop for Planted {
    fn drop(&mut self) {
        let _ = forq_sandbox_unmount(&self.0);
        if self.0.is_dir() {
            let _ = std::fs::remove_dir_all(&self.0);
        } else {
            let _ = std::fs::remove_file(&self.0);
        }
    }
}

fn forq_sandbox_unmount(path: &Path) -> std::io::Result<std::process::ExitStatus> {
    #[allow(clippy::disallowed_methods)] // test setup on the host
    std::process::Command::new("umount").arg(path).status()
}

fn plant_secret(dir: &Path, name: &str) -> Planted {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, "host secret\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    Planted(path)
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
}

/// The native harness as root; elsewhere these properties are the user
/// namespace's and the tests say they skip.
async fn as_root() -> Option<Harness> {
    if !is_root() {
        assert!(std::env::var_os("CI").is_none(), "CI runs as root");
        eprintln!("SKIPPED: the root-mode trust tests need root");
        return None;
    }
    Harness::native().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn payload_runs_as_an_unprivileged_host_uid() {
    let Some(h) = as_root().await else { return };
    let sb = h.create().await;
    let marker = format!("forq-uid-probe-{}", std::process::id());
    let script = format!("sleep 5; : {marker}");
    let sb = std::sync::Arc::new(sb);
    let running = {
        let sb = sb.clone();
        tokio::spawn(async move { sh(&**sb, &script).await })
    };
    let mut pids = Vec::new();
    assert!(
        eventually(|| {
            pids = host_processes_with(marker.as_bytes());
            !pids.is_empty()
        })
        .await,
        "the payload never showed on the host"
    );
    let status = std::fs::read_to_string(format!("/proc/{}/status", pids[0])).unwrap();
    let uids = status_field(&status, "Uid:");
    let want = forq_sandbox::DEFAULT_ID_BASE.to_string();
    assert!(
        uids.split_whitespace().all(|u| u == want),
        "host-side uids {uids}, want {want}"
    );
    // Inside, it is root of its own namespace.
    let inside = sh(&**sb, "id -u; cat /proc/self/uid_map")
        .await
        .stdout_text();
    let mut lines = inside.lines();
    assert_eq!(lines.next(), Some("0"));
    let map: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(map, ["0", want.as_str(), "65536"]);
    running.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_files_only_root_may_read_stay_unreadable() {
    if !is_root() {
        return;
    }
    let tag = std::process::id();
    // In a read-only system directory, and at the top of a writable
    // toolchain (where cargo keeps its credentials).
    let in_opt = plant_secret(Path::new("/opt"), &format!("forq-it-secret-{tag}"));
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".to_owned());
    let cargo = Path::new(&home).join(".cargo");
    let in_cargo = cargo
        .is_dir()
        .then(|| plant_secret(&cargo, &format!("forq-it-credentials-{tag}")));
    // One removed after the backend opened (no error), one planted after
    // (hidden all the same).
    let gone = cargo
        .is_dir()
        .then(|| plant_secret(&cargo, &format!("forq-it-gone-{tag}")));
    let Some(h) = as_root().await else { return };
    drop(gone);
    let late = cargo
        .is_dir()
        .then(|| plant_secret(&cargo, &format!("forq-it-late-{tag}")));
    let sb = h.create().await;
    let mut paths = vec![in_opt.0.clone(), PathBuf::from("/etc/shadow")];
    paths.extend(in_cargo.iter().chain(&late).map(|p| p.0.clone()));
    for path in &paths {
        let out = sh(
            &*sb,
            &format!("cat {} 2>&1 || echo refused", path.display()),
        )
        .await;
        assert!(
            !out.stdout_text().contains("host secret") && !out.stdout_text().contains("root:"),
            "{} was readable: {out:?}",
            path.display()
        );
    }
    // A world-readable system file still is.
    assert!(sh(&*sb, "cat /etc/passwd")
        .await
        .stdout_text()
        .contains("root:"));
    sb.destroy().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_submount_under_an_exposed_directory_is_read_only_too() {
    if !is_root() {
        return;
    }
    let dir = PathBuf::from(format!("/opt/forq-it-submount-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let planted = Planted(dir.clone());
    mount_tmpfs(&dir, "mode=1777").await;
    let Some(h) = as_root().await else { return };
    let sb = h.create().await;
    let out = sh(
        &*sb,
        &format!(
            "touch {}/x 2>&1 && echo WROTE || echo refused",
            dir.display()
        ),
    )
    .await;
    assert!(out.stdout_text().contains("refused"), "{out:?}");
    assert!(out.stdout_text().contains("Read-only"), "{out:?}");
    sb.destroy().await.unwrap();
    drop(planted);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn payload_has_a_session_of_its_own_and_no_terminal() {
    let Some(h) = as_root().await else { return };
    let sb = h.create().await;
    // Fields 6 and 7 of stat: session id and controlling terminal.
    let out = sh(
        &*sb,
        "read -r pid _ _ _ _ sid tty _ < /proc/self/stat; echo \"$pid $sid $tty\"; \
         test -e /dev/tty && echo has-tty || echo no-tty; (: > /dev/tty) 2>/dev/null && echo opened || echo refused",
    )
    .await;
    let text = out.stdout_text();
    let mut lines = text.lines();
    let ids: Vec<&str> = lines.next().unwrap().split(' ').collect();
    assert_eq!(ids[0], ids[1], "the payload leads its own session: {text}");
    assert_eq!(ids[2], "0", "no controlling terminal: {text}");
    assert_eq!(lines.next(), Some("no-tty"));
    assert_eq!(lines.next(), Some("refused"));
    sb.destroy().await.unwrap();
}

/// Calls system call `nr` with zero arguments from Python inside the
/// sandbox and prints `errno`.
fn errno_of(nr: libc::c_long) -> String {
    errno_with(nr, 0)
}

/// The same with `arg0` as the first argument.
fn errno_with(nr: libc::c_long, arg0: u64) -> String {
    format!(
        "python3 -c \"import ctypes; l = ctypes.CDLL(None, use_errno=True); \
         r = l.syscall({nr}, ctypes.c_ulong({arg0}), 0, 0, 0, 0); \
         print(ctypes.get_errno() if r < 0 else 'ok')\""
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_filter_refuses_namespaces_keyrings_and_bpf_politely() {
    let Some(h) = as_root().await else { return };
    let sb = h.create().await;
    let out = sh(&*sb, "unshare -U true 2>&1; echo \"exit $?\"").await;
    assert!(
        out.stdout_text().contains("Operation not permitted"),
        "{out:?}"
    );
    let eperm = libc::EPERM.to_string();
    for nr in [
        libc::SYS_keyctl,
        libc::SYS_bpf,
        libc::SYS_userfaultfd,
        libc::SYS_io_uring_setup,
        libc::SYS_perf_event_open,
    ] {
        let out = sh(&*sb, &errno_of(nr)).await;
        assert_eq!(out.stdout_text().trim(), eperm, "syscall {nr}: {out:?}");
    }
    // personality: the query is fine, turning off address randomisation
    // is not.
    let query = sh(&*sb, &errno_with(libc::SYS_personality, 0xffff_ffff)).await;
    assert_eq!(query.stdout_text().trim(), "ok", "{query:?}");
    let no_aslr = sh(&*sb, &errno_with(libc::SYS_personality, 0x0040000)).await;
    assert_eq!(no_aslr.stdout_text().trim(), eperm, "{no_aslr:?}");
    // The x32 ABI's numbers (bit 30 set) are refused as a whole: on a
    // kernel with x32 enabled, `unshare | 0x40000000` would otherwise pass
    // a filter keyed by number (without x32 the kernel says ENOSYS).
    #[cfg(target_arch = "x86_64")]
    for nr in [libc::SYS_unshare, libc::SYS_getpid, libc::SYS_keyctl] {
        let out = sh(&*sb, &errno_of(nr | 0x4000_0000)).await;
        assert_eq!(out.stdout_text().trim(), eperm, "x32 syscall {nr}: {out:?}");
    }
    // clone3 says "not here", so threads fall back to clone and still work.
    let out = sh(&*sb, &errno_of(libc::SYS_clone3)).await;
    assert_eq!(out.stdout_text().trim(), libc::ENOSYS.to_string());
    let threads = sh(
        &*sb,
        "python3 -c 'import threading; t = threading.Thread(target=print, args=(\"thread\",)); t.start(); t.join()'",
    )
    .await;
    assert_eq!(threads.stdout_text(), "thread\n", "{threads:?}");
    sb.destroy().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proc_is_masked_and_there_is_no_sys() {
    let Some(h) = as_root().await else { return };
    let sb = h.create().await;
    // Each masked file the host has is /dev/null inside (a character
    // device, empty); a masked directory is empty.
    let masked: Vec<&str> = ["kcore", "keys", "timer_list", "sched_debug", "kallsyms"]
        .into_iter()
        .filter(|f| Path::new("/proc").join(f).exists())
        .collect();
    assert!(!masked.is_empty(), "the host has none of the masked files");
    let out = sh(
        &*sb,
        &format!(
            "for f in {}; do printf '%s %s %s\\n' $f \"$(stat -c %F /proc/$f)\" $(head -c 64 /proc/$f | wc -c); done; \
             ls -A /proc/acpi 2>/dev/null | wc -l; \
             (echo 1 > /proc/sys/kernel/forq_probe) 2>/dev/null && echo sys-written || echo sys-ro; \
             ls /sys 2>/dev/null && echo has-sys || echo no-sys; \
             awk -F: '$3 != \"/\" {{ bad = 1 }} END {{ print bad ? \"host-cgroup\" : \"own-cgroup\" }}' /proc/self/cgroup",
            masked.join(" ")
        ),
    )
    .await;
    let text = out.stdout_text();
    let mut lines = text.lines();
    for f in &masked {
        assert_eq!(
            lines.next(),
            Some(format!("{f} character special file 0").as_str()),
            "{text}"
        );
    }
    assert_eq!(lines.next(), Some("0"), "/proc/acpi is empty: {text}");
    assert_eq!(lines.next(), Some("sys-ro"), "{text}");
    assert_eq!(lines.next(), Some("no-sys"), "{text}");
    assert_eq!(lines.next(), Some("own-cgroup"), "{text}");
    sb.destroy().await.unwrap();
}

fn open_state(state: &Path) -> forq_sandbox::Result<NativeBackend> {
    let mut opts = NativeOptions::default();
    opts.state_dir = Some(state.to_path_buf());
    NativeBackend::open(opts)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_directory_of_another_user_or_behind_a_link_is_refused() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    if !is_root() {
        return;
    }
    let parent = tempfile::Builder::new()
        .prefix("forq-it-statecheck-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let theirs = parent.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    std::os::unix::fs::chown(&theirs, Some(12345), Some(12345)).unwrap();
    let err = open_state(&theirs).unwrap_err();
    assert!(
        matches!(err, forq_sandbox::Error::UnsafeStateDir { .. })
            && err.to_string().contains("12345"),
        "{err}"
    );
    let mine = parent.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    let link = parent.path().join("link");
    std::os::unix::fs::symlink(&mine, &link).unwrap();
    let err = open_state(&link).unwrap_err();
    assert!(err.to_string().contains("symbolic link"), "{err}");
    // A new one is made private; a loose one of the caller's is tightened.
    std::fs::set_permissions(&mine, std::fs::Permissions::from_mode(0o777)).unwrap();
    drop(open_state(&mine).unwrap());
    assert_eq!(std::fs::metadata(&mine).unwrap().mode() & 0o777, 0o700);
    let fresh = parent.path().join("fresh");
    drop(open_state(&fresh).unwrap());
    assert_eq!(std::fs::metadata(&fresh).unwrap().mode() & 0o777, 0o700);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_sandbox_writes_lands_on_disk_as_roots() {
    // The id map shows the workspace as the sandbox's own; on the host its
    // layers hold root's files, as they did before the map.
    use std::os::unix::fs::MetadataExt;
    let Some(h) = as_root().await else { return };
    let sb = h.create().await;
    assert_eq!(
        sh(&*sb, "echo b > b.txt && echo ok").await.stdout_text(),
        "ok\n"
    );
    let state = h.state_path().unwrap();
    let upper = std::fs::read_dir(state.join("s"))
        .unwrap()
        .flatten()
        .map(|e| e.path().join("u/v0/b.txt"))
        .find(|p| p.exists())
        .expect("the command's file in an upper layer");
    assert_eq!(std::fs::metadata(&upper).unwrap().uid(), 0);
    sb.destroy().await.unwrap();
}

/// `forq doctor`'s native lines are measured by a probe in a sandbox, not
/// said from constants: as root, each holds, and says what it saw.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_measures_each_protection_in_a_sandbox() {
    if !is_root() {
        assert!(std::env::var_os("CI").is_none(), "CI runs as root");
        eprintln!("SKIPPED: the root-mode trust tests need root");
        return;
    }
    std::fs::create_dir_all("/var/tmp").unwrap();
    let state = tempfile::Builder::new()
        .prefix("forq-it-doctor-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let mut opts = NativeOptions::default();
    opts.state_dir = Some(state.path().to_path_buf());
    let report = forq_sandbox::protections(opts).await;
    let native = |name: &str| {
        report
            .iter()
            .find(|p| p.backend == forq_sandbox::BackendKind::Native && p.name == name)
            .unwrap_or_else(|| panic!("no native line {name}: {report:#?}"))
            .clone()
    };
    assert!(!report.iter().any(|p| p.name == "probe"), "{report:#?}");
    for name in [
        "read-only system directories",
        "no terminal",
        "capabilities",
        "seccomp",
        "/proc and /sys",
        "network for tests and the agent",
        "network for installs",
    ] {
        let p = native(name);
        assert!(p.in_force, "{p:?}");
        assert!(p.detail.starts_with("measured"), "{p:?}");
    }
    let overlay = native("overlayfs");
    assert!(
        overlay.in_force && overlay.detail.contains("stayed in its layer"),
        "{overlay:?}"
    );
    assert!(native("capabilities").detail.contains("NoNewPrivs 1"));
    assert!(native("network for tests and the agent")
        .detail
        .ends_with(": lo"));
    // The engine's caps and capabilities, measured in a container with a
    // run's caps (these said "yes" from constants before).
    let docker = |name: &str| {
        report
            .iter()
            .find(|p| p.backend == forq_sandbox::BackendKind::Docker && p.name == name)
            .cloned()
    };
    if docker("available").is_some() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI has a Docker engine: {report:#?}"
        );
        return;
    }
    for name in [
        "capabilities",
        "memory and pids caps",
        "network for tests and the agent",
    ] {
        let p = docker(name).unwrap_or_else(|| panic!("no docker line {name}: {report:#?}"));
        assert!(p.in_force && p.detail.starts_with("measured"), "{p:?}");
    }
}

/// Attack (forq's adversarial corpus, SECURITY.md): the state directory is
/// removed recursively while a backend is live, or after its process died
/// with its views mounted — an operator's `rm -rf`, a test's temporary
/// directory dropped in a panic. As root the state directory holds
/// idmapped views of the writable toolchains and of each sandbox's base,
/// and a removal that reached a writable view deleted the host's files
/// through it: this machine's whole `~/.pyenv` went that way once. The
/// views are read-only now: the removal stops at them, and the host's
/// toolchain and repository are whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removing_the_state_directory_never_reaches_the_hosts_toolchains_or_base() {
    use forq_sandbox::{Backend, SandboxSpec, Toolchain};
    if !is_root() {
        return;
    }
    let host = tempfile::Builder::new()
        .prefix("forq-it-hostfiles-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let toolchain = host.path().join("toolchain");
    std::fs::create_dir_all(toolchain.join("bin")).unwrap();
    std::fs::write(toolchain.join("bin/tool"), "#!/bin/sh\necho tool\n").unwrap();
    let base = host.path().join("repo");
    std::fs::create_dir_all(&base).unwrap();
    std::fs::write(base.join("main.py"), "print('mine')\n").unwrap();
    let state = host.path().join("state");
    let mut opts = NativeOptions::default();
    opts.state_dir = Some(state.clone());
    opts.toolchains = Some(vec![Toolchain::new(&toolchain, true)]);
    let backend = NativeBackend::open(opts).unwrap();
    let sb = backend.create(&SandboxSpec::new(&base)).await.unwrap();
    // What a recursive removal does when it reaches each view (in
    // whatever order it meets them): removes what the view shows.
    let views: Vec<PathBuf> = forq_sandbox::mounts_under(&state.join("i"));
    let showing = |file: &str| {
        views
            .iter()
            .find(|v| v.join(file).is_file())
            .unwrap_or_else(|| panic!("a view showing {file}: {views:?}"))
            .clone()
    };
    let (tool_view, base_view) = (showing("bin/tool"), showing("main.py"));
    assert!(
        std::fs::remove_dir_all(&tool_view).is_err(),
        "the toolchain's view stops a removal"
    );
    assert!(
        std::fs::remove_file(base_view.join("main.py")).is_err(),
        "so does the base's"
    );
    assert!(
        std::fs::remove_dir_all(&state).is_err(),
        "and the removal of the whole"
    );
    assert_eq!(
        std::fs::read_to_string(toolchain.join("bin/tool")).unwrap(),
        "#!/bin/sh\necho tool\n",
        "the host's toolchain is whole"
    );
    assert_eq!(
        std::fs::read_to_string(base.join("main.py")).unwrap(),
        "print('mine')\n",
        "the host's repository is whole"
    );
    sb.destroy().await.unwrap();
    drop(backend);
}
