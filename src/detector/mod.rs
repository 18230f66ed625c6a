//! Post-hoc loop detectors: each reads a finished run and says where it would first have fired
//! and what it would have done there (warn, strip tools, stop). The sweep (`sweep/`) scores
//! them against labelled runs; nothing here touches files or threads.
//!
//! One file per detector, each opening with what it detects, why, an example and its known
//! false positives, citing `docs/runtimes.md` Detectors (or the engine policy it reuses). Detectors read
//! a [`View`] derived from a trace: the agent's calls (name, parsed arguments and their
//! canonical form, failed flag, result text, the response they came in) and the text turns
//! between them. Positions are 0-based **call indices**: a detector "fires at call i" when it
//! would act on the run's i-th tool call (after it ran, or before, for pre-execution checks); a
//! detector that fires on a text turn fires at the index of the next call.
//!
//! [`spec`] parses `id:param=v1,v2:other=v3` into a grid of [`Setting`]s.

pub mod agentloop_similarity;
pub mod cline_identical;
pub mod consecutive_identical;
pub mod gemini_chanting;
pub mod gemini_tool_cycle;
pub mod goose_repetition;
pub mod ironclaw_duplicate;
pub mod moltis_reflex;
pub mod openhands_stuck;

use crate::json::canonical;
use crate::trace::{Event, TimedEvent};
use serde_json::Value;

/// What a detector does where it fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    /// Tell the model (a nudge, a warning, hidden feedback).
    Warn,
    /// Withhold tools (all, or the repeated one) for a call.
    StripTools,
    /// End the run (or hand it to the user).
    Stop,
}

impl Verdict {
    /// kebab-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Warn => "warn",
            Self::StripTools => "strip-tools",
            Self::Stop => "stop",
        }
    }

    /// The verdict a kebab-case name names.
    pub fn parse(name: &str) -> Option<Self> {
        [Self::Warn, Self::StripTools, Self::Stop]
            .into_iter()
            .find(|v| v.as_str() == name)
    }
}

/// Where and how a detector first fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fire {
    /// 0-based call index.
    pub at: usize,
    /// What it does there.
    pub verdict: Verdict,
}

impl Fire {
    /// Fires at `at` with `verdict`.
    pub fn new(at: usize, verdict: Verdict) -> Self {
        Self { at, verdict }
    }
}

/// One tool call of the agent.
#[derive(Debug, Clone)]
pub struct Call {
    /// Tool name.
    pub name: String,
    /// Parsed arguments.
    pub args: Value,
    /// Canonical arguments (`json::canonical`): what "same arguments" compares.
    pub key: String,
    /// Whether the call failed (or was rejected).
    pub failed: bool,
    /// Result text (output or error); empty when the run has none.
    pub result: String,
    /// The text of the response that carried the call.
    pub thought: String,
    /// 0-based index of the model response that carried it.
    pub batch: usize,
    /// The trace did not record its arguments (`args` is an empty object and says nothing).
    pub args_unknown: bool,
}

impl Call {
    /// Same tool, same parsed arguments. Calls whose arguments are unknown are the same as
    /// no call: nothing says they repeat.
    pub fn same_call(&self, other: &Call) -> bool {
        self.name == other.name
            && self.key == other.key
            && !self.args_unknown
            && !other.args_unknown
    }
}

/// One step of a run as the detectors see it.
#[derive(Debug, Clone)]
pub enum Item {
    /// A tool call (index into [`View::calls`]).
    Call(usize),
    /// A model response with text and no calls.
    Agent(String),
    /// A user message (or a new prompt).
    User(String),
}

/// The compact view of a run.
#[derive(Debug, Clone, Default)]
pub struct View {
    /// The agent's calls, in order.
    pub calls: Vec<Call>,
    /// Calls and text turns, in order.
    pub items: Vec<Item>,
    /// Per model response: calls made before it, and its tokens (input + output).
    pub responses: Vec<(usize, u64)>,
    /// Responses that asked for tools the trace did not record (`calls_unknown`) and after
    /// which the model was asked again: the run called something there that no detector
    /// sees. (A last answer's calls never ran: no view holds them, whatever the capture.)
    pub unseen: usize,
}

