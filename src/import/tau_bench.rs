//! tau-bench `historical_trajectories`: a JSON array of `{task_id, trial, reward, info, traj}`,
//! `traj` an OpenAI message list (at most one call per assistant message).
//!
//! Run id `<file>#task<task_id>_trial<trial>`. Success: `reward == 1`. The format has no
//! failure flag: a result failed when its text starts with `Error` (`Error: payment amount does
//! not add up…`). Termination is not recorded.

use super::openai::{Message, fill};
use super::{Reader, Root, Run, TraceBuilder, error_prefixed, typed};
use crate::diagnostic::Diagnostic;
use crate::scenario::OutcomeKind;
use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Deserialize)]
struct Record {
    task_id: Value,
    #[serde(default)]
    trial: Option<u64>,
    reward: f64,
    traj: Vec<Message>,
}

/// The tau-bench reader: a JSON array of runs, each with its `traj`.
pub const READER: Reader = Reader {
    name: "tau-bench",
    root: Root::Array("an array of runs"),
    detect: |doc| {
        doc.as_array()
            .and_then(|items| items.first())
            .is_some_and(|first| first.is_object() && first.get("traj").is_some())
    },
    convert,
    whole_file: None,
};

/// Convert a parsed tau-bench file.
pub fn convert(doc: Value, rel: &str, text: &str) -> Result<Vec<Run>, Diagnostic> {
    let records: Vec<Record> = typed(doc, text, READER.name)?;
    Ok(records
        .into_iter()
        .map(|r| {
            let task = match &r.task_id {
                Value::String(s) => s.clone(),
                v => crate::json::compact(v),
            };
            let mut b = TraceBuilder::new(READER.name, "");
            fill(&mut b, &r.traj, &error_prefixed);
            Run {
                id: format!("{rel}#task{task}_trial{}", r.trial.unwrap_or(0)),
                source: READER.name.to_owned(),
                success: Some((r.reward - 1.0).abs() < 1e-9),
                termination: None,
                events: b.finish(OutcomeKind::Response, None),
            }
        })
        .collect())
}
