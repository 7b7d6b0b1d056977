//! The seeding step of provisioning: the run's workspace, and the
//! settings of its repository read from it.

#[allow(clippy::wildcard_imports)] // the pipeline's own types
use super::*;

impl Pipeline {
    /// The run's workspace: seeded once, reused on resume.
    pub(super) async fn seeded(&self, run: &Run) -> Phase<Seeded> {
        if let Some(s) = self.store.checkpointed(&run.id, "seeded").map_err(fail)? {
            let seeded = Seeded::stored(s, &self.workspace(&run.id))
                .map_err(|e| Stop::short(State::Failed, e, FailureKind::Input))?;
            if seeded.workspace.join(".git").exists() {
                return Ok(seeded);
            }
            // Gone: the run began on another machine (a worker resumes it
            // here), or its workspace was removed. Nothing in it is needed:
            // seed it again, at the same commit (a found patch is in the
            // store, and is committed from there).
            return self.seed_fresh(run, Some(&seeded)).await;
        }
        self.seed_fresh(run, None).await
    }

    /// What context file `file` puts in the workspace: the text it was
    /// queued with. A run queued by an older forq names only a path, which
    /// is read on this machine only when the store is this machine's own:
    /// a path in a shared store's row could name any file here.
    fn context_bytes(&self, file: &crate::store::ContextFile) -> Phase<Vec<u8>> {
        if let Some(text) = &file.text {
            return Ok(text.clone().into_bytes());
        }
        let refused = |why: String| {
            Stop::short(
                State::Failed,
                format!("context file {}: {why}", file.source),
                FailureKind::Input,
            )
        };
        if self.store.path().is_none() {
            return Err(refused(
                "a run from a shared store carries its context's text, and this one names only a \
                 path on some machine: queue it again with this forq"
                    .to_owned(),
            ));
        }
        std::fs::read(&file.source).map_err(|e| refused(e.to_string()))
    }

    /// Seeds the run's workspace from its repository; `again` is the seed
    /// a run resumed on this machine had elsewhere (the new one must be at
    /// its commit).
    async fn seed_fresh(&self, run: &Run, again: Option<&Seeded>) -> Phase<Seeded> {
        let trace = again.is_none()
            && self
                .store
                .events(&run.id, 0)
                .map_err(fail)?
                .iter()
                .any(|e| e.kind == "node" || e.kind == "agent");
        if trace {
            return Err(fail(seed::SeedError::Started(run.id.to_string())));
        }
        self.repo_allowed(run)?;
        let workspace = self.workspace(&run.id);
        if workspace.exists() {
            // A seed interrupted before its checkpoint: nothing has run in it.
            let _ = std::fs::remove_dir_all(&workspace);
        }
        let config = self.config_before_seed(run);
        let options = SeedOptions {
            max_bytes: config.sandbox.max_seed_bytes(),
            timeout: Duration::from_secs(config.sandbox.seed_timeout_s),
        };
        let seeded = match &run.issue.pull {
            Some(pull) => seed::seed_pull(&run.repo, &workspace, &options, pull).await,
            None => seed::seed(&run.repo, &workspace, &options).await,
        }
        .map_err(|e| match e {
            e @ seed::SeedError::PullMoved { .. } => {
                Stop::short(State::Failed, e.to_string(), FailureKind::Input)
            }
            e => fail(e),
        })?;
        if let Some(before) = again {
            let same = match (&before.tree, &seeded.tree) {
                (Some(a), Some(b)) => a == b,
                _ => before.head == seeded.head,
            };
            if !same {
                return Err(Stop::short(
                    State::Failed,
                    format!(
                        "the run was resumed on another machine, where its repository is at {} \
                         and no longer as it was where the run began ({}): start a new run",
                        short(&seeded.head),
                        short(&before.head)
                    ),
                    FailureKind::Repository,
                ));
            }
            self.note(
                &run.id,
                State::Provisioning,
                &format!(
                    "seeded again on this machine at {} (the workspace was on another)",
                    short(&seeded.head)
                ),
            );
        }
        if seeded.removed_forq {
            let text = "the repository tracks a .forq of its own: removed from the workspace (.forq is \
                        forq's index and records, and links there would reach outside the workspace)";
            tracing::warn!(run = %run.id, "{text}");
            let _ = self
                .store
                .event(&run.id, "warning", json!({"key": ".forq", "text": text}));
        }
        for file in &run.context {
            let bytes = self.context_bytes(file)?;
            seed::add_context(&workspace, &file.dest, &bytes).map_err(fail)?;
        }
        self.store
            .checkpoint(&run.id, "seeded", &json!(seeded))
            .map_err(fail)?;
        self.note(
            &run.id,
            State::Provisioning,
            &format!(
                "seeded by {} at {}",
                seeded.how,
                &seeded.head[..seeded.head.len().min(12)]
            ),
        );
        Ok(seeded)
    }

