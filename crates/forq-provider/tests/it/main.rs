//! The providers against a real HTTP server on loopback that speaks both
//! protocols in the shapes their API references document, and the cost
//! accounting.

#![allow(clippy::unwrap_used)] // tests fail loudly

mod cost;
mod quirks;
#[allow(dead_code)] // shared with the crates above, which use all of it
mod server;

use std::sync::Mutex;
use std::time::Duration;

use forq_provider::message::{
    Delta, Message, Part, Request, ResponseSchema, Role, StopReason, ToolSpec,
};
use forq_provider::provider::{Anthropic, ApiKey, OpenAi, Provider, ProviderError, RetryPolicy};
use serde_json::json;
use server::{chunk, sse, Reply, Server};

const KEY: &str = "sk-test-0123456789-secret";

fn openai(server: &Server) -> OpenAi {
    OpenAi::new(&format!("{}/v1", server.url), Some(ApiKey::new(KEY)))
        .unwrap()
        .retry(RetryPolicy::default().base_delay(Duration::from_millis(10)))
}

fn anthropic(server: &Server) -> Anthropic {
    Anthropic::new(&server.url, ApiKey::new(KEY))
        .retry(RetryPolicy::default().base_delay(Duration::from_millis(10)))
}

fn view_file() -> ToolSpec {
    ToolSpec {
        name: "view_file".to_owned(),
        description: "Show 100 lines of a file".to_owned(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    }
}

fn request(stream: bool) -> Request {
    let mut r = Request::new("test-model");
    r.system = "You fix bugs.".to_owned();
    r.messages.push(Message::user("Why does add subtract?"));
    r.tools.push(view_file());
    r.stream = stream;
    r
}

/// Deltas a streamed call produced, in order.
#[derive(Default)]
struct Deltas(Mutex<Vec<Delta>>);

impl Deltas {
    fn sink(&self) -> impl Fn(&Delta) + Send + Sync + '_ {
        move |d: &Delta| self.0.lock().unwrap().push(d.clone())
    }
    fn text(&self) -> String {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter_map(|d| match d {
                Delta::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect()
    }
}

#[tokio::test]
async fn openai_plain_turn() {
    let server = Server::start(vec![Reply::ok(json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-test",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "It subtracts."}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}
    }))])
    .await;
    let mut req = request(false);
    req.tools.clear();
    let reply = openai(&server).complete(&req, None).await.unwrap();
    assert_eq!(reply.message.text(), "It subtracts.");
    assert_eq!(
        (reply.usage.input_tokens, reply.usage.output_tokens),
        (12, 3)
    );
    assert_eq!(
        (reply.stop, reply.model.as_str()),
        (StopReason::EndTurn, "gpt-test")
    );
    let got = &server.received()[0];
    assert_eq!(
        (got.method.as_str(), got.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(
        got.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(
        got.body["messages"][0],
        json!({"role": "system", "content": "You fix bugs."})
    );
    assert_eq!(
        got.body["messages"][1],
        json!({"role": "user", "content": "Why does add subtract?"})
    );
    assert_eq!(got.body["max_tokens"], 4096);
    assert!(got.body.get("tools").is_none());
}

#[tokio::test]
async fn openai_tool_calls_and_results_round_trip() {
    let server = Server::start(vec![
        Reply::ok(json!({
            "model": "gpt-test",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
                "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "view_file", "arguments": "{\"path\": \"calc.py\"}"}},
                    {"id": "call_2", "type": "function", "function": {"name": "view_file", "arguments": "{\"path\": \"calc.py\", "}}
                ]}}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 9}
        })),
        Reply::ok(json!({"model": "gpt-test", "choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": "Found it."}}], "usage": {"prompt_tokens": 30, "completion_tokens": 2}})),
    ])
    .await;
    let provider = openai(&server);
    let mut req = request(false);
    let reply = provider.complete(&req, None).await.unwrap();
    assert_eq!(reply.stop, StopReason::ToolUse);
    let calls: Vec<&Part> = reply.tool_calls().collect();
    assert_eq!(
        calls[0],
        &Part::ToolCall {
            id: "call_1".into(),
            name: "view_file".into(),
            arguments: json!({"path": "calc.py"}),
            invalid_arguments: None
        }
    );
    // Malformed arguments are kept as sent, for the caller to answer with an error.
    match calls[1] {
        Part::ToolCall {
            arguments,
            invalid_arguments,
            ..
        } => {
            assert!(arguments.is_null());
            assert_eq!(
                invalid_arguments.as_deref(),
                Some("{\"path\": \"calc.py\", ")
            );
        }
        other => panic!("{other:?}"),
    }
    // The tools went out in OpenAI's shape.
    let first = &server.received()[0].body;
    assert_eq!(first["tools"][0]["type"], "function");
    assert_eq!(first["tools"][0]["function"]["name"], "view_file");
    assert_eq!(first["tool_choice"], "auto");
    // The results go back as `tool` messages after the assistant's calls.
    req.messages.push(reply.message.clone());
    req.messages.push(Message {
        role: Role::User,
        parts: vec![
            Part::ToolResult {
                id: "call_1".into(),
                content: "def add(a, b):\n    return a - b".into(),
                is_error: false,
            },
            Part::ToolResult {
                id: "call_2".into(),
                content: "arguments are not valid JSON".into(),
                is_error: true,
            },
        ],
    });
    let done = provider.complete(&req, None).await.unwrap();
    assert_eq!(done.message.text(), "Found it.");
    let second = &server.received()[1].body;
    let msgs = second["messages"].as_array().unwrap();
    assert_eq!(msgs[2]["role"], "assistant");
    assert_eq!(
        msgs[2]["tool_calls"][0]["function"]["arguments"],
        "{\"path\":\"calc.py\"}"
    );
    assert_eq!(
        msgs[3],
        json!({"role": "tool", "tool_call_id": "call_1", "content": "def add(a, b):\n    return a - b"})
    );
    assert_eq!(msgs[4]["tool_call_id"], "call_2");
}

