//! When a request an agent sends is "the same" as a recorded one: the canonical form every
//! replay compares requests in (`harness run` of a scenario's cassette, `harness exec` and
//! `harness serve` of agent cassettes), so one matcher decides for all of them.
//!
//! Always: object keys in any order, and the volatile fields ([`VOLATILE`]) left out. By
//! default, also the harmless differences an unchanged agent makes from one run to the next:
//! - tool-call arguments compared as JSON when they parse (`{"dir": "."}` is `{"dir":"."}`),
//!   as text otherwise;
//! - the tools offered compared as a set keyed by name (their order does not count);
//! - the results of one turn's parallel calls compared by their call ids, in any order
//!   (an agent that appends results as they finish).
//!
//! What else to leave out is data: paths to ignore (`messages/*/name`, from the cassette's
//! `replay.ignore`, `--ignore` and the project file's `[replay] ignore`), and which parts of a
//! request count at all ([`Part`]: `--match` and `[replay] match`; all by default). Pure.

use serde_json::Value;

/// Request fields every match leaves out: per-request ids and user tags that clients vary.
pub const VOLATILE: &[&str] = &["metadata", "user", "seed", "request_id"];

/// A part of a request, by its top-level keys, as `--match` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Part {
    /// `model`.
    Model,
    /// The conversation: `messages`, `input`, `instructions`, `system`,
    /// `previous_response_id`.
    Messages,
    /// The tools offered and the choice among them: `tools`, `tool_choice`,
    /// `parallel_tool_calls`, `functions`, `function_call`.
    Tools,
    /// Everything else: sampling and limits (`temperature`, `max_tokens`, `stream`, …).
    Params,
}

impl Part {
    /// Every part, in the order `--match` lists them.
    pub const ALL: [Part; 4] = [Part::Model, Part::Messages, Part::Tools, Part::Params];

    /// Its name in `--match` and `[replay] match`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Model => "model",
            Self::Messages => "messages",
            Self::Tools => "tools",
            Self::Params => "params",
        }
    }

    /// The part a name stands for.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.name() == name.trim())
    }

    /// The part a request's top-level key belongs to.
    pub fn of_key(key: &str) -> Self {
        match key {
            "model" => Self::Model,
            "messages" | "input" | "instructions" | "system" | "previous_response_id" => {
                Self::Messages
            }
            "tools" | "tool_choice" | "parallel_tool_calls" | "functions" | "function_call" => {
                Self::Tools
            }
            _ => Self::Params,
        }
    }
}

/// What counts when two requests are compared, and what a golden never shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matching {
    /// The parts that count (sorted, without repeats; all by default).
    parts: Vec<Part>,
    /// Paths left out, split at `/` (`*` for any key or index): the volatile fields first.
    ignore: Vec<Vec<String>>,
    /// Volatile text made alike in requests before they are compared (`[replay] normalize`).
    normalize: Vec<Rule>,
    /// Volatile text a golden never shows (`[replay] redact`): each match becomes
    /// [`REDACTED`].
    redact: Vec<Rule>,
}

/// What a redacted match reads as in a golden.
pub const REDACTED: &str = "<redacted>";

/// A regular expression over text at a request path (`*` any key or index; every string at or
/// below it), and what its matches become.
#[derive(Debug, Clone)]
struct Rule {
    path: Vec<String>,
    pattern: String,
    regex: regex_lite::Regex,
    replace: String,
}

impl PartialEq for Rule {
    fn eq(&self, other: &Self) -> bool {
        (&self.path, &self.pattern, &self.replace) == (&other.path, &other.pattern, &other.replace)
    }
}

impl Eq for Rule {}

impl Rule {
    fn new(path: &str, pattern: &str, replace: &str) -> Result<Self, String> {
        let regex = regex_lite::Regex::new(pattern)
            .map_err(|e| format!("`{pattern}` is not a regular expression ({e})"))?;
        if regex.is_match("") {
            return Err(format!(
                "`{pattern}` matches the empty text, so it would change every text"
            ));
        }
        Ok(Self {
            path: split_path(path),
            pattern: pattern.to_owned(),
            regex,
            replace: replace.to_owned(),
        })
    }
}

impl Default for Matching {
    fn default() -> Self {
        Self::new(&[], &[])
    }
}

