//! The scripted mock model, a scenario's model script as an [`crate::llm::Model`]: reactive rules first (in order, first match answers), then the
//! ordered turns. Deterministic: call ids count the run's calls, usage is scripted or estimated
//! from text length (4 chars a token).

use crate::llm::stream::Chunk;
use crate::llm::{
    Arguments, FaultKind, Finish, Message, Model, ModelError, ModelRequest, ModelResponse,
    ProviderFault, Role, ScriptError, ToolCall, Usage,
};
use crate::scenario::{CallDef, ModelScript, TurnDef, WithoutTools, generate};
use serde_json::Value;

/// The mock.
pub struct MockModel<'s> {
    script: &'s ModelScript,
    state: MockState,
    /// The case answered: seeds generated arguments.
    case: String,
    /// The input estimate's measure of the conversation, kept between requests.
    measured: crate::llm::RunningSum,
    /// The input estimate's measure of the tools offered, with the lineage and the list (its
    /// address and length) it was taken of: a lineage offers one list or none.
    tools_measured: Option<((u64, usize, usize), usize)>,
    /// Per rule, how many messages of the conversation hold its `any_message_contains` text,
    /// kept between requests so a run looks at each message once, not once a call. Made when
    /// such a rule is first asked (most scripts have none).
    mentions: Vec<crate::llm::RunningSum>,
    /// Note valid calls it cannot vouch for ([`MockModel::vouching`]).
    vouch: bool,
}

/// Where a mock is in its script: how often each rule fired, the turn and its repeats used,
/// the calls made. A server keeps it between the requests of one conversation, so each answer
/// costs one step, not a replay of the conversation so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MockState {
    fired: Vec<u32>,
    turn: usize,
    used_of_turn: u32,
    next_call_id: u64,
    /// What the previous loop turn's request held: see [`Seen`].
    seen: Seen,
    /// The loop spoke up since the conversation began (a user or system message it added
    /// after a request): the `intervened` condition, kept once true.
    spoke: bool,
    /// Generated valid calls harness cannot vouch for, since last taken: (call id, why); kept
    /// only when asked ([`MockModel::vouching`]).
    doubts: Vec<(String, String)>,
}

impl MockState {
    /// The valid calls generated since the last time whose arguments harness cannot vouch
    /// for ([`generate::doubt`]): (call id, why).
    pub fn take_doubts(&mut self) -> Vec<(String, String)> {
        std::mem::take(&mut self.doubts)
    }
}

/// The user and system messages of the previous loop turn's request, as sorted fingerprints,
/// its roles, and how many of its messages came before its first assistant message (the
/// preamble: context and task, which an agent may refresh from request to request without
/// speaking up).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Seen {
    messages: Vec<u64>,
    roles: Vec<Role>,
    preamble: usize,
    any: bool,
    /// Its task, when it held no answer and ended on it: a request that sends its start
    /// again with text added to the task speaks up ([`crate::llm::added_to_task`]).
    task: Option<String>,
    /// The system messages of its preamble, with their places: one that a later request
    /// extends speaks up ([`crate::llm::added_to_system`]).
    systems: Vec<(usize, String)>,
}

impl Seen {
    fn of(messages: &[Message]) -> Self {
        Self {
            messages: {
                // Only a user or system message is ever looked up, and a fingerprint holds
                // the role: the others could never match.
                let mut seen: Vec<u64> = messages
                    .iter()
                    .filter(|m| speaks(m.role))
                    .map(fingerprint)
                    .collect();
                seen.sort_unstable();
                seen
            },
            roles: messages.iter().map(|m| m.role).collect(),
            preamble: messages
                .iter()
                .position(|m| m.role == Role::Assistant)
                .unwrap_or(messages.len()),
            any: true,
            task: messages
                .last()
                .filter(|m| {
                    m.role == Role::User && messages.iter().all(|m| m.role != Role::Assistant)
                })
                .map(|m| m.content.clone()),
            systems: crate::llm::preamble_systems(messages)
                .map(|(i, m)| (i, m.content.clone()))
                .collect(),
        }
    }

