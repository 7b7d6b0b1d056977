//! Golden environments of the gate's stacks: a repository's warm sandbox
//! (install steps done, tests run once, so caches and builds are primed)
//! kept by [`forq_sandbox::Goldens`], so that [`crate::provision_warm`]
//! forks it instead of installing again.
//!
//! A golden's **name** is one per repository identity, backend and stack;
//! its **key** adds the tree (HEAD's tree and any uncommitted changes, read
//! by git inside a sandbox: two commits of the same files share it), a hash of what decides the install (the stack's
//! steps, the manifests and lockfiles it reads, the image and environment)
//! and forq's version. A run forks the golden whose key is its own. When
//! the tree moved on (the tracked branch has a new commit), a build
//! **syncs**: it forks the previous generation over the new tree, runs the
//! install steps again only when the install hash changed (or the stack's
//! test command does not rebuild what changed), proves the tests still run
//! and saves the next generation. A golden whose tests stop running is
//! marked broken, and runs say so.

use std::path::Path;
use std::time::Instant;

use forq_sandbox::{Backend, GoldenStatus, Goldens, Sandbox};
use serde::{Deserialize, Serialize};
use sha1::Digest;

use crate::detect::{Stack, StackKind};
use crate::gate::{GateError, GateEvent, GateOptions, StackRun};
use crate::verdict::Verdict;

/// How the gate's sandboxes use goldens.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct GoldenOptions {
    /// Where goldens are kept (for native, under the backend's state
    /// directory: [`Goldens::in_state_dir`]).
    pub goldens: Goldens,
    /// The repository's identity: its URL or source path, the same for
    /// every run on it (not a run's own workspace).
    pub identity: String,
    /// Build (or sync) the golden when none matches; else only a matching
    /// one is used.
    pub build: bool,
    /// Build from scratch even when a golden matches or is broken (what
    /// mends a broken one).
    pub rebuild: bool,
}

impl GoldenOptions {
    /// Goldens in `goldens` for the repository `identity`; used when one
    /// matches, built when `build`.
    pub fn new(goldens: Goldens, identity: impl Into<String>, build: bool) -> Self {
        GoldenOptions {
            goldens,
            identity: identity.into(),
            build,
            rebuild: false,
        }
    }

    /// Builds from scratch, whatever is kept.
    pub fn rebuild(mut self, rebuild: bool) -> Self {
        self.rebuild = rebuild;
        if rebuild {
            self.build = true;
        }
        self
    }
}

/// Which golden a warm sandbox came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct GoldenUse {
    /// The golden's name.
    pub name: String,
    /// Its generation.
    pub generation: u32,
    /// How: `forked` (it matched), `built` (made now from scratch), or
    /// `synced` (made now from the previous generation).
    pub how: String,
}

/// A repository's golden name and key for one stack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct GoldenKey {
    /// The golden's name.
    pub name: String,
    /// What a golden must have been saved with to be forked.
    pub key: String,
    /// The commit (HEAD) the tree is at.
    pub head: String,
    /// The hash of what decides the install.
    pub install_hash: String,
}

fn hex(digest: impl AsRef<[u8]>) -> String {
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// The files whose contents decide a stack's install, relative to the
/// repository root (those present count).
fn install_files(kind: StackKind) -> &'static [&'static str] {
    match kind {
        StackKind::Pytest | StackKind::Unittest => &[
            "pyproject.toml",
            "setup.py",
            "setup.cfg",
            "requirements.txt",
            "requirements-dev.txt",
            "requirements-test.txt",
            "dev-requirements.txt",
            "test-requirements.txt",
            "poetry.lock",
            "uv.lock",
            "Pipfile.lock",
        ],
        StackKind::Node => &[
            "package.json",
            "package-lock.json",
            "npm-shrinkwrap.json",
            "yarn.lock",
            "pnpm-lock.yaml",
        ],
        StackKind::Rust => &["Cargo.toml", "Cargo.lock", "rust-toolchain.toml"],
        StackKind::Go => &["go.mod", "go.sum"],
        StackKind::Maven => &["pom.xml"],
        StackKind::Gradle => &["build.gradle", "build.gradle.kts", "settings.gradle"],
        StackKind::Cmake => &["CMakeLists.txt"],
        StackKind::Meson => &["meson.build", "meson_options.txt"],
        StackKind::Autotools => &["configure.ac", "Makefile.am"],
        StackKind::Make | StackKind::Custom => &["Makefile"],
    }
}

/// Whether the stack's test command builds what changed itself (so a sync
/// with the same install hash need not run the install steps again).
fn test_rebuilds(kind: StackKind) -> bool {
    matches!(
        kind,
        StackKind::Rust
            | StackKind::Go
            | StackKind::Cmake
            | StackKind::Meson
            | StackKind::Maven
            | StackKind::Gradle
            | StackKind::Autotools
            | StackKind::Make
            | StackKind::Node
    )
}

