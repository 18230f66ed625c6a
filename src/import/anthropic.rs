//! Anthropic message lists: `{role, content}` where content is a string or typed blocks —
//! `text`, `tool_use {id, name, input}` (assistant) and `tool_result {tool_use_id, content,
//! is_error}` (user). A user message made only of tool results is not a user turn.
//!
//! File shapes and success labels as for OpenAI lists (`openai.rs`). A result failed when
//! `is_error` is true; without the flag, when its text starts with `Error`.

use super::openai::convert_lists;
use super::{Reader, Root, Run, TraceBuilder, content_text, error_prefixed, parse_args};
use crate::diagnostic::Diagnostic;
use serde::Deserialize;
use serde_json::Value;

/// One Anthropic message.
#[derive(Debug, Deserialize)]
pub struct Message {
    /// `user` or `assistant` (`system` is ignored).
    pub role: String,
    /// A string or content blocks.
    #[serde(default)]
    pub content: Option<Value>,
    /// Token usage (`input_tokens`, `output_tokens`), when recorded.
    #[serde(default)]
    pub usage: Option<Value>,
}

fn blocks(content: Option<&Value>) -> Vec<&serde_json::Map<String, Value>> {
    content
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_object).collect())
        .unwrap_or_default()
}

fn kind(block: &serde_json::Map<String, Value>) -> &str {
    block.get("type").and_then(Value::as_str).unwrap_or("")
}

fn text_of(m: &Message) -> String {
    match m.content.as_ref() {
        Some(Value::String(s)) => s.clone(),
        c => blocks(c)
            .into_iter()
            .filter(|b| kind(b) == "text")
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

/// Fill `b` from an Anthropic message list.
pub fn fill(b: &mut TraceBuilder, messages: &[Message]) {
    for m in messages {
        let text = text_of(m);
        match m.role.as_str() {
            "assistant" => {
                let calls = blocks(m.content.as_ref())
                    .into_iter()
                    .filter(|b| kind(b) == "tool_use")
                    .map(|blk| {
                        let id = blk
                            .get("id")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_owned();
                        let name = blk
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_owned();
                        (id, name, parse_args(blk.get("input")))
                    })
                    .collect();
                let get = |k: &str| {
                    m.usage
                        .as_ref()
                        .and_then(|u| u.get(k))
                        .and_then(Value::as_u64)
                        .unwrap_or(0)
                };
                b.response(&text, calls, (get("input_tokens"), get("output_tokens")));
            }
            "user" => {
                let results: Vec<_> = blocks(m.content.as_ref())
                    .into_iter()
                    .filter(|blk| kind(blk) == "tool_result")
                    .collect();
                for r in &results {
                    let id = r.get("tool_use_id").and_then(Value::as_str).unwrap_or("");
                    let out = content_text(r.get("content"));
                    let failed = r
                        .get("is_error")
                        .and_then(Value::as_bool)
                        .unwrap_or_else(|| error_prefixed(&out));
                    b.result(id, &out, failed);
                }
                if results.is_empty() || !text.is_empty() {
                    b.user(&text);
                }
            }
            _ => {}
        }
    }
}

/// The Anthropic reader: message lists with content blocks (`tool_use`, `tool_result`).
pub const READER: Reader = Reader {
    name: "anthropic",
    root: Root::Any,
    detect: |doc| {
        super::message_list(doc).is_some_and(|list| {
            list.iter().any(|m| {
                m.get("content")
                    .and_then(Value::as_array)
                    .is_some_and(|blocks| {
                        blocks.iter().any(|b| {
                            matches!(
                                b.get("type").and_then(Value::as_str),
                                Some("tool_use" | "tool_result")
                            )
                        })
                    })
            })
        })
    },
    convert,
    whole_file: None,
};

/// Convert a parsed Anthropic document.
pub fn convert(doc: Value, rel: &str, text: &str) -> Result<Vec<Run>, Diagnostic> {
    convert_lists(doc, rel, text, READER.name, &|b, m: &[Message]| fill(b, m))
}
