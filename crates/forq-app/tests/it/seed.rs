//! Seeding on real git: a repository's root is cloned shallow with `.git`
//! kept; the size cap holds; a directory inside a repository is copied and
//! committed as the seed.

use std::path::Path;
use std::time::Duration;

use forq_app::seed::{seed, SeedError, SeedOptions};

pub(crate) async fn git(dir: &Path, args: &[&str]) -> String {
    let out = forq_sandbox::host_command("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(dir)
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A repository with three commits and an uncommitted change.
async fn repo(dir: &Path) -> std::path::PathBuf {
    let repo = dir.join("repo");
    std::fs::create_dir_all(repo.join("sub")).unwrap();
    git(&repo, &["init", "-q", "-b", "trunk"]).await;
    for i in 0..3 {
        std::fs::write(repo.join("sub/f.txt"), format!("version {i}\n")).unwrap();
        git(&repo, &["add", "-A"]).await;
        git(&repo, &["commit", "-qm", &format!("c{i}")]).await;
    }
    std::fs::write(repo.join("sub/f.txt"), "uncommitted\n").unwrap();
    repo
}

#[tokio::test]
async fn a_repository_root_is_cloned_shallow_from_its_last_commit() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = repo(tmp.path()).await;
    let ws = tmp.path().join("ws");
    let seeded = seed(repo.to_str().unwrap(), &ws, &SeedOptions::default())
        .await
        .unwrap();
    assert_eq!(seeded.how, "clone");
    assert_eq!(seeded.base, "trunk");
    assert_eq!(
        git(&ws, &["rev-list", "--count", "HEAD"]).await,
        "1",
        "depth 1"
    );
    assert_eq!(seeded.head, git(&repo, &["rev-parse", "HEAD"]).await);
    assert_eq!(
        std::fs::read_to_string(ws.join("sub/f.txt")).unwrap(),
        "version 2\n"
    );
    // forq's own records never show up in git.
    std::fs::create_dir_all(ws.join(".forq")).unwrap();
    std::fs::write(ws.join(".forq/x"), "x").unwrap();
    assert_eq!(git(&ws, &["status", "--porcelain"]).await, "");
    // A second seed into the same place is refused; the first stays.
    let again = seed(repo.to_str().unwrap(), &ws, &SeedOptions::default()).await;
    assert!(again.is_err());
}

#[tokio::test]
async fn a_directory_inside_a_repository_is_copied_and_committed() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = repo(tmp.path()).await;
    std::fs::write(repo.join("sub/.gitignore"), "*.log\n").unwrap();
    std::fs::write(repo.join("sub/noise.log"), "x").unwrap();
    let ws = tmp.path().join("ws");
    let seeded = seed(
        repo.join("sub").to_str().unwrap(),
        &ws,
        &SeedOptions::default(),
    )
    .await
    .unwrap();
    assert_eq!(seeded.how, "copy");
    assert_eq!(
        std::fs::read_to_string(ws.join("f.txt")).unwrap(),
        "uncommitted\n"
    );
    assert!(!ws.join("noise.log").exists(), "ignored files stay behind");
    assert_eq!(git(&ws, &["status", "--porcelain"]).await, "");
    assert_eq!(git(&ws, &["rev-list", "--count", "HEAD"]).await, "1");
}

#[tokio::test]
async fn caps_on_size_refuse_and_leave_nothing_behind() {
    let tmp = tempfile::tempdir().unwrap();
    let big = tmp.path().join("big");
    std::fs::create_dir(&big).unwrap();
    std::fs::write(big.join("blob"), vec![7u8; 2 << 20]).unwrap();
    let ws = tmp.path().join("ws");
    let tiny = SeedOptions {
        max_bytes: 1 << 20,
        timeout: Duration::from_secs(60),
    };
    let err = seed(big.to_str().unwrap(), &ws, &tiny).await.unwrap_err();
    assert!(matches!(err, SeedError::TooLarge { .. }), "{err}");
    assert!(err.to_string().contains("max_seed_mb"), "{err}");
    assert!(!ws.exists());

    let missing = seed("/no/such/dir", &ws, &SeedOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(missing, SeedError::Missing(_)), "{missing}");
}

