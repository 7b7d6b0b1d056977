//! The typed errors of indexing and querying.

use std::path::PathBuf;

/// What went wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The database could not be opened, read or written.
    #[error("the index database {path:?} failed")]
    Db {
        /// The database file.
        path: PathBuf,
        /// rusqlite's error.
        #[source]
        source: rusqlite::Error,
    },
    /// A file of the repository could not be read.
    #[error("cannot {op} {path:?}")]
    Io {
        /// What was being done.
        op: &'static str,
        /// The path.
        path: PathBuf,
        /// The operating-system error.
        #[source]
        source: std::io::Error,
    },
    /// A bundled query does not compile against its grammar.
    #[error("query {name} of {lang} does not compile: {message}")]
    Query {
        /// Language.
        lang: &'static str,
        /// Query file name.
        name: &'static str,
        /// tree-sitter's message.
        message: String,
    },
    /// The database was written by a newer forq.
    #[error("the index {path:?} has schema version {found}, newer than this forq's {supported}; re-index with --db elsewhere or upgrade forq")]
    Schema {
        /// The database file.
        path: PathBuf,
        /// Its version.
        found: i64,
        /// The version this build writes.
        supported: i64,
    },
}

/// The result of a graph operation.
pub type Result<T, E = Error> = std::result::Result<T, E>;
