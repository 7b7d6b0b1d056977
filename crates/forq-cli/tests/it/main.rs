//! End-to-end tests of the `forq` binary: real processes, real sandboxes.
//!
//! Exit-code mapping is checked on the host backend (it runs anywhere); the
//! README's first command and the bench run on the native backend when this
//! runs as root, and say why they skip otherwise (under CI they fail).

#![allow(clippy::unwrap_used, clippy::print_stderr)] // tests fail loudly

use std::path::PathBuf;
use std::process::Output;

mod agent;
mod app;
#[path = "../../../forq-sandbox/tests/it/bridge.rs"]
mod bridge;
mod change;
mod docs;
mod eval;
mod fix;
mod golden;
mod serve;
#[allow(dead_code)] // shared with forq-provider's tests, which use all of it
#[path = "../../../forq-provider/tests/it/server.rs"]
mod server;

/// Runs git in `dir` with a committer identity of its own (and no
/// signing), failing the test on an error; its trimmed standard output.
/// A later `-c user.name=…` in `args` overrides the identity.
async fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let out = forq_sandbox::host_command("git")
        .args([
            "-c",
            "user.name=forq",
            "-c",
            "user.email=forq@localhost",
            "-c",
            "commit.gpgsign=false",
        ])
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

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

async fn forq(args: &[&str]) -> Output {
    forq_sandbox::host_command(env!("CARGO_BIN_EXE_forq"))
        .args(args)
        .current_dir(repo_root())
        .env("NO_COLOR", "1")
        .output()
        .await
        .expect("run forq")
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
}

fn native_or_skip(test: &str) -> bool {
    if is_root() {
        return true;
    }
    if std::env::var_os("CI").is_some() {
        panic!("{test}: CI runs as root, and this test needs it");
    }
    eprintln!("SKIPPED {test}: it needs root (to read cgroups and switch users)");
    false
}

/// Whether `program` is on PATH; without it, a test that drives it skips
/// (a failure under CI, which installs it from npm).
fn installed_or_skip(program: &str) -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()));
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "{program} is not on PATH: CI installs it"
        );
        eprintln!("SKIPPED: {program} is not on PATH");
    }
    found
}

#[track_caller]
fn check_exit(out: &Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The `--diff` on stderr adds `file` (in examples/calc) holding the one
/// line `line`, and the repository itself was not written.
#[track_caller]
fn assert_patch_adds(out: &Output, file: &str, line: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let hunk = format!("--- /dev/null\n+++ b/{file}\n@@ -0,0 +1 @@\n+{line}\n");
    assert!(stderr.contains(&hunk), "{stderr}");
    assert!(
        !repo_root().join("examples/calc").join(file).exists(),
        "the repository was written"
    );
}

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

#[tokio::test]
async fn interrupted_run_leaves_nothing_behind() {
    if !native_or_skip("interrupted_run_leaves_nothing_behind") {
        return;
    }
    let state = tempfile::Builder::new()
        .prefix("forq-cli-state-")
        .tempdir_in("/var/tmp")
        .unwrap();
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
            "echo up; sleep 3141",
        ])
        .current_dir(repo_root())
        .env("FORQ_SANDBOX_DIR", state.path())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id().unwrap();
    // Wait until the command runs, then interrupt forq as Ctrl-C would.
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 3];
    tokio::io::AsyncReadExt::read_exact(&mut stdout, &mut first)
        .await
        .unwrap();
    assert_eq!(&first, b"up\n");
    let kill = forq_sandbox::host_command("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .await
        .unwrap();
    assert!(kill.success());
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
    // The kernel kills the sandbox's pid namespace when its init dies, and
    // may still be reaping it as forq exits: a killed process is gone
    // within moments, a leaked one (the failure) stays.
    let alive = || {
        std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            std::fs::read(e.path().join("cmdline"))
                .is_ok_and(|c| c.windows(10).any(|w| w == b"sleep\x003141"))
        })
    };
    for _ in 0..50 {
        if !alive() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(!alive(), "the command outlived forq by 5 s");
    let cgroups = std::fs::read_dir("/sys/fs/cgroup/pids/forq")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("{pid}-"))
        })
        .count();
    assert_eq!(cgroups, 0, "exec cgroups left behind");
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
async fn graph_index_then_symbols_as_json() {
    let db = tempfile::tempdir().unwrap();
    let db_path = db.path().join("graph.db").display().to_string();
    let report = graph_json(&["index", "examples/calc"], &db_path).await;
    assert_eq!(
        (report["files"].as_u64(), report["parsed"].as_u64()),
        (Some(3), Some(3)),
        "{report}"
    );
    let args = ["symbols", "--repo", "examples/calc", "--kind", "method"];
    let symbols = graph_json(&args, &db_path).await;
    let rows: Vec<(String, String, u64, u64)> = symbols
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["qualname"].as_str().unwrap().to_owned(),
                s["file"].as_str().unwrap().to_owned(),
                s["line"].as_u64().unwrap(),
                s["end_line"].as_u64().unwrap(),
            )
        })
        .collect();
    let want = [("CalcTest.test_add", 7, 8), ("CalcTest.test_mul", 10, 11)]
        .map(|(q, l, e)| (q.to_owned(), "tests/test_calc.py".to_owned(), l, e));
    assert_eq!(rows, want);
    assert!(symbols[0]["id"]
        .as_str()
        .unwrap()
        .starts_with("tests/test_calc.py#"));
}

