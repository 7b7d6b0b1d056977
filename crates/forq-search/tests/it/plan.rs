//! `Plan`: a fix wired by name over a real prepared root.

use std::time::Duration;

use forq_bootstrap::GateOptions;
use forq_search::plan::{BrancherKind, Plan, PlanError, StrategyKind};
use forq_search::SearchOptions;

use super::{backend, project};

#[tokio::test]
async fn a_plan_by_name_builds_the_strategy_or_says_what_it_lacks() {
    let repo = project();
    let backend = backend().await;
    let prepared = forq_search::prepare(
        &*backend,
        repo.path(),
        &GateOptions::default(),
        &[],
        Duration::from_secs(60),
    )
    .await
    .unwrap();
    let index = || {
        let db = repo.path().join(".forq/graph.db");
        let mut index = forq_graph::Index::open(&db, repo.path()).unwrap();
        index.update().unwrap();
        index
    };
    // Model branchers without a model, mutate without the graph, patches
    // without candidates: each refused with what it lacks.
    for (kind, strategy) in [
        (BrancherKind::Llm, StrategyKind::Speculative),
        (BrancherKind::Agent, StrategyKind::Single),
    ] {
        let mut plan = Plan::new(strategy);
        plan.brancher = Some(kind);
        let err = plan.build(Some(index()), &prepared).err().unwrap();
        #[cfg(feature = "llm")]
        assert!(
            matches!(err, PlanError::NeedsModel { brancher } if brancher == kind),
            "{err}"
        );
        #[cfg(not(feature = "llm"))]
        assert!(
            matches!(err, PlanError::NoLlmFeature { brancher } if brancher == kind),
            "{err}"
        );
    }
    let err = Plan::new(StrategyKind::Speculative)
        .build(None, &prepared)
        .err()
        .unwrap();
    assert!(matches!(err, PlanError::NeedsIndex { .. }), "{err}");
    let mut patches = Plan::new(StrategyKind::Speculative);
    patches.brancher = Some(BrancherKind::Patches);
    assert!(matches!(
        patches.build(None, &prepared).err().unwrap(),
        PlanError::NoPatches
    ));
    // The default speculative plan is the mutate search, and it finds the
    // seeded fault.
    let strategy = Plan::new(StrategyKind::Speculative)
        .build(Some(index()), &prepared)
        .unwrap();
    assert_eq!(
        (strategy.name(), strategy.brancher()),
        ("speculative", "mutate")
    );
    let outcome = strategy
        .run(
            &*prepared.root,
            &prepared.oracle,
            &prepared.genesis,
            &SearchOptions::default(),
        )
        .await
        .unwrap();
    let winner = outcome.winner.expect("mutate fixes the seeded comparison");
    assert!(
        winner.patch.contains("+        if x > limit:"),
        "{}",
        winner.patch
    );
    winner.sandbox.destroy().await.unwrap();
    prepared.root.destroy().await.unwrap();
}
