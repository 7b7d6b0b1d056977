//! forq-app's integration tests: real SQLite, a real HTTP server on
//! loopback speaking GitHub's documented REST shapes, real git.

#![allow(clippy::unwrap_used)] // tests fail loudly

#[path = "../../../forq-provider/tests/it/server.rs"]
#[allow(dead_code)]
mod server;

mod attacks;
mod github;
mod safety;
mod seed;
mod store;
mod stranger;
