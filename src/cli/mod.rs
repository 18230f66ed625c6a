//! The command line: clap commands mapped onto the library, and errors onto exit codes.
//! The only place that reads the environment (`CI`, `GITHUB_ACTIONS`, `GITHUB_STEP_SUMMARY`)
//! and writes to stdout/stderr.

use crate::gate::{self, Outputs};
use crate::results::{EXIT_BAD_INPUT, EXIT_OK};
use crate::run::{self, Options};
use crate::scenario::{self, SourceFormat};
use crate::select::Selection;
use crate::store::{self, Layout};
use crate::{policy::Config, trace};
use anyhow::Context as _;
use clap::builder::TypedValueParser as _;
use clap::{Parser, Subcommand};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

mod record;
mod sweep;

/// Record/replay evaluation and regression harness for LLM agent loops.
#[derive(Debug, Parser)]
#[command(name = "harness", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Root of scenario ids [default: the project file's `scenarios`, else `scenarios`].
    #[arg(long, global = true, value_name = "DIR")]
    scenarios_root: Option<PathBuf>,
    /// Folder of goldens [default: the project file's `snapshots`, else `snapshots`].
    #[arg(long, global = true, value_name = "DIR")]
    snapshots: Option<PathBuf>,
    /// Say on stderr which project file (`harness.toml`) the paths come from, and what they are.
    #[arg(short, long, global = true)]
    verbose: bool,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Replay scenarios, compare with goldens, check expectations, summarise metrics.
    ///
    /// Exit codes: 0 all passed; 1 a golden mismatch, a missing or orphaned golden, or a failed
    /// expectation; 2 bad input or usage; 3 only metrics regressed against `--baseline`.
    Run {
        /// Scenario files or folders [default: the scenarios root].
        paths: Vec<PathBuf>,
        /// Worker threads (default: the machine's cores; at most 256).
        #[arg(short, long, value_name = "N", value_parser = jobs_parser())]
        jobs: Option<usize>,
        /// Write each run's trace as JSON lines into this folder.
        #[arg(long, value_name = "DIR")]
        traces: Option<PathBuf>,
        /// Also run every scenario under this profile (repeatable, or comma-separated), next
        /// to its own; the summary shows them side by side. Runs the scenario does not
        /// declare (`[compare.NAME]`) are not gated.
        #[arg(long, value_name = "NAME", value_delimiter = ',')]
        profile: Vec<String>,
        #[command(flatten)]
        select: SelectArgs,
        #[command(flatten)]
        out: OutputArgs,
        /// Run each case N times (live or nondeterministic runs): pass@N and pass^N per case;
        /// a case that passes some runs is flaky, reported and not failed.
        #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=i64::from(crate::limits::MAX_REPEAT)))]
        repeat: u32,
    },
    /// Print the cases a run would take (id, profile, family), one per line.
    List {
        /// Scenario files or folders [default: the scenarios root].
        paths: Vec<PathBuf>,
        #[command(flatten)]
        select: SelectArgs,
        /// Also list every scenario under these profiles, as `run --profile` would.
        #[arg(long, value_name = "NAME", value_delimiter = ',')]
        profile: Vec<String>,
    },
    /// Join shards' `--json` results into the outputs one run would give.
    Merge {
        /// JSON results of the shards (`harness run --partition … --json FILE`).
        #[arg(required = true)]
        shards: Vec<PathBuf>,
        #[command(flatten)]
        out: OutputArgs,
        /// Let results that hold no case pass (by default they are bad input, exit 2).
        #[arg(long)]
        allow_empty: bool,
    },
    /// Make the HTML report of saved JSON results (`run --json`, or the shards of one run).
    ///
    /// Exit codes: 0 the report was written (whatever the results say); 2 bad input.
    Report {
        /// JSON results (`harness run --json FILE`); shards of one run are joined.
        #[arg(required = true)]
        results: Vec<PathBuf>,
        /// The HTML report to write.
        #[arg(long, value_name = "FILE", required = true)]
        html: PathBuf,
        /// Show the regressions and improvements against this metric baseline.
        #[arg(long, value_name = "FILE")]
        baseline: Option<PathBuf>,
    },
    /// Run scenarios and record their metrics as the baseline `--baseline` compares with.
    Bless {
        /// Scenario files or folders (given, or with --filter: only those cases are updated).
        paths: Vec<PathBuf>,
        /// The baseline file [default: the project file's `baseline`, else
        /// `baselines/scenarios.toml`].
        #[arg(long, value_name = "FILE")]
        baseline: Option<PathBuf>,
        #[command(flatten)]
        select: SelectArgs,
        /// Worker threads (default: the machine's cores; at most 256).
        #[arg(short, long, value_name = "N", value_parser = jobs_parser())]
        jobs: Option<usize>,
    },
    /// Print the unified diff of pending goldens against their goldens.
    Diff {
        /// Scenario or golden files and folders (default: every pending golden).
        paths: Vec<PathBuf>,
        /// Read pending goldens from this folder (e.g. a CI job's artifact).
        #[arg(long, value_name = "DIR")]
        pending_dir: Option<PathBuf>,
    },
    /// Promote pending goldens (.snap.new) to goldens.
    Accept {
        /// Scenario or golden files and folders (default: every pending golden).
        paths: Vec<PathBuf>,
        /// Take pending goldens from this folder (e.g. a CI job's artifact).
        #[arg(long, value_name = "DIR")]
        pending_dir: Option<PathBuf>,
    },
    /// Discard pending goldens.
    Reject {
        /// Scenario or golden files and folders (default: every pending golden).
        paths: Vec<PathBuf>,
        /// Take pending goldens from this folder.
        #[arg(long, value_name = "DIR")]
        pending_dir: Option<PathBuf>,
    },
    /// Print the trace of one scenario (every case) or cassette: golden text, or JSON lines.
    Trace {
        /// Scenario or cassette file.
        scenario: PathBuf,
        /// JSON lines instead of golden text.
        #[arg(long)]
        jsonl: bool,
    },
    /// Print the JSON Schema of the scenario format, or of the project file (`harness.toml`).
    Schema {
        /// Which format.
        #[arg(value_enum, default_value = "scenario")]
        of: SchemaOf,
    },
    /// Print a profile's full configuration as TOML (the keys `[config]` can override); with
    /// no name, list the profiles.
    Profile {
        /// Profile name.
        name: Option<String>,
    },
    /// Run a scenario against a live provider and record every exchange into a cassette.
    ///
    /// Exit codes: 0 recorded (or replayed and matched); 1 a replayed request differs from the
    /// cassette; 2 bad input or usage, a missing key, or a provider that refused the request.
    Record(crate::record::RecordArgs),
    /// Turn a cassette into an editable scenario (TOML) that scripts the recorded turns.
    Promote(crate::record::PromoteArgs),
    /// Record any agent's real session: forward its model requests to the provider, pass the
    /// answers back unchanged, and write each conversation into a cassette.
    ///
    /// Exit codes: 0 the cassettes were written (whatever the agent's own exit status, which
    /// is printed); 1 the agent made no model request, or an answer was too large to keep;
    /// 2 bad usage (an existing cassette without --replace, a bad upstream URL, a command that
    /// cannot start); 130 Ctrl-C (the cassettes are still written).
    Proxy(crate::serve::ProxyArgs),
    /// Serve a scenario's scripted model as an OpenAI- and Anthropic-compatible endpoint;
    /// Ctrl-C ends it and prints the trace inferred from each conversation.
    Serve(crate::serve::ServeArgs),
    /// Run an agent command against each scenario served, and judge what it sent as `run`
    /// judges a case (goldens, expectations, metrics).
    ///
    /// Exit codes as for `run`; a command that cannot start is bad input (2).
    Exec {
        #[command(flatten)]
        args: crate::serve::ExecArgs,
        #[command(flatten)]
        out: OutputArgs,
    },
    /// Fail when a fixture holds a secret-looking string (file:line:col of each).
    ///
    /// Exit codes: 0 clean; 1 secrets found; 2 an unreadable path.
    Lint(crate::record::LintArgs),
    /// Score loop detectors over recorded runs: one CSV row per (detector, parameters).
    ///
    /// Exit codes: 0 every input was read; 2 an input was malformed (reported as
    /// file:line:col; the others are still scored and the outputs written) or bad usage.
    Sweep(sweep::SweepArgs),
    /// Convert transcripts (tau-bench, tau2, swe-agent, toolbench, openai, anthropic,
    /// openhands) into traces, one JSON-lines file per run.
    Import(sweep::ImportArgs),
}

