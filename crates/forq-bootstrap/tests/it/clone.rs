//! Shallow clones of a URL, within their caps.

use std::time::Duration;

use forq_bootstrap::{clone_shallow, is_git_url, CloneError, CloneOptions};

async fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let out = forq_sandbox::host_command("git")
        .args(["-c", "user.name=forq", "-c", "user.email=forq@localhost"])
        .args(args)
        .current_dir(dir)
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A repository with three commits, the last adding `extra` (bytes of
/// incompressible data).
async fn origin(extra: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q"]).await;
    for i in 0..3 {
        std::fs::write(dir.path().join("file.txt"), format!("version {i}\n")).unwrap();
        if i == 2 && extra > 0 {
            // xorshift noise: git cannot compress it below its size.
            let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
            let noise: Vec<u8> = (0..extra)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            std::fs::write(dir.path().join("blob.bin"), noise).unwrap();
        }
        git(dir.path(), &["add", "."]).await;
        git(dir.path(), &["commit", "-q", "-m", &format!("commit {i}")]).await;
    }
    dir
}

#[test]
fn urls_are_told_from_paths() {
    for url in [
        "https://github.com/o/r.git",
        "http://127.0.0.1:9/r",
        "ssh://git@host/r",
        "git://host/r",
        "file:///srv/r.git",
        "git@github.com:o/r.git",
    ] {
        assert!(is_git_url(url), "{url}");
    }
    for path in [".", "repo", "/srv/repo", "./a:b", "dir/with@sign:x"] {
        assert!(!is_git_url(path), "{path}");
    }
}

#[tokio::test]
async fn a_clone_is_shallow_single_branch_and_keeps_git() {
    let origin = origin(0).await;
    let into = tempfile::tempdir().unwrap();
    let dest = into.path().join("work");
    let url = format!("file://{}", origin.path().display());
    clone_shallow(&url, &dest, &CloneOptions::default())
        .await
        .unwrap();
    assert_eq!(git(&dest, &["rev-list", "--count", "HEAD"]).await, "1");
    assert_eq!(
        std::fs::read_to_string(dest.join("file.txt")).unwrap(),
        "version 2\n"
    );
    // A second clone into the same place is refused, and leaves it alone.
    let again = clone_shallow(&url, &dest, &CloneOptions::default()).await;
    assert!(matches!(again, Err(CloneError::Exists(_))), "{again:?}");
    assert!(dest.join(".git").is_dir());
}

#[tokio::test]
async fn a_clone_past_its_size_cap_is_stopped_and_removed() {
    let origin = origin(3 << 20).await;
    let into = tempfile::tempdir().unwrap();
    let dest = into.path().join("work");
    let url = format!("file://{}", origin.path().display());
    let err = clone_shallow(&url, &dest, &CloneOptions::default().max_bytes(1 << 20))
        .await
        .unwrap_err();
    assert!(matches!(err, CloneError::TooLarge { .. }), "{err:?}");
    assert!(err.to_string().contains("size cap of 1 MiB"), "{err}");
    assert!(!dest.exists());
}

#[tokio::test]
async fn a_hung_clone_is_killed_at_its_timeout_and_removed() {
    // A server that accepts and does not answer for 5 s: past the 1 s cap
    // (git would end with its own error if the cap did not stop it first).
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let held = std::thread::spawn(move || {
        let conns: Vec<_> = listener.incoming().take(1).collect();
        std::thread::sleep(Duration::from_secs(5));
        drop(conns);
    });
    let into = tempfile::tempdir().unwrap();
    let dest = into.path().join("work");
    let url = format!("http://127.0.0.1:{port}/repo.git");
    let err = clone_shallow(
        &url,
        &dest,
        &CloneOptions::default().timeout(Duration::from_secs(1)),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, CloneError::Timeout { .. }), "{err:?}");
    assert!(!dest.exists());
    held.join().unwrap();
}

#[tokio::test]
async fn a_clone_git_refuses_says_why() {
    let into = tempfile::tempdir().unwrap();
    let dest = into.path().join("work");
    let missing = into.path().join("no-such-repo");
    let err = clone_shallow(
        &format!("file://{}", missing.display()),
        &dest,
        &CloneOptions::default(),
    )
    .await
    .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, CloneError::Git { .. }), "{err:?}");
    assert!(
        text.contains("does not appear to be a git repository"),
        "{text}"
    );
    assert!(!dest.exists());
}
