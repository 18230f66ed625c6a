//! The book's unverifiable-citation check (chapter 63, "检测 Agent 的幻觉", `verifyCodeClaims`).
//!
//! Owns the `file:line` pattern and the verification rule. It reads no files: the caller hands
//! in the workspace as a map from path to line count, so the check stays pure and replayable.
//! What a high risk does (the book injects a warning above 0.5) is the caller's decision.
//!
//! The book's TypeScript is reproduced with its quirks, because a regression harness must
//! reproduce what the runtime would have concluded, not what it meant to conclude:
//! - the pattern `(\S+\.\w{1,4}):(\d+)` greedily swallows leading punctuation, so
//!   `(src/a.rs:3)` cites the file `(src/a.rs`;
//! - `ref.split(":")` takes the file before the *first* colon and the line between the first and
//!   second colon, so URL-like `http://x.io:80` matches but cites the file `http` at line
//!   `//x.io`, which `parseInt` makes `NaN`, so it is never verified;
//! - `parseInt(line) <= length` accepts line 0 (and any non-positive number).

use regex_lite::Regex;
use std::collections::BTreeMap;
use std::sync::LazyLock;

/// The book's `/(\S+\.\w{1,4}):(\d+)/g`, spelled for regex-lite. JS `\w` and `\d` are ASCII like
/// regex-lite's, but JS `\s` also covers the Unicode spaces below, whereas regex-lite's is
/// ASCII-only, so `\S` is written out as the complement of JavaScript's whitespace set.
const PATTERN: &str = r"[^\t\n\x0B\x0C\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}]+\.[A-Za-z0-9_]{1,4}:[0-9]+";

/// Compiled once. `None` would mean the constant above does not compile, which
/// `pattern_compiles` rules out; keeping it an `Option` avoids a panic path in library code.
static REFERENCE: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(PATTERN).ok());

/// Every `file:line` reference in the text, in order, as JavaScript's `text.match(/…/g)` returns
/// them (whole matches, non-overlapping, leftmost first, each as long as the greedy pattern
/// makes it).
pub fn references(text: &str) -> Vec<String> {
    let Some(re) = REFERENCE.as_ref() else {
        return Vec::new();
    };
    re.find_iter(text).map(|m| m.as_str().to_owned()).collect()
}

/// The outcome of [`verify`]: the book's `ClaimVerification`.
#[derive(Debug, Clone, PartialEq)]
pub struct Verification {
    /// References whose file exists with at least that many lines, in text order.
    pub verified: Vec<String>,
    /// The other references, in text order.
    pub unverified: Vec<String>,
    /// `unverified / references`, or 0.0 when the text cites nothing (the book would divide
    /// 0 by 0 and get `NaN`, which compares false with its 0.5 threshold, i.e. no warning).
    pub risk: f64,
}

/// Check every reference in `text` against `workspace`, a map from workspace-relative path
/// (normalized: no `.`, `..` or empty segments) to its line count. The book counts lines as
/// `content.split("\n").length`, so a file ending in a newline has one more line than it shows;
/// the caller decides which count to pass.
pub fn verify(text: &str, workspace: &BTreeMap<String, u32>) -> Verification {
    let refs = references(text);
    let (verified, unverified): (Vec<String>, Vec<String>) = refs
        .iter()
        .cloned()
        .partition(|r| is_verified(r, workspace));
    let risk = if refs.is_empty() {
        0.0
    } else {
        // Reference counts are far below 2^52, so the casts are exact.
        unverified.len() as f64 / refs.len() as f64
    };
    Verification {
        verified,
        unverified,
        risk,
    }
}

/// The book's per-reference test: `const [file, line] = ref.split(":")`, the file exists under
/// the workspace, and `parseInt(line) <= lineCount`.
fn is_verified(reference: &str, workspace: &BTreeMap<String, u32>) -> bool {
    let mut parts = reference.split(':');
    let file = parts.next().unwrap_or_default();
    let line = parts.next().unwrap_or_default();
    let Some(&count) = workspace.get(&join_relative(file)) else {
        return false;
    };
    // NaN compares false with everything, so an unparsable line is never verified.
    js_parse_int(line).is_some_and(|n| n <= f64::from(count))
}

/// The workspace-relative key `path.join(workspacePath, file)` would reach: Node's `join`
/// concatenates and then normalizes, so a leading `./` or `/` and doubled slashes vanish and
/// `..` climbs. A `..` that climbs out of the workspace is kept, so it matches no normalized key.
fn join_relative(file: &str) -> String {
    let mut segments: Vec<&str> = Vec::new();
    for segment in file.split('/') {
        match segment {
            "" | "." => {}
            ".." if segments.last().is_some_and(|s| *s != "..") => {
                segments.pop();
            }
            other => segments.push(other),
        }
    }
    segments.join("/")
}

/// JavaScript's `parseInt(s)` with no radix: optional leading whitespace and sign, a `0x`
/// prefix switching to hexadecimal, then the longest run of digits; `None` stands for `NaN`.
/// Kept as `f64` because that is what JavaScript compares, and it cannot overflow.
fn js_parse_int(s: &str) -> Option<f64> {
    let s = s.trim_start();
    let (negative, s) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let (radix, digits) = match s.get(..2) {
        Some("0x" | "0X") => (16, &s[2..]),
        _ => (10, s),
    };
    let mut value: Option<f64> = None;
    for c in digits.chars() {
        let Some(d) = c.to_digit(radix) else { break };
        value = Some(value.unwrap_or(0.0) * f64::from(radix) + f64::from(d));
    }
    value.map(|v| if negative { -v } else { v })
}

