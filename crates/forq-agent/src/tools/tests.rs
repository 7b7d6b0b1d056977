//! `run_tests(selection?)`: the repository's own test command, as the
//! bootstrap gate found it, read by the gate's parser into per-test
//! results.

use std::time::Duration;

use async_trait::async_trait;
use forq_bootstrap::{Outcome, Stack};
use serde_json::Value;

use super::{object_schema, Tool, ToolContext, ToolOutput};
use crate::message::ToolSpec;

/// Failing tests listed by name at most.
const MAX_LISTED: usize = 30;

/// `run_tests` over a detected (or configured) stack. The sandbox must
/// already hold what the stack's install steps make (the bootstrapped
/// sandbox, or a fork of it).
#[derive(Debug, Clone)]
pub struct RunTests {
    stack: Stack,
    timeout: Duration,
}

impl RunTests {
    /// Runs `stack`'s test command, capped at 15 minutes.
    pub fn new(stack: Stack) -> RunTests {
        RunTests {
            stack,
            timeout: Duration::from_secs(900),
        }
    }

    /// Caps each run.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

#[async_trait]
impl Tool for RunTests {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "run_tests".to_owned(),
            description: format!(
                "Run the repository's tests (`{}`), or only a selection of test ids, and get counts and the failing tests.",
                self.stack.command
            ),
            parameters: object_schema(
                &[(
                    "selection",
                    "string",
                    "Test ids, separated by spaces (optional; default: the whole suite)",
                )],
                &["selection"],
            ),
        }
    }

    async fn call(&self, cx: &ToolContext<'_>, args: &Value) -> ToolOutput {
        let selection: Vec<String> = args
            .get("selection")
            .and_then(Value::as_str)
            .unwrap_or("")
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        let run = match forq_bootstrap::run_tests(cx.sandbox, &self.stack, &selection, self.timeout)
            .await
        {
            Ok(run) => run,
            Err(e) => {
                return ToolOutput::error(format!("the sandbox could not run the tests: {e}"))
            }
        };
        let (command, tail) = (&run.command, &run.tail);
        if run.timed_out {
            return ToolOutput::error(format!(
                "`{command}` timed out after {} s\n{tail}",
                self.timeout.as_secs()
            ));
        }
        let Some(ev) = run.evidence else {
            return ToolOutput::error(format!(
                "`{command}` exited {} and its output shows no test run:\n{tail}",
                run.exit_code
            ));
        };
        let mut report = format!(
            "`{command}`: {} passed, {} failed, {} errors, {} skipped",
            ev.passed, ev.failed, ev.errors, ev.skipped
        );
        if ev.collection_errors > 0 {
            report.push_str(&format!(
                ", {} test files failed to load",
                ev.collection_errors
            ));
        }
        let failing: Vec<&String> = ev
            .tests
            .iter()
            .filter(|(_, o)| matches!(o, Outcome::Failed | Outcome::Error))
            .map(|(id, _)| id)
            .collect();
        if !failing.is_empty() {
            report.push_str("\nfailing:");
            for id in failing.iter().take(MAX_LISTED) {
                report.push_str(&format!("\n  {id}"));
            }
            if failing.len() > MAX_LISTED {
                report.push_str(&format!("\n  [{} more]", failing.len() - MAX_LISTED));
            }
        }
        if ev.failed + ev.errors + ev.collection_errors > 0 || ev.executed() == 0 {
            report.push_str(&format!("\n--- end of the output ---\n{tail}"));
        }
        ToolOutput {
            content: report,
            is_error: false,
            control: None,
        }
    }
}
