//! forq-bootstrap: the bootstrap gate, which proves that a fresh repository's
//! own tests run before forq changes a line of it.
//!
//! **Status: skeleton.** This crate is reserved; its contents land with the
//! bootstrap issue. What it will own:
//!
//! - stack detection from marker files (Python, Node, Rust, Go, Java, C/C++
//!   with CMake, Meson, Autotools or Make);
//! - running the repository's own test runner inside a `forq-sandbox`
//!   sandbox, with install and test phases capped separately;
//! - evidence parsers for the runners' real output, with per-test results;
//! - verdicts (`bootstrapped`, `failed_deterministic`,
//!   `unsupported_ecosystem`, `failed_agentic`, `skipped`), a checkpointed
//!   record, and a recipe cached by commit.
//!
//! What it never does: run a command outside a sandbox, or count a run in
//! which no test executed as green.
#![deny(missing_docs)]
