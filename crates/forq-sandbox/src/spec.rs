//! What a caller asks for: the sandbox spec, its limits, and one command.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

/// Where the workspace appears inside native and docker sandboxes.
pub const WORKSPACE_DIR: &str = "/workspace";

/// How a sandbox is made.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SandboxSpec {
    /// The directory holding the repository. It is never written: every
    /// change lands in the sandbox's own layer.
    pub base: PathBuf,
    /// The root filesystem commands see.
    pub rootfs: RootFs,
    /// Resource caps applied to every command.
    pub limits: Limits,
    /// Network access of every command.
    pub network: Network,
    /// Environment every command starts with (a request may add to it).
    pub env: BTreeMap<String, String>,
    /// The image for the docker backend (ignored by the others).
    pub image: Option<String>,
    /// What [`Network::Proxy`] lets through.
    pub egress: crate::egress::EgressAllow,
}

impl SandboxSpec {
    /// A spec over `base` with the defaults: host system directories as root
    /// filesystem, no network, no caps beyond the backend's, a minimal
    /// environment.
    pub fn new(base: impl Into<PathBuf>) -> Self {
        let mut env = BTreeMap::new();
        env.insert(
            "PATH".to_owned(),
            std::env::var("PATH").unwrap_or_else(|_| DEFAULT_PATH.to_owned()),
        );
        env.insert("LANG".to_owned(), "C.UTF-8".to_owned());
        SandboxSpec {
            base: base.into(),
            rootfs: RootFs::Host,
            limits: Limits::default(),
            network: Network::None,
            env,
            image: None,
            egress: crate::egress::EgressAllow::default(),
        }
    }

    /// Sets the hosts [`Network::Proxy`] lets through.
    pub fn egress(mut self, allow: crate::egress::EgressAllow) -> Self {
        self.egress = allow;
        self
    }

    /// Sets the limits.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Sets the network policy.
    pub fn network(mut self, network: Network) -> Self {
        self.network = network;
        self
    }

    /// Sets the docker image.
    pub fn image(mut self, image: impl Into<String>) -> Self {
        self.image = Some(image.into());
        self
    }

    /// Sets the root filesystem.
    pub fn rootfs(mut self, rootfs: RootFs) -> Self {
        self.rootfs = rootfs;
        self
    }

    /// Adds one environment variable.
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(key.into(), value.into());
        self
    }
}

pub(crate) const DEFAULT_PATH: &str =
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The root filesystem of a native sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RootFs {
    /// A read-only view of the host's system directories (`/usr`, `/etc`,
    /// `/opt`...) and toolchains, with home directories and user data masked.
    Host,
    /// A root filesystem directory of its own, mounted read-only.
    Dir(PathBuf),
}

/// Resource caps. `None` means the backend's default (no cap).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Limits {
    /// Memory cap in bytes; a command over it is killed and reported as
    /// `killed_for_memory`.
    pub memory_bytes: Option<u64>,
    /// Cap on the number of processes and threads alive at once.
    pub pids: Option<u64>,
    /// CPU cap in cores (e.g. `1.5`).
    pub cpus: Option<f64>,
    /// Cap on the bytes a sandbox has written to its layers (native: its
    /// upper and frozen layers; no single file may pass it either), and on
    /// any one file it writes (docker, through the `fsize` ulimit). A
    /// command over it is killed and reported as `killed_for_disk`.
    #[serde(default)]
    pub disk_bytes: Option<u64>,
}

impl Limits {
    /// Whether every cap set is one: a 0 (which Docker and the kernel read
    /// as no limit), a size past `i64::MAX` (which an engine's signed
    /// field would wrap to -1, no limit), or a core count that is not a
    /// positive number is refused, with the cap it is.
    pub fn validate(&self) -> std::result::Result<(), String> {
        let fits = |v: u64| v > 0 && i64::try_from(v).is_ok();
        if self.memory_bytes.is_some_and(|m| !fits(m)) {
            return Err(format!(
                "memory cap {:?} bytes is no cap: give 1 or more, up to {}",
                self.memory_bytes,
                i64::MAX
            ));
        }
        if self.pids.is_some_and(|p| !fits(p)) {
            return Err(format!(
                "process cap {:?} is no cap: give 1 or more",
                self.pids
            ));
        }
        if self.disk_bytes.is_some_and(|d| !fits(d)) {
            return Err(format!(
                "disk cap {:?} bytes is no cap: give 1 or more",
                self.disk_bytes
            ));
        }
        if self
            .cpus
            .is_some_and(|c| !c.is_finite() || c <= 0.0 || c * 1e9 >= i64::MAX as f64)
        {
            return Err(format!(
                "CPU cap {:?} cores is no cap: give a number above 0",
                self.cpus
            ));
        }
        Ok(())
    }

