//! Anthropic Messages: request JSON from an engine request; a `message` body or the
//! `message_start … message_stop` event stream into a response.
//!
//! Requests: the first system message is the top-level `system`; later system notes, tool
//! results and user messages become user turns (consecutive ones merged, as the API wants
//! alternating roles); tool results are `tool_result` blocks naming their `tool_use_id`. When
//! no tools are offered but the history holds `tool_use` blocks, the tools used are declared
//! and forbidden (`tool_choice: none`), as the API refuses such a history without tools.
//! Streams: `content_block_start` of a `tool_use` block starts a call at the block's index,
//! `input_json_delta` pieces are argument deltas, `text_delta` pieces text, `content_block_stop`
//! completes a call, `message_delta` carries the stop reason and the usage so far (cumulative,
//! the input side repeated, as the Messages API sends it), `message_stop`
//! ends the stream; an `error` event is a provider fault.

use super::StrField as _;
use super::{
    AnswerMeta, Asks, ResultRef, SseEvent, TextForm, ToolChoice, WireError, WireOptions,
    WireRequest, bad_request, empty_response, malformed, options_of, streamed, tool_result_ids,
};
use crate::llm::{
    Arguments, FaultKind, Finish, Message, ModelRequest, ModelResponse, Role, ToolCall, ToolSpec,
    Usage, stream::Chunk,
};
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

const NAME: &str = "anthropic";

/// The default output token limit (the API requires one).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// The request body.
pub fn render_request(request: &ModelRequest<'_>, options: &WireOptions) -> Value {
    let ids = tool_result_ids(request.messages);
    let mut system: Option<String> = None;
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for (i, (m, id)) in request.messages.iter().zip(ids).enumerate() {
        let (role, blocks) = match (m.role, id) {
            (Role::System, _) if i == 0 => {
                system = Some(m.content.clone());
                continue;
            }
            (Role::Assistant, _) => {
                let mut blocks = Vec::new();
                if !m.content.is_empty() {
                    blocks.push(json!({"type": "text", "text": m.content}));
                }
                for c in &m.tool_calls {
                    let input = super::object_args(&c.arguments);
                    blocks.push(
                        json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}),
                    );
                }
                ("assistant", blocks)
            }
            (Role::Tool, Some(id)) => {
                let mut block =
                    json!({"type": "tool_result", "tool_use_id": id, "content": m.content});
                if m.failed {
                    block["is_error"] = json!(true);
                }
                ("user", vec![block])
            }
            _ => ("user", vec![json!({"type": "text", "text": m.content})]),
        };
        match turns.last_mut() {
            Some((r, b)) if *r == role => b.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(options.model));
    body.insert(
        "max_tokens".into(),
        json!(options.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)),
    );
    if let Some(s) = system {
        body.insert("system".into(), json!(s));
    }
    body.insert(
        "messages".into(),
        Value::Array(
            turns
                .into_iter()
                .map(|(role, content)| json!({"role": role, "content": content}))
                .collect(),
        ),
    );
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(
                |t| json!({"name": t.name, "description": t.description, "input_schema": t.schema}),
            )
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    } else {
        // The API refuses a history with `tool_use` blocks when no tools are defined: when the
        // engine offers none (stripped, force-text), declare the ones used, and forbid them.
        let mut used: Vec<&str> = request
            .messages
            .iter()
            .flat_map(|m| m.tool_calls.iter().map(|c| c.name.as_str()))
            .collect();
        used.sort_unstable();
        used.dedup();
        if !used.is_empty() {
            let tools: Vec<Value> = used
                .iter()
                .map(|n| json!({"name": n, "input_schema": {"type": "object"}}))
                .collect();
            body.insert("tools".into(), Value::Array(tools));
            body.insert("tool_choice".into(), json!({"type": "none"}));
        }
    }
    if options.stream {
        body.insert("stream".into(), json!(true));
    }
    Value::Object(body)
}

