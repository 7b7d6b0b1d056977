//! A provider that plays recorded replies back, in order: deterministic
//! runs and tests without a model.

use std::path::Path;
use std::sync::Mutex;

use serde_json::Value;

use super::{Error, Provider, Sink};
use crate::message::{Delta, Part, Request, Response};

/// Plays recorded replies back, one per call.
#[derive(Debug)]
pub struct Replay {
    replies: Mutex<std::collections::VecDeque<Response>>,
}

impl Replay {
    /// These replies, in order.
    pub fn new(replies: Vec<Response>) -> Replay {
        Replay {
            replies: Mutex::new(replies.into()),
        }
    }

    /// The replies of a JSONL recording: each line a [`Response`], or a
    /// transcript step holding one under `"response"` (other lines are
    /// skipped).
    pub fn from_jsonl(path: &Path) -> Result<Replay, Error> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::Replay(format!("cannot read {}: {e}", path.display())))?;
        let mut replies = Vec::new();
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let v: Value = serde_json::from_str(line).map_err(|e| {
                Error::Replay(format!("{} line {}: not JSON ({e})", path.display(), n + 1))
            })?;
            let candidate = v.get("response").cloned().unwrap_or(v);
            if candidate.get("message").is_none() {
                continue;
            }
            let reply: Response = serde_json::from_value(candidate).map_err(|e| {
                Error::Replay(format!(
                    "{} line {}: not a reply ({e})",
                    path.display(),
                    n + 1
                ))
            })?;
            replies.push(reply);
        }
        Ok(Replay::new(replies))
    }

    /// Replies not yet played.
    pub fn remaining(&self) -> usize {
        self.replies.lock().map_or(0, |r| r.len())
    }
}

#[async_trait::async_trait]
impl Provider for Replay {
    fn name(&self) -> &str {
        "replay"
    }

    async fn complete(&self, request: &Request, sink: Option<Sink<'_>>) -> Result<Response, Error> {
        let reply = self
            .replies
            .lock()
            .map_err(|_| Error::Replay("the recording's lock is poisoned".to_owned()))?
            .pop_front()
            .ok_or_else(|| Error::Replay("no recorded reply left for this call".to_owned()))?;
        if let (true, Some(sink)) = (request.stream, sink) {
            let mut index = 0;
            for part in &reply.message.parts {
                match part {
                    Part::Text { text } => sink(&Delta::Text(text.clone())),
                    Part::ToolCall { id, name, .. } => {
                        sink(&Delta::ToolCall {
                            index,
                            id: id.clone(),
                            name: name.clone(),
                        });
                        sink(&Delta::ToolArguments {
                            index,
                            fragment: part.arguments_text().unwrap_or_default(),
                        });
                        index += 1;
                    }
                    Part::ToolResult { .. } => {}
                }
            }
        }
        Ok(reply)
    }
}
