//! The search on real sandboxes: a seeded bug found by `mutate`, scripted
//! candidates judged by the tests, and the search's invariants under
//! random candidate sets (proptest).

#![allow(clippy::unwrap_used)] // tests fail loudly

mod invariants;
#[cfg(feature = "llm")]
mod llm;
mod plan;
mod search;
mod spectrum;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use forq_bootstrap::{GateOptions, Stack};
use forq_sandbox::{Backend, BackendChoice, Sandbox};
use forq_search::oracle::{Judgement, Oracle};

pub(crate) const STATS: &str = "\
def mean(xs):
    return sum(xs) / len(xs)


def span(xs):
    return max(xs) - min(xs)


def count_above(xs, limit):
    n = 0
    for x in xs:
        if x >= limit:
            n += 1
    return n
";

pub(crate) const TESTS: &str = "\
import unittest

from stats import count_above, mean, span


class StatsTest(unittest.TestCase):
    def test_mean(self):
        self.assertEqual(mean([1, 2, 3]), 2)

    def test_span(self):
        self.assertEqual(span([4, 1, 9]), 8)

    def test_count_above(self):
        self.assertEqual(count_above([1, 2, 3, 4, 5], 2), 3)
";

/// A unittest project whose `count_above` counts the limit itself.
pub(crate) fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("stats.py"), STATS).unwrap();
    std::fs::create_dir(dir.path().join("tests")).unwrap();
    std::fs::write(dir.path().join("tests/__init__.py"), "").unwrap();
    std::fs::write(dir.path().join("tests/test_stats.py"), TESTS).unwrap();
    dir
}

pub(crate) async fn backend() -> Arc<dyn Backend> {
    forq_sandbox::open_backend(BackendChoice::Auto)
        .await
        .expect("an isolating backend (CI runs as root, with docker)")
        .backend
}

/// The warm root, the oracle and its judgement of the unmodified code.
pub(crate) async fn prepare(
    backend: &dyn Backend,
    repo: &Path,
    stack: Stack,
    timeout: Duration,
) -> (Box<dyn Sandbox>, Oracle, Judgement) {
    let root = forq_bootstrap::provision(backend, repo, &stack, &GateOptions::default())
        .await
        .unwrap();
    let probe = root.fork().await.unwrap();
    let (oracle, genesis) = Oracle::from_genesis(&*probe, stack, &[], timeout)
        .await
        .unwrap();
    probe.destroy().await.unwrap();
    (root, oracle, genesis)
}

/// The stack the gate detects in `repo`.
pub(crate) fn stack_of(repo: &Path) -> Stack {
    forq_bootstrap::detect(repo).into_iter().next().unwrap()
}
