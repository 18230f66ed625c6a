//! Importers: recorded agent transcripts in public formats mapped onto the trace model, so the
//! post-hoc detectors (`detector/`) and the sweep (`sweep/`) read them like any replayed run.
//!
//! One file per format (`tau_bench`, `tau2`, `swe_agent`, `toolbench`, `openai`, `anthropic`,
//! `openhands`, `otlp`);
//! this module owns the shared pieces: the imported [`Run`] (id, source, success label,
//! termination, events), the [`TraceBuilder`] every format fills, format detection
//! ([`detect`]) and the located errors of malformed files ([`Diagnostic`]). It reads no files:
//! [`import_text`] takes the text and the caller does the I/O (`sweep`, `cli`).
//!
//! Per format, how a call's failure is decided:
//! - tau-bench: the result text starts with `Error` (no flag in the format);
//! - tau2: the message's `error` flag where present, else the `Error` prefix;
//! - ToolBench: the result's JSON `error` field is not empty;
//! - SWE-agent: the observation matches a failure pattern ([`swe_agent::FAILURE`]);
//! - OpenAI / Anthropic lists: an explicit flag (`is_error`, `error: true`), else the `Error`
//!   prefix;
//! - OpenHands: an `error` observation, or a command whose `exit_code` is not 0;
//! - OpenTelemetry (OTLP JSON): the rules `exec` reads served results by
//!   ([`crate::failure`]: `--failure` patterns, the built-in shapes), else a tool span's
//!   status `ERROR`.
//!
//! Arguments are always parsed (JSON strings decoded); an argument string that is not JSON is
//! kept as a JSON string, so it still compares by value.

pub mod anthropic;
pub mod gemini;
pub mod openai;
pub mod openhands;
pub mod otlp;
pub mod scenario;
pub mod swe_agent;
pub mod tau2;
pub mod tau_bench;
pub mod toolbench;
pub mod unknown;

pub use unknown::{args_not_recorded, is_not_recorded, recorded_args, unknowns};

use crate::diagnostic::Diagnostic;
use crate::failure::FailureRules;
use crate::llm::Finish;
use crate::scenario::OutcomeKind;
use crate::trace::{CallSummary, Event, TimedEvent};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A transcript format: one reader of [`FORMATS`].
#[derive(Debug, Clone, Copy)]
pub struct Format(&'static Reader);

impl PartialEq for Format {
    fn eq(&self, other: &Self) -> bool {
        self.0.name == other.0.name
    }
}

impl Eq for Format {}

impl Format {
    /// Every format, in detection order.
    pub fn all() -> impl Iterator<Item = Format> {
        FORMATS.iter().map(|r| Format(r))
    }

    /// The CLI name.
    pub fn as_str(self) -> &'static str {
        self.0.name
    }

    /// Parse a CLI name.
    pub fn parse(name: &str) -> Option<Self> {
        Self::all().find(|f| f.as_str() == name)
    }
}

