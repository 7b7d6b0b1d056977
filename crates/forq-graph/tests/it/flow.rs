//! Statements and def-use: rebinding links, shadowing does not,
//! parameters, loop variables, `with` bindings and imports are defs.

use crate::indexed;

/// The reads of the statement on `line` of `file`, as `name<-def_line`.
fn reads(index: &forq_graph::Index, file: &str, line: u32) -> Vec<String> {
    let found = index.statements(file, line, 0).unwrap();
    let stmt = found
        .items
        .iter()
        .filter(|s| s.line <= line && line <= s.end_line)
        .min_by_key(|s| s.end_line - s.line)
        .unwrap_or_else(|| panic!("no statement on {file}:{line}: {found:?}"));
    let mut out: Vec<String> = stmt
        .reads
        .iter()
        .flat_map(|v| {
            v.links
                .iter()
                .map(move |l| format!("{}<-{}", v.name, l.line))
        })
        .collect();
    out.sort();
    out
}

const PYTHON: &str = "\
import os

def f(a, b=1):
    x = 0
    x = x + a
    y = x
    x = 5
    print(x, y)
    for i in range(b):
        y += i
    if a:
        z = 1
    else:
        z = 2
    with open(os.sep) as fh:
        data = fh.read()
    return z, data
";

#[test]
fn python_def_use_follows_rebinding_and_not_through_it() {
    let (_repo, index) = indexed(&[("m.py", PYTHON)]);
    // x = x + a: the old x, and the parameter.
    assert_eq!(reads(&index, "m.py", 5), ["a<-3", "x<-4"]);
    // y = x reads the rebinding on line 5, not the shadowed line 4.
    assert_eq!(reads(&index, "m.py", 6), ["x<-5"]);
    // print(x, y): x from line 7 only; y from line 6.
    assert_eq!(reads(&index, "m.py", 8), ["x<-7", "y<-6"]);
    // range(b): the parameter (with its default).
    assert_eq!(reads(&index, "m.py", 9), ["b<-3"]);
    // y += i: y before the loop and from the previous iteration; i from the loop header.
    assert_eq!(reads(&index, "m.py", 10), ["i<-9", "y<-10", "y<-6"]);
    // Both branches reach the join.
    assert_eq!(
        reads(&index, "m.py", 17)[..2],
        ["data<-16".to_owned(), "z<-12".to_owned()]
    );
    assert!(reads(&index, "m.py", 17).contains(&"z<-14".to_owned()));
    // A with binding and a module import are defs.
    assert_eq!(reads(&index, "m.py", 16), ["fh<-15"]);
    assert_eq!(reads(&index, "m.py", 15), ["os<-1"]);
}

#[test]
fn statements_carry_kind_text_and_both_directions_of_links() {
    let (_repo, index) = indexed(&[("m.py", PYTHON)]);
    let around = index.statements("m.py", 6, 1).unwrap();
    let lines: Vec<(u32, &str)> = around
        .items
        .iter()
        .map(|s| (s.line, s.text.as_str()))
        .collect();
    assert_eq!(lines, [(5, "x = x + a"), (6, "y = x"), (7, "x = 5")]);
    let y = &around.items[1];
    assert_eq!(y.kind, "expression_statement");
    assert_eq!(y.scope.as_deref(), Some("m.py#f:function"));
    // Who reads the y written on line 6: print on 8, y += i on 10.
    let writes: Vec<(String, Vec<u32>)> = y
        .writes
        .iter()
        .map(|v| (v.name.clone(), v.links.iter().map(|l| l.line).collect()))
        .collect();
    assert_eq!(writes, [("y".to_owned(), vec![8, 10])]);
    // `uses` lists read sites, the asking function's first.
    let uses = index.uses("x", Some("m.py"), Some(6)).unwrap();
    let sites: Vec<(u32, bool)> = uses
        .items
        .iter()
        .map(|u| (u.line, u.same_function))
        .collect();
    assert_eq!(sites, [(5, true), (6, true), (8, true)]);
}