impl View {
    /// Derive the view from trace events. Injected defence messages are not the agent's and
    /// are left out; rejected calls count as failed calls.
    pub fn from_events(events: &[TimedEvent]) -> Self {
        let mut v = View::default();
        let mut thought = String::new();
        let mut open: Vec<(String, usize)> = Vec::new();
        v.unseen = crate::trace::unseen_answers(events);
        for e in events {
            match &e.event {
                Event::ModelResponse {
                    text,
                    calls,
                    input_tokens,
                    output_tokens,
                    ..
                } => {
                    v.responses
                        .push((v.calls.len(), input_tokens.saturating_add(*output_tokens)));
                    thought = text.clone().unwrap_or_default();
                    if calls.is_empty() && !thought.is_empty() {
                        v.items.push(Item::Agent(thought.clone()));
                    }
                }
                Event::ToolCallStart {
                    id,
                    name,
                    args,
                    args_unknown,
                } => {
                    open.push((id.clone(), v.calls.len()));
                    v.push_call(name, args, &thought, None);
                    if let Some(c) = v.calls.last_mut() {
                        c.args_unknown = *args_unknown;
                    }
                }
                Event::ToolCallRejected {
                    name, args, error, ..
                } => v.push_call(name, args, &thought, Some(error)),
                Event::ToolCallEnd {
                    id,
                    ok,
                    output,
                    error,
                    ..
                } => {
                    if let Some(at) = open.iter().position(|(i, _)| i == id) {
                        let (_, idx) = open.remove(at);
                        let c = &mut v.calls[idx];
                        c.failed = !ok;
                        c.result = output.clone().or_else(|| error.clone()).unwrap_or_default();
                    }
                }
                Event::UserTurn { text, .. } => v.items.push(Item::User(text.clone())),
                Event::Signal {
                    text: Some(text), ..
                } => v.items.push(Item::User(text.clone())),
                Event::RunStart { .. }
                | Event::Iteration { .. }
                | Event::Signal { text: None, .. }
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
                | Event::ToolCallSkipped { .. }
                | Event::ApprovalRequested { .. }
                | Event::ApprovalDecision { .. }
                | Event::TurnEnd { .. }
                | Event::StepStart { .. }
                | Event::StepEnd { .. }
                | Event::Replan { .. } => {}
            }
        }
        v
    }

    fn push_call(&mut self, name: &str, args: &Value, thought: &str, rejected: Option<&String>) {
        let batch = self.responses.len().saturating_sub(1);
        self.items.push(Item::Call(self.calls.len()));
        self.calls.push(Call {
            name: name.to_owned(),
            key: canonical(args),
            args: args.clone(),
            failed: rejected.is_some(),
            result: rejected.cloned().unwrap_or_default(),
            thought: thought.to_owned(),
            batch,
            args_unknown: false,
        });
    }

    /// Does any call of the run lack its arguments? Then detectors that compare arguments
    /// cannot judge it ([`Detector::reads_args`]).
    pub fn args_unknown(&self) -> bool {
        self.calls.iter().any(|c| c.args_unknown)
    }

    /// Tokens of the model responses after call `at` (what stopping there would have saved);
    /// `None` when the run records no tokens.
    pub fn tokens_after(&self, at: usize) -> Option<u64> {
        if self.responses.iter().all(|(_, t)| *t == 0) {
            return None;
        }
        Some(
            self.responses
                .iter()
                .filter(|(before, _)| *before > at)
                .fold(0u64, |sum, (_, t)| sum.saturating_add(*t)),
        )
    }

