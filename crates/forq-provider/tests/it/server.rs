//! A real HTTP/1.1 server on loopback that replies from a script: JSON
//! bodies with any status and headers, or server-sent event streams written
//! in several pieces. It records every request it gets. `{base}` in a
//! reply's header values is replaced with the server's own URL (for
//! pagination links).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A request as the server received it.
#[derive(Debug, Clone)]
pub(crate) struct Received {
    pub(crate) method: String,
    pub(crate) path: String,
    /// Header names lowercased.
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: serde_json::Value,
}

impl Received {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// What to answer.
pub(crate) enum Reply {
    Json {
        status: u16,
        headers: Vec<(&'static str, String)>,
        body: String,
    },
    /// SSE: each string is written (and flushed) separately.
    Events(Vec<String>),
}

impl Reply {
    pub(crate) fn ok(body: serde_json::Value) -> Reply {
        Reply::Json {
            status: 200,
            headers: Vec::new(),
            body: body.to_string(),
        }
    }
    /// One streamed Anthropic Messages reply holding `blocks` (text or
    /// tool_use, with `input` whole), ending with `stop`.
    pub(crate) fn anthropic_stream(n: usize, blocks: &[serde_json::Value], stop: &str) -> Reply {
        let mut events = vec![format!(
            "event: message_start\ndata: {}\n\n",
            serde_json::json!({"type": "message_start", "message": {"id": format!("msg_{n}"), "type": "message",
                "role": "assistant", "model": "scripted", "content": [], "stop_reason": null,
                "stop_sequence": null, "usage": {"input_tokens": 100, "output_tokens": 1}}})
        )];
        for (i, b) in blocks.iter().enumerate() {
            let (start, delta) = if b["type"] == "tool_use" {
                (
                    serde_json::json!({"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}),
                    serde_json::json!({"type": "input_json_delta", "partial_json": b["input"].to_string()}),
                )
            } else {
                (
                    serde_json::json!({"type": "text", "text": ""}),
                    serde_json::json!({"type": "text_delta", "text": b["text"]}),
                )
            };
            events.push(format!(
                "event: content_block_start\ndata: {}\n\n",
                serde_json::json!({"type": "content_block_start", "index": i, "content_block": start})
            ));
            events.push(format!(
                "event: content_block_delta\ndata: {}\n\n",
                serde_json::json!({"type": "content_block_delta", "index": i, "delta": delta})
            ));
            events.push(format!(
                "event: content_block_stop\ndata: {}\n\n",
                serde_json::json!({"type": "content_block_stop", "index": i})
            ));
        }
        events.push(format!(
            "event: message_delta\ndata: {}\n\n",
            serde_json::json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
                "usage": {"output_tokens": 20}})
        ));
        events.push("event: message_stop\ndata: {\"type\": \"message_stop\"}\n\n".to_owned());
        Reply::Events(events)
    }

