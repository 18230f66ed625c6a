//! The serving state of one scenario case ([`Session`]): a request read, the conversation it
//! continues found, the script (or a recording, [`super::recorded`]) answering it, and what
//! was answered kept for the inferred trace.

use super::*;

/// The serving state of one scenario case.
#[derive(Debug)]
pub struct Session {
    pub(super) case: Case,
    pub(super) cap: u32,
    pub(super) rules: FailureRules,
    pub(super) conversations: Vec<Conversation>,
    /// Every id served (calls, answers) and the conversation it was served in.
    pub(super) ids: BTreeMap<String, usize>,
    /// Ids served so far: the next id's seed.
    pub(super) minted: u64,
    /// Recorded conversations answer instead of the script (`harness exec CASSETTE`).
    pub(super) replay: Option<replay::Replay>,
    /// Requests to paths that are no endpoint: how many, and the first distinct ones.
    pub(super) unknown_requests: usize,
    pub(super) unknown: Vec<String>,
    /// The answer tool the latest scripted answer went out through (see [`answer_tool`]).
    pub(super) answered_through: Option<String>,
    /// The JSON the latest scripted text went out as, when the request asked for JSON (see
    /// [`in_form`]), and whether the request named no shape for it.
    pub(super) shaped: Option<String>,
    pub(super) shape_chosen: bool,
    /// What the latest scripted answer said as it went out ([`super::conversation::said`]).
    pub(super) wire_said: Option<String>,
    /// The wire ids of the answer being made's tool calls, for its [`ServedRequest`].
    pub(super) wire_ids: Vec<String>,
    /// The API withheld the calls of the answer being made (see [`ServedRequest::withheld`]).
    pub(super) withheld: bool,
    /// The answer being made's valid calls harness cannot vouch for ([`ServedRequest::doubts`]).
    pub(super) doubts: Vec<(String, String)>,
    /// The conversation that got the latest answer.
    pub(super) latest: Option<usize>,
    /// Globs of the agent's tools to bind portable tools to first (`--bind`).
    pub(super) prefer: Vec<String>,
    /// The script side requests are answered from, once one came ([`side`]).
    pub(super) side_script: Option<std::sync::Arc<crate::scenario::Scenario>>,
}

impl Session {
    /// Serve `case`'s scripted model, each conversation capped at its `max_iterations`, tool
    /// results read by the default [`FailureRules`].
    pub fn new(case: Case) -> Self {
        Self::with_rules(case, FailureRules::default())
    }

    /// Serve `case`'s scripted model, reading tool results with `rules`.
    pub fn with_rules(case: Case, rules: FailureRules) -> Self {
        let cap = case.config.call_cap();
        Self {
            case,
            cap,
            rules,
            conversations: Vec::new(),
            ids: BTreeMap::new(),
            minted: 0,
            replay: None,
            unknown_requests: 0,
            unknown: Vec::new(),
            answered_through: None,
            shaped: None,
            shape_chosen: false,
            wire_said: None,
            wire_ids: Vec::new(),
            withheld: false,
            doubts: Vec::new(),
            latest: None,
            prefer: Vec::new(),
            side_script: None,
        }
    }

    /// Bind portable tools to the agent's tools matching these globs first (`--bind`).
    #[must_use]
    pub fn preferring(mut self, globs: Vec<String>) -> Self {
        self.prefer = globs;
        self
    }

    /// Serve recorded conversations: each conversation is answered from the cassette its
    /// first request binds it to ([`replay`]); `case` (the first cassette promoted) names the
    /// session and scripts nothing.
    pub fn replaying(case: Case, rules: FailureRules, replay: replay::Replay) -> Self {
        let mut s = Self::with_rules(case, rules);
        s.replay = Some(replay);
        s
    }

    /// The recorded conversations served, when the session replays cassettes.
    pub fn replay(&self) -> Option<&replay::Replay> {
        self.replay.as_ref()
    }

    /// How many bytes of request bodies the session may read in all: the per-session limit,
    /// once per cassette it replays (a folder of cassettes, each within the limit alone,
    /// replays together).
    pub fn read_limit(&self) -> u64 {
        let cassettes = self.replay.as_ref().map_or(1, |r| r.cassettes.len().max(1));
        crate::limits::MAX_SESSION_REQUEST_BYTES
            .saturating_mul(u64::try_from(cassettes).unwrap_or(u64::MAX))
    }

