//! Message templates: the texts of `Config` with `{key}` placeholders, filled as the runtimes
//! fill theirs (each pair in turn, with `str::replace`), and read once where a run fills one
//! many times.

use super::Config;

/// Replace `{key}` placeholders in a message template: each pair in turn, in the text the
/// ones before it left (as `str::replace` would, one pair after the other).
pub(crate) fn fill(template: &str, pairs: &[(&str, &str)]) -> String {
    let mut out = std::borrow::Cow::Borrowed(template);
    for (key, value) in pairs {
        if let Some(replaced) = replace_placeholder(&out, key, value) {
            out = std::borrow::Cow::Owned(replaced);
        }
    }
    out.into_owned()
}

/// A message template read once for its placeholders, to fill it many times (a run's tool
/// failures, its nudges, a plan's steps) with what [`fill`] gives for the same pairs: in one
/// pass over its pieces where that gives the same text, else pair by pair.
///
/// One pass gives [`fill`]'s text when no pair can make a placeholder out of the text another
/// left. A placeholder made so needs a `{` that starts none: every `{` of the template starts
/// one of the keys' placeholders or is followed by a character that can neither begin a key
/// (keys are ASCII letters, digits and `_`) nor be a placeholder's `{` (else the template is
/// not [`Template::is_plain`]), and no `{` of a value is followed there by a later key and
/// `}`, or by the start of one at the value's end. Otherwise [`Template::try_fill`]
/// says `None`, and [`Template::fill`] fills pair by pair.
pub(crate) struct Template {
    text: Box<str>,
    /// The keys it was read for, in the order they are filled.
    keys: &'static [&'static str],
    /// The pieces in order, when one pass gives [`fill`]'s text.
    pieces: Option<Vec<Piece>>,
}

#[derive(Clone, Copy)]
enum Piece {
    /// The template's own text between these bytes.
    Text(usize, usize),
    /// The value of the key at this index.
    Key(usize),
}

