//! ToolBench answers: `{win, answer_generation: {train_messages, finish_type}, tree, …}`.
//!
//! The run is the last list of `train_messages` (each list is the conversation so far, so the
//! last one holds the whole chosen path; the abandoned branches of `tree` are not replayed).
//! Calls use the legacy `function_call`; results are `{role: "function", name, content}` whose
//! content is a JSON string `{"error": "...", "response": "..."}`: the call failed when `error`
//! is not empty. Success: `win`. Termination: `finish_type` (`give_answer`,
//! `give_up_and_restart`). Run id: the file path. A file whose `train_messages` is empty holds
//! no run (some keep only the search tree): it is reported, not scored as an empty run.

use super::openai::{Message, fill};
use super::{Reader, Root, Run, TraceBuilder, typed};
use crate::diagnostic::Diagnostic;
use crate::scenario::OutcomeKind;
use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Deserialize)]
struct Doc {
    #[serde(default)]
    win: Option<bool>,
    answer_generation: Generation,
}

#[derive(Debug, Deserialize)]
struct Generation {
    #[serde(default)]
    train_messages: Vec<Vec<Message>>,
    #[serde(default)]
    finish_type: Option<String>,
}

/// ToolBench's convention: the result's JSON `error` field is not empty.
pub fn failed(content: &str) -> bool {
    serde_json::from_str::<Value>(content)
        .ok()
        .and_then(|v| v.get("error").cloned())
        .is_some_and(|e| match e {
            Value::Null => false,
            Value::String(s) => !s.trim().is_empty(),
            _ => true,
        })
}

/// The ToolBench reader: an answer object (`{win, answer_generation}`).
pub const READER: Reader = Reader {
    name: "toolbench",
    root: Root::Object("an object"),
    detect: |doc| doc.get("answer_generation").is_some() && doc.is_object(),
    convert: |doc, rel, text| convert(doc, rel, text).map(|r| r.into_iter().collect()),
    whole_file: None,
};

/// Convert a parsed ToolBench file: its run, or none when the file keeps no chosen path
/// (`train_messages` empty; its search tree alone cannot say which branch was the run), which
/// the importer reports as a file with no run rather than a run without calls.
pub fn convert(doc: Value, rel: &str, text: &str) -> Result<Option<Run>, Diagnostic> {
    let d: Doc = typed(doc, text, READER.name)?;
    let mut b = TraceBuilder::new(READER.name, "gpt-3.5-turbo");
    let Some(last) = d.answer_generation.train_messages.last() else {
        return Ok(None);
    };
    fill(&mut b, last, &failed);
    Ok(Some(Run {
        id: rel.to_owned(),
        source: READER.name.to_owned(),
        success: d.win,
        termination: d.answer_generation.finish_type,
        events: b.finish(OutcomeKind::Response, None),
    }))
}
