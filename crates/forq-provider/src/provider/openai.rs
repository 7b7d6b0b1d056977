//! OpenAI-compatible Chat Completions (`POST {base}/chat/completions`):
//! OpenAI itself, and any server that speaks it (vLLM, llama.cpp's
//! server, Ollama) through `OPENAI_BASE_URL`.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{json, Value};

use super::http::{EventStream, Http};
use super::{ApiKey, Error, Provider, RetryPolicy, Sink, DEFAULT_TIMEOUT};
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
    pub fn from_env() -> Result<OpenAi, Error> {
        let base = std::env::var("OPENAI_BASE_URL")
            .ok()
            .filter(|b| !b.trim().is_empty())
            .unwrap_or_else(|| OPENAI_BASE.to_owned());
        OpenAi::new(&base, ApiKey::from_env("OPENAI_API_KEY"))
    }

    /// At `base_url` (`https://api.openai.com/v1`, `http://localhost:11434/v1`)
    /// with `key`.
    pub fn new(base_url: &str, key: Option<ApiKey>) -> Result<OpenAi, Error> {
        let base_url = base_url.trim_end_matches('/').to_owned();
        if key.is_none() && base_url == OPENAI_BASE {
            return Err(Error::MissingKey {
                provider: "openai".to_owned(),
                env: "OPENAI_API_KEY".to_owned(),
            });
        }
        Ok(OpenAi {
            http: Http::new("openai", DEFAULT_TIMEOUT),
            base_url,
            key,
        })
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

    fn body(&self, req: &Request) -> Value {
        let mut messages = Vec::new();
        if !req.system.is_empty() {
            messages.push(json!({"role": "system", "content": req.system}));
        }
        for m in &req.messages {
            messages.extend(wire_messages(m));
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
        if !req.tools.is_empty() {
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
        if let Some(schema) = &req.response_schema {
            body["response_format"] = json!({"type": "json_schema", "json_schema": {
                "name": schema.name, "schema": schema.schema, "strict": true}});
        }
        if req.stream {
            body["stream"] = json!(true);
            body["stream_options"] = json!({"include_usage": true});
        }
        body
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

fn usage(v: &Value) -> Usage {
    Usage {
        input_tokens: v.get("prompt_tokens").and_then(Value::as_u64).unwrap_or(0),
        output_tokens: v
            .get("completion_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0),
    }
}

/// A tool call being assembled from stream deltas.
#[derive(Default)]
struct PendingCall {
    id: String,
    name: String,
    arguments: String,
}

#[async_trait::async_trait]
impl Provider for OpenAi {
    fn name(&self) -> &str {
        "openai"
    }

    async fn complete(&self, req: &Request, sink: Option<Sink<'_>>) -> Result<Response, Error> {
        let url = format!("{}/chat/completions", self.base_url);
        let key = self.key.clone().unwrap_or_else(|| ApiKey::new(""));
        let resp = self
            .http
            .post(&url, &self.headers(), &self.body(req), &key)
            .await?;
        if !req.stream {
            let v = self.http.json(resp).await?;
            let choice = v
                .pointer("/choices/0")
                .ok_or_else(|| self.http.protocol("no choices in the reply".to_owned()))?;
            let msg = &choice["message"];
            let mut parts = Vec::new();
            if let Some(text) = msg.get("content").and_then(Value::as_str) {
                if !text.is_empty() {
                    parts.push(Part::Text {
                        text: text.to_owned(),
                    });
                }
            }
            for call in msg
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let raw = call
                    .pointer("/function/arguments")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let (arguments, invalid_arguments) = parse_arguments(raw);
                parts.push(Part::ToolCall {
                    id: call["id"].as_str().unwrap_or_default().to_owned(),
                    name: call
                        .pointer("/function/name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    arguments,
                    invalid_arguments,
                });
            }
            return Ok(Response {
                message: Message {
                    role: Role::Assistant,
                    parts,
                },
                usage: usage(&v["usage"]),
                stop: stop_reason(choice.get("finish_reason").and_then(Value::as_str)),
                model: v["model"].as_str().unwrap_or(&req.model).to_owned(),
            });
        }
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
            let chunk: Value = serde_json::from_str(&event.data).map_err(|e| {
                self.http
                    .protocol(format!("a stream chunk is not JSON ({e})"))
            })?;
            if let Some(m) = chunk.get("model").and_then(Value::as_str) {
                model = m.to_owned();
            }
            if let Some(u) = chunk.get("usage").filter(|u| !u.is_null()) {
                used = usage(u);
            }
            let Some(choice) = chunk.pointer("/choices/0") else {
                continue;
            };
            if let Some(f) = choice.get("finish_reason").and_then(Value::as_str) {
                finish = Some(f.to_owned());
            }
            let delta = &choice["delta"];
            if let Some(t) = delta.get("content").and_then(Value::as_str) {
                if !t.is_empty() {
                    text.push_str(t);
                    emit(Delta::Text(t.to_owned()));
                }
            }
            for call in delta
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let index = call.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
                let pending = calls.entry(index).or_default();
                let id = call.get("id").and_then(Value::as_str);
                let name = call.pointer("/function/name").and_then(Value::as_str);
                if let Some(id) = id {
                    pending.id = id.to_owned();
                }
                if let Some(name) = name {
                    pending.name.push_str(name);
                }
                if id.is_some() || name.is_some() {
                    emit(Delta::ToolCall {
                        index,
                        id: pending.id.clone(),
                        name: pending.name.clone(),
                    });
                }
                if let Some(fragment) = call.pointer("/function/arguments").and_then(Value::as_str)
                {
                    if !fragment.is_empty() {
                        pending.arguments.push_str(fragment);
                        emit(Delta::ToolArguments {
                            index,
                            fragment: fragment.to_owned(),
                        });
                    }
                }
            }
        }
        let mut parts = Vec::new();
        if !text.is_empty() {
            parts.push(Part::Text { text });
        }
        for (_, call) in calls {
            let (arguments, invalid_arguments) = parse_arguments(&call.arguments);
            parts.push(Part::ToolCall {
                id: call.id,
                name: call.name,
                arguments,
                invalid_arguments,
            });
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
