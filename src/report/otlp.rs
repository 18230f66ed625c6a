//! `--otlp FILE`: every case's trace as OpenTelemetry spans in OTLP JSON — one
//! `ExportTraceServiceRequest` a line, as the Collector's file exporter writes them — following
//! the GenAI semantic conventions, so a run opens in any OTLP viewer and `harness import` or
//! `sweep` read it back.
//!
//! Per case, one trace:
//! - an agent span `invoke_agent <case id>` (`gen_ai.operation.name` `invoke_agent`,
//!   `gen_ai.conversation.id` the case id, `harness.profile`, `harness.outcome`,
//!   `harness.success`: the expectations held and the run ended with an answer; status `ERROR`
//!   when the run ended in an error or at the cap);
//! - under it, an inference span `chat <model>` per model call (`gen_ai.input.messages`: the
//!   messages added since the previous call — user messages, tool results, injected messages;
//!   the whole conversation is the spans before it, so the file grows with the run, not its
//!   square —, `gen_ai.output.messages`, `gen_ai.response.finish_reasons`,
//!   `gen_ai.usage.input_tokens` / `output_tokens`; a provider error is status `ERROR` with
//!   `error.type` the fault), and an `execute_tool <name>` span per tool call run
//!   (`gen_ai.tool.call.id`, `.arguments`, `.result`; status `ERROR` when it failed; a call
//!   refused before it ran is such a span too, marked `harness.rejected`);
//! - every trace event as a span event `harness.<kind>` on the span it belongs to (the agent
//!   span for interventions, notices, rejections, …), with its position (`harness.seq`) and
//!   the event as JSON (`harness.event`), so the import gets the same trace back.
//!
//! Deterministic: virtual time from a fixed epoch ([`EPOCH_NS`], 2025-01-01T00:00Z), trace and
//! span ids hashed from the case id, the run's events and the event's position (two runs of a
//! case that differ are two traces), cases in result order.

use super::Collected;
use crate::import::otlp::{EPOCH_NS, EVENT_ATTR, SEQ_ATTR, SUCCESS_ATTR};
use crate::results::CaseResult;
use crate::scenario::OutcomeKind;
use crate::trace::Event;
use serde::Serialize;
use serde_json::{Value, json};
use std::hash::Hasher as _;

/// The file: one line per case that kept its trace, in result order.
pub fn render(collected: &Collected) -> String {
    let mut out = String::new();
    for f in &collected.files {
        let Ok(cases) = &f.outcome else { continue };
        for c in cases {
            if let Some(d) = &c.detail {
                out.push_str(&case_line(&c.id, success(c), d));
                out.push('\n');
            }
        }
    }
    out
}

/// The label a sweep gives the case's run: its expectations held and it ended with an answer.
fn success(c: &CaseResult) -> bool {
    c.expectation_failures.is_empty() && c.row.outcome == OutcomeKind::Response.as_str()
}

#[derive(Serialize, Clone)]
#[serde(rename_all = "camelCase")]
#[expect(
    clippy::enum_variant_names,
    reason = "the names are OTLP's (`stringValue`, …)"
)]
enum Any {
    StringValue(String),
    BoolValue(bool),
    IntValue(String),
    ArrayValue { values: Vec<Any> },
}

#[derive(Serialize, Clone)]
struct Kv {
    key: &'static str,
    value: Any,
}

fn s(key: &'static str, v: impl Into<String>) -> Kv {
    Kv {
        key,
        value: Any::StringValue(v.into()),
    }
}

