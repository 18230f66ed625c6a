//! Every clap type of the command line: the commands, their arguments and value parsers. The
//! command files beside this one turn them into the library's options; nothing below `cli`
//! knows clap. Doc comments here are the `--help` text.

use crate::exec;
use crate::import::Format;
use crate::provider::Provider;
use crate::provider::matching::{Matching, Part};
use crate::record::cassette::Delay;
use crate::serve::replay::OnDivergence;
use clap::builder::TypedValueParser as _;
use clap::{Parser, Subcommand};
use std::net::SocketAddr;
use std::path::PathBuf;

/// Record/replay evaluation and regression harness for LLM agent loops.
#[derive(Debug, Parser)]
#[command(name = "harness", version, about, long_about = None)]
pub(super) struct Cli {
    #[command(subcommand)]
    pub(super) command: Command,
    /// Root of scenario ids [default: the project file's `scenarios`, else `scenarios`].
    #[arg(long, global = true, value_name = "DIR")]
    pub(super) scenarios_root: Option<PathBuf>,
    /// Folder of goldens [default: the project file's `snapshots`, else `snapshots`].
    #[arg(long, global = true, value_name = "DIR")]
    pub(super) snapshots: Option<PathBuf>,
    /// Say on stderr which project file (`harness.toml`) the paths come from, and what they are.
    #[arg(short, long, global = true)]
    pub(super) verbose: bool,
}

#[derive(Debug, Subcommand)]
pub(super) enum Command {
    /// Start a project to test your own agent in a folder (default: the current one): the
    /// project file, a first portable scenario and an example agent on the openai SDK, never
    /// overwriting a file; then print the commands to run next.
    ///
    /// Exit codes: 0 the files were written (or kept); 2 a file cannot be written.
    Init {
        /// The folder [default: the current folder].
        dir: Option<PathBuf>,
    },
    /// Run an agent command against each scenario served, and judge what it sent as `run`
    /// judges a case (goldens, expectations, metrics).
    ///
    /// Exit codes as for `run`; a command that cannot start is bad input (2).
    Exec {
        #[command(flatten)]
        args: ExecArgs,
        #[command(flatten)]
        out: OutputArgs,
    },
    /// The report card of a loop on a failure-mode suite: serve each suite scenario to an
    /// agent command (`-- COMMAND…`), or run the engine's profiles, and say per failure mode
    /// whether the loop recovered, looped to its cap, crashed or hung, and per legitimate run
    /// whether it let it finish; then the score.
    ///
    /// Exit codes: 0 the card was made; 1 a score below `--min-score`; 2 a suite file that is
    /// no valid scenario (the card is made without it), a folder with no suite case, bad usage;
    /// 130 Ctrl-C, 143 SIGTERM, 129 SIGHUP (the cases in flight finish; the card of those that
    /// ran is printed and written, marked "stopped by … after k of n cases").
    Suite(SuiteArgs),
    /// Several loops' report cards side by side, from saved `harness suite --json` results
    /// (each file one or more loops: engine profiles, or an agent's `--label`): a Markdown
    /// scorecard (a summary, a column per loop, what each missed) and its HTML page.
    ///
    /// Exit codes: 0 the scorecard was written; 2 a results file that cannot be read, holds no
    /// suite case, names a loop another file also names, or is of a suite a stop signal ended
    /// early (unless --allow-incomplete).
    Scorecard(ScorecardArgs),
    /// Replay scenarios, compare with goldens, check expectations, summarise metrics.
    ///
    /// Exit codes: 0 all passed; 1 a golden mismatch, a missing or orphaned golden, or a failed
    /// expectation; 2 bad input or usage; 3 only metrics regressed against `--baseline`.
    Run(RunArgs),
    /// Print the cases a run would take (id, profile, family), one per line.
    List(ListArgs),
    /// Join shards' `--json` results into the outputs one run would give.
    Merge(MergeArgs),
    /// Make the HTML report of saved JSON results (`run --json`, or the shards of one run).
    ///
    /// Exit codes: 0 the report was written (whatever the results say); 2 bad input.
    Report(ReportArgs),
    /// Run scenarios and record their metrics as the baseline `--baseline` compares with.
    Bless(BlessArgs),
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
    Record(RecordArgs),
    /// Turn a cassette into an editable scenario (TOML) that scripts the recorded turns.
    Promote(PromoteArgs),
    /// Record any agent's real session: forward its model requests to the provider, pass the
    /// answers back unchanged, and write each conversation into a cassette; the conversations
    /// already recorded at `--out` are replayed as `--record-mode` says.
    ///
    /// Exit codes: 0 the cassettes were written or replayed (whatever the agent's own exit
    /// status, which is printed); 1 the agent made no model request, a request was refused (a
    /// replay it does not match, or past what a cassette holds), or an answer was too large to
    /// keep; 2 bad usage (record mode `none` with nothing at `--out`, a bad upstream URL, a
    /// command that cannot start); 130 Ctrl-C, 143 SIGTERM, 129 SIGHUP (the agent's process
    /// group is ended; the cassettes of the conversations that finished are still written).
    Proxy(ProxyArgs),
    /// Serve a scenario's scripted model as an OpenAI-, Anthropic- and Gemini-compatible endpoint;
    /// Ctrl-C ends it and prints the trace inferred from each conversation.
    Serve(ServeArgs),
    /// Receive OpenTelemetry traces over OTLP/HTTP (protobuf or JSON, gzip or zstd) and write
    /// them as OTLP JSON lines, which `import` and `sweep` read; Ctrl-C ends it.
    ///
    /// Exit codes: 0 every request received was written; 1 a request was refused (not an
    /// export request; each is said); 2 bad usage, or the address cannot be listened on.
    Collect(CollectArgs),
    /// Fail when a fixture holds a secret-looking string (file:line:col of each).
    ///
    /// Exit codes: 0 clean; 1 secrets found; 2 an unreadable path.
    Lint(LintArgs),
    /// Score loop detectors over recorded runs: one CSV row per (detector, parameters).
    ///
    /// Exit codes: 0 every input was read; 2 an input was malformed (reported as
    /// file:line:col; the others are still scored and the outputs written) or bad usage.
    Sweep(SweepArgs),
    /// Convert transcripts (tau-bench, tau2, swe-agent, toolbench, openai, anthropic, gemini,
    /// openhands, OpenTelemetry OTLP JSON) into traces, one JSON-lines file per run.
    Import(ImportArgs),
}

