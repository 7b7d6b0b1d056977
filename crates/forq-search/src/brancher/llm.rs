//! Model branchers (the `llm` feature), through forq-agent:
//! [`Llm`] asks one structured question for K distinct hypotheses, each
//! with search/replace edits, and on a red node sends back what failed;
//! [`Agentic`] runs a coding agent in a fork of the node and takes the
//! fork's diff as the candidate (the `single` strategy's one pass).

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use std::sync::Mutex;

use forq_agent::agent::{CodingAgent, Outcome, Task};
use forq_agent::cost::{Budget, Meter, PriceTable};
use forq_agent::message::{Message, Request, ResponseSchema};
use forq_agent::provider::Provider;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{BranchContext, BranchError, Brancher};
use crate::candidate::{Candidate, Change};

/// Characters of a file shown to the model.
const FILE_CHARS: usize = 12_000;

const PROMPT: &str = "You repair code. Given an issue, the failing tests and the code, propose \
distinct hypotheses for the fault, each with the smallest edit that would fix it. Each edit \
replaces text that occurs exactly once in the file (copy it exactly, whitespace included). \
Hypotheses must differ in where or how they change the code.";

/// K hypotheses per node from one structured call.
pub struct Llm {
    provider: Arc<dyn Provider>,
    model: String,
    issue: String,
    /// Files the model is shown (the suspects' files).
    files: Vec<String>,
    /// How the codebase writes code, added to the system prompt.
    notes: String,
    /// The search's spend on the model, and its limit.
    meter: Mutex<Meter>,
    budget: Budget,
}

impl std::fmt::Debug for Llm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Llm")
            .field("provider", &self.provider.name())
            .field("model", &self.model)
            .field("files", &self.files)
            .field("budget", &self.budget)
            .finish()
    }
}

impl Llm {
    /// On `provider`'s `model`, for `issue`, showing `files` (the
    /// localised suspects' files, say) as they stand at each node.
    pub fn new(
        provider: Arc<dyn Provider>,
        model: impl Into<String>,
        issue: impl Into<String>,
        files: Vec<String>,
    ) -> Llm {
        Llm {
            provider,
            model: model.into(),
            issue: issue.into(),
            files,
            notes: String::new(),
            meter: Mutex::new(Meter::new(PriceTable::new())),
            budget: Budget::default(),
        }
    }

    /// Tells the model how this codebase writes code (its conventions and
    /// how the suspects are called: [`codebase_notes`](super::codebase_notes)),
    /// in the system prompt of every call.
    pub fn notes(mut self, notes: impl Into<String>) -> Self {
        self.notes = notes.into();
        self
    }

    /// Stops proposing (every node then has nothing more to try) once the
    /// calls cost `usd`, priced by `prices`; a model the table cannot price
    /// is refused before its first call.
    pub fn max_cost(self, usd: f64, prices: PriceTable) -> Self {
        let mut llm = self.prices(prices);
        llm.budget = Budget::default().max_cost_usd(usd);
        llm
    }

    /// Prices its calls by `prices`, so [`Brancher::cost_usd`] counts
    /// dollars (without a table it counts none).
    pub fn prices(mut self, prices: PriceTable) -> Self {
        self.meter = Mutex::new(Meter::new(prices));
        self
    }
}

/// `system`, then how the codebase writes code when something is known.
fn with_notes(system: &str, notes: &str) -> String {
    match notes.is_empty() {
        true => system.to_owned(),
        false => format!("{system}\n\nWrite code the way this codebase does.\n{notes}"),
    }
}

/// The answer's schema.
fn schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["candidates"],
        "properties": {"candidates": {"type": "array", "items": {
            "type": "object", "additionalProperties": false,
            "required": ["hypothesis", "edits"],
            "properties": {
                "hypothesis": {"type": "string"},
                "edits": {"type": "array", "items": {
                    "type": "object", "additionalProperties": false,
                    "required": ["path", "old", "new"],
                    "properties": {"path": {"type": "string"}, "old": {"type": "string"}, "new": {"type": "string"}}
                }}
            }
        }}}
    })
}

