//! A sandbox: one container, its execs, files, snapshots (commits) and
//! forks.

#[allow(clippy::wildcard_imports)] // the backend's own types and imports
use super::*;

/// What the exec API gave back, before interpretation.
pub(super) struct RawExec {
    pub(super) program: String,
    /// `None` when a timeout ended it.
    pub(super) code: Option<i32>,
    pub(super) timed_out: bool,
    pub(super) idle_timed_out: bool,
    pub(super) duration: Duration,
    pub(super) out: Capture,
    pub(super) err: Capture,
}

/// A committed image, removed when the last holder lets go, unless it is a
/// golden's (which `hold` keeps in use).
#[derive(Debug)]
pub(super) struct CommittedImage {
    pub(super) docker: Docker,
    pub(super) id: String,
    pub(super) hold: Option<crate::golden::Hold>,
}

impl Drop for CommittedImage {
    fn drop(&mut self) {
        if self.hold.is_some() {
            return;
        }
        let (docker, id) = (self.docker.clone(), self.id.clone());
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                let _ = docker
                    .remove_image(
                        &id,
                        Some(RemoveImageOptions {
                            force: true,
                            ..Default::default()
                        }),
                        None,
                    )
                    .await;
            });
        }
    }
}

pub(super) struct DockerSnapshot {
    pub(super) backend: DockerBackend,
    pub(super) spec: Arc<SandboxSpec>,
    pub(super) lineage: Arc<Lineage>,
    pub(super) image: Arc<CommittedImage>,
}

/// What the sandboxes of one create and all their forks share, computed
/// from the base on first use.
#[derive(Debug, Default)]
pub(super) struct Lineage {
    /// The uid of the containers' user when forq chose it (its own image),
    /// which what forq uploads must belong to.
    pub(super) owner: Option<u32>,
    pub(super) untracked: OnceLock<diff::Untracked>,
    /// Content hash and executable bit of every file of the base, and its
    /// symbolic links.
    pub(super) base_files: OnceLock<Listing>,
    /// The egress sidecar the lineage's installs share, started on the
    /// first one (sidecar mode only).
    pub(super) sidecar: tokio::sync::OnceCell<Arc<sidecar::Sidecar>>,
}

/// What the diff compares a file by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FileState {
    pub(super) md5: [u8; 16],
    pub(super) executable: bool,
}

#[async_trait]
impl SnapshotSource for DockerSnapshot {
    fn id(&self) -> String {
        self.image.id.clone()
    }

    async fn fork(&self) -> Result<Box<dyn Sandbox>> {
        let container = self
            .backend
            .new_container(&self.spec, &self.image.id)
            .await?;
        let mut sb = DockerSandbox::new(
            self.backend.clone(),
            self.spec.clone(),
            self.lineage.clone(),
            Some(self.image.clone()),
            container,
        );
        sb.id = format!(
            "{}@{}",
            sb.id,
            &self.image.id[..self.image.id.len().min(19)]
        );
        Ok(Box::new(sb))
    }
}

impl DockerSandbox {
    pub(super) fn new(
        backend: DockerBackend,
        spec: Arc<SandboxSpec>,
        lineage: Arc<Lineage>,
        image: Option<Arc<CommittedImage>>,
        container: String,
    ) -> Self {
        DockerSandbox {
            id: container[..12.min(container.len())].to_owned(),
            lineage,
            image,
            backend,
            spec,
            container,
            destroyed: RwLock::new(false),
            net: RwLock::new(()),
            oom_seen: AtomicU64::new(0),
        }
    }

    pub(super) fn docker(&self) -> &Docker {
        &self.backend.docker
    }

