//! The native backend: Linux namespaces for isolation, overlayfs layers for
//! copy-on-write snapshots and forks, cgroups for caps.
//!
//! On disk, under the state directory:
//!
//! ```text
//! s/<id>/u/v<k>   upper layer of volume k (what this sandbox changed since its last snapshot)
//! s/<id>/w/v<k>   overlayfs work directory
//! s/<id>/m/v<k>   the merged view (mounted on the host, bound into the sandbox)
//! s/<id>/r        where each exec builds its root (inside its own mount namespace)
//! l/<id>/v<k>     a frozen layer: a former upper, shared read-only by every fork
//! ```
//!
//! Volume 0 is the workspace (`/workspace`, lower layer: the caller's base
//! directory); the others are `/tmp`, the home directory and the writable
//! toolchain caches. A snapshot freezes every volume at once.

mod cgroup;
mod holder;
mod ids;
pub(crate) mod seccomp;
pub(crate) mod sys;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::RwLock;

use crate::backend::{Backend, BackendKind, DirEntry, Sandbox, Snapshot, SnapshotSource};
use crate::beneath::Node;
use crate::diff::{self, Diff};
use crate::error::{Error, Result};
use crate::output;
use crate::paths;
use crate::spec::{ExecOutcome, ExecRequest, Network, RootFs, SandboxSpec, WORKSPACE_DIR};
use crate::state;

pub(crate) use self::cgroup::Cgroups;
pub(crate) use self::ids::give_to_sandbox;
pub use self::ids::DEFAULT_ID_BASE;
use self::sys::{cstr, Step};

/// Frozen layers a sandbox may stack before a snapshot squashes them into one.
pub const MAX_LAYERS: usize = 16;

/// A host directory exposed inside native sandboxes at the same path.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Toolchain {
    /// The directory (e.g. `/root/.cargo`).
    pub path: PathBuf,
    /// Writable through a copy-on-write layer of the sandbox's own (package
    /// caches); otherwise bound read-only.
    pub writable: bool,
}

impl Toolchain {
    /// A toolchain directory.
    pub fn new(path: impl Into<PathBuf>, writable: bool) -> Self {
        Toolchain {
            path: path.into(),
            writable,
        }
    }
}

/// How the native backend is set up.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct NativeOptions {
    /// Where layers live; default [`crate::default_state_dir`].
    pub state_dir: Option<PathBuf>,
    /// Host toolchain directories to expose; default: `~/.cargo` and
    /// `~/.pyenv` writable, `~/.rustup` read-only, those that exist.
    pub toolchains: Option<Vec<Toolchain>>,
    /// Mount the overlays inside a user namespace of the backend's own
    /// instead of on the host. Default: when not root. Root may ask for it
    /// too (nothing then is ever mounted in the host's namespace), but then
    /// the sandbox's root is the caller's uid, root: only a test of the
    /// rootless path, never isolation.
    pub user_namespace: Option<bool>,
    /// As root: the first of the 65 536 host ids the sandbox's ids map onto
    /// (its root is this id on the host); default [`DEFAULT_ID_BASE`].
    pub id_base: Option<u32>,
}

/// Linux namespaces + overlayfs: as root with the overlays mounted on the
/// host, or without root with them mounted in a user namespace.
#[derive(Debug, Clone)]
pub struct NativeBackend {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    state: PathBuf,
    cgroups: Cgroups,
    overlay_extra: &'static str,
    /// The user-namespace holder, in that mode.
    holder: Option<holder::Holder>,
    /// As root (not in holder mode): the unprivileged ids the sandbox runs
    /// as, and the idmapped views that go with them.
    ids: Option<ids::Ids>,
    /// Writable toolchains as overlays name them (through the id map as
    /// root), in the order of `toolchains`' writable ones.
    toolchain_lowers: Vec<PathBuf>,
    /// Non-world-readable entries of the writable toolchains (credentials):
    /// masked in every sandbox, since the id map makes the rest of those
    /// trees the sandbox's own.
    toolchain_secrets: Vec<PathBuf>,
    home: PathBuf,
    home_skel: PathBuf,
    empty: PathBuf,
    toolchains: Vec<Toolchain>,
}

fn default_toolchains(home: &Path) -> Vec<Toolchain> {
    [(".cargo", true), (".pyenv", true), (".rustup", false)]
        .into_iter()
        .map(|(name, writable)| Toolchain::new(home.join(name), writable))
        .filter(|t| t.path.is_dir())
        .collect()
}

