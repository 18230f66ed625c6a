//! The loop engine: model → text or tool calls → tools → model …, consulting the configured
//! policies at fixed points and recording every step as a [`TimedEvent`] on a virtual clock.
//!
//! Pure and deterministic: it knows nothing of files, threads, the CLI or the network. Time
//! advances only by the latencies the model and the tools report. A second loop, the plan/step
//! executor (`plan_step.rs`), runs instead when the configuration enables it; it shares the
//! model and tool traits, the clock and the event stream.

use crate::json::compact;
use crate::llm::{
    Arguments, Message, Model, ModelError, ModelRequest, ModelResponse, Purpose, Role, ToolCall,
    ToolSpec,
};
use crate::policy::{
    self, Action, CallRecord, CallResult, Config, LoopView, MalformedArgs, Policy,
};
use crate::scenario::{OutcomeKind, SignalDef};
use crate::tool::{ToolRunner, ToolStatus, UnscriptedCall};
use crate::trace::{CallSummary, Event, TimedEvent};
use serde_json::Value;

mod plan_step;

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
    /// The initial plan's step titles (the plan/step loop; empty for the agent loop).
    pub plan: &'a [String],
}

/// A run that could not finish because the scenario's script is incomplete.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScriptGap {
    /// The mock model has no answer.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// A tool has no outcome for a call.
    #[error(transparent)]
    Tool(#[from] UnscriptedCall),
}

/// The events of a finished run, or of a run cut short by a script gap.
pub type RunResult = Result<Vec<TimedEvent>, (Vec<TimedEvent>, ScriptGap)>;

struct Loop<'a> {
    config: &'a Config,
    policies: Vec<Box<dyn Policy>>,
    events: Vec<TimedEvent>,
    messages: Vec<Message>,
    clock: u64,
    force_text: bool,
    strip_this_call: bool,
    total_tool_calls: u64,
}

/// How one call of a batch is handled before dispatch.
enum Prepared {
    Run(Value),
    Rejected(Value, String),
    Broken(String, String),
    Unknown(Value),
}

/// Run one agent loop to its outcome (the plan/step loop when the configuration enables it).
pub fn run(input: RunInput<'_>, model: &mut dyn Model, tools: &mut dyn ToolRunner) -> RunResult {
    if input.config.plan_step.enabled {
        return plan_step::run(input, model, tools);
    }
    let mut lp = Loop {
        config: input.config,
        policies: policy::build(input.config),
        events: Vec::with_capacity(64),
        messages: Vec::with_capacity(32),
        clock: 0,
        force_text: false,
        strip_this_call: false,
        total_tool_calls: 0,
    };
    let tool_names: Vec<String> = tools.specs().iter().map(|t| t.name.clone()).collect();
    lp.emit(Event::RunStart {
        profile: input.profile.to_owned(),
        model: input.model.to_owned(),
        max_iterations: input.config.max_iterations,
        tools: tool_names.clone(),
    });
    if !input.system.is_empty() {
        lp.messages.push(Message::new(Role::System, input.system));
    }
    lp.messages.push(Message::new(Role::User, input.user));
    match lp.drive(&input, model, tools, &tool_names) {
        Ok(()) => Ok(lp.events),
        Err(gap) => Err((lp.events, gap)),
    }
}

