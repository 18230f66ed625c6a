//! The book's `LoopDetector` (chapter 63, "实现循环检测"): a per-tool repeat counter with a
//! fuzzy argument match.
//!
//! Owns its call history and the similarity rule, nothing else: it does not decide what a
//! detection does to the loop (the book injects a warning and resets; the engine chooses per
//! profile), it sees no tool results (a call repeated three times fires whether it failed or
//! succeeded, which is how the book catches polling), and it touches no messages.
//!
//! Semantics follow the book's TypeScript exactly, including its quirks:
//! - the streak is kept on the *last record of the same tool*, so calls to other tools in between
//!   do not break it;
//! - a dissimilar call pushes a new record (the old one stays in the history, unreachable,
//!   because only the last record per tool is ever looked up);
//! - the first call of a streak always answers [`Detection::None`], even when `max_repeats` is 1
//!   or 2, because the book returns before comparing the count on a new record.

use crate::json::compact;
use serde_json::Value;

/// What one [`SimilarityDetector::check`] concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detection {
    /// Nothing to report.
    None,
    /// One call short of the threshold (the book's `WARN_MODEL` hint).
    Info {
        /// Calls in the streak so far.
        count: u32,
    },
    /// The streak reached the threshold (the book's `STOP_AND_ASK_USER`).
    Loop {
        /// Calls in the streak so far.
        count: u32,
        /// The turn the streak started on.
        first_turn: u32,
    },
}

/// One streak: the latest arguments of a tool and how many similar calls led to them.
#[derive(Debug, Clone)]
struct Record {
    tool: String,
    input: Value,
    count: u32,
    first_seen_at: u32,
}

/// The book's loop detector.
#[derive(Debug, Clone)]
pub struct SimilarityDetector {
    max_repeats: u32,
    similarity: f64,
    history: Vec<Record>,
}

impl SimilarityDetector {
    /// A detector that reports a loop after `max_repeats` similar calls of one tool, where two
    /// argument objects are similar when at least `similarity` of their keys hold equal values.
    /// The book's defaults are 3 and 0.8.
    pub fn new(max_repeats: u32, similarity: f64) -> Self {
        Self {
            max_repeats,
            similarity,
            history: Vec::new(),
        }
    }

    /// Record a call of `tool` with `input` made on `turn` and report the streak it extends.
    pub fn check(&mut self, turn: u32, tool: &str, input: &Value) -> Detection {
        let similarity = self.similarity;
        let Some(last) = self
            .history
            .iter_mut()
            .rev()
            .find(|r| r.tool == tool)
            .filter(|r| similar(&r.input, input, similarity))
        else {
            self.history.push(Record {
                tool: tool.to_owned(),
                input: input.clone(),
                count: 1,
                first_seen_at: turn,
            });
            return Detection::None;
        };
        last.count = last.count.saturating_add(1);
        // The book compares later calls with the latest arguments, so a slow drift of one key
        // per call can keep a streak alive indefinitely.
        last.input = input.clone();
        if last.count >= self.max_repeats {
            Detection::Loop {
                count: last.count,
                first_turn: last.first_seen_at,
            }
        } else if last.count == self.max_repeats.saturating_sub(1) {
            Detection::Info { count: last.count }
        } else {
            Detection::None
        }
    }

    /// Forget every streak (the book calls this after injecting its loop warning).
    pub fn reset(&mut self) {
        self.history.clear();
    }
}

/// The book's `isSimilarInput`: equal as a whole, or enough equal top-level keys.
///
/// Values compare as the book's `JSON.stringify` writes them, in their own key order (our
/// objects keep the order they were written in): `{"opts":{"a":1,"b":2}}` and
/// `{"opts":{"b":2,"a":1}}` differ at `opts`. Top-level keys are matched by name, so their
/// order does not matter: the whole-equality shortcut misses a reordered object, and the
/// key-by-key pass then finds every key equal.
fn similar(a: &Value, b: &Value, threshold: f64) -> bool {
    if compact(a) == compact(b) {
        return true;
    }
    let (Value::Object(a), Value::Object(b)) = (a, b) else {
        // The book types inputs as objects. A non-object is treated as keyless, so only the
        // equality shortcut above can match it (even at threshold 0, where the book's ratio
        // over the other side's keys would be 0 >= 0).
        return false;
    };
    let mut union: Vec<&String> = a.keys().chain(b.keys()).collect();
    union.sort();
    union.dedup();
    if union.is_empty() {
        // Two empty objects were already equal above; the book would divide 0 by 0 here.
        return false;
    }
    let same = union
        .iter()
        .filter(|key| match (a.get(key.as_str()), b.get(key.as_str())) {
            (Some(x), Some(y)) => compact(x) == compact(y),
            // A missing key never equals a present one (`undefined` vs a JSON string).
            _ => false,
        })
        .count();
    // Key counts are far below 2^52, so the casts are exact.
    let ratio = same as f64 / union.len() as f64;
    ratio >= threshold
}

