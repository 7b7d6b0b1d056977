//! The run store: runs, ids, events, checkpoints, holders — each test on
//! SQLite and on PostgreSQL (a database of its own on the server
//! `FORQ_TEST_PG_URL` names; `.ci/run` starts one).

use std::time::Duration;

use super::*;

/// A SQLite store, and a PostgreSQL one when a server is named (under CI
/// one must be).
fn stores() -> Vec<(Option<tempfile::TempDir>, Store)> {
    let dir = tempfile::tempdir().expect("tempdir");
    let sqlite = Store::open(&dir.path().join(".forq/forq.db")).expect("open");
    let mut all = vec![(Some(dir), sqlite)];
    match std::env::var("FORQ_TEST_PG_URL") {
        #[cfg(feature = "postgres")]
        Ok(admin) if !admin.is_empty() => {
            let url = fresh_postgres(&admin).expect("a fresh database");
            all.push((None, Store::connect(&url).expect("open on PostgreSQL")));
        }
        _ if std::env::var_os("CI").is_some() => {
            panic!("CI tests the store on PostgreSQL too: set FORQ_TEST_PG_URL (.ci/run starts a server)")
        }
        _ => eprintln!("SKIPPED the PostgreSQL half: FORQ_TEST_PG_URL is not set"),
    }
    all
}

/// `test` on every store.
fn each(test: impl Fn(&Store)) {
    for (_dir, s) in stores() {
        test(&s);
    }
}

/// A handle on `s` writing as another process on this machine, one that
/// no longer exists.
fn dead_process(s: &Store) -> Store {
    s.as_holder(Holder {
        worker: "gone".to_owned(),
        host: lease::this_host().to_owned(),
        pid: u32::MAX - 1,
        boot: lease::this_boot().to_owned(),
    })
}

/// A handle on `s` writing as a worker on another machine.
fn elsewhere(s: &Store, name: &str) -> Store {
    s.as_holder(Holder {
        worker: name.to_owned(),
        host: format!("{name}.elsewhere"),
        pid: 1,
        boot: format!("{name}-boot"),
    })
}

const LEASE: Duration = Duration::from_secs(60);

/// A worker elsewhere named `name` that took run `id` up for a
/// millisecond: its lease has run out by the time anyone looks.
fn held_for_a_moment(s: &Store, id: &str, name: &str) -> Store {
    let h = elsewhere(s, name);
    assert!(h
        .acquire(id, Duration::from_millis(1))
        .expect("acquire")
        .is_some());
    h
}

/// Every kind of write `h` makes to run `id`: an event, a checkpoint, a
/// state, figures, an artifact.
fn every_write(h: &Store, id: &str) -> Vec<Result<(), StoreError>> {
    vec![
        h.put_artifact(id, "fix.patch", b"from a"),
        h.event(id, "note", serde_json::json!({"by": "a"}))
            .map(drop),
        h.checkpoint(id, "seeded", &serde_json::json!({"by": "a"})),
        h.record(id, Some(9.0), None, None),
        h.transition(id, State::Failed, "a thinks it failed")
            .map(drop),
    ]
}

#[test]
fn a_backlog_created_in_one_second_gets_distinct_runs() {
    // 16 random bits per second: 2,000 runs in a second would collide
    // about thirty times; each draws again.
    each(|s| {
        for n in 0..2000 {
            s.create(&NewRun::fix(&n.to_string(), "t", "/r"))
                .expect("create");
        }
        let runs = s.list(usize::MAX).expect("list");
        let ids: std::collections::HashSet<&str> = runs.iter().map(|r| r.id.as_str()).collect();
        assert_eq!((runs.len(), ids.len()), (2000, 2000));
    });
}

