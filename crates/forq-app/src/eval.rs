//! A harness for benchmark authors: instances in SWE-bench's format in,
//! predictions SWE-bench's own harness reads out, and forq's own verdict
//! on each — resolved or not, with cost and time.
//!
//! Each instance is checked out at its `base_commit` from a local
//! repository (`repos/NAME` or `repos/OWNER__NAME`) or cloned from
//! GitHub, fixed by a [`Pipeline`] run (the same as `forq queue`'s:
//! gate, oracle, search or agent, commit), and judged on a fresh checkout:
//! the prediction applied, then the `test_patch`, then the repository's
//! tests through forq-bootstrap's runner; it is resolved when every
//! `FAIL_TO_PASS` and every `PASS_TO_PASS` test passes.
//!
//! Under `out`: `results.jsonl` (one line per instance, the record a
//! rerun resumes from), `predictions.jsonl` (`instance_id`,
//! `model_name_or_path`, `model_patch`), `report.json`, and `state/` (the
//! runs, as `forq runs` reads them).
//!
//! ```
//! use forq_app::eval::read_instances;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let file = dir.path().join("instances.jsonl");
//! std::fs::write(&file, concat!(
//!     r#"{"instance_id": "calc-1", "repo": "forq/calc", "base_commit": "0123abc", "#,
//!     r#""problem_statement": "add() subtracts", "test_patch": "", "#,
//!     r#""FAIL_TO_PASS": "[\"tests.test_calc.CalcTest.test_add\"]", "PASS_TO_PASS": []}"#,
//!     "\n",
//! )).unwrap();
//! let instances = read_instances(&file).unwrap();
//! assert_eq!(instances[0].fail_to_pass, ["tests.test_calc.CalcTest.test_add"]);
//! assert_eq!(instances[0].repo_dir_names(), ["calc", "forq__calc"]);
//! ```

use std::collections::{BTreeMap, HashSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Deserializer, Serialize};
use tokio::sync::Semaphore;

use crate::config::Config;
use crate::failure::FailureKind;
use crate::git;
use crate::pipeline::Pipeline;
use crate::store::{Action, IssueRecord, NewRun, State};

/// One benchmark instance, as SWE-bench writes it (fields forq does not
/// read are kept in `extra`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Instance {
    /// Its id (`owner__repo-1234`).
    pub instance_id: String,
    /// The repository, `owner/name`.
    pub repo: String,
    /// The commit the issue is fixed from.
    pub base_commit: String,
    /// The issue's text.
    pub problem_statement: String,
    /// The tests that decide it, as a diff (applied after the prediction).
    #[serde(default)]
    pub test_patch: String,
    /// The reference fix (not used to predict).
    #[serde(default)]
    pub patch: String,
    /// Tests that must go from failing to passing.
    #[serde(rename = "FAIL_TO_PASS", default, deserialize_with = "test_list")]
    pub fail_to_pass: Vec<String>,
    /// Tests that must keep passing.
    #[serde(rename = "PASS_TO_PASS", default, deserialize_with = "test_list")]
    pub pass_to_pass: Vec<String>,
    /// Everything else the file holds (`version`, `created_at`, …).
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// A list of test ids, written as a JSON list or (as SWE-bench's dataset
/// does) as a string holding one.
fn test_list<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either {
        List(Vec<String>),
        Text(String),
    }
    match Either::deserialize(d)? {
        Either::List(l) => Ok(l),
        Either::Text(t) if t.trim().is_empty() => Ok(Vec::new()),
        Either::Text(t) => serde_json::from_str(&t).map_err(serde::de::Error::custom),
    }
}

impl Instance {
    /// The directory names a local copy of its repository may have under
    /// `--repos`: `name`, then `owner__name`.
    pub fn repo_dir_names(&self) -> Vec<String> {
        match self.repo.split_once('/') {
            Some((owner, name)) => vec![name.to_owned(), format!("{owner}__{name}")],
            None => vec![self.repo.clone()],
        }
    }

    /// A name safe as one path component.
    fn dir_name(&self) -> String {
        self.instance_id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    }
}