/// The book's vitest cases plus the semantics its code implies.
#[cfg(test)]
mod tests {
    use super::{Detection, SimilarityDetector};
    use serde_json::json;

    fn book() -> SimilarityDetector {
        SimilarityDetector::new(3, 0.8)
    }

    fn is_loop(d: Detection) -> bool {
        matches!(d, Detection::Loop { .. })
    }

    #[test]
    fn detects_3_consecutive_same_tool_calls() {
        let mut d = book();
        let input = json!({"file_path": "src/auth.ts"});
        assert!(!is_loop(d.check(1, "Read", &input)));
        assert!(!is_loop(d.check(2, "Read", &input)));
        assert_eq!(
            d.check(3, "Read", &input),
            Detection::Loop {
                count: 3,
                first_turn: 1
            }
        );
    }

    #[test]
    fn does_not_trigger_when_tool_differs() {
        let mut d = book();
        d.check(1, "Read", &json!({"file_path": "auth.ts"}));
        d.check(2, "Grep", &json!({"pattern": "login"}));
        assert!(!is_loop(d.check(
            3,
            "Read",
            &json!({"file_path": "auth.ts"})
        )));
    }

    #[test]
    fn does_not_trigger_with_different_arguments() {
        let mut d = book();
        d.check(1, "Read", &json!({"file_path": "auth.ts"}));
        d.check(2, "Read", &json!({"file_path": "db.ts"}));
        assert_eq!(
            d.check(3, "Read", &json!({"file_path": "auth.ts"})),
            Detection::None
        );
    }

    #[test]
    fn info_at_count_two_then_loop() {
        let mut d = book();
        let input = json!({"q": "x"});
        assert_eq!(d.check(4, "search", &input), Detection::None);
        assert_eq!(d.check(5, "search", &input), Detection::Info { count: 2 });
        assert_eq!(
            d.check(6, "search", &input),
            Detection::Loop {
                count: 3,
                first_turn: 4
            }
        );
        // No reset by the detector itself: the streak keeps counting.
        assert_eq!(
            d.check(7, "search", &input),
            Detection::Loop {
                count: 4,
                first_turn: 4
            }
        );
    }

    #[test]
    fn near_duplicate_four_of_five_keys() {
        let a = json!({"a": 1, "b": 2, "c": 3, "d": 4, "e": 5});
        let b = json!({"a": 1, "b": 2, "c": 3, "d": 4, "e": 6});

        let mut at_08 = SimilarityDetector::new(2, 0.8);
        at_08.check(1, "t", &a);
        assert_eq!(
            at_08.check(2, "t", &b),
            Detection::Loop {
                count: 2,
                first_turn: 1
            }
        );

        let mut at_09 = SimilarityDetector::new(2, 0.9);
        at_09.check(1, "t", &a);
        assert_eq!(at_09.check(2, "t", &b), Detection::None);
    }

    #[test]
    fn missing_key_counts_as_different() {
        // Union {a,b,c,d,e}: four equal, `e` present on one side only → 0.8.
        let mut d = SimilarityDetector::new(2, 0.8);
        d.check(1, "t", &json!({"a": 1, "b": 2, "c": 3, "d": 4}));
        assert!(is_loop(d.check(
            2,
            "t",
            &json!({"a": 1, "b": 2, "c": 3, "d": 4, "e": null})
        )));
        let mut d = SimilarityDetector::new(2, 0.81);
        d.check(1, "t", &json!({"a": 1, "b": 2, "c": 3, "d": 4}));
        assert!(!is_loop(d.check(
            2,
            "t",
            &json!({"a": 1, "b": 2, "c": 3, "d": 4, "e": null})
        )));
    }