    pub(super) async fn live(&self) -> Result<tokio::sync::RwLockReadGuard<'_, bool>> {
        let guard = self.destroyed.read().await;
        if *guard {
            return Err(Error::Gone {
                id: self.id.clone(),
                state: "destroyed",
            });
        }
        Ok(guard)
    }

    /// Runs a helper command of forq's own; returns its exit code and
    /// standard output.
    pub(super) async fn helper(&self, argv: &[&str]) -> Result<(Option<i32>, String)> {
        let req = ExecRequest::new(argv.iter().copied()).timeout(Duration::from_secs(60));
        let raw = self.exec_raw(&req).await?;
        let (stdout, _) = raw.out.finish();
        Ok((raw.code, String::from_utf8_lossy(&stdout).into_owned()))
    }

    /// The absolute path inside the container for `rel` as written, and with
    /// symbolic links resolved, after checking that the resolved path stays
    /// in the workspace.
    pub(super) async fn confine(&self, rel: &Path) -> Result<(String, String)> {
        let rel = paths::lexical(rel)?;
        let full = format!("{WORKSPACE_DIR}/{}", display_rel(&rel));
        // Resolve the deepest existing ancestor, as the native backend does.
        let mut probe = rel.clone();
        loop {
            let path = format!("{WORKSPACE_DIR}/{}", display_rel(&probe));
            let (code, stdout) = self.helper(&["readlink", "-f", "--", &path]).await?;
            let resolved = stdout.trim().to_owned();
            if code == Some(0) && !resolved.is_empty() {
                if resolved == WORKSPACE_DIR || resolved.starts_with(&format!("{WORKSPACE_DIR}/")) {
                    let rest = rel
                        .strip_prefix(&probe)
                        .expect("probe is an ancestor of rel");
                    let resolved = if rest.as_os_str().is_empty() {
                        resolved
                    } else {
                        format!("{resolved}/{}", display_rel(rest))
                    };
                    return Ok((full, resolved));
                }
                return Err(Error::PathEscape {
                    path: rel,
                    reason: "a symbolic link on it points outside the workspace",
                });
            }
            if !probe.pop() {
                return Ok((full.clone(), full));
            }
        }
    }

    /// Kills whatever an exec left running: the engine keeps an exec's
    /// orphans alive, so the container restarts (its files stay) when any
    /// process beyond its own init and keep-alive remains.
    pub(super) async fn reap_leftovers(&self) -> Result<()> {
        let top = self
            .docker()
            .top_processes(&self.container, None)
            .await
            .map_err(docker_err("list container processes"))?;
        let alive = top.processes.map_or(0, |p| p.len());
        if alive > 2 {
            tracing::debug!(id = %self.id, alive, "restarting the container to end leftover processes");
            self.restart().await?;
        }
        Ok(())
    }

    /// The container's cumulative OOM-kill count, read from its own cgroup.
    pub(super) async fn oom_kills(&self) -> Result<u64> {
        let out = self
            .helper(&["sh", "-c", "cat /sys/fs/cgroup/memory/memory.oom_control /sys/fs/cgroup/memory.events 2>/dev/null"])
            .await?;
        Ok(out
            .1
            .lines()
            .filter_map(|l| l.strip_prefix("oom_kill "))
            .filter_map(|v| v.trim().parse::<u64>().ok())
            .max()
            .unwrap_or(0))
    }

    /// Runs a command through the exec API and collects its output; on a
    /// timeout the container restarts, which kills everything in it.
    pub(super) async fn exec_raw(&self, req: &ExecRequest) -> Result<RawExec> {
        let Some(program) = req.argv.first().cloned() else {
            return Err(Error::InvalidSpec(
                "an exec needs at least a program name".to_owned(),
            ));
        };
        let cwd = Path::new(WORKSPACE_DIR).join(paths::lexical(&req.cwd)?);
        let env: Vec<String> = req.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let exec = self
            .docker()
            .create_exec(
                &self.container,
                bollard::exec::CreateExecOptions {
                    cmd: Some(req.argv.clone()),
                    env: Some(env),
                    working_dir: Some(cwd.display().to_string()),
                    attach_stdout: Some(true),
                    attach_stderr: Some(true),
                    attach_stdin: Some(req.stdin.is_some()),
                    ..Default::default()
                },
            )
            .await
            .map_err(docker_err("create exec"))?;
        let started = Instant::now();
        let start = self
            .docker()
            .start_exec(&exec.id, None)
            .await
            .map_err(docker_err("start exec"))?;
        let bollard::exec::StartExecResults::Attached {
            mut output,
            mut input,
        } = start
        else {
            return Err(Error::InvalidSpec(
                "the engine detached an attached exec".to_owned(),
            ));
        };
        if let Some(bytes) = req.stdin.clone() {
            tokio::spawn(async move {
                let _ = input.write_all(&bytes).await;
                let _ = input.shutdown().await;
            });
        }
        let collected = collect(&mut output, req, started).await?;
        let (out, err, timed_out, idle_timed_out) = collected;
        let code = if timed_out || idle_timed_out {
            // The exec API cannot kill what it started: restarting the
            // container kills every process in it and keeps its files.
            self.restart().await?;
            None
        } else {
            let inspect = self
                .docker()
                .inspect_exec(&exec.id)
                .await
                .map_err(docker_err("inspect exec"))?;
            Some(inspect.exit_code.unwrap_or(-1) as i32)
        };
        Ok(RawExec {
            program,
            code,
            timed_out,
            idle_timed_out,
            duration: started.elapsed(),
            out,
            err,
        })
    }

    /// The egress proxy on the container's loopback, for one exec.
    pub(super) async fn serve_proxy(&self) -> Result<crate::egress::Served> {
        let (ns_path, _) = self.container_netns().await?;
        let made = std::fs::File::open(&ns_path).and_then(|netns| {
            let listener = listener_in(&netns, crate::egress::PROXY_PORT)?;
            crate::egress::Served::start(netns, listener, &self.spec.egress)
        });
        made.map_err(|e| Error::io("serve the egress proxy in", ns_path, e))
    }

    /// The container's network namespace, as this machine sees it (its
    /// path under /proc, and its inode).
    pub(super) async fn container_netns(&self) -> Result<(PathBuf, u64)> {
        let info = self
            .backend
            .docker
            .inspect_container(&self.container, None)
            .await
            .map_err(docker_err("inspect the container"))?;
        let pid = info
            .state
            .and_then(|s| s.pid)
            .filter(|p| *p > 0)
            .ok_or_else(|| {
                Error::InvalidSpec("the container has no process to find its network by".to_owned())
            })?;
        let ns_path = PathBuf::from(format!("/proc/{pid}/ns/net"));
        let inode = std::fs::metadata(&ns_path)
            .map(|m| std::os::unix::fs::MetadataExt::ino(&m))
            .map_err(|e| Error::io("find the container's network", &ns_path, e))?;
        Ok((ns_path, inode))
    }

    /// Runs `req` with the container on the lineage's sidecar network (the
    /// sidecar started on first use), and takes it off again.
    pub(super) async fn run_beside_sidecar(
        &self,
        req: ExecRequest,
        image: &sidecar::SidecarImage,
    ) -> Result<ExecOutcome> {
        let docker = self.docker();
        let sidecar = self
            .lineage
            .sidecar
            .get_or_try_init(|| async {
                sidecar::start(
                    docker,
                    image,
                    &self.spec.egress,
                    &self.backend.owner,
                    &self.id,
                )
                .await
                .map(Arc::new)
            })
            .await?
            .clone();
        sidecar::join(docker, &sidecar, &self.container).await?;
        let mut req = req;
        req.env.extend(crate::egress::proxy_env(&sidecar.address));
        let outcome = self.run(req).await;
        if let Err(e) = sidecar::leave(docker, &sidecar, &self.container).await {
            // A container that cannot be taken off the proxy's network must
            // not run anything more.
            let _ = self.backend.remove_container(&self.container).await;
            return Err(outcome.err().unwrap_or(e));
        }
        outcome
    }

    pub(super) async fn run(&self, req: ExecRequest) -> Result<ExecOutcome> {
        let RawExec {
            program,
            code,
            timed_out,
            idle_timed_out,
            duration,
            out,
            err,
        } = self.exec_raw(&req).await?;
        let mut outcome = ExecOutcome {
            timed_out,
            idle_timed_out,
            duration_ms: duration.as_millis() as u64,
            ..ExecOutcome::default()
        };
        if let Some(code) = code {
            let oom_kills = if code == 137 {
                self.oom_kills().await?
            } else {
                0
            };
            if code == 128 + libc::SIGXFSZ && self.spec.limits.disk_bytes.is_some() {
                outcome.killed_for_disk = true;
                outcome.signal = Some(libc::SIGXFSZ);
            } else if oom_kills > self.oom_seen.load(Ordering::Relaxed) {
                self.oom_seen.store(oom_kills, Ordering::Relaxed);
                outcome.killed_for_memory = true;
                outcome.signal = Some(libc::SIGKILL);
            } else if code == 126 || code == 127 {
                // The engine reports a failed exec in the output stream.
                let said = [out.peek(), err.peek()].concat();
                let said = String::from_utf8_lossy(&said);
                if said.contains("OCI runtime exec failed") {
                    let kind = if said.contains("not found") || said.contains("no such file") {
                        std::io::ErrorKind::NotFound
                    } else {
                        std::io::ErrorKind::PermissionDenied
                    };
                    return Err(Error::Spawn {
                        program,
                        source: std::io::Error::new(kind, said.trim().to_owned()),
                    });
                }
                outcome.exit_code = Some(code);
            } else if (129..=128 + 64).contains(&code) {
                // runc reports a signal as 128 + its number; `exit 137`
                // and SIGKILL cannot be told apart here.
                outcome.signal = Some(code - 128);
            } else {
                outcome.exit_code = Some(code);
            }
            self.reap_leftovers().await?;
        } else {
            outcome.signal = Some(libc::SIGKILL);
        }
        (outcome.stdout, outcome.stdout_dropped) = out.finish();
        (outcome.stderr, outcome.stderr_dropped) = err.finish();
        Ok(outcome)
    }

    pub(super) async fn restart(&self) -> Result<()> {
        self.docker()
            .restart_container(
                &self.container,
                Some(RestartContainerOptions {
                    t: Some(0),
                    ..Default::default()
                }),
            )
            .await
            .map_err(docker_err("restart container"))
    }

    /// The diff by downloading the whole workspace: for changes too many to
    /// fetch one by one.
    pub(super) async fn diff_whole_workspace(
        &self,
        base: PathBuf,
        lineage: Arc<Lineage>,
    ) -> Result<Diff> {
        let tar = self.download(WORKSPACE_DIR).await?;
        tokio::task::spawn_blocking(move || {
            let dir = tempdir_for_diff()?;
            let mut archive = tar::Archive::new(&tar[..]);
            archive.set_preserve_permissions(true);
            archive
                .unpack(&dir)
                .map_err(|e| Error::io("unpack the workspace", &dir, e))?;
            let result = diff::diff_trees(&base, &dir.join("workspace"), &lineage.untracked);
            let _ = std::fs::remove_dir_all(&dir);
            result
        })
        .await
        .map_err(|e| Error::io("diff", WORKSPACE_DIR, std::io::Error::other(e)))?
    }

    /// Downloads `path` (absolute inside the container) as a tar archive.
    pub(super) async fn download(&self, path: &str) -> Result<Vec<u8>> {
        let mut stream = self.docker().download_from_container(
            &self.container,
            Some(DownloadFromContainerOptions {
                path: path.to_owned(),
            }),
        );
        let mut bytes = Vec::new();
        while let Some(chunk) = stream.next().await {
            bytes.extend_from_slice(&chunk.map_err(docker_err("download from container"))?);
        }
        Ok(bytes)
    }
}

