//! Whole searches on the seeded project.

use std::time::Duration;

use forq_bootstrap::Stack;
use forq_search::brancher::{Mutate, Patches};
use forq_search::candidate::{Candidate, Change};
use forq_search::tree::{Status, Tree};
use forq_search::{search, Budget, SearchOptions};

use super::{backend, prepare, project, stack_of, STATS};

#[tokio::test]
async fn mutate_finds_the_seeded_comparison_bug() {
    let repo = project();
    let backend = backend().await;
    let stack = stack_of(repo.path());
    let (root, oracle, genesis) = prepare(
        &*backend,
        repo.path(),
        stack.clone(),
        Duration::from_secs(60),
    )
    .await;
    assert_eq!(
        oracle.target,
        ["tests.test_stats.StatsTest.test_count_above"]
    );
    assert_eq!(oracle.guard.len(), 2);
    let db = tempfile::tempdir().unwrap();
    let mut index = forq_graph::Index::open(&db.path().join("g.db"), repo.path()).unwrap();
    index.update().unwrap();
    let mutate = Mutate::new(index, stack);
    let suspects = mutate.localize(&oracle.target, &oracle.guard);
    assert_eq!(suspects[0].name, "count_above", "{suspects:#?}");
    let options = SearchOptions::default().budget(Budget::default().max_nodes(60).jobs(2));
    let out = search(&*root, &oracle, &genesis, &mutate, &options)
        .await
        .unwrap();
    let winner = out.winner.expect("a green candidate");
    assert!(
        winner
            .patch
            .contains("-        if x >= limit:\n+        if x > limit:\n"),
        "{}",
        winner.patch
    );
    assert_eq!(winner.diff_lines, 2);
    assert_eq!(out.tree.nodes[winner.node].status, Status::Green);
    // The node carries its change, for a viewer of the tree: the changed
    // region with two lines of context on each side.
    let change = &out.tree.nodes[winner.node].change;
    assert!(
        change.starts_with("--- a/stats.py\n+++ b/stats.py\n@@ -"),
        "{change}"
    );
    assert!(
        change.contains("\n-        if x >= limit:\n+        if x > limit:\n"),
        "{change}"
    );
    assert_eq!(
        change.lines().filter(|l| l.starts_with(' ')).count(),
        4,
        "{change}"
    );
    assert_eq!(out.tree.best, Some(winner.node));
    // Best-first went to the localised function first: few candidates.
    assert!(out.evaluated <= 20, "{} evaluated", out.evaluated);
    // The repository itself is untouched; the winner's sandbox holds the fix.
    assert_eq!(
        std::fs::read_to_string(repo.path().join("stats.py")).unwrap(),
        STATS
    );
    let fixed = winner.sandbox.read_file("stats.py".as_ref()).await.unwrap();
    assert!(String::from_utf8(fixed).unwrap().contains("if x > limit:"));
    winner.sandbox.destroy().await.unwrap();
    root.destroy().await.unwrap();
}

/// A search/replace candidate on stats.py.
fn replace(name: &str, old: &str, new: &str) -> Candidate {
    Candidate {
        hypothesis: name.to_owned(),
        changes: vec![Change::Replace {
            path: "stats.py".to_owned(),
            old: old.to_owned(),
            new: new.to_owned(),
        }],
        prior: 0.0,
    }
}

/// Processes whose environment holds `marker`.
fn processes_with(marker: &str) -> usize {
    let mut n = 0;
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(env) = std::fs::read(entry.path().join("environ")) {
            if env.split(|b| *b == 0).any(|v| v == marker.as_bytes()) {
                n += 1;
            }
        }
    }
    n
}