/// The formats `harness schema` describes.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum SchemaOf {
    /// Scenario files (`schema/scenario.schema.json`).
    Scenario,
    /// The project file, `harness.toml` (`schema/harness.schema.json`).
    Project,
}

/// Which scenarios and cases run.
#[derive(Debug, clap::Args)]
struct SelectArgs {
    /// Run only matching cases (repeatable): an id glob (`reflex/*`), `family:GLOB`,
    /// `tag:GLOB` or `profile:GLOB`; one kind's filters are alternatives, kinds combine.
    #[arg(long, value_name = "FILTER")]
    filter: Vec<String>,
    /// Run one shard: `count:M/N` (every N-th of the sorted scenario ids) or `hash:M/N`.
    #[arg(long, value_name = "KIND:M/N")]
    partition: Option<String>,
    /// Let a selection of no case pass (by default it is bad input, exit 2: a typo in a
    /// filter must not turn a CI job green).
    #[arg(long)]
    allow_empty: bool,
}

impl SelectArgs {
    fn selection(&self) -> Result<Selection, String> {
        Selection::new(&self.filter, self.partition.as_deref())
    }

    /// The error for a selection of no case from `paths` (naming them and the filters), or
    /// `None` with `--allow-empty`.
    fn require_cases(&self, paths: &[PathBuf]) -> Option<String> {
        (!self.allow_empty).then(|| {
            let filters = self.selection().map(|s| s.describe()).unwrap_or_default();
            nothing_selected(paths, &filters)
        })
    }
}

