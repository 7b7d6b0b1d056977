//! A failure, in the command line's terms: its exit code (its class's,
//! from [`crate::exit`]) and what to do about it (a hint). The libraries' errors say what
//! happened and [`forq_app::failure::classify`] says its class; what a
//! person types next (a subcommand, a flag) and what a script reads (the
//! exit code) are said here, once.

use forq_app::failure::{classify, FailureKind};

use crate::exit::Exit;
use forq_app::pipeline::RunError;
use forq_app::queue::QueueError;
use forq_app::store::StoreError;
use forq_search::oracle::OracleError;
use forq_search::FixError;

/// The exit code for `err`: its class's, else unclassified.
pub(crate) fn exit_code(err: &anyhow::Error) -> Exit {
    err.chain()
        .find_map(|cause| match cause.downcast_ref::<Input>() {
            Some(_) => Some(FailureKind::Input),
            None => classify(cause),
        })
        .map_or(Exit::Unclassified, Exit::of)
}

/// An error about what the person gave on the command line (exit 65).
pub(crate) fn input(message: String) -> anyhow::Error {
    Input(message).into()
}

/// An error about what the person gave on the command line (exit 65).
#[derive(Debug)]
pub(crate) struct Input(pub(crate) String);

impl std::fmt::Display for Input {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Input {}

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
        if let Some(
            forq_agent::provider::ProviderError::MissingKey { .. }
            | forq_agent::provider::ProviderError::NoProvider,
        ) = cause.downcast_ref::<forq_agent::provider::ProviderError>()
        {
            return Some(
                "--provider replay --replay FILE plays a recorded model back, with no key",
            );
        }
        if let Some(e) = cause.downcast_ref::<StoreError>() {
            return match e {
                StoreError::NotFound(_) => Some("`forq runs` lists the runs"),
                StoreError::Ambiguous(_) => Some("`forq runs` lists the runs and their ids"),
                _ => None,
            };
        }
        if let Some(e) = cause.downcast_ref::<RunError>() {
            return match e {
                RunError::Busy { .. } => Some("`forq runs abort ID` stops it"),
                RunError::Panicked(_) => Some("`forq runs resume ID` continues it"),
                _ => None,
            };
        }
        if let Some(e) = cause.downcast_ref::<QueueError>() {
            return match e {
                QueueError::NoRepo(_) => Some("--repo DIR names the repository for every issue"),
                QueueError::RemoteConfig { .. } => {
                    Some("--config FILE gives settings for every run instead")
                }
                _ => None,
            };
        }
        if let Some(forq_app::git::GitError::Rejected { .. }) =
            cause.downcast_ref::<forq_app::git::GitError>()
        {
            return Some("--branch NAME pushes under another name");
        }
        if let Some(forq_app::clean::CleanError::Remove { .. }) =
            cause.downcast_ref::<forq_app::clean::CleanError>()
        {
            return Some("then run `forq runs clean` again");
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
        forq_graph::Error::Stale { .. } => Some("run `forq graph index`, then try again"),
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