#[async_trait]
impl Sandbox for DockerSandbox {
    fn id(&self) -> &str {
        &self.id
    }

    fn backend(&self) -> BackendKind {
        BackendKind::Docker
    }

    #[tracing::instrument(skip_all, fields(id = %self.id))]
    async fn exec(&self, req: ExecRequest) -> Result<ExecOutcome> {
        let _live = self.live().await?;
        if req.terminal.is_some() {
            return Err(Error::InvalidSpec(
                "a terminal of its own is for native sandboxes; run this one without it".to_owned(),
            ));
        }
        if let Some(service) = &req.service_network {
            // Only this container's own network is a service network here.
            let own = self.container_netns().await.ok();
            if own.as_ref().map(|(_, ino)| *ino) != Some(service.netns_inode()) {
                return Err(Error::InvalidSpec(
                    "a service network is this sandbox's own (Sandbox::service_network)".to_owned(),
                ));
            }
        }
        let wanted = req.network.unwrap_or(self.spec.network);
        match (wanted, &self.backend.egress) {
            (Network::Proxy, Egress::InNamespace) => {
                let _net = self.net.write().await;
                let served = self.serve_proxy().await?;
                let mut req = req;
                req.env.extend(crate::egress::Served::env());
                let outcome = self.run(req).await;
                drop(served);
                outcome
            }
            (Network::Proxy, Egress::Sidecar(image)) => {
                let _net = self.net.write().await;
                self.run_beside_sidecar(req, image).await
            }
            (Network::Proxy, Egress::Unavailable(why)) if self.spec.network != Network::Host => {
                Err(Error::InvalidSpec(format!(
                    "this exec asks for forq's egress proxy, and this engine cannot have it: {why}"
                )))
            }
            // The container has the host's network for its whole life;
            // less cannot be taken away, and is not asked for by callers
            // that know `per_exec_network`.
            (_, _) if self.spec.network == Network::Host => self.run(req).await,
            (Network::None, _) => {
                let _net = self.net.read().await;
                self.run(req).await
            }
            (_, _) => Err(Error::InvalidSpec(format!(
                "a docker sandbox's network is fixed when its container is created ({:?}); \
                 create the sandbox with the network this exec needs",
                self.spec.network
            ))),
        }
    }