    /// The items in `range`, whose first call is call `offset`, as a view of their own (calls
    /// numbered from 0).
    fn part(&self, range: std::ops::Range<usize>, offset: usize) -> View {
        let mut part = View::default();
        for item in &self.items[range] {
            part.items.push(match item {
                Item::Call(c) => {
                    part.calls.push(self.calls[*c].clone());
                    Item::Call(c - offset)
                }
                Item::Agent(t) => Item::Agent(t.clone()),
                Item::User(t) => Item::User(t.clone()),
            });
        }
        let end = offset + part.calls.len();
        part.responses = self
            .responses
            .iter()
            .filter(|(before, _)| (offset..=end).contains(before))
            .map(|(before, t)| (before - offset, *t))
            .collect();
        part
    }

    /// The calls grouped by the response that carried them: (first call, end) ranges.
    pub fn batches(&self) -> Vec<std::ops::Range<usize>> {
        let mut out: Vec<std::ops::Range<usize>> = Vec::new();
        for (i, c) in self.calls.iter().enumerate() {
            match out.last_mut() {
                Some(r) if self.calls[r.start].batch == c.batch => r.end = i + 1,
                _ => out.push(i..i + 1),
            }
        }
        out
    }
}

/// A post-hoc detector with its parameters fixed.
pub trait Detector: Send + Sync {
    /// Where it first fires on `view`, if anywhere.
    fn first_fire(&self, view: &View) -> Option<Fire>;

    /// [`Detector::first_fire`], or why it could not say (a detector outside the process that
    /// failed); the built-in detectors always can.
    fn check(&self, view: &View) -> Result<Option<Fire>, String> {
        Ok(self.first_fire(view))
    }

    /// No more runs will come: a detector outside the process is told so (its input closed),
    /// so that all of them can exit at once; the built-in ones have nothing to do.
    fn close_input(&self) {}

    /// Must it see the runs one at a time in the sweep's order (a detector outside the process,
    /// which may keep state or fail part-way)? The built-in ones are pure and see them in any
    /// order, side by side.
    fn in_order(&self) -> bool {
        false
    }

    /// Does its verdict depend on the calls' arguments? A run whose arguments were not
    /// recorded ([`View::args_unknown`]) is then not scored by it. Every built-in detector but
    /// `gemini-chanting` (which reads the model's text) compares arguments; a detector outside
    /// the process is taken to.
    fn reads_args(&self) -> bool {
        true
    }
}

/// One parameter a detector takes.
#[derive(Debug, Clone, Copy)]
pub struct Param {
    /// Name (`k`, `window`).
    pub name: &'static str,
    /// Value when not given (the upstream default).
    pub default: &'static str,
    /// Values `--detector ID` sweeps when no values are given; empty: held at the default.
    pub sweep: &'static [&'static str],
    /// What it means.
    pub help: &'static str,
}

/// A detector kind: its id, parameters and constructor.
pub struct Kind {
    /// Detector id.
    pub id: &'static str,
    /// One line on what it detects.
    pub summary: &'static str,
    /// Parameters, in display order.
    pub params: &'static [Param],
    /// Build one with these parameter values (in `params` order).
    pub build: fn(&Params) -> Result<Box<dyn Detector>, String>,
    /// When its state starts over upstream (the default of the `reset` parameter every
    /// detector takes), for these parameter values.
    pub reset: fn(&Params) -> Reset,
}

/// When a detector's state starts over: at each user message (the runtime makes a new
/// detector per user message, or clears it at a new prompt) or never within a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reset {
    /// Each user message starts the detector afresh.
    Message,
    /// One detector for the whole run.
    Run,
}

impl Reset {
    /// `message` or `run`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Message => "message",
            Self::Run => "run",
        }
    }

    fn parse(text: &str) -> Result<Self, String> {
        match text {
            "message" => Ok(Self::Message),
            "run" => Ok(Self::Run),
            other => Err(format!("`reset={other}`: `message` or `run`")),
        }
    }

    /// For kinds whose lifecycle does not depend on their parameters.
    pub fn message(_: &Params) -> Self {
        Self::Message
    }

    /// For kinds whose lifecycle does not depend on their parameters.
    pub fn run(_: &Params) -> Self {
        Self::Run
    }
}