#[tokio::test]
async fn of_six_scripted_candidates_only_the_green_one_wins() {
    let repo = project();
    let backend = backend().await;
    // The runner's command carries a marker, to find any process left.
    const MARKER: &str = "FORQ_SEARCH_LOOP_MARKER=1";
    let stack = Stack::custom(
        "test",
        Vec::new(),
        &format!("{MARKER} python3 -m unittest -v"),
    );
    let (root, oracle, genesis) =
        prepare(&*backend, repo.path(), stack, Duration::from_secs(5)).await;
    let candidates =
        vec![
        replace("1-wrong-fix", "x >= limit", "x >= limit + 2"),
        replace("2-breaks-syntax", "if x >= limit:", "if x >= limit"),
        replace(
            "3-breaks-a-guard",
            "def count_above(xs, limit):\n    n = 0",
            "def count_above(xs, limit):\n    return sum(1 for x in xs if x > limit)\n    n = 0",
        )
        .with_extra(Change::Replace {
            path: "stats.py".into(),
            old: "max(xs) - min(xs)".into(),
            new: "max(xs) - min(xs) + 1".into(),
        }),
        replace("4-loops-forever", "    n = 0\n", "    n = 0\n    while True:\n        pass\n"),
        replace("5-right", "x >= limit", "x > limit"),
        // Green by the tests' own measure, had it been run: the test no
        // longer asks for what the issue wants.
        Candidate {
            hypothesis: "6-weakens-the-test".to_owned(),
            changes: vec![Change::Replace {
                path: "tests/test_stats.py".to_owned(),
                old: "count_above([1, 2, 3, 4, 5], 2), 3)".to_owned(),
                new: "count_above([1, 2, 3, 4, 5], 2), 4)".to_owned(),
            }],
            prior: 0.0,
        },
    ];
    let patches = Patches::new(candidates);
    // One at a time: the loop runs to its timeout before the right one.
    let options = SearchOptions::default().budget(Budget::default().jobs(1));
    let out = search(&*root, &oracle, &genesis, &patches, &options)
        .await
        .unwrap();
    let tree = &out.tree;
    let by_name = |name: &str| tree.nodes.iter().find(|n| n.hypothesis == name).unwrap();
    let winner = out.winner.expect("the right candidate is green");
    assert!(!out.budget_spent);
    assert_eq!(tree.nodes[winner.node].hypothesis, "5-right");
    assert_eq!(tree.count(Status::Green), 1);
    assert_eq!(by_name("1-wrong-fix").status, Status::Red);
    let syntax = by_name("2-breaks-syntax");
    assert!(syntax.reason.contains("does not parse"), "{syntax:?}");
    let guard = by_name("3-breaks-a-guard");
    assert_eq!(guard.status, Status::Red);
    assert_eq!(
        guard.judgement.as_ref().unwrap().broken,
        ["tests.test_stats.StatsTest.test_span"],
        "{guard:?}"
    );
    let weakened = by_name("6-weakens-the-test");
    assert_eq!(weakened.status, Status::Red);
    assert_eq!(
        weakened.reason,
        "tests/test_stats.py: edits a test file (tests are never edited)"
    );
    assert!(weakened.judgement.is_none(), "{weakened:?}");
    let looped = by_name("4-loops-forever");
    assert_eq!(looped.status, Status::Red);
    assert!(looped.judgement.as_ref().unwrap().timed_out, "{looped:?}");
    assert_eq!(processes_with(MARKER), 0, "a test run was left running");
    // tree.json reads back as the same tree.
    let dir = tempfile::tempdir().unwrap();
    tree.save(&dir.path().join("tree.json")).unwrap();
    assert_eq!(&Tree::load(&dir.path().join("tree.json")).unwrap(), tree);
    winner.sandbox.destroy().await.unwrap();
    root.destroy().await.unwrap();
}

#[tokio::test]
async fn a_search_cut_short_by_its_budget_says_so_and_an_exhausted_one_does_not() {
    let repo = project();
    let backend = backend().await;
    let stack = stack_of(repo.path());
    let (root, oracle, genesis) =
        prepare(&*backend, repo.path(), stack, Duration::from_secs(30)).await;
    let wrong = || replace("wrong", "x >= limit", "x >= limit + 2");
    // One candidate allowed, three waiting: the right one is never tried.
    let patches = Patches::new(vec![
        wrong(),
        replace("also-wrong", "x >= limit", "x >= limit + 3"),
        replace("right", "x >= limit", "x > limit"),
    ]);
    let options = SearchOptions::default().budget(Budget::default().max_nodes(1).jobs(1));
    let cut = search(&*root, &oracle, &genesis, &patches, &options)
        .await
        .unwrap();
    assert!(cut.winner.is_none());
    assert_eq!(cut.evaluated, 1);
    assert!(cut.budget_spent, "two candidates were left untried");
    // Every candidate tried, none green: the space ran out, not the budget.
    let patches = Patches::new(vec![wrong()]);
    let options = SearchOptions::default().budget(Budget::default().max_nodes(10).jobs(1));
    let exhausted = search(&*root, &oracle, &genesis, &patches, &options)
        .await
        .unwrap();
    assert!(exhausted.winner.is_none());
    assert!(!exhausted.budget_spent);
    root.destroy().await.unwrap();
}

