//! [`Config`]: every threshold and message text of every defence, the built-in profiles, and
//! patching a profile with a scenario's `[config]` table (located errors by key path).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Engine configuration. A profile is one of these; a scenario patches it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Iterations before the run ends with `max_iterations` (each iteration is one model call;
    /// in the plan/step loop the cap counts every model call of the run, replans included).
    pub max_iterations: u32,
    /// Failure text of a run that hit the cap; `{n}` is the cap.
    pub max_iterations_message: String,
    /// How the calls of one batch run on the virtual clock.
    pub tool_execution: ToolExecution,
    /// What happens to a call whose raw arguments are not valid JSON.
    pub malformed_args: MalformedArgs,
    /// Tool message for a failed call; `{name}`, `{error}` and `{error_json}` are filled in.
    pub tool_error_message: String,
    /// Tool message for a call that failed without error text; `{name}` is filled in.
    pub tool_fail_message: String,
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
    /// The plan/step executor (clude_code); `enabled` swaps the loop for the plan/step loop.
    pub plan_step: PlanStepConfig,
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
    /// Fix 1 of the analysis: a successful tool call, or a reply that is neither a tool call
    /// nor a control signal but contains one of `completion_words`, marks the step done.
    pub completion_inference: bool,
    /// Words (matched case-insensitively as substrings) that claim completion.
    pub completion_words: Vec<String>,
    /// Fix 2 of the analysis: also read a control envelope that is surrounded by prose, fenced,
    /// or followed by more JSON (the doubled envelope), before legacy markers and tool calls;
    /// a JSON object whose `control` is `step_done` or `replan` is never a tool call.
    pub parse_priority: bool,
    /// Fix 3 of the analysis: when a step's budget runs out after a successful tool call in that
    /// step, the step is done instead of failed.
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
const MOLTIS_CONTINUE: &str = "Your previous response ended without tool calls and without a final answer. If there are still steps to run, continue executing them. Otherwise reply with exactly: done";

impl Config {
    /// The bare loop: no defence, 25 iterations.
    pub fn none() -> Self {
        Self {
            max_iterations: 25,
            max_iterations_message: "iteration cap reached ({n})".to_owned(),
            tool_execution: ToolExecution::Parallel,
            malformed_args: MalformedArgs::Error,
            tool_error_message: "Error: {error}".to_owned(),
            tool_fail_message: "Error: tool `{name}` failed".to_owned(),
            validation: ValidationConfig {
                enabled: false,
                header: "Tool call rejected before execution by `{tool}`.".to_owned(),
                footer: "Do not retry with the same arguments. If you do not know what arguments to use, respond in plain text and ask the user for clarification.".to_owned(),
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
                forced_completion_at_cap: false,
            },
        }
    }

    /// IronClaw v1 `run_agentic_loop` (commit 5b307e2): intent nudge, truncation discard with
    /// force-text at 3, duplicate tracker (warn 3, force-text 5), engine cap 50.
    pub fn ironclaw() -> Self {
        let mut c = Self::none();
        c.max_iterations = 50;
        c.max_iterations_message = "Exceeded maximum tool iterations ({n})".to_owned();
        c.tool_error_message = "Tool '{name}' failed: {error}".to_owned();
        c.tool_fail_message = "Tool '{name}' failed".to_owned();
        c.intent_nudge.enabled = true;
        c.truncation.enabled = true;
        c.duplicate.enabled = true;
        c
    }

    /// Moltis at PR #664 (merge 8828cc5): pre-dispatch validation, reflex detector window 3 with
    /// strip on second fire, auto-continue, 25 iterations, `{}` for undecodable arguments.
    pub fn moltis() -> Self {
        let mut c = Self::none();
        c.max_iterations_message = "agent loop exceeded max iterations ({n})".to_owned();
        c.malformed_args = MalformedArgs::EmptyObject;
        c.tool_error_message = "{\"error\":{error_json}}".to_owned();
        // At PR #664 a logical failure without text comes back as the tool's own result.
        c.tool_fail_message = "{\"result\":{\"success\":false}}".to_owned();
        c.validation.enabled = true;
        c.reflex.enabled = true;
        c.auto_continue.enabled = true;
        c
    }

    /// clude_code's plan/step executor on `master` (f965900): steps of a plan, 100 model calls a
    /// step, 2 replans, history of 30 messages, stutter guard at 50; none of the analysis' fixes.
    /// `max_iterations` (500) is a hard cap on all model calls of the run (step turns and
    /// replans together), which upstream does not have. With master's figures at most three
    /// steps fail (100 calls each) and two replans run, so failures alone cost at most 302
    /// calls; the cap bounds the rest, long plans whose steps each take many calls.
    pub fn plan_step() -> Self {
        let mut c = Self::none();
        c.max_iterations = 500;
        c.plan_step.enabled = true;
        c
    }

    /// The named profile, if this build has it.
    pub fn profile(name: &str) -> Option<Self> {
        match name {
            "none" => Some(Self::none()),
            "ironclaw" => Some(Self::ironclaw()),
            "moltis" => Some(Self::moltis()),
            "plan-step" => Some(Self::plan_step()),
            _ => None,
        }
    }

    /// This configuration with `patch` merged over it (tables merge key by key, anything else
    /// replaces). Unknown keys and wrong types are errors naming the key path.
    pub fn patched(&self, patch: &Map<String, Value>) -> Result<Self, PatchError> {
        if patch.is_empty() {
            return Ok(self.clone());
        }
        let mut base = serde_json::to_value(self).map_err(|e| PatchError {
            path: Vec::new(),
            message: e.to_string(),
        })?;
        merge(&mut base, patch);
        serde_path_to_error::deserialize::<_, Self>(base).map_err(|e| {
            let path = e
                .path()
                .iter()
                .filter_map(|seg| match seg {
                    serde_path_to_error::Segment::Map { key } => Some(key.clone()),
                    serde_path_to_error::Segment::Seq { index } => Some(index.to_string()),
                    _ => None,
                })
                .collect();
            PatchError {
                path,
                message: e.into_inner().to_string(),
            }
        })
    }
}

fn merge(base: &mut Value, patch: &Map<String, Value>) {
    let Value::Object(target) = base else {
        *base = Value::Object(patch.clone());
        return;
    };
    for (key, value) in patch {
        match (target.get_mut(key), value) {
            (Some(existing @ Value::Object(_)), Value::Object(inner)) => merge(existing, inner),
            _ => {
                target.insert(key.clone(), value.clone());
            }
        }
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
            .patched(patch.as_object().unwrap())
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
            .patched(patch.as_object().unwrap())
            .unwrap_err();
        assert_eq!(err.path, vec!["reflex".to_owned(), "windw".to_owned()]);
        assert!(
            err.message.contains("unknown field `windw`"),
            "{}",
            err.message
        );
        let patch = json!({"max_iterations": "many"});
        let err = Config::none()
            .patched(patch.as_object().unwrap())
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
