//! Coding-agent programs behind forq's [`CodingAgent`]: the program runs
//! inside the sandbox in its non-interactive streaming mode, its events
//! are mapped onto forq's ([`AgentEvent`]), and the result is the sandbox's diff
//! — never what the program says it changed. The program never holds the
//! real key: it gets a dummy one and a base URL on its own loopback, where
//! forq's model relay (in the sandbox's network namespace, served from the
//! host) puts the real key on each request and forwards it to the model.
//! The sandbox has no other network: the model's host is on no allowlist,
//! and nothing the program runs can reach it, or read the key.
//!
//! Two programs are supported:
//! - Claude Code (`claude -p … --output-format stream-json`, Anthropic's
//!   Messages API): its `assistant`, `user` and `result` lines become
//!   steps, tokens, tool calls, observations and the outcome;
//! - Codex CLI (`codex exec --json`, OpenAI's Responses API through a
//!   provider forq defines on the command line): its `item.completed`
//!   commands, file changes and messages and its `turn.completed` /
//!   `turn.failed` become the same.

mod stream;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use forq_sandbox::{ExecRequest, Network, Sandbox, ServiceNetwork, StreamKind};
use tokio::sync::mpsc;

use crate::agent::{AgentEvent, CodingAgent, FailedIn, Outcome, RunReport, Task};
use crate::cost::{Meter, PriceTable};
use crate::message::Usage;
use crate::provider::ApiKey;
use crate::relay::{KeyHeader, KeyRelay, RelayBudget};
use forq_events::{Observer, Observers};
use stream::Reading;

/// Which program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Program {
    /// Claude Code.
    ClaudeCode,
    /// OpenAI's Codex CLI.
    Codex,
}

impl Program {
    /// The environment variables of its key and of its model's base URL.
    pub fn env_vars(self) -> (&'static str, &'static str) {
        match self {
            Program::ClaudeCode => ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
            Program::Codex => ("OPENAI_API_KEY", "OPENAI_BASE_URL"),
        }
    }
}

/// A coding-agent program driven in a sandbox.
#[derive(Clone)]
pub struct ExternalAgent {
    kind: Program,
    program: String,
    key: ApiKey,
    base_url: Option<String>,
    model: Option<String>,
    max_turns: u32,
    timeout: Duration,
    prices: PriceTable,
    budget: RelayBudget,
    observers: Observers<AgentEvent>,
}

impl std::fmt::Debug for ExternalAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExternalAgent")
            .field("program", &self.program)
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .finish()
    }
}

/// The longest line of a program's event stream forq reads (a tool's
/// result quoted whole can be long; nothing real is this long).
const MAX_LINE: usize = 16 << 20;

/// The tools Claude Code may use without asking: reading, editing and
/// running commands (the sandbox is the boundary, not its prompts).
const CLAUDE_TOOLS: &str = "Bash Edit Write Read Glob Grep LS MultiEdit";

impl ExternalAgent {
    /// Claude Code (`claude` on the sandbox's PATH), with an Anthropic key;
    /// `base_url` as `ANTHROPIC_BASE_URL` when the model is not
    /// Anthropic's own API.
    pub fn claude_code(key: ApiKey, base_url: Option<String>) -> ExternalAgent {
        ExternalAgent {
            kind: Program::ClaudeCode,
            program: "claude".to_owned(),
            key,
            base_url,
            model: None,
            max_turns: 50,
            timeout: Duration::from_secs(1800),
            prices: PriceTable::new(),
            budget: RelayBudget::default(),
            observers: Observers::new(),
        }
    }

    /// Codex CLI (`codex` on the sandbox's PATH), with an OpenAI key;
    /// `base_url` (an OpenAI-compatible `/v1` serving the Responses API)
    /// instead of OpenAI's.
    pub fn codex(key: ApiKey, base_url: Option<String>) -> ExternalAgent {
        ExternalAgent {
            kind: Program::Codex,
            program: "codex".to_owned(),
            ..ExternalAgent::claude_code(key, base_url)
        }
    }

    /// `program` with its key and base URL from the environment
    /// ([`Program::env_vars`]); `Err` names the missing key.
    pub fn from_env(program: Program) -> Result<ExternalAgent, String> {
        let (key_var, url_var) = program.env_vars();
        let key = ApiKey::from_env(key_var).ok_or_else(|| format!("{key_var} is not set"))?;
        let base = std::env::var(url_var).ok().filter(|u| !u.trim().is_empty());
        Ok(match program {
            Program::ClaudeCode => ExternalAgent::claude_code(key, base),
            Program::Codex => ExternalAgent::codex(key, base),
        })
    }

    /// The program to run instead of the one on the PATH (a path inside
    /// the sandbox).
    pub fn program(mut self, program: impl Into<String>) -> Self {
        self.program = program.into();
        self
    }

    /// The model the program asks for.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// At most this many model turns.
    pub fn max_turns(mut self, turns: u32) -> Self {
        self.max_turns = turns;
        self
    }

