//! The one place a fix is wired together, from the settings people choose
//! (`forq fix`'s flags, forq.yml's `actions.fix`): the strategy and its
//! brancher over a prepared root, the search's options, the coding agent
//! (forq's own or an external program), the reproduction test's writer
//! and the gate's agentic fallback. `forq fix` and forq-app's pipeline
//! (so `forq queue`, `forq serve` and `forq eval`) build all of them here.
//!
//! ```
//! use forq_search::plan::{BrancherKind, StrategyKind};
//!
//! let s: StrategyKind = "single".parse().unwrap();
//! assert_eq!(s.default_brancher(), BrancherKind::Agent);
//! assert_eq!(StrategyKind::Speculative.default_brancher(), BrancherKind::Templates);
//! assert_eq!(BrancherKind::Llm.name(), "llm");
//! assert!("tree".parse::<StrategyKind>().unwrap_err().contains("speculative, single"));
//! ```

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::brancher::{Brancher, Mutate, Patches};
use crate::fix::{FixStrategy, Prepared, Single, Speculative};
use crate::search::{
    Budget, Order, SearchOptions, DEFAULT_MAX_DEPTH, DEFAULT_MAX_NODES, DEFAULT_PLAUSIBLE,
};

/// The search's limits as people set them: forq.yml's
/// `actions.fix.budget` and `forq fix`'s `--max-nodes`, `--max-depth`,
/// `--max-time`, `--jobs` (one definition, so the two cannot drift).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SearchBudget {
    /// Most candidates evaluated.
    pub max_nodes: usize,
    /// Most edits stacked.
    pub max_depth: usize,
    /// Most wall-clock seconds of search.
    pub max_time_s: Option<u64>,
    /// Evaluations at once (default: the cores).
    pub jobs: Option<usize>,
}

impl Default for SearchBudget {
    fn default() -> Self {
        SearchBudget {
            max_nodes: DEFAULT_MAX_NODES,
            max_depth: DEFAULT_MAX_DEPTH,
            max_time_s: None,
            jobs: None,
        }
    }
}

impl SearchBudget {
    /// The search's [`Budget`] for a strategy whose brancher is named
    /// `brancher`: `branching` candidates per node, else the brancher's
    /// usual number.
    pub fn budget(&self, brancher: &str, branching: Option<usize>) -> Budget {
        let mut budget = Budget::default()
            .max_nodes(self.max_nodes)
            .max_depth(self.max_depth);
        if let Some(jobs) = self.jobs {
            budget = budget.jobs(jobs);
        }
        budget = match branching {
            Some(k) => budget.branching(k),
            None => budget.branching_for(brancher),
        };
        if let Some(secs) = self.max_time_s {
            budget = budget.wall_clock(Duration::from_secs(secs));
        }
        budget
    }
}

/// How a fix is looked for.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::EnumIter,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum StrategyKind {
    /// The tree search over copy-on-write forks.
    #[default]
    Speculative,
    /// One pass (of the brancher: an agent's, by default), then the oracle.
    Single,
}

/// Who proposes candidates.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::EnumIter,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum BrancherKind {
    /// Mechanical mutations at the suspects (no model).
    Mutate,
    /// The mutations and the repair templates (no model): off-by-one
    /// bounds, reduced conditions, swapped statements.
    Templates,
    /// Candidates given as files (unified diffs, search/replace blocks).
    Patches,
    /// A model's hypotheses.
    Llm,
    /// A coding agent's pass.
    Agent,
}

impl StrategyKind {
    /// Its name.
    pub fn name(self) -> &'static str {
        self.into()
    }
    /// Every name.
    pub fn names() -> impl Iterator<Item = &'static str> {
        <StrategyKind as strum::IntoEnumIterator>::iter().map(StrategyKind::name)
    }
    /// The brancher used when none is named: the agent for one pass,
    /// mutations (no model) for the search.
    pub fn default_brancher(self) -> BrancherKind {
        match self {
            StrategyKind::Single => BrancherKind::Agent,
            StrategyKind::Speculative => BrancherKind::Templates,
        }
    }
}

impl BrancherKind {
    /// Its name.
    pub fn name(self) -> &'static str {
        self.into()
    }
    /// Every name.
    pub fn names() -> impl Iterator<Item = &'static str> {
        <BrancherKind as strum::IntoEnumIterator>::iter().map(BrancherKind::name)
    }
    /// Whether it calls a model.
    pub fn needs_model(self) -> bool {
        matches!(self, BrancherKind::Llm | BrancherKind::Agent)
    }
}

impl std::str::FromStr for StrategyKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        <StrategyKind as strum::IntoEnumIterator>::iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown strategy {s:?}: expected {}",
                    StrategyKind::names().collect::<Vec<_>>().join(", ")
                )
            })
    }
}

