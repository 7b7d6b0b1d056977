//! `forq eval` on the bundled instance set (examples/eval), in native
//! sandboxes: predictions in SWE-bench's format, forq's own verdict, an
//! instance that cannot be set up, one whose tests cannot pass, resume.

use std::path::Path;

use serde_json::{json, Value};

use super::agent::forq_env;
use super::{check_exit, git, native_or_skip, repo_root};

/// The bundled instances, by id.
fn bundled() -> Vec<Value> {
    std::fs::read_to_string(repo_root().join("examples/eval/instances.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

async fn build_repos(dir: &Path) {
    let out = forq_sandbox::host_command(repo_root().join("scripts/example_repos.sh"))
        .arg(dir)
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn the_bundled_instances_match_the_repositories_the_script_builds() {
    let tmp = tempfile::tempdir().unwrap();
    build_repos(tmp.path()).await;
    let instances = bundled();
    assert_eq!(instances.len(), 20);
    for i in &instances {
        let name = i["repo"].as_str().unwrap().split('/').nth(1).unwrap();
        let base = i["base_commit"].as_str().unwrap();
        let found = forq_sandbox::host_command("git")
            .args(["cat-file", "-e", &format!("{base}^{{commit}}")])
            .current_dir(tmp.path().join(name))
            .status()
            .await
            .unwrap();
        assert!(
            found.success(),
            "{name}: {base} is not a commit of the built repository"
        );
        assert!(!i["FAIL_TO_PASS"].as_array().unwrap().is_empty(), "{i}");
    }
}

#[tokio::test]
async fn eval_predicts_judges_reports_and_resumes() {
    if !native_or_skip("eval_predicts_judges_reports_and_resumes") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let repos = tmp.path().join("repos");
    build_repos(&repos).await;
    let by_repo = |name: &str| {
        bundled()
            .into_iter()
            .find(|i| i["repo"] == format!("forq-examples/{name}"))
            .unwrap()
    };
    let mut chosen = vec![by_repo("calc"), by_repo("py-clamp"), by_repo("js-min-of")];
    // Its tests can never all pass: a FAIL_TO_PASS test that does not exist.
    let mut impossible = by_repo("calc");
    impossible["instance_id"] = json!("calc-impossible");
    impossible["FAIL_TO_PASS"] = json!(["tests.test_calc.CalcTest.test_does_not_exist"]);
    chosen.push(impossible);
    // Its repository is not under --repos: not set up, not "unresolved".
    let mut missing = by_repo("calc");
    missing["instance_id"] = json!("nowhere-1");
    missing["repo"] = json!("someone/nowhere");
    chosen.push(missing);
    let file = tmp.path().join("instances.jsonl");
    let text: String = chosen.iter().map(|i| format!("{i}\n")).collect();
    std::fs::write(&file, text).unwrap();
    let out_dir = tmp.path().join("out");
    let args = [
        "eval",
        file.to_str().unwrap(),
        "--repos",
        repos.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
        "--backend",
        "native",
        "--jobs",
        "2",
        "--json",
    ];
    let out = forq_env(&args, &[]).await;
    check_exit(&out, 1); // one instance could not be set up
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["instances"], 5, "{report}");
    assert_eq!(report["resolved"], 3, "{report}");
    assert_eq!(report["unresolved"], 1, "{report}");
    assert_eq!(report["setup_failed"], 1, "{report}");
    assert_eq!(report["model_name"], "forq-templates");
    let result = |id: &str| {
        report["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["instance_id"] == id)
            .unwrap()
            .clone()
    };
    let nowhere = result("nowhere-1");
    assert_eq!(nowhere["status"], "setup_failed");
    assert!(
        nowhere["reason"]
            .as_str()
            .unwrap()
            .contains("no repository for someone/nowhere"),
        "{nowhere}"
    );
    let impossible = result("calc-impossible");
    assert_eq!(impossible["status"], "unresolved", "{impossible}");
    assert_eq!(
        impossible["fail_to_pass"]["failed"],
        json!(["tests.test_calc.CalcTest.test_does_not_exist"])
    );
    // The report on disk is the one printed.
    let on_disk: Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("report.json")).unwrap())
            .unwrap();
    assert_eq!(on_disk, report);
    let calc_id = chosen[0]["instance_id"].as_str().unwrap();
    assert_eq!(result(calc_id)["status"], "resolved", "{report}");
    predictions_apply_to_their_base(&out_dir, &repos.join("calc"), calc_id, tmp.path()).await;
    // A rerun resumes: nothing judged again, the same report.
    let results = lines(&out_dir.join("results.jsonl")).len();
    assert_eq!(results, 5);
    let again = forq_env(&args, &[]).await;
    check_exit(&again, 1);
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("5 instance(s) already judged"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert_eq!(lines(&out_dir.join("results.jsonl")).len(), 5);
    let report_again: Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(report_again["resolved"], 3);
}

/// Predictions as SWE-bench's harness reads them: three keys each, and
/// the resolved calc instance's patch changes only the code and applies to
/// its base commit (a clone of `calc_repo` under `tmp`).
async fn predictions_apply_to_their_base(
    out_dir: &std::path::Path,
    calc_repo: &std::path::Path,
    calc_id: &str,
    tmp: &std::path::Path,
) {
    let predictions = lines(&out_dir.join("predictions.jsonl"));
    assert_eq!(predictions.len(), 5);
    for p in &predictions {
        let keys: Vec<&String> = p.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            ["instance_id", "model_name_or_path", "model_patch"],
            "{p}"
        );
        assert_eq!(p["model_name_or_path"], "forq-templates");
    }
    let patch = predictions
        .iter()
        .find(|p| p["instance_id"] == calc_id)
        .unwrap()["model_patch"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        patch.contains("--- a/calc.py") && patch.contains("+    return a + b"),
        "{patch}"
    );
    let check = tmp.join("check");
    let cloned = forq_sandbox::host_command("git")
        .args([
            "clone",
            "-q",
            calc_repo.to_str().unwrap(),
            check.to_str().unwrap(),
        ])
        .status()
        .await
        .unwrap();
    assert!(cloned.success());
    std::fs::write(tmp.join("p.patch"), &patch).unwrap();
    let applies = forq_sandbox::host_command("git")
        .args(["apply", "--check", tmp.join("p.patch").to_str().unwrap()])
        .current_dir(&check)
        .status()
        .await
        .unwrap();
    assert!(applies.success(), "{patch}");
}

#[tokio::test]
async fn instances_from_history_with_the_tests_hidden_or_shown() {
    if !native_or_skip("instances_from_history_with_the_tests_hidden_or_shown") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("calc");
    buggy_then_fixed_history(&repo).await;
    let made = forq_sandbox::host_command("python3")
        .arg(repo_root().join("scripts/make_instances.py"))
        .args([
            repo.to_str().unwrap(),
            "--commits",
            "HEAD~1..HEAD",
            "--name",
            "me/calc",
        ])
        .args(["--forq", env!("CARGO_BIN_EXE_forq"), "--backend", "native"])
        .output()
        .await
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let text = String::from_utf8(made.stdout).unwrap();
    let instance: Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(
        instance["FAIL_TO_PASS"],
        json!(["tests.test_calc.CalcTest.test_add"])
    );
    assert_eq!(
        instance["PASS_TO_PASS"],
        json!(["tests.test_calc.CalcTest.test_mul"])
    );
    assert!(instance["test_patch"]
        .as_str()
        .unwrap()
        .contains("+    def test_add(self):"));
    assert!(instance["patch"]
        .as_str()
        .unwrap()
        .contains("+    return a + b"));
    assert!(instance["problem_statement"]
        .as_str()
        .unwrap()
        .starts_with("add() subtracts"));
    let file = tmp.path().join("instances.jsonl");
    std::fs::write(&file, &text).unwrap();
    let run = |out: &str, shown: bool| {
        let mut args = vec![
            "eval".to_owned(),
            file.to_str().unwrap().to_owned(),
            "--repos".to_owned(),
            tmp.path().to_str().unwrap().to_owned(),
            "--out".to_owned(),
            tmp.path().join(out).to_str().unwrap().to_owned(),
            "--backend".to_owned(),
            "native".to_owned(),
            "--json".to_owned(),
        ];
        if shown {
            args.push("--with-tests".to_owned());
        }
        args
    };
    // Hidden (SWE-bench's setting): no test fails before the fix, and
    // without a model nothing writes one: unresolved, and says why.
    let args = run("hidden", false);
    let out = forq_env(&args.iter().map(String::as_str).collect::<Vec<_>>(), &[]).await;
    check_exit(&out, 0);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let r = &report["results"][0];
    assert_eq!(r["status"], "unresolved", "{report}");
    assert!(
        r["reason"]
            .as_str()
            .unwrap()
            .contains("every test passes on the unmodified code"),
        "{r}"
    );
    // Shown: the test patch first, FAIL_TO_PASS the target: resolved.
    let args = run("shown", true);
    let out = forq_env(&args.iter().map(String::as_str).collect::<Vec<_>>(), &[]).await;
    check_exit(&out, 0);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["resolved"], 1, "{report}");
    let prediction = &lines(&tmp.path().join("shown/predictions.jsonl"))[0];
    let patch = prediction["model_patch"].as_str().unwrap();
    assert!(patch.contains("+    return a + b"), "{patch}");
    assert!(
        !patch.contains("test_add"),
        "the test patch is not the prediction's: {patch}"
    );
}

/// A history in `repo`: the bug with no test that catches it, then the fix
/// with the test that does.
async fn buggy_then_fixed_history(repo: &std::path::Path) {
    std::fs::create_dir_all(repo.join("tests")).unwrap();
    std::fs::write(
        repo.join("calc.py"),
        "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n",
    )
    .unwrap();
    std::fs::write(repo.join("tests/__init__.py"), "").unwrap();
    let test_mul = "import unittest\n\nfrom calc import add, mul\n\n\nclass CalcTest(unittest.TestCase):\n    def test_mul(self):\n        self.assertEqual(mul(2, 3), 6)\n";
    std::fs::write(repo.join("tests/test_calc.py"), test_mul).unwrap();
    git(repo, &["init", "-q", "-b", "main"]).await;
    git(repo, &["add", "-A"]).await;
    git(repo, &["commit", "-q", "-m", "calc"]).await;
    std::fs::write(
        repo.join("calc.py"),
        "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n",
    )
    .unwrap();
    std::fs::write(
        repo.join("tests/test_calc.py"),
        format!("{test_mul}\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n"),
    )
    .unwrap();
    git(
        repo,
        &[
            "commit",
            "-q",
            "-am",
            "add() subtracts\n\nadd(2, 3) gives -1.",
        ],
    )
    .await;
}
