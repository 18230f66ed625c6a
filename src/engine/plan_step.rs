//! The plan/step loop (profile `plan-step`): clude_code's step executor and its infinite-loop
//! analysis (runtimes.md plan-step). A plan's steps run in order; each step gets `max_step_calls` model
//! calls, and before every call the step prompt is appended again. A reply is one action read
//! from its *text*: a control envelope (`{"control":"step_done"}` / `{"control":"replan"}`), a
//! legacy marker (`STEP_DONE` / `REPLAN`), a tool call (`{"tool": …, "args": {…}}`, whose result
//! goes back as a user message), or nothing valid (the reply and a re-prompt are kept, and the
//! step spins on). A step whose budget runs out fails; a failed step triggers a replan (a model
//! call with purpose `replan` answering `{"steps": […]}`) until `max_replans` are used up.
//!
//! The analysis' fixes in code are options of [`PlanStepConfig`], off by default: completion
//! inference (fixes 2 and 3), parse priority (fix 4: the strict envelope first, a control
//! object never a tool call) and forced completion at the cap (fix 5: the step's last call).
//! A wider envelope reading from another upstream analysis is the option `extract_first_json`.
//! Each leaves an `intervention` event (policy `plan-step`) where it changes the course of the
//! run.
//!
//! Pure like the agent loop: the same [`Model`] and [`ToolRunner`] traits, the same virtual clock
//! (model latency plus tool latency) and the same event stream, plus `step_start`, `step_end`
//! and `replan`. The parsers are plain functions over the reply text, unit-tested below.

use super::{RunInput, RunResult, ScriptGap};
use crate::llm::{
    Args, History, Message, Model, ModelError, ModelRequest, Purpose, Role, ToolSpec,
};
use crate::policy::{Config, FailureMessages, PlanStepConfig, Template, fill};
use crate::scenario::OutcomeKind;
use crate::tool::{ToolRunner, ToolStatus};
use crate::trace::{Event, StepStatus, TimedEvent};
use serde_json::{Map, Value};

/// Policy id of the plan/step loop's own interventions and messages.
const SOURCE: &str = "plan-step";

/// A control signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Control {
    /// The step's goal is reached.
    StepDone,
    /// The step cannot succeed as planned.
    Replan,
}

/// A control envelope: `{"control": "step_done" | "replan", "reason"?: string | null}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Envelope {
    pub control: Control,
    pub reason: Option<String>,
}

/// What one reply asks for, in the order the loop checks.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Reading {
    /// A control envelope; `lenient` when only the `extract_first_json` reading found it.
    Envelope { envelope: Envelope, lenient: bool },
    /// A legacy marker in the text.
    Legacy(Control),
    /// A tool call.
    Tool {
        name: String,
        args: Map<String, Value>,
    },
    /// None of them.
    Invalid,
}

/// Read one (stutter-guarded) reply: `parse_priority` is the seed's fix 4 (a control object is
/// never a tool call), `first_json` the wider envelope reading of [`lenient_envelope`].
pub(crate) fn read(text: &str, parse_priority: bool, first_json: bool) -> Reading {
    if let Some(envelope) = strict_envelope(text) {
        return Reading::Envelope {
            envelope,
            lenient: false,
        };
    }
    if first_json {
        if let Some(envelope) = lenient_envelope(text) {
            return Reading::Envelope {
                envelope,
                lenient: true,
            };
        }
    }
    if let Some(control) = legacy(text) {
        return Reading::Legacy(control);
    }
    match tool_call(text, parse_priority) {
        Some((name, args)) => Reading::Tool { name, args },
        None => Reading::Invalid,
    }
}

/// The envelope upstream accepts: the whole stripped reply is one JSON object with a valid
/// `control` (other keys are ignored, as the upstream model ignores them).
pub(crate) fn strict_envelope(text: &str) -> Option<Envelope> {
    let s = text.trim();
    if !(s.starts_with('{') && s.ends_with('}')) {
        return None;
    }
    match serde_json::from_str::<Value>(s) {
        Ok(Value::Object(obj)) => envelope_of(&obj),
        _ => None,
    }
}

