//! What a run produced, in the words every consumer shares: a case's and a file's results, the
//! [`Reporter`] that consumes them in order, `--repeat`'s folding of runs, and the exit codes.
//!
//! It sits below both the runner (`run`, which produces results) and the outputs (`report`,
//! `verdict`, `exec`, which consume them), so every arrow points down. Pure: no files, clocks or
//! threads.

pub mod card;
pub mod repeat;

use crate::metrics::Row;
use crate::scenario::Diagnostic;
use crate::snapshot::Comparison;
use crate::trace::TimedEvent;
use std::io;
use std::path::{Path, PathBuf};

pub use crate::diagnostic::ExitStatus;

/// A run a stop signal ended early: which signal, and how far it got.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Stopped {
    /// `Ctrl-C`, `SIGTERM` or `SIGHUP`.
    pub by: String,
    /// Cases that ran.
    pub done: usize,
    /// Cases the run was to run.
    pub of: usize,
}

impl Stopped {
    /// "stopped by SIGTERM after 6 of N cases" (N the cases the run took).
    pub fn line(&self) -> String {
        format!(
            "stopped by {} after {} of {} cases",
            self.by, self.done, self.of
        )
    }
}

/// Consumes a run's results in order.
pub trait Reporter {
    /// One scenario file's results.
    fn file(&mut self, result: &FileResult) -> io::Result<()>;
    /// A path that could not be read at all (reported before the files).
    fn unreadable(&mut self, result: &FileResult) -> io::Result<()> {
        self.file(result)
    }
    /// A golden whose scenario is gone.
    fn orphan(&mut self, path: &Path) -> io::Result<()>;
    /// The run was stopped `by` a signal (`Ctrl-C`, `SIGTERM`, `SIGHUP`) with `not_run` files
    /// left; `finish` follows.
    fn interrupted(&mut self, not_run: usize, by: &'static str) -> io::Result<()> {
        let _ = (not_run, by);
        Ok(())
    }
    /// The results are of a suite a stop signal ended early (read back from a file that says
    /// so); `finish` follows.
    fn incomplete(&mut self, stopped: &Stopped) -> io::Result<()> {
        let _ = stopped;
        Ok(())
    }
    /// The run is over.
    fn finish(&mut self) -> io::Result<()>;
}

/// One case's result.
#[derive(Debug, Clone)]
pub struct CaseResult {
    /// Case id.
    pub id: String,
    /// Metrics.
    pub row: Row,
    /// Golden comparison.
    pub golden: Comparison,
    /// Whether a pending golden was written.
    pub pending_written: bool,
    /// Expectations that did not hold.
    pub expectation_failures: Vec<String>,
    /// Errors writing pending goldens or traces.
    pub io_errors: Vec<String>,
    /// Line of the case in its file (its `[compare.NAME]` table; 1 for the scenario's own).
    pub line: usize,
    /// Runs of the case (`--repeat`).
    pub runs: u32,
    /// Runs that passed.
    pub passes: u32,
    /// What a reviewer sees besides the verdict (the trace, the scenario's tags); kept only
    /// when an output asks for it (`--json`, `--html`), so a plain run holds no traces.
    pub detail: Option<Box<Detail>>,
    /// The report card's reading, when the scenario is a suite case (`[suite]`).
    pub card: Option<card::Entry>,
}

/// A case's run as a reviewer looks at it: the trace of the run shown (the first failing
/// one under `--repeat`) and the scenario's tags.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Detail {
    /// The scenario's tags.
    pub tags: Vec<String>,
    /// The conversation's opening system message (empty: none).
    pub system: String,
    /// The conversation's opening user message (empty: none).
    pub user: String,
    /// The trace.
    pub events: Vec<TimedEvent>,
}

impl CaseResult {
    /// Did the case pass?
    pub fn passed(&self) -> bool {
        matches!(self.golden, Comparison::Match | Comparison::Ungated)
            && self.expectation_failures.is_empty()
            && self.io_errors.is_empty()
    }

    /// Did some runs pass and others not (`--repeat`)?
    pub fn flaky(&self) -> bool {
        self.passes > 0 && self.passes < self.runs
    }
}

/// One scenario file's results.
#[derive(Debug, Clone)]
pub struct FileResult {
    /// The file.
    pub path: PathBuf,
    /// Its cases, or why it could not run.
    pub outcome: Result<Vec<CaseResult>, Vec<Diagnostic>>,
}
