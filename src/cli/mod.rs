//! The command line: clap commands mapped onto the library, and errors onto exit codes.
//! The only place that reads the environment (`CI`, `GITHUB_ACTIONS`, `GITHUB_STEP_SUMMARY`)
//! and writes to stdout/stderr.

use crate::diagnostic::{Diagnostic, Style};
use crate::results::ExitStatus;
use crate::store::Layout;
use args::{Cli, Command};
use clap::Parser as _;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

mod agent;
mod args;
mod collect;
mod goldens;
mod init;
mod record;
mod run;
mod show;
mod suite;
mod sweep;

/// Tell the user `d` on stderr; the exit status it ends the command with.
fn fail(d: &Diagnostic) -> ExitStatus {
    let _ = write!(anstream::stderr(), "{}", d.render(&Style::default()));
    d.status
}

/// Refuse, before anything runs, an output that would replace one of the command's inputs or
/// be read back as one ([`store::output_over_input`]): `outputs` as (flag, path), `inputs` the
/// paths the command was given, `reads` the names it reads from a folder; and two outputs on
/// one file (the first would be lost). Exit 2.
fn output_over_input(
    outputs: &[(&str, Option<&std::path::Path>)],
    inputs: &[std::path::PathBuf],
    reads: impl Fn(&std::path::Path) -> bool,
) -> Option<ExitStatus> {
    let given: Vec<(&str, &std::path::Path)> = outputs
        .iter()
        .filter_map(|(f, p)| Some((*f, (*p)?)))
        .collect();
    for (i, (flag, output)) in given.iter().enumerate() {
        if let Some((other, _)) = given[..i]
            .iter()
            .find(|(_, o)| crate::store::same_place(o, output))
        {
            return Some(fail(
                &Diagnostic::new(format!(
                    "{flag} {} is also where {other} goes: one would replace the other",
                    output.display()
                ))
                .hint("give each output a file of its own")
                .status(ExitStatus::BadInput),
            ));
        }
    }
    for (flag, output) in outputs {
        let Some(output) = output else { continue };
        for input in inputs {
            if let Some(why) = crate::store::output_over_input(output, input, &reads) {
                return Some(fail(
                    &Diagnostic::new(format!("{flag} {}: {why}", output.display()))
                        .hint("write outputs outside the files and folders the command reads")
                        .status(ExitStatus::BadInput),
                ));
            }
        }
    }
    None
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
            // clap repeats a refused value as given: one holding control characters (an
            // escape sequence) would act on the terminal, so with such an argument the message
            // is printed plain (no colours), every control character left spelled out.
            let plain = e.render().to_string();
            let escaped: String = plain
                .split('\n')
                .map(|line| crate::escape::escape_controls(line).into_owned())
                .collect::<Vec<_>>()
                .join("\n");
            let hostile =
                std::env::args_os().any(|a| a.to_string_lossy().chars().any(char::is_control));
            if e.use_stderr() && hostile {
                let _ = write!(anstream::stderr(), "{escaped}");
            } else {
                let _ = e.print();
            }
            return ExitCode::from(if e.use_stderr() {
                ExitStatus::BadInput
            } else {
                ExitStatus::Ok
            });
        }
    };
    match execute(cli) {
        Ok(code) => ExitCode::from(code),
        // A reader that went away (`harness trace … | head`) is not an error.
        Err(e) if is_broken_pipe(&e) => ExitCode::from(ExitStatus::Ok),
        Err(e) => ExitCode::from(fail(&diagnostic_of(&e))),
    }
}

