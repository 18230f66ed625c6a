//! The shared vocabulary of the pure core: how a run ended, an approval decision, prices.
//!
//! These words are used by the scenario format, the policies and the trace alike, so they sit
//! below all three (every arrow points down); `scenario` re-exports them as part of its format.
//! Nothing here touches files, clocks or threads.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Prices per million tokens.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Prices {
    /// Dollars per million input tokens.
    #[serde(default)]
    pub input_per_mtok: f64,
    /// Dollars per million output tokens.
    #[serde(default)]
    pub output_per_mtok: f64,
}

/// An approval decision.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Run the tool and resume.
    Approve,
    /// Do not run it; the turn ends.
    Reject,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeKind {
    /// The model answered in text and the loop returned it.
    Response,
    /// The iteration cap was reached.
    MaxIterations,
    /// A stop signal ended the run.
    Stopped,
    /// A defence or the runtime ended the run with a failure.
    Failure,
    /// The model side failed.
    Error,
    /// A tool call waits for approval and no decision is scripted.
    NeedApproval,
}

impl OutcomeKind {
    /// The snake_case name used in goldens, CSV and expectations.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Response => "response",
            Self::MaxIterations => "max_iterations",
            Self::Stopped => "stopped",
            Self::Failure => "failure",
            Self::Error => "error",
            Self::NeedApproval => "need_approval",
        }
    }
}

/// Every defence that leaves `intervention`, `message_injected` or `notice` events, by the id
/// those events carry (`policy` / `source`): the engine's policies, the plan/step loop
/// (`plan-step`), and `agent`, a black-box agent's own interventions as `harness exec` infers
/// them. Expectations naming another id could never match, so the scenario validator refuses
/// them; the engine checks (in debug builds) that it emits no id missing here.
pub const INTERVENTION_SOURCES: &[&str] = &[
    "moltis-reflex",
    "moltis-auto-continue",
    "moltis-answer-fallback",
    "final-text",
    "moltis-forced-exec",
    "moltis-empty-name-retry",
    "moltis-text-calls",
    "moltis-malformed-call-retry",
    "ironclaw-intent",
    "ironclaw-truncation",
    "ironclaw-duplicate",
    "ironclaw-budget",
    "ironclaw-recovery",
    "cost-guard",
    "agentloop-continuation",
    "agentloop-loop-detector",
    "agentloop-citations",
    "plan-step",
    AGENT,
];

/// The policy (and source) of what a black-box agent did on its own, as its trace is read
/// from its requests (`harness exec`) or from its recorded spans (an imported trace).
pub const AGENT: &str = "agent";

/// Every `action` an `intervention` event can carry: stage 1 advice (`nudge`, `warn`,
/// `limit_nudge`, `discard`, `continue`, `unverified_citations`, `lenient_envelope`), stage 2
/// restriction (`strip_tools`, `force_text`, `skip_batch`, `infer_done`, `force_done`,
/// `stutter_guard`) and stage 3 ends (`stop`, `fail`). Kept with [`INTERVENTION_SOURCES`] for
/// the same reason.
pub const INTERVENTION_ACTIONS: &[&str] = &[
    "nudge",
    "warn",
    "limit_nudge",
    "discard",
    "continue",
    "unverified_citations",
    "lenient_envelope",
    "strip_tools",
    "force_text",
    "skip_batch",
    "infer_done",
    "force_done",
    "stutter_guard",
    "stop",
    "fail",
];

/// How `serve`'s refusal of a text answer to a request that requires a tool call begins (the
/// run's `error` outcome carries it): the report card reads such a case as one that could not
/// drive the agent.
pub const TEXT_REFUSED_FOR_TOOL_CHOICE: &str =
    "harness serve: the request requires a tool call (tool_choice `required` / `any`)";

/// How `serve`'s notice begins when the scenario's text went out as JSON in a shape harness
/// chose (the request asked for JSON and named no shape: `{"text": …}`). An agent that fails
/// right after it may have failed on harness's choice, not on the case; the report card reads
/// such a case as one that could not drive the agent.
pub const SHAPE_CHOSEN: &str = "the scenario's answer goes out as JSON in a shape harness chose (the request asks for JSON and names none)";

