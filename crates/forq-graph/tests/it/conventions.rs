//! Conventions on a fixture with known counts.

use crate::indexed;

#[test]
fn a_python_codebases_conventions_are_counted_and_only_the_kept_ones_stated() {
    let (_repo, index) = indexed(&[
        (
            "pkg/store.py",
            "from os import path\nfrom json import loads\n\n\n\
             class Store:\n    def load_file(self, name):\n        return loads(open(name).read())\n\n\
             \n\
             class Loader:\n    def save_file(self, name):\n        return path.join('a', 'b')\n",
        ),
        (
            "pkg/parse.py",
            "from re import compile\nimport os\n\n\n\
             class Parser:\n    pass\n\n\n\
             def parse_it(text):\n    return compile('x').match(text)\n\n\n\
             def parse_all(text):\n    return text\n\n\n\
             def split_words(text):\n    return text\n\n\n\
             def renderPage(text):\n    return \"<p>\" + text\n",
        ),
        (
            "tests/test_store.py",
            "def test_load():\n    assert True\n\n\n\
             def test_save():\n    assert True\n\n\n\
             def test_parse():\n    assert True\n",
        ),
    ]);
    let all = index.conventions(0.0).unwrap();
    let find = |rule: &str| {
        all.conventions
            .iter()
            .find(|c| c.rule == rule)
            .unwrap_or_else(|| panic!("no `{rule}` in {all:#?}"))
    };
    let classes = find("python classes are PascalCase");
    assert_eq!((classes.count, classes.of), (3, 3));
    // parse_it, parse_all, split_words against renderPage; two methods
    // are too few to say anything.
    let functions = find("python functions are snake_case");
    assert_eq!((functions.count, functions.of), (3, 4));
    assert!(!all.conventions.iter().any(|c| c.rule.contains("methods")));
    let imports = find("python imports are written `from X import Y`");
    assert_eq!((imports.count, imports.of), (3, 4));
    let quotes = find("python strings use single quotes");
    assert_eq!((quotes.count, quotes.of), (3, 4));
    let indent = find("python files indent with 4 spaces");
    assert_eq!((indent.count, indent.of), (3, 3));
    let tests = find("tests live in a tests/ directory");
    assert_eq!((tests.count, tests.of), (3, 3));
    let names = find("python names of tests start with `test_`");
    assert_eq!((names.count, names.of), (3, 3));
    // At 80%, the 75% ones are not stated.
    let kept = index.conventions(0.8).unwrap();
    let rules: Vec<&str> = kept.conventions.iter().map(|c| c.rule.as_str()).collect();
    assert!(
        rules.contains(&"python classes are PascalCase"),
        "{rules:?}"
    );
    assert!(!rules.iter().any(|r| r.contains("imports")), "{rules:?}");
    assert!(!rules.iter().any(|r| r.contains("functions")), "{rules:?}");
    assert!(!rules.iter().any(|r| r.contains("quotes")), "{rules:?}");
    let prompt = kept.prompt(120);
    assert!(prompt.len() <= 120, "{prompt}");
    assert!(prompt.starts_with("- "), "{prompt}");
}

#[test]
fn javascript_and_rust_conventions_are_counted_per_language() {
    let (_repo, index) = indexed(&[
        (
            "src/price.js",
            "const fs = require('fs');\n\nfunction unitPrice(item) {\n  return item.cost;\n}\n\n\
             function totalPrice(items) {\n  return items.map(unitPrice).join('+');\n}\n\n\
             function tax_rate() {\n  return 'x';\n}\n\nmodule.exports = { unitPrice, totalPrice, tax_rate, fs };\n",
        ),
        (
            "src/cart.js",
            "function addItem(cart, item) {\n  cart.push(item);\n  return 'ok';\n}\n\nmodule.exports = { addItem };\n",
        ),
        (
            "src/lib.rs",
            "pub fn parse_num(s: &str) -> Result<u32, String> {\n    let n = s.parse::<u32>().map_err(|e| e.to_string())?;\n    Ok(n)\n}\n\n\
             pub fn parse_two(a: &str, b: &str) -> Result<u32, String> {\n    Ok(parse_num(a)? + parse_num(b)?)\n}\n\n\
             pub fn first(s: &str) -> u32 {\n    parse_num(s).unwrap()\n}\n",
        ),
    ]);
    let all = index.conventions(0.0).unwrap();
    let rules: Vec<(String, usize, usize)> = all
        .conventions
        .iter()
        .map(|c| (c.rule.clone(), c.count, c.of))
        .collect();
    let find = |rule: &str| {
        rules
            .iter()
            .find(|(r, _, _)| r == rule)
            .map(|(_, c, o)| (*c, *o))
            .unwrap_or_else(|| panic!("no `{rule}` in {rules:#?}"))
    };
    // unitPrice, totalPrice, addItem against tax_rate.
    assert_eq!(find("js functions are camelCase"), (3, 4));
    assert_eq!(find("js strings use single quotes"), (4, 4));
    assert_eq!(find("rust functions are snake_case"), (3, 3));
    // Three `?` against one `unwrap()`.
    assert_eq!(find("rust code propagates errors with ?"), (3, 4));
    // Two JavaScript files and one Rust file are too few places to say
    // how either indents.
    assert!(
        !rules.iter().any(|(r, _, _)| r.contains("indent")),
        "{rules:#?}"
    );
}
