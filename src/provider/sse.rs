//! Server-sent events as the providers use them: an optional event name and a data line (always
//! JSON, or OpenAI's `[DONE]`). Parsing bytes off the wire is the client's job (a maintained SSE
//! parser); this owns the event value and its text form, for stub servers that serve recordings.

use serde::{Deserialize, Serialize};

/// One server-sent event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SseEvent {
    /// The `event:` field (Anthropic names every event; OpenAI names none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// The `data:` payload, as sent.
    pub data: String,
}

impl SseEvent {
    /// An event's name as an SSE parser reports it (`""` or the default `message` when the
    /// stream named none) as this type holds it.
    pub fn wire_name(event: String) -> Option<String> {
        Some(event).filter(|n| !n.is_empty() && n != "message")
    }

    /// Does this event end its stream, whatever follows on the wire? OpenAI's `data: [DONE]`,
    /// Anthropic's `message_stop`, and the Responses API's `response.completed`,
    /// `response.incomplete` and `response.failed`, and the Gemini API's response whose
    /// candidate has a `finishReason` (its last: it names no event). A stream that brought one
    /// is whole even if the connection closes without a clean end (an SDK closes it at
    /// `[DONE]`).
    pub fn ends_stream(&self) -> bool {
        self.data.trim() == "[DONE]"
            || (self.event.is_none()
                && self.data.contains("\"finishReason\"")
                && serde_json::from_str::<serde_json::Value>(&self.data).is_ok_and(|v| {
                    v.pointer("/candidates/0/finishReason")
                        .is_some_and(|r| r.is_string())
                }))
            || matches!(
                self.event.as_deref(),
                Some(
                    "message_stop"
                        | "response.completed"
                        | "response.incomplete"
                        | "response.failed"
                )
            )
    }

    /// An event with a name.
    pub fn named(event: &str, data: impl Into<String>) -> Self {
        Self {
            event: Some(event.to_owned()),
            data: data.into(),
        }
    }

    /// An unnamed event.
    pub fn data(data: impl Into<String>) -> Self {
        Self {
            event: None,
            data: data.into(),
        }
    }

    /// The event's wire text, ending with the blank line that closes it.
    pub fn render(&self) -> String {
        let mut s = String::new();
        if let Some(e) = &self.event {
            s.push_str("event: ");
            s.push_str(e);
            s.push('\n');
        }
        for line in self.data.split('\n') {
            s.push_str("data: ");
            s.push_str(line);
            s.push('\n');
        }
        s.push('\n');
        s
    }
}

#[cfg(test)]
mod tests {
    use super::SseEvent;

    #[test]
    fn renders_named_and_multiline_events() {
        assert_eq!(
            SseEvent::named("ping", "{}").render(),
            "event: ping\ndata: {}\n\n"
        );
        assert_eq!(SseEvent::data("a\nb").render(), "data: a\ndata: b\n\n");
    }
}