    /// Does `messages` hold a user or system message that this request did not: one that is
    /// neither among its messages nor a refresh of its preamble (the same role at the same
    /// place before its first answer)?
    fn new_speaker(&self, messages: &[Message]) -> bool {
        if !self.any {
            // The conversation's first request: everything in it is context or task.
            return false;
        }
        let task_grown = self.task.as_ref().is_some_and(|task| {
            messages.len() == self.roles.len() && crate::llm::added_to(messages, task).is_some()
        });
        let system_grown = crate::llm::added_to_system_texts(
            messages,
            self.systems.iter().map(|(i, was)| (*i, was.as_str())),
        )
        .is_some();
        task_grown
            || system_grown
            || messages.iter().enumerate().any(|(i, m)| {
                speaks(m.role)
                    && self.messages.binary_search(&fingerprint(m)).is_err()
                    && !(i < self.preamble && self.roles.get(i) == Some(&m.role))
            })
    }
}

/// Whether a message of this role is the loop (or its user) speaking to the model.
fn speaks(role: Role) -> bool {
    matches!(role, Role::User | Role::System)
}

/// A message's fingerprint: its role, text and calls (FNV-1a over them).
fn fingerprint(m: &Message) -> u64 {
    use std::hash::Hasher as _;
    let mut h = fnv::FnvHasher::default();
    h.write_u8(m.role as u8);
    h.write(m.content.as_bytes());
    h.write_u8(0xff);
    for c in &m.tool_calls {
        h.write(c.id.as_bytes());
        h.write_u8(0xfe);
        h.write(c.name.as_bytes());
        h.write_u8(0xfe);
        match &c.arguments {
            Arguments::Parsed(v) => h.write(v.to_string().as_bytes()),
            Arguments::Raw(r) => h.write(r.as_bytes()),
        }
        h.write_u8(0xff);
    }
    h.finish()
}

impl<'s> MockModel<'s> {
    /// A mock answering from `script`.
    pub fn new(script: &'s ModelScript) -> Self {
        Self::resume(script, MockState::default())
    }

    /// A mock answering from `script` where `state` left it (a fresh state starts the script).
    pub fn resume(script: &'s ModelScript, mut state: MockState) -> Self {
        state.fired.resize(script.rules.len(), 0);
        Self {
            script,
            state,
            case: String::new(),
            measured: crate::llm::RunningSum::default(),
            tools_measured: None,
            mentions: Vec::new(),
            vouch: false,
        }
    }

    /// The mock answering case `id`: its generated arguments are seeded by it.
    pub fn for_case(mut self, id: &str) -> Self {
        id.clone_into(&mut self.case);
        self
    }

    /// The mock noting each generated valid call it cannot vouch for
    /// ([`MockState::take_doubts`]): an agent's own schemas may say what harness does not
    /// check.
    pub fn vouching(mut self) -> Self {
        self.vouch = true;
        self
    }

    /// Where the mock is, to [`MockModel::resume`] it later.
    pub fn into_state(self) -> MockState {
        self.state
    }

    /// Does the script's rule `rule` match the request?
    fn rule_matches(&mut self, rule: usize, req: &ModelRequest<'_>, intervened: bool) -> bool {
        let script = self.script;
        let when = &script.rules[rule].when;
        let fired = self.state.fired[rule];
        // The last message of a role is looked for only by a rule that asks about it.
        let last_of = |role: Role| req.messages.iter().rev().find(|m| m.role == role);
        when.purpose.unwrap_or_default() == req.purpose
            && when.tools_offered.is_none_or(|b| b != req.tools.is_empty())
            && when
                .tool_offered
                .as_ref()
                .is_none_or(|t| req.tools.iter().any(|s| &s.name == t))
            && when.force_text.is_none_or(|b| b == req.force_text)
            && when.iteration.is_none_or(|b| b.holds(req.iteration.into()))
            && when.call.is_none_or(|b| b.holds(req.call.into()))
            && when.fired.is_none_or(|b| b.holds(fired.into()))
            && contains(&when.last_message_contains, || req.messages.last())
            && contains(&when.last_user_contains, || last_of(Role::User))
            && when
                .any_message_contains
                .as_ref()
                .is_none_or(|s| self.mentioned(rule, s, req))
            && when
                .last_tool_failed
                .is_none_or(|b| last_of(Role::Tool).is_some_and(|m| m.failed == b))
            && when.intervened.is_none_or(|b| b == intervened)
    }

