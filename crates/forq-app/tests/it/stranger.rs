//! The store as input from a stranger: every worker sharing a store runs
//! strangers' code, so a row, a checkpoint or an artifact may have been
//! written by an attacker. Each test performs an attack through the store
//! and fails when its protection is removed.

use std::path::Path;

use forq_app::github::Github;
use forq_app::publish::{push, PublishError, PushOptions};
use forq_app::store::{NewRun, State, Store, StoreError};

use crate::seed::git;

/// A repository with one commit, and the run store a push reads, holding a
/// run on it that ended with `branch` committed.
async fn finished_run(dir: &Path) -> (std::path::PathBuf, Store, String, String) {
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::write(repo.join("calc.py"), "def add(a, b):\n    return a - b\n").unwrap();
    git(&repo, &["init", "-q", "-b", "main"]).await;
    git(&repo, &["add", "-A"]).await;
    git(&repo, &["commit", "-qm", "seed"]).await;
    let head = git(&repo, &["rev-parse", "HEAD"]).await;
    let store = Store::open(&dir.join("state/forq.db")).unwrap();
    let run = store
        .create(&NewRun::fix("7", "add() subtracts", repo.to_str().unwrap()))
        .unwrap();
    let branch = format!("forq/fix/{}", run.id);
    store.record(&run.id, None, Some(2), Some(&branch)).unwrap();
    store
        .transition(&run.id, State::PatchReady, "green")
        .unwrap();
    (repo, store, run.id.to_string(), head)
}

/// A bundle of `branch` made on a clone of `repo`: the seed, then a commit
/// that writes `files`; and the diff it makes.
async fn bundle(
    dir: &Path,
    repo: &Path,
    branch: &str,
    files: &[(&str, &str)],
) -> (Vec<u8>, Vec<u8>) {
    let work = dir.join("work");
    git(
        dir,
        &[
            "clone",
            "-q",
            repo.to_str().unwrap(),
            work.to_str().unwrap(),
        ],
    )
    .await;
    git(&work, &["checkout", "-q", "-b", branch]).await;
    for (name, text) in files {
        std::fs::write(work.join(name), text).unwrap();
    }
    git(&work, &["add", "-A"]).await;
    git(&work, &["commit", "-qm", "fix"]).await;
    let out = dir.join("b.bundle");
    git(
        &work,
        &[
            "bundle",
            "create",
            "-q",
            out.to_str().unwrap(),
            &format!("main..{branch}"),
        ],
    )
    .await;
    let diff = git(&work, &["diff", "main", branch]).await + "\n";
    std::fs::remove_dir_all(&work).unwrap();
    (std::fs::read(out).unwrap(), diff.into_bytes())
}

async fn push_to(
    store: &Store,
    state: &Path,
    id: &str,
    remote: &Path,
) -> Result<String, PublishError> {
    let mut options = PushOptions::new().remote(remote.to_str().unwrap());
    options.local_paths = true;
    let github = Github::new("http://127.0.0.1:9", None);
    push(store, state, &github, id, &options)
        .await
        .map(|p| p.commit)
}

async fn bare(dir: &Path) -> std::path::PathBuf {
    let bare = dir.join("remote.git");
    git(dir, &["init", "-q", "--bare", bare.to_str().unwrap()]).await;
    bare
}

/// Attack: a stored `seeded` checkpoint whose head is a git option. The
/// restore on a machine without the workspace fetched `origin <head>`, and
/// git ran the option's program as root. The head is now an object id
/// given after `--`, and this one is refused before git runs.
#[tokio::test]
async fn a_stored_seed_that_is_a_git_option_never_reaches_git() {
    let tmp = tempfile::tempdir().unwrap();
    let (_repo, store, id, _head) = finished_run(tmp.path()).await;
    let pwned = tmp.path().join("PWNED");
    let head = format!("--upload-pack=touch {}; git-upload-pack", pwned.display());
    store
        .checkpoint(
            &id,
            "seeded",
            &serde_json::json!({"workspace": "/", "how": "clone", "head": head, "base": "main", "files": 1}),
        )
        .unwrap();
    store
        .put_artifact(&id, "branch.bundle", b"not a bundle")
        .unwrap();
    let remote = bare(tmp.path()).await;
    let result = push_to(&store, &tmp.path().join("state"), &id, &remote).await;
    assert!(!pwned.exists(), "git ran the stored option");
    let err = result.expect_err("refused");
    assert!(
        matches!(&err, PublishError::Restore { reason, .. } if reason.contains("commit id")),
        "{err}"
    );
}

