#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

pub mod bench;
pub mod brancher;
pub mod candidate;
pub mod evidence;
pub mod fix;
pub mod guarded;
pub mod oracle;
pub mod plan;
mod search;
pub mod spectrum;
pub mod tree;

pub use fix::{
    prepare, prepare_guarded, prepare_with, write_report, FixError, FixReport, FixStrategy,
    Prepared, Reproducer, Single, Speculative,
};
pub use forq_events::Observer;
pub use search::{
    search, Budget, Order, SearchError, SearchOptions, SearchOutcome, Winner, DEFAULT_MAX_DEPTH,
    DEFAULT_MAX_NODES, DEFAULT_PLAUSIBLE, PLAUSIBLE_WINDOW,
};
