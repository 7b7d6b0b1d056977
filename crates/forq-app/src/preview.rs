//! Preview environments: a run's fix running. The repository's warm
//! sandbox (forked from its golden when one matches) with the run's patch,
//! `golden.start` from forq.yml started in a network of the sandbox's own,
//! and a way in to `golden.port` that only forq has — a server relays to
//! it (forq serve's `/preview/ID/`). A preview stops when asked, when idle
//! too long, or when its owner drops it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use forq_sandbox::{ExecRequest, Sandbox, ServiceNetwork};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::config::Config;

/// What a preview starts, and when it is ready.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PreviewSpec {
    /// The command (`sh -c`, at the repository's root, in the foreground).
    pub start: String,
    /// The port it listens on, inside the sandbox.
    pub port: u16,
    /// A path that answers 2xx/3xx once it is ready.
    pub health_path: Option<String>,
    /// How long it may take to be ready.
    pub ready_timeout: Duration,
}

impl PreviewSpec {
    /// From forq.yml's `golden.start`, `golden.port` and
    /// `golden.health_path`; ready within a minute.
    pub fn from_config(config: &Config) -> Result<PreviewSpec, PreviewError> {
        let golden = &config.golden;
        match (&golden.start, golden.port) {
            (Some(start), Some(port)) if !start.trim().is_empty() => Ok(PreviewSpec {
                start: start.clone(),
                port,
                health_path: golden.health_path.clone(),
                ready_timeout: Duration::from_secs(60),
            }),
            _ => Err(PreviewError::NotConfigured),
        }
    }

    /// The same, ready within `timeout`.
    pub fn ready_timeout(mut self, timeout: Duration) -> Self {
        self.ready_timeout = timeout;
        self
    }
}

/// Why a preview could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PreviewError {
    /// forq.yml says nothing of how to start the application.
    #[error("the repository's forq.yml names no preview: set golden.start (the command that serves the application) and golden.port (where it listens)")]
    NotConfigured,
    /// The run has no patch to preview.
    #[error("run {id} is {state}: only a run with a patch (patch_ready, pr_opened) has a fix to preview")]
    NoPatch {
        /// The run.
        id: String,
        /// Its state.
        state: String,
    },
    /// The sandbox could not be made, or gives no service network.
    #[error("cannot make the preview's sandbox: {0}")]
    Sandbox(String),
    /// The command ended before it was ready.
    #[error("`{start}` ended before it served port {port}: {why}")]
    Exited {
        /// The command.
        start: String,
        /// Its port.
        port: u16,
        /// How it ended, with the end of its output.
        why: String,
    },
    /// It did not become ready in time.
    #[error("`{start}` did not serve port {port}{health} within {secs} s")]
    NotReady {
        /// The command.
        start: String,
        /// Its port.
        port: u16,
        /// ` (health_path …)` when one was given.
        health: String,
        /// The wait.
        secs: u64,
    },
}

/// A running preview. Dropping it stops it.
#[derive(Debug)]
pub struct Preview {
    spec: PreviewSpec,
    net: ServiceNetwork,
    stop: Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
    ended: tokio::sync::watch::Receiver<Option<String>>,
    started: Instant,
    last_used_ms: AtomicU64,
}

impl Preview {
    /// Starts `spec` in `sandbox` (which the preview owns from now on) and
    /// waits until it is ready.
    pub async fn start(
        sandbox: Box<dyn Sandbox>,
        spec: PreviewSpec,
    ) -> Result<Arc<Preview>, PreviewError> {
        let net = match sandbox.service_network().await {
            Ok(net) => net,
            Err(e) => {
                let _ = sandbox.destroy().await;
                return Err(PreviewError::Sandbox(e.to_string()));
            }
        };
        let request = ExecRequest::shell(format!("exec {}", spec.start))
            .service_network(&net)
            .output_cap(64 * 1024);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (ended_tx, ended) = tokio::sync::watch::channel(None);
        tokio::spawn(async move {
            let why = tokio::select! {
                out = sandbox.exec(request) => match out {
                    Ok(out) => {
                        let tail = |s: String| s.lines().rev().take(5).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n");
                        format!("exit {}; {}", out.shell_code(), tail(format!("{}{}", out.stdout_text(), out.stderr_text())))
                    }
                    Err(e) => e.to_string(),
                },
                _ = stopped => "stopped".to_owned(),
            };
            let _ = sandbox.destroy().await;
            let _ = ended_tx.send(Some(why));
        });
        let preview = Arc::new(Preview {
            spec,
            net,
            stop: Mutex::new(Some(stop)),
            ended,
            started: Instant::now(),
            last_used_ms: AtomicU64::new(0),
        });
        preview.ready().await?;
        Ok(preview)
    }

    /// Waits until the port answers (and the health path, when given).
    async fn ready(&self) -> Result<(), PreviewError> {
        let spec = &self.spec;
        let deadline = Instant::now() + spec.ready_timeout;
        while Instant::now() < deadline {
            if let Some(why) = self.ended.borrow().clone() {
                return Err(PreviewError::Exited {
                    start: spec.start.clone(),
                    port: spec.port,
                    why,
                });
            }
            if let Ok(stream) = self.net.connect(spec.port).await {
                match &spec.health_path {
                    None => return Ok(()),
                    Some(path) => {
                        if healthy(stream, path).await {
                            return Ok(());
                        }
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        self.stop();
        Err(PreviewError::NotReady {
            start: spec.start.clone(),
            port: spec.port,
            health: spec
                .health_path
                .as_ref()
                .map(|p| format!(" (health path {p})"))
                .unwrap_or_default(),
            secs: spec.ready_timeout.as_secs(),
        })
    }

    /// A connection to the application (counts as use).
    pub async fn connect(&self) -> std::io::Result<tokio::net::TcpStream> {
        self.touch();
        self.net.connect(self.spec.port).await
    }

    fn touch(&self) {
        self.last_used_ms
            .store(self.started.elapsed().as_millis() as u64, Ordering::Relaxed);
    }

    /// Time since it was last used (or started).
    pub fn idle(&self) -> Duration {
        self.started.elapsed().saturating_sub(Duration::from_millis(
            self.last_used_ms.load(Ordering::Relaxed),
        ))
    }

    /// What it runs.
    pub fn spec(&self) -> &PreviewSpec {
        &self.spec
    }

    /// How it ended, once it has.
    pub fn ended(&self) -> Option<String> {
        self.ended.borrow().clone()
    }

    /// Stops it: the application and its sandbox go.
    pub fn stop(&self) {
        if let Some(stop) = self
            .stop
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
        {
            let _ = stop.send(());
        }
    }

    /// Stops it and waits until its sandbox is gone.
    pub async fn stopped(&self) {
        self.stop();
        let mut ended = self.ended.clone();
        let _ = ended.wait_for(Option::is_some).await;
    }
}

impl Drop for Preview {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Whether `GET path` over `stream` answers 2xx or 3xx.
async fn healthy(mut stream: tokio::net::TcpStream, path: &str) -> bool {
    let ask = format!("GET {path} HTTP/1.0\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    if stream.write_all(ask.as_bytes()).await.is_err() {
        return false;
    }
    let mut head = [0u8; 32];
    let read = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut head)).await;
    let Ok(Ok(n)) = read else { return false };
    let line = String::from_utf8_lossy(&head[..n]);
    let code = line.split_whitespace().nth(1).unwrap_or_default();
    code.starts_with('2') || code.starts_with('3')
}
