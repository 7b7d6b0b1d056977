//! forq.yml: parsing, errors with file and line, the checks, what a repository may not loosen.

use super::*;

#[test]
fn review_points_forq_cannot_honour_are_refused_with_why() {
    let ok = Config::parse("review: [commit, ripple]\n", "f.yml").expect("valid");
    assert_eq!(ok.review, [ReviewPoint::Commit, ReviewPoint::Ripple]);
    let e = Config::parse("review: [commit, push]\n", "f.yml")
        .expect_err("push is refused")
        .to_string();
    assert!(
        e.starts_with("f.yml:1: review:") && e.contains("never pushes on its own"),
        "{e}"
    );
    let e = Config::parse("actions:\n  fix:\n    ripple_depth: 9\n", "f.yml")
        .expect_err("out of range")
        .to_string();
    assert!(e.starts_with("f.yml:3: actions.fix.ripple_depth:"), "{e}");
    let e = Config::parse("actions:\n  fix:\n    plausible: 0\n", "f.yml")
        .expect_err("nothing handed back")
        .to_string();
    assert!(
        e.starts_with("f.yml:3: actions.fix.plausible:") && e.contains("at least 1"),
        "{e}"
    );
    let e = Config::parse("test:\n  idle_s: -1\n", "f.yml")
        .expect_err("negative")
        .to_string();
    assert!(
        e.starts_with("f.yml:2: test.idle_s:") && e.contains("write 0 to 604800"),
        "{e}"
    );
}

#[test]
fn no_file_means_every_default() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (config, path) = Config::load(dir.path()).expect("defaults");
    assert_eq!(config, Config::default());
    assert!(path.is_none());
    assert_eq!(config.actions.fix.branch, "forq/{action}/{run_id}");
    assert_eq!(config.funding.mode, FundingMode::Owner);
}

#[test]
fn a_full_file_round_trips_every_section() {
    let text = "\
golden:
  install: [pip install -e .]
  build: [make]
  test: pytest -v
  env:
    PYTHONHASHSEED: \"0\"
test:
  targets: [tests/test_x.py::test_y]
  timeout_s: 60
  idle_s: 2.5
triage:
  enabled: false
  threshold: 0.8
actions:
  fix:
    mode: auto
    strategy: single
    brancher: agent
    agent: {max_steps: 12, max_cost_usd: 0.5}
    budget: {max_nodes: 40, max_depth: 1}
    plausible: 5
    branch: bot/{issue}-{run_id}
funding:
  mode: contributor
  trusted: [alice]
sandbox:
  backend: docker
  memory_mb: 2048
  network_for_installs: false
";
    let c = Config::parse(text, "forq.yml").expect("valid");
    assert_eq!(c.golden.install, ["pip install -e ."]);
    assert_eq!(c.golden.env["PYTHONHASHSEED"], "0");
    assert_eq!(c.test.timeout_s, 60);
    assert_eq!(c.test.idle_s, Some(2.5));
    assert_eq!(
        c.gate_options().test_idle,
        Some(std::time::Duration::from_millis(2500))
    );
    assert!(!c.triage.enabled);
    assert_eq!(c.actions.fix.mode, Mode::Auto);
    assert_eq!(c.actions.fix.brancher, Some(BrancherName::Agent));
    assert_eq!(c.actions.fix.agent.max_steps, 12);
    assert_eq!(c.actions.fix.budget.max_nodes, 40);
    assert_eq!(c.actions.fix.plausible, 5);
    assert_eq!(
        Config::default().actions.fix.plausible,
        forq_search::DEFAULT_PLAUSIBLE
    );
    assert_eq!(c.funding.trusted, ["alice"]);
    assert_eq!(c.sandbox.memory_mb, Some(2048));
    let gate = c.gate_options();
    assert_eq!(gate.recipes.len(), 1);
    assert_eq!(gate.recipes[0].install, ["pip install -e .", "make"]);
    assert_eq!(gate.recipes[0].command, "pytest -v");
    assert_eq!(gate.limits.memory_bytes, Some(2048 * 1024 * 1024));
    assert_eq!(gate.env, [("PYTHONHASHSEED".to_owned(), "0".to_owned())]);
    assert_eq!(gate.install_network, forq_sandbox::Network::None);
    assert_eq!(
        Config::default().gate_options().install_network,
        forq_sandbox::Network::Proxy
    );
}