#[tokio::test]
async fn openai_streaming_merges_tool_call_arguments_by_index() {
    let events = sse(&[
        chunk(json!({"role": "assistant", "content": ""}), None),
        chunk(json!({"content": "Let me "}), None),
        chunk(json!({"content": "look."}), None),
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "view_file", "arguments": ""}}]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [{"index": 1, "id": "call_b", "type": "function", "function": {"name": "view_file", "arguments": "{\"path\""}}]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"path\": \"a"}}]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [{"index": 1, "function": {"arguments": ": \"b.py\"}"}}]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": ".py\"}"}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "gpt-test", "choices": [],
               "usage": {"prompt_tokens": 40, "completion_tokens": 17, "total_tokens": 57}}),
    ]);
    // Cut the stream mid-event too: the reader must reassemble it.
    let joined = events.concat();
    let pieces: Vec<String> = joined
        .as_bytes()
        .chunks(37)
        .map(|c| String::from_utf8(c.to_vec()).unwrap())
        .collect();
    let server = Server::start(vec![Reply::Events(pieces)]).await;
    let deltas = Deltas::default();
    let sink = deltas.sink();
    let reply = openai(&server)
        .complete(&request(true), Some(&sink))
        .await
        .unwrap();
    assert_eq!(reply.message.text(), "Let me look.");
    assert_eq!(deltas.text(), "Let me look.");
    let args: Vec<serde_json::Value> = reply
        .tool_calls()
        .map(|p| match p {
            Part::ToolCall { arguments, .. } => arguments.clone(),
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(args, [json!({"path": "a.py"}), json!({"path": "b.py"})]);
    assert_eq!(reply.stop, StopReason::ToolUse);
    assert_eq!(
        (reply.usage.input_tokens, reply.usage.output_tokens),
        (40, 17)
    );
    let body = &server.received()[0].body;
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"]["include_usage"], true);
}

fn anthropic_event(name: &str, data: serde_json::Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

#[tokio::test]
async fn anthropic_plain_and_tool_use_turns() {
    let server = Server::start(vec![
        Reply::ok(json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
            "content": [{"type": "text", "text": "Let me look."},
                        {"type": "tool_use", "id": "toolu_1", "name": "view_file", "input": {"path": "calc.py"}}],
            "stop_reason": "tool_use", "stop_sequence": null, "usage": {"input_tokens": 50, "output_tokens": 20}})),
        Reply::ok(json!({"id": "msg_2", "type": "message", "role": "assistant", "model": "claude-test",
            "content": [{"type": "text", "text": "add subtracts."}],
            "stop_reason": "end_turn", "usage": {"input_tokens": 80, "output_tokens": 4}})),
    ])
    .await;
    let provider = anthropic(&server);
    let mut req = request(false);
    let reply = provider.complete(&req, None).await.unwrap();
    assert_eq!(reply.stop, StopReason::ToolUse);
    assert_eq!(reply.message.text(), "Let me look.");
    assert_eq!(reply.tool_calls().count(), 1);
    let got = &server.received()[0];
    assert_eq!(got.path, "/v1/messages");
    assert_eq!(got.header("x-api-key"), Some(KEY));
    assert_eq!(got.header("anthropic-version"), Some("2023-06-01"));
    assert!(got.header("authorization").is_none());
    assert_eq!(got.body["system"], "You fix bugs.");
    assert_eq!(got.body["tools"][0]["input_schema"]["required"][0], "path");
    assert_eq!(got.body["tool_choice"], json!({"type": "auto"}));
    req.messages.push(reply.message.clone());
    req.messages.push(Message {
        role: Role::User,
        parts: vec![Part::ToolResult {
            id: "toolu_1".into(),
            content: "return a - b".into(),
            is_error: false,
        }],
    });
    let done = provider.complete(&req, None).await.unwrap();
    assert_eq!(
        (done.message.text().as_str(), done.stop),
        ("add subtracts.", StopReason::EndTurn)
    );
    let second = &server.received()[1].body;
    assert_eq!(
        second["messages"][1]["content"][1],
        json!({"type": "tool_use", "id": "toolu_1", "name": "view_file", "input": {"path": "calc.py"}})
    );
    assert_eq!(
        second["messages"][2]["content"][0],
        json!({"type": "tool_result", "tool_use_id": "toolu_1", "content": "return a - b", "is_error": false})
    );
}

