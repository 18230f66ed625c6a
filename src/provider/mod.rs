//! Wire formats of the model providers, as pure translation: an engine request
//! ([`ModelRequest`]) becomes a provider's request JSON, and a provider's answer — one JSON body,
//! a server-sent event sequence, or an error status — becomes a [`ModelResponse`] or a
//! [`ProviderFault`]. Two families: OpenAI Chat Completions (and every OpenAI-compatible server)
//! in `openai.rs`, Anthropic Messages in `anthropic.rs`; `sse.rs` holds the event type and its
//! text form.
//!
//! Both directions: a client renders requests and parses answers; a server (a stub provider)
//! parses requests ([`Provider::parse_request`]) and renders answers, whole, streamed or as a
//! fault ([`Provider::render_body`], [`Provider::render_stream`], [`Provider::render_fault`]).
//!
//! No I/O, clock or threads: the live client and the cassette player (`record/`) both call these
//! functions, so a recording and its replay go through exactly the same parsing. Latency is the
//! caller's to set.

pub mod anthropic;
pub mod matching;
pub mod openai;
pub mod responses;
pub mod sse;

use crate::llm::{
    FaultKind, Message, ModelRequest, ModelResponse, ProviderFault, Role, Usage, stream::Chunk,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use sse::SseEvent;

/// An enum and `ALL`, the list of its variants in order, from one list: a variant cannot be
/// left out of the registry it is in.
macro_rules! registry {
    ($(#[$meta:meta])* pub enum $name:ident { $($(#[$vmeta:meta])* $variant:ident,)+ }) => {
        $(#[$meta])*
        pub enum $name {
            $($(#[$vmeta])* $variant,)+
        }

        impl $name {
            /// Every one of them, in order: the one list the rest of harness reads (each
            /// per-variant fact is an exhaustive `match`, so the compiler names every place a
            /// new one must be handled).
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];
        }
    };
}

registry! {
    /// Which wire format.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum Provider {
        /// OpenAI Chat Completions and OpenAI-compatible servers (vLLM, llama.cpp, Ollama,
        /// LiteLLM).
        Openai,
        /// Anthropic Messages.
        Anthropic,
    }
}

registry! {
    /// Which API a request came in on (the serving side tells Chat Completions and Responses
    /// apart).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum Api {
        /// OpenAI Chat Completions (`POST /v1/chat/completions`).
        ChatCompletions,
        /// OpenAI Responses (`POST /v1/responses`).
        Responses,
        /// Anthropic Messages (`POST /v1/messages`).
        Messages,
    }
}

impl Api {
    /// Its route, as the docs name it and the SDKs send it.
    pub fn route(self) -> &'static str {
        match self {
            Self::ChatCompletions => "/v1/chat/completions",
            Self::Responses => "/v1/responses",
            Self::Messages => "/v1/messages",
        }
    }

    /// The API a request path is for (with or without the `/v1` a client's base URL may
    /// lack), when it is one.
    pub fn of_path(path: &str) -> Option<Api> {
        let below = |p: &'static str| p.strip_prefix("/v1").unwrap_or(p);
        let path = path.strip_prefix("/v1").unwrap_or(path);
        Self::ALL.iter().copied().find(|a| below(a.route()) == path)
    }

    /// Whose error shapes and ids it uses.
    pub fn provider(self) -> Provider {
        match self {
            Self::ChatCompletions | Self::Responses => Provider::Openai,
            Self::Messages => Provider::Anthropic,
        }
    }

    /// Read a request body sent to this API.
    pub fn parse_request(self, body: &Value) -> Result<WireRequest, WireError> {
        match self {
            Self::ChatCompletions => Provider::Openai.parse_request(body),
            Self::Responses => responses::parse_request(body),
            Self::Messages => Provider::Anthropic.parse_request(body),
        }
    }

    /// Read a whole success body this API answered.
    pub fn parse_body(self, body: &Value) -> Result<ModelResponse, WireError> {
        match self {
            Self::Responses => responses::parse_body(body),
            _ => self.provider().parse_body(body),
        }
    }

    /// Read an event stream this API answered.
    pub fn parse_stream(self, events: &[SseEvent]) -> Result<ModelResponse, WireError> {
        match self {
            Self::Responses => responses::parse_stream(events),
            _ => self.provider().parse_stream(events),
        }
    }
}

/// A provider's own API: Chat Completions for OpenAI (what the engine speaks), Messages for
/// Anthropic.
impl From<Provider> for Api {
    fn from(p: Provider) -> Self {
        match p {
            Provider::Openai => Self::ChatCompletions,
            Provider::Anthropic => Self::Messages,
        }
    }
}

/// The text of a message's content as the APIs send it: a string, or its text parts joined.
pub(crate) fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

impl std::str::FromStr for Provider {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .iter()
            .copied()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| {
                let known: Vec<&str> = Self::ALL.iter().map(|p| p.as_str()).collect();
                format!("unknown provider `{s}` (known: {})", known.join(", "))
            })
    }
}

