//! Black-box agents: a scenario's scripted model served as the OpenAI Chat Completions,
//! OpenAI Responses and Anthropic Messages APIs (`harness serve`, `harness exec`), recorded
//! conversations served back from cassettes, and the recording proxy.
//!
//! This module owns the serving state ([`Session`]): which conversation a request belongs to,
//! the scripted mock answering the real request (so the reactive rules see the tools the agent
//! offered and the messages it appended), and what was answered. It is pure: bytes in, an
//! answer out. The wire formats are `provider/`'s (serving direction); the HTTP server is
//! `http.rs`; how tool results are read as failed is `failure.rs`; the trace inferred from the
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
//! otherwise the oldest such conversation with the same first user message takes it), or an
//! agent's retry after an empty answer it dropped from its history (a message after the first
//! user message: the oldest conversation with the same first user message whose last answer
//! was empty). A request with assistant messages
//! but no id we served (an agent that rewrote its history) continues the latest conversation
//! with the same first user message. Each conversation is one scenario run: its own mock, its
//! own iteration cap, its own inferred trace; the traces carry the script's own call ids
//! (`call_0`, …), so N identical agents in parallel give N identical traces.
//!
//! **Text protocols.** An agent that re-sends our tool calls as assistant text
//! (`Calling tools:\n[{'id': …, 'function': {'name': …}}]`) and their results as user
//! messages (`Observation:\n…`, or `Call id: …\nError:\n…`), as smolagents does, is read as if
//! it had used the wire's own call and result messages; the trace notes it once.

pub mod bind;
pub mod failure;
pub mod http;
pub mod infer;
pub mod proxy;
pub mod replay;
pub mod side;

use crate::llm::stream::{self, Chunk};
use crate::llm::{
    Arguments, Finish, Message, Model, ModelError, ModelRequest, ModelResponse, ProviderFault,
    Purpose, Role, ToolCall,
};
use crate::mock::{MockModel, MockState};
pub use crate::provider::Api;
use crate::provider::{
    AnswerMeta, Provider, ResultRef, SseEvent, ToolChoice, WireRequest, responses,
};
use crate::scenario::Case;
use failure::FailureRules;
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

/// OpenAI's answer to a `previous_response_id` it does not know.
fn previous_not_found(id: &str) -> HttpAnswer {
    HttpAnswer {
        status: 404,
        headers: Vec::new(),
        body: AnswerBody::Json(serde_json::json!({"error": {
            "message": format!("Previous response with id '{id}' not found."),
            "type": "invalid_request_error",
            "param": "previous_response_id",
            "code": "previous_response_not_found"
        }})),
    }
}

/// OpenAI's words for a server error (HTTP 500).
const OPENAI_SERVER_ERROR: &str =
    "The server had an error while processing your request. Sorry about that!";

/// What the HTTP layer read besides the body.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestHints {
    /// The SDK's retry count of this request (`x-stainless-retry-count`), when it sent one.
    pub retry_count: Option<u32>,
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

/// One request of a conversation and its reply.
#[derive(Debug, Clone)]
pub struct ServedRequest {
    /// The API it came in on.
    pub api: Api,
    /// The request as read (tool messages marked failed by the [`FailureRules`]).
    pub request: WireRequest,
    /// For each message of the request: the failure rule that read it as failed.
    pub rules: Vec<Option<String>>,
    /// The request carried tool calls and results as text (see the module doc).
    pub text_protocol: bool,
    /// The loop iteration it belongs to (a retry after a fault keeps the iteration).
    pub iteration: u32,
    /// What was answered.
    pub reply: Reply,
    /// A replayed conversation diverged from its recording at this request.
    pub divergence: Option<replay::Divergence>,
    /// The portable tools were bound at this request (the conversation's first that offered
    /// tools).
    pub bound: Vec<Binding>,
    /// The scripted answer (text) went out as a call of this answer tool of the agent's.
    pub answer_tool: Option<String>,
    /// Its answer was a stream the script cut (the connection dropped before it ended).
    pub cut: bool,
    /// The ids the answer's tool calls went out with, in call order, when they differ from
    /// the reply's own (a scripted answer's calls get ids in the API's shape); empty when the
    /// reply's ids are the wire's (a recorded answer). The agent's results name these.
    pub wire_ids: Vec<String>,
}

impl ServedRequest {
    /// The ids the answer's tool calls went out with, in call order (none for a reply that
    /// is no answer).
    pub fn call_ids(&self) -> Vec<&str> {
        let Reply::Answer(r) = &self.reply else {
            return Vec::new();
        };
        if self.wire_ids.len() == r.tool_calls.len() {
            self.wire_ids.iter().map(String::as_str).collect()
        } else {
            r.tool_calls.iter().map(|c| c.id.as_str()).collect()
        }
    }
}

/// The requests of one agent run.
#[derive(Debug, Clone)]
pub struct Conversation {
    key: String,
    /// Its requests, in arrival order.
    pub requests: Vec<ServedRequest>,
    /// Where its mock is in the script, kept between requests: an answer costs one step of
    /// the script, whatever the conversation's length.
    mock: MockState,
    /// Model calls answered so far (answers and faults), as the engine counts `call`.
    calls: u32,
    /// The first user message of its latest request, as sent.
    last_user: String,
    /// Where it is in its recording, when a cassette answers it.
    pub replayed: Option<CassettePosition>,
    /// It went to the live provider from a divergence on (`--record-mode new_episodes`).
    live: bool,
    /// What the provider stores of each Responses answer served (by its `resp_…` id): the
    /// request it answered (an index into `requests`) and its output items, which a request
    /// naming it as `previous_response_id` continues.
    stored: BTreeMap<String, (usize, Value)>,
    /// How the scenario's portable tools stand for the agent's (see [`Binding`]), once a
    /// request offered tools.
    binding: Option<Vec<Binding>>,
    /// Why it is a side request beside the loop (a title, a summary, a subagent), if it is
    /// one ([`side`]): answered by the side turn, never the case's outcome.
    pub side: Option<String>,
}

/// A portable tool of the scenario ([`crate::scenario::ToolDef::bind`]) and the agent's tool
/// it stands for in one conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    /// The scenario's tool.
    pub declared: String,
    /// Its rule (`any`, `position:2`, …).
    pub rule: String,
    /// The agent's tool it stands for; `None` when no offered tool fits the rule.
    pub offered: Option<String>,
}

/// Where a replayed conversation is in its cassette.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CassettePosition {
    /// Which cassette of the session's [`replay::Replay`].
    pub cassette: usize,
    /// The next recorded exchange.
    pub next: usize,
}

impl Conversation {
    /// Its first user message, as its first request sent it: what orders conversations.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Where it diverged from its recording, if it did.
    pub fn divergence(&self) -> Option<&replay::Divergence> {
        self.requests.iter().find_map(|e| e.divergence.as_ref())
    }

    /// What the matcher knows of it.
    fn thread(&self) -> ConversationView<'_> {
        ConversationView {
            key: &self.key,
            last_user: &self.last_user,
            last: self.requests.last().map_or(LastAnswer::Nothing, |e| {
                if e.cut {
                    LastAnswer::Cut
                } else {
                    LastAnswer::of(&e.reply)
                }
            }),
            latest: false,
            messages: self.requests.last().map_or(0, |e| e.request.messages.len()),
        }
    }

    fn ended(&self) -> bool {
        self.thread().last == LastAnswer::Ended
    }

    fn after_fault(&self) -> bool {
        self.thread().last == LastAnswer::Fault
    }
}

/// How a conversation's latest request was answered, as the matcher reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LastAnswer {
    /// Not yet.
    Nothing,
    /// With tool calls.
    Calls,
    /// In text.
    Text,
    /// With neither text nor calls (an agent may drop it from the history it sends next).
    Empty,
    /// With a provider fault (the next request may be its retry).
    Fault,
    /// With a stream cut before its end (the next request may send the same again).
    Cut,
    /// With a refusal that ends it (a cap, no answer).
    Ended,
}

impl LastAnswer {
    /// How `reply` leaves a conversation.
    pub fn of(reply: &Reply) -> Self {
        match reply {
            Reply::Answer(r)
                if r.tool_calls.is_empty() && r.text.as_deref().is_none_or(str::is_empty) =>
            {
                Self::Empty
            }
            Reply::Answer(r) if r.tool_calls.is_empty() => Self::Text,
            Reply::Answer(_) => Self::Calls,
            Reply::Fault(_) => Self::Fault,
            Reply::Cap | Reply::NoAnswer(_) => Self::Ended,
        }
    }
}

/// What the matcher knows of one conversation.
#[derive(Debug, Clone, Copy)]
pub struct ConversationView<'a> {
    /// Its first user message, as its first request sent it.
    pub key: &'a str,
    /// The first user message of its latest request, as sent.
    pub last_user: &'a str,
    /// How its latest request was answered.
    pub last: LastAnswer,
    /// It got the session's latest answer (nothing was answered since).
    pub latest: bool,
    /// How many messages its latest request held.
    pub messages: usize,
}

