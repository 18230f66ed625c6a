//! The trace: the typed, ordered events of one run on a virtual clock, rendered one line per
//! event for goldens ([`render_golden`]) and as JSON lines ([`render_jsonl`]).
//!
//! Every consumer matches [`Event`] exhaustively: a new variant must be a compile error in each
//! renderer and in the metrics fold. Trace JSON carries [`TRACE_VERSION`].

use crate::llm::{Anomaly, FaultKind, Finish, ModelResponse, ProviderFault, Purpose, Role};
use crate::vocabulary::Decision;
use crate::vocabulary::OutcomeKind;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::OnceLock;

mod field;

/// Version of the golden and JSON-lines trace formats.
pub const TRACE_VERSION: u32 = 1;

/// One event and the virtual time it happened at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TimedEvent {
    /// Virtual milliseconds since the run started.
    pub t_ms: u64,
    /// The event.
    #[serde(flatten)]
    pub event: Event,
}

/// A tool call as the model emitted it, in a response summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CallSummary {
    /// Call id.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Arguments as emitted: compact JSON, or the raw string.
    pub args: String,
    /// The arguments are unknown (an imported trace that recorded the call but not its
    /// arguments): `args` is `{}` and says nothing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub args_unknown: bool,
}

/// `call_0 exec({"command":"ls"})`, as the golden lists calls.
impl std::fmt::Display for CallSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.args_unknown {
            return write!(f, "{} {}(args unknown)", self.id, self.name);
        }
        write!(f, "{} {}({})", self.id, self.name, self.args)
    }
}