/// How an agent's SDK takes a base URL from a variable: harness's base as it is, or with the
/// `/v1` the SDK expects in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BaseForm {
    /// `http://127.0.0.1:PORT`.
    Bare,
    /// `http://127.0.0.1:PORT/v1`.
    V1,
}

impl BaseForm {
    /// The URL to set, given harness's base.
    pub fn url(self, base: &str) -> String {
        match self {
            Self::Bare => base.to_owned(),
            Self::V1 => format!("{base}/v1"),
        }
    }
}

/// Every provider's key variable (what a recording scrubs, and `exec` sets a dummy for).
pub fn key_vars() -> Vec<&'static str> {
    Provider::ALL.iter().map(|p| p.key_env()).collect()
}

impl Provider {
    /// Its name as its maker writes it.
    pub fn title(self) -> &'static str {
        match self {
            Self::Openai => "OpenAI",
            Self::Anthropic => "Anthropic",
        }
    }

    /// Its APIs, as [`Api::ALL`] lists them.
    pub fn apis(self) -> Vec<Api> {
        Api::ALL
            .iter()
            .copied()
            .filter(|a| a.provider() == self)
            .collect()
    }

    /// One model as its models endpoint describes it (`created`: seconds since the epoch).
    pub fn model_object(self, name: &str, created: u64) -> Value {
        match self {
            Self::Openai => {
                serde_json::json!({"id": name, "object": "model", "created": created, "owned_by": "harness"})
            }
            Self::Anthropic => {
                serde_json::json!({"type": "model", "id": name, "display_name": name, "created_at": "2026-01-01T00:00:00Z"})
            }
        }
    }

    /// Its models list holding one model.
    pub fn model_list(self, name: &str, created: u64) -> Value {
        let one = self.model_object(name, created);
        match self {
            Self::Openai => serde_json::json!({"object": "list", "data": [one]}),
            Self::Anthropic => {
                serde_json::json!({"data": [one], "has_more": false, "first_id": name, "last_id": name})
            }
        }
    }

    /// The variables its SDKs (and the frameworks over them) read the base URL from.
    pub fn base_url_vars(self) -> &'static [(&'static str, BaseForm)] {
        match self {
            Self::Openai => &[
                ("OPENAI_BASE_URL", BaseForm::V1),
                ("OPENAI_API_BASE", BaseForm::V1),
            ],
            Self::Anthropic => &[("ANTHROPIC_BASE_URL", BaseForm::Bare)],
        }
    }

    /// Does the base URL its SDKs take hold the API version (`https://api.openai.com/v1`), or
    /// do the routes (`https://api.anthropic.com` + `/v1/messages`)?
    pub fn base_holds_version(self) -> bool {
        match self {
            Self::Openai => true,
            Self::Anthropic => false,
        }
    }

    /// Request headers only its clients send.
    pub fn own_headers(self) -> &'static [&'static str] {
        match self {
            Self::Openai => &[],
            Self::Anthropic => &["anthropic-version", "x-api-key"],
        }
    }

    /// The provider a request is for: the one whose API its path names (or is below:
    /// `/v1/messages/count_tokens`), else the one whose own headers it carries, else OpenAI
    /// (what compatible servers speak).
    pub fn of_request(path: &str, has_header: impl Fn(&str) -> bool) -> Provider {
        let path = path.strip_prefix("/v1").unwrap_or(path);
        Api::ALL
            .iter()
            .copied()
            .find(|a| {
                let route = a.route().strip_prefix("/v1").unwrap_or(a.route());
                path.strip_prefix(route)
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
            })
            .map(Api::provider)
            .or_else(|| {
                Self::ALL
                    .iter()
                    .copied()
                    .find(|p| p.own_headers().iter().any(|h| has_header(h)))
            })
            .unwrap_or(Self::Openai)
    }

    /// snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Openai => "openai",
            Self::Anthropic => "anthropic",
        }
    }

    /// The environment variable the official SDKs read the key from.
    pub fn key_env(self) -> &'static str {
        match self {
            Self::Openai => "OPENAI_API_KEY",
            Self::Anthropic => "ANTHROPIC_API_KEY",
        }
    }

    /// The SDKs' default base URL.
    pub fn default_base_url(self) -> &'static str {
        match self {
            Self::Openai => "https://api.openai.com/v1",
            Self::Anthropic => "https://api.anthropic.com",
        }
    }

    /// The endpoint below the base URL.
    pub fn endpoint(self, base_url: &str) -> String {
        // A query (Azure's `?api-version=…`) stays after the path the SDKs append.
        let (base, query) = match base_url.split_once('?') {
            Some((b, q)) => (b, format!("?{q}")),
            None => (base_url, String::new()),
        };
        let base = base.trim_end_matches('/');
        match self {
            Self::Openai => format!("{base}/chat/completions{query}"),
            // The Anthropic SDK's base URL has no `/v1`; accept one anyway.
            Self::Anthropic if base.ends_with("/v1") => format!("{base}/messages{query}"),
            Self::Anthropic => format!("{base}/v1/messages{query}"),
        }
    }

    /// Request headers besides the content type: the key, and the API version for Anthropic.
    pub fn auth_headers(self, key: &str) -> Vec<(&'static str, String)> {
        match self {
            Self::Openai => vec![("authorization", format!("Bearer {key}"))],
            Self::Anthropic => vec![
                ("x-api-key", key.to_owned()),
                ("anthropic-version", "2023-06-01".to_owned()),
            ],
        }
    }

    /// The request JSON for one engine request.
    pub fn render_request(self, request: &ModelRequest<'_>, options: &WireOptions) -> Value {
        match self {
            Self::Openai => openai::render_request(request, options),
            Self::Anthropic => anthropic::render_request(request, options),
        }
    }

    /// A whole (non-streamed) success body.
    pub fn parse_body(self, body: &Value) -> Result<ModelResponse, WireError> {
        match self {
            Self::Openai => openai::parse_body(body),
            Self::Anthropic => anthropic::parse_body(body),
        }
    }

    /// A streamed answer, event by event. The response carries the chunks unassembled
    /// (`stream`), in the split they arrived in, for the engine to fold.
    pub fn parse_stream(self, events: &[SseEvent]) -> Result<ModelResponse, WireError> {
        match self {
            Self::Openai => openai::parse_stream(events),
            Self::Anthropic => anthropic::parse_stream(events),
        }
    }

    /// A request body as the engine's conversation (the serving direction: a stub that answers
    /// this format reads requests with it).
    pub fn parse_request(self, body: &Value) -> Result<WireRequest, WireError> {
        match self {
            Self::Openai => openai::parse_request(body),
            Self::Anthropic => anthropic::parse_request(body),
        }
    }

    /// A whole response body for an answer (the serving direction).
    pub fn render_body(self, response: &ModelResponse, meta: &AnswerMeta) -> Value {
        match self {
            Self::Openai => openai::render_body(response, meta),
            Self::Anthropic => anthropic::render_body(response, meta),
        }
    }

    /// An event stream for an answer given as chunks (the serving direction).
    pub fn render_stream(self, chunks: &[Chunk], usage: Usage, meta: &AnswerMeta) -> Vec<SseEvent> {
        match self {
            Self::Openai => openai::render_stream(chunks, usage, meta),
            Self::Anthropic => anthropic::render_stream(chunks, usage, meta),
        }
    }

    /// The status and body a provider answers a fault with (the serving direction); a
    /// retry-after hint goes in headers, which are the caller's. Anthropic answers a server
    /// fault whose message speaks of overload as 529 `overloaded_error`, as its API does.
    pub fn render_fault(self, kind: FaultKind, message: &str) -> (u16, Value) {
        let overloaded = kind == FaultKind::ServerError
            && self == Self::Anthropic
            && message.to_lowercase().contains("overload");
        let status = match kind {
            FaultKind::RateLimit => 429,
            FaultKind::ServerError if overloaded => 529,
            FaultKind::ServerError => 500,
            FaultKind::ContextOverflow => 400,
            FaultKind::Timeout => 408,
            FaultKind::Refused => 400,
        };
        let body = match self {
            Self::Openai => {
                let (kind, code, param) = match kind {
                    FaultKind::RateLimit => ("requests", Some("rate_limit_exceeded"), None),
                    FaultKind::ServerError => ("server_error", None, None),
                    FaultKind::ContextOverflow => (
                        "invalid_request_error",
                        Some("context_length_exceeded"),
                        Some("messages"),
                    ),
                    FaultKind::Timeout => ("timeout", Some("timeout"), None),
                    FaultKind::Refused => ("invalid_request_error", None, None),
                };
                serde_json::json!({"error": {"message": message, "type": kind, "param": param, "code": code}})
            }
            Self::Anthropic => {
                let kind = if overloaded {
                    "overloaded_error"
                } else {
                    anthropic::error_type(kind)
                };
                serde_json::json!({"type": "error", "error": {"type": kind, "message": message}})
            }
        };
        (status, body)
    }

    /// An error body in the provider's own shape for a request it refuses: `status` picks the
    /// error type (400 invalid request, 404 not found, 408 timeout, 413 too large, 529
    /// overloaded).
    pub fn error_body(self, status: u16, message: &str) -> Value {
        match self {
            Self::Openai => {
                let (kind, code) = match status {
                    404 => ("invalid_request_error", Some("unknown_url")),
                    408 => ("timeout", Some("timeout")),
                    413 => ("invalid_request_error", Some("request_too_large")),
                    _ => ("invalid_request_error", None),
                };
                serde_json::json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
            }
            Self::Anthropic => {
                let kind = match status {
                    404 => "not_found_error",
                    408 => "timeout_error",
                    413 => "request_too_large",
                    529 => "overloaded_error",
                    500..=599 => "api_error",
                    _ => "invalid_request_error",
                };
                serde_json::json!({"type": "error", "error": {"type": kind, "message": message}})
            }
        }
    }

    /// An error status and body as a provider fault, or `None` when the status is not one the
    /// loop can answer (authentication, a bad request): those end a recording.
    pub fn fault(self, status: u16, body: &Value) -> Option<FaultKind> {
        let text = error_message(body).unwrap_or_default().to_lowercase();
        let overflow = [
            "context_length",
            "context length",
            "prompt is too long",
            "too many tokens",
        ]
        .iter()
        .any(|w| text.contains(w));
        match status {
            429 => Some(FaultKind::RateLimit),
            408 => Some(FaultKind::Timeout),
            400 | 413 if overflow => Some(FaultKind::ContextOverflow),
            500..=599 => Some(FaultKind::ServerError),
            _ => None,
        }
    }
}