impl Command {
    /// Whether the command reads the project file (`harness.toml`). `init` makes the project,
    /// and the others that say no read none: a project file they cannot read is not theirs to
    /// refuse (`harness schema project` is how to mend one). Every command says, so a new one
    /// is decided when it is added.
    pub(super) fn reads_project(&self) -> bool {
        match self {
            Self::Init { .. }
            | Self::Schema { .. }
            | Self::Profile { .. }
            | Self::Report(_)
            | Self::Collect(_)
            | Self::Promote(_) => false,
            Self::Exec { .. }
            | Self::Suite(_)
            | Self::Scorecard(_)
            | Self::Run(_)
            | Self::List(_)
            | Self::Merge(_)
            | Self::Bless(_)
            | Self::Diff { .. }
            | Self::Accept { .. }
            | Self::Reject { .. }
            | Self::Trace { .. }
            | Self::Record(_)
            | Self::Proxy(_)
            | Self::Serve(_)
            | Self::Lint(_)
            | Self::Sweep(_)
            | Self::Import(_) => true,
        }
    }
}

/// `harness scorecard` arguments.
#[derive(Debug, clap::Args)]
pub(super) struct ScorecardArgs {
    /// JSON results of `harness suite --json`, in the order of the scorecard's columns.
    #[arg(required = true)]
    pub(super) results: Vec<PathBuf>,
    /// Write the Markdown scorecard here [default: print it].
    #[arg(long, value_name = "FILE")]
    pub(super) markdown: Option<PathBuf>,
    /// Write the loops' cards as one self-contained HTML page.
    #[arg(long, value_name = "FILE")]
    pub(super) html: Option<PathBuf>,
    /// Text put above the Markdown tables (a file's contents): what was scored, and how.
    #[arg(long, value_name = "FILE")]
    pub(super) preface: Option<PathBuf>,
    /// Score a results file of a suite a stop signal ended early (its column says so);
    /// without it such a file is refused.
    #[arg(long)]
    pub(super) allow_incomplete: bool,
}

/// `harness suite` arguments.
#[derive(Debug, Clone, clap::Args)]
pub(super) struct SuiteArgs {
    /// The suite: a folder of scenarios with `[suite]` tables [default: `suite` under the
    /// scenarios root, the bundled `scenarios/suite`].
    pub(super) suite: Option<PathBuf>,
    /// The agent command and its arguments, after `--`; without one, the engine's profiles
    /// are scored.
    #[arg(last = true, value_name = "COMMAND")]
    pub(super) command: Vec<String>,
    /// Without a command: the engine profile to score (repeatable) [default: none, ironclaw,
    /// moltis, agentloop].
    #[arg(long, value_name = "NAME")]
    pub(super) profile: Vec<String>,
    /// Cases run at once. The engine's are always independent; an agent's are when it keeps
    /// nothing between runs (files, a shared cache): raise it then.
    #[arg(long, short = 'j', default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=crate::limits::MAX_JOBS))]
    pub(super) jobs: u64,
    /// With a command: kill it after this long; the case is then `hung`.
    #[arg(long, value_name = "MS", default_value_t = 60_000)]
    pub(super) timeout_ms: u64,
    /// With a command: the runs' label (case id `<scenario id>@<label>`).
    #[arg(long, value_name = "NAME", default_value = "agent", value_parser = label_parser)]
    pub(super) label: String,
    /// Write the results with each case's card as JSON (what `harness merge` reads).
    #[arg(long, value_name = "FILE")]
    pub(super) json: Option<PathBuf>,
    /// Write the cards as one self-contained HTML page.
    #[arg(long, value_name = "FILE")]
    pub(super) html: Option<PathBuf>,
    /// Write the cards as JUnit XML: a testsuite per card, a testcase per case, failed when
    /// it scores no point.
    #[arg(long, value_name = "FILE")]
    pub(super) junit: Option<PathBuf>,
    /// Exit 1 when a card scores fewer points than this.
    #[arg(long, value_name = "N")]
    pub(super) min_score: Option<usize>,
    /// With a command: write its output into this folder, a file per case (`<case>.log`)
    /// [default: `.harness/suite/<label>` in the project's folder].
    #[arg(long, value_name = "DIR")]
    pub(super) agent_logs: Option<PathBuf>,
    #[command(flatten)]
    pub(super) reading: ReadArgs,
}

