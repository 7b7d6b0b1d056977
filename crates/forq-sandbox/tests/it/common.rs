//! The test harness: a backend per test with its own state directory, a
//! generated repository, and helpers that look at the host from outside.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use forq_sandbox::{
    Backend, BackendKind, DockerBackend, DockerOptions, ExecOutcome, ExecRequest, HostBackend,
    HostOptions, NativeBackend, NativeOptions, Sandbox, SandboxSpec,
};

pub(crate) struct Harness {
    pub(crate) backend: Arc<dyn Backend>,
    pub(crate) kind: BackendKind,
    /// The native backend itself, to look at its mounts.
    pub(crate) native: Option<NativeBackend>,
    /// The state directory (native and host), for looking at mounts.
    pub(crate) state: Option<tempfile::TempDir>,
    /// A generated repository every sandbox starts from.
    pub(crate) repo: tempfile::TempDir,
    /// This machine's address as the egress proxy sees it: loopback where
    /// forq serves the proxy, the engine's bridge gateway where a sidecar
    /// container does.
    pub(crate) host_addr: String,
}

fn skip_or_fail(kind: &str, why: &dyn std::fmt::Display) -> Option<Harness> {
    if std::env::var_os("CI").is_some() {
        panic!("the {kind} backend must work under CI: {why}");
    }
    eprintln!("SKIPPED: the {kind} backend is unavailable here: {why}");
    None
}

/// A small repository with a nested file, an executable and a symlink.
fn make_repo() -> tempfile::TempDir {
    let repo = tempfile::Builder::new()
        .prefix("forq-it-repo-")
        .tempdir()
        .expect("tempdir");
    let p = repo.path();
    std::fs::create_dir_all(p.join("src/deep")).unwrap();
    std::fs::write(p.join("README.md"), "# fixture\n").unwrap();
    std::fs::write(p.join(".gitignore"), "*.log\n").unwrap();
    std::fs::write(p.join("src/lib.py"), "def add(a, b):\n    return a - b\n").unwrap();
    std::fs::write(p.join("src/deep/data.txt"), "one\ntwo\nthree\n").unwrap();
    std::fs::write(p.join("src/gone.txt"), "delete me\n").unwrap();
    std::fs::create_dir_all(p.join("docs")).unwrap();
    std::fs::write(p.join("docs/a.md"), "a\n").unwrap();
    std::fs::write(p.join("docs/b.md"), "b\n").unwrap();
    std::os::unix::fs::symlink("lib.py", p.join("src/link.py")).unwrap();
    repo
}

fn state_dir() -> tempfile::TempDir {
    // On the root filesystem (not a tmpfs), like the default state directory.
    std::fs::create_dir_all("/var/tmp").ok();
    tempfile::Builder::new()
        .prefix("forq-it-state-")
        .tempdir_in("/var/tmp")
        .expect("state dir")
}

impl Harness {
    pub(crate) async fn native() -> Option<Harness> {
        Self::native_with(false).await
    }

    /// The native backend with its overlays in a user namespace of its own,
    /// as it runs without root.
    pub(crate) async fn native_userns() -> Option<Harness> {
        Self::native_with(true).await
    }

    async fn native_with(user_namespace: bool) -> Option<Harness> {
        let state = state_dir();
        let mut opts = NativeOptions::default();
        opts.state_dir = Some(state.path().to_path_buf());
        opts.user_namespace = Some(user_namespace);
        match NativeBackend::open(opts) {
            Ok(b) => Some(Harness {
                backend: Arc::new(b.clone()),
                kind: BackendKind::Native,
                native: Some(b),
                state: Some(state),
                repo: make_repo(),
                host_addr: "127.0.0.1".to_owned(),
            }),
            Err(e) => skip_or_fail("native", &e),
        }
    }

    pub(crate) async fn docker() -> Option<Harness> {
        match DockerBackend::connect(DockerOptions::default()).await {
            Ok(b) => Some(Harness {
                backend: Arc::new(b),
                kind: BackendKind::Docker,
                native: None,
                state: None,
                repo: make_repo(),
                host_addr: "127.0.0.1".to_owned(),
            }),
            Err(e) => skip_or_fail("docker", &e),
        }
    }