#[tokio::test]
async fn anthropic_streaming_events() {
    let events = vec![
        anthropic_event(
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "claude-test", "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 25, "output_tokens": 1}}}),
        ),
        anthropic_event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        anthropic_event("ping", json!({"type": "ping"})),
        anthropic_event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Let me "}}),
        ),
        anthropic_event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "look."}}),
        ),
        anthropic_event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        anthropic_event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "view_file", "input": {}}}),
        ),
        anthropic_event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": ""}}),
        ),
        anthropic_event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"path\": \"ca"}}),
        ),
        anthropic_event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "lc.py\"}"}}),
        ),
        anthropic_event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 1}),
        ),
        anthropic_event(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 42}}),
        ),
        anthropic_event("message_stop", json!({"type": "message_stop"})),
    ];
    let server = Server::start(vec![Reply::Events(events)]).await;
    let deltas = Deltas::default();
    let sink = deltas.sink();
    let reply = anthropic(&server)
        .complete(&request(true), Some(&sink))
        .await
        .unwrap();
    assert_eq!(reply.message.text(), "Let me look.");
    assert_eq!(deltas.text(), "Let me look.");
    assert!(deltas.0.lock().unwrap().contains(&Delta::ToolCall {
        index: 0,
        id: "toolu_1".into(),
        name: "view_file".into()
    }));
    assert_eq!(
        reply.tool_calls().next().unwrap(),
        &Part::ToolCall {
            id: "toolu_1".into(),
            name: "view_file".into(),
            arguments: json!({"path": "calc.py"}),
            invalid_arguments: None
        }
    );
    assert_eq!(
        (reply.usage.input_tokens, reply.usage.output_tokens),
        (25, 42)
    );
    assert_eq!(reply.stop, StopReason::ToolUse);
    assert_eq!(server.received()[0].body["stream"], true);
}