fn finish_name(f: Finish) -> &'static str {
    match f {
        Finish::Stop => "end_turn",
        Finish::ToolUse => "tool_use",
        Finish::Length => "max_tokens",
        Finish::StopSequence => "stop_sequence",
        Finish::ContentFilter => "refusal",
    }
}

/// The `error.type` a fault is served with.
pub fn error_type(kind: FaultKind) -> &'static str {
    match kind {
        FaultKind::RateLimit => "rate_limit_error",
        FaultKind::ServerError => "api_error",
        FaultKind::ContextOverflow => "invalid_request_error",
        FaultKind::Timeout => "timeout_error",
        FaultKind::Refused => "invalid_request_error",
    }
}

/// A request body as the engine's conversation: `system` first, then each content block as
/// the message it came from (text, a `tool_use` call on its assistant message, a
/// `tool_result` as a tool message).
pub fn parse_request(body: &Value) -> Result<WireRequest, WireError> {
    let options = options_of(body, NAME)?;
    if body.get("max_tokens").and_then(Value::as_u64).is_none() {
        return Err(bad_request(
            NAME,
            "max_tokens: Field required (the Messages API needs an output token limit)",
        ));
    }
    let mut messages = Vec::new();
    let mut results = Vec::new();
    match body.get("system") {
        Some(Value::String(s)) => messages.push(Message::new(Role::System, s.clone())),
        Some(Value::Array(blocks)) => messages.push(Message::new(
            Role::System,
            blocks
                .iter()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect::<String>(),
        )),
        _ => {}
    }
    for (i, m) in body
        .get("messages")
        .and_then(Value::as_array)
        .ok_or_else(|| bad_request(NAME, "the request has no `messages` array"))?
        .iter()
        .enumerate()
    {
        let assistant = match m.get("role").and_then(Value::as_str) {
            Some("assistant") => true,
            Some("user") => false,
            // A system message among the turns, as newer models take one (Claude Code sends
            // them): read as the system speaking there, its text blocks joined.
            Some("system") => {
                let text = match m.get("content") {
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Array(blocks)) => blocks
                        .iter()
                        .filter_map(|b| b.get("text").and_then(Value::as_str))
                        .collect::<Vec<_>>()
                        .join("\n"),
                    _ => String::new(),
                };
                messages.push(Message::new(Role::System, &text));
                continue;
            }
            Some(other) => {
                return Err(bad_request(
                    NAME,
                    format!("messages[{i}].role is `{other}`; it must be `user` or `assistant`"),
                ));
            }
            None => return Err(bad_request(NAME, format!("messages[{i}] has no `role`"))),
        };
        let blocks = match m.get("content") {
            Some(Value::String(s)) => vec![json!({"type": "text", "text": s})],
            Some(Value::Array(b)) => b.clone(),
            _ => Vec::new(),
        };
        if assistant {
            let mut message = Message::new(Role::Assistant, "");
            for b in &blocks {
                match b.get("type").and_then(Value::as_str) {
                    Some("text") => message.content.push_str(b.str_or_empty("text")),
                    Some("tool_use") => message.tool_calls.push(ToolCall {
                        id: b.str_or_empty("id").to_owned(),
                        name: b.str_or_empty("name").to_owned(),
                        arguments: Arguments::parsed(
                            b.get("input").cloned().unwrap_or_else(|| json!({})),
                        ),
                    }),
                    _ => {}
                }
            }
            messages.push(message);
            continue;
        }
        for b in &blocks {
            match b.get("type").and_then(Value::as_str) {
                Some("tool_result") => {
                    let content = super::content_text(b.get("content"));
                    let is_error = b.get("is_error").and_then(Value::as_bool);
                    let mut message = Message::new(Role::Tool, content);
                    message.failed = is_error.unwrap_or(false);
                    messages.push(message);
                    results.push(ResultRef {
                        id: b.str_or_empty("tool_use_id").to_owned(),
                        is_error,
                    });
                }
                Some("text") => messages.push(Message::new(Role::User, b.str_or_empty("text"))),
                _ => {}
            }
        }
    }
    // Tools declared only to be forbidden (`tool_choice: none`) are not on offer.
    let tool_choice = match body.pointer("/tool_choice/type").and_then(Value::as_str) {
        Some("none") => ToolChoice::None,
        Some("any") => ToolChoice::Required,
        Some("tool") => ToolChoice::Named(body.str_or_empty("/tool_choice/name").to_owned()),
        _ => ToolChoice::Auto,
    };
    let forbidden = tool_choice == ToolChoice::None;
    let tools = body
        .get("tools")
        .and_then(Value::as_array)
        .filter(|_| !forbidden)
        .into_iter()
        .flatten()
        .map(|t| ToolSpec {
            name: t.str_or_empty("name").to_owned(),
            description: t.str_or_empty("description").to_owned(),
            schema: t
                .get("input_schema")
                .cloned()
                .unwrap_or_else(|| json!({}))
                .into(),
        })
        .collect();
    Ok(WireRequest {
        options,
        messages,
        tools,
        results,
        asks: Asks {
            tool_choice,
            // Structured outputs: `output_config.format`, or the beta's `output_format`.
            form: body
                .pointer("/output_config/format")
                .or_else(|| body.get("output_format"))
                .map_or(TextForm::Free, |f| {
                    TextForm::of(f.get("type").and_then(Value::as_str), f.get("schema"))
                }),
            ..Asks::default()
        },
    })
}

