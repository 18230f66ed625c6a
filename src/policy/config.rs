//! [`Config`]: every threshold and message text of every defence, the built-in profiles, and
//! patching a profile with a scenario's `[config]` table (located errors by key path).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

pub use crate::vocabulary::Prices;

impl RetryRule {
    /// No retry: the error ends the run.
    pub fn none() -> Self {
        Self {
            max_retries: 0,
            delay_ms: 0,
            max_delay_ms: 0,
            exponential: false,
            honour_retry_after: false,
        }
    }

    /// The wait before retry number `attempt` (1-based), given the provider's hint.
    pub fn delay(&self, attempt: u32, hint: Option<u64>) -> u64 {
        if let (true, Some(h)) = (self.honour_retry_after, hint) {
            return h.min(self.max_delay_ms.max(self.delay_ms));
        }
        if !self.exponential {
            return self.delay_ms;
        }
        let factor = 1u64
            .checked_shl(attempt.saturating_sub(1))
            .unwrap_or(u64::MAX);
        self.delay_ms.saturating_mul(factor).min(self.max_delay_ms)
    }
}

/// Engine configuration. A profile is one of these; a scenario patches it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Iterations before the run ends with `max_iterations` (each iteration is one model call;
    /// in the plan/step loop the cap counts every model call of the run, replans included, and
    /// 0 means no cap of harness's own: the step budgets and the replan limit end the run).
    pub max_iterations: u32,
    /// Failure text of a run that hit the cap; `{n}` is the cap.
    pub max_iterations_message: String,
    /// What a follow-up user message (a later turn) starts from.
    pub turn_state: TurnState,
    /// What the loop does with empty answers.
    pub empty_answer: EmptyAnswerConfig,
    /// How the calls of one batch run on the virtual clock.
    pub tool_execution: ToolExecution,
    /// What happens to a call whose raw arguments are not valid JSON.
    pub malformed_args: MalformedArgs,
    /// Tool message for a failed call; `{name}`, `{error}` and `{error_json}` are filled in.
    pub tool_error_message: String,
    /// Tool message for a call that failed without error text; `{name}` is filled in.
    pub tool_fail_message: String,
    /// The error text the defences and the trace give such a call; empty for none (Moltis
    /// since #1174 reads a tool's `{"success": false}` as the failure `tool returned success:
    /// false`, its message unchanged).
    pub tool_fail_error: String,
    /// A called tool is looked up by its name as the runtime cleans it (Moltis'
    /// `sanitize_tool_name`: trimmed, one pair of surrounding `"` and a `functions_` prefix
    /// removed, one trailing `_<digits>` cut, so `exec_2` runs `exec`); the defences and the
    /// trace keep the name as called.
    pub sanitize_tool_names: bool,
    /// With `sanitize_tool_names`, a call to `X_wasm` runs `X` whenever there is an `X`, even
    /// beside an `X_wasm` (Moltis since `78d98b40`, `resolve_tool_lookup`).
    pub wasm_alias: bool,
    /// A task that is one line `/sh <command>` (or `/sh@name <command>`) whose first answer
    /// calls nothing runs `exec({"command": <command>})` in its place, when there is an `exec`
    /// (Moltis' forced exec for explicit shell commands).
    pub forced_shell: bool,
    /// The user message of the one retry a run gets after an answer whose calls all have a
    /// name that cleans to nothing (Moltis' empty-tool-name retry; `{args}` is the first such
    /// call's arguments as JSON); empty for none. The answer's text stays in the history, its
    /// calls do not, and nothing runs.
    pub empty_name_retry_message: String,
    /// An answer without native calls whose text writes calls (a `` ```tool_call `` fence,
    /// `<function=…>`, `<invoke …>`, Zhipu's `<tool_call>` or a bare `{"tool": …}` object) runs
    /// them as if they were native, even on a turn whose tools were withheld; the history keeps
    /// the calls and what else the text said, not the markup (Moltis' text fallback,
    /// [`super::text_calls`]).
    pub text_calls: bool,
    /// The user message of the one retry a run gets after a text answer that reads as an
    /// attempt at a call but yields none (Moltis' malformed-call retry,
    /// [`super::text_calls::looks_like_a_failed_call`]); empty for none. The text stays in the
    /// history; the retry is an iteration of its own.
    pub malformed_call_retry_message: String,
    /// What becomes of a final answer's text before it is the run's outcome.
    pub final_text: FinalTextConfig,
    /// Pre-dispatch argument validation (Moltis).
    pub validation: ValidationConfig,
    /// Two-stage reflex-loop detector (Moltis).
    pub reflex: ReflexConfig,
    /// Tool-intent nudge (IronClaw).
    pub intent_nudge: IntentNudgeConfig,
    /// Truncated tool batches discarded, then force-text (IronClaw).
    pub truncation: TruncationConfig,
    /// Duplicate failing-batch tracker (IronClaw).
    pub duplicate: DuplicateConfig,
    /// Re-prompt after a short text answer (Moltis).
    pub auto_continue: AutoContinueConfig,
    /// What a text answer that no defence holds back does to the run.
    pub text_answer: TextAnswer,
    /// Per-turn tool-iteration budget: limit nudge, then force-text, then a hard ceiling
    /// (IronClaw's chat delegate).
    pub budget: BudgetConfig,
    /// Spending guard checked before each model call (IronClaw's cost guard, the book's cap).
    pub cost: CostConfig,
    /// Context compaction: one retry after a context overflow (IronClaw), or a summary call
    /// when the context estimate passes a threshold (the book).
    pub compaction: CompactionConfig,
    /// Retries after provider errors, per kind.
    pub retry: RetryConfig,
    /// A response cut by the output limit is continued with a prompt (the book).
    pub continuation: ContinuationConfig,
    /// Similarity loop detector checked before each call runs (the book's LoopDetector).
    pub similarity: SimilarityConfig,
    /// Unverifiable `file:line` citations in a final answer are sent back (the book).
    pub citations: CitationsConfig,
    /// Recovery from empty or malformed tool completions (IronClaw's job and container workers).
    pub recovery: RecoveryConfig,
    /// An empty model reply is replaced by a fallback text and flagged (IronClaw).
    pub empty_reply: EmptyReplyConfig,
    /// Tool calls that need approval pause the run (IronClaw).
    pub approvals: ApprovalConfig,
    /// The plan/step executor (clude_code); `enabled` swaps the loop for the plan/step loop.
    pub plan_step: PlanStepConfig,
}

