//! Tools as the engine sees them: the [`ToolRunner`] trait and the scenario's scripted tools,
//! whose outcomes are matched on the call's arguments (first match wins, then the default).

use crate::json::{canonical, contains};
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
    /// Every tool the runtime has, in order.
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

fn matches(rule: &OutcomeDef, args: &Value, nth: u64) -> bool {
    rule.args
        .as_ref()
        .is_none_or(|a| canonical(a) == canonical(args))
        && rule
            .args_contain
            .as_ref()
            .is_none_or(|sub| contains(args, &Value::Object(sub.clone())))
        && rule.on_call.is_none_or(|b| b.holds(nth))
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
            .find(|rule| matches(rule, args, nth))
            .or(def.default.as_ref())
            .map(|outcome| result(def, outcome))
            .ok_or_else(|| UnscriptedCall {
                tool: name.to_owned(),
                args: canonical(args),
                nth,
            })
    }
}
