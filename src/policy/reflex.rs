//! Moltis' two-stage reflex-loop detector (PR #664, merge 8828cc5), state machine and policy.
//!
//! A failures-only ring buffer of `window` fingerprints fires when every entry is the same tool
//! with the same canonical arguments, or the same exact error text. Any success resets it.
//! The runner records a whole batch, then takes one decision: stage 1 injects a nudge, stage 2
//! strips all tools for exactly one model call (and hard-resets the detector at that call). The
//! stage-skip guard delivers the nudge before any strip; a trailing success cancels.

use super::{Action, CallRecord, LoopView, Policy, ReflexConfig, Template};
use crate::llm::Args;
use serde_json::Value;
use std::collections::VecDeque;

/// One recorded tool outcome.
#[derive(Debug, Clone)]
pub struct Fingerprint {
    tool: String,
    failed: bool,
    error: Option<String>,
    args: Args,
}

impl Fingerprint {
    /// A successful call.
    pub fn success(tool: &str, args: &Value) -> Self {
        Self::new(tool, Args::new(args.clone()), false, None)
    }

    /// A failed call, with or without error text.
    pub fn failure(tool: &str, args: &Value, error: Option<&str>) -> Self {
        Self::new(
            tool,
            Args::new(args.clone()),
            true,
            error.map(str::to_owned),
        )
    }

    /// A call of the batch just run, its arguments shared with the record.
    fn of(r: &CallRecord) -> Self {
        let error = r.result.error().map(str::to_owned);
        Self::new(&r.name, Args::clone(&r.args), r.result.failed(), error)
    }

    /// The arguments' canonical text, which two calls share when they are the same call.
    fn args_key(&self) -> &str {
        self.args.canonical()
    }

    fn new(tool: &str, args: Args, failed: bool, error: Option<String>) -> Self {
        Self {
            tool: tool.to_owned(),
            failed,
            error,
            args,
        }
    }
}

/// Escalation stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Nothing fired.
    None,
    /// Stage 1 fired.
    Nudged,
    /// Stage 2 fired.
    StripTools,
}

/// What the detector asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DetectorAction {
    /// Nothing.
    None,
    /// Stage 1.
    InjectNudge,
    /// Stage 2.
    StripTools,
}

/// The detector's state machine, exactly as upstream.
#[derive(Debug, Clone)]
pub struct ReflexDetector {
    recent: VecDeque<Fingerprint>,
    window: usize,
    strip_on_second_fire: bool,
    stage: Stage,
    nudge_delivered: bool,
}

impl ReflexDetector {
    /// A detector with this window (0 disables it).
    pub fn new(window: usize, strip_on_second_fire: bool) -> Self {
        Self {
            recent: VecDeque::with_capacity(window + 1),
            window,
            strip_on_second_fire,
            stage: Stage::None,
            nudge_delivered: false,
        }
    }

    /// Current stage.
    pub fn stage(&self) -> Stage {
        self.stage
    }

    /// The failures in the window, oldest first.
    pub fn window_snapshot(&self) -> Vec<Fingerprint> {
        self.recent.iter().cloned().collect()
    }

    /// Record one outcome; returns the per-call action (which the runner ignores).
    pub fn record(&mut self, fp: Fingerprint) -> DetectorAction {
        if self.window == 0 {
            return DetectorAction::None;
        }
        if !fp.failed {
            self.reset();
            return DetectorAction::None;
        }
        self.recent.push_back(fp);
        while self.recent.len() > self.window {
            self.recent.pop_front();
        }
        if self.recent.len() < self.window || !self.all_match() {
            return DetectorAction::None;
        }
        match self.stage {
            Stage::None => {
                self.stage = Stage::Nudged;
                DetectorAction::InjectNudge
            }
            Stage::Nudged if self.strip_on_second_fire => {
                self.stage = Stage::StripTools;
                DetectorAction::StripTools
            }
            Stage::Nudged | Stage::StripTools => DetectorAction::None,
        }
    }

