//! forq sandbox: outcomes as exit codes, streamed output, the bench, gc, interrupts, user namespaces, remote engines, terminals.

use super::*;

#[tokio::test]
async fn run_maps_outcomes_to_exit_codes() {
    let calc = "examples/calc";
    let cases: &[(&[&str], i32)] = &[
        (&["sh", "-c", "exit 7"], 7),
        (&["sh", "-c", "kill -TERM $$"], 128 + 15),
        (&["forq-no-such-command"], 127),
        (&["true"], 0),
    ];
    for (cmd, code) in cases {
        let mut args = vec!["sandbox", "run", "--backend", "host", "--repo", calc, "--"];
        args.extend_from_slice(cmd);
        check_exit(&forq(&args).await, *code);
    }
    let out = forq(&[
        "sandbox",
        "run",
        "--backend",
        "host",
        "--repo",
        calc,
        "--timeout",
        "0.5",
        "--",
        "sleep",
        "30",
    ])
    .await;
    check_exit(&out, 124);
    let out = forq(&[
        "sandbox",
        "run",
        "--backend",
        "host",
        "--repo",
        "no/such/dir",
        "--",
        "true",
    ])
    .await;
    check_exit(&out, 125);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--repo"),
        "{out:?}"
    );
}

#[tokio::test]
async fn run_streams_output_and_prints_the_diff() {
    let out = forq(&[
        "sandbox",
        "run",
        "--backend",
        "host",
        "--repo",
        "examples/calc",
        "--diff",
        "--",
        "sh",
        "-c",
        "echo to-stdout; echo to-stderr >&2; echo new > added.txt",
    ])
    .await;
    check_exit(&out, 0);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "to-stdout\n");
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The operator's --backend host is said to isolate nothing, first.
    let mut lines = stderr.lines();
    assert!(
        lines.next().is_some_and(|l| l.contains("isolates nothing")),
        "{stderr}"
    );
    assert_eq!(lines.next(), Some("to-stderr"), "{stderr}");
    assert_patch_adds(&out, "added.txt", "new");
    assert!(
        !repo_root().join("examples/calc/added.txt").exists(),
        "the repository was written"
    );
}

#[tokio::test]
async fn readme_example_runs_the_suite_in_a_native_sandbox() {
    if !native_or_skip("readme_example_runs_the_suite_in_a_native_sandbox") {
        return;
    }
    let out = forq(&[
        "sandbox",
        "run",
        "--backend",
        "native",
        "--repo",
        "examples/calc",
        "--",
        "python3",
        "-m",
        "unittest",
        "-v",
    ])
    .await;
    check_exit(&out, 1);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("Ran 2 tests") && stderr.contains("FAILED (failures=1)"),
        "{stderr}"
    );
    assert!(stderr.contains("/workspace/tests/test_calc.py"), "{stderr}");
}

#[tokio::test]
async fn bench_reports_every_key_for_each_backend() {
    let backends = if native_or_skip("bench_reports_every_key_for_each_backend") {
        "native,host"
    } else {
        "host"
    };
    let out = forq(&[
        "sandbox",
        "bench",
        "--backend",
        backends,
        "--iterations",
        "3",
        "--files",
        "200",
        "--json",
    ])
    .await;
    check_exit(&out, 0);
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let reports = value.as_array().cloned().unwrap_or_else(|| vec![value]);
    assert_eq!(reports.len(), backends.split(',').count());
    for r in &reports {
        for key in [
            "create_ms_p50",
            "fork_ms_p50",
            "fork_ms_p95",
            "exec_ms_p50",
            "diff_ms_p50",
            "destroy_ms_p50",
        ] {
            let v = r[key]
                .as_f64()
                .unwrap_or_else(|| panic!("{key} missing in {r}"));
            assert!(v > 0.0, "{key} = {v}");
        }
        assert_eq!(r["iterations"], 3);
        assert_eq!(r["files"], 200);
    }
    let names: Vec<&str> = reports
        .iter()
        .map(|r| r["backend"].as_str().unwrap())
        .collect();
    assert_eq!(names, backends.split(',').collect::<Vec<_>>());
}