#[tokio::test]
async fn graph_callers_resolve_a_name_or_say_which_ids_to_pass() {
    let db = tempfile::tempdir().unwrap();
    let db_path = db.path().join("graph.db").display().to_string();
    let edges = graph_json(&["callers", "add", "--repo", "examples/calc"], &db_path).await;
    assert_eq!(
        edges,
        serde_json::json!({"items": [{
            "caller": "tests/test_calc.py#CalcTest.test_add:method",
            "callee": "calc.py#add:function",
            "file": "tests/test_calc.py",
            "line": 8,
            "confidence": {"kind": "exact"},
            "depth": 1
        }], "truncated": false, "hint": null})
    );
    // The shortest chain, and the exit code when there is none.
    let out = forq(&[
        "graph",
        "path",
        "test_add",
        "add",
        "--repo",
        "examples/calc",
        "--db",
        &db_path,
    ])
    .await;
    check_exit(&out, 0);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "tests/test_calc.py#CalcTest.test_add:method -> calc.py#add:function  (tests/test_calc.py:8, exact)\n"
    );
    let out = forq(&[
        "graph",
        "path",
        "add",
        "test_add",
        "--repo",
        "examples/calc",
        "--db",
        &db_path,
    ])
    .await;
    check_exit(&out, 1);
    // A name nothing in the repository defines is refused with a hint.
    let args = ["callees", "assertEqual", "--repo", "examples/calc"];
    assert_graph_refuses(&args, &db_path, "no symbol matches \"assertEqual\"").await;
}