    /// The settings before the workspace exists: the pipeline's own, else
    /// those known for the repository, else its forq.yml when it is a
    /// directory, else the defaults. Only triage and seeding read them, and
    /// nothing that loosens isolation is kept (`config_of` warns of it, once
    /// per run, when the run's sandboxes are made).
    pub(super) fn config_before_seed(&self, run: &Run) -> Config {
        match (&self.config, self.known.get(&run.repo)) {
            (Some(c), _) => c.clone(),
            (None, Some(c)) => c.clone().confined(),
            // A repository this machine may not read is read for nothing.
            (None, None) if self.repo_allowed(run).is_err() => Config::default(),
            (None, None) => Config::load(Path::new(&run.repo))
                .map(|(c, _)| c)
                .unwrap_or_default()
                .confined(),
        }
    }

    /// The settings: the pipeline's own, else the workspace's `forq.yml`;
    /// for a pull request, its base branch's ([`Pipeline::pull_config`]).
    pub(super) fn config_of(&self, run: &Run, seeded: &Seeded) -> Phase<Config> {
        let mut config = match &self.config {
            Some(c) => c.clone(),
            None if run.issue.pull.is_some() => self.pull_config(run, seeded)?,
            None => Config::load(&seeded.workspace)
                .map(|(c, _)| self.repository_config(&run.id, c))
                .map_err(|e| Stop::short(State::Failed, e.to_string(), FailureKind::Repository))?,
        };
        // What whoever queued the run asked for (`request_fix`) wins.
        if let Some(asked) = self.store.checkpointed(&run.id, REQUESTED).map_err(fail)? {
            let fix = &mut config.actions.fix;
            if let Ok(strategy) = serde_json::from_value(asked["strategy"].clone()) {
                fix.strategy = strategy;
            }
            if let Ok(brancher) = serde_json::from_value(asked["brancher"].clone()) {
                fix.brancher = Some(brancher);
            }
        }
        Ok(config)
    }

    /// A pull request's settings: its base branch's `forq.yml` (who pays,
    /// which model, review points, branch names, caps — the maintainers'
    /// word), with only the test command and targets taken from the head's
    /// (a pull request may change how its tests run), held to the base's
    /// caps. The head's file is the author's, who may be a stranger.
    fn pull_config(&self, run: &Run, seeded: &Seeded) -> Phase<Config> {
        let base = match &seeded.base_config {
            Some(text) => Config::parse(text, "forq.yml of the base branch")
                .map_err(|e| Stop::short(State::Failed, e.to_string(), FailureKind::Repository))?,
            None => Config::default(),
        };
        let mut config = self.repository_config(&run.id, base);
        match Config::load(&seeded.workspace) {
            Ok((head, Some(_))) => {
                let head = head.confined();
                if head.test.command.is_some() {
                    config.test.command = head.test.command;
                }
                if !head.test.targets.is_empty() {
                    config.test.targets = head.test.targets;
                }
                let _ = self.store.event(
                    &run.id,
                    "note",
                    json!({"text": "a pull request's run follows its base branch's forq.yml; from the head's, only test.command and test.targets"}),
                );
            }
            Ok((_, None)) => {}
            Err(e) => {
                let _ = self.store.event(
                    &run.id,
                    "warning",
                    json!({"key": "forq.yml", "text": format!("the pull request's forq.yml is not read: {e}")}),
                );
            }
        }
        Ok(config)
    }

    /// A repository's own settings, without what would loosen isolation:
    /// that is the operator's to choose. Each setting left out is a warning
    /// in the run's events.
    pub(super) fn repository_config(&self, run: &str, config: Config) -> Config {
        for (key, what) in config.loosening() {
            tracing::warn!(run, key, "ignored in the repository's forq.yml: {what}");
            let _ = self.store.event(
                run,
                "warning",
                json!({"key": key, "text": format!("{key} in the repository's forq.yml is ignored: {what}")}),
            );
        }
        config.confined()
    }
}

/// A commit, shortened for a message.
fn short(head: &str) -> &str {
    &head[..head.len().min(12)]
}
