//! Workers on a shared PostgreSQL store: three `forq worker` processes
//! burn down 200 runs while two of them are killed with SIGKILL in the
//! middle of a run. Every run ends in its right state once, no two
//! workers ever drive one run at once, no event is lost or doubled, and
//! what the killed workers left (mounts, sandbox directories, cgroups) is
//! gone afterwards — all read from the store and the machine, not from
//! what the workers say.
//!
//! The runs are queued as the role that owns the store; each worker
//! connects as a role of its own (a member of `forq_worker`, shared by a
//! worker and the one that replaces it on its machine), which may write
//! only the runs it holds: the fleet works under least privilege.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use forq_app::store::{RunEvent, State, Store};
use serde_json::json;

use super::{calc_repo, forq_bin, triage_replay};
use crate::{native_or_skip, owned_by};

/// A database of its own on the test server, or `None` (skipped) when
/// none is named outside CI.
pub(crate) fn postgres_or_skip(test: &str) -> Option<String> {
    match std::env::var("FORQ_TEST_PG_URL") {
        Ok(admin) if !admin.is_empty() => {
            Some(forq_app::store::fresh_postgres(&admin).expect("a fresh database"))
        }
        _ if std::env::var_os("CI").is_some() => {
            panic!("{test}: CI names a PostgreSQL server in FORQ_TEST_PG_URL (.ci/run starts one)")
        }
        _ => {
            eprintln!("SKIPPED {test}: FORQ_TEST_PG_URL names no PostgreSQL server");
            None
        }
    }
}

fn issues(dir: &Path, prefix: &str, n: usize) -> PathBuf {
    let dir = dir.join(format!("issues-{prefix}"));
    std::fs::create_dir_all(&dir).unwrap();
    for i in 0..n {
        std::fs::write(
            dir.join(format!("{prefix}{i}.md")),
            format!("---\nid: {prefix}{i}\n---\n# add() subtracts\n"),
        )
        .unwrap();
    }
    dir
}

struct Fleet {
    /// Seconds a stopped worker's runs may go on.
    grace: &'static str,
    url: String,
    tmp: PathBuf,
    sandbox_dir: PathBuf,
    replay: PathBuf,
}

impl Fleet {
    /// The store's URL as worker `name`'s role (made the first time):
    /// `a` and `a2` share one, as a worker and its replacement on one
    /// machine would.
    fn worker_url(&self, name: &str) -> String {
        let (head, query) = self.url.split_once('?').unwrap_or((&self.url, ""));
        let (scheme, rest) = head.split_once("://").expect("a URL");
        let host_db = rest.rsplit_once('@').map_or(rest, |(_, h)| h);
        let db = host_db.rsplit_once('/').expect("a database").1;
        let role = format!(
            "{db}_{}",
            name.trim_end_matches(|c: char| c.is_ascii_digit())
        );
        let made = forq_sandbox::host_command("psql")
            .as_std_mut()
            .args(["-qAt", &self.url, "-c"])
            .arg(format!(
                "DO $$ BEGIN CREATE ROLE {role} LOGIN IN ROLE forq_worker; \
                 EXCEPTION WHEN duplicate_object THEN NULL; END $$"
            ))
            .output()
            .expect("psql");
        assert!(made.status.success(), "{made:?}");
        let query = if query.is_empty() {
            String::new()
        } else {
            format!("?{query}")
        };
        format!("{scheme}://{role}@{host_db}{query}")
    }

    fn start(&self, name: &str) -> tokio::process::Child {
        let url = self.worker_url(name);
        let state = self.tmp.join(format!("state-{name}"));
        let log = std::fs::File::create(self.tmp.join(format!("{name}.log"))).unwrap();
        forq_sandbox::host_command(forq_bin())
            .args([
                "worker",
                "--name",
                name,
                "--jobs",
                "2",
                "--lease",
                "2",
                "--poll",
                "0.2",
                "--grace",
                self.grace,
                "--exit-when-idle",
                "--local-repos",
                self.tmp.to_str().unwrap(),
                "--backend",
                "native",
                "--provider",
                "replay",
                "--replay",
                self.replay.to_str().unwrap(),
                "--state",
                state.to_str().unwrap(),
                "--store",
                &url,
                "-v",
            ])
            .env("FORQ_SANDBOX_DIR", &self.sandbox_dir)
            .env("NO_COLOR", "1")
            .stdout(std::process::Stdio::null())
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .expect("start a worker")
    }

