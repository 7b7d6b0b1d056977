//! What every exec of a sandbox is built from: its volumes, the steps
//! that make its root (the host's read-only system directories, the
//! masked /proc), the disk watch and the egress proxy of an install.

#[allow(clippy::wildcard_imports)] // the backend's own types and imports
use super::*;

/// One copy-on-write volume.
#[derive(Debug)]
pub(super) struct Volume {
    /// Where it appears inside the sandbox.
    pub(super) inside: PathBuf,
    /// The bottom layer on the host.
    pub(super) lower: PathBuf,
}

/// What every sandbox of one lineage (a create and all its forks) shares.
#[derive(Debug)]
pub(super) struct Template {
    pub(super) shared: Arc<Shared>,
    pub(super) spec: SandboxSpec,
    /// The base's ignore rules, read at the first diff.
    pub(super) untracked: std::sync::OnceLock<diff::Untracked>,
    pub(super) volumes: Vec<Volume>,
    pub(super) read_only: Vec<PathBuf>,
    /// The idmapped view of the base this lineage mounted (as root).
    pub(super) base_view: Option<PathBuf>,
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
pub(super) const PROC_MASKED: &[&str] = &[
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
pub(super) const PROC_READ_ONLY: &[&str] = &["bus", "fs", "irq", "sys"];

impl Template {
    pub(super) fn new(shared: Arc<Shared>, spec: SandboxSpec) -> Result<Self> {
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
    pub(super) fn root_steps(&self, dir: &Path) -> Result<(Vec<Step>, Vec<Step>)> {
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
        dev_steps(&mut steps, &r);
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
        // Listed afresh for every sandbox: a token written after the
        // backend opened is hidden too, and one removed since is no error.
        for t in self.shared.toolchains.iter().filter(|t| t.writable) {
            for secret in private_entries(&t.path) {
                steps.extend(
                    mask(&secret, &r(&secret))
                        .into_iter()
                        .map(|step| Step::IfPresent(Box::new(step))),
                );
            }
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
    pub(super) fn system_steps(
        &self,
        steps: &mut Vec<Step>,
        r: &dyn Fn(&Path) -> String,
    ) -> Result<()> {
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
pub(super) fn mask(host: &Path, target: &str) -> Vec<Step> {
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
pub(super) fn proc_steps() -> Vec<Step> {
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
pub(super) fn private_entries(dir: &Path) -> Vec<PathBuf> {
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
pub(super) struct DiskWatch {
    pub(super) cap: u64,
    pub(super) upper: PathBuf,
    pub(super) base: Arc<AtomicU64>,
    pub(super) over: Arc<std::sync::atomic::AtomicBool>,
    pub(super) task: tokio::task::JoinHandle<()>,
}

impl DiskWatch {
    pub(super) fn start(
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
    pub(super) fn stop(self) -> bool {
        self.task.abort();
        self.over.load(Ordering::SeqCst)
            || self.base.load(Ordering::SeqCst) + bytes_in(&self.upper) >= self.cap
    }
}

/// Bytes allocated to the files under `dir`.
pub(super) fn bytes_in(dir: &Path) -> u64 {
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
pub(super) fn start_proxy(
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

/// `/dev`: a tmpfs with the harmless devices bound from the host (no tty:
/// the caller's terminal never reaches a sandbox), the standard streams'
/// links, a pseudo-terminal instance of its own and a shared-memory tmpfs.
fn dev_steps(steps: &mut Vec<Step>, r: &dyn Fn(&Path) -> String) {
    steps.push(Step::Mkdir(cstr(&r(Path::new("/dev")))));
    steps.push(Step::fs(
        "tmpfs",
        &r(Path::new("/dev")),
        libc::MS_NOSUID | libc::MS_NOEXEC,
        "mode=0755,size=64k",
    ));
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
}
