//! Tool calls written in an answer's text, as Moltis reads them (`crates/agents/src/
//! tool_parsing.rs`, the same at the PR #664 merge and at `6bd2d118`): a model without
//! native calls, or one that slips into a format it was trained on, writes its call as text,
//! and the runner runs it when the answer carries no native call
//! ([`super::Config::text_calls`]).
//!
//! Five shapes, each found anywhere in the text and all of them in one answer:
//!
//! - a fence opened by `` ```tool_call `` holding `{"tool": NAME, "arguments": {…}}`;
//! - `<function=NAME><parameter=KEY>VALUE</parameter>…</function>` (a `</tool_call>` right
//!   after it belongs to the block);
//! - `<invoke name="NAME"><arg name="KEY">VALUE</arg>…</invoke>`;
//! - `<tool_call>NAME<arg_key>KEY</arg_key><arg_value>VALUE</arg_value>…</tool_call>`
//!   (Zhipu's);
//! - a bare object with a `"tool"` key, from the nearest `{` before the key to its matching
//!   `}` (or the end of the text).
//!
//! The JSON shapes are read as they are, else repaired as a cut stream is
//! ([`crate::json::repair`]); their `"tool"` must be a string (any string, even empty), their
//! `"arguments"` are taken as they are (`{}` when absent). The markup shapes need a name of
//! letters, digits, `_` and `-` and at least one argument; each value is JSON when it parses
//! (`10` a number, `false` a boolean), else the text. Blocks are taken in the order they start,
//! one that starts inside an earlier one dropped; the text between them, trimmed and without
//! stray `<tool_call>` / `</tool_call>` around it, is what the answer still says.
//!
//! An answer that reads as an attempt but yields no call ([`looks_like_a_failed_call`]) gets
//! one retry a run, with [`super::Config::malformed_call_retry_message`].

use serde_json::{Map, Value};

/// A call read from text: the tool's name as written and its arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct TextCall {
    /// The tool's name as written (not checked against the tools: an unknown one fails as
    /// any unknown call does).
    pub name: String,
    /// The arguments.
    pub arguments: Value,
}

/// A call found in the text and where it stands (byte offsets).
struct Found {
    start: usize,
    end: usize,
    call: TextCall,
}

/// The calls `text` writes, in order, and what it says besides (`None` when nothing is left).
/// No call: the text unchanged.
pub fn parse(text: &str) -> (Vec<TextCall>, Option<String>) {
    let mut found = Vec::new();
    fenced(text, &mut found);
    function_tags(text, &mut found);
    invoke_tags(text, &mut found);
    zhipu_tags(text, &mut found);
    bare_objects(text, &mut found);
    if found.is_empty() {
        return (Vec::new(), Some(text.to_owned()));
    }
    found.sort_by_key(|f| f.start);
    let mut kept: Vec<Found> = Vec::with_capacity(found.len());
    for f in found {
        if kept.last().is_none_or(|k| f.start >= k.end) {
            kept.push(f);
        }
    }
    let mut said = Vec::new();
    let mut at = 0;
    for piece in kept
        .iter()
        .map(|f| {
            let piece = &text[at..f.start];
            at = f.end;
            piece
        })
        .collect::<Vec<_>>()
        .into_iter()
        .chain(std::iter::once(&text[at..]))
    {
        let piece = without_wrappers(piece);
        if !piece.is_empty() {
            said.push(piece);
        }
    }
    let rest = (!said.is_empty()).then(|| said.join("\n"));
    (kept.into_iter().map(|f| f.call).collect(), rest)
}

/// Whether `text` reads as an attempt at a call that [`parse`] cannot read: it holds (in any
/// case) `"tool"`, `tool_call`, `<function=`, `<invoke`, `<arg_key>` or `<arg_value>`, and
/// yields no call. The parser is case-sensitive: `<INVOKE …>` is an attempt, not a call.
pub fn looks_like_a_failed_call(text: &str) -> bool {
    const SIGNS: [&str; 6] = [
        "\"tool\"",
        "tool_call",
        "<function=",
        "<invoke",
        "<arg_key>",
        "<arg_value>",
    ];
    let lower = text.to_ascii_lowercase();
    SIGNS.iter().any(|s| lower.contains(s)) && parse(text).0.is_empty()
}

/// A tool name the markup shapes accept.
fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// A markup argument's value: JSON when it parses, else the text.
fn value_of(raw: &str) -> Value {
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned()))
}

