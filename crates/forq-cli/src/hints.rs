//! What to do about a failure, in the command line's words: the one table
//! of hints. The libraries' errors say what happened; what a person types
//! next (a subcommand, a flag) is said here, once.

use forq_search::oracle::OracleError;
use forq_search::FixError;

/// The hint for `err` (the first cause that has one), if any.
pub(crate) fn hint(err: &anyhow::Error) -> Option<&'static str> {
    err.chain().find_map(|cause| {
        if let Some(e) = cause.downcast_ref::<forq_graph::Error>() {
            return graph(e);
        }
        if let Some(e) = cause.downcast_ref::<FixError>() {
            return match e {
                FixError::NotBootstrapped { .. } => {
                    Some("`forq bootstrap` shows why the repository's tests do not run")
                }
                FixError::Oracle(o) => oracle(o),
                FixError::Reproduction(_) => {
                    Some("name the failing test that captures the issue with --target TEST_ID")
                }
                _ => None,
            };
        }
        if let Some(e) = cause.downcast_ref::<OracleError>() {
            return oracle(e);
        }
        if let Some(forq_sandbox::Error::Unavailable {
            backend: "auto", ..
        }) = cause.downcast_ref::<forq_sandbox::Error>()
        {
            return Some(
                "`forq doctor` says what each backend needs; --backend host runs without isolation",
            );
        }
        None
    })
}

fn graph(e: &forq_graph::Error) -> Option<&'static str> {
    match e {
        forq_graph::Error::Interrupted { .. } => Some("run `forq graph index` to repair it"),
        forq_graph::Error::NoSuchSymbol { .. } => {
            Some("`forq graph symbols --name NAME` lists candidates")
        }
        forq_graph::Error::Schema { .. } => {
            Some("index into another database with --db, or upgrade forq")
        }
        forq_graph::Error::Rename { reason, .. } if reason.contains("older than the file") => {
            Some("run `forq graph index`, then try again")
        }
        _ => None,
    }
}

fn oracle(e: &OracleError) -> Option<&'static str> {
    match e {
        OracleError::NothingFails => Some(
            "name the failing test that captures the issue with --target TEST_ID, or configure a model (--provider) so the agent writes a reproduction test first",
        ),
        OracleError::UnnamedFailures { .. } => {
            Some("name the failing test that captures the issue with --target TEST_ID")
        }
        _ => None,
    }
}