/// `harness run` arguments.
#[derive(Debug, clap::Args)]
pub(super) struct RunArgs {
    /// Scenario files or folders [default: the scenarios root].
    pub(super) paths: Vec<PathBuf>,
    /// Worker threads (default: the machine's cores; at most 256).
    #[arg(short, long, value_name = "N", value_parser = jobs_parser())]
    pub(super) jobs: Option<usize>,
    /// Write each run's trace as JSON lines into this folder.
    #[arg(long, value_name = "DIR")]
    pub(super) traces: Option<PathBuf>,
    /// Also run every scenario under this profile (repeatable, or comma-separated), next
    /// to its own; the summary shows them side by side. Runs the scenario does not
    /// declare (`[compare.NAME]`) are not gated.
    #[arg(long, value_name = "NAME", value_delimiter = ',')]
    pub(super) profile: Vec<String>,
    #[command(flatten)]
    pub(super) select: SelectArgs,
    #[command(flatten)]
    pub(super) out: OutputArgs,
    /// Run each case N times (live or nondeterministic runs): pass@N and pass^N per case;
    /// a case that passes some runs is flaky, reported and not failed.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=i64::from(crate::limits::MAX_REPEAT)))]
    pub(super) repeat: u32,
}

/// `harness list` arguments.
#[derive(Debug, clap::Args)]
pub(super) struct ListArgs {
    /// Scenario files or folders [default: the scenarios root].
    pub(super) paths: Vec<PathBuf>,
    #[command(flatten)]
    pub(super) select: SelectArgs,
    /// Also list every scenario under these profiles, as `run --profile` would.
    #[arg(long, value_name = "NAME", value_delimiter = ',')]
    pub(super) profile: Vec<String>,
    /// Worker threads reading the files (default: as `run`, the machine's cores; at most 256).
    #[arg(short, long, value_name = "N", value_parser = jobs_parser())]
    pub(super) jobs: Option<usize>,
}

/// `harness merge` arguments.
#[derive(Debug, clap::Args)]
pub(super) struct MergeArgs {
    /// JSON results of the shards (`harness run --partition … --json FILE`).
    #[arg(required = true)]
    pub(super) shards: Vec<PathBuf>,
    #[command(flatten)]
    pub(super) out: OutputArgs,
    /// Let results that hold no case pass (by default they are bad input, exit 2).
    #[arg(long)]
    pub(super) allow_empty: bool,
}

/// `harness report` arguments.
#[derive(Debug, clap::Args)]
pub(super) struct ReportArgs {
    /// JSON results (`harness run --json FILE`); shards of one run are joined.
    #[arg(required = true)]
    pub(super) results: Vec<PathBuf>,
    /// The HTML report to write.
    #[arg(long, value_name = "FILE", required = true)]
    pub(super) html: PathBuf,
    /// Show the regressions and improvements against this metric baseline.
    #[arg(long, value_name = "FILE")]
    pub(super) baseline: Option<PathBuf>,
}

/// `harness bless` arguments.
#[derive(Debug, clap::Args)]
pub(super) struct BlessArgs {
    /// Scenario files or folders (given, or with --filter: only those cases are updated).
    pub(super) paths: Vec<PathBuf>,
    /// The baseline file [default: the project file's `baseline`, else
    /// `baselines/scenarios.toml`].
    #[arg(long, value_name = "FILE")]
    pub(super) baseline: Option<PathBuf>,
    #[command(flatten)]
    pub(super) select: SelectArgs,
    /// Worker threads (default: the machine's cores; at most 256).
    #[arg(short, long, value_name = "N", value_parser = jobs_parser())]
    pub(super) jobs: Option<usize>,
}

/// The formats `harness schema` describes.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(super) enum SchemaOf {
    /// Scenario files (`schema/scenario.schema.json`).
    Scenario,
    /// The project file, `harness.toml` (`schema/harness.schema.json`).
    Project,
}

/// Which scenarios and cases run.
#[derive(Debug, clap::Args)]
pub(super) struct SelectArgs {
    /// Run only matching cases (repeatable): an id glob (`reflex/*`), `family:GLOB`,
    /// `tag:GLOB` or `profile:GLOB`; one kind's filters are alternatives, kinds combine.
    #[arg(long, value_name = "FILTER")]
    pub(super) filter: Vec<String>,
    /// Run one shard: `count:M/N` (every N-th of the sorted scenario ids) or `hash:M/N`.
    #[arg(long, value_name = "KIND:M/N")]
    pub(super) partition: Option<String>,
    /// Let a selection of no case pass (by default it is bad input, exit 2: a typo in a
    /// filter must not turn a CI job green).
    #[arg(long)]
    pub(super) allow_empty: bool,
}

/// Result files and checks.
#[derive(Debug, clap::Args)]
pub(super) struct OutputArgs {
    /// Write one CSV row of metrics per run.
    #[arg(long, value_name = "FILE")]
    pub(super) metrics: Option<PathBuf>,
    /// Write a JUnit XML report (one testcase per case).
    #[arg(long, value_name = "FILE")]
    pub(super) junit: Option<PathBuf>,
    /// Write the results as JSON (what `harness merge` reads).
    #[arg(long, value_name = "FILE")]
    pub(super) json: Option<PathBuf>,
    /// Compare metrics with this baseline; regressions exit 3 (see `harness bless`)
    /// [default: the project file's `baseline`, if any].
    #[arg(long, value_name = "FILE")]
    pub(super) baseline: Option<PathBuf>,
    /// Compare with no baseline, not even the project file's.
    #[arg(long, conflicts_with = "baseline")]
    pub(super) no_baseline: bool,
    /// Write pending goldens into this folder (mirroring ids), even when `CI` is set.
    #[arg(long, value_name = "DIR")]
    pub(super) pending_dir: Option<PathBuf>,
    /// Write a self-contained HTML report: every case's timeline, diffs, metrics charts.
    #[arg(long, value_name = "FILE")]
    pub(super) html: Option<PathBuf>,
    /// Write every case's trace as OpenTelemetry spans (OTLP JSON lines, GenAI conventions)
    /// for trace viewers; `harness import` and `sweep` read it back.
    #[arg(long, value_name = "FILE")]
    pub(super) otlp: Option<PathBuf>,
    /// Show the first N failing cases in full (diff, expectations), the rest one line each;
    /// `all` shows every one in full [default: 10].
    #[arg(long, value_name = "N", value_parser = diff_limit)]
    pub(super) diff_limit: Option<usize>,
    /// One line per failing case and no summary tables: the verdict, what failed, and errors.
    #[arg(short, long)]
    pub(super) quiet: bool,
}

