//! The model side as the engine sees it: messages, requests, responses and the [`Model`] trait.
//! The scripted mock (`crate::mock`, above the scenario format it reads) and the live providers
//! (`crate::record`) implement the same trait, so record
//! and replay run the same engine code.

mod history;
pub mod stream;

pub use history::{History, RunningSum};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A message role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// System prompt or system note.
    System,
    /// The user, or the runtime speaking as the user.
    User,
    /// The model.
    Assistant,
    /// A tool result.
    Tool,
}

impl Role {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::System => "system",
            Self::User => "user",
            Self::Assistant => "assistant",
            Self::Tool => "tool",
        }
    }
}

/// One conversation message.
#[derive(Debug, Clone)]
pub struct Message {
    /// Who speaks.
    pub role: Role,
    /// Text content.
    pub content: String,
    /// For assistant messages: the tool calls it carries.
    pub tool_calls: Vec<ToolCall>,
    /// For tool messages: whether the call failed.
    pub failed: bool,
}

impl Message {
    /// Its size in bytes of text (content, call ids, names and arguments), for
    /// [`crate::limits::MAX_HISTORY_BYTES`].
    pub fn text_bytes(&self) -> usize {
        self.content.len()
            + self
                .tool_calls
                .iter()
                .map(|c| {
                    c.id.len()
                        + c.name.len()
                        + match &c.arguments {
                            Arguments::Parsed(v) => crate::json::text_bytes(v),
                            Arguments::Raw(s) => s.len(),
                        }
                })
                .sum::<usize>()
    }

    /// A plain message.
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            failed: false,
        }
    }
}

/// What a request that sends its start again added to the end of its task: the text after
/// `previous`'s last message in `messages`' last, when neither holds an answer (an assistant
/// message), both have as many messages, and both end on the user's message (Gemini CLI adds
/// its nudge to the last user turn, here the task). The loop speaking up, not context.
pub fn added_to_task<'a>(messages: &'a [Message], previous: &[Message]) -> Option<&'a str> {
    if messages.len() != previous.len() || previous.iter().any(|m| m.role == Role::Assistant) {
        return None;
    }
    let was = previous.last().filter(|m| m.role == Role::User)?;
    added_to(messages, &was.content)
}

/// The text `messages` added after `task` at the end of its last message, when it holds no
/// answer and ends on the user's message (see [`added_to_task`]).
pub fn added_to<'a>(messages: &'a [Message], task: &str) -> Option<&'a str> {
    if messages.iter().any(|m| m.role == Role::Assistant) {
        return None;
    }
    let now = messages.last().filter(|m| m.role == Role::User)?;
    appended(&now.content, task)
}

/// What a request added at the end of a system message of `previous`'s preamble (its messages
/// before the first answer, compared place by place), once the run has an answer: a client
/// that folds every system message into one system prompt (rig-based ones, IronClaw's
/// OpenAI-compatible provider among them) delivers the loop's warning so, on lines of its own
/// after the prompt it had. The loop speaking up, not context: context refreshed in place
/// rewrites the prompt rather than extending it by whole lines. (Before the first answer [`added_to_task`] applies.)
pub fn added_to_system<'a>(messages: &'a [Message], previous: &[Message]) -> Option<&'a str> {
    added_to_system_texts(
        messages,
        preamble_systems(previous).map(|(i, m)| (i, m.content.as_str())),
    )
}

/// The system messages of a request's preamble (its messages before the first answer), with
/// their places: what [`added_to_system_texts`] compares a later request with.
pub fn preamble_systems(messages: &[Message]) -> impl Iterator<Item = (usize, &Message)> {
    messages
        .iter()
        .take_while(|m| m.role != Role::Assistant)
        .enumerate()
        .filter(|(_, m)| m.role == Role::System)
}

/// [`added_to_system`] against the earlier request's preamble system texts `was`, each with
/// its place (a reader that keeps only those, not the whole request).
pub fn added_to_system_texts<'a, 'w>(
    messages: &'a [Message],
    was: impl IntoIterator<Item = (usize, &'w str)>,
) -> Option<&'a str> {
    if !messages.iter().any(|m| m.role == Role::Assistant) {
        return None;
    }
    was.into_iter()
        .filter(|(_, was)| !was.trim().is_empty())
        .find_map(|(i, was)| {
            let now = messages.get(i).filter(|m| m.role == Role::System)?;
            appended_lines(&now.content, was)
        })
}

