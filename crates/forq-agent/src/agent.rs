//! The coding-agent loop: the issue (and a repository map) in, tool calls
//! run in the sandbox, observations fed back, until the model submits,
//! gives up, or a budget is spent. Every step goes to observers as an
//! [`AgentEvent`] and, when asked, to a JSONL transcript that [`Replay`] can
//! play back. The patch is the sandbox's diff, never text the model wrote.
//!
//! [`Replay`]: crate::provider::Replay

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use forq_events::{Observer, Observers};
use forq_sandbox::Sandbox;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tracing::Instrument;

use crate::cost::{Budget, Meter, PriceTable};
use crate::message::{Message, Part, Request, Role, StopReason, Usage};
use crate::provider::Provider;
use crate::tools::{Control, ToolContext, Toolbox};

/// What the agent is asked to do.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Task {
    /// The issue, as its author wrote it.
    pub issue: String,
    /// Context about the repository (a repository map), if any.
    pub context: String,
    /// How the codebase writes code (conventions, call-site patterns),
    /// added to the system prompt, if any.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub conventions: String,
}

impl Task {
    /// A task of this issue, without context.
    pub fn new(issue: impl Into<String>) -> Task {
        Task {
            issue: issue.into(),
            context: String::new(),
            conventions: String::new(),
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// The model submitted; `diff` is the sandbox's patch.
    Submitted {
        /// The model's summary.
        summary: String,
        /// The patch (git format).
        diff: String,
    },
    /// A person is needed: the model gave up with a question, or a budget
    /// ran out; `diff` is the best attempt so far.
    NeedsHuman {
        /// Why.
        reason: String,
        /// The model's question, when it asked one.
        question: Option<String>,
        /// The patch so far.
        diff: String,
    },
    /// The run failed (a provider or sandbox error).
    Failed {
        /// What failed.
        error: String,
        /// Where it failed.
        #[serde(default)]
        cause: FailedIn,
    },
}

/// Where a failed run failed: what its caller's exit code says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FailedIn {
    /// The model's API: unreachable, refused, out of retries.
    Model,
    /// The sandbox or the machine: an exec, the diff, the model relay.
    Sandbox,
    /// The coding-agent program: it ended without a result.
    Program,
    /// Writing the transcript.
    Transcript,
    /// Not said (a transcript written before causes were).
    #[default]
    Unknown,
}

/// A run's failure on its way out of the loop.
pub(crate) struct Failure {
    pub(crate) cause: FailedIn,
    pub(crate) error: String,
}

impl Failure {
    /// A failure of `cause`, for `map_err`.
    pub(crate) fn of<E: std::fmt::Display>(cause: FailedIn) -> impl Fn(E) -> Failure {
        move |e| Failure {
            cause,
            error: e.to_string(),
        }
    }
}

impl From<Failure> for Outcome {
    fn from(f: Failure) -> Outcome {
        Outcome::Failed {
            error: f.error,
            cause: f.cause,
        }
    }
}

/// What a run did.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunReport {
    /// How it ended.
    pub outcome: Outcome,
    /// Model calls made.
    pub steps: u32,
    /// Tokens used.
    pub usage: Usage,
    /// Dollars spent, over the priced calls.
    pub cost_usd: f64,
}

/// A step of a run, as it happens.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum AgentEvent {
    /// A model call starts.
    StepStarted {
        /// 1-based.
        step: u32,
    },
    /// Reply text as it streams in (only with [`Agent::stream`]).
    Text {
        /// The step.
        step: u32,
        /// The new text.
        delta: String,
    },
    /// The model called a tool.
    ToolCall {
        /// The step.
        step: u32,
        /// The tool.
        name: String,
        /// Its arguments.
        arguments: serde_json::Value,
    },
    /// The tool answered.
    Observation {
        /// The step.
        step: u32,
        /// The tool.
        name: String,
        /// Whether it failed.
        is_error: bool,
        /// The answer's first line.
        summary: String,
    },
    /// Tokens and cost of the step, and the run's totals.
    Tokens {
        /// The step.
        step: u32,
        /// This call.
        usage: Usage,
        /// The run so far.
        total: Usage,
        /// Dollars so far.
        cost_usd: f64,
    },
    /// The history was condensed to fit the model's context window.
    Condensed {
        /// The step about to be asked.
        step: u32,
        /// The window, in tokens.
        window: u32,
        /// Estimated tokens of the request before.
        before: u32,
        /// After.
        after: u32,
    },
    /// The run ended.
    Finished {
        /// How.
        outcome: Outcome,
    },
}

