//! `forq worker`: this machine's share of a shared queue.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use forq_app::worker::{self, WorkerOptions};

use crate::cli::WorkerArgs;
use crate::parts::{contributor_model, golden_policy, load_config, open_store, owner_model};
use crate::terminal::note;

pub(crate) async fn worker(args: WorkerArgs) -> anyhow::Result<ExitCode> {
    let seconds = |what: &str, s: f64| {
        Duration::try_from_secs_f64(s)
            .ok()
            .filter(|d| !d.is_zero())
            .ok_or_else(|| {
                crate::failures::input(format!(
                    "--{what} takes a positive number of seconds, not {s}"
                ))
            })
    };
    let lease = seconds("lease", args.lease)?;
    let poll = seconds("poll", args.poll)?;
    let grace = Duration::try_from_secs_f64(args.grace.max(0.0)).unwrap_or_default();
    std::fs::create_dir_all(&args.state.state)
        .with_context(|| format!("cannot create {}", args.state.state.display()))?;
    let state_dir = args.state.state.canonicalize()?;
    let store = open_store(&state_dir, args.state.store.as_deref())?;
    // What workers that died here left behind (mounts, cgroups, sandbox
    // directories, containers) goes before this one takes anything up.
    let swept = forq_sandbox::gc(&forq_sandbox::default_state_dir())?;
    #[cfg(feature = "docker")]
    let containers = forq_sandbox::DockerBackend::gc().await.unwrap_or_default();
    #[cfg(not(feature = "docker"))]
    let containers: Vec<String> = Vec::new();
    if !swept.unmounted.is_empty() || !swept.removed.is_empty() || !containers.is_empty() {
        note(&format!(
            "forq worker: cleaned what dead processes left: {} mounts, {} directories, {} containers",
            swept.unmounted.len(),
            swept.removed.len(),
            containers.len()
        ));
    }
    let backend = crate::parts::open_backend(args.backend.backend).await?;
    let from_config = matches!(args.backend.backend, forq_sandbox::BackendChoice::Auto);
    let model = owner_model(&args.model)?;
    let contributor = contributor_model(
        args.contributor_key_env.as_deref(),
        model.as_ref(),
        &args.model,
    )?;
    let mut labels = args.label.clone();
    labels.push(backend.kind().to_string());
    labels.push(std::env::consts::ARCH.to_owned());
    // The repositories whose goldens this machine holds: their runs first.
    let warm: Vec<String> = backend
        .goldens()
        .and_then(|g| g.list())
        .map(|list| {
            list.into_iter()
                .filter_map(|g| g.meta["identity"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let pipeline = forq_app::pipeline::Pipeline::new(store.clone(), &state_dir, backend)
        .backend_from_config(from_config)
        .github(forq_app::github::Github::from_env()?)
        .golden(golden_policy(args.golden.golden))
        .model(model)
        .contributor(contributor)
        .config(load_config(args.config.as_ref())?)
        .local_repos(&args.local_repos.dirs);
    let name = args.name.clone().unwrap_or_else(worker::default_name);
    let options = WorkerOptions {
        labels,
        lease,
        poll,
        grace,
        exit_when_idle: args.exit_when_idle,
        warm,
        ..WorkerOptions::new(&name, args.jobs)
    };
    note(&format!(
        "forq worker {name}: {} runs at once from {}",
        options.jobs,
        store.location()
    ));
    let report = worker::work(&pipeline, &options, crate::parts::shutdown_signal()).await?;
    if args.json {
        crate::terminal::print_json(&report)?;
    } else {
        note(&format!(
            "forq worker {name}: {} runs finished, {} lost, {} handed back",
            report.finished, report.lost, report.handed_back
        ));
    }
    Ok(ExitCode::SUCCESS)
}
