//! Wire formats of the model providers, as pure translation: an engine request
//! ([`ModelRequest`]) becomes a provider's request JSON, and a provider's answer — one JSON body,
//! a server-sent event sequence, or an error status — becomes a [`ModelResponse`] or a
//! [`ProviderFault`]. Two families: OpenAI Chat Completions (and every OpenAI-compatible server)
//! in `openai.rs`, Anthropic Messages in `anthropic.rs`; `sse.rs` holds the event type and its
//! text form.
//!
//! No I/O, clock or threads: the live client and the cassette player (`record/`) both call these
//! functions, so a recording and its replay go through exactly the same parsing. Latency is the
//! caller's to set.

pub mod anthropic;
pub mod openai;
pub mod sse;

use crate::llm::{
    FaultKind, Message, ModelRequest, ModelResponse, ProviderFault, Role, Usage, stream::Chunk,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use sse::SseEvent;

/// Which wire format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Provider {
    /// OpenAI Chat Completions and OpenAI-compatible servers (vLLM, llama.cpp, Ollama, LiteLLM).
    Openai,
    /// Anthropic Messages.
    Anthropic,
}

impl std::str::FromStr for Provider {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "openai" => Ok(Self::Openai),
            "anthropic" => Ok(Self::Anthropic),
            _ => Err(format!("unknown provider `{s}` (known: openai, anthropic)")),
        }
    }
}

impl Provider {
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
        let base = base_url.trim_end_matches('/');
        match self {
            Self::Openai => format!("{base}/chat/completions"),
            // The Anthropic SDK's base URL has no `/v1`; accept one anyway.
            Self::Anthropic if base.ends_with("/v1") => format!("{base}/messages"),
            Self::Anthropic => format!("{base}/v1/messages"),
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

/// A provider answer that does not have the expected shape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
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
            Self::Malformed { .. } => (FaultKind::ServerError, self.to_string()),
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
}