/// A coding agent: works on a task inside a sandbox.
#[async_trait]
pub trait CodingAgent: Send + Sync {
    /// Runs to submit, give-up, a budget or an error.
    async fn run(&self, sandbox: &dyn Sandbox, task: &Task) -> RunReport;
}

/// The default system prompt.
pub const SYSTEM_PROMPT: &str =
    "You are a careful software engineer fixing an issue in a repository. \
You work only through the tools: read the code, make the smallest change that fixes the issue, \
run the tests to check it, then call submit with a summary. If the issue cannot be fixed without \
a decision only the maintainers can make, call give_up with your question.";

/// Model calls a coding agent gets unless told otherwise: the one default
/// of `--max-steps` and forq.yml's `actions.fix.agent.max_steps`.
pub const DEFAULT_MAX_STEPS: u32 = 50;

/// The default [`CodingAgent`].
pub struct Agent {
    provider: Arc<dyn Provider>,
    model: String,
    tools: Toolbox,
    budget: Budget,
    prices: PriceTable,
    system: String,
    max_tokens: u32,
    /// The model's context window, when the caller knows it better than
    /// the provider.
    context_window: Option<u32>,
    stream: bool,
    observers: Observers<AgentEvent>,
    transcript: Option<PathBuf>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("provider", &self.provider.name())
            .field("model", &self.model)
            .field("tools", &self.tools)
            .field("budget", &self.budget)
            .finish()
    }
}

impl Agent {
    /// An agent on `provider`'s `model` with the editing tools, no budget
    /// and no prices.
    pub fn new(provider: Arc<dyn Provider>, model: impl Into<String>) -> Agent {
        Agent {
            provider,
            model: model.into(),
            tools: Toolbox::editing(),
            budget: Budget::default(),
            prices: PriceTable::new(),
            system: SYSTEM_PROMPT.to_owned(),
            max_tokens: 4096,
            context_window: None,
            stream: false,
            observers: Observers::new(),
            transcript: None,
        }
    }
    /// Fits every request into a window of `tokens` (else the provider's
    /// word for the model, else [`crate::context::DEFAULT_CONTEXT_WINDOW`]).
    pub fn context_window(mut self, tokens: u32) -> Self {
        self.context_window = Some(tokens.max(1_024));
        self
    }
    /// Offers these tools instead.
    pub fn tools(mut self, tools: Toolbox) -> Self {
        self.tools = tools;
        self
    }
    /// Stops at this budget.
    pub fn budget(mut self, budget: Budget) -> Self {
        self.budget = budget;
        self
    }
    /// Prices calls with this table.
    pub fn prices(mut self, prices: PriceTable) -> Self {
        self.prices = prices;
        self
    }
    /// Uses this system prompt.
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system = prompt.into();
        self
    }
    /// Streams replies: observers see their text as it arrives
    /// ([`AgentEvent::Text`]). The steps and transcript are the same either way.
    pub fn stream(mut self, stream: bool) -> Self {
        self.stream = stream;
        self
    }
    /// Tells `observer` every event too.
    pub fn observer(mut self, observer: Arc<dyn Observer<AgentEvent>>) -> Self {
        self.observers.push(observer);
        self
    }
    /// Appends every step to this JSONL file.
    pub fn transcript(mut self, path: impl Into<PathBuf>) -> Self {
        self.transcript = Some(path.into());
        self
    }

    fn tell(&self, event: AgentEvent) {
        self.observers.emit(&event);
    }

    fn record(&self, line: serde_json::Value) -> Result<(), Failure> {
        let Some(path) = &self.transcript else {
            return Ok(());
        };
        let failed = Failure::of(FailedIn::Transcript);
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| {
                failed(format!(
                    "cannot write the transcript {}: {e}",
                    path.display()
                ))
            })?;
        writeln!(file, "{line}").map_err(|e| {
            failed(format!(
                "cannot write the transcript {}: {e}",
                path.display()
            ))
        })
    }

    async fn diff(sandbox: &dyn Sandbox) -> Result<String, Failure> {
        sandbox.diff().await.map(|d| d.patch).map_err(|e| Failure {
            cause: FailedIn::Sandbox,
            error: format!("cannot read the sandbox's diff: {e}"),
        })
    }
}

