//! A scenario's `[config]` table merged over a profile's [`Config`] in place: tables merge key
//! by key, anything else replaces. Only the values the patch names are read; the rest of the
//! configuration is neither serialised nor rebuilt (a round trip of the whole configuration
//! through JSON cost every patched scenario more than its parse).
//!
//! Errors are those of deserialising the merged configuration: the same messages, the same key
//! paths, the first one found in the same order (a table's fields in declaration order, then
//! its unknown keys in the patch's order).

use super::config::{
    ApprovalConfig, AutoContinueConfig, BudgetConfig, CitationsConfig, CompactionConfig, Config,
    ContinuationConfig, CostConfig, DuplicateConfig, EmptyAnswerConfig, EmptyReplyConfig,
    FinalTextConfig, IntentNudgeConfig, MalformedArgs, PatchError, PlanStepConfig, Prices,
    RecoveryConfig, ReflexConfig, RetryConfig, RetryRule, SimilarityConfig, TextAnswer,
    ToolExecution, TruncationConfig, TurnState, ValidationConfig,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// A part of the configuration a patch value can be merged into.
pub(super) trait Patch: Serialize + DeserializeOwned {
    /// Merge `value` into `self`; `path` is where `self` is (restored on success).
    ///
    /// A value (a number, a string, a list, a map of prices) is replaced by the patch's: read
    /// straight into its type, or, when the patch gives a table, merged with the value's own
    /// JSON form first (so a table of prices keeps the models it does not name).
    fn patch(&mut self, value: &Value, path: &mut Vec<String>) -> Result<(), PatchError> {
        let merged;
        let source = match value {
            Value::Object(patch) => {
                let mut base = serde_json::to_value(&*self).map_err(|e| PatchError {
                    path: path.clone(),
                    message: e.to_string(),
                })?;
                merge(&mut base, patch);
                merged = base;
                &merged
            }
            other => other,
        };
        *self = read(source, path)?;
        Ok(())
    }
}

/// A table of the configuration: a patch's table merged into it field by field.
pub(super) trait Table {
    /// Merge `patch` into `self`, field by field in declaration order; then the first key
    /// that names no field is an error. `path` is where `self` is.
    fn patch_table(
        &mut self,
        patch: &Map<String, Value>,
        path: &mut Vec<String>,
    ) -> Result<(), PatchError>;
}

/// `value` read as a `T`, errors located below `path`.
fn read<T: DeserializeOwned>(value: &Value, path: &[String]) -> Result<T, PatchError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let mut full = path.to_vec();
        full.extend(e.path().iter().filter_map(|seg| match seg {
            serde_path_to_error::Segment::Map { key } => Some(key.clone()),
            serde_path_to_error::Segment::Seq { index } => Some(index.to_string()),
            _ => None,
        }));
        PatchError {
            path: full,
            message: e.into_inner().to_string(),
        }
    })
}

