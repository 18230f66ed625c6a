//! Black-box agents: a scenario's scripted model served as the OpenAI Chat Completions,
//! OpenAI Responses and Anthropic Messages APIs (`harness serve`, `harness exec`), recorded
//! conversations served back from cassettes, and the recording proxy.
//!
//! This module owns the serving state ([`Session`], `session.rs`): which conversation a request
//! belongs to (`conversation.rs`), the scripted mock answering the real request (so the reactive
//! rules see the tools the agent offered and the messages it appended), a recording answering
//! instead (`recorded.rs`), the answer as served (`render.rs`), agents that carry calls as text
//! (`text_protocol.rs`), and what was answered. It is pure: bytes in, an answer out. The wire formats are `provider/`'s (serving direction); the HTTP server is
//! `http.rs`; how tool results are read as failed is `crate::failure`; the trace inferred from the
//! served requests is `infer.rs` (pure); cassettes served back are `replay.rs`; the recording
//! proxy is `proxy.rs`. Sessions are driven by `crate::exec` (an agent command run against them,
//! and the judging) and by the command line.
//!
//! **Glossary.**
//! - [`Session`]: the serving state of one scenario case (or of a set of agent cassettes): its
//!   conversations, every id it served, and what answers (the script, or a [`replay::Replay`]).
//! - [`Conversation`]: one agent run, told apart from the others by the ids it echoes; its
//!   [`ServedRequest`]s in arrival order, its place in the script, and, when a cassette answers
//!   it, its [`CassettePosition`].
//! - [`ServedRequest`]: one request as it was read (the API, the wire request, the failure rule
//!   that read each tool result, the loop iteration) and the [`Reply`] it got.
//! - [`Reply`]: what a request was answered with, in the script's words: an answer, a scripted
//!   provider fault, or a refusal (the cap, no answer).
//! - [`HttpAnswer`]: the same on the wire: status, headers and an [`AnswerBody`] (JSON, or the
//!   events of a stream).
//! - [`ConversationView`] and [`LastAnswer`]: what the conversation matcher ([`continues`])
//!   knows of a conversation: its first user message and how its latest request was answered.
//! - [`RequestHints`]: what the HTTP layer read besides the body (the SDK's retry count).
//! - [`DUMMY_KEY`]: the key an agent command is handed when its environment sets none.
//!
//! **Conversations** are told apart by what the agent sends back, never by timing. Every id
//! served is unique in the session and shaped as the provider's (`call_…`, `toolu_…`,
//! `chatcmpl-…`, `msg_…`, `resp_…`), so a request belongs to the conversation that served the
//! latest id it echoes: a call id in an assistant message or a tool result, or the Responses
//! API's `previous_response_id`. A request that echoes none and holds no assistant message
//! starts a conversation, unless it is the same request sent again after a cut stream (the
//! conversation whose last answer was cut, with the same first user message), or the retry of
//! one that ended on a provider fault (the
//! SDKs' `x-stainless-retry-count` header says so when present — a count of 0 too when the
//! fault was the session's latest answer: an application's own retry after its SDK gave up;
//! otherwise the oldest such conversation with the same first user message takes it), or the
//! same request sent again right after an answer the API said was unusable (Gemini's
//! `MAX_TOKENS` with nothing in it, or its calls withheld as `MALFORMED_FUNCTION_CALL`), or an
//! agent's retry after an empty answer it dropped from its history (a message after the first
//! user message, or a prompt added to the end of it: the oldest conversation with that first
//! user message whose last answer was empty or unusable). A request with assistant messages
//! but no id we served (an agent that rewrote its history, Gemini calls without ids) continues
//! the conversation with the same first user message whose answers its history echoes, else the
//! latest. Each conversation is one scenario run: its own mock, its
//! own iteration cap, its own inferred trace; the traces carry the script's own call ids
//! (`call_0`, …), so N identical agents in parallel give N identical traces.
//!
//! **Text protocols.** An agent that re-sends our tool calls as assistant text
//! (`Calling tools:\n[{'id': …, 'function': {'name': …}}]`) and their results as user
//! messages (`Observation:\n…`, or `Call id: …\nError:\n…`), as smolagents does, is read as if
//! it had used the wire's own call and result messages; the trace notes it once.

pub mod bind;
pub mod collect;
mod conversation;
pub mod http;
pub mod infer;
pub mod proxy;
mod recorded;
mod render;
pub mod replay;
mod session;
pub mod side;
mod text_protocol;