impl Template {
    /// `text` read for the placeholders of `keys` (ASCII letters, digits and `_`: the test of
    /// the character after a brace of the template's own holds for such keys only).
    pub(crate) fn new(text: &str, keys: &'static [&'static str]) -> Self {
        debug_assert!(
            keys.iter().all(|k| !k.is_empty()
                && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')),
            "{keys:?}"
        );
        let bytes = text.as_bytes();
        let mut pieces = Vec::new();
        let (mut from, mut i) = (0, 0);
        while let Some(at) = memchr::memchr(b'{', &bytes[i..]) {
            let start = i + at;
            let key = keys.iter().position(|k| {
                let end = start + 1 + k.len();
                bytes.get(start + 1..end) == Some(k.as_bytes()) && bytes.get(end) == Some(&b'}')
            });
            match key {
                Some(k) => {
                    if from < start {
                        pieces.push(Piece::Text(from, start));
                    }
                    pieces.push(Piece::Key(k));
                    from = start + keys[k].len() + 2;
                    i = from;
                }
                // A brace of the template's own: a value put in after it could complete a
                // placeholder only if a key's character (or a placeholder, which a value
                // replaces) follows it.
                None => match bytes.get(start + 1) {
                    Some(b) if b.is_ascii_alphanumeric() || matches!(b, b'_' | b'{') => {
                        return Self {
                            text: text.into(),
                            keys,
                            pieces: None,
                        };
                    }
                    _ => i = start + 1,
                },
            }
        }
        if from < text.len() {
            pieces.push(Piece::Text(from, text.len()));
        }
        Self {
            text: text.into(),
            keys,
            pieces: Some(pieces),
        }
    }

    /// Whether the template is filled in one pass (given values without braces).
    pub(crate) fn is_plain(&self) -> bool {
        self.pieces.is_some()
    }

    /// Whether the template has the placeholder of key `k` (known when it is plain).
    pub(crate) fn uses(&self, k: usize) -> bool {
        self.pieces
            .iter()
            .flatten()
            .any(|p| matches!(p, Piece::Key(x) if *x == k))
    }

    /// Whether a `{` of `value` could start the placeholder of one of `later`: followed in the
    /// value by the key and `}`, or by the start of that at its end (the text after it could
    /// complete it).
    fn could_complete(later: &[&str], value: &str) -> bool {
        !later.is_empty()
            && memchr::memchr_iter(b'{', value.as_bytes()).any(|at| {
                let rest = &value.as_bytes()[at + 1..];
                later.iter().any(|key| {
                    let key = key.as_bytes();
                    let n = rest.len().min(key.len());
                    rest[..n] == key[..n] && rest.get(key.len()).is_none_or(|b| *b == b'}')
                })
            })
    }

    /// The template filled with `values` (one per key, in the keys' order), as [`fill`] fills
    /// it with the pairs in that order.
    pub(crate) fn fill(&self, values: &[&str]) -> String {
        self.try_fill(values).unwrap_or_else(|| {
            let pairs: Vec<(&str, &str)> = self
                .keys
                .iter()
                .copied()
                .zip(values.iter().copied())
                .collect();
            fill(&self.text, &pairs)
        })
    }

    /// [`Template::fill`] in one pass; `None` when one pass cannot say (see [`Template`]).
    pub(crate) fn try_fill(&self, values: &[&str]) -> Option<String> {
        let pieces = self.pieces.as_ref()?;
        if values.len() != self.keys.len()
            || values
                .iter()
                .enumerate()
                .any(|(k, v)| Self::could_complete(&self.keys[k + 1..], v))
        {
            return None;
        }
        let len = pieces
            .iter()
            .map(|p| match *p {
                Piece::Text(a, b) => b - a,
                Piece::Key(k) => values[k].len(),
            })
            .sum();
        let mut out = String::with_capacity(len);
        for p in pieces {
            match *p {
                Piece::Text(a, b) => out.push_str(&self.text[a..b]),
                Piece::Key(k) => out.push_str(values[k]),
            }
        }
        Some(out)
    }
}

/// `text` with every `{key}` replaced by `value`, left to right; `None` when it has none. A
/// template is short and its placeholders few: it looks only where a `{` is.
fn replace_placeholder(text: &str, key: &str, value: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out: Option<String> = None;
    let (mut from, mut i) = (0, 0);
    // `i` is always just past an ASCII byte (or 0): a char boundary.
    while let Some(at) = memchr::memchr(b'{', &bytes[i..]) {
        let start = i + at;
        let end = start + 1 + key.len();
        if bytes.get(start + 1..end) == Some(key.as_bytes()) && bytes.get(end) == Some(&b'}') {
            let o = out.get_or_insert_with(|| String::with_capacity(text.len() + value.len()));
            o.push_str(&text[from..start]);
            o.push_str(value);
            from = end + 1;
            i = from;
        } else {
            i = start + 1;
        }
    }
    out.map(|mut o| {
        o.push_str(&text[from..]);
        o
    })
}

/// A profile's messages for a failed call, each read once for its placeholders.
pub(crate) struct FailureMessages {
    /// `tool_error_message`: `{name}`, `{error}`, `{error_json}` (the error as a JSON string).
    error: Template,
    /// `tool_fail_message`: `{name}`.
    fail: Template,
}

