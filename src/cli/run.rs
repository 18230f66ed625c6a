//! `harness run`, `list`, `merge`, `report` and `bless`: a run of the selected cases (or the
//! results of one) fed to the verdict's outputs, and the metric baseline written from a passing
//! run.

use super::args::{BlessArgs, ListArgs, MergeArgs, OutputArgs, ReportArgs, RunArgs, SelectArgs};
use super::{Setup, ci, fail, jobs_or_cores};
use crate::diagnostic::{Diagnostic, Style};
use crate::policy::Config;
use crate::report::{Collected, html};
use crate::results::ExitStatus;
use crate::run::{self, Options};
use crate::select::Selection;
use crate::store;
use crate::verdict::{self, Outputs, baseline};
use anyhow::Context as _;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// `harness run`.
pub(super) fn run(args: RunArgs, setup: &Setup) -> anyhow::Result<ExitStatus> {
    let RunArgs {
        paths,
        jobs,
        traces,
        profile,
        select,
        out,
        repeat,
    } = args;
    let layout = &setup.layout;
    let defaults = setup.run_defaults();
    if let Some(refused) = setup.nothing_set_up(&paths, "run") {
        return Ok(refused);
    }
    let paths = setup.paths_or_root(paths);
    if let Some(refused) = super::output_over_input(&out.written(), &paths, store::is_scenario_file)
    {
        return Ok(refused);
    }
    let profile = if profile.is_empty() {
        defaults.profile
    } else {
        profile
    };
    let outputs = Outputs {
        require_cases: select.require_cases(&paths),
        ..out.outputs(setup)
    };
    // Output folders are checked now, not when the results are in.
    for (flag, dir) in [
        ("--traces", &traces),
        ("--pending-dir", &outputs.pending_dir),
    ] {
        let Some(dir) = dir else { continue };
        if let Err(e) = store::writable_folder(dir) {
            return Ok(fail(
                &Diagnostic::new(format!("cannot write into {flag} {}: {e}", dir.display()))
                    .hint("name a folder harness may create and write"),
            ));
        }
    }
    run::interrupt::install().context("cannot catch stop signals")?;
    let options = match options(paths, setup, profile, &select) {
        Ok(o) => Options {
            jobs: jobs_or_cores(jobs.or(defaults.jobs)),
            write_pending: !outputs.ci || outputs.pending_dir.is_some(),
            traces,
            repeat,
            pending_dir: outputs.pending_dir.clone(),
            keep_traces: outputs.keeps_traces(),
            ..o
        },
        Err(code) => return Ok(code),
    };
    let bar = progress_bar(&outputs);
    let status = verdict::report(&outputs, layout, |r| {
        run::run_with(&options, r, bar.as_ref().map(|b| b as &dyn run::Progress))
    })?;
    Ok(run::interrupt::signalled(status))
}

/// `harness list`.
pub(super) fn list(args: ListArgs, setup: &Setup) -> anyhow::Result<ExitStatus> {
    let ListArgs {
        paths,
        select,
        profile,
        jobs,
    } = args;
    let paths = setup.paths_or_root(paths);
    let profile = if profile.is_empty() {
        setup.run_defaults().profile
    } else {
        profile
    };
    let require = select.require_cases(&paths);
    match options(paths, setup, profile, &select) {
        Ok(o) => list_cases(
            &Options {
                jobs: jobs_or_cores(jobs.or(setup.run_defaults().jobs)),
                ..o
            },
            require.as_ref(),
            &mut anstream::stdout().lock(),
            &mut anstream::stderr().lock(),
        ),
        Err(code) => Ok(code),
    }
}