/// The `extract_first_json` reading (named for the upstream analysis'
/// `extract_first_json_and_ignore_rest`, not the seed's fixes): the first valid envelope among the tool-call candidates (whole
/// reply, first fenced block, first `{` to last `}`) and then the JSON objects that start at each
/// `{` of the reply in turn, each read up to its own closing brace whatever follows. So an
/// envelope inside prose, in a fence, or repeated (`{…}\n\n{…}`) is found; an envelope with
/// unquoted keys (`{control: "step_done"}`) is still not JSON and is not.
pub(crate) fn lenient_envelope(text: &str) -> Option<Envelope> {
    let whole =
        candidates(text)
            .into_iter()
            .filter_map(|c| match serde_json::from_str::<Value>(c) {
                Ok(Value::Object(obj)) => Some(obj),
                _ => None,
            });
    let prefixes = text.match_indices('{').filter_map(|(i, _)| {
        let mut stream = serde_json::Deserializer::from_str(&text[i..]).into_iter::<Value>();
        match stream.next() {
            Some(Ok(Value::Object(obj))) => Some(obj),
            _ => None,
        }
    });
    whole.chain(prefixes).find_map(|obj| envelope_of(&obj))
}

fn envelope_of(obj: &Map<String, Value>) -> Option<Envelope> {
    let control = match obj.get("control")?.as_str()? {
        "step_done" => Control::StepDone,
        "replan" => Control::Replan,
        _ => return None,
    };
    // `reason: str | None` upstream: a number or a list is a validation error.
    let reason = match obj.get("reason") {
        None | Some(Value::Null) => None,
        Some(Value::String(r)) => Some(r.clone()),
        Some(_) => return None,
    };
    Some(Envelope { control, reason })
}

/// Legacy markers: `STEP_DONE` anywhere (case-sensitive), or a reply starting with it in any
/// case; then the same for `REPLAN`. Any prose that mentions "REPLAN" therefore asks for one.
pub(crate) fn legacy(text: &str) -> Option<Control> {
    let s = text.trim();
    let upper = s.to_uppercase();
    if s.contains("STEP_DONE") || upper.starts_with("STEP_DONE") {
        Some(Control::StepDone)
    } else if s.contains("REPLAN") || upper.starts_with("REPLAN") {
        Some(Control::Replan)
    } else {
        None
    }
}

/// Where a JSON object may sit in a reply, in upstream's order: the whole stripped reply if it
/// starts with `{` and ends with `}`; the body of the first fenced block (tagged `json`, `JSON`
/// or untagged) if brace-delimited; the span from the first `{` to the last `}`.
pub(crate) fn candidates(text: &str) -> Vec<&str> {
    let mut out = Vec::with_capacity(3);
    let s = text.trim();
    if s.starts_with('{') && s.ends_with('}') {
        out.push(s);
    }
    if let Some(body) = fenced_body(text) {
        if body.starts_with('{') && body.ends_with('}') {
            out.push(body);
        }
    }
    if let (Some(a), Some(b)) = (text.find('{'), text.rfind('}')) {
        if a < b {
            out.push(&text[a..=b]);
        }
    }
    out
}

fn fenced_body(text: &str) -> Option<&str> {
    let open = text.find("```")? + 3;
    let rest = &text[open..];
    let rest = rest
        .strip_prefix("json")
        .or_else(|| rest.strip_prefix("JSON"))
        .unwrap_or(rest);
    let close = rest.find("```")?;
    Some(rest[..close].trim())
}

/// The first candidate that parses to a JSON object (later candidates are not tried).
fn first_object(text: &str) -> Option<Map<String, Value>> {
    candidates(text)
        .into_iter()
        .find_map(|c| match serde_json::from_str::<Value>(c) {
            Ok(Value::Object(obj)) => Some(obj),
            _ => None,
        })
}

/// A tool call: the first candidate object, with a string `tool` and an object `args`. Under
/// parse priority an object whose `control` is a control signal is never a tool call.
pub(crate) fn tool_call(text: &str, parse_priority: bool) -> Option<(String, Map<String, Value>)> {
    let obj = first_object(text)?;
    if parse_priority
        && matches!(
            obj.get("control").and_then(Value::as_str),
            Some("step_done" | "replan")
        )
    {
        return None;
    }
    let name = obj.get("tool")?.as_str()?.to_owned();
    let args = obj.get("args")?.as_object()?.clone();
    Some((name, args))
}

