//! The book's `max_tokens` branch: a response cut by the output limit is not an answer; the
//! loop pushes it, asks the model to continue and goes on. A cut tool batch is not executed
//! (the book switches on the stop reason before looking at tool calls).
//!
//! The switch has cases for `end_turn`, `tool_use`, `max_tokens` and `stop_sequence` and no
//! `default`: a response with any other stop reason (a refusal, which harness reads as
//! `content_filter`) is pushed to the history and the `while` calls the model again, its tool
//! calls unexecuted. With `unhandled_goes_on` the policy does the same and says so in a notice.

use super::{Action, ContinuationConfig, LoopView, Policy, fill, say};
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

    /// The fall-through of a stop reason the switch has no case for, if this is one.
    fn falls_through(&self, response: &ModelResponse) -> Option<Vec<Action>> {
        let unhandled = matches!(response.finish, Finish::ContentFilter);
        (unhandled && self.config.unhandled_goes_on).then(|| {
            vec![Action::Notice {
                text: fill(
                    &self.config.unhandled_notice,
                    &[("reason", response.finish.as_str())],
                ),
            }]
        })
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
        if response.finish == Finish::Length {
            return Some(self.go_on());
        }
        self.falls_through(response)
    }

    fn on_batch(&mut self, response: &ModelResponse, _view: &LoopView) -> Option<Vec<Action>> {
        if response.finish != Finish::Length {
            return self.falls_through(response);
        }
        self.count += 1;
        let mut actions = vec![Action::Discard { count: self.count }];
        actions.extend(self.go_on());
        Some(actions)
    }
}