    async fn read_file(&self, path: &Path) -> Result<Vec<u8>> {
        self.read_file_within(path, u64::MAX).await
    }

    async fn read_file_within(&self, path: &Path, max: u64) -> Result<Vec<u8>> {
        let _live = self.live().await?;
        let (_, resolved) = self.confine(path).await?;
        // What it is and its size, asked first: a fifo is never read, and
        // a file past the cap never downloaded.
        let (code, stat) = self
            .helper(&["stat", "-c", "%s %F", "--", &resolved])
            .await?;
        let stat = stat.trim();
        if code == Some(0) {
            let (size, kind) = stat.split_once(' ').unwrap_or((stat, ""));
            if kind != "regular file" && kind != "regular empty file" {
                return Err(Error::io(
                    "read",
                    path,
                    std::io::Error::other(format!("not a regular file ({kind})")),
                ));
            }
            if size.parse::<u64>().map_or(true, |s| s > max) {
                return Err(Error::TooLarge {
                    path: path.to_owned(),
                    max,
                });
            }
        }
        let tar = self.download(&resolved).await?;
        let mut archive = tar::Archive::new(&tar[..]);
        let mut entries = archive.entries().map_err(|e| Error::io("read", path, e))?;
        let mut entry = entries
            .next()
            .ok_or_else(|| Error::io("read", path, std::io::ErrorKind::NotFound.into()))?
            .map_err(|e| Error::io("read", path, e))?;
        if entry.header().entry_type().is_dir() {
            return Err(Error::io(
                "read",
                path,
                std::io::Error::other("is a directory"),
            ));
        }
        if entry.header().size().map_or(true, |s| s > max) {
            return Err(Error::TooLarge {
                path: path.to_owned(),
                max,
            });
        }
        let mut bytes = Vec::new();
        entry
            .read_to_end(&mut bytes)
            .map_err(|e| Error::io("read", path, e))?;
        Ok(bytes)
    }

