//! The model brancher with recorded answers: hypotheses become candidates,
//! and a red child is diagnosed again with its failure.

use std::sync::Arc;
use std::time::Duration;

use forq_agent::message::{Message, Response, StopReason, Usage};
use forq_agent::provider::Replay;
use forq_search::brancher::{Brancher, Llm, NOTES_CHARS};
use forq_search::tree::Status;
use forq_search::{search, Budget, SearchOptions};
use serde_json::json;

use super::{backend, prepare, project, stack_of};

fn answer(candidates: serde_json::Value) -> Response {
    Response {
        message: Message::assistant(json!({ "candidates": candidates }).to_string()),
        usage: Usage::default(),
        stop: StopReason::EndTurn,
        model: "recorded".to_owned(),
    }
}

#[tokio::test]
async fn a_red_hypothesis_is_diagnosed_again_and_the_next_level_is_green() {
    let repo = project();
    let backend = backend().await;
    let stack = stack_of(repo.path());
    let (root, oracle, genesis) =
        prepare(&*backend, repo.path(), stack, Duration::from_secs(60)).await;
    let replies = vec![
        answer(json!([{"hypothesis": "the counter increments wrongly",
            "edits": [{"path": "stats.py", "old": "n += 1", "new": "n = n + 1"}]}])),
        answer(json!([{"hypothesis": "the limit itself is counted",
            "edits": [{"path": "stats.py", "old": "x >= limit", "new": "x > limit"}]}])),
    ];
    let replay = Arc::new(Replay::new(replies));
    let llm = Llm::new(
        replay.clone(),
        "recorded",
        "count_above counts the limit",
        vec!["stats.py".into()],
    );
    let options = SearchOptions::default().budget(Budget::default().branching(3).jobs(1));
    let out = search(&*root, &oracle, &genesis, &llm, &options)
        .await
        .unwrap();
    let winner = out.winner.expect("green at the second level");
    let node = &out.tree.nodes[winner.node];
    assert_eq!((node.depth, node.parent), (2, Some(1)), "{:#?}", out.tree);
    assert_eq!(out.tree.nodes[1].status, Status::Red);
    assert!(
        winner.patch.contains("+        if x > limit:\n")
            && winner.patch.contains("+            n = n + 1\n"),
        "{}",
        winner.patch
    );
    assert_eq!(replay.remaining(), 0);
    winner.sandbox.destroy().await.unwrap();
    root.destroy().await.unwrap();
}

fn tool_call(n: usize, name: &str, args: serde_json::Value) -> Response {
    Response {
        message: Message {
            role: forq_agent::message::Role::Assistant,
            parts: vec![forq_agent::message::Part::ToolCall {
                id: format!("call_{n}"),
                name: name.to_owned(),
                arguments: args,
                invalid_arguments: None,
            }],
        },
        usage: Usage::default(),
        stop: StopReason::ToolUse,
        model: "recorded".to_owned(),
    }
}

#[tokio::test]
async fn an_issue_no_test_catches_gets_a_reproduction_test_that_ships_in_the_patch() {
    use forq_agent::agent::Agent;
    use forq_search::brancher::{AgentReproducer, Patches};
    use forq_search::candidate::{Candidate, Change};

    // The project without the test that shows the bug.
    let repo = project();
    let tests = super::TESTS
        .split("\n    def test_count_above")
        .next()
        .unwrap();
    std::fs::write(
        repo.path().join("tests/test_stats.py"),
        format!("{tests}\n"),
    )
    .unwrap();
    let backend = backend().await;
    let repro = "import unittest\n\nfrom stats import count_above\n\n\nclass ReproTest(unittest.TestCase):\n    def test_limit_not_counted(self):\n        self.assertEqual(count_above([1, 2, 3], 2), 1)\n";
    let script = vec![
        tool_call(
            1,
            "create_file",
            json!({"path": "tests/test_repro.py", "content": repro}),
        ),
        tool_call(2, "run", json!({"command": "python3 -m unittest -v"})),
        tool_call(
            3,
            "submit",
            json!({"summary": "count_above([1, 2, 3], 2) is 2, not 1"}),
        ),
    ];
    let agent = Agent::new(Arc::new(Replay::new(script)), "recorded");
    let reproducer = AgentReproducer::new(Arc::new(agent), "count_above counts the limit");
    let prepared = forq_search::prepare_with(
        &*backend,
        repo.path(),
        &forq_bootstrap::GateOptions::default(),
        &[],
        Duration::from_secs(60),
        Some(&reproducer),
    )
    .await
    .unwrap();
    assert_eq!(
        prepared.oracle.target,
        ["tests.test_repro.ReproTest.test_limit_not_counted"]
    );
    assert_eq!(prepared.oracle.guard.len(), 2);
    assert_eq!(
        prepared.seed.keys().collect::<Vec<_>>(),
        ["tests/test_repro.py"]
    );
    let fix = Candidate {
        hypothesis: "the limit is not above itself".into(),
        changes: vec![Change::Replace {
            path: "stats.py".into(),
            old: "x >= limit".into(),
            new: "x > limit".into(),
        }],
        prior: 1.0,
    };
    let options = SearchOptions::default().seed(prepared.seed.clone());
    let out = search(
        &*prepared.root,
        &prepared.oracle,
        &prepared.genesis,
        &Patches::new(vec![fix]),
        &options,
    )
    .await
    .unwrap();
    let winner = out.winner.expect("the fix turns the reproduction green");
    assert!(
        winner.patch.contains("+++ b/tests/test_repro.py"),
        "{}",
        winner.patch
    );
    assert!(
        winner.patch.contains("+        if x > limit:"),
        "{}",
        winner.patch
    );
    // The repository has neither.
    assert!(!repo.path().join("tests/test_repro.py").exists());
    winner.sandbox.destroy().await.unwrap();
    prepared.root.destroy().await.unwrap();
}

