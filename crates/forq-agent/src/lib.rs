//! forq-agent: what turns "fix this issue" into edits inside a sandbox.
//!
//! - [`provider`] speaks OpenAI-compatible Chat Completions and Anthropic
//!   Messages over HTTP (tools, tool choice, structured output, streaming
//!   with tool-call arguments merged as they arrive), retries
//!   429/5xx/connection failures with backoff and jitter honouring
//!   `Retry-After`, reports 401/403/400 with the provider's message, and
//!   never shows a key ([`provider::ApiKey`]); [`provider::Replay`] plays
//!   recorded replies back.
//! - [`cost`] accounts tokens and dollars per call and per run against the
//!   caller's price table and checks budgets (steps, tokens, cost, wall
//!   clock).
//! - [`tools`] is the agent–computer interface over a sandbox, behind the
//!   [`tools::Tool`] trait: `view_file`, `find_files`, `search`, `edit`
//!   (unique match, whitespace-tolerant fallback, syntax check),
//!   `create_file`, `delete_file`, `run`, `run_tests` (through
//!   forq-bootstrap's parsers), `submit`, `give_up`, and the graph tools
//!   over a forq-graph index (`callers`, `callees`, `statements_near`,
//!   `uses_of`, `repo_map`).
//! - [`agent`] is the loop: [`agent::CodingAgent`] and its default
//!   [`agent::Agent`] (issue in, tool calls run in the sandbox,
//!   observations back, until submit, give-up or a budget), with events to
//!   subscribers and a JSONL transcript that [`provider::Replay`] plays
//!   back; the outcome's patch is the sandbox's diff.
//!
//! - [`triage`]: should forq act on an issue — one structured-output call
//!   (a JSON schema), validated, an invalid answer sent back once, and a
//!   threshold on the confidence deciding whether a fix is attempted.
//!
//! - [`contract`]: does a changed definition keep its contract — A
//!   (preserved), B (upward-compatible), C (incompatible); equal sources
//!   are A without a model call, and doubt or bad answers are C.
//!
//! - [`external`]: coding-agent programs (Claude Code, Codex CLI) driven inside the
//!   sandbox behind [`agent::CodingAgent`], their events mapped onto
//!   forq's and their result the sandbox's diff.
//!
//! - [`docs`]: docs written by a model for named definitions — the text
//!   only, placed and checked by the caller.
//!
//! - [`issue`]: the issue a run starts from — a GitHub issue or pull
//!   request (REST API), a Markdown file, or text.
//!
//! The `forq` binary drives it as `forq triage` and `forq agent run`.
//!
//! What it never does: hand a credential to the sandbox, or treat text a
//! model wrote as the patch (the patch is always the sandbox's diff).
//!
//! ```
//! use forq_agent::message::{Message, Part, Request, Response, Role, StopReason, Usage};
//! use forq_agent::provider::{Provider, Replay};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), forq_agent::provider::Error> {
//! let recorded = Response {
//!     message: Message::assistant("hello"),
//!     usage: Usage { input_tokens: 3, output_tokens: 1 },
//!     stop: StopReason::EndTurn,
//!     model: "recorded".to_owned(),
//! };
//! let provider = Replay::new(vec![recorded]);
//! let mut request = Request::new("any-model");
//! request.messages.push(Message::user("say hello"));
//! let reply = provider.complete(&request, None).await?;
//! assert_eq!(reply.message.text(), "hello");
//! assert!(matches!(reply.message.parts[0], Part::Text { .. }));
//! assert_eq!(reply.message.role, Role::Assistant);
//! # Ok(())
//! # }
//! ```
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
