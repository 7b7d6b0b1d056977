//! Statement-level localisation on a real sandbox: the traced run of the
//! failing test and the passing ones, scored by Ochiai.

use std::time::Duration;

use forq_sandbox::Sandbox;
use forq_search::brancher::Mutate;
use forq_search::oracle::{Judgement, Oracle};

use super::{backend, prepare, project, stack_of};

/// The warm root of `repo`, its oracle and judgement, and the templates
/// brancher over a fresh graph of it.
async fn with_templates(repo: &std::path::Path) -> (Box<dyn Sandbox>, Oracle, Judgement, Mutate) {
    let backend = backend().await;
    let stack = stack_of(repo);
    let (root, oracle, genesis) =
        prepare(&*backend, repo, stack.clone(), Duration::from_secs(120)).await;
    // Beside the sources, so it lives as long as the repository (the root
    // was copied from it before).
    let mut index = forq_graph::Index::open(&repo.join(".graph.db"), repo).unwrap();
    index.update().unwrap();
    (
        root,
        oracle,
        genesis,
        Mutate::new(index, stack).templates(true),
    )
}

/// A traced run's budget with no search clock to share.
fn full(oracle: &Oracle) -> Duration {
    forq_search::spectrum::trace_budget(oracle.timeout, None)
}

#[tokio::test]
async fn a_traced_run_killed_at_its_budget_keeps_the_tests_it_finished() {
    // A passing test the tracer runs after the failing one takes 6 s.
    let repo = project();
    let slow = super::TESTS.replace(
        "        self.assertEqual(mean([1, 2, 3]), 2)\n",
        "        self.assertEqual(mean([1, 2, 3]), 2)\n        import time\n        time.sleep(6)\n",
    );
    std::fs::write(repo.path().join("tests/test_stats.py"), slow).unwrap();
    let backend = backend().await;
    let stack = stack_of(repo.path());
    let (root, oracle, _) = prepare(&*backend, repo.path(), stack, Duration::from_secs(120)).await;
    let spectrum = forq_search::spectrum::trace(&*root, &oracle, Duration::from_secs(3))
        .await
        .expect("the failing test ended before the kill");
    assert!(spectrum.coverage.contains_key(&oracle.target[0]));
    assert!(
        !spectrum
            .coverage
            .contains_key("tests.test_stats.StatsTest.test_mean"),
        "{:?}",
        spectrum.coverage.keys()
    );
    // Killed before any test ended: no spectrum, and why.
    let err = forq_search::spectrum::trace(&*root, &oracle, Duration::from_millis(1))
        .await
        .unwrap_err();
    assert!(
        err.contains("killed at its budget (0.0 s) before a test ended"),
        "{err}"
    );
    root.destroy().await.unwrap();
}

#[tokio::test]
async fn the_lines_only_the_failing_test_runs_are_suspected_first() {
    let repo = project();
    let backend = backend().await;
    let stack = stack_of(repo.path());
    let (root, oracle, _) = prepare(&*backend, repo.path(), stack, Duration::from_secs(120)).await;
    assert_eq!(
        oracle.target,
        ["tests.test_stats.StatsTest.test_count_above"]
    );
    let spectrum = forq_search::spectrum::trace(&*root, &oracle, full(&oracle))
        .await
        .unwrap();
    // Every traced test ran, each under its own name.
    assert_eq!(spectrum.coverage.len(), 3, "{:?}", spectrum.coverage.keys());
    let ranked = spectrum.ochiai();
    let top: Vec<(&str, u32)> = ranked
        .iter()
        .filter(|l| l.score == 1.0)
        .map(|l| (l.file.as_str(), l.line))
        .collect();
    // count_above's body (lines 10-14 of stats.py, the `>=` on 12) is run
    // by the failing test alone; so is the test's own assertion.
    for line in 10..=14 {
        assert!(top.contains(&("stats.py", line)), "{line}: {top:?}");
    }
    // mean's and span's lines run only in passing tests: not suspected.
    assert!(
        !ranked
            .iter()
            .any(|l| l.file == "stats.py" && (l.line == 2 || l.line == 6)),
        "{ranked:?}"
    );
    // The root was not touched: the tracer worked in a fork.
    assert!(root
        .read_file(std::path::Path::new(".forq-trace/out.json"))
        .await
        .is_err());
    root.destroy().await.unwrap();
}

