//! The loop engine: model → text or tool calls → tools → model …, consulting the configured
//! policies at fixed points and recording every step as a [`TimedEvent`] on a virtual clock.
//!
//! Pure and deterministic: it knows nothing of files, threads, the CLI or the network. Time
//! advances only by the latencies the model and the tools report and by the waits the
//! configuration prescribes (provider retries).
//!
//! One iteration, in order: stop signal → ceiling → injected signals → pre-call stop →
//! policies before the call (budget, cost guard, recovery, strip) → threshold compaction →
//! model call (provider errors: compaction retry or retry per kind) → empty-reply fallback →
//! the answer's rescues (`rescue.rs`: calls read from its text, the malformed-call retry, the
//! forced `exec`, the empty-name retry) →
//! text (policies may hold it back; then the profile's text rule) or tool batch (policies may
//! discard it; screening, approval split, validation, execution, policies after the batch).
//! An approved pause and a follow-up user message restart the loop with fresh counters, unless
//! the configuration keeps the loop's state across turns (`turn_state = "kept"`, the book's one
//! `AgentLoop` instance): then the iteration count, the defences and the spending go on.
//!
//! A second loop, the plan/step executor (`plan_step.rs`), runs instead when the
//! configuration enables it; it shares the model and tool traits, the clock and the event
//! stream.

use crate::llm::{
    Anomaly, Args, Arguments, FaultKind, History, Message, Model, ModelError, ModelRequest,
    ModelResponse, ProviderFault, Purpose, Role, ToolCall, ToolSpec,
};
use crate::policy::{
    self, Action, CallRecord, CallResult, Config, LoopView, MalformedArgs, Policy, Prices,
    TextAnswer,
};
use crate::scenario::{ApprovalDef, Decision, OutcomeKind, SignalDef};
use crate::tool::{ToolRunner, ToolStatus, UnscriptedCall};
use crate::trace::{Event, TimedEvent};
use serde_json::Value;
use std::collections::BTreeMap;

mod plan_step;
mod rescue;

/// What one run needs besides the model and the tools.
#[derive(Debug, Clone, Copy)]
pub struct RunInput<'a> {
    /// Profile name, for the trace.
    pub profile: &'a str,
    /// Model name, for the trace.
    pub model: &'a str,
    /// Resolved configuration.
    pub config: &'a Config,
    /// System prompt (may be empty).
    pub system: &'a str,
    /// The user's request.
    pub user: &'a str,
    /// External signals.
    pub signals: &'a [SignalDef],
    /// Prices of the model: what the run costs (turn ends, metrics).
    pub prices: Prices,
    /// Prices the profile's own accounting charges, which its cost guard reads (the book's
    /// loop prices a model it does not list as claude-sonnet-4-6).
    pub guard_prices: Prices,
    /// Scripted approval decisions, in order.
    pub approvals: &'a [ApprovalDef],
    /// Further user messages, one per later turn.
    pub followups: &'a [String],
    /// Workspace files and their line counts (citation checks).
    pub workspace: &'a BTreeMap<String, u32>,
    /// The initial plan's step titles (the plan/step loop; empty for the agent loop).
    pub plan: &'a [String],
}

