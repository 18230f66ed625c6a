//! `harness sweep` and `harness import`: argument handling and output for the detector sweep
//! (`crate::sweep`) and the transcript importers (`crate::import`).

use super::args::{ImportArgs, ImportAs, SweepArgs};
use super::fail;
use crate::detector::{self, Setting};
use crate::diagnostic::{Diagnostic, Style};
use crate::import;
use crate::results::ExitStatus;
use crate::scenario::SourceFormat;
use crate::store;
use crate::sweep::{self, Options, labels};
use anyhow::Context as _;
use std::io::{IsTerminal as _, Write};
use std::path::Path;

fn report_error(err: &mut impl Write, path: &Path, e: &Diagnostic) -> std::io::Result<()> {
    write!(err, "{}", e.render_in(path, &Style::default()))
}

pub(super) fn sweep(args: SweepArgs) -> anyhow::Result<ExitStatus> {
    if let Some(refused) = super::output_over_input(
        &[
            ("--out", args.out.as_deref()),
            ("--plot", args.plot.as_deref()),
            ("--fires", args.fires.as_deref()),
            ("--write-labels", args.write_labels.as_deref()),
            ("--html", args.html.as_deref()),
            ("--partial", args.partial.as_deref()),
        ],
        &args
            .paths
            .iter()
            .chain(&args.labels)
            .cloned()
            .collect::<Vec<_>>(),
        |p| sweep::source::kind_of(p).is_some(),
    ) {
        return Ok(refused);
    }
    let mut err = anstream::stderr();
    // A path that is not there is bad usage: nothing is scored and no output written, so a
    // mistyped corpus never leaves a result that looks like a sweep of it.
    if let Some(missing) = args.paths.iter().find(|p| std::fs::metadata(p).is_err()) {
        let what = if args.merge {
            "partial sweeps (`sweep --partial`)"
        } else {
            "transcript, trace, scenario or cassette files and folders"
        };
        return Ok(fail(
            &Diagnostic::new(format!(
                "cannot read {}: no such file or folder",
                missing.display()
            ))
            .hint(format!("give {what} that exist; nothing was written")),
        ));
    }
    let partition = match args
        .partition
        .as_deref()
        .map(crate::select::Partition::parse)
    {
        Some(Ok(p)) => Some(p),
        Some(Err(e)) => return Ok(fail(&Diagnostic::new(format!("--partition: {e}")))),
        None => None,
    };
    let mut fires_tmp = streamed(args.fires.as_deref())?;
    let mut fires_out = fires_tmp.as_mut().map(std::io::BufWriter::new);
    // The page lists the runs each setting fired on: the fires rows are kept for it too.
    let mut fires_kept = args.html.as_ref().map(|_| Vec::new());
    let mut fires_to = (fires_out.is_some() || fires_kept.is_some()).then(|| {
        sweep::html::Tee(
            fires_out.as_mut().map(|w| w as &mut dyn Write),
            fires_kept.as_mut(),
        )
    });
    let mut partial_tmp = streamed(args.partial.as_deref())?;
    let mut partial_out = partial_tmp.as_mut().map(std::io::BufWriter::new);
    let report = if args.merge {
        match sweep::merge(
            &args.paths,
            fires_to.as_mut().map(|w| w as &mut dyn Write),
            args.write_labels.is_some(),
        )? {
            Ok(report) => report,
            Err(d) => return Ok(fail(&d)),
        }
    } else {
        match run_sweep(&args, partition, fires_to.as_mut(), partial_out.as_mut())? {
            Ok(report) => report,
            Err(code) => return Ok(code),
        }
    };
    fires_out
        .map(|w| w.into_inner().map(drop).map_err(|e| e.into_error()))
        .transpose()?;
    partial_out
        .map(|w| w.into_inner().map(drop).map_err(|e| e.into_error()))
        .transpose()?;
    for (path, e) in &report.errors {
        report_error(&mut err, path, e)?;
    }
    for (path, note) in &report.notes {
        writeln!(err, "note: {}: skipped: {note}", path.display())?;
    }
    for (path, warning) in &report.warnings {
        writeln!(err, "note: {}: {warning}", path.display())?;
    }
    for (setting, run, why) in &report.failed {
        let d = Diagnostic::new(format!("detector {setting}: run {run}: {why}")).hint(
            "the setting is left out of the results; see docs/sweeps.md \"Your own detector\" for the protocol",
        );
        write!(err, "{}", d.render(&Style::default()))?;
    }
    for (setting, n, run, why) in &report.unscored {
        writeln!(
            err,
            "note: detector {setting}: {n} run(s) left out of its row (the first: {run}): {why}"
        )?;
    }
    let written = write_outputs(
        &args,
        &report,
        fires_kept.as_deref(),
        fires_tmp,
        partial_tmp,
    )?;
    summarise(&args, &report, &written)
}