/// `serve`'s refusal of a request past the scenario's iteration cap. An instrumented agent's
/// own trace records it as a failed model call; `import` reads it back ([`capped_at`]), so the
/// run ends at the cap there as in exec's trace, not in a provider error.
pub fn cap_refusal(cap: u32) -> String {
    format!("{CAP_HEAD}'s {CAP}{cap}{CAP_REACHED}; no more answers in this conversation")
}

/// The pieces of [`cap_refusal`] that [`capped_at`] finds, whatever came of the quote between
/// the first two.
const CAP_HEAD: &str = "harness serve: the scenario";
const CAP: &str = "iteration cap (";
const CAP_REACHED: &str = ") is reached";

/// `serve`'s refusal of a request in a conversation that has ended (its cap reached, or its
/// script done).
pub const CONVERSATION_ENDED: &str =
    "harness serve: this conversation has ended (iteration cap or script exhausted)";

/// How a trace's `max_iterations` outcome says the agent asked past the cap and was refused.
pub fn refused_past_cap(cap: u32) -> String {
    format!("iteration cap reached ({cap}): the agent called again and was refused")
}

/// The cap a [`cap_refusal`] names, wherever in `text` it appears (clients wrap the provider's
/// message in their own words).
pub fn capped_at(text: &str) -> Option<u32> {
    // A client may print the body with its quote escaped (`scenario\'s` in LiteLLM's bytes,
    // `\u0027` in .NET's JSON, `&#x27;` in HTML).
    let after = &text[text.find(CAP_HEAD)? + CAP_HEAD.len()..];
    let at = after.find(CAP)?;
    if at > 8 || !after[..at].ends_with("s ") {
        return None;
    }
    let (digits, _) = after[at + CAP.len()..].split_once(CAP_REACHED)?;
    digits.parse().ok()
}

/// What a failure pattern (`[serve] failure`, `--failure`) may be written in, for hints: the
/// patterns are compiled by `regex-lite`, Rust's `regex` syntax without Unicode classes.
pub const REGEX_SYNTAX: &str = "Rust `regex` syntax without Unicode classes: `\\p{…}` is not supported (use `[[:alpha:]]` or explicit ranges); `\\w`, `\\d` and `\\s` match ASCII only";

/// The trace's notice that a scenario's portable tool stands for one of the agent's tools:
/// `harness serve` writes it, the report card reads it back ([`bound_tool`]).
pub fn stands_for(declared: &str, offered: &str, rule: &str) -> String {
    format!("the scenario's tool `{declared}` stands for the agent's `{offered}` (bind = {rule})")
}

/// The scenario's tool and the agent's tool a [`stands_for`] notice names, if it is one.
pub fn bound_tool(notice: &str) -> Option<(&str, &str)> {
    let rest = notice.strip_prefix("the scenario's tool `")?;
    let (declared, rest) = rest.split_once("` stands for the agent's `")?;
    rest.split_once('`').map(|(offered, _)| (declared, offered))
}

/// Why a served call is skipped in an inferred trace: a later request of the agent left its
/// result out.
pub const RESULT_NOT_SENT: &str = "the agent sent no result for this call";

/// Why a served call is skipped in an inferred trace: the agent ended without a later request.
pub const RESULT_NEVER_SENT: &str =
    "the agent ended without sending this call's result (whether it ran cannot be seen)";

/// The notice of a generated valid call whose arguments harness cannot vouch for (the agent's
/// schema says what harness does not check), after the answer that made it.
pub fn doubted_call(id: &str, why: &str) -> String {
    format!("{DOUBTED_PREFIX}{id}` may not be what the agent's schema allows: {why}")
}

const DOUBTED_PREFIX: &str = "the arguments made for the valid call `";

/// The call id and the reason of a [`doubted_call`] notice.
pub fn doubted(text: &str) -> Option<(&str, &str)> {
    let rest = text.strip_prefix(DOUBTED_PREFIX)?;
    let (id, rest) = rest.split_once('`')?;
    let why = rest.split_once(": ").map_or("", |(_, w)| w);
    Some((id, why))
}

/// Why a served call is skipped in an inferred trace: the agent was killed at its timeout
/// before a later request.
pub const RESULT_UNSENT_AT_KILL: &str = "the agent was killed at its timeout before sending this call's result (whether it ran cannot be seen)";
