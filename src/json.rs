//! Small pure helpers over `serde_json::Value` shared by the engine, the policies and the trace:
//! canonical rendering (sorted keys, as both reproduced runtimes fingerprint arguments), compact
//! rendering in insertion order (as runtimes show arguments back to the model) and char-safe
//! previews. No I/O, no allocation beyond the returned strings.

use serde_json::{Number, Value};
use std::borrow::Cow;
use std::fmt::Write as _;

/// `value` with every object's keys sorted byte-wise, recursively (arrays keep their order):
/// the form recorded requests are stored and compared in.
pub fn sorted(value: &Value) -> Value {
    let mut v = value.clone();
    v.sort_all_objects();
    v
}

/// A JSON text a stream cut short, read as Moltis repairs it (since its #983): parsed as it
/// is if it parses; else with `//` line comments and commas before a `}` or `]` dropped
/// (outside strings); else with an open string closed and the missing `}` and `]` appended,
/// innermost first. `None` when even that does not parse (`{"a":` has no value to close).
pub fn repair(raw: &str) -> Option<Value> {
    if let Ok(v) = serde_json::from_str(raw) {
        return Some(v);
    }
    let tidied = without_trailing_commas(&without_line_comments(raw));
    if let Ok(v) = serde_json::from_str(&tidied) {
        return Some(v);
    }
    let mut closers = Vec::new();
    let (mut in_string, mut escaped) = (false, false);
    for c in tidied.chars() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' => closers.push('}'),
            '[' => closers.push(']'),
            '}' | ']' if closers.last() == Some(&c) => {
                closers.pop();
            }
            _ => {}
        }
    }
    let mut closed = tidied;
    if in_string {
        closed.push('"');
    }
    closed.extend(closers.iter().rev());
    serde_json::from_str(&closed).ok()
}

/// A JSON-ish text with some bytes outside its strings dropped: `keep(text, at)` is asked of
/// each byte outside a string (a dropped `"` opens none).
fn keep_outside_strings(text: &str, mut keep: impl FnMut(&str, usize) -> bool) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let (mut in_string, mut escaped) = (false, false);
    for (at, &b) in bytes.iter().enumerate() {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            out.push(b);
            continue;
        }
        if keep(text, at) {
            in_string = b == b'"';
            out.push(b);
        }
    }
    // Only ASCII bytes outside strings are ever dropped, so the rest stays UTF-8.
    String::from_utf8(out).unwrap_or_default()
}

/// `//` comments to the end of their line dropped (outside strings).
fn without_line_comments(text: &str) -> String {
    let mut skipping_to = None;
    keep_outside_strings(text, |t, at| {
        if let Some(end) = skipping_to {
            if at < end {
                return false;
            }
            skipping_to = None;
        }
        if t.as_bytes()[at..].starts_with(b"//") {
            let end = t[at..].find('\n').map_or(t.len(), |n| at + n);
            skipping_to = Some(end);
            return false;
        }
        true
    })
}

/// Commas whose next non-blank byte is `}` or `]` dropped (outside strings).
fn without_trailing_commas(text: &str) -> String {
    keep_outside_strings(text, |t, at| {
        t.as_bytes()[at] != b','
            || !matches!(
                t[at + 1..].trim_start().as_bytes().first(),
                Some(b'}' | b']')
            )
    })
}

/// Canonical form: the compact JSON text of [`sorted`] (`serde_json::to_string(&sorted(v))`,
/// a test checks it), written without building the sorted copy. Numbers use serde_json's
/// `Display` (so `1` and `1.0` differ).
///
/// Equality of canonical forms is what the duplicate tracker and the reflex detector compare.
pub fn canonical(value: &Value) -> String {
    let mut out = String::new();
    push_canonical(&mut out, value);
    out
}

/// Whether `a` and `b` have the same [`canonical`] text, decided without writing either:
/// objects with the same keys and the same values at them (in any order), arrays item by item,
/// and numbers written the same (an integer is never written as a float is, and two floats
/// are written alike only when they are the same `f64`: the shortest text that reads back as
/// each, `-0.0` apart from `0.0`).
pub fn same_canonical(a: &Value, b: &Value) -> bool {
    equal_with(a, b, |x, y| match (x.as_u64(), x.as_i64()) {
        (Some(u), _) => y.as_u64() == Some(u),
        (None, Some(i)) => y.as_i64() == Some(i),
        (None, None) => y.is_f64() && x.as_f64().map(f64::to_bits) == y.as_f64().map(f64::to_bits),
    })
}

