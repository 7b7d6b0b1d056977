//! What forq writes for a person: lines on stderr, JSON on stdout, sizes
//! in words, the bootstrap gate's progress. Every command module writes
//! through these; none borrows another's.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::Duration;

use forq_app::pipeline::RunError;
use forq_app::store::{Run, State, Store};
use forq_bootstrap::{GateEvent, Observer, Phase};
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

use crate::exit::Exit;

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

impl Observer<GateEvent> for Lines {
    fn event(&self, event: &GateEvent) {
        let line = match event {
            GateEvent::Detected { stacks } if stacks.is_empty() => {
                "detect: no stack matched".to_owned()
            }
            GateEvent::Detected { stacks } => {
                let mut line = format!(
                    "detect: {}",
                    stacks
                        .iter()
                        .map(|s| format!("{} ({})", s.name(), s.marker))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                // Where the tests' needs were read, so a wrong guess shows.
                for s in stacks {
                    for source in &s.declared {
                        line.push_str(&format!("\ndeclared ({}): {source}", s.name()));
                    }
                }
                line
            }
            GateEvent::Cached { record } => match record.stacks.iter().find(|s| s.name == "agentic") {
                Some(agentic) => format!(
                    "cache hit: the agentic fallback's recipe for this commit ({} step(s), {:.1} s saved)",
                    agentic.install.len() + 1,
                    agentic.duration_ms as f64 / 1000.0
                ),
                None => "cache: this commit's green verdict, nothing run".to_owned(),
            },
            GateEvent::TestsHung {
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
            GateEvent::Configuring => {
                "agentic fallback: a model sets the environment up, one step at a time".to_owned()
            }
            GateEvent::Step {
                stack,
                phase,
                command,
            } => format!("{} {stack}: {command}", phase_name(*phase)),
            GateEvent::StepDone {
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
            GateEvent::Fallback { stacks } => format!("fallback: {} recipe(s) proposed", stacks.len()),
            GateEvent::Retry { stack, reason, .. } => format!("retry {stack}: {reason}"),
            GateEvent::GoldenForked { golden } => format!(
                "golden: forked {} (generation {}), nothing installed",
                golden.name, golden.generation
            ),
            GateEvent::GoldenSkipped { reason } => {
                let mut said = self.skipped.lock().unwrap_or_else(|p| p.into_inner());
                if said.as_deref() == Some(reason.as_str()) {
                    return;
                }
                *said = Some(reason.clone());
                format!("golden: none used ({reason})")
            }
            GateEvent::GoldenBuilding {
                name,
                from_generation: Some(g),
            } => format!("golden: syncing {name} from generation {g}"),
            GateEvent::GoldenBuilding { name, .. } => format!("golden: building {name}"),
            GateEvent::GoldenSaved {
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

pub(crate) fn phase_name(phase: Phase) -> &'static str {
    match phase {
        Phase::Install => "install",
        _ => "test",
    }
}

/// One progress line per run on a terminal (indicatif); plain lines of
/// state changes otherwise.
pub(crate) struct RunProgress {
    bars: Option<MultiProgress>,
    by_run: Mutex<std::collections::HashMap<String, ProgressBar>>,
    titles: std::collections::HashMap<String, String>,
}

impl RunProgress {
    pub(crate) fn new(runs: &[Run], quiet: bool) -> RunProgress {
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
                by_run.insert(run.id.to_string(), bar);
            }
            titles.insert(run.id.to_string(), title);
        }
        RunProgress {
            bars,
            by_run: Mutex::new(by_run),
            titles,
        }
    }

    pub(crate) fn finish(&self) {
        let bars = self.by_run.lock().unwrap_or_else(|p| p.into_inner());
        for bar in bars.values() {
            bar.finish_and_clear();
        }
        if let Some(m) = &self.bars {
            let _ = m.clear();
        }
    }
}

impl Observer<forq_app::pipeline::PipelineEvent> for RunProgress {
    fn event(&self, event: &forq_app::pipeline::PipelineEvent) {
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

pub(crate) fn short(s: &str, n: usize) -> String {
    let line = s.lines().next().unwrap_or("");
    if line.chars().count() <= n {
        line.to_owned()
    } else {
        format!("{}…", line.chars().take(n - 1).collect::<String>())
    }
}

/// Whether to colour stdout.
pub(crate) fn color() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
}

pub(crate) fn paint(state: State, text: &str) -> String {
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

/// The final table: issue, outcome, patch size, cost, time.
pub(crate) fn table(runs: &[Run]) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{:<22} {:<18} {:<12} {:>6} {:>7} {:>7}  DETAIL",
        "RUN", "ISSUE", "OUTCOME", "PATCH", "COST", "TIME"
    )?;
    for r in runs {
        let patch = r.patch_lines.map_or("-".to_owned(), |l| format!("{l}L"));
        let detail = match (&r.branch, r.state) {
            (Some(b), State::PatchReady | State::PrOpened) => b.to_string(),
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

/// The runs as JSON or as the table, and the exit code they make.
pub(crate) fn report(runs: &[Run], json_out: bool) -> anyhow::Result<Exit> {
    if json_out {
        crate::terminal::print_json(&runs)?;
    } else {
        table(runs)?;
    }
    Ok(Exit::of_runs(runs))
}

/// Each run as it ended: one that could not be executed is said on
/// stderr and shown as the store has it.
pub(crate) fn as_ended(
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
