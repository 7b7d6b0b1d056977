//! The symbol workflows end to end: `forq rename` (the plan from the code
//! graph, applied and tested in a real sandbox by the repository's own
//! runner: unittest, node, cargo; the user's tree left alone), `forq
//! document` (a replayed model's text, docs-only check), `forq audit`.

use std::path::Path;

use super::check_exit;
use crate::agent::forq_env;

fn write(root: &Path, files: &[(&str, &str)]) {
    for (path, text) in files {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
}

const STORE: &str = "def load(path):\n    return path.upper()\n\n\nclass Store:\n    def load(self):\n        return load(\"x\")\n";
const APP: &str = "from pkg import store\nfrom pkg.store import load\n\n\ndef use():\n    f = load\n    return load(\"a\") + store.load(\"b\") + f(\"c\")\n";

fn python_project(root: &Path, test: &str) {
    write(
        root,
        &[
            ("pkg/__init__.py", ""),
            ("pkg/store.py", STORE),
            ("app.py", APP),
            ("tests/__init__.py", ""),
            ("tests/test_app.py", test),
        ],
    );
}

async fn rename(repo: &Path, out: &Path, old: &str, new: &str) -> std::process::Output {
    forq_env(
        &[
            "rename",
            old,
            new,
            "--repo",
            repo.to_str().unwrap(),
            "--json",
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    )
    .await
}

#[tokio::test]
async fn a_python_rename_across_modules_is_tested_and_patched_and_the_tree_is_left_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    python_project(
        &repo,
        "import unittest\n\nfrom app import use\nfrom pkg.store import Store, load\n\n\n\
         class AppTest(unittest.TestCase):\n    def test_use(self):\n        self.assertEqual(use(), \"ABC\")\n\n\
         \x20   def test_load(self):\n        self.assertEqual(load(\"p\"), \"P\")\n\n\
         \x20   def test_store(self):\n        self.assertEqual(Store().load(), \"X\")\n",
    );
    let out_dir = tmp.path().join("out");
    let out = rename(&repo, &out_dir, "pkg/store.py#load:function", "read_path").await;
    check_exit(&out, 0);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["solved"], true, "{report}");
    assert_eq!(report["guard"], 3, "{report}");
    let patch = std::fs::read_to_string(report["patch"].as_str().unwrap()).unwrap();
    for line in [
        "+def read_path(path):\n",
        "+        return read_path(\"x\")\n",
        "+from pkg.store import read_path\n",
        "+    f = read_path\n",
        "+    return read_path(\"a\") + store.read_path(\"b\") + f(\"c\")\n",
        "+from pkg.store import Store, read_path\n",
        "+        self.assertEqual(read_path(\"p\"), \"P\")\n",
    ] {
        assert!(patch.contains(line), "{line:?} missing from\n{patch}");
    }
    assert!(
        !patch.contains("+    def read_path(self)"),
        "the method is another definition:\n{patch}"
    );
    // Nothing of the user's tree was written.
    assert_eq!(
        std::fs::read_to_string(repo.join("pkg/store.py")).unwrap(),
        STORE
    );
    assert_eq!(std::fs::read_to_string(repo.join("app.py")).unwrap(), APP);
}

#[tokio::test]
async fn a_rename_the_tests_catch_writes_no_patch_and_an_ambiguous_name_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    // The test reaches `load` by a string the graph cannot follow.
    python_project(
        &repo,
        "import unittest\n\nfrom pkg import store\n\n\n\
         class AppTest(unittest.TestCase):\n    def test_by_name(self):\n        self.assertEqual(getattr(store, \"load\")(\"p\"), \"P\")\n",
    );
    let out_dir = tmp.path().join("out");
    let out = rename(&repo, &out_dir, "pkg/store.py#load:function", "read_path").await;
    check_exit(&out, 1);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["solved"], false, "{report}");
    assert!(report["patch"].is_null(), "{report}");
    assert!(!out_dir.join("fix.patch").exists());

    // `load` names the function and the method: refused, with both ids.
    let out = rename(&repo, &out_dir, "load", "read_path").await;
    check_exit(&out, 65);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("\"load\" names 2 definitions")
            && stderr.contains("pkg/store.py#load:function")
            && stderr.contains("pkg/store.py#Store.load:method"),
        "{stderr}"
    );
}

