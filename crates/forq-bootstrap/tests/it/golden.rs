//! Golden environments through `provision_warm`: built once, forked after,
//! one build for two runs at once, synced on a new commit, broken when the
//! tests stop running (and runs say so), mended by a rebuild.

use std::path::Path;
use std::sync::Arc;

use forq_bootstrap::{GateError, GateOptions, GoldenOptions, Stack};
use forq_sandbox::{Backend, Goldens, NativeBackend, NativeOptions};

use super::repo;

async fn git(dir: &Path, args: &[&str]) {
    let out = forq_sandbox::host_command("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// The calc example as a git repository of its own.
async fn calc_repo() -> tempfile::TempDir {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/calc");
    let read = |p: &str| std::fs::read_to_string(src.join(p)).unwrap();
    let dir = repo(&[
        ("calc.py", &read("calc.py")),
        ("tests/__init__.py", ""),
        ("tests/test_calc.py", &read("tests/test_calc.py")),
        (".gitignore", ".forq/\n"),
    ]);
    git(dir.path(), &["init", "-q"]).await;
    git(dir.path(), &["add", "-A"]).await;
    git(dir.path(), &["commit", "-q", "-m", "calc"]).await;
    dir
}

/// A recipe whose install leaves a stamp no two installs share.
fn recipe() -> Stack {
    Stack::custom(
        "test recipe",
        vec![
            "mkdir -p .forq/deps && cat /proc/sys/kernel/random/uuid > .forq/deps/stamp".to_owned(),
        ],
        "python3 -m unittest -v",
    )
}

struct Fixture {
    backend: Arc<dyn Backend>,
    goldens: Goldens,
    _state: tempfile::TempDir,
}

#[allow(clippy::print_stderr)] // a skip is said where a developer sees it
fn skip(why: &dyn std::fmt::Display) {
    eprintln!("SKIPPED: no native backend: {why}");
}

fn fixture() -> Option<Fixture> {
    std::fs::create_dir_all("/var/tmp").unwrap();
    let state = tempfile::Builder::new()
        .prefix("forq-golden-it-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let mut opts = NativeOptions::default();
    opts.state_dir = Some(state.path().to_path_buf());
    let backend = match NativeBackend::open(opts) {
        Ok(b) => b,
        Err(e) if std::env::var_os("CI").is_none() => {
            skip(&e);
            return None;
        }
        Err(e) => panic!("the native backend must work under CI: {e}"),
    };
    let goldens = Goldens::in_state_dir(state.path()).unwrap();
    Some(Fixture {
        backend: Arc::new(backend),
        goldens,
        _state: state,
    })
}

fn options(f: &Fixture, identity: &str) -> GateOptions {
    let mut options = GateOptions::default().recipes(vec![recipe()]);
    options.golden = Some(GoldenOptions::new(f.goldens.clone(), identity, true));
    options
}

/// A warm sandbox: how it came (built, forked, synced), its generation
/// and the install's stamp.
async fn warm(
    f: &Fixture,
    repo: &Path,
    options: &GateOptions,
) -> Result<(String, u32, String), GateError> {
    let warm = forq_bootstrap::provision_warm(&*f.backend, repo, &recipe(), options).await?;
    let used = warm.golden.clone().expect("a golden applied");
    let stamp = warm
        .sandbox
        .read_file(Path::new(".forq/deps/stamp"))
        .await
        .unwrap();
    warm.sandbox.destroy().await.unwrap();
    Ok((used.how, used.generation, String::from_utf8(stamp).unwrap()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_golden_is_built_once_then_forked_synced_and_marked_broken() {
    let Some(f) = fixture() else { return };
    let dir = calc_repo().await;
    let options = options(&f, "example/calc");
    let (how, generation, built) = warm(&f, dir.path(), &options).await.unwrap();
    assert_eq!((how.as_str(), generation), ("built", 1));
    // The same tree: forked, the install not run again.
    let (how, generation, forked) = warm(&f, dir.path(), &options).await.unwrap();
    assert_eq!((how.as_str(), generation), ("forked", 1));
    assert_eq!(forked, built, "the install ran again");
    // Without building, a matching golden is still used.
    let mut use_only = options.clone();
    use_only.golden.as_mut().unwrap().build = false;
    let (how, _, _) = warm(&f, dir.path(), &use_only).await.unwrap();
    assert_eq!(how, "forked");
    // A new commit: the next generation, from the previous one.
    std::fs::write(dir.path().join("NOTES.md"), "a change\n").unwrap();
    git(dir.path(), &["add", "-A"]).await;
    git(dir.path(), &["commit", "-q", "-m", "notes"]).await;
    let (how, generation, _) = warm(&f, dir.path(), &options).await.unwrap();
    assert_eq!((how.as_str(), generation), ("synced", 2));
    let listed = f.goldens.list().unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].generation, 2);
    // A commit whose tests no longer load: the sync fails, the golden is
    // broken, and every run says so.
    std::fs::write(
        dir.path().join("tests/test_calc.py"),
        "import a_module_that_is_not_there\n",
    )
    .unwrap();
    git(dir.path(), &["commit", "-q", "-am", "break"]).await;
    let err = warm(&f, dir.path(), &options).await.unwrap_err();
    assert!(matches!(err, GateError::GoldenBroken { .. }), "{err}");
    let err = warm(&f, dir.path(), &use_only).await.unwrap_err();
    assert!(err.to_string().contains("broken"), "{err}");
    // Mended: the tests load again, and a rebuild starts from scratch.
    git(dir.path(), &["revert", "--no-edit", "HEAD"]).await;
    let mut rebuild = options.clone();
    rebuild.golden = rebuild.golden.map(|g| g.rebuild(true));
    let (how, generation, _) = warm(&f, dir.path(), &rebuild).await.unwrap();
    assert_eq!((how.as_str(), generation), ("built", 3));
    let (how, _, _) = warm(&f, dir.path(), &options).await.unwrap();
    assert_eq!(how, "forked");
}

/// Attack (forq's adversarial corpus, SECURITY.md): another repository's
/// golden under this one's name (a slug it chose, a hash cut short enough
/// to collide). The name carries the whole hash, and a sync forks a
/// previous generation only when its manifest names this repository.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sync_never_forks_another_repositorys_golden() {
    let Some(f) = fixture() else { return };
    let dir = calc_repo().await;
    let options = options(&f, "example/calc");
    let (how, _, _) = warm(&f, dir.path(), &options).await.unwrap();
    assert_eq!(how, "built");
    let listed = f.goldens.list().unwrap();
    let name = listed[0].name.clone();
    let hash = name.rsplit('-').next().unwrap();
    assert_eq!(hash.len(), 40, "the whole hash: {name}");
    // The manifest now says the golden is someone else's.
    let manifest = f.goldens.dir().join(&name).join("manifest.json");
    let mut info: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    info["meta"]["identity"] = serde_json::json!("attacker/calc");
    std::fs::write(&manifest, serde_json::to_vec(&info).unwrap()).unwrap();
    std::fs::write(dir.path().join("NOTES.md"), "a change\n").unwrap();
    git(dir.path(), &["add", "-A"]).await;
    git(dir.path(), &["commit", "-q", "-m", "notes"]).await;
    let (how, generation, _) = warm(&f, dir.path(), &options).await.unwrap();
    assert_eq!(
        (how.as_str(), generation),
        ("built", 2),
        "built afresh, not synced from another's"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_runs_at_once_share_one_golden_build() {
    let Some(f) = fixture() else { return };
    let dir = calc_repo().await;
    let options = options(&f, "example/calc-twice");
    let (a, b) = tokio::join!(
        warm(&f, dir.path(), &options),
        warm(&f, dir.path(), &options)
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    let mut hows = [a.0.as_str(), b.0.as_str()];
    hows.sort();
    assert_eq!(hows, ["built", "forked"]);
    assert_eq!(a.2, b.2, "two installs ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gate_runs_its_tests_in_the_golden_and_says_so() {
    let Some(f) = fixture() else { return };
    let dir = calc_repo().await;
    let mut options = options(&f, "example/calc-gate").no_cache(true);
    let record = forq_bootstrap::run(&*f.backend, dir.path(), &options)
        .await
        .unwrap();
    assert_eq!(record.verdict, forq_bootstrap::Verdict::Bootstrapped);
    let used = record.stacks[0].golden.clone().expect("a golden used");
    assert_eq!((used.how.as_str(), used.generation), ("built", 1));
    // Only a matching golden, now: forked, the install not run again.
    options.golden.as_mut().unwrap().build = false;
    let record = forq_bootstrap::run(&*f.backend, dir.path(), &options)
        .await
        .unwrap();
    assert_eq!(record.verdict, forq_bootstrap::Verdict::Bootstrapped);
    assert_eq!(record.tests_executed, 2);
    assert_eq!(record.stacks[0].golden.as_ref().unwrap().how, "forked");
}

/// What `forq serve` does on a push to a default branch: the repository
/// at a URL is cloned shallow, its tests proven, its warm state saved as
/// its golden (a second sync is the next generation); a repository whose
/// tests do not run is refused with the reason, and nothing is saved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sync_by_url_clones_proves_and_saves_the_golden() {
    let Some(f) = fixture() else { return };
    let dir = calc_repo().await;
    let url = format!("file://{}", dir.path().display());
    let record = forq_bootstrap::sync_golden(&*f.backend, &url)
        .await
        .unwrap();
    assert!(record.verdict.lets_work_go_on(), "{record:?}");
    let goldens = f.backend.goldens().unwrap();
    let saved = goldens.list().unwrap();
    assert_eq!(saved.len(), 1, "{saved:?}");
    assert_eq!(saved[0].meta["identity"], url.as_str(), "{:?}", saved[0]);
    assert!(
        matches!(saved[0].status, forq_sandbox::GoldenStatus::Ready),
        "{:?}",
        saved[0]
    );

    let broken = repo(&[("README.md", "# no tests\n")]);
    git(broken.path(), &["init", "-q"]).await;
    git(broken.path(), &["add", "-A"]).await;
    git(broken.path(), &["commit", "-q", "-m", "docs"]).await;
    let url = format!("file://{}", broken.path().display());
    let err = forq_bootstrap::sync_golden(&*f.backend, &url)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, GateError::GoldenUnproven { reason, .. } if reason.starts_with("unsupported_ecosystem")),
        "{err:?}"
    );
    assert_eq!(goldens.list().unwrap().len(), 1, "nothing more was saved");

    let err = forq_bootstrap::sync_golden(&*f.backend, "file:///nonexistent/forq-repo")
        .await
        .unwrap_err();
    assert!(matches!(err, GateError::Clone { .. }), "{err:?}");
}
