//! The book's `max_tokens` branch: a response cut by the output limit is not an answer; the
//! loop pushes it, asks the model to continue and goes on. A cut tool batch is not executed
//! (the book switches on the stop reason before looking at tool calls).

use super::{Action, ContinuationConfig, LoopView, Policy, say};
use crate::llm::{Finish, ModelResponse};

pub(super) struct Continuation {
    config: ContinuationConfig,
    count: u32,
}

impl Continuation {
    pub(super) fn new(config: ContinuationConfig) -> Self {
        Self { config, count: 0 }
    }

    fn go_on(&self) -> Vec<Action> {
        say(1, "continue", None, self.config.message.clone())
    }
}

impl Policy for Continuation {
    fn id(&self) -> &'static str {
        "agentloop-continuation"
    }

    fn on_text(
        &mut self,
        _text: &str,
        response: &ModelResponse,
        _view: &LoopView,
    ) -> Option<Vec<Action>> {
        (response.finish == Finish::Length).then(|| self.go_on())
    }

    fn on_batch(&mut self, response: &ModelResponse, _view: &LoopView) -> Option<Vec<Action>> {
        if response.finish != Finish::Length {
            return None;
        }
        self.count += 1;
        let mut actions = vec![Action::Discard { count: self.count }];
        actions.extend(self.go_on());
        Some(actions)
    }
}
