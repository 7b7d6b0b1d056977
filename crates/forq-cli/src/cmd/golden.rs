//! `forq golden`: build, sync, inspect and evict golden environments, and
//! the `--golden` mode of the commands that provision sandboxes.

use crate::exit::Exit;
use crate::parts::{cap_bytes, identity};
use crate::terminal::size;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use forq_bootstrap::{GateError, GateOptions, GoldenOptions, Stack};
use forq_sandbox::{Backend, GoldenInfo, GoldenStatus, Goldens};
use serde_json::json;

use crate::cli::{GoldenBenchArgs, GoldenBuildArgs, GoldenGcArgs, GoldenListArgs, GoldenRmArgs};

fn ago(ms: u64) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let secs = now.saturating_sub(ms) / 1000;
    match secs {
        0..=59 => format!("{secs} s ago"),
        60..=3599 => format!("{} min ago", secs / 60),
        3600..=86_399 => format!("{} h ago", secs / 3600),
        _ => format!("{} d ago", secs / 86_400),
    }
}

fn status_word(status: &GoldenStatus) -> String {
    match status {
        GoldenStatus::Ready => "ready".to_owned(),
        GoldenStatus::Broken { reason } => format!("broken: {reason}"),
        _ => "unknown".to_owned(),
    }
}

/// What a build or a status found: the repository, its green stack and
/// golden key, on an open backend.
struct Target {
    _workspace: crate::parts::Workspace,
    path: std::path::PathBuf,
    identity: String,
    backend: Arc<dyn Backend>,
    goldens: Goldens,
    gate: GateOptions,
    stack: Stack,
    key: forq_bootstrap::GoldenKey,
}

/// Opens the repository, proves its tests run (the gate, cached per
/// commit) and computes its golden key. `Err(code)`: said why, exit so.
async fn target(args: &GoldenBuildArgs) -> anyhow::Result<Result<Target, ExitCode>> {
    let workspace =
        crate::parts::source_workspace(&args.source, None, 300, 2048, args.json).await?;
    let path = workspace.path.clone();
    let identity = identity(&args.source, &path);
    let backend = crate::parts::open_backend(args.backend.backend).await?;
    let goldens = backend.goldens().with_context(|| {
        format!(
            "the {} backend keeps no golden environments: use native or docker",
            backend.kind()
        )
    })?;
    let mut gate = GateOptions::default().image(args.backend.image.clone());
    if let Some(secs) = args.timeout {
        gate = gate.timeout(Duration::from_secs(secs));
    }
    if !args.json {
        gate = gate.observer(Arc::new(crate::terminal::Lines::default()));
    }
    let record = forq_bootstrap::run(&*backend, &path, &gate).await?;
    let Some(stack) = record.green_stack() else {
        say(
            args.json,
            &json!({"ok": false, "verdict": record.verdict.name(), "reason": record.reason}),
            &format!(
                "no golden: the repository's tests do not run here ({}: {})",
                record.verdict.name(),
                record.reason
            ),
        )?;
        return Ok(Err(Exit::NotAchieved.into()));
    };
    let Some(key) = forq_bootstrap::golden_key(&*backend, &path, &stack, &gate, &identity).await
    else {
        bail_input!(
            "{} is not a git checkout: a golden is kept per commit, so commit the repository first",
            path.display()
        );
    };
    Ok(Ok(Target {
        _workspace: workspace,
        path,
        identity,
        backend,
        goldens,
        gate,
        stack,
        key,
    }))
}

/// Prints `value` with --json, else `text`.
fn say(json: bool, value: &serde_json::Value, text: &str) -> anyhow::Result<()> {
    if json {
        crate::terminal::print_json(value)?;
    } else {
        writeln!(std::io::stdout().lock(), "{text}")?;
    }
    Ok(())
}