#[async_trait]
impl CodingAgent for Agent {
    async fn run(&self, sandbox: &dyn Sandbox, task: &Task) -> RunReport {
        let mut meter = Meter::new(self.prices.clone());
        let outcome = self.drive(sandbox, task, &mut meter).await;
        let outcome = outcome.unwrap_or_else(Outcome::from);
        let _ = self.record(json!({"finished": outcome}));
        self.tell(AgentEvent::Finished {
            outcome: outcome.clone(),
        });
        RunReport {
            outcome,
            steps: meter.steps,
            usage: meter.usage,
            cost_usd: meter.cost_usd,
        }
    }
}

impl Agent {
    #[tracing::instrument(name = "agent", skip_all, fields(model = %self.model))]
    async fn drive(
        &self,
        sandbox: &dyn Sandbox,
        task: &Task,
        meter: &mut Meter,
    ) -> Result<Outcome, Failure> {
        let mut window = match self.context_window {
            Some(w) => w,
            None => self
                .provider
                .context_window(&self.model)
                .await
                .unwrap_or(crate::context::DEFAULT_CONTEXT_WINDOW),
        };
        let mut request = self.first_request(task, window);
        // Tokens the model's tokenizer makes of the estimate's.
        let mut scale = 1.0;
        self.record(json!({"task": task, "model": self.model, "context_window": window, "tools": request.tools.iter().map(|t| &t.name).collect::<Vec<_>>()}))?;
        let cx = ToolContext { sandbox };
        loop {
            if let Some(exceeded) = meter.check(&self.budget, &self.model) {
                return Ok(Outcome::NeedsHuman {
                    reason: exceeded.to_string(),
                    question: None,
                    diff: Self::diff(sandbox).await?,
                });
            }
            let step = meter.steps + 1;
            self.tell(AgentEvent::StepStarted { step });
            let sink = |delta: &crate::message::Delta| {
                if let crate::message::Delta::Text(text) = delta {
                    self.tell(AgentEvent::Text {
                        step,
                        delta: text.clone(),
                    });
                }
            };
            let response = self
                .ask(&mut request, &mut window, &mut scale, step, &sink)
                .instrument(tracing::info_span!("step", step))
                .await
                .map_err(Failure::of(FailedIn::Model))?;
            let cost = meter.record(&response.model, response.usage);
            self.tell(AgentEvent::Tokens {
                step,
                usage: response.usage,
                total: meter.usage,
                cost_usd: meter.cost_usd,
            });
            // A reply that repeats itself (a small model looping) costs its
            // step, not the history: it is kept as a one-line note.
            let degenerate = crate::context::repeats_itself(&response.message.text());
            if degenerate {
                tracing::warn!(step, "the reply repeated itself; dropped from the history");
                let mut kept = response.message.clone();
                for part in &mut kept.parts {
                    if let Part::Text { text } = part {
                        *text = format!(
                            "[{} characters that repeated themselves were dropped]",
                            text.len()
                        );
                    }
                }
                request.messages.push(kept);
            } else {
                request.messages.push(response.message.clone());
            }
            let (results, control) = self
                .call_tools(&cx, step, &response.message.parts, window)
                .await;
            self.record(
                json!({"step": step, "response": response, "cost": cost, "tool_results": results}),
            )?;
            match control {
                Some(Control::Submit { summary }) => {
                    return Ok(Outcome::Submitted {
                        summary,
                        diff: Self::diff(sandbox).await?,
                    })
                }
                Some(Control::GiveUp { reason, question }) => {
                    return Ok(Outcome::NeedsHuman {
                        reason,
                        question: Some(question),
                        diff: Self::diff(sandbox).await?,
                    })
                }
                None => {}
            }
            if results.is_empty() && degenerate {
                request.messages.push(Message::user(
                    "Your last reply repeated itself. Reply with one tool call and nothing else.",
                ));
            } else if results.is_empty() && response.stop == StopReason::MaxTokens {
                // Cut at the limit: one step spent, not the run.
                request.messages.push(Message::user(
                    "Your reply was cut off at the token limit. Reply briefly: one tool call, no long reasoning.",
                ));
            } else if results.is_empty() {
                // Text alone moves nothing: ask for a tool call.
                request.messages.push(Message::user(
                    "Continue with the tools: change the code, run the tests, then call submit (or give_up).",
                ));
            } else {
                request.messages.push(Message {
                    role: Role::User,
                    parts: results,
                });
            }
        }
    }

