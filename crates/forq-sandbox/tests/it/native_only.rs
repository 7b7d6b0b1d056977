//! Native-backend behaviour beyond the common suite: deep fork chains that
//! squash layers, and `gc` of what a dead process left.

use forq_sandbox::ChangeKind;

use crate::common::{mount_tmpfs, rel, sh, Harness};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fork_chain_deeper_than_the_layer_cap_stays_correct() {
    let Some(h) = Harness::native().await else {
        return;
    };
    let depth = forq_sandbox::MAX_LAYERS * 2 + 5;
    let mut sb = h.create().await;
    for level in 0..depth {
        let script = match level {
            3 => "rm src/gone.txt && echo 3 > level3.txt".to_owned(),
            // A directory deleted and made again: overlayfs marks it opaque.
            5 => "rm -r src/deep && mkdir src/deep && echo fresh > src/deep/new.txt && echo 5 > level5.txt".to_owned(),
            7 => "echo rewritten > level3.txt && echo 7 > level7.txt".to_owned(),
            n => format!("echo {n} > level{n}.txt"),
        };
        sh(&*sb, &script).await;
        let child = sb.fork().await.unwrap();
        sb.destroy().await.unwrap();
        sb = child;
    }
    let out = sh(
        &*sb,
        "ls level*.txt | wc -l; cat level3.txt; ls src/deep; test -e src/gone.txt || echo gone",
    )
    .await;
    assert_eq!(
        out.stdout_text(),
        format!("{depth}\nrewritten\nnew.txt\ngone\n")
    );
    let diff = sb.diff().await.unwrap();
    let kinds = |k: ChangeKind| diff.files.iter().filter(|f| f.kind == k).count();
    assert_eq!(kinds(ChangeKind::Added), depth + 1, "{:?}", diff.files);
    assert_eq!(kinds(ChangeKind::Deleted), 2, "{:?}", diff.files);
    assert!(diff
        .files
        .iter()
        .any(|f| f.path == "src/deep/data.txt" && f.kind == ChangeKind::Deleted));
    sb.destroy().await.unwrap();
    let state = h.state_path().unwrap();
    assert_eq!(
        std::fs::read_dir(state.join("l")).unwrap().count(),
        0,
        "frozen layers left"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gc_cleans_what_a_dead_process_left() {
    let Some(h) = Harness::native().await else {
        return;
    };
    let state = h.state_path().unwrap().to_path_buf();
    // A pid that certainly belongs to no process any more.
    let mut child = forq_sandbox::host_command("true").spawn().unwrap();
    let dead_pid = child.id().unwrap();
    child.wait().await.unwrap();
    let leftover = state.join("s").join(format!("{dead_pid}-0"));
    let mount_point = leftover.join("m/v0");
    std::fs::create_dir_all(&mount_point).unwrap();
    mount_tmpfs(&mount_point, "").await;
    let layer = state.join("l").join(format!("{dead_pid}-1"));
    std::fs::create_dir_all(&layer).unwrap();
    // An idmapped view it left (a mount point under i/), and a view
    // directory that is not empty: the first is taken off and removed, the
    // second is never removed as a tree (a view is the state seen again).
    let view = state.join("i").join(format!("{dead_pid}-2"));
    std::fs::create_dir_all(&view).unwrap();
    mount_tmpfs(&view, "").await;
    std::fs::write(view.join("inside-the-view"), "x").unwrap();
    let not_a_mount = state.join("i").join(format!("{dead_pid}-3"));
    std::fs::create_dir_all(&not_a_mount).unwrap();
    std::fs::write(not_a_mount.join("keep"), "kept").unwrap();
    // What an earlier process given this very pid left (its name says
    // another start time): dead too, though the pid is alive. Before ids
    // carried the start time, it was kept for as long as this process ran.
    let me = std::process::id();
    let start: u64 = std::fs::read_to_string(format!("/proc/{me}/stat"))
        .unwrap()
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .nth(19)
        .unwrap()
        .parse()
        .unwrap();
    let reused = state.join("s").join(format!("{me}.{}-0", start + 1));
    std::fs::create_dir_all(reused.join("u/v0")).unwrap();
    // A live sandbox of this process is left alone.
    let live = h.create().await;
    sh(&*live, "echo keep > keep.txt").await;

    // An exec cgroup it left (where the pids hierarchy of cgroup v1 is).
    let cgroup = std::path::Path::new("/sys/fs/cgroup/pids/forq").join(format!("{dead_pid}-0-0"));
    let has_cgroup = std::path::Path::new("/sys/fs/cgroup/pids/cgroup.procs").exists();
    if has_cgroup {
        std::fs::create_dir_all(&cgroup).unwrap();
    }

    let report = forq_sandbox::gc(&state).unwrap();
    if has_cgroup {
        assert!(
            report.removed.contains(&cgroup) && !cgroup.exists(),
            "{report:?}"
        );
    }
    let mut unmounted = report.unmounted.clone();
    unmounted.sort();
    let mut want = vec![mount_point, view.clone()];
    want.sort();
    assert_eq!(unmounted, want);
    assert!(
        report.removed.contains(&view) && !view.exists(),
        "{report:?}"
    );
    assert_eq!(
        std::fs::read_to_string(not_a_mount.join("keep")).unwrap(),
        "kept"
    );
    assert!(
        report.removed.contains(&leftover) && report.removed.contains(&layer),
        "{report:?}"
    );
    assert!(!leftover.exists() && !layer.exists());
    assert!(
        report.removed.contains(&reused) && !reused.exists(),
        "{report:?}"
    );
    assert_eq!(live.read_file(&rel("keep.txt")).await.unwrap(), b"keep\n");
    live.destroy().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn toolchains_are_usable_and_home_is_writable_but_private() {
    let Some(h) = Harness::native().await else {
        return;
    };
    let sb = h.create().await;
    let out = sh(&*sb, "cargo --version >/dev/null && echo cargo-ok; echo cache > $HOME/.forq-cache-probe && cat $HOME/.forq-cache-probe; python3 -c 'import os; os.openpty()' && echo pty-ok").await;
    assert_eq!(out.stdout_text(), "cargo-ok\ncache\npty-ok\n", "{out:?}");
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".to_owned());
    assert!(
        !std::path::Path::new(&home)
            .join(".forq-cache-probe")
            .exists(),
        "the sandbox wrote the host's home"
    );
    // Home is part of the sandbox state: a fork sees it.
    let child = sb.fork().await.unwrap();
    assert_eq!(
        sh(&*child, "cat $HOME/.forq-cache-probe")
            .await
            .stdout_text(),
        "cache\n"
    );
    child.destroy().await.unwrap();
    sb.destroy().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_given_rootfs_replaces_the_host_view() {
    let Some(h) = Harness::native().await else {
        return;
    };
    let rootfs = tempfile::tempdir().unwrap();
    let bin = rootfs.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::copy("/bin/busybox", bin.join("busybox"))
        .expect("a static busybox on the host (busybox-static)");
    for applet in ["sh", "ls", "cat", "echo"] {
        std::os::unix::fs::symlink("busybox", bin.join(applet)).unwrap();
    }
    let spec = h
        .spec()
        .rootfs(forq_sandbox::RootFs::Dir(rootfs.path().to_path_buf()))
        .env("PATH", "/bin");
    let sb = h.create_with(spec).await;
    let out = sh(&*sb, "ls /; cat /workspace/README.md; ls /usr 2>/dev/null || echo no-usr; echo x > /bin/new 2>/dev/null || echo ro").await;
    assert_eq!(
        out.stdout_text(),
        "bin\ndev\nproc\ntmp\nvar\nworkspace\n# fixture\nno-usr\nro\n",
        "{out:?}"
    );
    sb.destroy().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cpu_and_pids_caps_reach_the_exec_cgroup() {
    let Some(h) = Harness::native().await else {
        return;
    };
    let cpu_root = std::path::Path::new("/sys/fs/cgroup/cpu/forq");
    if !std::path::Path::new("/sys/fs/cgroup/cpu/cpu.cfs_quota_us").exists() {
        // cgroup v2 machines are covered by the pids and memory tests; this
        // one reads the v1 files this CI machine has.
        assert!(
            std::env::var_os("CI").is_none(),
            "CI machines have the v1 cpu controller"
        );
        return;
    }
    let limits = forq_sandbox::Limits::default().cpus(0.5).pids(77);
    let sb = h.create_with(h.spec().limits(limits)).await;
    let id = sb.id().to_owned();
    let running = tokio::spawn(async move {
        let out = sh(&*sb, "echo started; sleep 2").await;
        sb.destroy().await.unwrap();
        out
    });
    // While it runs, the exec's cgroup carries the caps.
    let mut seen = None;
    for _ in 0..100 {
        let found = std::fs::read_dir(cpu_root)
            .into_iter()
            .flatten()
            .flatten()
            .find(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with(&format!("{id}-"))
            });
        if let Some(entry) = found {
            let quota = std::fs::read_to_string(entry.path().join("cpu.cfs_quota_us")).unwrap();
            let pids = std::fs::read_to_string(
                std::path::Path::new("/sys/fs/cgroup/pids/forq")
                    .join(entry.file_name())
                    .join("pids.max"),
            )
            .unwrap();
            seen = Some((quota.trim().to_owned(), pids.trim().to_owned()));
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(seen, Some(("50000".to_owned(), "77".to_owned())));
    assert_eq!(running.await.unwrap().stdout_text(), "started\n");
}
