//! OpenHands trajectories: the event stream OpenHands saves (`save_trajectory_path`, the
//! `trajectory` of the UI's export), a JSON array of events, or an evaluation output row
//! `{instance_id, history: [events…], …}`.
//!
//! An event is an action (`action`: `message`, `run`, `read`, `edit`, `run_ipython`, `browse`,
//! `think`, `finish`, …, with `args`) or an observation (`observation`: `run`, `read`, `edit`,
//! `error`, …, with `content`, `extras`, and `cause`, the id of the action it answers), each with
//! a `source` (`user`, `agent`, `environment`). A user `message` is a user turn; an agent
//! `message` is a text answer; `finish` ends the run (its `final_thought` is the last answer);
//! every other agent action is a tool call named by `tool_call_metadata.function_name` (else
//! the action), with the action's `args` less the bookkeeping fields, and its `thought` as the
//! response's text. Actions of one model response (`tool_call_metadata.model_response.id`) are
//! one batch. An observation answers its `cause`; it failed when it is an `error`
//! observation or a command's `exit_code` is not 0. System, recall and agent-state events are
//! not the agent's behaviour and are left out; the last agent state is the termination
//! (`finished`, `error`, `stopped`, …). A response's tokens are its `usage` in
//! `tool_call_metadata.model_response`, else the event's `llm_metrics.token_usages` entry for
//! it. The format records no success label. Run id: the file path (`#instance_id` for an
//! evaluation row).

use super::{Reader, Root, Run, TraceBuilder, located};
use crate::diagnostic::Diagnostic;
use crate::scenario::OutcomeKind;
use serde_json::{Map, Value};

/// Fields of an action's `args` that are the runtime's bookkeeping, not the call's arguments.
const BOOKKEEPING: [&str; 8] = [
    "thought",
    "impl_source",
    "security_risk",
    "confirmation_state",
    "hidden",
    "blocking",
    "is_input",
    "image_urls",
];

/// Actions that are neither the agent's calls nor its words.
const NOT_CALLS: [&str; 5] = [
    "system",
    "recall",
    "change_agent_state",
    "null",
    "condensation",
];

/// Is this the shape of an OpenHands event (a `source` and an `action` or `observation`)?
pub fn is_event(v: &Value) -> bool {
    v.get("source").is_some() && (v.get("action").is_some() || v.get("observation").is_some())
}

/// The OpenHands reader: an event stream (a JSON array of events, or an evaluation row whose
/// `history` is one).
pub const READER: Reader = Reader {
    name: "openhands",
    root: Root::Any,
    detect: |doc| match doc {
        Value::Object(o) => o
            .get("history")
            .and_then(Value::as_array)
            .and_then(|h| h.first())
            .is_some_and(is_event),
        Value::Array(items) => items.first().is_some_and(is_event),
        _ => false,
    },
    convert,
    whole_file: None,
};

