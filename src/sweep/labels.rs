//! Stuck labels: which runs were stuck in a loop, and from which call. Read from a labels file
//! (JSON lines: `{"run", "stuck", "loop_start", "note"}`), or, for a run the file does not name,
//! from the documented [`heuristic`]. `harness sweep --write-labels FILE` writes the heuristic's
//! labels for a corpus so they can be reviewed, corrected by hand and committed.

use crate::detector::{Call, View};
use crate::diagnostic::Diagnostic;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Identical calls in a row that make a failed run stuck.
pub const IDENTICAL_RUN: usize = 3;
/// Failing calls in a row to one tool (any arguments) that make a failed run stuck.
pub const FAILING_RUN: usize = 3;
/// Calls of an A-B-A-B alternation (identical A, identical B, A ≠ B) that make it stuck.
pub const ALTERNATION: usize = 6;

/// One run's label.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Label {
    /// Run id.
    pub run: String,
    /// Was the run stuck in a loop?
    pub stuck: bool,
    /// 0-based call index where the loop began (stuck runs).
    #[serde(default)]
    pub loop_start: Option<usize>,
    /// How the label was reached.
    #[serde(default)]
    pub note: String,
    /// The heuristic could not say (calls recorded without their arguments may or may not
    /// repeat): no setting scores the run. Written to a labels file so a reviewer can decide;
    /// a label in the file still marked so stays undecided.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub undecided: bool,
}

/// The heuristic: a run that did not succeed (failed, or unlabelled) is stuck when it holds
/// - [`IDENTICAL_RUN`] identical calls in a row (same tool, same parsed arguments), or
/// - [`FAILING_RUN`] failing calls in a row to the same tool, whatever the arguments, or
/// - an A-B-A-B alternation of [`ALTERNATION`] identical calls;
///
/// the loop begins at the first call of the earliest such pattern. A successful run is never
/// stuck (it reached its goal, whatever it repeated on the way).
///
/// A call whose arguments were not recorded ([`crate::detector::Call::args_unknown`]) repeats
/// nothing. When the patterns are not there without such calls but would be there if some of
/// them repeated a call of their tool, the label is [`Label::undecided`]: the run may or may not
/// have been stuck, and no setting scores it until a labels file decides.
pub fn heuristic(run: &str, view: &View, success: Option<bool>) -> Label {
    let label = |stuck, loop_start, note: String| Label {
        run: run.to_owned(),
        stuck,
        loop_start,
        note,
        undecided: false,
    };
    if success == Some(true) {
        return label(false, None, "successful run".to_owned());
    }
    let outcome = match success {
        Some(false) => "failed run",
        _ => "unlabelled run",
    };
    // Sure: only calls known to be the same repeat.
    if let Some((start, note)) = pattern(&view.calls, Same::Sure) {
        return label(true, Some(start), format!("{outcome}: {note}"));
    }
    // Calls not recorded at all may have been anything.
    if view.unseen > 0 {
        let mut l = label(
            false,
            None,
            format!(
                "{outcome}: undecided: {} of its answers asked for tools the trace did not record",
                view.unseen
            ),
        );
        l.undecided = true;
        return l;
    }
    // Possible: a call without its arguments may be the same as any call of its tool.
    if let Some((_, note)) = pattern(&view.calls, Same::Maybe).filter(|_| view.args_unknown()) {
        let mut l = label(
            false,
            None,
            format!(
                "{outcome}: undecided: calls recorded without their arguments would make {note} if they repeated the calls beside them"
            ),
        );
        l.undecided = true;
        return l;
    }
    label(false, None, format!("{outcome}: no repetition pattern"))
}

/// How calls are taken to be the same: `Sure`, each known and the same as the others; `Maybe`,
/// of one tool, with every known one the same (a call whose arguments are unknown may be any
/// call of its tool). `Maybe` is not transitive between pairs, so it judges whole groups.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Same {
    Sure,
    Maybe,
}

/// Are all of `calls` the same, as `how` takes it? Their common known arguments when so
/// (`None` inside: none of them is known).
fn group<'a>(calls: impl IntoIterator<Item = &'a Call>, how: Same) -> Option<Option<&'a str>> {
    let mut name: Option<&str> = None;
    let mut key: Option<&str> = None;
    for c in calls {
        if *name.get_or_insert(&c.name) != c.name {
            return None;
        }
        if c.args_unknown {
            if how == Same::Sure {
                return None;
            }
            continue;
        }
        if *key.get_or_insert(&c.key) != c.key {
            return None;
        }
    }
    Some(key)
}