    async fn write_file(&self, path: &Path, contents: &[u8]) -> Result<()> {
        let _live = self.live().await?;
        let (_, resolved) = self.confine(path).await?;
        let rel = resolved
            .strip_prefix(&format!("{WORKSPACE_DIR}/"))
            .unwrap_or(&resolved)
            .to_owned();
        let mut b = tar::Builder::new(Vec::new());
        // New parent directories are entries of their own, so that they too
        // belong to the container's user rather than to the engine.
        let parents: Vec<&Path> = Path::new(&rel)
            .ancestors()
            .skip(1)
            .filter(|p| !p.as_os_str().is_empty())
            .collect();
        let owner = self.lineage.owner;
        let own = |h: &mut tar::Header| {
            if let Some(owner) = owner {
                h.set_uid(owner.into());
                h.set_gid(owner.into());
            }
        };
        for dir in parents.into_iter().rev() {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(tar::EntryType::Directory);
            h.set_mode(0o755);
            h.set_size(0);
            own(&mut h);
            b.append_data(&mut h, dir, std::io::empty())
                .map_err(|e| Error::io("write", path, e))?;
        }
        let mut h = tar::Header::new_gnu();
        h.set_mode(0o644);
        h.set_size(contents.len() as u64);
        own(&mut h);
        b.append_data(&mut h, &rel, contents)
            .map_err(|e| Error::io("write", path, e))?;
        let tar = b.into_inner().map_err(|e| Error::io("write", path, e))?;
        self.docker()
            .upload_to_container(
                &self.container,
                Some(UploadToContainerOptions {
                    path: WORKSPACE_DIR.to_owned(),
                    ..Default::default()
                }),
                bollard::body_full(bytes::Bytes::from(tar)),
            )
            .await
            .map_err(docker_err("upload a file"))
    }