/// A replan answer: the first candidate object, with `steps` a non-empty list of non-empty
/// strings.
pub(crate) fn replan_steps(text: &str) -> Option<Vec<String>> {
    let obj = first_object(text)?;
    let steps = obj.get("steps")?.as_array()?;
    let titles: Option<Vec<String>> = steps
        .iter()
        .map(|s| {
            s.as_str()
                .filter(|t| !t.trim().is_empty())
                .map(str::to_owned)
        })
        .collect();
    titles.filter(|t| !t.is_empty())
}

/// The stutter guard: more than `limit` `[` or more than `limit` `{`.
pub(crate) fn stutters(text: &str, limit: usize) -> bool {
    text.matches('[').count() > limit || text.matches('{').count() > limit
}

/// Completion inference's reading of prose: one of `words` appears, ignoring case.
pub(crate) fn claims_completion(text: &str, words: &[String]) -> bool {
    let lower = text.to_lowercase();
    words
        .iter()
        .any(|w| !w.is_empty() && lower.contains(&w.to_lowercase()))
}

/// One step of the plan.
struct Step {
    title: String,
    done: bool,
}

/// How a step ended.
struct StepEnd {
    status: StepStatus,
    reason: &'static str,
    detail: Option<String>,
}

impl StepEnd {
    fn new(status: StepStatus, reason: &'static str) -> Self {
        Self {
            status,
            reason,
            detail: None,
        }
    }
}

/// Whether the run goes on after a point where it may end.
enum Flow<T> {
    Go(T),
    /// The run ended (stop signal, iteration cap); its outcome is recorded.
    Ended,
}

struct PlanLoop<'a> {
    config: &'a Config,
    ps: &'a PlanStepConfig,
    events: Vec<TimedEvent>,
    /// The tool names of the last request's event, shared by the next that offers the same.
    offered_names: super::OfferedNames,
    /// The profile's failed-call messages, read the first time a call fails.
    failure_messages: std::cell::OnceCell<FailureMessages>,
    /// `step_prompt` (`{n}`, `{total}`, then `{step}`), read once.
    step_prompt: Template,
    /// `tool_result_message` (`{name}`, `{result}`), read once.
    tool_result: Template,
    messages: History,
    /// What the run used of the per-run byte limits.
    budget: crate::limits::Budget,
    clock: u64,
    /// Model calls so far: every call, turn or replan, is one iteration.
    iterations: u32,
    tool_calls: u64,
    last_reply: Option<String>,
}

/// Run the plan/step loop to its outcome.
pub(super) fn run(
    input: RunInput<'_>,
    model: &mut dyn Model,
    tools: &mut dyn ToolRunner,
) -> RunResult {
    let mut lp = PlanLoop {
        config: input.config,
        ps: &input.config.plan_step,
        events: Vec::with_capacity(super::EVENTS_AT_START),
        offered_names: super::OfferedNames::default(),
        failure_messages: std::cell::OnceCell::new(),
        step_prompt: Template::new(&input.config.plan_step.step_prompt, &["n", "total", "step"]),
        tool_result: Template::new(
            &input.config.plan_step.tool_result_message,
            &["name", "result"],
        ),
        messages: History::new(),
        budget: crate::limits::Budget::default(),
        clock: 0,
        iterations: 0,
        tool_calls: 0,
        last_reply: None,
    };
    lp.emit(Event::RunStart {
        profile: input.profile.to_owned(),
        model: input.model.to_owned(),
        max_iterations: input.config.max_iterations,
        tools: tools.specs().iter().map(|t| t.name.clone()).collect(),
    });
    if !input.system.is_empty() {
        lp.remember(Message::new(Role::System, input.system));
    }
    lp.remember(Message::new(Role::User, input.user));
    match lp.drive(&input, model, tools) {
        Ok(()) => Ok(lp.events),
        Err(gap) => Err((lp.events, gap)),
    }
}

