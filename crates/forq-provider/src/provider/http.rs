//! What both HTTP providers share: posting JSON with retries (429, 5xx and
//! connection failures, with exponential backoff and jitter, honouring
//! `Retry-After`), errors that quote the provider's message (never the
//! key), and a reader of server-sent events.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use super::{ApiKey, ProviderError};

/// When and how often a failed call is retried.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// Attempts in all, the first included (default 5).
    pub max_attempts: u32,
    /// The first backoff (default 500 ms); each next one doubles.
    pub base_delay: Duration,
    /// Cap on one wait, `Retry-After` included (default 60 s).
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 5,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// Sets the number of attempts.
    pub fn max_attempts(mut self, n: u32) -> Self {
        self.max_attempts = n.max(1);
        self
    }
    /// Sets the first backoff.
    pub fn base_delay(mut self, d: Duration) -> Self {
        self.base_delay = d;
        self
    }

    /// The wait before attempt `attempt + 1`: the server's `Retry-After`
    /// when it gave one, else exponential backoff with jitter (50–100 %).
    fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(d) = retry_after {
            return d.min(self.max_delay);
        }
        let exp = self
            .base_delay
            .saturating_mul(1u32 << attempt.min(16))
            .min(self.max_delay);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let mut x = u64::from(nanos) ^ (u64::from(attempt) << 32) ^ 0x9e37_79b9_7f4a_7c15;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let fraction = 0.5 + (x % 1000) as f64 / 2000.0;
        exp.mul_f64(fraction)
    }
}

/// The wait a 429/503 asks for: `retry-after-ms`, or `Retry-After` in seconds.
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let get = |name: &str| headers.get(name)?.to_str().ok()?.trim().parse::<f64>().ok();
    if let Some(ms) = get("retry-after-ms") {
        return Some(Duration::from_secs_f64(ms.max(0.0) / 1000.0));
    }
    get("retry-after").map(|s| Duration::from_secs_f64(s.max(0.0)))
}

/// The provider's error message in a body (`{"error": {"message": …}}`),
/// else the body itself, shortened.
fn message_of(body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let from_json = parsed.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("message"))
            .or_else(|| v.get("error"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    });
    let text = from_json.unwrap_or_else(|| body.trim().to_owned());
    if text.is_empty() {
        return "(no message)".to_owned();
    }
    text.chars().take(500).collect()
}

/// An error and its causes, `: `-joined (reqwest's own message says only
/// that sending failed; the cause says why).
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let said = cause.to_string();
        if !out.contains(&said) {
            out.push_str(": ");
            out.push_str(&said);
        }
        source = cause.source();
    }
    out
}

/// What a refusal says of the request, whatever its status.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Longer than the model's context: shorten it, never retry it as is.
    TooLong,
    /// Invalid as sent: a 4xx, or a 500 whose body is a validation
    /// error (servers that check requests late answer so). Not retried.
    Invalid,
    /// Neither: the status decides (429 and 5xx wait and retry).
    Other,
}

/// Reads a refused call's status and message. Local servers word a
/// too-long prompt many ways (`context length`, `n_ctx`, `maximum
/// context`, `prompt is too long`, `too many tokens`), and some answer an
/// invalid request with 500.
pub(crate) fn classify(status: u16, message: &str) -> Refusal {
    let m = message.to_ascii_lowercase();
    let too_long = [
        "context length",
        "context_length",
        "context window",
        "maximum context",
        "n_ctx",
        "prompt is too long",
        "too many tokens",
        "exceeds the available context",
        "exceed context",
        "exceeds context",
    ]
    .iter()
    .any(|w| m.contains(w));
    if too_long && (400..=500).contains(&status) {
        return Refusal::TooLong;
    }
    let validation = [
        "validation",
        "invalid",
        "input should be",
        "must be",
        "not supported",
        "unsupported",
        "unrecognized",
        "extra fields not permitted",
        "unknown field",
    ]
    .iter()
    .any(|w| m.contains(w));
    match status {
        400..=499 if !matches!(status, 401 | 403 | 408 | 429) => Refusal::Invalid,
        500 if validation => Refusal::Invalid,
        _ => Refusal::Other,
    }
}

/// A JSON-over-HTTP endpoint of a provider.
pub(crate) struct Http {
    pub(crate) client: reqwest::Client,
    pub(crate) provider: &'static str,
    pub(crate) retry: RetryPolicy,
}

impl Http {
    pub(crate) fn new(provider: &'static str, timeout: Duration) -> Http {
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(Duration::from_secs(30))
            .build()
            .unwrap_or_default();
        Http {
            client,
            provider,
            retry: RetryPolicy::default(),
        }
    }

    /// Caps each call at `timeout`, keeping the retry policy.
    pub(crate) fn set_timeout(&mut self, timeout: Duration) {
        let retry = self.retry.clone();
        *self = Http::new(self.provider, timeout);
        self.retry = retry;
    }

