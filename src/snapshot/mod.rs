//! Goldens: compare the rendered trace with the reviewed one and render the difference as a
//! unified diff (`similar`). Pure: reading and writing golden files is the store's job.

/// How the actual trace relates to its golden.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Comparison {
    /// Identical.
    Match,
    /// No golden yet; the new trace as a unified diff against nothing (every line added).
    Missing(String),
    /// Different; the unified diff (golden → actual).
    Differs(String),
    /// Not compared: an ad-hoc run under a profile the scenario does not declare
    /// (`harness run --profile`); it has no golden and no expectations.
    Ungated,
}

/// Compare `actual` with the golden, if any.
pub fn compare(golden: Option<&str>, actual: &str) -> Comparison {
    match golden {
        None => Comparison::Missing(diff("", actual)),
        Some(g) if g == actual => Comparison::Match,
        Some(g) => Comparison::Differs(diff(g, actual)),
    }
}

/// Unified diff from `old` to `new` with three lines of context.
///
/// Trace lines start with their virtual time (`    1.200s  event …`), so one changed latency
/// changes every later line. Lines are therefore matched by what follows the time: an event
/// whose time alone moved is paired with its counterpart (`-` golden, `+` actual, one after the
/// other), and the events that really changed stand out as lines without a partner, instead of
/// every later line being removed and added again in two blocks. Other text diffs as usual.
pub fn diff(old: &str, new: &str) -> String {
    use similar::{Algorithm, DiffOp};
    let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
    let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
    let old_keys: Vec<&str> = old_lines.iter().map(|l| untimed(l)).collect();
    let new_keys: Vec<&str> = new_lines.iter().map(|l| untimed(l)).collect();
    let ops = similar::capture_diff_slices(Algorithm::Myers, &old_keys, &new_keys);
    // Equal keys whose lines differ (the time moved) become one-for-one replacements.
    let mut refined: Vec<DiffOp> = Vec::with_capacity(ops.len());
    for op in ops {
        let DiffOp::Equal {
            old_index,
            new_index,
            len,
        } = op
        else {
            refined.push(op);
            continue;
        };
        let mut k = 0;
        while k < len {
            let same = old_lines[old_index + k] == new_lines[new_index + k];
            let mut end = k + 1;
            while end < len && (old_lines[old_index + end] == new_lines[new_index + end]) == same {
                end += 1;
            }
            let (o, n, l) = (old_index + k, new_index + k, end - k);
            refined.push(if same {
                DiffOp::Equal {
                    old_index: o,
                    new_index: n,
                    len: l,
                }
            } else {
                DiffOp::Replace {
                    old_index: o,
                    old_len: l,
                    new_index: n,
                    new_len: l,
                }
            });
            k = end;
        }
    }
    let mut out = String::new();
    let groups = similar::group_diff_ops(refined, 3);
    if groups.is_empty() {
        return out;
    }
    out.push_str("--- golden\n+++ actual\n");
    for group in groups {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let (o_start, n_start) = (first.old_range().start, first.new_range().start);
        let (o_end, n_end) = (last.old_range().end, last.new_range().end);
        out.push_str(&format!(
            "@@ -{} +{} @@\n",
            hunk_range(o_start, o_end),
            hunk_range(n_start, n_end)
        ));
        for op in group {
            match op {
                DiffOp::Equal { old_index, len, .. } => {
                    for l in &old_lines[old_index..old_index + len] {
                        push_line(&mut out, ' ', l);
                    }
                }
                DiffOp::Delete {
                    old_index, old_len, ..
                } => {
                    for l in &old_lines[old_index..old_index + old_len] {
                        push_line(&mut out, '-', l);
                    }
                }
                DiffOp::Insert {
                    new_index, new_len, ..
                } => {
                    for l in &new_lines[new_index..new_index + new_len] {
                        push_line(&mut out, '+', l);
                    }
                }
                DiffOp::Replace {
                    old_index,
                    old_len,
                    new_index,
                    new_len,
                } => {
                    let paired = old_len == new_len
                        && (0..old_len).all(|k| old_keys[old_index + k] == new_keys[new_index + k]);
                    if paired {
                        // Time moved: each line beside its counterpart.
                        for k in 0..old_len {
                            push_line(&mut out, '-', old_lines[old_index + k]);
                            push_line(&mut out, '+', new_lines[new_index + k]);
                        }
                    } else {
                        for l in &old_lines[old_index..old_index + old_len] {
                            push_line(&mut out, '-', l);
                        }
                        for l in &new_lines[new_index..new_index + new_len] {
                            push_line(&mut out, '+', l);
                        }
                    }
                }
            }
        }
    }
    out
}

