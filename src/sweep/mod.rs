//! `harness sweep`: score post-hoc detectors over many recorded runs — transcripts in public
//! formats, imported traces and scenarios — one row per (detector, parameters).
//!
//! Files are read in sorted order on the worker pool ([`crate::run::pool`]), each file parsed,
//! scored and folded in file order: at most [`WINDOW`] scored files wait to be folded, so
//! memory is bounded by the window, not the corpus, and only per-setting counters (and
//! detection delays) are kept. Results do not depend on `--jobs`.
//! A malformed file is a located error; the others are still scored.
//!
//! Definitions (also in docs/sweeps.md):
//! - a **successful run** has the source's success label (reward 1, `win`, expectations held);
//! - a **false alarm** is a detector firing anywhere on a successful run;
//! - a **stuck run** is labelled stuck (labels file, else [`labels::heuristic`]);
//! - **caught**: the detector fired on a stuck run at or after the loop's first call; the
//!   **detection delay** is the fire position minus the loop start, in calls;
//! - **turns saved**: calls after the firing call in caught runs (what a stop there saves);
//!   **tokens saved**: model tokens after it, where the source records tokens;
//! - **precision** = caught / (caught + false alarms); **recall** = caught / stuck runs.

pub mod external;
pub mod html;
pub mod labels;
pub mod partial;
pub mod plot;
pub mod source;

use crate::detector::{Fire, Setting, View};
use crate::diagnostic::Diagnostic;
use crate::import::Format;
use crate::select::Partition;
use labels::Label;
use partial::Named;
use source::Input;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

/// Scored files that may wait for an earlier one to be folded.
const WINDOW: usize = 64;

/// The CSV header, in order.
pub const COLUMNS: [&str; 12] = [
    "detector",
    "params",
    "runs",
    "successful_runs",
    "false_alarms",
    "stuck_runs",
    "caught",
    "median_detection_delay",
    "turns_saved",
    "tokens_saved",
    "precision",
    "recall",
];

/// What to sweep.
pub struct Options {
    /// Files and folders.
    pub paths: Vec<PathBuf>,
    /// Detector settings (sorted by [`crate::detector::compare_settings`] before scoring).
    pub settings: Vec<Setting>,
    /// Labels that override the heuristic, by run id.
    pub labels: BTreeMap<String, Label>,
    /// Force a transcript format (otherwise detected per file).
    pub format: Option<Format>,
    /// How an OpenTelemetry trace's tool results are read as failed.
    pub failures: crate::failure::FailureRules,
    /// Worker threads.
    pub jobs: usize,
    /// Keep every run's label in the report (for `--write-labels`).
    pub keep_labels: bool,
    /// Called after each file (progress).
    pub on_file: Option<Box<dyn Fn() + Sync>>,
    /// Sweep only this shard of the files (by their sorted paths).
    pub partition: Option<Partition>,
}

/// One row of the result.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Detector id.
    pub detector: String,
    /// `k=3`, `window=2`, or several separated by spaces.
    pub params: String,
    /// Runs scored.
    pub runs: u64,
    /// Runs with a success label.
    pub successful_runs: u64,
    /// Successful runs it fired on.
    pub false_alarms: u64,
    /// Runs labelled stuck.
    pub stuck_runs: u64,
    /// Stuck runs it fired on, at or after the loop began.
    pub caught: u64,
    /// Median calls from the loop's start to the firing, over caught runs.
    pub median_detection_delay: Option<f64>,
    /// Calls after the firing call, over caught runs.
    pub turns_saved: u64,
    /// Model tokens after the firing call, over caught runs that record tokens.
    pub tokens_saved: Option<u64>,
    /// caught / (caught + false alarms).
    pub precision: Option<f64>,
    /// caught / stuck runs.
    pub recall: Option<f64>,
}

