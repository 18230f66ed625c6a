//! OpenAI chat message lists: `{role, content, tool_calls: [{id, function: {name, arguments}}]}`
//! with `{role: "tool", tool_call_id, content}` results, and the legacy `function_call` /
//! `{role: "function", name, content}` pair. Shared by tau-bench and ToolBench.
//!
//! A file is a message list (one run), a run object `{id?, messages, success?, reward?,
//! termination?}`, or a list of run objects; in JSON lines, one run object a line, or one
//! message a line (the whole file one run).
//! Success: `success`, else `reward == 1`, else unknown. A result failed when it says so
//! (`is_error: true`, or `error: true`), else when its text starts with `Error`.

use super::{Reader, Root, Run, TraceBuilder, content_text, error_prefixed, parse_args, typed};
use crate::diagnostic::Diagnostic;
use crate::scenario::OutcomeKind;
use serde::Deserialize;
use serde_json::Value;

/// One OpenAI-style message.
#[derive(Debug, Deserialize)]
pub struct Message {
    /// `system`, `user`, `assistant`, `tool` or `function`.
    pub role: String,
    /// Text, typed parts or null.
    #[serde(default)]
    pub content: Option<Value>,
    /// Tool calls of an assistant message.
    #[serde(default)]
    pub tool_calls: Option<Vec<ToolCall>>,
    /// The legacy single call.
    #[serde(default)]
    pub function_call: Option<FunctionCall>,
    /// The call a tool result answers.
    #[serde(default)]
    pub tool_call_id: Option<String>,
    /// Tool name of a result.
    #[serde(default)]
    pub name: Option<String>,
    /// Explicit failure flag.
    #[serde(default)]
    pub is_error: Option<bool>,
    /// Explicit failure flag (some exporters).
    #[serde(default)]
    pub error: Option<Value>,
    /// Token usage of an assistant message, when recorded.
    #[serde(default)]
    pub usage: Option<Value>,
}

/// A tool call.
#[derive(Debug, Deserialize)]
pub struct ToolCall {
    /// Call id.
    #[serde(default)]
    pub id: Option<String>,
    /// The function.
    pub function: FunctionCall,
}

/// A function call: name and arguments (a JSON string, or an object).
#[derive(Debug, Deserialize)]
pub struct FunctionCall {
    /// Tool name.
    pub name: String,
    /// Arguments.
    #[serde(default)]
    pub arguments: Option<Value>,
}