    /// Does any message of the request hold `text`? Counted with rule `rule`'s count kept for
    /// the lineage, made the first time the rule asks.
    fn mentioned(&mut self, rule: usize, text: &str, req: &ModelRequest<'_>) -> bool {
        if self.mentions.len() <= rule {
            self.mentions
                .resize(rule + 1, crate::llm::RunningSum::default());
        }
        let holds = |m: &Message| usize::from(m.content.contains(text));
        self.mentions[rule].sum(req.lineage, req.messages, holds) > 0
    }

    fn next_turn(&mut self, req: &ModelRequest<'_>) -> Option<&'s TurnDef> {
        let script = self.script;
        loop {
            let turn = script.turns.get(self.state.turn)?;
            self.state.used_of_turn += 1;
            if self.state.used_of_turn >= turn.repeat {
                self.state.turn += 1;
                self.state.used_of_turn = 0;
            }
            let skip = script.without_tools == WithoutTools::Skip
                && req.tools.is_empty()
                && !turn.tool_calls.is_empty();
            if !skip {
                return Some(turn);
            }
        }
    }

    /// [`estimate_input_tokens`] of a request. A conversation that only grew since the last
    /// request of its lineage is measured from where that one ended, so a run's estimates cost
    /// its length once, not once a call.
    fn estimate_input(&mut self, req: &ModelRequest<'_>) -> u64 {
        let messages = self.measured.sum(req.lineage, req.messages, message_chars);
        tokens(messages + self.offered_chars(req))
    }

    /// [`tools_chars`] of a request's tools, measured once a lineage: its requests offer the
    /// same list in the same place, or none ([`ModelRequest::lineage`]).
    fn offered_chars(&mut self, req: &ModelRequest<'_>) -> usize {
        if req.tools.is_empty() {
            return 0;
        }
        let key = req
            .lineage
            .map(|l| (l, req.tools.as_ptr() as usize, req.tools.len()));
        match (key, self.tools_measured) {
            (Some(key), Some((kept, chars))) if key == kept => {
                debug_assert_eq!(
                    chars,
                    tools_chars(req.tools),
                    "the tools kept for lineage {} are not the request's",
                    key.0
                );
                chars
            }
            _ => {
                let chars = tools_chars(req.tools);
                if let Some(key) = key {
                    self.tools_measured = Some((key, chars));
                }
                chars
            }
        }
    }

    fn build(&mut self, turn: &TurnDef, req: &ModelRequest<'_>) -> ModelResponse {
        let tool_calls: Vec<ToolCall> = turn.tool_calls.iter().map(|c| self.call(c, req)).collect();
        let finish = match turn.finish {
            Some(f) => f,
            None if tool_calls.is_empty() => Finish::Stop,
            None => Finish::ToolUse,
        };
        let usage = match turn.usage {
            Some(u) => Usage {
                input: u.input,
                output: u.output,
            },
            None => Usage {
                input: self.estimate_input(req),
                output: estimate_output(turn),
            },
        };
        ModelResponse {
            text: turn.text.clone(),
            tool_calls,
            finish,
            usage,
            latency_ms: turn.latency_ms.unwrap_or(self.script.latency_ms),
            anomaly: turn.anomaly,
            chunks: 0,
            stream: turn.stream.clone(),
        }
    }

    fn answer(
        &mut self,
        turn: &TurnDef,
        req: &ModelRequest<'_>,
    ) -> Result<ModelResponse, ModelError> {
        match &turn.fault {
            None => Ok(self.build(turn, req)),
            Some(f) => Err(ModelError::Provider(ProviderFault {
                kind: f.kind,
                message: f
                    .message
                    .clone()
                    .unwrap_or_else(|| default_fault_message(f.kind).to_owned()),
                retry_after_ms: f.retry_after_ms,
                latency_ms: turn.latency_ms.unwrap_or(self.script.latency_ms),
            })),
        }
    }

    fn call(&mut self, def: &CallDef, req: &ModelRequest<'_>) -> ToolCall {
        let n = self.state.next_call_id;
        let id = def.id.clone().unwrap_or_else(|| {
            let mut id = String::with_capacity(8);
            id.push_str("call_");
            id.push_str(itoa::Buffer::new().format(n));
            id
        });
        self.state.next_call_id += 1;
        let arguments = match (def.generate, &def.raw_args, &def.args) {
            (Some(how), _, _) => {
                // From the schema of the tool as offered on this request (the agent's own,
                // for a bound tool); a tool not offered has none to follow.
                static OPEN: std::sync::LazyLock<Value> =
                    std::sync::LazyLock::new(|| serde_json::json!({"type": "object"}));
                let schema = req
                    .tools
                    .iter()
                    .find(|t| t.name == def.name)
                    .map_or(&*OPEN, |t| &t.schema);
                let seed = generate::seed(&self.case, def.seed.unwrap_or(n));
                let made = generate::arguments(schema, how, seed);
                if let (true, crate::scenario::Generate::Valid, Arguments::Parsed(v)) =
                    (self.vouch, how, &made)
                {
                    if let Some(why) = generate::doubt(schema, v) {
                        self.state.doubts.push((id.clone(), why));
                    }
                }
                made
            }
            (None, Some(raw), _) => Arguments::Raw(raw.clone()),
            (None, None, Some(v)) => Arguments::Parsed(crate::llm::Args::clone(v)),
            (None, None, None) => Arguments::parsed(Value::Object(Default::default())),
        };
        ToolCall {
            id,
            name: def.name.clone(),
            arguments,
        }
    }
}

/// The message of a scripted fault that states none.
pub fn default_fault_message(kind: FaultKind) -> &'static str {
    match kind {
        FaultKind::RateLimit => "429 Too Many Requests: rate limit exceeded",
        FaultKind::ServerError => "529 Overloaded: the server is temporarily overloaded",
        FaultKind::ContextOverflow => "the request exceeds the model's context window",
        FaultKind::Timeout => "the request timed out",
        FaultKind::Refused => "400 Bad Request: the provider refused the request",
    }
}

