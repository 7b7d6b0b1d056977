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

#[tokio::test]
async fn an_incompatible_change_ripples_to_its_callers_and_a_compatible_one_does_not() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("calc.py"), OLD).unwrap();
    std::fs::write(
        dir.path().join("report.py"),
        "from calc import add\n\n\ndef total(xs):\n    return add(xs[0], xs[1])\n\n\ndef show(xs):\n    print(total(xs))\n",
    )
    .unwrap();
    let db = tempfile::tempdir().unwrap();
    let mut index = forq_graph::Index::open(&db.path().join("graph.db"), dir.path()).unwrap();
    index.update().unwrap();
    let new = "def add(pair):\n    return pair[0] + pair[1]\n";
    let replay = Arc::new(Replay::new(vec![answer(
        r#"{"class": "C", "reason": "the parameters changed"}"#,
    )]));
    let ripple = ContractCheck::new(replay, "m")
        .ripple(&index, "calc.py#add:function", OLD, new, 3)
        .await
        .unwrap();
    assert_eq!(ripple.classification.class, Class::C);
    let callers: Vec<(&str, u32)> = ripple
        .callers
        .iter()
        .map(|c| (c.caller.as_str(), c.depth))
        .collect();
    assert_eq!(
        callers,
        [
            ("report.py#total:function", 1),
            ("report.py#show:function", 2)
        ]
    );
    let replay = Arc::new(Replay::new(vec![answer(
        r#"{"class": "B", "reason": "callers still work"}"#,
    )]));
    let ripple = ContractCheck::new(replay.clone(), "m")
        .ripple(
            &index,
            "calc.py#add:function",
            OLD,
            "def add(a, b, c=0):\n    return a + b + c\n",
            3,
        )
        .await
        .unwrap();
    assert_eq!(ripple.classification.class, Class::B);
    assert!(ripple.callers.is_empty());
    assert_eq!(replay.remaining(), 0, "the model was asked once");
}
