//! `forq sandbox bench`: create, fork, exec round-trip, diff and destroy,
//! measured side by side for one or more backends in one run.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use forq_sandbox::{ExecRequest, SandboxSpec};
use serde::Serialize;

use crate::cli::BenchArgs;

#[derive(Debug, Serialize)]
struct Report {
    backend: String,
    iterations: usize,
    files: usize,
    create_ms_p50: f64,
    create_ms_p95: f64,
    fork_ms_p50: f64,
    fork_ms_p95: f64,
    exec_ms_p50: f64,
    exec_ms_p95: f64,
    diff_ms_p50: f64,
    diff_ms_p95: f64,
    destroy_ms_p50: f64,
    destroy_ms_p95: f64,
}

/// The value at quantile `q` of `samples` (nearest rank).
fn quantile(samples: &mut [f64], q: f64) -> f64 {
    if samples.is_empty() {
        return f64::NAN;
    }
    samples.sort_by(|a, b| a.total_cmp(b));
    let rank = ((q * samples.len() as f64).ceil() as usize).clamp(1, samples.len());
    (samples[rank - 1] * 100.0).round() / 100.0
}

/// A workspace of `files` small source files in directories of 100.
fn generate_workspace(root: &Path, files: usize) -> anyhow::Result<()> {
    for i in 0..files {
        let dir = root.join(format!("pkg{:03}", i / 100));
        if i % 100 == 0 {
            std::fs::create_dir_all(&dir)?;
        }
        std::fs::write(
            dir.join(format!("mod{i:05}.py")),
            format!("def f{i}(x):\n    return x + {i}\n"),
        )?;
    }
    Ok(())
}

fn ms(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1000.0
}

pub(crate) async fn run(args: BenchArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(args.iterations > 0, "--iterations must be at least 1");
    let work = tempfile::Builder::new().prefix("forq-bench-").tempdir()?;
    generate_workspace(work.path(), args.files).context("generate the bench workspace")?;
    let mut reports = Vec::new();
    for choice in &args.backend {
        let backend = crate::parts::open_backend(*choice).await?;
        let mut spec = SandboxSpec::new(work.path());
        if let Some(image) = &args.image {
            spec = spec.image(image.clone());
        }
        reports.push(measure(&*backend, &spec, &args).await?);
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        if reports.len() == 1 {
            writeln!(out, "{}", serde_json::to_string_pretty(&reports[0])?)?;
        } else {
            writeln!(out, "{}", serde_json::to_string_pretty(&reports)?)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "{} iterations on a workspace of {} files; milliseconds, p50 / p95",
        args.iterations, args.files
    )?;
    writeln!(
        out,
        "{:<8} {:>17} {:>17} {:>17} {:>17} {:>17}",
        "backend", "create", "fork", "exec true", "diff", "destroy"
    )?;
    for r in &reports {
        let cell = |a: f64, b: f64| format!("{a:.2} / {b:.2}");
        writeln!(
            out,
            "{:<8} {:>17} {:>17} {:>17} {:>17} {:>17}",
            r.backend,
            cell(r.create_ms_p50, r.create_ms_p95),
            cell(r.fork_ms_p50, r.fork_ms_p95),
            cell(r.exec_ms_p50, r.exec_ms_p95),
            cell(r.diff_ms_p50, r.diff_ms_p95),
            cell(r.destroy_ms_p50, r.destroy_ms_p95),
        )?;
    }
    if let [a, b, ..] = &reports[..] {
        writeln!(
            out,
            "fork p50: {} is {:.1}x faster than {}",
            a.backend,
            b.fork_ms_p50 / a.fork_ms_p50,
            b.backend
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// One backend: `--iterations` rounds of create, exec, fork (after a
/// write, so the fork freezes a layer), diff and destroy.
async fn measure(
    backend: &dyn forq_sandbox::Backend,
    spec: &SandboxSpec,
    args: &BenchArgs,
) -> anyhow::Result<Report> {
    let (mut create, mut fork, mut exec, mut diff, mut destroy) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for i in 0..args.iterations {
        let t = Instant::now();
        let parent = backend.create(spec).await?;
        create.push(ms(t));

        let t = Instant::now();
        let out = parent.exec(ExecRequest::new(["true"])).await?;
        exec.push(ms(t));
        anyhow::ensure!(
            out.success(),
            "`true` failed in the {} sandbox: {out:?}",
            backend.kind()
        );

        // The parent changed something since its last snapshot, so the
        // fork pays for freezing a layer: the honest case.
        parent
            .write_file(
                Path::new("pkg000/mod00000.py"),
                format!("# {i}\n").as_bytes(),
            )
            .await?;
        let t = Instant::now();
        let child = parent.fork().await?;
        fork.push(ms(t));

        child
            .write_file(
                Path::new("pkg001/mod00100.py"),
                b"def f100(x):\n    return x\n",
            )
            .await?;
        let t = Instant::now();
        let d = child.diff().await?;
        diff.push(ms(t));
        anyhow::ensure!(
            d.files.len() == 2,
            "the bench diff should show 2 files, got {:?}",
            d.files
        );

        let t = Instant::now();
        child.destroy().await?;
        destroy.push(ms(t));
        parent.destroy().await?;
    }
    Ok(Report {
        backend: backend.kind().to_string(),
        iterations: args.iterations,
        files: args.files,
        create_ms_p50: quantile(&mut create, 0.5),
        create_ms_p95: quantile(&mut create, 0.95),
        fork_ms_p50: quantile(&mut fork, 0.5),
        fork_ms_p95: quantile(&mut fork, 0.95),
        exec_ms_p50: quantile(&mut exec, 0.5),
        exec_ms_p95: quantile(&mut exec, 0.95),
        diff_ms_p50: quantile(&mut diff, 0.5),
        diff_ms_p95: quantile(&mut diff, 0.95),
        destroy_ms_p50: quantile(&mut destroy, 0.5),
        destroy_ms_p95: quantile(&mut destroy, 0.95),
    })
}

#[cfg(test)]
mod tests {
    use super::quantile;

    #[test]
    fn nearest_rank_quantiles() {
        let mut s: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(quantile(&mut s, 0.5), 50.0);
        assert_eq!(quantile(&mut s, 0.95), 95.0);
        assert_eq!(quantile(&mut [3.0, 1.0, 2.0], 0.5), 2.0);
    }
}
