//! The behaviour every backend promises, one function per behaviour; each
//! runs against every backend that claims it (see `main.rs`).

pub(crate) use crate::attacks::{
    a_link_in_the_tree_is_a_link_in_the_diff_never_a_door, an_install_steps_processes_end_with_it,
    reads_never_block_never_pass_their_cap_never_leave,
};
use std::path::Path;
use std::time::Duration;

use forq_sandbox::{
    Backend, BackendKind, ChangeKind, Error, ExecRequest, Limits, Network, SandboxSpec,
};
use tokio::net::TcpListener;

use crate::common::{eventually, host_processes_with, rel, sh, Harness};

mod limits;
mod network;

pub(crate) use limits::*;
pub(crate) use network::*;

pub(crate) async fn exec_reports_exit_code_signal_and_output(h: &Harness) {
    let sb = h.create().await;
    let out = sh(&*sb, "echo out; echo err >&2; exit 7").await;
    assert_eq!((out.exit_code, out.signal), (Some(7), None));
    assert_eq!(out.stdout_text(), "out\n");
    assert_eq!(out.stderr_text(), "err\n");
    assert_eq!(out.shell_code(), 7);

    let out = sh(&*sb, "kill -9 $$").await;
    assert_eq!((out.exit_code, out.signal), (None, Some(9)), "{out:?}");
    assert_eq!(out.shell_code(), 137);

    let out = sb
        .exec(ExecRequest::new(["cat", "README.md"]).cwd(""))
        .await
        .unwrap();
    assert_eq!(out.stdout_text(), "# fixture\n");
    let out = sb
        .exec(ExecRequest::new(["pwd"]).cwd("src/deep"))
        .await
        .unwrap();
    assert!(
        out.stdout_text().trim_end().ends_with("src/deep"),
        "{out:?}"
    );
    sb.destroy().await.unwrap();
}

pub(crate) async fn stdin_is_fed_and_env_is_set(h: &Harness) {
    let sb = h.create_with(h.spec().env("FROM_SPEC", "spec")).await;
    let out = sb
        .exec(
            ExecRequest::shell("read line; echo \"$line/$FROM_SPEC/$FROM_REQ\"")
                .stdin("piped\n")
                .env("FROM_REQ", "req"),
        )
        .await
        .unwrap();
    assert_eq!(out.stdout_text(), "piped/spec/req\n");
    sb.destroy().await.unwrap();
}

pub(crate) async fn missing_program_is_a_spawn_error(h: &Harness) {
    let sb = h.create().await;
    let err = sb
        .exec(ExecRequest::new(["forq-no-such-program"]))
        .await
        .unwrap_err();
    match err {
        Error::Spawn { program, source } => {
            assert_eq!(program, "forq-no-such-program");
            assert_eq!(source.kind(), std::io::ErrorKind::NotFound, "{source}");
        }
        other => panic!("expected a spawn error, got {other:?}"),
    }
    sb.destroy().await.unwrap();
}

pub(crate) async fn cannot_write_outside_workspace(h: &Harness) {
    let sb = h.create().await;
    let tag = format!("forq-probe-{}", std::process::id());
    let targets = [
        format!("/usr/{tag}"),
        format!("/etc/{tag}"),
        format!("/{tag}"),
        format!("/workspace/../{tag}"),
    ];
    let script = format!(
        "for p in {}; do echo x > \"$p\" 2>/dev/null && echo \"wrote $p\" || echo \"refused $p\"; done; echo y > /workspace/inside",
        targets.join(" ")
    );
    let out = sh(&*sb, &script).await;
    for t in &targets {
        assert!(!Path::new(t).exists(), "{t} appeared on the host: {out:?}");
    }
    if h.kind == BackendKind::Native {
        // The host's system directories are read-only inside.
        assert!(
            out.stdout_text().contains(&format!("refused /usr/{tag}")),
            "{out:?}"
        );
        assert!(
            out.stdout_text().contains(&format!("refused /etc/{tag}")),
            "{out:?}"
        );
    }
    // The base is never written: the change lives in the sandbox alone.
    assert!(!h.repo.path().join("inside").exists());
    assert_eq!(sb.read_file(&rel("inside")).await.unwrap(), b"y\n");
    sb.destroy().await.unwrap();
}

