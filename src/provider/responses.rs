//! OpenAI Responses (`POST /v1/responses`): serving, a request's `input` items as the engine's
//! conversation and an answer as a `response` object or its event stream; reading, a recorded
//! `response` object or event stream as the answer it gave (what the replay of an agent's
//! recording infers its trace from).
//!
//! Requests: `instructions` is the system message; each `input` item is a message (a string,
//! or `input_text` / `output_text` parts), a `function_call` (consecutive calls, and the
//! assistant text before them, form one assistant message) or a `function_call_output` (a tool
//! message naming its `call_id`); other items (reasoning) carry nothing the loop reads. Tools
//! are the flat `{"type": "function", "name", "parameters"}` form; other tool types are not
//! offered functions and are left out.
//!
//! Answers: the text is one `message` item with one `output_text` part, each call a
//! `function_call` item. The stream sends `response.created`, `response.in_progress`, then per
//! item `response.output_item.added`, its deltas and its `…done` events, and ends with
//! `response.completed` (`response.incomplete` when the answer hit its token limit); every
//! event carries its `sequence_number`.

use super::StrField as _;
use super::{
    AnswerMeta, Asks, ResultRef, SseEvent, TextForm, ToolChoice, WireError, WireOptions,
    WireRequest, arguments, bad_request, empty_response, malformed, streamed,
};
use crate::llm::{
    FaultKind, Finish, Message, ModelResponse, Role, ToolCall, ToolSpec, Usage, stream::Chunk,
};
use serde_json::{Value, json};

const NAME: &str = "openai responses";

/// A request body as the engine's conversation.
pub fn parse_request(body: &Value) -> Result<WireRequest, WireError> {
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .ok_or_else(|| bad_request(NAME, "the request has no `model`"))?
        .to_owned();
    let options = WireOptions {
        model,
        stream: body.get("stream").and_then(Value::as_bool).unwrap_or(false),
        max_tokens: body
            .get("max_output_tokens")
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok()),
    };
    let mut messages: Vec<Message> = Vec::new();
    let mut results = Vec::new();
    if let Some(s) = body.get("instructions").and_then(Value::as_str) {
        messages.push(Message::new(Role::System, s));
    }
    let items = match body.get("input") {
        Some(Value::String(s)) => vec![json!({"role": "user", "content": s})],
        Some(Value::Array(a)) => a.clone(),
        _ => return Err(bad_request(NAME, "the request has no `input`")),
    };
    // The assistant message the next function call joins (its text, or calls before it).
    let mut open_assistant = false;
    for (i, item) in items.iter().enumerate() {
        let kind = item
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("message");
        match kind {
            "message" => {
                let role = match item.get("role").and_then(Value::as_str) {
                    Some("system" | "developer") => Role::System,
                    Some("user") => Role::User,
                    Some("assistant") => Role::Assistant,
                    Some(other) => {
                        return Err(bad_request(
                            NAME,
                            format!(
                                "input[{i}].role is `{other}`; it must be one of `system`, `developer`, `user`, `assistant`"
                            ),
                        ));
                    }
                    None => return Err(bad_request(NAME, format!("input[{i}] has no `role`"))),
                };
                messages.push(Message::new(role, super::content_text(item.get("content"))));
                open_assistant = role == Role::Assistant;
            }
            "function_call" => {
                if !open_assistant {
                    messages.push(Message::new(Role::Assistant, ""));
                    open_assistant = true;
                }
                let call = ToolCall {
                    id: item.str_or_empty("call_id").to_owned(),
                    name: item.str_or_empty("name").to_owned(),
                    arguments: arguments(item.str_or_empty("arguments")),
                };
                if let Some(m) = messages.last_mut() {
                    m.tool_calls.push(call);
                }
            }
            "function_call_output" => {
                let output = match item.get("output") {
                    Some(Value::String(s)) => s.clone(),
                    other => super::content_text(other),
                };
                messages.push(Message::new(Role::Tool, output));
                results.push(ResultRef {
                    id: item.str_or_empty("call_id").to_owned(),
                    is_error: None,
                });
                open_assistant = false;
            }
            // Reasoning and other items carry nothing the loop reads.
            _ => {}
        }
    }
    let tools = body
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|t| t.get("type").and_then(Value::as_str) == Some("function"))
        .map(|t| ToolSpec {
            name: t.str_or_empty("name").to_owned(),
            description: t.str_or_empty("description").to_owned(),
            schema: t
                .get("parameters")
                .cloned()
                .unwrap_or_else(|| json!({}))
                .into(),
        })
        .collect();
    let tool_choice = match body.get("tool_choice") {
        Some(Value::String(s)) if s == "none" => ToolChoice::None,
        Some(Value::String(s)) if s == "required" => ToolChoice::Required,
        Some(v @ Value::Object(_)) => match v.get("name").and_then(Value::as_str) {
            Some(name) => ToolChoice::Named(name.to_owned()),
            None => ToolChoice::Auto,
        },
        _ => ToolChoice::Auto,
    };
    Ok(WireRequest {
        options,
        messages,
        tools,
        results,
        asks: Asks {
            tool_choice,
            previous: body
                .get("previous_response_id")
                .and_then(Value::as_str)
                .map(str::to_owned),
            form: TextForm::of(
                body.pointer("/text/format/type").and_then(Value::as_str),
                body.pointer("/text/format/schema"),
            ),
            ..Asks::default()
        },
    })
}