/// A run that could not finish because the scenario's script is incomplete.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScriptGap {
    /// The mock model has no answer.
    #[error(transparent)]
    Model(#[from] crate::llm::ScriptError),
    /// A tool has no outcome for a call.
    #[error(transparent)]
    Tool(#[from] UnscriptedCall),
    /// The next scripted approval decision names another tool.
    #[error("approval decision {index} is for tool `{expected}`, but the run paused for `{got}`")]
    Approval {
        /// 1-based decision.
        index: usize,
        /// The tool the decision names.
        expected: String,
        /// The tool the run paused for.
        got: String,
    },
    /// The run went past a limit on trace length or virtual time ([`crate::limits`]).
    #[error(transparent)]
    Limit(#[from] crate::limits::Exceeded),
}

/// The events of a finished run, or of a run cut short by a script gap.
pub type RunResult = Result<Vec<TimedEvent>, (Vec<TimedEvent>, ScriptGap)>;

/// How one loop (one user turn, or one resume) ended.
enum LoopEnd {
    /// With an outcome event already recorded, and the final answer if there was one.
    Finished(OutcomeKind, Option<String>),
    /// An approved pause: the loop starts again from scratch.
    Resume,
}

/// What a model call gave.
enum Called {
    Response(ModelResponse),
    /// A provider error whose retry uses up the iteration.
    NextIteration,
    /// The run ended here (outcome recorded).
    Ended(LoopEnd),
}

/// How a tool batch ended.
enum BatchEnd {
    Done,
    Paused {
        call: ToolCall,
        deferred: Vec<ToolCall>,
    },
}

struct Loop<'a> {
    input: RunInput<'a>,
    /// `input.config`, kept at hand.
    config: &'a Config,
    policies: Vec<Box<dyn Policy>>,
    events: Vec<TimedEvent>,
    /// The tool names of the last request's event, shared by the next that offers the same.
    offered_names: OfferedNames,
    /// The profile's failed-call messages, read the first time a call fails.
    failure_messages: std::cell::OnceCell<policy::FailureMessages>,
    messages: History,
    /// The ids of the last response's streamed calls that received no argument text.
    without_argument_text: Vec<String>,
    /// The context estimate's measure of the conversation, kept between iterations.
    context_measured: crate::llm::RunningSum,
    /// What the run used of the per-run byte limits.
    budget: crate::limits::Budget,
    clock: u64,
    force_text: bool,
    strip_this_call: bool,
    total_tool_calls: u64,
    call_no: u32,
    /// Iterations over the whole run (signals count these).
    run_iterations: u32,
    /// Provider errors in a row.
    faults: u32,
    /// Provider errors per kind (indexed by `FaultKind as usize`): in a row, or over the run
    /// when `retry.per_run` is set.
    faults_by_kind: [u32; FaultKind::COUNT],
    input_tokens: u64,
    output_tokens: u64,
    cost_usd: f64,
    /// Spending as the profile's own accounting counts it (`guard_prices`).
    guard_cost_usd: f64,
    turn_start: (u64, u64, f64),
    next_approval: usize,
    auth_prompt: Option<String>,
    ended: Option<(OutcomeKind, String)>,
    /// Iterations a loop starts counting from: 0, or the count the last turn ended at when the
    /// configuration keeps the loop's state across turns.
    carried_iterations: u32,
    /// The text of the last tool-call response that had any (Moltis' `last_answer_text`).
    last_answer_text: Option<String>,
    /// Empty-tool-name retries this run has had ([`policy::Config::empty_name_retry_message`]).
    empty_name_retries: u32,
    /// Malformed-call retries this run has had
    /// ([`policy::Config::malformed_call_retry_message`]).
    malformed_call_retries: u32,
    /// Calls read from text so far (their ids: `text_<32 hex digits>` of this count).
    text_calls_read: u64,
}

/// How one call of a batch is handled before dispatch.
enum Prepared {
    Run(Args),
    Rejected(Args, String),
    Broken(String, String),
    Unknown(Args),
}

/// Run a scenario's case with this model and the case's scripted tools: the events, and the
/// gap that cut the run short, if any.
pub fn run_case(
    case: &crate::scenario::Case,
    model: &mut dyn Model,
) -> (Vec<TimedEvent>, Option<ScriptGap>) {
    let s = &case.scenario;
    let mut tools = crate::tool::ScriptedTools::new(&s.tools);
    let input = RunInput {
        profile: &case.profile,
        model: &s.model.name,
        config: &case.config,
        system: &s.system,
        user: &s.user,
        signals: &s.signals,
        prices: case.prices(),
        guard_prices: case.guard_prices(),
        approvals: &s.approvals,
        followups: &s.followups,
        workspace: &s.workspace,
        plan: s.plan.as_ref().map_or(&[], |p| p.steps.as_slice()),
    };
    match run(input, model, &mut tools) {
        Ok(events) => (events, None),
        Err((events, gap)) => (events, Some(gap)),
    }
}

/// Run one agent loop (and its resumes and follow-up turns) to its outcome, or the plan/step
/// loop when the configuration enables it.
pub fn run(input: RunInput<'_>, model: &mut dyn Model, tools: &mut dyn ToolRunner) -> RunResult {
    if input.config.plan_step.enabled {
        return plan_step::run(input, model, tools);
    }
    let mut lp = Loop {
        input,
        config: input.config,
        policies: policy::build(input.config, input.workspace),
        events: Vec::with_capacity(EVENTS_AT_START),
        offered_names: OfferedNames::default(),
        failure_messages: std::cell::OnceCell::new(),
        messages: History::new(),
        without_argument_text: Vec::new(),
        context_measured: crate::llm::RunningSum::default(),
        budget: crate::limits::Budget::default(),
        clock: 0,
        force_text: false,
        strip_this_call: false,
        total_tool_calls: 0,
        call_no: 0,
        run_iterations: 0,
        faults: 0,
        faults_by_kind: [0; FaultKind::COUNT],
        input_tokens: 0,
        output_tokens: 0,
        cost_usd: 0.0,
        guard_cost_usd: 0.0,
        turn_start: (0, 0, 0.0),
        next_approval: 0,
        auth_prompt: None,
        ended: None,
        carried_iterations: 0,
        last_answer_text: None,
        empty_name_retries: 0,
        malformed_call_retries: 0,
        text_calls_read: 0,
    };
    let tool_names: Vec<String> = tools.specs().iter().map(|t| t.name.clone()).collect();
    lp.emit(Event::RunStart {
        profile: input.profile.to_owned(),
        model: input.model.to_owned(),
        max_iterations: input.config.ceiling(),
        tools: tool_names,
    });
    if !input.system.is_empty() {
        lp.remember(Message::new(Role::System, input.system));
    }
    lp.remember(Message::new(Role::User, input.user));
    match lp.turns(model, tools) {
        Ok(()) => Ok(lp.events),
        Err(gap) => Err((lp.events, gap)),
    }
}

/// The names of the tools a request offers, for its event: one list shared by the requests
/// that offer the same tools (most of a run's), not a copy of every name for each.
#[derive(Default)]
pub(crate) struct OfferedNames(Option<std::sync::Arc<[String]>>);

impl OfferedNames {
    pub(crate) fn of(&mut self, tools: &[ToolSpec]) -> std::sync::Arc<[String]> {
        if let Some(names) = &self.0 {
            if names.len() == tools.len() && names.iter().zip(tools).all(|(n, t)| *n == t.name) {
                return names.clone();
            }
        }
        let names: std::sync::Arc<[String]> = tools.iter().map(|t| t.name.clone()).collect();
        self.0 = Some(names.clone());
        names
    }
}

/// Room for a run's events at its start: most runs fit (144 bytes each, so 36 KiB), where
/// growing a vector of them copies every event already kept, at each doubling.
const EVENTS_AT_START: usize = 256;

impl Loop<'_> {
    fn emit(&mut self, event: Event) {
        // Past a byte limit nothing more is kept; the next check ends the run.
        if self.budget.event(event.text_bytes()) {
            self.events.push(TimedEvent {
                t_ms: self.clock,
                event,
            });
        }
    }

    /// The conversation was replaced (compaction): count it afresh.
    fn recount_history(&mut self) {
        let bytes = self.messages.iter().map(Message::text_bytes).sum();
        self.budget.history_is(bytes);
    }

    /// Add a message to the conversation, within the per-run byte limit.
    fn remember(&mut self, message: Message) {
        if self.budget.message(message.text_bytes()) {
            self.messages.push(message);
        }
    }

    /// Fresh per-loop state: IronClaw starts a new `run_agentic_loop` (new counters, new
    /// context flags) after an approval and for every user message.
    fn fresh(&mut self) {
        self.policies = policy::build(self.config, self.input.workspace);
        self.force_text = false;
        self.strip_this_call = false;
        self.total_tool_calls = 0;
        self.carried_iterations = 0;
        self.last_answer_text = None;
        self.empty_name_retries = 0;
        self.malformed_call_retries = 0;
    }

    fn turns(
        &mut self,
        model: &mut dyn Model,
        tools: &mut dyn ToolRunner,
    ) -> Result<(), ScriptGap> {
        let followups = self.input.followups;
        let mut turn = 1u32;
        loop {
            match self.agent_loop(model, tools)? {
                // IronClaw resumes an approved call with a fresh loop; a loop that keeps its
                // state across turns keeps it across a resume too.
                LoopEnd::Resume if self.config.turn_state == policy::TurnState::Fresh => {
                    self.fresh()
                }
                LoopEnd::Resume => {}
                LoopEnd::Finished(kind, answer) => {
                    if !followups.is_empty() {
                        let (i, o, c) = self.turn_start;
                        self.emit(Event::TurnEnd {
                            turn,
                            input_tokens: self.input_tokens - i,
                            output_tokens: self.output_tokens - o,
                            cost_usd: self.cost_usd - c,
                        });
                        self.turn_start = (self.input_tokens, self.output_tokens, self.cost_usd);
                    }
                    let next = followups.get(turn as usize - 1);
                    match next {
                        Some(text) if kind == OutcomeKind::Response => {
                            // The answer stays in the conversation: the next turn's context is
                            // the thread's history, which holds every earlier turn's response.
                            if let Some(answer) = answer {
                                self.remember(Message::new(Role::Assistant, answer));
                            }
                            turn += 1;
                            self.emit(Event::UserTurn {
                                turn,
                                text: text.clone(),
                            });
                            self.remember(Message::new(Role::User, text.clone()));
                            // The book's one `AgentLoop` instance carries the conversation:
                            // the next `run()` counts on from the last iteration, with the same
                            // detector and the same spending.
                            if self.config.turn_state == policy::TurnState::Fresh {
                                self.fresh();
                            }
                        }
                        _ => return Ok(()),
                    }
                }
            }
        }
    }

    fn view(&self, iteration: u32, tools_available: bool) -> LoopView {
        LoopView {
            iteration,
            total_tool_calls: self.total_tool_calls,
            tools_available,
            force_text: self.force_text,
            cost_usd: self.guard_cost_usd,
            tokens: self.input_tokens + self.output_tokens,
        }
    }

    fn finish(
        &mut self,
        outcome: OutcomeKind,
        iterations: u32,
        text: Option<String>,
        detail: Option<String>,
    ) -> LoopEnd {
        self.carried_iterations = iterations;
        self.emit(Event::Outcome {
            outcome,
            iterations,
            text: text.clone(),
            detail,
        });
        LoopEnd::Finished(outcome, text)
    }

    /// Apply a policy's actions in order, recording each in the trace.
    fn apply(&mut self, source: &'static str, actions: Vec<Action>, calls_in_batch: usize) {
        // Expectations are validated against these catalogues: an id or action missing there
        // could never be asked for.
        debug_assert!(
            crate::vocabulary::INTERVENTION_SOURCES.contains(&source) || actions.is_empty(),
            "policy `{source}` is missing from vocabulary::INTERVENTION_SOURCES"
        );
        for action in actions {
            match action {
                Action::Intervene {
                    stage,
                    action,
                    tool,
                } => {
                    debug_assert!(
                        crate::vocabulary::INTERVENTION_ACTIONS.contains(&action),
                        "action `{action}` is missing from vocabulary::INTERVENTION_ACTIONS"
                    );
                    self.emit(Event::Intervention {
                        policy: source.to_owned(),
                        stage,
                        action: action.to_owned(),
                        tool,
                    });
                }
                Action::Inject { role, text } => {
                    self.remember(Message::new(role, text.clone()));
                    self.emit(Event::MessageInjected {
                        source: source.to_owned(),
                        role,
                        text,
                    });
                }
                Action::StripToolsThisCall => self.strip_this_call = true,
                Action::ForceText { cause } => {
                    if !self.force_text {
                        self.force_text = true;
                        self.emit(Event::ForceText {
                            on: true,
                            cause: cause.to_owned(),
                        });
                    }
                }
                Action::Discard { count } => self.emit(Event::TruncationDiscarded {
                    calls: calls_in_batch,
                    count,
                }),
                Action::Notice { text } => self.emit(Event::Notice {
                    source: source.to_owned(),
                    text,
                }),
                Action::End { outcome, detail } => {
                    self.ended.get_or_insert((outcome, detail));
                }
            }
        }
    }

    /// Record the outcome a policy asked for, if any.
    fn ended_by_policy(&mut self, iterations: u32) -> Option<LoopEnd> {
        let (outcome, detail) = self.ended.take()?;
        Some(self.finish(outcome, iterations, None, Some(detail)))
    }

    fn agent_loop(
        &mut self,
        model: &mut dyn Model,
        tools: &mut dyn ToolRunner,
    ) -> Result<LoopEnd, ScriptGap> {
        let signals = self.input.signals;
        let ceiling = self.config.ceiling();
        let mut iterations = self.carried_iterations;
        loop {
            let n = iterations + 1;
            let g = self.run_iterations + 1;
            let stop_at = |before_call: bool| {
                signals
                    .iter()
                    .any(|s| s.at_iteration == g && s.stop && s.before_call == before_call)
            };
            if stop_at(false) {
                self.emit(Event::Signal {
                    signal: "stop".to_owned(),
                    text: None,
                });
                return Ok(self.finish(OutcomeKind::Stopped, iterations, None, None));
            }
            if n > ceiling {
                // IronClaw's chat message names the tool budget, not the ceiling.
                let cap = if self.config.budget.enabled {
                    self.config.budget.tool_iterations
                } else {
                    self.config.max_iterations
                };
                let detail = policy::fill(
                    &self.config.max_iterations_message,
                    &[("n", &cap.to_string())],
                );
                return Ok(self.finish(OutcomeKind::MaxIterations, iterations, None, Some(detail)));
            }
            iterations = n;
            self.run_iterations = g;
            self.emit(Event::Iteration { n });
            for s in signals.iter().filter(|s| s.at_iteration == g) {
                if let Some(text) = &s.inject {
                    self.remember(Message::new(Role::User, text.clone()));
                    self.emit(Event::Signal {
                        signal: "inject".to_owned(),
                        text: Some(text.clone()),
                    });
                }
            }
            if stop_at(true) {
                self.emit(Event::Signal {
                    signal: "hook_stop".to_owned(),
                    text: None,
                });
                return Ok(self.finish(OutcomeKind::Stopped, iterations, None, None));
            }

            self.strip_this_call = false;
            let pre_view = self.view(n, !self.force_text);
            for i in 0..self.policies.len() {
                let actions = self.policies[i].before_call(&pre_view);
                let id = self.policies[i].id();
                self.apply(id, actions, 0);
            }
            if let Some(end) = self.ended_by_policy(iterations) {
                return Ok(end);
            }
            if let Some(end) = self.summarise_if_needed(model, iterations)? {
                return Ok(end);
            }

            let mut response = match self.call_model(model, tools, n, iterations)? {
                Called::Response(r) => r,
                Called::NextIteration => continue,
                Called::Ended(end) => return Ok(end),
            };
            let tools_available =
                !(self.force_text || self.strip_this_call || tools.specs().is_empty());
            let empty = response.tool_calls.is_empty()
                && response.text.as_deref().is_none_or(|t| t.trim().is_empty());
            if self.config.empty_reply.enabled && empty {
                response.anomaly.get_or_insert(if tools_available {
                    Anomaly::EmptyToolCompletion
                } else {
                    Anomaly::EmptyTextResponse
                });
                response.text = Some(self.config.empty_reply.fallback_text.clone());
            }
            self.emit(Event::model_response(&response));
            let view = self.view(n, tools_available);
            self.read_text_calls(&mut response);
            if let Some(prompt) = self.malformed_call_retry(&response) {
                self.malformed_call_retries += 1;
                self.retry_with("moltis-malformed-call-retry", &response, prompt);
                continue;
            }
            if let Some(call) = self.forced_shell_call(&response, n, tools.specs()) {
                self.emit(Event::Notice {
                    source: "moltis-forced-exec".to_owned(),
                    text: "the task is an explicit `/sh` command and the first answer called nothing: `exec` runs the command".to_owned(),
                });
                response.tool_calls = vec![call];
            }
            if let Some(prompt) = self.empty_name_retry(&response) {
                self.empty_name_retries += 1;
                if let Some(text) = response.text.as_ref().filter(|t| !t.is_empty()) {
                    if self.config.empty_answer.last_text_fallback {
                        self.last_answer_text = Some(text.clone());
                    }
                }
                self.retry_with("moltis-empty-name-retry", &response, prompt);
                continue;
            }

            if response.tool_calls.is_empty() {
                if let Some(end) = self.on_text(&response, &view, iterations) {
                    return Ok(end);
                }
                continue;
            }

            if self.config.empty_answer.last_text_fallback {
                if let Some(text) = response.text.as_ref().filter(|t| !t.is_empty()) {
                    self.last_answer_text = Some(text.clone());
                }
            }
            let batch_len = response.tool_calls.len();
            let mut discarded = None;
            for p in &mut self.policies {
                if let Some(actions) = p.on_batch(&response, &view) {
                    discarded = Some((p.id(), actions));
                    break;
                }
            }
            if let Some((id, actions)) = discarded {
                if let Some(text) = &response.text {
                    self.remember(Message::new(Role::Assistant, text.clone()));
                }
                self.apply(id, actions, batch_len);
                if let Some(end) = self.ended_by_policy(iterations) {
                    return Ok(end);
                }
                continue;
            }
            match self.run_batch(&response, &view, tools)? {
                BatchEnd::Done => {}
                BatchEnd::Paused { call, deferred } => {
                    return self.approval(call, deferred, iterations, tools);
                }
            }
            if let Some(end) = self.ended_by_policy(iterations) {
                return Ok(end);
            }
        }
    }

    /// A text answer: policies may hold it back (nudges, continuations, recovery); otherwise
    /// the profile's text rule decides. `Some` ends the loop.
    fn on_text(
        &mut self,
        response: &ModelResponse,
        view: &LoopView,
        iterations: u32,
    ) -> Option<LoopEnd> {
        let text = response.text.clone().unwrap_or_default();
        let mut continued = None;
        for p in &mut self.policies {
            if let Some(actions) = p.on_text(&text, response, view) {
                continued = Some((p.id(), actions));
                break;
            }
        }
        for p in &mut self.policies {
            p.after_text(&text, continued.is_some());
        }
        if let Some((id, actions)) = continued {
            if !(text.is_empty() && self.config.empty_answer.skip_in_history) {
                self.remember(Message::new(Role::Assistant, text));
            }
            self.apply(id, actions, 0);
            return self.ended_by_policy(iterations);
        }
        let last = match self.config.text_answer {
            TextAnswer::Final => true,
            TextAnswer::Continue => false,
            TextAnswer::CompletionPhrase => policy::completion::signals_completion(&text),
        };
        if last {
            let fallback = text.is_empty() && self.config.empty_answer.last_text_fallback;
            let text = match self.last_answer_text.take().filter(|_| fallback) {
                Some(earlier) => {
                    self.emit(Event::Notice {
                        source: "moltis-answer-fallback".to_owned(),
                        text: "the final answer is empty: the text of the last tool-call response stands in for it".to_owned(),
                    });
                    earlier
                }
                None => text,
            };
            let handed = policy::final_text::apply(&self.config.final_text, &text);
            if handed != text {
                self.emit(Event::Notice {
                    source: "final-text".to_owned(),
                    text: format!("the final answer as the runtime hands it over: «{handed}»"),
                });
            }
            return Some(self.finish(OutcomeKind::Response, iterations, Some(handed), None));
        }
        self.remember(Message::new(Role::Assistant, text));
        None
    }

    /// The book's compaction: when the context estimate passes the threshold, a summary call
    /// replaces everything but the last `keep_last` messages (the system prompt stays).
    ///
    /// The book's `messages` never hold the system prompt (it travels as `system:`), so the
    /// estimate (`JSON.stringify(this.messages)`) and the summary request (`messages.slice(0,
    /// -3)` plus the prompt, no `system`) both leave it out.
    fn summarise_if_needed(
        &mut self,
        model: &mut dyn Model,
        iterations: u32,
    ) -> Result<Option<LoopEnd>, ScriptGap> {
        let c = &self.config.compaction;
        if c.threshold <= 0.0 {
            return Ok(None);
        }
        let system_len = self
            .messages
            .iter()
            .take_while(|m| m.role == Role::System)
            .count();
        let estimate = self.context_estimate(system_len);
        let body = &self.messages[system_len..];
        if (estimate as f64) <= c.threshold * c.context_tokens as f64 {
            return Ok(None);
        }
        let system = self.messages[..system_len].to_vec();
        let (older, recent) = policy::compaction::split_for_summary(body, c.keep_last);
        let mut request = older;
        request.push(Message::new(Role::User, c.summary_prompt.clone()));
        self.call_no += 1;
        let names = self.offered_names.of(&[]);
        self.emit(Event::ModelRequest {
            purpose: Purpose::Summary,
            call: self.call_no,
            messages: request.len(),
            tools: names,
            force_text: false,
            stripped: false,
        });
        let reply = model.respond(&ModelRequest {
            purpose: Purpose::Summary,
            iteration: iterations,
            call: self.call_no,
            messages: &request,
            tools: &[],
            force_text: false,
            lineage: None,
        });
        let reply = match reply {
            Ok(r) => r,
            Err(ModelError::Script(e)) => return Err(e.into()),
            Err(ModelError::Provider(f)) => {
                self.clock = self.clock.saturating_add(f.latency_ms);
                return Ok(Some(self.fault_ends_run(&f, 1, iterations)));
            }
        };
        self.account(&reply);
        self.emit(Event::model_response(&reply));
        let summary = reply.text.unwrap_or_default();
        let before = self.messages.len();
        let mut messages = system;
        messages.push(Message::new(
            Role::User,
            policy::fill(&c.summary_message, &[("summary", &summary)]),
        ));
        messages.extend(recent);
        self.messages.replace(messages);
        self.recount_history();
        self.emit(Event::Compaction {
            reason: "threshold".to_owned(),
            before,
            after: self.messages.len(),
            estimate: Some(estimate),
        });
        Ok(None)
    }

    /// [`policy::compaction::estimate_tokens`] of the conversation after its first
    /// `system_len` messages, measuring only what it gained since the last estimate.
    fn context_estimate(&mut self, system_len: usize) -> u64 {
        use policy::compaction::{estimate_of, wire_len};
        let all =
            self.context_measured
                .sum(Some(self.messages.lineage()), &self.messages, wire_len);
        let system: usize = self.messages[..system_len].iter().map(wire_len).sum();
        estimate_of(self.messages.len() - system_len, all - system)
    }

    fn account(&mut self, r: &ModelResponse) {
        self.clock = self.clock.saturating_add(r.latency_ms);
        self.input_tokens = self.input_tokens.saturating_add(r.usage.input);
        self.output_tokens = self.output_tokens.saturating_add(r.usage.output);
        let cost = |p: Prices| {
            (r.usage.input as f64 * p.input_per_mtok + r.usage.output as f64 * p.output_per_mtok)
                / 1_000_000.0
        };
        self.cost_usd += cost(self.input.prices);
        self.guard_cost_usd += cost(self.input.guard_prices);
    }

    /// One model call, with the profile's answer to provider errors: after a context
    /// overflow, compact and retry once (IronClaw); otherwise retry per kind, waiting on the
    /// virtual clock, within or across iterations.
    fn call_model(
        &mut self,
        model: &mut dyn Model,
        tools: &dyn ToolRunner,
        n: u32,
        iterations: u32,
    ) -> Result<Called, ScriptGap> {
        let mut compacted = false;
        loop {
            self.budget.check(self.events.len(), self.clock)?;
            let offered: &[ToolSpec] = if self.force_text || self.strip_this_call {
                &[]
            } else {
                tools.specs()
            };
            self.call_no += 1;
            let names = self.offered_names.of(offered);
            self.emit(Event::ModelRequest {
                purpose: Purpose::Turn,
                call: self.call_no,
                messages: self.messages.len(),
                tools: names,
                force_text: self.force_text,
                stripped: self.strip_this_call,
            });
            let reply = model.respond(&ModelRequest {
                purpose: Purpose::Turn,
                iteration: n,
                call: self.call_no,
                messages: &self.messages,
                tools: offered,
                force_text: self.force_text,
                lineage: Some(self.messages.lineage()),
            });
            let fault = match reply {
                Ok(r) => {
                    self.faults = 0;
                    if !self.config.retry.per_run {
                        self.faults_by_kind = [0; FaultKind::COUNT];
                    }
                    self.account(&r);
                    let r = match assemble(r) {
                        Ok(r) => r,
                        Err(detail) => {
                            let end =
                                self.finish(OutcomeKind::Error, iterations, None, Some(detail));
                            return Ok(Called::Ended(end));
                        }
                    };
                    if self.config.validation.decode_status {
                        self.without_argument_text = streamed_without_text(&r);
                    }
                    return Ok(Called::Response(r));
                }
                Err(ModelError::Script(e)) => return Err(e.into()),
                Err(ModelError::Provider(f)) => f,
            };
            self.clock = self.clock.saturating_add(fault.latency_ms);
            self.faults += 1;
            self.faults_by_kind[fault.kind as usize] += 1;
            let attempt = self.faults;
            let nth_of_kind = self.faults_by_kind[fault.kind as usize];
            if fault.kind == FaultKind::ContextOverflow
                && self.config.compaction.retry_on_overflow
                && !compacted
            {
                compacted = true;
                self.emit(Event::provider_error(&fault, attempt, None));
                let before = self.messages.len();
                self.messages.replace(policy::compaction::compact_for_retry(
                    &self.messages,
                    &self.config.compaction.overflow_note,
                ));
                self.recount_history();
                self.emit(Event::Compaction {
                    reason: "overflow".to_owned(),
                    before,
                    after: self.messages.len(),
                    estimate: None,
                });
                continue;
            }
            let rule = match fault.kind {
                FaultKind::RateLimit => Some(&self.config.retry.rate_limit),
                FaultKind::ServerError => Some(&self.config.retry.server_error),
                FaultKind::Timeout => Some(&self.config.retry.timeout),
                FaultKind::ContextOverflow | FaultKind::Refused => None,
            };
            if let Some(rule) = rule.filter(|r| nth_of_kind <= r.max_retries) {
                let wait = rule.delay(nth_of_kind, fault.retry_after_ms);
                self.emit(Event::provider_error(&fault, attempt, Some(wait)));
                self.clock = self.clock.saturating_add(wait);
                if self.config.retry.counts_iteration {
                    return Ok(Called::NextIteration);
                }
                continue;
            }
            return Ok(Called::Ended(
                self.fault_ends_run(&fault, attempt, iterations),
            ));
        }
    }

    /// A provider error nothing retries: record it and end the run with an error.
    fn fault_ends_run(&mut self, fault: &ProviderFault, attempt: u32, iterations: u32) -> LoopEnd {
        self.emit(Event::provider_error(fault, attempt, None));
        self.finish(OutcomeKind::Error, iterations, None, Some(fault.describe()))
    }

    fn needs_approval(&self, name: &str, tools: &dyn ToolRunner) -> bool {
        let a = &self.config.approvals;
        a.enabled && !a.auto_approve && tools.needs_approval(name)
    }

    fn run_batch(
        &mut self,
        response: &ModelResponse,
        view: &LoopView,
        tools: &mut dyn ToolRunner,
    ) -> Result<BatchEnd, ScriptGap> {
        let calls = &response.tool_calls;
        let decoded: Vec<Result<Args, String>> = calls
            .iter()
            .map(|c| decode(&c.arguments, self.config.malformed_args))
            .collect();
        // Arguments that do not decode read as `{}`.
        static EMPTY: std::sync::LazyLock<Args> = std::sync::LazyLock::new(|| Args::new(empty()));
        let pairs: Vec<(&str, &Args)> = calls
            .iter()
            .zip(&decoded)
            .map(|(c, d)| (c.name.as_str(), d.as_ref().unwrap_or(&EMPTY)))
            .collect();
        for p in &mut self.policies {
            p.before_execute(&pairs);
        }
        self.total_tool_calls += calls.len() as u64;
        self.auth_prompt = None;
        self.remember(Message {
            role: Role::Assistant,
            content: response.text.clone().unwrap_or_default(),
            tool_calls: calls.clone(),
            failed: false,
        });

        // Screening and the approval split, in call order, before anything runs.
        let mut runnable = Vec::with_capacity(calls.len());
        let mut skipped_from = None;
        let mut paused = None;
        let mut warnings: Vec<(&'static str, Vec<Action>)> = Vec::new();
        'calls: for (i, (name, args)) in pairs.iter().enumerate() {
            for p in 0..self.policies.len() {
                let screen = self.policies[p].screen(name, args, view);
                let id = self.policies[p].id();
                let (injects, now): (Vec<Action>, Vec<Action>) = screen
                    .actions
                    .into_iter()
                    .partition(|a| matches!(a, Action::Inject { .. }));
                self.apply(id, now, calls.len());
                if !injects.is_empty() {
                    warnings.push((id, injects));
                }
                if let Some(skip) = screen.skip_rest {
                    skipped_from = Some((i, skip));
                    break 'calls;
                }
            }
            if self.needs_approval(name, tools) {
                paused = Some(i);
                break;
            }
            runnable.push(i);
        }
        // Each runnable call once, its decoded arguments shared with the batch (not copied).
        let batch: Vec<(&ToolCall, Result<Args, String>)> = runnable
            .iter()
            .map(|&i| (&calls[i], decoded[i].clone()))
            .collect();
        let records = self.run_calls(batch, tools)?;
        if let Some((k, skip)) = skipped_from {
            for call in &calls[k..] {
                self.emit(Event::ToolCallSkipped {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    reason: skip.reason.to_owned(),
                });
                self.push_tool(skip.message.to_owned(), true);
            }
        }
        for (id, actions) in warnings {
            self.apply(id, actions, calls.len());
        }
        if let Some(p) = paused {
            return Ok(BatchEnd::Paused {
                call: calls[p].clone(),
                deferred: calls[p + 1..].to_vec(),
            });
        }
        for i in 0..self.policies.len() {
            let actions = self.policies[i].after_batch(&records, view);
            let id = self.policies[i].id();
            self.apply(id, actions, calls.len());
        }
        Ok(BatchEnd::Done)
    }

    /// A paused call: consume the next scripted decision. Approve runs it and the deferred
    /// calls (pausing again at the next one that needs approval), then restarts the loop;
    /// reject ends the turn with the rejection text; no decision ends the run waiting.
    fn approval(
        &mut self,
        mut call: ToolCall,
        mut deferred: Vec<ToolCall>,
        iterations: u32,
        tools: &mut dyn ToolRunner,
    ) -> Result<LoopEnd, ScriptGap> {
        loop {
            self.emit(Event::ApprovalRequested {
                id: call.id.clone(),
                name: call.name.clone(),
                deferred: deferred.len(),
                auth: self.auth_prompt.clone(),
            });
            let Some(def) = self.input.approvals.get(self.next_approval) else {
                let detail = format!("tool `{}` is waiting for approval", call.name);
                return Ok(self.finish(OutcomeKind::NeedApproval, iterations, None, Some(detail)));
            };
            self.next_approval += 1;
            if let Some(expected) = def.tool.as_ref().filter(|t| **t != call.name) {
                return Err(ScriptGap::Approval {
                    index: self.next_approval,
                    expected: expected.clone(),
                    got: call.name.clone(),
                });
            }
            self.emit(Event::ApprovalDecision {
                id: call.id.clone(),
                name: call.name.clone(),
                decision: def.decision,
            });
            if def.decision == Decision::Reject {
                let text = policy::fill(
                    &self.config.approvals.reject_message,
                    &[("tool", &call.name)],
                );
                return Ok(self.finish(OutcomeKind::Response, iterations, Some(text), None));
            }
            let args = decode(&call.arguments, self.config.malformed_args);
            self.run_calls(vec![(&call, args)], tools)?;
            let mut again = None;
            let mut runnable = Vec::new();
            for (i, c) in deferred.iter().enumerate() {
                if self.needs_approval(&c.name, tools) {
                    again = Some(i);
                    break;
                }
                runnable.push((c, decode(&c.arguments, self.config.malformed_args)));
            }
            self.run_calls(runnable, tools)?;
            match again {
                Some(i) => {
                    call = deferred[i].clone();
                    deferred = deferred[i + 1..].to_vec();
                }
                None => {
                    self.carried_iterations = iterations;
                    return Ok(LoopEnd::Resume);
                }
            }
        }
    }

    /// Validate, dispatch and record a list of calls: starts before anything runs, then
    /// results in call order.
    fn run_calls(
        &mut self,
        calls: Vec<(&ToolCall, Result<Args, String>)>,
        tools: &mut dyn ToolRunner,
    ) -> Result<Vec<CallRecord>, ScriptGap> {
        let mut prepared = Vec::with_capacity(calls.len());
        // The arguments as sent, where coercion changed them: the defences see these.
        let mut sent = Vec::with_capacity(calls.len());
        let coerce = self.config.validation.enabled && self.config.validation.coerce_scalars;
        // Each call's tool as the profile looks it up (the events keep the name as called).
        let names: Vec<&str> = calls
            .iter()
            .map(|&(call, _)| self.looked_up(&call.name, tools.specs()))
            .collect();
        let mut called = Vec::with_capacity(calls.len());
        for ((call, args), &name) in calls.into_iter().zip(&names) {
            called.push(call);
            let spec = tools.specs().iter().find(|t| t.name == name);
            let coerced = match (&args, spec) {
                (Ok(a), Some(spec)) if coerce => policy::validate::coerce_scalars(&spec.schema, a),
                _ => None,
            };
            let coerced = coerced.map(Args::new);
            sent.push(coerced.as_ref().and(args.as_ref().ok().cloned()));
            let args = match coerced {
                Some(c) => Ok(c),
                None => args,
            };
            // How the arguments were decoded, for a rejection that says so.
            let decoded = if self.config.validation.decode_status {
                policy::validate::decode_status(
                    &call.arguments,
                    self.without_argument_text.contains(&call.id),
                    self.config.malformed_args,
                )
            } else {
                None
            };
            let p = match args {
                Err(e) => Prepared::Broken(call.arguments.text().to_owned(), e),
                Ok(args) if spec.is_none() => Prepared::Unknown(args),
                Ok(args) => match self
                    .policies
                    .iter()
                    .find_map(|p| p.validate(name, &args, spec, decoded.as_deref()))
                {
                    Some(msg) => Prepared::Rejected(args, msg),
                    None => Prepared::Run(args),
                },
            };
            let start_args = match &p {
                Prepared::Run(a) | Prepared::Unknown(a) => Some(a.clone()),
                Prepared::Broken(raw, _) => Some(Args::new(Value::String(raw.clone()))),
                Prepared::Rejected(..) => None,
            };
            if let Some(args) = start_args {
                self.emit(Event::ToolCallStart {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    args,
                    args_unknown: false,
                });
            }
            prepared.push(p);
        }

        // Execute; the batch takes the slowest call (parallel) or the sum (sequential).
        let mut results = Vec::with_capacity(called.len());
        for (p, name) in prepared.iter().zip(&names) {
            let r = match p {
                Prepared::Run(args) => {
                    let r = tools.run(name, args)?;
                    let status = match r.status {
                        ToolStatus::Ok(out) => Ok(out),
                        ToolStatus::Error(e) => Err(CallResult::Failed(Some(e))),
                        ToolStatus::Fail => Err(CallResult::Failed(None)),
                    };
                    (status, r.latency_ms)
                }
                Prepared::Rejected(_, msg) => (Err(CallResult::Rejected(msg.clone())), 0),
                Prepared::Broken(_, e) => (Err(CallResult::Failed(Some(e.clone()))), 0),
                Prepared::Unknown(_) => (
                    Err(CallResult::Failed(Some(format!("unknown tool: {}", name)))),
                    0,
                ),
            };
            results.push(r);
        }
        let latencies = results.iter().map(|r| r.1);
        self.clock = self.clock.saturating_add(match self.config.tool_execution {
            policy::ToolExecution::Parallel => latencies.max().unwrap_or(0),
            policy::ToolExecution::Sequential => latencies.fold(0, u64::saturating_add),
        });

        let mut records = Vec::with_capacity(called.len());
        for ((((call, p), (status, latency_ms)), sent), name) in called
            .into_iter()
            .zip(prepared)
            .zip(results)
            .zip(sent)
            .zip(&names)
        {
            let (args, result) = match (p, status) {
                (Prepared::Run(a), Ok(output)) => {
                    self.capture_auth_prompt(name, &output);
                    self.emit(Event::ToolCallEnd {
                        id: call.id.clone(),
                        name: call.name.clone(),
                        ok: true,
                        output: Some(output.clone()),
                        error: None,
                        latency_ms,
                        rule: None,
                    });
                    self.push_tool(output, false);
                    (a, CallResult::Ok)
                }
                (Prepared::Rejected(a, msg), _) => {
                    self.emit(Event::ToolCallRejected {
                        id: call.id.clone(),
                        name: call.name.clone(),
                        args: Args::clone(&a),
                        error: msg.clone(),
                    });
                    let message = self.error_message(name, Some(&msg));
                    self.push_tool(message, true);
                    (a, CallResult::Rejected(msg))
                }
                (p, status) => {
                    let failure = match status {
                        Err(f) => f,
                        Ok(_) => CallResult::Failed(None),
                    };
                    // A failure without text keeps the profile's message; the defences and
                    // the trace read the profile's error text for it, if it has one.
                    let message = self.error_message(name, failure.error());
                    let failure = match failure {
                        CallResult::Failed(None) if !self.config.tool_fail_error.is_empty() => {
                            CallResult::Failed(Some(self.config.tool_fail_error.clone()))
                        }
                        f => f,
                    };
                    let error = failure.error().map(str::to_owned);
                    self.emit(Event::ToolCallEnd {
                        id: call.id.clone(),
                        name: call.name.clone(),
                        ok: false,
                        output: None,
                        error: error.clone(),
                        latency_ms,
                        rule: None,
                    });
                    self.push_tool(message, true);
                    let args = match p {
                        Prepared::Run(a) | Prepared::Unknown(a) | Prepared::Rejected(a, _) => a,
                        Prepared::Broken(..) => Args::new(empty()),
                    };
                    (args, failure)
                }
            };
            records.push(CallRecord {
                name: call.name.clone(),
                args: sent.unwrap_or(args),
                result,
            });
        }
        Ok(records)
    }

    /// IronClaw keeps the first authentication prompt a batch produced (results of the
    /// `approvals.auth_tools` naming an extension and carrying a token request or an
    /// auth/setup URL) so a resumed run can show it again.
    fn capture_auth_prompt(&mut self, tool: &str, output: &str) {
        let approvals = &self.config.approvals;
        if !approvals.enabled
            || self.auth_prompt.is_some()
            || !approvals.auth_tools.iter().any(|t| t == tool)
        {
            return;
        }
        let Ok(Value::Object(o)) = serde_json::from_str::<Value>(output) else {
            return;
        };
        let asks = o.get("awaiting_token").and_then(Value::as_bool) == Some(true)
            || o.contains_key("auth_url")
            || o.contains_key("setup_url");
        if let (Some(Value::String(name)), true) = (o.get("name"), asks) {
            self.auth_prompt = Some(name.clone());
        }
    }

    /// The name a call's tool is looked up, validated and run by: as called, or as the
    /// profile cleans it ([`policy::Config::sanitize_tool_names`]).
    fn looked_up<'n>(&self, name: &'n str, specs: &[ToolSpec]) -> &'n str {
        if !self.config.sanitize_tool_names {
            return name;
        }
        let clean = sanitize_tool_name(name);
        let has = |n: &str| specs.iter().any(|t| t.name == n);
        match clean.strip_suffix("_wasm") {
            Some(stem) if self.config.wasm_alias && !stem.is_empty() && has(stem) => stem,
            _ => clean,
        }
    }

    fn error_message(&self, name: &str, error: Option<&str>) -> String {
        let m = self
            .failure_messages
            .get_or_init(|| policy::FailureMessages::new(self.config));
        match error {
            Some(error) => m.error(name, error),
            None => m.failed(name),
        }
    }

    fn push_tool(&mut self, content: String, failed: bool) {
        self.remember(Message {
            role: Role::Tool,
            content,
            tool_calls: Vec::new(),
            failed,
        });
    }
}