/// A sweep's result.
#[derive(Debug, Default)]
pub struct Report {
    /// One row per setting, in setting order.
    pub rows: Vec<Row>,
    /// Input files read.
    pub files: usize,
    /// Runs scored.
    pub runs: u64,
    /// Runs with a success label.
    pub successful: u64,
    /// Runs labelled stuck.
    pub stuck: u64,
    /// Runs whose label came from the labels file.
    pub labelled_from_file: u64,
    /// Located errors, by file.
    pub errors: Vec<(PathBuf, Diagnostic)>,
    /// Files skipped, and why.
    pub notes: Vec<(PathBuf, String)>,
    /// What the readers said of files they read (see [`crate::import::FileImport::warnings`]).
    pub warnings: Vec<(PathBuf, String)>,
    /// Every run's label (when asked for).
    pub labels: Vec<Label>,
    /// Settings that could not score every run (an external detector that failed): the
    /// setting as `id params`, the first run it failed on, and why. They have no row.
    pub failed: Vec<(String, String, String)>,
    /// Settings that left runs out of their row because the runs could not show what they
    /// judge (calls whose arguments were not recorded): the setting as `id params`, how many
    /// runs, the first of them, and why.
    pub unscored: Vec<(String, u64, String, String)>,
    /// The settings scored, in scoring order (each once).
    pub settings: Vec<Named>,
}

#[derive(Default, Clone)]
struct Acc {
    /// The first run the setting could not score, and why.
    failed: Option<(String, String)>,
    /// Runs left out of its row (they cannot show what it judges); of them, successful and
    /// stuck ones; the first, and why.
    unscored: u64,
    unscored_successful: u64,
    unscored_stuck: u64,
    unscored_first: Option<(String, String)>,
    false_alarms: u64,
    caught: u64,
    delays: Vec<usize>,
    turns_saved: u64,
    tokens_saved: Option<u64>,
}

/// What one run contributes.
struct RunScore {
    id: String,
    success: Option<bool>,
    label: Label,
    from_file: bool,
    calls: usize,
    /// Per setting: where it fired, and the tokens after that.
    fires: Vec<Option<(Fire, Option<u64>)>>,
    /// Settings that could not score this run, and why.
    errors: Vec<(usize, String)>,
    /// Settings that leave this run out of their rows (its calls' arguments are unknown),
    /// and why.
    unscored: Vec<usize>,
    unscored_why: Option<String>,
    /// The run as the detectors see it, kept until the settings that take runs in order
    /// ([`crate::detector::Detector::in_order`]) have seen it.
    view: Option<View>,
}

/// The header of the `--fires` CSV: one row per (run, setting) that fired.
pub const FIRE_COLUMNS: [&str; 9] = [
    "run",
    "detector",
    "params",
    "fired_at",
    "verdict",
    "success",
    "stuck",
    "loop_start",
    "outcome",
];

struct FileScore {
    input: Input,
    runs: Vec<RunScore>,
    errors: Vec<Diagnostic>,
    note: Option<String>,
    warnings: Vec<String>,
}

/// Where setting `i` first fires on `view` (and the tokens after it), or its error noted.
fn check(
    s: &Setting,
    i: usize,
    view: &View,
    errors: &mut Vec<(usize, String)>,
) -> Option<(Fire, Option<u64>)> {
    match s.detector.check(view) {
        Ok(fire) => fire.map(|f| (f, view.tokens_after(f.at))),
        Err(e) => {
            errors.push((i, e));
            None
        }
    }
}

/// What one setting said of one run: where it fired (and the tokens after), or its error.
type Answer = Result<Option<(Fire, Option<u64>)>, String>;

/// Ask the settings that take runs in order (the fold calls this for each file as it comes, in
/// file order): an external detector sees the runs in the sweep's order for any `--jobs`, and
/// several such settings answer side by side, each on a thread of its own.
#[expect(
    clippy::disallowed_methods,
    reason = "the sweep scores settings side by side on threads (an edge: sweep)"
)]
fn score_in_order(settings: &[Setting], f: &mut FileScore) {
    let ordered: Vec<usize> = (0..settings.len())
        .filter(|&i| settings[i].detector.in_order())
        .collect();
    if ordered.is_empty() {
        return;
    }
    let views: Vec<Option<View>> = f.runs.iter_mut().map(|r| r.view.take()).collect();
    let unscored: Vec<&[usize]> = f.runs.iter().map(|r| r.unscored.as_slice()).collect();
    let ask = |i: usize| -> Vec<Answer> {
        views
            .iter()
            .zip(&unscored)
            .map(|(v, skip)| match v {
                _ if skip.contains(&i) => Ok(None),
                Some(v) => settings[i]
                    .detector
                    .check(v)
                    .map(|fire| fire.map(|f| (f, v.tokens_after(f.at)))),
                None => Ok(None),
            })
            .collect()
    };
    let answers: Vec<Vec<Answer>> = if ordered.len() == 1 {
        vec![ask(ordered[0])]
    } else {
        std::thread::scope(|scope| {
            let handles: Vec<_> = ordered
                .iter()
                .map(|&i| scope.spawn(move || ask(i)))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        vec![Err("the detector's thread panicked".to_owned()); views.len()]
                    })
                })
                .collect()
        })
    };
    for (&i, answers) in ordered.iter().zip(answers) {
        for (r, a) in f.runs.iter_mut().zip(answers) {
            match a {
                Ok(fire) => r.fires[i] = fire,
                Err(e) => r.errors.push((i, e)),
            }
        }
    }
    for r in &mut f.runs {
        r.errors.sort_by_key(|(i, _)| *i);
    }
}