/// What a format's whole document is, when a forced format meets another shape.
#[derive(Debug, Clone, Copy)]
pub enum Root {
    /// Anything the reader itself checks.
    Any,
    /// A JSON array, described so.
    Array(&'static str),
    /// A JSON object, described so.
    Object(&'static str),
    /// A JSON object or array, described so.
    Either(&'static str),
}

impl Root {
    /// How `doc` fails this shape, if it does.
    fn refuses(self, doc: &Value) -> Option<&'static str> {
        let (ok, want) = match self {
            Self::Any => return None,
            Self::Array(want) => (doc.is_array(), want),
            Self::Object(want) => (doc.is_object(), want),
            Self::Either(want) => (doc.is_array() || doc.is_object(), want),
        };
        (!ok).then_some(want)
    }
}

/// One transcript format's reader: the registry entry each format's module declares.
#[derive(Debug)]
pub struct Reader {
    /// The CLI name (`--format`), and the `source` of its runs.
    pub name: &'static str,
    /// The shape of its whole document.
    pub root: Root,
    /// Is a parsed document (the first line, for JSON lines) of this format? Asked in
    /// [`FORMATS`] order; the first that says yes reads it.
    pub detect: fn(&Value) -> bool,
    /// Convert a parsed document: `(doc, rel, text)`, `text` the document's source for
    /// locating shape errors.
    pub convert: fn(Value, &str, &str) -> Result<Vec<Run>, Diagnostic>,
    /// A reader of the whole file's text instead (a run's records may be on any of its
    /// lines), with the sniff that recognises such a file before it is parsed.
    pub whole_file: Option<WholeFile>,
}

/// A format read from the whole file's text ([`Reader::whole_file`]).
#[derive(Debug, Clone, Copy)]
pub struct WholeFile {
    /// Does the text look like this format?
    pub sniff: fn(&str) -> bool,
    /// Read the whole text: `(text, rel, the failure rules tool results are read by)`.
    pub import: fn(&str, &str, &FailureRules) -> FileImport,
}

/// Every transcript format, in detection order: the first whose `detect` accepts a document
/// reads it (OpenTelemetry before all, OpenHands' events before SWE-agent's `history`,
/// Anthropic's content blocks before a plain OpenAI message list). A new format is its module
/// (declaring its [`Reader`]) and one line here.
pub const FORMATS: &[&Reader] = &[
    &otlp::READER,
    &tau_bench::READER,
    &toolbench::READER,
    &openhands::READER,
    &tau2::READER,
    &swe_agent::READER,
    &gemini::READER,
    &anthropic::READER,
    &openai::READER,
];

/// One imported run.
#[derive(Debug, Clone)]
pub struct Run {
    /// `<file>#<run>`: unique across a corpus, stable across machines.
    pub id: String,
    /// The source format (or `scenario`, `trace` for other inputs).
    pub source: String,
    /// Success label from the source (reward = 1, `win`, …); `None` when the source has none.
    pub success: Option<bool>,
    /// How the source says the run ended, when it says.
    pub termination: Option<String>,
    /// The run as trace events.
    pub events: Vec<TimedEvent>,
}

/// A malformed transcript's problem at `line`:`col`, with what to do.
pub(crate) fn located(line: usize, col: usize, message: String, hint: &str) -> Diagnostic {
    Diagnostic::at(line, col, message).hint(hint)
}

/// What one file gave.
#[derive(Debug, Default)]
pub struct FileImport {
    /// The runs read.
    pub runs: Vec<Run>,
    /// Located errors (a JSON-lines file can have some bad lines and some good ones).
    pub errors: Vec<Diagnostic>,
    /// Why the file holds no run although it is well-formed (e.g. a SWE-agent file without
    /// a trajectory).
    pub note: Option<String>,
    /// What the reader did with input it could read only one way (spans sharing an id, both
    /// read), said beside the runs rather than in silence.
    pub warnings: Vec<String>,
}

/// Guess the format of a parsed JSON document (the first line, for JSON lines).
pub fn detect(doc: &Value) -> Option<Format> {
    Format::all().find(|f| (f.0.detect)(doc))
}

/// The message list a document holds, if it is one: `{messages}`, a list of such runs (the
/// first run's), or a bare list of messages; every message has a `role`.
pub(crate) fn message_list(doc: &Value) -> Option<&Vec<Value>> {
    let list = match doc {
        Value::Object(o) => o.get("messages")?,
        Value::Array(items) => match items.first()? {
            Value::Object(first) if first.contains_key("messages") => &first["messages"],
            Value::Object(first) if first.contains_key("role") => doc,
            _ => return None,
        },
        _ => return None,
    };
    let list = list.as_array()?;
    list.iter().all(|m| m.get("role").is_some()).then_some(list)
}

/// Import one file's text. `rel` names the file in run ids; `format` forces a format
/// (otherwise it is detected). JSON-lines files (`jsonl`) read one document per line, and a
/// bad line is reported at its own line while the others are read. `failures` are the rules
/// a format without a failure flag of its own reads tool results by (OpenTelemetry traces,
/// whose agents' results are text as `exec` serves them).
pub fn import_text(
    text: &str,
    rel: &str,
    jsonl: bool,
    format: Option<Format>,
    failures: &FailureRules,
) -> FileImport {
    // A UTF-8 byte-order mark (some Windows tools write one) is no part of the JSON.
    let text = crate::scenario::without_bom(text);
    let mut out = FileImport::default();
    // OTLP JSON: the spans of a run may be on any line of the file.
    if let Some(whole) = format.map_or_else(
        || Format::all().find_map(|f| f.0.whole_file.filter(|w| (w.sniff)(text))),
        |f| f.0.whole_file,
    ) {
        return (whole.import)(text, rel, failures);
    }
    if jsonl && first_line_is_message(text) {
        return message_lines(text, rel, format);
    }
    if jsonl {
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let doc: Value = match serde_json::from_str(line) {
                Ok(v) => v,
                Err(e) => {
                    out.errors.push(syntax(&e, Some(i)));
                    continue;
                }
            };
            let Some(fmt) = format.or_else(|| detect(&doc)) else {
                out.errors.push(located(
                    i + 1,
                    1,
                    "not a transcript: no message list found".to_owned(),
                    "each line must be a run object with `messages` (OpenAI or Anthropic)",
                ));
                continue;
            };
            if let Some(whole) = fmt.0.whole_file {
                return (whole.import)(text, rel, failures);
            }
            match convert(fmt, doc, rel, line) {
                // A line's run is named by its `id`, else by its line number.
                Ok(runs) => out.runs.extend(runs.into_iter().map(|mut r| {
                    if r.id == rel {
                        r.id = format!("{rel}#{}", i + 1);
                    }
                    r
                })),
                Err(mut e) => {
                    if let Some(at) = &mut e.at {
                        at.line += i;
                    }
                    out.errors.push(e);
                }
            }
        }
        return out;
    }
    let doc: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            out.errors.push(syntax(&e, None));
            return out;
        }
    };
    let Some(fmt) = format.or_else(|| detect(&doc)) else {
        out.note = Some("not a recognised transcript format".to_owned());
        return out;
    };
    if let Some(whole) = fmt.0.whole_file {
        return (whole.import)(text, rel, failures);
    }
    match convert(fmt, doc, rel, text) {
        Ok(runs) if runs.is_empty() => {
            out.note = Some(format!("a {} file with no run", fmt.as_str()));
        }
        Ok(runs) => out.runs = runs,
        Err(e) => out.errors.push(e),
    }
    out
}

/// A syntax error; `line` is the JSON-lines line index, `None` for a whole JSON file.
/// Is the first line of a JSON-lines file a message (`{"role": …}`) rather than a run?
fn first_line_is_message(text: &str) -> bool {
    text.lines()
        .find(|l| !l.trim().is_empty())
        .and_then(|l| serde_json::from_str::<Value>(l).ok())
        .is_some_and(|v| v.get("role").is_some() && v.get("messages").is_none())
}

/// A JSON-lines file of messages, one a line: one run, the whole file.
fn message_lines(text: &str, rel: &str, format: Option<Format>) -> FileImport {
    let mut out = FileImport::default();
    let mut messages = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(v) => messages.push(v),
            Err(e) => out.errors.push(syntax(&e, Some(i))),
        }
    }
    if !out.errors.is_empty() {
        // A message list with a hole in it is not the run that was recorded.
        return out;
    }
    let doc = Value::Array(messages);
    let Some(fmt) = format.or_else(|| detect(&doc)) else {
        out.note = Some("not a recognised transcript format".to_owned());
        return out;
    };
    // Shape errors are located by message (line) through the JSON path.
    let joined = crate::json::compact(&doc);
    match convert(fmt, doc, rel, &joined) {
        Ok(runs) => out.runs = runs,
        Err(mut e) => {
            e.at = Some(crate::diagnostic::Position { line: 1, col: 1 });
            e.hint = Some(format!(
                "{} (the path's index is the message's line, from 0)",
                e.hint.unwrap_or_default()
            ));
            out.errors.push(e);
        }
    }
    out
}

