//! Each model call's messages, whichever way the instrumentation recorded them: GenAI
//! conventions' message attributes or events, OpenInference's and Traceloop's flat attributes.

use super::*;

// ---------------------------------------------------------------------------------------------
// Messages, whichever way the instrumentation recorded them.

/// One message of a call's input or output, as harness needs it.
#[derive(Debug, Default, Clone)]
pub(super) struct Msg {
    pub(super) role: String,
    pub(super) text: String,
    /// Tool calls: id, name, parsed arguments.
    pub(super) calls: Vec<(String, String, Value)>,
    /// The call a tool result answers.
    pub(super) answers: Option<String>,
    /// The result's failure flag as the provider's wire carried it (Anthropic's `is_error`),
    /// when the span shows it.
    pub(super) is_error: Option<bool>,
}

/// A call's answer from the assistant messages of its output: an instrumentation that writes
/// each call of a parallel answer as a message of its own (OpenAI Responses' output items)
/// gives one answer with every call, in order.
pub(super) fn answer_of(out: Vec<Msg>) -> Option<Msg> {
    let mut answers = out.into_iter().filter(|m| m.role == "assistant");
    let mut first = answers.next()?;
    for m in answers {
        if !m.text.is_empty() {
            if !first.text.is_empty() {
                first.text.push('\n');
            }
            first.text.push_str(&m.text);
        }
        for c in m.calls {
            // The same call written twice (a message per item and the items again) is one.
            if c.0.is_empty() || !first.calls.iter().any(|f| f.0 == c.0) {
                first.calls.push(c);
            }
        }
    }
    Some(first)
}

/// A call's messages: the input, the output, and the finish reason.
#[derive(Default)]
pub(super) struct Exchange {
    pub(super) input: Vec<Msg>,
    pub(super) output: Option<Msg>,
    pub(super) finish: Option<String>,
}

/// A message role as the import names it: Gemini's `model` is the assistant.
fn role_of(role: &str) -> String {
    if role == "model" { "assistant" } else { role }.to_owned()
}

/// A JSON attribute: a structured value as is, a string parsed. `Err` names what is wrong.
pub(super) fn json_attr(v: &Value) -> Result<Value, String> {
    match v {
        Value::String(s) => serde_json::from_str(s).map_err(|e| format!("not JSON: {e}")),
        other => Ok(other.clone()),
    }
}

/// `gen_ai.input.messages` / `gen_ai.output.messages`: `[{role, parts: [...], finish_reason?}]`.
pub(super) fn semconv_messages(
    v: &Value,
    what: &str,
) -> Result<(Vec<Msg>, Option<String>), String> {
    let list = json_attr(v).map_err(|e| format!("{what} is {e}"))?;
    let Value::Array(list) = list else {
        return Err(format!("{what} is not a list of messages"));
    };
    let mut out = Vec::new();
    let mut finish = None;
    for m in &list {
        let role = role_of(m.get("role").and_then(Value::as_str).unwrap_or("user"));
        if finish.is_none() {
            finish = m
                .get("finish_reason")
                .and_then(Value::as_str)
                .map(str::to_owned);
        }
        let mut msg = Msg {
            role: role.clone(),
            ..Msg::default()
        };
        let mut texts = Vec::new();
        let mut responses = false;
        let parts = m.get("parts").and_then(Value::as_array);
        for p in parts.into_iter().flatten() {
            match p.get("type").and_then(Value::as_str) {
                Some("text") => {
                    if let Some(t) = p.get("content").and_then(Value::as_str) {
                        texts.push(t.to_owned());
                    }
                }
                Some("tool_call") => msg.calls.push((
                    non_empty(p.get("id")).unwrap_or_default().to_owned(),
                    p.get("name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    parse_args(p.get("arguments")),
                )),
                Some("tool_call_response") => {
                    responses = true;
                    out.push(Msg {
                        role: "tool".to_owned(),
                        text: result_text(p.get("response").or_else(|| p.get("result"))),
                        answers: non_empty(p.get("id")).map(str::to_owned),
                        ..Msg::default()
                    });
                }
                _ => {}
            }
        }
        // A message of only tool results is those results.
        if responses && msg.calls.is_empty() && texts.is_empty() {
            continue;
        }
        // OpenLLMetry's LangChain instrumentation writes each block of an Anthropic answer's
        // content as a text part, its `tool_use` blocks too, beside their `tool_call` parts: a
        // text that is the JSON of a call the message holds is that call, not text.
        texts.retain(|t| !is_call_block(t, &msg.calls));
        msg.text = texts.join("\n");
        out.push(msg);
    }
    Ok((out, finish))
}

/// Is `text` the JSON of a content block that is no text: a `tool_use` block of one of `calls`
/// (by its id), or a thinking or server-tool block, in a message with calls?
fn is_call_block(text: &str, calls: &[(String, String, Value)]) -> bool {
    if !text.trim_start().starts_with('{') || calls.is_empty() {
        return false;
    }
    let Ok(block) = serde_json::from_str::<Value>(text) else {
        return false;
    };
    match block.get("type").and_then(Value::as_str) {
        Some("tool_use") => {
            non_empty(block.get("id")).is_some_and(|id| calls.iter().any(|c| c.0 == id))
        }
        // Other blocks it writes so are no text either.
        Some("thinking" | "redacted_thinking" | "server_tool_use") => true,
        _ => false,
    }
}

/// A string value that says something (an empty id is no id).
pub(super) fn non_empty(v: Option<&Value>) -> Option<&str> {
    v.and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// A tool result as the text the model was sent. Instrumentations write it wrapped: as a JSON
/// string (the AI SDK's `JSON.stringify` of the tool's return value), as a list of content
/// blocks (the Anthropic SDK's own spans), or as the framework's whole tool message
/// (LangChain's serialised `ToolMessage`, `{"type": "tool", "data": {"content": …}}`); each is
/// unwrapped to its text. Any other text is the result as it is.
pub(super) fn result_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => {
            let t = s.trim_start();
            if t.starts_with('"') || t.starts_with('[') || t.starts_with('{') {
                if let Ok(doc) = serde_json::from_str::<Value>(s) {
                    if let Some(text) = unwrapped(&doc) {
                        return text;
                    }
                }
            }
            s.clone()
        }
        None | Some(Value::Null) => String::new(),
        Some(other) => unwrapped(other).unwrap_or_else(|| crate::json::compact(other)),
    }
}