impl FailureMessages {
    /// The keys of `tool_error_message`, in the order they are filled.
    const ERROR_KEYS: [&'static str; 3] = ["name", "error", "error_json"];
    /// `{error_json}`'s place among them.
    const ERROR_JSON: usize = 2;

    pub(crate) fn new(config: &Config) -> Self {
        Self {
            error: Template::new(&config.tool_error_message, &Self::ERROR_KEYS),
            fail: Template::new(&config.tool_fail_message, &["name"]),
        }
    }

    /// The message of a call that failed with `error`.
    pub(crate) fn error(&self, name: &str, error: &str) -> String {
        // The error as a JSON string (`serde_json::to_string`'s bytes), when it is asked for:
        // the template has its placeholder, or is filled pair by pair, where a value could
        // make one.
        let json = || {
            let mut error_json = String::with_capacity(error.len() + 2);
            crate::json::push_quoted(&mut error_json, error);
            error_json
        };
        if self.error.is_plain() && !self.error.uses(Self::ERROR_JSON) {
            if let Some(text) = self.error.try_fill(&[name, error, ""]) {
                return text;
            }
        }
        self.error.fill(&[name, error, &json()])
    }

    /// The message of a call that failed without saying why.
    pub(crate) fn failed(&self, name: &str) -> String {
        self.fail.fill(&[name])
    }
}

#[cfg(test)]
mod tests {
    use super::{FailureMessages, Template, fill};
    use crate::policy::Config;

    /// Each pair replaced in turn with `str::replace`, as the templates' upstreams do.
    fn in_turn(template: &str, pairs: &[(&str, &str)]) -> String {
        let mut out = template.to_owned();
        for (key, value) in pairs {
            out = out.replace(&format!("{{{key}}}"), value);
        }
        out
    }

    /// Templates with braces of every kind: placeholders, the template's own, and both meeting.
    const TEMPLATES: [&str; 24] = [
        // A value's brace before a placeholder of a later key, or before the template's text.
        "{name}}",
        "{name}{error}",
        "{name}or}",
        "",
        "no placeholder",
        "{name}",
        "Tool {name} failed: {error}",
        "{{name}}",
        "{name{name}}",
        "{error}{name}{error_json}{",
        "{",
        "}{name",
        "é{name}ü{error}",
        "{{error}",
        // A placeholder made of the template's text around a value put in before it.
        "{err{name}}",
        "{{name}error}",
        "{name}{error}{name}",
        "}{error}{",
        // Braces of the template's own, far from a placeholder or near one.
        "{\"error\":{error_json}}",
        "{\"e\": {error}, \"n\": \"{name}\"}",
        "{e{name}",
        "{ {error}",
        "{error{",
        "{error{name}",
    ];

    /// Values that can meet a template's braces, or make placeholders of their own.
    const VALUES: [&str; 17] = [
        // Braces that a later key's placeholder could close, in part or whole.
        "{error",
        "{error_",
        "error_json}",
        "json}",
        "",
        "x",
        "error",
        "name",
        "{error}",
        "{",
        "é",
        "{name}",
        "or",
        "}",
        "{err",
        "or}",
        "{\"a\":1}",
    ];

    #[test]
    fn fill_replaces_each_pair_in_the_text_the_ones_before_left() {
        let (templates, values) = (TEMPLATES, VALUES);
        for t in templates {
            for a in values {
                for b in values {
                    let pairs = [("name", a), ("error", b)];
                    assert_eq!(fill(t, &pairs), in_turn(t, &pairs), "{t:?} {pairs:?}");
                    for c in ["", "{name}", "{error}"] {
                        let three = [("name", a), ("error", b), ("name", c)];
                        assert_eq!(fill(t, &three), in_turn(t, &three), "{t:?} {three:?}");
                    }
                }
            }
        }
        assert_eq!(fill("{name} {name}", &[("name", "x")]), "x x");
    }

