//! The typed errors of every sandbox operation.

use std::path::PathBuf;

/// What went wrong in a sandbox operation.
///
/// Each variant carries the thing it is about (a path, a command, a backend)
/// so a caller can act on it without parsing a message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A path given to a file operation would leave the workspace.
    #[error("path {path:?} escapes the workspace: {reason}; use a path relative to the workspace root without `..`")]
    PathEscape {
        /// The path as the caller gave it.
        path: PathBuf,
        /// Why it was refused (absolute, `..`, symlink pointing outside).
        reason: &'static str,
    },
    /// The backend cannot run on this machine.
    #[error("the {backend} backend is unavailable: {reason}")]
    Unavailable {
        /// Backend name.
        backend: &'static str,
        /// Why, and what to do about it.
        reason: String,
    },
    /// A state directory that another user could have prepared or can
    /// redirect: sandboxes' layers are never kept there.
    #[error("refusing the state directory {path:?}: {reason}")]
    UnsafeStateDir {
        /// The directory.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The sandbox spec is not usable.
    #[error("invalid sandbox spec: {0}")]
    InvalidSpec(String),
    /// A command could not be started inside the sandbox.
    #[error("cannot start {program:?} in the sandbox")]
    Spawn {
        /// The program (`argv[0]`).
        program: String,
        /// The operating-system error.
        #[source]
        source: std::io::Error,
    },
    /// A file is larger than the read allows: it was not read past the
    /// cap.
    #[error("{path:?} is larger than {max} bytes: read a part of it, or allow more")]
    TooLarge {
        /// The path as the caller gave it.
        path: PathBuf,
        /// The cap.
        max: u64,
    },
    /// A file-system operation failed.
    #[error("cannot {op} {path:?}")]
    Io {
        /// What was being done (`read`, `mount`, `copy`...).
        op: &'static str,
        /// The path it was done on.
        path: PathBuf,
        /// The operating-system error.
        #[source]
        source: std::io::Error,
    },
    /// The Docker engine refused or failed a request.
    #[cfg(feature = "docker")]
    #[error("docker: cannot {op}")]
    Docker {
        /// The request that failed.
        op: &'static str,
        /// The client's error (boxed: the Docker client's types are not
        /// part of this crate's API).
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The backend does not offer this.
    #[error("the {backend} backend does not support {what}")]
    Unsupported {
        /// Backend name.
        backend: &'static str,
        /// What it lacks.
        what: &'static str,
    },
    /// The sandbox was already destroyed or is otherwise unusable.
    #[error("sandbox {id} is {state}")]
    Gone {
        /// Sandbox id.
        id: String,
        /// Its state (`destroyed`, `poisoned`).
        state: &'static str,
    },
}

impl Error {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            op,
            path: path.into(),
            source,
        }
    }
}

/// The result of a sandbox operation.
pub type Result<T, E = Error> = std::result::Result<T, E>;
