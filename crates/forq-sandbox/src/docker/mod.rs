//! The docker backend: a container per sandbox through the Docker Engine API
//! (bollard). Files move through the archive API, commands through the exec
//! API; a snapshot is a commit and a fork a new container from it.
//!
//! Containers run with every capability dropped, `no-new-privileges`, no
//! network unless the spec asks for the host's, and the spec's memory, pids
//! and CPU caps. An install exec reaches the egress proxy only: served by
//! forq inside the container's network namespace when the engine is this
//! machine's and forq is root, else by a sidecar container ([`sidecar`]). No image is pulled: the caller names a local image, or the
//! default one is built from the host's static busybox ([`import_rootfs`]).

use std::collections::{BTreeSet, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{
    CommitContainerOptions, CreateContainerOptions, CreateImageOptions,
    DownloadFromContainerOptions, ListContainersOptions, ListImagesOptions, RemoveContainerOptions,
    RemoveImageOptions, RestartContainerOptions, UploadToContainerOptions,
};
use bollard::Docker;
use futures_util::StreamExt;
use tokio::io::AsyncWriteExt;
use tokio::sync::RwLock;

use crate::backend::{Backend, BackendKind, DirEntry, Sandbox, Snapshot, SnapshotSource};
use crate::diff::{self, Diff};
use crate::error::{Error, Result};
use crate::output::{Capture, Deadlines, Expired};
use crate::paths::{self, display_rel};
use crate::spec::{
    ExecOutcome, ExecRequest, Network, OutputChunk, SandboxSpec, StreamKind, WORKSPACE_DIR,
};
use crate::state;

mod sidecar;

/// The image used when a spec names none: busybox, built locally.
pub const DEFAULT_IMAGE: &str = "forq-sandbox-busybox:2";

/// The unprivileged user containers of [`DEFAULT_IMAGE`] run as (an image
/// of the caller's runs as its own `USER`).
const SANDBOX_USER: (u32, &str) = (1000, "/home/sandbox");

const LABEL_SANDBOX: &str = "forq.sandbox";
const LABEL_OWNER: &str = "forq.owner";
const SNAPSHOT_REPO: &str = "forq-snapshot";
/// Goldens' images: `forq-golden:<name>-g<N>`, kept by `gc`.
const GOLDEN_REPO: &str = "forq-golden";
const LABEL_GOLDEN: &str = "forq.golden";

/// How the docker backend is set up.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct DockerOptions {
    /// Engine address; default `DOCKER_HOST`, else the local socket.
    pub host: Option<String>,
    /// The program that serves the egress proxy in a sidecar container where
    /// forq cannot serve it inside a container's network namespace (an
    /// engine elsewhere, or forq not root). Default: the process's
    /// [`crate::default_egress_program`]. Without one, such an engine refuses
    /// sandboxes and execs that ask for [`Network::Proxy`].
    pub egress_program: Option<crate::EgressProgram>,
}

/// How install execs reach the egress proxy on an engine.
#[derive(Debug, Clone)]
enum Egress {
    /// forq serves it inside the container's network namespace: the engine
    /// is this machine's (its unix socket) and forq is root.
    InNamespace,
    /// A sidecar container serves it on an internal network the container
    /// joins for the exec.
    Sidecar(Arc<sidecar::SidecarImage>),
    /// Neither; why.
    Unavailable(&'static str),
}

/// Sandboxes as Docker containers.
#[derive(Debug, Clone)]
pub struct DockerBackend {
    docker: Docker,
    owner: String,
    egress: Egress,
    /// The engine's address as given (empty: the default).
    address: String,
}

fn docker_err(op: &'static str) -> impl FnOnce(bollard::errors::Error) -> Error {
    move |source| Error::Docker {
        op,
        source: Box::new(source),
    }
}

fn owner_label() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    format!("{}:{}", host.trim(), std::process::id())
}