/// Attack: a worker stores a branch bundle that is not its run's patch (a
/// commit that adds a workflow), beside the `fix.patch` a reviewer reads.
/// A push from another machine pushed the bundle as it was, with the
/// App's token. Now the branch is pushed only when each commit after the
/// seed is the run's patch applied to the seed.
#[tokio::test]
async fn a_stored_bundle_that_is_not_the_runs_patch_is_never_pushed() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, store, id, head) = finished_run(tmp.path()).await;
    let branch = store.get(&id).unwrap().branch.unwrap().to_string();
    let seeded = serde_json::json!({"workspace": "/", "how": "clone", "head": head, "base": "main", "files": 1});
    store.checkpoint(&id, "seeded", &seeded).unwrap();
    let fixed = "def add(a, b):\n    return a + b\n";
    let (good, patch) = bundle(tmp.path(), &repo, &branch, &[("calc.py", fixed)]).await;
    store.put_artifact(&id, "fix.patch", &patch).unwrap();
    let (evil, _) = bundle(
        tmp.path(),
        &repo,
        &branch,
        &[("calc.py", fixed), ("deploy.yml", "on: push\n")],
    )
    .await;
    store.put_artifact(&id, "branch.bundle", &evil).unwrap();
    let remote = bare(tmp.path()).await;
    let state = tmp.path().join("state");
    let err = push_to(&store, &state, &id, &remote)
        .await
        .expect_err("refused");
    assert!(
        matches!(&err, PublishError::Restore { reason, .. } if reason.contains("is not the run's fix.patch")),
        "{err}"
    );
    let pushed = git(&remote, &["for-each-ref", "--format=%(refname)"]).await;
    assert_eq!(pushed, "", "nothing reached the remote");

    // The run's own bundle goes.
    store.put_artifact(&id, "branch.bundle", &good).unwrap();
    let commit = push_to(&store, &state, &id, &remote).await.expect("pushed");
    let at = git(&remote, &["rev-parse", &format!("refs/heads/{branch}")]).await;
    assert_eq!(at, commit);
}

/// Attack: a run queued into a shared store with an id that is a path
/// (`/etc`): a worker removed `<id>/workspace` and uploaded files from
/// under `<id>` into the artifacts table. Such a row is no run: it is
/// refused when read, left out of listings, and never claimed.
/// An issue as forq stores one: only the row's id or action is off.
const ISSUE: &str = r#"{"id":"2","title":"b","body":"","source":"s"}"#;

#[test]
fn a_row_whose_id_is_a_path_is_never_a_run() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("forq.db");
    let store = Store::open(&path).unwrap();
    let good = store.create(&NewRun::fix("1", "a", "/r")).unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    for (id, issue, action) in [
        ("/etc", ISSUE, "fix"),
        ("..", ISSUE, "fix"),
        ("-rf", ISSUE, "fix"),
        ("20261207-000000-beef", "not json", "fix"),
        ("20261207-000000-cafe", ISSUE, "rm -rf"),
    ] {
        conn.execute(
            "INSERT INTO runs (id, issue, repo, action, state, created_ms, updated_ms, context, requires)
             VALUES (?1, ?2, '/r', ?3, 'queued', 0, 0, '[]', '[]')",
            rusqlite::params![id, issue, action],
        )
        .unwrap();
        let err = store.get(id).expect_err(id);
        assert!(matches!(err, StoreError::Malformed { .. }), "{id}: {err}");
        if issue == ISSUE && action == "fix" {
            assert!(
                err.to_string().contains("is not one: one path component"),
                "{err}"
            );
        }
    }
    let listed: Vec<String> = store
        .all()
        .unwrap()
        .into_iter()
        .map(|r| r.id.to_string())
        .collect();
    assert_eq!(listed, [good.id.to_string()]);
    let claimed = store
        .claim_next(10, std::time::Duration::from_secs(60), &[], &[])
        .unwrap();
    let claimed: Vec<String> = claimed.into_iter().map(|r| r.id.to_string()).collect();
    assert_eq!(claimed, [good.id.to_string()]);
}

