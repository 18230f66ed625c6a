//! Context compaction helpers: IronClaw's retry compaction (runtimes.md IronClaw §7 `call_llm` step 3,
//! §9.4 D7/D8) and the book's size estimate and summary split (chapter 63, `compact`).
//!
//! Owns how a message list is cut and measured, nothing more: it never calls a model (the book
//! summarizes the older part with one; that call belongs to the engine), never decides *when* to
//! compact, and only builds new lists from clones, leaving the caller's conversation untouched.

use crate::llm::{Message, Role};

/// IronClaw's `compact_messages_for_retry`, used once after a context-length error.
///
/// With a user message: the system messages before the *last* user message (in order), then
/// `note` as a system message if anything else came before it (so a fresh conversation is not
/// told it was compacted), then the last user message and everything after it unchanged (so a
/// system nudge pushed after it stays where it was, once). Without a user message nothing can be
/// dropped safely: all system messages first, then all the others, each group in order.
pub fn compact_for_retry(messages: &[Message], note: &str) -> Vec<Message> {
    let Some(last_user) = messages.iter().rposition(|m| m.role == Role::User) else {
        let (systems, others): (Vec<&Message>, Vec<&Message>) =
            messages.iter().partition(|m| m.role == Role::System);
        return systems.into_iter().chain(others).cloned().collect();
    };
    let (before, current) = messages.split_at(last_user);
    let mut out: Vec<Message> = before
        .iter()
        .filter(|m| m.role == Role::System)
        .cloned()
        .collect();
    if before.iter().any(|m| m.role != Role::System) {
        out.push(Message::new(Role::System, note));
    }
    out.extend_from_slice(current);
    out
}

/// The book's `estimateContextSize`: the length of the conversation as JSON, divided by 4.
///
/// Each message is rendered as `{"role":…,"content":…}`, plus
/// `"tool_calls":[{"id":…,"name":…,"arguments":…}]` when it carries tool calls, where
/// `arguments` is a JSON *string* (compact JSON text of parsed arguments in their own key order,
/// or the raw text as received), the shape chat APIs put on the wire.
///
/// Two deliberate departures from `JSON.stringify(messages).length / 4`:
/// - length is in UTF-8 bytes, not UTF-16 code units, so non-ASCII text weighs more (equal for
///   ASCII), which is closer to how tokenizers split such text;
/// - the division floors instead of yielding a fraction, so a caller testing
///   `estimate > threshold` with an integer threshold fires up to 3 bytes later than the book.
pub fn estimate_tokens(messages: &[Message]) -> u64 {
    estimate_of(messages.len(), messages.iter().map(wire_len).sum())
}

/// [`estimate_tokens`] of `count` messages whose [`wire_len`]s add up to `wire`: the length of
/// `[m1,m2,…]`, counted without writing it (the loop asks every iteration).
pub fn estimate_of(count: usize, wire: usize) -> u64 {
    let bytes = 2 + count.saturating_sub(1) + wire;
    u64::try_from(bytes / 4).unwrap_or(u64::MAX)
}

/// The length of one message in the estimate's compact JSON: `role` and `content`, then
/// `tool_calls` when there are any, each `id`, `name` and `arguments` as a string.
pub fn wire_len(m: &Message) -> usize {
    use crate::json::quoted_len as q;
    // {"role":…,"content":…}
    let mut n =
        2 + r#""role":"#.len() + q(m.role.as_str()) + 1 + r#""content":"#.len() + q(&m.content);
    if !m.tool_calls.is_empty() {
        // ,"tool_calls":[{"id":…,"name":…,"arguments":…},…]
        n += 1 + r#""tool_calls":"#.len() + 2 + (m.tool_calls.len() - 1);
        for c in &m.tool_calls {
            n += 2
                + r#""id":"#.len()
                + q(&c.id)
                + 1
                + r#""name":"#.len()
                + q(&c.name)
                + 1
                + r#""arguments":"#.len()
                + q(c.arguments.text());
        }
    }
    n
}