/// Whether `a` and `b` are the same JSON, numbers compared by `numbers`: objects with the same
/// keys and the same values at them, in any order; arrays item by item.
pub fn equal_with(a: &Value, b: &Value, numbers: fn(&Number, &Number) -> bool) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => numbers(x, y),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| equal_with(x, y, numbers))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.field(k).is_some_and(|w| equal_with(v, w, numbers)))
        }
        _ => a == b,
    }
}

/// [`canonical`]'s text appended to `out`.
fn push_canonical(out: &mut String, value: &Value) {
    write_json(value, out, true);
}

/// Compact JSON of `value` appended to `out`: object keys sorted when `sorted`, else in the
/// value's own order; numbers, `true`, `false` and `null` as `serde_json` writes them.
fn write_json(value: &Value, out: &mut String, sorted: bool) {
    match value {
        Value::Object(map) if sorted => {
            let mut members: Vec<(&String, &Value)> = map.iter().collect();
            members.sort_unstable_by(|a, b| a.0.cmp(b.0));
            write_members(members.into_iter(), out, sorted);
        }
        Value::Object(map) => write_members(map.iter(), out, sorted),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(item, out, sorted);
            }
            out.push(']');
        }
        Value::String(s) => push_quoted(out, s),
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => out.push_str(itoa::Buffer::new().format(u)),
            (None, Some(i)) => out.push_str(itoa::Buffer::new().format(i)),
            _ => {
                let _ = write!(out, "{n}");
            }
        },
    }
}

/// A string as a JSON string literal, written straight into whatever formats it: the bytes
/// `serde_json::to_string` gives (`"` and `\\` escaped, `\n` `\r` `\t` `\b` `\f`, the other
/// control characters below U+0020 as `\u00xx`, everything else as it is), without the
/// `String` it allocates.
pub struct Quoted<'a>(pub &'a str);

impl std::fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        quote_with(self.0, f)
    }
}

/// What escaping adds to each byte in a JSON string (`\"` one, `\u001b` five): 0 for the
/// bytes written as they are.
const EXTRA: [u8; 256] = {
    let mut t = [0; 256];
    let mut b = 0;
    while b < 0x20 {
        t[b] = 5;
        b += 1;
    }
    t[b'"' as usize] = 1;
    t[b'\\' as usize] = 1;
    t[b'\n' as usize] = 1;
    t[b'\r' as usize] = 1;
    t[b'\t' as usize] = 1;
    t[0x08] = 1;
    t[0x0c] = 1;
    t
};

/// The first byte at or after `from` that a JSON string escapes (below 0x20, `"`, `\`), or
/// the length: eight bytes at a time, and in the word that holds one, straight to it.
fn next_escape(b: &[u8], from: usize) -> usize {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    // Each mask's lowest bit set is the first byte it looks for: a borrow runs only from such
    // a byte to the ones after it.
    let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    let hits = |x: u64| {
        (x.wrapping_sub(ONES * 0x20) & !x & HIGH)
            | zero(x ^ (ONES * u64::from(b'"')))
            | zero(x ^ (ONES * u64::from(b'\\')))
    };
    let Some(rest) = b.get(from..) else {
        return b.len();
    };
    let mut i = from;
    // Whole words as `chunks_exact` gives them: no bounds check a step.
    let mut words = rest.chunks_exact(8);
    for w in &mut words {
        // Always eight bytes; were a chunk ever not, its word would read as zero bytes, a hit
        // at its first byte, which the caller looks at itself: nothing is passed unseen.
        let w = <[u8; 8]>::try_from(w).unwrap_or([0; 8]);
        let hit = hits(u64::from_le_bytes(w));
        if hit != 0 {
            return i + hit.trailing_zeros() as usize / 8;
        }
        i += 8;
    }
    while i < b.len() && EXTRA[usize::from(b[i])] == 0 {
        i += 1;
    }
    i
}

/// Append [`Quoted`]'s text of `text` to `out`.
pub fn push_quoted(out: &mut String, text: &str) {
    // Room for the text as it is and its quotes; its escapes, when it has some, grow it.
    out.reserve(text.len() + 2);
    let Ok(()) = quote_with(text, out);
}

