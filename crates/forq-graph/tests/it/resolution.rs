//! Name resolution: calls through receivers, imports and scope get exact
//! edges; by name alone unique or ambiguous ones, never a silent pick.

use crate::{edges, indexed};

/// Direct callees of `id`, rendered by `edges`, without the depth.
fn callees(index: &forq_graph::Index, id: &str) -> Vec<String> {
    edges(&index.callees(id, 1).unwrap().items)
        .into_iter()
        .map(|e| e[2..].to_owned())
        .collect()
}

#[test]
fn python_resolves_through_self_bases_aliases_and_relative_imports() {
    let (_repo, index) = indexed(&[
        ("pkg/__init__.py", ""),
        ("pkg/base.py", "class Shape:\n    def name(self):\n        return 'shape'\n\n    def area(self):\n        return 0\n"),
        (
            "pkg/shapes.py",
            "import math\nfrom .base import Shape as S\n\n\nclass Circle(S):\n    def area(self):\n        return math.pi\n\n    def describe(self):\n        return self.name() + str(self.area())\n\n\ndef area(shape):\n    return shape.area()\n",
        ),
        ("tests/test_shapes.py", "from pkg.shapes import Circle, area as total\nimport pkg.base as b\nimport pkg.shapes\n\n\ndef test_area():\n    assert total(Circle()) > 3\n    b.Shape()\n    pkg.shapes.area(None)\n"),
    ]);
    assert_eq!(
        callees(&index, "pkg/shapes.py#Circle.describe:method"),
        [
            // `self.name()`: not on Circle, found on its base, imported under an alias.
            "pkg/shapes.py#Circle.describe:method -> pkg/base.py#Shape.name:method @10 exact",
            "pkg/shapes.py#Circle.describe:method -> pkg/shapes.py#Circle.area:method @10 exact",
        ]
    );
    // `shape.area()` on an unknown object: both methods, neither picked,
    // and never the module function of the same name.
    assert_eq!(
        callees(&index, "pkg/shapes.py#area:function"),
        [
            "pkg/shapes.py#area:function -> pkg/base.py#Shape.area:method @14 ambiguous(2)",
            "pkg/shapes.py#area:function -> pkg/shapes.py#Circle.area:method @14 ambiguous(2)",
        ]
    );
    // `total` is `area` imported under an alias; `b.Shape` goes through a
    // module alias, `pkg.shapes.area` through a dotted module import.
    assert_eq!(
        callees(&index, "tests/test_shapes.py#test_area:function"),
        [
            "tests/test_shapes.py#test_area:function -> pkg/shapes.py#Circle:class @7 exact",
            "tests/test_shapes.py#test_area:function -> pkg/shapes.py#area:function @7 exact",
            "tests/test_shapes.py#test_area:function -> pkg/base.py#Shape:class @8 exact",
            "tests/test_shapes.py#test_area:function -> pkg/shapes.py#area:function @9 exact",
        ]
    );
    // math.pi is outside the repository: no edge, not a guess.
    let inherits = index.affected_by("pkg/base.py#Shape:class", 1).unwrap();
    let ids: Vec<(&str, &str)> = inherits
        .items
        .iter()
        .map(|d| (d.id.as_str(), d.via.as_str()))
        .collect();
    assert!(
        ids.contains(&("pkg/shapes.py#Circle:class", "inherits")),
        "{ids:?}"
    );
}

#[test]
fn same_named_functions_in_different_modules_resolve_by_import() {
    let (_repo, index) = indexed(&[
        ("a/util.py", "def load():\n    pass\n"),
        ("b/util.py", "def load():\n    pass\n"),
        (
            "main.py",
            "from a.util import load\n\ndef run():\n    load()\n",
        ),
        ("other.py", "def go():\n    load()\n"),
    ]);
    assert_eq!(
        callees(&index, "main.py#run:function"),
        ["main.py#run:function -> a/util.py#load:function @4 exact"]
    );
    // Without an import, both candidates are kept and flagged.
    assert_eq!(
        callees(&index, "other.py#go:function"),
        [
            "other.py#go:function -> a/util.py#load:function @2 ambiguous(2)",
            "other.py#go:function -> b/util.py#load:function @2 ambiguous(2)",
        ]
    );
}

