//! What an OpenAI-compatible endpoint takes, learnt from its refusals and
//! remembered per model. Servers speak the protocol in part (llama.cpp's
//! and older Ollama builds take `json_object` but not `json_schema`, some
//! take no `tools` at all); a request they refuse as invalid is sent again
//! with the next thing down, once per step:
//! - structured output: `json_schema`, else `json_object` with the schema
//!   in the system prompt, else the schema in the prompt alone (the caller
//!   validates the reply and asks once more, [`crate::structured::ask`]);
//! - tools: native tool calls, else a text protocol: the tools described in
//!   the system prompt, a call written as one JSON object in the reply, a
//!   result sent back as the user's text.

use serde::Serialize;
use serde_json::{json, Value};

use crate::message::{Message, Part, Request, Role, ToolSpec};

/// How a request's structured output is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum StructuredOutput {
    /// `response_format: {"type": "json_schema", …}`.
    JsonSchema,
    /// `response_format: {"type": "json_object"}`, the schema in the
    /// system prompt.
    JsonObject,
    /// The schema in the system prompt alone.
    Prompt,
}

/// What an endpoint's model takes, as far as forq has learnt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Capabilities {
    /// How structured output is asked for.
    pub structured: StructuredOutput,
    /// Whether tools go as native tool calls (else as text).
    pub native_tools: bool,
}

impl Default for Capabilities {
    fn default() -> Self {
        Capabilities {
            structured: StructuredOutput::JsonSchema,
            native_tools: true,
        }
    }
}

/// Words a server uses when it refuses a structured-output request.
const ABOUT_FORMAT: [&str; 5] = [
    "response_format",
    "json_schema",
    "json_object",
    "schema",
    "grammar",
];

/// Words a server uses when it refuses tools.
const ABOUT_TOOLS: [&str; 3] = ["tool", "function", "tool_choice"];

impl Capabilities {
    /// What to try after the endpoint refused `req`, sent with these, as
    /// invalid with `message`; `None`: nothing is left to drop.
    pub(crate) fn after_refusal(self, req: &Request, message: &str) -> Option<Capabilities> {
        let m = message.to_ascii_lowercase();
        let names = |words: &[&str]| words.iter().any(|w| m.contains(w));
        let structured_left =
            req.response_schema.is_some() && self.structured != StructuredOutput::Prompt;
        let tools_left = !req.tools.is_empty() && self.native_tools;
        let format_named = names(&ABOUT_FORMAT);
        let tools_named = names(&ABOUT_TOOLS);
        // Only what the refusal names is dropped: a request refused for
        // another reason (`max_tokens` too high) keeps its tools.
        if structured_left && format_named {
            let structured = match self.structured {
                StructuredOutput::JsonSchema => StructuredOutput::JsonObject,
                _ => StructuredOutput::Prompt,
            };
            return Some(Capabilities { structured, ..self });
        }
        if tools_left && tools_named {
            return Some(Capabilities {
                native_tools: false,
                ..self
            });
        }
        None
    }

    /// The `response_format` to send, if any.
    pub(crate) fn response_format(self, req: &Request) -> Option<Value> {
        let schema = req.response_schema.as_ref()?;
        match self.structured {
            StructuredOutput::JsonSchema => Some(json!({"type": "json_schema", "json_schema": {
                "name": schema.name, "schema": schema.schema, "strict": true}})),
            StructuredOutput::JsonObject => Some(json!({"type": "json_object"})),
            StructuredOutput::Prompt => None,
        }
    }

    /// What the system prompt must add for what the endpoint lacks: the
    /// schema, the tools and how to call them.
    pub(crate) fn system_notes(self, req: &Request) -> String {
        let mut notes = String::new();
        if let Some(schema) = req
            .response_schema
            .as_ref()
            .filter(|_| self.structured != StructuredOutput::JsonSchema)
        {
            notes.push_str(&format!(
                "\n\nAnswer with only a JSON object (no prose, no code fence) that matches \
                 this JSON schema:\n{}",
                schema.schema
            ));
        }
        if !self.native_tools && !req.tools.is_empty() {
            notes.push_str(&tools_prompt(&req.tools));
        }
        notes
    }
}

/// The tools, described for a model that has no native tool calls.
fn tools_prompt(tools: &[ToolSpec]) -> String {
    let mut out = String::from(
        "\n\nYou have these tools. To call one, reply with exactly one JSON object, \
         alone or in a ```json block: {\"tool\": \"NAME\", \"arguments\": {…}}. \
         Its result comes back in the next message.",
    );
    for t in tools {
        out.push_str(&format!(
            "\n- {}: {} Arguments (JSON schema): {}",
            t.name, t.description, t.parameters
        ));
    }
    out
}