/// What a follow-up user message starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TurnState {
    /// A new loop: the iteration count, the defences' counters and detectors start afresh
    /// (IronClaw runs `run_agentic_loop` per message, Moltis runs its runner per message).
    Fresh,
    /// The same loop goes on: the iteration count (and so the cap), the defences' state and the
    /// session cost run on across user messages (the book's `AgentLoop` instance holds
    /// `turnCount`, `messages`, `sessionCost` and its loop detector as fields, and `run()`
    /// resets none of them).
    Kept,
}

/// What the loop does with empty answers (Moltis' runner).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EmptyAnswerConfig {
    /// An empty final answer is replaced by the text of the last tool-call response that had
    /// any (Moltis' `last_answer_text`, taken once).
    pub last_text_fallback: bool,
    /// An empty answer that a defence holds back (auto-continue) is not added to the history.
    pub skip_in_history: bool,
}

/// What a text answer that no defence holds back does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TextAnswer {
    /// It is the final answer (chat and job delegates, Moltis, the book).
    Final,
    /// The loop goes on with the text in history (a delegate that never accepts text).
    Continue,
    /// Final only if it claims completion ("the job is complete" …); otherwise the loop goes
    /// on (IronClaw's container worker).
    CompletionPhrase,
}

/// IronClaw chat budget: with `tool_iterations = N`, a limit nudge at iteration N−1,
/// force-text from iteration N, and the loop's ceiling at N+1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BudgetConfig {
    /// On or off (off: the ceiling is `max_iterations`).
    pub enabled: bool,
    /// Tool iterations per turn (IronClaw's `max_tool_iterations`).
    pub tool_iterations: u32,
    /// Whether the limit nudge is sent at iteration N−1.
    pub limit_nudge: bool,
    /// The limit nudge (a system message).
    pub message: String,
}

/// Spending guard.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CostConfig {
    /// On or off.
    pub enabled: bool,
    /// Stop before a model call once the run has spent this many dollars (0: no cap).
    pub max_usd: f64,
    /// Warn before a model call once spending passes this fraction of `max_usd` (0: never).
    pub warn_fraction: f64,
    /// Stop before a model call once the run has used more tokens than this (0: no cap).
    pub max_tokens: u64,
    /// Failure text when a cap is reached; `{spent}` and `{cap}` are filled in with their
    /// unit (`$1.250000`, `200 tokens`).
    pub stop_message: String,
    /// Warning text; `{spent}` and `{cap}` are filled in (`$1.250000`).
    pub warn_message: String,
    /// Prices per model name, used when the scenario's model has no prices of its own.
    pub prices: BTreeMap<String, Prices>,
    /// Model whose prices apply to a model missing from `prices` (empty: none).
    pub fallback_model: String,
}

/// Context compaction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompactionConfig {
    /// After a context overflow, compact to the last user message and retry the call once.
    pub retry_on_overflow: bool,
    /// System note added when the overflow compaction dropped history.
    pub overflow_note: String,
    /// Summarise when the context estimate (JSON length / 4) passes this fraction of
    /// `context_tokens` (0: never).
    pub threshold: f64,
    /// The context window, in tokens.
    pub context_tokens: u64,
    /// Messages kept verbatim after a summary.
    pub keep_last: usize,
    /// The request for the summary (a user message after the older history).
    pub summary_prompt: String,
    /// The message that replaces the older history; `{summary}` is filled in.
    pub summary_message: String,
}

/// Retries after provider errors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RetryConfig {
    /// Whether a retried call uses up an iteration (the book) or not (Moltis).
    pub counts_iteration: bool,
    /// Whether the retry budgets and backoff run over the whole run (Moltis: one 5xx retry
    /// and ten rate-limit retries per run, backoff never reset) or restart after a success.
    pub per_run: bool,
    /// HTTP 5xx / overloaded.
    pub server_error: RetryRule,
    /// HTTP 429.
    pub rate_limit: RetryRule,
    /// Timeouts.
    pub timeout: RetryRule,
}

/// How one kind of provider error is retried.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RetryRule {
    /// Retries in a row at most (0: the error ends the run).
    pub max_retries: u32,
    /// Wait before the first retry, in virtual milliseconds.
    pub delay_ms: u64,
    /// Longest wait (exponential backoff doubles up to this).
    pub max_delay_ms: u64,
    /// Double the wait on each retry.
    pub exponential: bool,
    /// Wait as long as the provider's retry-after hint says, when it gives one.
    pub honour_retry_after: bool,
}

/// Continuation of a response cut by the output limit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContinuationConfig {
    /// On or off.
    pub enabled: bool,
    /// The prompt (a user message).
    pub message: String,
    /// A response whose stop reason the book's `switch` has no case for (a refusal, mapped to
    /// `content_filter`) falls through: its text is kept and the model is called again, tool
    /// calls unexecuted, until the cap. Off: such a text is a final answer.
    pub unhandled_goes_on: bool,
    /// Notice of a fall-through; `{reason}` is filled in.
    pub unhandled_notice: String,
}