/// The text inside a wrapped tool result ([`result_text`]), or `None` when it is no wrapper.
fn unwrapped(doc: &Value) -> Option<String> {
    match doc {
        Value::String(s) => Some(s.clone()),
        Value::Array(blocks)
            if !blocks.is_empty()
                && blocks.iter().all(|b| {
                    // `{"type": "text", "text": …}`, or a Converse block `{"text": …}`.
                    (b.get("type").and_then(Value::as_str) == Some("text")
                        || b.as_object().is_some_and(|o| o.len() == 1))
                        && b.get("text").is_some_and(Value::is_string)
                }) =>
        {
            Some(content_text(Some(doc)))
        }
        Value::Object(o) if o.get("type").and_then(Value::as_str) == Some("tool") => o
            .get("data")
            .and_then(|d| d.get("content"))
            .map(|c| content_text(Some(c))),
        _ => None,
    }
}

/// The call id a framework's serialised tool message names (LangChain's `ToolMessage`:
/// `tool_call_id`, at the top or under `data`).
pub(super) fn tool_message_call(v: Option<&Value>) -> Option<String> {
    let doc = match v? {
        Value::String(s) => serde_json::from_str::<Value>(s).ok()?,
        other => other.clone(),
    };
    let at = |d: &Value| non_empty(d.get("tool_call_id")).map(str::to_owned);
    at(&doc).or_else(|| doc.get("data").and_then(at))
}

/// Content as Bedrock's Converse API shapes it (strands-agents records it so, as a JSON
/// string, in its per-message events): a list of blocks, each one key — `text`, `toolUse`
/// (`toolUseId`, `name`, `input`), `toolResult` (`toolUseId`, `content` blocks, `status`).
fn converse_blocks(content: Option<&Value>) -> Option<Vec<Value>> {
    let list = match content? {
        Value::String(s) if s.trim_start().starts_with('[') => serde_json::from_str(s).ok()?,
        Value::Array(a) => Value::Array(a.clone()),
        _ => return None,
    };
    let Value::Array(blocks) = list else {
        return None;
    };
    let converse = |b: &Value| {
        b.as_object().is_some_and(|o| {
            o.len() == 1
                && o.keys().all(|k| {
                    matches!(
                        k.as_str(),
                        "text"
                            | "toolUse"
                            | "toolResult"
                            | "reasoningContent"
                            | "image"
                            | "document"
                    )
                })
        })
    };
    (!blocks.is_empty()
        && blocks.iter().all(converse)
        && blocks.iter().any(|b| {
            b.get("toolUse").is_some()
                || b.get("toolResult").is_some()
                || b.get("text").is_some_and(Value::is_string)
        }))
    .then_some(blocks)
}