#[tokio::test]
async fn the_cost_budget_stops_the_model_brancher() {
    use forq_agent::cost::{Price, PriceTable};

    let repo = project();
    let backend = backend().await;
    let stack = stack_of(repo.path());
    let (root, oracle, genesis) =
        prepare(&*backend, repo.path(), stack, Duration::from_secs(60)).await;
    let mut costly = answer(json!([{"hypothesis": "the counter increments wrongly",
        "edits": [{"path": "stats.py", "old": "n += 1", "new": "n = n + 1"}]}]));
    costly.usage.input_tokens = 1000;
    let second = answer(json!([{"hypothesis": "the limit itself is counted",
        "edits": [{"path": "stats.py", "old": "x >= limit", "new": "x > limit"}]}]));
    let replay = Arc::new(Replay::new(vec![costly, second]));
    let prices = PriceTable::new().with(
        "recorded",
        Price {
            input: 10.0,
            output: 10.0,
        },
    );
    let llm = Llm::new(
        replay.clone(),
        "recorded",
        "count_above counts the limit",
        vec!["stats.py".into()],
    )
    .max_cost(0.005, prices);
    let options = SearchOptions::default().budget(Budget::default().jobs(1));
    let out = search(&*root, &oracle, &genesis, &llm, &options)
        .await
        .unwrap();
    assert!(
        out.winner.is_none(),
        "spent {} on {:#?}",
        llm.cost_usd(),
        out.tree
            .nodes
            .iter()
            .map(|n| (&n.hypothesis, n.status))
            .collect::<Vec<_>>()
    );
    assert_eq!(out.evaluated, 1);
    assert_eq!(replay.remaining(), 1, "no call past the budget");
    assert!((llm.cost_usd() - 0.01).abs() < 1e-9);
    root.destroy().await.unwrap();
}

#[tokio::test]
async fn the_model_is_told_how_the_codebase_writes_code_and_calls_the_suspect() {
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
    let db = tempfile::tempdir().unwrap();
    let mut index = forq_graph::Index::open(&db.path().join("g.db"), repo.path()).unwrap();
    index.update().unwrap();
    let mutate = forq_search::brancher::Mutate::new(index, stack);
    let notes = mutate.notes(&oracle.target, &oracle.guard, NOTES_CHARS);
    assert!(notes.len() <= NOTES_CHARS, "{notes}");
    // Every function here is snake_case; the test module sits in tests/.
    assert!(
        notes.contains("- python functions are snake_case (3 of 3, 100%)"),
        "{notes}"
    );
    // The suspect is count_above, called once by its test, which passes
    // the result on to assertEqual.
    assert!(
        notes.contains(
            "stats.py#count_above:function — 1 call site(s); arguments: 2 ×1; result: passed ×1"
        ),
        "{notes}"
    );
    let replay = Arc::new(Replay::new(vec![answer(json!([
        {"hypothesis": "the limit itself is counted",
         "edits": [{"path": "stats.py", "old": "x >= limit", "new": "x > limit"}]}
    ]))]));
    let llm = Llm::new(
        replay.clone(),
        "recorded",
        "count_above counts the limit",
        vec!["stats.py".into()],
    )
    .notes(notes.clone());
    let options = SearchOptions::default().budget(Budget::default().jobs(1));
    let out = search(&*root, &oracle, &genesis, &llm, &options)
        .await
        .unwrap();
    let winner = out.winner.expect("the one hypothesis is green");
    let asked = replay.requests();
    assert_eq!(asked.len(), 1);
    assert!(
        asked[0]
            .system
            .ends_with(&format!("Write code the way this codebase does.\n{notes}")),
        "{}",
        asked[0].system
    );
    winner.sandbox.destroy().await.unwrap();
    root.destroy().await.unwrap();
}