/// What the request carries besides the conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireOptions {
    /// Model name as the provider knows it.
    pub model: String,
    /// Ask for a server-sent event stream.
    pub stream: bool,
    /// Output token limit (required by Anthropic; sent to OpenAI only when set).
    pub max_tokens: Option<u32>,
}

/// A request as a server reads it.
#[derive(Debug, Clone)]
pub struct WireRequest {
    /// Model, stream flag, token limit.
    pub options: WireOptions,
    /// The conversation (tool results carry no ids: their order pairs them with the calls).
    pub messages: Vec<Message>,
    /// Tools offered.
    pub tools: Vec<crate::llm::ToolSpec>,
    /// What each tool message of `messages` said on the wire besides its text, in order.
    pub results: Vec<ResultRef>,
    /// What the request asks of its answer's form.
    pub asks: Asks,
}

/// A tool result as the wire carries it: the call it answers and the provider's failure flag.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResultRef {
    /// The id of the call it answers (`tool_call_id`, `tool_use_id`, `call_id`).
    pub id: String,
    /// The provider's flag (Anthropic `is_error`), when the request set one.
    pub is_error: Option<bool>,
}

/// What a request asks of its answer besides the model and the stream flag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asks {
    /// A final usage chunk in the stream (OpenAI `stream_options.include_usage`).
    pub usage_chunk: bool,
    /// How many choices (OpenAI `n`).
    pub choices: u32,
    /// What it says of tool use.
    pub tool_choice: ToolChoice,
    /// The response it continues (Responses API `previous_response_id`).
    pub previous: Option<String>,
}

