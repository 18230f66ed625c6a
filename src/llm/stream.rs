//! Streaming assembly: folding a provider's chunk stream into one response's text, tool calls
//! and finish reason, as Moltis' accumulator does at its PR #664 baseline (runtimes.md Moltis §4.6).
//!
//! Owns the chunk vocabulary and the folding rules only. It does not decode argument strings
//! (whether an unparsable string becomes `{}`, is repaired or is rejected differs per profile, so
//! the engine decides), does not validate tool names, and knows nothing of usage or latency.

use super::{Arguments, Finish, ToolCall};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// One chunk of a streamed model response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Chunk {
    /// A piece of answer text.
    Text {
        /// The piece, appended as is.
        text: String,
    },
    /// A tool call begins at stream index `index`.
    ToolCallStart {
        /// The provider's index for this call (need not start at 0 or be contiguous).
        index: u32,
        /// Call id.
        id: String,
        /// Tool name (may be empty; validation is the engine's business).
        name: String,
    },
    /// A piece of the arguments of the call at `index`.
    ArgsDelta {
        /// The call's stream index.
        index: u32,
        /// The piece, appended as is.
        text: String,
    },
    /// The provider says the call at `index` is complete.
    ToolCallComplete {
        /// The call's stream index.
        index: u32,
    },
    /// The stream ends with this reason; nothing may follow.
    Finish {
        /// Why the model stopped.
        reason: Finish,
    },
}

impl Chunk {
    /// snake_case kind, as serialized in `type` (used in error messages).
    fn kind(&self) -> &'static str {
        match self {
            Self::Text { .. } => "text",
            Self::ToolCallStart { .. } => "tool_call_start",
            Self::ArgsDelta { .. } => "args_delta",
            Self::ToolCallComplete { .. } => "tool_call_complete",
            Self::Finish { .. } => "finish",
        }
    }
}

/// A stream folded into one response.
#[derive(Debug, Clone)]
pub struct Assembled {
    /// Concatenated text, `None` when the stream had no text chunk at all (an empty text chunk
    /// still gives `Some("")`).
    pub text: Option<String>,
    /// Tool calls in order of their first `ToolCallStart`.
    pub tool_calls: Vec<ToolCall>,
    /// The finish reason, `None` when the stream never sent one.
    pub finish: Option<Finish>,
    /// Number of chunks folded (every kind counts).
    pub deltas: usize,
}

/// A chunk stream that cannot be folded. Positions are 0-based indices into the chunk slice.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    /// An `args_delta` or `tool_call_complete` names an index no `tool_call_start` opened.
    #[error(
        "chunk at position {position}: {kind} for tool call index {index}, which was never started"
    )]
    NotStarted {
        /// Position of the offending chunk.
        position: usize,
        /// Its kind.
        kind: &'static str,
        /// The unknown index.
        index: u32,
    },
    /// A `tool_call_start` reuses an index whose call has not completed.
    #[error("chunk at position {position}: tool_call_start for index {index}, which is still open")]
    AlreadyOpen {
        /// Position of the offending chunk.
        position: usize,
        /// The reused index.
        index: u32,
    },
    /// Something follows the `finish` chunk.
    #[error("chunk at position {position}: {kind} after the finish chunk at position {finish_at}")]
    AfterFinish {
        /// Position of the offending chunk.
        position: usize,
        /// Its kind.
        kind: &'static str,
        /// Position of the finish chunk.
        finish_at: usize,
    },
}

impl StreamError {
    /// Position (0-based) of the offending chunk.
    pub fn position(&self) -> usize {
        match self {
            Self::NotStarted { position, .. }
            | Self::AlreadyOpen { position, .. }
            | Self::AfterFinish { position, .. } => *position,
        }
    }
}

/// Where a stream index points: the call's position in the output, and whether it completed.
#[derive(Clone, Copy)]
struct Slot {
    position: usize,
    open: bool,
}

