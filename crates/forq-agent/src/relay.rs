//! The model relay of external agents: a coding-agent program in a sandbox
//! holds a dummy key and talks to `http://127.0.0.1:PORT` inside its own
//! network namespace, where forq listens; forq forwards each request to the
//! real model endpoint with the real key in place of the dummy one. No real
//! key enters a sandbox, and the sandbox needs no way out at all: the
//! model's host is on no allowlist, so the tests the program runs cannot
//! reach it (or anything) either.
//!
//! The relay is not an open door to the provider with forq's key: it lets
//! through only the methods and paths of the program's protocol (the
//! messages or responses calls, the model list), takes server-side tools
//! (web search and fetch, code execution, remote MCP servers) out of each
//! request — they would fetch any URL for a sandbox that has no network —
//! follows no redirect, caps request bodies, and meters what the model
//! answers against the run's budget: past it, every request is refused.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use forq_sandbox::ServiceNetwork;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response, StatusCode};

use crate::cost::{Meter, PriceTable};
use crate::message::Usage;
use crate::provider::ApiKey;

/// The largest request body the relay takes (a long conversation with its
/// tools is a few MiB).
pub(crate) const MAX_REQUEST_BYTES: usize = 32 << 20;

/// What a relay may spend: dollars (by the program's price table) and
/// tokens, counted from the model's own answers.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RelayBudget {
    pub(crate) max_cost_usd: Option<f64>,
    pub(crate) max_tokens: Option<u64>,
}

/// Headers never passed on: the connection's own, and the credentials
/// the relay replaces.
const DROPPED: [&str; 9] = [
    "host",
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
    "content-length",
    "x-api-key",
    "authorization",
];

