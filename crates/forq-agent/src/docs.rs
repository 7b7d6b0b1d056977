//! Documentation written by a model: one structured call returns the text
//! of a doc for each definition asked about — only the text; where it
//! goes and in what form is the caller's (forq-graph's `write_doc`), and
//! the caller checks that nothing but docs changed.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::message::{Message, Request, ResponseSchema, Usage};
use crate::provider::{Provider, ProviderError};

/// A definition to document.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DocRequest {
    /// Its id (forq-graph's).
    pub id: String,
    /// Its language (`python`, `rust`, …).
    pub language: String,
    /// Its source.
    pub source: String,
}

/// A doc the model wrote.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct WrittenDoc {
    /// The definition's id.
    pub symbol: String,
    /// The doc's text: plain prose, no comment markers or quotes.
    pub doc: String,
}

#[derive(Deserialize)]
struct Answer {
    docs: Vec<WrittenDoc>,
}

/// What a call gave: a doc for every definition asked about, and the
/// tokens it took.
#[derive(Debug, Clone)]
pub struct Docs {
    /// The docs, in the order asked.
    pub docs: Vec<WrittenDoc>,
    /// Tokens over the calls (one, or two when the first answer was
    /// invalid).
    pub usage: Usage,
}

/// Why no docs came back.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DocsError {
    /// The provider failed.
    #[error(transparent)]
    Provider(#[from] ProviderError),
    /// The model's answer was invalid twice.
    #[error("the model's answer was invalid twice: {0}")]
    Invalid(String),
}

const PROMPT: &str = "You write documentation for code. For each definition given, write the \
text of its doc: what it does, its parameters and what it returns or raises when that is not \
obvious, in the style the codebase uses. Write only the text — no comment markers, no quotes, \
no code fences — and never change or repeat the code. Answer only with JSON matching the schema.";

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "docs": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "symbol": {"type": "string"},
                        "doc": {"type": "string"}
                    },
                    "required": ["symbol", "doc"],
                    "additionalProperties": false
                }
            }
        },
        "required": ["docs"],
        "additionalProperties": false
    })
}

/// Asks `provider`'s `model` for a doc for each of `items`, following
/// `conventions` (how the codebase writes code, may be empty).
pub async fn write_docs(
    provider: &dyn Provider,
    model: &str,
    items: &[DocRequest],
    conventions: &str,
) -> Result<Docs, DocsError> {
    let mut request = Request::new(model);
    request.system = match conventions.is_empty() {
        true => PROMPT.to_owned(),
        false => format!("{PROMPT}\n\nHow this codebase writes code:\n{conventions}"),
    };
    request.max_tokens = 4096;
    request.response_schema = Some(ResponseSchema {
        name: "docs".to_owned(),
        schema: schema(),
    });
    let mut text = String::new();
    for item in items {
        text.push_str(&format!(
            "<definition symbol=\"{}\" language=\"{}\">\n{}\n</definition>\n",
            item.id, item.language, item.source
        ));
    }
    request.messages.push(Message::user(text));
    let asked = crate::structured::ask(provider, request, |reply| {
        let answer: Answer = serde_json::from_str(reply.trim())
            .map_err(|e| format!("not the schema's shape: {e}"))?;
        let mut docs = Vec::new();
        for item in items {
            let doc = answer
                .docs
                .iter()
                .find(|d| d.symbol == item.id)
                .filter(|d| !d.doc.trim().is_empty())
                .ok_or_else(|| format!("no doc for {}", item.id))?;
            docs.push(doc.clone());
        }
        Ok(docs)
    })
    .await?;
    match asked.answer {
        Ok(docs) => Ok(Docs {
            docs,
            usage: asked.usage,
        }),
        Err((why, _)) => Err(DocsError::Invalid(why)),
    }
}
