//! The parsers for go test, cargo-nextest, vitest, meson test, Maven,
//! Gradle and JUnit XML reports.

use forq_bootstrap::evidence::{self, Outcome};

use super::outcomes;

macro_rules! report {
    ($name:literal) => {
        (
            $name.to_owned(),
            include_str!(concat!("../fixtures/output/", $name)).to_owned(),
        )
    };
}

fn calc(id: &str) -> String {
    format!("example.com/gomixed/calc::{id}")
}

#[test]
fn go_verbose_and_json_agree_and_count_leaves_only() {
    for ev in [
        evidence::go_test(capture!("go_verbose")).unwrap(),
        evidence::go_test_json(capture!("go_json")).unwrap(),
    ] {
        // TestTable is a container of two cases: five leaves, not six.
        assert_eq!(
            (ev.passed, ev.failed, ev.skipped, ev.errors),
            (2, 2, 1, 0),
            "{ev:?}"
        );
        assert_eq!(
            outcomes(&ev),
            [
                (calc("TestAdd"), Outcome::Passed),
                (calc("TestSkip"), Outcome::Skipped),
                (calc("TestSub"), Outcome::Failed),
                (calc("TestTable"), Outcome::Failed),
                (calc("TestTable/one"), Outcome::Failed),
                (calc("TestTable/zero"), Outcome::Passed),
            ]
        );
        assert!(
            ev.lines
                .iter()
                .any(|l| l.starts_with("FAIL\texample.com/gomixed/calc")),
            "{:?}",
            ev.lines
        );
    }
}

#[test]
fn a_go_build_failure_is_a_collection_error_not_a_test() {
    for ev in [
        evidence::go_test(capture!("go_broken")).unwrap(),
        evidence::go_test_json(capture!("go_json_broken")).unwrap(),
    ] {
        assert_eq!((ev.executed(), ev.collection_errors), (0, 1), "{ev:?}");
        assert!(ev.tests.is_empty());
    }
    // Neither parser reads the other's format, nor another runner's.
    assert!(evidence::go_test_json(capture!("go_verbose")).is_none());
    assert!(evidence::go_test(capture!("cargo_mixed")).is_none());
}

#[test]
fn nextest_counts_and_per_test_results() {
    let ev = evidence::nextest(capture!("nextest_mixed")).unwrap();
    assert_eq!((ev.passed, ev.failed, ev.skipped, ev.errors), (2, 1, 1, 0));
    assert_eq!(
        outcomes(&ev),
        [
            ("mixed::api::public_api".to_owned(), Outcome::Passed),
            ("mixed::tests::adds".to_owned(), Outcome::Passed),
            ("mixed::tests::fails".to_owned(), Outcome::Failed),
        ]
    );
    assert!(ev.lines.iter().any(|l| l.contains("3 tests run")));
    // cargo test's output is not nextest's.
    assert!(evidence::nextest(capture!("cargo_mixed")).is_none());
}

#[test]
fn vitest_counts_and_per_test_results_from_either_reporter() {
    let plain = evidence::vitest(capture!("vitest_mixed")).unwrap();
    assert_eq!((plain.passed, plain.failed, plain.skipped), (1, 1, 1));
    // The default reporter names the failing tests only.
    assert_eq!(
        outcomes(&plain),
        [(
            "test/calc.test.js > calc > subtracts".to_owned(),
            Outcome::Failed
        )]
    );
    let verbose = evidence::vitest(capture!("vitest_verbose")).unwrap();
    assert_eq!(
        outcomes(&verbose),
        [
            (
                "test/calc.test.js > calc > adds".to_owned(),
                Outcome::Passed
            ),
            (
                "test/calc.test.js > calc > later".to_owned(),
                Outcome::Skipped
            ),
            (
                "test/calc.test.js > calc > subtracts".to_owned(),
                Outcome::Failed
            ),
        ]
    );
    let broken = evidence::vitest(capture!("vitest_import_error")).unwrap();
    assert_eq!((broken.executed(), broken.collection_errors), (2, 1));
    // jest's `Tests:` summary is not vitest's `Tests  …`.
    assert!(evidence::vitest(capture!("jest_mixed")).is_none());
    assert!(evidence::jest(capture!("vitest_mixed")).is_none());
}

#[test]
fn meson_counts_per_test_results_and_no_tests() {
    let ev = evidence::meson(capture!("meson_mixed")).unwrap();
    assert_eq!((ev.passed, ev.failed, ev.skipped, ev.errors), (2, 1, 1, 0));
    assert_eq!(
        outcomes(&ev),
        [
            ("adds".to_owned(), Outcome::Passed),
            ("adds_zero".to_owned(), Outcome::Passed),
            ("later".to_owned(), Outcome::Skipped),
            ("subtracts".to_owned(), Outcome::Failed),
        ]
    );
    let none = evidence::meson(capture!("meson_none")).unwrap();
    assert_eq!(none.executed(), 0);
    assert_eq!(none.lines, ["No tests defined."]);
}