/// `{"tool": NAME, "arguments": …}`, parsed or repaired.
fn tool_object(json: &str) -> Option<TextCall> {
    let v = serde_json::from_str::<Value>(json)
        .ok()
        .or_else(|| crate::json::repair(json))?;
    Some(TextCall {
        name: v.get("tool")?.as_str()?.to_owned(),
        arguments: v
            .get("arguments")
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new())),
    })
}

/// What a piece of text between blocks still says: trimmed, without `<tool_call>` and
/// `</tool_call>` at either end.
fn without_wrappers(piece: &str) -> &str {
    const TAGS: [&str; 2] = ["<tool_call>", "</tool_call>"];
    let mut s = piece.trim();
    while let Some(rest) = TAGS.iter().find_map(|t| s.strip_prefix(t)) {
        s = rest.trim();
    }
    while let Some(rest) = TAGS.iter().find_map(|t| s.strip_suffix(t)) {
        s = rest.trim();
    }
    s
}

fn fenced(text: &str, found: &mut Vec<Found>) {
    const OPEN: &str = "```tool_call";
    let mut from = 0;
    while let Some(i) = text[from..].find(OPEN) {
        let start = from + i;
        let body = start + OPEN.len();
        // An unclosed fence ends the search.
        let Some(len) = text[body..].find("```") else {
            return;
        };
        let end = body + len + 3;
        if let Some(call) = tool_object(text[body..body + len].trim()) {
            found.push(Found { start, end, call });
        }
        from = end;
    }
}

/// The `<KEY_OPEN…>VALUE</…>` pairs of a markup block's body: `key(attrs)` reads a key from
/// what stands between the opener and its `>`; a pair without its closer ends the reading.
fn pairs(
    body: &str,
    opener: &str,
    closer: &str,
    key: impl Fn(&str) -> Option<&str>,
) -> Map<String, Value> {
    let mut args = Map::new();
    let mut at = 0;
    while let Some(i) = body[at..].find(opener) {
        let attrs_at = at + i + opener.len();
        let Some(gt) = body[attrs_at..].find('>') else {
            break;
        };
        let value_at = attrs_at + gt + 1;
        let Some(k) = key(&body[attrs_at..attrs_at + gt]) else {
            at = value_at;
            continue;
        };
        let Some(len) = body[value_at..].find(closer) else {
            break;
        };
        args.insert(
            k.to_owned(),
            value_of(body[value_at..value_at + len].trim()),
        );
        at = value_at + len + closer.len();
    }
    args
}

/// A markup block's call, when it has an argument (a block without one is no call).
fn markup_call(
    found: &mut Vec<Found>,
    (start, end): (usize, usize),
    name: &str,
    args: Map<String, Value>,
) {
    if !args.is_empty() {
        found.push(Found {
            start,
            end,
            call: TextCall {
                name: name.to_owned(),
                arguments: Value::Object(args),
            },
        });
    }
}

fn function_tags(text: &str, found: &mut Vec<Found>) {
    const OPEN: &str = "<function=";
    const CLOSE: &str = "</function>";
    let mut from = 0;
    while let Some(i) = text[from..].find(OPEN) {
        let start = from + i;
        let name_at = start + OPEN.len();
        let Some(gt) = text[name_at..].find('>') else {
            return;
        };
        let name = text[name_at..name_at + gt].trim();
        let body = name_at + gt + 1;
        if !is_name(name) {
            from = name_at;
            continue;
        }
        let Some(len) = text[body..].find(CLOSE) else {
            from = body;
            continue;
        };
        let mut end = body + len + CLOSE.len();
        let after = text[end..].trim_start();
        if let Some(rest) = after.strip_prefix("</tool_call>") {
            end = text.len() - rest.len();
        }
        let args = pairs(
            &text[body..body + len],
            "<parameter=",
            "</parameter>",
            |k| {
                let k = k.trim();
                is_name(k).then_some(k)
            },
        );
        markup_call(found, (start, end), name, args);
        from = end;
    }
}

/// The value of `attr="…"` among a tag's attributes (the first such text, double quotes).
fn attribute<'a>(attrs: &'a str, attr: &str) -> Option<&'a str> {
    let needle = format!("{attr}=\"");
    let at = attrs.find(&needle)? + needle.len();
    let len = attrs[at..].find('"')?;
    Some(&attrs[at..at + len])
}

