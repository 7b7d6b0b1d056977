//! `forq bootstrap`: the bootstrap gate on a repository (a directory, or a
//! git URL cloned shallow first).

use crate::exit::Exit;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use forq_bootstrap::{CloneOptions, Event, GateOptions, Observer, Phase};

use crate::cli::BootstrapArgs;

/// Progress on stderr, one line per step, so stdout holds the result alone.
/// The gate and the provisioning after it each look for a golden; why
/// none applies is said once.
#[derive(Default)]
pub(crate) struct Lines {
    skipped: std::sync::Mutex<Option<String>>,
}

impl Observer<Event> for Lines {
    fn event(&self, event: &Event) {
        let line = match event {
            Event::Detected { stacks } if stacks.is_empty() => {
                "detect: no stack matched".to_owned()
            }
            Event::Detected { stacks } => format!(
                "detect: {}",
                stacks
                    .iter()
                    .map(|s| format!("{} ({})", s.name(), s.marker))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Event::Cached { record } => match record.stacks.iter().find(|s| s.name == "agentic") {
                Some(agentic) => format!(
                    "cache hit: the agentic fallback's recipe for this commit ({} step(s), {:.1} s saved)",
                    agentic.install.len() + 1,
                    agentic.duration_ms as f64 / 1000.0
                ),
                None => "cache: this commit's green verdict, nothing run".to_owned(),
            },
            Event::TestsHung {
                stack,
                tests,
                idle_ms,
            } => format!(
                "test {stack}: {} hung ({}), killed and counted as failing",
                tests.join(", "),
                match idle_ms {
                    Some(ms) => format!("silent for {:.1} s", *ms as f64 / 1000.0),
                    None => "past the run's time".to_owned(),
                }
            ),
            Event::Configuring => {
                "agentic fallback: a model sets the environment up, one step at a time".to_owned()
            }
            Event::Step {
                stack,
                phase,
                command,
            } => format!("{} {stack}: {command}", phase_name(*phase)),
            Event::StepDone {
                stack,
                phase,
                exit_code,
                duration_ms,
                ..
            } => format!(
                "{} {stack}: exit {exit_code} in {:.1} s",
                phase_name(*phase),
                *duration_ms as f64 / 1000.0
            ),
            Event::Fallback { stacks } => format!("fallback: {} recipe(s) proposed", stacks.len()),
            Event::GoldenForked { golden } => format!(
                "golden: forked {} (generation {}), nothing installed",
                golden.name, golden.generation
            ),
            Event::GoldenSkipped { reason } => {
                let mut said = self.skipped.lock().unwrap_or_else(|p| p.into_inner());
                if said.as_deref() == Some(reason.as_str()) {
                    return;
                }
                *said = Some(reason.clone());
                format!("golden: none used ({reason})")
            }
            Event::GoldenBuilding {
                name,
                from_generation: Some(g),
            } => format!("golden: syncing {name} from generation {g}"),
            Event::GoldenBuilding { name, .. } => format!("golden: building {name}"),
            Event::GoldenSaved {
                golden,
                bytes,
                duration_ms,
            } => format!(
                "golden: saved {} generation {} ({}, {:.1} s)",
                golden.name,
                golden.generation,
                super::golden::size(*bytes),
                *duration_ms as f64 / 1000.0
            ),
            _ => return,
        };
        note(&line);
    }
}

/// A progress line on stderr (a closed stderr is no reason to stop).
fn note(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

fn phase_name(phase: Phase) -> &'static str {
    match phase {
        Phase::Install => "install",
        _ => "test",
    }
}

/// A temporary clone, removed when dropped.
pub(crate) struct Workspace {
    pub(crate) path: PathBuf,
    _temp: Option<tempfile::TempDir>,
}

/// The repository the gate runs on: the directory given, or a fresh clone.
async fn workspace(args: &BootstrapArgs) -> anyhow::Result<Workspace> {
    source_workspace(
        &args.source,
        args.into.as_deref(),
        args.clone_timeout,
        args.clone_max_mb,
        args.json,
    )
    .await
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

pub(crate) async fn run(args: BootstrapArgs) -> anyhow::Result<ExitCode> {
    let repo = workspace(&args).await?;
    let mut options = GateOptions::default()
        .skip(args.skip_bootstrap)
        .no_cache(args.no_cache)
        .image(args.backend.image.clone());
    if let Some(secs) = args.timeout {
        options = options.timeout(Duration::from_secs(secs));
    }
    if let Some(db) = &args.store {
        options = options.store(db);
    }
    if !args.json {
        options = options.observer(Arc::new(Lines::default()));
    }
    if !args.offline {
        match super::agent::open_provider(&args.model) {
            Ok((provider, model)) => {
                let provider: Arc<dyn forq_agent::provider::Provider> = match &args.agentic_record {
                    Some(path) => Arc::new(forq_agent::provider::Recorder::new(provider, path)?),
                    None => provider,
                };
                let mut configurator =
                    forq_agent::configure::ModelConfigurator::new(provider, model);
                if let Some(path) = &args.model.prices {
                    let text = std::fs::read_to_string(path)
                        .with_context(|| format!("cannot read --prices {}", path.display()))?;
                    configurator = configurator.prices(
                        forq_agent::cost::PriceTable::from_json(&text).with_context(|| {
                            format!("--prices {} is not a price table", path.display())
                        })?,
                    );
                }
                if let Some(usd) = args.agentic_max_cost {
                    configurator = configurator.max_cost_usd(usd);
                }
                if let Some(tokens) = args.agentic_max_tokens {
                    configurator = configurator.max_tokens(tokens);
                }
                options.configurator = Some(Arc::new(configurator));
                options.configure_limits.max_steps = args.agentic_steps;
                options.configure_limits.wall_clock = Duration::from_secs(args.agentic_timeout);
            }
            Err(e) if !args.json => note(&format!("agentic fallback: off ({e:#})")),
            Err(_) => {}
        }
    }
    let backend = super::sandbox::open(args.backend.backend).await?;
    options.golden = super::golden::options(
        args.golden.golden,
        &*backend,
        &super::golden::identity(&args.source, &repo.path),
    )?;
    let record = forq_bootstrap::run(&*backend, &repo.path, &options).await?;
    if args.json {
        super::print_json(&record)?;
    } else {
        let mut out = std::io::stdout().lock();
        for s in &record.stacks {
            writeln!(
                out,
                "{:<10} {}  ({}, {} ms)",
                s.name, s.command, s.marker, s.duration_ms
            )?;
            for step in &s.install {
                writeln!(out, "           install: {step}")?;
            }
            writeln!(out, "           -> {}: {}", s.verdict.name(), s.reason)?;
        }
        for line in &record.evidence {
            writeln!(out, "evidence: {line}")?;
        }
        let cached = if record.cached {
            " [cached: .forq/bootstrap/manifest.json; --no-cache runs again]"
        } else {
            ""
        };
        writeln!(
            out,
            "{}: {} ({} ms){cached}",
            record.verdict.name(),
            record.reason,
            record.duration_ms
        )?;
    }
    Ok(Exit::achieved(record.verdict.lets_work_go_on()).into())
}