#[test]
fn javascript_and_typescript_resolve_imports_this_and_requires() {
    let (_repo, index) = indexed(&[
        (
            "web/cart.js",
            "import { total as sum } from './math';\nconst util = require('./util');\nclass Cart {\n  add(item) { this.items.push(item); return this.count(); }\n  count() { return sum(this.items); }\n}\nfunction log() { util.log(); }\n",
        ),
        ("web/math.js", "export function total(xs) { return xs.length; }\n"),
        ("web/util.js", "function log() {}\nmodule.exports = { log };\n"),
        ("web/view.ts", "import { total } from './math';\nexport class View { render(): number { return total([]); } }\n"),
    ]);
    assert_eq!(
        callees(&index, "web/cart.js#Cart.add:method"),
        ["web/cart.js#Cart.add:method -> web/cart.js#Cart.count:method @4 exact"]
    );
    assert_eq!(
        callees(&index, "web/cart.js#Cart.count:method"),
        ["web/cart.js#Cart.count:method -> web/math.js#total:function @5 exact"]
    );
    assert_eq!(
        callees(&index, "web/cart.js#log:function"),
        ["web/cart.js#log:function -> web/util.js#log:function @7 exact"]
    );
    assert_eq!(
        callees(&index, "web/view.ts#View.render:method"),
        ["web/view.ts#View.render:method -> web/math.js#total:function @2 exact"]
    );
}

#[test]
fn rust_go_java_and_cpp_resolve_paths_packages_and_receivers() {
    let (_repo, index) = indexed(&[
        ("rs/src/lib.rs", "mod stack;\nuse crate::stack::Stack;\npub fn make() -> Stack { let v = Vec::new(); Stack::new() }\n"),
        (
            "rs/src/stack.rs",
            "pub struct Stack { items: Vec<u32> }\nimpl Stack {\n    pub fn new() -> Self { Self::empty() }\n    fn empty() -> Self { Stack { items: Vec::new() } }\n    pub fn is_empty(&self) -> bool { self.len() == 0 }\n    fn len(&self) -> usize { 0 }\n}\n",
        ),
        ("go/main.go", "package main\nimport s \"example.com/m/go/sub\"\nfunc main() { s.Add(1, 2); run() }\nfunc run() {}\n"),
        ("go/sub/sub.go", "package sub\nfunc Add(a, b int) int { return helper(a) + b }\n"),
        ("go/sub/help.go", "package sub\nfunc helper(a int) int { return a }\n"),
        ("j/a/b/Calc.java", "package a.b;\npublic class Calc { public static int add(int x, int y) { return x + y; } int twice(int x) { return this.add(x, x); } }\n"),
        ("j/Main.java", "import a.b.Calc;\nclass Main { void go() { Calc.add(1, 2); } }\n"),
        ("cc/shape.hpp", "struct Shape { double area(); };\n"),
        ("cc/main.cpp", "#include \"shape.hpp\"\ndouble twice(Shape s) { return 2 * s.area() + std::max(1, 2); }\n"),
    ]);
    // `Vec::new()` is outside the repository: no edge to the repository's `new`.
    assert_eq!(
        callees(&index, "rs/src/lib.rs#make:function"),
        ["rs/src/lib.rs#make:function -> rs/src/stack.rs#Stack.new:method @3 exact"]
    );
    assert_eq!(
        callees(&index, "rs/src/stack.rs#Stack.new:method"),
        ["rs/src/stack.rs#Stack.new:method -> rs/src/stack.rs#Stack.empty:method @3 exact"]
    );
    assert_eq!(
        callees(&index, "rs/src/stack.rs#Stack.is_empty:method"),
        ["rs/src/stack.rs#Stack.is_empty:method -> rs/src/stack.rs#Stack.len:method @5 exact"]
    );
    assert_eq!(
        callees(&index, "go/main.go#main:function"),
        [
            "go/main.go#main:function -> go/main.go#run:function @3 exact",
            "go/main.go#main:function -> go/sub/sub.go#Add:function @3 exact",
        ]
    );
    // Same package, another file: in scope without an import.
    assert_eq!(
        callees(&index, "go/sub/sub.go#Add:function"),
        ["go/sub/sub.go#Add:function -> go/sub/help.go#helper:function @2 exact"]
    );
    assert_eq!(
        callees(&index, "j/Main.java#Main.go:method"),
        ["j/Main.java#Main.go:method -> j/a/b/Calc.java#Calc.add:method @2 exact"]
    );
    assert_eq!(
        callees(&index, "j/a/b/Calc.java#Calc.twice:method"),
        ["j/a/b/Calc.java#Calc.twice:method -> j/a/b/Calc.java#Calc.add:method @2 exact"]
    );
    let stats = index.stats().unwrap();
    assert!(
        stats.edges_by_kind.contains_key("imports exact"),
        "{stats:?}"
    );
}

#[test]
fn names_never_resolve_across_language_families() {
    let (_repo, index) = indexed(&[
        ("a.py", "class A:\n    def add(self):\n        pass\n"),
        ("b.js", "function go(x) { x.add(); }\n"),
    ]);
    assert!(callees(&index, "b.js#go:function").is_empty());
}