fn invoke_tags(text: &str, found: &mut Vec<Found>) {
    const OPEN: &str = "<invoke";
    const CLOSE: &str = "</invoke>";
    let mut from = 0;
    while let Some(i) = text[from..].find(OPEN) {
        let start = from + i;
        let attrs_at = start + OPEN.len();
        let Some(gt) = text[attrs_at..].find('>') else {
            return;
        };
        let body = attrs_at + gt + 1;
        let Some(name) = attribute(&text[attrs_at..attrs_at + gt], "name").filter(|n| is_name(n))
        else {
            from = body;
            continue;
        };
        let Some(len) = text[body..].find(CLOSE) else {
            from = body;
            continue;
        };
        let end = body + len + CLOSE.len();
        let args = pairs(&text[body..body + len], "<arg", "</arg>", |attrs| {
            attribute(attrs, "name").filter(|k| !k.is_empty())
        });
        markup_call(found, (start, end), name, args);
        from = end;
    }
}

fn zhipu_tags(text: &str, found: &mut Vec<Found>) {
    const OPEN: &str = "<tool_call>";
    const CLOSE: &str = "</tool_call>";
    const KEY: (&str, &str) = ("<arg_key>", "</arg_key>");
    const VALUE: (&str, &str) = ("<arg_value>", "</arg_value>");
    let mut from = 0;
    while let Some(i) = text[from..].find(OPEN) {
        let start = from + i;
        let inner_at = start + OPEN.len();
        // An unclosed block ends the search: nothing after it can be whole.
        let Some(len) = text[inner_at..].find(CLOSE) else {
            return;
        };
        let end = inner_at + len + CLOSE.len();
        let inner = &text[inner_at..inner_at + len];
        // `<tool_call>{…}</tool_call>` is the bare object's.
        if inner.trim_start().starts_with('{') {
            from = end;
            continue;
        }
        let first_key = inner.find(KEY.0);
        let name = inner[..first_key.unwrap_or(inner.len())].trim();
        if !is_name(name) {
            from = inner_at;
            continue;
        }
        let Some(mut at) = first_key else {
            from = end;
            continue;
        };
        let mut args = Map::new();
        while let Some(k) = inner[at..].find(KEY.0).map(|i| at + i + KEY.0.len()) {
            let Some(k_len) = inner[k..].find(KEY.1) else {
                break;
            };
            let after_key = k + k_len + KEY.1.len();
            let Some(v) = inner[after_key..]
                .find(VALUE.0)
                .map(|i| after_key + i + VALUE.0.len())
            else {
                break;
            };
            let Some(v_len) = inner[v..].find(VALUE.1) else {
                break;
            };
            let key = inner[k..k + k_len].trim();
            if !key.is_empty() {
                // The value as written, not trimmed.
                args.insert(key.to_owned(), value_of(&inner[v..v + v_len]));
            }
            at = v + v_len + VALUE.1.len();
        }
        markup_call(found, (start, end), name, args);
        from = end;
    }
}

fn bare_objects(text: &str, found: &mut Vec<Found>) {
    const KEY: &str = "\"tool\"";
    let mut from = 0;
    while let Some(i) = text[from..].find(KEY) {
        let hit = from + i;
        let next = hit + KEY.len();
        let Some(start) = text[..hit].rfind('{') else {
            from = next;
            continue;
        };
        if found.iter().any(|f| start >= f.start && start < f.end) {
            from = next;
            continue;
        }
        let end = object_end(&text[start..]).map_or(text.len(), |len| start + len);
        if let Some(call) = tool_object(&text[start..end]) {
            found.push(Found { start, end, call });
            from = end;
        } else {
            from = next;
        }
    }
}