#[test]
fn ids_are_dated_and_distinct() {
    assert!(RunId::new_at(1_764_610_000_000).starts_with("20251201-"));
    assert!(RunId::new_at(0).starts_with("19700101-000000-"));
    each(|s| {
        let a = s.create(&NewRun::fix("1", "a", "/r")).expect("a");
        let b = s.create(&NewRun::fix("2", "b", "/r")).expect("b");
        assert_ne!(a.id, b.id);
        assert_eq!(s.list(10).expect("list").len(), 2);
    });
}

#[test]
fn a_patch_with_findings_is_over_kept_and_can_still_be_published() {
    let state = State::from_name("completed_with_findings").expect("named");
    assert!(state.is_terminal() && state.has_patch());
    each(|s| {
        let run = s.create(&NewRun::fix("1", "a", "/r")).expect("create");
        s.transition(&run.id, state, "committed; 2 callers to look at")
            .expect("to findings");
        assert!(s.transition(&run.id, State::Failed, "no").is_err());
        let opened = s
            .transition(&run.id, State::PrOpened, "https://x/pull/1")
            .expect("a person opened a pull request");
        assert_eq!(opened.state, State::PrOpened);
    });
}

#[test]
fn a_run_that_is_over_stays_over() {
    each(|s| {
        let run = s.create(&NewRun::fix("1", "a", "/r")).expect("create");
        s.transition(&run.id, State::PatchReady, "green")
            .expect("ready");
        let err = s.transition(&run.id, State::Failed, "x").expect_err("over");
        assert!(err.to_string().contains("patch_ready already"), "{err}");
        // The one way on: a person pushed and opened a pull request.
        s.transition(&run.id, State::PrOpened, "").expect("pr");
        assert!(s.request_abort(&run.id).is_err());
    });
}

#[test]
fn checkpoints_replace_and_read_back() {
    each(|s| {
        let run = s.create(&NewRun::fix("1", "a", "/r")).expect("create");
        assert_eq!(s.checkpointed(&run.id, "seeded").expect("read"), None);
        s.checkpoint(&run.id, "seeded", &serde_json::json!({"head": "a"}))
            .expect("write");
        s.checkpoint(&run.id, "seeded", &serde_json::json!({"head": "b"}))
            .expect("rewrite");
        let got = s.checkpointed(&run.id, "seeded").expect("read");
        assert_eq!(got, Some(serde_json::json!({"head": "b"})));
    });
}

#[test]
fn prefixes_find_one_run_or_say_which_is_ambiguous() {
    each(|s| {
        let a = s.create(&NewRun::fix("1", "a", "/r")).expect("a");
        let _b = s.create(&NewRun::fix("2", "b", "/r")).expect("b");
        assert_eq!(s.get(&a.id).expect("exact").issue.id, "1");
        assert!(matches!(s.get("2"), Err(StoreError::Ambiguous(_))));
        assert!(matches!(s.get("nope"), Err(StoreError::NotFound(_))));
    });
}

#[test]
fn of_two_processes_taking_up_the_same_run_one_gets_it() {
    each(|s| {
        let run = s.create(&NewRun::fix("1", "a", "/r")).expect("create");
        let (a, b) = (elsewhere(s, "a"), elsewhere(s, "b"));
        assert!(a.acquire(&run.id, LEASE).expect("first").is_some());
        // A live lease on another machine: the second waits its turn.
        assert!(b.acquire(&run.id, LEASE).expect("second").is_none());
        let held = s.get(&run.id).expect("get");
        assert_eq!(
            (held.worker.as_deref(), held.fence),
            (Some("a"), 1),
            "{held:?}"
        );
        assert!(held.is_live());
    });
}