impl Default for Asks {
    fn default() -> Self {
        Self {
            usage_chunk: false,
            choices: 1,
            tool_choice: ToolChoice::Auto,
            previous: None,
        }
    }
}

/// A request's `tool_choice`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ToolChoice {
    /// The model decides.
    #[default]
    Auto,
    /// No tool may be called.
    None,
    /// Some tool must be called (OpenAI `required`, Anthropic `any`).
    Required,
    /// This tool must be called.
    Named(String),
}

/// What a served answer says besides its content (the serving direction).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnswerMeta {
    /// Its id (`chatcmpl-…`, `msg_…`, `resp_…`).
    pub id: String,
    /// Its creation time, in Unix seconds (virtual: the served answers' own clock).
    pub created: u64,
    /// The model it names (the request's).
    pub model: String,
    /// End an OpenAI stream with a usage chunk.
    pub usage_chunk: bool,
    /// How many identical choices (OpenAI `n`).
    pub choices: u32,
    /// The stream reaches its finish; `false` serves a stream cut before it.
    pub complete: bool,
}

impl AnswerMeta {
    /// The form a request asks for, with this id and time.
    pub fn for_request(request: &WireRequest, id: String, created: u64) -> Self {
        Self {
            id,
            created,
            model: request.options.model.clone(),
            usage_chunk: request.asks.usage_chunk,
            choices: request.asks.choices,
            complete: true,
        }
    }
}