#[tokio::test]
async fn gc_reports_what_it_cleaned() {
    let state = tempfile::tempdir().unwrap();
    let out = forq_sandbox::host_command(env!("CARGO_BIN_EXE_forq"))
        .args(["sandbox", "gc", "--json"])
        .env("FORQ_SANDBOX_DIR", state.path())
        .output()
        .await
        .unwrap();
    check_exit(&out, 0);
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(value["state_dir"], state.path().display().to_string());
    assert_eq!(value["unmounted"], serde_json::json!([]));
    // Exec cgroups are machine-wide (another test's may be cleaned here);
    // nothing of this empty state directory can be.
    let removed = value["removed"].as_array().unwrap();
    assert!(!removed.iter().any(|p| p
        .as_str()
        .unwrap()
        .starts_with(&state.path().display().to_string())));
}

/// `forq sandbox run` of `sleep <marker>` in a native sandbox under
/// `state`, once the command runs.
async fn sleeping_sandbox(state: &std::path::Path, marker: &str) -> tokio::process::Child {
    let mut child = forq_sandbox::host_command(env!("CARGO_BIN_EXE_forq"))
        .args([
            "sandbox",
            "run",
            "--backend",
            "native",
            "--repo",
            "examples/calc",
            "--",
            "sh",
            "-c",
            &format!("echo up; sleep {marker}"),
        ])
        .current_dir(repo_root())
        .env("FORQ_SANDBOX_DIR", state)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 3];
    tokio::io::AsyncReadExt::read_exact(&mut stdout, &mut first)
        .await
        .unwrap();
    assert_eq!(&first, b"up\n");
    child
}

/// Waits up to 5 s for every `sleep <marker>` on this machine to end;
/// whether one still runs then. The kernel kills a sandbox's pid namespace
/// when its init dies, and may still be reaping it: a killed process is
/// gone within moments, a leaked one (the failure) stays.
async fn sleeper_outlives(marker: &str) -> bool {
    let needle = format!("sleep\0{marker}");
    let alive = || {
        std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            std::fs::read(e.path().join("cmdline"))
                .is_ok_and(|c| c.windows(needle.len()).any(|w| w == needle.as_bytes()))
        })
    };
    for _ in 0..50 {
        if !alive() {
            return false;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    alive()
}

/// Exec cgroups of process `pid` still on this machine.
fn cgroups_of(pid: u32) -> usize {
    std::fs::read_dir("/sys/fs/cgroup/pids/forq")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| crate::owned_by(&e.file_name().to_string_lossy(), pid))
        .count()
}

async fn kill(signal: &str, pid: u32) {
    let kill = forq_sandbox::host_command("kill")
        .args([signal, &pid.to_string()])
        .status()
        .await
        .unwrap();
    assert!(kill.success());
}