impl std::str::FromStr for BrancherKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        <BrancherKind as strum::IntoEnumIterator>::iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown brancher {s:?}: expected {}",
                    BrancherKind::names().collect::<Vec<_>>().join(", ")
                )
            })
    }
}

impl std::fmt::Display for StrategyKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::fmt::Display for BrancherKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a plan could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// The brancher calls a model and none was given.
    #[error("the {brancher} brancher needs a model")]
    NeedsModel {
        /// The brancher.
        brancher: BrancherKind,
    },
    /// The brancher reads the code graph and none was given.
    #[error("the {brancher} brancher needs the repository's code graph")]
    NeedsIndex {
        /// The brancher.
        brancher: BrancherKind,
    },
    /// `patches` without candidates.
    #[error("the patches brancher has no candidates: give it patch files")]
    NoPatches,
    /// The external coding-agent program cannot run (its key or its
    /// endpoint is not set).
    #[error("the coding-agent program cannot run: {why}")]
    Program {
        /// Why, as the program's environment says.
        why: String,
    },
    /// A model brancher in a build without the `llm` feature.
    #[error("the {brancher} brancher needs forq-search's `llm` feature")]
    NoLlmFeature {
        /// The brancher.
        brancher: BrancherKind,
    },
}

/// The model the model branchers call.
#[cfg(feature = "llm")]
#[derive(Clone)]
pub struct PlanModel {
    /// The provider.
    pub provider: std::sync::Arc<dyn forq_agent::provider::Provider>,
    /// The model's name.
    pub name: String,
    /// Its prices, for costs and dollar caps.
    pub prices: forq_agent::cost::PriceTable,
}

#[cfg(feature = "llm")]
impl std::fmt::Debug for PlanModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlanModel")
            .field("provider", &self.provider.name())
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// What a fix is made of, by name; [`FixPlan::build`] wires it.
#[derive(Default)]
#[non_exhaustive]
pub struct FixPlan {
    /// The strategy.
    pub strategy: StrategyKind,
    /// The brancher (default: the strategy's).
    pub brancher: Option<BrancherKind>,
    /// The issue as the model reads it (`# title`, the body); empty: the
    /// agent is told to make the target tests pass.
    pub issue: String,
    /// What the agent is told about the repository before the code graph's
    /// map (a summary of the workspace, the context files).
    pub context: String,
    /// The `patches` brancher's candidates.
    pub patches: Option<Patches>,
    /// The model of the `llm` and `agent` branchers.
    #[cfg(feature = "llm")]
    pub model: Option<PlanModel>,
    /// A coding agent made elsewhere (an external program), used by the
    /// `agent` brancher instead of forq's own.
    #[cfg(feature = "llm")]
    pub agent: Option<std::sync::Arc<dyn forq_agent::agent::CodingAgent>>,
    /// The agent's step cap (forq's own agent).
    pub max_steps: u32,
    /// The model branchers' dollar cap (needs the model's prices).
    pub max_cost_usd: Option<f64>,
    /// The coding-agent program of the `agent` brancher (Claude Code,
    /// Codex), made from its environment; `None`: forq's own agent.
    #[cfg(feature = "llm")]
    pub program: Option<forq_agent::external::Program>,
    /// The model the coding agent and the reproduction test's writer use
    /// (default: the plan's model's).
    pub agent_model: Option<String>,
    /// Told every step of the coding agent.
    #[cfg(feature = "llm")]
    pub observer: Option<std::sync::Arc<dyn forq_events::Observer<forq_agent::agent::AgentEvent>>>,
    /// The search's limits.
    pub budget: SearchBudget,
    /// Candidates per node (default: the brancher's usual number).
    pub branching: Option<usize>,
    /// The order the search takes candidates in (default: best-first).
    pub order: Option<Order>,
    /// Whether the search goes on past the first green candidate for a
    /// smaller one.
    pub keep_searching: bool,
    /// Green candidates the search collects for the evidence to choose
    /// from (0: [`DEFAULT_PLAUSIBLE`]).
    pub plausible: usize,
}

/// What [`FixPlan::build`] makes: the strategy, and the search's options
/// (the caller adds its observers).
#[non_exhaustive]
pub struct Built {
    /// The strategy and its brancher.
    pub strategy: Box<dyn FixStrategy>,
    /// The search's budget, order and the prepared seed.
    pub options: SearchOptions,
}

impl std::fmt::Debug for Built {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Built")
            .field("brancher", &self.strategy.brancher())
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for FixPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FixPlan")
            .field("strategy", &self.strategy)
            .field("brancher", &self.brancher_kind())
            .field("max_steps", &self.max_steps)
            .field("max_cost_usd", &self.max_cost_usd)
            .finish_non_exhaustive()
    }
}