    /// What process `pid` left on this machine: mounts and directories
    /// under the workers' sandbox directory, and exec cgroups.
    fn leftovers(&self, pid: u32) -> usize {
        let mounts = std::fs::read_to_string("/proc/self/mountinfo")
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.split(' ').nth(4))
            .filter_map(|p| p.strip_prefix(self.sandbox_dir.to_str().unwrap()))
            .filter(|p| p.split('/').any(|part| owned_by(part, pid)))
            .count();
        let dirs: usize = ["s", "l", "h", "i"]
            .iter()
            .map(|sub| in_dir_owned(&self.sandbox_dir.join(sub), pid))
            .sum();
        let cgroups: usize = std::fs::read_dir("/sys/fs/cgroup")
            .map(|hierarchies| {
                hierarchies
                    .flatten()
                    .map(|h| in_dir_owned(&h.path().join("forq"), pid))
                    .sum()
            })
            .unwrap_or(0);
        mounts + dirs + cgroups
    }
}

fn in_dir_owned(dir: &Path, pid: u32) -> usize {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| owned_by(&e.file_name().to_string_lossy(), pid))
                .count()
        })
        .unwrap_or(0)
}

/// Process `pid`'s start time (clock ticks after boot), while it runs (a
/// zombie, dead and not yet reaped, does not).
fn start_time(pid: u32) -> Option<u64> {
    stat(pid)
        .filter(|(state, _, _)| *state != "Z")
        .map(|(_, _, start)| start)
}

/// Process `pid`'s state, parent and start time, from `/proc/<pid>/stat`.
fn stat(pid: u32) -> Option<(String, u32, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut after = stat[stat.rfind(')')? + 1..].split_whitespace();
    let state = after.next()?.to_owned();
    let parent = after.next()?.parse().ok()?;
    let start = after.nth(17)?.parse().ok()?;
    Some((state, parent, start))
}

/// Every process below `pid` now, each with its start time (a pid the
/// kernel hands out again later is then no match).
fn descendants(pid: u32) -> Vec<(u32, u64)> {
    let all: Vec<(u32, u32, u64)> = std::fs::read_dir("/proc")
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
                .filter_map(|p| stat(p).map(|(_, parent, start)| (p, parent, start)))
                .collect()
        })
        .unwrap_or_default();
    let mut found = Vec::new();
    let mut parents = vec![pid];
    while let Some(parent) = parents.pop() {
        for (p, _, start) in all.iter().filter(|(_, pp, _)| *pp == parent) {
            found.push((*p, *start));
            parents.push(*p);
        }
    }
    found
}