/// What happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Event {
    /// The run starts.
    RunStart {
        /// Profile in force.
        profile: String,
        /// Model name.
        model: String,
        /// Iteration cap.
        max_iterations: u32,
        /// Tools the runtime has.
        tools: Vec<String>,
    },
    /// An iteration starts.
    Iteration {
        /// 1-based.
        n: u32,
    },
    /// An external signal arrived.
    Signal {
        /// `stop` or `inject`.
        signal: String,
        /// Injected text.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
    },
    /// The engine calls the model.
    ModelRequest {
        /// Why the engine calls (omitted for ordinary turns).
        #[serde(default, skip_serializing_if = "Purpose::is_turn")]
        purpose: Purpose,
        /// 1-based model call.
        call: u32,
        /// Messages sent.
        messages: usize,
        /// Tools offered: one list shared by the requests that offer the same tools.
        tools: std::sync::Arc<[String]>,
        /// Text-only mode.
        force_text: bool,
        /// Tools withheld for this call by a defence.
        stripped: bool,
    },
    /// The model answered.
    ModelResponse {
        /// Finish reason.
        finish: Finish,
        /// Text, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        /// Tool calls.
        calls: Vec<CallSummary>,
        /// Input tokens.
        input_tokens: u64,
        /// Output tokens.
        output_tokens: u64,
        /// Virtual latency.
        latency_ms: u64,
        /// Set when the runtime flagged the response as malformed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        anomaly: Option<Anomaly>,
        /// Stream chunks it was assembled from (omitted when it came whole).
        #[serde(default, skip_serializing_if = "is_zero")]
        chunks: usize,
        /// The token counts are unknown (an imported trace that did not record them): the
        /// counts above are 0 and say nothing.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        tokens_unknown: bool,
        /// The model asked for tools, and the trace did not record which (an imported trace
        /// with content capture off and no tool span of them): `calls` is empty and says
        /// nothing.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        calls_unknown: bool,
    },
    /// A tool call is dispatched.
    ToolCallStart {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// Arguments as dispatched.
        args: crate::llm::Args,
        /// The arguments are unknown (an imported trace that recorded the call but not its
        /// arguments): `args` is an empty object and says nothing.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        args_unknown: bool,
    },
    /// A dispatched tool call ended.
    ToolCallEnd {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// Whether it succeeded.
        ok: bool,
        /// Output (success).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output: Option<String>,
        /// Error text (failure).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// Virtual latency.
        latency_ms: u64,
        /// Which rule read the result as failed, when the trace was inferred from a black-box
        /// agent's requests (`harness exec`): `is_error`, `pattern N`, `error-prefix`, ….
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rule: Option<String>,
    },
    /// A tool call was rejected before dispatch (it never ran).
    ToolCallRejected {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// Arguments as emitted.
        args: crate::llm::Args,
        /// The rejection message fed back.
        error: String,
    },
    /// A truncated tool batch was discarded unexecuted.
    TruncationDiscarded {
        /// Calls discarded.
        calls: usize,
        /// Truncated batches so far (the defence's count).
        count: u32,
    },
    /// A defence decided something.
    Intervention {
        /// Policy id.
        policy: String,
        /// 1 advises, 2 restricts, 3 ends the run.
        stage: u8,
        /// What it does (`nudge`, `warn`, `strip_tools`, `force_text`, `discard`, `continue`).
        action: String,
        /// The tool it is about.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool: Option<String>,
    },
    /// A message was added to the conversation by a defence.
    MessageInjected {
        /// Policy id.
        source: String,
        /// Role.
        role: Role,
        /// Text.
        text: String,
    },
    /// Force-text mode switched.
    ForceText {
        /// On or off.
        on: bool,
        /// Why.
        cause: String,
    },
    /// The run ended.
    Outcome {
        /// How.
        outcome: OutcomeKind,
        /// Iterations run.
        iterations: u32,
        /// Final text.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        /// Failure detail.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
    /// A defence told the operator something without telling the model.
    Notice {
        /// Policy id.
        source: String,
        /// The text.
        text: String,
    },
    /// A replayed agent sent a request that differs from the one recorded (`harness exec
    /// CASSETTE`): where, and what it reads as.
    Diverged {
        /// The request of the conversation (1-based).
        request: u32,
        /// The first differing JSON path of the request.
        at: String,
        /// The difference in plain words.
        reading: String,
    },
    /// The provider failed a model call.
    ProviderError {
        /// `rate_limit`, `server_error`, `context_overflow` or `timeout`.
        fault: FaultKind,
        /// The provider's message.
        message: String,
        /// Provider errors in a row so far.
        attempt: u32,
        /// Virtual wait before the retry (absent when the error ends the run or the retry
        /// follows a compaction at once).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_in_ms: Option<u64>,
    },
    /// The conversation was compacted.
    Compaction {
        /// `overflow` (after a context overflow) or `threshold` (the estimate passed it).
        reason: String,
        /// Messages before.
        before: usize,
        /// Messages after.
        after: usize,
        /// The context estimate that triggered it, in tokens (threshold compaction).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        estimate: Option<u64>,
    },
    /// A tool call of a batch was not run because a defence skipped the rest of the batch.
    ToolCallSkipped {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// Why.
        reason: String,
    },
    /// A tool call needs approval; the run pauses.
    ApprovalRequested {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// Later calls of the batch, deferred until the decision.
        deferred: usize,
        /// Extension whose authentication prompt the batch produced, kept for the resume.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        auth: Option<String>,
    },
    /// The (scripted) user decided on a paused call.
    ApprovalDecision {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// `approve` or `reject`.
        decision: Decision,
    },
    /// A turn of a multi-message conversation ended: its own usage (not cumulative).
    TurnEnd {
        /// 1-based turn.
        turn: u32,
        /// Input tokens of the turn.
        input_tokens: u64,
        /// Output tokens of the turn.
        output_tokens: u64,
        /// Dollars of the turn.
        cost_usd: f64,
    },
    /// The user sent another message; a fresh loop starts (unless the profile keeps the loop's
    /// state across turns: `turn_state = "kept"`).
    UserTurn {
        /// 1-based turn.
        turn: u32,
        /// The message.
        text: String,
    },
    /// The plan/step loop starts a step of its plan.
    StepStart {
        /// 1-based position in the current plan.
        step: u32,
        /// Steps in the current plan.
        total: u32,
        /// The step's title.
        title: String,
    },
    /// A step of the plan/step loop ended.
    StepEnd {
        /// 1-based position in the current plan.
        step: u32,
        /// `done` or `failed`.
        status: StepStatus,
        /// Why: `step_done` / `replan` (control envelope), `legacy_step_done` / `legacy_replan`
        /// (marker in the text), `budget_exhausted`, `inferred_tool` / `inferred_claim`
        /// (completion inference), `forced_at_cap` (forced completion at the cap).
        reason: String,
        /// Model calls the step used.
        calls: u32,
        /// The reason the model gave with a `replan` envelope.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
    /// A replan replaced the steps that were not done.
    Replan {
        /// 1-based count of replans in the run.
        n: u32,
        /// Done steps kept at the head of the plan.
        kept: u32,
        /// The new plan: the kept steps, then the new ones.
        steps: Vec<String>,
    },
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// How a step of the plan/step loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// Its goal was reached (or taken as reached).
    Done,
    /// It failed; a replan follows, or the run ends.
    Failed,
}

impl StepStatus {
    /// snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Done => "done",
            Self::Failed => "failed",
        }
    }
}

