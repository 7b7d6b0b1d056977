//! The parts of a run, made once from parsed flags: the model provider
//! and its prices, the sandbox backend, golden options, the repository as
//! a directory, the issue, the run store and settings. Command modules
//! depend on this module (and on `terminal`), never on each other.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use forq_agent::cost::PriceTable;
use forq_agent::provider::{self, Choice, Provider};
use forq_app::config::Config;
use forq_app::store::Store;
use forq_bootstrap::{CloneOptions, GoldenOptions};
use forq_sandbox::{Backend, BackendChoice};

use forq_agent::provider::ApiKey;
use forq_app::pipeline::{Model, Pipeline};
use forq_app::queue;

use crate::cli::{BackendArgs, EngineArgs, GoldenMode, ModelArgs, ProviderName};
use crate::terminal::note;

/// The provider and model the arguments name.
pub(crate) fn open_provider(args: &ModelArgs) -> anyhow::Result<(Arc<dyn Provider>, String)> {
    let choice = match args.provider {
        ProviderName::Auto => Choice::Auto,
        ProviderName::Openai => Choice::OpenAi,
        ProviderName::Anthropic => Choice::Anthropic,
        ProviderName::Replay => Choice::Replay(
            args.replay
                .clone()
                .context("--provider replay plays the recording given with --replay FILE")?,
        ),
        ProviderName::OpenaiCompatible => Choice::Local(
            args.base_url
                .clone()
                .or_else(|| std::env::var("OPENAI_BASE_URL").ok().filter(|u| !u.trim().is_empty()))
                .context("--provider openai-compatible talks to the server at --base-url URL (or OPENAI_BASE_URL)")?,
        ),
        ProviderName::Ollama => Choice::Local(
            args.base_url
                .clone()
                .unwrap_or_else(|| "http://127.0.0.1:11434/v1".to_owned()),
        ),
        ProviderName::Llamacpp => Choice::Local(
            args.base_url
                .clone()
                .unwrap_or_else(|| "http://127.0.0.1:8080/v1".to_owned()),
        ),
    };
    let provider = provider::open(&choice)?;
    let window =
        match args.context_window {
            Some(w) => Some(w),
            None => match std::env::var("FORQ_CONTEXT_WINDOW") {
                Ok(v) if !v.trim().is_empty() => Some(v.trim().parse().with_context(|| {
                    format!("FORQ_CONTEXT_WINDOW={v} is not a number of tokens")
                })?),
                _ => None,
            },
        };
    let provider = match window {
        Some(tokens) => provider::with_context_window(provider, tokens),
        None => provider,
    };
    let model = args
        .model
        .clone()
        .unwrap_or_else(|| provider::default_model(provider.name()));
    Ok((provider, model))
}

pub(crate) fn prices(args: &ModelArgs) -> anyhow::Result<PriceTable> {
    let Some(path) = &args.prices else {
        return Ok(PriceTable::new());
    };
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the price table {}", path.display()))?;
    PriceTable::from_json(&text).with_context(|| {
        format!(
            "the price table {} is not {{\"MODEL\": {{\"input\": USD, \"output\": USD}}}} (per million tokens)",
            path.display()
        )
    })
}

/// A name for a run's directory: seconds since the epoch and the process.
pub(crate) fn run_id() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format!("{secs}-{}", std::process::id())
}

/// The issue `spec` names: a GitHub issue or pull request URL (through
/// forq-app's GitHub client: `GITHUB_API_URL`, `GITHUB_TOKEN`), else a
/// Markdown file.
pub(crate) async fn load_issue(spec: &str) -> anyhow::Result<forq_agent::issue::Issue> {
    if spec.starts_with("http://") || spec.starts_with("https://") {
        let found = forq_app::github::Github::from_env()?.issue_at(spec).await?;
        return Ok(forq_agent::issue::Issue {
            title: found.title,
            body: found.body.unwrap_or_default().trim().to_owned(),
            source: found.html_url,
            labels: found.labels.into_iter().map(|l| l.name).collect(),
        });
    }
    Ok(forq_agent::issue::Issue::from_file(std::path::Path::new(
        spec,
    ))?)
}

/// A repository's identity: the URL it was cloned from, else its path.
pub(crate) fn identity(source: &str, path: &Path) -> String {
    if forq_bootstrap::is_git_url(source) {
        source.to_owned()
    } else {
        path.display().to_string()
    }
}

/// The golden options `mode` asks for on `backend` (none with `off`, or on
/// a backend that keeps no goldens).
pub(crate) fn golden_options(
    mode: GoldenMode,
    backend: &dyn Backend,
    identity: &str,
) -> anyhow::Result<Option<GoldenOptions>> {
    if mode == GoldenMode::Off {
        return Ok(None);
    }
    match backend.goldens() {
        Ok(goldens) => Ok(Some(GoldenOptions::new(
            goldens,
            identity,
            mode == GoldenMode::Build,
        ))),
        Err(forq_sandbox::Error::Unsupported { .. }) => Ok(None),
        Err(e) => Err(e).context("cannot open the golden environments"),
    }
}

/// The goldens' disk cap in bytes: `gb` when given, else
/// `FORQ_GOLDEN_MAX_GB`, else 20 GiB.
pub(crate) fn cap_bytes(gb: Option<f64>) -> anyhow::Result<u64> {
    let max_gb = match gb {
        Some(gb) => gb,
        None => match std::env::var("FORQ_GOLDEN_MAX_GB") {
            Ok(v) => v
                .parse()
                .with_context(|| format!("FORQ_GOLDEN_MAX_GB={v:?} is not a number of GiB"))?,
            Err(_) => DEFAULT_MAX_GB,
        },
    };
    if max_gb.is_nan() || max_gb < 0.0 {
        bail_input!("a golden cap of {max_gb} GiB is not a size: give a number of GiB, 0 or more");
    }
    Ok((max_gb * (1u64 << 30) as f64) as u64)
}