/// The book's similarity loop detector.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SimilarityConfig {
    /// On or off.
    pub enabled: bool,
    /// Similar calls of one tool that count as a loop (info one before).
    pub max_repeats: u32,
    /// Share of argument keys that must be equal for two calls to be similar.
    pub similarity: f64,
    /// Info notice (not sent to the model); `{tool}` and `{count}` are filled in.
    pub info_message: String,
    /// Warning sent to the model; `{tool}`, `{count}` and `{first}` are filled in.
    pub warning_message: String,
}

/// Citation check of final answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CitationsConfig {
    /// On or off.
    pub enabled: bool,
    /// Send the answer back when more than this share of its citations cannot be verified.
    pub max_risk: f64,
    /// Checks per run at most.
    pub max_checks: u32,
    /// The message (a user message); `{unverified}` is filled in.
    pub message: String,
}

/// IronClaw's autonomous recovery from empty tool completions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecoveryConfig {
    /// On or off.
    pub enabled: bool,
    /// Empty completions in a row that end the run (the 1st nudges, the 2nd forces text).
    pub fail_at: u32,
    /// First nudge (a user message).
    pub nudge_message: String,
    /// Second nudge, before a text-only call (a user message).
    pub force_message: String,
    /// Failure text.
    pub failure_message: String,
}

/// Empty replies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EmptyReplyConfig {
    /// On or off.
    pub enabled: bool,
    /// Text that replaces an empty reply.
    pub fallback_text: String,
}

/// Approvals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalConfig {
    /// On or off (off: tools marked `needs_approval` run without asking).
    pub enabled: bool,
    /// Approve everything without pausing.
    pub auto_approve: bool,
    /// Final text after a rejection; `{tool}` is filled in.
    pub reject_message: String,
    /// Tools whose results may carry an authentication prompt that a pause keeps for the
    /// resume (IronClaw: `tool_auth`, `tool_install`).
    pub auth_tools: Vec<String>,
}

/// How the calls of one batch run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToolExecution {
    /// Concurrently: the batch takes as long as its slowest call.
    Parallel,
    /// One after another: the batch takes the sum.
    Sequential,
}

/// Treatment of raw arguments that are not valid JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MalformedArgs {
    /// Keep `{}` silently (Moltis at PR #664).
    EmptyObject,
    /// Fail the call with the parse error, without running it.
    Error,
    /// Repair what a cut stream left (Moltis since #983): `//` comments and trailing commas
    /// dropped, an open string closed, the missing `}` and `]` appended; `{}` when that does
    /// not parse either.
    Repair,
}

/// What becomes of a final answer's text before it is the run's outcome (the trace's
/// `model_response` keeps the text as the model sent it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FinalTextConfig {
    /// Moltis' `clean_response`: internal tags (`<think>…</think>`, `<reasoning>`,
    /// `<tool_calls>`, … and their `<|tag|>` forms; one left open to the end) and the
    /// capitalised reasoning tags removed, the chat template's `<|…|>` tokens removed, the
    /// rest trimmed. An answer cleaned to nothing stays empty.
    pub clean_tags: bool,
    /// With `clean_tags`, `<|…|>` tokens at the end removed too (Moltis after PR #664).
    pub strip_stop_tokens: bool,
    /// IronClaw's chat delegate: whole lines `[Called tool …]` and `[Tool … returned: …]`
    /// removed, the rest trimmed; an answer left with nothing becomes `fallback`.
    pub strip_tool_markers: bool,
    /// What stands for an answer `strip_tool_markers` left with nothing.
    pub fallback: String,
}

/// Moltis pre-dispatch validation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ValidationConfig {
    /// On or off.
    pub enabled: bool,
    /// First line of a rejection; `{tool}` is filled in.
    pub header: String,
    /// Last line of a rejection.
    pub footer: String,
    /// A `type` list passes a value of any listed type (upstream since `13342423`; at PR #664
    /// a list is not read and every value passes).
    pub union_types: bool,
    /// String values of scalar-typed properties are coerced before validation and dispatch
    /// (upstream since `2feb400e`); the reflex detector still sees the arguments as sent.
    pub coerce_scalars: bool,
    /// A rejection says how the call's arguments were decoded when they did not come as JSON
    /// (upstream since #983): a line `Argument decode status: arg_decode=<how> raw_len=<n>.`
    /// before the last, `<how>` being `empty-string` (a streamed call without argument text,
    /// or a text of white space only, then shown), `repaired-string` or `malformed-string`
    /// (with the parse error and the text's first 160 characters).
    pub decode_status: bool,
}

/// Moltis reflex-loop detector.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReflexConfig {
    /// On or off.
    pub enabled: bool,
    /// Identical failures that fire it (3 at PR #664, 2 later; 0 disables).
    pub window: u32,
    /// Whether a second firing strips the tools for one call.
    pub strip_on_second_fire: bool,
    /// Stage-1 message; `{n}`, `{calls}` and `{tool}` are filled in.
    pub nudge_message: String,
    /// One line of `{calls}`; `{i}`, `{tool}`, `{args}`, `{error}` are filled in.
    pub nudge_entry: String,
    /// Stage-2 message.
    pub strip_message: String,
}

/// IronClaw tool-intent nudge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IntentNudgeConfig {
    /// On or off.
    pub enabled: bool,
    /// Consecutive nudges at most.
    pub max_consecutive: u32,
    /// The nudge (a user message).
    pub message: String,
}

/// IronClaw truncation handling.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TruncationConfig {
    /// On or off.
    pub enabled: bool,
    /// Truncated batches (not reset by text) that switch force-text on.
    pub force_text_at: u32,
    /// The notice (a user message).
    pub notice: String,
}

