//! The gate: detect the stacks, run each one's install steps and test
//! command inside a sandbox, read the evidence, and conclude.

mod event;
mod options;
mod record;
mod retry;

pub use event::{GateEvent, Phase};
pub use options::GateOptions;
pub use record::{GateError, Record, StackRun};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use forq_events::{Observer, Observers};
use forq_sandbox::{Backend, ExecOutcome, ExecRequest, Limits, Network, Sandbox};
use serde::{Deserialize, Serialize};

use crate::detect::{detect, Stack, StackKind};
use crate::evidence::{Evidence, Outcome};
use crate::journal::{Journal, JournalError};
use crate::verdict::Verdict;

/// Output kept in a record, from the end (where runners summarise).
const TAIL_CHARS: usize = 4000;

/// The agentic fallback's hook: when the detected stacks did not bootstrap
/// (or none was detected), the gate asks it for recipes — install steps
/// and a test command, say from an agent that read the repository — and
/// runs each exactly as it runs a detected stack, judged by the same
/// evidence. The fallback proposes; only the runner's output can make the
/// verdict green. Every proposal failing (or none made) is
/// `failed_agentic`.
#[async_trait::async_trait]
pub trait Fallback: Send + Sync {
    /// Recipes to try on `repo`, given the record of what failed (its
    /// stacks carry each reason and output tail). Empty: nothing to try.
    async fn propose(&self, repo: &Path, failed: &Record) -> Vec<Stack>;
}

fn tail(out: &ExecOutcome) -> String {
    let all = format!("{}{}", out.stdout_text(), out.stderr_text());
    let skip = all.chars().count().saturating_sub(TAIL_CHARS);
    all.chars().skip(skip).collect()
}

fn secs(d: Duration) -> u64 {
    d.as_secs()
}

/// The line of a failed command's output that most likely says why: a
/// missing module or command, an unresolvable dependency or host, a
/// compile error, a full disk.
fn cause(output: &str) -> Option<String> {
    const SIGNS: [&str; 25] = [
        "ModuleNotFoundError:",
        "ImportError:",
        "No module named",
        "could not be resolved",
        "Could not resolve dependencies",
        "Could not transfer artifact",
        "Could not resolve host",
        "Name or service not known",
        "Temporary failure in name resolution",
        "ENOTFOUND",
        "EAI_AGAIN",
        "command not found",
        // dash's wording: `sh: 1: cargo: not found`.
        ": not found",
        // bash's, for a file whose interpreter (a script's `#!`, a
        // program's loader) is missing: `x: cannot execute: required file
        // not found`, and for one it may not run.
        "cannot execute",
        "required file not found",
        "No such file or directory",
        "no required module provides package",
        "cannot find package",
        "error[E",
        "error: could not compile",
        "CMake Error",
        "ERROR: Could not find a version",
        "No space left on device",
        "npm ERR!",
        "npm error",
    ];
    let text = crate::evidence::strip_ansi(output);
    SIGNS.iter().find_map(|sign| {
        text.lines()
            .find(|l| l.contains(sign))
            .map(|l| l.trim().chars().take(240).collect())
    })
}

/// `reason`, followed by the output's most telling line when there is one.
pub(crate) fn with_cause(reason: String, output: &str) -> String {
    match cause(output) {
        Some(line) => format!("{reason}: {line}"),
        None => reason,
    }
}

