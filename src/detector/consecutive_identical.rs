//! `consecutive-identical`: the generic detector — `k` identical tool calls in a row (same tool,
//! same parsed arguments), whatever their results.
//!
//! **Why.** It is the common core of Cline's, Roo's, Goose's REP-001 and OpenCode's guards
//! (runtimes.md Detectors §3, §4, §5) and the measure the bundled corpus is annotated with
//! (`max_identical_run_callseq`), so it is the yardstick the others are read against.
//!
//! **Semantics.** Tool calls only: text turns between calls do not break a streak (the
//! annotation's `callseq`), unless `text_breaks=1` (its `strict` variant: any user or agent text
//! turn in between does). Fires after the `k`-th identical call; verdict stop.
//!
//! **Lifecycle.** Not an upstream detector: one streak for the whole run (`reset=run`);
//! `reset=message` sweeps the alternative.
//!
//! **Example.** `search({"q":"x"})`, `search({"q":"x"})`, `search({"q":"x"})` fires at call 2
//! with `k=3`; `search({"q":"x"})`, `search({"q":"y"})` never does.
//!
//! **Known false positives.** Polling with identical arguments whose output changes (§8 family
//! 1), paged reads with identical arguments (Roo #9502), legitimate transient retries (§8 9b).

use super::{Detector, Fire, Item, Kind, Param, Params, Reset, Verdict, View};

/// The kind.
pub const KIND: Kind = Kind {
    id: "consecutive-identical",
    summary: "k identical calls (tool + parsed arguments) in a row",
    params: &[
        Param {
            name: "k",
            default: "3",
            sweep: &["2", "3", "4", "5", "6"],
            help: "identical calls in a row that fire it",
        },
        Param {
            name: "text_breaks",
            default: "0",
            sweep: &[],
            help: "1: a text turn between calls breaks the streak",
        },
    ],
    build,
    reset: Reset::run,
};

fn build(p: &Params) -> Result<Box<dyn Detector>, String> {
    let k = p.count("k")?;
    if k == 0 {
        return Err("`k` must be at least 1".to_owned());
    }
    Ok(Box::new(ConsecutiveIdentical {
        k: k as usize,
        text_breaks: p.count("text_breaks")? != 0,
    }))
}

/// The detector.
#[derive(Debug, Clone)]
pub struct ConsecutiveIdentical {
    /// Streak length that fires.
    pub k: usize,
    /// Whether text turns break a streak.
    pub text_breaks: bool,
}

impl Detector for ConsecutiveIdentical {
    fn first_fire(&self, view: &View) -> Option<Fire> {
        let mut streak = 0usize;
        let mut last: Option<usize> = None;
        for item in &view.items {
            match item {
                Item::Call(i) => {
                    let c = &view.calls[*i];
                    streak = match last {
                        Some(l) if view.calls[l].same_call(c) => streak + 1,
                        _ => 1,
                    };
                    last = Some(*i);
                    if streak >= self.k {
                        return Some(Fire::new(*i, Verdict::Stop));
                    }
                }
                Item::Agent(_) | Item::User(_) if self.text_breaks => {
                    streak = 0;
                    last = None;
                }
                Item::Agent(_) | Item::User(_) => {}
            }
        }
        None
    }
}

/// The longest run of identical consecutive calls (the annotation's measure).
pub fn longest_run(view: &View, text_breaks: bool) -> usize {
    let mut best = 0;
    for k in 1.. {
        let d = ConsecutiveIdentical { k, text_breaks };
        if d.first_fire(view).is_none() {
            break;
        }
        best = k;
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detector::testing::V;
    use serde_json::json;

    #[test]
    fn fires_at_the_kth_identical_call() {
        let v = V::default()
            .call("a", json!({}), false, "")
            .repeat(3, "ls", &json!({"p": 1}), false, "x")
            .0;
        let d = ConsecutiveIdentical {
            k: 3,
            text_breaks: false,
        };
        assert_eq!(d.first_fire(&v), Some(Fire::new(3, Verdict::Stop)));
        let d = ConsecutiveIdentical {
            k: 4,
            text_breaks: false,
        };
        assert_eq!(d.first_fire(&v), None);
    }

    #[test]
    fn argument_key_order_does_not_matter_but_values_do() {
        let v = V::default()
            .call("f", json!({"a": 1, "b": 2}), false, "")
            .call("f", json!({"b": 2, "a": 1}), false, "")
            .0;
        assert!(
            ConsecutiveIdentical {
                k: 2,
                text_breaks: false
            }
            .first_fire(&v)
            .is_some()
        );
        // Pagination: same tool, a changing cursor (family 4) must not fire.
        let v = V::default()
            .call("page", json!({"cursor": 1}), false, "")
            .call("page", json!({"cursor": 2}), false, "")
            .call("page", json!({"cursor": 3}), false, "")
            .0;
        assert!(
            ConsecutiveIdentical {
                k: 2,
                text_breaks: false
            }
            .first_fire(&v)
            .is_none()
        );
    }

    #[test]
    fn text_turns_break_the_streak_only_when_asked() {
        let v = V::default()
            .call("ls", json!({}), false, "")
            .user("and again")
            .call("ls", json!({}), false, "")
            .0;
        assert!(
            ConsecutiveIdentical {
                k: 2,
                text_breaks: false
            }
            .first_fire(&v)
            .is_some()
        );
        assert!(
            ConsecutiveIdentical {
                k: 2,
                text_breaks: true
            }
            .first_fire(&v)
            .is_none()
        );
        assert_eq!(longest_run(&v, false), 2);
        assert_eq!(longest_run(&v, true), 1);
    }

    #[test]
    fn polling_with_changing_output_fires_a_known_false_positive() {
        let mut b = V::default();
        for pct in [10, 50, 90] {
            b = b.call("status", json!({"job": 7}), false, &format!("{pct}%"));
        }
        assert!(
            ConsecutiveIdentical {
                k: 3,
                text_breaks: false
            }
            .first_fire(&b.0)
            .is_some()
        );
    }
}
