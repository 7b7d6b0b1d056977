//! forq-search: speculative fork-tree search for a fix, with the repository's
//! tests as judge.
//!
//! **Status: skeleton.** This crate is reserved; its contents land with the
//! search issue. What it will own:
//!
//! - fix strategies (`single` and `speculative`);
//! - an oracle of target tests plus pass-to-pass guards;
//! - branchers (deterministic mutation repair, scripted patches, and LLM
//!   hypotheses behind a cargo feature);
//! - best-first expansion over copy-on-write forks of a warm `forq-sandbox`
//!   sandbox, pruning, and collapse onto the smallest green diff, with a
//!   replayable tree of events.
//!
//! What it never does: copy a workspace to try a candidate (every candidate is
//! a fork), or depend on provider code unless the `llm` feature asks for it.
#![deny(missing_docs)]