impl Event {
    /// The model's answer as the trace records it.
    pub fn model_response(r: &ModelResponse) -> Self {
        Event::ModelResponse {
            finish: r.finish,
            text: r.text.clone(),
            calls: r
                .tool_calls
                .iter()
                .map(|c| CallSummary {
                    id: c.id.clone(),
                    name: c.name.clone(),
                    args: c.arguments.text().to_owned(),
                    args_unknown: false,
                })
                .collect(),
            input_tokens: r.usage.input,
            output_tokens: r.usage.output,
            latency_ms: r.latency_ms,
            anomaly: r.anomaly,
            chunks: r.chunks,
            tokens_unknown: false,
            calls_unknown: false,
        }
    }

    /// A provider failure: the `attempt`-th in a row, retried after `retry_in_ms` or not.
    pub fn provider_error(f: &ProviderFault, attempt: u32, retry_in_ms: Option<u64>) -> Self {
        Event::ProviderError {
            fault: f.kind,
            message: f.message.clone(),
            attempt,
            retry_in_ms,
        }
    }

    /// The `kind` tag.
    pub fn kind(&self) -> &'static str {
        match self {
            Event::RunStart { .. } => "run_start",
            Event::Iteration { .. } => "iteration",
            Event::Signal { .. } => "signal",
            Event::ModelRequest { .. } => "model_request",
            Event::ModelResponse { .. } => "model_response",
            Event::ToolCallStart { .. } => "tool_call_start",
            Event::ToolCallEnd { .. } => "tool_call_end",
            Event::ToolCallRejected { .. } => "tool_call_rejected",
            Event::TruncationDiscarded { .. } => "truncation_discarded",
            Event::Intervention { .. } => "intervention",
            Event::MessageInjected { .. } => "message_injected",
            Event::ForceText { .. } => "force_text",
            Event::Outcome { .. } => "outcome",
            Event::Notice { .. } => "notice",
            Event::Diverged { .. } => "diverged",
            Event::ProviderError { .. } => "provider_error",
            Event::Compaction { .. } => "compaction",
            Event::ToolCallSkipped { .. } => "tool_call_skipped",
            Event::ApprovalRequested { .. } => "approval_requested",
            Event::ApprovalDecision { .. } => "approval_decision",
            Event::TurnEnd { .. } => "turn_end",
            Event::UserTurn { .. } => "user_turn",
            Event::StepStart { .. } => "step_start",
            Event::StepEnd { .. } => "step_end",
            Event::Replan { .. } => "replan",
        }
    }

    /// The bytes of text the event carries (its strings, names and arguments): what the
    /// per-run limit [`crate::limits::MAX_TRACE_BYTES`] counts. Lengths only, no rendering.
    pub fn text_bytes(&self) -> usize {
        let opt = |s: &Option<String>| s.as_ref().map_or(0, String::len);
        let all = |v: &[String]| v.iter().map(String::len).sum::<usize>();
        match self {
            Event::RunStart {
                profile,
                model,
                tools,
                ..
            } => profile.len() + model.len() + all(tools),
            Event::Iteration { .. } | Event::TruncationDiscarded { .. } | Event::TurnEnd { .. } => {
                0
            }
            Event::Signal { signal, text } => signal.len() + opt(text),
            Event::ModelRequest { tools, .. } => all(tools),
            Event::ModelResponse { text, calls, .. } => {
                opt(text)
                    + calls
                        .iter()
                        .map(|c| c.id.len() + c.name.len() + c.args.len())
                        .sum::<usize>()
            }
            Event::ToolCallStart { id, name, args, .. } => {
                id.len() + name.len() + crate::json::text_bytes(args)
            }
            Event::ToolCallEnd {
                id,
                name,
                output,
                error,
                ..
            } => id.len() + name.len() + opt(output) + opt(error),
            Event::ToolCallRejected {
                id,
                name,
                args,
                error,
            } => id.len() + name.len() + crate::json::text_bytes(args) + error.len(),
            Event::Intervention {
                policy,
                action,
                tool,
                ..
            } => policy.len() + action.len() + opt(tool),
            Event::MessageInjected { source, text, .. } | Event::Notice { source, text } => {
                source.len() + text.len()
            }
            Event::ForceText { cause, .. } => cause.len(),
            Event::Outcome { text, detail, .. } => opt(text) + opt(detail),
            Event::ProviderError { message, .. } => message.len(),
            Event::Diverged { at, reading, .. } => at.len() + reading.len(),
            Event::Compaction { reason, .. } => reason.len(),
            Event::ToolCallSkipped { id, name, reason } => id.len() + name.len() + reason.len(),
            Event::ApprovalRequested { id, name, auth, .. } => id.len() + name.len() + opt(auth),
            Event::ApprovalDecision { id, name, .. } => id.len() + name.len(),
            Event::UserTurn { text, .. } => text.len(),
            Event::StepStart { title, .. } => title.len(),
            Event::StepEnd { reason, detail, .. } => reason.len() + opt(detail),
            Event::Replan { steps, .. } => all(steps),
        }
    }

    /// Every event kind with its field names, read off the event schema (so expectations can
    /// be checked against what events really carry).
    pub fn catalogue() -> &'static [(String, Vec<String>)] {
        static CATALOGUE: OnceLock<Vec<(String, Vec<String>)>> = OnceLock::new();
        CATALOGUE.get_or_init(|| {
            let schema = schemars::schema_for!(Event);
            let variants = schema
                .get("oneOf")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            variants
                .iter()
                .filter_map(|v| {
                    let props = v.get("properties")?.as_object()?;
                    let kind = props.get("kind")?.get("const")?.as_str()?.to_owned();
                    let fields = props.keys().filter(|k| *k != "kind").cloned().collect();
                    Some((kind, fields))
                })
                .collect()
        })
    }
}