/// The ids of an answer's output items: its message, and its function calls in order,
/// derived from the response id.
fn item_ids(meta: &AnswerMeta, calls: usize) -> (String, Vec<String>) {
    let suffix = meta.id.strip_prefix("resp_").unwrap_or(&meta.id);
    (
        format!("msg_{suffix}"),
        (0..calls).map(|i| format!("fc_{suffix}{i:02x}")).collect(),
    )
}

fn message_item(id: &str, text: &str, status: &str) -> Value {
    let content = if status == "in_progress" {
        json!([])
    } else {
        json!([{"type": "output_text", "text": text, "annotations": [], "logprobs": []}])
    };
    json!({"type": "message", "id": id, "status": status, "role": "assistant", "content": content})
}

fn call_item(id: &str, call: &ToolCall, arguments: &str, status: &str) -> Value {
    json!({"type": "function_call", "id": id, "call_id": call.id, "name": call.name,
        "arguments": arguments, "status": status})
}

/// A `response` object: `status` and `output` as given, the rest from the answer and what the
/// request set (`echo`: its `instructions`, `tools`, `tool_choice`, `previous_response_id`).
fn response_object(
    r: Option<&ModelResponse>,
    meta: &AnswerMeta,
    echo: &Value,
    status: &str,
    output: Vec<Value>,
) -> Value {
    let get = |k: &str| echo.get(k).cloned().unwrap_or(Value::Null);
    let usage = r.map_or(Value::Null, |r| {
        json!({"input_tokens": r.usage.input, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": r.usage.output, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": r.usage.input + r.usage.output})
    });
    let incomplete = (status == "incomplete").then(|| json!({"reason": "max_output_tokens"}));
    json!({
        "id": meta.id,
        "object": "response",
        "created_at": meta.created,
        "status": status,
        "background": false,
        "error": null,
        "incomplete_details": incomplete,
        "instructions": get("instructions"),
        "max_output_tokens": get("max_output_tokens"),
        "model": meta.model,
        "output": output,
        "parallel_tool_calls": echo.get("parallel_tool_calls").cloned().unwrap_or(json!(true)),
        "previous_response_id": get("previous_response_id"),
        "reasoning": {"effort": null, "summary": null},
        "service_tier": "default",
        "store": echo.get("store").cloned().unwrap_or(json!(true)),
        "temperature": echo.get("temperature").cloned().unwrap_or(json!(1.0)),
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": echo.get("tool_choice").cloned().unwrap_or(json!("auto")),
        "tools": echo.get("tools").cloned().unwrap_or(json!([])),
        "top_p": echo.get("top_p").cloned().unwrap_or(json!(1.0)),
        "truncation": "disabled",
        "usage": usage,
        "user": null,
        "metadata": echo.get("metadata").cloned().unwrap_or(json!({})),
    })
}

fn status_of(r: &ModelResponse) -> &'static str {
    if r.finish == Finish::Length {
        "incomplete"
    } else {
        "completed"
    }
}

/// The complete output items of an answer.
fn output_of(r: &ModelResponse, meta: &AnswerMeta) -> Vec<Value> {
    let (message_id, call_ids) = item_ids(meta, r.tool_calls.len());
    let mut output = Vec::new();
    if let Some(t) = &r.text {
        output.push(message_item(&message_id, t, "completed"));
    }
    for (c, id) in r.tool_calls.iter().zip(&call_ids) {
        output.push(call_item(id, c, c.arguments.text(), "completed"));
    }
    output
}

