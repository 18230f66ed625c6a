//! Arguments generated from a tool's JSON Schema, for the calls of portable scenarios
//! ([`super::CallDef::generate`]): the same schema and seed give the same arguments on every
//! run and machine, so goldens stay put. A seed is derived from the case id and the call's
//! number ([`seed`]).
//!
//! The schema is read as tools declare theirs in practice: `type` (or a list of types, `null`
//! skipped), `properties` with `required`, `items`, `enum`, `const`, `default`, `anyOf` /
//! `oneOf` (the first alternative that is not `null`), `minimum` / `maximum`, `minLength` /
//! `maxLength`, `minItems` and the common string `format`s. What it does not say is filled in
//! with plain values; nesting past 8 levels is `null`.

use super::Generate;
use crate::llm::Arguments;
use serde_json::{Map, Value, json};

/// A seed from a case id and a call number (FNV-1a: the same on every platform).
pub fn seed(case: &str, call: u64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in case.bytes().chain(call.to_le_bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The arguments `how` asks for, from `schema`: parsed, or (cut off) the raw text a model
/// emitted.
pub fn arguments(schema: &Value, how: Generate, seed: u64) -> Arguments {
    let valid = || instance(schema, seed, 0);
    match how {
        Generate::Empty => Arguments::Parsed(json!({})),
        Generate::Valid => Arguments::Parsed(valid()),
        Generate::MissingRequired => {
            let mut v = valid();
            if let (Some(o), Some(field)) = (v.as_object_mut(), first_field(schema)) {
                o.remove(&field);
            }
            Arguments::Parsed(v)
        }
        Generate::WrongType => {
            let mut v = valid();
            match (v.as_object_mut(), first_field(schema)) {
                (Some(o), Some(field)) => {
                    let was = o.get(&field).cloned().unwrap_or(Value::Null);
                    o.insert(field, other_type(&was));
                    Arguments::Parsed(v)
                }
                // No field to spoil: arguments that are no object at all.
                _ => Arguments::Parsed(json!([])),
            }
        }
        Generate::Truncated => {
            let text = serde_json::to_string(&valid()).unwrap_or_else(|_| "{}".to_owned());
            let mut cut = (text.len() / 2).max(1);
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            Arguments::Raw(text[..cut].to_owned())
        }
    }
}

/// The field `missing_required` leaves out and `wrong_type` spoils: the first required one,
/// else the first property.
fn first_field(schema: &Value) -> Option<String> {
    let schema = resolved(schema);
    schema["required"]
        .as_array()
        .and_then(|r| r.iter().find_map(Value::as_str))
        .or_else(|| {
            schema["properties"]
                .as_object()
                .and_then(|p| p.keys().next().map(String::as_str))
        })
        .map(str::to_owned)
}

/// A value of another JSON type than `v`'s.
fn other_type(v: &Value) -> Value {
    match v {
        Value::String(_) => json!(12345),
        Value::Number(_) => json!("not a number"),
        Value::Bool(_) => json!("yes"),
        Value::Array(_) => json!("not a list"),
        Value::Object(_) => json!("not an object"),
        Value::Null => json!(0),
    }
}

/// The first alternative of an `anyOf` / `oneOf` that is not `null`, or the schema itself.
fn resolved(schema: &Value) -> &Value {
    for key in ["anyOf", "oneOf"] {
        if let Some(alts) = schema[key].as_array() {
            if let Some(alt) = alts
                .iter()
                .find(|a| a["type"] != "null")
                .or_else(|| alts.first())
            {
                return resolved(alt);
            }
        }
    }
    schema
}

/// The schema's type: its `type`, the first non-`null` of a list, or what its keywords imply.
fn type_of(schema: &Value) -> &str {
    match &schema["type"] {
        Value::String(t) => t,
        Value::Array(ts) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ if schema.get("properties").is_some() => "object",
        _ if schema.get("items").is_some() => "array",
        _ => "string",
    }
}

const WORDS: [&str; 8] = [
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
];

/// An instance of `schema`.
fn instance(schema: &Value, seed: u64, depth: usize) -> Value {
    if depth > 8 {
        return Value::Null;
    }
    let schema = resolved(schema);
    if let Some(c) = schema.get("const") {
        return c.clone();
    }
    if let Some(options) = schema["enum"].as_array().filter(|e| !e.is_empty()) {
        return options[usize::try_from(seed % options.len() as u64).unwrap_or(0)].clone();
    }
    if let Some(d) = schema.get("default") {
        return d.clone();
    }
    match type_of(schema) {
        "object" => {
            let properties = schema["properties"].as_object();
            let mut fields: Vec<&str> = schema["required"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            if fields.is_empty() {
                // Nothing required: the first property, so the call says something.
                fields.extend(properties.and_then(|p| p.keys().next()).map(String::as_str));
            }
            let mut out = Map::new();
            for (i, field) in fields.into_iter().enumerate() {
                let sub = properties
                    .and_then(|p| p.get(field))
                    .cloned()
                    .unwrap_or_else(|| json!({"type": "string"}));
                let v = instance(&sub, seed.wrapping_add(i as u64 + 1), depth + 1);
                out.insert(field.to_owned(), v);
            }
            Value::Object(out)
        }
        "array" => {
            let n = schema["minItems"].as_u64().unwrap_or(1).clamp(1, 3);
            let items = schema.get("items").cloned().unwrap_or(json!({}));
            Value::Array(
                (0..n)
                    .map(|i| instance(&items, seed.wrapping_add(i), depth + 1))
                    .collect(),
            )
        }
        "integer" => {
            let min = schema["minimum"].as_i64().unwrap_or(1);
            let max = schema["maximum"].as_i64().unwrap_or(i64::MAX);
            let step = i64::try_from(seed % 5).unwrap_or(0);
            json!(min.saturating_add(step).min(max).max(min.min(max)))
        }
        "number" => {
            let min = schema["minimum"].as_f64().unwrap_or(1.5);
            let max = schema["maximum"].as_f64().unwrap_or(f64::MAX);
            json!(min.min(max))
        }
        "boolean" => json!(true),
        "null" => Value::Null,
        _ => Value::String(string(schema, seed)),
    }
}

/// A string for a string schema: its format's shape, else a word, within its length bounds.
fn string(schema: &Value, seed: u64) -> String {
    let mut s = match schema["format"].as_str() {
        Some("date") => "2026-03-14".to_owned(),
        Some("date-time") => "2026-03-14T09:30:00Z".to_owned(),
        Some("time") => "09:30:00".to_owned(),
        Some("email") => "user@example.com".to_owned(),
        Some("uri" | "url") => "https://example.com/".to_owned(),
        Some("uuid") => "00000000-0000-4000-8000-000000000000".to_owned(),
        // A word and a number, so the calls of a long run rarely repeat one another.
        _ => format!(
            "{}-{}",
            WORDS[usize::try_from(seed % WORDS.len() as u64).unwrap_or(0)],
            (seed >> 8) % 1000
        ),
    };
    let min = schema["minLength"]
        .as_u64()
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(0);
    let max = schema["maxLength"]
        .as_u64()
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(usize::MAX);
    while s.chars().count() < min {
        s.push('x');
    }
    if s.chars().count() > max {
        s = s.chars().take(max).collect();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flights() -> Value {
        json!({"type": "object", "properties": {
            "origin": {"type": "string", "minLength": 3, "maxLength": 3},
            "destination": {"type": "string"},
            "date": {"type": "string", "format": "date"},
            "passengers": {"type": "integer", "minimum": 1},
            "cabin": {"enum": ["economy", "business"]}
        }, "required": ["origin", "destination", "date"]})
    }

    #[test]
    fn each_kind_of_arguments_from_a_real_schema() {
        let s = flights();
        let seed = seed("suite/reflex@exec", 0);
        let Arguments::Parsed(valid) = arguments(&s, Generate::Valid, seed) else {
            panic!("valid arguments are JSON")
        };
        let o = valid.as_object().expect("an object");
        assert_eq!(
            o.keys().collect::<Vec<_>>(),
            ["origin", "destination", "date"],
            "the required fields"
        );
        assert_eq!(o["date"], "2026-03-14");
        assert_eq!(o["origin"].as_str().map(str::len), Some(3));
        assert_eq!(
            arguments(&s, Generate::Empty, seed),
            Arguments::Parsed(json!({}))
        );
        let Arguments::Parsed(missing) = arguments(&s, Generate::MissingRequired, seed) else {
            panic!()
        };
        assert!(missing.get("origin").is_none() && missing.get("destination").is_some());
        let Arguments::Parsed(wrong) = arguments(&s, Generate::WrongType, seed) else {
            panic!()
        };
        assert!(wrong["origin"].is_number(), "{wrong}");
        let Arguments::Raw(cut) = arguments(&s, Generate::Truncated, seed) else {
            panic!("truncated arguments are raw text")
        };
        assert!(serde_json::from_str::<Value>(&cut).is_err(), "{cut}");
        assert!(
            serde_json::to_string(&valid)
                .expect("text")
                .starts_with(&cut)
        );
        // The same case and call give the same arguments; another case may not.
        assert_eq!(
            arguments(&s, Generate::Valid, seed),
            Arguments::Parsed(valid.clone())
        );
        let words: std::collections::BTreeSet<String> = (0..8)
            .map(
                |c| match arguments(&s, Generate::Valid, super::seed("x", c)) {
                    Arguments::Parsed(v) => v["destination"].to_string(),
                    Arguments::Raw(r) => r,
                },
            )
            .collect();
        assert!(words.len() > 1, "the seed varies the words: {words:?}");
    }

    #[test]
    fn open_and_odd_schemas_still_give_arguments() {
        let seed = 7;
        // No properties at all: `{}` is valid, and there is no field to spoil.
        assert_eq!(
            arguments(&json!({"type": "object"}), Generate::Valid, seed),
            Arguments::Parsed(json!({}))
        );
        assert_eq!(
            arguments(&json!({}), Generate::WrongType, seed),
            Arguments::Parsed(json!([]))
        );
        // Nothing required: the first property is filled.
        let path = json!({"properties": {"path": {"type": "string"}}});
        assert!(matches!(arguments(&path, Generate::Valid, seed),
            Arguments::Parsed(v) if v["path"].is_string()));
        // anyOf with null, a type list, arrays, nested objects, bounds (the first field's seed
        // is 8: an integer 8 mod 5 = 3 above its minimum).
        let odd = json!({"type": "object", "required": ["a", "b", "c", "d"], "properties": {
            "a": {"anyOf": [{"type": "null"}, {"type": "integer", "minimum": 5}]},
            "b": {"type": ["null", "boolean"]},
            "c": {"type": "array", "items": {"type": "number", "maximum": 0.5}, "minItems": 2},
            "d": {"type": "object", "properties": {"e": {"const": "x"}}, "required": ["e"]}
        }});
        assert_eq!(
            arguments(&odd, Generate::Valid, seed),
            Arguments::Parsed(json!({"a": 8, "b": true, "c": [0.5, 0.5], "d": {"e": "x"}}))
        );
        // A schema that nests itself without end stops at a depth.
        let mut deep = json!({"type": "object"});
        for _ in 0..12 {
            deep = json!({"type": "object", "required": ["n"], "properties": {"n": deep}});
        }
        let Arguments::Parsed(v) = arguments(&deep, Generate::Valid, seed) else {
            panic!()
        };
        assert!(v.to_string().contains("null"), "{v}");
    }
}
