//! How the gate runs: recipes instead of detection, limits, goldens, the
//! fallbacks, the image and environment, observers.

#[allow(clippy::wildcard_imports)] // the gate's own types and imports
use super::*;

/// How the gate runs.
#[derive(Clone)]
#[non_exhaustive]
pub struct GateOptions {
    /// Cap on each install step (default 10 minutes).
    pub install_timeout: Duration,
    /// Cap on the test command (default 15 minutes).
    pub test_timeout: Duration,
    /// Each test's budget: a test silent this long hangs and is killed.
    /// `None`: the stack's default ([`crate::default_idle`], and for
    /// node's own runner its `--test-timeout`); zero: none.
    pub test_idle: Option<Duration>,
    /// Network for the test run (default none: the registries are reached
    /// by the install steps only).
    pub test_network: Network,
    /// Network for the install steps: by default forq's egress proxy, which
    /// reaches the stack's package registries and [`GateOptions::egress_allow`]
    /// only; `None` for projects whose dependencies are vendored; `Host`
    /// only by the operator's choice.
    pub install_network: Network,
    /// Hosts install steps may reach besides the stack's registries
    /// (`FORQ_EGRESS_ALLOW`, comma-separated, by default): a mirror, a
    /// private index.
    pub egress_allow: Vec<String>,
    /// Skip the gate: the verdict is `skipped` and nothing runs.
    pub skip: bool,
    /// Run even when the recipe cache has this commit's verdict.
    pub no_cache: bool,
    /// A SQLite database to record the run in (table `bootstrap_runs`),
    /// besides `.forq/bootstrap/run.json`.
    pub store: Option<PathBuf>,
    /// Told of every step.
    pub observers: Observers<GateEvent>,
    /// Asked for recipes when the detected stacks fail.
    pub fallback: Option<Arc<dyn Fallback>>,
    /// The docker backend's image (default: forq's own).
    pub image: Option<String>,
    /// Recipes that replace detection (a project's `forq.yml` golden
    /// commands): tried in order, judged like detected stacks.
    pub recipes: Vec<Stack>,
    /// Resource caps on every sandbox the gate and [`crate::provision`] make;
    /// default [`Limits::standard`].
    pub limits: Limits,
    /// Extra environment of those sandboxes (a project's `forq.yml`).
    pub env: Vec<(String, String)>,
    /// The repository's golden environments: [`crate::provision`] forks
    /// the matching one (and builds it first when asked). Default none.
    pub golden: Option<crate::GoldenOptions>,
    /// The agentic fallback: asked, one step at a time, to set the
    /// environment up when no stack (detected, or from [`Fallback`]) is
    /// green. Default none (`--offline`, or no model).
    pub configurator: Option<Arc<dyn crate::Configurator>>,
    /// Its caps.
    pub configure_limits: crate::ConfigureLimits,
}

impl std::fmt::Debug for GateOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GateOptions")
            .field("install_timeout", &self.install_timeout)
            .field("test_timeout", &self.test_timeout)
            .field("test_idle", &self.test_idle)
            .field("test_network", &self.test_network)
            .field("install_network", &self.install_network)
            .field("egress_allow", &self.egress_allow)
            .field("skip", &self.skip)
            .field("no_cache", &self.no_cache)
            .field("store", &self.store)
            .field("observers", &self.observers.len())
            .field("fallback", &self.fallback.is_some())
            .field("recipes", &self.recipes)
            .field("limits", &self.limits)
            .field("env", &self.env.iter().map(|(k, _)| k).collect::<Vec<_>>())
            .field("golden", &self.golden)
            .field("configurator", &self.configurator.is_some())
            .field("configure_limits", &self.configure_limits)
            .finish()
    }
}

impl Default for GateOptions {
    fn default() -> Self {
        GateOptions {
            install_timeout: Duration::from_secs(600),
            test_timeout: Duration::from_secs(900),
            test_idle: None,
            test_network: Network::None,
            install_network: Network::Proxy,
            egress_allow: forq_sandbox::EgressAllow::from_env().entries().to_vec(),
            skip: false,
            no_cache: false,
            store: None,
            observers: Observers::new(),
            fallback: None,
            image: None,
            recipes: Vec::new(),
            limits: Limits::standard(),
            env: Vec::new(),
            golden: None,
            configurator: None,
            configure_limits: crate::ConfigureLimits::default(),
        }
    }
}

impl GateOptions {
    /// Caps both phases at `timeout`.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.install_timeout = timeout;
        self.test_timeout = timeout;
        self
    }
    /// Each test's budget (see [`GateOptions::test_idle`]).
    pub fn test_idle(mut self, idle: Option<Duration>) -> Self {
        self.test_idle = idle;
        self
    }
    /// The budgets of `stack`'s test runs: [`GateOptions::test_timeout`]
    /// for the whole run, [`GateOptions::test_idle`] (or the stack's
    /// default) for each test.
    pub fn test_limits(&self, stack: &Stack) -> crate::TestLimits {
        // The stack's default is TestLimits::new's: it knows node's own
        // runner, whose budget goes through `--test-timeout` (the kind
        // alone does not say whether `npm test` is `node --test`).
        let limits = crate::TestLimits::new(stack, self.test_timeout);
        match self.test_idle {
            Some(idle) => limits.idle((!idle.is_zero()).then_some(idle)),
            None => limits,
        }
    }
    /// Skips the gate.
    pub fn skip(mut self, skip: bool) -> Self {
        self.skip = skip;
        self
    }
    /// Ignores the recipe cache (and still refreshes it on success).
    pub fn no_cache(mut self, no_cache: bool) -> Self {
        self.no_cache = no_cache;
        self
    }
    /// Also records the run in this SQLite database.
    pub fn store(mut self, path: impl Into<PathBuf>) -> Self {
        self.store = Some(path.into());
        self
    }
    /// Reports every step to `observer` too.
    pub fn observer(mut self, observer: Arc<dyn Observer<GateEvent>>) -> Self {
        self.observers.push(observer);
        self
    }
    /// Runs docker sandboxes in `image` instead of forq's own.
    pub fn image(mut self, image: Option<String>) -> Self {
        self.image = image;
        self
    }

    /// Asks `fallback` for recipes when no detected stack is green.
    pub fn fallback(mut self, fallback: Arc<dyn Fallback>) -> Self {
        self.fallback = Some(fallback);
        self
    }
    /// Runs `recipes` instead of detecting stacks.
    pub fn recipes(mut self, recipes: Vec<Stack>) -> Self {
        self.recipes = recipes;
        self
    }
    /// Caps every sandbox's resources.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }
    /// Sets `key` in every sandbox's environment.
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }
    /// Reports the event `make` builds, built only when somebody listens.
    pub(crate) fn tell(&self, make: impl FnOnce() -> GateEvent) {
        if !self.observers.is_empty() {
            self.observers.emit(&make());
        }
    }
}