/// A message of Converse blocks ([`converse_blocks`]); a message of tool results is one
/// message per result.
fn converse_messages(blocks: &[Value], role: &str) -> Vec<Msg> {
    let mut msg = Msg {
        role: role_of(role),
        ..Msg::default()
    };
    let mut out = Vec::new();
    let mut texts = Vec::new();
    for b in blocks {
        if let Some(t) = b.get("text").and_then(Value::as_str) {
            texts.push(t.to_owned());
        } else if let Some(u) = b.get("toolUse") {
            msg.calls.push((
                non_empty(u.get("toolUseId")).unwrap_or_default().to_owned(),
                u.get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                parse_args(u.get("input")),
            ));
        } else if let Some(r) = b.get("toolResult") {
            out.push(Msg {
                role: "tool".to_owned(),
                text: content_text(r.get("content")),
                answers: non_empty(r.get("toolUseId")).map(str::to_owned),
                is_error: r
                    .get("status")
                    .and_then(Value::as_str)
                    .map(|s| s == "error"),
                ..Msg::default()
            });
        }
    }
    if !out.is_empty() && msg.calls.is_empty() && texts.is_empty() {
        return out;
    }
    msg.text = texts.join("\n");
    out.insert(0, msg);
    out
}

/// An OpenAI-shaped message (`{role, content, tool_calls, tool_call_id}`), as the older events
/// and `gen_ai.content.prompt` carry them.
pub(super) fn openai_message(m: &Value, role: &str) -> Msg {
    let calls = m
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| {
            let f = c.get("function").unwrap_or(c);
            (
                c.get("id")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                f.get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                recorded_args(f.get("arguments")),
            )
        })
        .collect();
    Msg {
        role: role_of(m.get("role").and_then(Value::as_str).unwrap_or(role)),
        text: content_text(m.get("content")),
        calls,
        answers: non_empty(
            m.get("tool_call_id")
                .or_else(|| (role == "tool").then(|| m.get("id")).flatten()),
        )
        .map(str::to_owned),
        is_error: None,
    }
}

/// Flattened indexed attributes `PREFIX.N.REST` as `N -> REST -> value`.
pub(super) fn indexed<'a>(
    attrs: &'a Attrs,
    prefix: &str,
) -> BTreeMap<usize, BTreeMap<&'a str, &'a Value>> {
    let mut out: BTreeMap<usize, BTreeMap<&str, &Value>> = BTreeMap::new();
    for (k, v) in attrs.range(prefix.to_owned()..) {
        let Some(rest) = k.strip_prefix(prefix) else {
            break;
        };
        let Some((n, field)) = rest.split_once('.') else {
            continue;
        };
        if let Ok(n) = n.parse::<usize>() {
            out.entry(n).or_default().insert(field, v);
        }
    }
    out
}

/// Messages from flattened attributes: OpenInference (`message.role`, `message.content`,
/// `message.contents.K.message_content.text`, `message.tool_call_id`,
/// `message.tool_calls.J.tool_call.{id,function.name,function.arguments}`) or Traceloop
/// (`role`, `content`, `tool_call_id`, `tool_calls.J.{id,name,arguments}`, `finish_reason`).
pub(super) fn flat_messages(attrs: &Attrs, prefix: &str) -> (Vec<Msg>, Option<String>) {
    let mut out = Vec::new();
    let mut finish = None;
    for fields in indexed(attrs, prefix).into_values() {
        let get = |k: &str| {
            fields
                .get(k)
                .or_else(|| fields.get(format!("message.{k}").as_str()))
                .and_then(|v| v.as_str())
        };
        let mut text = get("content").map(str::to_owned).unwrap_or_default();
        if text.is_empty() {
            let parts: BTreeMap<usize, &str> = fields
                .iter()
                .filter_map(|(k, v)| {
                    let n = k
                        .strip_prefix("message.contents.")?
                        .strip_suffix(".message_content.text")?;
                    Some((n.parse().ok()?, v.as_str()?))
                })
                .collect();
            text = parts.into_values().collect::<Vec<_>>().join("\n");
        }
        let mut calls: BTreeMap<usize, (String, String, Value)> = BTreeMap::new();
        for (k, v) in &fields {
            let Some(rest) = k
                .strip_prefix("message.tool_calls.")
                .or_else(|| k.strip_prefix("tool_calls."))
            else {
                continue;
            };
            let Some((j, field)) = rest.split_once('.') else {
                continue;
            };
            let Ok(j) = j.parse::<usize>() else { continue };
            let call = calls.entry(j).or_default();
            match field {
                "tool_call.id" | "id" => call.0 = v.as_str().unwrap_or_default().to_owned(),
                "tool_call.function.name" | "name" => {
                    call.1 = v.as_str().unwrap_or_default().to_owned();
                }
                "tool_call.function.arguments" | "arguments" => call.2 = parse_args(Some(v)),
                _ => {}
            }
        }
        if finish.is_none() {
            finish = get("finish_reason").map(str::to_owned);
        }
        out.push(Msg {
            role: role_of(get("role").unwrap_or("user")),
            text,
            calls: calls
                .into_values()
                .map(|(id, name, args)| {
                    (
                        id,
                        name,
                        // No `arguments` attribute: the call had none (these
                        // instrumentations write no message attribute with capture off).
                        if args.is_null() {
                            Value::Object(Default::default())
                        } else {
                            args
                        },
                    )
                })
                .collect(),
            answers: get("tool_call_id")
                .filter(|s| !s.is_empty())
                .map(str::to_owned),
            is_error: None,
        });
    }
    (out, finish)
}

