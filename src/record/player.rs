//! The cassette player: a [`Model`] that answers each engine request with the next recorded
//! exchange, after checking strictly that the engine asks what was recorded. The request is
//! rendered to the provider's wire JSON exactly as the live model renders it, scrubbed the same
//! way, and compared in the canonical form of [`crate::provider::matching`] (key order, the
//! volatile fields and the harmless differences ignored); a miss stops the run and explains
//! itself: the nearest recorded request and a diff of what changed.

use super::cassette::{Cassette, Exchange};
use super::live::{answer, scrub_exchange, stop};
use super::scrub::{REDACTED, Scrubber};
use crate::llm::{Model, ModelError, ModelRequest, ModelResponse};
use crate::provider::WireOptions;
use crate::provider::matching::Matching;
use serde_json::Value;

/// Replays a cassette.
pub struct Player<'a> {
    cassette: &'a Cassette,
    options: WireOptions,
    scrubber: Scrubber,
    matching: Matching,
    next: usize,
    /// Why the run stopped: the request that did not match.
    pub miss: Option<String>,
}

impl<'a> Player<'a> {
    /// A player at the cassette's first exchange, comparing requests as `matching` says (and
    /// leaving out the cassette's own `replay.ignore` paths).
    pub fn new(cassette: &'a Cassette, scrubber: Scrubber, matching: &Matching) -> Self {
        let matching = matching.ignoring(&cassette.replay.ignore);
        Self {
            cassette,
            options: WireOptions {
                model: cassette.model.clone(),
                stream: cassette.stream,
                max_tokens: cassette.max_tokens,
            },
            scrubber,
            matching,
            next: 0,
            miss: None,
        }
    }

    /// Exchanges replayed so far.
    pub fn used(&self) -> usize {
        self.next
    }

    /// The request as the cassette would store it.
    pub fn wire_request(&self, request: &ModelRequest<'_>) -> Value {
        let mut ex = Exchange::unanswered(
            self.cassette
                .provider
                .render_request(request, &self.options),
        );
        scrub_exchange(&self.scrubber, &mut ex);
        ex.request
    }

    /// Does the next recorded exchange match this wire request?
    pub fn matches_next(&self, wire: &Value) -> bool {
        self.cassette
            .exchanges
            .get(self.next)
            .is_some_and(|ex| same(&self.strip(&ex.request), &self.strip(wire)))
    }

    fn strip(&self, v: &Value) -> Value {
        self.matching.canonical(v)
    }

    /// Answer with the next exchange (the caller checked the match).
    pub fn answer_next(&mut self, request: &ModelRequest<'_>) -> Result<ModelResponse, ModelError> {
        let ex = &self.cassette.exchanges[self.next];
        self.next += 1;
        let latency = self.cassette.replay.latency(ex.elapsed_ms);
        let outcome = ex.outcome(self.cassette.provider, latency);
        if let super::cassette::Outcome::Fatal(m) = &outcome {
            self.miss = Some(format!(
                "model call {} to get an answer, but recorded exchange {} is a refusal no loop answers ({m})",
                request.call, self.next
            ));
        }
        answer(outcome, request)
    }

    /// Explain a miss: which call, the nearest recorded request, and the diff.
    pub fn explain(&self, request: &ModelRequest<'_>, wire: &Value) -> String {
        let actual = self.strip(wire);
        let total = self.cassette.exchanges.len();
        let nearest = self
            .cassette
            .exchanges
            .iter()
            .enumerate()
            .map(|(i, ex)| {
                let recorded = self.strip(&ex.request);
                let changed = changed_lines(&recorded, &actual);
                // Prefer the expected position on ties.
                (changed, i != self.next, i, recorded)
            })
            .min_by_key(|(changed, off, i, _)| (*changed, *off, *i));
        let head = match self.cassette.exchanges.get(self.next) {
            Some(_) => format!(
                "model call {} to send the request recorded as exchange {} of {total}, but it differs",
                request.call,
                self.next + 1
            ),
            None => format!(
                "no model call {}: the cassette holds {total} exchanges, all used",
                request.call
            ),
        };
        let Some((_, _, i, recorded)) = nearest else {
            return format!("{head}\n  hint: re-record with `harness record --record-mode all`");
        };
        let at = first_difference(&recorded, &actual, String::new())
            .map(|p| {
                format!(
                    " (first difference at `{}`)",
                    if p.is_empty() { "/" } else { &p }
                )
            })
            .unwrap_or_default();
        let a = pretty(&recorded);
        let b = pretty(&actual);
        let diff = similar::TextDiff::from_lines(&a, &b)
            .unified_diff()
            .context_radius(3)
            .header(&format!("recorded exchange {}", i + 1), "this run")
            .to_string();
        let diff = self.scrubber.scrub(&diff);
        format!(
            "{head}; nearest recorded request: exchange {}{at}\n{diff}hint: if the change is intended, re-record with `harness record --record-mode all`; to ignore a volatile field, list it under `replay.ignore` in the cassette",
            i + 1
        )
    }
}

impl Model for Player<'_> {
    fn respond(&mut self, request: &ModelRequest<'_>) -> Result<ModelResponse, ModelError> {
        if self.miss.is_some() {
            return Err(stop(request));
        }
        let wire = self.wire_request(request);
        if !self.matches_next(&wire) {
            self.miss = Some(self.explain(request, &wire));
            return Err(stop(request));
        }
        self.answer_next(request)
    }
}