impl Matching {
    /// Compare `parts` (every part when empty), leaving out the volatile fields and `ignore`.
    pub fn new(parts: &[Part], ignore: &[String]) -> Self {
        let mut parts = if parts.is_empty() {
            Part::ALL.to_vec()
        } else {
            parts.to_vec()
        };
        parts.sort();
        parts.dedup();
        Self {
            parts,
            ignore: VOLATILE
                .iter()
                .map(|s| split_path(s))
                .chain(ignore.iter().map(|s| split_path(s)))
                .collect(),
            normalize: Vec::new(),
            redact: Vec::new(),
        }
    }

    /// This matching, also making each (path, regex, replacement) alike in the requests it
    /// compares; the first rule that is no regular expression (or matches the empty text) is
    /// the error.
    pub fn normalizing(mut self, rules: &[(String, String, String)]) -> Result<Self, String> {
        for (path, pattern, replace) in rules {
            self.normalize.push(Rule::new(path, pattern, replace)?);
        }
        Ok(self)
    }

    /// This matching, also keeping the matches of `patterns` out of every golden.
    pub fn redacting(mut self, patterns: &[String]) -> Result<Self, String> {
        for pattern in patterns {
            self.redact.push(Rule::new("", pattern, REDACTED)?);
        }
        Ok(self)
    }

    /// A golden's text with the volatile text it must never show redacted.
    pub fn redact<'a>(&self, text: &'a str) -> std::borrow::Cow<'a, str> {
        let mut out = std::borrow::Cow::Borrowed(text);
        for rule in &self.redact {
            if rule.regex.is_match(&out) {
                out = std::borrow::Cow::Owned(
                    rule.regex
                        .replace_all(&out, rule.replace.as_str())
                        .into_owned(),
                );
            }
        }
        out
    }

    /// This matching, also leaving out `more` (a cassette's own `replay.ignore`).
    #[must_use]
    pub fn ignoring(&self, more: &[String]) -> Self {
        let mut m = self.clone();
        m.ignore.extend(more.iter().map(|s| split_path(s)));
        m
    }

    /// The parts that count.
    pub fn parts(&self) -> &[Part] {
        &self.parts
    }

    /// `request` as the match compares it: keys sorted, the parts that do not count and the
    /// ignored paths left out, the harmless differences (see the module doc) made alike.
    pub fn canonical(&self, request: &Value) -> Value {
        let mut v = request.clone();
        if let Value::Object(o) = &mut v {
            o.retain(|k, _| self.parts.contains(&Part::of_key(k)));
        }
        alike(&mut v);
        v.sort_all_objects();
        for rule in &self.normalize {
            normalize(&mut v, &rule.path, rule);
        }
        for path in &self.ignore {
            remove(&mut v, path);
        }
        v
    }
}