#[test]
fn a_lease_that_runs_out_frees_the_run_and_fences_its_old_holder() {
    each(|s| {
        let run = s.create(&NewRun::fix("1", "a", "/r")).expect("create");
        let (a, b) = (held_for_a_moment(s, &run.id, "a"), elsewhere(s, "b"));
        a.event(&run.id, "note", serde_json::json!({"by": "a"}))
            .expect("a writes while it holds the run");
        std::thread::sleep(Duration::from_millis(20));
        assert!(!s.get(&run.id).expect("get").is_live());
        let before = b.acquire(&run.id, LEASE).expect("b").expect("taken up");
        assert_eq!(before.worker.as_deref(), Some("a"));
        // a wakes up: every write it tries is refused, none is kept.
        for r in every_write(&a, &run.id) {
            assert!(matches!(r, Err(StoreError::Fenced { .. })), "{r:?}");
        }
        assert!(!a.renew(&run.id, LEASE).expect("renew"));
        let now = s.get(&run.id).expect("get");
        assert_eq!((now.state, now.cost_usd), (State::Queued, 0.0));
        assert_eq!(s.checkpointed(&run.id, "seeded").expect("read"), None);
        b.transition(&run.id, State::Triaging, "")
            .expect("b goes on");
        let kinds: Vec<String> = s
            .events(&run.id, 0)
            .expect("events")
            .into_iter()
            .map(|e| e.kind)
            .collect();
        assert_eq!(kinds, ["created", "claimed", "note", "claimed", "state"]);
    });
}

/// Attack: a worker paused past its lease (SIGSTOP, a frozen VM) wakes,
/// finds its renewal refused, lets go, and writes its records anyway.
/// Before, a refused renewal dropped the fence and every later write went
/// through as a write of nobody's (`fence IS NULL`), overwriting the new
/// holder's `fix.patch`.
#[test]
fn a_holder_that_lost_its_run_stays_fenced_after_renewing_and_letting_go() {
    each(|s| {
        let run = s.create(&NewRun::fix("1", "a", "/r")).expect("create");
        let (a, b) = (held_for_a_moment(s, &run.id, "a"), elsewhere(s, "b"));
        std::thread::sleep(Duration::from_millis(20));
        b.acquire(&run.id, LEASE).expect("b").expect("taken up");
        b.put_artifact(&run.id, "fix.patch", b"from b")
            .expect("b writes");
        assert!(!a.renew(&run.id, LEASE).expect("renew"), "a lost it");
        assert!(a.held().is_empty(), "a drives nothing now");
        for step in ["after the refused renewal", "after letting go"] {
            for r in every_write(&a, &run.id) {
                assert!(matches!(r, Err(StoreError::Fenced { .. })), "{step}: {r:?}");
            }
            a.release(&run.id).expect("release");
        }
        assert_eq!(
            s.artifact(&run.id, "fix.patch").expect("read").as_deref(),
            Some(&b"from b"[..]),
            "b's patch stands"
        );
        let now = s.get(&run.id).expect("get");
        assert!(
            now.is_live() && now.worker.as_deref() == Some("b"),
            "{now:?}"
        );
        // Taken up again later, a writes under its new fence.
        b.release(&run.id).expect("b lets go");
        assert!(a.acquire(&run.id, LEASE).expect("a").is_some());
        a.event(&run.id, "note", serde_json::json!({"by": "a"}))
            .expect("a writes under its new fence");
    });
}

/// Attack (or accident): two machines with one host name (cloned from one
/// image). A holder there whose pid runs nothing here was judged dead by
/// a local pid check, and its live run was taken from it. Its boot tells
/// it apart: it is judged by its lease.
#[test]
fn a_machine_with_this_ones_name_is_judged_by_its_lease_not_a_local_pid() {
    each(|s| {
        let run = s.create(&NewRun::fix("1", "a", "/r")).expect("create");
        let twin = s.as_holder(Holder {
            worker: "twin".to_owned(),
            host: lease::this_host().to_owned(),
            pid: u32::MAX - 1,
            boot: "another-boot".to_owned(),
        });
        assert!(twin.acquire(&run.id, LEASE).expect("twin").is_some());
        let held = s.get(&run.id).expect("get");
        assert!(held.is_live(), "{held:?}");
        // This process, on a machine of the same name.
        assert!(s.acquire(&run.id, LEASE).expect("acquire").is_none());
        assert!(s.claim_next(5, LEASE, &[], &[]).expect("claim").is_empty());
    });
}

