//! IronClaw's `DuplicateToolCallTracker` (PR #2338): counts consecutive identical batches in
//! which every call failed. The fingerprint is the ordered list of (name, canonical arguments),
//! so [A, B] differs from [B, A]. From `warn_at` the warning is injected after every such
//! batch; at `force_text_at` force-text switches on as well. A batch that is not all-failed
//! restarts the count at 0; a text answer that was not nudged clears it.

use super::{Action, CallRecord, DuplicateConfig, LoopView, Policy};
use crate::llm::{Args, Role};

/// The tracker's counter, exactly as upstream.
#[derive(Debug, Default, Clone)]
pub struct Tracker {
    last: Option<Vec<(String, String)>>,
    count: u32,
}

impl Tracker {
    /// Record a batch; returns the streak count.
    pub fn record(&mut self, fp: Vec<(String, String)>, all_failed: bool) -> u32 {
        if !all_failed {
            self.last = Some(fp);
            self.count = 0;
        } else if self.last.as_ref() == Some(&fp) {
            self.count += 1;
        } else {
            self.last = Some(fp);
            self.count = 1;
        }
        self.count
    }

    /// Forget the streak.
    pub fn reset(&mut self) {
        self.last = None;
        self.count = 0;
    }
}

pub(super) struct DuplicateTracker {
    config: DuplicateConfig,
    tracker: Tracker,
    pending: Vec<(String, String)>,
}

impl DuplicateTracker {
    pub(super) fn new(config: DuplicateConfig) -> Self {
        Self {
            config,
            tracker: Tracker::default(),
            pending: Vec::new(),
        }
    }
}

impl Policy for DuplicateTracker {
    fn id(&self) -> &'static str {
        "ironclaw-duplicate"
    }

    fn after_text(&mut self, _text: &str, continued: bool) {
        if !continued {
            self.tracker.reset();
        }
    }

    fn before_execute(&mut self, calls: &[(&str, &Args)]) {
        self.pending = calls
            .iter()
            .map(|(name, args)| ((*name).to_owned(), args.canonical().to_owned()))
            .collect();
    }

    fn after_batch(&mut self, records: &[CallRecord], _view: &LoopView) -> Vec<Action> {
        let all_failed = !records.is_empty() && records.iter().all(|r| r.result.failed());
        let n = self
            .tracker
            .record(std::mem::take(&mut self.pending), all_failed);
        let tool = records.first().map(|r| r.name.clone());
        let warning = Action::Inject {
            role: Role::User,
            text: self.config.message.clone(),
        };
        if n >= self.config.force_text_at {
            vec![
                Action::Intervene {
                    stage: 2,
                    action: "force_text",
                    tool,
                },
                Action::ForceText { cause: "duplicate" },
                warning,
            ]
        } else if n >= self.config.warn_at {
            vec![
                Action::Intervene {
                    stage: 1,
                    action: "warn",
                    tool,
                },
                warning,
            ]
        } else {
            Vec::new()
        }
    }
}

/// IronClaw tracker unit tests (E15–E19).
#[cfg(test)]
mod tests {
    use super::{DuplicateTracker, Tracker};
    use crate::json::compact;
    use crate::policy::{Action, CallRecord, CallResult, Config, LoopView, Policy};
    use serde_json::json;

    fn fp(name: &str) -> Vec<(String, String)> {
        vec![(name.to_owned(), "{}".to_owned())]
    }

    #[test]
    fn successes_count_zero() {
        let mut t = Tracker::default();
        assert_eq!([t.record(fp("a"), false), t.record(fp("a"), false)], [0, 0]);
    }

    #[test]
    fn identical_failures_count_up() {
        let mut t = Tracker::default();
        let got: Vec<u32> = (0..3).map(|_| t.record(fp("a"), true)).collect();
        assert_eq!(got, [1, 2, 3]);
    }

    #[test]
    fn success_restarts_the_count() {
        let mut t = Tracker::default();
        let got = [
            t.record(fp("a"), true),
            t.record(fp("a"), true),
            t.record(fp("a"), false),
            t.record(fp("a"), true),
        ];
        assert_eq!(got, [1, 2, 0, 1]);
    }

    #[test]
    fn another_fingerprint_restarts_at_one() {
        let mut t = Tracker::default();
        let got = [
            t.record(fp("a"), true),
            t.record(fp("a"), true),
            t.record(fp("b"), true),
        ];
        assert_eq!(got, [1, 2, 1]);
    }

    /// E19 `test_dup_tracker_canonicalizes_arg_order`: `{"a":1,"b":2}` and `{"b":2,"a":1}` are
    /// the same call, through the policy's own fingerprinting (`before_execute`), so three
    /// all-failed batches alternating the key order reach the warning at the 3rd.
    #[test]
    fn dup_tracker_canonicalizes_arg_order() {
        let (ab, ba) = (json!({"a": 1, "b": 2}), json!({"b": 2, "a": 1}));
        assert_ne!(compact(&ab), compact(&ba), "insertion order is kept");
        let mut p = DuplicateTracker::new(Config::ironclaw().duplicate);
        let view = LoopView::at(1);
        let mut warned = Vec::new();
        for args in [&ab, &ba, &ab] {
            let args = crate::llm::Args::new(args.clone());
            p.before_execute(&[("echo", &args)]);
            let record = CallRecord {
                name: "echo".to_owned(),
                args,
                result: CallResult::Failed(Some("boom".to_owned())),
            };
            let actions = p.after_batch(&[record], &view);
            warned.push(actions.iter().any(|a| matches!(a, Action::Inject { .. })));
        }
        assert_eq!(warned, [false, false, true]);
    }
}
