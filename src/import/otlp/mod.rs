//! OpenTelemetry traces as OTLP JSON — what the Collector's `file` exporter writes (one
//! `ExportTraceServiceRequest` a line; `ExportLogsServiceRequest` lines too when logs share the
//! file), or a single such object — read as runs.
//!
//! **Runs.** One run per conversation: the traces whose spans carry the same
//! `gen_ai.conversation.id` (OpenInference: `session.id`) are one run; a trace without one is a
//! run of its own. Run ids are `<file>#<conversation or trace id>`, runs in the order they
//! started. Spans of one trace split across files make a run per file.
//!
//! **Model calls** are the inference spans, in start order: `gen_ai.operation.name` `chat`,
//! `text_completion` or `generate_content` (the OpenTelemetry GenAI conventions), an
//! OpenInference `LLM` span, or a Traceloop `llm.request.type` `chat`/`completion` span. An
//! inference span that has another inside it (a framework's span around the client's) gives way
//! to the inner one, and one that records nothing of a call beside one under the same parent
//! that does (LlamaIndex's `_prepare_chat_with_tools`) is no call. What each call sent and answered is read from, in this order:
//! - `gen_ai.input.messages` / `gen_ai.output.messages` (GenAI conventions 1.37 and later: role
//!   and typed parts `text`, `tool_call`, `tool_call_response`; a JSON string or a structured
//!   value) — OpenTelemetry's `openai-v2` 2.x with content capture on, Traceloop 0.55 and
//!   later, OpenInference with `OPENINFERENCE_ENABLE_GENAI_SEMCONV`;
//! - `llm.input_messages.N.message.*` / `llm.output_messages.N.message.*` (OpenInference);
//! - `gen_ai.prompt.N.*` / `gen_ai.completion.N.*` (Traceloop before 0.55, OpenLLMetry);
//! - events: per-message events `gen_ai.{system,user,assistant,tool}.message` and
//!   `gen_ai.choice` (GenAI conventions 1.28–1.36: log records in the same file, tied to the
//!   span by its id, or span events; content in the body, or in `gen_ai.event.content`; in
//!   Bedrock Converse blocks as strands-agents writes it), `gen_ai.content.prompt` /
//!   `gen_ai.content.completion` span events (conventions 1.26–1.27), and the current
//!   conventions' one event of a call, `gen_ai.client.inference.operation.details` (util-genai
//!   with content in events only, strands-agents with the latest conventions).
//!
//! The messages after the last assistant message of a call's input are what the agent added:
//! tool results answer the calls they name; user messages are the user's turns (at the start,
//! or after a text answer) or, in the middle of a tool loop, the agent's own nudges. Tool
//! results also come from `execute_tool` spans (`gen_ai.tool.call.id`, `gen_ai.tool.call.result`;
//! OpenInference `TOOL` spans) — a tool span for a call no model output showed (content not
//! captured) is that call. Tokens: `gen_ai.usage.input_tokens` / `output_tokens`
//! (`prompt_tokens` / `completion_tokens` before 1.27; OpenInference `llm.token_count.*`),
//! unknown where an instrumentation wrote its own estimate there (`Span::counts_doubt`).
//! Latency is the span's duration. A span with status `ERROR` is a provider error (its kind read
//! from `error.type` and the message). A tool result is read as failed by the rules `exec`
//! reads a served result by ([`crate::failure`]: `--failure` patterns, then the built-in
//! shapes unless `--no-builtin-failures`), so one run gives the same failures, with the same
//! rule named, whichever way it arrived; a tool span with status `ERROR` whose text no rule
//! reads as failed is failed by `span-status`. Time is measured from the run's first span.
//!
//! **harness's own exports** (`--otlp`) carry every trace event as a `harness.*` span event
//! (`harness.seq`, `harness.event`); such a run is read back event for event, with the success
//! label of its agent span (`harness.success`).

use super::{Run, TraceBuilder, content_text, located, parse_args, recorded_args, syntax};
use crate::diagnostic::Diagnostic;
use crate::failure::FailureRules;
use crate::llm::{FaultKind, Finish, Role};
use crate::scenario::OutcomeKind;
use crate::trace::{Event, TimedEvent};
use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};

/// The source name of runs read from OTLP.
pub const SOURCE: &str = "otlp";

/// The OTLP reader: a run's spans may be on any line of the file, so it reads the whole text.
pub const READER: super::Reader = super::Reader {
    name: SOURCE,
    root: super::Root::Any,
    detect: is_request,
    // Never called by `import_text`, which reads a whole-file format from the text first; a
    // parsed OTLP document converts the same way.
    convert: |_, rel, text| Ok(import(text, rel).runs),
    whole_file: Some(super::WholeFile {
        sniff,
        import: import_reading,
    }),
};

/// Nanoseconds since the Unix epoch of harness's virtual time 0 in exports: 2025-01-01T00:00Z.
pub const EPOCH_NS: u64 = 1_735_689_600_000_000_000;

/// Span event attribute holding a trace event as JSON (harness's exports).
pub const EVENT_ATTR: &str = "harness.event";
/// Span event attribute holding the event's position in its trace (harness's exports).
pub const SEQ_ATTR: &str = "harness.seq";
/// Agent span attribute holding the run's success label (harness's exports).
pub const SUCCESS_ATTR: &str = "harness.success";

/// Does the text look like OTLP JSON? Its first object's first key is `resourceSpans` or
/// `resourceLogs` (or their snake_case spellings).
pub fn sniff(text: &str) -> bool {
    let rest = text.trim_start();
    let Some(rest) = rest.strip_prefix('{') else {
        return false;
    };
    let rest = rest.trim_start();
    [
        "\"resourceSpans\"",
        "\"resourceLogs\"",
        "\"resource_spans\"",
        "\"resource_logs\"",
    ]
    .iter()
    .any(|k| rest.starts_with(k))
}

/// Is this parsed document an OTLP request?
pub fn is_request(doc: &Value) -> bool {
    doc.as_object().is_some_and(|o| {
        [
            "resourceSpans",
            "resourceLogs",
            "resource_spans",
            "resource_logs",
        ]
        .iter()
        .any(|k| o.contains_key(*k))
    })
}

pub mod files;
mod merge;
mod messages;
pub mod proto;
mod wire;

use messages::*;
use wire::*;

// ---------------------------------------------------------------------------------------------
// Spans to runs.

/// What a file gave: its runs, located errors, and why it has none (tool results read by the
/// default failure rules).
pub fn import(text: &str, rel: &str) -> super::FileImport {
    import_with(text, rel, true, &FailureRules::default())
}

