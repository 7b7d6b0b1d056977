//! Model providers: the [`Provider`] trait, and its implementations over
//! HTTP (OpenAI-compatible Chat Completions, Anthropic Messages) and from a
//! recording ([`Replay`]).

use std::time::Duration;

use crate::message::{Delta, Request, Response};

mod anthropic;
mod http;
mod openai;
mod replay;

pub use anthropic::Anthropic;
pub use http::RetryPolicy;
pub use openai::OpenAi;
pub use replay::Replay;

/// Where streamed deltas go as they arrive.
pub type Sink<'a> = &'a (dyn Fn(&Delta) + Send + Sync);

/// A model provider.
#[async_trait::async_trait]
pub trait Provider: Send + Sync {
    /// The provider's name (`openai`, `anthropic`, `replay`).
    fn name(&self) -> &str;

    /// One call. With `request.stream`, deltas go to `sink` as they arrive
    /// and the whole reply is returned at the end, the same as unstreamed.
    async fn complete(&self, request: &Request, sink: Option<Sink<'_>>) -> Result<Response, Error>;
}

/// An API key, never shown: `Debug` and `Display` print `[redacted]`.
#[derive(Clone)]
pub struct ApiKey(String);

impl ApiKey {
    /// A key given by the caller.
    pub fn new(key: impl Into<String>) -> ApiKey {
        ApiKey(key.into())
    }

    /// The key in the environment variable `var`, if set and not empty.
    pub fn from_env(var: &str) -> Option<ApiKey> {
        std::env::var(var)
            .ok()
            .filter(|k| !k.trim().is_empty())
            .map(ApiKey)
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with every occurrence of the key replaced by `[redacted]`.
    pub(crate) fn redact(&self, text: &str) -> String {
        if self.0.len() < 4 {
            return text.to_owned();
        }
        text.replace(&self.0, "[redacted]")
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey([redacted])")
    }
}

/// Why a call failed. No variant ever holds the API key.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No key was given and the environment has none.
    #[error("no API key for {provider}: set {env} or pass a key")]
    MissingKey {
        /// The provider.
        provider: String,
        /// The variable to set.
        env: String,
    },
    /// 401/403: the key is wrong or lacks access.
    #[error("{provider} refused the credentials (HTTP {status}): {message}")]
    Auth {
        /// The provider.
        provider: String,
        /// The status.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// 4xx other than 401/403/429: the request itself is wrong.
    #[error("{provider} rejected the request (HTTP {status}): {message}")]
    BadRequest {
        /// The provider.
        provider: String,
        /// The status.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// 429 or 5xx, still after every retry.
    #[error("{provider} kept failing (HTTP {status}) after {attempts} attempts: {message}")]
    Unavailable {
        /// The provider.
        provider: String,
        /// The last status.
        status: u16,
        /// Attempts made.
        attempts: u32,
        /// The provider's last message.
        message: String,
    },
    /// The connection failed or timed out, still after every retry.
    #[error("cannot reach {provider} at {url} after {attempts} attempts: {message}")]
    Connect {
        /// The provider.
        provider: String,
        /// The endpoint.
        url: String,
        /// Attempts made.
        attempts: u32,
        /// What failed.
        message: String,
    },
    /// The reply was not what the protocol says.
    #[error("{provider} sent a reply forq cannot read: {message}")]
    Protocol {
        /// The provider.
        provider: String,
        /// What was wrong.
        message: String,
    },
    /// A replay ran out of recorded replies, or the recording is unreadable.
    #[error("replay: {0}")]
    Replay(String),
}

/// How long a call may take, whole (default 10 minutes: long replies
/// stream for a while).
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);
