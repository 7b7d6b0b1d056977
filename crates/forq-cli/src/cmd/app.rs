//! The application commands: `forq config`, `forq queue`, `forq runs`,
//! `forq files`, `forq push`. The work is forq-app's; this maps arguments
//! in and results out.

use crate::exit::Exit;
use crate::parts::{load_config, open_store, owner_model};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use forq_agent::provider::{self, ApiKey};
use forq_app::config::Config;
use forq_app::git;
use forq_app::github::Github;
use forq_app::pipeline::{Event, Model, Pipeline, RunError};
use forq_app::queue::{self, Selection, Source};
use forq_app::store::{Action, ContextFile, Run, State, Store};
use forq_app::Observer;
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use serde_json::json;

use crate::cli::{
    ActionName, BackendArgs, ConfigCheckArgs, ConfigCommand, EngineArgs, FilesArgs, ModelArgs,
    PushArgs, QueueArgs, ResumeArgs, RunsArgs, RunsCommand,
};
use crate::parts::prices;
use crate::terminal::note;

pub(crate) fn config(cmd: ConfigCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        ConfigCommand::Schema => {
            let mut out = std::io::stdout().lock();
            writeln!(out, "{}", serde_json::to_string_pretty(&Config::schema())?)?;
            Ok(ExitCode::SUCCESS)
        }
        ConfigCommand::Check(a) => config_check(a),
    }
}

