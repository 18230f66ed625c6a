//! Recorded conversations served back to an agent (`harness serve CASSETTE`, `harness exec
//! CASSETTE… -- COMMAND`): each request is answered with the recorded answer while it matches
//! the recorded request, under the strict match `harness run` replays cassettes with
//! (canonical JSON; the volatile fields and the cassette's `replay.ignore` paths not counted;
//! a `[REDACTED]` secret matching any text). The first request that does not match is the
//! **divergence**: its number, the first differing JSON path, a diff against the nearest
//! recorded request, and a plain reading when it has a known shape (tools withheld or removed,
//! a message appended or inserted, a tool result changed). What follows is the
//! [`OnDivergence`] policy's.
//!
//! A conversation is bound to a cassette by its first request: the first unused cassette
//! whose first request it matches, else the nearest unused one (the conversation then
//! diverges at request 1), else the nearest of all.
//!
//! What a recorded exchange serves ([`replayed`]: status, kept headers, the body or the events)
//! and which ids it served ([`served_ids`], which `proxy` also groups conversations by) are
//! read here, pure.
//!
//! [`promote_agent`] turns an agent's cassette into an editable scenario: the recorded
//! answers as turns, the results the agent sent back as its tools' outcomes (by arguments where
//! the same arguments always got the same result, else in call order).

use super::{AnswerBody, HttpAnswer, refusal};
use crate::failure::FailureRules;
use crate::llm::{Message, Purpose, Role};
use crate::provider::Provider;
use crate::provider::matching::{Matching, Part};
use crate::provider::{Api, WireRequest};
use crate::record::cassette::{Cassette, Exchange, HEADER_ALLOW_LIST, Outcome};
use crate::record::player::{changed_lines, first_difference, pretty, same};
use crate::record::scrub::Scrubber;
use crate::scenario::{OutcomeDef, Scenario, ToolDef, called_tool};
use serde_json::Value;
use std::path::PathBuf;

/// What happens once a conversation diverges from its recording.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum OnDivergence {
    /// The request is refused (the conversation ends) and the case fails.
    #[default]
    Fail,
    /// The request is refused (the conversation ends); expectations and goldens judge.
    Stop,
    /// The recorded answers keep coming in order, whatever is asked: the stubborn model that
    /// ignores the agent's intervention.
    Continue,
    /// The conversation is handed to this scenario's scripted model from that request on.
    Script(PathBuf),
}

impl std::str::FromStr for OnDivergence {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "fail" => Ok(Self::Fail),
            "stop" => Ok(Self::Stop),
            "continue" => Ok(Self::Continue),
            _ => match s.strip_prefix("script:") {
                Some(p) if !p.is_empty() => Ok(Self::Script(PathBuf::from(p))),
                _ => Err(format!(
                    "`{s}` is not a policy: use fail, stop, continue or script:SCENARIO"
                )),
            },
        }
    }
}

/// Where a replayed conversation departed from its recording.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Divergence {
    /// The request of the conversation (1-based).
    pub request: u32,
    /// The first differing JSON path (`/` when the whole request differs).
    pub at: String,
    /// The difference in plain words.
    pub reading: String,
    /// The nearest recorded exchange (1-based), which the diff is against.
    pub nearest: usize,
    /// A unified diff of the nearest recorded request against the one sent (secrets scrubbed).
    pub diff: String,
}

impl Divergence {
    /// The report: a headline and the diff.
    pub fn report(&self, cassette: &str) -> String {
        format!(
            "diverged at request {} from {cassette}: {} (first difference at `{}`; diff against recorded request {}):\n{}",
            self.request, self.reading, self.at, self.nearest, self.diff
        )
    }
}

/// One cassette ready to serve.
#[derive(Debug)]
pub struct ServedCassette {
    /// Its case id (the cassette's path id).
    pub id: String,
    /// The recording.
    pub cassette: Cassette,
    /// How its requests are compared (with its own `replay.ignore`).
    matching: Matching,
    /// Each recorded request as the match compares it.
    stripped: Vec<Value>,
}