fn usage_json(input: u64, output: u64) -> Value {
    json!({"input_tokens": input, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
        "output_tokens": output, "service_tier": "standard"})
}

/// A stream's closing `message_delta` usage: cumulative, so the input side is repeated.
fn delta_usage(input: u64, output: u64) -> Value {
    json!({"input_tokens": input, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
        "output_tokens": output})
}

/// A `message` body for an answer.
pub fn render_body(r: &ModelResponse, meta: &AnswerMeta) -> Value {
    let mut content = Vec::new();
    if let Some(t) = &r.text {
        content.push(json!({"type": "text", "text": t}));
    }
    for c in &r.tool_calls {
        content.push(json!({"type": "tool_use", "id": c.id, "name": c.name, "input": super::object_args(&c.arguments)}));
    }
    json!({
        "id": meta.id,
        "type": "message",
        "role": "assistant",
        "model": meta.model,
        "content": content,
        "stop_reason": finish_name(r.finish),
        "stop_sequence": null,
        "usage": usage_json(r.usage.input, r.usage.output),
    })
}

/// The event stream for an answer given as chunks, in the API's order: `message_start` (its
/// usage counts the input and the first output token), `ping`, then a run of text pieces as
/// one text block and each tool call as a `tool_use` block (its stream index becomes a block
/// index), closed at its completion or when the message ends, then `message_delta` with the
/// stop reason and the usage so far (cumulative: the input side again, and the output), and
/// `message_stop`. A stream cut before its finish
/// (`meta.complete` false) stops after its last block event.
pub fn render_stream(chunks: &[Chunk], usage: Usage, meta: &AnswerMeta) -> Vec<SseEvent> {
    let ev = |name: &str, v: Value| SseEvent::named(name, v.to_string());
    let mut out = vec![
        ev(
            "message_start",
            json!({"type": "message_start", "message": {"id": meta.id, "type": "message", "role": "assistant",
                "model": meta.model, "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": usage_json(usage.input, usage.output.min(1))}}),
        ),
        ev("ping", json!({"type": "ping"})),
    ];
    let mut next_block = 0u32;
    let mut text_block: Option<u32> = None;
    let mut tool_blocks: std::collections::BTreeMap<u32, u32> = Default::default();
    let stop = |block: u32| {
        ev(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": block}),
        )
    };
    let mut reason = Finish::Stop;
    for c in chunks {
        if !matches!(c, Chunk::Text { .. }) {
            if let Some(b) = text_block.take() {
                out.push(stop(b));
            }
        }
        match c {
            Chunk::Text { text } => {
                let block = *text_block.get_or_insert_with(|| {
                    out.push(ev("content_block_start", json!({"type": "content_block_start", "index": next_block, "content_block": {"type": "text", "text": ""}})));
                    next_block += 1;
                    next_block - 1
                });
                out.push(ev("content_block_delta", json!({"type": "content_block_delta", "index": block, "delta": {"type": "text_delta", "text": text}})));
            }
            Chunk::ToolCallStart { index, id, name } => {
                tool_blocks.insert(*index, next_block);
                out.push(ev(
                    "content_block_start",
                    json!({"type": "content_block_start", "index": next_block,
                    "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
                ));
                next_block += 1;
            }
            Chunk::ArgsDelta { index, text } => {
                if let Some(block) = tool_blocks.get(index) {
                    out.push(ev("content_block_delta", json!({"type": "content_block_delta", "index": block, "delta": {"type": "input_json_delta", "partial_json": text}})));
                }
            }
            Chunk::ToolCallComplete { index } => {
                if let Some(block) = tool_blocks.remove(index) {
                    out.push(stop(block));
                }
            }
            Chunk::Finish { reason: r } => reason = *r,
        }
    }
    if !meta.complete {
        return out;
    }
    if let Some(b) = text_block.take() {
        out.push(stop(b));
    }
    out.extend(std::mem::take(&mut tool_blocks).into_values().map(stop));
    out.push(ev(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": finish_name(reason), "stop_sequence": null}, "usage": delta_usage(usage.input, usage.output)}),
    ));
    out.push(ev("message_stop", json!({"type": "message_stop"})));
    out
}

fn finish(reason: &str) -> Finish {
    match reason {
        "tool_use" => Finish::ToolUse,
        "max_tokens" => Finish::Length,
        "stop_sequence" => Finish::StopSequence,
        "refusal" => Finish::ContentFilter,
        _ => Finish::Stop,
    }
}

fn tokens(v: Option<&Value>, key: &str) -> Option<u64> {
    v.and_then(|u| u.get(key)).and_then(Value::as_u64)
}

/// The fault an `error` event or body names.
fn fault_kind(error_type: &str) -> FaultKind {
    match error_type {
        "rate_limit_error" => FaultKind::RateLimit,
        "timeout_error" => FaultKind::Timeout,
        "invalid_request_error"
        | "authentication_error"
        | "permission_error"
        | "not_found_error"
        | "request_too_large" => FaultKind::Refused,
        _ => FaultKind::ServerError,
    }
}

/// A `message` body.
pub fn parse_body(body: &Value) -> Result<ModelResponse, WireError> {
    let content = body
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| malformed(NAME, "no `content` array"))?;
    let mut text: Option<String> = None;
    let mut tool_calls = Vec::new();
    for (i, block) in content.iter().enumerate() {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => text
                .get_or_insert_with(String::new)
                .push_str(block.str_or_empty("text")),
            Some("tool_use") => tool_calls.push(ToolCall {
                id: block.str_or_empty("id").to_owned(),
                name: block
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| malformed(NAME, format!("tool_use block {i} has no `name`")))?
                    .to_owned(),
                arguments: Arguments::parsed(
                    block.get("input").cloned().unwrap_or_else(|| json!({})),
                ),
            }),
            _ => {}
        }
    }
    let finish = body.get("stop_reason").and_then(Value::as_str).map_or(
        if tool_calls.is_empty() {
            Finish::Stop
        } else {
            Finish::ToolUse
        },
        self::finish,
    );
    let u = body.get("usage");
    Ok(ModelResponse {
        text,
        tool_calls,
        finish,
        usage: Usage {
            input: tokens(u, "input_tokens").unwrap_or(0),
            output: tokens(u, "output_tokens").unwrap_or(0),
        },
        ..empty_response()
    })
}