/// Assemble a streamed response (text deltas, tool-call starts, argument deltas, finish) the
/// way the runtime's accumulator does: a call that received no argument deltas keeps `{}`.
fn assemble(mut r: ModelResponse) -> Result<ModelResponse, String> {
    if r.stream.is_empty() {
        return Ok(r);
    }
    let chunks = std::mem::take(&mut r.stream);
    let a = crate::llm::stream::assemble(&chunks).map_err(|e| format!("malformed stream: {e}"))?;
    r.chunks = a.deltas;
    r.text = a.text;
    if let Some(f) = a.finish {
        r.finish = f;
    }
    r.tool_calls = a.tool_calls;
    Ok(r)
}

/// The ids of an assembled streamed response's calls that received no argument text: those
/// the assembly gave `{}` (a call with any text keeps it raw), which a runtime that decodes
/// the text reads from the empty string.
fn streamed_without_text(r: &ModelResponse) -> Vec<String> {
    if r.chunks == 0 {
        return Vec::new();
    }
    r.tool_calls
        .iter()
        .filter(|c| matches!(c.arguments, Arguments::Parsed(_)))
        .map(|c| c.id.clone())
        .collect()
}

fn empty() -> Value {
    Value::Object(Default::default())
}

fn decode(args: &Arguments, malformed: MalformedArgs) -> Result<Args, String> {
    match args {
        Arguments::Parsed(v) => Ok(Args::clone(v)),
        Arguments::Raw(raw) => policy::validate::decode_raw(raw, malformed)
            .0
            .map(Args::new),
    }
}

