//! `ironclaw-duplicate`: IronClaw's duplicate-failure tracker (runtimes.md IronClaw §2.2, the
//! engine's `policy/duplicate.rs`, whose counter this reuses): consecutive identical **batches**
//! in which every call failed.
//!
//! **Why.** A model retrying exactly the same failing calls learns nothing from the error; the
//! tracker only counts all-failed batches, so successful polling never trips it.
//!
//! **Semantics.** The fingerprint is the ordered list of (tool, canonical arguments) of a model
//! response's calls. An all-failed batch with the previous fingerprint counts up; another
//! fingerprint restarts at 1; a batch that is not all-failed resets to 0; a text answer clears
//! the streak. Fires at `warn` (verdict warn: the warning message) or at `force` if that comes
//! first (verdict strip-tools: force-text mode). Upstream: warn 3, force 5.
//!
//! **Lifecycle.** Per turn (`reset=message`): IronClaw's chat delegate makes a new reasoning
//! context, and with it a new tracker, for every user message.
//!
//! **Example.** `pay({"amount":5})` → `Error: …` three responses in a row fires at the third.
//!
//! **Known false positives.** A transient failure retried unchanged that would have succeeded
//! next time (§8 family 9b). It misses "creative retries" with changing arguments (family 8).

use super::{Detector, Fire, Item, Kind, Param, Params, Reset, Verdict, View};
use crate::policy::Tracker;

/// The kind.
pub const KIND: Kind = Kind {
    id: "ironclaw-duplicate",
    summary: "identical all-failed batches in a row (IronClaw)",
    params: &[
        Param {
            name: "warn",
            default: "3",
            sweep: &["2", "3", "4", "5", "6"],
            help: "all-failed identical batches that inject the warning",
        },
        Param {
            name: "force",
            default: "5",
            sweep: &[],
            help: "… that switch force-text on",
        },
    ],
    build,
    reset: Reset::message,
};

fn build(p: &Params) -> Result<Box<dyn Detector>, String> {
    Ok(Box::new(IronclawDuplicate {
        warn: p.count("warn")?,
        force: p.count("force")?,
    }))
}

/// The detector.
#[derive(Debug, Clone)]
pub struct IronclawDuplicate {
    warn: u32,
    force: u32,
}

impl Detector for IronclawDuplicate {
    fn first_fire(&self, view: &View) -> Option<Fire> {
        let mut tracker = Tracker::default();
        let mut i = 0;
        while i < view.items.len() {
            match &view.items[i] {
                Item::Agent(_) => tracker.reset(),
                Item::User(_) => {}
                Item::Call(first) => {
                    let batch = view.calls[*first].batch;
                    let batch_start = *first;
                    let mut last = *first;
                    while let Some(Item::Call(n)) = view.items.get(i + 1) {
                        if view.calls[*n].batch != batch {
                            break;
                        }
                        last = *n;
                        i += 1;
                    }
                    let calls = &view.calls[batch_start..=last];
                    let fp = calls
                        .iter()
                        .map(|c| (c.name.clone(), c.key.clone()))
                        .collect();
                    let n = tracker.record(fp, calls.iter().all(|c| c.failed));
                    if n >= self.force {
                        return Some(Fire::new(last, Verdict::StripTools));
                    }
                    if n >= self.warn {
                        return Some(Fire::new(last, Verdict::Warn));
                    }
                }
            }
            i += 1;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detector::testing::V;
    use serde_json::json;

    fn d(warn: u32) -> IronclawDuplicate {
        IronclawDuplicate { warn, force: 5 }
    }

    #[test]
    fn identical_failing_batches_warn_at_the_threshold() {
        let v = V::default()
            .repeat(3, "pay", &json!({"a": 5}), true, "Error: no")
            .0;
        assert_eq!(d(3).first_fire(&v), Some(Fire::new(2, Verdict::Warn)));
        assert_eq!(d(4).first_fire(&v), None);
    }

    #[test]
    fn a_success_or_a_text_answer_resets() {
        let v = V::default()
            .repeat(2, "pay", &json!({"a": 5}), true, "Error")
            .call("pay", json!({"a": 5}), false, "ok")
            .repeat(2, "pay", &json!({"a": 5}), true, "Error")
            .say("let me think")
            .call("pay", json!({"a": 5}), true, "Error")
            .0;
        assert_eq!(d(3).first_fire(&v), None);
    }

    #[test]
    fn identical_successes_never_fire() {
        let v = V::default()
            .repeat(8, "status", &json!({}), false, "running")
            .0;
        assert_eq!(d(2).first_fire(&v), None);
    }

    #[test]
    fn force_first_when_lower() {
        let v = V::default().repeat(2, "x", &json!({}), true, "E").0;
        let d = IronclawDuplicate { warn: 3, force: 2 };
        assert_eq!(d.first_fire(&v), Some(Fire::new(1, Verdict::StripTools)));
    }

    #[test]
    fn batches_compare_as_ordered_lists() {
        let a = ("a", json!({}), true, "E");
        let b = ("b", json!({}), true, "E");
        let v = V::default()
            .batch(&[a.clone(), b.clone()])
            .batch(&[b.clone(), a.clone()])
            .batch(&[a.clone(), b.clone()])
            .0;
        assert_eq!(d(2).first_fire(&v), None);
        let v = V::default().batch(&[a.clone(), b.clone()]).batch(&[a, b]).0;
        assert_eq!(d(2).first_fire(&v), Some(Fire::new(3, Verdict::Warn)));
    }
}
