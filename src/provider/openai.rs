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
    AnswerMeta, Asks, ResultRef, SseEvent, TextForm, ToolChoice, WireError, WireOptions,
    WireRequest, arguments, bad_request, empty_response, malformed, options_of, streamed,
    tool_result_ids,
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

/// A request body as the engine's conversation, with what it asks of the answer's form.
pub fn parse_request(body: &Value) -> Result<WireRequest, WireError> {
    let options = options_of(body, NAME)?;
    let mut messages = Vec::new();
    let mut results = Vec::new();
    for (i, m) in body
        .get("messages")
        .and_then(Value::as_array)
        .ok_or_else(|| bad_request(NAME, "the request has no `messages` array"))?
        .iter()
        .enumerate()
    {
        let role = match m.get("role").and_then(Value::as_str) {
            Some("system" | "developer") => Role::System,
            Some("user") => Role::User,
            Some("assistant") => Role::Assistant,
            Some("tool" | "function") => Role::Tool,
            Some(other) => {
                return Err(bad_request(
                    NAME,
                    format!(
                        "messages[{i}].role is `{other}`; it must be one of `system`, `developer`, `user`, `assistant`, `tool`"
                    ),
                ));
            }
            None => {
                return Err(bad_request(NAME, format!("messages[{i}] has no `role`")));
            }
        };
        // Content parts: the text ones, joined.
        let content = super::content_text(m.get("content"));
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
        if role == Role::Tool {
            results.push(ResultRef {
                id: m.str_or_empty("tool_call_id").to_owned(),
                is_error: None,
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
                .unwrap_or_else(|| json!({}))
                .into(),
        })
        .collect();
    let tool_choice = match body.get("tool_choice") {
        Some(Value::String(s)) if s == "none" => ToolChoice::None,
        Some(Value::String(s)) if s == "required" => ToolChoice::Required,
        Some(v @ Value::Object(_)) => match v.pointer("/function/name").and_then(Value::as_str) {
            Some(name) => ToolChoice::Named(name.to_owned()),
            None => ToolChoice::Auto,
        },
        _ => ToolChoice::Auto,
    };
    let choices = match body.get("n") {
        None | Some(Value::Null) => 1,
        Some(v) => v
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| (1..=128).contains(n))
            .ok_or_else(|| {
                bad_request(
                    NAME,
                    format!("`n` is {v}; it must be an integer from 1 to 128"),
                )
            })?,
    };
    Ok(WireRequest {
        options,
        messages,
        tools,
        results,
        asks: Asks {
            usage_chunk: body
                .pointer("/stream_options/include_usage")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            choices,
            tool_choice,
            previous: None,
            form: TextForm::of(
                body.pointer("/response_format/type")
                    .and_then(Value::as_str),
                body.pointer("/response_format/json_schema/schema"),
            ),
        },
    })
}

fn usage_json(u: Usage) -> Value {
    json!({
        "prompt_tokens": u.input,
        "completion_tokens": u.output,
        "total_tokens": u.input + u.output,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
            "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
    })
}

/// The fingerprint every served answer carries (one backend configuration: the script).
const FINGERPRINT: &str = "fp_harness";

/// A `chat.completion` body for an answer: `meta.choices` identical choices.
pub fn render_body(r: &ModelResponse, meta: &AnswerMeta) -> Value {
    let mut message =
        json!({"role": "assistant", "content": r.text, "refusal": null, "annotations": []});
    if !r.tool_calls.is_empty() {
        message["tool_calls"] = r
            .tool_calls
            .iter()
            .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments.text()}}))
            .collect();
    }
    let choices: Vec<Value> = (0..meta.choices.max(1))
        .map(|index| json!({"index": index, "message": message, "logprobs": null, "finish_reason": finish_name(r.finish)}))
        .collect();
    json!({
        "id": meta.id,
        "object": "chat.completion",
        "created": meta.created,
        "model": meta.model,
        "choices": choices,
        "usage": usage_json(r.usage),
        "service_tier": "default",
        "system_fingerprint": FINGERPRINT,
    })
}

/// A `chat.completion.chunk` stream for an answer given as chunks, as OpenAI sends one: a
/// first chunk with the role, one event per chunk (a call's completion has no event of its
/// own: the finish reason completes every call), the finish reason, the usage chunk only when
/// the request asked for it (`stream_options.include_usage`; every chunk then carries
/// `usage: null`), and `[DONE]`. With `n` > 1 each choice is streamed in turn. A stream cut
/// before its finish (`meta.complete` false) stops there, with neither usage nor `[DONE]`.
pub fn render_stream(chunks: &[Chunk], usage: Usage, meta: &AnswerMeta) -> Vec<SseEvent> {
    let event = |choices: Value| {
        let mut v = json!({"id": meta.id, "object": "chat.completion.chunk", "created": meta.created,
            "model": meta.model, "service_tier": "default", "system_fingerprint": FINGERPRINT, "choices": choices});
        if meta.usage_chunk {
            v["usage"] = Value::Null;
        }
        SseEvent::data(v.to_string())
    };
    let choice = |index: u32, delta: Value, finish: Option<&str>| {
        event(json!([{"index": index, "delta": delta, "logprobs": null, "finish_reason": finish}]))
    };
    let mut out = Vec::new();
    for n in 0..meta.choices.max(1) {
        let first_text = matches!(chunks.first(), Some(Chunk::Text { .. }));
        out.push(choice(
            n,
            json!({"role": "assistant", "content": if first_text { json!("") } else { Value::Null }, "refusal": null}),
            None,
        ));
        for c in chunks {
            match c {
                Chunk::Text { text } => out.push(choice(n, json!({"content": text}), None)),
                Chunk::ToolCallStart { index, id, name } => out.push(choice(n, json!({"tool_calls": [
                    {"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}), None)),
                Chunk::ArgsDelta { index, text } => out.push(choice(n, json!({"tool_calls": [
                    {"index": index, "function": {"arguments": text}}]}), None)),
                Chunk::ToolCallComplete { .. } => {}
                Chunk::Finish { reason } => out.push(choice(n, json!({}), Some(finish_name(*reason)))),
            }
        }
    }
    if !meta.complete {
        return out;
    }
    if meta.usage_chunk {
        let mut v = json!({"id": meta.id, "object": "chat.completion.chunk", "created": meta.created,
            "model": meta.model, "service_tier": "default", "system_fingerprint": FINGERPRINT, "choices": []});
        v["usage"] = usage_json(usage);
        out.push(SseEvent::data(v.to_string()));
    }
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
            arguments: Arguments::parsed(json!({})),
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
            schema: json!({"type": "object"}).into(),
        }];
        let req = ModelRequest {
            purpose: Purpose::Turn,
            iteration: 2,
            call: 2,
            messages: &messages,
            tools: &tools,
            force_text: false,
            lineage: None,
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
            Arguments::parsed(json!({"command": "ls"}))
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