/// Per-message events (span events, or log records tied to the span): input messages and the
/// first choice; or the current conventions' one event of the whole call,
/// `gen_ai.client.inference.operation.details`, with `gen_ai.input.messages` and
/// `gen_ai.output.messages` as on a span (OpenTelemetry's `util-genai` with content in events
/// only, strands-agents). Messages in Converse blocks are read as such.
pub(super) fn event_messages<'a>(
    events: impl Iterator<Item = (&'a str, Value)>,
) -> Result<Exchange, String> {
    let mut ex = Exchange::default();
    let message = |body: &Value, role: &str| -> Vec<Msg> {
        match converse_blocks(body.get("content")) {
            Some(blocks) => converse_messages(&blocks, role),
            None => vec![openai_message(body, role)],
        }
    };
    for (name, body) in events {
        match name {
            "gen_ai.system.message" => ex.input.extend(message(&body, "system")),
            "gen_ai.user.message" => ex.input.extend(message(&body, "user")),
            "gen_ai.assistant.message" => ex.input.extend(message(&body, "assistant")),
            "gen_ai.tool.message" => ex.input.extend(message(&body, "tool")),
            "gen_ai.client.inference.operation.details" => {
                if let Some(v) = body.get("gen_ai.input.messages") {
                    ex.input = semconv_messages(v, "gen_ai.input.messages")?.0;
                }
                if let Some(v) = body.get("gen_ai.output.messages") {
                    let (out, finish) = semconv_messages(v, "gen_ai.output.messages")?;
                    ex.output = answer_of(out);
                    ex.finish = finish;
                }
            }
            "gen_ai.choice" if ex.output.is_none() => {
                let message = body.get("message").unwrap_or(&Value::Null);
                ex.output = match converse_blocks(Some(message)) {
                    Some(blocks) => converse_messages(&blocks, "assistant").into_iter().next(),
                    None => Some(openai_message(message, "assistant")),
                };
                ex.finish = body
                    .get("finish_reason")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
            }
            "gen_ai.content.prompt" => {
                if let Some(Value::Array(list)) = body.get("gen_ai.prompt").map(parsed) {
                    ex.input
                        .extend(list.iter().map(|m| openai_message(m, "user")));
                }
            }
            "gen_ai.content.completion" => {
                if let Some(Value::Array(list)) = body.get("gen_ai.completion").map(parsed) {
                    ex.output = list.first().map(|m| openai_message(m, "assistant"));
                }
            }
            _ => {}
        }
    }
    Ok(ex)
}

/// A log record's body: its body, else its attributes (the current conventions' events keep
/// the messages there).
pub(super) fn log_body(l: &Log) -> Value {
    match &l.body {
        Value::Null => Value::Object(l.attrs.clone().into_iter().collect()),
        b => b.clone(),
    }
}

pub(super) fn parsed(v: &Value) -> Value {
    json_attr(v).unwrap_or(Value::Null)
}

/// A span event's body: `gen_ai.event.content` (JSON) when there, else its attributes.
pub(super) fn event_body(e: &SpanEvent) -> Value {
    match e.attrs.get("gen_ai.event.content") {
        Some(v) => parsed(v),
        None => Value::Object(e.attrs.clone().into_iter().collect()),
    }
}

/// What an inference span sent and answered. `Err` is a content attribute that is not the JSON
/// it should be.
pub(super) fn exchange(s: &Span, logs: &HashMap<String, Vec<&Log>>) -> Result<Exchange, String> {
    let mut ex = exchange_of(s, logs)?;
    // Content captured (a message of the call says something): arguments an answer's call
    // leaves out are none, not unrecorded (Bedrock's instrumentation leaves out an empty
    // input, openai-v2 empty arguments, whatever the capture).
    let captured = ex
        .input
        .iter()
        .chain(&ex.output)
        .any(|m| !m.text.trim().is_empty());
    if captured {
        for c in ex.output.iter_mut().flat_map(|o| o.calls.iter_mut()) {
            if crate::import::is_not_recorded(&c.2) {
                c.2 = Value::Object(serde_json::Map::new());
            }
        }
    }
    if let Some(flags) = s.attrs.get("input.value").and_then(request_error_flags) {
        for m in &mut ex.input {
            if let Some(flag) = m.answers.as_ref().and_then(|id| flags.get(id)) {
                m.is_error = Some(*flag);
            }
        }
    }
    Ok(ex)
}

