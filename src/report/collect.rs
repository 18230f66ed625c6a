//! [`Collected`]: a reporter that keeps every result, in order, for the outputs made after the
//! run (JSON, JUnit, the GitHub job summary, the baseline check) and for replaying merged
//! shards through the streaming reporters.

use super::Tally;
use crate::results::Reporter;
use crate::results::{CaseResult, FileResult};
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
    /// Set when a stop signal ended the run before every case ran (`harness suite` keeps its
    /// card, marked so).
    pub stopped: Option<Stopped>,
}

pub use crate::results::Stopped;

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
        if let Some(s) = &self.stopped {
            reporter.incomplete(s)?;
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
    fn incomplete(&mut self, stopped: &Stopped) -> io::Result<()> {
        self.stopped = Some(stopped.clone());
        Ok(())
    }
    fn finish(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Terminal, json, junit};
    use crate::results::ExitStatus;
    use crate::results::repeat::{self, fake_result as case};

    /// A run whose second case passed one of two runs (a fake nondeterministic runner).
    fn flaky_run() -> Collected {
        let flaky = repeat::fold(case("s/b", true), 2, || case("s/b", false));
        Collected {
            files: vec![FileResult {
                path: PathBuf::from("scenarios/s/b.toml"),
                outcome: Ok(vec![case("s/a", true), flaky]),
            }],
            ..Collected::default()
        }
    }

    #[test]
    fn flaky_cases_are_reported_apart_in_every_output() {
        let c = flaky_run();
        let t = c.tally();
        assert_eq!((t.cases, t.passed, t.flaky, t.mismatched), (2, 1, 1, 0));
        assert_eq!(t.exit_code(), ExitStatus::Ok, "flaky is not a regression");

        let mut out = Vec::new();
        c.replay(&mut Terminal::new(
            anstream::StripStream::new(&mut out),
            false,
        ))
        .unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("FLAKY s/b  passed 1 of 2 runs"), "{text}");
        assert!(
            text.contains("2 cases from 1 files: 1 passed, 0 failed"),
            "{text}"
        );
        assert!(text.contains("1 flaky case(s)"), "{text}");
        assert!(
            text.contains("repeats: up to 2 runs per case; pass@2 2 of 2 cases, pass^2 1 of 2"),
            "{text}"
        );

        let j = json::render(&c);
        assert!(j.contains("\"status\": \"flaky\""), "{j}");
        assert!(j.contains("\"flaky\": 1"), "{j}");
        // Read back, the results render the same.
        assert_eq!(json::render(&json::parse(&j).unwrap()), j);

        let xml = junit::render(&c, |_| "s/b".to_owned());
        assert!(xml.contains("failures=\"0\""), "{xml}");
        assert!(
            xml.contains("<system-out>flaky: passed 1 of 2 runs"),
            "{xml}"
        );
        assert!(!xml.contains("<failure"), "{xml}");
    }
}
