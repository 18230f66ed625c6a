//! Gemini API conversations: `contents` arrays of `{role: "user" | "model", parts}`, as
//! google-genai's `chat.get_history()` gives them, a request body's (`{contents,
//! systemInstruction?}`), or a run object `{id?, contents, success?, reward?, termination?}`;
//! a file is one of these, or a list of run objects (in JSON lines, one run object a line).
//!
//! The parts are read as the Gemini API reads them ([`crate::provider::gemini`]): text,
//! `functionCall` (a call; its `id`, or `call_N`), `functionResponse` (the result of the call
//! its `id` names, else of the first waiting call of its name); a response whose `error` key is
//! set failed, as the API documents it, and otherwise one whose text starts with `Error`.
//! Thoughts are no answer. Contents carry no token counts: they are unknown in the trace.

use super::{Reader, Root, Run, TraceBuilder, error_prefixed, located};
use crate::diagnostic::Diagnostic;
use crate::llm::{Arguments, Role};
use crate::scenario::OutcomeKind;
use serde_json::Value;

/// The source name of its runs.
pub const SOURCE: &str = "gemini";

/// Is this a list of Gemini contents (each with `parts`, roles `user` or `model`)?
fn contents(v: &Value) -> Option<&Vec<Value>> {
    let list = v.as_array()?;
    let first = list.first()?;
    let is_content = |c: &Value| {
        c.get("parts").is_some_and(Value::is_array)
            && c.get("role")
                .and_then(Value::as_str)
                .is_none_or(|r| matches!(r, "user" | "model" | "function" | "tool"))
    };
    (is_content(first) && list.iter().all(is_content)).then_some(list)
}

/// The contents of a run object or request body.
fn contents_of(v: &Value) -> Option<&Vec<Value>> {
    contents(v.get("contents")?)
}

/// The Gemini reader: before the message-list formats, whose lists have no `parts`.
pub const READER: Reader = Reader {
    name: SOURCE,
    root: Root::Any,
    detect: |doc| match doc {
        Value::Array(items) => {
            contents(doc).is_some() || items.first().and_then(contents_of).is_some()
        }
        Value::Object(_) => contents_of(doc).is_some(),
        _ => false,
    },
    convert,
    whole_file: None,
};

/// Convert a parsed Gemini document.
pub fn convert(doc: Value, rel: &str, _text: &str) -> Result<Vec<Run>, Diagnostic> {
    let bad = |why: String| {
        located(
            1,
            1,
            format!("not a Gemini conversation: {why}"),
            "a Gemini transcript is a `contents` array of `{role, parts}`, a request body or a run object holding one, or a list of run objects",
        )
    };
    if contents(&doc).is_some() {
        return Ok(vec![
            run(&serde_json::json!({"contents": doc}), rel, None).map_err(bad)?,
        ]);
    }
    match &doc {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, item)| run(item, rel, Some(i)).map_err(|e| bad(format!("run {i}: {e}"))))
            .collect(),
        _ => Ok(vec![run(&doc, rel, None).map_err(bad)?]),
    }
}