/// IronClaw duplicate tracker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DuplicateConfig {
    /// On or off.
    pub enabled: bool,
    /// Identical all-failed batches in a row that inject the warning.
    pub warn_at: u32,
    /// … that also switch force-text on.
    pub force_text_at: u32,
    /// The warning (a user message).
    pub message: String,
}

/// Moltis auto-continue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AutoContinueConfig {
    /// On or off.
    pub enabled: bool,
    /// Auto-continues per run at most.
    pub max: u32,
    /// Tool calls the run must have made.
    pub min_tool_calls: u64,
    /// Texts at least this long (chars, trimmed) are final answers.
    pub min_chars: usize,
    /// The re-prompt (a user message).
    pub message: String,
}

/// clude_code's plan/step executor (`plan-step` profile): each step of a plan gets a budget of
/// model calls; a reply is one action read from its text (a tool JSON or a control envelope).
/// The three `*_inference`/`*_priority`/`*_at_cap` switches are the fixes proposed by the
/// infinite-loop analysis; none of them exists upstream, so all are off by default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanStepConfig {
    /// Use the plan/step loop instead of the agent loop (needs a `[plan]` in the scenario).
    pub enabled: bool,
    /// Model calls one step may use before it fails (master 100, branch `fix_test` 5).
    pub max_step_calls: u32,
    /// Replans before the run fails with `max_replans_reached` (master 2, `fix_test` 5).
    pub max_replans: u32,
    /// Messages kept in the history (a leading system message always stays).
    pub history_limit: usize,
    /// A reply with more than this many `[` or more than this many `{` is replaced by
    /// `stutter_message` before it is read.
    pub stutter_limit: usize,
    /// What replaces a stuttering reply; `{limit}` is filled in.
    pub stutter_message: String,
    /// The step prompt, appended as a user message before every model call of a step;
    /// `{n}` (1-based position), `{total}` (steps in the plan) and `{step}` (title) are filled in.
    pub step_prompt: String,
    /// The re-prompt (a user message) after a reply that is neither a tool call nor a control
    /// signal.
    pub invalid_output_message: String,
    /// How a tool result goes back to the model (a user message); `{name}` and `{result}`
    /// (the output, or `tool_error_message` / `tool_fail_message` filled in) are filled in.
    pub tool_result_message: String,
    /// The replan request (a user message, the last one of a `replan` model call); `{step}`
    /// (the failed step), `{reason}` (why it failed) and `{plan}` (the plan, one step a line
    /// with its status) are filled in.
    pub replan_prompt: String,
    /// Fixes 2 and 3 of the analysis (state inference, without fix 2's condition on the kind of
    /// step; the retry that reads completion): a successful tool call, or a reply that is neither a tool call
    /// nor a control signal but contains one of `completion_words`, marks the step done.
    pub completion_inference: bool,
    /// Words (matched case-insensitively as substrings) that claim completion.
    pub completion_words: Vec<String>,
    /// Fix 4 of the analysis, parse priority: the control envelope is read first (strictly: the
    /// whole reply is the object), and a JSON object whose `control` is `step_done` or `replan`
    /// is never read as a tool call.
    pub parse_priority: bool,
    /// A wider envelope reading from another upstream analysis (its
    /// `extract_first_json_and_ignore_rest`), not among the seed's fixes: a control envelope
    /// surrounded by prose, fenced, or followed by more JSON (the doubled envelope) is read
    /// before legacy markers and tool calls, with an intervention `lenient_envelope`.
    pub extract_first_json: bool,
    /// Fix 5 of the analysis, forced completion: when a step's budget runs out and the step's
    /// last call was a successful tool call, the step is done instead of failed (the seed's
    /// `iter_did_use_tool and not iter_failed`, flags of that last iteration only).
    pub forced_completion_at_cap: bool,
}

const PLAN_STEP_PROMPT: &str = "Step {n} of {total}: {step}\n\nAnswer with exactly one action and nothing else:\n- to use a tool: {\"tool\": \"<name>\", \"args\": {...}}\n- when this step's goal is reached: {\"control\": \"step_done\"}\n- when this step cannot succeed as planned: {\"control\": \"replan\", \"reason\": \"<why>\"}\nNo explanations, no other text.";
const PLAN_STEP_INVALID: &str = "That answer is not an action: it is neither a tool call ({\"tool\": ..., \"args\": ...}) nor a control message ({\"control\": \"step_done\"} or {\"control\": \"replan\"}). Answer again with exactly one of them and nothing else.";
const PLAN_STEP_REPLAN: &str = "The step \"{step}\" could not be completed ({reason}). The plan so far:\n{plan}\n\nWrite a new plan for the work that remains. Answer with only a JSON object of the form {\"steps\": [\"first step\", \"second step\"]}.";