#[test]
fn errors_name_the_key_and_its_line() {
    let bad_type = Config::parse("sandbox:\n  backend: docker\n  pids: lots\n", "f.yml")
        .expect_err("pids is a number");
    let s = bad_type.to_string();
    assert!(s.starts_with("f.yml:3: sandbox.pids:"), "{s}");
    assert_eq!(s.matches("sandbox.pids").count(), 1, "the key once: {s}");
    assert!(
        s.ends_with("expected a whole number"),
        "in YAML's words: {s}"
    );

    let unknown =
        Config::parse("actions:\n  fix:\n    stratgy: single\n", "f.yml").expect_err("unknown key");
    let s = unknown.to_string();
    assert!(s.starts_with("f.yml:3: actions.fix.stratgy:"), "{s}");
    assert!(s.contains("strategy"), "names the expected keys: {s}");

    let enum_value = Config::parse("actions:\n  fix:\n    strategy: greedy\n", "f.yml")
        .expect_err("unknown variant");
    assert!(
        enum_value.to_string().contains("actions.fix.strategy"),
        "{enum_value}"
    );

    let range = Config::parse("# c\ntriage:\n  enabled: true\n  threshold: 3\n", "f.yml")
        .expect_err("out of range");
    assert_eq!(
        range.to_string(),
        "f.yml:4: triage.threshold: 3 is not a confidence; write a number from 0 to 1"
    );
    let backend = Config::parse("sandbox:\n  backend: vm\n", "f.yml").expect_err("backend");
    assert!(backend
        .to_string()
        .starts_with("f.yml:2: sandbox.backend: unknown backend; write auto"));
}

#[test]
fn the_schema_describes_every_section() {
    let schema = Config::schema();
    let props = &schema["properties"];
    for section in ["golden", "test", "triage", "actions", "funding", "sandbox"] {
        assert!(props.get(section).is_some(), "{section} in {schema}");
    }
    let text = schema.to_string();
    assert!(
        text.contains("speculative") && text.contains("contributor"),
        "{text}"
    );
}

#[test]
fn a_models_context_window_is_read_and_a_misspelt_key_refused() {
    let c = Config::parse(
        "models:\n  gemma-3-270m:\n    context_window: 4096\n",
        "f.yml",
    )
    .expect("valid");
    assert_eq!(c.models["gemma-3-270m"].context_window, Some(4096));
    let e = Config::parse("models:\n  m:\n    context: 4096\n", "f.yml")
        .expect_err("unknown key")
        .to_string();
    assert!(e.contains("context"), "{e}");
}

/// Attack: a repository's forq.yml removes the sandbox's caps with a value
/// that reads as none — 0 (Docker's and the kernel's "no limit"), a size
/// that `<< 20` wraps to 0, a core count that is not a number.
#[test]
fn a_repository_cannot_remove_a_cap_with_a_value_that_is_none() {
    for (yaml, key) in [
        ("sandbox:\n  memory_mb: 0\n", "sandbox.memory_mb"),
        (
            "sandbox:\n  memory_mb: 17592186044416\n",
            "sandbox.memory_mb",
        ),
        ("sandbox:\n  pids: 0\n", "sandbox.pids"),
        ("sandbox:\n  cpus: .nan\n", "sandbox.cpus"),
        ("sandbox:\n  cpus: 0\n", "sandbox.cpus"),
        ("sandbox:\n  cpus: -1\n", "sandbox.cpus"),
        ("sandbox:\n  cpus: .inf\n", "sandbox.cpus"),
        ("sandbox:\n  max_seed_mb: 0\n", "sandbox.max_seed_mb"),
        (
            "sandbox:\n  max_seed_mb: 17592186044416\n",
            "sandbox.max_seed_mb",
        ),
        ("sandbox:\n  seed_timeout_s: 0\n", "sandbox.seed_timeout_s"),
        ("sandbox:\n  golden_max_gb: .nan\n", "sandbox.golden_max_gb"),
    ] {
        let e = Config::parse(yaml, "f.yml").expect_err(yaml).to_string();
        assert!(e.starts_with(&format!("f.yml:2: {key}:")), "{yaml}: {e}");
    }
    let ok = Config::parse(
        "sandbox:\n  memory_mb: 512\n  pids: 64\n  cpus: 0.5\n",
        "f.yml",
    )
    .expect("real caps");
    let limits = ok.gate_options().limits;
    assert_eq!(limits.memory_bytes, Some(512 << 20));
    assert_eq!(limits.validate(), Ok(()));
}
