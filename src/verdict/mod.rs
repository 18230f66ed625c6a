//! A run's verdict: its results fed to the terminal and every requested output (metrics CSV,
//! JSON results, JUnit, the HTML report, GitHub annotations and job summary), checked against
//! the metric baseline (`--baseline`, pure in [`baseline`]), and the exit status that follows;
//! shards' JSON results joined into the results one run would give (`harness merge`).
//!
//! Every output is made from the same results, so merged shards give what one run gives. This
//! module writes the result files; the commands that choose them are `cli`'s.

pub mod baseline;
pub mod scorecard;

use crate::diagnostic::{Cause, Diagnostic, Style};
use crate::report::{self, Collected, Fanout, MetricsCsv, Terminal, github, html, json, junit};
use crate::results::{ExitStatus, Reporter};
use crate::store::{self, Layout};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Where a run's (or a merge's) results go besides the terminal.
#[derive(Debug, Clone, Default)]
pub struct Outputs {
    /// Metrics CSV.
    pub metrics: Option<PathBuf>,
    /// JUnit XML.
    pub junit: Option<PathBuf>,
    /// JSON results.
    pub json: Option<PathBuf>,
    /// Metric baseline to check against.
    pub baseline: Option<PathBuf>,
    /// Write GitHub workflow commands (annotations).
    pub github_annotations: bool,
    /// Append the Markdown job summary to this file.
    pub step_summary: Option<PathBuf>,
    /// `CI` is set: pending goldens are not written beside the goldens.
    pub ci: bool,
    /// Pending goldens go to this folder.
    pub pending_dir: Option<PathBuf>,
    /// The HTML report.
    pub html: Option<PathBuf>,
    /// Every case's trace as OpenTelemetry spans (OTLP JSON lines).
    pub otlp: Option<PathBuf>,
    /// What to say when no case ran: an empty run is bad input (exit 2) with this message;
    /// `None` lets it pass (`--allow-empty`).
    pub require_cases: Option<Diagnostic>,
    /// Failing cases shown in full (`--diff-limit`; default [`report::DEFAULT_DIFF_LIMIT`]).
    pub diff_limit: Option<usize>,
    /// Failing cases in one line each and no summary tables (`--quiet`).
    pub quiet: bool,
    /// The command whose verdict this is: `run` (also for `merge`, which reports a run) or
    /// `exec`, which has no ad-hoc profiles.
    pub command: Command,
}

impl Outputs {
    /// Do the requested outputs show each case's trace (`--json`, `--html`)? Only then does
    /// a run keep them.
    pub fn keeps_traces(&self) -> bool {
        self.json.is_some() || self.html.is_some() || self.otlp.is_some()
    }
}

/// The command a report's verdict names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Command {
    /// `harness run` (and `merge`).
    #[default]
    Run,
    /// `harness exec`.
    Exec,
}

/// Read and parse a baseline file; a bad one is a located error with a hint.
pub fn load_baseline(path: &Path) -> Result<baseline::Baseline, Diagnostic> {
    let writer = "`harness bless`";
    store::guard::check_regular(path, "baseline").map_err(|e| Diagnostic::new(e.to_string()))?;
    let located = |d: Diagnostic| d.in_file(path).hint_by(|c| input_hint(c, writer));
    // Read line by line: a baseline of many cases is never held whole (`baseline::Reader`).
    let mut reader = baseline::Reader::default();
    store::for_each_input_line(path, "baseline", crate::limits::MAX_BASELINE_BYTES, |line| {
        reader.line(line)
    })
    .map_err(|e| match e.kind() {
        io::ErrorKind::InvalidData => e
            .diagnostic(path, "")
            .hint_by(|cause| input_hint(cause, writer)),
        io::ErrorKind::NotFound => Diagnostic::new(format!(
            "cannot read baseline {}: there is no such file",
            path.display()
        ))
        .hint("`harness bless` writes it from a passing run; `--no-baseline` runs without comparing metrics"),
        _ => Diagnostic::new(format!("cannot read baseline {}: {e}", path.display())),
    })?
    .map_err(located)?;
    reader.finish().map_err(located)
}