/// The `is_error` flags of the tool results in a raw Anthropic Messages request (OpenInference's
/// `input.value`), by the call they answer: the only place an instrumentation keeps them.
fn request_error_flags(v: &Value) -> Option<HashMap<String, bool>> {
    let text = v.as_str()?;
    if !text.contains("\"tool_result\"") {
        return None;
    }
    let doc: Value = serde_json::from_str(text).ok()?;
    let mut flags = HashMap::new();
    for m in doc.get("messages")?.as_array()? {
        for b in m
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if b.get("type").and_then(Value::as_str) != Some("tool_result") {
                continue;
            }
            if let Some(id) = non_empty(b.get("tool_use_id")) {
                let flag = b.get("is_error").and_then(Value::as_bool).unwrap_or(false);
                flags.insert(id.to_owned(), flag);
            }
        }
    }
    Some(flags)
}

/// The Vercel AI SDK's model-call span (`ai.generateText.doGenerate`, `ai.streamText.doStream`):
/// `ai.prompt.messages` in the SDK's own message format, `ai.response.text`,
/// `ai.response.toolCalls` (arguments as a JSON string or an object), `ai.response.finishReason`.
/// A tool result's `error-text`/`error-json` output is Anthropic's `is_error` on the wire, and
/// nothing on OpenAI's.
fn ai_sdk_exchange(s: &Span) -> Result<Exchange, String> {
    let mut ex = Exchange::default();
    let anthropic = [s.str("gen_ai.system"), s.str("ai.model.provider")]
        .into_iter()
        .flatten()
        .any(|p| p.starts_with("anthropic"));
    if let Some(v) = s.attrs.get("ai.prompt.messages") {
        let list = json_attr(v).map_err(|e| format!("ai.prompt.messages is {e}"))?;
        let Value::Array(list) = list else {
            return Err("ai.prompt.messages is not a list of messages".to_owned());
        };
        for m in &list {
            let role = m.get("role").and_then(Value::as_str).unwrap_or("user");
            let content = m.get("content");
            let parts = content.and_then(Value::as_array);
            let mut msg = Msg {
                role: role.to_owned(),
                ..Msg::default()
            };
            let mut texts = Vec::new();
            if let Some(Value::String(t)) = content {
                texts.push(t.clone());
            }
            for p in parts.into_iter().flatten() {
                match p.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        if let Some(t) = p.get("text").and_then(Value::as_str) {
                            texts.push(t.to_owned());
                        }
                    }
                    Some("tool-call") => msg.calls.push(ai_sdk_call(p)),
                    Some("tool-result") => {
                        let output = p.get("output").unwrap_or(&Value::Null);
                        let kind = output.get("type").and_then(Value::as_str).unwrap_or("");
                        let text = match output.get("value") {
                            Some(Value::String(t)) => t.clone(),
                            Some(v) if kind == "content" => content_text(Some(v)),
                            Some(v) => crate::json::compact(v),
                            None => result_text(p.get("result")),
                        };
                        ex.input.push(Msg {
                            role: "tool".to_owned(),
                            text,
                            answers: non_empty(p.get("toolCallId")).map(str::to_owned),
                            is_error: anthropic.then_some(kind.starts_with("error")),
                            ..Msg::default()
                        });
                    }
                    _ => {}
                }
            }
            if role == "tool" {
                continue;
            }
            msg.text = texts.join("\n");
            ex.input.push(msg);
        }
    }
    let text = s.str("ai.response.text").unwrap_or_default().to_owned();
    let calls = match s.attrs.get("ai.response.toolCalls") {
        Some(v) => match json_attr(v).map_err(|e| format!("ai.response.toolCalls is {e}"))? {
            Value::Array(list) => list.iter().map(ai_sdk_call).collect(),
            _ => return Err("ai.response.toolCalls is not a list of calls".to_owned()),
        },
        None => Vec::new(),
    };
    if !text.is_empty() || !calls.is_empty() || s.attrs.contains_key("ai.response.text") {
        ex.output = Some(Msg {
            role: "assistant".to_owned(),
            text,
            calls,
            ..Msg::default()
        });
    }
    ex.finish = s
        .str("ai.response.finishReason")
        .map(|r| match r {
            "tool-calls" => "tool_calls",
            "content-filter" => "content_filter",
            other => other,
        })
        .map(str::to_owned);
    Ok(ex)
}