    /// The case served.
    pub fn case(&self) -> &Case {
        &self.case
    }

    /// The iteration cap of each conversation.
    pub fn cap(&self) -> u32 {
        self.cap
    }

    /// The conversations so far, in the order they started.
    pub fn conversations(&self) -> &[Conversation] {
        &self.conversations
    }

    /// The conversation that got the latest answer (its index in [`Session::conversations`]):
    /// the one an agent killed at its timeout was in.
    pub fn latest(&self) -> Option<usize> {
        self.latest
    }

    /// Note a request to a path that is no endpoint (`METHOD /path`), for the report of a run
    /// whose agent made no model request (at most 20 kept, in order).
    pub fn note_unknown(&mut self, request: &str) {
        self.unknown_requests += 1;
        if self.unknown.len() < 20 && !self.unknown.iter().any(|u| u == request) {
            self.unknown.push(request.to_owned());
        }
    }

    /// The requests to unknown paths: how many, and the distinct ones first seen.
    pub fn unknown(&self) -> (usize, &[String]) {
        (self.unknown_requests, &self.unknown)
    }

    /// Know these values as secrets from here on (the keys an agent sends in its headers), when
    /// replaying a recording: they are scrubbed from what the replay derives, as the proxy
    /// scrubbed them from the cassette.
    pub fn learn_keys(&mut self, keys: impl IntoIterator<Item = String>) {
        if let Some(recorded) = &mut self.replay {
            recorded.scrubber.learn(keys);
        }
    }

    /// Answer one request body that came in on `api`.
    pub fn handle(&mut self, api: Api, body: &[u8]) -> HttpAnswer {
        self.handle_with(api, body, RequestHints::default())
    }

    /// Answer one request body that came in on `api`, with what its headers said.
    pub fn handle_with(&mut self, api: Api, body: &[u8], hints: RequestHints) -> HttpAnswer {
        match self.handle_request(api, body, hints) {
            Handled::Answered { answer, .. } => answer,
            Handled::Live => refusal(
                api.provider(),
                502,
                "harness: this request is the live provider's, and none is connected",
            ),
        }
    }

