//! The scenario format (version 1): the serde types a scenario file deserializes into.
//! Field docs here are the format's reference: they become the descriptions of the shipped JSON
//! Schema (`schema/scenario.schema.json`). Cross-field rules live in `validate.rs`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

pub use crate::vocabulary::{Decision, OutcomeKind, Prices};

/// The newest scenario format this build reads.
pub const FORMAT_VERSION: u32 = 1;

/// One scripted agent run: the tools on offer, the mock model, signals, the defence profile and
/// what the run must show.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Format version; must be 1.
    pub format: u32,
    /// What the scenario shows, for the reviewer.
    #[serde(default)]
    pub description: String,
    /// Family the scenario belongs to; the summary and the metrics group by it.
    pub family: String,
    /// Free tags for selection and grouping.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Defence profile the scenario runs under: `none`, `ironclaw`, `moltis` (at PR #664),
    /// `moltis-head` (Moltis' `main` at 6bd2d118), `agentloop` or `plan-step` (`harness profile`
    /// lists them).
    #[serde(default = "default_profile")]
    pub profile: String,
    /// Overrides of the profile's configuration (same keys as `harness profile NAME` prints).
    #[serde(default)]
    #[schemars(schema_with = "crate::policy::config_patch_schema")]
    pub config: Map<String, Value>,
    /// The system prompt.
    #[serde(default)]
    pub system: String,
    /// The user's request that starts the run.
    pub user: String,
    /// Tools offered to the model, in order.
    #[serde(default)]
    pub tools: Vec<ToolDef>,
    /// The scripted mock model.
    pub model: ModelScript,
    /// External signals delivered at the start of an iteration.
    #[serde(default)]
    pub signals: Vec<SignalDef>,
    /// Decisions on tool calls that need approval, consumed in order. A pause with no decision
    /// left ends the run with `need_approval`.
    #[serde(default)]
    pub approvals: Vec<ApprovalDef>,
    /// Further user messages: after a turn ends with a text answer, the next one starts a new
    /// turn (a fresh loop, as a chat runtime starts one per message; under `agentloop` the same
    /// loop goes on, its iteration count, detector and spending kept, as the book's one
    /// `AgentLoop` instance carries the conversation).
    #[serde(default)]
    pub followups: Vec<String>,
    /// Files the agent's workspace holds and their line counts, for checks that verify
    /// `file:line` citations.
    #[serde(default)]
    pub workspace: BTreeMap<String, u32>,
    /// What the run under the scenario's own profile must show.
    #[serde(default)]
    pub expect: Expect,
    /// Also run the scenario under these profiles (key), each with its own expectations (value).
    /// Each becomes a case with id `<scenario id>@<profile>` and a golden of its own.
    #[serde(default)]
    pub compare: BTreeMap<String, Expect>,
    /// The initial plan, for profiles with the plan/step loop (`plan-step`), which need one.
    #[serde(default)]
    pub plan: Option<PlanDef>,
    /// How `harness serve` and `harness exec` read a black-box agent's requests.
    #[serde(default)]
    pub serve: ServeDef,
    /// What the scenario tests as a case of a failure-mode suite (`harness suite`): read by
    /// the report card, which judges any loop — an agent's or an engine profile's — by it.
    #[serde(default)]
    pub suite: Option<SuiteDef>,
}

/// A failure-mode suite's view of a scenario (`harness suite`).
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SuiteDef {
    /// `failure`: a way the model misbehaves that a good loop recovers from; `legitimate`: work
    /// that looks like a failure mode and that a good loop lets finish.
    pub kind: SuiteKind,
    /// What the report card calls the case.
    pub title: String,
    /// A part of the final answer of a run that went well (the model's answer once the loop
    /// recovered, or at the end of the legitimate work).
    pub answer: String,
    /// What must happen for the verdict to mean anything; when it did not, the case is "not
    /// exercised" (or "could not be driven") with the reason, never a verdict.
    #[serde(default)]
    pub premise: Premise,
}