/// Runs the gate on the repository at `repo` with sandboxes from `backend`.
///
/// The run is recorded as it goes in `.forq/bootstrap/run.json` (and in
/// [`GateOptions::store`]): `running` with the current phase, then
/// `finished` with the verdict.
#[tracing::instrument(name = "gate", skip_all, fields(repo = %repo.display()))]
pub async fn run(
    backend: &dyn Backend,
    repo: &Path,
    options: &GateOptions,
) -> Result<Record, GateError> {
    let started = Instant::now();
    let mut record = Record::skipped();
    if options.skip {
        return Ok(record);
    }
    // The recipe cache: a green verdict for this commit and these changes.
    let key = crate::cache::key(backend, repo).await;
    record.head = key.as_ref().map(|(_, head)| head.clone());
    if let (Some((key, _)), false) = (&key, options.no_cache) {
        if let Some(mut cached) = crate::cache::load(repo, key) {
            cached.cached = true;
            cached.duration_ms = started.elapsed().as_millis() as u64;
            options.tell(|| GateEvent::Cached {
                record: Box::new(cached.clone()),
            });
            return Ok(cached);
        }
    }
    record.verdict = Verdict::FailedDeterministic;
    record.reason = "interrupted".to_owned();
    let journal = Journal::start(repo, options.store.as_deref(), &record)?;
    let stacks = if options.recipes.is_empty() {
        detect(repo)
    } else {
        options.recipes.clone()
    };
    options.tell(|| GateEvent::Detected {
        stacks: stacks.clone(),
    });
    // Every stack is tried and reported (a monorepo's parts each get a
    // verdict); the cheapest green one decides.
    for stack in &stacks {
        let mut run = run_stack(backend, repo, stack, options, &journal, &record).await?;
        // Toolchain drift: a second try as the failure says, each rule
        // once, at most two.
        let mut tried = Vec::new();
        while tried.len() < 2 {
            let Some(again) = run.again.take().filter(|a| !tried.contains(&a.rule)) else {
                break;
            };
            tried.push(again.rule);
            options.tell(|| GateEvent::Retry {
                stack: stack.name().to_owned(),
                rule: again.rule.to_owned(),
                reason: again.reason.clone(),
            });
            record.stacks.push(run);
            run = run_stack(backend, repo, &again.stack, options, &journal, &record).await?;
            run.retry = Some(format!("{}: {}", again.rule, again.reason));
            if let (Some(narrower), Verdict::Bootstrapped) = (again.narrower, run.verdict) {
                run.reason = format!("{narrower}: {}", run.reason);
            }
        }
        record.stacks.push(run);
    }
    conclude(&mut record, stacks.is_empty());
    // Nothing detected, or a runner found nothing to run: where the
    // package ships no tests, that is the reason.
    let found_nothing = record.stacks.iter().all(found_no_test);
    let untested = (record.verdict != Verdict::Bootstrapped && found_nothing)
        .then(|| crate::detect::shipped_without_tests(repo))
        .flatten();
    if let Some(manifest) = untested {
        // No model can set up tests that are not there.
        record.verdict = Verdict::FailedDeterministic;
        record.reason = format!(
            "no tests in the package: {manifest} declares a project, but no test file, test directory \
             or test script ships with it (registries' packages often leave them out); point forq at \
             the project's source repository instead"
        );
    }
    tracing::info!(
        verdict = record.verdict.name(),
        tests = record.tests_executed,
        "gate verdict"
    );
    if record.verdict != Verdict::Bootstrapped && untested.is_none() {
        if let Some(fallback) = &options.fallback {
            fall_back(backend, repo, options, &**fallback, &mut record, &journal).await?;
        }
    }
    if record.verdict != Verdict::Bootstrapped && untested.is_none() {
        if let Some(configurator) = &options.configurator {
            configure_into(
                backend,
                repo,
                options,
                &**configurator,
                &mut record,
                &journal,
            )
            .await?;
        }
    }
    record.duration_ms = started.elapsed().as_millis() as u64;
    journal.mark("finished", "done", &record)?;
    // Only success is cached: a failure may be the environment's.
    if let (Some((key, head)), Verdict::Bootstrapped) = (&key, record.verdict) {
        crate::cache::store(repo, key, head, &record).map_err(|source| GateError::Cache {
            path: crate::cache::manifest_path(repo),
            source,
        })?;
    }
    Ok(record)
}

/// Whether a stack's run found no test to run: none collected, or the test
/// script's own file is not there.
fn found_no_test(run: &StackRun) -> bool {
    run.reason.starts_with("no tests ran")
        || run.output_tail.lines().any(|l| {
            let missing = l.contains("Cannot find module")
                || l.contains("file or directory not found")
                || l.contains("No such file or directory");
            missing && l.to_ascii_lowercase().contains("test")
        })
}

