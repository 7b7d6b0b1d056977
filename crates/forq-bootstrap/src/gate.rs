//! The gate: detect the stacks, run each one's install steps and test
//! command inside a sandbox, read the evidence, and conclude.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use forq_sandbox::{Backend, BackendKind, ExecOutcome, ExecRequest, Network, SandboxSpec};
use serde::{Deserialize, Serialize};

use crate::detect::{detect, Stack};
use crate::evidence::{Evidence, Outcome};
use crate::verdict::Verdict;

/// Output kept in a record, from the end (where runners summarise).
const TAIL_CHARS: usize = 4000;

/// How the gate runs.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct GateOptions {
    /// Cap on each install step (default 10 minutes).
    pub install_timeout: Duration,
    /// Cap on the test command (default 15 minutes).
    pub test_timeout: Duration,
    /// Network for the test run (default none: the registries are reached
    /// by the install steps only).
    pub test_network: Network,
    /// Skip the gate: the verdict is `skipped` and nothing runs.
    pub skip: bool,
    /// Run even when the recipe cache has this commit's verdict.
    pub no_cache: bool,
}

impl Default for GateOptions {
    fn default() -> Self {
        GateOptions {
            install_timeout: Duration::from_secs(600),
            test_timeout: Duration::from_secs(900),
            test_network: Network::None,
            skip: false,
            no_cache: false,
        }
    }
}

impl GateOptions {
    /// Caps both phases at `timeout`.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.install_timeout = timeout;
        self.test_timeout = timeout;
        self
    }
    /// Skips the gate.
    pub fn skip(mut self, skip: bool) -> Self {
        self.skip = skip;
        self
    }
    /// Ignores the recipe cache (and still refreshes it on success).
    pub fn no_cache(mut self, no_cache: bool) -> Self {
        self.no_cache = no_cache;
        self
    }
}

/// What happened to one stack.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StackRun {
    /// The stack (`pytest`, `rust`, ...).
    pub name: String,
    /// The marker that detected it.
    pub marker: String,
    /// The install steps.
    pub install: Vec<String>,
    /// The test command.
    pub command: String,
    /// The exit code of the last command run (install step or test).
    pub exit_code: Option<i32>,
    /// What this stack alone concludes.
    pub verdict: Verdict,
    /// Why, in a sentence.
    pub reason: String,
    /// What the runner's output proved, when there was any.
    pub evidence: Option<Evidence>,
    /// The end of the last command's output (stdout, then stderr).
    pub output_tail: String,
    /// How long the stack took.
    pub duration_ms: u64,
}

/// The gate's record.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Record {
    /// The verdict.
    pub verdict: Verdict,
    /// Every stack tried, cheapest first.
    pub stacks: Vec<StackRun>,
    /// Tests that ran (passed, failed, errored) in the stack that decided.
    pub tests_executed: u32,
    /// Passed.
    pub passed: u32,
    /// Failed.
    pub failed: u32,
    /// Skipped.
    pub skipped: u32,
    /// Per-test outcomes of the stack that decided.
    pub tests: BTreeMap<String, Outcome>,
    /// The lines that prove it.
    pub evidence: Vec<String>,
    /// Why, in a sentence.
    pub reason: String,
    /// Whether this came from the recipe cache (`.forq/bootstrap/manifest.json`)
    /// instead of a run.
    pub cached: bool,
    /// How long the gate took.
    pub duration_ms: u64,
}