/// What a suite case needs of the run before its verdict says anything (docs/suite.md).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Premise {
    /// How many distinct tools the case drives: an agent that offers fewer (none at all, on
    /// its first request) cannot be driven. Default: the scenario's portable tools.
    #[serde(default)]
    pub tools: Option<u32>,
    /// The first N calls that ran must read as failed (the invalid calls the case is about):
    /// a call the agent ran and reported as a success means its tool accepted what the case
    /// meant to be invalid, or its failures are unreadable.
    #[serde(default)]
    pub fail_first: u32,
    /// Every later call that ran must read as a success (the valid calls the case is about):
    /// a failure means the agent's tool rejects arguments valid for its own schema.
    #[serde(default)]
    pub succeed: bool,
}

/// The two kinds of suite cases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SuiteKind {
    /// A failure mode.
    Failure,
    /// Legitimate work a defence must not stop.
    Legitimate,
}

/// How `harness serve` and `harness exec` read a black-box agent's requests.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServeDef {
    /// Regular expressions that mark a tool result the agent sends back as failed, searched
    /// anywhere in its text; checked in order after the provider's flag (`is_error`) and
    /// before the built-in shapes (docs/black-box.md).
    #[serde(default)]
    pub failure: Vec<String>,
    /// Also read the built-in failure shapes (`Error: …`, tracebacks, JSON error objects, …).
    #[serde(default = "yes")]
    pub builtin_failures: bool,
    /// The exit codes `harness exec` accepts from the agent command; any other fails every
    /// conversation of the run (`--allow-exit` adds more). Default `[0]`.
    #[serde(default = "zero_exit", skip_serializing_if = "is_zero_exit")]
    pub exit_codes: Vec<i32>,
}

fn zero_exit() -> Vec<i32> {
    vec![0]
}

fn is_zero_exit(codes: &Vec<i32>) -> bool {
    codes == &[0]
}

impl Scenario {
    /// How many of its tools are portable (a `bind` rule stands them for an agent's own).
    pub fn portable_tools(&self) -> u32 {
        u32::try_from(self.tools.iter().filter(|t| t.bind.is_some()).count()).unwrap_or(u32::MAX)
    }

    /// A scenario made from a recording, before its tools and script are filled in: format 1,
    /// profile `none`, nothing else.
    pub fn recorded(family: &str, tags: Vec<String>, description: String) -> Self {
        Self {
            format: 1,
            description,
            family: family.to_owned(),
            tags,
            profile: default_profile(),
            config: Map::new(),
            system: String::new(),
            user: String::new(),
            tools: Vec::new(),
            model: ModelScript::default(),
            signals: Vec::new(),
            approvals: Vec::new(),
            followups: Vec::new(),
            workspace: BTreeMap::new(),
            expect: Expect::default(),
            compare: BTreeMap::new(),
            plan: None,
            serve: ServeDef::default(),
            suite: None,
        }
    }
}

impl Default for ServeDef {
    fn default() -> Self {
        Self {
            failure: Vec::new(),
            builtin_failures: true,
            exit_codes: zero_exit(),
        }
    }
}

fn yes() -> bool {
    true
}

/// A plan for the plan/step loop: the titles of its steps, run in order.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanDef {
    /// Step titles, in order; each fills `{step}` of the step prompt.
    pub steps: Vec<String>,
}

fn default_profile() -> String {
    "none".to_owned()
}

/// A tool: its schema as offered to the model and its scripted outcomes.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolDef {
    /// The tool's name, as the model calls it.
    pub name: String,
    /// Description offered to the model.
    #[serde(default)]
    pub description: String,
    /// JSON Schema of the arguments (an object schema; `{}` accepts anything).
    #[serde(default = "empty_object")]
    pub schema: crate::llm::Shared,
    /// Virtual latency of one call in milliseconds, unless an outcome says otherwise.
    #[serde(default)]
    pub latency_ms: u64,
    /// Scripted outcomes, first match wins.
    #[serde(default)]
    pub outcomes: Vec<OutcomeDef>,
    /// Outcome when no rule matches. Without one, an unmatched call is a scenario error.
    #[serde(default)]
    pub default: Option<OutcomeDef>,
    /// Whether the runtime asks for approval before running it (used by profiles with approvals).
    #[serde(default)]
    pub needs_approval: bool,
    /// Makes the scenario portable: served to an agent (`serve`, `exec`), the tool stands for
    /// one the agent offers, chosen by this rule — `any` (the first offered tool not bound
    /// already), `position:N` (the N-th offered, from 1), `required:TYPE` (the first with a
    /// required parameter of that JSON type), `name:GLOB` (the first whose name matches, `*`
    /// any run of characters). The model's calls of the tool go out under the bound tool's
    /// name, with arguments generated from its schema where a call says `generate`; the trace
    /// keeps this tool's name and notes the binding. Under the engine's own profiles (`run`)
    /// the tool is this one, as declared.
    #[serde(default)]
    #[schemars(regex(
        pattern = r"^(any|position:[1-9][0-9]*|required:(string|integer|number|boolean|array|object)|name:.+)$"
    ))]
    pub bind: Option<String>,
}

