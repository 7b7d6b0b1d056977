//! Docs written in each language's form, and the check that a change
//! touched docs only.

use forq_graph::{same_code_outside_docs, write_doc, Lang};

use crate::indexed;

const PY: &str = "class Cart:\n    def total(self):\n        return 1\n\n    def _hidden(self):\n        return 2\n\n\ndef price(item):\n    \"\"\"Old words.\"\"\"\n    return item\n\n\ndef helper():\n    def inner():\n        return 3\n    return inner()\n";

#[test]
fn python_docstrings_are_written_as_the_first_statement_and_only_docs_change() {
    let (_repo, index) = indexed(&[("shop.py", PY)]);
    let missing: Vec<String> = index
        .undocumented(10)
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    // Private, nested and documented definitions are left out.
    assert_eq!(
        missing,
        [
            "shop.py#Cart:class",
            "shop.py#Cart.total:method",
            "shop.py#helper:function"
        ]
    );
    // Several docs in one file are written last first: the graph's lines
    // are the original's.
    let price = index.find_symbol("price").unwrap();
    let one = write_doc(
        Lang::Python,
        PY,
        &price,
        "The item's price.\n\nArgs:\n    item: what is sold.",
    )
    .unwrap();
    // The existing docstring is replaced, over several lines.
    assert!(
        one.contains("def price(item):\n    \"\"\"The item's price.\n\n    Args:\n        item: what is sold.\n    \"\"\"\n    return item\n"),
        "{one}"
    );
    same_code_outside_docs(Lang::Python, PY, &one).unwrap();
    let total = index.find_symbol("Cart.total").unwrap();
    let two = write_doc(Lang::Python, &one, &total, "The cart's total.").unwrap();
    assert!(
        two.contains(
            "    def total(self):\n        \"\"\"The cart's total.\"\"\"\n        return 1\n"
        ),
        "{two}"
    );
    same_code_outside_docs(Lang::Python, PY, &two).unwrap();
}

#[test]
fn a_doc_that_breaks_out_of_its_string_or_a_code_edit_is_refused_with_the_line() {
    let (_repo, index) = indexed(&[("shop.py", PY)]);
    let total = index.find_symbol("Cart.total").unwrap();
    let escaped = write_doc(
        Lang::Python,
        PY,
        &total,
        "Total.\"\"\"\n    import os\n    \"\"\"More.",
    )
    .unwrap();
    let e = same_code_outside_docs(Lang::Python, PY, &escaped).unwrap_err();
    assert_eq!(e.line, 4, "{e}\n{escaped}");
    assert!(e.new_text.contains("import os"), "{e}");
    // A docstring added and a value changed beside it.
    let edited = PY.replace(
        "def total(self):\n        return 1",
        "def total(self):\n        \"\"\"Total.\"\"\"\n        return 2",
    );
    let e = same_code_outside_docs(Lang::Python, PY, &edited).unwrap_err();
    assert_eq!(e.line, 4, "{e}");
    assert_eq!(
        e.to_string(),
        "line 4 changes code, not only docs: \"        return 2\" where there was \"        return 1\""
    );
    // A plain comment is code for this check: docs only.
    let commented = PY.replace("        return 1", "        return 1  # one");
    assert!(same_code_outside_docs(Lang::Python, PY, &commented).is_err());
}

#[test]
fn rust_javascript_c_and_go_get_their_doc_comments() {
    let rs = "pub struct P;\n\nimpl P {\n    #[inline]\n    pub fn area(&self) -> u32 {\n        1\n    }\n}\n";
    let (_repo, index) = indexed(&[("src/lib.rs", rs)]);
    let area = index.find_symbol("area").unwrap();
    let out = write_doc(Lang::Rust, rs, &area, "The area.\n\nAlways one.").unwrap();
    assert_eq!(
        out,
        "pub struct P;\n\nimpl P {\n    /// The area.\n    ///\n    /// Always one.\n    #[inline]\n    pub fn area(&self) -> u32 {\n        1\n    }\n}\n"
    );
    same_code_outside_docs(Lang::Rust, rs, &out).unwrap();
    // Written again, the old doc comment is replaced, not stacked.
    let (_again, index) = indexed(&[("src/lib.rs", &out)]);
    let area = index.find_symbol("area").unwrap();
    let again = write_doc(Lang::Rust, &out, &area, "The area, again.").unwrap();
    assert!(
        again.contains("impl P {\n    /// The area, again.\n    #[inline]\n"),
        "{again}"
    );

    let js = "function price(item) {\n  return item.cost;\n}\n";
    let (_repo, index) = indexed(&[("price.js", js)]);
    let price = index.find_symbol("price").unwrap();
    let out = write_doc(Lang::JavaScript, js, &price, "The item's cost.").unwrap();
    assert_eq!(out, format!("/**\n * The item's cost.\n */\n{js}"));
    same_code_outside_docs(Lang::JavaScript, js, &out).unwrap();

    let c = "#include <stdio.h>\n\nint twice(int x) {\n    return 2 * x;\n}\n";
    let (_repo, index) = indexed(&[("twice.c", c)]);
    let twice = index.find_symbol("twice").unwrap();
    let out = write_doc(Lang::C, c, &twice, "Twice x.").unwrap();
    assert!(
        out.contains("\n/**\n * Twice x.\n */\nint twice(int x) {"),
        "{out}"
    );
    same_code_outside_docs(Lang::C, c, &out).unwrap();

    let go = "package calc\n\nfunc Add(a, b int) int {\n\treturn a + b\n}\n";
    let (_repo, index) = indexed(&[("calc.go", go)]);
    let add = index.find_symbol("Add").unwrap();
    let out = write_doc(Lang::Go, go, &add, "Returns the sum.").unwrap();
    assert!(
        out.contains("\n// Add returns the sum.\nfunc Add("),
        "{out}"
    );
    same_code_outside_docs(Lang::Go, go, &out).unwrap();
}
