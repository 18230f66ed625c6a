//! The values an expectation's `where` may ask for: what each event field can hold, read off
//! the trace's own schema (types, enumerations) and the catalogues of defence ids and actions
//! ([`crate::vocabulary`]). A value no event can carry would make `count = 0` hold for ever and any
//! other count fail for ever, so it is refused when the scenario loads, with the nearest
//! value. Pure.

use super::locate::suggest;
use crate::trace::Event;
use crate::vocabulary::{INTERVENTION_ACTIONS, INTERVENTION_SOURCES};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::OnceLock;

/// Why `value` cannot match field `field` of `kind` events, and a hint; `None` when it can.
/// `tools` lists the tool names events can carry, when they are known.
pub(super) fn check(
    kind: &str,
    field: &str,
    value: &Value,
    tools: Option<&[&str]>,
) -> Option<(String, String)> {
    if value.is_null() {
        return Some((
            format!("`{kind}` events never hold `{field}` as null"),
            format!(
                "an absent `{field}` cannot be matched; drop the key, or give the value it must have"
            ),
        ));
    }
    let named = |what: &str, names: &[&str]| -> Option<(String, String)> {
        let Some(v) = value.as_str() else {
            return Some((
                format!("`{kind}` events hold `{field}` as a string, not {value}"),
                format!("write the {what} in quotes"),
            ));
        };
        (!names.contains(&v)).then(|| {
            (
                format!("no `{kind}` event has {field} `{v}`: there is no such {what}"),
                suggest(v, names, || format!("{what}s: {}", names.join(", "))),
            )
        })
    };
    match (kind, field) {
        ("intervention", "policy") | ("message_injected" | "notice", "source") => {
            return named("defence", INTERVENTION_SOURCES);
        }
        ("intervention", "action") => return named("action", INTERVENTION_ACTIONS),
        ("intervention", "stage") if !matches!(value.as_u64(), Some(1..=3)) => {
            return Some((
                format!("`intervention` events have stage 1, 2 or 3, not {value}"),
                "1 advises (nudge, warning), 2 restricts (tools stripped, force-text), 3 ends the run"
                    .to_owned(),
            ));
        }
        (
            "tool_call_start" | "tool_call_end" | "tool_call_rejected" | "tool_call_skipped"
            | "approval_requested" | "approval_decision",
            "name",
        )
        | ("intervention", "tool") => {
            if let Some(tools) = tools {
                return named("tool", tools);
            }
        }
        _ => {}
    }
    let (consts, types) = field_shape(kind, field)?;
    if !consts.is_empty() {
        let names: Vec<&str> = consts.iter().filter_map(|c| c.as_str()).collect();
        if consts.contains(&value) {
            return None;
        }
        return Some(match value.as_str() {
            Some(v) => (
                format!("no `{kind}` event has {field} `{v}`"),
                suggest(v, &names, || format!("values: {}", names.join(", "))),
            ),
            None => (
                format!("`{kind}` events hold `{field}` as a string, not {value}"),
                format!("write one of {} in quotes", names.join(", ")),
            ),
        });
    }
    if types.is_empty() || types.iter().any(|t| fits(t, value)) {
        return None;
    }
    let want: Vec<&str> = types
        .iter()
        .filter(|t| *t != "null")
        .map(|t| match t.as_str() {
            "integer" => "a whole number",
            "number" => "a number",
            "string" => "a string",
            "boolean" => "`true` or `false`",
            "array" => "a list",
            "object" => "a table",
            _ => "another type",
        })
        .collect();
    Some((
        format!("`{kind}` events hold `{field}` as {}, not {value}", want.join(" or ")),
        "the value is compared with the event as the trace's JSON lines show it (`harness trace --jsonl`)"
            .to_owned(),
    ))
}