/// A detector run afresh on each stretch of the run that starts at a user message: what the
/// runtimes whose detector lives for one user message see. Its positions are the run's.
struct PerMessage(Box<dyn Detector>);

impl Detector for PerMessage {
    fn first_fire(&self, view: &View) -> Option<Fire> {
        let (mut start, mut offset) = (0, 0);
        while start < view.items.len() {
            let end = view.items[start + 1..]
                .iter()
                .position(|i| matches!(i, Item::User(_)))
                .map_or(view.items.len(), |p| start + 1 + p);
            let part = view.part(start..end, offset);
            if let Some(f) = self.0.first_fire(&part) {
                return Some(Fire::new(f.at + offset, f.verdict));
            }
            offset += part.calls.len();
            start = end;
        }
        None
    }
    fn reads_args(&self) -> bool {
        self.0.reads_args()
    }
}

/// Parameter values of one setting, in the kind's order.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// (name, value), in the kind's order.
    pub values: Vec<(&'static str, String)>,
    /// Which ones [`Params::render`] names: those given or swept, and any off its default.
    pub shown: Vec<bool>,
}

impl Params {
    /// A value as text.
    pub fn text(&self, name: &str) -> &str {
        self.values
            .iter()
            .find(|(n, _)| *n == name)
            .map_or("", |(_, v)| v.as_str())
    }

    /// A value as a count.
    pub fn count(&self, name: &str) -> Result<u32, String> {
        let v = self.text(name);
        v.parse()
            .map_err(|_| format!("`{name}={v}`: expected a whole number"))
    }

    /// A value as a number.
    pub fn number(&self, name: &str) -> Result<f64, String> {
        let v = self.text(name);
        v.parse::<f64>()
            .ok()
            .filter(|x| x.is_finite())
            .ok_or_else(|| format!("`{name}={v}`: expected a number"))
    }

    /// `k=3`, or `version=0 ao=3` for several: the parameters given or swept, and any off its
    /// default (the first one when none is).
    pub fn render(&self) -> String {
        let named: Vec<String> = self
            .values
            .iter()
            .zip(&self.shown)
            .filter(|(_, shown)| **shown)
            .map(|((n, v), _)| format!("{n}={v}"))
            .collect();
        if named.is_empty() {
            return self
                .values
                .first()
                .map_or_else(String::new, |(n, v)| format!("{n}={v}"));
        }
        named.join(" ")
    }
}

/// Every detector kind, by id.
pub fn kinds() -> &'static [Kind] {
    &[
        agentloop_similarity::KIND,
        cline_identical::KIND,
        consecutive_identical::KIND,
        gemini_chanting::KIND,
        gemini_tool_cycle::KIND,
        goose_repetition::KIND,
        ironclaw_duplicate::KIND,
        moltis_reflex::KIND,
        openhands_stuck::KIND,
    ]
}

/// A detector with one set of parameter values.
pub struct Setting {
    /// Detector id.
    pub id: &'static str,
    /// Its parameters.
    pub params: Params,
    /// The detector.
    pub detector: Box<dyn Detector>,
}

impl std::fmt::Debug for Setting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.id, self.params.render())
    }
}

/// Values of one parameter: `2,3,4`, a range `2..6` (inclusive), or a mix.
fn values(list: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for v in list.split(',').map(str::trim).filter(|v| !v.is_empty()) {
        if let Some((a, b)) = v.split_once("..") {
            let (a, b): (u32, u32) = match (a.parse(), b.trim_start_matches('=').parse()) {
                (Ok(a), Ok(b)) if a <= b && b - a <= 1000 => (a, b),
                _ => return Err(format!("`{v}`: a range is `LOW..HIGH` of whole numbers")),
            };
            out.extend((a..=b).map(|x| x.to_string()));
        } else {
            out.push(v.to_owned());
        }
    }
    if out.is_empty() {
        return Err(format!("`{list}`: no values"));
    }
    Ok(out)
}

