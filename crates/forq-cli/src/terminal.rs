//! What forq writes for a person: lines on stderr, JSON on stdout, sizes
//! in words, the bootstrap gate's progress. Every command module writes
//! through these; none borrows another's.

use std::io::Write;

use forq_bootstrap::{Event, Observer, Phase};

/// A line on stderr (a closed stderr is no reason to stop).
pub(crate) fn note(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// Prints `value` as one line of JSON on stdout.
pub(crate) fn print_json(value: &impl serde::Serialize) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", serde_json::to_string(value)?)?;
    Ok(())
}

/// `bytes` for a person: `512 KiB`, `1.4 GiB`.
pub(crate) fn size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

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
                size(*bytes),
                *duration_ms as f64 / 1000.0
            ),
            _ => return,
        };
        note(&line);
    }
}

fn phase_name(phase: Phase) -> &'static str {
    match phase {
        Phase::Install => "install",
        _ => "test",
    }
}