/// Where [`quote_with`] writes: runs of the text as they are, and ASCII of its own (the quotes
/// and each escape, `\"`, `\n`, `\u001b`).
trait Sink {
    type Error;
    fn piece(&mut self, text: &str) -> Result<(), Self::Error>;
    fn ascii(&mut self, bytes: &[u8]) -> Result<(), Self::Error>;
}

impl Sink for String {
    type Error = std::convert::Infallible;

    fn piece(&mut self, text: &str) -> Result<(), Self::Error> {
        self.push_str(text);
        Ok(())
    }

    fn ascii(&mut self, bytes: &[u8]) -> Result<(), Self::Error> {
        // One to six bytes, appended one by one: no copy call for each.
        for &b in bytes {
            debug_assert!(b.is_ascii(), "a quote or an escape is ASCII");
            self.push(char::from(b));
        }
        Ok(())
    }
}

impl Sink for std::fmt::Formatter<'_> {
    type Error = std::fmt::Error;

    fn piece(&mut self, text: &str) -> Result<(), Self::Error> {
        self.write_str(text)
    }

    fn ascii(&mut self, bytes: &[u8]) -> Result<(), Self::Error> {
        bytes
            .iter()
            .try_for_each(|&b| std::fmt::Write::write_char(self, char::from(b)))
    }
}

/// Write [`Quoted`]'s text of `text` to `out`.
fn quote_with<S: Sink>(text: &str, out: &mut S) -> Result<(), S::Error> {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.ascii(b"\"")?;
    let mut from = 0;
    let bytes = text.as_bytes();
    let mut i = next_escape(bytes, 0);
    while i < bytes.len() {
        let b = bytes[i];
        let short = match b {
            b'"' => b'"',
            b'\\' => b'\\',
            b'\n' => b'n',
            b'\r' => b'r',
            b'\t' => b't',
            0x08 => b'b',
            0x0c => b'f',
            0..0x20 => 0,
            _ => {
                i = next_escape(bytes, i + 1);
                continue;
            }
        };
        // Every byte escaped is ASCII, so `i` is a char boundary.
        if from < i {
            out.piece(&text[from..i])?;
        }
        from = i + 1;
        if short == 0 {
            out.ascii(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 0xf)],
            ])?;
        } else {
            out.ascii(&[b'\\', short])?;
        }
        i = next_escape(bytes, i + 1);
    }
    if from < bytes.len() {
        out.piece(&text[from..])?;
    }
    out.ascii(b"\"")
}

/// Compact JSON in the value's own key order (serde_json is built with `preserve_order`): the
/// text `serde_json::to_string` gives, written without its formatting machinery.
pub fn compact(value: &Value) -> String {
    // Room for most arguments at once, as `serde_json` starts with; growing from nothing
    // costs more than the writing saves.
    let mut out = String::with_capacity(128);
    push_compact(&mut out, value);
    out
}

/// An object's members, in the order given, for [`write_json`].
fn write_members<'a>(
    members: impl Iterator<Item = (&'a String, &'a Value)>,
    out: &mut String,
    sorted: bool,
) {
    out.push('{');
    for (i, (key, v)) in members.enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_quoted(out, key);
        out.push(':');
        write_json(v, out, sorted);
    }
    out.push('}');
}

/// Append [`compact`]'s text of `value` to `out`.
fn push_compact(out: &mut String, value: &Value) {
    write_json(value, out, false);
}

/// The length of [`Quoted`]'s text of `s` (as `serde_json` writes it).
pub fn quoted_len(s: &str) -> usize {
    2 + s.len()
        + s.bytes()
            .map(|b| usize::from(EXTRA[usize::from(b)]))
            .sum::<usize>()
}

/// The JSON kind name used in validation messages.
pub fn kind_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// IronClaw's log/status preview (`truncate_for_preview`): `max` is a byte budget; a longer
/// `s` is cut at the last char boundary at or before `max` bytes and gets `...` appended. An
/// uncut `s` is returned borrowed.
pub fn truncate_for_preview(s: &str, max: usize) -> Cow<'_, str> {
    if s.len() <= max {
        return Cow::Borrowed(s);
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!("{}...", &s[..end]))
}