/// `patch` merged into `base`: objects key by key, anything else replaced.
pub(super) fn merge(base: &mut Value, patch: &Map<String, Value>) {
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

macro_rules! values {
    ($($ty:ty),* $(,)?) => {
        $(impl Patch for $ty {})*
    };
}

values!(
    u32,
    u64,
    usize,
    f64,
    bool,
    String,
    Vec<String>,
    BTreeMap<String, Prices>,
    TurnState,
    TextAnswer,
    ToolExecution,
    MalformedArgs,
);

/// The tables of the configuration, each with its fields: the pattern names every field, so
/// a field added to a struct and not here does not compile.
macro_rules! tables {
    ($($ty:ident { $($field:ident),* $(,)? })*) => {
        $(impl Patch for $ty {
            fn patch(&mut self, value: &Value, path: &mut Vec<String>) -> Result<(), PatchError> {
                match value {
                    Value::Object(patch) => self.patch_table(patch, path),
                    _ => {
                        *self = read(value, path)?;
                        Ok(())
                    }
                }
            }
        }

        impl Table for $ty {
            fn patch_table(
                &mut self,
                patch: &Map<String, Value>,
                path: &mut Vec<String>,
            ) -> Result<(), PatchError> {
                const FIELDS: &[&str] = &[$(stringify!($field)),*];
                let Self { $($field),* } = self;
                $(
                    if let Some(v) = patch.get(stringify!($field)) {
                        path.push(stringify!($field).to_owned());
                        $field.patch(v, path)?;
                        path.pop();
                    }
                )*
                if let Some(unknown) = patch.keys().find(|k| !FIELDS.contains(&k.as_str())) {
                    path.push(unknown.clone());
                    return Err(PatchError {
                        path: path.clone(),
                        message: <serde_json::Error as serde::de::Error>::unknown_field(
                            unknown, FIELDS,
                        )
                        .to_string(),
                    });
                }
                Ok(())
            }
        })*
    };
}

tables! {
    Config {
        max_iterations, max_iterations_message, turn_state, empty_answer, tool_execution,
        malformed_args, tool_error_message, tool_fail_message, tool_fail_error,
        sanitize_tool_names, wasm_alias, forced_shell, empty_name_retry_message, text_calls,
        malformed_call_retry_message, final_text,
        validation, reflex, intent_nudge, truncation, duplicate, auto_continue, text_answer,
        budget, cost, compaction, retry, continuation, similarity, citations, recovery,
        empty_reply, approvals, plan_step,
    }
    EmptyAnswerConfig { last_text_fallback, skip_in_history }
    BudgetConfig { enabled, tool_iterations, limit_nudge, message }
    CostConfig {
        enabled, max_usd, warn_fraction, max_tokens, stop_message, warn_message, prices,
        fallback_model,
    }
    CompactionConfig {
        retry_on_overflow, overflow_note, threshold, context_tokens, keep_last, summary_prompt,
        summary_message,
    }
    RetryConfig { counts_iteration, per_run, server_error, rate_limit, timeout }
    RetryRule { max_retries, delay_ms, max_delay_ms, exponential, honour_retry_after }
    ContinuationConfig { enabled, message, unhandled_goes_on, unhandled_notice }
    SimilarityConfig { enabled, max_repeats, similarity, info_message, warning_message }
    CitationsConfig { enabled, max_risk, max_checks, message }
    RecoveryConfig { enabled, fail_at, nudge_message, force_message, failure_message }
    EmptyReplyConfig { enabled, fallback_text }
    ApprovalConfig { enabled, auto_approve, reject_message, auth_tools }
    FinalTextConfig { clean_tags, strip_stop_tokens, strip_tool_markers, fallback }
    ValidationConfig { enabled, header, footer, union_types, coerce_scalars, decode_status }
    ReflexConfig {
        enabled, window, strip_on_second_fire, nudge_message, nudge_entry, strip_message,
    }
    IntentNudgeConfig { enabled, max_consecutive, message }
    TruncationConfig { enabled, force_text_at, notice }
    DuplicateConfig { enabled, warn_at, force_text_at, message }
    AutoContinueConfig { enabled, max, min_tool_calls, min_chars, message }
    PlanStepConfig {
        enabled, max_step_calls, max_replans, history_limit, stutter_limit, stutter_message,
        step_prompt, invalid_output_message, tool_result_message, replan_prompt,
        completion_inference, completion_words, parse_priority, extract_first_json,
        forced_completion_at_cap,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// How patching was done before: the whole configuration to JSON, merged, read back.
    fn round_trip(config: &Config, patch: &Map<String, Value>) -> Result<Config, PatchError> {
        let mut base = serde_json::to_value(config).unwrap();
        merge(&mut base, patch);
        read(&base, &[])
    }

    fn both(config: &Config, patch: &Value) {
        let patch = patch.as_object().unwrap();
        let want = round_trip(config, patch);
        let got = config.clone().patch(patch);
        assert_eq!(got, want, "patch {}", Value::Object(patch.clone()));
    }

    /// Every path to a value in `v`, with the value.
    fn leaves(v: &Value, path: &mut Vec<String>, out: &mut Vec<(Vec<String>, Value)>) {
        if let Value::Object(map) = v {
            out.push((path.clone(), v.clone()));
            for (k, inner) in map {
                path.push(k.clone());
                leaves(inner, path, out);
                path.pop();
            }
        } else {
            out.push((path.clone(), v.clone()));
        }
    }

    /// `value` at `path`, as a patch.
    fn at(path: &[String], value: Value) -> Value {
        path.iter()
            .rev()
            .fold(value, |inner, k| json!({ k.as_str(): inner }))
    }

    /// Values of other shapes and types than `v`, and one of its own kind changed.
    fn variants(v: &Value) -> Vec<Value> {
        let mut out = vec![
            json!(null),
            json!(true),
            json!(7),
            json!(-1),
            json!(0.5),
            json!("text"),
            json!("sequential"),
            json!(["a", 2]),
            json!([]),
            json!({}),
            json!({"unknown_key": 1}),
            json!({"input_per_mtok": 2.5}),
            json!({"m": {"input_per_mtok": 1}}),
            json!({"m": {"nope": 1}}),
            v.clone(),
        ];
        out.push(match v {
            Value::Bool(b) => json!(!b),
            Value::Number(n) => json!(n.as_f64().unwrap_or(0.0) + 1.0),
            Value::String(s) => json!(format!("{s}!")),
            Value::Array(a) => {
                let mut a = a.clone();
                a.push(json!("more"));
                Value::Array(a)
            }
            Value::Object(m) => {
                // Each key of a table given again, and one unknown key after them.
                let mut m = m.clone();
                m.insert("zz_unknown".to_owned(), json!(1));
                Value::Object(m)
            }
            Value::Null => json!(1),
        });
        out
    }

    #[test]
    fn every_key_of_every_profile_patches_as_the_round_trip_did() {
        let mut checked = 0;
        for profile in crate::policy::profiles::PROFILES {
            let config = (profile.config)();
            let mut all = Vec::new();
            leaves(
                &serde_json::to_value(&config).unwrap(),
                &mut Vec::new(),
                &mut all,
            );
            for (path, value) in &all {
                if path.is_empty() {
                    continue;
                }
                for v in variants(value) {
                    both(&config, &at(path, v));
                    checked += 1;
                }
                // An unknown key beside this one.
                let mut sibling = path.clone();
                sibling.pop();
                sibling.push("no_such_key".to_owned());
                both(&config, &at(&sibling, json!(1)));
            }
        }
        assert!(checked > 1000, "{checked} patches checked");
    }

    #[test]
    fn patches_with_several_keys_and_errors_report_the_first_the_round_trip_did() {
        let config = Config::moltis();
        for patch in [
            json!({"reflex": {"window": 2}, "max_iterations": 10}),
            json!({"zzz": 1, "max_iterations": "x"}),
            json!({"max_iterations": "x", "zzz": 1}),
            json!({"reflex": {"window": "x", "enabled": "y"}}),
            json!({"reflex": {"nope": 1, "window": "x"}}),
            json!({"plan_step": {"enabled": true}, "budget": {"message": 3}, "reflex": 1}),
            json!({"b": 1, "a": 2}),
            json!({"cost": {"prices": {"new-model": {"output_per_mtok": 9}}}}),
            json!({"cost": {"prices": {"claude-sonnet-4-6": {"input_per_mtok": 1}}}}),
            json!({"cost": {"prices": {"claude-sonnet-4-6": {"x": 1}}}}),
            json!({"cost": {"prices": {"claude-sonnet-4-6": 3}}}),
            json!({"cost": {"prices": []}}),
            json!({"plan_step": {"completion_words": ["done", 4]}}),
            json!({"retry": {"rate_limit": {"max_retries": 9}, "timeout": {"delay_ms": -1}}}),
            json!({"retry": {"server_error": null}}),
            json!({"max_iterations": 4_294_967_296_u64}),
            json!({"max_iterations": 1.5}),
        ] {
            both(&config, &patch);
            both(&Config::ironclaw(), &patch);
        }
    }

    #[test]
    fn errors_name_the_key_path_and_what_is_wrong() {
        let e = Config::moltis()
            .clone()
            .patch(json!({"reflex": {"windw": 2}}).as_object().unwrap())
            .unwrap_err();
        assert_eq!(e.path, ["reflex", "windw"]);
        assert!(
            e.message
                .starts_with("unknown field `windw`, expected one of `enabled`, `window`"),
            "{}",
            e.message
        );
        let e = Config::moltis()
            .clone()
            .patch(
                json!({"plan_step": {"completion_words": ["done", 4]}})
                    .as_object()
                    .unwrap(),
            )
            .unwrap_err();
        assert_eq!(e.path, ["plan_step", "completion_words", "1"]);
        assert!(e.message.contains("expected a string"), "{}", e.message);
    }
}
