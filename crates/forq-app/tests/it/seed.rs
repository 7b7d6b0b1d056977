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