#[tokio::test]
async fn the_templates_search_reports_the_statements_it_suspected() {
    use forq_search::{search, Budget, SearchOptions};
    let repo = project();
    let (root, oracle, genesis, templates) = with_templates(repo.path()).await;
    let options = SearchOptions::default().budget(Budget::default().max_nodes(60).jobs(2));
    let out = search(&*root, &oracle, &genesis, &templates, &options)
        .await
        .unwrap();
    let winner = out.winner.expect("a green candidate");
    assert!(
        winner.patch.contains("+        if x > limit:\n"),
        "{}",
        winner.patch
    );
    // tree.json says which statements were suspected and why; the test
    // files are never among them.
    let suspected = &out.tree.suspected;
    let twelve = suspected
        .iter()
        .find(|l| l.file == "stats.py" && l.line == 12)
        .unwrap_or_else(|| panic!("{suspected:#?}"));
    assert_eq!((twelve.score, twelve.failing, twelve.passing), (1.0, 1, 0));
    assert!(suspected.iter().all(|l| !l.file.starts_with("tests/")));
    let json = serde_json::to_value(&out.tree).unwrap();
    assert_eq!(json["suspected"][0]["score"], 1.0);
    // Each candidate's hypothesis carries its line's suspicion.
    let node = &out.tree.nodes[winner.node];
    assert!(
        node.hypothesis.contains("(line suspicion 1.00)"),
        "{}",
        node.hypothesis
    );
    root.destroy().await.unwrap();
}

#[tokio::test]
async fn a_function_the_call_graph_cannot_reach_is_mutated_where_the_spectrum_points() {
    use forq_search::{search, Budget, SearchOptions};
    // `apply` calls the operations by name, through `globals()`: the graph
    // sees the test reach `apply` and nothing past it. Only the traced run
    // says `halve` ran in the failing test and in no passing one.
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(
        repo.path().join("ops.py"),
        "def double(x):\n    return x * 2\n\n\ndef halve(x):\n    return x // 3\n\n\ndef apply(name, x):\n    return globals()[name](x)\n",
    )
    .unwrap();
    std::fs::create_dir(repo.path().join("tests")).unwrap();
    std::fs::write(repo.path().join("tests/__init__.py"), "").unwrap();
    std::fs::write(
        repo.path().join("tests/test_ops.py"),
        "import unittest\n\nfrom ops import apply\n\n\nclass OpsTest(unittest.TestCase):\n    def test_double(self):\n        self.assertEqual(apply(\"double\", 4), 8)\n\n    def test_halve(self):\n        self.assertEqual(apply(\"halve\", 8), 4)\n",
    )
    .unwrap();
    let (root, oracle, genesis, templates) = with_templates(repo.path()).await;
    assert_eq!(oracle.target, ["tests.test_ops.OpsTest.test_halve"]);
    // The call graph alone never suspects `halve`.
    let graph = templates.localize(&oracle.target, &oracle.guard);
    assert!(graph.iter().all(|s| s.name != "halve"), "{graph:#?}");
    let options = SearchOptions::default().budget(Budget::default().max_nodes(40).jobs(2));
    let out = search(&*root, &oracle, &genesis, &templates, &options)
        .await
        .unwrap();
    let winner = out.winner.expect("a green candidate");
    assert!(
        winner.patch.contains("+    return x // 2\n"),
        "{}",
        winner.patch
    );
    assert!(
        out.tree.nodes[winner.node]
            .hypothesis
            .contains(" in halve: "),
        "{}",
        out.tree.nodes[winner.node].hypothesis
    );
    root.destroy().await.unwrap();
}