impl ServedCassette {
    /// A cassette to serve under case id `id`, its requests compared as `matching` says (and
    /// leaving out the cassette's own `replay.ignore` paths).
    pub fn new(id: String, cassette: Cassette, matching: &Matching) -> Self {
        let matching = matching.ignoring(&cassette.replay.ignore);
        let stripped = cassette
            .exchanges
            .iter()
            .map(|e| matching.canonical(&e.request))
            .collect();
        Self {
            id,
            cassette,
            matching,
            stripped,
        }
    }

    /// The API it was recorded on.
    pub fn api(&self) -> Api {
        self.cassette
            .agent
            .as_ref()
            .map_or(Api::from(self.cassette.provider), |a| a.api)
    }

    /// Does the `n`-th (0-based) recorded request match `actual`?
    pub fn matches(&self, n: usize, actual: &Value) -> bool {
        self.stripped
            .get(n)
            .is_some_and(|r| same(r, &self.matching.canonical(actual)))
    }

    /// The divergence of `actual`, sent as request `n + 1`, from the recording.
    pub fn diverge(&self, n: usize, actual: &Value, scrubber: &Scrubber) -> Divergence {
        let sent = actual;
        let actual = self.matching.canonical(actual);
        let request = u32::try_from(n + 1).unwrap_or(u32::MAX);
        let nearest = self
            .stripped
            .iter()
            .enumerate()
            .map(|(i, r)| (changed_lines(r, &actual), i != n, i))
            .min()
            .map(|(_, _, i)| i);
        let Some(i) = nearest else {
            return Divergence {
                request,
                at: "/".to_owned(),
                reading: "the recording holds no request".to_owned(),
                nearest: 0,
                diff: String::new(),
            };
        };
        if n >= self.stripped.len() {
            let reading = format!(
                "the recording ends after {} requests; the agent sent another",
                self.stripped.len()
            );
            return Divergence {
                request,
                at: "/".to_owned(),
                reading,
                nearest: i + 1,
                diff: String::new(),
            };
        }
        // The reading compares with the request expected here; the diff with the nearest.
        let expected = &self.stripped[n];
        let at = first_difference(expected, &actual, String::new())
            .map(|p| if p.is_empty() { "/".to_owned() } else { p })
            .unwrap_or_else(|| "/".to_owned());
        let at = as_sent(&at, expected, &actual, sent);
        let reading = reading(self.api(), expected, &actual)
            .unwrap_or_else(|| format!("the request differs at `{at}`"));
        let (a, b) = (pretty(&self.stripped[i]), pretty(&actual));
        let diff = similar::TextDiff::from_lines(&a, &b)
            .unified_diff()
            .context_radius(3)
            .header(&format!("recorded request {}", i + 1), "sent")
            .to_string();
        Divergence {
            request,
            at,
            reading,
            nearest: i + 1,
            diff: scrubber.scrub(&diff),
        }
    }

    /// How far the first recorded request is from `actual` (0: it matches).
    fn distance(&self, actual: &Value) -> usize {
        match self.stripped.first() {
            Some(_) if self.matches(0, actual) => 0,
            Some(r) => 1 + changed_lines(r, &self.matching.canonical(actual)),
            None => usize::MAX,
        }
    }
}