/// Does the message `message` finds (looked for only when there is a needle) hold `needle`?
fn contains<'m>(needle: &Option<String>, message: impl FnOnce() -> Option<&'m Message>) -> bool {
    needle
        .as_ref()
        .is_none_or(|s| message().is_some_and(|m| m.content.contains(s.as_str())))
}

fn tokens(chars: usize) -> u64 {
    (chars as u64).div_ceil(4)
}

/// The input tokens the script charges for a conversation and its tools (about four bytes a
/// token), as `harness serve` also counts them for `count_tokens`.
pub fn estimate_input_tokens(
    messages: &[crate::llm::Message],
    tools: &[crate::llm::ToolSpec],
) -> u64 {
    tokens(messages_chars(messages) + tools_chars(tools))
}

/// The characters the input estimate counts in `messages`: text, and each call's name and
/// arguments.
fn messages_chars(messages: &[crate::llm::Message]) -> usize {
    messages.iter().map(message_chars).sum()
}

fn message_chars(m: &crate::llm::Message) -> usize {
    m.content.len()
        + m.tool_calls
            .iter()
            .map(|c| c.name.len() + args_len(&c.arguments))
            .sum::<usize>()
}

/// The characters the input estimate counts in `tools`: names, descriptions, schemas.
fn tools_chars(tools: &[crate::llm::ToolSpec]) -> usize {
    tools
        .iter()
        .map(|t| t.name.len() + t.description.len() + t.schema.text().len())
        .sum()
}

fn args_len(a: &Arguments) -> usize {
    match a {
        Arguments::Parsed(v) => v.text().len(),
        Arguments::Raw(s) => s.len(),
    }
}

fn estimate_output(turn: &TurnDef) -> u64 {
    let text = turn.text.as_ref().map_or(0, String::len);
    let calls: usize = turn
        .tool_calls
        .iter()
        .map(|c| {
            c.name.len()
                + c.raw_args
                    .as_ref()
                    .map(String::len)
                    .or_else(|| c.args.as_ref().map(|a| a.text().len()))
                    .unwrap_or(2)
        })
        .sum();
    tokens(text + calls + streamed_len(&turn.stream)).max(1)
}

/// Characters a streamed turn emits, counted as for a whole turn: text pieces, tool names and
/// argument pieces, with `{}` (2) for a call that received no argument piece.
fn streamed_len(chunks: &[Chunk]) -> usize {
    let mut with_args = std::collections::BTreeSet::new();
    for c in chunks {
        if let Chunk::ArgsDelta { index, .. } = c {
            with_args.insert(*index);
        }
    }
    chunks
        .iter()
        .map(|c| match c {
            Chunk::Text { text } | Chunk::ArgsDelta { text, .. } => text.len(),
            Chunk::ToolCallStart { index, name, .. } if with_args.contains(index) => name.len(),
            Chunk::ToolCallStart { name, .. } => name.len() + 2,
            Chunk::ToolCallComplete { .. } | Chunk::Finish { .. } => 0,
        })
        .sum()
}

