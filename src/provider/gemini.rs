//! The Gemini API (`generateContent`, `streamGenerateContent`): request JSON from an engine
//! request; a `GenerateContentResponse` body, or the stream of them, into a response; and
//! the other way round for `serve`.
//!
//! The model and whether the answer streams are in the path
//! (`/v1beta/models/{model}:generateContent`, `…:streamGenerateContent?alt=sse`), not the body:
//! a server reads them there ([`super::Api::of_path`]) and sets them on the parsed request.
//!
//! Requests: `systemInstruction` is the system message; `contents` are turns of `user` and
//! `model`, whose parts are `text`, `functionCall` (`name`, `args`, an optional `id`) and
//! `functionResponse` (`name`, `response`, an optional `id`); a thought part (`thought: true`)
//! is the model's reasoning, not its answer. Tools are
//! `tools[].functionDeclarations[]` with `parameters` (an OpenAPI subset, types in capitals)
//! or `parametersJsonSchema`; `toolConfig.functionCallingConfig.mode` `NONE` withholds them,
//! `ANY` requires a call. A function response's text is its `output` (or `result`,
//! `content`) when that is a string, else its JSON; an `error` key is a failure, as the API
//! documents it.
//!
//! Answers: one candidate whose `content.parts` hold the text and each call whole (Gemini does
//! not stream a call's arguments in pieces), `finishReason` (`STOP` for text and calls alike,
//! `MAX_TOKENS`, `SAFETY`, …) and `usageMetadata`. A stream is a sequence of such responses,
//! each `data:` of a server-sent event (`alt=sse`) — text as it comes, each call once complete,
//! the finish reason and usage on the last. Errors are Google's
//! `{"error": {"code", "message", "status"}}`.

use super::StrField as _;
use super::{
    AnswerMeta, Asks, ResultRef, SseEvent, TextForm, ToolChoice, WireError, WireOptions,
    WireRequest, bad_request, empty_response, malformed, streamed, tool_result_ids,
};
use crate::llm::{
    Arguments, FaultKind, Finish, Message, ModelRequest, ModelResponse, Role, ToolCall, ToolSpec,
    Usage, stream::Chunk,
};
use serde_json::{Map, Value, json};

const NAME: &str = "gemini";

/// The API version the SDKs use.
pub const VERSION: &str = "v1beta";

/// The methods of the API a path names after its model (`models/{model}:{method}`).
pub const METHODS: &[&str] = &[
    "generateContent",
    "streamGenerateContent",
    "countTokens",
    "embedContent",
    "batchEmbedContents",
    "batchGenerateContent",
];

/// A field by its JSON name (`functionCall`) or its proto name (`function_call`): the API
/// takes both, and the Python SDK sends some in the second form (`parameters_json_schema`).
fn field<'a>(v: &'a Value, camel: &str) -> Option<&'a Value> {
    v.get(camel).or_else(|| {
        let mut snake = String::with_capacity(camel.len() + 4);
        for c in camel.chars() {
            if c.is_ascii_uppercase() {
                snake.push('_');
                snake.push(c.to_ascii_lowercase());
            } else {
                snake.push(c);
            }
        }
        v.get(snake.as_str())
    })
}

/// A field's value along a path of names, each in either form (see [`field`]).
fn at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |v, k| field(v, k))
}

/// The request body for one engine request (the model goes in the path).
pub fn render_request(request: &ModelRequest<'_>, options: &WireOptions) -> Value {
    let ids = tool_result_ids(request.messages);
    let mut system: Option<String> = None;
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    // The name of each call id, for the function responses that answer it.
    let mut names: std::collections::BTreeMap<String, String> = Default::default();
    for (i, (m, id)) in request.messages.iter().zip(ids).enumerate() {
        let (role, parts) = match (m.role, id) {
            (Role::System, _) if i == 0 => {
                system = Some(m.content.clone());
                continue;
            }
            (Role::Assistant, _) => {
                let mut parts = Vec::new();
                if !m.content.is_empty() {
                    parts.push(json!({"text": m.content}));
                }
                for c in &m.tool_calls {
                    names.insert(c.id.clone(), c.name.clone());
                    // Gemini 3 refuses a call in the history without the signature it was
                    // sent with; the engine keeps none, and this is the value Google
                    // documents for a call whose signature is not at hand.
                    parts.push(json!({"functionCall": {"id": c.id, "name": c.name, "args": super::object_args(&c.arguments)},
                        "thoughtSignature": "skip_thought_signature_validator"}));
                }
                ("model", parts)
            }
            (Role::Tool, Some(id)) => {
                let key = if m.failed { "error" } else { "output" };
                let name = names.get(&id).cloned().unwrap_or_default();
                (
                    "user",
                    vec![
                        json!({"functionResponse": {"id": id, "name": name, "response": {key: m.content}}}),
                    ],
                )
            }
            _ => ("user", vec![json!({"text": m.content})]),
        };
        match turns.last_mut() {
            Some((r, p)) if *r == role => p.extend(parts),
            _ => turns.push((role, parts)),
        }
    }
    let mut body = Map::new();
    if let Some(s) = system {
        body.insert("systemInstruction".into(), json!({"parts": [{"text": s}]}));
    }
    body.insert(
        "contents".into(),
        Value::Array(
            turns
                .into_iter()
                .map(|(role, parts)| json!({"role": role, "parts": parts}))
                .collect(),
        ),
    );
    if !request.tools.is_empty() {
        let declarations: Vec<Value> = request
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "parametersJsonSchema": t.schema}))
            .collect();
        body.insert(
            "tools".into(),
            json!([{"functionDeclarations": declarations}]),
        );
    }
    if let Some(n) = options.max_tokens {
        body.insert("generationConfig".into(), json!({"maxOutputTokens": n}));
    }
    Value::Object(body)
}