    #[test]
    fn a_template_read_once_fills_as_pair_by_pair_or_says_it_cannot() {
        let keys: &[&str] = &["name", "error", "error_json"];
        let mut one_pass = 0;
        for t in TEMPLATES {
            let template = Template::new(t, keys);
            for a in VALUES {
                for b in VALUES {
                    for c in ["", "\"x\"", "{error}", "{name}"] {
                        let pairs = [("name", a), ("error", b), ("error_json", c)];
                        assert_eq!(
                            template.fill(&[a, b, c]),
                            fill(t, &pairs),
                            "{t:?} {pairs:?}"
                        );
                        match template.try_fill(&[a, b, c]) {
                            Some(text) => {
                                one_pass += 1;
                                assert_eq!(text, fill(t, &pairs), "{t:?} {pairs:?}");
                            }
                            // Only where a pair could make a placeholder of another's text.
                            None => assert!(
                                !template.is_plain()
                                    || [a, b, c].iter().any(|v| v.contains(['{', '}'])),
                                "{t:?} {pairs:?}"
                            ),
                        }
                    }
                }
            }
        }
        assert!(one_pass > 300, "{one_pass}");
        // The profiles' own templates are read once; those where a value could complete a
        // placeholder with the template's braces are not.
        for t in [
            "Error: {error}",
            "Error: tool `{name}` failed",
            "Tool '{name}' failed: {error}",
            "{\"error\":{error_json}}",
            "{\"result\":{\"success\":false}}",
            "{ {error}",
            "{",
            "{}",
        ] {
            assert!(Template::new(t, keys).is_plain(), "{t:?}");
        }
        for t in [
            "{err{name}}",
            "{{name}}",
            "{e{name}",
            "{error{",
            "{_",
            "{9{name}",
        ] {
            assert!(!Template::new(t, keys).is_plain(), "{t:?}");
        }
        // A key the template was not read for stays as written, as pair by pair.
        let t = Template::new("{name} {error}", &["name"]);
        assert!(!t.is_plain());
        // Too few values: not filled in one pass.
        assert_eq!(Template::new("{name}", keys).try_fill(&["x"]), None);
        let t = Template::new("a {error_json} b {name}", keys);
        assert!(t.uses(2) && t.uses(0) && !t.uses(1));
        assert_eq!(
            t.try_fill(&["n", "e", "\"j\""]).as_deref(),
            Some("a \"j\" b n")
        );
    }

    #[test]
    fn failure_messages_read_once_are_those_filled_pair_by_pair() {
        // What the messages were before they were read once: the pairs in turn, `{error_json}`
        // last.
        let in_turn = |config: &Config, name: &str, error: Option<&str>| match error {
            None => fill(&config.tool_fail_message, &[("name", name)]),
            Some(e) => fill(
                &config.tool_error_message,
                &[
                    ("name", name),
                    ("error", e),
                    ("error_json", &serde_json::to_string(e).unwrap()),
                ],
            ),
        };
        let errors = [
            "",
            "no such file",
            "invalid arguments: {\"path\": null}",
            "{error_json}",
            "{error}",
            "{name}",
            "ends with {err",
            "ends with {",
            "\"quoted\" \\ é \u{1}",
        ];
        let names = ["exec", "{error}", "{err", "a{error_json}", "n{"];
        let mut templates: Vec<(String, String)> = crate::policy::PROFILES
            .iter()
            .map(|p| {
                let c = (p.config)();
                (c.tool_error_message, c.tool_fail_message)
            })
            .collect();
        assert!(templates.len() >= 4, "{templates:?}");
        templates.extend(
            [
                "{\"error\":{error_json},\"tool\":\"{name}\"}",
                "{err{name}}: {error}",
                "{name}: {error_json} / {error}",
                "{{name}}",
            ]
            .map(|t| (t.to_owned(), t.to_owned())),
        );
        for (error_message, fail_message) in templates {
            let config = Config {
                tool_error_message: error_message,
                tool_fail_message: fail_message,
                ..Config::none()
            };
            let m = FailureMessages::new(&config);
            for name in names {
                assert_eq!(m.failed(name), in_turn(&config, name, None), "{name:?}");
                for error in errors {
                    assert_eq!(
                        m.error(name, error),
                        in_turn(&config, name, Some(error)),
                        "{:?} {name:?} {error:?}",
                        config.tool_error_message
                    );
                }
            }
        }
    }
}
