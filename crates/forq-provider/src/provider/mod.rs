//! Model providers: the [`Provider`] trait, and its implementations over
//! HTTP (OpenAI-compatible Chat Completions, Anthropic Messages) and from a
//! recording ([`Replay`]).

use std::time::Duration;

use crate::message::{Delta, Request, Response};

mod anthropic;
mod compat;
mod http;
mod openai;
mod replay;

pub use anthropic::Anthropic;
pub use compat::{Capabilities, StructuredOutput};
pub use http::RetryPolicy;
pub use openai::OpenAi;
pub use replay::{Recorder, Replay};

/// Which provider to open with [`open`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// Anthropic when `ANTHROPIC_API_KEY` is set, else OpenAI-compatible
    /// when `OPENAI_API_KEY` or `OPENAI_BASE_URL` is.
    Auto,
    /// OpenAI-compatible Chat Completions ([`OpenAi::from_env`]).
    OpenAi,
    /// Anthropic Messages ([`Anthropic::from_env`]).
    Anthropic,
    /// A recording ([`Replay::from_jsonl`]).
    Replay(std::path::PathBuf),
    /// An OpenAI-compatible server on the operator's machine, at this
    /// base URL ([`OpenAi::local`]).
    Local(String),
}

/// Opens the provider `choice` names, configured from the environment.
pub fn open(choice: &Choice) -> Result<std::sync::Arc<dyn Provider>, ProviderError> {
    let set = |var: &str| std::env::var(var).is_ok_and(|v| !v.trim().is_empty());
    Ok(match choice {
        Choice::Auto if set("ANTHROPIC_API_KEY") => std::sync::Arc::new(Anthropic::from_env()?),
        Choice::Auto if set("OPENAI_API_KEY") || set("OPENAI_BASE_URL") => {
            std::sync::Arc::new(OpenAi::from_env()?)
        }
        Choice::Auto => return Err(ProviderError::NoProvider),
        Choice::OpenAi => std::sync::Arc::new(OpenAi::from_env()?),
        Choice::Anthropic => std::sync::Arc::new(Anthropic::from_env()?),
        Choice::Replay(path) => std::sync::Arc::new(Replay::from_jsonl(path)?),
        Choice::Local(base_url) => std::sync::Arc::new(OpenAi::local(base_url)?),
    })
}

/// `provider` with its context windows said by the operator: every model's
/// is `tokens`, whatever the provider would say.
pub fn with_context_window(
    provider: std::sync::Arc<dyn Provider>,
    tokens: u32,
) -> std::sync::Arc<dyn Provider> {
    std::sync::Arc::new(Windowed {
        inner: provider,
        all: Some(tokens),
        named: Default::default(),
    })
}

/// `provider` with the context windows of the models `named` said (by a
/// configuration); other models' as the provider says.
pub fn with_context_windows(
    provider: std::sync::Arc<dyn Provider>,
    named: std::collections::BTreeMap<String, u32>,
) -> std::sync::Arc<dyn Provider> {
    std::sync::Arc::new(Windowed {
        inner: provider,
        all: None,
        named,
    })
}

/// A provider whose context windows the operator said.
struct Windowed {
    inner: std::sync::Arc<dyn Provider>,
    all: Option<u32>,
    named: std::collections::BTreeMap<String, u32>,
}

#[async_trait::async_trait]
impl Provider for Windowed {
    fn name(&self) -> &str {
        self.inner.name()
    }

    async fn complete(
        &self,
        request: &Request,
        sink: Option<Sink<'_>>,
    ) -> Result<Response, ProviderError> {
        self.inner.complete(request, sink).await
    }

    async fn context_window(&self, model: &str) -> Option<u32> {
        if let Some(tokens) = self.named.get(model).copied().or(self.all) {
            return Some(tokens);
        }
        self.inner.context_window(model).await
    }

    fn capabilities(&self, model: &str) -> Option<Capabilities> {
        self.inner.capabilities(model)
    }
}

/// The provider `kind` (`openai` or `anthropic`) with `key` instead of the
/// environment's (a contributor's own, for one run), at the environment's
/// base URL.
pub fn with_key(kind: &str, key: ApiKey) -> Result<std::sync::Arc<dyn Provider>, ProviderError> {
    let base = |var: &str, default: &str| {
        std::env::var(var)
            .ok()
            .filter(|b| !b.trim().is_empty())
            .unwrap_or_else(|| default.to_owned())
    };
    Ok(match kind {
        "anthropic" => std::sync::Arc::new(Anthropic::new(
            &base("ANTHROPIC_BASE_URL", anthropic::ANTHROPIC_BASE),
            key,
        )),
        _ => std::sync::Arc::new(OpenAi::new(
            &base("OPENAI_BASE_URL", openai::OPENAI_BASE),
            Some(key),
        )?),
    })
}

