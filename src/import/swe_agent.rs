//! SWE-agent `.traj`: `{environment, trajectory: [{action, observation, thought, response}],
//! history, info: {exit_status, submission}}`.
//!
//! Each trajectory step is one model response (its `thought`) with one call: the action's
//! first word is the tool name and the whole action (trimmed) is the argument
//! `{"command": …}`, so two steps are the same call when their commands are identical. The
//! format has no failure flag: a step failed when its observation matches [`FAILURE`]
//! (tracebacks, shell errors, linter rejections, `Wrong flag!`). Resolution is not recorded,
//! so the success label is unknown (`None`); `info.exit_status` is the termination. A file
//! without a `trajectory` (only a `history`) holds no run. Run id: the file path.

use super::{Reader, Root, Run, TraceBuilder, typed};
use crate::diagnostic::Diagnostic;
use crate::scenario::OutcomeKind;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::OnceLock;

/// Observation text that marks a failed step.
pub const FAILURE: &str = r"(?m)Traceback \(most recent call last\)|^\w*Error:|command not found|No such file|EXECUTION TIMED OUT|base64: invalid input|Your proposed edit has introduced new syntax error|Wrong flag|^Usage: |Permission denied|syntax error";

fn failure() -> &'static regex_lite::Regex {
    static RE: OnceLock<regex_lite::Regex> = OnceLock::new();
    RE.get_or_init(|| {
        regex_lite::Regex::new(FAILURE)
            .unwrap_or_else(|_| unreachable!("FAILURE is a valid pattern"))
    })
}

#[derive(Debug, Deserialize)]
struct Doc {
    #[serde(default)]
    trajectory: Option<Vec<Step>>,
    #[serde(default)]
    info: Option<Info>,
}

#[derive(Debug, Deserialize)]
struct Step {
    #[serde(default)]
    action: String,
    #[serde(default)]
    observation: Option<Value>,
    #[serde(default)]
    thought: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Info {
    #[serde(default)]
    exit_status: Option<String>,
}

/// Whether an observation reads as a failure.
pub fn failed(observation: &str) -> bool {
    failure().is_match(observation)
}

/// The SWE-agent reader: a `.traj` object (`trajectory`, or a chat `history`; OpenHands'
/// event `history` is detected before it).
pub const READER: Reader = Reader {
    name: "swe-agent",
    root: Root::Object("an object"),
    detect: |doc| {
        doc.is_object() && (doc.get("trajectory").is_some() || doc.get("history").is_some())
    },
    convert: |doc, rel, text| convert(doc, rel, text).map(|r| r.into_iter().collect()),
    whole_file: None,
};

/// Convert a parsed SWE-agent file (`None` when it has no trajectory).
pub fn convert(doc: Value, rel: &str, text: &str) -> Result<Option<Run>, Diagnostic> {
    let d: Doc = typed(doc, text, READER.name)?;
    let Some(steps) = d.trajectory else {
        return Ok(None);
    };
    let mut b = TraceBuilder::new(READER.name, "");
    for (i, s) in steps.iter().enumerate() {
        let command = s.action.trim();
        let name = command.split_whitespace().next().unwrap_or("").to_owned();
        let id = format!("step_{i}");
        b.response(
            s.thought.as_deref().unwrap_or("").trim(),
            vec![(id.clone(), name, json!({ "command": command }))],
            (0, 0),
        );
        let obs = super::content_text(s.observation.as_ref());
        b.result(&id, &obs, failed(&obs));
    }
    let exit = d.info.and_then(|i| i.exit_status);
    Ok(Some(Run {
        id: rel.to_owned(),
        source: READER.name.to_owned(),
        success: None,
        termination: exit.clone(),
        events: b.finish(OutcomeKind::Response, exit),
    }))
}
