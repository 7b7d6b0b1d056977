//! OpenAI-compatible Chat Completions (`POST {base}/chat/completions`):
//! OpenAI itself, and any server that speaks it (vLLM, llama.cpp's
//! server, Ollama) through `OPENAI_BASE_URL`.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{json, Value};

use super::compat::{text_protocol_messages, text_tool_call, Capabilities};
use super::http::{EventStream, Http};
use super::{ApiKey, Provider, ProviderError, RetryPolicy, Sink, DEFAULT_TIMEOUT};
use crate::message::{
    parse_arguments, Delta, Message, Part, Request, Response, Role, StopReason, ToolChoice, Usage,
};

/// OpenAI's own endpoint.
pub(crate) const OPENAI_BASE: &str = "https://api.openai.com/v1";

/// An OpenAI-compatible provider.
pub struct OpenAi {
    http: Http,
    base_url: String,
    key: Option<ApiKey>,
    /// What each model has shown it takes ([`Capabilities`]), learnt from
    /// the endpoint's refusals.
    learnt: std::sync::Mutex<std::collections::HashMap<String, Capabilities>>,
    /// The endpoint's `/models` list, once read (`None` inside: it has
    /// none that forq can read).
    models: tokio::sync::Mutex<Option<Option<Value>>>,
    /// `openai`, or `local` for a server on the operator's machine.
    name: &'static str,
    /// Calls at once, when capped (a local server answers one at a time).
    serial: Option<tokio::sync::Semaphore>,
}

impl std::fmt::Debug for OpenAi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAi")
            .field("base_url", &self.base_url)
            .field("key", &self.key)
            .finish()
    }
}

impl OpenAi {
    /// From the environment: `OPENAI_BASE_URL` (default OpenAI's) and
    /// `OPENAI_API_KEY`, which OpenAI's own endpoint requires (a local
    /// server may not).
    pub fn from_env() -> Result<OpenAi, ProviderError> {
        let base = std::env::var("OPENAI_BASE_URL")
            .ok()
            .filter(|b| !b.trim().is_empty())
            .unwrap_or_else(|| OPENAI_BASE.to_owned());
        OpenAi::new(&base, ApiKey::from_env("OPENAI_API_KEY"))
    }

    /// At `base_url` (`https://api.openai.com/v1`, `http://localhost:11434/v1`)
    /// with `key`.
    pub fn new(base_url: &str, key: Option<ApiKey>) -> Result<OpenAi, ProviderError> {
        let base_url = base_url.trim_end_matches('/').to_owned();
        if key.is_none() && base_url == OPENAI_BASE {
            return Err(ProviderError::MissingKey {
                provider: "openai".to_owned(),
                env: "OPENAI_API_KEY".to_owned(),
            });
        }
        Ok(OpenAi {
            http: Http::new("openai", DEFAULT_TIMEOUT),
            base_url,
            key,
            learnt: Default::default(),
            models: Default::default(),
            name: "openai",
            serial: None,
        })
    }

    /// A server people run on their own machine (llama.cpp's, Ollama,
    /// vLLM, LM Studio) at `base_url`: no key needed (`OPENAI_API_KEY` is
    /// sent when set), nothing priced, calls one at a time and given half
    /// an hour each, as a small machine answers slowly.
    pub fn local(base_url: &str) -> Result<OpenAi, ProviderError> {
        let mut local = OpenAi::new(base_url, ApiKey::from_env("OPENAI_API_KEY"))?;
        local.name = "local";
        local.serial = Some(tokio::sync::Semaphore::new(1));
        local.http.set_timeout(Duration::from_secs(1800));
        Ok(local)
    }