/// The model used when the caller names none: `FORQ_MODEL` when set, else
/// a current general model of the provider (a replay answers any name).
pub fn default_model(provider: &str) -> String {
    if let Ok(model) = std::env::var("FORQ_MODEL") {
        if !model.trim().is_empty() {
            return model;
        }
    }
    match provider {
        "anthropic" => "claude-sonnet-4-5",
        "openai" => "gpt-4.1",
        // A local server answers with the model it serves.
        "local" => "default",
        _ => "recorded",
    }
    .to_owned()
}

/// Where streamed deltas go as they arrive.
pub type Sink<'a> = &'a (dyn Fn(&Delta) + Send + Sync);

/// A model provider.
#[async_trait::async_trait]
pub trait Provider: Send + Sync {
    /// The provider's name (`openai`, `anthropic`, `replay`).
    fn name(&self) -> &str;

    /// One call. With `request.stream`, deltas go to `sink` as they arrive
    /// and the whole reply is returned at the end, the same as unstreamed.
    async fn complete(
        &self,
        request: &Request,
        sink: Option<Sink<'_>>,
    ) -> Result<Response, ProviderError>;

    /// `model`'s context window in tokens, when the provider knows it:
    /// what its endpoint says of the model, else the known models' table
    /// ([`known_context_window`]).
    async fn context_window(&self, model: &str) -> Option<u32> {
        known_context_window(model)
    }

    /// What `model` takes at this provider, as far as it has learnt
    /// (`None`: the provider takes the whole protocol, or does not say).
    fn capabilities(&self, _model: &str) -> Option<Capabilities> {
        None
    }
}

/// The context windows of the providers' current models, by name prefix
/// (a dated or suffixed name matches its family).
pub fn known_context_window(model: &str) -> Option<u32> {
    const KNOWN: [(&str, u32); 12] = [
        ("claude-", 200_000),
        ("gpt-4.1", 1_047_576),
        ("gpt-5", 400_000),
        ("gpt-4o", 128_000),
        ("gpt-4-turbo", 128_000),
        ("gpt-4", 8_192),
        ("gpt-3.5-turbo", 16_385),
        ("o1", 200_000),
        ("o3", 200_000),
        ("o4", 200_000),
        ("codex-", 200_000),
        ("chatgpt-4o", 128_000),
    ];
    KNOWN
        .iter()
        .find(|(prefix, _)| model.starts_with(prefix))
        .map(|(_, window)| *window)
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

    /// The key itself, for the one place it must go (a request header, a
    /// child process's environment). Never log or print what this returns.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with every occurrence of the key replaced by `[redacted]`.
    pub fn redact(&self, text: &str) -> String {
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
pub enum ProviderError {
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
    /// The request is longer than the model's context window (whatever
    /// the status the server put on it): a caller condenses what it sends
    /// and asks again; retrying the same request cannot help.
    #[error("{provider} refused the request as longer than the model's context (HTTP {status}): {message}")]
    ContextLength {
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
    /// No provider was named and the environment configures none.
    #[error(
        "no model provider is configured: set ANTHROPIC_API_KEY, or OPENAI_API_KEY \
         (OPENAI_BASE_URL alone for a local OpenAI-compatible server such as Ollama or vLLM), \
         or use the replay provider with a recording"
    )]
    NoProvider,
    /// A replay ran out of recorded replies, or the recording is unreadable.
    #[error("replay: {0}")]
    Replay(String),
}

impl ProviderError {
    /// How many tokens a [`ProviderError::ContextLength`] refusal says the
    /// prompt had, when it says (`4117 in the messages`, `your messages
    /// resulted in 12320 tokens`).
    pub fn context_used(&self) -> Option<u32> {
        let ProviderError::ContextLength { message, .. } = self else {
            return None;
        };
        let m = message.to_ascii_lowercase();
        if let Some(at) = m.find(" in the messages") {
            let digits: String = m[..at]
                .chars()
                .rev()
                .take_while(char::is_ascii_digit)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            return digits.parse().ok();
        }
        let lead = "messages resulted in ";
        let after = &m[m.find(lead)? + lead.len()..];
        after
            .chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>()
            .parse()
            .ok()
    }

    /// The context window a [`ProviderError::ContextLength`] refusal names,
    /// when it names one (`maximum context length is 8192 tokens`,
    /// `exceed context window of 2048`, `n_ctx: 4096`).
    pub fn context_limit(&self) -> Option<u32> {
        let ProviderError::ContextLength { message, .. } = self else {
            return None;
        };
        let m = message.to_ascii_lowercase();
        [
            "maximum context length is",
            "context window of",
            "context length of",
            "context length is",
            "n_ctx",
            "max_model_len",
        ]
        .iter()
        .find_map(|lead| {
            let after = &m[m.find(lead)? + lead.len()..];
            let digits: String = after
                .chars()
                .skip_while(|c| !c.is_ascii_digit())
                .take_while(char::is_ascii_digit)
                .collect();
            digits.parse().ok().filter(|n: &u32| *n >= 256)
        })
    }
}

/// How long a call may take, whole (default 10 minutes: long replies
/// stream for a while).
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);