/// [`import`] with tool results read as failed by `failures` (`--failure`,
/// `--no-builtin-failures`).
pub fn import_reading(text: &str, rel: &str, failures: &FailureRules) -> super::FileImport {
    import_with(text, rel, true, failures)
}

/// [`import`] reading harness's own exports as any instrumentation's spans (their `harness.*`
/// events ignored): what another tool reads of them.
pub fn import_without_harness_events(text: &str, rel: &str) -> super::FileImport {
    import_with(text, rel, false, &FailureRules::default())
}

fn import_with(
    text: &str,
    rel: &str,
    harness_events: bool,
    failures: &FailureRules,
) -> super::FileImport {
    let (spans, logs, mut errors) = parse(text);
    let mut out = super::FileImport::default();
    // The same span twice (a re-sent batch) counts once. Different spans that share an id (an
    // empty or all-zero id, as some exporters write) are each read, and the file says so.
    let mut seen = HashSet::new();
    let spans: Vec<Span> = spans
        .into_iter()
        .filter(|s| {
            seen.insert((
                s.trace.clone(),
                s.id.clone(),
                s.parent.clone(),
                s.name.clone(),
                s.start,
                s.end,
            ))
        })
        .collect();
    out.warnings = id_warnings(&spans);
    // harness's own exports are one span per call; any other file's duplicates are merged.
    let spans = if harness_events && spans.iter().any(Span::harnessed) {
        spans
    } else {
        let (spans, merged) = merge::merge_duplicates(spans);
        out.warnings.extend(merged);
        spans
    };
    let mut by_span: HashMap<String, Vec<&Log>> = HashMap::new();
    for l in &logs {
        by_span.entry(l.span.clone()).or_default().push(l);
    }
    // Traces, then conversations: a trace's conversation is the first one its spans name.
    let mut traces: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, s) in spans.iter().enumerate() {
        traces.entry(s.trace.as_str()).or_default().push(i);
    }
    // Group key → (the run's name, its spans). harness's own exports are a run per trace (two
    // runs of one case in a file stay two runs), named by their case.
    let mut runs: BTreeMap<String, (String, Vec<usize>)> = BTreeMap::new();
    for (trace, mut members) in traces {
        members.sort_by(|&a, &b| order(&spans[a], &spans[b]));
        let name = members
            .iter()
            .find_map(|&i| spans[i].conversation())
            .unwrap_or(trace)
            .to_owned();
        let harnessed = harness_events && members.iter().any(|&i| spans[i].harnessed());
        let key = if harnessed {
            format!("{name}\u{0}{trace}")
        } else {
            name.clone()
        };
        runs.entry(key)
            .or_insert_with(|| (name, Vec::new()))
            .1
            .extend(members);
    }
    let mut made: Vec<(u64, Run)> = Vec::new();
    let mut gaps = Gaps::default();
    let mut named: BTreeMap<String, usize> = BTreeMap::new();
    for (_, (name, mut members)) in runs {
        members.sort_by(|&a, &b| order(&spans[a], &spans[b]));
        let group: Vec<&Span> = members.iter().map(|&i| &spans[i]).collect();
        // The same case exported twice: `case`, `case~2`, … in trace id order.
        let n = named.entry(name.clone()).or_insert(0);
        *n += 1;
        let id = if *n == 1 {
            format!("{rel}#{name}")
        } else {
            format!("{rel}#{name}~{n}")
        };
        let first = group.first().map_or(0, |s| s.start);
        let run = if harness_events && group.iter().any(|s| s.harnessed()) {
            harness_run(&group, id)
        } else {
            genai_run(&group, &by_span, id, first, failures, &mut gaps)
        };
        match run {
            Ok(Some(run)) => {
                let (args, calls) = super::unknowns(&run.events);
                gaps.unknown_args += args;
                gaps.unknown_calls += calls;
                made.push((first, run));
            }
            Ok(None) => {}
            Err(e) => errors.push(e),
        }
    }
    made.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.id.cmp(&b.1.id)));
    out.warnings.extend(gaps.warnings());
    out.runs = made.into_iter().map(|(_, r)| r).collect();
    if out.runs.is_empty() && errors.is_empty() {
        if spans.is_empty() {
            out.note = Some("an OTLP file with no span".to_owned());
        } else {
            errors.push(unread(&spans));
        }
    }
    out.errors = errors;
    out
}

/// A name for a message: at most 80 characters.
fn short(name: &str) -> String {
    match name.char_indices().nth(80) {
        Some((at, _)) => format!("{}…", &name[..at]),
        None => name.to_owned(),
    }
}

/// A file whose spans hold no model call harness reads: a located error naming what the spans
/// are, so that an instrumentation harness does not know is said, never skipped.
fn unread(spans: &[Span]) -> Diagnostic {
    let mut names: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for s in spans {
        *names
            .entry((s.scope.as_str(), s.name.as_str()))
            .or_insert(0) += 1;
    }
    let mut common: Vec<((&str, &str), usize)> = names.into_iter().collect();
    common.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let named: Vec<String> = common
        .iter()
        .take(5)
        .map(|((scope, name), n)| {
            let scope = if scope.is_empty() {
                String::new()
            } else {
                format!(" from `{}`", short(scope))
            };
            format!("`{}`{scope} ({n})", short(name))
        })
        .collect();
    let first = spans.iter().map(|s| s.line).min().unwrap_or(1);
    located(
        first,
        1,
        format!(
            "{} span(s) and no model call among them: {}{}",
            spans.len(),
            named.join(", "),
            if common.len() > 5 { ", …" } else { "" }
        ),
        "harness reads OpenTelemetry GenAI spans (`gen_ai.operation.name` chat), OpenInference (`openinference.span.kind` LLM), Traceloop and the Vercel AI SDK's `ai.*` spans (docs/production-traces.md); an instrumentation that records model calls otherwise is not read: turn on one of these, or export with its GenAI option",
    )
}

