//! Why a run (or a command) stopped short, as a class a harness can act
//! on: retry an infrastructure failure, skip a repository whose tests do
//! not run, count a model failure against the model, raise a budget, fix
//! the input.
//!
//! [`classify`] reads a library error's chain; the pipeline records the
//! class of every run that ends `failed`, `needs_human` for a reason that
//! is not a decision, or `aborted` ([`Run::failure`](crate::store::Run)).
//!
//! ```
//! use forq_app::failure::{classify, FailureKind};
//!
//! let err = forq_search::oracle::OracleError::NothingFails;
//! assert_eq!(classify(&err), Some(FailureKind::Repository));
//! let err = forq_graph::Error::NoSuchSymbol { query: "parse".into() };
//! assert_eq!(classify(&err), Some(FailureKind::Input));
//! assert_eq!(FailureKind::Model.name(), "model");
//! ```

use serde::{Deserialize, Serialize};

/// The class of a failure.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::EnumIter,
)]
#[strum(serialize_all = "snake_case")]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FailureKind {
    /// Something the person gave is invalid: a setting, a file, a name, a
    /// missing key. Fix the input; retrying as is fails the same way.
    Input,
    /// The repository cannot be worked on as it is: its tests do not run,
    /// nothing fails, its forq.yml is invalid, its install steps fail.
    Repository,
    /// The model provider failed (refused, unreachable, unreadable replies)
    /// or what the model wrote was unusable.
    Model,
    /// A budget (candidates, time, steps, dollars) ran out first.
    Budget,
    /// Someone stopped it.
    Cancelled,
    /// The machine failed: a sandbox backend, Docker, git, the disk, the
    /// network, the run store. Often worth a retry.
    Infrastructure,
}

impl FailureKind {
    /// Its name, as stored and printed.
    pub fn name(self) -> &'static str {
        self.into()
    }
    /// The kind named `name`.
    pub fn from_name(name: &str) -> Option<FailureKind> {
        name.parse().ok()
    }
    /// Every kind, in the order above.
    pub fn all() -> impl Iterator<Item = FailureKind> {
        <FailureKind as strum::IntoEnumIterator>::iter()
    }
}