impl FixPlan {
    /// A plan of `strategy` with its default brancher and the default caps.
    pub fn new(strategy: StrategyKind) -> FixPlan {
        FixPlan {
            strategy,
            max_steps: forq_agent_default_steps(),
            ..FixPlan::default()
        }
    }

    /// The brancher this plan uses.
    pub fn brancher_kind(&self) -> BrancherKind {
        self.brancher
            .unwrap_or_else(|| self.strategy.default_brancher())
    }

    /// Whether the plan can be built, said before anything is provisioned:
    /// a brancher that calls a model has one (or an external program), the
    /// program's environment holds its key, `patches` has candidates.
    pub fn check(&self) -> Result<(), PlanError> {
        let kind = self.brancher_kind();
        if kind == BrancherKind::Patches && self.patches.is_none() {
            return Err(PlanError::NoPatches);
        }
        #[cfg(feature = "llm")]
        {
            if kind == BrancherKind::Agent {
                if let Some(program) = self.program {
                    forq_agent::external::ExternalAgent::from_env(program)
                        .map_err(|why| PlanError::Program { why })?;
                    return Ok(());
                }
            }
            if kind.needs_model() && self.model.is_none() && self.agent.is_none() {
                return Err(PlanError::NeedsModel { brancher: kind });
            }
            Ok(())
        }
        #[cfg(not(feature = "llm"))]
        match kind.needs_model() {
            true => Err(PlanError::NoLlmFeature { brancher: kind }),
            false => Ok(()),
        }
    }

    /// The strategy over `prepared`, its brancher reading `index` (the
    /// repository's code graph: needed by `mutate` and `llm`, used by the
    /// agent when given), and the search's options.
    pub fn build(
        self,
        index: Option<forq_graph::Index>,
        prepared: &Prepared,
    ) -> Result<Built, PlanError> {
        let strategy = self.strategy;
        let (limits, branching) = (self.budget.clone(), self.branching);
        let mut options = SearchOptions::default()
            .keep_searching(self.keep_searching)
            .plausible(match self.plausible {
                0 => DEFAULT_PLAUSIBLE,
                n => n,
            })
            .seed(prepared.seed.clone());
        if let Some(order) = self.order {
            options = options.order(order);
        }
        let brancher = self.brancher(index, prepared)?;
        let strategy: Box<dyn FixStrategy> = match strategy {
            StrategyKind::Single => Box::new(Single::new(brancher)),
            StrategyKind::Speculative => Box::new(Speculative::new(brancher)),
        };
        options = options.budget(limits.budget(strategy.brancher(), branching));
        Ok(Built { strategy, options })
    }

    /// The writer of a reproduction test for an issue no test catches yet
    /// (`issue`: the issue as the model reads it): forq's own agent with
    /// the editing tools (the stack is not known yet: it runs the tests
    /// with `run`), or `None` without a model.
    #[cfg(feature = "llm")]
    pub fn reproducer(&self, issue: impl Into<String>) -> Option<crate::brancher::AgentReproducer> {
        use forq_agent::agent::Agent;
        use forq_agent::cost::Budget as AgentBudget;
        use forq_agent::tools::Toolbox;
        let m = self.model.as_ref()?;
        let name = self.agent_model.clone().unwrap_or_else(|| m.name.clone());
        let agent = Agent::new(m.provider.clone(), name)
            .tools(Toolbox::editing())
            .budget(AgentBudget::default().max_steps(self.max_steps))
            .prices(m.prices.clone());
        Some(crate::brancher::AgentReproducer::new(
            std::sync::Arc::new(agent),
            issue,
        ))
    }

    /// The bootstrap gate's agentic fallback on the plan's model (it sets
    /// up what detection cannot), or `None` without a model.
    #[cfg(feature = "llm")]
    pub fn configurator(&self) -> Option<std::sync::Arc<dyn forq_bootstrap::Configurator>> {
        let m = self.model.as_ref()?;
        Some(std::sync::Arc::new(
            forq_agent::configure::ModelConfigurator::new(m.provider.clone(), m.name.clone())
                .prices(m.prices.clone()),
        ))
    }

