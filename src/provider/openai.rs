//! OpenAI Chat Completions (and OpenAI-compatible servers): request JSON from an engine request;
//! a `chat.completion` body or a `chat.completion.chunk` stream into a response.
//!
//! Streams: `delta.content` pieces become text chunks; a `delta.tool_calls` entry with an `id`
//! starts a call at its `index`, its `function.arguments` pieces are argument deltas; a
//! `finish_reason` completes the open calls and finishes. Usage comes in the last chunk when
//! `stream_options.include_usage` was asked for. `[DONE]` ends the stream; a stream that stops
//! before it and before any finish reason was cut.

use super::StrField as _;
use super::{
    SseEvent, WireError, WireOptions, WireRequest, arguments, empty_response, malformed,
    options_of, streamed, tool_result_ids,
};
use crate::llm::{
    Finish, Message, ModelRequest, ModelResponse, Role, ToolCall, ToolSpec, Usage, stream::Chunk,
};
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

const NAME: &str = "openai";

/// The request body.
pub fn render_request(request: &ModelRequest<'_>, options: &WireOptions) -> Value {
    let ids = tool_result_ids(request.messages);
    let messages: Vec<Value> = request
        .messages
        .iter()
        .zip(ids)
        .map(|(m, id)| match (m.role, id) {
            (Role::Assistant, _) if !m.tool_calls.is_empty() => json!({
                "role": "assistant",
                "content": if m.content.is_empty() { Value::Null } else { Value::String(m.content.clone()) },
                "tool_calls": m.tool_calls.iter().map(|c| json!({
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments.text()},
                })).collect::<Vec<_>>(),
            }),
            (Role::Tool, Some(id)) => json!({"role": "tool", "tool_call_id": id, "content": m.content}),
            (Role::Tool, None) => json!({"role": "user", "content": m.content}),
            (role, _) => json!({"role": role.as_str(), "content": m.content}),
        })
        .collect();
    let mut body = Map::new();
    body.insert("model".into(), json!(options.model));
    body.insert("messages".into(), Value::Array(messages));
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.schema,
                }})
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(n) = options.max_tokens {
        body.insert("max_tokens".into(), json!(n));
    }
    if options.stream {
        body.insert("stream".into(), json!(true));
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    Value::Object(body)
}

fn finish_name(f: Finish) -> &'static str {
    match f {
        Finish::Stop | Finish::StopSequence => "stop",
        Finish::ToolUse => "tool_calls",
        Finish::Length => "length",
        Finish::ContentFilter => "content_filter",
    }
}

/// A request body as the engine's conversation.
pub fn parse_request(body: &Value) -> Result<WireRequest, WireError> {
    let options = options_of(body, NAME)?;
    let mut messages = Vec::new();
    for (i, m) in body
        .get("messages")
        .and_then(Value::as_array)
        .ok_or_else(|| malformed(NAME, "request has no `messages` array"))?
        .iter()
        .enumerate()
    {
        let role = match m.get("role").and_then(Value::as_str) {
            Some("system" | "developer") => Role::System,
            Some("user") => Role::User,
            Some("assistant") => Role::Assistant,
            Some("tool") => Role::Tool,
            other => return Err(malformed(NAME, format!("message {i} has role {other:?}"))),
        };
        let content = match m.get("content") {
            Some(Value::String(s)) => s.clone(),
            // Content parts: the text ones, joined.
            Some(Value::Array(parts)) => parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect(),
            _ => String::new(),
        };
        let mut message = Message::new(role, content);
        for c in m
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            message.tool_calls.push(ToolCall {
                id: c.str_or_empty("id").to_owned(),
                name: c.str_or_empty("/function/name").to_owned(),
                arguments: arguments(c.str_or_empty("/function/arguments")),
            });
        }
        messages.push(message);
    }
    let tools = body
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|t| ToolSpec {
            name: t.str_or_empty("/function/name").to_owned(),
            description: t.str_or_empty("/function/description").to_owned(),
            schema: t
                .pointer("/function/parameters")
                .cloned()
                .unwrap_or_else(|| json!({})),
        })
        .collect();
    Ok(WireRequest {
        options,
        messages,
        tools,
    })
}

