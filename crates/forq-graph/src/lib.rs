//! forq-graph indexes a repository into a code graph that coding agents and
//! forq's search engine query to find where a bug lives and what a change
//! will affect.
//!
//! One SQLite file (WAL) holds, for Python, Rust, JavaScript, TypeScript
//! (and TSX), Go, Java, C and C++:
//! - files (path, language, git blob id, size, parse status);
//! - symbols: a stable descriptor id (`path#Container.name:kind`), kind,
//!   name, qualified name, span, enclosing symbol, signature line, doc
//!   comment, and whether it is a test by its ecosystem's convention;
//! - occurrences of names with their role (definition, reference, import,
//!   write, read, test) — the `occurrences` view;
//! - edges `calls`, `inherits`, `imports` (and `contains` through each
//!   symbol's parent), each `exact` (resolved through scope, receiver or
//!   import), `unique` (one definition has the name) or `ambiguous` (an
//!   edge to each of k candidates, never one picked silently); `covers`
//!   is the view of a test's calls, and [`Index::tests_for`] follows them
//!   deeper;
//! - statements of every function and their intra-procedural def→use
//!   links by variable (off with [`IndexOptions::flow`]).
//!
//! Extraction is tree-sitter queries kept as data in `queries/<lang>/`,
//! plus the tables in [`Lang`] for def-use. Updates are incremental:
//! unchanged files are not parsed, a changed file is re-parsed alone and
//! only names whose definitions changed are resolved again; an interrupted
//! update is repaired by the next one and queries refuse to answer from it
//! meanwhile.
//!
//! What it never does: spawn a process, touch the network, or print.
//!
//! ```
//! use forq_graph::{Index, SymbolFilter};
//!
//! let repo = tempfile::tempdir().unwrap();
//! std::fs::write(repo.path().join("calc.py"), "class Calc:\n    def add(self, a, b):\n        return a + b\n\n    def twice(self, a):\n        return self.add(a, a)\n").unwrap();
//! let mut index = Index::open(&repo.path().join("graph.db"), repo.path()).unwrap();
//! let report = index.update().unwrap();
//! assert_eq!(report.parsed, 1);
//! let add = index.find_symbol("Calc.add").unwrap();
//! assert_eq!((add.line, add.end_line), (2, 3));
//! let callers = index.callers(&add.id, 1).unwrap();
//! assert_eq!(callers.items[0].caller, "calc.py#Calc.twice:method");
//! assert_eq!(callers.items[0].confidence, forq_graph::Confidence::Exact); // through `self`
//! assert_eq!(index.update().unwrap().parsed, 0); // nothing changed, nothing parsed
//! ```
#![deny(missing_docs)]

mod audit;
mod bench;
mod conventions;
mod docs;
mod error;
mod extract;
mod index;
mod lang;
mod map;
mod patterns;
mod query;
mod rename;
mod resolve;
mod store;

pub use audit::{AuditFinding, AuditQuery};
pub use bench::{bench, BenchReport, QueryTiming};
pub use conventions::{Convention, Conventions};
pub use docs::{definition_source, same_code_outside_docs, write_doc, CodeChanged};
pub use error::{Error, Result};
pub use index::{Index, IndexOptions, IndexReport, Stats, MAX_FILE_BYTES};
pub use lang::{Lang, QueryKind};
pub use map::{MapEntry, RepoMap, CHARS_PER_TOKEN};
pub use patterns::{Argument, CallPatterns, CallSite, Suspect};
pub use query::{
    Bounded, CallEdge, Confidence, Covering, Dependent, LineText, StatementInfo, UseSite, VarLinks,
    MAX_FANOUT, MAX_PATH_NODES, MAX_ROWS,
};
pub use rename::{RenameEdit, RenamePlan};
pub use store::{Symbol, SymbolFilter};
