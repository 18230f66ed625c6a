//! Moltis' pre-dispatch argument validation (`tool_arg_validator.rs` at PR #664).
//!
//! Deliberately narrow: required fields (null counts as missing) and top-level `type` strings.
//! A rejected call never runs: the engine records `tool_call_rejected` instead of start/end and
//! feeds the rejection message back to the model.

use super::{Policy, ValidationConfig, fill};
use crate::json::{compact, kind_name};
use crate::llm::ToolSpec;
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

/// Check `args` against a tool's parameter schema.
pub fn check(schema: &Value, args: &Value) -> Findings {
    let mut out = Findings::default();
    let Value::Object(schema) = schema else {
        return out;
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let properties = schema.get("properties").and_then(Value::as_object);
    if required.is_empty() && properties.is_none() {
        return out;
    }
    let Value::Object(args) = args else {
        out.missing = required.iter().map(|s| (*s).to_owned()).collect();
        return out;
    };
    for field in &required {
        if args.get(*field).is_none_or(Value::is_null) {
            out.missing.push((*field).to_owned());
        }
    }
    for (field, prop) in properties.into_iter().flatten() {
        let Some(value) = args.get(field).filter(|v| !v.is_null()) else {
            continue;
        };
        let Some(expected) = prop.get("type").and_then(Value::as_str) else {
            continue;
        };
        if !type_matches(expected, value) {
            out.mismatches.push((
                field.clone(),
                expected.to_owned(),
                kind_name(value).to_owned(),
            ));
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

/// The message the model receives for a rejected call.
pub fn message(config: &ValidationConfig, tool: &str, findings: &Findings, args: &Value) -> String {
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

    fn validate(&self, name: &str, args: &Value, tool: Option<&ToolSpec>) -> Option<String> {
        // Calls to unknown tools are not validated; they fail at dispatch.
        let tool = tool?;
        let findings = check(&tool.schema, args);
        (!findings.is_ok()).then(|| message(&self.config, name, &findings, args))
    }
}

/// Upstream's validator unit tests at PR #664, re-expressed.
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
        let m = message(&cfg, "exec", &f, &json!({}));
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
}
