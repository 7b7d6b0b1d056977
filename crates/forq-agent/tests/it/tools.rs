//! The tools against a real sandbox on a small repository.

use std::path::Path;

use forq_agent::tools::{Control, ToolContext, ToolOutput, Toolbox};
use forq_sandbox::{Backend, BackendChoice, Sandbox, SandboxSpec};
use serde_json::json;

const CALC: &str = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n";

/// A sandbox over a repository with a bug, its test, an ignored build
/// directory and a long file.
async fn sandbox() -> (
    tempfile::TempDir,
    std::sync::Arc<dyn Backend>,
    Box<dyn Sandbox>,
) {
    let dir = tempfile::tempdir().unwrap();
    let long: String = (1..=250).map(|n| format!("line {n}\n")).collect();
    for (path, content) in [
        ("calc.py", CALC),
        ("tests/__init__.py", ""),
        ("tests/test_calc.py", "import unittest\nfrom calc import add\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n"),
        (".gitignore", "build/\n"),
        ("build/gen.py", "def add(a, b):\n    pass\n"),
        ("notes/long.txt", &long),
    ] {
        let full = dir.path().join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, content).unwrap();
    }
    let backend = forq_sandbox::open_backend(BackendChoice::Auto)
        .await
        .expect("an isolating backend (CI runs as root, with docker)")
        .backend;
    let sandbox = backend.create(&SandboxSpec::new(dir.path())).await.unwrap();
    (dir, backend, sandbox)
}

async fn call(sandbox: &dyn Sandbox, tool: &str, args: serde_json::Value) -> ToolOutput {
    Toolbox::editing()
        .call(&ToolContext { sandbox }, tool, &args)
        .await
}

async fn read(sandbox: &dyn Sandbox, path: &str) -> String {
    String::from_utf8(sandbox.read_file(Path::new(path)).await.unwrap()).unwrap()
}

#[tokio::test]
async fn view_file_shows_a_numbered_window_and_what_lies_beyond() {
    let (_dir, _backend, sb) = sandbox().await;
    let out = call(
        &*sb,
        "view_file",
        json!({"path": "notes/long.txt", "start_line": 101}),
    )
    .await;
    assert!(!out.is_error);
    assert!(
        out.content.starts_with(
            "notes/long.txt lines 101-200 of 250 (100 above, 50 below)\n  101| line 101\n"
        ),
        "{}",
        out.content
    );
    assert!(
        out.content
            .ends_with("[50 more lines: view_file with start_line 201]\n"),
        "{}",
        out.content
    );
    let past = call(
        &*sb,
        "view_file",
        json!({"path": "notes/long.txt", "start_line": 300}),
    )
    .await;
    assert!(
        past.is_error && past.content.contains("has 250 lines"),
        "{past:?}"
    );
    let missing = call(&*sb, "view_file", json!({"path": "nope.py"})).await;
    assert!(
        missing.is_error && missing.content.contains("use find_files"),
        "{missing:?}"
    );
    let escape = call(&*sb, "view_file", json!({"path": "../etc/passwd"})).await;
    assert!(
        escape.is_error && escape.content.contains("outside the workspace"),
        "{escape:?}"
    );
}

#[tokio::test]
async fn find_files_and_search_respect_gitignore_and_bounds() {
    let (_dir, _backend, sb) = sandbox().await;
    let py = call(&*sb, "find_files", json!({"glob": "*.py"})).await;
    assert_eq!(py.content, "calc.py\ntests/__init__.py\ntests/test_calc.py");
    let tests = call(&*sb, "find_files", json!({"glob": "tests/test_*.py"})).await;
    assert_eq!(tests.content, "tests/test_calc.py");
    // build/ is ignored: one definition of add, not two.
    let hits = call(&*sb, "search", json!({"pattern": "def add"})).await;
    assert_eq!(hits.content, "calc.py:1: def add(a, b):");
    let under = call(&*sb, "search", json!({"pattern": "add", "path": "tests"})).await;
    assert!(
        under.content.lines().all(|l| l.starts_with("tests/")),
        "{}",
        under.content
    );
    let many = call(&*sb, "search", json!({"pattern": "^line"})).await;
    assert!(
        many.is_error && many.content.contains("more than 100 matches"),
        "{many:?}"
    );
    let bad = call(&*sb, "search", json!({"pattern": "(unclosed"})).await;
    assert!(
        bad.is_error && bad.content.starts_with("not a regular expression"),
        "{bad:?}"
    );
}

