//! The egress proxy where forq cannot enter a container's network
//! namespace (an engine on another machine, or forq not root): a sidecar
//! container runs an [`EgressProgram`] on the engine's default bridge and
//! on an internal network of its own. A sandbox's container is created on
//! no network (parked: made on an internal network and disconnected before
//! it starts), joins the sidecar's network for an install exec only, and
//! leaves it when the exec ends. The internal network has no route out, so
//! the sidecar is the install's only neighbour, and the sidecar lets
//! through what the allowlist names and nothing on a private address.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bollard::models::{
    ContainerCreateBody, HostConfig, NetworkConnectRequest, NetworkCreateRequest,
    NetworkDisconnectRequest,
};
use bollard::query_parameters::{
    CreateContainerOptions, ListImagesOptions, ListNetworksOptions, LogsOptions, RemoveImageOptions,
};
use bollard::Docker;
use futures_util::StreamExt;
use md5::{Digest, Md5};

use super::{docker_err, import_rootfs, LABEL_OWNER};
use crate::egress::{EgressAllow, EgressProgram, EGRESS_READY};
use crate::error::{Error, Result};

/// The repository of sidecar images (tagged by their content).
const IMAGE_REPO: &str = "forq-egress";
/// Where the program sits in the sidecar's image.
const PROGRAM_IN_IMAGE: &str = "/forq-egress";
/// The shared internal network containers are made on and then
/// disconnected from, so that they may join a sidecar's network later (a
/// container made on the `none` network never can).
pub(super) const PARKING_NETWORK: &str = "forq-parked";
/// Marks sidecar containers and their networks.
pub(super) const LABEL_EGRESS: &str = "forq.egress";
/// How long a sidecar may take to say it listens.
const READY_WITHIN: Duration = Duration::from_secs(30);

/// The sidecar image for one program, built on the engine on first use.
#[derive(Debug)]
pub(super) struct SidecarImage {
    program: EgressProgram,
    tag: tokio::sync::OnceCell<String>,
}

impl SidecarImage {
    pub(super) fn new(program: EgressProgram) -> Self {
        SidecarImage {
            program,
            tag: tokio::sync::OnceCell::new(),
        }
    }

    /// The image's tag, importing the program and its libraries when the
    /// engine does not have them yet.
    async fn tag(&self, docker: &Docker) -> Result<&str> {
        self.tag
            .get_or_try_init(|| build_image(docker, &self.program))
            .await
            .map(String::as_str)
    }
}

/// A running sidecar and its internal network, removed when dropped.
#[derive(Debug)]
pub(super) struct Sidecar {
    docker: Docker,
    container: String,
    pub(super) network: String,
    /// The sidecar's address on its internal network.
    pub(super) address: String,
}

impl Drop for Sidecar {
    fn drop(&mut self) {
        let (docker, container, network) = (
            self.docker.clone(),
            self.container.clone(),
            self.network.clone(),
        );
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                let _ = super::remove_container_of(&docker, &container).await;
                let _ = docker.remove_network(&network).await;
            });
        }
    }
}

/// Options of forq's internal networks: the bridge gets no address on the
/// engine's host. An internal network only stops forwarding; with an
/// address the host itself (every service it listens with, on any of its
/// addresses) would still be reachable through the container's default
/// route. Without one, that route leads nowhere ("No route to host").
fn isolated() -> HashMap<String, String> {
    HashMap::from([(
        "com.docker.network.bridge.inhibit_ipv4".to_owned(),
        "true".to_owned(),
    )])
}

