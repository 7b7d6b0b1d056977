//! What the gate concludes.

use serde::{Deserialize, Serialize};

/// The verdict of the bootstrap gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Verdict {
    /// A test runner completed and at least one test was counted as
    /// executed (passed or failed).
    Bootstrapped,
    /// A stack was detected but its install, build or runner crashed, timed
    /// out, exited 126/127, or ran no test.
    FailedDeterministic,
    /// No registered stack matched any marker.
    UnsupportedEcosystem,
    /// Reserved for the agentic fallback.
    FailedAgentic,
    /// The caller asked to skip the gate.
    Skipped,
}

impl Verdict {
    /// Its name as written in JSON and the text output
    /// (`failed_deterministic`).
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Bootstrapped => "bootstrapped",
            Verdict::FailedDeterministic => "failed_deterministic",
            Verdict::UnsupportedEcosystem => "unsupported_ecosystem",
            Verdict::FailedAgentic => "failed_agentic",
            Verdict::Skipped => "skipped",
        }
    }

    /// Whether the gate lets work go on: the tests ran (or the caller
    /// skipped the gate).
    pub fn lets_work_go_on(self) -> bool {
        matches!(self, Verdict::Bootstrapped | Verdict::Skipped)
    }
}

#[cfg(test)]
mod tests {
    use super::Verdict;

    #[test]
    fn names_are_the_json_names() {
        for v in [
            Verdict::Bootstrapped,
            Verdict::FailedDeterministic,
            Verdict::UnsupportedEcosystem,
            Verdict::FailedAgentic,
            Verdict::Skipped,
        ] {
            assert_eq!(serde_json::to_value(v).unwrap(), v.name());
        }
    }
}
