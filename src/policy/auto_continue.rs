//! Moltis' auto-continue: a short text answer (under `min_chars` after trimming) from a run that
//! has made at least `min_tool_calls` tool calls is treated as a stall, and the model is
//! re-prompted, at most `max` times per run.

use super::say;
use super::{Action, AutoContinueConfig, LoopView, Policy};

pub(super) struct AutoContinue {
    config: AutoContinueConfig,
    used: u32,
}

impl AutoContinue {
    pub(super) fn new(config: AutoContinueConfig) -> Self {
        Self { config, used: 0 }
    }
}

impl Policy for AutoContinue {
    fn id(&self) -> &'static str {
        "moltis-auto-continue"
    }

    fn on_text(
        &mut self,
        text: &str,
        _response: &crate::llm::ModelResponse,
        view: &LoopView,
    ) -> Option<Vec<Action>> {
        let short = text.trim().chars().count() < self.config.min_chars;
        if !short
            || view.total_tool_calls < self.config.min_tool_calls
            || self.used >= self.config.max
        {
            return None;
        }
        self.used += 1;
        Some(say(1, "continue", None, self.config.message.clone()))
    }
}