    /// One streamed OpenAI Responses reply whose one output is `item` (a
    /// `function_call` or a `message`).
    pub(crate) fn responses_stream(n: usize, item: serde_json::Value) -> Reply {
        let event = |name: &str, mut data: serde_json::Value| {
            data["type"] = serde_json::Value::String(name.to_owned());
            format!("event: {name}\ndata: {data}\n\n")
        };
        let id = format!("resp_{n}");
        Reply::Events(vec![
            event(
                "response.created",
                serde_json::json!({"response": {"id": id, "object": "response", "status": "in_progress", "output": []}}),
            ),
            event(
                "response.output_item.added",
                serde_json::json!({"output_index": 0, "item": item}),
            ),
            event(
                "response.output_item.done",
                serde_json::json!({"output_index": 0, "item": item}),
            ),
            event(
                "response.completed",
                serde_json::json!({"response": {"id": id, "object": "response", "status": "completed",
                    "output": [item], "usage": {"input_tokens": 100, "output_tokens": 10, "total_tokens": 110,
                    "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}}}),
            ),
        ])
    }

    pub(crate) fn status(status: u16, body: serde_json::Value) -> Reply {
        Reply::Json {
            status,
            headers: Vec::new(),
            body: body.to_string(),
        }
    }
}

pub(crate) struct Server {
    pub(crate) url: String,
    received: Arc<Mutex<Vec<Received>>>,
    replies: Arc<Mutex<VecDeque<Reply>>>,
}

/// Computes a reply from the request (a server with behaviour rather than
/// a script).
type Responder = Arc<dyn Fn(&Received) -> Reply + Send + Sync>;

impl Server {
    pub(crate) async fn start(replies: Vec<Reply>) -> Server {
        Server::spawn(replies, None).await
    }

    /// A server that answers each request with what `respond` makes of it.
    pub(crate) async fn answering(
        respond: impl Fn(&Received) -> Reply + Send + Sync + 'static,
    ) -> Server {
        Server::spawn(Vec::new(), Some(Arc::new(respond))).await
    }

    async fn spawn(replies: Vec<Reply>, responder: Option<Responder>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let received = Arc::new(Mutex::new(Vec::new()));
        let replies = Arc::new(Mutex::new(VecDeque::from(replies)));
        let (rec, rep, base) = (received.clone(), replies.clone(), url.clone());
        tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                let (rec, rep, base) = (rec.clone(), rep.clone(), base.clone());
                let responder = responder.clone();
                tokio::spawn(async move {
                    let Some(req) = read_request(&mut conn).await else {
                        return;
                    };
                    // A client's reachability probe takes no scripted reply.
                    if req.method == "HEAD" {
                        let _ = conn
                            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                            .await;
                        let _ = conn.shutdown().await;
                        return;
                    }
                    // A scripted server lists no models: a client's
                    // models probe takes no scripted reply.
                    if responder.is_none() && req.method == "GET" && req.path.ends_with("/models") {
                        let _ = conn
                            .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                            .await;
                        let _ = conn.shutdown().await;
                        return;
                    }
                    let computed = responder.as_ref().map(|r| r(&req));
                    rec.lock().unwrap().push(req);
                    let reply = computed.or_else(|| rep.lock().unwrap().pop_front());
                    let reply = reply.unwrap_or(Reply::status(
                        500,
                        serde_json::json!({"error": {"message": "no scripted reply left"}}),
                    ));
                    write_reply(&mut conn, reply, &base).await;
                });
            }
        });
        Server {
            url,
            received,
            replies,
        }
    }

    pub(crate) fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }

    pub(crate) fn unused_replies(&self) -> usize {
        self.replies.lock().unwrap().len()
    }
}

async fn read_request(conn: &mut tokio::net::TcpStream) -> Option<Received> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        let n = conn.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.lines();
    let mut request_line = lines.next()?.split_whitespace();
    let method = request_line.next()?.to_owned();
    let path = request_line.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + length {
        let n = conn.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = serde_json::from_slice(&buf[head_end..]).unwrap_or(serde_json::Value::Null);
    Some(Received {
        method,
        path,
        headers,
        body,
    })
}

async fn write_reply(conn: &mut tokio::net::TcpStream, reply: Reply, base: &str) {
    match reply {
        Reply::Json {
            status,
            headers,
            body,
        } => {
            let mut head = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
                body.len()
            );
            for (n, v) in headers {
                head.push_str(&format!("{n}: {}\r\n", v.replace("{base}", base)));
            }
            head.push_str("\r\n");
            let _ = conn.write_all(head.as_bytes()).await;
            let _ = conn.write_all(body.as_bytes()).await;
        }
        Reply::Events(pieces) => {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n";
            let _ = conn.write_all(head.as_bytes()).await;
            for piece in pieces {
                let _ = conn.write_all(piece.as_bytes()).await;
                let _ = conn.flush().await;
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
        }
    }
    let _ = conn.shutdown().await;
}

/// Chat Completions stream events: each chunk a `data:` line, then `[DONE]`.
pub(crate) fn sse(data: &[serde_json::Value]) -> Vec<String> {
    let mut out: Vec<String> = data.iter().map(|d| format!("data: {d}\n\n")).collect();
    out.push("data: [DONE]\n\n".to_owned());
    out
}

pub(crate) fn chunk(delta: serde_json::Value, finish: Option<&str>) -> serde_json::Value {
    serde_json::json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test",
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}
