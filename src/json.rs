//! Small pure helpers over `serde_json::Value` shared by the engine, the policies and the trace:
//! canonical rendering (sorted keys, as both reproduced runtimes fingerprint arguments), compact
//! rendering in insertion order (as runtimes show arguments back to the model) and char-safe
//! previews. No I/O, no allocation beyond the returned strings.

use serde_json::Value;
use std::fmt::Write as _;

/// Canonical form: object keys sorted byte-wise, recursively; arrays keep their order; numbers
/// use serde_json's `Display` (so `1` and `1.0` differ); strings are JSON-escaped.
///
/// Equality of canonical forms is what the duplicate tracker and the reflex detector compare.
pub fn canonical(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json_string(key, out);
                out.push(':');
                write_canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::String(s) => write_json_string(s, out),
        other => {
            let _ = write!(out, "{other}");
        }
    }
}

fn write_json_string(s: &str, out: &mut String) {
    // serde_json's string escaping, without an intermediate Value.
    out.push_str(&serde_json::to_string(s).unwrap_or_default());
}

/// Compact JSON in the value's own key order (serde_json is built with `preserve_order`).
pub fn compact(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// The JSON kind name used in validation messages.
pub fn kind_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// At most `max` chars of `s`, cut on a char boundary, with `...` appended when cut.
pub fn preview(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_owned(),
        Some((cut, _)) => format!("{}...", &s[..cut]),
    }
}

/// Does `subset` hold within `value`? Objects: every key of `subset` is present in `value` with
/// a value that (recursively) contains the subset's; everything else: equality.
pub fn contains(value: &Value, subset: &Value) -> bool {
    match (value, subset) {
        (Value::Object(have), Value::Object(want)) => want
            .iter()
            .all(|(k, w)| have.get(k).is_some_and(|h| contains(h, w))),
        _ => value == subset,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_sorts_keys_recursively_and_keeps_array_order() {
        let a = json!({"b": 2, "a": {"d": [3, 1], "c": null}});
        assert_eq!(canonical(&a), r#"{"a":{"c":null,"d":[3,1]},"b":2}"#);
        assert_eq!(
            canonical(&json!({"a":1,"b":2})),
            canonical(&json!({"b":2,"a":1}))
        );
    }

    #[test]
    fn canonical_distinguishes_integer_and_float_and_inner_whitespace() {
        assert_ne!(canonical(&json!({"n": 1})), canonical(&json!({"n": 1.0})));
        assert_ne!(
            canonical(&json!({"cmd": ""})),
            canonical(&json!({"cmd": " "}))
        );
    }

    #[test]
    fn preview_cuts_on_char_boundaries() {
        assert_eq!(preview("hello", 10), "hello");
        assert_eq!(preview("hello world", 5), "hello...");
        assert_eq!(preview("café", 3), "caf...");
        assert_eq!(preview("café", 4), "café");
    }

    #[test]
    fn contains_matches_nested_subsets() {
        let v = json!({"command": "ls", "opts": {"a": 1, "b": 2}});
        assert!(contains(&v, &json!({"opts": {"a": 1}})));
        assert!(!contains(&v, &json!({"opts": {"a": 2}})));
        assert!(contains(&v, &json!({})));
        assert!(!contains(&json!("ls"), &json!({})));
    }
}