    /// Retries as `policy` says.
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.http.retry = policy;
        self
    }

    /// Caps each call's wall clock.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.http.set_timeout(timeout);
        self
    }

    /// What `model` takes at this endpoint, as far as forq has learnt
    /// (everything, until a refusal says otherwise).
    pub fn capabilities(&self, model: &str) -> Capabilities {
        self.learnt
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(model)
            .copied()
            .unwrap_or_default()
    }

    fn learn(&self, model: &str, caps: Capabilities) {
        self.learnt
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(model.to_owned(), caps);
    }

    fn body(&self, req: &Request, caps: Capabilities) -> Value {
        let mut messages = Vec::new();
        let system = format!("{}{}", req.system, caps.system_notes(req));
        if !system.is_empty() {
            messages.push(json!({"role": "system", "content": system.trim_start()}));
        }
        for m in &req.messages {
            if caps.native_tools {
                messages.extend(wire_messages(m));
            } else {
                messages.extend(text_protocol_messages(m));
            }
        }
        let mut body = json!({"model": req.model, "messages": messages});
        // OpenAI's newer models take `max_completion_tokens`; compatible
        // servers know `max_tokens`.
        let tokens_field = if self.base_url == OPENAI_BASE {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        body[tokens_field] = json!(req.max_tokens);
        if let Some(t) = req.temperature {
            body["temperature"] = json!(t);
        }
        if !req.tools.is_empty() && caps.native_tools {
            body["tools"] = req
                .tools
                .iter()
                .map(|t| {
                    json!({"type": "function", "function": {
                        "name": t.name, "description": t.description, "parameters": t.parameters}})
                })
                .collect();
            body["tool_choice"] = match &req.tool_choice {
                ToolChoice::Auto => json!("auto"),
                ToolChoice::None => json!("none"),
                ToolChoice::Required => json!("required"),
                ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
            };
        }
        if let Some(format) = caps.response_format(req) {
            body["response_format"] = format;
        }
        if req.stream {
            body["stream"] = json!(true);
            body["stream_options"] = json!({"include_usage": true});
        }
        body
    }

    /// Our response from a whole (not streamed) reply.
    fn reply(&self, reply: Reply, req: &Request) -> Result<Response, ProviderError> {
        let choice = reply
            .choices
            .into_iter()
            .next()
            .ok_or_else(|| self.http.protocol("no choices in the reply".to_owned()))?;
        let mut parts = Vec::new();
        if let Some(text) = choice.message.content.filter(|t| !t.is_empty()) {
            parts.push(Part::Text { text });
        }
        for (position, call) in choice.message.tool_calls.into_iter().enumerate() {
            let id = call_id(call.id, position);
            parts.push(tool_part(
                id,
                call.function.name,
                &call.function.arguments,
                &self.http,
            )?);
        }
        Ok(Response {
            message: Message {
                role: Role::Assistant,
                parts,
            },
            usage: reply.usage.map(Usage::from).unwrap_or_default(),
            stop: stop_reason(choice.finish_reason.as_deref()),
            model: reply.model.unwrap_or_else(|| req.model.clone()),
        })
    }

    fn headers(&self) -> Vec<(&'static str, String)> {
        match &self.key {
            Some(k) => vec![("authorization", format!("Bearer {}", k.expose()))],
            None => Vec::new(),
        }
    }
}

/// One of our messages as Chat Completions messages: tool results are
/// messages of their own (`role: tool`).
fn wire_messages(m: &Message) -> Vec<Value> {
    let text = m.text();
    match m.role {
        Role::Assistant => {
            let calls: Vec<Value> = m
                .parts
                .iter()
                .filter_map(|p| match (p, p.arguments_text()) {
                    (Part::ToolCall { id, name, .. }, Some(args)) => {
                        Some(json!({"id": id, "type": "function",
                            "function": {"name": name, "arguments": args}}))
                    }
                    _ => None,
                })
                .collect();
            let mut msg = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
            if !calls.is_empty() {
                msg["tool_calls"] = Value::Array(calls);
            }
            vec![msg]
        }
        Role::User => {
            let mut out: Vec<Value> = m
                .parts
                .iter()
                .filter_map(|p| match p {
                    Part::ToolResult { id, content, .. } => {
                        Some(json!({"role": "tool", "tool_call_id": id, "content": content}))
                    }
                    _ => None,
                })
                .collect();
            if !text.is_empty() {
                out.push(json!({"role": "user", "content": text}));
            }
            out
        }
    }
}

fn stop_reason(finish: Option<&str>) -> StopReason {
    match finish {
        Some("stop") | None => StopReason::EndTurn,
        Some("tool_calls") | Some("function_call") => StopReason::ToolUse,
        Some("length") => StopReason::MaxTokens,
        Some(other) => StopReason::Other(other.to_owned()),
    }
}

/// A Chat Completions reply, as the wire has it (the fields forq reads).
#[derive(Debug, Deserialize)]
struct Reply {
    model: Option<String>,
    #[serde(default)]
    choices: Vec<Choice>,
    usage: Option<WireUsage>,
}