/// Arguments text as the engine keeps it: parsed when it is JSON, raw otherwise.
/// Reading a string field of wire JSON where a missing or non-string one means empty.
trait StrField {
    /// The string at `key` (a `/`-pointer when it starts with `/`), or `""`.
    fn str_or_empty(&self, key: &str) -> &str;
}

impl StrField for Value {
    fn str_or_empty(&self, key: &str) -> &str {
        let v = if key.starts_with('/') {
            self.pointer(key)
        } else {
            self.get(key)
        };
        v.and_then(Value::as_str).unwrap_or("")
    }
}

fn arguments(text: &str) -> crate::llm::Arguments {
    match serde_json::from_str::<Value>(text) {
        Ok(v) => crate::llm::Arguments::Parsed(v),
        Err(_) => crate::llm::Arguments::Raw(text.to_owned()),
    }
}

fn options_of(body: &Value, provider: &'static str) -> Result<WireOptions, WireError> {
    Ok(WireOptions {
        model: body
            .get("model")
            .and_then(Value::as_str)
            .ok_or_else(|| bad_request(provider, "the request has no `model`"))?
            .to_owned(),
        stream: body.get("stream").and_then(Value::as_bool).unwrap_or(false),
        max_tokens: body
            .get("max_tokens")
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok()),
    })
}

/// A provider answer (or, serving, a request) that does not have the expected shape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// A request a server reads lacks something required or holds something the API refuses.
    #[error("bad {provider} request: {detail}")]
    BadRequest {
        /// Which format.
        provider: &'static str,
        /// What is wrong.
        detail: String,
    },
    /// The body or an event lacks something required.
    #[error("malformed {provider} response: {detail}")]
    Malformed {
        /// Which format.
        provider: &'static str,
        /// What is wrong.
        detail: String,
    },
    /// The stream ended before the provider said it was complete (a cut connection).
    #[error("the stream ended after {events} events without its final event")]
    Truncated {
        /// Events received.
        events: usize,
    },
    /// The provider sent an error event inside the stream.
    #[error("{message}")]
    StreamError {
        /// The fault it maps to.
        kind: FaultKind,
        /// The provider's message.
        message: String,
    },
}