/// Why the harness could not run at all (an instance's own failure is in
/// its result, not here).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvalError {
    /// The instances file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A line of the instances file is not an instance.
    #[error("{path}:{line}: not an instance: {message}")]
    Instance {
        /// The file.
        path: PathBuf,
        /// The line, from 1.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// Two instances have one id.
    #[error("{path}:{line}: instance {id} appears twice")]
    Duplicate {
        /// The file.
        path: PathBuf,
        /// The second line, from 1.
        line: usize,
        /// The id.
        id: String,
    },
    /// The output directory could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// Reads a JSONL file of instances (blank lines skipped).
pub fn read_instances(path: &Path) -> Result<Vec<Instance>, EvalError> {
    let text = std::fs::read_to_string(path).map_err(|source| EvalError::Read {
        path: path.to_owned(),
        source,
    })?;
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let instance: Instance = serde_json::from_str(line).map_err(|e| EvalError::Instance {
            path: path.to_owned(),
            line: i + 1,
            message: e.to_string(),
        })?;
        if !seen.insert(instance.instance_id.clone()) {
            return Err(EvalError::Duplicate {
                path: path.to_owned(),
                line: i + 1,
                id: instance.instance_id,
            });
        }
        out.push(instance);
    }
    Ok(out)
}

/// How an instance ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Every FAIL_TO_PASS and PASS_TO_PASS test passes with the prediction.
    Resolved,
    /// The prediction is missing, does not apply, or leaves a test failing.
    Unresolved,
    /// The instance could not be set up: its repository or base commit is
    /// missing, its test patch does not apply, or its tests do not run.
    /// Not counted as unresolved.
    SetupFailed,
    /// forq or the machine failed (infrastructure); a rerun tries it again.
    Error,
}

impl Status {
    /// Whether a rerun keeps this result rather than trying again.
    fn is_final(self) -> bool {
        self != Status::Error
    }
}

/// The tests of one list, by outcome.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Checked {
    /// Those that passed.
    pub passed: Vec<String>,
    /// Those that failed, errored, were skipped, or did not run.
    pub failed: Vec<String>,
}

/// One instance's result (a line of `results.jsonl`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstanceResult {
    /// The instance.
    pub instance_id: String,
    /// How it ended.
    pub status: Status,
    /// Why, in a sentence.
    pub reason: String,
    /// The run that predicted it, if one was made.
    pub run: Option<String>,
    /// Where that run ended.
    pub state: Option<State>,
    /// The class of why the run stopped short, if it did.
    pub failure: Option<FailureKind>,
    /// The prediction (empty when there is none).
    pub model_patch: String,
    /// Lines added plus removed by it.
    pub patch_lines: usize,
    /// Dollars the run spent on models.
    pub cost_usd: f64,
    /// Seconds to predict.
    pub predict_s: f64,
    /// Seconds to evaluate.
    pub evaluate_s: f64,
    /// FAIL_TO_PASS, judged.
    pub fail_to_pass: Checked,
    /// PASS_TO_PASS, judged.
    pub pass_to_pass: Checked,
}

/// The whole evaluation (`report.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The `model_name_or_path` of the predictions.
    pub model_name: String,
    /// Instances in the file.
    pub instances: usize,
    /// Resolved.
    pub resolved: usize,
    /// Unresolved.
    pub unresolved: usize,
    /// Could not be set up.
    pub setup_failed: usize,
    /// forq or the machine failed.
    pub errors: usize,
    /// Resolved over all instances.
    pub resolved_rate: f64,
    /// Dollars over all instances.
    pub cost_usd: f64,
    /// Seconds over all instances (predict plus evaluate), summed.
    pub instance_s: f64,
    /// Every instance's result, in the file's order (without patches).
    pub results: Vec<InstanceResult>,
}

/// What the harness is told.
#[derive(Debug, Clone)]
pub struct EvalOptions {
    /// Where results, predictions, the report and the runs go.
    pub out: PathBuf,
    /// Local repositories (`NAME` or `OWNER__NAME`); without, each is
    /// cloned from `https://github.com/OWNER/NAME`.
    pub repos: Option<PathBuf>,
    /// Let forq see the tests: the test patch is applied before the fix
    /// and FAIL_TO_PASS are its targets (a repair benchmark's setting; not
    /// comparable with SWE-bench's, where the tests are hidden).
    pub with_tests: bool,
    /// `model_name_or_path` in the predictions.
    pub model_name: String,
    /// Instances at once.
    pub jobs: usize,
    /// Cap on one run of the tests when evaluating.
    pub test_timeout: Duration,
}