    /// Answer one request body that came in on `api`, or leave it to the live provider (a
    /// replay in a record mode that goes live).
    pub fn handle_request(&mut self, api: Api, body: &[u8], hints: RequestHints) -> Handled {
        let answered = |answer| Handled::Answered {
            answer,
            recorded: None,
        };
        let provider = api.provider();
        let mut value: Value = match serde_json::from_slice(body) {
            Ok(v) => v,
            Err(e) => {
                return answered(refusal(
                    provider,
                    400,
                    &format!("harness serve: the request body is not JSON: {e}"),
                ));
            }
        };
        // What the path says (Gemini's model and stream form) is the body's, as a recording
        // keeps it.
        if api.model_in_path() {
            hints.fold_into(&mut value);
        }
        if let Some(recorded) = &self.replay {
            // A replay's request is scrubbed as its recording was, before anything reads it:
            // the trace, the golden, the divergence reading and the answer refusing it all
            // come from here (a recorded `[REDACTED]` matches the scrubbed text).
            recorded.scrubber.scrub_value(&mut value);
        }
        // No conversation to continue: refused as the providers refuse it.
        if api != Api::Responses && value["messages"].as_array().is_some_and(Vec::is_empty) {
            let said = match provider {
                Provider::Openai => "harness serve: [] is too short - 'messages'",
                Provider::Anthropic => "harness serve: messages: at least one message is required",
                Provider::Gemini => {
                    "harness serve: * GenerateContentRequest.contents: contents is not specified"
                }
            };
            return answered(refusal(provider, 400, said));
        }
        let mut request = match api.parse_request(&value) {
            Ok(r) => r,
            Err(e) => return answered(refusal(provider, 400, &format!("harness serve: {e}"))),
        };
        // What the path says (Gemini's model and stream) is the request's.
        if let Some(model) = &hints.model {
            request.options.model.clone_from(model);
        }
        if hints.stream.is_some() {
            request.options.stream = true;
        }
        // `tool_choice: none` withholds the tools from the model, so the script must see none
        // (its rules may react to `tools_offered = false`).
        if request.asks.tool_choice == ToolChoice::None {
            request.tools.clear();
        }
        if api == Api::Responses && self.replay.is_none() {
            if let Some(previous) = request.asks.previous.clone() {
                if !self.continue_stored(&previous, &mut request) {
                    return answered(previous_not_found(&previous));
                }
            }
        }
        // Text-protocol agents are read as wire calls before anything keys the conversation:
        // the matcher below must see the call ids they echo in text.
        let mut text_protocol = read_text_protocol(&mut request);
        let first_user = first_user(&request);
        if self.goes_live(&request, hints.clone(), &value) {
            return Handled::Live;
        }
        let Some(at) = self.conversation_for(&request, hints) else {
            return answered(refusal(
                provider,
                400,
                crate::vocabulary::CONVERSATION_ENDED,
            ));
        };
        // A structured answer asked for after the loop's text answer goes into a side
        // conversation of its own, not the loop's.
        let follow_up = (self.replay.is_none() && !self.conversations[at].requests.is_empty())
            .then(|| side::follow_up(&request, &self.case.scenario, &self.conversations[at]))
            .flatten();
        let at = match follow_up {
            Some(why) => {
                let side = self.new_conversation(&request);
                self.conversations[side].side = Some(why);
                side
            }
            None => at,
        };
        // Whether a conversation is a side request (a title, a summary, a subagent) is decided
        // once, at its first request, against the conversations before it: later requests of
        // a side conversation look like any other.
        if self.replay.is_none()
            && self.conversations[at].requests.is_empty()
            && self.conversations[at].side.is_none()
        {
            let side = side::reason(&request, &self.case.scenario, &self.conversations[..at]);
            self.conversations[at].side = side;
        }
        let bound = if self.replay.is_none() {
            self.bind_tools(at, &mut request)
        } else {
            Vec::new()
        };
        text_protocol |= unmerge_steps(&self.conversations[at], &mut request)
            || restore_calls(&self.conversations[at], &mut request);
        self.conversations[at].last_user = first_user;
        let rules = self.read_failures(&mut request);
        let conversation = &self.conversations[at];
        // A retry after a scripted fault is the same loop iteration asked again, as the engine
        // counts it (`call` grows, `iteration` does not); otherwise this request opens the
        // next iteration of the conversation.
        let retry = conversation.after_fault();
        let done = conversation
            .requests
            .iter()
            .map(|e| e.iteration)
            .max()
            .unwrap_or(0);
        let iteration = if retry { done.max(1) } else { done + 1 };
        let before = self.conversations[at].replayed.clone();
        let mut cut = false;
        let (reply, served, divergence) = if self.replay.is_some() {
            match self.answer_replayed(at, api, &value, &request, iteration) {
                Some(answered) => answered,
                None => return Handled::Live,
            }
        } else if iteration > self.cap {
            let message = crate::vocabulary::cap_refusal(self.cap);
            (Reply::Cap, refusal(provider, 400, &message), None)
        } else {
            let script = if self.conversations[at].side.is_some() {
                let case = &self.case.scenario;
                std::sync::Arc::clone(
                    self.side_script
                        .get_or_insert_with(|| std::sync::Arc::new(side::scenario(case))),
                )
            } else {
                std::sync::Arc::clone(&self.case.scenario)
            };
            let (reply, served) = self.answer(at, api, &value, &request, iteration, &script);
            cut = matches!(served.body, AnswerBody::Events { cut: true, .. });
            (reply, served, None)
        };
        // What the agent can echo of this answer: what went out (the JSON a scripted text
        // became, the answer tool's call), and nothing of a stream cut before its end.
        let wire_said = std::mem::take(&mut self.wire_said);
        let c = &mut self.conversations[at];
        if !cut {
            c.said.extend(
                wire_said
                    .or_else(|| said_by(&reply))
                    .filter(|s| !s.is_empty()),
            );
        }
        c.requests.push(ServedRequest {
            api,
            request,
            rules,
            text_protocol,
            iteration,
            reply,
            divergence,
            bound,
            answer_tool: self.answered_through.take(),
            in_form: self.shaped.take(),
            shape_chosen: std::mem::take(&mut self.shape_chosen),
            cut,
            wire_ids: std::mem::take(&mut self.wire_ids),
            withheld: std::mem::take(&mut self.withheld),
            doubts: std::mem::take(&mut self.doubts),
        });
        self.latest = Some(at);
        // A recorded answer moved the conversation one exchange on in its cassette.
        let recorded = match (&before, &self.conversations[at].replayed) {
            (None, Some(now)) if now.next == 1 => Some((now.cassette, 0)),
            (Some(was), Some(now)) if now.next == was.next + 1 => Some((now.cassette, was.next)),
            _ => None,
        };
        Handled::Answered {
            answer: served,
            recorded,
        }
    }

