//! The forq application as a library: what `forq queue`, `forq runs` and
//! `forq push` do, for a benchmark harness or a bot to embed without the
//! command line.
//!
//! - [`config`]: `forq.yml`, with defaults for every key and a JSON Schema.
//! - [`store`]: runs, their events and checkpoints in SQLite.

pub mod config;
pub mod store;
