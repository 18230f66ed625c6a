//! tau2-bench results: `{info, tasks, simulations: [{id, task_id, trial, termination_reason,
//! reward_info: {reward}, messages}]}`.
//!
//! Calls are `{id, name, arguments: <object>, requestor}`; calls whose `requestor` is `user`
//! (the simulated user's own device tools in telecom runs) are not the agent's and are left
//! out, with their results. Results are `{role: "tool", id, content, error}`: failed when the
//! `error` flag is true (also the string `"True"`, as some files store it), or, where the file
//! has no flag (ToolOrchestra's trimmed files), when the text starts with `Error`.
//! Success: `reward_info.reward == 1`. Termination: `termination_reason`. Tokens: the
//! assistant message's `usage` when kept. Run id `<file>#<task_id>|trial<trial>|<first 8 of
//! the simulation id>`.

use super::openai::tokens;
use super::{Reader, Root, Run, TraceBuilder, content_text, error_prefixed, parse_args, typed};
use crate::diagnostic::Diagnostic;
use crate::scenario::OutcomeKind;
use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Deserialize)]
struct Doc {
    simulations: Vec<Simulation>,
}

#[derive(Debug, Deserialize)]
struct Simulation {
    id: String,
    task_id: Value,
    #[serde(default)]
    trial: Option<u64>,
    #[serde(default)]
    termination_reason: Option<String>,
    #[serde(default)]
    reward_info: Option<RewardInfo>,
    messages: Vec<Message>,
}

#[derive(Debug, Deserialize)]
struct RewardInfo {
    #[serde(default)]
    reward: Option<f64>,
}

#[derive(Debug, Deserialize)]
struct Message {
    role: String,
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    tool_calls: Option<Vec<Call>>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    requestor: Option<String>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default)]
    usage: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct Call {
    id: String,
    name: String,
    #[serde(default)]
    arguments: Option<Value>,
    #[serde(default)]
    requestor: Option<String>,
}

fn flag(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::String(s) if s.eq_ignore_ascii_case("true") => Some(true),
        Value::String(s) if s.eq_ignore_ascii_case("false") => Some(false),
        _ => None,
    }
}

/// The tau2 reader: a results object (`{info, tasks, simulations}`), or a bare array of
/// simulations (some leaderboard submissions: runs with a `termination_reason` and their own
/// `messages`).
pub const READER: Reader = Reader {
    name: "tau2",
    root: Root::Either("an object or an array of simulations"),
    detect: |doc| match doc {
        Value::Object(o) => o.contains_key("simulations"),
        Value::Array(items) => items
            .first()
            .and_then(Value::as_object)
            .is_some_and(|first| {
                first.contains_key("termination_reason") && first.contains_key("messages")
            }),
        _ => false,
    },
    convert,
    whole_file: None,
};

/// Convert a parsed tau2 file.
pub fn convert(doc: Value, rel: &str, text: &str) -> Result<Vec<Run>, Diagnostic> {
    // A bare array of simulations reads as a results file holding only them.
    let doc = match doc {
        Value::Array(simulations) => serde_json::json!({ "simulations": simulations }),
        doc => doc,
    };
    let d: Doc = typed(doc, text, READER.name)?;
    Ok(d.simulations
        .into_iter()
        .map(|s| simulation(rel, s))
        .collect())
}

fn simulation(rel: &str, s: Simulation) -> Run {
    let mut b = TraceBuilder::new(READER.name, "");
    for m in &s.messages {
        let text = content_text(m.content.as_ref());
        let by_user = m.requestor.as_deref() == Some("user");
        match m.role.as_str() {
            // The user's own tool calls are not agent behaviour; its words are.
            "user" if !text.is_empty() || m.tool_calls.as_ref().is_none_or(Vec::is_empty) => {
                b.user(&text);
            }
            "assistant" => {
                let calls = m
                    .tool_calls
                    .iter()
                    .flatten()
                    .filter(|c| c.requestor.as_deref() != Some("user"))
                    .map(|c| {
                        (
                            c.id.clone(),
                            c.name.clone(),
                            parse_args(c.arguments.as_ref()),
                        )
                    })
                    .collect();
                b.response(&text, calls, tokens(m.usage.as_ref()));
            }
            "tool" if !by_user => {
                let failed = m
                    .error
                    .as_ref()
                    .and_then(flag)
                    .unwrap_or_else(|| error_prefixed(&text));
                if let Some(id) = &m.id {
                    b.result(id, &text, failed);
                }
            }
            _ => {}
        }
    }
    let task = match &s.task_id {
        Value::String(t) => t.clone(),
        v => crate::json::compact(v),
    };
    let short: String = s.id.chars().take(8).collect();
    Run {
        id: format!("{rel}#{task}|trial{}|{short}", s.trial.unwrap_or(0)),
        source: READER.name.to_owned(),
        success: s
            .reward_info
            .and_then(|r| r.reward)
            .map(|r| (r - 1.0).abs() < 1e-9),
        termination: s.termination_reason.clone(),
        events: b.finish(
            if s.termination_reason.as_deref() == Some("max_steps") {
                OutcomeKind::MaxIterations
            } else {
                OutcomeKind::Response
            },
            s.termination_reason,
        ),
    }
}