#[tokio::test]
async fn the_traced_run_keeps_where_a_failing_tests_error_was_raised() {
    // `share([5], 0)` divides by the sum of no parts: the error is raised
    // in `ratio`, called from `share`; both lines also run in passing
    // tests, so only the traceback says where the failure came from.
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(
        repo.path().join("parts.py"),
        "def ratio(a, b):\n    return a / b\n\n\ndef share(parts, i):\n    return ratio(parts[i], sum(parts[1:]))\n",
    )
    .unwrap();
    std::fs::create_dir(repo.path().join("tests")).unwrap();
    std::fs::write(repo.path().join("tests/__init__.py"), "").unwrap();
    std::fs::write(
        repo.path().join("tests/test_parts.py"),
        "import unittest\n\nfrom parts import ratio, share\n\n\nclass PartsTest(unittest.TestCase):\n    def test_ratio(self):\n        self.assertEqual(ratio(1, 2), 0.5)\n\n    def test_share_of_nothing(self):\n        self.assertEqual(share([0, 1], 0), 0.0)\n\n    def test_share_of_one_part(self):\n        self.assertEqual(share([5], 0), 1.0)\n",
    )
    .unwrap();
    let (root, oracle, _, _) = with_templates(repo.path()).await;
    assert_eq!(
        oracle.target,
        ["tests.test_parts.PartsTest.test_share_of_one_part"]
    );
    let spectrum = forq_search::spectrum::trace(&*root, &oracle, full(&oracle))
        .await
        .unwrap();
    let frames = &spectrum.raised[&oracle.target[0]];
    let in_parts: Vec<u32> = frames
        .iter()
        .filter(|(f, _)| f == "parts.py")
        .map(|(_, l)| *l)
        .collect();
    assert_eq!(in_parts, [6, 2], "{frames:?}");
    let ranked = spectrum.suspects();
    let line = |n: u32| {
        ranked
            .iter()
            .find(|l| l.file == "parts.py" && l.line == n)
            .unwrap_or_else(|| panic!("{ranked:#?}"))
    };
    assert!(line(2).raised && line(2).score == 1.0, "{ranked:#?}");
    assert!(
        line(6).raised && (line(6).score - 0.9).abs() < 1e-9,
        "{ranked:#?}"
    );
    // Ochiai alone ranks them lower: other tests ran them too.
    let plain = spectrum.ochiai();
    assert!(
        plain.iter().all(|l| l.file != "parts.py" || l.score < 0.9),
        "{plain:#?}"
    );
    root.destroy().await.unwrap();
}

#[tokio::test]
async fn a_name_error_puts_the_names_it_may_have_meant_first() {
    use forq_search::{search, Budget, SearchOptions};
    // `_width` is not defined: the module imports `width` as
    // `text_width` (wcwidth 0.7.0's bug, in small). The function around it
    // offers a dozen other candidates; the error says which line and which
    // name, so the name the file binds comes first.
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(
        repo.path().join("widths.py"),
        "def width(text):\n    return len(text)\n",
    )
    .unwrap();
    std::fs::write(
        repo.path().join("wrap.py"),
        "from widths import width as text_width\n\n\ndef pad(text, size, fill=' '):\n    if size < 0 or fill == '':\n        return text\n    gap = size - _width(text)\n    return text + fill * max(gap, 0)\n\n\ndef trim(text, size):\n    return text[:size]\n",
    )
    .unwrap();
    std::fs::create_dir(repo.path().join("tests")).unwrap();
    std::fs::write(repo.path().join("tests/__init__.py"), "").unwrap();
    std::fs::write(
        repo.path().join("tests/test_wrap.py"),
        "import unittest\n\nfrom wrap import pad, trim\n\n\nclass WrapTest(unittest.TestCase):\n    def test_trim(self):\n        self.assertEqual(trim('abc', 2), 'ab')\n\n    def test_pad(self):\n        self.assertEqual(pad('ab', 4), 'ab  ')\n",
    )
    .unwrap();
    let (root, oracle, genesis, templates) = with_templates(repo.path()).await;
    let spectrum = forq_search::spectrum::trace(&*root, &oracle, full(&oracle))
        .await
        .unwrap();
    let raised = spectrum
        .suspects()
        .into_iter()
        .find(|l| l.file == "wrap.py" && l.line == 7)
        .expect("line 7 suspected");
    assert_eq!(raised.undefined_name(), Some("_width"), "{raised:?}");
    let options = SearchOptions::default().budget(Budget::default().max_nodes(60).jobs(1));
    let out = search(&*root, &oracle, &genesis, &templates, &options)
        .await
        .unwrap();
    let winner = out.winner.expect("a green candidate");
    assert!(
        winner
            .patch
            .contains("+    gap = size - text_width(text)\n"),
        "{}",
        winner.patch
    );
    // The first candidate tried: the likeliest by far.
    let tried: Vec<String> = out
        .tree
        .nodes
        .iter()
        .skip(1)
        .filter(|n| {
            matches!(
                n.status,
                forq_search::tree::Status::Red | forq_search::tree::Status::Green
            )
        })
        .map(|n| format!("{:.4} {}", n.prior, n.hypothesis))
        .collect();
    assert_eq!(out.evaluated, 1, "{tried:#?}");
    assert!(
        tried[0].contains("undefined name `_width` -> `text_width`"),
        "{tried:#?}"
    );
    let json = serde_json::to_value(&out.tree).unwrap();
    let line7 = json["suspected"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["line"] == 7)
        .unwrap();
    assert_eq!(line7["error"], "NameError: name '_width' is not defined");
    root.destroy().await.unwrap();
}

