//! Conversation continuation: which conversation of a session a request continues (see the
//! module doc of [`super`], "Conversations"), and the records of each conversation — its
//! requests, where its mock is in the script, how the scenario's portable tools stand for the
//! agent's, where it is in its recording.

use super::*;

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
    /// The scripted text went out as this JSON, in the form the request asked for.
    pub in_form: Option<String>,
    /// That form named no shape (JSON of any kind): the shape of `in_form` is harness's.
    pub shape_chosen: bool,
    /// Its answer was a stream the script cut (the connection dropped before it ended).
    pub cut: bool,
    /// The ids the answer's tool calls went out with, in call order, when they differ from
    /// the reply's own (a scripted answer's calls get ids in the API's shape); empty when the
    /// reply's ids are the wire's (a recorded answer). The agent's results name these.
    pub wire_ids: Vec<String>,
    /// The API withheld the answer's calls (Gemini's `MALFORMED_FUNCTION_CALL`: a call whose
    /// arguments are no object goes out as none): the agent got nothing it can use.
    pub withheld: bool,
    /// The answer's generated valid calls harness cannot vouch for, with why (the agent's
    /// schema says what harness does not check): (call id, why).
    pub doubts: Vec<(String, String)>,
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
    pub(super) key: String,
    /// Its requests, in arrival order.
    pub requests: Vec<ServedRequest>,
    /// Where its mock is in the script, kept between requests: an answer costs one step of
    /// the script, whatever the conversation's length.
    pub(super) mock: MockState,
    /// Model calls answered so far (answers and faults), as the engine counts `call`.
    pub(super) calls: u32,
    /// The first user message of its latest request, as sent.
    pub(super) last_user: String,
    /// Where it is in its recording, when a cassette answers it.
    pub replayed: Option<CassettePosition>,
    /// It went to the live provider from a divergence on (`--record-mode new_episodes`).
    pub(super) live: bool,
    /// What the provider stores of each Responses answer served (by its `resp_…` id): the
    /// request it answered (an index into `requests`) and its output items, which a request
    /// naming it as `previous_response_id` continues.
    pub(super) stored: BTreeMap<String, (usize, Value)>,
    /// How the scenario's portable tools stand for the agent's (see [`Binding`]), once a
    /// request offered tools.
    pub(super) binding: Option<Vec<Binding>>,
    /// Why it is a side request beside the loop (a title, a summary, a subagent), if it is
    /// one ([`side`]): answered by the side turn, never the case's outcome.
    pub side: Option<String>,
    /// What each answer it was given said, as [`said`] reads it, in order: the history an
    /// agent sends back when it continues it.
    pub(super) said: Vec<String>,
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
    pub(super) fn thread(&self) -> ConversationView<'_> {
        ConversationView {
            key: &self.key,
            last_user: &self.last_user,
            last: self.requests.last().map_or(LastAnswer::Nothing, |e| {
                if e.cut {
                    LastAnswer::Cut
                } else if e.withheld {
                    LastAnswer::Unusable
                } else {
                    LastAnswer::of(&e.reply)
                }
            }),
            latest: false,
            messages: self.requests.last().map_or(0, |e| e.request.messages.len()),
            said: &self.said,
        }
    }

    pub(super) fn ended(&self) -> bool {
        self.thread().last == LastAnswer::Ended
    }

    pub(super) fn after_fault(&self) -> bool {
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
    /// With nothing the agent can use, for a reason the API states: cut by the output limit
    /// before any text or call, or its calls withheld (Gemini's `MAX_TOKENS` and
    /// `MALFORMED_FUNCTION_CALL`). The next request may send the same again.
    Unusable,
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
                if r.tool_calls.is_empty()
                    && r.text.as_deref().is_none_or(str::is_empty)
                    && r.finish == crate::llm::Finish::Length =>
            {
                Self::Unusable
            }
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
    /// What each answer it was given said ([`said`]), in order.
    pub said: &'a [String],
}

