#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

mod audit;
mod bench;
mod conventions;
mod docs;
mod error;
mod extract;
mod flow;
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
pub use flow::{FileFlow, FlowLink, FlowStatement, FlowVar};
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