/// Makes sure the parking network exists (idempotent, and safe when two
/// processes race to make it).
pub(super) async fn ensure_parking(docker: &Docker) -> Result<()> {
    if docker
        .inspect_network(
            PARKING_NETWORK,
            None::<bollard::query_parameters::InspectNetworkOptions>,
        )
        .await
        .is_ok()
    {
        return Ok(());
    }
    let made = docker
        .create_network(NetworkCreateRequest {
            name: PARKING_NETWORK.to_owned(),
            driver: Some("bridge".to_owned()),
            internal: Some(true),
            options: Some(isolated()),
            labels: Some(HashMap::from([(
                LABEL_EGRESS.to_owned(),
                "parking".to_owned(),
            )])),
            ..Default::default()
        })
        .await;
    match made {
        Ok(_) => Ok(()),
        // Made meanwhile by another process.
        Err(_)
            if docker
                .inspect_network(
                    PARKING_NETWORK,
                    None::<bollard::query_parameters::InspectNetworkOptions>,
                )
                .await
                .is_ok() =>
        {
            Ok(())
        }
        Err(e) => Err(docker_err("create the parking network")(e)),
    }
}

/// Takes a created (not yet started) container off the parking network.
pub(super) async fn unpark(docker: &Docker, container: &str) -> Result<()> {
    docker
        .disconnect_network(
            PARKING_NETWORK,
            NetworkDisconnectRequest {
                container: container.to_owned(),
                force: Some(true),
            },
        )
        .await
        .map_err(docker_err("take the container off the parking network"))
}

/// Starts a sidecar serving `allow`, with an internal network of its own.
pub(super) async fn start(
    docker: &Docker,
    image: &SidecarImage,
    allow: &EgressAllow,
    owner: &str,
    id: &str,
) -> Result<Sidecar> {
    let tag = image.tag(docker).await?.to_owned();
    let labels = HashMap::from([
        (LABEL_OWNER.to_owned(), owner.to_owned()),
        (LABEL_EGRESS.to_owned(), id.to_owned()),
    ]);
    let network = format!("forq-egress-{id}");
    docker
        .create_network(NetworkCreateRequest {
            name: network.clone(),
            driver: Some("bridge".to_owned()),
            internal: Some(true),
            options: Some(isolated()),
            labels: Some(labels.clone()),
            ..Default::default()
        })
        .await
        .map_err(docker_err("create the egress network"))?;
    let mut cmd = vec![PROGRAM_IN_IMAGE.to_owned()];
    cmd.extend(image.program.args.iter().cloned());
    let config = ContainerCreateBody {
        image: Some(tag),
        entrypoint: Some(cmd),
        env: Some(vec![format!(
            "FORQ_EGRESS_ALLOW={}",
            allow.entries().join(",")
        )]),
        user: Some("65534:65534".to_owned()),
        labels: Some(labels),
        host_config: Some(HostConfig {
            network_mode: Some("bridge".to_owned()),
            cap_drop: Some(vec!["ALL".to_owned()]),
            security_opt: Some(vec!["no-new-privileges".to_owned()]),
            readonly_rootfs: Some(true),
            memory: Some(256 << 20),
            pids_limit: Some(256),
            ..Default::default()
        }),
        ..Default::default()
    };
    let created = docker
        .create_container(
            Some(CreateContainerOptions {
                name: Some(format!("forq-egress-{id}")),
                ..Default::default()
            }),
            config,
        )
        .await;
    let container = match created {
        Ok(c) => c.id,
        Err(e) => {
            let _ = docker.remove_network(&network).await;
            return Err(docker_err("create the egress sidecar")(e));
        }
    };
    // From here the sidecar's drop removes both.
    let mut sidecar = Sidecar {
        docker: docker.clone(),
        container,
        network,
        address: String::new(),
    };
    docker
        .connect_network(
            &sidecar.network,
            NetworkConnectRequest {
                container: sidecar.container.clone(),
                endpoint_config: None,
            },
        )
        .await
        .map_err(docker_err("connect the egress sidecar"))?;
    docker
        .start_container(&sidecar.container, None)
        .await
        .map_err(docker_err("start the egress sidecar"))?;
    wait_ready(docker, &sidecar.container).await?;
    let info = docker
        .inspect_container(&sidecar.container, None)
        .await
        .map_err(docker_err("inspect the egress sidecar"))?;
    sidecar.address = info
        .network_settings
        .and_then(|s| s.networks)
        .and_then(|mut n| n.remove(&sidecar.network))
        .and_then(|e| e.ip_address)
        .filter(|a| !a.is_empty())
        .ok_or_else(|| Error::Unavailable {
            backend: "docker",
            reason: "the egress sidecar has no address on its network".to_owned(),
        })?;
    Ok(sidecar)
}