    /// Read the request under the scenario's names: the agent's tools that its portable
    /// tools stand for are renamed to theirs, in the offered tools and in the calls of the
    /// history (the binding is made at the conversation's first request that offers tools,
    /// and kept). The bindings, when made by this request.
    pub(super) fn bind_tools(&mut self, at: usize, request: &mut WireRequest) -> Vec<Binding> {
        let portable: Vec<(&str, crate::scenario::Bind)> = self
            .case
            .scenario
            .tools
            .iter()
            .filter_map(|t| {
                let bind = crate::scenario::Bind::parse(t.bind.as_deref()?).ok()?;
                Some((t.name.as_str(), bind))
            })
            .collect();
        if portable.is_empty() {
            return Vec::new();
        }
        let script = &self.case.scenario.model;
        let prefer = &self.prefer;
        let conversation = &mut self.conversations[at];
        let mut made = Vec::new();
        if conversation.binding.is_none() && !request.tools.is_empty() {
            let mut taken: Vec<&str> = Vec::new();
            let bindings: Vec<Binding> = portable
                .iter()
                .map(|(declared, rule)| {
                    let kinds = bind::Kinds::of(script, declared);
                    let offered = bind::choose(rule, &request.tools, &taken, kinds, prefer)
                        .map(|t| t.name.as_str());
                    taken.extend(offered);
                    Binding {
                        declared: (*declared).to_owned(),
                        rule: rule.to_string(),
                        offered: offered.map(str::to_owned),
                    }
                })
                .collect();
            made.clone_from(&bindings);
            conversation.binding = Some(bindings);
        }
        if let Some(bindings) = &conversation.binding {
            let declared = |name: &str| {
                bindings
                    .iter()
                    .find(|b| b.offered.as_deref() == Some(name))
                    .map(|b| b.declared.clone())
            };
            for t in &mut request.tools {
                if let Some(d) = declared(&t.name) {
                    t.name = d;
                }
            }
            for c in request.messages.iter_mut().flat_map(|m| &mut m.tool_calls) {
                if let Some(d) = declared(&c.name) {
                    c.name = d;
                }
            }
        }
        made
    }

    /// A Responses request that continues `previous` (its `previous_response_id`) as the
    /// request the provider sees: the stored context of that response (the input it answered
    /// and its output items) before the request's own items, under the request's own
    /// `instructions` (they are not carried over). False when no answer of the session has
    /// that id.
    pub(super) fn continue_stored(&self, previous: &str, request: &mut WireRequest) -> bool {
        let Some((before, output)) = self
            .ids
            .get(previous)
            .and_then(|&c| self.conversations.get(c))
            .and_then(|c| {
                let (i, output) = c.stored.get(previous)?;
                Some((&c.requests.get(*i)?.request, output))
            })
        else {
            return false;
        };
        let answered = responses::parse_request(&serde_json::json!({"model": "", "input": output}))
            .map(|r| r.messages)
            .unwrap_or_default();
        let system = |m: &Message| m.role == Role::System;
        let own_system = request.messages.iter().take_while(|m| system(m)).count();
        let mut messages: Vec<Message> = request.messages[..own_system].to_vec();
        messages.extend(before.messages.iter().skip_while(|m| system(m)).cloned());
        messages.extend(answered);
        messages.extend(request.messages.drain(own_system..));
        request.messages = messages;
        let mut results = before.results.clone();
        results.append(&mut request.results);
        request.results = results;
        true
    }

