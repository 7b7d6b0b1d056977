//! Limits: processes, memory, output, time, silence and disk, each stopped and reported.

use super::*;

pub(crate) async fn fork_bomb_is_stopped_by_pids_limit(h: &Harness) {
    let sb = h
        .create_with(h.spec().limits(Limits::default().pids(48)))
        .await;
    // A bounded burst first: the cap must stop it well short of 200.
    let out = sh(
        &*sb,
        "n=0; for i in $(seq 200); do sleep 3139 & n=$((n+1)); done; echo started=$n",
    )
    .await;
    assert!(
        !out.stdout_text().contains("started=200"),
        "the pids cap did not hold: {out:?}"
    );
    assert!(out.stderr_text().to_lowercase().contains("fork"), "{out:?}");
    // Then a real fork bomb, which must end (by the cap or the timeout)
    // without a survivor.
    let bomb = sb
        .exec(
            ExecRequest::new([
                "sh",
                "-c",
                "b() { b | b & }; b; sleep 2",
                "forq-bomb-marker",
            ])
            .timeout(Duration::from_secs(10)),
        )
        .await
        .unwrap();
    assert!(bomb.duration_ms < 30_000, "{bomb:?}");
    assert!(
        eventually(|| host_processes_with(b"forq-bomb-marker").is_empty()
            && host_processes_with(b"sleep\x003139").is_empty())
        .await,
        "fork bomb processes survived"
    );
    sb.destroy().await.unwrap();
}

pub(crate) async fn memory_hog_is_killed_and_reported(h: &Harness) {
    let sb = h
        .create_with(h.spec().limits(Limits::default().memory_bytes(64 << 20)))
        .await;
    // dd itself is the command (not a shell around it), so the signal that
    // killed it is what the outcome reports.
    let out = sb
        .exec(ExecRequest::new([
            "dd",
            "if=/dev/zero",
            "of=/dev/null",
            "bs=400M",
            "count=1",
        ]))
        .await
        .unwrap();
    assert!(out.killed_for_memory, "{out:?}");
    assert_eq!(out.signal, Some(9), "{out:?}");
    // A command under the cap is fine, and is not reported as killed.
    let out = sh(
        &*sb,
        "dd if=/dev/zero of=/dev/null bs=4M count=1 2>/dev/null; echo ok",
    )
    .await;
    assert_eq!(
        (out.stdout_text().as_str(), out.killed_for_memory),
        ("ok\n", false),
        "{out:?}"
    );
    sb.destroy().await.unwrap();
}

pub(crate) async fn output_flood_is_capped_with_dropped_count(h: &Harness) {
    let sb = h.create().await;
    let out = sb
        .exec(ExecRequest::shell("yes | head -c 5000000; echo END").output_cap(100_000))
        .await
        .unwrap();
    assert_eq!(out.stdout.len(), 100_000);
    assert_eq!(out.stdout_dropped, 5_000_004 - 100_000);
    assert!(out.stdout.starts_with(b"y\ny\n"));
    assert!(out.stdout.ends_with(b"y\nEND\n"));
    assert!(out.success());
    sb.destroy().await.unwrap();
}

pub(crate) async fn timeout_kills_the_whole_tree(h: &Harness) {
    let sb = h.create().await;
    let out = sb
        .exec(
            ExecRequest::shell("sleep 3137 & sleep 3137 & echo started; sleep 3137")
                .timeout(Duration::from_secs(1)),
        )
        .await
        .unwrap();
    assert!(out.timed_out, "{out:?}");
    assert_eq!(out.stdout_text(), "started\n");
    assert!(out.duration_ms < 20_000, "{out:?}");
    assert!(
        eventually(|| host_processes_with(b"sleep\x003137").is_empty()).await,
        "processes survived the timeout: {:?}",
        host_processes_with(b"sleep\x003137")
    );
    // The sandbox is still usable afterwards.
    assert_eq!(sh(&*sb, "echo alive").await.stdout_text(), "alive\n");
    sb.destroy().await.unwrap();
}

pub(crate) async fn idle_timeout_fires_on_silence(h: &Harness) {
    let sb = h.create().await;
    let out = sb
        .exec(
            ExecRequest::shell("echo tick; sleep 1; echo tock; sleep 3138")
                .idle_timeout(Duration::from_millis(2500))
                .timeout(Duration::from_secs(60)),
        )
        .await
        .unwrap();
    assert!(out.idle_timed_out && !out.timed_out, "{out:?}");
    assert_eq!(out.stdout_text(), "tick\ntock\n");
    sb.destroy().await.unwrap();
}

pub(crate) async fn disk_filler_is_stopped_and_reported(h: &Harness) {
    let cap = 32 << 20;
    let sb = h
        .create_with(h.spec().limits(Limits::default().disk_bytes(cap)))
        .await;
    // One file that would be ten times the cap: stopped at the cap.
    let out = sb
        .exec(ExecRequest::new([
            "dd",
            "if=/dev/zero",
            "of=/workspace/big",
            "bs=1M",
            "count=320",
        ]))
        .await
        .unwrap();
    assert!(out.killed_for_disk, "{out:?}");
    assert!(!out.success(), "{out:?}");
    let size = sh(&*sb, "wc -c < /workspace/big").await.stdout_text();
    assert!(
        size.trim().parse::<u64>().unwrap() <= cap,
        "the file passed the cap: {size}"
    );
    sb.destroy().await.unwrap();
    if h.kind == BackendKind::Native {
        // Many files under the per-file limit: the layers' total is
        // watched, and the command stopped well before it wrote them all.
        let sb = h
            .create_with(h.spec().limits(Limits::default().disk_bytes(cap)))
            .await;
        let out = sb
            .exec(
                ExecRequest::shell(
                    "i=0; while [ $i -lt 400 ]; do head -c 1048576 /dev/zero > f$i; i=$((i+1)); sleep 0.01; done; echo all-written",
                )
                .timeout(std::time::Duration::from_secs(120)),
            )
            .await
            .unwrap();
        assert!(out.killed_for_disk, "{out:?}");
        assert!(!out.stdout_text().contains("all-written"), "{out:?}");
        sb.destroy().await.unwrap();
    }
    // Under the cap nothing is reported.
    let sb = h
        .create_with(h.spec().limits(Limits::default().disk_bytes(cap)))
        .await;
    let out = sh(&*sb, "head -c 1048576 /dev/zero > small; echo ok").await;
    assert_eq!(
        (out.stdout_text().as_str(), out.killed_for_disk),
        ("ok\n", false)
    );
    sb.destroy().await.unwrap();
}