/// `forq golden build` (and `sync`, which needs a golden to start from).
pub(crate) async fn build(args: GoldenBuildArgs, sync: bool) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let t = match target(&args).await? {
        Ok(t) => t,
        Err(code) => return Ok(code),
    };
    if sync && t.goldens.get(&t.key.name)?.is_none() {
        bail_input!(
            "there is no golden for {} on {} yet: `forq golden build` makes the first one",
            t.identity,
            t.backend.kind()
        );
    }
    let mut gate = t.gate.clone();
    gate.golden =
        Some(GoldenOptions::new(t.goldens.clone(), t.identity.clone(), true).rebuild(args.rebuild));
    let warm = forq_bootstrap::provision_warm(&*t.backend, &t.path, &t.stack, &gate).await;
    let warm = match warm {
        Ok(warm) => warm,
        Err(e @ (GateError::GoldenBroken { .. } | GateError::GoldenUnproven { .. })) => {
            say(
                args.json,
                &json!({"ok": false, "golden": t.key.name, "error": e.to_string()}),
                &format!("{e}"),
            )?;
            return Ok(Exit::NotAchieved.into());
        }
        Err(e) => return Err(e.into()),
    };
    let used = warm.golden.clone();
    warm.sandbox.destroy().await?;
    let info = t.goldens.get(&t.key.name)?;
    let how = used.as_ref().map_or("none", |u| u.how.as_str());
    let text = match (&info, how) {
        (Some(info), "forked") => format!(
            "golden {} generation {} is current for {} ({}): nothing to do",
            info.name,
            info.generation,
            t.key.head,
            t.stack.name()
        ),
        (Some(info), how) => format!(
            "golden {} generation {} {how} for {} ({}) in {:.1} s: {}",
            info.name,
            info.generation,
            t.key.head,
            t.stack.name(),
            started.elapsed().as_secs_f64(),
            size(info.saved.bytes)
        ),
        (None, _) => "no golden was kept".to_owned(),
    };
    say(
        args.json,
        &json!({
            "ok": info.is_some(),
            "how": how,
            "golden": info,
            "duration_ms": started.elapsed().as_millis() as u64,
        }),
        &text,
    )?;
    Ok(ExitCode::SUCCESS)
}

/// `forq golden status`: exits 0 when a ready golden matches the tree.
pub(crate) async fn status(args: GoldenBuildArgs) -> anyhow::Result<ExitCode> {
    let t = match target(&args).await? {
        Ok(t) => t,
        Err(code) => return Ok(code),
    };
    let info = t.goldens.get(&t.key.name)?;
    let current = info
        .as_ref()
        .is_some_and(|i| i.key == t.key.key && i.status == GoldenStatus::Ready);
    let text = match &info {
        None => format!(
            "no golden for {} on {}: `forq golden build` makes it",
            t.identity,
            t.backend.kind()
        ),
        Some(i) => format!(
            "{}: generation {}, {}, {}, saved for {} {}, last used {}{}",
            i.name,
            i.generation,
            status_word(&i.status),
            size(i.saved.bytes),
            i.meta["head"].as_str().unwrap_or("?"),
            ago(i.saved_at_ms),
            ago(i.last_used_ms),
            if current {
                " — current".to_owned()
            } else {
                format!(" — behind {} (`forq golden sync`)", t.key.head)
            }
        ),
    };
    say(
        args.json,
        &json!({"name": t.key.name, "current": current, "head": t.key.head, "golden": info}),
        &text,
    )?;
    Ok(Exit::achieved(current).into())
}

async fn goldens_of(
    backend: &crate::cli::BackendArgs,
) -> anyhow::Result<(Arc<dyn Backend>, Goldens)> {
    let backend = crate::parts::open_backend(backend.backend).await?;
    let goldens = backend.goldens().with_context(|| {
        format!(
            "the {} backend keeps no golden environments",
            backend.kind()
        )
    })?;
    Ok((backend, goldens))
}

