//! One model call, one call: spans that describe the same model call are read as one.
//!
//! Teams run a framework's instrumentation and a provider SDK's together (or the SDK traces
//! itself, as the anthropic SDK 2.x does once a tracer provider is set), and each makes a span
//! for the same request. Two inference spans are the same call when
//! - one is the only inference span inside the other (a framework's LLM span around the
//!   client's; an outer span with several inside — a call and its retries — is not one call,
//!   and gives way to them as before), or
//! - a zero-length record of an answer (Logfire's `log` span after a stream) follows, under the
//!   same parent and from the same scope, a span that recorded no answer: the answer of that
//!   call;
//! - they come from different instrumentation scopes, neither is inside the other (siblings, or
//!   one a root of a trace of its own when the framework does not pass its context on), their
//!   times overlap by at least half of the shorter, and nothing they both show differs (the
//!   response id, the model, the last input message); spans of two traces must moreover show
//!   the same response id or the same last input message (or, one within the other's time,
//!   both have failed or answered with as many tokens). Each span is paired at most once,
//!   the largest overlaps first.
//!
//! The pair becomes one span: in the place of the one that sits in the agent's trace (inside
//! the other, or in the larger trace), with the attributes of the one that recorded content and
//! whatever the other adds (token counts the framework left out, the response id). The file's
//! warnings count the calls merged, by the scopes that traced them twice.

use super::*;

/// The attribute keys (or key prefixes) that carry a call's messages.
const CONTENT: [&str; 9] = [
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "llm.input_messages.",
    "llm.output_messages.",
    "gen_ai.prompt.",
    "gen_ai.completion.",
    "ai.prompt.messages",
    "ai.response.text",
    "ai.response.toolCalls",
];

/// Does the span record a call's messages (attributes or span events)?
pub(super) fn has_content(s: &Span) -> bool {
    s.attrs
        .keys()
        .any(|k| CONTENT.iter().any(|c| k.starts_with(c)))
        || s.events.iter().any(|e| e.name.starts_with("gen_ai."))
}

/// The response id a span shows, if any.
fn response_id(s: &Span) -> Option<String> {
    for k in ["gen_ai.response.id", "ai.response.id", "llm.response.id"] {
        if let Some(id) = non_empty(s.attrs.get(k)) {
            return Some(id.to_owned());
        }
    }
    let text = s.str("output.value")?;
    if !text.contains("\"id\"") {
        return None;
    }
    let doc: Value = serde_json::from_str(text).ok()?;
    // The provider's answer (`id`), or a framework's record of it: LangChain's
    // `response_metadata.id`, wherever its generation nests it.
    fn metadata_id(v: &Value, depth: usize) -> Option<&str> {
        if depth > 8 {
            return None;
        }
        match v {
            Value::Object(o) => o
                .get("response_metadata")
                .and_then(|m| non_empty(m.get("id")))
                .or_else(|| o.values().find_map(|x| metadata_id(x, depth + 1))),
            Value::Array(a) => a.iter().find_map(|x| metadata_id(x, depth + 1)),
            _ => None,
        }
    }
    metadata_id(&doc, 0)
        .or_else(|| non_empty(doc.get("id")))
        .filter(|id| !id.starts_with("__fake"))
        .map(str::to_owned)
}

/// The last input message a span shows, trimmed.
fn last_message(s: &Span) -> Option<String> {
    let none = HashMap::new();
    messages::exchange(s, &none)
        .ok()
        .and_then(|ex| ex.input.last().map(|m| m.text.trim().to_owned()))
}

/// Do two spans end their input with the same message, as far as both show one?
fn same_last_message(a: &Span, b: &Span) -> bool {
    match (last_message(a), last_message(b)) {
        (Some(x), Some(y)) => x == y,
        _ => true,
    }
}