/// Runs instances through a pipeline.
#[derive(Debug)]
pub struct Harness {
    pipeline: Pipeline,
    options: EvalOptions,
    /// `results.jsonl` is appended by one instance at a time.
    write: Mutex<()>,
}

/// The first words of the reason a gate that is not green gives
/// (forq-search's `FixError::NotBootstrapped`).
const NOT_BOOTSTRAPPED: &str = "the bootstrap gate is not green";

impl Harness {
    /// A harness over `pipeline` (whose store and state directory should be
    /// under `options.out`), with `config` for every run (triage is turned
    /// off: every instance is fixed).
    pub fn new(pipeline: Pipeline, mut config: Config, options: EvalOptions) -> Harness {
        config.triage.enabled = false;
        Harness {
            pipeline: pipeline.config(Some(config)),
            options,
            write: Mutex::new(()),
        }
    }

    /// The results a previous run of the harness left in `out`, by id
    /// (a line cut short by a kill is dropped).
    pub fn previous(&self) -> BTreeMap<String, InstanceResult> {
        let path = self.options.out.join("results.jsonl");
        let text = std::fs::read_to_string(path).unwrap_or_default();
        text.lines()
            .filter_map(|l| serde_json::from_str::<InstanceResult>(l).ok())
            .map(|r| (r.instance_id.clone(), r))
            .collect()
    }

    /// Predicts and evaluates every instance not already done (a result
    /// other than `error` in `results.jsonl`), `jobs` at once, calling
    /// `done` after each; writes `predictions.jsonl` and `report.json`.
    pub async fn run(
        self: Arc<Self>,
        instances: &[Instance],
        done: Arc<dyn Fn(&InstanceResult) + Send + Sync>,
    ) -> Result<Report, EvalError> {
        let out = &self.options.out;
        std::fs::create_dir_all(out.join("work")).map_err(|source| EvalError::Write {
            path: out.join("work"),
            source,
        })?;
        let previous = self.previous();
        let gate = Arc::new(Semaphore::new(self.options.jobs.max(1)));
        let mut tasks = tokio::task::JoinSet::new();
        for instance in instances {
            if previous
                .get(&instance.instance_id)
                .is_some_and(|r| r.status.is_final())
            {
                continue;
            }
            let (me, instance, gate, done) =
                (self.clone(), instance.clone(), gate.clone(), done.clone());
            tasks.spawn(async move {
                let _slot = gate.acquire_owned().await;
                let result = me.one(&instance).await;
                me.record(&result)?;
                done(&result);
                Ok::<_, EvalError>(())
            });
        }
        while let Some(joined) = tasks.join_next().await {
            if let Ok(Err(e)) = joined {
                return Err(e);
            }
        }
        self.finish(instances)
    }