/// Waits until worker `name` drives a run past triage (a sandbox of its
/// own is up), and returns that run's id.
async fn driving_a_fix(store: &Store, name: &str, fleet: &Fleet, pid: u32) -> String {
    let started = Instant::now();
    loop {
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "worker {name} never drove a fix"
        );
        let busy = store.all().unwrap().into_iter().find(|r| {
            r.worker.as_deref() == Some(name)
                && matches!(r.state, State::Implementing | State::Testing)
        });
        if let Some(run) = busy {
            if fleet.leftovers(pid) > 0 {
                return run.id.to_string();
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A fleet for test `test` (or `None`, skipped): examples/calc with the
/// `mutate` brancher, a replay model that always says fix, the issues of
/// `queued` (action, id prefix, how many) recorded with `forq queue
/// --enqueue --require native` on a PostgreSQL store of its own, and
/// workers that get `grace` seconds when stopped.
async fn fleet_for(
    test: &str,
    grace: &'static str,
    queued: &[(&str, &str, usize)],
) -> Option<(tempfile::TempDir, Fleet, Store)> {
    if !native_or_skip(test) {
        return None;
    }
    let url = postgres_or_skip(test)?;
    let tmp = tempfile::tempdir().unwrap();
    let repo = calc_repo(tmp.path(), Some("actions:\n  fix:\n    brancher: mutate\n"));
    let verdict = json!({"act": true, "confidence": 0.9, "reason": "a real bug",
        "suggested_action": "fix"});
    let fleet = Fleet {
        grace,
        url: url.clone(),
        tmp: tmp.path().to_owned(),
        sandbox_dir: tmp.path().join("sandboxes"),
        replay: triage_replay(tmp.path(), &verdict, 600),
    };
    for (action, prefix, n) in queued {
        let dir = issues(tmp.path(), prefix, *n);
        let out = crate::agent::forq_env(
            &[
                "queue",
                "--enqueue",
                // What every worker here offers: its backend.
                "--require",
                "native",
                "--action",
                action,
                "--issues",
                dir.to_str().unwrap(),
                "--repo",
                repo.to_str().unwrap(),
                "--state",
                tmp.path().join("state-queue").to_str().unwrap(),
                "--store",
                &url,
            ],
            &[],
        )
        .await;
        crate::check_exit(&out, 0);
    }
    let store = Store::connect(&url).unwrap();
    Some((tmp, fleet, store))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_killed_mid_run_lose_nothing_and_leave_nothing() {
    // 40 fixes and 160 triages, queued from here in two halves (so fixes
    // are still being driven once half the queue is done); workers drive
    // them, oldest first.
    let Some((_tmp, fleet, store)) = fleet_for(
        "workers_killed_mid_run_lose_nothing_and_leave_nothing",
        "5",
        &[
            ("fix", "f", 20),
            ("triage", "t", 80),
            ("fix", "g", 20),
            ("triage", "u", 80),
        ],
    )
    .await
    else {
        return;
    };
    assert_eq!(store.all().unwrap().len(), 200);

    let mut a = fleet.start("a");
    let mut b = fleet.start("b");
    let mut c = fleet.start("c");
    // Killed in the middle of a fix: a at once, b once half the queue is
    // done; each is replaced by a worker of another name.
    let mut leftovers_at_kill = Vec::new();
    let mut processes_at_kill = Vec::new();
    let mut killed = Vec::new();
    let pid = a.id().expect("a runs");
    let run = driving_a_fix(&store, "a", &fleet, pid).await;
    processes_at_kill.extend(descendants(pid));
    a.start_kill().unwrap();
    a.wait().await.unwrap();
    leftovers_at_kill.push(fleet.leftovers(pid));
    killed.push((pid, run));
    let mut a2 = fleet.start("a2");
    while store
        .all()
        .unwrap()
        .iter()
        .filter(|r| r.state.is_terminal())
        .count()
        < 100
    {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let pid = b.id().expect("b runs");
    let run = driving_a_fix(&store, "b", &fleet, pid).await;
    processes_at_kill.extend(descendants(pid));
    b.start_kill().unwrap();
    b.wait().await.unwrap();
    leftovers_at_kill.push(fleet.leftovers(pid));
    killed.push((pid, run));
    let mut b2 = fleet.start("b2");
    let statuses = tokio::time::timeout(Duration::from_secs(900), async {
        [
            c.wait().await.unwrap(),
            a2.wait().await.unwrap(),
            b2.wait().await.unwrap(),
        ]
    })
    .await
    .expect("the workers ended within 15 minutes");
    assert!(statuses.iter().all(|s| s.success()), "{statuses:?}");

    // Every run ended, in its right state, once.
    let runs = store.all().unwrap();
    assert_eq!(runs.len(), 200);
    let mut outcomes: BTreeMap<(String, &str), usize> = BTreeMap::new();
    for run in &runs {
        let want = if run.issue.id.starts_with(['f', 'g']) {
            State::PatchReady
        } else {
            State::Triaged
        };
        assert_eq!(run.state, want, "{run:?}");
        *outcomes
            .entry((run.action.name().to_owned(), run.state.name()))
            .or_default() += 1;
        let events = store.events(&run.id, 0).unwrap();
        check_history(&run.id, &events);
    }
    // Every run was last held by a worker's own role, never the owner's.
    let holders = forq_sandbox::host_command("psql")
        .as_std_mut()
        .args(["-qAt", &fleet.url, "-c"])
        .arg("SELECT DISTINCT holder_role FROM runs ORDER BY 1")
        .output()
        .expect("psql");
    let holders = String::from_utf8_lossy(&holders.stdout).to_string();
    let roles: Vec<&str> = holders
        .lines()
        .map(|l| l.rsplit('_').next().unwrap_or(l))
        .collect();
    assert!(
        !roles.is_empty() && roles.iter().all(|r| ["a", "b", "c"].contains(r)),
        "{holders}"
    );
    // The two killed runs were taken up again, by another worker.
    for (pid, id) in &killed {
        let events = store.events(id, 0).unwrap();
        let claims: Vec<&RunEvent> = events.iter().filter(|e| e.kind == "claimed").collect();
        assert!(claims.len() >= 2, "{id}: {claims:?}");
        let resumed = events
            .iter()
            .find(|e| e.kind == "resumed")
            .expect("resumed");
        assert_eq!(resumed.data["dead_pid"], json!(pid), "{resumed:?}");
    }
    // Event ids: unique in the store, and in each run's order.
    let all = store.events_after(None, 0, 1_000_000).unwrap();
    let mut ids: Vec<u64> = all.iter().map(|(_, e)| e.id).collect();
    let n = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), n, "an event id was handed out twice");
    // What the killed workers left is gone (their replacements swept it
    // when they started), and it was there to sweep.
    let after: Vec<usize> = killed
        .iter()
        .map(|(pid, _)| fleet.leftovers(*pid))
        .collect();
    // And no process of theirs runs on: a sandbox's shim kills its init
    // when the worker that started it is gone.
    let survivors: Vec<&(u32, u64)> = processes_at_kill
        .iter()
        .filter(|(pid, start)| start_time(*pid) == Some(*start))
        .collect();
    eprintln!(
        "workers killed mid-run: {outcomes:?}; left by the killed workers: {leftovers_at_kill:?} at the kill, {after:?} after; {} processes below them at the kill, {} running after",
        processes_at_kill.len(),
        survivors.len()
    );
    assert!(survivors.is_empty(), "{survivors:?}");
    assert!(
        leftovers_at_kill.iter().all(|n| *n > 0),
        "{leftovers_at_kill:?}"
    );
    assert_eq!(after, [0, 0]);
    assert!(store
        .workers()
        .unwrap()
        .iter()
        .all(|w| w.id != "a2" && w.id != "b2"));
}

/// One run's events: numbered 1, 2, 3… with nothing missing or doubled;
/// created once; one terminal state change; and each written under the
/// fence of the latest claim before it (no holder wrote after another
/// took the run up), the fences counting up from 1.
#[track_caller]
fn check_history(id: &str, events: &[RunEvent]) {
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=events.len() as u64).collect::<Vec<_>>(), "{id}");
    assert_eq!(events.iter().filter(|e| e.kind == "created").count(), 1);
    let ended = events
        .iter()
        .filter(|e| e.kind == "state")
        .filter(|e| {
            e.data["to"]
                .as_str()
                .and_then(State::from_name)
                .is_some_and(State::is_terminal)
        })
        .count();
    assert_eq!(ended, 1, "{id}: {events:?}");
    let mut fence = 0;
    for e in events {
        if e.kind == "claimed" {
            assert_eq!(e.fence, Some(fence + 1), "{id}: claims count up");
            fence += 1;
        } else if e.kind != "created" {
            assert_eq!(
                e.fence,
                Some(fence),
                "{id}: {e:?} written outside the latest claim"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_told_to_stop_hands_its_run_back_and_another_finishes_it() {
    let Some((_tmp, fleet, store)) = fleet_for(
        "a_worker_told_to_stop_hands_its_run_back_and_another_finishes_it",
        "0",
        &[("fix", "s", 1)],
    )
    .await
    else {
        return;
    };
    let mut first = fleet.start("first");
    let pid = first.id().expect("runs");
    let id = driving_a_fix(&store, "first", &fleet, pid).await;
    // SIGTERM with no grace: the run is handed back at once.
    let term = forq_sandbox::host_command("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .await
        .unwrap();
    assert!(term.success());
    let status = tokio::time::timeout(Duration::from_secs(60), first.wait())
        .await
        .expect("the worker stopped within its grace")
        .unwrap();
    assert!(status.success(), "{status:?}");
    let run = store.get(&id).unwrap();
    assert!(!run.is_live(), "{run:?}");
    let handed_back = store
        .events(&id, 0)
        .unwrap()
        .iter()
        .any(|e| e.kind == "handed_back");
    assert!(handed_back && !run.state.is_terminal(), "{run:?}");
    assert!(store.workers().unwrap().is_empty(), "it said it left");
    let mut second = fleet.start("second");
    assert!(second.wait().await.unwrap().success());
    let run = store.get(&id).unwrap();
    assert_eq!(run.state, State::PatchReady, "{run:?}");
    check_history(&id, &store.events(&id, 0).unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_resumed_where_its_workspace_is_not_is_seeded_again_there() {
    let Some((tmp, fleet, store)) = fleet_for(
        "a_run_resumed_where_its_workspace_is_not_is_seeded_again_there",
        "0",
        &[("auto", "m", 1)],
    )
    .await
    else {
        return;
    };
    let mut here = fleet.start("here");
    let pid = here.id().expect("runs");
    let id = driving_a_fix(&store, "here", &fleet, pid).await;
    here.start_kill().unwrap();
    here.wait().await.unwrap();
    // Its machine is gone, and its workspace with it.
    std::fs::rename(tmp.path().join("state-here"), tmp.path().join("gone")).unwrap();
    let mut there = fleet.start("there");
    assert!(there.wait().await.unwrap().success());
    let run = store.get(&id).unwrap();
    assert_eq!(run.state, State::PatchReady, "{run:?}");
    let events = store.events(&id, 0).unwrap();
    assert!(
        events.iter().any(|e| e.kind == "note"
            && e.data["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("seeded again on this machine"))),
        "{events:?}"
    );
    check_history(&id, &events);
    // Its records are in the store, read from anywhere: here, from a
    // state directory that never saw the run.
    let patch = store
        .artifact(&id, "fix.patch")
        .unwrap()
        .expect("the patch");
    let printed = crate::agent::forq_env(
        &[
            "runs",
            "patch",
            &id,
            "--store",
            &fleet.url,
            "--state",
            tmp.path().join("elsewhere").to_str().unwrap(),
        ],
        &[],
    )
    .await;
    crate::check_exit(&printed, 0);
    assert_eq!(printed.stdout, patch);
    assert!(String::from_utf8_lossy(&patch).contains("calc.py"));
    // And pushed from there: the very commit the worker made, from the
    // branch bundle the store keeps, its machine gone too.
    std::fs::rename(tmp.path().join("state-there"), tmp.path().join("gone-too")).unwrap();
    let bare = tmp.path().join("remote.git");
    let init = forq_sandbox::host_command("git")
        .args(["init", "-q", "--bare", bare.to_str().unwrap()])
        .status()
        .await
        .unwrap();
    assert!(init.success());
    let pushed = crate::agent::forq_env(
        &[
            "push",
            &id,
            "--remote",
            bare.to_str().unwrap(),
            "--store",
            &fleet.url,
            "--state",
            tmp.path().join("elsewhere").to_str().unwrap(),
            "--json",
        ],
        &[],
    )
    .await;
    crate::check_exit(&pushed, 0);
    let pushed: serde_json::Value = serde_json::from_slice(&pushed.stdout).unwrap();
    let run = store.get(&id).unwrap();
    let branch = run.branch.clone().expect("a branch");
    let at = forq_sandbox::host_command("git")
        .args([
            "--git-dir",
            bare.to_str().unwrap(),
            "rev-parse",
            &format!("refs/heads/{branch}"),
        ])
        .output()
        .await
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&at.stdout).trim(),
        pushed["commit"].as_str().unwrap(),
        "{pushed}"
    );
    let committed = store
        .events(&id, 0)
        .unwrap()
        .into_iter()
        .find_map(|e| {
            e.data["text"]
                .as_str()
                .and_then(|t| t.strip_prefix("committed "))
                .map(|t| t.split(' ').next().unwrap().to_owned())
        })
        .expect("a commit note");
    assert!(
        pushed["commit"].as_str().unwrap().starts_with(&committed),
        "the worker's commit {committed}, pushed {pushed}"
    );
}
