//! Tools as the engine sees them: the [`ToolRunner`] trait and the scenario's scripted tools,
//! whose outcomes are matched on the call's arguments (first match wins, then the default).

use crate::json::{Lookup, canonical, contains_fields, same_canonical};
use crate::llm::ToolSpec;
use crate::scenario::{OutcomeDef, ToolDef};
use serde_json::Value;

/// How a tool call ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolStatus {
    /// Success with output text.
    Ok(String),
    /// Failure with error text.
    Error(String),
    /// Failure without error text.
    Fail,
}

/// A tool call's result and its virtual latency.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolResult {
    /// Outcome.
    pub status: ToolStatus,
    /// Virtual milliseconds it took.
    pub latency_ms: u64,
}

/// A call the script has no outcome for: a scenario bug, reported as bad input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "tool `{tool}` has no scripted outcome for arguments {args} (call {nth} of this tool) and no `default`"
)]
pub struct UnscriptedCall {
    /// Tool name.
    pub tool: String,
    /// Canonical arguments.
    pub args: String,
    /// 1-based call count of this tool.
    pub nth: u64,
}

/// Executes tool calls.
pub trait ToolRunner {
    /// Every tool the runtime has, in order: the same list, in the same place, for the whole
    /// run (the engine offers it as it is, and a model may keep what it measured of it for the
    /// run's conversation, [`crate::llm::ModelRequest::lineage`]).
    fn specs(&self) -> &[ToolSpec];
    /// Run a call to a known tool.
    fn run(&mut self, name: &str, args: &Value) -> Result<ToolResult, UnscriptedCall>;
    /// Whether the runtime asks for approval before running this tool.
    fn needs_approval(&self, _name: &str) -> bool {
        false
    }
}

/// The scenario's scripted tools.
pub struct ScriptedTools<'s> {
    defs: &'s [ToolDef],
    specs: Vec<ToolSpec>,
    calls: Vec<u64>,
}

impl<'s> ScriptedTools<'s> {
    /// Tools answering from their definitions.
    pub fn new(defs: &'s [ToolDef]) -> Self {
        let specs = defs
            .iter()
            .map(|d| ToolSpec {
                name: d.name.clone(),
                description: d.description.clone(),
                schema: d.schema.clone(),
            })
            .collect();
        Self {
            defs,
            specs,
            calls: vec![0; defs.len()],
        }
    }
}

fn matches(rule: &OutcomeDef, schema: &Value, args: &Value, nth: u64) -> bool {
    rule.args_invalid
        .is_none_or(|b| b == breaks_schema(schema, args))
        && rule.args.as_ref().is_none_or(|a| same_canonical(a, args))
        && rule
            .args_contain
            .as_ref()
            .is_none_or(|want| contains_fields(args, want))
        && rule.on_call.is_none_or(|b| b.holds(nth))
}

/// Do `args` break `schema` as a tool's validation sees it: no object, a required field
/// missing, or a field whose value is not of the JSON type its property names?
pub fn breaks_schema(schema: &Value, args: &Value) -> bool {
    let Some(fields) = args.as_object() else {
        return true;
    };
    let missing = schema
        .at("required")
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .any(|r| fields.field(r).is_none());
    let mistyped = fields.iter().any(|(k, v)| {
        let wanted = schema.at("properties").at(k).at("type");
        let is = |t: &str| match t {
            "string" => v.is_string(),
            "integer" => v.is_i64() || v.is_u64(),
            "number" => v.is_number(),
            "boolean" => v.is_boolean(),
            "array" => v.is_array(),
            "object" => v.is_object(),
            "null" => v.is_null(),
            _ => true,
        };
        match wanted {
            Value::String(t) => !is(t),
            Value::Array(ts) => !ts.iter().filter_map(Value::as_str).any(is),
            _ => false,
        }
    });
    missing || mistyped
}

fn result(def: &ToolDef, outcome: &OutcomeDef) -> ToolResult {
    let status = match (&outcome.ok, &outcome.error) {
        (Some(ok), _) => ToolStatus::Ok(ok.clone()),
        (None, Some(err)) => ToolStatus::Error(err.clone()),
        (None, None) => ToolStatus::Fail,
    };
    ToolResult {
        status,
        latency_ms: outcome.latency_ms.unwrap_or(def.latency_ms),
    }
}

impl ToolRunner for ScriptedTools<'_> {
    fn specs(&self) -> &[ToolSpec] {
        &self.specs
    }

    fn needs_approval(&self, name: &str) -> bool {
        self.defs.iter().any(|d| d.name == name && d.needs_approval)
    }

    fn run(&mut self, name: &str, args: &Value) -> Result<ToolResult, UnscriptedCall> {
        let Some(i) = self.defs.iter().position(|d| d.name == name) else {
            // The engine checks names first; keep a clear error all the same.
            return Err(UnscriptedCall {
                tool: name.to_owned(),
                args: canonical(args),
                nth: 0,
            });
        };
        self.calls[i] += 1;
        let nth = self.calls[i];
        let def = &self.defs[i];
        def.outcomes
            .iter()
            .find(|rule| matches(rule, &def.schema, args, nth))
            .or(def.default.as_ref())
            .map(|outcome| result(def, outcome))
            .ok_or_else(|| UnscriptedCall {
                tool: name.to_owned(),
                args: canonical(args),
                nth,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_break_a_schema_as_a_tool_validation_sees_them() {
        let schema = serde_json::json!({"type": "object", "required": ["query", "limit"], "properties": {
            "query": {"type": "string"}, "limit": {"type": "integer"}, "tags": {"type": ["array", "null"]}}});
        let breaks = |v: Value| breaks_schema(&schema, &v);
        assert!(!breaks(serde_json::json!({"query": "a", "limit": 2})));
        assert!(!breaks(
            serde_json::json!({"query": "a", "limit": 2, "tags": null, "extra": 1})
        ));
        assert!(breaks(serde_json::json!({})));
        assert!(breaks(serde_json::json!({"limit": 2})));
        assert!(breaks(serde_json::json!({"query": 12345, "limit": 2})));
        assert!(breaks(serde_json::json!({"query": "a", "limit": 2.5})));
        assert!(breaks(
            serde_json::json!({"query": "a", "limit": 2, "tags": "x"})
        ));
        assert!(breaks(Value::String("{\"query\": ".into())));
        assert!(!breaks_schema(
            &serde_json::json!({}),
            &serde_json::json!({"anything": 1})
        ));
    }
}
