//! A golden mismatch side by side: the unified diff (golden → actual) the run recorded, read
//! back into its hunks, each removed line beside the added line it became, the changed words
//! marked (`<del>` and `<ins>`, struck through and underlined, with − and + in the margin, so
//! no colour is needed). Pure.

use super::{Html, escape};
use similar::{ChangeTag, TextDiff};
use std::fmt::Write as _;

/// Lines longer than this are marked changed as a whole: a word diff of megabyte-long tool
/// outputs would cost more than it shows.
const MAX_WORD_DIFF_CHARS: usize = 20_000;

/// One row of the side-by-side table.
#[derive(Debug, PartialEq)]
enum Row<'a> {
    /// A hunk starts: its first old and new line numbers.
    Hunk(&'a str),
    /// The same on both sides.
    Same(usize, usize, &'a str),
    /// Changed: the old line (if any) and the new line (if any).
    Changed(Option<(usize, &'a str)>, Option<(usize, &'a str)>),
}

/// `@@ -12,7 +12,8 @@` → (12, 12).
fn hunk_start(header: &str) -> Option<(usize, usize)> {
    let mut parts = header.split(' ');
    let _ = parts.next()?;
    let old = parts.next()?.strip_prefix('-')?;
    let new = parts.next()?.strip_prefix('+')?;
    let first = |s: &str| s.split(',').next()?.parse::<usize>().ok();
    Some((first(old)?, first(new)?))
}

fn rows(diff: &str) -> Vec<Row<'_>> {
    let mut out = Vec::new();
    let (mut old_n, mut new_n) = (1, 1);
    let mut removed: Vec<(usize, &str)> = Vec::new();
    let mut added: Vec<(usize, &str)> = Vec::new();
    fn flush<'a>(
        out: &mut Vec<Row<'a>>,
        removed: &mut Vec<(usize, &'a str)>,
        added: &mut Vec<(usize, &'a str)>,
    ) {
        let n = removed.len().max(added.len());
        let mut r = removed.drain(..);
        let mut a = added.drain(..);
        for _ in 0..n {
            out.push(Row::Changed(r.next(), a.next()));
        }
    }
    for line in diff.lines() {
        if line.starts_with("--- ") || line.starts_with("+++ ") {
            continue;
        }
        if line.starts_with("@@") {
            flush(&mut out, &mut removed, &mut added);
            if let Some((o, n)) = hunk_start(line) {
                (old_n, new_n) = (o, n);
            }
            out.push(Row::Hunk(line));
        } else if let Some(text) = line.strip_prefix('-') {
            removed.push((old_n, text));
            old_n += 1;
        } else if let Some(text) = line.strip_prefix('+') {
            added.push((new_n, text));
            new_n += 1;
        } else if line.starts_with('\\') {
            // "\ No newline at end of file": about the line before, not a line.
        } else {
            flush(&mut out, &mut removed, &mut added);
            out.push(Row::Same(
                old_n,
                new_n,
                line.strip_prefix(' ').unwrap_or(line),
            ));
            old_n += 1;
            new_n += 1;
        }
    }
    flush(&mut out, &mut removed, &mut added);
    out
}

/// The two sides of a changed pair with the changed words wrapped in `tag`.
fn words(old: &str, new: &str) -> (String, String) {
    if old.len() > MAX_WORD_DIFF_CHARS || new.len() > MAX_WORD_DIFF_CHARS {
        return (
            format!("<del>{}</del>", escape(old)),
            format!("<ins>{}</ins>", escape(new)),
        );
    }
    let (mut l, mut r) = (String::new(), String::new());
    let diff = TextDiff::from_words(old, new);
    for c in diff.iter_all_changes() {
        let v = escape(c.value());
        match c.tag() {
            ChangeTag::Equal => {
                l.push_str(&v);
                r.push_str(&v);
            }
            ChangeTag::Delete => {
                let _ = write!(l, "<del>{v}</del>");
            }
            ChangeTag::Insert => {
                let _ = write!(r, "<ins>{v}</ins>");
            }
        }
    }
    (l, r)
}

/// The unified diff as a side-by-side table.
pub(super) fn side_by_side(diff: &str) -> Html {
    let rows = rows(diff);
    let mut h = String::from(
        "<table class=\"diff\"><caption>The golden on the left, this run on the right; removed words struck through, added words underlined; unchanged lines cut to one line (the timeline has them whole)</caption><colgroup><col class=\"ln\"><col><col class=\"ln\"><col></colgroup><thead><tr><th scope=\"col\" colspan=\"2\">golden</th><th scope=\"col\" colspan=\"2\">actual</th></tr></thead><tbody>",
    );
    for row in rows {
        match row {
            Row::Hunk(header) => {
                let _ = write!(
                    h,
                    "<tr class=\"hunk\"><td colspan=\"4\">{}</td></tr>",
                    escape(header)
                );
            }
            Row::Same(o, n, text) => {
                let t = escape(text);
                let _ = write!(
                    h,
                    "<tr class=\"same\"><td class=\"ln\">{o}</td><td class=\"old\">{t}</td><td class=\"ln\">{n}</td><td class=\"new\">{t}</td></tr>"
                );
            }
            Row::Changed(old, new) => {
                let (l, r) = match (old, new) {
                    (Some((_, o)), Some((_, n))) => words(o, n),
                    (Some((_, o)), None) => (format!("<del>{}</del>", escape(o)), String::new()),
                    (None, Some((_, n))) => (String::new(), format!("<ins>{}</ins>", escape(n))),
                    (None, None) => (String::new(), String::new()),
                };
                let side = |at: Option<(usize, &str)>, text: &str, class: &str, sign: &str| match at
                {
                    Some((n, _)) => format!(
                        "<td class=\"ln\">{n}</td><td class=\"{class}\"><span class=\"sign\">{sign}</span>{text}</td>"
                    ),
                    None => format!("<td class=\"ln\"></td><td class=\"{class} none\"></td>"),
                };
                let _ = write!(
                    h,
                    "<tr class=\"chg\">{}{}</tr>",
                    side(old, &l, "old", "\u{2212}"),
                    side(new, &r, "new", "+")
                );
            }
        }
    }
    h.push_str("</tbody></table>");
    Html(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hunks_pair_removed_and_added_lines_with_their_numbers() {
        let d = crate::snapshot::diff("a\nb\nc\nd\n", "a\nB x\nc\nd\ne\n");
        let r = rows(&d);
        assert!(matches!(r[0], Row::Hunk(_)), "{r:?}");
        assert_eq!(r[1], Row::Same(1, 1, "a"));
        assert_eq!(r[2], Row::Changed(Some((2, "b")), Some((2, "B x"))));
        assert_eq!(r[3], Row::Same(3, 3, "c"));
        assert_eq!(r.last(), Some(&Row::Changed(None, Some((5, "e")))));
    }

    #[test]
    fn changed_words_are_marked_and_escaped() {
        let d = crate::snapshot::diff("x stage=1 action=<nudge>\n", "x stage=2 action=<nudge>\n");
        let h = side_by_side(&d).0;
        assert!(h.contains("<del>stage=1</del>"), "{h}");
        assert!(h.contains("<ins>stage=2</ins>"), "{h}");
        assert!(h.contains("action=&lt;nudge&gt;"), "{h}");
        assert!(!h.contains("<nudge>"), "{h}");
    }
}