impl WireError {
    /// The fault the engine sees for this error.
    pub fn fault(&self, latency_ms: u64) -> ProviderFault {
        let (kind, message) = match self {
            Self::StreamError { kind, message } => (*kind, message.clone()),
            Self::Truncated { .. } => (FaultKind::ServerError, format!("connection cut: {self}")),
            Self::Malformed { .. } | Self::BadRequest { .. } => {
                (FaultKind::ServerError, self.to_string())
            }
        };
        ProviderFault {
            kind,
            message,
            retry_after_ms: None,
            latency_ms,
        }
    }
}

/// The provider's error text from an error body (`{"error": {"message": …}}`, both formats).
pub fn error_message(body: &Value) -> Option<String> {
    let e = body.get("error")?;
    e.get("message")
        .and_then(Value::as_str)
        .or_else(|| e.as_str())
        .map(str::to_owned)
}

/// A stream event's JSON and its type: the `type` field, else the SSE event name (`n` is its
/// position, for the error).
fn typed_event(
    e: &SseEvent,
    n: usize,
    provider: &'static str,
) -> Result<(Value, String), WireError> {
    let v: Value = serde_json::from_str(&e.data)
        .map_err(|err| malformed(provider, format!("event {n} is not JSON: {err}")))?;
    let kind = v
        .get("type")
        .and_then(Value::as_str)
        .or(e.event.as_deref())
        .unwrap_or("")
        .to_owned();
    Ok((v, kind))
}

/// A response with nothing in it yet.
fn empty_response() -> ModelResponse {
    ModelResponse {
        text: None,
        tool_calls: Vec::new(),
        finish: crate::llm::Finish::Stop,
        usage: Usage::default(),
        latency_ms: 0,
        anomaly: None,
        chunks: 0,
        stream: Vec::new(),
    }
}

fn bad_request(provider: &'static str, detail: impl Into<String>) -> WireError {
    WireError::BadRequest {
        provider,
        detail: detail.into(),
    }
}

fn malformed(provider: &'static str, detail: impl Into<String>) -> WireError {
    WireError::Malformed {
        provider,
        detail: detail.into(),
    }
}

/// The ids of the tool calls each tool message answers. The engine's tool messages follow the
/// assistant message carrying the calls, one per call, in call order; they carry no id, so the
/// k-th tool message after an assistant message answers its k-th call. A tool message with no
/// call left to answer gets `None` (the formats then send it as user text).
fn tool_result_ids(messages: &[Message]) -> Vec<Option<String>> {
    let mut pending: std::collections::VecDeque<String> = Default::default();
    messages
        .iter()
        .map(|m| match m.role {
            Role::Assistant => {
                pending = m.tool_calls.iter().map(|c| c.id.clone()).collect();
                None
            }
            Role::Tool => pending.pop_front(),
            Role::System | Role::User => {
                pending.clear();
                None
            }
        })
        .collect()
}

