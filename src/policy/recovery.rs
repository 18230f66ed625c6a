//! IronClaw's autonomous recovery (job and container workers, PR #1720): a tool-enabled reply
//! that came back empty or malformed (`empty_tool_completion`) is answered first with a nudge,
//! then with a second nudge and a text-only call; the `fail_at`-th in a row ends the run. While
//! the text-only recovery is active, an `empty_text_response` ends the run too. Any other
//! non-blank text, or a valid tool batch, resets the machine.

use super::say;
use super::{Action, LoopView, Policy, RecoveryConfig};
use crate::llm::Args;
use crate::llm::{Anomaly, ModelResponse};
use crate::vocabulary::OutcomeKind;

pub(super) struct Recovery {
    config: RecoveryConfig,
    empties: u32,
    pending: bool,
    active: bool,
}

impl Recovery {
    pub(super) fn new(config: RecoveryConfig) -> Self {
        Self {
            config,
            empties: 0,
            pending: false,
            active: false,
        }
    }

    fn reset(&mut self) {
        self.empties = 0;
        self.pending = false;
        self.active = false;
    }

    fn fail(&self) -> Vec<Action> {
        vec![
            Action::Intervene {
                stage: 3,
                action: "fail",
                tool: None,
            },
            Action::End {
                outcome: OutcomeKind::Failure,
                detail: self.config.failure_message.clone(),
            },
        ]
    }
}

impl Policy for Recovery {
    fn id(&self) -> &'static str {
        "ironclaw-recovery"
    }

    fn before_call(&mut self, _view: &LoopView) -> Vec<Action> {
        if self.pending {
            self.pending = false;
            self.active = true;
        }
        if self.active {
            vec![Action::StripToolsThisCall]
        } else {
            Vec::new()
        }
    }

    fn on_text(
        &mut self,
        text: &str,
        response: &ModelResponse,
        _view: &LoopView,
    ) -> Option<Vec<Action>> {
        match response.anomaly {
            Some(Anomaly::EmptyToolCompletion) => {
                self.empties += 1;
                self.active = false;
                if self.empties >= self.config.fail_at {
                    return Some(self.fail());
                }
                let (stage, action, message) = if self.empties == 1 {
                    (1, "nudge", &self.config.nudge_message)
                } else {
                    self.pending = true;
                    (2, "force_text", &self.config.force_message)
                };
                Some(say(stage, action, None, message.clone()))
            }
            Some(Anomaly::EmptyTextResponse) if self.active => Some(self.fail()),
            _ => {
                if !text.trim().is_empty() {
                    self.reset();
                }
                None
            }
        }
    }

    fn before_execute(&mut self, _calls: &[(&str, &Args)]) {
        self.reset();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Config;

    fn view() -> LoopView {
        LoopView::at(1)
    }

    fn reply(text: &str, anomaly: Option<Anomaly>) -> ModelResponse {
        ModelResponse {
            anomaly,
            ..ModelResponse::text_only(text)
        }
    }

    fn empty(r: &mut Recovery) -> Option<Vec<Action>> {
        let resp = reply(
            "I'm not sure how to respond to that.",
            Some(Anomaly::EmptyToolCompletion),
        );
        r.on_text("I'm not sure how to respond to that.", &resp, &view())
    }

    fn action(actions: &Option<Vec<Action>>) -> &'static str {
        match actions.as_deref() {
            Some([Action::Intervene { action, .. }, ..]) => action,
            _ => "none",
        }
    }

    fn strips(r: &mut Recovery) -> bool {
        r.before_call(&view()).contains(&Action::StripToolsThisCall)
    }

    fn recovery() -> Recovery {
        Recovery::new(Config::none().recovery)
    }

    #[test]
    fn first_empty_tool_completion_issues_nudge() {
        let mut r = recovery();
        assert_eq!(action(&empty(&mut r)), "nudge");
        assert!(!strips(&mut r), "the next iteration is not forced");
    }

    #[test]
    fn second_empty_tool_completion_schedules_text_recovery() {
        let mut r = recovery();
        empty(&mut r);
        assert_eq!(action(&empty(&mut r)), "force_text");
        assert!(strips(&mut r), "the next iteration is text-only");
    }

    #[test]
    fn forced_text_recovery_fallback_fails() {
        let mut r = recovery();
        empty(&mut r);
        empty(&mut r);
        assert!(strips(&mut r));
        let resp = reply(
            "I'm not sure how to respond to that.",
            Some(Anomaly::EmptyTextResponse),
        );
        assert_eq!(action(&r.on_text("x", &resp, &view())), "fail");
    }

    #[test]
    fn valid_tool_call_resets_counter() {
        let mut r = recovery();
        empty(&mut r);
        r.before_execute(&[]);
        assert_eq!(action(&empty(&mut r)), "nudge");
    }

    #[test]
    fn meaningful_text_after_text_recovery_resets_state() {
        let mut r = recovery();
        empty(&mut r);
        empty(&mut r);
        assert!(strips(&mut r));
        let real = reply("Status: two files written.", None);
        assert!(
            r.on_text("Status: two files written.", &real, &view())
                .is_none()
        );
        assert!(!strips(&mut r));
        assert_eq!(action(&empty(&mut r)), "nudge");
    }

    #[test]
    fn third_in_a_row_fails() {
        let mut r = recovery();
        empty(&mut r);
        empty(&mut r);
        assert_eq!(action(&empty(&mut r)), "fail");
    }
}
