//! The search's invariants over random candidate sets, budgets and orders,
//! on real sandboxes: no state evaluated twice, statuses consistent with
//! the tree's shape, budgets kept, tree.json round-trips.

use std::time::Duration;

use forq_search::brancher::Patches;
use forq_search::candidate::{Candidate, Change};
use forq_search::tree::{Status, Tree};
use forq_search::{search, Budget, Order, SearchOptions};
use proptest::prelude::*;

use super::{backend, prepare, project, stack_of};

/// Edits of count_above's comparison; some equal, one right.
const EDITS: [&str; 6] = [
    "x > limit",
    "x >= limit + 1",
    "x > limit + 0",
    "x == limit",
    "x < limit",
    "x >= limit",
];

fn check(tree: &Tree, evaluated: usize, max_nodes: usize) {
    assert!(evaluated <= max_nodes, "{evaluated} > {max_nodes}");
    let mut fingerprints = std::collections::HashSet::new();
    for n in &tree.nodes {
        assert_ne!(n.status, Status::Exploring, "left exploring: {n:?}");
        if matches!(n.status, Status::Red | Status::Green) && n.id != 0 && !n.fingerprint.is_empty()
        {
            assert!(
                fingerprints.insert(n.fingerprint.clone()),
                "evaluated twice: {n:?}"
            );
        }
        let children: Vec<_> = tree.children(n.id).collect();
        if !children.is_empty() {
            assert!(
                n.status == Status::Red,
                "only a red node is branched: {n:?} has children"
            );
        }
        for c in children {
            assert_eq!(c.depth, n.depth + 1);
        }
    }
    if let Some(best) = tree.best {
        assert_eq!(tree.nodes[best].status, Status::Green);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]

    #[test]
    fn search_keeps_its_invariants(
        picks in proptest::collection::vec(0..EDITS.len(), 1..7),
        max_nodes in 1usize..6,
        order in 0u8..3,
        keep in any::<bool>(),
    ) {
        let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let repo = project();
            let backend = backend().await;
            let stack = stack_of(repo.path());
            let (root, oracle, genesis) =
                prepare(&*backend, repo.path(), stack, Duration::from_secs(30)).await;
            let candidates = picks
                .iter()
                .map(|&i| Candidate {
                    hypothesis: EDITS[i].to_owned(),
                    changes: vec![Change::Replace {
                        path: "stats.py".into(),
                        old: "x >= limit".into(),
                        new: EDITS[i].into(),
                    }],
                    prior: i as f64,
                })
                .collect();
            let order = match order {
                0 => Order::BestFirst,
                1 => Order::BreadthFirst,
                _ => Order::Random(7),
            };
            let options = SearchOptions::default()
                .budget(Budget::default().max_nodes(max_nodes).jobs(2))
                .order(order)
                .keep_searching(keep);
            let out = search(&*root, &oracle, &genesis, &Patches::new(candidates), &options)
                .await
                .unwrap();
            check(&out.tree, out.evaluated, max_nodes);
            // A winner exists exactly when a node is green; only the right
            // edits (`x > limit`, and `x >= limit + 1` for integers) are.
            let green: Vec<&str> = out.tree.nodes.iter().filter(|n| n.status == Status::Green).map(|n| n.hypothesis.as_str()).collect();
            assert_eq!(out.winner.is_some(), !green.is_empty());
            assert!(green.iter().all(|h| matches!(*h, "x > limit" | "x >= limit + 1" | "x > limit + 0")), "{green:?}");
            let dir = tempfile::tempdir().unwrap();
            out.tree.save(&dir.path().join("tree.json")).unwrap();
            assert_eq!(Tree::load(&dir.path().join("tree.json")).unwrap(), out.tree);
            if let Some(w) = out.winner {
                w.sandbox.destroy().await.unwrap();
            }
            root.destroy().await.unwrap();
        });
    }
}