/// Runs `forq graph ARGS... --db DB --json` and parses its JSON.
async fn graph_json(args: &[&str], db: &str) -> serde_json::Value {
    let mut all = vec!["graph"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--db", db, "--json"]);
    let out = forq(&all).await;
    check_exit(&out, 0);
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

#[tokio::test]
async fn graph_patterns_count_how_a_definition_is_called() {
    let db = tempfile::tempdir().unwrap();
    let db_path = db.path().join("graph.db").display().to_string();
    let repo = ["--repo", "examples/calc"];
    // add() is called once, by its test, which checks the result.
    let p = graph_json(&[&["patterns", "add"][..], &repo].concat(), &db_path).await;
    assert_eq!(p["symbol"], "calc.py#add:function", "{p}");
    assert_eq!(p["sites"].as_array().unwrap().len(), 1, "{p}");
    assert_eq!(p["sites"][0]["file"], "tests/test_calc.py");
    assert_eq!(p["arity"]["2"], 1, "{p}");
    assert_eq!(
        p["sites"][0]["result"], "passed",
        "handed to assertEqual: {p}"
    );
    assert_eq!(p["suspected"], serde_json::json!([]));
}

#[tokio::test]
async fn graph_queries_answer_as_json() {
    let db = tempfile::tempdir().unwrap();
    let db_path = db.path().join("graph.db").display().to_string();
    let repo = ["--repo", "examples/calc"];
    let tests = graph_json(&[&["tests-for", "calc.py:5"][..], &repo].concat(), &db_path).await;
    assert_eq!(
        tests["items"][0]["test"], "tests/test_calc.py#CalcTest.test_add:method",
        "{tests}"
    );
    let affected = graph_json(&[&["affected-by", "add"][..], &repo].concat(), &db_path).await;
    let ids: Vec<&str> = affected["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap())
        .collect();
    // The test file that imports it, and the test that calls it.
    assert_eq!(
        ids,
        [
            "tests/test_calc.py",
            "tests/test_calc.py#CalcTest.test_add:method"
        ],
        "{affected}"
    );
    // The failing line reads a and b, both defined by the signature.
    let stmts = graph_json(
        &[&["statements", "calc.py:5", "--radius", "0"][..], &repo].concat(),
        &db_path,
    )
    .await;
    assert_eq!(stmts["items"][0]["text"], "return a - b", "{stmts}");
    assert_eq!(stmts["items"][0]["reads"][0]["name"], "a", "{stmts}");
    assert_eq!(
        stmts["items"][0]["reads"][0]["links"][0]["line"], 4,
        "{stmts}"
    );
    let uses = graph_json(
        &[
            &["uses", "a", "--file", "calc.py", "--line", "5"][..],
            &repo,
        ]
        .concat(),
        &db_path,
    )
    .await;
    assert_eq!(uses["items"][0]["same_function"], true, "{uses}");
    let map = graph_json(
        &[&["map", "--tokens", "40", "--focus", "calc.py"][..], &repo].concat(),
        &db_path,
    )
    .await;
    assert!(map["tokens"].as_u64().unwrap() <= 40, "{map}");
    assert!(
        map["text"].as_str().unwrap().starts_with("calc.py:\n"),
        "{map}"
    );
    let stats = graph_json(&[&["stats", "examples/calc"][..]].concat(), &db_path).await;
    // CalcTest and its two test methods.
    assert_eq!(stats["tests"], 3, "{stats}");
    // A bad location is refused with the form it wants.
    let args = ["statements", "calc.py", "--repo", "examples/calc"];
    assert_graph_refuses(&args, &db_path, "is not FILE:LINE").await;
}

#[tokio::test]
async fn the_exit_code_says_the_class_of_the_failure() {
    // A command line that does not parse: usage, 64; --help is no failure.
    let out = forq(&["fix", "--no-such-flag"]).await;
    check_exit(&out, 64);
    assert!(String::from_utf8_lossy(&out.stderr).contains("--no-such-flag"));
    check_exit(&forq(&["--help"]).await, 0);
    check_exit(&forq(&["--version"]).await, 0);
    // A value the person gave that is wrong: input, 65, with the hint.
    let tmp = tempfile::tempdir().unwrap();
    let out = forq(&[
        "runs",
        "show",
        "nosuch",
        "--state",
        tmp.path().to_str().unwrap(),
    ])
    .await;
    check_exit(&out, 65);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("forq: error: no run nosuch in the store"),
        "{stderr}"
    );
    assert!(
        stderr.contains("forq: hint: `forq runs` lists the runs"),
        "{stderr}"
    );
    // (Infrastructure, 69: `forq queue --docker-host` on a port nobody
    // listens on, in the queue's tests; repository, 66: `forq fix` where
    // every test passes, below.)
}

/// `forq graph ARGS... --db DB` exits 65 (bad input) and says `says` on stderr.
async fn assert_graph_refuses(args: &[&str], db: &str, says: &str) {
    let mut all = vec!["graph"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--db", db]);
    let out = forq(&all).await;
    check_exit(&out, 65);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(says),
        "{out:?}"
    );
}

#[tokio::test]
async fn graph_bench_reports_every_figure_side_by_side() {
    let report = {
        let out = forq(&[
            "graph",
            "bench",
            "crates/forq-graph/tests/fixtures/polyglot",
            "--samples",
            "5",
            "--json",
        ])
        .await;
        check_exit(&out, 0);
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    for key in [
        "files",
        "bytes",
        "parse_only_s",
        "cold_index_s",
        "cold_index_eager_flow_s",
        "flow_on_demand_s",
        "noop_reindex_s",
        "one_file_reindex_s",
        "query_p95_ms",
        "symbols",
        "edges",
        "statements",
        "peak_rss_mb",
    ] {
        assert!(report[key].is_number(), "{key} missing: {report}");
    }
    assert!(report["files"].as_u64().unwrap() >= 10, "{report}");
    assert!(report["symbols"].as_u64().unwrap() > 50, "{report}");
    // The statements counted are every file's: the bench computes them all
    // (on demand) before the queries it times.
    assert!(report["statements"].as_u64().unwrap() > 50, "{report}");
    let kinds: Vec<&str> = report["queries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["query"].as_str().unwrap())
        .collect();
    assert_eq!(kinds[0], "statements_first", "{report}");
    // The database's cost per source byte, beside the two it divides.
    let ratio = report["db_bytes"].as_f64().unwrap() / report["bytes"].as_f64().unwrap();
    assert!(
        (report["db_over_source"].as_f64().unwrap() - ratio).abs() < 1e-6,
        "{report}"
    );
}

#[tokio::test]
async fn graph_definitions_agree_with_python_ast_and_ctags() {
    // The documented accuracy script, on the polyglot fixture: every
    // figure at its threshold (the script exits 1 otherwise).
    let out = forq_sandbox::host_command("python3")
        .args([
            "crates/forq-graph/scripts/accuracy.py",
            "--forq",
            env!("CARGO_BIN_EXE_forq"),
            "crates/forq-graph/tests/fixtures/polyglot",
        ])
        .current_dir(repo_root())
        .output()
        .await
        .expect("run python3");
    check_exit(&out, 0);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report["python"]["ast"].as_u64().unwrap() >= 20, "{report}");
    assert!(report["ctags"]["ctags"].as_u64().unwrap() >= 40, "{report}");
    assert_eq!(report["python"]["recall"], 1.0, "{report}");
}

#[tokio::test]
async fn graph_index_killed_midway_is_repaired_by_the_next_run() {
    // A tree big enough that indexing takes a while in a debug build.
    let repo = tempfile::tempdir().unwrap();
    for i in 0..1500 {
        let dir = repo.path().join(format!("pkg{}", i % 30));
        std::fs::create_dir_all(&dir).unwrap();
        let mut src = format!("from pkg{}.m{} import f0 as g\n", (i + 1) % 30, i + 1);
        for f in 0..8 {
            src.push_str(&format!(
                "\n\ndef f{f}(x):\n    y = x + {f}\n    y = g(y)\n    return f{}(y)\n",
                (f + 1) % 8
            ));
        }
        std::fs::write(dir.join(format!("m{i}.py")), src).unwrap();
    }
    let root = repo.path().display().to_string();
    let cold_db = repo.path().join(".cold.db").display().to_string();
    let cold = graph_json(&["stats", &root], &cold_db).await;
    let mut repaired = false;
    for delay_ms in [150, 300, 600, 1200, 2400, 4800] {
        let db_dir = tempfile::tempdir().unwrap();
        let db = db_dir.path().join("graph.db").display().to_string();
        let mut child = forq_sandbox::host_command(env!("CARGO_BIN_EXE_forq"))
            .args(["graph", "index", &root, "--db", &db])
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(delay_ms)).await;
        let pid = child.id().unwrap().to_string();
        forq_sandbox::host_command("kill")
            .args(["-KILL", &pid])
            .status()
            .await
            .unwrap();
        let status = child.wait().await.unwrap();
        if status.code().is_some() {
            break; // it finished before the kill: later delays cannot catch it either
        }
        let report = graph_json(&["index", &root], &db).await;
        if report["repaired"] == true {
            repaired = true;
            // The repaired index answers exactly as a cold one.
            let after = graph_json(&["stats", &root], &db).await;
            assert_eq!(after, cold, "after repair vs cold");
            break;
        }
    }
    assert!(
        repaired,
        "no kill landed between the first batch and the final commit"
    );
}

#[tokio::test]
async fn bootstrap_proves_the_example_runs_and_says_why_not_elsewhere() {
    let out = forq(&["bootstrap", "examples/calc", "--json"]).await;
    check_exit(&out, 0);
    let record: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(record["verdict"], "bootstrapped", "{record}");
    assert_eq!(
        (record["passed"].as_u64(), record["failed"].as_u64()),
        (Some(1), Some(1)),
        "{record}"
    );
    for key in [
        "stacks",
        "tests_executed",
        "skipped",
        "duration_ms",
        "evidence",
        "reason",
        "cached",
    ] {
        assert!(!record[key].is_null(), "{key} missing: {record}");
    }
    assert_eq!(
        record["stacks"][0]["command"], "python3 -m unittest -v",
        "{record}"
    );

    let empty = tempfile::tempdir().unwrap();
    std::fs::write(empty.path().join("README.md"), "# notes\n").unwrap();
    let out = forq(&["bootstrap", empty.path().to_str().unwrap()]).await;
    // Not bootstrapped, whatever the verdict: "not achieved" (the
    // verdict itself is in the output and in --json).
    check_exit(&out, 1);
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .starts_with("unsupported_ecosystem: no registered stack matched"),
        "{out:?}"
    );
    let out = forq(&[
        "bootstrap",
        empty.path().to_str().unwrap(),
        "--skip-bootstrap",
        "--json",
    ])
    .await;
    check_exit(&out, 0);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("\"verdict\":\"skipped\""),
        "{out:?}"
    );
}