/// Runs the recipes `fallback` proposes after the stacks failed, up to the
/// first green one; none green is `failed_agentic`.
async fn fall_back(
    backend: &dyn Backend,
    repo: &Path,
    options: &GateOptions,
    fallback: &dyn Fallback,
    record: &mut Record,
    journal: &Journal,
) -> Result<(), GateError> {
    let proposals = fallback.propose(repo, record).await;
    options.tell(|| GateEvent::Fallback {
        stacks: proposals.clone(),
    });
    let mut verdict = Verdict::FailedAgentic;
    for stack in &proposals {
        let run = run_stack(backend, repo, stack, options, journal, record).await?;
        let green = run.verdict == Verdict::Bootstrapped;
        record.stacks.push(run);
        if green {
            verdict = Verdict::Bootstrapped;
            break;
        }
    }
    conclude(record, false);
    if verdict == Verdict::FailedAgentic {
        record.verdict = verdict;
        if proposals.is_empty() {
            record.reason = format!("{}; the fallback proposed no recipe", record.reason);
        }
    }
    Ok(())
}

/// Runs the agentic fallback after the stacks failed; its stack run joins
/// the record, which it makes green or `failed_agentic`. On success the
/// recipe is written out and the configured state becomes the golden
/// (when goldens are kept).
async fn configure_into(
    backend: &dyn Backend,
    repo: &Path,
    options: &GateOptions,
    configurator: &dyn crate::Configurator,
    record: &mut Record,
    journal: &Journal,
) -> Result<(), GateError> {
    options.tell(|| GateEvent::Configuring);
    journal.mark("running", "agentic fallback", record)?;
    let nothing_detected = record.stacks.is_empty();
    let done = crate::configure::configure(
        backend,
        repo,
        options,
        configurator,
        options.configure_limits,
        record,
    )
    .await?;
    options.tell(|| GateEvent::StackDone {
        run: Box::new(done.run.clone()),
    });
    record.stacks.push(done.run);
    conclude(record, false);
    let Some(recipe) = done.recipe else {
        let last = record.stacks.last().map(|s| s.verdict);
        if last == Some(Verdict::UnsupportedEcosystem) {
            record.verdict = Verdict::UnsupportedEcosystem;
            record.reason = record
                .stacks
                .last()
                .map(|s| s.reason.clone())
                .unwrap_or_default();
            return Ok(());
        }
        record.verdict = Verdict::FailedAgentic;
        if nothing_detected {
            record.reason = format!(
                "no registered stack matched; {}",
                record.stacks.last().map_or("", |s| s.reason.as_str())
            );
        }
        return Ok(());
    };
    crate::configure::write_recipe(repo, &recipe).map_err(|source| GateError::Cache {
        path: repo
            .join(".forq")
            .join("bootstrap")
            .join("recipe.Dockerfile"),
        source,
    })?;
    if let (Some(golden), Some(sandbox)) = (&options.golden, &done.sandbox) {
        if let Some(key) =
            crate::golden_key(backend, repo, &recipe, options, &golden.identity).await
        {
            let meta = crate::golden::meta(
                &key,
                &recipe,
                &golden.identity,
                "configured",
                serde_json::json!({}),
            );
            let _lock =
                golden
                    .goldens
                    .lock(&key.name)
                    .await
                    .map_err(|source| GateError::Golden {
                        name: key.name.clone(),
                        source,
                    })?;
            golden
                .goldens
                .save(&key.name, &key.key, meta, &**sandbox)
                .await
                .map_err(|source| GateError::Golden {
                    name: key.name.clone(),
                    source,
                })?;
        }
    }
    if let Some(sandbox) = done.sandbox {
        let _ = sandbox.destroy().await;
    }
    Ok(())
}

