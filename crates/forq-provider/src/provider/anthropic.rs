//! Anthropic Messages (`POST {base}/v1/messages`): content blocks,
//! `tool_use`/`tool_result`, and the streaming events.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{json, Value};

use super::http::{EventStream, Http};
use super::{ApiKey, Error, Provider, RetryPolicy, Sink, DEFAULT_TIMEOUT};
use crate::message::{
    parse_arguments, Delta, Message, Part, Request, Response, Role, StopReason, ToolChoice, Usage,
};

pub(crate) const ANTHROPIC_BASE: &str = "https://api.anthropic.com";
const API_VERSION: &str = "2023-06-01";

/// The Anthropic provider.
pub struct Anthropic {
    http: Http,
    base_url: String,
    key: ApiKey,
}

impl std::fmt::Debug for Anthropic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Anthropic")
            .field("base_url", &self.base_url)
            .field("key", &self.key)
            .finish()
    }
}

impl Anthropic {
    /// From the environment: `ANTHROPIC_API_KEY` (required) and
    /// `ANTHROPIC_BASE_URL` (default Anthropic's).
    pub fn from_env() -> Result<Anthropic, Error> {
        let key = ApiKey::from_env("ANTHROPIC_API_KEY").ok_or_else(|| Error::MissingKey {
            provider: "anthropic".to_owned(),
            env: "ANTHROPIC_API_KEY".to_owned(),
        })?;
        let base = std::env::var("ANTHROPIC_BASE_URL")
            .ok()
            .filter(|b| !b.trim().is_empty())
            .unwrap_or_else(|| ANTHROPIC_BASE.to_owned());
        Ok(Anthropic::new(&base, key))
    }

    /// At `base_url` (without `/v1`) with `key`.
    pub fn new(base_url: &str, key: ApiKey) -> Anthropic {
        Anthropic {
            http: Http::new("anthropic", DEFAULT_TIMEOUT),
            base_url: base_url.trim_end_matches('/').to_owned(),
            key,
        }
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

    fn body(req: &Request) -> Value {
        let messages: Vec<Value> = req
            .messages
            .iter()
            .map(|m| {
                let role = match m.role {
                    Role::User => "user",
                    Role::Assistant => "assistant",
                };
                let content: Vec<Value> = m.parts.iter().map(block).collect();
                json!({"role": role, "content": content})
            })
            .collect();
        let mut body =
            json!({"model": req.model, "max_tokens": req.max_tokens, "messages": messages});
        if !req.system.is_empty() {
            body["system"] = json!(req.system);
        }
        if let Some(t) = req.temperature {
            body["temperature"] = json!(t);
        }
        let mut tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
        let mut choice = match &req.tool_choice {
            ToolChoice::Auto => json!({"type": "auto"}),
            ToolChoice::None => json!({"type": "none"}),
            ToolChoice::Required => json!({"type": "any"}),
            ToolChoice::Tool(name) => json!({"type": "tool", "name": name}),
        };
        // Structured output: the reply is the input of a tool it must call.
        if let Some(schema) = &req.response_schema {
            tools.push(json!({"name": schema.name,
                "description": "Answer with this tool; its input is the whole answer.",
                "input_schema": schema.schema}));
            choice = json!({"type": "tool", "name": schema.name});
        }
        if !tools.is_empty() {
            body["tools"] = Value::Array(tools);
            body["tool_choice"] = choice;
        }
        if req.stream {
            body["stream"] = json!(true);
        }
        body
    }

    fn headers(&self) -> Vec<(&'static str, String)> {
        vec![
            ("x-api-key", self.key.expose().to_owned()),
            ("anthropic-version", API_VERSION.to_owned()),
        ]
    }
}

/// One of our parts as a content block.
fn block(part: &Part) -> Value {
    match part {
        Part::Text { text } => json!({"type": "text", "text": text}),
        Part::ToolCall {
            id,
            name,
            arguments,
            ..
        } => {
            let input = if arguments.is_object() {
                arguments.clone()
            } else {
                json!({})
            };
            json!({"type": "tool_use", "id": id, "name": name, "input": input})
        }
        Part::ToolResult {
            id,
            content,
            is_error,
        } => {
            json!({"type": "tool_result", "tool_use_id": id, "content": content, "is_error": is_error})
        }
    }
}

fn stop_reason(reason: Option<&str>) -> StopReason {
    match reason {
        Some("end_turn") | Some("stop_sequence") | None => StopReason::EndTurn,
        Some("tool_use") => StopReason::ToolUse,
        Some("max_tokens") => StopReason::MaxTokens,
        Some(other) => StopReason::Other(other.to_owned()),
    }
}

/// A content block being assembled from stream events.
enum Pending {
    Text(String),
    Tool {
        id: String,
        name: String,
        json: String,
    },
}

/// The reply's parts, with a structured-output tool call turned back into
/// the JSON text it stands for.
fn finish_parts(parts: Vec<Part>, req: &Request) -> (Vec<Part>, bool) {
    let Some(schema) = &req.response_schema else {
        return (parts, false);
    };
    let mut structured = false;
    let parts = parts
        .into_iter()
        .map(|p| match p {
            Part::ToolCall {
                name, arguments, ..
            } if name == schema.name => {
                structured = true;
                Part::Text {
                    text: arguments.to_string(),
                }
            }
            other => other,
        })
        .collect();
    (parts, structured)
}

#[async_trait::async_trait]
impl Provider for Anthropic {
    fn name(&self) -> &str {
        "anthropic"
    }