/// Which of `threads` a request continues (see the module doc), given `ids`, every id served
/// and the conversation it was served in; `None` when it begins a new one. `serve` and
/// `proxy` both decide by this.
pub fn continues(
    threads: &[ConversationView<'_>],
    ids: &BTreeMap<String, usize>,
    request: &WireRequest,
    hints: RequestHints,
) -> Option<usize> {
    let key = first_user(request);
    let echoed = request.asks.previous.iter().chain(
        request
            .messages
            .iter()
            .rev()
            .flat_map(|m| m.tool_calls.iter().rev().map(|c| &c.id))
            .chain(request.results.iter().rev().map(|r| &r.id)),
    );
    if let Some(i) = echoed.filter_map(|id| ids.get(id)).next() {
        return Some(*i);
    }
    if request.messages.iter().any(|m| m.role == Role::Assistant) {
        return threads.iter().rposition(|t| t.key == key);
    }
    // The SDK's retry count says whether it retries; 0 is also an application's own retry
    // after its SDK gave up (inspect_ai's), taken as one when the fault was the session's
    // latest answer.
    let may_retry = hints.retry_count.is_none_or(|n| n > 0);
    threads
        .iter()
        .position(|t| t.key == key && t.last == LastAnswer::Fault && (may_retry || t.latest))
        .or_else(|| {
            // A client that sends the same request again after its stream was cut (Codex
            // CLI reconnects, Claude Code asks again whole): the same messages, right after
            // the cut answer. The cut call was never run; the conversation goes on.
            threads.iter().position(|t| {
                t.key == key
                    && t.last == LastAnswer::Cut
                    && t.latest
                    && t.messages == request.messages.len()
            })
        })
        .or_else(|| {
            // An agent that drops an empty answer from its history and asks again (a retry
            // prompt after the first user message, as a user or a system message): it
            // continues the oldest conversation with that first message whose last answer
            // was empty.
            let asks_again = request
                .messages
                .iter()
                .position(|m| m.role == Role::User)
                .is_some_and(|first| request.messages.len() > first + 1);
            asks_again
                .then(|| {
                    threads
                        .iter()
                        .position(|t| t.key == key && t.last == LastAnswer::Empty)
                })
                .flatten()
        })
        .or_else(|| {
            // An agent that folds each step into its first user message (the text-protocol
            // shape of `unmerge_steps`): its message grew by one step.
            threads.iter().position(|t| {
                t.last == LastAnswer::Calls
                    && !t.last_user.is_empty()
                    && key.len() > t.last_user.len()
                    && key.starts_with(t.last_user)
                    && steps_from_start(&key[t.last_user.len()..])
            })
        })
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
}

/// The serving state of one scenario case.
#[derive(Debug)]
pub struct Session {
    case: Case,
    cap: u32,
    rules: FailureRules,
    conversations: Vec<Conversation>,
    /// Every id served (calls, answers) and the conversation it was served in.
    ids: BTreeMap<String, usize>,
    /// Ids served so far: the next id's seed.
    minted: u64,
    /// Recorded conversations answer instead of the script (`harness exec CASSETTE`).
    replay: Option<replay::Replay>,
    /// Requests to paths that are no endpoint: how many, and the first distinct ones.
    unknown_requests: usize,
    unknown: Vec<String>,
    /// The answer tool the latest scripted answer went out through (see [`answer_tool`]).
    answered_through: Option<String>,
    /// The wire ids of the answer being made's tool calls, for its [`ServedRequest`].
    wire_ids: Vec<String>,
    /// The conversation that got the latest answer.
    latest: Option<usize>,
    /// Globs of the agent's tools to bind portable tools to first (`--bind`).
    prefer: Vec<String>,
    /// The script side requests are answered from, once one came ([`side`]).
    side_script: Option<std::sync::Arc<crate::scenario::Scenario>>,
}

impl Session {
    /// Serve `case`'s scripted model, each conversation capped at its `max_iterations`, tool
    /// results read by the default [`FailureRules`].
    pub fn new(case: Case) -> Self {
        Self::with_rules(case, FailureRules::default())
    }

    /// Serve `case`'s scripted model, reading tool results with `rules`.
    pub fn with_rules(case: Case, rules: FailureRules) -> Self {
        let cap = case.config.call_cap();
        Self {
            case,
            cap,
            rules,
            conversations: Vec::new(),
            ids: BTreeMap::new(),
            minted: 0,
            replay: None,
            unknown_requests: 0,
            unknown: Vec::new(),
            answered_through: None,
            wire_ids: Vec::new(),
            latest: None,
            prefer: Vec::new(),
            side_script: None,
        }
    }

    /// Bind portable tools to the agent's tools matching these globs first (`--bind`).
    #[must_use]
    pub fn preferring(mut self, globs: Vec<String>) -> Self {
        self.prefer = globs;
        self
    }

    /// Serve recorded conversations: each conversation is answered from the cassette its
    /// first request binds it to ([`replay`]); `case` (the first cassette promoted) names the
    /// session and scripts nothing.
    pub fn replaying(case: Case, rules: FailureRules, replay: replay::Replay) -> Self {
        let mut s = Self::with_rules(case, rules);
        s.replay = Some(replay);
        s
    }

    /// The recorded conversations served, when the session replays cassettes.
    pub fn replay(&self) -> Option<&replay::Replay> {
        self.replay.as_ref()
    }

    /// How many bytes of request bodies the session may read in all: the per-session limit,
    /// once per cassette it replays (a folder of cassettes, each within the limit alone,
    /// replays together).
    pub fn read_limit(&self) -> u64 {
        let cassettes = self.replay.as_ref().map_or(1, |r| r.cassettes.len().max(1));
        crate::limits::MAX_SESSION_REQUEST_BYTES
            .saturating_mul(u64::try_from(cassettes).unwrap_or(u64::MAX))
    }

    /// The case served.
    pub fn case(&self) -> &Case {
        &self.case
    }

    /// The iteration cap of each conversation.
    pub fn cap(&self) -> u32 {
        self.cap
    }

    /// The conversations so far, in the order they started.
    pub fn conversations(&self) -> &[Conversation] {
        &self.conversations
    }

    /// Note a request to a path that is no endpoint (`METHOD /path`), for the report of a run
    /// whose agent made no model request (at most 20 kept, in order).
    pub fn note_unknown(&mut self, request: &str) {
        self.unknown_requests += 1;
        if self.unknown.len() < 20 && !self.unknown.iter().any(|u| u == request) {
            self.unknown.push(request.to_owned());
        }
    }

    /// The requests to unknown paths: how many, and the distinct ones first seen.
    pub fn unknown(&self) -> (usize, &[String]) {
        (self.unknown_requests, &self.unknown)
    }

    /// Know these values as secrets from here on (the keys an agent sends in its headers), when
    /// replaying a recording: they are scrubbed from what the replay derives, as the proxy
    /// scrubbed them from the cassette.
    pub fn learn_keys(&mut self, keys: impl IntoIterator<Item = String>) {
        if let Some(recorded) = &mut self.replay {
            recorded.scrubber.learn(keys);
        }
    }

    /// Answer one request body that came in on `api`.
    pub fn handle(&mut self, api: Api, body: &[u8]) -> HttpAnswer {
        self.handle_with(api, body, RequestHints::default())
    }

    /// Answer one request body that came in on `api`, with what its headers said.
    pub fn handle_with(&mut self, api: Api, body: &[u8], hints: RequestHints) -> HttpAnswer {
        match self.handle_request(api, body, hints) {
            Handled::Answered { answer, .. } => answer,
            Handled::Live => refusal(
                api.provider(),
                502,
                "harness: this request is the live provider's, and none is connected",
            ),
        }
    }

    /// Answer one request body that came in on `api`, or leave it to the live provider (a
    /// replay in a record mode that goes live).
    pub fn handle_request(&mut self, api: Api, body: &[u8], hints: RequestHints) -> Handled {
        let answered = |answer| Handled::Answered {
            answer,
            recorded: None,
        };
        let provider = api.provider();
        let mut value: Value = match serde_json::from_slice(body) {
            Ok(v) => v,
            Err(e) => {
                return answered(refusal(
                    provider,
                    400,
                    &format!("harness serve: the request body is not JSON: {e}"),
                ));
            }
        };
        if let Some(recorded) = &self.replay {
            // A replay's request is scrubbed as its recording was, before anything reads it:
            // the trace, the golden, the divergence reading and the answer refusing it all
            // come from here (a recorded `[REDACTED]` matches the scrubbed text).
            recorded.scrubber.scrub_value(&mut value);
        }
        // No conversation to continue: refused as the providers refuse it.
        if api != Api::Responses && value["messages"].as_array().is_some_and(Vec::is_empty) {
            let said = match provider {
                Provider::Openai => "harness serve: [] is too short - 'messages'",
                Provider::Anthropic => "harness serve: messages: at least one message is required",
            };
            return answered(refusal(provider, 400, said));
        }
        let mut request = match api.parse_request(&value) {
            Ok(r) => r,
            Err(e) => return answered(refusal(provider, 400, &format!("harness serve: {e}"))),
        };
        if request.asks.tool_choice == ToolChoice::None {
            request.tools.clear();
        }
        if api == Api::Responses && self.replay.is_none() {
            if let Some(previous) = request.asks.previous.clone() {
                if !self.continue_stored(&previous, &mut request) {
                    return answered(previous_not_found(&previous));
                }
            }
        }
        let mut text_protocol = read_text_protocol(&mut request);
        let first_user = first_user(&request);
        if self.goes_live(&request, hints, &value) {
            return Handled::Live;
        }
        let Some(at) = self.conversation_for(&request, hints) else {
            return answered(refusal(
                provider,
                400,
                "harness serve: this conversation has ended (iteration cap or script exhausted)",
            ));
        };
        if self.replay.is_none() && self.conversations[at].requests.is_empty() {
            let side = side::reason(&request, &self.case.scenario, &self.conversations[..at]);
            self.conversations[at].side = side;
        }
        let bound = if self.replay.is_none() {
            self.bind_tools(at, &mut request)
        } else {
            Vec::new()
        };
        text_protocol |= unmerge_steps(&self.conversations[at], &mut request)
            || restore_calls(&self.conversations[at], &mut request);
        self.conversations[at].last_user = first_user;
        let rules = self.read_failures(&mut request);
        let conversation = &self.conversations[at];
        let retry = conversation.after_fault();
        let done = conversation
            .requests
            .iter()
            .map(|e| e.iteration)
            .max()
            .unwrap_or(0);
        let iteration = if retry { done.max(1) } else { done + 1 };
        let before = self.conversations[at].replayed.clone();
        let mut cut = false;
        let (reply, served, divergence) = if self.replay.is_some() {
            match self.answer_replayed(at, api, &value, &request, iteration) {
                Some(answered) => answered,
                None => return Handled::Live,
            }
        } else if iteration > self.cap {
            let message = format!(
                "harness serve: the scenario's iteration cap ({}) is reached; no more answers in this conversation",
                self.cap
            );
            (Reply::Cap, refusal(provider, 400, &message), None)
        } else {
            let script = if self.conversations[at].side.is_some() {
                let case = &self.case.scenario;
                std::sync::Arc::clone(
                    self.side_script
                        .get_or_insert_with(|| std::sync::Arc::new(side::scenario(case))),
                )
            } else {
                std::sync::Arc::clone(&self.case.scenario)
            };
            let (reply, served) = self.answer(at, api, &value, &request, iteration, &script);
            cut = matches!(served.body, AnswerBody::Events { cut: true, .. });
            (reply, served, None)
        };
        self.conversations[at].requests.push(ServedRequest {
            api,
            request,
            rules,
            text_protocol,
            iteration,
            reply,
            divergence,
            bound,
            answer_tool: self.answered_through.take(),
            cut,
            wire_ids: std::mem::take(&mut self.wire_ids),
        });
        self.latest = Some(at);
        // A recorded answer moved the conversation one exchange on in its cassette.
        let recorded = match (&before, &self.conversations[at].replayed) {
            (None, Some(now)) if now.next == 1 => Some((now.cassette, 0)),
            (Some(was), Some(now)) if now.next == was.next + 1 => Some((now.cassette, was.next)),
            _ => None,
        };
        Handled::Answered {
            answer: served,
            recorded,
        }
    }

    /// Read the request under the scenario's names: the agent's tools that its portable
    /// tools stand for are renamed to theirs, in the offered tools and in the calls of the
    /// history (the binding is made at the conversation's first request that offers tools,
    /// and kept). The bindings, when made by this request.
    fn bind_tools(&mut self, at: usize, request: &mut WireRequest) -> Vec<Binding> {
        let portable: Vec<(&str, crate::scenario::Bind)> = self
            .case
            .scenario
            .tools
            .iter()
            .filter_map(|t| {
                let bind = crate::scenario::Bind::parse(t.bind.as_deref()?).ok()?;
                Some((t.name.as_str(), bind))
            })
            .collect();
        if portable.is_empty() {
            return Vec::new();
        }
        let script = &self.case.scenario.model;
        let prefer = &self.prefer;
        let conversation = &mut self.conversations[at];
        let mut made = Vec::new();
        if conversation.binding.is_none() && !request.tools.is_empty() {
            let mut taken: Vec<&str> = Vec::new();
            let bindings: Vec<Binding> = portable
                .iter()
                .map(|(declared, rule)| {
                    let kinds = bind::Kinds::of(script, declared);
                    let offered = bind::choose(rule, &request.tools, &taken, kinds, prefer)
                        .map(|t| t.name.as_str());
                    taken.extend(offered);
                    Binding {
                        declared: (*declared).to_owned(),
                        rule: rule.to_string(),
                        offered: offered.map(str::to_owned),
                    }
                })
                .collect();
            made.clone_from(&bindings);
            conversation.binding = Some(bindings);
        }
        if let Some(bindings) = &conversation.binding {
            let declared = |name: &str| {
                bindings
                    .iter()
                    .find(|b| b.offered.as_deref() == Some(name))
                    .map(|b| b.declared.clone())
            };
            for t in &mut request.tools {
                if let Some(d) = declared(&t.name) {
                    t.name = d;
                }
            }
            for c in request.messages.iter_mut().flat_map(|m| &mut m.tool_calls) {
                if let Some(d) = declared(&c.name) {
                    c.name = d;
                }
            }
        }
        made
    }

    /// A Responses request that continues `previous` (its `previous_response_id`) as the
    /// request the provider sees: the stored context of that response (the input it answered
    /// and its output items) before the request's own items, under the request's own
    /// `instructions` (they are not carried over). False when no answer of the session has
    /// that id.
    fn continue_stored(&self, previous: &str, request: &mut WireRequest) -> bool {
        let Some((before, output)) = self
            .ids
            .get(previous)
            .and_then(|&c| self.conversations.get(c))
            .and_then(|c| {
                let (i, output) = c.stored.get(previous)?;
                Some((&c.requests.get(*i)?.request, output))
            })
        else {
            return false;
        };
        let answered = responses::parse_request(&serde_json::json!({"model": "", "input": output}))
            .map(|r| r.messages)
            .unwrap_or_default();
        let system = |m: &Message| m.role == Role::System;
        let own_system = request.messages.iter().take_while(|m| system(m)).count();
        let mut messages: Vec<Message> = request.messages[..own_system].to_vec();
        messages.extend(before.messages.iter().skip_while(|m| system(m)).cloned());
        messages.extend(answered);
        messages.extend(request.messages.drain(own_system..));
        request.messages = messages;
        let mut results = before.results.clone();
        results.append(&mut request.results);
        request.results = results;
        true
    }

    /// Is this request the live provider's (a replay in record mode `once` or
    /// `new_episodes`)? When it continues a conversation that went live, or begins one no
    /// unused recording starts with.
    fn goes_live(&self, request: &WireRequest, hints: RequestHints, body: &Value) -> bool {
        let Some(recorded) = &self.replay else {
            return false;
        };
        if !matches!(
            recorded.record_mode,
            Some(replay::RecordMode::Once | replay::RecordMode::NewEpisodes)
        ) {
            return false;
        }
        match self.continuing(request, hints) {
            Some(i) => self.conversations[i].live,
            // With recordings present, `once` records nothing (as vcrpy's): a conversation no
            // recording starts is refused with its divergence from the nearest one.
            // `new_episodes` records it.
            None => {
                recorded.record_mode == Some(replay::RecordMode::NewEpisodes)
                    && recorded.starting_with(&self.used(), body).is_none()
            }
        }
    }

    /// How many conversations each cassette of the replay has played.
    fn used(&self) -> Vec<usize> {
        let mut used = vec![0; self.replay.as_ref().map_or(0, |r| r.cassettes.len())];
        for p in self
            .conversations
            .iter()
            .filter_map(|c| c.replayed.as_ref())
        {
            used[p.cassette] += 1;
        }
        used
    }

    /// Mark each tool message failed or not by the rules; the rule per message.
    fn read_failures(&self, request: &mut WireRequest) -> Vec<Option<String>> {
        // The arguments of each call by its id, for the shapes that read them.
        let calls: BTreeMap<String, Value> = request
            .messages
            .iter()
            .flat_map(|m| &m.tool_calls)
            .filter_map(|c| match &c.arguments {
                Arguments::Parsed(v) => Some((c.id.clone(), v.clone())),
                Arguments::Raw(_) => None,
            })
            .collect();
        let mut refs = request.results.iter();
        request
            .messages
            .iter_mut()
            .map(|m| {
                if m.role != Role::Tool {
                    return None;
                }
                let result = refs.next();
                let flag = result.and_then(|r| r.is_error);
                let args = result.and_then(|r| calls.get(&r.id));
                let rule = self.rules.classify_call(flag, &m.content, args);
                m.failed = rule.is_some();
                rule
            })
            .collect()
    }

    /// A new id, unique in the session, in a provider's shape: `prefix` and `len` characters
    /// of base 62 (hex when `hex`).
    fn mint(&mut self, prefix: &str, len: usize, hex: bool) -> String {
        const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
        let radix = if hex { 16 } else { 62 };
        self.minted += 1;
        let mut state = self.minted;
        let mut out = String::with_capacity(prefix.len() + len);
        out.push_str(prefix);
        let mut word = 0u64;
        for i in 0..len {
            if i % 8 == 0 {
                // splitmix64: every id differs from every other, and from run to run none does.
                state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let mut z = state;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                word = z ^ (z >> 31);
            }
            out.push(char::from(ALPHABET[(word % radix) as usize]));
            word /= radix;
        }
        out
    }

    /// The conversation a request continues, if any.
    fn continuing(&self, request: &WireRequest, hints: RequestHints) -> Option<usize> {
        let threads: Vec<ConversationView<'_>> = self
            .conversations
            .iter()
            .enumerate()
            .map(|(i, c)| ConversationView {
                latest: self.latest == Some(i),
                ..c.thread()
            })
            .collect();
        continues(&threads, &self.ids, request, hints)
    }

    /// The index of the conversation a request belongs to (a new one if need be); `None` when
    /// it continues a conversation that has ended.
    fn conversation_for(&mut self, request: &WireRequest, hints: RequestHints) -> Option<usize> {
        match self.continuing(request, hints) {
            Some(i) => (!self.conversations[i].ended()).then_some(i),
            None => {
                self.conversations.push(Conversation {
                    key: first_user(request),
                    requests: Vec::new(),
                    mock: MockState::default(),
                    calls: 0,
                    last_user: String::new(),
                    replayed: None,
                    live: false,
                    stored: BTreeMap::new(),
                    binding: None,
                    side: None,
                });
                Some(self.conversations.len() - 1)
            }
        }
    }

    /// Answer from `scenario`'s script (the case's, or the `script:` one a replay diverged
    /// into) where the conversation's mock left it (so rule counts, turns and call ids
    /// continue), keep where it is now, and serve it with ids of the session's own.
    fn answer(
        &mut self,
        at: usize,
        api: Api,
        body: &Value,
        request: &WireRequest,
        iteration: u32,
        scenario: &crate::scenario::Scenario,
    ) -> (Reply, HttpAnswer) {
        let provider = api.provider();
        let conversation = &mut self.conversations[at];
        let mut mock = MockModel::resume(&scenario.model, std::mem::take(&mut conversation.mock))
            .for_case(&self.case.id);
        let answered = mock.respond(&model_request(request, iteration, conversation.calls + 1));
        conversation.mock = mock.into_state();
        if matches!(answered, Ok(_) | Err(ModelError::Provider(_))) {
            conversation.calls += 1;
        }
        let served_count = conversation.requests.len() as u64;
        match answered {
            Ok(r) => {
                let (mut whole, mut chunks) = match served_answer(r, request.options.stream) {
                    Ok(a) => a,
                    Err(message) => {
                        return (
                            Reply::NoAnswer(message.clone()),
                            refusal(provider, 400, &message),
                        );
                    }
                };
                // The suite's answer goes to an agent that ends its runs through an answer
                // tool as a call of it; the trace keeps the scripted text.
                let scripted = answer_tool(&whole, request, scenario).map(|(tool, param)| {
                    let text = whole.text.clone().unwrap_or_default();
                    let scripted = whole.clone();
                    whole = ModelResponse {
                        text: None,
                        tool_calls: vec![crate::llm::ToolCall {
                            id: "call_answer".to_owned(),
                            name: tool.clone(),
                            arguments: crate::llm::Arguments::Parsed(
                                serde_json::json!({ param: text }),
                            ),
                        }],
                        finish: Finish::ToolUse,
                        ..whole.clone()
                    };
                    if chunks.is_some() {
                        let c = chunks_of(&whole);
                        whole.chunks = c.len();
                        chunks = Some(c);
                    }
                    self.answered_through = Some(tool);
                    scripted
                });
                if let Some(message) = refused_choice(&request.asks.tool_choice, &whole) {
                    return (
                        Reply::NoAnswer(message.clone()),
                        refusal(provider, 400, &message),
                    );
                }
                let (id_prefix, id_len, call_prefix, call_len) = match api {
                    Api::ChatCompletions => ("chatcmpl-", 29, "call_", 24),
                    Api::Responses => ("resp_", 48, "call_", 24),
                    Api::Messages => ("msg_01", 22, "toolu_01", 22),
                };
                let id = self.mint(id_prefix, id_len, api == Api::Responses);
                self.ids.insert(id.clone(), at);
                // The wire's call ids, by the script's.
                let mut wire: BTreeMap<String, String> = BTreeMap::new();
                for c in &whole.tool_calls {
                    let w = self.mint(call_prefix, call_len, false);
                    self.ids.insert(w.clone(), at);
                    wire.insert(c.id.clone(), w);
                }
                let rename = |id: &str| wire.get(id).cloned().unwrap_or_else(|| id.to_owned());
                self.wire_ids = whole.tool_calls.iter().map(|c| rename(&c.id)).collect();
                // A portable tool's calls go out under the name of the agent's tool it stands
                // for.
                let bindings = self.conversations[at].binding.clone().unwrap_or_default();
                let offered = |name: &str| {
                    bindings
                        .iter()
                        .find(|b| b.declared == name)
                        .and_then(|b| b.offered.clone())
                        .unwrap_or_else(|| name.to_owned())
                };
                let mut meta = AnswerMeta::for_request(request, id, EPOCH_S + served_count);
                let mut on_wire = whole.clone();
                for c in &mut on_wire.tool_calls {
                    c.id = rename(&c.id);
                    c.name = offered(&c.name);
                }
                if api == Api::Responses {
                    // Stored as the provider stores it, for `previous_response_id`: the output
                    // items as a client echoes them back.
                    let output = responses::render_body(&on_wire, &meta, body)["output"].clone();
                    let c = &mut self.conversations[at];
                    c.stored.insert(meta.id.clone(), (c.requests.len(), output));
                }
                let body = match chunks {
                    Some(chunks) => {
                        meta.complete = chunks.iter().any(|c| matches!(c, Chunk::Finish { .. }));
                        let chunks: Vec<Chunk> = chunks
                            .into_iter()
                            .map(|c| match c {
                                Chunk::ToolCallStart { index, id, name } => Chunk::ToolCallStart {
                                    index,
                                    id: rename(&id),
                                    name: offered(&name),
                                },
                                other => other,
                            })
                            .collect();
                        let events = match api {
                            Api::Responses => {
                                responses::render_stream(&chunks, &on_wire, &meta, body)
                            }
                            _ => provider.render_stream(&chunks, whole.usage, &meta),
                        };
                        AnswerBody::Events {
                            events,
                            latency_ms: whole.latency_ms,
                            cut: !meta.complete,
                        }
                    }
                    None => AnswerBody::Json(match api {
                        Api::Responses => responses::render_body(&on_wire, &meta, body),
                        _ => provider.render_body(&on_wire, &meta),
                    }),
                };

                (
                    Reply::Answer(scripted.unwrap_or(whole)),
                    HttpAnswer {
                        status: 200,
                        headers: Vec::new(),
                        body,
                    },
                )
            }
            Err(ModelError::Provider(mut f)) => {
                // A scripted server fault that states no message is served as the API serves
                // one: OpenAI's is a 500 with its own words (the default speaks of a 529,
                // which is Anthropic's overload status and what it gets).
                if provider == Provider::Openai
                    && f.kind == crate::llm::FaultKind::ServerError
                    && f.message == crate::mock::default_fault_message(f.kind)
                {
                    f.message = OPENAI_SERVER_ERROR.to_owned();
                }
                let (status, body) = provider.render_fault(f.kind, &f.message);
                let mut headers = Vec::new();
                if let Some(ms) = f.retry_after_ms {
                    headers.push(("retry-after-ms", ms.to_string()));
                    headers.push(("retry-after", ms.div_ceil(1000).to_string()));
                }
                (
                    Reply::Fault(f),
                    HttpAnswer {
                        status,
                        headers,
                        body: AnswerBody::Json(body),
                    },
                )
            }
            Err(ModelError::Script(e)) => {
                let message = format!("harness serve: {e}");
                (
                    Reply::NoAnswer(message.clone()),
                    refusal(provider, 400, &message),
                )
            }
        }
    }
}

/// What answers a replayed request.
enum ReplayStep {
    /// The next recorded answer.
    Recorded,
    /// The `script:` scenario's model.
    Script(std::sync::Arc<crate::scenario::Scenario>),
    /// Nothing: the request is refused with this message and the conversation ends.
    Refuse(String),
}

impl Session {
    /// Answer from the conversation's recording (see [`replay`]): the recorded answer while
    /// the request matches, then what the divergence policy says; the divergence of this
    /// request, if it is the first that differs.
    fn answer_replayed(
        &mut self,
        at: usize,
        api: Api,
        body: &Value,
        request: &WireRequest,
        iteration: u32,
    ) -> Option<(Reply, HttpAnswer, Option<replay::Divergence>)> {
        let provider = api.provider();
        let used = self.used();
        let Some(session_replay) = &self.replay else {
            return Some((
                Reply::Cap,
                refusal(provider, 500, "harness: no recording"),
                None,
            ));
        };
        let conversation = &self.conversations[at];
        let mut pos = match &conversation.replayed {
            Some(p) => p.clone(),
            None => CassettePosition {
                cassette: session_replay.bind(&used, body),
                next: 0,
            },
        };
        let earlier = conversation.divergence().is_some();
        // A branch recorded beside this cassette (`new_episodes`) that goes on as the agent
        // does: the conversation follows it.
        if !earlier && !session_replay.cassettes[pos.cassette].matches(pos.next, body) {
            if let Some(other) = session_replay.branch(pos.cassette, pos.next, body) {
                pos.cassette = other;
            }
        }
        let served = &session_replay.cassettes[pos.cassette];
        let divergence = (!earlier && !served.matches(pos.next, body))
            .then(|| served.diverge(pos.next, body, &session_replay.scrubber));
        let mode = session_replay.record_mode;
        if divergence.is_some() && mode == Some(replay::RecordMode::NewEpisodes) {
            // The recording ends here: the live provider answers the rest.
            self.conversations[at].replayed = Some(pos);
            self.conversations[at].live = true;
            return None;
        }
        let step = match (
            &session_replay.on_divergence,
            &divergence,
            &session_replay.script,
        ) {
            (replay::OnDivergence::Script(_), _, Some(script))
                if earlier || divergence.is_some() =>
            {
                ReplayStep::Script(std::sync::Arc::clone(&script.scenario))
            }
            (_, Some(d), _) if mode.is_some() => ReplayStep::Refuse(format!(
                "harness proxy: request {} differs from the recording {}: {} (first difference at `{}`); --record-mode {} {} (`--record-mode new_episodes` records on from a divergence, `all` records again)",
                d.request,
                served.id,
                d.reading,
                d.at,
                mode.map_or("", replay::RecordMode::name),
                if mode == Some(replay::RecordMode::None) {
                    "never asks the provider"
                } else {
                    "replays a recorded conversation as it was"
                }
            )),
            (policy @ (replay::OnDivergence::Fail | replay::OnDivergence::Stop), Some(d), _) => {
                ReplayStep::Refuse(format!(
                    "harness: request {} differs from the recording {}: {} (first difference at `{}`); the replay ends here (--on-divergence {})",
                    d.request,
                    served.id,
                    d.reading,
                    d.at,
                    if *policy == replay::OnDivergence::Fail {
                        "fail"
                    } else {
                        "stop"
                    }
                ))
            }
            _ => match served.cassette.exchanges.get(pos.next) {
                Some(_) => ReplayStep::Recorded,
                None => ReplayStep::Refuse(format!(
                    "harness: the recording {} has no answer left (it holds {} requests)",
                    served.id,
                    served.cassette.exchanges.len()
                )),
            },
        };
        let recorded = matches!(step, ReplayStep::Recorded);
        self.conversations[at].replayed = Some(CassettePosition {
            next: pos.next + usize::from(recorded),
            ..pos
        });
        let (reply, served) = match step {
            ReplayStep::Refuse(message) => (
                Reply::NoAnswer(message.clone()),
                refusal(provider, 400, &message),
            ),
            ReplayStep::Script(scenario) => {
                self.answer(at, api, body, request, iteration, &scenario)
            }
            ReplayStep::Recorded => {
                let ex = &served.cassette.exchanges[pos.next];
                let latency = served.cassette.replay.latency(ex.elapsed_ms);
                let reply = replay::reply_of(ex, served.cassette.api(), latency);
                for id in replay::served_ids(ex) {
                    self.ids.insert(id, at);
                }
                (reply, replay::replayed(ex, served.cassette.provider))
            }
        };
        Some((reply, served, divergence))
    }
}

/// Why an answer cannot be served under the request's `tool_choice` (a provider never answers
/// in text when a call is required, nor calls another tool than the one named).
fn refused_choice(choice: &ToolChoice, r: &ModelResponse) -> Option<String> {
    match choice {
        ToolChoice::Required if r.tool_calls.is_empty() => Some(format!(
            "{}, but the script answers in text here\n  hint: script a tool call for this request, or have the agent leave tool_choice at `auto`",
            crate::vocabulary::TEXT_REFUSED_FOR_TOOL_CHOICE
        )),
        ToolChoice::Named(name) if r.tool_calls.is_empty() || r.tool_calls.iter().any(|c| &c.name != name) => {
            Some(format!(
                "harness serve: the request requires a call of `{name}` (tool_choice), but the script answers otherwise here\n  hint: script a call of `{name}` for this request"
            ))
        }
        ToolChoice::None if !r.tool_calls.is_empty() => Some(
            "harness serve: the request forbids tool calls (tool_choice `none`), but the script calls a tool here".to_owned(),
        ),
        _ => None,
    }
}

/// Read calls and results an agent carries as text (smolagents' shape, see the module doc)
/// as the wire's own: the assistant message gets the calls, the observation becomes one tool
/// result per call. Whether the request held any.
fn read_text_protocol(request: &mut WireRequest) -> bool {
    const CALLING: &str = "Calling tools:\n[";
    let mut found = false;
    let mut out: Vec<Message> = Vec::with_capacity(request.messages.len());
    let mut results: Vec<ResultRef> = Vec::new();
    let mut wire_results = request.results.iter().cloned();
    let mut pending: Vec<ToolCall> = Vec::new();
    for m in std::mem::take(&mut request.messages) {
        match m.role {
            Role::Assistant if m.tool_calls.is_empty() && m.content.contains(CALLING) => {
                let at = m.content.find(CALLING).unwrap_or(0);
                let calls = calls_in_text(&m.content[at + CALLING.len() - 1..]);
                if calls.is_empty() {
                    pending.clear();
                    out.push(m);
                    continue;
                }
                found = true;
                let mut message = Message::new(Role::Assistant, m.content[..at].trim_end());
                message.tool_calls = calls.clone();
                pending = calls;
                out.push(message);
            }
            Role::User if !pending.is_empty() => {
                let text = m.content.trim_start();
                let (id, result) = if let Some(rest) = text.strip_prefix("Observation:") {
                    (None, rest.trim_start_matches([' ', '\n']).to_owned())
                } else if let Some(rest) = text.strip_prefix("Call id: ") {
                    let (id, rest) = rest.split_once('\n').unwrap_or((rest, ""));
                    (Some(id.trim().to_owned()), rest.to_owned())
                } else {
                    pending.clear();
                    out.push(m);
                    continue;
                };
                for c in std::mem::take(&mut pending) {
                    out.push(Message::new(Role::Tool, result.clone()));
                    results.push(ResultRef {
                        id: id.clone().unwrap_or(c.id),
                        is_error: None,
                    });
                }
            }
            Role::Tool => {
                pending.clear();
                out.push(m);
                results.extend(wire_results.next());
            }
            _ => {
                pending.clear();
                out.push(m);
            }
        }
    }
    request.messages = out;
    request.results = results;
    found
}

/// The first user message of a request, as sent.
fn first_user(request: &WireRequest) -> String {
    request
        .messages
        .iter()
        .find(|m| m.role == Role::User)
        .map(|m| m.content.clone())
        .unwrap_or_default()
}

/// Where each step folded into a message begins: a line `Error:` or `Observation:` (and the
/// text before the first one, if any, is not a step).
fn step_starts(text: &str) -> Vec<usize> {
    let mut out = Vec::new();
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let l = line.trim_start_matches('\n');
        if l.starts_with("Error:") || l.starts_with("Observation:") {
            out.push(at);
        }
        at += line.len();
    }
    out
}

