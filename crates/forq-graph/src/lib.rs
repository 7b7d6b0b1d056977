//! forq-graph indexes a repository into a code graph that coding agents and
//! forq's search engine query to find where a bug lives and what a change
//! will affect.
//!
//! **Status: first slice.** What works: an index in one SQLite file (WAL)
//! of files (path, language, git blob id, size, parse status) and symbols
//! (a stable descriptor id, kind, name, qualified name, span, enclosing
//! symbol, signature line) for Python, Rust, JavaScript, TypeScript (and
//! TSX), Go, Java, C and C++, extracted by tree-sitter queries kept as data
//! in `queries/<lang>/*.scm`; incremental re-indexing
//! by content hash (an unchanged tree parses nothing; deleted files go);
//! symbol lookup by file, name and kind; call sites, and callers/callees
//! walks that match calls to definitions by name with a confidence
//! (`unique`, or `ambiguous` with an edge to each candidate). Still to come,
//! in the code-graph issue: resolution through imports and receivers,
//! import and inherit edges, def-use, tests and `covers` edges, the other
//! graph queries and the repo map.
//!
//! What it never does: spawn a process, touch the network, or print.
//!
//! ```
//! use forq_graph::{Index, SymbolFilter};
//!
//! let repo = tempfile::tempdir().unwrap();
//! std::fs::write(repo.path().join("calc.py"), "class Calc:\n    def add(self, a, b):\n        return a + b\n").unwrap();
//! let mut index = Index::open(&repo.path().join("graph.db"), repo.path()).unwrap();
//! let report = index.update().unwrap();
//! assert_eq!(report.parsed, 1);
//! let found = index.symbols(&SymbolFilter::default().name("add")).unwrap();
//! assert_eq!(found[0].qualname, "Calc.add");
//! assert_eq!((found[0].line, found[0].end_line), (2, 3));
//! assert_eq!(index.update().unwrap().parsed, 0); // nothing changed, nothing parsed
//! ```
#![deny(missing_docs)]

mod error;
mod extract;
mod index;
mod lang;
mod store;

pub use error::{Error, Result};
pub use index::{CallEdge, Confidence, Index, IndexReport, Stats, MAX_FANOUT, MAX_FILE_BYTES};
pub use lang::Lang;
pub use store::{Symbol, SymbolFilter};
