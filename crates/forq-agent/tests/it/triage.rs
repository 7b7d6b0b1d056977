//! Triage: structured output, validated, retried once, gated by a threshold.

use std::sync::Arc;

use forq_agent::message::{Message, Response, StopReason, Usage};
use forq_agent::provider::Replay;
use forq_agent::triage::{Action, Triage};

fn answer(text: &str) -> Response {
    Response {
        message: Message::assistant(text),
        usage: Usage {
            input_tokens: 200,
            output_tokens: 30,
        },
        stop: StopReason::EndTurn,
        model: "cheap".to_owned(),
    }
}

const GOOD: &str = r#"{"act": true, "confidence": 0.9, "reason": "a clear off-by-one with a failing test", "suggested_action": "fix"}"#;

#[tokio::test]
async fn a_valid_answer_decides_by_the_threshold() {
    let triage = Triage::new(Arc::new(Replay::new(vec![answer(GOOD)])), "cheap");
    let d = triage.run("add(2, 3) returns -1", "").await.unwrap();
    assert_eq!(
        (d.verdict.suggested_action, d.attempt_fix, d.calls),
        (Action::Fix, true, 1)
    );
    // The same verdict under a stricter threshold: no fix.
    let strict = Triage::new(Arc::new(Replay::new(vec![answer(GOOD)])), "cheap").threshold(0.95);
    assert!(
        !strict
            .run("add(2, 3) returns -1", "")
            .await
            .unwrap()
            .attempt_fix
    );
    // Acting, but not by fixing: no fix either.
    let comment = r#"{"act": true, "confidence": 0.99, "reason": "a how-to question", "suggested_action": "comment"}"#;
    let d = Triage::new(Arc::new(Replay::new(vec![answer(comment)])), "cheap")
        .run("how do I?", "")
        .await
        .unwrap();
    assert!(!d.attempt_fix);
}

#[tokio::test]
async fn an_invalid_answer_is_retried_once_then_refused() {
    let replies = vec![
        answer(r#"{"act": true, "confidence": 7, "reason": "sure", "suggested_action": "fix"}"#),
        answer(GOOD),
    ];
    let d = Triage::new(Arc::new(Replay::new(replies)), "cheap")
        .run("bug", "")
        .await
        .unwrap();
    assert_eq!((d.calls, d.usage.input_tokens), (2, 400));
    let replies = vec![
        answer("I think you should fix it."),
        answer(r#"{"act": "yes"}"#),
    ];
    // Invalid twice: a person decides (a decision, not an error).
    let d = Triage::new(Arc::new(Replay::new(replies)), "cheap")
        .run("bug", "")
        .await
        .unwrap();
    assert!(!d.attempt_fix && !d.verdict.act, "{d:?}");
    assert_eq!(d.verdict.suggested_action, Action::NeedsHuman);
    assert!(
        d.verdict.reason.contains("not the schema's shape"),
        "{}",
        d.verdict.reason
    );
}
