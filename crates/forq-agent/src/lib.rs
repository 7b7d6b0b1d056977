#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

pub mod agent;
pub mod configure;
pub mod contract;
pub mod cost;
pub mod docs;
pub mod external;
pub mod issue;
pub mod message;
pub mod provider;
pub mod structured;
pub mod tools;
pub mod triage;