/// A brancher that takes longer than any budget before proposing the fix.
struct Slow;

#[async_trait::async_trait]
impl forq_search::brancher::Brancher for Slow {
    fn name(&self) -> &str {
        "slow"
    }

    async fn branch(
        &self,
        _cx: &forq_search::brancher::BranchContext<'_>,
        _k: usize,
    ) -> Result<Vec<Candidate>, forq_search::brancher::BranchError> {
        tokio::time::sleep(Duration::from_secs(120)).await;
        Ok(vec![replace("right", "x >= limit", "x > limit")])
    }
}

#[tokio::test]
async fn the_wall_clock_holds_for_a_brancher_that_takes_too_long() {
    let repo = project();
    let backend = backend().await;
    let stack = stack_of(repo.path());
    let (root, oracle, genesis) =
        prepare(&*backend, repo.path(), stack, Duration::from_secs(30)).await;
    let options = SearchOptions::default()
        .budget(Budget::default().wall_clock(Duration::from_secs(3)).jobs(1));
    let started = std::time::Instant::now();
    let out = search(&*root, &oracle, &genesis, &Slow, &options)
        .await
        .unwrap();
    // Cut at its wall clock (plus the root's run), not after the
    // brancher's two minutes.
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
    assert!(out.winner.is_none());
    assert!(out.budget_spent, "the search ran out of time");
    root.destroy().await.unwrap();
}

trait WithExtra {
    fn with_extra(self, change: Change) -> Self;
}

impl WithExtra for Candidate {
    fn with_extra(mut self, change: Change) -> Self {
        self.changes.push(change);
        self
    }
}

#[tokio::test]
async fn an_oracle_without_a_failing_test_says_why() {
    use forq_search::oracle::{Oracle, OracleError};
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(repo.path().join("README"), "x\n").unwrap();
    let backend = backend().await;
    let genesis = |script: &str| {
        let stack = Stack::custom("script", Vec::new(), script);
        let backend = backend.clone();
        let repo = repo.path().to_owned();
        async move {
            let root = forq_bootstrap::provision(
                &*backend,
                &repo,
                &stack,
                &forq_bootstrap::GateOptions::default(),
            )
            .await
            .unwrap();
            let got = Oracle::from_genesis(&*root, stack, &[], Duration::from_secs(30)).await;
            root.destroy().await.unwrap();
            got.expect_err("no oracle without a failing test")
        }
    };
    // A target in a file pytest could not load (the bug breaks its
    // import) fails as named; a target in no file the runner knows is
    // still refused.
    let uncollected = "printf '%s\\n' 'collected 1 item / 1 error' \
        'ERROR tests/test_cli.py' 'PASSED tests/test_a.py::test_ok' \
        '==== 1 passed, 1 error in 0.10s ===='; exit 2";
    {
        let stack = Stack::custom("script", Vec::new(), uncollected);
        let root = forq_bootstrap::provision(
            &*backend,
            repo.path(),
            &stack,
            &forq_bootstrap::GateOptions::default(),
        )
        .await
        .unwrap();
        let target = ["tests/test_cli.py::TestCli::test_one".to_owned()];
        let (oracle, _) =
            Oracle::from_genesis(&*root, stack.clone(), &target, Duration::from_secs(30))
                .await
                .expect("a target of a file that failed to load");
        assert_eq!(oracle.target, target);
        assert_eq!(oracle.guard, ["tests/test_a.py::test_ok"]);
        let elsewhere = ["tests/test_b.py::test_two".to_owned()];
        let err = Oracle::from_genesis(&*root, stack, &elsewhere, Duration::from_secs(30))
            .await
            .expect_err("a target in no file the runner knows");
        assert!(matches!(err, OracleError::UnknownTarget(_)), "{err}");
        root.destroy().await.unwrap();
    }
    // Every test passes.
    let green = "printf 'test_a (t.T.test_a) ... ok\\n\\nRan 1 test in 0.1s\\n\\nOK\\n'";
    assert!(matches!(genesis(green).await, OracleError::NothingFails));
    // The runner counts a failure but names no test forq can read.
    let unnamed = "printf 'Ran 2 tests in 0.1s\\n\\nFAILED (failures=1)\\n'; exit 1";
    let err = genesis(unnamed).await;
    assert!(
        matches!(err, OracleError::UnnamedFailures { failed: 1 }),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        "the runner reports 1 failing test(s), but its output names none that forq can read"
    );
}
