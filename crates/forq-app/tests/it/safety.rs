//! Change safety on real git repositories in Python, JavaScript and Rust:
//! a base commit, a patch committed on it, the check between the two.

use std::path::Path;

use forq_app::contract::{self, Change, Class, Classifier};
use forq_app::git::git;

/// A repository at `dir` with `files` committed as the base; returns the
/// base commit.
async fn repo(dir: &Path, files: &[(&str, &str)]) -> String {
    for (path, text) in files {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    git(dir, &["init", "-q", "-b", "main"]).await.unwrap();
    git(dir, &["add", "-A"]).await.unwrap();
    git(dir, &["commit", "-q", "-m", "base"]).await.unwrap();
    git(dir, &["rev-parse", "HEAD"]).await.unwrap()
}

/// Commits `files` as the patch.
async fn patch(dir: &Path, files: &[(&str, &str)]) {
    for (path, text) in files {
        std::fs::write(dir.join(path), text).unwrap();
    }
    git(dir, &["commit", "-q", "-am", "patch"]).await.unwrap();
}

const PY_BASE: &str = "\
def area(w, h):
    return w * h


def report(w, h):
    return \"area \" + str(area(w, h))


def page(w, h):
    return report(w, h)


def site(w, h):
    return page(w, h)
";

#[tokio::test]
async fn a_python_signature_change_ripples_to_its_uncovered_callers() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let base = repo(&ws, &[("geo.py", PY_BASE)]).await;
    // The fix adds a parameter: report() still calls area(w, h), which no
    // test covers.
    patch(
        &ws,
        &[(
            "geo.py",
            &PY_BASE.replace("def area(w, h):", "def area(w, h, scale):"),
        )],
    )
    .await;
    let scratch = dir.path().join("scratch");
    let report = contract::check(&ws, &base, &scratch, 3, None)
        .await
        .unwrap();
    assert_eq!(report.changed.len(), 1, "{report:#?}");
    let area = &report.changed[0];
    assert_eq!(
        (area.qualname.as_str(), area.change, area.class),
        ("area", Change::Signature, Class::C)
    );
    assert!(
        area.reason.contains("def area(w, h, scale):"),
        "{}",
        area.reason
    );
    let callers: Vec<(&str, u32)> = report
        .findings
        .iter()
        .map(|f| (f.caller.rsplit('#').next().unwrap(), f.depth))
        .collect();
    assert_eq!(
        callers,
        [
            ("report:function", 1),
            ("page:function", 2),
            ("site:function", 3)
        ],
        "{report:#?}"
    );
    assert!(report.unprocessed.is_empty());
    assert!(report.has_findings());
    assert!(
        report
            .markdown()
            .contains("`area` (function, `geo.py`:1): C"),
        "{}",
        report.markdown()
    );

    // Depth exhausted: callers beyond it are listed as not processed.
    let shallow = contract::check(&ws, &base, &scratch, 1, None)
        .await
        .unwrap();
    assert_eq!(shallow.findings.len(), 1);
    assert_eq!(shallow.unprocessed.len(), 1, "{shallow:#?}");
    assert!(shallow.unprocessed[0].ends_with("page:function"));
    assert!(
        shallow.summary().contains("beyond depth 1 not processed"),
        "{}",
        shallow.summary()
    );
}

#[tokio::test]
async fn a_body_change_offline_is_unclassified_and_does_not_ripple() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let base = repo(&ws, &[("geo.py", PY_BASE)]).await;
    patch(
        &ws,
        &[("geo.py", &PY_BASE.replace("return w * h", "return h * w"))],
    )
    .await;
    let report = contract::check(&ws, &base, &dir.path().join("s"), 3, None)
        .await
        .unwrap();
    assert_eq!(report.changed.len(), 1);
    assert_eq!(report.changed[0].change, Change::Body);
    assert_eq!(
        report.changed[0].class,
        Class::Unclassified,
        "never silently A"
    );
    assert!(report.findings.is_empty());
    assert!(!report.has_findings());
}

/// Answers every classification with one class, counting calls.
struct Fixed(Class, std::sync::atomic::AtomicUsize);

#[async_trait::async_trait]
impl Classifier for Fixed {
    async fn classify(&self, _: &str, _: &str, context: &str) -> Option<(Class, String)> {
        self.1.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        assert!(
            context.contains("calls it at"),
            "the callers go with the question"
        );
        Some((self.0, "judged".to_owned()))
    }
}

#[tokio::test]
async fn a_javascript_change_judged_a_does_not_ripple_and_c_does() {
    let base_js = "\
function total(items) {
  return items.reduce((a, b) => a + b, 0);
}

function invoice(items) {
  return 'total ' + total(items);
}

module.exports = { total, invoice };
";
    let fixed = base_js.replace("a + b, 0", "b + a, 0");
    for (class, ripples) in [(Class::A, false), (Class::C, true)] {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        let base = repo(&ws, &[("lib/total.js", base_js)]).await;
        patch(&ws, &[("lib/total.js", &fixed)]).await;
        let model = Fixed(class, Default::default());
        let report = contract::check(&ws, &base, &dir.path().join("s"), 3, Some(&model))
            .await
            .unwrap();
        assert_eq!(model.1.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert_eq!(report.changed.len(), 1, "{report:#?}");
        assert_eq!(report.changed[0].qualname, "total");
        assert_eq!(report.changed[0].class, class);
        assert_eq!(!report.findings.is_empty(), ripples, "{report:#?}");
        if ripples {
            assert!(report.findings[0].caller.ends_with("invoice:function"));
        }
    }
}

#[tokio::test]
async fn a_removed_rust_function_is_incompatible() {
    let lib = "\
pub fn clamp(x: i32, lo: i32, hi: i32) -> i32 {
    x.max(lo).min(hi)
}

pub fn old_clamp(x: i32) -> i32 {
    clamp(x, 0, 10)
}

pub fn unit(x: i32) -> i32 {
    x.max(0).min(1)
}
";
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let base = repo(&ws, &[("src/lib.rs", lib)]).await;
    let without = lib.replace(
        "pub fn old_clamp(x: i32) -> i32 {\n    clamp(x, 0, 10)\n}\n\n",
        "",
    );
    patch(&ws, &[("src/lib.rs", &without)]).await;
    let report = contract::check(&ws, &base, &dir.path().join("s"), 3, None)
        .await
        .unwrap();
    let removed: Vec<_> = report
        .changed
        .iter()
        .map(|c| (c.qualname.as_str(), c.change, c.class))
        .collect();
    assert_eq!(
        removed,
        [("old_clamp", Change::Removed, Class::C)],
        "{report:#?}"
    );
    // Unchanged definitions that moved up a few lines are not changes.
    assert!(!report.changed.iter().any(|c| c.qualname == "unit"));
}