#[tokio::test]
async fn interrupted_run_leaves_nothing_behind() {
    if !native_or_skip("interrupted_run_leaves_nothing_behind") {
        return;
    }
    let state = tempfile::Builder::new()
        .prefix("forq-cli-state-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let mut child = sleeping_sandbox(state.path(), "3141").await;
    let pid = child.id().unwrap();
    // Interrupt forq as Ctrl-C would.
    kill("-INT", pid).await;
    let status = tokio::time::timeout(std::time::Duration::from_secs(10), child.wait())
        .await
        .expect("forq exits after SIGINT")
        .unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(
        forq_sandbox::mounts_under(state.path()).is_empty(),
        "mounts left behind"
    );
    let sandboxes = std::fs::read_dir(state.path().join("s")).unwrap().count();
    assert_eq!(sandboxes, 0, "sandbox directories left behind");
    assert!(
        !sleeper_outlives("3141").await,
        "the command outlived forq by 5 s"
    );
    assert_eq!(cgroups_of(pid), 0, "exec cgroups left behind");
}

/// A forq killed outright (SIGKILL: no handler, no drop runs) still takes
/// its sandboxes' processes with it: each sandbox's shim watches forq's
/// lifeline and kills the sandbox's init when it hangs up. Before, the
/// sandbox ran on, orphaned, for as long as its command did. What the
/// kill left on disk (mounts, directories) is `forq sandbox gc`'s.
#[tokio::test]
async fn a_forq_killed_outright_takes_its_sandboxes_processes_with_it() {
    if !native_or_skip("a_forq_killed_outright_takes_its_sandboxes_processes_with_it") {
        return;
    }
    let state = tempfile::Builder::new()
        .prefix("forq-cli-state-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let mut child = sleeping_sandbox(state.path(), "2718").await;
    let pid = child.id().unwrap();
    kill("-KILL", pid).await;
    child.wait().await.unwrap();
    assert!(
        !sleeper_outlives("2718").await,
        "the sandbox's command outlived the forq that started it by 5 s"
    );
    assert!(
        !forq_sandbox::mounts_under(state.path()).is_empty(),
        "a forq killed outright cleans nothing itself: the test needs its leftovers"
    );
    let out = forq_sandbox::host_command(env!("CARGO_BIN_EXE_forq"))
        .args(["sandbox", "gc"])
        .env("FORQ_SANDBOX_DIR", state.path())
        .output()
        .await
        .unwrap();
    check_exit(&out, 0);
    assert!(
        forq_sandbox::mounts_under(state.path()).is_empty(),
        "mounts left after gc"
    );
    let sandboxes = std::fs::read_dir(state.path().join("s")).unwrap().count();
    assert_eq!(sandboxes, 0, "sandbox directories left after gc");
    assert_eq!(cgroups_of(pid), 0, "exec cgroups left after gc");
}

#[tokio::test]
async fn native_backend_runs_without_root_in_a_user_namespace() {
    if !native_or_skip("native_backend_runs_without_root_in_a_user_namespace") {
        return;
    }
    // Root can become nobody; the test then runs forq as a plain user.
    let home = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    for dir in [home.path(), state.path()] {
        let status = forq_sandbox::host_command("chown")
            .arg("65534:65534")
            .arg(dir)
            .status()
            .await
            .unwrap();
        assert!(status.success());
    }
    let out = forq_sandbox::host_command("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(env!("CARGO_BIN_EXE_forq"))
        .args([
            "-v",
            "sandbox",
            "run",
            "--backend",
            "native",
            "--repo",
            "examples/calc",
            "--diff",
            "--",
        ])
        .args([
            "sh",
            "-c",
            "id -u; python3 -m unittest 2>&1 | tail -1; python3 -c 'import os; os.openpty()' && echo pty; echo fixed > calc.txt",
        ])
        .current_dir(repo_root())
        .env_clear()
        .env("HOME", home.path())
        .env("PATH", "/usr/bin:/bin")
        .env("FORQ_SANDBOX_DIR", state.path())
        .output()
        .await
        .unwrap();
    check_exit(&out, 0);
    // Root inside its own user namespace, nobody outside.
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "0\nFAILED (failures=1)\npty\n"
    );
    assert_patch_adds(&out, "calc.txt", "fixed");
    let left: Vec<_> = std::fs::read_dir(state.path().join("s"))
        .unwrap()
        .flatten()
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[tokio::test]
async fn docker_host_points_at_a_remote_engine() {
    // .ci/run starts the engine on loopback TCP as well as its socket; a
    // sandbox through that address is one through a remote engine.
    let address = "127.0.0.1:2375";
    if tokio::net::TcpStream::connect(address).await.is_err() {
        if std::env::var_os("CI").is_some() {
            panic!("CI starts dockerd listening on {address}");
        }
        eprintln!("SKIPPED docker_host_points_at_a_remote_engine: no engine on tcp://{address}");
        return;
    }
    let out = forq_sandbox::host_command(env!("CARGO_BIN_EXE_forq"))
        .args([
            "-v",
            "sandbox",
            "run",
            "--backend",
            "docker",
            "--repo",
            "examples/calc",
            "--diff",
            "--",
        ])
        .args(["sh", "-c", "head -1 calc.py; echo remote > remote.txt"])
        .current_dir(repo_root())
        .env("DOCKER_HOST", format!("tcp://{address}"))
        .env("NO_COLOR", "1")
        .output()
        .await
        .unwrap();
    check_exit(&out, 0);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "\"\"\"A tiny calculator with a bug for forq's examples: `add` subtracts.\"\"\"\n"
    );
    assert_patch_adds(&out, "remote.txt", "remote");
}

#[tokio::test]
async fn an_install_on_a_remote_engine_goes_through_forqs_own_egress_proxy() {
    // forq cannot enter a remote engine's containers, so the forq binary
    // itself (`forq egress-proxy`) serves the proxy in a sidecar container:
    // what FORQ_EGRESS_ALLOW names is reached, nothing else.
    let address = "127.0.0.1:2375";
    if tokio::net::TcpStream::connect(address).await.is_err() {
        if std::env::var_os("CI").is_some() {
            panic!("CI starts dockerd listening on {address}");
        }
        eprintln!("SKIPPED: no engine on tcp://{address}");
        return;
    }
    let gateway = bridge::bridge_gateway().await;
    let serve = |body: &'static str| {
        let gateway = gateway.clone();
        async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let listener = tokio::net::TcpListener::bind(format!("{gateway}:0"))
                .await
                .unwrap();
            let port = listener.local_addr().unwrap().port();
            tokio::spawn(async move {
                while let Ok((mut conn, _)) = listener.accept().await {
                    let mut buf = [0u8; 4096];
                    let _ = conn.read(&mut buf).await;
                    let reply = format!(
                        "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = conn.write_all(reply.as_bytes()).await;
                }
            });
            port
        }
    };
    let (registry, other) = (serve("registry-ok").await, serve("not-allowed").await);
    let script = format!(
        "busybox wget -q -O - http://{gateway}:{registry}/ 2>&1; echo; \
         busybox wget -q -O - http://{gateway}:{other}/ 2>&1; echo"
    );
    let out = forq_sandbox::host_command(env!("CARGO_BIN_EXE_forq"))
        .args([
            "sandbox",
            "run",
            "--backend",
            "docker",
            "--network",
            "proxy",
        ])
        .args(["--repo", "examples/calc", "--", "sh", "-c", &script])
        .current_dir(repo_root())
        .env("DOCKER_HOST", format!("tcp://{address}"))
        .env("FORQ_EGRESS_ALLOW", format!("{gateway}:{registry}"))
        .env("NO_COLOR", "1")
        .output()
        .await
        .unwrap();
    check_exit(&out, 0);
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.first(), Some(&"registry-ok"), "{out:?}");
    assert!(lines.get(1).is_some_and(|l| l.contains("403")), "{out:?}");
}

