//! The terminal reporter: failing cases with their colored diffs and failed expectations,
//! located errors for bad input, then the summary per family and what each defence saved
//! against the bare loop. Colors follow the terminal (`NO_COLOR`, pipes) via anstream.
//!
//! Output scales with the failures, not the corpus: the first `--diff-limit` failing cases are
//! shown in full (a new golden as a diff against nothing), the rest one line each, and when
//! anything failed the verdict is printed first as well as last, so the head and the tail of a
//! long log both say how the run went. What the run shows about cases is collected until the
//! end for that, which also keeps it clear of a progress bar on the terminal.

use super::{Sums, Tally};
use crate::diagnostic::Diagnostic;
use crate::escape::{escape_controls as shown, escape_in_lines};
use crate::results::FileResult;
use crate::results::Reporter;
use crate::snapshot::Comparison;
use anstyle::{AnsiColor, Style};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// A path as the terminal shows it: control characters spelled out.
fn path(p: &Path) -> String {
    shown(&p.to_string_lossy()).into_owned()
}

const RED: Style = AnsiColor::Red.on_default();
const GREEN: Style = AnsiColor::Green.on_default();
const CYAN: Style = AnsiColor::Cyan.on_default();
const BOLD: Style = Style::new().bold();
const DIM: Style = Style::new().dimmed();
const YELLOW: Style = AnsiColor::Yellow.on_default();

/// Prints to a writer (stdout in the CLI) and keeps the [`Tally`].
pub struct Terminal<W: Write> {
    out: W,
    /// Counts so far.
    pub tally: Tally,
    ci: bool,
    pending_dir: Option<PathBuf>,
    require_cases: Option<Diagnostic>,
    /// Failing cases and bad files as shown, printed under the first verdict at the end.
    shown: Vec<u8>,
    /// Failing cases shown in full, and one line each.
    in_full: usize,
    in_brief: usize,
    /// Failing cases shown in full at most.
    diff_limit: usize,
    /// No summary table or savings: failing cases one line each, then the verdict.
    quiet: bool,
    /// The command the verdict names (`run`, `exec`, `serve`). Any but `run` judges served
    /// conversations: a case there without a golden to compare is a conversation that never
    /// happened (failed with its own reason), not an ad-hoc profile.
    command: &'static str,
    /// What stopped an interrupted run (`Ctrl-C`, `SIGTERM`, `SIGHUP`).
    stopped_by: &'static str,
}

/// Failing cases a run shows in full unless told otherwise (`--diff-limit`).
pub const DEFAULT_DIFF_LIMIT: usize = 10;

impl<W: Write> Terminal<W> {
    /// A reporter writing to `out`; `ci` says pending goldens were not written because `CI` is set.
    pub fn new(out: W, ci: bool) -> Self {
        Self {
            out,
            tally: Tally::default(),
            ci,
            pending_dir: None,
            require_cases: None,
            shown: Vec::new(),
            in_full: 0,
            in_brief: 0,
            diff_limit: DEFAULT_DIFF_LIMIT,
            quiet: false,
            command: "run",
            stopped_by: "Ctrl-C",
        }
    }

    /// Name the verdict `harness exec` and leave out what only a run can have.
    #[must_use]
    pub fn for_exec(mut self, exec: bool) -> Self {
        self.command = if exec { "exec" } else { "run" };
        self
    }

    /// Judge as `harness exec` does, under the verdict of `command` (`serve --judge`).
    #[must_use]
    pub fn for_served(mut self, command: &'static str) -> Self {
        self.command = command;
        self
    }

    /// Does the verdict judge served conversations (`exec`, `serve --judge`)?
    fn serves(&self) -> bool {
        self.command != "run"
    }

    /// Show at most `diff_limit` failing cases in full, the rest one line each; `quiet` shows
    /// every failing case in one line and leaves out the summary tables.
    #[must_use]
    pub fn with_detail(mut self, diff_limit: usize, quiet: bool) -> Self {
        self.diff_limit = diff_limit;
        self.quiet = quiet;
        self
    }

    /// A run in which no case ran fails with this message (no silent green); `None` lets an
    /// empty run pass (`--allow-empty`).
    #[must_use]
    pub fn require_cases(mut self, message: Option<Diagnostic>) -> Self {
        self.require_cases = message;
        self
    }

    /// Pending goldens go to this folder (`--pending-dir`), CI or not.
    #[must_use]
    pub fn with_pending_dir(mut self, dir: Option<PathBuf>) -> Self {
        self.pending_dir = dir;
        self
    }

    fn sums_line(
        &mut self,
        (fw, pw): (usize, usize),
        family: &str,
        profile: &str,
        s: &Sums,
    ) -> io::Result<()> {
        let [runs, iterations, wasted, interventions, tokens, time, cost] = s.cells();
        let (family, profile) = (shown(family), shown(profile));
        writeln!(
            self.out,
            "  {family:<fw$} {profile:<pw$} {runs:>5} {iterations:>10} {wasted:>7} {interventions:>13} {tokens:>10} {time:>12} {cost:>10}",
        )
    }
}

