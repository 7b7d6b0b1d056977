//! The agentic bootstrap fallback (Repo2Run-style): when no detected stack
//! is green, a [`Configurator`] (a model, in forq-agent) sets the
//! environment up one step at a time, inside the sandbox only.
//!
//! Each step is one command, a file written, a file read or a tree listed,
//! its observation tail-capped. After a step that changed the sandbox and
//! succeeded, the state is snapshotted; a step that failed is rolled back
//! by forking the last good snapshot (never by replaying commands), so a
//! half-done install cannot poison later steps. The configurator cannot
//! declare success: it proposes a test command, and only that command's
//! output, read by the gate's own evidence parsers with a non-zero count of
//! executed tests, makes the verdict `bootstrapped`. Steps, wall clock and
//! budget are capped; every step goes to `.forq/bootstrap/transcript.jsonl`.
//! On success the recipe (the steps that stuck, as shell commands) is a
//! [`Stack`] the gate can replay from scratch, written out as
//! `.forq/bootstrap/recipe.Dockerfile` and a `golden:` section for forq.yml.

use std::path::Path;
use std::time::{Duration, Instant};

use forq_sandbox::{Backend, ExecRequest, Network, Sandbox};
use serde::{Deserialize, Serialize};

use crate::detect::Stack;
use crate::gate::{GateError, GateOptions, Record, StackRun};
use crate::verdict::Verdict;

/// One step a configurator asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ConfigStep {
    /// Run a shell command at the repository's root (with the egress proxy:
    /// the stack's registries).
    Run {
        /// The command.
        command: String,
    },
    /// Write a file (relative to the repository's root).
    Write {
        /// The path.
        path: String,
        /// Its whole contents.
        contents: String,
    },
    /// Read a file.
    Read {
        /// The path.
        path: String,
    },
    /// List a directory tree (two levels).
    List {
        /// The path (`.` for the root).
        path: String,
    },
    /// Judge the configured state by this test command: the gate runs it
    /// (no network) and reads its output.
    Test {
        /// The test command.
        command: String,
    },
}

impl ConfigStep {
    /// Whether the step may change the sandbox (and so is snapshotted or
    /// rolled back).
    fn changes(&self) -> bool {
        matches!(self, ConfigStep::Run { .. } | ConfigStep::Write { .. })
    }
}

/// What one step did.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StepRecord {
    /// Its number, from 1.
    pub step: u32,
    /// What was asked.
    pub action: ConfigStep,
    /// Whether it succeeded.
    pub ok: bool,
    /// Whether its changes were rolled back (a failed step that changed
    /// the sandbox).
    pub rolled_back: bool,
    /// What it showed: output, file contents or listing, tail-capped.
    pub observation: String,
    /// How long it took.
    pub duration_ms: u64,
}

/// What a configurator sees before each step.
#[derive(Debug)]
#[non_exhaustive]
pub struct ConfigureContext<'a> {
    /// The gate's record so far: detected stacks and why each failed.
    pub failed: &'a Record,
    /// The repository's top two levels, listed.
    pub tree: &'a str,
    /// The steps so far.
    pub history: &'a [StepRecord],
    /// Steps left, including this one.
    pub steps_left: u32,
}

/// Proposes the next step.
#[async_trait::async_trait]
pub trait Configurator: Send + Sync {
    /// The next step, or `Ok(None)` to give up. `Err`: the configurator
    /// failed (its model is unreachable, its budget is spent), with why.
    async fn next(&self, context: &ConfigureContext<'_>) -> Result<Option<ConfigStep>, String>;

    /// Dollars spent so far (0 when unknown).
    fn spent_usd(&self) -> f64 {
        0.0
    }
}

/// The configurator's caps.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct ConfigureLimits {
    /// Most steps (default 12).
    pub max_steps: u32,
    /// Whole wall clock (default 1,200 s).
    pub wall_clock: Duration,
    /// Per command (default 120 s).
    pub per_command: Duration,
    /// Observation kept per step, in characters, from the end (default
    /// 4,000).
    pub observation_chars: usize,
}

