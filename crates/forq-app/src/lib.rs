//! The forq application as a library: what `forq queue`, `forq runs` and
//! `forq push` do, for a benchmark harness or a bot to embed without the
//! command line.
//!
//! - [`config`]: `forq.yml`, with defaults for every key and a JSON Schema.
//! - [`source`]: Markdown issue directories; [`github`]: the GitHub REST API.
//! - [`store`]: runs, their events and checkpoints in SQLite.

pub mod config;
pub mod github;
pub mod source;
pub mod store;
