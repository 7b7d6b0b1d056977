//! The one place a fix is wired together: a strategy and its brancher,
//! from the names people choose (`--strategy`, `--brancher`, forq.yml's
//! `actions.fix`), over a prepared root. `forq fix` and forq-app's
//! pipeline both build their strategy here.
//!
//! ```
//! use forq_search::plan::{BrancherKind, StrategyKind};
//!
//! let s: StrategyKind = "single".parse().unwrap();
//! assert_eq!(s.default_brancher(), BrancherKind::Agent);
//! assert_eq!(StrategyKind::Speculative.default_brancher(), BrancherKind::Mutate);
//! assert_eq!(BrancherKind::Llm.name(), "llm");
//! assert!("tree".parse::<StrategyKind>().unwrap_err().contains("single, speculative"));
//! ```

use serde::{Deserialize, Serialize};

use crate::brancher::{Brancher, Mutate, Patches};
use crate::fix::{FixStrategy, Prepared, Single, Speculative};

/// How a fix is looked for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum StrategyKind {
    /// The tree search over copy-on-write forks.
    #[default]
    Speculative,
    /// One pass (of the brancher: an agent's, by default), then the oracle.
    Single,
}

/// Who proposes candidates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
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

const STRATEGIES: [(StrategyKind, &str); 2] = [
    (StrategyKind::Single, "single"),
    (StrategyKind::Speculative, "speculative"),
];

const BRANCHERS: [(BrancherKind, &str); 5] = [
    (BrancherKind::Mutate, "mutate"),
    (BrancherKind::Templates, "templates"),
    (BrancherKind::Patches, "patches"),
    (BrancherKind::Llm, "llm"),
    (BrancherKind::Agent, "agent"),
];

impl StrategyKind {
    /// Its name.
    pub fn name(self) -> &'static str {
        STRATEGIES
            .iter()
            .find(|(k, _)| *k == self)
            .map_or("speculative", |(_, n)| n)
    }
    /// Every name.
    pub fn names() -> impl Iterator<Item = &'static str> {
        STRATEGIES.iter().map(|(_, n)| *n)
    }
    /// The brancher used when none is named: the agent for one pass,
    /// mutations (no model) for the search.
    pub fn default_brancher(self) -> BrancherKind {
        match self {
            StrategyKind::Single => BrancherKind::Agent,
            StrategyKind::Speculative => BrancherKind::Mutate,
        }
    }
}

impl BrancherKind {
    /// Its name.
    pub fn name(self) -> &'static str {
        BRANCHERS
            .iter()
            .find(|(k, _)| *k == self)
            .map_or("mutate", |(_, n)| n)
    }
    /// Every name.
    pub fn names() -> impl Iterator<Item = &'static str> {
        BRANCHERS.iter().map(|(_, n)| *n)
    }
    /// Whether it calls a model.
    pub fn needs_model(self) -> bool {
        matches!(self, BrancherKind::Llm | BrancherKind::Agent)
    }
}

impl std::str::FromStr for StrategyKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        STRATEGIES
            .iter()
            .find(|(_, n)| *n == s)
            .map(|(k, _)| *k)
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
        BRANCHERS
            .iter()
            .find(|(_, n)| *n == s)
            .map(|(k, _)| *k)
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

/// What a fix is made of, by name; [`Plan::build`] wires it.
#[derive(Default)]
#[non_exhaustive]
pub struct Plan {
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
    /// Told every step of forq's own agent.
    #[cfg(feature = "llm")]
    pub observer: Option<std::sync::Arc<dyn forq_events::Observer<forq_agent::agent::Event>>>,
}

impl std::fmt::Debug for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plan")
            .field("strategy", &self.strategy)
            .field("brancher", &self.brancher_kind())
            .field("max_steps", &self.max_steps)
            .field("max_cost_usd", &self.max_cost_usd)
            .finish_non_exhaustive()
    }
}

impl Plan {
    /// A plan of `strategy` with its default brancher and the default caps.
    pub fn new(strategy: StrategyKind) -> Plan {
        Plan {
            strategy,
            max_steps: forq_agent_default_steps(),
            ..Plan::default()
        }
    }

    /// The brancher this plan uses.
    pub fn brancher_kind(&self) -> BrancherKind {
        self.brancher
            .unwrap_or_else(|| self.strategy.default_brancher())
    }

    /// The strategy over `prepared`, its brancher reading `index` (the
    /// repository's code graph: needed by `mutate` and `llm`, used by the
    /// agent when given).
    pub fn build(
        self,
        index: Option<forq_graph::Index>,
        prepared: &Prepared,
    ) -> Result<Box<dyn FixStrategy>, PlanError> {
        let strategy = self.strategy;
        let brancher = self.brancher(index, prepared)?;
        Ok(match strategy {
            StrategyKind::Single => Box::new(Single::new(brancher)),
            StrategyKind::Speculative => Box::new(Speculative::new(brancher)),
        })
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
                use forq_agent::agent::{Agent, Task};
                use forq_agent::cost::Budget;
                use forq_agent::tools::{GraphTools, RunTests, Toolbox};
                let mut task = Task::new(if self.issue.is_empty() {
                    format!(
                        "Make these failing tests pass: {}",
                        prepared.oracle.target.join(", ")
                    )
                } else {
                    self.issue
                });
                let map = index
                    .as_ref()
                    .and_then(|i| i.map(1024, &[]).ok())
                    .map(|m| m.text)
                    .unwrap_or_default();
                task.context = match (self.context.is_empty(), map.is_empty()) {
                    (true, _) => map,
                    (false, true) => self.context,
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
                let agent = match self.agent {
                    Some(agent) => agent,
                    None => {
                        let m = self.model.ok_or(PlanError::NeedsModel { brancher: kind })?;
                        let mut tools =
                            Toolbox::editing().with(RunTests::new(prepared.stack.clone()));
                        if let Some(i) = index {
                            tools = GraphTools::new(i).add_to(tools);
                        }
                        let mut budget = Budget::default().max_steps(self.max_steps);
                        if let Some(usd) = self.max_cost_usd {
                            budget = budget.max_cost_usd(usd);
                        }
                        let mut agent = Agent::new(m.provider, m.name)
                            .tools(tools)
                            .budget(budget)
                            .prices(m.prices);
                        if let Some(o) = self.observer {
                            agent = agent.observer(o);
                        }
                        std::sync::Arc::new(agent)
                    }
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
