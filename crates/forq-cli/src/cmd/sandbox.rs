//! `forq sandbox run` and `forq sandbox gc`.

use crate::exit::Exit;
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use forq_sandbox::{ExecRequest, Limits, RootFs, SandboxSpec, StreamKind};

use crate::cli::{GcArgs, RunArgs};

pub(crate) async fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let backend = crate::parts::open_backend(args.backend.backend).await?;
    let repo = args.repo.canonicalize().with_context(|| {
        format!(
            "the repository {} does not exist; pass --repo DIR",
            args.repo.display()
        )
    })?;
    let spec = spec_of(&args, &repo);
    let terminal = if args.tty {
        Some(Terminal::open()?)
    } else {
        None
    };
    let sandbox = backend.create(&spec).await?;

    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut req = ExecRequest::new(args.command.clone()).stream(tx);
    if let Some(t) = &terminal {
        req = req.terminal(t.pty());
    }
    req.timeout = args.timeout.map(Duration::from_secs_f64);
    req.idle_timeout = args.idle_timeout.map(Duration::from_secs_f64);
    let printer = tokio::spawn(async move {
        while let Some(chunk) = rx.recv().await {
            // A closed stdout (a pipe into `head`) must not stop the command.
            let _ = match chunk.stream {
                StreamKind::Stdout => std::io::stdout().lock().write_all(&chunk.bytes),
                StreamKind::Stderr => std::io::stderr().lock().write_all(&chunk.bytes),
            };
        }
        let _ = std::io::stdout().flush();
    });

    // Registered before the command starts, so an early Ctrl-C is caught.
    let mut interrupt = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
    let outcome = tokio::select! {
        outcome = sandbox.exec(req) => outcome,
        _ = interrupt.recv() => {
            sandbox.destroy().await?;
            return Ok(Exit::Cancelled.into());
        }
    };
    let _ = printer.await;
    if let Some(t) = terminal {
        t.finish();
    }
    let code = match outcome {
        Ok(outcome) => {
            warn_if_killed(&outcome);
            if args.diff {
                let diff = sandbox.diff().await?;
                let _ = std::io::stderr().lock().write_all(diff.patch.as_bytes());
            }
            if outcome.timed_out || outcome.idle_timed_out {
                124
            } else {
                outcome.shell_code()
            }
        }
        Err(forq_sandbox::Error::Spawn { program, source }) => {
            let code = if source.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            };
            let _ = writeln!(std::io::stderr(), "forq: {program}: {source}");
            code
        }
        Err(e) => {
            sandbox.destroy().await?;
            return Err(e.into());
        }
    };
    sandbox.destroy().await?;
    Ok(ExitCode::from(
        u8::try_from(code.clamp(0, 255)).unwrap_or(255),
    ))
}

/// The sandbox the flags describe.
fn spec_of(args: &RunArgs, repo: &std::path::Path) -> SandboxSpec {
    let mut limits = Limits::default();
    limits.memory_bytes = args.memory;
    limits.pids = args.pids;
    limits.cpus = args.cpus;
    let mut spec = SandboxSpec::new(repo).limits(limits).network(args.network);
    if let Some(rootfs) = &args.rootfs {
        spec = spec.rootfs(RootFs::Dir(rootfs.clone()));
    }
    if let Some(image) = &args.backend.image {
        spec = spec.image(image.clone());
    }
    if args.network == forq_sandbox::Network::Proxy {
        spec = spec.egress(forq_sandbox::EgressAllow::from_env());
    }
    spec
}

/// Says why the command was stopped, when it was.
fn warn_if_killed(outcome: &forq_sandbox::ExecOutcome) {
    if outcome.timed_out || outcome.idle_timed_out {
        tracing::warn!(
            "the command was killed after {} ms ({})",
            outcome.duration_ms,
            if outcome.timed_out {
                "timeout"
            } else {
                "idle timeout"
            }
        );
    }
    if outcome.killed_for_memory {
        tracing::warn!("the command was killed for exceeding its memory cap");
    }
    if outcome.killed_for_disk {
        tracing::warn!("the command was stopped for filling its disk cap");
    }
}

pub(crate) async fn gc(args: GcArgs) -> anyhow::Result<ExitCode> {
    let state = forq_sandbox::default_state_dir();
    let report = forq_sandbox::gc(&state)?;
    #[cfg(feature = "docker")]
    let containers = forq_sandbox::DockerBackend::gc().await.unwrap_or_default();
    #[cfg(not(feature = "docker"))]
    let containers: Vec<String> = Vec::new();
    let mut out = std::io::stdout().lock();
    if args.json {
        let value = serde_json::json!({
            "state_dir": state,
            "unmounted": report.unmounted,
            "removed": report.removed,
            "containers_removed": containers,
        });
        writeln!(out, "{value}")?;
    } else {
        writeln!(
            out,
            "{} mounts detached, {} directories removed, {} containers removed under {}",
            report.unmounted.len(),
            report.removed.len(),
            containers.len(),
            state.display()
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `--tty`: a pseudo-terminal of the command's own, relayed to this
/// process's terminal (put in raw mode meanwhile); the window size follows.
struct Terminal {
    pty: Option<forq_sandbox::Pty>,
    raw: Option<forq_sandbox::RawMode>,
    /// Told when the command's output has all been copied out.
    output_done: std::sync::mpsc::Receiver<()>,
    resize: tokio::task::JoinHandle<()>,
}

impl Terminal {
    fn open() -> anyhow::Result<Terminal> {
        use std::io::IsTerminal;
        let stdin = std::io::stdin();
        if !stdin.is_terminal() {
            bail_input!("--tty needs a terminal on standard input; run without it");
        }
        let pty = forq_sandbox::Pty::open(Some(&stdin))?;
        let raw = forq_sandbox::RawMode::enter(&stdin)?;
        let mut to_pty = pty.master.try_clone()?;
        let mut from_pty = pty.master.try_clone()?;
        // Plain threads: the input one blocks on this terminal until the
        // process ends, which must not hold the runtime up.
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut std::io::stdin().lock(), &mut to_pty);
        });
        let (done, output_done) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            // Ends with EIO once no one holds the command's side.
            // Not holding the lock: the printer of captured output flushes too.
            let _ = std::io::copy(&mut from_pty, &mut std::io::stdout());
            let _ = std::io::stdout().flush();
            let _ = done.send(());
        });
        let resize = {
            let master = pty.master.try_clone()?;
            tokio::spawn(async move {
                let Ok(mut winch) =
                    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::window_change())
                else {
                    return;
                };
                while winch.recv().await.is_some() {
                    forq_sandbox::Pty::resize_like(&master, &std::io::stdin());
                }
            })
        };
        Ok(Terminal {
            pty: Some(pty),
            raw: Some(raw),
            output_done,
            resize,
        })
    }

    fn pty(&self) -> &forq_sandbox::Pty {
        self.pty.as_ref().expect("held until finish")
    }

    /// After the command: lets go of its side, copies out what it left,
    /// and gives this terminal its settings back.
    fn finish(mut self) {
        self.resize.abort();
        self.pty = None;
        let _ = self.output_done.recv_timeout(Duration::from_secs(2));
        self.raw = None;
    }
}