/// The answer in a span's raw output (`output.value`) when no output messages were recorded:
/// an OpenAI Responses object (`output` items `function_call` and `message`; the openai-agents
/// SDK records a streamed Chat Completions answer so), a Chat Completions object (`choices`),
/// or a one-element list of either.
fn response_object(text: &str) -> Option<(Msg, Option<String>)> {
    let t = text.trim_start();
    if !t.starts_with('{') && !t.starts_with('[') {
        return None;
    }
    let mut doc: Value = serde_json::from_str(text).ok()?;
    if let Value::Array(list) = &mut doc {
        if list.len() != 1 {
            return None;
        }
        doc = list.remove(0);
    }
    if let Some(choice) = doc.get("choices").and_then(|c| c.get(0)) {
        let m = openai_message(choice.get("message")?, "assistant");
        let finish = non_empty(choice.get("finish_reason")).map(str::to_owned);
        return Some((m, finish));
    }
    let items = doc.get("output")?.as_array()?;
    let mut out = Msg {
        role: "assistant".to_owned(),
        ..Msg::default()
    };
    let mut texts = Vec::new();
    for item in items {
        match item.get("type").and_then(Value::as_str) {
            Some("function_call") => out.calls.push((
                non_empty(item.get("call_id"))
                    .unwrap_or_default()
                    .to_owned(),
                item.get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                parse_args(item.get("arguments")),
            )),
            Some("message") => {
                for part in item
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if let Some(t) = part.get("text").and_then(Value::as_str) {
                        texts.push(t.to_owned());
                    }
                }
            }
            _ => {}
        }
    }
    out.text = texts.join("\n");
    Some((out, None))
}

/// The names of the tools a model call was offered, where the span records them: GenAI's
/// `gen_ai.tool.definitions`, OpenInference's `llm.tools.N.tool.json_schema`, the AI SDK's
/// `ai.prompt.tools` (each a tool's JSON: `name`, or `function.name`).
/// The tools an agent's span says it has (`gen_ai.agent.tools`: a list of names, or a JSON
/// string of one), in its order.
pub(super) fn agent_tools(s: &Span) -> Option<Vec<String>> {
    if s.operation() != Some("invoke_agent") {
        return None;
    }
    let Value::Array(list) = json_attr(s.attrs.get("gen_ai.agent.tools")?).ok()? else {
        return None;
    };
    let names: Vec<String> = list
        .iter()
        .filter_map(|t| non_empty(Some(t)).map(str::to_owned))
        .collect();
    (!names.is_empty()).then_some(names)
}

pub(super) fn offered_tools(s: &Span) -> Option<Vec<String>> {
    let list: Vec<Value> = if let Some(v) = s.attrs.get("gen_ai.tool.definitions") {
        match json_attr(v).ok()? {
            Value::Array(a) => a,
            _ => return None,
        }
    } else if let Some(v) = s.attrs.get("ai.prompt.tools") {
        match v {
            Value::Array(a) => a.clone(),
            other => match json_attr(other).ok()? {
                Value::Array(a) => a,
                _ => return None,
            },
        }
    } else {
        let schemas = indexed(&s.attrs, "llm.tools.");
        schemas
            .values()
            .filter_map(|f| f.get("tool.json_schema").map(|v| (*v).clone()))
            .collect()
    };
    definition_names(&list)
}

/// The tools a call's event lists (`gen_ai.tool.definitions` of a
/// `gen_ai.client.inference.operation.details` log record or span event).
pub(super) fn event_tools(body: &Value) -> Option<Vec<String>> {
    match json_attr(body.get("gen_ai.tool.definitions")?).ok()? {
        Value::Array(list) => definition_names(&list),
        _ => None,
    }
}

/// The names of tool definitions: OpenAI's (`{name}`, `{function: {name}}`, or their JSON
/// text), or Gemini's lists of `function_declarations`.
fn definition_names(list: &[Value]) -> Option<Vec<String>> {
    let name = |t: &Value| -> Option<String> {
        let t = match t {
            Value::String(text) => serde_json::from_str::<Value>(text).ok()?,
            other => other.clone(),
        };
        non_empty(t.get("name"))
            .or_else(|| t.get("function").and_then(|f| non_empty(f.get("name"))))
            .map(str::to_owned)
    };
    // Gemini's form: a list of tools, each a list of `function_declarations`.
    let declared = |t: &Value| -> Vec<Value> {
        ["function_declarations", "functionDeclarations"]
            .iter()
            .find_map(|k| t.get(*k).and_then(Value::as_array))
            .cloned()
            .unwrap_or_else(|| vec![t.clone()])
    };
    let names: Vec<String> = list
        .iter()
        .flat_map(declared)
        .filter_map(|t| name(&t))
        .collect();
    (!names.is_empty()).then_some(names)
}

/// An AI SDK tool call: `toolCallId`, `toolName`, `input` (an object, or its JSON text).
fn ai_sdk_call(c: &Value) -> (String, String, Value) {
    (
        non_empty(c.get("toolCallId"))
            .unwrap_or_default()
            .to_owned(),
        c.get("toolName")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        parse_args(c.get("input").or_else(|| c.get("args"))),
    )
}

