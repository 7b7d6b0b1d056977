//! What a conversation with a model is made of, independent of the
//! provider that carries it: messages of parts (text, tool calls, tool
//! results), the tools offered, and what comes back.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who said it. The system prompt is not a message: it is
/// [`Request::system`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The caller (and tool results, which answer the model's calls).
    User,
    /// The model.
    Assistant,
}

/// One piece of a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Part {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// The model calls a tool.
    ToolCall {
        /// The provider's id of the call, quoted by its result.
        id: String,
        /// The tool.
        name: String,
        /// The arguments, parsed (`null` when they were not valid JSON).
        arguments: Value,
        /// The arguments as sent, when they were not valid JSON: the
        /// caller answers with an error instead of running the tool.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        invalid_arguments: Option<String>,
    },
    /// The answer to a tool call.
    ToolResult {
        /// The id of the call answered.
        id: String,
        /// What the tool returned (or why it failed).
        content: String,
        /// Whether the tool failed.
        #[serde(default)]
        is_error: bool,
    },
}

impl Part {
    /// A tool call's arguments as JSON text: as the model sent them when
    /// they were not valid JSON, else re-serialised. `None` for other parts.
    pub fn arguments_text(&self) -> Option<String> {
        match self {
            Part::ToolCall {
                arguments,
                invalid_arguments,
                ..
            } => Some(
                invalid_arguments
                    .clone()
                    .unwrap_or_else(|| arguments.to_string()),
            ),
            _ => None,
        }
    }
}

/// A message: a role and its parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who said it.
    pub role: Role,
    /// What was said, in order.
    pub parts: Vec<Part>,
}

impl Message {
    /// A user message of text.
    pub fn user(text: impl Into<String>) -> Message {
        Message {
            role: Role::User,
            parts: vec![Part::Text { text: text.into() }],
        }
    }

    /// An assistant message of text.
    pub fn assistant(text: impl Into<String>) -> Message {
        Message {
            role: Role::Assistant,
            parts: vec![Part::Text { text: text.into() }],
        }
    }

    /// The text parts, joined.
    pub fn text(&self) -> String {
        self.parts
            .iter()
            .filter_map(|p| match p {
                Part::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("")
    }
}

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Its name (`view_file`).
    pub name: String,
    /// What it does and when to use it, for the model.
    pub description: String,
    /// A JSON Schema of its arguments (an object).
    pub parameters: Value,
}

/// Whether and which tool the model must call.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    #[default]
    Auto,
    /// No tool.
    None,
    /// Some tool.
    Required,
    /// This tool.
    Tool(String),
}

/// A structured-output contract: the reply must be JSON matching `schema`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseSchema {
    /// A name for the schema (`triage`).
    pub name: String,
    /// The JSON Schema.
    pub schema: Value,
}

/// One call to a model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// The model (`gpt-4.1`, `claude-sonnet-4-5`).
    pub model: String,
    /// The system prompt.
    pub system: String,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// The tools offered.
    pub tools: Vec<ToolSpec>,
    /// Whether a tool must be called.
    pub tool_choice: ToolChoice,
    /// Cap on the reply's tokens.
    pub max_tokens: u32,
    /// Sampling temperature, when not the provider's default.
    pub temperature: Option<f32>,
    /// Structured output, when the reply must be JSON of a schema.
    pub response_schema: Option<ResponseSchema>,
    /// Stream the reply (deltas go to the caller's sink as they arrive).
    pub stream: bool,
}

impl Request {
    /// A request to `model` with defaults: no tools, 4096 tokens, not streamed.
    pub fn new(model: impl Into<String>) -> Request {
        Request {
            model: model.into(),
            system: String::new(),
            messages: Vec::new(),
            tools: Vec::new(),
            tool_choice: ToolChoice::Auto,
            max_tokens: 4096,
            temperature: None,
            response_schema: None,
            stream: false,
        }
    }
}

/// Tokens a call used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Reply tokens.
    pub output_tokens: u64,
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// It finished its turn.
    EndTurn,
    /// It called tools and waits for their results.
    ToolUse,
    /// It ran into `max_tokens`.
    MaxTokens,
    /// Anything else the provider said.
    Other(String),
}

/// A model's reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// The assistant message.
    pub message: Message,
    /// Tokens used.
    pub usage: Usage,
    /// Why it stopped.
    pub stop: StopReason,
    /// The model that answered, as the provider names it.
    pub model: String,
}

impl Response {
    /// The tool calls of the reply, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &Part> {
        self.message
            .parts
            .iter()
            .filter(|p| matches!(p, Part::ToolCall { .. }))
    }
}

/// A piece of a streamed reply, as it arrives.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Delta {
    /// More text.
    Text(String),
    /// A tool call begins (its arguments follow as fragments).
    ToolCall {
        /// Its position among the reply's tool calls.
        index: usize,
        /// The call's id.
        id: String,
        /// The tool.
        name: String,
    },
    /// More of a tool call's arguments (JSON text).
    ToolArguments {
        /// The call's position.
        index: usize,
        /// The fragment.
        fragment: String,
    },
}

/// Parses a tool call's argument text: `(value, None)`, or `(null, Some(raw))`
/// when it is not JSON. Empty text is an empty object.
pub(crate) fn parse_arguments(raw: &str) -> (Value, Option<String>) {
    if raw.trim().is_empty() {
        return (Value::Object(Default::default()), None);
    }
    match serde_json::from_str(raw) {
        Ok(v) => (v, None),
        Err(_) => (Value::Null, Some(raw.to_owned())),
    }
}
