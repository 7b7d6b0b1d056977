//! The programs' streams, typed: Claude Code's `stream-json` lines and
//! Codex's `exec --json` lines, as serde types of what forq reads (every
//! field it does not read is ignored; an unknown line type is `Other`),
//! and the reader that maps them onto forq's [`AgentEvent`]s.

use serde::Deserialize;
use serde_json::Value;

use super::ExternalAgent;
use crate::agent::{summary_of, AgentEvent};
use crate::cost::Meter;
use crate::message::Usage;

/// Tokens, as both programs report them.
#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(default)]
pub(super) struct Tokens {
    input_tokens: u64,
    output_tokens: u64,
}

impl From<Tokens> for Usage {
    fn from(t: Tokens) -> Usage {
        Usage {
            input_tokens: t.input_tokens,
            output_tokens: t.output_tokens,
        }
    }
}

/// One line of Claude Code's `--output-format stream-json`.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ClaudeLine {
    /// A model turn: its usage, model and content.
    Assistant { message: AssistantMessage },
    /// Tool results going back to the model.
    User { message: UserMessage },
    /// The end of the run.
    Result(Finish),
    #[serde(other)]
    Other,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct AssistantMessage {
    usage: Tokens,
    model: Option<String>,
    content: Vec<AssistantPart>,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum AssistantPart {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        #[serde(default)]
        id: Option<String>,
        #[serde(default)]
        name: String,
        #[serde(default)]
        input: Value,
    },
    #[serde(other)]
    Other,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct UserMessage {
    content: UserContent,
}

/// A user message's content: parts, or (the prompt) plain text.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum UserContent {
    Parts(Vec<UserPart>),
    Text(#[allow(dead_code)] String),
}

impl Default for UserContent {
    fn default() -> Self {
        UserContent::Parts(Vec::new())
    }
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum UserPart {
    ToolResult {
        #[serde(default)]
        tool_use_id: String,
        /// Text, or a list of content blocks.
        #[serde(default)]
        content: Value,
        #[serde(default)]
        is_error: bool,
    },
    #[serde(other)]
    Other,
}

/// How a run ended, as the program says.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(super) struct Finish {
    /// `success`, or why not (`error_max_turns`, `error`, …).
    pub(super) subtype: Option<String>,
    pub(super) is_error: bool,
    /// The final message.
    pub(super) result: Option<String>,
}

impl Finish {
    pub(super) fn succeeded(&self) -> bool {
        !self.is_error && self.subtype.as_deref() == Some("success")
    }
}

/// One line of Codex's `exec --json`.
#[derive(Debug, Deserialize)]
#[serde(tag = "type")]
enum CodexLine {
    #[serde(rename = "turn.started")]
    TurnStarted {},
    #[serde(rename = "item.completed")]
    ItemCompleted { item: CodexItem },
    #[serde(rename = "turn.completed")]
    TurnCompleted {
        #[serde(default)]
        usage: Tokens,
    },
    /// Codex reports its retries as `error` lines too; only a failed turn
    /// ends the run.
    #[serde(rename = "turn.failed")]
    TurnFailed {
        #[serde(default)]
        error: CodexError,
    },
    #[serde(other)]
    Other,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct CodexError {
    message: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum CodexItem {
    CommandExecution {
        #[serde(default)]
        command: Value,
        #[serde(default)]
        aggregated_output: String,
        #[serde(default)]
        exit_code: Option<i64>,
    },
    FileChange {
        #[serde(default)]
        changes: Value,
        #[serde(default)]
        status: Option<String>,
    },
    AgentMessage {
        #[serde(default)]
        text: String,
    },
    #[serde(other)]
    Other,
}

/// What the program's stream said, as it is read.
#[derive(Default)]
pub(super) struct Reading {
    step: u32,
    pub(super) meter: Option<Meter>,
    pub(super) result: Option<Finish>,
    tools: std::collections::HashMap<String, String>,
    last_message: String,
}

impl ExternalAgent {
    /// Maps one line of the program's stream onto forq's events (a line
    /// that is not one of its protocol's is skipped).
    pub(super) fn line(&self, line: &str, r: &mut Reading) {
        match self.kind {
            super::Program::ClaudeCode => {
                if let Ok(parsed) = serde_json::from_str::<ClaudeLine>(line) {
                    self.claude_line(parsed, r);
                }
            }
            super::Program::Codex => {
                if let Ok(parsed) = serde_json::from_str::<CodexLine>(line) {
                    self.codex_line(parsed, r);
                }
            }
        }
    }

    fn meter<'r>(&self, r: &'r mut Reading) -> &'r mut Meter {
        r.meter
            .get_or_insert_with(|| Meter::new(self.prices.clone()))
    }

    /// Records a turn's tokens and tells them.
    fn tokens(&self, r: &mut Reading, model: &str, usage: Usage) {
        let step = r.step;
        let meter = self.meter(r);
        let cost = meter.record(model, usage);
        let (total, cost_usd) = (meter.usage, meter.cost_usd);
        self.tell(AgentEvent::Tokens {
            step,
            usage: cost.usage,
            total,
            cost_usd,
        });
    }

    fn claude_line(&self, line: ClaudeLine, r: &mut Reading) {
        match line {
            ClaudeLine::Assistant { message } => {
                r.step += 1;
                let step = r.step;
                self.tell(AgentEvent::StepStarted { step });
                let model = message.model.unwrap_or_default();
                self.tokens(r, &model, message.usage.into());
                for part in message.content {
                    match part {
                        AssistantPart::Text { text } => {
                            self.tell(AgentEvent::Text { step, delta: text })
                        }
                        AssistantPart::ToolUse { id, name, input } => {
                            if let Some(id) = id {
                                r.tools.insert(id, name.clone());
                            }
                            self.tell(AgentEvent::ToolCall {
                                step,
                                name,
                                arguments: input,
                            });
                        }
                        AssistantPart::Other => {}
                    }
                }
            }
            ClaudeLine::User { message } => {
                let UserContent::Parts(parts) = message.content else {
                    return;
                };
                for part in parts {
                    let UserPart::ToolResult {
                        tool_use_id,
                        content,
                        is_error,
                    } = part
                    else {
                        continue;
                    };
                    let text = match content {
                        Value::String(s) => s,
                        other => other.to_string(),
                    };
                    self.tell(AgentEvent::Observation {
                        step: r.step,
                        name: r.tools.get(&tool_use_id).cloned().unwrap_or_default(),
                        is_error,
                        summary: summary_of(&text),
                    });
                }
            }
            ClaudeLine::Result(finish) => r.result = Some(finish),
            ClaudeLine::Other => {}
        }
    }

    fn codex_line(&self, line: CodexLine, r: &mut Reading) {
        let step = r.step;
        match line {
            CodexLine::TurnStarted {} => {
                r.step += 1;
                self.tell(AgentEvent::StepStarted { step: r.step });
            }
            CodexLine::ItemCompleted { item } => match item {
                CodexItem::CommandExecution {
                    command,
                    aggregated_output,
                    exit_code,
                } => {
                    self.tell(AgentEvent::ToolCall {
                        step,
                        name: "command".to_owned(),
                        arguments: serde_json::json!({ "command": command }),
                    });
                    self.tell(AgentEvent::Observation {
                        step,
                        name: "command".to_owned(),
                        is_error: exit_code.unwrap_or(0) != 0,
                        summary: summary_of(&aggregated_output),
                    });
                }
                CodexItem::FileChange { changes, status } => {
                    self.tell(AgentEvent::ToolCall {
                        step,
                        name: "file_change".to_owned(),
                        arguments: changes,
                    });
                    self.tell(AgentEvent::Observation {
                        step,
                        name: "file_change".to_owned(),
                        is_error: status.as_deref() == Some("failed"),
                        summary: status.unwrap_or_default(),
                    });
                }
                CodexItem::AgentMessage { text } => {
                    self.tell(AgentEvent::Text {
                        step,
                        delta: text.clone(),
                    });
                    r.last_message = text;
                }
                CodexItem::Other => {}
            },
            CodexLine::TurnCompleted { usage } => {
                let model = self.model.clone().unwrap_or_default();
                self.tokens(r, &model, usage.into());
                r.result = Some(Finish {
                    subtype: Some("success".to_owned()),
                    is_error: false,
                    result: Some(r.last_message.clone()),
                });
            }
            CodexLine::TurnFailed { error } => {
                r.result = Some(Finish {
                    subtype: Some("error".to_owned()),
                    is_error: true,
                    result: Some(error.message.unwrap_or_else(|| "failed".to_owned())),
                });
            }
            CodexLine::Other => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_lines_are_read_by_type_and_unknown_ones_are_other() {
        let line: ClaudeLine = serde_json::from_str(
            r#"{"type":"assistant","message":{"model":"m","usage":{"input_tokens":3,"output_tokens":4},"content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}},{"type":"thinking","thinking":"…"}]}}"#,
        )
        .unwrap();
        let ClaudeLine::Assistant { message } = line else {
            panic!("not an assistant line: {line:?}");
        };
        assert_eq!(message.usage.output_tokens, 4);
        assert_eq!(message.content.len(), 3);
        assert!(
            matches!(&message.content[1], AssistantPart::ToolUse { name, .. } if name == "Bash")
        );
        assert!(matches!(message.content[2], AssistantPart::Other));
        let prompt: ClaudeLine =
            serde_json::from_str(r#"{"type":"user","message":{"content":"the prompt"}}"#).unwrap();
        assert!(matches!(
            prompt,
            ClaudeLine::User {
                message: UserMessage {
                    content: UserContent::Text(_)
                }
            }
        ));
        let other: ClaudeLine =
            serde_json::from_str(r#"{"type":"system","subtype":"init","tools":[]}"#).unwrap();
        assert!(matches!(other, ClaudeLine::Other));
        let ClaudeLine::Result(finish) = serde_json::from_str(
            r#"{"type":"result","subtype":"error_max_turns","is_error":false,"num_turns":3}"#,
        )
        .unwrap() else {
            panic!("not a result");
        };
        assert!(!finish.succeeded());
        assert_eq!(finish.result, None);
    }

    #[test]
    fn codex_lines_are_read_by_type_and_item() {
        let line: CodexLine = serde_json::from_str(
            r#"{"type":"item.completed","item":{"id":"i","type":"command_execution","command":"bash -lc ls","aggregated_output":"a\nb","exit_code":2,"status":"failed"}}"#,
        )
        .unwrap();
        assert!(matches!(
            line,
            CodexLine::ItemCompleted {
                item: CodexItem::CommandExecution {
                    exit_code: Some(2),
                    ..
                }
            }
        ));
        let done: CodexLine = serde_json::from_str(
            r#"{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":0,"output_tokens":5}}"#,
        )
        .unwrap();
        assert!(matches!(done, CodexLine::TurnCompleted { usage } if usage.input_tokens == 10));
        let retry: CodexLine =
            serde_json::from_str(r#"{"type":"error","message":"retrying"}"#).unwrap();
        assert!(matches!(retry, CodexLine::Other));
        let started: CodexLine =
            serde_json::from_str(r#"{"type":"turn.started","extra":1}"#).unwrap();
        assert!(matches!(started, CodexLine::TurnStarted {}));
    }
}