    /// The whole run's wall-clock cap.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Prices its tokens by `prices` (the program's own dollar figure is
    /// not used: it knows only its vendor's list prices).
    pub fn prices(mut self, prices: PriceTable) -> Self {
        self.prices = prices;
        self
    }

    /// Stops the program's model once the model's answers cost `usd` (by
    /// [`ExternalAgent::prices`]), as forq's relay counts them: past it,
    /// the relay refuses every request of the run.
    pub fn max_cost_usd(mut self, usd: f64) -> Self {
        self.budget.max_cost_usd = Some(usd);
        self
    }

    /// Stops the program's model once its answers used `tokens` (prompt
    /// and reply), as forq's relay counts them.
    pub fn max_tokens(mut self, tokens: u64) -> Self {
        self.budget.max_tokens = Some(tokens);
        self
    }

    /// Tells `observer` every event too.
    pub fn observer(mut self, observer: Arc<dyn Observer<AgentEvent>>) -> Self {
        self.observers.push(observer);
        self
    }

    /// The real model endpoint the relay forwards to.
    fn upstream(&self) -> &str {
        let default = match self.kind {
            Program::ClaudeCode => ANTHROPIC_API,
            Program::Codex => OPENAI_API,
        };
        self.base_url.as_deref().unwrap_or(default)
    }

    fn tell(&self, event: AgentEvent) {
        self.observers.emit(&event);
    }

    fn command(&self, task: &Task, relay: &KeyRelay, net: &ServiceNetwork) -> ExecRequest {
        let mut prompt = format!("Fix this issue.\n\n<issue>\n{}\n</issue>", task.issue);
        if !task.context.is_empty() {
            prompt.push_str(&format!(
                "\n\n<repository>\n{}\n</repository>",
                task.context
            ));
        }
        if !task.conventions.is_empty() {
            prompt.push_str(&format!(
                "\n\nWrite code the way this codebase does.\n{}",
                task.conventions
            ));
        }
        prompt.push_str(
            "\n\nMake the smallest change that fixes it, run the tests, and stop when they pass.",
        );
        if self.kind == Program::Codex {
            return self.codex_command(prompt, relay, net);
        }
        let mut argv = vec![
            self.program.clone(),
            "-p".to_owned(),
            prompt,
            "--output-format".to_owned(),
            "stream-json".to_owned(),
            "--verbose".to_owned(),
            "--permission-mode".to_owned(),
            "acceptEdits".to_owned(),
            "--allowedTools".to_owned(),
            CLAUDE_TOOLS.to_owned(),
            "--max-turns".to_owned(),
            self.max_turns.to_string(),
        ];
        if let Some(m) = &self.model {
            argv.extend(["--model".to_owned(), m.clone()]);
        }
        ExecRequest::new(argv)
            .network(Network::None)
            .service_network(net)
            .timeout(self.timeout)
            .env("ANTHROPIC_API_KEY", &relay.dummy)
            .env("ANTHROPIC_BASE_URL", &relay.base_url)
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            .env("DISABLE_TELEMETRY", "1")
            .env("DISABLE_ERROR_REPORTING", "1")
    }
}

/// Where Claude Code reaches Anthropic without a base URL.
const ANTHROPIC_API: &str = "https://api.anthropic.com";

/// Where Codex reaches OpenAI without a base URL.
const OPENAI_API: &str = "https://api.openai.com/v1";

impl ExternalAgent {
    fn codex_command(&self, prompt: String, relay: &KeyRelay, net: &ServiceNetwork) -> ExecRequest {
        let base = relay.base_url.clone();
        let provider = format!(
            "model_providers.forq={{name=\"forq\",base_url={},env_key=\"OPENAI_API_KEY\",wire_api=\"responses\"}}",
            serde_json::Value::String(base)
        );
        let mut argv = vec![
            self.program.clone(),
            "exec".to_owned(),
            "--json".to_owned(),
            "--skip-git-repo-check".to_owned(),
            // forq's sandbox is the boundary; Codex's own would need
            // what it does not have in there.
            "--sandbox".to_owned(),
            "danger-full-access".to_owned(),
            "-c".to_owned(),
            provider,
            "-c".to_owned(),
            "model_provider=\"forq\"".to_owned(),
        ];
        if let Some(m) = &self.model {
            argv.extend(["--model".to_owned(), m.clone()]);
        }
        argv.push(prompt);
        ExecRequest::new(argv)
            .network(Network::None)
            .service_network(net)
            .timeout(self.timeout)
            .stdin(Vec::new())
            .env("OPENAI_API_KEY", &relay.dummy)
    }
}