const MOLTIS_NUDGE: &str = "SYSTEM INTERVENTION \u{2014} LOOP DETECTED\n\nYour last {n} tool calls were:\n{calls}\n\nThese are identical failed invocations. Retrying with the same arguments will fail again.\n\nOn your next turn:\n1. Do NOT call `{tool}` or any other tool.\n2. Do NOT repeat this call pattern.\n3. Respond to the user in plain text.\n4. Explain what you were trying to accomplish.\n5. If you do not know what arguments to use, ask the user for clarification.\n\nThe user is waiting for a text response.";
const MOLTIS_STRIP: &str = "SYSTEM INTERVENTION \u{2014} TOOLS DISABLED FOR THIS TURN\n\nYou have been caught in a reflex retry loop. Tools are disabled for this single turn. Respond to the user in plain text: explain what you were trying to do, and ask for clarification if needed.";
const IRONCLAW_INTENT: &str = "You said you would perform an action, but you did not include any tool calls.\nDo NOT describe what you intend to do \u{2014} actually call the tool now.\nUse the tool_calls mechanism to invoke the appropriate tool.";
const IRONCLAW_TRUNCATED: &str = "Your previous response was truncated while generating tool call parameters. The tool calls were discarded. Please try a different approach \u{2014} summarize or transform the data instead of echoing it verbatim in a tool call.";
const IRONCLAW_DUPLICATE: &str = "You have repeated the exact same failing tool call multiple times. The tool is returning the same error each time. Please try a DIFFERENT approach \u{2014} use different parameters, a different tool, or explain to the user what went wrong and what alternatives exist.";
const IRONCLAW_LIMIT: &str = "You are approaching the tool call limit. Provide your best final answer on the next response using the information you have gathered so far. Do not call any more tools.";
const IRONCLAW_COMPACTED: &str = "[Note: Earlier conversation history was automatically compacted to fit within the context window. The most recent exchange is preserved below.]";
const IRONCLAW_RECOVERY_1: &str = "Your previous tool-enabled response was empty or malformed.\nIf you need to use a tool, call it now with valid arguments.\nOtherwise, provide a real status update about work already completed.";
const IRONCLAW_RECOVERY_2: &str = "Your previous tool-enabled responses were empty or malformed.\nDo not call any more tools in the next reply.\nInstead, provide a concise final status based only on work already completed.\nIf the job is complete, say so explicitly. If not, explain what blocked you.";
const IRONCLAW_RECOVERY_FAIL: &str = "the selected model repeatedly returned empty or malformed tool-completion responses and is not reliable for autonomous tool use.";
const IRONCLAW_REJECTED: &str = "Tool '{tool}' was rejected. The agent will not execute this tool.\n\nYou can continue the conversation or try a different approach.";
const MOLTIS_MALFORMED_CALL: &str = "Your tool call was malformed. Retry with exact format:\n```tool_call\n{\"tool\": \"name\", \"arguments\": {...}}\n```";
const MOLTIS_EMPTY_NAME: &str = "Your structured tool call had an empty tool name. Retry the same tool call using the intended tool's exact name and the same arguments.\nExact arguments JSON:\n{args}";
const MOLTIS_CONTINUE: &str = "Your previous response ended without tool calls and without a final answer. If there are still steps to run, continue executing them. Otherwise reply with exactly: done";

impl Config {
    /// The bare loop: no defence, 25 iterations.
    pub fn none() -> Self {
        Self {
            max_iterations: 25,
            max_iterations_message: "iteration cap reached ({n})".to_owned(),
            turn_state: TurnState::Fresh,
            empty_answer: EmptyAnswerConfig {
                last_text_fallback: false,
                skip_in_history: false,
            },
            tool_execution: ToolExecution::Parallel,
            malformed_args: MalformedArgs::Error,
            tool_error_message: "Error: {error}".to_owned(),
            tool_fail_message: "Error: tool `{name}` failed".to_owned(),
            tool_fail_error: String::new(),
            sanitize_tool_names: false,
            wasm_alias: false,
            forced_shell: false,
            empty_name_retry_message: String::new(),
            text_calls: false,
            malformed_call_retry_message: String::new(),
            final_text: FinalTextConfig {
                clean_tags: false,
                strip_stop_tokens: false,
                strip_tool_markers: false,
                fallback: String::new(),
            },
            validation: ValidationConfig {
                enabled: false,
                header: "Tool call rejected before execution by `{tool}`.".to_owned(),
                footer: "Do not retry with the same arguments. If you do not know what arguments to use, respond in plain text and ask the user for clarification.".to_owned(),
                union_types: false,
                coerce_scalars: false,
                decode_status: false,
            },
            reflex: ReflexConfig {
                enabled: false,
                window: 3,
                strip_on_second_fire: true,
                nudge_message: MOLTIS_NUDGE.to_owned(),
                nudge_entry: "  {i}. {tool}({args}) \u{2192} error: {error}".to_owned(),
                strip_message: MOLTIS_STRIP.to_owned(),
            },
            intent_nudge: IntentNudgeConfig {
                enabled: false,
                max_consecutive: 2,
                message: IRONCLAW_INTENT.to_owned(),
            },
            truncation: TruncationConfig {
                enabled: false,
                force_text_at: 3,
                notice: IRONCLAW_TRUNCATED.to_owned(),
            },
            duplicate: DuplicateConfig {
                enabled: false,
                warn_at: 3,
                force_text_at: 5,
                message: IRONCLAW_DUPLICATE.to_owned(),
            },
            auto_continue: AutoContinueConfig {
                enabled: false,
                max: 2,
                min_tool_calls: 3,
                min_chars: 40,
                message: MOLTIS_CONTINUE.to_owned(),
            },
            text_answer: TextAnswer::Final,
            budget: BudgetConfig {
                enabled: false,
                tool_iterations: 10,
                limit_nudge: true,
                message: IRONCLAW_LIMIT.to_owned(),
            },
            cost: CostConfig {
                enabled: false,
                max_usd: 0.0,
                warn_fraction: 0.0,
                max_tokens: 0,
                stop_message: "cost limit reached: spent {spent} of {cap}".to_owned(),
                warn_message: "session cost passed 80% of the cap: {spent} of {cap}".to_owned(),
                prices: BTreeMap::new(),
                fallback_model: String::new(),
            },
            compaction: CompactionConfig {
                retry_on_overflow: false,
                overflow_note: IRONCLAW_COMPACTED.to_owned(),
                threshold: 0.0,
                context_tokens: 180_000,
                keep_last: 3,
                summary_prompt: "Summarise the key facts of the conversation above, briefly."
                    .to_owned(),
                summary_message: "[Summary of the earlier conversation: {summary}]".to_owned(),
            },
            retry: RetryConfig {
                counts_iteration: false,
                per_run: false,
                server_error: RetryRule::none(),
                rate_limit: RetryRule::none(),
                timeout: RetryRule::none(),
            },
            continuation: ContinuationConfig {
                enabled: false,
                message: "Please continue. Your previous answer was cut off.".to_owned(),
                unhandled_goes_on: false,
                unhandled_notice: "stop reason `{reason}` has no case in the loop's switch: the model is called again".to_owned(),
            },
            similarity: SimilarityConfig {
                enabled: false,
                max_repeats: 3,
                similarity: 0.8,
                info_message: "{tool} has been called {count} times in a row; one more similar call triggers loop detection".to_owned(),
                warning_message: "Possible loop detected: {tool} has been called {count} times (since turn {first})\nExplain what you intend to do next, or try a different approach.".to_owned(),
            },
            citations: CitationsConfig {
                enabled: false,
                max_risk: 0.5,
                max_checks: 1,
                message: "These code references could not be verified: {unverified}. Please re-check those locations.".to_owned(),
            },
            recovery: RecoveryConfig {
                enabled: false,
                fail_at: 3,
                nudge_message: IRONCLAW_RECOVERY_1.to_owned(),
                force_message: IRONCLAW_RECOVERY_2.to_owned(),
                failure_message: IRONCLAW_RECOVERY_FAIL.to_owned(),
            },
            empty_reply: EmptyReplyConfig {
                enabled: false,
                fallback_text: "I'm not sure how to respond to that.".to_owned(),
            },
            approvals: ApprovalConfig {
                enabled: false,
                auto_approve: false,
                reject_message: IRONCLAW_REJECTED.to_owned(),
                auth_tools: vec!["tool_auth".to_owned(), "tool_install".to_owned()],
            },
            plan_step: PlanStepConfig {
                enabled: false,
                max_step_calls: 100,
                max_replans: 2,
                history_limit: 30,
                stutter_limit: 50,
                stutter_message: "(reply withheld: it held more than {limit} opening brackets or braces, a sign of degenerate repetition)".to_owned(),
                step_prompt: PLAN_STEP_PROMPT.to_owned(),
                invalid_output_message: PLAN_STEP_INVALID.to_owned(),
                tool_result_message: "Result of tool `{name}`:\n{result}".to_owned(),
                replan_prompt: PLAN_STEP_REPLAN.to_owned(),
                completion_inference: false,
                completion_words: vec!["done".to_owned(), "finished".to_owned(), "\u{5b8c}\u{6210}".to_owned()],
                parse_priority: false,
                extract_first_json: false,
                forced_completion_at_cap: false,
            },
        }
    }

