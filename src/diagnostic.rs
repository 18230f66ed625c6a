//! What a user is told when something is wrong, in one type: [`Diagnostic`] (the file and the
//! place in it, what is wrong, how to mend it, and the [`ExitStatus`] it ends a command with),
//! rendered by one function, [`Diagnostic::render`]. Readers report a [`Cause`] with each
//! problem, so the hint an edge adds is chosen by the kind of problem, never by reading the
//! message back.
//!
//! Pure: no files, clocks or threads; it sits below every format.

use crate::escape::escape_controls;
use std::fmt;
use std::path::{Path, PathBuf};

/// How a command ends, as its process exit code ([`ExitStatus::code`]); documented per command
/// in its `--help` and the book (`docs/`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ExitStatus {
    /// 0: everything passed (or the command did what it was asked).
    #[default]
    Ok,
    /// 1: a golden mismatch, a missing or orphaned golden, a failed expectation, or what the
    /// command checks did not hold (secrets found, a replay that differs).
    Failed,
    /// 2: bad input or usage (a malformed file, an unreadable path, a bad flag).
    BadInput,
    /// 3: every case passed, but metrics regressed against the baseline (`--baseline`).
    MetricRegression,
    /// 130: interrupted (Ctrl-C, SIGINT); what was done is reported and kept.
    Interrupted,
    /// 143: stopped by SIGTERM (`timeout`, CI cancellation, a container stop), as by Ctrl-C.
    Terminated,
    /// 129: stopped by SIGHUP (the terminal went away), as by Ctrl-C.
    HungUp,
}

impl ExitStatus {
    /// The process exit code.
    pub fn code(self) -> u8 {
        match self {
            Self::Ok => 0,
            Self::Failed => 1,
            Self::BadInput => 2,
            Self::MetricRegression => 3,
            Self::Interrupted => 130,
            Self::Terminated => 143,
            Self::HungUp => 129,
        }
    }

    /// Did the command succeed?
    pub fn is_ok(self) -> bool {
        self == Self::Ok
    }
}

impl From<ExitStatus> for std::process::ExitCode {
    fn from(s: ExitStatus) -> Self {
        Self::from(s.code())
    }
}

/// The kind of problem a reader found: what the hint is chosen by.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Cause {
    /// The bytes are not valid UTF-8.
    NotUtf8,
    /// A format version this harness does not read.
    Version,
    /// Containers nested past the limit.
    TooDeep,
    /// Cut short, or not the format at all (a syntax error).
    Syntax,
    /// A key given twice in one table.
    DuplicateKey,
    /// A key the format does not have.
    UnknownKey,
    /// A value the field does not take (one of a fixed set of names).
    UnknownVariant,
    /// A value that fits none of the forms the field takes.
    NoVariant,
    /// A count that is neither a whole number nor a range `{ min, max }` with min <= max.
    Count,
    /// A key the format requires is missing.
    MissingKey,
    /// A figure that is not a number, is negative, or is past a limit.
    Figure,
    /// Values that do not fit together.
    Inconsistent,
    /// An agent's cassette (recorded by `harness proxy`) where a scenario's is read: `exec`
    /// replays it, `run` leaves it alone inside a folder.
    AgentCassette,
    /// A value of the wrong type, or outside what it may be.
    WrongValue,
    /// Anything else.
    #[default]
    Other,
}

impl Cause {
    /// The kind of a deserializer's message (see [`Serde`]).
    pub fn of_serde(message: &str) -> Self {
        Serde::read(message).cause
    }
}

/// A deserializer's message, read. serde reports its errors only as text, in fixed phrases
/// (`unknown field `x`, expected one of `a`, `b``, `missing field`, `invalid type: …, expected
/// u32`, …), and harness's own deserializers (counts, nesting past the parser's guard) speak
/// through it too: this is the one place that reads those messages. Problems harness finds
/// itself after parsing carry their cause from where they are found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Serde<'a> {
    /// What kind of problem it is.
    pub cause: Cause,
    /// The names it quotes in backticks, in order (an unknown key, then the keys expected).
    pub quoted: Vec<&'a str>,
    /// What it says was expected (`u32`, `a string`), for wrong values.
    pub expected: &'a str,
}