impl NativeBackend {
    /// Checks that this machine can run native sandboxes, and prepares the
    /// state directory.
    pub fn open(options: NativeOptions) -> Result<Self> {
        let unavailable = |reason: String| Error::Unavailable {
            backend: "native",
            reason,
        };
        if !cfg!(target_os = "linux") {
            return Err(unavailable("it needs Linux".to_owned()));
        }
        let user_namespace = options.user_namespace.unwrap_or(sys::euid() != 0);
        let filesystems = std::fs::read_to_string("/proc/filesystems").unwrap_or_default();
        if !filesystems.lines().any(|l| l.ends_with("\toverlay")) {
            return Err(unavailable(
                "the kernel has no overlayfs (try `modprobe overlay`)".to_owned(),
            ));
        }
        let state = options.state_dir.unwrap_or_else(state::default_state_dir);
        state::ensure_private_dir(&state)?;
        for sub in ["s", "l", "i", "empty"] {
            state::ensure_dir(&state.join(sub))?;
        }
        let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("/root"), PathBuf::from);
        let toolchains = options
            .toolchains
            .unwrap_or_else(|| default_toolchains(&home));
        let home_skel = state.join("home");
        for t in &toolchains {
            if let Ok(rel) = t.path.strip_prefix(&home) {
                state::ensure_dir(&home_skel.join(rel))?;
            }
        }
        state::ensure_dir(&home_skel)?;
        let holder = if user_namespace {
            let holder = holder::Holder::start().map_err(|e| {
                unavailable(format!(
                    "without root it works in a user namespace, and the kernel refused one: {e}; \
                     run as root or use --backend docker"
                ))
            })?;
            Some(holder)
        } else if sys::euid() != 0 {
            return Err(unavailable(
                "mounting overlays on the host needs root; leave user_namespace unset or true"
                    .to_owned(),
            ));
        } else {
            None
        };
        let mut ids = if holder.is_none() {
            let base = options.id_base.unwrap_or(DEFAULT_ID_BASE);
            Some(ids::Ids::new(&state, base).map_err(|e| {
                unavailable(format!(
                    "as root it maps the sandbox's root onto host ids {base}.. through a user \
                     namespace and idmapped mounts (Linux 5.19 or later), and that failed: {e}"
                ))
            })?)
        } else {
            None
        };
        let mut toolchain_lowers = Vec::new();
        let mut toolchain_secrets = Vec::new();
        for t in toolchains.iter().filter(|t| t.writable) {
            toolchain_secrets.extend(private_entries(&t.path));
            toolchain_lowers.push(match &mut ids {
                Some(ids) => ids.view(&t.path).map_err(|e| {
                    unavailable(format!(
                        "cannot mount an idmapped view of {}: {e}",
                        t.path.display()
                    ))
                })?,
                None => t.path.clone(),
            });
        }
        let overlay_extra = probe_overlay(&state, holder.as_ref(), ids.as_ref()).map_err(|e| {
            let hint = if holder.is_some() {
                " (overlayfs inside a user namespace needs Linux 5.11 or later)"
            } else {
                ""
            };
            unavailable(format!(
                "overlayfs cannot be mounted under {}: {e}{hint}",
                state.display()
            ))
        })?;
        let cgroups = Cgroups::detect();
        tracing::debug!(state = %state.display(), cgroups = cgroups.describe(), overlay_extra, "native backend open");
        Ok(NativeBackend {
            shared: Arc::new(Shared {
                empty: state.join("empty"),
                state,
                cgroups,
                overlay_extra,
                holder,
                ids,
                toolchain_lowers,
                toolchain_secrets,
                home,
                home_skel,
                toolchains,
            }),
        })
    }

    /// The host uid the sandbox's root runs as: the id range's first id as
    /// root, the caller's own uid in user-namespace mode.
    pub fn sandbox_host_uid(&self) -> u32 {
        match &self.shared.ids {
            Some(ids) => ids.base,
            None => sys::euid(),
        }
    }

    /// Which caps cgroups enforce here: memory, pids, cpu.
    pub fn caps_enforced(&self) -> (bool, bool, bool) {
        self.shared.cgroups.enforces()
    }

    /// Whether payloads run under the seccomp filter here.
    pub fn seccomp_in_force(&self) -> bool {
        seccomp::available()
    }

    /// The system calls the seccomp filter refuses.
    pub fn seccomp_refuses() -> Vec<&'static str> {
        seccomp::refused_names()
    }

    /// How resource caps are enforced here (`cgroup v2`, `cgroup v1`,
    /// `rlimits only`).
    pub fn limits_mechanism(&self) -> &'static str {
        self.shared.cgroups.describe()
    }

    /// The state directory.
    pub fn state_dir(&self) -> &Path {
        &self.shared.state
    }

    /// Whether the overlays live in a user namespace of the backend's own.
    pub fn in_user_namespace(&self) -> bool {
        self.shared.holder.is_some()
    }

    /// Mount points of sandboxes under the state directory, read from the
    /// mount table of the namespace the overlays live in (the idmapped
    /// views the backend itself keeps while it is open are not counted).
    pub fn mounts(&self) -> Vec<PathBuf> {
        let all = match &self.shared.holder {
            Some(h) => state::mounts_in(&h.mountinfo(), &self.shared.state),
            None => state::mounts_under(&self.shared.state),
        };
        let own = self.shared.ids.as_ref().map(|ids| ids.own_views());
        all.into_iter()
            .filter(|p| own.as_ref().is_none_or(|own| !own.contains(p)))
            .collect()
    }
}

impl NativeBackend {
    /// The lineage of sandboxes over `spec.base`.
    fn template_for(&self, spec: &SandboxSpec) -> Result<Arc<Template>> {
        let base = spec
            .base
            .canonicalize()
            .map_err(|e| Error::io("open the sandbox base", &spec.base, e))?;
        if !base.is_dir() {
            return Err(Error::InvalidSpec(format!(
                "base {} is not a directory",
                base.display()
            )));
        }
        let mut spec = spec.clone();
        spec.base = base;
        Ok(Arc::new(Template::new(self.shared.clone(), spec)?))
    }
}

impl Shared {
    /// A path under the state directory as overlays name it: through the
    /// idmapped view as root, else itself.
    fn layer(&self, path: &Path) -> PathBuf {
        match &self.ids {
            Some(ids) => ids.in_state_view(&self.state, path),
            None => path.to_path_buf(),
        }
    }

    /// `path` as this process reaches it.
    fn reach(&self, path: &Path) -> PathBuf {
        match &self.holder {
            Some(h) => h.reach(path),
            None => path.to_path_buf(),
        }
    }

    fn mount_overlay(&self, target: &Path, options: &str) -> std::io::Result<()> {
        mount_overlay(self.holder.as_ref(), target, options)
    }

    fn unmount(&self, target: &Path, detach: bool) -> std::io::Result<()> {
        unmount(self.holder.as_ref(), target, detach)
    }

    /// The xattr overlayfs marks opaque directories with.
    fn opaque_xattr(&self) -> &'static std::ffi::CStr {
        if self.holder.is_some() {
            c"user.overlay.opaque"
        } else {
            c"trusted.overlay.opaque"
        }
    }
}

/// Mounts an overlay where the backend keeps them: in the holder's
/// namespace when there is one, else on the host.
fn mount_overlay(
    holder: Option<&holder::Holder>,
    target: &Path,
    options: &str,
) -> std::io::Result<()> {
    let target = target.display().to_string();
    match holder {
        Some(h) => h.call(sys::HOLD_MOUNT, &[&target, options]),
        None => sys::mount_overlay(&cstr(&target), &cstr(options)),
    }
}

/// Unmounts where `mount_overlay` mounted; `detach` does it lazily.
fn unmount(holder: Option<&holder::Holder>, target: &Path, detach: bool) -> std::io::Result<()> {
    let target = target.display().to_string();
    match holder {
        Some(h) => h.call(
            if detach {
                sys::HOLD_DETACH
            } else {
                sys::HOLD_UNMOUNT
            },
            &[&target],
        ),
        None => sys::unmount(&cstr(&target), detach),
    }
}

/// Mounts a throw-away overlay to learn whether overlayfs works on the state
/// directory's filesystem and whether it takes `volatile` (no syncs: the
/// layers are scratch space and a sync on every unmount costs milliseconds).
fn probe_overlay(
    state: &Path,
    holder: Option<&holder::Holder>,
    ids: Option<&ids::Ids>,
) -> std::io::Result<&'static str> {
    let dir = state.join("s").join(format!("probe-{}", state::new_id()));
    for sub in ["l", "u", "w", "m"] {
        std::fs::create_dir_all(dir.join(sub))?;
    }
    let p = |s: &str| match ids {
        Some(ids) => ids.in_state_view(state, &dir.join(s)).display().to_string(),
        None => dir.join(s).display().to_string(),
    };
    let target = dir.join("m");
    let mut result = Err(std::io::Error::other("no overlay option set worked"));
    let choices: &[&'static str] = if holder.is_some() {
        // Inside a user namespace overlayfs keeps its marks in user.* xattrs.
        &[",userxattr,volatile", ",userxattr"]
    } else {
        &[",volatile", ""]
    };
    for &extra in choices {
        let opts = format!(
            "lowerdir={},upperdir={},workdir={}{extra}",
            p("l"),
            p("u"),
            p("w")
        );
        match mount_overlay(holder, &target, &opts) {
            Ok(()) => {
                let _ = unmount(holder, &target, false);
                result = Ok(extra);
                break;
            }
            Err(e) => result = Err(e),
        }
    }
    let _ = state::remove_tree(&dir);
    result
}