impl Default for ConfigureLimits {
    fn default() -> Self {
        ConfigureLimits {
            max_steps: 12,
            wall_clock: Duration::from_secs(1200),
            per_command: Duration::from_secs(120),
            observation_chars: 4000,
        }
    }
}

/// How the configuration ended.
#[derive(Debug)]
pub(crate) struct Configured {
    /// The stack run: `bootstrapped` with the recipe and evidence, or
    /// `failed_agentic` with why.
    pub(crate) run: StackRun,
    /// The recipe, when green.
    pub(crate) recipe: Option<Stack>,
    /// The configured sandbox, when green (for the golden).
    pub(crate) sandbox: Option<Box<dyn Sandbox>>,
}

/// The transcript's path in `repo`.
pub fn transcript_path(repo: &Path) -> std::path::PathBuf {
    repo.join(".forq")
        .join("bootstrap")
        .join("transcript.jsonl")
}

fn tail(text: &str, chars: usize) -> String {
    let count = text.chars().count();
    if count <= chars {
        return text.to_owned();
    }
    let kept: String = text.chars().skip(count - chars).collect();
    format!("[… {} characters before]\n{kept}", count - chars)
}

/// A heredoc delimiter that `contents` does not contain as a line.
fn delimiter(contents: &str) -> String {
    let mut n = 0;
    loop {
        let d = if n == 0 {
            "FORQ_EOF".to_owned()
        } else {
            format!("FORQ_EOF_{n}")
        };
        if !contents.lines().any(|l| l == d) {
            return d;
        }
        n += 1;
    }
}

/// The shell command that writes `contents` to `path` (a recipe step).
fn write_command(path: &str, contents: &str) -> String {
    let d = delimiter(contents);
    let quoted = crate::runner::single_quoted(path);
    let parent = Path::new(path)
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map(|p| {
            format!(
                "mkdir -p {} && ",
                crate::runner::single_quoted(&p.display().to_string())
            )
        })
        .unwrap_or_default();
    let body = if contents.ends_with('\n') || contents.is_empty() {
        contents.to_owned()
    } else {
        format!("{contents}\n")
    };
    format!("{parent}cat > {quoted} <<'{d}'\n{body}{d}")
}

/// The transcript: one line per step, started afresh for each
/// configuration, never written through a link.
struct Transcript {
    path: std::path::PathBuf,
}

impl Transcript {
    /// Makes `.forq/bootstrap/` (ignored, no link on the way) and removes
    /// the previous transcript.
    fn fresh(repo: &Path) -> Result<Transcript, GateError> {
        let path = transcript_path(repo);
        let cache_error = |source| GateError::Cache {
            path: path.clone(),
            source,
        };
        crate::journal::ignore_forq_dir(repo).map_err(cache_error)?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .and_then(|()| crate::journal::refuse_links_from_forq(dir))
                .map_err(cache_error)?;
        }
        let _ = std::fs::remove_file(&path);
        Ok(Transcript { path })
    }

    fn append(&self, step: &StepRecord) -> Result<(), GateError> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt as _;
        let line = serde_json::to_string(step).expect("serializable");
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            // Never through a link planted under the transcript's name.
            .custom_flags(libc::O_NOFOLLOW)
            .open(&self.path)
            .and_then(|mut f| writeln!(f, "{line}"))
            .map_err(|source| GateError::Cache {
                path: self.path.clone(),
                source,
            })
    }
}

/// The fallback's name in the record.
const STACK_NAME: &str = "agentic";
/// The fallback's marker in the record.
const MARKER: &str = "the agentic fallback";

fn sandbox_error(source: forq_sandbox::Error) -> GateError {
    GateError::Sandbox {
        stack: STACK_NAME.to_owned(),
        source,
    }
}