fn syntax(e: &serde_json::Error, line: Option<usize>) -> Diagnostic {
    let hint = match (e.is_eof(), line) {
        (true, Some(_)) => "the line ends early: in JSON lines each line holds one whole document",
        (true, None) => "the file ends early: it was truncated, or a bracket is missing",
        (false, _) => "fix the JSON at that position",
    };
    let line_offset = line.unwrap_or(0);
    let message = without_position(e);
    let (message, hint) = match crate::limits::explain_nesting(&message, true) {
        Some(deep) => (
            deep,
            "no transcript nests this deep; check the file is the transcript meant (see docs/robustness.md \"Limits\")",
        ),
        None => (format!("invalid JSON: {message}"), hint),
    };
    located(e.line() + line_offset, e.column().max(1), message, hint)
}

/// serde_json's message without its ` at line L column C` (the error is located already).
fn without_position(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rsplit_once(" at line ") {
        Some((head, _)) => head.to_owned(),
        None => text,
    }
}

fn convert(fmt: Format, doc: Value, rel: &str, text: &str) -> Result<Vec<Run>, Diagnostic> {
    if let Some(want) = fmt.0.root.refuses(&doc) {
        return Err(located(
            1,
            1,
            format!(
                "the document is {} {}; a {} file is {want}",
                if doc.is_array() { "an" } else { "a" },
                crate::json::kind_name(&doc),
                fmt.as_str()
            ),
            "check `--format`, or leave it out to detect the format",
        ));
    }
    (fmt.0.convert)(doc, rel, text)
}

/// Deserialize `doc` into `T`; on a shape error, parse `text` again to locate it
/// (`file:line:col` and the JSON path of the bad value).
pub(crate) fn typed<T: serde::de::DeserializeOwned>(
    doc: Value,
    text: &str,
    format: &str,
) -> Result<T, Diagnostic> {
    match serde_json::from_value::<T>(doc) {
        Ok(t) => Ok(t),
        Err(plain) => {
            let mut de = serde_json::Deserializer::from_str(text);
            let hint = format!("this does not match the {format} format");
            match serde_path_to_error::deserialize::<_, T>(&mut de) {
                Err(e) => {
                    let inner = e.inner();
                    let line = inner.line().max(1);
                    Err(located(
                        line,
                        crate::scenario::json_token_start(text, line, inner.column().max(1)),
                        format!("at `{}`: {}", e.path(), without_position(inner)),
                        &hint,
                    ))
                }
                Ok(_) => Err(located(1, 1, plain.to_string(), &hint)),
            }
        }
    }
}

/// Decode tool-call arguments: a JSON string is parsed (a string that is not JSON stays a
/// string); anything else is taken as it is; absent is `{}`.
pub fn parse_args(raw: Option<&Value>) -> Value {
    match raw {
        None | Some(Value::Null) => Value::Object(serde_json::Map::new()),
        Some(Value::String(s)) if s.trim().is_empty() => Value::Object(serde_json::Map::new()),
        Some(Value::String(s)) => {
            serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone()))
        }
        Some(v) => v.clone(),
    }
}

/// Message content as text: a string, or the `text` of typed parts joined by newlines.
pub fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| match p {
                Value::String(s) => Some(s.as_str()),
                _ => p.get("text").and_then(Value::as_str),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Some(Value::Null) | None => String::new(),
        Some(other) => crate::json::compact(other),
    }
}

/// The common failure convention of tool results: the text starts with `Error`.
pub fn error_prefixed(text: &str) -> bool {
    text.trim_start().starts_with("Error")
}

/// Builds the trace of an imported run: model responses with their calls, tool results,
/// user turns, the end. Time stays 0 (transcripts are replayed for their order, not timing)
/// unless the format records it (OTLP spans): then `now` is set before each event.
#[derive(Debug, Default)]
pub struct TraceBuilder {
    events: Vec<TimedEvent>,
    /// The time of the next event, in milliseconds from the run's start.
    now: u64,
    /// Calls started and not yet answered.
    open: Vec<Open>,
    /// Calls the last response asked for that were not seen run yet (formats that record
    /// runs apart from answers: OTLP tool spans): (id, name, arguments).
    announced: Vec<(String, String, Value)>,
    turns: u32,
    calls: usize,
    /// Calls announced and dropped without being seen run.
    unrun: usize,
}

/// A call started and not yet answered.
#[derive(Debug)]
struct Open {
    id: String,
    name: String,
    /// When it started.
    at: u64,
    /// What it ran with.
    args: Value,
}

impl TraceBuilder {
    /// A fresh trace, starting with `run_start`.
    pub fn new(source: &str, model: &str) -> Self {
        let mut b = Self::default();
        b.push(Event::RunStart {
            profile: format!("import:{source}"),
            model: model.to_owned(),
            max_iterations: 0,
            tools: Vec::new(),
        });
        b
    }

    /// The tools the agent offered the model, where the format records them.
    pub fn offered(&mut self, names: Vec<String>) {
        if let Some((tools, _)) = self.run_start() {
            *tools = names;
        }
    }

    /// The iteration cap the run was served under, where the trace shows it (a refusal of
    /// `harness serve` past its cap).
    pub fn capped(&mut self, cap: u32) {
        if let Some((_, max_iterations)) = self.run_start() {
            *max_iterations = cap;
        }
    }

    /// The trace's `run_start` fields a format can fill in later: the tools offered, the cap.
    fn run_start(&mut self) -> Option<(&mut Vec<String>, &mut u32)> {
        if let Some(TimedEvent {
            event:
                Event::RunStart {
                    tools,
                    max_iterations,
                    ..
                },
            ..
        }) = self.events.first_mut()
        {
            return Some((tools, max_iterations));
        }
        None
    }

    fn push(&mut self, event: Event) {
        self.events.push(TimedEvent {
            t_ms: self.now,
            event,
        });
    }

    /// A user (or simulated user) message.
    pub fn user(&mut self, text: &str) {
        self.turns += 1;
        self.push(Event::UserTurn {
            turn: self.turns,
            text: text.to_owned(),
        });
    }

