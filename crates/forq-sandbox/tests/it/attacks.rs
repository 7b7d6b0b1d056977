//! The sandbox's part of forq's adversarial corpus (SECURITY.md lists the
//! whole of it): each test performs one attack on what forq does *on the
//! host* with what a sandbox's occupants control, and fails when the
//! protection is removed.

use std::path::Path;

use std::time::Duration;

use forq_sandbox::{ChangeKind, ExecRequest, Network};

use crate::common::{sh, Harness};

/// A host directory holding a root-only "private key", as `/etc/ssl/private`
/// does; removed with the guard.
fn host_secrets() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::Builder::new()
        .prefix("forq-it-host-secrets-")
        .tempdir()
        .unwrap();
    let key = dir.path().join("server.key");
    std::fs::write(&key, "-----BEGIN PRIVATE KEY----- host secret\n").unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    dir
}

/// Attack: the model's command leaves a fifo and a sparse 7 GiB file in
/// the workspace, and a link where a file was; forq's file reads (an
/// agent's view, a test report) blocked on the fifo for ever, read the
/// sparse file whole into memory, or followed the link. A read is of a
/// regular file only, never blocks, stops at its cap, and never follows a
/// link out.
pub(crate) async fn reads_never_block_never_pass_their_cap_never_leave(h: &Harness) {
    let secrets = host_secrets();
    let sb = h.create().await;
    let target = secrets.path().join("server.key").display().to_string();
    let out = sh(
        &*sb,
        &format!("mkfifo pipe && truncate -s 7G big && ln -s {target} key && echo small > small"),
    )
    .await;
    assert_eq!(out.exit_code, Some(0), "{out:?}");
    let read = |p: &'static str, max: u64| {
        let sb = &sb;
        async move {
            tokio::time::timeout(
                Duration::from_secs(20),
                sb.read_file_within(Path::new(p), max),
            )
            .await
            .unwrap_or_else(|_| panic!("reading {p} blocked"))
        }
    };
    assert!(read("pipe", 1 << 20).await.is_err(), "a fifo is not a file");
    let big = read("big", 1 << 20).await.expect_err("past the cap");
    assert!(matches!(big, forq_sandbox::Error::TooLarge { .. }), "{big}");
    let key = read("key", 1 << 20).await;
    assert!(
        !key.is_ok_and(|k| String::from_utf8_lossy(&k).contains("host secret")),
        "a link reached the host's file"
    );
    assert_eq!(read("small", 1 << 20).await.unwrap(), b"small\n");
    sb.destroy().await.unwrap();
}

/// Attack: a repository commits `x -> /etc`; the model's command replaces
/// the link with a directory (`rm x && mkdir x`) and, the other way round,
/// a directory with a link to the host's secrets. The patch is computed on
/// the host, as root: before the fix it listed every file under the host
/// directory as deleted, with its content. A link is a link in the diff
/// (mode 120000, its target as text), never a door.
pub(crate) async fn a_link_in_the_tree_is_a_link_in_the_diff_never_a_door(h: &Harness) {
    let secrets = host_secrets();
    let repo = h.repo.path();
    std::os::unix::fs::symlink(secrets.path(), repo.join("x")).unwrap();
    let sb = h.create().await;
    let target = secrets.path().display().to_string();
    let out = sh(
        &*sb,
        &format!("rm x && mkdir x && touch x/keep && rm -r docs && ln -s {target} docs"),
    )
    .await;
    assert_eq!(out.exit_code, Some(0), "{out:?}");
    let diff = sb.diff().await.unwrap();
    assert!(
        !diff.patch.contains("host secret") && !diff.patch.contains("server.key"),
        "the patch carries the host's files:\n{}",
        diff.patch
    );
    let got: Vec<_> = diff
        .files
        .iter()
        .map(|f| (f.path.as_str(), f.kind))
        .collect();
    assert_eq!(
        got,
        vec![
            ("docs", ChangeKind::Added),
            ("docs/a.md", ChangeKind::Deleted),
            ("docs/b.md", ChangeKind::Deleted),
            ("x", ChangeKind::Deleted),
            ("x/keep", ChangeKind::Added),
        ],
        "{}",
        diff.patch
    );
    // Both links travel as links: their targets are the patch's text.
    assert!(
        diff.patch.contains("deleted file mode 120000"),
        "{}",
        diff.patch
    );
    assert!(
        diff.patch.contains("new file mode 120000"),
        "{}",
        diff.patch
    );
    assert!(Path::new(&target).join("server.key").exists());
    sb.destroy().await.unwrap();
}

/// Attack: an install step (the one exec with a way out, through the
/// egress proxy) starts a daemon that outlives it into the test and agent
/// execs. Nothing an install started is running after it.
pub(crate) async fn an_install_steps_processes_end_with_it(h: &Harness) {
    let sb = h.create_with(h.spec().network(Network::None)).await;
    let install = sb
        .exec(
            ExecRequest::shell("(setsid sleep 31337 >/dev/null 2>&1 &) ; (nohup sleep 31337 >/dev/null 2>&1 &); echo started")
                .network(Network::Proxy)
                .timeout(Duration::from_secs(30)),
        )
        .await
        .unwrap();
    assert_eq!(install.stdout_text().trim(), "started", "{install:?}");
    let after = sh(
        &*sb,
        "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done | grep -c '[s]leep 31337'",
    )
    .await;
    assert_eq!(
        after.stdout_text().trim(),
        "0",
        "the install's daemons live on: {after:?}"
    );
    sb.destroy().await.unwrap();
}
