//! forq-agent: what turns "fix this issue" into edits inside a sandbox.
//!
//! **Status: skeleton.** This crate is reserved; its contents land with the
//! agent-protocol issue. What it will own:
//!
//! - OpenAI-compatible and Anthropic providers over HTTP, with tools,
//!   streaming, retries, budgets and cost accounting, and a replay provider;
//! - a bounded tool interface (view, search, edit with a syntax check, run,
//!   run tests, graph queries) executed in a `forq-sandbox` sandbox;
//! - the coding-agent loop with events and replayable transcripts;
//! - triage with a structured verdict, and contract classification of a
//!   change.
//!
//! What it never does: hand a credential to the sandbox, or treat text a model
//! wrote as the patch (the patch is always the sandbox's diff).
#![deny(missing_docs)]
