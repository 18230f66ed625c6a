//! Reporters: every output of a run consumes the same stream of file results — the terminal
//! (diffs, errors, the per-family summary), the metrics CSV, GitHub annotations, and the
//! [`Collected`] results that the JSON, JUnit, job-summary and HTML outputs are made from —
//! and [`Tally`] keeps the counts that decide the exit code.

pub mod card;
mod collect;
pub mod github;
pub mod html;
pub mod json;
pub mod junit;
pub mod otlp;
mod terminal;

pub use collect::{Collected, Stopped};
pub use terminal::{DEFAULT_DIFF_LIMIT, Terminal};
pub(crate) use terminal::{change, duration, paint_diff};

use crate::diagnostic::Diagnostic;
use crate::metrics::{CsvSink, Row};
use crate::results::{ExitStatus, FileResult, Reporter};
use crate::snapshot::Comparison;
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

/// Fans results out to several reporters.
pub struct Fanout<'a>(pub Vec<&'a mut dyn Reporter>);

impl Reporter for Fanout<'_> {
    fn file(&mut self, result: &FileResult) -> io::Result<()> {
        self.0.iter_mut().try_for_each(|r| r.file(result))
    }
    fn unreadable(&mut self, result: &FileResult) -> io::Result<()> {
        self.0.iter_mut().try_for_each(|r| r.unreadable(result))
    }
    fn orphan(&mut self, path: &Path) -> io::Result<()> {
        self.0.iter_mut().try_for_each(|r| r.orphan(path))
    }
    fn interrupted(&mut self, not_run: usize, by: &'static str) -> io::Result<()> {
        self.0
            .iter_mut()
            .try_for_each(|r| r.interrupted(not_run, by))
    }
    fn incomplete(&mut self, stopped: &Stopped) -> io::Result<()> {
        self.0.iter_mut().try_for_each(|r| r.incomplete(stopped))
    }
    fn finish(&mut self) -> io::Result<()> {
        self.0.iter_mut().try_for_each(|r| r.finish())
    }
}

/// Sums of metrics over a group of runs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sums {
    /// Runs.
    pub runs: u64,
    /// Iterations.
    pub iterations: u64,
    /// Wasted iterations.
    pub wasted: u64,
    /// Interventions (all stages).
    pub interventions: u64,
    /// Input + output tokens.
    pub tokens: u64,
    /// Virtual milliseconds.
    pub virtual_ms: u64,
    /// Cost in US dollars.
    pub cost_usd: f64,
}

impl Sums {
    /// The summary table's figures, as shown: runs, iterations, wasted, interventions,
    /// tokens, virtual time, cost.
    pub fn cells(&self) -> [String; 7] {
        [
            self.runs.to_string(),
            self.iterations.to_string(),
            self.wasted.to_string(),
            self.interventions.to_string(),
            self.tokens.to_string(),
            duration(self.virtual_ms),
            format!("${:.4}", self.cost_usd),
        ]
    }

    fn add(&mut self, r: &Row) {
        // Saturating: merged results of any size never wrap.
        self.runs = self.runs.saturating_add(1);
        self.iterations = self.iterations.saturating_add(u64::from(r.iterations));
        self.wasted = self.wasted.saturating_add(u64::from(r.wasted_iterations));
        self.interventions = self.interventions.saturating_add(
            u64::from(r.interventions_stage1)
                + u64::from(r.interventions_stage2)
                + u64::from(r.interventions_stage3),
        );
        self.tokens = self
            .tokens
            .saturating_add(r.input_tokens.saturating_add(r.output_tokens));
        self.virtual_ms = self.virtual_ms.saturating_add(r.virtual_ms);
        self.cost_usd += r.cost_usd;
    }
}

