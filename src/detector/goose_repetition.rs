//! `goose-repetition`: Goose's `RepetitionInspector` (runtimes.md Detectors §3): REP-001, consecutive
//! identical calls over a limit, and REP-002, the same tool returning the same error again and
//! again whatever the arguments.
//!
//! **Why.** REP-002 is the only upstream detector aimed at the "creative retry" (§8 family 8):
//! different flags, same `Permission denied`.
//!
//! **Semantics.** REP-001 (`max`, upstream default unlimited = 0): the (`max`+1)-th identical
//! call in a row is denied before it runs. REP-002 (`errors`, upstream 3): the fingerprint is the
//! tool name plus the first 100 characters of the error; once the same fingerprint has come
//! `errors` times in a row, the next call to that tool, with any arguments, is denied and the
//! count goes back to 0; a success clears it. A denial withholds the tool for that call
//! (verdict strip-tools). Checked before execution, so the fire position is the denied call.
//!
//! **Lifecycle.** One inspector for the session (`reset=run`): no reset at a user message is
//! known upstream.
//!
//! **Example.** `ssh({"flags":"-v"})`, `ssh({"flags":"-4"})`, `ssh({"flags":"-6"})`, each
//! `Permission denied`, then any `ssh(…)`: REP-002 denies the fourth call.
//!
//! **Known false positives.** Legitimate retries where a tool keeps failing the same way while
//! the agent varies its input for good reason.

use super::{Detector, Fire, Kind, Param, Params, Reset, Verdict, View};

/// The kind.
pub const KIND: Kind = Kind {
    id: "goose-repetition",
    summary: "REP-001 identical-call limit, REP-002 same tool + same error (Goose)",
    params: &[
        Param {
            name: "max",
            default: "0",
            sweep: &[],
            help: "REP-001: identical calls in a row allowed (0: unlimited, the default)",
        },
        Param {
            name: "errors",
            default: "3",
            sweep: &["2", "3", "4", "5", "6"],
            help: "REP-002: same-error results in a row before the tool is denied (0: off)",
        },
    ],
    build,
    reset: Reset::run,
};

fn build(p: &Params) -> Result<Box<dyn Detector>, String> {
    Ok(Box::new(GooseRepetition {
        max: p.count("max")?,
        errors: p.count("errors")?,
    }))
}

/// The detector.
#[derive(Debug, Clone)]
pub struct GooseRepetition {
    max: u32,
    errors: u32,
}

fn fingerprint(tool: &str, error: &str) -> String {
    let head: String = error.chars().take(100).collect();
    format!("{tool}\u{0}{head}")
}

impl Detector for GooseRepetition {
    fn first_fire(&self, view: &View) -> Option<Fire> {
        let mut repeat = 0u32;
        let mut last: Option<usize> = None;
        let mut err: Option<(String, String)> = None; // (tool, fingerprint)
        let mut err_count = 0u32;
        for (i, c) in view.calls.iter().enumerate() {
            // REP-002: the tool whose error repeated `errors` times is denied, any arguments.
            if self.errors > 0 && err_count >= self.errors {
                if let Some((tool, _)) = &err {
                    if *tool == c.name {
                        return Some(Fire::new(i, Verdict::StripTools));
                    }
                }
            }
            repeat = match last {
                Some(l) if view.calls[l].same_call(c) => repeat + 1,
                _ => 1,
            };
            last = Some(i);
            if self.max > 0 && repeat > self.max {
                return Some(Fire::new(i, Verdict::StripTools));
            }
            if c.failed {
                let fp = fingerprint(&c.name, &c.result);
                match &err {
                    Some((_, f)) if *f == fp => err_count += 1,
                    _ => {
                        err = Some((c.name.clone(), fp));
                        err_count = 1;
                    }
                }
            } else {
                err = None;
                err_count = 0;
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
    fn creative_retry_is_denied_after_the_same_error() {
        let mut b = V::default();
        for f in ["-v", "-4", "-6", "-q"] {
            b = b.call(
                "ssh",
                json!({"flags": f}),
                true,
                "Permission denied (publickey)",
            );
        }
        let d = GooseRepetition { max: 0, errors: 3 };
        assert_eq!(d.first_fire(&b.0), Some(Fire::new(3, Verdict::StripTools)));
    }

    #[test]
    fn different_errors_or_a_success_do_not_fire() {
        let v = V::default()
            .call("ssh", json!({}), true, "E1")
            .call("ssh", json!({}), true, "E2")
            .call("ssh", json!({}), true, "E3")
            .call("ssh", json!({}), true, "E4")
            .0;
        assert_eq!(GooseRepetition { max: 0, errors: 2 }.first_fire(&v), None);
        let v = V::default()
            .repeat(2, "ssh", &json!({}), true, "E")
            .call("ssh", json!({}), false, "ok")
            .repeat(2, "ssh", &json!({}), true, "E")
            .0;
        assert_eq!(GooseRepetition { max: 0, errors: 3 }.first_fire(&v), None);
    }

    #[test]
    fn rep001_denies_the_call_over_the_limit_and_is_off_by_default() {
        let v = V::default().repeat(4, "ls", &json!({}), false, "a").0;
        assert_eq!(
            GooseRepetition { max: 3, errors: 0 }.first_fire(&v),
            Some(Fire::new(3, Verdict::StripTools))
        );
        assert_eq!(GooseRepetition { max: 0, errors: 3 }.first_fire(&v), None);
    }
}
