//! The triaging phase: a model decides whether a fix should be attempted.

#[allow(clippy::wildcard_imports)] // the pipeline's own types
use super::*;

impl Pipeline {
    /// The triage phase's decision (as JSON): the model's, or a skip that
    /// says why there was none.
    pub(super) async fn triage(&self, run: &Run) -> Phase<serde_json::Value> {
        let repo_config = self.config_before_seed(run);
        let wanted = run.action == Action::Triage || repo_config.triage.enabled;
        if !wanted {
            return Ok(
                json!({"skipped": true, "attempt_fix": true, "reason": "triage is disabled in forq.yml"}),
            );
        }
        // Whoever pays for the run pays for its triage: a contributor-funded
        // run without the contributor's key stops here, before any call.
        let model = self.model_for(run, &repo_config)?;
        let Some(model) = &model else {
            if run.action == Action::Triage {
                return Err(Stop::short(
                    State::Failed,
                    "triage needs a model: set ANTHROPIC_API_KEY or OPENAI_API_KEY (or --provider replay)",
                    FailureKind::Input,
                ));
            }
            self.note(
                &run.id,
                State::Triaging,
                "triage skipped: no model configured",
            );
            return Ok(
                json!({"skipped": true, "attempt_fix": true, "reason": "no model configured for triage"}),
            );
        };
        let name = repo_config
            .triage
            .model
            .clone()
            .unwrap_or(model.name.clone());
        let triage = forq_agent::triage::Triage::new(model.provider.clone(), name.clone())
            .threshold(repo_config.triage.threshold);
        let text = format!("# {}\n\n{}", run.issue.title, run.issue.body);
        let decision = triage.run(&text, "").await.map_err(fail)?;
        let cost = model.prices.cost(&name, decision.usage).unwrap_or(0.0);
        let _ = self
            .store
            .event(&run.id, "cost", json!({"phase": "triage", "usd": cost}));
        self.note(
            &run.id,
            State::Triaging,
            &format!(
                "triage: {} ({:.2}): {}",
                if decision.attempt_fix { "fix" } else { "skip" },
                decision.verdict.confidence,
                decision.verdict.reason
            ),
        );
        Ok(json!({
            "skipped": false,
            "attempt_fix": decision.attempt_fix,
            "reason": decision.verdict.reason,
            "confidence": decision.verdict.confidence,
            "verdict": decision.verdict,
            "cost_usd": cost,
        }))
    }
}