    fn all_match(&self) -> bool {
        let Some(first) = self.recent.front() else {
            return false;
        };
        let same_tool = self.recent.iter().all(|f| f.failed && f.tool == first.tool);
        let same_args = self.recent.iter().all(|f| f.args_key() == first.args_key());
        let same_error =
            first.error.is_some() && self.recent.iter().all(|f| f.error == first.error);
        same_tool && (same_args || same_error)
    }

    /// The once-per-batch decision (the stage-skip guard lives here).
    pub fn consume_pending_action(&mut self) -> DetectorAction {
        match (self.stage, self.nudge_delivered) {
            (Stage::None, _) | (Stage::Nudged, true) => DetectorAction::None,
            (Stage::Nudged, false) => {
                self.nudge_delivered = true;
                DetectorAction::InjectNudge
            }
            (Stage::StripTools, true) => DetectorAction::StripTools,
            (Stage::StripTools, false) => {
                self.stage = Stage::Nudged;
                self.nudge_delivered = true;
                DetectorAction::InjectNudge
            }
        }
    }

    /// Hard reset at the stripped call (only acts in stage 2).
    pub fn clear_strip_tools(&mut self) {
        if self.stage == Stage::StripTools {
            self.reset();
        }
    }

    /// Full reset.
    pub fn reset(&mut self) {
        self.recent.clear();
        self.stage = Stage::None;
        self.nudge_delivered = false;
    }
}

/// The detector wired into the loop.
pub(super) struct ReflexPolicy {
    detector: ReflexDetector,
    config: ReflexConfig,
    strip_next: bool,
    /// The nudge's templates (`nudge_entry`, `nudge_message`), read the first time it fires.
    nudge: std::cell::OnceCell<(Template, Template)>,
}

impl ReflexPolicy {
    pub(super) fn new(config: ReflexConfig) -> Self {
        Self {
            detector: ReflexDetector::new(config.window as usize, config.strip_on_second_fire),
            config,
            strip_next: false,
            nudge: std::cell::OnceCell::new(),
        }
    }

    fn nudge_text(&self) -> (String, Option<String>) {
        let window = self.detector.window_snapshot();
        let tool = window.first().map(|f| f.tool.clone());
        let (entry, message) = self.nudge.get_or_init(|| {
            (
                Template::new(&self.config.nudge_entry, &["i", "tool", "args", "error"]),
                Template::new(&self.config.nudge_message, &["n", "calls", "tool"]),
            )
        });
        let calls: Vec<String> = window
            .iter()
            .enumerate()
            .map(|(i, f)| {
                entry.fill(&[
                    itoa::Buffer::new().format(i + 1),
                    &f.tool,
                    f.args.text(),
                    f.error.as_deref().unwrap_or("(no error)"),
                ])
            })
            .collect();
        let text = message.fill(&[
            itoa::Buffer::new().format(window.len()),
            &calls.join("\n"),
            tool.as_deref().unwrap_or("this tool"),
        ]);
        (text, tool)
    }
}

impl Policy for ReflexPolicy {
    fn id(&self) -> &'static str {
        "moltis-reflex"
    }

    fn before_call(&mut self, _view: &LoopView) -> Vec<Action> {
        if !self.strip_next {
            return Vec::new();
        }
        self.strip_next = false;
        self.detector.clear_strip_tools();
        vec![Action::StripToolsThisCall]
    }

    fn after_batch(&mut self, records: &[CallRecord], _view: &LoopView) -> Vec<Action> {
        for r in records {
            self.detector.record(Fingerprint::of(r));
        }
        match self.detector.consume_pending_action() {
            DetectorAction::None => Vec::new(),
            DetectorAction::InjectNudge => {
                let (text, tool) = self.nudge_text();
                vec![
                    Action::Intervene {
                        stage: 1,
                        action: "nudge",
                        tool,
                    },
                    Action::Inject {
                        role: crate::llm::Role::User,
                        text,
                    },
                ]
            }
            DetectorAction::StripTools => {
                self.strip_next = true;
                let tool = self
                    .detector
                    .window_snapshot()
                    .first()
                    .map(|f| f.tool.clone());
                vec![
                    Action::Intervene {
                        stage: 2,
                        action: "strip_tools",
                        tool,
                    },
                    Action::Inject {
                        role: crate::llm::Role::User,
                        text: self.config.strip_message.clone(),
                    },
                ]
            }
        }
    }
}