/// How a portable tool picks the agent's tool it stands for (see [`ToolDef::bind`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bind {
    /// The first offered tool not bound already.
    Any,
    /// The N-th offered tool, from 1.
    Position(usize),
    /// The first offered tool with a required parameter of this JSON type.
    Required(String),
    /// The first offered tool whose name matches this glob (`*`: any run of characters).
    Name(String),
}

/// The JSON types a `required:TYPE` binding names.
pub const JSON_TYPES: [&str; 6] = ["string", "integer", "number", "boolean", "array", "object"];

impl Bind {
    /// Read a `bind` value; what is wrong with it otherwise.
    pub fn parse(text: &str) -> Result<Self, String> {
        let form = "`any`, `position:N`, `required:TYPE` or `name:GLOB`";
        match text.split_once(':') {
            None if text == "any" => Ok(Self::Any),
            Some(("position", n)) => match n.parse::<usize>() {
                Ok(n) if n >= 1 => Ok(Self::Position(n)),
                _ => Err(format!(
                    "`{text}`: a position counts the offered tools from 1"
                )),
            },
            Some(("required", t)) if JSON_TYPES.contains(&t) => Ok(Self::Required(t.to_owned())),
            Some(("required", t)) => Err(format!(
                "`{t}` is not a JSON type; one of {}",
                JSON_TYPES.join(", ")
            )),
            Some(("name", glob)) if !glob.is_empty() => Ok(Self::Name(glob.to_owned())),
            _ => Err(format!("`{text}` is not a binding; it is {form}")),
        }
    }
}

impl std::fmt::Display for Bind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Any => write!(f, "any"),
            Self::Position(n) => write!(f, "position:{n}"),
            Self::Required(t) => write!(f, "required:{t}"),
            Self::Name(g) => write!(f, "name:{g}"),
        }
    }
}

/// What a call gets past the results a recording holds for its tool (the default outcome of
/// the tools of scenarios made from recordings).
pub const NO_RESULT: &str = "(no result was recorded for this call)";

impl ToolDef {
    /// A tool with no outcomes yet, at no latency.
    pub fn open(name: &str, description: &str, schema: impl Into<crate::llm::Shared>) -> Self {
        Self {
            name: name.to_owned(),
            description: description.to_owned(),
            schema: schema.into(),
            latency_ms: 0,
            outcomes: Vec::new(),
            default: None,
            needs_approval: false,
            bind: None,
        }
    }
}

/// The tool named `name` in `tools`, added (an open object schema, no outcomes) when it is not
/// there yet: a tool a recording shows called.
pub fn called_tool<'a>(tools: &'a mut Vec<ToolDef>, name: &str) -> &'a mut ToolDef {
    let at = match tools.iter().position(|t| t.name == name) {
        Some(i) => i,
        None => {
            tools.push(ToolDef::open(
                name,
                "",
                serde_json::json!({"type": "object"}),
            ));
            tools.len() - 1
        }
    };
    &mut tools[at]
}

impl OutcomeDef {
    /// The failure [`NO_RESULT`].
    pub fn no_result() -> Self {
        Self {
            error: Some(NO_RESULT.to_owned()),
            ..Self::default()
        }
    }
}

fn empty_object() -> crate::llm::Shared {
    Value::Object(Map::new()).into()
}