/// A whole `response` body for an answer.
pub fn render_body(r: &ModelResponse, meta: &AnswerMeta, echo: &Value) -> Value {
    response_object(Some(r), meta, echo, status_of(r), output_of(r, meta))
}

/// The event stream of an answer given as chunks (`whole` is the same answer folded, for the
/// final `response` object). A stream cut before its finish (`meta.complete` false) stops
/// after its last delta.
pub fn render_stream(
    chunks: &[Chunk],
    whole: &ModelResponse,
    meta: &AnswerMeta,
    echo: &Value,
) -> Vec<SseEvent> {
    let mut out = Vec::new();
    let mut seq = 0u64;
    let mut push = |out: &mut Vec<SseEvent>, kind: &str, mut v: Value| {
        v["type"] = json!(kind);
        v["sequence_number"] = json!(seq);
        seq += 1;
        out.push(SseEvent::named(kind, v.to_string()));
    };
    let shell = response_object(None, meta, echo, "in_progress", Vec::new());
    push(&mut out, "response.created", json!({"response": shell}));
    push(&mut out, "response.in_progress", json!({"response": shell}));
    let (message_id, call_ids) = item_ids(meta, whole.tool_calls.len());
    let mut next_output = 0u32;
    // The open text item: its output index and the text so far.
    let mut text: Option<(u32, String)> = None;
    // Open calls by stream index: output index, item id, the call, arguments so far.
    let mut calls: std::collections::BTreeMap<u32, (u32, String, ToolCall, String)> =
        Default::default();
    let mut started_calls = 0usize;
    let close_text = |out: &mut Vec<SseEvent>,
                      push: &mut dyn FnMut(&mut Vec<SseEvent>, &str, Value),
                      (index, t): (u32, String)| {
        let part = json!({"type": "output_text", "text": t, "annotations": [], "logprobs": []});
        push(
            out,
            "response.output_text.done",
            json!({"item_id": message_id, "output_index": index, "content_index": 0, "text": t, "logprobs": []}),
        );
        push(
            out,
            "response.content_part.done",
            json!({"item_id": message_id, "output_index": index, "content_index": 0, "part": part}),
        );
        push(
            out,
            "response.output_item.done",
            json!({"output_index": index, "item": message_item(&message_id, &t, "completed")}),
        );
    };
    let close_call =
        |out: &mut Vec<SseEvent>,
         push: &mut dyn FnMut(&mut Vec<SseEvent>, &str, Value),
         (index, id, call, args): (u32, String, ToolCall, String)| {
            push(
                out,
                "response.function_call_arguments.done",
                json!({"item_id": id, "output_index": index, "arguments": args}),
            );
            push(
                out,
                "response.output_item.done",
                json!({"output_index": index, "item": call_item(&id, &call, &args, "completed")}),
            );
        };
    let mut finished = false;
    for c in chunks {
        match c {
            Chunk::Text { text: piece } => {
                if text.is_none() {
                    push(
                        &mut out,
                        "response.output_item.added",
                        json!({"output_index": next_output, "item": message_item(&message_id, "", "in_progress")}),
                    );
                    push(
                        &mut out,
                        "response.content_part.added",
                        json!({"item_id": message_id, "output_index": next_output, "content_index": 0,
                        "part": {"type": "output_text", "text": "", "annotations": [], "logprobs": []}}),
                    );
                    text = Some((next_output, String::new()));
                    next_output += 1;
                }
                if let Some((index, t)) = &mut text {
                    t.push_str(piece);
                    push(
                        &mut out,
                        "response.output_text.delta",
                        json!({"item_id": message_id, "output_index": *index, "content_index": 0, "delta": piece, "logprobs": []}),
                    );
                }
            }
            Chunk::ToolCallStart { index, id, name } => {
                if let Some(t) = text.take() {
                    close_text(&mut out, &mut push, t);
                }
                let item_id = call_ids
                    .get(started_calls)
                    .cloned()
                    .unwrap_or_else(|| format!("fc_{started_calls}"));
                started_calls += 1;
                let call = ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    arguments: crate::llm::Arguments::Raw(String::new()),
                };
                push(
                    &mut out,
                    "response.output_item.added",
                    json!({"output_index": next_output, "item": call_item(&item_id, &call, "", "in_progress")}),
                );
                calls.insert(*index, (next_output, item_id, call, String::new()));
                next_output += 1;
            }
            Chunk::ArgsDelta { index, text: piece } => {
                if let Some((output_index, item_id, _, args)) = calls.get_mut(index) {
                    args.push_str(piece);
                    push(
                        &mut out,
                        "response.function_call_arguments.delta",
                        json!({"item_id": item_id, "output_index": *output_index, "delta": piece}),
                    );
                }
            }
            Chunk::ToolCallComplete { index } => {
                if let Some(call) = calls.remove(index) {
                    close_call(&mut out, &mut push, call);
                }
            }
            Chunk::Finish { .. } => finished = true,
        }
    }
    if !meta.complete || !finished {
        return out;
    }
    if let Some(t) = text.take() {
        close_text(&mut out, &mut push, t);
    }
    for call in std::mem::take(&mut calls).into_values() {
        close_call(&mut out, &mut push, call);
    }
    let status = status_of(whole);
    let done = response_object(Some(whole), meta, echo, status, output_of(whole, meta));
    let kind = if status == "incomplete" {
        "response.incomplete"
    } else {
        "response.completed"
    };
    push(&mut out, kind, json!({"response": done}));
    out
}