    /// Is this request the live provider's (a replay in record mode `once` or
    /// `new_episodes`)? When it continues a conversation that went live, or begins one no
    /// unused recording starts with.
    pub(super) fn goes_live(
        &self,
        request: &WireRequest,
        hints: RequestHints,
        body: &Value,
    ) -> bool {
        let Some(recorded) = &self.replay else {
            return false;
        };
        if !matches!(
            recorded.record_mode,
            Some(replay::RecordMode::Once | replay::RecordMode::NewEpisodes)
        ) {
            return false;
        }
        match self.continuing(request, hints) {
            Some(i) => self.conversations[i].live,
            // With recordings present, `once` records nothing (as vcrpy's): a conversation no
            // recording starts is refused with its divergence from the nearest one.
            // `new_episodes` records it.
            None => {
                recorded.record_mode == Some(replay::RecordMode::NewEpisodes)
                    && recorded.starting_with(&self.used(), body).is_none()
            }
        }
    }

    /// How many conversations each cassette of the replay has played.
    pub(super) fn used(&self) -> Vec<usize> {
        let mut used = vec![0; self.replay.as_ref().map_or(0, |r| r.cassettes.len())];
        for p in self
            .conversations
            .iter()
            .filter_map(|c| c.replayed.as_ref())
        {
            used[p.cassette] += 1;
        }
        used
    }

    /// Mark each tool message failed or not by the rules; the rule per message.
    pub(super) fn read_failures(&self, request: &mut WireRequest) -> Vec<Option<String>> {
        // The arguments of each call by its id, for the shapes that read them.
        let calls: BTreeMap<String, Value> = request
            .messages
            .iter()
            .flat_map(|m| &m.tool_calls)
            .filter_map(|c| match &c.arguments {
                Arguments::Parsed(v) => Some((c.id.clone(), Value::clone(v))),
                Arguments::Raw(_) => None,
            })
            .collect();
        let mut refs = request.results.iter();
        request
            .messages
            .iter_mut()
            .map(|m| {
                if m.role != Role::Tool {
                    return None;
                }
                let result = refs.next();
                let flag = result.and_then(|r| r.is_error);
                let args = result.and_then(|r| calls.get(&r.id));
                let rule = self.rules.classify_call(flag, &m.content, args);
                m.failed = rule.is_some();
                rule
            })
            .collect()
    }

    /// A new id, unique in the session, in a provider's shape: `prefix` and `len` characters
    /// of base 62 (hex when `hex`).
    pub(super) fn mint(&mut self, prefix: &str, len: usize, hex: bool) -> String {
        const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
        let radix = if hex { 16 } else { 62 };
        self.minted += 1;
        let mut state = self.minted;
        let mut out = String::with_capacity(prefix.len() + len);
        out.push_str(prefix);
        let mut word = 0u64;
        for i in 0..len {
            if i % 8 == 0 {
                // splitmix64: every id differs from every other, and from run to run none does.
                state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let mut z = state;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                word = z ^ (z >> 31);
            }
            out.push(char::from(ALPHABET[(word % radix) as usize]));
            word /= radix;
        }
        out
    }

    /// The conversation a request continues, if any.
    pub(super) fn continuing(&self, request: &WireRequest, hints: RequestHints) -> Option<usize> {
        let threads: Vec<ConversationView<'_>> = self
            .conversations
            .iter()
            .enumerate()
            .map(|(i, c)| ConversationView {
                latest: self.latest == Some(i),
                ..c.thread()
            })
            .collect();
        continues(&threads, &self.ids, request, hints)
    }

    /// The index of the conversation a request belongs to (a new one if need be); `None` when
    /// it continues a conversation that has ended.
    pub(super) fn conversation_for(
        &mut self,
        request: &WireRequest,
        hints: RequestHints,
    ) -> Option<usize> {
        match self.continuing(request, hints) {
            Some(i) => (!self.conversations[i].ended()).then_some(i),
            None => Some(self.new_conversation(request)),
        }
    }