#[tokio::test]
async fn bootstrap_clones_a_git_url_shallow_and_keeps_it_when_asked() {
    // A repository of the calc example with two commits, served by file://.
    let origin = tempfile::tempdir().unwrap();
    let calc = repo_root().join("examples/calc");
    std::fs::create_dir_all(origin.path().join("tests")).unwrap();
    for file in ["calc.py", "tests/__init__.py", "tests/test_calc.py"] {
        std::fs::copy(calc.join(file), origin.path().join(file)).unwrap();
    }
    for args in [
        &["init", "-q"][..],
        &["add", "."],
        &["commit", "-q", "-m", "one"],
        &["commit", "-q", "--allow-empty", "-m", "two"],
    ] {
        git(origin.path(), args).await;
    }
    let url = format!("file://{}", origin.path().display());
    let keep = tempfile::tempdir().unwrap();
    let into = keep.path().join("work");
    let out = forq(&[
        "bootstrap",
        &url,
        "--into",
        into.to_str().unwrap(),
        "--json",
    ])
    .await;
    check_exit(&out, 0);
    let record: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(record["verdict"], "bootstrapped", "{record}");
    assert_eq!(record["head"].as_str().map(str::len), Some(40), "{record}");
    // Kept, with .git and one commit of history.
    let count = forq_sandbox::host_command("git")
        .args(["rev-list", "--count", "HEAD"])
        .current_dir(&into)
        .output()
        .await
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&count.stdout).trim(), "1");
    // Human output: progress per phase on stderr, and a second run on the
    // same commit answers from the cache and says so.
    let out = forq(&["bootstrap", into.to_str().unwrap()]).await;
    check_exit(&out, 0);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cache: this commit's green verdict"),
        "{stderr}"
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("[cached: .forq/bootstrap/manifest.json"),
        "{out:?}"
    );
    let out = forq(&["bootstrap", into.to_str().unwrap(), "--no-cache"]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("detect: unittest (test*.py files)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("test unittest: python3 -m unittest -v"),
        "{stderr}"
    );
    // A URL that is no repository: a clear error, exit 69 (git failed).
    let out = forq(&["bootstrap", "file:///nonexistent/forq-repo"]).await;
    check_exit(&out, 69);
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("git could not clone file:///nonexistent/forq-repo"),
        "{out:?}"
    );
}

