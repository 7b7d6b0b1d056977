//! The model brancher with recorded answers: hypotheses become candidates,
//! and a red child is diagnosed again with its failure.

use std::sync::Arc;
use std::time::Duration;

use forq_agent::message::{Message, Response, StopReason, Usage};
use forq_agent::provider::Replay;
use forq_search::brancher::Llm;
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