#[async_trait]
impl Backend for NativeBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Native
    }

    #[tracing::instrument(skip_all, fields(base = %spec.base.display()))]
    async fn create(&self, spec: &SandboxSpec) -> Result<Box<dyn Sandbox>> {
        let template = self.template_for(spec)?;
        let sb = NativeSandbox::mount_new(template, Vec::new()).await?;
        Ok(Box::new(sb))
    }

    fn goldens(&self) -> Result<crate::Goldens> {
        crate::Goldens::in_state_dir(&self.shared.state)
    }

    async fn open_state(
        &self,
        dir: &Path,
        saved: &crate::SavedState,
        spec: &SandboxSpec,
        hold: crate::golden::Hold,
    ) -> Result<Snapshot> {
        let template = self.template_for(spec)?;
        let volumes: Vec<&Path> = template
            .volumes
            .iter()
            .map(|v| v.inside.as_path())
            .collect();
        let saved_volumes: Vec<&Path> = saved.volumes.iter().map(PathBuf::as_path).collect();
        if saved.backend != BackendKind::Native || volumes != saved_volumes {
            return Err(Error::InvalidSpec(format!(
                "the golden in {} was saved with the volumes {saved_volumes:?}, and sandboxes here have {volumes:?} \
                 (other toolchains or root filesystem); build it again",
                dir.display()
            )));
        }
        let layer = dir.join("layer");
        if !layer.is_dir() || !dir.starts_with(&self.shared.state) {
            return Err(Error::InvalidSpec(format!(
                "no native golden layer in {} under the state directory {}",
                dir.display(),
                self.shared.state.display()
            )));
        }
        Ok(Snapshot {
            inner: Arc::new(NativeSnapshot {
                template,
                frozen: vec![Arc::new(Layer {
                    dir: layer,
                    hold: Some(hold),
                })],
            }),
        })
    }
}

/// One copy-on-write volume.
#[derive(Debug)]
struct Volume {
    /// Where it appears inside the sandbox.
    inside: PathBuf,
    /// The bottom layer on the host.
    lower: PathBuf,
}

/// What every sandbox of one lineage (a create and all its forks) shares.
#[derive(Debug)]
struct Template {
    shared: Arc<Shared>,
    spec: SandboxSpec,
    /// The base's ignore rules, read at the first diff.
    untracked: std::sync::OnceLock<diff::Untracked>,
    volumes: Vec<Volume>,
    read_only: Vec<PathBuf>,
    /// The idmapped view of the base this lineage mounted (as root).
    base_view: Option<PathBuf>,
}

impl Drop for Template {
    fn drop(&mut self) {
        if let Some(view) = self.base_view.take() {
            ids::unmount_view(&view);
        }
    }
}

/// `/proc` entries masked as container runtimes mask them: files by
/// `/dev/null`, directories by an empty read-only tmpfs.
const PROC_MASKED: &[&str] = &[
    "kcore",
    "keys",
    "key-users",
    "latency_stats",
    "timer_list",
    "timer_stats",
    "sched_debug",
    "kallsyms",
    "kpagecount",
    "kpageflags",
    "kpagecgroup",
    "sysrq-trigger",
    "config.gz",
    "acpi",
    "asound",
    "scsi",
    "driver",
];

/// `/proc` entries left readable but made read-only.
const PROC_READ_ONLY: &[&str] = &["bus", "fs", "irq", "sys"];

impl Template {
    fn new(shared: Arc<Shared>, spec: SandboxSpec) -> Result<Self> {
        let base_view = match &shared.ids {
            Some(ids) => Some(
                ids.mount_view(&spec.base)
                    .map_err(|e| Error::io("mount an idmapped view of the base", &spec.base, e))?,
            ),
            None => None,
        };
        let mut volumes = vec![
            Volume {
                inside: PathBuf::from(WORKSPACE_DIR),
                lower: base_view.clone().unwrap_or_else(|| spec.base.clone()),
            },
            Volume {
                inside: PathBuf::from("/tmp"),
                lower: shared.layer(&shared.empty),
            },
        ];
        let mut read_only = Vec::new();
        if spec.rootfs == RootFs::Host {
            volumes.push(Volume {
                inside: shared.home.clone(),
                lower: shared.layer(&shared.home_skel),
            });
            let mut lowers = shared.toolchain_lowers.iter();
            for t in &shared.toolchains {
                if t.writable {
                    volumes.push(Volume {
                        inside: t.path.clone(),
                        lower: lowers
                            .next()
                            .expect("one lower per writable toolchain")
                            .clone(),
                    });
                } else {
                    read_only.push(t.path.clone());
                }
            }
        }
        Ok(Template {
            shared,
            spec,
            untracked: std::sync::OnceLock::new(),
            volumes,
            read_only,
            base_view,
        })
    }

