//! Defences the engine consults, one file each, and the profiles that bundle them.
//!
//! A [`Policy`] sees the loop at fixed points (before a model call, on a text answer, on a tool
//! batch before and after it runs) and answers with [`Action`]s; the engine applies them and
//! records the trace. Policies own their counters; they never see files, clocks or threads.
//! [`Config`] holds every threshold and message text; a profile is a named `Config`.

mod auto_continue;
mod budget;
pub mod citations;
pub mod compaction;
pub mod completion;
mod config;
mod continuation;
mod cost;
mod duplicate;
pub mod final_text;
pub mod intent;
mod loop_detector;
mod patch;
pub mod profiles;
mod recovery;
mod reflex;
pub mod similarity;
mod template;
pub mod text_calls;
mod truncation;
pub mod validate;

pub use config::*;
pub use duplicate::Tracker;
pub use profiles::{PROFILES, Profile};
pub use reflex::{DetectorAction, Fingerprint, ReflexDetector, Stage};
pub(crate) use template::{FailureMessages, Template, fill};

use crate::llm::{ModelResponse, Role, ToolSpec};
use crate::vocabulary::OutcomeKind;
use serde_json::Value;

/// The loop's state as policies may read it.
#[derive(Debug, Clone, Copy)]
pub struct LoopView {
    /// Current iteration, 1-based.
    pub iteration: u32,
    /// Tool calls the model has asked for so far (executed or rejected).
    pub total_tool_calls: u64,
    /// Whether tools are offered to the model on this iteration.
    pub tools_available: bool,
    /// Whether the run is in force-text mode.
    pub force_text: bool,
    /// Dollars spent so far.
    pub cost_usd: f64,
    /// Tokens used so far (input and output).
    pub tokens: u64,
}

#[cfg(test)]
impl LoopView {
    /// Iteration `iteration` of a fresh run with tools on offer: nothing spent, nothing forced.
    pub(crate) fn at(iteration: u32) -> Self {
        Self {
            iteration,
            total_tool_calls: 0,
            tools_available: true,
            force_text: false,
            cost_usd: 0.0,
            tokens: 0,
        }
    }
}

/// One call of a batch, decoded, as policies see it after the batch ran.
#[derive(Debug, Clone)]
pub struct CallRecord {
    /// Tool name as the model emitted it.
    pub name: String,
    /// Arguments as decoded from the model (before any coercion).
    pub args: crate::llm::Args,
    /// How the call ended.
    pub result: CallResult,
}

/// How one call ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallResult {
    /// It ran and succeeded.
    Ok,
    /// It ran (or was looked up) and failed, with or without error text.
    Failed(Option<String>),
    /// It was rejected before dispatch with this message.
    Rejected(String),
}

impl CallResult {
    /// Whether the call counts as a failure (rejections included).
    pub fn failed(&self) -> bool {
        !matches!(self, Self::Ok)
    }

    /// The error text, if any.
    pub fn error(&self) -> Option<&str> {
        match self {
            Self::Ok => None,
            Self::Failed(e) => e.as_deref(),
            Self::Rejected(e) => Some(e),
        }
    }
}

/// What a policy asks the engine to do. Applied in order; each leaves a trace event.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Record an intervention decision (`stage` 1 advises, 2 restricts, 3 ends the run).
    Intervene {
        /// 1, 2 or 3.
        stage: u8,
        /// What the decision does: `nudge`, `warn`, `strip_tools`, `force_text`, `discard`, …
        action: &'static str,
        /// The tool the decision is about, if any.
        tool: Option<String>,
    },
    /// Append a message to the conversation.
    Inject {
        /// Role of the message.
        role: Role,
        /// Its text.
        text: String,
    },
    /// Offer no tools on the model call about to be made.
    StripToolsThisCall,
    /// Switch force-text mode on for the rest of the run.
    ForceText {
        /// Why.
        cause: &'static str,
    },
    /// The tool batch just received is discarded unexecuted (the `count`-th time in a row).
    Discard {
        /// The policy's running count.
        count: u32,
    },
    /// Tell the operator something without telling the model (a log line, a UI warning).
    Notice {
        /// The text.
        text: String,
    },
    /// End the run now.
    End {
        /// How.
        outcome: OutcomeKind,
        /// Why.
        detail: String,
    },
}

/// A policy's verdict on one call of a batch, before anything runs.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Screen {
    /// What to do (applied after the batch's results are in).
    pub actions: Vec<Action>,
    /// Skip this call and the rest of the batch.
    pub skip_rest: Option<Skip>,
}