/// A scripted outcome (exactly one of `ok`, `error`, `fail`) and, in `outcomes`, the calls it
/// applies to (`args`, `args_contain`, `on_call`; none of them in `default`).
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutcomeDef {
    /// Matches when the parsed arguments equal this value (key order ignored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Value>,
    /// Matches when the arguments contain these keys with these values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args_contain: Option<Map<String, Value>>,
    /// Matches on the 1-based count of calls to this tool so far (this call included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_call: Option<Bound>,
    /// Matches when the arguments break the tool's schema (`true`: no object, a required
    /// field missing, or a field of another JSON type than its `type` says) or keep it
    /// (`false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args_invalid: Option<bool>,
    /// Success with this output text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ok: Option<String>,
    /// Failure with this error text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Failure with no error text (`fail = true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fail: Option<bool>,
    /// Virtual latency of this outcome in milliseconds (overrides the tool's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<u64>,
}

/// The mock model: rules that react to the request, then ordered turns.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelScript {
    /// Model name, for prices and the trace.
    #[serde(default = "default_model_name")]
    pub name: String,
    /// Virtual latency of each response in milliseconds, unless a turn says otherwise.
    #[serde(default)]
    pub latency_ms: u64,
    /// Prices in US dollars per million tokens.
    #[serde(default)]
    pub prices: Prices,
    /// Reactive rules, checked in order before the turns on every call; the first whose
    /// conditions all hold answers.
    #[serde(default)]
    pub rules: Vec<RuleDef>,
    /// Ordered turns, consumed one per call when no rule answers.
    #[serde(default)]
    pub turns: Vec<TurnDef>,
    /// What to do with a scripted tool-call turn when the request offers no tools (stripped
    /// tools, force-text, a budget of none): `as_scripted`, the default, returns it anyway (the
    /// runtime then sees calls to tools it did not offer); `skip` skips tool-call turns until
    /// a text turn, as a provider that cannot call tools without them would.
    #[serde(default)]
    pub without_tools: WithoutTools,
    /// Tool names the model may call although no tool of that name is declared (to script
    /// calls to tools the runtime does not have).
    #[serde(default)]
    pub unregistered_tools: Vec<String>,
    /// How a served agent's side requests are answered — a title, a summary or memory pass,
    /// a subagent's or a router's conversation, which are not the loop under test
    /// (docs/black-box.md): by default a short text, never a tool call.
    #[serde(default)]
    pub side: Option<TurnDef>,
}

impl Default for ModelScript {
    /// What `[model]` with nothing in it reads as.
    fn default() -> Self {
        Self {
            name: default_model_name(),
            latency_ms: 0,
            prices: Prices::default(),
            rules: Vec::new(),
            turns: Vec::new(),
            without_tools: WithoutTools::default(),
            unregistered_tools: Vec::new(),
            side: None,
        }
    }
}

fn default_model_name() -> String {
    "mock".to_owned()
}

/// Mock behaviour for tool-call turns when no tools are offered.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum WithoutTools {
    /// Return the scripted turn as it is.
    #[default]
    AsScripted,
    /// Skip tool-call turns until a text turn (as a provider that cannot call tools would).
    Skip,
}

/// One model response.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TurnDef {
    /// Assistant text (alone, or alongside tool calls).
    #[serde(default)]
    pub text: Option<String>,
    /// Tool calls, in order.
    #[serde(default)]
    pub tool_calls: Vec<CallDef>,
    /// Finish reason; defaults to `tool_use` with tool calls and `stop` without.
    #[serde(default)]
    pub finish: Option<crate::llm::Finish>,
    /// Flag the response as malformed, as a runtime's response metadata would
    /// (`empty_tool_completion`, `empty_text_response`).
    #[serde(default)]
    pub anomaly: Option<crate::llm::Anomaly>,
    /// Fail the request instead of answering: a provider error.
    #[serde(default)]
    pub fault: Option<FaultDef>,
    /// Deliver the response as stream chunks instead of `text`/`tool_calls`/`finish`
    /// (`{ type = "text", text }`, `{ type = "tool_call_start", index, id, name }`,
    /// `{ type = "args_delta", index, text }`, `{ type = "tool_call_complete", index }`,
    /// `{ type = "finish", reason }`); the engine assembles them.
    #[serde(default)]
    pub stream: Vec<crate::llm::stream::Chunk>,
    /// Token usage; estimated from the text (4 chars a token) when absent.
    #[serde(default)]
    pub usage: Option<UsageDef>,
    /// Virtual latency in milliseconds (overrides the model's).
    #[serde(default)]
    pub latency_ms: Option<u64>,
    /// How many consecutive calls this turn answers (turns only).
    #[serde(default = "one")]
    pub repeat: u32,
}