/// `(input, output)` tokens from an OpenAI `usage` object.
pub fn tokens(usage: Option<&Value>) -> (u64, u64) {
    let get = |k: &str| {
        usage
            .and_then(|u| u.get(k))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    (get("prompt_tokens"), get("completion_tokens"))
}

/// Fill `b` from a message list. `failed` decides whether a result's text is a failure when
/// the message carries no explicit flag.
pub fn fill(b: &mut TraceBuilder, messages: &[Message], failed: &dyn Fn(&str) -> bool) {
    for m in messages {
        let text = content_text(m.content.as_ref());
        match m.role.as_str() {
            "user" => b.user(&text),
            "assistant" => {
                let mut calls = Vec::new();
                for c in m.tool_calls.iter().flatten() {
                    let id =
                        c.id.clone()
                            .unwrap_or_else(|| format!("call_{}", b.calls() + calls.len()));
                    calls.push((
                        id,
                        c.function.name.clone(),
                        parse_args(c.function.arguments.as_ref()),
                    ));
                }
                if let Some(f) = &m.function_call {
                    let id = format!("call_{}", b.calls() + calls.len());
                    calls.push((id, f.name.clone(), parse_args(f.arguments.as_ref())));
                }
                b.response(&text, calls, tokens(m.usage.as_ref()));
            }
            "tool" | "function" => {
                let id = m
                    .tool_call_id
                    .clone()
                    .or_else(|| b.pending_id(m.name.as_deref()))
                    .or_else(|| b.pending_id(None));
                let explicit = m
                    .is_error
                    .or_else(|| m.error.as_ref().and_then(Value::as_bool));
                let bad = explicit.unwrap_or_else(|| failed(&text));
                if let Some(id) = id {
                    b.result(&id, &text, bad);
                }
            }
            // System prompts and unknown roles carry no agent behaviour.
            _ => {}
        }
    }
}

#[derive(Debug)]
enum Doc<M> {
    Messages(Vec<M>),
    One(RunDoc<M>),
    Many(Vec<RunDoc<M>>),
}

/// A run object: `{id?, messages, success?, reward?, termination?}` (Anthropic too).
#[derive(Debug, Deserialize)]
pub(super) struct RunDoc<M> {
    #[serde(default)]
    pub(super) id: Option<Value>,
    pub(super) messages: Vec<M>,
    #[serde(default)]
    pub(super) success: Option<bool>,
    #[serde(default)]
    pub(super) reward: Option<f64>,
    #[serde(default)]
    pub(super) termination: Option<String>,
}

/// The success label of a run object.
fn label(success: Option<bool>, reward: Option<f64>) -> Option<bool> {
    success.or_else(|| reward.map(|r| (r - 1.0).abs() < 1e-9))
}

fn run_of<M>(
    rel: &str,
    doc: RunDoc<M>,
    idx: Option<usize>,
    fmt: &'static str,
    fill_run: &dyn Fn(&mut TraceBuilder, &[M]),
) -> Run {
    let suffix = match (&doc.id, idx) {
        (Some(Value::String(s)), _) => Some(s.clone()),
        (Some(v), _) => Some(crate::json::compact(v)),
        (None, Some(i)) => Some(i.to_string()),
        (None, None) => None,
    };
    let mut b = TraceBuilder::new(fmt, "");
    fill_run(&mut b, &doc.messages);
    Run {
        id: suffix.map_or_else(|| rel.to_owned(), |s| format!("{rel}#{s}")),
        source: fmt.to_owned(),
        success: label(doc.success, doc.reward),
        termination: doc.termination,
        events: b.finish(OutcomeKind::Response, None),
    }
}

/// The OpenAI reader: chat message lists (JSON or JSON lines; Anthropic's are detected before
/// it).
pub const READER: Reader = Reader {
    name: "openai",
    root: Root::Any,
    detect: |doc| super::message_list(doc).is_some(),
    convert,
    whole_file: None,
};

/// Convert a parsed OpenAI document.
pub fn convert(doc: Value, rel: &str, text: &str) -> Result<Vec<Run>, Diagnostic> {
    convert_lists(doc, rel, text, READER.name, &|b, m: &[Message]| {
        fill(b, m, &error_prefixed);
    })
}

/// Convert a document of message lists of type `M` (OpenAI or Anthropic messages).
pub(super) fn convert_lists<M: serde::de::DeserializeOwned>(
    doc: Value,
    rel: &str,
    text: &str,
    fmt: &'static str,
    fill_run: &dyn Fn(&mut TraceBuilder, &[M]),
) -> Result<Vec<Run>, Diagnostic> {
    // Pick the shape by its first element so a bad message is located in the right type.
    let parsed: Doc<M> = match &doc {
        Value::Array(items) if items.first().is_some_and(|f| f.get("messages").is_some()) => {
            Doc::Many(typed(doc, text, fmt)?)
        }
        Value::Array(_) => Doc::Messages(typed(doc, text, fmt)?),
        _ => Doc::One(typed(doc, text, fmt)?),
    };
    Ok(match parsed {
        Doc::Messages(messages) => {
            let doc = RunDoc {
                id: None,
                messages,
                success: None,
                reward: None,
                termination: None,
            };
            vec![run_of(rel, doc, None, fmt, fill_run)]
        }
        Doc::One(d) => vec![run_of(rel, d, None, fmt, fill_run)],
        Doc::Many(ds) => ds
            .into_iter()
            .enumerate()
            .map(|(i, d)| run_of(rel, d, Some(i), fmt, fill_run))
            .collect(),
    })
}
