//! A string a `pattern` accepts, made from the regular expression itself: its literals as
//! written, a character each class holds (a plain letter or digit where the class has one),
//! each repetition its least count, the first alternative — and, to reach a `minLength`, the
//! first repetition without an upper bound repeated further. A pattern that is no regular
//! expression here (look-arounds, back-references, Unicode classes) gives none; the caller
//! checks what it gives against every pattern of the schema, as a validator would.

use regex_syntax::hir::{Class, Hir, HirKind};

/// The longest string made; past it, none.
const MAX_LEN: usize = super::MAX_STRING;

/// A string `pattern` matches, at least `min_len` characters long where a repetition allows;
/// `None` when the pattern cannot be read or a string would be too long.
pub(super) fn matching(pattern: &str, min_len: usize) -> Option<String> {
    // Read as ASCII (`\d` a digit, `\w` a word byte): the classes a plain string is made
    // of, and no Unicode tables to carry; `\p{…}` is not read.
    let hir = regex_syntax::ParserBuilder::new()
        .unicode(false)
        .utf8(false)
        .build()
        .parse(pattern)
        .ok()?;
    let mut out = String::new();
    // A search pattern not anchored at both ends matches a string that holds its match: the
    // padding goes into the match itself, so anchored and unanchored patterns read alike.
    let mut pad = min_len.saturating_sub(least_len(&hir));
    if !write(&hir, &mut out, &mut pad) {
        return None;
    }
    // No repetition took the padding: after the match, which a pattern not anchored at its
    // end still accepts (the caller checks).
    let short = min_len.saturating_sub(out.chars().count());
    out.extend(std::iter::repeat_n('x', short));
    (out.chars().count() <= MAX_LEN).then_some(out)
}

/// The length of the shortest string [`write`] makes with no padding.
fn least_len(hir: &Hir) -> usize {
    let mut out = String::new();
    if write(hir, &mut out, &mut 0) {
        out.chars().count()
    } else {
        0
    }
}

/// Append a string `hir` matches to `out`; `pad` more characters go into the first
/// repetition that allows them. `false` when it cannot be made (an empty class, too long).
fn write(hir: &Hir, out: &mut String, pad: &mut usize) -> bool {
    if out.len() > MAX_LEN * 4 {
        return false;
    }
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => true,
        HirKind::Literal(lit) => match std::str::from_utf8(&lit.0) {
            Ok(s) => {
                out.push_str(s);
                true
            }
            Err(_) => false,
        },
        HirKind::Class(class) => match one_of(class) {
            Some(c) => {
                out.push(c);
                true
            }
            None => false,
        },
        HirKind::Repetition(rep) => {
            let least = usize::try_from(rep.min).unwrap_or(usize::MAX);
            let most = rep
                .max
                .map_or(usize::MAX, |m| usize::try_from(m).unwrap_or(usize::MAX));
            // Repetitions of a fixed part add as many characters as it has: padding goes to
            // one that can take it (no upper bound, or room below it).
            let extra = if *pad > 0 && most > least {
                let each = least_len(&rep.sub).max(1);
                let more = (*pad).div_ceil(each).min(most - least);
                *pad = pad.saturating_sub(more * each);
                more
            } else {
                0
            };
            let times = least.saturating_add(extra);
            if times > MAX_LEN {
                return false;
            }
            (0..times).all(|_| write(&rep.sub, out, &mut 0))
        }
        HirKind::Capture(cap) => write(&cap.sub, out, pad),
        HirKind::Concat(parts) => parts.iter().all(|p| write(p, out, pad)),
        HirKind::Alternation(alts) => alts.first().is_some_and(|a| write(a, out, pad)),
    }
}

/// A character of `class`: a plain letter or digit where it holds one, else its first.
fn one_of(class: &Class) -> Option<char> {
    const PLAIN: [char; 6] = ['a', 'x', '0', 'A', '-', '_'];
    match class {
        Class::Unicode(u) => {
            let ranges = u.ranges();
            PLAIN
                .iter()
                .copied()
                .find(|c| ranges.iter().any(|r| r.start() <= *c && *c <= r.end()))
                .or_else(|| {
                    // The first character of the class that is not a control character.
                    ranges.iter().find_map(|r| {
                        (u32::from(r.start())..=u32::from(r.end()))
                            .take(256)
                            .filter_map(char::from_u32)
                            .find(|c| !c.is_control())
                    })
                })
        }
        Class::Bytes(b) => {
            let ranges = b.ranges();
            PLAIN
                .iter()
                .copied()
                .find(|c| {
                    let c = *c as u32;
                    ranges
                        .iter()
                        .any(|r| u32::from(r.start()) <= c && c <= u32::from(r.end()))
                })
                .or_else(|| {
                    ranges.iter().find_map(|r| {
                        (r.start()..=r.end())
                            .filter(u8::is_ascii_graphic)
                            .map(char::from)
                            .next()
                    })
                })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::matching;

    #[test]
    fn strings_that_real_patterns_accept() {
        for (pattern, min) in [
            ("^[0-9a-f]{40}$", 0),
            ("^[A-Z]{2}-\\d{4}$", 0),
            ("^[0-9]+$", 5),
            ("^[a-z0-9_.-]+/[a-z0-9_.-]+$", 0),
            ("^(feat|fix|chore): .+$", 12),
            ("^\\+?[1-9]\\d{1,14}$", 0),
            ("[^\\s]+", 3),
            ("^(?:[a-z]+)(?:,[a-z]+)*$", 0),
            ("^v\\d+\\.\\d+\\.\\d+(-[0-9A-Za-z.-]+)?$", 0),
            ("^#[0-9A-Fa-f]{6}$", 0),
            ("^\\S+@\\S+\\.\\S+$", 0),
            ("", 4),
        ] {
            let got = matching(pattern, min).unwrap_or_else(|| panic!("{pattern}: none made"));
            let re = regex_lite::Regex::new(pattern).expect("a regex");
            assert!(re.is_match(&got), "{pattern}: {got:?}");
            assert!(got.chars().count() >= min, "{pattern}: {got:?} under {min}");
        }
    }

    #[test]
    fn patterns_it_cannot_read_give_none() {
        // Look-arounds and back-references are no regular expressions here.
        assert_eq!(matching("^(?=.*[A-Z])(?=.*\\d).{8,}$", 0), None);
        assert_eq!(matching("^(a)\\1$", 0), None);
        assert_eq!(matching("[", 0), None);
        // An upper bound is never passed to reach a length (the caller finds that the
        // padding after the match breaks the pattern).
        let got = matching("^[a-z]{2,3}$", 10).expect("made");
        assert!(got.starts_with("aaax"), "{got}");
        // A huge count is no string.
        assert_eq!(matching("^a{100000000}$", 0), None);
    }
}