/// The configuring sandbox: the gate's limits and environment, every
/// ecosystem's registries reachable through the proxy (the network is the
/// install's throughout where execs cannot choose theirs).
fn sandbox_spec(
    repo: &Path,
    options: &GateOptions,
    fixed_network: bool,
) -> forq_sandbox::SandboxSpec {
    let mut spec = forq_sandbox::SandboxSpec::new(repo)
        .env("CI", "true")
        .env("NO_COLOR", "1")
        .limits(options.limits)
        .egress(forq_sandbox::EgressAllow::new(
            options.egress_allow.iter().cloned().chain(
                ["pypi", "npm", "crates", "go", "maven"]
                    .into_iter()
                    .flat_map(|e| forq_sandbox::registries(e).iter().map(|h| (*h).to_owned())),
            ),
        ));
    for (k, v) in &options.env {
        spec = spec.env(k, v);
    }
    if let Some(image) = &options.image {
        spec = spec.image(image.clone());
    }
    if fixed_network {
        spec = spec.network(options.install_network);
    }
    spec
}

/// No configuration was tried: why.
fn unusable(why: String) -> Configured {
    let mut run = StackRun::new(STACK_NAME, MARKER);
    run.verdict = Verdict::UnsupportedEcosystem;
    run.reason = format!("agentic fallback: {why}");
    Configured {
        run,
        recipe: None,
        sandbox: None,
    }
}

/// What one step gave.
enum Performed {
    /// Whether it succeeded, and what it showed.
    Observed(bool, String),
    /// The proposed test command's run, judged green.
    Green(Box<StackRun>),
}

/// The sandbox being configured, the last good state, and the steps that
/// stuck.
struct Setup<'a> {
    sandbox: Box<dyn Sandbox>,
    good: forq_sandbox::Snapshot,
    kept: Vec<String>,
    fixed_network: bool,
    options: &'a GateOptions,
}

impl<'a> Setup<'a> {
    /// The configuring sandbox, made and snapshotted; `Err` inside: why no
    /// usable sandbox could be made.
    async fn start(
        backend: &dyn Backend,
        repo: &Path,
        options: &'a GateOptions,
    ) -> Result<Result<Setup<'a>, String>, GateError> {
        let fixed_network = !backend.per_exec_network();
        let sandbox = match backend
            .create(&sandbox_spec(repo, options, fixed_network))
            .await
        {
            Ok(sandbox) => sandbox,
            Err(e) => return Ok(Err(format!("no usable sandbox ({e})"))),
        };
        let good = sandbox.snapshot().await.map_err(sandbox_error)?;
        Ok(Ok(Setup {
            sandbox,
            good,
            kept: Vec::new(),
            fixed_network,
            options,
        }))
    }

    /// Does one step, its commands capped at `cap`.
    async fn perform(&self, step: &ConfigStep, cap: Duration) -> Result<Performed, GateError> {
        let sandbox = &*self.sandbox;
        let observed = |result: Result<String, String>| match result {
            Ok(text) => Performed::Observed(true, text),
            Err(text) => Performed::Observed(false, text),
        };
        Ok(match step {
            ConfigStep::Run { command } => {
                let mut req = ExecRequest::shell(command.clone())
                    .stdin(Vec::new())
                    .timeout(cap);
                if !self.fixed_network {
                    req = req.network(self.options.install_network);
                }
                match sandbox.exec(req).await {
                    Ok(out) => {
                        let text = format!("{}{}", out.stdout_text(), out.stderr_text());
                        let status = if out.timed_out {
                            format!("timed out after {} s", cap.as_secs())
                        } else {
                            format!("exit {}", out.shell_code())
                        };
                        Performed::Observed(out.success(), format!("{status}\n{text}"))
                    }
                    Err(e) => Performed::Observed(false, format!("could not run: {e}")),
                }
            }
            ConfigStep::Write { path, contents } => observed(
                sandbox
                    .write_file(Path::new(path), contents.as_bytes())
                    .await
                    .map(|()| format!("wrote {} bytes to {path}", contents.len()))
                    .map_err(|e| format!("cannot write {path}: {e}")),
            ),
            ConfigStep::Read { path } => observed(
                sandbox
                    .read_file(Path::new(path))
                    .await
                    .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
                    .map_err(|e| format!("cannot read {path}: {e}")),
            ),
            ConfigStep::List { path } => Performed::Observed(true, listing(sandbox, path).await),
            ConfigStep::Test { command } => {
                let stack = Stack::custom("agentic fallback", Vec::new(), command);
                let judged = crate::gate::run_stack_in(
                    sandbox,
                    self.fixed_network,
                    &stack,
                    self.options,
                    false,
                    None,
                )
                .await?;
                if judged.verdict == Verdict::Bootstrapped {
                    Performed::Green(Box::new(judged))
                } else {
                    Performed::Observed(
                        false,
                        format!(
                            "not bootstrapped: {}\n{}",
                            judged.reason, judged.output_tail
                        ),
                    )
                }
            }
        })
    }

    /// After a step that may have changed the sandbox: a success is the
    /// new good state and its command is kept; a failure goes back to the
    /// last good state, a fork of it, not a replay. Whether it rolled back.
    async fn keep_or_roll_back(&mut self, step: &ConfigStep, ok: bool) -> Result<bool, GateError> {
        if !step.changes() {
            return Ok(false);
        }
        if ok {
            self.good = self.sandbox.snapshot().await.map_err(sandbox_error)?;
            self.kept.push(match step {
                ConfigStep::Run { command } => command.clone(),
                ConfigStep::Write { path, contents } => write_command(path, contents),
                _ => unreachable!("only changing steps"),
            });
            return Ok(false);
        }
        let fresh = self.good.fork().await.map_err(sandbox_error)?;
        let failed = std::mem::replace(&mut self.sandbox, fresh);
        let _ = failed.destroy().await;
        Ok(true)
    }

    /// The green end: the test command over the steps that stuck is the
    /// recipe.
    fn green(
        self,
        judged: StackRun,
        command: &str,
        steps: u32,
        spent_usd: f64,
        started: Instant,
    ) -> Configured {
        let recipe = Stack::custom("agentic fallback", self.kept, command);
        let mut run = judged;
        run.name = STACK_NAME.to_owned();
        run.marker = MARKER.to_owned();
        run.install = recipe.install.clone();
        run.command = recipe.command.clone();
        run.reason = format!(
            "{} (configured in {steps} step(s), ${spent_usd:.4})",
            run.reason
        );
        run.duration_ms = started.elapsed().as_millis() as u64;
        Configured {
            run,
            recipe: Some(recipe),
            sandbox: Some(self.sandbox),
        }
    }
}