/// The settings that cannot judge a run whose calls' arguments were not recorded (an
/// OpenTelemetry import with content capture off), and why: those that compare arguments
/// ([`crate::detector::Detector::reads_args`]), and every setting when the run's stuck label is
/// undecided (the heuristic would need those arguments, and no labels file decided).
fn unscored(settings: &[Setting], view: &View, label: &Label) -> (Vec<usize>, Option<String>) {
    // Answers whose calls were not recorded: no setting sees what the run did there.
    if view.unseen > 0 {
        return (
            (0..settings.len()).collect(),
            Some(format!(
                "{} of its answers asked for tools the trace did not record (content capture off, no tool span of them): what it called there is unknown to every detector",
                view.unseen
            )),
        );
    }
    if !view.args_unknown() && !label.undecided {
        return (Vec::new(), None);
    }
    let blind = view.calls.iter().filter(|c| c.args_unknown).count();
    let calls = view.calls.len();
    let undecided = label.undecided;
    let skipped: Vec<usize> = (0..settings.len())
        .filter(|&i| undecided || settings[i].detector.reads_args())
        .collect();
    let why = if undecided {
        format!(
            "{blind} of its {calls} calls were recorded without their arguments: repeated calls cannot be told from different ones, so neither its stuck label nor a detector can judge it (label it in a labels file to score it)"
        )
    } else {
        format!(
            "{blind} of its {calls} calls were recorded without their arguments: a detector that compares arguments cannot judge it"
        )
    };
    let why = (!skipped.is_empty()).then_some(why);
    (skipped, why)
}

fn score_file(options: &Options, input: Input) -> FileScore {
    let got = source::load(&input, options.format, &options.failures);
    let ordered = options.settings.iter().any(|s| s.detector.in_order());
    let runs = got
        .runs
        .into_iter()
        .map(|run| {
            let view = View::from_events(&run.events);
            let (label, from_file) = match options.labels.get(&run.id) {
                Some(l) => (l.clone(), true),
                None => (labels::heuristic(&run.id, &view, run.success), false),
            };
            let mut errors = Vec::new();
            let (unscored, unscored_why) = unscored(&options.settings, &view, &label);
            // Settings that take runs in order are asked when the run is folded.
            let fires = options
                .settings
                .iter()
                .enumerate()
                .map(
                    |(i, s)| match s.detector.in_order() || unscored.contains(&i) {
                        true => None,
                        false => check(s, i, &view, &mut errors),
                    },
                )
                .collect();
            RunScore {
                id: run.id,
                success: run.success,
                label,
                from_file,
                calls: view.calls.len(),
                fires,
                errors,
                unscored,
                unscored_why,
                view: ordered.then_some(view),
            }
        })
        .collect();
    if let Some(tick) = &options.on_file {
        tick();
    }
    FileScore {
        input,
        runs,
        errors: got.errors,
        note: got.note,
        warnings: got.warnings,
    }
}

/// Folds scored files, in file order, into the report (and the fires rows).
struct Folder<'a> {
    report: Report,
    accs: Vec<Acc>,
    names: Vec<Named>,
    fires: Option<csv::Writer<&'a mut dyn Write>>,
    keep_labels: bool,
}

impl<'a> Folder<'a> {
    fn new(
        names: Vec<Named>,
        fires: Option<&'a mut dyn Write>,
        keep_labels: bool,
    ) -> std::io::Result<Self> {
        let mut fires = fires.map(csv::Writer::from_writer);
        if let Some(w) = &mut fires {
            w.write_record(FIRE_COLUMNS)?;
        }
        Ok(Self {
            report: Report::default(),
            accs: vec![Acc::default(); names.len()],
            names,
            fires,
            keep_labels,
        })
    }