/// Parse one `--detector` spec into its grid of settings: `ID` (the kind's default sweep),
/// `ID:param=v1,v2:other=v3` (the product of the lists; unnamed parameters at their default),
/// or `all` (every kind's default sweep).
pub fn spec(text: &str) -> Result<Vec<Setting>, String> {
    let text = text.trim();
    if text == "all" {
        let mut out = Vec::new();
        for k in kinds() {
            out.extend(spec(k.id)?);
        }
        return Ok(out);
    }
    let mut parts = text.split(':');
    let id = parts.next().unwrap_or("").trim();
    let Some(kind) = kinds().iter().find(|k| k.id == id) else {
        let known: Vec<&str> = kinds().iter().map(|k| k.id).collect();
        return Err(format!(
            "unknown detector `{id}`; known detectors: {}, or `all`",
            known.join(", ")
        ));
    };
    let mut given: Vec<(&'static str, Vec<String>)> = Vec::new();
    let mut resets: Option<Vec<Reset>> = None;
    for part in parts {
        let Some((name, list)) = part.split_once('=') else {
            return Err(format!("`{part}`: expected `param=v1,v2,…`"));
        };
        let name = name.trim();
        if name == "reset" {
            resets = Some(
                values(list)?
                    .iter()
                    .map(|v| Reset::parse(v))
                    .collect::<Result<_, _>>()?,
            );
            continue;
        }
        let Some(p) = kind.params.iter().find(|p| p.name == name) else {
            let known: Vec<&str> = kind.params.iter().map(|p| p.name).collect();
            return Err(format!(
                "`{id}` has no parameter `{name}`; its parameters: {}, and `reset` (every detector's)",
                known.join(", ")
            ));
        };
        given.push((p.name, values(list)?));
    }
    let bare = given.is_empty();
    let axes: Vec<(&'static str, Vec<String>, bool)> = kind
        .params
        .iter()
        .map(|p| {
            let named = given.iter().any(|(n, _)| *n == p.name) || (bare && !p.sweep.is_empty());
            let vals = given
                .iter()
                .find(|(n, _)| *n == p.name)
                .map(|(_, v)| v.clone())
                .unwrap_or_else(|| {
                    if bare && !p.sweep.is_empty() {
                        p.sweep.iter().map(|s| (*s).to_owned()).collect()
                    } else {
                        vec![p.default.to_owned()]
                    }
                });
            (p.name, vals, named)
        })
        .collect();
    let grid = grid(axes.iter().map(|(name, vals, _)| (*name, vals.as_slice())));
    let resets: Vec<Option<Reset>> = match resets {
        Some(r) => r.into_iter().map(Some).collect(),
        None => vec![None],
    };
    let mut out = Vec::new();
    for values in grid {
        for reset in &resets {
            let mut shown: Vec<bool> = kind
                .params
                .iter()
                .zip(&values)
                .zip(&axes)
                .map(|((p, (_, v)), (_, _, named))| *named || v != p.default)
                .collect();
            let mut params = Params {
                values: values.clone(),
                shown: shown.clone(),
            };
            let detector =
                (kind.build)(&params).map_err(|e| format!("{id}:{}: {e}", params.render()))?;
            // `reset` is named only when given: the upstream lifecycle is the default.
            let reset = match reset {
                Some(r) => {
                    params.values.push(("reset", r.as_str().to_owned()));
                    shown.push(true);
                    params.shown = shown;
                    *r
                }
                None => (kind.reset)(&params),
            };
            let detector: Box<dyn Detector> = match reset {
                Reset::Message => Box::new(PerMessage(detector)),
                Reset::Run => detector,
            };
            out.push(Setting {
                id: kind.id,
                params,
                detector,
            });
        }
    }
    Ok(out)
}

/// Every combination of the axes' values, in order (the first axis slowest): the settings a
/// spec's lists give.
pub fn grid<'a>(
    axes: impl IntoIterator<Item = (&'static str, &'a [String])>,
) -> Vec<Vec<(&'static str, String)>> {
    let mut grid: Vec<Vec<(&'static str, String)>> = vec![Vec::new()];
    for (name, values) in axes {
        grid = grid
            .into_iter()
            .flat_map(|prefix| {
                values.iter().map(move |v| {
                    let mut p = prefix.clone();
                    p.push((name, v.clone()));
                    p
                })
            })
            .collect();
    }
    grid
}

/// Order settings by detector id, then parameter values (numerically where both are numbers).
pub fn compare_settings(a: &Setting, b: &Setting) -> std::cmp::Ordering {
    a.id.cmp(b.id).then_with(|| {
        for ((_, x), (_, y)) in a.params.values.iter().zip(&b.params.values) {
            let o = match (x.parse::<f64>(), y.parse::<f64>()) {
                (Ok(x), Ok(y)) => x.total_cmp(&y),
                _ => x.cmp(y),
            };
            if o.is_ne() {
                return o;
            }
        }
        std::cmp::Ordering::Equal
    })
}

/// Test helpers: build views from a compact description.
#[cfg(test)]
pub(crate) mod testing {
    use super::{Call, Item, View};
    use crate::json::canonical;
    use serde_json::Value;

    /// A builder of views for detector tests.
    #[derive(Default)]
    pub struct V(pub View);

    impl V {
        /// A response with one call.
        pub fn call(mut self, name: &str, args: Value, failed: bool, result: &str) -> Self {
            let batch = self.0.responses.len();
            self.0.responses.push((self.0.calls.len(), 10));
            self.push(name, args, failed, result, batch);
            self
        }

        /// A response with several calls `(name, args, failed, result)`.
        pub fn batch(mut self, calls: &[(&str, Value, bool, &str)]) -> Self {
            let batch = self.0.responses.len();
            self.0.responses.push((self.0.calls.len(), 10));
            for (n, a, f, r) in calls {
                self.push(n, a.clone(), *f, r, batch);
            }
            self
        }

        fn push(&mut self, name: &str, args: Value, failed: bool, result: &str, batch: usize) {
            self.0.items.push(Item::Call(self.0.calls.len()));
            self.0.calls.push(Call {
                name: name.to_owned(),
                key: canonical(&args),
                args,
                failed,
                result: result.to_owned(),
                thought: String::new(),
                batch,
                args_unknown: false,
            });
        }

        /// The last call's arguments were not recorded.
        pub fn blind(mut self) -> Self {
            if let Some(c) = self.0.calls.last_mut() {
                c.args = Value::Object(serde_json::Map::new());
                c.key = canonical(&c.args);
                c.args_unknown = true;
            }
            self
        }

        /// An agent text turn.
        pub fn say(mut self, text: &str) -> Self {
            self.0.responses.push((self.0.calls.len(), 10));
            self.0.items.push(Item::Agent(text.to_owned()));
            self
        }

        /// A user turn.
        pub fn user(mut self, text: &str) -> Self {
            self.0.items.push(Item::User(text.to_owned()));
            self
        }

        /// `n` identical successful calls.
        pub fn repeat(
            mut self,
            n: usize,
            name: &str,
            args: &Value,
            failed: bool,
            result: &str,
        ) -> Self {
            for _ in 0..n {
                self = self.call(name, args.clone(), failed, result);
            }
            self
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_without_their_arguments_repeat_nothing_and_say_so() {
        use testing::V;
        let json = serde_json::json!({});
        let blind = (0..6).fold(V::default(), |v, _| {
            v.call("exec", json.clone(), true, "exit 1").blind()
        });
        let known = (0..6).fold(V::default(), |v, _| {
            v.call("exec", json.clone(), true, "exit 1")
        });
        assert!(blind.0.args_unknown() && !known.0.args_unknown());
        assert!(!blind.0.calls[0].same_call(&blind.0.calls[1]));
        assert!(known.0.calls[0].same_call(&known.0.calls[1]));
        // Every setting that compares arguments says so; the one that reads text does not,
        // also when it starts over at each user message.
        for s in spec("all").unwrap() {
            assert_eq!(
                s.detector.reads_args(),
                s.id != "gemini-chanting",
                "{}",
                s.id
            );
        }
        let chanting = spec("gemini-chanting:reset=message").unwrap();
        assert!(!chanting[0].detector.reads_args());
        // Six identical failed calls fire; six calls whose arguments nobody knows do not.
        let consecutive = &spec("consecutive-identical:k=3").unwrap()[0];
        assert!(consecutive.detector.first_fire(&known.0).is_some());
        assert!(consecutive.detector.first_fire(&blind.0).is_none());
    }

    #[test]
    fn a_bare_id_sweeps_its_default_grid_and_lists_expand() {
        let s = spec("consecutive-identical").unwrap();
        assert_eq!(s.len(), 5);
        let s = spec("moltis-reflex:window=2,3,4").unwrap();
        let rendered: Vec<String> = s.iter().map(|s| s.params.render()).collect();
        assert_eq!(rendered, ["window=2", "window=3", "window=4"]);
        let s = spec("openhands-stuck:version=0,1:ao=3..4").unwrap();
        assert_eq!(s.len(), 4);
        assert!(s[0].params.render().contains("version=0"));
    }

    #[test]
    fn bad_specs_say_what_is_wrong() {
        assert!(spec("nope").unwrap_err().contains("known detectors"));
        assert!(
            spec("moltis-reflex:k=3")
                .unwrap_err()
                .contains("its parameters: window")
        );
        assert!(
            spec("consecutive-identical:k=x")
                .unwrap_err()
                .contains("whole number")
        );
        assert!(
            spec("consecutive-identical:k=4..2")
                .unwrap_err()
                .contains("range")
        );
    }

    #[test]
    fn settings_order_numerically() {
        let mut s = spec("consecutive-identical:k=10,2,3").unwrap();
        s.sort_by(compare_settings);
        let r: Vec<String> = s.iter().map(|s| s.params.render()).collect();
        assert_eq!(r, ["k=2", "k=3", "k=10"]);
    }

    #[test]
    fn view_matches_results_to_calls_and_counts_tokens() {
        use crate::llm::Finish;
        use crate::trace::CallSummary;
        let args = serde_json::json!({"p": "/"});
        let response =
            |text: &str, calls: Vec<CallSummary>, tokens: (u64, u64)| Event::ModelResponse {
                finish: if calls.is_empty() {
                    Finish::Stop
                } else {
                    Finish::ToolUse
                },
                text: Some(text.to_owned()),
                calls,
                input_tokens: tokens.0,
                output_tokens: tokens.1,
                latency_ms: 0,
                anomaly: None,
                chunks: 0,
                tokens_unknown: false,
                calls_unknown: false,
            };
        let events: Vec<TimedEvent> = [
            Event::UserTurn {
                turn: 1,
                text: "go".to_owned(),
            },
            response(
                "looking",
                vec![CallSummary {
                    id: "a".to_owned(),
                    name: "ls".to_owned(),
                    args: crate::json::compact(&args),
                    args_unknown: false,
                }],
                (5, 5),
            ),
            Event::ToolCallStart {
                id: "a".to_owned(),
                name: "ls".to_owned(),
                args: args.into(),
                args_unknown: false,
            },
            Event::ToolCallEnd {
                id: "a".to_owned(),
                name: "ls".to_owned(),
                ok: false,
                output: None,
                error: Some("Error: nope".to_owned()),
                latency_ms: 0,
                rule: None,
            },
            response("done", vec![], (7, 3)),
        ]
        .into_iter()
        .map(|event| TimedEvent { t_ms: 0, event })
        .collect();
        let v = View::from_events(&events);
        assert_eq!(v.calls.len(), 1);
        assert!(v.calls[0].failed);
        assert_eq!(v.calls[0].thought, "looking");
        assert_eq!(v.items.len(), 3);
        assert_eq!(v.tokens_after(0), Some(10));
    }
}
