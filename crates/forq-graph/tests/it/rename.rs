//! Renames worked out through the graph, on fixtures in three languages.

use crate::indexed;

#[test]
fn python_rename_follows_imports_qualified_uses_values_and_tests() {
    let (_repo, index) = indexed(&[
        (
            "pkg/store.py",
            "def load(path):\n    return path\n\n\nclass Store:\n    def load(self):\n        return load(\"x\")\n",
        ),
        (
            "app.py",
            "import pkg.store\nfrom pkg.store import load\nfrom pkg import store as st\n\n\n\
             def use():\n    f = load\n    return load(\"a\") + pkg.store.load(\"b\") + st.load(\"c\") + f(\"d\")\n\n\n\
             def other(load):\n    return load\n",
        ),
        (
            "tests/test_app.py",
            "from pkg.store import load\n\n\ndef test_load():\n    assert load(\"p\") == \"p\"\n",
        ),
    ]);
    let plan = index
        .rename("pkg/store.py#load:function", "read_path")
        .unwrap();
    assert_eq!(plan.old, "load");
    assert_eq!(
        plan.files["pkg/store.py"],
        "def read_path(path):\n    return path\n\n\nclass Store:\n    def load(self):\n        return read_path(\"x\")\n",
        "the method of the same name is another definition"
    );
    assert_eq!(
        plan.files["app.py"],
        "import pkg.store\nfrom pkg.store import read_path\nfrom pkg import store as st\n\n\n\
         def use():\n    f = read_path\n    return read_path(\"a\") + pkg.store.read_path(\"b\") + st.read_path(\"c\") + f(\"d\")\n\n\n\
         def other(load):\n    return load\n",
        "a parameter called load shadows it in `other`"
    );
    assert_eq!(
        plan.files["tests/test_app.py"],
        "from pkg.store import read_path\n\n\ndef test_load():\n    assert read_path(\"p\") == \"p\"\n"
    );
    let roles: Vec<&str> = plan.edits.iter().map(|e| e.role.as_str()).collect();
    assert_eq!(roles.iter().filter(|r| **r == "definition").count(), 1);
    assert_eq!(roles.iter().filter(|r| **r == "import").count(), 2);
    assert_eq!(
        roles.iter().filter(|r| **r == "read").count(),
        1,
        "{plan:#?}"
    );
    assert_eq!(plan.edits.len(), 9, "{plan:#?}");
}

#[test]
fn a_method_is_renamed_at_its_receivers_only() {
    let (_repo, index) = indexed(&[(
        "shop.py",
        "class Cart:\n    def total(self):\n        return 1\n\n    def report(self):\n        return self.total() * 2\n\n\n\
         def total(xs):\n    return sum(xs)\n\n\n\
         def run():\n    c = Cart()\n    return c.total() + total([1])\n",
    )]);
    let plan = index.rename("Cart.total", "sum_due").unwrap();
    assert_eq!(
        plan.files["shop.py"],
        "class Cart:\n    def sum_due(self):\n        return 1\n\n    def report(self):\n        return self.sum_due() * 2\n\n\n\
         def total(xs):\n    return sum(xs)\n\n\n\
         def run():\n    c = Cart()\n    return c.sum_due() + total([1])\n"
    );
}

#[test]
fn javascript_rename_across_modules() {
    let (_repo, index) = indexed(&[
        (
            "lib/price.js",
            "function price(item) {\n  return item.cost;\n}\nmodule.exports = { price };\n",
        ),
        (
            "app.js",
            "const { price } = require('./lib/price');\n\nfunction total(items) {\n  return items.map((i) => price(i)).reduce((a, b) => a + b, 0);\n}\n",
        ),
    ]);
    let plan = index.rename("price", "unitPrice").unwrap();
    assert_eq!(
        plan.files["lib/price.js"],
        "function unitPrice(item) {\n  return item.cost;\n}\nmodule.exports = { unitPrice };\n",
        "{plan:#?}"
    );
    assert_eq!(
        plan.files["app.js"],
        "const { unitPrice } = require('./lib/price');\n\nfunction total(items) {\n  return items.map((i) => unitPrice(i)).reduce((a, b) => a + b, 0);\n}\n",
        "{plan:#?}"
    );
}

#[test]
fn rust_rename_across_modules_with_use() {
    let (_repo, index) = indexed(&[
        (
            "src/parse.rs",
            "pub fn parse_num(s: &str) -> u32 {\n    s.parse().unwrap_or(0)\n}\n",
        ),
        (
            "src/lib.rs",
            "mod parse;\nuse crate::parse::parse_num;\n\npub fn twice(s: &str) -> u32 {\n    parse_num(s) * 2\n}\n\npub fn thrice(s: &str) -> u32 {\n    parse::parse_num(s) * 3\n}\n",
        ),
    ]);
    let plan = index.rename("parse_num", "number").unwrap();
    assert_eq!(
        plan.files["src/parse.rs"],
        "pub fn number(s: &str) -> u32 {\n    s.parse().unwrap_or(0)\n}\n"
    );
    assert_eq!(
        plan.files["src/lib.rs"],
        "mod parse;\nuse crate::parse::number;\n\npub fn twice(s: &str) -> u32 {\n    number(s) * 2\n}\n\npub fn thrice(s: &str) -> u32 {\n    parse::number(s) * 3\n}\n",
        "{plan:#?}"
    );
}

#[test]
fn ambiguous_names_clashes_and_bad_names_are_refused_with_why() {
    let (_repo, index) = indexed(&[
        (
            "a.py",
            "def go():\n    return 1\n\n\ndef stop():\n    return 0\n",
        ),
        ("b.py", "def go():\n    return 2\n"),
        ("c.py", "def main():\n    return go()\n"),
    ]);
    let e = index.rename("go", "run").unwrap_err().to_string();
    assert!(
        e.contains("names 2 definitions") && e.contains("a.py#go:function"),
        "{e}"
    );
    let e = index
        .rename("a.py#go:function", "stop")
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "cannot rename a.py#go:function: a.py already defines stop in the same scope"
    );
    let e = index
        .rename("a.py#go:function", "1x")
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "cannot rename a.py#go:function: \"1x\" is not an identifier"
    );
    let e = index
        .rename("b.py#go:function", "run")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("the graph cannot tell whether these call b.py#go:function or another definition of go: c.py:2"),
        "{e}"
    );
}