fn one() -> u32 {
    1
}

/// A scripted provider failure.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FaultDef {
    /// `rate_limit`, `server_error`, `context_overflow` or `timeout`.
    pub kind: crate::llm::FaultKind,
    /// The provider's message (a default per kind when absent).
    #[serde(default)]
    pub message: Option<String>,
    /// The provider's retry-after hint in milliseconds (rate limits).
    #[serde(default)]
    pub retry_after_ms: Option<u64>,
}

/// Token usage of one response.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UsageDef {
    /// Input tokens.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
}

/// A tool call in a scripted turn.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CallDef {
    /// Call id; `call_<n>` (n counts the run's calls from 0) when absent.
    #[serde(default)]
    pub id: Option<String>,
    /// Tool name as the model emits it.
    pub name: String,
    /// Parsed arguments (default `{}`).
    #[serde(default)]
    pub args: Option<crate::llm::Args>,
    /// Arguments as the raw string the model emitted (may be malformed or cut off).
    #[serde(default)]
    pub raw_args: Option<String>,
    /// Arguments generated from the schema of the tool called (the agent's own, for a bound
    /// tool), the same on every run of the case: `empty` (`{}`), `missing_required` (a valid
    /// instance without its first required field), `wrong_type` (a valid instance whose first
    /// field has another JSON type), `valid` (an instance of the schema) or `truncated` (a valid
    /// instance cut off mid-JSON, as a call cut by the output limit). Instead of `args` and
    /// `raw_args`.
    #[serde(default)]
    pub generate: Option<Generate>,
    /// With `generate`: calls with the same `seed` get the same arguments (the same call
    /// repeated); without one, each call of the run gets its own.
    #[serde(default)]
    pub seed: Option<u64>,
}

/// How a call's arguments are generated from its tool's schema (see [`CallDef::generate`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Generate {
    /// `{}`.
    Empty,
    /// A valid instance without its first required field.
    MissingRequired,
    /// A valid instance whose first field has another JSON type.
    WrongType,
    /// An instance of the schema.
    Valid,
    /// A valid instance cut off mid-JSON.
    Truncated,
}

/// A reactive rule of the mock model.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RuleDef {
    /// Conditions on the request; all must hold. `{}` always holds.
    #[serde(default)]
    pub when: Conditions,
    /// The response when the rule fires.
    pub reply: TurnDef,
    /// Fire at most this many times.
    #[serde(default)]
    pub times: Option<u32>,
}

/// Conditions on what the engine sent.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Conditions {
    /// Why the engine calls: `turn` (the default: rules without `purpose` answer only loop
    /// turns), `summary` (a compaction summary) or `replan` (a plan/step replan).
    #[serde(default)]
    pub purpose: Option<crate::llm::Purpose>,
    /// Whether any tool is offered.
    #[serde(default)]
    pub tools_offered: Option<bool>,
    /// This tool is offered.
    #[serde(default)]
    pub tool_offered: Option<String>,
    /// Whether the engine asked for text only.
    #[serde(default)]
    pub force_text: Option<bool>,
    /// The engine's iteration number (1-based).
    #[serde(default)]
    pub iteration: Option<Bound>,
    /// The model call number within the run (1-based).
    #[serde(default)]
    pub call: Option<Bound>,
    /// The last message (any role) contains this text.
    #[serde(default)]
    pub last_message_contains: Option<String>,
    /// The last user-role message contains this text.
    #[serde(default)]
    pub last_user_contains: Option<String>,
    /// Some message of the conversation contains this text.
    #[serde(default)]
    pub any_message_contains: Option<String>,
    /// The last tool result was a failure.
    #[serde(default)]
    pub last_tool_failed: Option<bool>,
    /// How often this rule already fired.
    #[serde(default)]
    pub fired: Option<Bound>,
    /// Whether the runtime spoke up: a request held a user or system message that the previous
    /// request did not (a nudge, a loop warning, a correction — in any words; context sent
    /// before or with the task, in the first request, never counts, nor a refresh of it in
    /// place), and, once it has, on every later request. What a portable scenario's model
    /// listens to, whatever the agent.
    #[serde(default)]
    pub intervened: Option<bool>,
}