/// How to mend a baseline or results file with a problem of this kind; `writer` is the
/// command that writes such files.
fn input_hint(cause: Cause, writer: &str) -> String {
    match cause {
        Cause::NotUtf8 => format!("save the file as UTF-8, as {writer} does"),
        Cause::Version => format!("{writer} of this harness writes the version it reads; rerun it"),
        Cause::TooDeep => "flatten the value: no field of this file holds nested arrays".to_owned(),
        Cause::Syntax => format!(
            "the file is cut short or malformed; write it again with {writer} instead of editing it"
        ),
        Cause::DuplicateKey => {
            "a key may appear once in a table; delete or rename the second one".to_owned()
        }
        Cause::UnknownKey => {
            "remove or correct the key: the message lists the keys allowed here".to_owned()
        }
        Cause::MissingKey => {
            format!("add the field named above, or write the file again with {writer}")
        }
        Cause::Figure => format!(
            "write the figures a run gives, as {writer} does: finite, not negative, within the limits"
        ),
        Cause::Inconsistent => {
            format!("the counts of this case do not fit together; write the file again with {writer}")
        }
        Cause::WrongValue | Cause::UnknownVariant | Cause::Count => {
            "write the value in the type named above (numbers without quotes, percentages as \"5%\")"
                .to_owned()
        }
        Cause::NoVariant | Cause::AgentCassette | Cause::Other => {
            format!("see {writer}, which writes this file")
        }
    }
}

/// An output file that could not be written (`doing` it: `write`, `append to`).
fn cannot(doing: &str, path: &Path, e: &io::Error) -> Diagnostic {
    Diagnostic::new(format!("cannot {doing} {}: {e}", path.display()))
}