    /// A new conversation that `request` begins: its index.
    fn new_conversation(&mut self, request: &WireRequest) -> usize {
        self.conversations.push(Conversation {
            key: first_user(request),
            requests: Vec::new(),
            mock: MockState::default(),
            calls: 0,
            last_user: String::new(),
            replayed: None,
            live: false,
            stored: BTreeMap::new(),
            binding: None,
            side: None,
            said: Vec::new(),
        });
        self.conversations.len() - 1
    }

    /// Answer from `scenario`'s script (the case's, or the `script:` one a replay diverged
    /// into) where the conversation's mock left it (so rule counts, turns and call ids
    /// continue), keep where it is now, and serve it with ids of the session's own.
    pub(super) fn answer(
        &mut self,
        at: usize,
        api: Api,
        body: &Value,
        request: &WireRequest,
        iteration: u32,
        scenario: &crate::scenario::Scenario,
    ) -> (Reply, HttpAnswer) {
        let provider = api.provider();
        let conversation = &mut self.conversations[at];
        let mut mock = MockModel::resume(&scenario.model, std::mem::take(&mut conversation.mock))
            .for_case(&self.case.id)
            .vouching();
        let answered = mock.respond(&model_request(request, iteration, conversation.calls + 1));
        conversation.mock = mock.into_state();
        self.doubts = conversation.mock.take_doubts();
        if matches!(answered, Ok(_) | Err(ModelError::Provider(_))) {
            conversation.calls += 1;
        }
        let served_count = conversation.requests.len() as u64;
        match answered {
            Ok(r) => {
                let (mut whole, mut chunks) = match served_answer(r, request.options.stream) {
                    Ok(a) => a,
                    Err(message) => {
                        return (
                            Reply::NoAnswer(message.clone()),
                            refusal(provider, 400, &message),
                        );
                    }
                };
                // The suite's answer goes to an agent that ends its runs through an answer
                // tool as a call of it; the trace keeps the scripted text.
                let scripted = answer_tool(&whole, request, scenario).map(|(tool, param)| {
                    let text = whole.text.clone().unwrap_or_default();
                    let scripted = whole.clone();
                    whole = ModelResponse {
                        text: None,
                        tool_calls: vec![crate::llm::ToolCall {
                            id: "call_answer".to_owned(),
                            name: tool.clone(),
                            arguments: crate::llm::Arguments::parsed(
                                serde_json::json!({ param: text }),
                            ),
                        }],
                        finish: Finish::ToolUse,
                        ..whole.clone()
                    };
                    if chunks.is_some() {
                        let c = chunks_of(&whole);
                        whole.chunks = c.len();
                        chunks = Some(c);
                    }
                    self.answered_through = Some(tool);
                    scripted
                });
                // A request that asks for JSON gets the script's text in that form; the
                // trace keeps the scripted text.
                let seed = crate::scenario::generate::seed(&self.case.id, served_count);
                let cut = chunks
                    .as_ref()
                    .is_some_and(|c| !c.iter().any(|c| matches!(c, Chunk::Finish { .. })));
                let scripted = scripted.or_else(|| {
                    let text = in_form(&whole, &request.asks.form, seed).filter(|_| !cut)?;
                    let kept = whole.clone();
                    self.shaped = Some(text.clone());
                    self.shape_chosen =
                        matches!(request.asks.form, crate::provider::TextForm::Json);
                    whole.text = Some(text);
                    if chunks.is_some() {
                        let c = chunks_of(&whole);
                        whole.chunks = c.len();
                        chunks = Some(c);
                    }
                    Some(kept)
                });
                if let Some(message) = refused_choice(&request.asks.tool_choice, &whole) {
                    // Nothing went out: no notice of a form or an answer tool.
                    self.shaped = None;
                    self.answered_through = None;
                    return (
                        Reply::NoAnswer(message.clone()),
                        refusal(provider, 400, &message),
                    );
                }
                let (id_prefix, id_len, call_prefix, call_len) = match api {
                    Api::ChatCompletions => ("chatcmpl-", 29, "call_", 24),
                    Api::Responses => ("resp_", 48, "call_", 24),
                    Api::Messages => ("msg_01", 22, "toolu_01", 22),
                    Api::GenerateContent => ("", 22, "", 22),
                };
                let id = self.mint(id_prefix, id_len, api == Api::Responses);
                self.ids.insert(id.clone(), at);
                // The wire's call ids, by the script's.
                let mut wire: BTreeMap<String, String> = BTreeMap::new();
                for c in &whole.tool_calls {
                    let w = self.mint(call_prefix, call_len, false);
                    self.ids.insert(w.clone(), at);
                    wire.insert(c.id.clone(), w);
                }
                let rename = |id: &str| wire.get(id).cloned().unwrap_or_else(|| id.to_owned());
                self.wire_ids = whole.tool_calls.iter().map(|c| rename(&c.id)).collect();
                // A portable tool's calls go out under the name of the agent's tool it stands
                // for.
                let bindings = self.conversations[at].binding.clone().unwrap_or_default();
                let offered = |name: &str| {
                    bindings
                        .iter()
                        .find(|b| b.declared == name)
                        .and_then(|b| b.offered.clone())
                        .unwrap_or_else(|| name.to_owned())
                };
                let mut meta = AnswerMeta::for_request(request, id, EPOCH_S + served_count);
                let mut on_wire = whole.clone();
                for c in &mut on_wire.tool_calls {
                    c.id = rename(&c.id);
                    c.name = offered(&c.name);
                }
                self.wire_said = Some(super::conversation::said(
                    on_wire.text.as_deref().unwrap_or_default(),
                    &on_wire.tool_calls,
                ));
                if api == Api::Responses {
                    // Stored as the provider stores it, for `previous_response_id`: the output
                    // items as a client echoes them back.
                    let output = responses::render_body(&on_wire, &meta, body)["output"].clone();
                    let c = &mut self.conversations[at];
                    c.stored.insert(meta.id.clone(), (c.requests.len(), output));
                }
                let body = match chunks {
                    Some(chunks) => {
                        meta.complete = chunks.iter().any(|c| matches!(c, Chunk::Finish { .. }));
                        let chunks: Vec<Chunk> = chunks
                            .into_iter()
                            .map(|c| match c {
                                Chunk::ToolCallStart { index, id, name } => Chunk::ToolCallStart {
                                    index,
                                    id: rename(&id),
                                    name: offered(&name),
                                },
                                other => other,
                            })
                            .collect();
                        let events = match api {
                            Api::Responses => {
                                responses::render_stream(&chunks, &on_wire, &meta, body)
                            }
                            _ => provider.render_stream(&chunks, whole.usage, &meta),
                        };
                        AnswerBody::Events {
                            events,
                            latency_ms: whole.latency_ms,
                            cut: !meta.complete,
                        }
                    }
                    None => AnswerBody::Json(match api {
                        Api::Responses => responses::render_body(&on_wire, &meta, body),
                        _ => provider.render_body(&on_wire, &meta),
                    }),
                };

                let answer = scripted.unwrap_or(whole);
                let calls = answer.tool_calls.len();
                let answer = provider.delivered(answer);
                self.withheld = answer.tool_calls.len() < calls;
                (
                    Reply::Answer(answer),
                    HttpAnswer {
                        status: 200,
                        headers: Vec::new(),
                        body,
                    },
                )
            }
            Err(ModelError::Provider(mut f)) => {
                // A scripted server fault that states no message is served as the API serves
                // one: OpenAI's is a 500 with its own words (the default speaks of a 529,
                // which is Anthropic's overload status and what it gets).
                if provider == Provider::Openai
                    && f.kind == crate::llm::FaultKind::ServerError
                    && f.message == crate::mock::default_fault_message(f.kind)
                {
                    f.message = OPENAI_SERVER_ERROR.to_owned();
                }
                let (status, body) =
                    provider.render_fault_hinted(f.kind, &f.message, f.retry_after_ms);
                let mut headers = Vec::new();
                if let Some(ms) = f.retry_after_ms {
                    headers.push(("retry-after-ms", ms.to_string()));
                    headers.push(("retry-after", ms.div_ceil(1000).to_string()));
                }
                (
                    Reply::Fault(f),
                    HttpAnswer {
                        status,
                        headers,
                        body: AnswerBody::Json(body),
                    },
                )
            }
            Err(ModelError::Script(e)) => {
                let message = format!("harness serve: {e}");
                (
                    Reply::NoAnswer(message.clone()),
                    refusal(provider, 400, &message),
                )
            }
        }
    }
}