    async fn list_dir(&self, path: &Path) -> Result<Vec<DirEntry>> {
        let _live = self.live().await?;
        let (_, resolved) = self.confine(path).await?;
        let script = r#"cd "$1" || exit 3; for f in * .[!.]* ..?*; do
  [ -e "$f" ] || [ -L "$f" ] || continue
  if [ -d "$f" ] && [ ! -L "$f" ]; then printf 'd 0 %s\n' "$f"; else printf 'f %s %s\n' "$(wc -c < "$f" 2>/dev/null || echo 0)" "$f"; fi
done"#;
        let (code, stdout) = self.helper(&["sh", "-c", script, "sh", &resolved]).await?;
        if code != Some(0) {
            return Err(Error::io("list", path, std::io::ErrorKind::NotFound.into()));
        }
        let mut entries: Vec<DirEntry> = stdout
            .lines()
            .filter_map(|l| {
                let mut it = l.splitn(3, ' ');
                let kind = it.next()?;
                let size = it.next()?.trim().parse().unwrap_or(0);
                let name = it.next()?.to_owned();
                Some(DirEntry {
                    name,
                    is_dir: kind == "d",
                    size,
                })
            })
            .collect();
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(entries)
    }

    async fn remove(&self, path: &Path) -> Result<()> {
        let _live = self.live().await?;
        let (full, _) = self.confine(path).await?;
        if full.trim_end_matches('/') == WORKSPACE_DIR {
            return Err(Error::PathEscape {
                path: path.to_path_buf(),
                reason: "it is the workspace root itself",
            });
        }
        let script = "[ -e \"$1\" ] || [ -L \"$1\" ] || exit 3; rm -rf -- \"$1\"";
        let (code, _) = self.helper(&["sh", "-c", script, "sh", &full]).await?;
        if code != Some(0) {
            return Err(Error::io(
                "remove",
                path,
                std::io::ErrorKind::NotFound.into(),
            ));
        }
        Ok(())
    }

