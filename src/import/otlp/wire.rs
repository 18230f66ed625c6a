//! The wire shape of OTLP JSON files (lowerCamelCase, snake_case accepted; 64-bit integers as
//! strings or numbers; enums as numbers or names), and the spans and logs a file holds.

use super::*;

// ---------------------------------------------------------------------------------------------
// The wire shape (OTLP JSON: lowerCamelCase, snake_case accepted; 64-bit integers as strings
// or numbers; enums as numbers or names).

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Request {
    #[serde(default, alias = "resource_spans")]
    pub(super) resource_spans: Vec<ResourceSpans>,
    #[serde(default, alias = "resource_logs")]
    pub(super) resource_logs: Vec<ResourceLogs>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ResourceSpans {
    /// `instrumentationLibrarySpans` before OTLP 0.15 (2021), as older Collectors write it.
    #[serde(
        default,
        alias = "scope_spans",
        alias = "instrumentationLibrarySpans",
        alias = "instrumentation_library_spans"
    )]
    pub(super) scope_spans: Vec<ScopeSpans>,
}

#[derive(Deserialize)]
pub(super) struct ScopeSpans {
    #[serde(
        default,
        alias = "instrumentationLibrary",
        alias = "instrumentation_library"
    )]
    pub(super) scope: ScopeDoc,
    #[serde(default)]
    pub(super) spans: Vec<SpanDoc>,
}