    fn unreadable(&mut self, path: PathBuf, message: String) {
        self.report.errors.push((
            path,
            Diagnostic::at(1, 1, message).hint(
                "`harness sweep` takes transcript, trace and scenario files and folders".to_owned(),
            ),
        ));
    }

    fn take(&mut self, f: FileScore) -> std::io::Result<()> {
        self.report.files += 1;
        for e in f.errors {
            self.report.errors.push((f.input.path.clone(), e));
        }
        if let Some(n) = f.note {
            self.report.notes.push((f.input.path.clone(), n));
        }
        for w in f.warnings {
            self.report.warnings.push((f.input.path.clone(), w));
        }
        for r in f.runs {
            if let Some(w) = &mut self.fires {
                // A setting that failed has no rows from then on, whichever process (shard)
                // scored the later runs.
                write_fires(w, &self.names, &self.accs, &r)?;
            }
            fold(&mut self.report, &mut self.accs, r, self.keep_labels);
        }
        Ok(())
    }

    fn finish(mut self) -> std::io::Result<Report> {
        if let Some(w) = &mut self.fires {
            w.flush()?;
        }
        let mut rows = Vec::with_capacity(self.accs.len());
        for (s, mut a) in self.names.iter().zip(std::mem::take(&mut self.accs)) {
            match a.failed.take() {
                // A setting that could not score every run has no honest row.
                Some((run, why)) => self.report.failed.push((
                    format!("{} {}", s.id, s.params).trim_end().to_owned(),
                    run,
                    why,
                )),
                None => {
                    if let Some((run, why)) = a.unscored_first.take() {
                        self.report.unscored.push((
                            format!("{} {}", s.id, s.params).trim_end().to_owned(),
                            a.unscored,
                            run,
                            why,
                        ));
                    }
                    rows.push(row(s, a, &self.report));
                }
            }
        }
        self.report.rows = rows;
        self.report.settings = std::mem::take(&mut self.names);
        Ok(self.report)
    }
}

/// The settings in scoring order, the same setting named twice (`all` and an explicit grid)
/// scored once.
fn order_settings(settings: &mut Vec<Setting>) -> Vec<Named> {
    settings.sort_by(crate::detector::compare_settings);
    settings.dedup_by(|a, b| a.id == b.id && a.params.values == b.params.values);
    settings
        .iter()
        .map(|s| Named {
            id: s.id.to_owned(),
            params: s.params.render(),
        })
        .collect()
}

/// Run the sweep. With `fires`, also write one CSV row ([`FIRE_COLUMNS`]) per run and setting
/// that fired, in run order, as the runs are scored; with `partial`, the shard's partial sweep
/// ([`partial`]) for [`merge`].
pub fn sweep(
    mut options: Options,
    fires: Option<&mut dyn Write>,
    mut partial: Option<&mut dyn Write>,
) -> std::io::Result<Report> {
    let names = order_settings(&mut options.settings);
    let (mut inputs, mut unreadable) = source::discover(&options.paths);
    // What the whole sweep found, before the partition: shards of one sweep found the same.
    let found = inputs.len();
    let mut found_digest = partial::Digest::default();
    for i in &inputs {
        found_digest.add(&i.path.to_string_lossy());
        found_digest.add("\n");
    }
    if let Some(p) = options.partition {
        let ids: Vec<String> = inputs
            .iter()
            .map(|i| i.path.to_string_lossy().into_owned())
            .collect();
        let takes = p.takes(&ids);
        inputs = inputs
            .into_iter()
            .zip(takes)
            .filter_map(|(i, t)| t.then_some(i))
            .collect();
        // What belongs to no file is the first shard's to report.
        if p.m != 1 {
            unreadable.clear();
        }
    }
    if let Some(w) = &mut partial {
        w.write_all(
            partial::line(&partial::Header {
                format: partial::FORMAT.to_owned(),
                version: partial::VERSION,
                partition: partial::partition_name(options.partition),
                paths: options
                    .paths
                    .iter()
                    .map(|p| p.to_string_lossy().into_owned())
                    .collect(),
                transcript_format: options.format.map(|f| f.as_str().to_owned()),
                failure: options.failures.patterns(),
                no_builtin_failures: !options.failures.builtin(),
                settings: names.clone(),
                labels: partial::labels_digest(&options.labels),
                unreadable: unreadable
                    .iter()
                    .map(|(p, m)| (p.to_string_lossy().into_owned(), m.clone()))
                    .collect(),
                inputs: found,
                inputs_digest: found_digest.value(),
                shard_files: inputs.len(),
            })
            .as_bytes(),
        )?;
    }
    // What the partial's records were, for its last line.
    let (mut wrote_files, mut wrote_runs, mut wrote) = (0, 0, partial::Digest::default());
    let mut folder = Folder::new(names, fires, options.keep_labels)?;
    for (path, message) in unreadable {
        folder.unreadable(path, message);
    }
    let pool = crate::run::pool::build(options.jobs)?;
    // Files are scored on the pool and folded in file order as they finish.
    crate::run::pool::for_each_ordered(
        &pool,
        WINDOW,
        &inputs,
        |i| score_file(&options, i.clone()),
        |mut f| -> std::io::Result<()> {
            score_in_order(&options.settings, &mut f);
            if let Some(w) = &mut partial {
                let line = partial::line(&partial::record(&f));
                wrote.add(&line);
                wrote_files += 1;
                wrote_runs += f.runs.len();
                w.write_all(line.as_bytes())?;
            }
            folder.take(f)
        },
    )?;
    if let Some(w) = &mut partial {
        w.write_all(
            partial::line(&partial::End {
                format: partial::END.to_owned(),
                files: wrote_files,
                runs: wrote_runs,
                digest: wrote.value(),
            })
            .as_bytes(),
        )?;
    }
    let report = folder.finish()?;
    // Every external detector's input closed at once: their exit grace runs side by side.
    for s in &options.settings {
        s.detector.close_input();
    }
    Ok(report)
}