/// How many of `calls`, from the first, are all the same as `how` takes it (one pass).
fn run_length(calls: &[Call], how: Same) -> usize {
    let Some(first) = calls.first() else {
        return 0;
    };
    let mut key: Option<&str> = None;
    calls
        .iter()
        .take_while(|c| {
            if c.name != first.name {
                return false;
            }
            if c.args_unknown {
                return how == Same::Maybe;
            }
            *key.get_or_insert(&c.key) == c.key
        })
        .count()
}

/// The earliest repetition pattern of `calls`, the same taken as `how` says: its first call
/// and what it is.
fn pattern(calls: &[Call], how: Same) -> Option<(usize, String)> {
    let mut best: Option<(usize, String)> = None;
    let mut consider = |start: usize, note: String| {
        if best.as_ref().is_none_or(|(s, _)| start < *s) {
            best = Some((start, note));
        }
    };
    let mut i = 0;
    while i < calls.len() {
        let n = run_length(&calls[i..], how);
        if n >= IDENTICAL_RUN {
            consider(
                i,
                format!("{n} identical calls of `{}` in a row", calls[i].name),
            );
            break;
        }
        // Surely the same is transitive: a run's later calls start no longer run. A call that
        // may be anything may start one, so each is tried.
        i += match how {
            Same::Sure => n.max(1),
            Same::Maybe => 1,
        };
    }
    let mut i = 0;
    while i < calls.len() {
        let n = calls[i..]
            .iter()
            .take_while(|c| c.failed && c.name == calls[i].name)
            .count();
        if n >= FAILING_RUN {
            consider(
                i,
                format!("{n} failing calls of `{}` in a row", calls[i].name),
            );
            break;
        }
        i += n.max(1);
    }
    // A-B-A-B: the As the same, the Bs the same, and A not surely B (both known and equal).
    for i in 0..calls.len().saturating_sub(ALTERNATION - 1) {
        let w = &calls[i..i + ALTERNATION];
        let a = group(w.iter().step_by(2), how);
        let b = group(w.iter().skip(1).step_by(2), how);
        let (Some(ka), Some(kb)) = (a, b) else {
            continue;
        };
        let surely_one = w[0].name == w[1].name && ka.is_some() && ka == kb;
        if !surely_one {
            consider(
                i,
                format!(
                    "`{}`/`{}` alternating {} calls",
                    w[0].name, w[1].name, ALTERNATION
                ),
            );
            break;
        }
    }
    best
}

/// Parse a labels file.
pub fn parse(text: &str) -> Result<BTreeMap<String, Label>, Diagnostic> {
    let mut out = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let l: Label = serde_json::from_str(line)
            .map_err(|e| Diagnostic::at(i + 1, e.column().max(1), format!("not a label: {e}")))?;
        if l.stuck && l.loop_start.is_none() {
            return Err(Diagnostic::at(
                i + 1,
                1,
                format!("run `{}` is stuck but has no `loop_start`", l.run),
            ));
        }
        out.insert(l.run.clone(), l);
    }
    Ok(out)
}

