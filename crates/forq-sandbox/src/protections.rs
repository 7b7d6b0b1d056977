//! What isolates a sandbox on this machine, backend by backend: the report
//! behind `forq doctor`. Each line says whether a protection is in force
//! and, when it is not, why. A line is measured, not assumed: doctor makes
//! a sandbox on each backend and a probe inside it reports what it sees
//! (its capabilities, its seccomp mode, what it may write, its terminal,
//! its network interfaces, its `/proc` and `/sys`, its cgroup's caps).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use crate::backend::{Backend, BackendKind};
use crate::native::{NativeBackend, NativeOptions};
use crate::spec::{ExecRequest, Limits, Network, SandboxSpec};

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
    let mut out = native_protections(native).await;
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

/// What the probe prints, one `key=value` a line, from inside a sandbox.
const PROBE: &str = r#"
st() { grep "^$1:" /proc/self/status | awk '{print $2}'; }
echo "cap_eff=$(st CapEff)"
echo "cap_bnd=$(st CapBnd)"
echo "no_new_privs=$(st NoNewPrivs)"
echo "seccomp=$(st Seccomp)"
touch /usr/.forq-probe 2>/dev/null && echo usr=writable || echo usr=read-only
touch /etc/.forq-probe 2>/dev/null && echo etc=writable || echo etc=read-only
[ -s /etc/shadow ] && echo shadow=readable || echo shadow=masked
( : < /dev/tty ) 2>/dev/null && echo tty=open || echo tty=none
[ -t 0 ] || [ -t 1 ] && echo terminal=yes || echo terminal=no
[ -s /proc/kcore ] && echo kcore=readable || echo kcore=masked
echo "sys=$(ls /sys 2>/dev/null | wc -l)"
echo "ifaces=$(awk 'NR>2 {sub(":", "", $1); printf "%s ", $1}' /proc/net/dev)"
echo "proxy=${HTTPS_PROXY:-none}"
echo probe > .forq-doctor-probe && echo workspace=writable || echo workspace=read-only
m=$(cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null)
echo "memory_max=${m:-unknown}"
p=$(cat /sys/fs/cgroup/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids/pids.max 2>/dev/null)
echo "pids_max=${p:-unknown}"
"#;

/// What a probe saw.
#[derive(Debug, Default)]
struct Probe(BTreeMap<String, String>);

impl Probe {
    fn get(&self, key: &str) -> &str {
        self.0.get(key).map_or("", String::as_str)
    }
}

/// Runs [`PROBE`] in a sandbox of `backend` over a fresh empty directory,
/// with the caps every run's sandbox has and `network`; also whether what
/// it wrote reached that directory (it must not: the workspace is
/// copy-on-write).
async fn probe(backend: &dyn Backend, network: Network) -> Result<(Probe, bool), String> {
    let base = std::env::temp_dir().join(format!("forq-doctor-{}", crate::state::new_id()));
    std::fs::create_dir_all(&base).map_err(|e| format!("cannot make {}: {e}", base.display()))?;
    let result = async {
        let sandbox = backend
            .create(
                &SandboxSpec::new(&base)
                    .network(Network::None)
                    .limits(Limits::standard()),
            )
            .await
            .map_err(|e| e.to_string())?;
        let out = sandbox
            .exec(
                ExecRequest::shell(PROBE)
                    .network(network)
                    .timeout(Duration::from_secs(60)),
            )
            .await
            .map_err(|e| e.to_string());
        let _ = sandbox.destroy().await;
        let out = out?;
        let seen = out
            .stdout_text()
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.trim().to_owned()))
            .collect();
        Ok((Probe(seen), base.join(".forq-doctor-probe").exists()))
    }
    .await;
    let _ = std::fs::remove_dir_all(&base);
    result
}

/// A line measured by a probe: `None` when the probe could not run says so.
fn measured(
    backend: BackendKind,
    name: &'static str,
    probe: Option<&Probe>,
    check: impl FnOnce(&Probe) -> (bool, String),
) -> Protection {
    match probe {
        Some(p) => {
            let (ok, detail) = check(p);
            line(backend, name, ok, detail)
        }
        None => line(
            backend,
            name,
            false,
            "not measured: the probe sandbox could not run".to_owned(),
        ),
    }
}

async fn native_protections(options: NativeOptions) -> Vec<Protection> {
    let n = BackendKind::Native;
    let backend = match NativeBackend::open(options) {
        Ok(b) => b,
        Err(e) => return vec![line(n, "available", false, e.to_string())],
    };
    let tests = probe(&backend, Network::None).await;
    let installs = probe(&backend, Network::Proxy).await;
    let mut out = Vec::new();
    for (what, result) in [("a test run", &tests), ("an install step", &installs)] {
        if let Err(e) = result {
            out.push(line(
                n,
                "probe",
                false,
                format!("a probe sandbox for {what} could not run: {e}"),
            ));
        }
    }
    let t = tests.as_ref().ok().map(|(p, _)| p);
    let leaked = tests.as_ref().is_ok_and(|(_, leaked)| *leaked);
    let i = installs.as_ref().ok().map(|(p, _)| p);
    out.extend(filesystem_lines(&backend, t, leaked));
    out.extend(process_lines(&backend, t));
    out.extend(cap_lines(&backend));
    out.extend(network_lines(&backend, t, i));
    out
}