    /// Appends `result` to `results.jsonl` and rewrites
    /// `predictions.jsonl` from every result so far.
    fn record(&self, result: &InstanceResult) -> Result<(), EvalError> {
        let _one = self.write.lock().unwrap_or_else(|p| p.into_inner());
        let path = self.options.out.join("results.jsonl");
        let write = |path: &Path, source| EvalError::Write {
            path: path.to_owned(),
            source,
        };
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| write(&path, e))?;
        let line = serde_json::to_string(result).unwrap_or_default();
        writeln!(file, "{line}").map_err(|e| write(&path, e))?;
        file.sync_data().map_err(|e| write(&path, e))?;
        self.write_predictions()
    }

    fn write_predictions(&self) -> Result<(), EvalError> {
        let path = self.options.out.join("predictions.jsonl");
        let mut text = String::new();
        for r in self.previous().values() {
            let line = serde_json::json!({
                "instance_id": r.instance_id,
                "model_name_or_path": self.options.model_name,
                "model_patch": r.model_patch,
            });
            text.push_str(&line.to_string());
            text.push('\n');
        }
        write_atomically(&path, &text)
    }

    /// The report over `instances`, written to `report.json`.
    fn finish(&self, instances: &[Instance]) -> Result<Report, EvalError> {
        self.write_predictions()?;
        let previous = self.previous();
        let results: Vec<InstanceResult> = instances
            .iter()
            .filter_map(|i| previous.get(&i.instance_id).cloned())
            .map(|mut r| {
                r.model_patch.clear();
                r
            })
            .collect();
        let count = |s: Status| results.iter().filter(|r| r.status == s).count();
        let report = Report {
            model_name: self.options.model_name.clone(),
            instances: instances.len(),
            resolved: count(Status::Resolved),
            unresolved: count(Status::Unresolved),
            setup_failed: count(Status::SetupFailed),
            errors: count(Status::Error),
            resolved_rate: if instances.is_empty() {
                0.0
            } else {
                count(Status::Resolved) as f64 / instances.len() as f64
            },
            cost_usd: results.iter().map(|r| r.cost_usd).sum(),
            instance_s: results.iter().map(|r| r.predict_s + r.evaluate_s).sum(),
            results,
        };
        let text = serde_json::to_string_pretty(&report).unwrap_or_default();
        write_atomically(&self.options.out.join("report.json"), &text)?;
        Ok(report)
    }

    /// One instance, start to end: nothing it does fails the harness.
    async fn one(&self, instance: &Instance) -> InstanceResult {
        let mut result = InstanceResult {
            instance_id: instance.instance_id.clone(),
            status: Status::Error,
            reason: String::new(),
            run: None,
            state: None,
            failure: None,
            model_patch: String::new(),
            patch_lines: 0,
            cost_usd: 0.0,
            predict_s: 0.0,
            evaluate_s: 0.0,
            fail_to_pass: Checked::default(),
            pass_to_pass: Checked::default(),
        };
        let work = self.options.out.join("work").join(instance.dir_name());
        let _ = std::fs::remove_dir_all(&work);
        let started = Instant::now();
        let setup = async {
            let source = self.source(instance).await?;
            let checkout = work.join("checkout");
            checkout_at(&source, &checkout, &instance.base_commit).await?;
            if self.options.with_tests && !instance.test_patch.trim().is_empty() {
                apply(&checkout, &instance.test_patch, "the test patch").await?;
                git::git(&checkout, &["add", "-A"])
                    .await
                    .map_err(|e| e.to_string())?;
                git::git(&checkout, &["commit", "-q", "-m", "test patch"])
                    .await
                    .map_err(|e| e.to_string())?;
            }
            Ok::<_, String>((source, checkout))
        }
        .await;
        let (source, checkout) = match setup {
            Ok(s) => s,
            Err(why) => {
                result.status = Status::SetupFailed;
                result.reason = why;
                return result;
            }
        };
        if let Err(e) = self.predict(instance, &checkout, &mut result).await {
            result.status = Status::Error;
            result.reason = e;
            return result;
        }
        result.predict_s = round(started.elapsed().as_secs_f64());
        let run_said = result.reason.clone();
        let reached = result.failure;
        let evaluated = Instant::now();
        self.evaluate(instance, &source, &work.join("eval"), &mut result)
            .await;
        result.evaluate_s = round(evaluated.elapsed().as_secs_f64());
        // A run the machine broke is an error (rerun); one whose
        // repository's tests never ran could not be set up.
        if result.status != Status::Resolved {
            match reached {
                Some(FailureKind::Infrastructure) => {
                    result.status = Status::Error;
                    result.reason = format!("the run failed: {run_said}");
                }
                Some(FailureKind::Repository) if run_said.starts_with(NOT_BOOTSTRAPPED) => {
                    result.status = Status::SetupFailed;
                    result.reason = run_said;
                }
                _ => {}
            }
        }
        let _ = std::fs::remove_dir_all(&work);
        result
    }

    /// The local repository of `instance`: under `--repos`, else a clone
    /// from GitHub kept under `out/repos` for the instances after it.
    async fn source(&self, instance: &Instance) -> Result<PathBuf, String> {
        if let Some(repos) = &self.options.repos {
            let names = instance.repo_dir_names();
            return names
                .iter()
                .map(|n| repos.join(n))
                .find(|p| p.join(".git").exists() || p.join("HEAD").exists())
                .ok_or_else(|| {
                    format!(
                        "no repository for {} under {}: expected a git repository named {}",
                        instance.repo,
                        repos.display(),
                        names.join(" or ")
                    )
                });
        }
        let dest = self
            .options
            .out
            .join("repos")
            .join(instance.repo.replace('/', "__"));
        if dest.join(".git").exists() {
            return Ok(dest);
        }
        let url = format!("https://github.com/{}.git", instance.repo);
        let parent = dest.parent().unwrap_or(&self.options.out).to_owned();
        std::fs::create_dir_all(&parent).map_err(|e| e.to_string())?;
        let dest_s = dest.to_string_lossy().into_owned();
        git::git(&parent, &["clone", "--quiet", &url, &dest_s])
            .await
            .map_err(|e| format!("cannot clone {url}: {e}"))?;
        Ok(dest)
    }

    /// The run that predicts `instance` from `checkout`: its patch, cost,
    /// state and failure go into `result` (the reason is the run's).
    async fn predict(
        &self,
        instance: &Instance,
        checkout: &Path,
        result: &mut InstanceResult,
    ) -> Result<(), String> {
        let title = instance
            .problem_statement
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or(&instance.instance_id)
            .trim_start_matches('#')
            .trim();
        let title: String = title.chars().take(120).collect();
        let new = NewRun {
            issue: IssueRecord {
                id: instance.instance_id.clone(),
                title,
                body: instance.problem_statement.clone(),
                source: "eval".to_owned(),
                targets: if self.options.with_tests {
                    instance.fail_to_pass.clone()
                } else {
                    Vec::new()
                },
                ..IssueRecord::default()
            },
            repo: checkout.to_string_lossy().into_owned(),
            action: Action::Fix,
            context: Vec::new(),
            requires: Vec::new(),
        };
        let store = self.pipeline.store();
        let run = store.create(&new).map_err(|e| e.to_string())?;
        result.run = Some(run.id.to_string());
        let run = self
            .pipeline
            .execute(&run.id)
            .await
            .map_err(|e| e.to_string())?;
        result.state = Some(run.state);
        result.failure = run.failure;
        result.reason = run.reason.clone();
        result.cost_usd = run.cost_usd;
        let patch = self.pipeline.run_dir(&run.id).join("fix.patch");
        if run.state.has_patch() {
            result.model_patch = std::fs::read_to_string(&patch).unwrap_or_default();
            result.patch_lines = run.patch_lines.unwrap_or(0);
        }
        Ok(())
    }

    /// Judges `result.model_patch` on a fresh checkout in `dir`.
    async fn evaluate(
        &self,
        instance: &Instance,
        source: &Path,
        dir: &Path,
        result: &mut InstanceResult,
    ) {
        let unjudged = |result: &mut InstanceResult| {
            result.fail_to_pass.failed = instance.fail_to_pass.clone();
            result.pass_to_pass.failed = instance.pass_to_pass.clone();
        };
        result.status = Status::Unresolved;
        if result.model_patch.trim().is_empty() {
            unjudged(result);
            result.reason = match result.reason.as_str() {
                "" => "no prediction".to_owned(),
                why => format!("no prediction: {why}"),
            };
            return;
        }
        if let Err(why) = checkout_at(source, dir, &instance.base_commit).await {
            result.status = Status::Error;
            result.reason = why;
            return;
        }
        if let Err(why) = apply(dir, &result.model_patch, "the prediction").await {
            unjudged(result);
            result.reason = why;
            return;
        }
        if !instance.test_patch.trim().is_empty() {
            if let Err(why) = apply(dir, &instance.test_patch, "the test patch").await {
                unjudged(result);
                result.reason = format!("{why} (over the prediction)");
                return;
            }
        }
        let mut gate = forq_bootstrap::GateOptions::default();
        gate.no_cache = true;
        gate.test_timeout = self.options.test_timeout;
        let record = match forq_bootstrap::run(&**self.pipeline.backend(), dir, &gate).await {
            Ok(r) => r,
            Err(e) => {
                result.status = Status::Error;
                result.reason = format!("the tests could not be run: {e}");
                return;
            }
        };
        let judge = |ids: &[String]| {
            let mut c = Checked::default();
            for id in ids {
                if record.tests.get(id) == Some(&forq_bootstrap::Outcome::Passed) {
                    c.passed.push(id.clone());
                } else {
                    c.failed.push(id.clone());
                }
            }
            c
        };
        result.fail_to_pass = judge(&instance.fail_to_pass);
        result.pass_to_pass = judge(&instance.pass_to_pass);
        let failing = result.fail_to_pass.failed.len() + result.pass_to_pass.failed.len();
        if failing == 0 && !instance.fail_to_pass.is_empty() {
            result.status = Status::Resolved;
            result.reason = format!(
                "{} FAIL_TO_PASS and {} PASS_TO_PASS tests pass",
                result.fail_to_pass.passed.len(),
                result.pass_to_pass.passed.len()
            );
        } else if instance.fail_to_pass.is_empty() {
            result.reason = "the instance names no FAIL_TO_PASS test".to_owned();
        } else {
            let first = result
                .fail_to_pass
                .failed
                .iter()
                .chain(&result.pass_to_pass.failed)
                .next()
                .cloned()
                .unwrap_or_default();
            result.reason = format!(
                "{failing} test(s) still fail with the prediction ({}), first {first}",
                record.verdict.name()
            );
        }
    }
}