/// Render labels as JSON lines, in run-id order.
pub fn render<'a>(labels: impl IntoIterator<Item = &'a Label>) -> String {
    let mut sorted: Vec<&Label> = labels.into_iter().collect();
    sorted.sort_by(|a, b| a.run.cmp(&b.run));
    let mut out = String::new();
    for l in sorted {
        out.push_str(&serde_json::to_string(l).unwrap_or_default());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detector::testing::V;
    use serde_json::json;

    #[test]
    fn identical_failing_and_alternating_runs_are_stuck_from_their_start() {
        let v = V::default()
            .call("a", json!({}), false, "")
            .repeat(3, "ls", &json!({}), false, "")
            .0;
        let l = heuristic("r", &v, Some(false));
        assert_eq!((l.stuck, l.loop_start), (true, Some(1)));
        let mut b = V::default();
        for q in ["x", "y", "z"] {
            b = b.call("search", json!({"q": q}), true, "Error: none");
        }
        assert_eq!(heuristic("r", &b.0, None).loop_start, Some(0));
        let mut b = V::default().call("start", json!({}), false, "");
        for _ in 0..3 {
            b = b
                .call("edit", json!({}), false, "")
                .call("test", json!({}), false, "");
        }
        let l = heuristic("r", &b.0, Some(false));
        assert_eq!((l.stuck, l.loop_start), (true, Some(1)), "{l:?}");
    }

    #[test]
    fn successful_and_varied_runs_are_not_stuck() {
        let v = V::default().repeat(5, "ls", &json!({}), false, "").0;
        assert!(!heuristic("r", &v, Some(true)).stuck);
        let v = V::default()
            .call("a", json!({}), true, "E")
            .call("b", json!({}), true, "E")
            .0;
        assert!(!heuristic("r", &v, Some(false)).stuck);
    }

    #[test]
    fn calls_without_arguments_are_stuck_only_when_nothing_else_could_be_said() {
        let blind = |v: V, name: &str, failed: bool| v.call(name, json!({}), failed, "").blind();
        // Three of one tool, arguments unknown: they may repeat or not.
        let v = (0..3).fold(V::default(), |v, _| blind(v, "exec", false)).0;
        let l = heuristic("r", &v, None);
        assert!(l.undecided && !l.stuck, "{l:?}");
        assert!(l.note.contains("3 identical calls of `exec`"), "{l:?}");
        // The same three, failing: stuck by their failures, which need no arguments.
        let v = (0..3).fold(V::default(), |v, _| blind(v, "exec", true)).0;
        let l = heuristic("r", &v, Some(false));
        assert!(l.stuck && !l.undecided, "{l:?}");
        // One unknown call of a tool called once: no argument could make a pattern of it.
        let v = V::default().call("ls", json!({"p": "a"}), false, "").call(
            "ls",
            json!({"p": "b"}),
            false,
            "",
        );
        let v = blind(v, "read", false).0;
        let l = heuristic("r", &v, None);
        assert!(!l.stuck && !l.undecided, "{l:?}");
        // A loop among known calls is one, whatever the unknown call beside it.
        let v = blind(V::default(), "read", false).repeat(3, "ls", &json!({}), false, "");
        let l = heuristic("r", &v.0, None);
        assert_eq!((l.stuck, l.loop_start, l.undecided), (true, Some(1), false));
        // Two known calls and an unknown third of the same tool: maybe three in a row.
        let v = V::default().repeat(2, "ls", &json!({}), false, "");
        let l = heuristic("r", &blind(v, "ls", false).0, None);
        assert!(l.undecided, "{l:?}");
        // An unknown call may repeat the calls after it as well as those before it, and it is
        // one call: `a, ?, b, b` may be three `b` in a row; `?, a, b` cannot be three of one.
        let v = V::default().call("exec", json!({"c": "a"}), false, "");
        let v = blind(v, "exec", false)
            .call("exec", json!({"c": "b"}), false, "")
            .call("exec", json!({"c": "b"}), false, "");
        assert!(heuristic("r", &v.0, None).undecided);
        let v = blind(V::default(), "exec", false)
            .call("exec", json!({"c": "a"}), false, "")
            .call("exec", json!({"c": "b"}), false, "");
        let l = heuristic("r", &v.0, None);
        assert!(!l.stuck && !l.undecided, "{l:?}");
        // Answers whose calls were not recorded at all: anything may have happened there,
        // unless what was recorded is a loop already.
        let mut v = V::default().call("ls", json!({}), false, "").0;
        v.unseen = 2;
        let l = heuristic("r", &v, None);
        assert!(
            l.undecided && l.note.contains("2 of its answers asked for tools"),
            "{l:?}"
        );
        let mut v = V::default().repeat(3, "ls", &json!({}), true, "").0;
        v.unseen = 2;
        assert!(heuristic("r", &v, None).stuck);
        // A successful run is never stuck, nor undecided.
        let l = heuristic("r", &v_of(3), Some(true));
        assert!(!l.stuck && !l.undecided);
    }

    fn v_of(n: usize) -> View {
        (0..n)
            .fold(V::default(), |v, _| {
                v.call("exec", json!({}), false, "").blind()
            })
            .0
    }

    #[test]
    fn labels_round_trip_and_bad_lines_are_located() {
        let l = Label {
            run: "f#1".into(),
            stuck: true,
            loop_start: Some(4),
            note: "n".into(),
            undecided: false,
        };
        let text = render([&l]);
        assert_eq!(parse(&text).unwrap()["f#1"], l);
        assert!(!text.contains("undecided"), "{text}");
        let open = Label {
            stuck: false,
            loop_start: None,
            undecided: true,
            ..l
        };
        let text = render([&open]);
        assert!(text.contains("\"undecided\":true"), "{text}");
        assert_eq!(parse(&text).unwrap()["f#1"], open);
        let e =
            parse("{\"run\":\"a\",\"stuck\":false}\n{\"run\":\"b\",\"stuck\":true}\n").unwrap_err();
        assert_eq!(e.line(), 2);
        assert!(parse("{\"run\": 3}").is_err());
    }
}
