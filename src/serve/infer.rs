//! The trace of a black-box agent run, inferred from the requests it sent and what the server
//! answered, as events of the engine's own [`Event`] enum, so goldens, expectations and metrics
//! read it unchanged. Pure: served requests in, events out.
//!
//! What each request shows, in the engine's order:
//!
//! - the results of the previous answer's tool calls (the tool messages after the last
//!   assistant message, paired with the calls in order): `tool_call_start` and
//!   `tool_call_end` (failed when the result says so, see the module doc of `serve`); a call
//!   with no result is `tool_call_skipped`, and so are the calls of the last answer when the
//!   agent went away without their results (its own turn limit, the cap);
//! - tools withheld (the request offers fewer tools than the first one did):
//!   `intervention policy=agent stage=2 action=strip_tools`, once per stretch of stripped
//!   requests; the requests are `model_request … stripped`;
//! - user or system messages the agent appended that are not tool results (nudges, warnings),
//!   text added to the end of the task before the first answer (Gemini CLI) or to the end of
//!   a system prompt after it (clients that fold system messages into one prompt):
//!   `intervention policy=agent stage=1 action=nudge` and `message_injected source=agent`;
//! - `iteration N` (not for a retry after a provider fault), `model_request`, then what was
//!   served: `model_response` or `provider_error`.
//!
//! The outcome: `response` when the agent stopped after a text answer, `max_iterations` when
//! it called past the cap and was refused, `stopped` when it went away after asking for tools,
//! `error` when the script had no answer or the agent gave up after a provider fault. An agent
//! killed at its timeout neither went away nor gave up: a conversation the kill ended other
//! than after an answer ends in `error`, saying so ([`Context::killed`]).
//!
//! Virtual time: each answer takes the script's latency, each tool call the latency of the
//! scenario's tool of that name (0 for tools the scenario does not declare) — never the wall
//! clock, so the trace is the same on every run of a deterministic agent.

use super::{Api, Reply, ServedRequest};
use crate::llm::{Arguments, Message, Role};
use crate::scenario::OutcomeKind;
use crate::trace::{Event, TimedEvent};
use serde_json::Value;
use std::collections::BTreeMap;

/// How a conversation ends whose last answer's calls could not be read and whose results never
/// came: dropping such calls and taking the answer as final looks on the wire as stopping does.
pub const UNREADABLE_CALLS_END: &str = "the agent stopped after an answer whose calls could not be read (arguments cut off or not a JSON object), without sending back their results: it dropped them and took the answer as final, or stopped there (the wire does not tell which)";

/// Could an agent run a call with these arguments as OpenAI's APIs carry them (text): a JSON
/// object, or nothing at all (which SDKs read as `{}`)?
fn readable(args: &Arguments) -> bool {
    match args {
        Arguments::Parsed(v) => v.is_object(),
        Arguments::Raw(s) => {
            s.trim().is_empty() || serde_json::from_str::<Value>(s).is_ok_and(|v| v.is_object())
        }
    }
}

/// The policy name of what the agent did on its own.
pub const AGENT: &str = crate::vocabulary::AGENT;

/// The source of what the server notes about how it read the agent.
pub const SERVE: &str = "serve";

/// Why a call of the agent's last answer is `tool_call_skipped`: the run ended before its
/// result came back (the agent's own turn limit, the cap), so whether it ran cannot be seen.
pub const UNSENT: &str = crate::vocabulary::RESULT_NEVER_SENT;

/// What the trace needs besides the served requests.
#[derive(Debug, Clone)]
pub struct Context<'a> {
    /// The profile the trace names (the run's label).
    pub profile: &'a str,
    /// The iteration cap.
    pub cap: u32,
    /// Virtual latency of each tool the scenario declares.
    pub tool_latency: BTreeMap<String, u64>,
    /// The agent was killed at its timeout: a conversation's end is the kill's, not the
    /// agent's.
    pub killed: bool,
}

struct Clock {
    t: u64,
    events: Vec<TimedEvent>,
}

impl Clock {
    fn push(&mut self, event: Event) {
        self.events.push(TimedEvent {
            t_ms: self.t,
            event,
        });
    }
}