/// `source` cloned into `dir` (shared objects, no copy) at `commit`.
async fn checkout_at(source: &Path, dir: &Path, commit: &str) -> Result<(), String> {
    let parent = dir.parent().unwrap_or(Path::new("/"));
    std::fs::create_dir_all(parent)
        .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    let (from, to) = (source.to_string_lossy(), dir.to_string_lossy());
    git::git(
        parent,
        &["clone", "--quiet", "--shared", "--no-checkout", &from, &to],
    )
    .await
    .map_err(|e| format!("cannot clone {}: {e}", source.display()))?;
    git::git(dir, &["checkout", "--quiet", "--detach", commit])
        .await
        .map_err(|_| format!("base commit {commit} is not in {}", source.display()))?;
    Ok(())
}

/// Applies the diff `patch` in `dir`; `what` names it in the error.
async fn apply(dir: &Path, patch: &str, what: &str) -> Result<(), String> {
    let file = dir.join(".git").join("forq-eval.patch");
    std::fs::write(&file, patch).map_err(|e| format!("cannot write {what}: {e}"))?;
    let file_s = file.to_string_lossy().into_owned();
    let applied = git::git(dir, &["apply", "--whitespace=nowarn", &file_s]).await;
    let _ = std::fs::remove_file(&file);
    applied.map(drop).map_err(|e| match e {
        git::GitError::Failed { message, .. } => format!("{what} does not apply: {message}"),
        e => format!("{what} does not apply: {e}"),
    })
}