    /// A model response: text and calls `(id, name, parsed args)`; tokens when known.
    pub fn response(
        &mut self,
        text: &str,
        calls: Vec<(String, String, Value)>,
        tokens: (u64, u64),
    ) {
        let finish = if calls.is_empty() {
            Finish::Stop
        } else {
            Finish::ToolUse
        };
        self.model_response(text, calls, Some(tokens), 0, finish, true);
    }

    /// A model response whose format records no token counts (they are unknown in the
    /// trace): text and calls `(id, name, parsed args)`.
    pub fn response_untallied(&mut self, text: &str, calls: Vec<(String, String, Value)>) {
        let finish = if calls.is_empty() {
            Finish::Stop
        } else {
            Finish::ToolUse
        };
        self.model_response(text, calls, None, 0, finish, true);
    }

    /// A model response whose calls start only when they are seen run ([`Self::run_announced`]):
    /// a call discarded, refused or still waiting for approval never ran. Calls announced
    /// before and never run are dropped. `tokens`: `None` when the format did not record them.
    pub fn response_announcing(
        &mut self,
        text: &str,
        calls: Vec<(String, String, Value)>,
        tokens: Option<(u64, u64)>,
        latency_ms: u64,
        finish: Finish,
    ) {
        self.unrun += self.announced.len();
        self.announced.clear();
        self.model_response(text, calls, tokens, latency_ms, finish, false);
    }

    /// Start announced call `id`, with the arguments it ran with when they are known; `false`
    /// when no such call is announced.
    pub fn run_announced(&mut self, id: &str, args: Option<Value>) -> bool {
        let Some(at) = self.announced.iter().position(|(i, _, _)| i == id) else {
            return false;
        };
        let (id, name, announced) = self.announced.remove(at);
        self.call(id, name, args.unwrap_or(announced));
        true
    }

    /// The call a result answers, started now if it was only announced: the call `id` names
    /// when it is open or announced; without an id, the announced call of `name` with `args`
    /// (else of `name`; any call when no name is known), else the oldest open one of `name`.
    /// `args`, when known, are what the call ran with.
    pub fn answered_call(
        &mut self,
        id: Option<&str>,
        name: Option<&str>,
        args: Option<Value>,
    ) -> Option<String> {
        if let Some(id) = id {
            return (self.is_open(id) || self.run_announced(id, args)).then(|| id.to_owned());
        }
        let announced = match name {
            Some(name) => self.announced_like(name, args.as_ref()),
            None => self.first_announced(),
        };
        match announced {
            Some(c) => {
                self.run_announced(&c, args);
                Some(c)
            }
            None => self.pending_id(name),
        }
    }

    /// The announced call a run of `name` with `args` is: the first with the same name and
    /// arguments, else the first with the name.
    fn announced_like(&self, name: &str, args: Option<&Value>) -> Option<String> {
        let key = args.map(crate::json::canonical);
        self.announced
            .iter()
            .find(|(_, n, a)| {
                n == name && key.as_deref() == Some(crate::json::canonical(a).as_str())
            })
            .or_else(|| self.announced.iter().find(|(_, n, _)| n == name))
            .map(|(id, _, _)| id.clone())
    }

    /// Move the clock to `t_ms`, never back (spans that overlap start before others end).
    pub fn at(&mut self, t_ms: u64) {
        self.now = self.now.max(t_ms);
    }

    /// The oldest announced call (for a result that names none).
    fn first_announced(&self) -> Option<String> {
        self.announced.first().map(|(id, _, _)| id.clone())
    }

    fn model_response(
        &mut self,
        text: &str,
        calls: Vec<(String, String, Value)>,
        tokens: Option<(u64, u64)>,
        latency_ms: u64,
        finish: Finish,
        start: bool,
    ) {
        let summaries = calls
            .iter()
            .map(|(id, name, args)| {
                let args_unknown = is_not_recorded(args);
                CallSummary {
                    id: id.clone(),
                    name: name.clone(),
                    args: match args_unknown {
                        true => "{}".to_owned(),
                        false => crate::json::compact(args),
                    },
                    args_unknown,
                }
            })
            .collect();
        self.push(Event::ModelResponse {
            finish,
            text: (!text.is_empty()).then(|| text.to_owned()),
            calls: summaries,
            input_tokens: tokens.map_or(0, |t| t.0),
            output_tokens: tokens.map_or(0, |t| t.1),
            latency_ms,
            anomaly: None,
            chunks: 0,
            tokens_unknown: tokens.is_none(),
            // Asked for tools and named none: unknown, unless a call is seen run before the
            // next answer ([`Self::finish`] decides; some of its calls may still be unseen).
            calls_unknown: finish == Finish::ToolUse && calls.is_empty(),
        });
        for (id, name, args) in calls {
            if start {
                self.call(id, name, args);
            } else {
                self.announced.push((id, name, args));
            }
        }
    }

    /// A tool call seen run without the response that asked for it (its model call's content
    /// was not recorded).
    pub fn call(&mut self, id: String, name: String, args: Value) {
        match is_not_recorded(&args) {
            true => self.blind_call(id, name),
            false => self.start(id, name, args, false),
        }
    }

    /// [`Self::call`] whose arguments the format did not record: marked unknown
    /// (`args_unknown`), so that nothing compares them.
    pub fn blind_call(&mut self, id: String, name: String) {
        self.start(id, name, Value::Object(serde_json::Map::new()), true);
    }

    fn start(&mut self, id: String, name: String, args: Value, args_unknown: bool) {
        self.calls += 1;
        self.open.push(Open {
            id: id.clone(),
            name: name.clone(),
            at: self.now,
            args: args.clone(),
        });
        self.push(Event::ToolCallStart {
            id,
            name,
            args: args.into(),
            args_unknown,
        });
    }

    /// Is call `id` waiting for its result?
    pub fn is_open(&self, id: &str) -> bool {
        self.open.iter().any(|c| c.id == id)
    }

    /// The arguments open call `id` ran with.
    pub fn open_args(&self, id: &str) -> Option<&Value> {
        self.open.iter().find(|c| c.id == id).map(|c| &c.args)
    }