/// The record's verdict, reason and evidence from its stacks: the green one
/// if any, else all their reasons.
fn conclude(record: &mut Record, nothing_detected: bool) {
    if nothing_detected {
        record.verdict = Verdict::UnsupportedEcosystem;
        record.reason = "no registered stack matched: no pytest or unittest tests, package.json test script, \
                         Cargo.toml, offline go.mod, CMake/Meson/Autotools tests, Makefile test target, pom.xml or build.gradle"
            .to_owned();
        return;
    }
    let green = record
        .stacks
        .iter()
        .find(|s| s.verdict == Verdict::Bootstrapped);
    let Some(decided) = green.or(record.stacks.first()) else {
        return;
    };
    record.verdict = decided.verdict;
    record.reason = if green.is_some() {
        decided.reason.clone()
    } else {
        record
            .stacks
            .iter()
            .map(|s| format!("{}: {}", s.name, s.reason))
            .collect::<Vec<_>>()
            .join("; ")
    };
    record.toolchains = decided.toolchains.clone();
    if let Some(ev) = &decided.evidence {
        record.tests_executed = ev.executed();
        record.passed = ev.passed;
        record.failed = ev.failed;
        record.skipped = ev.skipped;
        record.tests = ev.tests.clone();
        record.evidence = ev.lines.clone();
    }
}

/// The JUnit XML reports a stack's runner left in the sandbox, as (file
/// name, contents): at most 500 files of at most 8 MiB each.
async fn read_reports(sandbox: &dyn Sandbox, pattern: &str) -> Vec<(String, String)> {
    let find = format!(
        "find . -path ./.git -prune -o -path './{pattern}' -type f -size -8192k -print | head -n 500"
    );
    let Ok(out) = sandbox
        .exec(
            ExecRequest::shell(find)
                .stdin(Vec::new())
                .timeout(Duration::from_secs(60)),
        )
        .await
    else {
        return Vec::new();
    };
    let mut reports = Vec::new();
    for path in out.stdout_text().lines() {
        let path = path.trim_start_matches("./");
        // A report is the code under test's to write: capped, never a
        // fifo, never through a link.
        if let Ok(bytes) = sandbox.read_file_within(Path::new(path), 64 << 20).await {
            reports.push((
                path.to_owned(),
                String::from_utf8_lossy(&bytes).into_owned(),
            ));
        }
    }
    reports
}

/// The command that prints the version of a stack's toolchain.
fn version_command(kind: StackKind) -> Option<(&'static str, &'static str)> {
    Some(match kind {
        StackKind::Pytest | StackKind::Unittest => ("python", "python3 --version"),
        StackKind::Node => ("node", "node --version"),
        StackKind::Rust => ("cargo", "cargo --version"),
        StackKind::Go => ("go", "go version"),
        StackKind::Maven => ("maven", "mvn -v | head -n 1"),
        StackKind::Gradle => ("java", "java -version 2>&1 | head -n 1"),
        StackKind::Cmake => ("cmake", "cmake --version | head -n 1"),
        StackKind::Meson => ("meson", "meson --version"),
        StackKind::Autotools | StackKind::Make => ("make", "make --version | head -n 1"),
        _ => return None,
    })
}