/// Do both spans show the same response id, or the same (non-empty) last input message, or,
/// one within the other's time, did both fail (a refused request has no answer to compare) or
/// answer with the same number of tokens?
fn positively_same(a: &Span, b: &Span) -> bool {
    if let (Some(x), Some(y)) = (response_id(a), response_id(b)) {
        return x == y;
    }
    if matches!((last_message(a), last_message(b)), (Some(x), Some(y)) if !x.is_empty() && x == y) {
        return true;
    }
    let within = |x: &Span, y: &Span| x.start >= y.start && x.end <= y.end;
    if !(within(a, b) || within(b, a)) {
        return false;
    }
    // One within the other's time, and both failed, or both answered with as many tokens.
    (a.error.is_some() && b.error.is_some())
        || matches!((a.output_tokens(), b.output_tokens()), (Some(x), Some(y)) if x == y)
}

/// A span's token counts, when it records both.
fn tokens(s: &Span) -> Option<(u64, u64)> {
    Some((s.input_tokens()?, s.output_tokens()?))
}

/// Do two spans' models name the same model (one may carry a version suffix:
/// `gpt-4o-mini-2024-07-18`, `claude-haiku-4-5-20251001`)?
fn same_model(a: &Span, b: &Span) -> bool {
    // A date or version suffix: digits and dashes only, four digits at least.
    let dated = |long: &str, short: &str| {
        long.strip_prefix(short).is_some_and(|rest| {
            rest.is_empty()
                || rest.strip_prefix('-').is_some_and(|d| {
                    d.bytes().all(|c| c.is_ascii_digit() || c == b'-')
                        && d.bytes().filter(u8::is_ascii_digit).count() >= 4
                })
        })
    };
    match (a.model(), b.model()) {
        (Some(x), Some(y)) => dated(x, y) || dated(y, x),
        _ => true,
    }
}