/// Builds or syncs the golden of the repository at `source` on `backend`:
/// a git URL is cloned shallow into a temporary directory (removed after),
/// anything else is a directory; the gate proves its tests run (forking the
/// previous generation when one exists) and the warm state is saved as the
/// next generation. What `forq golden sync` does for a URL, and `forq
/// serve` on a push to a repository's default branch.
///
/// # Errors
///
/// [`GateError::Clone`] when the URL cannot be cloned, [`GateError::Golden`] when
/// the backend keeps no goldens, [`GateError::GoldenUnproven`] when the tests
/// do not run, and whatever the gate and provisioning fail with.
pub async fn sync_golden(backend: &dyn Backend, source: &str) -> Result<crate::Record, GateError> {
    let temp;
    let repo = if crate::is_git_url(source) {
        temp = tempfile::Builder::new()
            .prefix("forq-sync-")
            .tempdir()
            .map_err(|e| GateError::Clone {
                url: source.to_owned(),
                source: crate::CloneError::Temporary(e),
            })?;
        let dest = temp.path().join("repo");
        crate::clone_shallow(source, &dest, &crate::CloneOptions::default())
            .await
            .map_err(|e| GateError::Clone {
                url: source.to_owned(),
                source: e,
            })?;
        dest
    } else {
        std::path::PathBuf::from(source)
    };
    let goldens = backend.goldens().map_err(|e| GateError::Golden {
        name: source.to_owned(),
        source: e,
    })?;
    let gate = GateOptions {
        golden: Some(GoldenOptions::new(goldens, source, true)),
        ..GateOptions::default()
    };
    let record = crate::run(backend, &repo, &gate).await?;
    let Some(stack) = record.green_stack() else {
        return Err(GateError::GoldenUnproven {
            name: source.to_owned(),
            reason: format!("{}: {}", record.verdict.name(), record.reason),
        });
    };
    let warm = crate::provision_warm(backend, &repo, &stack, &gate).await?;
    warm.sandbox
        .destroy()
        .await
        .map_err(|e| GateError::Sandbox {
            stack: stack.name().to_owned(),
            source: e,
        })?;
    Ok(record)
}

/// The golden name and key of `repo` for `stack` on `backend`; `None` when
/// the repository is not a git checkout (its tree has no identity).
pub async fn golden_key(
    backend: &dyn Backend,
    repo: &Path,
    stack: &Stack,
    options: &GateOptions,
    identity: &str,
) -> Option<GoldenKey> {
    let (tree, head) = crate::cache::tree_key(backend, repo).await?;
    let mut install = sha1::Sha1::new();
    install.update(stack.name().as_bytes());
    for step in &stack.install {
        install.update(b"\0step\0");
        install.update(step.as_bytes());
    }
    install.update(b"\0test\0");
    install.update(stack.command.as_bytes());
    for file in install_files(stack.kind) {
        // Read, never followed out of the repository by a link.
        let path = repo.join(file);
        let is_file = path.symlink_metadata().is_ok_and(|m| m.is_file());
        if is_file {
            if let Ok(bytes) = std::fs::read(&path) {
                install.update(b"\0file\0");
                install.update(file.as_bytes());
                install.update(&bytes);
            }
        }
    }
    install.update(b"\0image\0");
    install.update(options.image.as_deref().unwrap_or_default().as_bytes());
    let mut env = options.env.clone();
    env.sort();
    for (k, v) in env {
        install.update(format!("\0env\0{k}={v}").as_bytes());
    }
    let install_hash = hex(install.finalize());
    let mut name = sha1::Sha1::new();
    name.update(identity.as_bytes());
    name.update(backend.kind().name().as_bytes());
    name.update(stack.name().as_bytes());
    let slug: String = identity
        .trim_end_matches('/')
        .trim_end_matches(".git")
        .rsplit(['/', ':'])
        .next()
        .unwrap_or("repo")
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
        .take(40)
        .collect();
    let slug = if slug.is_empty() {
        "repo".to_owned()
    } else {
        slug
    };
    // The whole hash: the slug is the repository's to choose, so the hash
    // alone tells two repositories apart (a shortened one could be
    // collided with on purpose).
    let name = format!(
        "{slug}-{}-{}-{}",
        stack.name(),
        backend.kind().name(),
        hex(name.finalize())
    );
    let mut key = sha1::Sha1::new();
    key.update(identity.as_bytes());
    key.update(b"\0");
    key.update(tree.as_bytes());
    key.update(b"\0");
    key.update(install_hash.as_bytes());
    key.update(b"\0");
    key.update(backend.kind().name().as_bytes());
    Some(GoldenKey {
        name,
        key: hex(key.finalize()),
        head,
        install_hash,
    })
}