/// A scripted answer to an approval request.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalDef {
    /// `approve` or `reject`.
    pub decision: Decision,
    /// The tool the decision is for; when given, a pause for another tool is a scenario error.
    #[serde(default)]
    pub tool: Option<String>,
}

/// An external signal.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SignalDef {
    /// The iteration at whose start the signal arrives (1-based, counted over the whole run).
    pub at_iteration: u32,
    /// Stop the run.
    #[serde(default)]
    pub stop: bool,
    /// Inject this user message.
    #[serde(default)]
    pub inject: Option<String>,
    /// The stop comes from the runtime's pre-call hook (after injected messages, before the
    /// model call) rather than from the signal check at the top of the iteration.
    #[serde(default)]
    pub before_call: bool,
}

/// What a run must show.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// How the run ends.
    #[serde(default)]
    pub outcome: Option<OutcomeKind>,
    /// Bounds on the number of iterations.
    #[serde(default)]
    pub iterations: Option<Bound>,
    /// Bounds on the number of model calls.
    #[serde(default)]
    pub model_calls: Option<Bound>,
    /// Bounds on the number of executed tool calls.
    #[serde(default)]
    pub tool_calls: Option<Bound>,
    /// The final text contains this.
    #[serde(default)]
    pub text_contains: Option<String>,
    /// Event kinds that must appear at least once.
    #[serde(default)]
    pub must: Vec<String>,
    /// Event kinds that must not appear.
    #[serde(default)]
    pub must_not: Vec<String>,
    /// Finer event expectations: kind, field values, iteration, count bounds.
    #[serde(default)]
    pub events: Vec<EventExpect>,
    /// Event patterns that must occur in this order; other events may come between them. Each
    /// pattern matches the first event after the previous pattern's match.
    #[serde(default)]
    pub sequence: Vec<EventPattern>,
}

/// An expectation over the events of a kind.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EventExpect {
    /// Event kind (`intervention`, `tool_call_rejected`, …).
    pub kind: String,
    /// Field values the event must have (compared with the event's JSON form). The values of
    /// `policy` (interventions) and `source` (injected messages, notices) are defence ids:
    /// `moltis-reflex`, `moltis-auto-continue`, `moltis-answer-fallback`, `final-text` (the final answer as the runtime hands it over), `moltis-forced-exec`, `moltis-empty-name-retry`, `moltis-text-calls`,
    /// `moltis-malformed-call-retry`, `ironclaw-intent`, `ironclaw-truncation`,
    /// `ironclaw-duplicate`, `ironclaw-budget`, `ironclaw-recovery`, `cost-guard`,
    /// `agentloop-continuation`, `agentloop-loop-detector`, `agentloop-citations`, `plan-step`,
    /// and `agent` (a black-box agent under `harness exec`). An intervention's `action` is one
    /// of `nudge`, `warn`, `limit_nudge`, `discard`, `continue`, `unverified_citations`,
    /// `lenient_envelope` (stage 1), `strip_tools`, `force_text`, `skip_batch`, `infer_done`,
    /// `force_done`, `stutter_guard` (stage 2), `stop`, `fail` (stage 3). A value no event can
    /// carry is an error.
    #[serde(default, rename = "where")]
    pub where_: Map<String, Value>,
    /// Only events of these iterations: an exact iteration (`3`) or a range
    /// (`{ min = 3 }`), counted over the whole run as `iterations` is; events before the
    /// first iteration are in iteration 0.
    #[serde(default)]
    pub iteration: Option<Bound>,
    /// How many matching events; default at least one.
    #[serde(default)]
    pub count: Option<Bound>,
}

/// One step of an ordered `sequence`: an event of this kind, with these field values, in these
/// iterations.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EventPattern {
    /// Event kind (`intervention`, `tool_call_rejected`, …).
    pub kind: String,
    /// Field values the event must have, as in `events`.
    #[serde(default, rename = "where")]
    pub where_: Map<String, Value>,
    /// The event's iteration: exact (`3`) or a range (`{ min = 3, max = 5 }`), as in `events`.
    #[serde(default)]
    pub iteration: Option<Bound>,
}

impl EventExpect {
    /// What the expectation counts, for messages (see [`EventPattern::describe`]).
    pub fn describe(&self) -> String {
        describe_pattern(&self.kind, &self.where_, self.iteration)
    }
}