/// The length of the JSON object `s` starts with, through its matching `}` (strings and
/// their escapes skipped); `None` when it never closes.
fn object_end(s: &str) -> Option<usize> {
    let (mut depth, mut in_string, mut escaped) = (0u32, false, false);
    for (i, c) in s.char_indices() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' => depth += 1,
            '}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn calls(text: &str) -> Vec<(String, Value)> {
        parse(text)
            .0
            .into_iter()
            .map(|c| (c.name, c.arguments))
            .collect()
    }

    #[test]
    fn each_shape_reads_as_a_call_and_leaves_what_else_was_said() {
        let (c, rest) = parse(
            "I'll check.\n```tool_call\n{\"tool\": \"exec\", \"arguments\": {\"command\": \"echo hello\"}}\n```\nDone.",
        );
        assert_eq!(c[0].name, "exec");
        assert_eq!(c[0].arguments, json!({"command": "echo hello"}));
        assert_eq!(rest.as_deref(), Some("I'll check.\nDone."));
        let (c, rest) = parse(
            "<function=process>\n<parameter=action>\nstart\n</parameter>\n<parameter=command>\npwd\n</parameter>\n</function>\n</tool_call>",
        );
        assert_eq!(
            (c[0].name.as_str(), &c[0].arguments),
            ("process", &json!({"action": "start", "command": "pwd"}))
        );
        assert_eq!(rest, None);
        assert_eq!(
            calls(
                "Running.\n<invoke name=\"exec\"><arg name=\"command\">ls -la</arg><arg name=\"timeout\">10</arg></invoke>"
            ),
            [(
                "exec".to_owned(),
                json!({"command": "ls -la", "timeout": 10})
            )]
        );
        assert_eq!(
            calls(
                "<tool_call>exec<arg_key>command</arg_key><arg_value>ls</arg_value><arg_key>n</arg_key><arg_value> 0 </arg_value></tool_call>"
            ),
            [("exec".to_owned(), json!({"command": "ls", "n": 0}))]
        );
        let (c, rest) =
            parse("Let me run: {\"tool\": \"exec\", \"arguments\": {\"command\": \"whoami\"}}");
        assert_eq!(c[0].arguments, json!({"command": "whoami"}));
        assert_eq!(rest.as_deref(), Some("Let me run:"));
        // A cut object is repaired and runs; one that cannot be is no call.
        assert_eq!(
            calls("{\"tool\": \"exec\", \"arguments\": {\"command\": \"ls\""),
            [("exec".to_owned(), json!({"command": "ls"}))]
        );
        assert!(calls("{\"tool\": \"exec\", \"arguments\": {BROKEN").is_empty());
        // Several in one answer, in the order written, whatever their shapes.
        let both = calls(
            "```tool_call\n{\"tool\": \"a\"}\n```\nthen <invoke name=\"b\"><arg name=\"x\">false</arg></invoke>",
        );
        assert_eq!(
            both,
            [
                ("a".to_owned(), json!({})),
                ("b".to_owned(), json!({"x": false}))
            ]
        );
        // `<tool_call>{…}</tool_call>` is read once, as the object.
        assert_eq!(
            calls("<tool_call>{\"tool\": \"exec\", \"arguments\": {}}</tool_call>").len(),
            1
        );
        // No call: the text as it was.
        assert_eq!(parse("  plain  ").1.as_deref(), Some("  plain  "));
    }

    #[test]
    fn what_is_not_a_call_is_an_attempt_or_nothing() {
        for attempt in [
            "Here's what I'll do: {\"tool\": \"exec\", \"arguments\": {BROKEN",
            "tool_call something",
            "<invoke name=\"exec\"><arg name=\"command\">ls",
            "<INVOKE name=\"exec\"><arg name=\"command\">ls</arg></INVOKE>",
            "<invoke name=\"exec\"><parameter name=\"command\">ls</parameter></invoke>",
            "```tool_call\n{\"name\": \"exec\", \"arguments\": {}}\n```",
            "<tool_call>exec<arg_key>command</arg_key><arg_value>grep",
            "The JSON key \"tool\" is required.",
        ] {
            assert!(looks_like_a_failed_call(attempt), "{attempt}");
            assert!(calls(attempt).is_empty(), "{attempt}");
        }
        for not in [
            "Hello, how can I help?",
            "I'll invoke the API to get results.",
            "",
            "<invoke name=\"exec\"><arg name=\"command\">ls</arg></invoke>",
        ] {
            assert!(!looks_like_a_failed_call(not), "{not}");
        }
        // Markup needs a valid name and an argument.
        for none in [
            "<invoke name=\"exec\"></invoke>",
            "<invoke name=\"\"><arg name=\"a\">1</arg></invoke>",
            "<function=two words><parameter=a>1</parameter></function>",
            "<tool_call>maybe later</tool_call>",
            "<tool_call>exec</tool_call>",
        ] {
            assert!(calls(none).is_empty(), "{none}");
        }
        // Stringified arguments stay a string; an empty name is still a call (the empty-name
        // retry's to answer).
        assert_eq!(
            calls("{\"tool\": \"\", \"arguments\": \"{\\\"a\\\":1}\"}"),
            [(String::new(), json!("{\"a\":1}"))]
        );
    }
}
