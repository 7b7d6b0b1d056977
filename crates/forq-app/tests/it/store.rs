//! The run store on real SQLite files: schema versions and migrations, and
//! two processes writing one run's events at once.

use forq_app::failure::FailureKind;
use forq_app::store::{NewRun, State, Store, StoreError, SCHEMA_VERSION};

/// The schema a store had before versions existed: no `started_ms` or
/// `context` column, events keyed by run and sequence alone.
const UNVERSIONED: &str = "
CREATE TABLE runs (
    id TEXT PRIMARY KEY, issue TEXT NOT NULL, repo TEXT NOT NULL, action TEXT NOT NULL,
    state TEXT NOT NULL, reason TEXT NOT NULL DEFAULT '', created_ms INTEGER NOT NULL,
    updated_ms INTEGER NOT NULL, pid INTEGER, cost_usd REAL NOT NULL DEFAULT 0,
    patch_lines INTEGER, branch TEXT, abort_requested INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE events (
    run_id TEXT NOT NULL REFERENCES runs(id), seq INTEGER NOT NULL, at_ms INTEGER NOT NULL,
    kind TEXT NOT NULL, data TEXT NOT NULL, PRIMARY KEY (run_id, seq)
);
CREATE TABLE checkpoints (
    run_id TEXT NOT NULL REFERENCES runs(id), phase TEXT NOT NULL, at_ms INTEGER NOT NULL,
    data TEXT NOT NULL, PRIMARY KEY (run_id, phase)
);
INSERT INTO runs (id, issue, repo, action, state, created_ms, updated_ms)
    VALUES ('r-old', '{\"id\":\"7\",\"title\":\"old\"}', '/repo', 'fix', 'implementing', 1, 2);
INSERT INTO events VALUES ('r-old', 1, 1, 'created', '{}');
INSERT INTO events VALUES ('r-old', 2, 2, 'state', '{\"to\":\"implementing\"}');
";

#[test]
fn an_older_store_is_upgraded_and_a_newer_one_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("forq.db");
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch(UNVERSIONED)
        .unwrap();

    let store = Store::open(&path).unwrap();
    let run = store.get("r-old").unwrap();
    assert_eq!(run.state, State::Implementing);
    assert!(run.context.is_empty());
    assert_eq!(run.failure, None);
    // The failure column exists after the upgrade: an old run can end
    // with a class.
    let ended = store
        .end(
            "r-old",
            State::Failed,
            "docker went away",
            Some(FailureKind::Infrastructure),
        )
        .unwrap();
    assert_eq!(ended.failure, Some(FailureKind::Infrastructure));
    let events = store.events("r-old", 0).unwrap();
    let ids: Vec<(u64, u64)> = events.iter().map(|e| (e.id, e.seq)).collect();
    assert_eq!(
        ids,
        [(1, 1), (2, 2), (3, 3)],
        "the two old events, then the end"
    );
    // New writes go on where the old log stopped.
    assert_eq!(
        store.event("r-old", "note", serde_json::json!({})).unwrap(),
        4
    );
    drop(store);
    let version: i64 = rusqlite::Connection::open(&path)
        .unwrap()
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    // Opening again migrates nothing and loses nothing.
    assert_eq!(
        Store::open(&path)
            .unwrap()
            .events("r-old", 0)
            .unwrap()
            .len(),
        4
    );

    rusqlite::Connection::open(&path)
        .unwrap()
        .pragma_update(None, "user_version", SCHEMA_VERSION + 1)
        .unwrap();
    let err = Store::open(&path).unwrap_err();
    assert!(matches!(err, StoreError::TooNew { .. }), "{err}");
    assert!(err.to_string().contains("upgrade forq"), "{err}");
}

#[test]
fn a_run_keeps_the_class_of_why_it_stopped_short_and_the_state_event_says_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("forq.db")).unwrap();
    let run = store.create(&NewRun::fix("1", "x", "/repo")).unwrap();
    store.transition(&run.id, State::Provisioning, "").unwrap();
    let ended = store
        .end(
            &run.id,
            State::NeedsHuman,
            "the gate is not green",
            Some(FailureKind::Repository),
        )
        .unwrap();
    assert_eq!(ended.failure, Some(FailureKind::Repository));
    assert_eq!(
        store.get(&run.id).unwrap().failure,
        Some(FailureKind::Repository)
    );
    let last = store.events(&run.id, 0).unwrap().pop().unwrap();
    assert_eq!(last.data["failure"], "repository");
    assert_eq!(
        serde_json::to_value(&ended).unwrap()["failure"],
        "repository"
    );
    // A run that reached its goal has none, and its state event says none.
    let good = store.create(&NewRun::fix("2", "y", "/repo")).unwrap();
    let done = store.transition(&good.id, State::PatchReady, "").unwrap();
    assert_eq!(done.failure, None);
    let last = store.events(&good.id, 0).unwrap().pop().unwrap();
    assert!(last.data.get("failure").is_none(), "{:?}", last.data);
}

/// Events each writer appends in the two-process test.
const PER_WRITER: u64 = 150;

/// Run as a child (`FORQ_IT_STORE` set), this appends events and state
/// changes to one run; as the test, it starts two such children at once and
/// checks the log they leave.
#[test]
fn two_processes_append_events_without_colliding() {
    if let Ok(path) = std::env::var("FORQ_IT_STORE") {
        let store = Store::open(std::path::Path::new(&path)).unwrap();
        let run = std::env::var("FORQ_IT_RUN").unwrap();
        let me = std::process::id();
        for i in 0..PER_WRITER {
            store
                .event(&run, "note", serde_json::json!({"writer": me, "i": i}))
                .unwrap();
        }
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("forq.db");
    let store = Store::open(&path).unwrap();
    let run = store.create(&NewRun::fix("1", "race", "/repo")).unwrap();
    let exe = std::env::current_exe().unwrap();
    let writers: Vec<std::process::Child> = (0..2)
        .map(|_| {
            #[allow(clippy::disallowed_methods)] // this test's own binary
            std::process::Command::new(&exe)
                .args([
                    "--exact",
                    "store::two_processes_append_events_without_colliding",
                    "--test-threads=1",
                ])
                .env("FORQ_IT_STORE", &path)
                .env("FORQ_IT_RUN", &run.id)
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut w in writers {
        assert!(w.wait().unwrap().success(), "a writer failed");
    }
    let events = store.events(&run.id, 0).unwrap();
    // `created`, then every writer's events, numbered 1.. without a gap
    // or a repeat, ids increasing with the sequence.
    assert_eq!(events.len() as u64, 1 + 2 * PER_WRITER);
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e.seq, i as u64 + 1);
    }
    assert!(events.windows(2).all(|w| w[0].id < w[1].id));
    let mut writers: Vec<u64> = events[1..]
        .iter()
        .map(|e| e.data["writer"].as_u64().unwrap())
        .collect();
    writers.dedup();
    assert!(writers.len() >= 2, "both writers wrote");
}