/// A fork of `name`'s current generation over `spec.base`, and that
/// generation.
async fn fork_current(
    backend: &dyn Backend,
    golden: &GoldenOptions,
    name: &str,
    spec: &forq_sandbox::SandboxSpec,
) -> Result<(Box<dyn Sandbox>, u32), GateError> {
    let err = |source| GateError::Golden {
        name: name.to_owned(),
        source,
    };
    let opened = golden
        .goldens
        .open(backend, name, spec)
        .await
        .map_err(err)?;
    let sandbox = opened.snapshot.fork().await.map_err(err)?;
    Ok((sandbox, opened.info.generation))
}

/// What a golden's manifest says of how it was made (`meta`).
pub(crate) fn meta(
    key: &GoldenKey,
    stack: &Stack,
    identity: &str,
    how: &str,
    extra: serde_json::Value,
) -> serde_json::Value {
    let mut meta = serde_json::json!({
        "head": key.head,
        "install_hash": key.install_hash,
        "stack": stack.name(),
        "install": stack.install,
        "command": stack.command,
        "how": how,
        "identity": identity,
    });
    if let (Some(meta), serde_json::Value::Object(extra)) = (meta.as_object_mut(), extra) {
        meta.extend(extra);
    }
    meta
}

/// A warm sandbox from the golden that matches `key`, if there is one
/// (an error when that golden is broken).
async fn fork_matching(
    backend: &dyn Backend,
    repo: &Path,
    stack: &Stack,
    options: &GateOptions,
    golden: &GoldenOptions,
    key: &GoldenKey,
) -> Result<Option<(Box<dyn Sandbox>, GoldenUse)>, GateError> {
    let err = |source| GateError::Golden {
        name: key.name.clone(),
        source,
    };
    let Some(info) = golden.goldens.get(&key.name).map_err(err)? else {
        return Ok(None);
    };
    if golden.rebuild {
        return Ok(None);
    }
    // A broken golden stops every run on the repository until it is
    // rebuilt or removed: never a silent install instead.
    if let GoldenStatus::Broken { reason } = &info.status {
        return Err(GateError::GoldenBroken {
            name: key.name.clone(),
            reason: reason.clone(),
        });
    }
    if info.key != key.key || info.saved.backend != backend.kind() {
        return Ok(None);
    }
    let spec = crate::runner::spec(backend, repo, stack, options);
    let (sandbox, generation) = fork_current(backend, golden, &key.name, &spec).await?;
    let used = GoldenUse {
        name: key.name.clone(),
        generation,
        how: "forked".to_owned(),
    };
    options.tell(|| GateEvent::GoldenForked {
        golden: used.clone(),
    });
    Ok(Some((sandbox, used)))
}

/// A warm sandbox for `stack` from the repository's golden: the matching
/// one forked; else, when `golden.build`, one built (or synced from the
/// previous generation) and saved first, under the golden's lock so that
/// two runs at once build it once. `None`: no golden applies (not a git
/// checkout, or none matches and building was not asked for).
pub(crate) async fn warm_from_golden(
    backend: &dyn Backend,
    repo: &Path,
    stack: &Stack,
    options: &GateOptions,
    golden: &GoldenOptions,
) -> Result<Option<(Box<dyn Sandbox>, GoldenUse)>, GateError> {
    let Some(key) = golden_key(backend, repo, stack, options, &golden.identity).await else {
        options.tell(|| GateEvent::GoldenSkipped {
            reason: "the repository is not a git checkout, so its tree has no identity".to_owned(),
        });
        return Ok(None);
    };
    if let Some(found) = fork_matching(backend, repo, stack, options, golden, &key).await? {
        return Ok(Some(found));
    }
    if !golden.build {
        return Ok(None);
    }
    let _lock = golden
        .goldens
        .lock(&key.name)
        .await
        .map_err(golden_error(&key))?;
    // Another run may have built it while this one waited.
    if let Some(found) = fork_matching(backend, repo, stack, options, golden, &key).await? {
        return Ok(Some(found));
    }
    let started = Instant::now();
    let previous = previous_generation(backend, stack, golden, &key)?;
    let build = Build {
        backend,
        stack,
        options,
        golden,
        key: &key,
    };
    let (sandbox, install, how) = build.start(repo, previous.as_ref()).await?;
    let run = crate::gate::run_stack_in(
        &*sandbox,
        !backend.per_exec_network(),
        stack,
        options,
        install,
        None,
    )
    .await;
    let run = match run {
        Ok(run) if run.verdict == Verdict::Bootstrapped => run,
        Ok(run) => {
            let _ = sandbox.destroy().await;
            return Err(build.unproven(&run, previous.is_some()));
        }
        Err(e) => {
            let _ = sandbox.destroy().await;
            return Err(e);
        }
    };
    build.save(sandbox, &run, how, started).await.map(Some)
}

