//! `forq config`: the JSON schema of forq.yml, the effective settings, and
//! a check of a file.

use crate::exit::Exit;
use std::io::Write;
use std::process::ExitCode;

use forq_app::config::Config;
use serde_json::json;

use crate::cli::{ConfigCheckArgs, ConfigCommand};
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