/// `harness merge`.
pub(super) fn merge(args: MergeArgs, setup: &Setup) -> anyhow::Result<ExitStatus> {
    let MergeArgs {
        shards,
        out,
        allow_empty,
    } = args;
    if let Some(refused) = super::output_over_input(&out.written(), &shards, |_| false) {
        return Ok(refused);
    }
    let outputs = Outputs {
        require_cases: (!allow_empty).then(|| {
            Diagnostic::new("the shards' results hold no case")
                .hint("check the shards' runs, or pass --allow-empty if an empty run is expected")
        }),
        ..out.outputs(setup)
    };
    let merged = match verdict::merge_shards(&shards) {
        Ok(m) => m,
        Err(d) => return Ok(fail(&d)),
    };
    if let Some(s) = &merged.stopped {
        // Its merged results keep the mark (`harness scorecard` refuses them as it refuses
        // the shard).
        let _ = writeln!(
            anstream::stderr(),
            "harness merge: the shards hold a suite {}: the merged results are incomplete",
            s.line()
        );
    }
    Ok(verdict::report(&outputs, &setup.layout, |r| {
        merged.replay(r)
    })?)
}

/// `harness report`.
pub(super) fn report(args: &ReportArgs) -> anyhow::Result<ExitStatus> {
    if let Some(refused) =
        super::output_over_input(&[("--html", Some(&args.html))], &args.results, |_| false)
    {
        return Ok(refused);
    }
    html_report(
        &args.results,
        &args.html,
        args.baseline.as_deref(),
        &mut anstream::stdout().lock(),
    )
}

/// `harness bless`.
pub(super) fn bless(args: BlessArgs, setup: &Setup) -> anyhow::Result<ExitStatus> {
    let BlessArgs {
        paths,
        baseline,
        select,
        jobs,
    } = args;
    let full = paths.is_empty() && select.filter.is_empty() && select.partition.is_none();
    let paths = setup.paths_or_root(paths);
    let baseline = setup.bless_baseline(baseline);
    run::interrupt::install().context("cannot catch stop signals")?;
    let require = select.require_cases(&paths);
    match options(paths, setup, Vec::new(), &select) {
        Ok(o) => {
            let o = Options {
                jobs: jobs_or_cores(jobs.or(setup.run_defaults().jobs)),
                ..o
            };
            bless_baseline(
                &o,
                &baseline,
                full,
                require.as_ref(),
                &mut anstream::stdout().lock(),
            )
        }
        Err(code) => Ok(code),
    }
}

impl SelectArgs {
    pub(super) fn selection(&self) -> Result<Selection, Diagnostic> {
        Selection::new(&self.filter, self.partition.as_deref())
    }

    /// The error for a selection of no case from `paths` (naming them and the filters), or
    /// `None` with `--allow-empty`.
    pub(super) fn require_cases(&self, paths: &[PathBuf]) -> Option<Diagnostic> {
        (!self.allow_empty).then(|| {
            let filters = self.selection().map(|s| s.describe()).unwrap_or_default();
            nothing_selected(paths, &filters)
        })
    }
}

/// Why an empty selection fails: the paths and the filters that selected nothing.
fn nothing_selected(paths: &[PathBuf], filters: &str) -> Diagnostic {
    let paths: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    let from = if paths.is_empty() {
        String::new()
    } else {
        format!(" from {}", paths.join(", "))
    };
    if filters.is_empty() {
        Diagnostic::new(format!(
            "no case selected{from}: no scenario or cassette file there"
        ))
        .hint("check the path, or pass --allow-empty if an empty run is expected")
    } else {
        Diagnostic::new(format!("no case selected{from} by {filters}")).hint(
            "check the filters (`harness list` with the same flags shows what they select), or pass --allow-empty if an empty run is expected",
        )
    }
}