/// Fold `chunks` into one response.
///
/// Text pieces concatenate. Each `tool_call_start` opens a call at the next output position and
/// maps its stream index there; argument pieces accumulate per index. At the end a call with no
/// argument text gets `Parsed({})` (the baseline's seeded value, what #658's streams produced)
/// and any other gets `Raw(text)`, undecoded, even if it is blank or malformed.
///
/// Beyond the three errors, the fold is as lenient as the accumulator it reproduces: a completed
/// index may be started again (it then maps to a new call), deltas after `tool_call_complete`
/// still append, completing twice is harmless, and calls never completed are kept.
pub fn assemble(chunks: &[Chunk]) -> Result<Assembled, StreamError> {
    let mut text: Option<String> = None;
    let mut calls: Vec<(String, String, String)> = Vec::new();
    let mut slots: BTreeMap<u32, Slot> = BTreeMap::new();
    let mut finish: Option<(usize, Finish)> = None;

    for (position, chunk) in chunks.iter().enumerate() {
        if let Some((finish_at, _)) = finish {
            return Err(StreamError::AfterFinish {
                position,
                kind: chunk.kind(),
                finish_at,
            });
        }
        let not_started = |index: u32| StreamError::NotStarted {
            position,
            kind: chunk.kind(),
            index,
        };
        match chunk {
            Chunk::Text { text: piece } => text.get_or_insert_with(String::new).push_str(piece),
            Chunk::ToolCallStart { index, id, name } => {
                if slots.get(index).is_some_and(|s| s.open) {
                    return Err(StreamError::AlreadyOpen {
                        position,
                        index: *index,
                    });
                }
                slots.insert(
                    *index,
                    Slot {
                        position: calls.len(),
                        open: true,
                    },
                );
                calls.push((id.clone(), name.clone(), String::new()));
            }
            Chunk::ArgsDelta { index, text: piece } => {
                let slot = slots.get(index).ok_or_else(|| not_started(*index))?;
                if let Some((_, _, args)) = calls.get_mut(slot.position) {
                    args.push_str(piece);
                }
            }
            Chunk::ToolCallComplete { index } => {
                slots
                    .get_mut(index)
                    .ok_or_else(|| not_started(*index))?
                    .open = false;
            }
            Chunk::Finish { reason } => finish = Some((position, *reason)),
        }
    }

    let tool_calls = calls
        .into_iter()
        .map(|(id, name, args)| ToolCall {
            id,
            name,
            arguments: if args.is_empty() {
                Arguments::parsed(Value::Object(Map::new()))
            } else {
                Arguments::Raw(args)
            },
        })
        .collect();
    Ok(Assembled {
        text,
        tool_calls,
        finish: finish.map(|(_, reason)| reason),
        deltas: chunks.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::{Assembled, Chunk, StreamError, assemble};
    use crate::llm::{Arguments, Finish};
    use serde_json::json;

    fn start(index: u32, id: &str, name: &str) -> Chunk {
        Chunk::ToolCallStart {
            index,
            id: id.into(),
            name: name.into(),
        }
    }

    fn delta(index: u32, text: &str) -> Chunk {
        Chunk::ArgsDelta {
            index,
            text: text.into(),
        }
    }

    fn text(t: &str) -> Chunk {
        Chunk::Text { text: t.into() }
    }

    fn complete(index: u32) -> Chunk {
        Chunk::ToolCallComplete { index }
    }

    fn finish(reason: Finish) -> Chunk {
        Chunk::Finish { reason }
    }

    fn ok(chunks: &[Chunk]) -> Assembled {
        match assemble(chunks) {
            Ok(a) => a,
            Err(e) => panic!("unexpected stream error: {e}"),
        }
    }

    /// `(id, name, arguments)` per call.
    fn calls(a: &Assembled) -> Vec<(String, String, Arguments)> {
        a.tool_calls
            .iter()
            .map(|c| (c.id.clone(), c.name.clone(), c.arguments.clone()))
            .collect()
    }

    #[test]
    fn streaming_reflex_case_gives_empty_object() {
        // Moltis' `reflex_loop_fires_detector_and_terminates_streaming`: no argument deltas.
        let a = ok(&[
            start(0, "call_0", "exec"),
            complete(0),
            finish(Finish::ToolUse),
        ]);
        assert_eq!(
            calls(&a),
            vec![(
                "call_0".to_owned(),
                "exec".to_owned(),
                Arguments::parsed(json!({}))
            )]
        );
        assert_eq!(a.text, None);
        assert_eq!(a.finish, Some(Finish::ToolUse));
        assert_eq!(a.deltas, 3);
    }

    #[test]
    fn deltas_split_across_chunks_stay_raw() {
        let a = ok(&[
            start(0, "c", "exec"),
            delta(0, "{\"comm"),
            delta(0, "and\": \"l"),
            delta(0, "s\"}"),
            complete(0),
            finish(Finish::ToolUse),
        ]);
        assert_eq!(
            a.tool_calls[0].arguments,
            Arguments::Raw("{\"command\": \"ls\"}".into())
        );
        assert_eq!(a.deltas, 6);
    }

    #[test]
    fn blank_or_malformed_arguments_are_not_decoded_here() {
        let a = ok(&[
            start(0, "a", "x"),
            delta(0, "  "),
            start(1, "b", "y"),
            delta(1, "{"),
        ]);
        assert_eq!(a.tool_calls[0].arguments, Arguments::Raw("  ".into()));
        assert_eq!(a.tool_calls[1].arguments, Arguments::Raw("{".into()));
        // No finish chunk: the stream ended without a reason.
        assert_eq!(a.finish, None);
    }

    #[test]
    fn interleaved_calls_with_sparse_indices() {
        let a = ok(&[
            start(7, "c7", "read"),
            start(3, "c3", "grep"),
            delta(3, "{\"pattern\":"),
            delta(7, "{\"path\":"),
            delta(3, "\"x\"}"),
            delta(7, "\"a\"}"),
            complete(3),
            complete(7),
            finish(Finish::ToolUse),
        ]);
        // Order of first appearance, not of index.
        assert_eq!(
            calls(&a),
            vec![
                (
                    "c7".to_owned(),
                    "read".to_owned(),
                    Arguments::Raw("{\"path\":\"a\"}".into())
                ),
                (
                    "c3".to_owned(),
                    "grep".to_owned(),
                    Arguments::Raw("{\"pattern\":\"x\"}".into())
                ),
            ]
        );
    }

    #[test]
    fn text_and_calls() {
        let a = ok(&[
            text("Let me "),
            text("look."),
            start(0, "c", ""),
            complete(0),
            finish(Finish::ToolUse),
        ]);
        assert_eq!(a.text.as_deref(), Some("Let me look."));
        // An empty name is passed through for the engine to reject.
        assert_eq!(a.tool_calls[0].name, "");
        let only_text = ok(&[text(""), finish(Finish::Stop)]);
        assert_eq!(only_text.text.as_deref(), Some(""));
        assert!(only_text.tool_calls.is_empty());
    }

    #[test]
    fn completed_index_may_start_a_new_call() {
        let a = ok(&[
            start(0, "a", "x"),
            delta(0, "1"),
            complete(0),
            start(0, "b", "y"),
            delta(0, "2"),
        ]);
        assert_eq!(
            calls(&a),
            vec![
                ("a".to_owned(), "x".to_owned(), Arguments::Raw("1".into())),
                ("b".to_owned(), "y".to_owned(), Arguments::Raw("2".into())),
            ]
        );
    }

    #[test]
    fn error_delta_for_unknown_index() {
        let err = assemble(&[start(0, "a", "x"), delta(1, "{}")]).err();
        assert_eq!(
            err,
            Some(StreamError::NotStarted {
                position: 1,
                kind: "args_delta",
                index: 1
            })
        );
        let message = err.map(|e| e.to_string()).unwrap_or_default();
        assert!(message.contains("position 1"), "{message}");
        assert!(message.contains("index 1"), "{message}");
    }

    #[test]
    fn error_complete_for_unknown_index() {
        assert_eq!(
            assemble(&[complete(4)]).err(),
            Some(StreamError::NotStarted {
                position: 0,
                kind: "tool_call_complete",
                index: 4
            })
        );
    }

    #[test]
    fn error_second_start_for_open_index() {
        assert_eq!(
            assemble(&[start(2, "a", "x"), delta(2, "{"), start(2, "b", "y")]).err(),
            Some(StreamError::AlreadyOpen {
                position: 2,
                index: 2
            })
        );
    }

    #[test]
    fn error_chunk_after_finish() {
        let err = assemble(&[text("hi"), finish(Finish::Stop), text("more")]).err();
        assert_eq!(
            err,
            Some(StreamError::AfterFinish {
                position: 2,
                kind: "text",
                finish_at: 1
            })
        );
        assert_eq!(
            assemble(&[finish(Finish::Stop), finish(Finish::Length)]).err(),
            Some(StreamError::AfterFinish {
                position: 1,
                kind: "finish",
                finish_at: 0
            })
        );
    }

    #[test]
    fn chunk_serde_shape() {
        let chunk = start(3, "c", "exec");
        let value = serde_json::to_value(&chunk).ok();
        assert_eq!(
            value,
            Some(json!({"type": "tool_call_start", "index": 3, "id": "c", "name": "exec"}))
        );
        let back: Option<Chunk> =
            serde_json::from_value(json!({"type": "finish", "reason": "tool_use"})).ok();
        assert_eq!(back, Some(finish(Finish::ToolUse)));
    }
}
