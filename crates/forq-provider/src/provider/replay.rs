//! A provider that plays recorded replies back, in order: deterministic
//! runs and tests without a model.

use std::path::Path;
use std::sync::Mutex;

use serde_json::Value;

use super::{Provider, ProviderError, Sink};
use crate::message::{Delta, Part, Request, Response};

/// Plays recorded replies back, one per call.
#[derive(Debug)]
pub struct Replay {
    replies: Mutex<std::collections::VecDeque<Response>>,
    asked: Mutex<Vec<Request>>,
}

impl Replay {
    /// These replies, in order.
    pub fn new(replies: Vec<Response>) -> Replay {
        Replay {
            replies: Mutex::new(replies.into()),
            asked: Mutex::new(Vec::new()),
        }
    }

    /// The replies of a JSONL recording: each line a [`Response`], or a
    /// transcript step holding one under `"response"` (other lines are
    /// skipped).
    pub fn from_jsonl(path: &Path) -> Result<Replay, ProviderError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ProviderError::Replay(format!("cannot read {}: {e}", path.display())))?;
        let mut replies = Vec::new();
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let v: Value = serde_json::from_str(line).map_err(|e| {
                ProviderError::Replay(format!("{} line {}: not JSON ({e})", path.display(), n + 1))
            })?;
            let candidate = v.get("response").cloned().unwrap_or(v);
            if candidate.get("message").is_none() {
                continue;
            }
            let reply: Response = serde_json::from_value(candidate).map_err(|e| {
                ProviderError::Replay(format!(
                    "{} line {}: not a reply ({e})",
                    path.display(),
                    n + 1
                ))
            })?;
            replies.push(reply);
        }
        Ok(Replay::new(replies))
    }

    /// The requests it was asked, in order (what a test checks a prompt by).
    pub fn requests(&self) -> Vec<Request> {
        self.asked.lock().map(|a| a.clone()).unwrap_or_default()
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

    async fn complete(
        &self,
        request: &Request,
        sink: Option<Sink<'_>>,
    ) -> Result<Response, ProviderError> {
        if let Ok(mut asked) = self.asked.lock() {
            asked.push(request.clone());
        }
        let reply = self
            .replies
            .lock()
            .map_err(|_| ProviderError::Replay("the recording's lock is poisoned".to_owned()))?
            .pop_front()
            .ok_or_else(|| {
                ProviderError::Replay("no recorded reply left for this call".to_owned())
            })?;
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

/// Records every reply of another provider, one JSON line each, in the
/// format [`Replay::from_jsonl`] plays back: a live session (say, the
/// agentic bootstrap fallback on a benchmark's projects) recorded once and
/// replayed where no model is reachable.
pub struct Recorder {
    inner: std::sync::Arc<dyn Provider>,
    out: Mutex<std::fs::File>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("inner", &self.inner.name())
            .finish()
    }
}

impl Recorder {
    /// Records `inner`'s replies to `path` (created or truncated).
    pub fn new(
        inner: std::sync::Arc<dyn Provider>,
        path: &Path,
    ) -> Result<Recorder, ProviderError> {
        let out = std::fs::File::create(path)
            .map_err(|e| ProviderError::Replay(format!("cannot write {}: {e}", path.display())))?;
        Ok(Recorder {
            inner,
            out: Mutex::new(out),
        })
    }
}

#[async_trait::async_trait]
impl Provider for Recorder {
    fn name(&self) -> &str {
        self.inner.name()
    }

    async fn complete(
        &self,
        request: &Request,
        sink: Option<Sink<'_>>,
    ) -> Result<Response, ProviderError> {
        let reply = self.inner.complete(request, sink).await?;
        let line = serde_json::to_string(&reply).expect("a reply serializes");
        if let Ok(mut out) = self.out.lock() {
            use std::io::Write;
            writeln!(out, "{line}")
                .map_err(|e| ProviderError::Replay(format!("cannot record a reply: {e}")))?;
        }
        Ok(reply)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::message::{Message, StopReason, Usage};

    fn reply(text: &str) -> Response {
        Response {
            message: Message::assistant(text),
            usage: Usage {
                input_tokens: 10,
                output_tokens: 2,
            },
            stop: StopReason::EndTurn,
            model: "m".to_owned(),
        }
    }

    #[tokio::test]
    async fn a_recorded_session_replays_the_same_replies() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("session.jsonl");
        let live = Arc::new(Replay::new(vec![reply("one"), reply("two")]));
        let recorder = Recorder::new(live, &path).unwrap();
        let request = Request::new("m");
        let first = recorder.complete(&request, None).await.unwrap();
        let second = recorder.complete(&request, None).await.unwrap();
        let replay = Replay::from_jsonl(&path).unwrap();
        assert_eq!(replay.complete(&request, None).await.unwrap(), first);
        assert_eq!(replay.complete(&request, None).await.unwrap(), second);
    }
}
