//! After a green patch: the contract check, the ripple through callers,
//! their adaptation, and the review pauses around them.

#[allow(clippy::wildcard_imports)] // the pipeline's own types
use super::*;

impl Pipeline {
    /// The contract check of the run's committed patch (see
    /// [`contract::check`]), its classes and ripple written into the run's
    /// events; with a model, body changes are classified by it.
    pub(super) async fn contract(
        &self,
        run: &Run,
        seeded: &Seeded,
        config: &Config,
    ) -> Phase<contract::Report> {
        let model = self.model_for(run, config)?;
        let check = model
            .as_ref()
            .map(|m| forq_agent::contract::ContractCheck::new(m.provider.clone(), m.name.clone()));
        let scratch = self.run_dir(&run.id).join("contract");
        let classifier = check.as_ref().map(|c| c as &dyn contract::Classifier);
        let report = contract::check(
            &seeded.workspace,
            &seeded.head,
            &scratch,
            config.actions.fix.ripple_depth,
            classifier,
        )
        .await;
        let _ = std::fs::remove_dir_all(&scratch);
        let report = match report {
            Ok(r) => r,
            // The patch is green; a graph that cannot read the code is said,
            // not a failure of the run.
            Err(e) => {
                self.note(
                    &run.id,
                    State::Testing,
                    &format!("contract check skipped: {e}"),
                );
                return Ok(contract::Report::default());
            }
        };
        for c in &report.changed {
            let _ = self.store.event(&run.id, "contract", json!(c));
        }
        if !report.changed.is_empty() {
            let _ = self.store.event(
                &run.id,
                "ripple",
                json!({"findings": report.findings, "unprocessed": report.unprocessed,
                    "depth": report.depth, "truncated": report.truncated}),
            );
        }
        self.note(
            &run.id,
            State::Testing,
            &format!("contract: {}", report.summary()),
        );
        Ok(report)
    }

    /// The ripple with a model: the agent adapts the callers of the
    /// incompatible changes in a sandbox over the committed fix; when the
    /// whole oracle stays green and no test file changed, the adaptation
    /// is committed on the branch and the callers it touched move from
    /// `findings` to `adapted`. Otherwise the findings stay, and why is
    /// in the run's events.
    pub(super) async fn adapt(
        &self,
        run: &Run,
        seeded: &Seeded,
        config: &Config,
        mut report: contract::Report,
        branch: &str,
        model: &Model,
    ) -> Phase<contract::Report> {
        let (sandbox, oracle) = self.fresh_sandbox(run, seeded, config).await?;
        let workspace = seeded.workspace.clone();
        let index = tokio::task::spawn_blocking(move || Index::open_current(&workspace))
            .await
            .map_err(fail)?
            .map_err(fail)?;
        // The same coding agent the fix's `agent` brancher gets.
        let log = Arc::new(AgentLog {
            pipeline: self.clone(),
            run: run.id.to_string(),
        });
        let agent = plan(run, seeded, config, Some(model), Some(log))?
            .coding_agent(Some(oracle.stack.clone()), Some(index))
            .map_err(fail)?;
        let task = Task::new(contract::adapt_task(&report));
        self.note(
            &run.id,
            State::Testing,
            &format!(
                "ripple: asking the agent to adapt {} caller(s)",
                report.findings.len()
            ),
        );
        let outcome = agent.run(&*sandbox, &task).await;
        let result = adapted_diff(&*sandbox, &oracle).await;
        let _ = sandbox.destroy().await;
        let _ = self
            .store
            .record(&run.id, Some(run.cost_usd + outcome.cost_usd), None, None);
        let diff = match result {
            Ok(d) => d,
            Err(why) => {
                self.note(
                    &run.id,
                    State::Testing,
                    &format!("ripple: callers not adapted: {why}"),
                );
                let _ = self.store.event(
                    &run.id,
                    "ripple_adapt",
                    json!({"adapted": false, "why": why}),
                );
                return Ok(report);
            }
        };
        let commit = self
            .commit_adaptation(run, seeded, &report, branch, &diff.patch)
            .await?;
        report.take_adapted(&diff.patch);
        let _ = self.store.event(
            &run.id,
            "ripple_adapt",
            json!({"adapted": true, "commit": commit, "callers": report.adapted, "left": report.findings}),
        );
        self.note(
            &run.id,
            State::Testing,
            &format!(
                "ripple: {} caller(s) adapted, committed {}",
                report.adapted.len(),
                &commit[..commit.len().min(12)]
            ),
        );
        Ok(report)
    }

    /// Commits the adaptation's `patch` on `branch` (kept as
    /// `ripple.patch` in the run's directory); the commit.
    async fn commit_adaptation(
        &self,
        run: &Run,
        seeded: &Seeded,
        report: &contract::Report,
        branch: &str,
        patch: &str,
    ) -> Phase<String> {
        let file = self.run_dir(&run.id).join("ripple.patch");
        std::fs::write(&file, patch).map_err(fail)?;
        let base = git::head(&seeded.workspace).await.map_err(fail)?;
        let message = format!(
            "Adapt the callers of #{}'s incompatible change\n\n{}\n\nforq run {} (ripple).",
            run.issue.id,
            report.summary(),
            run.id
        );
        git::commit_patch(&seeded.workspace, &base, branch, &file, &message)
            .await
            .map_err(fail)
    }

    /// Pauses the run for review at `point` when forq.yml asks and it was
    /// not approved yet: `Err(needs_review)` with `what` to look at.
    pub(super) fn pause_for(
        &self,
        run: &Run,
        config: &Config,
        point: ReviewPoint,
        what: impl FnOnce() -> String,
    ) -> Phase<()> {
        if !config.review.contains(&point)
            || self
                .store
                .checkpointed(&run.id, &review::approved(point))
                .map_err(fail)?
                .is_some()
        {
            return Ok(());
        }
        let what = what();
        self.store
            .checkpoint(
                &run.id,
                review::PAUSED,
                &json!({"point": point.name(), "resume": run.state.name(), "what": what}),
            )
            .map_err(fail)?;
        Err(Stop::end(
            State::NeedsReview,
            format!("waiting for review before the {}: {what}", point.name()),
        ))
    }
}

/// What the agent's adaptation changed, when it may be committed: it
/// changed something, no test file, and the whole oracle is green on it;
/// else why not.
async fn adapted_diff(
    sandbox: &dyn forq_sandbox::Sandbox,
    oracle: &forq_search::oracle::Oracle,
) -> Result<forq_sandbox::Diff, String> {
    let diff = sandbox.diff().await.map_err(|e| e.to_string())?;
    if diff.files.is_empty() {
        return Err("the agent changed nothing".to_owned());
    }
    if let Some(t) = diff
        .files
        .iter()
        .find(|f| oracle.stack.is_test_file(&f.path))
    {
        return Err(format!(
            "the agent changed the test file {}; a ripple adapts callers, never tests",
            t.path
        ));
    }
    let judged = oracle.judge(sandbox).await.map_err(|e| e.to_string())?;
    if !judged.green() {
        return Err(format!(
            "the adapted code is not green: {}/{} target tests pass; broken: {}",
            judged.target_passed,
            judged.target_total,
            judged.broken.join(", ")
        ));
    }
    Ok(diff)
}