/// Feed results (`produce` calls the reporter) to the terminal and every requested output;
/// the exit status. A baseline that cannot be read, a tolerance that cannot be applied and an
/// output that cannot be written are the error; a reader of the terminal output that went away
/// ends the run as failed, since its summary was not shown in full.
pub fn report(
    outputs: &Outputs,
    layout: &Layout,
    produce: impl FnOnce(&mut dyn Reporter) -> io::Result<()>,
) -> Result<ExitStatus, Diagnostic> {
    let base = outputs.baseline.as_deref().map(load_baseline).transpose()?;
    let stdout = anstream::stdout();
    let mut terminal = Terminal::new(stdout.lock(), outputs.ci)
        .with_pending_dir(outputs.pending_dir.clone())
        .require_cases(outputs.require_cases.clone())
        .with_detail(
            outputs.diff_limit.unwrap_or(report::DEFAULT_DIFF_LIMIT),
            outputs.quiet,
        )
        .for_exec(outputs.command == Command::Exec);
    let mut csv = match &outputs.metrics {
        Some(path) => Some(MetricsCsv::create(path).map_err(|e| cannot("write", path, &e))?),
        None => None,
    };
    let mut annotations = outputs
        .github_annotations
        .then(|| github::Annotations::new(io::stdout()));
    let mut checked_rows = base.as_ref().map(BaselineCheck::new);
    let collect = outputs.junit.is_some()
        || outputs.json.is_some()
        || outputs.html.is_some()
        || outputs.otlp.is_some()
        || outputs.step_summary.is_some();
    let mut collected = Collected::default();
    {
        let mut reporters: Vec<&mut dyn Reporter> = vec![&mut terminal];
        if let Some(csv) = &mut csv {
            reporters.push(csv);
        }
        if let Some(a) = &mut annotations {
            reporters.push(a);
        }
        if let Some(check) = &mut checked_rows {
            reporters.push(check);
        }
        if collect {
            reporters.push(&mut collected);
        }
        match produce(&mut Fanout(reporters)) {
            Ok(()) => {}
            // The summary could not be shown in full: do not claim success.
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                return Ok(crate::results::ExitStatus::Failed);
            }
            Err(e) => return Err(Diagnostic::new(e.to_string())),
        }
    }
    let mut code = terminal.tally.exit_code();
    if let Some(d) = &terminal.tally.nothing_selected {
        // Also on stderr, where a CI log's errors are looked for.
        let _ = write!(anstream::stderr(), "{}", d.render(&Style::default()));
    }
    if terminal.tally.interrupted.is_some() {
        // A partial run makes no report files (the metrics CSV discarded its own).
        return Ok(code);
    }
    let mut extra = String::new();
    let mut checked = None;
    // A run that selected nothing, or whose files all failed to load, compared nothing: no
    // baseline verdict to claim.
    let checked_rows = checked_rows
        .filter(|_| terminal.tally.nothing_selected.is_none() && terminal.tally.cases > 0);
    if let (Some(check), Some(path)) = (checked_rows, &outputs.baseline) {
        let (verdict, places) = check
            .into_verdict()
            .map_err(|e| Diagnostic::new(e).in_file(path))?;
        let name = path.display().to_string();
        let shown = show_baseline_verdict(&verdict, &places, path, outputs.github_annotations);
        match shown {
            Ok(()) => {}
            // As above: the verdict could not be shown in full.
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(ExitStatus::Failed),
            Err(e) => return Err(Diagnostic::new(e.to_string())),
        }
        extra = verdict.markdown(&name);
        if code == ExitStatus::Ok && !verdict.regressions.is_empty() {
            code = ExitStatus::MetricRegression;
        }
        checked = Some(verdict.for_html(&name));
    }
    if let Some(path) = &outputs.html {
        store::write_atomic(path, html::render(&collected, checked.as_ref()).as_bytes())
            .map_err(|e| cannot("write", path, &e))?;
    }
    if let Some(path) = &outputs.junit {
        let xml = junit::render(&collected, |p| layout.id_of(p));
        store::write_atomic(path, xml.as_bytes()).map_err(|e| cannot("write", path, &e))?;
    }
    if let Some(path) = &outputs.json {
        store::write_atomic(path, json::render(&collected).as_bytes())
            .map_err(|e| cannot("write", path, &e))?;
    }
    if let Some(path) = &outputs.otlp {
        store::write_atomic(path, report::otlp::render(&collected).as_bytes())
            .map_err(|e| cannot("write", path, &e))?;
    }
    if let Some(path) = &outputs.step_summary {
        let md = github::summary(&collected, &extra);
        store::append(path, md.as_bytes()).map_err(|e| cannot("append to", path, &e))?;
    }
    Ok(code)
}

/// Print the baseline's verdict, and with `annotations` a GitHub error for each regression at
/// its case's place.
fn show_baseline_verdict(
    verdict: &baseline::Verdict,
    places: &Places,
    path: &Path,
    annotations: bool,
) -> io::Result<()> {
    let name = path.display().to_string();
    let mut out = anstream::stdout().lock();
    out.write_all(verdict.render(&name).as_bytes())?;
    if annotations {
        for (c, place) in verdict.regressions.iter().zip(places) {
            let (file, line) = place
                .as_ref()
                .map_or((path, 1), |(f, line)| (f.as_path(), *line));
            let msg = format!(
                "{} {} \u{2192} {} (allowed {})",
                c.metric, c.old, c.new, c.allowed
            );
            writeln!(
                out,
                "{}",
                github::command(
                    "error",
                    file,
                    line,
                    &format!("harness: metric regression in {}", c.case),
                    &msg
                )
            )?;
        }
    }
    out.flush()
}

/// Where each regression's case is: its file and line (none when no case of its file has the id).
type Places = Vec<Option<(PathBuf, usize)>>;

/// Checks each case's metrics against the baseline as its file's results come in, keeping
/// only what moved and where: a run checked against a baseline holds no case results for it.
struct BaselineCheck<'a> {
    base: &'a baseline::Baseline,
    verdict: baseline::Verdict,
    /// Each regression's case: its file and line.
    places: Places,
    /// The first tolerance the check could not apply.
    error: Option<String>,
}