/// Counts and aggregates of a run.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    /// Scenario files seen.
    pub files: u64,
    /// Cases run.
    pub cases: u64,
    /// Cases that passed.
    pub passed: u64,
    /// Cases that passed some runs and failed others (`--repeat`): neither passed nor failed.
    pub flaky: u64,
    /// Most runs of one case (`--repeat`).
    pub max_runs: u32,
    /// Cases with at least one passing run (pass@k).
    pub pass_at_k: u64,
    /// Cases whose every run passed (pass^k).
    pub pass_all_k: u64,
    /// Goldens that differ.
    pub mismatched: u64,
    /// Goldens missing.
    pub missing: u64,
    /// Cases with failed expectations.
    pub expectation_failures: u64,
    /// Cases with I/O errors.
    pub io_errors: u64,
    /// Files that could not run.
    pub invalid_files: u64,
    /// Goldens without a scenario.
    pub orphans: Vec<PathBuf>,
    /// Pending goldens written.
    pub pending_written: u64,
    /// Ad-hoc cases (`--profile`), not gated.
    pub ungated: u64,
    /// Per (family, profile).
    pub groups: BTreeMap<(String, String), Sums>,
    /// The run was interrupted, with this many files not run.
    pub interrupted: Option<usize>,
    /// No case ran although some had to: why, naming the paths and filters (bad input).
    pub nothing_selected: Option<Diagnostic>,
    /// Per (family, profile): the profile's runs and the same scenarios under `none` (every
    /// case of a scenario that also ran under `none`: its own profile, `compare` and
    /// `--profile` cases alike).
    pub savings: BTreeMap<(String, String), (Sums, Sums)>,
}

impl Tally {
    /// Count one file's results.
    pub fn add(&mut self, result: &FileResult) {
        self.files += 1;
        let cases = match &result.outcome {
            Ok(c) => c,
            Err(_) => {
                self.invalid_files += 1;
                return;
            }
        };
        for c in cases {
            self.cases += 1;
            if c.passed() {
                self.passed += 1;
            }
            self.max_runs = self.max_runs.max(c.runs);
            self.pass_at_k += u64::from(crate::results::repeat::pass_at_k(c));
            self.pass_all_k += u64::from(crate::results::repeat::pass_all_k(c));
            if c.flaky() {
                self.flaky += 1;
            } else {
                match c.golden {
                    Comparison::Match => {}
                    Comparison::Ungated => self.ungated += 1,
                    Comparison::Missing(_) => self.missing += 1,
                    Comparison::Differs(_) => self.mismatched += 1,
                }
                if !c.expectation_failures.is_empty() {
                    self.expectation_failures += 1;
                }
            }
            if !c.io_errors.is_empty() {
                self.io_errors += 1;
            }
            if c.pending_written {
                self.pending_written += 1;
            }
            self.groups
                .entry((c.row.family.clone(), c.row.profile.clone()))
                .or_default()
                .add(&c.row);
        }
        // Pair every run under a defence with the same scenario's run under `none`.
        if let Some(none) = cases.iter().find(|c| c.row.profile == "none") {
            for c in cases.iter().filter(|c| c.row.profile != "none") {
                let entry = self
                    .savings
                    .entry((c.row.family.clone(), c.row.profile.clone()))
                    .or_default();
                entry.0.add(&c.row);
                entry.1.add(&none.row);
            }
        }
    }

    /// The exit code these results call for.
    pub fn exit_code(&self) -> ExitStatus {
        if self.interrupted.is_some() {
            ExitStatus::Interrupted
        } else if self.invalid_files > 0 || self.nothing_selected.is_some() {
            ExitStatus::BadInput
        } else if self.passed + self.flaky < self.cases || !self.orphans.is_empty() {
            ExitStatus::Failed
        } else {
            ExitStatus::Ok
        }
    }
}

/// Writes the metrics CSV atomically: rows stream into a temporary file beside the target,
/// renamed over it when the run finishes (see [`crate::store::Output`] for links and devices).
pub struct MetricsCsv {
    sink: Option<CsvSink<io::BufWriter<crate::store::Output>>>,
}

impl MetricsCsv {
    /// A CSV reporter writing to `target`.
    pub fn create(target: &Path) -> io::Result<Self> {
        let out = crate::store::Output::create(target)?;
        Ok(Self {
            sink: Some(CsvSink::new(io::BufWriter::new(out))),
        })
    }
}

impl Reporter for MetricsCsv {
    fn file(&mut self, result: &FileResult) -> io::Result<()> {
        let (Some(sink), Ok(cases)) = (&mut self.sink, &result.outcome) else {
            return Ok(());
        };
        cases.iter().try_for_each(|c| sink.write(&c.row))
    }

    fn orphan(&mut self, _path: &Path) -> io::Result<()> {
        Ok(())
    }

    fn interrupted(&mut self, _not_run: usize, _by: &'static str) -> io::Result<()> {
        // A partial CSV is never persisted; dropping the temporary file deletes it.
        self.sink = None;
        Ok(())
    }

    fn finish(&mut self) -> io::Result<()> {
        let Some(sink) = self.sink.take() else {
            return Ok(());
        };
        let out = sink.finish()?.into_inner().map_err(|e| e.into_error())?;
        out.commit()
    }
}
