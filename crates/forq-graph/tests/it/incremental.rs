//! Incremental updates: one changed file is parsed alone, names whose
//! definitions changed are resolved again everywhere, deletes and renames
//! are handled, an interrupted update is refused and then repaired, and
//! whatever the edits, the index equals a cold index of the same tree.

use std::path::Path;

use forq_graph::Index;
use proptest::prelude::*;

/// Every row of the index that an answer can depend on, and every file's
/// flow (computed first where it was not), in a canonical order (row ids left out: they differ between runs).
fn dump(db: &Path, root: &Path) -> Vec<String> {
    // Flow is computed when first asked for: ask for all of it first, so
    // that both indexes hold every file's.
    let index = Index::open(db, root).unwrap();
    index.compute_flow().unwrap();
    let conn = rusqlite::Connection::open(db).unwrap();
    let queries = [
        "SELECT 'file', path, lang, hash, status FROM files",
        "SELECT 'symbol', id, name, qualname, kind, file, line, end_line, parent, signature, doc, test FROM symbols",
        "SELECT 'ref', file, kind, scope, name, receiver, line, col FROM refs",
        "SELECT 'import', file, scope, module, name, local, line FROM imports",
        "SELECT 'edge', file, kind, src, dst, confidence, candidates, line FROM edges",
        "SELECT 'flow name', f.path, n.name, n.reads FROM flow_name n JOIN files f ON f.fid = n.fid",
        // The views hide a row whose file or symbol is gone: count those
        // in the tables beneath (a cold index has none).
        "SELECT 'dangling edges', COUNT(*) FROM edge e WHERE NOT EXISTS (SELECT 1 FROM node WHERE nid = e.src) OR NOT EXISTS (SELECT 1 FROM node WHERE nid = e.dst) OR NOT EXISTS (SELECT 1 FROM files WHERE fid = e.eid >> 27)",
        "SELECT 'dangling scopes', COUNT(*) FROM ref r WHERE r.scope IS NOT NULL AND NOT EXISTS (SELECT 1 FROM sym WHERE sid = r.scope)",
        "SELECT 'unused nodes', COUNT(*) FROM node n WHERE NOT EXISTS (SELECT 1 FROM edge WHERE src = n.nid OR dst = n.nid)",
        "SELECT 'orphan rows', (SELECT COUNT(*) FROM sym WHERE fid NOT IN (SELECT fid FROM files)) + (SELECT COUNT(*) FROM flow WHERE fid NOT IN (SELECT fid FROM files)) + (SELECT COUNT(*) FROM flow_name WHERE fid NOT IN (SELECT fid FROM flow))",
    ];
    let mut rows = Vec::new();
    for sql in queries {
        let mut stmt = conn.prepare(sql).unwrap();
        let n = stmt.column_count();
        let mut q = stmt.query([]).unwrap();
        while let Some(r) = q.next().unwrap() {
            let cols: Vec<String> = (0..n)
                .map(|i| match r.get_ref(i).unwrap() {
                    rusqlite::types::ValueRef::Null => "-".to_owned(),
                    rusqlite::types::ValueRef::Integer(v) => v.to_string(),
                    rusqlite::types::ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
                    other => format!("{other:?}"),
                })
                .collect();
            rows.push(cols.join("|"));
        }
    }
    let files: Vec<String> = conn
        .prepare("SELECT path FROM files")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    for file in files {
        let flow = index.flow(&file).unwrap();
        for s in &flow.statements {
            rows.push(format!("stmt|{file}|{s:?}"));
        }
        for v in &flow.vars {
            let at = flow.statements[v.statement].line;
            rows.push(format!(
                "var|{file}|{}|{}|{}|{}|{at}",
                v.name, v.write, v.line, v.col
            ));
        }
        for l in &flow.links {
            let (def, use_) = (&flow.statements[l.def], &flow.statements[l.use_]);
            rows.push(format!("link|{file}|{}|{}|{}", l.name, def.line, use_.line));
        }
    }
    rows.sort();
    rows
}

/// Asserts the index at `db` equals a fresh index of the same tree.
#[track_caller]
fn assert_equals_cold(db: &Path, root: &Path) {
    let cold = tempfile::tempdir().unwrap();
    Index::open(&cold.path().join("g.db"), root)
        .unwrap()
        .update()
        .unwrap();
    let (warm, fresh) = (dump(db, root), dump(&cold.path().join("g.db"), root));
    if warm != fresh {
        let only_warm: Vec<&String> = warm.iter().filter(|r| !fresh.contains(r)).collect();
        let only_cold: Vec<&String> = fresh.iter().filter(|r| !warm.contains(r)).collect();
        panic!("incremental index differs from a cold one\nonly incremental: {only_warm:#?}\nonly cold: {only_cold:#?}");
    }
}

