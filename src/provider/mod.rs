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
pub mod gemini;
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
        /// The Gemini API (Google AI Studio's `generativelanguage.googleapis.com`).
        Gemini,
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
        /// Gemini `generateContent` and `streamGenerateContent`
        /// (`POST /v1beta/models/{model}:generateContent`).
        GenerateContent,
    }
}

/// What a request path says: the API, and for one that carries them in the path (Gemini's),
/// the model and whether the answer streams (and as server-sent events, `alt=sse`, or as one
/// JSON array).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Routed {
    /// The API.
    pub api: Api,
    /// The model the path names.
    pub model: Option<String>,
    /// The answer the path asks for: `None` whole (or as the body says), `Some(true)` as
    /// server-sent events, `Some(false)` as a JSON array streamed.
    pub stream: Option<bool>,
}

impl Api {
    /// Its route, as the docs name it and the SDKs send it.
    pub fn route(self) -> &'static str {
        match self {
            Self::ChatCompletions => "/v1/chat/completions",
            Self::Responses => "/v1/responses",
            Self::Messages => "/v1/messages",
            Self::GenerateContent => "/v1beta/models/{model}:generateContent",
        }
    }

    /// Does its path carry the model and the stream flag (`{model}:method`)?
    pub fn model_in_path(self) -> bool {
        match self {
            Self::ChatCompletions | Self::Responses | Self::Messages => false,
            Self::GenerateContent => true,
        }
    }

    /// The API a request path is for (with or without the `/v1` a client's base URL may
    /// lack), when it is one.
    pub fn of_path(path: &str) -> Option<Api> {
        Self::route_of(path, None).map(|r| r.api)
    }

    /// What a request path (and its query) says, when it is a model request's.
    pub fn route_of(path: &str, query: Option<&str>) -> Option<Routed> {
        let below = |p: &'static str| p.strip_prefix("/v1").unwrap_or(p);
        let bare = path.strip_prefix("/v1").unwrap_or(path);
        if let Some(api) = Self::ALL
            .iter()
            .copied()
            .find(|a| !a.model_in_path() && below(a.route()) == bare)
        {
            return Some(Routed {
                api,
                model: None,
                stream: None,
            });
        }
        // `/{version}/models/{model}:{method}`, the version `v1beta` or `v1`, or none.
        let rest = ["/v1beta", "/v1alpha", "/v1", ""]
            .iter()
            .find_map(|v| path.strip_prefix(v)?.strip_prefix("/models/"))?;
        let (model, method) = rest.rsplit_once(':')?;
        if model.is_empty() || model.contains('/') {
            return None;
        }
        let sse = query.is_some_and(|q| q.split('&').any(|kv| kv == "alt=sse"));
        let stream = match method {
            "generateContent" => None,
            "streamGenerateContent" => Some(sse),
            _ => return None,
        };
        Some(Routed {
            api: Self::GenerateContent,
            model: Some(model.to_owned()),
            stream,
        })
    }

    /// Whose error shapes and ids it uses.
    pub fn provider(self) -> Provider {
        match self {
            Self::ChatCompletions | Self::Responses => Provider::Openai,
            Self::Messages => Provider::Anthropic,
            Self::GenerateContent => Provider::Gemini,
        }
    }

    /// Read a request body sent to this API.
    pub fn parse_request(self, body: &Value) -> Result<WireRequest, WireError> {
        match self {
            Self::ChatCompletions => Provider::Openai.parse_request(body),
            Self::Responses => responses::parse_request(body),
            Self::Messages => Provider::Anthropic.parse_request(body),
            Self::GenerateContent => Provider::Gemini.parse_request(body),
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
            Provider::Gemini => Self::GenerateContent,
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

/// The base-URL variables of `providers` set for a server at `base` (`VAR=URL`,
/// space-separated), as `serve` and `proxy` print them for an agent to take.
pub fn base_url_assignments(providers: &[Provider], base: &str) -> String {
    providers
        .iter()
        .flat_map(|p| p.base_url_vars().iter().take(1))
        .map(|(var, form)| format!("{var}={}", form.url(base)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The first base-URL variable of each of `providers`, `A, B or C`.
pub fn base_url_var_names(providers: &[Provider]) -> String {
    let names: Vec<&str> = providers
        .iter()
        .filter_map(|p| p.base_url_vars().first().map(|(v, _)| *v))
        .collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => names.join(""),
    }
}

/// What a server of every API answers: each provider's routes and the base URL its SDKs
/// take (for messages that tell an agent where to send its requests).
pub fn served_routes() -> String {
    let each: Vec<String> = Provider::ALL
        .iter()
        .map(|p| {
            let routes: Vec<&str> = p.apis().iter().map(|a| a.route()).collect();
            let base = if p.base_holds_version() {
                "http://HOST/v1"
            } else {
                "http://HOST"
            };
            format!(
                "POST {} ({}, base URL {base})",
                routes.join(" and "),
                p.title()
            )
        })
        .collect();
    format!("{}; each also without its version", each.join("; "))
}

/// The providers `harness proxy` forwards.
pub fn proxied() -> Vec<Provider> {
    Provider::ALL
        .iter()
        .copied()
        .filter(|p| p.proxied())
        .collect()
}

/// Every provider's key variables (what a recording scrubs).
pub fn key_vars() -> Vec<&'static str> {
    Provider::ALL
        .iter()
        .flat_map(|p| p.key_groups().iter().copied().flatten().copied())
        .collect()
}

impl Provider {
    /// Its name as its maker writes it.
    pub fn title(self) -> &'static str {
        match self {
            Self::Openai => "OpenAI",
            Self::Anthropic => "Anthropic",
            Self::Gemini => "Gemini",
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
            Self::Gemini => {
                let bare = name.strip_prefix("models/").unwrap_or(name);
                serde_json::json!({"name": format!("models/{bare}"), "version": "001",
                    "displayName": bare, "inputTokenLimit": 1_048_576, "outputTokenLimit": 65_536,
                    "supportedGenerationMethods": ["generateContent", "countTokens"]})
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
            Self::Gemini => serde_json::json!({"models": [one]}),
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
            // Gemini CLI and the google-genai SDKs (which add the version themselves).
            Self::Gemini => &[("GOOGLE_GEMINI_BASE_URL", BaseForm::Bare)],
        }
    }

    /// Does `harness proxy` forward and record its API?
    pub fn proxied(self) -> bool {
        match self {
            Self::Openai | Self::Anthropic | Self::Gemini => true,
        }
    }

    /// Does the base URL its SDKs take hold the API version (`https://api.openai.com/v1`), or
    /// do the routes (`https://api.anthropic.com` + `/v1/messages`)?
    pub fn base_holds_version(self) -> bool {
        match self {
            Self::Openai => true,
            Self::Anthropic | Self::Gemini => false,
        }
    }

    /// Request headers only its clients send.
    pub fn own_headers(self) -> &'static [&'static str] {
        match self {
            Self::Openai => &[],
            Self::Anthropic => &["anthropic-version", "x-api-key"],
            Self::Gemini => &["x-goog-api-key", "x-goog-api-client"],
        }
    }

    /// The provider a request is for: the one whose API its path names (or is below:
    /// `/v1/messages/count_tokens`), else the one whose own headers it carries, else OpenAI
    /// (what compatible servers speak).
    pub fn of_request(path: &str, has_header: impl Fn(&str) -> bool) -> Provider {
        if let Some(r) = Api::route_of(path, None) {
            return r.api.provider();
        }
        // The Gemini API's version, or one of its methods after a model
        // (`models/{model}:countTokens`; a model id with a colon of its own, `llama3:8b`, is
        // none).
        if path.starts_with(&format!("/{}", gemini::VERSION))
            || path
                .rsplit_once(':')
                .is_some_and(|(_, method)| gemini::METHODS.contains(&method))
        {
            return Self::Gemini;
        }
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
            Self::Gemini => "gemini",
        }
    }

    /// The environment variable the official SDKs read the key from.
    pub fn key_env(self) -> &'static str {
        self.key_groups()[0][0]
    }

    /// The variables its clients read a key from, one group a client family: each reads the
    /// first of its group that is set (Google's SDKs `GOOGLE_API_KEY` over `GEMINI_API_KEY`;
    /// the AI SDK's Google provider its own). `exec` sets a group's first to a dummy key when
    /// none of it is set; recordings scrub them all.
    pub fn key_groups(self) -> &'static [&'static [&'static str]] {
        match self {
            Self::Openai => &[&["OPENAI_API_KEY"]],
            Self::Anthropic => &[&["ANTHROPIC_API_KEY"]],
            Self::Gemini => &[
                &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
                &["GOOGLE_GENERATIVE_AI_API_KEY"],
            ],
        }
    }

    /// The SDKs' default base URL.
    pub fn default_base_url(self) -> &'static str {
        match self {
            Self::Openai => "https://api.openai.com/v1",
            Self::Anthropic => "https://api.anthropic.com",
            Self::Gemini => "https://generativelanguage.googleapis.com",
        }
    }

    /// The endpoint below the base URL, for a request with these options (Gemini's names the
    /// model and the stream).
    pub fn endpoint(self, base_url: &str, options: &WireOptions) -> String {
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
            Self::Gemini => {
                let path = gemini::path(&options.model, options.stream);
                // A version at the base's end is the path's to give.
                let base = ["/v1beta", "/v1alpha", "/v1"]
                    .iter()
                    .find_map(|v| base.strip_suffix(v))
                    .unwrap_or(base);
                match (path.contains('?'), query.strip_prefix('?')) {
                    (true, Some(q)) => format!("{base}{path}&{q}"),
                    _ => format!("{base}{path}{query}"),
                }
            }
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
            Self::Gemini => vec![("x-goog-api-key", key.to_owned())],
        }
    }

    /// The request JSON for one engine request.
    pub fn render_request(self, request: &ModelRequest<'_>, options: &WireOptions) -> Value {
        match self {
            Self::Openai => openai::render_request(request, options),
            Self::Anthropic => anthropic::render_request(request, options),
            Self::Gemini => gemini::render_request(request, options),
        }
    }

    /// A whole (non-streamed) success body.
    pub fn parse_body(self, body: &Value) -> Result<ModelResponse, WireError> {
        match self {
            Self::Openai => openai::parse_body(body),
            Self::Anthropic => anthropic::parse_body(body),
            Self::Gemini => gemini::parse_body(body),
        }
    }

    /// A streamed answer, event by event. The response carries the chunks unassembled
    /// (`stream`), in the split they arrived in, for the engine to fold.
    pub fn parse_stream(self, events: &[SseEvent]) -> Result<ModelResponse, WireError> {
        match self {
            Self::Openai => openai::parse_stream(events),
            Self::Anthropic => anthropic::parse_stream(events),
            Self::Gemini => gemini::parse_stream(events),
        }
    }

    /// A request body as the engine's conversation (the serving direction: a stub that answers
    /// this format reads requests with it).
    pub fn parse_request(self, body: &Value) -> Result<WireRequest, WireError> {
        match self {
            Self::Openai => openai::parse_request(body),
            Self::Anthropic => anthropic::parse_request(body),
            Self::Gemini => gemini::parse_request(body),
        }
    }

    /// A whole response body for an answer (the serving direction).
    pub fn render_body(self, response: &ModelResponse, meta: &AnswerMeta) -> Value {
        match self {
            Self::Openai => openai::render_body(response, meta),
            Self::Anthropic => anthropic::render_body(response, meta),
            Self::Gemini => gemini::render_body(response, meta),
        }
    }

    /// An event stream for an answer given as chunks (the serving direction).
    pub fn render_stream(self, chunks: &[Chunk], usage: Usage, meta: &AnswerMeta) -> Vec<SseEvent> {
        match self {
            Self::Openai => openai::render_stream(chunks, usage, meta),
            Self::Anthropic => anthropic::render_stream(chunks, usage, meta),
            Self::Gemini => gemini::render_stream(chunks, usage, meta),
        }
    }

    /// What of an answer reaches the agent on this API (Gemini's has no call whose arguments
    /// are no object); the rest of the answer as it is.
    pub fn delivered(self, r: ModelResponse) -> ModelResponse {
        match self {
            Self::Openai | Self::Anthropic => r,
            Self::Gemini => gemini::delivered(r),
        }
    }

    /// The status and body a provider answers a fault with (the serving direction); a
    /// retry-after hint goes in headers, which are the caller's. Anthropic answers a server
    /// fault whose message speaks of overload as 529 `overloaded_error`, as its API does.
    pub fn render_fault(self, kind: FaultKind, message: &str) -> (u16, Value) {
        self.render_fault_hinted(kind, message, None)
    }

    /// [`Provider::render_fault`], with the fault's retry-after hint where the API puts one in
    /// the body (Gemini's `google.rpc.RetryInfo`; the others' go in headers only).
    pub fn render_fault_hinted(
        self,
        kind: FaultKind,
        message: &str,
        retry_after_ms: Option<u64>,
    ) -> (u16, Value) {
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
            // Google's statuses differ (504 for a deadline, 503 for overload).
            Self::Gemini => return gemini::render_fault(kind, message, retry_after_ms),
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
            Self::Gemini => gemini::error_body(status, message),
        }
    }

    /// A retry hint its error bodies carry besides the headers (Gemini's `RetryInfo`), in
    /// milliseconds.
    pub fn retry_after_in_body(self, body: &Value) -> Option<u64> {
        match self {
            Self::Openai | Self::Anthropic => None,
            Self::Gemini => gemini::retry_delay_ms(body),
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
            "input token count",
        ]
        .iter()
        .any(|w| text.contains(w));
        match status {
            429 => Some(FaultKind::RateLimit),
            408 | 504 => Some(FaultKind::Timeout),
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
    /// The form it asks its text in (JSON mode, structured output).
    pub form: TextForm,
}

impl Default for Asks {
    fn default() -> Self {
        Self {
            usage_chunk: false,
            choices: 1,
            tool_choice: ToolChoice::Auto,
            previous: None,
            form: TextForm::Free,
        }
    }
}

/// The form a request asks the answer's text in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum TextForm {
    /// Any text.
    #[default]
    Free,
    /// A JSON value, of any shape (OpenAI's `json_object`, Gemini's `application/json`
    /// without a schema).
    Json,
    /// A JSON value this JSON Schema accepts (OpenAI's `json_schema`, Anthropic's
    /// `output_config.format`, Gemini's `responseJsonSchema` or `responseSchema`).
    Schema(Value),
}

