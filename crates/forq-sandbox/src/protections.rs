//! What isolates a sandbox on this machine, backend by backend: the report
//! behind `forq doctor`. Each line says whether a protection is in force
//! and, when it is not, why.

use serde::Serialize;

use crate::backend::BackendKind;
use crate::native::{NativeBackend, NativeOptions};
use crate::spec::Limits;

/// One protection of one backend.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Protection {
    /// The backend it belongs to.
    pub backend: BackendKind,
    /// What it is (`user namespace`, `seccomp`, `memory cap`...).
    pub name: &'static str,
    /// Whether it holds for sandboxes made here now.
    pub in_force: bool,
    /// How it is enforced, or why it is not.
    pub detail: String,
}

fn line(backend: BackendKind, name: &'static str, in_force: bool, detail: String) -> Protection {
    Protection {
        backend,
        name,
        in_force,
        detail,
    }
}

/// Looks at every backend this build has, opening each as a run would
/// (the native backend with `native`'s options).
pub async fn protections(native: NativeOptions) -> Vec<Protection> {
    let mut out = native_protections(native);
    #[cfg(feature = "docker")]
    out.extend(docker_protections().await);
    out.push(line(
        BackendKind::Host,
        "isolation",
        false,
        "none: the host backend runs commands as you, with your files and network; \
         only an operator's --backend host chooses it"
            .to_owned(),
    ));
    out
}

fn native_protections(options: NativeOptions) -> Vec<Protection> {
    let n = BackendKind::Native;
    let backend = match NativeBackend::open(options) {
        Ok(b) => b,
        Err(e) => return vec![line(n, "available", false, e.to_string())],
    };
    let uid = backend.sandbox_host_uid();
    let mut out = vec![
        line(
            n,
            "overlayfs",
            true,
            format!(
                "copy-on-write layers under {} ({})",
                backend.state_dir().display(),
                if backend.in_user_namespace() {
                    "mounted in a user namespace of forq's own"
                } else {
                    "mounted on the host over idmapped views"
                }
            ),
        ),
        line(
            n,
            "unprivileged uid",
            uid != 0,
            if uid != 0 {
                format!("the sandbox's root is host uid {uid} (a user namespace)")
            } else {
                "the sandbox's root is host root: user-namespace mode as root maps it onto the \
                 caller; leave NativeOptions::user_namespace unset"
                    .to_owned()
            },
        ),
        line(
            n,
            "read-only system directories",
            true,
            "/usr, /etc, /opt, /bin, /lib and read-only toolchains bound read-only, nosuid, \
             nodev, submounts included; home directories and /etc/shadow absent"
                .to_owned(),
        ),
        line(
            n,
            "no terminal",
            true,
            "a session of its own, no controlling terminal, no /dev/tty".to_owned(),
        ),
        line(
            n,
            "capabilities",
            true,
            "none, bounding set empty, no_new_privs".to_owned(),
        ),
    ];
    out.push(if backend.seccomp_in_force() {
        line(
            n,
            "seccomp",
            true,
            format!("EPERM for {}", NativeBackend::seccomp_refuses().join(", ")),
        )
    } else {
        line(
            n,
            "seccomp",
            false,
            format!("no filter is built for {}", std::env::consts::ARCH),
        )
    });
    out.push(line(
        n,
        "/proc and /sys",
        true,
        "a /proc of its own pid namespace with kcore, keys, timer_list, sched_debug... \
         masked and sys, bus, fs, irq read-only; no /sys; a cgroup namespace of its own"
            .to_owned(),
    ));
    let (memory, pids, cpu) = backend.caps_enforced();
    let how = backend.limits_mechanism();
    let standard = Limits::standard();
    out.push(line(
        n,
        "memory cap",
        true,
        format!(
            "{} by default, through {}",
            mib(standard.memory_bytes),
            if memory {
                how
            } else {
                "an address-space rlimit"
            }
        ),
    ));
    out.push(line(
        n,
        "pids cap",
        pids,
        if pids {
            format!(
                "{} by default, through {how}",
                standard.pids.unwrap_or_default()
            )
        } else {
            "not enforced: no pids cgroup can be made here (root, or a delegated cgroup, \
             is needed)"
                .to_owned()
        },
    ));
    out.push(line(
        n,
        "CPU cap",
        cpu,
        if cpu {
            format!(
                "{} cores by default, through {how}",
                standard.cpus.unwrap_or_default()
            )
        } else {
            "not enforced: no cpu cgroup can be made here".to_owned()
        },
    ));
    out.push(line(
        n,
        "network for tests and the agent",
        true,
        "none: a loopback interface of the sandbox's own".to_owned(),
    ));
    out.push(line(
        n,
        "network for installs",
        true,
        format!(
            "a network namespace whose only way out is forq's egress proxy: the stack's \
             package registries and FORQ_EGRESS_ALLOW, nothing else{}",
            if backend.in_user_namespace() {
                " (made inside forq's user namespace)"
            } else {
                ""
            }
        ),
    ));
    out
}

fn mib(bytes: Option<u64>) -> String {
    bytes.map_or_else(|| "no cap".to_owned(), |b| format!("{} MiB", b >> 20))
}

#[cfg(feature = "docker")]
async fn docker_protections() -> Vec<Protection> {
    let d = BackendKind::Docker;
    let backend = match crate::docker::DockerBackend::connect(
        crate::docker::DockerOptions::default(),
    )
    .await
    {
        Ok(b) => b,
        Err(e) => return vec![line(d, "available", false, e.to_string())],
    };
    let options = backend.security_options().await.unwrap_or_default();
    let has = |name: &str| options.iter().any(|o| o.contains(&format!("name={name}")));
    vec![
        line(
            d,
            "capabilities",
            true,
            "all dropped, no-new-privileges".to_owned(),
        ),
        line(
            d,
            "seccomp",
            has("seccomp"),
            if has("seccomp") {
                "the engine's default profile".to_owned()
            } else {
                "the engine runs without seccomp".to_owned()
            },
        ),
        line(
            d,
            "unprivileged uid",
            true,
            if has("userns") || has("rootless") {
                "forq's image runs as uid 1000, and the engine remaps container ids \
                 (userns-remap or rootless)"
                    .to_owned()
            } else {
                "forq's image runs as uid 1000 without capabilities; an image of yours runs as \
                 its USER (root when it names none: use userns-remap or rootless for those)"
                    .to_owned()
            },
        ),
        line(
            d,
            "memory and pids caps",
            true,
            "enforced by the engine's cgroups".to_owned(),
        ),
        match backend.egress_route() {
            Ok(route) => line(
                d,
                "network for installs",
                true,
                format!(
                    "containers have no network; install steps get forq's egress proxy (the stack's \
                     registries and FORQ_EGRESS_ALLOW): {route}"
                ),
            ),
            Err(why) => line(
                d,
                "network for installs",
                false,
                format!("install steps are refused on this engine: {why}"),
            ),
        },
    ]
}
