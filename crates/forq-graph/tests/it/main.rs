//! Integration tests of forq-graph on real files, real tree-sitter grammars
//! and a real SQLite database.

#![allow(clippy::unwrap_used)] // tests fail loudly

use forq_graph::{Index, Lang, QueryKind, SymbolFilter};

mod audit;
mod conventions;
mod docs;
mod flow;
mod incremental;
mod patterns;
mod queries;
mod rename;
mod resolution;

/// A repository of `files` (path, content) in a temporary directory,
/// indexed into `.forq/graph.db`.
pub(crate) fn indexed(files: &[(&str, &str)]) -> (tempfile::TempDir, Index) {
    let repo = tempfile::tempdir().unwrap();
    for (path, content) in files {
        let full = repo.path().join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, content).unwrap();
    }
    let mut index = Index::open(&repo.path().join(".forq/graph.db"), repo.path()).unwrap();
    index.update().unwrap();
    (repo, index)
}

/// Indexes `files` (path, content) and compares every symbol, rendered as
/// `kind qualname lines [parent]`, with `expect`, one per line.
#[track_caller]
fn check(files: &[(&str, &str)], expect: &str) {
    let (_repo, index) = indexed(files);
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
        for kind in QueryKind::ALL {
            let compiled = lang.query(kind).unwrap_or_else(|e| panic!("{e}"));
            let required = matches!(
                kind,
                QueryKind::Defs | QueryKind::Calls | QueryKind::Imports
            );
            assert!(compiled.is_some() || !required, "{lang:?} lacks {kind:?}");
        }
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
    // The index's own directory keeps itself out of git.
    let ignore = std::fs::read_to_string(repo.path().join(".forq/.gitignore")).unwrap();
    assert_eq!(ignore, "*\n");
}

#[test]
fn javascript_and_typescript_definitions() {
    check(
        &[
            (
                "web/app.js",
                "class Cart {\n  add(item) {\n    this.items.push(item);\n  }\n}\n\nfunction total(cart) {\n  return 0;\n}\n\nconst price = (x) => x * 2;\n",
            ),
            (
                "web/types.ts",
                "interface Shape {\n  area(): number;\n}\n\ntype Id = string;\n\nenum Color { Red, Green }\n\nexport class Square implements Shape {\n  area(): number {\n    return 1;\n  }\n}\n\nexport function make(): Square {\n  return new Square();\n}\n",
            ),
            ("web/view.tsx", "export function View() {\n  return <div />;\n}\n"),
        ],
        "
        class Cart web/app.js:1-5
        method Cart.add web/app.js:2-4 <- web/app.js#Cart:class
        function total web/app.js:7-9
        function price web/app.js:11-11
        interface Shape web/types.ts:1-3
        method Shape.area web/types.ts:2-2 <- web/types.ts#Shape:interface
        type Id web/types.ts:5-5
        enum Color web/types.ts:7-7
        class Square web/types.ts:9-13
        method Square.area web/types.ts:10-12 <- web/types.ts#Square:class
        function make web/types.ts:15-17
        function View web/view.tsx:1-3
        ",
    );
}

#[test]
fn go_methods_take_their_receivers_type() {
    check(
        &[(
            "stack.go",
            "package stack\n\nconst Max = 10\n\ntype Stack struct {\n\titems []int\n}\n\ntype Sizer interface {\n\tSize() int\n}\n\nfunc (s *Stack) Push(v int) {\n\ts.items = append(s.items, v)\n}\n\nfunc New() *Stack {\n\treturn &Stack{}\n}\n",
        )],
        "
        constant Max stack.go:3-3
        struct Stack stack.go:5-7
        interface Sizer stack.go:9-11
        method Stack.Push stack.go:13-15
        function New stack.go:17-19
        ",
    );
}

