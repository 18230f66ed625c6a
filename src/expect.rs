//! Judging a run against its scenario's expectations: outcome, bounds on iterations, model calls
//! and tool calls, final text, and events that must or must not appear (with field values and
//! counts). Each failed expectation is one human-readable line.

use crate::metrics::Row;
use crate::scenario::{Bound, Expect};
use crate::trace::{Event, TimedEvent};
use serde_json::Value;

/// The expectations that do not hold, one line each (empty when all hold).
pub fn check(expect: &Expect, events: &[TimedEvent], row: &Row) -> Vec<String> {
    let mut failed = Vec::new();
    let final_text = events.iter().rev().find_map(|e| match &e.event {
        Event::Outcome { text, .. } => text.clone(),
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
        if !final_text
            .as_deref()
            .is_some_and(|t| t.contains(needle.as_str()))
        {
            failed.push(format!(
                "text_contains: final text {} does not contain {needle:?}",
                final_text
                    .as_deref()
                    .map_or("(none)".to_owned(), |t| format!("{t:?}"))
            ));
        }
    }
    let count = |kind: &str, fields: Option<&serde_json::Map<String, Value>>| -> u64 {
        events
            .iter()
            .filter(|e| e.event.kind() == kind)
            .filter(|e| {
                fields.is_none_or(|f| {
                    let v = serde_json::to_value(&e.event).unwrap_or(Value::Null);
                    f.iter().all(|(k, want)| v.get(k) == Some(want))
                })
            })
            .count() as u64
    };
    for kind in &expect.must {
        if count(kind, None) == 0 {
            failed.push(format!("must: no `{kind}` event"));
        }
    }
    for kind in &expect.must_not {
        let n = count(kind, None);
        if n > 0 {
            failed.push(format!("must_not: {n} `{kind}` event(s)"));
        }
    }
    for ev in &expect.events {
        let bound = ev.count.unwrap_or(Bound {
            min: Some(1),
            max: None,
        });
        let n = count(&ev.kind, Some(&ev.where_));
        if !bound.holds(n) {
            let filter = if ev.where_.is_empty() {
                String::new()
            } else {
                format!(" where {}", Value::Object(ev.where_.clone()))
            };
            failed.push(format!(
                "events: `{}`{filter}: expected {}, got {n}",
                ev.kind,
                bound.describe()
            ));
        }
    }
    failed
}
