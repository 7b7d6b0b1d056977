//! Triage: should forq act on an issue, how sure is it, and what should it
//! do? One structured-output call (a JSON schema), validated; an invalid
//! answer is sent back once with what was wrong, then refused.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::message::{Message, Request, ResponseSchema, Usage};
use crate::provider::{Provider, ProviderError};

/// What triage suggests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Attempt a fix.
    Fix,
    /// Sketch a change for a person to look at, without pushing.
    Preview,
    /// Answer in a comment (a question, a duplicate, a how-to).
    Comment,
    /// Close it (not a bug, already fixed, out of scope).
    Close,
    /// A maintainer must decide first.
    NeedsHuman,
}

/// Triage's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// Whether forq should act.
    pub act: bool,
    /// How sure, 0 to 1.
    pub confidence: f64,
    /// Why, in a sentence or two.
    pub reason: String,
    /// What to do.
    pub suggested_action: Action,
}

/// The verdict and what it decides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// The model's verdict.
    pub verdict: Verdict,
    /// Whether a fix is attempted: `act`, `fix`, and a confidence at or
    /// above the threshold.
    pub attempt_fix: bool,
    /// Model calls made (2 when the first answer was invalid).
    pub calls: u32,
    /// Tokens used.
    pub usage: Usage,
}

/// Why triage gave no decision.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TriageError {
    /// The provider failed.
    #[error(transparent)]
    Provider(#[from] ProviderError),
    /// The model's answer did not match the schema, twice.
    #[error("the model's triage answer was invalid twice ({why}); its last answer: {answer}")]
    InvalidOutput {
        /// What was wrong.
        why: String,
        /// The answer, shortened.
        answer: String,
    },
}

/// The JSON schema of a [`Verdict`].
pub fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "act": {"type": "boolean", "description": "Whether an automated change should be attempted"},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "reason": {"type": "string"},
            "suggested_action": {"type": "string", "enum": ["fix", "preview", "comment", "close", "needs_human"]}
        },
        "required": ["act", "confidence", "reason", "suggested_action"],
        "additionalProperties": false
    })
}

const PROMPT: &str =
    "You triage issues for an automated coding agent that can change this repository \
and run its tests. Decide whether the agent should act on the issue, how confident you are, why, \
and what to do: fix (a clear, testable defect or small change), preview (plausible but risky), \
comment (a question, a duplicate, a support request), close (not a defect, already fixed, out of \
scope), needs_human (a design decision only the maintainers can make). Answer only with JSON \
matching the schema.";

/// `text` as a valid verdict, or what is wrong with it.
fn validate(text: &str) -> Result<Verdict, String> {
    let value: Value = serde_json::from_str(text.trim()).map_err(|e| format!("not JSON: {e}"))?;
    let verdict: Verdict =
        serde_json::from_value(value).map_err(|e| format!("not the schema's shape: {e}"))?;
    if !(0.0..=1.0).contains(&verdict.confidence) {
        return Err(format!("confidence {} is outside 0..1", verdict.confidence));
    }
    if verdict.reason.trim().is_empty() {
        return Err("the reason is empty".to_owned());
    }
    Ok(verdict)
}

/// Triage with a model of its own (a cheap one does).
pub struct Triage {
    provider: Arc<dyn Provider>,
    model: String,
    threshold: f64,
}

impl std::fmt::Debug for Triage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Triage")
            .field("provider", &self.provider.name())
            .field("model", &self.model)
            .field("threshold", &self.threshold)
            .finish()
    }
}

/// The confidence at or above which triage attempts a fix, unless told
/// otherwise: the one default of `forq triage --threshold` and forq.yml's
/// `triage.threshold`.
pub const DEFAULT_THRESHOLD: f64 = 0.7;

impl Triage {
    /// On `provider`'s `model`, attempting fixes at [`DEFAULT_THRESHOLD`]
    /// and above.
    pub fn new(provider: Arc<dyn Provider>, model: impl Into<String>) -> Triage {
        Triage {
            provider,
            model: model.into(),
            threshold: DEFAULT_THRESHOLD,
        }
    }

    /// Attempts fixes at this confidence and above.
    pub fn threshold(mut self, threshold: f64) -> Self {
        self.threshold = threshold;
        self
    }

    /// Triage of `issue`, with `context` about the repository (a map, the
    /// README's start) when there is any.
    pub async fn run(&self, issue: &str, context: &str) -> Result<Decision, TriageError> {
        let mut request = Request::new(&self.model);
        request.system = PROMPT.to_owned();
        request.max_tokens = 1024;
        request.response_schema = Some(ResponseSchema {
            name: "triage".to_owned(),
            schema: schema(),
        });
        let mut first = format!("<issue>\n{issue}\n</issue>");
        if !context.is_empty() {
            // The repository's context gets half the model's window at most.
            let window = self
                .provider
                .context_window(&self.model)
                .await
                .unwrap_or(crate::context::DEFAULT_CONTEXT_WINDOW);
            let context =
                crate::context::cap_observation(context.to_owned(), window as usize * 3 / 2);
            first.push_str(&format!("\n\n<repository>\n{context}\n</repository>"));
        }
        request.messages.push(Message::user(first));
        let asked = crate::structured::ask(&*self.provider, request, validate).await?;
        // A model that answers no decision twice (a small local one) leaves
        // the issue to a person: a decision, not an error.
        let verdict = asked.answer.unwrap_or_else(|(why, answer)| Verdict {
            act: false,
            confidence: 0.0,
            reason: format!(
                "the model gave no usable decision twice ({why}; its last answer: {answer}): a person decides"
            ),
            suggested_action: Action::NeedsHuman,
        });
        let attempt_fix = verdict.act
            && verdict.suggested_action == Action::Fix
            && verdict.confidence >= self.threshold;
        Ok(Decision {
            verdict,
            attempt_fix,
            calls: asked.calls,
            usage: asked.usage,
        })
    }
}