/// Runs the configurator loop over `repo`. The transcript is appended as
/// it goes.
pub(crate) async fn configure(
    backend: &dyn Backend,
    repo: &Path,
    options: &GateOptions,
    configurator: &dyn Configurator,
    limits: ConfigureLimits,
    failed: &Record,
) -> Result<Configured, GateError> {
    let started = Instant::now();
    let transcript = Transcript::fresh(repo)?;
    // A model's commands run in an isolating sandbox or not at all.
    if backend.kind() == forq_sandbox::BackendKind::Host {
        return Ok(unusable(
            "the host backend isolates nothing, and a model's commands never run unisolated; \
             use the native or docker backend"
                .to_owned(),
        ));
    }
    let mut setup = match Setup::start(backend, repo, options).await? {
        Ok(setup) => setup,
        Err(why) => return Ok(unusable(why)),
    };
    let tree = listing(&*setup.sandbox, ".").await;
    let mut history: Vec<StepRecord> = Vec::new();
    let mut why_not = format!(
        "{} step(s) used without a test command whose output shows tests ran",
        limits.max_steps
    );
    for n in 1..=limits.max_steps {
        if started.elapsed() >= limits.wall_clock {
            why_not = format!(
                "the wall clock of {} s ran out after {} step(s)",
                limits.wall_clock.as_secs(),
                n - 1
            );
            break;
        }
        let context = ConfigureContext {
            failed,
            tree: &tree,
            history: &history,
            steps_left: limits.max_steps - n + 1,
        };
        let step = match configurator.next(&context).await {
            Ok(Some(step)) => step,
            Ok(None) => {
                why_not = format!("the configurator gave up after {} step(s)", n - 1);
                break;
            }
            Err(e) => {
                why_not = format!("the configurator failed after {} step(s): {e}", n - 1);
                break;
            }
        };
        let at = Instant::now();
        let remaining = limits.wall_clock.saturating_sub(started.elapsed());
        let cap = limits
            .per_command
            .min(remaining)
            .max(Duration::from_secs(1));
        let record = |ok, rolled_back, observation: &str, action| StepRecord {
            step: n,
            action,
            ok,
            rolled_back,
            observation: tail(observation, limits.observation_chars),
            duration_ms: at.elapsed().as_millis() as u64,
        };
        let (ok, observation) = match setup.perform(&step, cap).await? {
            Performed::Observed(ok, observation) => (ok, observation),
            Performed::Green(judged) => {
                transcript.append(&record(true, false, &judged.reason, step.clone()))?;
                let ConfigStep::Test { command } = &step else {
                    unreachable!("only a test step is judged")
                };
                return Ok(setup.green(*judged, command, n, configurator.spent_usd(), started));
            }
        };
        let rolled_back = setup.keep_or_roll_back(&step, ok).await?;
        let record = record(ok, rolled_back, &observation, step);
        transcript.append(&record)?;
        history.push(record);
    }
    let _ = setup.sandbox.destroy().await;
    Ok(failed_agentic(&why_not, &history, started))
}

