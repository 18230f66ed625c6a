//! From problems to diagnostics: byte offsets to line:col, key paths to positions in the source,
//! and hints for serde's messages ("did you mean …").

use super::SourceFormat;
use crate::diagnostic::Diagnostic;
use crate::diagnostic::{Cause, Serde};
use toml::de::{DeArray, DeTable, DeValue};

/// A step of a key path into the document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seg {
    /// A table key.
    Key(String),
    /// An array index.
    Index(usize),
}

/// A problem found by validation, located by key path.
#[derive(Debug, Clone)]
pub struct Problem {
    /// Where.
    pub path: Vec<Seg>,
    /// Point at the key rather than its value (unknown keys).
    pub at_key: bool,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub hint: Option<String>,
}

/// serde_json places an error in a string it has read (an unknown or duplicate key, a value of
/// the wrong type) at the string's closing quote; move such a 1-based column to the opening
/// quote, so the location names the start of the token. Other columns are returned unchanged.
pub fn json_token_start(text: &str, line: usize, col: usize) -> usize {
    let Some(chars) = text
        .split('\n')
        .nth(line.saturating_sub(1))
        .map(|l| l.chars().collect::<Vec<char>>())
    else {
        return col;
    };
    if chars.get(col.wrapping_sub(1)) != Some(&'"') {
        return col;
    }
    // Unescaped quotes on the line before this one: an odd count means this one closes.
    let mut quotes = Vec::new();
    let mut escaped = false;
    for (i, c) in chars.iter().enumerate().take(col - 1) {
        match c {
            '\\' if !escaped => escaped = true,
            '"' if !escaped => quotes.push(i),
            _ => escaped = false,
        }
        if *c != '\\' {
            escaped = false;
        }
    }
    match quotes.last() {
        Some(open) if quotes.len() % 2 == 1 => open + 1,
        _ => col,
    }
}

/// 1-based line and char column of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..floor_char_boundary(text, offset)];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

