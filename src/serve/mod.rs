//! Black-box agents: a scenario's scripted model served as an OpenAI Chat Completions and
//! Anthropic Messages endpoint (`harness serve`), and a command run against it and judged by
//! what it sent (`harness exec`).
//!
//! This module owns the serving state ([`Session`]): which conversation a request belongs to,
//! the scripted mock answering the real request (so the reactive rules see the tools the agent
//! offered and the messages it appended), and what was answered. It is pure: bytes in, a reply
//! out. The wire formats are `provider/`'s (serving direction); the HTTP server is `http.rs`;
//! the trace inferred from the exchanges is `infer.rs` (pure); the commands and the process
//! they run are `cli.rs`.
//!
//! **Conversations.** A request whose messages hold no assistant message starts a conversation
//! (an agent's first call), unless the latest conversation with the same first user message
//! ended on a provider fault (then it is the retry). Any other request continues the latest
//! conversation whose first user message is the same; one we have not seen starts a
//! conversation of its own. Each conversation is one scenario run: its own mock, its own
//! iteration cap (the case's `max_iterations`), its own inferred trace.
//!
//! **Failed tool results.** Anthropic's `tool_result` blocks say so (`is_error`). OpenAI's tool
//! messages cannot: by convention a tool message whose text starts with `error` (any case) is a
//! failed call, for the reactive rules (`last_tool_failed`) and the trace alike.

pub mod cli;
pub mod http;
pub mod infer;

use crate::llm::stream::{self, Chunk};
use crate::llm::{
    Finish, MockModel, Model, ModelError, ModelRequest, ModelResponse, ProviderFault, Purpose, Role,
};
use crate::provider::{Provider, SseEvent, WireRequest};
use crate::scenario::Case;
use serde_json::{Value, json};

pub use cli::{ExecArgs, ServeArgs};

/// Largest request body the server reads (larger ones are answered 413).
pub const MAX_REQUEST_BYTES: usize = 8 * 1024 * 1024;

/// What the server answered one request with.
#[derive(Debug, Clone)]
pub enum Reply {
    /// The scripted answer, whole (a streamed one counts its chunks in `chunks`).
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
pub struct Exchange {
    /// The wire format it came in.
    pub provider: Provider,
    /// The request as read.
    pub request: WireRequest,
    /// The loop iteration it belongs to (a retry after a fault keeps the iteration).
    pub iteration: u32,
    /// What was answered.
    pub reply: Reply,
}

/// The requests of one agent run.
#[derive(Debug, Clone)]
pub struct Conversation {
    key: String,
    /// Its exchanges, in arrival order.
    pub exchanges: Vec<Exchange>,
}

impl Conversation {
    fn ended(&self) -> bool {
        matches!(
            self.exchanges.last().map(|e| &e.reply),
            Some(Reply::Cap | Reply::NoAnswer(_))
        )
    }