/// A tree where `main.py`'s `run` calls `a.py`'s `load`, with an index
/// opened (not yet updated) at `.forq/graph.db`.
fn load_and_run() -> (tempfile::TempDir, std::path::PathBuf, Index) {
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(repo.path().join("a.py"), "def load():\n    pass\n").unwrap();
    std::fs::write(repo.path().join("main.py"), "def run():\n    load()\n").unwrap();
    let db = repo.path().join(".forq/graph.db");
    let index = Index::open(&db, repo.path()).unwrap();
    (repo, db, index)
}

#[test]
fn a_new_definition_elsewhere_turns_a_unique_call_ambiguous_and_back() {
    let (repo, db, mut index) = load_and_run();
    let write = |p: &str, c: &str| std::fs::write(repo.path().join(p), c).unwrap();
    index.update().unwrap();
    let confidence = |index: &Index| {
        index
            .callees("main.py#run:function", 1)
            .unwrap()
            .items
            .iter()
            .map(|e| (e.callee.clone(), e.confidence))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        confidence(&index),
        [(
            "a.py#load:function".to_owned(),
            forq_graph::Confidence::Unique
        )]
    );

    // Only b.py is parsed; main.py's call is resolved again all the same.
    write("b.py", "def load():\n    pass\n");
    let report = index.update().unwrap();
    assert_eq!((report.parsed, report.unchanged), (1, 2), "{report:?}");
    let ambiguous = forq_graph::Confidence::Ambiguous { candidates: 2 };
    assert_eq!(
        confidence(&index),
        [
            ("a.py#load:function".to_owned(), ambiguous),
            ("b.py#load:function".to_owned(), ambiguous)
        ]
    );
    assert_equals_cold(&db, repo.path());

    // Rename b.py: same definitions under a new path.
    std::fs::rename(repo.path().join("b.py"), repo.path().join("c.py")).unwrap();
    let report = index.update().unwrap();
    assert_eq!((report.parsed, report.removed), (1, 1), "{report:?}");
    assert_equals_cold(&db, repo.path());

    // Delete it: unique again.
    std::fs::remove_file(repo.path().join("c.py")).unwrap();
    index.update().unwrap();
    assert_eq!(
        confidence(&index),
        [(
            "a.py#load:function".to_owned(),
            forq_graph::Confidence::Unique
        )]
    );
    assert_equals_cold(&db, repo.path());
}

#[test]
fn an_interrupted_update_is_refused_then_repaired() {
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(
        repo.path().join("a.py"),
        "def f():\n    g()\n\ndef g():\n    pass\n",
    )
    .unwrap();
    let db = repo.path().join(".forq/graph.db");
    let mut index = Index::open(&db, repo.path()).unwrap();
    index.update().unwrap();
    // What a kill -9 between the file batches and the resolution leaves:
    // the files written, the edges not, the pending mark set.
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch(
            "DELETE FROM edge; INSERT INTO meta (key, value) VALUES ('update_pending', '1');",
        )
        .unwrap();
    }
    let index = Index::open(&db, repo.path()).unwrap();
    assert!(index.interrupted().unwrap());
    let err = index.callees("a.py#f:function", 1).unwrap_err();
    assert!(
        matches!(err, forq_graph::Error::Interrupted { .. }),
        "{err}"
    );
    assert!(
        err.to_string().contains("Index::update repairs it"),
        "{err}"
    );
    let mut index = index;
    let report = index.update().unwrap();
    assert!(report.repaired && report.parsed == 0, "{report:?}");
    assert_eq!(index.callees("a.py#f:function", 1).unwrap().items.len(), 1);
    assert_equals_cold(&db, repo.path());
}

#[test]
fn an_older_schema_is_rebuilt_not_misread() {
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(repo.path().join("a.py"), "def f():\n    pass\n").unwrap();
    let db = repo.path().join("g.db");
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch("CREATE TABLE files (path TEXT PRIMARY KEY, lang TEXT, hash TEXT, size INTEGER, status TEXT); INSERT INTO files VALUES ('a.py', 'python', 'x', 1, 'parsed'); PRAGMA user_version = 4;").unwrap();
    }
    let mut index = Index::open(&db, repo.path()).unwrap();
    assert_eq!(index.update().unwrap().parsed, 1);
    assert_equals_cold(&db, repo.path());
}

