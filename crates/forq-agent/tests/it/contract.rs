//! Contract classification of a change.

use std::sync::Arc;

use forq_agent::contract::{Class, ContractCheck};
use forq_agent::message::{Message, Response, StopReason, Usage};
use forq_agent::provider::Replay;

fn answer(text: &str) -> Response {
    Response {
        message: Message::assistant(text),
        usage: Usage::default(),
        stop: StopReason::EndTurn,
        model: "m".to_owned(),
    }
}

const OLD: &str = "def add(a, b):\n    return a - b\n";

#[tokio::test]
async fn equal_sources_are_a_without_asking_a_model() {
    // A replay with nothing recorded fails if it is called at all.
    let check = ContractCheck::new(Arc::new(Replay::new(Vec::new())), "m");
    let c = check
        .classify(OLD, &format!("\n{OLD}  \n"), "")
        .await
        .unwrap();
    assert_eq!((c.class, c.model_called), (Class::A, false));
}

#[tokio::test]
async fn the_model_classifies_and_bad_answers_end_in_c() {
    let new = "def add(a, b, c=0):\n    return a + b + c\n";
    let replies = vec![answer(
        r#"{"class": "B", "reason": "a new optional parameter"}"#,
    )];
    let c = ContractCheck::new(Arc::new(Replay::new(replies)), "m")
        .classify(OLD, new, "")
        .await
        .unwrap();
    assert_eq!((c.class, c.model_called), (Class::B, true));
    assert_eq!(c.reason, "a new optional parameter");
    let replies = vec![
        answer("probably fine"),
        answer(r#"{"class": "D", "reason": "?"}"#),
    ];
    let c = ContractCheck::new(Arc::new(Replay::new(replies)), "m")
        .classify(OLD, new, "")
        .await
        .unwrap();
    assert_eq!(c.class, Class::C);
    assert!(c.reason.contains("invalid twice"), "{}", c.reason);
}