/// What can stop the gate itself (as opposed to a verdict about the
/// repository).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The sandbox failed (not the repository's commands in it).
    #[error("the sandbox failed while bootstrapping {stack}")]
    Sandbox {
        /// The stack being run.
        stack: String,
        /// forq-sandbox's error.
        #[source]
        source: forq_sandbox::Error,
    },
    /// The recipe cache could not be written.
    #[error("cannot write the bootstrap manifest {path:?}")]
    Cache {
        /// The manifest.
        path: std::path::PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

fn tail(out: &ExecOutcome) -> String {
    let all = format!("{}{}", out.stdout_text(), out.stderr_text());
    let skip = all.chars().count().saturating_sub(TAIL_CHARS);
    all.chars().skip(skip).collect()
}

fn secs(d: Duration) -> u64 {
    d.as_secs()
}

/// Runs the gate on the repository at `repo` with sandboxes from `backend`.
pub async fn run(
    backend: &dyn Backend,
    repo: &Path,
    options: &GateOptions,
) -> Result<Record, Error> {
    let started = Instant::now();
    let mut record = Record {
        verdict: Verdict::Skipped,
        stacks: Vec::new(),
        tests_executed: 0,
        passed: 0,
        failed: 0,
        skipped: 0,
        tests: BTreeMap::new(),
        evidence: Vec::new(),
        reason: "the caller asked to skip the gate".to_owned(),
        cached: false,
        duration_ms: 0,
    };
    if options.skip {
        return Ok(record);
    }
    // The recipe cache: a green verdict for this commit and these changes.
    let key = crate::cache::key(backend, repo).await;
    if let (Some((key, _)), false) = (&key, options.no_cache) {
        if let Some(mut cached) = crate::cache::load(repo, key) {
            cached.cached = true;
            cached.duration_ms = started.elapsed().as_millis() as u64;
            return Ok(cached);
        }
    }
    let stacks = detect(repo);
    if stacks.is_empty() {
        record.verdict = Verdict::UnsupportedEcosystem;
        record.reason = "no registered stack matched: no pytest or unittest tests, package.json test script, \
                         Cargo.toml, offline go.mod, CMake/Meson/Autotools tests, Makefile test target, pom.xml or build.gradle"
            .to_owned();
        record.duration_ms = started.elapsed().as_millis() as u64;
        return Ok(record);
    }
    for stack in &stacks {
        let run = run_stack(backend, repo, stack, options).await?;
        record.stacks.push(run);
    }
    let decided = record
        .stacks
        .iter()
        .find(|s| s.verdict == Verdict::Bootstrapped)
        .or(record.stacks.first());
    if let Some(d) = decided {
        record.verdict = d.verdict;
        record.reason = if d.verdict == Verdict::Bootstrapped {
            d.reason.clone()
        } else {
            record
                .stacks
                .iter()
                .map(|s| format!("{}: {}", s.name, s.reason))
                .collect::<Vec<_>>()
                .join("; ")
        };
        if let Some(ev) = &d.evidence {
            record.tests_executed = ev.executed();
            record.passed = ev.passed;
            record.failed = ev.failed;
            record.skipped = ev.skipped;
            record.tests = ev.tests.clone();
            record.evidence = ev.lines.clone();
        }
    }
    record.duration_ms = started.elapsed().as_millis() as u64;
    // Only success is cached: a failure may be the environment's.
    if let (Some((key, head)), Verdict::Bootstrapped) = (&key, record.verdict) {
        crate::cache::store(repo, key, head, &record).map_err(|source| Error::Cache {
            path: crate::cache::manifest_path(repo),
            source,
        })?;
    }
    Ok(record)
}

async fn run_stack(
    backend: &dyn Backend,
    repo: &Path,
    stack: &Stack,
    options: &GateOptions,
) -> Result<StackRun, Error> {
    let started = Instant::now();
    let sandbox_error = |source| Error::Sandbox {
        stack: stack.name().to_owned(),
        source,
    };
    // A docker container's network is fixed at creation: with install
    // steps it gets the host's, for the test run too.
    let docker = backend.kind() == BackendKind::Docker;
    let mut spec = SandboxSpec::new(repo)
        .env("CI", "true")
        .env("NO_COLOR", "1");
    if docker && !stack.install.is_empty() {
        spec = spec.network(Network::Host);
    } else if docker {
        spec = spec.network(options.test_network);
    }
    let sandbox = backend.create(&spec).await.map_err(sandbox_error)?;
    let mut run = StackRun {
        name: stack.name().to_owned(),
        marker: stack.marker.clone(),
        install: stack.install.clone(),
        command: stack.command.clone(),
        exit_code: None,
        verdict: Verdict::FailedDeterministic,
        reason: String::new(),
        evidence: None,
        output_tail: String::new(),
        duration_ms: 0,
    };
    let exec = |script: &str, timeout: Duration, network: Network| {
        let mut req = ExecRequest::shell(script.to_owned())
            .timeout(timeout)
            .stdin(Vec::new());
        if !docker {
            req = req.network(network);
        }
        req
    };
    let mut failed_install = None;
    for step in &stack.install {
        let out = sandbox
            .exec(exec(step, options.install_timeout, Network::Host))
            .await
            .map_err(sandbox_error)?;
        run.exit_code = Some(out.shell_code());
        run.output_tail = tail(&out);
        if out.timed_out {
            failed_install = Some(format!(
                "install step `{step}` timed out after {} s",
                secs(options.install_timeout)
            ));
        } else if !out.success() {
            failed_install = Some(format!("install step `{step}` exited {}", out.shell_code()));
        }
        if failed_install.is_some() {
            break;
        }
    }
    if let Some(reason) = failed_install {
        run.reason = reason;
    } else {
        let out = sandbox
            .exec(exec(
                &stack.command,
                options.test_timeout,
                options.test_network,
            ))
            .await
            .map_err(sandbox_error)?;
        let code = out.shell_code();
        run.exit_code = Some(code);
        run.output_tail = tail(&out);
        let text = format!("{}\n{}", out.stdout_text(), out.stderr_text());
        run.evidence = stack.parse(&text);
        run.reason = match (&run.evidence, out.timed_out, code) {
            (_, true, _) => format!(
                "`{}` timed out after {} s",
                stack.command,
                secs(options.test_timeout)
            ),
            (_, _, 126 | 127) => format!(
                "`{}` could not run (exit {code}: not found or not executable)",
                stack.command
            ),
            (None, _, _) => format!(
                "no evidence of a test run in the output of `{}` (exit {code})",
                stack.command
            ),
            (Some(ev), _, _) if ev.executed() == 0 && ev.collection_errors > 0 => format!(
                "no test ran: {} test module(s) failed to load (exit {code})",
                ev.collection_errors
            ),
            (Some(ev), _, _) if ev.executed() == 0 => format!("no tests ran (exit {code})"),
            (Some(ev), _, _) => {
                run.verdict = Verdict::Bootstrapped;
                format!(
                    "`{}` ran {} test(s): {} passed, {} failed, {} errored",
                    stack.command,
                    ev.executed(),
                    ev.passed,
                    ev.failed,
                    ev.errors
                )
            }
        };
    }
    sandbox.destroy().await.map_err(sandbox_error)?;
    run.duration_ms = started.elapsed().as_millis() as u64;
    Ok(run)
}