#[derive(Debug, Deserialize)]
struct Choice {
    message: ReplyMessage,
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ReplyMessage {
    content: Option<String>,
    #[serde(default)]
    tool_calls: Vec<ReplyCall>,
}

#[derive(Debug, Deserialize)]
struct ReplyCall {
    /// Some compatible servers send none: forq gives the call one of its
    /// own, so the result it sends back answers the right call.
    id: Option<String>,
    function: ReplyFunction,
}

#[derive(Debug, Deserialize)]
struct ReplyFunction {
    name: String,
    #[serde(default)]
    arguments: String,
}

#[derive(Debug, Default, Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

impl From<WireUsage> for Usage {
    fn from(u: WireUsage) -> Usage {
        Usage {
            input_tokens: u.prompt_tokens,
            output_tokens: u.completion_tokens,
        }
    }
}

/// One event of a streamed reply.
#[derive(Debug, Deserialize)]
struct Chunk {
    model: Option<String>,
    #[serde(default)]
    choices: Vec<ChunkChoice>,
    usage: Option<WireUsage>,
}

#[derive(Debug, Deserialize)]
struct ChunkChoice {
    #[serde(default)]
    delta: ChunkDelta,
    finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct ChunkDelta {
    content: Option<String>,
    #[serde(default)]
    tool_calls: Vec<CallDelta>,
}

#[derive(Debug, Deserialize)]
struct CallDelta {
    #[serde(default)]
    index: usize,
    id: Option<String>,
    function: Option<FunctionDelta>,
}

#[derive(Debug, Deserialize)]
struct FunctionDelta {
    name: Option<String>,
    arguments: Option<String>,
}

/// A tool call being assembled from stream deltas.
#[derive(Default)]
struct PendingCall {
    id: String,
    name: String,
    arguments: String,
}

/// The call's id, or one of forq's own when the server sent none.
fn call_id(id: Option<String>, position: usize) -> String {
    id.filter(|i| !i.is_empty())
        .unwrap_or_else(|| format!("call_{position}"))
}

/// The parts of a finished call list, refusing a call without a name.
fn tool_part(id: String, name: String, raw: &str, http: &Http) -> Result<Part, ProviderError> {
    if name.is_empty() {
        return Err(http.protocol(format!("tool call {id} has no function name")));
    }
    let (arguments, invalid_arguments) = parse_arguments(raw);
    Ok(Part::ToolCall {
        id,
        name,
        arguments,
        invalid_arguments,
    })
}

#[async_trait::async_trait]
impl Provider for OpenAi {
    fn name(&self) -> &str {
        self.name
    }

    fn capabilities(&self, model: &str) -> Option<Capabilities> {
        Some(OpenAi::capabilities(self, model))
    }

    async fn context_window(&self, model: &str) -> Option<u32> {
        if let Some(listed) = self.listed_window(model).await {
            return Some(listed);
        }
        super::known_context_window(model)
    }

    async fn complete(
        &self,
        req: &Request,
        sink: Option<Sink<'_>>,
    ) -> Result<Response, ProviderError> {
        let _turn = match &self.serial {
            Some(one) => Some(
                one.acquire()
                    .await
                    .map_err(|e| self.http.protocol(e.to_string()))?,
            ),
            None => None,
        };
        let (resp, caps) = self.post(req).await?;
        // A server that streams whatever it was asked is read as a stream.
        let streams = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let response = if req.stream || streams {
            self.streamed(resp, req, sink).await?
        } else {
            let reply: Reply = self.http.typed(resp, "a Chat Completions reply").await?;
            self.reply(reply, req)?
        };
        Ok(match caps.native_tools {
            true => response,
            false => with_text_calls(response, &req.tools),
        })
    }
}

impl OpenAi {
    /// The context window the endpoint's `/models` gives `model` (vLLM's
    /// `max_model_len`, llama.cpp's `meta.n_ctx_train`, a gateway's
    /// `context_length`); a local server listing one model answers for it
    /// whatever it is called.
    async fn listed_window(&self, model: &str) -> Option<u32> {
        let mut cached = self.models.lock().await;
        if cached.is_none() {
            let mut get = self
                .http
                .client
                .get(format!("{}/models", self.base_url))
                .timeout(Duration::from_secs(10));
            for (name, value) in self.headers() {
                get = get.header(name, value);
            }
            let listed = match get.send().await {
                Ok(resp) if resp.status().is_success() => resp.json::<Value>().await.ok(),
                _ => None,
            };
            *cached = Some(listed);
        }
        let data = cached.as_ref()?.as_ref()?.get("data")?.as_array()?;
        let entry = data
            .iter()
            .find(|m| m["id"] == model)
            .or_else(|| (data.len() == 1).then(|| &data[0]))?;
        [
            "/context_length",
            "/max_model_len",
            "/context_window",
            "/meta/n_ctx",
            "/meta/n_ctx_train",
        ]
        .iter()
        .find_map(|p| entry.pointer(p)?.as_u64())
        .and_then(|n| u32::try_from(n).ok())
    }