#[test]
fn every_language_links_a_rebinding_and_hides_the_shadowed_def() {
    // In each: x = 0 (line 2), x = x + 1 (line 3), x = 7 (line 4), use x (line 5).
    let cases = [
        (
            "a.rs",
            "fn f() {\n    let mut x = 0;\n    x = x + 1;\n    x = 7;\n    g(x);\n}\n",
        ),
        (
            "a.js",
            "function f() {\n  let x = 0;\n  x = x + 1;\n  x = 7;\n  g(x);\n}\n",
        ),
        (
            "a.ts",
            "function f(): void {\n  let x: number = 0;\n  x = x + 1;\n  x = 7;\n  g(x);\n}\n",
        ),
        (
            "a.go",
            "func f() {\n\tx := 0\n\tx = x + 1\n\tx = 7\n\tg(x)\n}\n",
        ),
        (
            "A.java",
            "void f() {\n    int x = 0;\n    x = x + 1;\n    x = 7;\n    g(x);\n}\n",
        ),
        (
            "a.c",
            "void f(void) {\n    int x = 0;\n    x = x + 1;\n    x = 7;\n    g(x);\n}\n",
        ),
        (
            "a.cpp",
            "void f() {\n    int x = 0;\n    x = x + 1;\n    x = 7;\n    g(x);\n}\n",
        ),
    ];
    for (file, source) in cases {
        let source = match file {
            "a.go" => format!("package a\n{source}"),
            "A.java" => format!("class A {{\n{source}}}\n"),
            _ => source.to_owned(),
        };
        let shift = u32::from(matches!(file, "a.go" | "A.java"));
        let (_repo, index) = indexed(&[(file, &source)]);
        assert_eq!(
            reads(&index, file, 3 + shift),
            [format!("x<-{}", 2 + shift)],
            "{file}"
        );
        let last = reads(&index, file, 5 + shift);
        assert!(
            last.contains(&format!("x<-{}", 4 + shift)),
            "{file}: {last:?}"
        );
        assert!(
            !last.contains(&format!("x<-{}", 3 + shift)),
            "{file}: shadowed def linked: {last:?}"
        );
    }
}

#[test]
fn parameters_are_defs_in_every_language() {
    let cases = [
        ("p.rs", "fn f(n: u32) -> u32 {\n    n + 1\n}\n"),
        ("p.js", "function f(n) {\n  return n + 1;\n}\n"),
        (
            "p.go",
            "package p\nfunc f(n int) int {\n\treturn n + 1\n}\n",
        ),
        (
            "P.java",
            "class P {\nint f(int n) {\n    return n + 1;\n}\n}\n",
        ),
        ("p.c", "int f(int n) {\n    return n + 1;\n}\n"),
    ];
    for (file, source) in cases {
        let (_repo, index) = indexed(&[(file, source)]);
        let def_line = source.lines().position(|l| l.contains("f(")).unwrap() as u32 + 1;
        assert_eq!(
            reads(&index, file, def_line + 1),
            [format!("n<-{def_line}")],
            "{file}"
        );
    }
}

#[test]
fn def_use_can_be_turned_off() {
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(repo.path().join("m.py"), PYTHON).unwrap();
    let options = forq_graph::IndexOptions::default().flow(false);
    let mut index =
        forq_graph::Index::open_with(&repo.path().join("g.db"), repo.path(), options).unwrap();
    index.update().unwrap();
    // Asked about, a file still has none: nothing is computed.
    assert!(index.flow("m.py").unwrap().statements.is_empty());
    assert!(index.statements("m.py", 5, 2).unwrap().items.is_empty());
    assert_eq!(index.compute_flow().unwrap(), 0);
    let stats = index.stats().unwrap();
    assert_eq!(
        (stats.statements, stats.def_use, stats.flow_files),
        (0, 0, 0)
    );
    assert!(stats.symbols > 0);
}

/// Files of which only `mentions` reads `shared`.
const OTHERS: [(&str, &str); 3] = [
    ("a.py", "def a(shared):\n    return shared + 1\n"),
    ("b.py", "def b(n):\n    return n * 2\n"),
    ("c.py", "x = 1\n"),
];