/// A difference's path in the canonical request (whose tools are sorted by name) as a path in
/// the request as the agent sent it: `/tools/N…` points at that tool where the agent put it,
/// and at the whole tool when the recording has another one there (one added or removed).
fn as_sent(at: &str, expected: &Value, canonical: &Value, sent: &Value) -> String {
    let Some(rest) = at.strip_prefix("/tools/") else {
        return at.to_owned();
    };
    let (index, tail) = rest.split_once('/').map_or((rest, ""), |(i, t)| (i, t));
    let name_of = |t: &Value| {
        t.pointer("/function/name")
            .or_else(|| t.get("name"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let position = index.parse::<usize>().ok();
    let name = position
        .and_then(|i| canonical.get("tools")?.get(i))
        .and_then(name_of);
    let same_tool = name.is_some()
        && position
            .and_then(|i| expected.get("tools")?.get(i))
            .and_then(name_of)
            == name;
    let tail = if same_tool { tail } else { "" };
    let found = name.and_then(|name| {
        sent.get("tools")?
            .as_array()?
            .iter()
            .position(|t| name_of(t).as_deref() == Some(name.as_str()))
    });
    match found {
        Some(i) if tail.is_empty() => format!("/tools/{i}"),
        Some(i) => format!("/tools/{i}/{tail}"),
        None => at.to_owned(),
    }
}

/// The cassettes of a replay session and its divergence policy.
#[derive(Debug)]
pub struct Replay {
    /// The cassettes, in the order given.
    pub cassettes: Vec<ServedCassette>,
    /// What follows a divergence.
    pub on_divergence: OnDivergence,
    /// The scenario a diverged conversation goes to (`script:`), loaded.
    pub script: Option<crate::scenario::Case>,
    /// Scrubs every request as it arrives, and the diffs reported.
    pub scrubber: Scrubber,
    /// The proxy's record mode this replay serves (which requests go to the live provider
    /// instead); `None` for `exec`, which never goes live.
    pub record_mode: Option<RecordMode>,
}

/// The proxy's record modes that replay (`all` replays nothing). vcrpy's vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordMode {
    /// Never go live: a request the recording does not answer is refused.
    None,
    /// Nothing goes live while recordings are there (vcrpy's `once`): a request no
    /// recording holds, a new conversation's first included, is refused.
    Once,
    /// A new conversation, and a recorded one from its first divergence on, go live: past the
    /// end of its recording the cassette is extended; from inside it, the conversation is
    /// added beside the recording.
    NewEpisodes,
}

impl RecordMode {
    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Once => "once",
            Self::NewEpisodes => "new_episodes",
        }
    }
}

impl Replay {
    /// The unused cassette whose first request `first` matches, if any (`used` counts each
    /// cassette's conversations).
    pub fn starting_with(&self, used: &[usize], first: &Value) -> Option<usize> {
        (0..self.cassettes.len()).find(|&i| {
            used.get(i).copied().unwrap_or(0) == 0 && self.cassettes[i].distance(first) == 0
        })
    }

    /// Another cassette a conversation that played `from` up to its `n`-th request (0-based)
    /// can go on with: one whose first `n` requests are `from`'s and whose `n`-th matches
    /// `actual` (a branch `new_episodes` recorded beside it from a divergence).
    pub fn branch(&self, from: usize, n: usize, actual: &Value) -> Option<usize> {
        let played = self.cassettes.get(from)?;
        (0..self.cassettes.len()).find(|&i| {
            let other = &self.cassettes[i];
            i != from
                && other.matches(n, actual)
                && (0..n).all(|k| {
                    played
                        .cassette
                        .exchanges
                        .get(k)
                        .is_some_and(|e| other.matches(k, &e.request))
                })
        })
    }

    /// The cassette a conversation starting with `first` plays: the first unused one it
    /// matches, else the nearest unused, else the nearest; `used` counts each's conversations.
    pub fn bind(&self, used: &[usize], first: &Value) -> usize {
        let scored: Vec<(usize, usize)> = self
            .cassettes
            .iter()
            .enumerate()
            .map(|(i, t)| (t.distance(first), i))
            .collect();
        let unused = scored
            .iter()
            .filter(|(_, i)| used.get(*i).copied().unwrap_or(0) == 0)
            .min();
        unused
            .or_else(|| scored.iter().min())
            .map_or(0, |(_, i)| *i)
    }
}