/// Writes `files` (path, text) under a new temporary directory.
fn repo_of(files: &[(&str, &str)]) -> tempfile::TempDir {
    let repo = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let path = repo.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    repo
}

/// The hypothesis of the first candidate the search tried, and the
/// winner's patch.
async fn first_try(
    root: &dyn Sandbox,
    oracle: &Oracle,
    genesis: &Judgement,
    templates: &Mutate,
) -> (String, String) {
    use forq_search::{search, Budget, SearchOptions};
    let options = SearchOptions::default().budget(Budget::default().max_nodes(60).jobs(1));
    let out = search(root, oracle, genesis, templates, &options)
        .await
        .unwrap();
    let tried = out
        .tree
        .nodes
        .iter()
        .skip(1)
        .find(|n| {
            matches!(
                n.status,
                forq_search::tree::Status::Red | forq_search::tree::Status::Green
            )
        })
        .map(|n| n.hypothesis.clone())
        .unwrap_or_default();
    let winner = out
        .winner
        .unwrap_or_else(|| panic!("no green candidate; first tried: {tried}"));
    (tried, winner.patch)
}

#[tokio::test]
async fn an_error_escaping_where_the_test_expected_another_is_turned_into_it() {
    // `first(b'')` indexes an empty label: `IndexError` escapes where the
    // test expected the module's own `LabelError` (idna 2.10's bug, in
    // small). The tracer keeps the expectation beside the error.
    let repo = repo_of(&[
        (
            "labels.py",
            "class LabelError(Exception):\n    pass\n\n\ndef first(label):\n    head = label.strip()\n    if head[0] == '-':\n        raise LabelError('leading hyphen')\n    return head[0]\n\n\ndef size(label):\n    return len(label.strip())\n",
        ),
        ("tests/__init__.py", ""),
        (
            "tests/test_labels.py",
            "import unittest\n\nfrom labels import LabelError, first, size\n\n\nclass LabelsTest(unittest.TestCase):\n    def test_first(self):\n        self.assertEqual(first(' ab '), 'a')\n        self.assertRaises(LabelError, first, '-a')\n\n    def test_size(self):\n        self.assertEqual(size(' ab '), 2)\n\n    def test_empty(self):\n        self.assertRaises(LabelError, first, '  ')\n",
        ),
    ]);
    let (root, oracle, genesis, templates) = with_templates(repo.path()).await;
    assert_eq!(oracle.target, ["tests.test_labels.LabelsTest.test_empty"]);
    let spectrum = forq_search::spectrum::trace(&*root, &oracle, full(&oracle))
        .await
        .unwrap();
    let expected = &spectrum.expected[&oracle.target[0]];
    assert_eq!(
        (expected.class.as_str(), expected.module.as_str()),
        ("LabelError", "labels")
    );
    // The met expectation of test_first left nothing behind.
    assert_eq!(spectrum.expected.len(), 1, "{:?}", spectrum.expected);
    let line7 = spectrum
        .suspects()
        .into_iter()
        .find(|l| l.file == "labels.py" && l.line == 7)
        .unwrap();
    assert_eq!(line7.error_class(), Some("IndexError"));
    assert_eq!(line7.expected.as_ref(), Some(expected));
    assert!(spectrum.unmet().is_empty());
    let (tried, patch) = first_try(&*root, &oracle, &genesis, &templates).await;
    assert!(tried.contains("raise expected"), "{tried}");
    assert!(
        patch.contains("+    if not head:\n+        raise LabelError(\"invalid head\")\n"),
        "{patch}"
    );
    root.destroy().await.unwrap();
}