/// The event stream.
pub fn parse_stream(events: &[SseEvent]) -> Result<ModelResponse, WireError> {
    let mut chunks = Vec::new();
    let mut tool_blocks: BTreeSet<u32> = BTreeSet::new();
    let mut usage = Usage::default();
    let mut reason = None;
    let mut stopped = false;
    for (n, e) in events.iter().enumerate() {
        let (v, kind) = super::typed_event(e, n, NAME)?;
        let index = v.get("index").and_then(Value::as_u64).unwrap_or(0) as u32;
        match kind.as_str() {
            "message_start" => {
                let u = v.pointer("/message/usage");
                usage.input = tokens(u, "input_tokens").unwrap_or(0);
                usage.output = tokens(u, "output_tokens").unwrap_or(0);
            }
            "content_block_start" => {
                let block = v.get("content_block").unwrap_or(&Value::Null);
                match block.get("type").and_then(Value::as_str) {
                    Some("tool_use") => {
                        tool_blocks.insert(index);
                        chunks.push(Chunk::ToolCallStart {
                            index,
                            id: block.str_or_empty("id").to_owned(),
                            name: block.str_or_empty("name").to_owned(),
                        });
                    }
                    Some("text") => {
                        if let Some(t) = block
                            .get("text")
                            .and_then(Value::as_str)
                            .filter(|t| !t.is_empty())
                        {
                            chunks.push(Chunk::Text { text: t.to_owned() });
                        }
                    }
                    _ => {}
                }
            }
            "content_block_delta" => {
                let d = v.get("delta").unwrap_or(&Value::Null);
                match d.get("type").and_then(Value::as_str) {
                    Some("text_delta") => chunks.push(Chunk::Text {
                        text: d.str_or_empty("text").to_owned(),
                    }),
                    Some("input_json_delta") => {
                        let piece = d.str_or_empty("partial_json");
                        if !piece.is_empty() {
                            chunks.push(Chunk::ArgsDelta {
                                index,
                                text: piece.to_owned(),
                            });
                        }
                    }
                    _ => {}
                }
            }
            "content_block_stop" if tool_blocks.remove(&index) => {
                chunks.push(Chunk::ToolCallComplete { index });
            }
            "message_delta" => {
                if let Some(r) = v.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    reason = Some(finish(r));
                }
                if let Some(o) = tokens(v.get("usage"), "output_tokens") {
                    usage.output = o;
                }
                if let Some(i) = tokens(v.get("usage"), "input_tokens") {
                    usage.input = i;
                }
            }
            "message_stop" => {
                stopped = true;
                break;
            }
            "error" => {
                let error_type = v.str_or_empty("/error/type");
                return Err(WireError::StreamError {
                    kind: fault_kind(error_type),
                    message: super::error_message(&v).unwrap_or_else(|| error_type.to_owned()),
                });
            }
            _ => {}
        }
    }
    if !stopped {
        return Err(WireError::Truncated {
            events: events.len(),
        });
    }
    chunks.push(Chunk::Finish {
        reason: reason.unwrap_or(Finish::Stop),
    });
    Ok(streamed(chunks, usage))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{Message, Purpose, ToolSpec};

    fn request_of(messages: &[Message]) -> ModelRequest<'_> {
        ModelRequest {
            purpose: Purpose::Turn,
            iteration: 1,
            call: 1,
            messages,
            tools: &[],
            force_text: true,
            lineage: None,
        }
    }

    fn ev(name: &str, v: Value) -> SseEvent {
        SseEvent::named(name, v.to_string())
    }

    #[test]
    fn request_alternates_roles_and_names_tool_results() {
        let mut a = Message::new(Role::Assistant, "Let me look.");
        a.tool_calls = vec![ToolCall {
            id: "tu_1".into(),
            name: "exec".into(),
            arguments: Arguments::Raw("{\"command\":\"ls\"}".into()),
        }];
        let mut result = Message::new(Role::Tool, "boom");
        result.failed = true;
        let messages = vec![
            Message::new(Role::System, "sys"),
            Message::new(Role::User, "hi"),
            a,
            result,
            Message::new(Role::System, "LOOP DETECTED"),
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
        let opts = WireOptions {
            model: "claude".into(),
            stream: false,
            max_tokens: None,
        };
        let body = render_request(&req, &opts);
        assert_eq!(body["system"], json!("sys"));
        assert_eq!(body["max_tokens"], json!(DEFAULT_MAX_TOKENS));
        let msgs = body["messages"].as_array().expect("messages");
        assert_eq!(msgs.len(), 3);
        assert_eq!(msgs[1]["content"][1]["input"], json!({"command": "ls"}));
        assert_eq!(
            msgs[2]["content"],
            json!([
                {"type": "tool_result", "tool_use_id": "tu_1", "content": "boom", "is_error": true},
                {"type": "text", "text": "LOOP DETECTED"}
            ])
        );
        assert_eq!(body["tools"][0]["input_schema"], json!({"type": "object"}));
        assert!(body.get("stream").is_none());
        assert!(body.get("tool_choice").is_none());
        // Tools withheld (force-text): the ones in the history are declared, and forbidden.
        let stripped = ModelRequest { tools: &[], ..req };
        let body = render_request(&stripped, &opts);
        assert_eq!(
            body["tools"],
            json!([{"name": "exec", "input_schema": {"type": "object"}}])
        );
        assert_eq!(body["tool_choice"], json!({"type": "none"}));
        let back = parse_request(&body).expect("parses");
        assert!(back.tools.is_empty());
        assert_eq!(render_request(&request_of(&back.messages), &opts), body);
    }

    #[test]
    fn body_with_text_and_tool_use() {
        let r = parse_body(&json!({
            "type": "message",
            "content": [
                {"type": "text", "text": "Listing."},
                {"type": "tool_use", "id": "tu", "name": "exec", "input": {}}
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 20, "output_tokens": 4}
        }))
        .expect("parses");
        assert_eq!(r.text.as_deref(), Some("Listing."));
        assert_eq!(r.tool_calls[0].arguments, Arguments::parsed(json!({})));
        assert_eq!(r.finish, Finish::ToolUse);
        assert_eq!(
            r.usage,
            Usage {
                input: 20,
                output: 4
            }
        );
    }

    #[test]
    fn a_system_message_among_the_turns_is_read_as_the_system_speaking() {
        let body = json!({"model": "claude-opus-4-8", "max_tokens": 10, "messages": [
            {"role": "user", "content": "hi"},
            {"role": "system", "content": [{"type": "text", "text": "Be brief."}, {"type": "text", "text": "Really."}]},
            {"role": "user", "content": "go"}
        ]});
        let r = parse_request(&body).expect("parses");
        let roles: Vec<(Role, &str)> = r
            .messages
            .iter()
            .map(|m| (m.role, m.content.as_str()))
            .collect();
        assert_eq!(
            roles,
            [
                (Role::User, "hi"),
                (Role::System, "Be brief.\nReally."),
                (Role::User, "go")
            ]
        );
    }

    #[test]
    fn stream_folds_and_reports_truncation_and_errors() {
        let events = vec![
            ev(
                "message_start",
                json!({"type": "message_start", "message": {"usage": {"input_tokens": 9, "output_tokens": 1}}}),
            ),
            ev(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "tu", "name": "exec", "input": {}}}),
            ),
            ev(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"command\""}}),
            ),
            ev(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": ": \"ls\"}"}}),
            ),
            ev(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 0}),
            ),
            ev(
                "message_delta",
                json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 6}}),
            ),
            ev("message_stop", json!({"type": "message_stop"})),
        ];
        let r = parse_stream(&events).expect("parses");
        assert_eq!(
            r.usage,
            Usage {
                input: 9,
                output: 6
            }
        );
        let a = crate::llm::stream::assemble(&r.stream).expect("folds");
        assert_eq!(
            a.tool_calls[0].arguments,
            Arguments::Raw("{\"command\": \"ls\"}".into())
        );
        assert_eq!(a.finish, Some(Finish::ToolUse));
        assert_eq!(
            parse_stream(&events[..3]).err(),
            Some(WireError::Truncated { events: 3 })
        );
        let overloaded = [ev(
            "error",
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        )];
        assert_eq!(
            parse_stream(&overloaded).err(),
            Some(WireError::StreamError {
                kind: FaultKind::ServerError,
                message: "Overloaded".into()
            })
        );
    }
}