/// The difference between a recorded request and the one sent, in plain words, when it has a
/// known shape.
pub fn reading(api: Api, recorded: &Value, actual: &Value) -> Option<String> {
    let r = api.parse_request(recorded).ok()?;
    let a = api.parse_request(actual).ok()?;
    let mut said = Vec::new();
    let names =
        |w: &WireRequest| -> Vec<String> { w.tools.iter().map(|t| t.name.clone()).collect() };
    let (rt, at) = (names(&r), names(&a));
    if at.is_empty() && !rt.is_empty() {
        said.push(format!(
            "the agent withheld its tools (the recording offered {})",
            rt.join(", ")
        ));
    } else {
        let removed: Vec<&String> = rt.iter().filter(|t| !at.contains(t)).collect();
        let added: Vec<&String> = at.iter().filter(|t| !rt.contains(t)).collect();
        if !removed.is_empty() {
            said.push(format!(
                "tools removed from the request: {}",
                join(&removed)
            ));
        }
        if !added.is_empty() {
            said.push(format!("tools added to the request: {}", join(&added)));
        }
        if removed.is_empty() && added.is_empty() && r.tools != a.tools {
            said.push("a tool's description or schema changed".to_owned());
        }
    }
    let same_message = |x: &Message, y: &Message| {
        x.role == y.role && x.content == y.content && x.tool_calls == y.tool_calls
    };
    let common = r
        .messages
        .iter()
        .zip(&a.messages)
        .take_while(|(x, y)| same_message(x, y))
        .count();
    let (rm, am) = (&r.messages, &a.messages);
    // The same messages, only in another order (beyond what matching forgives).
    let reordered = common < rm.len() && rm.len() == am.len() && {
        let mut left: Vec<&Message> = rm[common..].iter().collect();
        am[common..].iter().all(|y| {
            left.iter()
                .position(|x| same_message(x, y))
                .map(|i| left.swap_remove(i))
                .is_some()
        })
    };
    if reordered {
        said.push("the agent sent the same messages in another order".to_owned());
    } else if common == rm.len() && am.len() > common {
        for m in &am[common..] {
            said.push(format!(
                "the agent appended {} message{}",
                role_phrase(m.role),
                quote(&m.content)
            ));
        }
    } else if common < rm.len() && common < am.len() {
        let (x, y) = (&rm[common], &am[common]);
        let inserted =
            am.len() > rm.len() && am.get(common + 1).is_some_and(|m| same_message(x, m));
        said.push(match (x.role, y.role) {
            _ if inserted && matches!(y.role, Role::User | Role::System) => format!(
                "the agent inserted {} message{}",
                role_phrase(y.role),
                quote(&y.content)
            ),
            (Role::Tool, Role::Tool) => format!(
                "a tool result changed:{} became{}",
                quote(&x.content),
                quote(&y.content)
            ),
            (Role::System, Role::System) => "the system prompt changed".to_owned(),
            (Role::User, Role::User)
                if common == 0 || rm[..common].iter().all(|m| m.role == Role::System) =>
            {
                format!(
                    "the task changed:{} became{}",
                    quote(&x.content),
                    quote(&y.content)
                )
            }
            (Role::User, Role::User) => format!(
                "a user message changed:{} became{}",
                quote(&x.content),
                quote(&y.content)
            ),
            (Role::Assistant, Role::Assistant) => {
                "the agent's history of the model's answers differs from what was served".to_owned()
            }
            _ => format!(
                "the agent sent {} message where the recording has {} message",
                role_phrase(y.role),
                role_phrase(x.role)
            ),
        });
    } else if am.len() < rm.len() {
        said.push(format!(
            "the agent sent {} messages where the recording has {}",
            am.len(),
            rm.len()
        ));
    }
    if r.options.model != a.options.model {
        said.push(format!(
            "the model changed: `{}` became `{}`",
            r.options.model, a.options.model
        ));
    }
    if r.options.stream != a.options.stream {
        said.push(if a.options.stream {
            "the agent asked for a stream".to_owned()
        } else {
            "the agent stopped asking for a stream".to_owned()
        });
    }
    said.extend(params_changed(recorded, actual));
    (!said.is_empty()).then(|| said.join("; "))
}

