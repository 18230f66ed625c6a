//! A tool's outcomes from recorded results, built one way for every recording that becomes a
//! scenario (`harness import --as scenario`, `harness promote` of an agent's cassette): by
//! arguments where the same arguments always got the same result, else by call order.

use super::{Bound, OutcomeDef};
use serde_json::Value;

/// What a scenario made from a recording assumes, said once in its description: the stubborn
/// model, the tools' results and the cost basis.
pub const RECORDED_ASSUMPTIONS: &str = "The model is the recording, answer by answer, whatever \
the runtime sends: a stubborn model that, after an intervention, goes on as it did when \
recorded (and keeps calling tools a runtime withholds). What a profile's defence saves here is \
what it saves on a model that ignores it. The tools give the recorded results, by arguments \
where the same arguments always got the same result, else in call order. The model has no \
prices: the run costs $0 under every profile (a profile's cost guard keeps its own accounting); \
give `[model] prices` to compare costs. The cap (`max_iterations`) is set by the recording's \
length, not the runtime's, so a runtime's own cap does not end the replay.";

/// Does `v` hold a null anywhere?
pub fn holds_null(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Array(a) => a.iter().any(holds_null),
        Value::Object(o) => o.values().any(holds_null),
        _ => false,
    }
}

fn same(a: &OutcomeDef, b: &OutcomeDef) -> bool {
    (&a.ok, &a.error, a.fail) == (&b.ok, &b.error, b.fail)
}

/// A tool's outcomes from its recorded results. Arguments that always got the same result get
/// it by argument (`args`), so a call a defence skipped or rejected does not shift the others'
/// results; the calls of arguments that got different results, and of arguments a table
/// cannot hold, get theirs by call order (`on_call`, with `args` when known), first.
pub fn recorded_outcomes(recorded: &[(Option<Value>, OutcomeDef)]) -> Vec<OutcomeDef> {
    use std::collections::{HashMap, HashSet};
    // Arguments as a key (objects' keys sorted: equal arguments, equal keys), and whether all
    // the results recorded for them are the same; one pass, so a long run stays linear.
    let keys: Vec<Option<String>> = recorded
        .iter()
        .map(|(a, _)| a.as_ref().map(crate::json::canonical))
        .collect();
    let mut first: HashMap<&str, usize> = HashMap::new();
    let mut consistent: HashMap<&str, bool> = HashMap::new();
    for (n, key) in keys.iter().enumerate() {
        let Some(key) = key.as_deref() else { continue };
        match first.get(key) {
            None => {
                first.insert(key, n);
                consistent.insert(key, true);
            }
            Some(&f) => {
                if !same(&recorded[n].1, &recorded[f].1) {
                    consistent.insert(key, false);
                }
            }
        }
    }
    let mut by_order = Vec::new();
    let mut by_args: Vec<OutcomeDef> = Vec::new();
    let mut kept: HashSet<&str> = HashSet::new();
    for (n, ((args, outcome), key)) in recorded.iter().zip(&keys).enumerate() {
        match (args, key.as_deref()) {
            (Some(a), Some(key)) if consistent.get(key) == Some(&true) => {
                if kept.insert(key) {
                    by_args.push(OutcomeDef {
                        args: Some(a.clone()),
                        ..outcome.clone()
                    });
                }
            }
            _ => by_order.push(OutcomeDef {
                args: args.clone(),
                on_call: Some(Bound {
                    min: Some(n as u64 + 1),
                    max: Some(n as u64 + 1),
                }),
                ..outcome.clone()
            }),
        }
    }
    // A shifted call of such arguments gets their last recorded result.
    for ((args, outcome), key) in recorded.iter().zip(&keys).rev() {
        if let (Some(a), Some(key)) = (args, key.as_deref()) {
            if kept.insert(key) {
                by_args.push(OutcomeDef {
                    args: Some(a.clone()),
                    ..outcome.clone()
                });
            }
        }
    }
    by_order.extend(by_args);
    by_order
}