impl DockerBackend {
    /// Connects to the engine and checks that it answers.
    pub async fn connect(options: DockerOptions) -> Result<Self> {
        let unavailable = |reason: String| Error::Unavailable {
            backend: "docker",
            reason,
        };
        let docker = match &options.host {
            Some(host) => Docker::connect_with_host(host),
            None => Docker::connect_with_defaults(),
        }
        .map_err(|e| {
            unavailable(format!(
                "cannot reach a Docker engine: {e}; start dockerd or set DOCKER_HOST"
            ))
        })?;
        let docker = docker.negotiate_version().await.map_err(|e| {
            unavailable(format!(
                "no Docker engine answers ({e}); start dockerd or set DOCKER_HOST"
            ))
        })?;
        docker
            .ping()
            .await
            .map_err(|e| unavailable(format!("the Docker engine does not answer a ping: {e}")))?;
        let address = options
            .host
            .clone()
            .or_else(|| std::env::var("DOCKER_HOST").ok())
            .unwrap_or_default();
        let local = address.is_empty() || address.starts_with("unix://");
        // Entering the container's network namespace needs Linux.
        let egress = if local && cfg!(target_os = "linux") && crate::os::euid() == 0 {
            Egress::InNamespace
        } else {
            match options
                .egress_program
                .or_else(crate::egress::default_egress_program)
            {
                Some(program) => Egress::Sidecar(Arc::new(sidecar::SidecarImage::new(program))),
                None => Egress::Unavailable(
                    "forq cannot enter this engine's containers (it is not this machine's socket,                      or forq is not root) and no egress program was given (DockerOptions::egress_program)",
                ),
            }
        };
        Ok(DockerBackend {
            docker,
            owner: owner_label(),
            egress,
            address,
        })
    }

    /// How install steps reach the egress proxy here, in words; `Err` when
    /// they cannot (such installs are refused).
    pub fn egress_route(&self) -> std::result::Result<&'static str, &'static str> {
        match &self.egress {
            Egress::InNamespace => Ok("forq serves it inside the container's own network namespace"),
            Egress::Sidecar(_) => Ok(
                "a sidecar container serves it; the container joins the sidecar's internal network for the install only",
            ),
            Egress::Unavailable(why) => Err(why),
        }
    }

    /// The engine's security options (`name=seccomp,profile=default`,
    /// `name=userns`, ...), as `docker info` lists them.
    pub async fn security_options(&self) -> Result<Vec<String>> {
        let info = self
            .docker
            .info()
            .await
            .map_err(docker_err("read the engine's info"))?;
        Ok(info.security_options.unwrap_or_default())
    }

    /// The engine client, for callers that manage images themselves.
    pub fn client(&self) -> &Docker {
        &self.docker
    }

    async fn image_exists(&self, image: &str) -> bool {
        self.docker.inspect_image(image).await.is_ok()
    }

    /// Makes sure `image` is there; the default image is built on demand.
    async fn ensure_image(&self, image: &str) -> Result<()> {
        if self.image_exists(image).await {
            return Ok(());
        }
        if image != DEFAULT_IMAGE {
            return Err(Error::InvalidSpec(format!(
                "the image {image:?} is not in the Docker engine and forq never pulls; build or load it first"
            )));
        }
        let busybox = ["/bin/busybox", "/usr/bin/busybox"]
            .into_iter()
            .map(Path::new)
            .find(|p| p.is_file())
            .ok_or_else(|| Error::Unavailable {
                backend: "docker",
                reason: format!(
                    "the default image {DEFAULT_IMAGE} is missing and no static busybox is on the host to build it \
                     (apt-get install busybox-static), or pass an image of your own"
                ),
            })?;
        let tarball = busybox_rootfs(busybox)?;
        import_rootfs(&self.docker, tarball, DEFAULT_IMAGE).await
    }

