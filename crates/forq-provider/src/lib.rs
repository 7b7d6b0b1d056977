#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

pub mod context;
pub mod cost;
pub mod message;
pub mod provider;
pub mod structured;