impl Loop<'_> {
    fn emit(&mut self, event: Event) {
        self.events.push(TimedEvent {
            t_ms: self.clock,
            event,
        });
    }

    fn view(&self, iteration: u32, tools_available: bool) -> LoopView {
        LoopView {
            iteration,
            total_tool_calls: self.total_tool_calls,
            tools_available,
            force_text: self.force_text,
        }
    }

    fn finish(
        &mut self,
        outcome: OutcomeKind,
        iterations: u32,
        text: Option<String>,
        detail: Option<String>,
    ) {
        self.emit(Event::Outcome {
            outcome,
            iterations,
            text,
            detail,
        });
    }

    fn apply(&mut self, source: &'static str, actions: Vec<Action>, calls_in_batch: usize) {
        for action in actions {
            match action {
                Action::Intervene {
                    stage,
                    action,
                    tool,
                } => self.emit(Event::Intervention {
                    policy: source.to_owned(),
                    stage,
                    action: action.to_owned(),
                    tool,
                }),
                Action::Inject { role, text } => {
                    self.messages.push(Message::new(role, text.clone()));
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
            }
        }
    }

    fn drive(
        &mut self,
        input: &RunInput<'_>,
        model: &mut dyn Model,
        tools: &mut dyn ToolRunner,
        tool_names: &[String],
    ) -> Result<(), ScriptGap> {
        let mut call_no = 0u32;
        let mut iterations = 0u32;
        loop {
            let n = iterations + 1;
            if input.signals.iter().any(|s| s.at_iteration == n && s.stop) {
                self.emit(Event::Signal {
                    signal: "stop".to_owned(),
                    text: None,
                });
                self.finish(OutcomeKind::Stopped, iterations, None, None);
                return Ok(());
            }
            if n > self.config.max_iterations {
                let detail = policy_fill(
                    &self.config.max_iterations_message,
                    self.config.max_iterations,
                );
                self.finish(OutcomeKind::MaxIterations, iterations, None, Some(detail));
                return Ok(());
            }
            iterations = n;
            self.emit(Event::Iteration { n });
            for s in input.signals.iter().filter(|s| s.at_iteration == n) {
                if let Some(text) = &s.inject {
                    self.messages.push(Message::new(Role::User, text.clone()));
                    self.emit(Event::Signal {
                        signal: "inject".to_owned(),
                        text: Some(text.clone()),
                    });
                }
            }

            self.strip_this_call = false;
            let pre_view = self.view(n, !self.force_text);
            for i in 0..self.policies.len() {
                let actions = self.policies[i].before_call(&pre_view);
                let id = self.policies[i].id();
                self.apply(id, actions, 0);
            }
            let offered: &[ToolSpec] = if self.force_text || self.strip_this_call {
                &[]
            } else {
                tools.specs()
            };
            let offered_names = if offered.is_empty() {
                Vec::new()
            } else {
                tool_names.to_vec()
            };
            call_no += 1;
            self.emit(Event::ModelRequest {
                purpose: Purpose::Turn,
                call: call_no,
                messages: self.messages.len(),
                tools: offered_names,
                force_text: self.force_text,
                stripped: self.strip_this_call,
            });
            let tools_available = !offered.is_empty();
            let response = model.respond(&ModelRequest {
                purpose: Purpose::Turn,
                iteration: n,
                call: call_no,
                messages: &self.messages,
                tools: offered,
                force_text: self.force_text,
            })?;
            self.clock += response.latency_ms;
            self.emit(Event::ModelResponse {
                finish: response.finish,
                text: response.text.clone(),
                calls: response.tool_calls.iter().map(summary).collect(),
                input_tokens: response.usage.input,
                output_tokens: response.usage.output,
                latency_ms: response.latency_ms,
            });
            let view = self.view(n, tools_available);

            if response.tool_calls.is_empty() {
                let text = response.text.unwrap_or_default();
                let mut continued = None;
                for p in &mut self.policies {
                    if let Some(actions) = p.on_text(&text, &view) {
                        continued = Some((p.id(), actions));
                        break;
                    }
                }
                for p in &mut self.policies {
                    p.after_text(&text, continued.is_some());
                }
                match continued {
                    Some((id, actions)) => {
                        self.messages.push(Message::new(Role::Assistant, text));
                        self.apply(id, actions, 0);
                        continue;
                    }
                    None => {
                        self.finish(OutcomeKind::Response, iterations, Some(text), None);
                        return Ok(());
                    }
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
                    self.messages
                        .push(Message::new(Role::Assistant, text.clone()));
                }
                self.apply(id, actions, batch_len);
                continue;
            }
            self.run_batch(&response, &view, tools)?;
        }
    }

    fn run_batch(
        &mut self,
        response: &ModelResponse,
        view: &LoopView,
        tools: &mut dyn ToolRunner,
    ) -> Result<(), ScriptGap> {
        let calls = &response.tool_calls;
        let decoded: Vec<Result<Value, String>> = calls
            .iter()
            .map(|c| decode(&c.arguments, self.config.malformed_args))
            .collect();
        let pairs: Vec<(String, Value)> = calls
            .iter()
            .zip(&decoded)
            .map(|(c, d)| (c.name.clone(), d.clone().unwrap_or_else(|_| empty())))
            .collect();
        for p in &mut self.policies {
            p.before_execute(&pairs);
        }
        self.total_tool_calls += calls.len() as u64;
        self.messages.push(Message {
            role: Role::Assistant,
            content: response.text.clone().unwrap_or_default(),
            tool_calls: calls.clone(),
            failed: false,
        });

        // Pre-dispatch, in call order; starts are recorded before anything runs.
        let mut prepared = Vec::with_capacity(calls.len());
        for (call, args) in calls.iter().zip(decoded) {
            let spec = tools.specs().iter().find(|t| t.name == call.name);
            let p = match args {
                Err(e) => Prepared::Broken(raw_text(&call.arguments), e),
                Ok(args) if spec.is_none() => Prepared::Unknown(args),
                Ok(args) => match self
                    .policies
                    .iter()
                    .find_map(|p| p.validate(&call.name, &args, spec))
                {
                    Some(msg) => Prepared::Rejected(args, msg),
                    None => Prepared::Run(args),
                },
            };
            let start_args = match &p {
                Prepared::Run(a) | Prepared::Unknown(a) => Some(a.clone()),
                Prepared::Broken(raw, _) => Some(Value::String(raw.clone())),
                Prepared::Rejected(..) => None,
            };
            if let Some(args) = start_args {
                self.emit(Event::ToolCallStart {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    args,
                });
            }
            prepared.push(p);
        }

        // Execute; the batch takes the slowest call (parallel) or the sum (sequential).
        let mut results = Vec::with_capacity(calls.len());
        for (call, p) in calls.iter().zip(&prepared) {
            let r = match p {
                Prepared::Run(args) => {
                    let r = tools.run(&call.name, args)?;
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
                    Err(CallResult::Failed(Some(format!(
                        "unknown tool: {}",
                        call.name
                    )))),
                    0,
                ),
            };
            results.push(r);
        }
        let latencies = results.iter().map(|r| r.1);
        self.clock += match self.config.tool_execution {
            policy::ToolExecution::Parallel => latencies.max().unwrap_or(0),
            policy::ToolExecution::Sequential => latencies.sum(),
        };

        let mut records = Vec::with_capacity(calls.len());
        for ((call, p), (status, latency_ms)) in calls.iter().zip(prepared).zip(results) {
            let (args, result) = match (p, status) {
                (Prepared::Run(a), Ok(output)) => {
                    self.emit(Event::ToolCallEnd {
                        id: call.id.clone(),
                        name: call.name.clone(),
                        ok: true,
                        output: Some(output.clone()),
                        error: None,
                        latency_ms,
                    });
                    self.push_tool(output, false);
                    (a, CallResult::Ok)
                }
                (Prepared::Rejected(a, msg), _) => {
                    self.emit(Event::ToolCallRejected {
                        id: call.id.clone(),
                        name: call.name.clone(),
                        args: a.clone(),
                        error: msg.clone(),
                    });
                    self.push_tool(self.error_message(&call.name, Some(&msg)), true);
                    (a, CallResult::Rejected(msg))
                }
                (p, status) => {
                    let failure = match status {
                        Err(f) => f,
                        Ok(_) => CallResult::Failed(None),
                    };
                    let error = failure.error().map(str::to_owned);
                    self.emit(Event::ToolCallEnd {
                        id: call.id.clone(),
                        name: call.name.clone(),
                        ok: false,
                        output: None,
                        error: error.clone(),
                        latency_ms,
                    });
                    self.push_tool(self.error_message(&call.name, error.as_deref()), true);
                    let args = match p {
                        Prepared::Run(a) | Prepared::Unknown(a) | Prepared::Rejected(a, _) => a,
                        Prepared::Broken(..) => empty(),
                    };
                    (args, failure)
                }
            };
            records.push(CallRecord {
                name: call.name.clone(),
                args,
                result,
            });
        }

        for i in 0..self.policies.len() {
            let actions = self.policies[i].after_batch(&records, view);
            let id = self.policies[i].id();
            self.apply(id, actions, calls.len());
        }
        Ok(())
    }

    fn error_message(&self, name: &str, error: Option<&str>) -> String {
        let Some(error) = error else {
            return crate::policy::fill(&self.config.tool_fail_message, &[("name", name)]);
        };
        let error_json = serde_json::to_string(error).unwrap_or_default();
        crate::policy::fill(
            &self.config.tool_error_message,
            &[
                ("name", name),
                ("error", error),
                ("error_json", &error_json),
            ],
        )
    }

    fn push_tool(&mut self, content: String, failed: bool) {
        self.messages.push(Message {
            role: Role::Tool,
            content,
            tool_calls: Vec::new(),
            failed,
        });
    }
}

fn empty() -> Value {
    Value::Object(Default::default())
}

fn policy_fill(template: &str, n: u32) -> String {
    crate::policy::fill(template, &[("n", &n.to_string())])
}

fn decode(args: &Arguments, malformed: MalformedArgs) -> Result<Value, String> {
    match args {
        Arguments::Parsed(v) => Ok(v.clone()),
        Arguments::Raw(raw) if raw.trim().is_empty() => Ok(empty()),
        Arguments::Raw(raw) => match serde_json::from_str::<Value>(raw) {
            Ok(v) => Ok(v),
            Err(_) if malformed == MalformedArgs::EmptyObject => Ok(empty()),
            Err(e) => Err(format!("invalid JSON in tool arguments: {e}")),
        },
    }
}

fn raw_text(args: &Arguments) -> String {
    match args {
        Arguments::Parsed(v) => compact(v),
        Arguments::Raw(s) => s.clone(),
    }
}

fn summary(call: &ToolCall) -> CallSummary {
    CallSummary {
        id: call.id.clone(),
        name: call.name.clone(),
        args: raw_text(&call.arguments),
    }
}