impl OutputArgs {
    /// The files these flags write, by flag (a baseline is read here; `bless` writes it).
    pub(super) fn written(&self) -> [(&'static str, Option<&Path>); 5] {
        [
            ("--metrics", self.metrics.as_deref()),
            ("--junit", self.junit.as_deref()),
            ("--json", self.json.as_deref()),
            ("--html", self.html.as_deref()),
            ("--otlp", self.otlp.as_deref()),
        ]
    }

    /// The outputs asked for, with the project file's defaults (`baseline`, `diff_limit`).
    pub(super) fn outputs(self, setup: &Setup) -> Outputs {
        let github = std::env::var_os("GITHUB_ACTIONS").is_some_and(|v| !v.is_empty());
        let project_baseline = setup.project.as_ref().and_then(|p| p.baseline.clone());
        let diff_limit = setup
            .run_defaults()
            .diff_limit
            .map(crate::project::DiffLimit::cases);
        Outputs {
            metrics: self.metrics,
            junit: self.junit,
            json: self.json,
            baseline: if self.no_baseline {
                None
            } else {
                self.baseline.or(project_baseline)
            },
            github_annotations: github,
            step_summary: std::env::var_os("GITHUB_STEP_SUMMARY")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
            ci: ci(),
            pending_dir: self.pending_dir,
            html: self.html,
            otlp: self.otlp,
            require_cases: None,
            diff_limit: self.diff_limit.or(diff_limit),
            quiet: self.quiet,
            command: verdict::Command::Run,
        }
    }
}

/// A progress bar on stderr, for a run on a terminal only: never in CI logs, pipes or files,
/// and not with `--quiet`. It is cleared before the results print.
struct Bar(indicatif::ProgressBar);

impl run::Progress for Bar {
    fn start(&self, files: u64) {
        self.0.set_length(files);
    }
    fn file_done(&self) {
        self.0.inc(1);
    }
    fn finish(&self) {
        self.0.finish_and_clear();
    }
}

fn progress_bar(outputs: &Outputs) -> Option<Bar> {
    use std::io::IsTerminal as _;
    if outputs.ci || outputs.quiet || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} scenario files {elapsed}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    Some(Bar(bar))
}

/// Options that run `paths` with these extra profiles and this selection, writing nothing;
/// a bad profile or selection is reported and its exit code returned.
fn options(
    paths: Vec<PathBuf>,
    setup: &Setup,
    profile: Vec<String>,
    select: &SelectArgs,
) -> Result<Options, ExitStatus> {
    if let Some(bad) = profile.iter().find(|p| !Config::is_profile(p)) {
        return Err(unknown_profile(bad));
    }
    Ok(Options {
        paths,
        layout: setup.layout.clone(),
        jobs: 1,
        write_pending: false,
        traces: None,
        also_profiles: profile,
        selection: select.selection().map_err(|d| fail(&d))?,
        repeat: 1,
        pending_dir: None,
        keep_traces: false,
        matching: setup.replay_defaults().matching(&[], &[]),
        goldens: true,
    })
}

pub(super) fn unknown_profile(name: &str) -> ExitStatus {
    fail(
        &Diagnostic::new(format!("unknown profile `{name}`"))
            .hint(crate::policy::profiles::known()),
    )
}

/// `harness report RESULTS.json… --html FILE`: the HTML report of saved JSON results (the
/// shards of one run are joined as `merge` joins them), checked against `baseline` when given;
/// prints what it wrote. The exit code says whether the report was written (0) or the input was
/// bad (2), not how the run went: the page says that.
fn html_report(
    results: &[PathBuf],
    target: &Path,
    baseline: Option<&Path>,
    out: &mut dyn Write,
) -> anyhow::Result<ExitStatus> {
    let collected = match verdict::merge_shards(results) {
        Ok(c) => c,
        Err(d) => return Ok(fail(&d)),
    };
    let checked = match baseline {
        Some(path) => {
            let base = verdict::load_baseline(path)?;
            let rows = collected.cases().map(|(_, c)| &c.row);
            let verdict = baseline::check(&base, rows)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            Some(verdict.for_html(&path.display().to_string()))
        }
        None => None,
    };
    store::write_atomic(
        target,
        html::render(&collected, checked.as_ref()).as_bytes(),
    )
    .with_context(|| format!("cannot write {}", target.display()))?;
    let cases = collected.cases().count();
    let traced = collected
        .cases()
        .filter(|(_, c)| c.detail.is_some())
        .count();
    writeln!(
        out,
        "harness report: wrote {} ({cases} cases, {traced} with their trace)",
        target.display()
    )?;
    if traced < cases {
        writeln!(
            out,
            "note: {} cases have no trace in the results (written before results kept traces); their timelines are missing",
            cases - traced
        )?;
    }
    Ok(ExitStatus::Ok)
}