#[tokio::test]
async fn a_check_pytest_expected_and_never_saw_raised_is_added() {
    // pytest's `raises(ValueError, match=…)` saw nothing raised: the
    // check is missing (more-itertools 8.9.0's `chunked`, in small). The
    // message the test asks for names the parameter and the check.
    let repo = repo_of(&[
        (
            "chunks.py",
            "def chunked(items, n, strict=False):\n    \"\"\"Lists of n items.\"\"\"\n    size = len(items) if n is None else n\n    out = [items[i : i + size] for i in range(0, len(items), size)]\n    if strict:\n        if out and len(out[-1]) != size:\n            raise ValueError(\"items is not divisible by n\")\n    return out\n",
        ),
        ("requirements-test.txt", "pytest\n"),
        (
            "tests/test_chunks.py",
            "import pytest\n\nfrom chunks import chunked\n\n\ndef test_chunks():\n    assert chunked([1, 2, 3], 2) == [[1, 2], [3]]\n\n\ndef test_whole():\n    assert chunked([1, 2], None) == [[1, 2]]\n\n\ndef test_strict():\n    with pytest.raises(ValueError, match=\"divisible\"):\n        chunked([1, 2, 3], 2, strict=True)\n\n\ndef test_strict_needs_a_size():\n    with pytest.raises(ValueError, match=\"n must not be None when strict\"):\n        chunked([1, 2, 3], None, strict=True)\n",
        ),
    ]);
    let (root, oracle, genesis, templates) = with_templates(repo.path()).await;
    assert_eq!(
        oracle.target,
        ["tests/test_chunks.py::test_strict_needs_a_size"]
    );
    let spectrum = forq_search::spectrum::trace(&*root, &oracle, full(&oracle))
        .await
        .unwrap();
    let error = &spectrum.errors[&oracle.target[0]];
    assert!(error.starts_with("Failed: DID NOT RAISE"), "{error}");
    let unmet = spectrum.unmet();
    assert_eq!(unmet.len(), 1, "{unmet:?}");
    assert_eq!(unmet[0].class, "ValueError");
    assert_eq!(
        unmet[0].message().as_deref(),
        Some("n must not be None when strict")
    );
    let (tried, patch) = first_try(&*root, &oracle, &genesis, &templates).await;
    assert!(tried.contains("missing raise"), "{tried}");
    assert!(
        patch.contains(
            "+        if n is None:\n+            raise ValueError(\"n must not be None when strict\")\n"
        ),
        "{patch}"
    );
    root.destroy().await.unwrap();
}

#[tokio::test]
async fn a_message_unittest_found_unequal_is_rewritten_where_a_literal_wrote_it() {
    // `assertEqual` saw `Hello, Ann!` where the test wanted `Hello, Ann.`:
    // the literal that wrote the `!` writes the `.`.
    let repo = repo_of(&[
        (
            "greet.py",
            "def greeting(name):\n    \"\"\"A greeting.\"\"\"\n    if not name:\n        name = 'you'\n    return 'Hello, %s!' % name\n\n\ndef initials(name):\n    return ''.join(w[0] for w in name.split())\n",
        ),
        ("tests/__init__.py", ""),
        (
            "tests/test_greet.py",
            "import unittest\n\nfrom greet import greeting, initials\n\n\nclass GreetTest(unittest.TestCase):\n    def test_greeting(self):\n        self.assertEqual(greeting('Ann'), 'Hello, Ann.')\n\n    def test_initials(self):\n        self.assertEqual(initials('Ann Lee'), 'AL')\n",
        ),
    ]);
    let (root, oracle, genesis, templates) = with_templates(repo.path()).await;
    assert_eq!(oracle.target, ["tests.test_greet.GreetTest.test_greeting"]);
    let spectrum = forq_search::spectrum::trace(&*root, &oracle, full(&oracle))
        .await
        .unwrap();
    // Only the failing equality is kept, as the test wrote it.
    assert_eq!(
        spectrum.compared(),
        [forq_search::spectrum::Compared::Text(
            "Hello, Ann!".into(),
            "Hello, Ann.".into()
        )]
    );
    assert_eq!(spectrum.compared.len(), 1, "{:?}", spectrum.compared);
    let (tried, patch) = first_try(&*root, &oracle, &genesis, &templates).await;
    assert!(tried.contains("expected value"), "{tried}");
    assert!(
        patch.contains("-    return 'Hello, %s!' % name\n+    return 'Hello, %s.' % name\n"),
        "{patch}"
    );
    root.destroy().await.unwrap();
}