/// Why an empty selection fails: the paths and the filters that selected nothing.
fn nothing_selected(paths: &[PathBuf], filters: &str) -> String {
    let paths: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    let from = if paths.is_empty() {
        String::new()
    } else {
        format!(" from {}", paths.join(", "))
    };
    if filters.is_empty() {
        format!(
            "no case selected{from}: no scenario or cassette file there\n  hint: check the path, or pass --allow-empty if an empty run is expected"
        )
    } else {
        format!(
            "no case selected{from} by {filters}\n  hint: check the filters (`harness list` with the same flags shows what they select), or pass --allow-empty if an empty run is expected"
        )
    }
}

/// Result files and checks.
#[derive(Debug, clap::Args)]
struct OutputArgs {
    /// Write one CSV row of metrics per run.
    #[arg(long, value_name = "FILE")]
    metrics: Option<PathBuf>,
    /// Write a JUnit XML report (one testcase per case).
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Write the results as JSON (what `harness merge` reads).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Compare metrics with this baseline; regressions exit 3 (see `harness bless`)
    /// [default: the project file's `baseline`, if any].
    #[arg(long, value_name = "FILE")]
    baseline: Option<PathBuf>,
    /// Compare with no baseline, not even the project file's.
    #[arg(long, conflicts_with = "baseline")]
    no_baseline: bool,
    /// Write pending goldens into this folder (mirroring ids), even when `CI` is set.
    #[arg(long, value_name = "DIR")]
    pending_dir: Option<PathBuf>,
    /// Write a self-contained HTML report: every case's timeline, diffs, metrics charts.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Show the first N failing cases in full (diff, expectations), the rest one line each;
    /// `all` shows every one in full [default: 10].
    #[arg(long, value_name = "N", value_parser = diff_limit)]
    diff_limit: Option<usize>,
    /// One line per failing case and no summary tables: the verdict, what failed, and errors.
    #[arg(short, long)]
    quiet: bool,
}

fn diff_limit(s: &str) -> Result<usize, String> {
    if s == "all" {
        return Ok(usize::MAX);
    }
    s.parse()
        .map_err(|_| format!("`{s}` is not a number of cases; write a whole number or `all`"))
}

impl OutputArgs {
    /// The outputs asked for, with the project file's defaults (`baseline`, `diff_limit`).
    fn outputs(self, setup: &Setup) -> Outputs {
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
            require_cases: None,
            diff_limit: self.diff_limit.or(diff_limit),
            quiet: self.quiet,
            command: gate::Command::Run,
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

fn bad_usage(message: &str) -> u8 {
    eprintln!("error: {}", crate::text::escape_in_lines(message));
    EXIT_BAD_INPUT
}

/// `--jobs`: 1 to [`crate::limits::MAX_JOBS`] worker threads.
pub(crate) fn jobs_parser() -> impl clap::builder::TypedValueParser<Value = usize> {
    clap::value_parser!(u64)
        .range(1..=crate::limits::MAX_JOBS)
        .map(|n| usize::try_from(n).unwrap_or(1))
}

fn jobs_or_cores(jobs: Option<usize>) -> usize {
    jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, std::num::NonZero::get))
}

fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false")
}

/// Parse arguments, run, and map the result to an exit code.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(mut e) => {
            suggest_subcommand(&mut e);
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() {
                EXIT_BAD_INPUT
            } else {
                EXIT_OK
            });
        }
    };
    match execute(cli) {
        Ok(code) => ExitCode::from(code),
        // A reader that went away (`harness trace … | head`) is not an error.
        Err(e) if is_broken_pipe(&e) => ExitCode::from(EXIT_OK),
        Err(e) => {
            let mut err = anstream::stderr();
            let message = format!("{e:#}");
            let _ = writeln!(err, "error: {}", crate::text::escape_in_lines(&message));
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}

/// Add a suggestion to an unknown subcommand clap found none for: clap's similarity measure
/// misses transposed letters in short names (`rnu`, `lsit`), one edit away from a command.
fn suggest_subcommand(e: &mut clap::Error) {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::InvalidSubcommand || e.get(ContextKind::SuggestedSubcommand).is_some()
    {
        return;
    }
    let Some(ContextValue::String(bad)) = e.get(ContextKind::InvalidSubcommand) else {
        return;
    };
    let command = <Cli as clap::CommandFactory>::command();
    let close: Vec<String> = command
        .get_subcommands()
        .map(|c| c.get_name())
        .filter(|name| strsim::osa_distance(bad, name) <= 1 + usize::from(name.len() > 5))
        .map(str::to_owned)
        .collect();
    if !close.is_empty() {
        e.insert(
            ContextKind::SuggestedSubcommand,
            ContextValue::Strings(close),
        );
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Where a command's paths come from: the project file found above the current folder (if
/// any) and the layout it gives, overridden by `--scenarios-root` and `--snapshots`.
struct Setup {
    project: Option<crate::project::Project>,
    layout: Layout,
}

impl Setup {
    fn new(cli: &Cli) -> Result<Self, u8> {
        let cwd = std::env::current_dir().unwrap_or_default();
        let project = match crate::project::discover(&cwd) {
            Ok(p) => p,
            Err(e) => {
                let _ = writeln!(anstream::stderr(), "error: {e}");
                return Err(EXIT_BAD_INPUT);
            }
        };
        let layout = Layout {
            scenarios: cli
                .scenarios_root
                .clone()
                .or_else(|| project.as_ref().map(|p| p.scenarios.clone()))
                .unwrap_or_else(|| PathBuf::from("scenarios")),
            snapshots: cli
                .snapshots
                .clone()
                .or_else(|| project.as_ref().map(|p| p.snapshots.clone()))
                .unwrap_or_else(|| PathBuf::from("snapshots")),
        };
        if cli.verbose {
            let mut err = anstream::stderr();
            let _ = match &project {
                Some(p) => writeln!(
                    err,
                    "harness: project file {} (scenarios {}, snapshots {}, baseline {})",
                    p.file.display(),
                    layout.scenarios.display(),
                    layout.snapshots.display(),
                    p.baseline
                        .as_ref()
                        .map_or_else(|| "none".to_owned(), |b| b.display().to_string())
                ),
                None => writeln!(
                    err,
                    "harness: no {} in {} or above; paths are relative to it (scenarios {}, snapshots {})",
                    crate::project::FILE_NAME,
                    cwd.display(),
                    layout.scenarios.display(),
                    layout.snapshots.display()
                ),
            };
        }
        Ok(Self { project, layout })
    }

    /// The paths given, or the scenarios root.
    fn paths_or_root(&self, paths: Vec<PathBuf>) -> Vec<PathBuf> {
        if paths.is_empty() {
            vec![self.layout.scenarios.clone()]
        } else {
            paths
        }
    }

    /// The project file's run defaults (empty without one).
    fn run_defaults(&self) -> crate::project::RunDefaults {
        self.project
            .as_ref()
            .map(|p| p.config.run.clone())
            .unwrap_or_default()
    }

    /// The baseline `bless` writes: `--baseline`, else the project file's, else
    /// `baselines/scenarios.toml` in the project root (the current folder without a project).
    fn bless_baseline(&self, given: Option<PathBuf>) -> PathBuf {
        given
            .or_else(|| self.project.as_ref().and_then(|p| p.baseline.clone()))
            .unwrap_or_else(|| {
                let root = self
                    .project
                    .as_ref()
                    .map_or(PathBuf::new(), |p| p.root.clone());
                crate::store::normalise(&root.join("baselines/scenarios.toml"))
            })
    }
}

fn execute(cli: Cli) -> anyhow::Result<u8> {
    let setup = match Setup::new(&cli) {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    let layout = setup.layout.clone();
    match cli.command {
        Command::Run {
            paths,
            jobs,
            traces,
            profile,
            select,
            out,
            repeat,
        } => {
            let defaults = setup.run_defaults();
            let paths = setup.paths_or_root(paths);
            let profile = if profile.is_empty() {
                defaults.profile
            } else {
                profile
            };
            let outputs = Outputs {
                require_cases: select.require_cases(&paths),
                ..out.outputs(&setup)
            };
            // Output folders are checked now, not when the results are in.
            for (flag, dir) in [
                ("--traces", &traces),
                ("--pending-dir", &outputs.pending_dir),
            ] {
                let Some(dir) = dir else { continue };
                if let Err(e) = store::writable_folder(dir) {
                    return Ok(bad_usage(&format!(
                        "cannot write into {flag} {}: {e}\n  hint: name a folder harness may create and write",
                        dir.display()
                    )));
                }
            }
            run::interrupt::install().context("cannot catch Ctrl-C")?;
            let options = match options(paths, layout.clone(), profile, &select) {
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
            gate::report(&outputs, &layout, |r| {
                run::run_with(&options, r, bar.as_ref().map(|b| b as &dyn run::Progress))
            })
        }
        Command::List {
            paths,
            select,
            profile,
        } => {
            let paths = setup.paths_or_root(paths);
            let profile = if profile.is_empty() {
                setup.run_defaults().profile
            } else {
                profile
            };
            let require = select.require_cases(&paths);
            match options(paths, layout, profile, &select) {
                Ok(o) => gate::list(
                    &o,
                    require.as_deref(),
                    &mut anstream::stdout().lock(),
                    &mut anstream::stderr().lock(),
                ),
                Err(code) => Ok(code),
            }
        }
        Command::Merge {
            shards,
            out,
            allow_empty,
        } => {
            let outputs = Outputs {
                require_cases: (!allow_empty).then(|| {
                    "the shards' results hold no case\n  hint: check the shards' runs, or pass --allow-empty if an empty run is expected".to_owned()
                }),
                ..out.outputs(&setup)
            };
            let merged = match gate::merge_shards(&shards) {
                Ok(m) => m,
                Err(e) => return Ok(bad_usage(&e)),
            };
            gate::report(&outputs, &layout, |r| merged.replay(r))
        }
        Command::Report {
            results,
            html,
            baseline,
        } => gate::html_report(
            &results,
            &html,
            baseline.as_deref(),
            &mut anstream::stdout().lock(),
        ),
        Command::Bless {
            paths,
            baseline,
            select,
            jobs,
        } => {
            let full = paths.is_empty() && select.filter.is_empty() && select.partition.is_none();
            let paths = setup.paths_or_root(paths);
            let baseline = setup.bless_baseline(baseline);
            run::interrupt::install().context("cannot catch Ctrl-C")?;
            let require = select.require_cases(&paths);
            match options(paths, layout, Vec::new(), &select) {
                Ok(o) => {
                    let o = Options {
                        jobs: jobs_or_cores(jobs.or(setup.run_defaults().jobs)),
                        ..o
                    };
                    gate::bless(
                        &o,
                        &baseline,
                        full,
                        require.as_deref(),
                        &mut anstream::stdout().lock(),
                    )
                }
                Err(code) => Ok(code),
            }
        }
        Command::Diff { paths, pending_dir } => {
            match missing_path(&paths, pending_dir.as_deref()) {
                Some(code) => Ok(code),
                None => gate::diff(&layout, pending_dir.as_deref(), &paths),
            }
        }
        Command::Accept { paths, pending_dir } => {
            match missing_path(&paths, pending_dir.as_deref()) {
                Some(code) => Ok(code),
                None => review(&layout, pending_dir.as_deref(), &paths, true),
            }
        }
        Command::Reject { paths, pending_dir } => {
            match missing_path(&paths, pending_dir.as_deref()) {
                Some(code) => Ok(code),
                None => review(&layout, pending_dir.as_deref(), &paths, false),
            }
        }
        Command::Trace { scenario, jsonl } if crate::record::is_cassette(&scenario) => {
            record::trace(&layout, &scenario, jsonl)
        }
        Command::Trace { scenario, jsonl } => {
            let text =
                store::read_input_text(&scenario, "scenario", crate::limits::MAX_SCENARIO_BYTES)
                    .with_context(|| format!("cannot read {}", scenario.display()))?;
            let format = if scenario.extension().is_some_and(|e| e == "json") {
                SourceFormat::Json
            } else {
                SourceFormat::Toml
            };
            let cases = match scenario::load(&text, format, &layout.id_of(&scenario)) {
                Ok(c) => c,
                Err(diags) => {
                    let mut out = anstream::stderr().lock();
                    for d in diags {
                        writeln!(out, "error: {}", d.located(&scenario))?;
                    }
                    return Ok(EXIT_BAD_INPUT);
                }
            };
            let mut out = anstream::stdout().lock();
            for case in &cases {
                let events = run::replay(case)
                    .map_err(|gap| anyhow::anyhow!("{}: {gap}", scenario.display()))?;
                if jsonl {
                    out.write_all(trace::render_jsonl(&events).as_bytes())?;
                } else {
                    out.write_all(trace::render_golden(&case.id, &events).as_bytes())?;
                }
            }
            Ok(EXIT_OK)
        }
        Command::Schema { of } => {
            let schema = match of {
                SchemaOf::Scenario => scenario::json_schema(),
                SchemaOf::Project => crate::project::json_schema(),
            };
            anstream::stdout().write_all(schema.as_bytes())?;
            Ok(EXIT_OK)
        }
        Command::Record(args) => record::record(&args, &layout, ci()),
        Command::Promote(args) => record::promote(&args),
        Command::Serve(args) => crate::serve::cli::serve(&args, &layout),
        Command::Proxy(args) => {
            run::interrupt::install().context("cannot catch Ctrl-C")?;
            crate::serve::cli::proxy(&args)
        }
        Command::Exec { args, out } => {
            run::interrupt::install().context("cannot catch Ctrl-C")?;
            // `bless` never records exec's conversations, so the project's baseline would only
            // list them as missing: exec compares metrics with a baseline named on its line.
            let named = out.baseline.is_some();
            let mut outputs = Outputs {
                command: gate::Command::Exec,
                ..out.outputs(&setup)
            };
            if !named {
                outputs.baseline = None;
            }
            crate::serve::cli::exec(&args, &layout, &outputs)
        }
        Command::Lint(mut args) => {
            if args.paths.is_empty() {
                // The project's own folders, wherever it is run from.
                let root = setup
                    .project
                    .as_ref()
                    .map_or(PathBuf::new(), |p| p.root.clone());
                args.paths = [
                    layout.scenarios.clone(),
                    crate::store::normalise(&root.join("fixtures")),
                    layout.snapshots.clone(),
                ]
                .into_iter()
                .filter(|p| p.exists())
                .collect();
            }
            Ok(crate::record::lint_command(
                &args,
                &mut anstream::stdout().lock(),
            )?)
        }
        Command::Sweep(args) => sweep::sweep(args),
        Command::Import(args) => sweep::import(args),
        Command::Profile { name: None } => {
            let mut out = anstream::stdout().lock();
            for (name, what) in crate::policy::PROFILES.iter().zip(PROFILE_SUMMARIES) {
                writeln!(out, "{name:<10} {what}")?;
            }
            writeln!(
                out,
                "`harness profile NAME` prints one's configuration; docs/profiles.md and docs/runtimes.md describe them"
            )?;
            Ok(EXIT_OK)
        }
        Command::Profile { name: Some(name) } => match Config::profile(&name) {
            Some(c) => {
                anstream::stdout().write_all(toml::to_string_pretty(&c)?.as_bytes())?;
                Ok(EXIT_OK)
            }
            None => Ok(unknown_profile(&name)),
        },
    }
}

/// Options that run `paths` with these extra profiles and this selection, writing nothing;
/// a bad profile or selection is reported and its exit code returned.
fn options(
    paths: Vec<PathBuf>,
    layout: Layout,
    profile: Vec<String>,
    select: &SelectArgs,
) -> Result<Options, u8> {
    if let Some(bad) = profile.iter().find(|p| Config::profile(p).is_none()) {
        return Err(unknown_profile(bad));
    }
    Ok(Options {
        paths,
        layout,
        jobs: 1,
        write_pending: false,
        traces: None,
        also_profiles: profile,
        selection: select.selection().map_err(|e| bad_usage(&e))?,
        repeat: 1,
        pending_dir: None,
        keep_traces: false,
    })
}

/// One line on each of [`crate::policy::PROFILES`], in its order, for `harness profile`.
const PROFILE_SUMMARIES: [&str; 5] = [
    "the bare loop: no defence, 25 iterations",
    "IronClaw v1's chat turn: intent nudge, truncation, duplicate tracker, budget, cost guard, compaction, approvals",
    "Moltis at PR #664: argument validation, the reflex-loop detector, auto-continue",
    "the book's TypeScript AgentLoop: stop reasons, retries, cost cap, compaction, similarity loop detector",
    "clude_code's plan/step executor: a plan run step by step, actions read from reply text",
];

fn unknown_profile(name: &str) -> u8 {
    bad_usage(&format!(
        "unknown profile `{name}`\n  hint: known profiles: {}",
        crate::policy::PROFILES.join(", ")
    ))
}

/// A path given to `diff`, `accept` or `reject` (or their `--pending-dir`) that is not there
/// is bad usage, reported, as `run` reports it: selecting nothing from it would pass silently.
fn missing_path(paths: &[PathBuf], pending_dir: Option<&std::path::Path>) -> Option<u8> {
    let missing = paths
        .iter()
        .map(PathBuf::as_path)
        .chain(pending_dir)
        .find(|p| {
            // A golden path names its pending file too (`x.snap` for `x.snap.new`).
            let there = |p: &std::path::Path| std::fs::symlink_metadata(p).is_ok();
            !there(p) && !there(&PathBuf::from(format!("{}.new", p.display())))
        })?;
    Some(bad_usage(&format!(
        "cannot read {}: no such file or folder\n  hint: give scenario or golden files and folders that exist (`harness diff` with no path shows every pending golden)",
        missing.display()
    )))
}

/// Promote (`accept`) or discard pending goldens (from `pending_dir` when given); prints
/// what it did. Accepting a pending golden or golden that is a link or a special file is
/// refused (exit 2): never read, never written through.
fn review(
    layout: &Layout,
    pending_dir: Option<&std::path::Path>,
    paths: &[PathBuf],
    accept: bool,
) -> anyhow::Result<u8> {
    let pending = gate::pending(layout, pending_dir, paths);
    let from = pending_dir.unwrap_or(&layout.snapshots);
    let mut out = anstream::stdout().lock();
    let mut code = EXIT_OK;
    let mut done = 0;
    for (p, golden) in &pending {
        if accept {
            // Rejecting removes a link itself, which is safe; accepting would read through it.
            let text =
                store::read_inside(from, p, "pending golden", crate::limits::MAX_GOLDEN_BYTES)
                    .with_context(|| format!("cannot read {}", p.display()));
            let moved = text.and_then(|text| {
                let text = text.unwrap_or_default();
                store::write_inside(&layout.snapshots, golden, "golden", text.as_bytes())
                    .and_then(|()| std::fs::remove_file(p))
                    .with_context(|| format!("cannot move {} to {}", p.display(), golden.display()))
            });
            if let Err(e) = moved {
                eprintln!("error: {}", crate::text::escape_controls(&format!("{e:#}")));
                code = EXIT_BAD_INPUT;
                continue;
            }
            writeln!(out, "accepted {}", golden.display())?;
        } else {
            std::fs::remove_file(p).with_context(|| format!("cannot remove {}", p.display()))?;
            writeln!(out, "rejected {}", p.display())?;
        }
        done += 1;
    }
    let verb = if accept { "accepted" } else { "rejected" };
    writeln!(out, "{done} pending golden(s) {verb}")?;
    Ok(code)
}