/// What an answer said, as a history that echoes it shows it whatever the agent kept of its
/// ids and names: its calls' arguments (canonical JSON) when it called tools, else its text,
/// trimmed. Empty for an answer with neither (an agent may drop it from its history).
pub fn said(text: &str, calls: &[crate::llm::ToolCall]) -> String {
    if calls.is_empty() {
        return text.trim().to_owned();
    }
    calls
        .iter()
        .map(|c| match &c.arguments {
            crate::llm::Arguments::Parsed(v) => v.canonical().to_owned(),
            crate::llm::Arguments::Raw(r) => serde_json::from_str(r)
                .map_or_else(|_| r.trim().to_owned(), |v| crate::json::canonical(&v)),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// What a reply said ([`said`]), when it was an answer that said something.
pub fn said_by(reply: &Reply) -> Option<String> {
    let Reply::Answer(r) = reply else {
        return None;
    };
    Some(said(r.text.as_deref().unwrap_or_default(), &r.tool_calls)).filter(|s| !s.is_empty())
}

/// Of the conversations `candidates` names, the one whose answers the request's history
/// echoes: all of them in order first, then the most of them from the start, then one whose last
/// answer was cut or unusable (the request is that one sent again), then the latest.
/// Agents that send no ids of ours back (a Gemini client that writes its own function
/// responses) are told apart this way when they share a task.
fn echoed_history(
    threads: &[ConversationView<'_>],
    request: &WireRequest,
    candidates: impl Iterator<Item = usize>,
) -> Option<usize> {
    let history: Vec<String> = request
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .map(|m| said(&m.content, &m.tool_calls))
        .filter(|s| !s.is_empty())
        .collect();
    candidates.max_by_key(|&i| {
        let said = threads[i].said;
        let common = said
            .iter()
            .zip(&history)
            .take_while(|(a, b)| a == b)
            .count();
        // Between runs whose answers it echoes alike, one whose last answer the agent could not
        // take (a cut stream, an unusable answer) waits for that request sent again.
        let again = matches!(threads[i].last, LastAnswer::Cut | LastAnswer::Unusable);
        (
            said.len() == history.len() && common == said.len(),
            common,
            again,
            i,
        )
    })
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
    // Conversations are keyed by their first user message: the one thing every retry,
    // rewrite and continuation of a run keeps (the system prompt may be templated, later
    // messages grow), and what orders conversations in the outputs.
    let key = first_user(request);
    // The ids this request echoes, the most telling first: a Responses `previous_response_id`
    // names the answer it continues outright; then the latest assistant message's call ids
    // and the latest tool results. Every id we serve is unique in the session, so the first
    // one we know decides, however the agent reordered or trimmed its history (parallel
    // agents share a first user message but never an id).
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
    // A history with assistant messages but none of our ids: the agent rewrote them (its own
    // ids, a summary, a framework that re-renders messages) or never had any (Gemini function
    // calls need none). It still continues a run with its first user message — never a new
    // conversation, which would restart the script and count one run as two: the one whose
    // answers its history echoes, else the latest.
    if request.messages.iter().any(|m| m.role == Role::Assistant) {
        let same_task = threads
            .iter()
            .enumerate()
            .filter(|(_, t)| t.key == key)
            .map(|(i, _)| i);
        return echoed_history(threads, request, same_task);
    }
    // From here the request holds no assistant message: a first request, unless it is one of
    // the retries below, each of which resends a start the session has already answered. The
    // checks go from the most certain (a fault the SDK says it retries) to the least (a
    // message grown by one text-protocol step); the first that holds decides.
    // The SDK's retry count says whether it retries; 0 is also an application's own retry
    // after its SDK gave up (inspect_ai's), taken as one when the fault was the session's
    // latest answer.
    let may_retry = hints.retry_count.is_none_or(|n| n > 0);
    threads
        .iter()
        .position(|t| t.key == key && t.last == LastAnswer::Fault && (may_retry || t.latest))
        .or_else(|| {
            // The same request sent again right after an answer the agent could not take:
            // a cut stream (Codex CLI reconnects, Claude Code asks again whole; the cut call
            // never ran), or one the API said was unusable (Gemini CLI after `MAX_TOKENS`
            // with nothing, or `MALFORMED_FUNCTION_CALL`). The conversation goes on.
            threads.iter().position(|t| {
                t.key == key
                    && matches!(t.last, LastAnswer::Cut | LastAnswer::Unusable)
                    && t.latest
                    && t.messages == request.messages.len()
            })
        })
        .or_else(|| {
            // An agent that drops an empty answer from its history and asks again with a
            // prompt: after the first user message, as a user or a system message
            // (pydantic-ai), or added to the end of that message (Gemini CLI adds its nudge
            // to the last user turn, here the first). It continues the oldest conversation
            // with that first message whose last answer was empty.
            let emptied = |t: &ConversationView<'_>| {
                matches!(t.last, LastAnswer::Empty | LastAnswer::Unusable)
            };
            let asks_again = request
                .messages
                .iter()
                .position(|m| m.role == Role::User)
                .is_some_and(|first| request.messages.len() > first + 1);
            asks_again
                .then(|| threads.iter().position(|t| t.key == key && emptied(t)))
                .flatten()
                .or_else(|| {
                    threads.iter().position(|t| {
                        emptied(t)
                            && !t.key.is_empty()
                            && key.len() > t.key.len()
                            && key.starts_with(t.key)
                    })
                })
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