/// One event as a golden line (without the time column).
pub fn render_event(event: &Event) -> String {
    let mut s = String::new();
    write_event(&mut s, event);
    s
}

/// Append [`render_event`]'s line to `out`.
fn write_event(out: &mut String, event: &Event) {
    let start = out.len();
    write_words(out, event);
    // Names are written as they are (text fields are quoted): a control character in one (a
    // model or tool name an agent sent) is spelled out, so a line stays one line.
    if let std::borrow::Cow::Owned(escaped) = crate::escape::escape_controls(&out[start..]) {
        out.truncate(start);
        out.push_str(&escaped);
    }
}

/// Append an event's line to `out` as its words are, before [`write_event`] spells out what
/// must be.
fn write_words(out: &mut String, event: &Event) {
    out.push_str(event.kind());
    let s = &mut *out;
    match event {
        Event::RunStart {
            profile,
            model,
            max_iterations,
            tools,
        } => {
            s.t(" profile=").t(profile).t(" model=").t(model);
            s.t(" max_iterations=").n((*max_iterations).into());
            s.t(" tools=").names(tools);
        }
        Event::Iteration { n } => {
            s.c(' ').n((*n).into());
        }
        Event::Signal { signal, text } => {
            s.c(' ').t(signal);
            if let Some(t) = text {
                s.t(" text=").q(t);
            }
        }
        Event::ModelRequest {
            purpose,
            call,
            messages,
            tools,
            force_text,
            stripped,
        } => {
            if !purpose.is_turn() {
                s.c(' ').t(purpose.as_str());
            }
            s.t(" call=").n((*call).into());
            s.t(" messages=").n(*messages as u64);
            s.t(" tools=").names(tools);
            if *force_text {
                s.push_str(" force_text");
            }
            if *stripped {
                s.push_str(" stripped");
            }
        }
        Event::ModelResponse {
            finish,
            text,
            calls,
            input_tokens,
            output_tokens,
            latency_ms,
            anomaly,
            chunks,
            tokens_unknown,
            calls_unknown,
        } => {
            s.t(" finish=").t(finish.as_str());
            if let Some(a) = anomaly {
                s.t(" anomaly=").t(a.as_str());
            }
            if *chunks > 0 {
                s.t(" chunks=").n(*chunks as u64);
            }
            if !calls.is_empty() {
                s.t(" calls=[");
                for (i, c) in calls.iter().enumerate() {
                    if i > 0 {
                        s.t(", ");
                    }
                    s.t(&c.id).c(' ').t(&c.name).c('(');
                    s.t(if c.args_unknown {
                        "args unknown"
                    } else {
                        &c.args
                    })
                    .c(')');
                }
                s.c(']');
            }
            if *calls_unknown {
                s.t(" calls=unknown");
            }
            if let Some(t) = text {
                s.t(" text=").q(t);
            }
            if *tokens_unknown {
                s.t(" tokens=unknown");
            } else {
                s.t(" tokens=").n(*input_tokens).c('/').n(*output_tokens);
            }
            s.t(" latency=").n(*latency_ms).t("ms");
        }
        Event::ToolCallStart {
            id,
            name,
            args,
            args_unknown,
        } => {
            if *args_unknown {
                s.c(' ').t(id).c(' ').t(name).t("(args unknown)");
            } else {
                s.call(id, name, args);
            }
        }
        Event::ToolCallEnd {
            id,
            name,
            ok,
            output,
            error,
            latency_ms,
            rule,
        } => {
            s.c(' ').t(id).c(' ').t(name);
            s.t(if *ok { " ok" } else { " failed" });
            if let Some(o) = output {
                s.t(" output=").q(o);
            }
            if let Some(e) = error {
                s.t(" error=").q(e);
            }
            s.t(" latency=").n(*latency_ms).t("ms");
            if let Some(r) = rule {
                s.t(" rule=").q(r);
            }
        }
        Event::ToolCallRejected {
            id,
            name,
            args,
            error,
        } => {
            s.call(id, name, args).t(" error=").q(error);
        }
        Event::TruncationDiscarded { calls, count } => {
            s.t(" calls=")
                .n(*calls as u64)
                .t(" count=")
                .n((*count).into());
        }
        Event::Intervention {
            policy,
            stage,
            action,
            tool,
        } => {
            s.t(" policy=").t(policy).t(" stage=").n((*stage).into());
            s.t(" action=").t(action);
            if let Some(t) = tool {
                s.t(" tool=").t(t);
            }
        }
        Event::MessageInjected { source, role, text } => {
            s.t(" source=").t(source).t(" role=").t(role.as_str());
            s.t(" text=").q(text);
        }
        Event::ForceText { on, cause } => {
            s.t(if *on { " on" } else { " off" }).t(" cause=").t(cause);
        }
        Event::Outcome {
            outcome,
            iterations,
            text,
            detail,
        } => {
            s.c(' ').t(outcome.as_str());
            s.t(" iterations=").n((*iterations).into());
            if let Some(t) = text {
                s.t(" text=").q(t);
            }
            if let Some(d) = detail {
                s.t(" detail=").q(d);
            }
        }
        Event::Notice { source, text } => {
            s.t(" source=").t(source).t(" text=").q(text);
        }
        Event::Diverged {
            request,
            at,
            reading,
        } => {
            s.t(" request=").n((*request).into());
            s.t(" at=").q(at).t(" reading=").q(reading);
        }
        Event::ProviderError {
            fault,
            message,
            attempt,
            retry_in_ms,
        } => {
            s.c(' ')
                .t(fault.as_str())
                .t(" attempt=")
                .n((*attempt).into());
            s.t(" message=").q(message);
            if let Some(ms) = retry_in_ms {
                s.t(" retry_in=").n(*ms).t("ms");
            }
        }
        Event::Compaction {
            reason,
            before,
            after,
            estimate,
        } => {
            s.c(' ').t(reason).t(" messages=").n(*before as u64);
            s.t("->").n(*after as u64);
            if let Some(t) = estimate {
                s.t(" estimate=").n(*t);
            }
        }
        Event::ToolCallSkipped { id, name, reason } => {
            s.c(' ').t(id).c(' ').t(name).t(" reason=").q(reason);
        }
        Event::ApprovalRequested {
            id,
            name,
            deferred,
            auth,
        } => {
            s.c(' ')
                .t(id)
                .c(' ')
                .t(name)
                .t(" deferred=")
                .n(*deferred as u64);
            if let Some(a) = auth {
                s.t(" auth=").t(a);
            }
        }
        Event::ApprovalDecision { id, name, decision } => {
            s.c(' ').t(id).c(' ').t(name);
            s.t(match decision {
                Decision::Approve => " approve",
                Decision::Reject => " reject",
            });
        }
        Event::TurnEnd {
            turn,
            input_tokens,
            output_tokens,
            cost_usd,
        } => {
            s.c(' ').n((*turn).into()).t(" tokens=").n(*input_tokens);
            s.c('/').n(*output_tokens);
            let _ = write!(s, " cost=${cost_usd:.6}");
        }
        Event::UserTurn { turn, text } => {
            s.c(' ').n((*turn).into()).t(" text=").q(text);
        }
        Event::StepStart { step, total, title } => {
            s.c(' ').n((*step).into()).c('/').n((*total).into());
            s.t(" title=").q(title);
        }
        Event::StepEnd {
            step,
            status,
            reason,
            calls,
            detail,
        } => {
            s.c(' ').n((*step).into()).c(' ').t(status.as_str());
            s.t(" reason=").t(reason).t(" calls=").n(*calls as u64);
            if let Some(d) = detail {
                s.t(" detail=").q(d);
            }
        }
        Event::Replan { n, kept, steps } => {
            s.c(' ').n((*n).into()).t(" kept=").n((*kept).into());
            s.t(" steps=").list(steps, |s, step| {
                s.q(step);
            });
        }
    }
}

