//! GitHub Actions: `::error` workflow commands that annotate failing scenarios at their file
//! and line, and the Markdown job summary (counts, the metrics table, defence savings). The
//! CLI turns them on when `GITHUB_ACTIONS` is set and appends the summary to the file named
//! by `GITHUB_STEP_SUMMARY`; this module only formats.

use super::{Collected, change, duration, junit::failure_summary};
use crate::results::FileResult;
use crate::results::Reporter;
use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::Path;

/// A workflow command's message, escaped as GitHub's runner reads it back (other control
/// characters spelled out).
pub fn escape_data(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '%' => out.push_str("%25"),
            '\r' => out.push_str("%0D"),
            '\n' => out.push_str("%0A"),
            c if crate::escape::is_unsafe(c) => {
                out.push_str(&crate::escape::escape_controls(&c.to_string()))
            }
            c => out.push(c),
        }
    }
    out
}

/// A workflow command's property value (also `:` and `,` are escaped).
pub fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// `::error file=…,line=…,title=…::message`.
pub fn command(level: &str, file: &Path, line: usize, title: &str, message: &str) -> String {
    format!(
        "::{level} file={},line={line},title={}::{}",
        escape_property(&file.to_string_lossy().replace('\\', "/")),
        escape_property(title),
        escape_data(message)
    )
}

/// Writes an annotation for every failing case, invalid file and orphaned golden as results
/// arrive.
pub struct Annotations<W: Write> {
    out: W,
}

impl<W: Write> Annotations<W> {
    /// Annotations written to `out` (stdout on the runner).
    pub fn new(out: W) -> Self {
        Self { out }
    }
}

impl<W: Write> Reporter for Annotations<W> {
    fn file(&mut self, result: &FileResult) -> io::Result<()> {
        match &result.outcome {
            Err(diags) => {
                for d in diags {
                    let mut msg = d.message.clone();
                    if let Some(h) = &d.hint {
                        msg.push_str(&format!("\nhint: {h}"));
                    }
                    writeln!(
                        self.out,
                        "{}",
                        command(
                            "error",
                            &result.path,
                            d.line(),
                            "harness: invalid scenario",
                            &msg
                        )
                    )?;
                }
            }
            Ok(cases) => {
                for c in cases.iter().filter(|c| !c.passed()) {
                    let (level, title) = if c.flaky() {
                        ("warning", format!("harness: {} is flaky", c.id))
                    } else {
                        ("error", format!("harness: {} failed", c.id))
                    };
                    let mut msg = failure_summary(c);
                    if c.flaky() {
                        msg = format!("passed {} of {} runs; {msg}", c.passes, c.runs);
                    }
                    writeln!(
                        self.out,
                        "{}",
                        command(level, &result.path, c.line, &title, &msg)
                    )?;
                }
            }
        }
        Ok(())
    }

    fn orphan(&mut self, path: &Path) -> io::Result<()> {
        writeln!(
            self.out,
            "{}",
            command(
                "error",
                path,
                1,
                "harness: golden without a scenario",
                "restore its scenario, or delete the golden (git rm)"
            )
        )
    }

    fn finish(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// Markdown cell text: pipes escaped, one line, control characters spelled out.
fn cell(s: &str) -> String {
    crate::escape::escape_controls(&s.replace('|', "\\|").replace('\n', " ")).into_owned()
}

/// The job summary: verdict and counts, failing cases, the metrics table per family and
/// profile, what each defence saved against the bare loop, then `extra` (the baseline check).
pub fn summary(c: &Collected, extra: &str) -> String {
    let t = c.tally();
    let mut md = String::new();
    let verdict = if t.exit_code().is_ok() {
        "ok"
    } else {
        "FAILED"
    };
    let _ = writeln!(md, "## harness run: {verdict}\n");
    let _ = writeln!(
        md,
        "{} cases from {} files: {} passed, {} failed, {} flaky ({} golden mismatches, {} missing \
         goldens, {} expectation failures), {} invalid files, {} orphaned goldens\n",
        t.cases,
        t.files,
        t.passed,
        t.cases - t.passed - t.flaky,
        t.flaky,
        t.mismatched,
        t.missing,
        t.expectation_failures,
        t.invalid_files,
        t.orphans.len()
    );
    let failing: Vec<String> = c
        .cases()
        .filter(|(_, c)| !c.passed())
        .map(|(path, c)| {
            let what = if c.flaky() { "flaky: " } else { "" };
            format!(
                "- `{}` ({}:{}): {what}{}",
                c.id,
                path.display(),
                c.line,
                cell(&failure_summary(c))
            )
        })
        .chain(c.unreadable.iter().chain(&c.files).filter_map(|f| {
            let d = f.outcome.as_ref().err()?.first()?;
            Some(format!(
                "- `{}:{}:{}`: {}",
                f.path.display(),
                d.line(),
                d.col(),
                cell(&d.message)
            ))
        }))
        .chain(
            t.orphans
                .iter()
                .map(|o| format!("- `{}`: golden without a scenario", o.display())),
        )
        .collect();
    if !failing.is_empty() {
        let _ = writeln!(md, "### Failing\n\n{}\n", failing.join("\n"));
    }
    if !t.groups.is_empty() {
        md.push_str("### Metrics\n\n| family | profile | runs | iterations | wasted | interventions | tokens | virtual time | cost |\n| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
        for ((family, profile), s) in &t.groups {
            let _ = writeln!(
                md,
                "| {} | {} | {} |",
                cell(family),
                cell(profile),
                s.cells().join(" | ")
            );
        }
        md.push('\n');
    }
    if !t.savings.is_empty() {
        md.push_str("### Defence savings (none → defence, same scenarios)\n\n| family | profile | iterations | virtual time | tokens | scenarios |\n| --- | --- | --- | --- | --- | ---: |\n");
        for ((family, profile), (own, none)) in &t.savings {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} |",
                cell(family),
                cell(profile),
                change(own.iterations, none.iterations, |n| n.to_string()),
                change(own.virtual_ms, none.virtual_ms, duration),
                change(own.tokens, none.tokens, |n| n.to_string()),
                own.runs
            );
        }
        md.push('\n');
    }
    md.push_str(extra);
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workflow_commands_escape_what_the_runner_would_misread() {
        let line = command(
            "error",
            Path::new("scenarios/a,b:c.toml"),
            7,
            "harness: x@none failed",
            "50% done\r\nnext: line",
        );
        assert_eq!(
            line,
            "::error file=scenarios/a%2Cb%3Ac.toml,line=7,title=harness%3A x@none failed::50%25 done%0D%0Anext: line"
        );
        assert_eq!(cell("a|b\nc"), "a\\|b c");
    }
}
