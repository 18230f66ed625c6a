//! Text from inputs shown where one line means one thing — golden lines, the terminal, CI
//! logs (where a line starting with `::` is a GitHub workflow command): control characters
//! (line breaks, escapes, bell, NUL, C1 controls), the bidirectional controls that make a line
//! read differently from what it holds (embeddings, overrides, isolates and the invisible
//! direction marks) and the invisible characters that hide text between others (zero-width
//! space, word joiner and its kin, the byte-order mark) are spelled out (`\n`, `\r`,
//! `\u{1b}`). Tabs stay, and so do the zero-width joiner and non-joiner, which scripts and emoji
//! need. Pure; owns no format of its own.

use std::borrow::Cow;

/// Must `c` be spelled out?
pub fn is_unsafe(c: char) -> bool {
    (c.is_control() && c != '\t')
        || matches!(
            c,
            '\u{061c}'
                | '\u{200b}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2060}'..='\u{2064}'
                | '\u{2066}'..='\u{2069}'
                | '\u{feff}'
        )
}

/// The bytes that can begin an unsafe character in UTF-8: the C0 controls but tab, DEL, and
/// the lead bytes of U+0080–U+00BF (C1 controls), U+0600–U+063F (U+061C), U+2000–U+2FFF and
/// U+F000–U+FFFF (U+FEFF). Text without any (most text) is safe, found without decoding.
const SUSPECT: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        t[b] = b != 0x09;
        b += 1;
    }
    t[0x7f] = true;
    t[0xc2] = true;
    t[0xd8] = true;
    t[0xe2] = true;
    t[0xef] = true;
    t
};

/// The high bit of each byte of a word.
const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);

/// The bytes of the word `x` (eight bytes, the first the lowest) outside printable ASCII, as
/// their high bits: every byte below 0x20, at 0x7f or at 0x80 or above has its high bit set
/// here. A printable byte after such a one may be set too (a borrow or carry runs up from it),
/// but never one before the first: the lowest bit set is the first byte outside. Zero means
/// the word is printable ASCII (a tab is outside, until looked at).
fn dirty(x: u64) -> u64 {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    // A byte below 0x20 borrows and wraps to 0xe0 or above; 0x7f carries to 0x80.
    (x.wrapping_sub(ONES * 0x20) | x.wrapping_add(ONES) | x) & HIGH
}

/// The eight bytes at `i` of `b` as a word, the first the lowest, when there are eight.
fn word(b: &[u8], i: usize) -> Option<u64> {
    let w: [u8; 8] = b.get(i..i + 8)?.try_into().ok()?;
    Some(u64::from_le_bytes(w))
}

/// Is this word of eight bytes free of suspect bytes, by a test on the whole word? `true` when
/// it has no byte below 0x20, none at 0x7f and none at 0x80 or above; `false` may still be
/// clean (a tab, or a safe character outside ASCII).
#[cfg(test)]
fn clean_word(w: &[u8]) -> bool {
    word(w, 0).is_some_and(|x| dirty(x) == 0)
}

/// Might `s` hold an unsafe character? `false` means it certainly does not.
#[cfg(test)]
fn suspect(s: &str) -> bool {
    let mut words = s.as_bytes().chunks_exact(8);
    for w in &mut words {
        if !clean_word(w) && w.iter().any(|&b| SUSPECT[usize::from(b)]) {
            return true;
        }
    }
    words.remainder().iter().any(|&b| SUSPECT[usize::from(b)])
}

/// Where the first unsafe character of `s` begins (a line break counts only when `breaks`),
/// if any. Printable ASCII is passed over eight bytes at a time, and only a suspect byte, which
/// always begins a character, has its character decoded: a text with a dash or an arrow in it
/// (suspect, and safe) costs a decoding for each of those, not one for every character.
fn first_unsafe_at(s: &str, breaks: bool) -> Option<usize> {
    let b = s.as_bytes();
    let mut i = 0;
    while let Some(at) = next_outside(b, i) {
        if (breaks || b[at] != b'\n') && unsafe_at(s, at) {
            return Some(at);
        }
        i = at + 1;
    }
    None
}

/// How many line breaks `s` holds, if it holds no other unsafe character: one pass over a
/// text of many lines that must each be one line, where [`escape_controls`] would take a pass
/// a line. `None` when a character must be spelled out.
pub fn line_breaks_if_safe(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut breaks = 0;
    let mut i = 0;
    while let Some(at) = next_outside(b, i) {
        if b[at] == b'\n' {
            breaks += 1;
        } else if unsafe_at(s, at) {
            return None;
        }
        i = at + 1;
    }
    Some(breaks)
}