    /// The steps that build a sandbox's root, given its directory: those the
    /// shim runs with the backend's privilege on host paths, and those init
    /// runs in the new pid namespace on paths relative to the root.
    fn root_steps(&self, dir: &Path) -> Result<(Vec<Step>, Vec<Step>)> {
        let root = dir.join("r");
        let r = |p: &Path| {
            root.join(p.strip_prefix("/").unwrap_or(p))
                .display()
                .to_string()
        };
        let mut steps = vec![Step::fs(
            "tmpfs",
            &r(Path::new("/")),
            libc::MS_NOSUID | libc::MS_NODEV,
            "mode=0755,size=1m",
        )];
        let mkdir_all = |steps: &mut Vec<Step>, inside: &Path| {
            let mut acc = PathBuf::from("/");
            for c in inside.components().skip(1) {
                acc.push(c);
                steps.push(Step::Mkdir(cstr(&r(&acc))));
            }
        };
        self.system_steps(&mut steps, &r)?;
        steps.push(Step::Mkdir(cstr(&r(Path::new("/dev")))));
        steps.push(Step::fs(
            "tmpfs",
            &r(Path::new("/dev")),
            libc::MS_NOSUID | libc::MS_NOEXEC,
            "mode=0755,size=64k",
        ));
        // No tty: the caller's terminal never reaches a sandbox.
        for dev in ["null", "zero", "full", "random", "urandom"] {
            let inside = Path::new("/dev").join(dev);
            steps.push(Step::Touch(cstr(&r(&inside))));
            steps.extend(Step::bind_device(
                &inside.display().to_string(),
                &r(&inside),
            ));
        }
        for (link, target) in [
            ("fd", "/proc/self/fd"),
            ("stdin", "/proc/self/fd/0"),
            ("stdout", "/proc/self/fd/1"),
            ("stderr", "/proc/self/fd/2"),
        ] {
            steps.push(Step::Symlink {
                target: cstr(target),
                link: cstr(&r(&Path::new("/dev").join(link))),
            });
        }
        // A pseudo-terminal instance of its own, for tools that need one.
        steps.push(Step::Mkdir(cstr(&r(Path::new("/dev/pts")))));
        steps.push(Step::fs(
            "devpts",
            &r(Path::new("/dev/pts")),
            libc::MS_NOSUID | libc::MS_NOEXEC,
            "newinstance,ptmxmode=0666,mode=0620",
        ));
        steps.push(Step::Symlink {
            target: cstr("pts/ptmx"),
            link: cstr(&r(Path::new("/dev/ptmx"))),
        });
        steps.push(Step::Mkdir(cstr(&r(Path::new("/dev/shm")))));
        steps.push(Step::fs(
            "tmpfs",
            &r(Path::new("/dev/shm")),
            libc::MS_NOSUID | libc::MS_NODEV,
            "mode=1777",
        ));
        steps.push(Step::Mkdir(cstr(&r(Path::new("/proc")))));
        if self.shared.ids.is_some() {
            // Init, in the sandbox's user namespace, may mount a proc only
            // where one is already fully visible: this one (of the host's
            // pid namespace) is that, and init's own covers it for good.
            steps.push(Step::fs(
                "proc",
                &r(Path::new("/proc")),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                "",
            ));
        }
        for (k, vol) in self.volumes.iter().enumerate() {
            mkdir_all(&mut steps, &vol.inside);
            let merged = dir.join("m").join(format!("v{k}"));
            steps.extend(Step::bind(
                &merged.display().to_string(),
                &r(&vol.inside),
                false,
            ));
        }
        for secret in &self.shared.toolchain_secrets {
            steps.extend(mask(secret, &r(secret)));
        }
        for ro in &self.read_only {
            mkdir_all(&mut steps, ro);
            steps.extend(Step::bind(&ro.display().to_string(), &r(ro), true));
        }
        steps.push(Step::Mkdir(cstr(&r(Path::new("/var")))));
        steps.push(Step::Symlink {
            target: cstr("/tmp"),
            link: cstr(&r(Path::new("/var/tmp"))),
        });
        // The root's own tmpfs is read-only from here on.
        steps.push(Step::Seal {
            target: cstr(&r(Path::new("/"))),
            attrs: sys::MOUNT_ATTR_RDONLY | sys::MOUNT_ATTR_NOSUID | sys::MOUNT_ATTR_NODEV,
            recursive: false,
        });
        Ok((steps, proc_steps()))
    }

    /// Binds the system directories (the host's, or the given root
    /// filesystem's) read-only, and hides the host's password hashes.
    fn system_steps(&self, steps: &mut Vec<Step>, r: &dyn Fn(&Path) -> String) -> Result<()> {
        let (system_root, names): (PathBuf, Vec<String>) = match &self.spec.rootfs {
            RootFs::Host => (
                PathBuf::from("/"),
                [
                    "usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "opt",
                ]
                .into_iter()
                .map(str::to_owned)
                .collect(),
            ),
            RootFs::Dir(d) => {
                let entries = std::fs::read_dir(d)
                    .map_err(|e| Error::io("read the root filesystem", d, e))?;
                let mut names: Vec<String> = entries
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| !["proc", "dev", "sys", "tmp", "workspace"].contains(&n.as_str()))
                    .collect();
                names.sort();
                (d.clone(), names)
            }
        };
        for name in &names {
            let host = system_root.join(name);
            let inside = Path::new("/").join(name);
            let Ok(meta) = host.symlink_metadata() else {
                continue;
            };
            if meta.file_type().is_symlink() {
                let target =
                    std::fs::read_link(&host).map_err(|e| Error::io("readlink", &host, e))?;
                steps.push(Step::Symlink {
                    target: cstr(&target.display().to_string()),
                    link: cstr(&r(&inside)),
                });
            } else if meta.is_dir() {
                steps.push(Step::Mkdir(cstr(&r(&inside))));
                steps.extend(Step::bind(&host.display().to_string(), &r(&inside), true));
            } else if meta.is_file() {
                steps.push(Step::Touch(cstr(&r(&inside))));
                steps.extend(Step::bind(&host.display().to_string(), &r(&inside), true));
            }
        }
        if self.spec.rootfs == RootFs::Host {
            // Secrets of the host stay on the host.
            for secret in [
                "/etc/shadow",
                "/etc/gshadow",
                "/etc/shadow-",
                "/etc/gshadow-",
            ] {
                if Path::new(secret).is_file() {
                    steps.extend(Step::bind_device("/dev/null", &r(Path::new(secret))));
                }
            }
        }
        Ok(())
    }
}

/// Hides `host` (a file or a directory) at `target`.
fn mask(host: &Path, target: &str) -> Vec<Step> {
    if host.is_dir() {
        vec![Step::fs(
            "tmpfs",
            target,
            libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            "size=0,mode=0000",
        )]
    } else {
        Step::bind_device("/dev/null", target)
    }
}

/// Init's steps, relative to the new root: a `/proc` of the new pid
/// namespace, masked and partly read-only as container runtimes leave it.
fn proc_steps() -> Vec<Step> {
    let mut steps = vec![Step::fs(
        "proc",
        "proc",
        libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
        "",
    )];
    for name in PROC_MASKED {
        let host = Path::new("/proc").join(name);
        if host.exists() {
            steps.extend(mask(&host, &format!("proc/{name}")));
        }
    }
    for name in PROC_READ_ONLY {
        if Path::new("/proc").join(name).exists() {
            steps.extend(Step::bind(
                &format!("proc/{name}"),
                &format!("proc/{name}"),
                true,
            ));
        }
    }
    steps
}

/// Entries of a writable toolchain directory that others may not read
/// (cargo's `credentials.toml`, a token file): the top two levels, where
/// package managers keep them. Deeper ones are not looked for (the trees
/// hold a hundred thousand files); SECURITY.md says so.
fn private_entries(dir: &Path) -> Vec<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    walkdir::WalkDir::new(dir)
        .min_depth(1)
        .max_depth(2)
        .into_iter()
        .filter_entry(|e| !e.path_is_symlink())
        .flatten()
        .filter(|e| {
            e.metadata()
                .is_ok_and(|m| m.permissions().mode() & 0o004 == 0)
        })
        .map(|e| e.into_path())
        .collect()
}