/// A bare base repository under `tmp`: `main` at a first commit, and
/// GitHub's `refs/pull/<number>/head` at a second one that `change` makes
/// in the work tree; the bare repository and the head's sha.
async fn base_with_pull(
    tmp: &Path,
    number: u64,
    change: impl FnOnce(&Path),
) -> (std::path::PathBuf, String) {
    let work = tmp.join("work");
    std::fs::create_dir_all(&work).unwrap();
    git(&work, &["init", "-q", "-b", "main"]).await;
    std::fs::write(work.join("f.txt"), "base\n").unwrap();
    git(&work, &["add", "-A"]).await;
    git(&work, &["commit", "-qm", "base"]).await;
    change(&work);
    git(&work, &["add", "-A"]).await;
    git(&work, &["commit", "-qm", "head"]).await;
    let head = git(&work, &["rev-parse", "HEAD"]).await;
    let bare = tmp.join("base.git");
    git(tmp, &["init", "-q", "--bare", bare.to_str().unwrap()]).await;
    let pull_ref = format!("HEAD:refs/pull/{number}/head");
    for refspec in ["HEAD~1:refs/heads/main", pull_ref.as_str()] {
        git(&work, &["push", "-q", bare.to_str().unwrap(), refspec]).await;
    }
    (bare, head)
}

/// The run's record of pull request `number` of `o/r`, its head `head` on
/// branch `head_ref` of `head_repo`.
fn pull_record(
    number: u64,
    head: &str,
    head_ref: &str,
    head_repo: &str,
) -> forq_app::store::PullRecord {
    serde_json::from_value(serde_json::json!({
        "number": number, "repo": "o/r", "head_sha": head, "head_ref": head_ref,
        "head_repo": head_repo, "head_clone_url": "", "base_ref": "main",
        "maintainer_can_modify": false, "targets_from": "local",
    }))
    .unwrap()
}

/// A pull request's head is a stranger's: one that brings a `.forq` link
/// to a host directory, names its head repository on another transport (a
/// host elsewhere) than its base, and a branch that is no branch name (one
/// that reads as an option), gets none of them.
#[tokio::test]
async fn a_pull_requests_head_brings_no_forq_link_no_transport_and_no_option() {
    use forq_app::store::PullRecord;
    let tmp = tempfile::tempdir().unwrap();
    let (bare, head) = base_with_pull(tmp.path(), 3, |work| {
        std::os::unix::fs::symlink("/etc", work.join(".forq")).unwrap();
        std::fs::write(work.join("f.txt"), "head\n").unwrap();
    })
    .await;
    // A branch that reads as an option is no record of a pull request:
    // the row that says so is refused where it is read.
    let mut forged = serde_json::to_value(pull_record(3, &head, "topic", "f/r")).unwrap();
    forged["head_ref"] = "--force".into();
    assert!(serde_json::from_value::<PullRecord>(forged).is_err());
    let pull = PullRecord {
        // Another transport than origin's (file://): a host elsewhere.
        head_clone_url: "https://evil.example/f/r.git".to_owned(),
        maintainer_can_modify: true,
        ..pull_record(3, &head, "topic", "f/r")
    };
    let ws = tmp.path().join("ws");
    let source = format!("file://{}", bare.display());
    let seeded = forq_app::seed::seed_pull(&source, &ws, &SeedOptions::default(), &pull)
        .await
        .unwrap();
    assert_eq!(seeded.head, head, "seeded at the pull request's head");
    assert_eq!(std::fs::read_to_string(ws.join("f.txt")).unwrap(), "head\n");
    assert!(seeded.removed_forq, "the head's .forq was removed");
    assert!(ws.join(".forq").symlink_metadata().is_err());
    assert_eq!(
        git(&ws, &["remote"]).await,
        "origin",
        "a head reached another way than origin is no remote"
    );
    // Its branch name, as a push's destination, is refused.
    git(&ws, &["checkout", "-q", "-b", "forq/fix/1"]).await;
    git(&ws, &["remote", "add", "pr-head", bare.to_str().unwrap()]).await;
    for dest in ["--force", "a..b", "refs/heads/../x"] {
        let pushed = forq_app::git::push(
            &ws,
            &forq_app::git::PushSpec {
                remote: "pr-head",
                branch: "forq/fix/1",
                dest: Some(dest),
                expected: Some(&head),
                local_paths: false,
                credential: None,
            },
        )
        .await;
        assert!(
            matches!(pushed, Err(forq_app::git::GitError::Remote { .. })),
            "{dest}: {pushed:?}"
        );
    }
    // A head that moved since the run was queued is refused.
    let moved = pull_record(3, &"0".repeat(40), "topic", "f/r");
    let err = forq_app::seed::seed_pull(
        &source,
        &tmp.path().join("ws2"),
        &SeedOptions::default(),
        &moved,
    )
    .await
    .unwrap_err();
    assert!(
        matches!(err, SeedError::PullMoved { number: 3, .. }),
        "{err}"
    );
    assert!(
        !tmp.path().join("ws2").exists(),
        "nothing is left half-made"
    );
}