/// Merge the shards' partial sweeps into the report one sweep over everything gives (and its
/// fires rows); the settings are the partials' (the report's `settings`). A partial that is not one, or shards that are
/// not one sweep's, are a diagnostic and nothing is folded.
pub fn merge(
    partials: &[PathBuf],
    fires: Option<&mut dyn Write>,
    keep_labels: bool,
) -> std::io::Result<Result<Report, Diagnostic>> {
    let (header, mut records) = match partial::open(partials) {
        Ok(h) => h,
        Err(d) => return Ok(Err(d)),
    };
    let mut folder = Folder::new(header.settings.clone(), fires, keep_labels)?;
    for (path, message) in &header.unreadable {
        folder.unreadable(PathBuf::from(path), message.clone());
    }
    loop {
        match records.next_file() {
            Ok(Some(f)) => folder.take(f)?,
            Ok(None) => break,
            Err(d) => return Ok(Err(d)),
        }
    }
    Ok(Ok(folder.finish()?))
}

/// What a firing was, for the `--fires` rows.
fn outcome(r: &RunScore, at: usize) -> &'static str {
    match (r.success, r.label.loop_start) {
        (Some(true), _) => "false_alarm",
        (_, Some(start)) if r.label.stuck && at >= start => "caught",
        (_, Some(_)) if r.label.stuck => "before_loop",
        _ => "unlabelled_or_failed",
    }
}

fn write_fires<W: std::io::Write>(
    w: &mut csv::Writer<W>,
    settings: &[Named],
    accs: &[Acc],
    r: &RunScore,
) -> std::io::Result<()> {
    let opt = |v: Option<String>| v.unwrap_or_default();
    for ((s, fire), acc) in settings.iter().zip(&r.fires).zip(accs) {
        let Some((f, _)) = fire.filter(|_| acc.failed.is_none()) else {
            continue;
        };
        w.write_record([
            r.id.clone(),
            s.id.clone(),
            s.params.clone(),
            f.at.to_string(),
            f.verdict.as_str().to_owned(),
            opt(r.success.map(|b| b.to_string())),
            r.label.stuck.to_string(),
            opt(r.label.loop_start.map(|n| n.to_string())),
            outcome(r, f.at).to_owned(),
        ])?;
    }
    Ok(())
}