/// Upstream's 18 detector unit tests (`tool_loop_detector.rs`), re-expressed.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Config;
    use DetectorAction::{InjectNudge, None as Nothing, StripTools};
    use serde_json::json;

    const MISSING: &str = "missing 'command'";

    fn fail() -> Fingerprint {
        Fingerprint::failure("exec", &json!({}), Some(MISSING))
    }

    fn det() -> ReflexDetector {
        ReflexDetector::new(3, true)
    }

    #[test]
    fn window_zero_disables_detection() {
        let mut d = ReflexDetector::new(0, true);
        for _ in 0..3 {
            assert_eq!(d.record(fail()), Nothing);
        }
    }

    #[test]
    fn three_identical_failures_fire_nudge() {
        let mut d = det();
        let got: Vec<_> = (0..3).map(|_| d.record(fail())).collect();
        assert_eq!(got, [Nothing, Nothing, InjectNudge]);
        assert_eq!(d.stage(), Stage::Nudged);
    }

    #[test]
    fn fourth_failure_after_nudge_strips_tools() {
        let mut d = det();
        let got: Vec<_> = (0..4).map(|_| d.record(fail())).collect();
        assert_eq!(got[3], StripTools);
        assert_eq!(d.stage(), Stage::StripTools);
    }

    #[test]
    fn strip_tools_disabled_stays_in_nudged() {
        let mut d = ReflexDetector::new(3, false);
        let got: Vec<_> = (0..4).map(|_| d.record(fail())).collect();
        assert_eq!(got[3], Nothing);
        assert_eq!(d.stage(), Stage::Nudged);
    }

    #[test]
    fn success_resets_state() {
        let mut d = det();
        d.record(fail());
        d.record(fail());
        d.record(Fingerprint::success("exec", &json!({"command": "ls"})));
        assert_eq!(d.stage(), Stage::None);
        let got: Vec<_> = (0..3).map(|_| d.record(fail())).collect();
        assert_eq!(got[2], InjectNudge);
    }

    #[test]
    fn different_args_same_tool_same_error_still_fires() {
        let mut d = det();
        d.record(Fingerprint::failure("exec", &json!({}), Some(MISSING)));
        d.record(Fingerprint::failure(
            "exec",
            &json!({"cmd": ""}),
            Some(MISSING),
        ));
        let got = d.record(Fingerprint::failure(
            "exec",
            &json!({"cmd": " "}),
            Some(MISSING),
        ));
        assert_eq!(got, InjectNudge);
    }

    #[test]
    fn different_tools_do_not_fire() {
        let mut d = det();
        let mut last = Nothing;
        for tool in ["exec", "browser", "exec"] {
            last = d.record(Fingerprint::failure(tool, &json!({}), Some(MISSING)));
        }
        assert_eq!(last, Nothing);
    }

    #[test]
    fn legitimate_retry_pattern_does_not_fire() {
        let mut d = det();
        d.record(Fingerprint::failure(
            "ls",
            &json!({"path": "/x"}),
            Some("no such dir"),
        ));
        d.record(Fingerprint::success("ls", &json!({"path": "/tmp"})));
        assert_eq!(d.stage(), Stage::None);
    }

    #[test]
    fn clear_strip_tools_resets_state_fully() {
        let mut d = det();
        (0..4).for_each(|_| {
            d.record(fail());
        });
        d.clear_strip_tools();
        assert_eq!(d.stage(), Stage::None);
        assert!(d.window_snapshot().is_empty());
    }

    #[test]
    fn post_strip_single_failure_does_not_immediately_refire() {
        let mut d = det();
        (0..4).for_each(|_| {
            d.record(fail());
        });
        d.clear_strip_tools();
        let got: Vec<_> = (0..3).map(|_| d.record(fail())).collect();
        assert_eq!(got, [Nothing, Nothing, InjectNudge]);
        assert_eq!(d.stage(), Stage::Nudged);
    }

    #[test]
    fn canonicalize_is_order_stable() {
        let a = Fingerprint::success("t", &json!({"a":1,"b":2}));
        let b = Fingerprint::success("t", &json!({"b":2,"a":1}));
        assert_eq!(a.args_key(), b.args_key());
    }

    #[test]
    fn consume_pending_action_none_when_empty() {
        assert_eq!(det().consume_pending_action(), Nothing);
    }

    #[test]
    fn consume_pending_action_returns_nudge_once_then_none() {
        let mut d = det();
        (0..3).for_each(|_| {
            d.record(fail());
        });
        assert_eq!(d.consume_pending_action(), InjectNudge);
        assert_eq!(d.consume_pending_action(), Nothing);
    }

    #[test]
    fn consume_pending_action_strip_only_after_nudge_delivered() {
        let mut d = det();
        (0..3).for_each(|_| {
            d.record(fail());
        });
        assert_eq!(d.consume_pending_action(), InjectNudge);
        d.record(fail());
        assert_eq!(d.consume_pending_action(), StripTools);
    }

    #[test]
    fn trailing_success_in_same_batch_suppresses_intervention() {
        let mut d = det();
        d.record(fail());
        d.record(fail());
        assert_eq!(d.record(fail()), InjectNudge);
        d.record(Fingerprint::success("exec", &json!({"command": "true"})));
        assert_eq!(d.stage(), Stage::None);
        assert_eq!(d.consume_pending_action(), Nothing);
    }

    #[test]
    fn stage_skip_in_one_batch_delivers_nudge_first() {
        let mut d = det();
        let got: Vec<_> = (0..4).map(|_| d.record(fail())).collect();
        assert_eq!(got, [Nothing, Nothing, InjectNudge, StripTools]);
        assert_eq!(d.consume_pending_action(), InjectNudge);
        assert_eq!(d.stage(), Stage::Nudged);
        assert_eq!(d.consume_pending_action(), Nothing);
        d.record(fail());
        assert_eq!(d.stage(), Stage::StripTools);
        assert_eq!(d.consume_pending_action(), StripTools);
    }

    #[test]
    fn failure_without_error_string_still_counts_as_failure() {
        let mut d = det();
        let got: Vec<_> = (0..3)
            .map(|_| d.record(Fingerprint::failure("browser", &json!({}), None)))
            .collect();
        assert_eq!(got[2], InjectNudge);
        d.record(Fingerprint::success("browser", &json!({})));
        assert_eq!(d.stage(), Stage::None);
    }

    #[test]
    fn intervention_message_contains_evidence() {
        let mut p = ReflexPolicy::new(Config::moltis().reflex);
        (0..3).for_each(|_| {
            p.detector.record(fail());
        });
        let (text, tool) = p.nudge_text();
        assert_eq!(tool.as_deref(), Some("exec"));
        for needle in ["LOOP DETECTED", "exec", MISSING, "Do NOT", "plain text"] {
            assert!(text.contains(needle), "missing {needle:?} in {text}");
        }
        assert!(text.starts_with("SYSTEM INTERVENTION \u{2014} LOOP DETECTED\n\nYour last 3 tool calls were:\n  1. exec({}) \u{2192} error: missing 'command'\n"));
        assert!(text.ends_with("\n\nThe user is waiting for a text response."));
    }
}
