//! Call-site patterns on fixtures with known counts.

use crate::indexed;

#[test]
fn python_call_sites_are_read_and_the_outliers_suspected() {
    let (_repo, index) = indexed(&[
        (
            "store.py",
            "def load(path, strict=False):\n    return open(path).read()\n",
        ),
        (
            "app.py",
            "from store import load\n\n\
             def a():\n    if load('a.txt'):\n        return 1\n\n\
             def b():\n    if not load('b.txt', strict=True):\n        return 2\n\n\
             def c(p):\n    while load(p):\n        pass\n\n\
             def d():\n    assert load(None)\n\n\
             def e():\n    load('e.txt')\n",
        ),
    ]);
    let p = index.call_patterns("load").unwrap();
    assert_eq!(p.sites.len(), 5, "{p:#?}");
    assert_eq!(p.results.get("checked"), Some(&4));
    assert_eq!(p.results.get("ignored"), Some(&1));
    assert_eq!(p.arity.get(&1), Some(&4));
    assert_eq!(p.arity.get(&2), Some(&1));
    assert_eq!(p.keywords.get("strict"), Some(&1));
    assert_eq!(p.none_passed, 1);
    let b = p
        .sites
        .iter()
        .find(|s| s.caller.ends_with("b:function"))
        .unwrap();
    assert_eq!(b.arguments[0].kind, "str");
    assert_eq!(b.arguments[1].keyword.as_deref(), Some("strict"));
    assert_eq!(b.arguments[1].kind, "bool");
    let c = p
        .sites
        .iter()
        .find(|s| s.caller.ends_with("c:function"))
        .unwrap();
    assert_eq!(c.arguments[0].kind, "name");
    // 4 of 5 check the result: the one that ignores it is suspected.
    let ignored: Vec<_> = p
        .suspected
        .iter()
        .filter(|s| s.why.contains("the result"))
        .collect();
    assert_eq!(ignored.len(), 1, "{p:#?}");
    assert_eq!(ignored[0].line, 19, "{p:#?}");
    assert_eq!(
        ignored[0].why,
        "4 of 5 call sites check the result; this one ignores it"
    );
    // 4 of 5 pass one argument: the one with two is suspected too.
    assert!(p
        .suspected
        .iter()
        .any(|s| s.line == 8 && s.why.contains("pass 1 argument(s); this one passes 2")));
    // What a model is shown: the counts and the evidence, in a few lines.
    let prompt = p.prompt();
    assert!(
        prompt.starts_with(
            "store.py#load:function — 5 call site(s); arguments: 1 ×4, 2 ×1; result: checked ×4, ignored ×1; keywords: strict ×1; None/null passed at 1\n"
        ),
        "{prompt}"
    );
    assert!(
        prompt.contains(
            "  suspected app.py:19: 4 of 5 call sites check the result; this one ignores it\n"
        ),
        "{prompt}"
    );
}

#[test]
fn rust_results_tried_with_question_mark_are_checked_and_a_dropped_one_suspected() {
    let (_repo, index) = indexed(&[(
        "src/lib.rs",
        "pub fn parse(s: &str) -> Result<u32, String> {\n    s.parse().map_err(|_| s.to_owned())\n}\n\n\
         pub fn a() -> Result<u32, String> {\n    let n = parse(\"1\")?;\n    Ok(n)\n}\n\n\
         pub fn b() -> Result<(), String> {\n    parse(\"2\")?;\n    Ok(())\n}\n\n\
         pub fn c() -> Result<(), String> {\n    parse(\"3\")?;\n    parse(\"4\")?;\n    Ok(())\n}\n\n\
         pub fn d() {\n    let _ = 1;\n    parse(\"5\");\n}\n",
    )]);
    let p = index.call_patterns("parse").unwrap();
    assert_eq!(p.sites.len(), 5, "{p:#?}");
    // `?` checks the result (assigned or not); `d` drops it.
    assert_eq!(p.results.get("checked"), Some(&4), "{p:#?}");
    assert_eq!(p.results.get("ignored"), Some(&1), "{p:#?}");
    let ignored = p.sites.iter().find(|s| s.result == "ignored").unwrap();
    assert_eq!(
        (ignored.line, ignored.caller.as_str()),
        (23, "src/lib.rs#d:function")
    );
    assert_eq!(p.suspected.len(), 1, "{p:#?}");
    assert_eq!(
        p.suspected[0].why,
        "4 of 5 call sites check the result; this one ignores it"
    );
    assert_eq!(p.arity.get(&1), Some(&5));
    assert!(
        p.sites.iter().all(|s| s.arguments[0].kind == "str"),
        "{p:#?}"
    );
}

#[test]
fn c_return_codes_checked_at_most_sites_and_the_unchecked_one_suspected() {
    let (_repo, index) = indexed(&[(
        "io.c",
        "int open_file(const char *p) { return p ? 0 : -1; }\n\
         int a(void) { if (open_file(\"a\") < 0) return 1; return 0; }\n\
         int b(void) { return open_file(\"b\"); }\n\
         int c(void) { int rc = open_file(\"c\"); return rc; }\n\
         int d(void) { if (open_file(\"d\") != 0) return 1; return 0; }\n\
         int e(void) { if (!open_file(\"e\")) return 0; return 1; }\n\
         int f(void) { if (open_file(\"f\")) return 1; return 0; }\n\
         int g(void) { if (open_file(\"g\") == -1) return 1; return 0; }\n\
         void h(void) { open_file(\"h\"); }\n",
    )]);
    let p = index.call_patterns("open_file").unwrap();
    assert_eq!(p.sites.len(), 8, "{p:#?}");
    assert_eq!(p.results.get("ignored"), Some(&1), "{p:#?}");
    assert_eq!(p.results.get("returned"), Some(&1), "{p:#?}");
    assert_eq!(p.results.get("assigned"), Some(&1), "{p:#?}");
    assert_eq!(p.results.get("checked"), Some(&5), "{p:#?}");
}

#[test]
fn javascript_results_assigned_returned_and_passed() {
    let (_repo, index) = indexed(&[(
        "lib.js",
        "function price(item) { return item.cost; }\n\
         function one(i) { const p = price(i); return p; }\n\
         function two(i) { return price(i); }\n\
         function three(i) { console.log(price(i)); }\n",
    )]);
    let p = index.call_patterns("price").unwrap();
    let mut results: Vec<&str> = p.sites.iter().map(|s| s.result.as_str()).collect();
    results.sort_unstable();
    assert_eq!(results, ["assigned", "passed", "returned"], "{p:#?}");
    assert!(
        p.suspected.is_empty(),
        "no dominant pattern among three different uses"
    );
}