#[tokio::test]
async fn the_first_differing_items_of_lists_pytest_compared_are_kept() {
    // `assert scaled([1, 2]) == [2, 4]` saw `[3, 6]`: the first differing
    // items, 3 and 2, and the literal 3 becomes 2.
    let repo = repo_of(&[
        (
            "scale.py",
            "def scaled(xs):\n    \"\"\"Each item doubled.\"\"\"\n    return [x * 3 for x in xs]\n\n\ndef total(xs):\n    return sum(xs)\n",
        ),
        ("requirements-test.txt", "pytest\n"),
        (
            "tests/test_scale.py",
            "from scale import scaled, total\n\n\ndef test_scaled():\n    assert scaled([1, 2]) == [2, 4]\n\n\ndef test_total():\n    assert total([1, 2]) == 3\n",
        ),
    ]);
    let (root, oracle, genesis, templates) = with_templates(repo.path()).await;
    assert_eq!(oracle.target, ["tests/test_scale.py::test_scaled"]);
    let spectrum = forq_search::spectrum::trace(&*root, &oracle, full(&oracle))
        .await
        .unwrap();
    assert_eq!(
        spectrum.compared(),
        [forq_search::spectrum::Compared::Number(
            "3".into(),
            "2".into()
        )]
    );
    let (tried, patch) = first_try(&*root, &oracle, &genesis, &templates).await;
    assert!(tried.contains("expected value"), "{tried}");
    assert!(
        patch.contains("+    return [x * 2 for x in xs]\n"),
        "{patch}"
    );
    root.destroy().await.unwrap();
}

#[tokio::test]
async fn a_test_that_loops_under_the_tracer_is_ended_where_it_loops_and_the_run_goes_on() {
    // The oracle is taken of a version that fails; the traced root holds
    // one that loops forever in the failing test (`i` never moves).
    let repo = repo_of(&[
        (
            "seek.py",
            "def find(xs, x):\n    i = 0\n    while i < len(xs):\n        if xs[i] == x:\n            return i\n        i += 2\n    return -1\n\n\ndef size(xs):\n    return len(xs)\n",
        ),
        ("tests/__init__.py", ""),
        (
            "tests/test_seek.py",
            "import unittest\n\nfrom seek import find, size\n\n\nclass SeekTest(unittest.TestCase):\n    def test_find(self):\n        self.assertEqual(find([1, 2, 3], 2), 1)\n\n    def test_size(self):\n        self.assertEqual(size([1, 2]), 2)\n",
        ),
    ]);
    let (root, mut oracle, _, _) = with_templates(repo.path()).await;
    assert_eq!(oracle.target, ["tests.test_seek.SeekTest.test_find"]);
    let looping = std::fs::read_to_string(repo.path().join("seek.py"))
        .unwrap()
        .replace("        i += 2\n", "        i = i\n");
    root.write_file(std::path::Path::new("seek.py"), looping.as_bytes())
        .await
        .unwrap();
    // Each test's own budget: 0.3 s, so 1 s under the tracer.
    oracle.idle = Some(Duration::from_millis(300));
    let spectrum = forq_search::spectrum::trace(&*root, &oracle, full(&oracle))
        .await
        .unwrap();
    let target = &oracle.target[0];
    assert!(
        spectrum.errors[target].starts_with("TestHung"),
        "{spectrum:?}"
    );
    // Ended inside the loop: that line is suspected as where the
    // failure was raised, with the hang as its error.
    let (file, line) = spectrum.raised[target].last().unwrap().clone();
    assert_eq!(file, "seek.py");
    assert!((3..=6).contains(&line), "{line}");
    let at = spectrum
        .suspects()
        .into_iter()
        .find(|l| l.file == "seek.py" && l.line == line)
        .unwrap();
    assert!(at.raised && at.score >= 1.0, "{at:?}");
    assert_eq!(at.error_class(), Some("TestHung"));
    // The passing test after it was traced too.
    assert!(
        spectrum
            .coverage
            .contains_key("tests.test_seek.SeekTest.test_size"),
        "{spectrum:?}"
    );
    root.destroy().await.unwrap();
}
