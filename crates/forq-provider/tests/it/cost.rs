//! Token and cost accounting, and budgets.

use std::time::Duration;

use forq_provider::cost::{Budget, Exceeded, Meter, Price, PriceTable};
use forq_provider::message::Usage;

fn table() -> PriceTable {
    PriceTable::new()
        .with(
            "gpt-4.1",
            Price {
                input: 2.0,
                output: 8.0,
            },
        )
        .with(
            "gpt-4.1-mini",
            Price {
                input: 0.4,
                output: 1.6,
            },
        )
}

fn usage(input: u64, output: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
    }
}

#[test]
fn a_model_is_priced_by_its_longest_matching_entry() {
    let t = table();
    assert_eq!(
        t.price("gpt-4.1-2025-04-14"),
        Some(Price {
            input: 2.0,
            output: 8.0
        })
    );
    assert_eq!(
        t.price("gpt-4.1-mini-2025-04-14"),
        Some(Price {
            input: 0.4,
            output: 1.6
        })
    );
    assert_eq!(t.price("claude-sonnet"), None);
    // 1M in at $2 and 500k out at $8 = $6.
    assert_eq!(t.cost("gpt-4.1", usage(1_000_000, 500_000)), Some(6.0));
    let parsed = PriceTable::from_json(r#"{"gpt-4.1": {"input": 2.0, "output": 8.0}}"#).unwrap();
    assert_eq!(parsed.price("gpt-4.1"), t.price("gpt-4.1"));
}

#[test]
fn a_meter_sums_calls_and_each_budget_stops_a_run() {
    let mut m = Meter::new(table());
    let call = m.record("gpt-4.1", usage(100_000, 10_000));
    assert!((call.cost_usd.unwrap() - 0.28).abs() < 1e-9);
    m.record("gpt-4.1-mini", usage(100_000, 10_000));
    assert_eq!((m.steps, m.usage), (2, usage(200_000, 20_000)));
    assert!((m.cost_usd - 0.336).abs() < 1e-9, "{}", m.cost_usd);
    assert_eq!(m.check(&Budget::default(), "gpt-4.1"), None);
    assert_eq!(
        m.check(&Budget::default().max_steps(2), "gpt-4.1"),
        Some(Exceeded::Steps { limit: 2 })
    );
    assert_eq!(m.check(&Budget::default().max_steps(3), "gpt-4.1"), None);
    assert_eq!(
        m.check(&Budget::default().max_tokens(220_000), "gpt-4.1"),
        Some(Exceeded::Tokens {
            limit: 220_000,
            used: 220_000
        })
    );
    assert!(matches!(
        m.check(&Budget::default().max_cost_usd(0.30), "gpt-4.1"),
        Some(Exceeded::Cost { .. })
    ));
    assert_eq!(
        m.check(&Budget::default().max_cost_usd(1.0), "gpt-4.1"),
        None
    );
    assert!(matches!(
        m.check(&Budget::default().wall_clock(Duration::ZERO), "gpt-4.1"),
        Some(Exceeded::WallClock { .. })
    ));
}

#[test]
fn a_cost_budget_refuses_a_model_it_cannot_price_before_calling_it() {
    let m = Meter::new(table());
    let refused = m
        .check(&Budget::default().max_cost_usd(1.0), "claude-sonnet-4-5")
        .unwrap();
    assert_eq!(
        refused.to_string(),
        "a cost budget needs a price for model \"claude-sonnet-4-5\": add it to the price table"
    );
    // Without a cost budget, an unpriced model is fine and only counted.
    let mut m = Meter::new(PriceTable::new());
    assert_eq!(
        m.check(&Budget::default().max_steps(5), "local-model"),
        None
    );
    assert_eq!(m.record("local-model", usage(10, 2)).cost_usd, None);
    assert_eq!(m.unpriced, ["local-model"]);
}
