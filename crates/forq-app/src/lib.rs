#![doc = include_str!("../README.md")]

pub mod answer;
pub mod clean;
pub mod config;
pub mod contract;
pub mod eval;
pub mod failure;
pub mod git;
pub mod github;
pub mod ids;
pub mod markdown;
pub mod pipeline;
pub mod preview;
pub mod publish;
pub mod queue;
pub mod review;
pub mod seed;
pub mod source;
pub mod store;
pub mod trusted;
pub mod worker;

pub use forq_events::Observer;