impl std::fmt::Display for FailureKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The class of `err`: the first error in its chain (outermost first)
/// that forq's libraries know, or `None` when none does (an error forq
/// did not expect: a bug, or a cause nobody classified yet).
pub fn classify(err: &(dyn std::error::Error + 'static)) -> Option<FailureKind> {
    let mut cause = Some(err);
    while let Some(e) = cause {
        if let Some(kind) = one(e) {
            return Some(kind);
        }
        cause = e.source();
    }
    None
}

/// The class `e` itself says, without its sources (`None`: look deeper).
fn one(e: &(dyn std::error::Error + 'static)) -> Option<FailureKind> {
    use FailureKind::{Cancelled, Infrastructure, Input, Model};
    if let Some(e) = e.downcast_ref::<forq_search::FixError>() {
        return fix(e);
    }
    if let Some(e) = e.downcast_ref::<forq_search::oracle::OracleError>() {
        return oracle(e);
    }
    if let Some(e) = e.downcast_ref::<forq_search::SearchError>() {
        return search(e);
    }
    if let Some(e) = e.downcast_ref::<forq_search::brancher::BranchError>() {
        return Some(branch(e));
    }
    if let Some(e) = e.downcast_ref::<forq_bootstrap::GateError>() {
        return gate(e);
    }
    if let Some(e) = e.downcast_ref::<forq_sandbox::Error>() {
        return Some(sandbox(e));
    }
    if let Some(e) = e.downcast_ref::<forq_graph::Error>() {
        return Some(graph(e));
    }
    if let Some(e) = e.downcast_ref::<forq_agent::provider::ProviderError>() {
        return Some(provider(e));
    }
    if let Some(e) = e.downcast_ref::<forq_agent::triage::TriageError>() {
        return Some(match e {
            forq_agent::triage::TriageError::Provider(p) => provider(p),
            _ => Model,
        });
    }
    if e.is::<forq_agent::issue::IssueError>() {
        return Some(Input);
    }
    if e.is::<crate::config::ConfigError>() || e.is::<crate::source::SourceError>() {
        return Some(Input);
    }
    if let Some(e) = e.downcast_ref::<crate::store::StoreError>() {
        return Some(match e {
            crate::store::StoreError::NotFound(_) | crate::store::StoreError::Ambiguous(_) => Input,
            _ => Infrastructure,
        });
    }
    if let Some(e) = e.downcast_ref::<crate::seed::SeedError>() {
        use crate::seed::SeedError as S;
        return Some(match e {
            S::Missing(_) | S::Outside(_) | S::TooLarge { .. } | S::Started(_) => Input,
            _ => Infrastructure,
        });
    }
    if let Some(e) = e.downcast_ref::<forq_bootstrap::CloneError>() {
        return Some(clone(e));
    }
    if let Some(e) = e.downcast_ref::<crate::pipeline::RunError>() {
        return match e {
            crate::pipeline::RunError::Store(s) => classify(s),
            crate::pipeline::RunError::Busy { .. } => Some(Input),
            _ => None,
        };
    }
    if let Some(e) = e.downcast_ref::<std::io::Error>() {
        return Some(match e.kind() {
            std::io::ErrorKind::Interrupted => Cancelled,
            std::io::ErrorKind::NotFound | std::io::ErrorKind::InvalidInput => Input,
            _ => Infrastructure,
        });
    }
    if let Some(e) = e.downcast_ref::<crate::github::GithubError>() {
        use crate::github::GithubError as G;
        return Some(match e {
            G::NotARepo(_) | G::NotAnIssue(_) => Input,
            G::Status {
                status: 401 | 403 | 404 | 422,
                ..
            } => Input,
            _ => Infrastructure,
        });
    }
    if e.is::<crate::git::GitError>() {
        return Some(Infrastructure);
    }
    None
}

fn fix(e: &forq_search::FixError) -> Option<FailureKind> {
    use forq_search::FixError as F;
    match e {
        F::Gate(g) => gate(g),
        F::NotBootstrapped { .. } => Some(FailureKind::Repository),
        F::Oracle(o) => oracle(o),
        F::Search(s) => search(s),
        F::Reproduction(_) => Some(FailureKind::Model),
        F::Sandbox(s) => Some(sandbox(s)),
        _ => Some(FailureKind::Infrastructure),
    }
}

fn oracle(e: &forq_search::oracle::OracleError) -> Option<FailureKind> {
    use forq_search::oracle::OracleError as O;
    Some(match e {
        O::Sandbox(s) => sandbox(s),
        O::UnknownTarget(_) => FailureKind::Input,
        _ => FailureKind::Repository,
    })
}

fn search(e: &forq_search::SearchError) -> Option<FailureKind> {
    use forq_search::SearchError as S;
    Some(match e {
        S::Sandbox(s) => sandbox(s),
        S::Brancher(b) => branch(b),
        _ => FailureKind::Infrastructure,
    })
}

fn branch(e: &forq_search::brancher::BranchError) -> FailureKind {
    // Of the bundled branchers, only those with a model fail.
    if matches!(e.brancher.as_str(), "llm" | "agent") {
        FailureKind::Model
    } else {
        FailureKind::Infrastructure
    }
}

fn gate(e: &forq_bootstrap::GateError) -> Option<FailureKind> {
    use forq_bootstrap::GateError as G;
    Some(match e {
        G::Install { .. } | G::GoldenUnproven { .. } => FailureKind::Repository,
        G::Sandbox { source, .. } | G::Golden { source, .. } => sandbox(source),
        G::Clone { source, .. } => clone(source),
        _ => FailureKind::Infrastructure,
    })
}

fn clone(e: &forq_bootstrap::CloneError) -> FailureKind {
    match e {
        forq_bootstrap::CloneError::Exists(_) => FailureKind::Input,
        _ => FailureKind::Infrastructure,
    }
}

fn sandbox(e: &forq_sandbox::Error) -> FailureKind {
    use forq_sandbox::Error as S;
    match e {
        S::PathEscape { .. } | S::InvalidSpec(_) | S::UnsafeStateDir { .. } => FailureKind::Input,
        _ => FailureKind::Infrastructure,
    }
}

fn graph(e: &forq_graph::Error) -> FailureKind {
    use forq_graph::Error as G;
    match e {
        G::Db { .. }
        | G::Io { .. }
        | G::Query { .. }
        | G::Schema { .. }
        | G::Interrupted { .. } => FailureKind::Infrastructure,
        _ => FailureKind::Input,
    }
}

fn provider(e: &forq_agent::provider::ProviderError) -> FailureKind {
    use forq_agent::provider::ProviderError as P;
    match e {
        P::MissingKey { .. } | P::NoProvider => FailureKind::Input,
        _ => FailureKind::Model,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_distinct() {
        let names: Vec<&str> = FailureKind::all().map(FailureKind::name).collect();
        assert_eq!(
            names,
            [
                "input",
                "repository",
                "model",
                "budget",
                "cancelled",
                "infrastructure"
            ]
        );
        for kind in FailureKind::all() {
            assert_eq!(FailureKind::from_name(kind.name()), Some(kind));
            assert_eq!(
                serde_json::to_value(kind).expect("serialises"),
                serde_json::json!(kind.name())
            );
        }
    }

    #[test]
    fn transparent_wrappers_are_seen_through() {
        // FixError::Oracle is `transparent`: its source is the oracle's
        // source, so the oracle error itself is not in the chain.
        let err = forq_search::FixError::Oracle(forq_search::oracle::OracleError::NothingFails);
        assert_eq!(classify(&err), Some(FailureKind::Repository));
        let err = forq_search::FixError::Oracle(forq_search::oracle::OracleError::Sandbox(
            forq_sandbox::Error::Unavailable {
                backend: "native",
                reason: "no user namespaces".into(),
            },
        ));
        assert_eq!(classify(&err), Some(FailureKind::Infrastructure));
    }

    #[test]
    fn provider_failures_are_the_models_and_a_missing_key_is_input() {
        let refused = forq_agent::provider::ProviderError::Auth {
            provider: "anthropic".into(),
            status: 401,
            message: "invalid x-api-key".into(),
        };
        assert_eq!(classify(&refused), Some(FailureKind::Model));
        let triage = forq_agent::triage::TriageError::Provider(refused);
        assert_eq!(classify(&triage), Some(FailureKind::Model));
        assert_eq!(
            classify(&forq_agent::provider::ProviderError::NoProvider),
            Some(FailureKind::Input)
        );
    }

    #[test]
    fn a_cause_deeper_in_the_chain_is_found_and_unknown_errors_are_none() {
        #[derive(Debug, thiserror::Error)]
        #[error("outer")]
        struct Outer(#[source] forq_bootstrap::GateError);
        let err = Outer(forq_bootstrap::GateError::Install {
            stack: "pytest".into(),
            command: "pip install -e .".into(),
            reason: "exit 1".into(),
        });
        assert_eq!(classify(&err), Some(FailureKind::Repository));
        #[derive(Debug, thiserror::Error)]
        #[error("nobody knows me")]
        struct Unknown;
        assert_eq!(classify(&Unknown), None);
    }
}
