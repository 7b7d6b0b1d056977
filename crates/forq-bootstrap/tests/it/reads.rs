//! Stack detection reads a stranger's repository on the host: each test
//! performs an attack through a repository's files (SECURITY.md's corpus)
//! and fails when its protection is removed.

use std::time::Duration;

use super::repo;

/// Detects `dir`'s stacks on a thread, or fails when detection does not
/// come back within `secs` (a read that blocks, or one that never ends).
fn detect_within(dir: &std::path::Path, secs: u64) -> Vec<forq_bootstrap::Stack> {
    let (tx, rx) = std::sync::mpsc::channel();
    let dir = dir.to_owned();
    std::thread::spawn(move || {
        let _ = tx.send(forq_bootstrap::detect(&dir));
    });
    rx.recv_timeout(Duration::from_secs(secs))
        .expect("detection came back")
}

/// Attack: a repository's `pyproject.toml` is a link to a host file (the
/// host's own project, a secret): its content became install commands.
/// Another's is a link to `/dev/zero` (read until memory ran out: 2.1 GB
/// resident), and another's `setup.cfg` a fifo (detection blocked for
/// ever). Detection reads beneath the repository only, never a link, a
/// fifo or more than its cap.
#[tokio::test]
async fn detection_never_follows_a_link_blocks_on_a_fifo_or_reads_past_its_cap() {
    let host = tempfile::tempdir().unwrap();
    let secret = host.path().join("pyproject.toml");
    std::fs::write(
        &secret,
        "[project]\nname = \"x\"\n[dependency-groups]\ntest = [\"pytest\", \"host-secret-pkg\"]\n",
    )
    .unwrap();
    let test = (
        "tests/test_a.py",
        "import pytest\n\ndef test_a():\n    assert True\n",
    );
    let linked = repo(&[test]);
    std::os::unix::fs::symlink(&secret, linked.path().join("pyproject.toml")).unwrap();
    let stacks = detect_within(linked.path(), 30);
    let said = format!("{stacks:?}");
    assert!(
        !said.contains("host-secret"),
        "a linked host file was read: {said}"
    );

    let zero = repo(&[test]);
    std::os::unix::fs::symlink("/dev/zero", zero.path().join("pyproject.toml")).unwrap();
    let big = "#".repeat(2 << 20);
    std::fs::write(
        zero.path().join("setup.py"),
        format!("{big}\nextras_require={{'test': ['big-pkg']}}\n"),
    )
    .unwrap();
    let said = format!("{:?}", detect_within(zero.path(), 30));
    assert!(
        !said.contains("big-pkg"),
        "a file past the cap was read whole: {said}"
    );

    let fifo = repo(&[test]);
    let made = forq_sandbox::host_command("mkfifo")
        .arg(fifo.path().join("setup.cfg"))
        .status()
        .await
        .unwrap();
    assert!(made.success());
    detect_within(fifo.path(), 30);
}