fn int(key: &'static str, v: u64) -> Kv {
    Kv {
        key,
        value: Any::IntValue(v.to_string()),
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SpanEvent {
    time_unix_nano: String,
    name: String,
    attributes: Vec<Kv>,
}

#[derive(Serialize, Default)]
struct Status {
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Span {
    trace_id: String,
    span_id: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    parent_span_id: String,
    name: String,
    kind: u8,
    start_time_unix_nano: String,
    end_time_unix_nano: String,
    attributes: Vec<Kv>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    events: Vec<SpanEvent>,
    status: Status,
}

const INTERNAL: u8 = 1;
const CLIENT: u8 = 3;
const ERROR: u8 = 2;

fn nanos(t_ms: u64) -> String {
    EPOCH_NS
        .saturating_add(t_ms.saturating_mul(1_000_000))
        .to_string()
}

fn fnv(parts: &[&str]) -> u64 {
    let mut h = fnv::FnvHasher::default();
    for p in parts {
        h.write(p.as_bytes());
        h.write_u8(0);
    }
    h.finish().max(1)
}

/// Spans being built: the agent span is the first.
struct Builder<'a> {
    case: &'a str,
    /// The digest of the run's events.
    digest: &'a str,
    trace_id: String,
    spans: Vec<Span>,
    /// The open inference span (index into `spans`).
    inference: Option<usize>,
    /// Open tool spans by call id.
    tools: Vec<(String, usize)>,
    model: String,
    history: Vec<Value>,
}

impl Builder<'_> {
    fn span(
        &mut self,
        seq: usize,
        name: String,
        kind: u8,
        t_ms: u64,
        attributes: Vec<Kv>,
    ) -> usize {
        let id = format!("{:016x}", fnv(&[self.case, self.digest, &seq.to_string()]));
        let parent = self
            .spans
            .first()
            .map(|a| a.span_id.clone())
            .unwrap_or_default();
        self.spans.push(Span {
            trace_id: self.trace_id.clone(),
            span_id: id,
            parent_span_id: parent,
            name,
            kind,
            start_time_unix_nano: nanos(t_ms),
            end_time_unix_nano: nanos(t_ms),
            attributes,
            events: Vec::new(),
            status: Status::default(),
        });
        self.spans.len() - 1
    }

    /// An `execute_tool` span for call `id`, opened at `t_ms`.
    fn tool_span(
        &mut self,
        seq: usize,
        t_ms: u64,
        id: &str,
        name: &str,
        args: Option<&crate::llm::Args>,
    ) -> usize {
        let mut attrs = vec![
            s("gen_ai.operation.name", "execute_tool"),
            s("gen_ai.tool.name", name),
            s("gen_ai.tool.call.id", id),
        ];
        // Arguments the trace does not know are not written: an empty object would say the
        // tool ran with none.
        if let Some(args) = args {
            attrs.push(s("gen_ai.tool.call.arguments", args.text()));
        }
        self.span(seq, format!("execute_tool {name}"), INTERNAL, t_ms, attrs)
    }

    /// A tool result as the next call's input holds it.
    fn tool_response(&mut self, id: &str, result: &str) {
        self.history.push(json!({"role": "tool", "parts": [
            {"type": "tool_call_response", "id": id, "response": result}
        ]}));
    }

    fn inference_span(&mut self, seq: usize, t_ms: u64) -> usize {
        // Only what was added since the previous call: the file grows with the run, not with
        // its square.
        let messages = crate::json::compact(&Value::Array(std::mem::take(&mut self.history)));
        let attributes = vec![
            s("gen_ai.operation.name", "chat"),
            s("gen_ai.provider.name", "harness"),
            s("gen_ai.request.model", self.model.clone()),
            s("gen_ai.conversation.id", self.case),
            s("gen_ai.input.messages", messages),
        ];
        let name = format!("chat {}", self.model);
        let at = self.span(seq, name, CLIENT, t_ms, attributes);
        self.inference = Some(at);
        at
    }
}

fn text_message(role: &str, text: &str) -> Value {
    json!({"role": role, "parts": [{"type": "text", "content": text}]})
}

/// One case's trace as an `ExportTraceServiceRequest` (one line of JSON).
fn case_line(case: &str, success: bool, detail: &crate::results::Detail) -> String {
    let events = &detail.events;
    let opens_with_user = events
        .iter()
        .take_while(|e| {
            !matches!(
                e.event,
                Event::ModelRequest { .. } | Event::ModelResponse { .. }
            )
        })
        .any(|e| matches!(e.event, Event::UserTurn { .. }));
    // The events as JSON, and their digest: a run's ids name the case and what happened in it,
    // so two runs of a case that differ are two traces, and the same run is the same trace.
    let json: Vec<String> = events
        .iter()
        .map(|e| serde_json::to_string(e).unwrap_or_default())
        .collect();
    let digest = format!(
        "{:016x}",
        fnv(&json.iter().map(String::as_str).collect::<Vec<_>>())
    );
    let trace_id = format!("{:016x}{digest}", fnv(&["harness trace", case]));
    let mut b = Builder {
        case,
        digest: &digest,
        trace_id,
        spans: Vec::new(),
        inference: None,
        tools: Vec::new(),
        model: String::new(),
        // The first call's input opens with the conversation's system and user messages, so a
        // viewer shows what the model was asked.
        // (A trace that opens with its user turn has it already.)
        history: [("system", &detail.system), ("user", &detail.user)]
            .into_iter()
            .filter(|(role, text)| !(text.is_empty() || *role == "user" && opens_with_user))
            .map(|(role, text)| text_message(role, text))
            .collect(),
    };
    let (start, end) = (
        events.first().map_or(0, |e| e.t_ms),
        events.last().map_or(0, |e| e.t_ms),
    );
    let mut profile = String::new();
    if let Some((p, model)) = events.iter().rev().find_map(|e| {
        if let Event::RunStart { profile, model, .. } = &e.event {
            Some((profile, model))
        } else {
            None
        }
    }) {
        profile.clone_from(p);
        b.model.clone_from(model);
    }
    let outcome = events.iter().rev().find_map(|e| {
        if let Event::Outcome {
            outcome, detail, ..
        } = &e.event
        {
            Some((*outcome, detail.clone()))
        } else {
            None
        }
    });
    let root = b.span(
        usize::MAX,
        format!("invoke_agent {case}"),
        INTERNAL,
        start,
        vec![
            s("gen_ai.operation.name", "invoke_agent"),
            s("gen_ai.provider.name", "harness"),
            s("gen_ai.agent.name", profile.clone()),
            s("gen_ai.conversation.id", case),
            s("gen_ai.request.model", b.model.clone()),
            s("harness.profile", profile),
        ],
    );
    b.spans[root].parent_span_id.clear();
    b.spans[root].end_time_unix_nano = nanos(end);
    if let Some((o, detail)) = &outcome {
        b.spans[root]
            .attributes
            .push(s("harness.outcome", o.as_str()));
        if matches!(o, OutcomeKind::Error | OutcomeKind::MaxIterations) {
            b.spans[root].status = Status {
                code: Some(ERROR),
                message: Some(detail.clone().unwrap_or_else(|| o.as_str().to_owned())),
            };
        }
    }
    b.spans[root].attributes.push(Kv {
        key: SUCCESS_ATTR,
        value: Any::BoolValue(success),
    });
    for (seq, e) in events.iter().enumerate() {
        let t = e.t_ms;
        // The span the event belongs to.
        let on = match &e.event {
            Event::ModelRequest { .. } => b.inference_span(seq, t),
            Event::ModelResponse {
                finish,
                text,
                calls,
                input_tokens,
                output_tokens,
                latency_ms,
                tokens_unknown,
                calls_unknown,
                ..
            } => {
                let at = match b.inference.take() {
                    Some(at) => at,
                    // A trace without requests (an imported one): the call took its latency.
                    None => {
                        let at = b.inference_span(seq, t.saturating_sub(*latency_ms));
                        b.inference = None;
                        at
                    }
                };
                let mut parts = Vec::new();
                if let Some(text) = text {
                    parts.push(json!({"type": "text", "content": text}));
                }
                for c in calls {
                    let mut part = json!({"type": "tool_call", "id": c.id, "name": c.name});
                    // Arguments the trace does not know are not written, as a span with
                    // capture off writes none.
                    if !c.args_unknown {
                        part["arguments"] =
                            crate::import::parse_args(Some(&Value::String(c.args.clone())));
                    }
                    parts.push(part);
                }
                let output = json!({
                    "role": "assistant",
                    "parts": parts,
                    "finish_reason": finish.as_str(),
                });
                let span = &mut b.spans[at];
                span.end_time_unix_nano = nanos(t);
                span.attributes.push(Kv {
                    key: "gen_ai.response.finish_reasons",
                    value: Any::ArrayValue {
                        values: vec![Any::StringValue(finish.as_str().to_owned())],
                    },
                });
                // What the trace does not know is not written, as an instrumentation that
                // did not record it writes nothing: counts, and an answer whose calls are
                // unknown (its finish reason alone says it asked for tools).
                if !tokens_unknown {
                    span.attributes.extend([
                        int("gen_ai.usage.input_tokens", *input_tokens),
                        int("gen_ai.usage.output_tokens", *output_tokens),
                    ]);
                }
                if !calls_unknown {
                    span.attributes.push(s(
                        "gen_ai.output.messages",
                        crate::json::compact(&Value::Array(vec![output])),
                    ));
                }
                at
            }
            Event::ProviderError { fault, message, .. } => {
                let at = match b.inference.take() {
                    Some(at) => at,
                    None => {
                        let at = b.inference_span(seq, t);
                        b.inference = None;
                        at
                    }
                };
                let span = &mut b.spans[at];
                span.end_time_unix_nano = nanos(t);
                span.attributes.push(s("error.type", fault.as_str()));
                span.status = Status {
                    code: Some(ERROR),
                    message: Some(message.clone()),
                };
                at
            }
            Event::ToolCallStart {
                id,
                name,
                args,
                args_unknown,
            } => {
                let at = b.tool_span(seq, t, id, name, (!args_unknown).then_some(args));
                b.tools.push((id.clone(), at));
                at
            }
            Event::ToolCallEnd {
                id,
                ok,
                output,
                error,
                ..
            } => {
                let result = output.as_deref().or(error.as_deref()).unwrap_or_default();
                b.tool_response(id, result);
                match b.tools.iter().position(|(i, _)| i == id) {
                    Some(p) => {
                        let (_, at) = b.tools.remove(p);
                        let span = &mut b.spans[at];
                        span.end_time_unix_nano = nanos(t);
                        span.attributes.push(s("gen_ai.tool.call.result", result));
                        if !ok {
                            span.status = Status {
                                code: Some(ERROR),
                                message: Some(result.to_owned()),
                            };
                        }
                        at
                    }
                    None => root,
                }
            }
            // Refused before it ran: a tool span that failed at once, as a viewer should see
            // it (the model is told it failed).
            Event::ToolCallRejected {
                id,
                name,
                args,
                error,
            } => {
                b.tool_response(id, error);
                let at = b.tool_span(seq, t, id, name, Some(args));
                let span = &mut b.spans[at];
                span.attributes.extend([
                    s("gen_ai.tool.call.result", error.clone()),
                    Kv {
                        key: "harness.rejected",
                        value: Any::BoolValue(true),
                    },
                ]);
                span.status = Status {
                    code: Some(ERROR),
                    message: Some(error.clone()),
                };
                at
            }
            Event::UserTurn { text, .. } => {
                b.history.push(text_message("user", text));
                root
            }
            Event::MessageInjected { role, text, .. } => {
                b.history.push(text_message(role.as_str(), text));
                root
            }
            // What belongs to the run as a whole: events of the agent span.
            Event::RunStart { .. }
            | Event::Iteration { .. }
            | Event::Signal { .. }
            | Event::TruncationDiscarded { .. }
            | Event::Intervention { .. }
            | Event::ForceText { .. }
            | Event::Outcome { .. }
            | Event::Notice { .. }
            | Event::Diverged { .. }
            | Event::Compaction { .. }
            | Event::ToolCallSkipped { .. }
            | Event::ApprovalRequested { .. }
            | Event::ApprovalDecision { .. }
            | Event::TurnEnd { .. }
            | Event::StepStart { .. }
            | Event::StepEnd { .. }
            | Event::Replan { .. } => root,
        };
        let mut attributes = vec![int(SEQ_ATTR, seq as u64), s(EVENT_ATTR, json[seq].clone())];
        if let Event::Intervention {
            policy,
            stage,
            action,
            tool,
        } = &e.event
        {
            attributes.extend([
                s("harness.policy", policy.clone()),
                int("harness.stage", u64::from(*stage)),
                s("harness.action", action.clone()),
            ]);
            if let Some(tool) = tool {
                attributes.push(s("harness.tool", tool.clone()));
            }
        }
        b.spans[on].events.push(SpanEvent {
            time_unix_nano: nanos(t),
            name: format!("harness.{}", e.event.kind()),
            attributes,
        });
    }
    let request = Request {
        resource_spans: [ResourceSpans {
            resource: Resource {
                attributes: vec![s("service.name", "harness")],
            },
            scope_spans: [ScopeSpans {
                scope: Scope { name: "harness" },
                spans: b.spans,
            }],
        }],
    };
    serde_json::to_string(&request).unwrap_or_default()
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Request {
    resource_spans: [ResourceSpans; 1],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ResourceSpans {
    resource: Resource,
    scope_spans: [ScopeSpans; 1],
}

#[derive(Serialize)]
struct Resource {
    attributes: Vec<Kv>,
}

#[derive(Serialize)]
struct ScopeSpans {
    scope: Scope,
    spans: Vec<Span>,
}

#[derive(Serialize)]
struct Scope {
    name: &'static str,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::TimedEvent;

    /// A case's detail: its trace, and the conversation's opening messages.
    fn detail(events: Vec<TimedEvent>) -> crate::results::Detail {
        crate::results::Detail {
            tags: Vec::new(),
            system: "You are a coding agent.".into(),
            user: "List the files.".into(),
            events,
        }
    }
    use crate::import::otlp;

    use crate::llm::{FaultKind, Finish};
    use crate::trace::CallSummary;

    fn at(t_ms: u64, event: Event) -> TimedEvent {
        TimedEvent { t_ms, event }
    }

    fn trace() -> Vec<TimedEvent> {
        let request = |call| Event::ModelRequest {
            purpose: Default::default(),
            call,
            messages: 2,
            tools: vec!["exec".to_owned()].into(),
            force_text: false,
            stripped: false,
        };
        let exec = |id: &str| Event::ModelResponse {
            finish: Finish::ToolUse,
            text: None,
            calls: vec![CallSummary {
                id: id.into(),
                name: "exec".into(),
                args: "{}".into(),
                args_unknown: false,
            }],
            input_tokens: 40,
            output_tokens: 7,
            latency_ms: 300,
            anomaly: None,
            chunks: 0,
            tokens_unknown: false,
            calls_unknown: false,
        };
        vec![
            at(
                0,
                Event::RunStart {
                    profile: "ironclaw".into(),
                    model: "m".into(),
                    max_iterations: 5,
                    tools: vec!["exec".into()],
                },
            ),
            at(
                0,
                Event::UserTurn {
                    turn: 1,
                    text: "List the files.".into(),
                },
            ),
            at(0, Event::Iteration { n: 1 }),
            at(0, request(1)),
            at(300, exec("c1")),
            at(
                300,
                Event::ToolCallRejected {
                    id: "c1".into(),
                    name: "exec".into(),
                    args: serde_json::json!({}).into(),
                    error: "missing `command`".into(),
                },
            ),
            at(
                300,
                Event::Intervention {
                    policy: "duplicate".into(),
                    stage: 1,
                    action: "warn".into(),
                    tool: Some("exec".into()),
                },
            ),
            at(300, request(2)),
            at(
                350,
                Event::ProviderError {
                    fault: FaultKind::RateLimit,
                    message: "429".into(),
                    attempt: 1,
                    retry_in_ms: Some(1000),
                },
            ),
            at(1350, request(3)),
            at(1650, exec("c2")),
            at(
                1650,
                Event::ToolCallStart {
                    id: "c2".into(),
                    name: "exec".into(),
                    args: serde_json::json!({"command": "ls"}).into(),
                    args_unknown: false,
                },
            ),
            at(
                1700,
                Event::ToolCallEnd {
                    id: "c2".into(),
                    name: "exec".into(),
                    ok: false,
                    output: None,
                    error: Some("Error: denied".into()),
                    latency_ms: 50,
                    rule: None,
                },
            ),
            at(
                1700,
                Event::Outcome {
                    outcome: OutcomeKind::MaxIterations,
                    iterations: 2,
                    text: None,
                    detail: Some("cap".into()),
                },
            ),
        ]
    }

    #[test]
    fn a_trace_round_trips_through_the_import() {
        let events = trace();
        let line = case_line("reflex/x@ironclaw", true, &detail(events.clone()));
        assert!(!line.contains('\n'));
        let got = otlp::import(&line, "t.jsonl");
        assert!(got.errors.is_empty(), "{:?}", got.errors);
        assert_eq!(got.runs.len(), 1);
        assert_eq!(got.runs[0].events, events);
        assert_eq!(got.runs[0].success, Some(true));
        assert_eq!(got.runs[0].id, "t.jsonl#reflex/x@ironclaw");
        assert_eq!(
            case_line("reflex/x@ironclaw", true, &detail(events.clone())),
            line,
            "deterministic"
        );
    }

    #[test]
    fn what_a_trace_does_not_know_is_not_exported_as_known() {
        // An imported run with capture off: an answer that asked for tools it did not name,
        // with no counts, and a call whose arguments were not recorded.
        let asked = |calls_unknown| Event::ModelResponse {
            finish: Finish::ToolUse,
            text: None,
            calls: Vec::new(),
            input_tokens: 0,
            output_tokens: 0,
            latency_ms: 10,
            anomaly: None,
            chunks: 0,
            tokens_unknown: true,
            calls_unknown,
        };
        let events = vec![
            at(
                0,
                Event::UserTurn {
                    turn: 1,
                    text: "List the files.".into(),
                },
            ),
            at(10, asked(true)),
            at(30, asked(false)),
            at(
                35,
                Event::ToolCallStart {
                    id: "call_1".into(),
                    name: "exec".into(),
                    args: serde_json::json!({}).into(),
                    args_unknown: true,
                },
            ),
            at(
                40,
                Event::ToolCallEnd {
                    id: "call_1".into(),
                    name: "exec".into(),
                    ok: true,
                    output: Some("a.txt".into()),
                    error: None,
                    latency_ms: 5,
                    rule: None,
                },
            ),
        ];
        let line = case_line("x", false, &detail(events));
        assert!(!line.contains("gen_ai.usage"), "{line}");
        assert!(!line.contains("gen_ai.tool.call.arguments"), "{line}");
        let got = otlp::import_without_harness_events(&line, "t.jsonl");
        let events: Vec<&Event> = got.runs[0].events.iter().map(|e| &e.event).collect();
        let unknown: Vec<(bool, bool)> = events
            .iter()
            .filter_map(|e| match e {
                Event::ModelResponse {
                    tokens_unknown,
                    calls_unknown,
                    ..
                } => Some((*tokens_unknown, *calls_unknown)),
                _ => None,
            })
            .collect();
        assert_eq!(unknown, [(true, true), (true, false)], "{events:?}");
        assert!(
            events.iter().any(|e| matches!(
                e,
                Event::ToolCallStart {
                    args_unknown: true,
                    ..
                }
            )),
            "{events:?}"
        );
    }

    #[test]
    fn two_runs_of_a_case_are_two_traces_and_the_same_run_is_one() {
        let events = trace();
        let mut other = trace();
        other.truncate(5);
        let a = case_line("reflex/x@ironclaw", true, &detail(events.clone()));
        let b = case_line("reflex/x@ironclaw", false, &detail(other.clone()));
        let got = otlp::import(&format!("{a}\n{b}\n{a}\n"), "t.jsonl");
        assert!(got.errors.is_empty(), "{:?}", got.errors);
        let ids: Vec<&str> = got.runs.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(
            ids,
            ["t.jsonl#reflex/x@ironclaw", "t.jsonl#reflex/x@ironclaw~2"]
        );
        let lens: Vec<usize> = got.runs.iter().map(|r| r.events.len()).collect();
        let mut want = vec![events.len(), other.len()];
        if got.runs[0].success == Some(false) {
            want.reverse();
        }
        assert_eq!(lens, want, "each run whole, the repeated line read once");
    }

    #[test]
    fn the_spans_follow_the_genai_conventions() {
        let line = case_line("reflex/x@ironclaw", false, &detail(trace()));
        let doc: Value = serde_json::from_str(&line).unwrap();
        let spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
            .as_array()
            .unwrap();
        let names: Vec<&str> = spans.iter().map(|s| s["name"].as_str().unwrap()).collect();
        assert_eq!(
            names,
            [
                "invoke_agent reflex/x@ironclaw",
                "chat m",
                "execute_tool exec",
                "chat m",
                "chat m",
                "execute_tool exec"
            ]
        );
        let attr = |span: &Value, key: &str| {
            span["attributes"]
                .as_array()
                .unwrap()
                .iter()
                .find(|kv| kv["key"] == key)
                .map(|kv| kv["value"].clone())
        };
        assert_eq!(
            attr(&spans[0], SUCCESS_ATTR),
            Some(json!({"boolValue": false}))
        );
        assert_eq!(spans[0]["status"]["code"], 2, "ended at the cap");
        assert_eq!(
            attr(&spans[1], "gen_ai.usage.input_tokens"),
            Some(json!({"intValue": "40"}))
        );
        assert_eq!(spans[1]["startTimeUnixNano"], "1735689600000000000");
        assert_eq!(spans[1]["endTimeUnixNano"], "1735689600300000000");
        assert_eq!(
            spans[2]["status"]["message"], "missing `command`",
            "the rejected call"
        );
        assert_eq!(spans[3]["status"]["code"], 2, "the rate-limited call");
        assert_eq!(
            attr(&spans[3], "error.type"),
            Some(json!({"stringValue": "rate_limit"}))
        );
        assert_eq!(spans[5]["status"]["message"], "Error: denied");
        assert!(
            spans[1..]
                .iter()
                .all(|s| s["parentSpanId"] == spans[0]["spanId"])
        );
        // The first call's input is what the model was asked: the system and user messages.
        let first = attr(&spans[1], "gen_ai.input.messages").unwrap();
        let first: Value = serde_json::from_str(first["stringValue"].as_str().unwrap()).unwrap();
        assert_eq!(
            first,
            json!([
                {"role": "system", "parts": [{"type": "text", "content": "You are a coding agent."}]},
                {"role": "user", "parts": [{"type": "text", "content": "List the files."}]},
            ])
        );
        // The rejection's result is in the next call's input, as an agent would send it.
        let input = attr(&spans[3], "gen_ai.input.messages").unwrap();
        assert!(
            input["stringValue"]
                .as_str()
                .unwrap()
                .contains("missing `command`")
        );
        // The intervention is an event of the agent span, readable without the JSON.
        let events = spans[0]["events"].as_array().unwrap();
        let warn = events
            .iter()
            .find(|e| e["name"] == "harness.intervention")
            .unwrap();
        assert!(
            warn["attributes"]
                .to_string()
                .contains("\"harness.action\",\"value\":{\"stringValue\":\"warn\"}")
        );
        // Without the harness events, the spans read as any instrumentation's.
        let got = otlp::import_without_harness_events(&line, "t.jsonl");
        let view = crate::detector::View::from_events(&got.runs[0].events);
        assert_eq!(view.calls.len(), 2);
        assert!(view.calls.iter().all(|c| c.failed));
        assert_eq!(view.responses, [(0, 47), (1, 47)]);
    }
}