pub(crate) async fn masked_host_paths_are_invisible(h: &Harness) {
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".to_owned());
    let secret = Path::new(&home).join(format!(".forq-secret-{}", std::process::id()));
    std::fs::write(&secret, "hunter2\n").unwrap();
    let sb = h.create().await;
    let repo_parent = h.repo.path().parent().unwrap().display().to_string();
    let out = sh(
        &*sb,
        &format!(
            "cat {} 2>/dev/null; ls {repo_parent} 2>/dev/null | head -3; cat /etc/shadow 2>/dev/null; ls /work 2>/dev/null; echo END",
            secret.display()
        ),
    )
    .await;
    std::fs::remove_file(&secret).unwrap();
    assert_eq!(
        out.stdout_text(),
        "END\n",
        "host data leaked into the sandbox: {out:?}"
    );
    sb.destroy().await.unwrap();
}

pub(crate) async fn fork_sees_parent_and_is_isolated(h: &Harness) {
    let parent = h.create().await;
    parent
        .write_file(&rel("a.txt"), b"from parent\n")
        .await
        .unwrap();
    let c1 = parent.fork().await.unwrap();
    let c2 = parent.fork().await.unwrap();
    assert_eq!(c1.read_file(&rel("a.txt")).await.unwrap(), b"from parent\n");
    sh(&*c1, "echo from c1 > b.txt && echo changed > a.txt").await;
    parent.write_file(&rel("c.txt"), b"later\n").await.unwrap();
    let grandchild = c1.fork().await.unwrap();

    assert_eq!(
        sh(&*parent, "cat a.txt; ls b.txt 2>&1 >/dev/null | wc -l")
            .await
            .stdout_text(),
        "from parent\n1\n"
    );
    assert_eq!(
        sh(
            &*c2,
            "cat a.txt; test -e b.txt || echo no-b; test -e c.txt || echo no-c"
        )
        .await
        .stdout_text(),
        "from parent\nno-b\nno-c\n"
    );
    assert_eq!(
        sh(&*c1, "test -e c.txt || echo no-c").await.stdout_text(),
        "no-c\n"
    );
    assert_eq!(
        sh(&*grandchild, "cat a.txt b.txt").await.stdout_text(),
        "changed\nfrom c1\n"
    );
    for sb in [grandchild, c1, c2, parent] {
        sb.destroy().await.unwrap();
    }
}

pub(crate) async fn snapshot_is_frozen_point_in_time(h: &Harness) {
    let sb = h.create().await;
    sb.write_file(&rel("state.txt"), b"v1\n").await.unwrap();
    let snap = sb.snapshot().await.unwrap();
    sb.write_file(&rel("state.txt"), b"v2\n").await.unwrap();
    sb.remove(&rel("README.md")).await.unwrap();
    let a = snap.fork().await.unwrap();
    let b = snap.fork().await.unwrap();
    assert_eq!(a.read_file(&rel("state.txt")).await.unwrap(), b"v1\n");
    assert_eq!(
        b.read_file(&rel("README.md")).await.unwrap(),
        b"# fixture\n"
    );
    assert_eq!(sb.read_file(&rel("state.txt")).await.unwrap(), b"v2\n");
    drop(snap);
    for s in [a, b, sb] {
        s.destroy().await.unwrap();
    }
}