    async fn complete(&self, req: &Request, sink: Option<Sink<'_>>) -> Result<Response, Error> {
        let url = format!("{}/v1/messages", self.base_url);
        let resp = self
            .http
            .post(&url, &self.headers(), &Self::body(req), &self.key)
            .await?;
        let emit = |d: Delta| {
            if let Some(s) = sink {
                s(&d);
            }
        };
        let (parts, usage, stop, model) = if !req.stream {
            let v = self.http.json(resp).await?;
            let mut parts = Vec::new();
            for b in v["content"].as_array().into_iter().flatten() {
                match b["type"].as_str() {
                    Some("text") => parts.push(Part::Text {
                        text: b["text"].as_str().unwrap_or_default().to_owned(),
                    }),
                    Some("tool_use") => parts.push(Part::ToolCall {
                        id: b["id"].as_str().unwrap_or_default().to_owned(),
                        name: b["name"].as_str().unwrap_or_default().to_owned(),
                        arguments: b["input"].clone(),
                        invalid_arguments: None,
                    }),
                    _ => {}
                }
            }
            let usage = Usage {
                input_tokens: v
                    .pointer("/usage/input_tokens")
                    .and_then(Value::as_u64)
                    .unwrap_or(0),
                output_tokens: v
                    .pointer("/usage/output_tokens")
                    .and_then(Value::as_u64)
                    .unwrap_or(0),
            };
            let stop = stop_reason(v["stop_reason"].as_str());
            let model = v["model"].as_str().unwrap_or(&req.model).to_owned();
            (parts, usage, stop, model)
        } else {
            let mut events = EventStream::new(resp);
            let mut blocks: BTreeMap<usize, Pending> = BTreeMap::new();
            let mut usage = Usage::default();
            let mut stop = None;
            let mut model = req.model.clone();
            let mut tool_index = 0;
            while let Some(event) = events
                .next()
                .await
                .map_err(|e| self.http.protocol(format!("the stream broke: {e}")))?
            {
                if event.data.is_empty() {
                    continue;
                }
                let v: Value = serde_json::from_str(&event.data)
                    .map_err(|e| self.http.protocol(format!("an event is not JSON ({e})")))?;
                let index = v["index"].as_u64().unwrap_or(0) as usize;
                match v["type"].as_str().unwrap_or(&event.name) {
                    "message_start" => {
                        if let Some(m) = v.pointer("/message/model").and_then(Value::as_str) {
                            model = m.to_owned();
                        }
                        usage.input_tokens = v
                            .pointer("/message/usage/input_tokens")
                            .and_then(Value::as_u64)
                            .unwrap_or(0);
                        usage.output_tokens = v
                            .pointer("/message/usage/output_tokens")
                            .and_then(Value::as_u64)
                            .unwrap_or(0);
                    }
                    "content_block_start" => {
                        let b = &v["content_block"];
                        if b["type"] == "tool_use" {
                            let id = b["id"].as_str().unwrap_or_default().to_owned();
                            let name = b["name"].as_str().unwrap_or_default().to_owned();
                            emit(Delta::ToolCall {
                                index: tool_index,
                                id: id.clone(),
                                name: name.clone(),
                            });
                            tool_index += 1;
                            blocks.insert(
                                index,
                                Pending::Tool {
                                    id,
                                    name,
                                    json: String::new(),
                                },
                            );
                        } else {
                            let text = b["text"].as_str().unwrap_or_default().to_owned();
                            blocks.insert(index, Pending::Text(text));
                        }
                    }
                    "content_block_delta" => {
                        let d = &v["delta"];
                        match (blocks.get_mut(&index), d["type"].as_str()) {
                            (Some(Pending::Text(t)), Some("text_delta")) => {
                                let piece = d["text"].as_str().unwrap_or_default();
                                t.push_str(piece);
                                emit(Delta::Text(piece.to_owned()));
                            }
                            (Some(Pending::Tool { json, .. }), Some("input_json_delta")) => {
                                let piece = d["partial_json"].as_str().unwrap_or_default();
                                json.push_str(piece);
                                let position = blocks
                                    .range(..index)
                                    .filter(|(_, b)| matches!(b, Pending::Tool { .. }))
                                    .count();
                                emit(Delta::ToolArguments {
                                    index: position,
                                    fragment: piece.to_owned(),
                                });
                            }
                            _ => {}
                        }
                    }
                    "message_delta" => {
                        if let Some(r) = v.pointer("/delta/stop_reason").and_then(Value::as_str) {
                            stop = Some(r.to_owned());
                        }
                        if let Some(n) = v.pointer("/usage/output_tokens").and_then(Value::as_u64) {
                            usage.output_tokens = n;
                        }
                        if let Some(n) = v.pointer("/usage/input_tokens").and_then(Value::as_u64) {
                            usage.input_tokens = usage.input_tokens.max(n);
                        }
                    }
                    "message_stop" => break,
                    "error" => {
                        let message = v
                            .pointer("/error/message")
                            .and_then(Value::as_str)
                            .unwrap_or("an error event without a message");
                        return Err(Error::Unavailable {
                            provider: "anthropic".to_owned(),
                            status: 200,
                            attempts: 1,
                            message: self.key.redact(message),
                        });
                    }
                    _ => {} // ping, content_block_stop
                }
            }
            let parts = blocks
                .into_values()
                .filter_map(|b| match b {
                    Pending::Text(text) if text.is_empty() => None,
                    Pending::Text(text) => Some(Part::Text { text }),
                    Pending::Tool { id, name, json } => {
                        let (arguments, invalid_arguments) = parse_arguments(&json);
                        Some(Part::ToolCall {
                            id,
                            name,
                            arguments,
                            invalid_arguments,
                        })
                    }
                })
                .collect();
            (parts, usage, stop_reason(stop.as_deref()), model)
        };
        let (parts, structured) = finish_parts(parts, req);
        Ok(Response {
            message: Message {
                role: Role::Assistant,
                parts,
            },
            usage,
            // A structured answer is a finished turn, not a tool call.
            stop: if structured {
                StopReason::EndTurn
            } else {
                stop
            },
            model,
        })
    }
}