/// The text `now` holds after all of `was` on lines of its own (not empty), trimmed: a
/// prompt whose last line runs on is rewritten, not extended.
fn appended_lines<'a>(now: &'a str, was: &str) -> Option<&'a str> {
    let rest = now.strip_prefix(was)?;
    let after = rest.trim_start_matches([' ', '\t']);
    (after.starts_with(['\n', '\r']) || was.ends_with('\n'))
        .then(|| appended(now, was))
        .flatten()
}

/// The text `now` holds after all of `was` (not empty), trimmed.
fn appended<'a>(now: &'a str, was: &str) -> Option<&'a str> {
    let added = now.strip_prefix(was)?.trim();
    (!added.is_empty()).then_some(added)
}

/// A tool as offered to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// JSON Schema of the arguments, shared with the scenario's tool and every request that
    /// offers it: its compact text, which the mock's token estimate counts, is written once.
    pub schema: Shared,
}

/// A JSON value shared rather than copied, its compact text ([`Shared::text`]) and canonical
/// text ([`Shared::canonical`]) written once, the first time something asks for them, and
/// shared with every holder. Call arguments ([`Args`]) and tools' parameter schemas
/// ([`ToolSpec::schema`]) are such values.
#[derive(Clone)]
pub struct Shared(std::sync::Arc<ArgsInner>);

/// Parsed call arguments, [`Shared`]: one call's arguments pass from the script to the
/// response, the conversation, the decoded batch, the trace and the defences. Their compact
/// text is written once for the token estimate, the trace and the golden; their canonical
/// text, which the defences and the metrics key calls by, once too.
pub type Args = Shared;

struct ArgsInner {
    value: Value,
    text: std::sync::OnceLock<Box<str>>,
    canonical: std::sync::OnceLock<Box<str>>,
}

impl Shared {
    /// A shared value holding `value`.
    pub fn new(value: Value) -> Self {
        Self(std::sync::Arc::new(ArgsInner {
            value,
            text: std::sync::OnceLock::new(),
            canonical: std::sync::OnceLock::new(),
        }))
    }

    /// The compact JSON text, in the value's own key order (what [`crate::json::compact`]
    /// writes): made the first time it is asked for.
    pub fn text(&self) -> &str {
        self.0
            .text
            .get_or_init(|| crate::json::compact(&self.0.value).into())
    }

    /// The canonical JSON text, keys sorted at every level (what [`crate::json::canonical`]
    /// writes): made the first time it is asked for.
    pub fn canonical(&self) -> &str {
        self.0
            .canonical
            .get_or_init(|| crate::json::canonical(&self.0.value).into())
    }

    /// The value, moved out when nothing else shares it.
    pub fn into_value(self) -> Value {
        match std::sync::Arc::try_unwrap(self.0) {
            Ok(inner) => inner.value,
            Err(shared) => shared.value.clone(),
        }
    }
}

impl std::ops::Deref for Shared {
    type Target = Value;

    fn deref(&self) -> &Value {
        &self.0.value
    }
}

impl From<Value> for Shared {
    fn from(value: Value) -> Self {
        Self::new(value)
    }
}

impl PartialEq for Shared {
    fn eq(&self, other: &Self) -> bool {
        self.0.value == other.0.value
    }
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.value.fmt(f)
    }
}

impl std::fmt::Display for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.value.fmt(f)
    }
}

impl Serialize for Shared {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.value.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Shared {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Value::deserialize(d).map(Self::new)
    }
}

impl schemars::JsonSchema for Shared {
    fn inline_schema() -> bool {
        Value::inline_schema()
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        Value::schema_name()
    }

    fn schema_id() -> std::borrow::Cow<'static, str> {
        Value::schema_id()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        Value::json_schema(generator)
    }
}

/// Arguments as the model produced them.
#[derive(Debug, Clone, PartialEq)]
pub enum Arguments {
    /// Already parsed (structured tool-call APIs, scripted turns).
    Parsed(Args),
    /// A raw string to decode (streams, raw scripted arguments).
    Raw(String),
}