pub(crate) async fn diff_reports_exactly_the_changes(h: &Harness) {
    let (parent, sb) = spread_changes(h).await;
    let diff = sb.diff().await.unwrap();
    let got: Vec<_> = diff
        .files
        .iter()
        .map(|f| {
            (
                f.path.as_str(),
                f.kind,
                f.binary,
                f.added_lines,
                f.removed_lines,
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("blob.bin", ChangeKind::Added, true, 0, 0),
            ("docs/a.md", ChangeKind::Deleted, false, 0, 1),
            ("docs/b.md", ChangeKind::Deleted, false, 0, 1),
            ("docs/c.md", ChangeKind::Added, false, 1, 0),
            ("new/dir/file.txt", ChangeKind::Added, false, 1, 0),
            ("src/deep/data.txt", ChangeKind::Modified, false, 1, 1),
            ("src/gone.txt", ChangeKind::Deleted, false, 0, 1),
            ("src/lib.py", ChangeKind::Modified, false, 1, 1),
        ],
        "{}",
        diff.patch
    );
    // The patch applies to the base and reproduces the sandbox's text files.
    let copy = tempfile::tempdir().unwrap();
    let status = forq_sandbox::host_command("cp")
        .arg("-a")
        .arg(format!("{}/.", h.repo.path().display()))
        .arg(copy.path())
        .status()
        .await
        .unwrap();
    assert!(status.success());
    let patch_file = copy.path().join("fix.patch");
    std::fs::write(&patch_file, &diff.patch).unwrap();
    let apply = forq_sandbox::host_command("git")
        .args(["apply", "--exclude=blob.bin", "fix.patch"])
        .current_dir(copy.path())
        .output()
        .await
        .unwrap();
    assert!(
        apply.status.success(),
        "git apply: {}",
        String::from_utf8_lossy(&apply.stderr)
    );
    assert_eq!(
        std::fs::read(copy.path().join("src/lib.py")).unwrap(),
        sb.read_file(&rel("src/lib.py")).await.unwrap()
    );
    assert_eq!(
        std::fs::read(copy.path().join("new/dir/file.txt")).unwrap(),
        b"hello\n"
    );
    assert!(!copy.path().join("src/gone.txt").exists());
    assert!(!copy.path().join("docs/a.md").exists());
    // Many new files at once (the docker backend switches to a whole
    // download past a threshold): every one is there.
    sh(
        &*sb,
        "mkdir many && for i in $(seq 100); do echo $i > many/f$i.txt; done",
    )
    .await;
    let diff = sb.diff().await.unwrap();
    let many = diff
        .files
        .iter()
        .filter(|f| f.path.starts_with("many/") && f.kind == ChangeKind::Added);
    assert_eq!(many.count(), 100);
    assert_eq!(diff.files.len(), got.len() + 100);
    sb.destroy().await.unwrap();
    parent.destroy().await.unwrap();
}

/// A parent and its fork with changes spread over both: files written,
/// deleted, binary, restored, ignored, a directory made opaque.
async fn spread_changes(
    h: &Harness,
) -> (
    Box<dyn forq_sandbox::Sandbox>,
    Box<dyn forq_sandbox::Sandbox>,
) {
    let parent = h.create().await;
    // Changes spread over a fork, so layered state is diffed as a whole.
    sh(
        &*parent,
        "printf 'def add(a, b):\\n    return a + b\\n' > src/lib.py && rm src/gone.txt",
    )
    .await;
    let sb = parent.fork().await.unwrap();
    sh(&*sb, "mkdir -p new/dir && echo hello > new/dir/file.txt && printf 'a\\000b' > blob.bin && mkdir -p .git && echo x > .git/ignored").await;
    sb.write_file(&rel("src/deep/data.txt"), b"one\nTWO\nthree\n")
        .await
        .unwrap();
    // New files the repository ignores, and caches a test run leaves: not
    // part of a patch.
    sh(&*sb, "echo noise > debug.log && mkdir -p src/__pycache__ && echo c > src/__pycache__/lib.cpython-311.pyc").await;
    // Written and then restored: no change at all.
    sh(
        &*sb,
        "cp README.md /tmp/r && echo junk > README.md && cp /tmp/r README.md",
    )
    .await;
    // A directory removed and made again (overlayfs marks it opaque).
    sh(&*sb, "rm -r docs && mkdir docs && echo c > docs/c.md").await;
    (parent, sb)
}

pub(crate) async fn file_ops_refuse_escapes(h: &Harness) {
    let sb = h.create().await;
    for bad in ["../etc/passwd", "/etc/passwd", "src/../../x"] {
        let err = sb.read_file(&rel(bad)).await.unwrap_err();
        assert!(matches!(err, Error::PathEscape { .. }), "{bad}: {err:?}");
        let err = sb.write_file(&rel(bad), b"x").await.unwrap_err();
        assert!(matches!(err, Error::PathEscape { .. }), "{bad}: {err:?}");
    }
    sh(&*sb, "ln -s /etc out && ln -s ../.. up").await;
    for bad in ["out/passwd", "out/forq-new-file", "up/etc/hostname"] {
        let err = sb.read_file(&rel(bad)).await.unwrap_err();
        assert!(matches!(err, Error::PathEscape { .. }), "{bad}: {err:?}");
        let err = sb.write_file(&rel(bad), b"x").await.unwrap_err();
        assert!(matches!(err, Error::PathEscape { .. }), "{bad}: {err:?}");
        let err = sb.remove(&rel(bad)).await.unwrap_err();
        assert!(matches!(err, Error::PathEscape { .. }), "{bad}: {err:?}");
    }
    assert!(!Path::new("/etc/forq-new-file").exists());
    // A link that stays inside is followed.
    assert_eq!(
        sb.read_file(&rel("src/link.py")).await.unwrap(),
        sb.read_file(&rel("src/lib.py")).await.unwrap()
    );
    let names: Vec<String> = sb
        .list_dir(&rel("src"))
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names, ["deep", "gone.txt", "lib.py", "link.py"]);
    sb.write_file(&rel("made/deep/file.txt"), b"ok")
        .await
        .unwrap();
    assert_eq!(
        sb.read_file(&rel("made/deep/file.txt")).await.unwrap(),
        b"ok"
    );
    sb.remove(&rel("made")).await.unwrap();
    assert!(sb.read_file(&rel("made/deep/file.txt")).await.is_err());
    sb.destroy().await.unwrap();
}

