//! [`Collected`]: a reporter that keeps every result, in order, for the outputs made after the
//! run (JSON, JUnit, the GitHub job summary, the baseline check) and for replaying merged
//! shards through the streaming reporters.

use super::{Reporter, Tally};
use crate::run::{CaseResult, FileResult};
use std::io;
use std::path::{Path, PathBuf};

/// A run's results, in the order the reporters saw them.
#[derive(Debug, Clone, Default)]
pub struct Collected {
    /// Paths that could not be read (reported first).
    pub unreadable: Vec<FileResult>,
    /// Scenario files, in run order (sorted by path).
    pub files: Vec<FileResult>,
    /// Goldens without a scenario.
    pub orphans: Vec<PathBuf>,
}

impl Collected {
    /// Feed the results, in their order, to a reporter (and finish it).
    pub fn replay(&self, reporter: &mut dyn Reporter) -> io::Result<()> {
        for f in &self.unreadable {
            reporter.unreadable(f)?;
        }
        for f in &self.files {
            reporter.file(f)?;
        }
        for o in &self.orphans {
            reporter.orphan(o)?;
        }
        reporter.finish()
    }

    /// Every case with the file it came from, in order.
    pub fn cases(&self) -> impl Iterator<Item = (&Path, &CaseResult)> {
        self.files.iter().flat_map(|f| {
            f.outcome
                .as_ref()
                .map_or(&[][..], Vec::as_slice)
                .iter()
                .map(|c| (f.path.as_path(), c))
        })
    }

    /// The counts, as the terminal reporter keeps them.
    pub fn tally(&self) -> Tally {
        let mut t = Tally::default();
        for f in self.unreadable.iter().chain(&self.files) {
            t.add(f);
        }
        t.orphans.clone_from(&self.orphans);
        t
    }
}

impl Reporter for Collected {
    fn file(&mut self, result: &FileResult) -> io::Result<()> {
        self.files.push(result.clone());
        Ok(())
    }
    fn unreadable(&mut self, result: &FileResult) -> io::Result<()> {
        self.unreadable.push(result.clone());
        Ok(())
    }
    fn orphan(&mut self, path: &Path) -> io::Result<()> {
        self.orphans.push(path.to_owned());
        Ok(())
    }
    fn finish(&mut self) -> io::Result<()> {
        Ok(())
    }
}