#[tokio::test]
async fn anthropic_structured_output_is_a_forced_tool_read_back_as_json() {
    let server = Server::start(vec![Reply::ok(json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
        "content": [{"type": "tool_use", "id": "toolu_9", "name": "triage", "input": {"act": true, "confidence": 0.8}}],
        "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 10}}))])
    .await;
    let mut req = request(false);
    req.tools.clear();
    req.response_schema = Some(ResponseSchema {
        name: "triage".into(),
        schema: json!({"type": "object", "properties": {"act": {"type": "boolean"}, "confidence": {"type": "number"}}}),
    });
    let reply = anthropic(&server).complete(&req, None).await.unwrap();
    let parsed: serde_json::Value = serde_json::from_str(&reply.message.text()).unwrap();
    assert_eq!(parsed, json!({"act": true, "confidence": 0.8}));
    assert_eq!(reply.stop, StopReason::EndTurn);
    let body = &server.received()[0].body;
    assert_eq!(
        body["tool_choice"],
        json!({"type": "tool", "name": "triage"})
    );
}

#[tokio::test]
async fn rate_limits_wait_as_retry_after_says_then_succeed() {
    let ok = json!({"model": "m", "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "done"}}]});
    let server = Server::start(vec![
        Reply::Json {
            status: 429,
            headers: vec![("retry-after", "1".into())],
            body: json!({"error": {"message": "Rate limit reached"}}).to_string(),
        },
        Reply::ok(ok),
    ])
    .await;
    // A backoff of 10 minutes: only Retry-After (1 s) lets this finish in time.
    let provider = OpenAi::new(&format!("{}/v1", server.url), Some(ApiKey::new(KEY)))
        .unwrap()
        .retry(RetryPolicy::default().base_delay(Duration::from_secs(600)));
    let started = std::time::Instant::now();
    let reply = tokio::time::timeout(
        Duration::from_secs(30),
        provider.complete(&request(false), None),
    )
    .await
    .expect("Retry-After was not honoured")
    .unwrap();
    assert_eq!(reply.message.text(), "done");
    assert_eq!(server.received().len(), 2);
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "waited {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn server_errors_are_retried_and_give_up_with_the_last_message() {
    let ok = json!({"model": "m", "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "done"}}]});
    let server = Server::start(vec![
        Reply::status(500, json!({"error": {"message": "internal"}})),
        Reply::status(503, json!({"error": {"message": "overloaded"}})),
        Reply::ok(ok),
    ])
    .await;
    let reply = openai(&server)
        .complete(&request(false), None)
        .await
        .unwrap();
    assert_eq!(reply.message.text(), "done");
    assert_eq!(server.received().len(), 3);
    // Always failing: the attempts run out and the error says so.
    let failing = Server::start((0..3).map(|_| Reply::status(529, json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}))).collect()).await;
    let provider = Anthropic::new(&failing.url, ApiKey::new(KEY)).retry(
        RetryPolicy::default()
            .max_attempts(3)
            .base_delay(Duration::from_millis(5)),
    );
    let err = provider.complete(&request(false), None).await.unwrap_err();
    assert!(
        matches!(
            err,
            ProviderError::Unavailable {
                status: 529,
                attempts: 3,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("Overloaded"), "{err}");
    assert_eq!(failing.unused_replies(), 0);
}

#[tokio::test]
async fn auth_and_request_errors_are_clear_and_never_show_the_key() {
    let server = Server::start(vec![
        Reply::status(401, json!({"error": {"message": format!("Incorrect API key provided: {KEY}."), "type": "invalid_request_error"}})),
        Reply::status(400, json!({"error": {"message": "max_tokens: must be at most 8192"}})),
    ])
    .await;
    let provider = openai(&server);
    let err = provider.complete(&request(false), None).await.unwrap_err();
    assert!(
        matches!(err, ProviderError::Auth { status: 401, .. }),
        "{err:?}"
    );
    let text = format!("{err} {err:?} {provider:?}");
    assert!(
        text.contains("Incorrect API key provided: [redacted]"),
        "{text}"
    );
    assert!(!text.contains(KEY), "{text}");
    // Not retried.
    assert_eq!(server.received().len(), 1);
    let err = provider.complete(&request(false), None).await.unwrap_err();
    assert!(
        matches!(err, ProviderError::BadRequest { status: 400, .. }),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("max_tokens: must be at most 8192"),
        "{err}"
    );
}

#[tokio::test]
async fn an_unreachable_endpoint_is_a_connect_error_after_retries() {
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let provider = OpenAi::new(&format!("http://127.0.0.1:{port}/v1"), None)
        .unwrap()
        .retry(
            RetryPolicy::default()
                .max_attempts(2)
                .base_delay(Duration::from_millis(5)),
        );
    let err = provider.complete(&request(false), None).await.unwrap_err();
    assert!(
        matches!(err, ProviderError::Connect { attempts: 2, .. }),
        "{err:?}"
    );
    assert!(
        err.to_string().contains(&format!("127.0.0.1:{port}")),
        "{err}"
    );
}

#[test]
fn a_missing_key_says_what_to_set() {
    let err = OpenAi::new("https://api.openai.com/v1", None).unwrap_err();
    assert_eq!(
        err.to_string(),
        "no API key for openai: set OPENAI_API_KEY or pass a key"
    );
    assert_eq!(format!("{:?}", ApiKey::new(KEY)), "ApiKey([redacted])");
}

/// A reply is read into the protocol's types: a compatible server's tool
/// call without an id gets one of forq's own (so its result answers it,
/// whole or streamed), a call without a function name and a body that is
/// not a Chat Completions reply are protocol errors that say so.
#[tokio::test]
async fn openai_replies_missing_ids_names_or_shape_are_handled_by_type() {
    let no_ids = json!({"model": "local", "choices": [{"index": 0, "finish_reason": "tool_calls",
        "message": {"role": "assistant", "content": null, "tool_calls": [
            {"type": "function", "function": {"name": "view_file", "arguments": "{\"path\": \"a.py\"}"}},
            {"type": "function", "function": {"name": "view_file", "arguments": "{\"path\": \"b.py\"}"}}]}}]});
    let streamed_no_id = sse(&[chunk(
        json!({"tool_calls": [{"index": 0, "type": "function", "function": {"name": "view_file", "arguments": "{}"}}]}),
        Some("tool_calls"),
    )]);
    let no_name = json!({"choices": [{"message": {"tool_calls": [
        {"id": "call_1", "type": "function", "function": {"arguments": "{}"}}]}}]});
    let not_a_reply = json!({"result": "hello"});
    let server = Server::start(vec![
        Reply::ok(no_ids),
        Reply::Events(streamed_no_id),
        Reply::ok(no_name),
        Reply::ok(not_a_reply),
    ])
    .await;
    let provider = openai(&server);
    let reply = provider.complete(&request(false), None).await.unwrap();
    let ids: Vec<&str> = reply
        .tool_calls()
        .map(|p| match p {
            Part::ToolCall { id, .. } => id.as_str(),
            _ => "",
        })
        .collect();
    assert_eq!(ids, ["call_0", "call_1"]);
    assert_eq!(
        reply.usage.input_tokens, 0,
        "no usage is none, not an error"
    );
    let streamed = provider.complete(&request(true), None).await.unwrap();
    assert!(
        matches!(streamed.tool_calls().next(), Some(Part::ToolCall { id, .. }) if id == "call_0"),
        "{streamed:?}"
    );
    let err = provider.complete(&request(false), None).await.unwrap_err();
    assert!(
        matches!(&err, ProviderError::Protocol { message, .. } if message.contains("missing field `name`")),
        "{err}"
    );
    let err = provider.complete(&request(false), None).await.unwrap_err();
    assert!(
        matches!(&err, ProviderError::Protocol { message, .. } if message.contains("no choices")),
        "{err}"
    );
}

/// Messages replies are read into the protocol's types: blocks forq does
/// not read (thinking) are left out, a `tool_use` without its id is a
/// protocol error that names the field, and a stream's event kinds forq
/// does not know are passed over.
#[tokio::test]
async fn anthropic_replies_are_read_by_type() {
    let thinking = json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
        "content": [{"type": "thinking", "thinking": "hmm", "signature": "x"},
                    {"type": "text", "text": "Done."}],
        "stop_reason": "end_turn", "usage": {"input_tokens": 3, "output_tokens": 2}});
    let no_id = json!({"type": "message", "content": [{"type": "tool_use", "name": "view_file", "input": {}}]});
    let stream = vec![
        anthropic_event(
            "message_start",
            json!({"type": "message_start", "message": {"model": "claude-test", "usage": {"input_tokens": 5, "output_tokens": 1}}}),
        ),
        anthropic_event(
            "future_kind",
            json!({"type": "future_kind", "anything": [1, 2]}),
        ),
        anthropic_event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        anthropic_event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi."}}),
        ),
        anthropic_event(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 4}}),
        ),
        anthropic_event("message_stop", json!({"type": "message_stop"})),
    ];
    let server = Server::start(vec![
        Reply::ok(thinking),
        Reply::ok(no_id),
        Reply::Events(stream),
    ])
    .await;
    let provider = anthropic(&server);
    let reply = provider.complete(&request(false), None).await.unwrap();
    assert_eq!(
        reply.message.parts,
        vec![Part::Text {
            text: "Done.".into()
        }]
    );
    assert_eq!(
        (reply.usage.input_tokens, reply.usage.output_tokens),
        (3, 2)
    );
    let err = provider.complete(&request(false), None).await.unwrap_err();
    assert!(
        matches!(&err, ProviderError::Protocol { message, .. } if message.contains("missing field `id`")),
        "{err}"
    );
    let streamed = provider.complete(&request(true), None).await.unwrap();
    assert_eq!(streamed.message.text(), "Hi.");
    assert_eq!(
        (streamed.usage.input_tokens, streamed.usage.output_tokens),
        (5, 4)
    );
    assert_eq!(streamed.stop, StopReason::EndTurn);
}