/// `12.345s`, right-aligned, and the two spaces after it: the golden's time column, which
/// starts every line (some forty a case). The seconds are padded to nine places; the
/// milliseconds, `s` and the spaces are one piece. The seconds of most runs (under
/// [`SECS_SHOWN`]) are a piece of a table too.
fn clock(out: &mut String, t_ms: u64) {
    let secs = t_ms / 1000;
    match usize::try_from(secs).ok().filter(|s| *s < SECS_SHOWN) {
        Some(s) => out.push_str(&SECS[s * PLACES..s * PLACES + PLACES]),
        None => {
            const PAD: &str = "         ";
            let mut digits = itoa::Buffer::new();
            let digits = digits.format(secs);
            out.push_str(&PAD[..PLACES.saturating_sub(digits.len())]);
            out.push_str(digits);
        }
    }
    let at = (t_ms % 1000) as usize * MILLI;
    out.push_str(&MILLIS[at..at + MILLI]);
}

/// The places the time column's seconds are padded to.
const PLACES: usize = 9;

/// The seconds [`SECS`] holds: `0` to `999`.
const SECS_SHOWN: usize = 1000;

/// `        0` to `      999`, one after another: the time column's seconds, padded.
const SECS: &str = {
    const BYTES: [u8; SECS_SHOWN * PLACES] = {
        let mut b = [b' '; SECS_SHOWN * PLACES];
        let mut s = 0;
        while s < SECS_SHOWN {
            let end = (s + 1) * PLACES;
            let mut n = s;
            let mut at = end - 1;
            loop {
                b[at] = b'0' + (n % 10) as u8;
                n /= 10;
                if n == 0 {
                    break;
                }
                at -= 1;
            }
            s += 1;
        }
        b
    };
    match std::str::from_utf8(&BYTES) {
        Ok(text) => text,
        Err(_) => panic!("the time column's seconds are ASCII"),
    }
};