/// The workspace's layers, the uid, the system directories.
fn filesystem_lines(backend: &NativeBackend, t: Option<&Probe>, leaked: bool) -> Vec<Protection> {
    let n = BackendKind::Native;
    let uid = backend.sandbox_host_uid();
    let mut out = Vec::new();
    out.push(measured(n, "overlayfs", t, |p| {
        let ok = p.get("workspace") == "writable" && !leaked;
        (
            ok,
            if ok {
                format!(
                    "copy-on-write layers under {} ({}): the probe's write stayed in its layer",
                    backend.state_dir().display(),
                    if backend.in_user_namespace() {
                        "mounted in a user namespace of forq's own"
                    } else {
                        "mounted on the host over idmapped views"
                    }
                )
            } else if leaked {
                "the probe's write reached the base directory".to_owned()
            } else {
                "the probe could not write its workspace".to_owned()
            },
        )
    }));
    out.push(line(
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
    ));
    out.push(measured(n, "read-only system directories", t, |p| {
        let ok = p.get("usr") == "read-only"
            && p.get("etc") == "read-only"
            && p.get("shadow") == "masked";
        (
            ok,
            format!(
                "measured: /usr {}, /etc {}, /etc/shadow {} (bound read-only, nosuid, nodev, \
                 submounts included)",
                p.get("usr"),
                p.get("etc"),
                p.get("shadow")
            ),
        )
    }));
    out
}

/// The terminal, capabilities, seccomp, /proc and /sys.
fn process_lines(backend: &NativeBackend, t: Option<&Probe>) -> Vec<Protection> {
    let n = BackendKind::Native;
    let mut out = Vec::new();
    out.push(measured(n, "no terminal", t, |p| {
        let ok = p.get("tty") == "none" && p.get("terminal") == "no";
        (
            ok,
            format!(
                "measured: /dev/tty {}, standard streams {} a terminal (a session of its own)",
                if p.get("tty") == "none" {
                    "does not open"
                } else {
                    "opens"
                },
                if p.get("terminal") == "no" { "not" } else { "" }
            ),
        )
    }));
    out.push(measured(n, "capabilities", t, capabilities));
    out.push(measured(n, "seccomp", t, |p| {
        let ok = backend.seccomp_in_force() && p.get("seccomp") == "2";
        (
            ok,
            if ok {
                format!(
                    "measured: a filter in force (Seccomp: 2); EPERM for {}",
                    NativeBackend::seccomp_refuses().join(", ")
                )
            } else if !backend.seccomp_in_force() {
                format!("no filter is built for {}", std::env::consts::ARCH)
            } else {
                format!(
                    "measured: Seccomp: {} (no filter in force)",
                    p.get("seccomp")
                )
            },
        )
    }));
    out.push(measured(n, "/proc and /sys", t, |p| {
        let ok = p.get("kcore") == "masked" && p.get("sys") == "0";
        (
            ok,
            format!(
                "measured: /proc/kcore {}, /sys {} (a /proc of its own pid namespace, kernel \
                 files masked, a cgroup namespace of its own)",
                p.get("kcore"),
                if p.get("sys") == "0" {
                    "absent"
                } else {
                    "present"
                }
            ),
        )
    }));
    out
}

/// The memory, pids and CPU caps, and how each is enforced.
fn cap_lines(backend: &NativeBackend) -> Vec<Protection> {
    let n = BackendKind::Native;
    let mut out = Vec::new();
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
    out
}

/// The network of test runs and of installs.
fn network_lines(backend: &NativeBackend, t: Option<&Probe>, i: Option<&Probe>) -> Vec<Protection> {
    let n = BackendKind::Native;
    let mut out = Vec::new();
    out.push(measured(n, "network for tests and the agent", t, |p| {
        let ok = p.get("ifaces") == "lo";
        (ok, format!("measured interfaces: {}", p.get("ifaces")))
    }));
    out.push(measured(n, "network for installs", i, |p| {
        let ok = p.get("ifaces") == "lo" && p.get("proxy").starts_with("http://127.0.0.1:");
        (
            ok,
            format!(
                "measured interfaces: {}, proxy {}: forq's egress proxy is the only way out (the \
                 stack's package registries and FORQ_EGRESS_ALLOW){}",
                p.get("ifaces"),
                p.get("proxy"),
                if backend.in_user_namespace() {
                    " (made inside forq's user namespace)"
                } else {
                    ""
                }
            ),
        )
    }));
    out
}

/// No effective or bounding capability, and `no_new_privs`.
fn capabilities(p: &Probe) -> (bool, String) {
    let none = |hex: &str| !hex.is_empty() && hex.trim_start_matches('0').is_empty();
    let ok = none(p.get("cap_eff")) && none(p.get("cap_bnd")) && p.get("no_new_privs") == "1";
    (
        ok,
        format!(
            "measured: CapEff {}, CapBnd {}, NoNewPrivs {}",
            p.get("cap_eff"),
            p.get("cap_bnd"),
            p.get("no_new_privs")
        ),
    )
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
    let probed = probe(&backend, Network::None).await;
    let p = probed.as_ref().ok().map(|(p, _)| p);
    let mut out = Vec::new();
    if let Err(e) = &probed {
        out.push(line(
            d,
            "probe",
            false,
            format!("a probe container could not run: {e}"),
        ));
    }
    out.push(measured(d, "capabilities", p, capabilities));
    out.push(measured(d, "memory and pids caps", p, |p| {
        // cgroup v1 says "no cap" with a number near 2^63.
        let set = |v: &str| v.parse::<u64>().is_ok_and(|n| n < 1 << 62);
        let ok = set(p.get("memory_max")) && set(p.get("pids_max"));
        (
            ok,
            format!(
                "measured in the container's cgroup: memory.max {}, pids.max {}",
                p.get("memory_max"),
                p.get("pids_max")
            ),
        )
    }));
    out.push(measured(d, "network for tests and the agent", p, |p| {
        let ok = p.get("ifaces") == "lo";
        (ok, format!("measured interfaces: {}", p.get("ifaces")))
    }));
    out.extend(vec![
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
    ]);
    out
}
