//! The backend: connecting to an engine, the default image, creating
//! sandboxes, goldens, and what `gc` removes.

#[allow(clippy::wildcard_imports)] // the backend's own types and imports
use super::*;

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

    pub(super) async fn image_exists(&self, image: &str) -> bool {
        self.docker.inspect_image(image).await.is_ok()
    }

    /// Makes sure `image` is there; the default image is built on demand.
    pub(super) async fn ensure_image(&self, image: &str) -> Result<()> {
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

    pub(super) async fn new_container(
        &self,
        spec: &Arc<SandboxSpec>,
        image: &str,
    ) -> Result<String> {
        let id = state::new_id();
        let limits = &spec.limits;
        // Docker reads 0 (and a negative wrap) as no limit at all.
        limits.validate().map_err(Error::InvalidSpec)?;
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
    pub(super) async fn commit(&self, container: &str) -> Result<Arc<CommittedImage>> {
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

    pub(super) async fn remove_container(&self, id: &str) -> Result<()> {
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
pub(super) async fn remove_container_of(docker: &Docker, id: &str) -> Result<()> {
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