/// What the file's span ids make the reader do: spans sharing an id (each read), parent ids
/// in a cycle (the walk up ends where it closes), spans that name themselves as their parent
/// (read as spans without one). At most 5 of each are named.
fn id_warnings(spans: &[Span]) -> Vec<String> {
    const NAMED: usize = 5;
    let mut counts: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for s in spans {
        *counts.entry((s.trace.as_str(), s.id.as_str())).or_insert(0) += 1;
    }
    let shared: Vec<String> = counts
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|((trace, id), n)| {
            let id = if id.is_empty() {
                "an empty id".to_owned()
            } else {
                format!("the id `{id}`")
            };
            format!("{n} spans of trace `{trace}` share {id}")
        })
        .collect();
    // Self-parented spans by id: how many, and the line of the first.
    let mut own: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for s in spans
        .iter()
        .filter(|s| !s.id.is_empty() && s.parent == s.id)
    {
        own.entry(s.id.as_str()).or_insert((0, s.line)).0 += 1;
    }
    let selfish: Vec<String> = own
        .iter()
        .map(|(id, (n, line))| match n {
            1 => format!("`{id}` (line {line})"),
            _ => format!("`{id}` ({n} spans, the first at line {line})"),
        })
        .collect();
    // Cycles of parent ids, trace by trace.
    let mut traces: BTreeMap<&str, Vec<&Span>> = BTreeMap::new();
    for s in spans {
        traces.entry(s.trace.as_str()).or_default().push(s);
    }
    let cycles: Vec<String> = traces
        .values()
        .flat_map(|group| {
            parent_walk(group)
                .1
                .into_iter()
                .map(|i| format!("`{}` (line {})", group[i].id, group[i].line))
        })
        .collect();
    let mut out = Vec::new();
    let named = |all: &[String]| {
        let mut text = all[..all.len().min(NAMED)].join("; ");
        if all.len() > NAMED {
            text.push_str(&format!("; and {} more", all.len() - NAMED));
        }
        text
    };
    if !shared.is_empty() {
        out.push(format!(
            "{}: each span is read (only spans that are the same in every field are one span sent twice)",
            named(&shared)
        ));
    }
    if !cycles.is_empty() {
        out.push(format!(
            "parent ids that go round in a cycle, cut where it closes (that span read as having no parent; every span read): {}",
            named(&cycles)
        ));
    }
    if !selfish.is_empty() {
        out.push(format!(
            "span(s) that name themselves as their parent, read as spans without one: {}",
            named(&selfish)
        ));
    }
    out
}

fn order(a: &Span, b: &Span) -> std::cmp::Ordering {
    a.start
        .cmp(&b.start)
        .then(a.end.cmp(&b.end))
        .then(a.ordinal.cmp(&b.ordinal))
}

/// A run harness exported: its events as they were.
fn harness_run(group: &[&Span], id: String) -> Result<Option<Run>, Diagnostic> {
    let mut events: Vec<(u64, TimedEvent)> = Vec::new();
    let mut success = None;
    for s in group {
        if let Some(Value::Bool(b)) = s.attrs.get(SUCCESS_ATTR) {
            success = Some(*b);
        }
        for e in &s.events {
            let Some(v) = e.attrs.get(EVENT_ATTR) else {
                continue;
            };
            let seq = e.attrs.get(SEQ_ATTR).and_then(Value::as_u64).unwrap_or(0);
            let event = v
                .as_str()
                .ok_or_else(|| "not a string".to_owned())
                .and_then(|t| serde_json::from_str::<TimedEvent>(t).map_err(|e| e.to_string()))
                .map_err(|why| {
                    located(
                        s.line,
                        1,
                        format!(
                            "span `{}` ({}): its `{EVENT_ATTR}` event is not a trace event: {why}",
                            s.name, s.id
                        ),
                        "the file was changed after harness wrote it; export the run again with `--otlp`",
                    )
                })?;
            events.push((seq, event));
        }
    }
    events.sort_by_key(|(seq, _)| *seq);
    if let Some(w) = events.windows(2).find(|w| w[0].0 == w[1].0) {
        let s = group.first().copied();
        return Err(located(
            s.map_or(1, |s| s.line),
            1,
            format!(
                "trace {}: two events at position {} of its run",
                s.map_or("", |s| s.trace.as_str()),
                w[0].0
            ),
            "the file holds one harness run twice under one trace id, or was edited; export the runs again with `--otlp`",
        ));
    }
    let events: Vec<TimedEvent> = events.into_iter().map(|(_, e)| e).collect();
    let termination = events.iter().rev().find_map(|e| match &e.event {
        Event::Outcome { outcome, .. } => Some(outcome.as_str().to_owned()),
        _ => None,
    });
    Ok(Some(Run {
        id,
        source: SOURCE.to_owned(),
        success,
        termination,
        events,
    }))
}

enum Item<'a> {
    Inference(&'a Span),
    Tool(&'a Span),
}

/// For each span of `group`, the nearest of its ancestors (by parent id) that is an inference
/// span, in one pass over the parent links: each span's answer is worked out once and shared
/// by every span below it. A span whose parent is itself has none; a cycle of parent ids ends
/// the walk where it closes.
fn nearest_inference_ancestors(group: &[&Span]) -> Vec<Option<usize>> {
    parent_walk(group).0
}

/// [`nearest_inference_ancestors`], and the spans whose parent closes a cycle of parent ids.
fn parent_walk(group: &[&Span]) -> (Vec<Option<usize>>, Vec<usize>) {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        Unknown,
        Walking,
        Done,
    }
    let index: HashMap<&str, usize> = group
        .iter()
        .enumerate()
        .map(|(i, s)| (s.id.as_str(), i))
        .collect();
    // A span whose parent id is its own id has no parent (whichever span of that id the
    // index holds).
    let linked = |i: usize| -> Option<usize> {
        let p = group[i].parent.as_str();
        (!p.is_empty() && p != group[i].id)
            .then(|| index.get(p).copied())
            .flatten()
            .filter(|&j| j != i)
    };
    // First the cycles: walking up from each span not yet seen, a parent met on the same walk
    // closes one, and that link is cut.
    let mut state = vec![State::Unknown; group.len()];
    let mut cycles = Vec::new();
    let mut path = Vec::new();
    for start in 0..group.len() {
        path.clear();
        let mut at = start;
        while state[at] == State::Unknown {
            state[at] = State::Walking;
            path.push(at);
            match linked(at) {
                Some(p) if state[p] == State::Walking => {
                    cycles.push(at);
                    break;
                }
                Some(p) => at = p,
                None => break,
            }
        }
        for &i in &path {
            state[i] = State::Done;
        }
    }
    let mut cut = vec![false; group.len()];
    for &i in &cycles {
        cut[i] = true;
    }
    let parent_of = |i: usize| linked(i).filter(|_| !cut[i]);
    // Then each span's nearest inference ancestor, worked out once for every span above it.
    let mut done = vec![false; group.len()];
    let mut nearest: Vec<Option<usize>> = vec![None; group.len()];
    for start in 0..group.len() {
        path.clear();
        let mut at = start;
        // The answer for the last span of the path.
        let last = loop {
            if done[at] {
                break None;
            }
            path.push(at);
            match parent_of(at) {
                None => break None,
                Some(p) if group[p].is_inference() => break Some(p),
                Some(p) if done[p] => break nearest[p],
                Some(p) => at = p,
            }
        };
        let mut below = last;
        for &i in path.iter().rev() {
            nearest[i] = below;
            done[i] = true;
            below = if group[i].is_inference() {
                Some(i)
            } else {
                below
            };
        }
    }
    (nearest, cycles)
}