pub(super) fn floor_char_boundary(text: &str, mut i: usize) -> usize {
    while i > 0 && !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

pub(super) fn diagnose(text: &str, format: SourceFormat, p: Problem) -> Diagnostic {
    let offset = match format {
        SourceFormat::Toml => toml_offset(text, &p.path, p.at_key),
        SourceFormat::Json => json_offset(text, &p.path, p.at_key),
    };
    let (line, col) = offset.map_or((1, 1), |o| line_col(text, o));
    Diagnostic::at(line, col, p.message).maybe_hint(p.hint)
}

/// The line of each entry of the table `key` of a parsed TOML document, in its order: where
/// its value begins (a `[key.NAME]` table's header line).
pub(super) fn table_lines(text: &str, root: &DeTable<'_>, key: &str) -> Vec<(String, usize)> {
    let Some(DeValue::Table(table)) = root.get(key).map(|v| v.get_ref()) else {
        return Vec::new();
    };
    let entries = table
        .iter()
        .map(|(name, value)| (name.get_ref().to_string(), value.span().start))
        .collect();
    entry_lines(text, entries)
}

/// The line of each named offset of `text`, in the order of the offsets (ties in the order
/// given).
pub(super) fn entry_lines(text: &str, mut entries: Vec<(String, usize)>) -> Vec<(String, usize)> {
    let mut lines = Vec::with_capacity(entries.len());
    // Offsets only grow along the text: count lines from the last one.
    let (mut at, mut line) = (0, 1);
    entries.sort_by_key(|(_, offset)| *offset);
    for (name, offset) in entries {
        let offset = floor_char_boundary(text, offset.min(text.len()));
        line += memchr::memchr_iter(b'\n', &text.as_bytes()[at..offset]).count();
        at = offset;
        lines.push((name, line));
    }
    lines
}

/// The line where the value at `path` of a JSON text begins (1 when it is not there).
pub(super) fn json_line(text: &str, path: &[&str]) -> usize {
    let path: Vec<Seg> = path.iter().map(|k| Seg::Key((*k).to_owned())).collect();
    json_offset(text, &path, false).map_or(1, |o| line_col(text, o).0)
}

/// Byte offset of the deepest node of `path` that exists in a JSON document.
fn json_offset(text: &str, path: &[Seg], at_key: bool) -> Option<usize> {
    use jsonc_parser::ast::Value as J;
    use jsonc_parser::common::Ranged;
    let parsed = jsonc_parser::parse_to_ast(text, &Default::default(), &Default::default()).ok()?;
    let mut node = parsed.value?;
    let mut best = node.start();
    for (i, seg) in path.iter().enumerate() {
        let next = match (seg, node) {
            (Seg::Key(k), J::Object(obj)) => {
                let Some(prop) = obj.properties.into_iter().find(|p| p.name.as_str() == k) else {
                    break;
                };
                if at_key && i + 1 == path.len() {
                    return Some(prop.range.start);
                }
                prop.value
            }
            (Seg::Index(idx), J::Array(arr)) => match arr.elements.into_iter().nth(*idx) {
                Some(v) => v,
                None => break,
            },
            _ => break,
        };
        best = next.start();
        node = next;
    }
    Some(best)
}

/// Byte offset of the deepest node of `path` that exists in a TOML document.
fn toml_offset(text: &str, path: &[Seg], at_key: bool) -> Option<usize> {
    let root = DeTable::parse(text).ok()?;
    let mut best = root.span().start;
    let mut table: Option<&DeTable<'_>> = Some(root.get_ref());
    let mut array: Option<&DeArray<'_>> = None;
    for (i, seg) in path.iter().enumerate() {
        let node = match seg {
            Seg::Key(k) => {
                let Some((key, value)) =
                    table.and_then(|t| t.iter().find(|(key, _)| key.get_ref() == k))
                else {
                    break;
                };
                if at_key && i + 1 == path.len() {
                    return Some(key.span().start);
                }
                value
            }
            Seg::Index(idx) => match array.and_then(|a| a.get(*idx)) {
                Some(node) => node,
                None => break,
            },
        };
        best = node.span().start;
        (table, array) = match node.get_ref() {
            DeValue::Table(t) => (Some(t), None),
            DeValue::Array(a) => (None, Some(a)),
            _ => (None, None),
        };
    }
    Some(best)
}

/// A diagnostic for a parser's message (TOML, or JSON when `json`), with the hint its kind
/// calls for.
pub(super) fn from_parser(line: usize, col: usize, message: &str, json: bool) -> Diagnostic {
    let d = crate::diagnostic::parse_error(line, col, message, json);
    if let Some(hint) = crate::diagnostic::toml_syntax_hint(message).filter(|_| !json) {
        return d.hint(hint);
    }
    let hint = hint_for(&Serde::read(message));
    d.maybe_hint(hint)
}

/// How to mend a scenario with this deserializer complaint, by its kind.
pub(super) fn hint_for(read: &Serde<'_>) -> Option<String> {
    let quoted = &read.quoted;
    Some(match read.cause {
        Cause::UnknownKey | Cause::UnknownVariant => {
            let (found, expected) = quoted.split_first()?;
            if let Some(best) = did_you_mean(found, expected) {
                return Some(format!("did you mean `{best}`?"));
            }
            let what = if read.cause == Cause::UnknownKey {
                "keys"
            } else {
                "values"
            };
            format!("allowed {what} here: {}", expected.join(", "))
        }
        Cause::MissingKey => format!(
            "add `{}`; the scenario format is described in docs/scenario-format.md and schema/scenario.schema.json",
            quoted.first().unwrap_or(&"")
        ),
        Cause::DuplicateKey => {
            "a key may appear once in a table; delete or rename the second one".to_owned()
        }
        Cause::TooDeep => {
            "flatten the value: no scenario needs arrays or tables this deep".to_owned()
        }
        Cause::Count => {
            "write a count as a whole number, or as `{ min = …, max = … }` with min <= max"
                .to_owned()
        }
        Cause::WrongValue => {
            let want = match read.expected {
                "u8" | "u16" | "u32" | "u64" | "usize" => "a whole number (0 or more)",
                "f64" | "f32" => "a number",
                "a boolean" => "`true` or `false`",
                "a string" => "a string in quotes",
                e if e.starts_with("struct ") || e.starts_with("a map") => "a table `{ … }`",
                e if e.starts_with("a sequence") => "a list `[ … ]`",
                _ => "",
            };
            if want.is_empty() {
                "check the value against the scenario format (docs/scenario-format.md, schema/scenario.schema.json)"
                    .to_owned()
            } else {
                format!(
                    "expected {want} here; the scenario format is in docs/scenario-format.md and schema/scenario.schema.json"
                )
            }
        }
        _ => "check the syntax near this position".to_owned(),
    })
}

/// The closest of `candidates` to `found`, if close enough.
pub fn did_you_mean<'a>(found: &str, candidates: &[&'a str]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|c| (strsim::jaro_winkler(found, c), *c))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

