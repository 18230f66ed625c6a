//! IronClaw's truncated-batch handling (PR #1632): a tool batch cut by the output limit
//! (`finish = length`) is discarded unexecuted with a notice; from the `force_text_at`-th such
//! batch the run switches to force-text. Text answers do not reset the count (so scattered
//! truncations still escalate); an executed batch does.

use super::{Action, LoopView, Policy, TruncationConfig};
use crate::llm::Args;
use crate::llm::{Finish, ModelResponse, Role};

pub(super) struct Truncation {
    config: TruncationConfig,
    count: u32,
}

impl Truncation {
    pub(super) fn new(config: TruncationConfig) -> Self {
        Self { config, count: 0 }
    }
}

impl Policy for Truncation {
    fn id(&self) -> &'static str {
        "ironclaw-truncation"
    }

    fn on_batch(&mut self, response: &ModelResponse, _view: &LoopView) -> Option<Vec<Action>> {
        if response.finish != Finish::Length {
            return None;
        }
        self.count += 1;
        let escalate = self.count >= self.config.force_text_at;
        let mut actions = vec![
            Action::Discard { count: self.count },
            Action::Intervene {
                stage: if escalate { 2 } else { 1 },
                action: if escalate { "force_text" } else { "discard" },
                tool: response.tool_calls.first().map(|c| c.name.clone()),
            },
            Action::Inject {
                role: Role::User,
                text: self.config.notice.clone(),
            },
        ];
        if escalate {
            actions.push(Action::ForceText {
                cause: "truncation",
            });
        }
        Some(actions)
    }

    fn before_execute(&mut self, _calls: &[(&str, &Args)]) {
        self.count = 0;
    }
}