/// The token counts of a `response` object's `usage`.
fn usage_of(response: &Value) -> Usage {
    let n = |k: &str| {
        response
            .pointer(&format!("/usage/{k}"))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    Usage {
        input: n("input_tokens"),
        output: n("output_tokens"),
    }
}

/// How an answer ended: cut at its token limit when `incomplete`, else by its calls.
fn finish_of(response: &Value, calls: bool) -> Finish {
    if response.get("status").and_then(Value::as_str) == Some("incomplete") {
        Finish::Length
    } else if calls {
        Finish::ToolUse
    } else {
        Finish::Stop
    }
}

/// A `failed` response as the fault it reports.
fn failure(response: &Value) -> Option<WireError> {
    (response.get("status").and_then(Value::as_str) == Some("failed")).then(|| failed(response))
}

/// The fault a failed response reports.
fn failed(response: &Value) -> WireError {
    WireError::StreamError {
        kind: FaultKind::ServerError,
        message: super::error_message(response).unwrap_or_else(|| "the response failed".to_owned()),
    }
}

/// A whole `response` body (the reading direction): the text of its `message` items, its
/// `function_call` items as calls (named by `call_id`, which the results echo).
pub fn parse_body(body: &Value) -> Result<ModelResponse, WireError> {
    if let Some(e) = failure(body) {
        return Err(e);
    }
    let output = body
        .get("output")
        .and_then(Value::as_array)
        .ok_or_else(|| malformed(NAME, "no `output` array"))?;
    let mut text: Option<String> = None;
    let mut tool_calls = Vec::new();
    for (i, item) in output.iter().enumerate() {
        match item.get("type").and_then(Value::as_str) {
            Some("message") => {
                let t = text.get_or_insert_with(String::new);
                for part in item
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if part.get("type").and_then(Value::as_str) == Some("output_text") {
                        t.push_str(part.str_or_empty("text"));
                    }
                }
            }
            Some("function_call") => tool_calls.push(ToolCall {
                id: item.str_or_empty("call_id").to_owned(),
                name: item
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| malformed(NAME, format!("output[{i}] has no `name`")))?
                    .to_owned(),
                arguments: arguments(item.str_or_empty("arguments")),
            }),
            _ => {}
        }
    }
    Ok(ModelResponse {
        finish: finish_of(body, !tool_calls.is_empty()),
        text,
        tool_calls,
        usage: usage_of(body),
        ..empty_response()
    })
}