/// Moltis' reading of a tool name a model mangled (`sanitize_tool_name`): trimmed, one pair
/// of surrounding `"` removed, a `functions_` prefix removed, one trailing `_<digits>` cut
/// (`exec_2` is `exec`; `_2` alone stays).
fn sanitize_tool_name(name: &str) -> &str {
    let t = name.trim();
    let t = t
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(t);
    let t = t.strip_prefix("functions_").unwrap_or(t);
    match t.rfind('_') {
        Some(at)
            if at > 0 && at + 1 < t.len() && t[at + 1..].bytes().all(|b| b.is_ascii_digit()) =>
        {
            &t[..at]
        }
        _ => t,
    }
}

#[cfg(test)]
mod chat_tests;

#[cfg(test)]
mod tests {
    use super::{RunInput, run};
    use crate::llm::{Model, ModelError, ModelRequest, ModelResponse, Purpose, Role};
    use crate::policy::{Config, Prices};
    use crate::tool::ScriptedTools;
    use crate::trace::Event;
    use std::collections::BTreeMap;

    #[test]
    fn offered_names_are_shared_while_the_tools_stay_the_same() {
        use super::OfferedNames;
        use std::sync::Arc;
        let spec = |name: &str| crate::llm::ToolSpec {
            name: name.to_owned(),
            description: String::new(),
            schema: serde_json::json!({}).into(),
        };
        let (ab, ac, a) = ([spec("a"), spec("b")], [spec("a"), spec("c")], [spec("a")]);
        let mut names = OfferedNames::default();
        let first = names.of(&ab);
        assert_eq!(&*first, ["a", "b"]);
        assert!(Arc::ptr_eq(&first, &names.of(&ab)));
        // Other names, fewer, none: each its own list, then shared in turn.
        for (tools, want) in [
            (&ac[..], &["a", "c"][..]),
            (&a, &["a"]),
            (&[], &[]),
            (&ab, &["a", "b"]),
        ] {
            let got = names.of(tools);
            assert_eq!(&*got, want);
            assert!(!Arc::ptr_eq(&got, &first) || tools == &ab[..]);
            assert!(Arc::ptr_eq(&got, &names.of(tools)));
        }
    }