/// The URL path of a call: `/{VERSION}/models/{model}:generateContent`, or
/// `:streamGenerateContent?alt=sse` streamed.
pub fn path(model: &str, stream: bool) -> String {
    let model = model.strip_prefix("models/").unwrap_or(model);
    if stream {
        format!("/{VERSION}/models/{model}:streamGenerateContent?alt=sse")
    } else {
        format!("/{VERSION}/models/{model}:generateContent")
    }
}

/// Schemas in the API's OpenAPI subset name their types in capitals (`OBJECT`, `STRING`):
/// read as JSON Schema's.
fn json_schema(v: &Value) -> Value {
    match v {
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| {
                    let v = match (k.as_str(), v) {
                        ("type", Value::String(t)) => Value::String(t.to_ascii_lowercase()),
                        // `properties` names fields, whose names stay as they are.
                        ("properties", Value::Object(props)) => Value::Object(
                            props
                                .iter()
                                .map(|(name, s)| (name.clone(), json_schema(s)))
                                .collect(),
                        ),
                        _ => json_schema(v),
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(json_schema).collect()),
        other => other.clone(),
    }
}

/// The text of a function response as the model reads it, and whether it says it failed.
pub fn response_text(response: Option<&Value>) -> (String, bool) {
    let Some(r) = response else {
        return (String::new(), false);
    };
    // `{"error": null, …}` says no error (a common shape of a tool's own result).
    if let Some(e) = r.get("error").filter(|e| !e.is_null()) {
        let text = e.as_str().map_or_else(|| e.to_string(), str::to_owned);
        return (text, true);
    }
    // The text under one key (`output`, `result`, `content`), beside at most the tool's name
    // (the AI SDK sends `{name, content}`).
    let others = |key: &str| {
        r.as_object()
            .is_some_and(|o| o.keys().all(|k| k == key || k == "name"))
    };
    for key in ["output", "result", "content"] {
        if let Some(Value::String(s)) = r.get(key).filter(|_| others(key)) {
            return (s.clone(), false);
        }
    }
    (r.to_string(), false)
}

/// A request body as the engine's conversation. The model is the body's `model` when it has
/// one (it is in the path otherwise: the server sets it), and the stream flag is the path's.
pub fn parse_request(body: &Value) -> Result<WireRequest, WireError> {
    let contents = body
        .get("contents")
        .and_then(Value::as_array)
        .filter(|c| !c.is_empty())
        .ok_or_else(|| {
            bad_request(
                NAME,
                "* GenerateContentRequest.contents: contents is not specified",
            )
        })?;
    let mut messages = Vec::new();
    let mut results = Vec::new();
    let system: String = at(body, &["systemInstruction", "parts"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n");
    if !system.is_empty() {
        messages.push(Message::new(Role::System, system));
    }
    // The calls of the latest model turn not yet answered, for responses that name no id.
    let mut pending: Vec<(String, String)> = Vec::new();
    for (i, turn) in contents.iter().enumerate() {
        let parts = turn
            .get("parts")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        match turn.get("role").and_then(Value::as_str).unwrap_or("user") {
            "model" => {
                let mut message = Message::new(Role::Assistant, "");
                for p in parts {
                    if p.get("thought").and_then(Value::as_bool) == Some(true) {
                        continue;
                    }
                    if let Some(t) = p.get("text").and_then(Value::as_str) {
                        message.content.push_str(t);
                    } else if let Some(c) = field(p, "functionCall") {
                        message.tool_calls.push(ToolCall {
                            id: c.str_or_empty("id").to_owned(),
                            name: c.str_or_empty("name").to_owned(),
                            arguments: Arguments::parsed(
                                c.get("args").cloned().unwrap_or_else(|| json!({})),
                            ),
                        });
                    }
                }
                pending = message
                    .tool_calls
                    .iter()
                    .map(|c| (c.id.clone(), c.name.clone()))
                    .collect();
                messages.push(message);
            }
            "user" | "function" | "tool" => {
                // A turn's text parts are one message (as an OpenAI content array is), ended
                // where a function response comes between them.
                let mut text: Option<String> = None;
                for p in parts {
                    if let Some(t) = p.get("text").and_then(Value::as_str) {
                        text.get_or_insert_with(String::new).push_str(t);
                        continue;
                    }
                    if let Some(t) = text.take() {
                        messages.push(Message::new(Role::User, t));
                    }
                    if let Some(r) = field(p, "functionResponse") {
                        let name = r.str_or_empty("name");
                        // The id it names, else the first waiting call of its name, else the
                        // first waiting call.
                        let id = match r.get("id").and_then(Value::as_str) {
                            Some(id) if !id.is_empty() => {
                                pending.retain(|(p, _)| p != id);
                                id.to_owned()
                            }
                            _ => {
                                let at = pending
                                    .iter()
                                    .position(|(_, n)| n == name)
                                    .or((!pending.is_empty()).then_some(0));
                                at.map(|k| pending.remove(k).0).unwrap_or_default()
                            }
                        };
                        let (text, failed) = response_text(r.get("response"));
                        let mut message = Message::new(Role::Tool, text);
                        message.failed = failed;
                        messages.push(message);
                        results.push(ResultRef {
                            id,
                            is_error: failed.then_some(true),
                        });
                    }
                }
                if let Some(t) = text {
                    messages.push(Message::new(Role::User, t));
                }
            }
            other => {
                return Err(bad_request(
                    NAME,
                    format!(
                        "* GenerateContentRequest.contents[{i}].role: `{other}`; it must be `user` or `model`"
                    ),
                ));
            }
        }
    }
    let config = at(body, &["toolConfig", "functionCallingConfig"]);
    let allowed: Vec<&str> = config
        .and_then(|c| field(c, "allowedFunctionNames"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let tool_choice = match config.and_then(|c| c.get("mode")).and_then(Value::as_str) {
        Some("NONE") => ToolChoice::None,
        Some("ANY") | Some("VALIDATED") if allowed.len() == 1 => {
            ToolChoice::Named(allowed[0].to_owned())
        }
        Some("ANY") => ToolChoice::Required,
        _ => ToolChoice::Auto,
    };
    let tools = body
        .get("tools")
        .and_then(Value::as_array)
        .filter(|_| tool_choice != ToolChoice::None)
        .into_iter()
        .flatten()
        .filter_map(|t| field(t, "functionDeclarations").and_then(Value::as_array))
        .flatten()
        .map(|d| ToolSpec {
            name: d.str_or_empty("name").to_owned(),
            description: d.str_or_empty("description").to_owned(),
            schema: field(d, "parametersJsonSchema")
                .cloned()
                .or_else(|| d.get("parameters").map(json_schema))
                .unwrap_or_else(|| json!({"type": "object", "properties": {}}))
                .into(),
        })
        .collect();
    let max_tokens = at(body, &["generationConfig", "maxOutputTokens"])
        .and_then(Value::as_u64)
        .and_then(|n| u32::try_from(n).ok());
    Ok(WireRequest {
        options: WireOptions {
            model: body.str_or_empty("model").to_owned(),
            stream: false,
            max_tokens,
        },
        messages,
        tools,
        results,
        asks: Asks {
            tool_choice,
            form: form(body),
            ..Asks::default()
        },
    })
}

/// The form `generationConfig` asks the text in: JSON when `responseMimeType` says so, by
/// `responseJsonSchema` (JSON Schema) or else `responseSchema` (the API's OpenAPI subset),
/// either read with the subset's capital type names as JSON Schema's.
fn form(body: &Value) -> TextForm {
    let json = at(body, &["generationConfig", "responseMimeType"])
        .and_then(Value::as_str)
        .is_some_and(|m| m.eq_ignore_ascii_case("application/json"));
    if !json {
        return TextForm::Free;
    }
    // Gemini CLI writes its `responseJsonSchema` with the subset's capital types too.
    let schema = at(body, &["generationConfig", "responseJsonSchema"])
        .or_else(|| at(body, &["generationConfig", "responseSchema"]))
        .map(json_schema);
    TextForm::of(Some("json_schema"), schema.as_ref())
}

fn finish_name(f: Finish) -> &'static str {
    match f {
        Finish::Stop | Finish::ToolUse | Finish::StopSequence => "STOP",
        Finish::Length => "MAX_TOKENS",
        Finish::ContentFilter => "SAFETY",
    }
}

fn usage_json(u: Usage) -> Value {
    json!({"promptTokenCount": u.input, "candidatesTokenCount": u.output,
        "totalTokenCount": u.input + u.output})
}

fn call_part(c: &ToolCall) -> Value {
    json!({"functionCall": {"id": c.id, "name": c.name, "args": super::object_args(&c.arguments)}})
}

fn response_json(
    parts: Vec<Value>,
    finish: Option<Finish>,
    usage: Option<Usage>,
    meta: &AnswerMeta,
) -> Value {
    let mut candidate = Map::new();
    candidate.insert("content".into(), json!({"role": "model", "parts": parts}));
    if let Some(f) = finish {
        candidate.insert("finishReason".into(), json!(finish_name(f)));
    }
    candidate.insert("index".into(), json!(0));
    let mut body = Map::new();
    body.insert("candidates".into(), json!([Value::Object(candidate)]));
    if let Some(u) = usage {
        body.insert("usageMetadata".into(), usage_json(u));
    }
    body.insert("modelVersion".into(), json!(meta.model));
    body.insert("responseId".into(), json!(meta.id));
    Value::Object(body)
}

/// Are these arguments a call the API could answer with? It only ever sends an object: a
/// model whose call does not parse as one gets `MALFORMED_FUNCTION_CALL` and no call.
fn well_formed(args: &Arguments) -> bool {
    match args {
        Arguments::Parsed(v) => v.is_object(),
        Arguments::Raw(r) if r.trim().is_empty() => true,
        Arguments::Raw(r) => serde_json::from_str::<Value>(r).is_ok_and(|v| v.is_object()),
    }
}

/// The finish reason the API gives a malformed call.
const MALFORMED: &str = "MALFORMED_FUNCTION_CALL";

/// A response whose call the API could not make: no call, and the reason — the output limit
/// when the call was cut off by it, `MALFORMED_FUNCTION_CALL` (with its message) otherwise.
fn malformed_json(text: Option<&str>, finish: Finish, usage: Usage, meta: &AnswerMeta) -> Value {
    let parts: Vec<Value> = text.map(|t| json!({"text": t})).into_iter().collect();
    if finish == Finish::Length {
        return response_json(parts, Some(Finish::Length), Some(usage), meta);
    }
    let mut v = response_json(parts, None, Some(usage), meta);
    v["candidates"][0]["finishReason"] = json!(MALFORMED);
    v["candidates"][0]["finishMessage"] =
        json!("Malformed function call: the arguments are not a JSON object.");
    v
}

/// What of an answer reaches the agent: a call whose arguments are no object does not (nor
/// do the others of its answer), and the answer ends for the output limit when it did, as
/// the API answers (see [`render_body`]).
pub fn delivered(mut r: ModelResponse) -> ModelResponse {
    if !r.tool_calls.iter().all(|c| well_formed(&c.arguments)) {
        r.tool_calls.clear();
        if r.finish != Finish::Length {
            r.finish = Finish::Stop;
        }
    }
    r
}

/// A `GenerateContentResponse` for an answer.
pub fn render_body(r: &ModelResponse, meta: &AnswerMeta) -> Value {
    if !r.tool_calls.iter().all(|c| well_formed(&c.arguments)) {
        return malformed_json(r.text.as_deref(), r.finish, r.usage, meta);
    }
    let mut parts = Vec::new();
    if let Some(t) = &r.text {
        parts.push(json!({"text": t}));
    }
    parts.extend(r.tool_calls.iter().map(call_part));
    response_json(parts, Some(r.finish), Some(r.usage), meta)
}

/// The stream for an answer given as chunks: a response for each run of text, one for each
/// call once its arguments are whole, and a last one with the finish reason and the usage.
/// A stream cut before its finish (`meta.complete` false) stops after its last piece.
pub fn render_stream(chunks: &[Chunk], usage: Usage, meta: &AnswerMeta) -> Vec<SseEvent> {
    let event = |parts: Vec<Value>, finish: Option<Finish>, usage: Option<Usage>| {
        SseEvent::data(response_json(parts, finish, usage, meta).to_string())
    };
    // Each response's parts, rendered at the end: the last carries the finish reason and the
    // usage, as the API sends them (never a response of no parts, which google-genai's chat
    // session takes for an invalid turn and drops from its history with the results).
    let mut out: Vec<Vec<Value>> = Vec::new();
    let mut calls: std::collections::BTreeMap<u32, (String, String, String)> = Default::default();
    let mut reason = Finish::Stop;
    // A call whose arguments are no object: the API makes none of the answer's calls, and
    // ends the stream as it ends it (a stream cut before its finish sends what it had).
    let mut args_of_call: std::collections::BTreeMap<u32, String> = Default::default();
    for c in chunks {
        if let Chunk::ArgsDelta { index, text } = c {
            args_of_call.entry(*index).or_default().push_str(text);
        } else if let Chunk::ToolCallStart { index, .. } = c {
            args_of_call.entry(*index).or_default();
        }
    }
    // A call without argument pieces has `{}`, as the engine assembles it.
    let object = |a: &str| {
        let a = if a.trim().is_empty() { "{}" } else { a };
        serde_json::from_str::<Value>(a)
            .ok()
            .filter(Value::is_object)
    };
    let malformed = meta.complete && args_of_call.values().any(|a| object(a).is_none());
    let whole_call = |id: String, name: String, args: String| match object(&args).ok_or(()) {
        Ok(args) if !malformed => {
            Some(json!({"functionCall": {"id": id, "name": name, "args": args}}))
        }
        _ => None,
    };
    for c in chunks {
        match c {
            Chunk::Text { text } => out.push(vec![json!({"text": text})]),
            Chunk::ToolCallStart { index, id, name } => {
                calls.insert(*index, (id.clone(), name.clone(), String::new()));
            }
            Chunk::ArgsDelta { index, text } => {
                if let Some(call) = calls.get_mut(index) {
                    call.2.push_str(text);
                }
            }
            Chunk::ToolCallComplete { index } => {
                if let Some(part) = calls
                    .remove(index)
                    .and_then(|(id, name, args)| whole_call(id, name, args))
                {
                    out.push(vec![part]);
                }
            }
            Chunk::Finish { reason: r } => reason = *r,
        }
    }
    let bare = |out: Vec<Vec<Value>>| -> Vec<SseEvent> {
        out.into_iter().map(|p| event(p, None, None)).collect()
    };
    if !meta.complete {
        return bare(out);
    }
    let rest: Vec<Value> = std::mem::take(&mut calls)
        .into_values()
        .filter_map(|(id, name, args)| whole_call(id, name, args))
        .collect();
    if malformed {
        let mut events = bare(out);
        events.push(SseEvent::data(
            malformed_json(None, reason, usage, meta).to_string(),
        ));
        return events;
    }
    if !rest.is_empty() {
        out.push(rest);
    }
    let last = out.pop().unwrap_or_else(|| vec![json!({"text": ""})]);
    let mut events = bare(out);
    events.push(event(last, Some(reason), Some(usage)));
    events
}

/// The `status` Google's errors carry for an HTTP status.
pub fn status_name(status: u16) -> &'static str {
    match status {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        408 | 504 => "DEADLINE_EXCEEDED",
        409 => "ABORTED",
        413 => "INVALID_ARGUMENT",
        429 => "RESOURCE_EXHAUSTED",
        501 => "UNIMPLEMENTED",
        503 => "UNAVAILABLE",
        _ => "INTERNAL",
    }
}

/// An error body in Google's shape.
pub fn error_body(status: u16, message: &str) -> Value {
    json!({"error": {"code": status, "message": message, "status": status_name(status)}})
}

/// The status and body a fault is served with (a rate limit says when to retry, as
/// `google.rpc.RetryInfo`, when the script gives a hint).
pub fn render_fault(kind: FaultKind, message: &str, retry_after_ms: Option<u64>) -> (u16, Value) {
    let status = match kind {
        FaultKind::RateLimit => 429,
        FaultKind::ServerError if message.to_lowercase().contains("overload") => 503,
        FaultKind::ServerError => 500,
        FaultKind::ContextOverflow | FaultKind::Refused => 400,
        FaultKind::Timeout => 504,
    };
    let mut body = error_body(status, message);
    if let (FaultKind::RateLimit, Some(ms)) = (kind, retry_after_ms) {
        let delay = format!("{}s", ms.div_ceil(1000));
        body["error"]["details"] =
            json!([{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}]);
    }
    (status, body)
}

/// The retry hint of a Gemini error body: `google.rpc.RetryInfo`'s `retryDelay` (`"2s"`,
/// `"1.5s"`) among its `details`, in milliseconds.
pub fn retry_delay_ms(body: &Value) -> Option<u64> {
    at(body, &["error", "details"])?
        .as_array()?
        .iter()
        .filter(|d| {
            d.get("@type")
                .and_then(Value::as_str)
                .is_some_and(|t| t.ends_with("google.rpc.RetryInfo"))
        })
        .find_map(|d| {
            let s = d.get("retryDelay")?.as_str()?.strip_suffix('s')?;
            let secs = s.trim().parse::<f64>().ok()?;
            (secs.is_finite() && secs >= 0.0).then(|| (secs * 1000.0).round() as u64)
        })
}

fn finish(reason: &str) -> Finish {
    match reason {
        "MAX_TOKENS" => Finish::Length,
        "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" => {
            Finish::ContentFilter
        }
        _ => Finish::Stop,
    }
}

fn usage_of(v: Option<&Value>) -> Option<Usage> {
    let u = v?;
    let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
    Some(Usage {
        input: n("promptTokenCount"),
        output: n("candidatesTokenCount") + n("thoughtsTokenCount"),
    })
}

/// What one `GenerateContentResponse` holds.
struct Read {
    text: String,
    calls: Vec<ToolCall>,
    reason: Option<String>,
    usage: Option<Usage>,
}

/// Text, calls, finish reason and usage of one `GenerateContentResponse`.
fn read_response(body: &Value) -> Result<Read, WireError> {
    let candidates = body.get("candidates").and_then(Value::as_array);
    let candidate = candidates.and_then(|c| c.first());
    if candidate.is_none() && body.get("usageMetadata").is_none() {
        return Err(malformed(NAME, "no `candidates` array"));
    }
    let mut text = String::new();
    let mut calls = Vec::new();
    for p in candidate
        .and_then(|c| c.pointer("/content/parts"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if p.get("thought").and_then(Value::as_bool) == Some(true) {
            continue;
        }
        if let Some(t) = p.get("text").and_then(Value::as_str) {
            text.push_str(t);
        } else if let Some(c) = field(p, "functionCall") {
            calls.push(ToolCall {
                id: c.str_or_empty("id").to_owned(),
                name: c.str_or_empty("name").to_owned(),
                arguments: Arguments::parsed(c.get("args").cloned().unwrap_or_else(|| json!({}))),
            });
        }
    }
    // A prompt the API blocked has no candidate, only `promptFeedback.blockReason`: the
    // answer was filtered, not empty.
    let blocked = || {
        at(body, &["promptFeedback", "blockReason"])
            .and_then(Value::as_str)
            .filter(|r| !r.is_empty() && *r != "BLOCK_REASON_UNSPECIFIED")
            .map(|_| "SAFETY".to_owned())
    };
    let reason = candidate
        .and_then(|c| c.get("finishReason"))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| candidate.is_none().then(blocked).flatten());
    Ok(Read {
        text,
        calls,
        reason,
        usage: usage_of(body.get("usageMetadata")),
    })
}

/// A `GenerateContentResponse` body.
pub fn parse_body(body: &Value) -> Result<ModelResponse, WireError> {
    let Read {
        text,
        calls: tool_calls,
        reason,
        usage,
    } = read_response(body)?;
    let finish = match reason.as_deref() {
        Some(r) if finish(r) != Finish::Stop => finish(r),
        _ if !tool_calls.is_empty() => Finish::ToolUse,
        _ => Finish::Stop,
    };
    Ok(ModelResponse {
        text: (!text.is_empty()).then_some(text),
        tool_calls,
        finish,
        usage: usage.unwrap_or_default(),
        ..empty_response()
    })
}

/// A stream of `GenerateContentResponse`s (`alt=sse` events, or the elements of the JSON array
/// the API streams without it, each as an event's data).
pub fn parse_stream(events: &[SseEvent]) -> Result<ModelResponse, WireError> {
    let mut chunks = Vec::new();
    let mut usage = Usage::default();
    let mut reason: Option<String> = None;
    let mut index = 0u32;
    let mut any_call = false;
    for (n, e) in events.iter().enumerate() {
        let v: Value = serde_json::from_str(&e.data)
            .map_err(|err| malformed(NAME, format!("event {n} is not JSON: {err}")))?;
        if let Some(err) = v.get("error") {
            return Err(WireError::StreamError {
                kind: match err.get("code").and_then(Value::as_u64) {
                    Some(429) => FaultKind::RateLimit,
                    Some(400..=499) => FaultKind::Refused,
                    _ => FaultKind::ServerError,
                },
                message: err.str_or_empty("message").to_owned(),
            });
        }
        let Read {
            text,
            calls,
            reason: r,
            usage: u,
        } = read_response(&v)?;
        if !text.is_empty() {
            chunks.push(Chunk::Text { text });
        }
        for c in calls {
            any_call = true;
            let args = super::object_args(&c.arguments).to_string();
            chunks.push(Chunk::ToolCallStart {
                index,
                id: c.id,
                name: c.name,
            });
            chunks.push(Chunk::ArgsDelta { index, text: args });
            chunks.push(Chunk::ToolCallComplete { index });
            index += 1;
        }
        if let Some(r) = r {
            reason = Some(r);
        }
        if let Some(u) = u {
            usage = u;
        }
    }
    let Some(reason) = reason else {
        return Err(WireError::Truncated {
            events: events.len(),
        });
    };
    let f = match finish(&reason) {
        Finish::Stop if any_call => Finish::ToolUse,
        f => f,
    };
    chunks.push(Chunk::Finish { reason: f });
    Ok(streamed(chunks, usage))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(complete: bool) -> AnswerMeta {
        AnswerMeta {
            id: "r1".into(),
            created: 0,
            model: "gemini-2.5-flash".into(),
            usage_chunk: false,
            choices: 1,
            complete,
        }
    }

    fn call(id: &str, args: Arguments) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "exec".into(),
            arguments: args,
        }
    }

    /// A request as the Python SDK sends it (proto names for some fields, an OpenAPI schema
    /// with types in capitals, the system instruction with a role) reads as the conversation:
    /// results paired with their calls by id, else by name, and `error` a failure.
    #[test]
    fn a_request_as_the_sdks_send_it_reads_as_the_conversation() {
        let body = json!({
            "contents": [
                {"role": "user", "parts": [{"text": "List the files."}]},
                {"role": "model", "parts": [
                    {"text": "thinking", "thought": true},
                    {"functionCall": {"id": "c1", "name": "exec", "args": {"command": "ls"}}},
                    {"function_call": {"name": "read", "args": {}}}
                ]},
                {"role": "user", "parts": [
                    {"functionResponse": {"name": "read", "response": {"error": "no such file"}}},
                    {"function_response": {"id": "c1", "name": "exec", "response": {"output": "a.txt"}}}
                ]}
            ],
            "system_instruction": {"role": "user", "parts": [{"text": "Be brief."}]},
            "tools": [{"function_declarations": [
                {"name": "exec", "parameters": {"type": "OBJECT", "properties": {"type": {"type": "STRING"}}}},
                {"name": "read", "parameters_json_schema": {"type": "object"}}
            ]}],
            "tool_config": {"function_calling_config": {"mode": "ANY", "allowed_function_names": ["exec"]}},
            "generation_config": {"max_output_tokens": 100}
        });
        let r = parse_request(&body).expect("reads");
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
        assert_eq!(r.messages[0].content, "Be brief.");
        assert_eq!(r.messages[2].content, "", "a thought is no answer");
        assert_eq!(r.messages[2].tool_calls.len(), 2);
        assert_eq!(
            (r.messages[3].content.as_str(), r.messages[3].failed),
            ("no such file", true)
        );
        assert_eq!(
            (r.messages[4].content.as_str(), r.messages[4].failed),
            ("a.txt", false)
        );
        let ids: Vec<(&str, Option<bool>)> = r
            .results
            .iter()
            .map(|x| (x.id.as_str(), x.is_error))
            .collect();
        assert_eq!(ids, [("", Some(true)), ("c1", None)]);
        assert_eq!(
            *r.tools[0].schema,
            json!({"type": "object", "properties": {"type": {"type": "string"}}})
        );
        assert_eq!(*r.tools[1].schema, json!({"type": "object"}));
        assert_eq!(r.asks.tool_choice, ToolChoice::Named("exec".into()));
        assert_eq!(r.options.max_tokens, Some(100));
        // Tools withheld, and a request with nothing to continue.
        let none = json!({"contents": [{"parts": [{"text": "hi"}]}], "tools": [{"functionDeclarations": [{"name": "x"}]}],
            "toolConfig": {"functionCallingConfig": {"mode": "NONE"}}});
        assert!(parse_request(&none).expect("reads").tools.is_empty());
        let err = parse_request(&json!({"contents": []})).expect_err("refused");
        assert!(
            err.to_string().contains("contents is not specified"),
            "{err}"
        );
    }

    /// What `serve` renders reads back as the answer, whole and streamed; a cut stream has no
    /// finish.
    #[test]
    fn answers_render_and_parse_back() {
        let answer = ModelResponse {
            text: Some("Looking.".into()),
            tool_calls: vec![call("c1", Arguments::parsed(json!({"command": "ls"})))],
            finish: Finish::ToolUse,
            usage: Usage {
                input: 12,
                output: 5,
            },
            ..empty_response()
        };
        let body = render_body(&answer, &meta(true));
        assert_eq!(body["candidates"][0]["finishReason"], "STOP");
        assert_eq!(body["usageMetadata"]["totalTokenCount"], 17);
        let back = parse_body(&body).expect("parses");
        assert_eq!(
            (back.text, back.tool_calls, back.finish, back.usage),
            (
                answer.text.clone(),
                answer.tool_calls.clone(),
                Finish::ToolUse,
                answer.usage
            )
        );
        let chunks = vec![
            Chunk::Text {
                text: "Look".into(),
            },
            Chunk::Text {
                text: "ing.".into(),
            },
            Chunk::ToolCallStart {
                index: 0,
                id: "c1".into(),
                name: "exec".into(),
            },
            Chunk::ArgsDelta {
                index: 0,
                text: "{\"command\":".into(),
            },
            Chunk::ArgsDelta {
                index: 0,
                text: " \"ls\"}".into(),
            },
            Chunk::ToolCallComplete { index: 0 },
            Chunk::Finish {
                reason: Finish::ToolUse,
            },
        ];
        let events = render_stream(&chunks, answer.usage, &meta(true));
        assert_eq!(events.len(), 3, "two texts, the call whole with the finish");
        assert!(events.iter().all(|e| e.event.is_none()));
        // No response of no parts: the finish and usage go with the last one.
        assert!(!events.iter().any(|e| e.data.contains(r#""parts":[]"#)));
        assert!(events[2].data.contains("functionCall") && events[2].data.contains("STOP"));
        let empty = render_stream(
            &[Chunk::Finish {
                reason: Finish::Stop,
            }],
            answer.usage,
            &meta(true),
        );
        assert_eq!(empty.len(), 1);
        assert!(
            empty[0].data.contains(r#""parts":[{"text":""}]"#),
            "{empty:?}"
        );
        let back = parse_stream(&events).expect("parses");
        let whole = crate::llm::stream::assemble(&back.stream).expect("assembles");
        assert_eq!(whole.text.as_deref(), Some("Looking."));
        assert_eq!(whole.tool_calls[0].name, "exec");
        assert_eq!(back.usage, answer.usage);
        let cut = render_stream(&chunks[..4], answer.usage, &meta(false));
        assert_eq!(cut.len(), 2, "the texts; the call never whole");
        assert!(matches!(
            parse_stream(&cut),
            Err(WireError::Truncated { events: 2 })
        ));
    }

    /// A call whose arguments are no object is not made: `MALFORMED_FUNCTION_CALL`, or the
    /// output limit when it cut the call off; the agent gets no call.
    #[test]
    fn a_call_the_api_cannot_make_is_not_made() {
        let bad = ModelResponse {
            tool_calls: vec![call("c1", Arguments::Raw("{\"command\": \"l".into()))],
            finish: Finish::ToolUse,
            ..empty_response()
        };
        let body = render_body(&bad, &meta(true));
        assert_eq!(body["candidates"][0]["finishReason"], MALFORMED);
        assert_eq!(body["candidates"][0]["content"]["parts"], json!([]));
        let delivered = delivered(bad.clone());
        assert!(delivered.tool_calls.is_empty());
        assert_eq!(delivered.finish, Finish::Stop);
        let cut_by_limit = ModelResponse {
            finish: Finish::Length,
            ..bad
        };
        let body = render_body(&cut_by_limit, &meta(true));
        assert_eq!(body["candidates"][0]["finishReason"], "MAX_TOKENS");
        assert_eq!(super::delivered(cut_by_limit).finish, Finish::Length);
        let listed = ModelResponse {
            tool_calls: vec![call("c1", Arguments::parsed(json!([1])))],
            ..empty_response()
        };
        assert_eq!(
            render_body(&listed, &meta(true))["candidates"][0]["finishReason"],
            MALFORMED
        );
    }

    /// What the second reading found: the AI SDK's `{name, content}` results are their text;
    /// a turn's text parts are one message; a stream with one malformed call makes none of
    /// its calls; a model id with a colon is not the Gemini API's.
    #[test]
    fn clients_shapes_read_as_they_mean() {
        let body = json!({"contents": [
            {"role": "user", "parts": [{"text": "<session_context/>"}, {"text": "List."}]},
            {"role": "model", "parts": [{"functionCall": {"id": "c1", "name": "exec", "args": {}}}]},
            {"role": "user", "parts": [{"functionResponse": {"id": "c1", "name": "exec",
                "response": {"name": "exec", "content": "Invalid input for tool exec"}}}]}
        ]});
        let r = parse_request(&body).expect("reads");
        assert_eq!(r.messages[0].content, "<session_context/>List.");
        assert_eq!(r.messages.len(), 3);
        assert_eq!(r.messages[2].content, "Invalid input for tool exec");
        let chunks = vec![
            Chunk::ToolCallStart {
                index: 0,
                id: "c1".into(),
                name: "exec".into(),
            },
            Chunk::ToolCallComplete { index: 0 },
            Chunk::ToolCallStart {
                index: 1,
                id: "c2".into(),
                name: "exec".into(),
            },
            Chunk::ArgsDelta {
                index: 1,
                text: "{\"command\": \"l".into(),
            },
            Chunk::ToolCallComplete { index: 1 },
            Chunk::Finish {
                reason: Finish::ToolUse,
            },
        ];
        let events = render_stream(&chunks, Usage::default(), &meta(true));
        assert!(
            events.iter().all(|e| !e.data.contains("functionCall")),
            "{events:?}"
        );
        assert!(events.last().is_some_and(|e| e.data.contains(MALFORMED)));
        // A call without argument pieces has `{}` and is made.
        let events = render_stream(&chunks[..2], Usage::default(), &meta(true));
        assert!(events[0].data.contains(r#""args":{}"#), "{events:?}");
        use super::super::{Api, Provider};
        assert_eq!(
            Provider::of_request("/v1/models/llama3:8b", |_| false),
            Provider::Openai
        );
        assert_eq!(
            Provider::of_request("/v1/models/ft:gpt-4o-mini:org:x", |_| false),
            Provider::Openai
        );
        assert_eq!(Api::of_path("/v1/models/llama3:8b"), None);
    }

    /// A prompt the API blocked (no candidate, `promptFeedback.blockReason`) is a filtered
    /// answer, not an empty one.
    #[test]
    fn a_blocked_prompt_is_filtered() {
        let body = json!({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"},
            "usageMetadata": {"promptTokenCount": 7, "totalTokenCount": 7}});
        let r = parse_body(&body).expect("reads");
        assert_eq!(r.finish, Finish::ContentFilter);
        assert!(r.text.is_none() && r.tool_calls.is_empty());
        let r = parse_stream(&[SseEvent::data(body.to_string())]).expect("reads");
        assert!(
            matches!(
                r.stream.last(),
                Some(Chunk::Finish {
                    reason: Finish::ContentFilter
                })
            ),
            "{:?}",
            r.stream
        );
        // Feedback beside a candidate is the candidate's answer.
        let fine = json!({"promptFeedback": {"safetyRatings": []},
            "candidates": [{"content": {"parts": [{"text": "ok"}]}, "finishReason": "STOP"}]});
        assert_eq!(parse_body(&fine).expect("reads").finish, Finish::Stop);
    }

    /// Faults in Google's shape; a rate limit's hint as `RetryInfo`, read back from a
    /// recorded body.
    #[test]
    fn faults_are_google_s() {
        let (status, body) = render_fault(FaultKind::RateLimit, "slow down", Some(1500));
        assert_eq!(status, 429);
        assert_eq!(body["error"]["status"], "RESOURCE_EXHAUSTED");
        assert_eq!(body["error"]["details"][0]["retryDelay"], "2s");
        assert_eq!(retry_delay_ms(&body), Some(2000));
        let api = json!({"error": {"code": 429, "details": [
            {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []},
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "12.5s"}]}});
        assert_eq!(retry_delay_ms(&api), Some(12_500));
        assert_eq!(retry_delay_ms(&json!({"error": {"code": 429}})), None);
        assert_eq!(render_fault(FaultKind::Timeout, "t", None).0, 504);
        assert_eq!(
            render_fault(FaultKind::ServerError, "overloaded", None).0,
            503
        );
        let p = super::super::Provider::Gemini;
        for kind in [
            FaultKind::RateLimit,
            FaultKind::ServerError,
            FaultKind::Timeout,
        ] {
            let (status, body) = p.render_fault(kind, "m");
            assert_eq!(p.fault(status, &body), Some(kind), "{kind:?}");
        }
        let (status, body) = p.render_fault(
            FaultKind::ContextOverflow,
            "The input token count (2000000) exceeds the maximum number of tokens allowed (1048576).",
        );
        assert_eq!(p.fault(status, &body), Some(FaultKind::ContextOverflow));
        assert_eq!(error_body(404, "no")["error"]["status"], "NOT_FOUND");
    }
}
