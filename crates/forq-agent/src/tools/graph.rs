//! The graph tools over a forq-graph index of the repository: `callers`,
//! `callees`, `statements_near`, `uses_of`, `repo_map`. The index is of
//! the repository as it was given (the agent's edits live in the sandbox),
//! which is what navigation needs; answers are bounded by forq-graph's own
//! caps, with its hint when cut.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use forq_graph::{Bounded, Index};
use serde::Serialize;
use serde_json::{json, Value};

use super::{object_schema, string_arg, Tool, ToolContext, ToolOutput, Toolbox};
use crate::message::ToolSpec;

/// The index the graph tools share.
#[derive(Clone)]
pub struct GraphTools {
    index: Arc<Mutex<Index>>,
}

impl std::fmt::Debug for GraphTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("GraphTools")
    }
}

impl GraphTools {
    /// Over `index` (opened and up to date).
    pub fn new(index: Index) -> GraphTools {
        GraphTools {
            index: Arc::new(Mutex::new(index)),
        }
    }

    /// `toolbox` with the five graph tools added.
    pub fn add_to(&self, toolbox: Toolbox) -> Toolbox {
        let kinds = [
            GraphKind::Callers,
            GraphKind::Callees,
            GraphKind::StatementsNear,
            GraphKind::UsesOf,
            GraphKind::RepoMap,
        ];
        kinds.into_iter().fold(toolbox, |tb, kind| {
            tb.with(GraphTool {
                index: self.index.clone(),
                kind,
            })
        })
    }
}

#[derive(Debug, Clone, Copy)]
enum GraphKind {
    Callers,
    Callees,
    StatementsNear,
    UsesOf,
    RepoMap,
}

struct GraphTool {
    index: Arc<Mutex<Index>>,
    kind: GraphKind,
}

/// One JSON line per item, and the cap's hint when cut.
fn render<T: Serialize>(b: &Bounded<T>) -> String {
    if b.items.is_empty() {
        return "nothing found".to_owned();
    }
    let mut out: Vec<String> = b
        .items
        .iter()
        .map(|i| serde_json::to_string(i).unwrap_or_default())
        .collect();
    if b.truncated {
        out.push(format!(
            "[cut: {}]",
            b.hint.as_deref().unwrap_or("narrow the query")
        ));
    }
    out.join("\n")
}

/// Why a graph tool did not answer.
enum Refused {
    /// The graph's own error.
    Graph(forq_graph::Error),
    /// The call's arguments.
    Tool(ToolOutput),
}

impl From<ToolOutput> for Refused {
    fn from(out: ToolOutput) -> Refused {
        Refused::Tool(out)
    }
}

impl GraphTool {
    fn answer(&self, index: &Index, args: &Value) -> Result<String, Refused> {
        let depth = args
            .get("depth")
            .and_then(Value::as_u64)
            .unwrap_or(1)
            .clamp(1, 5) as u32;
        let failed = Refused::Graph;
        Ok(match self.kind {
            GraphKind::Callers | GraphKind::Callees => {
                let symbol = index
                    .find_symbol(string_arg(args, "symbol")?)
                    .map_err(failed)?;
                let edges = if matches!(self.kind, GraphKind::Callers) {
                    index.callers(&symbol.id, depth)
                } else {
                    index.callees(&symbol.id, depth)
                };
                render(&edges.map_err(failed)?)
            }
            GraphKind::StatementsNear => {
                let file = string_arg(args, "file")?;
                let line = args
                    .get("line")
                    .and_then(Value::as_u64)
                    .ok_or_else(|| ToolOutput::error("missing the integer argument \"line\""))?
                    as u32;
                render(&index.statements(file, line, 5).map_err(failed)?)
            }
            GraphKind::UsesOf => {
                let name = string_arg(args, "name")?;
                let file = args.get("file").and_then(Value::as_str);
                render(&index.uses(name, file, None).map_err(failed)?)
            }
            GraphKind::RepoMap => {
                let focus: Vec<String> = args
                    .get("focus")
                    .and_then(Value::as_str)
                    .map(|f| f.split(',').map(|s| s.trim().to_owned()).collect())
                    .unwrap_or_default();
                index.map(2000, &focus).map_err(failed)?.text
            }
        })
    }
}

#[async_trait]
impl Tool for GraphTool {
    fn spec(&self) -> ToolSpec {
        let symbol = (
            "symbol",
            "string",
            "A function, method or class: a name, a qualified name, or file:line",
        );
        let depth =
            json!({"type": "integer", "description": "How many calls away (1-5, default 1)"});
        let (name, description, mut parameters) = match self.kind {
            GraphKind::Callers => ("callers", "Who calls this symbol (resolved call edges, with their confidence).", object_schema(&[symbol], &[])),
            GraphKind::Callees => ("callees", "What this symbol calls.", object_schema(&[symbol], &[])),
            GraphKind::StatementsNear => ("statements_near", "The statements around a line of a file, with the variables each reads and writes and where those come from.", {
                let mut s = object_schema(&[("file", "string", "File path relative to the repository root")], &[]);
                s["properties"]["line"] = json!({"type": "integer", "description": "The line"});
                s["required"] = json!(["file", "line"]);
                s
            }),
            GraphKind::UsesOf => ("uses_of", "The statements that read a variable or name, those in `file` first.", object_schema(&[("name", "string", "The name"), ("file", "string", "A file to look in first")], &["file"])),
            GraphKind::RepoMap => ("repo_map", "A map of the repository's most important definitions, centred on the focus symbols or files if given.", object_schema(&[("focus", "string", "Comma-separated symbols or files to centre on")], &["focus"])),
        };
        if matches!(self.kind, GraphKind::Callers | GraphKind::Callees) {
            parameters["properties"]["depth"] = depth;
        }
        ToolSpec {
            name: name.to_owned(),
            description: description.to_owned(),
            parameters,
        }
    }

    async fn call(&self, _cx: &ToolContext<'_>, args: &Value) -> ToolOutput {
        let Ok(mut index) = self.index.lock() else {
            return ToolOutput::error("the code graph is unavailable (a previous call panicked)");
        };
        let mut answer = self.answer(&index, args);
        // A file the agent edited since the graph was built: bring the
        // graph up to date (only changed files are parsed) and ask again.
        if let Err(Refused::Graph(stale @ forq_graph::Error::Stale { .. })) = &answer {
            tracing::debug!(%stale, "updating the code graph before answering");
            if let Err(e) = index.update() {
                return ToolOutput::error(format!("{stale}, and the update failed: {e}"));
            }
            answer = self.answer(&index, args);
        }
        match answer {
            Ok(text) => ToolOutput::ok(text),
            Err(Refused::Graph(e)) => ToolOutput::error(e.to_string()),
            Err(Refused::Tool(out)) => out,
        }
    }
}
