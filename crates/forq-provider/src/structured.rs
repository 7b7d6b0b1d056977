//! A structured answer: one call whose reply must pass `validate`; an
//! invalid reply is sent back once with what was wrong. Shared by triage
//! by triage, the contract check and the search's model brancher.

use crate::message::{Message, Request, Usage};
use crate::provider::{Provider, ProviderError};

/// What asking gave.
#[derive(Debug)]
pub struct Asked<T> {
    /// The valid answer, or what was wrong with the second one and that
    /// answer (shortened).
    pub answer: Result<T, (String, String)>,
    /// Model calls made (1 or 2).
    pub calls: u32,
    /// Tokens used over the calls.
    pub usage: Usage,
}

/// Asks `request` of `provider` until `validate` accepts the reply's text,
/// at most twice.
pub async fn ask<T>(
    provider: &dyn Provider,
    mut request: Request,
    validate: impl Fn(&str) -> Result<T, String>,
) -> Result<Asked<T>, ProviderError> {
    let mut usage = Usage::default();
    let mut calls = 0;
    loop {
        calls += 1;
        let reply = provider.complete(&request, None).await?;
        usage += reply.usage;
        let text = reply.message.text();
        match validate(&text) {
            Ok(value) => {
                return Ok(Asked {
                    answer: Ok(value),
                    calls,
                    usage,
                })
            }
            Err(why) if calls == 1 => {
                request.messages.push(reply.message);
                request.messages.push(Message::user(format!(
                    "That answer is invalid ({why}). Answer again with only a JSON object matching the schema."
                )));
            }
            Err(why) => {
                return Ok(Asked {
                    answer: Err((why, text.chars().take(300).collect())),
                    calls,
                    usage,
                })
            }
        }
    }
}