fn diff_limit(s: &str) -> Result<usize, String> {
    if s == "all" {
        return Ok(usize::MAX);
    }
    s.parse()
        .map_err(|_| format!("`{s}` is not a number of cases; write a whole number or `all`"))
}

/// `--jobs`: 1 to [`crate::limits::MAX_JOBS`] worker threads.
/// A runs' label: it names case ids, goldens and a folder of agent logs, so it is one name of
/// lower-case letters, digits, `-` and `_` that is no profile's ([`crate::exec::check_label`]).
fn label_parser(text: &str) -> Result<String, String> {
    crate::exec::check_label(text).map_err(|d| {
        format!(
            "{}{}",
            crate::escape::escape_controls(&d.message),
            d.hint.map(|h| format!(" ({h})")).unwrap_or_default()
        )
    })?;
    Ok(text.to_owned())
}

pub(super) fn jobs_parser() -> impl clap::builder::TypedValueParser<Value = usize> {
    clap::value_parser!(u64)
        .range(1..=crate::limits::MAX_JOBS)
        .map(|n| usize::try_from(n).unwrap_or(1))
}

/// Arguments of `harness sweep`.
#[derive(Debug, clap::Args)]
pub(super) struct SweepArgs {
    /// Transcript, imported-trace and scenario files or folders (formats detected per file).
    #[arg(required = true)]
    pub(super) paths: Vec<PathBuf>,
    /// Detector settings: `ID` (its default sweep), `ID:param=v1,v2:other=v3` (a grid; `2..6`
    /// is a range), or `all`. Repeatable.
    #[arg(long = "detector", value_name = "SPEC", default_value = "all")]
    pub(super) detectors: Vec<String>,
    /// Write one CSV row per (detector, parameters).
    #[arg(long, value_name = "FILE.csv")]
    pub(super) out: Option<PathBuf>,
    /// Write the trade-off plot (SVG).
    #[arg(long, value_name = "FILE.svg")]
    pub(super) plot: Option<PathBuf>,
    /// Stuck labels (JSON lines: run, stuck, loop_start, note); runs it does not name get the
    /// heuristic's label.
    #[arg(long, value_name = "FILE")]
    pub(super) labels: Option<PathBuf>,
    /// Write one CSV row per (run, setting) that fired: where, the verdict, and whether it
    /// was a catch or a false alarm — to review what a setting fires on.
    #[arg(long, value_name = "FILE.csv")]
    pub(super) fires: Option<PathBuf>,
    /// Write every run's heuristic label (JSON lines) for review.
    #[arg(long, value_name = "FILE")]
    pub(super) write_labels: Option<PathBuf>,
    /// Write the sweep as a page: the plot per detector, each point opening the runs it fired
    /// on.
    #[arg(long, value_name = "FILE.html")]
    pub(super) html: Option<PathBuf>,
    /// Read every transcript as this format instead of detecting it.
    #[arg(long, value_name = "FORMAT", value_parser = format_name)]
    pub(super) format: Option<Format>,
    #[command(flatten)]
    pub(super) failures: FailureArgs,
    /// Worker threads (default: the machine's cores; at most 256).
    #[arg(short, long, value_name = "N", value_parser = jobs_parser())]
    pub(super) jobs: Option<usize>,
    /// How long an external detector (`exec:`) may take to answer one run; past it the setting
    /// fails and its process group is ended.
    #[arg(long, value_name = "MS", default_value_t = crate::limits::DETECTOR_TIMEOUT_MS, value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub(super) detector_timeout_ms: u64,
    /// Let a sweep that reads no run, or scores none (every run left out of every setting's
    /// row, its calls recorded without arguments), pass (by default it is bad input, exit 2: a
    /// table of 0/0 must not look like a result).
    #[arg(long)]
    pub(super) allow_empty: bool,
    /// Sweep one shard of the files: `count:M/N` (every N-th of the sorted paths) or
    /// `hash:M/N` (a stable hash of the path); `--partial` keeps it for `--merge`.
    #[arg(long, value_name = "KIND:M/N")]
    pub(super) partition: Option<String>,
    /// Write this sweep's partial (what each file contributed) for `sweep --merge`.
    #[arg(long, value_name = "FILE")]
    pub(super) partial: Option<PathBuf>,
    /// The paths are the shards' partial sweeps: merge them into the outputs one sweep over
    /// everything gives (CSV, fires, page, labels), byte for byte.
    #[arg(long, conflicts_with_all = ["partition", "partial", "labels", "format", "detectors", "failure", "no_builtin_failures"])]
    pub(super) merge: bool,
}

/// Arguments of `harness collect`.
#[derive(Debug, clap::Args)]
pub(super) struct CollectArgs {
    /// The file to write (appended to when it exists): one OTLP JSON request a line.
    #[arg(long, value_name = "FILE.jsonl")]
    pub(super) out: PathBuf,
    /// Address to listen on (4318 is OTLP/HTTP's; port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:4318", value_name = "HOST:PORT")]
    pub(super) addr: SocketAddr,
    /// Listen on a non-loopback address (the receiver has no authentication).
    #[arg(long)]
    pub(super) allow_remote: bool,
    /// Start a new file past this many MiB, at most 60 (a transcript is read up to 64): the
    /// full one renamed `<stem>-0001.jsonl`, … (`import` and `sweep` read the rotations
    /// together).
    #[arg(long, value_name = "MIB", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=60))]
    pub(super) rotate_mb: u64,
    /// Also stop when standard input ends (Ctrl-D; for scripts that pipe into it).
    #[arg(long)]
    pub(super) until_eof: bool,
}