/// Does this text begin with a step (after blank lines)?
fn steps_from_start(text: &str) -> bool {
    step_starts(text)
        .first()
        .is_some_and(|&s| text[..s].trim().is_empty())
}

/// An agent that keeps no assistant messages and folds each step's outcome into its first
/// user message (smolagents when a call fails before it runs: `New task: …\nError:\n…`): the
/// request is rewritten as the steps it stands for, each our answer's calls (as we served
/// them) and its outcome as their result. Whether it was.
fn unmerge_steps(c: &Conversation, request: &mut WireRequest) -> bool {
    if request.messages.iter().any(|m| m.role == Role::Assistant) || c.requests.is_empty() {
        return false;
    }
    let Some(at) = request.messages.iter().position(|m| m.role == Role::User) else {
        return false;
    };
    let text = request.messages[at].content.clone();
    let Some(rest) = text.strip_prefix(c.key.as_str()) else {
        return false;
    };
    let starts = step_starts(rest);
    let answers: Vec<&ModelResponse> = c
        .requests
        .iter()
        .filter_map(|e| match &e.reply {
            Reply::Answer(r) if !r.tool_calls.is_empty() => Some(r),
            _ => None,
        })
        .collect();
    if !steps_from_start(rest) || starts.len() != answers.len() {
        return false;
    }
    let mut steps: Vec<Message> = Vec::new();
    for (k, r) in answers.iter().enumerate() {
        let end = starts.get(k + 1).copied().unwrap_or(rest.len());
        let outcome = rest[starts[k]..end].trim_matches('\n');
        let outcome = outcome
            .strip_prefix("Observation:")
            .map_or(outcome, str::trim_start);
        let mut call = Message::new(Role::Assistant, "");
        call.tool_calls = r.tool_calls.clone();
        steps.push(call);
        for _ in &r.tool_calls {
            steps.push(Message::new(Role::Tool, outcome));
            request.results.push(ResultRef::default());
        }
    }
    request.messages[at].content = c.key.clone();
    request.messages.splice(at + 1..at + 1, steps);
    true
}