/// Attack: a stored `seeded` checkpoint names a workspace elsewhere on
/// the machine (`/`, another tenant's checkout): a resumed run used it as
/// its own. The workspace is always this machine's for the run.
#[test]
fn a_stored_workspace_path_is_never_used() {
    let stored = serde_json::json!({
        "workspace": "/", "how": "clone", "head": "a".repeat(40), "base": "main", "files": 1
    });
    let mine = Path::new("/var/tmp/forq/runs/r1/workspace");
    let seeded = forq_app::seed::Seeded::stored(stored, mine).unwrap();
    assert_eq!(seeded.workspace, mine);
    let bad =
        serde_json::json!({"how": "ext::sh", "head": "a".repeat(40), "base": "main", "files": 1});
    assert!(forq_app::seed::Seeded::stored(bad, mine).is_err());
}

#[cfg(feature = "postgres")]
#[allow(clippy::print_stderr)] // a skip is said where a developer sees it
fn skip(why: &str) {
    eprintln!("SKIPPED: {why}");
}

/// A store on the PostgreSQL server `FORQ_TEST_PG_URL` names, a database
/// of its own (`.ci/run` starts one; without it, this says so and the
/// test skips).
#[cfg(feature = "postgres")]
fn shared_store() -> Option<std::sync::Arc<Store>> {
    let admin = std::env::var("FORQ_TEST_PG_URL")
        .ok()
        .filter(|u| !u.is_empty());
    let Some(admin) = admin else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must name a PostgreSQL server"
        );
        skip("no FORQ_TEST_PG_URL (a PostgreSQL server to make a database on)");
        return None;
    };
    let url = forq_app::store::fresh_postgres(&admin).unwrap();
    Some(std::sync::Arc::new(Store::connect(&url).unwrap()))
}

/// Attack: a run queued into a shared store whose repository is a
/// directory of the worker's machine (`/root`, another tenant's
/// checkout): the worker copied it into a workspace, in reach of the
/// model and of the store. From a shared store, a local repository is
/// read only from under a directory the operator named.
#[cfg(feature = "postgres")]
#[tokio::test]
async fn a_shared_stores_local_repository_is_read_only_where_the_operator_said() {
    let Some(store) = shared_store() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let secret = tmp.path().join("secrets");
    std::fs::create_dir_all(&secret).unwrap();
    std::fs::write(secret.join("id_rsa"), "PRIVATE KEY\n").unwrap();
    let mut host = forq_sandbox::HostOptions::default();
    host.state_dir = Some(tmp.path().join("sandboxes"));
    let backend = std::sync::Arc::new(forq_sandbox::HostBackend::open(host).unwrap());
    let config = forq_app::config::Config::parse("triage:\n  enabled: false\n", "ops.yml").unwrap();
    let state = tmp.path().join("state");
    let pipeline =
        forq_app::pipeline::Pipeline::new(store.clone(), &state, backend).config(Some(config));
    let mut queued = NewRun::fix("1", "read me", secret.to_str().unwrap());
    queued.context.push(forq_app::store::ContextFile {
        source: "/etc/hostname".to_owned(),
        dest: "host.txt".to_owned(),
        text: None,
    });
    for repo in [
        secret.to_str().unwrap().to_owned(),
        format!("file://{}", secret.display()),
    ] {
        queued.repo = repo.clone();
        let run = store.create(&queued).unwrap();
        let done = pipeline.execute(&run.id).await.unwrap();
        assert_eq!(done.state, State::Failed, "{repo}: {}", done.reason);
        assert!(done.reason.contains("--local-repos"), "{}", done.reason);
        assert!(
            !pipeline.workspace(&run.id).join("id_rsa").exists(),
            "{repo} was copied"
        );
    }
    // Named by the operator, it is read; a context file that names only a
    // path on some machine is not.
    let named = pipeline.clone().local_repos(&[tmp.path().to_owned()]);
    queued.repo = secret.to_str().unwrap().to_owned();
    let run = store.create(&queued).unwrap();
    let done = named.execute(&run.id).await.unwrap();
    assert!(
        done.reason.contains("context file /etc/hostname") && done.reason.contains("shared store"),
        "{}",
        done.reason
    );
    queued.context.clear();
    let run = store.create(&queued).unwrap();
    let done = named.execute(&run.id).await.unwrap();
    assert!(!done.reason.contains("--local-repos"), "{}", done.reason);
    assert!(store.checkpointed(&run.id, "seeded").unwrap().is_some());
}
