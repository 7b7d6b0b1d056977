//! The agent–computer interface: tools a model calls, run against a
//! sandbox, each answer bounded (with a note of what was cut and how to
//! see more). [`Tool`] is a trait, so embedders add their own; a
//! [`Toolbox`] renders its tools into the provider's tool schema and runs
//! a call by name.

use std::path::Path;

use async_trait::async_trait;
use forq_sandbox::Sandbox;
use serde_json::Value;

use crate::message::ToolSpec;

mod edit;
mod files;
mod graph;
mod run;
mod tests;

pub use edit::{CreateFile, DeleteFile, Edit};
pub use files::{FindFiles, Search, ViewFile};
pub use graph::GraphTools;
pub use run::{GiveUp, Run, Submit};
pub use tests::RunTests;

/// What a tool gets to work with.
#[derive(Debug)]
pub struct ToolContext<'a> {
    /// The sandbox the agent works in.
    pub sandbox: &'a dyn Sandbox,
}

/// A tool's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// What the model reads.
    pub content: String,
    /// Whether the call failed (the model should try something else).
    pub is_error: bool,
    /// Set by `submit` and `give_up`: the run ends.
    pub control: Option<Control>,
}

impl ToolOutput {
    /// A successful answer.
    pub fn ok(content: impl Into<String>) -> ToolOutput {
        ToolOutput {
            content: content.into(),
            is_error: false,
            control: None,
        }
    }

    /// A failed call, with what to do instead.
    pub fn error(content: impl Into<String>) -> ToolOutput {
        ToolOutput {
            content: content.into(),
            is_error: true,
            control: None,
        }
    }
}

/// How a tool ends the run.
#[derive(Debug, Clone, PartialEq)]
pub enum Control {
    /// The agent says it is done.
    Submit {
        /// What it did.
        summary: String,
    },
    /// The agent cannot go on.
    GiveUp {
        /// Why.
        reason: String,
        /// What it would ask a person.
        question: String,
    },
}

/// A tool a model can call.
#[async_trait]
pub trait Tool: Send + Sync {
    /// Its name, description and argument schema.
    fn spec(&self) -> ToolSpec;

    /// Runs it. Bad arguments are an error answer, not a panic.
    async fn call(&self, cx: &ToolContext<'_>, args: &Value) -> ToolOutput;
}

/// The tools offered to a model.
#[derive(Default)]
pub struct Toolbox {
    tools: Vec<Box<dyn Tool>>,
}

impl std::fmt::Debug for Toolbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.tools.iter().map(|t| t.spec().name))
            .finish()
    }
}

impl Toolbox {
    /// No tools.
    pub fn new() -> Toolbox {
        Toolbox::default()
    }

    /// The editing set: `view_file`, `find_files`, `search`, `edit`,
    /// `create_file`, `delete_file`, `run`, `submit`, `give_up`.
    pub fn editing() -> Toolbox {
        Toolbox::new()
            .with(ViewFile)
            .with(FindFiles)
            .with(Search)
            .with(Edit)
            .with(CreateFile)
            .with(DeleteFile)
            .with(Run::default())
            .with(Submit)
            .with(GiveUp)
    }

    /// The coding agent's set, the one every caller gives it: the editing
    /// set, `run_tests` over the repository's `stack` (when the gate found
    /// one) and the graph tools over its `index` (when it opened).
    pub fn coding(
        stack: Option<forq_bootstrap::Stack>,
        index: Option<forq_graph::Index>,
    ) -> Toolbox {
        let mut tools = Toolbox::editing();
        if let Some(stack) = stack {
            tools = tools.with(RunTests::new(stack));
        }
        match index {
            Some(index) => GraphTools::new(index).add_to(tools),
            None => tools,
        }
    }

    /// Adds a tool (a later one of the same name replaces the earlier).
    pub fn with(mut self, tool: impl Tool + 'static) -> Toolbox {
        let name = tool.spec().name;
        self.tools.retain(|t| t.spec().name != name);
        self.tools.push(Box::new(tool));
        self
    }

    /// The schemas of every tool, for the provider.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.iter().map(|t| t.spec()).collect()
    }

    /// Runs the tool `name`; an unknown name is an error answer that lists
    /// the known ones.
    pub async fn call(&self, cx: &ToolContext<'_>, name: &str, args: &Value) -> ToolOutput {
        match self.tools.iter().find(|t| t.spec().name == name) {
            Some(tool) => tool.call(cx, args).await,
            None => ToolOutput::error(format!(
                "there is no tool {name:?}; the tools are: {}",
                self.specs()
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }
}

/// A shell command as the agent's tools run it: stderr merged into stdout
/// in order, stdin empty, no `.pyc` written (an edit within the second of
/// a run that keeps a file's size would otherwise leave Python a stale
/// one that hides it).
pub(crate) fn command_request(
    command: &str,
    timeout: std::time::Duration,
    output_cap: usize,
) -> forq_sandbox::ExecRequest {
    forq_sandbox::ExecRequest::shell(format!("exec 2>&1\n{command}"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .timeout(timeout)
        .stdin(Vec::new())
        .output_cap(output_cap)
}

/// A required string argument, or an error answer naming it.
pub(crate) fn string_arg<'a>(args: &'a Value, name: &str) -> Result<&'a str, ToolOutput> {
    args.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| ToolOutput::error(format!("missing the string argument {name:?}")))
}

/// A workspace path argument: relative, without `..` (the sandbox refuses
/// escapes too; this says so in the model's terms).
pub(crate) fn path_arg<'a>(args: &'a Value, name: &str) -> Result<&'a Path, ToolOutput> {
    let raw = string_arg(args, name)?;
    let path = Path::new(raw.trim_start_matches("./"));
    if path.is_absolute() || path.components().any(|c| c.as_os_str() == "..") {
        return Err(ToolOutput::error(format!(
            "{raw:?} is outside the workspace: give a path relative to the repository root"
        )));
    }
    Ok(path)
}

/// JSON Schema of an object with these string properties, all required
/// except those in `optional`.
pub(crate) fn object_schema(props: &[(&str, &str, &str)], optional: &[&str]) -> Value {
    let mut properties = serde_json::Map::new();
    for (name, kind, description) in props {
        properties.insert(
            (*name).to_owned(),
            serde_json::json!({"type": kind, "description": description}),
        );
    }
    let required: Vec<&str> = props
        .iter()
        .map(|(n, _, _)| *n)
        .filter(|n| !optional.contains(n))
        .collect();
    serde_json::json!({"type": "object", "properties": properties, "required": required})
}
