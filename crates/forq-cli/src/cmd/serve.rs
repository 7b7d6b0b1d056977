//! `forq serve`: the control plane over HTTP on loopback (or where told),
//! with its token, sources, webhooks and golden sync; and `forq serve
//! bench`, which measures it from outside.

use crate::parts::{open_store, owner_model};
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use forq_app::github::Github;
use forq_app::pipeline::Pipeline;

use crate::parts::golden_policy;

/// `forq serve bench`: a `forq serve` child over a fresh store, measured
/// by forq_server::bench.
async fn serve_bench(json: bool) -> anyhow::Result<ExitCode> {
    use tokio::io::AsyncBufReadExt;
    let state = tempfile::Builder::new()
        .prefix("forq-serve-bench-")
        .tempdir()?;
    let me = std::env::current_exe()?;
    let mut child = forq_sandbox::host_command(&me)
        .args([
            "serve",
            "--bind",
            "127.0.0.1:0",
            "--backend",
            "host",
            // Its own child on loopback, over a throwaway store, for the
            // length of the bench: the token's check is not what it times.
            "--no-token",
            "--state",
        ])
        .arg(state.path())
        .env_remove("FORQ_SERVE_TOKEN")
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    let pid = child.id().context("the server has no pid")?;
    let mut lines = tokio::io::BufReader::new(child.stderr.take().context("no stderr")?).lines();
    let url = loop {
        let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
            .await
            .context("forq serve did not say where it listens")??
            .context("forq serve ended before it listened")?;
        if let Some((_, rest)) = line.split_once("listening on ") {
            break rest
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .to_owned();
        }
    };
    // The child's later lines are not read: keep its pipe from filling.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let report = forq_server::bench::run(
        &url,
        pid,
        &state.path().join("forq.db"),
        forq_server::bench::BenchOptions::default(),
    )
    .await
    .map_err(|e| anyhow::anyhow!("{e}"));
    let _ = child.kill().await;
    let r = report?;
    if json {
        crate::terminal::print_json(&r)?;
    } else {
        let mut out = std::io::stdout().lock();
        writeln!(
            out,
            "list of {} runs       p50 {:>7.2} ms   p95 {:>7.2} ms",
            r.list_runs, r.list_p50_ms, r.list_p95_ms
        )?;
        writeln!(
            out,
            "event latency ({} runs, {} events)   p50 {:>7.2} ms   p95 {:>7.2} ms",
            r.in_flight, r.events, r.latency_p50_ms, r.latency_p95_ms
        )?;
        writeln!(
            out,
            "memory   {:.1} MiB idle, {:.1} MiB with {} streams open",
            r.rss_before_kib as f64 / 1024.0,
            r.rss_streams_kib as f64 / 1024.0,
            r.streams
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `forq serve`.
pub(crate) async fn serve(args: crate::cli::ServeArgs) -> anyhow::Result<ExitCode> {
    if let Some(crate::cli::ServeCommand::Bench(bench)) = &args.command {
        return serve_bench(bench.json).await;
    }
    std::fs::create_dir_all(&args.state.state)
        .with_context(|| format!("cannot create {}", args.state.state.display()))?;
    let state_dir = args.state.state.canonicalize()?;
    let store = open_store(&state_dir, args.state.store.as_deref())?;
    let backend = crate::parts::open_backend(args.backend.backend).await?;
    let from_config = matches!(args.backend.backend, forq_sandbox::BackendChoice::Auto);
    let github = Github::from_env()?;
    let pipeline = Pipeline::new(store.clone(), &state_dir, backend.clone())
        .github(github.clone())
        .backend_from_config(from_config)
        .model(owner_model(&args.model)?)
        .golden(golden_policy(args.golden.golden));
    let mut actions = forq_server::Actions::new(pipeline);
    actions.jobs = args.jobs;
    actions.per_repo = args.per_repo;
    actions.drive = !args.enqueue_only;
    let mut control = forq_server::Control::new(store)
        .actions(actions)
        .github(github);
    for spec in &args.sources {
        control = control.source(serve_source(spec)?);
    }
    if let Ok(goldens) = backend.goldens() {
        control = control.goldens(goldens);
        let for_sync = backend.clone();
        control = control.golden_sync(std::sync::Arc::new(move |url: String| {
            let backend = for_sync.clone();
            Box::pin(async move {
                forq_bootstrap::sync_golden(&*backend, &url)
                    .await
                    .map(|_| ())
                    .map_err(|e| format!("{:#}", anyhow::Error::from(e)))
            })
        }));
    }
    if let Ok(secret) = std::env::var(&args.webhook_secret_env) {
        control = control.webhook_secret(secret);
    }
    control = control.webhook_authors(args.webhook_authors.iter().map(|a| a.trim()));
    let mut options = forq_server::ServerOptions::default();
    options.bind = args.bind;
    let from_env = std::env::var(&args.token_env)
        .ok()
        .filter(|t| !t.is_empty());
    let token_file = state_dir.join("serve-token");
    options.token = match (from_env, args.no_token) {
        (Some(t), _) => Some(t),
        (None, true) => None,
        (None, false) => Some(serve_token(&token_file)?),
    };
    options.hosts = args.hosts.clone();
    options.preview_idle = Duration::from_secs(args.preview_idle);
    let previews = control.previews();
    // Said where the operator sees it when forq made it (one from the
    // environment is the operator's own).
    let made_token = options
        .token
        .clone()
        .filter(|_| std::env::var(&args.token_env).is_err());
    let served = forq_server::serve(control, options, |addr| {
        crate::terminal::note(&format!(
            "forq serve: listening on http://{addr} (dashboard: /, API: /openapi.json)"
        ));
        if let Some(token) = &made_token {
            crate::terminal::note(&format!(
                "forq serve: open http://{addr}/#token={token} (the API takes `Authorization: Bearer` \
                 with the token in {}; --no-token serves without one)",
                token_file.display()
            ));
        }
    });
    // Previews go with the server: on ^C or SIGTERM their sandboxes are
    // stopped before forq exits.
    let served = tokio::select! {
        r = served => r,
        () = crate::parts::shutdown_signal() => {
            previews.stop_all().await;
            Ok(())
        }
    };
    served.map_err(|e| match e {
        forq_server::ServerError::TokenRequired { bind } => crate::failures::input(format!(
            "{bind} is reachable from other machines: set a token in {} (every request then sends `Authorization: Bearer <token>`), or bind to 127.0.0.1",
            args.token_env
        )),
        e => e.into(),
    })?;
    Ok(ExitCode::SUCCESS)
}

/// The server's own token, made once and kept in `path` (0600, never
/// through a link), so the operator's bookmark and scripts keep working
/// across restarts.
fn serve_token(path: &Path) -> anyhow::Result<String> {
    use std::io::{Read as _, Write as _};
    use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
    let open = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path);
    match open {
        Ok(mut f) => {
            use std::os::unix::fs::MetadataExt as _;
            let meta = f.metadata()?;
            // Another user's file: they wrote the token, so they know it.
            // This process's user: the owner of its own /proc entry.
            let me = std::fs::metadata("/proc/self")?.uid();
            if meta.uid() != me || !meta.is_file() {
                bail_input!(
                    "{} is not a file of this user's (owner uid {}, forq runs as {me}): whoever \
                     made it knows the token; remove it and forq serve makes a new one",
                    path.display(),
                    meta.uid()
                );
            }
            let mode = meta.permissions().mode();
            if mode & 0o077 != 0 {
                f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
            }
            let mut token = String::new();
            f.read_to_string(&mut token)
                .with_context(|| format!("cannot read the token in {}", path.display()))?;
            let token = token.trim().to_owned();
            anyhow::ensure!(
                !token.is_empty(),
                "{} is empty: remove it and forq serve makes a new token",
                path.display()
            );
            Ok(token)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let mut bytes = [0u8; 24];
            std::fs::File::open("/dev/urandom")
                .and_then(|mut r| r.read_exact(&mut bytes))
                .context("cannot read /dev/urandom for a token")?;
            let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(path)
                .with_context(|| format!("cannot write the token to {}", path.display()))?;
            writeln!(f, "{token}")?;
            Ok(token)
        }
        Err(e) => Err(e).with_context(|| {
            format!(
                "cannot read the token in {} (a link is refused: remove it)",
                path.display()
            )
        }),
    }
}

/// A `forq serve --source` SPEC: `DIR`, `DIR=REPO`, or a GitHub
/// repository.
fn serve_source(spec: &str) -> anyhow::Result<forq_app::queue::Source> {
    use forq_app::queue::Source;
    let absolute = |p: &str| {
        std::fs::canonicalize(p).with_context(|| format!("--source {spec}: cannot read {p}"))
    };
    if let Some((dir, repo)) = spec.split_once('=') {
        let repo = if Path::new(repo).exists() {
            absolute(repo)?.display().to_string()
        } else {
            repo.to_owned()
        };
        return Ok(Source::Local {
            dir: absolute(dir)?,
            repo: Some(repo),
        });
    }
    if Path::new(spec).is_dir() {
        return Ok(Source::Local {
            dir: absolute(spec)?,
            repo: None,
        });
    }
    Source::github(spec).map_err(|e| {
        crate::failures::input(format!("--source {spec}: not a directory, and {e}; give a directory of Markdown issues, DIR=REPO, or a GitHub repository"))
    })
}