/// The rule that reads call `id`'s result as failed, as `exec` reads a served one: the
/// provider's flag when the span shows it (`is_error`), the `--failure` patterns and the
/// built-in shapes first (so the same result names the same rule
/// either way), then the tool span's status `ERROR` (`span-status`), which only a span shows.
fn failure_rule(
    failures: &FailureRules,
    b: &TraceBuilder,
    id: &str,
    text: &str,
    is_error: Option<bool>,
    status_error: bool,
) -> Option<String> {
    failures
        .classify_call(is_error, text, b.open_args(id))
        .or_else(|| status_error.then(|| SPAN_STATUS_RULE.to_owned()))
}

/// What the file's spans did not show, counted over its runs for the warnings.
#[derive(Default)]
struct Gaps {
    /// Model calls with no message recorded (content capture off).
    no_content: usize,
    /// Answers whose finish reason asked for tools, with no call recorded.
    unseen_calls: usize,
    /// Conversations with an agent span and no model call.
    agent_only: usize,
    /// Answered model calls without token counts.
    no_tokens: usize,
    /// Answered model calls whose counts the instrumentation estimated itself.
    estimated_tokens: usize,
    /// Answered model calls whose output count may be over (streamed, by an instrumentation
    /// that miscounts streams).
    maybe_over: usize,
    /// Tool results sent to an Anthropic model with no `is_error` flag recorded.
    unflagged: usize,
    /// Tool spans read as calls no model output showed, without their arguments.
    blind_tools: usize,
    /// Of those, spans that recorded the tool's input as one bare value, not an object.
    bare_tools: usize,
    /// Calls whose arguments are unknown in the trace: those above, and calls an answer named
    /// without their arguments that no tool span recorded either.
    unknown_args: usize,
    /// Answers whose calls no span recorded, after which the model was asked again.
    unknown_calls: usize,
    /// Tool spans that answer no call of their run.
    unplaced_tools: usize,
    /// Model calls whose recorded input holds no history (the prompt alone).
    no_history: usize,
    /// Calls the model asked for that were never seen run or answered.
    unrun: usize,
    /// Inference spans that record no call, beside one that does.
    preparations: usize,
    /// Failed results pydantic-ai recorded unwrapped but sent wrapped.
    wrapped: usize,
    /// Answered model calls whose span recorded their input but no output, and that no later
    /// call's input shows.
    no_output: usize,
    /// Runs whose first model call's input already holds answers of the model: the trace
    /// starts in the middle of a conversation (a loop whose calls are each a trace).
    mid_conversation: usize,
    /// Answers read from the agent's copy in the next call's input (the span recorded no
    /// output, its calls without ids, or fewer calls than the agent sent back).
    copied_answers: usize,
}

impl Gaps {
    fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.no_content > 0 {
            out.push(format!(
                "{} model call(s) recorded without their messages (content capture off): their calls and results are missing unless tool spans show them; turn capture on (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT, ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE=content, pydantic-ai's include_content; see docs/production-traces.md)",
                self.no_content
            ));
        }
        if self.agent_only > 0 {
            out.push(format!(
                "{} conversation(s) with an agent span (`invoke_agent`) and no model call: not read as runs (the model client's instrumentation was not active, or does not record spans harness reads)",
                self.agent_only
            ));
        }
        if self.unseen_calls > 0 {
            out.push(format!(
                "{} model answer(s) asked for tools (their finish reason: `tool_calls`, `tool_use`, …) but recorded none of the calls: read as answers that asked for unknown calls, not as text answers (a run that ends on one ended with its calls unanswered); the tool spans that follow one are read as some or all of its calls",
                self.unseen_calls
            ));
        }
        if self.no_tokens > 0 {
            out.push(format!(
                "{} model answer(s) without token counts (the instrumentation or the client did not record usage, as streamed calls often do not): their tokens are unknown in the trace (`tokens_unknown`) and count as 0 in sums",
                self.no_tokens
            ));
        }
        if self.estimated_tokens > 0 {
            out.push(format!(
                "{} streamed model answer(s) whose token counts OpenLIT estimated itself (the stream carried no usage; it writes its estimate where the provider's counts go): their tokens are unknown in the trace (`tokens_unknown`); ask the provider for usage in the stream (`stream_options={{\"include_usage\": true}}`) to have them",
                self.estimated_tokens
            ));
        }
        if self.maybe_over > 0 {
            out.push(format!(
                "{} model answer(s) counted by Traceloop's anthropic instrumentation (`opentelemetry.instrumentation.anthropic`), which, when a call streams, adds the stream's opening output count to its final one (one token over, as a rule); its spans do not say whether a call streamed, so the counts are kept as recorded (the anthropic SDK's own spans, when on, count right and are preferred)",
                self.maybe_over
            ));
        }
        if self.unknown_calls > 0 {
            out.push(format!(
                "{} answer(s) asked for tools that no span recorded, and the model was asked again after them: what the run called there is unknown in the trace (`calls_unknown`), and `harness sweep` scores no run that holds one (instrument the tools, or turn capture on)",
                self.unknown_calls
            ));
        }
        let named = self.unknown_args.saturating_sub(self.blind_tools);
        if named > 0 {
            out.push(format!(
                "{named} call(s) the model's answers named without their arguments (content capture off records a call's id and name only), and no tool span recorded them: their arguments are unknown in the trace (`args_unknown`), and `harness sweep` does not score such runs with the detectors that compare arguments"
            ));
        }
        if self.blind_tools > 0 {
            let bare = match self.bare_tools {
                0 => String::new(),
                n => format!(
                    "; {n} of them recorded the tool's input as something other than an object of arguments (one bare value, or a redaction marker)"
                ),
            };
            out.push(format!(
                "{} tool span(s) of calls no model output showed, without their arguments (content capture off){bare}: their arguments are unknown in the trace (`args_unknown`), and `harness sweep` does not score such runs with the detectors that compare arguments",
                self.blind_tools
            ));
        }
        if self.unplaced_tools > 0 {
            out.push(format!(
                "{} tool span(s) answer no call of their run (no call id, and no call of that tool was waiting): not read",
                self.unplaced_tools
            ));
        }
        if self.no_history > 0 {
            out.push(format!(
                "{} later model call(s) whose recorded input holds no answer of the model (the instrumentation records the prompt and the results, not the conversation, or the agent renders its history into a fresh prompt, as DSPy does): only what each holds past the previous call's input is read (its new results answer the calls in order; new messages are nudges or turns); the same messages again, or rewritten in place, are not",
                self.no_history
            ));
        }
        if self.unrun > 0 {
            out.push(format!(
                "{} call(s) the model asked for were never seen run or answered (no tool span, no result in a later call's input): left out of the trace",
                self.unrun
            ));
        }
        if self.preparations > 0 {
            out.push(format!(
                "{} model-call span(s) that record no call (no messages, tokens or error) beside one under the same parent that does (a framework's step before the call, as LlamaIndex's `_prepare_chat_with_tools`): not read as model calls",
                self.preparations
            ));
        }
        if self.no_output > 0 {
            out.push(format!(
                "{} model answer(s) whose span recorded the input but no output, and that no later call's input shows (the run's last answer, or one followed by a user turn): read as empty answers",
                self.no_output
            ));
        }
        if self.mid_conversation > 0 {
            out.push(format!(
                "{} run(s) start in the middle of a conversation (their first model call's input already holds the model's answers): a loop whose model calls are each a trace of their own reads as a run per call; wrap the loop in one span (an `invoke_agent` span) or give its spans one `gen_ai.conversation.id` (OpenInference: `session.id`) to read it as one run",
                self.mid_conversation
            ));
        }
        if self.copied_answers > 0 {
            out.push(format!(
                "{} model answer(s) whose span recorded no output, its calls without ids, or fewer calls than the agent sent back (a stream's last chunk alone): read from the agent's own copy of the answer in the next call's input",
                self.copied_answers
            ));
        }
        if self.wrapped > 0 {
            out.push(format!(
                "{} failed tool result(s) recorded by pydantic-ai 2.16 or later as the tool gave them; to a model without an error flag of its own (OpenAI and most others) it sends them wrapped in `{{\"error\": …}}`: the trace has the text as recorded, the failure as sent",
                self.wrapped
            ));
        }
        if self.unflagged > 0 {
            out.push(format!(
                "{} tool result(s) sent to an Anthropic model whose failure flag (`is_error`) the instrumentation does not record: read as failed by their text and a tool span's status only (`--failure` adds patterns)",
                self.unflagged
            ));
        }
        out
    }
}