#[test]
fn a_holder_on_this_machine_that_died_frees_its_run_at_once() {
    each(|s| {
        let run = s.create(&NewRun::fix("1", "a", "/r")).expect("create");
        let gone = dead_process(s);
        assert!(gone.acquire(&run.id, LEASE).expect("claim").is_some());
        // Its lease runs for a minute, but its process is gone.
        assert!(!s.get(&run.id).expect("get").is_live());
        assert!(s.acquire(&run.id, LEASE).expect("take over").is_some());
        assert!(s.renew(&run.id, LEASE).expect("renew"));
        s.release(&run.id).expect("release");
        assert!(!s.get(&run.id).expect("get").is_live());
    });
}

#[test]
fn workers_claiming_at_once_never_share_a_run() {
    for (_dir, s) in stores() {
        for n in 0..40 {
            s.create(&NewRun::fix(&n.to_string(), "t", "/r"))
                .expect("create");
        }
        let s = Arc::new(s);
        let claimed: Vec<Vec<String>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..4)
                .map(|w| {
                    let mine = elsewhere(&s, &format!("w{w}"));
                    scope.spawn(move || {
                        let mut got = Vec::new();
                        loop {
                            let runs = mine.claim_next(3, LEASE, &[], &[]).expect("claim");
                            if runs.is_empty() {
                                return got;
                            }
                            got.extend(runs.into_iter().map(|r| r.id.to_string()));
                        }
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut all: Vec<&String> = claimed.iter().flatten().collect();
        let total = all.len();
        all.sort();
        all.dedup();
        assert_eq!((total, all.len()), (40, 40), "{claimed:?}");
        // Every claim is one fence step on its run.
        for run in s.all().expect("all") {
            assert_eq!(run.fence, 1, "{run:?}");
        }
    }
}

#[test]
fn a_worker_prefers_runs_on_repositories_it_has_ready() {
    each(|s| {
        let old = s.create(&NewRun::fix("1", "a", "/cold")).expect("old");
        let warm = s.create(&NewRun::fix("2", "b", "/warm")).expect("warm");
        let w = elsewhere(s, "w");
        let got = w
            .claim_next(1, LEASE, &["/warm".to_owned()], &[])
            .expect("claim");
        assert_eq!(got[0].id, warm.id);
        let next = w
            .claim_next(1, LEASE, &["/warm".to_owned()], &[])
            .expect("claim");
        assert_eq!(next[0].id, old.id);
    });
}

#[test]
fn interrupted_runs_are_the_unfinished_ones_nobody_works_on() {
    each(|s| {
        let dead = s.create(&NewRun::fix("1", "a", "/r")).expect("dead");
        assert!(dead_process(s)
            .acquire(&dead.id, LEASE)
            .expect("claim")
            .is_some());
        s.transition(&dead.id, State::Triaging, "")
            .expect("triaging");
        let never = s
            .create(&NewRun::fix("2", "b", "/r"))
            .expect("never taken up");
        let live = s.create(&NewRun::fix("3", "c", "/r")).expect("live");
        assert!(s.acquire(&live.id, LEASE).expect("claim").is_some());
        let away = s.create(&NewRun::fix("5", "e", "/r")).expect("away");
        assert!(elsewhere(s, "w")
            .acquire(&away.id, LEASE)
            .expect("claim")
            .is_some());
        let over = s.create(&NewRun::fix("4", "d", "/r")).expect("over");
        s.transition(&over.id, State::Failed, "boom")
            .expect("failed");
        let mut ids: Vec<String> = s
            .interrupted()
            .expect("interrupted")
            .into_iter()
            .map(|r| r.id.to_string())
            .collect();
        ids.sort();
        let mut want = [dead.id, never.id];
        want.sort();
        assert_eq!(ids, want);
    });
}

#[test]
fn aborting_a_run_nobody_works_on_aborts_it_now() {
    each(|s| {
        let run = s.create(&NewRun::fix("1", "a", "/r")).expect("create");
        assert!(dead_process(s)
            .acquire(&run.id, LEASE)
            .expect("claim by a process that is gone")
            .is_some());
        let aborted = s.request_abort(&run.id).expect("abort");
        assert_eq!(aborted.state, State::Aborted);
        assert!(aborted.abort_requested);
        // One held elsewhere is only asked: its holder stops it.
        let away = s.create(&NewRun::fix("2", "b", "/r")).expect("create");
        assert!(elsewhere(s, "w")
            .acquire(&away.id, LEASE)
            .expect("claim")
            .is_some());
        let asked = s.request_abort(&away.id).expect("abort");
        assert_eq!((asked.state, asked.abort_requested), (State::Queued, true));
    });
}

#[test]
fn event_ids_grow_in_the_order_events_are_written_across_runs() {
    each(|s| {
        let a = s.create(&NewRun::fix("1", "a", "/r")).expect("a");
        let b = s.create(&NewRun::fix("2", "b", "/r")).expect("b");
        for n in 0..5 {
            s.event(&a.id, "note", serde_json::json!({"n": n}))
                .expect("a");
            s.event(&b.id, "note", serde_json::json!({"n": n}))
                .expect("b");
        }
        let all = s.events_after(None, 0, 100).expect("all");
        let ids: Vec<u64> = all.iter().map(|(_, e)| e.id).collect();
        assert_eq!(ids, (1..=12).collect::<Vec<u64>>());
        let last = s.last_event_id().expect("last");
        assert_eq!(last, 12);
        let of_b = s.events_after(Some(&b.id), 6, 100).expect("b's");
        assert!(of_b.iter().all(|(run, e)| *run == b.id && e.id > 6));
        assert_eq!(of_b.len(), 3);
        assert!(s.first_delivery("d1").expect("first"));
        assert!(!s.first_delivery("d1").expect("again"));
    });
}

#[test]
fn the_apps_repositories_and_what_was_said_are_kept_by_name() {
    each(|s| {
        s.install_repos(7, &["O/R".to_owned(), "o/other".to_owned()])
            .expect("install");
        s.install_repos(8, &["x/y".to_owned()]).expect("install");
        assert_eq!(s.installation_of("o/r").expect("of"), Some(7));
        // Removed from one installation: only its own rows go.
        assert_eq!(
            s.uninstall_repos(7, Some(&["o/other".to_owned()]))
                .expect("remove"),
            ["o/other"]
        );
        assert_eq!(s.installation_of("o/other").expect("of"), None);
        // Uninstalled: every repository of that installation, no other.
        assert_eq!(s.uninstall_repos(7, None).expect("uninstall"), ["o/r"]);
        assert_eq!(s.installed_repos().expect("list"), [("x/y".to_owned(), 8)]);
        assert!(s.record_said("triage:o/r#5", "https://x/1").expect("say"));
        assert!(!s.record_said("triage:o/r#5", "https://x/2").expect("again"));
        assert_eq!(
            s.said("triage:o/r#5").expect("said").as_deref(),
            Some("https://x/1"),
            "the first record stands"
        );
        assert_eq!(s.said("triage:o/r#6").expect("said"), None);
    });
}

#[test]
fn artifacts_are_kept_whole_and_replaced() {
    each(|s| {
        let run = s.create(&NewRun::fix("1", "a", "/r")).expect("create");
        let bytes: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
        s.put_artifact(&run.id, "fix.patch", &bytes).expect("put");
        s.put_artifact(&run.id, "tree.json", b"{}").expect("put");
        assert_eq!(s.artifact(&run.id, "fix.patch").expect("get"), Some(bytes));
        s.put_artifact(&run.id, "tree.json", b"{\"n\":1}")
            .expect("replace");
        assert_eq!(
            s.artifact(&run.id, "tree.json").expect("get").as_deref(),
            Some(&b"{\"n\":1}"[..])
        );
        assert_eq!(
            s.artifacts(&run.id).expect("names"),
            ["fix.patch", "tree.json"]
        );
        assert_eq!(s.artifact(&run.id, "nope").expect("get"), None);
    });
}

#[test]
fn workers_are_listed_with_what_they_drive() {
    each(|s| {
        let w = Worker {
            id: "w1".to_owned(),
            host: "h".to_owned(),
            pid: 1,
            labels: vec!["native".to_owned(), "x86_64".to_owned()],
            jobs: 2,
            started_ms: 1,
            heartbeat_ms: 1,
            driving: Vec::new(),
            stopping: false,
        };
        s.register_worker(&w).expect("register");
        s.worker_beat("w1", &["r1".to_owned()], true).expect("beat");
        let listed = s.workers().expect("workers");
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].driving, ["r1"]);
        assert!(listed[0].stopping && listed[0].heartbeat_ms > 1);
        assert_eq!(listed[0].labels, w.labels);
        s.worker_gone("w1").expect("gone");
        assert!(s.workers().expect("workers").is_empty());
    });
}

/// The PostgreSQL server `FORQ_TEST_PG_URL` names (under CI one must be);
/// `None` skips the test.
#[cfg(feature = "postgres")]
fn pg_admin() -> Option<String> {
    let admin = std::env::var("FORQ_TEST_PG_URL")
        .ok()
        .filter(|u| !u.is_empty());
    assert!(
        admin.is_some() || std::env::var_os("CI").is_none(),
        "CI sets FORQ_TEST_PG_URL"
    );
    admin
}

#[cfg(feature = "postgres")]
#[test]
fn a_connection_the_server_cut_is_made_again() {
    let Some(admin) = pg_admin() else {
        return;
    };
    let url = fresh_postgres(&admin).expect("a fresh database");
    let s = Store::connect(&url).expect("open");
    let run = s.create(&NewRun::fix("1", "a", "/r")).expect("create");
    // Another process ends every other connection to the database: what a
    // server restart or a failover does to this one.
    let other = Store::connect(&url).expect("open again");
    other
        .with(|c| {
            c.rows(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                 WHERE datname = current_database() AND pid <> pg_backend_pid()",
                &[],
            )
        })
        .expect("terminate");
    std::thread::sleep(Duration::from_millis(100));
    // The next statement finds its connection closed and runs again on a
    // new one; so does the next write.
    assert_eq!(s.get(&run.id).expect("read after the cut").id, run.id);
    s.event(&run.id, "note", serde_json::json!({}))
        .expect("write after the cut");
}

#[test]
fn a_run_that_requires_labels_goes_only_to_a_worker_that_offers_them() {
    each(|s| {
        let mut gpu = NewRun::fix("1", "a", "/r");
        gpu.requires = vec!["gpu".to_owned(), "x86_64".to_owned()];
        let gpu = s.create(&gpu).expect("create");
        assert_eq!(gpu.requires, ["gpu", "x86_64"]);
        let plain = s.create(&NewRun::fix("2", "b", "/r")).expect("create");
        let labels = |l: &[&str]| l.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let cpu = elsewhere(s, "cpu");
        let got = cpu
            .claim_next(5, LEASE, &[], &labels(&["x86_64", "native"]))
            .expect("claim");
        assert_eq!(got.iter().map(|r| &r.id).collect::<Vec<_>>(), [&plain.id]);
        let with_gpu = elsewhere(s, "gpu");
        let got = with_gpu
            .claim_next(5, LEASE, &[], &labels(&["x86_64", "gpu"]))
            .expect("claim");
        assert_eq!(got.iter().map(|r| &r.id).collect::<Vec<_>>(), [&gpu.id]);
    });
}

/// `url` with the query pairs `more` added.
#[cfg(feature = "postgres")]
fn with_query(url: &str, more: &str) -> String {
    let join = if url.contains('?') { '&' } else { '?' };
    format!("{url}{join}{more}")
}

/// Attack: a store reached over a network a stranger shares, where a man
/// in the middle answers as the server. forq speaks TLS and checks the
/// server's certificate: the scratch server's, signed by the scratch CA
/// (`scripts/postgres-scratch.sh`), passes with that CA named and with no
/// other; a CA the attacker made, or the web's roots, do not.
#[cfg(feature = "postgres")]
#[test]
fn a_store_over_tls_is_trusted_only_with_the_ca_that_signed_it() {
    let Some(admin) = pg_admin() else {
        return;
    };
    let url = fresh_postgres(&admin).expect("a fresh database");
    let server_cert = Store::connect(&admin)
        .expect("open")
        .with(|c| c.value("SELECT current_setting('ssl_cert_file')", &[]))
        .expect("ssl_cert_file")
        .into_text()
        .expect("a path");
    let ca = Path::new(&server_cert).with_file_name("ca.crt");
    assert!(
        ca.is_file(),
        "the scratch server's CA is beside its certificate"
    );

    let trusted = Store::connect(&with_query(
        &url,
        &format!("sslmode=verify-full&sslrootcert={}", ca.display()),
    ))
    .expect("the server's own CA is trusted");
    let over_tls = trusted
        .with(|c| {
            c.value(
                "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                &[],
            )
        })
        .expect("pg_stat_ssl");
    assert_eq!(over_tls, Val::Int(1), "the connection is TLS");
    trusted
        .create(&NewRun::fix("1", "a", "/r"))
        .expect("a write over TLS");

    // A CA the attacker made: its own certificate for 127.0.0.1 would pass
    // under it, so the server's must not.
    let tmp = tempfile::tempdir().expect("tempdir");
    let other = tmp.path().join("other-ca.crt");
    let made = forq_sandbox::host_command("openssl")
        .as_std_mut()
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        ])
        .args(["-subj", "/CN=another CA", "-keyout"])
        .arg(tmp.path().join("other-ca.key"))
        .arg("-out")
        .arg(&other)
        .output()
        .expect("openssl");
    assert!(made.status.success(), "{made:?}");
    for query in [
        format!("sslmode=require&sslrootcert={}", other.display()),
        "sslmode=require".to_owned(),
    ] {
        let refused = Store::connect(&with_query(&url, &query))
            .err()
            .unwrap_or_else(|| panic!("{query}: a certificate no trusted CA signed was taken"));
        let said = refused.to_string();
        assert!(
            said.contains("certificate") && said.contains("sslrootcert"),
            "{query}: {said}"
        );
    }
}