#[tokio::test]
async fn edit_replaces_one_exact_match_or_says_why_not() {
    let (_dir, _backend, sb) = sandbox().await;
    let out = call(
        &*sb,
        "edit",
        json!({"path": "calc.py", "old": "return a - b", "new": "return a + b"}),
    )
    .await;
    assert!(!out.is_error, "{out:?}");
    assert!(
        out.content.contains("    2|     return a + b"),
        "{}",
        out.content
    );
    assert_eq!(read(&*sb, "calc.py").await, CALC.replace("a - b", "a + b"));
    // Not unique: the lines are named.
    let twice = call(
        &*sb,
        "edit",
        json!({"path": "calc.py", "old": "(a, b):", "new": "(x, y):"}),
    )
    .await;
    assert!(
        twice.is_error
            && twice
                .content
                .contains("occurs 2 times in calc.py, at lines 1, 5"),
        "{twice:?}"
    );
    // Indented differently than the file: found ignoring whitespace, and
    // written with the file's indentation.
    let loose = call(&*sb, "edit", json!({"path": "calc.py", "old": "def mul(a, b):\n  return a * b", "new": "def mul(a, b):\n  return b * a"})).await;
    assert!(
        !loose.is_error && loose.content.contains("matched ignoring whitespace"),
        "{loose:?}"
    );
    assert!(read(&*sb, "calc.py")
        .await
        .ends_with("def mul(a, b):\n    return b * a\n"));
    let absent = call(
        &*sb,
        "edit",
        json!({"path": "calc.py", "old": "return 42", "new": "x"}),
    )
    .await;
    assert!(
        absent.is_error && absent.content.contains("does not occur"),
        "{absent:?}"
    );
}

#[tokio::test]
async fn a_change_that_breaks_the_syntax_is_refused_and_nothing_is_written() {
    let (_dir, _backend, sb) = sandbox().await;
    let before = read(&*sb, "calc.py").await;
    let out = call(
        &*sb,
        "edit",
        json!({"path": "calc.py", "old": "return a - b", "new": "return (a + b"}),
    )
    .await;
    assert!(out.is_error, "{out:?}");
    assert!(
        out.content.contains("syntax error at line"),
        "{}",
        out.content
    );
    assert_eq!(read(&*sb, "calc.py").await, before);
    let bad_new = call(
        &*sb,
        "create_file",
        json!({"path": "util.py", "content": "def f(:\n    pass\n"}),
    )
    .await;
    assert!(
        bad_new.is_error && bad_new.content.contains("syntax error at line 1"),
        "{bad_new:?}"
    );
    assert!(sb.read_file(Path::new("util.py")).await.is_err());
}

#[tokio::test]
async fn create_delete_and_run() {
    let (_dir, _backend, sb) = sandbox().await;
    let created = call(
        &*sb,
        "create_file",
        json!({"path": "pkg/util.py", "content": "def f():\n    return 1\n"}),
    )
    .await;
    assert_eq!(created.content, "created pkg/util.py (2 lines)");
    let again = call(
        &*sb,
        "create_file",
        json!({"path": "pkg/util.py", "content": ""}),
    )
    .await;
    assert!(
        again.is_error && again.content.contains("exists"),
        "{again:?}"
    );
    let deleted = call(&*sb, "delete_file", json!({"path": "pkg/util.py"})).await;
    assert_eq!(deleted.content, "deleted pkg/util.py");
    assert!(sb.read_file(Path::new("pkg/util.py")).await.is_err());
    let tests = call(&*sb, "run", json!({"command": "python3 -m unittest -q"})).await;
    assert!(
        tests.is_error,
        "the test fails on the buggy code: {tests:?}"
    );
    assert!(tests.content.starts_with("exit 1"), "{}", tests.content);
    assert!(
        tests.content.contains("AssertionError: -1 != 5"),
        "{}",
        tests.content
    );
    let slow = call(&*sb, "run", json!({"command": "sleep 30", "timeout": 1})).await;
    assert!(
        slow.is_error && slow.content.starts_with("killed after 1 s (timeout)"),
        "{slow:?}"
    );
}

#[tokio::test]
async fn submit_give_up_and_unknown_tools() {
    let (_dir, _backend, sb) = sandbox().await;
    let done = call(&*sb, "submit", json!({"summary": "add adds"})).await;
    assert_eq!(
        done.control,
        Some(Control::Submit {
            summary: "add adds".into()
        })
    );
    let stuck = call(
        &*sb,
        "give_up",
        json!({"reason": "ambiguous", "question": "which?"}),
    )
    .await;
    assert_eq!(
        stuck.control,
        Some(Control::GiveUp {
            reason: "ambiguous".into(),
            question: "which?".into()
        })
    );
    let unknown = call(&*sb, "rm_rf", json!({})).await;
    assert!(
        unknown.is_error
            && unknown
                .content
                .contains("the tools are: view_file, find_files, search, edit"),
        "{unknown:?}"
    );
    let missing = call(&*sb, "submit", json!({})).await;
    assert!(
        missing.is_error && missing.content.contains("\"summary\""),
        "{missing:?}"
    );
    let names: Vec<String> = Toolbox::editing()
        .specs()
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(
        names,
        [
            "view_file",
            "find_files",
            "search",
            "edit",
            "create_file",
            "delete_file",
            "run",
            "submit",
            "give_up"
        ]
    );
}