#[derive(Deserialize)]
struct Answer {
    candidates: Vec<Proposed>,
}

#[derive(Deserialize)]
struct Proposed {
    hypothesis: String,
    edits: Vec<ProposedEdit>,
}

#[derive(Deserialize)]
struct ProposedEdit {
    path: String,
    old: String,
    new: String,
}

#[async_trait]
impl Brancher for Llm {
    fn name(&self) -> &str {
        "llm"
    }

    fn refines(&self) -> bool {
        true
    }

    fn cost_usd(&self) -> f64 {
        self.meter.lock().map_or(0.0, |m| m.cost_usd)
    }

    async fn branch(
        &self,
        cx: &BranchContext<'_>,
        k: usize,
    ) -> Result<Vec<Candidate>, BranchError> {
        let spent = self
            .meter
            .lock()
            .ok()
            .and_then(|m| m.check(&self.budget, &self.model));
        match spent {
            // Spent: nothing more to try, anywhere in the tree.
            Some(forq_agent::cost::Exceeded::Cost { .. }) => return Ok(Vec::new()),
            Some(other) => {
                return Err(BranchError {
                    brancher: "llm".to_owned(),
                    message: other.to_string(),
                })
            }
            None => {}
        }
        let mut text = format!("<issue>\n{}\n</issue>\n", self.issue);
        text.push_str(&format!(
            "<failing_tests>\n{}\n</failing_tests>\n<test_output>\n{}\n</test_output>\n",
            cx.judgement.failing.join("\n"),
            cx.judgement.tail
        ));
        if cx.node.depth > 0 {
            text.push_str(&format!(
                "<previous_attempt>\nThis code already carries the edit `{}`, and the tests above still fail with it. Propose edits on top of it, or that undo part of it.\n</previous_attempt>\n",
                cx.node.hypothesis
            ));
        }
        for path in &self.files {
            let Ok(bytes) = cx.sandbox.read_file(Path::new(path)).await else {
                continue;
            };
            let body: String = String::from_utf8_lossy(&bytes)
                .chars()
                .take(FILE_CHARS)
                .collect();
            text.push_str(&format!("<file path=\"{path}\">\n{body}\n</file>\n"));
        }
        text.push_str(&format!("Propose up to {k} hypotheses."));
        let mut request = Request::new(&self.model);
        request.system = with_notes(PROMPT, &self.notes);
        request.max_tokens = 4096;
        request.response_schema = Some(ResponseSchema {
            name: "candidates".to_owned(),
            schema: schema(),
        });
        request.messages.push(Message::user(text));
        let fail = |message: String| BranchError {
            brancher: "llm".to_owned(),
            message,
        };
        let asked = forq_agent::structured::ask(&*self.provider, request, |reply| {
            serde_json::from_str::<Answer>(reply.trim())
                .map_err(|e| format!("not the schema's shape: {e}"))
        })
        .await
        .map_err(|e| fail(e.to_string()))?;
        if let Ok(mut meter) = self.meter.lock() {
            meter.record(&self.model, asked.usage);
        }
        // An answer that is no list of candidates twice (a small model's)
        // costs this branching, not the search: no candidates from here.
        let answer = match asked.answer {
            Ok(answer) => answer,
            Err((why, _)) => {
                tracing::warn!(%why, "the model's answer was invalid twice: no candidates from it");
                return Ok(Vec::new());
            }
        };
        let n = answer.candidates.len().max(1) as f64;
        Ok(answer
            .candidates
            .into_iter()
            .take(k)
            .enumerate()
            .map(|(i, p)| Candidate {
                hypothesis: p.hypothesis,
                changes: p
                    .edits
                    .into_iter()
                    .map(|e| Change::Replace {
                        path: e.path,
                        old: e.old,
                        new: e.new,
                    })
                    .collect(),
                // The model's order is its preference.
                prior: 1.0 - i as f64 / n,
            })
            .collect())
    }
}

/// A coding agent's pass as a candidate: the agent works in a fork of the
/// node, and the files it changed become the candidate.
pub struct Agentic {
    agent: Arc<dyn CodingAgent>,
    task: Task,
    /// Dollars of every pass so far.
    spent: Mutex<f64>,
}