#[tokio::test]
async fn javascript_and_rust_renames_pass_their_runners() {
    let tmp = tempfile::tempdir().unwrap();
    let js = tmp.path().join("js");
    write(
        &js,
        &[
            (
                "package.json",
                "{\n  \"name\": \"shop\",\n  \"private\": true,\n  \"scripts\": {\n    \"test\": \"node --test\"\n  }\n}\n",
            ),
            (
                "lib/price.js",
                "function price(item) {\n  return item.cost * 2;\n}\nmodule.exports = { price };\n",
            ),
            (
                "total.js",
                "const { price } = require('./lib/price');\n\nfunction total(items) {\n  return items.map((i) => price(i)).reduce((a, b) => a + b, 0);\n}\nmodule.exports = { total };\n",
            ),
            (
                "test/total.test.js",
                "const test = require('node:test');\nconst assert = require('node:assert');\nconst { total } = require('../total');\nconst { price } = require('../lib/price');\n\n\
                 test('total', () => {\n  assert.strictEqual(total([{ cost: 1 }, { cost: 2 }]), 6);\n});\n\n\
                 test('price', () => {\n  assert.strictEqual(price({ cost: 3 }), 6);\n});\n",
            ),
        ],
    );
    let out = rename(
        &js,
        &tmp.path().join("js.out"),
        "lib/price.js#price:function",
        "unitPrice",
    )
    .await;
    check_exit(&out, 0);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["guard"], 2, "{report}");
    let patch = std::fs::read_to_string(report["patch"].as_str().unwrap()).unwrap();
    assert!(
        patch.contains("+const { unitPrice } = require('../lib/price');\n")
            && patch.contains("+  assert.strictEqual(unitPrice({ cost: 3 }), 6);\n")
            && patch.contains("+module.exports = { unitPrice };\n"),
        "{patch}"
    );

    let rs = tmp.path().join("rs");
    write(
        &rs,
        &[
            (
                "Cargo.toml",
                "[package]\nname = \"nums\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n\n[workspace]\n",
            ),
            (
                "src/parse.rs",
                "pub fn parse_num(s: &str) -> u32 {\n    s.trim().parse().unwrap_or(0)\n}\n",
            ),
            (
                "src/lib.rs",
                "pub mod parse;\nuse crate::parse::parse_num;\n\npub fn twice(s: &str) -> u32 {\n    parse_num(s) * 2\n}\n\n\
                 #[cfg(test)]\nmod tests {\n    use super::*;\n\n    #[test]\n    fn doubles() {\n        assert_eq!(twice(\" 4\"), 8);\n    }\n\n    \
                 #[test]\n    fn parses() {\n        assert_eq!(crate::parse::parse_num(\"x\"), 0);\n    }\n}\n",
            ),
        ],
    );
    let out = rename(&rs, &tmp.path().join("rs.out"), "parse_num", "number").await;
    check_exit(&out, 0);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["guard"], 2, "{report}");
    let patch = std::fs::read_to_string(report["patch"].as_str().unwrap()).unwrap();
    assert!(
        patch.contains("+pub fn number(s: &str) -> u32 {\n")
            && patch.contains("+use crate::parse::number;\n")
            && patch.contains("+    number(s) * 2\n")
            && patch.contains("+        assert_eq!(crate::parse::number(\"x\"), 0);\n"),
        "{patch}"
    );
}

/// A replay of one model reply: `{"docs": docs}`.
fn docs_replay(dir: &Path, docs: serde_json::Value) -> std::path::PathBuf {
    use forq_agent::message::{Message, Response, StopReason, Usage};
    let reply = Response {
        message: Message::assistant(serde_json::json!({ "docs": docs }).to_string()),
        usage: Usage::default(),
        stop: StopReason::EndTurn,
        model: "recorded".to_owned(),
    };
    let path = dir.join("docs.jsonl");
    std::fs::write(&path, serde_json::to_string(&reply).unwrap() + "\n").unwrap();
    path
}

async fn document(
    repo: &Path,
    out: &Path,
    what: &[&str],
    replay: Option<&Path>,
) -> std::process::Output {
    let mut args = vec!["document"];
    args.extend_from_slice(what);
    args.extend_from_slice(&[
        "--repo",
        repo.to_str().unwrap(),
        "--json",
        "--out",
        out.to_str().unwrap(),
    ]);
    if let Some(r) = replay {
        args.extend_from_slice(&["--provider", "replay", "--replay", r.to_str().unwrap()]);
    }
    forq_env(&args, &[]).await
}

const TEST_APP: &str = "import unittest\n\nfrom app import use\n\n\nclass AppTest(unittest.TestCase):\n    def test_use(self):\n        self.assertEqual(use(), \"ABC\")\n";

