//! The serving state's tests: a scenario served to scripted requests of each API.

mod answers;
mod conversations;

use super::infer::{Context, infer};
use super::*;
use crate::scenario::SourceFormat;
use crate::trace::render_event;
use serde_json::json;

pub(super) const SCENARIO: &str = r#"
format = 1
description = "test"
family = "t"
profile = "none"
system = "sys"
user = "List the files."
config = { max_iterations = 3 }

[[tools]]
name = "exec"
description = "Run"
schema = { type = "object" }
latency_ms = 200
default = { error = "no" }

[model]
name = "m"
latency_ms = 1000

[[model.rules]]
when = { any_message_contains = "LOOP" }
reply = { text = "Sorry." }

[[model.rules]]
when = { last_tool_failed = true, tools_offered = false }
reply = { text = "Failed, no tools." }

[[model.rules]]
reply = { tool_calls = [{ name = "exec", args = {} }] }
"#;

pub(super) fn session(text: &str) -> Session {
    let cases = crate::scenario::load(text, SourceFormat::Toml, "t/x").expect("loads");
    Session::new(cases[0].clone())
}

pub(super) fn tool() -> Value {
    json!([{"type": "function", "function": {"name": "exec", "description": "Run", "parameters": {"type": "object"}}}])
}

/// An OpenAI request: the user's message, then `turns` rounds of our call and its result.
pub(super) fn openai(turns: usize, result: &str, extra: Option<&str>, tools: bool) -> Vec<u8> {
    let mut messages = vec![
        json!({"role": "system", "content": "sys"}),
        json!({"role": "user", "content": "List the files."}),
    ];
    for i in 0..turns {
        let id = format!("call_{i}");
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": id, "type": "function", "function": {"name": "exec", "arguments": "{}"}}]}));
        messages.push(json!({"role": "tool", "tool_call_id": id, "content": result}));
    }
    if let Some(e) = extra {
        messages.push(json!({"role": "user", "content": e}));
    }
    let mut body = json!({"model": "gpt", "messages": messages});
    if tools {
        body["tools"] = tool();
    }
    body.to_string().into_bytes()
}

pub(super) fn json_of(s: &HttpAnswer) -> &Value {
    match &s.body {
        AnswerBody::Json(v) => v,
        AnswerBody::Events { .. } | AnswerBody::Array { .. } => panic!("expected a JSON body"),
    }
}

pub(super) fn lines(s: &Session, i: usize) -> Vec<String> {
    let ctx = Context {
        profile: "exec",
        cap: s.cap(),
        tool_latency: [("exec".to_owned(), 200)].into(),
        killed: false,
    };
    infer(&ctx, &s.conversations()[i].requests)
        .iter()
        .map(|e| format!("{} {}", e.t_ms, render_event(&e.event)))
        .collect()
}
