//! Anthropic Messages (`POST {base}/v1/messages`): content blocks,
//! `tool_use`/`tool_result`, and the streaming events.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{json, Value};

use super::http::{EventStream, Http};
use super::{ApiKey, Provider, ProviderError, RetryPolicy, Sink, DEFAULT_TIMEOUT};
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
    pub fn from_env() -> Result<Anthropic, ProviderError> {
        let key =
            ApiKey::from_env("ANTHROPIC_API_KEY").ok_or_else(|| ProviderError::MissingKey {
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

/// A Messages reply, as the wire has it (the fields forq reads).
#[derive(Debug, Deserialize)]
struct Reply {
    #[serde(default)]
    content: Vec<Block>,
    stop_reason: Option<String>,
    model: Option<String>,
    #[serde(default)]
    usage: WireUsage,
}

/// A content block: text, a tool call, or a kind forq does not read
/// (thinking, a server tool's result).
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    #[serde(other)]
    Other,
}

#[derive(Debug, Default, Deserialize)]
struct WireUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
}

/// One event of a streamed reply, by its `type`.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum StreamEvent {
    MessageStart {
        message: StartedMessage,
    },
    ContentBlockStart {
        index: usize,
        content_block: Block,
    },
    ContentBlockDelta {
        index: usize,
        delta: BlockDelta,
    },
    MessageDelta {
        delta: MessageDelta,
        usage: Option<DeltaUsage>,
    },
    MessageStop,
    Error {
        error: ErrorBody,
    },
    /// `ping`, `content_block_stop`, and kinds added later.
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
struct StartedMessage {
    model: Option<String>,
    #[serde(default)]
    usage: WireUsage,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockDelta {
    TextDelta {
        text: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
struct MessageDelta {
    stop_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct DeltaUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct ErrorBody {
    message: Option<String>,
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

/// The reply's parts, in order; blocks forq does not read are left out.
fn reply_parts(content: Vec<Block>) -> Vec<Part> {
    content
        .into_iter()
        .filter_map(|b| match b {
            Block::Text { text } => Some(Part::Text { text }),
            Block::ToolUse { id, name, input } => Some(Part::ToolCall {
                id,
                name,
                arguments: input,
                invalid_arguments: None,
            }),
            Block::Other => None,
        })
        .collect()
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

impl Anthropic {
    /// A streamed reply, read event by event: its parts, usage, stop and
    /// model, each delta told to `emit` as it comes.
    async fn stream(
        &self,
        resp: reqwest::Response,
        req: &Request,
        emit: &(dyn Fn(Delta) + Send + Sync),
    ) -> Result<(Vec<Part>, Usage, StopReason, String), ProviderError> {
        let mut events = EventStream::new(resp);
        let mut reply = Streamed {
            blocks: BTreeMap::new(),
            usage: Usage::default(),
            stop: None,
            model: req.model.clone(),
            tool_index: 0,
        };
        while let Some(event) = events
            .next()
            .await
            .map_err(|e| self.http.protocol(format!("the stream broke: {e}")))?
        {
            if event.data.is_empty() {
                continue;
            }
            let parsed: StreamEvent = serde_json::from_str(&event.data).map_err(|e| {
                self.http
                    .protocol(format!("an event is not a Messages stream event ({e})"))
            })?;
            match reply.take(parsed, emit) {
                Ok(true) => {}
                Ok(false) => break,
                Err(message) => {
                    return Err(ProviderError::Unavailable {
                        provider: "anthropic".to_owned(),
                        status: 200,
                        attempts: 1,
                        message: self.key.redact(&message),
                    })
                }
            }
        }
        Ok(reply.finish())
    }
}

/// A streamed reply so far.
struct Streamed {
    /// Its content blocks, by index.
    blocks: BTreeMap<usize, Pending>,
    usage: Usage,
    stop: Option<String>,
    model: String,
    /// Tool calls started, for the deltas' numbering.
    tool_index: usize,
}

impl Streamed {
    /// Takes one event in: whether to read on (`false` at the message's
    /// stop); `Err` with the message of an error event.
    fn take(
        &mut self,
        event: StreamEvent,
        emit: &(dyn Fn(Delta) + Send + Sync),
    ) -> Result<bool, String> {
        match event {
            StreamEvent::MessageStart { message } => {
                if let Some(m) = message.model {
                    self.model = m;
                }
                self.usage.input_tokens = message.usage.input_tokens;
                self.usage.output_tokens = message.usage.output_tokens;
            }
            StreamEvent::ContentBlockStart {
                index,
                content_block,
            } => self.start_block(index, content_block, emit),
            StreamEvent::ContentBlockDelta { index, delta } => {
                self.extend_block(index, delta, emit)
            }
            StreamEvent::MessageDelta { delta, usage: u } => {
                if let Some(r) = delta.stop_reason {
                    self.stop = Some(r);
                }
                if let Some(u) = u {
                    if let Some(n) = u.output_tokens {
                        self.usage.output_tokens = n;
                    }
                    if let Some(n) = u.input_tokens {
                        self.usage.input_tokens = self.usage.input_tokens.max(n);
                    }
                }
            }
            StreamEvent::MessageStop => return Ok(false),
            StreamEvent::Error { error } => {
                return Err(error
                    .message
                    .unwrap_or_else(|| "an error event without a message".to_owned()))
            }
            StreamEvent::Other => {}
        }
        Ok(true)
    }

    fn start_block(&mut self, index: usize, block: Block, emit: &(dyn Fn(Delta) + Send + Sync)) {
        match block {
            Block::ToolUse { id, name, .. } => {
                emit(Delta::ToolCall {
                    index: self.tool_index,
                    id: id.clone(),
                    name: name.clone(),
                });
                self.tool_index += 1;
                self.blocks.insert(
                    index,
                    Pending::Tool {
                        id,
                        name,
                        json: String::new(),
                    },
                );
            }
            Block::Text { text } => {
                self.blocks.insert(index, Pending::Text(text));
            }
            Block::Other => {}
        }
    }

    fn extend_block(
        &mut self,
        index: usize,
        delta: BlockDelta,
        emit: &(dyn Fn(Delta) + Send + Sync),
    ) {
        match (self.blocks.get_mut(&index), delta) {
            (Some(Pending::Text(t)), BlockDelta::TextDelta { text }) => {
                t.push_str(&text);
                emit(Delta::Text(text));
            }
            (Some(Pending::Tool { json, .. }), BlockDelta::InputJsonDelta { partial_json }) => {
                json.push_str(&partial_json);
                let position = self
                    .blocks
                    .range(..index)
                    .filter(|(_, b)| matches!(b, Pending::Tool { .. }))
                    .count();
                emit(Delta::ToolArguments {
                    index: position,
                    fragment: partial_json,
                });
            }
            _ => {}
        }
    }

    /// The reply's parts (empty text left out), usage, stop and model.
    fn finish(self) -> (Vec<Part>, Usage, StopReason, String) {
        let parts = self
            .blocks
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
        (
            parts,
            self.usage,
            stop_reason(self.stop.as_deref()),
            self.model,
        )
    }
}

#[async_trait::async_trait]
impl Provider for Anthropic {
    fn name(&self) -> &str {
        "anthropic"
    }

    async fn complete(
        &self,
        req: &Request,
        sink: Option<Sink<'_>>,
    ) -> Result<Response, ProviderError> {
        let url = format!("{}/v1/messages", self.base_url);
        let resp = self
            .http
            .post(&url, &self.headers(), &Self::body(req), &self.key)
            .await?;
        let emit = move |d: Delta| {
            if let Some(s) = sink {
                s(&d);
            }
        };
        let (parts, usage, stop, model) = if !req.stream {
            let reply: Reply = self.http.typed(resp, "a Messages reply").await?;
            (
                reply_parts(reply.content),
                Usage {
                    input_tokens: reply.usage.input_tokens,
                    output_tokens: reply.usage.output_tokens,
                },
                stop_reason(reply.stop_reason.as_deref()),
                reply.model.unwrap_or_else(|| req.model.clone()),
            )
        } else {
            self.stream(resp, req, &emit).await?
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