/// Arguments of `harness import`.
#[derive(Debug, clap::Args)]
pub(super) struct ImportArgs {
    /// Transcript files or folders (JSON, `.traj`; `.jsonl` for one run a line). Run ids
    /// name the file by its path below the folder given (its name, for a file given).
    #[arg(required = true)]
    pub(super) files: Vec<PathBuf>,
    /// The format (detected per file when absent).
    #[arg(long, value_name = "FORMAT", value_parser = format_name)]
    pub(super) format: Option<Format>,
    #[command(flatten)]
    pub(super) failures: FailureArgs,
    /// Folder to write one file per run into: `<run id>.jsonl` (a trace) or `<run id>.toml`
    /// (a scenario).
    #[arg(long, value_name = "DIR")]
    pub(super) out: PathBuf,
    /// What each run becomes: its trace (for `sweep` and `trace`), or a scenario that replays
    /// it through the loop engine under any profile (the recorded answers as the model's
    /// turns, the tool results as outcomes by arguments or call order, later user messages as
    /// follow-ups).
    #[arg(long = "as", value_enum, default_value_t = ImportAs::Trace, value_name = "KIND")]
    pub(super) as_: ImportAs,
    /// Let an import that writes no run pass (by default it is bad input, exit 2: a wrong
    /// path or format must not look like an import).
    #[arg(long)]
    pub(super) allow_empty: bool,
}

/// What `harness import` writes for each run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum ImportAs {
    /// Its trace as JSON lines.
    Trace,
    /// An editable scenario (TOML).
    Scenario,
}

impl ImportAs {
    /// The extension of the file written for a run.
    pub(super) fn extension(self) -> &'static str {
        match self {
            Self::Trace => "jsonl",
            Self::Scenario => "toml",
        }
    }

    /// What the summary counts.
    pub(super) fn noun(self) -> &'static str {
        match self {
            Self::Trace => "run(s)",
            Self::Scenario => "scenario(s)",
        }
    }
}

fn format_name(s: &str) -> Result<Format, String> {
    Format::parse(s).ok_or_else(|| {
        let all: Vec<&str> = Format::all().map(Format::as_str).collect();
        format!("unknown format `{s}`; known formats: {}", all.join(", "))
    })
}

/// VCR's record modes (`crate::record::RecordMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum RecordMode {
    /// Never contact the provider: replay the cassette (the only mode when `CI` is set).
    None,
    /// Record when the cassette does not exist yet, else replay it.
    Once,
    /// Replay what matches, record from the first request that differs.
    #[value(alias = "new_episodes")]
    New,
    /// Always record, replacing the cassette.
    All,
}

/// `harness proxy`'s record modes (vcrpy's), over the cassettes already at `--out`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum ProxyMode {
    /// Never go to the provider: replay the recorded conversations, refuse any other request
    /// (the default when `CI` is set).
    None,
    /// Replay the conversations that have a cassette; record new ones (the default).
    Once,
    /// Replay while a conversation follows its recording, then go live from its first
    /// divergence and extend the cassette; record new conversations.
    #[value(name = "new_episodes", alias = "new")]
    NewEpisodes,
    /// Record every conversation again, replacing the cassettes (as `--replace`).
    All,
}

/// `harness record` arguments.
#[derive(Debug, Clone, clap::Args)]
pub(super) struct RecordArgs {
    /// The scenario to run live (its tools answer from their scripted outcomes).
    pub(super) scenario: PathBuf,
    /// Wire format of the provider: `openai` (and OpenAI-compatible servers), `anthropic` or
    /// `gemini`.
    #[arg(long, value_name = "openai|anthropic|gemini")]
    pub(super) provider: Provider,
    /// Model name sent to the provider.
    #[arg(long, value_name = "NAME")]
    pub(super) model: String,
    /// Base URL as the official SDKs take it (e.g. `http://127.0.0.1:8000/v1` for an
    /// OpenAI-compatible server).
    #[arg(long, value_name = "URL")]
    pub(super) base_url: Option<String>,
    /// Ask for streamed (SSE) responses.
    #[arg(long)]
    pub(super) stream: bool,
    /// Record the scenario's case under this profile (its own, or one it compares with).
    #[arg(long, value_name = "NAME")]
    pub(super) profile: Option<String>,
    /// The cassette (default: `fixtures/cassettes/<scenario>.cassette.json` beside the scenario).
    #[arg(long, value_name = "FILE")]
    pub(super) out: Option<PathBuf>,
    /// Environment variable holding the key (default `OPENAI_API_KEY` / `ANTHROPIC_API_KEY`).
    #[arg(long, value_name = "VAR")]
    pub(super) api_key_env: Option<String>,
    /// `none`, `once` (default), `new` or `all`; `CI` forces `none`.
    #[arg(long, value_enum, default_value = "once")]
    pub(super) record_mode: RecordMode,
    /// Output token limit to send (Anthropic requires one: 4096 by default).
    #[arg(long, value_name = "N")]
    pub(super) max_tokens: Option<u32>,
    /// Timeout of one request, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 120_000)]
    pub(super) timeout_ms: u64,
    /// Longest real wait before a retry, in milliseconds (the trace keeps the virtual wait).
    #[arg(long, value_name = "MS", default_value_t = 60_000)]
    pub(super) max_wait_ms: u64,
    /// A request field strict replay ignores (repeatable; `messages/*/name`).
    #[arg(long, value_name = "PATH")]
    pub(super) ignore: Vec<String>,
    /// Also write the run's trace as JSON lines into this folder (`DIR/<id>.jsonl`).
    #[arg(long, value_name = "DIR")]
    pub(super) traces: Option<PathBuf>,
    /// Also write the run's metrics row as CSV.
    #[arg(long, value_name = "FILE")]
    pub(super) metrics: Option<PathBuf>,
}

