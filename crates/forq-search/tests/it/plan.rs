//! `FixPlan`: a fix wired by name over a real prepared root.

use std::time::Duration;

use forq_bootstrap::GateOptions;
use forq_search::plan::{BrancherKind, FixPlan, PlanError, StrategyKind};

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
        let mut plan = FixPlan::new(strategy);
        plan.brancher = Some(kind);
        // Said before anything is provisioned, and again at build.
        let early = plan.check().unwrap_err();
        assert_eq!(early.to_string(), plan_error_text(kind), "{early}");
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
    let err = FixPlan::new(StrategyKind::Speculative)
        .build(None, &prepared)
        .err()
        .unwrap();
    assert!(matches!(err, PlanError::NeedsIndex { .. }), "{err}");
    let mut patches = FixPlan::new(StrategyKind::Speculative);
    patches.brancher = Some(BrancherKind::Patches);
    assert!(matches!(patches.check(), Err(PlanError::NoPatches)));
    assert!(matches!(
        patches.build(None, &prepared).err().unwrap(),
        PlanError::NoPatches
    ));
    // The default speculative plan is the templates search, its options the
    // plan's limits (mutate's usual branching), and it finds the seeded
    // fault.
    let mut plan = FixPlan::new(StrategyKind::Speculative);
    plan.budget.max_nodes = 40;
    plan.budget.jobs = Some(1);
    plan.check().unwrap();
    let built = plan.build(Some(index()), &prepared).unwrap();
    let strategy = built.strategy;
    assert_eq!(
        (strategy.name(), strategy.brancher()),
        ("speculative", "templates")
    );
    let budget = &built.options.budget;
    assert_eq!(
        (
            budget.max_nodes,
            budget.max_depth,
            budget.jobs,
            budget.branching
        ),
        (40, forq_search::DEFAULT_MAX_DEPTH, 1, 200)
    );
    let outcome = strategy
        .run(
            &*prepared.root,
            &prepared.oracle,
            &prepared.genesis,
            &built.options,
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

/// What `check` and `build` say of a model brancher without a model.
fn plan_error_text(kind: BrancherKind) -> String {
    if cfg!(feature = "llm") {
        format!("the {kind} brancher needs a model")
    } else {
        format!("the {kind} brancher needs forq-search's `llm` feature")
    }
}