fn config_check(args: ConfigCheckArgs) -> anyhow::Result<ExitCode> {
    let loaded = match &args.file {
        Some(f) => Config::from_file(f).map(|c| (c, Some(f.clone()))),
        None => Config::load(&args.repo),
    };
    let mut out = std::io::stdout().lock();
    match loaded {
        Ok((config, file)) => {
            let ignored: Vec<serde_json::Value> = config
                .loosening()
                .into_iter()
                .map(|(key, why)| json!({"key": key, "why": why}))
                .collect();
            if args.json {
                writeln!(
                    out,
                    "{}",
                    json!({"ok": true, "file": file, "config": config, "caps": config.gate_options().limits, "ignored_in_a_repository": ignored})
                )?;
            } else {
                for (key, why) in config.loosening() {
                    note(&format!(
                        "warning: {key}: ignored when this is a repository's forq.yml: {why}"
                    ));
                }
                match &file {
                    Some(f) => writeln!(out, "{}: ok", f.display())?,
                    None => writeln!(
                        out,
                        "no forq.yml in {}: every setting has its default",
                        args.repo.display()
                    )?,
                }
                write!(out, "{}", serde_yaml_ng::to_string(&config)?)?;
                let caps = config.gate_options().limits;
                writeln!(
                    out,
                    "# sandbox caps in effect: memory {} MiB, pids {}, cpus {}, disk {} MiB",
                    caps.memory_bytes.unwrap_or_default() >> 20,
                    caps.pids
                        .map_or_else(|| "no cap".to_owned(), |p| p.to_string()),
                    caps.cpus
                        .map_or_else(|| "no cap".to_owned(), |c| c.to_string()),
                    caps.disk_bytes.unwrap_or_default() >> 20,
                )?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            if args.json {
                writeln!(out, "{}", json!({"ok": false, "error": e.to_string()}))?;
            } else {
                note(&format!("forq: {e}"));
            }
            Ok(Exit::NotAchieved.into())
        }
    }
}

/// The contributor's model: the owner's provider kind with the key in
/// environment variable `var`.
fn contributor_model(
    var: Option<&str>,
    owner: Option<&Model>,
    args: &ModelArgs,
) -> anyhow::Result<Option<Model>> {
    let Some(var) = var else { return Ok(None) };
    let key = std::env::var(var)
        .ok()
        .filter(|k| !k.trim().is_empty())
        .with_context(|| format!("--contributor-key-env {var}: the variable is not set"))?;
    let kind = owner.map_or("openai", |m| m.provider.name());
    let provider = provider::with_key(kind, ApiKey::new(key))?;
    let name = args
        .model
        .clone()
        .unwrap_or_else(|| provider::default_model(provider.name()));
    Ok(Some(Model {
        provider,
        name,
        prices: prices(args)?,
    }))
}

/// The engines named by --docker-host, each connected (and so checked).
#[cfg(feature = "docker")]
async fn connect_engines(hosts: &[String]) -> anyhow::Result<Vec<queue::Engine>> {
    use forq_sandbox::{DockerBackend, DockerOptions};
    let mut out = Vec::new();
    for host in hosts {
        let mut options = DockerOptions::default();
        options.host = Some(host.clone());
        let backend = DockerBackend::connect(options)
            .await
            .with_context(|| format!("--docker-host {host}"))?;
        out.push(queue::Engine {
            name: host.clone(),
            backend: Arc::new(backend),
        });
    }
    Ok(out)
}

#[cfg(not(feature = "docker"))]
async fn connect_engines(hosts: &[String]) -> anyhow::Result<Vec<queue::Engine>> {
    match hosts.first() {
        Some(host) => {
            bail_input!("--docker-host {host}: this forq was built without its docker feature")
        }
        None => Ok(Vec::new()),
    }
}

/// A pipeline on the command line's backend, and the engines to spread
/// runs over: the --docker-host engines when given (the first is the
/// pipeline's), else the --backend choice alone. A backend chosen on the
/// command line holds for every run; `auto` lets each repository's
/// forq.yml choose.
async fn pipeline_on(
    store: Arc<Store>,
    state_dir: &Path,
    backend: &BackendArgs,
    hosts: &EngineArgs,
) -> anyhow::Result<(Pipeline, Vec<queue::Engine>)> {
    let engines = connect_engines(&hosts.docker_host).await?;
    let from_config =
        matches!(backend.backend, forq_sandbox::BackendChoice::Auto) && engines.is_empty();
    let default = match engines.first() {
        Some(e) => e.backend.clone(),
        None => crate::parts::open_backend(backend.backend).await?,
    };
    let pipeline = Pipeline::new(store, state_dir, default).backend_from_config(from_config);
    Ok((pipeline, engines))
}

/// Each run as it ended: one that could not be executed is said on
/// stderr and shown as the store has it.
fn as_ended(
    store: &Store,
    ended: Vec<Result<Run, RunError>>,
    runs: &[Run],
) -> anyhow::Result<Vec<Run>> {
    let mut finished = Vec::new();
    for (result, run) in ended.into_iter().zip(runs) {
        match result {
            Ok(r) => finished.push(r),
            Err(e) => {
                note(&format!("forq: {e}"));
                finished.push(store.get(&run.id)?);
            }
        }
    }
    Ok(finished)
}

/// The runs as JSON or as the table, and the exit code they make.
fn report(runs: &[Run], json_out: bool) -> anyhow::Result<ExitCode> {
    if json_out {
        crate::terminal::print_json(&runs)?;
    } else {
        table(runs)?;
    }
    Ok(exit_for(runs))
}

/// One progress line per run on a terminal (indicatif); plain lines of
/// state changes otherwise.
struct Lines {
    bars: Option<MultiProgress>,
    by_run: Mutex<std::collections::HashMap<String, ProgressBar>>,
    titles: std::collections::HashMap<String, String>,
}

impl Lines {
    fn new(runs: &[Run], quiet: bool) -> Lines {
        let tty = std::io::stderr().is_terminal() && !quiet;
        let bars = tty.then(MultiProgress::new);
        let mut by_run = std::collections::HashMap::new();
        let mut titles = std::collections::HashMap::new();
        for run in runs {
            let title = format!("#{} {}", run.issue.id, short(&run.issue.title, 40));
            if let Some(m) = &bars {
                let bar = m.add(ProgressBar::new_spinner());
                bar.set_style(
                    ProgressStyle::with_template("{spinner} {prefix} {wide_msg} {elapsed}")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
                bar.set_prefix(title.clone());
                bar.set_message(run.state.name());
                bar.enable_steady_tick(Duration::from_millis(200));
                by_run.insert(run.id.clone(), bar);
            }
            titles.insert(run.id.clone(), title);
        }
        Lines {
            bars,
            by_run: Mutex::new(by_run),
            titles,
        }
    }

    fn finish(&self) {
        let bars = self.by_run.lock().unwrap_or_else(|p| p.into_inner());
        for bar in bars.values() {
            bar.finish_and_clear();
        }
        if let Some(m) = &self.bars {
            let _ = m.clear();
        }
    }
}

impl Observer<Event> for Lines {
    fn event(&self, event: &Event) {
        let (run, state, note_text) = (event.run.as_str(), event.state, event.note.as_str());
        let title = self.titles.get(run).cloned().unwrap_or_default();
        let text = if note_text.is_empty() {
            state.name().to_owned()
        } else {
            format!("{} · {}", state.name(), short(note_text, 90))
        };
        if self.bars.is_some() {
            let bars = self.by_run.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(bar) = bars.get(run) {
                bar.set_message(text);
                if state.is_terminal() {
                    bar.finish();
                }
            }
        } else if note_text.is_empty() || state.is_terminal() || state != State::Implementing {
            // Without a terminal, every change but the per-candidate counts.
            note(&format!("{run} {title}: {text}"));
        }
    }
}

fn short(s: &str, n: usize) -> String {
    let line = s.lines().next().unwrap_or("");
    if line.chars().count() <= n {
        line.to_owned()
    } else {
        format!("{}…", line.chars().take(n - 1).collect::<String>())
    }
}

/// Whether to colour stdout.
fn color() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
}

fn paint(state: State, text: &str) -> String {
    if !color() {
        return text.to_owned();
    }
    let code = match state {
        State::PatchReady | State::PrOpened | State::Triaged => "32",
        State::NeedsHuman | State::Aborted | State::CompletedWithFindings | State::NeedsReview => {
            "33"
        }
        State::Failed => "31",
        _ => "0",
    };
    format!("\x1b[{code}m{text}\x1b[0m")
}

/// The exit code for runs that ended so.
fn exit_for(runs: &[Run]) -> ExitCode {
    if runs.iter().any(|r| r.state == State::Failed) {
        Exit::RunsFailed.into()
    } else if runs.iter().any(|r| {
        !matches!(
            r.state,
            State::PatchReady | State::PrOpened | State::Triaged
        )
    }) {
        Exit::NotAchieved.into()
    } else {
        ExitCode::SUCCESS
    }
}

/// The final table: issue, outcome, patch size, cost, time.
fn table(runs: &[Run]) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{:<22} {:<18} {:<12} {:>6} {:>7} {:>7}  DETAIL",
        "RUN", "ISSUE", "OUTCOME", "PATCH", "COST", "TIME"
    )?;
    for r in runs {
        let patch = r.patch_lines.map_or("-".to_owned(), |l| format!("{l}L"));
        let detail = match (&r.branch, r.state) {
            (Some(b), State::PatchReady | State::PrOpened) => b.clone(),
            _ => match r.failure {
                Some(kind) => short(&format!("[{kind}] {}", r.reason), 70),
                None => short(&r.reason, 70),
            },
        };
        writeln!(
            out,
            "{:<22} {:<18} {} {:>6} {:>7} {:>6.1}s  {}",
            r.id,
            short(&format!("#{}", r.issue.id), 18),
            paint(r.state, &format!("{:<12}", r.state.name())),
            patch,
            format!("${:.2}", r.cost_usd),
            r.elapsed_s(),
            detail
        )?;
    }
    Ok(())
}

