//! `gemini-tool-cycle`: Gemini CLI's tool-call loop check (runtimes.md Detectors §2.1,
//! `CONSECUTIVE_IDENTICAL_TOOL_CALLS`, cycles since #28429).
//!
//! **Why.** Consecutive-identical detectors miss A-B-A-B loops (§8 family 6); Gemini checks
//! cycles of length 1 to 5 repeated `threshold` times.
//!
//! **Semantics.** Each call's key is its name and parsed arguments (upstream hashes
//! `name:JSON.stringify(args)`; here the canonical form, so key order never matters). After each
//! call, for cycle lengths k = 1…5, if the last k·`threshold` keys are the last k keys repeated
//! `threshold` times, it fires. The history keeps the last 5·`threshold` keys and resets at a
//! new user prompt; results are not looked at. Strike 1 sends hidden feedback (verdict warn);
//! upstream threshold 5.
//!
//! **Lifecycle.** Per prompt (`reset=message`): Gemini resets all loop state when a new user
//! prompt arrives; `reset=run` keeps the history across prompts.
//!
//! **Example.** `check()`, `sleep()` alternating five times each (10 calls) fires at call 9.
//!
//! **Known false positives.** Polling and status checks ×5; identical retries.

use super::{Detector, Fire, Item, Kind, Param, Params, Reset, Verdict, View};

/// Longest cycle checked.
const MAX_CYCLE: usize = 5;

/// The kind.
pub const KIND: Kind = Kind {
    id: "gemini-tool-cycle",
    summary: "a cycle of 1–5 calls repeated threshold times (Gemini CLI)",
    params: &[Param {
        name: "threshold",
        default: "5",
        sweep: &["2", "3", "4", "5", "6"],
        help: "repetitions of a cycle that fire it",
    }],
    build,
    reset: Reset::message,
};

fn build(p: &Params) -> Result<Box<dyn Detector>, String> {
    let threshold = p.count("threshold")? as usize;
    if threshold < 2 {
        return Err("`threshold` must be at least 2".to_owned());
    }
    Ok(Box::new(GeminiToolCycle { threshold }))
}

/// The detector.
#[derive(Debug, Clone)]
pub struct GeminiToolCycle {
    threshold: usize,
}

impl Detector for GeminiToolCycle {
    fn first_fire(&self, view: &View) -> Option<Fire> {
        let cap = MAX_CYCLE * self.threshold;
        let mut keys: std::collections::VecDeque<usize> = std::collections::VecDeque::new();
        for item in &view.items {
            match item {
                // A new prompt starts afresh through the lifecycle (`reset`), not here.
                Item::User(_) | Item::Agent(_) => {}
                Item::Call(i) => {
                    keys.push_back(*i);
                    if keys.len() > cap {
                        keys.pop_front();
                    }
                    let same =
                        |a: usize, b: usize| view.calls[keys[a]].same_call(&view.calls[keys[b]]);
                    let n = keys.len();
                    for k in 1..=MAX_CYCLE {
                        let span = k * self.threshold;
                        if span > n {
                            break;
                        }
                        let start = n - span;
                        if (start..n - k).all(|j| same(j, j + k)) {
                            return Some(Fire::new(*i, Verdict::Warn));
                        }
                    }
                }
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
    fn identical_and_alternating_cycles_fire() {
        let v = V::default().repeat(5, "ls", &json!({}), false, "").0;
        assert_eq!(
            GeminiToolCycle { threshold: 5 }.first_fire(&v),
            Some(Fire::new(4, Verdict::Warn))
        );
        let mut b = V::default();
        for _ in 0..5 {
            b = b
                .call("check", json!({}), false, "")
                .call("sleep", json!({"s": 5}), false, "");
        }
        assert_eq!(
            GeminiToolCycle { threshold: 5 }.first_fire(&b.0),
            Some(Fire::new(9, Verdict::Warn))
        );
        assert_eq!(GeminiToolCycle { threshold: 6 }.first_fire(&b.0), None);
    }

    #[test]
    fn a_new_user_prompt_resets() {
        let v = V::default()
            .repeat(3, "ls", &json!({}), false, "")
            .user("again")
            .repeat(3, "ls", &json!({}), false, "")
            .0;
        let first = |spec: &str| {
            crate::detector::spec(spec).unwrap()[0]
                .detector
                .first_fire(&v)
        };
        assert_eq!(first("gemini-tool-cycle:threshold=4"), None);
        assert_eq!(
            first("gemini-tool-cycle:threshold=4:reset=run"),
            Some(Fire::new(3, Verdict::Warn)),
            "one detector for the whole run sees 6 in a row"
        );
    }

    #[test]
    fn varying_alternation_does_not_fire() {
        let mut b = V::default();
        for i in 0..6 {
            b = b
                .call("edit", json!({"line": i}), false, "")
                .call("build", json!({}), false, "");
        }
        assert_eq!(GeminiToolCycle { threshold: 3 }.first_fire(&b.0), None);
    }
}
