//! Secret scrubbing: what a cassette, an error message or a lint run must never carry. Two
//! sources of secrets: the key values actually in use (read from the environment by the caller)
//! and secret-shaped strings (provider keys, bearer tokens, cloud and forge tokens).
//!
//! Streams get special care: a secret split across events is found by joining each stream
//! channel (the same JSON path in consecutive events, e.g. `choices/0/delta/content`) and
//! redacting every piece it spans, so the split itself survives but the secret does not.

use super::cassette::TimedEvent;
use regex_lite::Regex;
use serde_json::Value;
use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::OnceLock;

/// What replaces a secret.
pub const REDACTED: &str = "[REDACTED]";

/// Secret-shaped strings: a name for the report and the pattern.
const PATTERNS: &[(&str, &str)] = &[
    ("Anthropic API key", r"sk-ant-[A-Za-z0-9_\-]{8,}"),
    ("OpenAI-style API key", r"sk-[A-Za-z0-9_\-]{16,}"),
    ("bearer token", r"[Bb]earer\s+[A-Za-z0-9._~+/\-]{16,}=*"),
    ("AWS access key id", r"(?:AKIA|ASIA)[0-9A-Z]{16}"),
    ("GitHub token", r"gh[pousr]_[A-Za-z0-9]{20,}"),
    ("GitHub token", r"github_pat_[A-Za-z0-9_]{20,}"),
    ("Slack token", r"xox[abprs]-[A-Za-z0-9\-]{10,}"),
    ("Google API key", r"AIza[0-9A-Za-z_\-]{35}"),
    ("private key", r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
];

fn patterns() -> &'static [(&'static str, Regex)] {
    static CELL: OnceLock<Vec<(&'static str, Regex)>> = OnceLock::new();
    CELL.get_or_init(|| {
        PATTERNS
            .iter()
            .filter_map(|(name, p)| Regex::new(p).ok().map(|r| (*name, r)))
            .collect()
    })
}

/// A secret found in a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Byte range.
    pub range: Range<usize>,
    /// What it looks like.
    pub kind: &'static str,
}

/// Finds and redacts secrets.
#[derive(Debug, Clone, Default)]
pub struct Scrubber {
    keys: Vec<String>,
}

impl Scrubber {
    /// A scrubber for secret shapes and these known values (values shorter than 8 characters
    /// are ignored: they would redact ordinary words).
    pub fn new(keys: impl IntoIterator<Item = String>) -> Self {
        let mut keys: Vec<String> = keys.into_iter().filter(|k| k.trim().len() >= 8).collect();
        keys.sort();
        keys.dedup();
        Self { keys }
    }

    /// A scrubber knowing the values of these environment variables (those set).
    pub fn from_env(vars: &[&str]) -> Self {
        Self::new(vars.iter().filter_map(|v| std::env::var(v).ok()))
    }

    /// Every secret in `s`, sorted, overlapping ones merged.
    pub fn find(&self, s: &str) -> Vec<Finding> {
        let mut found: Vec<Finding> = Vec::new();
        for k in &self.keys {
            found.extend(s.match_indices(k.as_str()).map(|(i, m)| Finding {
                range: i..i + m.len(),
                kind: "API key in use",
            }));
        }
        for (kind, re) in patterns() {
            found.extend(
                re.find_iter(s)
                    .filter(|m| plausible(kind, m.as_str()))
                    .map(|m| Finding {
                        range: m.range(),
                        kind,
                    }),
            );
        }
        found.sort_by_key(|f| (f.range.start, std::cmp::Reverse(f.range.end)));
        let mut merged: Vec<Finding> = Vec::new();
        for f in found {
            match merged.last_mut() {
                Some(last) if f.range.start < last.range.end => {
                    last.range.end = last.range.end.max(f.range.end);
                }
                _ => merged.push(f),
            }
        }
        merged
    }

    /// `s` with every secret replaced by [`REDACTED`].
    pub fn scrub(&self, s: &str) -> String {
        let mut out = String::with_capacity(s.len());
        let mut at = 0;
        for f in self.find(s) {
            out.push_str(&s[at..f.range.start]);
            out.push_str(REDACTED);
            at = f.range.end;
        }
        out.push_str(&s[at..]);
        out
    }

    /// Scrub every string (keys of objects too) of a JSON value.
    pub fn scrub_value(&self, v: &mut Value) {
        match v {
            Value::String(s) if !self.find(s).is_empty() => *s = self.scrub(s),
            Value::Array(a) => a.iter_mut().for_each(|x| self.scrub_value(x)),
            Value::Object(o) => {
                let dirty = o.keys().any(|k| !self.find(k).is_empty());
                if dirty {
                    let entries: Vec<(String, Value)> = std::mem::take(o).into_iter().collect();
                    o.extend(entries.into_iter().map(|(k, v)| (self.scrub(&k), v)));
                }
                o.values_mut().for_each(|x| self.scrub_value(x));
            }
            _ => {}
        }
    }

