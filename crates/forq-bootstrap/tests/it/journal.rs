//! The run record as the gate goes, progress, and the agentic fallback's hook.

use std::path::Path;
use std::sync::{Arc, Mutex};

use forq_bootstrap::{Fallback, GateEvent, GateOptions, Observer, Phase, Record, Stack, Verdict};

use super::{gate, repo};

/// The calc example (unittest, one failing test) in a directory of its own.
fn calc() -> tempfile::TempDir {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/calc");
    let read = |p: &str| std::fs::read_to_string(src.join(p)).unwrap();
    repo(&[
        ("calc.py", &read("calc.py")),
        ("tests/__init__.py", ""),
        ("tests/test_calc.py", &read("tests/test_calc.py")),
    ])
}

/// Writes down every event, and what `run.json` said when the test step began.
struct Recorder {
    repo: std::path::PathBuf,
    events: Mutex<Vec<String>>,
    at_test_start: Mutex<Option<serde_json::Value>>,
}

impl Observer<GateEvent> for Recorder {
    fn event(&self, event: &GateEvent) {
        let line = match event {
            GateEvent::Detected { stacks } => format!("detected {}", stacks.len()),
            GateEvent::Cached { .. } => "cached".to_owned(),
            GateEvent::Step {
                stack,
                phase,
                command,
            } => {
                if *phase == Phase::Test {
                    let text = std::fs::read_to_string(forq_bootstrap::run_record_path(&self.repo))
                        .unwrap();
                    *self.at_test_start.lock().unwrap() = serde_json::from_str(&text).ok();
                }
                format!("{phase:?} {stack}: {command}")
            }
            GateEvent::StepDone { exit_code, .. } => format!("done {exit_code}"),
            GateEvent::StackDone { run } => format!("stack {} {:?}", run.name, run.verdict),
            GateEvent::Fallback { stacks } => format!("fallback {}", stacks.len()),
            _ => "other".to_owned(),
        };
        self.events.lock().unwrap().push(line);
    }
}

#[tokio::test]
async fn the_run_is_marked_before_during_and_after_work_in_a_file_and_a_store() {
    let dir = calc();
    let store = tempfile::tempdir().unwrap();
    let db = store.path().join("forq.db");
    let recorder = Arc::new(Recorder {
        repo: dir.path().to_owned(),
        events: Mutex::new(Vec::new()),
        at_test_start: Mutex::new(None),
    });
    let options = GateOptions::default().store(&db).observer(recorder.clone());
    let record = gate(dir.path(), options).await;
    assert_eq!(record.verdict, Verdict::Bootstrapped);
    assert_eq!(
        *recorder.events.lock().unwrap(),
        [
            "detected 1",
            "Test unittest: python3 -m unittest -v",
            "done 1",
            "stack unittest Bootstrapped",
        ]
    );
    // While the tests ran, the record said so: a run killed there shows it.
    let during = recorder.at_test_start.lock().unwrap().clone().unwrap();
    assert_eq!(during["state"], "running");
    assert_eq!(during["phase"], "test unittest: python3 -m unittest -v");
    // Afterwards, finished with the verdict.
    let after: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(forq_bootstrap::run_record_path(dir.path())).unwrap(),
    )
    .unwrap();
    assert_eq!(after["state"], "finished");
    assert_eq!(after["record"]["verdict"], "bootstrapped");
    // The same in the store, one row per run.
    let conn = rusqlite::Connection::open(&db).unwrap();
    let row: (String, String, String) = conn
        .query_row(
            "SELECT state, phase, verdict FROM bootstrap_runs",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(
        row,
        ("finished".into(), "done".into(), "bootstrapped".into())
    );
    // forq's directory keeps itself out of git.
    assert_eq!(
        std::fs::read_to_string(dir.path().join(".forq/.gitignore")).unwrap(),
        "*\n"
    );
}

/// A fallback that proposes fixed recipes and remembers what it was told.
struct Propose {
    recipes: Vec<Stack>,
    told: Mutex<Option<Verdict>>,
}

#[async_trait::async_trait]
impl Fallback for Propose {
    async fn propose(&self, _repo: &Path, failed: &Record) -> Vec<Stack> {
        *self.told.lock().unwrap() = Some(failed.verdict);
        self.recipes.clone()
    }
}

/// unittest specs in a layout detection does not know (`checks/spec_*.py`).
fn unusual_layout() -> tempfile::TempDir {
    repo(&[
        ("checks/__init__.py", ""),
        (
            "checks/spec_calc.py",
            "import unittest\n\nclass Calc(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(1 + 1, 2)\n",
        ),
    ])
}

#[tokio::test]
async fn a_fallback_recipe_is_run_and_judged_like_a_detected_stack() {
    let dir = unusual_layout();
    let fallback = Arc::new(Propose {
        recipes: vec![
            // A recipe that runs no test is not believed...
            Stack::custom("agent: guess one", Vec::new(), "true"),
            // ...one whose runner shows a test executing is.
            Stack::custom(
                "agent: guess two",
                Vec::new(),
                "python3 -m unittest discover -s checks -p 'spec_*.py' -v",
            ),
        ],
        told: Mutex::new(None),
    });
    let record = gate(
        dir.path(),
        GateOptions::default().fallback(fallback.clone()),
    )
    .await;
    assert_eq!(
        *fallback.told.lock().unwrap(),
        Some(Verdict::UnsupportedEcosystem)
    );
    assert_eq!(record.verdict, Verdict::Bootstrapped, "{record:#?}");
    assert_eq!(record.stacks.len(), 2);
    assert_eq!(record.stacks[0].verdict, Verdict::FailedDeterministic);
    assert_eq!(record.stacks[1].marker, "agent: guess two");
    assert_eq!(record.passed, 1);
}

#[tokio::test]
async fn a_fallback_that_finds_nothing_is_failed_agentic() {
    let dir = unusual_layout();
    let fallback = Arc::new(Propose {
        recipes: vec![Stack::custom(
            "agent: wrong directory",
            Vec::new(),
            "python3 -m unittest discover -s tests -v",
        )],
        told: Mutex::new(None),
    });
    let record = gate(dir.path(), GateOptions::default().fallback(fallback)).await;
    assert_eq!(record.verdict, Verdict::FailedAgentic, "{record:#?}");
    assert!(record.reason.contains("custom:"), "{}", record.reason);
    let nothing = Arc::new(Propose {
        recipes: Vec::new(),
        told: Mutex::new(None),
    });
    let record = gate(dir.path(), GateOptions::default().fallback(nothing)).await;
    assert_eq!(record.verdict, Verdict::FailedAgentic);
    assert!(
        record.reason.contains("the fallback proposed no recipe"),
        "{}",
        record.reason
    );
}