    #[test]
    fn top_level_key_order_does_not_matter_nested_does() {
        let mut d = SimilarityDetector::new(2, 1.0);
        d.check(1, "t", &json!({"a": 1, "b": {"x": 1, "y": 2}}));
        assert!(is_loop(d.check(
            2,
            "t",
            &json!({"b": {"x": 1, "y": 2}, "a": 1})
        )));
        let mut d = SimilarityDetector::new(2, 1.0);
        d.check(1, "t", &json!({"a": 1, "b": {"x": 1, "y": 2}}));
        assert_eq!(
            d.check(2, "t", &json!({"a": 1, "b": {"y": 2, "x": 1}})),
            Detection::None
        );
    }

    #[test]
    fn non_object_inputs_only_match_when_equal() {
        let mut d = SimilarityDetector::new(2, 0.0);
        d.check(1, "t", &json!("ls"));
        assert!(is_loop(d.check(2, "t", &json!("ls"))));
        // Threshold 0 would accept any two objects, but a non-object has no keys to share.
        let mut d = SimilarityDetector::new(2, 0.0);
        d.check(1, "t", &json!([1]));
        assert_eq!(d.check(2, "t", &json!([2])), Detection::None);
    }

    #[test]
    fn reset_clears() {
        let mut d = book();
        let input = json!({"q": 1});
        d.check(1, "t", &input);
        d.check(2, "t", &input);
        d.reset();
        assert_eq!(d.check(3, "t", &input), Detection::None);
        assert_eq!(d.check(4, "t", &input), Detection::Info { count: 2 });
        assert_eq!(
            d.check(5, "t", &input),
            Detection::Loop {
                count: 3,
                first_turn: 3
            }
        );
    }

    #[test]
    fn other_tool_in_between_does_not_break_the_streak() {
        let mut d = book();
        let read = json!({"file_path": "src/auth.ts"});
        d.check(1, "Read", &read);
        d.check(2, "Grep", &json!({"pattern": "login"}));
        d.check(3, "Read", &read);
        d.check(4, "Grep", &json!({"pattern": "logout"}));
        assert_eq!(
            d.check(5, "Read", &read),
            Detection::Loop {
                count: 3,
                first_turn: 1
            }
        );
    }

    #[test]
    fn dissimilar_call_starts_a_new_streak() {
        let mut d = book();
        d.check(1, "Read", &json!({"file_path": "a"}));
        d.check(2, "Read", &json!({"file_path": "a"}));
        d.check(3, "Read", &json!({"file_path": "b"}));
        // The old streak for "a" is shadowed by the newer record for "b".
        assert_eq!(
            d.check(4, "Read", &json!({"file_path": "a"})),
            Detection::None
        );
    }

    #[test]
    fn polling_fires_regardless_of_outcome() {
        // The detector never sees results: a status poll that succeeds every time is a loop too.
        let mut d = book();
        let poll = json!({"job_id": "42"});
        let got: Vec<Detection> = (1..=3)
            .map(|turn| d.check(turn, "job_status", &poll))
            .collect();
        assert_eq!(
            got,
            vec![
                Detection::None,
                Detection::Info { count: 2 },
                Detection::Loop {
                    count: 3,
                    first_turn: 1
                }
            ]
        );
    }

    #[test]
    fn first_call_never_fires_even_at_threshold_one() {
        let mut d = SimilarityDetector::new(1, 0.8);
        let input = json!({});
        assert_eq!(d.check(1, "t", &input), Detection::None);
        assert_eq!(
            d.check(2, "t", &input),
            Detection::Loop {
                count: 2,
                first_turn: 1
            }
        );
    }

    /// `JSON.stringify` keeps a nested object's key order, so the book finds
    /// `{"opts":{"a":1,"b":2}}` and `{"opts":{"b":2,"a":1}}` different at `opts`; top-level keys
    /// are matched by name, so their order never matters.
    #[test]
    fn nested_values_compare_in_their_own_key_order() {
        let parse = |s: &str| -> serde_json::Value { serde_json::from_str(s).unwrap() };
        let a = parse(r#"{"q":"x","opts":{"a":1,"b":2}}"#);
        let nested = parse(r#"{"q":"x","opts":{"b":2,"a":1}}"#);
        let top = parse(r#"{"opts":{"a":1,"b":2},"q":"x"}"#);
        assert!(!super::similar(&a, &nested, 0.8), "1 of 2 keys equal");
        assert!(super::similar(&a, &nested, 0.5));
        assert!(super::similar(&a, &top, 1.0));
    }
}