#[test]
fn java_c_and_cpp_definitions() {
    check(
        &[
            (
                "src/Main.java",
                "public class Main {\n    public Main() {}\n\n    static int add(int a, int b) {\n        return a + b;\n    }\n\n    interface Op {\n        int apply(int x);\n    }\n}\n",
            ),
            (
                "lib/math.c",
                "#define LIMIT 10\n\nstruct point {\n    int x;\n};\n\nint add(int a, int b) {\n    return a + b;\n}\n\nchar *name(void) {\n    return 0;\n}\n",
            ),
            (
                "lib/shape.cpp",
                "namespace geo {\nclass Shape {\n public:\n  double area() const { return 0; }\n  void grow();\n};\n}\n\nvoid Shape::grow() {\n}\n",
            ),
        ],
        "
        macro LIMIT lib/math.c:1-1
        struct point lib/math.c:3-5
        function add lib/math.c:7-9
        function name lib/math.c:11-13
        module geo lib/shape.cpp:1-7
        class geo.Shape lib/shape.cpp:2-6 <- lib/shape.cpp#geo:module
        method geo.Shape.area lib/shape.cpp:4-4 <- lib/shape.cpp#geo.Shape:class
        method geo.Shape.grow lib/shape.cpp:5-5 <- lib/shape.cpp#geo.Shape:class
        method Shape.grow lib/shape.cpp:9-10
        class Main src/Main.java:1-11
        method Main.Main src/Main.java:2-2 <- src/Main.java#Main:class
        method Main.add src/Main.java:4-6 <- src/Main.java#Main:class
        interface Main.Op src/Main.java:8-10 <- src/Main.java#Main:class
        method Main.Op.apply src/Main.java:9-9 <- src/Main.java#Main.Op:interface
        ",
    );
}

/// Renders edges as `depth caller -> callee @line confidence`.
pub(crate) fn edges(list: &[forq_graph::CallEdge]) -> Vec<String> {
    list.iter()
        .map(|e| {
            let conf = match e.confidence {
                forq_graph::Confidence::Exact => "exact".to_owned(),
                forq_graph::Confidence::Unique => "unique".to_owned(),
                forq_graph::Confidence::Ambiguous { candidates } => {
                    format!("ambiguous({candidates})")
                }
                _ => "other".to_owned(),
            };
            format!(
                "{} {} -> {} @{} {conf}",
                e.depth, e.caller, e.callee, e.line
            )
        })
        .collect()
}

#[test]
fn callers_and_callees_walk_calls_by_name_and_keep_every_candidate() {
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(
        repo.path().join("app.py"),
        "from util import clean\n\ndef parse(text):\n    return clean(text)\n\ndef main(db):\n    data = parse(read())\n    db.save(data)\n\nclass Db:\n    def save(self, d):\n        pass\n\nclass File:\n    def save(self, d):\n        pass\n\nmain()\n",
    )
    .unwrap();
    std::fs::write(
        repo.path().join("util.py"),
        "def clean(text):\n    return text.strip()\n",
    )
    .unwrap();
    let mut index = Index::open(&repo.path().join("g.db"), repo.path()).unwrap();
    index.update().unwrap();
    assert_eq!(
        edges(&index.callees("app.py#main:function", 2).unwrap().items),
        [
            "1 app.py#main:function -> app.py#parse:function @7 exact",
            "1 app.py#main:function -> app.py#Db.save:method @8 ambiguous(2)",
            "1 app.py#main:function -> app.py#File.save:method @8 ambiguous(2)",
            "2 app.py#parse:function -> util.py#clean:function @4 exact",
        ]
    );
    assert_eq!(
        edges(&index.callers("util.py#clean:function", 3).unwrap().items),
        [
            "1 app.py#parse:function -> util.py#clean:function @4 exact",
            "2 app.py#main:function -> app.py#parse:function @7 exact",
            // Top-level code calls from its file.
            "3 app.py -> app.py#main:function @18 exact",
        ]
    );
    // Depth 1 stops at direct calls; a name nobody defines (read) has no edge.
    assert_eq!(
        index
            .callees("app.py#main:function", 1)
            .unwrap()
            .items
            .len(),
        3
    );

    // The shortest call chain, and none where there is none.
    let chain = index
        .path("app.py#main:function", "util.py#clean:function", 5)
        .unwrap()
        .unwrap();
    assert_eq!(
        edges(&chain),
        [
            "1 app.py#main:function -> app.py#parse:function @7 exact",
            "2 app.py#parse:function -> util.py#clean:function @4 exact",
        ]
    );
    assert_eq!(
        index
            .path("util.py#clean:function", "app.py#main:function", 5)
            .unwrap(),
        None
    );

    let stats = index.stats().unwrap();
    // Calls: clean, strip, parse, read, save, and the top-level main().
    assert_eq!(
        (stats.files, stats.symbols, stats.references, stats.imports),
        (2, 7, 6, 1),
        "{stats:?}"
    );
    assert_eq!(stats.symbols_by_kind.get("method"), Some(&2));
}