#[tracing::instrument(name = "stack", skip_all, fields(stack = %stack.name()))]
async fn run_stack(
    backend: &dyn Backend,
    repo: &Path,
    stack: &Stack,
    options: &GateOptions,
    journal: &Journal,
    record: &Record,
) -> Result<StackRun, GateError> {
    let started = Instant::now();
    let sandbox_error = |source| GateError::Sandbox {
        stack: stack.name().to_owned(),
        source,
    };
    // With goldens, the tests run in a fork of the repository's golden
    // (built first when asked); a broken golden is this stack's failure.
    let mut from_golden = None;
    if let Some(golden) = &options.golden {
        match crate::golden::warm_from_golden(backend, repo, stack, options, golden).await {
            Ok(found) => from_golden = found,
            Err(GateError::GoldenUnproven { .. }) => {}
            Err(GateError::GoldenBroken { name, reason }) => {
                let mut run = StackRun::of(stack);
                run.reason = format!(
                    "the golden environment {name} is broken ({reason}); rebuild it or remove it"
                );
                run.duration_ms = started.elapsed().as_millis() as u64;
                options.tell(|| GateEvent::StackDone {
                    run: Box::new(run.clone()),
                });
                return Ok(run);
            }
            Err(e) => return Err(e),
        }
    }
    // A golden's fork has the install steps done; a fresh sandbox runs them.
    let (sandbox, used) = match from_golden {
        Some((sandbox, used)) => (sandbox, Some(used)),
        None => {
            let spec = crate::runner::spec(backend, repo, stack, options);
            (backend.create(&spec).await.map_err(sandbox_error)?, None)
        }
    };
    let run = run_stack_in(
        &*sandbox,
        !backend.per_exec_network(),
        stack,
        options,
        used.is_none(),
        Some((journal, record)),
    )
    .await;
    sandbox.destroy().await.map_err(sandbox_error)?;
    let mut run = run?;
    run.install = stack.install.clone();
    run.golden = used;
    run.duration_ms = started.elapsed().as_millis() as u64;
    options.tell(|| GateEvent::StackDone {
        run: Box::new(run.clone()),
    });
    Ok(run)
}

/// Runs `stack` in `sandbox` (its install steps when `install`, then its
/// test command) and reads the evidence; the sandbox is left as the steps
/// left it. `fixed_network`: the sandbox's network was chosen when it was
/// made (execs do not choose theirs).
pub(crate) async fn run_stack_in(
    sandbox: &dyn Sandbox,
    fixed_network: bool,
    stack: &Stack,
    options: &GateOptions,
    install: bool,
    journal: Option<(&Journal, &Record)>,
) -> Result<StackRun, GateError> {
    let started = Instant::now();
    let steps = StackSteps {
        sandbox,
        fixed_network,
        stack,
        options,
        journal,
    };
    let mut run = StackRun::of(stack);
    let failed_install = if install {
        steps.install(&mut run).await?
    } else {
        None
    };
    match failed_install {
        Some(reason) => run.reason = reason,
        None => {
            steps.test(&mut run).await?;
            if run.verdict == Verdict::Bootstrapped {
                steps.note_toolchain(&mut run).await;
            }
        }
    }
    run.duration_ms = started.elapsed().as_millis() as u64;
    Ok(run)
}

/// One stack's steps in one sandbox, each journaled and told.
struct StackSteps<'a> {
    sandbox: &'a dyn Sandbox,
    fixed_network: bool,
    stack: &'a Stack,
    options: &'a GateOptions,
    journal: Option<(&'a Journal, &'a Record)>,
}

