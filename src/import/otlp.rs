//! OpenTelemetry traces as OTLP JSON — what the Collector's `file` exporter writes (one
//! `ExportTraceServiceRequest` a line; `ExportLogsServiceRequest` lines too when logs share the
//! file), or a single such object — read as runs.
//!
//! **Runs.** One run per conversation: the traces whose spans carry the same
//! `gen_ai.conversation.id` (OpenInference: `session.id`) are one run; a trace without one is a
//! run of its own. Run ids are `<file>#<conversation or trace id>`, runs in the order they
//! started. Spans of one trace split across files make a run per file.
//!
//! **Model calls** are the inference spans, in start order: `gen_ai.operation.name` `chat`,
//! `text_completion` or `generate_content` (the OpenTelemetry GenAI conventions), an
//! OpenInference `LLM` span, or a Traceloop `llm.request.type` `chat`/`completion` span. An
//! inference span that has another inside it (a framework's span around the client's) gives way
//! to the inner one. What each call sent and answered is read from, in this order:
//! - `gen_ai.input.messages` / `gen_ai.output.messages` (GenAI conventions 1.37 and later: role
//!   and typed parts `text`, `tool_call`, `tool_call_response`; a JSON string or a structured
//!   value) — OpenTelemetry's `openai-v2` 2.x with content capture on, Traceloop 0.55 and
//!   later, OpenInference with `OPENINFERENCE_ENABLE_GENAI_SEMCONV`;
//! - `llm.input_messages.N.message.*` / `llm.output_messages.N.message.*` (OpenInference);
//! - `gen_ai.prompt.N.*` / `gen_ai.completion.N.*` (Traceloop before 0.55, OpenLLMetry);
//! - events: per-message events `gen_ai.{system,user,assistant,tool}.message` and
//!   `gen_ai.choice` (GenAI conventions 1.28–1.36: log records in the same file, tied to the
//!   span by its id, or span events; content in the body, or in `gen_ai.event.content`), and
//!   `gen_ai.content.prompt` / `gen_ai.content.completion` span events (conventions 1.26–1.27).
//!
//! The messages after the last assistant message of a call's input are what the agent added:
//! tool results answer the calls they name; user messages are the user's turns (at the start,
//! or after a text answer) or, in the middle of a tool loop, the agent's own nudges. Tool
//! results also come from `execute_tool` spans (`gen_ai.tool.call.id`, `gen_ai.tool.call.result`;
//! OpenInference `TOOL` spans) — a tool span for a call no model output showed (content not
//! captured) is that call. Tokens: `gen_ai.usage.input_tokens` / `output_tokens`
//! (`prompt_tokens` / `completion_tokens` before 1.27; OpenInference `llm.token_count.*`).
//! Latency is the span's duration. A span with status `ERROR` is a provider error (its kind read
//! from `error.type` and the message), a tool span with it a failed call; a tool result with no
//! span says it failed by starting with `Error`. Time is measured from the run's first span.
//!
//! **harness's own exports** (`--otlp`) carry every trace event as a `harness.*` span event
//! (`harness.seq`, `harness.event`); such a run is read back event for event, with the success
//! label of its agent span (`harness.success`).

use super::{Run, TraceBuilder, content_text, error_prefixed, located, parse_args, syntax};
use crate::diagnostic::Diagnostic;
use crate::llm::{FaultKind, Finish, Role};
use crate::scenario::OutcomeKind;
use crate::trace::{Event, TimedEvent};
use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};

/// The source name of runs read from OTLP.
pub const SOURCE: &str = "otlp";

/// Nanoseconds since the Unix epoch of harness's virtual time 0 in exports: 2025-01-01T00:00Z.
pub const EPOCH_NS: u64 = 1_735_689_600_000_000_000;

/// Span event attribute holding a trace event as JSON (harness's exports).
pub const EVENT_ATTR: &str = "harness.event";
/// Span event attribute holding the event's position in its trace (harness's exports).
pub const SEQ_ATTR: &str = "harness.seq";
/// Agent span attribute holding the run's success label (harness's exports).
pub const SUCCESS_ATTR: &str = "harness.success";

/// Does the text look like OTLP JSON? Its first object's first key is `resourceSpans` or
/// `resourceLogs` (or their snake_case spellings).
pub fn sniff(text: &str) -> bool {
    let rest = text.trim_start();
    let Some(rest) = rest.strip_prefix('{') else {
        return false;
    };
    let rest = rest.trim_start();
    [
        "\"resourceSpans\"",
        "\"resourceLogs\"",
        "\"resource_spans\"",
        "\"resource_logs\"",
    ]
    .iter()
    .any(|k| rest.starts_with(k))
}

/// Is this parsed document an OTLP request?
pub fn is_request(doc: &Value) -> bool {
    doc.as_object().is_some_and(|o| {
        [
            "resourceSpans",
            "resourceLogs",
            "resource_spans",
            "resource_logs",
        ]
        .iter()
        .any(|k| o.contains_key(*k))
    })
}