/// `harness promote` arguments.
#[derive(Debug, Clone, clap::Args)]
pub(super) struct PromoteArgs {
    /// The cassette.
    pub(super) cassette: PathBuf,
    /// The scenario to write (default: `<scenario>.promoted.toml` beside the recorded scenario).
    #[arg(long, value_name = "FILE")]
    pub(super) out: Option<PathBuf>,
}

/// `harness lint` arguments.
#[derive(Debug, Clone, clap::Args)]
pub(super) struct LintArgs {
    /// Files and folders (default: `scenarios`, `fixtures` and `snapshots`, those that exist).
    pub(super) paths: Vec<PathBuf>,
    /// Let a lint that reads no file pass (by default it is bad input, exit 2: a lint of
    /// nothing must not look clean).
    #[arg(long)]
    pub(super) allow_empty: bool,
}

/// `harness serve` arguments.
#[derive(Debug, Clone, clap::Args)]
pub(super) struct ServeArgs {
    /// The scenario whose scripted model answers, or agent cassettes (files or folders) whose
    /// recorded answers do.
    #[arg(required = true, value_name = "SCENARIO|CASSETTE")]
    pub(super) scenario: Vec<PathBuf>,
    /// With cassettes: what follows a divergence (as for `exec`).
    #[arg(long, default_value = "fail", value_name = "POLICY")]
    pub(super) on_divergence: OnDivergence,
    /// With cassettes and `--judge`: judge the replay by the recording alone, with no golden
    /// (as `exec --cassettes-only`).
    #[arg(long)]
    pub(super) cassettes_only: bool,
    /// Address to listen on (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:0", value_name = "HOST:PORT")]
    pub(super) addr: SocketAddr,
    /// Listen on a non-loopback address (the endpoint has no authentication).
    #[arg(long)]
    pub(super) allow_remote: bool,
    /// Name of the runs in the printed traces (`<scenario id>@<label>`), and with `--judge` of
    /// their goldens.
    #[arg(long, default_value = "serve", value_name = "NAME", value_parser = label_parser)]
    pub(super) label: String,
    /// Write each conversation's trace as JSON lines into this folder instead of printing it.
    #[arg(long, value_name = "DIR")]
    pub(super) traces: Option<PathBuf>,
    /// Also stop when standard input ends (Ctrl-D; for scripts that pipe into it).
    #[arg(long)]
    pub(super) until_eof: bool,
    /// When it ends, judge each conversation as `harness exec` does (its golden `<id>@<label>`
    /// of the scenario or cassette, and the expectations `--expect` names), print exec's report
    /// instead of the traces and exit with its status.
    #[arg(long)]
    pub(super) judge: bool,
    /// With `--judge`: the profile whose expectations (the scenario's own, or a
    /// `[compare.NAME]`) every conversation must show; default: golden only.
    #[arg(long, value_name = "PROFILE", requires = "judge")]
    pub(super) expect: Option<String>,
    /// How long a client may take to send a request's headers, and then its body.
    #[arg(long, value_name = "MS", default_value_t = crate::limits::READ_TIMEOUT_MS, value_parser = clap::value_parser!(u64).range(1..))]
    pub(super) read_timeout_ms: u64,
    /// How requests are read and answers paced.
    #[command(flatten)]
    pub(super) reading: ReadArgs,
    /// With cassettes: what counts when a request is compared with the recording.
    #[command(flatten)]
    pub(super) matching: MatchArgs,
}

/// `harness exec` arguments.
#[derive(Debug, Clone, clap::Args)]
pub(super) struct ExecArgs {
    /// Scenario and cassette files or folders (default: the project file's `scenarios`, else
    /// `scenarios/`); the command runs once per scenario.
    pub(super) scenarios: Vec<PathBuf>,
    /// The agent command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub(super) command: Vec<String>,
    /// Kill the command after this long; the case then fails.
    #[arg(long, default_value_t = 60_000, value_name = "MS")]
    pub(super) timeout_ms: u64,
    /// Name of the runs: case id `<scenario id>@<label>`, and their profile in the summary.
    #[arg(long, default_value = "exec", value_name = "NAME", value_parser = label_parser)]
    pub(super) label: String,
    /// Judge with the expectations the scenario states for this profile (its own, or a
    /// `[compare.NAME]`); default: golden only.
    #[arg(long, value_name = "PROFILE")]
    pub(super) expect: Option<String>,
    /// Write each run's trace as JSON lines into this folder.
    #[arg(long, value_name = "DIR")]
    pub(super) traces: Option<PathBuf>,
    /// How requests are read and answers paced.
    #[command(flatten)]
    pub(super) reading: ReadArgs,
    /// With cassettes: what follows the first request that differs from the recording:
    /// `fail` (refuse it; the case fails), `stop` (refuse it; the golden judges), `continue`
    /// (keep serving the recorded answers in order: the stubborn model) or
    /// `script:SCENARIO` (the scenario's scripted model answers from there on).
    #[arg(long, default_value = "fail", value_name = "POLICY")]
    pub(super) on_divergence: OnDivergence,
    /// With cassettes: what counts when a request is compared with the recording.
    #[command(flatten)]
    pub(super) matching: MatchArgs,
    /// With cassettes: judge the replay by the recording alone — every request matched, every
    /// recorded exchange played, the command's exit — with no golden to accept (vcrpy's way;
    /// `[replay] golden = false` in the project file). Any divergence fails.
    #[arg(long)]
    pub(super) cassettes_only: bool,
    /// Also accept this exit code of the command (repeatable); by default only 0, and the
    /// scenario's `[serve] exit_codes`. Any other fails every conversation of the run.
    #[arg(
        long = "allow-exit",
        value_name = "CODE",
        allow_negative_numbers = true
    )]
    pub(super) allow_exit: Vec<i32>,
    /// Receive the agent's own OpenTelemetry traces into this file while it runs (as
    /// `harness collect` does): its `OTEL_EXPORTER_OTLP_ENDPOINT` points at a receiver beside
    /// the served scenario, so its traces land next to exec's for `import` to compare.
    #[arg(long, value_name = "FILE.jsonl")]
    pub(super) collect: Option<PathBuf>,
}