/// The relay of one run: stops when dropped.
#[derive(Debug)]
pub(crate) struct KeyRelay {
    /// Where the program sends its requests, inside the sandbox.
    pub(crate) base_url: String,
    /// The key the program holds: worth nothing outside this relay.
    pub(crate) dummy: String,
    meter: Arc<std::sync::Mutex<Meter>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for KeyRelay {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// How the real key travels upstream.
#[derive(Debug, Clone, Copy)]
pub(crate) enum KeyHeader {
    /// `x-api-key: KEY` (Anthropic).
    XApiKey,
    /// `Authorization: Bearer KEY` (OpenAI).
    Bearer,
}

struct Upstream {
    client: reqwest::Client,
    /// `scheme://host[:port]` of the real endpoint.
    origin: String,
    key: ApiKey,
    header: KeyHeader,
    dummy: String,
    /// The upstream's path, which every request's path begins with.
    prefix: String,
    budget: RelayBudget,
    meter: Arc<std::sync::Mutex<Meter>>,
    /// What the answers still streaming may cost at most ([`Bound`]),
    /// held against the budget until each ends.
    held: Arc<std::sync::Mutex<Held>>,
}

/// Tokens and dollars held for answers not yet ended.
#[derive(Debug, Default)]
struct Held {
    tokens: u64,
    cost_usd: f64,
}

/// The most an answer to one request may cost: its input, estimated from
/// the request's size (a token is three bytes or more of JSON), and its
/// output up to the request's own maximum ([`UNSTATED_MAX_OUTPUT`] when it
/// names none). Held against the budget while the answer streams, so that
/// neither requests sent at once nor an answer the program hangs up on
/// before its usage arrives spend past the budget unseen; an answer cut
/// short is charged the whole bound.
#[derive(Debug, Clone, Copy)]
struct Bound {
    usage: Usage,
    cost_usd: f64,
}

/// The output bound of a request that names no maximum.
const UNSTATED_MAX_OUTPUT: u64 = 32_000;

impl Bound {
    const NOTHING: Bound = Bound {
        usage: Usage {
            input_tokens: 0,
            output_tokens: 0,
        },
        cost_usd: 0.0,
    };

    fn of(body: &[u8], model: &str, meter: &Meter) -> Bound {
        let stated = serde_json::from_slice::<serde_json::Value>(body)
            .ok()
            .and_then(|v| {
                ["max_tokens", "max_output_tokens", "max_completion_tokens"]
                    .iter()
                    .find_map(|k| v.get(*k).and_then(serde_json::Value::as_u64))
            });
        let usage = Usage {
            input_tokens: (body.len() as u64).div_ceil(3),
            output_tokens: stated.unwrap_or(UNSTATED_MAX_OUTPUT),
        };
        Bound {
            usage,
            cost_usd: meter.price(model, usage).unwrap_or(0.0),
        }
    }
}

impl KeyRelay {
    /// What the model answered through this relay so far: its usage and
    /// cost, as forq counted them (not as the program says).
    pub(crate) fn metered(&self) -> Meter {
        self.meter
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Listens in `net` and forwards to `upstream` (the real base URL: its
    /// path is kept, so the program's base is this relay plus that path).
    pub(crate) async fn start(
        net: &ServiceNetwork,
        upstream: &str,
        key: ApiKey,
        header: KeyHeader,
        prices: PriceTable,
        budget: RelayBudget,
    ) -> std::io::Result<KeyRelay> {
        let (origin, path) = split_url(upstream);
        let listener = net.listen(0).await?;
        let port = listener.local_addr()?.port();
        let dummy = format!("forq-relay-{}", random_hex()?);
        let meter = Arc::new(std::sync::Mutex::new(Meter::new(prices)));
        let upstream = Arc::new(Upstream {
            // A redirect would take the key wherever the answer says.
            client: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .map_err(std::io::Error::other)?,
            origin,
            key,
            header,
            dummy: dummy.clone(),
            prefix: path.clone(),
            budget,
            meter: meter.clone(),
            held: Arc::default(),
        });
        let task = tokio::spawn(async move {
            let mut connections = tokio::task::JoinSet::new();
            loop {
                tokio::select! {
                    accepted = listener.accept() => {
                        let Ok((conn, _)) = accepted else { return };
                        let upstream = upstream.clone();
                        connections.spawn(async move {
                            let service = hyper::service::service_fn(move |req| {
                                let upstream = upstream.clone();
                                async move { Ok::<_, Infallible>(forward(&upstream, req).await) }
                            });
                            let io = hyper_util::rt::TokioIo::new(conn);
                            if let Err(e) = hyper::server::conn::http1::Builder::new()
                                .serve_connection(io, service)
                                .await
                            {
                                tracing::debug!(error = %e, "model relay connection ended");
                            }
                        });
                    }
                    Some(_) = connections.join_next(), if !connections.is_empty() => {}
                }
            }
        });
        Ok(KeyRelay {
            base_url: format!("http://127.0.0.1:{port}{path}"),
            dummy,
            meter,
            task,
        })
    }
}

type RelayBody = http_body_util::combinators::BoxBody<Bytes, std::io::Error>;

fn answer(status: StatusCode, text: &str) -> Response<RelayBody> {
    let mut response = Response::new(
        Full::new(Bytes::from(
            serde_json::json!({"error": {"message": text}}).to_string(),
        ))
        .map_err(|never| match never {})
        .boxed(),
    );
    *response.status_mut() = status;
    response
}

/// One request, forwarded with the real key; the answer streams back as it
/// comes (the programs read server-sent events).
async fn forward(upstream: &Upstream, req: Request<Incoming>) -> Response<RelayBody> {
    let (parts, body) = req.into_parts();
    // Only the program this relay serves holds the dummy key.
    let given = parts
        .headers
        .get("x-api-key")
        .or_else(|| parts.headers.get("authorization"))
        .and_then(|v| v.to_str().ok())
        .map(|v| v.strip_prefix("Bearer ").unwrap_or(v));
    if given != Some(upstream.dummy.as_str()) {
        return answer(StatusCode::UNAUTHORIZED, "forq's model relay: unknown key");
    }
    let path = parts
        .uri
        .path_and_query()
        .map_or("/", hyper::http::uri::PathAndQuery::as_str);
    if !allowed(upstream.header, &parts.method, path, &upstream.prefix) {
        return answer(
            StatusCode::FORBIDDEN,
            &format!(
                "forq's model relay: {} {} is not a call of the model's protocol (only messages \
                 or responses, and the model list, go through)",
                parts.method,
                path.chars().take(200).collect::<String>()
            ),
        );
    }
    if let Some(why) = spent(upstream) {
        // 400, not 429: a program retries a rate limit, and stops here.
        return answer(StatusCode::BAD_REQUEST, &why);
    }
    let body = match http_body_util::Limited::new(body, MAX_REQUEST_BYTES)
        .collect()
        .await
    {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            return answer(
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!(
                    "forq's model relay takes requests of at most {} MiB: {e}",
                    MAX_REQUEST_BYTES >> 20
                ),
            )
        }
    };
    let (body, model) = match tame_request(upstream.header, body) {
        Ok(b) => b,
        Err(why) => return answer(StatusCode::BAD_REQUEST, &why),
    };
    // Held from before the request leaves until its answer ends (the
    // scan lets go of it, or charges it whole when the answer is cut).
    let bound = {
        let meter = upstream
            .meter
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // The model list and token counts generate nothing.
        let generates = parts.method == hyper::Method::POST && !path.ends_with("/count_tokens");
        match generates {
            true => Bound::of(&body, &model, &meter),
            false => Bound::NOTHING,
        }
    };
    {
        let mut held = upstream
            .held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        held.tokens += bound.usage.input_tokens + bound.usage.output_tokens;
        held.cost_usd += bound.cost_usd;
    }
    let url = format!("{}{path}", upstream.origin);
    let mut out = upstream.client.request(parts.method.clone(), &url);
    for (name, value) in &parts.headers {
        if !DROPPED.contains(&name.as_str()) {
            out = out.header(name, value);
        }
    }
    out = match upstream.header {
        KeyHeader::XApiKey => out.header("x-api-key", upstream.key.expose()),
        KeyHeader::Bearer => out.bearer_auth(upstream.key.expose()),
    };
    let reply = match out.body(body).send().await {
        Ok(r) => r,
        Err(e) => {
            release(&upstream.held, bound);
            return answer(
                StatusCode::BAD_GATEWAY,
                &upstream
                    .key
                    .redact(&format!("forq's model relay cannot reach the model: {e}")),
            );
        }
    };
    let mut response = Response::builder().status(reply.status().as_u16());
    for (name, value) in reply.headers() {
        if !DROPPED.contains(&name.as_str()) {
            response = response.header(name.as_str(), value.as_bytes());
        }
    }
    // What the model answers is counted as it streams back, and recorded
    // when the answer ends (or breaks off).
    let scan = UsageScan::new(upstream.meter.clone(), model, upstream.held.clone(), bound);
    let chunks = futures_util::stream::unfold(Some((reply, scan)), |state| async move {
        let (mut reply, mut scan) = state?;
        match reply.chunk().await {
            Ok(Some(bytes)) => {
                scan.feed(&bytes);
                Some((Ok(Frame::data(bytes)), Some((reply, scan))))
            }
            Ok(None) => {
                scan.ended = true;
                None
            }
            Err(e) => Some((Err(std::io::Error::other(e)), None)),
        }
    });
    response
        .body(BodyExt::boxed(StreamBody::new(chunks)))
        .unwrap_or_else(|e| answer(StatusCode::BAD_GATEWAY, &e.to_string()))
}

/// Lets go of what `bound` held.
fn release(held: &std::sync::Mutex<Held>, bound: Bound) {
    let mut held = held
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    held.tokens = held
        .tokens
        .saturating_sub(bound.usage.input_tokens + bound.usage.output_tokens);
    held.cost_usd = (held.cost_usd - bound.cost_usd).max(0.0);
}

/// Whether `method path` is a call of the program's protocol under the
/// upstream's `prefix`: Anthropic's messages (and their token count) and
/// model list, or OpenAI's responses, chat completions and model list.
/// Batches, files, fine-tuning, anything else: no. A path with dot
/// segments, percent-escapes or empty segments is no path of these.
fn allowed(header: KeyHeader, method: &hyper::Method, path: &str, prefix: &str) -> bool {
    let path = path.split('?').next().unwrap_or_default();
    if path.contains("/.") || path.contains('%') || path.contains("//") {
        return false;
    }
    let Some(rest) = path.strip_prefix(prefix) else {
        return false;
    };
    let one_model = |r: &str, list: &str| {
        r.strip_prefix(list)
            .and_then(|m| m.strip_prefix('/'))
            .is_some_and(|m| !m.is_empty() && !m.contains('/'))
    };
    match (header, method.as_str()) {
        (KeyHeader::XApiKey, "POST") => {
            matches!(rest, "/v1/messages" | "/v1/messages/count_tokens")
        }
        (KeyHeader::XApiKey, "GET") => rest == "/v1/models" || one_model(rest, "/v1/models"),
        (KeyHeader::Bearer, "POST") => matches!(rest, "/responses" | "/chat/completions"),
        (KeyHeader::Bearer, "GET") => rest == "/models" || one_model(rest, "/models"),
        _ => false,
    }
}

/// Why the relay's budget is spent, if it is.
fn spent(upstream: &Upstream) -> Option<String> {
    let meter = upstream
        .meter
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let held = upstream
        .held
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let tokens = meter.usage.input_tokens + meter.usage.output_tokens + held.tokens;
    let cost_usd = meter.cost_usd + held.cost_usd;
    if let Some(max) = upstream.budget.max_tokens.filter(|m| tokens >= *m) {
        return Some(format!(
            "forq's model relay: the run's budget of {max} tokens is spent ({tokens} used or held \
             for answers still streaming)"
        ));
    }
    if let Some(max) = upstream.budget.max_cost_usd.filter(|m| cost_usd >= *m) {
        return Some(format!(
            "forq's model relay: the run's budget of ${max:.2} is spent (${cost_usd:.2} used or \
             held for answers still streaming)"
        ));
    }
    None
}

/// A request's body as it goes upstream, and the model it names: a JSON
/// object (or nothing), without the tools the provider runs itself and
/// the remote MCP servers and containers it would reach. A body that is
/// not JSON is refused.
fn tame_request(header: KeyHeader, body: Bytes) -> Result<(Bytes, String), String> {
    if body.is_empty() {
        return Ok((body, String::new()));
    }
    let mut value: serde_json::Value = serde_json::from_slice(&body)
        .map_err(|e| format!("forq's model relay takes JSON requests: {e}"))?;
    let Some(object) = value.as_object_mut() else {
        return Err("forq's model relay takes a JSON object".to_owned());
    };
    let model = object
        .get("model")
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let mut changed = false;
    for key in ["mcp_servers", "container"] {
        changed |= object.remove(key).is_some();
    }
    if let Some(tools) = object
        .get_mut("tools")
        .and_then(serde_json::Value::as_array_mut)
    {
        let before = tools.len();
        tools.retain(|t| runs_on_the_client(header, t));
        changed |= tools.len() != before;
    }
    if !changed {
        return Ok((body, model));
    }
    let bytes = serde_json::to_vec(&value).map_err(|e| e.to_string())?;
    Ok((Bytes::from(bytes), model))
}

/// Whether tool `t` is one the program runs itself (in its sandbox), not
/// one the provider runs on its own machines: a function or custom tool,
/// or Anthropic's client tools (bash, text editor, computer, memory).
fn runs_on_the_client(header: KeyHeader, t: &serde_json::Value) -> bool {
    let kind = t.get("type").and_then(serde_json::Value::as_str);
    match header {
        KeyHeader::XApiKey => match kind {
            None | Some("custom") => true,
            Some(k) => ["bash_", "text_editor_", "computer_", "memory_"]
                .iter()
                .any(|p| k.starts_with(p)),
        },
        KeyHeader::Bearer => matches!(
            kind,
            Some("function" | "custom" | "local_shell" | "shell" | "apply_patch")
        ),
    }
}

/// Counts the tokens of one answer as it streams back — server-sent events
/// or one JSON object, in either protocol — and records them on the meter
/// when it is dropped (the answer ended, or the program hung up).
struct UsageScan {
    meter: Arc<std::sync::Mutex<Meter>>,
    model: String,
    held: Arc<std::sync::Mutex<Held>>,
    bound: Bound,
    /// Whether the answer came to its end: its last event, or the end of
    /// its body (else the program hung up, or the model's connection
    /// broke, before it did).
    ended: bool,
    line: Vec<u8>,
    whole: Vec<u8>,
    usage: Usage,
}

/// The most of one line (and of a whole answer) the scan keeps to read.
const SCAN_CAP: usize = 4 << 20;

impl UsageScan {
    fn new(
        meter: Arc<std::sync::Mutex<Meter>>,
        model: String,
        held: Arc<std::sync::Mutex<Held>>,
        bound: Bound,
    ) -> UsageScan {
        UsageScan {
            meter,
            model,
            held,
            bound,
            ended: false,
            line: Vec::new(),
            whole: Vec::new(),
            usage: Usage::default(),
        }
    }

    fn feed(&mut self, bytes: &[u8]) {
        if self.whole.len() < SCAN_CAP {
            self.whole
                .extend_from_slice(&bytes[..bytes.len().min(SCAN_CAP - self.whole.len())]);
        }
        for &b in bytes {
            if b == b'\n' {
                let line = std::mem::take(&mut self.line);
                self.read_line(&line);
            } else if self.line.len() < SCAN_CAP {
                self.line.push(b);
            }
        }
    }

    fn read_line(&mut self, line: &[u8]) {
        let text = String::from_utf8_lossy(line);
        let json = text
            .trim()
            .strip_prefix("data:")
            .unwrap_or(text.trim())
            .trim();
        if json == "[DONE]" {
            self.ended = true;
        }
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(json) {
            self.take(&v);
            // The answer's last event: what follows is the connection's
            // end, which a program need not wait for.
            let last = [
                "message_stop",
                "response.completed",
                "response.incomplete",
                "response.failed",
            ];
            if v["type"].as_str().is_some_and(|t| last.contains(&t)) {
                self.ended = true;
            }
        }
    }

    /// The usage `v` reports, where either protocol puts it; counts are
    /// running totals, so the largest seen is the answer's.
    fn take(&mut self, v: &serde_json::Value) {
        for usage in [&v["usage"], &v["message"]["usage"], &v["response"]["usage"]] {
            let n = |k: &str| {
                usage
                    .get(k)
                    .and_then(serde_json::Value::as_u64)
                    .unwrap_or(0)
            };
            let input = n("input_tokens")
                + n("prompt_tokens")
                + n("cache_creation_input_tokens")
                + n("cache_read_input_tokens");
            let output = n("output_tokens") + n("completion_tokens");
            self.usage.input_tokens = self.usage.input_tokens.max(input);
            self.usage.output_tokens = self.usage.output_tokens.max(output);
        }
    }
}

impl Drop for UsageScan {
    fn drop(&mut self) {
        let line = std::mem::take(&mut self.line);
        self.read_line(&line);
        if self.usage == Usage::default() {
            if let Ok(v) = serde_json::from_slice::<serde_json::Value>(&self.whole) {
                self.take(&v);
            }
        }
        release(&self.held, self.bound);
        // An answer cut short may have cost up to its bound (the model
        // went on, or its usage never came): charged that much.
        if !self.ended {
            self.usage.input_tokens = self.usage.input_tokens.max(self.bound.usage.input_tokens);
            self.usage.output_tokens = self.usage.output_tokens.max(self.bound.usage.output_tokens);
        }
        if self.usage != Usage::default() {
            self.meter
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .record(&self.model, self.usage);
        }
    }
}

/// `scheme://host[:port]` and the path (without a trailing `/`) of `url`.
fn split_url(url: &str) -> (String, String) {
    let url = url.trim_end_matches('/');
    let after = url.find("://").map_or(0, |i| i + 3);
    match url[after..].find('/') {
        Some(i) => (url[..after + i].to_owned(), url[after + i..].to_owned()),
        None => (url.to_owned(), String::new()),
    }
}

fn random_hex() -> std::io::Result<String> {
    use std::io::Read as _;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_into_origin_and_path() {
        assert_eq!(
            split_url("https://api.openai.com/v1"),
            ("https://api.openai.com".to_owned(), "/v1".to_owned())
        );
        assert_eq!(
            split_url("https://api.anthropic.com/"),
            ("https://api.anthropic.com".to_owned(), String::new())
        );
        assert_eq!(
            split_url("http://127.0.0.1:8080/base/v1/"),
            ("http://127.0.0.1:8080".to_owned(), "/base/v1".to_owned())
        );
    }
}