fn exchange_of(s: &Span, logs: &HashMap<String, Vec<&Log>>) -> Result<Exchange, String> {
    if s.ai_operation().is_some() {
        return ai_sdk_exchange(s);
    }
    let mut ex = Exchange::default();
    let mut found = false;
    if let Some(v) = s.attrs.get("gen_ai.input.messages") {
        ex.input = semconv_messages(v, "gen_ai.input.messages")?.0;
        found = true;
    }
    if let Some(v) = s.attrs.get("gen_ai.output.messages") {
        let (out, finish) = semconv_messages(v, "gen_ai.output.messages")?;
        ex.output = answer_of(out);
        ex.finish = finish;
        found = true;
    }
    if !found {
        for (input, output) in [
            ("llm.input_messages.", "llm.output_messages."),
            ("gen_ai.prompt.", "gen_ai.completion."),
        ] {
            let (i, _) = flat_messages(&s.attrs, input);
            let (o, finish) = flat_messages(&s.attrs, output);
            if !i.is_empty() || !o.is_empty() {
                ex.input = i;
                ex.output = answer_of(
                    o.into_iter()
                        .map(|m| Msg {
                            role: "assistant".to_owned(),
                            ..m
                        })
                        .collect(),
                );
                ex.finish = finish;
                found = true;
                break;
            }
        }
    }
    if !found {
        let mut events: Vec<(u64, &str, Value)> = s
            .events
            .iter()
            .filter(|e| e.name.starts_with("gen_ai."))
            .map(|e| (e.time, e.name.as_str(), event_body(e)))
            .collect();
        if let Some(list) = logs.get(&format!("{}/{}", s.trace, s.id)) {
            events.extend(list.iter().map(|l| (l.time, l.name.as_str(), log_body(l))));
        }
        // Log records come in any order: by time, then as written.
        events.sort_by_key(|(t, _, _)| *t);
        ex = event_messages(events.into_iter().map(|(_, n, b)| (n, b)))?;
    }
    if ex.output.is_none() {
        if let Some((out, finish)) = s.str("output.value").and_then(response_object) {
            ex.output = Some(out);
            ex.finish = ex.finish.or(finish);
        }
    }
    if ex.finish.is_none() {
        ex.finish = s
            .attrs
            .get("gen_ai.response.finish_reasons")
            .and_then(|v| match v {
                Value::Array(a) => a.first().and_then(Value::as_str),
                Value::String(s) => Some(s.as_str()),
                _ => None,
            })
            .or_else(|| s.str("llm.finish_reason"))
            .or_else(|| s.str("anthropic.message.stop_reason"))
            .map(str::to_owned);
    }
    Ok(ex)
}

pub(super) fn finish_of(reason: Option<&str>, calls: bool) -> Finish {
    match reason {
        Some("length" | "max_tokens" | "MAX_TOKENS") => Finish::Length,
        Some("content_filter" | "SAFETY") => Finish::ContentFilter,
        Some("stop_sequence") => Finish::StopSequence,
        _ if calls => Finish::ToolUse,
        // The model asked for tools, though the span recorded none of its calls (content
        // capture off): an answer that asked for tools, not a text answer.
        Some(r) if asks_for_tools(r) => Finish::ToolUse,
        _ => Finish::Stop,
    }
}

/// Is this recorded finish reason the model's asking for tools (OpenAI `tool_calls` and the
/// older `function_call`, Anthropic `tool_use`, the AI SDK's `tool-calls`, Bedrock's
/// `toolUse`)?
pub(super) fn asks_for_tools(reason: &str) -> bool {
    [
        "tool_calls",
        "function_call",
        "tool_use",
        "tool-calls",
        "tooluse",
    ]
    .iter()
    .any(|r| reason.eq_ignore_ascii_case(r))
}

/// The provider fault a failed inference span reads as.
pub(super) fn fault_of(s: &Span, message: &str) -> FaultKind {
    let text =
        format!("{} {message}", s.str("error.type").unwrap_or_default()).to_ascii_lowercase();
    if text.contains("ratelimit") || text.contains("rate_limit") || text.contains("429") {
        FaultKind::RateLimit
    } else if text.contains("timeout") || text.contains("timed out") {
        FaultKind::Timeout
    } else if text.contains("context_length") || text.contains("context window") {
        FaultKind::ContextOverflow
    } else if [
        "badrequest",
        "bad request",
        "invalid_request",
        "authentication",
        "permissiondenied",
        "permission_denied",
        "notfound",
        "not_found",
        "unprocessable",
        "error code: 400",
        "error code: 401",
        "error code: 403",
        "error code: 404",
        "error code: 422",
    ]
    .iter()
    .any(|w| text.contains(w))
    {
        FaultKind::Refused
    } else {
        FaultKind::ServerError
    }
}

/// A Gemini function response as the model reads it: instrumentations record the `response`
/// object (`{"output": …}`, `{"error": …}`), and the model is sent its text, an `error` key
/// being the call's failure, as `harness exec` reads the wire.
pub(super) fn unwrap_function_response(m: &mut Msg) {
    let Ok(v @ Value::Object(_)) = serde_json::from_str::<Value>(&m.text) else {
        return;
    };
    let (text, failed) = crate::provider::gemini::response_text(Some(&v));
    m.text = text;
    if failed {
        m.is_error = Some(true);
    }
}

