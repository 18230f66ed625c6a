//! Moltis' pre-dispatch argument validation (`tool_arg_validator.rs` at PR #664).
//!
//! Deliberately narrow: required fields (null counts as missing) and top-level `type` strings.
//! Upstream since (the `moltis-head` profile): a `type` list passes a value of any listed type
//! (`13342423`), and string values of scalar-typed properties are coerced before validation
//! and dispatch (`2feb400e`, [`coerce_scalars`]).
//! A rejected call never runs: the engine records `tool_call_rejected` instead of start/end and
//! feeds the rejection message back to the model.

use super::{Policy, ValidationConfig, fill};
use crate::json::{Lookup, compact, kind_name};
use crate::llm::{Arguments, ToolSpec};
use crate::policy::MalformedArgs;
use serde_json::Value;

/// What a validation found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Findings {
    /// Required fields absent or null, in `required` order.
    pub missing: Vec<String>,
    /// `(field, expected, actual)` in `properties` order.
    pub mismatches: Vec<(String, String, String)>,
}

impl Findings {
    /// Nothing wrong?
    pub fn is_ok(&self) -> bool {
        self.missing.is_empty() && self.mismatches.is_empty()
    }

    /// `missing=a,b type_mismatch=f:exp!=act` as upstream logs it.
    pub fn short_summary(&self) -> String {
        let mut parts = Vec::new();
        if !self.missing.is_empty() {
            parts.push(format!("missing={}", self.missing.join(",")));
        }
        if !self.mismatches.is_empty() {
            let m: Vec<String> = self
                .mismatches
                .iter()
                .map(|(f, e, a)| format!("{f}:{e}!={a}"))
                .collect();
            parts.push(format!("type_mismatch={}", m.join(",")));
        }
        parts.join(" ")
    }
}

/// Check `args` against a tool's parameter schema, as at PR #664 (a `type` list is not read).
pub fn check(schema: &Value, args: &Value) -> Findings {
    check_as(schema, args, false)
}