    /// The same engine over TCP (`FORQ_TEST_DOCKER_TCP`, default
    /// `tcp://127.0.0.1:2375`), as forq sees an engine on another machine:
    /// it cannot enter the containers' network namespaces, so the egress
    /// proxy runs in a sidecar container (the `forq-egress` program).
    pub(crate) async fn docker_remote() -> Option<Harness> {
        let mut opts = DockerOptions::default();
        opts.host = Some(remote_engine());
        opts.egress_program = Some(forq_sandbox::EgressProgram::new(
            env!("CARGO_BIN_EXE_forq-egress"),
            Vec::<String>::new(),
        ));
        match DockerBackend::connect(opts).await {
            Ok(b) => {
                assert!(
                    b.egress_route().is_ok_and(|r| r.contains("sidecar")),
                    "{:?}",
                    b.egress_route()
                );
                Some(Harness {
                    backend: Arc::new(b),
                    kind: BackendKind::Docker,
                    native: None,
                    state: None,
                    repo: make_repo(),
                    host_addr: crate::bridge::bridge_gateway().await,
                })
            }
            Err(e) => skip_or_fail("docker over tcp", &e),
        }
    }

    pub(crate) async fn host() -> Option<Harness> {
        let state = state_dir();
        let mut opts = HostOptions::default();
        opts.state_dir = Some(state.path().to_path_buf());
        let b = HostBackend::open(opts).expect("the host backend always opens");
        Some(Harness {
            backend: Arc::new(b),
            kind: BackendKind::Host,
            native: None,
            state: Some(state),
            repo: make_repo(),
            host_addr: "127.0.0.1".to_owned(),
        })
    }

    pub(crate) fn spec(&self) -> SandboxSpec {
        SandboxSpec::new(self.repo.path())
    }

    pub(crate) async fn create(&self) -> Box<dyn Sandbox> {
        self.create_with(self.spec()).await
    }

    pub(crate) async fn create_with(&self, spec: SandboxSpec) -> Box<dyn Sandbox> {
        self.backend.create(&spec).await.expect("create a sandbox")
    }

    /// Another backend of the same kind over the same state, as a later
    /// forq process opens it.
    pub(crate) async fn reopened(&self) -> Arc<dyn Backend> {
        match self.kind {
            BackendKind::Native => {
                let mut opts = NativeOptions::default();
                opts.state_dir = self.state_path().map(Path::to_path_buf);
                opts.user_namespace = self.native.as_ref().map(|n| n.in_user_namespace());
                Arc::new(NativeBackend::open(opts).expect("reopen the native backend"))
            }
            BackendKind::Docker => Arc::new(
                DockerBackend::connect(DockerOptions::default())
                    .await
                    .expect("reconnect"),
            ),
            other => panic!("the {other} backend keeps no goldens"),
        }
    }

    pub(crate) fn state_path(&self) -> Option<&Path> {
        self.state.as_ref().map(|s| s.path())
    }
}

/// Runs a shell script and returns the outcome.
pub(crate) async fn sh(sb: &dyn Sandbox, script: &str) -> ExecOutcome {
    sb.exec(ExecRequest::shell(script).timeout(std::time::Duration::from_secs(60)))
        .await
        .unwrap_or_else(|e| panic!("exec {script:?}: {e:#}"))
}

/// Host processes whose command line contains `needle` (NUL-separated argv).
pub(crate) fn host_processes_with(needle: &[u8]) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            if cmdline.windows(needle.len()).any(|w| w == needle) {
                out.push(pid);
            }
        }
    }
    out
}

/// Polls `cond` for up to five seconds.
pub(crate) async fn eventually(mut cond: impl FnMut() -> bool) -> bool {
    for _ in 0..100 {
        if cond() {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    cond()
}

pub(crate) fn rel(p: &str) -> PathBuf {
    PathBuf::from(p)
}

/// Mounts a tmpfs at `dir` on the host (test setup), with `options`.
pub(crate) async fn mount_tmpfs(dir: &Path, options: &str) {
    let mut cmd = forq_sandbox::host_command("mount");
    cmd.args(["-t", "tmpfs"]);
    if !options.is_empty() {
        cmd.args(["-o", options]);
    }
    let status = cmd.arg("tmpfs").arg(dir).status().await.unwrap();
    assert!(status.success(), "mount a tmpfs at {}", dir.display());
}

/// The address tests reach the local engine at over TCP.
pub(crate) fn remote_engine() -> String {
    std::env::var("FORQ_TEST_DOCKER_TCP").unwrap_or_else(|_| "tcp://127.0.0.1:2375".to_owned())
}