    async fn new_container(&self, spec: &Arc<SandboxSpec>, image: &str) -> Result<String> {
        let id = state::new_id();
        let limits = &spec.limits;
        let network_mode = match (spec.network, &self.egress) {
            (Network::Host, _) => "host",
            (Network::Proxy, Egress::Unavailable(why)) => {
                return Err(Error::InvalidSpec(format!(
                "install steps need forq's egress proxy, and this engine cannot have it: {why}; \
                     give the backend an egress program, run forq as root beside the engine, or \
                     choose the host network for installs yourself"
            )))
            }
            // Made on the parking network and taken off it before it starts,
            // so that installs can join a sidecar's network.
            (_, Egress::Sidecar(_)) => {
                sidecar::ensure_parking(&self.docker).await?;
                sidecar::PARKING_NETWORK
            }
            _ => "none",
        };
        let parked = network_mode == sidecar::PARKING_NETWORK;
        let host_config = HostConfig {
            memory: limits.memory_bytes.map(|m| m as i64),
            memory_swap: limits.memory_bytes.map(|m| m as i64),
            pids_limit: limits.pids.map(|p| p as i64),
            nano_cpus: limits.cpus.map(|c| (c * 1e9) as i64),
            network_mode: Some(network_mode.to_owned()),
            // The disk cap holds per file here (the engine's storage quota
            // needs xfs project quotas): the fsize ulimit.
            ulimits: limits.disk_bytes.map(|b| {
                vec![bollard::models::ResourcesUlimits {
                    name: Some("fsize".to_owned()),
                    soft: Some(b as i64),
                    hard: Some(b as i64),
                }]
            }),
            cap_drop: Some(vec!["ALL".to_owned()]),
            security_opt: Some(vec!["no-new-privileges".to_owned()]),
            init: Some(true),
            ..Default::default()
        };
        let mut env: Vec<String> = spec.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        if image == DEFAULT_IMAGE && !spec.env.contains_key("HOME") {
            env.push(format!("HOME={}", SANDBOX_USER.1));
        }
        let config = ContainerCreateBody {
            image: Some(image.to_owned()),
            entrypoint: Some(vec!["sleep".to_owned()]),
            cmd: Some(vec!["2147483647".to_owned()]),
            working_dir: Some(WORKSPACE_DIR.to_owned()),
            env: Some(env),
            // forq's own image has an unprivileged user; the workspace is
            // uploaded as its (the tar's owners, which the engine keeps).
            user: (image == DEFAULT_IMAGE).then(|| format!("{0}:{0}", SANDBOX_USER.0)),
            labels: Some(HashMap::from([
                (LABEL_SANDBOX.to_owned(), id.clone()),
                (LABEL_OWNER.to_owned(), self.owner.clone()),
            ])),
            host_config: Some(host_config),
            ..Default::default()
        };
        let name = format!("forq-{id}");
        let created = self
            .docker
            .create_container(
                Some(CreateContainerOptions {
                    name: Some(name),
                    ..Default::default()
                }),
                config,
            )
            .await
            .map_err(docker_err("create container"))?;
        if parked {
            if let Err(e) = sidecar::unpark(&self.docker, &created.id).await {
                let _ = self.remove_container(&created.id).await;
                return Err(e);
            }
        }
        if let Err(e) = self.docker.start_container(&created.id, None).await {
            let _ = self.remove_container(&created.id).await;
            return Err(Error::Docker {
                op: "start container",
                source: Box::new(e),
            });
        }
        Ok(created.id)
    }

    /// Commits a container as an image that is removed when the last
    /// holder lets go. Nothing runs in the container at that point (execs are
    /// awaited and their leftovers reaped), so it is not paused.
    async fn commit(&self, container: &str) -> Result<Arc<CommittedImage>> {
        let committed = self
            .docker
            .commit_container(
                CommitContainerOptions {
                    container: Some(container.to_owned()),
                    repo: Some(SNAPSHOT_REPO.to_owned()),
                    tag: Some(state::new_id()),
                    pause: false,
                    changes: Some(format!("LABEL {LABEL_OWNER}={}", self.owner)),
                    ..Default::default()
                },
                bollard::models::ContainerConfig::default(),
            )
            .await
            .map_err(docker_err("commit container"))?;
        Ok(Arc::new(CommittedImage {
            docker: self.docker.clone(),
            id: committed.id,
            hold: None,
        }))
    }

    async fn remove_container(&self, id: &str) -> Result<()> {
        remove_container_of(&self.docker, id).await
    }

    /// Removes the containers and snapshot images whose owning process on
    /// this host is gone. Returns what it removed.
    pub async fn gc() -> Result<Vec<String>> {
        let backend = DockerBackend::connect(DockerOptions::default()).await?;
        let host = owner_label();
        let host = host.split(':').next().unwrap_or_default().to_owned();
        let dead = |owner: Option<&String>| {
            owner
                .and_then(|o| o.split_once(':'))
                .is_some_and(|(h, pid)| {
                    h == host && pid.parse::<i32>().is_ok_and(|p| !crate::os::alive(p))
                })
        };
        let mut removed = Vec::new();
        let filters = HashMap::from([("label".to_owned(), vec![LABEL_OWNER.to_owned()])]);
        let containers = backend
            .docker
            .list_containers(Some(ListContainersOptions {
                all: true,
                filters: Some(filters.clone()),
                ..Default::default()
            }))
            .await
            .map_err(docker_err("list containers"))?;
        for c in containers {
            if dead(c.labels.as_ref().and_then(|l| l.get(LABEL_OWNER))) {
                if let Some(id) = c.id {
                    backend.remove_container(&id).await?;
                    removed.push(id);
                }
            }
        }
        let images = backend
            .docker
            .list_images(Some(ListImagesOptions {
                filters: Some(filters),
                ..Default::default()
            }))
            .await
            .map_err(docker_err("list images"))?;
        for image in images {
            if dead(image.labels.get(LABEL_OWNER)) {
                let _ = backend
                    .docker
                    .remove_image(
                        &image.id,
                        Some(RemoveImageOptions {
                            force: true,
                            ..Default::default()
                        }),
                        None,
                    )
                    .await;
                removed.push(image.id);
            }
        }
        // Egress networks last: their sidecars and members are gone now.
        for network in sidecar::dead_networks(&backend.docker, dead).await? {
            if backend.docker.remove_network(&network).await.is_ok() {
                removed.push(network);
            }
        }
        removed.extend(sidecar::remove_unused_images(&backend.docker).await?);
        Ok(removed)
    }
}

