//! `--repeat k`: run a case k times and fold the runs into one result that says how many
//! passed. pass@k holds when one run passed, pass^k when all did; a case that passed some
//! runs and failed others is flaky, reported apart from regressions.

use crate::results::CaseResult;

/// Fold `first` and `k - 1` further runs (`again`) into one result: the first failing run's
/// details (or the first run's, when all passed), with `runs` and `passes` counted.
pub fn fold(first: CaseResult, k: u32, mut again: impl FnMut() -> CaseResult) -> CaseResult {
    let mut shown = first;
    let mut runs = 1;
    let mut passes = u32::from(shown.passed());
    for _ in 1..k.max(1) {
        let r = again();
        runs += 1;
        if r.passed() {
            passes += 1;
        } else if shown.passed() {
            shown = r;
        }
    }
    shown.runs = runs;
    shown.passes = passes;
    shown
}

/// pass@k: at least one of the runs passed.
pub fn pass_at_k(r: &CaseResult) -> bool {
    r.passes > 0
}

/// pass^k: every run passed.
pub fn pass_all_k(r: &CaseResult) -> bool {
    r.passes == r.runs
}

/// A fake runner's result for tests: a run of `id` (family `fam`, profile `none`, 1.5 s) that
/// passes, or fails its golden by one line.
#[cfg(test)]
pub(crate) fn fake_result(id: &str, pass: bool) -> CaseResult {
    use crate::snapshot::Comparison;
    let mut row = crate::metrics::row(id, "fam", "none", crate::scenario::Prices::default(), &[]);
    row.virtual_ms = 1500;
    CaseResult {
        id: id.to_owned(),
        row,
        golden: if pass {
            Comparison::Match
        } else {
            Comparison::Differs("--- golden\n+++ actual\n-a\n+b\n".to_owned())
        },
        pending_written: false,
        expectation_failures: Vec::new(),
        io_errors: Vec::new(),
        line: 1,
        runs: 1,
        passes: u32::from(pass),
        detail: None,
        card: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake run, told apart from others by its token count.
    fn result(pass: bool, tokens: u64) -> CaseResult {
        let mut r = fake_result("s", pass);
        r.row.input_tokens = tokens;
        r
    }

    /// Fold k runs of a fake runner that passes on the given runs.
    fn fold_pattern(pattern: &[bool]) -> CaseResult {
        let mut rest = pattern[1..].iter().enumerate();
        fold(result(pattern[0], 0), pattern.len() as u32, || {
            let (i, &p) = rest.next().expect("no more runs than k");
            result(p, i as u64 + 1)
        })
    }

    #[test]
    fn runs_that_pass_sometimes_are_flaky_not_failed_or_passed() {
        let r = fold_pattern(&[true, false, true, false]);
        assert_eq!((r.runs, r.passes), (4, 2));
        assert!(r.flaky() && pass_at_k(&r) && !pass_all_k(&r));
        // The failing run is the one shown (its diff explains the flake).
        assert!(!r.passed());
        assert_eq!(r.row.input_tokens, 1);

        let r = fold_pattern(&[true, true, true]);
        assert!(r.passed() && !r.flaky() && pass_all_k(&r));

        let r = fold_pattern(&[false, false]);
        assert!(!r.passed() && !r.flaky() && !pass_at_k(&r));
        assert_eq!(r.row.input_tokens, 0, "the first failing run is kept");

        let r = fold_pattern(&[true]);
        assert_eq!((r.runs, r.passes), (1, 1));
    }
}