/// A golden's errors, named.
fn golden_error(key: &GoldenKey) -> impl Fn(forq_sandbox::Error) -> GateError + '_ {
    |source| GateError::Golden {
        name: key.name.clone(),
        source,
    }
}

/// The golden's previous generation, when a sync may fork it: only when
/// it is this repository's, for this stack (the manifest says whose it
/// is), ready, on this backend, and no rebuild was asked for.
fn previous_generation(
    backend: &dyn Backend,
    stack: &Stack,
    golden: &GoldenOptions,
    key: &GoldenKey,
) -> Result<Option<forq_sandbox::GoldenInfo>, GateError> {
    let previous = golden.goldens.get(&key.name).map_err(golden_error(key))?;
    Ok(previous.filter(|p| {
        let same_owner = p.meta["identity"] == golden.identity.as_str()
            && p.meta["stack"] == stack.name();
        if !same_owner {
            tracing::warn!(
                name = %key.name,
                "the golden's previous generation belongs to another repository or stack: built afresh"
            );
        }
        same_owner
            && !golden.rebuild
            && p.status == GoldenStatus::Ready
            && p.saved.backend == backend.kind()
    }))
}

/// One golden being built.
struct Build<'a> {
    backend: &'a dyn Backend,
    stack: &'a Stack,
    options: &'a GateOptions,
    golden: &'a GoldenOptions,
    key: &'a GoldenKey,
}

impl Build<'_> {
    /// The sandbox the golden is built in: a fork of the previous
    /// generation (a sync; its install steps run again only when what
    /// decides them changed, or the stack's tests rebuild anyway), or a
    /// fresh one. Whether to install, and how it was made.
    async fn start(
        &self,
        repo: &Path,
        previous: Option<&forq_sandbox::GoldenInfo>,
    ) -> Result<(Box<dyn Sandbox>, bool, &'static str), GateError> {
        let key = self.key;
        let spec = crate::runner::spec(self.backend, repo, self.stack, self.options);
        self.options.tell(|| GateEvent::GoldenBuilding {
            name: key.name.clone(),
            from_generation: previous.map(|p| p.generation),
        });
        if let Some(previous) = previous {
            let same_install = previous.meta["install_hash"] == key.install_hash.as_str();
            let (sandbox, _) = fork_current(self.backend, self.golden, &key.name, &spec).await?;
            return Ok((
                sandbox,
                !(same_install && test_rebuilds(self.stack.kind)),
                "synced",
            ));
        }
        let sandbox = self
            .backend
            .create(&spec)
            .await
            .map_err(|source| GateError::Sandbox {
                stack: self.stack.name().to_owned(),
                source,
            })?;
        Ok((sandbox, true, "built"))
    }

    /// The tests did not run green: a new golden is unproven; a synced
    /// one is marked broken, so that runs hear the tests stopped running
    /// on the new tree.
    fn unproven(&self, run: &StackRun, synced: bool) -> GateError {
        let name = self.key.name.clone();
        let reason = format!("{}: {}", self.stack.name(), run.reason);
        if !synced {
            return GateError::GoldenUnproven { name, reason };
        }
        let broken = GoldenStatus::Broken {
            reason: reason.clone(),
        };
        match self.golden.goldens.set_status(&name, broken) {
            Ok(_) => GateError::GoldenBroken { name, reason },
            Err(e) => golden_error(self.key)(e),
        }
    }

    /// Saves the green sandbox as the golden's next generation (older
    /// ones pruned) and tells it.
    async fn save(
        &self,
        sandbox: Box<dyn Sandbox>,
        run: &StackRun,
        how: &str,
        started: Instant,
    ) -> Result<(Box<dyn Sandbox>, GoldenUse), GateError> {
        let key = self.key;
        let meta = meta(
            key,
            self.stack,
            &self.golden.identity,
            how,
            serde_json::json!({
                "tests_executed": run.evidence.as_ref().map_or(0, |e| e.executed()),
                "build_ms": started.elapsed().as_millis() as u64,
            }),
        );
        let saved = self
            .golden
            .goldens
            .save(&key.name, &key.key, meta, &*sandbox)
            .await;
        let saved = match saved {
            Ok(saved) => saved,
            Err(e) => {
                let _ = sandbox.destroy().await;
                return Err(golden_error(key)(e));
            }
        };
        let _ = self.golden.goldens.prune(self.backend, &key.name).await;
        let used = GoldenUse {
            name: key.name.clone(),
            generation: saved.generation,
            how: how.to_owned(),
        };
        self.options.tell(|| GateEvent::GoldenSaved {
            golden: used.clone(),
            bytes: saved.saved.bytes,
            duration_ms: started.elapsed().as_millis() as u64,
        });
        Ok((sandbox, used))
    }
}
