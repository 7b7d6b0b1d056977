//! The testing phase: the green patch committed on the run's branch.

#[allow(clippy::wildcard_imports)] // the pipeline's own types
use super::*;

impl Pipeline {
    /// Commits the patch on `branch`, then judges the commit on a fresh
    /// sandbox with the oracle the run was given.
    pub(super) async fn test(
        &self,
        run: &Run,
        seeded: &Seeded,
        config: &Config,
        implemented: &Implemented,
        branch: &str,
    ) -> Phase<serde_json::Value> {
        if implemented.patch.is_none() {
            return Err(Stop::end(State::Failed, "a solved run has no patch file"));
        }
        // This machine's copy of the patch (the checkpoint's path names a
        // file on the machine that found it): from the store when the run
        // was resumed here.
        let patch = self.run_dir(&run.id).join("fix.patch");
        if !patch.is_file() {
            let stored = self
                .store
                .artifact(&run.id, "fix.patch")
                .map_err(fail)?
                .ok_or_else(|| {
                    Stop::end(
                        State::Failed,
                        "the run's patch is neither on this machine nor in the store: start a new run",
                    )
                })?;
            std::fs::create_dir_all(self.run_dir(&run.id)).map_err(fail)?;
            std::fs::write(&patch, stored).map_err(fail)?;
        }
        let message = format!(
            "Fix #{}: {}\n\n{}\n\nforq run {} ({} line{} changed).",
            run.issue.id,
            run.issue.title,
            implemented.hypothesis.clone().unwrap_or_default(),
            run.id,
            implemented.diff_lines,
            if implemented.diff_lines == 1 { "" } else { "s" }
        );
        let commit = git::commit_patch(&seeded.workspace, &seeded.head, branch, &patch, &message)
            .await
            .map_err(fail)?;
        self.note(
            &run.id,
            State::Testing,
            &format!("committed {} on {branch}", &commit[..commit.len().min(12)]),
        );
        let (sandbox, oracle) = self.fresh_sandbox(run, seeded, config).await?;
        let judged = oracle.judge(&*sandbox).await;
        let _ = sandbox.destroy().await;
        let judgement = judged.map_err(fail)?;
        let why = if judgement.green() {
            String::new()
        } else {
            format!(
                "{}/{} target tests pass; broken: {}",
                judgement.target_passed,
                judgement.target_total,
                judgement.broken.join(", ")
            )
        };
        Ok(json!({"green": judgement.green(), "commit": commit, "branch": branch, "why": why}))
    }
}