/// The disk cap of one exec: what the sandbox's layers hold is measured
/// every 100 ms (less often when a walk is slow), and the exec is killed
/// when it passes the cap. (A single
/// file never passes it: the payload's `RLIMIT_FSIZE` is the cap too.)
struct DiskWatch {
    cap: u64,
    upper: PathBuf,
    base: Arc<AtomicU64>,
    over: Arc<std::sync::atomic::AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl DiskWatch {
    fn start(
        cap: u64,
        upper: PathBuf,
        frozen: Vec<PathBuf>,
        shim: Option<i32>,
        group: Arc<cgroup::Group>,
    ) -> DiskWatch {
        let over = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = over.clone();
        let frozen_bytes = Arc::new(AtomicU64::new(0));
        let known = frozen_bytes.clone();
        let watched = upper.clone();
        let task = tokio::spawn(async move {
            let upper = watched;
            let base = tokio::task::spawn_blocking(move || {
                frozen.iter().map(|d| bytes_in(d)).sum::<u64>()
            })
            .await
            .unwrap_or(0);
            known.store(base, Ordering::SeqCst);
            // Every 100 ms, or ten times as long as a walk took, so that a
            // layer of many files (node_modules) costs at most a tenth of a
            // core to watch.
            let mut pause = std::time::Duration::from_millis(100);
            loop {
                tokio::time::sleep(pause).await;
                let dir = upper.clone();
                let walked = std::time::Instant::now();
                let used = tokio::task::spawn_blocking(move || bytes_in(&dir))
                    .await
                    .unwrap_or(0);
                pause = (walked.elapsed() * 10).max(std::time::Duration::from_millis(100));
                if base + used >= cap {
                    flag.store(true, Ordering::SeqCst);
                    if let Some(pid) = shim {
                        sys::kill(pid);
                    }
                    let group = group.clone();
                    let _ = tokio::task::spawn_blocking(move || group.kill_all()).await;
                    return;
                }
            }
        });
        DiskWatch {
            cap,
            upper,
            base: frozen_bytes,
            over,
            task,
        }
    }

    /// Stops watching; whether the cap was reached (by the watch, or by a
    /// file the payload's rlimit stopped at the cap just before it ended).
    fn stop(self) -> bool {
        self.task.abort();
        self.over.load(Ordering::SeqCst)
            || self.base.load(Ordering::SeqCst) + bytes_in(&self.upper) >= self.cap
    }
}

/// Bytes allocated to the files under `dir`.
fn bytes_in(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    walkdir::WalkDir::new(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.blocks() * 512)
        .sum()
}

/// The egress proxy of one exec: a new network namespace with the proxy
/// listening on its loopback.
fn start_proxy(
    holder: Option<&holder::Holder>,
    allow: &crate::egress::EgressAllow,
) -> Result<crate::egress::Served> {
    let port = crate::egress::PROXY_PORT;
    let made = match holder {
        Some(h) => h.net_namespace_with_listener(port),
        None => sys::net_namespace_with_listener(port),
    }
    .and_then(|(netns, listener)| crate::egress::Served::start(netns, listener, allow));
    made.map_err(|e| Error::io("make the egress proxy's network", "netns", e))
}

/// A frozen layer directory, removed when the last sandbox or snapshot
/// holding it lets go, unless it is a golden's (which `hold` keeps in use).
#[derive(Debug)]
struct Layer {
    dir: PathBuf,
    hold: Option<crate::golden::Hold>,
}

impl Layer {
    fn new(dir: PathBuf) -> Self {
        Layer { dir, hold: None }
    }
}

impl Drop for Layer {
    fn drop(&mut self) {
        if self.hold.is_some() {
            return;
        }
        if let Err(e) = state::remove_tree(&self.dir) {
            tracing::warn!(dir = %self.dir.display(), error = %e, "cannot remove a frozen layer");
        }
    }
}

#[derive(Debug)]
struct Inner {
    /// Frozen layers, newest first.
    frozen: Vec<Arc<Layer>>,
    mounted: bool,
    destroyed: bool,
}

/// A sandbox of the native backend.
#[derive(Debug)]
pub struct NativeSandbox {
    id: String,
    dir: PathBuf,
    template: Arc<Template>,
    /// The shim's steps and init's (see [`Template::root_steps`]).
    steps: Arc<Vec<Step>>,
    inner_steps: Arc<Vec<Step>>,
    inner: RwLock<Inner>,
    execs: AtomicU64,
}

impl NativeSandbox {
    async fn mount_new(template: Arc<Template>, frozen: Vec<Arc<Layer>>) -> Result<Self> {
        let shared = &template.shared;
        let (id, dir) = loop {
            let id = state::new_id();
            let dir = shared.state.join("s").join(&id);
            match std::fs::create_dir(&dir) {
                Ok(()) => break (id, dir),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(Error::io("create the sandbox directory", &dir, e)),
            }
        };
        state::ensure_dir(&dir.join("r"))?;
        for k in 0..template.volumes.len() {
            for sub in ["u", "w", "m"] {
                state::ensure_dir(&dir.join(sub).join(format!("v{k}")))?;
            }
        }
        let (steps, inner_steps) = template.root_steps(&dir)?;
        let (steps, inner_steps) = (Arc::new(steps), Arc::new(inner_steps));
        let sb = NativeSandbox {
            id,
            dir,
            template,
            steps,
            inner_steps,
            inner: RwLock::new(Inner {
                frozen,
                mounted: false,
                destroyed: false,
            }),
            execs: AtomicU64::new(0),
        };
        {
            let mut inner = sb.inner.write().await;
            sb.mount_all(&mut inner)?;
        }
        tracing::debug!(id = %sb.id, "native sandbox ready");
        Ok(sb)
    }

    fn vol_path(&self, sub: &str, k: usize) -> PathBuf {
        self.dir.join(sub).join(format!("v{k}"))
    }

    /// The merged workspace as this process can reach it: the mount point
    /// itself, or in user-namespace mode the same path seen through the
    /// holder's root.
    fn merged_workspace(&self) -> PathBuf {
        self.template.shared.reach(&self.vol_path("m", 0))
    }

    fn files(&self) -> paths::WorkspaceDir {
        paths::WorkspaceDir {
            owner: self.template.shared.ids.as_ref().map(|ids| ids.base),
            root: self.merged_workspace(),
            inside: PathBuf::from(WORKSPACE_DIR),
        }
    }

