//! The queries over a small project: tests-for, affected-by, symbol
//! arguments, bounded answers, the repo map.

use crate::indexed;

fn project() -> (tempfile::TempDir, forq_graph::Index) {
    indexed(&[
        ("calc/__init__.py", ""),
        ("calc/ops.py", "def add(a, b):\n    \"\"\"Adds.\"\"\"\n    return a + b\n\n\ndef twice(a):\n    return add(a, a)\n"),
        ("calc/cli.py", "from calc.ops import twice\n\n\ndef main():\n    print(twice(2))\n"),
        ("tests/test_ops.py", "from calc.ops import add, twice\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\ndef test_twice():\n    assert twice(2) == 4\n"),
        ("web/app.test.js", "import { f } from './app';\ndescribe('app', () => {\n  it('works', () => { f(); });\n});\n"),
        ("web/app.js", "export function f() { return 1; }\n"),
    ])
}

#[test]
fn tests_are_found_by_convention_and_cover_through_calls() {
    let (_repo, index) = project();
    let tests: Vec<String> = index
        .symbols(&forq_graph::SymbolFilter::default().tests())
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(
        tests,
        [
            "tests/test_ops.py#test_add:function",
            "tests/test_ops.py#test_twice:function",
            "web/app.test.js#app:test",
            "web/app.test.js#app.works:test",
        ]
    );
    let covering: Vec<(String, u32)> = index
        .tests_for("calc/ops.py#add:function", 3)
        .unwrap()
        .items
        .into_iter()
        .map(|c| (c.test, c.depth))
        .collect();
    // Nearest first: test_add calls add; test_twice reaches it through twice.
    assert_eq!(
        covering,
        [
            ("tests/test_ops.py#test_add:function".to_owned(), 1),
            ("tests/test_ops.py#test_twice:function".to_owned(), 2),
        ]
    );
    let js: Vec<String> = index
        .tests_for("web/app.js#f:function", 2)
        .unwrap()
        .items
        .into_iter()
        .map(|c| c.test)
        .collect();
    assert_eq!(js, ["web/app.test.js#app.works:test"]);
}

#[test]
fn affected_by_walks_dependents_transitively() {
    let (_repo, index) = project();
    let affected: Vec<(String, String, u32)> = index
        .affected_by("calc/ops.py#add:function", 3)
        .unwrap()
        .items
        .into_iter()
        .map(|d| (d.id, d.via, d.depth))
        .collect();
    let has = |id: &str, via: &str, depth: u32| {
        affected.contains(&(id.to_owned(), via.to_owned(), depth))
    };
    assert!(
        has("calc/ops.py#twice:function", "calls", 1),
        "{affected:?}"
    );
    assert!(has("tests/test_ops.py", "imports", 1), "{affected:?}");
    assert!(has("calc/cli.py#main:function", "calls", 2), "{affected:?}");
}

#[test]
fn symbol_arguments_accept_ids_qualnames_and_file_lines_and_refuse_ambiguity() {
    let (_repo, index) = indexed(&[
        (
            "a.py",
            "def run():\n    pass\n\nclass A:\n    def run(self):\n        x = 1\n",
        ),
        ("b.py", "def other():\n    pass\n"),
    ]);
    assert_eq!(index.find_symbol("a.py#run:function").unwrap().line, 1);
    assert_eq!(index.find_symbol("A.run").unwrap().id, "a.py#A.run:method");
    assert_eq!(index.find_symbol("a.py:6").unwrap().id, "a.py#A.run:method");
    assert_eq!(
        index.find_symbol("other").unwrap().id,
        "b.py#other:function"
    );
    match index.find_symbol("run") {
        Err(forq_graph::Error::AmbiguousSymbol { candidates, .. }) => {
            assert_eq!(candidates, ["a.py#run:function", "a.py#A.run:method"]);
        }
        other => panic!("expected the candidates, got {other:?}"),
    }
    assert!(matches!(
        index.find_symbol("nope"),
        Err(forq_graph::Error::NoSuchSymbol { .. })
    ));
    assert!(matches!(
        index.statements("missing.py", 1, 2),
        Err(forq_graph::Error::NoSuchFile { .. })
    ));
}

#[test]
fn answers_are_bounded_with_a_flag_and_a_hint() {
    // 300 callers of one function: the answer stops at the cap and says so.
    let mut source = String::from("def target():\n    pass\n");
    for i in 0..300 {
        source.push_str(&format!("\ndef caller{i}():\n    target()\n"));
    }
    let (_repo, index) = indexed(&[("many.py", &source)]);
    let callers = index.callers("many.py#target:function", 1).unwrap();
    assert!(callers.truncated);
    assert!(callers.items.len() <= forq_graph::MAX_ROWS);
    assert!(callers.hint.is_some());
    let one = index.callees("many.py#caller0:function", 1).unwrap();
    assert!(!one.truncated && one.hint.is_none());
}