/// Removes a container, running or not, and its anonymous volumes.
async fn remove_container_of(docker: &Docker, id: &str) -> Result<()> {
    docker
        .remove_container(
            id,
            Some(RemoveContainerOptions {
                force: true,
                v: true,
                ..Default::default()
            }),
        )
        .await
        .map_err(docker_err("remove container"))
}

/// A rootfs tarball holding a static busybox and its applet links.
fn busybox_rootfs(busybox: &Path) -> Result<Vec<u8>> {
    let mut b = tar::Builder::new(Vec::new());
    let add_dir =
        |b: &mut tar::Builder<Vec<u8>>, name: &str, mode: u32, owner: u32| -> std::io::Result<()> {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(tar::EntryType::Directory);
            h.set_mode(mode);
            h.set_uid(owner.into());
            h.set_gid(owner.into());
            h.set_size(0);
            b.append_data(&mut h, name, std::io::empty())
        };
    let build = |b: &mut tar::Builder<Vec<u8>>| -> std::io::Result<()> {
        for (d, mode, owner) in [
            ("bin", 0o755, 0),
            ("tmp", 0o1777, 0),
            ("workspace", 0o755, SANDBOX_USER.0),
            ("etc", 0o755, 0),
            ("root", 0o700, 0),
            ("home", 0o755, 0),
            ("home/sandbox", 0o755, SANDBOX_USER.0),
        ] {
            add_dir(b, d, mode, owner)?;
        }
        let bytes = std::fs::read(busybox)?;
        let mut h = tar::Header::new_gnu();
        h.set_mode(0o755);
        h.set_size(bytes.len() as u64);
        b.append_data(&mut h, "bin/busybox", &bytes[..])?;
        for applet in [
            "sh", "ash", "sleep", "cat", "ls", "echo", "true", "false", "rm", "mkdir", "cp", "mv",
            "kill", "ps", "env", "wc", "readlink", "realpath", "find", "grep", "sed", "head",
            "tail", "dd", "nc", "wget", "touch", "stat", "id", "test", "printf", "yes", "seq",
            "sort", "uniq", "tr", "chmod", "ln", "pwd", "diff", "patch", "awk", "xargs", "timeout",
        ] {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(tar::EntryType::Symlink);
            h.set_mode(0o777);
            h.set_size(0);
            b.append_link(&mut h, format!("bin/{applet}"), "busybox")?;
        }
        let (uid, home) = SANDBOX_USER;
        let passwd =
            format!("root:x:0:0:root:/root:/bin/sh\nsandbox:x:{uid}:{uid}::{home}:/bin/sh\n");
        let group = format!("root:x:0:\nsandbox:x:{uid}:\n");
        for (name, text) in [("etc/passwd", passwd), ("etc/group", group)] {
            let mut h = tar::Header::new_gnu();
            h.set_mode(0o644);
            h.set_size(text.len() as u64);
            b.append_data(&mut h, name, text.as_bytes())?;
        }
        Ok(())
    };
    build(&mut b).map_err(|e| Error::io("build the busybox rootfs", busybox, e))?;
    b.into_inner()
        .map_err(|e| Error::io("build the busybox rootfs", busybox, e))
}

/// Imports a rootfs tarball as image `tag` (what `docker import` does), so
/// tests and benchmarks never need a registry.
pub async fn import_rootfs(docker: &Docker, tarball: Vec<u8>, tag: &str) -> Result<()> {
    let (repo, tag) = tag.rsplit_once(':').unwrap_or((tag, "latest"));
    let options = CreateImageOptions {
        from_src: Some("-".to_owned()),
        repo: Some(repo.to_owned()),
        tag: Some(tag.to_owned()),
        ..Default::default()
    };
    let mut stream = docker.create_image(
        Some(options),
        Some(bollard::body_full(bytes::Bytes::from(tarball))),
        None,
    );
    while let Some(step) = stream.next().await {
        step.map_err(docker_err("import image"))?;
    }
    Ok(())
}

