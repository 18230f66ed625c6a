//! The JUnit XML report (`--junit FILE`, via `quick-junit`): one testsuite per family, one
//! testcase per case (name: the case id, classname: the scenario file), its time the run's
//! virtual time; a failing case's failure message is the diff summary and its text the diff
//! and failed expectations. Files that could not run are errors in the suite `invalid`,
//! goldens without a scenario failures in the suite `orphaned-goldens`. No timestamps or
//! host names: the file is the same for the same results.

use super::Collected;
use crate::results::CaseResult;
use crate::snapshot::Comparison;
use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// `golden differs: 3 lines added, 2 removed`: what a failing case's diff or expectations say
/// in one line.
pub fn failure_summary(c: &CaseResult) -> String {
    let mut parts = Vec::new();
    match &c.golden {
        Comparison::Differs(d) => {
            let count = |sign: char, head: &str| {
                d.lines()
                    .filter(|l| l.starts_with(sign) && !l.starts_with(head))
                    .count()
            };
            parts.push(format!(
                "golden differs: {} lines added, {} removed",
                count('+', "+++"),
                count('-', "---")
            ));
        }
        Comparison::Missing(_) => parts.push("no golden yet".to_owned()),
        Comparison::Match | Comparison::Ungated => {}
    }
    match c.expectation_failures.as_slice() {
        [] => {}
        [one] => parts.push(format!("expected {one}")),
        many => parts.push(format!("{} expectations failed", many.len())),
    }
    if !c.io_errors.is_empty() {
        parts.push(c.io_errors.join("; "));
    }
    parts.join("; ")
}

/// The failing run's details as text: the diff, then each failed expectation.
fn failure_text(c: &CaseResult) -> String {
    let mut text = String::new();
    if let Comparison::Differs(d) | Comparison::Missing(d) = &c.golden {
        text.push_str(d);
    }
    for e in &c.expectation_failures {
        text.push_str(&format!("expected {e}\n"));
    }
    for e in &c.io_errors {
        text.push_str(&format!("io error {e}\n"));
    }
    text
}

fn failure_kind(c: &CaseResult) -> &'static str {
    match c.golden {
        Comparison::Differs(_) => "golden-mismatch",
        Comparison::Missing(_) => "missing-golden",
        _ if !c.expectation_failures.is_empty() => "expectation",
        _ => "io-error",
    }
}

fn testcase(path: &Path, scenario: &str, c: &CaseResult) -> TestCase {
    let status = if c.passed() || c.flaky() {
        TestCaseStatus::success()
    } else {
        let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
        s.set_message(failure_summary(c))
            .set_type(failure_kind(c))
            .set_description(failure_text(c));
        s
    };
    let mut tc = TestCase::new(c.id.as_str(), status);
    tc.set_classname(scenario)
        .set_time(Duration::from_millis(c.row.virtual_ms));
    if c.flaky() {
        // Passed some runs: a pass whose output names the failing run (the common schema
        // has no flaky element).
        tc.set_system_out(format!(
            "flaky: passed {} of {} runs ({}); the failing run: {}\n{}",
            c.passes,
            c.runs,
            path.display(),
            failure_summary(c),
            failure_text(c)
        ));
    }
    tc
}

fn suite(name: &str, cases: Vec<TestCase>) -> TestSuite {
    let mut s = TestSuite::new(name);
    let time = cases.iter().filter_map(|c| c.time).sum();
    s.add_test_cases(cases);
    s.set_time(time);
    s
}

/// The JUnit XML of a run.
pub fn render(c: &Collected, scenario_id: impl Fn(&Path) -> String) -> String {
    let mut families: BTreeMap<String, Vec<TestCase>> = BTreeMap::new();
    let mut invalid = Vec::new();
    for f in c.unreadable.iter().chain(&c.files) {
        let scenario = scenario_id(&f.path);
        match &f.outcome {
            Ok(cases) => {
                for case in cases {
                    families
                        .entry(case.row.family.clone())
                        .or_default()
                        .push(testcase(&f.path, &scenario, case));
                }
            }
            Err(diags) => {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
                let text: String = diags.iter().map(|d| d.describe_in(&f.path)).collect();
                s.set_message(diags.first().map_or("invalid", |d| d.message.as_str()))
                    .set_type("invalid-scenario")
                    .set_description(text);
                let mut tc = TestCase::new(scenario.as_str(), s);
                tc.set_classname(scenario.as_str()).set_time(Duration::ZERO);
                invalid.push(tc);
            }
        }
    }
    let orphans: Vec<TestCase> = c
        .orphans
        .iter()
        .map(|o| {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_message("golden without a scenario")
                .set_type("orphaned-golden")
                .set_description("restore its scenario, or delete the golden (git rm)\n");
            let name = o.to_string_lossy();
            let mut tc = TestCase::new(name.as_ref(), s);
            tc.set_classname("orphaned-goldens")
                .set_time(Duration::ZERO);
            tc
        })
        .collect();
    let mut report = Report::new("harness");
    for (family, cases) in families {
        report.add_test_suite(suite(&family, cases));
    }
    if !invalid.is_empty() {
        report.add_test_suite(suite("invalid", invalid));
    }
    if !orphans.is_empty() {
        report.add_test_suite(suite("orphaned-goldens", orphans));
    }
    finish(report)
}

/// The report's text, its time the sum of its suites', ending with a newline.
pub(super) fn finish(mut report: Report) -> String {
    let time = report.test_suites.iter().filter_map(|s| s.time).sum();
    report.set_time(time);
    let mut text = report.to_string().unwrap_or_default();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}