#[tokio::test]
async fn under_a_terminal_the_sandbox_gets_none() {
    if !native_or_skip("under_a_terminal_the_sandbox_gets_none") {
        return;
    }
    // `script` runs forq with a pseudo-terminal as its controlling
    // terminal; the host backend shows what the sandbox would have had.
    let probe = "read -r _ _ _ _ _ _ tty _ < /proc/self/stat; echo tty=$tty; \
                 (: > /dev/tty) 2>/dev/null && echo tty-opened || echo tty-refused";
    let run = |backend: &'static str| {
        let command = format!(
            "{} sandbox run --backend {backend} --repo examples/calc -- sh -c '{probe}'",
            env!("CARGO_BIN_EXE_forq")
        );
        async move {
            forq_sandbox::host_command("script")
                .args(["-qec", &command, "/dev/null"])
                .current_dir(repo_root())
                .env("NO_COLOR", "1")
                .output()
                .await
                .expect("run script (util-linux)")
        }
    };
    let host = run("host").await;
    let host_text = String::from_utf8_lossy(&host.stdout);
    assert!(host_text.contains("tty-opened"), "the control: {host_text}");
    let native = run("native").await;
    let text = String::from_utf8_lossy(&native.stdout);
    assert!(text.contains("tty=0"), "{text}");
    assert!(text.contains("tty-refused"), "{text}");

    // --tty: a pseudo-terminal of its own (not forq's), relayed both ways.
    let command = format!(
        "{} sandbox run --tty --backend native --repo examples/calc -- sh -c \
         'read -r _ _ _ _ _ _ tty _ < /proc/self/stat; echo tty=$tty; \
          test -t 0 && echo stdin-is-a-terminal; read line; echo got=$line; exit 3'",
        env!("CARGO_BIN_EXE_forq")
    );
    let mut child = forq_sandbox::host_command("script")
        .args(["-qec", &command, "/dev/null"])
        .current_dir(repo_root())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use tokio::io::AsyncWriteExt;
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"typed here\n").await.unwrap();
    let out = tokio::time::timeout(std::time::Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("forq --tty ends with its command")
        .unwrap();
    drop(stdin);
    let text = String::from_utf8_lossy(&out.stdout);
    let forqs_tty = host_text
        .lines()
        .find_map(|l| l.trim().strip_prefix("tty="))
        .unwrap()
        .to_owned();
    let its_tty = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("tty="))
        .unwrap_or_else(|| panic!("{text}"))
        .to_owned();
    assert_ne!(its_tty, "0", "{text}");
    assert_ne!(
        its_tty, forqs_tty,
        "the caller's terminal reached the sandbox: {text}"
    );
    assert!(text.contains("stdin-is-a-terminal"), "{text}");
    assert!(text.contains("got=typed here"), "{text}");
    assert_eq!(out.status.code(), Some(3), "{text}");
}