/// Does the byte at `at` (outside printable ASCII) begin an unsafe character? Only a suspect
/// byte has its character decoded.
fn unsafe_at(s: &str, at: usize) -> bool {
    SUSPECT[usize::from(s.as_bytes()[at])]
        && s.get(at..)
            .and_then(|rest| rest.chars().next())
            .is_some_and(is_unsafe)
}

/// The first byte at or after `i` outside printable ASCII, if any: eight bytes a step (whole
/// words as `chunks_exact` gives them, without a bounds check a step), and in the word that
/// holds one, straight to it. The last few bytes are read as the text's last word, shifted
/// past the bytes already passed.
fn next_outside(b: &[u8], i: usize) -> Option<usize> {
    let mut words = b.get(i..)?.chunks_exact(8);
    let mut at = i;
    for w in &mut words {
        // Always eight bytes; were a chunk ever not, its word would read as zero bytes, a hit
        // at its first byte, which the caller looks at itself: nothing is passed unseen.
        let w = <[u8; 8]>::try_from(w).unwrap_or([0; 8]);
        let d = dirty(u64::from_le_bytes(w));
        if d != 0 {
            return Some(at + d.trailing_zeros() as usize / 8);
        }
        at += 8;
    }
    let rest = words.remainder().len();
    if rest == 0 {
        return None;
    }
    match b.len().checked_sub(8).and_then(|last| word(b, last)) {
        Some(x) => {
            // The bytes shifted in from above are zero, outside: only the tail's own count.
            let shift = 8 * (8 - rest);
            let d = dirty(x >> shift) & (HIGH >> shift);
            (d != 0).then(|| at + d.trailing_zeros() as usize / 8)
        }
        None => words
            .remainder()
            .iter()
            .position(|&c| !(0x20..0x7f).contains(&c))
            .map(|p| at + p),
    }
}

/// `s` with every unsafe character spelled out; borrowed when there is none.
pub fn escape_controls(s: &str) -> Cow<'_, str> {
    let Some(first) = first_unsafe_at(s, true) else {
        return Cow::Borrowed(s);
    };
    let mut out = String::with_capacity(s.len() + 8);
    out.push_str(&s[..first]);
    for c in s[first..].chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if is_unsafe(c) => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Like [`escape_controls`], but line breaks stay: for text that is several lines on purpose.
