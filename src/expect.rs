//! Judging a run against its scenario's expectations: outcome, bounds on iterations, model calls
//! and tool calls, final text, events that must or must not appear (with field values,
//! iterations and counts), and ordered sequences of events. Each failed expectation is one
//! human-readable line.

use crate::metrics::Row;
use crate::scenario::{Bound, Expect};
use crate::trace::{Event, TimedEvent};
use serde_json::{Map, Value};
use std::mem::Discriminant;

/// The expectations that do not hold, one line each (empty when all hold).
pub fn check(expect: &Expect, events: &[TimedEvent], row: &Row) -> Vec<String> {
    let mut failed = Vec::new();
    let final_text = events.iter().rev().find_map(|e| match &e.event {
        Event::Outcome { text, .. } => text.as_deref(),
        _ => None,
    });
    if let Some(want) = expect.outcome {
        if row.outcome != want.as_str() {
            failed.push(format!(
                "outcome: expected {}, got {}",
                want.as_str(),
                row.outcome
            ));
        }
    }
    let bounds: [(&str, Option<Bound>, u64); 3] = [
        ("iterations", expect.iterations, row.iterations.into()),
        ("model_calls", expect.model_calls, row.model_calls.into()),
        ("tool_calls", expect.tool_calls, row.tool_calls.into()),
    ];
    for (name, bound, got) in bounds {
        if let Some(b) = bound {
            if !b.holds(got) {
                failed.push(format!("{name}: expected {}, got {got}", b.describe()));
            }
        }
    }
    if let Some(needle) = &expect.text_contains {
        if !final_text.is_some_and(|t| t.contains(needle.as_str())) {
            failed.push(format!(
                "text_contains: final text {} does not contain {needle:?}",
                final_text.map_or("(none)".to_owned(), |t| format!("{t:?}"))
            ));
        }
    }
    if expect.must.is_empty()
        && expect.must_not.is_empty()
        && expect.events.is_empty()
        && expect.sequence.is_empty()
    {
        return failed;
    }
    // Each event's iteration, counted over the whole run (0 before the first).
    let iterations: Vec<u32> = events
        .iter()
        .scan(0u32, |n, e| {
            if matches!(e.event, Event::Iteration { .. }) {
                *n += 1;
            }
            Some(*n)
        })
        .collect();
    // A kind is looked for by name up to its first event; from there events are told apart by
    // variant, since `Event::kind` gives each variant a name of its own (a test holds it to
    // that). `None`: no event of the kind.
    let variant = |kind: &str| {
        let first = events.iter().position(|e| e.event.kind() == kind)?;
        Some((first, std::mem::discriminant(&events[first].event)))
    };
    // A field is read off the event's JSON form one key at a time ([`Event::field`]).
    let matches =
        |i: usize, of: Discriminant<Event>, fields: &Map<String, Value>, at: Option<Bound>| {
            let e = &events[i];
            std::mem::discriminant(&e.event) == of
                && at.is_none_or(|b| b.holds(u64::from(iterations[i])))
                && fields
                    .iter()
                    .all(|(k, want)| e.event.field(k).as_ref() == Some(want))
        };
    let none = Map::new();
    let count = |kind: &str, fields: &Map<String, Value>, at: Option<Bound>| -> u64 {
        variant(kind).map_or(0, |(first, of)| {
            (first..events.len())
                .filter(|&i| matches(i, of, fields, at))
                .count() as u64
        })
    };
    for kind in &expect.must {
        if count(kind, &none, None) == 0 {
            failed.push(format!("must: no `{kind}` event"));
        }
    }
    for kind in &expect.must_not {
        let n = count(kind, &none, None);
        if n > 0 {
            failed.push(format!("must_not: {n} `{kind}` event(s)"));
        }
    }
    for ev in &expect.events {
        let bound = ev.count.unwrap_or(Bound {
            min: Some(1),
            max: None,
        });
        let n = count(&ev.kind, &ev.where_, ev.iteration);
        if !bound.holds(n) {
            failed.push(format!(
                "events: {}: expected {}, got {n}",
                ev.describe(),
                bound.describe()
            ));
        }
    }
    // A sequence matches greedily: each step takes the first event after the previous step's;
    // if that fails, no later choice could succeed.
    let mut from = 0;
    for (step, p) in expect.sequence.iter().enumerate() {
        let found = variant(&p.kind).and_then(|(first, of)| {
            (from.max(first)..events.len()).find(|&i| matches(i, of, &p.where_, p.iteration))
        });
        match found {
            Some(i) => from = i + 1,
            None => {
                let after = if step == 0 {
                    String::new()
                } else {
                    let prev = from - 1;
                    format!(
                        " after step {} (event {} at {:.3}s, iteration {})",
                        step,
                        prev + 1,
                        events[prev].t_ms as f64 / 1000.0,
                        iterations[prev]
                    )
                };
                failed.push(format!(
                    "sequence: step {} of {}, {}, did not occur{after}",
                    step + 1,
                    expect.sequence.len(),
                    p.describe()
                ));
                break;
            }
        }
    }
    failed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{EventExpect, EventPattern};

    #[test]
    fn every_event_variant_has_a_kind_of_its_own() {
        // `check` tells events apart by variant once it has found a kind by name, which holds
        // only while `Event::kind` names each variant apart. One event of every variant the
        // trace's schema lists, made from that schema: its kind is its JSON tag, and no other
        // variant has it.
        let schema = serde_json::to_value(schemars::schema_for!(Event)).unwrap();
        let variants = schema["oneOf"].as_array().unwrap();
        let mut kinds = std::collections::BTreeMap::new();
        for (n, variant) in variants.iter().enumerate() {
            let mut one = variant.clone();
            if let Some(defs) = schema.get("$defs") {
                one["$defs"] = defs.clone();
            }
            let how = crate::scenario::Generate::Valid;
            let crate::llm::Arguments::Parsed(value) =
                crate::scenario::generate::arguments(&one, how, n as u64)
            else {
                panic!("{variant}: no value made");
            };
            let event: Event = serde_json::from_value(Value::clone(&value))
                .unwrap_or_else(|e| panic!("{value}: {e}"));
            assert_eq!(Some(event.kind()), value["kind"].as_str(), "{value}");
            let before = kinds.insert(event.kind(), std::mem::discriminant(&event));
            assert!(before.is_none(), "two variants are {}", event.kind());
        }
        assert_eq!(kinds.len(), Event::catalogue().len());
        assert_eq!(kinds.len(), 25);
    }

    /// Iteration 1: a failing call; iteration 2: a nudge; iteration 3: tools stripped.
    fn run() -> Vec<TimedEvent> {
        let intervention = |stage: u8, action: &str| Event::Intervention {
            policy: "moltis-reflex".to_owned(),
            stage,
            action: action.to_owned(),
            tool: Some("exec".to_owned()),
        };
        [
            Event::RunStart {
                profile: "moltis".to_owned(),
                model: "m".to_owned(),
                max_iterations: 25,
                tools: vec!["exec".to_owned()],
            },
            Event::Iteration { n: 1 },
            Event::Notice {
                source: "cost-guard".to_owned(),
                text: "spent".to_owned(),
            },
            Event::Iteration { n: 2 },
            intervention(1, "nudge"),
            Event::Iteration { n: 3 },
            intervention(2, "strip_tools"),
        ]
        .into_iter()
        .enumerate()
        .map(|(i, event)| TimedEvent {
            t_ms: i as u64 * 1000,
            event,
        })
        .collect()
    }

    fn check_with(expect: &Expect) -> Vec<String> {
        let events = run();
        let row = crate::metrics::row("c", "f", "moltis", Default::default(), &events);
        check(expect, &events, &row)
    }

    fn exact(n: u64) -> Option<Bound> {
        Some(Bound {
            min: Some(n),
            max: Some(n),
        })
    }

    fn pattern(kind: &str, fields: serde_json::Value, iteration: Option<Bound>) -> EventPattern {
        EventPattern {
            kind: kind.to_owned(),
            where_: fields.as_object().cloned().unwrap_or_default(),
            iteration,
        }
    }

    fn events(p: EventPattern, count: Option<Bound>) -> Expect {
        Expect {
            events: vec![EventExpect {
                kind: p.kind,
                where_: p.where_,
                iteration: p.iteration,
                count,
            }],
            ..Expect::default()
        }
    }

    #[test]
    fn events_count_only_in_the_iterations_asked_for() {
        let nudge = serde_json::json!({ "action": "nudge" });
        assert!(
            check_with(&events(
                pattern("intervention", nudge.clone(), exact(2)),
                None
            ))
            .is_empty()
        );
        let failed = check_with(&events(
            pattern("intervention", nudge.clone(), exact(3)),
            None,
        ));
        assert_eq!(
            failed,
            [
                r#"events: `intervention` where {"action":"nudge"} in iteration 3: expected >= 1, got 0"#
            ]
        );
        let later = Some(Bound {
            min: Some(2),
            max: None,
        });
        assert!(
            check_with(&events(
                pattern("intervention", serde_json::json!({}), later),
                exact(2)
            ))
            .is_empty()
        );
        // Events before the first iteration are in iteration 0.
        assert!(
            check_with(&events(
                pattern("run_start", serde_json::json!({}), exact(0)),
                exact(1)
            ))
            .is_empty()
        );
    }

    #[test]
    fn sequences_hold_in_order_with_other_events_between() {
        let seq = |steps: Vec<EventPattern>| Expect {
            sequence: steps,
            ..Expect::default()
        };
        let nudge = pattern("intervention", serde_json::json!({ "stage": 1 }), None);
        let strip = pattern("intervention", serde_json::json!({ "stage": 2 }), exact(3));
        assert!(check_with(&seq(vec![nudge.clone(), strip.clone()])).is_empty());
        // Out of order.
        let failed = check_with(&seq(vec![strip.clone(), nudge.clone()]));
        assert_eq!(
            failed,
            [
                r#"sequence: step 2 of 2, `intervention` where {"stage":1}, did not occur after step 1 (event 7 at 6.000s, iteration 3)"#
            ]
        );
        // A step that never occurs.
        let failed = check_with(&seq(vec![pattern(
            "compaction",
            serde_json::json!({}),
            None,
        )]));
        assert_eq!(
            failed,
            ["sequence: step 1 of 1, `compaction`, did not occur"]
        );
        // One event cannot serve two steps.
        let failed = check_with(&seq(vec![nudge.clone(), nudge]));
        assert_eq!(failed.len(), 1, "{failed:?}");
    }
}
