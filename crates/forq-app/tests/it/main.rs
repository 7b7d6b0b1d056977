//! forq-app's integration tests: real SQLite, a real HTTP server on
//! loopback speaking GitHub's documented REST shapes, real git.

#[path = "../../../forq-agent/tests/it/server.rs"]
#[allow(dead_code)]
mod server;

mod github;
