//! The command line: clap commands mapped onto the library, and errors onto exit codes.
//! The only place that reads the environment (`CI`) and writes to stdout/stderr.

use crate::report::{EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK, Fanout, MetricsCsv, Reporter, Terminal};
use crate::run::{self, Options};
use crate::scenario::{self, SourceFormat};
use crate::store::{self, Layout};
use crate::{policy::Config, trace};
use anyhow::Context as _;
use clap::{Parser, Subcommand};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

mod sweep;

/// Record/replay evaluation and regression harness for LLM agent loops.
#[derive(Debug, Parser)]
#[command(name = "harness", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Root of scenario ids.
    #[arg(long, global = true, default_value = "scenarios", value_name = "DIR")]
    scenarios_root: PathBuf,
    /// Folder of goldens.
    #[arg(long, global = true, default_value = "snapshots", value_name = "DIR")]
    snapshots: PathBuf,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Replay scenarios, compare with goldens, check expectations, summarise metrics.
    ///
    /// Exit codes: 0 all passed; 1 a golden mismatch, a missing or orphaned golden, or a failed
    /// expectation; 2 bad input or usage.
    Run {
        /// Scenario files or folders.
        #[arg(default_value = "scenarios")]
        paths: Vec<PathBuf>,
        /// Worker threads (default: the machine's cores).
        #[arg(short, long, value_name = "N")]
        jobs: Option<usize>,
        /// Write one CSV row of metrics per run.
        #[arg(long, value_name = "FILE")]
        metrics: Option<PathBuf>,
        /// Write each run's trace as JSON lines into this folder.
        #[arg(long, value_name = "DIR")]
        traces: Option<PathBuf>,
        /// Also run every scenario under this profile (repeatable, or comma-separated), next
        /// to its own; the summary shows them side by side. Runs the scenario does not
        /// declare (`[compare.NAME]`) are not gated.
        #[arg(long, value_name = "NAME", value_delimiter = ',')]
        profile: Vec<String>,
    },
    /// Promote pending goldens (.snap.new) to goldens.
    Accept {
        /// Scenario or golden files and folders (default: every pending golden).
        paths: Vec<PathBuf>,
    },
    /// Discard pending goldens.
    Reject {
        /// Scenario or golden files and folders (default: every pending golden).
        paths: Vec<PathBuf>,
    },
    /// Print the trace of one scenario (every case): golden text, or JSON lines.
    Trace {
        /// Scenario file.
        scenario: PathBuf,
        /// JSON lines instead of golden text.
        #[arg(long)]
        jsonl: bool,
    },
    /// Print the JSON Schema of the scenario format.
    Schema,
    /// Print a profile's full configuration as TOML (the keys `[config]` can override).
    Profile {
        /// Profile name.
        name: String,
    },
    /// Score loop detectors over recorded runs: one CSV row per (detector, parameters).
    ///
    /// Exit codes: 0 every input was read; 2 an input was malformed (reported as
    /// file:line:col; the others are still scored and the outputs written) or bad usage.
    Sweep(sweep::SweepArgs),
    /// Convert transcripts (tau-bench, tau2, swe-agent, toolbench, openai, anthropic) into
    /// traces, one JSON-lines file per run.
    Import(sweep::ImportArgs),
}

fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false")
}

/// Parse arguments, run, and map the result to an exit code.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
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
            let _ = writeln!(err, "error: {e:#}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

fn execute(cli: Cli) -> anyhow::Result<u8> {
    let layout = Layout {
        scenarios: cli.scenarios_root,
        snapshots: cli.snapshots,
    };
    match cli.command {
        Command::Run {
            paths,
            jobs,
            metrics,
            traces,
            profile,
        } => {
            if let Some(bad) = profile.iter().find(|p| Config::profile(p).is_none()) {
                eprintln!(
                    "error: unknown profile `{bad}`\n  hint: known profiles: {}",
                    crate::policy::PROFILES.join(", ")
                );
                return Ok(EXIT_BAD_INPUT);
            }
            let jobs = jobs.unwrap_or_else(|| {
                std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
            });
            let ci = ci();
            let options = Options {
                paths,
                layout,
                jobs,
                write_pending: !ci,
                traces,
                also_profiles: profile,
            };
            let mut terminal = Terminal::new(anstream::stdout().lock(), ci);
            let mut csv = match &metrics {
                Some(path) => Some(
                    MetricsCsv::create(path)
                        .with_context(|| format!("cannot write {}", path.display()))?,
                ),
                None => None,
            };
            let mut reporters: Vec<&mut dyn Reporter> = vec![&mut terminal];
            if let Some(csv) = &mut csv {
                reporters.push(csv);
            }
            match run::run(&options, &mut Fanout(reporters)) {
                Ok(()) => Ok(terminal.tally.exit_code()),
                // The summary could not be shown in full: do not claim success.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(EXIT_FAILED),
                Err(e) => Err(e.into()),
            }
        }
        Command::Accept { paths } => review(&layout, &paths, true),
        Command::Reject { paths } => review(&layout, &paths, false),
        Command::Trace { scenario, jsonl } => {
            let text = std::fs::read_to_string(&scenario)
                .with_context(|| format!("cannot read {}", scenario.display()))?;
            let format = if scenario.extension().is_some_and(|e| e == "json") {
                SourceFormat::Json
            } else {
                SourceFormat::Toml
            };
            let cases = match scenario::load(&text, format, &layout.id_of(&scenario)) {
                Ok(c) => c,
                Err(diags) => {
                    let mut out = anstream::stdout().lock();
                    for d in diags {
                        writeln!(
                            out,
                            "error: {}:{}:{}: {}",
                            scenario.display(),
                            d.line,
                            d.col,
                            d.message
                        )?;
                        if let Some(h) = d.hint {
                            writeln!(out, "  hint: {h}")?;
                        }
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
        Command::Schema => {
            anstream::stdout().write_all(scenario::json_schema().as_bytes())?;
            Ok(EXIT_OK)
        }
        Command::Sweep(args) => sweep::sweep(args),
        Command::Import(args) => sweep::import(args),
        Command::Profile { name } => match Config::profile(&name) {
            Some(c) => {
                anstream::stdout().write_all(toml::to_string_pretty(&c)?.as_bytes())?;
                Ok(EXIT_OK)
            }
            None => {
                eprintln!(
                    "error: unknown profile `{name}`\n  hint: known profiles: {}",
                    crate::policy::PROFILES.join(", ")
                );
                Ok(EXIT_BAD_INPUT)
            }
        },
    }
}

/// Promote (`accept`) or discard pending goldens; prints what it did.
fn review(layout: &Layout, paths: &[PathBuf], accept: bool) -> anyhow::Result<u8> {
    let pending = store::select_pending(layout, paths);
    let mut out = anstream::stdout().lock();
    for p in &pending {
        if accept {
            let golden = PathBuf::from(p.to_string_lossy().trim_end_matches(".new"));
            std::fs::rename(p, &golden)
                .with_context(|| format!("cannot move {} to {}", p.display(), golden.display()))?;
            writeln!(out, "accepted {}", golden.display())?;
        } else {
            std::fs::remove_file(p).with_context(|| format!("cannot remove {}", p.display()))?;
            writeln!(out, "rejected {}", p.display())?;
        }
    }
    let verb = if accept { "accepted" } else { "rejected" };
    writeln!(out, "{} pending golden(s) {verb}", pending.len())?;
    Ok(EXIT_OK)
}