impl<'a> Serde<'a> {
    /// Read `message`.
    pub fn read(message: &'a str) -> Self {
        let starts = |p: &str| message.starts_with(p);
        let cause = if message.contains("recursion limit")
            || message.contains("cannot recurse further")
            || starts("values nest deeper")
        {
            Cause::TooDeep
        } else if starts("unknown field") {
            Cause::UnknownKey
        } else if starts("unknown variant") {
            Cause::UnknownVariant
        } else if starts("missing field") {
            Cause::MissingKey
        } else if starts("duplicate key") || starts("duplicate field") {
            Cause::DuplicateKey
        } else if message.contains("did not match any variant") {
            Cause::NoVariant
        } else if starts("empty range") || starts("a count cannot") {
            Cause::Count
        } else if starts("invalid type") || starts("invalid value") || starts("invalid length") {
            Cause::WrongValue
        } else if starts("EOF while parsing")
            || message.contains("unclosed")
            || message.contains("expected `")
            || starts("expected ")
            || starts("key with no value")
            || starts("trailing")
            || starts("control character")
            || starts("invalid escape")
            || starts("invalid number")
            || starts("invalid unicode")
            || starts("lone leading surrogate")
            || starts("unexpected end")
        {
            Cause::Syntax
        } else {
            Cause::Other
        };
        let quoted = message.split('`').skip(1).step_by(2).collect();
        let expected = match cause {
            Cause::WrongValue => message.rsplit("expected ").next().unwrap_or_default(),
            _ => "",
        };
        Self {
            cause,
            quoted,
            expected,
        }
    }
}

/// A parser's error (TOML or JSON, `json`) at `line`:`col`, read once: its message, with
/// nesting past the parser's guard said as the documented limit, and its cause.
pub fn parse_error(line: usize, col: usize, message: &str, json: bool) -> Diagnostic {
    let message = message.trim();
    let cause = Cause::of_serde(message);
    let message =
        crate::limits::explain_nesting(message, json).unwrap_or_else(|| message.to_owned());
    Diagnostic::at(line, col, message).cause(cause)
}

/// The remedy for a TOML syntax slip whose words name none (text left without quotes), for
/// every TOML file harness reads.
pub fn toml_syntax_hint(message: &str) -> Option<&'static str> {
    message
        .trim_start()
        .starts_with("string values must be quoted")
        .then_some("put text in double quotes: `key = \"value\"`")
}

/// A place in a file: 1-based line and column (in chars).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in chars.
    pub col: usize,
}

/// A problem to tell the user: where (a file, a place in it), what, how to mend it, and the
/// exit status it ends a command with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// The file it is in, when it is in one (filled in by the edge that read the file).
    pub file: Option<PathBuf>,
    /// The place in the file, when there is one.
    pub at: Option<Position>,
    /// What is wrong.
    pub message: String,
    /// How to mend it.
    pub hint: Option<String>,
    /// What kind of problem it is.
    pub cause: Cause,
    /// The exit status it ends a command with ([`ExitStatus::BadInput`] unless said).
    pub status: ExitStatus,
}

