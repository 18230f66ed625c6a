//! Goldens: compare the rendered trace with the reviewed one and render the difference as a
//! unified diff (`similar`). Pure: reading and writing golden files is the store's job.

use similar::TextDiff;

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
pub fn diff(old: &str, new: &str) -> String {
    TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header("golden", "actual")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

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