/// Print a unified diff indented, colored by line kind (the colors go when `out` strips them).
pub(crate) fn paint_diff(out: &mut impl Write, diff: &str) -> io::Result<()> {
    for line in diff.lines() {
        let style = if line.starts_with("+++") || line.starts_with("---") {
            BOLD
        } else if line.starts_with('+') {
            GREEN
        } else if line.starts_with('-') {
            RED
        } else if line.starts_with("@@") {
            CYAN
        } else {
            DIM
        };
        writeln!(out, "    {style}{}{style:#}", shown(line))?;
    }
    Ok(())
}

/// `1h02m03s`, `4m10s`, `12.5s`.
pub(crate) fn duration(ms: u64) -> String {
    let s = ms / 1000;
    if s >= 3600 {
        format!("{}h{:02}m{:02}s", s / 3600, s % 3600 / 60, s % 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{}.{}s", s, ms % 1000 / 100)
    }
}

/// `25 → 4 (-84%)`: the bare loop's figure, the defence's, and the relative change.
pub(crate) fn change(own: u64, none: u64, show: impl Fn(u64) -> String) -> String {
    let pct = if none == 0 {
        String::new()
    } else {
        format!(
            " ({:+.0}%)",
            (own as f64 - none as f64) * 100.0 / none as f64
        )
    };
    format!("{} \u{2192} {}{pct}", show(none), show(own))
}

impl<W: Write> Reporter for Terminal<W> {
    fn interrupted(&mut self, not_run: usize, by: &'static str) -> io::Result<()> {
        self.tally.interrupted = Some(not_run);
        self.stopped_by = by;
        Ok(())
    }

    fn file(&mut self, result: &FileResult) -> io::Result<()> {
        self.tally.add(result);
        let out = &mut self.shown;
        let cases = match &result.outcome {
            Ok(cases) => cases,
            Err(diags) => {
                let style = crate::diagnostic::Style {
                    error: (RED.render().to_string(), RED.render_reset().to_string()),
                    message: (BOLD.render().to_string(), BOLD.render_reset().to_string()),
                    hint: (CYAN.render().to_string(), CYAN.render_reset().to_string()),
                };
                for d in diags {
                    out.write_all(d.render_in(&result.path, &style).as_bytes())?;
                }
                return Ok(());
            }
        };
        for c in cases.iter().filter(|c| !c.passed()) {
            let path = path(&result.path);
            if self.quiet || self.in_full >= self.diff_limit {
                self.in_brief += 1;
                let (label, style) = if c.flaky() {
                    ("FLAKY", YELLOW)
                } else {
                    ("FAIL", RED)
                };
                writeln!(
                    out,
                    "{style}{label}{style:#} {BOLD}{}{BOLD:#}  {}  ({path})",
                    shown(&c.id),
                    shown(&super::junit::failure_summary(c))
                )?;
                continue;
            }
            self.in_full += 1;
            if c.flaky() {
                writeln!(
                    out,
                    "{YELLOW}FLAKY{YELLOW:#} {BOLD}{}{BOLD:#}  passed {} of {} runs  ({path}); the failing run:",
                    shown(&c.id),
                    c.passes,
                    c.runs,
                )?;
            }
            let what = match &c.golden {
                Comparison::Match | Comparison::Ungated if c.expectation_failures.is_empty() => {
                    "its files could not be written"
                }
                Comparison::Match | Comparison::Ungated => "expectations failed",
                Comparison::Missing(_) => "no golden yet",
                Comparison::Differs(_) => "golden differs",
            };
            if !c.flaky() {
                writeln!(
                    out,
                    "{RED}FAIL{RED:#} {BOLD}{}{BOLD:#}  {what}  ({path})",
                    shown(&c.id)
                )?;
            }
            if let Comparison::Differs(d) | Comparison::Missing(d) = &c.golden {
                paint_diff(out, d)?;
            }
            for e in &c.expectation_failures {
                writeln!(out, "    {RED}expected{RED:#} {}", escape_in_lines(e))?;
            }
            for e in &c.io_errors {
                writeln!(out, "    {RED}io error{RED:#} {}", shown(e))?;
            }
        }
        Ok(())
    }

    fn orphan(&mut self, path: &Path) -> io::Result<()> {
        writeln!(
            self.shown,
            "{RED}FAIL{RED:#} {BOLD}{}{BOLD:#}  golden without a scenario",
            self::path(path)
        )?;
        writeln!(
            self.shown,
            "  {CYAN}hint{CYAN:#}: restore its scenario, or delete the golden (git rm)"
        )?;
        self.tally.orphans.push(path.to_owned());
        Ok(())
    }

    fn finish(&mut self) -> io::Result<()> {
        if self.tally.cases == 0
            && self.tally.invalid_files == 0
            && self.tally.orphans.is_empty()
            && self.tally.interrupted.is_none()
        {
            self.tally.nothing_selected = self.require_cases.clone();
        }
        let t = self.tally.clone();
        let failed = t.cases - t.passed - t.flaky;
        let verdict = if t.interrupted.is_some() {
            format!("{RED}INTERRUPTED{RED:#}")
        } else if t.exit_code().is_ok() {
            format!("{GREEN}ok{GREEN:#}")
        } else {
            format!("{RED}FAILED{RED:#}")
        };
        let command = self.command;
        let verdict = format!(
            "harness {command}: {verdict}. {} cases from {} files: {} passed, {failed} failed \
             ({} golden mismatches, {} missing goldens, {} expectation failures), \
             {} invalid files, {} orphaned goldens",
            t.cases,
            t.files,
            t.passed,
            t.mismatched,
            t.missing,
            t.expectation_failures,
            t.invalid_files,
            t.orphans.len()
        );
        if !self.shown.is_empty() {
            writeln!(self.out, "{verdict}")?;
            writeln!(self.out)?;
            self.out.write_all(&self.shown)?;
            self.shown = Vec::new();
        }
        if self.in_brief > 0 && !self.quiet {
            writeln!(
                self.out,
                "{} failing case(s) shown in full, {} more in one line each (--diff-limit N shows more; `harness diff` prints every pending golden)",
                self.in_full, self.in_brief
            )?;
        }
        if !self.quiet || self.in_brief + self.in_full > 0 {
            writeln!(self.out)?;
        }
        // Columns as wide as their longest name (a long exec label stays aligned).
        let widths = t.groups.keys().fold((22, 10), |(fw, pw), (f, p)| {
            (
                fw.max(shown(f).chars().count()),
                pw.max(shown(p).chars().count()),
            )
        });
        let (fw, pw) = widths;
        if !t.groups.is_empty() && !self.quiet {
            writeln!(
                self.out,
                "{BOLD}  {:<fw$} {:<pw$} {:>5} {:>10} {:>7} {:>13} {:>10} {:>12} {:>10}{BOLD:#}",
                "family",
                "profile",
                "runs",
                "iterations",
                "wasted",
                "interventions",
                "tokens",
                "virtual time",
                "cost"
            )?;
            for ((family, profile), sums) in &t.groups {
                self.sums_line(widths, family, profile, sums)?;
            }
            writeln!(self.out)?;
        }
        if !t.savings.is_empty() && !self.quiet {
            writeln!(
                self.out,
                "{BOLD}Each defence against profile none on the same scenarios (none \u{2192} defence):{BOLD:#}"
            )?;
            for ((family, profile), (own, none)) in &t.savings {
                let (family, profile) = (shown(family), shown(profile));
                writeln!(
                    self.out,
                    "  {family:<fw$} {profile:<pw$} iterations {}, virtual time {}, tokens {}, over {} scenarios",
                    change(own.iterations, none.iterations, |n| n.to_string()),
                    change(own.virtual_ms, none.virtual_ms, duration),
                    change(own.tokens, none.tokens, |n| n.to_string()),
                    own.runs,
                )?;
            }
            writeln!(self.out)?;
        }
        writeln!(self.out, "{verdict}")?;
        if let Some(not_run) = t.interrupted {
            writeln!(
                self.out,
                "interrupted ({}): the counts above cover the files run; {not_run} scenario files were not run, orphaned goldens were not looked for, and no report file (--json, --junit, --metrics, baseline) was written",
                self.stopped_by
            )?;
        }
        if t.max_runs > 1 {
            writeln!(
                self.out,
                "repeats: up to {k} runs per case; pass@{k} {} of {} cases, pass^{k} {} of {}",
                t.pass_at_k,
                t.cases,
                t.pass_all_k,
                t.cases,
                k = t.max_runs
            )?;
        }
        if t.flaky > 0 {
            writeln!(
                self.out,
                "{} flaky case(s) passed some runs and failed others (--repeat): reported, not failed",
                t.flaky
            )?;
        }
        if t.ungated > 0 && !self.serves() {
            writeln!(
                self.out,
                "{} ad-hoc run(s) under --profile are reported above but not gated (no golden, no expectations)",
                t.ungated
            )?;
        }
        if t.mismatched + t.missing > 0 {
            if let Some(dir) = &self.pending_dir {
                writeln!(
                    self.out,
                    "{} pending golden(s) written to {}: review them with `harness diff --pending-dir {}`, keep them with `harness accept --pending-dir {}`",
                    t.pending_written,
                    dir.display(),
                    dir.display(),
                    dir.display()
                )?;
            } else if self.ci {
                let command = if self.serves() { "it" } else { "`harness run`" };
                writeln!(
                    self.out,
                    "pending goldens were not written because CI is set; run {command} locally to review them"
                )?;
            } else if t.pending_written > 0 {
                let review = if self.in_brief > 0 {
                    "review them with `harness diff` (which prints every one)"
                } else {
                    "review the diffs above"
                };
                writeln!(
                    self.out,
                    "{} pending golden(s) written beside the goldens (.snap.new): {review}, then run `harness accept` to keep them or `harness reject` to discard them",
                    t.pending_written
                )?;
            }
        }
        self.out.flush()
    }
}
