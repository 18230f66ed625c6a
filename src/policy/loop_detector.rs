//! The book's defences as policies (runtimes.md AgentLoop): the similarity LoopDetector, checked on each
//! call before it runs — an info notice one repeat before the limit, then at the limit a
//! warning to the model, a reset, and the rest of the batch skipped — and the optional check
//! that sends back a final answer whose `file:line` citations mostly cannot be verified.

use super::citations;
use super::say;
use super::similarity::{Detection, SimilarityDetector};
use super::{Action, CitationsConfig, LoopView, Policy, Screen, SimilarityConfig, Skip, fill};
use crate::llm::ModelResponse;
use serde_json::Value;
use std::collections::BTreeMap;

pub(super) struct LoopDetector {
    config: SimilarityConfig,
    detector: SimilarityDetector,
}

impl LoopDetector {
    pub(super) fn new(config: SimilarityConfig) -> Self {
        let detector = SimilarityDetector::new(config.max_repeats, config.similarity);
        Self { config, detector }
    }
}

impl Policy for LoopDetector {
    fn id(&self) -> &'static str {
        "agentloop-loop-detector"
    }

    fn screen(&mut self, name: &str, args: &Value, view: &LoopView) -> Screen {
        match self.detector.check(view.iteration, name, args) {
            Detection::None => Screen::default(),
            Detection::Info { count } => Screen {
                actions: vec![Action::Notice {
                    text: fill(
                        &self.config.info_message,
                        &[("tool", name), ("count", &count.to_string())],
                    ),
                }],
                skip_rest: None,
            },
            Detection::Loop { count, first_turn } => {
                self.detector.reset();
                let text = fill(
                    &self.config.warning_message,
                    &[
                        ("tool", name),
                        ("count", &count.to_string()),
                        ("first", &first_turn.to_string()),
                    ],
                );
                Screen {
                    actions: say(2, "skip_batch", Some(name.to_owned()), text),
                    skip_rest: Some(Skip {
                        reason: "loop detected",
                        message: "Not executed: the loop detector stopped this batch.",
                    }),
                }
            }
        }
    }
}

pub(super) struct Citations {
    config: CitationsConfig,
    workspace: BTreeMap<String, u32>,
    checks: u32,
}

impl Citations {
    pub(super) fn new(config: CitationsConfig, workspace: BTreeMap<String, u32>) -> Self {
        Self {
            config,
            workspace,
            checks: 0,
        }
    }
}

impl Policy for Citations {
    fn id(&self) -> &'static str {
        "agentloop-citations"
    }

    fn on_text(
        &mut self,
        text: &str,
        _response: &ModelResponse,
        _view: &LoopView,
    ) -> Option<Vec<Action>> {
        if self.checks >= self.config.max_checks {
            return None;
        }
        let v = citations::verify(text, &self.workspace);
        if v.risk <= self.config.max_risk {
            return None;
        }
        self.checks += 1;
        Some(say(
            1,
            "unverified_citations",
            None,
            fill(
                &self.config.message,
                &[("unverified", &v.unverified.join(", "))],
            ),
        ))
    }
}