/// The inferred trace of one conversation.
pub fn infer(ctx: &Context<'_>, requests: &[ServedRequest]) -> Vec<TimedEvent> {
    let mut c = Clock {
        t: 0,
        events: Vec::new(),
    };
    let Some(first) = requests.first() else {
        return c.events;
    };
    let offered = names(&first.request.tools);
    c.push(Event::RunStart {
        profile: ctx.profile.to_owned(),
        model: first.request.options.model.clone(),
        max_iterations: ctx.cap,
        tools: offered.clone(),
    });
    let mut stripped_before = false;
    let mut text_noted = false;
    let mut unread_noted = false;
    let mut unoffered_noted = false;
    let mut faults = 0u32;
    let mut call = 0u32;
    let mut prev: Option<&ServedRequest> = None;
    // The agent's names of the scenario's tools (the portable ones it bound).
    let mut agent_names: Vec<(&str, &str)> = Vec::new();
    for e in requests {
        agent_names.extend(
            e.bound
                .iter()
                .filter_map(|b| Some((b.declared.as_str(), b.offered.as_deref()?))),
        );
        for b in &e.bound {
            c.push(Event::Notice {
                source: SERVE.to_owned(),
                text: match &b.offered {
                    Some(o) => crate::vocabulary::stands_for(&b.declared, o, &b.rule),
                    None => format!(
                        "the scenario's tool `{}` (bind = {}) fits none of the tools the agent offers ({}): its calls go out under its own name",
                        b.declared,
                        b.rule,
                        e.request.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>().join(", ")
                    ),
                },
            });
        }
        if let Some(tool) = &e.answer_tool {
            c.push(Event::Notice {
                source: SERVE.to_owned(),
                text: format!(
                    "the scenario's answer goes out as a call of the agent's answer tool `{tool}` (the agent ends its runs through it)"
                ),
            });
        }
        if let Some(json) = &e.in_form {
            c.push(Event::Notice {
                source: SERVE.to_owned(),
                text: match e.shape_chosen {
                    true => format!("{}: {json}", crate::vocabulary::SHAPE_CHOSEN),
                    false => format!(
                        "the scenario's answer goes out as the JSON the request asks for: {json}"
                    ),
                },
            });
        }
        let msgs = &e.request.messages;
        let tools = names(&e.request.tools);
        let stripped = !offered.is_empty() && tools.len() < offered.len();
        let retry = prev.is_some_and(|p| matches!(p.reply, Reply::Fault(_)));
        // What the request appended after our previous answer: results, nudges, withheld tools.
        'read: {
            let Some(p) = prev.filter(|_| !retry) else {
                break 'read;
            };
            let start = appended_from(msgs, p.request.messages.len());
            let calls = match &p.reply {
                Reply::Answer(r) => r.tool_calls.as_slice(),
                _ => &[],
            };
            let from = start.min(msgs.len());
            let appended = &msgs[from..];
            // Our calls came back as an assistant message without calls that names them (a
            // tool's name or a call id), and no result followed: the agent speaks a text
            // protocol we do not read. One that names none replaced our answer (Gemini CLI's
            // loop detection puts "[The previous response was interrupted…]" in its place):
            // its calls never ran, and what the agent added speaks up.
            let ids = p.call_ids();
            let names_a_call = |text: &str| {
                calls.iter().any(|c| {
                    let offered = agent_names
                        .iter()
                        .find(|(d, _)| *d == c.name)
                        .map(|(_, o)| *o);
                    text.contains(c.name.as_str()) || offered.is_some_and(|o| text.contains(o))
                }) || ids.iter().any(|id| !id.is_empty() && text.contains(id))
            };
            let unread = !calls.is_empty()
                && msgs[..from]
                    .iter()
                    .rev()
                    .find(|m| m.role == Role::Assistant)
                    .is_some_and(|m| m.tool_calls.is_empty() && names_a_call(&m.content))
                && !appended.iter().any(|m| m.role == Role::Tool);
            if unread {
                if !unread_noted {
                    unread_noted = true;
                    c.push(Event::Notice {
                        source: SERVE.to_owned(),
                        text: "the agent sent our tool calls back as text and their results as messages in a shape harness does not read (a text protocol): its calls are not shown as run, and its messages are not counted as nudges".to_owned(),
                    });
                }
                break 'read;
            }
            if e.text_protocol && !text_noted {
                text_noted = true;
                c.push(Event::Notice {
                    source: SERVE.to_owned(),
                    text: "the agent carries its tool calls and their results as text (smolagents' `Calling tools:`, `Observation:` and `Error:` steps); they are read as its calls and results".to_owned(),
                });
            }
            // Each appended result with the call id it names (the request's results follow
            // its tool messages one for one); empty where the API carries none.
            let before = msgs[..from].iter().filter(|m| m.role == Role::Tool).count();
            let results: Vec<(usize, &Message, &str)> = appended
                .iter()
                .enumerate()
                .filter(|(_, m)| m.role == Role::Tool)
                .enumerate()
                .map(|(k, (i, m))| {
                    let id = e
                        .request
                        .results
                        .get(before + k)
                        .map_or("", |r| r.id.as_str());
                    (from + i, m, id)
                })
                .collect();
            let paired = pair_results(&p.call_ids(), &results);
            for (i, call) in calls.iter().enumerate() {
                let Some(&(at, result, _)) = paired[i].map(|k| &results[k]) else {
                    c.push(Event::ToolCallSkipped {
                        id: call.id.clone(),
                        name: call.name.clone(),
                        reason: crate::vocabulary::RESULT_NOT_SENT.to_owned(),
                    });
                    continue;
                };
                c.push(Event::ToolCallStart {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    args: args_value(&call.arguments).into(),
                    args_unknown: false,
                });
                let latency_ms = ctx.tool_latency.get(&call.name).copied().unwrap_or(0);
                c.t += latency_ms;
                let ok = !result.failed;
                c.push(Event::ToolCallEnd {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    ok,
                    output: ok.then(|| result.content.clone()),
                    error: (!ok).then(|| result.content.clone()),
                    latency_ms,
                    rule: e.rules.get(at).cloned().flatten(),
                });
            }
            let answered: Vec<usize> = paired.iter().flatten().copied().collect();
            for (_, extra, _) in results
                .iter()
                .enumerate()
                .filter(|(k, _)| !answered.contains(k))
                .map(|(_, r)| r)
            {
                c.push(Event::Notice {
                    source: AGENT.to_owned(),
                    text: format!("a tool result answering no call: {}", extra.content),
                });
            }
            if stripped && !stripped_before {
                c.push(Event::Intervention {
                    policy: AGENT.to_owned(),
                    stage: 2,
                    action: "strip_tools".to_owned(),
                    tool: None,
                });
            }
            let grown = crate::llm::added_to_task(msgs, &p.request.messages)
                .map(|t| (Role::User, t))
                .or_else(|| {
                    crate::llm::added_to_system(msgs, &p.request.messages)
                        .map(|t| (Role::System, t))
                });
            for (role, text) in appended
                .iter()
                .filter(|m| matches!(m.role, Role::User | Role::System))
                .map(|m| (m.role, m.content.as_str()))
                .chain(grown)
            {
                c.push(Event::Intervention {
                    policy: AGENT.to_owned(),
                    stage: 1,
                    action: "nudge".to_owned(),
                    tool: None,
                });
                c.push(Event::MessageInjected {
                    source: AGENT.to_owned(),
                    role,
                    text: text.to_owned(),
                });
            }
        }
        stripped_before = stripped;
        // The scenario's model calls tools the agent never offered: the run cannot show how
        // the agent handles them.
        if let Reply::Answer(r) = &e.reply {
            if tools.is_empty() && !r.tool_calls.is_empty() && !unoffered_noted {
                unoffered_noted = true;
                c.push(Event::Notice {
                    source: SERVE.to_owned(),
                    text: format!(
                        "the agent offered no tools, and the scenario's model called `{}`: an agent that takes its calls from text (a ReAct prompt) cannot follow a scenario scripted with native tool calls",
                        r.tool_calls[0].name
                    ),
                });
            }
        }
        prev = Some(e);
        if !push_request(
            &mut c,
            ctx,
            e,
            retry,
            &mut call,
            &mut faults,
            stripped,
            tools,
        ) {
            return c.events;
        }
    }
    let last = requests.last().map_or(0, |e| e.iteration);
    let (outcome, text, detail) = match prev.map(|e| &e.reply) {
        // A cut stream that brought nothing whole (Gemini's API sends a call only whole, so a
        // call cut in the middle never reached the agent): no answer to end on.
        Some(Reply::Answer(r))
            if prev.is_some_and(|e| e.cut)
                && r.tool_calls.is_empty()
                && r.text.as_deref().is_none_or(str::is_empty) =>
        {
            (
                OutcomeKind::Stopped,
                None,
                Some(
                    "the last answer's stream was cut before anything in it was whole, and the agent stopped there without asking again"
                        .to_owned(),
                ),
            )
        }
        Some(Reply::Answer(r)) if r.tool_calls.is_empty() => {
            (OutcomeKind::Response, r.text.clone(), None)
        }
        // The agent's own cap is the scenario's: it ran every iteration there was.
        Some(Reply::Answer(_)) if last >= ctx.cap => (
            OutcomeKind::MaxIterations,
            None,
            Some(format!(
                "iteration cap reached ({}): the agent stopped there with its last calls unanswered",
                ctx.cap
            )),
        ),
        // Its stream was cut: the agent may never have had the calls whole (an SDK that
        // takes a stream's end for the answer's, as Gemini's do, has none).
        Some(Reply::Answer(_)) if prev.is_some_and(|e| e.cut) => (
            OutcomeKind::Stopped,
            None,
            Some(
                "the last answer's stream was cut before it ended, and the agent stopped there without asking again"
                    .to_owned(),
            ),
        ),
        // Calls no agent can run, as the wire carried them (OpenAI's APIs send arguments as
        // text: cut off, or not a JSON object): one that drops them and takes what is left of
        // the answer as final ends here as one that stops does. (Anthropic's API carries an
        // object: such arguments went out as `{}`, which an agent can run; Gemini's withholds
        // such a call, and the answer reads as the text it had, above.)
        Some(Reply::Answer(r))
            if prev.is_some_and(|e| matches!(e.api, Api::ChatCompletions | Api::Responses))
                && r.tool_calls.iter().all(|c| !readable(&c.arguments)) =>
        {
            (OutcomeKind::Stopped, None, Some(UNREADABLE_CALLS_END.to_owned()))
        }
        Some(Reply::Answer(_)) => (
            OutcomeKind::Stopped,
            None,
            Some("the agent stopped without sending back the results of its tool calls".to_owned()),
        ),
        Some(Reply::Fault(f)) => (
            OutcomeKind::Error,
            None,
            Some(format!("the agent gave up after {}", f.describe())),
        ),
        Some(Reply::Cap | Reply::NoAnswer(_)) | None => return c.events,
    };
    // Killed at its timeout after anything but an answer: the agent neither stopped nor gave
    // up; the kill ended the conversation.
    let (outcome, detail) = match (ctx.killed, outcome) {
        (true, OutcomeKind::Stopped | OutcomeKind::MaxIterations | OutcomeKind::Error) => {
            let after = match prev.map(|e| &e.reply) {
                Some(Reply::Fault(f)) => format!("not having asked again after {}", f.describe()),
                Some(Reply::Answer(r))
                    if r.tool_calls.is_empty() || prev.is_some_and(|e| e.cut) =>
                {
                    "not having asked again after the last answer's stream was cut".to_owned()
                }
                _ => "with the results of its tool calls unsent".to_owned(),
            };
            (
                OutcomeKind::Error,
                Some(format!("the agent was killed at its timeout, {after}")),
            )
        }
        (_, outcome) => (outcome, detail),
    };
    let unsent = if ctx.killed {
        crate::vocabulary::RESULT_UNSENT_AT_KILL
    } else {
        UNSENT
    };
    // The calls of the last answer, whose results never came: the agent's last iteration ran
    // (or dropped) them unseen; the trace keeps them, so that iteration is counted.
    if let Some(Reply::Answer(r)) = prev.map(|e| &e.reply) {
        for call in &r.tool_calls {
            c.push(Event::ToolCallSkipped {
                id: call.id.clone(),
                name: call.name.clone(),
                reason: unsent.to_owned(),
            });
        }
    }
    c.push(Event::Outcome {
        outcome,
        iterations: last,
        text,
        detail,
    });
    c.events
}