/// The bytes of one millisecond's piece in [`MILLIS`].
const MILLI: usize = ".000s  ".len();

/// `.000s  ` to `.999s  `, one after another: the end of the time column for each millisecond.
const MILLIS: &str = {
    const BYTES: [u8; 1000 * MILLI] = {
        let mut b = [b' '; 1000 * MILLI];
        let mut ms = 0;
        while ms < 1000 {
            let at = ms * MILLI;
            b[at] = b'.';
            b[at + 1] = b'0' + (ms / 100) as u8;
            b[at + 2] = b'0' + (ms / 10 % 10) as u8;
            b[at + 3] = b'0' + (ms % 10) as u8;
            b[at + 4] = b's';
            ms += 1;
        }
        b
    };
    match std::str::from_utf8(&BYTES) {
        Ok(text) => text,
        Err(_) => panic!("the time column's milliseconds are ASCII"),
    }
};

/// Appending golden text piece by piece, without the formatting machinery: a run writes some
/// forty lines a case.
trait Push {
    /// Text as it is.
    fn t(&mut self, text: &str) -> &mut Self;
    /// One character (no copy call for a piece of one byte).
    fn c(&mut self, c: char) -> &mut Self;
    /// A number in decimal.
    fn n(&mut self, n: u64) -> &mut Self;
    /// Text as a JSON string ([`crate::json::push_quoted`]).
    fn q(&mut self, text: &str) -> &mut Self;
    /// Names as `[a, b, c]`.
    fn names(&mut self, names: &[String]) -> &mut Self;
    /// Items as `[a, b, c]`, each written by `item`.
    fn list(&mut self, items: &[String], item: impl Fn(&mut Self, &str)) -> &mut Self;
    /// A call as ` id name(args)`, the arguments as compact JSON ([`crate::json::compact`]).
    fn call(&mut self, id: &str, name: &str, args: &crate::llm::Args) -> &mut Self;
}