/// Are two recorded messages the same message (role, text and calls)?
fn same(a: &Msg, b: &Msg) -> bool {
    a.role == b.role && a.text == b.text && a.calls == b.calls
}

/// Does input `next` continue input `p`: the same messages (role, text and calls) first, then
/// more? (An input recorded empty continues nothing.)
fn continues(p: &[Msg], next: &[Msg]) -> bool {
    !p.is_empty() && next.len() > p.len() && p.iter().zip(next).all(|(a, b)| same(a, b))
}

/// The agent's own copy of the answer to input `p` in `next`, an input that continues it: the
/// message right after `p`'s, an assistant message with calls, every call named by an id, and
/// followed by a result of one of them. A call listed twice under one id is one call when the
/// two are the same (two merged spans each numbering it); two different calls under one id are
/// no copy.
fn agents_copy(p: &[Msg], next: &[Msg]) -> Option<Msg> {
    let (copy, answer) = (next.get(p.len())?, next.get(p.len() + 1)?);
    if copy.role != "assistant" {
        return None;
    }
    let mut calls: Vec<(String, String, Value)> = Vec::with_capacity(copy.calls.len());
    for c in &copy.calls {
        match calls.iter().find(|k| k.0 == c.0) {
            Some(k) if k == c => {}
            Some(_) => return None,
            None => calls.push(c.clone()),
        }
    }
    let answered = answer.role == "tool"
        && answer
            .answers
            .as_deref()
            .is_some_and(|a| calls.iter().any(|c| c.0 == a));
    (!calls.is_empty() && !calls.iter().any(|c| c.0.is_empty()) && answered).then(|| Msg {
        calls,
        ..copy.clone()
    })
}

/// Answers whose span recorded less than the agent sent back are read from the agent's copy in
/// the input of the model call that continues this one's (the first later one whose input
/// starts with this one's): no output at all (OpenLLMetry's openai-agents on Chat
/// Completions), calls without ids (OpenInference's google-genai), or fewer calls, the same
/// tools in the same order (a stream's last chunk alone). A failed call has no answer to mend.
/// Returns how many were read so, and how many answers recorded no output and have no copy.
pub(super) fn answers_from_next_input(
    exchanges: &mut [Option<Exchange>],
    failed: &[bool],
) -> (usize, usize) {
    let (mut copied, mut blank) = (0, 0);
    for i in 0..exchanges.len() {
        let Some(ex) = exchanges[i].as_ref() else {
            continue;
        };
        if failed[i] {
            continue;
        }
        // The first later call that continues this one's input decides, unless the same
        // request was sent again before it (a retry: the continuation is the retry's).
        let copy = exchanges[i + 1..]
            .iter()
            .flatten()
            .take_while(|next| {
                next.input.len() != ex.input.len()
                    || !ex.input.iter().zip(&next.input).all(|(a, b)| same(a, b))
            })
            .find(|next| continues(&ex.input, &next.input))
            .and_then(|next| agents_copy(&ex.input, &next.input));
        let Some(ex) = exchanges[i].as_mut() else {
            continue;
        };
        let Some(copy) = copy else {
            if ex.output.is_none() && !ex.input.is_empty() {
                blank += 1;
            }
            continue;
        };
        match &mut ex.output {
            None => {
                ex.output = Some(Msg {
                    role: "assistant".to_owned(),
                    text: copy.text,
                    calls: copy.calls,
                    ..Msg::default()
                });
                copied += 1;
            }
            Some(out) => {
                let names = |calls: &[(String, String, Value)]| -> Vec<String> {
                    calls.iter().map(|c| c.1.clone()).collect()
                };
                let (have, sent) = (names(&out.calls), names(&copy.calls));
                // The calls recorded with ids are calls of the copy.
                let theirs = out
                    .calls
                    .iter()
                    .all(|c| c.0.is_empty() || copy.calls.iter().any(|k| k.0 == c.0));
                let fewer = theirs
                    && !have.is_empty()
                    && have.len() < sent.len()
                    && is_subsequence(&have, &sent);
                let unnamed =
                    !have.is_empty() && have == sent && out.calls.iter().any(|c| c.0.is_empty());
                if fewer || unnamed {
                    out.calls = copy.calls;
                    if out.text.trim().is_empty() {
                        out.text = copy.text;
                    }
                    copied += 1;
                }
            }
        }
    }
    (copied, blank)
}

/// Are `short`'s items those of `long`, in the same order?
fn is_subsequence(short: &[String], long: &[String]) -> bool {
    let mut rest = long.iter();
    short.iter().all(|s| rest.any(|l| l == s))
}