/// Whether `args` (without the program name) is a command line `harness` accepts, as the
/// parser sees it; Err is clap's message. The docs test holds every `harness` command the README
/// and the book show to it.
pub fn parses(args: &[&str]) -> Result<(), String> {
    use clap::error::ErrorKind;
    match Cli::try_parse_from(std::iter::once("harness").chain(args.iter().copied())) {
        Ok(_) => Ok(()),
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => Ok(()),
        Err(e) => Err(e.to_string()),
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

/// What went wrong, as the one diagnostic type: a diagnostic the library returned (with the
/// context the command added before its message), else the error chain (`context: cause`).
fn diagnostic_of(e: &anyhow::Error) -> Diagnostic {
    match e.downcast_ref::<Diagnostic>() {
        Some(d) if e.chain().count() == 1 => d.clone(),
        Some(d) => {
            let context: Vec<String> = e
                .chain()
                .take_while(|c| c.downcast_ref::<Diagnostic>().is_none())
                .map(ToString::to_string)
                .collect();
            Diagnostic {
                message: format!("{}: {}", context.join(": "), d.message),
                ..d.clone()
            }
        }
        None => Diagnostic::new(format!("{e:#}")),
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
    /// The layout of the flags alone, for the commands that read no project.
    fn without_project(cli: &Cli) -> Self {
        Self {
            project: None,
            layout: Layout {
                scenarios: cli
                    .scenarios_root
                    .clone()
                    .unwrap_or_else(|| PathBuf::from("scenarios")),
                snapshots: cli
                    .snapshots
                    .clone()
                    .unwrap_or_else(|| PathBuf::from("snapshots")),
            },
        }
    }

    fn new(cli: &Cli) -> Result<Self, ExitStatus> {
        let cwd = std::env::current_dir().unwrap_or_default();
        let project = match crate::project::discover(&cwd) {
            Ok(p) => p,
            Err(d) => return Err(fail(&d)),
        };
        // The flags win over the project file, which wins over the defaults.
        let mut layout = Self::without_project(cli).layout;
        if let Some(p) = &project {
            if cli.scenarios_root.is_none() {
                layout.scenarios = p.scenarios.clone();
            }
            if cli.snapshots.is_none() {
                layout.snapshots = p.snapshots.clone();
            }
        }
        // Said once, on stderr, when the file is not the current folder's: which project
        // the command's paths come from.
        if let Some(p) = project
            .as_ref()
            .filter(|p| !cli.verbose && p.root != Path::new("."))
        {
            let _ = writeln!(
                anstream::stderr(),
                "harness: using {}",
                p.root.join(crate::project::FILE_NAME).display()
            );
        }
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
    /// No path, no project and no scenarios folder: a folder harness has not been set up in
    /// (exit 2, said); `command` is the one given.
    fn nothing_set_up(&self, paths: &[PathBuf], command: &str) -> Option<ExitStatus> {
        if !paths.is_empty() || self.project.is_some() || self.layout.scenarios.exists() {
            return None;
        }
        Some(fail(
            &Diagnostic::new(format!(
                "no scenarios here: no {} in this folder or above, and no `{}` folder",
                crate::project::FILE_NAME,
                self.layout.scenarios.display()
            ))
            .hint(format!("`harness init` writes a first project (a scenario and an example agent) into this folder; or name scenario files: `harness {command} PATH…`"))
            .status(ExitStatus::BadInput),
        ))
    }

    fn paths_or_root(&self, paths: Vec<PathBuf>) -> Vec<PathBuf> {
        if paths.is_empty() {
            vec![self.layout.scenarios.clone()]
        } else {
            paths
        }
    }

    /// The project file's replay defaults (empty without one).
    fn replay_defaults(&self) -> crate::project::ReplayDefaults {
        self.project
            .as_ref()
            .map(|p| p.config.replay.clone())
            .unwrap_or_default()
    }

    /// The tools portable scenarios bind to first: the project file's `[suite] bind`.
    fn bind_defaults(&self) -> Vec<String> {
        self.project
            .as_ref()
            .map(|p| p.config.suite.bind.clone())
            .unwrap_or_default()
    }

    /// The project's folder (the current folder without a project file).
    fn root(&self) -> PathBuf {
        self.project
            .as_ref()
            .map_or_else(|| PathBuf::from("."), |p| p.root.clone())
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

/// Run the command; its exit code.
fn execute(cli: Cli) -> anyhow::Result<ExitStatus> {
    let setup = if !cli.command.reads_project() {
        Setup::without_project(&cli)
    } else {
        match Setup::new(&cli) {
            Ok(s) => s,
            Err(code) => return Ok(code),
        }
    };
    let layout = &setup.layout;
    match cli.command {
        Command::Run(args) => run::run(args, &setup),
        Command::List(args) => run::list(args, &setup),
        Command::Merge(args) => run::merge(args, &setup),
        Command::Report(args) => run::report(&args),
        Command::Bless(args) => run::bless(args, &setup),
        Command::Diff { paths, pending_dir } => {
            goldens::diff(layout, &paths, pending_dir.as_deref())
        }
        Command::Accept { paths, pending_dir } => {
            goldens::accept_or_reject(layout, &paths, pending_dir.as_deref(), true)
        }
        Command::Reject { paths, pending_dir } => {
            goldens::accept_or_reject(layout, &paths, pending_dir.as_deref(), false)
        }
        Command::Trace { scenario, jsonl } => show::trace(&setup, &scenario, jsonl),
        Command::Schema { of } => show::schema(of),
        Command::Profile { name } => show::profile(name.as_deref()),
        Command::Record(args) => record::record(&args, &setup, ci()),
        Command::Promote(args) => record::promote(&args),
        Command::Lint(args) => record::lint(&args, &setup),
        Command::Serve(args) => agent::serve(&args, &setup),
        Command::Collect(args) => collect::collect(&args),
        Command::Exec { args, out } => agent::exec(&args, out, &setup),
        Command::Proxy(args) => agent::proxy(&args, &setup, ci()),
        Command::Sweep(args) => sweep::sweep(args),
        Command::Suite(args) => suite::suite(&args, &setup),
        Command::Scorecard(args) => suite::scorecard(&args),
        Command::Init { dir } => init::init(dir.as_deref()),
        Command::Import(args) => sweep::import(args),
    }
}