/// The request parameters (sampling, limits: [`Part::Params`]) that differ, in plain words;
/// `stream` is said apart.
fn params_changed(recorded: &Value, actual: &Value) -> Vec<String> {
    let (Some(r), Some(a)) = (recorded.as_object(), actual.as_object()) else {
        return Vec::new();
    };
    let mut keys: Vec<&String> = r.keys().chain(a.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| Part::of_key(k) == Part::Params && k.as_str() != "stream")
        .filter_map(|k| match (r.get(k), a.get(k)) {
            (Some(x), Some(y)) if x != y => Some(format!("`{k}` changed: {x} became {y}")),
            (Some(x), None) => Some(format!("`{k}` ({x}) is no longer sent")),
            (None, Some(y)) => Some(format!("`{k}` ({y}) is sent, where the recording had none")),
            _ => None,
        })
        .collect()
}

fn join(v: &[&String]) -> String {
    v.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
}

fn role_phrase(role: Role) -> &'static str {
    match role {
        Role::System => "a system",
        Role::User => "a user",
        Role::Assistant => "an assistant",
        Role::Tool => "a tool",
    }
}

/// ` «text»`, cut to 80 characters, or nothing for an empty text.
fn quote(text: &str) -> String {
    let text = text.trim();
    if text.is_empty() {
        return String::new();
    }
    let cut: String = text.chars().take(80).collect();
    let more = if cut.len() < text.len() { "…" } else { "" };
    format!(" «{}{more}»", cut.replace('\n', " "))
}

/// An agent's cassette as an editable scenario: its first request's system prompt, task and
/// tools; the recorded answers as the model's turns (with `max_iterations` as many); each
/// tool's outcomes the results the agent sent back, read as failed by `rules`, by arguments
/// where unambiguous, else in call order ([`crate::scenario::recorded_outcomes`], as `import
/// --as scenario` builds them). Its profile is `none`.
pub fn promote_agent(c: &Cassette, source: &str, rules: &FailureRules) -> Option<Scenario> {
    let agent = c.agent.as_ref()?;
    let api = agent.api;
    let requests: Vec<Option<WireRequest>> = c
        .exchanges
        .iter()
        .map(|e| api.parse_request(&e.request).ok())
        .collect();
    let first = requests.first()?.as_ref()?;
    let system = first
        .messages
        .iter()
        .filter(|m| m.role == Role::System)
        .map(|m| m.content.as_str())
        .collect::<Vec<_>>()
        .join("\n\n");
    let user = first
        .messages
        .iter()
        .find(|m| m.role == Role::User)
        .map(|m| m.content.clone())
        .unwrap_or_default();
    let mut tools: Vec<ToolDef> = first
        .tools
        .iter()
        .map(|t| ToolDef::open(&t.name, &t.description, t.schema.clone()))
        .collect();
    // Each tool's results in call order: the call's arguments (when a table holds them) and
    // what the agent sent back.
    let mut recorded: std::collections::BTreeMap<String, Vec<(Option<Value>, OutcomeDef)>> =
        Default::default();
    for (k, ex) in c.exchanges.iter().enumerate() {
        let super::Reply::Answer(r) = reply_of(ex, c.api(), 0) else {
            continue;
        };
        let Some(Some(next)) = requests.get(k + 1) else {
            continue;
        };
        // The results the agent sent back for these calls: the tool messages after the ones
        // this request already had.
        let before = requests[k].as_ref().map_or(0, |q| {
            q.messages.iter().filter(|m| m.role == Role::Tool).count()
        });
        let mut flags = next.results.iter().skip(before);
        let results: Vec<&Message> = next
            .messages
            .iter()
            .filter(|m| m.role == Role::Tool)
            .skip(before)
            .collect();
        for (call, result) in r.tool_calls.iter().zip(results) {
            let args = match &call.arguments {
                crate::llm::Arguments::Parsed(v) => {
                    Some(Value::clone(v)).filter(|v| !crate::scenario::holds_null(v))
                }
                crate::llm::Arguments::Raw(_) => None,
            };
            let flag = flags.next().and_then(|f| f.is_error);
            let failed = rules.classify(flag, &result.content).is_some();
            let outcome = OutcomeDef {
                ok: (!failed).then(|| result.content.clone()),
                error: failed.then(|| result.content.clone()),
                ..OutcomeDef::default()
            };
            called_tool(&mut tools, &call.name);
            recorded
                .entry(call.name.clone())
                .or_default()
                .push((args, outcome));
        }
    }
    for (name, results) in &recorded {
        called_tool(&mut tools, name).outcomes = crate::scenario::recorded_outcomes(results);
    }
    for t in &mut tools {
        // A call past the recording fails as an unknown one would.
        t.default = Some(OutcomeDef::no_result());
    }
    let turns = c
        .exchanges
        .iter()
        .filter(|e| e.purpose == Purpose::Turn)
        .count();
    let mut config = serde_json::Map::new();
    config.insert("max_iterations".to_owned(), serde_json::json!(turns.max(1)));
    let command = if agent.command.is_empty() {
        "an agent".to_owned()
    } else {
        format!("`{}`", agent.command.join(" "))
    };
    let mut scenario = Scenario::recorded(
        "recorded",
        vec!["recorded".to_owned()],
        format!(
            "Promoted from {source}: conversation {} of {command} on {} ({} exchanges).\n\n{}",
            agent.conversation,
            c.model,
            c.exchanges.len(),
            crate::scenario::RECORDED_ASSUMPTIONS,
        ),
    );
    scenario.config = config;
    scenario.system = system;
    scenario.user = user;
    scenario.tools = tools;
    crate::record::promote::script_turns(c, &mut scenario);
    Some(scenario)
}