/// An agent that re-sends our tool-call answers as assistant messages without their calls,
/// each followed by a user message with the step's outcome (`Error:\n…` or `Observation:\n…`,
/// smolagents when it streams): the k-th assistant message gets the calls of our k-th answer
/// back, and the outcome becomes their results. Whether any did.
fn restore_calls(c: &Conversation, request: &mut WireRequest) -> bool {
    let answers: Vec<&ModelResponse> = c
        .requests
        .iter()
        .filter_map(|e| match &e.reply {
            Reply::Answer(r) => Some(r),
            _ => None,
        })
        .collect();
    let mut restored = false;
    let mut answer = answers.iter();
    let mut refs = std::mem::take(&mut request.results).into_iter();
    let mut results = Vec::new();
    let mut out: Vec<Message> = Vec::with_capacity(request.messages.len());
    let mut messages = std::mem::take(&mut request.messages).into_iter().peekable();
    while let Some(mut m) = messages.next() {
        match m.role {
            Role::Assistant => {
                let served = answer.next();
                let outcome = messages
                    .peek()
                    .filter(|n| n.role == Role::User && steps_from_start(&n.content))
                    .map(|n| n.content.trim().to_owned());
                let folded = match (served, outcome) {
                    (Some(r), Some(outcome))
                        if m.tool_calls.is_empty() && !r.tool_calls.is_empty() =>
                    {
                        Some((r, outcome))
                    }
                    _ => None,
                };
                if let Some((r, outcome)) = folded {
                    messages.next();
                    m.tool_calls = r.tool_calls.clone();
                    out.push(m);
                    let outcome = outcome
                        .strip_prefix("Observation:")
                        .map_or(outcome.as_str(), str::trim_start)
                        .to_owned();
                    for _ in &r.tool_calls {
                        out.push(Message::new(Role::Tool, outcome.clone()));
                        results.push(ResultRef::default());
                    }
                    restored = true;
                    continue;
                }
                out.push(m);
            }
            Role::Tool => {
                results.extend(refs.next());
                out.push(m);
            }
            _ => out.push(m),
        }
    }
    request.messages = out;
    request.results = results;
    restored
}

/// The calls of a `Calling tools:` list (a Python repr of the OpenAI call objects): each
/// `'id'` with the `'name'` after it.
fn calls_in_text(list: &str) -> Vec<ToolCall> {
    let field = |text: &str, key: &str| -> Option<(usize, String)> {
        let pat = format!("'{key}': '");
        let at = text.find(&pat)? + pat.len();
        let end = text[at..].find('\'')? + at;
        Some((end, text[at..end].to_owned()))
    };
    let mut calls = Vec::new();
    let mut rest = list;
    while let Some((after_id, id)) = field(rest, "id") {
        rest = &rest[after_id..];
        let Some((after_name, name)) = field(rest, "name") else {
            break;
        };
        rest = &rest[after_name..];
        calls.push(ToolCall {
            id,
            name,
            arguments: crate::llm::Arguments::Raw(String::new()),
        });
    }
    calls
}

/// The engine request a wire request stands for.
fn model_request(request: &WireRequest, iteration: u32, call: u32) -> ModelRequest<'_> {
    ModelRequest {
        purpose: Purpose::Turn,
        iteration,
        call,
        messages: &request.messages,
        tools: &request.tools,
        force_text: false,
    }
}

/// A scripted response as served: whole (a scripted stream folded), and the chunks to stream
/// when the request asked for a stream (the scripted ones, or the whole answer cut at its
/// parts). A scripted stream that cannot be folded is the error.
fn served_answer(
    r: ModelResponse,
    streamed: bool,
) -> Result<(ModelResponse, Option<Vec<Chunk>>), String> {
    let whole = if r.stream.is_empty() {
        r
    } else {
        let a = stream::assemble(&r.stream)
            .map_err(|e| format!("harness serve: the scripted stream cannot be served: {e}"))?;
        let finish = a.finish.unwrap_or(if a.tool_calls.is_empty() {
            Finish::Stop
        } else {
            Finish::ToolUse
        });
        ModelResponse {
            text: a.text,
            tool_calls: a.tool_calls,
            finish,
            stream: r.stream,
            ..r
        }
    };
    if !streamed {
        return Ok((
            ModelResponse {
                stream: Vec::new(),
                chunks: 0,
                ..whole
            },
            None,
        ));
    }
    let chunks = if whole.stream.is_empty() {
        chunks_of(&whole)
    } else {
        whole.stream.clone()
    };
    Ok((
        ModelResponse {
            chunks: chunks.len(),
            stream: Vec::new(),
            ..whole
        },
        Some(chunks),
    ))
}