/// Score the detectors over the inputs (not `--merge`): the report, or the exit status of a
/// bad setting or labels file (already said).
fn run_sweep(
    args: &SweepArgs,
    partition: Option<crate::select::Partition>,
    fires_to: Option<&mut sweep::html::Tee<'_>>,
    partial_out: Option<&mut std::io::BufWriter<&mut store::Output>>,
) -> anyhow::Result<Result<sweep::Report, ExitStatus>> {
    let mut err = anstream::stderr();
    let settings = match settings(args) {
        Ok(s) => s,
        Err(code) => return Ok(Err(code)),
    };
    let given = match &args.labels {
        Some(path) => {
            let text = match store::read_input_text(
                path,
                "labels file",
                crate::limits::MAX_SIDE_INPUT_BYTES,
            ) {
                Ok(t) => t,
                Err(e) => {
                    report_error(&mut err, path, &e.diagnostic(path, "cannot read: "))?;
                    return Ok(Err(ExitStatus::BadInput));
                }
            };
            match labels::parse(&text) {
                Ok(l) => l,
                Err(e) => {
                    let e = e.hint(
                        "one JSON object a line: {\"run\", \"stuck\", \"loop_start\", \"note\"}",
                    );
                    report_error(&mut err, path, &e)?;
                    return Ok(Err(ExitStatus::BadInput));
                }
            }
        }
        None => Default::default(),
    };
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, std::num::NonZero::get));
    let progress = if std::io::stderr().is_terminal() {
        let files = sweep::source::discover(&args.paths).0.len() as u64;
        let files = partition.map_or(files, |p| files.div_ceil(u64::from(p.n)));
        let bar = indicatif::ProgressBar::new(files);
        bar.set_style(
            indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} files {elapsed}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        Some(bar)
    } else {
        None
    };
    let tick = progress.clone();
    let report = sweep::sweep(
        Options {
            paths: args.paths.clone(),
            settings,
            labels: given,
            format: args.format,
            failures: args.failures.rules()?,
            jobs,
            keep_labels: args.write_labels.is_some(),
            on_file: tick.map(|b| Box::new(move || b.inc(1)) as Box<dyn Fn() + Sync>),
            partition,
        },
        fires_to.map(|w| w as &mut dyn Write),
        partial_out.map(|w| w as &mut dyn Write),
    )?;
    if let Some(bar) = progress {
        bar.finish_and_clear();
    }
    Ok(Ok(report))
}