impl PlanLoop<'_> {
    fn emit(&mut self, event: Event) {
        // Past a byte limit nothing more is kept; the next check ends the run.
        if self.budget.event(event.text_bytes()) {
            self.events.push(TimedEvent {
                t_ms: self.clock,
                event,
            });
        }
    }

    fn finish(&mut self, outcome: OutcomeKind, text: Option<String>, detail: Option<String>) {
        self.emit(Event::Outcome {
            outcome,
            iterations: self.iterations,
            text,
            detail,
        });
    }

    fn intervene(&mut self, stage: u8, action: &str) {
        debug_assert!(crate::vocabulary::INTERVENTION_ACTIONS.contains(&action));
        self.emit(Event::Intervention {
            policy: SOURCE.to_owned(),
            stage,
            action: action.to_owned(),
            tool: None,
        });
    }

    fn push(&mut self, role: Role, content: String) {
        if self.remember(Message::new(role, content)) {
            self.trim();
        }
    }

    /// Add a message within the per-run byte limit; whether it was kept.
    fn remember(&mut self, message: Message) -> bool {
        let kept = self.budget.message(message.text_bytes());
        if kept {
            self.messages.push(message);
        }
        kept
    }

    /// Keep at most `history_limit` messages: the oldest go first, a leading system prompt
    /// stays.
    fn trim(&mut self) {
        let keep = usize::from(
            self.messages
                .first()
                .is_some_and(|m| m.role == Role::System),
        );
        let limit = self.ps.history_limit.max(keep);
        if self.messages.len() > limit {
            let excess = self.messages.len() - limit;
            let dropped = self.messages.drain(keep..keep + excess);
            self.budget.forget(dropped.map(|m| m.text_bytes()).sum());
        }
    }

    fn drive(
        &mut self,
        input: &RunInput<'_>,
        model: &mut dyn Model,
        tools: &mut dyn ToolRunner,
    ) -> Result<(), ScriptGap> {
        let mut plan: Vec<Step> = input
            .plan
            .iter()
            .map(|t| Step {
                title: t.clone(),
                done: false,
            })
            .collect();
        let mut replans = 0u32;
        let mut cursor = 0usize;
        while cursor < plan.len() {
            let (n, total) = (count(cursor + 1), count(plan.len()));
            let title = plan[cursor].title.clone();
            self.emit(Event::StepStart {
                step: n,
                total,
                title: title.clone(),
            });
            let first_call = self.iterations;
            let Flow::Go(end) = self.run_step(n, total, &title, input, model, tools)? else {
                return Ok(());
            };
            self.emit(Event::StepEnd {
                step: n,
                status: end.status,
                reason: end.reason.to_owned(),
                calls: self.iterations - first_call,
                detail: end.detail,
            });
            if end.status == StepStatus::Done {
                plan[cursor].done = true;
                cursor += 1;
                continue;
            }
            if replans >= self.ps.max_replans {
                self.finish(
                    OutcomeKind::Failure,
                    None,
                    Some("max_replans_reached".to_owned()),
                );
                return Ok(());
            }
            let listing = plan
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    let status = if s.done {
                        "done"
                    } else if i == cursor {
                        "failed"
                    } else {
                        "pending"
                    };
                    format!("{}. [{status}] {}", i + 1, s.title)
                })
                .collect::<Vec<_>>()
                .join("\n");
            let prompt = fill(
                &self.ps.replan_prompt,
                &[("reason", end.reason), ("plan", &listing), ("step", &title)],
            );
            let Flow::Go(()) = self.begin_iteration(input)? else {
                return Ok(());
            };
            self.push(Role::User, prompt);
            let Flow::Go(reply) = self.call_model(Purpose::Replan, &[], model)? else {
                return Ok(());
            };
            self.push(Role::Assistant, reply.clone());
            let Some(steps) = replan_steps(&reply) else {
                self.finish(
                    OutcomeKind::Failure,
                    None,
                    Some("replan_parse_failed".to_owned()),
                );
                return Ok(());
            };
            replans += 1;
            // Done steps stay (they are the plan's head: steps run in order).
            plan.retain(|s| s.done);
            cursor = plan.len();
            plan.extend(steps.into_iter().map(|title| Step { title, done: false }));
            self.emit(Event::Replan {
                n: replans,
                kept: count(cursor),
                steps: plan.iter().map(|s| s.title.clone()).collect(),
            });
        }
        let text = self.last_reply.take();
        self.finish(OutcomeKind::Response, text, None);
        Ok(())
    }

    /// The start of a model call: a stop signal or the iteration cap end the run here;
    /// otherwise the iteration is counted and injected messages are added.
    fn begin_iteration(&mut self, input: &RunInput<'_>) -> Result<Flow<()>, ScriptGap> {
        let n = self.iterations + 1;
        if input.signals.iter().any(|s| s.at_iteration == n && s.stop) {
            self.emit(Event::Signal {
                signal: "stop".to_owned(),
                text: None,
            });
            self.finish(OutcomeKind::Stopped, None, None);
            return Ok(Flow::Ended);
        }
        // 0: no cap of harness's own; the step budgets and the replan limit end the run.
        if self.config.max_iterations > 0 && n > self.config.max_iterations {
            let detail = fill(
                &self.config.max_iterations_message,
                &[("n", &self.config.max_iterations.to_string())],
            );
            self.finish(OutcomeKind::MaxIterations, None, Some(detail));
            return Ok(Flow::Ended);
        }
        self.iterations = n;
        self.emit(Event::Iteration { n });
        for s in input.signals.iter().filter(|s| s.at_iteration == n) {
            if let Some(text) = &s.inject {
                self.push(Role::User, text.clone());
                self.emit(Event::Signal {
                    signal: "inject".to_owned(),
                    text: Some(text.clone()),
                });
            }
        }
        Ok(Flow::Go(()))
    }

    /// One model call; the reply text after the stutter guard.
    fn call_model(
        &mut self,
        purpose: Purpose,
        offered: &[ToolSpec],
        model: &mut dyn Model,
    ) -> Result<Flow<String>, ScriptGap> {
        self.budget.check(self.events.len(), self.clock)?;
        let call = self.iterations;
        let names = self.offered_names.of(offered);
        self.emit(Event::ModelRequest {
            purpose,
            call,
            messages: self.messages.len(),
            tools: names,
            force_text: false,
            stripped: false,
        });
        let response = model.respond(&ModelRequest {
            purpose,
            iteration: call,
            call,
            messages: &self.messages,
            tools: offered,
            force_text: false,
            lineage: Some(self.messages.lineage()),
        });
        let response = match response {
            Ok(r) => r,
            Err(ModelError::Script(e)) => return Err(e.into()),
            // The executor has no retry of its own: a provider error ends the run.
            Err(ModelError::Provider(f)) => {
                self.clock = self.clock.saturating_add(f.latency_ms);
                self.emit(Event::provider_error(&f, 1, None));
                self.finish(OutcomeKind::Error, None, Some(f.describe()));
                return Ok(Flow::Ended);
            }
        };
        self.clock = self.clock.saturating_add(response.latency_ms);
        self.emit(Event::model_response(&response));
        let mut text = response.text.unwrap_or_default();
        if stutters(&text, self.ps.stutter_limit) {
            self.intervene(2, "stutter_guard");
            text = fill(
                &self.ps.stutter_message,
                &[("limit", &self.ps.stutter_limit.to_string())],
            );
        }
        self.last_reply = Some(text.clone());
        Ok(Flow::Go(text))
    }

    fn run_step(
        &mut self,
        n: u32,
        total: u32,
        title: &str,
        input: &RunInput<'_>,
        model: &mut dyn Model,
        tools: &mut dyn ToolRunner,
    ) -> Result<Flow<StepEnd>, ScriptGap> {
        // `{step}` last, so a title that happens to hold `{n}` stays as written.
        let prompt = self.step_prompt.fill(&[
            itoa::Buffer::new().format(n),
            itoa::Buffer::new().format(total),
            title,
        ]);
        let mut last_call_succeeded = false;
        for _ in 0..self.ps.max_step_calls {
            let Flow::Go(()) = self.begin_iteration(input)? else {
                return Ok(Flow::Ended);
            };
            self.push(Role::User, prompt.clone());
            let Flow::Go(reply) = self.call_model(Purpose::Turn, tools.specs(), model)? else {
                return Ok(Flow::Ended);
            };
            // The seed's forced completion looks at this iteration only (its flags are set
            // afresh by every `execute_single_step_iteration`).
            last_call_succeeded = false;
            match read(&reply, self.ps.parse_priority, self.ps.extract_first_json) {
                Reading::Envelope { envelope, lenient } => {
                    if lenient {
                        self.intervene(1, "lenient_envelope");
                    }
                    self.push(Role::Assistant, reply);
                    let end = match envelope.control {
                        Control::StepDone => StepEnd::new(StepStatus::Done, "step_done"),
                        Control::Replan => StepEnd {
                            detail: envelope.reason,
                            ..StepEnd::new(StepStatus::Failed, "replan")
                        },
                    };
                    return Ok(Flow::Go(end));
                }
                Reading::Legacy(control) => {
                    self.push(Role::Assistant, reply);
                    return Ok(Flow::Go(match control {
                        Control::StepDone => StepEnd::new(StepStatus::Done, "legacy_step_done"),
                        Control::Replan => StepEnd::new(StepStatus::Failed, "legacy_replan"),
                    }));
                }
                Reading::Tool { name, args } => {
                    if self.run_tool(&name, args, tools)? {
                        last_call_succeeded = true;
                        if self.ps.completion_inference {
                            self.intervene(2, "infer_done");
                            return Ok(Flow::Go(StepEnd::new(StepStatus::Done, "inferred_tool")));
                        }
                    }
                }
                Reading::Invalid => {
                    self.push(Role::Assistant, reply.clone());
                    if self.ps.completion_inference
                        && claims_completion(&reply, &self.ps.completion_words)
                    {
                        self.intervene(2, "infer_done");
                        return Ok(Flow::Go(StepEnd::new(StepStatus::Done, "inferred_claim")));
                    }
                    let text = self.ps.invalid_output_message.clone();
                    self.push(Role::User, text.clone());
                    self.emit(Event::MessageInjected {
                        source: SOURCE.to_owned(),
                        role: Role::User,
                        text,
                    });
                }
            }
        }
        if self.ps.forced_completion_at_cap && last_call_succeeded {
            self.intervene(2, "force_done");
            return Ok(Flow::Go(StepEnd::new(StepStatus::Done, "forced_at_cap")));
        }
        Ok(Flow::Go(StepEnd::new(
            StepStatus::Failed,
            "budget_exhausted",
        )))
    }

    /// Run one parsed tool call; its JSON and its result join the history. Whether it succeeded.
    fn run_tool(
        &mut self,
        name: &str,
        args: Map<String, Value>,
        tools: &mut dyn ToolRunner,
    ) -> Result<bool, ScriptGap> {
        let id = format!("call_{}", self.tool_calls);
        self.tool_calls += 1;
        let args = Args::new(Value::Object(args));
        self.emit(Event::ToolCallStart {
            id: id.clone(),
            name: name.to_owned(),
            args: Args::clone(&args),
            args_unknown: false,
        });
        let (status, latency_ms) = if tools.specs().iter().any(|t| t.name == name) {
            let r = tools.run(name, &args)?;
            (r.status, r.latency_ms)
        } else {
            (ToolStatus::Error(format!("unknown tool: {name}")), 0)
        };
        self.clock = self.clock.saturating_add(latency_ms);
        let (ok, output, error) = match &status {
            ToolStatus::Ok(out) => (true, Some(out.clone()), None),
            ToolStatus::Error(e) => (false, None, Some(e.clone())),
            ToolStatus::Fail => (false, None, None),
        };
        self.emit(Event::ToolCallEnd {
            id,
            name: name.to_owned(),
            ok,
            output,
            error,
            latency_ms,
            rule: None,
        });
        // The history holds the call re-serialised, in a fixed key order, as upstream stores it:
        // `{"tool":…,"args":…}` compact.
        let mut call = String::with_capacity(name.len() + 32);
        call.push_str("{\"tool\":");
        crate::json::push_quoted(&mut call, name);
        call.push_str(",\"args\":");
        call.push_str(args.text());
        call.push('}');
        self.push(Role::Assistant, call);
        let config = self.config;
        let m = self
            .failure_messages
            .get_or_init(|| FailureMessages::new(config));
        let result = match status {
            ToolStatus::Ok(out) => out,
            ToolStatus::Error(e) => m.error(name, &e),
            ToolStatus::Fail => m.failed(name),
        };
        let text = self.tool_result.fill(&[name, &result]);
        self.push(Role::User, text);
        Ok(ok)
    }
}