/// A finished stream's chunks into a response: text, calls and finish stay for the engine to
/// fold (so the trace counts the chunks as recorded).
fn streamed(chunks: Vec<Chunk>, usage: Usage) -> ModelResponse {
    ModelResponse {
        usage,
        chunks: chunks.len(),
        stream: chunks,
        ..empty_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{Arguments, ToolCall};
    use serde_json::json;

    #[test]
    fn tool_results_pair_with_calls_in_order() {
        let call = |id: &str| ToolCall {
            id: id.into(),
            name: "x".into(),
            arguments: Arguments::Parsed(json!({})),
        };
        let mut a = Message::new(Role::Assistant, "");
        a.tool_calls = vec![call("a"), call("b")];
        let msgs = vec![
            Message::new(Role::User, "hi"),
            a,
            Message::new(Role::Tool, "1"),
            Message::new(Role::Tool, "2"),
            Message::new(Role::Tool, "3"),
        ];
        assert_eq!(
            tool_result_ids(&msgs),
            vec![None, None, Some("a".into()), Some("b".into()), None]
        );
    }

    fn conversation() -> (Vec<Message>, Vec<crate::llm::ToolSpec>) {
        let mut a = Message::new(Role::Assistant, "Looking.");
        a.tool_calls = vec![ToolCall {
            id: "c1".into(),
            name: "exec".into(),
            arguments: Arguments::Parsed(json!({"command": "ls"})),
        }];
        let mut t = Message::new(Role::Tool, "no such dir");
        t.failed = true;
        let messages = vec![
            Message::new(Role::System, "sys"),
            Message::new(Role::User, "list"),
            a,
            t,
            Message::new(Role::User, "again"),
        ];
        let tools = vec![crate::llm::ToolSpec {
            name: "exec".into(),
            description: "run".into(),
            schema: json!({"type": "object", "properties": {"command": {"type": "string"}}}),
        }];
        (messages, tools)
    }

    fn request<'a>(m: &'a [Message], t: &'a [crate::llm::ToolSpec]) -> ModelRequest<'a> {
        ModelRequest {
            purpose: crate::llm::Purpose::Turn,
            iteration: 1,
            call: 1,
            messages: m,
            tools: t,
            force_text: false,
        }
    }

    #[test]
    fn requests_round_trip_through_the_serving_direction() {
        let (messages, tools) = conversation();
        for p in [Provider::Openai, Provider::Anthropic] {
            let options = WireOptions {
                model: "m".into(),
                stream: true,
                max_tokens: Some(100),
            };
            let body = p.render_request(&request(&messages, &tools), &options);
            let back = p
                .parse_request(&body)
                .unwrap_or_else(|e| panic!("{p:?}: {e}"));
            assert_eq!(back.options, options, "{p:?}");
            assert_eq!(back.messages.len(), messages.len(), "{p:?}");
            assert_eq!(
                back.messages[2].tool_calls[0].arguments,
                messages[2].tool_calls[0].arguments
            );
            assert_eq!(
                p.render_request(&request(&back.messages, &back.tools), &back.options),
                body,
                "{p:?}: parse then render gives the same request"
            );
        }
        assert!(
            Provider::Openai
                .parse_request(&json!({"model": "m"}))
                .is_err()
        );
    }

    #[test]
    fn answers_round_trip_whole_and_streamed() {
        use crate::llm::stream::{Chunk, assemble};
        let chunks = vec![
            Chunk::Text {
                text: "Let me ".into(),
            },
            Chunk::Text {
                text: "look.".into(),
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
                text: "\"ls\"}".into(),
            },
            Chunk::ToolCallComplete { index: 0 },
            Chunk::Finish {
                reason: crate::llm::Finish::ToolUse,
            },
        ];
        let usage = Usage {
            input: 12,
            output: 5,
        };
        let want = assemble(&chunks).expect("folds");
        for p in [Provider::Openai, Provider::Anthropic] {
            let meta = AnswerMeta {
                id: "id-1".into(),
                created: 1,
                model: "m".into(),
                usage_chunk: true,
                choices: 1,
                complete: true,
            };
            let events = p.render_stream(&chunks, usage, &meta);
            let got = p
                .parse_stream(&events)
                .unwrap_or_else(|e| panic!("{p:?}: {e}"));
            assert_eq!(got.usage, usage, "{p:?}");
            let folded = assemble(&got.stream).expect("folds");
            assert_eq!(folded.text, want.text, "{p:?}");
            assert_eq!(folded.finish, want.finish, "{p:?}");
            assert_eq!(
                folded.tool_calls[0].arguments, want.tool_calls[0].arguments,
                "{p:?}"
            );
            let whole = ModelResponse {
                text: folded.text.clone(),
                tool_calls: vec![ToolCall {
                    id: "c1".into(),
                    name: "exec".into(),
                    arguments: Arguments::Parsed(json!({"command": "ls"})),
                }],
                finish: crate::llm::Finish::ToolUse,
                usage,
                ..empty_response()
            };
            let back = p.parse_body(&p.render_body(&whole, &meta)).expect("parses");
            assert_eq!(
                (back.text, back.finish, back.usage),
                (whole.text, whole.finish, whole.usage),
                "{p:?}"
            );
            assert_eq!(
                back.tool_calls[0].arguments, whole.tool_calls[0].arguments,
                "{p:?}"
            );
            for kind in [
                FaultKind::RateLimit,
                FaultKind::ServerError,
                FaultKind::ContextOverflow,
                FaultKind::Timeout,
            ] {
                let (status, body) = p.render_fault(kind, "context length exceeded");
                assert_eq!(p.fault(status, &body), Some(kind), "{p:?} {kind:?}");
                assert_eq!(
                    error_message(&body).as_deref(),
                    Some("context length exceeded")
                );
            }
            // A refused request is served as the provider's 400, which ends a recording
            // rather than being retried.
            let (status, body) = p.render_fault(FaultKind::Refused, "unknown parameter");
            assert_eq!(status, 400, "{p:?}");
            assert_eq!(p.fault(status, &body), None, "{p:?}");
            assert_eq!(error_message(&body).as_deref(), Some("unknown parameter"));
        }
    }

    /// Each API of the registry is found by its route (with or without `/v1`) and belongs to
    /// a provider that lists it; each provider parses back from its name, has the variables
    /// its SDKs read, a key the recordings scrub, and is told by the headers only it sends.
    #[test]
    fn the_registry_routes_each_api_to_its_provider() {
        for &a in Api::ALL {
            assert_eq!(Api::of_path(a.route()), Some(a), "{a:?}");
            let bare = a.route().strip_prefix("/v1").expect("a /v1 route");
            assert_eq!(Api::of_path(bare), Some(a), "{a:?}");
            assert_eq!(Provider::of_request(a.route(), |_| false), a.provider());
            assert!(a.provider().apis().contains(&a), "{a:?}");
        }
        for &p in Provider::ALL {
            assert_eq!(p.as_str().parse::<Provider>(), Ok(p));
            assert!(p.apis().contains(&Api::from(p)), "{p:?}");
            assert!(!p.base_url_vars().is_empty(), "{p:?}");
            assert!(key_vars().contains(&p.key_env()), "{p:?}");
            for h in p.own_headers() {
                assert_eq!(Provider::of_request("/v1/models", |x| x == *h), p, "{h}");
            }
            assert!(p.model_list("m", 0).to_string().contains("\"m\""), "{p:?}");
        }
        assert_eq!(
            Provider::of_request("/v1/messages/count_tokens", |_| false),
            Provider::Anthropic
        );
        assert_eq!(
            Provider::of_request("/v1/models", |_| false),
            Provider::Openai
        );
        assert_eq!(Api::of_path("/v1/models"), None);
        let err = "nosuch".parse::<Provider>().expect_err("unknown");
        assert!(err.contains("known: openai, anthropic"), "{err}");
    }

    #[test]
    fn faults_by_status() {
        let p = Provider::Openai;
        assert_eq!(p.fault(429, &json!({})), Some(FaultKind::RateLimit));
        assert_eq!(p.fault(503, &json!({})), Some(FaultKind::ServerError));
        let overflow = json!({"error": {"message": "This model's maximum context length is 8192"}});
        assert_eq!(p.fault(400, &overflow), Some(FaultKind::ContextOverflow));
        assert_eq!(p.fault(401, &json!({})), None);
        assert_eq!(
            Provider::Anthropic.endpoint("http://127.0.0.1:9/"),
            "http://127.0.0.1:9/v1/messages"
        );
        assert_eq!(
            Provider::Openai.endpoint("http://127.0.0.1:9/v1"),
            "http://127.0.0.1:9/v1/chat/completions"
        );
    }

    #[test]
    fn a_query_in_the_base_url_stays_after_the_path() {
        assert_eq!(
            Provider::Openai.endpoint(
                "https://x.openai.azure.com/openai/deployments/d/?api-version=2024-10-21"
            ),
            "https://x.openai.azure.com/openai/deployments/d/chat/completions?api-version=2024-10-21"
        );
        assert_eq!(
            Provider::Anthropic.endpoint("http://127.0.0.1:9?beta=1"),
            "http://127.0.0.1:9/v1/messages?beta=1"
        );
    }
}
