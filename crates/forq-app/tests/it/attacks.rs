//! forq-app's part of forq's adversarial corpus (SECURITY.md lists the
//! whole of it): what forq does on the host with a repository's `.forq`
//! and `forq.yml`. Each test performs the attack and fails when its
//! protection is removed.

use std::path::Path;

use forq_app::config::{Config, ConfigError};
use forq_app::seed::{seed, SeedOptions};

use crate::seed::git;

/// The tables of the SQLite database at `path`.
fn tables(path: &Path) -> Vec<String> {
    let conn = rusqlite::Connection::open(path).unwrap();
    let mut stmt = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .unwrap();
    stmt.query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// Attack: a repository tracks `.forq/graph.db -> …/forq.db` (the server's
/// run store), so that the graph's schema upgrade drops the store's
/// tables. Seeding removes a tracked `.forq` (it is forq's), and the index
/// never opens its database through a link.
#[tokio::test]
async fn a_tracked_forq_link_to_the_run_store_never_reaches_it() {
    let tmp = tempfile::tempdir().unwrap();
    let store_path = tmp.path().join("state/forq.db");
    forq_app::store::Store::open(&store_path).unwrap();
    let before = tables(&store_path);
    assert!(before.iter().any(|t| t == "runs"), "{before:?}");

    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(repo.join(".forq")).unwrap();
    std::fs::write(repo.join("calc.py"), "def add(a, b):\n    return a - b\n").unwrap();
    std::os::unix::fs::symlink(&store_path, repo.join(".forq/graph.db")).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]).await;
    git(&repo, &["add", "-A", "-f"]).await;
    git(&repo, &["commit", "-qm", "c"]).await;

    let ws = tmp.path().join("ws");
    let seeded = seed(repo.to_str().unwrap(), &ws, &SeedOptions::default())
        .await
        .unwrap();
    assert!(seeded.removed_forq, "the tracked .forq is reported");
    assert!(
        ws.join(".forq").symlink_metadata().is_err(),
        "the tracked .forq is gone from the workspace"
    );
    assert!(ws.join("calc.py").is_file());

    // On a checkout forq did not seed (`forq graph index .`), the link is
    // refused, not opened.
    let Err(err) = forq_graph::Index::open_current(&repo) else {
        panic!("a linked index is refused");
    };
    assert!(err.to_string().contains("graph.db"), "{err}");
    assert_eq!(tables(&store_path), before, "the run store is intact");
}