/// One module of a generated project: functions that call each other by
/// name, some through an import of another module.
fn module(i: usize, defs: &[(usize, usize, bool)]) -> String {
    let mut s = String::new();
    for &(_, callee, via_import) in defs {
        let target = callee % 3;
        if via_import && target != i {
            s.push_str(&format!("from m{target} import f{callee}\n"));
        }
    }
    for &(f, callee, _) in defs {
        s.push_str(&format!(
            "\ndef f{f}(x):\n    y = x\n    y = f{callee}(y)\n    return y\n"
        ));
    }
    s
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    #[test]
    fn any_sequence_of_edits_leaves_the_index_equal_to_a_cold_one(
        edits in proptest::collection::vec(
            (0usize..3, proptest::collection::vec((0usize..6, 0usize..6, any::<bool>()), 0..4), any::<bool>()),
            1..6,
        )
    ) {
        let repo = tempfile::tempdir().unwrap();
        let db = repo.path().join(".forq/graph.db");
        let mut index = Index::open(&db, repo.path()).unwrap();
        for (i, defs, delete) in edits {
            let path = repo.path().join(format!("m{i}.py"));
            if delete {
                let _ = std::fs::remove_file(&path);
            } else {
                std::fs::write(&path, module(i, &defs)).unwrap();
            }
            index.update().unwrap();
            assert_equals_cold(&db, repo.path());
        }
    }
}

/// Each edge with the reference or import it came from (by place and
/// name, not by id), sorted.
fn edges_by_origin(db: &Path) -> Vec<String> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut rows: Vec<String> = conn
        .prepare(
            "SELECT e.kind, r.file, r.line, r.col, r.name, e.src, e.dst, e.confidence, e.candidates
             FROM edges e JOIN refs r ON r.id = e.origin WHERE e.kind IN ('calls', 'inherits')
             UNION ALL
             SELECT e.kind, i.file, i.line, i.col, COALESCE(i.name, i.module), e.src, e.dst, e.confidence, e.candidates
             FROM edges e JOIN imports i ON i.id = e.origin WHERE e.kind = 'imports'",
        )
        .unwrap()
        .query_map([], |r| {
            Ok((0..9)
                .map(|i| match r.get_ref(i).unwrap() {
                    rusqlite::types::ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
                    other => format!("{other:?}"),
                })
                .collect::<Vec<_>>()
                .join("|"))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    rows.sort();
    rows
}

/// A cold load resolves from the rows it just wrote, on every core; a
/// repair resolves from the tables. Over this crate (its Rust and the
/// polyglot fixture's eight languages), one thread, two, and a repair give
/// the same rows, and every edge's origin is the reference or import it
/// was resolved from.
#[test]
fn a_cold_load_resolves_as_the_tables_do_on_any_number_of_threads() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let index_with = |name: &str, threads: usize| {
        let db = dir.path().join(name);
        let options = forq_graph::IndexOptions::default().threads(threads);
        Index::open_with(&db, root, options)
            .unwrap()
            .update()
            .unwrap();
        db
    };
    let one = index_with("one.db", 1);
    let two = index_with("two.db", 2);
    let repaired = index_with("repaired.db", 2);
    {
        let conn = rusqlite::Connection::open(&repaired).unwrap();
        conn.execute_batch(
            "DELETE FROM edge; DELETE FROM node; INSERT INTO meta (key, value) VALUES ('update_pending', '1');",
        )
        .unwrap();
    }
    let report = Index::open(&repaired, root).unwrap().update().unwrap();
    assert!(report.repaired && report.parsed == 0, "{report:?}");
    let expected = edges_by_origin(&repaired);
    assert!(expected.len() > 1000, "{}", expected.len());
    assert_eq!(edges_by_origin(&one), expected);
    assert_eq!(edges_by_origin(&two), expected);
    assert_eq!(dump(&one, root), dump(&repaired, root));
    assert_eq!(dump(&two, root), dump(&repaired, root));
}

/// The indexes of references by name and by receiver serve only an update
/// that re-resolves what a changed definition may now answer: a cold load
/// leaves them out, an edit that changes no definition does not build
/// them, and the first edit that changes one does.
#[test]
fn reference_lookup_indexes_wait_for_the_first_update_that_reads_them() {
    let (repo, db, mut index) = load_and_run();
    let write = |p: &str, c: &str| std::fs::write(repo.path().join(p), c).unwrap();
    let indexes = || -> Vec<String> {
        let conn = rusqlite::Connection::open(&db).unwrap();
        let mut stmt = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND name IN ('ref_name', 'ref_receiver', 'edge_src', 'edge_dst') ORDER BY name")
            .unwrap();
        let names = stmt.query_map([], |r| r.get(0)).unwrap();
        names.map(Result::unwrap).collect()
    };
    index.update().unwrap();
    assert_eq!(indexes(), ["edge_dst", "edge_src"]);
    write("main.py", "def run():\n    load()\n    load()\n");
    index.update().unwrap();
    assert_eq!(indexes(), ["edge_dst", "edge_src"]);
    write("a.py", "def load():\n    pass\n\ndef save():\n    pass\n");
    index.update().unwrap();
    assert_eq!(
        indexes(),
        ["edge_dst", "edge_src", "ref_name", "ref_receiver"]
    );
    assert_equals_cold(&db, repo.path());
}