/// Does `value` have JSON Schema type `t`?
fn fits(t: &str, value: &Value) -> bool {
    match t {
        "integer" => value.is_u64() || value.is_i64(),
        "number" => value.is_number(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        _ => false,
    }
}

/// What a field's schema allows, by event kind and field.
type Shapes = HashMap<&'static str, HashMap<&'static str, (Vec<&'static Value>, Vec<String>)>>;

/// The constants and types ([`shape`]) of one field of one event kind, worked out once for
/// every field of every kind (a scenario's `[[expect.events]]` look them up for every value).
fn field_shape(kind: &str, field: &str) -> Option<&'static (Vec<&'static Value>, Vec<String>)> {
    static SHAPES: OnceLock<Shapes> = OnceLock::new();
    SHAPES
        .get_or_init(|| {
            let mut shapes = Shapes::new();
            let kinds = event_schema()
                .get("oneOf")
                .and_then(Value::as_array)
                .map_or(&[][..], Vec::as_slice);
            for properties in kinds.iter().filter_map(|v| v.get("properties")) {
                let (Some(name), Some(fields)) = (
                    properties
                        .get("kind")
                        .and_then(|k| k.get("const"))
                        .and_then(Value::as_str),
                    properties.as_object(),
                ) else {
                    continue;
                };
                // The first schema of a kind is the one that counts.
                if shapes.contains_key(name) {
                    continue;
                }
                let fields = fields
                    .iter()
                    .map(|(field, schema)| (field.as_str(), shape(schema)))
                    .collect();
                shapes.insert(name, fields);
            }
            shapes
        })
        .get(kind)?
        .get(field)
}

/// The constants (of an enumeration) and the types a field schema allows, through `$ref`,
/// `anyOf` and `oneOf`.
fn shape(schema: &'static Value) -> (Vec<&'static Value>, Vec<String>) {
    let mut consts = Vec::new();
    let mut types = Vec::new();
    let mut stack = vec![schema];
    while let Some(s) = stack.pop() {
        if let Some(r) = s.get("$ref").and_then(Value::as_str) {
            let name = r.rsplit('/').next().unwrap_or_default();
            if let Some(def) = event_schema().get("$defs").and_then(|d| d.get(name)) {
                stack.push(def);
            }
            continue;
        }
        if let Some(c) = s.get("const") {
            consts.push(c);
            continue;
        }
        if let Some(e) = s.get("enum").and_then(Value::as_array) {
            consts.extend(e.iter());
            continue;
        }
        for branches in ["anyOf", "oneOf"] {
            if let Some(b) = s.get(branches).and_then(Value::as_array) {
                stack.extend(b.iter().rev());
            }
        }
        match s.get("type") {
            Some(Value::String(t)) => types.push(t.clone()),
            Some(Value::Array(ts)) => {
                types.extend(ts.iter().filter_map(Value::as_str).map(str::to_owned))
            }
            _ => {}
        }
    }
    (consts, types)
}

fn event_schema() -> &'static Value {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    SCHEMA.get_or_init(|| serde_json::to_value(schemars::schema_for!(Event)).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn err(kind: &str, field: &str, value: Value) -> (String, String) {
        check(kind, field, &value, Some(&["exec", "read_file"]))
            .unwrap_or_else(|| panic!("{kind}.{field} = {value} was accepted"))
    }

    fn ok(kind: &str, field: &str, value: Value) {
        assert_eq!(
            check(kind, field, &value, Some(&["exec", "read_file"])),
            None,
            "{kind}.{field} = {value}"
        );
    }

    #[test]
    fn defence_ids_and_actions_are_checked_with_a_suggestion() {
        let (m, h) = err("intervention", "policy", json!("moltis_reflex"));
        assert!(m.contains("no such defence"), "{m}");
        assert_eq!(h, "did you mean `moltis-reflex`?");
        let (_, h) = err("message_injected", "source", json!("ironclaw-intnet"));
        assert_eq!(h, "did you mean `ironclaw-intent`?");
        let (_, h) = err("intervention", "action", json!("strip-tools"));
        assert_eq!(h, "did you mean `strip_tools`?");
        let (_, h) = err("notice", "source", json!("somebody"));
        assert!(h.starts_with("defences: moltis-reflex, "), "{h}");
        for (kind, field, v) in [
            ("intervention", "policy", "moltis-reflex"),
            ("intervention", "policy", "agent"),
            ("intervention", "action", "force_text"),
            ("message_injected", "source", "plan-step"),
        ] {
            ok(kind, field, json!(v));
        }
    }

    #[test]
    fn enumerations_types_and_ranges_come_from_the_trace() {
        let (m, h) = err("outcome", "outcome", json!("respons"));
        assert_eq!(m, "no `outcome` event has outcome `respons`");
        assert_eq!(h, "did you mean `response`?");
        let (_, h) = err("provider_error", "fault", json!("ratelimit"));
        assert_eq!(h, "did you mean `rate_limit`?");
        let (m, _) = err("intervention", "stage", json!(4));
        assert!(m.contains("stage 1, 2 or 3"), "{m}");
        let (m, _) = err("intervention", "stage", json!("1"));
        assert!(m.contains("not \"1\""), "{m}");
        let (m, _) = err("model_request", "call", json!(1.5));
        assert!(m.contains("as a whole number, not 1.5"), "{m}");
        let (m, _) = err("tool_call_end", "ok", json!("yes"));
        assert!(m.contains("`true` or `false`"), "{m}");
        let (m, _) = err("intervention", "tool", Value::Null);
        assert!(m.contains("never hold `tool` as null"), "{m}");
        ok("outcome", "outcome", json!("max_iterations"));
        ok("model_request", "purpose", json!("summary"));
        ok("model_response", "anomaly", json!("empty_tool_completion"));
        ok("tool_call_start", "args", json!({ "command": "ls" }));
        ok("model_request", "tools", json!([]));
        ok("intervention", "stage", json!(2));
    }

    #[test]
    fn tool_names_are_those_the_scenario_declares() {
        let (_, h) = err("tool_call_end", "name", json!("exce"));
        assert_eq!(h, "did you mean `exec`?");
        ok("intervention", "tool", json!("read_file"));
        // Unknown (the plan/step loop reads calls from text): any name.
        assert_eq!(
            check("tool_call_end", "name", &json!("anything"), None),
            None
        );
    }
}
