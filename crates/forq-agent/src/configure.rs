//! The agentic bootstrap fallback's model: forq-bootstrap's
//! [`Configurator`], asking a model for one step at a time (run a command,
//! write, read or list, or name the test command to be judged by), with a
//! token and cost budget. What the model says never decides success: the
//! gate judges the test command's output.

use std::sync::{Arc, Mutex};

use forq_bootstrap::{ConfigStep, Configurator, ConfigureContext};
use serde_json::{json, Value};

use crate::cost::PriceTable;
use crate::message::{Message, Request, ResponseSchema, Usage};
use crate::provider::Provider;

const PROMPT: &str = "You set up a software repository's development environment inside a \
sandbox so that its own test suite runs. The automatic detection failed (the reasons follow). \
Act one step at a time, each the smallest that makes progress: run a shell command at the \
repository's root (package registries are reachable through a proxy already configured; nothing \
else is), write a file, read a file, list a directory, or name the test command that should now \
run the tests. A step that fails is rolled back. You cannot declare success: when you name a \
test command, forq runs it and only output showing tests executed counts; if it does not, keep \
going. Prefer the project's own documented commands; install into the repository (a virtualenv \
under .forq/venv, node_modules, ...) rather than system-wide. Give up when nothing is left to \
try. Answer only with JSON matching the schema.";

/// The reply schema: one step.
fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["run", "write", "read", "list", "test", "give_up"]},
            "command": {"type": "string", "description": "run, test: the shell command"},
            "path": {"type": "string", "description": "write, read, list: relative to the repository's root"},
            "contents": {"type": "string", "description": "write: the whole file"},
            "why": {"type": "string", "description": "one line: why this step"}
        },
        "required": ["action", "why"],
        "additionalProperties": false
    })
}

/// `text` as a step (`None`: give up), or what is wrong with it.
fn validate(text: &str) -> Result<Option<ConfigStep>, String> {
    let value: Value = serde_json::from_str(text.trim()).map_err(|e| format!("not JSON: {e}"))?;
    let field = |name: &str| -> Result<String, String> {
        value[name]
            .as_str()
            .filter(|s| !s.trim().is_empty())
            .map(str::to_owned)
            .ok_or_else(|| format!("\"{name}\" is missing for this action"))
    };
    let step = match value["action"].as_str() {
        Some("give_up") => return Ok(None),
        Some("run") => ConfigStep::Run {
            command: field("command")?,
        },
        Some("test") => ConfigStep::Test {
            command: field("command")?,
        },
        Some("write") => ConfigStep::Write {
            path: field("path")?,
            contents: value["contents"].as_str().unwrap_or_default().to_owned(),
        },
        Some("read") => ConfigStep::Read {
            path: field("path")?,
        },
        Some("list") => ConfigStep::List {
            path: value["path"].as_str().unwrap_or(".").to_owned(),
        },
        other => return Err(format!("unknown action {other:?}")),
    };
    Ok(Some(step))
}

/// What the model is shown before a step.
fn prompt(cx: &ConfigureContext<'_>) -> String {
    let mut out = String::from("<detection>\n");
    if cx.failed.stacks.is_empty() {
        out.push_str("No known stack matched the repository's files.\n");
    }
    for stack in &cx.failed.stacks {
        out.push_str(&format!(
            "{} ({}): {}\n",
            stack.name, stack.marker, stack.reason
        ));
    }
    out.push_str("</detection>\n\n<tree>\n");
    out.push_str(cx.tree);
    out.push_str("</tree>\n");
    for step in cx.history {
        out.push_str(&format!(
            "\n<step n=\"{}\" ok=\"{}\"{}>\n{}\n<observation>\n{}\n</observation>\n</step>\n",
            step.step,
            step.ok,
            if step.rolled_back {
                " rolled_back=\"true\""
            } else {
                ""
            },
            serde_json::to_string(&step.action).unwrap_or_default(),
            step.observation.trim_end()
        ));
    }
    out.push_str(&format!("\n{} step(s) left. The next step?", cx.steps_left));
    out
}