    /// Posts `req` as this endpoint takes it for its model; a refusal as
    /// invalid is sent again with the next thing down ([`Capabilities`]),
    /// and what worked is remembered.
    async fn post(
        &self,
        req: &Request,
    ) -> Result<(reqwest::Response, Capabilities), ProviderError> {
        let url = format!("{}/chat/completions", self.base_url);
        let key = self.key.clone().unwrap_or_else(|| ApiKey::new(""));
        let mut caps = self.capabilities(&req.model);
        loop {
            match self
                .http
                .post(&url, &self.headers(), &self.body(req, caps), &key)
                .await
            {
                Ok(resp) => return Ok((resp, caps)),
                Err(e) => {
                    let ProviderError::BadRequest { message, .. } = &e else {
                        return Err(e);
                    };
                    let Some(next) = caps.after_refusal(req, message) else {
                        return Err(e);
                    };
                    tracing::info!(model = %req.model, ?next, %message, "the endpoint refused part of the request; asking again without it");
                    self.learn(&req.model, next);
                    caps = next;
                }
            }
        }
    }

    /// A streamed reply, read chunk by chunk.
    async fn streamed(
        &self,
        resp: reqwest::Response,
        req: &Request,
        sink: Option<Sink<'_>>,
    ) -> Result<Response, ProviderError> {
        let mut events = EventStream::new(resp);
        let mut text = String::new();
        let mut calls: BTreeMap<usize, PendingCall> = BTreeMap::new();
        let mut finish: Option<String> = None;
        let mut used = Usage::default();
        let mut model = req.model.clone();
        let emit = |d: Delta| {
            if let Some(s) = sink {
                s(&d);
            }
        };
        while let Some(event) = events
            .next()
            .await
            .map_err(|e| self.http.protocol(format!("the stream broke: {e}")))?
        {
            if event.data.trim() == "[DONE]" {
                break;
            }
            let chunk: Chunk = serde_json::from_str(&event.data).map_err(|e| {
                self.http.protocol(format!(
                    "a stream chunk is not a Chat Completions chunk ({e})"
                ))
            })?;
            if let Some(m) = chunk.model {
                model = m;
            }
            if let Some(u) = chunk.usage {
                used = u.into();
            }
            let Some(choice) = chunk.choices.into_iter().next() else {
                continue;
            };
            if let Some(f) = choice.finish_reason {
                finish = Some(f);
            }
            if let Some(t) = choice.delta.content.filter(|t| !t.is_empty()) {
                text.push_str(&t);
                emit(Delta::Text(t));
            }
            for call in choice.delta.tool_calls {
                let index = call.index;
                let pending = calls.entry(index).or_default();
                let (name, fragment) = match call.function {
                    Some(f) => (f.name, f.arguments),
                    None => (None, None),
                };
                let named = call.id.is_some() || name.is_some();
                if let Some(id) = call.id {
                    pending.id = id;
                }
                if let Some(name) = name {
                    pending.name.push_str(&name);
                }
                if named {
                    emit(Delta::ToolCall {
                        index,
                        id: pending.id.clone(),
                        name: pending.name.clone(),
                    });
                }
                if let Some(fragment) = fragment.filter(|f| !f.is_empty()) {
                    pending.arguments.push_str(&fragment);
                    emit(Delta::ToolArguments { index, fragment });
                }
            }
        }
        let mut parts = Vec::new();
        if !text.is_empty() {
            parts.push(Part::Text { text });
        }
        for (position, (_, call)) in calls.into_iter().enumerate() {
            let id = call_id(Some(call.id), position);
            parts.push(tool_part(id, call.name, &call.arguments, &self.http)?);
        }
        Ok(Response {
            message: Message {
                role: Role::Assistant,
                parts,
            },
            usage: used,
            stop: stop_reason(finish.as_deref()),
            model,
        })
    }
}

/// A reply from a server without tool calls, its call (written as text)
/// made a tool call again.
fn with_text_calls(mut response: Response, tools: &[crate::message::ToolSpec]) -> Response {
    let text = response.message.text();
    let Some((name, arguments, rest)) = text_tool_call(&text, tools) else {
        return response;
    };
    let mut parts = Vec::new();
    if !rest.is_empty() {
        parts.push(Part::Text { text: rest });
    }
    parts.push(Part::ToolCall {
        id: "call_0".to_owned(),
        name,
        arguments,
        invalid_arguments: None,
    });
    response.message.parts = parts;
    response.stop = StopReason::ToolUse;
    response
}