    /// The coding agent of the `agent` brancher: the external program when
    /// one is named (from its environment: its key stays with forq's
    /// relay), else forq's own with the coding tools over `stack` and
    /// `index`, capped by the plan's steps and dollars.
    #[cfg(feature = "llm")]
    pub fn coding_agent(
        &self,
        stack: Option<forq_bootstrap::Stack>,
        index: Option<forq_graph::Index>,
    ) -> Result<std::sync::Arc<dyn forq_agent::agent::CodingAgent>, PlanError> {
        use forq_agent::agent::Agent;
        use forq_agent::cost::Budget as AgentBudget;
        use forq_agent::external::ExternalAgent;
        use forq_agent::tools::Toolbox;
        let kind = BrancherKind::Agent;
        if let Some(program) = self.program {
            let mut agent = ExternalAgent::from_env(program)
                .map_err(|why| PlanError::Program { why })?
                .max_turns(self.max_steps);
            if let Some(m) = &self.model {
                agent = agent.prices(m.prices.clone());
            }
            if let Some(name) = &self.agent_model {
                agent = agent.model(name.clone());
            }
            if let Some(o) = &self.observer {
                agent = agent.observer(o.clone());
            }
            // The relay holds the program to the run's budget, counted
            // from the model's answers.
            if let Some(usd) = self.max_cost_usd {
                agent = agent.max_cost_usd(usd);
            }
            return Ok(std::sync::Arc::new(agent));
        }
        let m = self
            .model
            .as_ref()
            .ok_or(PlanError::NeedsModel { brancher: kind })?;
        let mut budget = AgentBudget::default().max_steps(self.max_steps);
        if let Some(usd) = self.max_cost_usd {
            budget = budget.max_cost_usd(usd);
        }
        let name = self.agent_model.clone().unwrap_or_else(|| m.name.clone());
        let mut agent = Agent::new(m.provider.clone(), name)
            .tools(Toolbox::coding(stack, index))
            .budget(budget)
            .prices(m.prices.clone());
        if let Some(o) = &self.observer {
            agent = agent.observer(o.clone());
        }
        Ok(std::sync::Arc::new(agent))
    }

    fn brancher(
        self,
        index: Option<forq_graph::Index>,
        prepared: &Prepared,
    ) -> Result<Box<dyn Brancher>, PlanError> {
        let kind = self.brancher_kind();
        let mutate = |index: Option<forq_graph::Index>| {
            index
                .map(|i| Mutate::new(i, prepared.stack.clone()).seeded(&prepared.seed))
                .ok_or(PlanError::NeedsIndex { brancher: kind })
        };
        match kind {
            BrancherKind::Mutate => Ok(Box::new(mutate(index)?)),
            BrancherKind::Templates => Ok(Box::new(mutate(index)?.templates(true))),
            BrancherKind::Patches => Ok(Box::new(self.patches.ok_or(PlanError::NoPatches)?)),
            #[cfg(feature = "llm")]
            BrancherKind::Llm => {
                use crate::brancher::{Llm, NOTES_CHARS};
                let m = self.model.ok_or(PlanError::NeedsModel { brancher: kind })?;
                let mutate = mutate(index)?;
                let (target, guard) = (&prepared.oracle.target, &prepared.oracle.guard);
                let files = mutate.suspect_files(target, guard, 3);
                let mut llm = Llm::new(m.provider, m.name, self.issue, files)
                    .prices(m.prices.clone())
                    .notes(mutate.notes(target, guard, NOTES_CHARS));
                if let Some(usd) = self.max_cost_usd {
                    llm = llm.max_cost(usd, m.prices);
                }
                Ok(Box::new(llm))
            }
            #[cfg(feature = "llm")]
            BrancherKind::Agent => {
                use crate::brancher::{codebase_notes, Agentic, NOTES_CHARS};
                use forq_agent::agent::Task;
                let mut task = Task::new(if self.issue.is_empty() {
                    format!(
                        "Make these failing tests pass: {}",
                        prepared.oracle.target.join(", ")
                    )
                } else {
                    self.issue.clone()
                });
                let map = index
                    .as_ref()
                    .and_then(|i| i.map(1024, &[]).ok())
                    .map(|m| m.text)
                    .unwrap_or_default();
                task.context = match (self.context.is_empty(), map.is_empty()) {
                    (true, _) => map,
                    (false, true) => self.context.clone(),
                    (false, false) => format!("{}\n\n{map}", self.context),
                };
                if let Some(i) = &index {
                    task.conventions = codebase_notes(
                        i,
                        &prepared.stack,
                        &prepared.oracle.target,
                        &prepared.oracle.guard,
                        NOTES_CHARS,
                    );
                }
                let agent = match self.agent.clone() {
                    Some(agent) => agent,
                    None => self.coding_agent(Some(prepared.stack.clone()), index)?,
                };
                Ok(Box::new(Agentic::new(agent, task)))
            }
            #[cfg(not(feature = "llm"))]
            BrancherKind::Llm | BrancherKind::Agent => {
                let _ = (&self.issue, &self.context, self.max_cost_usd);
                Err(PlanError::NoLlmFeature { brancher: kind })
            }
        }
    }
}

/// forq-agent's default step cap (none without the `llm` feature: there
/// is no agent to cap).
fn forq_agent_default_steps() -> u32 {
    #[cfg(feature = "llm")]
    return forq_agent::agent::DEFAULT_MAX_STEPS;
    #[cfg(not(feature = "llm"))]
    0
}