/// A plan position or size as an event field (plans are short; saturate rather than wrap).
fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn done() -> Option<Envelope> {
        Some(Envelope {
            control: Control::StepDone,
            reason: None,
        })
    }

    #[test]
    fn strict_envelope_takes_only_a_whole_single_object() {
        assert_eq!(strict_envelope(r#"{"control":"step_done"}"#), done());
        assert_eq!(
            strict_envelope("  \n{\"control\": \"step_done\"}\n"),
            done()
        );
        assert_eq!(
            strict_envelope(r#"{"control":"replan","reason":"no such file"}"#),
            Some(Envelope {
                control: Control::Replan,
                reason: Some("no such file".into())
            })
        );
        // Extra keys are ignored, a null reason is no reason.
        assert_eq!(
            strict_envelope(r#"{"control":"step_done","reason":null,"x":1}"#),
            done()
        );
        for bad in [
            r#"Done. {"control":"step_done"}"#,
            r#"{"control": "step_done"}

{"control": "step_done"}"#,
            r#"{control: "step_done"}"#,
            "```json\n{\"control\":\"step_done\"}\n```",
            r#"{"control":"finish"}"#,
            r#"{"control":"step_done","reason":3}"#,
            r#"{"tool":"ls","args":{}}"#,
            "step_done",
            "",
        ] {
            assert_eq!(strict_envelope(bad), None, "{bad}");
        }
    }

    #[test]
    fn lenient_envelope_finds_prose_wrapped_fenced_and_doubled_envelopes() {
        for ok in [
            r#"The listing is complete. {"control":"step_done"}"#,
            "```json\n{\"control\":\"step_done\"}\n```",
            "{\"control\": \"step_done\"}\n\n{\"control\": \"step_done\"}",
            r#"I used {braces} here; {"control":"step_done"} and then more text"#,
        ] {
            assert_eq!(lenient_envelope(ok), done(), "{ok}");
        }
        // The first envelope wins.
        assert_eq!(
            lenient_envelope(r#"{"control":"replan"} {"control":"step_done"}"#).map(|e| e.control),
            Some(Control::Replan)
        );
        // Still JSON only: unquoted keys and bare words are not envelopes.
        assert_eq!(lenient_envelope(r#"{control: "step_done"}"#), None);
        assert_eq!(lenient_envelope("step_done"), None);
        assert_eq!(lenient_envelope(r#"{"tool":"ls","args":{}}"#), None);
    }

    #[test]
    fn legacy_markers_are_substrings_or_prefixes() {
        assert_eq!(
            legacy("Listed the files. STEP_DONE"),
            Some(Control::StepDone)
        );
        assert_eq!(legacy("【STEP_DONE】"), Some(Control::StepDone));
        assert_eq!(legacy("step_done, moving on"), Some(Control::StepDone));
        assert_eq!(
            legacy("I will not REPLAN; the listing worked."),
            Some(Control::Replan)
        );
        assert_eq!(legacy("replan please"), Some(Control::Replan));
        // Lower case in the middle of prose is no marker.
        assert_eq!(legacy("the step is step_done now"), None);
        assert_eq!(legacy(r#"{"control": "step_done"}"#), None);
    }

    #[test]
    fn tool_call_candidates_in_upstream_order() {
        let ls = Some((
            "ls".to_owned(),
            json!({"path": "."}).as_object().cloned().unwrap(),
        ));
        assert_eq!(tool_call(r#"{"tool":"ls","args":{"path":"."}}"#, false), ls);
        assert_eq!(
            tool_call(
                "Here:\n```json\n{\"tool\":\"ls\",\"args\":{\"path\":\".\"}}\n```",
                false
            ),
            ls
        );
        assert_eq!(
            tool_call(r#"Calling {"tool":"ls","args":{"path":"."}} now"#, false),
            ls
        );
        // The whole reply parses to an object without `tool`: later candidates are not tried.
        assert_eq!(
            tool_call(
                "{\"note\": \"```{\\\"tool\\\":\\\"ls\\\",\\\"args\\\":{}}```\"}",
                false
            ),
            None
        );
        assert_eq!(
            candidates("x ```json\n{\"a\":1}\n``` y"),
            vec!["{\"a\":1}", "{\"a\":1}"]
        );
        // `tool` must be a string and `args` an object.
        assert_eq!(tool_call(r#"{"tool":"ls","args":"."}"#, false), None);
        assert_eq!(tool_call(r#"{"tool":1,"args":{}}"#, false), None);
        assert_eq!(tool_call(r#"{"tool":"ls"}"#, false), None);
        // Two objects: the first-to-last span is not JSON.
        assert_eq!(
            tool_call(r#"{"tool":"ls","args":{}} {"tool":"ls","args":{}}"#, false),
            None
        );
    }

    #[test]
    fn parse_priority_never_reads_a_control_object_as_a_tool_call() {
        let both = r#"{"tool":"ls","args":{},"control":"step_done"}"#;
        assert!(tool_call(both, false).is_some());
        assert_eq!(tool_call(both, true), None);
        // In `read` the envelope comes first anyway, with or without parse priority.
        assert!(matches!(
            read(both, false, false),
            Reading::Envelope { lenient: false, .. }
        ));
    }

    #[test]
    fn read_checks_in_order_and_only_extract_first_json_widens_envelopes() {
        let doubled = "{\"control\": \"step_done\"}\n\n{\"control\": \"step_done\"}";
        // The seed's parse priority keeps the strict envelope.
        assert_eq!(read(doubled, false, false), Reading::Invalid);
        assert_eq!(read(doubled, true, false), Reading::Invalid);
        assert!(matches!(
            read(doubled, false, true),
            Reading::Envelope { lenient: true, .. }
        ));
        // An envelope beats a legacy marker only under the wider reading.
        let mixed = r#"No need to REPLAN. {"control":"step_done"}"#;
        assert_eq!(read(mixed, true, false), Reading::Legacy(Control::Replan));
        assert!(matches!(
            read(mixed, false, true),
            Reading::Envelope { lenient: true, .. }
        ));
        assert_eq!(
            read(r#"{control: "step_done"}"#, true, true),
            Reading::Invalid
        );
        assert!(matches!(
            read(r#"{"tool":"ls","args":{}}"#, true, true),
            Reading::Tool { .. }
        ));
        assert_eq!(
            read("I have listed the directory.", true, true),
            Reading::Invalid
        );
        // A control object with a tool beside it, in prose: a tool call unless parse priority.
        let both = r#"Done: {"tool":"ls","args":{},"control":"step_done"}"#;
        assert!(matches!(read(both, false, false), Reading::Tool { .. }));
        assert_eq!(read(both, true, false), Reading::Invalid);
    }

    #[test]
    fn replan_answers_need_a_non_empty_list_of_titles() {
        assert_eq!(
            replan_steps(r#"{"steps": ["a", "b"]}"#),
            Some(vec!["a".to_owned(), "b".to_owned()])
        );
        assert_eq!(
            replan_steps("New plan:\n```json\n{\"steps\": [\"a\"]}\n```"),
            Some(vec!["a".to_owned()])
        );
        for bad in [
            r#"{"steps": []}"#,
            r#"{"steps": [1]}"#,
            r#"{"steps": [""]}"#,
            r#"{"plan": ["a"]}"#,
            "1. do a\n2. do b",
        ] {
            assert_eq!(replan_steps(bad), None, "{bad}");
        }
    }

    #[test]
    fn stutter_guard_counts_brackets_and_braces_separately() {
        assert!(!stutters(&"[".repeat(50), 50));
        assert!(stutters(&"[".repeat(51), 50));
        assert!(stutters(&"{".repeat(51), 50));
        assert!(!stutters(&"[{".repeat(50), 50));
    }

    #[test]
    fn completion_claims_match_words_ignoring_case() {
        let words = Config::plan_step().plan_step.completion_words;
        assert!(claims_completion("Done.", &words));
        assert!(claims_completion("I have FINISHED the listing", &words));
        assert!(claims_completion("任务已完成。", &words));
        // A known false positive of substring matching.
        assert!(claims_completion("Not done yet, continuing.", &words));
        assert!(!claims_completion("我明白了，让我继续。", &words));
        assert!(!claims_completion("I have listed the directory.", &words));
    }
}