/// JSON equality where a recorded string holding [`REDACTED`] matches any text in its place: a
/// request that carried a secret the replaying machine does not know still matches. The other
/// way too: a secret the replay scrubbed matches what the recording held there.
pub fn same(recorded: &Value, actual: &Value) -> bool {
    match (recorded, actual) {
        (Value::String(r), Value::String(a)) if r.contains(REDACTED) => glob(r, a),
        (Value::String(r), Value::String(a)) if a.contains(REDACTED) => glob(a, r),
        (Value::Array(r), Value::Array(a)) => {
            r.len() == a.len() && r.iter().zip(a).all(|(x, y)| same(x, y))
        }
        (Value::Object(r), Value::Object(a)) => {
            r.len() == a.len() && r.iter().all(|(k, x)| a.get(k).is_some_and(|y| same(x, y)))
        }
        _ => recorded == actual,
    }
}

/// Does `text` match `pattern`, where each [`REDACTED`] stands for a secret: one or more
/// characters, none of them whitespace (a key is one word; the words around it are the text's,
/// so a recorded `key [REDACTED]` does not match `key abc, and more`)?
fn glob(pattern: &str, text: &str) -> bool {
    let secret = |s: &str| !s.is_empty() && !s.chars().any(char::is_whitespace);
    let parts: Vec<&str> = pattern.split(REDACTED).collect();
    let (first, rest) = parts.split_first().unwrap_or((&"", &[]));
    let Some(mut tail) = text.strip_prefix(first) else {
        return false;
    };
    for (i, part) in rest.iter().enumerate() {
        if i + 1 == rest.len() {
            return tail.strip_suffix(part).is_some_and(secret);
        }
        // The secret ends where the next part first follows it: a later place would take that
        // part's own text into the secret, which the next secret could have taken as well.
        let one = tail.chars().next().map_or(1, char::len_utf8);
        match tail.get(one..).and_then(|t| t.find(part)) {
            Some(at) if secret(&tail[..one + at]) => tail = &tail[one + at + part.len()..],
            _ => return false,
        }
    }
    tail.is_empty()
}

pub fn pretty(v: &Value) -> String {
    let mut s = serde_json::to_string_pretty(v).unwrap_or_default();
    s.push('\n');
    s
}

pub fn changed_lines(a: &Value, b: &Value) -> usize {
    let (a, b) = (pretty(a), pretty(b));
    similar::TextDiff::from_lines(&a, &b)
        .iter_all_changes()
        .filter(|c| c.tag() != similar::ChangeTag::Equal)
        .count()
}

/// The JSON path of the first difference (depth first), if any.
pub fn first_difference(a: &Value, b: &Value, path: String) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, v) in x {
                let p = format!("{path}/{k}");
                match y.get(k) {
                    Some(w) => {
                        if let Some(d) = first_difference(v, w, p) {
                            return Some(d);
                        }
                    }
                    None => return Some(p),
                }
            }
            y.keys()
                .find(|k| !x.contains_key(*k))
                .map(|k| format!("{path}/{k}"))
        }
        (Value::Array(x), Value::Array(y)) => {
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                if let Some(d) = first_difference(v, w, format!("{path}/{i}")) {
                    return Some(d);
                }
            }
            (x.len() != y.len()).then(|| format!("{path}/{}", x.len().min(y.len())))
        }
        _ => (a != b).then_some(path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ignore_paths_and_first_difference() {
        let v = json!({"messages": [{"id": 1, "c": "a"}, {"id": 2, "c": "b"}], "user": "u"});
        let m = Matching::new(&[], &["messages/*/id".to_owned()]);
        assert_eq!(
            m.canonical(&v),
            json!({"messages": [{"c": "a"}, {"c": "b"}]})
        );
        let a = json!({"messages": [{"content": "x"}], "model": "m"});
        let b = json!({"messages": [{"content": "y"}], "model": "m"});
        assert_eq!(
            first_difference(&a, &b, String::new()).as_deref(),
            Some("/messages/0/content")
        );
        assert_eq!(first_difference(&a, &a, String::new()), None);
    }

    #[test]
    fn redacted_text_matches_any_secret() {
        assert!(glob("key [REDACTED] here", "key abc123 here"));
        assert!(!glob("key [REDACTED] here", "key  here"));
        assert!(!glob("key [REDACTED] here", "key abc there"));
        assert!(glob("[REDACTED]", "x"));
        assert!(glob("a[REDACTED]b[REDACTED]", "a1b2"));
        assert!(!glob("plain", "plain!"));
        // A secret is one word: the text after it is not.
        assert!(!glob("the key [REDACTED]", "the key abc (read again)"));
        assert!(glob("t [REDACTED], u [REDACTED]", "t k1, u k2"));
        assert!(!glob("t [REDACTED], u [REDACTED]", "t k1, u k2 and more"));
        assert!(glob("[REDACTED]x", "éx"));
        assert!(glob("key [REDACTED]", "key [REDACTED]"));
        assert!(same(
            &json!({"m": ["say [REDACTED]"]}),
            &json!({"m": ["say sk-1"]})
        ));
        assert!(!same(
            &json!({"m": ["say [REDACTED]"]}),
            &json!({"m": ["say"]})
        ));
    }
}