impl Diagnostic {
    /// A problem with no place of its own (bad usage, an output that cannot be written).
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            file: None,
            at: None,
            message: message.into(),
            hint: None,
            cause: Cause::Other,
            status: ExitStatus::BadInput,
        }
    }

    /// A problem at `line`:`col` of the file being read.
    pub fn at(line: usize, col: usize, message: impl Into<String>) -> Self {
        Self {
            at: Some(Position { line, col }),
            ..Self::new(message)
        }
    }

    /// A problem with a whole file, reported at its start (1:1).
    pub fn whole_file(message: impl Into<String>) -> Self {
        Self::at(1, 1, message)
    }

    /// With a hint.
    #[must_use]
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// With a hint, if there is one.
    #[must_use]
    pub fn maybe_hint(mut self, hint: Option<String>) -> Self {
        self.hint = hint;
        self
    }

    /// With a hint chosen by its cause, unless it has one already.
    #[must_use]
    pub fn hint_by(mut self, choose: impl FnOnce(Cause) -> String) -> Self {
        if self.hint.is_none() {
            self.hint = Some(choose(self.cause));
        }
        self
    }

    /// Of this kind.
    #[must_use]
    pub fn cause(mut self, cause: Cause) -> Self {
        self.cause = cause;
        self
    }

    /// In `file` (unless it names one already).
    #[must_use]
    pub fn in_file(mut self, file: &Path) -> Self {
        if self.file.is_none() {
            self.file = Some(file.to_owned());
        }
        self
    }

    /// Ending the command with `status`.
    #[must_use]
    pub fn status(mut self, status: ExitStatus) -> Self {
        self.status = status;
        self
    }

    /// As one of `file`'s results (which hold their path apart): in place when it is about
    /// `file` or names no file, else at 1:1 with the file and place it is about before the
    /// message.
    #[must_use]
    pub fn for_file(self, file: &Path) -> Self {
        match &self.file {
            Some(f) if f != file => {
                let place = self.place();
                Self {
                    file: None,
                    at: Some(Position { line: 1, col: 1 }),
                    message: format!("{}{}", place, self.message),
                    ..self
                }
            }
            _ => Self {
                file: None,
                at: Some(self.at.unwrap_or(Position { line: 1, col: 1 })),
                ..self
            },
        }
    }

    /// 1-based line (1 when it has no place).
    pub fn line(&self) -> usize {
        self.at.map_or(1, |p| p.line)
    }

    /// 1-based column (1 when it has no place).
    pub fn col(&self) -> usize {
        self.at.map_or(1, |p| p.col)
    }

    /// `FILE:LINE:COL: ` (or `FILE: `, or nothing), as the message's prefix.
    fn place(&self) -> String {
        match (&self.file, self.at) {
            (Some(f), Some(p)) => format!(
                "{}:{}:{}: ",
                escape_controls(&f.display().to_string()),
                p.line,
                p.col
            ),
            (Some(f), None) => format!("{}: ", escape_controls(&f.display().to_string())),
            (None, Some(p)) => format!("{}:{}: ", p.line, p.col),
            (None, None) => String::new(),
        }
    }

    /// [`Diagnostic::render`] of this diagnostic in `file` when it names none (a file's result
    /// holds its path apart from its diagnostics).
    pub fn render_in(&self, file: &Path, style: &Style) -> String {
        if self.file.is_some() {
            return self.render(style);
        }
        Self {
            file: Some(file.to_owned()),
            ..self.clone()
        }
        .render(style)
    }

    /// [`Diagnostic::render_in`] without the leading `error: `: for outputs that say it their
    /// own way (a JUnit error's text).
    pub fn describe_in(&self, file: &Path) -> String {
        let text = self.render_in(file, &Style::default());
        text.strip_prefix("error: ").unwrap_or(&text).to_owned()
    }

    /// The diagnostic as the commands print it, with `style` around its parts:
    /// `error: FILE:LINE:COL: message`, then `  hint: …` on a line of its own. Control
    /// characters (line breaks too) are spelled out, so one line means one thing.
    pub fn render(&self, style: &Style) -> String {
        let mut out = format!(
            "{}error{}{}: {}{}{}\n",
            style.error.0,
            style.error.1,
            style.message.0,
            self.place(),
            escape_controls(&self.message),
            style.message.1
        );
        if let Some(h) = &self.hint {
            out.push_str(&format!(
                "  {}hint{}: {}\n",
                style.hint.0,
                style.hint.1,
                escape_controls(h)
            ));
        }
        out
    }
}