impl Push for String {
    fn t(&mut self, text: &str) -> &mut Self {
        self.push_str(text);
        self
    }

    fn c(&mut self, c: char) -> &mut Self {
        self.push(c);
        self
    }

    fn n(&mut self, n: u64) -> &mut Self {
        // Most numbers of a golden line (calls, iterations, counts) are one digit.
        match u8::try_from(n) {
            Ok(d @ 0..=9) => self.push(char::from(b'0' + d)),
            _ => self.push_str(itoa::Buffer::new().format(n)),
        }
        self
    }

    fn q(&mut self, text: &str) -> &mut Self {
        crate::json::push_quoted(self, text);
        self
    }

    fn names(&mut self, names: &[String]) -> &mut Self {
        self.list(names, |s, name| {
            s.t(name);
        })
    }

    fn list(&mut self, items: &[String], item: impl Fn(&mut Self, &str)) -> &mut Self {
        self.push('[');
        for (i, text) in items.iter().enumerate() {
            if i > 0 {
                self.push_str(", ");
            }
            item(self, text);
        }
        self.push(']');
        self
    }

    fn call(&mut self, id: &str, name: &str, args: &crate::llm::Args) -> &mut Self {
        self.c(' ')
            .t(id)
            .c(' ')
            .t(name)
            .c('(')
            .t(args.text())
            .c(')')
    }
}

