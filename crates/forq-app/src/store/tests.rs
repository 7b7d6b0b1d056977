//! The run store: runs, ids, events, checkpoints, owners.

use super::*;

fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(&dir.path().join(".forq/forq.db")).expect("open");
    (dir, store)
}

#[test]
fn a_backlog_created_in_one_second_gets_distinct_runs() {
    // 16 random bits per second: 2,000 runs in a second would collide
    // about thirty times; each draws again.
    let (_d, s) = store();
    for n in 0..2000 {
        s.create(&NewRun::fix(&n.to_string(), "t", "/r"))
            .expect("create");
    }
    let runs = s.list(usize::MAX).expect("list");
    let ids: std::collections::HashSet<&str> = runs.iter().map(|r| r.id.as_str()).collect();
    assert_eq!((runs.len(), ids.len()), (2000, 2000));
}

#[test]
fn ids_are_dated_and_distinct() {
    assert!(new_id(1_764_610_000_000).starts_with("20251201-"));
    assert!(new_id(0).starts_with("19700101-000000-"));
    let (_d, s) = store();
    let a = s.create(&NewRun::fix("1", "a", "/r")).expect("a");
    let b = s.create(&NewRun::fix("2", "b", "/r")).expect("b");
    assert_ne!(a.id, b.id);
    assert_eq!(s.list(10).expect("list").len(), 2);
}

#[test]
fn a_patch_with_findings_is_over_kept_and_can_still_be_published() {
    let state = State::from_name("completed_with_findings").expect("named");
    assert!(state.is_terminal() && state.has_patch());
    let (_d, s) = store();
    let run = s.create(&NewRun::fix("1", "a", "/r")).expect("create");
    s.transition(&run.id, state, "committed; 2 callers to look at")
        .expect("to findings");
    assert!(s.transition(&run.id, State::Failed, "no").is_err());
    let opened = s
        .transition(&run.id, State::PrOpened, "https://x/pull/1")
        .expect("a person opened a pull request");
    assert_eq!(opened.state, State::PrOpened);
}

#[test]
fn a_run_that_is_over_stays_over() {
    let (_d, s) = store();
    let run = s.create(&NewRun::fix("1", "a", "/r")).expect("create");
    s.transition(&run.id, State::PatchReady, "green")
        .expect("ready");
    let err = s.transition(&run.id, State::Failed, "x").expect_err("over");
    assert!(err.to_string().contains("patch_ready already"), "{err}");
    // The one way on: a person pushed and opened a pull request.
    s.transition(&run.id, State::PrOpened, "").expect("pr");
    assert!(s.request_abort(&run.id).is_err());
}

#[test]
fn checkpoints_replace_and_read_back() {
    let (_d, s) = store();
    let run = s.create(&NewRun::fix("1", "a", "/r")).expect("create");
    assert_eq!(s.checkpointed(&run.id, "seeded").expect("read"), None);
    s.checkpoint(&run.id, "seeded", &serde_json::json!({"head": "a"}))
        .expect("write");
    s.checkpoint(&run.id, "seeded", &serde_json::json!({"head": "b"}))
        .expect("rewrite");
    let got = s.checkpointed(&run.id, "seeded").expect("read");
    assert_eq!(got, Some(serde_json::json!({"head": "b"})));
}

#[test]
fn prefixes_find_one_run_or_say_which_is_ambiguous() {
    let (_d, s) = store();
    let a = s.create(&NewRun::fix("1", "a", "/r")).expect("a");
    let _b = s.create(&NewRun::fix("2", "b", "/r")).expect("b");
    assert_eq!(s.get(&a.id).expect("exact").issue.id, "1");
    assert!(matches!(s.get("2"), Err(StoreError::Ambiguous(_))));
    assert!(matches!(s.get("nope"), Err(StoreError::NotFound(_))));
}

#[test]
fn of_two_processes_taking_up_the_same_run_one_gets_it() {
    let (_d, s) = store();
    let run = s.create(&NewRun::fix("1", "a", "/r")).expect("create");
    assert!(s.claim(&run.id, None, 7).expect("first"));
    // Both saw owner 7 dead; the first to write takes the run.
    assert!(s.claim(&run.id, Some(7), 8).expect("second"));
    assert!(!s.claim(&run.id, Some(7), 9).expect("third"));
    assert_eq!(s.get(&run.id).expect("get").pid, Some(8));
}

#[test]
fn interrupted_runs_are_the_unfinished_ones_nobody_works_on() {
    let (_d, s) = store();
    let dead = s.create(&NewRun::fix("1", "a", "/r")).expect("dead");
    assert!(s.claim(&dead.id, None, u32::MAX - 1).expect("claim"));
    s.transition(&dead.id, State::Triaging, "")
        .expect("triaging");
    let never = s
        .create(&NewRun::fix("2", "b", "/r"))
        .expect("never taken up");
    let live = s.create(&NewRun::fix("3", "c", "/r")).expect("live");
    assert!(s.claim(&live.id, None, std::process::id()).expect("claim"));
    let over = s.create(&NewRun::fix("4", "d", "/r")).expect("over");
    s.transition(&over.id, State::Failed, "boom")
        .expect("failed");
    let mut ids: Vec<String> = s
        .interrupted()
        .expect("interrupted")
        .into_iter()
        .map(|r| r.id)
        .collect();
    ids.sort();
    let mut want = [dead.id, never.id];
    want.sort();
    assert_eq!(ids, want);
}

#[test]
fn aborting_a_run_nobody_works_on_aborts_it_now() {
    let (_d, s) = store();
    let run = s.create(&NewRun::fix("1", "a", "/r")).expect("create");
    assert!(s
        .claim(&run.id, None, u32::MAX - 1)
        .expect("claim by a process that is gone"));
    let aborted = s.request_abort(&run.id).expect("abort");
    assert_eq!(aborted.state, State::Aborted);
    assert!(aborted.abort_requested);
}