// ---------------------------------------------------------------------------------------------
// The wire shape (OTLP JSON: lowerCamelCase, snake_case accepted; 64-bit integers as strings
// or numbers; enums as numbers or names).

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Request {
    #[serde(default, alias = "resource_spans")]
    resource_spans: Vec<ResourceSpans>,
    #[serde(default, alias = "resource_logs")]
    resource_logs: Vec<ResourceLogs>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResourceSpans {
    #[serde(default, alias = "scope_spans")]
    scope_spans: Vec<ScopeSpans>,
}

#[derive(Deserialize)]
struct ScopeSpans {
    #[serde(default)]
    spans: Vec<SpanDoc>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SpanDoc {
    #[serde(alias = "trace_id")]
    trace_id: String,
    #[serde(alias = "span_id")]
    span_id: String,
    #[serde(default, alias = "parent_span_id")]
    parent_span_id: String,
    #[serde(default)]
    name: String,
    #[serde(default, alias = "start_time_unix_nano")]
    start_time_unix_nano: Nanos,
    #[serde(default, alias = "end_time_unix_nano")]
    end_time_unix_nano: Nanos,
    #[serde(default)]
    attributes: Vec<KeyValue>,
    #[serde(default)]
    events: Vec<EventDoc>,
    #[serde(default)]
    status: StatusDoc,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct EventDoc {
    #[serde(default, alias = "time_unix_nano")]
    time_unix_nano: Nanos,
    #[serde(default)]
    name: String,
    #[serde(default)]
    attributes: Vec<KeyValue>,
}

#[derive(Deserialize, Default)]
struct StatusDoc {
    #[serde(default)]
    code: StatusCode,
    #[serde(default)]
    message: String,
}

#[derive(Deserialize)]
struct KeyValue {
    key: String,
    #[serde(default)]
    value: Value,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResourceLogs {
    #[serde(default, alias = "scope_logs")]
    scope_logs: Vec<ScopeLogs>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ScopeLogs {
    #[serde(default, alias = "log_records")]
    log_records: Vec<LogDoc>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LogDoc {
    #[serde(default, alias = "time_unix_nano")]
    time_unix_nano: Nanos,
    #[serde(default, alias = "observed_time_unix_nano")]
    observed_time_unix_nano: Nanos,
    #[serde(default, alias = "trace_id")]
    trace_id: String,
    #[serde(default, alias = "span_id")]
    span_id: String,
    #[serde(default, alias = "event_name")]
    event_name: String,
    #[serde(default)]
    body: Value,
    #[serde(default)]
    attributes: Vec<KeyValue>,
}

/// A `fixed64` timestamp: a decimal string (proto3 JSON) or a number.
#[derive(Default, Clone, Copy)]
struct Nanos(u64);

impl<'de> Deserialize<'de> for Nanos {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Nanos;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("nanoseconds since the epoch (a decimal string or a number)")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Nanos, E> {
                Ok(Nanos(v))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Nanos, E> {
                Ok(Nanos(0))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Nanos, E> {
                u64::try_from(v)
                    .map(Nanos)
                    .map_err(|_| E::custom("a negative timestamp"))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Nanos, E> {
                v.parse().map(Nanos).map_err(|_| {
                    E::custom(format!(
                        "`{v}` is not a timestamp: write nanoseconds as a decimal string"
                    ))
                })
            }
        }
        d.deserialize_any(V)
    }
}

/// A span status code: `2` or `STATUS_CODE_ERROR` is an error.
#[derive(Default, Clone, Copy)]
struct StatusCode(bool);

impl<'de> Deserialize<'de> for StatusCode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = StatusCode;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a status code (0, 1, 2 or its name)")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<StatusCode, E> {
                Ok(StatusCode(v == 2))
            }
            fn visit_unit<E: de::Error>(self) -> Result<StatusCode, E> {
                Ok(StatusCode(false))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<StatusCode, E> {
                Ok(StatusCode(v == 2))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<StatusCode, E> {
                match v {
                    "STATUS_CODE_ERROR" | "ERROR" | "2" => Ok(StatusCode(true)),
                    "STATUS_CODE_OK" | "STATUS_CODE_UNSET" | "OK" | "UNSET" | "0" | "1" => {
                        Ok(StatusCode(false))
                    }
                    other => Err(E::custom(format!("unknown status code `{other}`"))),
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// An OTLP `AnyValue` as plain JSON: `{"stringValue": "x"}` is `"x"`, `{"intValue": "47"}` is
/// `47`, arrays and key-value lists are arrays and objects.
fn any_value(v: Value) -> Value {
    let Value::Object(o) = v else {
        return v;
    };
    let Some((k, x)) = o.into_iter().next() else {
        return Value::Null;
    };
    match k.as_str() {
        "intValue" | "int_value" => match &x {
            Value::String(s) => s.parse::<i64>().map_or(x, Value::from),
            _ => x,
        },
        "arrayValue" | "array_value" => Value::Array(match x {
            Value::Object(mut a) => match a.remove("values") {
                Some(Value::Array(items)) => items.into_iter().map(any_value).collect(),
                _ => Vec::new(),
            },
            _ => Vec::new(),
        }),
        "kvlistValue" | "kvlist_value" => Value::Object(match x {
            Value::Object(mut a) => match a.remove("values") {
                Some(Value::Array(items)) => items
                    .into_iter()
                    .filter_map(|kv| {
                        let Value::Object(mut kv) = kv else {
                            return None;
                        };
                        let key = kv.remove("key")?.as_str()?.to_owned();
                        Some((key, kv.remove("value").map_or(Value::Null, any_value)))
                    })
                    .collect(),
                _ => serde_json::Map::new(),
            },
            _ => serde_json::Map::new(),
        }),
        _ => x,
    }
}

type Attrs = BTreeMap<String, Value>;

fn attr_map(list: Vec<KeyValue>) -> Attrs {
    list.into_iter()
        .map(|kv| (kv.key, any_value(kv.value)))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The spans and logs of a file.

struct Span {
    trace: String,
    id: String,
    parent: String,
    name: String,
    start: u64,
    end: u64,
    attrs: Attrs,
    events: Vec<SpanEvent>,
    error: Option<String>,
    /// The line of the file it was read from.
    line: usize,
    /// Its place in the file: spans that started and ended together keep the order they were
    /// written in.
    ordinal: usize,
}

struct SpanEvent {
    name: String,
    time: u64,
    attrs: Attrs,
}

struct Log {
    span: String,
    time: u64,
    name: String,
    body: Value,
    attrs: Attrs,
}

impl Span {
    fn str(&self, key: &str) -> Option<&str> {
        self.attrs.get(key).and_then(Value::as_str)
    }

    fn uint(&self, keys: &[&str]) -> Option<u64> {
        keys.iter().find_map(|k| match self.attrs.get(*k)? {
            Value::Number(n) => n.as_u64().or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 1.8e19)
                    .map(|f| f as u64)
            }),
            Value::String(s) => s.parse().ok(),
            _ => None,
        })
    }

    fn operation(&self) -> Option<&str> {
        self.str("gen_ai.operation.name")
    }

    fn is_inference(&self) -> bool {
        match self.operation() {
            Some(op) => matches!(
                op,
                "chat" | "text_completion" | "generate_content" | "completion"
            ),
            None => {
                self.str("openinference.span.kind") == Some("LLM")
                    || matches!(self.str("llm.request.type"), Some("chat" | "completion"))
            }
        }
    }

    fn is_tool(&self) -> bool {
        self.operation() == Some("execute_tool")
            || self.str("openinference.span.kind") == Some("TOOL")
            || self.str("traceloop.span.kind") == Some("tool")
    }

    fn conversation(&self) -> Option<&str> {
        self.str("gen_ai.conversation.id")
            .or_else(|| self.str("session.id"))
            .filter(|s| !s.is_empty())
    }

    fn model(&self) -> Option<&str> {
        [
            "gen_ai.request.model",
            "gen_ai.response.model",
            "llm.model_name",
            "llm.request.model",
        ]
        .iter()
        .find_map(|k| self.str(k))
    }

    fn harnessed(&self) -> bool {
        self.events.iter().any(|e| e.attrs.contains_key(EVENT_ATTR))
    }
}

fn read_request(req: Request, line: usize, spans: &mut Vec<Span>, logs: &mut Vec<Log>) {
    for rs in req.resource_spans {
        for ss in rs.scope_spans {
            for s in ss.spans {
                let attrs = attr_map(s.attributes);
                let events: Vec<SpanEvent> = s
                    .events
                    .into_iter()
                    .map(|e| SpanEvent {
                        name: e.name,
                        time: e.time_unix_nano.0,
                        attrs: attr_map(e.attributes),
                    })
                    .collect();
                let error = s.status.code.0.then(|| {
                    let exception = events
                        .iter()
                        .find(|e| e.name == "exception")
                        .and_then(|e| e.attrs.get("exception.message"))
                        .and_then(Value::as_str);
                    let kind = attrs.get("error.type").and_then(Value::as_str);
                    [Some(s.status.message.as_str()), exception, kind]
                        .into_iter()
                        .flatten()
                        .find(|m| !m.is_empty())
                        .unwrap_or("the span's status is ERROR")
                        .to_owned()
                });
                spans.push(Span {
                    trace: s.trace_id,
                    id: s.span_id,
                    parent: s.parent_span_id,
                    name: s.name,
                    start: s.start_time_unix_nano.0,
                    end: s.end_time_unix_nano.0.max(s.start_time_unix_nano.0),
                    attrs,
                    events,
                    error,
                    line,
                    ordinal: spans.len(),
                });
            }
        }
    }
    for rl in req.resource_logs {
        for sl in rl.scope_logs {
            for l in sl.log_records {
                let attrs = attr_map(l.attributes);
                let name = if l.event_name.is_empty() {
                    attrs
                        .get("event.name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned()
                } else {
                    l.event_name
                };
                if l.span_id.is_empty() || !name.starts_with("gen_ai.") {
                    continue;
                }
                let time = if l.time_unix_nano.0 == 0 {
                    l.observed_time_unix_nano.0
                } else {
                    l.time_unix_nano.0
                };
                logs.push(Log {
                    span: format!("{}/{}", l.trace_id, l.span_id),
                    time,
                    name,
                    body: any_value(l.body),
                    attrs,
                });
            }
        }
    }
}

/// Parse the file's documents: one a line (JSON lines, the file exporter's form), or one
/// document over several lines. A bad line is a located error; the other lines are read.
fn parse(text: &str) -> (Vec<Span>, Vec<Log>, Vec<Diagnostic>) {
    let mut spans = Vec::new();
    let mut logs = Vec::new();
    let mut errors = Vec::new();
    // One document a line when the first or the second line is a whole one (a cut first line
    // must not lose the rest); no line of a pretty-printed document is.
    let one_a_line = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(2)
        .any(|l| serde_json::from_str::<serde::de::IgnoredAny>(l).is_ok());
    if !one_a_line {
        // One document over several lines (pretty-printed), or several after one another.
        let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
        loop {
            let offset = stream.byte_offset();
            match stream.next() {
                None => break,
                Some(Ok(doc)) => {
                    let from = &text[offset..stream.byte_offset()];
                    match typed(doc, from) {
                        Ok(req) => {
                            read_request(req, line_of_start(text, offset), &mut spans, &mut logs);
                        }
                        Err(mut e) => {
                            if let Some(at) = &mut e.at {
                                at.line += crate::scenario::line_col(text, offset).0 - 1;
                            }
                            errors.push(e);
                        }
                    }
                }
                Some(Err(e)) => {
                    errors.push(syntax(&e, None));
                    break;
                }
            }
        }
        return (spans, logs, errors);
    }
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Request>(line) {
            Ok(req) => read_request(req, i + 1, &mut spans, &mut logs),
            Err(e) if e.is_syntax() || e.is_eof() => errors.push(syntax(&e, Some(i))),
            Err(_) => {
                let doc = serde_json::from_str::<Value>(line).unwrap_or_default();
                if let Err(mut e) = typed(doc, line) {
                    if let Some(at) = &mut e.at {
                        at.line += i;
                    }
                    errors.push(e);
                }
            }
        }
    }
    (spans, logs, errors)
}

/// The line a byte offset's document starts on (after the whitespace before it).
fn line_of_start(text: &str, offset: usize) -> usize {
    let skipped = text[offset..].len() - text[offset..].trim_start().len();
    crate::scenario::line_col(text, offset + skipped).0
}

fn typed(doc: Value, text: &str) -> Result<Request, Diagnostic> {
    let hint = "OTLP JSON, as the Collector's file exporter writes it, is `{\"resourceSpans\": [{\"scopeSpans\": [{\"spans\": [{\"traceId\", \"spanId\", …}]}]}]}` (see docs/production-traces.md)";
    super::typed::<Request>(doc, text, super::Format::Otlp).map_err(|e| Diagnostic {
        hint: Some(hint.to_owned()),
        ..e
    })
}

// ---------------------------------------------------------------------------------------------
// Messages, whichever way the instrumentation recorded them.

/// One message of a call's input or output, as harness needs it.
#[derive(Debug, Default, Clone)]
struct Msg {
    role: String,
    text: String,
    /// Tool calls: id, name, parsed arguments.
    calls: Vec<(String, String, Value)>,
    /// The call a tool result answers.
    answers: Option<String>,
}

/// A call's messages: the input, the output, and the finish reason.
#[derive(Default)]
struct Exchange {
    input: Vec<Msg>,
    output: Option<Msg>,
    finish: Option<String>,
}

/// A JSON attribute: a structured value as is, a string parsed. `Err` names what is wrong.
fn json_attr(v: &Value) -> Result<Value, String> {
    match v {
        Value::String(s) => serde_json::from_str(s).map_err(|e| format!("not JSON: {e}")),
        other => Ok(other.clone()),
    }
}

/// `gen_ai.input.messages` / `gen_ai.output.messages`: `[{role, parts: [...], finish_reason?}]`.
fn semconv_messages(v: &Value, what: &str) -> Result<(Vec<Msg>, Option<String>), String> {
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
fn non_empty(v: Option<&Value>) -> Option<&str> {
    v.and_then(Value::as_str).filter(|s| !s.is_empty())
}

fn result_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        None | Some(Value::Null) => String::new(),
        Some(other) => crate::json::compact(other),
    }
}

/// An OpenAI-shaped message (`{role, content, tool_calls, tool_call_id}`), as the older events
/// and `gen_ai.content.prompt` carry them.
fn openai_message(m: &Value, role: &str) -> Msg {
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
fn indexed<'a>(attrs: &'a Attrs, prefix: &str) -> BTreeMap<usize, BTreeMap<&'a str, &'a Value>> {
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
fn flat_messages(attrs: &Attrs, prefix: &str) -> (Vec<Msg>, Option<String>) {
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
fn event_messages<'a>(events: impl Iterator<Item = (&'a str, Value)>) -> Exchange {
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

fn parsed(v: &Value) -> Value {
    json_attr(v).unwrap_or(Value::Null)
}

/// A span event's body: `gen_ai.event.content` (JSON) when there, else its attributes.
fn event_body(e: &SpanEvent) -> Value {
    match e.attrs.get("gen_ai.event.content") {
        Some(v) => parsed(v),
        None => Value::Object(e.attrs.clone().into_iter().collect()),
    }
}

/// What an inference span sent and answered. `Err` is a content attribute that is not the JSON
/// it should be.
fn exchange(s: &Span, logs: &HashMap<String, Vec<&Log>>) -> Result<Exchange, String> {
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

fn finish_of(reason: Option<&str>, calls: bool) -> Finish {
    match reason {
        Some("length" | "max_tokens" | "MAX_TOKENS") => Finish::Length,
        Some("content_filter" | "SAFETY") => Finish::ContentFilter,
        Some("stop_sequence") => Finish::StopSequence,
        _ if calls => Finish::ToolUse,
        _ => Finish::Stop,
    }
}

/// The provider fault a failed inference span reads as.
fn fault_of(s: &Span, message: &str) -> FaultKind {
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

// ---------------------------------------------------------------------------------------------
// Spans to runs.

/// What a file gave: its runs, located errors, and why it has none.
pub fn import(text: &str, rel: &str) -> super::FileImport {
    import_with(text, rel, true)
}

/// [`import`] reading harness's own exports as any instrumentation's spans (their `harness.*`
/// events ignored): what another tool reads of them.
pub fn import_without_harness_events(text: &str, rel: &str) -> super::FileImport {
    import_with(text, rel, false)
}

fn import_with(text: &str, rel: &str, harness_events: bool) -> super::FileImport {
    let (spans, logs, mut errors) = parse(text);
    let mut out = super::FileImport::default();
    // The same span twice (a re-sent batch) counts once. Different spans that share an id (an
    // empty or all-zero id, as some exporters write) are each read, and the file says so.
    let mut seen = HashSet::new();
    let spans: Vec<Span> = spans
        .into_iter()
        .filter(|s| {
            seen.insert((
                s.trace.clone(),
                s.id.clone(),
                s.parent.clone(),
                s.name.clone(),
                s.start,
                s.end,
            ))
        })
        .collect();
    out.warnings = id_warnings(&spans);
    let mut by_span: HashMap<String, Vec<&Log>> = HashMap::new();
    for l in &logs {
        by_span.entry(l.span.clone()).or_default().push(l);
    }
    // Traces, then conversations: a trace's conversation is the first one its spans name.
    let mut traces: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, s) in spans.iter().enumerate() {
        traces.entry(s.trace.as_str()).or_default().push(i);
    }
    // Group key → (the run's name, its spans). harness's own exports are a run per trace (two
    // runs of one case in a file stay two runs), named by their case.
    let mut runs: BTreeMap<String, (String, Vec<usize>)> = BTreeMap::new();
    for (trace, mut members) in traces {
        members.sort_by(|&a, &b| order(&spans[a], &spans[b]));
        let name = members
            .iter()
            .find_map(|&i| spans[i].conversation())
            .unwrap_or(trace)
            .to_owned();
        let harnessed = harness_events && members.iter().any(|&i| spans[i].harnessed());
        let key = if harnessed {
            format!("{name}\u{0}{trace}")
        } else {
            name.clone()
        };
        runs.entry(key)
            .or_insert_with(|| (name, Vec::new()))
            .1
            .extend(members);
    }
    let mut made: Vec<(u64, Run)> = Vec::new();
    let mut named: BTreeMap<String, usize> = BTreeMap::new();
    for (_, (name, mut members)) in runs {
        members.sort_by(|&a, &b| order(&spans[a], &spans[b]));
        let group: Vec<&Span> = members.iter().map(|&i| &spans[i]).collect();
        // The same case exported twice: `case`, `case~2`, … in trace id order.
        let n = named.entry(name.clone()).or_insert(0);
        *n += 1;
        let id = if *n == 1 {
            format!("{rel}#{name}")
        } else {
            format!("{rel}#{name}~{n}")
        };
        let first = group.first().map_or(0, |s| s.start);
        let run = if harness_events && group.iter().any(|s| s.harnessed()) {
            harness_run(&group, id)
        } else {
            genai_run(&group, &by_span, id, first)
        };
        match run {
            Ok(Some(run)) => made.push((first, run)),
            Ok(None) => {}
            Err(e) => errors.push(e),
        }
    }
    made.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.id.cmp(&b.1.id)));
    out.runs = made.into_iter().map(|(_, r)| r).collect();
    if out.runs.is_empty() && errors.is_empty() {
        out.note = Some(if spans.is_empty() {
            "an OTLP file with no span".to_owned()
        } else {
            format!(
                "an OTLP file with {} span(s) and no model call among them (no GenAI, OpenInference or Traceloop inference span)",
                spans.len()
            )
        });
    }
    out.errors = errors;
    out
}

/// What the file's span ids make the reader do: spans sharing an id (each read), parent ids
/// in a cycle (the walk up ends where it closes), spans that name themselves as their parent
/// (read as spans without one). At most 5 of each are named.
fn id_warnings(spans: &[Span]) -> Vec<String> {
    const NAMED: usize = 5;
    let mut counts: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for s in spans {
        *counts.entry((s.trace.as_str(), s.id.as_str())).or_insert(0) += 1;
    }
    let shared: Vec<String> = counts
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|((trace, id), n)| {
            let id = if id.is_empty() {
                "an empty id".to_owned()
            } else {
                format!("the id `{id}`")
            };
            format!("{n} spans of trace `{trace}` share {id}")
        })
        .collect();
    // Self-parented spans by id: how many, and the line of the first.
    let mut own: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for s in spans
        .iter()
        .filter(|s| !s.id.is_empty() && s.parent == s.id)
    {
        own.entry(s.id.as_str()).or_insert((0, s.line)).0 += 1;
    }
    let selfish: Vec<String> = own
        .iter()
        .map(|(id, (n, line))| match n {
            1 => format!("`{id}` (line {line})"),
            _ => format!("`{id}` ({n} spans, the first at line {line})"),
        })
        .collect();
    // Cycles of parent ids, trace by trace.
    let mut traces: BTreeMap<&str, Vec<&Span>> = BTreeMap::new();
    for s in spans {
        traces.entry(s.trace.as_str()).or_default().push(s);
    }
    let cycles: Vec<String> = traces
        .values()
        .flat_map(|group| {
            parent_walk(group)
                .1
                .into_iter()
                .map(|i| format!("`{}` (line {})", group[i].id, group[i].line))
        })
        .collect();
    let mut out = Vec::new();
    let named = |all: &[String]| {
        let mut text = all[..all.len().min(NAMED)].join("; ");
        if all.len() > NAMED {
            text.push_str(&format!("; and {} more", all.len() - NAMED));
        }
        text
    };
    if !shared.is_empty() {
        out.push(format!(
            "{}: each span is read (only spans that are the same in every field are one span sent twice)",
            named(&shared)
        ));
    }
    if !cycles.is_empty() {
        out.push(format!(
            "parent ids that go round in a cycle, cut where it closes (that span read as having no parent; every span read): {}",
            named(&cycles)
        ));
    }
    if !selfish.is_empty() {
        out.push(format!(
            "span(s) that name themselves as their parent, read as spans without one: {}",
            named(&selfish)
        ));
    }
    out
}

fn order(a: &Span, b: &Span) -> std::cmp::Ordering {
    a.start
        .cmp(&b.start)
        .then(a.end.cmp(&b.end))
        .then(a.ordinal.cmp(&b.ordinal))
}

/// A run harness exported: its events as they were.
fn harness_run(group: &[&Span], id: String) -> Result<Option<Run>, Diagnostic> {
    let mut events: Vec<(u64, TimedEvent)> = Vec::new();
    let mut success = None;
    for s in group {
        if let Some(Value::Bool(b)) = s.attrs.get(SUCCESS_ATTR) {
            success = Some(*b);
        }
        for e in &s.events {
            let Some(v) = e.attrs.get(EVENT_ATTR) else {
                continue;
            };
            let seq = e.attrs.get(SEQ_ATTR).and_then(Value::as_u64).unwrap_or(0);
            let event = v
                .as_str()
                .ok_or_else(|| "not a string".to_owned())
                .and_then(|t| serde_json::from_str::<TimedEvent>(t).map_err(|e| e.to_string()))
                .map_err(|why| {
                    located(
                        s.line,
                        1,
                        format!(
                            "span `{}` ({}): its `{EVENT_ATTR}` event is not a trace event: {why}",
                            s.name, s.id
                        ),
                        "the file was changed after harness wrote it; export the run again with `--otlp`",
                    )
                })?;
            events.push((seq, event));
        }
    }
    events.sort_by_key(|(seq, _)| *seq);
    if let Some(w) = events.windows(2).find(|w| w[0].0 == w[1].0) {
        let s = group.first().copied();
        return Err(located(
            s.map_or(1, |s| s.line),
            1,
            format!(
                "trace {}: two events at position {} of its run",
                s.map_or("", |s| s.trace.as_str()),
                w[0].0
            ),
            "the file holds one harness run twice under one trace id, or was edited; export the runs again with `--otlp`",
        ));
    }
    let events: Vec<TimedEvent> = events.into_iter().map(|(_, e)| e).collect();
    let termination = events.iter().rev().find_map(|e| match &e.event {
        Event::Outcome { outcome, .. } => Some(outcome.as_str().to_owned()),
        _ => None,
    });
    Ok(Some(Run {
        id,
        source: SOURCE.to_owned(),
        success,
        termination,
        events,
    }))
}

enum Item<'a> {
    Inference(&'a Span),
    Tool(&'a Span),
}

/// For each span of `group`, the nearest of its ancestors (by parent id) that is an inference
/// span, in one pass over the parent links: each span's answer is worked out once and shared
/// by every span below it. A span whose parent is itself has none; a cycle of parent ids ends
/// the walk where it closes.
fn nearest_inference_ancestors(group: &[&Span]) -> Vec<Option<usize>> {
    parent_walk(group).0
}

/// [`nearest_inference_ancestors`], and the spans whose parent closes a cycle of parent ids.
fn parent_walk(group: &[&Span]) -> (Vec<Option<usize>>, Vec<usize>) {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        Unknown,
        Walking,
        Done,
    }
    let index: HashMap<&str, usize> = group
        .iter()
        .enumerate()
        .map(|(i, s)| (s.id.as_str(), i))
        .collect();
    // A span whose parent id is its own id has no parent (whichever span of that id the
    // index holds).
    let linked = |i: usize| -> Option<usize> {
        let p = group[i].parent.as_str();
        (!p.is_empty() && p != group[i].id)
            .then(|| index.get(p).copied())
            .flatten()
            .filter(|&j| j != i)
    };
    // First the cycles: walking up from each span not yet seen, a parent met on the same walk
    // closes one, and that link is cut.
    let mut state = vec![State::Unknown; group.len()];
    let mut cycles = Vec::new();
    let mut path = Vec::new();
    for start in 0..group.len() {
        path.clear();
        let mut at = start;
        while state[at] == State::Unknown {
            state[at] = State::Walking;
            path.push(at);
            match linked(at) {
                Some(p) if state[p] == State::Walking => {
                    cycles.push(at);
                    break;
                }
                Some(p) => at = p,
                None => break,
            }
        }
        for &i in &path {
            state[i] = State::Done;
        }
    }
    let mut cut = vec![false; group.len()];
    for &i in &cycles {
        cut[i] = true;
    }
    let parent_of = |i: usize| linked(i).filter(|_| !cut[i]);
    // Then each span's nearest inference ancestor, worked out once for every span above it.
    let mut done = vec![false; group.len()];
    let mut nearest: Vec<Option<usize>> = vec![None; group.len()];
    for start in 0..group.len() {
        path.clear();
        let mut at = start;
        // The answer for the last span of the path.
        let last = loop {
            if done[at] {
                break None;
            }
            path.push(at);
            match parent_of(at) {
                None => break None,
                Some(p) if group[p].is_inference() => break Some(p),
                Some(p) if done[p] => break nearest[p],
                Some(p) => at = p,
            }
        };
        let mut below = last;
        for &i in path.iter().rev() {
            nearest[i] = below;
            done[i] = true;
            below = if group[i].is_inference() {
                Some(i)
            } else {
                below
            };
        }
    }
    (nearest, cycles)
}

fn ms(ns: u64, first: u64) -> u64 {
    ns.saturating_sub(first) / 1_000_000
}

/// A run from the GenAI (or OpenInference, Traceloop) spans of a conversation.
fn genai_run(
    group: &[&Span],
    logs: &HashMap<String, Vec<&Log>>,
    id: String,
    first: u64,
) -> Result<Option<Run>, Diagnostic> {
    // An inference span with another inside it gives way to the inner one: each inference
    // span's nearest inference ancestor is an outer one (and that one's, in its turn).
    let nearest = nearest_inference_ancestors(group);
    let outer: HashSet<usize> = group
        .iter()
        .zip(&nearest)
        .filter(|(s, _)| s.is_inference())
        .filter_map(|(_, a)| *a)
        .collect();
    let items: Vec<Item> = group
        .iter()
        .enumerate()
        .filter_map(|(i, s)| {
            if s.is_inference() && !outer.contains(&i) {
                Some(Item::Inference(s))
            } else if s.is_tool() {
                Some(Item::Tool(s))
            } else {
                None
            }
        })
        .collect();
    // A conversation without a model call is a run when an agent span says it was one.
    let agent = group.iter().any(|s| s.operation() == Some("invoke_agent"));
    if !agent && !items.iter().any(|i| matches!(i, Item::Inference(_))) {
        return Ok(None);
    }
    let model = items
        .iter()
        .find_map(|i| match i {
            Item::Inference(s) => s.model(),
            Item::Tool(_) => None,
        })
        .unwrap_or_default();
    let mut b = TraceBuilder::new(SOURCE, model);
    let mut first_call = true;
    let mut after_calls = false;
    let mut faults = 0u32;
    let mut generated = 0usize;
    let mut answered: HashSet<String> = HashSet::new();
    let mut last: Option<(bool, Option<String>)> = None;
    for item in items {
        match item {
            Item::Tool(s) => {
                b.at(ms(s.start, first));
                let name = s
                    .str("gen_ai.tool.name")
                    .or_else(|| s.str("tool.name"))
                    .or_else(|| s.name.strip_prefix("execute_tool "))
                    .unwrap_or(s.name.as_str())
                    .to_owned();
                let call_id = ["gen_ai.tool.call.id", "tool_call.id", "tool.id"]
                    .iter()
                    .find_map(|k| non_empty(s.attrs.get(*k)))
                    .map(str::to_owned);
                let result = [
                    "gen_ai.tool.call.result",
                    "output.value",
                    "traceloop.entity.output",
                ]
                .iter()
                .find_map(|k| s.attrs.get(*k))
                .map(|v| result_text(Some(v)));
                let args = [
                    "gen_ai.tool.call.arguments",
                    "input.value",
                    "traceloop.entity.input",
                ]
                .iter()
                .find_map(|k| s.attrs.get(*k))
                .map(|v| parse_args(Some(v)));
                let call = match b.answered_call(call_id.as_deref(), Some(&name), args.clone()) {
                    Some(c) => Some(c),
                    // A call no model output showed (content not captured): the span is it.
                    None => call_id.filter(|c| !answered.contains(c)).inspect(|c| {
                        let args = args.unwrap_or_else(|| Value::Object(Default::default()));
                        b.call(c.clone(), name.clone(), args);
                    }),
                };
                if let Some(c) = call {
                    b.at(ms(s.end, first));
                    let text = result.or_else(|| s.error.clone()).unwrap_or_default();
                    b.result(&c, &text, s.error.is_some());
                    answered.insert(c);
                }
            }
            Item::Inference(s) => {
                let ex = exchange(s, logs).map_err(|why| {
                    located(
                        s.line,
                        1,
                        format!("span `{}` ({}): {why}", s.name, s.id),
                        "content attributes hold the messages as JSON; check the instrumentation's version, or export the trace again",
                    )
                })?;
                b.at(ms(s.start, first));
                let from = ex
                    .input
                    .iter()
                    .rposition(|m| m.role == "assistant")
                    .map_or(0, |i| i + 1);
                for m in &ex.input[from..] {
                    match m.role.as_str() {
                        "tool" => {
                            let target = b.answered_call(m.answers.as_deref(), None, None);
                            if let Some(c) = target {
                                b.result(&c, &m.text, error_prefixed(&m.text));
                                answered.insert(c);
                            }
                        }
                        "user" if first_call || !after_calls => b.user(&m.text),
                        "user" | "system" | "developer" if !first_call => {
                            let role = if m.role == "user" {
                                Role::User
                            } else {
                                Role::System
                            };
                            b.nudge(role, &m.text);
                        }
                        _ => {}
                    }
                }
                first_call = false;
                b.at(ms(s.end, first));
                let latency = ms(s.end, s.start);
                if let Some(message) = &s.error {
                    faults += 1;
                    b.push(Event::ProviderError {
                        fault: fault_of(s, message),
                        message: message.clone(),
                        attempt: faults,
                        retry_in_ms: None,
                    });
                    last = Some((true, Some(message.clone())));
                    continue;
                }
                faults = 0;
                let out = ex.output.unwrap_or_default();
                let calls: Vec<(String, String, Value)> = out
                    .calls
                    .into_iter()
                    .map(|(id, name, args)| {
                        let id = if id.is_empty() {
                            generated += 1;
                            format!("call_{generated}")
                        } else {
                            id
                        };
                        (id, name, args)
                    })
                    .collect();
                after_calls = !calls.is_empty();
                let tokens = (
                    s.uint(&[
                        "gen_ai.usage.input_tokens",
                        "gen_ai.usage.prompt_tokens",
                        "llm.token_count.prompt",
                        "llm.usage.prompt_tokens",
                    ])
                    .unwrap_or(0),
                    s.uint(&[
                        "gen_ai.usage.output_tokens",
                        "gen_ai.usage.completion_tokens",
                        "llm.token_count.completion",
                        "llm.usage.completion_tokens",
                    ])
                    .unwrap_or(0),
                );
                let finish = finish_of(ex.finish.as_deref(), !calls.is_empty());
                last = Some((false, (calls.is_empty()).then(|| out.text.clone())));
                b.response_announcing(&out.text, calls, tokens, latency, finish);
            }
        }
    }
    let (outcome, detail) = match last {
        Some((true, Some(message))) => (
            OutcomeKind::Error,
            Some(format!(
                "the run ended after a failed model call: {message}"
            )),
        ),
        Some((false, Some(_))) => (OutcomeKind::Response, None),
        Some(_) => (
            OutcomeKind::Stopped,
            Some("the run ended after tool calls, with no model call after them".to_owned()),
        ),
        None => (
            OutcomeKind::Stopped,
            Some("the trace holds no model call".to_owned()),
        ),
    };
    let termination = Some(outcome.as_str().to_owned());
    Ok(Some(Run {
        id,
        source: SOURCE.to_owned(),
        success: None,
        termination,
        events: b.finish(outcome, detail),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffs_requests_only() {
        assert!(sniff("{\"resourceSpans\": []}"));
        assert!(sniff("\n{\n  \"resourceLogs\": []}"));
        assert!(!sniff("{\"messages\": []}"));
        assert!(!sniff("[{\"resourceSpans\": []}]"));
    }

    #[test]
    fn any_values_become_plain_json() {
        let v = serde_json::json!({"kvlistValue": {"values": [
            {"key": "n", "value": {"intValue": "47"}},
            {"key": "l", "value": {"arrayValue": {"values": [{"stringValue": "stop"}]}}}
        ]}});
        assert_eq!(any_value(v), serde_json::json!({"n": 47, "l": ["stop"]}));
        assert_eq!(
            any_value(serde_json::json!({"arrayValue": {}})),
            serde_json::json!([])
        );
    }

    #[test]
    fn a_bad_content_attribute_is_located_at_its_line() {
        let line = r#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"a","spanId":"b","name":"chat m","startTimeUnixNano":"1","endTimeUnixNano":"2","attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"chat"}},{"key":"gen_ai.input.messages","value":{"stringValue":"[{"}}]}]}]}]}"#;
        let got = import(&format!("\n{line}\n"), "t.jsonl");
        assert_eq!(got.errors.len(), 1, "{:?}", got.errors);
        assert_eq!(got.errors[0].line(), 2);
        assert!(
            got.errors[0]
                .message
                .contains("gen_ai.input.messages is not JSON")
        );
    }

    /// A span `id` under `parent`, an inference span when `chat`.
    fn bare(id: &str, parent: &str, chat: bool) -> Span {
        let mut attrs = Attrs::new();
        if chat {
            attrs.insert("gen_ai.operation.name".into(), Value::from("chat"));
        }
        Span {
            trace: "t".into(),
            id: id.into(),
            parent: parent.into(),
            name: id.into(),
            start: 0,
            end: 0,
            attrs,
            events: Vec::new(),
            error: None,
            line: 1,
            ordinal: 0,
        }
    }

    #[test]
    fn each_span_s_nearest_inference_ancestor_in_one_pass() {
        // agent > chat1 > step > chat2 > tool; a self-parented chat; a cycle a > b > a.
        let spans = [
            bare("tool", "chat2", false),
            bare("chat2", "step", true),
            bare("step", "chat1", false),
            bare("chat1", "agent", true),
            bare("agent", "", false),
            bare("self", "self", true),
            bare("a", "b", false),
            bare("b", "a", false),
            bare("c", "a", true),
        ];
        let group: Vec<&Span> = spans.iter().collect();
        let got = nearest_inference_ancestors(&group);
        assert_eq!(
            got,
            [
                Some(1),
                Some(3),
                Some(3),
                None,
                None,
                None,
                None,
                None,
                None
            ]
        );
        // 20,000 spans nested one in another, every other one a model call, and a chain that
        // closes on itself: each span is walked once (this used to take minutes).
        let mut deep: Vec<Span> = (0..20_000)
            .map(|i| {
                let parent = if i == 0 {
                    String::new()
                } else {
                    format!("s{}", i - 1)
                };
                bare(&format!("s{i}"), &parent, i % 2 == 0)
            })
            .collect();
        deep.extend(
            (0..20_000).map(|i| bare(&format!("c{i}"), &format!("c{}", (i + 1) % 20_000), false)),
        );
        let group: Vec<&Span> = deep.iter().collect();
        let got = nearest_inference_ancestors(&group);
        assert_eq!(got[19_999], Some(19_998));
        assert_eq!(got[19_998], Some(19_996));
        assert_eq!(got[1], Some(0));
        assert!(got[20_000..].iter().all(Option::is_none));
    }

    #[test]
    fn a_span_of_the_wrong_shape_is_located_by_path() {
        let text = "{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{\"spanId\":\"b\"}]}]}]}\n";
        let got = import(text, "t.jsonl");
        let e = &got.errors[0];
        assert_eq!(e.line(), 1);
        assert!(e.message.contains("traceId"), "{e:?}");
        assert!(
            e.message
                .contains("resourceSpans[0].scopeSpans[0].spans[0]"),
            "{e:?}"
        );
    }

    fn chat_line(trace: &str, input: &str, output: &str, tokens: &str) -> String {
        let attr = |k: &str, v: &str| {
            format!(
                r#"{{"key":"{k}","value":{{"stringValue":{}}}}}"#,
                serde_json::to_string(v).unwrap()
            )
        };
        format!(
            r#"{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{{"traceId":"{trace}","spanId":"s1","name":"chat m","startTimeUnixNano":"1000000","endTimeUnixNano":"2000000","attributes":[{},{},{},{{"key":"gen_ai.usage.input_tokens","value":{{"intValue":"{tokens}"}}}},{{"key":"gen_ai.usage.output_tokens","value":{{"intValue":"1"}}}}]}}]}}]}}]}}"#,
            attr("gen_ai.operation.name", "chat"),
            attr("gen_ai.input.messages", input),
            attr("gen_ai.output.messages", output),
        )
    }

    #[test]
    fn a_cut_first_line_loses_only_itself() {
        let good = chat_line(
            "t1",
            "[]",
            r#"[{"role":"assistant","parts":[{"type":"text","content":"hi"}]}]"#,
            "3",
        );
        let text = format!("{}\n{good}\n", &good[..40]);
        let got = import(&text, "t.jsonl");
        assert_eq!(got.errors.len(), 1, "{:?}", got.errors);
        assert_eq!(got.errors[0].line(), 1);
        assert_eq!(got.runs.len(), 1);
    }

    #[test]
    fn empty_call_ids_are_no_ids_and_huge_token_counts_do_not_overflow() {
        let call = r#"[{"role":"assistant","parts":[{"type":"tool_call","id":"","name":"ls","arguments":{}}]}]"#;
        let first = chat_line(
            "t1",
            r#"[{"role":"user","parts":[{"type":"text","content":"go"}]}]"#,
            call,
            "18446744073709551615",
        );
        let answered = r#"[{"role":"user","parts":[{"type":"text","content":"go"}]},{"role":"assistant","parts":[{"type":"tool_call","id":"","name":"ls","arguments":{}}]},{"role":"tool","parts":[{"type":"tool_call_response","id":"","response":"a.txt"}]}]"#;
        let second = chat_line(
            "t1",
            answered,
            r#"[{"role":"assistant","parts":[{"type":"text","content":"done"}]}]"#,
            "5",
        )
        .replace("\"s1\"", "\"s2\"")
        .replace("\"1000000\"", "\"3000000\"")
        .replace("\"2000000\"", "\"4000000\"");
        let got = import(&format!("{first}\n{second}\n"), "t.jsonl");
        assert!(got.errors.is_empty(), "{:?}", got.errors);
        let v = crate::detector::View::from_events(&got.runs[0].events);
        assert_eq!(
            v.calls.len(),
            1,
            "the result answers the call without an id"
        );
        assert_eq!(v.calls[0].result, "a.txt");
        assert_eq!(v.tokens_after(0), Some(6));
        assert_eq!(v.responses[0].1, u64::MAX, "saturated, not wrapped");
    }

    #[test]
    fn spans_sharing_an_id_or_parented_on_themselves_are_read_and_said() {
        let zero = "0000000000000000";
        let first = chat_line(
            "t1",
            r#"[{"role":"user","parts":[{"type":"text","content":"go"}]}]"#,
            r#"[{"role":"assistant","parts":[{"type":"text","content":"one"}]}]"#,
            "3",
        )
        .replace("\"s1\"", &format!("\"{zero}\",\"parentSpanId\":\"{zero}\""));
        let second = chat_line(
            "t1",
            r#"[{"role":"user","parts":[{"type":"text","content":"go"}]}]"#,
            r#"[{"role":"assistant","parts":[{"type":"text","content":"two"}]}]"#,
            "4",
        )
        .replace("\"s1\"", &format!("\"{zero}\""))
        .replace("\"1000000\"", "\"3000000\"")
        .replace("\"2000000\"", "\"4000000\"");
        // The first line sent twice is one span; the second shares its id and is another.
        let got = import(&format!("{first}\n{first}\n{second}\n"), "t.jsonl");
        assert!(got.errors.is_empty(), "{:?}", got.errors);
        assert_eq!(got.runs.len(), 1, "{:?} {:?}", got.note, got.warnings);
        let v = crate::detector::View::from_events(&got.runs[0].events);
        assert_eq!(v.responses.len(), 2, "both model calls read");
        assert_eq!(got.warnings.len(), 2, "{:?}", got.warnings);
        assert!(
            got.warnings[0].starts_with(&format!("2 spans of trace `t1` share the id `{zero}`")),
            "{:?}",
            got.warnings
        );
        assert!(
            got.warnings[1].contains(&format!("`{zero}` (line 1)")),
            "{:?}",
            got.warnings
        );
        // A cycle of parent ids is said where it closes; its spans are read.
        let cycle = [("a", "b"), ("b", "a")]
            .iter()
            .map(|(id, parent)| {
                chat_line(
                    "t2",
                    "[]",
                    r#"[{"role":"assistant","parts":[{"type":"text","content":"x"}]}]"#,
                    "1",
                )
                .replace("\"s1\"", &format!("\"{id}\",\"parentSpanId\":\"{parent}\""))
            })
            .collect::<Vec<_>>()
            .join("\n");
        let got = import(&cycle, "t.jsonl");
        assert_eq!(got.runs.len(), 1, "{:?}", got.note);
        assert!(
            got.warnings
                .iter()
                .any(|w| w.starts_with("parent ids that go round in a cycle")
                    && w.contains("`b` (line 2)")),
            "{:?}",
            got.warnings
        );
        // Without such spans, nothing is said.
        let clean = chat_line(
            "t1",
            "[]",
            r#"[{"role":"assistant","parts":[{"type":"text","content":"hi"}]}]"#,
            "3",
        );
        assert!(import(&clean, "t.jsonl").warnings.is_empty());
    }

    #[test]
    fn traces_without_model_calls_are_a_note() {
        let text = r#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"a","spanId":"b","name":"GET /","startTimeUnixNano":"1","endTimeUnixNano":"2"}]}]}]}"#;
        let got = import(text, "t.json");
        assert!(got.runs.is_empty() && got.errors.is_empty());
        assert!(got.note.unwrap().contains("no model call"));
        let got = import("", "t.json");
        assert!(got.runs.is_empty() && got.errors.is_empty());
        assert_eq!(got.note.as_deref(), Some("an OTLP file with no span"));
    }
}