/// The default cap of `forq golden gc`, in GiB.
const DEFAULT_MAX_GB: f64 = 20.0;

/// A temporary clone, removed when dropped.
pub(crate) struct Workspace {
    pub(crate) path: PathBuf,
    _temp: Option<tempfile::TempDir>,
}

/// `source` as a directory: itself, or a shallow clone of a git URL (into
/// `into`, kept, or a temporary directory).
pub(crate) async fn source_workspace(
    source: &str,
    into: Option<&std::path::Path>,
    clone_timeout: u64,
    clone_max_mb: u64,
    quiet: bool,
) -> anyhow::Result<Workspace> {
    if !forq_bootstrap::is_git_url(source) {
        let path = PathBuf::from(source)
            .canonicalize()
            .with_context(|| format!("the repository {source} does not exist"))?;
        return Ok(Workspace { path, _temp: None });
    }
    let (dest, temp) = match into {
        Some(dir) => (dir.to_path_buf(), None),
        None => {
            let temp = tempfile::Builder::new()
                .prefix("forq-clone-")
                .tempdir()
                .context("cannot make a temporary directory to clone into")?;
            (temp.path().join("repo"), Some(temp))
        }
    };
    let options = CloneOptions::default()
        .timeout(Duration::from_secs(clone_timeout))
        .max_bytes(clone_max_mb << 20);
    if !quiet {
        note(&format!("clone: {source} (shallow)"));
    }
    forq_bootstrap::clone_shallow(source, &dest, &options).await?;
    if !quiet && temp.is_none() {
        note(&format!("clone: kept in {}", dest.display()));
    }
    let path = dest.canonicalize()?;
    Ok(Workspace { path, _temp: temp })
}

/// Opens the chosen backend, saying in the log which one `auto` picked and
/// why the others were passed over.
pub(crate) async fn open_backend(choice: BackendChoice) -> anyhow::Result<Arc<dyn Backend>> {
    let selected = forq_sandbox::open_backend(choice).await?;
    for reason in &selected.passed_over {
        tracing::info!("passed over: {reason}");
    }
    tracing::info!(backend = %selected.backend.kind(), "using backend");
    if selected.backend.kind() == forq_sandbox::BackendKind::Host {
        tracing::warn!(
            "the host backend isolates nothing: the repository's code and the model's commands \
             run as you, with your files, your network and no caps"
        );
    }
    Ok(selected.backend)
}

/// The run store: `url` (PostgreSQL, shared by machines) when given, else
/// `STATE/forq.db`.
pub(crate) fn open_store(state: &Path, url: Option<&str>) -> anyhow::Result<Arc<Store>> {
    forq_sandbox::refuse_link(state)?;
    let store = match url.filter(|u| !u.is_empty()) {
        Some(url) => Store::connect(url)?,
        None => Store::open(&state.join("forq.db"))?,
    };
    Ok(Arc::new(store))
}

/// The owner's model, when one is configured (none is not an error: triage
/// is skipped and the mutate brancher needs none).
pub(crate) fn owner_model(args: &ModelArgs) -> anyhow::Result<Option<forq_app::pipeline::Model>> {
    match open_provider(args) {
        Ok((provider, name)) => Ok(Some(forq_app::pipeline::Model {
            provider,
            name,
            prices: prices(args)?,
        })),
        Err(e) if args.provider == crate::cli::ProviderName::Auto => {
            tracing::info!("no model: {e:#}");
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

pub(crate) fn load_config(file: Option<&PathBuf>) -> anyhow::Result<Option<Config>> {
    file.map(|f| Config::from_file(f).map_err(anyhow::Error::from))
        .transpose()
}

/// The repository directory given, canonical.
pub(crate) fn repo_dir(repo: &Path) -> anyhow::Result<PathBuf> {
    repo.canonicalize().with_context(|| {
        format!(
            "the repository {} does not exist; pass --repo DIR",
            repo.display()
        )
    })
}

/// The contributor's model: the owner's provider kind with the key in
/// environment variable `var`.
pub(crate) fn contributor_model(
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
pub(crate) async fn connect_engines(hosts: &[String]) -> anyhow::Result<Vec<queue::Engine>> {
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
pub(crate) async fn connect_engines(hosts: &[String]) -> anyhow::Result<Vec<queue::Engine>> {
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
pub(crate) async fn pipeline_on(
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
    let pipeline = Pipeline::new(store, state_dir, default)
        .backend_from_config(from_config)
        .github(forq_app::github::Github::from_env()?);
    Ok((pipeline, engines))
}

/// The pipeline's golden policy for `--golden`.
pub(crate) fn golden_policy(mode: crate::cli::GoldenMode) -> forq_app::pipeline::GoldenPolicy {
    match mode {
        crate::cli::GoldenMode::Use => forq_app::pipeline::GoldenPolicy::Use,
        crate::cli::GoldenMode::Build => forq_app::pipeline::GoldenPolicy::Build,
        crate::cli::GoldenMode::Off => forq_app::pipeline::GoldenPolicy::Off,
    }
}

/// ^C or SIGTERM.
pub(crate) async fn shutdown_signal() {
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
