//! What the gate tells its observers as it goes.

#[allow(clippy::wildcard_imports)] // the gate's own types and imports
use super::*;

/// A phase of a stack's run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Phase {
    /// An install or build step (with the network).
    Install,
    /// The test command.
    Test,
}

/// What the gate reports as it goes, to the observers of
/// [`GateOptions::observer`]. Serialized with an `event` tag (`detected`,
/// `step`, `step_done`, ...), like every forq event.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum GateEvent {
    /// The stacks detected, about to be tried in this order.
    Detected {
        /// The stacks.
        stacks: Vec<Stack>,
    },
    /// The verdict came from the recipe cache; nothing will run.
    Cached {
        /// The cached record.
        record: Box<Record>,
    },
    /// A stack failed in a way a newer toolchain brought; it is tried
    /// again as the rule says ([`StackRun::retry`] names it in the record).
    Retry {
        /// The stack.
        stack: String,
        /// The rule (`cap_lints`, `doctests_only`, `pytest_major`).
        rule: String,
        /// Why, from the failed run's output.
        reason: String,
    },
    /// A step starts.
    Step {
        /// The stack (`pytest`, `rust`, ...).
        stack: String,
        /// Install or test.
        phase: Phase,
        /// The command.
        command: String,
    },
    /// A step ended.
    StepDone {
        /// The stack.
        stack: String,
        /// Install or test.
        phase: Phase,
        /// The command.
        command: String,
        /// Its exit code (124 when it timed out).
        exit_code: i32,
        /// How long it took.
        duration_ms: u64,
    },
    /// A stack has its own verdict.
    StackDone {
        /// What happened to it.
        run: Box<StackRun>,
    },
    /// The detected stacks failed; the fallback proposed these recipes,
    /// which run next.
    Fallback {
        /// The recipes.
        stacks: Vec<Stack>,
    },
    /// A warm sandbox was forked from the repository's golden.
    GoldenForked {
        /// Which.
        golden: crate::GoldenUse,
    },
    /// No golden applies, and why.
    GoldenSkipped {
        /// Why.
        reason: String,
    },
    /// The golden is being built: from scratch, or synced from a previous
    /// generation.
    GoldenBuilding {
        /// The golden's name.
        name: String,
        /// The generation it starts from, when syncing.
        from_generation: Option<u32>,
    },
    /// Tests hung (silent past the per-test budget): each was killed and
    /// counts as failed.
    TestsHung {
        /// The stack.
        stack: String,
        /// The tests, in the order found.
        tests: Vec<String>,
        /// The per-test budget, when one applied (else the run's).
        idle_ms: Option<u64>,
    },
    /// The agentic fallback starts.
    Configuring,
    /// A golden was saved.
    GoldenSaved {
        /// Which.
        golden: crate::GoldenUse,
        /// Disk it takes.
        bytes: u64,
        /// How long building it took.
        duration_ms: u64,
    },
}