/// Spans that describe one model call, merged; and the warnings that say so.
pub(super) fn merge_duplicates(mut spans: Vec<Span>) -> (Vec<Span>, Vec<String>) {
    let inference: Vec<usize> = (0..spans.len())
        .filter(|&i| spans[i].is_inference())
        .collect();
    if inference.len() < 2 {
        return (spans, Vec::new());
    }
    let index: HashMap<(&str, &str), usize> = spans
        .iter()
        .enumerate()
        .map(|(i, s)| ((s.trace.as_str(), s.id.as_str()), i))
        .collect();
    // Each inference span's nearest inference ancestor (a walk bounded by the span count, so
    // a cycle of parent ids ends it).
    let parent = |i: usize| -> Option<usize> {
        let s = &spans[i];
        (!s.parent.is_empty() && s.parent != s.id)
            .then(|| index.get(&(s.trace.as_str(), s.parent.as_str())).copied())
            .flatten()
    };
    let ancestor = |i: usize| -> Option<usize> {
        let mut at = i;
        for _ in 0..spans.len() {
            at = parent(at)?;
            if spans[at].is_inference() {
                return Some(at);
            }
        }
        None
    };
    let mut inner: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    let mut has_ancestor = HashSet::new();
    for &i in &inference {
        if let Some(a) = ancestor(i) {
            inner.entry(a).or_default().push(i);
            has_ancestor.insert(i);
        }
    }
    let mut used = HashSet::new();
    // (placed, other): the pair's span takes `placed`'s place.
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    for (outer, list) in &inner {
        if let [one] = list.as_slice() {
            if used.insert(*outer) && used.insert(*one) {
                pairs.push((*one, *outer));
            }
        }
    }
    // A zero-length record of an answer right after a span of the same call that recorded none
    // (Logfire streams: the request's span, then a `log` span with the response): one call.
    let answered = |s: &Span| {
        s.attrs.keys().any(|k| {
            k == "gen_ai.output.messages"
                || k.starts_with("llm.output_messages.")
                || k.starts_with("gen_ai.completion.")
                || k.starts_with("ai.response.")
        })
    };
    let mut requests: HashMap<(&str, &str, &str), usize> = HashMap::new();
    let mut by_start: Vec<usize> = inference.clone();
    by_start.sort_by_key(|&i| (spans[i].start, spans[i].ordinal));
    for &i in &by_start {
        let s = &spans[i];
        let key = (s.trace.as_str(), s.parent.as_str(), s.scope.as_str());
        if s.start == s.end && answered(s) {
            if let Some(r) = requests.remove(&key) {
                if spans[r].end <= s.start && !used.contains(&r) && !used.contains(&i) {
                    used.insert(r);
                    used.insert(i);
                    pairs.push((r, i));
                }
            }
        } else if !answered(s) && s.error.is_none() {
            requests.insert(key, i);
        } else {
            requests.remove(&key);
        }
    }
    // Overlapping spans of other scopes, neither inside the other.
    let mut free: Vec<usize> = inference
        .iter()
        .copied()
        .filter(|i| !used.contains(i) && !inner.contains_key(i) && !has_ancestor.contains(i))
        .collect();
    free.sort_by_key(|&i| (spans[i].start, spans[i].ordinal));
    let trace_size = {
        let mut n: HashMap<&str, usize> = HashMap::new();
        for s in &spans {
            *n.entry(s.trace.as_str()).or_insert(0) += 1;
        }
        n
    };
    // Traces that hold one model call and no tool call: a provider span the framework did not
    // pass its context to.
    let lonely: HashSet<&str> = {
        let mut n: HashMap<&str, usize> = HashMap::new();
        for s in spans.iter().filter(|s| s.is_inference() || s.is_tool()) {
            *n.entry(s.trace.as_str()).or_insert(0) += 1;
        }
        n.into_iter()
            .filter(|(_, c)| *c == 1)
            .map(|(t, _)| t)
            .collect()
    };
    let mut candidates: Vec<(u64, u64, usize, usize)> = Vec::new();
    for (x, &i) in free.iter().enumerate() {
        let a = &spans[i];
        for &j in &free[x + 1..] {
            let b = &spans[j];
            if b.start > a.end {
                break;
            }
            if a.scope == b.scope || !same_model(a, b) {
                continue;
            }
            // In one trace, or one of them alone in its own; of one conversation.
            if a.trace != b.trace
                && !lonely.contains(a.trace.as_str())
                && !lonely.contains(b.trace.as_str())
            {
                continue;
            }
            if let (Some(x), Some(y)) = (a.conversation(), b.conversation()) {
                if x != y {
                    continue;
                }
            }
            if !same_last_message(a, b) {
                continue;
            }
            // Spans of two traces are one call only on evidence: the same response id, or the
            // same last input message, both shown (two services' calls overlap in time too).
            if a.trace != b.trace && !positively_same(a, b) {
                continue;
            }
            let overlap = a.end.min(b.end).saturating_sub(a.start.max(b.start));
            let shorter = (a.end - a.start).min(b.end - b.start);
            if overlap.saturating_mul(2) < shorter || (shorter == 0 && a.start != b.start) {
                continue;
            }
            if let (Some(x), Some(y)) = (response_id(a), response_id(b)) {
                if x != y {
                    continue;
                }
            }
            // Largest overlap first: as a share of the shorter span (per mille), then the
            // absolute overlap.
            let share = overlap
                .saturating_mul(1000)
                .checked_div(shorter)
                .unwrap_or(1000);
            candidates.push((share, overlap, i, j));
        }
    }
    candidates.sort_by(|p, q| {
        q.0.cmp(&p.0)
            .then(q.1.cmp(&p.1))
            .then((p.2, p.3).cmp(&(q.2, q.3)))
    });
    for (_, _, i, j) in candidates {
        if used.contains(&i) || used.contains(&j) {
            continue;
        }
        used.insert(i);
        used.insert(j);
        let size = |k: usize| {
            trace_size
                .get(spans[k].trace.as_str())
                .copied()
                .unwrap_or(0)
        };
        // The one in the larger trace keeps its place (the agent's), the earlier on a tie.
        if size(j) > size(i) {
            pairs.push((j, i));
        } else {
            pairs.push((i, j));
        }
    }
    if pairs.is_empty() {
        return (spans, Vec::new());
    }
    let mut by_scopes: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut dropped = HashSet::new();
    let mut disagree = 0usize;
    let mut taken_from_other = 0usize;
    for (placed, other) in pairs {
        let mut scopes = [spans[placed].scope.clone(), spans[other].scope.clone()];
        scopes.sort();
        let [x, y] = scopes;
        *by_scopes.entry((x, y)).or_insert(0) += 1;
        // The content-bearing span's attributes first; the other fills what it lacks.
        let (first, second) = if !has_content(&spans[placed]) && has_content(&spans[other]) {
            (other, placed)
        } else {
            (placed, other)
        };
        let mut attrs = spans[first].attrs.clone();
        for (k, v) in &spans[second].attrs {
            attrs.entry(k.clone()).or_insert_with(|| v.clone());
        }
        // Counts an instrumentation is known to write otherwise than the provider's give way
        // to the other span's.
        let mut counts_scope = spans[first].counts_scope.clone();
        let (a, b) = (tokens(&spans[first]), tokens(&spans[second]));
        let doubted =
            spans[first].counts_doubt().is_some() && spans[second].counts_doubt().is_none();
        if let (Some(x), Some(y)) = (a, b) {
            if x != y {
                if doubted {
                    taken_from_other += 1;
                } else {
                    disagree += 1;
                }
            }
        }
        if doubted && b.is_some() {
            for k in INPUT_TOKEN_KEYS.iter().chain(OUTPUT_TOKEN_KEYS.iter()) {
                attrs.remove(*k);
                if let Some(v) = spans[second].attrs.get(*k) {
                    attrs.insert((*k).to_owned(), v.clone());
                }
            }
            counts_scope = Some(spans[second].scope.clone());
        }
        let events = if first == placed {
            std::mem::take(&mut spans[placed].events)
        } else {
            std::mem::take(&mut spans[other].events)
        };
        let error = spans[placed]
            .error
            .clone()
            .or_else(|| spans[other].error.clone());
        let s = &mut spans[placed];
        s.attrs = attrs;
        s.events = events;
        s.error = error;
        s.counts_scope = counts_scope;
        dropped.insert(other);
    }
    // Spans inside a dropped one now hang from the span it merged into (same trace) or from
    // nothing.
    let mut out = Vec::with_capacity(spans.len() - dropped.len());
    let gone: HashMap<(String, String), String> = dropped
        .iter()
        .map(|&d| {
            let s = &spans[d];
            ((s.trace.clone(), s.id.clone()), s.parent.clone())
        })
        .collect();
    for (i, mut s) in spans.into_iter().enumerate() {
        if dropped.contains(&i) {
            continue;
        }
        let mut hops = 0;
        while let Some(up) = gone.get(&(s.trace.clone(), s.parent.clone())) {
            s.parent = up.clone();
            hops += 1;
            if hops > gone.len() {
                break;
            }
        }
        out.push(s);
    }
    let merged: Vec<String> = by_scopes
        .into_iter()
        .map(|((x, y), n)| {
            let name = |s: &str| {
                if s.is_empty() {
                    "an unnamed scope".to_owned()
                } else {
                    format!("`{s}`")
                }
            };
            if x == y {
                format!("{n} by two spans of {}", name(&x))
            } else {
                format!("{n} by {} and {}", name(&x), name(&y))
            }
        })
        .collect();
    let warning = format!(
        "model calls traced twice, each read as one call (the content of the span that recorded it, the counts either adds): {}",
        merged.join("; ")
    );
    let mut warnings = vec![warning];
    if disagree > 0 {
        warnings.push(format!(
            "{disagree} merged call(s) whose two spans record other token counts: the counts of the span that recorded the content are kept"
        ));
    }
    if taken_from_other > 0 {
        warnings.push(format!(
            "{taken_from_other} merged call(s) whose two spans record other token counts, one by an instrumentation known to miscount (see docs/production-traces.md): the other span's counts are kept"
        ));
    }
    (out, warnings)
}