/// Check `args` against a tool's parameter schema; with `union_types` a `type` list passes a
/// value of any listed type (its label is the types joined by ` | `), and a list naming no type
/// fails every value (labelled `unknown`); a `type` that is neither a string nor a list is not
/// checked.
pub fn check_as(schema: &Value, args: &Value, union_types: bool) -> Findings {
    let mut out = Findings::default();
    let Value::Object(schema) = schema else {
        return out;
    };
    let required: Vec<&str> = schema
        .field("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let properties = schema.field("properties").and_then(Value::as_object);
    if required.is_empty() && properties.is_none() {
        return out;
    }
    let Value::Object(args) = args else {
        out.missing = required.iter().map(|s| (*s).to_owned()).collect();
        return out;
    };
    for field in &required {
        if args.field(field).is_none_or(Value::is_null) {
            out.missing.push((*field).to_owned());
        }
    }
    for (field, prop) in properties.into_iter().flatten() {
        let Some(value) = args.field(field).filter(|v| !v.is_null()) else {
            continue;
        };
        let (label, passes) = match prop.field("type") {
            Some(Value::String(t)) => (t.clone(), type_matches(t, value)),
            Some(Value::Array(types)) if union_types => {
                let names: Vec<&str> = types.iter().filter_map(Value::as_str).collect();
                let label = if names.is_empty() {
                    "unknown".to_owned()
                } else {
                    names.join(" | ")
                };
                (label, names.iter().any(|t| type_matches(t, value)))
            }
            // Neither a string nor a list: nothing to check (upstream's `type_matches` passes it).
            _ => continue,
        };
        if !passes {
            out.mismatches
                .push((field.clone(), label, kind_name(value).to_owned()));
        }
    }
    out
}

fn type_matches(expected: &str, value: &Value) -> bool {
    match expected {
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        "number" => value.is_number(),
        "integer" => {
            value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        "null" => value.is_null(),
        _ => true,
    }
}

/// Upstream's `coerce_scalar_args` (`2feb400e`): at the top level only, a string value of a
/// property typed `boolean`, `integer` or `number` (alone or in a list with others, `null`
/// included, but never beside `string`) that parses cleanly once trimmed is replaced by the
/// parsed value — `true`/`false` in any case, integers as i64 then u64, numbers as finite
/// floats. Strings that do not parse (an empty one too) stay for the validator to refuse.
/// `None`: nothing changed.
pub fn coerce_scalars(schema: &Value, args: &Value) -> Option<Value> {
    let properties = schema.field("properties")?.as_object()?;
    let Value::Object(map) = args else {
        return None;
    };
    let mut out = map.clone();
    let mut changed = false;
    for (field, prop) in properties {
        let Some(Value::String(raw)) = map.field(field) else {
            continue;
        };
        let text = raw.trim();
        if text.is_empty() {
            continue;
        }
        let types: Vec<&str> = match prop.field("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).collect(),
            _ => continue,
        };
        if types.contains(&"string") {
            continue;
        }
        let parsed = types.iter().find_map(|t| match *t {
            "boolean" => match text.to_ascii_lowercase().as_str() {
                "true" => Some(Value::Bool(true)),
                "false" => Some(Value::Bool(false)),
                _ => None,
            },
            "integer" => text
                .parse::<i64>()
                .map(Value::from)
                .or_else(|_| text.parse::<u64>().map(Value::from))
                .ok(),
            "number" => text
                .parse::<f64>()
                .ok()
                .filter(|f| f.is_finite())
                .and_then(|f| serde_json::Number::from_f64(f).map(Value::Number)),
            _ => None,
        });
        if let Some(value) = parsed {
            out.insert(field.clone(), value);
            changed = true;
        }
    }
    changed.then_some(Value::Object(out))
}

/// The message the model receives for a rejected call.
pub fn message(
    config: &ValidationConfig,
    tool: &str,
    findings: &Findings,
    args: &Value,
    decoded: Option<&str>,
) -> String {
    let mut lines = vec![fill(&config.header, &[("tool", tool)])];
    if !findings.missing.is_empty() {
        let names: Vec<String> = findings.missing.iter().map(|m| format!("`{m}`")).collect();
        lines.push(format!("Missing required field(s): {}.", names.join(", ")));
    }
    for (field, expected, actual) in &findings.mismatches {
        lines.push(format!(
            "Field `{field}` has wrong type: expected `{expected}`, got `{actual}`."
        ));
    }
    lines.push(format!("You sent: {}", compact(args)));
    if let Some(line) = decoded {
        lines.push(line.to_owned());
    }
    lines.push(config.footer.clone());
    lines.join("\n")
}

/// The validator as a policy.
pub(super) struct Validator {
    config: ValidationConfig,
}

impl Validator {
    pub(super) fn new(config: ValidationConfig) -> Self {
        Self { config }
    }
}

impl Policy for Validator {
    fn id(&self) -> &'static str {
        "moltis-validation"
    }

    fn validate(
        &self,
        name: &str,
        args: &Value,
        tool: Option<&ToolSpec>,
        decoded: Option<&str>,
    ) -> Option<String> {
        // Calls to unknown tools are not validated; they fail at dispatch.
        let tool = tool?;
        let findings = check_as(&tool.schema, args, self.config.union_types);
        let decoded = decoded.filter(|_| self.config.decode_status);
        (!findings.is_ok()).then(|| message(&self.config, name, &findings, args, decoded))
    }
}

/// How a text that was not JSON as it came was decoded: Moltis' name for it, and serde's
/// parse error when there was one.
pub type Decoding = (&'static str, Option<String>);

/// A call's raw argument text read as the runtime reads it: the arguments (`{}` for a blank
/// text; with `malformed`, `{}`, a repair or an error for a text that is not JSON), and, when
/// the text was not JSON as it came, how it was decoded (Moltis' decode diagnostic since
/// #983: `empty-string`, `repaired-string` or `malformed-string`, the last two with serde's
/// parse error).
pub fn decode_raw(
    raw: &str,
    malformed: MalformedArgs,
) -> (Result<Value, String>, Option<Decoding>) {
    let empty = || Value::Object(serde_json::Map::new());
    if raw.trim().is_empty() {
        return (Ok(empty()), Some(("empty-string", None)));
    }
    match serde_json::from_str::<Value>(raw) {
        Ok(v) => (Ok(v), None),
        Err(e) => {
            let (value, how) = match malformed {
                MalformedArgs::EmptyObject => (Ok(empty()), "malformed-string"),
                MalformedArgs::Repair => match crate::json::repair(raw) {
                    Some(v) => (Ok(v), "repaired-string"),
                    None => (Ok(empty()), "malformed-string"),
                },
                MalformedArgs::Error => (
                    Err(format!("invalid JSON in tool arguments: {e}")),
                    "malformed-string",
                ),
            };
            (value, Some((how, Some(e.to_string()))))
        }
    }
}

/// The line a rejection adds about how a call's arguments were decoded ([`decode_raw`]), or
/// `None` when they came as JSON: `without_text` is a streamed call that received no
/// argument text (read as the empty string).
pub fn decode_status(
    args: &Arguments,
    without_text: bool,
    malformed: MalformedArgs,
) -> Option<String> {
    let raw = match args {
        Arguments::Parsed(_) if without_text => "",
        Arguments::Parsed(_) => return None,
        Arguments::Raw(raw) => raw.as_str(),
    };
    let (how, parse_error) = decode_raw(raw, malformed).1?;
    let mut line = format!(
        "Argument decode status: arg_decode={how} raw_len={}",
        raw.len()
    );
    if let Some(e) = parse_error {
        line.push_str(" parse_error=");
        line.push_str(&e);
    }
    line.push('.');
    // The raw text's first 160 characters, `...` after them when there are more.
    if !raw.is_empty() {
        line.push_str(" Raw argument preview: ");
        line.extend(raw.chars().take(160));
        if raw.chars().nth(160).is_some() {
            line.push_str("...");
        }
    }
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Config;
    use serde_json::json;

    fn exec_schema() -> Value {
        json!({"type":"object","properties":{"command":{"type":"string"},"timeout":{"type":"integer"}},"required":["command"]})
    }

    #[test]
    fn empty_schema_always_passes() {
        assert!(check(&json!({}), &json!({})).is_ok());
        assert!(check(&json!({}), &json!({"x": 1})).is_ok());
    }

    #[test]
    fn schema_without_required_passes_on_empty_args() {
        let schema = json!({"type":"object","properties":{"q":{"type":"string"}}});
        assert!(check(&schema, &json!({})).is_ok());
    }

    #[test]
    fn missing_required_field_is_reported() {
        assert_eq!(check(&exec_schema(), &json!({})).missing, ["command"]);
    }

    #[test]
    fn null_field_counts_as_missing() {
        assert_eq!(
            check(&exec_schema(), &json!({"command": null})).missing,
            ["command"]
        );
    }

    #[test]
    fn wrong_type_is_reported() {
        let f = check(&exec_schema(), &json!({"command": 42}));
        assert_eq!(
            f.mismatches,
            [("command".into(), "string".into(), "number".into())]
        );
    }

    #[test]
    fn multiple_required_missing() {
        let schema = json!({"type":"object","properties":{},"required":["a","b"]});
        assert_eq!(check(&schema, &json!({})).missing.len(), 2);
    }

    #[test]
    fn valid_args_pass() {
        assert!(check(&exec_schema(), &json!({"command": "ls", "timeout": 5})).is_ok());
    }

    #[test]
    fn optional_field_wrong_type_still_reports() {
        let f = check(&exec_schema(), &json!({"command": "ls", "timeout": "slow"}));
        assert_eq!(
            f.mismatches,
            [("timeout".into(), "integer".into(), "string".into())]
        );
    }

    #[test]
    fn non_object_args_with_required_fails() {
        assert_eq!(check(&exec_schema(), &json!("ls")).missing, ["command"]);
    }

    #[test]
    fn unknown_type_is_permissive() {
        let schema = json!({"type":"object","properties":{"x":{"type":"frobnicate"}}});
        assert!(check(&schema, &json!({"x": 1})).is_ok());
    }

    #[test]
    fn array_and_object_types() {
        let schema = json!({"type":"object","properties":{"items":{"type":"array"},"opts":{"type":"object"}}});
        let f = check(&schema, &json!({"items": "a,b", "opts": {}}));
        assert_eq!(f.mismatches.len(), 1);
        assert_eq!(f.mismatches[0].0, "items");
    }

    #[test]
    fn llm_error_message_is_directive() {
        let cfg = Config::moltis().validation;
        let f = check(&exec_schema(), &json!({}));
        let m = message(&cfg, "exec", &f, &json!({}), None);
        for needle in ["exec", "command", "Do not retry", "respond in plain text"] {
            assert!(m.contains(needle), "{needle:?} not in {m}");
        }
        assert_eq!(
            m,
            "Tool call rejected before execution by `exec`.\nMissing required field(s): `command`.\nYou sent: {}\nDo not retry with the same arguments. If you do not know what arguments to use, respond in plain text and ask the user for clarification."
        );
    }

    #[test]
    fn integer_accepts_integer_valued_floats() {
        let s = exec_schema();
        assert!(check(&s, &json!({"command": "x", "timeout": 30})).is_ok());
        assert!(check(&s, &json!({"command": "x", "timeout": 30.0})).is_ok());
        assert_eq!(
            check(&s, &json!({"command": "x", "timeout": 30.5}))
                .mismatches
                .len(),
            1
        );
    }

    #[test]
    fn short_summary_captures_both_kinds() {
        let schema =
            json!({"type":"object","properties":{"b":{"type":"integer"}},"required":["a"]});
        let s = check(&schema, &json!({"b": "x"})).short_summary();
        assert!(s.contains("missing=a"), "{s}");
        assert!(s.contains("type_mismatch=b:integer!=string"), "{s}");
    }

    // Moltis' `main` (the `moltis-head` profile): runtimes.md Moltis §5.3, HEAD rows.

    #[test]
    fn union_type_array_accepts_any_matching_type() {
        let schema = json!({"type":"object","properties":{
            "a":{"type":["object","string","integer"]},"b":{"type":["string","null"]}}});
        for args in [
            json!({"a": {}, "b": "x"}),
            json!({"a": "s", "b": null}),
            json!({"a": 3}),
        ] {
            assert!(check_as(&schema, &args, true).is_ok(), "{args}");
        }
        // At PR #664 a type list is not read: anything passes.
        assert!(check(&schema, &json!({"a": false})).is_ok());
    }

    #[test]
    fn union_type_array_reports_mismatch_when_nothing_matches() {
        let schema =
            json!({"type":"object","properties":{"a":{"type":["object","string","integer"]}}});
        let f = check_as(&schema, &json!({"a": false}), true);
        assert_eq!(
            f.mismatches,
            vec![(
                "a".to_owned(),
                "object | string | integer".to_owned(),
                "boolean".to_owned()
            )]
        );
        // A list naming no type fails every present value; a `type` that is neither a string
        // nor a list is not checked.
        let none = json!({"type":"object","properties":{"a":{"type":[1, 2]}}});
        let f = check_as(&none, &json!({"a": "x"}), true);
        assert_eq!(f.mismatches[0].1, "unknown");
        let odd = json!({"type":"object","properties":{"a":{"type":{"x":1}}}});
        assert!(check_as(&odd, &json!({"a": "x"}), true).is_ok());
    }

    fn coerce(schema: Value, args: Value) -> Value {
        coerce_scalars(&schema, &args).unwrap_or(args)
    }

    #[test]
    fn coerces_browser_style_stringified_scalars() {
        let schema = json!({"type":"object","properties":{
            "headless":{"type":"boolean"},"timeout_ms":{"type":"integer"},"url":{"type":"string"}},
            "required":["url"]});
        let args = coerce(
            schema.clone(),
            json!({"url": "https://example.com", "headless": "true", "timeout_ms": "5000"}),
        );
        assert_eq!(
            args,
            json!({"url": "https://example.com", "headless": true, "timeout_ms": 5000})
        );
        assert!(check_as(&schema, &args, true).is_ok());
    }

    #[test]
    fn coerces_false_and_negative_and_float() {
        let schema = json!({"type":"object","properties":{
            "flag":{"type":"boolean"},"delta":{"type":"integer"},"ratio":{"type":"number"}}});
        let args = coerce(
            schema,
            json!({"flag": " False ", "delta": " -12", "ratio": "0.5 "}),
        );
        assert_eq!(args, json!({"flag": false, "delta": -12, "ratio": 0.5}));
    }

    #[test]
    fn leaves_string_union_fields_alone() {
        let schema = json!({"type":"object","properties":{"n":{"type":["integer","string"]}}});
        assert_eq!(coerce_scalars(&schema, &json!({"n": "5"})), None);
    }

    #[test]
    fn leaves_unparseable_strings_for_the_validator() {
        let schema = json!({"type":"object","properties":{
            "n":{"type":"integer"},"f":{"type":"number"},"b":{"type":"boolean"}}});
        for args in [
            json!({"n": "five"}),
            json!({"n": "   "}),
            json!({"f": "NaN"}),
            json!({"f": "inf"}),
            json!({"b": "yes"}),
        ] {
            assert_eq!(coerce_scalars(&schema, &args), None, "{args}");
            assert!(!check_as(&schema, &args, true).is_ok(), "{args}");
        }
    }

    #[test]
    fn coerces_into_nullable_numeric_union() {
        let schema = json!({"type":"object","properties":{"page":{"type":["integer","null"]}}});
        assert_eq!(coerce(schema, json!({"page": "14"})), json!({"page": 14}));
        let big = json!({"type":"object","properties":{"id":{"type":"integer"}}});
        assert_eq!(
            coerce(big, json!({"id": "18446744073709551615"})),
            json!({"id": u64::MAX})
        );
    }

    #[test]
    fn coercion_is_a_noop_for_unstructured_inputs() {
        let schema = json!({"type":"object","properties":{"n":{"type":"integer"}}});
        for args in [json!("5"), json!(5), json!(["5"]), json!(null)] {
            assert_eq!(coerce_scalars(&schema, &args), None, "{args}");
        }
        assert_eq!(
            coerce_scalars(&json!({"type": "object"}), &json!({"n": "5"})),
            None
        );
        // Nested values are not coerced: the top level only.
        let nested = json!({"type":"object","properties":{"o":{"type":"object","properties":{"n":{"type":"integer"}}}}});
        assert_eq!(coerce_scalars(&nested, &json!({"o": {"n": "5"}})), None);
    }

    /// Upstream's `validation_error_can_include_argument_decode_diagnostic` (#983) and the
    /// decode summaries of `model/mod.rs`'s tests, re-expressed.
    #[test]
    fn a_rejection_says_how_arguments_that_were_not_json_were_decoded() {
        let cfg = Config::moltis_head().validation;
        let schema = json!({"type": "object", "required": ["command"],
            "properties": {"command": {"type": "string"}}});
        let tool = ToolSpec {
            name: "exec".to_owned(),
            description: String::new(),
            schema: schema.into(),
        };
        let empty = Arguments::parsed(json!({}));
        let line = decode_status(&empty, true, MalformedArgs::Repair).unwrap();
        assert_eq!(
            line,
            "Argument decode status: arg_decode=empty-string raw_len=0."
        );
        let v = Validator::new(cfg.clone());
        let msg = v
            .validate("exec", &json!({}), Some(&tool), Some(&line))
            .unwrap();
        assert!(
            msg.ends_with(&format!("You sent: {{}}\n{line}\n{}", cfg.footer)),
            "{msg}"
        );
        assert!(!msg.contains("preview"), "{msg}");
        // Arguments that came as JSON say nothing.
        assert_eq!(decode_status(&empty, false, MalformedArgs::Repair), None);
        let raw = |s: &str| Arguments::Raw(s.to_owned());
        assert_eq!(
            decode_status(&raw(r#"{"a":1}"#), false, MalformedArgs::Repair),
            None
        );
        // Text that is only white space is the empty string, its preview shown.
        assert_eq!(
            decode_status(&raw("  "), false, MalformedArgs::Repair).unwrap(),
            "Argument decode status: arg_decode=empty-string raw_len=2. Raw argument preview:   "
        );
        // Repaired, and beyond repair: the parse error and the text.
        assert_eq!(
            decode_status(
                &raw(r#"{"command":"git status""#),
                false,
                MalformedArgs::Repair
            )
            .unwrap(),
            "Argument decode status: arg_decode=repaired-string raw_len=23 parse_error=EOF \
             while parsing an object at line 1 column 23. Raw argument preview: \
             {\"command\":\"git status\""
        );
        assert_eq!(
            decode_status(&raw("not json at all"), false, MalformedArgs::Repair).unwrap(),
            "Argument decode status: arg_decode=malformed-string raw_len=15 parse_error=expected \
             ident at line 1 column 2. Raw argument preview: not json at all"
        );
        // A runtime that does not repair calls every bad text malformed.
        assert!(
            decode_status(
                &raw(r#"{"command":"ls""#),
                false,
                MalformedArgs::EmptyObject
            )
            .unwrap()
            .contains("arg_decode=malformed-string")
        );
        // The preview is the first 160 characters, `...` after them.
        let long = format!("{{\"command\": \"{}", "é".repeat(200));
        let line = decode_status(&raw(&long), false, MalformedArgs::EmptyObject).unwrap();
        let preview = line.split("Raw argument preview: ").nth(1).unwrap();
        assert_eq!(preview.chars().count(), 163);
        assert!(preview.ends_with("éé..."), "{preview}");
        // A profile without the diagnostic leaves it out.
        let before = Validator::new(Config::moltis().validation);
        let msg = before
            .validate("exec", &json!({}), Some(&tool), Some(&line))
            .unwrap();
        assert!(!msg.contains("Argument decode status"), "{msg}");
    }
}