    #[tracing::instrument(skip_all, fields(id = %self.id))]
    async fn save_state(&self, _dir: &Path, label: &str) -> Result<crate::SavedState> {
        let _live = self.live().await?;
        let committed = self
            .docker()
            .commit_container(
                CommitContainerOptions {
                    container: Some(self.container.clone()),
                    repo: Some(GOLDEN_REPO.to_owned()),
                    tag: Some(label.to_owned()),
                    pause: false,
                    // The container's owner label would have `gc` take
                    // the golden with its process: blanked.
                    changes: Some(format!("LABEL {LABEL_GOLDEN}={label} {LABEL_OWNER}=\"\"")),
                    ..Default::default()
                },
                bollard::models::ContainerConfig::default(),
            )
            .await
            .map_err(docker_err("commit the golden"))?;
        let bytes = self
            .docker()
            .inspect_image(&committed.id)
            .await
            .ok()
            .and_then(|i| i.size)
            .unwrap_or(0)
            .max(0) as u64;
        Ok(crate::SavedState::docker(
            format!("{GOLDEN_REPO}:{label}"),
            self.lineage.owner,
            bytes,
        ))
    }

    async fn snapshot(&self) -> Result<Snapshot> {
        let _live = self.live().await?;
        let image = self.backend.commit(&self.container).await?;
        Ok(Snapshot {
            inner: Arc::new(DockerSnapshot {
                backend: self.backend.clone(),
                spec: self.spec.clone(),
                lineage: self.lineage.clone(),
                image,
            }),
        })
    }

    async fn diff(&self) -> Result<Diff> {
        let _live = self.live().await?;
        let base = self.spec.base.clone();
        let lineage = self.lineage.clone();
        // The container hashes its workspace (no transfer of contents); only
        // files whose hash or mode differ from the base are fetched.
        let (code, listing) = self.helper(&["sh", "-c", HASH_SCRIPT]).await?;
        {
            // The base is hashed once per lineage, off the async threads.
            let (base, lineage) = (base.clone(), lineage.clone());
            tokio::task::spawn_blocking(move || {
                lineage.base_files.get_or_init(|| hash_base(&base));
            })
            .await
            .map_err(|e| Error::io("hash the base", &self.spec.base, std::io::Error::other(e)))?;
        }
        let base_files = lineage.base_files.get().expect("initialised just above");
        let changed = match (code, parse_hashes(&listing)) {
            (Some(0), Some(current)) => Some(changed_paths(base_files, &current)),
            // A listing this backend cannot read (no md5sum in the image,
            // odd file names): compare everything.
            _ => None,
        };
        let Some((fetch, deleted)) = changed.filter(|(fetch, _)| fetch.len() <= MAX_FETCHED_FILES)
        else {
            return self.diff_whole_workspace(base, lineage).await;
        };
        let dir = tempdir_for_diff()?;
        let result = async {
            for rel in &fetch {
                let tar = self
                    .download(&Path::new(WORKSPACE_DIR).join(rel).display().to_string())
                    .await?;
                unpack_single(&tar, &dir.join(rel))?;
            }
            let untracked = lineage
                .untracked
                .get_or_init(|| diff::Untracked::load(&base));
            diff::diff_paths(&base, &dir, fetch.into_iter().chain(deleted), untracked)
        }
        .await;
        let _ = std::fs::remove_dir_all(&dir);
        result
    }

    async fn service_network(&self) -> Result<crate::ServiceNetwork> {
        // forq enters the container's namespace: the engine must be this
        // machine's, and forq root (what the in-namespace proxy needs too).
        if !matches!(self.backend.egress, Egress::InNamespace) {
            return Err(Error::Unsupported {
                backend: "docker",
                what: "a service network on an engine forq cannot enter (another machine's, or forq not root)",
            });
        }
        let _live = self.live().await?;
        let (ns_path, _) = self.container_netns().await?;
        std::fs::File::open(&ns_path)
            .and_then(service_in)
            .map_err(|e| Error::io("enter the container's network", ns_path, e))
    }