pub(crate) async fn queue(args: QueueArgs) -> anyhow::Result<ExitCode> {
    let action = match args.action {
        ActionName::Auto => Action::Auto,
        ActionName::Triage => Action::Triage,
        ActionName::Fix => Action::Fix,
    };
    let mut context = Vec::new();
    for spec in &args.context {
        let (src, dest) = match spec.split_once(':') {
            Some((s, d)) => (s.to_owned(), d.to_owned()),
            None => {
                let name = Path::new(spec)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                (spec.clone(), name)
            }
        };
        forq_app::seed::context_path(Path::new("/"), &dest)?;
        let source = Path::new(&src)
            .canonicalize()
            .with_context(|| format!("--context {spec}: {src} does not exist"))?;
        context.push(ContextFile {
            source: source.display().to_string(),
            dest,
        });
    }
    let source = Source::from_request(args.issues.clone(), args.text.clone(), args.repo.clone())
        .map_err(|e| match e {
            queue::QueueError::NoIssues { repo: Some(repo) } => crate::failures::input(format!(
                "{repo} is a directory: name its issues with --issues DIR (Markdown files) or --text TEXT"
            )),
            queue::QueueError::NoIssues { repo: None } => crate::failures::input(
                "name the issues: --issues DIR (Markdown), --repo https://github.com/OWNER/REPO, or --text TEXT --repo DIR".to_owned()
            ),
            e => e.into(),
        })?;
    let selection = Selection {
        label: args.label.clone(),
        limit: args.limit,
        action,
        context,
    };
    let github = Github::from_env();
    let new = queue::select(&source, &selection, &github).await?;
    if new.is_empty() {
        note("forq: no issue matched");
        return Ok(ExitCode::SUCCESS);
    }
    std::fs::create_dir_all(&args.state.state)
        .with_context(|| format!("cannot create {}", args.state.state.display()))?;
    let state_dir = args.state.state.canonicalize()?;
    let store = open_store(&state_dir)?;
    let new = if args.again {
        new
    } else {
        let (fresh, standing) = queue::split_standing(&store, new)?;
        for r in &standing {
            let why = if r.state.is_terminal() {
                format!(
                    "{} on {}",
                    r.state,
                    r.branch.as_deref().unwrap_or("its branch")
                )
            } else {
                format!(
                    "{}, unfinished: `forq runs resume {}` continues it",
                    r.state, r.id
                )
            };
            note(&format!(
                "forq: #{} skipped: run {} is {why} (--again runs it anew)",
                r.issue.id, r.id
            ));
        }
        fresh
    };
    if new.is_empty() {
        note("forq: every issue selected has a run standing for it");
        if args.json {
            crate::terminal::print_json(&Vec::<Run>::new())?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let model = owner_model(&args.model)?;
    let contributor = contributor_model(
        args.contributor_key_env.as_deref(),
        model.as_ref(),
        &args.model,
    )?;
    let (pipeline, engines) =
        pipeline_on(store.clone(), &state_dir, &args.backend, &args.engines).await?;
    let pipeline = pipeline.golden(golden_policy(args.golden.golden));
    let config = load_config(args.config.as_ref())?;
    let golden_cap = config.as_ref().and_then(|c| c.sandbox.golden_max_gb);
    // A GitHub repository's forq.yml, read before it is cloned: triage,
    // the first phase, follows it (who pays, whether to triage).
    let known = match &config {
        Some(_) => None,
        None => queue::remote_config(&source, &github).await?,
    };
    let evict_on =
        (args.golden.golden == crate::cli::GoldenMode::Build).then(|| pipeline.backend().clone());
    let runs = queue::enqueue(&store, &new)?;
    let lines = Arc::new(Lines::new(&runs, args.json));
    let pipeline = pipeline
        .model(model)
        .contributor(contributor)
        .config(config)
        .observer(lines.clone());
    let pipeline = match known {
        Some((repo, c)) => pipeline.repo_config(&repo, c),
        None => pipeline,
    };
    let ended = queue::run_spread(&pipeline, &engines, &runs, args.jobs, args.per_repo).await;
    lines.finish();
    // Goldens this queue built count against the cap: the least recently
    // used beyond it go.
    if let Some(backend) = evict_on {
        if let Ok(goldens) = backend.goldens() {
            let cap = crate::parts::cap_bytes(golden_cap)?;
            let removed = goldens.evict(&*backend, cap).await?;
            if !removed.is_empty() && !args.json {
                crate::terminal::note(&format!(
                    "golden: removed {} least recently used beyond the cap: {}",
                    removed.len(),
                    removed.join(", ")
                ));
            }
        }
    }
    report(&as_ended(&store, ended, &runs)?, args.json)
}

/// The pipeline's golden policy for `--golden`.
fn golden_policy(mode: crate::cli::GoldenMode) -> forq_app::pipeline::GoldenPolicy {
    match mode {
        crate::cli::GoldenMode::Use => forq_app::pipeline::GoldenPolicy::Use,
        crate::cli::GoldenMode::Build => forq_app::pipeline::GoldenPolicy::Build,
        crate::cli::GoldenMode::Off => forq_app::pipeline::GoldenPolicy::Off,
    }
}

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
    let store = open_store(&state_dir)?;
    let backend = crate::parts::open_backend(args.backend.backend).await?;
    let from_config = matches!(args.backend.backend, forq_sandbox::BackendChoice::Auto);
    let pipeline = Pipeline::new(store.clone(), &state_dir, backend.clone())
        .backend_from_config(from_config)
        .model(owner_model(&args.model)?)
        .golden(golden_policy(args.golden.golden));
    let mut actions = forq_server::Actions::new(pipeline);
    actions.jobs = args.jobs;
    actions.per_repo = args.per_repo;
    let mut control = forq_server::Control::new(store).actions(actions);
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
        () = shutdown_signal() => {
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
            let mode = f.metadata()?.permissions().mode();
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

/// ^C or SIGTERM.
async fn shutdown_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = term => {}
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

pub(crate) async fn runs(args: RunsArgs) -> anyhow::Result<ExitCode> {
    let state_dir = &args.state.state;
    let store = open_store(state_dir)?;
    match args.command {
        None => {
            let runs = match args.outcome.as_deref() {
                None => store.list(args.limit)?,
                Some("interrupted") => {
                    let mut runs = store.interrupted()?;
                    runs.reverse();
                    runs.truncate(args.limit);
                    runs
                }
                Some(name) => {
                    let Some(state) = State::from_name(name) else {
                        bail_input!(
                            "--outcome {name}: not a state; write one of {}, or interrupted",
                            State::names().collect::<Vec<_>>().join(", ")
                        );
                    };
                    let mut runs = store.all()?;
                    runs.retain(|r| r.state == state);
                    runs.truncate(args.limit);
                    runs
                }
            };
            if args.json {
                crate::terminal::print_json(&runs)?;
            } else if runs.is_empty() {
                note(&format!("no runs in {}", state_dir.display()));
            } else {
                table(&runs)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Some(RunsCommand::Show(a)) => {
            let run = store.get(&a.id)?;
            let events = store.events(&run.id, 0)?;
            if args.json {
                crate::terminal::print_json(&json!({"run": run, "events": events}))?;
                return Ok(ExitCode::SUCCESS);
            }
            let mut out = std::io::stdout().lock();
            writeln!(out, "run      {}", run.id)?;
            writeln!(out, "issue    #{} {}", run.issue.id, run.issue.title)?;
            writeln!(out, "source   {}", run.issue.source)?;
            writeln!(out, "repo     {}", run.repo)?;
            writeln!(out, "action   {}", run.action.name())?;
            let live = if run.is_live() { " (running)" } else { "" };
            let stale = if !run.state.is_terminal() && !run.is_live() {
                " (interrupted: `forq runs resume` continues it)"
            } else {
                ""
            };
            writeln!(
                out,
                "state    {}{live}{stale}",
                paint(run.state, run.state.name())
            )?;
            if !run.reason.is_empty() {
                writeln!(out, "reason   {}", run.reason)?;
            }
            if let Some(kind) = run.failure {
                writeln!(out, "failure  {kind}")?;
            }
            if let Some(b) = &run.branch {
                writeln!(out, "branch   {b}")?;
            }
            if let Some(l) = run.patch_lines {
                writeln!(out, "patch    {l} lines")?;
            }
            writeln!(out, "cost     ${:.4}", run.cost_usd)?;
            writeln!(out, "events")?;
            for e in &events {
                writeln!(out, "  {}", event_line(e))?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Some(RunsCommand::Tail(a)) => {
            let id = store.get(&a.id)?.id;
            let mut after = 0;
            loop {
                let events = store.events(&id, after)?;
                {
                    let mut out = std::io::stdout().lock();
                    for e in &events {
                        after = e.seq;
                        if args.json {
                            writeln!(out, "{}", serde_json::to_string(e)?)?;
                        } else {
                            writeln!(out, "{}", event_line(e))?;
                        }
                    }
                    out.flush()?;
                }
                let run = store.get(&id)?;
                if run.state.is_terminal() && store.events(&id, after)?.is_empty() {
                    return Ok(ExitCode::SUCCESS);
                }
                if !run.is_live() && !run.state.is_terminal() {
                    note(&format!(
                        "run {id} is {} and no process works on it: `forq runs resume {id}` continues it",
                        run.state
                    ));
                    return Ok(Exit::NotAchieved.into());
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        }
        Some(RunsCommand::Abort(a)) => {
            let run = store.request_abort(&a.id)?;
            // A live run stops within a moment; wait for it to say so.
            let mut current = run;
            for _ in 0..40 {
                if current.state.is_terminal() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
                current = store.get(&current.id)?;
            }
            if args.json {
                crate::terminal::print_json(&current)?;
            } else {
                writeln!(std::io::stdout().lock(), "{} {}", current.id, current.state)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Some(RunsCommand::Resume(a)) => resume(a, state_dir, store, args.json).await,
        Some(RunsCommand::Approve(a)) => {
            let run = forq_app::review::approve(&store, &a.id)?;
            note(&format!(
                "forq: run {} approved; it goes on from its checkpoint",
                run.id
            ));
            let again = crate::cli::ResumeArgs {
                id: Some(run.id),
                interrupted: false,
                jobs: 1,
                per_repo: 1,
                config: a.config,
                model: a.model,
                backend: a.backend,
                engines: a.engines,
            };
            resume(again, state_dir, store, args.json).await
        }
        Some(RunsCommand::Reject(a)) => {
            let run = forq_app::review::reject(&store, &a.id, &a.reason)?;
            if args.json {
                crate::terminal::print_json(&run)?;
            } else {
                note(&format!(
                    "forq: run {} {}: {}",
                    run.id, run.state, run.reason
                ));
            }
            Ok(ExitCode::SUCCESS)
        }
        Some(RunsCommand::Clean(a)) => {
            let cleaned = forq_app::clean::clean(&store, state_dir, a.patched)?;
            if args.json {
                crate::terminal::print_json(&cleaned)?;
            } else {
                let mut out = std::io::stdout().lock();
                writeln!(
                    out,
                    "removed {} workspace{}, {:.1} MiB",
                    cleaned.runs.len(),
                    if cleaned.runs.len() == 1 { "" } else { "s" },
                    cleaned.bytes as f64 / (1024.0 * 1024.0)
                )?;
                if !cleaned.kept.is_empty() {
                    writeln!(
                        out,
                        "kept {} with a patch not pushed yet (`forq push ID`, or --patched removes them)",
                        cleaned.kept.len()
                    )?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

async fn resume(
    args: ResumeArgs,
    state_dir: &Path,
    store: Arc<Store>,
    json_out: bool,
) -> anyhow::Result<ExitCode> {
    let runs = match &args.id {
        Some(id) => {
            let run = store.get(id)?;
            if run.state.is_terminal() {
                bail_input!(
                    "run {} is {} already: there is nothing to resume",
                    run.id,
                    run.state
                );
            }
            vec![run]
        }
        None => store.interrupted()?,
    };
    if runs.is_empty() {
        note("forq: no interrupted run");
        if json_out {
            crate::terminal::print_json(&runs)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let state_dir = state_dir.canonicalize()?;
    let model = owner_model(&args.model)?;
    let (pipeline, engines) =
        pipeline_on(store.clone(), &state_dir, &args.backend, &args.engines).await?;
    let lines = Arc::new(Lines::new(&runs, json_out));
    let pipeline = pipeline
        .model(model)
        .config(load_config(args.config.as_ref())?)
        .observer(lines.clone());
    if args.id.is_some() {
        // One run asked for by name: its error is the command's, and its
        // JSON the run itself.
        let done = pipeline.execute(&runs[0].id).await;
        lines.finish();
        let done = done?;
        if json_out {
            crate::terminal::print_json(&done)?;
            return Ok(exit_for(std::slice::from_ref(&done)));
        }
        return report(std::slice::from_ref(&done), false);
    }
    let ended = queue::run_spread(&pipeline, &engines, &runs, args.jobs, args.per_repo).await;
    lines.finish();
    report(&as_ended(&store, ended, &runs)?, json_out)
}

fn event_line(e: &forq_app::store::Event) -> String {
    let secs = (e.at_ms / 1000) % 86_400;
    let at = format!(
        "{:02}:{:02}:{:02}",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    );
    let d = &e.data;
    let what = match e.kind.as_str() {
        "state" => format!(
            "{} → {}{}",
            d["from"].as_str().unwrap_or(""),
            d["to"].as_str().unwrap_or(""),
            d["reason"]
                .as_str()
                .filter(|r| !r.is_empty())
                .map(|r| format!(" ({r})"))
                .unwrap_or_default()
        ),
        "node" => format!(
            "node {} {}: {} ({} lines, {} ms)",
            d["id"],
            d["status"].as_str().unwrap_or(""),
            d["hypothesis"].as_str().unwrap_or(""),
            d["diff_lines"],
            d["eval_ms"]
        ),
        "checkpoint" => format!("checkpoint {}", d["phase"].as_str().unwrap_or("")),
        "note" => d["text"].as_str().unwrap_or("").to_owned(),
        _ => d.to_string(),
    };
    format!("{at} {:>4} {:<10} {what}", e.seq, e.kind)
}

/// The run's workspace, checked to exist.
fn workspace_of(state_dir: &Path, run: &Run) -> anyhow::Result<PathBuf> {
    let ws = forq_app::clean::workspace_path(state_dir, &run.id);
    if ws.is_dir() {
        return Ok(ws);
    }
    if run.state.is_terminal() {
        bail_input!(
            "run {} ({}) has no workspace: `forq runs clean` removed it, or the run ended before it was seeded",
            run.id,
            run.state
        );
    }
    bail_input!(
        "run {} has no workspace yet (it is {}): it is made when the run is provisioned",
        run.id,
        run.state
    )
}

pub(crate) fn files(args: FilesArgs) -> anyhow::Result<ExitCode> {
    let store = open_store(&args.state.state)?;
    let run = store.get(&args.id)?;
    let ws = workspace_of(&args.state.state, &run)?.canonicalize()?;
    let paths: Vec<PathBuf> = forq_app::clean::workspace_files(&args.state.state, &run.id)
        .unwrap_or_default()
        .into_iter()
        .map(|p| if args.abs { ws.join(p) } else { p })
        .collect();
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(
            out,
            "{}",
            json!({"run": run.id, "workspace": ws, "files": paths})
        )?;
    } else if args.plain || !std::io::stdout().is_terminal() {
        for p in &paths {
            writeln!(out, "{}", p.display())?;
        }
    } else {
        writeln!(
            out,
            "{} files in {} (run {}):",
            paths.len(),
            ws.display(),
            run.id
        )?;
        for p in &paths {
            writeln!(out, "  {}", p.display())?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) async fn push(args: PushArgs) -> anyhow::Result<ExitCode> {
    use forq_app::publish::{self, PublishError, PushOptions};
    let store = open_store(&args.state.state)?;
    let id = store.get(&args.id)?.id;
    let mut options = PushOptions::new().pull_request(args.pr);
    options.remote = args.remote.clone();
    // The operator's own command line may name a repository on this machine.
    options.local_paths = true;
    options.github_repo = args.github.clone();
    options.base = args.base.clone();
    let pushed = match publish::push(
        &store,
        &args.state.state,
        &Github::from_env(),
        &id,
        &options,
    )
    .await
    {
        Ok(p) => p,
        Err(PublishError::Git(e @ git::GitError::Rejected { .. })) => {
            note(&format!("forq: {e}"));
            return Ok(Exit::NotAchieved.into());
        }
        Err(PublishError::NoOrigin) => bail_input!(
            "the run's workspace was copied, not cloned, so it has no origin: name where to push with --remote URL"
        ),
        Err(PublishError::NoGithubRepo) => {
            bail_input!("--pr: name the GitHub repository with --github OWNER/REPO")
        }
        Err(e) => return Err(e.into()),
    };
    if let Some(why) = &pushed.comment_failed {
        note(&format!(
            "forq: the pull request is open, but commenting on the issue failed: {why}"
        ));
    }
    let (branch, remote, commit) = (&pushed.branch, &pushed.remote, &pushed.commit);
    let result = json!(pushed);
    if args.json {
        crate::terminal::print_json(&result)?;
    } else {
        let mut out = std::io::stdout().lock();
        writeln!(
            out,
            "pushed {branch} ({}) to {remote}",
            &commit[..12.min(commit.len())]
        )?;
        if let Some(url) = result["pull_request"]["html_url"].as_str() {
            writeln!(out, "pull request: {url}")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
