//! Audit findings on a fixture with known answers.

use forq_graph::AuditQuery;

use crate::indexed;

const APP: &str = "\
def grade(score, curve=False):
    \"\"\"A letter for a score.\"\"\"
    if curve and score > 0:
        score += 5
    if score >= 90:
        return \"A\"
    elif score >= 80:
        return \"B\"
    elif score >= 70 or score == 69:
        return \"C\"
    for _ in range(1):
        while False:
            pass
    return \"F\" if score >= 0 else \"?\"


def load(path):
    return open(path).read()


def report():
    a = load(\"a\")
    b = load(\"b\")
    c = load(\"c\")
    d = load(\"d\")
    load(\"e\")
    return grade(1) + a + b + c + d


def orphan():
    return 1


def _private():
    return 2


def main():
    report()
";

#[test]
fn each_query_finds_what_the_fixture_holds() {
    let (_repo, index) = indexed(&[
        ("app.py", APP),
        (
            "tests/test_app.py",
            "from app import grade\n\n\ndef test_grade():\n    assert grade(95) == \"A\"\n",
        ),
    ]);
    let found = index.audit(&[AuditQuery::Complexity(5)], 10).unwrap();
    assert_eq!(found.len(), 1, "{found:#?}");
    // 1 + if, and, if, elif, elif, or, for, while, conditional = 10.
    assert_eq!(
        found[0].message,
        "grade has cyclomatic complexity 10 (over 5)"
    );
    assert!(index
        .audit(&[AuditQuery::Complexity(10)], 10)
        .unwrap()
        .is_empty());

    let found = index.audit(&[AuditQuery::Undocumented], 10).unwrap();
    let ids: Vec<&str> = found.iter().map(|f| f.symbol.as_str()).collect();
    assert_eq!(
        ids,
        [
            "app.py#load:function",
            "app.py#report:function",
            "app.py#orphan:function",
            "app.py#main:function"
        ]
    );

    let found = index.audit(&[AuditQuery::Suspected], 10).unwrap();
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!((found[0].file.as_str(), found[0].line), ("app.py", 26));
    assert_eq!(
        found[0].message,
        "a call of app.py#load:function: 4 of 5 call sites assign the result; this one ignores it"
    );

    let found = index.audit(&[AuditQuery::Unused], 10).unwrap();
    let ids: Vec<&str> = found.iter().map(|f| f.symbol.as_str()).collect();
    assert_eq!(
        ids,
        ["app.py#orphan:function"],
        "main and _private are left out"
    );

    // All of them, each capped.
    let all = index.audit(&AuditQuery::ALL, 2).unwrap();
    assert_eq!(all.iter().filter(|f| f.kind == "undocumented").count(), 2);
    assert_eq!("complexity>7".parse(), Ok(AuditQuery::Complexity(7)));
    assert!("loops"
        .parse::<AuditQuery>()
        .unwrap_err()
        .contains("unknown audit query \"loops\""));
}

#[test]
fn complexity_counts_javascript_and_rust_decisions() {
    let (_repo, index) = indexed(&[
        (
            "pick.js",
            "function pick(a, b) {\n  if (a && b) {\n    return 1;\n  }\n  for (const x of [a]) {\n    if (x || b) return 2;\n  }\n  return a ? 3 : 4;\n}\n",
        ),
        (
            "src/lib.rs",
            "pub fn pick(a: bool, b: bool) -> u8 {\n    if a && b {\n        return 1;\n    }\n    match a {\n        true => 2,\n        false => 3,\n    }\n}\n",
        ),
    ]);
    let found = index.audit(&[AuditQuery::Complexity(1)], 10).unwrap();
    let got: Vec<(&str, &str)> = found
        .iter()
        .map(|f| (f.file.as_str(), f.message.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("pick.js", "pick has cyclomatic complexity 7 (over 1)"),
            ("src/lib.rs", "pick has cyclomatic complexity 5 (over 1)")
        ]
    );
}