pub(crate) async fn destroy_releases_everything(h: &Harness) {
    let parent = h.create().await;
    sh(&*parent, "echo x > x.txt").await;
    let child = parent.fork().await.unwrap();
    sh(&*child, "echo y > y.txt").await;
    match h.kind {
        BackendKind::Native => {
            let state = h.state_path().unwrap();
            let native = h.native.as_ref().unwrap();
            assert!(!native.mounts().is_empty());
            if native.in_user_namespace() {
                // Nothing is ever mounted in the host's namespace then.
                assert_eq!(
                    forq_sandbox::mounts_under(state),
                    Vec::<std::path::PathBuf>::new()
                );
            }
            child.destroy().await.unwrap();
            parent.destroy().await.unwrap();
            assert_eq!(native.mounts(), Vec::<std::path::PathBuf>::new());
            assert_eq!(
                std::fs::read_dir(state.join("s")).unwrap().count(),
                0,
                "sandbox directories left"
            );
            assert_eq!(
                std::fs::read_dir(state.join("l")).unwrap().count(),
                0,
                "frozen layers left"
            );
        }
        BackendKind::Docker => {
            let ids = [parent.id().to_owned(), child.id().to_owned()];
            let docker = forq_sandbox::DockerBackend::connect(Default::default())
                .await
                .unwrap();
            child.destroy().await.unwrap();
            parent.destroy().await.unwrap();
            for id in ids {
                let id = id.split('@').next().unwrap().to_owned();
                assert!(
                    docker.client().inspect_container(&id, None).await.is_err(),
                    "container {id} still exists"
                );
            }
        }
        _ => {
            let state = h.state_path().unwrap();
            child.destroy().await.unwrap();
            parent.destroy().await.unwrap();
            assert_eq!(
                std::fs::read_dir(state.join("h")).unwrap().count(),
                0,
                "copies left"
            );
        }
    }
}

pub(crate) fn status_field(status: &str, key: &str) -> String {
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .unwrap_or_else(|| panic!("{key} missing from {status}"))
        .trim()
        .to_owned()
}

pub(crate) async fn payload_has_no_capabilities_no_new_privileges_and_a_filter(h: &Harness) {
    let sb = h.create().await;
    let status = sh(&*sb, "cat /proc/self/status").await.stdout_text();
    assert_eq!(status_field(&status, "CapEff:"), "0000000000000000");
    assert_eq!(status_field(&status, "NoNewPrivs:"), "1");
    assert_eq!(status_field(&status, "Seccomp:"), "2");
    if h.kind == BackendKind::Native {
        // The bounding set too (docker keeps its own default there).
        assert_eq!(status_field(&status, "CapBnd:"), "0000000000000000");
    }
    sb.destroy().await.unwrap();
}