/// Where tool spans keep the result, in order: GenAI conventions, OpenInference, Traceloop, the
/// AI SDK, pydantic-ai's first format.
const TOOL_RESULT_KEYS: [&str; 5] = [
    "gen_ai.tool.call.result",
    "output.value",
    "traceloop.entity.output",
    "ai.toolCall.result",
    "tool_response",
];

/// Where tool spans keep the arguments, in the same order.
const TOOL_ARGS_KEYS: [&str; 5] = [
    "gen_ai.tool.call.arguments",
    "input.value",
    "traceloop.entity.input",
    "ai.toolCall.args",
    "tool_arguments",
];

/// A smolagents step outcome as the model was sent it: without the `Observation:` line that
/// heads it and the line end its prompt adds; `Call id: …` (a failed step that had parsed its
/// calls) names the call it answers.
fn step_outcome(m: &mut messages::Msg) {
    let mut text = m.text.trim_end_matches('\n');
    if let Some(rest) = text.strip_prefix("Call id: ") {
        let (id, rest) = rest.split_once('\n').unwrap_or((rest, ""));
        if m.answers.is_none() {
            m.answers = Some(id.trim().to_owned());
        }
        text = rest;
    } else if let Some(rest) = text.strip_prefix("Observation:") {
        text = rest.trim_start_matches([' ', '\n']);
    }
    m.text = text.to_owned();
}

/// Is this input message a tool result (`tool`; smolagents' `tool-response`)?
fn is_result(m: &messages::Msg) -> bool {
    m.role == "tool" || m.role == "tool-response"
}

/// A tool's input as a framework records its Python call (smolagents: `{"args": [],
/// "kwargs": {…}, …}`): the keyword arguments, which are the call's arguments.
fn keyword_args(v: Value) -> Value {
    let Value::Object(o) = &v else {
        return v;
    };
    // OpenLLMetry's LangChain instrumentation records the whole `on_tool_start` callback
    // (`input_str`, tags, metadata, `inputs`, kwargs): the tool's arguments are its `inputs`.
    // (A tool invoked with a bare string has `inputs` null: no arguments to read, and the
    // call's own stand.)
    let callback = ["input_str", "tags", "metadata", "inputs", "kwargs"];
    if o.contains_key("input_str") && o.keys().all(|k| callback.contains(&k.as_str())) {
        return o.get("inputs").cloned().unwrap_or_default();
    }
    let positional_none = o
        .get("args")
        .is_none_or(|a| a.as_array().is_some_and(Vec::is_empty));
    let only_call_keys = o
        .keys()
        .all(|k| matches!(k.as_str(), "args" | "kwargs" | "sanitize_inputs_outputs"));
    match o.get("kwargs") {
        Some(Value::Object(kw)) if positional_none && only_call_keys => Value::Object(kw.clone()),
        _ => v,
    }
}

/// The call a tool span ran: its call id attribute, else the id its result names (a
/// framework's serialised tool message), else the one call its parent span was handed
/// (LangChain's `tools` node: `[{"name", "args", "id"}]`).
fn tool_call_id(s: &Span, by_id: &HashMap<&str, &Span>) -> Option<String> {
    if let Some(id) = [
        "gen_ai.tool.call.id",
        "tool_call.id",
        "tool.id",
        "ai.toolCall.id",
    ]
    .iter()
    .find_map(|k| non_empty(s.attrs.get(*k)))
    {
        return Some(id.to_owned());
    }
    if let Some(id) = tool_message_call(TOOL_RESULT_KEYS.iter().find_map(|k| s.attrs.get(*k))) {
        return Some(id);
    }
    let parent = by_id.get(s.parent.as_str()).filter(|p| !p.is_inference())?;
    let handed: Value = serde_json::from_str(parent.str("input.value")?).ok()?;
    match handed.as_array().map(Vec::as_slice) {
        Some([one]) => non_empty(one.get("id")).map(str::to_owned),
        _ => None,
    }
}

/// The tools a model call's one event lists (`gen_ai.client.inference.operation.details`, a
/// span event or a log record tied to the span: content in events only).
fn call_event_tools(s: &Span, logs: &HashMap<String, Vec<&Log>>) -> Option<Vec<String>> {
    const DETAILS: &str = "gen_ai.client.inference.operation.details";
    s.events
        .iter()
        .filter(|e| e.name == DETAILS)
        .find_map(|e| messages::event_tools(&event_body(e)))
        .or_else(|| {
            logs.get(&format!("{}/{}", s.trace, s.id))?
                .iter()
                .filter(|l| l.name == DETAILS)
                .find_map(|l| messages::event_tools(&messages::log_body(l)))
        })
}