/// `url` (a database on the scratch server) as the login role `role`.
#[cfg(feature = "postgres")]
fn as_role(url: &str, role: &str) -> String {
    let (scheme, rest) = url.split_once("://").expect("a URL");
    let host = rest.rsplit_once('@').map_or(rest, |(_, h)| h);
    format!("{scheme}://{role}@{host}")
}

/// Attack: a worker runs strangers' code, so its store credentials may be
/// an attacker's. With a role of its own (a member of `forq_worker`) it
/// writes only the run it holds: raw SQL on another worker's run changes
/// no row and adds nothing to it, a forged clock takes up no run another
/// role's live lease holds, and what a run is (its repository) cannot be
/// rewritten even on the run it holds; enqueueing and aborting are the
/// operator's. Without schema 8's policies and grants each of these
/// passed.
#[cfg(feature = "postgres")]
#[test]
fn a_workers_role_writes_only_the_run_it_holds() {
    let Some(admin) = pg_admin() else {
        return;
    };
    let url = fresh_postgres(&admin).expect("a fresh database");
    let owner = Store::connect(&url).expect("the owner makes the store");
    let tag = fastrand::u32(..);
    let roles = [format!("forq_w_a_{tag:08x}"), format!("forq_w_b_{tag:08x}")];
    for role in &roles {
        owner
            .with(|c| c.batch(&format!("CREATE ROLE {role} LOGIN IN ROLE forq_worker")))
            .expect("a worker's role");
    }
    let mine = owner.create(&NewRun::fix("1", "a", "/r")).expect("create");
    let theirs = owner.create(&NewRun::fix("2", "b", "/r")).expect("create");
    let a = elsewhere(
        &Store::connect(&as_role(&url, &roles[0])).expect("a opens the store"),
        "a",
    );
    let b = elsewhere(
        &Store::connect(&as_role(&url, &roles[1])).expect("b opens the store"),
        "b",
    );
    let claimed = a.claim_next(1, LEASE, &[], &[]).expect("a claims");
    assert_eq!(claimed[0].id, mine.id);
    let claimed = b.claim_next(1, LEASE, &[], &[]).expect("b claims");
    assert_eq!(claimed[0].id, theirs.id);

    // What a worker does to the run it holds still passes.
    for write in every_write(&a, &mine.id) {
        write.expect("a writes the run it holds");
    }

    // Raw SQL, as a's role, on b's run.
    let attacks: [(&str, Vec<Val>); 8] = [
        (
            "UPDATE runs SET state = 'done', reason = 'forged' WHERE id = ?1",
            vec![Val::from(theirs.id.to_string())],
        ),
        (
            // A clock of a's own: "b's lease ran out long ago".
            "UPDATE runs SET worker = 'a', holder_role = session_user, fence = fence + 1, \
             lease_until = 1 WHERE id = ?1",
            vec![Val::from(theirs.id.to_string())],
        ),
        (
            "INSERT INTO events (id, run_id, seq, at_ms, kind, data) VALUES (999999, ?1, 999, 1, 'state', '{}')",
            vec![Val::from(theirs.id.to_string())],
        ),
        (
            "INSERT INTO artifacts (run_id, name, at_ms, data) VALUES (?1, 'fix.patch', 1, '\\x00')",
            vec![Val::from(theirs.id.to_string())],
        ),
        (
            "UPDATE runs SET repo = 'https://evil.example/r' WHERE id = ?1",
            vec![Val::from(mine.id.to_string())],
        ),
        ("DELETE FROM runs WHERE id = ?1", vec![Val::from(theirs.id.to_string())]),
        (
            // Enqueueing is the operator's.
            "INSERT INTO runs (id, issue, repo, action, state, created_ms, updated_ms) \
             VALUES ('20990101-000000-beef', '{}', 'https://evil.example/r', 'fix', 'queued', 1, 1)",
            vec![],
        ),
        (
            // So is asking a run to stop.
            "UPDATE runs SET abort_requested = 1 WHERE id = ?1",
            vec![Val::from(mine.id.to_string())],
        ),
    ];
    for (sql, params) in &attacks {
        let out = a.with(|c| c.exec(sql, params));
        assert!(
            matches!(out, Ok(0) | Err(_)),
            "{sql}: a's role changed {out:?} rows"
        );
    }
    assert!(
        a.acquire(&theirs.id, LEASE).expect("acquire").is_none(),
        "a took up b's live run"
    );

    // b's run is as b left it, and b still writes it.
    let after = owner.get(&theirs.id).expect("get");
    assert_eq!(after.state, State::Queued);
    assert_eq!(after.worker.as_deref(), Some("b"));
    assert_eq!(owner.get(&mine.id).expect("get").repo, "/r");
    assert!(owner
        .artifact(&theirs.id, "fix.patch")
        .expect("artifact")
        .is_none());
    assert!(owner
        .events(&theirs.id, 0)
        .expect("events")
        .iter()
        .all(|e| e.kind != "state"));
    for write in every_write(&b, &theirs.id) {
        write.expect("b writes the run it holds");
    }
    drop((a, b));
    for role in &roles {
        let _ = owner.with(|c| c.batch(&format!("DROP ROLE IF EXISTS {role}")));
    }
}
