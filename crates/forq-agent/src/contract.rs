//! Contract check: does a changed definition keep its contract with its
//! callers? A (preserved), B (upward-compatible: old callers still work),
//! C (incompatible). Sources equal after trimming are A without a model
//! call; when unsure, or when the model answers badly twice, the answer is
//! C — a caller then looks at the ripple (forq-graph's callers) rather
//! than trust a guess.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::message::{Message, Request, ResponseSchema};
use crate::provider::{Provider, ProviderError};

/// How a change treats its callers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Class {
    /// A: the contract is preserved.
    A,
    /// B: upward-compatible; every old caller still works.
    B,
    /// C: incompatible; some caller may break.
    C,
}

/// The class and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Classification {
    /// The class.
    pub class: Class,
    /// Why.
    pub reason: String,
    /// Whether a model was asked (equal sources are not).
    pub model_called: bool,
}

const PROMPT: &str = "You compare two versions of a function, method or type and say how the \
change treats existing callers. A: the contract is preserved (same signature, same behaviour for \
every valid input). B: upward-compatible (new optional parameters, wider accepted inputs, \
additional return information old callers ignore). C: incompatible (anything a caller could \
notice: changed parameters, narrowed inputs, different results, new exceptions). If you are not \
sure, answer C. Answer only with JSON matching the schema.";

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "class": {"type": "string", "enum": ["A", "B", "C"]},
            "reason": {"type": "string"}
        },
        "required": ["class", "reason"],
        "additionalProperties": false
    })
}

/// Classifies changes with a model.
pub struct ContractCheck {
    provider: Arc<dyn Provider>,
    model: String,
}

impl std::fmt::Debug for ContractCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContractCheck")
            .field("provider", &self.provider.name())
            .field("model", &self.model)
            .finish()
    }
}

impl ContractCheck {
    /// On `provider`'s `model`.
    pub fn new(provider: Arc<dyn Provider>, model: impl Into<String>) -> ContractCheck {
        ContractCheck {
            provider,
            model: model.into(),
        }
    }

    /// The class of the change from `old` to `new`, with `context` (the
    /// callers, say) when there is any.
    pub async fn classify(
        &self,
        old: &str,
        new: &str,
        context: &str,
    ) -> Result<Classification, ProviderError> {
        if old.trim() == new.trim() {
            return Ok(Classification {
                class: Class::A,
                reason: "the sources are the same after trimming".to_owned(),
                model_called: false,
            });
        }
        let mut request = Request::new(&self.model);
        request.system = PROMPT.to_owned();
        request.max_tokens = 512;
        request.response_schema = Some(ResponseSchema {
            name: "contract".to_owned(),
            schema: schema(),
        });
        let mut text = format!("<old>\n{old}\n</old>\n<new>\n{new}\n</new>");
        if !context.is_empty() {
            text.push_str(&format!("\n<context>\n{context}\n</context>"));
        }
        request.messages.push(Message::user(text));
        let asked = crate::structured::ask(&*self.provider, request, |answer| {
            serde_json::from_str::<Classification>(&with_flag(answer))
                .map_err(|e| format!("not the schema's shape: {e}"))
                .and_then(|c| {
                    if c.reason.trim().is_empty() {
                        Err("the reason is empty".to_owned())
                    } else {
                        Ok(c)
                    }
                })
        })
        .await?;
        Ok(asked.answer.unwrap_or_else(|_| Classification {
            class: Class::C,
            reason: "the model's answer was invalid twice; assumed incompatible".to_owned(),
            model_called: true,
        }))
    }
}

/// A change's class and the ripple it sends through the code graph.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ripple {
    /// The change's class.
    pub classification: Classification,
    /// For C, the callers (up to the depth asked) that must be looked at
    /// again, nearest first; empty for A and B, whose callers still work.
    pub callers: Vec<forq_graph::CallEdge>,
    /// Whether callers were left out by the graph's caps.
    pub truncated: bool,
}

impl ContractCheck {
    /// Classifies the change of the definition `symbol` (a forq-graph id)
    /// from `old` to `new`, with its direct callers' call sites as context,
    /// and for C returns its callers to `depth` calls away: the ripple a
    /// fix must follow.
    pub async fn ripple(
        &self,
        index: &forq_graph::Index,
        symbol: &str,
        old: &str,
        new: &str,
        depth: u32,
    ) -> Result<Ripple, RippleError> {
        let callers = index.callers(symbol, depth.max(1))?;
        let context = callers
            .items
            .iter()
            .filter(|c| c.depth == 1)
            .take(20)
            .map(|c| format!("{} calls it at {}:{}", c.caller, c.file, c.line))
            .collect::<Vec<_>>()
            .join("\n");
        let classification = self.classify(old, new, &context).await?;
        let (callers, truncated) = if classification.class == Class::C {
            (callers.items, callers.truncated)
        } else {
            (Vec::new(), false)
        };
        Ok(Ripple {
            classification,
            callers,
            truncated,
        })
    }
}

/// Why a ripple could not be computed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RippleError {
    /// The code graph could not answer (an unknown symbol, a stale index).
    #[error(transparent)]
    Graph(#[from] forq_graph::Error),
    /// The provider failed.
    #[error(transparent)]
    Provider(#[from] ProviderError),
}

/// The model's `{class, reason}` with `model_called` added, so it reads as
/// a [`Classification`].
fn with_flag(answer: &str) -> String {
    match serde_json::from_str::<Value>(answer.trim()) {
        Ok(Value::Object(mut map)) => {
            map.insert("model_called".to_owned(), Value::Bool(true));
            Value::Object(map).to_string()
        }
        _ => String::new(),
    }
}