/// Follows the sidecar's output until it says it listens.
async fn wait_ready(docker: &Docker, container: &str) -> Result<()> {
    let mut logs = docker.logs(
        container,
        Some(LogsOptions {
            follow: true,
            stdout: true,
            stderr: true,
            ..Default::default()
        }),
    );
    let mut said = String::new();
    let waited = tokio::time::timeout(READY_WITHIN, async {
        while let Some(chunk) = logs.next().await {
            let chunk = chunk.map_err(docker_err("read the egress sidecar's output"))?;
            said.push_str(&String::from_utf8_lossy(&chunk.into_bytes()));
            if said.contains(EGRESS_READY) {
                return Ok(true);
            }
        }
        Ok::<bool, Error>(false)
    })
    .await;
    match waited {
        Ok(Ok(true)) => Ok(()),
        Ok(Err(e)) => Err(e),
        Ok(Ok(false)) => Err(Error::Unavailable {
            backend: "docker",
            reason: format!(
                "the egress sidecar stopped before it listened: {}",
                said.trim()
            ),
        }),
        Err(_) => Err(Error::Unavailable {
            backend: "docker",
            reason: format!(
                "the egress sidecar did not listen within {} s: {}",
                READY_WITHIN.as_secs(),
                said.trim()
            ),
        }),
    }
}

/// Joins `container` to the sidecar's network for one exec.
pub(super) async fn join(docker: &Docker, sidecar: &Sidecar, container: &str) -> Result<()> {
    docker
        .connect_network(
            &sidecar.network,
            NetworkConnectRequest {
                container: container.to_owned(),
                endpoint_config: None,
            },
        )
        .await
        .map_err(docker_err("join the egress network"))
}

/// Takes `container` off the sidecar's network again.
pub(super) async fn leave(docker: &Docker, sidecar: &Sidecar, container: &str) -> Result<()> {
    docker
        .disconnect_network(
            &sidecar.network,
            NetworkDisconnectRequest {
                container: container.to_owned(),
                force: Some(true),
            },
        )
        .await
        .map_err(docker_err("leave the egress network"))
}

/// The egress networks owned by processes `dead` says are gone.
pub(super) async fn dead_networks(
    docker: &Docker,
    dead: impl Fn(Option<&String>) -> bool,
) -> Result<Vec<String>> {
    let networks = docker
        .list_networks(Some(ListNetworksOptions {
            filters: Some(HashMap::from([(
                "label".to_owned(),
                vec![LABEL_EGRESS.to_owned()],
            )])),
        }))
        .await
        .map_err(docker_err("list networks"))?;
    Ok(networks
        .into_iter()
        .filter(|n| dead(n.labels.as_ref().and_then(|l| l.get(LABEL_OWNER))))
        .filter_map(|n| n.name)
        .collect())
}

/// Removes the sidecar images older than an hour that no container uses
/// (each build of the program leaves one; one still wanted is rebuilt on
/// its next sidecar).
pub(super) async fn remove_unused_images(docker: &Docker) -> Result<Vec<String>> {
    let images = docker
        .list_images(Some(ListImagesOptions {
            filters: Some(HashMap::from([(
                "reference".to_owned(),
                vec![format!("{IMAGE_REPO}:*")],
            )])),
            ..Default::default()
        }))
        .await
        .map_err(docker_err("list images"))?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let mut removed = Vec::new();
    // An image younger than an hour may be about to get its sidecar.
    for image in images.into_iter().filter(|i| i.created < now - 3600) {
        // Without force the engine keeps an image a container uses.
        let unused = docker
            .remove_image(&image.id, None::<RemoveImageOptions>, None)
            .await
            .is_ok();
        if unused {
            removed.push(image.id);
        }
    }
    Ok(removed)
}

