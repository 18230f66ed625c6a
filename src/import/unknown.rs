//! What a trace does not know of a run's calls: arguments an importer's format did not record
//! (carried through the reader as [`args_not_recorded`], written as `{}` marked
//! `args_unknown`), and answers that asked for tools the trace did not record
//! (`calls_unknown`).

use super::parse_args;
use crate::trace::{Event, TimedEvent};
use serde_json::Value;

/// What an importer gives as a call's arguments when its format recorded the call but not
/// its arguments (an OpenTelemetry span with content capture off): a value no recorded
/// arguments parse to. [`TraceBuilder`] writes such a call's arguments as `{}` marked
/// `args_unknown`, never as this value.
pub fn args_not_recorded() -> Value {
    Value::String(ARGS_NOT_RECORDED.to_owned())
}

const ARGS_NOT_RECORDED: &str = "\u{0}harness: arguments not recorded";

/// Is `args` [`args_not_recorded`]?
pub fn is_not_recorded(args: &Value) -> bool {
    args.as_str() == Some(ARGS_NOT_RECORDED)
}

/// What of a run's calls its trace does not know: how many calls were recorded without their
/// arguments (`args_unknown`), and how many answers asked for tools the trace did not record
/// (`calls_unknown`) though the model was asked again after them (a last answer's calls never
/// ran, and no trace shows them).
pub fn unknowns(events: &[TimedEvent]) -> (usize, usize) {
    let args = events
        .iter()
        .filter(|e| {
            matches!(
                e.event,
                Event::ToolCallStart {
                    args_unknown: true,
                    ..
                }
            )
        })
        .count();
    (args, crate::trace::unseen_answers(events))
}

/// A call's recorded arguments as [`parse_args`] reads them, or [`args_not_recorded`] when the
/// record has no such field.
pub fn recorded_args(raw: Option<&Value>) -> Value {
    match raw {
        None => args_not_recorded(),
        Some(_) => parse_args(raw),
    }
}

/// What a scenario of the run would have to make up: calls recorded without their arguments,
/// in an answer or run, and answers that asked for tools the trace did not record, the last
/// one included (a scenario scripts every answer).
pub fn scripted_unknowns(events: &[TimedEvent]) -> (usize, usize) {
    let started: std::collections::BTreeSet<&str> = events
        .iter()
        .filter_map(|e| match &e.event {
            Event::ToolCallStart { id, .. } => Some(id.as_str()),
            _ => None,
        })
        .collect();
    let mut args = 0;
    let mut calls = 0;
    for e in events {
        match &e.event {
            Event::ToolCallStart { args_unknown, .. } => args += usize::from(*args_unknown),
            Event::ModelResponse {
                calls: named,
                calls_unknown,
                ..
            } => {
                // Named without arguments and never run: only the answer says so.
                args += named
                    .iter()
                    .filter(|c| c.args_unknown && !started.contains(c.id.as_str()))
                    .count();
                calls += usize::from(*calls_unknown);
            }
            _ => {}
        }
    }
    (args, calls)
}
