//! Integration tests of forq-graph on real files, real tree-sitter grammars
//! and a real SQLite database.

#![allow(clippy::unwrap_used)] // tests fail loudly

use forq_graph::{Index, Lang, SymbolFilter};

/// Indexes `files` (path, content) and compares every symbol, rendered as
/// `kind qualname lines [parent]`, with `expect`, one per line.
#[track_caller]
fn check(files: &[(&str, &str)], expect: &str) {
    let repo = tempfile::tempdir().unwrap();
    for (path, content) in files {
        let full = repo.path().join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, content).unwrap();
    }
    let mut index = Index::open(&repo.path().join(".forq/graph.db"), repo.path()).unwrap();
    index.update().unwrap();
    let got: Vec<String> = index
        .symbols(&SymbolFilter::default())
        .unwrap()
        .iter()
        .map(|s| {
            let parent = s
                .parent
                .as_deref()
                .map(|p| format!(" <- {p}"))
                .unwrap_or_default();
            format!(
                "{} {} {}:{}-{}{parent}",
                s.kind, s.qualname, s.file, s.line, s.end_line
            )
        })
        .collect();
    let want: Vec<&str> = expect
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(got, want, "\ngot:\n{}", got.join("\n"));
}

#[test]
fn every_bundled_query_compiles() {
    for lang in Lang::ALL {
        lang.defs_query().unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn python_definitions_nest_into_qualified_names() {
    check(
        &[(
            "pkg/shapes.py",
            "MAX_SIDES = 8\nlimit = 3\n\nclass Square:\n    def area(self):\n        return self.s ** 2\n\n    def scale(self, k):\n        def helper(x):\n            return x * k\n        return helper(self.s)\n\nclass Circle:\n    def area(self):\n        return 3.14\n\ndef area(shape):\n    return shape.area()\n",
        )],
        "
        constant MAX_SIDES pkg/shapes.py:1-1
        class Square pkg/shapes.py:4-11
        method Square.area pkg/shapes.py:5-6 <- pkg/shapes.py#Square:class
        method Square.scale pkg/shapes.py:8-11 <- pkg/shapes.py#Square:class
        function Square.scale.helper pkg/shapes.py:9-10 <- pkg/shapes.py#Square.scale:method
        class Circle pkg/shapes.py:13-15
        method Circle.area pkg/shapes.py:14-15 <- pkg/shapes.py#Circle:class
        function area pkg/shapes.py:17-18
        ",
    );
}

#[test]
fn rust_items_nest_into_impls_traits_and_modules() {
    check(
        &[(
            "src/lib.rs",
            "pub struct Stack<T> {\n    items: Vec<T>,\n}\n\nimpl<T> Stack<T> {\n    pub fn push(&mut self, t: T) {\n        self.items.push(t);\n    }\n}\n\npub trait Shape {\n    fn area(&self) -> f64;\n}\n\nmod tests {\n    fn push() {}\n}\n\nconst LIMIT: usize = 3;\n",
        )],
        "
        struct Stack src/lib.rs:1-3
        impl Stack src/lib.rs:5-9
        method Stack.push src/lib.rs:6-8 <- src/lib.rs#Stack:impl
        trait Shape src/lib.rs:11-13
        method Shape.area src/lib.rs:12-12 <- src/lib.rs#Shape:trait
        module tests src/lib.rs:15-17
        function tests.push src/lib.rs:16-16 <- src/lib.rs#tests:module
        constant LIMIT src/lib.rs:19-19
        ",
    );
}

#[test]
fn same_names_stay_distinct() {
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(repo.path().join("a.py"), "def run():\n    pass\n\ndef run():\n    pass\n\nclass A:\n    def run(self):\n        pass\n").unwrap();
    std::fs::write(repo.path().join("b.py"), "def run():\n    pass\n").unwrap();
    let mut index = Index::open(&repo.path().join("g.db"), repo.path()).unwrap();
    index.update().unwrap();
    let ids: Vec<String> = index
        .symbols(&SymbolFilter::default().name("run"))
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(
        ids,
        [
            "a.py#run:function",
            "a.py#run:function~2",
            "a.py#A.run:method",
            "b.py#run:function"
        ]
    );
}

#[test]
fn reindexing_parses_only_what_changed() {
    let repo = tempfile::tempdir().unwrap();
    let write = |p: &str, c: &str| std::fs::write(repo.path().join(p), c).unwrap();
    write("one.py", "def one():\n    pass\n");
    write("two.py", "def two():\n    pass\n");
    write("lib.rs", "fn three() {}\n");
    write("blob.py", "x = '\0'\n");
    write("notes.txt", "not code\n");
    let db = repo.path().join(".forq/graph.db");
    let mut index = Index::open(&db, repo.path()).unwrap();
    let first = index.update().unwrap();
    assert_eq!(
        (
            first.files,
            first.parsed,
            first.skipped,
            first.symbols_written
        ),
        (4, 3, 1, 3),
        "{first:?}"
    );
    let again = index.update().unwrap();
    assert_eq!((again.parsed, again.unchanged), (0, 4), "{again:?}");

    write("two.py", "def two():\n    pass\n\ndef extra():\n    pass\n");
    std::fs::remove_file(repo.path().join("one.py")).unwrap();
    let after = index.update().unwrap();
    assert_eq!(
        (after.parsed, after.unchanged, after.removed),
        (1, 2, 1),
        "{after:?}"
    );
    let names: Vec<String> = index
        .symbols(&SymbolFilter::default())
        .unwrap()
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(names, ["three", "two", "extra"]);

    // A fresh index of the same tree gives the same answers.
    drop(index);
    let cold = tempfile::tempdir().unwrap();
    let mut cold_index = Index::open(&cold.path().join("g.db"), repo.path()).unwrap();
    cold_index.update().unwrap();
    let reopened = Index::open(&db, repo.path()).unwrap();
    assert_eq!(
        reopened.symbols(&SymbolFilter::default()).unwrap(),
        cold_index.symbols(&SymbolFilter::default()).unwrap()
    );
}

#[test]
fn ignored_files_are_not_indexed() {
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(repo.path().join(".gitignore"), "build/\n").unwrap();
    std::fs::create_dir_all(repo.path().join("build")).unwrap();
    std::fs::write(
        repo.path().join("build/gen.py"),
        "def generated():\n    pass\n",
    )
    .unwrap();
    std::fs::write(repo.path().join("src.py"), "def real():\n    pass\n").unwrap();
    let mut index = Index::open(&repo.path().join(".forq/graph.db"), repo.path()).unwrap();
    let report = index.update().unwrap();
    assert_eq!(report.files, 1);
    let names: Vec<String> = index
        .symbols(&SymbolFilter::default())
        .unwrap()
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(names, ["real"]);
}