/// A `response` event stream (the reading direction): text deltas, and each function call
/// from its `output_item.added` through its argument deltas to its `output_item.done`, keyed
/// by output index. Complete once `response.completed` or `response.incomplete` arrives.
pub fn parse_stream(events: &[SseEvent]) -> Result<ModelResponse, WireError> {
    let mut chunks = Vec::new();
    let mut open: std::collections::BTreeSet<u32> = Default::default();
    for (n, e) in events.iter().enumerate() {
        let (v, kind) = super::typed_event(e, n, NAME)?;
        let index = v.get("output_index").and_then(Value::as_u64).unwrap_or(0) as u32;
        let item = v.get("item").unwrap_or(&Value::Null);
        let is_call = item.get("type").and_then(Value::as_str) == Some("function_call");
        match kind.as_str() {
            "response.output_item.added" if is_call => {
                open.insert(index);
                chunks.push(Chunk::ToolCallStart {
                    index,
                    id: item.str_or_empty("call_id").to_owned(),
                    name: item.str_or_empty("name").to_owned(),
                });
                let args = item.str_or_empty("arguments");
                if !args.is_empty() {
                    chunks.push(Chunk::ArgsDelta {
                        index,
                        text: args.to_owned(),
                    });
                }
            }
            "response.output_text.delta" => {
                let delta = v.str_or_empty("delta");
                if !delta.is_empty() {
                    chunks.push(Chunk::Text {
                        text: delta.to_owned(),
                    });
                }
            }
            "response.function_call_arguments.delta" if open.contains(&index) => {
                let delta = v.str_or_empty("delta");
                if !delta.is_empty() {
                    chunks.push(Chunk::ArgsDelta {
                        index,
                        text: delta.to_owned(),
                    });
                }
            }
            "response.output_item.done" if open.remove(&index) => {
                chunks.push(Chunk::ToolCallComplete { index });
            }
            "response.completed" | "response.incomplete" => {
                let response = v.get("response").unwrap_or(&Value::Null);
                chunks.extend(
                    std::mem::take(&mut open)
                        .into_iter()
                        .map(|index| Chunk::ToolCallComplete { index }),
                );
                chunks.push(Chunk::Finish {
                    reason: finish_of(
                        response,
                        chunks
                            .iter()
                            .any(|c| matches!(c, Chunk::ToolCallStart { .. })),
                    ),
                });
                return Ok(streamed(chunks, usage_of(response)));
            }
            "response.failed" => {
                let response = v.get("response").unwrap_or(&Value::Null);
                return Err(failed(response));
            }
            "error" => {
                return Err(WireError::StreamError {
                    kind: FaultKind::ServerError,
                    message: v
                        .get("message")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                        .or_else(|| super::error_message(&v))
                        .unwrap_or_else(|| "error event".to_owned()),
                });
            }
            _ => {}
        }
    }
    Err(WireError::Truncated {
        events: events.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{Arguments, Usage};

    fn meta() -> AnswerMeta {
        AnswerMeta {
            id: "resp_abc".into(),
            created: 7,
            model: "gpt".into(),
            usage_chunk: false,
            choices: 1,
            complete: true,
        }
    }

    /// "Let me." and one `exec` call (id `call_9`) with these argument pieces, closed or not.
    fn answer_chunks(args: &[&str], complete: bool) -> Vec<Chunk> {
        let mut chunks = vec![
            Chunk::Text {
                text: "Let ".into(),
            },
            Chunk::Text { text: "me.".into() },
            Chunk::ToolCallStart {
                index: 0,
                id: "call_9".into(),
                name: "exec".into(),
            },
        ];
        chunks.extend(args.iter().map(|a| Chunk::ArgsDelta {
            index: 0,
            text: (*a).into(),
        }));
        if complete {
            chunks.push(Chunk::ToolCallComplete { index: 0 });
        }
        chunks.push(Chunk::Finish {
            reason: Finish::ToolUse,
        });
        chunks
    }

    #[test]
    fn input_items_become_the_conversation() {
        let body = json!({"model": "gpt", "instructions": "sys", "input": [
            {"role": "user", "content": "List the files."},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Looking."}]},
            {"type": "function_call", "call_id": "call_1", "name": "exec", "arguments": "{}"},
            {"type": "function_call", "call_id": "call_2", "name": "exec", "arguments": "{\"command\":\"ls\"}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "Error: no"},
            {"type": "function_call_output", "call_id": "call_2", "output": [{"type": "input_text", "text": "a.txt"}]},
            {"type": "reasoning", "id": "rs_1", "summary": []},
        ], "tools": [{"type": "function", "name": "exec", "parameters": {"type": "object"}}, {"type": "web_search"}],
           "tool_choice": "required", "previous_response_id": "resp_0"});
        let r = parse_request(&body).expect("parses");
        let roles: Vec<Role> = r.messages.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [
                Role::System,
                Role::User,
                Role::Assistant,
                Role::Tool,
                Role::Tool
            ]
        );
        assert_eq!(r.messages[2].content, "Looking.");
        assert_eq!(r.messages[2].tool_calls.len(), 2);
        assert_eq!(r.messages[4].content, "a.txt");
        assert_eq!(r.results[0].id, "call_1");
        assert_eq!(
            r.tools.len(),
            1,
            "only function tools are offered functions"
        );
        assert_eq!(r.asks.tool_choice, ToolChoice::Required);
        assert_eq!(r.asks.previous.as_deref(), Some("resp_0"));
        let bad =
            parse_request(&json!({"model": "m", "input": [{"role": "robot", "content": "x"}]}));
        assert_eq!(
            bad.err().map(|e| e.to_string()).unwrap_or_default(),
            "bad openai responses request: input[0].role is `robot`; it must be one of `system`, `developer`, `user`, `assistant`"
        );
    }

    #[test]
    fn a_streamed_answer_ends_with_the_whole_response() {
        let chunks = answer_chunks(&["{}"], false);
        let whole = ModelResponse {
            text: Some("Let me.".into()),
            tool_calls: vec![ToolCall {
                id: "call_9".into(),
                name: "exec".into(),
                arguments: Arguments::parsed(json!({})),
            }],
            finish: Finish::ToolUse,
            usage: Usage {
                input: 3,
                output: 4,
            },
            latency_ms: 0,
            anomaly: None,
            chunks: 0,
            stream: Vec::new(),
        };
        let events = render_stream(&chunks, &whole, &meta(), &json!({}));
        let kinds: Vec<&str> = events.iter().filter_map(|e| e.event.as_deref()).collect();
        assert_eq!(
            kinds,
            [
                "response.created",
                "response.in_progress",
                "response.output_item.added",
                "response.content_part.added",
                "response.output_text.delta",
                "response.output_text.delta",
                "response.output_text.done",
                "response.content_part.done",
                "response.output_item.done",
                "response.output_item.added",
                "response.function_call_arguments.delta",
                "response.function_call_arguments.done",
                "response.output_item.done",
                "response.completed",
            ]
        );
        let last: Value = serde_json::from_str(&events[13].data).expect("json");
        assert_eq!(last["sequence_number"], 13);
        assert_eq!(last["response"], render_body(&whole, &meta(), &json!({})));
        assert_eq!(last["response"]["output"][1]["call_id"], "call_9");
        // Cut before the finish: no closing events.
        let cut = AnswerMeta {
            complete: false,
            ..meta()
        };
        let events = render_stream(&chunks, &whole, &cut, &json!({}));
        assert_eq!(
            events.last().and_then(|e| e.event.as_deref()),
            Some("response.function_call_arguments.delta")
        );
    }

    #[test]
    fn a_rendered_answer_reads_back_whole_and_streamed() {
        let whole = ModelResponse {
            text: Some("Let me.".into()),
            tool_calls: vec![ToolCall {
                id: "call_9".into(),
                name: "exec".into(),
                arguments: Arguments::parsed(json!({"command": "ls"})),
            }],
            finish: Finish::ToolUse,
            usage: Usage {
                input: 3,
                output: 4,
            },
            ..empty_response()
        };
        let body = render_body(&whole, &meta(), &json!({}));
        let read = parse_body(&body).expect("reads");
        assert_eq!(read.text.as_deref(), Some("Let me."));
        assert_eq!(read.tool_calls, whole.tool_calls);
        assert_eq!((read.finish, read.usage), (Finish::ToolUse, whole.usage));
        let chunks = answer_chunks(&["{\"command\":", "\"ls\"}"], true);
        let events = render_stream(&chunks, &whole, &meta(), &json!({}));
        let read = parse_stream(&events).expect("reads");
        let folded = crate::llm::stream::assemble(&read.stream).expect("folds");
        assert_eq!(folded.text.as_deref(), Some("Let me."));
        let call = &folded.tool_calls[0];
        assert_eq!((call.id.as_str(), call.name.as_str()), ("call_9", "exec"));
        assert_eq!(call.arguments.text(), "{\"command\":\"ls\"}");
        assert_eq!(
            (folded.finish, read.usage),
            (Some(Finish::ToolUse), whole.usage)
        );
        // Cut before `response.completed`: truncated.
        let cut = parse_stream(&events[..events.len() - 1]);
        assert!(matches!(cut, Err(WireError::Truncated { .. })), "{cut:?}");
        // A failed response is a fault; an answer at its limit finishes by length.
        let failed = json!({"status": "failed", "output": [], "error": {"message": "boom"}});
        assert_eq!(
            parse_body(&failed).err().map(|e| e.to_string()),
            Some("boom".to_owned())
        );
        let limited = json!({"status": "incomplete", "output": []});
        assert_eq!(
            parse_body(&limited).map(|r| r.finish).ok(),
            Some(Finish::Length)
        );
        assert!(parse_body(&json!({"status": "completed"})).is_err());
    }
}