    fn after_fault(&self) -> bool {
        matches!(
            self.exchanges.last().map(|e| &e.reply),
            Some(Reply::Fault(_))
        )
    }
}

/// An HTTP answer: status, extra headers, and a JSON body or an event stream.
#[derive(Debug, Clone)]
pub struct Served {
    /// HTTP status.
    pub status: u16,
    /// Headers besides the content type.
    pub headers: Vec<(&'static str, String)>,
    /// The body.
    pub body: Body,
}

/// A served body.
#[derive(Debug, Clone)]
pub enum Body {
    /// `application/json`.
    Json(Value),
    /// `text/event-stream`.
    Events(Vec<SseEvent>),
}

/// The serving state of one scenario case.
#[derive(Debug)]
pub struct Session {
    case: Case,
    cap: u32,
    conversations: Vec<Conversation>,
}

impl Session {
    /// Serve `case`'s scripted model, each conversation capped at its `max_iterations`.
    pub fn new(case: Case) -> Self {
        let cap = case.config.max_iterations;
        Self {
            case,
            cap,
            conversations: Vec::new(),
        }
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

    /// Answer one request body in `provider`'s format.
    pub fn handle(&mut self, provider: Provider, body: &[u8]) -> Served {
        let value: Value = match serde_json::from_slice(body) {
            Ok(v) => v,
            Err(e) => return refusal(provider, &format!("the request body is not JSON: {e}")),
        };
        let mut request = match provider.parse_request(&value) {
            Ok(r) => r,
            Err(e) => return refusal(provider, &format!("harness serve: {e}")),
        };
        normalise(provider, &value, &mut request);
        let Some(at) = self.conversation_for(&request) else {
            return refusal(
                provider,
                "harness serve: this conversation has ended (iteration cap or script exhausted)",
            );
        };
        let conversation = &mut self.conversations[at];
        let retry = conversation.after_fault();
        let done = conversation
            .exchanges
            .iter()
            .map(|e| e.iteration)
            .max()
            .unwrap_or(0);
        let iteration = if retry { done.max(1) } else { done + 1 };
        let (reply, served) = if iteration > self.cap {
            let message = format!(
                "harness serve: the scenario's iteration cap ({}) is reached; no more answers in this conversation",
                self.cap
            );
            (Reply::Cap, refusal(provider, &message))
        } else {
            answer(&self.case, conversation, provider, &request, iteration)
        };
        conversation.exchanges.push(Exchange {
            provider,
            request,
            iteration,
            reply,
        });
        served
    }

    /// The index of the conversation a request belongs to (a new one if need be); `None` when
    /// it continues a conversation that has ended.
    fn conversation_for(&mut self, request: &WireRequest) -> Option<usize> {
        let key = request
            .messages
            .iter()
            .find(|m| m.role == Role::User)
            .map(|m| m.content.clone())
            .unwrap_or_default();
        let fresh = !request.messages.iter().any(|m| m.role == Role::Assistant);
        let latest = self.conversations.iter().rposition(|c| c.key == key);
        match latest {
            Some(i) if !fresh || self.conversations[i].after_fault() => {
                (!self.conversations[i].ended()).then_some(i)
            }
            _ => {
                self.conversations.push(Conversation {
                    key,
                    exchanges: Vec::new(),
                });
                Some(self.conversations.len() - 1)
            }
        }
    }
}

/// What the reactive rules and the trace read that the wire formats leave implicit: OpenAI's
/// `tool_choice: "none"` withholds the tools, and its failed tool results are marked by
/// convention (see the module doc).
fn normalise(provider: Provider, body: &Value, request: &mut WireRequest) {
    if provider == Provider::Openai {
        if body.get("tool_choice").and_then(Value::as_str) == Some("none") {
            request.tools.clear();
        }
        for m in &mut request.messages {
            if m.role == Role::Tool {
                m.failed = looks_failed(&m.content);
            }
        }
    }
}

/// Does an OpenAI tool result read as a failure (`Error: …`, `error …`)?
pub fn looks_failed(content: &str) -> bool {
    content
        .trim_start()
        .get(..5)
        .is_some_and(|p| p.eq_ignore_ascii_case("error"))
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

/// Answer from the script: a fresh mock is fed the conversation's earlier requests (so rule
/// counts, turns and call ids continue), then this one.
fn answer(
    case: &Case,
    conversation: &Conversation,
    provider: Provider,
    request: &WireRequest,
    iteration: u32,
) -> (Reply, Served) {
    let mut mock = MockModel::new(&case.scenario.model);
    let mut call = 0;
    for e in &conversation.exchanges {
        if matches!(e.reply, Reply::Answer(_) | Reply::Fault(_)) {
            call += 1;
            let _ = mock.respond(&model_request(&e.request, e.iteration, call));
        }
    }
    let model = request.options.model.clone();
    match mock.respond(&model_request(request, iteration, call + 1)) {
        Ok(r) => match served_answer(r, request.options.stream) {
            Ok((whole, chunks)) => {
                let body = match chunks {
                    Some(chunks) => {
                        Body::Events(provider.render_stream(&chunks, whole.usage, &model))
                    }
                    None => Body::Json(provider.render_body(&whole, &model)),
                };
                (
                    Reply::Answer(whole),
                    Served {
                        status: 200,
                        headers: Vec::new(),
                        body,
                    },
                )
            }
            Err(message) => (
                Reply::NoAnswer(message.clone()),
                refusal(provider, &message),
            ),
        },
        Err(ModelError::Provider(f)) => {
            let (status, body) = provider.render_fault(f.kind, &f.message);
            let mut headers = Vec::new();
            if let Some(ms) = f.retry_after_ms {
                headers.push(("retry-after-ms", ms.to_string()));
                headers.push(("retry-after", ms.div_ceil(1000).to_string()));
            }
            (
                Reply::Fault(f),
                Served {
                    status,
                    headers,
                    body: Body::Json(body),
                },
            )
        }
        Err(ModelError::Script(e)) => {
            let message = format!("harness serve: {e}");
            (
                Reply::NoAnswer(message.clone()),
                refusal(provider, &message),
            )
        }
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

/// A 400 answer the SDKs do not retry, with `message` in the provider's error shape.
fn refusal(provider: Provider, message: &str) -> Served {
    let body = match provider {
        Provider::Openai => {
            json!({"error": {"message": message, "type": "invalid_request_error"}})
        }
        Provider::Anthropic => {
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}})
        }
    };
    Served {
        status: 400,
        headers: Vec::new(),
        body: Body::Json(body),
    }
}