/// The request's own events: the iteration (not for a retry), the model request, and what was
/// served. `false` when the reply ended the conversation (its outcome is pushed).
#[expect(
    clippy::too_many_arguments,
    reason = "the inference loop's running state, passed as is"
)]
fn push_request(
    c: &mut Clock,
    ctx: &Context<'_>,
    e: &ServedRequest,
    retry: bool,
    call: &mut u32,
    faults: &mut u32,
    stripped: bool,
    tools: Vec<String>,
) -> bool {
    if let Some(d) = &e.divergence {
        c.push(Event::Diverged {
            request: d.request,
            at: d.at.clone(),
            reading: d.reading.clone(),
        });
    }
    if let Reply::Cap = e.reply {
        c.push(Event::Outcome {
            outcome: OutcomeKind::MaxIterations,
            iterations: ctx.cap,
            text: None,
            detail: Some(crate::vocabulary::refused_past_cap(ctx.cap)),
        });
        return false;
    }
    if !retry {
        c.push(Event::Iteration { n: e.iteration });
    }
    *call += 1;
    c.push(Event::ModelRequest {
        purpose: crate::llm::Purpose::Turn,
        call: *call,
        messages: e.request.messages.len(),
        tools: tools.into(),
        force_text: false,
        stripped,
    });
    match &e.reply {
        Reply::Answer(r) => {
            *faults = 0;
            c.t += r.latency_ms;
            c.push(Event::model_response(r));
            for (id, why) in &e.doubts {
                c.push(Event::Notice {
                    source: SERVE.to_owned(),
                    text: crate::vocabulary::doubted_call(id, why),
                });
            }
        }
        Reply::Fault(f) => {
            *faults += 1;
            c.t += f.latency_ms;
            c.push(Event::provider_error(f, *faults, f.retry_after_ms));
        }
        Reply::NoAnswer(why) => {
            c.push(Event::Outcome {
                outcome: OutcomeKind::Error,
                iterations: e.iteration,
                text: None,
                detail: Some(why.clone()),
            });
            return false;
        }
        Reply::Cap => {}
    }
    true
}