/// What goes around each part of a rendered diagnostic (colours on a terminal, nothing by
/// default): before and after the word `error`, the place and message, and the word `hint`.
#[derive(Debug, Clone, Default)]
pub struct Style {
    /// Around `error`.
    pub error: (String, String),
    /// Around the place and message.
    pub message: (String, String),
    /// Around `hint`.
    pub hint: (String, String),
}

impl fmt::Display for Diagnostic {
    /// The plain rendering, without the final newline.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.render(&Style::default()).trim_end_matches('\n'))
    }
}

impl std::error::Error for Diagnostic {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diagnostic_renders_its_place_message_and_hint() {
        let d = Diagnostic::at(3, 7, "unknown field `x`")
            .hint("did you mean `y`?")
            .in_file(Path::new("s/a.toml"));
        assert_eq!(
            d.render(&Style::default()),
            "error: s/a.toml:3:7: unknown field `x`\n  hint: did you mean `y`?\n"
        );
        assert_eq!(
            Diagnostic::new("no case selected").to_string(),
            "error: no case selected"
        );
        let file_only = Diagnostic::new("cannot read").in_file(Path::new("b.toml"));
        assert_eq!(file_only.to_string(), "error: b.toml: cannot read");
        assert_eq!((file_only.line(), file_only.col()), (1, 1));
    }

    #[test]
    fn control_characters_of_the_input_are_spelled_out() {
        let d = Diagnostic::at(1, 1, "bad `a\u{1b}[2J`\nsecond line")
            .in_file(Path::new("x\ny.toml"))
            .hint("h\u{7}");
        assert_eq!(
            d.to_string(),
            "error: x\\ny.toml:1:1: bad `a\\u{1b}[2J`\\nsecond line\n  hint: h\\u{7}"
        );
    }

    #[test]
    fn serde_messages_are_read_into_causes_once() {
        for (message, cause) in [
            ("unknown field `a`, expected `b`", Cause::UnknownKey),
            (
                "unknown variant `x`, expected one of `a`",
                Cause::UnknownVariant,
            ),
            (
                "data did not match any variant of untagged enum D",
                Cause::NoVariant,
            ),
            ("a count cannot be negative", Cause::Count),
            ("recursion limit exceeded", Cause::TooDeep),
            ("missing field `version`", Cause::MissingKey),
            ("duplicate key", Cause::DuplicateKey),
            ("duplicate field `version`", Cause::DuplicateKey),
            (
                "invalid type: string \"four\", expected u32",
                Cause::WrongValue,
            ),
            (
                "invalid value: integer `-892`, expected u64",
                Cause::WrongValue,
            ),
            ("EOF while parsing a value", Cause::Syntax),
            ("unclosed table, expected `]`", Cause::Syntax),
            ("expected `,` or `}`", Cause::Syntax),
            ("something else", Cause::Other),
        ] {
            assert_eq!(Cause::of_serde(message), cause, "{message}");
        }
        let read = Serde::read("unknown field `tool_offerd`, expected one of `a`, `b`");
        assert_eq!(read.quoted, ["tool_offerd", "a", "b"]);
        assert_eq!(
            Serde::read("invalid type: string \"x\", expected u32").expected,
            "u32"
        );
    }

    #[test]
    fn exit_statuses_have_their_documented_codes() {
        let codes: Vec<u8> = [
            ExitStatus::Ok,
            ExitStatus::Failed,
            ExitStatus::BadInput,
            ExitStatus::MetricRegression,
            ExitStatus::Interrupted,
            ExitStatus::Terminated,
            ExitStatus::HungUp,
        ]
        .iter()
        .map(|s| s.code())
        .collect();
        assert_eq!(codes, [0, 1, 2, 3, 130, 143, 129]);
    }
}