/// `harness list`: the cases a run with this selection would take, one per line
/// (`id  profile  family`), to `out`; files that cannot load are reported to `err` (as a run
/// reports them) and make the exit code 2. It reads the same files and keeps the same cases as
/// `harness run` ([`run::plan`], [`run::selected_cases`]) without replaying them.
fn list_cases(
    options: &Options,
    require_cases: Option<&Diagnostic>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<ExitStatus> {
    let plan = run::plan(options);
    let mut code = ExitStatus::Ok;
    for r in &plan.unreadable {
        located_errors(err, r)?;
        code = ExitStatus::BadInput;
    }
    let mut listed = 0usize;
    // Files load on the run's worker pool, each into its lines (the cases are dropped where
    // they were made); the lines are written in file order.
    let pool = run::pool::build(options.jobs)?;
    run::pool::for_each_ordered(
        &pool,
        run::WINDOW,
        &plan.files,
        |path| {
            if let Some(r) = plan.refused(&path) {
                return Err(r);
            }
            let (cases, _) = run::selected_cases(options, &path)?;
            let mut lines = String::new();
            for c in &cases {
                let shown = crate::escape::escape_controls;
                // Writing into a `String` cannot fail.
                let _ = std::fmt::Write::write_fmt(
                    &mut lines,
                    format_args!(
                        "{:<60} {:<10} {}\n",
                        shown(&c.id),
                        c.profile,
                        shown(&c.scenario.family)
                    ),
                );
            }
            Ok((lines, cases.len()))
        },
        |loaded| -> io::Result<()> {
            match loaded {
                Ok((lines, n)) => {
                    out.write_all(lines.as_bytes())?;
                    listed += n;
                }
                Err(r) => {
                    located_errors(err, &r)?;
                    code = ExitStatus::BadInput;
                }
            }
            Ok(())
        },
    )?;
    if listed == 0 && code == ExitStatus::Ok {
        if let Some(d) = require_cases {
            write!(err, "{}", d.render(&Style::default()))?;
            code = d.status;
        }
    }
    Ok(code)
}

/// The located errors of a file that could not load, as `error: FILE:LINE:COL: …` lines with
/// their hints.
fn located_errors(err: &mut dyn Write, r: &crate::results::FileResult) -> io::Result<()> {
    for d in r.outcome.as_ref().err().into_iter().flatten() {
        write!(err, "{}", d.render_in(&r.path, &Style::default()))?;
    }
    Ok(())
}

/// `harness bless`: run the selection and record its metrics in the baseline file (every
/// case when nothing narrows the run, else only the cases run); refuses when a case fails.
fn bless_baseline(
    options: &Options,
    file: &Path,
    full: bool,
    require_cases: Option<&Diagnostic>,
    out: &mut dyn Write,
) -> anyhow::Result<ExitStatus> {
    let mut base = if file.exists() {
        verdict::load_baseline(file)?
    } else {
        baseline::Baseline::default()
    };
    let mut collected = Collected::default();
    run::run(options, &mut collected)?;
    if run::interrupt::requested() {
        writeln!(
            out,
            "harness bless: interrupted ({}); the baseline was not written",
            run::interrupt::name()
        )?;
        return Ok(run::interrupt::status());
    }
    let tally = collected.tally();
    let code = tally.exit_code();
    if code != ExitStatus::Ok {
        writeln!(
            out,
            "harness bless: not written. {} of {} cases fail, {} files are invalid, {} goldens are orphaned; `harness run` shows why — bless a passing run",
            tally.cases - tally.passed,
            tally.cases,
            tally.invalid_files,
            tally.orphans.len()
        )?;
        return Ok(code);
    }
    let rows: Vec<_> = collected.cases().map(|(_, c)| &c.row).collect();
    let n = rows.len();
    if let (0, Some(d)) = (n, require_cases) {
        let status = fail(d);
        writeln!(out, "harness bless: not written: no case ran")?;
        return Ok(status);
    }
    baseline::bless(&mut base, rows, full);
    store::write_atomic(file, baseline::render(&base).as_bytes())
        .with_context(|| format!("cannot write {}", file.display()))?;
    writeln!(
        out,
        "harness bless: wrote {} ({n} cases recorded, {} in the baseline)",
        file.display(),
        base.cases.len()
    )?;
    Ok(ExitStatus::Ok)
}