impl std::fmt::Debug for Agentic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agentic").finish()
    }
}

impl Agentic {
    /// `agent` on `task`.
    pub fn new(agent: Arc<dyn CodingAgent>, task: Task) -> Agentic {
        Agentic {
            agent,
            task,
            spent: Mutex::new(0.0),
        }
    }
}

#[async_trait]
impl Brancher for Agentic {
    fn name(&self) -> &str {
        "agent"
    }

    fn refines(&self) -> bool {
        true
    }

    fn cost_usd(&self) -> f64 {
        *self.spent.lock().unwrap_or_else(|p| p.into_inner())
    }

    async fn branch(
        &self,
        cx: &BranchContext<'_>,
        k: usize,
    ) -> Result<Vec<Candidate>, BranchError> {
        let fail = |message: String| BranchError {
            brancher: "agent".to_owned(),
            message,
        };
        let mut out = Vec::new();
        for _ in 0..k.max(1) {
            let fork = cx.sandbox.fork().await.map_err(|e| fail(e.to_string()))?;
            let mut task = self.task.clone();
            if cx.node.depth > 0 {
                task.issue.push_str(&format!(
                    "\n\nA previous attempt ({}) still fails these tests:\n{}\n{}",
                    cx.node.hypothesis,
                    cx.judgement.failing.join("\n"),
                    cx.judgement.tail
                ));
            }
            let report = self.agent.run(&*fork, &task).await;
            *self.spent.lock().unwrap_or_else(|p| p.into_inner()) += report.cost_usd;
            let summary = match &report.outcome {
                Outcome::Submitted { summary, .. } => summary.clone(),
                Outcome::NeedsHuman { reason, .. } => format!("(unfinished: {reason})"),
                Outcome::Failed { error, .. } => {
                    let _ = fork.destroy().await;
                    return Err(fail(error.clone()));
                }
            };
            let diff = fork.diff().await.map_err(|e| fail(e.to_string()))?;
            let mut changes = Vec::new();
            for file in &diff.files {
                let path = file.path.clone();
                match fork.read_file(Path::new(&path)).await {
                    Ok(bytes) => changes.push(Change::Write {
                        path,
                        content: String::from_utf8_lossy(&bytes).into_owned(),
                    }),
                    Err(_) => changes.push(Change::Delete { path }),
                }
            }
            let _ = fork.destroy().await;
            if !changes.is_empty() {
                out.push(Candidate {
                    hypothesis: summary,
                    changes,
                    prior: 1.0,
                });
            }
        }
        Ok(out)
    }
}

/// A coding agent as the [`Reproducer`](crate::Reproducer): it writes a
/// test that fails on the current code, without changing the code.
pub struct AgentReproducer {
    agent: Arc<dyn CodingAgent>,
    issue: String,
}

impl std::fmt::Debug for AgentReproducer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentReproducer").finish()
    }
}

impl AgentReproducer {
    /// `agent` reproducing `issue`.
    pub fn new(agent: Arc<dyn CodingAgent>, issue: impl Into<String>) -> AgentReproducer {
        AgentReproducer {
            agent,
            issue: issue.into(),
        }
    }
}

#[async_trait]
impl crate::fix::Reproducer for AgentReproducer {
    async fn write_test(&self, sandbox: &dyn forq_sandbox::Sandbox) -> Result<String, String> {
        let task = Task::new(format!(
            "Do not fix this issue yet. Write a test that reproduces it: a new test file, \
             following the repository's test conventions, whose test fails on the current code \
             because of the issue (and would pass once it is fixed). Change no other file. Run \
             the tests to see it fail, then submit with a one-line summary of what it shows.\n\n{}",
            self.issue
        ));
        let report = self.agent.run(sandbox, &task).await;
        match report.outcome {
            Outcome::Submitted { summary, .. } => Ok(summary),
            Outcome::NeedsHuman { reason, .. } => Err(format!("the agent stopped: {reason}")),
            Outcome::Failed { error, .. } => Err(error),
        }
    }
}