#[cfg(test)]
mod tests {
    use super::{PATTERN, REFERENCE, js_parse_int, references, verify};
    use std::collections::BTreeMap;

    fn workspace() -> BTreeMap<String, u32> {
        BTreeMap::from([
            ("src/a.rs".to_owned(), 10),
            ("src/auth.ts".to_owned(), 120),
            ("x.io".to_owned(), 100),
            ("http".to_owned(), 100),
        ])
    }

    #[test]
    fn pattern_compiles() {
        assert!(REFERENCE.is_some(), "{PATTERN}");
    }

    #[test]
    fn references_in_order_as_whole_matches() {
        assert_eq!(
            references("See src/a.rs:3 and lib/b.ts:40, then src/a.rs:3 again."),
            vec!["src/a.rs:3", "lib/b.ts:40", "src/a.rs:3"]
        );
    }

    #[test]
    fn references_follow_the_greedy_pattern() {
        // Greedy `\S+` takes the last viable dot, so a dotted directory stays in the file.
        assert_eq!(references("a.b/c.rs:5"), vec!["a.b/c.rs:5"]);
        // `\w{1,4}` must run up to the colon: a five-letter extension does not match, and an
        // earlier dot does not help because its extension is not followed by the colon.
        assert!(references("notes.plain:5").is_empty());
        assert!(references("x.md.plain:5").is_empty());
        // A second colon ends the line number; the remainder is not a new match.
        assert_eq!(references("a.rs:12:3"), vec!["a.rs:12"]);
        // Leading punctuation is part of `\S+`.
        assert_eq!(references("(src/a.rs:3)"), vec!["(src/a.rs:3"]);
        // No-break space is JavaScript whitespace, so it splits tokens as a space would.
        assert_eq!(references("x\u{A0}src/a.rs:3"), vec!["src/a.rs:3"]);
    }

    #[test]
    fn no_references_risk_zero() {
        let v = verify("All tests pass.", &workspace());
        assert!(v.verified.is_empty() && v.unverified.is_empty());
        assert!(v.risk.abs() < f64::EPSILON, "{}", v.risk);
    }

    #[test]
    fn mixed() {
        let v = verify(
            "Fixed src/auth.ts:42 and src/a.rs:7; see also src/gone.rs:1 and src/a.rs:11.",
            &workspace(),
        );
        assert_eq!(v.verified, vec!["src/auth.ts:42", "src/a.rs:7"]);
        assert_eq!(v.unverified, vec!["src/gone.rs:1", "src/a.rs:11"]);
        assert!((v.risk - 0.5).abs() < f64::EPSILON, "{}", v.risk);
    }

    #[test]
    fn dot_slash_prefix_is_joined_away() {
        let v = verify("./src/a.rs:3", &workspace());
        assert_eq!(v.verified, vec!["./src/a.rs:3"]);
        assert!(v.risk.abs() < f64::EPSILON);
        // `path.join` also drops a leading slash and resolves `..` inside the workspace.
        let v = verify("/src/a.rs:3 src/../src/a.rs:4 ../src/a.rs:5", &workspace());
        assert_eq!(v.verified, vec!["/src/a.rs:3", "src/../src/a.rs:4"]);
        assert_eq!(v.unverified, vec!["../src/a.rs:5"]);
    }

    #[test]
    fn line_bounds() {
        let v = verify("src/a.rs:10 src/a.rs:11 src/a.rs:0", &workspace());
        assert_eq!(v.verified, vec!["src/a.rs:10", "src/a.rs:0"]);
        assert_eq!(v.unverified, vec!["src/a.rs:11"]);
    }

    #[test]
    fn missing_file() {
        let v = verify("src/b.rs:1", &workspace());
        assert_eq!(v.unverified, vec!["src/b.rs:1"]);
        assert!((v.risk - 1.0).abs() < f64::EPSILON);
    }

    #[test]
    fn url_like_matches_but_never_verifies() {
        // The pattern matches the whole URL; `split(":")` then cites file `http` at line
        // `//x.io`, which parses to NaN. Neither `x.io` nor `http` existing helps.
        assert_eq!(references("see http://x.io:80 now"), vec!["http://x.io:80"]);
        let v = verify("see http://x.io:80 now", &workspace());
        assert_eq!(v.unverified, vec!["http://x.io:80"]);
        assert!(v.verified.is_empty());
        assert!((v.risk - 1.0).abs() < f64::EPSILON);
    }

    #[test]
    fn leading_punctuation_breaks_verification() {
        let v = verify("(src/a.rs:3)", &workspace());
        assert_eq!(v.unverified, vec!["(src/a.rs:3"]);
    }

    #[test]
    fn parse_int_like_javascript() {
        assert_eq!(js_parse_int("42"), Some(42.0));
        assert_eq!(js_parse_int("12abc"), Some(12.0));
        assert_eq!(js_parse_int("-3"), Some(-3.0));
        assert_eq!(js_parse_int("0x1A"), Some(26.0));
        assert_eq!(js_parse_int("//x.io"), None);
        assert_eq!(js_parse_int(""), None);
        assert_eq!(js_parse_int("0x"), None);
    }
}
