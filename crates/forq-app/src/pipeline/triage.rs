//! The triaging phase: a model decides whether a fix should be attempted.

#[allow(clippy::wildcard_imports)] // the pipeline's own types
use super::*;

impl Pipeline {
    /// The triage phase's decision (as JSON): the model's, or a skip that
    /// says why there was none.
    pub(super) async fn triage(&self, run: &Run, repo_config: &Config) -> Phase<serde_json::Value> {
        let wanted = run.action == Action::Triage || repo_config.triage.enabled;
        if !wanted {
            return Ok(
                json!({"skipped": true, "attempt_fix": true, "reason": "triage is disabled in forq.yml"}),
            );
        }
        // Whoever pays for the run pays for its triage: a contributor-funded
        // run without the contributor's key stops here, before any call.
        let model = self.model_for(run, repo_config)?;
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

    /// The settings triage follows: as [`Pipeline::config_before_seed`],
    /// but for a GitHub issue on a repository not known yet, its forq.yml
    /// read through the API (funding and triage settings must hold before
    /// anything is cloned). A file that cannot be read or parsed stops the
    /// run: guessing would spend the owner's key where the repository says
    /// not to.
    pub(super) async fn config_before_triage(&self, run: &Run) -> Phase<Config> {
        let (Some(github), None, None, Some((slug, _))) = (
            &self.github,
            &self.config,
            self.known.get(&run.repo),
            crate::publish::issue_on_github(run),
        ) else {
            return Ok(self.config_before_seed(run));
        };
        if std::path::Path::new(&run.repo).exists() {
            return Ok(self.config_before_seed(run));
        }
        match crate::queue::github_config(github, &slug).await {
            Ok(config) => Ok(config.unwrap_or_default().confined()),
            Err(e @ crate::queue::QueueError::RemoteConfig { .. }) => Err(Stop::short(
                State::Failed,
                e.to_string(),
                FailureKind::Repository,
            )),
            Err(e) => Err(Stop::short(
                State::Failed,
                format!("cannot read {slug}'s forq.yml before triage: {e}"),
                FailureKind::Input,
            )),
        }
    }

    /// Answers on GitHub an issue triage declined, once: the verdict and
    /// its reason as a comment, and forq.yml's `triage.label`. Nothing is
    /// said for an issue not on GitHub, without a GitHub client, or with
    /// `triage.answer: false`; a failure is noted on the run, which goes on.
    pub(super) async fn answer_declined(
        &self,
        run: &Run,
        triage: &serde_json::Value,
        config: &Config,
    ) {
        let Some(github) = &self.github else { return };
        let Some((repo, number)) = crate::publish::issue_on_github(run) else {
            return;
        };
        if !config.triage.answer || !github.has_token() {
            return;
        }
        let text = crate::answer::triage_comment(
            triage["reason"].as_str().unwrap_or_default(),
            triage["confidence"].as_f64(),
            triage["verdict"]["suggested_action"].as_str(),
        );
        let labels: Vec<String> = config.triage.label.iter().cloned().collect();
        let said =
            crate::answer::say_once(&self.store, github, &repo, number, "triage", &text, &labels)
                .await;
        let note = match said {
            Ok(crate::answer::Said::Now(url)) => format!("answered on GitHub: {url}"),
            Ok(crate::answer::Said::Before(url)) => format!("answered on GitHub before: {url}"),
            Err(e) => format!("could not answer on GitHub: {e}"),
        };
        self.note(&run.id, State::Triaging, &note);
    }
}