/// Is `new` the prompt `old` rewritten in place (DSPy's trajectory grown inside it), not a
/// message of its own? A long prompt (at least 200 bytes) that keeps most of itself (4 in 5 of
/// its bytes) at its start and end.
fn rewritten(old: &str, new: &str) -> bool {
    if old.len() < 200 {
        return false;
    }
    let (a, b) = (old.as_bytes(), new.as_bytes());
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..]
        .iter()
        .rev()
        .zip(b[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    (prefix + suffix) * 5 >= old.len() * 4
}

/// The rule named on a tool result read as failed only by its span's status.
pub const SPAN_STATUS_RULE: &str = "span-status";

fn ms(ns: u64, first: u64) -> u64 {
    ns.saturating_sub(first) / 1_000_000
}

/// A run from the GenAI (or OpenInference, Traceloop) spans of a conversation.
fn genai_run(
    group: &[&Span],
    logs: &HashMap<String, Vec<&Log>>,
    id: String,
    first: u64,
    failures: &FailureRules,
    gaps: &mut Gaps,
) -> Result<Option<Run>, Diagnostic> {
    // An inference span with another inside it gives way to the inner one: each inference
    // span's nearest inference ancestor is an outer one (and that one's, in its turn).
    let nearest = nearest_inference_ancestors(group);
    let outer: HashSet<usize> = group
        .iter()
        .zip(&nearest)
        .filter(|(s, _)| s.is_inference())
        .filter_map(|(_, a)| *a)
        .collect();
    // An inference span that records nothing of a call — no messages, no tokens, no error —
    // beside one under the same parent that does, is a framework's step before the call, not
    // a call (LlamaIndex's `_prepare_chat_with_tools`, an OpenInference `LLM` span).
    let records = |s: &Span| {
        merge::has_content(s)
            || s.input_tokens().is_some()
            || s.output_tokens().is_some()
            || s.error.is_some()
            || logs.contains_key(&format!("{}/{}", s.trace, s.id))
    };
    let recording_parents: HashSet<(&str, &str)> = group
        .iter()
        .filter(|s| s.is_inference() && records(s))
        .map(|s| (s.trace.as_str(), s.parent.as_str()))
        .collect();
    let items: Vec<Item> = group
        .iter()
        .enumerate()
        .filter_map(|(i, s)| {
            let preparation = s.is_inference()
                && !records(s)
                && !s.parent.is_empty()
                && recording_parents.contains(&(s.trace.as_str(), s.parent.as_str()));
            if preparation {
                gaps.preparations += 1;
                None
            } else if s.is_inference() && !outer.contains(&i) {
                Some(Item::Inference(s))
            } else if s.is_tool() {
                Some(Item::Tool(s))
            } else {
                None
            }
        })
        .collect();
    // A conversation without a model call is no run: an agent span alone (the loop's own,
    // with the model client's instrumentation not active) shows no loop. Only an agent span
    // that failed is one, a run that crashed before it called a model.
    if !items.iter().any(|i| matches!(i, Item::Inference(_))) {
        let crashed = group
            .iter()
            .any(|s| s.operation() == Some("invoke_agent") && s.error.is_some());
        if !crashed {
            if group.iter().any(|s| s.operation() == Some("invoke_agent")) {
                gaps.agent_only += 1;
            }
            return Ok(None);
        }
    }
    // What each model call sent and answered, read once; and the text the model was sent for
    // each call's result (the tool messages of later calls' input), which is the result as
    // `exec` sees it, whatever the tool span recorded.
    let mut exchanges: Vec<Option<messages::Exchange>> = Vec::with_capacity(items.len());
    let mut seen: HashMap<String, (String, Option<bool>)> = HashMap::new();
    // The calls of the previous answer and how many results the previous input held (to tell
    // a step's outcome, below).
    let mut previous_calls: Vec<String> = Vec::new();
    let mut results_before = 0usize;
    // Calls whose results a pydantic-ai span recorded unwrapped (see `wraps_failed_results`).
    let mut wrapped: HashSet<String> = HashSet::new();
    for item in &items {
        let Item::Inference(s) = item else {
            exchanges.push(None);
            continue;
        };
        let ex = exchange(s, logs).map_err(|why| {
            located(
                s.line,
                1,
                format!("span `{}` ({}): {why}", s.name, s.id),
                "content attributes hold the messages as JSON; check the instrumentation's version, or export the trace again",
            )
        })?;
        exchanges.push(Some(ex));
    }
    let failed: Vec<bool> = items
        .iter()
        .map(|i| matches!(i, Item::Inference(s) if s.error.is_some()))
        .collect();
    let (copied, blank) = messages::answers_from_next_input(&mut exchanges, &failed);
    gaps.copied_answers += copied;
    gaps.no_output += blank;
    for (item, ex) in items.iter().zip(exchanges.iter_mut()) {
        let (Item::Inference(s), Some(ex)) = (item, ex) else {
            continue;
        };
        if s.records_function_responses() {
            for m in ex.input.iter_mut().filter(|m| m.role == "tool") {
                messages::unwrap_function_response(m);
            }
        }
        if ex.input.is_empty() && ex.output.is_none() && s.error.is_none() {
            gaps.no_content += 1;
        }
        let anthropic = s.provider().is_some_and(|p| p.starts_with("anthropic"));
        let wraps = s.wraps_failed_results();
        for m in ex.input.iter().filter(|m| m.role == "tool") {
            if let Some(id) = &m.answers {
                if wraps {
                    wrapped.insert(id.clone());
                }
                if !seen.contains_key(id) {
                    if anthropic && m.is_error.is_none() {
                        gaps.unflagged += 1;
                    }
                    seen.insert(id.clone(), (m.text.clone(), m.is_error));
                }
            }
        }
        // smolagents sends one outcome per step (`Observation:\n…`, or `Error:\n…` when a
        // call of it failed), not one result per call: the model saw it for every call of the
        // step, whatever a call's tool span recorded (`exec` reads the wire so too).
        for m in ex.input.iter_mut().filter(|m| m.role == "tool-response") {
            step_outcome(m);
        }
        let results: Vec<&messages::Msg> = ex.input.iter().filter(|m| is_result(m)).collect();
        if let [m] = results.get(results_before..).unwrap_or_default() {
            if m.role == "tool-response" && m.answers.is_none() {
                for id in &previous_calls {
                    seen.entry(id.clone())
                        .or_insert_with(|| (m.text.clone(), None));
                }
            }
        }
        results_before = results.len();
        previous_calls = ex
            .output
            .iter()
            .flat_map(|o| o.calls.iter())
            .map(|c| c.0.clone())
            .filter(|id| !id.is_empty())
            .collect();
    }
    let by_id: HashMap<&str, &Span> = group.iter().map(|s| (s.id.as_str(), *s)).collect();
    let model = items
        .iter()
        .find_map(|i| match i {
            Item::Inference(s) => s.model(),
            Item::Tool(_) => None,
        })
        .unwrap_or_default();
    let mut b = TraceBuilder::new(SOURCE, model);
    // The tools offered, as the first model call that records them lists them.
    // (Else as the agent's span lists them: strands-agents' `gen_ai.agent.tools`.)
    if let Some(names) = items
        .iter()
        .find_map(|i| match i {
            Item::Inference(s) => messages::offered_tools(s),
            Item::Tool(_) => None,
        })
        .or_else(|| {
            items.iter().find_map(|i| match i {
                Item::Inference(s) => call_event_tools(s, logs),
                Item::Tool(_) => None,
            })
        })
        .or_else(|| group.iter().find_map(|s| messages::agent_tools(s)))
    {
        b.offered(names);
    }
    let mut first_call = true;
    let mut after_calls = false;
    let mut faults = 0u32;
    let mut generated = 0usize;
    let mut answered: HashSet<String> = HashSet::new();
    let mut last: Option<(bool, Option<String>)> = None;
    // The cap of `harness serve`'s refusal that the last model call failed on, if it did: the
    // run ended at the cap, as exec's own trace says, not in a provider fault.
    let mut capped: Option<u32> = None;
    // Did the last model call's span record the calls it answered with? (An answer of text
    // alone may carry its calls as text, and a span without content none at all: then a tool
    // span is the call.)
    let mut answer_recorded = false;
    // The previous call's input, (role, text, the call a result answers), for inputs without
    // history.
    let mut previous_input: Vec<(String, String, Option<String>)> = Vec::new();
    // The tool spans after an answer are read in the order of its calls (frameworks check or
    // run parallel calls in an order of their own); spans of no call of it keep their place
    // after them.
    let mut items: Vec<(Item, Option<messages::Exchange>)> =
        items.into_iter().zip(exchanges).collect();
    let mut asked: Vec<String> = Vec::new();
    let mut i = 0;
    while i < items.len() {
        if let (Item::Inference(_), ex) = &items[i] {
            asked = ex
                .iter()
                .flat_map(|ex| ex.output.iter())
                .flat_map(|o| o.calls.iter().map(|c| c.0.clone()))
                .collect();
            i += 1;
            continue;
        }
        let end = items[i..]
            .iter()
            .position(|(it, _)| matches!(it, Item::Inference(_)))
            .map_or(items.len(), |n| i + n);
        items[i..end].sort_by_cached_key(|(it, _)| match it {
            Item::Tool(s) => tool_call_id(s, &by_id)
                .and_then(|id| asked.iter().position(|a| *a == id))
                .unwrap_or(usize::MAX),
            Item::Inference(_) => usize::MAX,
        });
        i = end;
    }
    for (item, ex) in items {
        match item {
            Item::Tool(s) => {
                b.at(ms(s.start, first));
                let name = s
                    .str("gen_ai.tool.name")
                    .or_else(|| s.str("tool.name"))
                    .or_else(|| s.str("ai.toolCall.name"))
                    .or_else(|| s.name.strip_prefix("execute_tool "))
                    .or_else(|| s.name.strip_prefix("running tool "))
                    // OpenInference's DSPy spans: `exec.__call__`, the tool's method.
                    .or_else(|| s.name.strip_suffix(".__call__"))
                    .unwrap_or(s.name.as_str())
                    .to_owned();
                let call_id = tool_call_id(s, &by_id);
                let output = TOOL_RESULT_KEYS.iter().find_map(|k| s.attrs.get(*k));
                // strands-agents records a tool's input and result as the span's events
                // (`gen_ai.tool.message` with its `content`, `gen_ai.choice` with its `message`).
                let event = |name: &str, key: &str| {
                    s.events
                        .iter()
                        .find(|e| e.name == name)
                        .and_then(|e| event_body(e).get(key).cloned())
                };
                let event_args = event("gen_ai.tool.message", "content");
                let event_output = event("gen_ai.choice", "message");
                let given =
                    TOOL_ARGS_KEYS.iter().any(|k| s.attrs.contains_key(*k)) || event_args.is_some();
                // Arguments as the tool received them, when the span shows them as an object
                // (a framework that records a one-argument tool's bare value says nothing of
                // its name: the call's own arguments stand).
                let args = TOOL_ARGS_KEYS
                    .iter()
                    .find_map(|k| s.attrs.get(*k))
                    .or(event_args.as_ref())
                    .map(|v| keyword_args(parse_args(Some(v))))
                    .filter(Value::is_object);
                let call = match b.answered_call(call_id.as_deref(), Some(&name), args.clone()) {
                    Some(c) => Some(c),
                    // A call no model output showed (content not captured, or calls carried as
                    // text): the span is it. Where the answer before it recorded its calls, a
                    // span of none of them is no call to make up.
                    None if answer_recorded => None,
                    // (A span without a call id — DSPy's, whose calls are text — is a call of
                    // its own, named as a call without an id is.)
                    None => call_id
                        .or_else(|| {
                            generated += 1;
                            Some(format!("call_{generated}"))
                        })
                        .filter(|c| !answered.contains(c))
                        .inspect(|c| match args {
                            Some(args) => b.call(c.clone(), name.clone(), args),
                            None => {
                                gaps.blind_tools += 1;
                                if given {
                                    gaps.bare_tools += 1;
                                }
                                b.blind_call(c.clone(), name.clone());
                            }
                        }),
                };
                if call.is_none() {
                    gaps.unplaced_tools += 1;
                }
                if let Some(c) = call {
                    b.at(ms(s.end, first));
                    let (text, flag) = match seen.get(&c) {
                        Some((text, flag)) => (text.clone(), *flag),
                        None => (
                            output
                                .or(event_output.as_ref())
                                .map(|v| result_text(Some(v)))
                                .or_else(|| s.error.clone())
                                .unwrap_or_default(),
                            None,
                        ),
                    };
                    let rule = failure_rule(failures, &b, &c, &text, flag, s.error.is_some());
                    b.result_ruled(&c, &text, rule);
                    answered.insert(c);
                }
            }
            Item::Inference(s) => {
                let mut ex = ex.unwrap_or_default();
                answer_recorded = ex.output.as_ref().is_some_and(|o| !o.calls.is_empty());
                // A later input with no answer of the model in it: the instrumentation records
                // the prompt and results, not the conversation (OpenLIT, smolagents), or the
                // agent renders its history into a fresh prompt (DSPy). What the previous
                // call's input held is not new: the same message again (each once, so a nudge
                // sent twice in the same words counts twice), or a long prompt rewritten in
                // place. The rest is (new results, nudges, turns).
                let original: Vec<(String, String, Option<String>)> = ex
                    .input
                    .iter()
                    .map(|m| (m.role.clone(), m.text.clone(), m.answers.clone()))
                    .collect();
                if first_call {
                    // (Calls in it: a prefill or few-shot answers are not a loop's history.)
                    if ex
                        .input
                        .iter()
                        .any(|m| m.role == "assistant" && !m.calls.is_empty())
                    {
                        gaps.mid_conversation += 1;
                    }
                } else if !ex.input.is_empty() && !ex.input.iter().any(|m| m.role == "assistant") {
                    gaps.no_history += 1;
                    let mut unclaimed: Vec<bool> = vec![true; previous_input.len()];
                    let mut at = 0;
                    ex.input.retain(|m| {
                        at += 1;
                        let same = previous_input.iter().zip(unclaimed.iter_mut()).find(
                            |((role, text, answers), free)| {
                                **free
                                    && *role == m.role
                                    && *text == m.text
                                    && *answers == m.answers
                            },
                        );
                        if let Some((_, free)) = same {
                            *free = false;
                            return false;
                        }
                        !previous_input.get(at - 1).is_some_and(|(role, text, _)| {
                            *role == m.role && rewritten(text, &m.text)
                        })
                    });
                }
                previous_input = original;
                let from = ex
                    .input
                    .iter()
                    .rposition(|m| m.role == "assistant")
                    .map_or(0, |i| i + 1);
                for m in &ex.input[from..] {
                    match m.role.as_str() {
                        "tool" | "tool-response" => {
                            let text = m.text.as_str();
                            let target = b.answered_call(m.answers.as_deref(), None, None);
                            if let Some(c) = target {
                                let rule = failure_rule(failures, &b, &c, text, m.is_error, false);
                                b.result_ruled(&c, text, rule);
                                answered.insert(c);
                            }
                        }
                        "user" if first_call || !after_calls => b.user(&m.text),
                        "user" | "system" | "developer" if !first_call => {
                            let role = if m.role == "user" {
                                Role::User
                            } else {
                                Role::System
                            };
                            b.nudge(role, &m.text);
                        }
                        _ => {}
                    }
                }
                first_call = false;
                b.at(ms(s.end, first));
                let latency = ms(s.end, s.start);
                if let Some(message) = &s.error {
                    if let Some(cap) = crate::vocabulary::capped_at(message) {
                        capped = Some(cap);
                        continue;
                    }
                    // Sent again after the cap (a client retrying a 400): the conversation
                    // had ended there.
                    if capped.is_some() && message.contains(crate::vocabulary::CONVERSATION_ENDED) {
                        continue;
                    }
                }
                capped = None;
                if let Some(message) = &s.error {
                    faults += 1;
                    b.push(Event::ProviderError {
                        fault: fault_of(s, message),
                        message: message.clone(),
                        attempt: faults,
                        retry_in_ms: None,
                    });
                    last = Some((true, Some(message.clone())));
                    continue;
                }
                faults = 0;
                // Was the answer itself recorded (content captured)?
                let recorded = ex.output.is_some();
                let out = ex.output.unwrap_or_default();
                let calls: Vec<(String, String, Value)> = out
                    .calls
                    .into_iter()
                    .map(|(id, name, args)| {
                        let id = if id.is_empty() {
                            generated += 1;
                            format!("call_{generated}")
                        } else {
                            id
                        };
                        (id, name, args)
                    })
                    .collect();
                let mut finish = finish_of(ex.finish.as_deref(), !calls.is_empty());
                // An answer that asked for tools the span did not record (content capture
                // off): no text answer, and what follows it is the tool loop's. A recorded
                // answer without calls is the text it says, whatever its finish reason (a
                // server that says `tool_calls` of a text answer, as some do).
                let unseen = calls.is_empty() && finish == Finish::ToolUse && !recorded;
                if calls.is_empty() && finish == Finish::ToolUse && recorded {
                    finish = Finish::Stop;
                }
                if unseen {
                    gaps.unseen_calls += 1;
                }
                after_calls = !calls.is_empty() || unseen;
                let (input, output) = (s.input_tokens(), s.output_tokens());
                // Counts not recorded are unknown, not 0 (one of the two recorded: the other
                // is 0).
                let doubt = s.counts_doubt();
                let tokens = if doubt == Some(CountsDoubt::Estimated) {
                    gaps.estimated_tokens += 1;
                    None
                } else if input.is_none() && output.is_none() {
                    gaps.no_tokens += 1;
                    None
                } else {
                    if doubt == Some(CountsDoubt::MaybeOver) {
                        gaps.maybe_over += 1;
                    }
                    Some((input.unwrap_or(0), output.unwrap_or(0)))
                };
                last = Some((
                    false,
                    (calls.is_empty() && !unseen).then(|| out.text.clone()),
                ));
                b.response_announcing(&out.text, calls, tokens, latency, finish);
            }
        }
    }
    if let Some(cap) = capped {
        b.capped(cap);
    }
    let (outcome, detail) = match (capped, last) {
        (Some(cap), _) => (
            OutcomeKind::MaxIterations,
            Some(crate::vocabulary::refused_past_cap(cap)),
        ),
        (None, Some((true, Some(message)))) => (
            OutcomeKind::Error,
            Some(format!(
                "the run ended after a failed model call: {message}"
            )),
        ),
        (None, Some((false, Some(_)))) => (OutcomeKind::Response, None),
        (None, Some(_)) => (
            OutcomeKind::Stopped,
            Some("the run ended after tool calls, with no model call after them".to_owned()),
        ),
        // Only an agent span that failed gets here (see above).
        (None, None) => (
            OutcomeKind::Error,
            Some(format!(
                "the agent failed before any model call: {}",
                group
                    .iter()
                    .find_map(|s| s
                        .error
                        .as_deref()
                        .filter(|_| s.operation() == Some("invoke_agent")))
                    .unwrap_or_default()
            )),
        ),
    };
    gaps.unrun += b.unrun();
    let termination = Some(outcome.as_str().to_owned());
    let events = b.finish(outcome, detail);
    gaps.wrapped += events
        .iter()
        .filter(|e| matches!(&e.event, Event::ToolCallEnd { id, ok: false, .. } if wrapped.contains(id)))
        .count();
    Ok(Some(Run {
        id,
        source: SOURCE.to_owned(),
        success: None,
        termination,
        events,
    }))
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_shapes;