#[test]
fn flow_is_computed_for_the_files_a_question_needs_and_kept() {
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(repo.path().join("m.py"), PYTHON).unwrap();
    for (file, text) in OTHERS {
        std::fs::write(repo.path().join(file), text).unwrap();
    }
    let mut index = forq_graph::Index::open(&repo.path().join("g.db"), repo.path()).unwrap();
    index.update().unwrap();
    let flow_files = |index: &forq_graph::Index| index.stats().unwrap().flow_files;
    assert_eq!(flow_files(&index), 0, "a cold index computes no flow");
    // One file's statements: that file alone.
    assert_eq!(reads(&index, "m.py", 5), ["a<-3", "x<-4"]);
    assert_eq!(flow_files(&index), 1);
    // The uses of a name: the files whose text mentions it.
    let uses = index.uses("shared", None, None).unwrap();
    assert_eq!(uses.items.len(), 1, "{uses:?}");
    assert_eq!(uses.items[0].file, "a.py");
    assert_eq!(flow_files(&index), 2);
    // A file without statements is remembered as computed: `c.py` has
    // one, an empty file none.
    std::fs::write(repo.path().join("empty.py"), "").unwrap();
    index.update().unwrap();
    assert_eq!(index.compute_flow().unwrap(), 3, "b.py, c.py, empty.py");
    assert_eq!(index.compute_flow().unwrap(), 0);
    assert_eq!(flow_files(&index), 5);
    // A changed file's flow is dropped by the update and computed again
    // from its new text when asked.
    std::fs::write(
        repo.path().join("b.py"),
        "def b(n):\n    m = n\n    return m\n",
    )
    .unwrap();
    index.update().unwrap();
    assert_eq!(flow_files(&index), 4);
    assert_eq!(reads(&index, "b.py", 3), ["m<-2"]);
    assert_eq!(flow_files(&index), 5);
}

#[test]
fn eager_flow_computes_every_file_during_the_update_and_agrees_with_lazy() {
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(repo.path().join("m.py"), PYTHON).unwrap();
    for (file, text) in OTHERS {
        std::fs::write(repo.path().join(file), text).unwrap();
    }
    let eager_options = forq_graph::IndexOptions::default().eager_flow(true);
    let mut eager =
        forq_graph::Index::open_with(&repo.path().join("e.db"), repo.path(), eager_options)
            .unwrap();
    eager.update().unwrap();
    assert_eq!(eager.stats().unwrap().flow_files, 4);
    assert_eq!(eager.compute_flow().unwrap(), 0);
    let mut lazy = forq_graph::Index::open(&repo.path().join("l.db"), repo.path()).unwrap();
    lazy.update().unwrap();
    for (file, _) in OTHERS.iter().chain([&("m.py", "")]) {
        assert_eq!(
            lazy.flow(file).unwrap(),
            eager.flow(file).unwrap(),
            "{file}"
        );
    }
    assert_eq!(lazy.stats().unwrap(), eager.stats().unwrap());
}

#[test]
fn a_file_changed_before_its_flow_was_computed_is_refused() {
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(repo.path().join("m.py"), PYTHON).unwrap();
    let mut index = forq_graph::Index::open(&repo.path().join("g.db"), repo.path()).unwrap();
    index.update().unwrap();
    std::fs::write(repo.path().join("m.py"), format!("\n{PYTHON}")).unwrap();
    let err = index.statements("m.py", 5, 1).map(drop).unwrap_err();
    assert!(
        matches!(&err, forq_graph::Error::Stale { file } if file == "m.py"),
        "{err}"
    );
    assert_eq!(index.stats().unwrap().flow_files, 0, "nothing was kept");
}

#[test]
fn a_file_changed_since_indexing_is_refused_until_the_index_catches_up() {
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(repo.path().join("m.py"), PYTHON).unwrap();
    let mut index = forq_graph::Index::open(&repo.path().join("g.db"), repo.path()).unwrap();
    index.update().unwrap();
    let before = index.flow("m.py").unwrap();
    assert!(!before.statements.is_empty() && !before.links.is_empty());
    // The text shown is the file's own, read back by byte range.
    assert!(
        before.statements.iter().any(|s| s.text == "import os"),
        "{:?}",
        before.statements
    );
    std::fs::write(repo.path().join("m.py"), format!("\n\n{PYTHON}")).unwrap();
    for err in [
        index.statements("m.py", 3, 1).map(drop).unwrap_err(),
        index.uses("os", Some("m.py"), None).map(drop).unwrap_err(),
        index.flow("m.py").map(drop).unwrap_err(),
    ] {
        assert!(
            matches!(&err, forq_graph::Error::Stale { file } if file == "m.py"),
            "{err}"
        );
        assert!(err.to_string().contains("Index::update"), "{err}");
    }
    index.update().unwrap();
    let after = index.flow("m.py").unwrap();
    let lines = |f: &forq_graph::FileFlow| f.statements.iter().map(|s| s.line).collect::<Vec<_>>();
    assert_eq!(
        lines(&after),
        lines(&before).iter().map(|l| l + 2).collect::<Vec<_>>()
    );
    assert_eq!(after.links, before.links);
}