/// Write the sweep's outputs (the streamed ones put in place); the paths written.
fn write_outputs(
    args: &SweepArgs,
    report: &sweep::Report,
    fires_kept: Option<&[u8]>,
    fires_tmp: Option<store::Output>,
    partial_tmp: Option<store::Output>,
) -> anyhow::Result<Vec<String>> {
    let mut written = Vec::new();
    if let Some(path) = &args.out {
        store::write_atomic(path, &sweep::csv(&report.rows))
            .with_context(|| format!("cannot write {}", path.display()))?;
        written.push(path.display().to_string());
    }
    if let Some(path) = &args.plot {
        let title = format!(
            "Loop detectors over {} runs: false alarms vs recall",
            report.runs
        );
        let svg = sweep::plot::svg(&report.rows, &title).map_err(anyhow::Error::msg)?;
        store::write_atomic(path, svg.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
        written.push(path.display().to_string());
    }
    if let Some(path) = &args.html {
        let title = format!(
            "harness sweep: {} runs, {} settings",
            report.runs,
            report.rows.len()
        );
        let page = sweep::html::render(report, fires_kept.unwrap_or_default(), &title);
        store::write_atomic(path, page.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
        written.push(path.display().to_string());
    }
    for (tmp, path) in [(fires_tmp, &args.fires), (partial_tmp, &args.partial)] {
        if let (Some(tmp), Some(path)) = (tmp, path) {
            tmp.commit()
                .with_context(|| format!("cannot write {}", path.display()))?;
            written.push(path.display().to_string());
        }
    }
    if let Some(path) = &args.write_labels {
        store::write_atomic(path, labels::render(&report.labels).as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
        written.push(path.display().to_string());
    }
    Ok(written)
}

/// Tell the run's numbers and each detector's best setting; the exit status.
fn summarise(
    args: &SweepArgs,
    report: &sweep::Report,
    written: &[String],
) -> anyhow::Result<ExitStatus> {
    let mut err = anstream::stderr();
    let names: Vec<(&str, &str)> = report
        .settings
        .iter()
        .map(|n| (n.id.as_str(), n.params.as_str()))
        .collect();
    let n_settings = names.len();
    let n_detectors = names
        .iter()
        .map(|(id, _)| *id)
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let mut out = anstream::stdout().lock();
    // Files with no run (noted above) are counted apart: they are never scored.
    let skipped = report.notes.len();
    let skipped = if skipped == 0 {
        String::new()
    } else {
        format!(", {skipped} file(s) with no run skipped")
    };
    let what = match (&args.partition, args.merge) {
        (Some(p), _) => format!(" (shard {p})"),
        (None, true) => format!(" (merged from {} partial sweep(s))", args.paths.len()),
        (None, false) => String::new(),
    };
    writeln!(
        out,
        "harness sweep{what}: {} runs from {} files{skipped} ({} successful, {} stuck; labels: {} from the file, {} by the heuristic); {n_settings} setting(s) of {n_detectors} detector(s)",
        report.runs,
        report.files - report.notes.len(),
        report.successful,
        report.stuck,
        report.labelled_from_file,
        report.runs - report.labelled_from_file,
    )?;
    if let Some(most) = report.unscored.iter().map(|u| u.1).max() {
        writeln!(
            out,
            "Not scored: up to {most} run(s) left out of the rows of {} setting(s), their traces not showing what they called (see stderr)",
            report.unscored.len()
        )?;
    }
    writeln!(out, "Best setting per detector ({}):", sweep::CRITERION)?;
    for r in sweep::best(&report.rows) {
        writeln!(
            out,
            "  {:<22} {:<28} false alarms {:>3}/{:<4} caught {:>3}/{:<4} recall {:>5} precision {:>5} median delay {}",
            r.detector,
            r.params,
            r.false_alarms,
            r.successful_runs,
            r.caught,
            r.stuck_runs,
            r.recall
                .map_or_else(|| "-".to_owned(), |x| format!("{x:.3}")),
            r.precision
                .map_or_else(|| "-".to_owned(), |x| format!("{x:.3}")),
            r.median_detection_delay
                .map_or_else(|| "-".to_owned(), |x| format!("{x:.1}")),
        )?;
    }
    if !written.is_empty() {
        writeln!(out, "wrote {}", written.join(", "))?;
    }
    if !report.errors.is_empty() {
        writeln!(
            out,
            "{} problem(s) in the inputs (see stderr); the other files were scored",
            report.errors.len()
        )?;
        return Ok(ExitStatus::BadInput);
    }
    // A shard may hold no run (more shards than files); the merge judges the whole.
    if report.runs == 0 && !args.allow_empty && args.partition.is_none() {
        let d = Diagnostic::new(format!(
            "nothing was scored: {} file(s) read, no run in them",
            report.files
        ))
        .hint("give transcript, trace, scenario or cassette files that hold runs (or `--format`); `--allow-empty` lets a sweep of nothing pass");
        write!(err, "{}", d.render(&Style::default()))?;
        return Ok(ExitStatus::BadInput);
    }
    // Runs read, and every setting left every one of them out of its row: nothing judged.
    let judged_nothing = !report.rows.is_empty() && report.rows.iter().all(|r| r.runs == 0);
    if report.runs > 0 && judged_nothing && !args.allow_empty && args.partition.is_none() {
        let d = Diagnostic::new(format!(
            "nothing was scored: every setting left all {} run(s) out of its row (see the notes above)",
            report.runs
        ))
        .hint("their traces do not show what they called (calls or arguments not recorded): trace the agent with content capture on and its tools instrumented; runs whose only gap is unknown arguments score with `gemini-chanting` once a labels file (`--labels`) labels them; `--allow-empty` lets it pass");
        write!(err, "{}", d.render(&Style::default()))?;
        return Ok(ExitStatus::BadInput);
    }
    if !report.failed.is_empty() {
        writeln!(
            out,
            "{} setting(s) failed and have no row (see stderr); the other settings were scored",
            report.failed.len()
        )?;
        return Ok(crate::results::ExitStatus::Failed);
    }
    Ok(ExitStatus::Ok)
}

/// An output written as the sweep goes (fires, the partial): a temporary file beside `path`,
/// put in place at the end as every output is (a new file with the umask's mode, an existing
/// one keeping its own).
fn streamed(path: Option<&Path>) -> anyhow::Result<Option<store::Output>> {
    path.map(|path| {
        store::Output::create(path).with_context(|| format!("cannot write {}", path.display()))
    })
    .transpose()
}

/// A run as `import` writes it (its trace, or a scenario that replays it), or why it is not
/// written and what to do: only what `sweep`, `trace` and `run` read back is written.
fn imported_text(
    as_: ImportAs,
    input: &std::path::Path,
    run: &import::Run,
) -> anyhow::Result<Result<String, (String, &'static str)>> {
    Ok(match as_ {
        ImportAs::Trace => {
            let text = import::render_imported(run);
            if text.len() as u64 > crate::limits::MAX_TRANSCRIPT_BYTES {
                Err((
                    format!(
                        "its trace would be {} MiB, past the {} MiB `sweep` reads",
                        text.len() / (1024 * 1024),
                        crate::limits::MAX_TRANSCRIPT_BYTES / (1024 * 1024)
                    ),
                    "split the run, or sweep the transcript itself",
                ))
            } else {
                Ok(text)
            }
        }
        ImportAs::Scenario => {
            // A scenario makes every call it scripts: calls whose arguments, or whole calls,
            // the trace does not know would be made up, and replayed as if known.
            if let Some(why) = unknown_calls(run) {
                return Ok(Err((
                    format!("{why}: a scenario would have to make them up"),
                    "import it as a trace (the default): a sweep judges it by what it shows and says what it cannot; or trace the agent with content capture on",
                )));
            }
            let file = input.to_string_lossy().replace('\\', "/");
            let scenario = import::scenario::scenario_of(run, &file);
            let text = crate::record::scenario_text(
                &scenario,
                "# Imported from a transcript by `harness import --as scenario`: edit freely.\n",
            )
            .map_err(|r| anyhow::anyhow!("{}", r.message))?;
            match crate::scenario::load(&text, SourceFormat::Toml, &run.id) {
                Ok(_) => Ok(text),
                Err(problems) => Err((
                    format!(
                        "as a scenario, {}",
                        problems
                            .first()
                            .map_or("it does not load", |d| d.message.as_str())
                    ),
                    "`harness run` would refuse it; import it as a trace (the default) to sweep it",
                )),
            }
        }
    })
}

/// What of a run's calls its trace does not know and a scenario would script, when anything:
/// calls whose arguments were not recorded, and answers whose calls were not recorded at all
/// (the last one included).
fn unknown_calls(run: &import::Run) -> Option<String> {
    let (args, unseen) = import::unknown::scripted_unknowns(&run.events);
    match (args, unseen) {
        (0, 0) => None,
        (n, 0) => Some(format!(
            "{n} of its calls were recorded without their arguments"
        )),
        (0, u) => Some(format!(
            "{u} of its answers asked for tools the trace did not record"
        )),
        (n, u) => Some(format!(
            "{n} of its calls were recorded without their arguments, and {u} of its answers asked for tools the trace did not record"
        )),
    }
}

/// The `--detector` settings; a bad one is bad usage.
fn settings(args: &SweepArgs) -> Result<Vec<Setting>, ExitStatus> {
    let mut settings: Vec<Setting> = Vec::new();
    for spec in &args.detectors {
        let parsed = if spec.trim().starts_with(sweep::external::PREFIX) {
            sweep::external::spec(
                spec,
                std::time::Duration::from_millis(args.detector_timeout_ms),
            )
        } else {
            detector::spec(spec)
        };
        match parsed {
            Ok(s) => settings.extend(s),
            Err(e) => {
                return Err(fail(
                    &Diagnostic::new(format!("--detector {spec}: {e}"))
                        .hint("e.g. `--detector moltis-reflex:window=2,3,4` or `--detector all`"),
                ));
            }
        }
    }
    Ok(settings)
}

pub(super) fn import(args: ImportArgs) -> anyhow::Result<ExitStatus> {
    // The runs are written as files in --out: in an input folder, the next import or sweep of
    // it would read them back as transcripts.
    if let Some(refused) =
        super::output_over_input(&[("--out", Some(&args.out))], &args.files, |_| true)
    {
        return Ok(refused);
    }
    let mut err = anstream::stderr();
    let mut out = anstream::stdout().lock();
    let mut bad = false;
    let mut written: std::collections::BTreeMap<String, String> = Default::default();
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let failures = args.failures.rules()?;
    let (inputs, unreadable) = sweep::source::discover(&args.files);
    // The inputs where they are, to keep every run's file off them.
    let input_paths: std::collections::BTreeMap<std::path::PathBuf, std::path::PathBuf> = inputs
        .iter()
        .map(|i| &i.path)
        .chain(unreadable.iter().map(|(p, _)| p))
        .filter_map(|p| Some((std::fs::canonicalize(p).ok()?, p.clone())))
        .collect();
    // Files read with no run written from them, and runs not written.
    let mut skipped_files = unreadable.len();
    let mut skipped_runs = 0;
    let files = inputs.len() + unreadable.len();
    for (path, message) in unreadable {
        write!(
            err,
            "{}",
            Diagnostic::new(message)
                .in_file(&path)
                .render(&Style::default())
        )?;
        bad = true;
    }
    for input in inputs {
        if input.kind == sweep::source::InputKind::Scenario {
            writeln!(
                err,
                "note: {}: skipped: a scenario, not a transcript",
                input.path.display()
            )?;
            skipped_files += 1;
            continue;
        }
        let got = sweep::source::load(&input, args.format, &failures);
        for e in &got.errors {
            report_error(&mut err, &input.path, e)?;
            bad = true;
        }
        if let Some(n) = &got.note {
            writeln!(err, "note: {}: skipped: {n}", input.path.display())?;
        }
        for w in &got.warnings {
            writeln!(err, "note: {}: {w}", input.path.display())?;
        }
        if got.runs.is_empty() {
            skipped_files += 1;
        }
        for run in &got.runs {
            let name = format!("{}.{}", import::file_stem(&run.id), args.as_.extension());
            if let Some(other) = written.insert(name.clone(), run.id.clone()) {
                let d = Diagnostic::new(format!(
                    "runs `{other}` and `{}` would both be written to {name}",
                    run.id
                ))
                .in_file(&input.path)
                .hint("import their common folder, so run ids keep the path below it");
                write!(err, "{}", d.render(&Style::default()))?;
                bad = true;
                continue;
            }
            let path = args.out.join(&name);
            // A run's file never replaces a file being imported (`--out` beside the inputs).
            if let Some(replaced) = store::resolve_to_be(&path).and_then(|p| input_paths.get(&p)) {
                let d = Diagnostic::new(format!(
                    "run `{}` was not written: {} is the input file {}",
                    run.id,
                    path.display(),
                    replaced.display()
                ))
                .in_file(&input.path)
                .hint("write the runs into a folder of their own (`--out`)");
                write!(err, "{}", d.render(&Style::default()))?;
                written.remove(&name);
                skipped_runs += 1;
                bad = true;
                continue;
            }
            // What is written, or why the run is not: only what `sweep`, `trace` and `run`
            // read back is written.
            let made = imported_text(args.as_, &input.path, run)?;
            match made {
                Ok(text) => store::write_atomic(&path, text.as_bytes())
                    .with_context(|| format!("cannot write {}", path.display()))?,
                Err((why, hint)) => {
                    let d = Diagnostic::new(format!("run `{}` was not written: {why}", run.id))
                        .in_file(&input.path)
                        .hint(hint);
                    write!(err, "{}", d.render(&Style::default()))?;
                    written.remove(&name);
                    skipped_runs += 1;
                    bad = true;
                }
            }
        }
    }
    let mut skipped = Vec::new();
    if skipped_files > 0 {
        skipped.push(format!("{skipped_files} of {files} file(s) gave no run"));
    }
    if skipped_runs > 0 {
        skipped.push(format!("{skipped_runs} run(s) not written"));
    }
    let skipped = if skipped.is_empty() {
        String::new()
    } else {
        format!("; {} (see stderr)", skipped.join(", "))
    };
    writeln!(
        out,
        "harness import: {} {} written to {}{skipped}",
        written.len(),
        args.as_.noun(),
        args.out.display()
    )?;
    if written.is_empty() && !args.allow_empty {
        let d = Diagnostic::new(format!(
            "nothing was imported: {files} file(s) read, no run written"
        ))
        .hint("check the paths and the format (`--format`); `--allow-empty` lets an import of nothing pass");
        write!(err, "{}", d.render(&Style::default()))?;
        return Ok(ExitStatus::BadInput);
    }
    Ok(if bad {
        ExitStatus::BadInput
    } else {
        ExitStatus::Ok
    })
}