/// A tar of `base` with every entry under `workspace/`, owned by `owner`
/// when given (the container's user), else as on the host.
fn workspace_tar(base: &Path, owner: Option<u32>) -> Result<Vec<u8>> {
    let fail = |e: std::io::Error| Error::io("pack the workspace", base, e);
    let mut b = tar::Builder::new(Vec::new());
    for entry in walkdir::WalkDir::new(base).follow_links(false) {
        let entry = entry.map_err(|e| fail(e.into()))?;
        let rel = entry.path().strip_prefix(base).expect("under its root");
        let name = Path::new("workspace").join(rel);
        let meta = entry.path().symlink_metadata().map_err(fail)?;
        let mut h = tar::Header::new_gnu();
        h.set_metadata(&meta);
        if let Some(owner) = owner {
            h.set_uid(owner.into());
            h.set_gid(owner.into());
        }
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(entry.path()).map_err(fail)?;
            b.append_link(&mut h, &name, target).map_err(fail)?;
        } else if meta.is_dir() {
            h.set_size(0);
            b.append_data(&mut h, &name, std::io::empty())
                .map_err(fail)?;
        } else if meta.is_file() {
            let file = std::fs::File::open(entry.path()).map_err(fail)?;
            b.append_data(&mut h, &name, file).map_err(fail)?;
        }
    }
    b.into_inner().map_err(fail)
}

#[async_trait]
impl Backend for DockerBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Docker
    }

    fn per_exec_network(&self) -> bool {
        !matches!(self.egress, Egress::Unavailable(_))
    }

    fn goldens(&self) -> Result<crate::Goldens> {
        // Images live in one engine: each engine's goldens apart.
        let state = state::default_state_dir();
        state::ensure_private_dir(&state)?;
        let tag: String = <md5::Md5 as md5::Digest>::digest(self.address.as_bytes())
            .iter()
            .take(6)
            .map(|b| format!("{b:02x}"))
            .collect();
        crate::Goldens::new(state.join(format!("golden-docker-{tag}")))
    }

    async fn open_state(
        &self,
        dir: &Path,
        saved: &crate::SavedState,
        spec: &SandboxSpec,
        hold: crate::golden::Hold,
    ) -> Result<Snapshot> {
        let image = match (&saved.image, saved.backend) {
            (Some(image), BackendKind::Docker) => image.clone(),
            _ => {
                return Err(Error::InvalidSpec(format!(
                    "the golden in {} is not a docker image",
                    dir.display()
                )))
            }
        };
        if !self.image_exists(&image).await {
            return Err(Error::InvalidSpec(format!(
                "the golden image {image} is not in this Docker engine (built on another, or removed); build the golden again"
            )));
        }
        if !spec.base.is_dir() {
            return Err(Error::InvalidSpec(format!(
                "base {} is not a directory",
                spec.base.display()
            )));
        }
        Ok(Snapshot {
            inner: Arc::new(DockerSnapshot {
                backend: self.clone(),
                spec: Arc::new(spec.clone()),
                lineage: Arc::new(Lineage {
                    owner: saved.owner,
                    ..Lineage::default()
                }),
                image: Arc::new(CommittedImage {
                    docker: self.docker.clone(),
                    id: image,
                    hold: Some(hold),
                }),
            }),
        })
    }

    async fn remove_state(&self, _dir: &Path, saved: &crate::SavedState) -> Result<bool> {
        let Some(image) = &saved.image else {
            return Ok(true);
        };
        match self
            .docker
            .remove_image(image, None::<RemoveImageOptions>, None)
            .await
        {
            Ok(_) => Ok(true),
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => Ok(true),
            // In use by a container (a run forked from it): kept.
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 409, ..
            }) => Ok(false),
            Err(e) => Err(docker_err("remove the golden image")(e)),
        }
    }

    #[tracing::instrument(skip_all, fields(base = %spec.base.display()))]
    async fn create(&self, spec: &SandboxSpec) -> Result<Box<dyn Sandbox>> {
        if !spec.base.is_dir() {
            return Err(Error::InvalidSpec(format!(
                "base {} is not a directory",
                spec.base.display()
            )));
        }
        let image = spec
            .image
            .clone()
            .unwrap_or_else(|| DEFAULT_IMAGE.to_owned());
        self.ensure_image(&image).await?;
        let spec = Arc::new(spec.clone());
        let container = self.new_container(&spec, &image).await?;
        let base = spec.base.clone();
        let owner = (image == DEFAULT_IMAGE).then_some(SANDBOX_USER.0);
        let tar = tokio::task::spawn_blocking(move || workspace_tar(&base, owner))
            .await
            .map_err(|e| Error::io("pack the workspace", &spec.base, std::io::Error::other(e)))??;
        let upload = self
            .docker
            .upload_to_container(
                &container,
                Some(UploadToContainerOptions {
                    path: "/".to_owned(),
                    ..Default::default()
                }),
                bollard::body_full(bytes::Bytes::from(tar)),
            )
            .await;
        if let Err(e) = upload {
            let _ = self.remove_container(&container).await;
            return Err(Error::Docker {
                op: "upload the workspace",
                source: Box::new(e),
            });
        }
        Ok(Box::new(DockerSandbox::new(
            self.clone(),
            spec,
            Arc::new(Lineage {
                owner,
                ..Lineage::default()
            }),
            None,
            container,
        )))
    }
}

