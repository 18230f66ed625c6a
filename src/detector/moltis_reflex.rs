//! `moltis-reflex`: Moltis' reflex-loop detector (`docs/runtimes.md` Moltis, PR #664; the engine's
//! `policy/reflex.rs`, whose state machine this reuses unchanged).
//!
//! **Why.** The reflex loop — `exec({})` with empty arguments on every turn — fails the same way
//! each time; Moltis catches it over failures only, so successful work never counts.
//!
//! **Semantics.** A ring buffer of the last `window` failed calls fires when all are the same
//! tool with the same canonical arguments or the same exact error text; any success resets it.
//! Decisions are taken once per batch after it ran: the first firing injects the nudge (verdict
//! warn), a second strips all tools for one call (strip-tools). `window` was 3 at PR #664 and 2
//! later, with no reason given; 0 disables.
//!
//! **Lifecycle.** Per user message (`reset=message`): Moltis creates the detector when an agent
//! run starts and starts a run for each user message, so a failure window never spans one;
//! `reset=run` feeds the whole transcript to one detector.
//!
//! **Example.** `exec({})` → `missing 'command'` three times fires at the third (window 3).
//!
//! **Known false positives.** The same error text from a tool called with *different* arguments
//! for a good reason (a search that finds nothing for several queries: "no results").

use super::{Detector, Fire, Kind, Param, Params, Reset, Verdict, View};
use crate::policy::{DetectorAction, Fingerprint, ReflexDetector};

/// The kind.
pub const KIND: Kind = Kind {
    id: "moltis-reflex",
    summary: "window of failures: same tool and same args or same error (Moltis)",
    params: &[Param {
        name: "window",
        default: "3",
        sweep: &["2", "3", "4", "5", "6"],
        help: "identical failures that fire it (0 disables)",
    }],
    build,
    reset: Reset::message,
};

fn build(p: &Params) -> Result<Box<dyn Detector>, String> {
    Ok(Box::new(MoltisReflex {
        window: p.count("window")? as usize,
    }))
}

/// The detector.
#[derive(Debug, Clone)]
pub struct MoltisReflex {
    window: usize,
}

impl Detector for MoltisReflex {
    fn first_fire(&self, view: &View) -> Option<Fire> {
        let mut det = ReflexDetector::new(self.window, true);
        for batch in view.batches() {
            // The runner strips at most one call, then hard-resets: a new response means the
            // stripped call (if any) has happened.
            det.clear_strip_tools();
            for c in &view.calls[batch.clone()] {
                let fp = if c.failed {
                    Fingerprint::failure(
                        &c.name,
                        &c.args,
                        (!c.result.is_empty()).then_some(c.result.as_str()),
                    )
                } else {
                    Fingerprint::success(&c.name, &c.args)
                };
                det.record(fp);
            }
            let at = batch.end - 1;
            match det.consume_pending_action() {
                DetectorAction::None => {}
                DetectorAction::InjectNudge => return Some(Fire::new(at, Verdict::Warn)),
                DetectorAction::StripTools => return Some(Fire::new(at, Verdict::StripTools)),
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

    fn d(window: usize) -> MoltisReflex {
        MoltisReflex { window }
    }

    #[test]
    fn the_reflex_loop_fires_at_the_window() {
        let v = V::default()
            .repeat(4, "exec", &json!({}), true, "missing 'command'")
            .0;
        assert_eq!(d(3).first_fire(&v), Some(Fire::new(2, Verdict::Warn)));
        assert_eq!(d(2).first_fire(&v), Some(Fire::new(1, Verdict::Warn)));
        assert_eq!(d(0).first_fire(&v), None);
    }

    #[test]
    fn same_error_with_other_arguments_fires_too() {
        let v = V::default()
            .call("read", json!({"p": "a"}), true, "not found")
            .call("read", json!({"p": "b"}), true, "not found")
            .0;
        assert!(d(2).first_fire(&v).is_some());
    }

    #[test]
    fn a_success_resets_and_successes_never_count() {
        let v = V::default()
            .repeat(2, "exec", &json!({}), true, "E")
            .call("exec", json!({"command": "ls"}), false, "a.txt")
            .repeat(2, "exec", &json!({}), true, "E")
            .repeat(5, "status", &json!({}), false, "running")
            .0;
        assert_eq!(d(3).first_fire(&v), None);
    }

    #[test]
    fn different_errors_and_args_do_not_fire() {
        let v = V::default()
            .call("read", json!({"p": "a"}), true, "E1")
            .call("read", json!({"p": "b"}), true, "E2")
            .0;
        assert_eq!(d(2).first_fire(&v), None);
    }
}
