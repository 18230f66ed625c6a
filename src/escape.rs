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

/// Might `s` hold an unsafe character? `false` means it certainly does not. Eight bytes at a
/// time: a word with no byte below 0x20, none at 0x7f and none at 0x80 or above has no
/// suspect byte; only the other words are looked at byte by byte.
fn suspect(s: &str) -> bool {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    let mut words = s.as_bytes().chunks_exact(8);
    for w in &mut words {
        let mut bytes = [0; 8];
        bytes.copy_from_slice(w);
        let x = u64::from_ne_bytes(bytes);
        // Bytes below 0x20, bytes equal to 0x7f, bytes of 0x80 and above (exact for "any").
        let low = x.wrapping_sub(ONES * 0x20) & !x & HIGH;
        let del = (x ^ (ONES * 0x7f)).wrapping_sub(ONES) & !(x ^ (ONES * 0x7f)) & HIGH;
        if (low | del | (x & HIGH)) != 0 && w.iter().any(|&b| SUSPECT[usize::from(b)]) {
            return true;
        }
    }
    words.remainder().iter().any(|&b| SUSPECT[usize::from(b)])
}

/// `s` with every unsafe character spelled out; borrowed when there is none.
pub fn escape_controls(s: &str) -> Cow<'_, str> {
    if !suspect(s) || !s.chars().any(is_unsafe) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
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
    if !suspect(s) || !s.chars().any(|c| c != '\n' && is_unsafe(c)) {
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
    if !suspect(s) {
        return None;
    }
    s.chars().find(|c| is_unsafe(*c))
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
}
