//! Token and cost accounting per call and per run, and budgets that end a
//! run cleanly: steps, tokens, cost, wall clock.
//!
//! Prices are the caller's ([`PriceTable`]): they change too often to ship
//! as constants. A cost budget with a model the table does not price is
//! refused at its first call, rather than silently never reached.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::message::Usage;

/// What a model costs, in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Price {
    /// Per million prompt tokens.
    pub input: f64,
    /// Per million reply tokens.
    pub output: f64,
}

/// Prices by model name; a name matches the longest entry it starts with
/// (`gpt-4.1` prices `gpt-4.1-2025-04-14`, unless that has its own entry).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PriceTable(BTreeMap<String, Price>);

impl PriceTable {
    /// An empty table.
    pub fn new() -> PriceTable {
        PriceTable::default()
    }

    /// Adds (or replaces) a model's price.
    pub fn with(mut self, model: impl Into<String>, price: Price) -> PriceTable {
        self.0.insert(model.into(), price);
        self
    }

    /// A table from JSON: `{"gpt-4.1": {"input": 2.0, "output": 8.0}, …}`.
    pub fn from_json(text: &str) -> Result<PriceTable, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// The price of `model`, if the table has one.
    pub fn price(&self, model: &str) -> Option<Price> {
        self.0
            .iter()
            .filter(|(name, _)| model.starts_with(name.as_str()))
            .max_by_key(|(name, _)| name.len())
            .map(|(_, p)| *p)
    }

    /// What `usage` of `model` cost, if the table prices it.
    pub fn cost(&self, model: &str, usage: Usage) -> Option<f64> {
        self.price(model).map(|p| {
            (usage.input_tokens as f64 * p.input + usage.output_tokens as f64 * p.output) / 1e6
        })
    }
}

/// Limits on a run. `None` is no limit.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Budget {
    /// Model calls.
    pub max_steps: Option<u32>,
    /// Prompt and reply tokens together.
    pub max_tokens: Option<u64>,
    /// US dollars.
    pub max_cost_usd: Option<f64>,
    /// Wall clock since the run started.
    pub wall_clock: Option<Duration>,
}

impl Budget {
    /// Caps model calls.
    pub fn max_steps(mut self, n: u32) -> Self {
        self.max_steps = Some(n);
        self
    }
    /// Caps tokens.
    pub fn max_tokens(mut self, n: u64) -> Self {
        self.max_tokens = Some(n);
        self
    }
    /// Caps cost.
    pub fn max_cost_usd(mut self, usd: f64) -> Self {
        self.max_cost_usd = Some(usd);
        self
    }
    /// Caps the wall clock.
    pub fn wall_clock(mut self, d: Duration) -> Self {
        self.wall_clock = Some(d);
        self
    }
}

/// Which limit a run reached.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "budget", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Exceeded {
    /// The step limit.
    #[error("the step budget of {limit} model calls is spent")]
    Steps {
        /// The limit.
        limit: u32,
    },
    /// The token limit.
    #[error("the token budget is spent: {used} of {limit} tokens")]
    Tokens {
        /// The limit.
        limit: u64,
        /// Tokens used.
        used: u64,
    },
    /// The cost limit.
    #[error("the cost budget is spent: ${spent:.4} of ${limit:.4}")]
    Cost {
        /// The limit.
        limit: f64,
        /// Dollars spent.
        spent: f64,
    },
    /// The wall clock.
    #[error("the wall-clock budget of {} s is spent", .limit.as_secs())]
    WallClock {
        /// The limit.
        limit: Duration,
    },
    /// A cost budget cannot be kept: the table has no price for a model used.
    #[error("a cost budget needs a price for model {model:?}: add it to the price table")]
    Unpriced {
        /// The model.
        model: String,
    },
}

/// One call's accounting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallCost {
    /// The model that answered.
    pub model: String,
    /// Tokens used.
    pub usage: Usage,
    /// Dollars, when the table prices the model.
    pub cost_usd: Option<f64>,
}

/// A run's running totals.
#[derive(Debug, Clone)]
pub struct Meter {
    started: Instant,
    prices: PriceTable,
    /// Model calls so far.
    pub steps: u32,
    /// Tokens so far.
    pub usage: Usage,
    /// Dollars so far, over the priced calls.
    pub cost_usd: f64,
    /// Models used that the table does not price.
    pub unpriced: Vec<String>,
}

impl Meter {
    /// A meter starting now, pricing with `prices`.
    pub fn new(prices: PriceTable) -> Meter {
        Meter {
            started: Instant::now(),
            prices,
            steps: 0,
            usage: Usage::default(),
            cost_usd: 0.0,
            unpriced: Vec::new(),
        }
    }

    /// Counts one call.
    pub fn record(&mut self, model: &str, usage: Usage) -> CallCost {
        self.steps += 1;
        self.usage += usage;
        let cost_usd = self.prices.cost(model, usage);
        match cost_usd {
            Some(c) => self.cost_usd += c,
            None if !self.unpriced.iter().any(|m| m == model) => {
                self.unpriced.push(model.to_owned())
            }
            None => {}
        }
        CallCost {
            model: model.to_owned(),
            usage,
            cost_usd,
        }
    }

    /// What `usage` of `model` costs by this meter's table, without
    /// recording it (`None`: the table does not price the model).
    pub fn price(&self, model: &str, usage: Usage) -> Option<f64> {
        self.prices.cost(model, usage)
    }

    /// How long the run has gone.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// The first limit of `budget` this run has reached, if any, before a
    /// call to `next_model`: a run stops at a limit rather than overshoot
    /// it by another call, and a cost budget refuses a model it cannot
    /// price before the call, not after.
    pub fn check(&self, budget: &Budget, next_model: &str) -> Option<Exceeded> {
        if let Some(limit) = budget.max_steps.filter(|l| self.steps >= *l) {
            return Some(Exceeded::Steps { limit });
        }
        let used = self.usage.input_tokens + self.usage.output_tokens;
        if let Some(limit) = budget.max_tokens.filter(|l| used >= *l) {
            return Some(Exceeded::Tokens { limit, used });
        }
        if let Some(limit) = budget.max_cost_usd {
            let unpriced = self.unpriced.first().map(String::as_str).or_else(|| {
                self.prices
                    .price(next_model)
                    .is_none()
                    .then_some(next_model)
            });
            if let Some(model) = unpriced {
                return Some(Exceeded::Unpriced {
                    model: model.to_owned(),
                });
            }
            if self.cost_usd >= limit {
                return Some(Exceeded::Cost {
                    limit,
                    spent: self.cost_usd,
                });
            }
        }
        budget
            .wall_clock
            .filter(|l| self.elapsed() >= *l)
            .map(|limit| Exceeded::WallClock { limit })
    }
}