    /// Scrub a stream's events in place, secrets split across events included. Events whose
    /// data changes are re-serialized compactly; the others keep their bytes.
    pub fn scrub_events(&self, events: &mut [TimedEvent]) {
        // Each string leaf: (event, JSON pointer or None for a non-JSON payload, text).
        let mut parsed: Vec<Option<Value>> = events
            .iter()
            .map(|e| serde_json::from_str::<Value>(&e.data).ok())
            .collect();
        let mut channels: BTreeMap<String, Vec<(usize, Option<String>, String)>> = BTreeMap::new();
        for (i, p) in parsed.iter().enumerate() {
            match p {
                Some(v) => leaves(v, &mut String::new(), &mut |pointer, channel, text| {
                    channels
                        .entry(channel)
                        .or_default()
                        .push((i, Some(pointer), text.to_owned()));
                }),
                None => channels.entry(String::new()).or_default().push((
                    i,
                    None,
                    events[i].data.clone(),
                )),
            }
        }
        let mut dirty = vec![false; events.len()];
        for pieces in channels.values() {
            let joined: String = pieces.iter().map(|p| p.2.as_str()).collect();
            let findings = self.find(&joined);
            if findings.is_empty() {
                continue;
            }
            let mut start = 0;
            for (event, pointer, text) in pieces {
                let span = start..start + text.len();
                start = span.end;
                let mut new = String::with_capacity(text.len());
                let mut at = span.start;
                let mut changed = false;
                for f in findings
                    .iter()
                    .filter(|f| f.range.start < span.end && f.range.end > span.start)
                {
                    let from = f.range.start.max(span.start);
                    let to = f.range.end.min(span.end);
                    new.push_str(&joined[at..from]);
                    // The piece where the secret starts says so; the others just lose their part.
                    if from == f.range.start {
                        new.push_str(REDACTED);
                    }
                    at = to;
                    changed = true;
                }
                if !changed {
                    continue;
                }
                new.push_str(&joined[at..span.end]);
                dirty[*event] = true;
                match (pointer, parsed[*event].as_mut()) {
                    (Some(ptr), Some(v)) => {
                        if let Some(slot) = v.pointer_mut(ptr) {
                            *slot = Value::String(new);
                        }
                    }
                    _ => events[*event].data = new,
                }
            }
        }
        for (i, e) in events.iter_mut().enumerate() {
            if dirty[i] {
                if let Some(v) = parsed[i].take() {
                    e.data = serde_json::to_string(&v).unwrap_or_default();
                }
            }
            if let Some(name) = &e.event {
                e.event = Some(self.scrub(name));
            }
        }
    }
}

/// Shape checks a regex cannot express: a bearer token has a digit (so "Bearer authentication"
/// is prose, not a token).
fn plausible(kind: &str, m: &str) -> bool {
    kind != "bearer token"
        || m.split_whitespace()
            .nth(1)
            .is_some_and(|t| t.chars().any(|c| c.is_ascii_digit()))
}

/// Call `f(pointer, channel, text)` for every string leaf of `v`. The channel is the pointer
/// with array indices kept, so the same field of consecutive events forms one channel.
fn leaves(v: &Value, pointer: &mut String, f: &mut dyn FnMut(String, String, &str)) {
    match v {
        Value::String(s) => f(pointer.clone(), pointer.clone(), s),
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&i.to_string());
                leaves(x, pointer, f);
                pointer.truncate(len);
            }
        }
        Value::Object(o) => {
            for (k, x) in o {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&k.replace('~', "~0").replace('/', "~1"));
                leaves(x, pointer, f);
                pointer.truncate(len);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const CANARY: &str = "sk-canary-0123456789abcdefXYZ";

    #[test]
    fn shapes_and_known_keys() {
        let s = Scrubber::new(["plain-secret-value".to_owned(), "short".to_owned()]);
        assert_eq!(
            s.scrub(&format!("key {CANARY} and plain-secret-value, short")),
            "key [REDACTED] and [REDACTED], short"
        );
        assert_eq!(
            s.scrub("Authorization: Bearer abc.def-1234567890xyz"),
            "Authorization: [REDACTED]"
        );
        assert_eq!(
            s.scrub("Bearer authentication is used"),
            "Bearer authentication is used"
        );
        assert_eq!(s.scrub("AKIAIOSFODNN7EXAMPLE"), "[REDACTED]");
        assert_eq!(s.scrub("ghp_0123456789abcdefghijABCD"), "[REDACTED]");
        assert_eq!(
            s.scrub("no secrets here: sk-short"),
            "no secrets here: sk-short"
        );
        let mut v = json!({"a": [CANARY, {"b": "x"}]});
        s.scrub_value(&mut v);
        assert_eq!(v, json!({"a": ["[REDACTED]", {"b": "x"}]}));
    }

    #[test]
    fn secret_split_across_events_is_redacted_in_every_piece() {
        let ev = |t: &str| TimedEvent {
            t_ms: 0,
            event: None,
            data: json!({"choices": [{"delta": {"content": t}}]}).to_string(),
        };
        let (a, b) = CANARY.split_at(9);
        let mut events = vec![
            ev("my key is "),
            ev(a),
            ev(b),
            ev(" ok"),
            TimedEvent {
                t_ms: 1,
                event: None,
                data: "[DONE]".into(),
            },
        ];
        let untouched = events[0].data.clone();
        Scrubber::default().scrub_events(&mut events);
        let all: String = events.iter().map(|e| e.data.as_str()).collect();
        assert!(!all.contains("canary"), "{all}");
        assert!(!all.contains(&b[3..]), "{all}");
        assert_eq!(events[0].data, untouched);
        assert!(events[1].data.contains(REDACTED));
        assert!(!events[2].data.contains(REDACTED));
        assert_eq!(events.len(), 5);
        assert_eq!(events[4].data, "[DONE]");
    }
}