    /// The cap on model calls a served conversation gets: `max_iterations`, or none (`u32::MAX`)
    /// for the plan/step loop's 0, which means no cap of harness's own.
    pub fn call_cap(&self) -> u32 {
        match self.max_iterations {
            0 if self.plan_step.enabled => u32::MAX,
            n => n,
        }
    }

    /// The iteration ceiling in force: the budget's N+1 when the budget is on.
    pub fn ceiling(&self) -> u32 {
        if self.budget.enabled {
            self.budget.tool_iterations.saturating_add(1)
        } else {
            self.max_iterations
        }
    }

    /// Prices for `model`: the scenario's own when it has any, else the profile's table.
    pub fn prices_for(&self, model: &str, own: Prices) -> Prices {
        if own != Prices::default() {
            return own;
        }
        self.cost
            .prices
            .get(model)
            .or_else(|| self.cost.prices.get(&self.cost.fallback_model))
            .copied()
            .unwrap_or_default()
    }

    /// IronClaw v1 chat turn (commit 5b307e2): intent nudge, truncation discard with
    /// force-text at 3, duplicate tracker (warn 3, force-text 5), chat budget of 10 tool
    /// iterations (limit nudge at 9, force-text at 10, ceiling 11), cost guard, one compaction
    /// retry after a context overflow, approvals, empty-reply fallback, the chat delegate's
    /// final text without `[Called tool …]` lines. `max_iterations` (50, the engine default)
    /// applies when the budget is switched off.
    pub fn ironclaw() -> Self {
        let mut c = Self::none();
        c.max_iterations = 50;
        c.budget.enabled = true;
        c.cost.enabled = true;
        c.compaction.retry_on_overflow = true;
        c.empty_reply.enabled = true;
        c.approvals.enabled = true;
        c.max_iterations_message = "Exceeded maximum tool iterations ({n})".to_owned();
        c.tool_error_message = "Tool '{name}' failed: {error}".to_owned();
        c.tool_fail_message = "Tool '{name}' failed".to_owned();
        c.intent_nudge.enabled = true;
        c.truncation.enabled = true;
        c.duplicate.enabled = true;
        c.final_text.strip_tool_markers = true;
        c.final_text.fallback = super::final_text::IRONCLAW_NOTHING_LEFT.to_owned();
        // The LLM client's retry wrapper (`ironclaw_llm/src/retry.rs`, `is_retryable`,
        // `retry_backoff_delay`): every model call, 3 retries of a transient error (5xx, 429,
        // timeouts) after 1, 2 and 4 s (upstream adds ±25 % jitter); the OpenAI-compatible
        // client reports a 429 as an HTTP error, so its retry-after is not read. Seen on the
        // real runtime under `harness suite` (tests/runtimes/).
        let rule = RetryRule {
            max_retries: 3,
            delay_ms: 1_000,
            max_delay_ms: 4_000,
            exponential: true,
            honour_retry_after: false,
        };
        c.retry = RetryConfig {
            counts_iteration: false,
            per_run: false,
            server_error: rule.clone(),
            rate_limit: rule.clone(),
            timeout: rule,
        };
        c
    }