    fn mount_all(&self, inner: &mut Inner) -> Result<()> {
        for (k, vol) in self.template.volumes.iter().enumerate() {
            let shared = &self.template.shared;
            let mut lowers: Vec<String> = inner
                .frozen
                .iter()
                .map(|l| {
                    shared
                        .layer(&l.dir.join(format!("v{k}")))
                        .display()
                        .to_string()
                })
                .collect();
            lowers.push(vol.lower.display().to_string());
            let opts = format!(
                "lowerdir={},upperdir={},workdir={}{}",
                lowers.join(":"),
                shared.layer(&self.vol_path("u", k)).display(),
                shared.layer(&self.vol_path("w", k)).display(),
                shared.overlay_extra
            );
            let target = self.vol_path("m", k);
            self.template
                .shared
                .mount_overlay(&target, &opts)
                .map_err(|e| Error::io("mount overlay", &target, e))?;
        }
        inner.mounted = true;
        Ok(())
    }

    fn unmount_all(&self, inner: &mut Inner, detach: bool) -> Result<()> {
        if !inner.mounted {
            return Ok(());
        }
        for k in 0..self.template.volumes.len() {
            let target = self.vol_path("m", k);
            self.unmount_one(&target, detach)
                .map_err(|e| Error::io("unmount overlay", &target, e))?;
        }
        inner.mounted = false;
        Ok(())
    }

    /// A process this one forks (another sandbox's exec, before it reaches
    /// `exec` or closes its descriptors) holds copies of our open files for
    /// a few milliseconds, and one on this mount makes it busy. Retry for a
    /// while, then detach: nothing of the sandbox's own still uses it.
    fn unmount_one(&self, target: &Path, detach: bool) -> std::io::Result<()> {
        let shared = &self.template.shared;
        if detach {
            return shared.unmount(target, true);
        }
        for _ in 0..50 {
            match shared.unmount(target, false) {
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                other => return other,
            }
        }
        tracing::warn!(target = %target.display(), "mount still busy after 250 ms; detaching it");
        shared.unmount(target, true)
    }

    fn upper_is_clean(&self) -> bool {
        (0..self.template.volumes.len())
            .all(|k| std::fs::read_dir(self.vol_path("u", k)).is_ok_and(|mut d| d.next().is_none()))
    }

    fn live(&self, inner: &Inner) -> Result<()> {
        if inner.destroyed {
            return Err(Error::Gone {
                id: self.id.clone(),
                state: "destroyed",
            });
        }
        if !inner.mounted {
            return Err(Error::Gone {
                id: self.id.clone(),
                state: "unmounted after a failed snapshot",
            });
        }
        Ok(())
    }

    /// Turns the current upper layers into a frozen layer.
    fn freeze(&self, inner: &mut Inner) -> Result<()> {
        self.unmount_all(inner, false)?;
        let layer_dir = self.template.shared.state.join("l").join(state::new_id());
        let upper = self.dir.join("u");
        std::fs::rename(&upper, &layer_dir).map_err(|e| Error::io("freeze a layer", &upper, e))?;
        inner.frozen.insert(0, Arc::new(Layer::new(layer_dir)));
        let work = self.dir.join("w");
        state::remove_tree(&work).map_err(|e| Error::io("reset work directory", &work, e))?;
        for k in 0..self.template.volumes.len() {
            state::ensure_dir(&self.vol_path("u", k))?;
            state::ensure_dir(&self.vol_path("w", k))?;
        }
        if inner.frozen.len() > MAX_LAYERS {
            let squashed = squash(
                &self.template.shared,
                &inner.frozen,
                self.template.volumes.len(),
            )?;
            inner.frozen = vec![Arc::new(squashed)];
        }
        self.mount_all(inner)
    }

    fn release(&self, inner: &mut Inner) -> Result<()> {
        if inner.destroyed {
            return Ok(());
        }
        inner.destroyed = true;
        self.unmount_all(inner, true)?;
        inner.frozen.clear();
        state::remove_tree(&self.dir)
            .map_err(|e| Error::io("remove the sandbox directory", &self.dir, e))
    }