pub fn escape_in_lines(s: &str) -> Cow<'_, str> {
    if first_unsafe_at(s, false).is_none() {
        return Cow::Borrowed(s);
    }
    Cow::Owned(
        s.split('\n')
            .map(escape_controls)
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

/// The first unsafe character of `s`, if any.
pub fn first_unsafe(s: &str) -> Option<char> {
    first_unsafe_at(s, true).and_then(|i| s[i..].chars().next())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_spelled_out_and_plain_text_is_borrowed() {
        assert!(matches!(escape_controls("plain\ttext é"), Cow::Borrowed(_)));
        assert_eq!(
            escape_controls("a\n::error::x\r\u{1b}[2J\u{7}\0\u{9b}\u{202e}"),
            "a\\n::error::x\\r\\u{1b}[2J\\u{7}\\u{0}\\u{9b}\\u{202e}"
        );
        assert_eq!(escape_in_lines("one\r\ntwo\u{1b}"), "one\\r\ntwo\\u{1b}");
        // The invisible bidirectional marks and hiding characters too; joiners stay.
        assert_eq!(
            escape_controls("a\u{200e}b\u{200f}c\u{61c}d\u{200b}e\u{2060}f\u{feff}g\u{2067}h"),
            "a\\u{200e}b\\u{200f}c\\u{61c}d\\u{200b}e\\u{2060}f\\u{feff}g\\u{2067}h"
        );
        assert!(matches!(
            escape_controls("👨\u{200d}👩 می\u{200c}خواهم"),
            Cow::Borrowed(_)
        ));
        assert_eq!(first_unsafe("ok"), None);
        // The quick byte test never passes an unsafe character: every one is suspect, at any
        // place in a word.
        for c in (0..=0x10ffff).filter_map(char::from_u32) {
            if is_unsafe(c) {
                for pad in 0..9 {
                    let text = format!("{}{c}{}", "x".repeat(pad), "y".repeat(8 - pad));
                    assert!(suspect(&text), "{c:?} after {pad}");
                    assert_eq!(first_unsafe(&text), Some(c), "{c:?} after {pad}");
                }
            }
        }
        // Nor a byte of a word it takes as clean.
        for b in 0u8..=0x7f {
            let text = format!("abcdefg{}hijklmn", char::from(b));
            assert_eq!(suspect(&text), SUSPECT[usize::from(b)], "{b:#x}");
        }
        assert_eq!(first_unsafe("a\u{7}"), Some('\u{7}'));
    }

    #[test]
    fn the_word_test_finds_the_first_byte_outside_printable_ascii_whatever_its_neighbours() {
        // Borrows and carries run from a byte to the ones after it; no neighbour may hide one,
        // and none may be taken for the first.
        let around = [
            0x00, 0x01, 0x09, 0x1f, 0x20, 0x21, b'a', 0x7e, 0x7f, 0x80, 0xc2, 0xff,
        ];
        let outside = |c: &u8| !(0x20..0x7f).contains(c);
        for b in 0u8..=0xff {
            for at in 0..8 {
                for &n in &around {
                    for &m in &around {
                        let mut w = [n; 8];
                        w[at] = b;
                        w[(at + 3) % 8] = m;
                        let d = dirty(u64::from_le_bytes(w));
                        match w.iter().position(outside) {
                            Some(first) => {
                                assert_eq!(d.trailing_zeros() as usize / 8, first, "{w:x?}")
                            }
                            None => assert_eq!(d, 0, "{w:x?}"),
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn the_last_bytes_of_a_text_are_scanned_at_every_place_and_length() {
        // The bytes after the last whole word are read as the text's last word: a byte passed
        // before them, outside printable ASCII or not, neither hides one nor is taken for one.
        for len in 0..=20 {
            for before in ['a', '\t', 'é', '\u{1}'] {
                for at in 0..len {
                    for c in [
                        '\n', '\u{7}', '\u{7f}', '\u{85}', '\u{202e}', '\t', 'é', 'z',
                    ] {
                        let mut text: Vec<char> = vec!['x'; len];
                        text[at] = c;
                        if at > 0 {
                            text[at - 1] = before;
                        }
                        let s: String = text.into_iter().collect();
                        let want = s
                            .char_indices()
                            .find(|&(_, c)| is_unsafe(c))
                            .map(|(i, _)| i);
                        assert_eq!(first_unsafe_at(&s, true), want, "{s:?}");
                        assert_eq!(escape_controls(&s), by_the_letter(&s), "{s:?}");
                    }
                }
            }
        }
        assert_eq!(line_breaks_if_safe(""), Some(0));
        assert_eq!(line_breaks_if_safe("one\ntwo\n"), Some(2));
        assert_eq!(line_breaks_if_safe("one\ntwo\r\n"), None);
        assert_eq!(
            line_breaks_if_safe("a long first line — safe\n→ and a second\n"),
            Some(2)
        );
    }

    /// The definitions, one character at a time.
    fn by_the_letter(s: &str) -> String {
        let mut out = String::new();
        for c in s.chars() {
            match c {
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                c if is_unsafe(c) => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
                c => out.push(c),
            }
        }
        out
    }

    #[test]
    fn the_quick_scan_agrees_with_the_definitions() {
        let pieces = [
            "",
            "a",
            "plain ascii text",
            "\t",
            "\n",
            "\r",
            "\u{7f}",
            "\u{85}",
            "\u{a0}",
            "é",
            "—",
            "→",
            "\u{202e}",
            "\u{200b}",
            "\u{200d}",
            "\u{feff}",
            "\u{fffd}",
            "\u{61c}",
            "\u{600}",
            "👨",
            "\u{2028}",
            "12345678",
            "0123456789abcdef",
            "a plain line of ascii text, longer than two words",
            "\u{1b}[2J",
        ];
        for a in pieces {
            for b in pieces {
                for c in pieces {
                    let s = format!("{a}{b}{c}");
                    assert_eq!(escape_controls(&s), by_the_letter(&s), "{s:?}");
                    assert_eq!(
                        matches!(escape_controls(&s), Cow::Borrowed(_)),
                        !s.chars().any(is_unsafe),
                        "{s:?}"
                    );
                    assert_eq!(first_unsafe(&s), s.chars().find(|c| is_unsafe(*c)), "{s:?}");
                    let lines = s
                        .split('\n')
                        .map(by_the_letter)
                        .collect::<Vec<_>>()
                        .join("\n");
                    assert_eq!(escape_in_lines(&s), lines, "{s:?}");
                    let breaks = (!s.chars().any(|c| is_unsafe(c) && c != '\n'))
                        .then(|| s.matches('\n').count());
                    assert_eq!(line_breaks_if_safe(&s), breaks, "{s:?}");
                }
            }
        }
    }
}