    /// The caps forq puts on every sandbox it makes for a run unless the
    /// operator says otherwise: a quarter of this machine's memory (at
    /// least 1 GiB), 4096 processes, all cores but one (at least one) and
    /// 8 GiB written to its layers, so that a runaway test leaves the host
    /// and forq itself room.
    pub fn standard() -> Self {
        let total = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|m| {
                m.lines()
                    .find_map(|l| l.strip_prefix("MemTotal:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            })
            .map_or(4 << 30, |kib| kib * 1024);
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        Limits {
            memory_bytes: Some((total / 4).max(1 << 30)),
            pids: Some(4096),
            cpus: Some(cores.saturating_sub(1).max(1) as f64),
            disk_bytes: Some(8 << 30),
        }
    }

    /// Sets the disk cap.
    pub fn disk_bytes(mut self, bytes: u64) -> Self {
        self.disk_bytes = Some(bytes);
        self
    }

    /// Sets the memory cap.
    pub fn memory_bytes(mut self, bytes: u64) -> Self {
        self.memory_bytes = Some(bytes);
        self
    }
    /// Sets the pids cap.
    pub fn pids(mut self, pids: u64) -> Self {
        self.pids = Some(pids);
        self
    }
    /// Sets the CPU cap.
    pub fn cpus(mut self, cpus: f64) -> Self {
        self.cpus = Some(cpus);
        self
    }
}

/// Network access of a sandbox.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Network {
    /// A loopback interface of the sandbox's own and nothing else: the host's
    /// loopback services are not reachable either.
    #[default]
    None,
    /// The host's network: everything the host reaches, its loopback
    /// services included. Only the operator should choose it.
    Host,
    /// A network of the sandbox's own whose only way out is forq's egress
    /// proxy (`HTTP_PROXY`/`HTTPS_PROXY` point at it), which reaches only
    /// the hosts of [`SandboxSpec::egress`]: what install steps get. Where
    /// a backend cannot give it (a docker engine that is not this machine's
    /// socket, or forq not root) a sandbox made with it has the host's
    /// network, and `forq doctor` says so.
    Proxy,
}

impl std::str::FromStr for Network {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "none" => Ok(Network::None),
            "host" => Ok(Network::Host),
            "proxy" => Ok(Network::Proxy),
            other => Err(format!(
                "unknown network policy {other:?}: expected none, proxy or host"
            )),
        }
    }
}

/// One command to run in a sandbox.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ExecRequest {
    /// Program and arguments; `argv[0]` is looked up in `PATH`.
    pub argv: Vec<String>,
    /// Working directory relative to the workspace root (`""` is the root).
    pub cwd: PathBuf,
    /// Variables added to the sandbox's environment for this command.
    pub env: BTreeMap<String, String>,
    /// Bytes fed to standard input (then closed); `None` is `/dev/null`.
    pub stdin: Option<Vec<u8>>,
    /// Wall-clock cap; the whole process tree is killed when it runs out.
    pub timeout: Option<Duration>,
    /// Kill the command when it prints nothing for this long.
    pub idle_timeout: Option<Duration>,
    /// How many bytes of each stream are kept: half from the head, half from
    /// the tail; what falls between is counted in `*_dropped`.
    pub output_cap: usize,
    /// Where live output goes, chunk by chunk, as it arrives.
    pub stream: Option<mpsc::UnboundedSender<OutputChunk>>,
    /// Network access for this exec alone, overriding the sandbox's
    /// (installs reach the registries, the test run that follows does not).
    /// The native backend honours it per exec; a docker container's network
    /// is fixed when it is created, so there an override that differs is
    /// refused; the host backend has no isolation to change.
    pub network: Option<Network>,
    /// A terminal of its own: the slave side of a pseudo-terminal
    /// ([`crate::Pty`]) that becomes the command's standard streams and, on
    /// the native backend, its controlling terminal. Output then goes to the
    /// pty's master, not to `stdout`/`stderr`. The docker backend refuses it.
    pub terminal: Option<std::sync::Arc<std::os::fd::OwnedFd>>,
    /// Runs in this network (from [`crate::Sandbox::service_network`])
    /// instead: a service forq reaches with
    /// [`crate::ServiceNetwork::connect`] while nothing else does.
    pub service_network: Option<crate::ServiceNetwork>,
}

/// The default cap on captured output per stream (1 MiB).
pub const DEFAULT_OUTPUT_CAP: usize = 1 << 20;