/// Convert a parsed OpenHands document (an array of events, or an object with `history`).
pub fn convert(doc: Value, rel: &str, _text: &str) -> Result<Vec<Run>, Diagnostic> {
    let (events, id) = match doc {
        Value::Array(events) => (events, rel.to_owned()),
        Value::Object(mut o) => {
            let id = match o.get("instance_id").and_then(Value::as_str) {
                Some(i) => format!("{rel}#{i}"),
                None => rel.to_owned(),
            };
            match o.remove("history") {
                Some(Value::Array(events)) => (events, id),
                _ => {
                    return Err(located(
                        1,
                        1,
                        "an OpenHands object holds its events in `history`, and this one has none"
                            .to_owned(),
                        "give the trajectory (a JSON array of events) or an evaluation row with `history`",
                    ));
                }
            }
        }
        _ => {
            return Err(located(
                1,
                1,
                "an OpenHands trajectory is an array of events".to_owned(),
                "check `--format`, or leave it out to detect the format",
            ));
        }
    };
    if events.is_empty() {
        return Ok(Vec::new());
    }
    let model = events
        .iter()
        .find_map(|e| e.pointer("/tool_call_metadata/model_response/model"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let mut b = TraceBuilder::new(READER.name, model);
    // The calls of one model response (`model_response.id`) and the results that came back
    // while it was still going: OpenHands writes each call's observation before the next call
    // of the same response, and the trace wants the response first, then its results.
    let mut batch = Batch::default();
    let mut state: Option<String> = None;
    let mut finished = false;
    for e in &events {
        let source = e.get("source").and_then(Value::as_str).unwrap_or("");
        if let Some(action) = e.get("action").and_then(Value::as_str) {
            let args = e.get("args").and_then(Value::as_object);
            let text = |key: &str| {
                args.and_then(|a| a.get(key))
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned()
            };
            if NOT_CALLS.contains(&action) {
                continue;
            }
            match (source, action) {
                ("user", "message") => {
                    batch.flush(&mut b);
                    b.user(&text("content"));
                }
                ("user", _) | ("environment", _) => {}
                (_, "message") => {
                    batch.flush(&mut b);
                    b.response(&text("content"), Vec::new(), tokens_of(e));
                }
                (_, "finish") => {
                    batch.flush(&mut b);
                    let last = text("final_thought");
                    let last = if last.is_empty() {
                        text("thought")
                    } else {
                        last
                    };
                    b.response(&last, Vec::new(), tokens_of(e));
                    finished = true;
                }
                (_, action) => {
                    let key = e
                        .pointer("/tool_call_metadata/model_response/id")
                        .and_then(Value::as_str)
                        .map(str::to_owned);
                    if key.is_none() || key != batch.key {
                        batch.flush(&mut b);
                        batch.thought = text("thought");
                        batch.tokens = tokens_of(e);
                    }
                    batch.key = key;
                    let name = e
                        .pointer("/tool_call_metadata/function_name")
                        .and_then(Value::as_str)
                        .unwrap_or(action)
                        .to_owned();
                    let call_args: Map<String, Value> = args
                        .map(|a| {
                            a.iter()
                                .filter(|(k, _)| !BOOKKEEPING.contains(&k.as_str()))
                                .map(|(k, v)| (k.clone(), v.clone()))
                                .collect()
                        })
                        .unwrap_or_default();
                    batch
                        .calls
                        .push((event_id(e), name, Value::Object(call_args)));
                }
            }
        } else if let Some(observation) = e.get("observation").and_then(Value::as_str) {
            if observation == "agent_state_changed" {
                state = e
                    .pointer("/extras/agent_state")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .or(state);
                continue;
            }
            let Some(cause) = e.get("cause").map(id_text) else {
                continue;
            };
            let content = e.get("content").and_then(Value::as_str).unwrap_or("");
            let exit = e
                .pointer("/extras/metadata/exit_code")
                .or_else(|| e.pointer("/extras/exit_code"))
                .and_then(Value::as_i64);
            let failed = observation == "error" || exit.is_some_and(|c| c != 0);
            if batch.calls.iter().any(|(id, _, _)| *id == cause) {
                batch.results.push((cause, content.to_owned(), failed));
            } else {
                batch.flush(&mut b);
                b.result(&cause, content, failed);
            }
        }
    }
    batch.flush(&mut b);
    let outcome = if finished {
        OutcomeKind::Response
    } else {
        OutcomeKind::Stopped
    };
    Ok(vec![Run {
        id,
        source: READER.name.to_owned(),
        success: None,
        termination: state.or_else(|| finished.then(|| "finished".to_owned())),
        events: b.finish(outcome, None),
    }])
}

/// One model response's calls, waiting for the response to end.
#[derive(Default)]
struct Batch {
    key: Option<String>,
    thought: String,
    /// The response's tokens (input, output), from its first action.
    tokens: (u64, u64),
    /// (event id, name, args).
    calls: Vec<(String, String, Value)>,
    /// (cause, content, failed), in arrival order.
    results: Vec<(String, String, bool)>,
}

impl Batch {
    /// The response with its calls, then the results that came back for them.
    fn flush(&mut self, b: &mut TraceBuilder) {
        if !self.calls.is_empty() {
            b.response(&self.thought, std::mem::take(&mut self.calls), self.tokens);
        }
        self.tokens = (0, 0);
        for (cause, content, failed) in self.results.drain(..) {
            b.result(&cause, &content, failed);
        }
        self.thought.clear();
        self.key = None;
    }
}

/// The tokens (input, output) of the model response behind an agent event, where OpenHands
/// records them: the response's own `usage` in `tool_call_metadata.model_response`, else the
/// event's `llm_metrics.token_usages` entry for that response (by `response_id`, else the
/// latest one, which is the response that made the event). (0, 0) when it records none.
fn tokens_of(e: &Value) -> (u64, u64) {
    let count = |v: &Value, key: &str| v.get(key).and_then(Value::as_u64).unwrap_or(0);
    if let Some(usage) = e.pointer("/tool_call_metadata/model_response/usage") {
        return (
            count(usage, "prompt_tokens"),
            count(usage, "completion_tokens"),
        );
    }
    let Some(usages) = e
        .pointer("/llm_metrics/token_usages")
        .and_then(Value::as_array)
    else {
        return (0, 0);
    };
    let response = e
        .pointer("/tool_call_metadata/model_response/id")
        .and_then(Value::as_str);
    let entry = usages
        .iter()
        .rev()
        .find(|u| response.is_some() && u.get("response_id").and_then(Value::as_str) == response)
        .or_else(|| usages.last());
    entry.map_or((0, 0), |u| {
        (count(u, "prompt_tokens"), count(u, "completion_tokens"))
    })
}

fn event_id(e: &Value) -> String {
    e.get("id").map(id_text).unwrap_or_default()
}

/// An event id as text (OpenHands writes numbers; some exports strings).
fn id_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::convert;
    use crate::detector::View;
    use serde_json::json;

    #[test]
    fn token_usage_is_read_where_openhands_records_it() {
        let doc = json!([
            {"id": 1, "source": "user", "action": "message", "args": {"content": "Fix the test"}},
            // Two calls of one response: its usage counts once.
            {"id": 2, "source": "agent", "action": "run", "args": {"command": "pytest"},
             "tool_call_metadata": {"function_name": "execute_bash", "model_response": {"id": "r1", "usage": {"prompt_tokens": 3475, "completion_tokens": 95}}}},
            {"id": 3, "source": "agent", "action": "read", "args": {"path": "/a.py"},
             "tool_call_metadata": {"function_name": "str_replace_editor", "model_response": {"id": "r1", "usage": {"prompt_tokens": 3475, "completion_tokens": 95}}}},
            {"id": 4, "source": "agent", "observation": "run", "cause": 2, "content": "1 failed", "extras": {}},
            {"id": 5, "source": "agent", "observation": "read", "cause": 3, "content": "x", "extras": {}},
            // A text answer whose usage is in the event's metrics.
            {"id": 6, "source": "agent", "action": "message", "args": {"content": "Which test?"},
             "llm_metrics": {"token_usages": [
                 {"prompt_tokens": 3475, "completion_tokens": 95, "response_id": "r1"},
                 {"prompt_tokens": 3720, "completion_tokens": 12, "response_id": "r2"}]}},
            {"id": 7, "source": "agent", "action": "finish", "args": {"final_thought": "Done"}}
        ]);
        let runs = convert(doc, "t.json", "").unwrap();
        let tokens: Vec<(u64, u64)> = runs[0]
            .events
            .iter()
            .filter_map(|e| match &e.event {
                crate::trace::Event::ModelResponse {
                    input_tokens,
                    output_tokens,
                    ..
                } => Some((*input_tokens, *output_tokens)),
                _ => None,
            })
            .collect();
        assert_eq!(tokens, [(3475, 95), (3720, 12), (0, 0)]);
    }

    #[test]
    fn actions_are_calls_observations_results_and_errors_fail() {
        let doc = json!([
            {"id": 0, "source": "agent", "action": "system", "args": {"content": "You are OpenHands"}},
            {"id": 1, "source": "user", "action": "message", "args": {"content": "Fix the test"}},
            {"id": 2, "source": "agent", "action": "run", "args": {"command": "pytest", "thought": "Run the tests", "blocking": false},
             "tool_call_metadata": {"function_name": "execute_bash", "model_response": {"id": "r1", "model": "gpt-4o"}}},
            {"id": 3, "source": "agent", "observation": "run", "cause": 2, "content": "1 failed", "extras": {"command": "pytest", "metadata": {"exit_code": 1}}},
            {"id": 4, "source": "agent", "action": "read", "args": {"path": "/a.py"},
             "tool_call_metadata": {"function_name": "str_replace_editor", "model_response": {"id": "r2"}}},
            {"id": 5, "source": "agent", "observation": "read", "cause": 4, "content": "def f(): pass", "extras": {}},
            {"id": 6, "source": "environment", "observation": "agent_state_changed", "content": "", "extras": {"agent_state": "finished"}},
            {"id": 7, "source": "agent", "action": "finish", "args": {"final_thought": "Done"}}
        ]);
        let runs = convert(doc, "t.json", "").unwrap();
        assert_eq!(runs.len(), 1);
        let v = View::from_events(&runs[0].events);
        assert_eq!(v.calls.len(), 2);
        assert_eq!(v.calls[0].name, "execute_bash");
        assert_eq!(v.calls[0].args, json!({"command": "pytest"}));
        assert!(v.calls[0].failed, "exit code 1");
        assert_eq!(v.calls[0].thought, "Run the tests");
        assert!(!v.calls[1].failed);
        assert_eq!(runs[0].termination.as_deref(), Some("finished"));
        assert_eq!(runs[0].success, None);
    }
}