/// What the exec API gave back, before interpretation.
struct RawExec {
    program: String,
    /// `None` when a timeout ended it.
    code: Option<i32>,
    timed_out: bool,
    idle_timed_out: bool,
    duration: Duration,
    out: Capture,
    err: Capture,
}

/// A sandbox of the docker backend.
#[derive(Debug)]
pub struct DockerSandbox {
    id: String,
    backend: DockerBackend,
    spec: Arc<SandboxSpec>,
    container: String,
    /// What every fork of one create shares.
    lineage: Arc<Lineage>,
    /// The snapshot image the container runs from, held so that it is
    /// removed only after the container.
    #[allow(dead_code)] // held, never read
    image: Option<Arc<CommittedImage>>,
    destroyed: RwLock<bool>,
    /// Held exclusively by an exec that has the egress proxy, shared by the
    /// others: nothing else runs while the container can reach the proxy.
    net: RwLock<()>,
    /// OOM kills already reported (the cgroup's counter only grows).
    oom_seen: AtomicU64,
}

/// A committed image, removed when the last holder lets go, unless it is a
/// golden's (which `hold` keeps in use).
#[derive(Debug)]
struct CommittedImage {
    docker: Docker,
    id: String,
    hold: Option<crate::golden::Hold>,
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

struct DockerSnapshot {
    backend: DockerBackend,
    spec: Arc<SandboxSpec>,
    lineage: Arc<Lineage>,
    image: Arc<CommittedImage>,
}

/// What the sandboxes of one create and all their forks share, computed
/// from the base on first use.
#[derive(Debug, Default)]
struct Lineage {
    /// The uid of the containers' user when forq chose it (its own image),
    /// which what forq uploads must belong to.
    owner: Option<u32>,
    untracked: OnceLock<diff::Untracked>,
    /// Content hash and executable bit of every file of the base, and its
    /// symbolic links.
    base_files: OnceLock<Listing>,
    /// The egress sidecar the lineage's installs share, started on the
    /// first one (sidecar mode only).
    sidecar: tokio::sync::OnceCell<Arc<sidecar::Sidecar>>,
}

/// What the diff compares a file by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileState {
    md5: [u8; 16],
    executable: bool,
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
    fn new(
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

    fn docker(&self) -> &Docker {
        &self.backend.docker
    }

    async fn live(&self) -> Result<tokio::sync::RwLockReadGuard<'_, bool>> {
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
    async fn helper(&self, argv: &[&str]) -> Result<(Option<i32>, String)> {
        let req = ExecRequest::new(argv.iter().copied()).timeout(Duration::from_secs(60));
        let raw = self.exec_raw(&req).await?;
        let (stdout, _) = raw.out.finish();
        Ok((raw.code, String::from_utf8_lossy(&stdout).into_owned()))
    }

    /// The absolute path inside the container for `rel` as written, and with
    /// symbolic links resolved, after checking that the resolved path stays
    /// in the workspace.
    async fn confine(&self, rel: &Path) -> Result<(String, String)> {
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
    async fn reap_leftovers(&self) -> Result<()> {
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
    async fn oom_kills(&self) -> Result<u64> {
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
    async fn exec_raw(&self, req: &ExecRequest) -> Result<RawExec> {
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
    async fn serve_proxy(&self) -> Result<crate::egress::Served> {
        let (ns_path, _) = self.container_netns().await?;
        let made = std::fs::File::open(&ns_path).and_then(|netns| {
            let listener = listener_in(&netns, crate::egress::PROXY_PORT)?;
            crate::egress::Served::start(netns, listener, &self.spec.egress)
        });
        made.map_err(|e| Error::io("serve the egress proxy in", ns_path, e))
    }

    /// The container's network namespace, as this machine sees it (its
    /// path under /proc, and its inode).
    async fn container_netns(&self) -> Result<(PathBuf, u64)> {
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
    async fn run_beside_sidecar(
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

    async fn run(&self, req: ExecRequest) -> Result<ExecOutcome> {
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

    async fn restart(&self) -> Result<()> {
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
    async fn diff_whole_workspace(&self, base: PathBuf, lineage: Arc<Lineage>) -> Result<Diff> {
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
    async fn download(&self, path: &str) -> Result<Vec<u8>> {
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
        let _live = self.live().await?;
        let (_, resolved) = self.confine(path).await?;
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
fn listener_in(netns: &std::fs::File, port: u16) -> std::io::Result<std::net::TcpListener> {
    crate::native::sys::listener_in(netns, port)
}

#[cfg(not(target_os = "linux"))]
fn listener_in(_: &std::fs::File, _: u16) -> std::io::Result<std::net::TcpListener> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "entering a network namespace needs Linux",
    ))
}

/// A service network inside the network namespace `netns`.
#[cfg(target_os = "linux")]
fn service_in(netns: std::fs::File) -> std::io::Result<crate::ServiceNetwork> {
    crate::native::sys::service_in(netns)
}

#[cfg(not(target_os = "linux"))]
fn service_in(_: std::fs::File) -> std::io::Result<crate::ServiceNetwork> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "entering a network namespace needs Linux",
    ))
}

/// Above this many changed files a diff downloads the whole workspace once
/// instead of each file.
const MAX_FETCHED_FILES: usize = 64;

/// Lists the workspace (without `.git`): `L ./path` for each symbolic
/// link, `X ./path` for each executable file, then `md5sum` lines.
const HASH_SCRIPT: &str = "cd /workspace || exit 3
find . -path ./.git -prune -o -type l -print | sed 's/^/L /'
find . -path ./.git -prune -o -type f -perm -100 -print | sed 's/^/X /'
find . -path ./.git -prune -o -type f -print0 | xargs -0 -r md5sum";

/// The workspace as the hash script saw it.
#[derive(Debug, Default, Clone)]
struct Listing {
    files: HashMap<PathBuf, FileState>,
    links: BTreeSet<PathBuf>,
}

/// Reads the hash script's output; `None` when a line cannot be read
/// unambiguously (md5sum escapes names with newlines or backslashes).
fn parse_hashes(listing: &str) -> Option<Listing> {
    let mut out = Listing::default();
    let mut executable = BTreeSet::new();
    let rel = |p: &str| p.strip_prefix("./").map(PathBuf::from);
    for line in listing.lines() {
        if let Some(p) = line.strip_prefix("L ") {
            out.links.insert(rel(p)?);
        } else if let Some(p) = line.strip_prefix("X ") {
            executable.insert(rel(p)?);
        } else {
            let (hex, path) = line.split_once("  ")?;
            if hex.starts_with('\\') || hex.len() != 32 {
                return None;
            }
            let mut md5 = [0u8; 16];
            for (i, byte) in md5.iter_mut().enumerate() {
                *byte = u8::from_str_radix(hex.get(i * 2..i * 2 + 2)?, 16).ok()?;
            }
            out.files.insert(
                rel(path)?,
                FileState {
                    md5,
                    executable: false,
                },
            );
        }
    }
    for path in executable {
        out.files.get_mut(&path)?.executable = true;
    }
    Some(out)
}

/// Hash and executable bit of every regular file of the base, and its
/// links: what the hash script prints, computed on the host.
fn hash_base(base: &Path) -> Listing {
    use md5::Digest;
    use std::os::unix::fs::PermissionsExt;
    let mut out = Listing::default();
    let walker = walkdir::WalkDir::new(base)
        .into_iter()
        .filter_entry(|e| !diff::excluded(e.path().strip_prefix(base).unwrap_or(e.path())));
    for entry in walker.flatten() {
        let rel = entry
            .path()
            .strip_prefix(base)
            .expect("under its root")
            .to_path_buf();
        if entry.file_type().is_symlink() {
            out.links.insert(rel);
            continue;
        }
        if !entry.file_type().is_file() {
            continue;
        }
        let (Ok(bytes), Ok(meta)) = (std::fs::read(entry.path()), entry.metadata()) else {
            continue;
        };
        let md5: [u8; 16] = md5::Md5::digest(&bytes).into();
        out.files.insert(
            rel,
            FileState {
                md5,
                executable: meta.permissions().mode() & 0o100 != 0,
            },
        );
    }
    out
}

/// The paths to fetch (new or changed files, and every link) and the
/// paths of the base that are gone.
fn changed_paths(base: &Listing, current: &Listing) -> (BTreeSet<PathBuf>, BTreeSet<PathBuf>) {
    let mut fetch: BTreeSet<PathBuf> = current.links.clone();
    for (path, state) in &current.files {
        if base.files.get(path) != Some(state) {
            fetch.insert(path.clone());
        }
    }
    let gone = |p: &&PathBuf| !current.files.contains_key(*p) && !current.links.contains(*p);
    let deleted = base
        .files
        .keys()
        .chain(&base.links)
        .filter(gone)
        .cloned()
        .collect();
    (fetch, deleted)
}

/// Writes the single entry of a downloaded archive to `dest`: a file with
/// its mode, or a symbolic link.
fn unpack_single(tar: &[u8], dest: &Path) -> Result<()> {
    let mut archive = tar::Archive::new(tar);
    let mut entries = archive
        .entries()
        .map_err(|e| Error::io("read an archive", dest, e))?;
    let Some(entry) = entries.next() else {
        return Ok(());
    };
    let mut entry = entry.map_err(|e| Error::io("read an archive", dest, e))?;
    if let Some(parent) = dest.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io("create", parent, e))?;
    }
    let header = entry.header();
    if header.entry_type().is_symlink() {
        let target = entry
            .link_name()
            .map_err(|e| Error::io("read an archive", dest, e))?
            .unwrap_or_default()
            .into_owned();
        return std::os::unix::fs::symlink(target, dest).map_err(|e| Error::io("symlink", dest, e));
    }
    let mode = header.mode().unwrap_or(0o644);
    let mut bytes = Vec::new();
    entry
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io("read an archive", dest, e))?;
    std::fs::write(dest, &bytes).map_err(|e| Error::io("write", dest, e))?;
    std::fs::set_permissions(dest, std::os::unix::fs::PermissionsExt::from_mode(mode))
        .map_err(|e| Error::io("chmod", dest, e))
}

fn tempdir_for_diff() -> Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("forq-docker-diff-{}", state::new_id()));
    std::fs::create_dir_all(&dir).map_err(|e| Error::io("create", &dir, e))?;
    Ok(dir)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn state(hex_byte: u8, executable: bool) -> FileState {
        FileState {
            md5: [hex_byte; 16],
            executable,
        }
    }

    #[test]
    fn hash_listing_is_read_and_compared() {
        let listing = format!(
            "L ./src/link.py\nX ./run.sh\n{}  ./run.sh\n{}  ./src/lib.py\n{}  ./src/new file.txt\n",
            "11".repeat(16),
            "22".repeat(16),
            "33".repeat(16)
        );
        let current = parse_hashes(&listing).expect("readable");
        assert_eq!(current.files[Path::new("run.sh")], state(0x11, true));
        assert_eq!(current.files[Path::new("src/lib.py")], state(0x22, false));
        assert!(current.files.contains_key(Path::new("src/new file.txt")));
        assert!(current.links.contains(Path::new("src/link.py")));

        let mut base = Listing::default();
        base.files.insert("run.sh".into(), state(0x11, false)); // mode changed
        base.files.insert("src/lib.py".into(), state(0x22, false)); // same
        base.files.insert("src/gone.py".into(), state(0x44, false)); // deleted
        base.links.insert("src/old-link".into()); // deleted link
        let (fetch, deleted) = changed_paths(&base, &current);
        let fetch: Vec<_> = fetch.iter().map(|p| p.display().to_string()).collect();
        assert_eq!(fetch, ["run.sh", "src/link.py", "src/new file.txt"]);
        let deleted: Vec<_> = deleted.iter().map(|p| p.display().to_string()).collect();
        assert_eq!(deleted, ["src/gone.py", "src/old-link"]);
    }

    #[test]
    fn unreadable_hash_listings_fall_back() {
        assert!(parse_hashes("\\0123  ./odd\\nname\n").is_none());
        assert!(parse_hashes("not a listing\n").is_none());
        assert!(parse_hashes("X ./only-mode\n").is_none());
    }
}