/// What a recorded exchange answered, as the agent read it (a stream assembled into its text
/// and calls), with this virtual latency.
pub fn reply_of(ex: &Exchange, api: Api, latency_ms: u64) -> super::Reply {
    match ex.outcome(api, latency_ms) {
        Outcome::Response(r) => match super::served_answer(r.clone(), ex.chunks.is_some()) {
            Ok((whole, _)) => super::Reply::Answer(whole),
            Err(_) => super::Reply::Answer(r),
        },
        Outcome::Fault(f) => super::Reply::Fault(f),
        Outcome::Fatal(m) => super::Reply::NoAnswer(m),
    }
}

/// The ids an answer served (its own id, its call ids): what a later request echoes.
pub fn served_ids(ex: &Exchange) -> Vec<String> {
    let mut ids = Vec::new();
    let values: Vec<Value> = match &ex.chunks {
        Some(chunks) => chunks
            .iter()
            .filter_map(|c| serde_json::from_str::<Value>(&c.data).ok())
            .collect(),
        None => ex.body.iter().cloned().collect(),
    };
    for v in &values {
        for p in ["/id", "/message/id", "/response/id", "/responseId"] {
            if let Some(id) = v.pointer(p).and_then(Value::as_str) {
                ids.push(id.to_owned());
            }
        }
        // Call ids in bodies, stream deltas and Responses items.
        collect_call_ids(v, &mut ids);
    }
    ids.retain(|i| !i.is_empty());
    ids.sort();
    ids.dedup();
    ids
}

/// Every `id` and `call_id` of a tool call, tool use or function call item in `v`, and the id
/// of a Gemini `functionCall`.
fn collect_call_ids(v: &Value, ids: &mut Vec<String>) {
    match v {
        Value::Object(o) => {
            let is_call = o.get("type").and_then(Value::as_str).is_some_and(|t| {
                matches!(
                    t,
                    "function" | "tool_use" | "function_call" | "server_tool_use"
                )
            }) || o.contains_key("function");
            if is_call {
                for k in ["id", "call_id"] {
                    if let Some(id) = o.get(k).and_then(Value::as_str) {
                        ids.push(id.to_owned());
                    }
                }
            }
            // A Gemini `functionCall` part's id, when it has one.
            if let Some(id) = o
                .get("functionCall")
                .and_then(|c| c.get("id"))
                .and_then(Value::as_str)
            {
                ids.push(id.to_owned());
            }
            o.values().for_each(|x| collect_call_ids(x, ids));
        }
        Value::Array(a) => a.iter().for_each(|x| collect_call_ids(x, ids)),
        _ => {}
    }
}