impl StackSteps<'_> {
    fn sandbox_error(&self, source: forq_sandbox::Error) -> GateError {
        GateError::Sandbox {
            stack: self.stack.name().to_owned(),
            source,
        }
    }

    /// `script` as a request, on `network` where execs choose theirs.
    fn exec(&self, script: &str, timeout: Duration, network: Network) -> ExecRequest {
        let req = crate::runner::shell(script, timeout);
        if self.fixed_network {
            req
        } else {
            req.network(network)
        }
    }

    /// Journals and tells a step's start; when it started.
    fn start(&self, phase: Phase, command: &str) -> Result<Instant, GateError> {
        let label = match phase {
            Phase::Install => "install",
            Phase::Test => "test",
        };
        if let Some((journal, record)) = self.journal {
            journal.mark(
                "running",
                &format!("{label} {}: {command}", self.stack.name()),
                record,
            )?;
        }
        self.options.tell(|| GateEvent::Step {
            stack: self.stack.name().to_owned(),
            phase,
            command: command.to_owned(),
        });
        Ok(Instant::now())
    }

    /// Tells a step's end.
    fn done(&self, phase: Phase, command: &str, out: &ExecOutcome, at: Instant) {
        self.options.tell(|| GateEvent::StepDone {
            stack: self.stack.name().to_owned(),
            phase,
            command: command.to_owned(),
            exit_code: if out.timed_out { 124 } else { out.shell_code() },
            duration_ms: at.elapsed().as_millis() as u64,
        });
    }

    /// The install steps, in order, up to the first that fails: why it
    /// failed, if one did.
    async fn install(&self, run: &mut StackRun) -> Result<Option<String>, GateError> {
        let options = self.options;
        for command in &self.stack.install {
            let at = self.start(Phase::Install, command)?;
            let out = self
                .sandbox
                .exec(self.exec(command, options.install_timeout, options.install_network))
                .await
                .map_err(|e| self.sandbox_error(e))?;
            self.done(Phase::Install, command, &out, at);
            run.exit_code = Some(out.shell_code());
            run.output_tail = tail(&out);
            if let Some(why) = crate::runner::install_failure(&out, options.install_timeout) {
                if self.stack.kind == StackKind::Node {
                    let package = self.sandbox.read_file(Path::new("package.json")).await.ok();
                    let package = package.as_deref().map(String::from_utf8_lossy);
                    run.again = retry::after_install(self.stack, package.as_deref());
                }
                return Ok(Some(format!("install step `{command}` {why}")));
            }
        }
        Ok(None)
    }

    /// The test command, within the whole-run and per-test budgets (a
    /// hanging test is killed, named, failed, and the suite runs on
    /// without it where it can); its evidence and verdict into `run`.
    async fn test(&self, run: &mut StackRun) -> Result<(), GateError> {
        let (stack, options) = (self.stack, self.options);
        let at = self.start(Phase::Test, &stack.command)?;
        let limits = options.test_limits(stack);
        let network = (!self.fixed_network).then_some(options.test_network);
        let mut suite =
            crate::hang::run_suite(self.sandbox, stack, &stack.command, &limits, network)
                .await
                .map_err(|e| self.sandbox_error(e))?;
        // Silent past the per-test budget with no test to name: a slow
        // start (a large suite still collecting, a loaded machine) looks
        // the same as a hang. Once more with four times the budget before
        // the silence is judged.
        if let (true, true, Some(idle)) = (suite.timed_out, suite.out.idle_timed_out, limits.idle) {
            let mut patient = limits;
            patient.idle = Some((idle * 4).max(std::time::Duration::from_secs(4)));
            suite = crate::hang::run_suite(self.sandbox, stack, &stack.command, &patient, network)
                .await
                .map_err(|e| self.sandbox_error(e))?;
        }
        self.done(Phase::Test, &stack.command, &suite.out, at);
        if !suite.hung.is_empty() {
            options.tell(|| GateEvent::TestsHung {
                stack: stack.name().to_owned(),
                tests: suite.hung.clone(),
                idle_ms: limits.idle.map(|d| d.as_millis() as u64),
            });
        }
        run.exit_code = Some(suite.out.shell_code());
        run.output_tail = tail(&suite.out);
        run.evidence = suite.evidence.clone();
        // Build tools that name no passing test on the console: their XML
        // reports are the per-test evidence.
        if let Some(pattern) = stack.reports() {
            let reports = read_reports(self.sandbox, pattern).await;
            if let Some(mut xml) = crate::evidence::junit_reports(&reports) {
                if let Some(console) = &run.evidence {
                    xml.collection_errors = console.collection_errors;
                    xml.lines.splice(0..0, console.lines.iter().cloned());
                }
                xml.runner = stack.name().to_owned();
                run.evidence = Some(xml);
            }
        }
        let (verdict, mut reason) =
            judge_suite(stack, options, &limits, &suite, run.evidence.as_ref());
        if matches!(suite.out.shell_code(), 126 | 127) && !suite.timed_out {
            if let Some(seen) = self.where_is(&stack.command).await {
                reason.push_str(&format!(" ({seen})"));
            }
        }
        if verdict != Verdict::Bootstrapped {
            run.again = retry::after(stack, &suite.text);
        }
        run.verdict = verdict;
        run.reason = reason;
        Ok(())
    }

    /// What the sandbox makes of `command`'s program when it could not be
    /// run (exit 126 or 127): where `PATH` finds it and what that file is,
    /// or the `PATH` it is not on. A command that is there on the host and
    /// missing in the sandbox then says which layer lacks it.
    async fn where_is(&self, command: &str) -> Option<String> {
        let program = command
            .split_whitespace()
            .find(|word| !word.contains('='))?
            .to_owned();
        const PROBE: &str = r#"p=$(command -v "$FORQ_PROGRAM") || { echo "$FORQ_PROGRAM is not on PATH=$PATH"; exit 0; }
case $p in */*) ;; *) echo "$FORQ_PROGRAM is a shell builtin or function here"; exit 0 ;; esac
echo "$FORQ_PROGRAM is $p: $(ls -lL "$p" 2>&1 | head -n 1)""#;
        let out = self
            .sandbox
            .exec(
                self.exec(PROBE, Duration::from_secs(30), Network::None)
                    .env("FORQ_PROGRAM", program),
            )
            .await
            .ok()?;
        let seen = out.stdout_text();
        let line = seen.lines().find(|l| !l.trim().is_empty())?;
        Some(format!("in the sandbox, {}", line.trim()))
    }

    /// The toolchain's version, for the record.
    async fn note_toolchain(&self, run: &mut StackRun) {
        let Some((tool, command)) = version_command(self.stack.kind) else {
            return;
        };
        let out = self
            .sandbox
            .exec(self.exec(command, Duration::from_secs(30), Network::None))
            .await;
        if let Some(version) = out
            .ok()
            .filter(ExecOutcome::success)
            .map(|o| o.stdout_text().trim().to_owned())
            .filter(|v| !v.is_empty())
        {
            run.toolchains.insert(tool.to_owned(), version);
        }
    }
}

/// The verdict a test run earns, and why: bootstrapped only when the
/// evidence shows tests ran.
fn judge_suite(
    stack: &Stack,
    options: &GateOptions,
    limits: &crate::TestLimits,
    suite: &crate::hang::Suite,
    evidence: Option<&Evidence>,
) -> (Verdict, String) {
    let code = suite.out.shell_code();
    let text = &suite.text;
    let failed = |reason| (Verdict::FailedDeterministic, reason);
    match (evidence, suite.timed_out, code) {
        (_, true, _) if suite.out.idle_timed_out => failed(format!(
            "`{}` printed nothing for {} s and no test could be named as hanging",
            stack.command,
            limits.idle.map_or(0, secs)
        )),
        (_, true, _) => failed(format!(
            "`{}` timed out after {} s",
            stack.command,
            secs(options.test_timeout)
        )),
        (_, _, 126 | 127) => failed(with_cause(
            format!(
                "`{}` could not run (exit {code}: not found or not executable)",
                stack.command
            ),
            text,
        )),
        (None, _, _) => failed(with_cause(
            format!(
                "no evidence of a test run in the output of `{}` (exit {code})",
                stack.command
            ),
            text,
        )),
        (Some(ev), _, _) if ev.executed() == 0 && ev.collection_errors > 0 => failed(with_cause(
            format!(
                "no test ran: {} test module(s) failed to load (exit {code})",
                ev.collection_errors
            ),
            text,
        )),
        (Some(ev), _, _) if ev.executed() == 0 => failed(format!("no tests ran (exit {code})")),
        (Some(ev), _, _) => {
            let mut hung = match suite.hung.len() {
                0 => String::new(),
                n => format!(" ({n} hung: {})", suite.hung.join(", ")),
            };
            if !suite.crashed.is_empty() {
                hung.push_str(&format!(
                    " ({} crashed: {})",
                    suite.crashed.len(),
                    suite.crashed.join(", ")
                ));
            }
            (
                Verdict::Bootstrapped,
                format!(
                    "`{}` ran {} test(s): {} passed, {} failed{hung}, {} errored",
                    stack.command,
                    ev.executed(),
                    ev.passed,
                    ev.failed,
                    ev.errors
                ),
            )
        }
    }
}
