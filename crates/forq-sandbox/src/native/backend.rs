//! The backend: its options, the state it shares with its sandboxes, the
//! overlay mounts, and creating sandboxes.

#[allow(clippy::wildcard_imports)] // the backend's own types and imports
use super::*;

pub(super) fn default_toolchains(home: &Path) -> Vec<Toolchain> {
    [(".cargo", true), (".pyenv", true), (".rustup", false)]
        .into_iter()
        .map(|(name, writable)| Toolchain::new(home.join(name), writable))
        .filter(|t| t.path.is_dir())
        .collect()
}

/// How sandboxes get their privilege: a user namespace of forq's own (a
/// holder process), or, as root, a range of host ids through idmapped
/// mounts.
fn privilege(
    user_namespace: bool,
    state: &Path,
    id_base: Option<u32>,
) -> Result<(Option<holder::Holder>, Option<ids::Ids>)> {
    let unavailable = |reason: String| Error::Unavailable {
        backend: "native",
        reason,
    };
    if user_namespace {
        let holder = holder::Holder::start().map_err(|e| {
            unavailable(format!(
                "without root it works in a user namespace, and the kernel refused one: {e}; \
                 run as root or use --backend docker"
            ))
        })?;
        return Ok((Some(holder), None));
    }
    if sys::euid() != 0 {
        return Err(unavailable(
            "mounting overlays on the host needs root; leave user_namespace unset or true"
                .to_owned(),
        ));
    }
    let base = id_base.unwrap_or(DEFAULT_ID_BASE);
    let ids = ids::Ids::new(state, base).map_err(|e| {
        unavailable(format!(
            "as root it maps the sandbox's root onto host ids {base}.. through a user \
             namespace and idmapped mounts (Linux 5.19 or later), and that failed: {e}"
        ))
    })?;
    Ok((None, Some(ids)))
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
        let (holder, mut ids) = privilege(user_namespace, &state, options.id_base)?;
        let mut toolchain_lowers = Vec::new();
        for t in toolchains.iter().filter(|t| t.writable) {
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
        let lifeline = sys::lifeline().map_err(|e| {
            unavailable(format!(
                "cannot make the pipe its sandboxes watch for this process's end: {e}"
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
                home,
                home_skel,
                toolchains,
                lifeline,
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
    pub(super) fn template_for(&self, spec: &SandboxSpec) -> Result<Arc<Template>> {
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
    pub(super) fn layer(&self, path: &Path) -> PathBuf {
        match &self.ids {
            Some(ids) => ids.in_state_view(&self.state, path),
            None => path.to_path_buf(),
        }
    }

    /// `path` as this process reaches it.
    pub(super) fn reach(&self, path: &Path) -> PathBuf {
        match &self.holder {
            Some(h) => h.reach(path),
            None => path.to_path_buf(),
        }
    }

    pub(super) fn mount_overlay(&self, target: &Path, options: &str) -> std::io::Result<()> {
        mount_overlay(self.holder.as_ref(), target, options)
    }

    pub(super) fn unmount(&self, target: &Path, detach: bool) -> std::io::Result<()> {
        unmount(self.holder.as_ref(), target, detach)
    }

    /// The xattr overlayfs marks opaque directories with.
    pub(super) fn opaque_xattr(&self) -> &'static std::ffi::CStr {
        if self.holder.is_some() {
            c"user.overlay.opaque"
        } else {
            c"trusted.overlay.opaque"
        }
    }
}

/// Mounts an overlay where the backend keeps them: in the holder's
/// namespace when there is one, else on the host.
pub(super) fn mount_overlay(
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
pub(super) fn unmount(
    holder: Option<&holder::Holder>,
    target: &Path,
    detach: bool,
) -> std::io::Result<()> {
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
pub(super) fn probe_overlay(
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
        spec.limits.validate().map_err(crate::Error::InvalidSpec)?;
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