    /// Changed paths of the workspace, from the layers (not the whole tree).
    fn workspace_candidates(&self, inner: &Inner) -> Result<BTreeSet<PathBuf>> {
        let base = &self.template.spec.base;
        let merged = self.merged_workspace();
        let mut layer_roots = vec![self.vol_path("u", 0)];
        layer_roots.extend(inner.frozen.iter().map(|l| l.dir.join("v0")));
        let mut candidates = BTreeSet::new();
        let mut dirs = BTreeSet::from([PathBuf::new()]);
        for root in &layer_roots {
            for entry in walkdir::WalkDir::new(root).min_depth(1) {
                let entry = entry.map_err(|e| Error::io("walk a layer", root, e.into()))?;
                let rel = entry
                    .path()
                    .strip_prefix(root)
                    .expect("under its root")
                    .to_path_buf();
                if diff::excluded(&rel) {
                    continue;
                }
                if entry.file_type().is_dir() {
                    dirs.insert(rel);
                } else {
                    candidates.insert(rel);
                }
            }
        }
        // Deletions (whiteouts, opaque directories) show as names the base
        // has and the merged view lacks. Both trees are read beneath their
        // roots without following links: a base link `x -> /etc` that the
        // sandbox replaced with a directory is one deleted link, never the
        // host's `/etc` listed as deleted.
        let fail = |e| Error::io("list the base", base, e);
        let base_tree = diff::open_tree(base)?;
        let merged_tree = diff::open_tree(&merged)?;
        let (Some(base_tree), Some(merged_tree)) = (base_tree, merged_tree) else {
            return Ok(candidates);
        };
        for d in dirs {
            // A base link or file the sandbox replaced with a directory.
            if !matches!(base_tree.node(&d).map_err(fail)?, None | Some(Node::Dir)) {
                candidates.insert(d.clone());
            }
            for (name, base_is_dir) in base_tree.list(&d).map_err(fail)? {
                let rel = d.join(name);
                if diff::excluded(&rel) {
                    continue;
                }
                let now = merged_tree
                    .node(&rel)
                    .map_err(|e| Error::io("inspect", merged.join(&rel), e))?;
                match now {
                    // Still a directory, or the same name still there.
                    Some(Node::Dir) => continue,
                    Some(_) if !base_is_dir => continue,
                    // Gone, or a base directory replaced by a file or link:
                    // every file the base had under it is deleted.
                    _ if base_is_dir => {
                        candidates.extend(
                            base_tree
                                .walk_files(&rel, &|p| diff::excluded(p))
                                .map_err(fail)?,
                        );
                    }
                    _ => {
                        candidates.insert(rel);
                    }
                }
            }
        }
        Ok(candidates)
    }
}

/// Merges `frozen` (newest first) into one new layer by hard links: frozen
/// layers are never written again, so sharing their inodes is safe.
fn squash(shared: &Shared, frozen: &[Arc<Layer>], volumes: usize) -> Result<Layer> {
    let out = Layer::new(shared.state.join("l").join(state::new_id()));
    squash_into(shared, frozen, volumes, &out.dir)?;
    Ok(out)
}

/// Merges `frozen` (newest first) into one layer at `dest`: files are hard
/// links, directories are made again with their mode, owner and opacity.
fn squash_into(shared: &Shared, frozen: &[Arc<Layer>], volumes: usize, dest: &Path) -> Result<()> {
    for k in 0..volumes {
        let target = dest.join(format!("v{k}"));
        state::ensure_dir(&target)?;
        for layer in frozen.iter().rev() {
            let src = layer.dir.join(format!("v{k}"));
            for entry in walkdir::WalkDir::new(&src).min_depth(1) {
                let entry = entry.map_err(|e| Error::io("walk a layer", &src, e.into()))?;
                let rel = entry.path().strip_prefix(&src).expect("under its root");
                let dest = target.join(rel);
                let existing = dest.symlink_metadata().ok();
                if entry.file_type().is_dir() {
                    let opaque = sys::is_opaque(
                        &cstr(&entry.path().display().to_string()),
                        shared.opaque_xattr(),
                    );
                    match existing {
                        Some(m) if m.is_dir() && !opaque => continue,
                        Some(m) if m.is_dir() => std::fs::remove_dir_all(&dest),
                        Some(_) => std::fs::remove_file(&dest),
                        None => Ok(()),
                    }
                    .map_err(|e| Error::io("squash layers", &dest, e))?;
                    std::fs::create_dir(&dest).map_err(|e| Error::io("squash layers", &dest, e))?;
                    let meta = entry
                        .metadata()
                        .map_err(|e| Error::io("squash layers", entry.path(), e.into()))?;
                    let _ = std::fs::set_permissions(&dest, meta.permissions());
                    {
                        use std::os::unix::fs::MetadataExt;
                        // Keep whose it is (the sandbox's ids on disk).
                        let _ =
                            std::os::unix::fs::lchown(&dest, Some(meta.uid()), Some(meta.gid()));
                    }
                    if opaque {
                        sys::set_opaque(&cstr(&dest.display().to_string()), shared.opaque_xattr())
                            .map_err(|e| Error::io("squash layers", &dest, e))?;
                    }
                } else {
                    match existing {
                        Some(m) if m.is_dir() => std::fs::remove_dir_all(&dest),
                        Some(_) => std::fs::remove_file(&dest),
                        None => Ok(()),
                    }
                    .map_err(|e| Error::io("squash layers", &dest, e))?;
                    std::fs::hard_link(entry.path(), &dest)
                        .map_err(|e| Error::io("squash layers", &dest, e))?;
                }
            }
        }
    }
    Ok(())
}

struct NativeSnapshot {
    template: Arc<Template>,
    frozen: Vec<Arc<Layer>>,
}

#[async_trait]
impl SnapshotSource for NativeSnapshot {
    fn id(&self) -> String {
        self.frozen
            .first()
            .and_then(|l| l.dir.file_name())
            .map_or_else(|| "base".to_owned(), |n| n.to_string_lossy().into_owned())
    }

    async fn fork(&self) -> Result<Box<dyn Sandbox>> {
        Ok(Box::new(
            NativeSandbox::mount_new(self.template.clone(), self.frozen.clone()).await?,
        ))
    }
}

#[async_trait]
impl Sandbox for NativeSandbox {
    fn id(&self) -> &str {
        &self.id
    }

    fn backend(&self) -> BackendKind {
        BackendKind::Native
    }

    #[tracing::instrument(skip_all, fields(id = %self.id, argv0 = req.argv.first().map(String::as_str)))]
    async fn exec(&self, req: ExecRequest) -> Result<ExecOutcome> {
        let inner = self.inner.read().await;
        self.live(&inner)?;
        let Some(program) = req.argv.first().cloned() else {
            return Err(Error::InvalidSpec(
                "an exec needs at least a program name".to_owned(),
            ));
        };
        let cwd = Path::new(WORKSPACE_DIR).join(paths::lexical(&req.cwd)?);
        let shared = &self.template.shared;
        let spec = &self.template.spec;
        let group = shared.cgroups.create(
            &format!("{}-{}", self.id, self.execs.fetch_add(1, Ordering::Relaxed)),
            &spec.limits,
        )?;
        let network = req.network.unwrap_or(spec.network);
        let proxy = match (network, &req.service_network) {
            (_, Some(_)) => None,
            (Network::Proxy, None) => Some(start_proxy(shared.holder.as_ref(), &spec.egress)?),
            _ => None,
        };
        let (status_rd, status_wr) =
            sys::pipe().map_err(|e| Error::io("create a pipe", "status", e))?;
        let plan = sys::Plan {
            new_root: cstr(&self.dir.join("r").display().to_string()),
            steps: self.steps.clone(),
            inner_steps: self.inner_steps.clone(),
            new_net: network == Network::None && req.service_network.is_none(),
            join_net: match &req.service_network {
                Some(service) => Some(service.netns_fd()),
                None => proxy.as_ref().map(|p| {
                    use std::os::fd::AsRawFd;
                    p.netns.as_raw_fd()
                }),
            },
            hostname: cstr("forq-sandbox"),
            cgroup_procs: group
                .procs_files()
                .iter()
                .map(|p| cstr(&p.display().to_string()))
                .collect(),
            rlimit_as: if shared.cgroups.caps_memory() {
                None
            } else {
                spec.limits.memory_bytes
            },
            rlimit_fsize: spec.limits.disk_bytes,
            cwd: cstr(&cwd.display().to_string()),
            status_fd: status_wr,
            join: shared.holder.as_ref().map(|h| {
                use std::os::fd::AsRawFd;
                let (user, mnt) = h.namespaces();
                (user.as_raw_fd(), mnt.as_raw_fd())
            }),
            enter_user: shared.ids.as_ref().map(|ids| {
                use std::os::fd::AsRawFd;
                ids.payload_ns.as_raw_fd()
            }),
            ctty: req.terminal.is_some(),
            seccomp: seccomp::programs(),
        };
        let mut env = spec.env.clone();
        env.entry("HOME".to_owned())
            .or_insert_with(|| shared.home.display().to_string());
        if proxy.is_some() {
            env.extend(crate::egress::Served::env());
        }
        env.extend(req.env.clone());
        // This is the sandbox's command builder: the one place a native
        // sandbox process is started.
        #[allow(clippy::disallowed_methods)]
        let mut cmd = tokio::process::Command::new(&program);
        cmd.args(&req.argv[1..])
            .env_clear()
            .envs(&env)
            .kill_on_drop(true);
        output::set_stdio(&mut cmd, &req)?;
        sys::install(&mut cmd, Arc::new(plan));
        let spawned = cmd.spawn();
        sys::close(status_wr);
        let child = match spawned {
            Ok(child) => child,
            Err(source) => {
                sys::close(status_rd);
                tokio::task::spawn_blocking(move || group.remove())
                    .await
                    .ok();
                return Err(Error::Spawn { program, source });
            }
        };
        let shim = child.id().map(|p| p as i32);
        let group = Arc::new(group);
        let killer = group.clone();
        let disk = spec.limits.disk_bytes.map(|cap| {
            DiskWatch::start(
                cap,
                self.dir.join("u"),
                inner.frozen.iter().map(|l| l.dir.clone()).collect(),
                shim,
                group.clone(),
            )
        });
        let driven = output::drive(child, &req, &mut move || {
            if let Some(pid) = shim {
                sys::kill(pid);
            }
            killer.kill_all();
        })
        .await;
        let killed_for_disk = disk.is_some_and(|d| d.stop());
        let report = tokio::task::spawn_blocking(move || sys::decode(&sys::read_all(status_rd)))
            .await
            .ok()
            .flatten();
        let killed_for_memory = group.oom_killed();
        if let Ok(group) = Arc::try_unwrap(group) {
            tokio::task::spawn_blocking(move || group.remove())
                .await
                .ok();
        }
        let mut outcome = ExecOutcome {
            timed_out: driven.timed_out,
            idle_timed_out: driven.idle_timed_out,
            killed_for_memory,
            killed_for_disk,
            duration_ms: driven.duration.as_millis() as u64,
            stdout: driven.stdout.0,
            stdout_dropped: driven.stdout.1,
            stderr: driven.stderr.0,
            stderr_dropped: driven.stderr.1,
            ..ExecOutcome::default()
        };
        match report {
            Some(sys::Report::Exited { status }) => {
                if libc::WIFEXITED(status) {
                    outcome.exit_code = Some(libc::WEXITSTATUS(status));
                } else if libc::WIFSIGNALED(status) {
                    outcome.signal = Some(libc::WTERMSIG(status));
                }
            }
            Some(sys::Report::SetupFailed { step, errno }) => {
                // The shim's steps, its entering the namespaces, then init's.
                let what = usize::try_from(step)
                    .ok()
                    .and_then(|i| {
                        self.steps.get(i).or_else(|| {
                            i.checked_sub(self.steps.len() + 1)
                                .and_then(|j| self.inner_steps.get(j))
                        })
                    })
                    .map_or_else(|| format!("step {step}"), sys::Step::describe);
                return Err(Error::Io {
                    op: "prepare the sandbox root",
                    path: PathBuf::from(what),
                    source: std::io::Error::from_raw_os_error(errno),
                });
            }
            // Init died before reporting: only SIGKILL does that.
            None => outcome.signal = Some(libc::SIGKILL),
        }
        Ok(outcome)
    }