impl<'a> BaselineCheck<'a> {
    fn new(base: &'a baseline::Baseline) -> Self {
        Self {
            base,
            verdict: baseline::Verdict::default(),
            places: Vec::new(),
            error: None,
        }
    }

    /// The verdict over every case, and where each regression's case is.
    fn into_verdict(self) -> Result<(baseline::Verdict, Places), String> {
        match self.error {
            Some(e) => Err(e),
            None => Ok((self.verdict, self.places)),
        }
    }
}

impl Reporter for BaselineCheck<'_> {
    fn file(&mut self, result: &crate::results::FileResult) -> io::Result<()> {
        let Ok(cases) = &result.outcome else {
            return Ok(());
        };
        if self.error.is_some() {
            return Ok(());
        }
        // Ad-hoc runs (`--profile` beyond what a scenario declares) are not gated: the baseline
        // neither holds them nor should `bless` be suggested for them.
        let gated = cases
            .iter()
            .filter(|c| c.golden != crate::snapshot::Comparison::Ungated);
        match baseline::check(self.base, gated.map(|c| &c.row)) {
            Ok(v) => {
                for c in &v.regressions {
                    let case = cases.iter().find(|r| r.id == c.case);
                    self.places
                        .push(case.map(|r| (result.path.clone(), r.line)));
                }
                self.verdict.absorb(v);
            }
            Err(e) => self.error = Some(e),
        }
        Ok(())
    }

    fn orphan(&mut self, _path: &Path) -> io::Result<()> {
        Ok(())
    }

    fn finish(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Read the shards' JSON results and join them into the results one run would give: paths
/// that could not be read first (in shard order), then scenario files sorted by path, then
/// orphaned goldens sorted.
pub fn merge_shards(shards: &[PathBuf]) -> Result<Collected, Diagnostic> {
    let writer = "`harness run --json`";
    let mut all = Collected::default();
    for s in shards {
        let text = store::read_input_text(s, "results file", crate::limits::MAX_RESULTS_BYTES)
            .map_err(|e| match e.kind() {
                io::ErrorKind::InvalidData => e
                    .diagnostic(s, "")
                    .hint_by(|cause| input_hint(cause, writer)),
                _ => Diagnostic::new(format!("cannot read: {e}")).in_file(s),
            })?;
        let part =
            json::parse(&text).map_err(|d| d.in_file(s).hint_by(|c| input_hint(c, writer)))?;
        for u in part.unreadable {
            if !all.unreadable.iter().any(|x| x.path == u.path) {
                all.unreadable.push(u);
            }
        }
        all.files.extend(part.files);
        all.orphans.extend(part.orphans);
        // A shard a signal stopped leaves the whole incomplete: its counts add up.
        if let Some(s) = part.stopped {
            all.stopped = Some(match all.stopped.take() {
                Some(a) => crate::report::Stopped {
                    by: a.by,
                    done: a.done.saturating_add(s.done),
                    of: a.of.saturating_add(s.of),
                },
                None => s,
            });
        }
    }
    all.files.sort_by(|a, b| a.path.cmp(&b.path));
    if let Some(w) = all.files.windows(2).find(|w| w[0].path == w[1].path) {
        return Err(Diagnostic::new(format!(
            "{} is in more than one shard",
            w[0].path.display()
        ))
        .hint("merge the results of one partition's shards (`--partition count:M/N` with the same N)"));
    }
    let mut ids: Vec<(&str, &Path)> = all
        .files
        .iter()
        .flat_map(|f| {
            f.outcome
                .iter()
                .flatten()
                .map(move |c| (c.id.as_str(), f.path.as_path()))
        })
        .collect();
    ids.sort();
    if let Some(w) = ids.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(Diagnostic::new(format!(
            "case `{}` is in more than one file ({} and {})",
            w[0].0,
            w[0].1.display(),
            w[1].1.display()
        ))
        .hint("give each case's results once: a case given twice would count twice"));
    }
    all.orphans.sort();
    all.orphans.dedup();
    Ok(all)
}