/// The hint for an unknown name: "did you mean `X`?" when a candidate is close, else
/// `otherwise()` (usually the list of known names).
pub fn suggest(found: &str, candidates: &[&str], otherwise: impl FnOnce() -> String) -> String {
    match did_you_mean(found, candidates) {
        Some(best) => format!("did you mean `{best}`?"),
        None => otherwise(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_without_quotes_is_told_to_take_them() {
        let d = crate::scenario::parse(
            "format = 1\ndescription = hello world\n",
            crate::scenario::SourceFormat::Toml,
        )
        .err()
        .map(|d| d.render(&crate::diagnostic::Style::default()))
        .unwrap_or_default();
        assert!(d.contains("2:15: string values must be quoted"), "{d}");
        assert!(d.contains("hint: put text in double quotes"), "{d}");
    }

    #[test]
    fn line_col_counts_chars() {
        let t = "ab\ncé d\n";
        assert_eq!(line_col(t, 0), (1, 1));
        assert_eq!(line_col(t, 3), (2, 1));
        assert_eq!(line_col(t, 7), (2, 4));
    }

    #[test]
    fn toml_paths_resolve_to_positions() {
        let t = "a = 1\n[[tools]]\nname = \"x\"\n[[tools]]\nname = \"y\"\n";
        let off = toml_offset(
            t,
            &[
                Seg::Key("tools".into()),
                Seg::Index(1),
                Seg::Key("name".into()),
            ],
            false,
        )
        .unwrap();
        assert_eq!(line_col(t, off), (5, 8));
        let off = toml_offset(t, &[Seg::Key("a".into())], true).unwrap();
        assert_eq!(line_col(t, off), (1, 1));
    }

    #[test]
    fn compare_entries_are_located_where_the_parser_puts_them() {
        let lines = |t: &str| {
            let root = DeTable::parse(t).unwrap();
            let mut found = table_lines(t, root.get_ref(), "compare");
            found.sort();
            for (name, line) in &found {
                let at = [Seg::Key("compare".into()), Seg::Key(name.clone())];
                let parsed = toml_offset(t, &at, false).map(|o| line_col(t, o).0);
                assert_eq!(parsed, Some(*line), "{name}");
            }
            found
        };
        let t = "d = \"\"\"\n[compare.none]\n\"\"\"\n[compare.moltis]\nx = 1\n\n  [compare.none]  # c\r\nx = 2\n";
        assert_eq!(lines(t), [("moltis".into(), 4), ("none".into(), 7)]);
        let t = "a = 1\ncompare = { none = { outcome = \"error\" },\n  \"é\" = {} }\n";
        assert_eq!(lines(t), [("none".into(), 2), ("é".into(), 3)]);
        assert!(lines("a = 1\n").is_empty());
        let j = "{\n \"compare\": {\n  \"none\": {}\n }\n}";
        assert_eq!(json_line(j, &["compare", "none"]), 3);
    }

    #[test]
    fn json_paths_resolve_to_positions() {
        let t = "{\n  \"tools\": [\n    {\"name\": \"x\"},\n    {\"name\": \"y\"}\n  ]\n}";
        let path = [
            Seg::Key("tools".into()),
            Seg::Index(1),
            Seg::Key("name".into()),
        ];
        assert_eq!(line_col(t, json_offset(t, &path, false).unwrap()), (4, 14));
        assert_eq!(line_col(t, json_offset(t, &path, true).unwrap()), (4, 6));
    }

    #[test]
    fn hints_suggest_the_nearest_key() {
        let h = hint_for(&Serde::read(
            "unknown field `tool_offerd`, expected one of `tools_offered`, `tool_offered`, `force_text`",
        ));
        assert_eq!(h.as_deref(), Some("did you mean `tool_offered`?"));
    }
}