#[test]
fn junit_xml_reports_of_pytest_ctest_and_meson() {
    let ev = evidence::junit_reports(&[report!("junit_pytest.xml")]).unwrap();
    assert_eq!((ev.passed, ev.failed, ev.skipped, ev.errors), (3, 1, 1, 0));
    assert_eq!(ev.tests["tests.test_calc.test_add"], Outcome::Failed);
    assert_eq!(ev.tests["tests.test_calc.test_param[2]"], Outcome::Passed);
    assert_eq!(ev.tests["tests.test_calc.test_skipped"], Outcome::Skipped);
    // Several reports add up, one evidence line each.
    let ev =
        evidence::junit_reports(&[report!("junit_ctest.xml"), report!("junit_meson.xml")]).unwrap();
    assert_eq!((ev.passed, ev.failed, ev.skipped), (4, 2, 1));
    assert_eq!(ev.tests["subtracts"], Outcome::Failed);
    assert_eq!(ev.tests["mixed.later"], Outcome::Skipped);
    assert_eq!(ev.lines.len(), 2);
    assert!(ev.lines[0].starts_with("junit_ctest.xml: 2 passed, 1 failed"));
    // Not a report: nothing.
    assert!(evidence::junit_reports(&[("x.xml".to_owned(), "<html></html>".to_owned())]).is_none());
    assert!(
        evidence::junit_reports(&[("x.xml".to_owned(), "<testsuite><testcase".to_owned())])
            .is_none()
    );
}

/// Surefire 3's console report. Maven Central is not reachable from this
/// machine, so this one is written by hand in Surefire's documented shape
/// (two modules, one with a failure and an error); `maven_unresolved` is a
/// real capture.
const SUREFIRE: &str = "\
[INFO] -------------------------------------------------------
[INFO]  T E S T S
[INFO] -------------------------------------------------------
[INFO] Running calc.CalcTest
[ERROR] Tests run: 4, Failures: 1, Errors: 1, Skipped: 1, Time elapsed: 0.041 s <<< FAILURE! -- in calc.CalcTest
[ERROR] calc.CalcTest.subtracts -- Time elapsed: 0.005 s <<< FAILURE!
org.opentest4j.AssertionFailedError: expected: <2> but was: <4>
[ERROR] calc.CalcTest.throwsError -- Time elapsed: 0.001 s <<< ERROR!
java.lang.IllegalStateException: boom
[INFO] 
[INFO] Results:
[INFO] 
[ERROR] Failures: 
[ERROR]   CalcTest.subtracts:13 expected: <2> but was: <4>
[ERROR] Errors: 
[ERROR]   CalcTest.throwsError:19 IllegalState boom
[INFO] 
[ERROR] Tests run: 4, Failures: 1, Errors: 1, Skipped: 1
[INFO] Running util.UtilTest
[INFO] Tests run: 2, Failures: 0, Errors: 0, Skipped: 0, Time elapsed: 0.01 s -- in util.UtilTest
[INFO] 
[INFO] Results:
[INFO] 
[INFO] Tests run: 2, Failures: 0, Errors: 0, Skipped: 0
[INFO] BUILD FAILURE
";

#[test]
fn maven_sums_module_totals_and_names_failing_tests() {
    let ev = evidence::maven(SUREFIRE).unwrap();
    assert_eq!((ev.passed, ev.failed, ev.skipped, ev.errors), (3, 1, 1, 1));
    assert_eq!(
        outcomes(&ev),
        [
            ("calc.CalcTest.subtracts".to_owned(), Outcome::Failed),
            ("calc.CalcTest.throwsError".to_owned(), Outcome::Error),
        ]
    );
    assert_eq!(ev.lines.len(), 2);
    // A build that never reached the tests is no evidence.
    assert!(evidence::maven(capture!("maven_unresolved")).is_none());
}

#[test]
fn gradle_counts_a_failing_run_and_a_green_one_is_no_console_evidence() {
    let failing = "\n> Task :test\n\nCalcTest > subtracts() FAILED\n    org.opentest4j.AssertionFailedError at CalcTest.java:13\n\n4 tests completed, 1 failed, 1 skipped\n\n> Task :test FAILED\n";
    let ev = evidence::gradle(failing).unwrap();
    assert_eq!((ev.passed, ev.failed, ev.skipped), (2, 1, 1));
    assert_eq!(ev.tests["CalcTest.subtracts"], Outcome::Failed);
    assert!(evidence::gradle("> Task :test\n\nBUILD SUCCESSFUL in 3s\n").is_none());
}

#[test]
fn tape_tap_counts_with_and_without_a_fail_line() {
    let mixed = evidence::node_test(capture!("tape_mixed")).unwrap();
    assert_eq!((mixed.passed, mixed.failed), (1, 1));
    // All green: tape prints no `# fail` line at all.
    let green = evidence::node_test(capture!("tape_green")).unwrap();
    assert_eq!((green.passed, green.failed, green.executed()), (1, 0, 1));
}

#[test]
fn a_pytest_run_with_only_a_warning_is_evidence_of_nothing_run() {
    // The summary names no test, only the warning: still pytest's summary.
    let ev = evidence::pytest(capture!("pytest_no_testpaths")).unwrap();
    assert_eq!(ev.executed(), 0);
    assert!(
        ev.lines.iter().any(|l| l.contains("1 warning in")),
        "{:?}",
        ev.lines
    );
}

#[test]
fn pytest_verbose_lines_give_the_same_per_test_results_as_the_summary() {
    let verbose = evidence::pytest(capture!("pytest_verbose")).unwrap();
    let summary = evidence::pytest(capture!("pytest_mixed")).unwrap();
    assert_eq!((verbose.passed, verbose.failed, verbose.skipped), (3, 1, 1));
    // -v also names the skipped test, which -rA's summary lists without an id.
    let mut expected = summary.tests.clone();
    expected.insert(
        "tests/test_calc.py::test_skipped".to_owned(),
        Outcome::Skipped,
    );
    assert_eq!(verbose.tests, expected);
    assert_eq!(verbose.lines[0], "collected 5 items");
}