impl EventPattern {
    /// `` `intervention` where {"stage":2} in iteration 3 ``, for messages.
    pub fn describe(&self) -> String {
        describe_pattern(&self.kind, &self.where_, self.iteration)
    }
}

fn describe_pattern(kind: &str, where_: &Map<String, Value>, iteration: Option<Bound>) -> String {
    let mut out = format!("`{kind}`");
    if !where_.is_empty() {
        out.push_str(&format!(" where {}", Value::Object(where_.clone())));
    }
    if let Some(b) = iteration {
        out.push_str(&match (b.min, b.max) {
            (Some(a), Some(z)) if a == z => format!(" in iteration {a}"),
            _ => format!(" in iterations {}", b.describe()),
        });
    }
    out
}

/// A count bound: an exact number (`3`) or a range (`{ min = 1, max = 5 }`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Bound {
    /// Inclusive lower bound.
    pub min: Option<u64>,
    /// Inclusive upper bound.
    pub max: Option<u64>,
}

impl Bound {
    /// Does `n` lie within the bound?
    pub fn holds(&self, n: u64) -> bool {
        self.min.is_none_or(|m| n >= m) && self.max.is_none_or(|m| n <= m)
    }

    /// `3`, `>= 1`, `<= 5` or `1..=5`, for messages.
    pub fn describe(&self) -> String {
        match (self.min, self.max) {
            (Some(a), Some(b)) if a == b => a.to_string(),
            (Some(a), Some(b)) => format!("{a}..={b}"),
            (Some(a), None) => format!(">= {a}"),
            (None, Some(b)) => format!("<= {b}"),
            (None, None) => "any".to_owned(),
        }
    }
}

impl JsonSchema for Bound {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Bound".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "An exact count, or an inclusive range.",
            "anyOf": [
                { "type": "integer", "minimum": 0 },
                {
                    "type": "object",
                    "properties": {
                        "min": { "type": "integer", "minimum": 0 },
                        "max": { "type": "integer", "minimum": 0 }
                    },
                    "additionalProperties": false
                }
            ]
        })
    }
}

impl<'de> Deserialize<'de> for Bound {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Bound;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a whole number or a table `{ min = …, max = … }`")
            }
            fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<Bound, E> {
                Ok(Bound {
                    min: Some(n),
                    max: Some(n),
                })
            }
            fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<Bound, E> {
                u64::try_from(n)
                    .map(|n| self.visit_u64::<E>(n))
                    .map_err(|_| E::custom(format!("a count cannot be negative, found {n}")))?
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Bound, A::Error> {
                let mut bound = Bound::default();
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "min" => bound.min = Some(map.next_value()?),
                        "max" => bound.max = Some(map.next_value()?),
                        other => {
                            return Err(serde::de::Error::unknown_field(other, &["min", "max"]));
                        }
                    }
                }
                if let (Some(a), Some(b)) = (bound.min, bound.max) {
                    if a > b {
                        return Err(serde::de::Error::custom(format!(
                            "empty range: min {a} is greater than max {b}"
                        )));
                    }
                }
                Ok(bound)
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The constructors for scenarios made from recordings give what the format reads when
    /// the keys are left out.
    #[test]
    fn recorded_scenarios_start_as_the_format_defaults() {
        let empty: ModelScript = serde_json::from_value(serde_json::json!({})).expect("reads");
        let made = ModelScript::default();
        assert_eq!(
            serde_json::to_value(&made).ok(),
            serde_json::to_value(&empty).ok()
        );
        let s = Scenario::recorded("real", vec!["a".into()], "why".into());
        let read: Scenario = serde_json::from_value(serde_json::json!({
            "format": 1, "description": "why", "family": "real", "tags": ["a"], "user": "",
            "model": {}
        }))
        .expect("reads");
        assert_eq!(
            serde_json::to_value(&s).ok(),
            serde_json::to_value(&read).ok()
        );
        let mut tools = vec![ToolDef::open("exec", "Run", serde_json::json!({}))];
        called_tool(&mut tools, "exec")
            .outcomes
            .push(OutcomeDef::no_result());
        called_tool(&mut tools, "grep");
        assert_eq!(tools.len(), 2);
        assert_eq!(tools[0].outcomes.len(), 1);
        assert_eq!(*tools[1].schema, serde_json::json!({"type": "object"}));
    }
}
