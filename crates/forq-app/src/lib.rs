//! The forq application as a library: what `forq queue`, `forq runs` and
//! `forq push` do, for a benchmark harness or a bot to embed without the
//! command line.
//!
//! - [`config`]: `forq.yml`, with defaults for every key and a JSON Schema.
//! - [`source`]: Markdown issue directories; [`github`]: the GitHub REST API.
//! - [`seed`]: a run's workspace (shallow clone or copy, caps, context
//!   files); [`git`]: the commit on the run's branch, and the push.
//! - [`pipeline`]: one run, phase by phase, with checkpoints to resume from.
//! - [`queue`]: select issues and run them in parallel, with caps.
//! - [`store`]: runs, their events and checkpoints in SQLite.

pub mod config;
pub mod git;
pub mod github;
pub mod pipeline;
pub mod queue;
pub mod seed;
pub mod source;
pub mod store;