impl Arguments {
    /// Parsed arguments from a value.
    pub fn parsed(value: Value) -> Self {
        Self::Parsed(Args::new(value))
    }

    /// The arguments as text: compact JSON (in the model's key order) or the raw string.
    pub fn text(&self) -> &str {
        match self {
            Self::Parsed(v) => v.text(),
            Self::Raw(s) => s,
        }
    }
}

/// A tool call requested by the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// Call id.
    pub id: String,
    /// Tool name as emitted.
    pub name: String,
    /// Arguments as emitted.
    pub arguments: Arguments,
}

/// Why the model stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Finish {
    /// Finished its answer.
    Stop,
    /// Asks for tools.
    ToolUse,
    /// Cut by the output limit.
    Length,
    /// Stopped by a content filter.
    ContentFilter,
    /// Hit a stop sequence.
    StopSequence,
}

impl Finish {
    /// snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stop => "stop",
            Self::ToolUse => "tool_use",
            Self::Length => "length",
            Self::ContentFilter => "content_filter",
            Self::StopSequence => "stop_sequence",
        }
    }
}

/// Token usage of one response.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Input tokens.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
}

/// Why the engine calls the model.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Purpose {
    /// A turn of the agent loop.
    #[default]
    Turn,
    /// A summary of the conversation, for compaction.
    Summary,
    /// A new plan after a failed step (plan/step executor).
    Replan,
}

impl Purpose {
    /// snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Turn => "turn",
            Self::Summary => "summary",
            Self::Replan => "replan",
        }
    }

    /// Whether this is an ordinary loop turn (serde skip helper).
    pub fn is_turn(&self) -> bool {
        *self == Self::Turn
    }
}

/// What the engine sends.
#[derive(Debug)]
pub struct ModelRequest<'a> {
    /// Why the engine calls.
    pub purpose: Purpose,
    /// Engine iteration (1-based).
    pub iteration: u32,
    /// Model call number within the run (1-based).
    pub call: u32,
    /// The conversation so far.
    pub messages: &'a [Message],
    /// Tools offered on this call (empty when stripped or in force-text mode).
    pub tools: &'a [ToolSpec],
    /// Whether the engine asks for text only.
    pub force_text: bool,
    /// The lineage of `messages` ([`History::lineage`]) when they are the engine's
    /// conversation: a later request of the same lineage holds these messages and perhaps
    /// more after them, and offers either no tools or the same `tools` (the same list, where
    /// it was: the runtime's own). `None` when that is not known (a request built for one
    /// call).
    pub lineage: Option<u64>,
}

/// A response the runtime flags as malformed (IronClaw's response metadata).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Anomaly {
    /// Tools were offered and the model returned neither text nor tool calls.
    EmptyToolCompletion,
    /// A text-only request came back empty.
    EmptyTextResponse,
}

impl Anomaly {
    /// snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::EmptyToolCompletion => "empty_tool_completion",
            Self::EmptyTextResponse => "empty_text_response",
        }
    }
}

/// Kinds of provider failure a response can be replaced by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// HTTP 429: too many requests (may carry a retry-after hint).
    RateLimit = 0,
    /// HTTP 5xx or "overloaded".
    ServerError = 1,
    /// The request does not fit the model's context window.
    ContextOverflow = 2,
    /// The request timed out.
    Timeout = 3,
    /// Any other HTTP 4xx (a bad request, authentication, not found): the provider refused the
    /// request as sent, and sending it again gets the same answer.
    Refused = 4,
}

impl FaultKind {
    /// How many kinds there are (for counts indexed by `kind as usize`).
    pub const COUNT: usize = 5;

    /// snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::RateLimit => "rate_limit",
            Self::ServerError => "server_error",
            Self::ContextOverflow => "context_overflow",
            Self::Timeout => "timeout",
            Self::Refused => "refused",
        }
    }
}

/// A provider failure in place of a response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderFault {
    /// What failed.
    pub kind: FaultKind,
    /// The provider's message.
    pub message: String,
    /// The provider's retry-after hint, in milliseconds.
    pub retry_after_ms: Option<u64>,
    /// Virtual time the failed request took.
    pub latency_ms: u64,
}

impl ProviderFault {
    /// `kind from the provider: message`, the detail of a run this fault ended.
    pub fn describe(&self) -> String {
        format!("{} from the provider: {}", self.kind.as_str(), self.message)
    }
}

