//! Runs on other engines: a remote Docker engine, several at once, a golden shared by a repository's runs.

use super::*;

/// A repository for the docker backend's bare busybox image: its tests are
/// a shell script printing TAP; the code is Python the search mutates
/// (`add` subtracts).
fn shcalc_repo(dir: &Path) -> PathBuf {
    let repo = dir.join("shcalc");
    std::fs::create_dir(&repo).unwrap();
    std::fs::write(
        repo.join("calc.py"),
        "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n",
    )
    .unwrap();
    // TAP as node's runner and tape write it: subtests, then the counts.
    let script = r##"pass=0; fail=0
check() {
  echo "# Subtest: $1"
  if grep -qF "$2" calc.py; then echo "ok $3 - $1"; pass=$((pass+1)); else echo "not ok $3 - $1"; fail=$((fail+1)); fi
}
check add 'return a + b' 1
check mul 'return a * b' 2
echo "1..2"; echo "# tests 2"; echo "# pass $pass"; echo "# fail $fail"
[ "$fail" -eq 0 ]
"##;
    std::fs::write(repo.join("test.sh"), script).unwrap();
    std::fs::write(
        repo.join("forq.yml"),
        "golden:\n  test: sh test.sh\ntriage:\n  enabled: false\n",
    )
    .unwrap();
    repo
}

#[tokio::test]
async fn the_same_pipeline_runs_on_a_remote_engine_through_docker_host() {
    // .ci/run starts dockerd on loopback TCP too: a remote engine.
    let address = "127.0.0.1:2375";
    if tokio::net::TcpStream::connect(address).await.is_err() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI starts dockerd on {address}"
        );
        eprintln!("SKIPPED the_same_pipeline_runs_on_a_remote_engine_through_docker_host: no engine on tcp://{address}");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let repo = shcalc_repo(tmp.path());
    let state = tmp.path().join("state");
    let host = format!("tcp://{address}");
    let out = queue_text(
        "# add() subtracts",
        &repo,
        "docker",
        &state,
        &[],
        &[("DOCKER_HOST", &host)],
    )
    .await;
    check_exit(&out, 0);
    let run = &json_of(&out)[0];
    assert_eq!(run["state"], "patch_ready", "{run}");
    let ws = state
        .join("runs")
        .join(run["id"].as_str().unwrap())
        .join("workspace");
    let diff = git(&ws, &["show", "--format=", run["branch"].as_str().unwrap()]).await;
    assert!(diff.contains("+    return a + b"), "{diff}");
}

#[tokio::test]
async fn a_queue_spreads_its_runs_over_several_engines() {
    // Two addresses of CI's engine (its socket, and loopback TCP) stand for
    // two hosts: what is tested is the spreading, one run on each.
    let address = "127.0.0.1:2375";
    let socket = "/var/run/docker.sock";
    if tokio::net::TcpStream::connect(address).await.is_err() || !Path::new(socket).exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI starts dockerd on {socket} and {address}"
        );
        eprintln!("SKIPPED a_queue_spreads_its_runs_over_several_engines: no engine on both");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    shcalc_repo(tmp.path());
    let issues = tmp.path().join("issues");
    std::fs::create_dir(&issues).unwrap();
    for n in [1, 2] {
        std::fs::write(
            issues.join(format!("{n}.md")),
            format!("---\nid: {n}\nrepo: ../shcalc\n---\n# add() subtracts ({n})\n"),
        )
        .unwrap();
    }
    let state = tmp.path().join("state");
    let state_s = state.to_str().unwrap();
    let unix = format!("unix://{socket}");
    let tcp = format!("tcp://{address}");
    let out = forq_env(
        &[
            "queue",
            "--issues",
            issues.to_str().unwrap(),
            "--docker-host",
            &unix,
            "--docker-host",
            &tcp,
            "--jobs",
            "1",
            "--json",
            "--state",
            state_s,
        ],
        &[],
    )
    .await;
    check_exit(&out, 0);
    let mut used = Vec::new();
    for run in json_of(&out).as_array().unwrap() {
        assert_eq!(run["state"], "patch_ready", "{run}");
        let id = run["id"].as_str().unwrap();
        let shown = show_run(id, state_s).await;
        let engines = events_of(&shown, "engine");
        assert_eq!(engines.len(), 1, "{shown}");
        used.push(engines[0]["engine"].as_str().unwrap().to_owned());
    }
    used.sort();
    let mut want = vec![tcp, unix];
    want.sort();
    assert_eq!(used, want, "one run on each engine");
    // An engine that does not answer is named.
    let bad = forq_env(
        &[
            "queue",
            "--issues",
            issues.to_str().unwrap(),
            "--docker-host",
            "tcp://127.0.0.1:9",
            "--again",
            "--state",
            state_s,
        ],
        &[],
    )
    .await;
    check_exit(&bad, 69);
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--docker-host tcp://127.0.0.1:9"));
}

#[tokio::test]
async fn queue_runs_on_one_repository_share_its_golden() {
    // The first run builds the repository's golden, the next forks it, and
    // each says which in its events.
    if !native_or_skip("queue_runs_on_one_repository_share_its_golden") {
        return;
    }
    let tmp = tempfile::Builder::new()
        .prefix("forq-queue-golden-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let repo = calc_repo(tmp.path(), None);
    let state = tmp.path().join("state");
    let state_s = state.to_str().unwrap();
    let sandboxes = tmp.path().join("sandboxes");
    let sandboxes_s = sandboxes.to_str().unwrap();
    let mut hows = Vec::new();
    for text in ["# add() subtracts", "# add() is still wrong"] {
        let out = queue_text(
            text,
            &repo,
            "native",
            &state,
            &["--golden", "build"],
            &[("FORQ_SANDBOX_DIR", sandboxes_s)],
        )
        .await;
        check_exit(&out, 0);
        let runs = json_of(&out);
        let id = runs[0]["id"].as_str().unwrap().to_owned();
        assert_eq!(runs[0]["state"], "patch_ready", "{runs}");
        let golden = events_of(&show_run(&id, state_s).await, "golden");
        let first = golden
            .first()
            .unwrap_or_else(|| panic!("no golden event in {id}"));
        hows.push(first["golden"]["how"].as_str().unwrap().to_owned());
    }
    assert_eq!(hows, ["built", "forked"]);
}