/// Why a screen skipped the rest of a batch, as the trace and the model see it.
#[derive(Debug, Clone, PartialEq)]
pub struct Skip {
    /// Short reason for the trace (`tool_call_skipped`).
    pub reason: &'static str,
    /// The tool result the model gets for each skipped call.
    pub message: &'static str,
}

/// A defence. Every hook has a neutral default, so a policy implements only its own points.
pub trait Policy: Send {
    /// Stable id used in traces and metrics.
    fn id(&self) -> &'static str;

    /// Before each model call.
    fn before_call(&mut self, _view: &LoopView) -> Vec<Action> {
        Vec::new()
    }

    /// The model answered with text only. `Some(actions)` keeps the loop going instead of
    /// returning the text (the first policy to answer `Some` wins), unless an action ends it.
    fn on_text(
        &mut self,
        _text: &str,
        _response: &ModelResponse,
        _view: &LoopView,
    ) -> Option<Vec<Action>> {
        None
    }

    /// Told after a text answer whether some policy kept the loop going.
    fn after_text(&mut self, _text: &str, _continued: bool) {}

    /// The model answered with tool calls. `Some(actions)` (with an [`Action::Discard`])
    /// discards the batch unexecuted.
    fn on_batch(&mut self, _response: &ModelResponse, _view: &LoopView) -> Option<Vec<Action>> {
        None
    }

    /// A batch is about to run (not discarded).
    fn before_execute(&mut self, _calls: &[(&str, &crate::llm::Args)]) {}

    /// Screen one call of a batch in order, before it runs (`turn` is the iteration).
    fn screen(&mut self, _name: &str, _args: &Value, _view: &LoopView) -> Screen {
        Screen::default()
    }

    /// Pre-dispatch check of one call: `Some(message)` rejects it. `decoded` is the line that
    /// says how its arguments were decoded, when they did not come as JSON
    /// ([`validate::decode_status`]).
    fn validate(
        &self,
        _name: &str,
        _args: &Value,
        _tool: Option<&ToolSpec>,
        _decoded: Option<&str>,
    ) -> Option<String> {
        None
    }

    /// After the batch ran, with every call's result in call order.
    fn after_batch(&mut self, _records: &[CallRecord], _view: &LoopView) -> Vec<Action> {
        Vec::new()
    }
}

/// The policies a configuration enables, in the order the engine consults them. `workspace`
/// (file → line count) feeds the citation check.
pub fn build(
    config: &Config,
    workspace: &std::collections::BTreeMap<String, u32>,
) -> Vec<Box<dyn Policy>> {
    let mut out: Vec<Box<dyn Policy>> = Vec::new();
    if config.validation.enabled {
        out.push(Box::new(validate::Validator::new(
            config.validation.clone(),
        )));
    }
    if config.intent_nudge.enabled {
        out.push(Box::new(intent::IntentNudge::new(
            config.intent_nudge.clone(),
        )));
    }
    if config.auto_continue.enabled {
        out.push(Box::new(auto_continue::AutoContinue::new(
            config.auto_continue.clone(),
        )));
    }
    if config.truncation.enabled {
        out.push(Box::new(truncation::Truncation::new(
            config.truncation.clone(),
        )));
    }
    if config.duplicate.enabled {
        out.push(Box::new(duplicate::DuplicateTracker::new(
            config.duplicate.clone(),
        )));
    }
    if config.reflex.enabled && config.reflex.window > 0 {
        out.push(Box::new(reflex::ReflexPolicy::new(config.reflex.clone())));
    }
    if config.budget.enabled {
        out.push(Box::new(budget::Budget::new(config.budget.clone())));
    }
    if config.cost.enabled {
        out.push(Box::new(cost::CostGuard::new(config.cost.clone())));
    }
    if config.continuation.enabled {
        out.push(Box::new(continuation::Continuation::new(
            config.continuation.clone(),
        )));
    }
    if config.recovery.enabled {
        out.push(Box::new(recovery::Recovery::new(config.recovery.clone())));
    }
    if config.similarity.enabled {
        out.push(Box::new(loop_detector::LoopDetector::new(
            config.similarity.clone(),
        )));
    }
    if config.citations.enabled {
        out.push(Box::new(loop_detector::Citations::new(
            config.citations.clone(),
            workspace.clone(),
        )));
    }
    out
}

/// The usual answer of a defence that speaks to the model: record the decision, then add the
/// message as a user turn.
pub(crate) fn say(
    stage: u8,
    action: &'static str,
    tool: Option<String>,
    text: String,
) -> Vec<Action> {
    vec![
        Action::Intervene {
            stage,
            action,
            tool,
        },
        Action::Inject {
            role: Role::User,
            text,
        },
    ]
}
