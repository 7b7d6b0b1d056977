//! `forq models`: what a model's endpoint takes, found by asking it.

use std::io::Write;
use std::process::ExitCode;

use forq_agent::message::{Message, Request, ResponseSchema, ToolSpec};
use forq_agent::provider::{Provider, StructuredOutput};
use serde_json::json;

use crate::cli::ModelsArgs;
use crate::parts::open_provider;
use crate::terminal::note;

pub(crate) async fn run(args: ModelsArgs) -> anyhow::Result<ExitCode> {
    let (provider, model) = open_provider(&args.model)?;
    let window = provider.context_window(&model).await;
    // Two short calls: a structured answer, then a tool call. What the
    // endpoint refused along the way is what the provider learnt.
    let structured = probe(&*provider, structured_request(&model)).await;
    let tools = probe(&*provider, tool_request(&model)).await;
    let caps = provider.capabilities(&model);
    let structured_as = match caps.map(|c| c.structured) {
        None | Some(StructuredOutput::JsonSchema) => "json_schema",
        Some(StructuredOutput::JsonObject) => "json_object (json_schema refused)",
        Some(_) => "the schema in the prompt (response_format refused)",
    };
    let tools_as = match caps.map(|c| c.native_tools) {
        Some(false) => "a text protocol (native tool calls refused)",
        _ => "native tool calls",
    };
    if args.json {
        crate::terminal::print_json(&json!({
            "provider": provider.name(),
            "model": model,
            "context_window": window,
            "structured_output": caps.map(|c| c.structured),
            "native_tools": caps.is_none_or(|c| c.native_tools),
            "structured_call": structured.as_ref().err(),
            "tool_call": tools.as_ref().err(),
        }))?;
    } else {
        let mut out = std::io::stdout().lock();
        writeln!(out, "provider    {}", provider.name())?;
        writeln!(out, "model       {model}")?;
        match window {
            Some(w) => writeln!(out, "window      {w} tokens")?,
            None => writeln!(
                out,
                "window      not said: {} tokens assumed (--context-window to set it)",
                forq_agent::context::DEFAULT_CONTEXT_WINDOW
            )?,
        }
        writeln!(out, "structured  {structured_as}")?;
        writeln!(out, "tools       {tools_as}")?;
    }
    for (what, result) in [("a structured call", &structured), ("a tool call", &tools)] {
        if let Err(e) = result {
            note(&format!("forq: {what} failed: {e}"));
        }
    }
    let answered = structured.is_ok() && tools.is_ok();
    Ok(crate::exit::Exit::achieved(answered).into())
}

/// One short call; the provider's error, said.
async fn probe(provider: &dyn Provider, request: Request) -> Result<(), String> {
    provider
        .complete(&request, None)
        .await
        .map(drop)
        .map_err(|e| e.to_string())
}

fn structured_request(model: &str) -> Request {
    let mut r = Request::new(model);
    r.max_tokens = 32;
    r.messages.push(Message::user(
        "Is 2 + 2 equal to 4? Answer as the schema says.",
    ));
    r.response_schema = Some(ResponseSchema {
        name: "probe".to_owned(),
        schema: json!({"type": "object", "properties": {"yes": {"type": "boolean"}}, "required": ["yes"]}),
    });
    r
}

fn tool_request(model: &str) -> Request {
    let mut r = Request::new(model);
    r.max_tokens = 64;
    r.messages.push(Message::user("Call the ping tool once."));
    r.tools.push(ToolSpec {
        name: "ping".to_owned(),
        description: "Answers pong.".to_owned(),
        parameters: json!({"type": "object", "properties": {}}),
    });
    r
}