    /// Moltis at PR #664 (merge 8828cc5): pre-dispatch validation, reflex detector window 3 with
    /// strip on second fire, auto-continue, 25 iterations, `{}` for undecodable arguments; an
    /// empty final answer falls back to the last tool-call response's text, and an empty
    /// answer that auto-continue holds back stays out of the history; the final answer is
    /// cleaned (`clean_response`) and mangled tool names are looked up cleaned
    /// (`sanitize_tool_name`).
    pub fn moltis() -> Self {
        let mut c = Self::none();
        c.empty_answer = EmptyAnswerConfig {
            last_text_fallback: true,
            skip_in_history: true,
        };
        c.max_iterations_message = "agent loop exceeded max iterations ({n})".to_owned();
        c.malformed_args = MalformedArgs::EmptyObject;
        c.sanitize_tool_names = true;
        c.forced_shell = true;
        c.empty_name_retry_message = MOLTIS_EMPTY_NAME.to_owned();
        c.text_calls = true;
        c.malformed_call_retry_message = MOLTIS_MALFORMED_CALL.to_owned();
        c.final_text.clean_tags = true;
        c.tool_error_message = "{\"error\":{error_json}}".to_owned();
        // At PR #664 a logical failure without text comes back as the tool's own result.
        c.tool_fail_message = "{\"result\":{\"success\":false}}".to_owned();
        c.validation.enabled = true;
        c.reflex.enabled = true;
        c.auto_continue.enabled = true;
        // Transient provider errors: one retry after 2 s for 5xx, up to 10 with backoff from
        // 2 s to 60 s for rate limits, budgets per run; retries do not count as iterations.
        c.retry.per_run = true;
        c.retry.server_error = RetryRule {
            max_retries: 1,
            delay_ms: 2_000,
            max_delay_ms: 2_000,
            exponential: false,
            honour_retry_after: false,
        };
        c.retry.rate_limit = RetryRule {
            max_retries: 10,
            delay_ms: 2_000,
            max_delay_ms: 60_000,
            exponential: true,
            honour_retry_after: true,
        };
        c
    }

    /// Moltis as upstream's `main` has it at `6bd2d118` (2026-08-21): [`Config::moltis`] with
    /// the changes merged since PR #664 — reflex window 2 (`5bcd85b9`), `type` lists honoured
    /// (`13342423`), string values of scalar-typed properties coerced before validation and
    /// dispatch (`2feb400e`), streamed arguments repaired (#983), `{"success": false}` a
    /// failure with text (#1174), trailing stop tokens cleaned from the final answer.
    pub fn moltis_head() -> Self {
        let mut c = Self::moltis();
        c.reflex.window = 2;
        c.validation.union_types = true;
        c.validation.coerce_scalars = true;
        c.validation.decode_status = true;
        c.malformed_args = MalformedArgs::Repair;
        c.wasm_alias = true;
        c.tool_fail_error = "tool returned success: false".to_owned();
        c.final_text.strip_stop_tokens = true;
        c
    }

    /// The book's TypeScript AgentLoop (runtimes.md AgentLoop): stop reasons with max_tokens
    /// continuation, retryable errors after 2 s (each retry uses an iteration), per-model
    /// prices with a warning past 80 % of a $5 session cap and a stop at the cap, compaction
    /// at 80 % of 180k tokens keeping the last 3 messages, the similarity LoopDetector
    /// (3 repeats, 80 % of keys), 25 iterations. The citation check is optional (off).
    pub fn agentloop() -> Self {
        let mut c = Self::none();
        c.max_iterations_message = "exceeded the maximum number of iterations: {n}".to_owned();
        c.turn_state = TurnState::Kept;
        c.continuation.enabled = true;
        c.continuation.unhandled_goes_on = true;
        let retry = RetryRule {
            max_retries: u32::MAX,
            delay_ms: 2_000,
            max_delay_ms: 2_000,
            exponential: false,
            honour_retry_after: false,
        };
        c.retry = RetryConfig {
            counts_iteration: true,
            per_run: false,
            server_error: retry.clone(),
            rate_limit: retry.clone(),
            timeout: retry,
        };
        c.cost.enabled = true;
        c.cost.max_usd = 5.0;
        c.cost.warn_fraction = 0.8;
        c.cost.stop_message =
            "session cost cap reached: spent {spent} of {cap}; stopping".to_owned();
        c.cost.prices = BTreeMap::from([
            (
                "claude-sonnet-4-6".to_owned(),
                Prices {
                    input_per_mtok: 3.0,
                    output_per_mtok: 15.0,
                },
            ),
            (
                "claude-haiku-4-5".to_owned(),
                Prices {
                    input_per_mtok: 0.8,
                    output_per_mtok: 4.0,
                },
            ),
        ]);
        c.cost.fallback_model = "claude-sonnet-4-6".to_owned();
        c.compaction.threshold = 0.8;
        c.similarity.enabled = true;
        c
    }

    /// clude_code's plan/step executor on `master` (f965900): steps of a plan, 100 model calls a
    /// step, 2 replans, history of 30 messages, stutter guard at 50; none of the analysis' fixes.
    /// No call cap of harness's own (`max_iterations` 0), as upstream has none: every step's
    /// budget is finite and replans are limited, so a run always ends by upstream's rules (a
    /// scenario may still set a cap; the trace then says it was harness's).
    pub fn plan_step() -> Self {
        let mut c = Self::none();
        c.max_iterations = 0;
        c.max_iterations_message =
            "harness's call cap reached ({n}); upstream's executor has no such cap".to_owned();
        c.plan_step.enabled = true;
        c
    }

    /// The named profile, if this build has it ([`super::profiles`]).
    pub fn profile(name: &str) -> Option<Self> {
        Self::shared(name).map(|c| Self::clone(&c))
    }

    /// Whether a profile of this name exists (no configuration is made or copied).
    pub fn is_profile(name: &str) -> bool {
        super::profiles::index(name).is_some()
    }