    /// Answers every turn with text and every summary with "S", remembering the roles of each
    /// summary request.
    #[derive(Default)]
    struct Recorder {
        summaries: Vec<Vec<Role>>,
    }

    impl Model for Recorder {
        fn respond(&mut self, request: &ModelRequest<'_>) -> Result<ModelResponse, ModelError> {
            let text = if request.purpose == Purpose::Summary {
                self.summaries
                    .push(request.messages.iter().map(|m| m.role).collect());
                "S"
            } else {
                "done"
            };
            Ok(ModelResponse::text_only(text))
        }
    }

    fn book_run(system: &str, user: &str) -> (Vec<Event>, Recorder) {
        let mut config = Config::agentloop();
        config.compaction.context_tokens = 100; // threshold: 80 tokens, about 320 bytes
        let workspace = BTreeMap::new();
        let input = RunInput {
            profile: "agentloop",
            model: "mock",
            config: &config,
            system,
            user,
            signals: &[],
            prices: Prices::default(),
            guard_prices: Prices::default(),
            approvals: &[],
            followups: &[],
            workspace: &workspace,
            plan: &[],
        };
        let mut model = Recorder::default();
        let mut tools = ScriptedTools::new(&[]);
        let events = run(input, &mut model, &mut tools).expect("complete script");
        (events.into_iter().map(|e| e.event).collect(), model)
    }

    #[test]
    fn book_estimate_leaves_the_system_prompt_out() {
        let (events, model) = book_run(&"s".repeat(2000), "hi");
        assert!(model.summaries.is_empty());
        assert!(!events.iter().any(|e| matches!(e, Event::Compaction { .. })));
    }

    #[test]
    fn book_summary_request_has_no_system_prompt() {
        let (events, model) = book_run("Be brief.", &"u".repeat(2000));
        // One user message: `slice(0, -3)` is empty, so the request is the prompt alone.
        assert_eq!(model.summaries, vec![vec![Role::User]]);
        let compaction = events.iter().find_map(|e| match e {
            Event::Compaction { before, after, .. } => Some((*before, *after)),
            _ => None,
        });
        // System prompt kept, summary added, the last 3 (here the one user message) kept.
        assert_eq!(compaction, Some((2, 3)));
    }
}