/// Imports the program and the shared libraries it loads as an image,
/// tagged by their content, unless the engine has it.
async fn build_image(docker: &Docker, program: &EgressProgram) -> Result<String> {
    check_arch(docker).await?;
    let files = files_of(&program.path).await?;
    let stripped = strip(&program.path).await;
    let main = match &stripped {
        Some(s) => s.0.clone(),
        None => program.path.clone(),
    };
    let (tag, tarball) = tokio::task::spawn_blocking({
        let program = program.path.clone();
        move || rootfs(&main, &files).map_err(|e| Error::io("pack the egress program", &program, e))
    })
    .await
    .map_err(|e| {
        Error::io(
            "pack the egress program",
            &program.path,
            std::io::Error::other(e),
        )
    })??;
    if docker.inspect_image(&tag).await.is_err() {
        import_rootfs(docker, tarball, &tag).await?;
    }
    Ok(tag)
}

/// Refuses an engine of another architecture: the program is this
/// machine's.
async fn check_arch(docker: &Docker) -> Result<()> {
    let version = docker
        .version()
        .await
        .map_err(docker_err("read the engine's version"))?;
    let engine = version.arch.unwrap_or_default();
    let here = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    if !engine.is_empty() && engine != here {
        return Err(Error::Unavailable {
            backend: "docker",
            reason: format!(
                "the engine runs {engine} and this forq is built for {here}, so its egress proxy cannot run there; \
                 run forq on a {engine} machine or give that engine no install steps"
            ),
        });
    }
    Ok(())
}

/// The shared libraries `program` loads, as `ldd` lists them (none for a
/// static program).
async fn files_of(program: &Path) -> Result<Vec<PathBuf>> {
    let out = crate::host_command("ldd")
        .arg(program)
        .output()
        .await
        .map_err(|e| Error::io("list the egress program's libraries (ldd)", program, e))?;
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(text
        .lines()
        .filter_map(|line| {
            let line = line.trim();
            let path = match line.split_once("=>") {
                Some((_, rest)) => rest.trim(),
                None => line,
            };
            let path = path.split(" (").next().unwrap_or_default().trim();
            path.starts_with('/').then(|| PathBuf::from(path))
        })
        .collect())
}

/// A copy of `program` without debug sections, when `strip` is there (a
/// debug build is hundreds of megabytes).
async fn strip(program: &Path) -> Option<Stripped> {
    let out =
        Stripped(std::env::temp_dir().join(format!("forq-egress-{}", crate::state::new_id())));
    let status = crate::host_command("strip")
        .arg("--strip-debug")
        .arg("-o")
        .arg(&out.0)
        .arg(program)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .await
        .ok()?;
    status.success().then_some(out)
}

/// The image's tag (by content) and its rootfs: the program at
/// [`PROGRAM_IN_IMAGE`], each library at its own path.
fn rootfs(program: &Path, libraries: &[PathBuf]) -> std::io::Result<(String, Vec<u8>)> {
    let mut digest = Md5::new();
    let mut b = tar::Builder::new(Vec::new());
    let mut add = |b: &mut tar::Builder<Vec<u8>>, name: &str, bytes: &[u8]| {
        digest.update(name.as_bytes());
        digest.update(bytes);
        let mut h = tar::Header::new_gnu();
        h.set_mode(0o755);
        h.set_size(bytes.len() as u64);
        b.append_data(&mut h, name, bytes)
    };
    add(
        &mut b,
        PROGRAM_IN_IMAGE.trim_start_matches('/'),
        &std::fs::read(program)?,
    )?;
    for lib in libraries {
        let name = lib.to_string_lossy();
        add(&mut b, name.trim_start_matches('/'), &std::fs::read(lib)?)?;
    }
    let hex: String = digest
        .finalize()
        .iter()
        .take(8)
        .map(|byte| format!("{byte:02x}"))
        .collect();
    Ok((format!("{IMAGE_REPO}:{hex}"), b.into_inner()?))
}

/// A stripped copy of the program, removed when dropped.
struct Stripped(PathBuf);

impl Drop for Stripped {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
