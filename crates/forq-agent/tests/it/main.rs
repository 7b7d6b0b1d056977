//! forq-agent's tools, loop, triage, contract check, configurator and
//! external agents, against real sandboxes and a real HTTP server on
//! loopback (forq-provider's, which speaks both model protocols).

#![allow(clippy::unwrap_used)] // tests fail loudly

mod agent;
mod configure;
mod contract;
mod external;
#[allow(dead_code)] // shared with forq-provider's tests, which use all of it
#[path = "../../../forq-provider/tests/it/server.rs"]
mod server;
mod tools;
mod triage;
mod window;

use std::time::Duration;

use forq_agent::provider::{ApiKey, OpenAi, RetryPolicy};
use server::Server;

const KEY: &str = "sk-test-0123456789-secret";

/// An OpenAI-compatible provider on `server`, retrying fast.
fn openai(server: &Server) -> OpenAi {
    OpenAi::new(&format!("{}/v1", server.url), Some(ApiKey::new(KEY)))
        .unwrap()
        .retry(RetryPolicy::default().base_delay(Duration::from_millis(10)))
}