    /// The first request: the system prompt (with the codebase's
    /// conventions), the tools, the issue and the repository's context.
    fn first_request(&self, task: &Task, window: u32) -> Request {
        let mut first = format!("Fix this issue.\n\n<issue>\n{}\n</issue>", task.issue);
        if !task.context.is_empty() {
            // The repository's map gets a tool output's share of the window.
            let context = crate::context::cap_observation(
                task.context.clone(),
                crate::context::observation_cap(window),
            );
            first.push_str(&format!("\n\n<repository>\n{context}\n</repository>"));
        }
        let mut request = Request::new(&self.model);
        request.system = match task.conventions.is_empty() {
            true => self.system.clone(),
            false => format!(
                "{}\n\nWrite code the way this codebase does.\n{}",
                self.system, task.conventions
            ),
        };
        request.tools = self.tools.specs();
        request.max_tokens = self.max_tokens;
        request.stream = self.stream;
        request.messages.push(Message::user(first));
        request
    }

    /// One model call for `request`, fitted to `window` first; a refusal
    /// as too long (the estimate was short, or the window smaller than
    /// said) fits it to the window the server names, or to three quarters
    /// of this one, and asks again, twice at most.
    async fn ask(
        &self,
        request: &mut Request,
        window: &mut u32,
        scale: &mut f64,
        step: u32,
        sink: &(dyn Fn(&crate::message::Delta) + Send + Sync),
    ) -> Result<crate::message::Response, crate::provider::ProviderError> {
        let mut refusals = 0;
        loop {
            let fitted = crate::context::fit_scaled(request, *window, self.max_tokens, *scale);
            if fitted.condensed {
                tracing::info!(
                    step,
                    window = *window,
                    before = fitted.before,
                    after = fitted.after,
                    "history condensed"
                );
                self.tell(AgentEvent::Condensed {
                    step,
                    window: *window,
                    before: fitted.before,
                    after: fitted.after,
                });
            }
            let sink = self.stream.then_some(sink as crate::provider::Sink<'_>);
            match self.provider.complete(request, sink).await {
                Err(e @ crate::provider::ProviderError::ContextLength { .. }) if refusals < 3 => {
                    refusals += 1;
                    // The server says its window, and often what the
                    // prompt came to: its tokenizer's measure of ours.
                    (*window, *scale) = crate::context::after_refusal(&e, request, *window, *scale);
                    tracing::warn!(step, window = *window, error = %e, "the request was too long for the model; fitting it again");
                }
                other => return other,
            }
        }
    }

    /// Answers every tool call of a reply, in order: the results (each
    /// capped to its share of `window`), and the first control (submit,
    /// give up) a tool asked for.
    async fn call_tools(
        &self,
        cx: &ToolContext<'_>,
        step: u32,
        parts: &[Part],
        window: u32,
    ) -> (Vec<Part>, Option<Control>) {
        let mut results = Vec::new();
        let mut control = None;
        for part in parts {
            let Part::ToolCall {
                id,
                name,
                arguments,
                invalid_arguments,
            } = part
            else {
                continue;
            };
            self.tell(AgentEvent::ToolCall {
                step,
                name: name.clone(),
                arguments: arguments.clone(),
            });
            let out = match invalid_arguments {
                Some(raw) => crate::tools::ToolOutput::error(format!(
                    "the arguments are not valid JSON ({}): call {name} again with a JSON object",
                    raw.chars().take(200).collect::<String>()
                )),
                None => {
                    self.tools
                        .call(cx, name, arguments)
                        .instrument(tracing::info_span!("tool", step, tool = %name))
                        .await
                }
            };
            tracing::debug!(step, tool = %name, is_error = out.is_error, "tool answered");
            self.tell(AgentEvent::Observation {
                step,
                name: name.clone(),
                is_error: out.is_error,
                summary: summary_of(&out.content),
            });
            if control.is_none() {
                control = out.control.clone();
            }
            results.push(Part::ToolResult {
                id: id.clone(),
                content: crate::context::cap_observation(
                    out.content,
                    crate::context::observation_cap(window),
                ),
                is_error: out.is_error,
            });
        }
        (results, control)
    }
}

/// What an observation event shows of a tool's output: its first line, at
/// most 200 characters.
pub(crate) fn summary_of(output: &str) -> String {
    output
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(200)
        .collect()
}