    /// A message the agent added in the middle of its tool loop (a nudge), read as the agent's
    /// own intervention, as `harness exec` reads it.
    pub fn nudge(&mut self, role: crate::llm::Role, text: &str) {
        self.push(Event::Intervention {
            policy: crate::vocabulary::AGENT.to_owned(),
            stage: 1,
            action: "nudge".to_owned(),
            tool: None,
        });
        self.push(Event::MessageInjected {
            source: crate::vocabulary::AGENT.to_owned(),
            role,
            text: text.to_owned(),
        });
    }

    /// The id of the oldest unanswered call to `name` (any name when `None`), for formats
    /// whose results carry no call id.
    pub fn pending_id(&self, name: Option<&str>) -> Option<String> {
        self.open
            .iter()
            .find(|c| name.is_none_or(|want| want == c.name))
            .map(|c| c.id.clone())
    }

    /// A tool result for call `id`. A result for no open call is dropped (it answers nothing
    /// the trace has).
    pub fn result(&mut self, id: &str, text: &str, failed: bool) {
        self.end(id, text, failed, None);
    }

    /// [`Self::result`] read as failed by a named rule (`None`: a success), as `exec`'s
    /// inferred traces name it.
    pub fn result_ruled(&mut self, id: &str, text: &str, rule: Option<String>) {
        self.end(id, text, rule.is_some(), rule);
    }

    fn end(&mut self, id: &str, text: &str, failed: bool, rule: Option<String>) {
        let Some(i) = self.open.iter().position(|c| c.id == id) else {
            return;
        };
        let Open { id, name, at, .. } = self.open.remove(i);
        self.push(Event::ToolCallEnd {
            id,
            name,
            ok: !failed,
            output: (!failed).then(|| text.to_owned()),
            error: failed.then(|| text.to_owned()),
            latency_ms: self.now.saturating_sub(at),
            rule,
        });
    }

    /// Calls so far.
    pub fn calls(&self) -> usize {
        self.calls
    }

    /// Calls an answer asked for that were never seen run (announced, then dropped or still
    /// waiting).
    pub fn unrun(&self) -> usize {
        self.unrun + self.announced.len()
    }

    /// Close the trace with an outcome.
    /// `iterations` counts the model's answers (a failed call retried is the same iteration), as
    /// a served or replayed run's do; a run that ended with an answer carries its text.
    pub fn finish(mut self, outcome: OutcomeKind, detail: Option<String>) -> Vec<TimedEvent> {
        // A call an answer named without its arguments, run with arguments a tool span
        // recorded: the answer's summary takes them.
        let known: std::collections::HashMap<String, String> = self
            .events
            .iter()
            .filter_map(|e| match &e.event {
                Event::ToolCallStart {
                    id,
                    args,
                    args_unknown: false,
                    ..
                } => Some((id.clone(), args.text().to_owned())),
                _ => None,
            })
            .collect();
        for e in &mut self.events {
            if let Event::ModelResponse { calls, .. } = &mut e.event {
                for c in calls.iter_mut().filter(|c| c.args_unknown) {
                    if let Some(args) = known.get(&c.id) {
                        c.args.clone_from(args);
                        c.args_unknown = false;
                    }
                }
            }
        }
        // An answer that named no call of the tools it asked for, and after which calls were
        // seen run (tool spans): those were some or all of its calls, which are known then.
        let mut asking: Option<usize> = None;
        for i in 0..self.events.len() {
            match &self.events[i].event {
                Event::ModelResponse { calls_unknown, .. } => {
                    asking = calls_unknown.then_some(i);
                }
                Event::ToolCallStart { .. } => {
                    if let Some(Event::ModelResponse { calls_unknown, .. }) =
                        asking.take().map(|a| &mut self.events[a].event)
                    {
                        *calls_unknown = false;
                    }
                }
                _ => {}
            }
        }
        let mut iterations = 0u32;
        let mut last_text = None;
        for e in &self.events {
            if let Event::ModelResponse { text, .. } = &e.event {
                iterations = iterations.saturating_add(1);
                last_text.clone_from(text);
            }
        }
        self.push(Event::Outcome {
            outcome,
            iterations,
            text: last_text.filter(|_| outcome == OutcomeKind::Response),
            detail,
        });
        self.events
    }
}

/// A file name for a run id (for `import --out`): the transcript file's extension is left out
/// (`runs.jsonl#r1` → `runs_r1`), characters that do not belong in a file name become `_`; an
/// id longer than [`MAX_STEM`] keeps its head and gets a hash of the whole id (FNV-1a), so
/// names stay unique and within file-system limits.
pub fn file_stem(id: &str) -> String {
    let mut bare = String::with_capacity(id.len());
    let mut rest = id;
    'scan: while !rest.is_empty() {
        for ext in [".jsonl", ".json", ".traj"] {
            if let Some(after) = rest.strip_prefix(ext) {
                if after
                    .chars()
                    .next()
                    .is_none_or(|c| !c.is_ascii_alphanumeric())
                {
                    rest = after;
                    continue 'scan;
                }
            }
        }
        let mut chars = rest.chars();
        if let Some(c) = chars.next() {
            bare.push(c);
        }
        rest = chars.as_str();
    }
    let id_for_name = if bare.is_empty() { id } else { bare.as_str() };
    let clean: String = id_for_name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.len() <= MAX_STEM {
        return clean;
    }
    let hash = id.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{}-{hash:016x}", &clean[..MAX_STEM - 17])
}

/// Longest file stem [`file_stem`] returns.
pub const MAX_STEM: usize = 120;

/// The header line of an imported trace file (`harness import --out`): the run's identity and
/// labels; the events follow, one JSON object a line, as `harness trace --jsonl` prints them.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Header {
    /// Always `harness-import`.
    pub format: String,
    /// Format version ([`HEADER_VERSION`]).
    pub version: u32,
    /// Run id.
    pub run: String,
    /// Source format.
    pub source: String,
    /// Success label, when the source has one.
    pub success: Option<bool>,
    /// Termination, when the source says.
    pub termination: Option<String>,
}

/// Version of the imported-trace header.
pub const HEADER_VERSION: u32 = 1;