impl ExecRequest {
    /// Runs `argv` directly.
    pub fn new<I, S>(argv: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        ExecRequest {
            argv: argv.into_iter().map(Into::into).collect(),
            cwd: PathBuf::new(),
            env: BTreeMap::new(),
            stdin: None,
            timeout: None,
            idle_timeout: None,
            output_cap: DEFAULT_OUTPUT_CAP,
            stream: None,
            network: None,
            terminal: None,
            service_network: None,
        }
    }

    /// Runs the command in `network` (see [`ExecRequest::service_network`]).
    pub fn service_network(mut self, network: &crate::ServiceNetwork) -> Self {
        self.service_network = Some(network.clone());
        self
    }

    /// Gives the command `pty`'s slave as its terminal (see
    /// [`ExecRequest::terminal`]).
    pub fn terminal(mut self, pty: &crate::Pty) -> Self {
        self.terminal = Some(pty.slave.clone());
        self
    }

    /// Gives this exec its own network access (see [`ExecRequest::network`]).
    pub fn network(mut self, network: Network) -> Self {
        self.network = Some(network);
        self
    }

    /// Runs a shell string with `/bin/sh -c`.
    pub fn shell(script: impl Into<String>) -> Self {
        Self::new(["/bin/sh".to_owned(), "-c".to_owned(), script.into()])
    }

    /// Sets the wall-clock timeout.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Sets the idle timeout.
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = Some(timeout);
        self
    }

    /// Sets the working directory (relative to the workspace root).
    pub fn cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        self.cwd = cwd.into();
        self
    }

    /// Adds an environment variable.
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(key.into(), value.into());
        self
    }

    /// Feeds `bytes` to standard input.
    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.stdin = Some(bytes.into());
        self
    }

    /// Sets the per-stream output cap.
    pub fn output_cap(mut self, bytes: usize) -> Self {
        self.output_cap = bytes;
        self
    }

    /// Streams output chunks to `tx` as they arrive.
    pub fn stream(mut self, tx: mpsc::UnboundedSender<OutputChunk>) -> Self {
        self.stream = Some(tx);
        self
    }
}

/// Which output stream a chunk came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StreamKind {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// A piece of live output.
#[derive(Debug, Clone)]
pub struct OutputChunk {
    /// Which stream.
    pub stream: StreamKind,
    /// The bytes, as read.
    pub bytes: Vec<u8>,
}

/// How a command ended.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ExecOutcome {
    /// The exit code, when it exited.
    pub exit_code: Option<i32>,
    /// The signal that ended it, when one did.
    pub signal: Option<i32>,
    /// It ran past its wall-clock timeout and was killed.
    pub timed_out: bool,
    /// It printed nothing for its idle timeout and was killed.
    pub idle_timed_out: bool,
    /// The memory cap was hit and the kernel killed it.
    pub killed_for_memory: bool,
    /// The disk cap was hit and forq killed it.
    #[serde(default)]
    pub killed_for_disk: bool,
    /// Wall-clock duration in milliseconds.
    pub duration_ms: u64,
    /// Captured standard output (head and tail when capped).
    #[serde(with = "lossy")]
    pub stdout: Vec<u8>,
    /// Captured standard error (head and tail when capped).
    #[serde(with = "lossy")]
    pub stderr: Vec<u8>,
    /// Bytes of standard output left out between head and tail.
    pub stdout_dropped: u64,
    /// Bytes of standard error left out between head and tail.
    pub stderr_dropped: u64,
}

impl ExecOutcome {
    /// A command that exited with `code` after printing `stdout` and
    /// `stderr` (for a backend made outside this crate; set the other
    /// fields on the result).
    pub fn exited(code: i32, stdout: impl Into<Vec<u8>>, stderr: impl Into<Vec<u8>>) -> Self {
        ExecOutcome {
            exit_code: Some(code),
            stdout: stdout.into(),
            stderr: stderr.into(),
            ..ExecOutcome::default()
        }
    }

    /// It exited with code 0.
    pub fn success(&self) -> bool {
        self.exit_code == Some(0)
    }

    /// The code a shell would report: the exit code, or 128 + signal.
    pub fn shell_code(&self) -> i32 {
        match (self.exit_code, self.signal) {
            (Some(code), _) => code,
            (None, Some(sig)) => 128 + sig,
            (None, None) => 255,
        }
    }

    /// Standard output as text (lossy).
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// Standard error as text (lossy).
    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }
}

mod lossy {
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&String::from_utf8_lossy(bytes))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        Ok(String::deserialize(d)?.into_bytes())
    }
}
