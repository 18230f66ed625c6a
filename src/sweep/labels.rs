//! Stuck labels: which runs were stuck in a loop, and from which call. Read from a labels file
//! (JSON lines: `{"run", "stuck", "loop_start", "note"}`), or, for a run the file does not name,
//! from the documented [`heuristic`]. `harness sweep --write-labels FILE` writes the heuristic's
//! labels for a corpus so they can be reviewed, corrected by hand and committed.

use crate::detector::View;
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
}

/// The heuristic: a run that did not succeed (failed, or unlabelled) is stuck when it holds
/// - [`IDENTICAL_RUN`] identical calls in a row (same tool, same parsed arguments), or
/// - [`FAILING_RUN`] failing calls in a row to the same tool, whatever the arguments, or
/// - an A-B-A-B alternation of [`ALTERNATION`] identical calls;
///
/// the loop begins at the first call of the earliest such pattern. A successful run is never
/// stuck (it reached its goal, whatever it repeated on the way).
pub fn heuristic(run: &str, view: &View, success: Option<bool>) -> Label {
    let label = |stuck, loop_start, note: String| Label {
        run: run.to_owned(),
        stuck,
        loop_start,
        note,
    };
    if success == Some(true) {
        return label(false, None, "successful run".to_owned());
    }
    let calls = &view.calls;
    let mut best: Option<(usize, String)> = None;
    let mut consider = |start: usize, note: String| {
        if best.as_ref().is_none_or(|(s, _)| start < *s) {
            best = Some((start, note));
        }
    };
    let mut i = 0;
    while i < calls.len() {
        let same = calls[i..]
            .iter()
            .take_while(|c| c.same_call(&calls[i]))
            .count();
        if same >= IDENTICAL_RUN {
            consider(
                i,
                format!("{same} identical calls of `{}` in a row", calls[i].name),
            );
            break;
        }
        i += same.max(1);
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
    for i in 0..calls.len().saturating_sub(ALTERNATION - 1) {
        let w = &calls[i..i + ALTERNATION];
        if !w[0].same_call(&w[1]) && (0..ALTERNATION - 2).all(|j| w[j].same_call(&w[j + 2])) {
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
    let outcome = match success {
        Some(false) => "failed run",
        _ => "unlabelled run",
    };
    match best {
        Some((start, note)) => label(true, Some(start), format!("{outcome}: {note}")),
        // Calls without their arguments never count as repeats: nothing shows they are.
        None if view.args_unknown() => label(
            false,
            None,
            format!(
                "{outcome}: calls recorded without their arguments, so no repetition can be seen (undecided)"
            ),
        ),
        None => label(false, None, format!("{outcome}: no repetition pattern")),
    }
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
    fn labels_round_trip_and_bad_lines_are_located() {
        let l = Label {
            run: "f#1".into(),
            stuck: true,
            loop_start: Some(4),
            note: "n".into(),
        };
        let text = render([&l]);
        assert_eq!(parse(&text).unwrap()["f#1"], l);
        let e =
            parse("{\"run\":\"a\",\"stuck\":false}\n{\"run\":\"b\",\"stuck\":true}\n").unwrap_err();
        assert_eq!(e.line(), 2);
        assert!(parse("{\"run\": 3}").is_err());
    }
}