/// Attack: a repository's `forq.yml` is a link to a host file (an SSH key,
/// `/etc/shadow`) that forq reads on the host; a type error then quoted the
/// value it read. A linked config is refused, and no error echoes a value.
#[test]
fn a_linked_forq_yml_is_refused_and_errors_never_quote_its_values() {
    let tmp = tempfile::tempdir().unwrap();
    let secret = tmp.path().join("id_ed25519");
    std::fs::write(&secret, "triage:\n  threshold: \"PRIVATE-KEY-BYTES\"\n").unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    std::os::unix::fs::symlink(&secret, repo.join("forq.yml")).unwrap();
    let err = Config::load(&repo).expect_err("a linked forq.yml is refused");
    assert!(matches!(err, ConfigError::Read { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains("symbolic link"), "{text}");
    assert!(!text.contains("PRIVATE-KEY"), "{text}");

    // The same bytes as the repository's own file: the error names the key
    // and the line, and says what was found only by its kind.
    std::fs::remove_file(repo.join("forq.yml")).unwrap();
    std::fs::copy(&secret, repo.join("forq.yml")).unwrap();
    let text = Config::load(&repo).expect_err("a type error").to_string();
    assert!(text.contains(":2: triage.threshold: "), "{text}");
    assert!(text.contains("a string"), "{text}");
    assert!(!text.contains("PRIVATE-KEY"), "{text}");
    for yaml in [
        "sandbox:\n  backend: PRIVATE-KEY-BYTES\n",
        "actions:\n  fix:\n    strategy: PRIVATE-KEY-BYTES\n",
        "test:\n  timeout_s: PRIVATE-KEY-BYTES\n",
        "PRIVATE-KEY-BYTES\n",
    ] {
        let text = Config::parse(yaml, "forq.yml").expect_err(yaml).to_string();
        assert!(!text.contains("PRIVATE-KEY"), "{yaml:?} -> {text}");
    }
}

/// Attack: the repository's own `forq.yml` loosens what the operator set:
/// another image (a root image, another repository's golden), the backend,
/// uncapped test time (`idle_s: 1e300` panicked the run), and more model
/// calls on the operator's key. Out-of-range numbers are validation
/// errors; the rest is put back to the operator's, each key named.
#[test]
fn a_repositorys_forq_yml_never_loosens_the_operators_settings() {
    for (yaml, key) in [
        ("test:\n  idle_s: 1e300\n", "test.idle_s"),
        (
            "test:\n  timeout_s: 18446744073709551615\n",
            "test.timeout_s",
        ),
        ("test:\n  timeout_s: 0\n", "test.timeout_s"),
        (
            "actions:\n  fix:\n    budget:\n      max_time_s: 18446744073709551615\n",
            "actions.fix.budget.max_time_s",
        ),
        (
            "actions:\n  fix:\n    agent:\n      max_cost_usd: .nan\n",
            "actions.fix.agent.max_cost_usd",
        ),
    ] {
        let err = Config::parse(yaml, "forq.yml").expect_err(yaml);
        assert!(
            matches!(&err, ConfigError::Invalid { key: k, .. } if k == key),
            "{yaml:?}: {err}"
        );
    }
    let yaml = "sandbox:\n  backend: docker\n  image: forq-golden-other-repo:latest\n\
                test:\n  timeout_s: 86400\n  idle_s: 86400\n\
                actions:\n  fix:\n    agent:\n      max_steps: 100000\n      max_cost_usd: 0.5\n\
                \x20   budget:\n      max_nodes: 100000\n      max_time_s: 500000\n";
    let config = Config::parse(yaml, "forq.yml").unwrap();
    let mut refused: Vec<&str> = config.loosening().iter().map(|(k, _)| *k).collect();
    refused.sort_unstable();
    assert_eq!(
        refused,
        [
            "actions.fix.agent.max_steps",
            "actions.fix.budget.max_nodes",
            "actions.fix.budget.max_time_s",
            "sandbox.backend",
            "sandbox.image",
            "test.idle_s",
            "test.timeout_s",
        ]
    );
    let caps = forq_app::config::RepositoryCaps::default();
    let confined = config.confined();
    assert_eq!(confined.sandbox.image, None);
    assert_eq!(confined.sandbox.backend, "auto");
    assert_eq!(confined.test.timeout_s, caps.test_timeout_s);
    assert_eq!(confined.test.idle_s, Some(caps.test_idle_s as f64));
    assert_eq!(confined.actions.fix.agent.max_steps, caps.agent_max_steps);
    assert_eq!(confined.actions.fix.budget.max_nodes, caps.max_nodes);
    assert_eq!(
        confined.actions.fix.budget.max_time_s,
        Some(caps.max_time_s)
    );
    // Lowering is the repository's to do: a cost cap stays.
    assert_eq!(confined.actions.fix.agent.max_cost_usd, Some(0.5));
    assert!(confined.loosening().is_empty());
}

/// Attack: forq's host git read the machine's own settings — root's
/// `~/.gitconfig` and `/etc/gitconfig` — on a stranger's repository: an
/// operator's `core.fsmonitor`, aliases, `url.insteadOf` or git-lfs's
/// filter (with a head's `.lfsconfig` choosing where LFS fetches from)
/// acted on it. Here a global setting that runs a program on every
/// status: forq's git never reads it.
#[tokio::test]
async fn host_git_never_reads_the_machines_global_settings() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let pwned = tmp.path().join("PWNED");
    std::fs::write(
        home.join(".gitconfig"),
        format!(
            "[core]\n\tfsmonitor = \"touch {}; false\"\n[alias]\n\tstatus = !touch {}\n",
            pwned.display(),
            pwned.display()
        ),
    )
    .unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q"]).await;
    std::fs::write(repo.join("a.txt"), "a\n").unwrap();
    for args in [
        &["status", "--porcelain"][..],
        &["config", "--get", "core.fsmonitor"],
    ] {
        let out = forq_sandbox::host_git()
            .args(args)
            .current_dir(&repo)
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", &home)
            .output()
            .await
            .unwrap();
        assert!(
            !String::from_utf8_lossy(&out.stdout).contains("touch"),
            "git {args:?} read the global setting"
        );
    }
    assert!(!pwned.exists(), "a global setting ran a program");
}