/// Where the messages this request added begin: after the last assistant message (our answer,
/// as the agent appended it), and not before the end of the previous request when the list
/// grew (an agent that dropped our answer still appended after what it sent before). A
/// request with no assistant message that did not grow sent its start again (a retry after
/// an answer it could not use): it added no message.
fn appended_from(messages: &[Message], previous_len: usize) -> usize {
    let after_answer = messages
        .iter()
        .rposition(|m| m.role == Role::Assistant)
        .map_or(0, |i| i + 1);
    if messages.len() > previous_len {
        after_answer.max(previous_len)
    } else if after_answer == 0 {
        messages.len()
    } else {
        after_answer
    }
}

/// The tools offered, by name, sorted: a replay matches the tools offered as a set, so the
/// trace shows them as one (the same agent offering them in another order gives the same
/// golden).
fn names(tools: &[crate::llm::ToolSpec]) -> Vec<String> {
    let mut names: Vec<String> = tools.iter().map(|t| t.name.clone()).collect();
    names.sort();
    names
}

fn args_value(a: &Arguments) -> Value {
    match a {
        Arguments::Parsed(v) => Value::clone(v),
        Arguments::Raw(s) => serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone())),
    }
}

/// Which result answers each call (`call_ids`, in call order): the result naming the call's
/// id, as every API carries one (`tool_call_id`, `tool_use_id`, `call_id`), so results sent
/// back in another order than the calls stay with their own calls; by position only among the
/// results that name no id (a text protocol, an id the agent dropped) and the calls no result
/// names, then among those naming an id no call has (an agent that made its own ids). Each
/// result answers at most one call.
pub(super) fn pair_results(
    call_ids: &[&str],
    results: &[(usize, &Message, &str)],
) -> Vec<Option<usize>> {
    let mut used = vec![false; results.len()];
    let mut paired: Vec<Option<usize>> = call_ids
        .iter()
        .map(|id| {
            if id.is_empty() {
                return None;
            }
            let k = results
                .iter()
                .enumerate()
                .position(|(k, r)| !used[k] && r.2 == *id)?;
            used[k] = true;
            Some(k)
        })
        .collect();
    let unnamed = (0..results.len()).filter(|k| results[*k].2.is_empty());
    let strangers = (0..results.len())
        .filter(|k| !results[*k].2.is_empty() && !call_ids.contains(&results[*k].2));
    let mut unnamed = unnamed.chain(strangers);
    for slot in paired.iter_mut().filter(|s| s.is_none()) {
        match unnamed.by_ref().find(|k| !used[*k]) {
            Some(k) => {
                used[k] = true;
                *slot = Some(k);
            }
            None => break,
        }
    }
    paired
}