/// The tools agents end their runs through, by the frameworks' conventions: inspect_ai's
/// `react()` agent ends on `submit`, smolagents' agents on `final_answer`. Such an agent does not
/// take a text answer as final (it nudges the model to call the tool, or refuses text).
const ANSWER_TOOLS: [&str; 2] = ["submit", "final_answer"];

/// The answer tool a scripted answer goes out through, and the parameter that carries the
/// text: when the answer is a suite case's final answer (text holding its `answer`, no calls)
/// and the request offers one of [`ANSWER_TOOLS`] that the scenario does not declare itself.
fn answer_tool(
    r: &ModelResponse,
    request: &WireRequest,
    scenario: &crate::scenario::Scenario,
) -> Option<(String, String)> {
    let suite = scenario.suite.as_ref()?;
    let text = r.text.as_deref()?;
    if !r.tool_calls.is_empty() || suite.answer.is_empty() || !text.contains(&suite.answer) {
        return None;
    }
    let tool = request.tools.iter().find(|t| {
        ANSWER_TOOLS.contains(&t.name.as_str()) && !scenario.tools.iter().any(|d| d.name == t.name)
    })?;
    let param = tool.schema["required"]
        .as_array()
        .and_then(|a| a.first())
        .and_then(Value::as_str)
        .unwrap_or("answer");
    Some((tool.name.clone(), param.to_owned()))
}

/// A whole answer as stream chunks: its text, each call (start, arguments, complete), finish.
fn chunks_of(r: &ModelResponse) -> Vec<Chunk> {
    let mut out = Vec::new();
    if let Some(t) = &r.text {
        out.push(Chunk::Text { text: t.clone() });
    }
    for (index, c) in (0u32..).zip(&r.tool_calls) {
        out.push(Chunk::ToolCallStart {
            index,
            id: c.id.clone(),
            name: c.name.clone(),
        });
        let args = c.arguments.text();
        if !args.is_empty() {
            out.push(Chunk::ArgsDelta {
                index,
                text: args.into_owned(),
            });
        }
        out.push(Chunk::ToolCallComplete { index });
    }
    out.push(Chunk::Finish { reason: r.finish });
    out
}

/// An error answer with `message` in the provider's error shape (a 400 is one the SDKs do
/// not retry).
pub fn refusal(provider: Provider, status: u16, message: &str) -> HttpAnswer {
    HttpAnswer {
        status,
        headers: Vec::new(),
        body: AnswerBody::Json(provider.error_body(status, message)),
    }
}

#[cfg(test)]
mod tests {
    use super::infer::{Context, infer};
    use super::*;
    use crate::scenario::SourceFormat;
    use crate::trace::render_event;
    use serde_json::json;

    const SCENARIO: &str = r#"
format = 1
description = "test"
family = "t"
profile = "none"
system = "sys"
user = "List the files."
config = { max_iterations = 3 }

[[tools]]
name = "exec"
description = "Run"
schema = { type = "object" }
latency_ms = 200
default = { error = "no" }

[model]
name = "m"
latency_ms = 1000

[[model.rules]]
when = { any_message_contains = "LOOP" }
reply = { text = "Sorry." }

[[model.rules]]
when = { last_tool_failed = true, tools_offered = false }
reply = { text = "Failed, no tools." }

[[model.rules]]
reply = { tool_calls = [{ name = "exec", args = {} }] }
"#;

    fn session(text: &str) -> Session {
        let cases = crate::scenario::load(text, SourceFormat::Toml, "t/x").expect("loads");
        Session::new(cases[0].clone())
    }

    fn tool() -> Value {
        json!([{"type": "function", "function": {"name": "exec", "description": "Run", "parameters": {"type": "object"}}}])
    }

    /// An OpenAI request: the user's message, then `turns` rounds of our call and its result.
    fn openai(turns: usize, result: &str, extra: Option<&str>, tools: bool) -> Vec<u8> {
        let mut messages = vec![
            json!({"role": "system", "content": "sys"}),
            json!({"role": "user", "content": "List the files."}),
        ];
        for i in 0..turns {
            let id = format!("call_{i}");
            messages.push(json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": id, "type": "function", "function": {"name": "exec", "arguments": "{}"}}]}));
            messages.push(json!({"role": "tool", "tool_call_id": id, "content": result}));
        }
        if let Some(e) = extra {
            messages.push(json!({"role": "user", "content": e}));
        }
        let mut body = json!({"model": "gpt", "messages": messages});
        if tools {
            body["tools"] = tool();
        }
        body.to_string().into_bytes()
    }

    fn json_of(s: &HttpAnswer) -> &Value {
        match &s.body {
            AnswerBody::Json(v) => v,
            AnswerBody::Events { .. } => panic!("expected a JSON body"),
        }
    }

    fn lines(s: &Session, i: usize) -> Vec<String> {
        let ctx = Context {
            profile: "exec",
            cap: s.cap(),
            tool_latency: [("exec".to_owned(), 200)].into(),
        };
        infer(&ctx, &s.conversations()[i].requests)
            .iter()
            .map(|e| format!("{} {}", e.t_ms, render_event(&e.event)))
            .collect()
    }

    #[test]
    fn results_sent_back_in_another_order_stay_with_their_own_calls() {
        let scenario = r#"
format = 1
description = "test"
family = "t"
profile = "none"
user = "Copy the file."
config = { max_iterations = 3 }

[[tools]]
name = "read"
schema = { type = "object" }
default = { ok = "text" }

[[tools]]
name = "write"
schema = { type = "object" }
default = { ok = "done" }

[model]
name = "m"

[[model.rules]]
when = { last_tool_failed = true }
reply = { text = "The write failed." }

[[model.rules]]
reply = { tool_calls = [{ name = "read", args = {} }, { name = "write", args = {} }] }
"#;
        let tools = json!([
            {"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}},
            {"type": "function", "function": {"name": "write", "parameters": {"type": "object"}}}
        ]);
        let user = json!({"role": "user", "content": "Copy the file."});
        // The write's result comes back first: it failed, the read did not.
        let ended = |s: &Session| -> Vec<String> {
            lines(s, 0)
                .into_iter()
                .filter(|l| l.contains("tool_call_end"))
                .map(|l| l.split_once(' ').map(|(_, r)| r.to_owned()).unwrap_or(l))
                .collect()
        };
        // Chat Completions: `tool_call_id`.
        let mut s = session(scenario);
        let first = json!({"model": "gpt", "tools": tools, "messages": [user]});
        let r = s.handle(Api::ChatCompletions, first.to_string().as_bytes());
        let message = json_of(&r)["choices"][0]["message"].clone();
        let ids: Vec<Value> = (0..2)
            .map(|i| message["tool_calls"][i]["id"].clone())
            .collect();
        let next = json!({"model": "gpt", "tools": tools, "messages": [user, message,
            {"role": "tool", "tool_call_id": ids[1], "content": "Error: permission denied"},
            {"role": "tool", "tool_call_id": ids[0], "content": "the text"}]});
        s.handle(Api::ChatCompletions, next.to_string().as_bytes());
        let e = ended(&s);
        assert!(
            e[0].contains("read ok") && e[1].contains("write failed"),
            "{e:?}"
        );
        // Responses: `function_call_output.call_id`.
        let mut s = session(scenario);
        let input = json!([{"role": "user", "content": "Copy the file."}]);
        let first = json!({"model": "gpt", "tools": [
            {"type": "function", "name": "read", "parameters": {"type": "object"}},
            {"type": "function", "name": "write", "parameters": {"type": "object"}}], "input": input});
        let r = s.handle(Api::Responses, first.to_string().as_bytes());
        let calls: Vec<Value> = json_of(&r)["output"]
            .as_array()
            .expect("output")
            .iter()
            .filter(|i| i["type"] == "function_call")
            .cloned()
            .collect();
        assert_eq!(calls.len(), 2, "{calls:?}");
        let mut items = vec![input[0].clone()];
        items.extend(calls.iter().cloned());
        items.push(json!({"type": "function_call_output", "call_id": calls[1]["call_id"], "output": "Error: permission denied"}));
        items.push(json!({"type": "function_call_output", "call_id": calls[0]["call_id"], "output": "the text"}));
        let next = json!({"model": "gpt", "tools": first["tools"], "input": items});
        s.handle(Api::Responses, next.to_string().as_bytes());
        let e = ended(&s);
        assert!(
            e[0].contains("read ok") && e[1].contains("write failed"),
            "{e:?}"
        );
        // Messages: `tool_use_id` (and `is_error`).
        let mut s = session(scenario);
        let tools = json!([
            {"name": "read", "input_schema": {"type": "object"}},
            {"name": "write", "input_schema": {"type": "object"}}]);
        let first =
            json!({"model": "claude", "max_tokens": 100, "tools": tools, "messages": [user]});
        let r = s.handle(Api::Messages, first.to_string().as_bytes());
        let content = json_of(&r)["content"].clone();
        let uses: Vec<&Value> = content
            .as_array()
            .expect("content")
            .iter()
            .filter(|b| b["type"] == "tool_use")
            .collect();
        assert_eq!(uses.len(), 2, "{content}");
        let next = json!({"model": "claude", "max_tokens": 100, "tools": tools, "messages": [user,
            {"role": "assistant", "content": content},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": uses[1]["id"], "content": "permission denied", "is_error": true},
                {"type": "tool_result", "tool_use_id": uses[0]["id"], "content": "the text"}]}]});
        s.handle(Api::Messages, next.to_string().as_bytes());
        let e = ended(&s);
        assert!(
            e[0].contains("read ok") && e[1].contains("write failed"),
            "{e:?}"
        );
        // Results that name no id keep the order they came in (a text protocol).
        let results = [
            (0, &Message::new(Role::Tool, "a"), ""),
            (1, &Message::new(Role::Tool, "b"), "x2"),
            (2, &Message::new(Role::Tool, "c"), "made-up"),
        ];
        assert_eq!(
            super::infer::pair_results(&["x1", "x2", "x3"], &results),
            vec![Some(0), Some(1), Some(2)]
        );
        assert_eq!(
            super::infer::pair_results(&["x2", "x1"], &results[1..2]),
            vec![Some(0), None]
        );
    }

