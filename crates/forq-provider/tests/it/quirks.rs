//! Servers as they are: OpenAI-compatible servers that take part of the
//! protocol (no `json_schema`, no tools, only streams, a small window),
//! each a loopback server with that behaviour.

use super::*;
use forq_provider::provider::{known_context_window, StructuredOutput};
use forq_provider::structured::ask;
use server::Received;

/// A Chat Completions reply whose message says `content`.
fn says(content: &str) -> Reply {
    Reply::ok(
        json!({"id": "c", "object": "chat.completion", "model": "small",
        "choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5}}),
    )
}

fn triage_request() -> Request {
    let mut r = Request::new("small");
    r.system = "Decide whether to act.".to_owned();
    r.messages.push(Message::user("add() subtracts"));
    r.response_schema = Some(ResponseSchema {
        name: "triage".to_owned(),
        schema: json!({"type": "object", "properties": {"act": {"type": "boolean"}}, "required": ["act"]}),
    });
    r
}

/// The calls a server received (its models list asked for aside).
fn posts(server: &Server) -> Vec<Received> {
    server
        .received()
        .into_iter()
        .filter(|r| r.method == "POST")
        .collect()
}

fn format_of(req: &Received) -> String {
    req.body["response_format"]["type"]
        .as_str()
        .unwrap_or("none")
        .to_owned()
}

#[tokio::test]
async fn a_server_without_json_schema_gets_json_object_and_it_is_remembered() {
    // As llama.cpp's Python server answers: 500, with a validation error.
    let server = Server::answering(|req| match format_of(req).as_str() {
        "json_schema" => Reply::status(
            500,
            json!({"error": {"message": "1 validation error for CreateChatCompletionRequest\nresponse_format.type\n  Input should be 'text' or 'json_object'", "type": "internal_server_error"}}),
        ),
        _ => says("{\"act\": true}"),
    })
    .await;
    let provider = openai(&server);
    let valid =
        |text: &str| serde_json::from_str::<serde_json::Value>(text).map_err(|e| e.to_string());
    let asked = ask(&provider, triage_request(), valid).await.unwrap();
    assert_eq!(asked.answer.unwrap(), json!({"act": true}));
    let seen: Vec<String> = posts(&server).iter().map(format_of).collect();
    assert_eq!(
        seen,
        ["json_schema", "json_object"],
        "refused once, not retried"
    );
    let system = &posts(&server)[1].body["messages"][0]["content"];
    assert!(
        system.as_str().unwrap().contains("\"act\""),
        "json_object carries the schema in the prompt: {system}"
    );
    assert_eq!(
        provider.capabilities("small").structured,
        StructuredOutput::JsonObject
    );
    // Remembered: the next call goes as the server takes it.
    ask(&provider, triage_request(), valid).await.unwrap();
    assert_eq!(format_of(&posts(&server)[2]), "json_object");
    assert_eq!(posts(&server).len(), 3);
}

#[tokio::test]
async fn a_server_with_no_structured_output_at_all_gets_the_schema_in_the_prompt() {
    let server = Server::answering(|req| match format_of(req).as_str() {
        "none" => says("Here it is: {\"act\": false}"),
        _ => Reply::status(
            400,
            json!({"error": {"message": "response_format is not supported"}}),
        ),
    })
    .await;
    let provider = openai(&server);
    // The caller validates and asks once more: the first answer has prose.
    let valid = |text: &str| {
        serde_json::from_str::<serde_json::Value>(text.trim_start_matches("Here it is: "))
            .map_err(|e| e.to_string())
    };
    let asked = ask(&provider, triage_request(), valid).await.unwrap();
    assert_eq!(asked.answer.unwrap(), json!({"act": false}));
    let seen: Vec<String> = posts(&server).iter().map(format_of).collect();
    assert_eq!(seen, ["json_schema", "json_object", "none"]);
}

#[tokio::test]
async fn a_server_without_tools_is_spoken_to_in_a_text_protocol() {
    let server = Server::answering(|req| {
        if req.body.get("tools").is_some() {
            return Reply::status(400, json!({"error": {"message": "tools are not supported by this server"}}));
        }
        says("I will read it.\n```json\n{\"tool\": \"view_file\", \"arguments\": {\"path\": \"calc.py\"}}\n```")
    })
    .await;
    let provider = openai(&server);
    let reply = provider.complete(&request(false), None).await.unwrap();
    assert_eq!(reply.stop, StopReason::ToolUse);
    let call = reply
        .message
        .parts
        .iter()
        .find_map(|p| match p {
            Part::ToolCall {
                name, arguments, ..
            } => Some((name.clone(), arguments.clone())),
            _ => None,
        })
        .unwrap();
    assert_eq!(call, ("view_file".to_owned(), json!({"path": "calc.py"})));
    assert!(!provider.capabilities("test-model").native_tools);
    // The next turn: the call and its result go back as text, the tools
    // described in the system prompt.
    let mut next = request(false);
    next.messages.push(reply.message);
    next.messages.push(Message {
        role: Role::User,
        parts: vec![Part::ToolResult {
            id: "call_0".to_owned(),
            content: "def add(a, b): return a - b".to_owned(),
            is_error: false,
        }],
    });
    provider.complete(&next, None).await.unwrap();
    let sent = &server.received()[2].body;
    assert!(sent.get("tools").is_none());
    let messages = sent["messages"].as_array().unwrap();
    assert!(messages[0]["content"]
        .as_str()
        .unwrap()
        .contains("- view_file: Show 100 lines"));
    assert!(messages.iter().all(|m| m["role"] != "tool"));
    assert!(messages.last().unwrap()["content"]
        .as_str()
        .unwrap()
        .contains("The tool returned:\ndef add"));
}

#[tokio::test]
async fn a_server_that_only_streams_is_read_as_a_stream() {
    let server = Server::answering(|_| {
        Reply::Events(sse(&[
            chunk(json!({"role": "assistant", "content": "Hel"}), None),
            chunk(json!({"content": "lo"}), Some("stop")),
        ]))
    })
    .await;
    let reply = openai(&server)
        .complete(&request(false), None)
        .await
        .unwrap();
    assert_eq!(reply.message.text(), "Hello");
}

/// The error a server refusing every request with `status` and `message`
/// gives.
async fn refused(status: u16, message: &'static str) -> ProviderError {
    let server =
        Server::answering(move |_| Reply::status(status, json!({"error": {"message": message}})))
            .await;
    openai(&server)
        .complete(&request(false), None)
        .await
        .unwrap_err()
}

#[tokio::test]
async fn a_request_too_long_is_said_as_such_with_the_window_and_not_retried() {
    let server = Server::answering(|_| {
        Reply::status(
            400,
            json!({"error": {"message": "Requested tokens (5123) exceed context window of 4096"}}),
        )
    })
    .await;
    let err = openai(&server)
        .complete(&request(false), None)
        .await
        .unwrap_err();
    assert!(
        matches!(err, ProviderError::ContextLength { .. }),
        "{err:?}"
    );
    assert_eq!(err.context_limit(), Some(4096));
    assert_eq!(server.received().len(), 1);
    // OpenAI's own wording, and a 500 that is one.
    let openai_said = refused(
        400,
        "This model's maximum context length is 8192 tokens. However, your messages resulted in 12320 tokens.",
    )
    .await;
    assert_eq!(openai_said.context_limit(), Some(8192));
    assert_eq!(openai_said.context_used(), Some(12320));
    let llama_said = refused(
        400,
        "This model's maximum context length is 4096 tokens. However, you requested 6071 tokens (4117 in the messages, 1954 in the completion).",
    )
    .await;
    assert_eq!(
        (llama_said.context_limit(), llama_said.context_used()),
        (Some(4096), Some(4117))
    );
    assert!(matches!(
        refused(500, "the prompt is too long: n_ctx 2048").await,
        ProviderError::ContextLength { .. }
    ));
}

#[tokio::test]
async fn the_window_comes_from_the_endpoints_model_list_else_the_known_models() {
    let server = Server::answering(|req| {
        if req.path.ends_with("/models") {
            return Reply::ok(json!({"object": "list", "data": [
                {"id": "served", "object": "model", "meta": {"n_ctx_train": 32768, "n_params": 268098176}}]}));
        }
        says("hi")
    })
    .await;
    let provider = openai(&server);
    // A local server listing one model answers for it whatever it is called.
    assert_eq!(provider.context_window("anything").await, Some(32768));
    assert_eq!(known_context_window("claude-sonnet-4-5"), Some(200_000));
    assert_eq!(known_context_window("gpt-4.1-mini"), Some(1_047_576));
    assert_eq!(known_context_window("gemma3-270m"), None);
}

#[tokio::test]
async fn a_window_the_operator_names_wins_for_that_model_only() {
    let server = Server::answering(|_| says("hi")).await;
    let provider: std::sync::Arc<dyn Provider> = std::sync::Arc::new(openai(&server));
    let named = forq_provider::provider::with_context_windows(
        provider.clone(),
        [("small".to_owned(), 4096)].into_iter().collect(),
    );
    assert_eq!(named.context_window("small").await, Some(4096));
    assert_eq!(named.context_window("gpt-4o").await, Some(128_000));
    let all = forq_provider::provider::with_context_window(provider, 2048);
    assert_eq!(all.context_window("gpt-4o").await, Some(2048));
}