/// `forq golden list`.
pub(crate) async fn list(args: GoldenListArgs) -> anyhow::Result<ExitCode> {
    let (_, goldens) = goldens_of(&args.backend).await?;
    let all: Vec<GoldenInfo> = goldens.list()?;
    if args.json {
        crate::terminal::print_json(&all)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    if all.is_empty() {
        writeln!(out, "no goldens in {}", goldens.dir().display())?;
    }
    for g in &all {
        writeln!(
            out,
            "{}  g{}  {}  {}  head {}  used {}",
            g.name,
            g.generation,
            status_word(&g.status),
            size(g.saved.bytes),
            g.meta["head"]
                .as_str()
                .map_or("?", |h| &h[..h.len().min(12)]),
            ago(g.last_used_ms)
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `forq golden rm NAME`.
pub(crate) async fn rm(args: GoldenRmArgs) -> anyhow::Result<ExitCode> {
    let (backend, goldens) = goldens_of(&args.backend).await?;
    if goldens.get(&args.name)?.is_none() {
        bail_input!(
            "there is no golden {:?} (`forq golden list` shows them)",
            args.name
        );
    }
    let removed = goldens.remove(&*backend, &args.name).await?;
    say(
        args.json,
        &json!({"name": args.name, "removed": removed}),
        &if removed {
            format!("removed {}", args.name)
        } else {
            format!("{} is in use by a run; nothing removed", args.name)
        },
    )?;
    Ok(Exit::achieved(removed).into())
}

/// `forq golden gc`.
pub(crate) async fn gc(args: GoldenGcArgs) -> anyhow::Result<ExitCode> {
    let from_config = match &args.config {
        Some(file) => {
            forq_app::config::Config::from_file(file)?
                .sandbox
                .golden_max_gb
        }
        None => None,
    };
    let cap = cap_bytes(args.max_gb.or(from_config))?;
    let (backend, goldens) = goldens_of(&args.backend).await?;
    let removed = goldens.evict(&*backend, cap).await?;
    let kept: u64 = goldens.list()?.iter().map(|g| g.saved.bytes).sum();
    say(
        args.json,
        &json!({"removed": removed, "kept_bytes": kept, "max_bytes": cap}),
        &format!(
            "removed {} golden(s){}; {} kept (cap {})",
            removed.len(),
            if removed.is_empty() {
                String::new()
            } else {
                format!(": {}", removed.join(", "))
            },
            size(kept),
            size(cap)
        ),
    )?;
    Ok(ExitCode::SUCCESS)
}

/// The median of `values` (sorted in place).
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => 0.0,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

/// `project` copied into a fresh git repository.
async fn bench_repo(project: &Path) -> anyhow::Result<tempfile::TempDir> {
    let dir = tempfile::Builder::new()
        .prefix("forq-golden-bench-")
        .tempdir()?;
    let out = forq_sandbox::host_command("cp")
        .arg("-a")
        .arg(format!("{}/.", project.display()))
        .arg(dir.path())
        .output()
        .await?;
    anyhow::ensure!(
        out.status.success(),
        "cannot copy {}: {}",
        project.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    for args in [
        &["init", "-q"][..],
        &["add", "-A"],
        &[
            "-c",
            "user.name=forq",
            "-c",
            "user.email=forq@localhost",
            "-c",
            "commit.gpgsign=false",
            "commit",
            "-q",
            "-m",
            "bench",
        ],
    ] {
        let out = forq_sandbox::host_git()
            .args(args)
            .current_dir(dir.path())
            .output()
            .await?;
        anyhow::ensure!(
            out.status.success(),
            "git {args:?} in the bench copy: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(dir)
}

/// Provisions `stack` (from the golden or not) and runs its tests once:
/// the time to the first test result, in seconds.
async fn first_result(
    backend: &dyn Backend,
    repo: &Path,
    stack: &Stack,
    gate: &GateOptions,
    expect_golden: bool,
) -> anyhow::Result<f64> {
    let started = Instant::now();
    let warm = forq_bootstrap::provision_warm(backend, repo, stack, gate).await?;
    anyhow::ensure!(
        warm.golden.as_ref().map(|g| g.how.as_str()) == expect_golden.then_some("forked"),
        "expected {} run, got {:?}",
        if expect_golden { "a forked" } else { "a cold" },
        warm.golden
    );
    let run = forq_bootstrap::run_tests(&*warm.sandbox, stack, &[], Duration::from_secs(900)).await;
    let elapsed = started.elapsed().as_secs_f64();
    warm.sandbox.destroy().await?;
    let run = run?;
    anyhow::ensure!(
        run.evidence.as_ref().is_some_and(|e| e.executed() > 0),
        "no test ran in {} (exit {})",
        repo.display(),
        run.exit_code
    );
    Ok(elapsed)
}

/// `forq golden bench`.
pub(crate) async fn bench(args: GoldenBenchArgs) -> anyhow::Result<ExitCode> {
    let projects = bench_projects(&args)?;
    anyhow::ensure!(args.iterations > 0, "--iterations must be at least 1");
    let backend = crate::parts::open_backend(args.backend.backend).await?;
    let goldens = backend.goldens().with_context(|| {
        format!(
            "the {} backend keeps no golden environments",
            backend.kind()
        )
    })?;
    let mut rows = Vec::new();
    for project in &projects {
        rows.push(bench_project(&*backend, &goldens, project, &args).await?);
    }
    if args.json {
        crate::terminal::print_json(&rows)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{:<12} {:<8} {:>8} {:>12} {:>12} {:>8} {:>10}",
        "project", "stack", "installs", "cold p50", "golden p50", "ratio", "golden"
    )?;
    for r in &rows {
        writeln!(
            out,
            "{:<12} {:<8} {:>8} {:>10.2} s {:>10.2} s {:>7.1}x {:>10}",
            r["project"].as_str().unwrap_or_default(),
            r["stack"].as_str().unwrap_or_default(),
            r["install_steps"],
            r["cold_p50_s"].as_f64().unwrap_or_default(),
            r["warm_p50_s"].as_f64().unwrap_or_default(),
            r["ratio"].as_f64().unwrap_or_default(),
            size(r["golden_bytes"].as_u64().unwrap_or_default())
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The projects named, or every directory of `benches/golden`.
fn bench_projects(args: &GoldenBenchArgs) -> anyhow::Result<Vec<std::path::PathBuf>> {
    if !args.projects.is_empty() {
        return Ok(args.projects.clone());
    }
    let root = Path::new("benches/golden");
    let mut found: Vec<_> = std::fs::read_dir(root)
        .with_context(|| {
            format!(
                "no projects given and no {} here: run from forq's checkout or name project directories",
                root.display()
            )
        })?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    found.sort();
    Ok(found)
}

/// One project: its golden built, then the first test result from a cold
/// sandbox and from the golden, alternating, `--iterations` times each;
/// the row.
async fn bench_project(
    backend: &dyn Backend,
    goldens: &Goldens,
    project: &Path,
    args: &GoldenBenchArgs,
) -> anyhow::Result<serde_json::Value> {
    let name = project.file_name().map_or_else(
        || project.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let repo = bench_repo(project).await?;
    let identity = format!("forq-golden-bench/{name}/{}", std::process::id());
    let gate = GateOptions::default().image(args.backend.image.clone());
    let record = forq_bootstrap::run(backend, repo.path(), &gate).await?;
    let Some(stack) = record.green_stack() else {
        anyhow::bail!(
            "{}: the tests do not run here ({}: {})",
            project.display(),
            record.verdict.name(),
            record.reason
        );
    };
    if !args.json {
        crate::terminal::note(&format!("{name}: building its golden ({})", stack.name()));
    }
    let mut build = gate.clone();
    build.golden = Some(GoldenOptions::new(goldens.clone(), identity.clone(), true));
    let built = forq_bootstrap::provision_warm(backend, repo.path(), &stack, &build).await?;
    built.sandbox.destroy().await?;
    let golden_name = built.golden.map(|g| g.name).unwrap_or_default();
    let bytes = goldens.get(&golden_name)?.map_or(0, |g| g.saved.bytes);
    let mut use_only = gate.clone();
    use_only.golden = Some(GoldenOptions::new(goldens.clone(), identity, false));
    let (mut cold, mut warm) = (Vec::new(), Vec::new());
    for i in 0..args.iterations {
        // Alternating, so drift on a noisy machine hits both alike.
        let order = if i % 2 == 0 {
            [false, true]
        } else {
            [true, false]
        };
        for from_golden in order {
            let options = if from_golden { &use_only } else { &gate };
            let secs = first_result(backend, repo.path(), &stack, options, from_golden).await?;
            if from_golden {
                warm.push(secs);
            } else {
                cold.push(secs);
            }
        }
        if !args.json {
            crate::terminal::note(&format!(
                "{name}: round {} cold {:.2} s, warm {:.2} s",
                i + 1,
                cold[i],
                warm[i]
            ));
        }
    }
    let (cold_p50, warm_p50) = (median(&mut cold), median(&mut warm));
    let _ = goldens.remove(backend, &golden_name).await;
    Ok(json!({
        "project": name,
        "stack": stack.name(),
        "install_steps": stack.install.len(),
        "backend": backend.kind().name(),
        "iterations": args.iterations,
        "cold_p50_s": cold_p50,
        "warm_p50_s": warm_p50,
        "ratio": if warm_p50 > 0.0 { cold_p50 / warm_p50 } else { 0.0 },
        "golden_bytes": bytes,
    }))
}