    async fn read_file(&self, path: &Path) -> Result<Vec<u8>> {
        let inner = self.inner.read().await;
        self.live(&inner)?;
        let full = paths::confine(&self.merged_workspace(), path, Path::new(WORKSPACE_DIR))?;
        tokio::fs::read(&full)
            .await
            .map_err(|e| Error::io("read", path, e))
    }

    async fn write_file(&self, path: &Path, contents: &[u8]) -> Result<()> {
        let inner = self.inner.read().await;
        self.live(&inner)?;
        self.files().write(path, contents).await
    }

    async fn list_dir(&self, path: &Path) -> Result<Vec<DirEntry>> {
        let inner = self.inner.read().await;
        self.live(&inner)?;
        self.files().list(path).await
    }

    async fn remove(&self, path: &Path) -> Result<()> {
        let inner = self.inner.read().await;
        self.live(&inner)?;
        self.files().remove(path).await
    }

    #[tracing::instrument(skip_all, fields(id = %self.id))]
    async fn snapshot(&self) -> Result<Snapshot> {
        let mut inner = self.inner.write().await;
        self.live(&inner)?;
        if !self.upper_is_clean() {
            self.freeze(&mut inner)?;
        }
        Ok(Snapshot {
            inner: Arc::new(NativeSnapshot {
                template: self.template.clone(),
                frozen: inner.frozen.clone(),
            }),
        })
    }

    async fn diff(&self) -> Result<Diff> {
        let inner = self.inner.read().await;
        self.live(&inner)?;
        let candidates = self.workspace_candidates(&inner)?;
        let base = &self.template.spec.base;
        let untracked = self
            .template
            .untracked
            .get_or_init(|| diff::Untracked::load(base));
        diff::diff_paths(base, &self.merged_workspace(), candidates, untracked)
    }

    async fn service_network(&self) -> Result<crate::ServiceNetwork> {
        if self.template.shared.holder.is_some() {
            return Err(Error::Unsupported {
                backend: "native",
                what:
                    "a service network without root (forq enters the service's network namespace)",
            });
        }
        let inner = self.inner.read().await;
        self.live(&inner)?;
        sys::service_namespace().map_err(|e| Error::io("make a service network", "netns", e))
    }

    async fn destroy(self: Box<Self>) -> Result<()> {
        let mut inner = self.inner.write().await;
        self.release(&mut inner)
    }

    async fn save_state(&self, dir: &Path, _label: &str) -> Result<crate::SavedState> {
        let shared = &self.template.shared;
        if !dir.starts_with(&shared.state) {
            return Err(Error::InvalidSpec(format!(
                "a native golden is kept under the backend's state directory {} (its layers are hard links of the \
                 sandbox's), not {}; use Goldens::in_state_dir",
                shared.state.display(),
                dir.display()
            )));
        }
        let mut inner = self.inner.write().await;
        self.live(&inner)?;
        if !self.upper_is_clean() {
            self.freeze(&mut inner)?;
        }
        let layer = dir.join("layer");
        let volumes = self.template.volumes.len();
        squash_into(shared, &inner.frozen, volumes, &layer)?;
        let bytes = walkdir::WalkDir::new(&layer)
            .into_iter()
            .flatten()
            .filter(|e| e.file_type().is_file())
            .filter_map(|e| e.metadata().ok())
            .map(|m| m.len())
            .sum();
        Ok(crate::SavedState::native(
            self.template
                .volumes
                .iter()
                .map(|v| v.inside.clone())
                .collect(),
            bytes,
        ))
    }
}

impl Drop for NativeSandbox {
    fn drop(&mut self) {
        let Ok(mut inner) = self.inner.try_write() else {
            return;
        };
        if let Err(e) = self.release(&mut inner) {
            tracing::warn!(id = %self.id, error = %e, "cannot release a dropped sandbox; garbage collection (forq_sandbox::gc) will");
        }
    }
}
