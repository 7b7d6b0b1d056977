//! forq graph: index, symbols, callers, patterns, queries, the bench, accuracy against Python's ast and ctags, repair after a kill.

use super::*;

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