/// The book's split before summarizing: `older = messages.slice(0, -keep_last)` goes to the
/// summarizer, `recent = messages.slice(-keep_last)` is kept verbatim after the summary.
///
/// JavaScript's `slice` semantics are kept exactly: with fewer messages than `keep_last`,
/// `older` is empty and `recent` is everything; and with `keep_last == 0`, `-0` is `0`, so
/// `slice(0, -0)` is *empty* and `slice(-0)` is *everything*: nothing is summarized, rather than
/// everything as "keep the last 0" would suggest.
pub fn split_for_summary(messages: &[Message], keep_last: usize) -> (Vec<Message>, Vec<Message>) {
    let at = if keep_last == 0 {
        0
    } else {
        messages.len().saturating_sub(keep_last)
    };
    let (older, recent) = messages.split_at(at);
    (older.to_vec(), recent.to_vec())
}

#[cfg(test)]
mod tests {
    use super::{compact_for_retry, estimate_tokens, split_for_summary, wire_len};
    use serde::Serialize;

    /// One message as the estimate renders it; field order is the wire order.
    #[derive(Serialize)]
    struct WireMessage<'a> {
        role: &'static str,
        content: &'a str,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<WireCall<'a>>,
    }

    #[derive(Serialize)]
    struct WireCall<'a> {
        id: &'a str,
        name: &'a str,
        arguments: &'a str,
    }

    impl<'a> From<&'a Message> for WireMessage<'a> {
        fn from(m: &'a Message) -> Self {
            Self {
                role: m.role.as_str(),
                content: &m.content,
                tool_calls: m
                    .tool_calls
                    .iter()
                    .map(|c| WireCall {
                        id: &c.id,
                        name: &c.name,
                        arguments: c.arguments.text(),
                    })
                    .collect(),
            }
        }
    }

    use crate::llm::{Arguments, Message, Role, ToolCall};
    use serde_json::json;

    const NOTE: &str = "[earlier conversation compacted]";

    fn m(role: Role, content: &str) -> Message {
        Message::new(role, content)
    }

    /// `(role, content)` pairs, enough to compare lists since `Message` has no `PartialEq`.
    fn shape(messages: &[Message]) -> Vec<(Role, String)> {
        messages
            .iter()
            .map(|m| (m.role, m.content.clone()))
            .collect()
    }

    fn pairs(list: &[(Role, &str)]) -> Vec<(Role, String)> {
        list.iter().map(|(r, c)| (*r, (*c).to_owned())).collect()
    }

    #[test]
    fn compact_keeps_system_note_last_user_and_trailing_tool_exchange() {
        let mut call = m(Role::Assistant, "");
        call.tool_calls.push(ToolCall {
            id: "c1".into(),
            name: "read".into(),
            arguments: Arguments::parsed(json!({"path": "a"})),
        });
        let messages = vec![
            m(Role::System, "sys"),
            m(Role::User, "first"),
            m(Role::Assistant, "answer"),
            m(Role::User, "second"),
            call,
            m(Role::Tool, "contents"),
        ];
        let out = compact_for_retry(&messages, NOTE);
        assert_eq!(
            shape(&out),
            pairs(&[
                (Role::System, "sys"),
                (Role::System, NOTE),
                (Role::User, "second"),
                (Role::Assistant, ""),
                (Role::Tool, "contents"),
            ])
        );
        // The trailing exchange is carried whole, tool calls included.
        assert_eq!(out[3].tool_calls.len(), 1);
        assert_eq!(out[3].tool_calls[0].id, "c1");
    }

    #[test]
    fn compact_keeps_systems_before_last_user_in_order() {
        let messages = vec![
            m(Role::System, "s1"),
            m(Role::User, "u1"),
            m(Role::System, "s2"),
            m(Role::Assistant, "a1"),
            m(Role::System, "s3"),
            m(Role::User, "u2"),
        ];
        assert_eq!(
            shape(&compact_for_retry(&messages, NOTE)),
            pairs(&[
                (Role::System, "s1"),
                (Role::System, "s2"),
                (Role::System, "s3"),
                (Role::System, NOTE),
                (Role::User, "u2"),
            ])
        );
    }

    #[test]
    fn compact_trailing_system_nudge_not_duplicated() {
        let messages = vec![
            m(Role::System, "sys"),
            m(Role::User, "u1"),
            m(Role::Assistant, "a1"),
            m(Role::User, "u2"),
            m(Role::System, "nudge"),
        ];
        let out = compact_for_retry(&messages, NOTE);
        assert_eq!(
            shape(&out),
            pairs(&[
                (Role::System, "sys"),
                (Role::System, NOTE),
                (Role::User, "u2"),
                (Role::System, "nudge"),
            ])
        );
        assert_eq!(out.iter().filter(|m| m.content == "nudge").count(), 1);
    }

    #[test]
    fn compact_note_only_when_earlier_history_existed() {
        let fresh = vec![m(Role::System, "sys"), m(Role::User, "only")];
        assert_eq!(
            shape(&compact_for_retry(&fresh, NOTE)),
            pairs(&[(Role::System, "sys"), (Role::User, "only")])
        );
        // Systems alone before the last user message are not history either.
        let systems_only = vec![
            m(Role::System, "s1"),
            m(Role::System, "s2"),
            m(Role::User, "only"),
        ];
        assert!(
            compact_for_retry(&systems_only, NOTE)
                .iter()
                .all(|m| m.content != NOTE)
        );
        // A single earlier tool message is enough.
        let with_tool = vec![m(Role::Tool, "old"), m(Role::User, "now")];
        assert_eq!(
            shape(&compact_for_retry(&with_tool, NOTE)),
            pairs(&[(Role::System, NOTE), (Role::User, "now")])
        );
    }

    #[test]
    fn compact_no_user_message_keeps_all_systems_first() {
        let messages = vec![
            m(Role::Assistant, "a1"),
            m(Role::System, "s1"),
            m(Role::Tool, "t1"),
            m(Role::System, "s2"),
        ];
        assert_eq!(
            shape(&compact_for_retry(&messages, NOTE)),
            pairs(&[
                (Role::System, "s1"),
                (Role::System, "s2"),
                (Role::Assistant, "a1"),
                (Role::Tool, "t1"),
            ])
        );
        assert!(compact_for_retry(&[], NOTE).is_empty());
    }

    #[test]
    fn compact_result_shorter_with_current_request_last() {
        // D7: a long conversation compacted for the retry ends with the request being answered.
        let mut messages = vec![m(Role::System, "sys")];
        for i in 0..5 {
            messages.push(m(Role::User, &format!("q{i}")));
            messages.push(m(Role::Assistant, &format!("a{i}")));
        }
        messages.push(m(Role::User, "current request"));
        let out = compact_for_retry(&messages, NOTE);
        assert!(
            out.len() < messages.len(),
            "{} vs {}",
            out.len(),
            messages.len()
        );
        let last = out.last().map(|m| (m.role, m.content.as_str()));
        assert_eq!(last, Some((Role::User, "current request")));
    }

    /// Upstream `test_compact_drops_old_history_but_keeps_current_turn_tools`: three earlier
    /// exchanges go, the current request and its whole tool exchange (one assistant message
    /// with two calls, two results) stay, in order.
    #[test]
    fn compact_drops_old_history_but_keeps_current_turn_tools() {
        let mut messages = vec![m(Role::System, "sys")];
        for i in 1..=3 {
            messages.push(m(Role::User, &format!("q{i}")));
            messages.push(m(Role::Assistant, &format!("a{i}")));
        }
        messages.push(m(Role::User, "current"));
        let mut calls = m(Role::Assistant, "");
        for (id, name) in [("c1", "http"), ("c2", "echo")] {
            calls.tool_calls.push(ToolCall {
                id: id.into(),
                name: name.into(),
                arguments: Arguments::parsed(json!({})),
            });
        }
        messages.push(calls);
        messages.push(m(Role::Tool, "response data"));
        messages.push(m(Role::Tool, "echoed"));
        let out = compact_for_retry(&messages, NOTE);
        assert_eq!(
            shape(&out),
            pairs(&[
                (Role::System, "sys"),
                (Role::System, NOTE),
                (Role::User, "current"),
                (Role::Assistant, ""),
                (Role::Tool, "response data"),
                (Role::Tool, "echoed"),
            ])
        );
        let ids: Vec<&str> = out[3].tool_calls.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["c1", "c2"]);
    }

    #[test]
    fn estimate_is_json_bytes_over_four() {
        // [{"role":"user","content":"hi"}] is 32 bytes → 8.
        let one = [m(Role::User, "hi")];
        assert_eq!(estimate_tokens(&one), 8);
        // 35 bytes → 8: the division floors.
        assert_eq!(estimate_tokens(&[m(Role::User, "hello")]), 8);
        assert_eq!(estimate_tokens(&[]), 0); // "[]"
        // Escapes count as written: "a\"b" is 6 bytes on the wire, not 3.
        let quoted = [m(Role::User, "a\"b")];
        assert_eq!(
            estimate_tokens(&quoted),
            r#"[{"role":"user","content":"a\"b"}]"#.len() as u64 / 4
        );
        // Bytes, not chars: "é" is two bytes.
        let accented = [m(Role::User, "é")];
        assert_eq!(
            estimate_tokens(&accented),
            r#"[{"role":"user","content":"é"}]"#.len() as u64 / 4
        );
    }

    #[test]
    fn the_estimate_counts_the_json_it_does_not_write() {
        let mut messages = vec![
            m(Role::System, "sys \"q\" \\ \n\u{1}é😀"),
            m(Role::User, ""),
        ];
        let mut a = m(Role::Assistant, "calling");
        for (i, args) in [
            Arguments::parsed(json!({"q": "a\"b\n", "n": [1, 2.5, null], "o": {}})),
            Arguments::Raw("{\"cmd\": \"ls\\n\"".into()),
            Arguments::parsed(json!({})),
        ]
        .into_iter()
        .enumerate()
        {
            a.tool_calls.push(ToolCall {
                id: format!("call_{i}\t"),
                name: "exec".into(),
                arguments: args,
            });
        }
        messages.push(a);
        messages.push(m(Role::Tool, "out\u{7f}"));
        for n in 0..=messages.len() {
            let wire: Vec<WireMessage<'_>> = messages[..n].iter().map(WireMessage::from).collect();
            let json = serde_json::to_string(&wire).unwrap();
            assert_eq!(
                estimate_tokens(&messages[..n]),
                json.len() as u64 / 4,
                "{json}"
            );
            assert_eq!(
                2 + n.saturating_sub(1) + messages[..n].iter().map(wire_len).sum::<usize>(),
                json.len()
            );
        }
    }

    #[test]
    fn estimate_includes_tool_calls_with_string_arguments() {
        let mut assistant = m(Role::Assistant, "");
        assistant.tool_calls.push(ToolCall {
            id: "c1".into(),
            name: "read".into(),
            arguments: Arguments::parsed(json!({"b": 1, "a": [true]})),
        });
        assistant.tool_calls.push(ToolCall {
            id: "c2".into(),
            name: "exec".into(),
            arguments: Arguments::Raw("{\"cmd\":".into()),
        });
        let expected = concat!(
            r#"[{"role":"assistant","content":"","tool_calls":["#,
            r#"{"id":"c1","name":"read","arguments":"{\"b\":1,\"a\":[true]}"},"#,
            r#"{"id":"c2","name":"exec","arguments":"{\"cmd\":"}]}]"#
        );
        assert_eq!(estimate_tokens(&[assistant]), expected.len() as u64 / 4);
    }

    #[test]
    fn split_keeps_last_three_like_the_book() {
        let messages: Vec<Message> = (0..5).map(|i| m(Role::User, &i.to_string())).collect();
        let (older, recent) = split_for_summary(&messages, 3);
        assert_eq!(
            shape(&older),
            pairs(&[(Role::User, "0"), (Role::User, "1")])
        );
        assert_eq!(
            shape(&recent),
            pairs(&[(Role::User, "2"), (Role::User, "3"), (Role::User, "4")])
        );
    }

    #[test]
    fn split_fewer_than_keep_last_summarizes_nothing() {
        let messages = vec![m(Role::User, "a"), m(Role::Assistant, "b")];
        let (older, recent) = split_for_summary(&messages, 3);
        assert!(older.is_empty());
        assert_eq!(recent.len(), 2);
        let (older, recent) = split_for_summary(&messages, 2);
        assert!(older.is_empty());
        assert_eq!(recent.len(), 2);
        let (older, recent) = split_for_summary(&[], 3);
        assert!(older.is_empty() && recent.is_empty());
    }

    #[test]
    fn split_keep_last_zero_is_the_javascript_quirk() {
        // slice(0, -0) is empty and slice(-0) is everything.
        let messages = vec![m(Role::User, "a"), m(Role::Assistant, "b")];
        let (older, recent) = split_for_summary(&messages, 0);
        assert!(older.is_empty());
        assert_eq!(
            shape(&recent),
            pairs(&[(Role::User, "a"), (Role::Assistant, "b")])
        );
    }
}