#[async_trait]
impl CodingAgent for ExternalAgent {
    async fn run(&self, sandbox: &dyn Sandbox, task: &Task) -> RunReport {
        let (net, relay) = match self.relay(sandbox).await {
            Ok(r) => r,
            Err(why) => {
                let outcome = Outcome::Failed {
                    cause: FailedIn::Sandbox,
                    error: format!(
                        "{} needs forq's model relay in its sandbox (it never holds the real key), \
                         and this sandbox cannot have one: {why}",
                        self.program
                    ),
                };
                self.tell(AgentEvent::Finished {
                    outcome: outcome.clone(),
                });
                return RunReport {
                    outcome,
                    steps: 0,
                    usage: Usage::default(),
                    cost_usd: 0.0,
                };
            }
        };
        let (done, reading) = self.drive(sandbox, self.command(task, &relay, &net)).await;
        let diff = sandbox.diff().await.map(|d| d.patch);
        let outcome = match (done, diff, &reading.result) {
            (Err(e), _, _) => Outcome::Failed {
                cause: FailedIn::Sandbox,
                error: self
                    .key
                    .redact(&format!("{} could not run: {e}", self.program)),
            },
            (_, Err(e), _) => Outcome::Failed {
                cause: FailedIn::Sandbox,
                error: format!("cannot read the sandbox's diff: {e}"),
            },
            (Ok(out), Ok(_), None) => Outcome::Failed {
                cause: FailedIn::Program,
                error: self.key.redact(&format!(
                    "{} ended (exit {:?}) without a result: {}",
                    self.program,
                    out.exit_code,
                    String::from_utf8_lossy(&out.stderr)
                        .lines()
                        .last()
                        .unwrap_or("")
                )),
            },
            (Ok(_), Ok(diff), Some(finish)) => {
                let text = finish.result.clone().unwrap_or_default();
                if finish.succeeded() {
                    Outcome::Submitted {
                        summary: text,
                        diff,
                    }
                } else {
                    Outcome::NeedsHuman {
                        reason: format!(
                            "{} stopped: {}",
                            self.program,
                            finish.subtype.as_deref().unwrap_or("error")
                        ),
                        question: (!text.is_empty()).then_some(text),
                        diff,
                    }
                }
            }
        };
        self.tell(AgentEvent::Finished {
            outcome: outcome.clone(),
        });
        let meter = reading
            .meter
            .unwrap_or_else(|| Meter::new(self.prices.clone()));
        // What the program says it used, or what forq's relay counted when
        // that is more: a program (or what runs in its sandbox) may say
        // anything; the relay saw the model's answers.
        let relayed = relay.metered();
        let usage = Usage {
            input_tokens: meter.usage.input_tokens.max(relayed.usage.input_tokens),
            output_tokens: meter.usage.output_tokens.max(relayed.usage.output_tokens),
        };
        RunReport {
            outcome,
            steps: meter.steps,
            usage,
            cost_usd: meter.cost_usd.max(relayed.cost_usd),
        }
    }
}

impl ExternalAgent {
    /// The sandbox's service network and forq's key relay listening in it.
    async fn relay(&self, sandbox: &dyn Sandbox) -> Result<(ServiceNetwork, KeyRelay), String> {
        let net = sandbox.service_network().await.map_err(|e| e.to_string())?;
        let header = match self.kind {
            Program::ClaudeCode => KeyHeader::XApiKey,
            Program::Codex => KeyHeader::Bearer,
        };
        let relay = KeyRelay::start(
            &net,
            self.upstream(),
            self.key.clone(),
            header,
            self.prices.clone(),
            self.budget,
        )
        .await
        .map_err(|e| e.to_string())?;
        Ok((net, relay))
    }

    /// Runs the program, reading its stream line by line as it comes: how
    /// the exec ended, and what the stream said.
    async fn drive(
        &self,
        sandbox: &dyn Sandbox,
        request: ExecRequest,
    ) -> (forq_sandbox::Result<forq_sandbox::ExecOutcome>, Reading) {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let exec = sandbox.exec(request.stream(tx));
        let mut reading = Reading::default();
        let mut pending = String::new();
        tokio::pin!(exec);
        let done = loop {
            tokio::select! {
                chunk = rx.recv() => match chunk {
                    Some(c) if c.stream == StreamKind::Stdout => {
                        pending.push_str(&String::from_utf8_lossy(&c.bytes));
                        while let Some(at) = pending.find('\n') {
                            let line: String = pending.drain(..=at).collect();
                            self.line(line.trim(), &mut reading);
                        }
                        // A line longer than any the program writes is not
                        // one of its events: it is dropped, not kept growing.
                        if pending.len() > MAX_LINE {
                            tracing::warn!(bytes = pending.len(), "{}'s output: a line past {} MiB dropped", self.program, MAX_LINE >> 20);
                            pending.clear();
                        }
                    }
                    Some(_) => {}
                    None => {}
                },
                out = &mut exec => break out,
            }
        };
        while let Ok(c) = rx.try_recv() {
            if c.stream == StreamKind::Stdout && pending.len() <= MAX_LINE {
                pending.push_str(&String::from_utf8_lossy(&c.bytes));
            }
        }
        if pending.len() > MAX_LINE {
            pending.clear();
        }
        for line in pending.lines() {
            self.line(line.trim(), &mut reading);
        }
        (done, reading)
    }
}