/// The served shape of a recorded exchange, as it was passed on: status, the kept headers,
/// the body or the events (a cut stream is cut again).
pub fn replayed(ex: &Exchange, provider: Provider) -> HttpAnswer {
    let mut headers = Vec::new();
    for (name, value) in &ex.headers {
        if let Some(n) = HEADER_ALLOW_LIST
            .iter()
            .find(|h| **h == name.as_str() && **h != "content-type")
        {
            headers.push((*n, value.clone()));
        }
    }
    let status = ex.status.unwrap_or(502);
    let body = match &ex.chunks {
        Some(_) => AnswerBody::Events {
            events: ex.events(),
            latency_ms: ex.elapsed_ms,
            cut: ex.error.is_some(),
        },
        None => match &ex.body {
            Some(b) => AnswerBody::Json(b.clone()),
            None => {
                return refusal(
                    provider,
                    502,
                    &ex.error
                        .as_ref()
                        .map_or("the recorded answer is empty".to_owned(), |e| {
                            e.message.clone()
                        }),
                );
            }
        },
    };
    HttpAnswer {
        status,
        headers,
        body,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn req(messages: Value, tools: bool) -> Value {
        let mut v = json!({"model": "m", "messages": messages});
        if tools {
            v["tools"] = json!([{"type": "function", "function": {"name": "exec", "description": "Run", "parameters": {"type": "object"}}}]);
        }
        v
    }

    #[test]
    fn known_shapes_are_read_in_plain_words() {
        let base = json!([{"role": "user", "content": "List the files."}, {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "exec", "arguments": "{}"}}]}, {"role": "tool", "tool_call_id": "c1", "content": "Error: missing"}]);
        let recorded = req(base.clone(), true);
        let api = Api::ChatCompletions;
        assert_eq!(
            reading(api, &recorded, &req(base.clone(), false)).as_deref(),
            Some("the agent withheld its tools (the recording offered exec)")
        );
        let mut nudged = base.as_array().unwrap().clone();
        nudged.push(json!({"role": "user", "content": "LOOP DETECTED: stop"}));
        assert_eq!(
            reading(api, &recorded, &req(json!(nudged), true)).as_deref(),
            Some("the agent appended a user message «LOOP DETECTED: stop»")
        );
        let mut changed = base.as_array().unwrap().clone();
        changed[2]["content"] = json!("a.txt");
        assert_eq!(
            reading(api, &recorded, &req(json!(changed), true)).as_deref(),
            Some("a tool result changed: «Error: missing» became «a.txt»")
        );
        assert_eq!(reading(api, &recorded, &recorded), None);
        assert_eq!(
            "script:x.toml".parse::<OnDivergence>(),
            Ok(OnDivergence::Script("x.toml".into()))
        );
        assert!("script:".parse::<OnDivergence>().is_err());
    }

    /// A recorded request of an agent with two tools that made two parallel calls, and what
    /// each variant of it reads as on replay: harmless ones match, real ones diverge with the
    /// change named.
    #[test]
    fn a_catalogue_of_harmless_and_real_changes() {
        let recorded = json!({
            "model": "gpt-4o-mini", "temperature": 0,
            "tools": [
                {"type": "function", "function": {"name": "exec", "description": "Run", "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}},
                {"type": "function", "function": {"name": "read", "description": "Read", "parameters": {"type": "object"}}}
            ],
            "messages": [
                {"role": "system", "content": "You are careful."},
                {"role": "user", "content": "Fix the test."},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "exec", "arguments": "{\"command\": \"ls\", \"dir\": \".\"}"}},
                    {"id": "call_2", "type": "function", "function": {"name": "read", "arguments": "{\"path\": \"a.rs\"}"}}
                ]},
                {"role": "tool", "tool_call_id": "call_1", "content": "a.rs b.rs"},
                {"role": "tool", "tool_call_id": "call_2", "content": "fn main() {}"}
            ]
        });
        let cassette = Cassette {
            exchanges: vec![Exchange::unanswered(recorded.clone())],
            ..serde_json::from_value(json!({
                "version": 2, "agent": {"api": "chat_completions", "command": ["agent"], "conversation": 1},
                "provider": "openai", "model": "gpt-4o-mini", "base_url": "http://x", "stream": false,
                "exchanges": []
            }))
            .expect("a cassette")
        };
        let served = ServedCassette::new("c".into(), cassette, &Matching::default());
        let variant = |edit: &dyn Fn(&mut Value)| {
            let mut v = recorded.clone();
            edit(&mut v);
            v
        };
        let harmless: [(&str, Value); 4] = [
            (
                "tools in another order",
                variant(&|v| v["tools"].as_array_mut().unwrap().reverse()),
            ),
            (
                "parallel results in another order",
                variant(&|v| v["messages"].as_array_mut().unwrap().swap(3, 4)),
            ),
            (
                "arguments re-serialised",
                variant(&|v| {
                    v["messages"][2]["tool_calls"][0]["function"]["arguments"] =
                        json!("{\"dir\":\".\",\"command\":\"ls\"}");
                }),
            ),
            (
                "a volatile field",
                variant(&|v| v["user"] = json!("someone")),
            ),
        ];
        for (what, v) in &harmless {
            assert!(served.matches(0, v), "{what} diverged");
        }
        let real: [(&str, Value, &str); 6] = [
            (
                "system prompt",
                variant(&|v| v["messages"][0]["content"] = json!("You are fast.")),
                "the system prompt changed",
            ),
            (
                "tool added",
                variant(&|v| {
                    v["tools"].as_array_mut().unwrap().push(json!({"type": "function", "function": {"name": "write", "parameters": {}}}))
                }),
                "tools added to the request: write",
            ),
            (
                "tool result",
                variant(&|v| v["messages"][4]["content"] = json!("fn main() { todo!() }")),
                "a tool result changed",
            ),
            (
                "model",
                variant(&|v| v["model"] = json!("gpt-4o")),
                "the model changed: `gpt-4o-mini` became `gpt-4o`",
            ),
            (
                "temperature",
                variant(&|v| v["temperature"] = json!(0.7)),
                "`temperature` changed: 0 became 0.7",
            ),
            (
                "schema",
                variant(&|v| {
                    v["tools"][0]["function"]["parameters"]["required"] = json!(["command"])
                }),
                "a tool's description or schema changed",
            ),
        ];
        for (what, v, said) in &real {
            assert!(!served.matches(0, v), "{what}: matched");
            let d = served.diverge(0, v, &Scrubber::default());
            assert!(d.reading.contains(said), "{what}: read as {:?}", d.reading);
        }
        // A tool added first: the difference is where the agent put it, not where the sorted
        // comparison found it.
        let first = variant(&|v| {
            v["tools"].as_array_mut().unwrap().insert(
                0,
                json!({"type": "function", "function": {"name": "zap", "parameters": {}}}),
            );
        });
        let d = served.diverge(0, &first, &Scrubber::default());
        assert_eq!(d.at, "/tools/0", "{d:?}");
        let last = variant(&|v| {
            v["tools"]
                .as_array_mut()
                .unwrap()
                .push(json!({"type": "function", "function": {"name": "apply", "parameters": {}}}));
        });
        let d = served.diverge(0, &last, &Scrubber::default());
        assert_eq!(d.at, "/tools/2", "{d:?}");
        // Order beyond what matching forgives (the task before the system prompt) is a
        // divergence, and read as only an order.
        let swapped = variant(&|v| v["messages"].as_array_mut().unwrap().swap(0, 1));
        assert!(!served.matches(0, &swapped));
        let d = served.diverge(0, &swapped, &Scrubber::default());
        assert_eq!(
            d.reading,
            "the agent sent the same messages in another order"
        );
        assert_eq!(d.at, "/messages/0/content");
    }
}