/// A model that configures environments.
pub struct ModelConfigurator {
    provider: Arc<dyn Provider>,
    model: String,
    prices: PriceTable,
    max_tokens: Option<u64>,
    max_cost_usd: Option<f64>,
    spent: Mutex<(Usage, f64)>,
}

impl std::fmt::Debug for ModelConfigurator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelConfigurator")
            .field("provider", &self.provider.name())
            .field("model", &self.model)
            .finish()
    }
}

impl ModelConfigurator {
    /// On `provider`'s `model`, without a budget.
    pub fn new(provider: Arc<dyn Provider>, model: impl Into<String>) -> Self {
        ModelConfigurator {
            provider,
            model: model.into(),
            prices: PriceTable::new(),
            max_tokens: None,
            max_cost_usd: None,
            spent: Mutex::new((Usage::default(), 0.0)),
        }
    }

    /// Prices its calls (the budget in dollars needs them).
    pub fn prices(mut self, prices: PriceTable) -> Self {
        self.prices = prices;
        self
    }

    /// Stops (the configurator fails) once this many tokens are used.
    pub fn max_tokens(mut self, tokens: u64) -> Self {
        self.max_tokens = Some(tokens);
        self
    }

    /// Stops once this many dollars are spent.
    pub fn max_cost_usd(mut self, usd: f64) -> Self {
        self.max_cost_usd = Some(usd);
        self
    }

    /// Tokens used so far.
    pub fn usage(&self) -> Usage {
        self.spent.lock().map(|s| s.0).unwrap_or_default()
    }
}

#[async_trait::async_trait]
impl Configurator for ModelConfigurator {
    async fn next(&self, cx: &ConfigureContext<'_>) -> Result<Option<ConfigStep>, String> {
        let (usage, cost) = self
            .spent
            .lock()
            .map(|s| *s)
            .map_err(|_| "the budget's lock is poisoned".to_owned())?;
        if let Some(max) = self.max_tokens {
            let used = usage.input_tokens + usage.output_tokens;
            if used >= max {
                return Err(format!("its token budget is spent ({used} of {max})"));
            }
        }
        if let Some(max) = self.max_cost_usd {
            if cost >= max {
                return Err(format!("its budget is spent (${cost:.4} of ${max:.4})"));
            }
        }
        let mut request = Request::new(&self.model);
        request.system = PROMPT.to_owned();
        request.max_tokens = 4096;
        request.response_schema = Some(ResponseSchema {
            name: "configure_step".to_owned(),
            schema: schema(),
        });
        request.messages.push(Message::user(prompt(cx)));
        let asked = crate::structured::ask(&*self.provider, request, validate)
            .await
            .map_err(|e| format!("the model could not be asked: {e}"))?;
        if let Ok(mut spent) = self.spent.lock() {
            spent.0 += asked.usage;
            spent.1 += self.prices.cost(&self.model, asked.usage).unwrap_or(0.0);
        }
        asked.answer.map_err(|(why, answer)| {
            format!("the model's step was invalid twice ({why}): {answer}")
        })
    }

    fn spent_usd(&self) -> f64 {
        self.spent.lock().map(|s| s.1).unwrap_or(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_become_steps_or_say_what_is_wrong() {
        assert_eq!(
            validate(r#"{"action":"run","command":"pip install -e .","why":"deps"}"#),
            Ok(Some(ConfigStep::Run {
                command: "pip install -e .".to_owned()
            }))
        );
        assert_eq!(
            validate(r#"{"action":"give_up","why":"nothing works"}"#),
            Ok(None)
        );
        assert!(validate(r#"{"action":"test","why":"x"}"#)
            .unwrap_err()
            .contains("command"));
        assert!(validate(r#"{"action":"dance","why":"x"}"#)
            .unwrap_err()
            .contains("unknown action"));
        assert!(validate("not json").unwrap_err().contains("not JSON"));
    }
}