impl TextForm {
    /// The form an API's `type` names (`json_object`, `json_schema`, `text`), with the schema
    /// it gives; an unknown type or a `json_schema` without a schema asks for JSON alone.
    fn of(kind: Option<&str>, schema: Option<&Value>) -> Self {
        match (kind, schema) {
            (Some("json_schema"), Some(schema)) if schema.is_object() => {
                Self::Schema(schema.clone())
            }
            (Some("json_schema" | "json_object" | "json"), _) => Self::Json,
            _ => Self::Free,
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
        Ok(v) => crate::llm::Arguments::parsed(v),
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

/// A call's arguments as the object the APIs that take only objects send (Anthropic's
/// `input`, Gemini's `args`): parsed, or `{}` when the raw text does not parse.
fn object_args(args: &crate::llm::Arguments) -> Value {
    match args {
        crate::llm::Arguments::Parsed(v) => Value::clone(v),
        crate::llm::Arguments::Raw(r) => {
            serde_json::from_str(r).unwrap_or_else(|_| serde_json::json!({}))
        }
    }
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
            arguments: Arguments::parsed(json!({})),
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
            arguments: Arguments::parsed(json!({"command": "ls"})),
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
            schema: json!({"type": "object", "properties": {"command": {"type": "string"}}}).into(),
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
            lineage: None,
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
                    arguments: Arguments::parsed(json!({"command": "ls"})),
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
            let bare = if a.model_in_path() {
                a.route().replacen("/v1beta", "", 1)
            } else {
                a.route()
                    .strip_prefix("/v1")
                    .expect("a /v1 route")
                    .to_owned()
            };
            assert_eq!(Api::of_path(&bare), Some(a), "{a:?}");
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
        assert!(err.contains("known: openai, anthropic, gemini"), "{err}");
        // Gemini's path carries the model and the form of the answer.
        let routed =
            |p: &str, q: Option<&str>| Api::route_of(p, q).map(|r| (r.api, r.model, r.stream));
        let g = Some("gemini-2.5-flash".to_owned());
        assert_eq!(
            routed("/v1beta/models/gemini-2.5-flash:generateContent", None),
            Some((Api::GenerateContent, g.clone(), None))
        );
        assert_eq!(
            routed(
                "/v1/models/gemini-2.5-flash:streamGenerateContent",
                Some("alt=sse")
            ),
            Some((Api::GenerateContent, g.clone(), Some(true)))
        );
        assert_eq!(
            routed(
                "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
                None
            ),
            Some((Api::GenerateContent, g, Some(false)))
        );
        assert_eq!(
            routed("/v1beta/models/gemini-2.5-flash:countTokens", None),
            None
        );
        assert_eq!(routed("/v1beta/models/a/b:generateContent", None), None);
        assert_eq!(
            Provider::of_request("/v1beta/models/g:countTokens", |_| false),
            Provider::Gemini
        );
        assert_eq!(
            Provider::of_request("/v1beta/models", |_| false),
            Provider::Gemini
        );
    }

    /// Options of a whole request to `model`.
    fn to(model: &str) -> WireOptions {
        WireOptions {
            model: model.to_owned(),
            stream: false,
            max_tokens: None,
        }
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
            Provider::Anthropic.endpoint("http://127.0.0.1:9/", &to("m")),
            "http://127.0.0.1:9/v1/messages"
        );
        assert_eq!(
            Provider::Openai.endpoint("http://127.0.0.1:9/v1", &to("m")),
            "http://127.0.0.1:9/v1/chat/completions"
        );
    }

    #[test]
    fn a_query_in_the_base_url_stays_after_the_path() {
        assert_eq!(
            Provider::Openai.endpoint(
                "https://x.openai.azure.com/openai/deployments/d/?api-version=2024-10-21",
                &to("m")
            ),
            "https://x.openai.azure.com/openai/deployments/d/chat/completions?api-version=2024-10-21"
        );
        assert_eq!(
            Provider::Anthropic.endpoint("http://127.0.0.1:9?beta=1", &to("m")),
            "http://127.0.0.1:9/v1/messages?beta=1"
        );
        // Gemini's path names the model and the stream; a base with the version is taken.
        assert_eq!(
            Provider::Gemini.endpoint(
                "https://generativelanguage.googleapis.com/v1beta?x=1",
                &to("models/g")
            ),
            "https://generativelanguage.googleapis.com/v1beta/models/g:generateContent?x=1"
        );
        let streamed = WireOptions {
            stream: true,
            ..to("g")
        };
        assert_eq!(
            Provider::Gemini.endpoint("http://h", &streamed),
            "http://h/v1beta/models/g:streamGenerateContent?alt=sse"
        );
    }
}
