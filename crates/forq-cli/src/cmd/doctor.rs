//! `forq doctor`: the protections in force on this machine, per backend.

use std::io::Write;
use std::process::ExitCode;

use forq_sandbox::NativeOptions;

use crate::cli::DoctorArgs;

pub(crate) async fn run(args: DoctorArgs) -> anyhow::Result<ExitCode> {
    let report = forq_sandbox::protections(NativeOptions::default()).await;
    let mut out = std::io::stdout().lock();
    if args.json {
        for p in &report {
            writeln!(out, "{}", serde_json::to_string(p)?)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let width = report.iter().map(|p| p.name.len()).max().unwrap_or(0);
    let mut backend = None;
    for p in &report {
        if backend != Some(p.backend) {
            writeln!(out, "{}", p.backend)?;
            backend = Some(p.backend);
        }
        let mark = if p.in_force { "yes" } else { "NO " };
        writeln!(out, "  {mark}  {:width$}  {}", p.name, p.detail)?;
    }
    Ok(ExitCode::SUCCESS)
}