/// One run from a request body or run object.
fn run(doc: &Value, rel: &str, idx: Option<usize>) -> Result<Run, String> {
    let request = crate::provider::gemini::parse_request(doc).map_err(|e| e.to_string())?;
    let mut b = TraceBuilder::new(
        SOURCE,
        doc.get("model").and_then(Value::as_str).unwrap_or(""),
    );
    let mut results = request.results.iter();
    let mut generated = 0usize;
    for m in &request.messages {
        match m.role {
            Role::User => b.user(&m.content),
            Role::Assistant => {
                let calls = m
                    .tool_calls
                    .iter()
                    .map(|c| {
                        let id = if c.id.is_empty() {
                            generated += 1;
                            format!("call_{generated}")
                        } else {
                            c.id.clone()
                        };
                        let args = match &c.arguments {
                            Arguments::Parsed(v) => Value::clone(v),
                            Arguments::Raw(r) => Value::String(r.clone()),
                        };
                        (id, c.name.clone(), args)
                    })
                    .collect();
                b.response_untallied(&m.content, calls);
            }
            Role::Tool => {
                let named = results
                    .next()
                    .map(|r| r.id.as_str())
                    .filter(|id| !id.is_empty());
                let id = named
                    .filter(|id| b.is_open(id))
                    .map(str::to_owned)
                    .or_else(|| b.pending_id(None));
                if let Some(id) = id {
                    let failed = m.failed || error_prefixed(&m.content);
                    b.result(&id, &m.content, failed);
                }
            }
            Role::System => {}
        }
    }
    let suffix = match (doc.get("id"), idx) {
        (Some(Value::String(s)), _) => Some(s.clone()),
        (Some(v), _) => Some(crate::json::compact(v)),
        (None, Some(i)) => Some(i.to_string()),
        (None, None) => None,
    };
    let success = doc.get("success").and_then(Value::as_bool).or_else(|| {
        doc.get("reward")
            .and_then(Value::as_f64)
            .map(|r| (r - 1.0).abs() < 1e-9)
    });
    Ok(Run {
        id: suffix.map_or_else(|| rel.to_owned(), |s| format!("{rel}#{s}")),
        source: SOURCE.to_owned(),
        success,
        termination: doc
            .get("termination")
            .and_then(Value::as_str)
            .map(str::to_owned),
        events: b.finish(OutcomeKind::Response, None),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Event;
    use serde_json::json;

    #[test]
    fn a_history_reads_as_its_calls_results_and_answers() {
        let history = json!([
            {"role": "user", "parts": [{"text": "List the files."}]},
            {"role": "model", "parts": [{"functionCall": {"name": "exec", "args": {}}},
                                        {"functionCall": {"id": "c2", "name": "exec", "args": {"command": "ls"}}}]},
            {"role": "user", "parts": [
                {"functionResponse": {"id": "c2", "name": "exec", "response": {"output": "a.txt"}}},
                {"functionResponse": {"name": "exec", "response": {"error": "missing 'command'"}}}]},
            {"role": "model", "parts": [{"text": "thinking", "thought": true}, {"text": "a.txt"}]}
        ]);
        assert!((READER.detect)(&history));
        let runs = convert(history, "h.json", "").expect("reads");
        assert_eq!(runs.len(), 1);
        let ends: Vec<(String, bool)> = runs[0]
            .events
            .iter()
            .filter_map(|e| match &e.event {
                Event::ToolCallEnd { id, ok, .. } => Some((id.clone(), *ok)),
                _ => None,
            })
            .collect();
        assert_eq!(
            ends,
            [("c2".to_owned(), true), ("call_1".to_owned(), false)]
        );
        let unknown = runs[0].events.iter().all(|e| match &e.event {
            Event::ModelResponse { tokens_unknown, .. } => *tokens_unknown,
            _ => true,
        });
        assert!(unknown, "contents carry no token counts");
        let texts: Vec<&str> = runs[0]
            .events
            .iter()
            .filter_map(|e| match &e.event {
                Event::ModelResponse { text, .. } => text.as_deref(),
                _ => None,
            })
            .collect();
        assert_eq!(texts, ["a.txt"]);
        // A list of run objects, each a run of its own; an OpenAI message list is not Gemini's.
        let two = json!([{"id": "a", "contents": [{"role": "user", "parts": [{"text": "x"}]}]},
                         {"id": "b", "success": true, "contents": [{"role": "user", "parts": [{"text": "y"}]}]}]);
        let runs = convert(two, "r.json", "").expect("reads");
        assert_eq!(
            runs.iter()
                .map(|r| (r.id.as_str(), r.success))
                .collect::<Vec<_>>(),
            [("r.json#a", None), ("r.json#b", Some(true))]
        );
        assert!(!(READER.detect)(
            &json!([{"role": "user", "content": "hi"}])
        ));
    }
}
