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
    Finish, Model, ModelError, ModelRequest, ModelResponse, ProviderFault, Purpose, Role,
};
use crate::mock::{MockModel, MockState};
use crate::provider::{Provider, SseEvent, WireRequest};
use crate::scenario::Case;
use serde_json::{Value, json};

pub use cli::{ExecArgs, ServeArgs};

/// Largest request body the server reads (larger ones are answered 413): the one figure of
/// [`crate::limits::MAX_REQUEST_BODY_BYTES`].
pub const MAX_REQUEST_BYTES: usize = crate::limits::MAX_REQUEST_BODY_BYTES as usize;

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
    /// Where its mock is in the script, kept between requests: an answer costs one step of
    /// the script, whatever the conversation's length.
    mock: MockState,
    /// Model calls answered so far (answers and faults), as the engine counts `call`.
    calls: u32,
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
                    mock: MockState::default(),
                    calls: 0,
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

/// Answer from the script where the conversation's mock left it (so rule counts, turns and
/// call ids continue), and keep where it is now.
fn answer(
    case: &Case,
    conversation: &mut Conversation,
    provider: Provider,
    request: &WireRequest,
    iteration: u32,
) -> (Reply, Served) {
    let mut mock = MockModel::resume(&case.scenario.model, std::mem::take(&mut conversation.mock));
    let answered = mock.respond(&model_request(request, iteration, conversation.calls + 1));
    conversation.mock = mock.into_state();
    if matches!(answered, Ok(_) | Err(ModelError::Provider(_))) {
        conversation.calls += 1;
    }
    let model = request.options.model.clone();
    match answered {
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

#[cfg(test)]
mod tests {
    use super::infer::{Context, infer};
    use super::*;
    use crate::scenario::SourceFormat;
    use crate::trace::render_event;

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

    fn json_of(s: &Served) -> &Value {
        match &s.body {
            Body::Json(v) => v,
            Body::Events(_) => panic!("expected a JSON body"),
        }
    }

    fn lines(s: &Session, i: usize) -> Vec<String> {
        let ctx = Context {
            profile: "exec",
            cap: s.cap(),
            tool_latency: [("exec".to_owned(), 200)].into(),
        };
        infer(&ctx, &s.conversations()[i].exchanges)
            .iter()
            .map(|e| format!("{} {}", e.t_ms, render_event(&e.event)))
            .collect()
    }

    #[test]
    fn the_rules_see_the_real_request_and_the_trace_shows_the_nudge() {
        let mut s = session(SCENARIO);
        let r = s.handle(Provider::Openai, &openai(0, "", None, true));
        assert_eq!(r.status, 200);
        let call = &json_of(&r)["choices"][0]["message"]["tool_calls"][0];
        assert_eq!(call["function"]["name"], "exec");
        let r = s.handle(
            Provider::Openai,
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
                "1200 tool_call_end call_0 exec failed error=\"Error: no\" latency=200ms",
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
        assert!(looks_failed("  ERROR: boom") && looks_failed("error"));
        assert!(!looks_failed("no errors") && !looks_failed("Err"));
        let mut s = session(SCENARIO);
        s.handle(Provider::Openai, &openai(0, "", None, true));
        // Tools withheld and the last result failed: the second rule answers.
        let r = s.handle(Provider::Openai, &openai(1, "Error: no", None, false));
        assert_eq!(
            json_of(&r)["choices"][0]["message"]["content"],
            "Failed, no tools."
        );
        let l = lines(&s, 0);
        assert!(l.contains(&"1200 intervention policy=agent stage=2 action=strip_tools".into()));
        assert!(l.contains(&"1200 model_request call=2 messages=4 tools=[] stripped".into()));
        // The same text as a success does not count as failed for the rule.
        let mut s = session(SCENARIO);
        s.handle(Provider::Openai, &openai(0, "", None, true));
        let r = s.handle(Provider::Openai, &openai(1, "fine", None, false));
        assert!(json_of(&r)["choices"][0]["message"]["tool_calls"].is_array());
    }

    #[test]
    fn unanswered_calls_are_skipped_and_a_dropped_answer_still_shows_the_nudge() {
        let mut s = session(SCENARIO);
        s.handle(Provider::Openai, &openai(0, "", None, true));
        // The agent keeps our call but sends no result, only a note of its own.
        let mut body: Value = serde_json::from_slice(&openai(1, "x", Some("Stop looping."), true))
            .unwrap_or_default();
        if let Some(m) = body["messages"].as_array_mut() {
            m.remove(3);
        }
        s.handle(Provider::Openai, body.to_string().as_bytes());
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
        s.handle(Provider::Openai, &openai(0, "", None, true));
        s.handle(Provider::Openai, &openai(1, "Error: x", None, true));
        s.handle(Provider::Openai, &openai(1, "Error: x", Some("LOOP"), true));
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
                s.handle(Provider::Openai, &openai(turns, "x", None, true))
                    .status,
                200
            );
        }
        let r = s.handle(Provider::Openai, &openai(3, "x", None, true));
        assert_eq!(r.status, 400);
        let msg = json_of(&r)["error"]["message"].as_str().unwrap_or_default();
        assert!(msg.contains("iteration cap (3)"), "{msg}");
        // Further calls in that conversation are refused and not recorded.
        assert_eq!(
            s.handle(Provider::Openai, &openai(4, "x", None, true))
                .status,
            400
        );
        assert_eq!(s.conversations()[0].exchanges.len(), 4);
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
        s.handle(Provider::Openai, &openai(0, "", None, true));
        // A fresh message list starts another run, even with the same prompt.
        s.handle(Provider::Openai, &openai(0, "", None, true));
        assert_eq!(s.conversations().len(), 2);
        // A continuation goes to the latest conversation with that prompt.
        s.handle(Provider::Openai, &openai(1, "x", None, true));
        assert_eq!(s.conversations()[1].exchanges.len(), 2);
        // Another prompt's continuation we never saw starts its own.
        let other = String::from_utf8(openai(1, "x", None, true))
            .unwrap_or_default()
            .replace("List the files.", "Something else.");
        s.handle(Provider::Openai, other.as_bytes());
        assert_eq!(s.conversations().len(), 3);
        // Bad input is refused with the provider's error shape.
        let r = s.handle(Provider::Anthropic, b"{not json");
        assert_eq!(r.status, 400);
        assert_eq!(json_of(&r)["type"], "error");
        assert_eq!(s.conversations().len(), 3);
    }

    #[test]
    fn faults_are_served_and_the_retry_stays_in_its_iteration() {
        let text = SCENARIO.replace(
            "[[model.rules]]\nwhen = { any_message_contains = \"LOOP\" }",
            "[[model.rules]]\ntimes = 1\nreply = { fault = { kind = \"rate_limit\", retry_after_ms = 1500 } }\n\n[[model.rules]]\nwhen = { any_message_contains = \"LOOP\" }",
        );
        let mut s = session(&text);
        let r = s.handle(Provider::Openai, &openai(0, "", None, true));
        assert_eq!(r.status, 429);
        assert!(r.headers.contains(&("retry-after-ms", "1500".to_owned())));
        assert!(r.headers.contains(&("retry-after", "2".to_owned())));
        let r = s.handle(Provider::Openai, &openai(0, "", None, true));
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
            Provider::Anthropic,
            &body(json!([{"role": "user", "content": "List the files."}])),
        );
        let Body::Events(events) = &r.body else {
            panic!("expected a stream")
        };
        let back = Provider::Anthropic.parse_stream(events).expect("parses");
        let folded = stream::assemble(&back.stream).expect("folds");
        assert_eq!(folded.tool_calls[0].name, "exec");
        assert_eq!(folded.finish, Some(Finish::ToolUse));
        s.handle(
            Provider::Anthropic,
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
            l.contains(&"1200 tool_call_end call_0 exec failed error=\"no\" latency=200ms".into())
        );
        assert!(
            !l.iter().any(|l| l.contains("intervention")),
            "a tool result is no nudge: {l:?}"
        );
        assert_eq!(s.conversations().len(), 1);
    }
}
