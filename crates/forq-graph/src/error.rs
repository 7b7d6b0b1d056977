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
        /// SQLite's error (boxed: the SQLite binding's types are not part
        /// of this crate's API).
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
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
    #[error("the index {path:?} has schema version {found}, newer than this forq-graph's {supported}; index into another database, or use a newer forq-graph")]
    Schema {
        /// The database file.
        path: PathBuf,
        /// Its version.
        found: i64,
        /// The version this build writes.
        supported: i64,
    },
    /// The last update of the index did not finish (killed, or failed).
    #[error("the index {path:?} is incomplete: its last update was interrupted; Index::update repairs it")]
    Interrupted {
        /// The database file.
        path: PathBuf,
    },
    /// A symbol argument matched nothing.
    #[error("no symbol matches {query:?}")]
    NoSuchSymbol {
        /// What was asked for.
        query: String,
    },
    /// A symbol argument matched several definitions.
    #[error("{query:?} names {} definitions; pass one of their ids: {}", candidates.len(), candidates.join(", "))]
    AmbiguousSymbol {
        /// What was asked for.
        query: String,
        /// The ids it could mean (at most 20).
        candidates: Vec<String>,
    },
    /// A rename that cannot be done safely.
    #[error("cannot rename {symbol}: {reason}")]
    Rename {
        /// The definition's id.
        symbol: String,
        /// Why.
        reason: String,
    },
    /// A `FILE:LINE` argument names no indexed file.
    #[error("{file:?} is not in the index; pass a path relative to the indexed root")]
    NoSuchFile {
        /// The file asked for.
        file: String,
    },
    // New variants go last: a variant's position is part of the API
    // (cargo-semver-checks holds it).
    /// A file changed since it was indexed: what the index holds of it no
    /// longer matches its lines.
    #[error("{file:?} changed since it was indexed; bring the index up to date (Index::update) and ask again")]
    Stale {
        /// The file, relative to the indexed root.
        file: String,
    },
}

/// The result of a graph operation.
pub type Result<T, E = Error> = std::result::Result<T, E>;