/// An imported run as JSON lines: the header, then the events.
pub fn render_imported(run: &Run) -> String {
    let header = Header {
        format: "harness-import".to_owned(),
        version: HEADER_VERSION,
        run: run.id.clone(),
        source: run.source.clone(),
        success: run.success,
        termination: run.termination.clone(),
    };
    let mut out = serde_json::to_string(&header).unwrap_or_default();
    out.push('\n');
    out.push_str(&crate::trace::render_jsonl(&run.events));
    out
}

/// Read an imported trace file back (the first line a [`Header`]); `None` when the text is not
/// one. A bad event line is a located error.
pub fn read_imported(text: &str) -> Option<Result<Run, Diagnostic>> {
    let first = text.lines().next()?;
    let header: Header = serde_json::from_str(first).ok()?;
    if header.format != "harness-import" {
        return None;
    }
    if header.version > HEADER_VERSION {
        return Some(Err(located(
            1,
            1,
            format!(
                "imported trace version {} is newer than this harness reads ({HEADER_VERSION})",
                header.version
            ),
            "re-import the transcript with this harness, or update harness",
        )));
    }
    let mut events = Vec::new();
    for (i, line) in text.lines().enumerate().skip(1) {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<TimedEvent>(line) {
            Ok(e) => events.push(e),
            Err(e) => {
                return Some(Err(located(
                    i + 1,
                    e.column().max(1),
                    format!("invalid trace event: {e}"),
                    "each line after the header must be an event as `harness trace --jsonl` prints it",
                )));
            }
        }
    }
    Some(Ok(Run {
        id: header.run,
        source: header.source,
        success: header.success,
        termination: header.termination,
        events,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn f(name: &str) -> Format {
        Format::parse(name).expect("a format")
    }

    /// Every module of `src/import/` that declares a reader is in the registry, once.
    #[test]
    #[expect(
        clippy::disallowed_methods,
        reason = "a test reads the crate's own source"
    )]
    fn every_reader_is_registered() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/import");
        let mut declared = 0;
        for entry in std::fs::read_dir(&dir).expect("src/import") {
            let path = entry.expect("an entry").path();
            if path.file_name().is_some_and(|n| n == "mod.rs") {
                continue; // the registry itself
            }
            let file = if path.is_dir() {
                path.join("mod.rs")
            } else {
                path
            };
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            declared += usize::from(text.contains("pub const READER: "));
        }
        let names: std::collections::BTreeSet<&str> = FORMATS.iter().map(|r| r.name).collect();
        assert_eq!(names.len(), FORMATS.len(), "a format registered twice");
        assert_eq!(
            declared,
            FORMATS.len(),
            "a module declares a READER that import::FORMATS does not list"
        );
    }

    #[test]
    fn detects_each_format_by_shape() {
        assert_eq!(detect(&json!({"simulations": []})), Some(f("tau2")));
        assert_eq!(
            detect(&json!({"win": true, "answer_generation": {}})),
            Some(f("toolbench"))
        );
        assert_eq!(
            detect(&json!({"trajectory": [], "info": {}})),
            Some(f("swe-agent"))
        );
        assert_eq!(
            detect(&json!([{"traj": [], "reward": 1.0}])),
            Some(f("tau-bench"))
        );
        assert_eq!(
            detect(&json!([{"role": "user", "content": "hi"}])),
            Some(f("openai"))
        );
        let anth = json!({"messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "x", "input": {}}]}]});
        assert_eq!(detect(&anth), Some(f("anthropic")));
        assert_eq!(detect(&json!({"files": []})), None);
        assert_eq!(detect(&json!([1, 2])), None);
    }

    #[test]
    fn arguments_are_parsed_not_compared_as_text() {
        let a = parse_args(Some(&json!("{\"a\": 1, \"b\": 2}")));
        let b = parse_args(Some(&json!("{\"b\":2,\"a\":1}")));
        assert_eq!(crate::json::canonical(&a), crate::json::canonical(&b));
        assert_eq!(parse_args(Some(&json!("ls -la"))), json!("ls -la"));
        assert_eq!(parse_args(None), json!({}));
    }

    #[test]
    fn long_ids_get_short_unique_file_names() {
        let a = format!("{}#1", "x".repeat(300));
        let b = format!("{}#2", "x".repeat(300));
        assert_eq!(file_stem(&a).len(), MAX_STEM);
        assert_ne!(file_stem(&a), file_stem(&b));
        assert_eq!(file_stem("a/b.json#t1"), "a_b_t1");
        assert_eq!(file_stem("runs.jsonl#r1"), "runs_r1");
        assert_eq!(file_stem("a.jsonlines/x.json"), "a.jsonlines_x");
    }

    #[test]
    fn a_forced_format_of_the_wrong_shape_says_so() {
        let got = import_text(
            "[{\"traj\": []}]",
            "t.json",
            false,
            Some(f("toolbench")),
            &FailureRules::default(),
        );
        assert_eq!(
            got.errors[0].message,
            "the document is an array; a toolbench file is an object"
        );
        // tau2 takes a bare array of simulations; a string is neither.
        let got = import_text(
            "\"x\"",
            "t.json",
            false,
            Some(f("tau2")),
            &FailureRules::default(),
        );
        assert_eq!(
            got.errors[0].message,
            "the document is a string; a tau2 file is an object or an array of simulations"
        );
        let got = import_text(
            "{}",
            "t.json",
            false,
            Some(f("tau-bench")),
            &FailureRules::default(),
        );
        assert!(
            got.errors[0]
                .message
                .contains("a tau-bench file is an array of runs")
        );
    }

    #[test]
    fn truncated_json_is_located() {
        let got = import_text(
            "[{\"traj\": [\n",
            "t.json",
            false,
            None,
            &FailureRules::default(),
        );
        assert!(got.runs.is_empty());
        let e = &got.errors[0];
        assert_eq!(e.line(), 2, "{e:?}");
        assert!(
            e.hint.as_deref().is_some_and(|h| h.contains("truncated")),
            "{e:?}"
        );
    }

    #[test]
    fn imported_trace_round_trips() {
        let mut b = TraceBuilder::new("openai", "m");
        b.user("hi");
        b.response(
            "",
            vec![("c1".into(), "ls".into(), json!({"p": 1}))],
            (3, 4),
        );
        b.result("c1", "Error: no", true);
        let run = Run {
            id: "f.json#1".into(),
            source: "openai".into(),
            success: Some(false),
            termination: None,
            events: b.finish(OutcomeKind::Response, None),
        };
        let back = read_imported(&render_imported(&run)).unwrap().unwrap();
        assert_eq!(back.id, run.id);
        assert_eq!(back.events, run.events);
        assert!(read_imported("{\"role\":\"user\"}\n").is_none());
    }
}

/// Importer tests over the hand-written transcripts of `fixtures/transcripts/`.
#[cfg(test)]
mod fixture_tests {
    use super::*;
    use crate::detector::View;
    use crate::trace::Event;

    fn one(text: &str, rel: &str, jsonl: bool) -> Vec<(Run, View)> {
        let got = import_text(text, rel, jsonl, None, &FailureRules::default());
        assert!(got.errors.is_empty(), "{:?}", got.errors);
        got.runs
            .into_iter()
            .map(|r| {
                let v = View::from_events(&r.events);
                (r, v)
            })
            .collect()
    }

    #[test]
    fn tau_bench_labels_from_reward_and_errors_from_the_prefix() {
        let runs = one(
            include_str!("../../fixtures/transcripts/tau-bench/airline.json"),
            "airline.json",
            false,
        );
        let ids: Vec<&str> = runs.iter().map(|(r, _)| r.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "airline.json#task0_trial0",
                "airline.json#task1_trial0",
                "airline.json#task2_trial0"
            ]
        );
        let success: Vec<Option<bool>> = runs.iter().map(|(r, _)| r.success).collect();
        assert_eq!(success, [Some(true), Some(false), Some(true)]);
        let (_, stuck) = &runs[1];
        assert_eq!(stuck.calls.len(), 4);
        assert!(stuck.calls[..3].iter().all(|c| c.failed));
        assert!(!stuck.calls[3].failed);
        // Three spellings of the same arguments are one call.
        assert!(
            stuck.calls[0].same_call(&stuck.calls[1]) && stuck.calls[1].same_call(&stuck.calls[2])
        );
        assert_eq!(runs[0].1.items.len(), 4, "user, call, answer, user");
    }

    #[test]
    fn tau2_drops_the_users_own_calls_and_reads_flags_and_tokens() {
        let runs = one(
            include_str!("../../fixtures/transcripts/tau2/retail.json"),
            "retail.json",
            false,
        );
        assert_eq!(runs[0].0.id, "retail.json#7|trial0|aaaaaaaa");
        assert_eq!(runs[0].0.success, Some(true));
        assert_eq!(
            runs[0].1.calls.len(),
            1,
            "the user's toggle_airplane_mode is not the agent's"
        );
        assert_eq!(runs[0].1.calls[0].name, "find_user");
        assert_eq!(runs[0].1.tokens_after(0), Some(128));
        let (r, v) = &runs[1];
        assert_eq!(
            (r.success, r.termination.as_deref()),
            (Some(false), Some("too_many_errors"))
        );
        assert_eq!(v.calls.len(), 4);
        assert!(
            v.calls.iter().all(|c| c.failed),
            "`error: true` and `error: \"True\"` both flag"
        );
    }

    #[test]
    fn swe_agent_steps_are_commands_and_failures_come_from_the_observation() {
        let runs = one(
            include_str!("../../fixtures/transcripts/swe-agent/loop.traj"),
            "loop.traj",
            false,
        );
        let (r, v) = &runs[0];
        assert_eq!(
            (r.success, r.termination.as_deref()),
            (None, Some("submitted"))
        );
        let names: Vec<&str> = v.calls.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["ls", "python", "python", "python", "submit"]);
        let failed: Vec<bool> = v.calls.iter().map(|c| c.failed).collect();
        assert_eq!(failed, [false, true, true, true, false]);
        assert!(
            v.calls[1].same_call(&v.calls[3]),
            "a trailing newline does not make another command"
        );
    }

    #[test]
    fn toolbench_reads_the_last_message_list_and_the_error_field() {
        let runs = one(
            include_str!("../../fixtures/transcripts/toolbench/G1_answer/7_answer.json"),
            "G1_answer/7_answer.json",
            false,
        );
        let (r, v) = &runs[0];
        assert_eq!(
            (r.success, r.termination.as_deref()),
            (Some(false), Some("give_up_and_restart"))
        );
        assert_eq!(v.calls.len(), 4);
        let failed: Vec<bool> = v.calls.iter().map(|c| c.failed).collect();
        assert_eq!(failed, [true, true, true, false]);
        assert!(v.calls[0].same_call(&v.calls[2]));
    }

    #[test]
    fn openai_lines_are_runs_with_explicit_flags() {
        let runs = one(
            include_str!("../../fixtures/transcripts/openai/runs.jsonl"),
            "runs.jsonl",
            true,
        );
        assert_eq!(runs[0].0.id, "runs.jsonl#r1");
        assert_eq!(runs[0].0.success, Some(true));
        assert_eq!(runs[1].0.success, Some(false), "reward 0");
        assert!(
            runs[1].1.calls[0].failed,
            "is_error: true without an Error prefix"
        );
        assert_eq!(runs[1].1.calls[0].thought, "Deleting.");
    }

    #[test]
    fn a_json_lines_file_of_messages_is_one_run() {
        let runs = one(
            include_str!("../../fixtures/transcripts/anthropic/messages.jsonl"),
            "messages.jsonl",
            true,
        );
        assert_eq!(runs.len(), 1);
        let (r, v) = &runs[0];
        assert_eq!(
            (r.id.as_str(), r.source.as_str(), r.success),
            ("messages.jsonl", "anthropic", None)
        );
        let failed: Vec<bool> = v.calls.iter().map(|c| c.failed).collect();
        assert_eq!(failed, [true, true]);
        assert!(v.calls[0].same_call(&v.calls[1]));
    }

    #[test]
    fn anthropic_blocks_become_calls_and_results() {
        let runs = one(
            include_str!("../../fixtures/transcripts/anthropic/run.json"),
            "run.json",
            false,
        );
        let (r, v) = &runs[0];
        assert_eq!(r.id, "run.json#a1");
        assert_eq!(v.calls.len(), 1);
        assert_eq!(v.calls[0].key, r#"{"command":"ls"}"#);
        assert_eq!(v.calls[0].result, "a.txt");
        assert!(!v.calls[0].failed);
        assert_eq!(
            v.items.len(),
            3,
            "the tool-result message is not a user turn"
        );
        assert_eq!(v.tokens_after(0), Some(56));
    }

    #[test]
    fn otlp_traces_become_runs_per_conversation_in_start_order() {
        let runs = one(
            include_str!("../../fixtures/transcripts/otlp/several-traces.jsonl"),
            "several-traces.jsonl",
            true,
        );
        let ids: Vec<&str> = runs.iter().map(|(r, _)| r.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "several-traces.jsonl#1d2e3f405162738495a6b7c8d9e0f1a2",
                "several-traces.jsonl#conv-1042",
                "several-traces.jsonl#0af7651916cd43dd8448eb211c80319c",
            ],
            "Traceloop's trace started first; the two traces of conv-1042 are one run"
        );
        assert!(
            runs.iter()
                .all(|(r, _)| r.source == "otlp" && r.success.is_none())
        );
        // GenAI 1.37+: spans over two lines, results from execute_tool spans, a second turn.
        let (r, v) = &runs[1];
        let failed: Vec<bool> = v.calls.iter().map(|c| c.failed).collect();
        assert_eq!(failed, [true, true, false]);
        assert!(v.calls[0].same_call(&v.calls[1]));
        assert_eq!(v.calls[2].result, r#"{"id": "1042", "status": "shipped"}"#);
        let turns = r
            .events
            .iter()
            .filter(|e| matches!(e.event, Event::UserTurn { .. }))
            .count();
        assert_eq!(turns, 2);
        assert_eq!(
            v.tokens_after(0),
            Some(102 + 18 + 143 + 15 + 170 + 18 + 210 + 9)
        );
        let tool_end = r.events.iter().find_map(|e| match &e.event {
            Event::ToolCallEnd { latency_ms, .. } => Some((e.t_ms, *latency_ms)),
            _ => None,
        });
        assert_eq!(
            tool_end,
            Some((840, 20)),
            "time from the run's first span; latency from the spans"
        );
        // OpenInference: flattened messages, results from the next call's input.
        let (r, v) = &runs[2];
        assert_eq!(v.calls.len(), 2, "the last call was never seen run");
        assert!(v.calls.iter().all(|c| c.failed && c.name == "exec"));
        assert!(v.calls[0].same_call(&v.calls[1]));
        let last = r.events.iter().rev().find_map(|e| match &e.event {
            Event::ModelResponse { calls, .. } => calls.first().map(|c| c.args.clone()),
            _ => None,
        });
        assert_eq!(last.as_deref(), Some("{}"), "`{{ }}` read as `{{}}`");
        assert_eq!(r.termination.as_deref(), Some("stopped"));
        // Traceloop before 0.55: a rate-limited call between two answers.
        let (r, v) = &runs[0];
        assert_eq!(v.calls.len(), 1);
        assert_eq!(v.calls[0].result, "rainy, 14C");
        let fault = r.events.iter().find_map(|e| match &e.event {
            Event::ProviderError { fault, .. } => Some(*fault),
            _ => None,
        });
        assert_eq!(fault, Some(crate::llm::FaultKind::RateLimit));
        assert_eq!(r.termination.as_deref(), Some("response"));
    }

    #[test]
    fn otlp_messages_in_events_only_are_read() {
        let runs = one(
            include_str!("../../fixtures/transcripts/otlp/events-only.jsonl"),
            "events-only.jsonl",
            true,
        );
        assert_eq!(runs.len(), 2);
        // Log records of the old per-message events, tied to metadata-only spans.
        let (_, v) = &runs[0];
        assert_eq!(v.calls.len(), 1, "the second call was never seen run");
        assert_eq!(v.responses.len(), 2);
        assert!(v.calls[0].failed, "the tool message starts with `Error`");
        // Span events of conventions 1.26-1.27.
        let (r, v) = &runs[1];
        assert!(v.calls.is_empty());
        let text = r.events.iter().find_map(|e| match &e.event {
            Event::ModelResponse { text, .. } => text.clone(),
            _ => None,
        });
        assert_eq!(text.as_deref(), Some("Hello!"));
        assert_eq!(v.responses, [(0, 12 + 8)], "the old token names");
    }

    #[test]
    fn a_truncated_otlp_file_keeps_its_whole_lines() {
        let got = import_text(
            include_str!("../../fixtures/invalid/transcript/otlp-truncated.jsonl"),
            "t.jsonl",
            true,
            None,
            &FailureRules::default(),
        );
        assert_eq!(got.errors.len(), 1);
        let e = &got.errors[0];
        assert_eq!(e.line(), 3, "{e:?}");
        assert!(
            e.hint.as_deref().is_some_and(|h| h.contains("ends early")),
            "{e:?}"
        );
        assert_eq!(got.runs.len(), 2, "the two whole lines' traces are read");
    }

    #[test]
    fn malformed_files_are_located() {
        let got = import_text(
            include_str!("../../fixtures/invalid/transcript/tau2-messages-not-a-list.json"),
            "x.json",
            false,
            None,
            &FailureRules::default(),
        );
        let e = &got.errors[0];
        assert_eq!((e.line(), e.col()), (8, 18), "{e:?}");
        assert!(e.message.contains("simulations[0].messages"), "{e:?}");
        let got = import_text(
            include_str!("../../fixtures/invalid/transcript/openai-bad-line.jsonl"),
            "x.jsonl",
            true,
            None,
            &FailureRules::default(),
        );
        assert_eq!(got.runs.len(), 2, "the good lines are read");
        assert_eq!(got.errors.len(), 1);
        assert_eq!(got.errors[0].line(), 2);
    }
}