    /// The named profile's configuration, shared: every case of a run that does not patch it
    /// holds this one.
    pub fn shared(name: &str) -> Option<Arc<Self>> {
        // Each profile's configuration is made once (making one builds `none` and then
        // overrides it).
        static MADE: std::sync::OnceLock<Vec<Arc<Config>>> = std::sync::OnceLock::new();
        let made = MADE.get_or_init(|| {
            super::profiles::PROFILES
                .iter()
                .map(|p| Arc::new((p.config)()))
                .collect()
        });
        made.get(super::profiles::index(name)?).cloned()
    }

    /// This configuration with `patch` merged over it (tables merge key by key, anything else
    /// replaces). Unknown keys and wrong types are errors naming the key path.
    pub fn patch(mut self, patch: &Map<String, Value>) -> Result<Self, PatchError> {
        super::patch::Table::patch_table(&mut self, patch, &mut Vec::new())?;
        Ok(self)
    }

    /// [`Config::patch`] on a shared configuration: an empty patch changes nothing, and the
    /// configuration stays shared.
    pub fn patched(base: &Arc<Self>, patch: &Map<String, Value>) -> Result<Arc<Self>, PatchError> {
        if patch.is_empty() {
            return Ok(Arc::clone(base));
        }
        Self::clone(base).patch(patch).map(Arc::new)
    }
}

/// A `[config]` patch that does not fit the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchError {
    /// Key path below `config` (empty when the error is about the whole table).
    pub path: Vec<String>,
    /// What is wrong.
    pub message: String,
}

/// JSON Schema of a `[config]` patch: the configuration with every field optional.
pub fn config_patch_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let mut value = generator.subschema_for::<Config>().to_value();
    strip_required(&mut value, generator);
    schemars::Schema::try_from(value).unwrap_or_default()
}

fn strip_required(value: &mut Value, generator: &mut schemars::SchemaGenerator) {
    if let Value::Object(obj) = value {
        obj.remove("required");
        // Referenced definitions are made optional too.
        if let Some(Value::String(reference)) = obj.get("$ref") {
            let name = reference.rsplit('/').next().unwrap_or_default().to_owned();
            if let Some(def) = generator.definitions_mut().get_mut(&name) {
                let mut def = def.take();
                strip_required(&mut def, generator);
                generator.definitions_mut().insert(name, def);
            }
        }
        for (_, v) in obj.iter_mut() {
            strip_required(v, generator);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn patch_merges_nested_keys_and_keeps_the_rest() {
        let patch = json!({"reflex": {"window": 2}, "max_iterations": 10});
        let c = Config::moltis()
            .clone()
            .patch(patch.as_object().unwrap())
            .unwrap();
        assert_eq!(c.reflex.window, 2);
        assert!(c.reflex.strip_on_second_fire);
        assert!(c.reflex.enabled);
        assert_eq!(c.max_iterations, 10);
    }

    #[test]
    fn patch_errors_name_the_key_path() {
        let patch = json!({"reflex": {"windw": 2}});
        let err = Config::moltis()
            .clone()
            .patch(patch.as_object().unwrap())
            .unwrap_err();
        assert_eq!(err.path, vec!["reflex".to_owned(), "windw".to_owned()]);
        assert!(
            err.message.contains("unknown field `windw`"),
            "{}",
            err.message
        );
        let patch = json!({"max_iterations": "many"});
        let err = Config::none()
            .clone()
            .patch(patch.as_object().unwrap())
            .unwrap_err();
        assert_eq!(err.path, vec!["max_iterations".to_owned()]);
    }

    #[test]
    fn profiles_differ_in_their_defences() {
        let (none, iron, molt) = (Config::none(), Config::ironclaw(), Config::moltis());
        assert!(!none.reflex.enabled && !none.duplicate.enabled && !none.validation.enabled);
        assert!(iron.duplicate.enabled && iron.truncation.enabled && iron.intent_nudge.enabled);
        assert!(!iron.reflex.enabled);
        assert!(molt.reflex.enabled && molt.validation.enabled && !molt.duplicate.enabled);
        assert_eq!((iron.max_iterations, molt.max_iterations), (50, 25));
        let plan = Config::plan_step();
        assert!(plan.plan_step.enabled && !none.plan_step.enabled && !molt.plan_step.enabled);
        // Upstream's executor has no cap on a run's calls, and neither has the profile.
        assert_eq!((plan.max_iterations, plan.call_cap()), (0, u32::MAX));
        assert_eq!((none.max_iterations, none.call_cap()), (25, 25));
        assert!(!plan.plan_step.extract_first_json && !plan.plan_step.parse_priority);
        // The book's one AgentLoop instance carries the conversation and falls through on a
        // stop reason its switch does not handle; the others start afresh per message.
        let book = Config::agentloop();
        assert_eq!(book.turn_state, TurnState::Kept);
        assert!(book.continuation.unhandled_goes_on);
        assert_eq!(molt.turn_state, TurnState::Fresh);
        assert!(molt.empty_answer.last_text_fallback && molt.empty_answer.skip_in_history);
        assert!(!iron.empty_answer.last_text_fallback);
        // Moltis' main: window 2, type lists and coercion; PR #664: neither.
        let head = Config::moltis_head();
        assert_eq!((head.reflex.window, molt.reflex.window), (2, 3));
        assert!(head.validation.union_types && head.validation.coerce_scalars);
        assert!(!molt.validation.union_types && !molt.validation.coerce_scalars);
        assert_eq!(
            (plan.plan_step.max_step_calls, plan.plan_step.max_replans),
            (100, 2)
        );
        let fixes = &plan.plan_step;
        assert!(
            !fixes.completion_inference && !fixes.parse_priority && !fixes.forced_completion_at_cap
        );
    }
}