    /// POSTs `body` to `url` with `headers`, retrying what can be retried;
    /// a response with a success status, or the error.
    #[tracing::instrument(name = "provider_call", skip_all, fields(provider = %self.provider, %url))]
    pub(crate) async fn post(
        &self,
        url: &str,
        headers: &[(&str, String)],
        body: &Value,
        key: &ApiKey,
    ) -> Result<reqwest::Response, ProviderError> {
        let provider = self.provider.to_owned();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut req = self.client.post(url).json(body);
            for (name, value) in headers {
                req = req.header(*name, value);
            }
            let last = attempt >= self.retry.max_attempts;
            let resp = match req.send().await {
                Ok(resp) => resp,
                Err(e) if last => {
                    return Err(ProviderError::Connect {
                        provider,
                        url: url.to_owned(),
                        attempts: attempt,
                        message: key.redact(&chain(&e)),
                    })
                }
                Err(e) => {
                    let wait = self.retry.delay(attempt - 1, None);
                    tracing::warn!(attempt, ?wait, error = %key.redact(&chain(&e)), "cannot connect; retrying");
                    tokio::time::sleep(wait).await;
                    continue;
                }
            };
            let status = resp.status().as_u16();
            if resp.status().is_success() {
                tracing::debug!(attempt, status, "answered");
                return Ok(resp);
            }
            let wait = retry_after(resp.headers());
            let text = resp.text().await.unwrap_or_default();
            let message = key.redact(&message_of(&text));
            match classify(status, &message) {
                Refusal::TooLong => {
                    return Err(ProviderError::ContextLength {
                        provider,
                        status,
                        message,
                    })
                }
                Refusal::Invalid => {
                    return Err(ProviderError::BadRequest {
                        provider,
                        status,
                        message,
                    })
                }
                Refusal::Other => {}
            }
            match status {
                401 | 403 => {
                    return Err(ProviderError::Auth {
                        provider,
                        status,
                        message,
                    })
                }
                429 | 500 | 502 | 503 | 504 | 529 if !last => {
                    let wait = self.retry.delay(attempt - 1, wait);
                    tracing::warn!(attempt, status, ?wait, "provider busy or failing; retrying");
                    tokio::time::sleep(wait).await;
                }
                429 | 500..=599 => {
                    return Err(ProviderError::Unavailable {
                        provider,
                        status,
                        attempts: attempt,
                        message,
                    })
                }
                _ => {
                    return Err(ProviderError::BadRequest {
                        provider,
                        status,
                        message,
                    })
                }
            }
        }
    }

    /// The reply's body as `T`, or a protocol error naming `what` was
    /// expected and why the body is not one.
    pub(crate) async fn typed<T: serde::de::DeserializeOwned>(
        &self,
        resp: reqwest::Response,
        what: &str,
    ) -> Result<T, ProviderError> {
        let text = resp
            .text()
            .await
            .map_err(|e| self.protocol(e.to_string()))?;
        serde_json::from_str(&text).map_err(|e| self.protocol(format!("not {what} ({e})")))
    }

    pub(crate) fn protocol(&self, message: String) -> ProviderError {
        ProviderError::Protocol {
            provider: self.provider.to_owned(),
            message,
        }
    }
}

/// One server-sent event: both protocols put the event's kind in its
/// JSON (`type`), so only the data is kept.
pub(crate) struct Event {
    /// The `data:` lines, joined by newlines.
    pub(crate) data: String,
}

/// Reads server-sent events off a streaming response. Bytes are kept
/// until an event is whole, so a character split across chunks survives.
/// Written here rather than taken from `eventsource-stream`: the format is
/// a few lines of the HTML standard, this reader is tested against split
/// and CRLF streams, and the crate would bring `nom` and reqwest's stream
/// feature for it.
pub(crate) struct EventStream {
    resp: reqwest::Response,
    buf: Vec<u8>,
    done: bool,
}

/// The end of the first event in `buf` (after its blank line).
fn event_end(buf: &[u8]) -> Option<usize> {
    let lf = buf.windows(2).position(|w| w == b"\n\n").map(|i| i + 2);
    let crlf = buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4);
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

impl EventStream {
    pub(crate) fn new(resp: reqwest::Response) -> EventStream {
        EventStream {
            resp,
            buf: Vec::new(),
            done: false,
        }
    }

    /// The next event, `None` at the end of the stream.
    pub(crate) async fn next(&mut self) -> Result<Option<Event>, reqwest::Error> {
        loop {
            if let Some(end) = event_end(&self.buf) {
                let block: Vec<u8> = self.buf.drain(..end).collect();
                if let Some(event) = parse_block(&String::from_utf8_lossy(&block)) {
                    return Ok(Some(event));
                }
                continue;
            }
            if self.done {
                let rest = std::mem::take(&mut self.buf);
                return Ok(parse_block(&String::from_utf8_lossy(&rest)));
            }
            match self.resp.chunk().await? {
                Some(bytes) => self.buf.extend_from_slice(&bytes),
                None => self.done = true,
            }
        }
    }
}

fn parse_block(block: &str) -> Option<Event> {
    let mut data: Vec<&str> = Vec::new();
    for line in block.lines() {
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        if field == "data" {
            data.push(value.strip_prefix(' ').unwrap_or(value));
        }
        // `event:` names, comments (`: ping`), ids and retry hints are
        // not read.
    }
    (!data.is_empty()).then(|| Event {
        data: data.join("\n"),
    })
}