fn usage_json(u: Usage) -> Value {
    json!({"prompt_tokens": u.input, "completion_tokens": u.output, "total_tokens": u.input + u.output})
}

/// A `chat.completion` body for an answer.
pub fn render_body(r: &ModelResponse, model: &str) -> Value {
    let mut message = json!({"role": "assistant", "content": r.text});
    if !r.tool_calls.is_empty() {
        message["tool_calls"] = r
            .tool_calls
            .iter()
            .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments.text()}}))
            .collect();
    }
    json!({
        "id": "chatcmpl-harness",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_name(r.finish)}],
        "usage": usage_json(r.usage),
    })
}

/// A `chat.completion.chunk` stream for an answer given as chunks: one event per chunk (a
/// call's completion has no event of its own: the finish reason completes every call), then
/// the usage and `[DONE]`.
pub fn render_stream(chunks: &[Chunk], usage: Usage, model: &str) -> Vec<SseEvent> {
    let event = |choice: Value| {
        SseEvent::data(json!({"id": "chatcmpl-harness", "object": "chat.completion.chunk", "model": model, "choices": [choice]}).to_string())
    };
    let mut out: Vec<SseEvent> = chunks
        .iter()
        .filter_map(|c| match c {
            Chunk::Text { text } => Some(event(json!({"index": 0, "delta": {"content": text}}))),
            Chunk::ToolCallStart { index, id, name } => Some(event(json!({"index": 0, "delta": {"tool_calls": [
                {"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}}))),
            Chunk::ArgsDelta { index, text } => Some(event(json!({"index": 0, "delta": {"tool_calls": [
                {"index": index, "function": {"arguments": text}}]}}))),
            Chunk::ToolCallComplete { .. } => None,
            Chunk::Finish { reason } => Some(event(json!({"index": 0, "delta": {}, "finish_reason": finish_name(*reason)}))),
        })
        .collect();
    out.push(SseEvent::data(
        json!({"id": "chatcmpl-harness", "object": "chat.completion.chunk", "model": model, "choices": [], "usage": usage_json(usage)}).to_string(),
    ));
    out.push(SseEvent::data("[DONE]"));
    out
}

fn finish(reason: &str) -> Finish {
    match reason {
        "tool_calls" | "function_call" => Finish::ToolUse,
        "length" => Finish::Length,
        "content_filter" => Finish::ContentFilter,
        _ => Finish::Stop,
    }
}

fn usage(v: Option<&Value>) -> Usage {
    let n = |k: &str| {
        v.and_then(|u| u.get(k))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    Usage {
        input: n("prompt_tokens"),
        output: n("completion_tokens"),
    }
}

/// A `chat.completion` body.
pub fn parse_body(body: &Value) -> Result<ModelResponse, WireError> {
    let choice = body
        .pointer("/choices/0")
        .ok_or_else(|| malformed(NAME, "no `choices[0]`"))?;
    let message = choice
        .get("message")
        .ok_or_else(|| malformed(NAME, "no `choices[0].message`"))?;
    let text = message
        .get("content")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let mut tool_calls = Vec::new();
    for (i, c) in message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let name = c
            .pointer("/function/name")
            .and_then(Value::as_str)
            .ok_or_else(|| malformed(NAME, format!("tool call {i} has no `function.name`")))?;
        let raw = c.str_or_empty("/function/arguments");
        tool_calls.push(ToolCall {
            id: c
                .get("id")
                .and_then(Value::as_str)
                .map_or_else(|| format!("call_{i}"), str::to_owned),
            name: name.to_owned(),
            arguments: arguments(raw),
        });
    }
    let finish = choice.get("finish_reason").and_then(Value::as_str).map_or(
        if tool_calls.is_empty() {
            Finish::Stop
        } else {
            Finish::ToolUse
        },
        self::finish,
    );
    Ok(ModelResponse {
        text,
        tool_calls,
        finish,
        usage: usage(body.get("usage")),
        ..empty_response()
    })
}

/// A `chat.completion.chunk` event stream.
pub fn parse_stream(events: &[SseEvent]) -> Result<ModelResponse, WireError> {
    let mut chunks = Vec::new();
    let mut open: BTreeSet<u32> = BTreeSet::new();
    let mut finished = None;
    let mut done = false;
    let mut use_ = Usage::default();
    for (n, e) in events.iter().enumerate() {
        if e.data.trim() == "[DONE]" {
            done = true;
            break;
        }
        let v: Value = serde_json::from_str(&e.data)
            .map_err(|err| malformed(NAME, format!("event {n} is not JSON: {err}")))?;
        if let Some(message) = super::error_message(&v) {
            return Err(WireError::StreamError {
                kind: crate::llm::FaultKind::ServerError,
                message,
            });
        }
        if v.get("usage").is_some_and(|u| !u.is_null()) {
            use_ = usage(v.get("usage"));
        }
        let Some(choice) = v.pointer("/choices/0") else {
            continue;
        };
        let delta = choice.get("delta").unwrap_or(&Value::Null);
        if let Some(t) = delta.get("content").and_then(Value::as_str) {
            chunks.push(Chunk::Text { text: t.to_owned() });
        }
        for c in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let index = c.get("index").and_then(Value::as_u64).unwrap_or(0) as u32;
            // The first entry for an index starts the call. Some compatible servers repeat
            // the id on every entry, others never send one (then the id derives from the index).
            if open.insert(index) {
                chunks.push(Chunk::ToolCallStart {
                    index,
                    id: c
                        .get("id")
                        .and_then(Value::as_str)
                        .map_or_else(|| format!("call_{index}"), str::to_owned),
                    name: c.str_or_empty("/function/name").to_owned(),
                });
            }
            if let Some(a) = c.pointer("/function/arguments").and_then(Value::as_str) {
                if !a.is_empty() {
                    chunks.push(Chunk::ArgsDelta {
                        index,
                        text: a.to_owned(),
                    });
                }
            }
        }
        if let Some(r) = choice.get("finish_reason").and_then(Value::as_str) {
            chunks.extend(
                std::mem::take(&mut open)
                    .into_iter()
                    .map(|index| Chunk::ToolCallComplete { index }),
            );
            finished = Some(finish(r));
        }
    }
    let truncated = WireError::Truncated {
        events: events.len(),
    };
    let Some(reason) = finished else {
        return Err(truncated);
    };
    if !done && !ends_cleanly(events) {
        return Err(truncated);
    }
    chunks.push(Chunk::Finish { reason });
    Ok(streamed(chunks, use_))
}

/// Some compatible servers end without `[DONE]` once the finish reason and usage are out: a
/// stream whose last event carries usage (or the finish reason) is complete.
fn ends_cleanly(events: &[SseEvent]) -> bool {
    events.last().is_some_and(|e| {
        serde_json::from_str::<Value>(&e.data).is_ok_and(|v| {
            v.get("usage").is_some_and(|u| !u.is_null())
                || v.pointer("/choices/0/finish_reason")
                    .is_some_and(|r| !r.is_null())
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{Arguments, Message, Purpose, ToolSpec};

    fn data(v: Value) -> SseEvent {
        SseEvent::data(v.to_string())
    }

    #[test]
    fn request_carries_messages_tools_and_stream_flag() {
        let mut a = Message::new(Role::Assistant, "");
        a.tool_calls = vec![ToolCall {
            id: "c1".into(),
            name: "exec".into(),
            arguments: Arguments::Parsed(json!({})),
        }];
        let messages = vec![
            Message::new(Role::System, "sys"),
            Message::new(Role::User, "hi"),
            a,
            Message::new(Role::Tool, "err"),
        ];
        let tools = vec![ToolSpec {
            name: "exec".into(),
            description: "run".into(),
            schema: json!({"type": "object"}),
        }];
        let req = ModelRequest {
            purpose: Purpose::Turn,
            iteration: 2,
            call: 2,
            messages: &messages,
            tools: &tools,
            force_text: false,
        };
        let body = render_request(
            &req,
            &WireOptions {
                model: "m".into(),
                stream: true,
                max_tokens: None,
            },
        );
        assert_eq!(
            body["messages"][0],
            json!({"role": "system", "content": "sys"})
        );
        assert_eq!(
            body["messages"][2]["tool_calls"][0]["function"],
            json!({"name": "exec", "arguments": "{}"})
        );
        assert_eq!(
            body["messages"][3],
            json!({"role": "tool", "tool_call_id": "c1", "content": "err"})
        );
        assert_eq!(
            body["tools"][0]["function"]["parameters"],
            json!({"type": "object"})
        );
        assert_eq!(body["stream"], json!(true));
        assert!(body.get("max_tokens").is_none());
    }

    #[test]
    fn body_with_tool_call() {
        let r = parse_body(&json!({
            "choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_a", "type": "function", "function": {"name": "exec", "arguments": "{\"command\":\"ls\"}"}},
                {"id": "call_b", "type": "function", "function": {"name": "exec", "arguments": "{\"comm"}}
            ]}, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 3}
        }));
        let r = r.expect("parses");
        assert_eq!(r.finish, Finish::ToolUse);
        assert_eq!(r.text, None);
        assert_eq!(
            r.tool_calls[0].arguments,
            Arguments::Parsed(json!({"command": "ls"}))
        );
        assert_eq!(r.tool_calls[1].arguments, Arguments::Raw("{\"comm".into()));
        assert_eq!(
            r.usage,
            Usage {
                input: 12,
                output: 3
            }
        );
        assert!(parse_body(&json!({"id": "x"})).is_err());
    }

    #[test]
    fn stream_keeps_the_recorded_split() {
        let events = vec![
            data(json!({"choices": [{"delta": {"role": "assistant", "content": "Let "}}]})),
            data(json!({"choices": [{"delta": {"content": "me."}}]})),
            data(
                json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "c", "function": {"name": "exec", "arguments": ""}}]}}]}),
            ),
            data(
                json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{\"a\":"}}]}}]}),
            ),
            data(
                json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": "1}"}}]}}]}),
            ),
            data(json!({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]})),
            data(json!({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 7}})),
            SseEvent::data("[DONE]"),
        ];
        let r = parse_stream(&events).expect("parses");
        assert_eq!(
            r.usage,
            Usage {
                input: 5,
                output: 7
            }
        );
        let a = crate::llm::stream::assemble(&r.stream).expect("folds");
        assert_eq!(a.text.as_deref(), Some("Let me."));
        assert_eq!(
            a.tool_calls[0].arguments,
            Arguments::Raw("{\"a\":1}".into())
        );
        assert_eq!(a.finish, Some(Finish::ToolUse));
        // text, text, start, delta, delta, complete, finish
        assert_eq!(r.chunks, 7);
    }

    #[test]
    fn compatible_servers_repeating_or_omitting_ids() {
        let events = vec![
            data(
                json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "a", "function": {"name": "exec", "arguments": "{\"x\""}}]}}]}),
            ),
            data(
                json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "a", "function": {"arguments": ":1}"}}]}}]}),
            ),
            data(
                json!({"choices": [{"delta": {"tool_calls": [{"index": 1, "function": {"name": "ls", "arguments": "{}"}}]}}]}),
            ),
            data(json!({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]})),
        ];
        let r = parse_stream(&events).expect("parses");
        let a = crate::llm::stream::assemble(&r.stream).expect("folds");
        assert_eq!(a.tool_calls.len(), 2);
        assert_eq!(
            a.tool_calls[0].arguments,
            Arguments::Raw("{\"x\":1}".into())
        );
        assert_eq!(
            (a.tool_calls[1].id.as_str(), a.tool_calls[1].name.as_str()),
            ("call_1", "ls")
        );
    }

    #[test]
    fn a_stream_cut_before_its_finish_is_truncated() {
        let events = vec![data(json!({"choices": [{"delta": {"content": "Hel"}}]}))];
        assert_eq!(
            parse_stream(&events).err(),
            Some(WireError::Truncated { events: 1 })
        );
        assert_eq!(
            parse_stream(&[]).err(),
            Some(WireError::Truncated { events: 0 })
        );
    }
}