/// Writes `text` to `path` through a temporary file and a rename: a
/// reader never sees half of it.
fn write_atomically(path: &Path, text: &str) -> Result<(), EvalError> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|source| EvalError::Write {
            path: path.to_owned(),
            source,
        })
}

fn round(s: f64) -> f64 {
    (s * 10.0).round() / 10.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_lists_read_as_lists_or_as_strings_holding_one() {
        let a: Instance = serde_json::from_str(
            r#"{"instance_id":"a","repo":"o/r","base_commit":"c","problem_statement":"p",
                "FAIL_TO_PASS":["t1"],"PASS_TO_PASS":"[\"t2\", \"t3\"]","version":"1.0"}"#,
        )
        .unwrap();
        assert_eq!(a.fail_to_pass, ["t1"]);
        assert_eq!(a.pass_to_pass, ["t2", "t3"]);
        assert_eq!(a.extra["version"], "1.0");
        let back = serde_json::to_value(&a).unwrap();
        assert_eq!(back["FAIL_TO_PASS"], serde_json::json!(["t1"]));
        assert_eq!(back["version"], "1.0");
    }

    #[test]
    fn a_bad_line_and_a_duplicate_id_are_refused_with_their_line() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("i.jsonl");
        let one = r#"{"instance_id":"a","repo":"o/r","base_commit":"c","problem_statement":"p"}"#;
        std::fs::write(&file, format!("{one}\n\n{{\"repo\": 1}}\n")).unwrap();
        let err = read_instances(&file).unwrap_err().to_string();
        assert!(err.contains("i.jsonl:3: not an instance"), "{err}");
        std::fs::write(&file, format!("{one}\n{one}\n")).unwrap();
        let err = read_instances(&file).unwrap_err().to_string();
        assert!(err.contains("i.jsonl:2: instance a appears twice"), "{err}");
    }

    #[test]
    fn ids_become_safe_directory_names() {
        let i: Instance = serde_json::from_str(
            r#"{"instance_id":"o/r#1 x","repo":"r","base_commit":"c","problem_statement":"p"}"#,
        )
        .unwrap();
        assert_eq!(i.dir_name(), "o_r_1_x");
        assert_eq!(i.repo_dir_names(), ["r"]);
    }
}
