//! Whether harness can vouch that arguments it made are valid for a schema: its own check
//! ([`super::valid`]) holds, and the schema says nothing that check does not read. A valid
//! call a tool rejects is the tool's doing only when harness can vouch for it; otherwise the
//! report card says the call may not have been valid, and blames no one.

use serde_json::Value;

/// Keywords [`super::valid`] does not check: a schema that uses one may reject what it accepts
/// (they need to know what other keywords evaluated, or a dynamic scope).
const UNCHECKED: [&str; 4] = [
    "unevaluatedProperties",
    "unevaluatedItems",
    "$dynamicRef",
    "$recursiveRef",
];

/// The string formats [`super::string`] makes a value of.
const MADE_FORMATS: [&str; 21] = [
    "json-pointer",
    "relative-json-pointer",
    "uri-template",
    "date",
    "date-time",
    "time",
    "email",
    "idn-email",
    "uri",
    "url",
    "iri",
    "uri-reference",
    "iri-reference",
    "uuid",
    "ipv4",
    "ipv6",
    "hostname",
    "idn-hostname",
    "duration",
    "regex",
    "byte",
];

/// Schema nodes looked at, at most.
const MAX_NODES: usize = 20_000;

/// Why harness cannot vouch that `value` is valid for `schema`, if it cannot: its own check
/// fails, or the schema uses what that check does not read (a keyword, a reference it cannot
/// resolve, a pattern that is no regular expression here, a format it makes no value of).
pub fn doubt(schema: &Value, value: &Value) -> Option<String> {
    match super::valid_whole(schema, value) {
        Some(true) => {}
        Some(false) => {
            return Some(
                "they fail harness's own check of the schema (a part of it harness could not meet)"
                    .to_owned(),
            );
        }
        None => {
            return Some(
                "the schema is too large or too deep for harness to check whole".to_owned(),
            );
        }
    }
    let root = super::Root::new(schema);
    let mut stack = vec![schema];
    let mut seen = 0usize;
    while let Some(node) = stack.pop() {
        seen += 1;
        if seen > MAX_NODES {
            return Some("the schema is too large for harness to read whole".to_owned());
        }
        match node {
            Value::Object(o) => {
                if let Some(k) = UNCHECKED.iter().find(|k| o.contains_key(**k)) {
                    return Some(format!(
                        "the schema uses `{k}`, which harness does not check"
                    ));
                }
                if let Some(p) = o.get("pattern").and_then(Value::as_str) {
                    if regex_lite::Regex::new(p).is_err() {
                        return Some(format!(
                            "the schema's pattern `{p}` is no regular expression harness reads (a look-around or a back-reference)"
                        ));
                    }
                }
                if let Some(f) = o.get("format").and_then(Value::as_str) {
                    // (Where the node may be a string: `string`, a list that has it, no type.)
                    let stringy = match o.get("type") {
                        None => true,
                        Some(Value::String(t)) => t == "string",
                        Some(Value::Array(ts)) => ts.iter().any(|t| t == "string"),
                        Some(_) => false,
                    };
                    if stringy && !MADE_FORMATS.contains(&f) {
                        return Some(format!(
                            "the schema asks for the format `{f}`, which harness makes no value of"
                        ));
                    }
                }
                if let Some(r) = o.get("$ref").and_then(Value::as_str) {
                    if root.resolve(r).is_none() {
                        return Some(format!(
                            "the schema refers to `{r}`, which harness does not resolve (an anchor, another document)"
                        ));
                    }
                }
                stack.extend(o.values().filter(|v| v.is_object() || v.is_array()));
            }
            Value::Array(a) => stack.extend(a.iter().filter(|v| v.is_object() || v.is_array())),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::doubt;
    use serde_json::json;

    #[test]
    fn harness_vouches_only_for_what_it_checks() {
        let plain = json!({"type": "object", "properties": {"q": {"type": "string", "pattern": "^[a-z]+$"}}, "required": ["q"]});
        assert_eq!(doubt(&plain, &json!({"q": "abc"})), None);
        assert!(doubt(&plain, &json!({"q": "ABC"})).is_some_and(|w| w.contains("own check")));
        // What the check reads: conditions, dependencies, key names, `contains`.
        let read = json!({"type": "object",
            "properties": {"kind": {"enum": ["a", "b"]}, "card": {"type": "string"}, "tags": {"type": "array", "contains": {"const": "x"}}},
            "if": {"properties": {"kind": {"const": "a"}}}, "then": {"required": ["card"]},
            "dependentRequired": {"card": ["kind"]},
            "propertyNames": {"pattern": "^[a-z]+$"}});
        assert_eq!(
            doubt(&read, &json!({"kind": "a", "card": "c", "tags": ["x"]})),
            None
        );
        for wrong in [
            json!({"kind": "a"}),
            json!({"card": "c"}),
            json!({"kind": "b", "Other": 1}),
            json!({"kind": "b", "tags": ["y"]}),
        ] {
            assert!(doubt(&read, &wrong).is_some(), "{wrong}");
        }
        for (schema, word) in [
            (
                json!({"type": "object", "properties": {"a": {"type": "string"}}, "unevaluatedProperties": false}),
                "`unevaluatedProperties`",
            ),
            (
                json!({"type": "object", "properties": {"p": {"type": "string", "pattern": "^(?=.*\\d).+$"}}}),
                "look-around",
            ),
            (
                json!({"type": "object", "properties": {"p": {"type": "string", "format": "iso-8601-week"}}}),
                "`iso-8601-week`",
            ),
            (
                json!({"type": "object", "properties": {"p": {"$ref": "#item"}}, "$defs": {"i": {"$anchor": "item"}}}),
                "`#item`",
            ),
        ] {
            assert!(
                doubt(&schema, &json!({})).is_some_and(|w| w.contains(word)),
                "{schema}: {:?}",
                doubt(&schema, &json!({}))
            );
        }
    }
}