use crate::failure::FailureRules;
use crate::llm::stream::{self, Chunk};
use crate::llm::{
    Arguments, Finish, Message, Model, ModelError, ModelRequest, ModelResponse, ProviderFault,
    Purpose, Role, ToolCall,
};
use crate::mock::{MockModel, MockState};
pub use crate::provider::Api;
use crate::provider::{
    AnswerMeta, Provider, ResultRef, SseEvent, TextForm, ToolChoice, WireRequest, responses,
};
use crate::scenario::Case;
use serde_json::Value;
use std::collections::BTreeMap;

/// The key an agent command is handed when its environment sets none (neither the server nor
/// a replay checks it; the SDKs refuse to start without one). The proxy never forwards it.
pub const DUMMY_KEY: &str = "harness-dummy-key";

/// Largest request body the server reads (larger ones are answered 413): the one figure of
/// [`crate::limits::MAX_REQUEST_BODY_BYTES`].
pub const MAX_REQUEST_BYTES: usize = crate::limits::MAX_REQUEST_BODY_BYTES as usize;

/// The Unix time of a session's first answer (2026-01-01T00:00:00Z): served answers carry
/// virtual times from here, never the wall clock.
pub const EPOCH_S: u64 = 1_767_225_600;

pub use conversation::{
    Binding, CassettePosition, Conversation, ConversationView, LastAnswer, ServedRequest,
    continues, said_by,
};
pub use render::refusal;
use render::*;
pub use session::Session;
use text_protocol::*;

/// What the HTTP layer read besides the body.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestHints {
    /// The SDK's retry count of this request (`x-stainless-retry-count`), when it sent one.
    pub retry_count: Option<u32>,
    /// The model the path names (Gemini's `models/{model}:generateContent`).
    pub model: Option<String>,
    /// The answer form the path asks for (see [`crate::provider::Routed::stream`]).
    pub stream: Option<bool>,
}

impl RequestHints {
    /// Fold what the path said into a request body, so that it says what was asked as the
    /// other APIs' bodies do: the model (when the body names none) and `"stream": true` for a
    /// stream. A recording keeps the request so, and a replay matches the request so.
    pub fn fold_into(&self, body: &mut Value) {
        let Some(o) = body.as_object_mut() else {
            return;
        };
        if let Some(model) = &self.model {
            o.entry("model")
                .or_insert_with(|| Value::String(model.clone()));
        }
        if self.stream.is_some() {
            o.insert("stream".to_owned(), Value::Bool(true));
        }
    }
}

/// What a session did with one request.
#[derive(Debug)]
pub enum Handled {
    /// It answered; from this recorded exchange (cassette, exchange; 0-based) when a
    /// recording did.
    Answered {
        answer: HttpAnswer,
        recorded: Option<(usize, usize)>,
    },
    /// It is the live provider's: a replay in a record mode that goes live, for a
    /// conversation the recording does not hold (see [`replay::RecordMode`]).
    Live,
}

/// What the server answered one request with.
#[derive(Debug, Clone)]
pub enum Reply {
    /// The scripted answer, whole (a streamed one counts its chunks in `chunks`), with the
    /// script's own call ids (the wire got ids of the session's own).
    Answer(ModelResponse),
    /// A scripted provider fault.
    Fault(ProviderFault),
    /// The conversation had used its iteration cap: the request was refused.
    Cap,
    /// The script had no answer (or an answer that cannot be served): the request was refused.
    NoAnswer(String),
}

/// An HTTP answer: status, extra headers, and a JSON body or an event stream.
#[derive(Debug, Clone)]
pub struct HttpAnswer {
    /// HTTP status.
    pub status: u16,
    /// Headers besides the content type.
    pub headers: Vec<(&'static str, String)>,
    /// The body.
    pub body: AnswerBody,
}

/// A served body.
#[derive(Debug, Clone)]
pub enum AnswerBody {
    /// `application/json`.
    Json(Value),
    /// `text/event-stream`.
    Events {
        /// The events, in order.
        events: Vec<SseEvent>,
        /// The answer's virtual latency, which a server pacing the events on the wall clock
        /// spreads over them.
        latency_ms: u64,
        /// The script cuts the stream after these events: the connection is to be dropped
        /// rather than ended.
        cut: bool,
    },
    /// `application/json`, sent element by element: the one JSON array the Gemini API's
    /// `streamGenerateContent` gives without `alt=sse`, one stream event's data each.
    Array {
        /// The elements, in order.
        items: Vec<Value>,
        /// As for [`AnswerBody::Events`].
        latency_ms: u64,
        /// The script cuts the stream after these elements: the connection drops before the
        /// array closes, as Google's does when a stream breaks.
        cut: bool,
    },
}

#[cfg(test)]
mod tests;