#[tokio::test]
async fn document_writes_docstrings_for_the_missing_ones_and_tests_them() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    python_project(&repo, TEST_APP);
    let replay = docs_replay(
        tmp.path(),
        serde_json::json!([
            {"symbol": "app.py#use:function", "doc": "Loads three paths and joins them."},
            {"symbol": "pkg/store.py#load:function", "doc": "The path, upper-cased.\n\nArgs:\n    path: a path."},
            {"symbol": "pkg/store.py#Store:class", "doc": "A store."},
            {"symbol": "pkg/store.py#Store.load:method", "doc": "Loads x."}
        ]),
    );
    let out = document(
        &repo,
        &tmp.path().join("out"),
        &["--missing"],
        Some(&replay),
    )
    .await;
    check_exit(&out, 0);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["solved"], true, "{report}");
    let patch = std::fs::read_to_string(report["patch"].as_str().unwrap()).unwrap();
    for line in [
        "+    \"\"\"Loads three paths and joins them.\"\"\"\n",
        "+    \"\"\"The path, upper-cased.\n",
        "+        path: a path.\n",
        "+    \"\"\"A store.\"\"\"\n",
        "+        \"\"\"Loads x.\"\"\"\n",
    ] {
        assert!(patch.contains(line), "{line:?} missing from\n{patch}");
    }
    assert!(
        !patch
            .lines()
            .any(|l| l.starts_with('-') && !l.starts_with("---")),
        "docs only add lines here:\n{patch}"
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("pkg/store.py")).unwrap(),
        STORE
    );
}

#[tokio::test]
async fn document_refuses_docs_that_touch_code_and_needs_a_model() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    python_project(&repo, TEST_APP);
    let replay = docs_replay(
        tmp.path(),
        serde_json::json!([{"symbol": "app.py#use:function",
            "doc": "Uses.\"\"\"\n    import os\n    \"\"\"Done."}]),
    );
    let out_dir = tmp.path().join("out");
    let out = document(&repo, &out_dir, &["use"], Some(&replay)).await;
    check_exit(&out, 1);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["solved"], false, "{report}");
    let refused = report["refused"].as_str().unwrap();
    assert!(
        refused.starts_with("app.py: line 7 changes code, not only docs")
            && refused.contains("import os"),
        "{refused}"
    );
    assert!(!out_dir.exists(), "nothing was run or written");

    let out = document(&repo, &out_dir, &["use"], None).await;
    check_exit(&out, 65);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("forq document writes the docs' text with a model"),
        "{stderr}"
    );
}

#[tokio::test]
async fn audit_reports_findings_and_writes_issues_the_queue_reads() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    python_project(&repo, TEST_APP);
    write(
        &repo,
        &[(
            "pkg/extra.py",
            "def orphan(x):\n    if x and x > 1:\n        return 1\n    return 2\n",
        )],
    );
    let issues = tmp.path().join("issues");
    let out = forq_env(
        &[
            "audit",
            "--repo",
            repo.to_str().unwrap(),
            "--query",
            "unused",
            "--query",
            "complexity>2",
            "--json",
            "--issues",
            issues.to_str().unwrap(),
        ],
        &[],
    )
    .await;
    check_exit(&out, 0);
    let found: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let got: Vec<(&str, &str)> = found
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["kind"].as_str().unwrap(), f["symbol"].as_str().unwrap()))
        .collect();
    // Store and its method are used by nothing in the repository either.
    assert_eq!(
        got,
        [
            ("unused", "pkg/extra.py#orphan:function"),
            ("unused", "pkg/store.py#Store:class"),
            ("complexity", "pkg/extra.py#orphan:function"),
        ],
        "{found}"
    );
    // The queue's own reader takes the issues, with the repository named.
    let read = forq_app::source::read_dir(&issues).unwrap();
    assert_eq!(read.len(), 3);
    let first = read
        .iter()
        .find(|i| i.issue.id == "audit-unused-1")
        .unwrap();
    assert_eq!(
        first.issue.title,
        "Remove or use pkg/extra.py#orphan:function"
    );
    assert_eq!(first.issue.labels, ["audit", "unused"]);
    assert_eq!(
        first.repo.as_deref(),
        Some(repo.canonicalize().unwrap().as_path())
    );

    let out = forq_env(
        &[
            "audit",
            "--repo",
            repo.to_str().unwrap(),
            "--query",
            "loops",
        ],
        &[],
    )
    .await;
    check_exit(&out, 64);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("unknown audit query \"loops\""),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