/// Looking up a key of a JSON object. `serde_json` keeps an object's keys in a hash map (an
/// `IndexMap`, with its `preserve_order` feature, which the project uses), and hashing a key
/// costs more than comparing it with a few others: the objects a run looks into
/// most (schemas, arguments) have a handful of keys, so a small object is searched key by key.
/// The value found is the same either way, as an object's keys are distinct.
pub trait Lookup {
    /// The value at `key`: `None` when it is missing (or, for a [`Value`], is no object).
    fn field(&self, key: &str) -> Option<&Value>;

    /// The value at `key`, or `null`, as `serde_json` indexes (`value["key"]`).
    fn at(&self, key: &str) -> &Value {
        static NULL: Value = Value::Null;
        self.field(key).unwrap_or(&NULL)
    }
}

/// Objects of at most this many keys are searched key by key.
const SCANNED: usize = 8;

impl Lookup for serde_json::Map<String, Value> {
    fn field(&self, key: &str) -> Option<&Value> {
        if self.len() <= SCANNED {
            self.iter().find_map(|(k, v)| (k == key).then_some(v))
        } else {
            self.get(key)
        }
    }
}

impl Lookup for Value {
    fn field(&self, key: &str) -> Option<&Value> {
        self.as_object().and_then(|o| o.field(key))
    }
}

/// Does `subset` hold within `value`? Objects: every key of `subset` is present in `value` with
/// a value that (recursively) contains the subset's; everything else: equality.
pub fn contains(value: &Value, subset: &Value) -> bool {
    match subset {
        Value::Object(want) => contains_fields(value, want),
        _ => value == subset,
    }
}

/// Does `value` hold every field of `want` ([`contains`] of the object `want`)?
pub fn contains_fields(value: &Value, want: &serde_json::Map<String, Value>) -> bool {
    value.as_object().is_some_and(|have| {
        want.iter()
            .all(|(k, w)| have.field(k).is_some_and(|h| contains(h, w)))
    })
}