/// One of our messages for a server without tool calls: a call becomes
/// its JSON object in the assistant's text, a result the user's text.
pub(crate) fn text_protocol_messages(m: &Message) -> Vec<Value> {
    let mut text = Vec::new();
    for part in &m.parts {
        match part {
            Part::Text { text: t } => text.push(t.clone()),
            Part::ToolCall {
                name, arguments, ..
            } => text.push(json!({"tool": name, "arguments": arguments}).to_string()),
            Part::ToolResult {
                content, is_error, ..
            } => text.push(format!(
                "{}:\n{content}",
                if *is_error {
                    "The tool failed"
                } else {
                    "The tool returned"
                }
            )),
        }
    }
    let role = match m.role {
        Role::Assistant => "assistant",
        Role::User => "user",
    };
    vec![json!({"role": role, "content": text.join("\n\n")})]
}

/// The tool call a reply writes as text, if it writes one of `tools`: the
/// tool's name and arguments, and the text around it.
pub(crate) fn text_tool_call(text: &str, tools: &[ToolSpec]) -> Option<(String, Value, String)> {
    let mut from = 0;
    while let Some(open) = text[from..].find('{').map(|i| i + from) {
        if let Some(end) = object_end(&text[open..]).map(|e| e + open) {
            if let Ok(v) = serde_json::from_str::<Value>(&text[open..end]) {
                let name = v
                    .get("tool")
                    .or_else(|| v.get("name"))
                    .and_then(Value::as_str);
                if let Some(name) = name.filter(|n| tools.iter().any(|t| t.name == *n)) {
                    let arguments = v.get("arguments").cloned().unwrap_or_else(|| json!({}));
                    let rest = format!("{}{}", &text[..open], &text[end..]);
                    let rest = rest.replace("```json", "").replace("```", "");
                    return Some((name.to_owned(), arguments, rest.trim().to_owned()));
                }
            }
        }
        from = open + 1;
    }
    None
}

/// Where the JSON object that `s` starts with ends (past its `}`),
/// strings and escapes respected.
fn object_end(s: &str) -> Option<usize> {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (i, c) in s.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if in_string => escaped = true,
            '"' => in_string = !in_string,
            '{' if !in_string => depth += 1,
            '}' if !in_string => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ResponseSchema;

    fn tool(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.to_owned(),
            description: "d".to_owned(),
            parameters: json!({"type": "object"}),
        }
    }

    #[test]
    fn a_refused_format_steps_down_and_then_the_tools() {
        let mut req = Request::new("m");
        req.response_schema = Some(ResponseSchema {
            name: "triage".to_owned(),
            schema: json!({"type": "object"}),
        });
        let caps = Capabilities::default();
        let said = "Input should be 'text' or 'json_object' [response_format.type]";
        let next = caps.after_refusal(&req, said).unwrap();
        assert_eq!(next.structured, StructuredOutput::JsonObject);
        assert_eq!(
            next.response_format(&req),
            Some(json!({"type": "json_object"}))
        );
        assert!(next.system_notes(&req).contains("matches this JSON schema"));
        let last = next
            .after_refusal(&req, "response_format json_object: unknown")
            .unwrap();
        assert_eq!(last.structured, StructuredOutput::Prompt);
        assert_eq!(last.response_format(&req), None);
        assert_eq!(last.after_refusal(&req, "response_format"), None);
        // A refusal for another reason drops nothing.
        assert_eq!(
            caps.after_refusal(&req, "max_tokens: must be at most 8192"),
            None
        );
        // With tools as well, a refusal naming tools drops them first.
        req.tools = vec![tool("view")];
        let no_tools = caps.after_refusal(&req, "tools are not supported").unwrap();
        assert_eq!(no_tools.structured, StructuredOutput::JsonSchema);
        assert!(!no_tools.native_tools);
        assert!(no_tools.system_notes(&req).contains("- view: d"));
    }

    #[test]
    fn a_call_written_as_text_is_read_back() {
        let tools = [tool("view_file"), tool("submit")];
        let (name, args, rest) = text_tool_call(
            "I will look.\n```json\n{\"tool\": \"view_file\", \"arguments\": {\"path\": \"a {b}.py\"}}\n```",
            &tools,
        )
        .unwrap();
        assert_eq!(name, "view_file");
        assert_eq!(args, json!({"path": "a {b}.py"}));
        assert_eq!(rest, "I will look.");
        // Not a tool of the request, or no object: no call.
        assert!(text_tool_call("{\"tool\": \"rm\"}", &tools).is_none());
        assert!(text_tool_call("set {x} and {y", &tools).is_none());
        let m = Message {
            role: Role::Assistant,
            parts: vec![Part::ToolCall {
                id: "call_0".to_owned(),
                name: "submit".to_owned(),
                arguments: json!({"summary": "done"}),
                invalid_arguments: None,
            }],
        };
        let wire = text_protocol_messages(&m);
        let (name, _, _) = text_tool_call(wire[0]["content"].as_str().unwrap(), &tools).unwrap();
        assert_eq!(name, "submit");
    }
}
