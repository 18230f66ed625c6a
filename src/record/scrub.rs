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

/// Secret-shaped strings: a name for the report, the literal texts one must start with, and
/// the pattern. The literals let a long text be searched at the speed of a substring search:
/// the pattern runs only where one of them occurs (a 60 MiB session scrubs in milliseconds,
/// not minutes).
const PATTERNS: &[(&str, &[&str], &str)] = &[
    (
        "Anthropic API key",
        &["sk-ant-"],
        r"sk-ant-[A-Za-z0-9_\-]{8,}",
    ),
    ("OpenAI-style API key", &["sk-"], r"sk-[A-Za-z0-9_\-]{16,}"),
    (
        "bearer token",
        &["Bearer", "bearer"],
        r"[Bb]earer\s+[A-Za-z0-9._~+/\-]{16,}=*",
    ),
    (
        "AWS access key id",
        &["AKIA", "ASIA"],
        r"(?:AKIA|ASIA)[0-9A-Z]{16}",
    ),
    ("GitHub token", &["gh"], r"gh[pousr]_[A-Za-z0-9]{20,}"),
    (
        "GitHub token",
        &["github_pat_"],
        r"github_pat_[A-Za-z0-9_]{20,}",
    ),
    ("Slack token", &["xox"], r"xox[abprs]-[A-Za-z0-9\-]{10,}"),
    ("Google API key", &["AIza"], r"AIza[0-9A-Za-z_\-]{35}"),
    (
        "private key",
        &["-----BEGIN "],
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----",
    ),
];

/// A secret shape, compiled: its pattern anchored, tried where one of its literals starts.
struct Shape {
    kind: &'static str,
    starts: &'static [&'static str],
    anchored: Regex,
}

impl Shape {
    /// The leftmost non-overlapping matches in `s`, as an unanchored search would find them,
    /// given every position where one of this shape's literals starts (ascending): every
    /// match starts with one of them, so trying the anchored pattern at each in order finds
    /// the same ones.
    fn find_at(&self, s: &str, at: &[usize]) -> Vec<Range<usize>> {
        let mut found = Vec::new();
        let mut after = 0;
        for &i in at {
            if i < after {
                continue;
            }
            if let Some(m) = s.get(i..).and_then(|rest| self.anchored.find(rest)) {
                found.push(i..i + m.end());
                after = i + m.end();
            }
        }
        found
    }

    /// [`Shape::find_at`] at every place one of this shape's literals starts.
    #[cfg(test)]
    fn find_iter(&self, s: &str) -> Vec<Range<usize>> {
        let i = patterns()
            .iter()
            .position(|p| std::ptr::eq(p, self))
            .unwrap_or_default();
        self.find_at(s, &literal_starts(s)[i])
    }
}

/// For each shape of [`patterns`], every position of `s` where one of its literals starts,
/// ascending: one pass over the text, looking further only at a byte some literal begins with
/// (a text is read once, not once a literal).
fn literal_starts(s: &str) -> Vec<Vec<usize>> {
    static BY_FIRST: OnceLock<Vec<Vec<(usize, &'static str)>>> = OnceLock::new();
    let by_first = BY_FIRST.get_or_init(|| {
        let mut table = vec![Vec::new(); 256];
        for (k, shape) in patterns().iter().enumerate() {
            for lit in shape.starts {
                if let Some(&first) = lit.as_bytes().first() {
                    table[usize::from(first)].push((k, *lit));
                }
            }
        }
        table
    });
    let mut at = vec![Vec::new(); patterns().len()];
    let bytes = s.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        for &(k, lit) in &by_first[usize::from(b)] {
            if bytes[i..].starts_with(lit.as_bytes()) && at[k].last() != Some(&i) {
                at[k].push(i);
            }
        }
    }
    at
}

