//! Calls and results an agent carries as text rather than the wire's own messages
//! (smolagents' shape, see the module doc of [`super`], "Text protocols"): read back as the
//! calls we served and their results, so the conversation and its trace are the wire's.

use super::*;

/// Read calls and results an agent carries as text (smolagents' shape, see the module doc)
/// as the wire's own: the assistant message gets the calls, the observation becomes one tool
/// result per call. Whether the request held any.
pub(super) fn read_text_protocol(request: &mut WireRequest) -> bool {
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
pub(super) fn first_user(request: &WireRequest) -> String {
    request
        .messages
        .iter()
        .find(|m| m.role == Role::User)
        .map(|m| m.content.clone())
        .unwrap_or_default()
}

/// Where each step folded into a message begins: a line `Error:` or `Observation:` (and the
/// text before the first one, if any, is not a step).
pub(super) fn step_starts(text: &str) -> Vec<usize> {
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
pub(super) fn steps_from_start(text: &str) -> bool {
    step_starts(text)
        .first()
        .is_some_and(|&s| text[..s].trim().is_empty())
}

/// An agent that keeps no assistant messages and folds each step's outcome into its first
/// user message (smolagents when a call fails before it runs: `New task: …\nError:\n…`): the
/// request is rewritten as the steps it stands for, each our answer's calls (as we served
/// them) and its outcome as their result. Whether it was.
pub(super) fn unmerge_steps(c: &Conversation, request: &mut WireRequest) -> bool {
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
pub(super) fn restore_calls(c: &Conversation, request: &mut WireRequest) -> bool {
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
pub(super) fn calls_in_text(list: &str) -> Vec<ToolCall> {
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
