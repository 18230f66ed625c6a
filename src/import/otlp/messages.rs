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
}

/// A call's messages: the input, the output, and the finish reason.
#[derive(Default)]
pub(super) struct Exchange {
    pub(super) input: Vec<Msg>,
    pub(super) output: Option<Msg>,
    pub(super) finish: Option<String>,
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
        let role = m
            .get("role")
            .and_then(Value::as_str)
            .unwrap_or("user")
            .to_owned();
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
        msg.text = texts.join("\n");
        out.push(msg);
    }
    Ok((out, finish))
}

/// A string value that says something (an empty id is no id).
pub(super) fn non_empty(v: Option<&Value>) -> Option<&str> {
    v.and_then(Value::as_str).filter(|s| !s.is_empty())
}

pub(super) fn result_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        None | Some(Value::Null) => String::new(),
        Some(other) => crate::json::compact(other),
    }
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
                parse_args(f.get("arguments")),
            )
        })
        .collect();
    Msg {
        role: m
            .get("role")
            .and_then(Value::as_str)
            .unwrap_or(role)
            .to_owned(),
        text: content_text(m.get("content")),
        calls,
        answers: non_empty(
            m.get("tool_call_id")
                .or_else(|| (role == "tool").then(|| m.get("id")).flatten()),
        )
        .map(str::to_owned),
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
            role: get("role").unwrap_or("user").to_owned(),
            text,
            calls: calls
                .into_values()
                .map(|(id, name, args)| {
                    (
                        id,
                        name,
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
        });
    }
    (out, finish)
}

/// Per-message events (span events, or log records tied to the span): input messages and the
/// first choice.
pub(super) fn event_messages<'a>(events: impl Iterator<Item = (&'a str, Value)>) -> Exchange {
    let mut ex = Exchange::default();
    for (name, body) in events {
        match name {
            "gen_ai.system.message" => ex.input.push(openai_message(&body, "system")),
            "gen_ai.user.message" => ex.input.push(openai_message(&body, "user")),
            "gen_ai.assistant.message" => ex.input.push(openai_message(&body, "assistant")),
            "gen_ai.tool.message" => ex.input.push(openai_message(&body, "tool")),
            "gen_ai.choice" if ex.output.is_none() => {
                let message = body.get("message").unwrap_or(&Value::Null);
                ex.output = Some(openai_message(message, "assistant"));
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
    ex
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
    let mut ex = Exchange::default();
    let mut found = false;
    if let Some(v) = s.attrs.get("gen_ai.input.messages") {
        ex.input = semconv_messages(v, "gen_ai.input.messages")?.0;
        found = true;
    }
    if let Some(v) = s.attrs.get("gen_ai.output.messages") {
        let (out, finish) = semconv_messages(v, "gen_ai.output.messages")?;
        ex.output = out.into_iter().find(|m| m.role == "assistant");
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
                ex.output = o.into_iter().next();
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
            events.extend(list.iter().map(|l| {
                let body = match &l.body {
                    Value::Null => Value::Object(l.attrs.clone().into_iter().collect()),
                    b => b.clone(),
                };
                (l.time, l.name.as_str(), body)
            }));
        }
        // Log records come in any order: by time, then as written.
        events.sort_by_key(|(t, _, _)| *t);
        let from_events = event_messages(events.into_iter().map(|(_, n, b)| (n, b)));
        ex = from_events;
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
        _ => Finish::Stop,
    }
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
    } else {
        FaultKind::ServerError
    }
}
