//! Scalar values for a schema's parts: numbers within their bounds and multiples, strings of
//! a format, a pattern and a length; and the count keywords as schemas write them.

use super::{MAX_STRING, WORDS, bound_i64, pattern};
use crate::json::Lookup;
use serde_json::{Value, json};

pub(super) fn integer(parts: &[&Value], seed: u64) -> Value {
    let mut min = bound_i64(parts, "minimum", i64::max);
    // The first integer above an exclusive minimum (below an exclusive maximum), fractional
    // bounds included.
    let exclusive = |key: &str, above: bool| {
        parts
            .iter()
            .filter_map(|p| p.at(key).as_f64())
            .map(|e| {
                let step = if above {
                    e.floor() + 1.0
                } else {
                    e.ceil() - 1.0
                };
                // Saturates at the ends of i64 (a float cast does).
                step as i64
            })
            .reduce(if above { i64::max } else { i64::min })
    };
    if let Some(e) = exclusive("exclusiveMinimum", true) {
        min = Some(min.map_or(e, |m| m.max(e)));
    }
    let mut max = bound_i64(parts, "maximum", i64::min);
    if let Some(e) = exclusive("exclusiveMaximum", false) {
        max = Some(max.map_or(e, |m| m.min(e)));
    }
    // Draft 4's boolean exclusive bounds.
    if parts.iter().any(|p| p.at("exclusiveMinimum") == true) {
        min = min.map(|m| m.saturating_add(1));
    }
    if parts.iter().any(|p| p.at("exclusiveMaximum") == true) {
        max = max.map(|m| m.saturating_sub(1));
    }
    let (min, max) = (min.unwrap_or(1), max.unwrap_or(i64::MAX));
    let step = i64::try_from(seed % 5).unwrap_or(0);
    let mut v = min.saturating_add(step).min(max).max(min.min(max));
    if let Some(m) = parts
        .iter()
        .filter_map(|p| p.at("multipleOf").as_i64())
        .find(|m| *m > 0)
    {
        let up = v.checked_rem(m).map_or(v, |r| {
            if r == 0 {
                v
            } else {
                v.saturating_add(m - r.rem_euclid(m))
            }
        });
        v = if up <= max {
            up
        } else {
            v.saturating_sub(v.rem_euclid(m))
        };
    }
    json!(v)
}

pub(super) fn number(parts: &[&Value]) -> Value {
    let min = parts
        .iter()
        .filter_map(|p| p.at("minimum").as_f64())
        .reduce(f64::max);
    let emin = parts
        .iter()
        .filter_map(|p| p.at("exclusiveMinimum").as_f64())
        .reduce(f64::max);
    let max = parts
        .iter()
        .filter_map(|p| p.at("maximum").as_f64())
        .reduce(f64::min);
    let emax = parts
        .iter()
        .filter_map(|p| p.at("exclusiveMaximum").as_f64())
        .reduce(f64::min);
    let mut v = min.unwrap_or(1.5);
    if let Some(e) = emin {
        if v <= e {
            v = e + 1.0;
        }
    }
    if let Some(m) = max {
        v = v.min(m);
    }
    if let Some(e) = emax {
        if v >= e {
            v = match emin.or(min) {
                Some(lo) => (lo + e) / 2.0,
                None => e - 1.0,
            };
        }
    }
    if let Some(m) = parts
        .iter()
        .filter_map(|p| p.at("multipleOf").as_f64())
        .find(|m| *m > 0.0)
    {
        v = multiple(v, m, max.or(emax));
    }
    json!(v)
}

/// The least multiple of `m` from `v` on that floating point divides back exactly (`3 * 0.1`
/// is `0.30000000000000004`, and `0.3 / 0.1` is not `3`: validators that divide reject both),
/// written with `m`'s decimals; the first multiple when none does below `max`.
fn multiple(v: f64, m: f64, max: Option<f64>) -> f64 {
    let decimals = {
        let text = m.to_string();
        text.split_once('.').map_or(0, |(_, d)| d.len()).min(15)
    };
    let scale = 10f64.powi(i32::try_from(decimals).unwrap_or(15));
    let first = (v / m).ceil();
    let at = |k: f64| (k * m * scale).round() / scale;
    (0..16)
        .map(|i| at(first + f64::from(i)))
        .take_while(|x| max.is_none_or(|hi| *x <= hi))
        .find(|x| (x / m).fract() == 0.0)
        .unwrap_or_else(|| at(first))
}

