#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

// The model layer is its own crate; its modules keep their paths here.
pub use forq_events::Observer;
pub use forq_provider::{context, cost, message, provider, structured};

pub mod agent;
pub mod configure;
pub mod contract;
pub mod docs;
pub mod external;
pub mod issue;
mod relay;
pub mod tools;
pub mod triage;