/// The golden text of a run: a short header, then one line per event.
pub fn render_golden(case_id: &str, events: &[TimedEvent]) -> String {
    // The text each line carries, its time and kind, and room for the line's own words: one
    // allocation for most goldens, not a few copies as the text grows.
    let size = events
        .iter()
        .map(|e| e.event.text_bytes() + 96)
        .sum::<usize>();
    let mut out = String::with_capacity(size + case_id.len() + 64);
    let _ = writeln!(out, "# harness trace v{TRACE_VERSION}: {case_id}");
    let body = out.len();
    // The lines as their words are, then one scan of them all: when no line holds a character
    // to spell out, nor a line break of its own, each line is as `write_event` writes it. A
    // line that does is rare; then every line is written again, spelled out one by one.
    write_lines(&mut out, events, write_words);
    if crate::escape::line_breaks_if_safe(&out[body..]) != Some(events.len()) {
        out.truncate(body);
        write_lines(&mut out, events, write_event);
    }
    out
}

/// The golden's lines: time column, then the words `write` gives each event.
fn write_lines(out: &mut String, events: &[TimedEvent], write: impl Fn(&mut String, &Event)) {
    for e in events {
        clock(out, e.t_ms);
        write(out, &e.event);
        out.push('\n');
    }
}

/// Name every tool call by its order in the run (`call_0`, `call_1`, … by first appearance),
/// as scripted runs name them: a trace inferred from a recording then does not depend on the
/// ids a provider happened to issue, so re-recording an unchanged conversation leaves its
/// golden byte-identical.
pub fn number_calls(events: &mut [TimedEvent]) {
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    for e in events.iter_mut() {
        for id in call_ids(&mut e.event) {
            let n = names.len();
            *id = names
                .entry(std::mem::take(id))
                .or_insert_with(|| format!("call_{n}"))
                .clone();
        }
    }
}

/// Answers that asked for tools the trace did not record (`calls_unknown`) and after which
/// the model was asked again: the run called something there that the trace does not show. (A
/// last answer's calls never ran.)
pub fn unseen_answers(events: &[TimedEvent]) -> usize {
    let mut unseen = 0;
    let mut asked_unseen = false;
    for e in events {
        if let Event::ModelResponse { calls_unknown, .. } = &e.event {
            unseen += usize::from(asked_unseen);
            asked_unseen = *calls_unknown;
        }
    }
    unseen
}

/// The tool-call ids an event names.
fn call_ids(event: &mut Event) -> Vec<&mut String> {
    match event {
        Event::ModelResponse { calls, .. } => calls.iter_mut().map(|c| &mut c.id).collect(),
        Event::ToolCallStart { id, .. }
        | Event::ToolCallEnd { id, .. }
        | Event::ToolCallRejected { id, .. }
        | Event::ToolCallSkipped { id, .. }
        | Event::ApprovalRequested { id, .. }
        | Event::ApprovalDecision { id, .. } => vec![id],
        Event::RunStart { .. }
        | Event::Iteration { .. }
        | Event::Signal { .. }
        | Event::ModelRequest { .. }
        | Event::TruncationDiscarded { .. }
        | Event::Intervention { .. }
        | Event::MessageInjected { .. }
        | Event::ForceText { .. }
        | Event::Outcome { .. }
        | Event::Notice { .. }
        | Event::Diverged { .. }
        | Event::ProviderError { .. }
        | Event::Compaction { .. }
        | Event::TurnEnd { .. }
        | Event::UserTurn { .. }
        | Event::StepStart { .. }
        | Event::StepEnd { .. }
        | Event::Replan { .. } => Vec::new(),
    }
}

/// Check a trace made outside the engine (inferred from what an agent sent) against the
/// per-run limits the engine keeps as it goes: its length, text and virtual time.
pub fn check_limits(events: &[TimedEvent]) -> Result<(), crate::limits::Exceeded> {
    let mut budget = crate::limits::Budget::default();
    budget.event(events.iter().map(|e| e.event.text_bytes()).sum());
    budget.check(events.len(), events.last().map_or(0, |e| e.t_ms))
}

/// The run as JSON lines, one event per line.
pub fn render_jsonl(events: &[TimedEvent]) -> String {
    let mut out = String::new();
    for e in events {
        out.push_str(&serde_json::to_string(e).unwrap_or_default());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests;
