//! A sandbox: its layers, execs, files, snapshots and forks, and the
//! squash that keeps a long fork chain shallow.

#[allow(clippy::wildcard_imports)] // the backend's own types and imports
use super::*;

/// A frozen layer directory, removed when the last sandbox or snapshot
/// holding it lets go, unless it is a golden's (which `hold` keeps in use).
#[derive(Debug)]
pub(super) struct Layer {
    pub(super) dir: PathBuf,
    pub(super) hold: Option<crate::golden::Hold>,
}

impl Layer {
    pub(super) fn new(dir: PathBuf) -> Self {
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
pub(super) struct Inner {
    /// Frozen layers, newest first.
    pub(super) frozen: Vec<Arc<Layer>>,
    pub(super) mounted: bool,
    pub(super) destroyed: bool,
}

/// A sandbox of the native backend.
#[derive(Debug)]
pub struct NativeSandbox {
    pub(super) id: String,
    pub(super) dir: PathBuf,
    pub(super) template: Arc<Template>,
    /// The shim's steps and init's (see [`Template::root_steps`]).
    pub(super) steps: Arc<Vec<Step>>,
    pub(super) inner_steps: Arc<Vec<Step>>,
    pub(super) inner: RwLock<Inner>,
    pub(super) execs: AtomicU64,
}

impl NativeSandbox {
    pub(super) async fn mount_new(
        template: Arc<Template>,
        frozen: Vec<Arc<Layer>>,
    ) -> Result<Self> {
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

    /// What the shim does before it runs `req`: the root, the namespaces
    /// to make or join, the cgroup, the limits, the seccomp programs.
    fn plan(
        &self,
        req: &ExecRequest,
        network: Network,
        proxy: Option<&crate::egress::Served>,
        group: &cgroup::Group,
        cwd: &Path,
        status_fd: std::os::fd::RawFd,
    ) -> sys::Plan {
        use std::os::fd::AsRawFd;
        let shared = &self.template.shared;
        let spec = &self.template.spec;
        sys::Plan {
            new_root: cstr(&self.dir.join("r").display().to_string()),
            steps: self.steps.clone(),
            inner_steps: self.inner_steps.clone(),
            new_net: network == Network::None && req.service_network.is_none(),
            join_net: match &req.service_network {
                Some(service) => Some(service.netns_fd()),
                None => proxy.map(|p| p.netns.as_raw_fd()),
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
            status_fd,
            lifeline: shared.lifeline,
            join: shared.holder.as_ref().map(|h| {
                let (user, mnt) = h.namespaces();
                (user.as_raw_fd(), mnt.as_raw_fd())
            }),
            enter_user: shared.ids.as_ref().map(|ids| ids.payload_ns.as_raw_fd()),
            ctty: req.terminal.is_some(),
            seccomp: seccomp::programs(),
        }
    }

    /// The environment of `req`: the spec's, a home, the proxy's
    /// variables when it goes through one, then the request's own.
    fn env(&self, req: &ExecRequest, proxied: bool) -> std::collections::BTreeMap<String, String> {
        let mut env = self.template.spec.env.clone();
        env.entry("HOME".to_owned())
            .or_insert_with(|| self.template.shared.home.display().to_string());
        if proxied {
            env.extend(crate::egress::Served::env());
        }
        env.extend(req.env.clone());
        env
    }

    /// `outcome` with what init reported: the exit status or signal, or
    /// the setup step that failed (the shim's steps, its entering the
    /// namespaces, then init's).
    fn reported(
        &self,
        mut outcome: ExecOutcome,
        report: Option<sys::Report>,
    ) -> Result<ExecOutcome> {
        match report {
            Some(sys::Report::Exited { status }) => {
                if libc::WIFEXITED(status) {
                    outcome.exit_code = Some(libc::WEXITSTATUS(status));
                } else if libc::WIFSIGNALED(status) {
                    outcome.signal = Some(libc::WTERMSIG(status));
                }
            }
            Some(sys::Report::SetupFailed { step, errno }) => {
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

    pub(super) fn vol_path(&self, sub: &str, k: usize) -> PathBuf {
        self.dir.join(sub).join(format!("v{k}"))
    }

    /// The merged workspace as this process can reach it: the mount point
    /// itself, or in user-namespace mode the same path seen through the
    /// holder's root.
    pub(super) fn merged_workspace(&self) -> PathBuf {
        self.template.shared.reach(&self.vol_path("m", 0))
    }

    pub(super) fn files(&self) -> paths::WorkspaceDir {
        paths::WorkspaceDir {
            owner: self.template.shared.ids.as_ref().map(|ids| ids.base),
            root: self.merged_workspace(),
            inside: PathBuf::from(WORKSPACE_DIR),
        }
    }

    pub(super) fn mount_all(&self, inner: &mut Inner) -> Result<()> {
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

    pub(super) fn unmount_all(&self, inner: &mut Inner, detach: bool) -> Result<()> {
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
    pub(super) fn unmount_one(&self, target: &Path, detach: bool) -> std::io::Result<()> {
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

    pub(super) fn upper_is_clean(&self) -> bool {
        (0..self.template.volumes.len())
            .all(|k| std::fs::read_dir(self.vol_path("u", k)).is_ok_and(|mut d| d.next().is_none()))
    }

    pub(super) fn live(&self, inner: &Inner) -> Result<()> {
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
    pub(super) fn freeze(&self, inner: &mut Inner) -> Result<()> {
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

    pub(super) fn release(&self, inner: &mut Inner) -> Result<()> {
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
    pub(super) fn workspace_candidates(&self, inner: &Inner) -> Result<BTreeSet<PathBuf>> {
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
pub(super) fn squash(shared: &Shared, frozen: &[Arc<Layer>], volumes: usize) -> Result<Layer> {
    let out = Layer::new(shared.state.join("l").join(state::new_id()));
    squash_into(shared, frozen, volumes, &out.dir)?;
    Ok(out)
}

/// Merges `frozen` (newest first) into one layer at `dest`: files are hard
/// links, directories are made again with their mode, owner and opacity.
pub(super) fn squash_into(
    shared: &Shared,
    frozen: &[Arc<Layer>],
    volumes: usize,
    dest: &Path,
) -> Result<()> {
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

pub(super) struct NativeSnapshot {
    pub(super) template: Arc<Template>,
    pub(super) frozen: Vec<Arc<Layer>>,
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
        let plan = self.plan(&req, network, proxy.as_ref(), &group, &cwd, status_wr);
        // This is the sandbox's command builder: the one place a native
        // sandbox process is started.
        #[allow(clippy::disallowed_methods)]
        let mut cmd = tokio::process::Command::new(&program);
        cmd.args(&req.argv[1..])
            .env_clear()
            .envs(self.env(&req, proxy.is_some()))
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
        let outcome = ExecOutcome {
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
        self.reported(outcome, report)
    }

    async fn read_file(&self, path: &Path) -> Result<Vec<u8>> {
        self.read_file_within(path, u64::MAX).await
    }

    async fn read_file_within(&self, path: &Path, max: u64) -> Result<Vec<u8>> {
        let inner = self.inner.read().await;
        self.live(&inner)?;
        let (root, path) = (self.merged_workspace(), path.to_owned());
        tokio::task::spawn_blocking(move || {
            paths::read_confined(&root, &path, Path::new(WORKSPACE_DIR), max)
        })
        .await
        .map_err(|e| Error::io("read", Path::new(""), std::io::Error::other(e)))?
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