/// A string for the parts: a format's shape, else a word and a number, within the length
/// bounds (padded in one step); where a pattern is given, the first of a few candidates it
/// accepts, else one made from the pattern itself ([`pattern::matching`]).
pub(super) fn string(parts: &[&Value], seed: u64) -> String {
    let format = parts.iter().find_map(|p| p.at("format").as_str());
    // `WORD-N`: pushed in pieces, as every valid call of a portable scenario asks for one.
    let word = || {
        let w = WORDS[usize::try_from(seed % WORDS.len() as u64).unwrap_or(0)];
        let mut s = String::with_capacity(w.len() + 4);
        s.push_str(w);
        s.push('-');
        s.push_str(itoa::Buffer::new().format((seed >> 8) % 1000));
        s
    };
    let mut s = match format {
        Some("date") => "2026-03-14".to_owned(),
        Some("date-time") => "2026-03-14T09:30:00Z".to_owned(),
        // With its offset, as RFC 3339's `full-time` (what `format: time` checks) requires.
        Some("time") => "09:30:00Z".to_owned(),
        Some("email" | "idn-email") => "user@example.com".to_owned(),
        Some("uri" | "url" | "iri") => "https://example.com/".to_owned(),
        Some("uri-reference" | "iri-reference") => "/example".to_owned(),
        Some("uuid") => "00000000-0000-4000-8000-000000000000".to_owned(),
        Some("ipv4") => "192.0.2.1".to_owned(),
        Some("ipv6") => "2001:db8::1".to_owned(),
        Some("hostname" | "idn-hostname") => "example.com".to_owned(),
        Some("duration") => "PT1H".to_owned(),
        Some("json-pointer") => "/example".to_owned(),
        Some("relative-json-pointer") => "0".to_owned(),
        Some("uri-template") => "https://example.com/{id}".to_owned(),
        // A word and a number, so the calls of a long run rarely repeat one another.
        _ => word(),
    };
    let sources: Vec<&str> = parts
        .iter()
        .filter_map(|p| p.at("pattern").as_str())
        .collect();
    let patterns: Vec<regex_lite::Regex> = sources
        .iter()
        .filter_map(|p| regex_lite::Regex::new(p).ok())
        .collect();
    let min = parts
        .iter()
        .filter_map(|p| count(p.at("minLength")))
        .max()
        .map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX))
        .min(MAX_STRING);
    let fits = |c: &str| patterns.iter().all(|p| p.is_match(c));
    if !patterns.is_empty() {
        let candidates = [
            s.clone(),
            WORDS[usize::try_from(seed % WORDS.len() as u64).unwrap_or(0)].to_owned(),
            "a".to_owned(),
            "A".to_owned(),
            "0".to_owned(),
            "abc".to_owned(),
            "ABC".to_owned(),
            "123".to_owned(),
            "a1".to_owned(),
            "abc-123".to_owned(),
            "abc_123".to_owned(),
            "user@example.com".to_owned(),
            "https://example.com/".to_owned(),
            "2026-03-14".to_owned(),
            String::new(),
        ];
        let found = candidates
            .into_iter()
            .find(|c| fits(c) && c.chars().count() >= min);
        // Else a string made from a pattern itself, long enough for `minLength` (padding
        // after it would break the pattern), that every pattern accepts.
        match found.or_else(|| {
            sources
                .iter()
                .filter_map(|p| pattern::matching(p, min))
                .find(|c| fits(c))
        }) {
            Some(c) => s = c,
            None => {
                if let Some(c) = candidates_fitting(&patterns, &s) {
                    s = c;
                }
            }
        }
    }
    let max = parts
        .iter()
        .filter_map(|p| count(p.at("maxLength")))
        .min()
        .map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
    let count = s.chars().count();
    if count < min {
        s.extend(std::iter::repeat_n('x', min - count));
    } else if count > max {
        s = s.chars().take(max).collect();
    }
    s
}

/// A count keyword's value (`minItems`, `maxLength`, …): a number, or — as the Gemini API's
/// OpenAPI schemas type them (int64) — a string of digits.
pub(super) fn count(v: &Value) -> Option<u64> {
    v.as_u64()
        .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
}

/// The plainest candidate every pattern accepts, whatever its length (`s` when it does).
fn candidates_fitting(patterns: &[regex_lite::Regex], s: &str) -> Option<String> {
    [
        s, "a", "A", "0", "abc", "ABC", "123", "a1", "abc-123", "abc_123", "",
    ]
    .into_iter()
    .find(|c| patterns.iter().all(|p| p.is_match(c)))
    .map(str::to_owned)
}