fn fold(report: &mut Report, accs: &mut [Acc], r: RunScore, keep: bool) {
    for (i, e) in &r.errors {
        accs[*i]
            .failed
            .get_or_insert_with(|| (r.id.clone(), e.clone()));
    }
    for &i in &r.unscored {
        let acc = &mut accs[i];
        acc.unscored += 1;
        acc.unscored_successful += u64::from(r.success == Some(true));
        acc.unscored_stuck += u64::from(r.label.stuck);
        acc.unscored_first
            .get_or_insert_with(|| (r.id.clone(), r.unscored_why.clone().unwrap_or_default()));
    }
    report.runs += 1;
    let success = r.success == Some(true);
    report.successful += u64::from(success);
    report.stuck += u64::from(r.label.stuck);
    report.labelled_from_file += u64::from(r.from_file);
    for (acc, fire) in accs.iter_mut().zip(&r.fires) {
        let Some((Fire { at, .. }, tokens)) = *fire else {
            continue;
        };
        if success {
            acc.false_alarms += 1;
        }
        match r.label.loop_start {
            Some(start) if r.label.stuck && at >= start => {
                acc.caught += 1;
                acc.delays.push(at - start);
                // A detector firing on a text turn after the last call saves no call.
                acc.turns_saved = acc
                    .turns_saved
                    .saturating_add(r.calls.saturating_sub(at.saturating_add(1)) as u64);
                if let Some(t) = tokens {
                    let sum = acc.tokens_saved.get_or_insert(0);
                    *sum = sum.saturating_add(t);
                }
            }
            _ => {}
        }
    }
    if keep {
        report.labels.push(r.label);
    }
}

fn ratio(a: u64, b: u64) -> Option<f64> {
    (b > 0).then(|| a as f64 / b as f64)
}

fn row(s: &Named, mut a: Acc, report: &Report) -> Row {
    a.delays.sort_unstable();
    let median = match a.delays.len() {
        0 => None,
        n if n % 2 == 1 => Some(a.delays[n / 2] as f64),
        n => Some((a.delays[n / 2 - 1] + a.delays[n / 2]) as f64 / 2.0),
    };
    // Runs the setting could not judge are not in its row.
    let stuck = report.stuck - a.unscored_stuck;
    Row {
        detector: s.id.clone(),
        params: s.params.clone(),
        runs: report.runs - a.unscored,
        successful_runs: report.successful - a.unscored_successful,
        false_alarms: a.false_alarms,
        stuck_runs: stuck,
        caught: a.caught,
        median_detection_delay: median,
        turns_saved: a.turns_saved,
        tokens_saved: a.tokens_saved,
        precision: ratio(a.caught, a.caught + a.false_alarms),
        recall: ratio(a.caught, stuck),
    }
}

/// The rows as CSV: the header of [`COLUMNS`], fixed float formatting (3 decimals for rates,
/// 1 for the median), empty cells for undefined values.
pub fn csv(rows: &[Row]) -> Vec<u8> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let _ = w.write_record(COLUMNS);
    let opt =
        |v: Option<f64>, digits: usize| v.map_or_else(String::new, |x| format!("{x:.digits$}"));
    for r in rows {
        let _ = w.write_record([
            r.detector.clone(),
            r.params.clone(),
            r.runs.to_string(),
            r.successful_runs.to_string(),
            r.false_alarms.to_string(),
            r.stuck_runs.to_string(),
            r.caught.to_string(),
            opt(r.median_detection_delay, 1),
            r.turns_saved.to_string(),
            r.tokens_saved.map_or_else(String::new, |t| t.to_string()),
            opt(r.precision, 3),
            opt(r.recall, 3),
        ]);
    }
    w.into_inner().unwrap_or_default()
}

/// The criterion [`best`] applies, as printed.
pub const CRITERION: &str = "fewest false alarms on successful runs, then highest recall, then shortest median detection delay, then the earlier setting";

/// The best row per detector under [`CRITERION`], in detector order.
pub fn best(rows: &[Row]) -> Vec<&Row> {
    let mut out: Vec<&Row> = Vec::new();
    for r in rows {
        match out.last_mut() {
            Some(b) if b.detector == r.detector => {
                if better(r, b) {
                    *b = r;
                }
            }
            _ => out.push(r),
        }
    }
    out
}

