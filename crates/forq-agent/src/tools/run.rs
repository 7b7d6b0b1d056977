//! `run` (a shell command in the sandbox, its output's head and tail), and
//! the two tools that end a run: `submit` and `give_up`.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

use super::{object_schema, string_arg, Control, Tool, ToolContext, ToolOutput};
use crate::message::ToolSpec;

/// `run(command, timeout?)`.
#[derive(Debug, Clone)]
pub struct Run {
    /// Timeout when the model gives none (default 120 s).
    pub default_timeout: Duration,
    /// The longest timeout a model may ask for (default 15 minutes).
    pub max_timeout: Duration,
    /// Output kept, head and tail together (default 16 KiB).
    pub output_bytes: usize,
}

impl Default for Run {
    fn default() -> Self {
        Run {
            default_timeout: Duration::from_secs(120),
            max_timeout: Duration::from_secs(900),
            output_bytes: 16 << 10,
        }
    }
}

#[async_trait]
impl Tool for Run {
    fn spec(&self) -> ToolSpec {
        let mut parameters = object_schema(
            &[(
                "command",
                "string",
                "A shell command, run from the repository root",
            )],
            &[],
        );
        parameters["properties"]["timeout"] = serde_json::json!({
            "type": "integer",
            "description": format!("Seconds before it is killed (default {}, at most {})",
                self.default_timeout.as_secs(), self.max_timeout.as_secs())});
        ToolSpec {
            name: "run".to_owned(),
            description: "Run a shell command in the sandbox (no network) and show its exit code and output (stderr merged; the middle of long output is cut).".to_owned(),
            parameters,
        }
    }

    async fn call(&self, cx: &ToolContext<'_>, args: &Value) -> ToolOutput {
        let command = match string_arg(args, "command") {
            Ok(c) => c,
            Err(e) => return e,
        };
        let timeout = args
            .get("timeout")
            .and_then(Value::as_u64)
            .map_or(self.default_timeout, Duration::from_secs)
            .min(self.max_timeout);
        let req = super::command_request(command, timeout, self.output_bytes);
        let out = match cx.sandbox.exec(req).await {
            Ok(o) => o,
            Err(e) => return ToolOutput::error(format!("the sandbox could not run it: {e}")),
        };
        let status = if out.timed_out {
            format!("killed after {} s (timeout)", timeout.as_secs())
        } else if out.killed_for_memory {
            "killed: out of memory".to_owned()
        } else {
            format!("exit {}", out.shell_code())
        };
        let mut text = format!(
            "{status} ({:.1} s)\n{}",
            out.duration_ms as f64 / 1000.0,
            out.stdout_text()
        );
        if out.stdout_dropped > 0 {
            text.push_str(&format!(
                "\n[{} bytes of output were cut from the middle]",
                out.stdout_dropped
            ));
        }
        ToolOutput {
            content: text,
            is_error: !out.success(),
            control: None,
        }
    }
}

/// `submit(summary)`: the agent is done; the patch is the sandbox's diff.
#[derive(Debug, Clone, Copy, Default)]
pub struct Submit;

#[async_trait]
impl Tool for Submit {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "submit".to_owned(),
            description: "Finish: the changes made in the workspace are the result. Say what you changed and why.".to_owned(),
            parameters: object_schema(&[("summary", "string", "What changed and why")], &[]),
        }
    }

    async fn call(&self, _cx: &ToolContext<'_>, args: &Value) -> ToolOutput {
        match string_arg(args, "summary") {
            Ok(summary) => ToolOutput {
                content: "submitted".to_owned(),
                is_error: false,
                control: Some(Control::Submit {
                    summary: summary.to_owned(),
                }),
            },
            Err(e) => e,
        }
    }
}

/// `give_up(reason, question)`: the agent cannot go on without a person.
#[derive(Debug, Clone, Copy, Default)]
pub struct GiveUp;

#[async_trait]
impl Tool for GiveUp {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "give_up".to_owned(),
            description:
                "Stop without a fix: say why, and the question a maintainer should answer."
                    .to_owned(),
            parameters: object_schema(
                &[
                    ("reason", "string", "Why you cannot go on"),
                    ("question", "string", "What you would ask the maintainer"),
                ],
                &[],
            ),
        }
    }

    async fn call(&self, _cx: &ToolContext<'_>, args: &Value) -> ToolOutput {
        match (string_arg(args, "reason"), string_arg(args, "question")) {
            (Ok(reason), Ok(question)) => ToolOutput {
                content: "given up".to_owned(),
                is_error: false,
                control: Some(Control::GiveUp {
                    reason: reason.to_owned(),
                    question: question.to_owned(),
                }),
            },
            (Err(e), _) | (_, Err(e)) => e,
        }
    }
}