    #[test]
    fn tools_offered_in_another_order_give_the_same_trace() {
        // The matcher compares the tools offered as a set; so does the golden.
        let tools = json!([
            {"type": "function", "function": {"name": "exec", "parameters": {"type": "object"}}},
            {"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}}
        ]);
        let mut reversed = tools.clone();
        if let Some(a) = reversed.as_array_mut() {
            a.reverse();
        }
        let trace = |tools: &Value| {
            let mut s = session(SCENARIO);
            let body = json!({"model": "gpt", "tools": tools, "messages": [
                {"role": "user", "content": "List the files."}]});
            s.handle(Api::ChatCompletions, body.to_string().as_bytes());
            lines(&s, 0)
        };
        let a = trace(&tools);
        assert!(a[0].contains("tools=[exec, read]"), "{a:?}");
        assert_eq!(a, trace(&reversed));
    }

    #[test]
    fn a_portable_tool_stands_for_the_agents_own_and_generates_its_arguments() {
        let portable = r#"
format = 1
description = "test"
family = "t"
profile = "none"
user = "Book a flight."
config = { max_iterations = 3 }

[[tools]]
name = "exec"
schema = { type = "object", properties = { command = { type = "string" } }, required = ["command"] }
default = { error = "no" }
bind = "required:string"

[model]
name = "m"

[[model.rules]]
when = { last_tool_failed = true }
reply = { tool_calls = [{ name = "exec", generate = "valid" }] }

[[model.rules]]
reply = { tool_calls = [{ name = "exec", generate = "empty" }] }
"#;
        let tools = json!([
            {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"days": {"type": "integer"}}, "required": ["days"]}}},
            {"type": "function", "function": {"name": "search_flights", "parameters": {"type": "object", "properties": {
                "origin": {"type": "string"}, "destination": {"type": "string"}, "date": {"type": "string", "format": "date"}},
                "required": ["origin", "destination", "date"]}}}
        ]);
        let mut s = session(portable);
        let first = json!({"model": "gpt", "tools": tools, "messages": [{"role": "user", "content": "Book a flight."}]});
        let r = s.handle(Api::ChatCompletions, first.to_string().as_bytes());
        let call = json_of(&r)["choices"][0]["message"]["tool_calls"][0].clone();
        // The first offered tool with a required string parameter, with empty arguments.
        assert_eq!(call["function"]["name"], "search_flights");
        assert_eq!(call["function"]["arguments"], "{}");
        let next = json!({"model": "gpt", "tools": tools, "messages": [
            {"role": "user", "content": "Book a flight."},
            {"role": "assistant", "content": null, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call["id"], "content": "Error: origin is required"}
        ]});
        let r = s.handle(Api::ChatCompletions, next.to_string().as_bytes());
        let again = &json_of(&r)["choices"][0]["message"]["tool_calls"][0]["function"];
        assert_eq!(again["name"], "search_flights");
        let args: Value =
            serde_json::from_str(again["arguments"].as_str().unwrap_or("")).unwrap_or_default();
        assert_eq!(
            args["date"], "2026-03-14",
            "valid arguments from the agent's schema: {args}"
        );
        assert!(
            args["origin"].is_string() && args["destination"].is_string(),
            "{args}"
        );
        // The trace keeps the scenario's name, and says what it stood for.
        let l = lines(&s, 0);
        assert!(
            l.iter().any(|l| l.contains("notice source=serve text=\"the scenario's tool `exec` stands for the agent's `search_flights` (bind = required:string)\"")),
            "{l:?}"
        );
        assert!(
            l.iter()
                .any(|l| l.contains("tool_call_end call_0 exec failed")),
            "{l:?}"
        );
        assert!(l[0].contains("tools=[exec, get_weather]"), "{l:?}");
        // An agent whose tools fit no rule is told so in the trace; the call keeps its name.
        let mut s = session(&portable.replace("required:string", "name:book_*"));
        s.handle(Api::ChatCompletions, first.to_string().as_bytes());
        assert!(
            lines(&s, 0).iter().any(|l| l
                .contains("fits none of the tools the agent offers (get_weather, search_flights)")),
            "{:?}",
            lines(&s, 0)
        );
    }

    #[test]
    fn bindings_and_globs_pick_as_documented() {
        use crate::scenario::Bind;
        let tool = |name: &str, schema: Value| crate::llm::ToolSpec {
            name: name.to_owned(),
            description: String::new(),
            schema,
        };
        let read = tool(
            "read_file",
            json!({"properties": {"path": {"type": "string"}}, "required": ["path"]}),
        );
        let count = tool(
            "count",
            json!({"properties": {"n": {"type": ["integer", "null"]}}, "required": ["n"]}),
        );
        assert!(bind::fits(&Bind::Any, 0, &read));
        assert!(
            bind::fits(&Bind::Position(2), 1, &count) && !bind::fits(&Bind::Position(2), 0, &read)
        );
        assert!(bind::fits(&Bind::Required("string".into()), 0, &read));
        assert!(!bind::fits(&Bind::Required("string".into()), 1, &count));
        assert!(bind::fits(&Bind::Required("integer".into()), 1, &count));
        assert!(bind::fits(&Bind::Name("read_*".into()), 0, &read));
        assert!(bind::fits(&Bind::Name("*_file".into()), 0, &read));
        assert!(bind::fits(&Bind::Name("r*d*e".into()), 0, &read));
        assert!(!bind::fits(&Bind::Name("read".into()), 0, &read));
        assert!(!bind::fits(&Bind::Name("*x*".into()), 0, &read));
        assert_eq!(
            Bind::parse("position:0")
                .err()
                .map(|e| e.contains("from 1")),
            Some(true)
        );
        assert!(Bind::parse("required:text").is_err());
        assert!(Bind::parse("first").is_err());
        assert_eq!(
            Bind::parse("name:a*").map(|b| b.to_string()),
            Ok("name:a*".to_owned())
        );
    }

    #[test]
    fn an_agent_offering_no_tools_to_a_scenario_that_calls_them_gets_a_notice() {
        let mut s = session(SCENARIO);
        // No tools offered, nothing failed yet: the scenario's model calls `exec` anyway.
        let r = s.handle(Api::ChatCompletions, &openai(0, "", None, false));
        assert_eq!(r.status, 200);
        let notices: Vec<String> = lines(&s, 0)
            .into_iter()
            .filter(|l| l.contains(" notice "))
            .collect();
        assert_eq!(notices.len(), 1, "{notices:?}");
        assert!(
            notices[0]
                .contains("the agent offered no tools, and the scenario's model called `exec`"),
            "{notices:?}"
        );
        // An agent that offers them gets none.
        let mut s = session(SCENARIO);
        s.handle(Api::ChatCompletions, &openai(0, "", None, true));
        assert!(!lines(&s, 0).iter().any(|l| l.contains(" notice ")));
    }

    #[test]
    fn the_rules_see_the_real_request_and_the_trace_shows_the_nudge() {
        let mut s = session(SCENARIO);
        let r = s.handle(Api::ChatCompletions, &openai(0, "", None, true));
        assert_eq!(r.status, 200);
        let call = &json_of(&r)["choices"][0]["message"]["tool_calls"][0];
        assert_eq!(call["function"]["name"], "exec");
        let r = s.handle(
            Api::ChatCompletions,
            &openai(1, "Error: no", Some("LOOP!"), true),
        );
        assert_eq!(json_of(&r)["choices"][0]["message"]["content"], "Sorry.");
        assert_eq!(s.conversations().len(), 1);
        assert_eq!(
            lines(&s, 0),
            [
                "0 run_start profile=exec model=gpt max_iterations=3 tools=[exec]",
                "0 iteration 1",
                "0 model_request call=1 messages=2 tools=[exec]",
                "1000 model_response finish=tool_use calls=[call_0 exec({})] tokens=11/2 latency=1000ms",
                "1000 tool_call_start call_0 exec({})",
                "1200 tool_call_end call_0 exec failed error=\"Error: no\" latency=200ms rule=\"error-prefix\"",
                "1200 intervention policy=agent stage=1 action=nudge",
                "1200 message_injected source=agent role=user text=\"LOOP!\"",
                "1200 iteration 2",
                "1200 model_request call=2 messages=5 tools=[exec]",
                "2200 model_response finish=stop text=\"Sorry.\" tokens=16/2 latency=1000ms",
                "2200 outcome response iterations=2 text=\"Sorry.\"",
            ]
        );
    }

    #[test]
    fn openai_failures_follow_the_error_convention_and_stripped_tools_are_seen() {
        let mut s = session(SCENARIO);
        s.handle(Api::ChatCompletions, &openai(0, "", None, true));
        // Tools withheld and the last result failed: the second rule answers.
        let r = s.handle(Api::ChatCompletions, &openai(1, "Error: no", None, false));
        assert_eq!(
            json_of(&r)["choices"][0]["message"]["content"],
            "Failed, no tools."
        );
        let l = lines(&s, 0);
        assert!(l.contains(&"1200 intervention policy=agent stage=2 action=strip_tools".into()));
        assert!(l.contains(&"1200 model_request call=2 messages=4 tools=[] stripped".into()));
        // The same text as a success does not count as failed for the rule.
        let mut s = session(SCENARIO);
        s.handle(Api::ChatCompletions, &openai(0, "", None, true));
        let r = s.handle(Api::ChatCompletions, &openai(1, "fine", None, false));
        assert!(json_of(&r)["choices"][0]["message"]["tool_calls"].is_array());
    }

    #[test]
    fn unanswered_calls_are_skipped_and_a_dropped_answer_still_shows_the_nudge() {
        let mut s = session(SCENARIO);
        s.handle(Api::ChatCompletions, &openai(0, "", None, true));
        // The agent keeps our call but sends no result, only a note of its own.
        let mut body: Value = serde_json::from_slice(&openai(1, "x", Some("Stop looping."), true))
            .unwrap_or_default();
        if let Some(m) = body["messages"].as_array_mut() {
            m.remove(3);
        }
        s.handle(Api::ChatCompletions, body.to_string().as_bytes());
        let l = lines(&s, 0);
        assert!(l.contains(
            &"1000 tool_call_skipped call_0 exec reason=\"the agent sent no result for this call\"".into()
        ));
        assert!(l.contains(
            &"1000 message_injected source=agent role=user text=\"Stop looping.\"".into()
        ));
        // Another agent drops our latest answer and re-sends its list with a note appended:
        // the note is what it added, not a replay of the earlier messages.
        let mut s = session(SCENARIO);
        s.handle(Api::ChatCompletions, &openai(0, "", None, true));
        s.handle(Api::ChatCompletions, &openai(1, "Error: x", None, true));
        s.handle(
            Api::ChatCompletions,
            &openai(1, "Error: x", Some("LOOP"), true),
        );
        assert_eq!(s.conversations().len(), 1);
        let l = lines(&s, 0);
        let injected: Vec<&String> = l
            .iter()
            .filter(|l| l.contains("message_injected"))
            .collect();
        assert_eq!(injected.len(), 1, "{l:?}");
        assert!(injected[0].ends_with("text=\"LOOP\""), "{l:?}");
    }

    #[test]
    fn the_cap_refuses_and_ends_the_conversation() {
        let mut s = session(SCENARIO);
        for turns in 0..3 {
            assert_eq!(
                s.handle(Api::ChatCompletions, &openai(turns, "x", None, true))
                    .status,
                200
            );
        }
        let r = s.handle(Api::ChatCompletions, &openai(3, "x", None, true));
        assert_eq!(r.status, 400);
        let msg = json_of(&r)["error"]["message"].as_str().unwrap_or_default();
        assert!(msg.contains("iteration cap (3)"), "{msg}");
        // Further calls in that conversation are refused and not recorded.
        assert_eq!(
            s.handle(Api::ChatCompletions, &openai(4, "x", None, true))
                .status,
            400
        );
        assert_eq!(s.conversations()[0].requests.len(), 4);
        let l = lines(&s, 0);
        assert_eq!(l.iter().filter(|l| l.contains(" iteration ")).count(), 3);
        assert!(l.contains(&"3600 tool_call_end call_2 exec ok output=\"x\" latency=200ms".into()));
        assert!(
            l.last()
                .is_some_and(|l| l.contains("outcome max_iterations iterations=3"))
        );
    }

    #[test]
    fn conversations_are_keyed_by_their_first_user_message() {
        let mut s = session(SCENARIO);
        s.handle(Api::ChatCompletions, &openai(0, "", None, true));
        // A fresh message list starts another run, even with the same prompt.
        s.handle(Api::ChatCompletions, &openai(0, "", None, true));
        assert_eq!(s.conversations().len(), 2);
        // A continuation goes to the latest conversation with that prompt.
        s.handle(Api::ChatCompletions, &openai(1, "x", None, true));
        assert_eq!(s.conversations()[1].requests.len(), 2);
        // Another prompt's continuation we never saw starts its own.
        let other = String::from_utf8(openai(1, "x", None, true))
            .unwrap_or_default()
            .replace("List the files.", "Something else.");
        s.handle(Api::ChatCompletions, other.as_bytes());
        assert_eq!(s.conversations().len(), 3);
        // Bad input is refused with the provider's error shape.
        let r = s.handle(Api::Messages, b"{not json");
        assert_eq!(r.status, 400);
        assert_eq!(json_of(&r)["type"], "error");
        assert_eq!(s.conversations().len(), 3);
    }

    #[test]
    fn a_suite_answer_goes_to_an_agent_that_ends_through_an_answer_tool() {
        let text = SCENARIO
            .replace(
                "config = { max_iterations = 3 }",
                "config = { max_iterations = 3 }\n\n[suite]\nkind = \"legitimate\"\ntitle = \"t\"\nanswer = \"Done\"",
            )
            .replace(
                "[[model.rules]]\nwhen = { any_message_contains = \"LOOP\" }",
                "[[model.rules]]\nwhen = { any_message_contains = \"ANSWER\" }\nreply = { text = \"Done: a.txt\" }\n\n[[model.rules]]\nwhen = { any_message_contains = \"STALL\" }\nreply = { text = \"Let me look.\" }\n\n[[model.rules]]\nwhen = { any_message_contains = \"LOOP\" }",
            );
        let submit = json!({"type": "function", "function": {"name": "submit", "description": "Submit an answer",
            "parameters": {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}}});
        let request = |user: &str, stream: bool| {
            json!({"model": "m", "stream": stream, "tools": [tool()[0].clone(), submit.clone()], "messages": [
                {"role": "system", "content": "sys"}, {"role": "user", "content": user}]})
            .to_string()
        };
        let mut s = session(&text);
        // The final answer: a call of `submit` with the text, whole and streamed.
        let r = s.handle(Api::ChatCompletions, request("ANSWER", false).as_bytes());
        let message = &json_of(&r)["choices"][0]["message"];
        assert_eq!(message["tool_calls"][0]["function"]["name"], "submit");
        assert_eq!(
            message["tool_calls"][0]["function"]["arguments"],
            r#"{"answer":"Done: a.txt"}"#
        );
        assert!(message["content"].is_null(), "{message}");
        let r = s.handle(Api::ChatCompletions, request("ANSWER", true).as_bytes());
        let AnswerBody::Events { events, .. } = &r.body else {
            panic!("expected a stream")
        };
        let streamed: String = events.iter().map(|e| e.data.clone()).collect();
        assert!(streamed.contains(r#""name":"submit""#), "{streamed}");
        // The trace keeps the script's text, and says where it went.
        let l = lines(&s, 0);
        assert!(
            l.iter().any(|l| l.contains("answer tool `submit`")),
            "{l:?}"
        );
        assert!(
            l.iter()
                .any(|l| l.contains("outcome response") && l.contains("Done: a.txt")),
            "{l:?}"
        );
        // Any other text goes out as text.
        let r = s.handle(Api::ChatCompletions, request("STALL", false).as_bytes());
        assert_eq!(
            json_of(&r)["choices"][0]["message"]["content"],
            "Let me look."
        );
    }

    #[test]
    fn a_retry_after_a_dropped_empty_answer_continues_its_conversation() {
        let text = SCENARIO.replace(
            "[[model.rules]]\nwhen = { any_message_contains = \"LOOP\" }",
            "[[model.rules]]\ntimes = 1\nreply = { text = \"\" }\n\n[[model.rules]]\nwhen = { any_message_contains = \"Please\" }\nreply = { text = \"Done.\" }\n\n[[model.rules]]\nwhen = { any_message_contains = \"LOOP\" }",
        );
        let mut s = session(&text);
        let first = json!({"model": "m", "messages": [
            {"role": "system", "content": "sys"}, {"role": "user", "content": "List the files."}]});
        let r = s.handle(Api::ChatCompletions, first.to_string().as_bytes());
        assert_eq!(r.status, 200);
        // pydantic-ai's way: the empty answer left out, a system message asking again.
        let again = json!({"model": "m", "messages": [
            {"role": "system", "content": "sys"}, {"role": "user", "content": "List the files."},
            {"role": "system", "content": "Please return text or call a tool."}]});
        let r = s.handle(Api::ChatCompletions, again.to_string().as_bytes());
        assert_eq!(json_of(&r)["choices"][0]["message"]["content"], "Done.");
        assert_eq!(s.conversations().len(), 1);
        let l = lines(&s, 0);
        assert!(
            l.iter()
                .any(|l| l.contains("model_request call=2 messages=3")),
            "{l:?}"
        );
        // The same prompt sent afresh is another run (answered empty, and continued by its
        // own retry); a retry when no conversation's last answer was empty is one more.
        s.handle(Api::ChatCompletions, first.to_string().as_bytes());
        assert_eq!(s.conversations().len(), 2);
        s.handle(Api::ChatCompletions, again.to_string().as_bytes());
        assert_eq!(s.conversations().len(), 2);
        assert_eq!(s.conversations()[1].requests.len(), 2);
        s.handle(Api::ChatCompletions, again.to_string().as_bytes());
        assert_eq!(s.conversations().len(), 3);
    }

    #[test]
    fn an_applications_own_retry_after_its_sdk_gave_up_continues_the_faulted_run() {
        let text = SCENARIO.replace(
            "[[model.rules]]\nwhen = { any_message_contains = \"LOOP\" }",
            "[[model.rules]]\ntimes = 1\nreply = { fault = { kind = \"rate_limit\" } }\n\n[[model.rules]]\nwhen = { any_message_contains = \"LOOP\" }",
        );
        let fresh = RequestHints {
            retry_count: Some(0),
        };
        // inspect_ai's way: the SDK's retries spent, its own retry goes out with count 0.
        let mut s = session(&text);
        let r = s.handle_with(Api::ChatCompletions, &openai(0, "", None, true), fresh);
        assert_eq!(r.status, 429);
        let r = s.handle_with(Api::ChatCompletions, &openai(0, "", None, true), fresh);
        assert_eq!(r.status, 200);
        assert_eq!(s.conversations().len(), 1);
        // Once another run was answered since the fault, count 0 is a new run again.
        let mut s = session(&text);
        s.handle_with(Api::ChatCompletions, &openai(0, "", None, true), fresh);
        let other = String::from_utf8(openai(0, "", None, true))
            .unwrap_or_default()
            .replace("List the files.", "Something else.");
        s.handle_with(Api::ChatCompletions, other.as_bytes(), fresh);
        s.handle_with(Api::ChatCompletions, &openai(0, "", None, true), fresh);
        assert_eq!(s.conversations().len(), 3);
    }

    #[test]
    fn faults_are_served_and_the_retry_stays_in_its_iteration() {
        let text = SCENARIO.replace(
            "[[model.rules]]\nwhen = { any_message_contains = \"LOOP\" }",
            "[[model.rules]]\ntimes = 1\nreply = { fault = { kind = \"rate_limit\", retry_after_ms = 1500 } }\n\n[[model.rules]]\nwhen = { any_message_contains = \"LOOP\" }",
        );
        let mut s = session(&text);
        let r = s.handle(Api::ChatCompletions, &openai(0, "", None, true));
        assert_eq!(r.status, 429);
        assert!(r.headers.contains(&("retry-after-ms", "1500".to_owned())));
        assert!(r.headers.contains(&("retry-after", "2".to_owned())));
        let r = s.handle(Api::ChatCompletions, &openai(0, "", None, true));
        assert_eq!(r.status, 200);
        assert_eq!(s.conversations().len(), 1);
        let l = lines(&s, 0);
        assert_eq!(l.iter().filter(|l| l.contains(" iteration ")).count(), 1);
        assert!(
            l.iter()
                .any(|l| l.contains("provider_error rate_limit attempt=1"))
        );
        assert!(l.iter().any(|l| l.contains("model_request call=2")));
        assert!(
            l.last()
                .is_some_and(|l| l.contains("outcome stopped iterations=1"))
        );
    }

    #[test]
    fn anthropic_streams_round_trip_and_is_error_is_read() {
        let mut s = session(SCENARIO);
        let body = |messages: Value| {
            json!({"model": "claude", "max_tokens": 100, "stream": true, "system": "sys",
                "tools": [{"name": "exec", "description": "Run", "input_schema": {"type": "object"}}],
                "messages": messages})
            .to_string()
            .into_bytes()
        };
        let r = s.handle(
            Api::Messages,
            &body(json!([{"role": "user", "content": "List the files."}])),
        );
        let AnswerBody::Events { events, .. } = &r.body else {
            panic!("expected a stream")
        };
        let back = Provider::Anthropic.parse_stream(events).expect("parses");
        let folded = stream::assemble(&back.stream).expect("folds");
        assert_eq!(folded.tool_calls[0].name, "exec");
        assert_eq!(folded.finish, Some(Finish::ToolUse));
        s.handle(
            Api::Messages,
            &body(json!([
                {"role": "user", "content": "List the files."},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "call_0", "name": "exec", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_0", "content": "no", "is_error": true}]},
            ])),
        );
        let l = lines(&s, 0);
        assert!(
            l.iter()
                .any(|l| l.contains("model_response finish=tool_use chunks=4"))
        );
        assert!(
            l.contains(&"1200 tool_call_end call_0 exec failed error=\"no\" latency=200ms rule=\"is_error\"".into())
        );
        assert!(
            !l.iter().any(|l| l.contains("intervention")),
            "a tool result is no nudge: {l:?}"
        );
        assert_eq!(s.conversations().len(), 1);
    }

    /// The OpenAI request an agent sends after `answers` (its own served answers, in order):
    /// each answer's calls appended with `result` as their results.
    fn continuing(answers: &[Value], result: &str) -> Vec<u8> {
        let mut messages = vec![json!({"role": "user", "content": "List the files."})];
        for a in answers {
            let m = &a["choices"][0]["message"];
            messages.push(m.clone());
            for c in m["tool_calls"].as_array().into_iter().flatten() {
                messages.push(json!({"role": "tool", "tool_call_id": c["id"], "content": result}));
            }
        }
        json!({"model": "gpt", "messages": messages, "tools": tool()})
            .to_string()
            .into_bytes()
    }

    #[test]
    fn parallel_agents_are_told_apart_by_the_ids_they_echo() {
        let mut s = session(SCENARIO);
        let fresh = openai(0, "", None, true);
        // Three agents start at once, then continue interleaved in every order.
        let mut answers: Vec<Vec<Value>> = (0..3)
            .map(|_| vec![json_of(&s.handle(Api::ChatCompletions, &fresh)).clone()])
            .collect();
        for order in [[2, 0, 1], [1, 2, 0]] {
            for a in order {
                let r = s.handle(Api::ChatCompletions, &continuing(&answers[a], "x"));
                assert_eq!(r.status, 200);
                answers[a].push(json_of(&r).clone());
            }
        }
        assert_eq!(s.conversations().len(), 3);
        for c in s.conversations() {
            assert_eq!(c.requests.len(), 3, "each agent's requests stay together");
        }
        let traces: Vec<Vec<String>> = (0..3).map(|i| lines(&s, i)).collect();
        assert_eq!(traces[0], traces[1]);
        assert_eq!(traces[1], traces[2]);
        // Ids are the provider's shape, unique across conversations.
        let ids: std::collections::BTreeSet<String> = answers
            .iter()
            .flatten()
            .flat_map(|a| {
                [
                    a["id"].as_str().unwrap_or_default().to_owned(),
                    a["choices"][0]["message"]["tool_calls"][0]["id"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                ]
            })
            .collect();
        assert_eq!(ids.len(), 18);
        assert!(ids.iter().all(|i| (i.starts_with("call_") && i.len() == 29)
            || (i.starts_with("chatcmpl-") && i.len() == 38)));
        // The scripted ids stay in the traces.
        assert!(
            traces[0]
                .iter()
                .any(|l| l.contains("calls=[call_1 exec({})]"))
        );
    }

    #[test]
    fn the_usage_chunk_comes_only_when_asked_for_and_the_role_comes_first() {
        let mut s = session(SCENARIO);
        let ask = |usage: bool| {
            let mut body = json!({"model": "gpt", "stream": true, "tools": tool(),
                "messages": [{"role": "user", "content": "List the files."}]});
            if usage {
                body["stream_options"] = json!({"include_usage": true});
            }
            body.to_string().into_bytes()
        };
        for usage in [false, true] {
            let r = s.handle(Api::ChatCompletions, &ask(usage));
            let AnswerBody::Events { events, cut, .. } = &r.body else {
                panic!("expected a stream")
            };
            assert!(!cut);
            let data: Vec<Value> = events
                .iter()
                .filter(|e| e.data != "[DONE]")
                .map(|e| serde_json::from_str(&e.data).unwrap_or_default())
                .collect();
            assert_eq!(data[0]["choices"][0]["delta"]["role"], "assistant");
            assert!(data.iter().all(|d| d["created"].as_u64() >= Some(EPOCH_S)));
            let empty = data.iter().filter(|d| d["choices"] == json!([])).count();
            assert_eq!(empty, usize::from(usage), "usage chunk asked: {usage}");
            assert_eq!(events.last().map(|e| e.data.as_str()), Some("[DONE]"));
        }
    }

    #[test]
    fn tool_choice_and_n_are_honoured_or_refused() {
        let text = SCENARIO.replace(
            "[[model.rules]]\nreply = { tool_calls",
            "[[model.rules]]\nwhen = { any_message_contains = \"TEXT\" }\nreply = { text = \"Plain.\" }\n\n[[model.rules]]\nreply = { tool_calls",
        );
        let mut s = session(&text);
        let body = |user: &str, extra: Value| {
            let mut b = json!({"model": "gpt", "tools": tool(),
                "messages": [{"role": "user", "content": user}]});
            for (k, v) in extra.as_object().into_iter().flatten() {
                b[k] = v.clone();
            }
            b.to_string().into_bytes()
        };
        let r = s.handle(Api::ChatCompletions, &body("List.", json!({"n": 3})));
        assert_eq!(json_of(&r)["choices"].as_array().map(Vec::len), Some(3));
        let r = s.handle(
            Api::ChatCompletions,
            &body("TEXT", json!({"tool_choice": "required"})),
        );
        assert_eq!(r.status, 400);
        assert!(
            json_of(&r)["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("requires a tool call"))
        );
        let r = s.handle(
            Api::ChatCompletions,
            &body(
                "List.",
                json!({"tool_choice": {"type": "function", "function": {"name": "exec"}}}),
            ),
        );
        assert_eq!(r.status, 200);
        let r = s.handle(Api::ChatCompletions, &body("List.", json!({"n": 0})));
        assert_eq!(r.status, 400);
    }

    #[test]
    fn anthropic_wire_details_are_the_apis() {
        let mut s = session(SCENARIO);
        let no_max = json!({"model": "claude", "messages": [{"role": "user", "content": "List the files."}]});
        let r = s.handle(Api::Messages, no_max.to_string().as_bytes());
        assert_eq!(r.status, 400);
        assert_eq!(json_of(&r)["error"]["type"], "invalid_request_error");
        assert!(
            json_of(&r)["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("max_tokens: Field required")),
            "{:?}",
            json_of(&r)
        );
        // A system message among the turns, as newer models take one (Claude Code sends it):
        // answered; another role is refused, named.
        let system = json!({"model": "claude", "max_tokens": 10, "messages": [
            {"role": "user", "content": "List the files."}, {"role": "system", "content": "x"}]});
        let r = s.handle(Api::Messages, system.to_string().as_bytes());
        assert_eq!(r.status, 200);
        let other = json!({"model": "claude", "max_tokens": 10, "messages": [{"role": "tool", "content": "x"}]});
        let r = s.handle(Api::Messages, other.to_string().as_bytes());
        let m = json_of(&r)["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(
            m.contains("messages[0].role is `tool`") && !m.contains("Some("),
            "{m}"
        );
        let ok = json!({"model": "claude", "max_tokens": 10, "stream": true,
            "tools": [{"name": "exec", "description": "Run", "input_schema": {"type": "object"}}],
            "messages": [{"role": "user", "content": "List the files."}]});
        let r = s.handle(Api::Messages, ok.to_string().as_bytes());
        let AnswerBody::Events { events, .. } = &r.body else {
            panic!("expected a stream")
        };
        let names: Vec<&str> = events.iter().filter_map(|e| e.event.as_deref()).collect();
        assert_eq!(&names[..2], ["message_start", "ping"]);
        let start: Value = serde_json::from_str(&events[0].data).unwrap_or_default();
        assert!(
            start["message"]["id"]
                .as_str()
                .is_some_and(|i| i.starts_with("msg_01"))
        );
        assert_eq!(start["message"]["stop_sequence"], Value::Null);
        assert!(start["message"]["usage"]["output_tokens"].as_u64() >= Some(1));
        let block: Value = serde_json::from_str(&events[2].data).unwrap_or_default();
        assert!(
            block["content_block"]["id"]
                .as_str()
                .is_some_and(|i| i.starts_with("toolu_01") && i.len() == 30)
        );
        let (status, body) =
            Provider::Anthropic.render_fault(crate::llm::FaultKind::ServerError, "Overloaded");
        assert_eq!(
            (status, &body["error"]["type"]),
            (529, &json!("overloaded_error"))
        );
    }

    #[test]
    fn a_server_fault_and_an_empty_conversation_are_answered_as_each_api_does() {
        let faulty = SCENARIO.replace(
            "reply = { tool_calls = [{ name = \"exec\", args = {} }] }",
            "reply = { fault = { kind = \"server_error\" } }",
        );
        let message = |r: &HttpAnswer| match &r.body {
            AnswerBody::Json(v) => v["error"]["message"].as_str().unwrap_or("").to_owned(),
            AnswerBody::Events { .. } => String::new(),
        };
        let mut s = session(&faulty);
        let r = s.handle(Api::ChatCompletions, &openai(0, "", None, true));
        assert_eq!((r.status, message(&r).as_str()), (500, OPENAI_SERVER_ERROR));
        let mut s = session(&faulty);
        let anthropic = json!({"model": "claude", "max_tokens": 10, "system": "sys",
            "messages": [{"role": "user", "content": "List the files."}]});
        let r = s.handle(Api::Messages, anthropic.to_string().as_bytes());
        assert_eq!(r.status, 529);
        assert!(message(&r).contains("Overloaded"), "{}", message(&r));
        // `messages: []` is refused, on both APIs.
        let mut s = session(SCENARIO);
        let r = s.handle(Api::ChatCompletions, br#"{"model": "m", "messages": []}"#);
        assert_eq!(r.status, 400);
        assert!(message(&r).contains("too short"), "{}", message(&r));
        let r = s.handle(
            Api::Messages,
            br#"{"model": "m", "max_tokens": 5, "messages": []}"#,
        );
        assert_eq!(r.status, 400);
        assert!(
            message(&r).contains("at least one message"),
            "{}",
            message(&r)
        );
        assert!(s.conversations().is_empty());
    }

    #[test]
    fn responses_api_whole_and_streamed_continues_by_call_id() {
        let mut s = session(SCENARIO);
        let first = json!({"model": "gpt", "instructions": "sys", "input": "List the files.",
            "tools": [{"type": "function", "name": "exec", "parameters": {"type": "object"}}]});
        let r = s.handle(Api::Responses, first.to_string().as_bytes());
        assert_eq!(r.status, 200);
        let v = json_of(&r).clone();
        assert_eq!(v["object"], "response");
        assert_eq!(v["status"], "completed");
        let call = v["output"][0].clone();
        assert_eq!(call["type"], "function_call");
        // A second agent starts too; the first continues by its call id.
        s.handle(Api::Responses, first.to_string().as_bytes());
        let next = json!({"model": "gpt", "stream": true, "input": [
            {"role": "user", "content": "List the files."},
            call,
            {"type": "function_call_output", "call_id": call["call_id"], "output": "An error occurred while running the tool. Please try again."},
            {"role": "user", "content": "LOOP"},
        ], "tools": first["tools"]});
        let r = s.handle(Api::Responses, next.to_string().as_bytes());
        let AnswerBody::Events { events, .. } = &r.body else {
            panic!("expected a stream")
        };
        assert_eq!(
            events.last().and_then(|e| e.event.as_deref()),
            Some("response.completed")
        );
        assert_eq!(s.conversations()[0].requests.len(), 2);
        assert_eq!(s.conversations()[1].requests.len(), 1);
        let l = lines(&s, 0);
        assert!(
            l.iter()
                .any(|l| l.contains("exec failed") && l.ends_with("rule=\"tool-error-notice\"")),
            "{l:?}"
        );
        assert!(l.last().is_some_and(|l| l.contains("outcome response")));
    }

    /// A client that continues by `previous_response_id` and re-sends `instructions` on every
    /// turn gives the trace of its twin that re-sends the whole history; an unknown id is 404.
    #[test]
    fn a_stateful_responses_client_reads_as_its_full_history_twin() {
        let tools = json!([{"type": "function", "name": "exec", "parameters": {"type": "object"}}]);
        let run = |stateful: bool| {
            let mut s = session(SCENARIO);
            let mut items = vec![json!({"role": "user", "content": "List the files."})];
            let mut previous: Option<String> = None;
            let mut pending: Vec<Value> = Vec::new();
            for turn in 0..3 {
                let mut body = json!({"model": "gpt", "instructions": "sys", "tools": tools});
                if stateful && previous.is_some() {
                    body["previous_response_id"] = json!(previous);
                    body["input"] = json!(pending);
                } else {
                    body["input"] = json!(items);
                }
                let r = s.handle(Api::Responses, body.to_string().as_bytes());
                assert_eq!(r.status, 200, "turn {turn}: {:?}", r.body);
                let v = json_of(&r).clone();
                previous = v["id"].as_str().map(str::to_owned);
                let output = v["output"].as_array().cloned().unwrap_or_default();
                items.extend(output.iter().cloned());
                pending.clear();
                for call in output.iter().filter(|o| o["type"] == "function_call") {
                    let result = json!({"type": "function_call_output", "call_id": call["call_id"], "output": "Error: no"});
                    items.push(result.clone());
                    pending.push(result);
                }
            }
            assert_eq!(s.conversations().len(), 1, "one conversation");
            lines(&s, 0)
        };
        let full = run(false);
        assert!(
            full.iter()
                .any(|l| l.contains("model_request call=3 messages=6")),
            "{full:?}"
        );
        assert_eq!(run(true), full);
        // An id no answer had is refused as OpenAI refuses it.
        let mut s = session(SCENARIO);
        let body = json!({"model": "gpt", "previous_response_id": "resp_nope", "input": [
            {"type": "function_call_output", "call_id": "call_x", "output": "ok"}]});
        let r = s.handle(Api::Responses, body.to_string().as_bytes());
        assert_eq!(r.status, 404);
        assert_eq!(json_of(&r)["error"]["code"], "previous_response_not_found");
    }

    #[test]
    fn smolagents_text_protocol_is_read_as_calls_and_results() {
        let mut s = session(SCENARIO);
        let r = s.handle(Api::ChatCompletions, &openai(0, "", None, true));
        let id = json_of(&r)["choices"][0]["message"]["tool_calls"][0]["id"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let mut turn = |result: &str, id: &str| {
            let body = json!({"model": "gpt", "tools": tool(), "messages": [
                {"role": "system", "content": [{"type": "text", "text": "sys"}]},
                {"role": "user", "content": [{"type": "text", "text": "List the files."}]},
                {"role": "assistant", "content": [{"type": "text", "text": format!(
                    "Calling tools:\n[{{'id': '{id}', 'type': 'function', 'function': {{'name': 'exec', 'arguments': {{}}}}}}]")}]},
                {"role": "user", "content": [{"type": "text", "text": result}]},
            ]});
            s.handle(Api::ChatCompletions, body.to_string().as_bytes())
        };
        turn(
            &format!("Call id: {id}\nError:\nmissing 'command'\nNow let's retry"),
            &id,
        );
        let l = lines(&s, 0);
        assert_eq!(s.conversations().len(), 1);
        assert!(
            l.iter()
                .any(|l| l.contains("notice source=serve") && l.contains("as text")),
            "{l:?}"
        );
        assert!(
            l.iter().any(|l| l.contains("tool_call_end call_0 exec failed error=\"Error:\\nmissing 'command'\\nNow let's retry\"")),
            "{l:?}"
        );
        assert!(!l.iter().any(|l| l.contains("nudge")), "{l:?}");
    }

    #[test]
    fn an_unreadable_text_protocol_is_said_not_counted_as_nudges() {
        let mut s = session(SCENARIO);
        s.handle(Api::ChatCompletions, &openai(0, "", None, true));
        let body = json!({"model": "gpt", "tools": tool(), "messages": [
            {"role": "user", "content": "List the files."},
            {"role": "assistant", "content": "<tool>exec {}</tool>"},
            {"role": "user", "content": "<result>Error: no</result>"},
        ]});
        s.handle(Api::ChatCompletions, body.to_string().as_bytes());
        let l = lines(&s, 0);
        assert!(l.iter().any(|l| l.contains("a text protocol")), "{l:?}");
        assert!(
            !l.iter()
                .any(|l| l.contains(" intervention ") || l.contains("message_injected")),
            "{l:?}"
        );
    }

    #[test]
    fn steps_folded_into_the_task_message_continue_their_conversation() {
        let mut s = session(SCENARIO);
        let ask = |text: &str| {
            json!({"model": "gpt", "tools": tool(), "tool_choice": "required", "messages": [
                {"role": "system", "content": "sys"},
                {"role": "user", "content": [{"type": "text", "text": text}]},
            ]})
            .to_string()
            .into_bytes()
        };
        let task = "New task:\nList the files.";
        let error = "\nError:\nArgument command is required\nNow let's retry.\n";
        // Two agents at once, each folding its failed step into its task message.
        for _ in 0..2 {
            s.handle(Api::ChatCompletions, &ask(task));
        }
        for _ in 0..2 {
            s.handle(Api::ChatCompletions, &ask(&format!("{task}{error}")));
        }
        s.handle(Api::ChatCompletions, &ask(&format!("{task}{error}{error}")));
        let sizes: Vec<usize> = s.conversations().iter().map(|c| c.requests.len()).collect();
        assert_eq!(sizes, [3, 2]);
        let l = lines(&s, 0);
        assert_eq!(
            l.iter()
                .filter(|l| l.contains("exec failed") && l.ends_with("rule=\"error-prefix\""))
                .count(),
            2,
            "{l:?}"
        );
        assert!(!l.iter().any(|l| l.contains(" intervention ")), "{l:?}");
    }
}
