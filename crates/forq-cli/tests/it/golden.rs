//! `forq golden` end to end, and `forq fix --golden` forking what it built,
//! on the native backend with a state directory of the test's own.

use std::path::Path;
use std::process::Output;

use super::{check_exit, git, native_or_skip, repo_root};

/// examples/calc as a git repository of its own.
async fn calc_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let out = forq_sandbox::host_command("cp")
        .arg("-a")
        .arg(repo_root().join("examples/calc/."))
        .arg(dir.path())
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    git(dir.path(), &["init", "-q"]).await;
    git(dir.path(), &["add", "-A"]).await;
    git(dir.path(), &["commit", "-q", "-m", "calc"]).await;
    dir
}

async fn forq_in(state: &Path, args: &[&str]) -> Output {
    forq_sandbox::host_command(env!("CARGO_BIN_EXE_forq"))
        .args(args)
        .current_dir(repo_root())
        .env("FORQ_SANDBOX_DIR", state)
        .env("NO_COLOR", "1")
        .output()
        .await
        .unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"))
}

/// No golden yet: status says so, sync refuses and says what to type.
async fn none_yet(state: &std::path::Path, path: &str, native: &[&str]) {
    let out = forq_in(state, &[&["golden", "status", path][..], native].concat()).await;
    check_exit(&out, 1);
    assert!(stdout(&out).contains("no golden"), "{out:?}");
    let out = forq_in(state, &[&["golden", "sync", path][..], native].concat()).await;
    check_exit(&out, 65);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("forq golden build"),
        "{out:?}"
    );
}

#[tokio::test]
async fn golden_build_status_sync_list_and_rm() {
    if !native_or_skip("golden_build_status_sync_list_and_rm") {
        return;
    }
    std::fs::create_dir_all("/var/tmp").unwrap();
    let state = tempfile::Builder::new()
        .prefix("forq-cli-golden-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let repo = calc_repo().await;
    let path = repo.path().to_str().unwrap();
    let native = ["--backend", "native"];
    let state = state.path();
    none_yet(state, path, &native).await;
    // Built, then current.
    let out = forq_in(
        state,
        &[&["golden", "build", path, "--json"][..], &native].concat(),
    )
    .await;
    check_exit(&out, 0);
    let built = json(&out);
    assert_eq!(built["how"], "built", "{built}");
    assert_eq!(built["golden"]["generation"], 1);
    let name = built["golden"]["name"].as_str().unwrap().to_owned();
    let out = forq_in(state, &[&["golden", "build", path][..], &native].concat()).await;
    check_exit(&out, 0);
    assert!(stdout(&out).contains("is current"), "{out:?}");
    let out = forq_in(state, &[&["golden", "status", path][..], &native].concat()).await;
    check_exit(&out, 0);
    assert!(stdout(&out).contains("current"), "{out:?}");
    // A new commit: behind, then synced to generation 2.
    std::fs::write(repo.path().join("NOTES.md"), "more\n").unwrap();
    git(repo.path(), &["add", "-A"]).await;
    git(repo.path(), &["commit", "-q", "-m", "notes"]).await;
    let out = forq_in(state, &[&["golden", "status", path][..], &native].concat()).await;
    check_exit(&out, 1);
    assert!(stdout(&out).contains("behind"), "{out:?}");
    let out = forq_in(
        state,
        &[&["golden", "sync", path, "--json"][..], &native].concat(),
    )
    .await;
    check_exit(&out, 0);
    let synced = json(&out);
    assert_eq!(
        (
            synced["how"].as_str(),
            synced["golden"]["generation"].as_u64()
        ),
        (Some("synced"), Some(2)),
        "{synced}"
    );
    // `forq fix` on the repository forks it rather than installing.
    let out = forq_in(
        state,
        &[&["fix", path, "--golden", "use"][..], &native].concat(),
    )
    .await;
    check_exit(&out, 0);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains(&format!("golden: forked {name} (generation 2)")),
        "{said}"
    );
    // Listed; removed; gone.
    let out = forq_in(
        state,
        &[&["golden", "list", "--json"][..], &native].concat(),
    )
    .await;
    check_exit(&out, 0);
    let listed = json(&out);
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    assert_eq!(listed[0]["name"], name.as_str());
    let out = forq_in(state, &[&["golden", "rm", &name][..], &native].concat()).await;
    check_exit(&out, 0);
    let out = forq_in(state, &[&["golden", "list"][..], &native].concat()).await;
    check_exit(&out, 0);
    assert!(stdout(&out).contains("no goldens"), "{out:?}");
    let out = forq_in(state, &[&["golden", "rm", &name][..], &native].concat()).await;
    check_exit(&out, 65);
    // Built again, then evicted by the operator's cap (0 GiB keeps none).
    let out = forq_in(state, &[&["golden", "build", path][..], &native].concat()).await;
    check_exit(&out, 0);
    let config = repo.path().join("operator.yml");
    std::fs::write(&config, "sandbox:\n  golden_max_gb: 0\n").unwrap();
    let config = config.to_str().unwrap();
    let out = forq_in(
        state,
        &[&["golden", "gc", "--config", config, "--json"][..], &native].concat(),
    )
    .await;
    check_exit(&out, 0);
    assert_eq!(json(&out)["removed"], serde_json::json!([name]), "{out:?}");
}