impl Model for MockModel<'_> {
    fn respond(&mut self, req: &ModelRequest<'_>) -> Result<ModelResponse, ModelError> {
        let script = self.script;
        // Did the loop speak up: a user or system message that is new since the previous
        // turn's request (never context sent before or with the task, which the first
        // request holds)? Once it has, the model has heard it.
        // Only a rule with an `intervened` condition asks, and once the loop has spoken the
        // answer stays: otherwise nothing is looked at (it would cost every turn a pass over
        // the whole conversation).
        if req.purpose.is_turn()
            && !self.state.spoke
            && script.rules.iter().any(|r| r.when.intervened.is_some())
        {
            // A summary or replan request holds a prompt of the runtime's own: not the loop
            // speaking up to the model about its turn.
            self.state.spoke |= self.state.seen.new_speaker(req.messages);
            self.state.seen = Seen::of(req.messages);
        }
        let intervened = self.state.spoke;
        for (i, rule) in script.rules.iter().enumerate() {
            if rule.times.is_some_and(|t| self.state.fired[i] >= t) {
                continue;
            }
            if self.rule_matches(i, req, intervened) {
                self.state.fired[i] += 1;
                return self.answer(&rule.reply, req);
            }
        }
        // Turns script the loop; other calls (summaries, replans) must be answered by a rule.
        let turn = if req.purpose.is_turn() {
            self.next_turn(req)
        } else {
            None
        };
        match turn {
            Some(turn) => self.answer(turn, req),
            None => Err(ScriptError {
                call: req.call,
                iteration: req.iteration,
                turns: script.turns.iter().map(|t| t.repeat).sum(),
                purpose: req.purpose,
            }
            .into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `mock`'s answer to turn `call`.
    fn turn_answer(
        mock: &mut MockModel<'_>,
        call: u32,
        messages: &[Message],
        tools: &[crate::llm::ToolSpec],
        lineage: Option<u64>,
    ) -> ModelResponse {
        mock.respond(&ModelRequest {
            purpose: crate::llm::Purpose::Turn,
            iteration: call,
            call,
            messages,
            tools,
            force_text: false,
            lineage,
        })
        .unwrap()
    }

    /// The input estimate of `mock`'s answer to turn `call`, checked against the whole measure.
    fn asked(
        mock: &mut MockModel<'_>,
        call: u32,
        messages: &[Message],
        tools: &[crate::llm::ToolSpec],
        lineage: Option<u64>,
    ) -> u64 {
        let r = turn_answer(mock, call, messages, tools, lineage);
        assert_eq!(
            r.usage.input,
            estimate_input_tokens(messages, tools),
            "call {call}"
        );
        r.usage.input
    }

    fn call(name: &str, args: Option<Value>) -> CallDef {
        CallDef {
            id: None,
            name: name.to_owned(),
            args: args.map(Into::into),
            raw_args: None,
            generate: None,
            seed: None,
        }
    }

    #[test]
    fn streamed_turns_estimate_output_like_whole_turns() {
        let text = "I cannot proceed because I do not know what command you wanted me to run.";
        let whole = TurnDef {
            text: Some(text.to_owned()),
            ..TurnDef::default()
        };
        let streamed = TurnDef {
            stream: vec![
                Chunk::Text {
                    text: text[..20].to_owned(),
                },
                Chunk::Text {
                    text: text[20..].to_owned(),
                },
            ],
            ..TurnDef::default()
        };
        assert_eq!(estimate_output(&whole), estimate_output(&streamed));
        assert_eq!(estimate_output(&whole), 19);

        let whole = TurnDef {
            tool_calls: vec![
                call("exec", None),
                call("echo_tool", Some(json!({"text": "step 1"}))),
            ],
            ..TurnDef::default()
        };
        let start = |index: u32, name: &str| Chunk::ToolCallStart {
            index,
            id: format!("call_{index}"),
            name: name.to_owned(),
        };
        let streamed = TurnDef {
            stream: vec![
                start(0, "exec"),
                Chunk::ToolCallComplete { index: 0 },
                start(1, "echo_tool"),
                Chunk::ArgsDelta {
                    index: 1,
                    text: "{\"text\":".to_owned(),
                },
                Chunk::ArgsDelta {
                    index: 1,
                    text: "\"step 1\"}".to_owned(),
                },
                Chunk::ToolCallComplete { index: 1 },
            ],
            ..TurnDef::default()
        };
        assert_eq!(estimate_output(&whole), estimate_output(&streamed));
    }

    #[test]
    fn input_estimates_measure_only_what_a_lineage_added_and_equal_the_whole_measure() {
        use crate::llm::{History, ToolCall, ToolSpec};
        let script: ModelScript =
            serde_json::from_value(json!({"turns": [{"text": "ok", "repeat": 40}]})).unwrap();
        let mut mock = MockModel::new(&script);
        let tools = [ToolSpec {
            name: "read".to_owned(),
            description: "Read a file.".to_owned(),
            schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}).into(),
        }];
        let mut call = 0;
        let mut ask = |mock: &mut MockModel<'_>, messages: &[Message], lineage: Option<u64>| {
            call += 1;
            asked(mock, call, messages, &tools, lineage);
        };
        let mut h = History::new();
        h.push(Message::new(Role::System, "You are terse."));
        h.push(Message::new(Role::User, "Read the notes."));
        for i in 0..6 {
            ask(&mut mock, &h, Some(h.lineage()));
            assert_eq!(mock.measured.counted(), Some(h.len()));
            let mut answer = Message::new(Role::Assistant, "x".repeat(i));
            answer.tool_calls.push(ToolCall {
                id: format!("call_{i}"),
                name: "read".to_owned(),
                arguments: Arguments::parsed(json!({"path": "n".repeat(i * 7)})),
            });
            h.push(answer);
            h.push(Message::new(Role::Tool, "y".repeat(i * 3)));
        }
        // Replaced by as many messages, each longer: measured afresh.
        let longer: Vec<Message> = h
            .iter()
            .map(|m| Message::new(m.role, format!("{} and more", m.content)))
            .collect();
        h.replace(longer);
        ask(&mut mock, &h, Some(h.lineage()));
        // Trimmed from the front, then grown again.
        h.drain(1..5).for_each(drop);
        ask(&mut mock, &h, Some(h.lineage()));
        h.push(Message::new(Role::User, "And the rest?"));
        ask(&mut mock, &h, Some(h.lineage()));
        // A request without a lineage (a summary's own messages) is measured whole and leaves
        // what the lineage measured alone.
        let summary = [Message::new(Role::User, "Summarise.")];
        ask(&mut mock, &summary, None);
        h.push(Message::new(Role::User, "Last one."));
        ask(&mut mock, &h, Some(h.lineage()));
        assert_eq!(mock.measured.counted(), Some(h.len()));
    }

    #[test]
    fn the_tools_are_measured_once_a_lineage_and_again_for_another_list() {
        use crate::llm::{History, ToolSpec};
        let script: ModelScript =
            serde_json::from_value(json!({"turns": [{"text": "ok", "repeat": 10}]})).unwrap();
        let mut mock = MockModel::new(&script);
        let spec = |name: &str, description: &str| ToolSpec {
            name: name.to_owned(),
            description: description.to_owned(),
            schema: json!({"type": "object", "properties": {"q": {"type": "string"}}}).into(),
        };
        let one = [spec("read", "Read a file.")];
        let two = [
            spec("read", "Read a file."),
            spec("search", "Search the web."),
        ];
        let h = History::new();
        let other = History::new();
        let mut call = 0;
        let mut ask = |mock: &mut MockModel<'_>, tools: &[ToolSpec], lineage: Option<u64>| {
            call += 1;
            asked(mock, call, &h, tools, lineage)
        };
        let with_one = ask(&mut mock, &one, Some(h.lineage()));
        let kept = mock.tools_measured;
        assert!(kept.is_some());
        // Stripped (no tools), then offered again: the measure kept serves.
        assert!(ask(&mut mock, &[], Some(h.lineage())) < with_one);
        assert_eq!(ask(&mut mock, &one, Some(h.lineage())), with_one);
        assert_eq!(mock.tools_measured, kept);
        // Another list (of the same length, or longer), another lineage, or none: measured
        // for what they offer.
        let other_one = [spec("search", "Search the web for the words given.")];
        assert!(ask(&mut mock, &other_one, Some(h.lineage())) > with_one);
        assert!(ask(&mut mock, &two, Some(h.lineage())) > with_one);
        assert_ne!(mock.tools_measured, kept);
        assert_eq!(ask(&mut mock, &one, Some(other.lineage())), with_one);
        assert!(ask(&mut mock, &two, None) > with_one);
    }

    #[test]
    fn a_mention_is_looked_for_in_what_a_lineage_added_and_found_as_in_the_whole() {
        use crate::llm::History;
        let script: ModelScript = serde_json::from_value(json!({
            "rules": [{"when": {"any_message_contains": "KEY"}, "reply": {"text": "seen"}}],
            "turns": [{"text": "ok", "repeat": 40}],
        }))
        .unwrap();
        let mut mock = MockModel::new(&script);
        let mut call = 0;
        let mut ask = |mock: &mut MockModel<'_>, messages: &[Message], lineage: Option<u64>| {
            call += 1;
            let r = turn_answer(mock, call, messages, &[], lineage);
            r.text.unwrap_or_default()
        };
        let mut h = History::new();
        h.push(Message::new(Role::User, "Find it."));
        for i in 0..4 {
            assert_eq!(ask(&mut mock, &h, Some(h.lineage())), "ok", "turn {i}");
            assert_eq!(mock.mentions[0].counted(), Some(h.len()));
            h.push(Message::new(Role::Assistant, format!("not yet {i}")));
        }
        // The text arrives in a later message: found, and found again as the lineage grows.
        h.push(Message::new(Role::Tool, "the KEY is here"));
        assert_eq!(ask(&mut mock, &h, Some(h.lineage())), "seen");
        h.push(Message::new(Role::Assistant, "noted"));
        assert_eq!(ask(&mut mock, &h, Some(h.lineage())), "seen");
        assert_eq!(mock.mentions[0].counted(), Some(h.len()));
        // Trimmed so the message holding it is gone: a new lineage, looked at afresh.
        let at = h.iter().position(|m| m.content.contains("KEY")).unwrap();
        h.drain(at..at + 1).for_each(drop);
        assert_eq!(ask(&mut mock, &h, Some(h.lineage())), "ok");
        // Replaced by messages of which one holds it: found.
        h.replace(vec![Message::new(Role::User, "KEY first")]);
        assert_eq!(ask(&mut mock, &h, Some(h.lineage())), "seen");
        // Replaced by more messages, none holding it: a new lineage is looked at afresh even
        // when it is no shorter than what was counted.
        h.replace(
            (0..4)
                .map(|i| Message::new(Role::User, format!("m{i}")))
                .collect(),
        );
        assert_eq!(ask(&mut mock, &h, Some(h.lineage())), "ok");
        // Without a lineage every message is looked at, and what is kept stays.
        let kept = mock.mentions[0].counted();
        assert_eq!(
            ask(&mut mock, &[Message::new(Role::User, "no")], None),
            "ok"
        );
        assert_eq!(
            ask(&mut mock, &[Message::new(Role::User, "a KEY")], None),
            "seen"
        );
        assert_eq!(mock.mentions[0].counted(), kept);
    }

    #[test]
    fn each_rule_counts_its_own_mentions_even_when_not_asked_every_call() {
        use crate::llm::History;
        // The first rule is asked only from the third call on; the second on every call.
        let script: ModelScript = serde_json::from_value(json!({
            "rules": [
                {
                    "when": {"call": {"min": 3}, "any_message_contains": "ALPHA"},
                    "reply": {"text": "alpha"},
                },
                {"when": {"any_message_contains": "BETA"}, "reply": {"text": "beta"}},
            ],
            "turns": [{"text": "ok", "repeat": 10}],
        }))
        .unwrap();
        let mut mock = MockModel::new(&script);
        let mut h = History::new();
        let mut answers = Vec::new();
        for (call, added) in [(1, "ALPHA early"), (2, "BETA"), (3, "x"), (4, "y")] {
            h.push(Message::new(Role::User, added));
            let r = turn_answer(&mut mock, call, &h, &[], Some(h.lineage()));
            answers.push(r.text.unwrap_or_default());
        }
        // ALPHA came at the first call, before its rule was asked: still counted at the third.
        assert_eq!(answers, ["ok", "beta", "alpha", "alpha"]);
        assert_eq!(mock.mentions.len(), 2);
        assert_eq!(mock.mentions[0].counted(), Some(h.len()));
        assert_eq!(mock.mentions[1].counted(), Some(2));
    }
}