/// The text in a JSON value, for size limits: its strings and keys, and a byte for every
/// other scalar (a walk, no rendering).
pub fn text_bytes(v: &Value) -> usize {
    match v {
        Value::String(s) => s.len(),
        Value::Array(a) => a.iter().map(text_bytes).sum(),
        Value::Object(o) => o.iter().map(|(k, v)| k.len() + text_bytes(v)).sum(),
        Value::Null | Value::Bool(_) | Value::Number(_) => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn quoted_strings_are_the_bytes_serde_json_writes() {
        let every_char: String = (0..=0x10_ffff).filter_map(char::from_u32).collect();
        for s in [
            "",
            "plain",
            "a \"quote\" and a \\ backslash",
            "lines\nand\r\ttabs\u{8}\u{c}\u{0}\u{1f}\u{7f}\u{2028}é😀",
            &every_char,
        ] {
            assert_eq!(Quoted(s).to_string(), serde_json::to_string(s).unwrap());
            let mut pushed = "x".to_owned();
            push_quoted(&mut pushed, s);
            assert_eq!(pushed[1..], serde_json::to_string(s).unwrap());
        }
        // Each byte a string escapes, and printable ones beside them (0x20, `#`, `]`, 0x7f),
        // at every place in the first words, followed by another escape, a byte of 0x80 or
        // above or nothing.
        let mut texts = Vec::new();
        for c in (0u8..0x20).chain([b'"', b'\\', b' ', b'#', b']', 0x7f]) {
            for at in 0..18 {
                for next in ["", "\"", "\u{1}", "é", "\u{7f}"] {
                    let mut t = "a".repeat(at);
                    t.push(char::from(c));
                    t.push_str(next);
                    t.push_str(&"b".repeat(17 - at));
                    texts.push(t);
                }
            }
        }
        // Every length through the last few bytes, read as the text's last word: an escape at
        // each place, with or without another just before it.
        for len in 1..=20 {
            for at in 0..len {
                for c in ['\u{1}', '"', '\\', '#', ']', '\n'] {
                    for before in ['a', '"', '\u{0}'] {
                        let mut t: Vec<char> = vec!['x'; len];
                        t[at] = c;
                        if at > 0 {
                            t[at - 1] = before;
                        }
                        texts.push(t.into_iter().collect());
                    }
                }
            }
        }
        for t in &texts {
            let b = t.as_bytes();
            for from in 0..=b.len() {
                let want = (from..b.len())
                    .find(|&i| b[i] < 0x20 || b[i] == b'"' || b[i] == b'\\')
                    .unwrap_or(b.len());
                assert_eq!(next_escape(b, from), want, "{t:?} from {from}");
            }
            let mut pushed = String::new();
            push_quoted(&mut pushed, t);
            assert_eq!(pushed, serde_json::to_string(t).unwrap(), "{t:?}");
            assert_eq!(quoted_len(t), pushed.len(), "{t:?}");
        }
    }

    #[test]
    fn compact_and_push_compact_agree_with_serde_json() {
        for v in [
            json!(null),
            json!({}),
            json!({"command": "ls \"src\"\n", "n": 1.5e300, "a": [1, -2, true, {"é": "😀"}]}),
            json!("\u{1}\u{7f}"),
            json!([]),
            json!([
                [],
                {},
                [null, false],
                -9_223_372_036_854_775_808_i64,
                u64::MAX,
                0.1,
                -2.5e-8
            ]),
            json!({"\u{8}\u{c}\t\"\\": "\u{1f} \u{2028}"}),
        ] {
            let text = serde_json::to_string(&v).unwrap();
            assert_eq!(compact(&v), text, "{v}");
            let mut pushed = "before ".to_owned();
            push_compact(&mut pushed, &v);
            assert_eq!(pushed, format!("before {text}"), "{v}");
            assert_eq!(canonical(&v), compact(&sorted(&v)), "{v}");
        }
    }

    #[test]
    fn same_canonical_is_equal_canonical_text() {
        let leaves = [
            json!(null),
            json!(true),
            json!(false),
            json!(0),
            json!(1),
            json!(-1),
            json!(1.0),
            json!(0.0),
            json!(-0.0),
            json!(0.1),
            json!(1e300),
            json!(u64::MAX),
            json!(i64::MIN),
            json!(""),
            json!(" "),
            json!("1"),
            json!("a\n"),
        ];
        let mut values: Vec<Value> = leaves.to_vec();
        for a in &leaves {
            values.push(json!([a]));
            values.push(json!({"k": a}));
            for b in &leaves[..6] {
                values.push(json!([a, b]));
                values.push(json!({"k": a, "j": b}));
                values.push(json!({"j": b, "k": a}));
                values.push(json!({"k": a, "l": b}));
                values.push(json!({"k": [a, {"m": b}]}));
            }
        }
        // Numbers parsed from text, as a model's arguments arrive.
        for t in [
            "1",
            "1.0",
            "1e0",
            "-0",
            "-0.0",
            "10",
            "1e1",
            "18446744073709551615",
            "0.30000000000000004",
        ] {
            values.push(serde_json::from_str(t).unwrap());
        }
        let texts: Vec<String> = values.iter().map(canonical).collect();
        let mut equal = 0;
        for (a, ta) in values.iter().zip(&texts) {
            for (b, tb) in values.iter().zip(&texts) {
                assert_eq!(same_canonical(a, b), ta == tb, "{a} against {b}");
                equal += usize::from(ta == tb);
            }
        }
        // Each value equals itself, and some distinct values are written alike.
        assert!(equal > values.len(), "{equal}");
    }

    #[test]
    fn canonical_sorts_keys_recursively_and_keeps_array_order() {
        let a = json!({"b": 2, "a": {"d": [3, 1], "c": null}});
        assert_eq!(canonical(&a), r#"{"a":{"c":null,"d":[3,1]},"b":2}"#);
        assert_eq!(
            canonical(&json!({"a":1,"b":2})),
            canonical(&json!({"b":2,"a":1}))
        );
    }

    #[test]
    fn canonical_distinguishes_integer_and_float_and_inner_whitespace() {
        assert_ne!(canonical(&json!({"n": 1})), canonical(&json!({"n": 1.0})));
        assert_ne!(
            canonical(&json!({"cmd": ""})),
            canonical(&json!({"cmd": " "}))
        );
    }

    #[test]
    fn canonical_is_the_text_of_the_sorted_value() {
        for v in [
            json!({"b": 1, "a": [{"d": 1.0, "c": "\u{7}\n"}], "A": null}),
            json!([{"z": {"y": true, "x": -0.5}}, "é", 1e300]),
            json!("plain"),
        ] {
            assert_eq!(canonical(&v), serde_json::to_string(&sorted(&v)).unwrap());
        }
    }

    #[test]
    fn canonical_leaves_scalars_unchanged() {
        for v in [
            json!(null),
            json!(true),
            json!(7),
            json!(-1.5),
            json!("a \"b\""),
        ] {
            assert_eq!(canonical(&v), compact(&v), "{v}");
        }
    }

    // IronClaw E20: the five `test_truncate_*` tests of `truncate_for_preview`.

    #[test]
    fn truncate_short_string_unchanged() {
        assert_eq!(truncate_for_preview("hello", 10), "hello");
    }

    #[test]
    fn truncate_short_string_borrows() {
        assert!(matches!(
            truncate_for_preview("hello", 10),
            Cow::Borrowed("hello")
        ));
    }

    #[test]
    fn truncate_long_string_adds_ellipsis() {
        assert_eq!(truncate_for_preview("hello world", 5), "hello...");
    }

    #[test]
    fn truncate_long_string_owns() {
        assert!(matches!(
            truncate_for_preview("hello world", 5),
            Cow::Owned(_)
        ));
    }

    #[test]
    fn truncate_multibyte_safe() {
        // "café" is 5 bytes; byte 4 falls inside "é", so the cut moves back to byte 3.
        assert_eq!(truncate_for_preview("café", 4), "caf...");
    }

    #[test]
    fn lookups_find_what_serde_json_finds_in_small_and_large_objects() {
        for size in [0, 1, SCANNED - 1, SCANNED, SCANNED + 1, 40] {
            // Keys of one length and of many, so a search by length alone would be caught.
            let object: serde_json::Map<String, Value> = (0..size)
                .map(|i| (format!("k{}", "x".repeat(i % 3)) + &i.to_string(), json!(i)))
                .collect();
            let value = Value::Object(object.clone());
            let mut keys: Vec<String> = object.keys().cloned().collect();
            keys.extend(["", "k", "k0x", "missing", "k1 "].map(str::to_owned));
            for key in &keys {
                assert_eq!(object.field(key), object.get(key), "{size} keys, {key:?}");
                assert_eq!(value.field(key), value.get(key), "{size} keys, {key:?}");
                assert_eq!(value.at(key), &value[key.as_str()], "{size} keys, {key:?}");
            }
        }
        for not_an_object in [json!(null), json!([{"a": 1}]), json!("a"), json!(1)] {
            assert_eq!(not_an_object.field("a"), None);
            assert_eq!(not_an_object.at("a"), &Value::Null);
        }
    }

    #[test]
    fn contains_matches_nested_subsets() {
        let v = json!({"command": "ls", "opts": {"a": 1, "b": 2}});
        assert!(contains(&v, &json!({"opts": {"a": 1}})));
        assert!(!contains(&v, &json!({"opts": {"a": 2}})));
        assert!(contains(&v, &json!({})));
        assert!(!contains(&json!("ls"), &json!({})));
    }

    #[test]
    fn repair_closes_what_a_cut_stream_left_open() {
        for (raw, want) in [
            (r#"{"command": "ls"}"#, Some(json!({"command": "ls"}))),
            (r#"{"command": "ls""#, Some(json!({"command": "ls"}))),
            (
                r#"{"command": "git sta"#,
                Some(json!({"command": "git sta"})),
            ),
            (r#"{"a": {"b": [1, 2"#, Some(json!({"a": {"b": [1, 2]}}))),
            (r#"{"a": 1,}"#, Some(json!({"a": 1}))),
            ("{\"a\": 1 // note\n}", Some(json!({"a": 1}))),
            (
                r#"{"url": "http://x//y""#,
                Some(json!({"url": "http://x//y"})),
            ),
            (r#"{"q": "a \" b"#, Some(json!({"q": "a \" b"}))),
            (r#"{"q": "}]""#, Some(json!({"q": "}]"}))),
            (r#"[1, 2"#, Some(json!([1, 2]))),
            // A trailing comma is tidied before the closers come: no value to close.
            (r#"{"command": "ls","#, None),
            (r#"{"command":"#, None),
            (r#"{"comm"#, None),
        ] {
            assert_eq!(repair(raw), want, "{raw}");
        }
    }
}