/// The instrumentation scope (library) that made a batch of spans.
#[derive(Deserialize, Default)]
pub(super) struct ScopeDoc {
    #[serde(default)]
    pub(super) name: String,
    #[serde(default)]
    pub(super) version: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct SpanDoc {
    #[serde(alias = "trace_id")]
    pub(super) trace_id: String,
    #[serde(alias = "span_id")]
    pub(super) span_id: String,
    #[serde(default, alias = "parent_span_id")]
    pub(super) parent_span_id: String,
    #[serde(default)]
    pub(super) name: String,
    #[serde(default, alias = "start_time_unix_nano")]
    pub(super) start_time_unix_nano: Nanos,
    #[serde(default, alias = "end_time_unix_nano")]
    pub(super) end_time_unix_nano: Nanos,
    #[serde(default)]
    pub(super) attributes: Vec<KeyValue>,
    #[serde(default)]
    pub(super) events: Vec<EventDoc>,
    #[serde(default)]
    pub(super) status: StatusDoc,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct EventDoc {
    #[serde(default, alias = "time_unix_nano")]
    pub(super) time_unix_nano: Nanos,
    #[serde(default)]
    pub(super) name: String,
    #[serde(default)]
    pub(super) attributes: Vec<KeyValue>,
}

#[derive(Deserialize, Default)]
pub(super) struct StatusDoc {
    #[serde(default)]
    pub(super) code: StatusCode,
    #[serde(default)]
    pub(super) message: String,
}

#[derive(Deserialize)]
pub(super) struct KeyValue {
    pub(super) key: String,
    #[serde(default)]
    pub(super) value: Value,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ResourceLogs {
    #[serde(default, alias = "scope_logs")]
    pub(super) scope_logs: Vec<ScopeLogs>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ScopeLogs {
    #[serde(default, alias = "log_records")]
    pub(super) log_records: Vec<LogDoc>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct LogDoc {
    #[serde(default, alias = "time_unix_nano")]
    pub(super) time_unix_nano: Nanos,
    #[serde(default, alias = "observed_time_unix_nano")]
    pub(super) observed_time_unix_nano: Nanos,
    #[serde(default, alias = "trace_id")]
    pub(super) trace_id: String,
    #[serde(default, alias = "span_id")]
    pub(super) span_id: String,
    #[serde(default, alias = "event_name")]
    pub(super) event_name: String,
    #[serde(default)]
    pub(super) body: Value,
    #[serde(default)]
    pub(super) attributes: Vec<KeyValue>,
}

/// A `fixed64` timestamp: a decimal string (proto3 JSON) or a number.
#[derive(Default, Clone, Copy)]
pub(super) struct Nanos(u64);

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
pub(super) struct StatusCode(bool);

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
pub(super) fn any_value(v: Value) -> Value {
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

pub(super) type Attrs = BTreeMap<String, Value>;

pub(super) fn attr_map(list: Vec<KeyValue>) -> Attrs {
    list.into_iter()
        .map(|kv| (kv.key, any_value(kv.value)))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The spans and logs of a file.

/// Where spans keep input token counts, by every name the conventions and instrumentations
/// have used.
pub(super) const INPUT_TOKEN_KEYS: [&str; 4] = [
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.prompt_tokens",
    "llm.token_count.prompt",
    "llm.usage.prompt_tokens",
];

/// Where spans keep output token counts, likewise.
pub(super) const OUTPUT_TOKEN_KEYS: [&str; 4] = [
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.completion_tokens",
    "llm.token_count.completion",
    "llm.usage.completion_tokens",
];

/// Why a span's token counts are not the provider's ([`Span::counts_doubt`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum CountsDoubt {
    /// The instrumentation estimated them itself: unknown.
    Estimated,
    /// Streamed, the output count is over by the stream's opening count; whether it streamed
    /// the span does not say.
    MaybeOver,
}

pub(super) struct Span {
    pub(super) trace: String,
    pub(super) id: String,
    pub(super) parent: String,
    pub(super) name: String,
    pub(super) start: u64,
    pub(super) end: u64,
    pub(super) attrs: Attrs,
    pub(super) events: Vec<SpanEvent>,
    pub(super) error: Option<String>,
    /// The instrumentation scope that made it (`openinference.instrumentation.langchain`,
    /// `com.anthropic.sdk.python`, `ai`, …).
    pub(super) scope: String,
    /// That scope's version, as it gave one.
    pub(super) scope_version: String,
    /// The scope whose token counts it carries, when a merge took them from the other span.
    pub(super) counts_scope: Option<String>,
    /// The line of the file it was read from.
    pub(super) line: usize,
    /// Its place in the file: spans that started and ended together keep the order they were
    /// written in.
    pub(super) ordinal: usize,
}

pub(super) struct SpanEvent {
    pub(super) name: String,
    pub(super) time: u64,
    pub(super) attrs: Attrs,
}

pub(super) struct Log {
    pub(super) span: String,
    pub(super) time: u64,
    pub(super) name: String,
    pub(super) body: Value,
    pub(super) attrs: Attrs,
}

impl Span {
    pub(super) fn str(&self, key: &str) -> Option<&str> {
        self.attrs.get(key).and_then(Value::as_str)
    }

    pub(super) fn uint(&self, keys: &[&str]) -> Option<u64> {
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

    /// Input tokens, by every name the conventions and instrumentations have used.
    pub(super) fn input_tokens(&self) -> Option<u64> {
        self.uint(&INPUT_TOKEN_KEYS)
    }

    /// Output tokens, likewise.
    pub(super) fn output_tokens(&self) -> Option<u64> {
        self.uint(&OUTPUT_TOKEN_KEYS)
    }

    /// Why this span's token counts are not the provider's, where an instrumentation is known
    /// to write others in the same attributes. `None` when they are (or nothing is known).
    pub(super) fn counts_doubt(&self) -> Option<CountsDoubt> {
        let scope = self.counts_scope.as_deref().unwrap_or(&self.scope);
        // OpenLIT's openai instrumentation, streamed without usage in the stream, counts the
        // tokens itself (a tokenizer over the text) and writes them where the provider's go;
        // with the provider's usage it also writes the cached count, which it never estimates.
        if scope.starts_with("openlit.instrumentation.openai")
            && self.attrs.get("gen_ai.request.stream") == Some(&Value::Bool(true))
            && !self
                .attrs
                .contains_key("gen_ai.usage.cache_read.input_tokens")
        {
            return Some(CountsDoubt::Estimated);
        }
        // Traceloop's anthropic instrumentation (0.62.4 and earlier), streamed, adds the
        // stream's opening output count to its final running total; its spans do not say
        // whether the call streamed.
        if scope == "opentelemetry.instrumentation.anthropic" && self.output_tokens().is_some() {
            return Some(CountsDoubt::MaybeOver);
        }
        None
    }

    pub(super) fn operation(&self) -> Option<&str> {
        self.str("gen_ai.operation.name")
    }

    /// The Vercel AI SDK's operation (`ai.generateText.doGenerate`, `ai.toolCall`, …).
    pub(super) fn ai_operation(&self) -> Option<&str> {
        self.str("ai.operationId").or_else(|| {
            (self.name.starts_with("ai.") && self.attrs.keys().any(|k| k.starts_with("ai.")))
                .then_some(self.name.as_str())
        })
    }

    pub(super) fn is_inference(&self) -> bool {
        if let Some(op) = self.ai_operation() {
            return op.ends_with(".doGenerate") || op.ends_with(".doStream");
        }
        match self.operation() {
            Some(op) => matches!(
                op,
                "chat" | "text_completion" | "generate_content" | "completion"
            ),
            None => {
                self.str("openinference.span.kind") == Some("LLM")
                    || matches!(self.str("llm.request.type"), Some("chat" | "completion"))
                    // A call that failed before its instrumentation wrote any attribute
                    // (OpenLIT's refused Anthropic call): named by the GenAI conventions
                    // (`chat <model>`), failed, and nothing else.
                    || (self.error.is_some()
                        && self.attrs.is_empty()
                        && ["chat ", "text_completion ", "generate_content "]
                            .iter()
                            .any(|op| self.name.starts_with(op)))
            }
        }
    }

    pub(super) fn is_tool(&self) -> bool {
        self.operation() == Some("execute_tool")
            || self.ai_operation() == Some("ai.toolCall")
            || self.str("openinference.span.kind") == Some("TOOL")
            || self.str("traceloop.span.kind") == Some("tool")
    }

    pub(super) fn conversation(&self) -> Option<&str> {
        self.str("gen_ai.conversation.id")
            .or_else(|| self.str("session.id"))
            .filter(|s| !s.is_empty())
    }

    pub(super) fn model(&self) -> Option<&str> {
        [
            "gen_ai.request.model",
            "gen_ai.response.model",
            "llm.model_name",
            "llm.request.model",
            "ai.model.id",
        ]
        .iter()
        .find_map(|k| self.str(k))
    }

    /// Does this span record Gemini function responses as the `response` objects the model was
    /// sent (`{"output": …}`, `{"error": …}`)? A Gemini model (by its name, where the span gives
    /// one) of Google's API or Vertex AI, read from the span's own messages: the AI SDK records
    /// its own message form, not the wire's.
    pub(super) fn records_function_responses(&self) -> bool {
        let google = self.provider().is_some_and(|p| {
            let p = p.to_ascii_lowercase();
            p.starts_with("gcp")
                || p.starts_with("google")
                || p.contains("gemini")
                || p.contains("vertex")
        });
        google
            && self.ai_operation().is_none()
            && self
                .model()
                .is_none_or(|m| m.to_ascii_lowercase().contains("gemini"))
    }

    /// The provider the span names (`anthropic`, `openai`, `anthropic.messages`, …).
    pub(super) fn provider(&self) -> Option<&str> {
        [
            "gen_ai.provider.name",
            "gen_ai.system",
            "llm.provider",
            "llm.system",
            "ai.model.provider",
        ]
        .iter()
        .find_map(|k| self.str(k))
    }

    /// Does pydantic-ai (2.16 and later) send this call's failed tool results to the model
    /// wrapped in `{"error": …}`, while its spans record them unwrapped? So it does for a
    /// provider without an error flag of its own (all but Anthropic, Bedrock and Google).
    pub(super) fn wraps_failed_results(&self) -> bool {
        if self.scope != "pydantic-ai" {
            return false;
        }
        let mut v = self.scope_version.split('.').map(|p| p.parse::<u64>().ok());
        let recent = match (v.next().flatten(), v.next().flatten()) {
            (Some(major), Some(minor)) => (major, minor) >= (2, 16),
            _ => false,
        };
        let native = self.provider().is_some_and(|p| {
            let p = p.to_ascii_lowercase();
            ["anthropic", "bedrock", "google", "gemini", "vertex"]
                .iter()
                .any(|n| p.contains(n))
        });
        recent && !native
    }

    pub(super) fn harnessed(&self) -> bool {
        self.events.iter().any(|e| e.attrs.contains_key(EVENT_ATTR))
    }
}

pub(super) fn read_request(req: Request, line: usize, spans: &mut Vec<Span>, logs: &mut Vec<Log>) {
    for rs in req.resource_spans {
        for ss in rs.scope_spans {
            for s in ss.spans {
                let scope = ss.scope.name.clone();
                let scope_version = ss.scope.version.clone();
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
                    scope,
                    scope_version,
                    counts_scope: None,
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
pub(super) fn parse(text: &str) -> (Vec<Span>, Vec<Log>, Vec<Diagnostic>) {
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
pub(super) fn line_of_start(text: &str, offset: usize) -> usize {
    let skipped = text[offset..].len() - text[offset..].trim_start().len();
    crate::scenario::line_col(text, offset + skipped).0
}

pub(super) fn typed(doc: Value, text: &str) -> Result<Request, Diagnostic> {
    let hint = "OTLP JSON, as the Collector's file exporter writes it, is `{\"resourceSpans\": [{\"scopeSpans\": [{\"spans\": [{\"traceId\", \"spanId\", …}]}]}]}` (see docs/production-traces.md)";
    crate::import::typed::<Request>(doc, text, SOURCE).map_err(|e| Diagnostic {
        hint: Some(hint.to_owned()),
        ..e
    })
}