#[tokio::test]
async fn a_reader_that_stops_reading_is_not_an_error() {
    // `forq … | head`: the pipe's reader is gone before forq writes.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = forq_sandbox::host_command(env!("CARGO_BIN_EXE_forq"))
        .args(["config", "schema"])
        .stdout(writer)
        .output()
        .await
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn a_repositorys_forq_dir_that_is_a_link_is_never_written_through() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::write(repo.join("calc.py"), "def add(a, b):\n    return a + b\n").unwrap();
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, repo.join(".forq")).unwrap();
    let repo_s = repo.to_str().unwrap();
    for args in [
        vec!["graph", "index", repo_s],
        vec!["bootstrap", repo_s, "--backend", "host"],
    ] {
        let out = forq(&args).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(stderr.contains("symbolic link"), "{args:?}: {stderr}");
    }
    assert_eq!(
        std::fs::read_dir(&elsewhere).unwrap().count(),
        0,
        "something was written through the link"
    );
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

#[tokio::test]
async fn errors_say_what_happened_and_the_hint_what_to_type_next() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("calc.py"),
        "def add(a, b):\n    return a + b\n",
    )
    .unwrap();
    let repo = tmp.path().to_str().unwrap();
    let out = forq(&["graph", "callers", "nosuch", "--repo", repo]).await;
    check_exit(&out, 65);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("forq: error: no symbol matches \"nosuch\"\n"),
        "{stderr}"
    );
    assert!(
        stderr.contains("forq: hint: `forq graph symbols --name NAME` lists candidates\n"),
        "{stderr}"
    );
    // Every test passes: the library says so, the hint names the flag.
    std::fs::create_dir(tmp.path().join("tests")).unwrap();
    std::fs::write(tmp.path().join("tests/__init__.py"), "").unwrap();
    std::fs::write(
        tmp.path().join("tests/test_calc.py"),
        "import unittest\n\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n",
    )
    .unwrap();
    let out = forq(&["fix", repo, "--backend", "host", "--provider", "openai"]).await;
    check_exit(&out, 66);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("every test passes on the unmodified code: no test captures the issue yet"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "forq: hint: name the failing test that captures the issue with --target TEST_ID"
        ),
        "{stderr}"
    );
}
