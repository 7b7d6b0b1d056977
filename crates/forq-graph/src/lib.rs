//! forq-graph: a code graph of a repository, for coding agents that must find
//! where a bug lives and what a change will affect.
//!
//! **Status: skeleton.** This crate is reserved; its contents land with the
//! code-graph issue. What it will own:
//!
//! - a tree-sitter index of Python, Rust, JavaScript, TypeScript, Go, Java, C
//!   and C++: symbols with stable ids, calls/imports/inherits/covers edges with
//!   a confidence, statement-level def-use inside functions;
//! - storage in one SQLite file, re-indexed incrementally by content hash;
//! - the queries: callers and callees, paths between symbols, what a symbol
//!   affects, covering tests, statements near a line, uses of a name, and a
//!   ranked repository map that fits a token budget.
//!
//! What it never does: spawn a process, touch the network, or print.
#![deny(missing_docs)]