/// What counts when `exec` and `serve` compare an agent's request with its recording (the
/// project file's `[replay]` gives the defaults).
#[derive(Debug, Clone, clap::Args)]
pub(super) struct MatchArgs {
    /// With cassettes: a request path no replay compares (repeatable; `messages/*/name`),
    /// besides the volatile fields, each cassette's `replay.ignore` and the project file's
    /// `[replay] ignore`.
    #[arg(long = "ignore", value_name = "PATH")]
    pub(super) ignore: Vec<String>,
    /// With cassettes: the parts of a request that count, comma-separated: `model`,
    /// `messages`, `tools`, `params` [default: the project file's `[replay] match`, else all].
    #[arg(long = "match", value_name = "PARTS", value_delimiter = ',', value_parser = part_name)]
    pub(super) parts: Vec<Part>,
}

/// A part of a request, by its `--match` name.
fn part_name(s: &str) -> Result<Part, String> {
    Part::parse(s).ok_or_else(|| {
        let names: Vec<&str> = Part::ALL.iter().map(|p| p.name()).collect();
        format!(
            "`{s}` is not a part of a request; the parts: {}",
            names.join(", ")
        )
    })
}

/// How `import` and `sweep` read an OpenTelemetry trace's tool results as failed: the rules
/// `exec` reads a served result by.
#[derive(Debug, Clone, clap::Args)]
pub(super) struct FailureArgs {
    /// Also read a tool result as failed when it matches this regular expression (repeatable;
    /// OpenTelemetry traces, as `exec --failure` reads served results).
    #[arg(long = "failure", value_name = "REGEX", value_parser = failure_pattern)]
    pub(super) failure: Vec<String>,
    /// Read an OpenTelemetry trace's failures only by the patterns and span status, not the
    /// built-in shapes (as `exec --no-builtin-failures`).
    #[arg(long)]
    pub(super) no_builtin_failures: bool,
}

impl FailureArgs {
    /// The rules (clap has checked each pattern already).
    pub(super) fn rules(&self) -> anyhow::Result<crate::failure::FailureRules> {
        crate::failure::FailureRules::new(&self.failure, !self.no_builtin_failures)
            .map_err(anyhow::Error::msg)
    }
}

/// How `serve` and `exec` read the agent's requests and pace their answers.
#[derive(Debug, Clone, clap::Args)]
pub(super) struct ReadArgs {
    /// Also read a tool result as failed when it matches this regular expression (repeatable;
    /// checked after the scenario's `[serve] failure` patterns).
    #[arg(long = "failure", value_name = "REGEX", value_parser = failure_pattern)]
    pub(super) failure: Vec<String>,
    /// Read failures only by the provider's flag and the patterns, not the built-in shapes.
    #[arg(long)]
    pub(super) no_builtin_failures: bool,
    /// Pace streamed answers on the wall clock: F wall seconds per scripted second of latency
    /// (0: every event at once). The traces' virtual time is the same either way.
    #[arg(long, value_name = "F", default_value_t = 0.0, value_parser = pace)]
    pub(super) pace: f64,
    /// Bind the scenarios' portable tools to the agent's tools whose names match this glob
    /// first (`*`: any run of characters; repeatable, in order of preference) instead of the
    /// first tool that fits (meta tools such as subagents come last either way).
    #[arg(long = "bind", value_name = "NAME|GLOB")]
    pub(super) bind: Vec<String>,
    /// Serve each conversation at most N model calls instead of the scenario's cap
    /// (`max_iterations`, 25 unless it says): room for an agent whose own cap or budget is
    /// larger, so that what it does there is its own and not harness's refusal.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub(super) max_iterations: Option<u32>,
}

/// A pace: a finite number from 0 to 100.
fn pace(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(f) if f.is_finite() && (0.0..=100.0).contains(&f) => Ok(f),
        _ => Err(format!(
            "`{s}` is not a pace from 0 to 100 (wall seconds per scripted second)"
        )),
    }
}