fn better(a: &Row, b: &Row) -> bool {
    let delay = |r: &Row| r.median_detection_delay.unwrap_or(f64::INFINITY);
    (a.false_alarms, std::cmp::Reverse(a.caught))
        .cmp(&(b.false_alarms, std::cmp::Reverse(b.caught)))
        .then_with(|| delay(a).total_cmp(&delay(b)))
        .is_lt()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(detector: &str, params: &str, fa: u64, caught: u64, delay: Option<f64>) -> Row {
        Row {
            detector: detector.into(),
            params: params.into(),
            runs: 10,
            successful_runs: 5,
            false_alarms: fa,
            stuck_runs: 4,
            caught,
            median_detection_delay: delay,
            turns_saved: 7,
            tokens_saved: None,
            precision: ratio(caught, caught + fa),
            recall: ratio(caught, 4),
        }
    }

    #[test]
    fn csv_has_the_issue_columns_and_fixed_floats() {
        let text = String::from_utf8(csv(&[
            r("a", "k=3", 1, 2, Some(1.5)),
            r("a", "k=4", 0, 0, None),
        ]))
        .unwrap();
        let mut lines = text.lines();
        assert_eq!(
            lines.next().unwrap(),
            "detector,params,runs,successful_runs,false_alarms,stuck_runs,caught,median_detection_delay,turns_saved,tokens_saved,precision,recall"
        );
        assert_eq!(lines.next().unwrap(), "a,k=3,10,5,1,4,2,1.5,7,,0.667,0.500");
        assert_eq!(lines.next().unwrap(), "a,k=4,10,5,0,4,0,,7,,,0.000");
    }

    #[test]
    fn a_fire_after_the_last_call_is_caught_and_saves_nothing() {
        let label = Label {
            run: "r".into(),
            stuck: true,
            loop_start: Some(1),
            note: String::new(),
            undecided: false,
        };
        let score = RunScore {
            id: "r".into(),
            success: Some(false),
            label,
            from_file: false,
            calls: 3,
            fires: vec![Some((Fire::new(3, crate::detector::Verdict::Warn), None))],
            errors: Vec::new(),
            unscored: Vec::new(),
            unscored_why: None,
            view: None,
        };
        let mut report = Report::default();
        let mut accs = vec![Acc::default()];
        fold(&mut report, &mut accs, score, false);
        assert_eq!((accs[0].caught, accs[0].turns_saved), (1, 0));
        assert_eq!(accs[0].delays, [2]);
    }

    #[test]
    fn a_setting_that_failed_has_no_fires_after_it() {
        let named = vec![Named {
            id: "exec:x".into(),
            params: String::new(),
        }];
        let run = |id: &str, fired: bool, error: bool| RunScore {
            id: id.into(),
            success: None,
            label: Label {
                run: id.into(),
                stuck: false,
                loop_start: None,
                note: String::new(),
                undecided: false,
            },
            from_file: false,
            calls: 3,
            fires: vec![fired.then(|| (Fire::new(1, crate::detector::Verdict::Warn), None))],
            errors: if error {
                vec![(0, "crashed".into())]
            } else {
                Vec::new()
            },
            unscored: Vec::new(),
            unscored_why: None,
            view: None,
        };
        let file = |runs| FileScore {
            input: Input {
                path: "f".into(),
                rel: "f".into(),
                kind: source::InputKind::Transcript,
                earlier: Vec::new(),
            },
            runs,
            errors: Vec::new(),
            note: None,
            warnings: Vec::new(),
        };
        let mut out = Vec::new();
        {
            let mut folder = Folder::new(named, Some(&mut out), false).unwrap();
            // A shard whose process never saw the failure still answers for the later run.
            folder
                .take(file(vec![
                    run("a", true, false),
                    run("b", false, true),
                    run("c", true, false),
                ]))
                .unwrap();
            let report = folder.finish().unwrap();
            assert!(report.rows.is_empty());
            assert_eq!(report.failed[0].1, "b");
        }
        let text = String::from_utf8(out).unwrap();
        let runs: Vec<&str> = text.lines().skip(1).map(|l| &l[..1]).collect();
        assert_eq!(runs, ["a"]);
    }

    #[test]
    fn best_prefers_no_false_alarms_then_recall_then_delay() {
        let rows = [
            r("a", "k=2", 2, 4, Some(0.0)),
            r("a", "k=3", 0, 3, Some(2.0)),
            r("a", "k=4", 0, 3, Some(1.0)),
            r("b", "w=1", 1, 1, None),
        ];
        let b = best(&rows);
        assert_eq!(b.len(), 2);
        assert_eq!(b[0].params, "k=4");
        assert_eq!(b[1].detector, "b");
    }
}
