//! `cline-identical`: Cline's repeated-tool-call detection (runtimes.md Detectors §4.1, PR #9933;
//! SDK `LoopDetectionTracker` §4.2).
//!
//! **Why.** Users lost money to identical-call loops; Cline warns the model softly first and
//! only then hands the run to the user.
//!
//! **Semantics.** Signature: tool name + parameters as sorted-key JSON with `task_progress`
//! removed (that checklist changes on every call). Checked after the call ran; a different call
//! resets the count to 1. At `soft` identical calls in a row the model gets a warning (verdict
//! warn); at `hard` the mistake limit is forced (verdict stop). Upstream: soft 3, hard 5, chosen
//! high "to avoid false positives on tools that may legitimately repeat".
//!
//! **Lifecycle.** One tracker for the task (`reset=run`); upstream clears it when the user
//! continues after the mistake-limit question, which transcripts do not record.
//!
//! **Example.** `browser_screenshot({})` three times in a row warns at the third.
//!
//! **Known false positives.** Screenshots and polling (the reason hard is 5); paged reads with
//! identical arguments.

use super::{Detector, Fire, Kind, Param, Params, Reset, Verdict, View};
use crate::json::canonical;
use serde_json::Value;

/// The kind.
pub const KIND: Kind = Kind {
    id: "cline-identical",
    summary: "identical calls in a row, task_progress ignored; soft warn, hard stop (Cline)",
    params: &[
        Param {
            name: "soft",
            default: "3",
            sweep: &["2", "3", "4", "5", "6"],
            help: "identical calls in a row that warn the model",
        },
        Param {
            name: "hard",
            default: "5",
            sweep: &[],
            help: "identical calls in a row that stop the run",
        },
    ],
    build,
    reset: Reset::run,
};

fn build(p: &Params) -> Result<Box<dyn Detector>, String> {
    Ok(Box::new(ClineIdentical {
        soft: p.count("soft")?,
        hard: p.count("hard")?,
    }))
}

/// The detector.
#[derive(Debug, Clone)]
pub struct ClineIdentical {
    soft: u32,
    hard: u32,
}

/// Cline's signature: name + sorted-key params without `task_progress`.
fn signature(name: &str, args: &Value) -> String {
    let key = match args {
        Value::Object(map) if map.contains_key("task_progress") => {
            let mut m = map.clone();
            m.remove("task_progress");
            canonical(&Value::Object(m))
        }
        other => canonical(other),
    };
    format!("{name}:{key}")
}

impl Detector for ClineIdentical {
    fn first_fire(&self, view: &View) -> Option<Fire> {
        let mut last: Option<String> = None;
        let mut count = 0u32;
        for (i, c) in view.calls.iter().enumerate() {
            let sig = signature(&c.name, &c.args);
            count = if last.as_ref() == Some(&sig) {
                count + 1
            } else {
                1
            };
            last = Some(sig);
            if self.hard > 0 && count >= self.hard {
                return Some(Fire::new(i, Verdict::Stop));
            }
            if count == self.soft {
                return Some(Fire::new(i, Verdict::Warn));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detector::testing::V;
    use serde_json::json;

    #[test]
    fn soft_warns_and_hard_stops() {
        let v = V::default().repeat(5, "shot", &json!({}), false, "png").0;
        let d = ClineIdentical { soft: 3, hard: 5 };
        assert_eq!(d.first_fire(&v), Some(Fire::new(2, Verdict::Warn)));
        let d = ClineIdentical { soft: 6, hard: 5 };
        assert_eq!(d.first_fire(&v), Some(Fire::new(4, Verdict::Stop)));
    }

    #[test]
    fn task_progress_is_ignored() {
        let v = V::default()
            .call(
                "edit",
                json!({"f": "a", "task_progress": "- [x] 1"}),
                false,
                "",
            )
            .call(
                "edit",
                json!({"f": "a", "task_progress": "- [x] 1\n- [x] 2"}),
                false,
                "",
            )
            .0;
        let d = ClineIdentical { soft: 2, hard: 5 };
        assert_eq!(d.first_fire(&v), Some(Fire::new(1, Verdict::Warn)));
    }

    #[test]
    fn a_different_call_resets() {
        let v = V::default()
            .repeat(2, "a", &json!({}), false, "")
            .call("b", json!({}), false, "")
            .repeat(2, "a", &json!({}), false, "")
            .0;
        assert_eq!(ClineIdentical { soft: 3, hard: 5 }.first_fire(&v), None);
    }
}