/// A pull request's head is held to the seed's size cap as the clone is:
/// a head whose pack is a few KiB and whose tree is 8 MiB of zeros (or
/// any size) is refused under a 4 MiB cap, and nothing is left. Before,
/// the fetch of `refs/pull/N/head` and its checkout ran uncapped.
#[tokio::test]
async fn a_pull_requests_head_past_the_size_cap_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let (bare, head) = base_with_pull(tmp.path(), 4, |work| {
        std::fs::write(work.join("zeros.bin"), vec![0u8; 8 << 20]).unwrap();
    })
    .await;
    let pull = pull_record(4, &head, "topic", "o/r");
    let source = format!("file://{}", bare.display());
    let caps = SeedOptions {
        max_bytes: 4 << 20,
        ..SeedOptions::default()
    };
    let ws = tmp.path().join("ws");
    let err = forq_app::seed::seed_pull(&source, &ws, &caps, &pull)
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            SeedError::Clone(forq_bootstrap::CloneError::TooLarge { .. })
        ),
        "{err}"
    );
    assert!(err.to_string().contains("size cap of 4 MiB"), "{err}");
    assert!(!ws.exists(), "nothing is left half-made");
    // Under a cap it fits, the same head seeds.
    let seeded = forq_app::seed::seed_pull(&source, &ws, &SeedOptions::default(), &pull)
        .await
        .unwrap();
    assert_eq!(seeded.head, pull.head_sha);
}

/// A push's token goes to an HTTPS remote only: offered for a remote on
/// plain `http://` (here a listener on loopback that records what reaches
/// it), git is never handed it, and no request carries it, while git
/// itself did ask that remote.
#[tokio::test]
async fn a_push_token_never_goes_to_a_plain_http_remote() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let heads = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = heads.clone();
    let server = tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && conn.read(&mut byte).await.unwrap_or(0) == 1 {
                head.push(byte[0]);
            }
            seen.lock()
                .unwrap()
                .push(String::from_utf8_lossy(&head).into_owned());
            let _ = conn
                .write_all(
                    b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                )
                .await;
        }
    });
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    git(&ws, &["init", "-q", "-b", "fix"]).await;
    std::fs::write(ws.join("f.txt"), "fixed\n").unwrap();
    git(&ws, &["add", "-A"]).await;
    git(&ws, &["commit", "-qm", "fix"]).await;
    let url = format!("http://127.0.0.1:{port}/o/r.git");
    git(&ws, &["remote", "add", "plain", &url]).await;
    let token = "ghs_forq-test-token-never-sent";
    let pushed = forq_app::git::push(
        &ws,
        &forq_app::git::PushSpec {
            remote: "plain",
            branch: "fix",
            dest: None,
            expected: None,
            local_paths: false,
            credential: Some(token),
        },
    )
    .await;
    assert!(pushed.is_err(), "the remote refuses every push: {pushed:?}");
    server.abort();
    let heads = heads.lock().unwrap().clone();
    assert!(
        heads.iter().any(|h| h.contains("/o/r.git/info/refs")),
        "git asked the remote: {heads:?}"
    );
    use base64::Engine as _;
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("x-access-token:{token}"));
    for head in &heads {
        assert!(
            !head.to_ascii_lowercase().contains("authorization") && !head.contains(&basic),
            "{head}"
        );
    }
}