#[test]
fn the_repo_map_ranks_what_is_depended_on_and_fits_the_budget() {
    let (_repo, index) = project();
    let map = index.map(60, &[]).unwrap();
    assert!(map.tokens <= 60, "{map:?}");
    // `add` is called by two definitions and ranks above what calls it.
    let pos = |id: &str| map.entries.iter().position(|e| e.id == id);
    assert!(
        pos("calc/ops.py#add:function") < pos("calc/cli.py#main:function").or(Some(usize::MAX)),
        "{map:?}"
    );
    assert!(map.text.contains("calc/ops.py:\n"), "{}", map.text);
    assert!(map.text.contains("     1: def add(a, b):"), "{}", map.text);

    // A focus pulls its neighbourhood up.
    let focused = index.map(25, &["web/app.js".to_owned()]).unwrap();
    assert_eq!(focused.entries[0].file, "web/app.js", "{focused:?}");
}

#[test]
fn the_repo_map_lands_within_fifteen_percent_of_a_budget_it_can_fill() {
    let mut files = Vec::new();
    for i in 0..40 {
        files.push((format!("m{i}.py"), format!("def function_number_{i}(argument_one, argument_two):\n    return helper_{i}(argument_one)\n\ndef helper_{i}(x):\n    return x\n")));
    }
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let (_repo, index) = indexed(&refs);
    for budget in [100, 250, 500] {
        let map = index.map(budget, &[]).unwrap();
        assert!(
            map.tokens <= budget * 115 / 100 && map.tokens >= budget * 85 / 100,
            "{budget}: {}",
            map.tokens
        );
    }
}

#[test]
fn tests_are_found_by_each_ecosystems_convention() {
    let (_repo, index) = indexed(&[
        ("src/lib.rs", "fn add() {}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    #[should_panic]\n    fn adds() {}\n\n    #[tokio::test]\n    async fn adds_async() {}\n\n    fn helper() {}\n}\n"),
        ("calc/calc_test.go", "package calc\n\nfunc TestAdd(t *testing.T) {}\n\nfunc Testify() {}\n\nfunc helper() {}\n"),
        ("src/test/java/CalcTest.java", "class CalcTest {\n    @Test\n    void adds() {}\n\n    @ParameterizedTest\n    void many(int x) {}\n\n    void helper() {}\n}\n"),
        ("test/shape_test.cpp", "TEST(Shape, Area) {\n}\n\nTEST_F(Fixture, Grows) {\n}\n\nvoid helper() {}\n"),
        ("tests/test_list.c", "void test_push(void) {}\n\nstatic void helper(void) {}\n"),
        ("src/list.c", "void test_mode(void) {}\n"),
        ("tests/test_app.py", "import unittest\n\n\ndef test_top():\n    pass\n\n\ndef helper():\n    pass\n\n\nclass AppTest(unittest.TestCase):\n    def test_method(self):\n        pass\n"),
        ("web/app.spec.ts", "describe('app', () => {\n  test('runs', () => {});\n});\n"),
    ]);
    let tests: Vec<String> = index
        .symbols(&forq_graph::SymbolFilter::default().tests())
        .unwrap()
        .into_iter()
        .map(|s| format!("{} {}", s.kind, s.id))
        .collect();
    assert_eq!(
        tests,
        [
            "function calc/calc_test.go#TestAdd:function",
            "module src/lib.rs#tests:module",
            "function src/lib.rs#tests.adds:function",
            "function src/lib.rs#tests.adds_async:function",
            "method src/test/java/CalcTest.java#CalcTest.adds:method",
            "method src/test/java/CalcTest.java#CalcTest.many:method",
            "test test/shape_test.cpp#Shape.Area:test",
            "test test/shape_test.cpp#Fixture.Grows:test",
            "function tests/test_app.py#test_top:function",
            // A TestCase subclass in a test file is a test class.
            "class tests/test_app.py#AppTest:class",
            "method tests/test_app.py#AppTest.test_method:method",
            "function tests/test_list.c#test_push:function",
            "test web/app.spec.ts#app:test",
            "test web/app.spec.ts#app.runs:test",
        ]
    );
}

#[test]
fn doc_comments_and_docstrings_are_kept() {
    let (_repo, index) = indexed(&[
        (
            "a.py",
            "def f():\n    \"\"\"Adds two   numbers.\"\"\"\n    return 1\n",
        ),
        ("a.rs", "/// Adds.\n/// Twice.\n#[inline]\npub fn f() {}\n"),
        ("a.go", "package a\n\n// F adds.\nfunc F() {}\n"),
        ("a.js", "/**\n * Adds.\n */\nexport function f() {}\n"),
        ("b.py", "def g():\n    return 1\n"),
    ]);
    let doc = |file: &str| {
        index
            .symbols(&forq_graph::SymbolFilter::default().file(file))
            .unwrap()[0]
            .doc
            .clone()
    };
    assert_eq!(doc("a.py").as_deref(), Some("Adds two numbers."));
    assert_eq!(doc("a.rs").as_deref(), Some("Adds. Twice."));
    assert_eq!(doc("a.go").as_deref(), Some("F adds."));
    assert_eq!(doc("a.js").as_deref(), Some("Adds."));
    assert_eq!(doc("b.py"), None);
}