/// The configurator did not get the tests to run: why, and the last
/// step's observation.
fn failed_agentic(why_not: &str, history: &[StepRecord], started: Instant) -> Configured {
    let mut run = StackRun::new(STACK_NAME, MARKER);
    run.verdict = Verdict::FailedAgentic;
    run.reason = format!("agentic fallback: {why_not}");
    run.output_tail = history
        .last()
        .map(|h| h.observation.clone())
        .unwrap_or_default();
    run.duration_ms = started.elapsed().as_millis() as u64;
    Configured {
        run,
        recipe: None,
        sandbox: None,
    }
}

/// Two levels of `path` in the sandbox, `.git` and `.forq` left out.
async fn listing(sandbox: &dyn Sandbox, path: &str) -> String {
    let script = "find \"$1\" -maxdepth 2 \\( -name .git -o -name .forq \\) -prune -o -print | sort | head -n 300";
    match sandbox
        .exec(
            ExecRequest::new(["sh", "-c", script, "sh", path])
                .stdin(Vec::new())
                .timeout(Duration::from_secs(30))
                .network(Network::None),
        )
        .await
    {
        Ok(out) => out.stdout_text(),
        Err(e) => format!("cannot list {path}: {e}"),
    }
}

/// Writes the recipe as a Dockerfile-like file and a forq.yml section.
pub(crate) fn write_recipe(repo: &Path, recipe: &Stack) -> std::io::Result<()> {
    let dir = repo.join(".forq").join("bootstrap");
    let mut docker = String::from(
        "# The agentic bootstrap fallback's recipe: the steps that stuck, in order.\n\
         # Replayed from scratch by forq (forq.yml's golden section below), or by hand.\n\
         WORKDIR /workspace\n",
    );
    for step in &recipe.install {
        if step.contains('\n') {
            docker.push_str(&format!("RUN <<'FORQ_STEP'\n{step}\nFORQ_STEP\n"));
        } else {
            docker.push_str(&format!("RUN {step}\n"));
        }
    }
    docker.push_str(&format!("# test: {}\n", recipe.command));
    crate::journal::write_whole(&dir.join("recipe.Dockerfile"), docker.as_bytes())?;
    let golden = serde_json::json!({
        "golden": {"install": recipe.install, "test": recipe.command}
    });
    let yaml = format!(
        "# A suggested golden section for forq.yml (JSON is YAML), from the agentic fallback.\n{}\n",
        serde_json::to_string_pretty(&golden).expect("serializable")
    );
    crate::journal::write_whole(&dir.join("golden.yml"), yaml.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_file_becomes_a_heredoc_that_survives_its_own_delimiter() {
        let cmd = write_command("conf/a b.ini", "x=1\nFORQ_EOF\n");
        assert!(cmd.starts_with("mkdir -p 'conf' && cat > 'conf/a b.ini' <<'FORQ_EOF_1'\n"));
        assert!(cmd.ends_with("x=1\nFORQ_EOF\nFORQ_EOF_1"), "{cmd}");
    }

    #[test]
    fn observations_keep_their_tail() {
        let long = "a".repeat(10) + "END";
        let t = tail(&long, 5);
        assert!(
            t.ends_with("aaEND") && t.contains("8 characters before"),
            "{t}"
        );
    }
}