/// A trace line without its leading virtual time (`    1.200s  `); other lines whole.
fn untimed(line: &str) -> &str {
    let t = line.trim_start_matches(' ');
    let Some(at) = t.find("s  ") else {
        return line;
    };
    let is_time = t[..at].split_once('.').is_some_and(|(whole, ms)| {
        !whole.is_empty()
            && whole.bytes().all(|b| b.is_ascii_digit())
            && ms.len() == 3
            && ms.bytes().all(|b| b.is_ascii_digit())
    });
    if is_time { &t[at + 3..] } else { line }
}

/// A hunk's line range as unified diffs write it: `start,len`, `start` alone for one line,
/// and the line before for none.
fn hunk_range(start: usize, end: usize) -> String {
    let len = end - start;
    match len {
        1 => format!("{}", start + 1),
        0 => format!("{start},0"),
        _ => format!("{},{len}", start + 1),
    }
}

/// One diff line: its mark, its text, and a note when the text has no final newline.
fn push_line(out: &mut String, mark: char, line: &str) {
    out.push(mark);
    out.push_str(line);
    if !line.ends_with('\n') {
        out.push_str("\n\\ No newline at end of file\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_moved_time_pairs_each_event_with_its_counterpart() {
        let golden = "# harness trace v1: x\n        0.000s  iteration 1\n        1.000s  model_response a\n        1.200s  tool_call_end ok\n        1.200s  iteration 2\n        2.200s  model_response b\n        2.200s  outcome response\n";
        // The first answer took 1.5 s instead of 1 s: every later time moves, nothing else.
        let actual = golden
            .replace("1.000s  model_response a", "1.500s  model_response a")
            .replace("1.200s  tool_call_end", "1.700s  tool_call_end")
            .replace("1.200s  iteration 2", "1.700s  iteration 2")
            .replace("2.200s", "2.700s");
        let d = diff(golden, &actual);
        assert!(
            d.starts_with("--- golden\n+++ actual\n@@ -1,7 +1,7 @@\n"),
            "{d}"
        );
        assert!(
            d.contains("-        1.000s  model_response a\n+        1.500s  model_response a\n-        1.200s  tool_call_end ok\n+        1.700s  tool_call_end ok\n"),
            "{d}"
        );
        assert!(d.contains("         0.000s  iteration 1\n"), "{d}");
        // A changed event stands alone between the moved ones.
        let changed = actual.replace("1.700s  tool_call_end ok", "1.700s  tool_call_end failed");
        let d = diff(golden, &changed);
        assert!(
            d.contains(
                "-        1.200s  tool_call_end ok\n+        1.700s  tool_call_end failed\n"
            ),
            "{d}"
        );
        assert!(
            d.contains("-        1.200s  iteration 2\n+        1.700s  iteration 2\n"),
            "{d}"
        );
        // Identical texts have no diff; text without times diffs as any text.
        assert_eq!(diff(golden, golden), "");
        assert_eq!(
            diff("a\nb\n", "a\nc\n"),
            "--- golden\n+++ actual\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n"
        );
        assert_eq!(
            diff("a\n", "a"),
            "--- golden\n+++ actual\n@@ -1 +1 @@\n-a\n+a\n\\ No newline at end of file\n"
        );
    }

    #[test]
    fn differing_goldens_give_a_unified_diff() {
        let Comparison::Differs(d) = compare(Some("a\nb\nc\n"), "a\nB\nc\n") else {
            panic!("expected a difference");
        };
        assert!(d.contains("--- golden\n+++ actual\n"), "{d}");
        assert!(d.contains("-b\n+B\n"), "{d}");
        assert_eq!(compare(Some("x\n"), "x\n"), Comparison::Match);
        // A new golden shows as a diff against nothing.
        let Comparison::Missing(d) = compare(None, "x\ny\n") else {
            panic!("expected a missing golden");
        };
        assert_eq!(d, "--- golden\n+++ actual\n@@ -0,0 +1,2 @@\n+x\n+y\n");
    }
}