#[tokio::test]
async fn run_tests_reads_the_runners_per_test_results() {
    let (dir, _backend, sb) = sandbox().await;
    let stack = forq_bootstrap::detect(dir.path()).remove(0);
    assert_eq!(stack.command, "python3 -m unittest -v");
    let tools = Toolbox::editing().with(forq_agent::tools::RunTests::new(stack));
    let cx = ToolContext { sandbox: &*sb };
    let red = tools.call(&cx, "run_tests", &json!({})).await;
    assert!(red.content.starts_with("`python3 -m unittest -v`: 0 passed, 1 failed, 0 errors, 0 skipped\nfailing:\n  tests.test_calc.T.test_add"), "{}", red.content);
    assert!(
        red.content.contains("AssertionError: -1 != 5"),
        "{}",
        red.content
    );
    tools
        .call(
            &cx,
            "edit",
            &json!({"path": "calc.py", "old": "a - b", "new": "a + b"}),
        )
        .await;
    let green = tools
        .call(&cx, "run_tests", &json!({"selection": "tests.test_calc"}))
        .await;
    assert_eq!(
        green.content,
        "`python3 -m unittest -v tests.test_calc`: 1 passed, 0 failed, 0 errors, 0 skipped"
    );
}

#[tokio::test]
async fn graph_tools_answer_from_the_repositorys_index() {
    let (dir, _backend, sb) = sandbox().await;
    let db = tempfile::tempdir().unwrap();
    let mut index = forq_graph::Index::open(&db.path().join("graph.db"), dir.path()).unwrap();
    index.update().unwrap();
    let tools = forq_agent::tools::GraphTools::new(index).add_to(Toolbox::editing());
    let cx = ToolContext { sandbox: &*sb };
    let callers = tools
        .call(&cx, "callers", &json!({"symbol": "calc.py:1"}))
        .await;
    assert!(!callers.is_error, "{callers:?}");
    assert!(callers.content.contains("test_add"), "{}", callers.content);
    let callees = tools
        .call(&cx, "callees", &json!({"symbol": "test_add"}))
        .await;
    assert!(
        callees.content.contains("calc.py#add"),
        "{}",
        callees.content
    );
    let near = tools
        .call(
            &cx,
            "statements_near",
            &json!({"file": "calc.py", "line": 2}),
        )
        .await;
    assert!(near.content.contains("return a - b"), "{}", near.content);
    let uses = tools
        .call(&cx, "uses_of", &json!({"name": "a", "file": "calc.py"}))
        .await;
    assert!(uses.content.contains("calc.py"), "{}", uses.content);
    let map = tools.call(&cx, "repo_map", &json!({})).await;
    assert!(
        map.content.contains("calc.py") && map.content.contains("add"),
        "{}",
        map.content
    );
    // A file changed since the graph was built: the tool brings the graph
    // up to date and answers from the file as it is now.
    let calc = dir.path().join("calc.py");
    let before = std::fs::read_to_string(&calc).unwrap();
    std::fs::write(&calc, format!("# moved down two lines\n\n{before}")).unwrap();
    let moved = tools
        .call(
            &cx,
            "statements_near",
            &json!({"file": "calc.py", "line": 4}),
        )
        .await;
    assert!(!moved.is_error, "{moved:?}");
    assert!(
        moved.content.contains(r#""line":4"#) && moved.content.contains("return a - b"),
        "{}",
        moved.content
    );
    // A name the graph does not know: forq-graph's own error, as an answer.
    let unknown = tools
        .call(&cx, "callers", &json!({"symbol": "no_such_function"}))
        .await;
    assert!(unknown.is_error, "{unknown:?}");
    let names: Vec<String> = tools.specs().into_iter().map(|s| s.name).collect();
    assert!(
        names.ends_with(&[
            "callers".to_owned(),
            "callees".to_owned(),
            "statements_near".to_owned(),
            "uses_of".to_owned(),
            "repo_map".to_owned()
        ]),
        "{names:?}"
    );
}
