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