/// Replace `rule`'s matches in every string at or below `path` (`*` any key or index).
fn normalize(v: &mut Value, path: &[String], rule: &Rule) {
    let Some((head, rest)) = path.split_first() else {
        replace_strings(v, rule);
        return;
    };
    match v {
        Value::Object(o) => {
            for (k, x) in o.iter_mut() {
                if head == "*" || head == k {
                    normalize(x, rest, rule);
                }
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter_mut().enumerate() {
                if head == "*" || head.parse::<usize>().ok() == Some(i) {
                    normalize(x, rest, rule);
                }
            }
        }
        _ => {}
    }
}

fn replace_strings(v: &mut Value, rule: &Rule) {
    match v {
        Value::String(s) if rule.regex.is_match(s) => {
            *s = rule
                .regex
                .replace_all(s, rule.replace.as_str())
                .into_owned();
        }
        Value::Array(a) => a.iter_mut().for_each(|x| replace_strings(x, rule)),
        Value::Object(o) => o.values_mut().for_each(|x| replace_strings(x, rule)),
        _ => {}
    }
}

fn split_path(path: &str) -> Vec<String> {
    path.split('/')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Make the harmless differences alike: arguments as canonical JSON, tools sorted by name,
/// each run of parallel results sorted by call id.
fn alike(request: &mut Value) {
    canonical_arguments(request);
    let Value::Object(o) = request else {
        return;
    };
    if let Some(Value::Array(tools)) = o.get_mut("tools") {
        tools.sort_by(|a, b| tool_name(a).cmp(tool_name(b)));
    }
    for key in ["messages", "input"] {
        if let Some(Value::Array(items)) = o.get_mut(key) {
            sort_runs(items, |m| {
                (m.get("role").and_then(Value::as_str) == Some("tool"))
                    .then(|| m.get("tool_call_id"))
                    .flatten()
                    .or_else(|| {
                        (m.get("type").and_then(Value::as_str) == Some("function_call_output"))
                            .then(|| m.get("call_id"))
                            .flatten()
                    })
                    .map(key_of)
            });
            for m in items.iter_mut() {
                if let Some(Value::Array(blocks)) = m.get_mut("content") {
                    sort_runs(blocks, |b| {
                        (b.get("type").and_then(Value::as_str) == Some("tool_result"))
                            .then(|| b.get("tool_use_id"))
                            .flatten()
                            .map(key_of)
                    });
                }
            }
        }
    }
}

fn key_of(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_owned)
}

/// A tool definition's name (`function.name` on Chat Completions, `name` elsewhere).
fn tool_name(tool: &Value) -> &str {
    tool.pointer("/function/name")
        .or_else(|| tool.get("name"))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Sort each run of consecutive items that have a key (results of one turn) by that key; items
/// without one stay where they are.
fn sort_runs(items: &mut [Value], key: impl Fn(&Value) -> Option<String>) {
    let mut start = 0;
    while start < items.len() {
        if key(&items[start]).is_none() {
            start += 1;
            continue;
        }
        let end = start
            + items[start..]
                .iter()
                .take_while(|m| key(m).is_some())
                .count();
        items[start..end].sort_by_key(|m| key(m));
        start = end;
    }
}

/// Every `arguments` string that parses as JSON, as its canonical text.
fn canonical_arguments(v: &mut Value) {
    match v {
        Value::Object(o) => {
            for (k, x) in o.iter_mut() {
                match x {
                    Value::String(s) if k == "arguments" => {
                        if let Ok(parsed) = serde_json::from_str::<Value>(s) {
                            *s = crate::json::canonical(&parsed);
                        }
                    }
                    _ => canonical_arguments(x),
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(canonical_arguments),
        _ => {}
    }
}

/// Remove what `path` names (`*` matches any key or index).
fn remove(v: &mut Value, path: &[String]) {
    let Some((head, rest)) = path.split_first() else {
        return;
    };
    match v {
        Value::Object(o) => {
            if rest.is_empty() {
                if head == "*" {
                    o.clear();
                } else {
                    o.shift_remove(head);
                }
                return;
            }
            for (k, x) in o.iter_mut() {
                if head == "*" || head == k {
                    remove(x, rest);
                }
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter_mut().enumerate() {
                if head == "*" || head.parse::<usize>().ok() == Some(i) {
                    if rest.is_empty() {
                        *x = Value::Null;
                    } else {
                        remove(x, rest);
                    }
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn same(a: &Value, b: &Value) -> bool {
        let m = Matching::default();
        m.canonical(a) == m.canonical(b)
    }

    #[test]
    fn harmless_differences_match_and_real_ones_do_not() {
        let base = json!({
            "model": "m", "user": "u1", "temperature": 0,
            "tools": [
                {"type": "function", "function": {"name": "read", "parameters": {}}},
                {"type": "function", "function": {"name": "exec", "parameters": {}}}
            ],
            "messages": [
                {"role": "user", "content": "go"},
                {"role": "assistant", "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "exec", "arguments": "{\"dir\": \".\", \"n\": 1}"}},
                    {"id": "b", "type": "function", "function": {"name": "read", "arguments": "{}"}}
                ]},
                {"role": "tool", "tool_call_id": "a", "content": "ok"},
                {"role": "tool", "tool_call_id": "b", "content": "text"},
                {"role": "user", "content": "again"}
            ]
        });
        let mut reordered = base.clone();
        reordered["user"] = json!("u2");
        reordered["tools"].as_array_mut().unwrap().reverse();
        reordered["messages"][1]["tool_calls"][0]["function"]["arguments"] =
            json!("{\"n\":1,\"dir\":\".\"}");
        reordered["messages"].as_array_mut().unwrap().swap(2, 3);
        assert!(same(&base, &reordered));
        for change in [
            json!({"/temperature": 1}),
            json!({"/messages/2/content": "failed"}),
            json!({"/tools/0/function/parameters": {"type": "object"}}),
            json!({"/messages/1/tool_calls/0/function/arguments": "{\"dir\": \"/\"}"}),
        ] {
            let (path, value) = change.as_object().unwrap().iter().next().unwrap();
            let mut changed = base.clone();
            *changed.pointer_mut(path).unwrap() = value.clone();
            assert!(!same(&base, &changed), "{path} changed, yet it matched");
        }
        // The user message between two runs of results keeps them apart: order still counts
        // across turns.
        let mut moved = base.clone();
        moved["messages"].as_array_mut().unwrap().swap(3, 4);
        assert!(!same(&base, &moved));
    }

    #[test]
    fn anthropic_and_responses_results_compare_by_call_id() {
        let messages = |ids: [&str; 2]| {
            json!({"model": "m", "messages": [{"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": ids[0], "content": "x"},
                {"type": "tool_result", "tool_use_id": ids[1], "content": "y"}
            ]}]})
        };
        // Results carry their content with them: swapped blocks, same pairs.
        let mut swapped = messages(["a", "b"]);
        swapped["messages"][0]["content"]
            .as_array_mut()
            .unwrap()
            .reverse();
        assert!(same(&messages(["a", "b"]), &swapped));
        let responses = json!({"model": "m", "input": [
            {"type": "function_call_output", "call_id": "a", "output": "x"},
            {"type": "function_call_output", "call_id": "b", "output": "y"}
        ]});
        let mut swapped = responses.clone();
        swapped["input"].as_array_mut().unwrap().reverse();
        assert!(same(&responses, &swapped));
    }

    #[test]
    fn only_the_parts_asked_for_count_and_ignored_paths_never() {
        let a = json!({"model": "m", "temperature": 0, "messages": [{"role": "user", "content": "go", "name": "x"}]});
        let b = json!({"model": "n", "temperature": 1, "messages": [{"role": "user", "content": "go", "name": "y"}]});
        assert!(!same(&a, &b));
        let messages_only = Matching::new(&[Part::Messages], &["messages/*/name".to_owned()]);
        assert_eq!(messages_only.canonical(&a), messages_only.canonical(&b));
        assert_eq!(Part::parse("tools"), Some(Part::Tools));
        assert_eq!(Part::parse("prompt"), None);
        assert_eq!(Part::of_key("instructions"), Part::Messages);
    }

    #[test]
    fn normalized_text_matches_and_a_real_change_still_differs() {
        let m = Matching::default()
            .normalizing(&[(
                "messages/*/content".to_owned(),
                r"\d{4}-\d{2}-\d{2}T[0-9:]+Z".to_owned(),
                "<time>".to_owned(),
            )])
            .expect("rules");
        let at = |when: &str, task: &str| {
            json!({"model": "m", "messages": [
                {"role": "system", "content": format!("Now: {when}.")},
                {"role": "user", "content": [{"type": "text", "text": format!("{task} at {when}")}]}]})
        };
        let a = at("2026-11-28T10:00:00Z", "Fix it");
        assert_eq!(
            m.canonical(&a),
            m.canonical(&at("2026-11-29T11:30:00Z", "Fix it"))
        );
        assert_ne!(
            m.canonical(&a),
            m.canonical(&at("2026-11-29T11:30:00Z", "Break it"))
        );
        // Without the rule the timestamps differ.
        assert_ne!(
            Matching::default().canonical(&a),
            Matching::default().canonical(&at("2026-11-29T11:30:00Z", "Fix it"))
        );
        // A rule that is no regular expression, or matches the empty text, is refused.
        assert!(
            Matching::default()
                .normalizing(&[("x".to_owned(), "(".to_owned(), String::new())])
                .is_err()
        );
        assert!(Matching::default().redacting(&["a*".to_owned()]).is_err());
    }

    #[test]
    fn redacted_text_never_reaches_a_golden() {
        let m = Matching::default()
            .redacting(&[
                r"Chunk ID: [0-9a-f]+".to_owned(),
                r"Wall time: [0-9.]+".to_owned(),
            ])
            .expect("patterns");
        assert_eq!(
            m.redact("ok (Chunk ID: 0e7f41, Wall time: 0.25 seconds)"),
            "ok (<redacted>, <redacted> seconds)"
        );
        assert!(matches!(
            m.redact("nothing volatile"),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}