fn patterns() -> &'static [Shape] {
    static CELL: OnceLock<Vec<Shape>> = OnceLock::new();
    CELL.get_or_init(|| {
        PATTERNS
            .iter()
            .filter_map(|(kind, starts, p)| {
                Regex::new(&format!("^(?:{p})")).ok().map(|anchored| Shape {
                    kind,
                    starts,
                    anchored,
                })
            })
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
    /// A scrubber for secret shapes and these known values, each also without surrounding
    /// whitespace (the form a server echoes); values shorter than 8 characters are ignored:
    /// they would redact ordinary words.
    pub fn new(keys: impl IntoIterator<Item = String>) -> Self {
        let mut keys: Vec<String> = keys
            .into_iter()
            .filter(|k| k.trim().len() >= 8)
            .flat_map(|k| {
                let trimmed = k.trim().to_owned();
                [k, trimmed]
            })
            .collect();
        // Longest first, so a padded key is replaced whole before its trimmed form.
        keys.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        keys.dedup();
        Self { keys }
    }

    /// Also know `keys` (a scrubber learning the keys clients send); known ones change nothing.
    pub fn learn(&mut self, keys: impl IntoIterator<Item = String>) {
        let new: Vec<String> = keys
            .into_iter()
            .filter(|k| k.trim().len() >= 8 && !self.keys.contains(k))
            .collect();
        if !new.is_empty() {
            *self = Self::new(self.keys.drain(..).chain(new));
        }
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
        for (shape, at) in patterns().iter().zip(literal_starts(s)) {
            found.extend(
                shape
                    .find_at(s, &at)
                    .into_iter()
                    .filter(|m| plausible(shape.kind, &s[m.clone()]))
                    .map(|range| Finding {
                        range,
                        kind: shape.kind,
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

    /// Scrub every string (keys of objects too) of a JSON value; a string that is itself JSON
    /// (tool arguments) is also scrubbed decoded, so JSON escapes hide nothing.
    pub fn scrub_value(&self, v: &mut Value) {
        match v {
            Value::String(s) if !self.find(s).is_empty() => *s = self.scrub(s),
            Value::String(s) if self.find_decoded(s).is_some() => {
                if let Ok(mut inner) = serde_json::from_str::<Value>(s) {
                    self.scrub_value(&mut inner);
                    *s = serde_json::to_string(&inner).unwrap_or_default();
                }
            }
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
    ///
    /// Pieces are joined as clients assemble them, in two passes: by place with array
    /// positions replaced by the `index` the providers give each choice, tool call and content
    /// block (so the arguments of call 0 are one value however the calls interleave), then by
    /// field name across the whole stream (so Anthropic's text blocks, which clients
    /// concatenate, are one text). An assembled value that is itself JSON (tool arguments) is
    /// also scrubbed after decoding, so a key spelled with JSON escapes is found too.
    pub fn scrub_events(&self, events: &mut [TimedEvent]) {
        let mut parsed: Vec<Option<Value>> = events
            .iter()
            .map(|e| serde_json::from_str::<Value>(&e.data).ok())
            .collect();
        let mut dirty = vec![false; events.len()];
        for by_name in [false, true] {
            self.scrub_channels(events, &mut parsed, &mut dirty, by_name);
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

    /// The secrets found in a stream's assembled values (see [`Self::scrub_events`]), as the
    /// 0-based event each starts in and what it looks like; for `harness lint`.
    pub fn find_in_events(&self, events: &[TimedEvent]) -> Vec<(usize, &'static str)> {
        let parsed: Vec<Option<Value>> = events
            .iter()
            .map(|e| serde_json::from_str::<Value>(&e.data).ok())
            .collect();
        let mut found = Vec::new();
        for by_name in [false, true] {
            for (_, pieces) in channels(events, &parsed, by_name) {
                let joined: String = pieces.iter().map(|p| p.text.as_str()).collect();
                let mut start = 0;
                let starts: Vec<(usize, usize)> = pieces
                    .iter()
                    .map(|p| {
                        let at = (start, p.event);
                        start += p.text.len();
                        at
                    })
                    .collect();
                let event_at = |offset: usize| {
                    starts
                        .iter()
                        .rev()
                        .find(|(s, _)| *s <= offset)
                        .map_or(0, |(_, e)| *e)
                };
                let mut hits: Vec<(usize, &'static str)> = self
                    .find(&joined)
                    .into_iter()
                    .map(|f| (event_at(f.range.start), f.kind))
                    .collect();
                if hits.is_empty() {
                    if let Some(kind) = self.find_decoded(&joined) {
                        hits.push((pieces[0].event, kind));
                    }
                }
                found.extend(hits);
            }
        }
        found.sort_unstable();
        found.dedup_by_key(|f| f.0);
        found
    }

    /// A secret in `text` read as JSON (strings decoded), when `text` is JSON: what a reader
    /// that decodes it (tool arguments) would see.
    pub fn find_decoded(&self, text: &str) -> Option<&'static str> {
        let trimmed = text.trim_start();
        if !(trimmed.starts_with('{') || trimmed.starts_with('[') || trimmed.starts_with('"')) {
            return None;
        }
        let v: Value = serde_json::from_str(text).ok()?;
        let mut kind = None;
        visit_strings(&v, &mut |s| {
            if kind.is_none() {
                kind = self.find(s).first().map(|f| f.kind);
            }
        });
        kind
    }

    /// One pass of [`Self::scrub_events`]: join each channel's pieces, redact what is found,
    /// write the pieces back.
    fn scrub_channels(
        &self,
        events: &mut [TimedEvent],
        parsed: &mut [Option<Value>],
        dirty: &mut [bool],
        by_name: bool,
    ) {
        for (_, pieces) in channels(events, parsed, by_name) {
            let joined: String = pieces.iter().map(|p| p.text.as_str()).collect();
            let findings = self.find(&joined);
            let mut new_texts: Vec<Option<String>> = vec![None; pieces.len()];
            if !findings.is_empty() {
                let mut start = 0;
                for (k, piece) in pieces.iter().enumerate() {
                    let span = start..start + piece.text.len();
                    start = span.end;
                    let mut new = String::with_capacity(piece.text.len());
                    let mut at = span.start;
                    let mut changed = false;
                    for f in findings
                        .iter()
                        .filter(|f| f.range.start < span.end && f.range.end > span.start)
                    {
                        let from = f.range.start.max(span.start);
                        let to = f.range.end.min(span.end);
                        new.push_str(&joined[at..from]);
                        // The piece where the secret starts says so; the others lose their part.
                        if from == f.range.start {
                            new.push_str(REDACTED);
                        }
                        at = to;
                        changed = true;
                    }
                    if changed {
                        new.push_str(&joined[at..span.end]);
                        new_texts[k] = Some(new);
                    }
                }
            }
            // Arguments spelled with JSON escapes: decoded, they may hold a key the raw text
            // does not show. Then the whole value is replaced by its scrubbed form.
            let assembled: String = pieces
                .iter()
                .zip(&new_texts)
                .map(|(p, n)| n.as_deref().unwrap_or(&p.text))
                .collect();
            if self.find_decoded(&assembled).is_some() {
                if let Ok(mut v) = serde_json::from_str::<Value>(&assembled) {
                    self.scrub_value(&mut v);
                    let whole = serde_json::to_string(&v).unwrap_or_default();
                    for (k, slot) in new_texts.iter_mut().enumerate() {
                        *slot = Some(if k == 0 { whole.clone() } else { String::new() });
                    }
                }
            }
            for (piece, new) in pieces.iter().zip(new_texts) {
                let Some(new) = new else { continue };
                dirty[piece.event] = true;
                match (&piece.pointer, parsed[piece.event].as_mut()) {
                    (Some(ptr), Some(v)) => {
                        if let Some(slot) = v.pointer_mut(ptr) {
                            *slot = Value::String(new);
                        }
                    }
                    _ => events[piece.event].data = new,
                }
            }
        }
    }
}

/// One string of a stream: the event it is in, where in that event's JSON (`None`: the whole
/// non-JSON payload), and the text.
struct Piece {
    event: usize,
    pointer: Option<String>,
    text: String,
}

/// The pieces of each channel, in event order: by `index`-keyed place, or (`by_name`) by the
/// name of the field that holds them.
fn channels(
    events: &[TimedEvent],
    parsed: &[Option<Value>],
    by_name: bool,
) -> BTreeMap<String, Vec<Piece>> {
    let mut out: BTreeMap<String, Vec<Piece>> = BTreeMap::new();
    for (i, p) in parsed.iter().enumerate() {
        match p {
            Some(v) => {
                let mut place = String::new();
                if let Some(n) = v.get("index").and_then(Value::as_u64) {
                    place.push_str(&format!("#{n}"));
                }
                leaves(
                    v,
                    &mut String::new(),
                    &mut place,
                    &mut |pointer, place, name, text| {
                        let channel = if by_name { name.to_owned() } else { place };
                        out.entry(channel).or_default().push(Piece {
                            event: i,
                            pointer: Some(pointer),
                            text: text.to_owned(),
                        });
                    },
                );
            }
            None => out.entry(String::new()).or_default().push(Piece {
                event: i,
                pointer: None,
                text: events[i].data.clone(),
            }),
        }
    }
    out
}

/// Call `f` on every string of `v`, object keys excluded.
fn visit_strings(v: &Value, f: &mut dyn FnMut(&str)) {
    match v {
        Value::String(s) => f(s),
        Value::Array(a) => a.iter().for_each(|x| visit_strings(x, f)),
        Value::Object(o) => o.values().for_each(|x| visit_strings(x, f)),
        _ => {}
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

/// Call `f(pointer, place, name, text)` for every string leaf of `v`: its JSON pointer, its
/// place (the pointer with each array position replaced by the element's `index` field when
/// it has one, as providers number choices, tool calls and content blocks), and the name of
/// the field holding it. Anthropic's `content_block` (a block's start) and `delta` (its
/// increments) are one place, as clients join them.
fn leaves(
    v: &Value,
    pointer: &mut String,
    place: &mut String,
    f: &mut dyn FnMut(String, String, &str, &str),
) {
    leaf_walk(v, pointer, place, "", f);
}

fn leaf_walk(
    v: &Value,
    pointer: &mut String,
    place: &mut String,
    name: &str,
    f: &mut dyn FnMut(String, String, &str, &str),
) {
    match v {
        Value::String(s) => f(pointer.clone(), place.clone(), name, s),
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                let (len, plen) = (pointer.len(), place.len());
                pointer.push('/');
                pointer.push_str(&i.to_string());
                match x.get("index").and_then(Value::as_u64) {
                    Some(n) => place.push_str(&format!("/#{n}")),
                    None => place.push_str(&format!("/{i}")),
                }
                leaf_walk(x, pointer, place, name, f);
                pointer.truncate(len);
                place.truncate(plen);
            }
        }
        Value::Object(o) => {
            for (k, x) in o {
                let (len, plen) = (pointer.len(), place.len());
                let escaped = k.replace('~', "~0").replace('/', "~1");
                pointer.push('/');
                pointer.push_str(&escaped);
                place.push('/');
                place.push_str(if k == "content_block" {
                    "delta"
                } else {
                    &escaped
                });
                leaf_walk(x, pointer, place, k, f);
                pointer.truncate(len);
                place.truncate(plen);
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

    /// The literal-guided search finds exactly what the plain pattern finds, on texts built to
    /// put literals next to, inside and across matches.
    #[test]
    fn literal_guided_search_finds_what_the_pattern_finds() {
        let pieces = [
            "sk-",
            "sk-ant-",
            "Bearer ",
            "bearer\t",
            "AKIA",
            "ASIA",
            "gh",
            "ghp_",
            "github_pat_",
            "xox",
            "xoxb-",
            "AIza",
            "-----BEGIN ",
            "RSA ",
            "PRIVATE KEY-----",
            "0123456789",
            "ABCDEFGHIJ",
            "abcdefghij",
            "_-",
            " ",
            "é",
            "\n",
            "=",
            "x",
        ];
        // A deterministic walk over the pieces (a linear congruential sequence).
        let mut state: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            usize::try_from(state >> 33).unwrap_or(0)
        };
        let mut texts: Vec<String> = vec![
            format!("key {CANARY} and Bearer abcdefghij0123456789 and AKIAABCDEFGHIJ0123456"),
            "sk-sk-ant-abcdefgh0123456789".to_owned(),
            "ghghp_abcdefghij0123456789abcd".to_owned(),
        ];
        for _ in 0..2000 {
            let len = next() % 24;
            texts.push((0..len).map(|_| pieces[next() % pieces.len()]).collect());
        }
        let mut matched = 0;
        for (shape, (_, _, p)) in patterns().iter().zip(PATTERNS) {
            let plain = Regex::new(p).expect("a pattern");
            for t in &texts {
                let want: Vec<Range<usize>> = plain.find_iter(t).map(|m| m.range()).collect();
                matched += want.len();
                assert_eq!(shape.find_iter(t), want, "{} in {t:?}", shape.kind);
            }
        }
        assert!(
            matched > 100,
            "the texts hold too few secrets to compare ({matched})"
        );
    }

    #[test]
    fn a_secret_inside_its_own_literal_is_found() {
        // "xox" occurs at 0 and, overlapping, at 2: the token starts at the second.
        let s = Scrubber::new([]);
        assert_eq!(s.scrub("xoxoxb-1234567890ab"), "xo[REDACTED]");
        assert_eq!(s.scrub("ghghp_abcdefghij0123456789abcd"), "gh[REDACTED]");
    }

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

    fn key_scrubber() -> Scrubber {
        Scrubber::new(["CANARYKEY0123456789zz".to_owned()])
    }

    fn data(v: Value) -> TimedEvent {
        TimedEvent {
            t_ms: 0,
            event: None,
            data: v.to_string(),
        }
    }

    /// Assemble an OpenAI stream's tool-call arguments and text as the provider reader does.
    fn assembled(events: &[TimedEvent], provider: crate::provider::Provider) -> String {
        let wire: Vec<crate::provider::SseEvent> = events
            .iter()
            .map(|e| crate::provider::SseEvent {
                event: e.event.clone(),
                data: e.data.clone(),
            })
            .collect();
        let r = provider.parse_stream(&wire).expect("the stream reads");
        let r = crate::llm::stream::assemble(&r.stream).expect("the stream assembles");
        let mut all = r.text.clone().unwrap_or_default();
        for c in &r.tool_calls {
            all.push_str(c.arguments.text());
        }
        all
    }

    #[test]
    fn a_key_split_across_interleaved_tool_calls_is_redacted_as_clients_assemble_it() {
        let mut events = vec![
            data(json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": 0, "id": "a", "function": {"name": "exec", "arguments": "{\"command\": \"CANARYKEY0"}}
            ]}}]})),
            data(json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": 1, "id": "b", "function": {"name": "exec", "arguments": "{}"}},
                {"index": 0, "function": {"arguments": "123456789zz\"}"}}
            ]}}]})),
            data(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})),
        ];
        let before = assembled(&events, crate::provider::Provider::Openai);
        assert!(before.contains("CANARYKEY0123456789zz"), "{before}");
        key_scrubber().scrub_events(&mut events);
        let after = assembled(&events, crate::provider::Provider::Openai);
        assert!(
            !after.contains("123456789zz") && after.contains(REDACTED),
            "{after}"
        );
        let all: String = events.iter().map(|e| e.data.as_str()).collect();
        assert!(!all.contains("123456789zz"), "{all}");
    }

    #[test]
    fn anthropic_blocks_interleaved_and_text_across_blocks_are_assembled() {
        let ev = |name: &str, v: Value| TimedEvent {
            t_ms: 0,
            event: Some(name.to_owned()),
            data: v.to_string(),
        };
        let delta = |i: u64, d: Value| {
            ev(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": i, "delta": d}),
            )
        };
        let mut events = vec![
            ev(
                "message_start",
                json!({"type": "message_start", "message": {"id": "m", "usage": {"input_tokens": 1, "output_tokens": 1}}}),
            ),
            ev(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "key: CANARY"}}),
            ),
            ev(
                "content_block_start",
                json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "t", "name": "exec", "input": {}}}),
            ),
            delta(
                1,
                json!({"type": "input_json_delta", "partial_json": "{\"c\": \"CANARYKEY01"}),
            ),
            delta(0, json!({"type": "text_delta", "text": "KEY0123"})),
            delta(
                1,
                json!({"type": "input_json_delta", "partial_json": "23456789zz\"}"}),
            ),
            ev(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 1}),
            ),
            delta(0, json!({"type": "text_delta", "text": "456789zz"})),
            ev(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 0}),
            ),
            ev(
                "content_block_start",
                json!({"type": "content_block_start", "index": 2, "content_block": {"type": "text", "text": ""}}),
            ),
            ev(
                "message_delta",
                json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 3}}),
            ),
            ev("message_stop", json!({"type": "message_stop"})),
        ];
        let provider = crate::provider::Provider::Anthropic;
        assert_eq!(
            assembled(&events, provider)
                .matches("CANARYKEY0123456789zz")
                .count(),
            2
        );
        key_scrubber().scrub_events(&mut events);
        let after = assembled(&events, provider);
        assert!(
            !after.contains("6789zz") && !after.contains("CANARY"),
            "{after}"
        );
    }

    #[test]
    fn a_key_spelled_with_json_escapes_in_arguments_is_found_decoded() {
        // `\u0030` is `0`: the raw text never shows the key, the parsed arguments do.
        let args = "{\"command\": \"CANARYKEY\\u0030123456789zz\"}";
        let mut events = vec![
            data(
                json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "a", "function": {"name": "exec", "arguments": &args[..20]}}]}}]}),
            ),
            data(
                json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": &args[20..]}}]}}]}),
            ),
            data(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})),
        ];
        let s = key_scrubber();
        assert_eq!(s.find_in_events(&events).len(), 1);
        s.scrub_events(&mut events);
        let r = crate::provider::Provider::Openai
            .parse_stream(
                &events
                    .iter()
                    .map(|e| crate::provider::SseEvent {
                        event: None,
                        data: e.data.clone(),
                    })
                    .collect::<Vec<_>>(),
            )
            .unwrap();
        let r = crate::llm::stream::assemble(&r.stream).unwrap();
        let parsed: Value = serde_json::from_str(r.tool_calls[0].arguments.text()).unwrap();
        assert_eq!(parsed, json!({"command": REDACTED}));
        let mut body = json!({"arguments": args});
        s.scrub_value(&mut body);
        assert_eq!(body, json!({"arguments": "{\"command\":\"[REDACTED]\"}"}));
    }

    #[test]
    fn a_key_with_surrounding_whitespace_is_scrubbed_as_sent_and_as_echoed() {
        let s = Scrubber::new(["  padded-secret-0123 \n".to_owned()]);
        assert_eq!(s.scrub("echo: padded-secret-0123."), "echo: [REDACTED].");
        assert_eq!(s.scrub("raw:  padded-secret-0123 \n"), "raw:[REDACTED]");
    }
}