pub(crate) async fn forq_and_the_command_share_the_workspace(h: &Harness) {
    let sb = h.create().await;
    // forq writes a file in new directories; the command then edits it in
    // place, adds beside it, and changes and deletes files of the base.
    sb.write_file(Path::new("new/dir/a.txt"), b"from forq\n")
        .await
        .unwrap();
    let out = sh(
        &*sb,
        "id -u; echo more >> new/dir/a.txt && echo b > new/dir/b.txt && echo x >> src/lib.py && rm src/gone.txt && echo ok",
    )
    .await;
    // Root of its own user namespace on native (an unprivileged host uid);
    // forq's image's unprivileged user on docker.
    let uid = if h.kind == BackendKind::Docker {
        "1000"
    } else {
        "0"
    };
    assert_eq!(out.stdout_text(), format!("{uid}\nok\n"), "{out:?}");
    assert_eq!(
        sb.read_file(Path::new("new/dir/a.txt")).await.unwrap(),
        b"from forq\nmore\n"
    );
    let diff = sb.diff().await.unwrap();
    let paths: Vec<&str> = diff.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "new/dir/a.txt",
            "new/dir/b.txt",
            "src/gone.txt",
            "src/lib.py"
        ],
        "{diff:?}"
    );
    sb.destroy().await.unwrap();
}

pub(crate) async fn a_golden_outlives_its_process_and_gc(h: &Harness) {
    // Saved by one backend, opened by another over the same state (a later
    // process), after gc: the installed state is there, forks of it are
    // independent, and a generation in use is kept until nothing uses it.
    let keep = tempfile::tempdir().unwrap();
    let goldens = match h.state_path() {
        Some(state) => forq_sandbox::Goldens::in_state_dir(state).unwrap(),
        None => forq_sandbox::Goldens::new(keep.path().join("golden")).unwrap(),
    };
    let name = format!("it-{}-{}", h.kind, std::process::id());
    let warm = h.create().await;
    let out = sh(
        &*warm,
        "mkdir -p .venv && echo installed > .venv/marker && echo primed > /tmp/cache && echo ok",
    )
    .await;
    assert_eq!(out.stdout_text(), "ok\n", "{out:?}");
    let info = goldens
        .save(&name, "key-1", serde_json::json!({"commit": "abc"}), &*warm)
        .await
        .unwrap();
    assert_eq!((info.generation, info.key.as_str()), (1, "key-1"));
    // The sandbox it was saved from goes on, and its later writes are not
    // the golden's.
    sh(&*warm, "echo later > .venv/later").await;
    warm.destroy().await.unwrap();
    match h.state_path() {
        Some(state) => {
            forq_sandbox::gc(state).unwrap();
        }
        None => {
            forq_sandbox::DockerBackend::gc().await.unwrap();
            let image = info.saved.image.clone().unwrap();
            let owner = forq_sandbox::host_command("docker")
                .args([
                    "image",
                    "inspect",
                    "-f",
                    "{{index .Config.Labels \"forq.owner\"}}",
                    &image,
                ])
                .output()
                .await
                .unwrap();
            assert_eq!(
                String::from_utf8_lossy(&owner.stdout).trim(),
                "",
                "{owner:?}"
            );
        }
    }
    let backend = h.reopened().await;
    let listed = goldens.list().unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].meta["commit"], "abc");
    let opened = goldens.open(&*backend, &name, &h.spec()).await.unwrap();
    let a = opened.snapshot.fork().await.unwrap();
    let b = opened.snapshot.fork().await.unwrap();
    let out = sh(
        &*a,
        "cat .venv/marker /tmp/cache; ls .venv; echo mine > .venv/marker",
    )
    .await;
    assert_eq!(out.stdout_text(), "installed\nprimed\nmarker\n", "{out:?}");
    let out = sh(&*b, "cat .venv/marker").await;
    assert_eq!(
        out.stdout_text(),
        "installed\n",
        "a fork saw another's write"
    );
    // The diff is against the run's base, the install's files included.
    let diff = a.diff().await.unwrap();
    assert!(
        diff.files.iter().any(|f| f.path == ".venv/marker"),
        "{:?}",
        diff.files
    );
    // A second generation; the first stays while forks of it live.
    let newer = goldens
        .save(&name, "key-2", serde_json::json!({}), &*b)
        .await
        .unwrap();
    assert_eq!(newer.generation, 2);
    assert_eq!(goldens.prune(&*backend, &name).await.unwrap(), 0);
    a.destroy().await.unwrap();
    b.destroy().await.unwrap();
    drop(opened);
    assert_eq!(goldens.prune(&*backend, &name).await.unwrap(), 1);
    let again = goldens.open(&*backend, &name, &h.spec()).await.unwrap();
    assert_eq!(again.info.key, "key-2");
    drop(again);
    assert!(goldens.remove(&*backend, &name).await.unwrap());
    assert!(goldens.list().unwrap().is_empty());
}
