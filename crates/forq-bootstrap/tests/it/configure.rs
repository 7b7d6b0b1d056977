//! The agentic fallback's loop, with a scripted configurator (the model's
//! side is forq-agent's, tested there over a loopback server): success
//! only from the gate's evidence, rollback by fork, caps, the transcript,
//! the recipe replayed from scratch.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, Mutex};

use forq_bootstrap::{ConfigStep, Configurator, ConfigureContext, GateOptions, Verdict};

use super::{gate, repo};

/// Answers from a script; `None` gives up; an empty script gives up too.
struct Script(Mutex<VecDeque<Option<ConfigStep>>>);

impl Script {
    fn new(steps: Vec<Option<ConfigStep>>) -> Arc<Script> {
        Arc::new(Script(Mutex::new(steps.into())))
    }
}

#[async_trait::async_trait]
impl Configurator for Script {
    async fn next(&self, _cx: &ConfigureContext<'_>) -> Result<Option<ConfigStep>, String> {
        Ok(self.0.lock().unwrap().pop_front().flatten())
    }
}

fn run(command: &str) -> Option<ConfigStep> {
    Some(ConfigStep::Run {
        command: command.to_owned(),
    })
}

fn test(command: &str) -> Option<ConfigStep> {
    Some(ConfigStep::Test {
        command: command.to_owned(),
    })
}

const CHECKS: &str = "python3 -m unittest discover -s qa -p 'check_*.py' -v";

/// Tests where detection does not look: `qa/check_*.py`.
fn unusual() -> tempfile::TempDir {
    repo(&[
        ("mathlib.py", "def double(x):\n    return 2 * x\n"),
        (
            "qa/check_math.py",
            "import sys, unittest\nsys.path.insert(0, '.')\nfrom mathlib import double\n\n\
             class Double(unittest.TestCase):\n    def test_two(self):\n        self.assertEqual(double(2), 4)\n",
        ),
    ])
}

fn with(script: Arc<Script>, max_steps: u32) -> GateOptions {
    let mut options = GateOptions::default();
    options.configurator = Some(script);
    options.configure_limits.max_steps = max_steps;
    options
}

fn transcript(repo: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(forq_bootstrap::transcript_path(repo))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test]
async fn a_configuration_bootstraps_what_detection_missed_and_its_recipe_replays() {
    let dir = unusual();
    // Without the fallback: nothing detected.
    let record = gate(dir.path(), GateOptions::default()).await;
    assert_eq!(record.verdict, Verdict::UnsupportedEcosystem, "{record:#?}");
    let script = Script::new(vec![
        Some(ConfigStep::List {
            path: ".".to_owned(),
        }),
        run("mkdir -p .forq/tools && echo ready > .forq/tools/state"),
        test(CHECKS),
    ]);
    let record = gate(dir.path(), with(script, 12)).await;
    assert_eq!(record.verdict, Verdict::Bootstrapped, "{record:#?}");
    assert_eq!(record.tests_executed, 1);
    let stack = record.green_stack().unwrap();
    assert_eq!(stack.command, CHECKS);
    assert_eq!(
        stack.install,
        ["mkdir -p .forq/tools && echo ready > .forq/tools/state"]
    );
    let steps = transcript(dir.path());
    assert_eq!(steps.len(), 3, "{steps:?}");
    assert!(steps[0]["observation"]
        .as_str()
        .unwrap()
        .contains("qa/check_math.py"));
    let recipe =
        std::fs::read_to_string(dir.path().join(".forq/bootstrap/recipe.Dockerfile")).unwrap();
    assert!(
        recipe.contains("RUN mkdir -p .forq/tools && echo ready > .forq/tools/state"),
        "{recipe}"
    );
    assert!(recipe.contains(CHECKS), "{recipe}");
    // The recipe, replayed from scratch by the gate alone.
    let record = gate(dir.path(), GateOptions::default().recipes(vec![stack])).await;
    assert_eq!(record.verdict, Verdict::Bootstrapped, "{record:#?}");
}

#[tokio::test]
async fn a_failed_step_is_rolled_back_to_the_last_good_state() {
    let dir = unusual();
    let script = Script::new(vec![
        Some(ConfigStep::Write {
            path: "conf/keep.txt".to_owned(),
            contents: "kept\n".to_owned(),
        }),
        run("touch half-done && false"),
        // Passes only if the write stayed and the failed step's file went.
        run("test -e conf/keep.txt && ! test -e half-done"),
        test(CHECKS),
    ]);
    let record = gate(dir.path(), with(script, 12)).await;
    assert_eq!(record.verdict, Verdict::Bootstrapped, "{record:#?}");
    let steps = transcript(dir.path());
    let oks: Vec<(bool, bool)> = steps
        .iter()
        .map(|s| {
            (
                s["ok"].as_bool().unwrap(),
                s["rolled_back"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        oks,
        [(true, false), (false, true), (true, false), (true, false)]
    );
    // The recipe keeps what stuck, the failed step left out.
    let install = record.green_stack().unwrap().install;
    assert_eq!(install.len(), 2, "{install:?}");
    assert!(install[0].contains("cat > 'conf/keep.txt'"), "{install:?}");
    assert!(!install.iter().any(|s| s.contains("half-done && false")));
}

#[tokio::test]
async fn claims_without_evidence_and_steps_exhausted_are_failed_agentic() {
    let dir = unusual();
    let script = Script::new(vec![
        test("echo 'all 12 tests passed, trust me'"),
        run("true"),
        test("echo OK"),
        test(CHECKS),
    ]);
    let record = gate(dir.path(), with(script, 3)).await;
    assert_eq!(record.verdict, Verdict::FailedAgentic, "{record:#?}");
    assert!(
        record.reason.contains("3 step(s) used"),
        "{}",
        record.reason
    );
    assert_eq!(transcript(dir.path()).len(), 3);
}

#[tokio::test]
async fn a_configurator_that_gives_up_is_failed_agentic() {
    let dir = unusual();
    let record = gate(dir.path(), with(Script::new(vec![run("true"), None]), 12)).await;
    assert_eq!(record.verdict, Verdict::FailedAgentic, "{record:#?}");
    assert!(
        record.reason.contains("gave up after 1 step"),
        "{}",
        record.reason
    );
}

/// Fails the test if asked anything.
struct NeverAsked;

#[async_trait::async_trait]
impl Configurator for NeverAsked {
    async fn next(&self, _cx: &ConfigureContext<'_>) -> Result<Option<ConfigStep>, String> {
        panic!("the configurator was asked on a backend that isolates nothing");
    }
}

#[tokio::test]
async fn a_models_commands_never_run_on_the_host_backend() {
    let dir = unusual();
    let state = tempfile::tempdir().unwrap();
    let mut host = forq_sandbox::HostOptions::default();
    host.state_dir = Some(state.path().to_path_buf());
    let backend = forq_sandbox::HostBackend::open(host).unwrap();
    let mut options = GateOptions::default();
    options.configurator = Some(Arc::new(NeverAsked));
    let record = forq_bootstrap::run(&backend, dir.path(), &options)
        .await
        .unwrap();
    assert_eq!(record.verdict, Verdict::UnsupportedEcosystem, "{record:#?}");
    assert!(
        record.reason.contains("isolates nothing"),
        "{}",
        record.reason
    );
}