/// `harness proxy` arguments.
#[derive(Debug, Clone, clap::Args)]
pub(super) struct ProxyArgs {
    /// Where the cassettes go: a folder (`conversation-N.cassette.json` in it), or a file
    /// `NAME.cassette.json` (a further conversation goes to `NAME-N.cassette.json` beside it).
    #[arg(long, value_name = "DIR|FILE")]
    pub(super) out: PathBuf,
    /// The provider to forward to, as the SDKs take a base URL: `openai=URL` (OpenAI's form,
    /// with `/v1`: `https://api.openai.com/v1`), `anthropic=URL` (Anthropic's, without:
    /// `https://api.anthropic.com`), or a bare URL for every provider (a `/v1` at its end is used
    /// by OpenAI requests and dropped for Anthropic's); a name no provider has is an error;
    /// default: the providers' own APIs.
    #[arg(long, value_name = "[openai=|anthropic=]URL")]
    pub(super) upstream: Vec<String>,
    /// The agent command and its arguments, after `--`; without one, the proxy records until
    /// Ctrl-C.
    #[arg(last = true, value_name = "COMMAND")]
    pub(super) command: Vec<String>,
    /// What to do with the cassettes already at `--out`: `none` (replay only; the default
    /// when `CI` is set: the proxy never goes live under CI unless this is given), `once`
    /// (replay those conversations, record new ones; the default), `new_episodes` (also go
    /// live from a recorded conversation's first divergence and extend its cassette), `all`
    /// (record everything again).
    #[arg(long, value_enum, value_name = "MODE")]
    pub(super) record_mode: Option<ProxyMode>,
    /// Record everything again, replacing the cassettes at `--out` (`--record-mode all`).
    #[arg(long, conflicts_with = "record_mode")]
    pub(super) replace: bool,
    /// Address to listen on (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:0", value_name = "HOST:PORT")]
    pub(super) addr: SocketAddr,
    /// Listen on a non-loopback address (the proxy spends your key for whoever reaches it).
    #[arg(long)]
    pub(super) allow_remote: bool,
    /// Kill the command after this long (the cassettes are still written).
    #[arg(long, default_value_t = 3_600_000, value_name = "MS")]
    pub(super) timeout_ms: u64,
    /// How long the provider may take to start an answer (502 to the agent past it), and fall
    /// silent in the middle of one (the answer is cut past it).
    #[arg(long, default_value_t = 600_000, value_name = "MS")]
    pub(super) upstream_timeout_ms: u64,
    /// A request field the replay's match ignores, written into every cassette (repeatable;
    /// `messages/*/name`).
    #[arg(long, value_name = "PATH")]
    pub(super) ignore: Vec<String>,
    /// The replay latency written into every cassette: `recorded` (each answer takes as long as
    /// it took when recorded) or `zero` (the virtual clock stands still, so a trace does not
    /// depend on the recording's timing and a re-recording keeps its golden).
    #[arg(long, value_enum, default_value_t = DelayArg::Recorded)]
    pub(super) delay: DelayArg,
}

impl From<RecordMode> for crate::record::RecordMode {
    fn from(m: RecordMode) -> Self {
        match m {
            RecordMode::None => Self::None,
            RecordMode::Once => Self::Once,
            RecordMode::New => Self::New,
            RecordMode::All => Self::All,
        }
    }
}

impl RecordArgs {
    /// What the library's recorder takes.
    pub(super) fn options(&self, setup: &super::Setup) -> crate::record::RecordOptions {
        crate::record::RecordOptions {
            scenario: self.scenario.clone(),
            provider: self.provider,
            model: self.model.clone(),
            base_url: self.base_url.clone(),
            stream: self.stream,
            profile: self.profile.clone(),
            out: self.out.clone(),
            api_key_env: self.api_key_env.clone(),
            record_mode: self.record_mode.into(),
            max_tokens: self.max_tokens,
            timeout_ms: self.timeout_ms,
            max_wait_ms: self.max_wait_ms,
            ignore: self.ignore.clone(),
            matching: setup.replay_defaults().matching(&[], &[]),
        }
    }
}

/// The replay latencies `harness proxy --delay` offers ([`Delay`] but `scaled`, which needs
/// a factor written in the cassette).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum DelayArg {
    /// As measured when recording.
    Recorded,
    /// None: the virtual clock stands still.
    Zero,
}

impl From<DelayArg> for Delay {
    fn from(d: DelayArg) -> Self {
        match d {
            DelayArg::Recorded => Self::Recorded,
            DelayArg::Zero => Self::Zero,
        }
    }
}

impl ReadArgs {
    /// How the library's sessions read requests and pace answers: `--bind`, else the project
    /// file's `[suite] bind`.
    pub(super) fn to_reading(&self, setup: &super::Setup) -> exec::Reading {
        exec::Reading {
            failure: self.failure.clone(),
            no_builtin_failures: self.no_builtin_failures,
            pace: self.pace,
            bind: if self.bind.is_empty() {
                setup.bind_defaults()
            } else {
                self.bind.clone()
            },
            max_iterations: self.max_iterations,
        }
    }
}

impl MatchArgs {
    /// The matching these flags give over the project file's `[replay]` defaults.
    pub(super) fn matching(&self, setup: &super::Setup) -> Matching {
        setup.replay_defaults().matching(&self.parts, &self.ignore)
    }
}

impl ExecArgs {
    /// How the library runs and judges the agent command.
    pub(super) fn settings(&self, setup: &super::Setup) -> exec::Settings {
        exec::Settings {
            command: self.command.clone(),
            timeout_ms: self.timeout_ms,
            label: self.label.clone(),
            expect: self.expect.clone(),
            reading: self.reading.to_reading(setup),
            on_divergence: self.on_divergence.clone(),
            matching: self.matching.matching(setup),
            allow_exit: self.allow_exit.clone(),
            agent_logs: None,
            golden: !self.cassettes_only && setup.replay_defaults().golden != Some(false),
            env: Vec::new(),
        }
    }
}

/// A `--failure` pattern, compiled as the served session compiles it: a mistake is a usage
/// error at the flag, not a scenario file's.
fn failure_pattern(text: &str) -> Result<String, String> {
    regex_lite::Regex::new(text)
        .map(|_| text.to_owned())
        .map_err(|e| {
            format!(
                "not a regular expression ({e}); {}",
                crate::vocabulary::REGEX_SYNTAX
            )
        })
}