    async fn destroy(self: Box<Self>) -> Result<()> {
        let mut destroyed = self.destroyed.write().await;
        *destroyed = true;
        self.backend.remove_container(&self.container).await
    }
}

/// A listener on `port` inside the network namespace `netns`.
#[cfg(target_os = "linux")]
pub(super) fn listener_in(
    netns: &std::fs::File,
    port: u16,
) -> std::io::Result<std::net::TcpListener> {
    crate::native::sys::listener_in(netns, port)
}

#[cfg(not(target_os = "linux"))]
pub(super) fn listener_in(_: &std::fs::File, _: u16) -> std::io::Result<std::net::TcpListener> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "entering a network namespace needs Linux",
    ))
}

/// A service network inside the network namespace `netns`.
#[cfg(target_os = "linux")]
pub(super) fn service_in(netns: std::fs::File) -> std::io::Result<crate::ServiceNetwork> {
    crate::native::sys::service_in(netns)
}

#[cfg(not(target_os = "linux"))]
pub(super) fn service_in(_: std::fs::File) -> std::io::Result<crate::ServiceNetwork> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "entering a network namespace needs Linux",
    ))
}

impl Drop for DockerSandbox {
    fn drop(&mut self) {
        if *self.destroyed.get_mut() {
            return;
        }
        let (docker, id) = (self.backend.docker.clone(), self.container.clone());
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                let _ = docker
                    .remove_container(
                        &id,
                        Some(RemoveContainerOptions {
                            force: true,
                            v: true,
                            ..Default::default()
                        }),
                    )
                    .await;
            });
        }
    }
}

/// An exec's output as the engine streams it.
type LogStream = std::pin::Pin<
    Box<
        dyn futures_util::Stream<
                Item = std::result::Result<bollard::container::LogOutput, bollard::errors::Error>,
            > + Send,
    >,
>;

/// Reads an exec's output until it ends or a deadline passes (the whole
/// run's, or the silence's): stdout, stderr (each capped, each chunk
/// streamed to the request's channel), and which deadline passed.
async fn collect(
    output: &mut LogStream,
    req: &ExecRequest,
    started: Instant,
) -> Result<(Capture, Capture, bool, bool)> {
    let (mut out, mut err) = (Capture::new(req.output_cap), Capture::new(req.output_cap));
    let deadlines = Deadlines::new(req, started);
    let mut last_output = started;
    let (mut timed_out, mut idle_timed_out) = (false, false);
    loop {
        tokio::select! {
            item = output.next() => match item {
                Some(Ok(log)) => {
                    let (kind, bytes) = match log {
                        bollard::container::LogOutput::StdOut { message } => (StreamKind::Stdout, message),
                        bollard::container::LogOutput::StdErr { message } => (StreamKind::Stderr, message),
                        _ => continue,
                    };
                    last_output = Instant::now();
                    match kind {
                        StreamKind::Stdout => out.push(&bytes),
                        StreamKind::Stderr => err.push(&bytes),
                    }
                    if let Some(tx) = &req.stream {
                        let _ = tx.send(OutputChunk { stream: kind, bytes: bytes.to_vec() });
                    }
                }
                Some(Err(e)) => {
                    return Err(Error::Docker {
                        op: "read exec output",
                        source: Box::new(e),
                    })
                }
                None => break,
            },
            expired = deadlines.wait(last_output) => {
                match expired {
                    Some(Expired::Timeout) => timed_out = true,
                    Some(Expired::Idle) => idle_timed_out = true,
                    None => continue,
                }
                break;
            }
        }
    }
    Ok((out, err, timed_out, idle_timed_out))
}