/// What the model answers.
#[derive(Debug, Clone)]
pub struct ModelResponse {
    /// Text content, if any.
    pub text: Option<String>,
    /// Tool calls, in order.
    pub tool_calls: Vec<ToolCall>,
    /// Finish reason.
    pub finish: Finish,
    /// Token usage.
    pub usage: Usage,
    /// Virtual latency in milliseconds.
    pub latency_ms: u64,
    /// Set when the runtime (or the script) flags the response as malformed.
    pub anomaly: Option<Anomaly>,
    /// Stream chunks the response was assembled from (0 when it came whole).
    pub chunks: usize,
    /// A streamed response not yet assembled (the engine assembles it; empty when whole).
    pub stream: Vec<stream::Chunk>,
}

#[cfg(test)]
impl ModelResponse {
    /// A whole answer of text alone that finished on its own, nothing used, nothing flagged.
    pub(crate) fn text_only(text: &str) -> Self {
        Self {
            text: Some(text.to_owned()),
            tool_calls: Vec::new(),
            finish: Finish::Stop,
            usage: Usage::default(),
            latency_ms: 0,
            anomaly: None,
            chunks: 0,
            stream: Vec::new(),
        }
    }
}

/// The model side of the loop.
pub trait Model {
    /// Answer one request.
    fn respond(&mut self, request: &ModelRequest<'_>) -> Result<ModelResponse, ModelError>;
}

/// A model-side failure.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    /// The mock's script has no answer: a scenario bug, reported as bad input.
    #[error(transparent)]
    Script(#[from] ScriptError),
    /// The provider failed (scripted fault, or a live provider error).
    #[error("{}", .0.describe())]
    Provider(ProviderFault),
}

/// The script ran out, or cannot answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", describe(self))]
pub struct ScriptError {
    /// 1-based model call.
    pub call: u32,
    /// Engine iteration.
    pub iteration: u32,
    /// Scripted turns (counting repeats).
    pub turns: u32,
    /// Why the engine called.
    pub purpose: Purpose,
}

fn describe(e: &ScriptError) -> String {
    if e.purpose.is_turn() {
        format!(
            "the mock model has no answer for model call {} (iteration {}): every scripted turn is used (turns: {}) and no rule matched",
            e.call, e.iteration, e.turns
        )
    } else {
        format!(
            "the mock model has no answer for the {} call {} (iteration {}): only rules with `when = {{ purpose = \"{}\" }}` answer such calls",
            e.purpose.as_str(),
            e.call,
            e.iteration,
            e.purpose.as_str()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::Args;
    use serde_json::{Value, json};

    #[test]
    fn args_text_is_the_compact_text_written_once_and_shared() {
        let values = [
            json!({}),
            json!([]),
            json!({"b": 1, "a": [1.5, "x\n\"\\", null, true], "é": {"z": {}}}),
            json!("control \u{1} and \u{7f}"),
            json!(-0.0),
            json!(u64::MAX),
            json!(i64::MIN),
            json!(0.30000000000000004),
        ];
        for v in values {
            let a = Args::new(v.clone());
            let b = a.clone();
            assert_eq!(a.text(), serde_json::to_string(&v).unwrap(), "{v}");
            assert_eq!(a.canonical(), crate::json::canonical(&v), "{v}");
            // Written once: the clone hands out the same texts.
            assert!(std::ptr::eq(a.text(), b.text()), "{v}");
            assert!(std::ptr::eq(a.canonical(), b.canonical()), "{v}");
            assert_eq!(*a, v);
            assert_eq!(a.to_string(), v.to_string());
            assert_eq!(format!("{a:?}"), format!("{v:?}"));
            assert_eq!(serde_json::to_value(&a).unwrap(), v);
            let back: Args = serde_json::from_value(v.clone()).unwrap();
            assert_eq!(back, a);
            // Shared, then alone: copied out, then moved out.
            assert_eq!(b.into_value(), v);
            assert_eq!(a.into_value(), v);
        }
        assert_ne!(Args::new(json!({"a": 1})), Args::new(json!({"a": 2})));
        let v: Value = json!({"k": "v"});
        assert_eq!(*Args::from(v.clone()), v);
    }
}
